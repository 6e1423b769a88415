//! [`Instance`]: one process's membership in one HCA.
//!
//! An instance owns a slot of the registry's instance table (pid, start time, random uid,
//! wake word, pending bitmap), the QPNs it allocated, and their outbound rings. Dropping it
//! frees all of that; a process that dies without dropping it is cleaned up by the next
//! sweep.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::FabricError;
use super::layout::registry as reg;
use super::registry::Registry;
use super::ring::RingProducer;
use super::wake::{InstanceWaker, PendingSlots, WaitOutcome};
use crate::owning_process::OwningProcess;

/// A QPN allocated by [`Instance::alloc_qpn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpAllocation {
    /// The QP number (24-bit, >= 0x100).
    pub qpn: u32,
    /// Incremented each time this QP table entry is allocated.
    pub generation: u32,
    /// The pending slot producers set when this QP's inbound ring has records; it comes
    /// back from [`Instance::take_pending`].
    pub pending_slot: u16,
}

/// This process's membership in one HCA (normally one per process and HCA). `Sync`: the
/// methods may be called from several threads.
pub struct Instance {
    /// A forked child's copy gives back neither the QPNs nor the slot: they are the
    /// parent's (`owning_process.rs`).
    owner: OwningProcess,
    registry: Registry,
    index: u16,
    uid: u64,
    local: Mutex<LocalQps>,
}

/// In-process bookkeeping (not shared): which QPNs we own and which pending slots are used.
struct LocalQps {
    owned: HashMap<u32, u16>,
    slots_in_use: [u64; reg::PENDING_SLOTS / 64],
}

impl LocalQps {
    fn alloc_slot(&mut self) -> Option<u16> {
        let (word, bits) =
            self.slots_in_use.iter_mut().enumerate().find(|(_, bits)| **bits != u64::MAX)?;
        let bit = bits.trailing_ones() as usize;
        *bits |= 1 << bit;
        Some((word * 64 + bit) as u16)
    }

    fn free_slot(&mut self, slot: u16) {
        let slot = usize::from(slot) % reg::PENDING_SLOTS;
        self.slots_in_use[slot / 64] &= !(1 << (slot % 64));
    }
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("hca", &self.registry.name())
            .field("index", &self.index)
            .field("uid", &format_args!("{:#018x}", self.uid))
            .finish()
    }
}

impl Instance {
    pub(crate) fn new(registry: Registry, index: u16, uid: u64) -> Self {
        Self {
            owner: OwningProcess::current(),
            registry,
            index,
            uid,
            local: Mutex::new(LocalQps {
                owned: HashMap::new(),
                slots_in_use: [0; reg::PENDING_SLOTS / 64],
            }),
        }
    }

    /// The process that joined (a forked child holds only a copy).
    pub(crate) fn owner(&self) -> OwningProcess {
        self.owner
    }

    fn local(&self) -> MutexGuard<'_, LocalQps> {
        // A panic while holding the lock cannot leave the maps inconsistent in a way that
        // matters more than losing the instance: keep going.
        self.local.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The registry (HCA) this instance belongs to.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The instance's slot in the registry.
    pub fn index(&self) -> u16 {
        self.index
    }

    /// The instance's random unique id.
    pub fn uid(&self) -> u64 {
        self.uid
    }

    /// Allocates a QPN owned by this instance, with a pending slot for its inbound ring.
    /// Fails with `Exhausted` when the instance has 4096 QPs or the QP table is full.
    pub fn alloc_qpn(&self) -> Result<QpAllocation, FabricError> {
        let mut local = self.local();
        let pending_slot = local.alloc_slot().ok_or_else(|| FabricError::Exhausted {
            what: "QPs (pending slots) of one instance",
            capacity: reg::PENDING_SLOTS,
            path: self.registry.path().to_path_buf(),
            hint: "destroy unused QPs of this process",
        })?;
        match self.registry.claim_qpn(self.index, self.uid, pending_slot) {
            Ok((qpn, generation)) => {
                local.owned.insert(qpn, pending_slot);
                Ok(QpAllocation { qpn, generation, pending_slot })
            }
            Err(e) => {
                local.free_slot(pending_slot);
                Err(e)
            }
        }
    }

