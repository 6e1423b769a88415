//! The HCA engine of one process: its tables of CQs, QPs, SRQs and memory regions, the
//! fabric membership, and the two entry points a driver calls — a doorbell was rung, and
//! progress is wanted — plus an optional progress thread.
//!
//! # Driving model
//!
//! softhca does its work on the threads that call it. Ringing a send doorbell executes the
//! new WQEs right away on the caller's thread; polling an empty CQ should call
//! [`Engine::progress`], which reads the peers' packets (answering requests, completing our
//! own), runs timers, and flushes receives posted to a QP in ERR (mlx5 has no receive
//! doorbell; the device finds them in the doorbell record, so one poll sees their flush).
//! Everything runs under one mutex per process and HCA.
//!
//! A process that never polls still answers RDMA READ, WRITE, atomics and SENDs as a real
//! HCA would if it runs the progress thread ([`Engine::start_progress_thread`]; started by
//! itself where a consumer may block, [`Engine::serve_in_background`]): it spins
//! briefly after work, then sleeps on the fabric's futex until a peer pushes a packet or
//! a timer falls due, so an idle device costs no CPU.
//!
//! # Watching doorbells
//!
//! A consumer that never calls the model entry points (unmodified rdma-core under the
//! preload library) gets the hardware-like mode instead
//! ([`Engine::start_progress_thread_watching_doorbells`]): each pass of the progress thread
//! also compares every QP's doorbell record word 1 (the SQ counter) and every CQ's (the arm
//! word) with what it last saw, and the CQ doorbell word (offset 0x20) of every UAR page,
//! and runs the requester or arms the CQ on a change. A first arm (`sn` 0, `ci` 0, "next")
//! writes zero, the value the consumer gave word 1 of the CQ record before CREATE_CQ, so
//! CREATE_CQ puts [`CQ_ARM_WORD_UNARMED`] there, a value no arm word takes (rdma-core never
//! reads the word back): the first arm then changes it too. Without that, two CQs armed
//! one right after the other (perftest's `-e`: the send CQ, then the receive CQ) lost the
//! first arm, whose UAR store the second overwrote, and the program waited forever for
//! that CQ's event. Idle, the thread sleeps with a timeout that doubles from
//! [`WATCH_SLEEP_MIN`] to [`WATCH_SLEEP_MAX`] (without QPs or CQs, [`WATCH_SLEEP_EMPTY`]):
//! a device nobody posts to costs a wake-up every few milliseconds, not a spinning core.
//! Watching, the thread never yields to spin: an application busy-polling its CQ on the
//! same core would keep it off the CPU for a whole time slice. It spins a few passes, then
//! sleeps, asks for a higher scheduling priority (nice -10, when permitted) so that its
//! wake-ups preempt such an application, and finds doorbells within a sleep's length.

use super::app_memory::AppSpan;
use super::completion_queue::CompletionQueue;
use super::cqe::CqProducer;
use super::events::EventSink;
use super::id_map::IdMap;
use super::mr::{MemoryRegion, MemoryRegions};
use super::placement::Imports;
use super::queue_pair::{Hardware, Link, QpAttributes, QpSetup, QueuePair};
use super::shared_receive_queue::{SharedReceiveQueue, SrqSetup};
use super::wire::{PacketHeader, SEGMENT_BYTES};
use crate::fabric::layout::ring as ring_layout;
use crate::fabric::{
    ExportedRegion, FabricDir, FabricError, Gid, Instance, MemoryExport, QpAllocation, Registry,
};
use crate::objects::UarPages;
use crate::owning_process::OwningProcess;
use std::collections::HashMap;
use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Capacity of each QP's outbound ring. Larger rings measured no faster (the ring, the
/// source and the target buffer then compete for the cores' caches) and cost shared memory
/// per QP; a full segment must fit in a record of at most half the ring.
pub const RING_BYTES: usize = 256 * 1024;
const _: () = assert!(
    ring_layout::RECORD_HEADER_BYTES + size_of::<PacketHeader>() + SEGMENT_BYTES
        <= RING_BYTES / 2 - ring_layout::RECORD_HEADER_BYTES
);

/// Progress-thread passes without work before it sleeps.
const IDLE_SPINS: u32 = 2_000;

/// Passes without work before a doorbell-watching progress thread sleeps.
const WATCH_SPINS: u32 = 64;

/// A QP waiting for something only its peer can give (room in its outbound ring, which
/// the peer frees by reading, and wakes it for: `fabric/ring.rs`, "Room") is looked at
/// after sleeps of at most 1 ms with spinning passes in between; once the peers of such
/// QPs have read nothing for this long (stopped, stuck or hostile), the sleeps double up
/// to [`BLOCKED_SLEEP_MAX`] with no spinning in between, instead of spinning for as long
/// as it lasts (63% of a core measured). The first read by a peer, or any packet, ends
/// the back-off.
const BLOCKED_BEFORE_BACKOFF: Duration = Duration::from_millis(200);

/// The longest sleep of a progress thread whose QPs wait on a peer that does not read.
const BLOCKED_SLEEP_MAX: Duration = Duration::from_millis(16);

/// Sleeps in a row of a progress thread waiting on peers that read nothing.
#[derive(Default)]
struct BlockedOnPeers {
    /// Since when, if it is waiting.
    since: Option<Instant>,
    /// Sleeps taken since the back-off started.
    backed_off: u32,
}

impl BlockedOnPeers {
    /// The next sleep of a thread waiting on peers.
    fn sleep(&mut self, now: Instant) -> Duration {
        let since = *self.since.get_or_insert(now);
        if now.duration_since(since) < BLOCKED_BEFORE_BACKOFF {
            return Duration::from_millis(1);
        }
        self.backed_off = self.backed_off.saturating_add(1);
        (Duration::from_millis(1) * (1 << self.backed_off.min(4))).min(BLOCKED_SLEEP_MAX)
    }

    /// Backing off: one look per sleep, no spinning.
    fn backing_off(&self) -> bool {
        self.backed_off > 0
    }

    /// How long an idle progress thread sleeps: until the earliest timer (`deadline`), but
    /// no longer than [`BlockedOnPeers::sleep`] while QPs wait on their peers (`waiting`:
    /// the always list is not empty), and a second when there is neither. Waiting ends the
    /// back-off only once no QP waits.
    fn next_sleep(&mut self, deadline: Option<Instant>, waiting: bool, now: Instant) -> Duration {
        let until_deadline = deadline.map(|at| at.saturating_duration_since(now));
        if !waiting {
            *self = BlockedOnPeers::default();
            return until_deadline.unwrap_or(Duration::from_secs(1));
        }
        // A timer due later must not hold up a QP waiting for ring room (up to an ACK
        // timeout, it used to).
        let blocked = self.sleep(now);
        until_deadline.map_or(blocked, |d| d.min(blocked))
    }
}

