//! The send side of a QP: building mlx5 send WQEs in the ring, the doorbell record, and
//! BlueFlame or doorbell rings; and the table a poller uses to turn a CQE's wqe_counter
//! back into the caller's wr_id and to retire every WQE up to a signalled one.

use crate::doorbell::{BlueFlame, Model};
use crate::mmio::{DevPtr, to_device_barrier};
use crate::work_request::{Payload, PostError, PostErrorReason, SendOp, SendWr, Sge};
use ferrodat_abi::mlx5::{INLINE_SEG, SEND_WQE_BB, opcode, wqe_ctrl};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// What the poller needs to complete send WQEs; shared by the QP (writer of the entries)
/// and the CQ handle polling its completions (reader, and writer of `retired`).
///
/// The poster writes an entry before it rings the doorbell and the poller reads it after
/// the device wrote the CQE for it, so relaxed atomics suffice for the entries; `retired`
/// is released by the poller and acquired by the poster, which may then reuse the blocks.
#[derive(Debug)]
pub struct SendTracker {
    /// Per first WQEBB of a WQE: the caller's wr_id and where the WQE ends.
    slots: Box<[Slot]>,
    /// Running count of WQEBBs the device is done with (16-bit wrap is not used: 32 bits).
    retired: AtomicU32,
    mask: u32,
}

/// One WQE's record.
#[derive(Debug, Default)]
struct Slot {
    wr_id: AtomicU64,
    /// The running WQEBB count just after the WQE.
    end: AtomicU32,
}

impl SendTracker {
    /// A tracker for a ring of `wqe_cnt` WQEBBs (a power of two).
    pub fn new(wqe_cnt: u32) -> SendTracker {
        assert!(wqe_cnt.is_power_of_two(), "a send ring has a power-of-two size");
        SendTracker {
            slots: (0..wqe_cnt).map(|_| Slot::default()).collect(),
            retired: AtomicU32::new(0),
            mask: wqe_cnt - 1,
        }
    }

    #[inline(always)]
    fn slot(&self, wqebb: u32) -> &Slot {
        let i = (wqebb & self.mask) as usize;
        // SAFETY: `slots` has mask + 1 entries (`new`), so a masked index is in bounds.
        unsafe { self.slots.get_unchecked(i) }
    }

    /// A CQE reported the WQE that starts at `wqe_counter`: retire it and everything
    /// before it (the unsignalled WQEs), and give its wr_id.
    #[inline(always)]
    pub fn complete(&self, wqe_counter: u16) -> u64 {
        let slot = self.slot(u32::from(wqe_counter));
        self.retired.store(slot.end.load(Ordering::Relaxed), Ordering::Release);
        slot.wr_id.load(Ordering::Relaxed)
    }
}

/// Geometry of a send queue, from CREATE_QP.
#[derive(Clone, Copy, Debug)]
pub struct SendGeometry {
    /// The ring: `wqe_cnt` 64-byte WQEBBs.
    pub ring: DevPtr,
    /// A power of two.
    pub wqe_cnt: u32,
    /// The QP number (goes into every control segment).
    pub qpn: u32,
    /// Inline bytes one WQE may carry.
    pub max_inline: u32,
    /// Gather entries one WQE may carry.
    pub max_sge: u32,
    /// Every WQE is signalled (`sq_sig_all`).
    pub sig_all: bool,
    /// Word 1 of the QP's doorbell record: the SQ counter.
    pub dbrec_sq: DevPtr,
}

/// The send queue as its (single) poster owns it.
#[derive(Debug)]
pub struct SendQueue {
    g: SendGeometry,
    /// Running count of WQEBBs posted (`cur_post`).
    cur_post: u32,
    /// CQ_UPDATE when every WQE is signalled (`sq_sig_all`), else 0.
    sig_all_bits: u8,
    bf: BlueFlame,
    tracker: Arc<SendTracker>,
}

impl SendQueue {
    /// # Safety
    /// The geometry's ring and doorbell record stay mapped and lent to the device for the
    /// queue's life, and nothing else writes them.
    pub unsafe fn new(g: SendGeometry, bf: BlueFlame) -> SendQueue {
        let tracker = Arc::new(SendTracker::new(g.wqe_cnt));
        let sig_all_bits = if g.sig_all { wqe_ctrl::CQ_UPDATE } else { 0 };
        SendQueue { g, cur_post: 0, sig_all_bits, bf, tracker }
    }

