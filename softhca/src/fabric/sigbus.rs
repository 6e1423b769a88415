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
//! Only a synchronous `BUS_ADRERR` fault (an access past the end of a file, or to a page
//! the file system cannot back) inside a registered mapping is handled so. Every other
//! `SIGBUS` goes to the disposition that was in place when the handler was installed
//! (Rust's own stack-overflow handler, an application's handler, or the default action,
//! which ends the process): faults that are not softhca's are never swallowed. A previous
//! handler is called as the kernel would call it (its mask blocked, and with
//! `SA_RESETHAND` the disposition reset to the default first), so a handler that
//! recovers keeps softhca's guard in place; with the default disposition, a fault is
//! retried under it and any other `SIGBUS` is queued again with its `siginfo`, both ending
//! the process. An application that installs its own `SIGBUS` handler after softhca's
//! takes the signal first and must chain to the previous one for this protection to hold.
//!
//! The handler takes no lock and allocates nothing: the ranges live in a fixed table of
//! atomics ([`MAX_GUARDED`] mappings; mapping more is an error, see
//! [`super::SharedMapping::map`]), each range one word, so the handler never pairs one
//! mapping's start with another's length.

use std::sync::Once;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Mappings guarded at the same time (two rings per QP: an instance owns at most 4096 QPs
/// per HCA; the registries; the perf baselines' files). The table is zero-initialised
/// static memory: its pages cost nothing until used.
pub const MAX_GUARDED: usize = 32 * 1024;

/// Bits of a slot word: the range's first page number, and its length in pages.
const PAGE_SHIFT: u32 = 12;
const PAGES_BITS: u32 = 24;
/// A slot word that marks a slot claimed but not yet filled in.
const CLAIMED: u64 = u64::MAX;

/// One guarded range: `first_page << PAGES_BITS | pages`, 0 while the slot is free, and
/// what became of it ([`LIVE`], [`REPLACING`], [`LOST`]).
struct Slot {
    range: AtomicU64,
    state: AtomicU8,
}

/// The mapping is the file's.
const LIVE: u8 = 0;
/// A handler is replacing it (another thread faulting in it returns and faults again).
const REPLACING: u8 = 1;
/// It is zero-filled private memory now.
const LOST: u8 = 2;

#[allow(clippy::declare_interior_mutable_const)] // the array's initialiser, not shared
const FREE: Slot = Slot { range: AtomicU64::new(0), state: AtomicU8::new(LIVE) };

static SLOTS: [Slot; MAX_GUARDED] = [FREE; MAX_GUARDED];
/// One past the highest slot ever used: what the handler scans.
static IN_USE: AtomicUsize = AtomicUsize::new(0);
/// Mappings lost so far in this process: a cheap "did anything change?" for pollers (the
/// engine checks it on every progress call and goes fatal if its registry is among them).
static LOSSES: AtomicU32 = AtomicU32::new(0);
/// The disposition before ours: null until the kernel has written it.
static PREVIOUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());
static INSTALL: Once = Once::new();

/// How many guarded mappings this process has lost so far (see [`Guard::lost`]); it only
/// grows, so a caller compares it with the count it last saw.
#[inline]
pub fn losses() -> u32 {
    LOSSES.load(Ordering::Acquire)
}

