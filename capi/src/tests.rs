//! The entry points called the way libdat2 calls them (through the table), on an in-process
//! softhca: handle validation, frees that keep the handle on error, the bare
//! DAT_QUEUE_EMPTY, and IA close in both modes; [`wired`] has the calls that reach the
//! engine's endpoint modify and queries, SRQ resize, RMRs, PSP create_any, CR handoff and
//! reject with private data.

use crate::{ep, evd, ia, mem, provider};
use ferrodat_abi::dat::{
    self as abi, evd_flags, handle_type, mem_priv, mem_type, ret, subtype, va_type,
};
use std::ptr::null_mut;

mod bad_input;
mod sweep;
mod va_list;
mod wired;

/// A private softhca fabric for this test binary, set before any device opens.
fn private_fabric() {
    ferrodat_softhca::fabric::use_private_fabric("capi-unit");
}

fn info(name: &str) -> abi::ProviderInfo {
    let mut i = abi::ProviderInfo {
        ia_name: [0; abi::NAME_MAX_LENGTH],
        dapl_version_major: 2,
        dapl_version_minor: 0,
        is_thread_safe: abi::FALSE,
    };
    for (d, b) in i.ia_name.iter_mut().zip(name.bytes()) {
        *d = b as std::ffi::c_char;
    }
    i
}

/// Two pages, the second PROT_NONE; [`GuardedEnd::ptr`] is the last bytes before it, so a
/// call that reads past what it was given faults at once instead of reading garbage.
/// Unmapped on drop.
struct GuardedEnd {
    map: *mut libc::c_void,
    /// The first of the bytes asked for, which end where the guard page starts.
    ptr: *mut u8,
}

const GUARDED_PAGE: usize = 4096;

/// The last `bytes` bytes (at most a page) before a guard page.
fn before_a_guard_page(bytes: usize) -> GuardedEnd {
    let page = GUARDED_PAGE;
    assert!(bytes <= page);
    // SAFETY: a fresh private anonymous mapping of two pages; the second made PROT_NONE.
    unsafe {
        let map = libc::mmap(
            null_mut(),
            2 * page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(map, libc::MAP_FAILED);
        assert_eq!(libc::mprotect(map.cast::<u8>().add(page).cast(), page, libc::PROT_NONE), 0);
        GuardedEnd { map, ptr: map.cast::<u8>().add(page - bytes) }
    }
}

impl Drop for GuardedEnd {
    fn drop(&mut self) {
        // SAFETY: our own mapping of two pages, unmapped once.
        unsafe { libc::munmap(self.map, 2 * GUARDED_PAGE) };
    }
}

const fn err(t: abi::Return, s: abi::ReturnSubtype) -> abi::Return {
    ret::CLASS_ERROR | t | s
}

/// Opens IA `name` as libdat2 would (init for the entry, then ia_open); the registry
/// functions are not in this process, so init only reports that on stderr.
fn open(name: &str) -> (abi::IaHandle, abi::EvdHandle) {
    private_fabric();
    let i = Box::leak(Box::new(info(name)));
    // SAFETY: a valid info and C string, as libdat2 passes.
    unsafe { provider::init(i, c"softhca0 1 127.0.0.1".as_ptr()) };
    let cname = std::ffi::CString::new(name).unwrap();
    let (mut async_evd, mut ia_h) = (null_mut(), null_mut());
    // SAFETY: valid name and output pointers.
    let r = unsafe { ia::ia_open(cname.as_ptr().cast_mut(), 8, &mut async_evd, &mut ia_h) };
    assert_eq!(r, ret::SUCCESS);
    assert!(!async_evd.is_null(), "the provider creates the async EVD when asked");
    (ia_h, async_evd)
}

#[test]
fn bad_handles_are_refused_with_their_subtype_and_never_followed() {
    let (ia_h, _) = open("unit-handles");
    let mut pz = null_mut();
    // SAFETY (every call below): handles from this test or deliberately bad ones, and
    // valid output pointers; bad handles are the point.
    unsafe {
        assert_eq!(mem::pz_create(ia_h, &mut pz), ret::SUCCESS);
        let mut kind = 99;
        assert_eq!(ia::get_handle_type(pz, &mut kind), ret::SUCCESS);
        assert_eq!(kind, handle_type::PZ);

        let mut buf = vec![0u8; 4096];
        let region = abi::RegionDescription { for_va: buf.as_mut_ptr().cast() };
        let (mut lmr, mut lctx, mut rctx) = (null_mut(), 0, 0);
        let r = mem::lmr_create(
            ia_h,
            mem_type::VIRTUAL,
            region,
            4096,
            pz,
            mem_priv::ALL,
            va_type::VA,
            &mut lmr,
            &mut lctx,
            &mut rctx,
            null_mut(),
            null_mut(),
        );
        assert_eq!(r, ret::SUCCESS);
        assert_eq!(mem::lmr_free(lmr), ret::SUCCESS);
        // Freed: refused, and its first word still leads libdat2 to our table.
        assert_eq!(mem::lmr_free(lmr), err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_LMR));
        let mut p = std::mem::zeroed::<abi::LmrParam>();
        assert_eq!(
            mem::lmr_query(lmr, 0, &mut p),
            err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_LMR)
        );
        let first_word = lmr.cast::<*const abi::Provider>().read();
        let mut qp = std::mem::zeroed::<abi::PzParam>();
        assert_eq!(mem::pz_query(pz, 0, &mut qp), ret::SUCCESS);
        assert!(!first_word.is_null());
        assert_eq!(
            first_word,
            pz.cast::<*const abi::Provider>().read(),
            "same table as live handles"
        );

        // Wrong type, NULL, and an address that was never a handle.
        let iov = abi::LmrTriplet { virtual_address: 0, segment_length: 0, lmr_context: 0 };
        let mut iov = [iov];
        let c = abi::Context { as_64: 1 };
        let r = ep::ep_post_send(pz, 1, iov.as_mut_ptr(), c, 0);
        assert_eq!(r, err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_EP));
        let mut ev = std::mem::zeroed::<abi::Event>();
        assert_eq!(ret::get_type(evd::evd_dequeue(null_mut(), &mut ev)), ret::INVALID_HANDLE);
        let bogus = buf.as_mut_ptr().cast();
        assert_eq!(mem::pz_free(bogus), err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_PZ));

        // A NULL output pointer is a parameter error, not a crash.
        assert_eq!(
            mem::pz_create(ia_h, null_mut()),
            err(ret::INVALID_PARAMETER, subtype::INVALID_ARG2)
        );
        assert_eq!(ia::ia_close(ia_h, abi::close_flags::ABRUPT), ret::SUCCESS);
    }
}

