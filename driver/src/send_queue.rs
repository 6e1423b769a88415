//! The send side of a QP: building mlx5 send WQEs in the ring, the doorbell record, and
//! BlueFlame or doorbell rings; and the table a poller uses to turn a CQE's wqe_counter
//! back into the caller's wr_id and to retire every WQE up to a signalled one.

use crate::doorbell::{BlueFlame, Model};
use crate::mmio::{DevPtr, to_device_barrier};
use crate::mr::Access;
use crate::mw::MwBind;
use crate::work_request::{
    Payload, PostError, PostErrorReason, Remote, SendFlags, SendOp, SendWr, Sge, WorkQueue,
};
use ferrodat_abi::mlx5::{
    INLINE_SEG, MKEY_CONTEXT_FREE, SEND_WQE_BB, WqeMkeyContextSeg, WqeUmrCtrlSeg, WqeUmrKlmSeg,
    mkey_access, mkey_mask, opcode, umr_ctrl_flag, wqe_ctrl,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use zerocopy::IntoBytes;
use zerocopy::byteorder::big_endian::{U16, U32, U64};

// Inline data is assembled as little-endian numbers whose memory image is the bytes.
#[cfg(not(target_endian = "little"))]
compile_error!("ferrodat-driver builds WQEs for little-endian hosts (x86_64, aarch64)");

/// What the poller needs to complete send WQEs; shared by the QP (writer of the entries)
/// and the CQ handle polling its completions (reader, and writer of `retired`).
///
/// The poster writes an entry before it rings the doorbell and the poller reads it after
/// the device wrote the CQE for it, so relaxed atomics suffice for the entries; `retired`
/// is released by the poller and acquired by the poster, which may then reuse the blocks.
#[derive(Debug)]
pub struct SendTracker {
    /// Per first WQEBB of a WQE: the caller's wr_id and where the WQE ends. (The send
    /// queue holds the slots too, one pointer closer than through the tracker.)
    slots: Arc<[Slot]>,
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
    /// Requests the queue holds at once: rdma-core's `max_post`, the ring's bytes over the
    /// largest WQE the QP was sized for (what CREATE_QP reports as `max_send_wr`, and what
    /// a CQ is sized for). At most `wqe_cnt`; a raw queue without such a limit gives
    /// `wqe_cnt`.
    pub max_post: u32,
    /// Word 1 of the QP's doorbell record: the SQ counter.
    pub dbrec_sq: DevPtr,
    /// The QP has no send queue (created with `max_send_wr` 0): `ring` names no memory
    /// and `wqe_cnt` is 1. The queue starts full and stays so (nothing ever retires), so
    /// every post is refused with [`PostErrorReason::NoSendQueue`] before anything is
    /// written or rung, by the room checks the posts make anyway.
    pub absent: bool,
}

/// The send queue as its (single) poster owns it.
#[derive(Debug)]
pub struct SendQueue {
    g: SendGeometry,
    /// Running count of WQEBBs posted (`cur_post`).
    cur_post: u32,
    /// `wqe_cnt - 1`: ring and tracker index mask.
    mask: u32,
    /// What the fast path checks room against: `cur_post` may reach `retired_seen +
    /// wqe_cnt` with one-block WQEs before the fast path asks again
    /// ([`Self::refresh_room`], which sets it from the retired count and the requests in
    /// flight), or, while a fence from a bind is pending, `cur_post - wqe_cnt`, which says
    /// "full" so that the fast path steps aside without a test of its own. Either way the
    /// fast path never passes the ring's blocks or `max_post` requests: posts of the
    /// other paths move `cur_post` by at least one block per request.
    retired_seen: u32,
    /// The WQEs of more than one block in flight, to count requests (see [`Requests`]).
    requests: Requests,
    /// The second half of a control segment's first 8 bytes in memory order (qpn << 8,
    /// big-endian) without the size, which goes in the top byte.
    ctrl_qpn: u64,
    /// Inline bytes the one-segment path takes: 12, or the queue's limit if lower.
    one_segment_inline: u32,
    /// CQ_UPDATE when every WQE is signalled (`sq_sig_all`), else 0.
    sig_all_bits: u8,
    /// The fence the next WQE gets unless it asks for FENCE: the small fence after a bind
    /// (rdma-core's `fm_cache`), else 0.
    fence_cache: u8,
    bf: BlueFlame,
    tracker: Arc<SendTracker>,
    /// The tracker's slots (the same allocation).
    slots: Arc<[Slot]>,
}

impl SendQueue {
    /// # Safety
    /// The geometry's ring and doorbell record stay mapped and lent to the device for the
    /// queue's life, and nothing else writes them.
    pub unsafe fn new(g: SendGeometry, bf: BlueFlame) -> SendQueue {
        // The ring holds no more requests than blocks, whatever a raw geometry says.
        let g = SendGeometry { max_post: g.max_post.min(g.wqe_cnt), ..g };
        let tracker = Arc::new(SendTracker::new(g.wqe_cnt));
        let sig_all_bits = if g.sig_all { wqe_ctrl::CQ_UPDATE } else { 0 };
        let ctrl_qpn = u64::from((g.qpn << 8).to_be()) << 32;
        SendQueue {
            g,
            cur_post: if g.absent { g.wqe_cnt } else { 0 },
            mask: g.wqe_cnt - 1,
            // The first allowance: `max_post` one-block requests.
            retired_seen: g.max_post.wrapping_sub(g.wqe_cnt),
            requests: Requests::default(),
            ctrl_qpn,
            one_segment_inline: g.max_inline.min(12),
            sig_all_bits,
            fence_cache: 0,
            bf,
            slots: tracker.slots.clone(),
            tracker,
        }
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
    #[inline(always)]
    pub fn post(&mut self, wrs: &[SendWr<'_, '_>], model: &impl Model) -> Result<(), PostError> {
        // One request of the commonest kind (one data segment: one gathered entry or a few
        // inline bytes), a dedicated path inlined into the caller. Everything else is out
        // of line, so this stays small (few registers to save, nothing spilled).
        if let [wr] = wrs
            && let Some((block, ds)) = self.write_one_segment(wr)
        {
            self.ring_block(block, ds, model);
            return Ok(());
        }
        self.post_general(wrs, model)
    }

    /// Any batch, any request: the one-block builder where it applies, else the general
    /// builder.
    #[inline(never)]
    fn post_general(
        &mut self,
        wrs: &[SendWr<'_, '_>],
        model: &impl Model,
    ) -> Result<(), PostError> {
        if let [wr] = wrs {
            // A WQE of one 64-byte block if it is one.
            match self.write_one_block(wr) {
                Some(Ok(ds)) => {
                    let first = self.cur_post.wrapping_sub(1);
                    // SAFETY: block `first & mask` is inside the ring.
                    let block = unsafe { self.g.ring.add(((first & self.mask) as usize) << 6) };
                    self.ring_block(block, ds, model);
                    return Ok(());
                }
                Some(Err(refusal)) => return Err(self.explain(0, wr, refusal)),
                None => {}
            }
            let mut b = self.builder();
            let built = b.build(wr);
            let (cur_post, fence_cache) = (b.cur_post, b.fence_cache);
            self.built(cur_post, fence_cache);
            return match built {
                Ok((first, ds)) => {
                    self.ring(first, ds, true, model);
                    Ok(())
                }
                Err(refusal) => Err(self.explain(0, wr, refusal)),
            };
        }
        let mut last = None; // (first WQEBB, ds) of the last WQE built
        let mut refused = None;
        for (index, wr) in wrs.iter().enumerate() {
            let first = self.cur_post;
            if let Some((_, ds)) = self.write_one_segment(wr) {
                last = Some((first, ds));
                continue;
            }
            let built = match self.write_one_block(wr) {
                Some(result) => result.map(|ds| (first, ds)),
                None => {
                    let mut b = self.builder();
                    let built = b.build(wr);
                    let (cur_post, fence_cache) = (b.cur_post, b.fence_cache);
                    self.built(cur_post, fence_cache);
                    built
                }
            };
            match built {
                Ok(built) => last = Some(built),
                Err(refusal) => {
                    refused = Some((index, refusal));
                    break;
                }
            }
        }
        if let Some((first, ds)) = last {
            self.ring(first, ds, false, model);
        }
        match refused {
            None => Ok(()),
            Some((index, refusal)) => Err(self.explain(index, &wrs[index], refusal)),
        }
    }

    /// The one-block builder, for what [`Self::write_one_segment`] does not take: SEND,
    /// SEND with immediate, RDMA WRITE (with immediate) and RDMA READ whose WQE fits one
    /// 64-byte block (up to 3 non-empty gather entries, or up to 44 inline bytes, less one
    /// segment for a remote address); it also refuses malformed ones of those kinds.
    /// A block never wraps, so segments go to fixed offsets. Returns the WQE's size in
    /// 16-byte units; None when the request is not of that kind (the general builder takes
    /// it). The caller rings.
    #[inline(always)]
    fn write_one_block(&mut self, wr: &SendWr<'_, '_>) -> Option<Result<u32, Refusal>> {
        let (op, imm, remote) = match wr.op {
            SendOp::Send => (opcode::SEND, 0, None),
            SendOp::SendImm(imm) => (opcode::SEND_IMM, imm, None),
            SendOp::RdmaWrite(r) => (opcode::RDMA_WRITE, 0, Some(r)),
            SendOp::RdmaWriteImm(r, imm) => (opcode::RDMA_WRITE_IMM, imm, Some(r)),
            SendOp::RdmaRead(r) => (opcode::RDMA_READ, 0, Some(r)),
            _ => return None,
        };
        let room = 3 - u32::from(remote.is_some()); // segments left in the block
        let g = self.g;
        let first = self.cur_post;
        // SAFETY: block `first & mask` is inside the ring.
        let block = unsafe { g.ring.add(((first & (g.wqe_cnt - 1)) as usize) << 6) };
        let put = |k: u32, lo: u64, hi: u64| {
            // SAFETY: segment k < 4 of the block.
            unsafe {
                block.write_u64((k as usize) << 4, lo);
                block.write_u64(((k as usize) << 4) + 8, hi);
            }
        };
        // The request is checked before anything is written or the room looked at, so a
        // malformed one is reported as such even on a full queue.
        match wr.payload {
            Payload::Sges(sges) if sges.len() as u32 <= room => {
                if sges.len() > g.max_sge as usize {
                    return Some(Err(Refusal::TooManySges));
                }
            }
            Payload::Inline(bytes)
                if inline_units(bytes.len()) <= room && op != opcode::RDMA_READ =>
            {
                if bytes.len() > g.max_inline as usize {
                    return Some(Err(Refusal::InlineTooLong));
                }
            }
            _ => return None,
        }
        if first.wrapping_sub(self.retired_seen) >= g.wqe_cnt && !self.room_for_one_block(first) {
            return Some(Err(Refusal::QueueFull));
        }
        let mut k = 1;
        if let Some(r) = remote {
            let (lo, hi) = raddr_seg(r);
            put(1, lo, hi);
            k = 2;
        }
        match wr.payload {
            Payload::Sges(sges) => {
                for s in sges {
                    if !s.is_empty() {
                        put(
                            k,
                            ((u64::from(s.len()) << 32) | u64::from(s.lkey())).to_be(),
                            s.addr().to_be(),
                        );
                        k += 1;
                    }
                }
            }
            Payload::Inline(bytes) => {
                let seg = Segments {
                    ring: g.ring,
                    start: first.wrapping_mul(4),
                    mask: g.wqe_cnt * 4 - 1,
                };
                k += seg.inline(k, bytes);
            }
            _ => return None,
        }
        let fm_ce_se =
            wr.flags.fm_ce_se() | self.sig_all_bits | fence_after(wr.flags, self.fence_cache);
        self.fence_cache = 0;
        let idx_op = ((first & 0xffff) << 8) | u32::from(op);
        let ctrl = ((u64::from(idx_op) << 32) | u64::from((g.qpn << 8) | k)).to_be();
        put(0, ctrl, ((u64::from(fm_ce_se) << 32) | u64::from(imm)).to_be());
        let slot = self.tracker.slot(first);
        slot.wr_id.store(wr.wr_id, Ordering::Relaxed);
        slot.end.store(first.wrapping_add(1), Ordering::Relaxed);
        self.cur_post = first.wrapping_add(1);
        Some(Ok(k))
    }

    /// The dedicated path of the commonest requests: SEND, SEND with immediate, RDMA WRITE
    /// (with immediate) or RDMA READ with one data segment — one non-empty gathered entry,
    /// or 1 to 12 inline bytes (not for a READ) — on a queue with room and no fence pending
    /// from a bind. Writes the same bytes as [`Self::write_one_block`] without its loops
    /// and checks. Returns where the WQE is and its size in 16-byte units; None for
    /// anything else (the caller then takes the general paths, which also give the errors).
    #[inline(always)]
    fn write_one_segment(&mut self, wr: &SendWr<'_, '_>) -> Option<(DevPtr, u32)> {
        let data = match wr.payload {
            Payload::Sges([s]) if !s.is_empty() && self.g.max_sge != 0 => {
                (((u64::from(s.len()) << 32) | u64::from(s.lkey())).to_be(), s.addr().to_be())
            }
            // 1 to 12 bytes, within the queue's limit (one compare).
            Payload::Inline(bytes)
                if bytes.len().wrapping_sub(1) < self.one_segment_inline as usize =>
            {
                small_inline_seg(bytes)
            }
            _ => return None,
        };
        // One copy of the builder per operation, each with its opcode and segments fixed:
        // straight-line code, nothing carried across a join.
        match wr.op {
            SendOp::Send => self.one_segment_wqe(wr, data, opcode::SEND, 0, None),
            SendOp::SendImm(imm) => self.one_segment_wqe(wr, data, opcode::SEND_IMM, imm, None),
            SendOp::RdmaWrite(r) => self.one_segment_wqe(wr, data, opcode::RDMA_WRITE, 0, Some(r)),
            SendOp::RdmaWriteImm(r, imm) => {
                self.one_segment_wqe(wr, data, opcode::RDMA_WRITE_IMM, imm, Some(r))
            }
            // A READ scatters into memory: no inline data (the general path says so).
            SendOp::RdmaRead(_) if matches!(wr.payload, Payload::Inline(_)) => None,
            SendOp::RdmaRead(r) => self.one_segment_wqe(wr, data, opcode::RDMA_READ, 0, Some(r)),
            _ => None,
        }
    }

    /// [`Self::write_one_segment`] for one operation, with the data segment `data`.
    #[inline(always)]
    fn one_segment_wqe(
        &mut self,
        wr: &SendWr<'_, '_>,
        (data_lo, data_hi): (u64, u64),
        op: u8,
        imm: u32,
        remote: Option<Remote>,
    ) -> Option<(DevPtr, u32)> {
        let first = self.cur_post;
        // Also how a pending fence sends the request to the general builders (see
        // `retired_seen`).
        if first.wrapping_sub(self.retired_seen) >= self.g.wqe_cnt && !self.refresh_room(first) {
            return None;
        }
        let index = (first & self.mask) as usize;
        // The tracker's record first, and everything the WQE needs read into locals: the
        // device stores below are volatile, so nothing read after them could be kept in a
        // register across them.
        // SAFETY: the tracker's slots are wqe_cnt (`new`), so a masked index is in bounds.
        let slot = unsafe { self.slots.get_unchecked(index) };
        slot.wr_id.store(wr.wr_id, Ordering::Relaxed);
        slot.end.store(first.wrapping_add(1), Ordering::Relaxed);
        self.cur_post = first.wrapping_add(1);
        let ds = if remote.is_some() { 3 } else { 2 };
        // Control segment: [idx:16 opcode:8] then [qpn:24 ds:8], both big-endian.
        let idx_op = (((first & 0xffff) << 8) | u32::from(op)).to_be();
        let ctrl = u64::from(idx_op) | self.ctrl_qpn | (u64::from(ds) << 56);
        let fm_ce_se = wr.flags.fm_ce_se() | self.sig_all_bits;
        let ctrl_hi = ((u64::from(fm_ce_se) << 32) | u64::from(imm)).to_be();
        // SAFETY: block `index` is inside the ring.
        let block = unsafe { self.g.ring.add(index << 6) };
        let put = |k: u32, lo: u64, hi: u64| {
            // SAFETY: segment k < 4 of the block.
            unsafe {
                block.write_u64((k as usize) << 4, lo);
                block.write_u64(((k as usize) << 4) + 8, hi);
            }
        };
        if let Some(r) = remote {
            let (lo, hi) = raddr_seg(r);
            put(1, lo, hi);
        }
        put(ds - 1, data_lo, data_hi);
        put(0, ctrl, ctrl_hi);
        Some((block, ds))
    }

    /// The fast path used up the allowance `retired_seen` gave it: read the poller's latest
    /// retired count and give a new one; true if there is room now. False while a fence is
    /// pending: the general builders apply it.
    #[cold]
    fn refresh_room(&mut self, first: u32) -> bool {
        if self.fence_cache != 0 {
            return false;
        }
        self.room_for_one_block(first)
    }

    /// Room for one more one-block request at `first` (= `cur_post`), by the retired count
    /// read now: fewer than `max_post` requests and `wqe_cnt` blocks in flight. Unless a
    /// fence is pending, also sets the fast path's allowance (`retired_seen`) to every
    /// one-block request that fits.
    #[cold]
    fn room_for_one_block(&mut self, first: u32) -> bool {
        let retired = self.tracker.retired.load(Ordering::Acquire);
        let blocks_free = self.g.wqe_cnt.saturating_sub(first.wrapping_sub(retired));
        let requests_free = self.requests.free(self.g.max_post, first, retired);
        let allowance = blocks_free.min(requests_free);
        if self.fence_cache == 0 {
            self.retired_seen = first.wrapping_add(allowance).wrapping_sub(self.g.wqe_cnt);
        }
        allowance > 0
    }

    /// Rings for the one-block WQE just written at `block` (the one before `cur_post`):
    /// BlueFlame copies the block when it carries more than a control segment.
    #[inline(always)]
    fn ring_block(&mut self, block: DevPtr, ds: u32, model: &impl Model) {
        let counter = (self.cur_post & 0xffff).to_be();
        to_device_barrier();
        // SAFETY: the SQ word of the doorbell record (geometry contract), 4-byte aligned.
        unsafe { self.g.dbrec_sq.write_u32(0, counter) };
        if ds > 1 && self.bf.buf_size() >= 64 {
            self.bf.ring_blueflame(1, |_| block, model);
        } else {
            // SAFETY: the control segment, inside the ring.
            let ctrl = unsafe { block.read_u64(0) };
            self.bf.ring_doorbell(ctrl, model);
        }
    }

    /// Takes over where the general builder left the queue: its position, and the fence
    /// the next WQE gets. A pending fence also makes the fast path's room check fail (see
    /// `retired_seen`), so the next request goes through the builders, which apply it.
    /// So does an allowance the builder's blocks used up: left as it was, `cur_post -
    /// retired_seen` would grow with every WQE of the builders alone and, 2^32 blocks on,
    /// wrap back below `wqe_cnt`, an allowance of room nobody checked.
    #[inline(always)]
    fn built(&mut self, cur_post: u32, fence_cache: u8) {
        self.requests.posted(cur_post.wrapping_sub(self.cur_post), cur_post);
        self.cur_post = cur_post;
        self.fence_cache = fence_cache;
        if fence_cache != 0 || cur_post.wrapping_sub(self.retired_seen) > self.g.wqe_cnt {
            self.retired_seen = cur_post.wrapping_sub(self.g.wqe_cnt);
        }
    }

    /// Tests: the state `count` WQEs of `blocks` blocks leave, posted by the general
    /// builder (nothing written to the ring) and each retired before the next is posted,
    /// as a long run of NOPs or atomics does.
    #[cfg(test)]
    pub(crate) fn posted_and_retired_by_the_builders(&mut self, count: u32, blocks: u32) {
        for _ in 0..count {
            let retired = self.tracker.retired.load(Ordering::Acquire);
            assert!(self.requests.free(self.g.max_post, self.cur_post, retired) > 0);
            let end = self.cur_post.wrapping_add(blocks);
            self.built(end, self.fence_cache);
            self.tracker.retired.store(end, Ordering::Release);
        }
    }

    #[inline(always)]
    fn builder(&mut self) -> Builder<'_> {
        let retired = self.tracker.retired.load(Ordering::Acquire);
        let requests_free = self.requests.free(self.g.max_post, self.cur_post, retired);
        Builder {
            g: &self.g,
            sig_all_bits: self.sig_all_bits,
            fence_cache: self.fence_cache,
            tracker: &self.tracker,
            cur_post: self.cur_post,
            retired,
            requests_free,
        }
    }

    /// The full error for a refused request (off the fast path: figures recomputed).
    #[cold]
    fn explain(&self, index: usize, wr: &SendWr<'_, '_>, refusal: Refusal) -> PostError {
        let g = &self.g;
        let inline_len = match wr.payload {
            Payload::Inline(b) => b.len(),
            Payload::InlineSges(s) => s.iter().map(|s| s.len() as usize).sum(),
            Payload::Sges(_) => 0,
        };
        let sges = match wr.payload {
            Payload::Sges(s) | Payload::InlineSges(s) => s.len(),
            Payload::Inline(_) => 0,
        };
        let reason = match refusal {
            _ if g.absent => PostErrorReason::NoSendQueue,
            Refusal::QueueFull => PostErrorReason::QueueFull { capacity: g.max_post },
            Refusal::TooManySges => PostErrorReason::TooManySges { given: sges, max: g.max_sge },
            Refusal::InlineTooLong => {
                PostErrorReason::InlineTooLong { given: inline_len, max: g.max_inline }
            }
            Refusal::BadAtomic => PostErrorReason::BadAtomic,
            Refusal::InlineNotAllowed => PostErrorReason::InlineNotAllowed,
            Refusal::BadBind => PostErrorReason::BadBind,
        };
        PostError { queue: WorkQueue::Send, index, reason }
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
            self.bf.ring_blueflame(
                (ds as usize + 3) >> 2,
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

/// Counts the requests in flight, which the fast path and the one-block path do not: their
/// WQEs take one block each, so the blocks in flight, less the blocks beyond the first of
/// every larger WQE, are the requests. Only the general builders make larger WQEs, and they
/// note each here; the notes of those the device completed are dropped as the retired
/// count passes their end.
#[derive(Debug, Default)]
struct Requests {
    /// Blocks beyond the first of every larger WQE posted (a running, wrapping count).
    extra_posted: u32,
    /// The same of those retired.
    extra_retired: u32,
    /// Larger WQEs not known to be retired: (the block count after the WQE, `extra_posted`
    /// after it).
    larger: std::collections::VecDeque<(u32, u32)>,
}

impl Requests {
    /// A WQE of `blocks` blocks ending at `end` was posted.
    fn posted(&mut self, blocks: u32, end: u32) {
        if blocks > 1 {
            self.extra_posted = self.extra_posted.wrapping_add(blocks - 1);
            self.larger.push_back((end, self.extra_posted));
        }
    }

    /// Requests that may still be posted before `max_post` are in flight, with `cur_post`
    /// blocks posted and `retired` retired.
    fn free(&mut self, max_post: u32, cur_post: u32, retired: u32) -> u32 {
        // Positions are within 2^31 of each other: the wrapping difference read as signed
        // says which is ahead.
        while let Some(&(end, extra)) = self.larger.front() {
            if (retired.wrapping_sub(end) as i32) < 0 {
                break;
            }
            self.extra_retired = extra;
            self.larger.pop_front();
        }
        let blocks = cur_post.wrapping_sub(retired);
        let extra = self.extra_posted.wrapping_sub(self.extra_retired);
        max_post.saturating_sub(blocks.wrapping_sub(extra))
    }
}

/// Why a request is refused, without the figures: small, so a build's result stays in
/// registers; [`SendQueue::explain`] makes the full [`PostErrorReason`].
#[derive(Clone, Copy, Debug)]
enum Refusal {
    QueueFull,
    TooManySges,
    InlineTooLong,
    BadAtomic,
    InlineNotAllowed,
    BadBind,
}

/// The fence bits a WQE with `flags` gets: FENCE if it asked (in `flags` already), else
/// what the previous WQE left for it (rdma-core: `fence = FENCE or next_fence`).
#[inline(always)]
fn fence_after(flags: SendFlags, cache: u8) -> u8 {
    if flags.contains(SendFlags::FENCE) { 0 } else { cache }
}

/// The state one post works with.
struct Builder<'t> {
    g: &'t SendGeometry,
    sig_all_bits: u8,
    /// [`SendQueue::fence_cache`], carried through the post.
    fence_cache: u8,
    tracker: &'t SendTracker,
    cur_post: u32,
    /// The retired count read at the start of the post (re-read only when short of room).
    retired: u32,
    /// Requests the queue takes before `max_post` are in flight, by that count.
    requests_free: u32,
}

/// A raddr segment.
#[inline(always)]
fn raddr_seg(r: Remote) -> (u64, u64) {
    (r.addr.to_be(), (u64::from(r.rkey) << 32).to_be())
}

/// Inline data's size in 16-byte units (the 4-byte header included).
#[inline(always)]
fn inline_units(len: usize) -> u32 {
    if len == 0 { 0 } else { (len as u32 + 4 + 15) >> 4 }
}

impl Builder<'_> {
    /// Writes one WQE at `cur_post` — the segments after the control segment first, the
    /// control segment last, once the size is known; returns (its first WQEBB, its ds).
    #[inline(always)]
    fn build(&mut self, wr: &SendWr<'_, '_>) -> Result<(u32, u32), Refusal> {
        const NONE: (u64, u64) = (0, 0);
        if let SendOp::BindMw(bind) = wr.op {
            return self.build_bind(wr, bind);
        }
        // The operation: opcode, immediate, and up to two segments after the control one.
        let (op, imm, extra, s1, s2) = match wr.op {
            SendOp::Send => (opcode::SEND, 0, 0, NONE, NONE),
            SendOp::SendImm(imm) => (opcode::SEND_IMM, imm, 0, NONE, NONE),
            SendOp::RdmaWrite(r) => (opcode::RDMA_WRITE, 0, 1, raddr_seg(r), NONE),
            SendOp::RdmaWriteImm(r, imm) => (opcode::RDMA_WRITE_IMM, imm, 1, raddr_seg(r), NONE),
            SendOp::RdmaRead(r) => (opcode::RDMA_READ, 0, 1, raddr_seg(r), NONE),
            SendOp::CompareSwap { remote, compare, swap } => {
                check_atomic(wr, remote)?;
                (opcode::ATOMIC_CS, 0, 2, raddr_seg(remote), (swap.to_be(), compare.to_be()))
            }
            SendOp::FetchAdd { remote, add } => {
                check_atomic(wr, remote)?;
                (opcode::ATOMIC_FA, 0, 2, raddr_seg(remote), (add.to_be(), 0))
            }
            SendOp::Nop => (opcode::NOP, 0, 0, NONE, NONE),
            SendOp::BindMw(_) => unreachable!("binds are built by build_bind"),
        };
        let data_bound = match wr.payload {
            _ if op == opcode::NOP => 0,
            Payload::Sges(sges) => {
                if sges.len() > self.g.max_sge as usize {
                    return Err(Refusal::TooManySges);
                }
                sges.len() as u32
            }
            Payload::Inline(_) | Payload::InlineSges(_)
                if matches!(op, opcode::RDMA_READ | opcode::ATOMIC_CS | opcode::ATOMIC_FA) =>
            {
                return Err(Refusal::InlineNotAllowed);
            }
            Payload::Inline(bytes) => self.inline_bound(bytes.len())?,
            Payload::InlineSges(sges) => {
                self.inline_bound(sges.iter().map(|s| s.len() as usize).sum())?
            }
        };
        let first = self.cur_post;
        let bound = 1 + extra + data_bound;
        if self.requests_free == 0 {
            return Err(Refusal::QueueFull);
        }
        if first.wrapping_sub(self.retired) + ((bound + 3) >> 2) > self.g.wqe_cnt {
            self.make_room(wr, bound)?;
        }

        let w = Segments {
            ring: self.g.ring,
            start: first.wrapping_mul(4),
            mask: self.g.wqe_cnt * 4 - 1,
        };
        let mut k = 1;
        if extra > 0 {
            w.put(k, s1);
            k += 1;
            if extra > 1 {
                w.put(k, s2);
                k += 1;
            }
        }
        if op != opcode::NOP {
            match wr.payload {
                Payload::Sges(sges) => {
                    for s in sges {
                        if !s.is_empty() {
                            w.put(
                                k,
                                (
                                    (u64::from(s.len()) << 32 | u64::from(s.lkey())).to_be(),
                                    s.addr().to_be(),
                                ),
                            );
                            k += 1;
                        }
                    }
                }
                Payload::Inline(bytes) => k += w.inline(k, bytes),
                Payload::InlineSges(sges) => k += w.inline_from_sges(k, sges),
            }
        }
        let ds = k;
        let fm_ce_se =
            wr.flags.fm_ce_se() | self.sig_all_bits | fence_after(wr.flags, self.fence_cache);
        self.fence_cache = 0;
        let idx_op = ((first & 0xffff) << 8) | u32::from(op);
        let qpn_ds = (self.g.qpn << 8) | ds;
        w.put(
            0,
            (
                ((u64::from(idx_op) << 32) | u64::from(qpn_ds)).to_be(),
                ((u64::from(fm_ce_se) << 32) | u64::from(imm)).to_be(),
            ),
        );

        let blocks = (ds + 3) >> 2;
        let slot = self.tracker.slot(first);
        slot.wr_id.store(wr.wr_id, Ordering::Relaxed);
        slot.end.store(first.wrapping_add(blocks), Ordering::Relaxed);
        self.cur_post = first.wrapping_add(blocks);
        Ok((first, ds))
    }

    /// A type 1 memory-window bind (one scatter entry) or unbind (none), segment for
    /// segment as rdma-core's `set_bind_wr` writes it: UMR control (3 ds), mkey context
    /// (4 ds), and for a bind one KLM padded to 64 bytes (4 ds). The bytes rdma-core leaves
    /// untouched in an unbind's mkey context (outside its mask) are written as zeros.
    #[cold]
    fn build_bind(&mut self, wr: &SendWr<'_, '_>, bind: MwBind) -> Result<(u32, u32), Refusal> {
        let region = match wr.payload {
            Payload::Sges([]) => None,
            Payload::Sges([s]) if !s.is_empty() && s.len() <= 1 << 31 => Some(*s),
            _ => return Err(Refusal::BadBind),
        };
        let ds: u32 = if region.is_some() { 12 } else { 8 };
        let first = self.cur_post;
        if self.requests_free == 0 {
            return Err(Refusal::QueueFull);
        }
        if first.wrapping_sub(self.retired) + ds.div_ceil(4) > self.g.wqe_cnt {
            self.retired = self.tracker.retired.load(Ordering::Acquire);
            if first.wrapping_sub(self.retired) + ds.div_ceil(4) > self.g.wqe_cnt {
                return Err(Refusal::QueueFull);
            }
        }
        let w = Segments {
            ring: self.g.ring,
            start: first.wrapping_mul(4),
            mask: self.g.wqe_cnt * 4 - 1,
        };
        let type_1_key = 0xffff_ff00 | (bind.new_key & 0xff);
        let mut umr = WqeUmrCtrlSeg {
            flags: umr_ctrl_flag::TRANSLATION_OFFSET | umr_ctrl_flag::INLINE,
            mkey_mask: U64::new(mkey_mask::FREE | mkey_mask::MKEY),
            ..Default::default()
        };
        let mut mkey = WqeMkeyContextSeg { qpn_mkey: U32::new(type_1_key), ..Default::default() };
        match region {
            Some(s) => {
                umr.klm_octowords = U16::new(4); // get_klm_octo(1)
                umr.mkey_mask = U64::new(
                    umr.mkey_mask.get()
                        | mkey_mask::LEN
                        | mkey_mask::START_ADDR
                        | mkey_mask::ACCESS_LOCAL_WRITE
                        | mkey_mask::ACCESS_REMOTE_READ
                        | mkey_mask::ACCESS_REMOTE_WRITE
                        | mkey_mask::ACCESS_ATOMIC,
                );
                mkey.access_flags = mkey_rights(bind.access);
                mkey.start_addr = U64::new(s.addr());
                mkey.len = U64::new(u64::from(s.len()));
            }
            None => mkey.free = MKEY_CONTEXT_FREE,
        }
        let mut k = 1;
        for bytes in [umr.as_bytes(), mkey.as_bytes()] {
            k += w.put_bytes(k, bytes);
        }
        if let Some(s) = region {
            let klm = WqeUmrKlmSeg {
                byte_count: U32::new(s.len()),
                mkey: U32::new(s.lkey()),
                address: U64::new(s.addr()),
            };
            let mut padded = [0u8; 64];
            padded[..16].copy_from_slice(klm.as_bytes());
            k += w.put_bytes(k, &padded);
        }
        debug_assert_eq!(k, ds);
        let fm_ce_se =
            wr.flags.fm_ce_se() | self.sig_all_bits | fence_after(wr.flags, self.fence_cache);
        // The WQE after a bind waits for it (rdma-core's `next_fence`).
        self.fence_cache = wqe_ctrl::INITIATOR_SMALL_FENCE;
        let idx_op = ((first & 0xffff) << 8) | u32::from(opcode::UMR);
        let qpn_ds = (self.g.qpn << 8) | ds;
        w.put(
            0,
            (
                ((u64::from(idx_op) << 32) | u64::from(qpn_ds)).to_be(),
                ((u64::from(fm_ce_se) << 32) | u64::from(bind.window_key)).to_be(),
            ),
        );
        let blocks = ds.div_ceil(4);
        let slot = self.tracker.slot(first);
        slot.wr_id.store(wr.wr_id, Ordering::Relaxed);
        slot.end.store(first.wrapping_add(blocks), Ordering::Relaxed);
        self.cur_post = first.wrapping_add(blocks);
        Ok((first, ds))
    }

    #[inline(always)]
    fn inline_bound(&self, len: usize) -> Result<u32, Refusal> {
        if len > self.g.max_inline as usize {
            return Err(Refusal::InlineTooLong);
        }
        Ok(inline_units(len))
    }

    /// The slow path of the room check: the exact size, against the latest retirements.
    #[cold]
    fn make_room(&mut self, wr: &SendWr<'_, '_>, bound: u32) -> Result<(), Refusal> {
        let empty = match wr.payload {
            Payload::Sges(sges) => sges.iter().filter(|s| s.is_empty()).count() as u32,
            _ => 0,
        };
        self.retired = self.tracker.retired.load(Ordering::Acquire);
        if self.cur_post.wrapping_sub(self.retired) + ((bound - empty + 3) >> 2) > self.g.wqe_cnt {
            return Err(Refusal::QueueFull);
        }
        Ok(())
    }
}

/// The mkey context's access byte for a window granting `access` (`set_umr_mkey_seg`).
fn mkey_rights(access: Access) -> u8 {
    let bit = |right: Access, flag: u8| if access.contains(right) { flag } else { 0 };
    bit(Access::LOCAL_WRITE, mkey_access::LOCAL_WRITE)
        | bit(Access::REMOTE_WRITE, mkey_access::REMOTE_WRITE)
        | bit(Access::REMOTE_READ, mkey_access::REMOTE_READ)
        | bit(Access::REMOTE_ATOMIC, mkey_access::ATOMIC)
}

/// An atomic needs one 8-byte local entry and an 8-byte aligned target.
#[inline(always)]
fn check_atomic(wr: &SendWr<'_, '_>, remote: Remote) -> Result<(), Refusal> {
    let one_8_byte_entry = matches!(wr.payload, Payload::Sges([s]) if s.len() == 8);
    if one_8_byte_entry && remote.addr.is_multiple_of(8) { Ok(()) } else { Err(Refusal::BadAtomic) }
}

/// The 16-byte segments of one WQE, by index from its control segment, wrapping at the
/// ring's end.
#[derive(Clone, Copy)]
struct Segments {
    ring: DevPtr,
    /// Index of the control segment (unwrapped, in 16-byte units).
    start: u32,
    /// Segments in the ring, minus one.
    mask: u32,
}

impl Segments {
    /// Stores segment `k` from two 8-byte halves already in memory order.
    #[inline(always)]
    fn put(&self, k: u32, (lo, hi): (u64, u64)) {
        let at = ((self.start.wrapping_add(k) & self.mask) as usize) << 4;
        // SAFETY: segment `k` wraps inside the ring (mask), 16-byte aligned.
        unsafe {
            self.ring.write_u64(at, lo);
            self.ring.write_u64(at + 8, hi);
        }
    }

    /// An inline segment from segment `k` on: the byte count with the inline bit, then the
    /// bytes, in whole 16-byte segments (the tail zero-padded); returns the segments used.
    #[inline(always)]
    fn inline(&self, k: u32, data: &[u8]) -> u32 {
        if data.is_empty() {
            return 0;
        }
        let header = u128::from(u32::from_ne_bytes((data.len() as u32 | INLINE_SEG).to_be_bytes()));
        let first = data.len().min(12);
        self.put_u128(k, header | (load_le(&data[..first]) << 32));
        let mut used = 1;
        for chunk in data[first..].chunks(16) {
            self.put_u128(k + used, load_le(chunk));
            used += 1;
        }
        used
    }

    /// Inline data gathered from registered memory, read volatile (the device may be
    /// writing other parts of those regions).
    fn inline_from_sges(&self, k: u32, sges: &[Sge<'_>]) -> u32 {
        let mut bytes = Vec::with_capacity(sges.iter().map(|s| s.len() as usize).sum());
        for s in sges {
            for i in 0..s.len() as usize {
                // SAFETY: the Sge names `len` readable bytes at its address (its contract:
                // made by a region covering them, or by `Sge::from_raw`).
                bytes.push(unsafe { ((s.addr() as usize + i) as *const u8).read_volatile() });
            }
        }
        self.inline(k, &bytes)
    }

    /// Segments from `k` on holding `bytes` (a multiple of 16) as they are; returns how
    /// many.
    fn put_bytes(&self, k: u32, bytes: &[u8]) -> u32 {
        let mut used = 0;
        for seg in bytes.chunks_exact(16) {
            let half = |at: usize| u64::from_ne_bytes(seg[at..at + 8].try_into().expect("8 bytes"));
            self.put(k + used, (half(0), half(8)));
            used += 1;
        }
        used
    }

    #[inline(always)]
    fn put_u128(&self, k: u32, v: u128) {
        self.put(k, (v as u64, (v >> 64) as u64));
    }
}

/// The inline segment of 1 to 12 bytes, in memory order: the byte count with the inline
/// bit, the bytes, zeros. Overlapping loads instead of a byte loop.
#[inline(always)]
fn small_inline_seg(b: &[u8]) -> (u64, u64) {
    let len = b.len();
    let u32_at = |at: usize| u64::from(u32::from_le_bytes(b[at..at + 4].try_into().expect("4")));
    let header = u64::from((len as u32 | INLINE_SEG).to_be());
    if len >= 8 {
        // Bytes 0..4 follow the header; the second half is bytes 4..12: the last 8 bytes
        // (len-8..len) shifted down past the 12 - len of them before byte 4 (0 to 32
        // bits), zeros coming in above byte `len`.
        let last8 = u64::from_le_bytes(b[len - 8..].try_into().expect("8 bytes"));
        return (header | (u32_at(0) << 32), last8 >> (8 * (12 - len)));
    }
    // The bytes as a little-endian number, at most 7 of them.
    let bytes = if len >= 4 {
        u32_at(0) | ((u32_at(len - 4) >> (8 * (8 - len))) << 32)
    } else {
        let byte = |i: usize| u64::from(b[i]) << (8 * i);
        byte(0) | byte(len / 2) | byte(len - 1)
    };
    (header | (bytes << 32), bytes >> 32)
}

/// Up to 16 bytes as a little-endian number: the value whose memory image (on the
/// little-endian hosts ferrodat supports) is those bytes followed by zeros.
#[inline(always)]
fn load_le(b: &[u8]) -> u128 {
    let mut v = 0u128;
    let mut i = 0;
    while b.len() - i >= 8 {
        v |= u128::from(u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))) << (8 * i);
        i += 8;
    }
    if b.len() - i >= 4 {
        v |= u128::from(u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))) << (8 * i);
        i += 4;
    }
    while i < b.len() {
        v |= u128::from(b[i]) << (8 * i);
        i += 1;
    }
    v
}
