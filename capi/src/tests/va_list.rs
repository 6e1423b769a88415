//! The IB extension entry's `va_list` as a C compiler builds it for the architecture this
//! test is built for. `va_caller.c`, compiled for the target and loaded with dlopen, makes
//! the consumer's `dat_ib_post_*` calls, and its `dat_extension_op` does what libdat2's does:
//! `va_start` after the operation, the `va_list` to the provider's `handle_extendedop_func`.
//! That function is [`extended_op`] itself, or a test function of the same type that records
//! what [`ExtArgs::read`] (the reader `extended_op` uses) or [`VarArgs::next`] got.
//!
//! Natively the C side is compiled here with `$CC` (default `cc`). `scripts/test-aarch64`
//! runs these tests for aarch64 under qemu-user; it cross-compiles `va_caller.c` and names
//! the shared object in `FERRODAT_VA_CALLER`.

use super::{err, open};
use crate::ext::{ExtArgs, VarArgs, extended_op};
use crate::{ep, evd, mem};
use ferrodat_abi::dat::{self as abi, evd_flags, ib_op, mem_priv, mem_type, ret, subtype, va_type};
use std::cell::Cell;
use std::ffi::{CStr, CString, c_void};
use std::path::PathBuf;
use std::process::Command;
use std::ptr::{null, null_mut};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Names a prebuilt `va_caller.c` shared object for the target (cross builds).
const PREBUILT_ENV: &str = "FERRODAT_VA_CALLER";

type SetProvider = unsafe extern "C" fn(abi::HandleExtendedopFunc);
type WriteImmed = unsafe extern "C" fn(
    abi::EpHandle,
    abi::Count,
    *const abi::LmrTriplet,
    u64,
    *const abi::RmrTriplet,
    u32,
    abi::CompletionFlags,
) -> abi::Return;
type CmpAndSwap = unsafe extern "C" fn(
    abi::EpHandle,
    u64,
    u64,
    *const abi::LmrTriplet,
    u64,
    *const abi::RmrTriplet,
    abi::CompletionFlags,
) -> abi::Return;
type FetchAndAdd = unsafe extern "C" fn(
    abi::EpHandle,
    u64,
    *const abi::LmrTriplet,
    u64,
    *const abi::RmrTriplet,
    abi::CompletionFlags,
) -> abi::Return;
type Slots = unsafe extern "C" fn(*mut u64, *const u64) -> abi::Return;

/// The functions of `va_caller.c`.
struct Caller {
    set_provider: SetProvider,
    write_immed: WriteImmed,
    cmp_and_swap: CmpAndSwap,
    fetch_and_add: FetchAndAdd,
    twelve: Slots,
    stack_only: Slots,
}

/// The C library, loaded once; the lock is held from installing a provider until the call
/// through it returns (the provider is a global of the C side, and tests run in parallel).
fn caller() -> MutexGuard<'static, Caller> {
    static CALLER: OnceLock<Mutex<Caller>> = OnceLock::new();
    CALLER
        .get_or_init(|| Mutex::new(load(&shared_object())))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// `va_caller.c` as a shared object for this target: prebuilt, or compiled now.
