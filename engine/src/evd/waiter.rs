//! `dat_evd_wait` and `dat_evd_dequeue` over an [`EventQueue`], a [`Notifier`] and an
//! event source ([`Harvest`]: the CQs of a DTO EVD), with the DAT semantics of
//! `reference/udapl-semantics.md` §3.
//!
//! # The wait algorithm
//!
//! 1. `threshold` must be in `1..=qlen` ([`WaitError::InvalidThreshold`]).
//! 2. Take ownership of the EVD: one CAS on the flags word sets OWNED unless the EVD is
//!    unwaitable ([`WaitError::Unwaitable`]), aborted ([`WaitError::Aborted`]) or already
//!    owned by a waiter ([`WaitError::Busy`]: `DAT_INVALID_STATE`, `EVD_WAITER`). Dequeues
//!    fail with `Busy` while a waiter owns the EVD. Ownership ends when `wait` returns.
//! 3. Check: if fewer than `threshold` events are queued, harvest the source into the
//!    queue (at most the free room). If `threshold` are there, dequeue one and return it
//!    with `nmore` = the events left. For a source that notifies for some events only
//!    ([`Harvest::notices`]; threshold 1): harvest, and return the oldest event only if a
//!    notification event was queued since a waiter last found the queue empty (or the queue
//!    is full).
//! 4. Spin: repeat 3 for [`EvdCore::with_spin`] rounds (the deadline is checked on every
//!    round, so a zero timeout checks once and returns).
//! 5. Arm the source ([`Harvest::arm`]), announce to the notifier, check the flags
//!    (UNWAITABLE or ABORTED set → fail) and then 3 once more; only then sleep on the
//!    notifier's eventfd and the source's fds until something fires, the deadline passes
//!    or `wake_all` kicks. Readable source fds are acknowledged ([`Harvest::acknowledge`]),
//!    then back to 5 with the remaining time. Any event posted or completed after the
//!    re-check wakes the sleep: a post through the notifier protocol, a completion
//!    through the armed CQ's channel.
//! 6. Deadline passed: one last check (3); if the threshold is still not met,
//!    [`WaitError::Timeout`] with `nmore` = the events queued, nothing dequeued.
//!
//! A kick re-reads the flags: ABORTED → `Aborted`, UNWAITABLE → `Unwaitable`; if neither is
//! still set (set_waitable ran in between) the wait goes on. The threshold is exact (OFA's
//! behaviour): the waiter never returns early with fewer than `threshold` events.
//!
//! # Resize
//!
//! [`EvdCore::resize`] builds a new queue and moves the events over in order. The queue
//! sits behind an `RwLock`: every post, dequeue and check takes the read side for the few
//! instructions of one queue operation (one uncontended atomic RMW to enter, one to leave;
//! never held across a sleep or a harvest callback into user code other than pushing);
//! only `resize` takes the write side. `resize` also takes OWNED for its duration, so it is
//! refused while a waiter sleeps (a waiter's threshold is checked against the qlen it
//! started with) and waits/dequeues racing with it fail `Busy`. One dequeue skips the
//! read side: [`EvdCore::dequeue_from`], for a caller that excludes resizes by a lock of
//! its own (a DTO EVD's dequeue, under the CQ source's lock, which its resize holds too,
//! on the queue the source keeps a handle of: the queue is behind an `Arc` for that).
//!
//! # Overflow
//!
//! [`EvdCore::post`] hands the event back when the queue is full (the caller answers
//! `DAT_QUEUE_FULL` for `post_se`, or raises `ASYNC_ERROR_EVD_OVERFLOW`). A harvest takes
//! at most the free room from the source, so completions stay in the CQ rather than being
//! dropped; if producers fill the room during a harvest, the surplus event is dropped and
//! counted: in [`EvdCore::overflows`] for good, and as not yet reported until the EVD layer
//! takes it with [`EvdCore::take_unreported_overflows`] (after the wait or dequeue, with no
//! lock held) and raises one `ASYNC_ERROR_EVD_OVERFLOW` per lost event, as for a full post.

use super::notify::{Notifier, WakeReason, Woken};
use super::queue::EventQueue;
use crate::sync::{AtomicU32, AtomicU64, Ordering, RwLock};
use std::fmt;
use std::io;
use std::num::NonZeroUsize;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `DAT_TIMEOUT_INFINITE`: wait without a deadline.
pub const DAT_TIMEOUT_INFINITE: u32 = u32::MAX;

/// Where the events of an EVD come from besides the posts into its queue: for a DTO or
/// RMR-bind EVD, its CQs. The waiter or dequeuer calls it with the EVD owned (waits) or at
/// least with `&mut` access (concurrent dequeuers each need their own `&mut`: put the CQs
/// behind a `try_lock` and harvest nothing if another dequeuer holds them).
///
/// The contract, for a CQ-backed implementation:
/// - `harvest(max, sink)`: poll at most `max` completions, oldest first, turn each into the
///   EVD's event type and give it to `sink`; return how many. Never blocks. (On softhca an
///   empty poll also advances the model, so the spin phase makes progress.)
/// - `arm()`: `Cq::arm(solicited)` every CQ (solicited-only for SOLICITED_WAIT streams), so
///   the next completion makes its channel fd readable. Called before every sleep and
///   followed by one more harvest, so a completion between the last poll and the arm is
///   not missed.
/// - `fds()`: the completion-channel fds to poll (at most
///   [`Ready::MAX_EXTRA_FDS`](super::notify::Ready::MAX_EXTRA_FDS); one per channel, not per
///   CQ).
/// - `acknowledge(i)`: `fds()[i]` was readable: consume its pending channel events
///   (`CompChannel::wait(Some(Duration::ZERO))` until it reports none) so the fd stops
///   being readable; the CQs get armed again by the next `arm()`. Never blocks.
pub trait Harvest<T> {
    /// Moves up to `max` ready events, oldest first, into `sink`; returns how many.
    fn harvest(&mut self, max: usize, sink: &mut dyn FnMut(T)) -> usize;
    /// Requests a readable fd for the next event.
    fn arm(&mut self);
    /// The fds that become readable after [`Harvest::arm`].
    fn fds(&self) -> &[RawFd];
    /// `fds()[index]` was readable: consume what made it so.
    fn acknowledge(&mut self, index: usize) -> Result<(), SourceError>;
    /// `None` (the default): every event ends a wait. `Some(n)`: only notification events
    /// do, and `n` of them have been queued so far (wrapping; counted once queued, by the
    /// source for what it harvests and by the EVD for what is posted): see
    /// [`super::notification`]. Such a source is waited on with threshold 1.
    fn notices(&self) -> Option<u64> {
        None
    }
}

