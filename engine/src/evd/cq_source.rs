//! The DTO side of an EVD: its CQ, the completion channel the CQ reports to, and the
//! endpoints whose completions arrive there. Harvesting turns work completions into DTO
//! events through each endpoint's cookie rings ([`crate::dto`]).

use super::early_completions::{Admitted, Delivered, EarlyCompletions};
use super::notification::{Feeds, Notices, Stream};
use super::queue::EventQueue;
use super::waiter::{Backlog, Harvest, Harvested, SourceError};
use crate::dto::{Cookie, CookieRing, DtoCompletion};
use crate::event::{Event, ObjectId};
use ferrodat_abi::dat::{dto_status, dtos};
use ferrodat_driver::completion::{WcOpcode, WorkCompletion};
use ferrodat_driver::{CompChannel, Cq};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// What the CQ needs to know of an endpoint using it.
#[derive(Debug)]
pub struct EpCompletions {
    /// The endpoint, for its events.
    pub ep: ObjectId,
    /// Cookies of its requests (send, RDMA, atomics).
    pub requests: CookieRing,
    /// Cookies of its receives; None for an endpoint that receives from an SRQ, whose
    /// receive's wr_id is the consumer's cookie itself (SRQ receives complete in any order,
    /// and a receive's event needs nothing else: its length is what arrived).
    pub receives: Option<CookieRing>,
    /// Receives that complete before the passive side's ESTABLISHED is reported wait here.
    pub early: EarlyCompletions,
    /// The endpoint, told when one of its DTOs fails (set once the endpoint exists).
    pub owner: OnceLock<Arc<dyn DtoFailures>>,
    /// The endpoint has a DTO stream without an EVD, whose completions only it takes in:
    /// it is told of this EVD's flushes of its DTOs too ([`DtoFailures::flushed`]). Set at
    /// create and by each successful `dat_ep_modify`.
    pub silent_streams: AtomicBool,
}

/// An endpoint learns that a DTO of its failed — an error other than a flush, e.g. a
/// remote access error or retries exhausted. The QP is in ERR by then; DAT ends the
/// connection (abrupt disconnect to the peer, BROKEN on the connect EVD), as OFA dapl does.
pub trait DtoFailures: Send + Sync + std::fmt::Debug {
    /// Called after the failed completion's event was queued, with no EVD lock held.
    fn dto_failed(&self);

    /// A DTO of an endpoint with [`EpCompletions::silent_streams`] was flushed here: its QP
    /// is in ERR, maybe for a DTO of the stream without an EVD that failed, which the
    /// endpoint then learns of (called as [`DtoFailures::dto_failed`] is).
    fn flushed(&self);
}

/// Why an endpoint is told after a harvest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Told {
    /// One of its DTOs failed ([`DtoFailures::dto_failed`]).
    Failed,
    /// One was flushed, and it has a stream without an EVD ([`DtoFailures::flushed`]).
    Flushed,
}

/// Endpoints with a failed DTO harvested, waiting to be told once the harvest's locks are
/// released (telling them takes the endpoint's locks, which must never be taken inside
/// the CQ's: `dat_ep_reset` takes them in the other order).
#[derive(Debug, Default)]
pub struct Failures {
    pending: AtomicBool,
    eps: Mutex<Vec<(Arc<EpCompletions>, Told)>>,
}

impl Failures {
    fn push_told(&self, ep: Arc<EpCompletions>, why: Told) {
        let mut eps = lock(&self.eps);
        // A flushed queue gives many completions of one endpoint in a row: told once.
        if !matches!(eps.last(), Some((last, w)) if *w == why && Arc::ptr_eq(last, &ep)) {
            eps.push((ep, why));
        }
        self.pending.store(true, Ordering::Release);
    }

