//! Consumer notification objects: one place to sleep for several EVDs. An EVD attached to
//! a CNO (and enabled) wakes it when an event arrives that no waiter of the EVD itself is
//! there to take; `dat_cno_wait` returns one such EVD as a hint, and the consumer then
//! dequeues from its EVDs.
//!
//! Events posted to an EVD (connection, async, software) poke the CNO's notifier; DTO
//! completions wake it through the completion channels of the EVDs' CQs, which the wait
//! arms before it sleeps — the same spin-free arm/re-check/sleep order as `dat_evd_wait`.
//! An EVD fed only by SOLICITED_WAIT receives triggers it for notification events only
//! (solicited or failed receives, posted events: [`crate::evd::notification`]): its CQ is
//! armed solicited-only, and the wait harvests it into the EVD's queue to look.
//!
//! # A CNO with a file descriptor (`dat_cno_fd_create`, `dat_cno_trigger`)
//!
//! For consumers with an event loop of their own (poll, epoll, select). The DAT 2.0 text
//! is not at hand; this is the reading implemented:
//!
//! - `dat_cno_fd_create(ia, &fd, &cno)` makes a CNO as `dat_cno_create` with no proxy
//!   agent, together with a file descriptor the CNO owns: `dat_cno_free` closes it (the
//!   consumer must not), `dat_cno_query` reports it (`DAT_PROXY_TYPE_FD`).
//! - The fd becomes readable (POLLIN) when the CNO is triggered, in exactly the cases
//!   where `dat_cno_wait` would return an EVD: an attached, enabled EVD that no thread
//!   waits on directly gets an event — a DTO completion (on an EVD fed by SOLICITED_WAIT
//!   receives, a notification event only: [`crate::evd::notification`]), a connection,
//!   async or software event; or such an EVD already holds events when it is attached,
//!   enabled, or its direct waiter returns. It also becomes readable when the waiters of
//!   the CNO are released (its last EVD freed: [`Cno::trigger`] then answers `None`; its
//!   IA closed: the handle is dead).
//! - `dat_cno_trigger(cno, &evd)` never blocks. It consumes what made the fd readable,
//!   re-arms every attached EVD, then looks: it returns one EVD that has an event (a
//!   hint, as `dat_cno_wait`'s; the EVDs take turns), or DAT_HANDLE_NULL when none has
//!   (the event was taken meanwhile by a dequeue). After it the fd stays unreadable until
//!   a new event arrives — on any EVD, the returned one included — or while other EVDs
//!   still hold events: those keep it readable, so each trigger hands out the next one.
//!   The returned EVD's events already queued are the consumer's to dequeue: the fd does
//!   not wake again for them (dequeue until DAT_QUEUE_EMPTY, as after an edge of epoll).
//!   A trigger answers DAT_HANDLE_NULL when a dequeue took the event that made the fd
//!   readable before the trigger came (a completion that arrives while the consumer
//!   drains the EVD it was told of).
//!
//! How: the fd is an epoll set (`epoll.rs`) holding an eventfd of the CNO's own,
//! raised for posted events and releases, and the completion channel of every attached
//! DTO EVD. A trigger drains the eventfd, reads the channels' events, then per EVD
//! harvests its CQ into its queue, arms the CQ, and looks at the queue: a completion after
//! the harvest fires the armed channel, an event posted after the drain raises the eventfd
//! again, so nothing that arrives during the trigger is lost, and nothing it reported
//! wakes the fd again. Attaching, enabling, and a direct waiter's return arm that EVD and
//! look at it the same way. A thread waiting on an attached EVD directly owns its channel:
//! while it sleeps, a completion makes the fd readable until that waiter reads the event
//! (microseconds), and a trigger meanwhile answers DAT_HANDLE_NULL for that EVD, as
//! `dat_cno_wait` is not woken by it. `dat_cno_wait` works on such a CNO too.

use crate::epoll::Epoll;
use crate::error::{DatError, DatResult};
use crate::evd::{Evd, EvdShared, Notifier, WakeReason, Woken};
use crate::event_fd::EventFd;
use crate::ia::Ia;
use ferrodat_abi::dat::subtype;
use ferrodat_driver::CompChannel;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// A CNO. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Cno {
    pub(crate) inner: Arc<CnoInner>,
}