/// An error from an event source (e.g. a failing completion channel).
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// The source of an EVD fed by posts only (software, CM and async events).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSource;

impl<T> Harvest<T> for NoSource {
    fn harvest(&mut self, _max: usize, _sink: &mut dyn FnMut(T)) -> usize {
        0
    }
    fn arm(&mut self) {}
    fn fds(&self) -> &[RawFd] {
        &[]
    }
    fn acknowledge(&mut self, _index: usize) -> Result<(), SourceError> {
        Ok(())
    }
}

/// Why a wait or dequeue failed. The EVD layer maps these to `DatError`.
#[derive(Debug)]
pub enum WaitError {
    /// `threshold` outside `1..=qlen`: `DAT_INVALID_PARAMETER` (the threshold argument).
    InvalidThreshold {
        /// The threshold asked for.
        threshold: u32,
        /// The EVD's qlen.
        qlen: usize,
    },
    /// Another waiter owns the EVD (or a resize runs): `DAT_INVALID_STATE`,
    /// `DAT_INVALID_STATE_EVD_WAITER`.
    Busy,
    /// The EVD is unwaitable (on entry, or set while waiting): `DAT_INVALID_STATE`,
    /// `DAT_INVALID_STATE_EVD_UNWAITABLE`.
    Unwaitable,
    /// The EVD is being freed or its IA closed: `DAT_ABORT`.
    Aborted,
    /// The timeout passed with fewer than `threshold` events; nothing was dequeued:
    /// `DAT_TIMEOUT_EXPIRED`.
    Timeout {
        /// Events queued at the end.
        nmore: usize,
    },
    /// Dequeue found no event: `DAT_QUEUE_EMPTY`.
    Empty,
    /// A resize asked for fewer entries than are queued: `DAT_INVALID_STATE`.
    TooSmall {
        /// Events queued.
        queued: usize,
    },
    /// poll(2) or the event source failed: `DAT_INTERNAL_ERROR`.
    Internal(SourceError),
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitError::InvalidThreshold { threshold, qlen } => {
                write!(f, "threshold {threshold} is outside 1..={qlen} (the EVD's qlen)")
            }
            WaitError::Busy => f.write_str("another thread is waiting on this EVD"),
            WaitError::Unwaitable => f.write_str("the EVD is unwaitable (dat_evd_set_unwaitable)"),
            WaitError::Aborted => f.write_str("the EVD was freed or its IA closed"),
            WaitError::Timeout { nmore } => write!(f, "timed out with {nmore} events queued"),
            WaitError::Empty => f.write_str("no event queued"),
            WaitError::TooSmall { queued } => {
                write!(f, "{queued} events are queued; resize to at least that many")
            }
            WaitError::Internal(e) => write!(f, "EVD wait failed: {e}"),
        }
    }
}

impl std::error::Error for WaitError {}

impl From<io::Error> for WaitError {
    fn from(e: io::Error) -> WaitError {
        WaitError::Internal(Box::new(e))
    }
}

/// Harvested events dropped because producers filled the queue during the harvest.
struct Overflows {
    /// Every one since the EVD was made.
    dropped: AtomicU64,
    /// Those the EVD layer has not yet reported on the async EVD.
    unreported: AtomicU64,
}

impl Overflows {
    fn new() -> Overflows {
        Overflows { dropped: AtomicU64::new(0), unreported: AtomicU64::new(0) }
    }

    /// One harvested event found no room.
    #[cold]
    #[inline(never)]
    fn count(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        self.unreported.fetch_add(1, Ordering::Relaxed);
    }
}

/// Where a dequeue's harvest puts events it does not hand back itself: the EVD's queue,
/// behind what is there. An event that finds the queue full is dropped and counted (see
/// [`EvdCore::take_unreported_overflows`]), as a harvest's surplus is (a harvest takes at
/// most [`Backlog::room`], so that happens only when producers fill the room meanwhile).
/// Two references, passed in registers.
pub struct Backlog<'a, T> {
    queue: &'a EventQueue<T>,
    overflows: &'a Overflows,
}

// Not derived: the derive would want `T: Copy`; only the references are copied.
impl<T> Clone for Backlog<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Backlog<'_, T> {}

impl<T> Backlog<'_, T> {
    /// Free places in the queue now.
    pub fn room(&self) -> usize {
        self.queue.capacity().saturating_sub(self.queue.len())
    }

    /// Queues `event`.
    pub fn push(&self, event: T) {
        if self.queue.push(event).is_err() {
            self.overflows.count();
        }
    }
}

/// What a dequeue's source found ([`EvdCore::dequeue_with`]).
pub enum Harvested<R> {
    /// One completion, the dequeue's.
    One(R),
    /// Events went to the [`Backlog`]: the dequeue takes the oldest queued.
    Queued,
    /// Nothing is ready.
    Nothing,
}

const OWNED: u32 = 1;
const UNWAITABLE: u32 = 2;
const ABORTED: u32 = 4;
/// One `dat_evd_free` under way, counted from this bit up ([`EvdCore::abort_for_free`]):
/// undone if that free fails, unlike [`ABORTED`], which an IA close sets for good. A count,
/// not a flag, so that one of two concurrent frees failing does not re-open waits while
/// the other still runs.
const FREEING: u32 = 8;
/// Any of these set: waits fail with [`WaitError::Aborted`].
const ENDED: u32 = ABORTED | !(FREEING - 1);

/// The waitable core of an EVD: its event queue, notifier and waiter state.
pub struct EvdCore<T> {
    /// Behind an `Arc` so that a DTO EVD's CQ source can hold the current queue too, for
    /// the dequeue that holds the source's lock (see [`EvdCore::dequeue_from`]).
    queue: RwLock<Arc<EventQueue<T>>>,
    notifier: Notifier,
    flags: AtomicU32,
    overflows: Overflows,
    spin: u32,
    /// [`Harvest::notices`] when a waiter last found the queue empty: a count beyond it
    /// means a notification event was queued since (only the waiter owning the EVD, or a
    /// CNO holding its source, writes it).
    notices_seen: AtomicU64,
}