    /// `ep`'s DTO completed with an error (`failed`: other than a flush): listed to be told
    /// if it failed, or if it was flushed and the endpoint has a stream without an EVD.
    #[cold]
    #[inline(never)]
    fn note_error(&self, ep: &Arc<EpCompletions>, failed: bool) {
        if failed {
            self.push_told(ep.clone(), Told::Failed);
        } else if ep.silent_streams.load(Ordering::Relaxed) {
            self.push_told(ep.clone(), Told::Flushed);
        }
    }

    /// Tells every endpoint listed (call with no EVD lock held). One load when none.
    #[inline]
    pub fn tell(&self) {
        if self.pending.load(Ordering::Acquire) {
            self.tell_all();
        }
    }

    #[cold]
    fn tell_all(&self) {
        let eps = {
            let mut eps = lock(&self.eps);
            self.pending.store(false, Ordering::Release);
            std::mem::take(&mut *eps)
        };
        for (ep, why) in eps {
            if let Some(owner) = ep.owner.get() {
                match why {
                    Told::Failed => owner.dto_failed(),
                    Told::Flushed => owner.flushed(),
                }
            }
        }
    }
}

/// Endpoints whose parked receives were released (their connection's outcome reported)
/// and wait for the next harvest of this CQ. Pushed by the CM thread without the source's
/// lock (a waiter may sleep holding it).
#[derive(Debug, Default)]
pub struct Released {
    pending: AtomicBool,
    eps: Mutex<Vec<Arc<EpCompletions>>>,
}

impl Released {
    /// `ep`'s parked receives may go out now.
    pub fn push(&self, ep: Arc<EpCompletions>) {
        lock(&self.eps).push(ep);
        self.pending.store(true, Ordering::Release);
    }