/// Inbound rings polled directly at most (the QPs that received most recently).
const MAX_POLLED_RINGS: usize = 8;

/// Progress passes without a record after which a polled ring goes back to notifications.
const POLLED_RING_IDLE_PASSES: u32 = 4_096;

/// Doorbell watching: the first sleep after work.
pub const WATCH_SLEEP_MIN: Duration = Duration::from_micros(50);

/// Doorbell watching: the longest sleep while QPs or CQs exist.
pub const WATCH_SLEEP_MAX: Duration = Duration::from_millis(2);

/// Doorbell watching: the sleep while the device has no QP and no CQ.
pub const WATCH_SLEEP_EMPTY: Duration = Duration::from_millis(50);

/// Word 1 of a CQ's doorbell record from CREATE_CQ until the consumer's first arm, when the
/// doorbells are watched: bits 30 and 31 are clear in every arm word (`sn << 28 | cmd | ci`,
/// `sn` of 2 bits), so no arm leaves the record unchanged (see the module docs).
pub const CQ_ARM_WORD_UNARMED: u32 = 0xffff_ffff;

/// What the doorbell watcher last saw (see the module docs).
#[derive(Default)]
struct DoorbellWatch {
    /// SQ doorbell record word 1 by QPN.
    sq: IdMap<u32, u32>,
    /// CQ doorbell record word 1 by CQN.
    cq: IdMap<u32, u32>,
    /// UAR pages of the contexts, with the last CQ doorbell word of each page.
    uars: Vec<(Weak<UarPages>, Vec<u64>)>,
    /// Reused lists of the QPs to run and the CQs to arm in one pass.
    run: Vec<u32>,
    arm: Vec<(u32, u32)>,
}

/// The parts of a QP's context the hardware changes by itself (see [`Engine::qp_context`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpContext {
    /// The state (an error may have moved the QP to ERR).
    pub state: u8,
    /// The PSN of the next request.
    pub next_send_psn: u32,
    /// The PSN expected of the peer's next request.
    pub next_rcv_psn: u32,
}

/// A running progress thread: its stop flag, its handle, and the process that started it
/// (a child forked since has the engine but not the thread).
struct ProgressThread {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
    started_by: OwningProcess,
}

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
    /// CREATE_CQ's flags: completion timestamps, ignore overrun.
    pub flags: CqFlags,
}

/// The CREATE_CQ flags the HCA acts on (`IB_UVERBS_CQ_FLAGS_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CqFlags {
    /// Every CQE carries the HCA core clock at its writing (`TIMESTAMP_COMPLETION`).
    pub timestamps: bool,
    /// A full ring is overwritten instead of failing the CQ (`IGNORE_OVERRUN`, mlx5's
    /// `cqc.oi`): no CQ error, and the consumer loses what it did not poll.
    pub ignore_overrun: bool,
}

struct Tables {
    regions: MemoryRegions,
    cqs: IdMap<u32, CompletionQueue>,
    srqs: IdMap<u32, SharedReceiveQueue>,
    qps: IdMap<u32, QueuePair>,
    /// Pending slot -> QPN.
    slots: IdMap<u16, u32>,
    /// QPs to run on every pass (waiting for ring space or a peer's ring).
    always: Vec<u32>,
    /// QPs in ERR with a receive queue of their own: every pass reads their receive
    /// doorbell record, so that a receive posted in ERR is flushed as on hardware.
    errored: Vec<u32>,
    /// QPs that had a timer when last run: a superset of those with one now, pruned when
    /// the earliest timer falls due (so filing a timer costs a flag check, not a map
    /// update).
    timers: Vec<u32>,
    /// No timer of a QP on `timers` falls due before this (it may be early: a timer that
    /// was stopped or moved leaves it in place until the next pruning). `None`: no timer.
    earliest: Option<Instant>,
    /// The last clock reading of any pass: never later than the time, possibly earlier.
    last_clock: Instant,
    /// Registries of the HCAs our peers are on, by GID.
    peers: HashMap<Gid, Registry>,
    scratch: Vec<u8>,
    /// Reused list of the QPs one pass visits.
    work: Vec<u32>,
    /// Peers' exported regions our requesters place WRITEs into and READs out of.
    imports: Imports,
    /// `earliest` or the `errored` list may have changed since the last
    /// [`Background::publish`] (which then looks at them; most passes change neither).
    unpublished: bool,
    /// QPs whose inbound ring we poll (producers skip notifying us), with the passes since
    /// each last had records. See `fabric/wake.rs`, "Polled rings".
    polled: Vec<(u32, u32)>,
}