    /// The tracker a CQ needs to complete this queue's WQEs.
    pub fn tracker(&self) -> &Arc<SendTracker> {
        &self.tracker
    }

    /// True if every WQE is signalled.
    pub fn sig_all(&self) -> bool {
        self.g.sig_all
    }

    /// WQEBBs free now.
    pub fn free_blocks(&self) -> u32 {
        self.g.wqe_cnt - self.cur_post.wrapping_sub(self.tracker.retired.load(Ordering::Acquire))
    }

    /// Builds one WQE per request and rings once: BlueFlame for a single small WQE, else a
    /// doorbell with the last control segment. On error the requests before the refused
    /// one are posted (and rung).
    #[inline]
    pub fn post(&mut self, wrs: &[SendWr<'_, '_>], model: &impl Model) -> Result<(), PostError> {
        let mut last: Option<(u32, u32)> = None; // (first WQEBB, ds) of the last WQE built
        let mut result = Ok(());
        // Everything the loop needs, in locals: the compiler keeps them in registers
        // instead of reloading them after every store to the ring.
        let mut b = Builder {
            g: self.g,
            sig_all_bits: self.sig_all_bits,
            tracker: &self.tracker,
            cur_post: self.cur_post,
        };
        let retired = b.tracker.retired.load(Ordering::Acquire);
        for (index, wr) in wrs.iter().enumerate() {
            match b.build(wr, retired) {
                Ok(built) => last = Some(built),
                Err(reason) => {
                    result = Err(PostError { index, reason });
                    break;
                }
            }
        }
        self.cur_post = b.cur_post;
        if let Some((first, ds)) = last {
            self.ring(first, ds, wrs.len() == 1 && result.is_ok(), model);
        }
        result
    }

    /// Publishes the SQ counter and rings (rdma-core's `post_send_db`).
    #[inline(always)]
    fn ring(&mut self, first: u32, ds: u32, single: bool, model: &impl Model) {
        to_device_barrier();
        // SAFETY: the SQ word of the doorbell record (geometry contract), 4-byte aligned.
        unsafe { self.g.dbrec_sq.write_u32(0, (self.cur_post & 0xffff).to_be()) };
        let ring = self.g.ring;
        let mask = self.g.wqe_cnt - 1;
        if single && ds > 1 && ds * 16 <= self.bf.buf_size() {
            let chunks = (ds as usize).div_ceil(4);
            self.bf.ring_blueflame(
                chunks,
                // SAFETY: block indices wrap inside the ring.
                |c| unsafe { ring.add(((first + c as u32) & mask) as usize * SEND_WQE_BB) },
                model,
            );
        } else {
            // SAFETY: the control segment of the last WQE, inside the ring.
            let ctrl = unsafe { ring.read_u64((first & mask) as usize * SEND_WQE_BB) };
            self.bf.ring_doorbell(ctrl, model);
        }
    }
}

/// The state one post works with.
struct Builder<'t> {
    g: SendGeometry,
    sig_all_bits: u8,
    tracker: &'t SendTracker,
    cur_post: u32,
}

