//! Cross-process sleep/wake: a futex word, a sleepers count and a pending bitmap per
//! instance, all in the instance's slot of the registry file.
//!
//! # Protocol (no lost wake-ups)
//!
//! Consumer (the instance, before blocking):
//! 1. `sleepers += 1` (SeqCst);
//! 2. `seq = wake_seq` (SeqCst);
//! 3. re-check for work: pending summary `!= 0` (SeqCst), then the caller's own check;
//!    if there is work: `sleepers -= 1`, return;
//! 4. `FUTEX_WAIT(&wake_seq, seq, timeout)`; returns at once if `wake_seq != seq`;
//! 5. `sleepers -= 1`.
//!
//! Producer (after publishing a record with a Release store of the ring tail):
//! 1. `bitmap[slot / 64] |= bit` (Release), then `summary |= 1 << (slot / 64)` (SeqCst);
//! 2. if `sleepers != 0` (SeqCst load): `wake_seq += 1`, then `FUTEX_WAKE(&wake_seq, all)`.
//!
//! All of steps C1, C3 and P1, P2 are SeqCst, so either the producer sees the sleeper
//! (and wakes it: if the consumer read `seq` before the increment, its FUTEX_WAIT fails
//! with EAGAIN or is woken; if after, C3 already sees the summary bit), or the consumer
//! sees the summary bit and does not sleep. The fast path of a push therefore costs two
//! `fetch_or`s and one load, and a syscall only when someone is actually asleep.
//!
//! A plain [`InstanceWaker::wake`] (no pending bit: "look at your queues", shutdown, ...)
//! always increments `wake_seq` after the caller published its work, so a sleeper that
//! read `seq` earlier cannot block, and one that reads it later sees the work in C3.
//!
//! The futex is a shared one (`FUTEX_WAIT`/`FUTEX_WAKE` without `_PRIVATE`): the kernel
//! keys it by file and offset, which is what makes it work across processes.
//!
//! # Polled rings (no notification while the consumer polls)
//!
//! A consumer that is actively polling can announce, per inbound ring, that it reads the
//! ring's tail on every pass: it writes its QPN into the ring's `polled_by` word (its own
//! read-mostly line, `layout::ring::OFF_POLLED_BY`). A producer, after publishing a record,
//! skips the pending bit, the summary and the sleepers check when `polled_by` names the
//! consumer its current epoch is addressed to. Per message this saves the transfers of the
//! bitmap and summary lines; the producer's extra load hits a line that stays shared.
//!
//! Protocol (Dekker-style, no lost records):
//! - Producer: store `tail` (Release); `fence(SeqCst)`; load `polled_by`; notify as
//!   above unless it names the consumer.
//! - Consumer stopping to poll: store `polled_by = 0`; `fence(SeqCst)`; load `tail`; if
//!   something is unread, run the QP (it may have been pushed without a notification).
//!
//! By the two SeqCst fences either the producer sees 0 and notifies, or the consumer sees
//! the record. (While polling, the consumer looks at the record header at its head rather
//! than at `tail`, see `ring.rs`, "Headers"; the header is stored before `tail`, so the
//! tail re-check above covers it.) Starting to poll needs no fence: the consumer then reads the tail on its
//! next pass anyway. The engine polls at most a few rings (those that just had records),
//! stops polling one after a few thousand passes without records, and stops polling all
//! of them before any of its threads sleeps (announcing the sleep first, so no ring starts
//! being polled meanwhile). `RingProducer::reset` clears `polled_by` (a new consumer starts
//! out notified) and a dropped consumer clears its own QPN.
//!
//! # Pending slots
//!
//! Each QP an instance owns gets a *pending slot* (0..4096) at allocation, published in
//! its QP table entry. A producer writing into the ring this QP consumes sets that slot's
//! bit; the consumer's [`PendingSlots`] iterator swaps the summary word to zero and then
//! each flagged bitmap word, so finding the rings with work costs O(flagged words), not
//! O(QPs). Bits are hints: a set bit may find an empty ring (harmless); a record is never
//! published without its bit being set afterwards.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::layout::registry as reg;
use super::registry::Registry;
use super::shm::SharedMapping;

/// Why [`Instance::wait_for_work`](super::Instance::wait_for_work) returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Work was already there at the final re-check; the thread did not block.
    WorkPending,
    /// Another thread or process woke the instance (or the wait ended early on an
    /// unexpected futex error, reported as a wake so callers re-check their queues).
    Woken,
    /// The timeout passed with no wake.
    TimedOut,
}

/// The wake line and pending bitmap of one instance slot.
#[derive(Clone, Copy)]
pub(crate) struct WakeArea<'a> {
    map: &'a SharedMapping,
    slot_base: usize,
}

