//! A fabric file truncated (or otherwise failing) under our mapping.
//!
//! Touching a page of a `MAP_SHARED` mapping that lies past the end of its file raises
//! `SIGBUS`, whose default action kills the process: any process that can write a fabric
//! file (a peer's ring, the registry) could kill every process that maps it by shrinking
//! it. So every [`super::SharedMapping`] registers its range here, and a `SIGBUS` handler,
//! installed once per process, looks the faulting address up: if it lies in a registered
//! mapping, the handler maps zero-filled private memory over the whole range
//! (`MAP_FIXED`, so the addresses stay valid), marks the mapping lost and returns; the
//! faulting access is retried and reads zeros (or writes to memory nobody else sees). A
//! lost mapping means a fault on it, whatever its cause: a truncation, or the backing
//! store failing (files are created with their space reserved, so a full `/dev/shm` is an
//! error at creation, not a fault later). What the mapping's owner then reads is validated
//! as any peer's data is; the ring consumer reports a lost ring as corrupt (the QP goes
//! to ERR), the producer's peer stops hearing from it (its requests time out), and the
//! registry reports itself lost ([`super::Registry`]'s operations fail). This is how display
//! servers survive clients that shrink their shared buffers.
//!
//! A `SIGBUS` at any other address goes to the disposition that was in place when the
//! handler was installed (Rust's own stack-overflow handler, an application's handler, or
//! the default action, which ends the process): faults that are not softhca's are never
//! swallowed. To give that disposition exactly the delivery it asked for (its flags, such
//! as `SA_RESETHAND`, and its mask), the handler puts it back in place and lets the
//! kernel deliver again: a faulting access is retried on return, a signal sent with
//! `kill` is raised again. softhca's guard is then gone for good, as after any such
//! signal an application survives. An application that installs its own `SIGBUS` handler
//! after softhca's takes the signal first and must chain to the previous one for this
//! protection to hold.
//!
//! The handler takes no lock and allocates nothing: the ranges live in a fixed table of
//! atomics ([`MAX_GUARDED`] mappings; a mapping beyond that, or too large to describe in
//! one word, is simply not guarded), each range one word, so the handler never pairs one
//! mapping's start with another's length.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// Mappings guarded at the same time (two rings per QP, the registries, the perf
/// baselines' files). The table is zero-initialised static memory: its pages cost
/// nothing until used.
pub const MAX_GUARDED: usize = 16 * 1024;

/// Bits of a slot word: the range's first page number, and its length in pages.
const PAGE_SHIFT: u32 = 12;
const PAGES_BITS: u32 = 24;
/// A slot word that marks a slot claimed but not yet filled in.
const CLAIMED: u64 = u64::MAX;

/// One guarded range: `first_page << PAGES_BITS | pages`, 0 while the slot is free.
struct Slot {
    range: AtomicU64,
    lost: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)] // the array's initialiser, not shared
const FREE: Slot = Slot { range: AtomicU64::new(0), lost: AtomicBool::new(false) };

static SLOTS: [Slot; MAX_GUARDED] = [FREE; MAX_GUARDED];
/// One past the highest slot ever used: what the handler scans.
static IN_USE: AtomicUsize = AtomicUsize::new(0);
/// The disposition before ours: null until the kernel has written it.
static PREVIOUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());
static INSTALL: Once = Once::new();

/// `start..start + len` as one slot word, if it is page-aligned and fits.
fn pack(start: usize, len: usize) -> Option<u64> {
    let page = 1usize << PAGE_SHIFT;
    if start % page != 0 || len == 0 {
        return None;
    }
    let first = (start >> PAGE_SHIFT) as u64;
    let pages = len.div_ceil(page) as u64;
    (first < 1 << (64 - PAGES_BITS) && pages < 1 << PAGES_BITS)
        .then_some(first << PAGES_BITS | pages)
        .filter(|&word| word != 0 && word != CLAIMED)
}

/// The byte range of a slot word.
fn unpack(word: u64) -> (usize, usize) {
    let first = (word >> PAGES_BITS) as usize;
    let pages = (word & ((1 << PAGES_BITS) - 1)) as usize;
    (first << PAGE_SHIFT, pages << PAGE_SHIFT)
}

/// A registered mapping: unregisters when dropped (before the range is unmapped).
#[derive(Debug)]
pub struct Guard {
    slot: Option<usize>,
}

impl Guard {
    /// Whether the mapping was lost: a fault on it (its file truncated under it, or its
    /// backing store failing) replaced it with zero-filled private memory.
    pub fn lost(&self) -> bool {
        self.slot.is_some_and(|i| SLOTS[i].lost.load(Ordering::Acquire))
    }