impl Tables {
    /// Runs `f` on QP `qpn` with the rest of the hardware, then files what attention it
    /// needs next. Inlined: each caller has its own `f`, and the data path's two (a
    /// doorbell, a progress pass) are worth the call saved.
    #[inline(always)]
    fn with_qp(&mut self, qpn: u32, f: impl FnOnce(&mut QueuePair, &mut Hardware<'_>)) {
        let Some(qp) = self.qps.get_mut(&qpn) else { return };
        let mut hw = Hardware {
            regions: &mut self.regions,
            cqs: &mut self.cqs,
            srqs: &mut self.srqs,
            scratch: &mut self.scratch,
            now: None,
            coarse_now: self.last_clock,
            imports: &mut self.imports,
        };
        f(qp, &mut hw);
        if let Some(now) = hw.now {
            self.last_clock = now;
        }
        let watch_receives = qp.watches_receives_in_error();
        if watch_receives != qp.on_error_list {
            qp.on_error_list = watch_receives;
            if watch_receives {
                self.errored.push(qpn);
            } else {
                self.errored.retain(|&q| q != qpn);
            }
            self.unpublished = true;
        }
        // Every pass, or at a deadline, or only when told (a doorbell, a packet).
        if qp.needs_every_pass() {
            if !qp.on_always_list {
                qp.on_always_list = true;
                self.always.push(qpn);
            }
            return;
        }
        if let Some(at) = qp.next_deadline() {
            if !qp.on_timer_list {
                qp.on_timer_list = true;
                self.timers.push(qpn);
            }
            if self.earliest.is_none_or(|e| at < e) {
                self.earliest = Some(at);
                self.unpublished = true;
            }
        }
        if qp.on_always_list {
            qp.on_always_list = false;
            if let Some(at) = self.always.iter().position(|&q| q == qpn) {
                self.always.swap_remove(at);
            }
        }
    }

    fn forget_qp(&mut self, qpn: u32) {
        self.qps.remove(&qpn);
        self.slots.retain(|_, q| *q != qpn);
        self.always.retain(|&q| q != qpn);
        self.errored.retain(|&q| q != qpn);
        self.unpublished = true;
        self.timers.retain(|&q| q != qpn);
        self.polled.retain(|&(q, _)| q != qpn);
    }

    /// Polls the QPs on the polled list: those with records go to `found`; those idle for
    /// long go back to notifications.
    #[inline]
    fn poll_rings(&mut self, mut found: impl FnMut(u32)) {
        let mut i = 0;
        while i < self.polled.len() {
            let (qpn, idle) = self.polled[i];
            let Some(qp) = self.qps.get_mut(&qpn) else {
                self.polled.swap_remove(i);
                continue;
            };
            if qp.inbound_may_have_records() {
                self.polled[i].1 = 0;
                found(qpn);
            } else if idle >= POLLED_RING_IDLE_PASSES {
                if qp.set_inbound_polling(false) {
                    found(qpn);
                }
                self.polled.swap_remove(i);
                continue;
            } else {
                self.polled[i].1 = idle + 1;
            }
            i += 1;
        }
    }

    /// Runs a pass of each QP in `qpns` once, in QPN order (a QP can be there twice: a
    /// polled ring and a pending slot, say).
    #[inline(always)]
    fn run_each_once(&mut self, qpns: &mut [u32]) {
        if let [qpn] = *qpns {
            // The usual pass: one ring had records (nothing to sort or skip).
            self.run_pass(qpn);
            return;
        }
        qpns.sort_unstable();
        let mut last = None;
        for &qpn in qpns.iter() {
            if last != Some(qpn) {
                last = Some(qpn);
                self.run_pass(qpn);
            }
        }
    }

    /// A progress pass of QP `qpn`.
    #[inline(always)]
    fn run_pass(&mut self, qpn: u32) {
        self.with_qp(qpn, |qp, hw| qp.run_pass(hw));
    }

    /// Starts polling the inbound ring of `qpn`, which just had records (unless the list
    /// is full).
    fn start_polling(&mut self, qpn: u32) {
        let Some(qp) = self.qps.get_mut(&qpn) else { return };
        if self.polled.iter().any(|&(q, _)| q == qpn) {
            qp.set_inbound_polling(true); // a no-op unless the QP re-attached its ring
        } else if self.polled.len() < MAX_POLLED_RINGS {
            qp.set_inbound_polling(true);
            self.polled.push((qpn, 0));
        }
    }

    /// A value that changes when a peer reads the outbound ring of a QP on the always
    /// list (what such a QP usually waits for).
    fn always_read_positions(&self) -> u64 {
        self.always.iter().filter_map(|qpn| self.qps.get(qpn)).fold(0, |sum, qp| {
            sum.wrapping_mul(0x100_0000_01b3).wrapping_add(qp.outbound_read_position())
        })
    }

    /// Stops polling every ring (before a thread sleeps). A QP whose ring may have
    /// received records unannounced goes on the always list, for the next pass; returns
    /// true if there is one.
    fn stop_polling_all(&mut self) -> bool {
        let mut records = false;
        for (qpn, _) in std::mem::take(&mut self.polled) {
            if let Some(qp) = self.qps.get_mut(&qpn)
                && qp.set_inbound_polling(false)
            {
                records = true;
                if !qp.on_always_list {
                    qp.on_always_list = true;
                    self.always.push(qpn);
                }
            }
        }
        records
    }

    /// Adds the QPs in ERR with receives posted since their last flush to `work`.
    fn receives_to_flush(&self, work: &mut Vec<u32>) {
        for &qpn in &self.errored {
            if self.qps.get(&qpn).is_some_and(QueuePair::has_new_receives) {
                work.push(qpn);
            }
        }
    }

    /// Adds the QPs whose timer is due at `now` to `work`, prunes the QPs without a
    /// timer from the list and recomputes the earliest timer.
    fn due_timers(&mut self, now: Instant, work: &mut Vec<u32>) {
        if self.earliest.is_none_or(|e| e > now) {
            return;
        }
        self.earliest = None;
        self.unpublished = true;
        let mut i = 0;
        while i < self.timers.len() {
            let qpn = self.timers[i];
            let deadline = self.qps.get(&qpn).and_then(QueuePair::next_deadline);
            match deadline {
                Some(at) => {
                    if at <= now {
                        work.push(qpn);
                    }
                    if self.earliest.is_none_or(|e| at < e) {
                        self.earliest = Some(at);
                    }
                    i += 1;
                }
                None => {
                    if let Some(qp) = self.qps.get_mut(&qpn) {
                        qp.on_timer_list = false;
                    }
                    self.timers.swap_remove(i);
                }
            }
        }
    }

    /// The earliest timer, if any (exact: asks every QP on the list).
    fn earliest_timer(&self) -> Option<Instant> {
        self.timers.iter().filter_map(|q| self.qps.get(q).and_then(QueuePair::next_deadline)).min()
    }
}

/// Summary of the tables' background work, readable without the lock, so that an idle
/// poll costs an atomic load or two rather than a lock.
struct Background {
    /// Some QP needs every pass.
    always: AtomicBool,
    /// Some QP in ERR has its receive doorbell record watched.
    errored: AtomicBool,
    /// Nanoseconds since `epoch` of the earliest timer; `u64::MAX` for none.
    earliest_ns: AtomicU64,
    epoch: Instant,
    /// Idle polls since the clock was last read for timers.
    idle_polls: AtomicU32,
    /// Some inbound ring is polled directly: every pass looks at it.
    polling: AtomicBool,
    /// Threads of this engine about to sleep or asleep: rings must not start being polled
    /// (a sleeper would not be told about their records).
    sleepy: AtomicU32,
}

/// Idle polls between two clock reads for timers: a clock read costs as much as the rest
/// of an idle poll, and the shortest timer (an RNR back-off of 10 µs) tolerates the delay.
const POLLS_PER_CLOCK_READ: u32 = 32;

impl Background {
    fn publish(&self, t: &mut Tables) {
        let always = !t.always.is_empty();
        if self.always.load(Ordering::Relaxed) != always {
            self.always.store(always, Ordering::Release);
        }
        if !std::mem::take(&mut t.unpublished) {
            return;
        }
        let errored = !t.errored.is_empty();
        if self.errored.load(Ordering::Relaxed) != errored {
            self.errored.store(errored, Ordering::Release);
        }
        let ns = t
            .earliest
            .map_or(u64::MAX, |at| at.saturating_duration_since(self.epoch).as_nanos() as u64);
        if self.earliest_ns.load(Ordering::Relaxed) != ns {
            self.earliest_ns.store(ns, Ordering::Release);
        }
    }