impl<'a> WakeArea<'a> {
    pub(crate) fn new(map: &'a SharedMapping, slot_base: usize) -> Self {
        Self { map, slot_base }
    }

    fn seq(&self) -> &'a AtomicU32 {
        self.map.u32_at(self.slot_base + reg::INST_OFF_WAKE_SEQ)
    }
    fn sleepers(&self) -> &'a AtomicU32 {
        self.map.u32_at(self.slot_base + reg::INST_OFF_SLEEPERS)
    }
    fn summary(&self) -> &'a AtomicU64 {
        self.map.u64_at(self.slot_base + reg::INST_OFF_PENDING_SUMMARY)
    }
    fn wake_syscalls(&self) -> &'a AtomicU64 {
        self.map.u64_at(self.slot_base + reg::INST_OFF_WAKE_SYSCALLS)
    }
    fn bitmap_word(&self, word: usize) -> &'a AtomicU64 {
        self.map.u64_at(
            self.slot_base + reg::INST_OFF_PENDING_BITMAP + 8 * (word % (reg::PENDING_SLOTS / 64)),
        )
    }

    /// Zeroes the area (slot being claimed; nobody else uses it yet).
    pub(crate) fn clear(&self) {
        self.seq().store(0, Ordering::Relaxed);
        self.sleepers().store(0, Ordering::Relaxed);
        self.summary().store(0, Ordering::Relaxed);
        self.wake_syscalls().store(0, Ordering::Relaxed);
        for word in 0..reg::PENDING_SLOTS / 64 {
            self.bitmap_word(word).store(0, Ordering::Relaxed);
        }
    }

    /// Producer side: flag `slot` and wake the instance if it sleeps.
    pub(crate) fn notify_slot(&self, slot: u16) {
        let slot = usize::from(slot) % reg::PENDING_SLOTS;
        let word = slot / 64;
        self.bitmap_word(word).fetch_or(1 << (slot % 64), Ordering::Release);
        self.summary().fetch_or(1 << word, Ordering::SeqCst);
        if self.sleepers().load(Ordering::SeqCst) != 0 {
            self.seq().fetch_add(1, Ordering::SeqCst);
            self.futex_wake();
        }
    }

    /// Wake without a pending slot (see the module docs).
    pub(crate) fn wake(&self) {
        self.seq().fetch_add(1, Ordering::SeqCst);
        if self.sleepers().load(Ordering::SeqCst) != 0 {
            self.futex_wake();
        }
    }

    fn futex_wake(&self) {
        self.wake_syscalls().fetch_add(1, Ordering::Relaxed);
        futex_wake_all(self.seq());
    }

    pub(crate) fn sleepers_now(&self) -> u32 {
        self.sleepers().load(Ordering::SeqCst)
    }

    pub(crate) fn wake_syscall_count(&self) -> u64 {
        self.wake_syscalls().load(Ordering::Relaxed)
    }

    pub(crate) fn has_pending(&self) -> bool {
        self.summary().load(Ordering::SeqCst) != 0
    }

    /// Consumer side: the protocol in the module docs.
    pub(crate) fn wait(
        &self,
        timeout: Option<Duration>,
        has_work: impl FnOnce() -> bool,
    ) -> WaitOutcome {
        struct SleeperGuard<'g>(&'g AtomicU32);
        impl Drop for SleeperGuard<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.sleepers().fetch_add(1, Ordering::SeqCst);
        let _guard = SleeperGuard(self.sleepers());
        let seq = self.seq().load(Ordering::SeqCst);
        if self.summary().load(Ordering::SeqCst) != 0 || has_work() {
            return WaitOutcome::WorkPending;
        }
        let deadline = timeout.map(|t| Instant::now().checked_add(t));
        loop {
            let remaining = match deadline {
                None | Some(None) => None, // no timeout, or one too far away to represent
                Some(Some(deadline)) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return WaitOutcome::TimedOut,
                },
            };
            match futex_wait(self.seq(), seq, remaining) {
                FutexWait::ValueChangedOrWoken => {
                    if self.seq().load(Ordering::SeqCst) != seq {
                        return WaitOutcome::Woken;
                    }
                    // A spurious wake-up: keep waiting for the rest of the timeout.
                }
                FutexWait::Interrupted => {}
                FutexWait::TimedOut => return WaitOutcome::TimedOut,
                FutexWait::Failed => return WaitOutcome::Woken,
            }
        }
    }

    /// Consumer side: takes the summary; the iterator takes the flagged bitmap words.
    pub(crate) fn take_pending(&self) -> PendingSlots<'a> {
        PendingSlots {
            area: *self,
            summary: self.summary().swap(0, Ordering::SeqCst),
            word: 0,
            bits: 0,
        }
    }
}