#[derive(Debug)]
pub(crate) struct CnoInner {
    ia: Ia,
    pub(crate) notifier: Notifier,
    evds: Mutex<Vec<Weak<crate::evd::EvdShared>>>,
    /// The OS wait proxy agent (`dat_cno_modify_agent`).
    agent: Mutex<AgentSlot>,
    /// `dat_cno_free` or an abrupt IA close ran: the handle is dead, later waits fail.
    dead: AtomicBool,
    /// Bumped to release the current waiters with a NULL EVD (the IA closed, or the last
    /// EVD was freed); a wait that sees it change returns `Ok(None)`.
    releases: AtomicU64,
    /// Threads in `dat_cno_wait` (`dat_cno_free` is refused while there are any).
    waiters: AtomicUsize,
    /// The file descriptor of a `dat_cno_fd_create` CNO and what it watches.
    fd: Option<FdProxy>,
}

/// What a CNO with a file descriptor keeps (see the module docs).
#[derive(Debug)]
struct FdProxy {
    /// Raised for events posted to an attached EVD, for an EVD found with events outside a
    /// trigger, and for releases; in the epoll set. Its own, not the notifier's eventfd:
    /// the notifier writes that only while a `dat_cno_wait` sleeps.
    signal: EventFd,
    /// The epoll set and the channels in it; the lock is held through a whole trigger, so
    /// triggers (and watch changes) take turns.
    watched: Mutex<Watched>,
    /// Where the next trigger starts looking: the attached EVDs take turns as the hint.
    next: AtomicUsize,
}

#[derive(Debug)]
struct Watched {
    /// The consumer's fd; `None` once `dat_cno_free` closed it.
    epoll: Option<Epoll>,
    /// The completion channels in the set, with their EVDs. The channels are held, so an
    /// fd in the set is never closed (or its number reused) while it is there.
    channels: Vec<(Weak<EvdShared>, CompChannel)>,
}

impl Watched {
    /// The set watches the channels of exactly the DTO EVDs among `evds`.
    fn sync(&mut self, evds: &[Evd]) -> DatResult<()> {
        let Some(epoll) = &self.epoll else { return Ok(()) };
        self.channels.retain(|(w, channel)| {
            let keep = w.strong_count() > 0 && evds.iter().any(|e| e.is(w));
            if !keep {
                // Not in the set only if an add failed earlier: nothing to undo then.
                let _ = epoll.remove(channel.as_raw_fd());
            }
            keep
        });
        for evd in evds {
            if self.channels.iter().any(|(w, _)| evd.is(w)) {
                continue;
            }
            let Some(channel) = evd.channel_for_cno() else { continue };
            epoll.add(channel.as_raw_fd()).map_err(|e| {
                DatError::insufficient_resources(subtype::RESOURCE_MEMORY).with_detail(format!(
                    "dat_cno_trigger: adding an EVD's completion channel to the CNO's epoll set: \
                     {e} (raise /proc/sys/fs/epoll/max_user_watches, or attach fewer EVDs)"
                ))
            })?;
            self.channels.push((evd.downgrade(), channel));
        }
        Ok(())
    }
}

impl Cno {
    /// `dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL)`.
    pub fn create(ia: &Ia) -> DatResult<Cno> {
        Cno::create_inner(ia, None, "dat_cno_create")
    }

    /// `dat_cno_fd_create(ia)`: a CNO with a file descriptor ([`Cno::fd`]) that becomes
    /// readable when the CNO is triggered; [`Cno::trigger`] tells which EVD and re-arms it
    /// (see the module docs).
    pub fn create_with_fd(ia: &Ia) -> DatResult<Cno> {
        let verb = "dat_cno_fd_create";
        let no_fd = |what: &str, e: std::io::Error| {
            DatError::insufficient_resources(subtype::RESOURCE_MEMORY).with_detail(format!(
                "{verb}: {what}: {e} (out of file descriptors? raise `ulimit -n`)"
            ))
        };
        let signal = EventFd::new().map_err(|e| no_fd("eventfd", e))?;
        let epoll = Epoll::new().map_err(|e| no_fd("epoll_create1", e))?;
        epoll.add(signal.as_raw_fd()).map_err(|e| no_fd("epoll_ctl", e))?;
        let proxy = FdProxy {
            signal,
            watched: Mutex::new(Watched { epoll: Some(epoll), channels: Vec::new() }),
            next: AtomicUsize::new(0),
        };
        Cno::create_inner(ia, Some(proxy), verb)
    }