    /// Records whether some inbound ring is polled directly (every pass must then look).
    #[inline(always)]
    fn note_polling(&self, t: &Tables) {
        let polling = !t.polled.is_empty();
        if self.polling.load(Ordering::Relaxed) != polling {
            self.polling.store(polling, Ordering::Relaxed);
        }
    }

    /// Some QP needs every pass.
    fn always(&self) -> bool {
        self.always.load(Ordering::Acquire)
    }

    /// The time, if a timer may be due: the clock is read only every
    /// [`POLLS_PER_CLOCK_READ`] calls, and only while some timer runs.
    fn timer_clock(&self) -> Option<Instant> {
        let ns = self.earliest_ns.load(Ordering::Acquire);
        if ns == u64::MAX {
            return None;
        }
        // A plain load and store, not a read-modify-write: the count only spaces out clock
        // reads, so an increment lost to a concurrent poller costs nothing, while a locked
        // instruction on every poll would.
        let polls = self.idle_polls.load(Ordering::Relaxed);
        self.idle_polls.store(polls.wrapping_add(1), Ordering::Relaxed);
        if !polls.is_multiple_of(POLLS_PER_CLOCK_READ) {
            return None;
        }
        let now = Instant::now();
        (now.saturating_duration_since(self.epoch).as_nanos() as u64 >= ns).then_some(now)
    }
}

/// The per-process, per-HCA engine.
pub struct Engine {
    fabric: FabricDir,
    registry: Registry,
    instance: Instance,
    tables: Mutex<Tables>,
    /// Regions of ours that peers may write directly, by key index (`memory_export.rs`).
    exports: Mutex<HashMap<u32, MemoryExport>>,
    background: Background,
    progress_thread: Mutex<Option<ProgressThread>>,
    /// The owner said it polls everything itself: [`Engine::serve_in_background`] starts
    /// no thread ([`crate::device::ENV_PROGRESS_THREAD`] `=0`).
    background_refused: AtomicBool,
    /// The progress thread watches doorbells (hardware-like mode).
    watching: AtomicBool,
    watch: Mutex<DoorbellWatch>,
    health: DeviceHealth,
}

/// Whether the device still works, and who hears when it stops (see
/// [`Engine::is_fatal`]).
#[derive(Default)]
struct DeviceHealth {
    /// [`crate::fabric::mapping_losses`] when last looked at: a change is worth a look at
    /// the registry.
    losses_seen: AtomicU32,
    /// DEVICE_FATAL was reported: every QP is in ERR and commands that make or change
    /// objects fail with ENOLINK (EIO before Linux 5.18).
    fatal: AtomicBool,
    /// Who hears of device-wide events.
    sinks: Mutex<DeviceSinks>,
}

/// The async event files of the contexts opened on this device (weak: a closed context
/// drops out), and whether DEVICE_FATAL went to them: a context opened after that is told
/// at once, under the same lock, so that each context hears it exactly once.
#[derive(Default)]
struct DeviceSinks {
    sinks: Vec<Weak<dyn EventSink>>,
    fatal_reported: bool,
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
        let (registry, instance) = fabric.join_hca(name, gid)?;
        Ok(Arc::new(Engine {
            fabric,
            registry,
            instance,
            tables: Mutex::new(Tables {
                regions: MemoryRegions::default(),
                cqs: IdMap::default(),
                srqs: IdMap::default(),
                qps: IdMap::default(),
                slots: IdMap::default(),
                always: Vec::new(),
                errored: Vec::new(),
                timers: Vec::new(),
                earliest: None,
                last_clock: Instant::now(),
                unpublished: false,
                polled: Vec::new(),
                peers: HashMap::new(),
                scratch: Vec::new(),
                work: Vec::new(),
                imports: Imports::default(),
            }),
            exports: Mutex::new(HashMap::new()),
            background: Background {
                always: AtomicBool::new(false),
                errored: AtomicBool::new(false),
                earliest_ns: AtomicU64::new(u64::MAX),
                epoch: Instant::now(),
                idle_polls: AtomicU32::new(0),
                polling: AtomicBool::new(false),
                sleepy: AtomicU32::new(0),
            },
            progress_thread: Mutex::new(None),
            background_refused: AtomicBool::new(false),
            watching: AtomicBool::new(false),
            watch: Mutex::new(DoorbellWatch::default()),
            health: DeviceHealth::default(),
        }))
    }

