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

use crate::error::{DatError, DatResult};
use crate::evd::{Evd, Notifier, WakeReason, Woken};
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
}

impl Cno {
    /// `dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL)`.
    pub fn create(ia: &Ia) -> DatResult<Cno> {
        let notifier = Notifier::new().map_err(|e| {
            DatError::insufficient_resources(subtype::RESOURCE_MEMORY)
                .with_detail(format!("dat_cno_create: eventfd: {e}"))
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
                return Err(dead());
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

    /// An event no waiter of `evd` takes arrived on it: wake the CNO's waiter and call the
    /// agent once.
    pub(crate) fn trigger(&self, evd: &Evd) {
        self.inner.notifier.notify();
        let agent = self.inner.agent.lock().unwrap_or_else(|e| e.into_inner()).0.take();
        if let Some(agent) = agent {
            agent(Some(evd));
        }
    }

    /// An attached EVD's direct waiter returned, or the EVD was enabled: a sleeping wait
    /// looks at the EVDs again (and arms that one's CQ), without calling the agent.
    pub(crate) fn rescan(&self) {
        self.inner.notifier.notify();
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

fn dead() -> DatError {
    DatError::invalid_handle(subtype::INVALID_HANDLE_CNO)
        .with_detail("dat_cno_wait: the CNO was freed (or its IA closed)")
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
