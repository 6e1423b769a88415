//! The HCA engine of one process: its tables of CQs, QPs, SRQs and memory regions, the
//! fabric membership, and the two entry points a driver calls — a doorbell was rung, and
//! progress is wanted — plus an optional progress thread.
//!
//! # Driving model
//!
//! softhca does its work on the threads that call it. Ringing a send doorbell executes the
//! new WQEs right away on the caller's thread; polling an empty CQ should call
//! [`Engine::progress`], which reads the peers' packets (answering requests, completing our
//! own) and runs timers. Everything runs under one mutex per process and HCA.
//!
//! A process that never polls still answers RDMA READ, WRITE, atomics and SENDs as a real
//! HCA would if it runs the progress thread ([`Engine::start_progress_thread`]): it spins
//! briefly after work, then sleeps on the fabric's futex until a peer pushes a packet or
//! a timer falls due, so an idle device costs no CPU.

use super::app_memory::AppSpan;
use super::completion_queue::CompletionQueue;
use super::cqe::CqProducer;
use super::events::EventSink;
use super::mr::{MemoryRegion, MemoryRegions};
use super::queue_pair::{Hardware, Link, QpAttributes, QpSetup, QueuePair};
use super::shared_receive_queue::{SharedReceiveQueue, SrqSetup};
use crate::fabric::{FabricDir, FabricError, Gid, Instance, QpAllocation, Registry};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Capacity of each QP's outbound ring.
const RING_BYTES: usize = 256 * 1024;

/// Progress-thread passes without work before it sleeps.
const IDLE_SPINS: u32 = 2_000;

/// What a CREATE_CQ tells the engine.
pub struct CqSetup {
    /// CQ number.
    pub cqn: u32,
    /// The consumer's handle.
    pub user_handle: u64,
    /// The entries.
    pub buf: AppSpan,
    /// The 8-byte doorbell record.
    pub dbrec: AppSpan,
    /// Entries (a power of two).
    pub ncqe: u32,
    /// 64 or 128.
    pub cqe_size: usize,
    /// Receives completion events.
    pub channel: Option<Arc<dyn EventSink>>,
    /// Receives the CQ error event.
    pub async_events: Option<Arc<dyn EventSink>>,
}

struct Tables {
    regions: MemoryRegions,
    cqs: HashMap<u32, CompletionQueue>,
    srqs: HashMap<u32, SharedReceiveQueue>,
    qps: HashMap<u32, QueuePair>,
    qp_events: HashMap<u32, Arc<dyn EventSink>>,
    /// Pending slot -> QPN.
    slots: HashMap<u16, u32>,
    /// QPs with work no notification will announce (timers, full rings, unattached peers).
    busy: BTreeSet<u32>,
    /// Registries of the HCAs our peers are on, by GID.
    peers: HashMap<Gid, Registry>,
    scratch: Vec<u8>,
}

impl Tables {
    /// Runs `f` on QP `qpn` with the rest of the hardware, then files it as busy or not.
    fn with_qp(&mut self, qpn: u32, f: impl FnOnce(&mut QueuePair, &mut Hardware<'_>)) {
        let Some(qp) = self.qps.get_mut(&qpn) else { return };
        let events = self.qp_events.get(&qpn);
        let mut hw = Hardware {
            regions: &self.regions,
            cqs: &mut self.cqs,
            srqs: &mut self.srqs,
            async_events: events,
            scratch: &mut self.scratch,
            now: Instant::now(),
        };
        f(qp, &mut hw);
        if qp.needs_polling() {
            self.busy.insert(qpn);
        } else {
            self.busy.remove(&qpn);
        }
    }
}

/// The per-process, per-HCA engine.
pub struct Engine {
    fabric: FabricDir,
    registry: Registry,
    instance: Instance,
    tables: Mutex<Tables>,
    progress_thread: Mutex<Option<(Arc<AtomicBool>, JoinHandle<()>)>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("hca", &self.registry.name()).finish()
    }
}

impl Engine {
    /// Joins the fabric as HCA `name` with `gid` (in `$FERRODAT_SOFTHCA_SHM_DIR` or
    /// `/dev/shm/ferrodat-softhca`).
    pub fn open(name: &str, gid: Gid) -> Result<Arc<Engine>, FabricError> {
        Self::open_in(FabricDir::from_env(), name, gid)
    }