    fn create_inner(ia: &Ia, fd: Option<FdProxy>, verb: &str) -> DatResult<Cno> {
        let notifier = Notifier::new().map_err(|e| {
            DatError::insufficient_resources(subtype::RESOURCE_MEMORY)
                .with_detail(format!("{verb}: eventfd: {e}"))
        })?;
        let cno = Cno {
            inner: Arc::new(CnoInner {
                ia: ia.clone(),
                notifier,
                evds: Mutex::new(Vec::new()),
                agent: Mutex::new(AgentSlot(None)),
                dead: AtomicBool::new(false),
                releases: AtomicU64::new(0),
                waiters: AtomicUsize::new(0),
                fd,
            }),
        };
        let child: Weak<dyn crate::ia::IaChild> = Arc::downgrade(&cno.inner) as _;
        ia.register(child);
        Ok(cno)
    }

    /// `dat_cno_query`: its IA.
    pub fn ia(&self) -> &Ia {
        &self.inner.ia
    }

    /// `evd` triggers this CNO from now on. A wait already asleep is poked: it arms the
    /// EVD's CQ and polls its completion channel from its next round (OFA re-arms in
    /// `dapl_evd_modify_cno` too).
    pub(crate) fn attach(&self, evd: &Evd) {
        let mut evds = self.inner.evds.lock().unwrap_or_else(|e| e.into_inner());
        evds.retain(|w| w.strong_count() > 0);
        evds.push(evd.downgrade());
        drop(evds);
        self.inner.notifier.notify();
    }

    pub(crate) fn detach(&self, evd: &Evd) {
        let mut evds = self.inner.evds.lock().unwrap_or_else(|e| e.into_inner());
        evds.retain(|w| w.strong_count() > 0 && !evd.is(w));
        drop(evds);
        // A sleeping wait stops watching the EVD's completion channel.
        self.inner.notifier.wake_all(WakeReason::Abort);
    }

    fn evds(&self) -> Vec<Evd> {
        let evds = self.inner.evds.lock().unwrap_or_else(|e| e.into_inner());
        evds.iter().filter_map(Evd::upgrade).collect()
    }

    /// `evd` was attached ([`Evd::modify_cno`], after [`Cno::attach`] and without the
    /// EVD's locks), or may have events no look saw (enabled, its direct waiter returned):
    /// a CNO with a file descriptor watches its channel, arms its CQ and looks at it, and
    /// makes the fd readable if it holds events. A plain CNO has nothing to do here.
    pub(crate) fn watch(&self, evd: &Evd) {
        let Some(proxy) = &self.inner.fd else { return };
        let mut watched = lock(&proxy.watched);
        if watched.epoll.is_none() {
            return;
        }
        // A failed add is reported by the next trigger, which the signal asks for.
        let synced = watched.sync(&self.evds());
        if !evd.triggers_cno() {
            if synced.is_err() {
                proxy.signal.raise();
            }
            return;
        }
        // As a trigger does for each EVD: consume the channel's events (a direct waiter
        // that just returned leaves one behind: it arms before its last look, and the arm
        // fires for the completion that look then takes), harvest, arm, look.
        evd.acknowledge_channel();
        if synced.is_err() || evd.harvest_and_arm_for_cno() {
            proxy.signal.raise();
        }
    }

    /// `evd` no longer triggers this CNO: a CNO with a file descriptor stops watching its
    /// channel (and lets it go, so a freed EVD's channel closes now).
    pub(crate) fn unwatch(&self, _evd: &Evd) {
        let Some(proxy) = &self.inner.fd else { return };
        let mut watched = lock(&proxy.watched);
        // Only removals: an EVD's detach cannot make an add fail.
        let _ = watched.sync(&self.evds());
    }