#[test]
fn frees_keep_the_handle_while_it_is_in_use_and_close_graceful_waits_for_them() {
    let (ia_h, async_evd) = open("unit-frees");
    // SAFETY (every call below): handles from this test and valid output pointers.
    unsafe {
        let (mut pz, mut dto, mut conn, mut ep_h) =
            (null_mut(), null_mut(), null_mut(), null_mut());
        assert_eq!(mem::pz_create(ia_h, &mut pz), ret::SUCCESS);
        assert_eq!(evd::evd_create(ia_h, 8, null_mut(), evd_flags::DTO, &mut dto), ret::SUCCESS);
        assert_eq!(
            evd::evd_create(ia_h, 8, null_mut(), evd_flags::CONNECTION, &mut conn),
            ret::SUCCESS
        );
        assert_eq!(
            ep::ep_create(ia_h, pz, dto, dto, conn, std::ptr::null(), &mut ep_h),
            ret::SUCCESS
        );

        // Nothing queued: the bare code consumers compare with ==.
        let mut ev = std::mem::zeroed::<abi::Event>();
        assert_eq!(evd::evd_dequeue(dto, &mut ev), ret::QUEUE_EMPTY);

        // In use: refused, and the handles stay good.
        let r = mem::pz_free(pz);
        assert_eq!(r, err(ret::INVALID_STATE, subtype::INVALID_STATE_PZ_IN_USE));
        let r = evd::evd_free(dto);
        assert_eq!(r, err(ret::INVALID_STATE, subtype::INVALID_STATE_EVD_IN_USE));
        let mut qp = std::mem::zeroed::<abi::PzParam>();
        assert_eq!(mem::pz_query(pz, 0, &mut qp), ret::SUCCESS);
        assert_eq!(qp.ia_handle, ia_h);
        let r = ia::ia_close(ia_h, abi::close_flags::GRACEFUL);
        assert_eq!(r, err(ret::INVALID_STATE, subtype::INVALID_STATE_IA_IN_USE));

        // Users gone: the frees go through, and close graceful too (the async EVD the
        // provider made goes with the IA).
        assert_eq!(ep::ep_free(ep_h), ret::SUCCESS);
        assert_eq!(evd::evd_free(dto), ret::SUCCESS);
        assert_eq!(evd::evd_free(conn), ret::SUCCESS);
        assert_eq!(mem::pz_free(pz), ret::SUCCESS);
        assert_eq!(ia::ia_close(ia_h, abi::close_flags::GRACEFUL), ret::SUCCESS);
        assert_eq!(ret::get_type(evd::evd_dequeue(async_evd, &mut ev)), ret::INVALID_HANDLE);
        assert_eq!(
            mem::pz_query(pz, 0, &mut qp),
            err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_PZ)
        );
    }
}

