//! The EVD object: a queue of events with the DAT stream flags, its waiter, and — for a
//! DTO EVD — its CQ, harvested by whoever waits or dequeues.

use super::cq_source::{CqSource, EpCompletions, Failures, Released};
use super::notification::{Notices, Stream};
use super::queue::EventQueue;
use super::waiter::{EvdCore, Harvest, NoSource, SourceError, WaitError};
use crate::cno::Cno;
use crate::error::{DatError, DatResult};
use crate::event::{Event, ObjectId, new_object_id};
use crate::ia::Ia;
use crate::plain_mutex::{PlainGuard, PlainMutex};
use ferrodat_abi::dat::{evd_flags, evd_state, event, ret, subtype};
use ferrodat_driver::{CompChannel, Cq, CqOptions};
use std::num::NonZeroUsize;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, Weak};

/// An event dispatcher. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Evd {
    inner: Arc<EvdShared>,
}

/// What the handles of one EVD share (a CNO holds it weakly).
#[derive(Debug)]
pub(crate) struct EvdShared {
    id: ObjectId,
    ia: Ia,
    flags: u32,
    core: EvdCore<Event>,
    /// The CNO it triggers (`dat_evd_modify_cno`), and whether it does (`enable`/`disable`).
    cno: Mutex<Option<Cno>>,
    enabled: AtomicBool,
    /// Connection events waiting behind the CQ's completions (see [`CqSource`]), as many
    /// as the EVD's qlen. A resize replaces the queue: pushers take the read side, the
    /// resize the write side, and the CQ source's copy is replaced under the CQ lock.
    deferred: RwLock<Arc<EventQueue<Event>>>,
    /// Passive endpoints whose early receives follow their ESTABLISHED (see [`CqSource`]).
    released: Arc<Released>,
    /// Endpoints whose DTOs failed in a harvest, told after it (see [`Failures`]).
    failures: Arc<Failures>,
    /// Which events notify ([`super::notification`]): set by the CQ side from the streams
    /// feeding it, read by waits and the CNO.
    notices: Arc<Notices>,
    /// The CQ of a DTO EVD (behind a mutex: one harvester at a time; a dequeuer that finds
    /// it busy harvests nothing and looks at the queue only). A mutex without poisoning:
    /// every dequeue takes it (see [`PlainMutex`]).
    dto: Option<PlainMutex<DtoSide>>,
}

/// What a DTO EVD keeps behind its CQ lock: the CQ source, and the EVD's event queue as
/// it is now. A resize replaces the queue (and this copy of it) only while holding this
/// lock, so a dequeue that holds it uses the queue without the queue's own lock.
#[derive(Debug)]
pub(crate) struct DtoSide {
    source: CqSource,
    queue: Arc<EventQueue<Event>>,
}

/// The sources a wait harvests: the CQ if there is one. The waiter takes the CQ lock for
/// each step (harvest, arm, acknowledge), never across its sleep: endpoints are created,
/// reset and freed on the EVD meanwhile (they attach and detach QPs under that lock),
/// and one waiter at a time is ensured by the EVD's ownership, not by the lock.
enum Source<'a> {
    None(NoSource),
    Cq {
        side: &'a PlainMutex<DtoSide>,
        /// The completion channel's fd, fixed for the EVD's life.
        fds: [RawFd; 1],
        /// The EVD's notification mode and count, read without the CQ's lock.
        notices: &'a Notices,
    },
}

impl<'a> Source<'a> {
    fn cq(side: &'a PlainMutex<DtoSide>, notices: &'a Notices) -> Source<'a> {
        let fds = [side.lock().source.fds()[0]];
        Source::Cq { side, fds, notices }
    }
}

impl Harvest<Event> for Source<'_> {
    fn harvest(&mut self, max: usize, sink: &mut dyn FnMut(Event)) -> usize {
        match self {
            Source::None(s) => s.harvest(max, sink),
            Source::Cq { side, .. } => side.lock().source.harvest(max, sink),
        }
    }
    fn arm(&mut self) {
        match self {
            Source::None(s) => Harvest::<Event>::arm(s),
            Source::Cq { side, .. } => side.lock().source.arm(),
        }
    }
    fn fds(&self) -> &[RawFd] {
        match self {
            Source::None(s) => Harvest::<Event>::fds(s),
            Source::Cq { fds, .. } => fds,
        }
    }
    fn acknowledge(&mut self, index: usize) -> Result<(), SourceError> {
        match self {
            Source::None(s) => Harvest::<Event>::acknowledge(s, index),
            Source::Cq { side, .. } => side.lock().source.acknowledge(index),
        }
    }
    fn notices(&self) -> Option<u64> {
        match self {
            Source::None(_) => None,
            Source::Cq { notices, .. } => notices.solicited_only().then(|| notices.count()),
        }
    }
}