    /// The file descriptor of a CNO made by [`Cno::create_with_fd`] (`None` for one made
    /// by [`Cno::create`], and once [`Cno::free`] closed it). The CNO owns it: poll it,
    /// put it into epoll or select, never close it.
    pub fn fd(&self) -> Option<RawFd> {
        let proxy = self.inner.fd.as_ref()?;
        lock(&proxy.watched).epoll.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// `dat_cno_trigger`: never blocks. On a CNO with a file descriptor, consumes what made
    /// the fd readable, re-arms, and returns an attached EVD with an event waiting (a hint),
    /// or `None` if none has one; the fd then stays unreadable until a new event arrives
    /// or while other EVDs still hold events (see the module docs). On a plain CNO, the
    /// same look without the fd: `dat_cno_wait` with no time to wait, answering `None`
    /// rather than DAT_TIMEOUT_EXPIRED.
    pub fn trigger(&self) -> DatResult<Option<Evd>> {
        if self.inner.dead.load(Ordering::Acquire) {
            return Err(dead("dat_cno_trigger"));
        }
        let Some(proxy) = &self.inner.fd else {
            let evds = self.evds();
            return Ok(evds.into_iter().find(|e| e.triggers_cno() && e.has_events()));
        };
        let mut watched = lock(&proxy.watched);
        if watched.epoll.is_none() {
            return Err(dead("dat_cno_trigger"));
        }
        // First consume: an event posted after the drain raises the signal again, a
        // completion after the channel's read fires it again once armed below.
        proxy.signal.drain();
        let evds = self.evds();
        watched.sync(&evds)?;
        // Every attached EVD's channel, a disabled one's too (it was armed while enabled
        // and may have fired since; left unread it would keep the fd readable). Not a
        // directly waited EVD's: those events are its waiter's.
        for e in &evds {
            e.acknowledge_channel();
        }
        // Then arm and look, each EVD harvested before its arm.
        let pending: Vec<usize> = (0..evds.len())
            .filter(|&i| evds[i].triggers_cno() && evds[i].harvest_and_arm_for_cno())
            .collect();
        let start = proxy.next.load(Ordering::Relaxed);
        let Some(&chosen) = pending.iter().find(|&&i| i >= start).or(pending.first()) else {
            return Ok(None);
        };
        proxy.next.store(chosen + 1, Ordering::Relaxed);
        if pending.len() > 1 {
            // The others still hold events: the fd stays readable for them.
            proxy.signal.raise();
        }
        Ok(Some(evds[chosen].clone()))
    }

    /// `dat_cno_wait(timeout)`: an attached, enabled EVD with an event waiting (a hint: the
    /// consumer should look at all of them), or DAT_TIMEOUT_EXPIRED. `None` (the man page's
    /// NULL handle with DAT_SUCCESS): the waiters were released because the IA was closed or
    /// the last EVD of the CNO was freed.
    pub fn wait(&self, timeout: Option<Duration>) -> DatResult<Option<Evd>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let _waiting = Waiting::enter(&self.inner.waiters);
        let releases = self.inner.releases.load(Ordering::Acquire);
        loop {
            // A release (IA closed, last EVD freed) before the dead handle: the IA close
            // does both, and its waiters get the NULL EVD.
            if self.inner.releases.load(Ordering::Acquire) != releases {
                return Ok(None);
            }
            if self.inner.dead.load(Ordering::Acquire) {
                return Err(dead("dat_cno_wait"));
            }
            // Announced before the EVDs are listed: an EVD attached or enabled after the list
            // was taken pokes the notifier ([`Cno::attach`], [`Evd::enable`]), which wakes the
            // sleep below, and the next round arms that EVD's CQ too.
            let ticket = self.inner.notifier.announce();
            let evds = self.evds();
            // An event already there: no CQ is armed for nothing.
            if let Some(ready) = evds.iter().find(|e| e.triggers_cno() && e.has_events()) {
                return Ok(Some(ready.clone()));
            }
            // A channel that keeps waking the sleep with nothing to take (completions that
            // make no event) must not keep the wait past its timeout: the sleep reports a
            // timeout only when nothing is ready. (As `dat_evd_wait` does.)
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(timed_out());
            }
            // The completion channels themselves, not their fd numbers: held until the sleep
            // is over, so an EVD freed meanwhile cannot close an fd under the poll (or have
            // its number reused by another file).
            let channels: Vec<CompChannel> =
                evds.iter().filter(|e| e.triggers_cno()).filter_map(Evd::arm_for_cno).collect();
            // Checked after announcing and arming: an event (or a release) before this is
            // seen here, one after it wakes the sleep.
            if self.inner.releases.load(Ordering::Acquire) != releases {
                return Ok(None);
            }
            if let Some(ready) = evds.iter().find(|e| e.triggers_cno() && e.has_events()) {
                return Ok(Some(ready.clone()));
            }
            // The EVDs are not held while sleeping: dat_evd_free must work meanwhile (it
            // kicks this sleep, and the next round looks at the EVDs left).
            drop(evds);
            // Any number of them (one per DTO EVD, often one EVD per connection): the wake-up
            // below acknowledges every EVD, so it needs no index of the readable fds.
            let fds: Vec<RawFd> = channels.iter().map(AsRawFd::as_raw_fd).collect();
            let woken = ticket.sleep_on_all(&fds, deadline);
            drop(channels);
            match woken {
                Ok(Woken::Timeout) => return Err(timed_out()),
                // A release or a free: the loop's checks say which.
                Ok(Woken::Kicked(_)) => {}
                Ok(Woken::Ready(_)) => {
                    for e in &self.evds() {
                        e.acknowledge_channel();
                    }
                }
                Err(e) => {
                    return Err(
                        DatError::internal_error().with_detail(format!("dat_cno_wait: {e}"))
                    );
                }
            }
        }
    }
}

