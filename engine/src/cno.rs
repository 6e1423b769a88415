//! Consumer notification objects: one place to sleep for several EVDs. An EVD attached to
//! a CNO (and enabled) wakes it when an event arrives that no waiter of the EVD itself is
//! there to take; `dat_cno_wait` returns one such EVD as a hint, and the consumer then
//! dequeues from its EVDs.
//!
//! Events posted to an EVD (connection, async, software) poke the CNO's notifier; DTO
//! completions wake it through the completion channels of the EVDs' CQs, which the wait
//! arms before it sleeps — the same spin-free arm/re-check/sleep order as `dat_evd_wait`.

use crate::error::{DatError, DatResult};
use crate::evd::{Evd, Notifier, Woken};
use crate::ia::Ia;
use ferrodat_abi::dat::{ret, subtype};
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
}

impl Cno {
    /// `dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL)`.
    pub fn create(ia: &Ia) -> DatResult<Cno> {
        let notifier = Notifier::new().map_err(|e| {
            DatError::insufficient_resources(subtype::RESOURCE_MEMORY)
                .with_detail(format!("dat_cno_create: eventfd: {e}"))
        })?;
        Ok(Cno {
            inner: Arc::new(CnoInner { ia: ia.clone(), notifier, evds: Mutex::new(Vec::new()) }),
        })
    }

    /// `dat_cno_query`: its IA.
    pub fn ia(&self) -> &Ia {
        &self.inner.ia
    }

    pub(crate) fn attach(&self, evd: &Evd) {
        let mut evds = self.inner.evds.lock().unwrap_or_else(|e| e.into_inner());
        evds.retain(|w| w.strong_count() > 0);
        evds.push(evd.downgrade());
    }

    pub(crate) fn detach(&self, evd: &Evd) {
        let mut evds = self.inner.evds.lock().unwrap_or_else(|e| e.into_inner());
        evds.retain(|w| w.strong_count() > 0 && !evd.is(w));
    }

    fn evds(&self) -> Vec<Evd> {
        let evds = self.inner.evds.lock().unwrap_or_else(|e| e.into_inner());
        evds.iter().filter_map(Evd::upgrade).collect()
    }

    /// `dat_cno_wait(timeout)`: an attached, enabled EVD with an event waiting (a hint: the
    /// consumer should look at all of them), or DAT_TIMEOUT_EXPIRED.
    pub fn wait(&self, timeout: Option<Duration>) -> DatResult<Evd> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let evds = self.evds();
            if let Some(ready) = evds.iter().find(|e| e.enabled() && e.has_events()) {
                return Ok(ready.clone());
            }
            let ticket = self.inner.notifier.announce();
            let mut fds = Vec::new();
            for e in evds.iter().filter(|e| e.enabled()) {
                fds.extend(e.arm_for_cno());
            }
            // Re-check after announcing and arming: an event in between is not missed.
            if let Some(ready) = evds.iter().find(|e| e.enabled() && e.has_events()) {
                return Ok(ready.clone());
            }
            match ticket.sleep(&fds, deadline) {
                Ok(Woken::Timeout) => {
                    return Err(DatError::timeout_expired()
                        .with_detail("dat_cno_wait: no attached EVD got an event in time"));
                }
                Ok(Woken::Kicked(_)) => {
                    return Err(DatError::new(ret::ABORT, subtype::NO_SUBTYPE)
                        .with_detail("dat_cno_wait: the CNO is being freed"));
                }
                Ok(Woken::Ready(_)) => {
                    for e in &evds {
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