#[test]
fn close_abrupt_takes_everything_of_the_ia_with_it() {
    let (ia_h, _) = open("unit-abrupt");
    // SAFETY (every call below): handles from this test and valid output pointers.
    unsafe {
        let (mut pz, mut dto, mut ep_h) = (null_mut(), null_mut(), null_mut());
        assert_eq!(mem::pz_create(ia_h, &mut pz), ret::SUCCESS);
        assert_eq!(evd::evd_create(ia_h, 8, null_mut(), evd_flags::DTO, &mut dto), ret::SUCCESS);
        assert_eq!(
            ep::ep_create(ia_h, pz, dto, dto, null_mut(), std::ptr::null(), &mut ep_h),
            ret::SUCCESS
        );
        assert_eq!(ia::ia_close(ia_h, abi::close_flags::ABRUPT), ret::SUCCESS);
        let mut state = 0;
        let r = ep::ep_get_status(ep_h, &mut state, null_mut(), null_mut());
        assert_eq!(r, err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_EP));
        assert_eq!(
            ia::ia_close(ia_h, abi::close_flags::ABRUPT),
            err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_IA)
        );
    }
}

#[test]
fn an_ia_name_init_was_not_called_for_is_not_found() {
    private_fabric();
    let (mut async_evd, mut ia_h) = (null_mut(), null_mut());
    // SAFETY: valid name and output pointers.
    let r = unsafe {
        ia::ia_open(c"never-initialised".as_ptr().cast_mut(), 8, &mut async_evd, &mut ia_h)
    };
    assert_eq!(r, err(ret::PROVIDER_NOT_FOUND, subtype::NAME_NOT_REGISTERED));
}

#[test]
fn a_wait_that_times_out_reports_the_events_queued_in_nmore() {
    let (ia_h, _) = open("unit-nmore");
    // SAFETY (every call below): handles from this test and valid pointers.
    unsafe {
        let mut e = null_mut();
        assert_eq!(evd::evd_create(ia_h, 8, null_mut(), evd_flags::SOFTWARE, &mut e), ret::SUCCESS);
        let mut se = std::mem::zeroed::<abi::Event>();
        se.event_number = abi::event::SOFTWARE_EVENT;
        assert_eq!(evd::evd_post_se(e, &se), ret::SUCCESS);
        // Two wanted, one queued: a timeout, nothing dequeued, nmore = 1.
        let (mut ev, mut nmore) = (std::mem::zeroed::<abi::Event>(), -1);
        assert_eq!(evd::evd_wait(e, 1_000, 2, &mut ev, &mut nmore), ret::TIMEOUT_EXPIRED);
        assert_eq!(nmore, 1, "nmore is valid on a timeout");
        // NULL nmore is allowed there too.
        assert_eq!(evd::evd_wait(e, 1_000, 2, &mut ev, null_mut()), ret::TIMEOUT_EXPIRED);
        nmore = -1;
        assert_eq!(evd::evd_wait(e, 1_000, 1, &mut ev, &mut nmore), ret::SUCCESS);
        assert_eq!((ev.event_number, nmore), (abi::event::SOFTWARE_EVENT, 0));
        assert_eq!(evd::evd_free(e), ret::SUCCESS);
        assert_eq!(ia::ia_close(ia_h, abi::close_flags::GRACEFUL), ret::SUCCESS);
    }
}