    /// Whether any endpoint waits (one load on the harvest path).
    #[inline]
    pub fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Delivers up to `room` released receives; the endpoints not done stay listed.
    fn deliver(&self, room: usize, sink: &mut dyn FnMut(Event)) -> Delivered {
        let mut eps = lock(&self.eps);
        let mut made = Delivered::default();
        eps.retain(|ep| {
            let (d, more) = ep.early.deliver_released(room - made.events, sink);
            made.events += d.events;
            made.notices += d.notices;
            more
        });
        if eps.is_empty() {
            self.pending.store(false, Ordering::Release);
        }
        made
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A DTO EVD's CQ and channel.
#[derive(Debug)]
pub struct CqSource {
    cq: Cq,
    channel: CompChannel,
    fds: [RawFd; 1],
    eps: HashMap<u32, Arc<EpCompletions>, BuildHasherDefault<QpnHasher>>,
    /// Where polls land (kept between harvests: set up once, not per poll).
    wcs: [WorkCompletion; 16],
    /// The endpoint of the last completion (most come from the same QP in a row).
    last: Option<(u32, Arc<EpCompletions>)>,
    /// The streams feeding the CQ, which decide how its EVD notifies.
    feeds: Feeds,
    /// The EVD's notification mode and count ([`super::notification`]).
    notices: Arc<Notices>,
    /// Solicited-only (as `notices` says; kept here for the harvest and the arm): arm for
    /// solicited completions only, and count the notification events harvested.
    solicited_only: bool,
    /// Connection events that must follow the completions already in the CQ (DAT: on a
    /// shared EVD, successful in-progress DTO completions precede DISCONNECTED). Pushed by
    /// the CM thread without the source's lock; moved to the EVD's queue by a harvest,
    /// after it drained the CQ.
    deferred: Arc<EventQueue<Event>>,
    /// Passive endpoints whose early receives may follow their ESTABLISHED now.
    released: Arc<Released>,
    /// Endpoints with a failed DTO in this harvest, for the EVD to tell afterwards.
    failures: Arc<Failures>,
}

impl CqSource {
    /// A source over `cq`, which reports to `channel`.
    /// The EVD's resize replaced its deferred-event queue (under this source's lock).
    pub fn replace_deferred(&mut self, deferred: Arc<EventQueue<Event>>) {
        self.deferred = deferred;
    }

    pub fn new(
        cq: Cq,
        channel: CompChannel,
        deferred: Arc<EventQueue<Event>>,
        released: Arc<Released>,
        failures: Arc<Failures>,
        notices: Arc<Notices>,
    ) -> CqSource {
        let fds = [channel.as_raw_fd()];
        CqSource {
            cq,
            channel,
            fds,
            eps: HashMap::default(),
            wcs: [WorkCompletion::default(); 16],
            last: None,
            feeds: Feeds::default(),
            notices,
            solicited_only: false,
            deferred,
            released,
            failures,
        }
    }

    /// The CQ (for creating the QPs that complete into it).
    pub fn cq(&self) -> &Cq {
        &self.cq
    }

    /// The completion channel the CQ reports to (a CNO keeps a clone, so its fd stays open,
    /// while it sleeps on it).
    pub fn channel(&self) -> &CompChannel {
        &self.channel
    }

    /// RESIZE_CQ to at least `cqe` entries (waiting completions are kept).
    pub fn resize_cq(&mut self, cqe: u32) -> Result<u32, ferrodat_driver::Error> {
        self.cq.resize(cqe)
    }

    /// A completion waits in the CQ (nothing is consumed).
    pub fn has_completion(&self) -> bool {
        self.cq.has_completion()
    }

    /// Completions of QP `qpn` belong to this endpoint from now on: its `stream` (the
    /// endpoint's requests and receives may both complete here, each attached once).
    pub fn attach(&mut self, qpn: u32, ep: Arc<EpCompletions>, stream: Stream) {
        self.last = None;
        self.eps.insert(qpn, ep);
        let mode = self.feeds.add(qpn, stream, &self.notices);
        self.set_mode(mode);
    }

    /// The receives of QP `qpn`, if they complete here, now wake a waiter only when
    /// solicited (`dat_ep_modify` of `recv_completion_flags`), or no longer.
    pub fn set_solicited_wait(&mut self, qpn: u32, solicited_wait: bool) {
        let mode = self.feeds.update_receives(qpn, solicited_wait, &self.notices);
        self.set_mode(mode);
    }

    /// The requests of QP `qpn`, if they complete here, are UNSIGNALLED from now on
    /// (`dat_ep_modify` of `request_completion_flags`), or no longer.
    pub fn set_unsignalled_requests(&mut self, qpn: u32, unsignalled: bool) {
        let mode = self.feeds.update_requests(qpn, unsignalled, &self.notices);
        self.set_mode(mode);
    }

    /// The EVD is solicited-only from now on, or no longer. Leaving it, a waiter or CNO
    /// may sleep on a solicited-only arm and miss the completions that notify now: the CQ
    /// is armed for every completion instead (an arm replaces the one before it, and fires
    /// at once for completions already waiting). Entering it, the events already queued
    /// were notification events when they came: counted as one, so a wait returns them.
    fn set_mode(&mut self, solicited_only: bool) {
        let was = std::mem::replace(&mut self.solicited_only, solicited_only);
        if was && !solicited_only {
            self.cq.arm(false);
        } else if !was && solicited_only {
            self.notices.add(1);
        }
    }

    /// Makes the CQ take in QPs attached or reset since its last poll, dropping the
    /// completions an old incarnation of a reset QP left behind (rdma-core's `cq_clean`):
    /// must run after a QP reset and before that QP produces completions again.
    pub fn sync_attachments(&mut self) {
        self.cq.poll(&mut []);
    }

    /// QP `qpn` is gone.
    pub fn detach(&mut self, qpn: u32) {
        self.last = None;
        self.eps.remove(&qpn);
        let mode = self.feeds.remove(qpn, &self.notices);
        self.set_mode(mode);
    }

    /// The DTO event of `wc`, and whether it is a receive (which may have to park).
    #[inline(always)]
    fn event(&mut self, wc: &WorkCompletion) -> Option<(Event, bool)> {
        if !matches!(&self.last, Some((qpn, _)) if *qpn == wc.qpn) && !self.switch_to(wc.qpn) {
            return None;
        }
        let (_, ep) = self.last.as_ref()?;
        let received = is_receive(wc);
        let cookie = cookie_of(ep, wc, received);
        if cookie.operation == dtos::BIND_MW && !received {
            return bind_event(ep.ep, wc, &cookie).map(|ev| (ev, false));
        }
        DtoCompletion::from_work_completion(wc, &cookie)
            .map(|completion| (Event::Dto { ep: ep.ep, completion }, received))
    }

    /// The completion is of another QP than the last one: its endpoint becomes the last
    /// (false for a QP no endpoint is attached under).
    #[cold]
    #[inline(never)]
    fn switch_to(&mut self, qpn: u32) -> bool {
        let Some(ep) = self.eps.get(&qpn) else { return false };
        self.last = Some((qpn, ep.clone()));
        true
    }

    /// A dequeue's harvest, for a dequeuer that found the EVD's queue empty: the CQ's next
    /// DTO completion and its endpoint. The common case — no released receives waiting, a
    /// DTO completion of the endpoint of the last one, which lets it through — is
    /// straight-line code polling one completion, and its completion is returned as plain
    /// values (the caller builds the event where it wants it, after letting the locks go).
    /// Anything else is done out of line, its events going to `backlog` (the EVD's queue),
    /// where the dequeue takes the oldest: the general harvest for released receives,
    /// deferred events, or what follows a completion that makes no event; an RMR bind's
    /// event; a receive that meets a closed gate. No loop here, and the calls return
    /// flags, not the result: it stays in registers.
    #[inline(always)]
    pub(crate) fn next_completion(
        &mut self,
        backlog: Backlog<'_, Event>,
    ) -> Harvested<(ObjectId, DtoCompletion)> {
        if self.released.has_pending() {
            return queued(self.harvest_into(backlog));
        }
        let mut wc = WorkCompletion::default();
        if !self.cq.poll_one(&mut wc) {
            // The CQ is drained: the events deferred behind it are next, if any.
            if self.deferred.looks_empty() {
                return Harvested::Nothing;
            }
            return queued(self.harvest_into(backlog));
        }
        if !matches!(&self.last, Some((qpn, _)) if *qpn == wc.qpn) && !self.switch_to(wc.qpn) {
            // A QP no endpoint has (any more): nothing; the rest as usual.
            return queued(self.harvest_into(backlog));
        }
        let Some((_, ep)) = &self.last else { return Harvested::Nothing };
        let received = is_receive(&wc);
        let cookie = cookie_of(ep, &wc, received);
        if cookie.operation == dtos::BIND_MW && !received {
            let queued_bind = queue_bind_event(ep, wc, cookie, &self.failures, backlog);
            return queued(usize::from(queued_bind) + self.harvest_into(backlog));
        }
        let Some(completion) = DtoCompletion::from_work_completion(&wc, &cookie) else {
            // A suppressed success: no event; the rest as usual.
            return queued(self.harvest_into(backlog));
        };
        if !wc.is_ok() {
            self.failures.note_error(ep, failed_status(completion.status));
        }
        if !received || ep.early.is_open() {
            return Harvested::One((ep.ep, completion));
        }
        // (The completion is made again there from its inputs: handing it over would keep
        // it in memory on the fast path too.)
        let notices = self.solicited_only.then_some(&*self.notices);
        let delivered = admit_for_dequeue(ep, &wc, cookie, &self.released, notices, backlog);
        queued(usize::from(delivered) + if delivered { 0 } else { self.harvest_into(backlog) })
    }

    /// [`Harvest::harvest`] for a dequeue, into the EVD's queue: how many events went.
    #[cold]
    #[inline(never)]
    fn harvest_into(&mut self, backlog: Backlog<'_, Event>) -> usize {
        self.harvest(backlog.room(), &mut |ev| backlog.push(ev))
    }
}

/// What a dequeue's harvest that queued `n` events found.
#[inline(always)]
fn queued<R>(n: usize) -> Harvested<R> {
    if n == 0 { Harvested::Nothing } else { Harvested::Queued }
}

/// Whether `wc` is a notification event on a solicited-only EVD: IB's solicited completion,
/// one that failed (flushes included) or a receive with the solicited-event bit (which
/// only receives carry).
#[inline(always)]
fn is_notice(wc: &WorkCompletion) -> bool {
    !wc.is_ok() || wc.solicited()
}

/// Whether `wc` is a receive's. (The driver reports a failed receive — flushed, too long —
/// as a receive too.)
#[inline(always)]
fn is_receive(wc: &WorkCompletion) -> bool {
    matches!(wc.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm)
}

/// What `ep` posted for `wc`: its cookie, from the ring of that direction (which retires
/// it and the unsignalled requests before it). A receive from an SRQ carries the
/// consumer's cookie in its wr_id.
#[inline(always)]
fn cookie_of(ep: &EpCompletions, wc: &WorkCompletion, received: bool) -> Cookie {
    match (&ep.receives, received) {
        (_, false) => ep.requests.complete(wc.wr_id),
        (Some(ring), true) => ring.complete(wc.wr_id),
        (None, true) => {
            Cookie { user_cookie: wc.wr_id, length: 0, operation: dtos::RECEIVE, suppress: false }
        }
    }
}

/// The event of an RMR bind's completion (None: suppressed and successful).
#[inline(always)]
fn bind_event(ep: ObjectId, wc: &WorkCompletion, cookie: &Cookie) -> Option<Event> {
    if cookie.suppress && wc.is_ok() {
        return None;
    }
    Some(Event::RmrBind {
        rmr: cookie.length,
        ep,
        user_cookie: cookie.user_cookie,
        status: crate::dto::dto_status(wc.status),
    })
}

/// An RMR bind's completion met by a dequeue: its event into the EVD's queue, the endpoint
/// listed if the bind failed; false if it makes no event (suppressed and successful).
/// (Everything by value: nothing of the caller's stays in memory for this call.)
#[cold]
#[inline(never)]
fn queue_bind_event(
    ep: &Arc<EpCompletions>,
    wc: WorkCompletion,
    cookie: Cookie,
    failures: &Failures,
    backlog: Backlog<'_, Event>,
) -> bool {
    let Some(ev) = bind_event(ep.ep, &wc, &cookie) else { return false };
    if !wc.is_ok() {
        failures.note_error(ep, failed(&ev));
    }
    backlog.push(ev);
    true
}

/// A receive of an endpoint whose gate is not known to be open ([`EarlyCompletions`]),
/// met by a dequeue: parked (false), or delivered into the EVD's queue behind what was
/// parked before it (true), counted as notification events on a solicited-only EVD.
#[cold]
#[inline(never)]
fn admit_for_dequeue(
    ep: &Arc<EpCompletions>,
    wc: &WorkCompletion,
    cookie: Cookie,
    released: &Released,
    notices: Option<&Notices>,
    backlog: Backlog<'_, Event>,
) -> bool {
    let Some(completion) = DtoCompletion::from_work_completion(wc, &cookie) else {
        return false;
    };
    let ev = Event::Dto { ep: ep.ep, completion };
    let notice = is_notice(wc);
    match ep.early.admit(ev, notice, backlog.room(), &mut |ev| backlog.push(ev)) {
        Admitted::Delivered(d) => {
            if let Some(notices) = notices {
                notices.add(d.notices as u64);
            }
            if !ep.early.is_open() {
                released.push(ep.clone());
            }
            true
        }
        Admitted::Parked => false,
    }
}

/// The unit tests' stand-in for other threads posting while a harvest runs: called at the
/// start of every harvest on the thread that set it, once its room was measured.
#[cfg(all(test, not(loom)))]
pub(crate) mod test_hook {
    use std::cell::RefCell;

    thread_local! {
        static DURING_HARVEST: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
    }

    /// Runs `f` at the start of each harvest on this thread until [`clear`].
    pub(crate) fn during_harvest(f: impl FnMut() + 'static) {
        DURING_HARVEST.with(|h| *h.borrow_mut() = Some(Box::new(f)));
    }

    pub(crate) fn clear() {
        DURING_HARVEST.with(|h| h.borrow_mut().take());
    }

    pub(super) fn run() {
        // Taken out while it runs, so that it may do anything, even harvest.
        let hook = DURING_HARVEST.with(|h| h.borrow_mut().take());
        if let Some(mut f) = hook {
            f();
            DURING_HARVEST.with(|h| {
                h.borrow_mut().get_or_insert(f);
            });
        }
    }
}

impl Harvest<Event> for CqSource {
    fn harvest(&mut self, max: usize, sink: &mut dyn FnMut(Event)) -> usize {
        #[cfg(all(test, not(loom)))]
        test_hook::run();
        let mut made = 0;
        // Notification events among them, counted on a solicited-only EVD: failed and
        // solicited completions (also those held back until their ESTABLISHED), deferred
        // events.
        let mut noticed = 0;
        if self.released.has_pending() {
            // Receives that completed before their ESTABLISHED, which is out now: they
            // precede every completion still in the CQ.
            let d = self.released.deliver(max, sink);
            made += d.events;
            noticed = d.notices;
        }
        while made < max {
            let want = (max - made).min(self.wcs.len());
            let n = self.cq.poll(&mut self.wcs[..want]);
            for i in 0..n {
                let wc = self.wcs[i];
                let Some((ev, received)) = self.event(&wc) else { continue };
                let Some((_, ep)) = &self.last else { continue };
                if !wc.is_ok() {
                    self.failures.note_error(ep, failed(&ev));
                }
                if !received || ep.early.is_open() {
                    sink(ev);
                    made += 1;
                    noticed += usize::from(is_notice(&wc));
                    continue;
                }
                // Keep room for the rest of this poll's completions.
                let room = max - made - (n - i - 1);
                match ep.early.admit(ev, is_notice(&wc), room, sink) {
                    Admitted::Delivered(d) => {
                        made += d.events;
                        noticed += d.notices;
                        if !ep.early.is_open() {
                            self.released.push(ep.clone());
                        }
                    }
                    Admitted::Parked => {}
                }
            }
            if n < want {
                // The CQ is drained: now the events that had to wait behind it.
                while made < max && !self.deferred.looks_empty() {
                    let Some(ev) = self.deferred.pop() else { break };
                    sink(ev);
                    made += 1;
                    noticed += 1;
                }
                break;
            }
        }
        if self.solicited_only && noticed > 0 {
            self.notices.add(noticed as u64);
        }
        made
    }

    fn arm(&mut self) {
        self.cq.arm(self.solicited_only);
    }

    fn notices(&self) -> Option<u64> {
        self.solicited_only.then(|| self.notices.count())
    }

    fn fds(&self) -> &[RawFd] {
        &self.fds
    }

    fn acknowledge(&mut self, _index: usize) -> Result<(), SourceError> {
        while self
            .channel
            .wait(Some(Duration::ZERO))
            .map_err(|e| Box::new(e) as SourceError)?
            .is_some()
        {}
        Ok(())
    }
}

/// Whether `ev` reports a DTO (or bind) that failed for a reason other than a flush.
#[inline(always)]
fn failed(ev: &Event) -> bool {
    match ev {
        Event::Dto { completion, .. } => failed_status(completion.status),
        Event::RmrBind { status, .. } => failed_status(*status),
        _ => false,
    }
}

/// Whether a DTO (or bind) status is a failure other than a flush.
#[inline(always)]
fn failed_status(status: u32) -> bool {
    status != dto_status::SUCCESS && status != dto_status::ERR_FLUSHED
}

/// Hashes a QP number as itself: QPNs are already spread (and not attacker-chosen here),
/// so SipHash's cost buys nothing on the completion path.
#[derive(Default)]
struct QpnHasher(u64);

impl Hasher for QpnHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}