impl<T> fmt::Debug for EvdCore<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EvdCore")
            .field("qlen", &self.qlen())
            .field("len", &self.len())
            .field("flags", &self.flags.load(Ordering::Relaxed))
            .finish()
    }
}

/// Releases OWNED on every way out of `wait` and `resize`.
struct Owner<'a>(&'a AtomicU32);

impl Drop for Owner<'_> {
    fn drop(&mut self) {
        self.0.fetch_and(!OWNED, Ordering::Release);
    }
}

impl<T> EvdCore<T> {
    /// Spin rounds before sleeping unless [`EvdCore::with_spin`] says otherwise.
    pub const DEFAULT_SPIN: u32 = 64;

    /// A waitable, enabled core with a queue of `qlen` events.
    pub fn new(qlen: NonZeroUsize) -> io::Result<EvdCore<T>> {
        Ok(EvdCore {
            queue: RwLock::new(Arc::new(EventQueue::new(qlen))),
            notifier: Notifier::new()?,
            flags: AtomicU32::new(0),
            overflows: Overflows::new(),
            spin: Self::DEFAULT_SPIN,
            notices_seen: AtomicU64::new(0),
        })
    }

    /// Sets the spin rounds before a wait arms and sleeps (0: sleep at once).
    pub fn with_spin(mut self, rounds: u32) -> EvdCore<T> {
        self.spin = rounds;
        self
    }

    fn q(&self) -> crate::sync::RwLockReadGuard<'_, Arc<EventQueue<T>>> {
        self.queue.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The event queue as it is now ([`EvdCore::resize`] replaces it).
    pub fn current_queue(&self) -> Arc<EventQueue<T>> {
        self.q().clone()
    }

    /// The qlen.
    pub fn qlen(&self) -> usize {
        self.q().capacity()
    }

    /// Events queued (a snapshot; not counting what the source has not yet harvested).
    pub fn len(&self) -> usize {
        self.q().len()
    }

    /// True if nothing is queued (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True while a waiter owns the EVD (the CNO is not triggered then).
    pub fn has_waiter(&self) -> bool {
        self.flags.load(Ordering::Acquire) & OWNED != 0
    }

    /// False after [`EvdCore::set_unwaitable`] until [`EvdCore::set_waitable`].
    pub fn is_waitable(&self) -> bool {
        self.flags.load(Ordering::Acquire) & UNWAITABLE == 0
    }

    /// Harvested events dropped because producers filled the queue during the harvest
    /// (all of them, reported or not).
    pub fn overflows(&self) -> u64 {
        self.overflows.dropped.load(Ordering::Relaxed)
    }

    /// The harvested events dropped since the last call, for the EVD layer to report as
    /// `ASYNC_ERROR_EVD_OVERFLOW` (each drop is handed out once, to one caller). The thread
    /// whose harvest dropped an event calls this after its wait or dequeue, so every drop
    /// is taken soon. One load when there is none.
    #[inline]
    pub fn take_unreported_overflows(&self) -> u64 {
        if self.overflows.unreported.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.overflows.unreported.swap(0, Ordering::Relaxed)
    }

    /// The notifier (for diagnostics; producers go through [`EvdCore::post`]).
    pub fn notifier(&self) -> &Notifier {
        &self.notifier
    }

    /// Queues an event from any thread and wakes the waiter if one sleeps; hands the event
    /// back if the queue is full.
    pub fn post(&self, event: T) -> Result<(), T> {
        self.post_then(event, || {})
    }

    /// [`EvdCore::post`], running `queued` once the event is queued and before a waiter is
    /// woken (to count it as a notification event: see [`Harvest::notices`]).
    pub fn post_then(&self, event: T, queued: impl FnOnce()) -> Result<(), T> {
        self.q().push(event)?;
        queued();
        self.notifier.notify();
        Ok(())
    }

    /// `dat_evd_set_unwaitable`: later waits fail, a current waiter is woken and fails;
    /// posts and dequeues go on.
    pub fn set_unwaitable(&self) {
        self.flags.fetch_or(UNWAITABLE, Ordering::SeqCst);
        self.notifier.wake_all(WakeReason::Unwaitable);
    }

    /// `dat_evd_set_waitable`.
    pub fn set_waitable(&self) {
        self.flags.fetch_and(!UNWAITABLE, Ordering::SeqCst);
    }

    /// EVD free or IA close: a current waiter is woken and fails with
    /// [`WaitError::Aborted`], and so does every later wait.
    pub fn abort(&self) {
        self.flags.fetch_or(ABORTED, Ordering::SeqCst);
        self.notifier.wake_all(WakeReason::Abort);
    }

    /// A free about to be tried: as [`EvdCore::abort`], but undone by
    /// [`EvdCore::cancel_free`] if the free fails (an IA close's abort stays).
    pub fn abort_for_free(&self) {
        self.flags.fetch_add(FREEING, Ordering::SeqCst);
        self.notifier.wake_all(WakeReason::Abort);
    }

    /// The free [`EvdCore::abort_for_free`] announced failed: waits work again, unless the
    /// EVD's IA closed meanwhile.
    pub fn cancel_free(&self) {
        self.flags.fetch_sub(FREEING, Ordering::SeqCst);
    }