    fn tables(&self) -> MutexGuard<'_, Tables> {
        // A panic while holding the lock leaves tables that are still consistent enough to
        // tear down; keep going rather than poison every later call.
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The process that opened the engine, its instance's (a forked child holds only a
    /// copy, whose drop releases none of the shared state: `owning_process.rs`).
    pub fn owner(&self) -> OwningProcess {
        self.instance.owner()
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

    /// ALLOC_MW: a free window with key `key` in PD `pdn`.
    pub fn add_memory_window(&self, key: u32, pdn: u32) {
        self.tables().regions.insert_window(key, pdn);
    }

    /// The current key of window `index` and its range if bound (what a bind did).
    pub fn memory_window(&self, index: u32) -> Option<(u32, Option<super::mr::BoundRange>)> {
        self.tables().regions.window(index)
    }

    /// Exports the region with key `key` (just registered from a shared file mapping),
    /// so that peers place RDMA WRITEs into it and READs out of it directly. Best effort: a
    /// region that cannot be exported is still registered, and its WRITEs and READs
    /// travel through the ring.
    pub fn export_memory_region(
        &self,
        region: ExportedRegion,
        backing: File,
    ) -> Result<(), FabricError> {
        use std::os::unix::fs::MetadataExt;
        let id = backing.metadata().map(|m| (m.dev(), m.ino())).ok();
        // One descriptor per backing file, however many regions are registered in it.
        let shared =
            id.and_then(|id| self.exports().values().find_map(|e| e.backing_of(id).cloned()));
        let backing = shared.unwrap_or_else(|| Arc::new(backing));
        let export = MemoryExport::create(&self.registry, region, backing)?;
        let previous = self.exports().insert(region.key >> 8, export);
        drop(previous);
        Ok(())
    }

    /// DEREG_MR or DEALLOC_MW of the key with index `index`. An exported region is
    /// withdrawn first: once this returns, no peer writes into it.
    pub fn remove_memory_region(&self, index: u32) {
        let export = self.exports().remove(&index);
        drop(export); // waits for placements in progress (not under the tables lock)
        self.tables().regions.remove(index);
    }

    /// Whether the region with key index `index` is exported.
    pub fn is_exported(&self, index: u32) -> bool {
        self.exports().contains_key(&index)
    }

    /// RDMA WRITEs this process's requesters placed into peers' memory directly.
    pub fn placed_writes(&self) -> u64 {
        self.tables().imports.placed_writes
    }

    /// RDMA READs this process's requesters copied out of peers' memory directly.
    pub fn placed_reads(&self) -> u64 {
        self.tables().imports.placed_reads
    }

    fn exports(&self) -> MutexGuard<'_, HashMap<u32, MemoryExport>> {
        self.exports.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// CREATE_CQ.
    pub fn add_cq(&self, s: CqSetup) {
        // The kernel takes a read-only record (the device never writes it): left alone, a
        // first arm there can go unseen.
        let watching = self.watching.load(Ordering::Acquire);
        let word1 = s.dbrec.addr() as u64 + 4;
        if watching
            && crate::user_memory::check_mapped(word1, 4, crate::user_memory::Access::Write).is_ok()
        {
            let _ = s.dbrec.write_be32(4, CQ_ARM_WORD_UNARMED);
        }
        // mlx5 silicon stamps every CQE but error CQEs, and rdma-core's mlx5 relies on it: it
        // drops TIMESTAMP_COMPLETION from a CREATE_CQ it sends by write() (it passes
        // `CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX`), yet reads the stamp for
        // IBV_WC_EX_WITH_COMPLETION_TIMESTAMP (`ibv_rc_pingpong -t`, which printed zero
        // ticks). Its consumers are the ones whose doorbells are watched.
        let flags = CqFlags { timestamps: s.flags.timestamps || watching, ..s.flags };
        let producer = CqProducer::new(s.buf, s.dbrec, s.ncqe, s.cqe_size);
        let cq = CompletionQueue::new(s.cqn, s.user_handle, producer, s.channel, s.async_events)
            .with_flags(flags);
        self.tables().cqs.insert(s.cqn, cq);
    }

    /// DESTROY_CQ: returns the completion and asynchronous events it reported.
    pub fn remove_cq(&self, cqn: u32) -> (u32, u32) {
        self.tables()
            .cqs
            .remove(&cqn)
            .map(|cq| (cq.events_reported(), cq.async_events_reported()))
            .unwrap_or((0, 0))
    }

    /// RESIZE_CQ: the CQ goes on in `buf` (`ncqe` entries of `cqe_size` bytes) after a
    /// RESIZE_CQ entry in its current ring. False if the CQ is gone or its ring is out of
    /// the application's memory.
    pub fn resize_cq(&self, cqn: u32, buf: AppSpan, ncqe: u32, cqe_size: usize) -> bool {
        self.tables().cqs.get_mut(&cqn).is_some_and(|cq| cq.resize(buf, ncqe, cqe_size).is_ok())
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

    /// DESTROY_SRQ: returns the asynchronous events it reported.
    pub fn remove_srq(&self, srqn: u32) -> u32 {
        self.tables().srqs.remove(&srqn).map(|s| s.async_events_reported()).unwrap_or(0)
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
        let mut qp = QueuePair::new(setup, Link::new(ring), Instant::now());
        qp.set_async_events(async_events);
        let mut t = self.tables();
        t.qps.insert(allocation.qpn, qp);
        t.slots.insert(allocation.pending_slot, allocation.qpn);
        Ok(())
    }

    /// MODIFY_QP (already validated): the data path follows the new state. False, with
    /// nothing done, for a transition other than to ERR or RESET once the device failed
    /// (see [`Self::is_fatal`]: the failure may have come after the caller's check).
    pub fn modify_qp(&self, qpn: u32, state: u8, attrs: QpAttributes) -> bool {
        use ferrodat_abi::uverbs::qp_state;
        let peer = if state == qp_state::RTR { self.peer_registry(attrs.dgid) } else { None };
        let mut t = self.tables();
        // Under the tables lock, which the failure takes after it set the flag: a QP it
        // moved to ERR stays there.
        if !matches!(state, qp_state::ERR | qp_state::RESET)
            && self.health.fatal.load(Ordering::Acquire)
        {
            return false;
        }
        let _ = self.instance.publish_qp_state(qpn, u32::from(state));
        t.with_qp(qpn, |qp, hw| qp.transition(state, attrs, peer, hw));
        self.background.publish(&mut t);
        true
    }

    /// DESTROY_QP (or a failed CREATE_QP): drops the QP and its ring, frees the QPN.
    /// Returns the asynchronous events reported for it.
    pub fn remove_qp(&self, qpn: u32) -> u32 {
        let mut t = self.tables();
        let events = t.qps.get(&qpn).map(|qp| qp.async_events_reported()).unwrap_or(0);
        if let Some(qp) = t.qps.get_mut(&qpn) {
            // The peer stops placing through it first (it waits for a placement in progress).
            qp.stop_placements();
        }
        t.imports.prune();
        t.forget_qp(qpn);
        self.background.publish(&mut t);
        drop(t);
        let _ = self.instance.free_qpn(qpn);
        events
    }

    /// The QP's state as the hardware has it (an error may have moved it to ERR).
    pub fn qp_state(&self, qpn: u32) -> Option<u8> {
        self.tables().qps.get(&qpn).map(|qp| qp.state())
    }

    /// What QUERY_QP reads back from the QP context: the state, and the next send and
    /// receive PSNs ([`QueuePair::next_psns`]).
    pub fn qp_context(&self, qpn: u32) -> Option<QpContext> {
        self.tables().qps.get(&qpn).map(|qp| {
            let (next_send_psn, next_rcv_psn) = qp.next_psns();
            QpContext { state: qp.state(), next_send_psn, next_rcv_psn }
        })
    }

    fn peer_registry(&self, gid: Gid) -> Option<Registry> {
        if gid == self.registry.gid() {
            return Some(self.registry.clone());
        }
        // A cached registry is used while it is still the file of that name: one rebuilt
        // (its users all gone, another run used the name with another address, then one
        // with this) or removed would not show the new run's QPs.
        let cached = self.tables().peers.get(&gid).cloned();
        if let Some(r) = cached {
            if r.is_current() {
                return Some(r);
            }
            self.tables().peers.remove(&gid);
        }
        let found = self.fabric.find_hca_by_gid(gid).ok().flatten()?;
        self.tables().peers.insert(gid, found.clone());
        Some(found)
    }

    // ======================================================= device failure

    /// GET_CONTEXT: the context's async event file hears of device-wide events
    /// (DEVICE_FATAL).
    pub fn add_device_event_sink(&self, sink: &Arc<dyn EventSink>) {
        let mut d = self.health.sinks.lock().unwrap_or_else(|e| e.into_inner());
        if d.fatal_reported {
            sink.async_event(1, ferrodat_abi::uverbs::event::DEVICE_FATAL);
            return;
        }
        d.sinks.retain(|s| s.strong_count() > 0);
        d.sinks.push(Arc::downgrade(sink));
    }

    /// Whether the device failed for good. softhca fails when this process loses its
    /// registry (the file was truncated under its mapping: `fabric/sigbus.rs`), since the
    /// other processes can then no longer find this HCA's QPs, nor it theirs. It then does
    /// what an mlx5 device in its internal-error state does: reports DEVICE_FATAL to every
    /// context, and the commands that make or change objects fail with ENOLINK while those
    /// that destroy them succeed, so the consumer can clean up. Unlike mlx5, which leaves
    /// a user process's queues as they are, every QP goes to ERR and completes its work
    /// requests with flush errors, so a consumer waiting for a completion is told instead
    /// of waiting for ever. The loss is noticed by every [`Self::progress`] call that finds
    /// nothing new (a waiting consumer's, the progress thread's), and here (every command
    /// asks): a count of lost mappings is compared, one load.
    pub fn is_fatal(&self) -> bool {
        self.check_health();
        self.health.fatal.load(Ordering::Acquire)
    }

    /// Looks at the registry again if some shared mapping of this process was lost since
    /// the last look (one load when none was).
    #[inline(always)]
    fn check_health(&self) {
        if crate::fabric::mapping_losses() != self.health.losses_seen.load(Ordering::Relaxed) {
            self.notice_losses();
        }
    }

    #[cold]
    fn notice_losses(&self) {
        // Counted before the look: a loss after it changes the count again.
        self.health.losses_seen.store(crate::fabric::mapping_losses(), Ordering::Relaxed);
        if self.registry.lost() && !self.health.fatal.swap(true, Ordering::AcqRel) {
            self.fail_device();
        }
    }

    /// The device failed: every QP to ERR (flushing), then DEVICE_FATAL to every context.
    #[cold]
    fn fail_device(&self) {
        let mut t = self.tables();
        let qpns: Vec<u32> = t.qps.iter().map(|(&qpn, _)| qpn).collect();
        for qpn in qpns {
            t.with_qp(qpn, |qp, hw| qp.device_failed(hw));
        }
        self.background.publish(&mut t);
        drop(t);
        let mut d = self.health.sinks.lock().unwrap_or_else(|e| e.into_inner());
        d.fatal_reported = true;
        for sink in std::mem::take(&mut d.sinks).iter().filter_map(Weak::upgrade) {
            // The element of an unaffiliated event is the port (mlx5 reports port 1); the
            // sink only queues it (no lock of ours taken).
            sink.async_event(1, ferrodat_abi::uverbs::event::DEVICE_FATAL);
        }
    }

    // ======================================================= model entry points

    /// The send doorbell of QP `qpn` rang: execute its new WQEs now.
    pub fn sq_doorbell(&self, qpn: u32) {
        let mut t = self.tables();
        let mut placing = false;
        t.with_qp(qpn, |qp, hw| {
            qp.run_requester(hw);
            placing = qp.placement_pending();
        });
        self.background.publish(&mut t);
        drop(t);
        // The rest of a request being placed goes at the next passes; a progress thread that
        // went to sleep before this doorbell would not run them until its timeout.
        if placing && self.background.sleepy.load(Ordering::SeqCst) > 0 {
            self.instance.waker().wake();
        }
    }

    /// Does whatever work is waiting: packets from peers, full rings, timers, receives
    /// posted to a QP in ERR (flushed). Returns true if peers had sent packets or
    /// receives were flushed: new CQEs may wait. Cheap when idle: a few atomic loads, no
    /// lock (with a QP in ERR, the lock and one doorbell record read per such QP).
    pub fn progress(&self) -> bool {
        let worked = self.pass();
        if !worked {
            // A call that found nothing new looks whether the device failed (after the
            // pass: failing takes the tables lock).
            self.check_health();
        }
        worked
    }

    /// The work of [`Self::progress`].
    #[inline(always)]
    fn pass(&self) -> bool {
        let pending = self.instance.has_pending();
        let clock = self.background.timer_clock();
        let errored = self.background.errored.load(Ordering::Acquire);
        if !pending
            && clock.is_none()
            && !errored
            && !self.background.always()
            && !self.background.polling.load(Ordering::Relaxed)
        {
            return false;
        }
        let mut t = self.tables();
        if !pending
            && clock.is_none()
            && !errored
            && t.always.is_empty()
            && t.polled.len() <= MAX_POLLED_RINGS
        {
            return self.progress_polled(&mut t);
        }
        let mut work = std::mem::take(&mut t.work);
        work.clear();
        if !t.polled.is_empty() {
            t.poll_rings(|qpn| work.push(qpn));
        }
        if pending {
            let polled = work.len();
            for slot in self.instance.take_pending() {
                if let Some(&qpn) = t.slots.get(&slot) {
                    work.push(qpn);
                }
            }
            // Rings that just had records are likely to have more: poll them directly,
            // unless a thread of ours sleeps (it relies on notifications).
            if self.background.sleepy.load(Ordering::SeqCst) == 0 {
                for &qpn in &work[polled..] {
                    t.start_polling(qpn);
                }
            }
        }
        self.background.note_polling(&t);
        if errored {
            t.receives_to_flush(&mut work);
        }
        let new_completions_possible = !work.is_empty();
        work.extend_from_slice(&t.always);
        if let Some(now) = clock {
            t.last_clock = now;
            t.due_timers(now, &mut work);
        } else if work.is_empty() {
            // An idle look at the polled rings: no list changed, nothing to publish.
            t.work = work;
            return false;
        }
        t.run_each_once(&mut work);
        t.work = work;
        self.background.publish(&mut t);
        new_completions_possible
    }

    /// [`Self::progress`] when only the polled rings can have work (no pending slot, no
    /// timer due, no QP in ERR or on the always list): the same pass without the work list.
    #[inline]
    fn progress_polled(&self, t: &mut Tables) -> bool {
        let mut found = [0u32; MAX_POLLED_RINGS];
        let mut n = 0;
        t.poll_rings(|qpn| {
            // At most one per polled ring, and the caller checked there are no more
            // than MAX_POLLED_RINGS.
            found[n] = qpn;
            n += 1;
        });
        self.background.note_polling(t);
        if n == 0 {
            // An idle look at the polled rings: no list changed, nothing to publish.
            return false;
        }
        t.run_each_once(&mut found[..n]);
        self.background.publish(t);
        true
    }

    /// The earliest timer of any QP.
    fn next_deadline(&self) -> Option<Instant> {
        self.tables().earliest_timer()
    }

    fn watch(&self) -> MutexGuard<'_, DoorbellWatch> {
        self.watch.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// GET_CONTEXT made UAR pages: the doorbell watcher looks at their CQ doorbell words
    /// (while the context keeps them).
    pub(crate) fn watch_uar(&self, pages: &Arc<UarPages>) {
        let mut w = self.watch();
        w.uars.retain(|(p, _)| p.strong_count() > 0);
        w.uars.push((Arc::downgrade(pages), vec![0; pages.count()]));
    }

    /// One pass of the doorbell watcher: runs the requester of each QP whose SQ doorbell
    /// record changed and arms each CQ whose arm word changed. True if it found any.
    fn watch_doorbells(&self) -> bool {
        let mut guard = self.watch();
        let w = &mut *guard;
        let mut t = self.tables();
        w.run.clear();
        w.arm.clear();
        for (&qpn, qp) in &t.qps {
            let Some(word) = qp.sq_doorbell_record() else { continue };
            if w.sq.insert(qpn, word).unwrap_or(0) != word {
                w.run.push(qpn);
            }
        }
        for (&cqn, cq) in &t.cqs {
            let Some(word) = cq.arm_word() else { continue };
            let seen = w.cq.insert(cqn, word).unwrap_or(CQ_ARM_WORD_UNARMED);
            if seen != word && word != CQ_ARM_WORD_UNARMED {
                w.arm.push((cqn, word));
            }
        }
        if w.sq.len() > t.qps.len() {
            w.sq.retain(|q, _| t.qps.contains_key(q));
        }
        if w.cq.len() > t.cqs.len() {
            w.cq.retain(|c, _| t.cqs.contains_key(c));
        }
        let arm = &mut w.arm;
        w.uars.retain_mut(|(pages, last)| {
            let Some(pages) = pages.upgrade() else { return false };
            for (index, seen) in last.iter_mut().enumerate() {
                let Some(page) = pages.page(index) else { continue };
                // SAFETY: `page` is softhca's own mapping of a UAR page, alive while
                // `pages` is; the CQ doorbell's 8 bytes lie inside its first 4 KiB.
                // Volatile: the consumer writes it through its own mapping.
                let raw = unsafe {
                    std::ptr::read_volatile(
                        page.as_ptr().add(ferrodat_abi::mlx5::CQ_DOORBELL) as *const [u8; 8]
                    )
                };
                let word = u64::from_be_bytes(raw);
                if word != *seen {
                    *seen = word;
                    arm.push(((word as u32) & 0x00ff_ffff, (word >> 32) as u32));
                }
            }
            true
        });
        let found = !w.run.is_empty() || !w.arm.is_empty();
        for &qpn in &w.run {
            t.with_qp(qpn, |qp, hw| qp.run_requester(hw));
        }
        for &(cqn, word) in &w.arm {
            if let Some(cq) = t.cqs.get_mut(&cqn) {
                cq.arm(word);
            }
        }
        if found {
            self.background.publish(&mut t);
        }
        found
    }

    /// True if the device has any QP or CQ.
    fn has_queues(&self) -> bool {
        let t = self.tables();
        !t.qps.is_empty() || !t.cqs.is_empty()
    }

    /// Starts the progress thread in hardware-like mode (idempotent; turns the mode on for
    /// a thread already running): besides peers' packets and timers it notices the
    /// consumer's doorbells by itself, as silicon does (see the module docs). For consumers
    /// that never call the model entry points.
    pub fn start_progress_thread_watching_doorbells(self: &Arc<Self>) -> std::io::Result<()> {
        self.watching.store(true, Ordering::Release);
        self.start_progress_thread()
    }

    /// Makes the device serve its peers while no thread of the process polls, as an HCA
    /// does by itself: starts the progress thread (idempotent), unless the owner refused it
    /// ([`Self::refuse_background`]). True if the thread runs.
    ///
    /// Called where a consumer may block: at a CQ's arm (a consumer asking for a completion
    /// event sleeps until it comes, and without a thread nothing here would take in the
    /// peer's packets — the ACK of our SEND, their SEND — meanwhile: it would wake at its
    /// timeout, or never), and by the DAT layer at an IA's open (a DAT consumer may block in
    /// any wait). A consumer that only busy-polls its CQs through the driver gets none.
    pub fn serve_in_background(self: &Arc<Self>) -> std::io::Result<bool> {
        if self.background_refused.load(Ordering::Relaxed) {
            return Ok(false);
        }
        self.start_progress_thread().map(|()| true)
    }

    /// The owner polls everything itself: [`Self::serve_in_background`] starts no thread
    /// from now on (an explicit [`Self::start_progress_thread`] still does).
    pub fn refuse_background(&self) {
        self.background_refused.store(true, Ordering::Relaxed);
    }

    /// The doorbell armed a CQ: [`Self::serve_in_background`], saying on stderr once if the
    /// thread cannot start (the arm itself still works).
    pub(crate) fn cq_armed_by_doorbell(self: &Arc<Self>) {
        if let Err(e) = self.serve_in_background() {
            static TOLD: AtomicBool = AtomicBool::new(false);
            if !TOLD.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "softhca {}: could not start the progress thread ({e}); a consumer \
                     sleeping on a completion event wakes only when another thread of this \
                     process polls, or at its timeout (is the process at its thread limit?)",
                    self.registry.name()
                );
            }
        }
    }