    /// Unregisters the range now (before it is unmapped); idempotent.
    pub fn release(&mut self) {
        if let Some(i) = self.slot.take() {
            SLOTS[i].range.store(0, Ordering::Release);
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.release();
    }
}

/// Guards the mapping of `len` bytes at `start` (page-aligned, as mmap returns), installing
/// the handler on first use.
pub fn guard(start: usize, len: usize) -> Guard {
    INSTALL.call_once(install);
    let Some(word) = pack(start, len) else { return Guard { slot: None } };
    for (i, slot) in SLOTS.iter().enumerate() {
        if slot.range.load(Ordering::Relaxed) != 0 {
            continue;
        }
        // Claim the slot, reset its flag, then publish the range in one store.
        if slot.range.compare_exchange(0, CLAIMED, Ordering::Acquire, Ordering::Relaxed).is_err() {
            continue;
        }
        slot.lost.store(false, Ordering::Relaxed);
        IN_USE.fetch_max(i + 1, Ordering::AcqRel);
        slot.range.store(word, Ordering::Release);
        return Guard { slot: Some(i) };
    }
    Guard { slot: None }
}

fn install() {
    let previous = Box::into_raw(Box::new(
        // SAFETY: sigaction is plain data; all zeros is a valid (default) value.
        unsafe { std::mem::zeroed::<libc::sigaction>() },
    ));
    // SAFETY: sigaction structs are plain data; one sigaction(2) call installs ours and
    // reports the one it replaces (a handler another thread installs meanwhile is either
    // the one replaced, or replaces ours: never lost between two calls). The old one is
    // leaked into PREVIOUS; until that store the handler treats a foreign fault with the
    // default action.
    unsafe {
        let mut ours: libc::sigaction = std::mem::zeroed();
        ours.sa_sigaction = on_sigbus as *const () as usize;
        ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut ours.sa_mask);
        if libc::sigaction(libc::SIGBUS, &ours, previous) != 0 {
            drop(Box::from_raw(previous));
            return;
        }
    }
    PREVIOUS.store(previous, Ordering::Release);
}

extern "C" fn on_sigbus(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: errno is this thread's; the handler may change it (mmap), the interrupted
    // code must not see that.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: the kernel passes a valid siginfo for a SA_SIGINFO handler.
    let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
    // A fault (si_code > 0) in a guarded mapping: replace it. A sent signal has no
    // faulting address worth looking up.
    if code > 0 && replace_guarded(addr) {
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
        return;
    }
    // SAFETY: called from the handler with the signal it handles.
    unsafe { pass_on(signal, code) };
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Replaces the guarded mapping that holds `addr` with zero-filled private memory (once:
/// a second fault in it, from a thread that faulted at the same time, finds it done).
/// False if no guarded mapping holds `addr`, or the replacement failed.
fn replace_guarded(addr: usize) -> bool {
    for slot in SLOTS.iter().take(IN_USE.load(Ordering::Acquire)) {
        let word = slot.range.load(Ordering::Acquire);
        if word == 0 || word == CLAIMED {
            continue;
        }
        let (start, len) = unpack(word);
        if !(start..start.saturating_add(len)).contains(&addr) {
            continue;
        }
        if slot.lost.load(Ordering::Acquire) {
            return true;
        }
        // SAFETY: `start..start + len` is one registered mapping, read in one word: it is
        // still mapped (its owner unregisters before it unmaps, and a thread is accessing
        // it now, which keeps its owner alive). Replacing it with private zero pages at
        // the same addresses invalidates no pointer and touches no other memory. mmap is
        // safe to call in a signal handler on Linux.
        let replaced = unsafe {
            libc::mmap(
                start as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if replaced == libc::MAP_FAILED {
            return false;
        }
        slot.lost.store(true, Ordering::Release);
        return true;
    }
    false
}

/// A `SIGBUS` that is not ours: puts the disposition installed before ours back (the
/// default one if that is not known yet) and has the kernel deliver again with its own
/// flags and mask: a fault is retried when the handler returns; a sent signal (`code`
/// <= 0) is raised again, to be delivered once the handler returns.
///
/// # Safety
/// Called only from the handler, for the signal it handles.
unsafe fn pass_on(signal: libc::c_int, code: libc::c_int) {
    let previous = PREVIOUS.load(Ordering::Acquire);
    // SAFETY: PREVIOUS is null or the leaked, never freed sigaction written at install;
    // sigaction and raise are async-signal-safe.
    unsafe {
        if previous.is_null() {
            libc::signal(signal, libc::SIG_DFL);
        } else {
            libc::sigaction(signal, previous, std::ptr::null_mut());
        }
        if code <= 0 {
            libc::raise(signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_one_word_and_what_does_not_fit_is_not_guarded() {
        let word = pack(0x7f00_1234_5000, 3 * 4096 + 1).expect("fits");
        assert_eq!(unpack(word), (0x7f00_1234_5000, 4 * 4096));
        assert_eq!(pack(0x7f00_1234_5001, 4096), None, "not page-aligned");
        assert_eq!(pack(0x1000, 0), None);
        assert_eq!(pack(0x1000, 1 << (PAGE_SHIFT + PAGES_BITS)), None, "too many pages");
        assert_eq!(pack(1 << 63, 4096), None, "too high");
    }

    #[test]
    fn live_guards_never_share_a_slot_and_a_released_one_frees_its_slot() {
        // A reservation of ours, so that no fault elsewhere could ever match these ranges.
        // SAFETY: a fresh anonymous PROT_NONE mapping, unmapped at the end of the test.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * 4096,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        let (first, second) = (base as usize, base as usize + 4096);
        let mut a = guard(first, 4096);
        let b = guard(second, 4096);
        let (sa, sb) = (a.slot.expect("a free slot"), b.slot.expect("a free slot"));
        assert_ne!(sa, sb);
        assert_eq!(unpack(SLOTS[sa].range.load(Ordering::Acquire)), (first, 4096));
        assert!(!a.lost() && !b.lost());
        a.release();
        assert_eq!(SLOTS[sa].range.load(Ordering::Acquire), 0);
        assert!(!a.lost(), "a released guard reports nothing");
        a.release();
        assert_eq!(unpack(SLOTS[sb].range.load(Ordering::Acquire)), (second, 4096), "b stays");
        drop(b);
        // SAFETY: our own reservation, no longer guarded.
        assert_eq!(unsafe { libc::munmap(base, 2 * 4096) }, 0);
    }
}