    fn own(&self) -> Result<Owner<'_>, WaitError> {
        let mut f = self.flags.load(Ordering::Relaxed);
        loop {
            if f & ENDED != 0 {
                return Err(WaitError::Aborted);
            }
            if f & UNWAITABLE != 0 {
                return Err(WaitError::Unwaitable);
            }
            if f & OWNED != 0 {
                return Err(WaitError::Busy);
            }
            match self.flags.compare_exchange(f, f | OWNED, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Ok(Owner(&self.flags)),
                Err(cur) => f = cur,
            }
        }
    }

    /// The flags that end a wait, as an error.
    fn check_flags(&self) -> Result<(), WaitError> {
        let f = self.flags.load(Ordering::SeqCst);
        if f & ENDED != 0 {
            Err(WaitError::Aborted)
        } else if f & UNWAITABLE != 0 {
            Err(WaitError::Unwaitable)
        } else {
            Ok(())
        }
    }

    /// Harvests up to the free room into `q`.
    fn harvest(&self, q: &EventQueue<T>, src: &mut dyn Harvest<T>) {
        let room = q.capacity().saturating_sub(q.len());
        if room == 0 {
            return;
        }
        src.harvest(room, &mut |ev| {
            if q.push(ev).is_err() {
                self.overflows.count();
            }
        });
    }

    /// Step 3 of the algorithm: `Some((event, nmore))` if `threshold` events are there.
    fn take(&self, src: &mut dyn Harvest<T>, threshold: usize) -> Option<(T, usize)> {
        let q = self.q();
        if let Some(before) = src.notices() {
            // Threshold 1 (the EVD layer refuses more for such a source).
            return if self.notice_pending(&q, src, before) {
                q.pop().map(|ev| (ev, q.len()))
            } else {
                None
            };
        }
        if q.len() < threshold {
            self.harvest(&q, src);
        }
        if q.len() >= threshold {
            // Concurrent dequeuers are refused while we own the EVD, but one that started
            // before may still take an event: then the pop finds less, and we go on waiting.
            if let Some(ev) = q.pop() {
                return Some((ev, q.len()));
            }
        }
        None
    }

    /// For a source that notifies for some events only ([`Harvest::notices`] is `before`):
    /// harvests, then tells whether the queue holds an event to return — a notification
    /// event was queued since a waiter last found the queue empty (or the queue is full, and
    /// the source cannot queue the one that may be waiting).
    fn notice_pending(&self, q: &EventQueue<T>, src: &mut dyn Harvest<T>, before: u64) -> bool {
        // `before` was read first: a notification event queued after this emptiness check
        // counts beyond it, and stays owed.
        if q.is_empty() {
            self.notices_seen.store(before, Ordering::Relaxed);
        }
        self.harvest(q, src);
        let seen = self.notices_seen.load(Ordering::Relaxed);
        let noticed = src.notices().is_none_or(|now| now != seen);
        let len = q.len();
        len > 0 && (noticed || len >= q.capacity())
    }

    /// For a CNO holding `src` while no waiter owns the EVD: whether a notification event
    /// is queued, harvesting `src` to find out if it notifies for some events only (any
    /// queued event is one otherwise).
    pub fn notification_pending(&self, src: &mut dyn Harvest<T>) -> bool {
        let q = self.q();
        match src.notices() {
            Some(before) => self.notice_pending(&q, src, before),
            None => !q.is_empty(),
        }
    }

    /// [`EvdCore::notification_pending`] for a CNO that arms `src` right after: harvests
    /// what fits into the queue in any case, so the arm fires only for completions that
    /// come later (an arm fires at once for completions already in the CQ).
    pub fn harvest_for_notification(&self, src: &mut dyn Harvest<T>) -> bool {
        let q = self.q();
        match src.notices() {
            Some(before) => self.notice_pending(&q, src, before),
            None => {
                self.harvest(&q, src);
                !q.is_empty()
            }
        }
    }

    /// `dat_evd_wait(timeout_us, threshold)`: see the module docs. On success, the
    /// dequeued event and `nmore`, the events still queued.
    pub fn wait<H: Harvest<T>>(
        &self,
        src: &mut H,
        threshold: u32,
        timeout_us: u32,
    ) -> Result<(T, usize), WaitError> {
        let qlen = self.qlen();
        let th = threshold as usize;
        if th == 0 || th > qlen {
            return Err(WaitError::InvalidThreshold { threshold, qlen });
        }
        let _owner = self.own()?;
        // Again, owned: a resize (refused from now on) may have shrunk the queue between the
        // first check and taking ownership, leaving a threshold that could never be met.
        let qlen = self.qlen();
        if th > qlen {
            return Err(WaitError::InvalidThreshold { threshold, qlen });
        }
        let deadline = (timeout_us != DAT_TIMEOUT_INFINITE)
            .then(|| Instant::now() + Duration::from_micros(u64::from(timeout_us)));
        let expired = || deadline.is_some_and(|d| Instant::now() >= d);

        for round in 0..self.spin.max(1) {
            self.check_flags()?;
            if let Some(r) = self.take(src, th) {
                return Ok(r);
            }
            if expired() {
                return Err(WaitError::Timeout { nmore: self.len() });
            }
            if round + 1 < self.spin {
                crate::sync::spin_wait(round.min(4));
            }
        }
        loop {
            src.arm();
            let ticket = self.notifier.announce();
            self.check_flags()?;
            if let Some(r) = self.take(src, th) {
                return Ok(r);
            }
            match ticket.sleep(src.fds(), deadline)? {
                Woken::Timeout => {
                    drop(ticket);
                    return match self.take(src, th) {
                        Some(r) => Ok(r),
                        None => Err(WaitError::Timeout { nmore: self.len() }),
                    };
                }
                Woken::Kicked(_) => self.check_flags()?,
                Woken::Ready(ready) => {
                    for i in ready.fds() {
                        src.acknowledge(i).map_err(WaitError::Internal)?;
                    }
                }
            }
            // A source that keeps waking the waiter with nothing to take (a channel that
            // fires for completions the queue cannot hold) must not keep it past its
            // timeout: sleep only reports a timeout when nothing is ready.
            if expired() {
                return match self.take(src, th) {
                    Some(r) => Ok(r),
                    None => Err(WaitError::Timeout { nmore: self.len() }),
                };
            }
        }
    }

    /// `dat_evd_dequeue`: the oldest queued event, harvesting the source if the queue is
    /// empty. Several threads may dequeue at once (each event once); while a waiter owns
    /// the EVD it fails with [`WaitError::Busy`].
    pub fn dequeue<H: Harvest<T>>(&self, src: &mut H) -> Result<T, WaitError> {
        self.dequeue_with(
            |backlog| {
                // The first harvested event is the caller's, straight from the source (the
                // rest queue behind it), instead of a push and a pop through the queue.
                let mut first = None;
                src.harvest(backlog.room(), &mut |ev| {
                    if first.is_none() {
                        first = Some(ev);
                    } else {
                        backlog.push(ev);
                    }
                });
                first.map_or(Harvested::Nothing, Harvested::One)
            },
            |ev| ev,
            |e| e,
        )
    }

    /// [`EvdCore::dequeue`] with the source's part given as closures, so a caller that
    /// knows its source has it inlined: the oldest queued event or, when none is queued,
    /// what `source` finds: one completion, as an `R` that `into_event` makes the event of
    /// once the queue is let go (so a small `R` can stay in registers until the event is
    /// built where the caller wants it); or events it queued in the [`Backlog`], of which
    /// the dequeue takes the oldest. Errors are the caller's, made by `fail` (so the result
    /// is built once, in the caller's type).
    #[inline(always)]
    pub fn dequeue_with<R, E>(
        &self,
        source: impl FnOnce(Backlog<'_, T>) -> Harvested<R>,
        into_event: impl FnOnce(R) -> T,
        fail: impl Fn(WaitError) -> E,
    ) -> Result<T, E> {
        let q = self.q();
        self.dequeue_from(&q, source, into_event, fail)
    }

    /// [`EvdCore::dequeue_with`] on `queue`, which must be the queue this core holds now
    /// ([`EvdCore::current_queue`]) and stay so for the call: the caller excludes
    /// [`EvdCore::resize`] by other means than the queue's lock (a DTO EVD's CQ source
    /// lock, which its resize holds too), and spares the dequeue that lock. (Otherwise
    /// nothing unsafe happens, but events would go to, or be looked for in, a queue the
    /// EVD no longer has.)
    #[inline(always)]
    pub fn dequeue_from<R, E>(
        &self,
        queue: &EventQueue<T>,
        source: impl FnOnce(Backlog<'_, T>) -> Harvested<R>,
        into_event: impl FnOnce(R) -> T,
        fail: impl Fn(WaitError) -> E,
    ) -> Result<T, E> {
        if self.has_waiter() {
            return Err(fail(WaitError::Busy));
        }
        if !queue.looks_empty()
            && let Some(ev) = queue.pop()
        {
            return Ok(ev);
        }
        match source(Backlog { queue, overflows: &self.overflows }) {
            Harvested::One(made) => Ok(into_event(made)),
            Harvested::Queued => self.pop_queued(queue).map_err(fail),
            Harvested::Nothing => Err(fail(WaitError::Empty)),
        }
    }

    /// The oldest queued event, after a harvest queued some.
    #[cold]
    #[inline(never)]
    fn pop_queued(&self, q: &EventQueue<T>) -> Result<T, WaitError> {
        q.pop().ok_or(WaitError::Empty)
    }

    /// `dat_evd_resize`: a queue of `qlen` events with the queued ones moved over in order.
    /// Refused with [`WaitError::Busy`] while a waiter owns the EVD, with
    /// [`WaitError::TooSmall`] if more than `qlen` events are queued.
    pub fn resize(&self, qlen: NonZeroUsize) -> Result<(), WaitError> {
        self.resize_with(qlen, || Ok::<(), std::convert::Infallible>(())).map(|_| ())
    }

    /// [`EvdCore::resize`], running `also` (the CQ's resize of a DTO EVD) once the resize is
    /// sure to be allowed: owned, and the queued events fit. If `also` fails, the queue
    /// stays as it was and its error is returned inside `Ok`.
    pub fn resize_with<E>(
        &self,
        qlen: NonZeroUsize,
        also: impl FnOnce() -> Result<(), E>,
    ) -> Result<Result<(), E>, WaitError> {
        let _owner = self.own_for_resize()?;
        let mut guard = self.queue.write().unwrap_or_else(|e| e.into_inner());
        let queued = guard.len();
        if queued > qlen.get() {
            return Err(WaitError::TooSmall { queued });
        }
        if let Err(e) = also() {
            return Ok(Err(e));
        }
        let new = EventQueue::new(qlen);
        while let Some(ev) = guard.pop() {
            if new.push(ev).is_err() {
                unreachable!("{queued} events fit into a queue of {qlen}");
            }
        }
        *guard = Arc::new(new);
        Ok(Ok(()))
    }

    /// OWNED for a resize: like a waiter's, but allowed on an unwaitable EVD.
    fn own_for_resize(&self) -> Result<Owner<'_>, WaitError> {
        let mut f = self.flags.load(Ordering::Relaxed);
        loop {
            if f & ENDED != 0 {
                return Err(WaitError::Aborted);
            }
            if f & OWNED != 0 {
                return Err(WaitError::Busy);
            }
            match self.flags.compare_exchange(f, f | OWNED, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Ok(Owner(&self.flags)),
                Err(cur) => f = cur,
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::sync::{Arc, Mutex};
    use std::thread;

    /// Long enough never to matter when things work; turns a hang into a failure.
    const HANG: u32 = 30_000_000;

    fn core<T>(qlen: usize) -> Arc<EvdCore<T>> {
        Arc::new(EvdCore::new(NonZeroUsize::new(qlen).unwrap()).unwrap())
    }

    /// Waits (bounded) until `cond` holds.
    fn eventually(what: &str, cond: impl Fn() -> bool) {
        let end = Instant::now() + Duration::from_secs(30);
        while !cond() {
            assert!(Instant::now() < end, "gave up waiting for: {what}");
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// A CQ and its completion channel, in software: completions wait in a deque; while
    /// armed, the next one writes a byte to the channel pipe and disarms.
    struct FakeCq {
        shared: Arc<Mutex<CqState>>,
        fds: [RawFd; 1],
        rx: OwnedFd,
    }

    struct CqState {
        cqes: VecDeque<u32>,
        armed: bool,
        arms: usize,
        tx: OwnedFd,
        /// Armed for solicited completions only: those of [`SOLICITED`] and up.
        solicited_only: bool,
    }

    /// In a solicited-only [`FakeCq`], completions from this value up are solicited.
    const SOLICITED: u32 = 100;

    impl CqState {
        fn complete(&mut self, v: u32) {
            self.cqes.push_back(v);
            if (!self.solicited_only || v >= SOLICITED) && std::mem::take(&mut self.armed) {
                use std::io::Write;
                std::fs::File::from(self.tx.try_clone().unwrap()).write_all(b"e").unwrap();
            }
        }
    }

    impl FakeCq {
        fn new() -> (FakeCq, Arc<Mutex<CqState>>) {
            let (rx, tx) = crate::evd::test_pipe();
            // acknowledge must not block
            assert!(set_nonblock(&rx));
            let shared = Arc::new(Mutex::new(CqState {
                cqes: VecDeque::new(),
                armed: false,
                arms: 0,
                tx,
                solicited_only: false,
            }));
            let fds = [rx.as_raw_fd()];
            (FakeCq { shared: shared.clone(), fds, rx }, shared)
        }
    }

    /// O_NONBLOCK on a pipe end via fcntl.
    fn set_nonblock(fd: &OwnedFd) -> bool {
        // SAFETY: fcntl on an fd we own, no pointers.
        let fl = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        // SAFETY: as above.
        fl >= 0 && unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK) } == 0
    }

    impl Harvest<u32> for FakeCq {
        fn harvest(&mut self, max: usize, sink: &mut dyn FnMut(u32)) -> usize {
            let mut s = self.shared.lock().unwrap();
            let n = max.min(s.cqes.len());
            for v in s.cqes.drain(..n) {
                sink(v);
            }
            n
        }
        fn arm(&mut self) {
            let mut s = self.shared.lock().unwrap();
            s.armed = true;
            s.arms += 1;
        }
        fn fds(&self) -> &[RawFd] {
            &self.fds
        }
        fn acknowledge(&mut self, index: usize) -> Result<(), SourceError> {
            assert_eq!(index, 0);
            use std::io::Read;
            let mut buf = [0u8; 64];
            match std::fs::File::from(self.rx.try_clone()?).read(&mut buf) {
                Ok(_) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                Err(e) => Err(e.into()),
            }
        }
    }

    #[test]
    fn threshold_outside_one_to_qlen_is_invalid() {
        let c = core::<u32>(4);
        for th in [0, 5, u32::MAX] {
            match c.wait(&mut NoSource, th, 0) {
                Err(WaitError::InvalidThreshold { threshold, qlen: 4 }) => {
                    assert_eq!(threshold, th)
                }
                r => panic!("threshold {th}: {r:?}"),
            }
        }
        // threshold == qlen is legal, and met by a full queue
        for v in 0..4 {
            c.post(v).unwrap();
        }
        assert_eq!(c.post(9), Err(9), "qlen + 1st post");
        assert_eq!(c.wait(&mut NoSource, 4, 0).unwrap(), (0, 3));
    }

    #[test]
    fn threshold_is_exact_with_events_arriving_over_time() {
        for spin in [0, EvdCore::<u32>::DEFAULT_SPIN] {
            let c = Arc::new(EvdCore::new(NonZeroUsize::new(8).unwrap()).unwrap().with_spin(spin));
            let c2 = c.clone();
            let producer = thread::spawn(move || {
                for v in 0..5 {
                    thread::sleep(Duration::from_millis(2));
                    c2.post(v).unwrap();
                }
            });
            // Exactly five events are ever posted, so returning before the fifth would
            // give nmore < 4.
            let (ev, nmore) = c.wait(&mut NoSource, 5, HANG).unwrap();
            assert_eq!((ev, nmore), (0, 4), "spin {spin}");
            producer.join().unwrap();
            assert_eq!(c.len(), 4);
        }
    }

    #[test]
    fn threshold_is_exact_with_completions_through_an_armed_cq() {
        let c = Arc::new(EvdCore::new(NonZeroUsize::new(8).unwrap()).unwrap().with_spin(0));
        let (mut cq, shared) = FakeCq::new();
        let feeder = thread::spawn(move || {
            // Each completion only after the waiter armed the CQ once more: the wait must
            // go through arm, sleep on the channel fd, acknowledge, re-arm, three times.
            for v in 0..3 {
                eventually("the waiter armed the CQ", || shared.lock().unwrap().arms > v);
                shared.lock().unwrap().complete(v as u32);
            }
        });
        assert_eq!(c.wait(&mut cq, 3, HANG).unwrap(), (0, 2));
        feeder.join().unwrap();
        assert_eq!(c.dequeue(&mut cq).unwrap(), 1);
        assert_eq!(c.dequeue(&mut cq).unwrap(), 2);
        assert!(matches!(c.dequeue(&mut cq), Err(WaitError::Empty)));
    }

    /// A [`FakeCq`] armed solicited-only, whose harvests count the solicited completions
    /// they queue as notification events, and whose EVD counts its posts too.
    struct SolicitedCq {
        cq: FakeCq,
        noticed: Arc<AtomicU64>,
    }

    impl SolicitedCq {
        fn new() -> (SolicitedCq, Arc<Mutex<CqState>>, Arc<AtomicU64>) {
            let (cq, shared) = FakeCq::new();
            shared.lock().unwrap().solicited_only = true;
            let noticed = Arc::new(AtomicU64::new(0));
            (SolicitedCq { cq, noticed: noticed.clone() }, shared, noticed)
        }
    }

    impl Harvest<u32> for SolicitedCq {
        fn harvest(&mut self, max: usize, sink: &mut dyn FnMut(u32)) -> usize {
            let mut solicited = 0;
            let n = self.cq.harvest(max, &mut |v| {
                solicited += u64::from(v >= SOLICITED);
                sink(v);
            });
            self.noticed.fetch_add(solicited, Ordering::Release);
            n
        }
        fn arm(&mut self) {
            self.cq.arm();
        }
        fn fds(&self) -> &[RawFd] {
            self.cq.fds()
        }
        fn acknowledge(&mut self, index: usize) -> Result<(), SourceError> {
            self.cq.acknowledge(index)
        }
        fn notices(&self) -> Option<u64> {
            Some(self.noticed.load(Ordering::Acquire))
        }
    }

    #[test]
    fn a_solicited_only_source_ends_a_wait_only_for_a_notification_event() {
        let c = Arc::new(EvdCore::new(NonZeroUsize::new(4).unwrap()).unwrap().with_spin(0));
        let (mut cq, shared, noticed) = SolicitedCq::new();
        // Unsolicited completions, one before the wait and one while it sleeps: it times
        // out, and they are queued, not lost.
        shared.lock().unwrap().complete(1);
        let feeder = thread::spawn({
            let shared = shared.clone();
            move || {
                eventually("the waiter armed the CQ", || shared.lock().unwrap().arms > 0);
                shared.lock().unwrap().complete(2);
            }
        });
        // A timeout long enough for the feeder to run first on a loaded machine.
        match c.wait(&mut cq, 1, 1_000_000) {
            Err(WaitError::Timeout { nmore: 2 }) => {}
            r => panic!("{r:?}"),
        }
        feeder.join().unwrap();
        assert_eq!(c.dequeue(&mut cq).unwrap(), 1, "the unsolicited events can be dequeued");
        // A waiter sleeps through another unsolicited one; a solicited one wakes it, and it
        // returns the oldest event.
        let waiter = thread::spawn({
            let c = c.clone();
            move || c.wait(&mut cq, 1, HANG).map(|r| (r, cq))
        });
        eventually("the waiter sleeps", || c.notifier().sleepers() == 1);
        shared.lock().unwrap().complete(3);
        thread::sleep(Duration::from_millis(30));
        assert!(!waiter.is_finished(), "an unsolicited completion woke the waiter");
        shared.lock().unwrap().complete(SOLICITED);
        let ((ev, nmore), mut cq) = waiter.join().unwrap().unwrap();
        assert_eq!((ev, nmore), (2, 2));
        // The waits that follow return the rest, then find the EVD empty and time out.
        assert_eq!(c.wait(&mut cq, 1, 0).unwrap(), (3, 1));
        assert_eq!(c.wait(&mut cq, 1, 0).unwrap(), (SOLICITED, 0));
        shared.lock().unwrap().complete(4);
        assert!(matches!(c.wait(&mut cq, 1, 0), Err(WaitError::Timeout { nmore: 1 })));
        // A post counted as a notification event ends the wait, behind what was queued.
        c.post_then(50, || {
            noticed.fetch_add(1, Ordering::Release);
        })
        .unwrap();
        assert_eq!(c.wait(&mut cq, 1, 0).unwrap(), (4, 1));
        assert_eq!(c.wait(&mut cq, 1, 0).unwrap(), (50, 0));
        // Three unsolicited events leave room and time out; a fourth fills the queue, and
        // the wait returns rather than sleep on a CQ it could not take a solicited one from.
        for v in 5..8 {
            shared.lock().unwrap().complete(v);
        }
        assert!(matches!(c.wait(&mut cq, 1, 0), Err(WaitError::Timeout { nmore: 3 })));
        shared.lock().unwrap().complete(8);
        assert_eq!(c.wait(&mut cq, 1, 0).unwrap(), (5, 3), "full: the oldest comes back");
    }

    #[test]
    fn posts_and_completions_mix_in_one_wait() {
        let c = core::<u32>(8);
        let (mut cq, shared) = FakeCq::new();
        let c2 = c.clone();
        let feeder = thread::spawn(move || {
            thread::sleep(Duration::from_millis(2));
            c2.post(100).unwrap();
            thread::sleep(Duration::from_millis(2));
            shared.lock().unwrap().complete(200);
        });
        let (ev, nmore) = c.wait(&mut cq, 2, HANG).unwrap();
        assert_eq!((ev, nmore), (100, 1));
        feeder.join().unwrap();
    }

    #[test]
    fn harvest_takes_no_more_than_the_free_room() {
        let c = core::<u32>(4);
        let (mut cq, shared) = FakeCq::new();
        {
            let mut s = shared.lock().unwrap();
            for v in 0..10 {
                s.complete(v);
            }
        }
        c.post(50).unwrap();
        assert_eq!(c.wait(&mut cq, 4, 0).unwrap(), (50, 3));
        assert_eq!(shared.lock().unwrap().cqes.len(), 7, "3 harvested into the room left");
        assert_eq!(c.overflows(), 0);
        assert_eq!(c.take_unreported_overflows(), 0);
    }

    /// A source whose harvest first lets other producers fill the queue (it posts into the
    /// core itself, as the CM thread or `post_se` could at that moment), then hands over
    /// its completions: the race in which a harvest finds less room than it was given.
    struct PostsWhileHarvesting {
        core: Arc<EvdCore<u32>>,
        posts: Vec<u32>,
        completions: VecDeque<u32>,
    }

    impl Harvest<u32> for PostsWhileHarvesting {
        fn harvest(&mut self, max: usize, sink: &mut dyn FnMut(u32)) -> usize {
            for v in self.posts.drain(..) {
                self.core.post(v).expect("the queue had room for the other producers' posts");
            }
            let n = max.min(self.completions.len());
            for v in self.completions.drain(..n) {
                sink(v);
            }
            n
        }
        fn arm(&mut self) {}
        fn fds(&self) -> &[RawFd] {
            &[]
        }
        fn acknowledge(&mut self, _index: usize) -> Result<(), SourceError> {
            Ok(())
        }
    }

    #[test]
    fn a_wait_whose_harvest_finds_the_queue_filled_counts_each_lost_event_once() {
        let c = core::<u32>(2);
        let mut src = PostsWhileHarvesting {
            core: c.clone(),
            posts: vec![1, 2],
            completions: VecDeque::from([10, 11, 12]),
        };
        // Room 2 when the harvest starts: two completions taken, both lost to the posts.
        assert_eq!(c.wait(&mut src, 1, 0).unwrap(), (1, 1));
        assert_eq!(src.completions, [12], "the completion beyond the room stays in the CQ");
        assert_eq!(c.overflows(), 2);
        assert_eq!(c.take_unreported_overflows(), 2);
        assert_eq!(c.take_unreported_overflows(), 0, "each drop is handed out once");
        assert_eq!(c.overflows(), 2, "the count is kept after the report");
        assert_eq!(c.dequeue(&mut NoSource).unwrap(), 2);
    }

    #[test]
    fn a_dequeue_whose_harvest_finds_the_queue_filled_counts_the_lost_events() {
        let c = core::<u32>(2);
        let mut src = PostsWhileHarvesting {
            core: c.clone(),
            posts: vec![1, 2],
            completions: VecDeque::from([10, 11, 12]),
        };
        // The first completion is the dequeue's own; the second finds the queue full.
        assert_eq!(c.dequeue(&mut src).unwrap(), 10);
        assert_eq!((c.overflows(), c.take_unreported_overflows()), (1, 1));
        assert_eq!(c.take_unreported_overflows(), 0);
        assert_eq!(c.dequeue(&mut NoSource).unwrap(), 1);
        assert_eq!(c.dequeue(&mut NoSource).unwrap(), 2);
    }

    #[test]
    fn timeout_dequeues_nothing_and_reports_nmore() {
        let c = core::<u32>(4);
        c.post(1).unwrap();
        c.post(2).unwrap();
        for timeout in [0, 1, 2_000] {
            match c.wait(&mut NoSource, 3, timeout) {
                Err(WaitError::Timeout { nmore: 2 }) => {}
                r => panic!("timeout {timeout}: {r:?}"),
            }
            assert_eq!(c.len(), 2);
        }
        assert!(!c.has_waiter(), "ownership ends with the wait");
        assert_eq!(c.wait(&mut NoSource, 2, 0).unwrap(), (1, 1));
    }

    #[test]
    fn a_second_waiter_and_dequeuers_are_refused_while_one_waits() {
        let c = core::<u32>(4);
        let c2 = c.clone();
        let first = thread::spawn(move || c2.wait(&mut NoSource, 1, HANG));
        eventually("the first waiter owns the EVD", || c.has_waiter());
        assert!(matches!(c.wait(&mut NoSource, 1, 0), Err(WaitError::Busy)));
        assert!(matches!(c.wait(&mut NoSource, 1, HANG), Err(WaitError::Busy)));
        assert!(matches!(c.dequeue(&mut NoSource), Err(WaitError::Busy)));
        assert!(matches!(c.resize(NonZeroUsize::new(8).unwrap()), Err(WaitError::Busy)));
        c.post(7).unwrap();
        assert_eq!(first.join().unwrap().unwrap(), (7, 0));
        assert!(!c.has_waiter());
    }

    #[test]
    fn unwaitable_wakes_the_sleeper_and_refuses_new_waits() {
        let c = core::<u32>(4);
        let c2 = c.clone();
        let sleeper = thread::spawn(move || c2.wait(&mut NoSource, 2, HANG));
        eventually("the waiter announced itself", || c.notifier().sleepers() == 1);
        c.post(1).unwrap(); // below the threshold: it sleeps on
        c.set_unwaitable();
        assert!(matches!(sleeper.join().unwrap(), Err(WaitError::Unwaitable)));
        assert!(!c.is_waitable());
        assert!(matches!(c.wait(&mut NoSource, 1, 0), Err(WaitError::Unwaitable)));
        // events still arrive and can be dequeued
        c.post(2).unwrap();
        assert_eq!(c.dequeue(&mut NoSource).unwrap(), 1);
        c.set_waitable();
        assert_eq!(c.wait(&mut NoSource, 1, 0).unwrap(), (2, 0));
    }

    #[test]
    fn unwaitable_wakes_a_sleeper_on_a_cq_too() {
        let c = core::<u32>(4);
        let c2 = c.clone();
        let sleeper = thread::spawn(move || {
            let (mut cq, _shared) = FakeCq::new();
            c2.wait(&mut cq, 1, HANG)
        });
        eventually("the waiter announced itself", || c.notifier().sleepers() == 1);
        c.set_unwaitable();
        assert!(matches!(sleeper.join().unwrap(), Err(WaitError::Unwaitable)));
    }

    #[test]
    fn abort_wakes_the_sleeper_with_aborted() {
        let c = core::<u32>(4);
        let c2 = c.clone();
        let sleeper = thread::spawn(move || c2.wait(&mut NoSource, 1, HANG));
        eventually("the waiter announced itself", || c.notifier().sleepers() == 1);
        c.abort();
        assert!(matches!(sleeper.join().unwrap(), Err(WaitError::Aborted)));
        assert!(matches!(c.wait(&mut NoSource, 1, 0), Err(WaitError::Aborted)));
    }

    #[test]
    fn unwaitable_set_before_the_wait_starts_sleeping_is_not_missed() {
        // set_unwaitable racing with a waiter entering: whichever wins, the wait fails.
        for _ in 0..200 {
            let c = core::<u32>(2);
            let c2 = c.clone();
            let w = thread::spawn(move || c2.wait(&mut NoSource, 1, HANG));
            c.set_unwaitable();
            assert!(matches!(w.join().unwrap(), Err(WaitError::Unwaitable)));
        }
    }

    #[test]
    fn resize_keeps_order_and_refuses_to_drop_events() {
        let c = core::<u32>(3);
        for v in 0..3 {
            c.post(v).unwrap();
        }
        assert!(matches!(
            c.resize(NonZeroUsize::new(2).unwrap()),
            Err(WaitError::TooSmall { queued: 3 })
        ));
        c.resize(NonZeroUsize::new(5).unwrap()).unwrap();
        assert_eq!(c.qlen(), 5);
        c.post(3).unwrap();
        c.post(4).unwrap();
        assert_eq!(c.post(5), Err(5));
        assert_eq!(c.wait(&mut NoSource, 5, 0).unwrap(), (0, 4));
        c.resize(NonZeroUsize::new(4).unwrap()).unwrap();
        for v in 1..5 {
            assert_eq!(c.dequeue(&mut NoSource).unwrap(), v);
        }
        assert!(matches!(c.wait(&mut NoSource, 5, 0), Err(WaitError::InvalidThreshold { .. })));
    }

    /// Producers post from several threads while several dequeuers drain: every event is
    /// seen once, and each dequeuer sees each producer's events in order.
    #[test]
    fn concurrent_posts_and_dequeues_see_every_event_once() {
        const PRODUCERS: u32 = 3;
        const PER: u32 = 5_000;
        let c = core::<u32>(5);
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let c = c.clone();
                thread::spawn(move || {
                    for n in 0..PER {
                        let mut v = p << 24 | n;
                        while let Err(back) = c.post(v) {
                            v = back;
                            thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let total = (PRODUCERS * PER) as usize;
        let taken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                let (c, taken) = (c.clone(), taken.clone());
                thread::spawn(move || {
                    let mut seen = Vec::new();
                    let mut last = [None::<u32>; PRODUCERS as usize];
                    let end = Instant::now() + Duration::from_secs(60);
                    while taken.load(std::sync::atomic::Ordering::Relaxed) < total {
                        assert!(Instant::now() < end, "events went missing");
                        match c.dequeue(&mut NoSource) {
                            Ok(v) => {
                                let (p, n) = ((v >> 24) as usize, v & 0xff_ffff);
                                assert!(last[p].is_none_or(|l| l < n));
                                last[p] = Some(n);
                                seen.push(v);
                                taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Err(WaitError::Empty) => thread::yield_now(),
                            Err(e) => panic!("{e}"),
                        }
                    }
                    seen
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        let mut all: Vec<u32> = consumers.into_iter().flat_map(|h| h.join().unwrap()).collect();
        assert_eq!(all.len(), total);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), total, "an event was seen twice");
        assert!(c.is_empty());
    }
}