impl Evd {
    /// `dat_evd_create(ia, qlen, cno NULL, flags)`. A DTO EVD gets a CQ of `qlen` entries
    /// and a completion channel its waiters sleep on.
    pub fn create(ia: &Ia, qlen: u32, flags: u32) -> DatResult<Evd> {
        Evd::create_with_cno(ia, qlen, None, flags)
    }

    /// `dat_evd_create(ia, qlen, cno, flags)`: as [`Evd::create`], triggering `cno`.
    pub fn create_with_cno(ia: &Ia, qlen: u32, cno: Option<&Cno>, flags: u32) -> DatResult<Evd> {
        let known = evd_flags::SOFTWARE
            | evd_flags::CR
            | evd_flags::DTO
            | evd_flags::CONNECTION
            | evd_flags::RMR_BIND
            | evd_flags::ASYNC;
        if flags & !known != 0 || flags == 0 {
            return Err(DatError::invalid_parameter(4).with_detail(format!(
                "dat_evd_create: flags {flags:#x}; use DAT_EVD_*_FLAG bits (DTO {:#x}, CONNECTION \
                 {:#x}, CR {:#x}, ASYNC {:#x}, SOFTWARE {:#x})",
                evd_flags::DTO,
                evd_flags::CONNECTION,
                evd_flags::CR,
                evd_flags::ASYNC,
                evd_flags::SOFTWARE
            )));
        }
        let max = ia.attr().max_evd_qlen;
        let qlen_nz = match NonZeroUsize::new(qlen as usize) {
            Some(q) if qlen <= max => q,
            _ if qlen == 0 => {
                return Err(DatError::invalid_parameter(2)
                    .with_detail("dat_evd_create: qlen 0; an EVD holds at least one event"));
            }
            _ => {
                return Err(DatError::insufficient_resources(subtype::RESOURCE_TEVD).with_detail(
                    format!("dat_evd_create: qlen {qlen} exceeds max_evd_qlen {max}"),
                ));
            }
        };
        let core = EvdCore::new(qlen_nz).map_err(|e| {
            DatError::insufficient_resources(subtype::RESOURCE_MEMORY)
                .with_detail(format!("dat_evd_create: eventfd: {e}"))
        })?;
        let deferred = Arc::new(EventQueue::new(qlen_nz));
        let released = Arc::new(Released::default());
        let failures = Arc::new(Failures::default());
        let notices = Arc::new(Notices::default());
        let dto = if flags & (evd_flags::DTO | evd_flags::RMR_BIND) != 0 {
            let resource = |e: ferrodat_driver::Error| {
                DatError::insufficient_resources(subtype::RESOURCE_TEVD)
                    .with_detail(format!("dat_evd_create: {e}"))
            };
            let channel = CompChannel::new(ia.context()).map_err(resource)?;
            let cq = Cq::new(
                ia.context(),
                &CqOptions { cqe: qlen, channel: Some(&channel), ..Default::default() },
            )
            .map_err(resource)?;
            let cq_handle = cq.user_handle();
            let source = CqSource::new(
                cq,
                channel,
                deferred.clone(),
                released.clone(),
                failures.clone(),
                notices.clone(),
            );
            Some((PlainMutex::new(DtoSide { source, queue: core.current_queue() }), cq_handle))
        } else {
            None
        };
        let (dto, cq_handle) = dto.unzip();
        let evd = Evd {
            inner: Arc::new(EvdShared {
                id: new_object_id(),
                ia: ia.clone(),
                flags,
                core,
                cno: Mutex::new(None),
                enabled: AtomicBool::new(true),
                deferred: RwLock::new(deferred),
                released,
                failures,
                notices,
                dto,
            }),
        };
        evd.modify_cno(cno);
        let child: Weak<dyn crate::ia::IaChild> = Arc::downgrade(&evd.inner) as _;
        ia.register(child);
        if let Some(handle) = cq_handle {
            // A CQ overrun (the device's CQ_ERR) is this EVD's overflow.
            ia.watch_device_object(handle, evd.inner.id, Arc::downgrade(&evd.inner) as _);
        }
        Ok(evd)
    }

    /// Its id (events name objects by id).
    pub fn id(&self) -> ObjectId {
        self.inner.id
    }

    /// `dat_evd_query`: the flags it was created with.
    pub fn flags(&self) -> u32 {
        self.inner.flags
    }

    /// `dat_evd_query`: its qlen.
    pub fn qlen(&self) -> usize {
        self.inner.core.qlen()
    }

    /// Its IA.
    pub fn ia(&self) -> &Ia {
        &self.inner.ia
    }