impl Builder<'_> {
    /// Checks a request: its opcode, immediate, and an upper bound of its size in 16-byte
    /// units (exact unless some gather entries are empty).
    #[inline(always)]
    fn check(&self, wr: &SendWr<'_, '_>) -> Result<(u8, u32, u32), PostErrorReason> {
        let (op, imm, fixed) = match wr.op {
            SendOp::Send => (opcode::SEND, 0, 1),
            SendOp::SendImm(imm) => (opcode::SEND_IMM, imm, 1),
            SendOp::RdmaWrite(_) => (opcode::RDMA_WRITE, 0, 2),
            SendOp::RdmaWriteImm(_, imm) => (opcode::RDMA_WRITE_IMM, imm, 2),
            SendOp::RdmaRead(_) => (opcode::RDMA_READ, 0, 2),
            SendOp::CompareSwap { remote, .. } | SendOp::FetchAdd { remote, .. } => {
                let one_8_byte_entry = matches!(wr.payload, Payload::Sges([s]) if s.len() == 8);
                if !one_8_byte_entry || remote.addr % 8 != 0 {
                    return Err(PostErrorReason::BadAtomic);
                }
                let cs = matches!(wr.op, SendOp::CompareSwap { .. });
                (if cs { opcode::ATOMIC_CS } else { opcode::ATOMIC_FA }, 0, 3)
            }
            SendOp::Nop => return Ok((opcode::NOP, 0, 1)),
        };
        let data = match wr.payload {
            Payload::Sges(sges) => {
                if sges.len() > self.g.max_sge as usize {
                    let max = self.g.max_sge;
                    return Err(PostErrorReason::TooManySges { given: sges.len(), max });
                }
                sges.len() as u32
            }
            Payload::Inline(_) | Payload::InlineSges(_)
                if matches!(op, opcode::RDMA_READ | opcode::ATOMIC_CS | opcode::ATOMIC_FA) =>
            {
                return Err(PostErrorReason::InlineNotAllowed);
            }
            Payload::Inline(bytes) => self.inline_ds(bytes.len())?,
            Payload::InlineSges(sges) => {
                self.inline_ds(sges.iter().map(|s| s.len() as usize).sum())?
            }
        };
        Ok((op, imm, fixed + data))
    }

    fn inline_ds(&self, len: usize) -> Result<u32, PostErrorReason> {
        if len > self.g.max_inline as usize {
            return Err(PostErrorReason::InlineTooLong { given: len, max: self.g.max_inline });
        }
        Ok(if len == 0 { 0 } else { (len as u32 + 4).div_ceil(16) })
    }

    /// Writes one WQE at `cur_post` — segments first, the control segment last, once its
    /// size is known; returns (its first WQEBB, its ds).
    #[inline(always)]
    fn build(&mut self, wr: &SendWr<'_, '_>, retired: u32) -> Result<(u32, u32), PostErrorReason> {
        let (op, imm, ds_bound) = self.check(wr)?;
        if self.cur_post.wrapping_sub(retired) + ((ds_bound + 3) >> 2) > self.g.wqe_cnt {
            self.check_room(wr, ds_bound)?;
        }
        let first = self.cur_post;
        let mut w = SegWriter::new(&self.g, first);
        let ctrl = w.skip();
        match wr.op {
            SendOp::RdmaWrite(r) | SendOp::RdmaWriteImm(r, _) | SendOp::RdmaRead(r) => {
                w.seg(r.addr.to_be(), (u64::from(r.rkey) << 32).to_be());
            }
            SendOp::CompareSwap { remote, compare, swap } => {
                w.seg(remote.addr.to_be(), (u64::from(remote.rkey) << 32).to_be());
                w.seg(swap.to_be(), compare.to_be());
            }
            SendOp::FetchAdd { remote, add } => {
                w.seg(remote.addr.to_be(), (u64::from(remote.rkey) << 32).to_be());
                w.seg(add.to_be(), 0);
            }
            SendOp::Send | SendOp::SendImm(_) | SendOp::Nop => {}
        }
        match wr.payload {
            _ if op == opcode::NOP => {}
            Payload::Sges(sges) => {
                for s in sges {
                    if !s.is_empty() {
                        w.data_seg(s);
                    }
                }
            }
            Payload::Inline(bytes) => w.inline(&[bytes]),
            Payload::InlineSges(sges) => w.inline_from_sges(sges),
        }
        let ds = w.written();
        let fm_ce_se = wr.flags.fm_ce_se() | self.sig_all_bits;
        let idx_op = ((first & 0xffff) << 8) | u32::from(op);
        let qpn_ds = (self.g.qpn << 8) | ds;
        w.seg_at(
            ctrl,
            ((u64::from(idx_op) << 32) | u64::from(qpn_ds)).to_be(),
            ((u64::from(fm_ce_se) << 32) | u64::from(imm)).to_be(),
        );

        let blocks = (ds + 3) >> 2;
        let slot = self.tracker.slot(first);
        slot.wr_id.store(wr.wr_id, Ordering::Relaxed);
        slot.end.store(first.wrapping_add(blocks), Ordering::Relaxed);
        self.cur_post = first.wrapping_add(blocks);
        Ok((first, ds))
    }

    /// The slow path of the room check: the exact size, against the latest retirements.
    #[cold]
    fn check_room(&self, wr: &SendWr<'_, '_>, ds_bound: u32) -> Result<(), PostErrorReason> {
        let empty = match wr.payload {
            Payload::Sges(sges) => sges.iter().filter(|s| s.is_empty()).count() as u32,
            _ => 0,
        };
        let blocks = (ds_bound - empty + 3) >> 2;
        let retired = self.tracker.retired.load(Ordering::Acquire);
        if self.cur_post.wrapping_sub(retired) + blocks > self.g.wqe_cnt {
            return Err(PostErrorReason::QueueFull { capacity: self.g.wqe_cnt });
        }
        Ok(())
    }
}