    /// Joins the fabric in `fabric` (tests use private directories).
    pub fn open_in(fabric: FabricDir, name: &str, gid: Gid) -> Result<Arc<Engine>, FabricError> {
        let registry = fabric.open_hca(name, gid)?;
        let instance = registry.register_instance()?;
        Ok(Arc::new(Engine {
            fabric,
            registry,
            instance,
            tables: Mutex::new(Tables {
                regions: MemoryRegions::default(),
                cqs: HashMap::new(),
                srqs: HashMap::new(),
                qps: HashMap::new(),
                qp_events: HashMap::new(),
                slots: HashMap::new(),
                busy: BTreeSet::new(),
                peers: HashMap::new(),
                scratch: Vec::new(),
            }),
            progress_thread: Mutex::new(None),
        }))
    }

    fn tables(&self) -> MutexGuard<'_, Tables> {
        // A panic while holding the lock leaves tables that are still consistent enough to
        // tear down; keep going rather than poison every later call.
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The shared registry of this HCA (allocators for CQNs, PDNs, SRQNs, keys).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    // ======================================================= objects (kernel side)

    /// REG_MR.
    pub fn add_memory_region(&self, mr: MemoryRegion) {
        self.tables().regions.insert(mr);
    }

    /// DEREG_MR.
    pub fn remove_memory_region(&self, key: u32) {
        self.tables().regions.remove(key);
    }

    /// CREATE_CQ.
    pub fn add_cq(&self, s: CqSetup) {
        let producer = CqProducer::new(s.buf, s.dbrec, s.ncqe, s.cqe_size);
        let cq = CompletionQueue::new(s.cqn, s.user_handle, producer, s.channel, s.async_events);
        self.tables().cqs.insert(s.cqn, cq);
    }

    /// DESTROY_CQ: returns the completion events it reported.
    pub fn remove_cq(&self, cqn: u32) -> u32 {
        self.tables().cqs.remove(&cqn).map(|cq| cq.events_reported()).unwrap_or(0)
    }

    /// The consumer rang the CQ doorbell with `arm_word` (UAR offset 0x20).
    pub fn arm_cq(&self, cqn: u32, arm_word: u32) {
        if let Some(cq) = self.tables().cqs.get_mut(&cqn) {
            cq.arm(arm_word);
        }
    }

    /// CREATE_SRQ.
    pub fn add_srq(&self, s: SrqSetup, async_events: Option<Arc<dyn EventSink>>) {
        self.tables().srqs.insert(s.srqn, SharedReceiveQueue::new(s, async_events));
    }

    /// MODIFY_SRQ with a limit.
    pub fn set_srq_limit(&self, srqn: u32, limit: u32) {
        if let Some(srq) = self.tables().srqs.get_mut(&srqn) {
            srq.set_limit(limit);
        }
    }

    /// DESTROY_SRQ.
    pub fn remove_srq(&self, srqn: u32) {
        self.tables().srqs.remove(&srqn);
    }

    /// Allocates a QPN for CREATE_QP.
    pub fn alloc_qpn(&self) -> Result<QpAllocation, FabricError> {
        self.instance.alloc_qpn()
    }

    /// Gives back a QPN allocated by [`Engine::alloc_qpn`] whose QP was never added.
    pub fn free_qpn(&self, qpn: u32) {
        let _ = self.instance.free_qpn(qpn);
    }

    /// CREATE_QP, after [`Engine::alloc_qpn`]: creates the QP's outbound ring.
    pub fn add_qp(
        &self,
        allocation: QpAllocation,
        setup: QpSetup,
        async_events: Option<Arc<dyn EventSink>>,
    ) -> Result<(), FabricError> {
        let ring = self.instance.create_ring(allocation.qpn, 0, Some(RING_BYTES))?;
        let qp = QueuePair::new(setup, Link::new(ring), Instant::now());
        let mut t = self.tables();
        t.qps.insert(allocation.qpn, qp);
        t.slots.insert(allocation.pending_slot, allocation.qpn);
        if let Some(sink) = async_events {
            t.qp_events.insert(allocation.qpn, sink);
        }
        Ok(())
    }