/// `start..start + len` as one slot word, if it is page-aligned and fits.
fn pack(start: usize, len: usize) -> Option<u64> {
    let page = 1usize << PAGE_SHIFT;
    if !start.is_multiple_of(page) || len == 0 {
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
        self.slot.is_some_and(|i| SLOTS[i].state.load(Ordering::Acquire) == LOST)
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
/// the handler on first use. `None`: the table is full, or the range cannot be described
/// (beyond 64 GiB, or above 2^52).
pub fn guard(start: usize, len: usize) -> Option<Guard> {
    INSTALL.call_once(install);
    let word = pack(start, len)?;
    for (i, slot) in SLOTS.iter().enumerate() {
        if slot.range.load(Ordering::Relaxed) != 0 {
            continue;
        }
        // Claim the slot, reset its state, then publish the range in one store.
        if slot.range.compare_exchange(0, CLAIMED, Ordering::Acquire, Ordering::Relaxed).is_err() {
            continue;
        }
        slot.state.store(LIVE, Ordering::Relaxed);
        IN_USE.fetch_max(i + 1, Ordering::AcqRel);
        slot.range.store(word, Ordering::Release);
        return Some(Guard { slot: Some(i) });
    }
    None
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

extern "C" fn on_sigbus(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: errno is this thread's; the handler may change it (mmap, sigaction), the
    // interrupted code must not see that.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: the kernel passes a valid siginfo for a SA_SIGINFO handler.
    let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
    // Only a synchronous access fault has a faulting address in a mapping that some
    // thread is using right now.
    if !(code == libc::BUS_ADRERR && replace_guarded(addr)) {
        // SAFETY: called from the handler with the kernel's arguments.
        unsafe { pass_on(signal, info, context) };
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Replaces the guarded mapping that holds `addr` with zero-filled private memory. True
/// if `addr` lies in one: replaced now, or by another thread (that faulted in it at the
/// same time) before or while we look; the faulting access is then retried.
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
        if slot
            .state
            .compare_exchange(LIVE, REPLACING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // Replaced already, or being replaced: retry the access (and fault again,
            // until the other thread is done).
            return true;
        }
        // SAFETY: `start..start + len` is one registered mapping, read in one word, and a
        // thread of ours just faulted accessing it (BUS_ADRERR is synchronous): it is
        // still mapped, since its owner unregisters before it unmaps and cannot do that
        // while the access borrows it. Replacing it with private zero pages at the same
        // addresses invalidates no pointer and touches no other memory. mmap is a plain
        // system call on Linux, safe in a signal handler.
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
            slot.state.store(LIVE, Ordering::Release);
            return false;
        }
        slot.state.store(LOST, Ordering::Release);
        // A lock-free atomic, safe in a signal handler.
        LOSSES.fetch_add(1, Ordering::Release);
        return true;
    }
    false
}

/// Whether `code` says the access that raised the signal is retried when the handler
/// returns (a fault), rather than the signal being sent or reported asynchronously.
fn is_synchronous_fault(code: libc::c_int) -> bool {
    matches!(code, libc::BUS_ADRALN | libc::BUS_ADRERR | libc::BUS_OBJERR | libc::BUS_MCEERR_AR)
}

/// A `SIGBUS` that is not ours, to the disposition installed before ours.
///
/// # Safety
/// Called only from the handler, with the arguments the kernel gave it.
unsafe fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel's siginfo.
    let code = unsafe { (*info).si_code };
    let sync = is_synchronous_fault(code);
    let previous = PREVIOUS.load(Ordering::Acquire);
    // SAFETY: PREVIOUS is null or the leaked, never freed sigaction written at install.
    let Some(previous) = (unsafe { previous.as_ref() }) else {
        // Ours was installed a moment ago and the one before is not stored yet: a fault
        // is retried (by then it is); anything else gets the default action.
        if !sync {
            // SAFETY: async-signal-safe calls with plain arguments.
            unsafe { default_action(signal, info) };
        }
        return;
    };
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_IGN && !sync {
        return; // ignored, as before softhca
    }
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // (An ignored fault would be retried for ever: the kernel forces the default.)
        if sync {
            // SAFETY: signal(2) is async-signal-safe; the retried fault ends the process.
            unsafe { libc::signal(signal, libc::SIG_DFL) };
        } else {
            // SAFETY: as in `default_action`.
            unsafe { default_action(signal, info) };
        }
        return;
    }
    // A handler: called as the kernel would, its mask blocked (and the signal itself
    // unless SA_NODEFER), one-shot with SA_RESETHAND.
    // SAFETY: sigset_t is plain data; sigaddset, pthread_sigmask and signal are
    // async-signal-safe; the handler pointer is the previous disposition's, called with
    // the arguments its flags say it takes.
    unsafe {
        let mut mask = previous.sa_mask;
        if previous.sa_flags & libc::SA_NODEFER == 0 {
            libc::sigaddset(&mut mask, signal);
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &mask, &mut old);
        if previous.sa_flags & libc::SA_RESETHAND != 0 {
            libc::signal(signal, libc::SIG_DFL);
        }
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(handler);
            f(signal, info, context);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(handler);
            f(signal);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}

/// The default action for a `SIGBUS` that is not a fault: the default disposition back,
/// and the signal queued again to this thread with its `siginfo` (delivered, and ending
/// the process, once the handler returns).
///
/// # Safety
/// Called only from the handler, with the kernel's `info`.
unsafe fn default_action(signal: libc::c_int, info: *mut libc::siginfo_t) {
    // SAFETY: signal(2) and the raw rt_tgsigqueueinfo(2) system call are async-signal-safe;
    // `info` is the kernel's, valid for the handler's duration.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let queued = libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            libc::getpid(),
            libc::syscall(libc::SYS_gettid),
            signal,
            info,
        );
        if queued != 0 {
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
        let mut a = guard(first, 4096).expect("a free slot");
        let b = guard(second, 4096).expect("a free slot");
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