    /// Frees a QPN of this instance and unlinks its ring file (DESTROY_QP). Peers that
    /// mapped the ring keep their mapping but will see no more records.
    pub fn free_qpn(&self, qpn: u32) -> Result<(), FabricError> {
        let mut local = self.local();
        let Some(slot) = local.owned.remove(&qpn) else {
            return Err(FabricError::InvalidArgument(format!(
                "QPN {qpn:#x} is not owned by this instance of {}",
                self.registry.name()
            )));
        };
        local.free_slot(slot);
        self.registry.release_qpn(qpn, self.uid)
    }

    /// QPNs currently owned by this instance (unordered).
    pub fn owned_qpns(&self) -> Vec<u32> {
        self.local().owned.keys().copied().collect()
    }

    /// Publishes a value (e.g. the QP state) in `qpn`'s table entry for peers to read in
    /// [`QpOwner::published_state`](super::QpOwner::published_state).
    pub fn publish_qp_state(&self, qpn: u32, state: u32) -> Result<(), FabricError> {
        if self.registry.publish_qp_state(qpn, self.uid, state) {
            Ok(())
        } else {
            Err(FabricError::InvalidArgument(format!(
                "QPN {qpn:#x} is not a live QP of this instance of {}",
                self.registry.name()
            )))
        }
    }

    /// Creates (or replaces) the outbound ring of `qpn`, which this instance must own.
    /// `dest_qpn` is the peer QP the first epoch is addressed to (0 = none yet: call
    /// [`RingProducer::reset`] at RTR). `capacity`: bytes of record space, a power of two
    /// in 4 KiB..=1 GiB; `None` = 256 KiB.
    pub fn create_ring(
        &self,
        qpn: u32,
        dest_qpn: u32,
        capacity: Option<usize>,
    ) -> Result<RingProducer, FabricError> {
        if !self.local().owned.contains_key(&qpn) {
            return Err(FabricError::InvalidArgument(format!(
                "cannot create the ring of QPN {qpn:#x}: not owned by this instance of {}",
                self.registry.name()
            )));
        }
        RingProducer::create(&self.registry, qpn, dest_qpn, capacity)
    }

    /// Takes the set of pending slots (QPs whose inbound ring may have records) and clears
    /// it. See [`PendingSlots`].
    pub fn take_pending(&self) -> PendingSlots<'_> {
        self.registry.wake_area(self.index).take_pending()
    }

    /// True if some pending slot is flagged (does not clear anything).
    pub fn has_pending(&self) -> bool {
        self.registry.wake_area(self.index).has_pending()
    }

    /// Blocks until woken, the timeout passes (`None` = no timeout), or — checked after
    /// announcing the sleep, so nothing published before a wake is missed — a pending slot
    /// is flagged or `has_work()` returns true. Spurious futex returns are absorbed.
    pub fn wait_for_work(
        &self,
        timeout: Option<Duration>,
        has_work: impl FnOnce() -> bool,
    ) -> WaitOutcome {
        self.registry.wake_area(self.index).wait(timeout, has_work)
    }

    /// A handle that wakes this instance from any thread (or, via
    /// [`Registry::waker_for_qp`], from any process).
    pub fn waker(&self) -> InstanceWaker {
        InstanceWaker { registry: self.registry.clone(), index: self.index, uid: self.uid }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if !self.owner.is_current() {
            return;
        }
        let owned: Vec<u32> = self.local().owned.drain().map(|(qpn, _)| qpn).collect();
        for qpn in owned {
            // Errors here only mean a leftover file, which the next sweep removes.
            let _ = self.registry.release_qpn(qpn, self.uid);
        }
        self.registry.release_instance(self.index, self.uid);
    }
}