    /// `dat_evd_post_se`: queues a software event; DAT_QUEUE_FULL if there is no room.
    pub fn post_se(&self, pointer: u64) -> DatResult<()> {
        let posted = self.post_se_queue(pointer);
        if posted.is_ok() {
            self.trigger_cno();
        }
        posted
    }

    fn post_se_queue(&self, pointer: u64) -> DatResult<()> {
        if self.inner.flags & evd_flags::SOFTWARE == 0 {
            return Err(DatError::invalid_parameter(1)
                .with_detail("dat_evd_post_se on an EVD created without DAT_EVD_SOFTWARE_FLAG"));
        }
        self.post_core(Event::Software { pointer }).map_err(|_| {
            DatError::new(ret::QUEUE_FULL, subtype::NO_SUBTYPE)
                .with_detail(format!("the EVD's {} entries are all in use", self.qlen()))
        })
    }

    /// Queues an event a provider stream produced (CM, async). On a full queue the event
    /// is handed back: the caller reports the overflow on the async EVD.
    pub(crate) fn post_event(&self, event: Event) -> Result<(), Event> {
        let behind_completions = match event {
            Event::Connection { number, .. } => number != event::CONNECTION_EVENT_ESTABLISHED,
            // A post on a DISCONNECTED endpoint, completed at once as flushed: behind the
            // flushes of what was posted before it, still in the CQ (a consumer's "marker"
            // DTO says everything before it was dequeued).
            Event::Dto { .. } | Event::RmrBind { .. } => true,
            _ => false,
        };
        if self.inner.dto.is_some() && behind_completions {
            // A shared DTO and connection EVD: the event goes behind the completions
            // already in the CQ; the next harvest delivers it after them. (Not
            // ESTABLISHED: nothing of that connection may come before it; receives that
            // complete first are parked on their endpoint until it is out.)
            read(&self.inner.deferred).push(event)?;
            self.inner.core.notifier().notify();
            self.trigger_cno();
            return Ok(());
        }
        self.post_core(event)?;
        self.trigger_cno();
        Ok(())
    }

    /// Queues `event` and wakes a waiter; it counts as a notification event (a
    /// solicited-only EVD's waiter returns for it: [`super::notification`]; only DTO EVDs
    /// read the count).
    fn post_core(&self, event: Event) -> Result<(), Event> {
        self.inner.core.post_then(event, || self.inner.notices.add(1))
    }

    /// Wakes the CNO for an event no waiter of this EVD takes (DAT: the CNO is triggered
    /// only then, and only while the EVD is enabled).
    fn trigger_cno(&self) {
        if !self.inner.enabled.load(Ordering::Acquire) || self.inner.core.has_waiter() {
            return;
        }
        let cno = lock(&self.inner.cno).clone();
        if let Some(cno) = cno {
            cno.triggered_by(self);
        }
    }

    /// `dat_evd_modify_cno`: triggers `cno` from now on (None: none).
    pub fn modify_cno(&self, cno: Option<&Cno>) {
        let mut slot = lock(&self.inner.cno);
        let old = slot.take();
        if let Some(old) = &old {
            old.detach(self);
        }
        if let Some(new) = cno {
            new.attach(self);
            *slot = Some(new.clone());
        }
        drop(slot);
        // A CNO with a file descriptor watches the EVD's completion channel from now on
        // (or no longer), and arms its CQ: done without the slot's lock, as it takes the
        // CQ's lock and may harvest (whose failed DTOs end connections and post events).
        if let Some(old) = old {
            old.unwatch(self);
        }
        if let Some(new) = cno {
            new.watch(self);
        }
    }

    /// `dat_evd_enable`: triggers its CNO again. A CNO wait already asleep is poked, so it
    /// arms this EVD's CQ and watches its completion channel (as OFA's `dapl_evd_enable`
    /// re-arms); the notifier's fence orders the flag before its look for a sleeper.
    pub fn enable(&self) {
        self.inner.enabled.store(true, Ordering::Release);
        let cno = lock(&self.inner.cno).clone();
        if let Some(cno) = cno {
            cno.rescan(self);
        }
    }

    /// `dat_evd_disable`: stops triggering its CNO (events still queue).
    pub fn disable(&self) {
        self.inner.enabled.store(false, Ordering::Release);
    }

    pub(crate) fn enabled(&self) -> bool {
        self.inner.enabled.load(Ordering::Acquire)
    }

    /// An event waits: queued, or a completion in the CQ not yet harvested. On a
    /// solicited-only EVD: a notification event is queued, once the CQ is harvested
    /// ([`super::notification`]).
    pub(crate) fn has_events(&self) -> bool {
        if let Some(m) = &self.inner.dto
            && self.inner.notices.solicited_only()
        {
            let pending = self.inner.core.notification_pending(&mut m.lock().source);
            // The harvest may have met failed DTOs: their endpoints learn it now, unlocked.
            self.inner.failures.tell();
            return pending;
        }
        !self.inner.core.is_empty()
            || !read(&self.inner.deferred).is_empty()
            || self.inner.released.has_pending()
            || self
                .inner
                .dto
                .as_ref()
                .is_some_and(|m| m.try_lock().is_some_and(|s| s.source.cq().has_completion()))
    }