#[test]
fn an_ia_opened_with_async_exists_reports_its_async_evd_out_of_scope() {
    private_fabric();
    let i = Box::leak(Box::new(info("unit-async-exists")));
    // SAFETY: a valid info and C string, as libdat2 passes; valid handles and pointers.
    unsafe {
        provider::init(i, c"softhca0 1 127.0.0.1".as_ptr());
        let (mut async_evd, mut ia_h) = (abi::EVD_ASYNC_EXISTS, null_mut());
        let r = ia::ia_open(c"unit-async-exists".as_ptr().cast_mut(), 8, &mut async_evd, &mut ia_h);
        assert_eq!(r, ret::SUCCESS);
        assert_eq!(async_evd, abi::EVD_ASYNC_EXISTS, "the consumer's value is left alone");
        let mut queried = null_mut();
        let r = ia::ia_query(ia_h, &mut queried, 0, null_mut(), 0, null_mut());
        assert_eq!(r, ret::SUCCESS);
        assert_eq!(queried, abi::EVD_OUT_OF_SCOPE);
        assert_eq!(ia::ia_close(ia_h, abi::close_flags::GRACEFUL), ret::SUCCESS);
    }
}

#[test]
fn an_endpoint_may_have_null_dto_evds_but_not_a_null_pz() {
    let (ia_h, _) = open("unit-ep-null");
    // SAFETY (every call below): handles from this test, NULL where that is the point,
    // and valid output pointers and structs.
    unsafe {
        let (mut pz, mut dto, mut ep_h) = (null_mut(), null_mut(), null_mut());
        assert_eq!(mem::pz_create(ia_h, &mut pz), ret::SUCCESS);
        assert_eq!(evd::evd_create(ia_h, 8, null_mut(), evd_flags::DTO, &mut dto), ret::SUCCESS);
        let null = null_mut();
        // The QP is made at create, in its PZ: a NULL PZ is not offered.
        let got = ep::ep_create(ia_h, null, dto, dto, null, std::ptr::null(), &mut ep_h);
        assert_eq!(got, ret::CLASS_ERROR | ret::MODEL_NOT_SUPPORTED);
        assert!(ep_h.is_null(), "no endpoint made");
        let query = |ep_h| {
            let mut p = std::mem::zeroed::<abi::EpParam>();
            assert_eq!(ep::ep_query(ep_h, abi::ep_field::ALL, &mut p), ret::SUCCESS);
            (p.recv_evd_handle, p.request_evd_handle)
        };
        // Either DTO EVD, or both, may be NULL; the query reports them as given.
        for (r, q) in [(null, dto), (dto, null), (null, null)] {
            let mut ep_h = null_mut();
            let got = ep::ep_create(ia_h, pz, r, q, null, std::ptr::null(), &mut ep_h);
            assert_eq!(got, ret::SUCCESS, "{r:?} {q:?}");
            assert_eq!(query(ep_h), (r, q));
            // dat_ep_modify sets a real EVD, and NULL again.
            let mut p = std::mem::zeroed::<abi::EpParam>();
            p.recv_evd_handle = dto;
            p.request_evd_handle = dto;
            let both = abi::ep_field::RECV_EVD_HANDLE | abi::ep_field::REQUEST_EVD_HANDLE;
            assert_eq!(ep::ep_modify(ep_h, both, &p), ret::SUCCESS);
            assert_eq!(query(ep_h), (dto, dto));
            p.recv_evd_handle = r;
            p.request_evd_handle = q;
            assert_eq!(ep::ep_modify(ep_h, both, &p), ret::SUCCESS);
            assert_eq!(query(ep_h), (r, q));
            assert_eq!(ep::ep_free(ep_h), ret::SUCCESS);
        }
        // An SRQ endpoint's receives need their EVD.
        let mut attr = abi::SrqAttr { max_recv_dtos: 8, max_recv_iov: 1, low_watermark: 0 };
        let mut srq_h = null_mut();
        assert_eq!(crate::srq::srq_create(ia_h, pz, &mut attr, &mut srq_h), ret::SUCCESS);
        let got =
            ep::ep_create_with_srq(ia_h, pz, null, dto, null, srq_h, std::ptr::null(), &mut ep_h);
        assert_eq!(got, ret::CLASS_ERROR | ret::MODEL_NOT_SUPPORTED);
        assert!(ep_h.is_null(), "no endpoint made");
        let got =
            ep::ep_create_with_srq(ia_h, pz, dto, null, null, srq_h, std::ptr::null(), &mut ep_h);
        assert_eq!(got, ret::SUCCESS, "a NULL request EVD is fine there");
        assert_eq!(query(ep_h), (dto, null));
        assert_eq!(ep::ep_free(ep_h), ret::SUCCESS);
        assert_eq!(crate::srq::srq_free(srq_h), ret::SUCCESS);
        // A stale (not NULL) handle is still an invalid one.
        assert_eq!(evd::evd_free(dto), ret::SUCCESS);
        let got = ep::ep_create(ia_h, pz, dto, dto, null_mut(), std::ptr::null(), &mut ep_h);
        assert_eq!(got, err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_EVD_RECV));
        assert_eq!(mem::pz_free(pz), ret::SUCCESS);
        assert_eq!(ia::ia_close(ia_h, abi::close_flags::GRACEFUL), ret::SUCCESS);
    }
}