    /// MODIFY_QP (already validated): the data path follows the new state.
    pub fn modify_qp(&self, qpn: u32, state: u8, attrs: QpAttributes) {
        let peer = if state == ferrodat_abi::uverbs::qp_state::RTR {
            self.peer_registry(attrs.dgid)
        } else {
            None
        };
        let _ = self.instance.publish_qp_state(qpn, u32::from(state));
        self.tables().with_qp(qpn, |qp, hw| qp.transition(state, attrs, peer, hw));
    }

    /// DESTROY_QP: drops the QP and its ring, frees the QPN.
    pub fn remove_qp(&self, qpn: u32) {
        let mut t = self.tables();
        t.qps.remove(&qpn);
        t.qp_events.remove(&qpn);
        t.slots.retain(|_, q| *q != qpn);
        t.busy.remove(&qpn);
        drop(t);
        let _ = self.instance.free_qpn(qpn);
    }

    fn peer_registry(&self, gid: Gid) -> Option<Registry> {
        if gid == self.registry.gid() {
            return Some(self.registry.clone());
        }
        if let Some(r) = self.tables().peers.get(&gid) {
            return Some(r.clone());
        }
        let found = self.fabric.find_hca_by_gid(gid).ok().flatten()?;
        self.tables().peers.insert(gid, found.clone());
        Some(found)
    }

    // ======================================================= model entry points

    /// The send doorbell of QP `qpn` rang: execute its new WQEs now.
    pub fn sq_doorbell(&self, qpn: u32) {
        self.tables().with_qp(qpn, |qp, hw| qp.run_requester(hw));
    }

    /// Does whatever work is waiting: packets from peers, full rings, timers. Returns
    /// true if peers had sent packets. Cheap when idle: an atomic read and an empty set.
    pub fn progress(&self) -> bool {
        let pending: Vec<u16> = if self.instance.has_pending() {
            self.instance.take_pending().collect()
        } else {
            Vec::new()
        };
        let mut t = self.tables();
        if pending.is_empty() && t.busy.is_empty() {
            return false;
        }
        // Only packets from peers count as work: busy QPs merely waiting for a response,
        // ring space or a timer must not keep a progress thread spinning.
        let mut qpns: BTreeSet<u32> = t.busy.clone();
        qpns.extend(pending.iter().filter_map(|s| t.slots.get(s).copied()));
        for qpn in qpns {
            t.with_qp(qpn, |qp, hw| {
                qp.run_inbound(hw);
                qp.run_requester(hw);
            });
        }
        !pending.is_empty()
    }

    /// The earliest timer of any QP.
    fn next_deadline(&self) -> Option<Instant> {
        let t = self.tables();
        t.busy.iter().filter_map(|q| t.qps.get(q)).filter_map(|qp| qp.next_deadline()).min()
    }

    /// Starts the progress thread (idempotent). It holds the engine only while it works,
    /// so dropping the last other reference ends it within a second; the owner normally
    /// calls [`Engine::stop_progress_thread`] first.
    pub fn start_progress_thread(self: &Arc<Self>) -> std::io::Result<()> {
        let mut slot = self.progress_thread.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return Ok(());
        }
        let stop = Arc::new(AtomicBool::new(false));
        let engine = Arc::downgrade(self);
        let stop_flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name(format!("softhca-{}", self.registry.name()))
            .spawn(move || {
                let mut idle = 0u32;
                while !stop_flag.load(Ordering::Acquire) {
                    let Some(engine) = engine.upgrade() else { break };
                    if engine.progress() {
                        idle = 0;
                        continue;
                    }
                    idle += 1;
                    if idle < IDLE_SPINS {
                        std::hint::spin_loop();
                        std::thread::yield_now();
                        continue;
                    }
                    idle = 0;
                    let timeout = match engine.next_deadline() {
                        Some(at) => at.saturating_duration_since(Instant::now()),
                        None if engine.tables().busy.is_empty() => Duration::from_secs(1),
                        None => Duration::from_millis(1),
                    };
                    let stop_flag = &stop_flag;
                    engine
                        .instance
                        .wait_for_work(Some(timeout), || stop_flag.load(Ordering::Acquire));
                    drop(engine);
                }
            })?;
        *slot = Some((stop, handle));
        Ok(())
    }

    /// Stops and joins the progress thread, if running.
    pub fn stop_progress_thread(&self) {
        let taken = self.progress_thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((stop, handle)) = taken {
            stop.store(true, Ordering::Release);
            self.instance.waker().wake();
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop_progress_thread();
    }
}