    /// Whether an event arriving now would trigger its CNO: it is enabled and no thread
    /// waits on it directly (that waiter takes the event).
    pub(crate) fn triggers_cno(&self) -> bool {
        self.enabled() && !self.inner.core.has_waiter()
    }

    /// The CQ side for a CNO, or None while a direct waiter owns the EVD: the CNO then
    /// leaves this EVD out until that waiter returns and kicks it ([`Evd::wait`]). Checked
    /// under the lock the waiter arms and acknowledges under, so the CNO never consumes a
    /// channel event the waiter sleeps for.
    fn dto_side_for_cno(&self) -> Option<PlainGuard<'_, DtoSide>> {
        let g = self.inner.dto.as_ref()?.lock();
        (!self.inner.core.has_waiter()).then_some(g)
    }

    /// Arms the CQ for a CNO's sleep; the completion channel to poll (none while a direct
    /// waiter owns the EVD). A handle to the channel, not its fd number: the CNO keeps it
    /// while it sleeps, so the fd stays open (and is not reused) when the EVD is freed
    /// meanwhile.
    pub(crate) fn arm_for_cno(&self) -> Option<CompChannel> {
        let mut s = self.dto_side_for_cno()?;
        s.source.arm();
        Some(s.source.channel().clone())
    }

    /// Consumes the completion events that woke a CNO's sleep.
    pub(crate) fn acknowledge_channel(&self) {
        if let Some(mut s) = self.dto_side_for_cno() {
            let _ = s.source.acknowledge(0);
        }
    }

    /// The completion channel of a DTO EVD, for a CNO with a file descriptor to watch (in
    /// its epoll set) for as long as the EVD triggers it.
    pub(crate) fn channel_for_cno(&self) -> Option<CompChannel> {
        Some(self.inner.dto.as_ref()?.lock().source.channel().clone())
    }

    /// For a CNO with a file descriptor: whether a notification event waits (as
    /// [`Evd::has_events`]), with the CQ harvested into the queue first and then armed, so
    /// the completion channel fires for completions after this look only (an arm fires at
    /// once for completions still in the CQ: a harvest-arm-look order would wake the fd
    /// for what the look already reported). False, touching nothing, while a direct waiter
    /// owns the EVD (its channel events are the waiter's).
    pub(crate) fn harvest_and_arm_for_cno(&self) -> bool {
        if self.inner.dto.is_none() {
            return !self.inner.core.is_empty();
        }
        let pending = {
            let Some(mut s) = self.dto_side_for_cno() else { return false };
            let mut pending = self.inner.core.harvest_for_notification(&mut s.source);
            s.source.arm();
            // A completion between the harvest and the arm: a plain arm fires for it at
            // once, a solicited-only one need not (softhca's does not read the waiting
            // entries back), so that mode looks again, now that later ones fire.
            if Harvest::<Event>::notices(&s.source).is_some() {
                pending |= self.inner.core.harvest_for_notification(&mut s.source);
            }
            pending
        };
        // The harvest may have met failed DTOs or lost events to concurrent posts: told
        // now, unlocked, as after a dequeue.
        self.inner.failures.tell();
        self.report_overflows();
        pending
    }

    /// Both handles are the same EVD.
    pub fn same(&self, other: &Evd) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub(crate) fn downgrade(&self) -> Weak<EvdShared> {
        Arc::downgrade(&self.inner)
    }

    pub(crate) fn upgrade(w: &Weak<EvdShared>) -> Option<Evd> {
        w.upgrade().map(|inner| Evd { inner })
    }

    pub(crate) fn is(&self, w: &Weak<EvdShared>) -> bool {
        std::ptr::eq(Arc::as_ptr(&self.inner), w.as_ptr())
    }

    /// `dat_evd_dequeue`: the oldest event, harvesting the CQ first if the queue is empty.
    /// Inlined into its callers (the C provider's `dat_evd_dequeue`, Rust consumers'
    /// polling loops): it is the busy-polling consumer's hot path.
    #[inline]
    pub fn dequeue(&self) -> DatResult<Event> {
        let core = &self.inner.core;
        // Without the CQ (none, or another thread harvests or waits): the queue is all
        // there is for this dequeue.
        let r = match self.inner.dto.as_ref().and_then(PlainMutex::try_lock) {
            Some(mut side) => Self::dequeue_dto(core, &mut side),
            None => core.dequeue(&mut NoSource).map_err(wait_error),
        };
        self.inner.failures.tell();
        self.report_overflows();
        r
    }

    /// Raises `DAT_ASYNC_ERROR_EVD_OVERFLOW` for this EVD on the async EVD once per event a
    /// harvest had to drop (other threads filled the queue while it harvested), as a full
    /// post does ([`Ia::post_or_report`]). Called after each wait and dequeue, with no lock
    /// held (the async EVD may be this one). One load when nothing was dropped.
    #[inline]
    fn report_overflows(&self) {
        let lost = self.inner.core.take_unreported_overflows();
        if lost != 0 {
            self.report_lost(lost);
        }
    }

    #[cold]
    #[inline(never)]
    fn report_lost(&self, lost: u64) {
        for _ in 0..lost {
            self.inner.ia.report_async(event::ASYNC_ERROR_EVD_OVERFLOW, self.inner.id);
        }
    }

    /// A dequeue holding the CQ lock: the queue (without its lock: see [`DtoSide`]), then
    /// the CQ's next completion, whose event is built once the lock is let go.
    #[inline(always)]
    fn dequeue_dto(core: &EvdCore<Event>, side: &mut DtoSide) -> DatResult<Event> {
        let DtoSide { source, queue } = side;
        core.dequeue_from(
            queue,
            |backlog| source.next_completion(backlog),
            |(ep, completion)| Event::Dto { ep, completion },
            wait_error,
        )
    }

    /// `dat_evd_wait(timeout µs, threshold)`: blocks until `threshold` events are queued,
    /// then dequeues one; returns it and how many remain.
    pub fn wait(&self, timeout_us: u32, threshold: u32) -> DatResult<(Event, usize)> {
        self.wait_counting(timeout_us, threshold).map_err(|(e, _)| e)
    }

    /// [`Evd::wait`], and on DAT_TIMEOUT_EXPIRED the number of events queued, which the C
    /// API reports through `nmore` (`None` with any other error).
    pub fn wait_counting(
        &self,
        timeout_us: u32,
        threshold: u32,
    ) -> Result<(Event, usize), (DatError, Option<usize>)> {
        if threshold > 1 && self.inner.notices.threshold_one() && threshold as usize <= self.qlen()
        {
            let e = DatError::invalid_state(subtype::INVALID_STATE_EVD_CONFIG_SOLICITED)
                .with_detail(format!(
                    "dat_evd_wait: threshold {threshold}, but an endpoint's receives with \
                     DAT_COMPLETION_SOLICITED_WAIT_FLAG feed this EVD; their sender decides \
                     when a waiter wakes, so wait with threshold 1"
                ));
            return Err((e, None));
        }
        if threshold > 1
            && self.inner.notices.unsignalled_requests()
            && threshold as usize <= self.qlen()
        {
            let e = DatError::invalid_state(subtype::INVALID_STATE_EVD_CONFIG_NOTIFY).with_detail(
                format!(
                    "dat_evd_wait: threshold {threshold}, but an endpoint's requests with \
                     DAT_COMPLETION_UNSIGNALLED_FLAG feed this EVD; only the requests posted \
                     without DAT_COMPLETION_SUPPRESS_FLAG make events, so wait with threshold 1"
                ),
            );
            return Err((e, None));
        }
        let r = match &self.inner.dto {
            Some(m) => {
                let mut source = Source::cq(m, &self.inner.notices);
                self.inner.core.wait(&mut source, threshold, timeout_us)
            }
            None => self.inner.core.wait(&mut Source::None(NoSource), threshold, timeout_us),
        };
        // A CNO sleeping meanwhile left this EVD's channel out (see `arm_for_cno`): now that
        // the EVD is free again, it must watch it.
        let cno = lock(&self.inner.cno).clone();
        if let Some(cno) = cno {
            cno.rescan(self);
        }
        self.inner.failures.tell();
        self.report_overflows();
        r.map_err(|e| {
            let nmore = match e {
                WaitError::Timeout { nmore } => Some(nmore),
                _ => None,
            };
            (wait_error(e), nmore)
        })
    }

    /// `dat_evd_resize`: room for `qlen` events (a DTO EVD's CQ grows or shrinks with it,
    /// its waiting completions kept). Refused while a waiter owns the EVD, or below the
    /// number of events queued.
    pub fn resize(&self, qlen: u32) -> DatResult<()> {
        let q = NonZeroUsize::new(qlen as usize)
            .ok_or_else(|| DatError::invalid_parameter(2).with_detail("dat_evd_resize: qlen 0"))?;
        if qlen > self.inner.ia.attr().max_evd_qlen {
            return Err(DatError::insufficient_resources(subtype::RESOURCE_TEVD).with_detail(
                format!(
                    "dat_evd_resize: qlen {qlen} exceeds max_evd_qlen {}",
                    self.inner.ia.attr().max_evd_qlen
                ),
            ));
        }
        if let Some(m) = &self.inner.dto {
            // The queue is replaced under the CQ lock, and the side's copy with it (see
            // [`DtoSide`]).
            let mut s = m.lock();
            // The deferred events too: held still (pushers wait) and checked to fit first.
            let mut deferred = self.inner.deferred.write().unwrap_or_else(|e| e.into_inner());
            if deferred.len() > q.get() {
                return Err(DatError::invalid_state(subtype::NO_SUBTYPE).with_detail(format!(
                    "dat_evd_resize: {} connection events and flushed DTOs wait behind the \
                     completions; dequeue them or ask for at least that many",
                    deferred.len()
                )));
            }
            // The CQ is resized only once the queue's resize may go ahead (no waiter owns
            // the EVD, the events fit), and the queue only if the CQ's resize worked.
            self.inner
                .core
                .resize_with(q, || s.source.resize_cq(qlen).map(drop))
                .map_err(wait_error)?
                .map_err(|e| {
                    DatError::insufficient_resources(subtype::RESOURCE_TEVD)
                        .with_detail(format!("dat_evd_resize: {e}"))
                })?;
            s.queue = self.inner.core.current_queue();
            let moved = Arc::new(EventQueue::new(q));
            while let Some(ev) = deferred.pop() {
                // Fits: checked above, and no push can come in meanwhile.
                let _ = moved.push(ev);
            }
            s.source.replace_deferred(moved.clone());
            *deferred = moved;
            return Ok(());
        }
        self.inner.core.resize(q).map_err(wait_error)
    }

    /// `dat_evd_free`: refused while an endpoint, service point or CNO uses the EVD
    /// (INVALID_STATE/EVD_IN_USE; the caller keeps its handle); a waiter still blocked in
    /// it is woken with DAT_ABORT.
    pub fn free(self) -> Result<(), (Evd, DatError)> {
        // A CNO waiter scanning its EVDs, or a thread delivering an event, holds the EVD
        // for a few microseconds (endpoints and service points hold it for good).
        crate::transient_hold::other_holders(&self.inner);
        self.free_now()
    }

    /// [`Evd::free`] without waiting out another thread's momentary hold: for a caller
    /// that retries by itself (the C layer, which must not sleep holding its handle table).
    pub fn free_now(self) -> Result<(), (Evd, DatError)> {
        if Arc::strong_count(&self.inner) > 1 {
            let users = Arc::strong_count(&self.inner) - 1;
            let e =
                DatError::invalid_state(subtype::INVALID_STATE_EVD_IN_USE).with_detail(format!(
                    "dat_evd_free: {users} other handle(s) (endpoints, service points) still use \
                 the EVD; free them first"
                ));
            return Err((self, e));
        }
        self.inner.core.abort();
        let cno = lock(&self.inner.cno).clone();
        self.modify_cno(None);
        if let Some(cno) = cno {
            cno.evd_freed();
        }
        Ok(())
    }

    /// The first step of a `dat_evd_free` that must not fail for a thread waiting on the
    /// EVD (DAT: the wait returns DAT_ABORT when the EVD is freed): the waiter, and every
    /// wait from now on, is woken with DAT_ABORT, so it lets go of the EVD and the free can
    /// proceed. If the free then fails after all (other users), call
    /// [`Evd::resume_waits`].
    pub fn abort_waits_for_free(&self) {
        self.inner.core.abort_for_free();
    }

    /// Undoes [`Evd::abort_waits_for_free`] after a free that failed: waits work again,
    /// unless the EVD's IA was closed (that abort stays).
    pub fn resume_waits(&self) {
        self.inner.core.cancel_free();
    }

    /// `dat_evd_set_unwaitable`.
    pub fn set_unwaitable(&self) {
        self.inner.core.set_unwaitable();
    }

    /// `dat_evd_clear_unwaitable`.
    pub fn clear_unwaitable(&self) {
        self.inner.core.set_waitable();
    }

    /// Runs `f` on the CQ source of a DTO EVD (QP creation, attach, detach).
    pub(crate) fn with_cq<R>(&self, f: impl FnOnce(&mut CqSource) -> R) -> DatResult<R> {
        let m = self.inner.dto.as_ref().ok_or_else(|| {
            DatError::invalid_handle(subtype::INVALID_HANDLE_EVD_REQUEST)
                .with_detail("this EVD was created without DAT_EVD_DTO_FLAG; DTO streams need it")
        })?;
        Ok(f(&mut m.lock().source))
    }

    /// `ep`'s connection outcome is reported: its parked early receives go out with the
    /// next harvest, which a sleeping waiter is woken for.
    pub(crate) fn release_early(&self, ep: Arc<EpCompletions>) {
        self.inner.released.push(ep);
        self.inner.core.notifier().notify();
        self.trigger_cno();
    }

    /// Completions of QP `qpn`'s `stream` go to `ep` (its cookie rings) on this EVD.
    pub(crate) fn attach(&self, qpn: u32, ep: Arc<EpCompletions>, stream: Stream) -> DatResult<()> {
        self.with_cq(|s| s.attach(qpn, ep, stream))
    }

    /// QP `qpn`'s requests, if they complete on this EVD, are UNSIGNALLED from now on, or no
    /// longer (`dat_ep_modify` of `request_completion_flags`): waits take threshold 1 only
    /// while such a stream feeds the EVD.
    pub(crate) fn set_unsignalled_requests(&self, qpn: u32, unsignalled: bool) {
        let _ = self.with_cq(|s| s.set_unsignalled_requests(qpn, unsignalled));
    }

    /// QP `qpn`'s receives, if they complete on this EVD, wake its waiter only when
    /// solicited from now on, or no longer (`dat_ep_modify` of `recv_completion_flags`).
    pub(crate) fn set_solicited_wait(&self, qpn: u32, solicited_wait: bool) {
        let _ = self.with_cq(|s| s.set_solicited_wait(qpn, solicited_wait));
    }
}