fn timed_out() -> DatError {
    DatError::timeout_expired().with_detail("dat_cno_wait: no attached EVD got an event in time")
}

// ----- the proxy agent, query and free (dat_cno_modify_agent, _query, _free) -----

/// `DAT_OS_WAIT_PROXY_AGENT`: called with the triggering EVD when the CNO is triggered,
/// then cleared (one shot, as OFA dapl's `dapl_internal_cno_trigger` does); the consumer
/// sets it again with [`Cno::modify_agent`]. It runs on the thread that produced the event
/// (a connection-manager or posting thread), so it must be quick and must not block.
///
/// The CNO is triggered by events posted to an attached, enabled EVD that no waiter of the
/// EVD takes (connection, async, software events). DTO completions wake a sleeping
/// `dat_cno_wait` through the CQs' completion channels, which the agent does not see: a
/// consumer relying on the agent for DTOs must also wait on the CNO.
/// When the waiters are released (the IA closed, the last EVD freed) the agent is called
/// with `None`, the man page's NULL handle.
pub type ProxyAgent = Arc<dyn Fn(Option<&Evd>) + Send + Sync>;

struct AgentSlot(Option<ProxyAgent>);

impl std::fmt::Debug for AgentSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(agent)" } else { "None" })
    }
}

/// `DAT_CNO_PARAM`, as `dat_cno_query` reports it.
#[derive(Clone)]
pub struct CnoParam {
    /// `ia_handle`.
    pub ia: Ia,
    /// `proxy`: the agent (`proxy_type` `DAT_PROXY_TYPE_AGENT`), or none
    /// (`DAT_PROXY_TYPE_NONE`, also after the agent was used up by a trigger).
    pub agent: Option<ProxyAgent>,
}

impl std::fmt::Debug for CnoParam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CnoParam")
            .field("ia", &self.ia.name())
            .field("agent", &AgentSlot(self.agent.clone()))
            .finish()
    }
}

impl Cno {
    /// `dat_cno_create(ia, agent)`.
    pub fn create_with_agent(ia: &Ia, agent: Option<ProxyAgent>) -> DatResult<Cno> {
        let cno = Cno::create(ia)?;
        cno.modify_agent(agent);
        Ok(cno)
    }

    /// `dat_cno_modify_agent`: the agent the next trigger calls (`None`:
    /// `DAT_OS_WAIT_PROXY_AGENT_NULL`).
    pub fn modify_agent(&self, agent: Option<ProxyAgent>) {
        self.inner.agent.lock().unwrap_or_else(|e| e.into_inner()).0 = agent;
    }

    /// `dat_cno_query`: every field of `DAT_CNO_PARAM`.
    pub fn query(&self) -> CnoParam {
        let agent = self.inner.agent.lock().unwrap_or_else(|e| e.into_inner()).0.clone();
        CnoParam { ia: self.inner.ia.clone(), agent }
    }

