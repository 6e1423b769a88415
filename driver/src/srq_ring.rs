//! The entries of a shared receive queue: a free list linked through each entry's next
//! segment (rdma-core's `mlx5_post_srq_recv` / `mlx5_free_srq_wqe`), shared by every QP
//! attached to the SRQ and by the pollers of their CQs, so it sits behind a mutex (posts
//! to an SRQ may come from several threads, as DAT allows).

use crate::mmio::{DevPtr, to_device_barrier};
use crate::recv_queue::write_scatter;
use crate::work_request::{PostError, PostErrorReason, RecvWr, WorkQueue};
use std::sync::Mutex;

/// Geometry of an SRQ, from CREATE_SRQ.
#[derive(Clone, Copy, Debug)]
pub struct SrqGeometry {
    /// `wqe_cnt` entries of `1 << wqe_shift` bytes: a 16-byte next segment, then scatter.
    pub ring: DevPtr,
    /// A power of two; one entry always stays free (head == tail means full).
    pub wqe_cnt: u32,
    /// log2 of the entry size.
    pub wqe_shift: u32,
    /// Scatter entries the caller may give.
    pub max_sge: u32,
    /// Word 0 of the SRQ's doorbell record: entries posted (16 bits).
    pub dbrec: DevPtr,
}

#[derive(Debug)]
struct FreeList {
    g: SrqGeometry,
    /// Entry the next post takes.
    head: u16,
    /// Last entry of the free list (a freed entry is linked after it).
    tail: u16,
    /// Entries posted so far (the doorbell record's value).
    counter: u16,
    wr_ids: Box<[u64]>,
    /// Entries the device may be using (posted, not completed).
    outstanding: u32,
}

/// The SRQ's entries and their wr_ids.
#[derive(Debug)]
pub struct SrqRing {
    list: Mutex<FreeList>,
}

impl SrqRing {
    /// Links every entry to the next, as rdma-core's `mlx5_alloc_srq_buf` does. `max_sge`
    /// is lowered to what an entry holds after its next segment, so no post writes past
    /// its entry.
    ///
    /// # Safety
    /// The geometry's ring (`wqe_cnt`, a power of two, entries of `1 << wqe_shift` bytes,
    /// `wqe_shift` at least 4) and doorbell record stay mapped and lent to the device for
    /// the ring's life, and nothing else writes them.
    pub unsafe fn new(mut g: SrqGeometry) -> SrqRing {
        g.max_sge = g.max_sge.min((1 << g.wqe_shift.saturating_sub(4)) - 1);
        for i in 0..g.wqe_cnt {
            let next = ((i + 1) & (g.wqe_cnt - 1)) as u16;
            // SAFETY: bytes 2..4 (next_wqe_index) of entry `i`, inside the ring.
            unsafe { g.ring.add((i as usize) << g.wqe_shift).write_u16(2, next.to_be()) };
        }
        SrqRing {
            list: Mutex::new(FreeList {
                g,
                head: 0,
                tail: (g.wqe_cnt - 1) as u16,
                counter: 0,
                wr_ids: vec![0; g.wqe_cnt as usize].into_boxed_slice(),
                outstanding: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FreeList> {
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Entries posted and not yet completed.
    pub fn outstanding(&self) -> u32 {
        self.lock().outstanding
    }

    /// Takes one free entry per request, then publishes the counter once.
    pub fn post(&self, wrs: &[RecvWr<'_, '_>]) -> Result<(), PostError> {
        let mut l = self.lock();
        let g = l.g;
        let mut result = Ok(());
        let start = l.counter;
        for (index, wr) in wrs.iter().enumerate() {
            if wr.sges.len() > g.max_sge as usize {
                let reason = PostErrorReason::TooManySges { given: wr.sges.len(), max: g.max_sge };
                result = Err(PostError { queue: WorkQueue::SharedReceive, index, reason });
                break;
            }
            if l.head == l.tail {
                let reason = PostErrorReason::QueueFull { capacity: g.wqe_cnt - 1 };
                result = Err(PostError { queue: WorkQueue::SharedReceive, index, reason });
                break;
            }
            let ind = l.head;
            // SAFETY: entry `ind` is inside the ring.
            let entry = unsafe { g.ring.add((ind as usize) << g.wqe_shift) };
            // SAFETY: its next segment's index field.
            l.head = u16::from_be(unsafe { entry.read_u16(2) });
            // SAFETY: the scatter part starts 16 bytes in, inside the entry.
            write_scatter(unsafe { entry.add(16) }, wr.sges, (1 << (g.wqe_shift - 4)) - 1);
            l.wr_ids[ind as usize] = wr.wr_id;
            l.counter = l.counter.wrapping_add(1);
            l.outstanding += 1;
        }
        if l.counter != start {
            to_device_barrier();
            // SAFETY: word 0 of the SRQ doorbell record (geometry contract).
            unsafe { g.dbrec.write_u32(0, u32::from(l.counter).to_be()) };
        }
        result
    }

    /// A CQE consumed entry `index`: its wr_id; the entry goes back on the free list.
    pub fn complete(&self, index: u16) -> u64 {
        let mut l = self.lock();
        let g = l.g;
        let index = index & (g.wqe_cnt - 1) as u16;
        let wr_id = l.wr_ids[index as usize];
        // SAFETY: the tail entry's next index field, inside the ring.
        unsafe { g.ring.add((l.tail as usize) << g.wqe_shift).write_u16(2, index.to_be()) };
        l.tail = index;
        l.outstanding = l.outstanding.saturating_sub(1);
        wr_id
    }
}
