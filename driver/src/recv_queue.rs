//! The receive side of a QP: receive WQEs (arrays of data segments) in their ring, the RQ
//! counter in the doorbell record (the RQ has no UAR doorbell), and the table a poller
//! uses to give back wr_ids in order.

use crate::mmio::{DevPtr, to_device_barrier};
use crate::work_request::{PostError, PostErrorReason, RecvWr, WorkQueue};
use ferrodat_abi::mlx5::INVALID_LKEY;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// What the poller needs to complete receive WQEs (see [`SendTracker`](crate::raw::SendTracker) for why
/// relaxed entries and a released/acquired counter suffice). Receives complete in order.
#[derive(Debug)]
pub struct RecvTracker {
    wr_ids: Box<[AtomicU64]>,
    /// Running count of receive WQEs completed.
    completed: AtomicU32,
    mask: u32,
}

impl RecvTracker {
    pub fn new(wqe_cnt: u32) -> RecvTracker {
        RecvTracker {
            wr_ids: (0..wqe_cnt).map(|_| AtomicU64::new(0)).collect(),
            completed: AtomicU32::new(0),
            mask: wqe_cnt - 1,
        }
    }

    /// The oldest outstanding receive completed: its wr_id.
    #[inline(always)]
    pub fn complete_next(&self) -> u64 {
        // Only the CQ's single poller writes `completed`.
        let n = self.completed.load(Ordering::Relaxed);
        let wr_id = self.wr_ids[(n & self.mask) as usize].load(Ordering::Relaxed);
        self.completed.store(n.wrapping_add(1), Ordering::Release);
        wr_id
    }
}

/// Geometry of a receive queue, from CREATE_QP.
#[derive(Clone, Copy, Debug)]
pub struct RecvGeometry {
    /// The ring: `wqe_cnt` entries of `1 << wqe_shift` bytes.
    pub ring: DevPtr,
    /// A power of two.
    pub wqe_cnt: u32,
    /// log2 of the entry size (16 bytes per scatter entry).
    pub wqe_shift: u32,
    /// Scatter entries the caller may give (at most the entry size / 16).
    pub max_sge: u32,
    /// Word 0 of the QP's doorbell record: the RQ counter.
    pub dbrec_rq: DevPtr,
}

/// The receive queue as its (single) poster owns it.
#[derive(Debug)]
pub struct RecvQueue {
    g: RecvGeometry,
    /// Running count of receives posted.
    head: u32,
    tracker: Arc<RecvTracker>,
}

impl RecvQueue {
    /// `max_sge` is lowered to what an entry holds, so no post writes past its entry.
    ///
    /// # Safety
    /// The geometry's ring (`wqe_cnt`, a power of two, entries of `1 << wqe_shift` bytes,
    /// `wqe_shift` at least 4) and doorbell record stay mapped and lent to the device for
    /// the queue's life, and nothing else writes them.
    pub unsafe fn new(mut g: RecvGeometry) -> RecvQueue {
        g.max_sge = g.max_sge.min(1 << g.wqe_shift.saturating_sub(4));
        RecvQueue { g, head: 0, tracker: Arc::new(RecvTracker::new(g.wqe_cnt)) }
    }

    /// The tracker a CQ needs.
    pub fn tracker(&self) -> &Arc<RecvTracker> {
        &self.tracker
    }

    /// Writes one entry per request, then publishes the RQ counter once.
    #[inline]
    pub fn post(&mut self, wrs: &[RecvWr<'_, '_>]) -> Result<(), PostError> {
        // One receive, the commonest request (a consumer reposting the buffer it took):
        // straight-line code, inlined into the caller.
        if let [wr] = wrs {
            let completed = self.tracker.completed.load(Ordering::Acquire);
            self.write_one(wr, completed).map_err(|reason| PostError {
                queue: WorkQueue::Receive,
                index: 0,
                reason,
            })?;
            self.publish();
            return Ok(());
        }
        self.post_many(wrs)
    }

    #[inline(never)]
    fn post_many(&mut self, wrs: &[RecvWr<'_, '_>]) -> Result<(), PostError> {
        let mut result = Ok(());
        let completed = self.tracker.completed.load(Ordering::Acquire);
        let start = self.head;
        for (index, wr) in wrs.iter().enumerate() {
            if let Err(reason) = self.write_one(wr, completed) {
                result = Err(PostError { queue: WorkQueue::Receive, index, reason });
                break;
            }
        }
        if self.head != start {
            self.publish();
        }
        result
    }

    /// Tells the device how far the queue is filled (the doorbell record's RQ counter).
    #[inline(always)]
    fn publish(&mut self) {
        to_device_barrier();
        // SAFETY: the RQ word of the doorbell record (geometry contract).
        unsafe { self.g.dbrec_rq.write_u32(0, (self.head & 0xffff).to_be()) };
    }

    #[inline(always)]
    fn write_one(&mut self, wr: &RecvWr<'_, '_>, completed: u32) -> Result<(), PostErrorReason> {
        if wr.sges.len() > self.g.max_sge as usize {
            return Err(PostErrorReason::TooManySges { given: wr.sges.len(), max: self.g.max_sge });
        }
        if self.head.wrapping_sub(completed) >= self.g.wqe_cnt
            && self.head.wrapping_sub(self.tracker.completed.load(Ordering::Acquire))
                >= self.g.wqe_cnt
        {
            return Err(PostErrorReason::QueueFull { capacity: self.g.wqe_cnt });
        }
        let slot = self.head & (self.g.wqe_cnt - 1);
        // SAFETY: entry `slot` is inside the ring.
        let entry = unsafe { self.g.ring.add((slot as usize) << self.g.wqe_shift) };
        write_scatter(entry, wr.sges, 1 << (self.g.wqe_shift - 4));
        self.tracker.wr_ids[slot as usize].store(wr.wr_id, Ordering::Relaxed);
        self.head = self.head.wrapping_add(1);
        Ok(())
    }
}

/// Writes the data segments of a receive entry at `entry` (`room` segments fit), skipping
/// empty ones, and a terminator (`lkey` = MLX5_INVALID_LKEY) if room is left.
#[inline(always)]
pub fn write_scatter(entry: DevPtr, sges: &[crate::work_request::Sge<'_>], room: u32) {
    let mut n = 0usize;
    for s in sges.iter().filter(|s| !s.is_empty()) {
        // SAFETY: segment `n` < room is inside the entry (callers check sges <= room).
        unsafe {
            entry.write_u64(n * 16, ((u64::from(s.len()) << 32) | u64::from(s.lkey())).to_be());
            entry.write_u64(n * 16 + 8, s.addr().to_be());
        }
        n += 1;
    }
    if (n as u32) < room {
        // SAFETY: as above; segment `n` < room.
        unsafe {
            entry.write_u64(n * 16, u64::from(INVALID_LKEY).to_be());
            entry.write_u64(n * 16 + 8, 0);
        }
    }
}