/// Writes a WQE's 16-byte segments one after another, wrapping at the ring's end.
struct SegWriter {
    ring: DevPtr,
    /// Segment index of the WQE's first segment (16-byte units from the ring start).
    start: u32,
    /// Segment index of the next write (unwrapped; `at` wraps it).
    next: u32,
    mask: u32,
}

impl SegWriter {
    #[inline(always)]
    fn new(g: &SendGeometry, first_block: u32) -> SegWriter {
        let mask = g.wqe_cnt * 4 - 1;
        let start = (first_block * 4) & mask;
        SegWriter { ring: g.ring, start, next: start, mask }
    }

    /// Leaves a segment to fill later; returns its index.
    #[inline(always)]
    fn skip(&mut self) -> u32 {
        self.next += 1;
        self.next - 1
    }

    /// Segments used so far.
    #[inline(always)]
    fn written(&self) -> u32 {
        self.next - self.start
    }

    /// Fills segment `seg` (left by `skip`).
    #[inline(always)]
    fn seg_at(&self, seg: u32, lo: u64, hi: u64) {
        let p = self.at(seg);
        // SAFETY: 16 bytes of one segment inside the ring, 16-byte aligned.
        unsafe {
            p.write_u64(0, lo);
            p.write_u64(8, hi);
        }
    }

    #[inline(always)]
    fn at(&self, seg: u32) -> DevPtr {
        // SAFETY: `seg & mask` is a segment inside the ring.
        unsafe { self.ring.add(((seg & self.mask) as usize) * 16) }
    }

    /// One segment from two 8-byte halves already in memory (big-endian) order.
    #[inline(always)]
    fn seg(&mut self, lo: u64, hi: u64) {
        self.seg_at(self.next, lo, hi);
        self.next += 1;
    }

    #[inline(always)]
    fn data_seg(&mut self, s: &Sge<'_>) {
        self.seg(((u64::from(s.len()) << 32) | u64::from(s.lkey())).to_be(), s.addr().to_be());
    }

    /// An inline segment: the byte count with the inline bit, then the bytes of `parts`.
    fn inline(&mut self, parts: &[&[u8]]) {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if total == 0 {
            return;
        }
        let ring_bytes = (self.mask as usize + 1) * 16;
        let start = (self.next & self.mask) as usize * 16;
        // SAFETY: the first 4 bytes of a segment inside the ring.
        unsafe { self.ring.write_u32(start, (total as u32 | INLINE_SEG).to_be()) };
        let mut at = start + 4;
        for part in parts {
            let mut rest: &[u8] = part;
            while !rest.is_empty() {
                let pos = at % ring_bytes;
                let n = rest.len().min(ring_bytes - pos);
                // SAFETY: `pos..pos+n` is inside the ring (n stops at its end).
                unsafe { self.ring.write_bytes(pos, &rest[..n]) };
                rest = &rest[n..];
                at += n;
            }
        }
        self.next += (total as u32 + 4).div_ceil(16);
    }

    /// Inline data gathered from registered memory, through volatile reads (the device may
    /// be writing other parts of those regions).
    fn inline_from_sges(&mut self, sges: &[Sge<'_>]) {
        let mut bytes = [0u8; 1024];
        let total: usize = sges.iter().map(|s| s.len() as usize).sum();
        let mut owned;
        let buf: &mut [u8] = if total <= bytes.len() {
            &mut bytes[..total]
        } else {
            owned = vec![0u8; total];
            &mut owned
        };
        let mut at = 0;
        for s in sges {
            let len = s.len() as usize;
            for (i, b) in buf[at..at + len].iter_mut().enumerate() {
                // SAFETY: the Sge names `len` readable bytes at its address (its contract:
                // made by a region covering them, or by `Sge::from_raw`).
                *b = unsafe { ((s.addr() as usize + i) as *const u8).read_volatile() };
            }
            at += len;
        }
        self.inline(&[buf]);
    }
}