impl crate::ia::DeviceErrorTarget for EvdShared {
    /// A CQ overrun: reported as this EVD's overflow; nothing else changes (as in OFA).
    fn device_error(self: Arc<Self>, _number: u32) -> bool {
        true
    }
}

impl crate::ia::IaChild for EvdShared {
    fn kind(&self) -> crate::ia::ChildKind {
        crate::ia::ChildKind::Evd
    }

    /// Its waiter and every later wait get DAT_ABORT.
    fn abort_for_ia_close(self: Arc<Self>) {
        self.core.abort();
    }
}

/// `DAT_EVD_PARAM`, as `dat_evd_query` reports it.
#[derive(Clone, Debug)]
pub struct EvdParam {
    /// `ia_handle`.
    pub ia: Ia,
    /// `evd_qlen`: events it holds.
    pub evd_qlen: u32,
    /// `evd_state`: `DAT_EVD_STATE_ENABLED` or `_DISABLED`, with `DAT_EVD_STATE_WAITABLE`
    /// or `_UNWAITABLE`.
    pub evd_state: u32,
    /// `cno_handle`: the CNO it triggers, if any.
    pub cno: Option<Cno>,
    /// `evd_flags`: the streams it was created for.
    pub evd_flags: u32,
}

impl Evd {
    /// `dat_evd_query`: every field of `DAT_EVD_PARAM`.
    pub fn query(&self) -> EvdParam {
        let enabled = if self.enabled() { evd_state::ENABLED } else { evd_state::DISABLED };
        let waitable =
            if self.inner.core.is_waitable() { evd_state::WAITABLE } else { evd_state::UNWAITABLE };
        EvdParam {
            ia: self.inner.ia.clone(),
            evd_qlen: u32::try_from(self.qlen()).unwrap_or(u32::MAX),
            evd_state: enabled | waitable,
            cno: lock(&self.inner.cno).clone(),
            evd_flags: self.inner.flags,
        }
    }
}

