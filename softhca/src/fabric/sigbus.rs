//! A peer that truncates a file we have mapped.
//!
//! Touching a page of a `MAP_SHARED` mapping that lies past the end of its file raises
//! `SIGBUS`, whose default action kills the process: any process that can write a fabric
//! file (a peer's ring, the registry) could kill every process that maps it by shrinking
//! it. So every [`super::SharedMapping`] registers its range here, and a `SIGBUS` handler,
//! installed once per process, looks the faulting address up: if it lies in a registered
//! mapping, the handler maps zero-filled private memory over the whole range
//! (`MAP_FIXED`, so the addresses stay valid), marks the mapping lost and returns; the
//! faulting access is retried and reads zeros (or writes to memory nobody else sees).
//! What the mapping's owner then reads is validated as any peer's data is, and the ring
//! consumer reports a lost mapping as a corrupt ring (the QP goes to ERR). This is how
//! display servers survive clients that shrink their shared buffers.
//!
//! A `SIGBUS` at any other address goes to the disposition that was in place when the
//! handler was installed (Rust's own stack-overflow handler, an application's handler, or
//! the default action, which ends the process): faults that are not softhca's are never
//! swallowed. An application that installs its own `SIGBUS` handler after softhca's takes
//! the signal first and must chain to the previous one for this protection to hold.
//!
//! The handler takes no lock and allocates nothing: the ranges live in a fixed table of
//! atomics ([`MAX_GUARDED`] mappings; a mapping beyond that is simply not guarded).

use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// Mappings guarded at the same time (two rings per QP, the registries, the perf
/// baselines' files). The table is zero-initialised static memory: its pages cost
/// nothing until used.
pub const MAX_GUARDED: usize = 16 * 1024;

/// One guarded range. `start` is 0 while the slot is free; it is written last when a
/// range is registered and cleared first when it is dropped.
struct Slot {
    start: AtomicUsize,
    len: AtomicUsize,
    lost: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)] // the array's initialiser, not shared
const FREE: Slot =
    Slot { start: AtomicUsize::new(0), len: AtomicUsize::new(0), lost: AtomicBool::new(false) };

static SLOTS: [Slot; MAX_GUARDED] = [FREE; MAX_GUARDED];
/// One past the highest slot ever used: what the handler scans.
static IN_USE: AtomicUsize = AtomicUsize::new(0);
/// The disposition before ours, written once before ours is installed.
static PREVIOUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());
static INSTALL: Once = Once::new();

/// A registered mapping: unregisters when dropped (before the range is unmapped).
#[derive(Debug)]
pub struct Guard {
    slot: Option<usize>,
}

impl Guard {
    /// Whether the mapping was lost: its file was truncated under it and what it shows now
    /// is zero-filled private memory.
    pub fn lost(&self) -> bool {
        self.slot.is_some_and(|i| SLOTS[i].lost.load(Ordering::Acquire))
    }
}

impl Guard {
    /// Unregisters the range now (before it is unmapped); idempotent.
    pub fn release(&mut self) {
        if let Some(i) = self.slot.take() {
            SLOTS[i].start.store(0, Ordering::Release);
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.release();
    }
}

/// Guards `len` bytes mapped at `start` (installing the handler on first use).
pub fn guard(start: usize, len: usize) -> Guard {
    INSTALL.call_once(install);
    for (i, slot) in SLOTS.iter().enumerate() {
        if slot.start.load(Ordering::Relaxed) != 0 {
            continue;
        }
        // Claim the slot with a placeholder start, fill it in, then publish the range.
        if slot.start.compare_exchange(0, usize::MAX, Ordering::Acquire, Ordering::Relaxed).is_err()
        {
            continue;
        }
        slot.len.store(len, Ordering::Relaxed);
        slot.lost.store(false, Ordering::Relaxed);
        IN_USE.fetch_max(i + 1, Ordering::AcqRel);
        slot.start.store(start, Ordering::Release);
        return Guard { slot: Some(i) };
    }
    Guard { slot: None }
}

fn install() {
    // SAFETY: sigaction structs are plain data; sigaction(2) reads the new one and writes
    // the old one. The old one is leaked into PREVIOUS before ours can run, so the handler
    // always finds it.
    unsafe {
        let previous = Box::into_raw(Box::new(std::mem::zeroed::<libc::sigaction>()));
        if libc::sigaction(libc::SIGBUS, std::ptr::null(), previous) != 0 {
            return;
        }
        PREVIOUS.store(previous, Ordering::Release);
        let mut ours: libc::sigaction = std::mem::zeroed();
        ours.sa_sigaction = on_sigbus as *const () as usize;
        ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut ours.sa_mask);
        libc::sigaction(libc::SIGBUS, &ours, std::ptr::null_mut());
    }
}

extern "C" fn on_sigbus(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo for a SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    for slot in SLOTS.iter().take(IN_USE.load(Ordering::Acquire)) {
        let start = slot.start.load(Ordering::Acquire);
        if start == 0 || start == usize::MAX {
            continue;
        }
        let len = slot.len.load(Ordering::Relaxed);
        if !(start..start.saturating_add(len)).contains(&addr) {
            continue;
        }
        // SAFETY: `start..start + len` is a mapping of ours, still registered, so still
        // mapped (its owner unregisters before it unmaps, and it is being accessed now):
        // replacing it with private zero pages at the same addresses invalidates no pointer
        // and touches no other memory. mmap is safe to call in a signal handler on Linux.
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
        if replaced != libc::MAP_FAILED {
            slot.lost.store(true, Ordering::Release);
            return;
        }
        break;
    }
    // SAFETY: the previous disposition, or none; see `pass_on`.
    unsafe { pass_on(signal, info, context) }
}

/// A `SIGBUS` that is not ours: to the disposition installed before ours.
///
/// # Safety
/// Called only from the handler, with the arguments the kernel gave it.
unsafe fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let previous = PREVIOUS.load(Ordering::Acquire);
    // SAFETY: PREVIOUS is null or the leaked, never freed sigaction read at install.
    let Some(previous) = (unsafe { previous.as_ref() }) else {
        return default_action(signal);
    };
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // Ignoring a fault would retry it for ever: both mean the default action.
        return default_action(signal);
    }
    if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: a SA_SIGINFO handler takes these three arguments.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(handler) };
        f(signal, info, context);
    } else {
        // SAFETY: a plain handler takes the signal number.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
        f(signal);
    }
}

/// Restores the default action; returning retries the faulting access, which then ends
/// the process as if no handler had been installed.
fn default_action(signal: libc::c_int) {
    // SAFETY: signal(2) with SIG_DFL for the signal being handled.
    unsafe { libc::signal(signal, libc::SIG_DFL) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_guards_never_share_a_slot_and_a_released_one_frees_its_slot() {
        // Addresses nothing maps: only the table is exercised.
        let mut a = guard(0x1000_0000, 4096);
        let b = guard(0x2000_0000, 4096);
        let (sa, sb) = (a.slot.expect("a free slot"), b.slot.expect("a free slot"));
        assert_ne!(sa, sb);
        assert_eq!(SLOTS[sa].start.load(Ordering::Acquire), 0x1000_0000);
        assert!(!a.lost() && !b.lost());
        a.release();
        assert_eq!(SLOTS[sa].start.load(Ordering::Acquire), 0);
        assert!(!a.lost(), "a released guard reports nothing");
        a.release();
        assert_eq!(SLOTS[sb].start.load(Ordering::Acquire), 0x2000_0000, "b is untouched");
    }
}