    /// Starts the progress thread (idempotent). It holds the engine only while it works,
    /// not while it sleeps, so dropping the last other reference drops the engine at once
    /// (or after the pass in progress) and ends the thread.
    pub fn start_progress_thread(self: &Arc<Self>) -> std::io::Result<()> {
        let mut slot = self.progress_thread.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return Ok(());
        }
        let stop = Arc::new(AtomicBool::new(false));
        let engine_weak = Arc::downgrade(self);
        let stop_flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name(format!("softhca-{}", self.registry.name()))
            .spawn(move || {
                raise_priority();
                let mut idle = 0u32;
                let mut watch_sleep = WATCH_SLEEP_MIN;
                let mut blocked = BlockedOnPeers::default();
                let mut read_positions = 0u64;
                while !stop_flag.load(Ordering::Acquire) {
                    let Some(engine) = engine_weak.upgrade() else { break };
                    let watching = engine.watching.load(Ordering::Acquire);
                    let mut worked = engine.progress();
                    if watching {
                        worked |= engine.watch_doorbells();
                    }
                    if worked {
                        idle = 0;
                        watch_sleep = WATCH_SLEEP_MIN;
                        blocked = BlockedOnPeers::default();
                        continue;
                    }
                    idle += 1;
                    // Watching doorbells, yielding would hand the CPU to an application
                    // spinning on its CQ for a whole time slice: sleep briefly instead, and
                    // let the wake-up preempt it.
                    let spins = if watching { WATCH_SPINS } else { IDLE_SPINS };
                    if idle < spins {
                        std::hint::spin_loop();
                        if !watching {
                            std::thread::yield_now();
                        }
                        continue;
                    }
                    idle = 0;
                    // Announce the sleep first: no ring starts being polled from here on,
                    // and those that were go back to notifications.
                    engine.background.sleepy.fetch_add(1, Ordering::SeqCst);
                    let records = {
                        let mut t = engine.tables();
                        // A peer read some of what a waiting QP sent: not stuck.
                        let positions = t.always_read_positions();
                        if positions != read_positions {
                            read_positions = positions;
                            blocked = BlockedOnPeers::default();
                        }
                        let records = t.stop_polling_all();
                        engine.background.polling.store(false, Ordering::Relaxed);
                        engine.background.publish(&mut t);
                        records
                    };
                    if records {
                        engine.background.sleepy.fetch_sub(1, Ordering::SeqCst);
                        continue;
                    }
                    let mut timeout = blocked.next_sleep(
                        engine.next_deadline(),
                        engine.background.always.load(Ordering::Acquire),
                        Instant::now(),
                    );
                    if watching {
                        // Doorbells wake nobody: look again soon, later and later.
                        let cap =
                            if engine.has_queues() { WATCH_SLEEP_MAX } else { WATCH_SLEEP_EMPTY };
                        timeout = timeout.min(watch_sleep.min(cap));
                        watch_sleep = (watch_sleep * 2).min(cap);
                    }
                    // Sleep without the engine: an owner that drops it meanwhile has it
                    // dropped at once (its QPs leave the fabric now, not a second later);
                    // the drop stops this thread and joins it before the instance goes,
                    // so the instance stays alive while this waits on it.
                    let instance = engine.instance.waker();
                    drop(engine);
                    if stop_flag.load(Ordering::Acquire) {
                        // That drop was the last: the engine stopped this thread.
                        break;
                    }
                    let stop_flag = &stop_flag;
                    instance.wait_for_work(Some(timeout), || stop_flag.load(Ordering::Acquire));
                    let Some(engine) = engine_weak.upgrade() else { break };
                    engine.background.sleepy.fetch_sub(1, Ordering::SeqCst);
                    if watching {
                        // Woken by the timeout, most likely: one look, then back to sleep
                        // rather than another round of spinning.
                        idle = WATCH_SPINS - 1;
                    } else if blocked.backing_off() {
                        // A peer that has not read for a while: one look per sleep.
                        idle = IDLE_SPINS - 1;
                    }
                }
            })?;
        *slot = Some(ProgressThread { stop, handle, started_by: OwningProcess::current() });
        Ok(())
    }

    /// Stops and joins the progress thread, if running.
    pub fn stop_progress_thread(&self) {
        let taken = self.progress_thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(ProgressThread { stop, handle, started_by }) = taken else { return };
        if !started_by.is_current() {
            // A child forked after the thread started: the thread is the parent's, which
            // keeps it. Joining a thread this process does not have would panic (or hang),
            // and waking the instance would only rouse the parent's.
            return;
        }
        stop.store(true, Ordering::Release);
        self.instance.waker().wake();
        if handle.thread().id() != std::thread::current().id() {
            let _ = handle.join();
        }
    }
}