fn shared_object() -> PathBuf {
    if let Some(p) = std::env::var_os(PREBUILT_ENV) {
        return p.into();
    }
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/src/tests/va_caller.c");
    let dir = std::env::temp_dir().join(format!("ferrodat-va-caller-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let so = dir.join("va_caller.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&so)
        .arg(source)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}; install gcc"));
    assert!(
        out.status.success(),
        "{source} does not compile (is libdapl-dev installed? scripts/install-deps installs \
         it):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    so
}

fn load(so: &std::path::Path) -> Caller {
    let path = CString::new(so.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; the library has no constructors.
    let lib = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if lib.is_null() {
        // SAFETY: dlerror's message is a C string valid until the next dl call.
        let why = unsafe { CStr::from_ptr(libc::dlerror()) };
        panic!(
            "dlopen {}: {} (built for another architecture?)",
            so.display(),
            why.to_string_lossy()
        );
    }
    if std::env::var_os(PREBUILT_ENV).is_none() {
        // Loaded: the file compiled above is no longer needed.
        let _ = std::fs::remove_dir_all(so.parent().unwrap());
    }
    let sym = |name: &CStr| {
        // SAFETY: a library handle from dlopen, which is never closed, and a C string.
        let f = unsafe { libc::dlsym(lib, name.as_ptr()) };
        assert!(!f.is_null(), "{} has no {name:?}", so.display());
        f
    };
    // SAFETY: each symbol is the C function of va_caller.c with exactly this signature.
    unsafe {
        Caller {
            set_provider: std::mem::transmute::<*mut c_void, SetProvider>(sym(
                c"va_caller_set_provider",
            )),
            write_immed: std::mem::transmute::<*mut c_void, WriteImmed>(sym(
                c"va_caller_rdma_write_immed",
            )),
            cmp_and_swap: std::mem::transmute::<*mut c_void, CmpAndSwap>(sym(
                c"va_caller_cmp_and_swap",
            )),
            fetch_and_add: std::mem::transmute::<*mut c_void, FetchAndAdd>(sym(
                c"va_caller_fetch_and_add",
            )),
            twelve: std::mem::transmute::<*mut c_void, Slots>(sym(c"va_caller_twelve")),
            stack_only: std::mem::transmute::<*mut c_void, Slots>(sym(c"va_caller_stack_only")),
        }
    }
}

thread_local! {
    /// What [`record`] was called with: handle, operation, the arguments it read.
    static READ: Cell<Option<(abi::Handle, abi::ExtendedOp, Option<ExtArgs>)>> =
        const { Cell::new(None) };
}

/// A provider entry that reads the operation's arguments as [`extended_op`] does and records
/// them, posting nothing.
unsafe extern "C" fn record(h: abi::Handle, op: abi::ExtendedOp, args: abi::VaList) -> abi::Return {
    // SAFETY: the C caller passed op's arguments.
    let a = unsafe { ExtArgs::read(op, args) };
    READ.set(Some((h, op, a)));
    ret::SUCCESS
}

/// A provider entry that stores `op` argument slots, as [`VarArgs::next`] reads them, in the
/// array `h` points to.
unsafe extern "C" fn slots(h: abi::Handle, op: abi::ExtendedOp, args: abi::VaList) -> abi::Return {
    let mut a = VarArgs::new(args);
    for i in 0..op as usize {
        // SAFETY: the C caller passed `op` integer arguments and room for as many at `h`.
        unsafe { h.cast::<u64>().add(i).write(a.next()) };
    }
    ret::SUCCESS
}

/// Fake addresses and values, each distinct in both halves so that a slot read in the wrong
/// place, or half of one, shows; the 32-bit ones have their top bit set.
const EP: usize = 0x7e00_0000_0000_e9e0;
const LMR: usize = 0x7f11_2233_4455_6670;
const RMR: usize = 0x7f99_aabb_ccdd_eef0;
const COOKIE: u64 = 0xc00c_1e5a_fe01_0203;
const FLAGS: abi::CompletionFlags = 0x8000_0005;

#[test]
fn the_operations_read_what_the_c_consumer_passed() {
    let c = caller();
    let (ep_h, lmr, rmr) = (EP as abi::Handle, LMR as *const _, RMR as *const _);
    // SAFETY (each call): `record` reads only the arguments and dereferences nothing.
    unsafe {
        (c.set_provider)(Some(record));

        let r = (c.write_immed)(ep_h, -3, lmr, COOKIE, rmr, 0x8765_4321, FLAGS);
        assert_eq!(r, ret::SUCCESS);
        let want = ExtArgs::RdmaWriteImmed {
            count: -3,
            lmr,
            cookie: COOKIE,
            rmr,
            immediate: 0x8765_4321,
            flags: FLAGS,
        };
        assert_eq!(READ.take(), Some((ep_h, ib_op::RDMA_WRITE_IMMED, Some(want))));

        let (compare, swap) = (0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210);
        let r = (c.cmp_and_swap)(ep_h, compare, swap, lmr, COOKIE, rmr, FLAGS);
        assert_eq!(r, ret::SUCCESS);
        let want = ExtArgs::CmpAndSwap { compare, swap, lmr, cookie: COOKIE, rmr, flags: FLAGS };
        assert_eq!(READ.take(), Some((ep_h, ib_op::CMP_AND_SWAP, Some(want))));

        let add = 0x8000_0000_0000_0001;
        let r = (c.fetch_and_add)(ep_h, add, lmr, COOKIE, rmr, FLAGS);
        assert_eq!(r, ret::SUCCESS);
        let want = ExtArgs::FetchAndAdd { add, lmr, cookie: COOKIE, rmr, flags: FLAGS };
        assert_eq!(READ.take(), Some((ep_h, ib_op::FETCH_AND_ADD, Some(want))));
    }
}

/// Slot values for `va_caller_twelve`/`_stack_only`, whose arguments cycle through a 64-bit
/// value, a DAT_COUNT, a pointer, a DAT_UINT32, a cookie and completion flags.
fn slot_values(n: usize) -> Vec<u64> {
    (0..n)
        .map(|i| {
            let i = i as u64 + 1;
            match (i - 1) % 6 {
                1 => (-(i as i32)) as u32 as u64, // a negative DAT_COUNT
                3 | 5 => 0x8000_0000 | (i << 8) | i,
                _ => (0x1111_1111_1111_1111 * i) ^ 0x8000_0000_0000_0000,
            }
        })
        .collect()
}

/// A 32-bit argument owns only the low half of its slot (the upper half is whatever the
/// caller's register or stack held).
fn low_bits_that_are_the_arguments(got: &[u64]) -> Vec<u64> {
    got.iter()
        .enumerate()
        .map(|(i, v)| if matches!(i % 6, 1 | 3 | 5) { v & 0xffff_ffff } else { *v })
        .collect()
}

#[test]
fn twelve_arguments_come_from_the_registers_then_the_stack_in_order() {
    let c = caller();
    let want = slot_values(12);
    let mut got = [0u64; 12];
    // SAFETY: `slots` writes the 12 slots `twelve` passes into `got`.
    let r = unsafe {
        (c.set_provider)(Some(slots));
        (c.twelve)(got.as_mut_ptr(), want.as_ptr())
    };
    assert_eq!(r, ret::SUCCESS);
    assert_eq!(low_bits_that_are_the_arguments(&got), want);
}

#[test]
fn arguments_that_start_on_the_stack_are_read_from_it() {
    let c = caller();
    let want = slot_values(6);
    let mut got = [0u64; 6];
    // SAFETY: `slots` writes the 6 slots `stack_only` passes into `got`.
    let r = unsafe {
        (c.set_provider)(Some(slots));
        (c.stack_only)(got.as_mut_ptr(), want.as_ptr())
    };
    assert_eq!(r, ret::SUCCESS, "the named arguments before `...` arrived intact");
    assert_eq!(low_bits_that_are_the_arguments(&got), want);
}

/// The provider's own entry with a handle that is not an endpoint: it reads the arguments,
/// whatever they are, and then refuses the handle.
#[test]
fn the_entry_reads_the_arguments_then_refuses_a_handle_that_is_no_endpoint() {
    let c = caller();
    let mut not_a_handle = [0u64; 4];
    let bad_ep = err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_EP);
    let (lmr, rmr) = (LMR as *const _, RMR as *const _);
    // SAFETY (each call): the entry reads the arguments, finds no endpoint and follows none
    // of the pointers.
    unsafe {
        (c.set_provider)(Some(extended_op));
        for h in [null_mut(), not_a_handle.as_mut_ptr().cast()] {
            assert_eq!((c.write_immed)(h, 1, lmr, COOKIE, rmr, 7, FLAGS), bad_ep);
            assert_eq!((c.cmp_and_swap)(h, 1, 2, lmr, COOKIE, null(), FLAGS), bad_ep);
            assert_eq!((c.fetch_and_add)(h, 1, null(), COOKIE, rmr, FLAGS), bad_ep);
        }
    }
}

/// The provider's own entry on a live endpoint: which argument it calls invalid depends on
/// which pointer the C caller passed as NULL, so each was read from its own slot.
///
/// It opens an IA on softhca, which checks user memory with `process_vm_writev`; qemu-user
/// does not implement that call, so `scripts/test-aarch64` skips this test.
#[test]
fn the_entry_names_the_null_argument_the_c_consumer_passed() {
    let (ia_h, _) = open("unit-va-list");
    let c = caller();
    // SAFETY (every call below): handles from this test, valid output pointers, and
    // triplets that outlive the calls; NULL triplets are the point.
    unsafe {
        let (mut pz, mut dto, mut ep_h, mut lmr_h) =
            (null_mut(), null_mut(), null_mut(), null_mut());
        assert_eq!(mem::pz_create(ia_h, &mut pz), ret::SUCCESS);
        assert_eq!(evd::evd_create(ia_h, 8, null_mut(), evd_flags::DTO, &mut dto), ret::SUCCESS);
        assert_eq!(ep::ep_create(ia_h, pz, dto, dto, null_mut(), null(), &mut ep_h), ret::SUCCESS);
        let mut buf = [0u64; 8];
        let region = abi::RegionDescription { for_va: buf.as_mut_ptr().cast() };
        let (mut lctx, mut rctx) = (0, 0);
        let r = mem::lmr_create(
            ia_h,
            mem_type::VIRTUAL,
            region,
            64,
            pz,
            mem_priv::ALL,
            va_type::VA,
            &mut lmr_h,
            &mut lctx,
            &mut rctx,
            null_mut(),
            null_mut(),
        );
        assert_eq!(r, ret::SUCCESS);
        let l = abi::LmrTriplet {
            virtual_address: buf.as_ptr() as u64,
            segment_length: 8,
            lmr_context: lctx,
        };
        let rm = abi::RmrTriplet {
            virtual_address: buf.as_ptr() as u64,
            segment_length: 8,
            rmr_context: rctx,
        };
        let bad = |arg| err(ret::INVALID_PARAMETER, arg);

        (c.set_provider)(Some(extended_op));
        // Argument numbers as the dat_ib_post_* macros take them, the endpoint first.
        assert_eq!((c.write_immed)(ep_h, 1, &l, 1, null(), 7, 0), bad(subtype::INVALID_ARG5));
        assert_eq!((c.cmp_and_swap)(ep_h, 1, 2, null(), 1, &rm, 0), bad(subtype::INVALID_ARG4));
        assert_eq!((c.cmp_and_swap)(ep_h, 1, 2, &l, 1, null(), 0), bad(subtype::INVALID_ARG6));
        assert_eq!((c.fetch_and_add)(ep_h, 1, null(), 1, &rm, 0), bad(subtype::INVALID_ARG3));
        assert_eq!((c.fetch_and_add)(ep_h, 1, &l, 1, null(), 0), bad(subtype::INVALID_ARG5));
        // An immediate-only write names no buffers: past the argument checks, it meets the
        // endpoint's state (unconnected here).
        let r = (c.write_immed)(ep_h, 0, null(), 1, null(), 7, 0);
        assert_eq!(r & 0x3fff_0000, ret::INVALID_STATE, "{r:#x}");
        // A handle of another type is refused as an endpoint.
        let bad_ep = err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_EP);
        assert_eq!((c.fetch_and_add)(pz, 1, &l, 1, &rm, 0), bad_ep);
        drop(c);

        assert_eq!(ep::ep_free(ep_h), ret::SUCCESS);
        assert_eq!(mem::lmr_free(lmr_h), ret::SUCCESS);
        assert_eq!(evd::evd_free(dto), ret::SUCCESS);
        assert_eq!(mem::pz_free(pz), ret::SUCCESS);
        assert_eq!(crate::ia::ia_close(ia_h, abi::close_flags::GRACEFUL), ret::SUCCESS);
    }
}