#[test]
fn ia_query_needs_somewhere_to_put_the_fields_its_mask_asks_for() {
    let (ia_h, async_evd) = open("unit-ia-query");
    // SAFETY: a live IA handle; all-zero attribute structs are valid; NULL where that is
    // the point.
    unsafe {
        let mut a = std::mem::zeroed::<abi::IaAttr>();
        let mut p = std::mem::zeroed::<abi::ProviderAttr>();
        let all_ia = abi::ia_field::ALL;
        let all_p = abi::provider_field::ALL;
        let r = ia::ia_query(ia_h, null_mut(), all_ia, null_mut(), 0, null_mut());
        assert_eq!(r, err(ret::INVALID_PARAMETER, subtype::INVALID_ARG4), "dapltest FFT case 10");
        let r = ia::ia_query(ia_h, null_mut(), 0, null_mut(), all_p, null_mut());
        assert_eq!(r, err(ret::INVALID_PARAMETER, subtype::INVALID_ARG6));
        // libdat2's own queries: one struct, the other NULL with a mask of 0.
        let mut queried = null_mut();
        assert_eq!(ia::ia_query(ia_h, &mut queried, 0, null_mut(), all_p, &mut p), ret::SUCCESS);
        assert_eq!(queried, async_evd);
        assert_eq!(ia::ia_query(ia_h, null_mut(), all_ia, &mut a, 0, null_mut()), ret::SUCCESS);
        let name = std::ffi::CStr::from_ptr(a.adapter_name.as_ptr());
        assert_eq!(name.to_str().unwrap(), "softhca0");
        let provider = std::ffi::CStr::from_ptr(p.provider_name.as_ptr());
        assert_eq!(provider.to_str().unwrap(), "ferrodat");
        assert_eq!(ia::ia_close(ia_h, abi::close_flags::ABRUPT), ret::SUCCESS);
    }
}

#[test]
fn evd_query_reports_enabled_and_waitable_as_separate_bits() {
    use ferrodat_abi::dat::evd_state::{DISABLED, ENABLED, UNWAITABLE, WAITABLE};
    let (ia_h, _) = open("unit-evd-state");
    // SAFETY: handles from this test and live output structs.
    unsafe {
        let mut evd_h = null_mut();
        let flags = abi::evd_flags::DTO;
        assert_eq!(evd::evd_create(ia_h, 4, null_mut(), flags, &mut evd_h), ret::SUCCESS);
        let state = || {
            let mut p = std::mem::zeroed::<abi::EvdParam>();
            assert_eq!(evd::evd_query(evd_h, 0, &mut p), ret::SUCCESS);
            p.evd_state
        };
        assert_eq!(state(), ENABLED | WAITABLE);
        assert_eq!(evd::evd_set_unwaitable(evd_h), ret::SUCCESS);
        assert_eq!(state(), ENABLED | UNWAITABLE);
        assert_eq!(evd::evd_disable(evd_h), ret::SUCCESS);
        assert_eq!(state(), DISABLED | UNWAITABLE);
        assert_eq!(evd::evd_clear_unwaitable(evd_h), ret::SUCCESS);
        assert_eq!(evd::evd_enable(evd_h), ret::SUCCESS);
        assert_eq!(state(), ENABLED | WAITABLE);
        assert_eq!(ia::ia_close(ia_h, abi::close_flags::ABRUPT), ret::SUCCESS);
    }
}