/// Asks the scheduler to favour the progress thread, which stands in for the HCA's own
/// processors: the application threads it serves may spin on their CQs and would otherwise
/// keep it off the CPU for whole time slices. Best effort: without CAP_SYS_NICE the call
/// fails and the thread keeps the default priority.
fn raise_priority() {
    // SAFETY: gettid and setpriority have no memory-safety preconditions.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let _ = libc::setpriority(libc::PRIO_PROCESS, tid, PROGRESS_THREAD_NICE);
    }
}

/// The nice value the progress thread asks for.
const PROGRESS_THREAD_NICE: libc::c_int = -10;

impl Drop for Engine {
    fn drop(&mut self) {
        if !self.owner().is_current() {
            // A forked child's copy: the QPs' rings and the exported regions' files are the
            // parent's (the instance knows its owner too and keeps its QPNs and slot). No
            // lock is taken: a parent's thread may have held one at the fork, for good here.
            let tables = self.tables.get_mut().unwrap_or_else(|e| e.into_inner());
            std::mem::forget(std::mem::take(&mut tables.qps));
            let exports = self.exports.get_mut().unwrap_or_else(|e| e.into_inner());
            std::mem::forget(std::mem::take(exports));
            return;
        }
        self.stop_progress_thread();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_progress_thread_sleeps_to_its_timer_but_not_past_a_qp_waiting_on_its_peer() {
        let now = Instant::now();
        let timer = Some(now + Duration::from_millis(67));
        let mut b = BlockedOnPeers::default();
        assert_eq!(b.next_sleep(None, false, now), Duration::from_secs(1));
        assert_eq!(b.next_sleep(timer, false, now), Duration::from_millis(67));
        // A QP waits for ring room: 1 ms looks, whatever timer is due later.
        assert_eq!(b.next_sleep(timer, true, now), Duration::from_millis(1));
        assert_eq!(b.next_sleep(None, true, now), Duration::from_millis(1));
        // Its peer reads nothing for long: the looks back off, still not past the timer.
        let later = now + BLOCKED_BEFORE_BACKOFF;
        assert!(b.next_sleep(None, true, later) > Duration::from_millis(1));
        assert!(b.backing_off());
        let soon = Some(later + Duration::from_micros(300));
        assert_eq!(b.next_sleep(soon, true, later), Duration::from_micros(300));
        // Nothing waits any more: the back-off is over.
        b.next_sleep(None, false, later);
        assert!(!b.backing_off());
    }
}