/// A wait or dequeue failure as the DAT_RETURN the man pages give.
fn wait_error(e: WaitError) -> DatError {
    if let WaitError::Empty = e {
        // The answer to every empty poll of a consumer busy-polling dat_evd_dequeue: a
        // static message, so polling allocates and formats nothing.
        return DatError::queue_empty().with_detail(EMPTY);
    }
    let text = e.to_string();
    let d = match e {
        WaitError::InvalidThreshold { .. } => DatError::invalid_parameter(3),
        WaitError::Busy => DatError::invalid_state(subtype::INVALID_STATE_EVD_WAITER),
        WaitError::Unwaitable => DatError::invalid_state(subtype::INVALID_STATE_EVD_UNWAITABLE),
        WaitError::Aborted => DatError::new(ret::ABORT, subtype::NO_SUBTYPE),
        WaitError::Timeout { .. } => DatError::timeout_expired(),
        WaitError::Empty => DatError::queue_empty(),
        WaitError::TooSmall { .. } => DatError::invalid_state(subtype::INVALID_STATE_EVD_IN_USE),
        WaitError::Internal(_) => DatError::internal_error(),
    };
    d.with_detail(text)
}

/// The detail of DAT_QUEUE_EMPTY.
const EMPTY: &str = "no event queued";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn an_empty_dequeue_is_queue_empty_with_the_waiters_message() {
        let e = wait_error(WaitError::Empty);
        assert_eq!(e.return_type(), ret::QUEUE_EMPTY);
        assert_eq!(e.subtype(), subtype::NO_SUBTYPE);
        assert_eq!(e.detail(), Some(WaitError::Empty.to_string().as_str()));
    }

    /// Another thread filling a DTO EVD while a dequeue or a wait harvests it (played by
    /// the harvest hook, which posts software events once the harvest measured its room):
    /// each event the harvest loses is one ASYNC_ERROR_EVD_OVERFLOW for that EVD on the
    /// async EVD, as for a post that finds the EVD full, and the loss stays counted.
    #[test]
    fn events_a_harvest_loses_to_concurrent_posts_are_reported_as_evd_overflow() {
        use super::super::cq_source::test_hook;
        use crate::ia::IaSpec;
        ferrodat_softhca::fabric::use_private_fabric("engine-evd-unit");
        let ia = Ia::open("ferro0", &IaSpec::parse("softhca0 1 127.0.0.1").unwrap()).unwrap();
        let async_evd = Evd::create(&ia, 8, evd_flags::ASYNC).unwrap();
        ia.set_async_evd(&async_evd);
        let flags = evd_flags::DTO | evd_flags::CONNECTION | evd_flags::SOFTWARE;
        let evd = Evd::create(&ia, 2, flags).unwrap();
        let overflow = Event::Async { number: event::ASYNC_ERROR_EVD_OVERFLOW, object: evd.id() };
        for (round, how) in ["dequeue", "wait"].into_iter().enumerate() {
            // Two connection events wait behind the (empty) CQ: the next harvest takes them,
            // into the two free places the hook fills first.
            for _ in 0..2 {
                let disconnected = Event::Connection {
                    number: event::CONNECTION_EVENT_DISCONNECTED,
                    ep: 7,
                    private_data: Vec::new(),
                };
                evd.post_event(disconnected).unwrap();
            }
            let mut poster = Some(evd.clone());
            test_hook::during_harvest(move || {
                if let Some(evd) = poster.take() {
                    evd.post_se(1).unwrap();
                    evd.post_se(2).unwrap();
                }
            });
            let first = match how {
                "dequeue" => evd.dequeue().unwrap(),
                _ => {
                    let (ev, nmore) = evd.wait(0, 1).unwrap();
                    assert_eq!(nmore, 1, "{how}");
                    ev
                }
            };
            test_hook::clear();
            assert_eq!(first, Event::Software { pointer: 1 }, "{how}");
            assert_eq!(evd.dequeue().unwrap(), Event::Software { pointer: 2 }, "{how}");
            assert!(evd.dequeue().is_err(), "{how}: the connection events were lost");
            assert_eq!(evd.inner.core.overflows(), 2 * (round as u64 + 1), "{how}: counted");
            for n in 0..2 {
                assert_eq!(async_evd.dequeue().unwrap(), overflow, "{how}: report {n}");
            }
            assert!(async_evd.dequeue().is_err(), "{how}: one report per lost event");
        }
    }

    /// A free's abort wakes waits with DAT_ABORT; a free that fails after all gives the
    /// EVD its waits back once no other free is under way, unless its IA's close had
    /// aborted it before.
    #[test]
    fn a_failed_free_gives_back_the_waits_it_aborted_but_not_an_ia_closes() {
        use crate::ia::IaSpec;
        ferrodat_softhca::fabric::use_private_fabric("engine-evd-unit");
        let ia = Ia::open("ferro0", &IaSpec::parse("softhca0 1 127.0.0.1").unwrap()).unwrap();
        let evd = Evd::create(&ia, 4, evd_flags::SOFTWARE).unwrap();
        let timed_out =
            |evd: &Evd| evd.wait(0, 1).unwrap_err().return_type() == ret::TIMEOUT_EXPIRED;
        assert!(timed_out(&evd), "a fresh EVD waits");
        evd.abort_waits_for_free();
        assert_eq!(evd.wait(0, 1).unwrap_err().return_type(), ret::ABORT);
        evd.resume_waits();
        assert!(timed_out(&evd), "waits work again after the failed free");
        // Two frees at once: the first to fail leaves waits aborted for the other.
        evd.abort_waits_for_free();
        evd.abort_waits_for_free();
        evd.resume_waits();
        assert_eq!(evd.wait(0, 1).unwrap_err().return_type(), ret::ABORT, "one still frees");
        evd.resume_waits();
        assert!(timed_out(&evd), "both frees failed: waits work again");
        // A failed free racing the IA's close does not undo the close's abort.
        evd.abort_waits_for_free();
        crate::ia::IaChild::abort_for_ia_close(evd.inner.clone());
        evd.resume_waits();
        assert_eq!(evd.wait(0, 1).unwrap_err().return_type(), ret::ABORT, "still closed");
    }
}