#[test]
fn an_ia_opened_with_an_existing_evd_takes_it_only_if_it_is_an_async_evd() {
    let (first, _) = open("unit-async-given-1");
    private_fabric();
    let i = Box::leak(Box::new(info("unit-async-given-2")));
    // SAFETY: a valid info and C string, as libdat2 passes; handles from this test and
    // valid pointers.
    unsafe {
        provider::init(i, c"softhca0 1 127.0.0.1".as_ptr());
        let (mut dto_evd, mut async_evd) = (null_mut(), null_mut());
        let dto = abi::evd_flags::DTO;
        assert_eq!(evd::evd_create(first, 4, null_mut(), dto, &mut dto_evd), ret::SUCCESS);
        let asy = abi::evd_flags::ASYNC;
        assert_eq!(evd::evd_create(first, 4, null_mut(), asy, &mut async_evd), ret::SUCCESS);
        let name = c"unit-async-given-2".as_ptr().cast_mut();
        let (mut given, mut ia_h) = (dto_evd, null_mut());
        let r = ia::ia_open(name, 8, &mut given, &mut ia_h);
        assert_eq!(r, err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_EVD_ASYNC), "a DTO EVD");
        assert!(ia_h.is_null(), "no IA handle for a refused open");
        let mut given = async_evd;
        assert_eq!(ia::ia_open(name, 8, &mut given, &mut ia_h), ret::SUCCESS);
        assert_eq!(given, async_evd);
        let mut queried = null_mut();
        let r = ia::ia_query(ia_h, &mut queried, 0, null_mut(), 0, null_mut());
        assert_eq!((r, queried), (ret::SUCCESS, async_evd));
        assert_eq!(ia::ia_close(ia_h, abi::close_flags::ABRUPT), ret::SUCCESS);
        assert_eq!(ia::ia_close(first, abi::close_flags::ABRUPT), ret::SUCCESS);
    }
}

/// `dat_lmr_create` of `lmr` bytes of memory type `mem` described by `region` in `pz`, all
/// rights: the return code and the handle.
///
/// # Safety
/// `region` describes memory that stays mapped until the LMR is freed.
unsafe fn create_lmr(
    ia_h: abi::IaHandle,
    mem: abi::MemType,
    region: abi::RegionDescription,
    length: u64,
    pz: abi::PzHandle,
) -> (abi::Return, abi::LmrHandle) {
    let mut lmr = null_mut();
    // SAFETY: forwarded; valid output pointers, the optional ones NULL.
    let r = unsafe {
        mem::lmr_create(
            ia_h,
            mem,
            region,
            length,
            pz,
            mem_priv::ALL,
            va_type::VA,
            &mut lmr,
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
        )
    };
    (r, lmr)
}