/// The pending slots taken from an instance, in increasing order within each 64-slot
/// word. Dropping it early hands the not-yet-visited slots back to the instance, so no
/// notification is lost.
pub struct PendingSlots<'a> {
    area: WakeArea<'a>,
    summary: u64,
    word: usize,
    bits: u64,
}

impl Iterator for PendingSlots<'_> {
    type Item = u16;

    fn next(&mut self) -> Option<u16> {
        loop {
            if self.bits != 0 {
                let bit = self.bits.trailing_zeros() as usize;
                self.bits &= self.bits - 1;
                return Some((self.word * 64 + bit) as u16);
            }
            if self.summary == 0 {
                return None;
            }
            self.word = self.summary.trailing_zeros() as usize;
            self.summary &= self.summary - 1;
            self.bits = self.area.bitmap_word(self.word).swap(0, Ordering::Acquire);
        }
    }
}

impl Drop for PendingSlots<'_> {
    fn drop(&mut self) {
        let mut summary = self.summary;
        if self.bits != 0 {
            self.area.bitmap_word(self.word).fetch_or(self.bits, Ordering::Release);
            summary |= 1 << self.word;
        }
        if summary != 0 {
            self.area.summary().fetch_or(summary, Ordering::SeqCst);
        }
    }
}

/// Wakes one instance (any process). Cheap to clone; keeps the registry mapped.
#[derive(Clone)]
pub struct InstanceWaker {
    pub(crate) registry: Registry,
    pub(crate) index: u16,
    pub(crate) uid: u64,
}

impl InstanceWaker {
    /// Wakes every thread of the instance blocked in `wait_for_work` (a syscall only when
    /// one is asleep). Publish the work first. Returns false, doing nothing, when the
    /// instance is gone (its slot is free or reused).
    pub fn wake(&self) -> bool {
        if !self.registry.instance_is_current(self.index, self.uid) {
            return false;
        }
        self.registry.wake_area(self.index).wake();
        true
    }

    /// [`Instance::wait_for_work`](super::Instance::wait_for_work) through this handle,
    /// for a thread that must not keep the instance's owner alive while it sleeps (the
    /// progress thread). Only while the instance is alive: its slot may be reused after.
    pub fn wait_for_work(
        &self,
        timeout: Option<std::time::Duration>,
        has_work: impl FnOnce() -> bool,
    ) -> WaitOutcome {
        self.registry.wake_area(self.index).wait(timeout, has_work)
    }

    /// Threads of the instance currently in (or entering) a futex wait.
    pub fn sleepers(&self) -> u32 {
        self.registry.wake_area(self.index).sleepers_now()
    }

    /// FUTEX_WAKE syscalls issued to this instance so far (statistics).
    pub fn wake_syscalls(&self) -> u64 {
        self.registry.wake_area(self.index).wake_syscall_count()
    }
}

/// Tells the owner of one QP that its inbound ring has records: sets the QP's pending slot
/// in the owner instance and wakes it if asleep. Obtain with
/// [`Registry::notifier_for_qp`](super::Registry::notifier_for_qp).
#[derive(Clone)]
pub struct QpNotifier {
    pub(crate) waker: InstanceWaker,
    pub(crate) pending_slot: u16,
}

impl QpNotifier {
    /// Call after publishing records (`RingProducer::try_push`). Returns false, doing
    /// nothing, when the owner instance is gone.
    pub fn notify(&self) -> bool {
        let registry = &self.waker.registry;
        if !registry.instance_is_current(self.waker.index, self.waker.uid) {
            return false;
        }
        registry.wake_area(self.waker.index).notify_slot(self.pending_slot);
        true
    }

    /// The waker of the owner instance.
    pub fn instance(&self) -> &InstanceWaker {
        &self.waker
    }

    /// The pending slot this notifier sets.
    pub fn pending_slot(&self) -> u16 {
        self.pending_slot
    }
}

enum FutexWait {
    ValueChangedOrWoken,
    Interrupted,
    TimedOut,
    Failed,
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) -> FutexWait {
    let timespec = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
    });
    let timespec_ptr = timespec.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned u32 (in a MAP_SHARED mapping, hence the shared,
    // non-_PRIVATE op); the timeout pointer is null or points to a timespec on our stack
    // that outlives the call; FUTEX_WAIT only reads the word.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            timespec_ptr,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if rc == 0 {
        return FutexWait::ValueChangedOrWoken;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) => FutexWait::ValueChangedOrWoken,
        Some(libc::EINTR) => FutexWait::Interrupted,
        Some(libc::ETIMEDOUT) => FutexWait::TimedOut,
        _ => FutexWait::Failed,
    }
}

fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE does not access it, it only
    // wakes waiters keyed on its (file, offset).
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}