    /// An event no waiter of `evd` takes arrived on it: wake the CNO's waiter, make its fd
    /// readable, and call the agent once.
    pub(crate) fn triggered_by(&self, evd: &Evd) {
        self.inner.notifier.notify();
        if let Some(proxy) = &self.inner.fd {
            proxy.signal.raise();
        }
        let agent = self.inner.agent.lock().unwrap_or_else(|e| e.into_inner()).0.take();
        if let Some(agent) = agent {
            agent(Some(evd));
        }
    }

    /// An attached EVD's direct waiter returned, or the EVD was enabled: a sleeping wait
    /// looks at the EVDs again (and arms that one's CQ), without calling the agent; a CNO
    /// with a file descriptor arms it and looks at it now ([`Cno::watch`]).
    pub(crate) fn rescan(&self, evd: &Evd) {
        self.inner.notifier.notify();
        self.watch(evd);
    }

    /// `dat_cno_free`: refused, as the man page says, while an EVD is attached or a thread
    /// is blocked in `dat_cno_wait` (`DAT_INVALID_STATE/CNO_IN_USE`; the caller keeps its
    /// handle). Later waits on other handles of it fail (`DAT_INVALID_HANDLE/CNO`).
    pub fn free(self) -> Result<(), (Cno, DatError)> {
        let attached = self.evds().len();
        if attached > 0 {
            let e =
                DatError::invalid_state(subtype::INVALID_STATE_CNO_IN_USE).with_detail(format!(
                    "dat_cno_free: {attached} EVD(s) still trigger the CNO; detach them \
                     (dat_evd_modify_cno NULL) or free them first"
                ));
            return Err((self, e));
        }
        let waiting = self.inner.waiters.load(Ordering::Acquire);
        if waiting > 0 {
            let e =
                DatError::invalid_state(subtype::INVALID_STATE_CNO_IN_USE).with_detail(format!(
                    "dat_cno_free: {waiting} thread(s) are blocked in dat_cno_wait; wake them \
                     first (post a software event on an EVD attached to the CNO)"
                ));
            return Err((self, e));
        }
        self.inner.dead.store(true, Ordering::Release);
        if let Some(proxy) = &self.inner.fd {
            // The consumer's fd is closed now, whoever else still holds the CNO.
            let mut watched = lock(&proxy.watched);
            watched.epoll = None;
            watched.channels.clear();
        }
        Ok(())
    }

    /// An EVD of this CNO was freed: if it was the last, the waiters are released with a
    /// NULL EVD (the `dat_cno_wait` man page).
    pub(crate) fn evd_freed(&self) {
        if self.evds().is_empty() {
            self.inner.release_waiters();
        }
    }
}

impl CnoInner {
    /// The current waiters return `Ok(None)` and the agent is called with `None`.
    fn release_waiters(&self) {
        self.releases.fetch_add(1, Ordering::AcqRel);
        self.notifier.wake_all(WakeReason::Abort);
        if let Some(proxy) = &self.fd {
            // The event loop calls dat_cno_trigger and learns it (no EVD left, or the IA
            // closed: the handle is dead).
            proxy.signal.raise();
        }
        let agent = self.agent.lock().unwrap_or_else(|e| e.into_inner()).0.take();
        if let Some(agent) = agent {
            agent(None);
        }
    }
}

impl crate::ia::IaChild for CnoInner {
    fn kind(&self) -> crate::ia::ChildKind {
        crate::ia::ChildKind::Cno
    }

    /// The waiters are released with a NULL EVD; the handle is dead.
    fn abort_for_ia_close(self: Arc<Self>) {
        self.dead.store(true, Ordering::Release);
        self.release_waiters();
    }
}

fn dead(verb: &str) -> DatError {
    DatError::invalid_handle(subtype::INVALID_HANDLE_CNO)
        .with_detail(format!("{verb}: the CNO was freed (or its IA closed)"))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts a thread in `dat_cno_wait` for as long as it is there.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn enter(count: &'a AtomicUsize) -> Waiting<'a> {
        count.fetch_add(1, Ordering::AcqRel);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