/// The three memory types every DAT provider must register (`lmr_mem_types_supported`
/// says so): virtual memory, another LMR's memory, shared memory named by its id; each
/// queried back as the consumer described it; what each refuses.
#[test]
fn every_memory_type_dat_requires_registers_and_is_queried_as_described() {
    let (ia_h, _) = open("unit-mem-types");
    let (other_ia, _) = open("unit-mem-types-other");
    // SAFETY (every call below): handles of this test or deliberately bad ones, valid
    // output pointers, and `buf`, which outlives every LMR over it.
    unsafe {
        let mut p = std::mem::zeroed::<abi::ProviderAttr>();
        let all_p = abi::provider_field::ALL;
        assert_eq!(ia::ia_query(ia_h, null_mut(), 0, null_mut(), all_p, &mut p), ret::SUCCESS);
        assert_eq!(
            p.lmr_mem_types_supported,
            mem_type::VIRTUAL | mem_type::LMR | mem_type::SHARED_VIRTUAL
        );
        let (mut pz, mut pz2, mut other_pz) = (null_mut(), null_mut(), null_mut());
        assert_eq!(mem::pz_create(ia_h, &mut pz), ret::SUCCESS);
        assert_eq!(mem::pz_create(ia_h, &mut pz2), ret::SUCCESS);
        assert_eq!(mem::pz_create(other_ia, &mut other_pz), ret::SUCCESS);
        let mut buf = vec![0u8; 8192];
        let va = buf.as_mut_ptr();
        let (r, original) = create_lmr(
            ia_h,
            mem_type::VIRTUAL,
            abi::RegionDescription { for_va: va.cast() },
            8192,
            pz,
        );
        assert_eq!(r, ret::SUCCESS);

        // Another LMR's memory, in another PZ: the length given is the original's.
        let of_original = abi::RegionDescription { for_lmr_handle: original };
        let (r, again) = create_lmr(ia_h, mem_type::LMR, of_original, 0, pz2);
        assert_eq!(r, ret::SUCCESS);
        let mut q = std::mem::zeroed::<abi::LmrParam>();
        assert_eq!(mem::lmr_query(again, 0, &mut q), ret::SUCCESS);
        assert_eq!(q.mem_type, mem_type::LMR);
        assert_eq!(q.region_desc.for_lmr_handle, original);
        assert_eq!((q.length, q.registered_size, q.registered_address), (8192, 8192, va as u64));
        assert_eq!(q.pz_handle, pz2);
        let mut q0 = std::mem::zeroed::<abi::LmrParam>();
        assert_eq!(mem::lmr_query(original, 0, &mut q0), ret::SUCCESS);
        assert_ne!(q.lmr_context, q0.lmr_context, "a registration of its own");
        // Independent: the original goes first, the new one stays good.
        assert_eq!(mem::lmr_free(original), ret::SUCCESS);
        assert_eq!(mem::lmr_query(again, 0, &mut q), ret::SUCCESS);
        // A freed LMR, another IA's LMR, or not an LMR at all.
        let (r, _) = create_lmr(ia_h, mem_type::LMR, of_original, 0, pz);
        assert_eq!(r, err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_LMR));
        let (r, _) = create_lmr(
            other_ia,
            mem_type::LMR,
            abi::RegionDescription { for_lmr_handle: again },
            0,
            other_pz,
        );
        assert_eq!(r, err(ret::INVALID_PARAMETER, subtype::INVALID_ARG3));
        let (r, _) = create_lmr(
            ia_h,
            mem_type::LMR,
            abi::RegionDescription { for_lmr_handle: pz.cast() },
            0,
            pz,
        );
        assert_eq!(r, err(ret::INVALID_HANDLE, subtype::INVALID_HANDLE_LMR));
        assert_eq!(mem::lmr_free(again), ret::SUCCESS);

        // Shared memory: registered as this process maps it; the query points to a copy of
        // the id.
        let mut id = [0 as std::ffi::c_char; abi::LMR_COOKIE_SIZE];
        for (d, b) in id.iter_mut().zip(b"ferrodat shared region 7".iter()) {
            *d = *b as std::ffi::c_char;
        }
        let shared =
            abi::SharedMemory { virtual_address: va.add(4096).cast(), shared_memory_id: &mut id };
        let (r, lmr) = create_lmr(
            ia_h,
            mem_type::SHARED_VIRTUAL,
            abi::RegionDescription { for_shared_memory: shared },
            4096,
            pz,
        );
        assert_eq!(r, ret::SUCCESS);
        id[0] = 0; // the consumer's id may change or go: the LMR keeps its own copy
        assert_eq!(mem::lmr_query(lmr, 0, &mut q), ret::SUCCESS);
        assert_eq!(q.mem_type, mem_type::SHARED_VIRTUAL);
        let got = q.region_desc.for_shared_memory;
        assert_eq!(got.virtual_address, va.add(4096).cast());
        assert_ne!(got.shared_memory_id, &mut id as abi::LmrCookie);
        let copy = got.shared_memory_id.read();
        assert_eq!(copy[0] as u8, b'f');
        assert_eq!((q.length, q.registered_address), (4096, va as u64 + 4096));
        assert_eq!(mem::lmr_free(lmr), ret::SUCCESS);
        let no_id = abi::SharedMemory { virtual_address: va.cast(), shared_memory_id: null_mut() };
        let (r, _) = create_lmr(
            ia_h,
            mem_type::SHARED_VIRTUAL,
            abi::RegionDescription { for_shared_memory: no_id },
            4096,
            pz,
        );
        assert_eq!(r, err(ret::INVALID_PARAMETER, subtype::INVALID_ARG3));

        // No fourth type.
        let (r, _) = create_lmr(ia_h, 7, abi::RegionDescription { for_va: va.cast() }, 64, pz);
        assert_eq!(r, err(ret::INVALID_PARAMETER, subtype::INVALID_ARG2));
        assert_eq!(ia::ia_close(ia_h, abi::close_flags::ABRUPT), ret::SUCCESS);
        assert_eq!(ia::ia_close(other_ia, abi::close_flags::ABRUPT), ret::SUCCESS);
        drop(buf);
    }
}
