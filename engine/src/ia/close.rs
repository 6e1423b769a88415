//! `dat_ia_close`: graceful (refused while the IA has objects) and abrupt (every object's
//! activity torn down at once).
//!
//! Objects hold their IA (an `Ia` clone), so an IA lives as long as any of them; the
//! consumer's handles stay memory-safe after any close. What close decides is what happens
//! to the work in flight:
//!
//! - Graceful: `DAT_INVALID_STATE/IA_IN_USE` while any other handle of the IA exists — an
//!   object created on it (PZ, LMR, EVD, CNO, EP, SRQ, PSP, RSP) or a clone of the handle.
//!   The message counts them, the active ones by kind. (A C layer that made the async EVD
//!   itself in `dat_ia_open` frees it before asking, as OFA's graceful close does.)
//! - Abrupt: the cascading destroy of the man page, in OFA's order (endpoints, service
//!   points, EVDs, CNOs): every connection is aborted without further events (the
//!   endpoints end in DISCONNECTED), every listener stops, every waiter in `dat_evd_wait`
//!   or `dat_cno_wait` returns `DAT_ABORT` and so does every later wait. The objects'
//!   device resources go as their last handles drop (a C layer drops its whole handle
//!   table for the IA).
//!
//! The IA learns of its active objects through [`Ia::register`]: each keeps a weak entry
//! ([`IaChild`]) that abrupt close uses; dead entries are pruned as new ones come.

use super::Ia;
use crate::error::DatError;
use ferrodat_abi::dat::{CloseFlags, close_flags, subtype};
use std::sync::{Arc, Mutex, Weak};

/// `dat_ia_close`'s flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseMode {
    /// `DAT_CLOSE_ABRUPT_FLAG`: tear everything down.
    Abrupt,
    /// `DAT_CLOSE_GRACEFUL_FLAG`: only an IA with no objects left.
    Graceful,
}

impl CloseMode {
    /// The mode for a `DAT_CLOSE_FLAGS` value; `None` for anything else (a C layer reports
    /// `DAT_INVALID_PARAMETER/ARG2`).
    pub const fn from_close_flags(flags: CloseFlags) -> Option<CloseMode> {
        match flags {
            close_flags::ABRUPT => Some(CloseMode::Abrupt),
            close_flags::GRACEFUL => Some(CloseMode::Graceful),
            _ => None,
        }
    }
}

/// The order abrupt close tears kinds down in (OFA's `dapl_ia_abrupt_close`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ChildKind {
    /// An endpoint: its connection is aborted.
    Endpoint,
    /// A PSP or RSP: it stops listening.
    ServicePoint,
    /// An EVD: its waiters get DAT_ABORT.
    Evd,
    /// A CNO: its waiters get DAT_ABORT.
    Cno,
}

impl ChildKind {
    fn name(self) -> &'static str {
        match self {
            ChildKind::Endpoint => "endpoint",
            ChildKind::ServicePoint => "service point",
            ChildKind::Evd => "EVD",
            ChildKind::Cno => "CNO",
        }
    }
}

/// An object of an IA with activity that abrupt close must end.
pub(crate) trait IaChild: Send + Sync {
    /// Which kind it is.
    fn kind(&self) -> ChildKind;
    /// Ends its activity for an abrupt IA close.
    fn abort_for_ia_close(self: Arc<Self>);
}

/// The IA's weak list of its active objects.
#[derive(Default)]
pub(super) struct Children {
    list: Mutex<Vec<Weak<dyn IaChild>>>,
}

impl std::fmt::Debug for Children {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Children").field("entries", &lock(&self.list).len()).finish()
    }
}

impl Children {
    fn live(&self) -> Vec<Arc<dyn IaChild>> {
        lock(&self.list).iter().filter_map(Weak::upgrade).collect()
    }
}

impl Ia {
    /// Records an object with activity that an abrupt close must end.
    pub(crate) fn register(&self, child: Weak<dyn IaChild>) {
        let mut list = lock(&self.inner.children.list);
        // Amortised pruning: the list stays within twice the live objects.
        if list.len() >= 64 && list.len().is_power_of_two() {
            list.retain(|w| w.strong_count() > 0);
        }
        list.push(child);
    }

    /// `dat_ia_close(ia, flags)`; see the module docs. A refused graceful close hands the
    /// handle back with the error.
    pub fn close(self, mode: CloseMode) -> Result<(), (Ia, DatError)> {
        match mode {
            CloseMode::Graceful => {
                let others = crate::transient_hold::other_holders(&self.inner);
                if others == 0 {
                    return Ok(());
                }
                let e = DatError::invalid_state(subtype::INVALID_STATE_IA_IN_USE)
                    .with_detail(self.in_use(others));
                Err((self, e))
            }
            CloseMode::Abrupt => {
                let mut live = self.inner.children.live();
                live.sort_by_key(|c| c.kind());
                for child in live {
                    child.abort_for_ia_close();
                }
                Ok(())
            }
        }
    }

    fn in_use(&self, others: usize) -> String {
        let mut counts: Vec<(ChildKind, usize)> = Vec::new();
        for c in self.inner.children.live() {
            match counts.iter_mut().find(|(k, _)| *k == c.kind()) {
                Some((_, n)) => *n += 1,
                None => counts.push((c.kind(), 1)),
            }
        }
        counts.sort();
        let named: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {}", k.name())).collect();
        format!(
            "dat_ia_close(GRACEFUL) of {}: {others} object(s) or handle(s) still use the IA \
             ({}); free them first, or close with DAT_CLOSE_ABRUPT_FLAG",
            self.name(),
            if named.is_empty() {
                "PZs, LMRs, SRQs or handle clones".into()
            } else {
                named.join(", ")
            }
        )
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
