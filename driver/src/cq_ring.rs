//! Polling a CQ: CQE64s taken by the ownership rule, decoded into [`WorkCompletion`]s with
//! the wr_id found through the QP's user index (cqe_version 1); the consumer index
//! published in the doorbell record; arming for the next (solicited) completion.
//!
//! One thread polls a CQ at a time (the ring is behind `&mut`). QPs attach and detach from
//! any thread through [`CqAttachments`]: the poller picks changes up at its next batch poll
//! with one relaxed load when nothing changed, and when a one-at-a-time poll meets an entry
//! of a QP it does not know yet or one flagged detached; on a detach it marks the QP's CQEs
//! still in the ring as stale, so a user index can be reused at once (rdma-core's
//! `cq_clean`).

use crate::completion::{WcOpcode, WcStatus, WorkCompletion};
use crate::doorbell::{CqDoorbell, Model};
use crate::mmio::{DevPtr, from_device_barrier, to_device_barrier};
use crate::recv_queue::RecvTracker;
use crate::send_queue::SendTracker;
use crate::srq_ring::SrqRing;
use ferrodat_abi::mlx5::{
    CQ_ARM_DB, CQ_CI_MASK, CQ_DB_REQ_NOT, CQ_DB_REQ_NOT_SOL, CQ_SET_CI, CQE_OWNER_MASK,
    CQE_SE_MASK, cq_arm_doorbell, cq_arm_word, cqe_opcode, opcode,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A user index no QP gets: CQEs of a detached QP are rewritten to it.
pub const STALE_UIDX: u32 = 0x00ff_ffff;

/// Where a QP's receive completions come from.
#[derive(Debug)]
pub enum RecvSource {
    /// Its own receive queue.
    Queue(Arc<RecvTracker>),
    /// A shared receive queue.
    Srq(Arc<SrqRing>),
}

/// What a CQ needs to complete one QP's work requests.
#[derive(Debug)]
pub struct QpCompletions {
    pub send: Arc<SendTracker>,
    pub recv: RecvSource,
    /// The QP's number, reported in its completions (taken from here rather than from each
    /// CQE: one load instead of a load, a mask and a byte swap).
    pub qpn: u32,
    /// Set by [`CqAttachments::detach`] once the detach is queued: a poller that finds it
    /// leaves the entry to its general path, which takes the detach in first. So the
    /// one-at-a-time poll needs no look at the CQ's attachments while nothing is detached.
    detached: AtomicBool,
}

impl QpCompletions {
    pub fn new(qpn: u32, send: Arc<SendTracker>, recv: RecvSource) -> QpCompletions {
        QpCompletions { send, recv, qpn, detached: AtomicBool::new(false) }
    }
}

/// QPs attaching to and detaching from a CQ, waiting for its poller.
#[derive(Debug, Default)]
pub struct CqAttachments {
    changed: AtomicBool,
    pending: Mutex<Vec<(u32, Change)>>,
}

/// One attachment change, for the poller.
#[derive(Debug)]
enum Change {
    Attach(Arc<QpCompletions>),
    /// The QP's CQEs are all before CQ index `stale_before` (24 bits, as the doorbell
    /// record counts): those still in the ring are skipped, and nothing after that index,
    /// which can only be a new connection's under the same user index.
    Detach {
        stale_before: u32,
    },
}

impl CqAttachments {
    /// The QP with user index `uidx` reports to this CQ from now on.
    pub fn attach(&self, uidx: u32, qp: Arc<QpCompletions>) {
        self.push(uidx, Change::Attach(qp));
    }

    /// The QP with user index `uidx`, whose completions are `qp`, was destroyed or reset;
    /// the device writes no more CQEs for what it had posted, and those it wrote all lie
    /// before CQ index `stale_before` (the index the device was to write next, at the time).
    /// `left_in_ring`: some of them are still unpolled.
    ///
    /// A QP whose attach the poller never took in, and which left nothing in the ring, is
    /// simply taken out of the queue: the attach and the detach would cancel out, and a CQ
    /// whose poller meets no entry (one that never completes anything, or is never polled)
    /// would otherwise keep every such QP's completions, for as long as it lives.
    pub fn detach(&self, uidx: u32, qp: &QpCompletions, stale_before: u32, left_in_ring: bool) {
        {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            let never_taken_in = || {
                pending.iter().rposition(|(u, change)| {
                    *u == uidx
                        && matches!(change, Change::Attach(a) if std::ptr::eq(Arc::as_ptr(a), qp))
                })
            };
            match never_taken_in() {
                Some(at) if !left_in_ring => drop(pending.remove(at)),
                _ => {
                    pending.push((uidx, Change::Detach { stale_before }));
                    self.changed.store(true, Ordering::Release);
                }
            }
        }
        // After the queue changed: a poller that sees the flag finds the detach queued.
        qp.detached.store(true, Ordering::Release);
    }

    fn push(&self, uidx: u32, change: Change) {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).push((uidx, change));
        self.changed.store(true, Ordering::Release);
    }
}

/// Geometry of a CQ, from CREATE_CQ.
#[derive(Clone, Copy, Debug)]
pub struct CqGeometry {
    /// `ncqe` 64-byte entries, every op_own initialised to 0xF0.
    pub ring: DevPtr,
    /// A power of two.
    pub ncqe: u32,
    /// The CQ's doorbell record: word 0 set_ci, word 1 the arm word.
    pub dbrec: DevPtr,
    /// CQ number (for the arm doorbell).
    pub cqn: u32,
}

/// The CQ as its poller owns it.
#[derive(Debug)]
pub struct CqRing {
    g: CqGeometry,
    /// Consumer index (running).
    ci: u32,
    /// Where the poll loop resumes, kept with `ci` so a poll starts without index math:
    /// entry `ci` of the ring, the owner bit software expects there (the parity of the
    /// pass), and the end of the ring.
    next: DevPtr,
    parity: u8,
    ring_end: DevPtr,
    doorbell: CqDoorbell,
    attachments: Arc<CqAttachments>,
    /// QPs by user index.
    qps: Vec<Option<Arc<QpCompletions>>>,
}

impl CqRing {
    /// # Safety
    /// The geometry's ring and doorbell record stay mapped and lent to the device for the
    /// ring's life, and nothing else writes them.
    pub unsafe fn new(g: CqGeometry, doorbell: CqDoorbell) -> CqRing {
        let mut ring = CqRing {
            g,
            ci: 0,
            next: g.ring,
            parity: 0,
            ring_end: g.ring,
            doorbell,
            attachments: Arc::new(CqAttachments::default()),
            qps: Vec::new(),
        };
        ring.resume_at_ci();
        ring
    }

    /// Sets where the poll loop resumes from `ci` and the geometry.
    fn resume_at_ci(&mut self) {
        // SAFETY: entry `ci & (ncqe-1)` is inside the ring; `ring_end` is one past its end.
        unsafe {
            self.next = self.g.ring.add(((self.ci & (self.g.ncqe - 1)) as usize) << 6);
            self.ring_end = self.g.ring.add((self.g.ncqe as usize) << 6);
        }
        self.parity = u8::from(self.ci & self.g.ncqe != 0);
    }

    /// Where QPs attach.
    pub fn attachments(&self) -> &Arc<CqAttachments> {
        &self.attachments
    }

    /// Fills `out` with up to `out.len()` completions; if none waits, asks the model for
    /// progress once and looks again. Returns how many were written.
    #[inline(always)]
    pub fn poll(&mut self, out: &mut [WorkCompletion], model: &impl Model) -> usize {
        // One entry, the commonest request (a consumer taking completions one by one):
        // straight-line code for the entry at the consumer index, which takes attachment
        // changes in only when it meets one (see `poll_one`).
        if let [wc] = out {
            return usize::from(self.poll_one(wc, model));
        }
        if self.attachments.changed.load(Ordering::Relaxed) {
            self.apply_attachments();
        }
        let mut n = self.poll_ring(out);
        if n == 0 && !out.is_empty() && model.progress() {
            n = self.poll_ring(out);
        }
        n
    }

    /// [`CqRing::poll`] of one completion into `wc` (what a one-entry `out` gets), for
    /// callers that take completions one at a time (an EVD's dequeue) and need no slice.
    /// True if one was written.
    ///
    /// Straight-line code for the two commonest entries (a requester's success without a
    /// byte count, a plain receive into the QP's own queue) and for an empty CQ; everything
    /// else (attachments changed, other entries, entries that complete nothing) is one
    /// out-of-line call, so the caller keeps its values in registers.
    ///
    /// Attachment changes need no look here: a new QP's entry is not in the table yet, and a
    /// destroyed one is flagged `detached`, so either way the entry goes to the general
    /// path, which takes the changes in first.
    #[inline(always)]
    pub fn poll_one(&mut self, wc: &mut WorkCompletion, model: &impl Model) -> bool {
        match self.poll_one_common(wc) {
            Polled::Found => true,
            Polled::Empty => model.progress() && self.poll_one_after_progress(wc),
            Polled::Other => {
                self.poll_one_slow(wc) || (model.progress() && self.poll_one_after_progress(wc))
            }
        }
    }

    /// [`Self::poll_one`] once the model made progress: the same straight-line code again
    /// (a model's progress usually just wrote the commonest entry).
    #[inline(always)]
    fn poll_one_after_progress(&mut self, wc: &mut WorkCompletion) -> bool {
        match self.poll_one_common(wc) {
            Polled::Found => true,
            Polled::Empty => false,
            Polled::Other => self.poll_one_slow(wc),
        }
    }

    /// The entry at the consumer index, if it is one of the two commonest.
    #[inline(always)]
    fn poll_one_common(&mut self, wc: &mut WorkCompletion) -> Polled {
        let cqe = self.next;
        // SAFETY: byte 63 of entry `cqe`, inside the ring.
        let op_own = unsafe { cqe.read_u8(63) };
        if op_own >> 4 == cqe_opcode::INVALID || (op_own ^ self.parity) & 1 != 0 {
            return Polled::Empty;
        }
        from_device_barrier();
        if decode_common(&self.qps, cqe, op_own, wc) {
            self.consumed_one(cqe);
            return Polled::Found;
        }
        Polled::Other
    }

    /// [`Self::poll_one`] for whatever its straight-line code leaves: takes attachment
    /// changes in, then the entry at the consumer index with the general decoder (false if
    /// the CQ is empty).
    #[cold]
    #[inline(never)]
    fn poll_one_slow(&mut self, wc: &mut WorkCompletion) -> bool {
        if self.attachments.changed.load(Ordering::Relaxed) {
            self.apply_attachments();
        }
        self.poll_ring_one(wc)
    }

    /// True if a CQE waits (without consuming it).
    pub fn has_completion(&self) -> bool {
        self.owned_cqe(self.ci).is_some()
    }

    #[inline(always)]
    fn owned_cqe(&self, index: u32) -> Option<(DevPtr, u8)> {
        // SAFETY: entry `index & (ncqe-1)` is inside the ring.
        let cqe = unsafe { self.g.ring.add(((index & (self.g.ncqe - 1)) as usize) << 6) };
        // SAFETY: byte 63 of that entry.
        let op_own = unsafe { cqe.read_u8(63) };
        let sw_owner = index & self.g.ncqe != 0;
        if op_own >> 4 == cqe_opcode::INVALID || ((op_own & CQE_OWNER_MASK) != 0) != sw_owner {
            return None;
        }
        Some((cqe, op_own))
    }

    #[inline(always)]
    fn poll_ring(&mut self, out: &mut [WorkCompletion]) -> usize {
        // The loop works on locals: stores to the CQEs and completions cannot alias them.
        let ring = self.g.ring;
        let ring_end = self.ring_end;
        let qps = &self.qps[..];
        let mut cqe = self.next;
        // The owner bit software expects: the parity of the pass over the ring, flipped
        // at the ring's end (no shift or mask per entry).
        let mut parity = self.parity;
        // Completions are written through a pointer walking `out` (one register, no index
        // arithmetic); entries that complete nothing are counted apart.
        let first_wc = out.as_mut_ptr();
        // SAFETY: one past the end of `out`.
        let end_wc = unsafe { first_wc.add(out.len()) };
        let mut wc = first_wc;
        let mut skipped = 0u32;
        let mut attached_meanwhile = false;
        while wc != end_wc {
            // SAFETY: byte 63 of entry `cqe`, inside the ring.
            let op_own = unsafe { cqe.read_u8(63) };
            // Software's turn: a valid opcode, and the owner bit equal to the parity.
            if op_own >> 4 == cqe_opcode::INVALID || (op_own ^ parity) & 1 != 0 {
                break;
            }
            from_device_barrier();
            // SAFETY: `wc` is before `end_wc`: an element of `out`, borrowed mutably here.
            if decode(qps, cqe, op_own, unsafe { &mut *wc }) {
                // SAFETY: at most one past the end of `out`.
                wc = unsafe { wc.add(1) };
            } else if self.may_be_newly_attached(cqe) {
                // Left for a look after taking the changes in.
                attached_meanwhile = true;
                break;
            } else {
                skipped += 1;
            }
            // SAFETY: at most one past the last entry, and then replaced by the first.
            cqe = unsafe { cqe.add(64) };
            if cqe == ring_end {
                (cqe, parity) = wrap(ring, parity);
            }
        }
        // SAFETY: both in `out` (or one past it), `wc` not before `first_wc`.
        let n = unsafe { wc.offset_from(first_wc) } as usize;
        let taken = n as u32 + skipped;
        if taken != 0 {
            let ci = self.ci.wrapping_add(taken);
            self.ci = ci;
            self.next = cqe;
            self.parity = parity;
            to_device_barrier();
            // SAFETY: word 0 of the CQ doorbell record (geometry contract).
            unsafe {
                self.g.dbrec.write_u32(CQ_SET_CI * 4, (ci & CQ_CI_MASK).to_be());
            }
        }
        if attached_meanwhile {
            return n + self.poll_ring_after_attachments(&mut out[n..]);
        }
        n
    }

    /// [`Self::poll_ring`] met an entry of a QP it does not know while attachment changes
    /// wait: takes them in and polls on from that entry (skipped if still nobody's).
    #[cold]
    #[inline(never)]
    fn poll_ring_after_attachments(&mut self, out: &mut [WorkCompletion]) -> usize {
        self.apply_attachments();
        let cqe = self.next;
        let (first, rest) = out.split_first_mut().expect("the entry was met with room left");
        if decode(&self.qps, cqe, self.owned_op_own(cqe), first) {
            self.consumed_one(cqe);
            return 1 + self.poll_ring(rest);
        }
        self.consumed_one(cqe);
        self.poll_ring(out)
    }

    /// Entry `cqe` names no QP of the table while attachment changes wait: perhaps one
    /// attached after the poll took the changes in (its first completion can follow at
    /// once), not a stranger's.
    fn may_be_newly_attached(&self, cqe: DevPtr) -> bool {
        qp_of(&self.qps, cqe).is_none() && self.attachments.changed.load(Ordering::Acquire)
    }

    /// Byte 63 of entry `cqe`, which software owns (seen so before).
    fn owned_op_own(&self, cqe: DevPtr) -> u8 {
        // SAFETY: byte 63 of an entry inside the ring.
        unsafe { cqe.read_u8(63) }
    }

    /// [`Self::poll_ring`] for one completion. The entry at the consumer index is looked
    /// at in straight-line code; if it completes nothing (a resize marker, a detached QP's
    /// leftover), the loop that passes over such entries takes over, out of line.
    #[inline(always)]
    fn poll_ring_one(&mut self, wc: &mut WorkCompletion) -> bool {
        let cqe = self.next;
        // SAFETY: byte 63 of entry `cqe`, inside the ring.
        let op_own = unsafe { cqe.read_u8(63) };
        if op_own >> 4 == cqe_opcode::INVALID || (op_own ^ self.parity) & 1 != 0 {
            return false;
        }
        from_device_barrier();
        if !decode(&self.qps, cqe, op_own, wc) {
            return self.poll_ring_one_past_skipped(wc);
        }
        self.consumed_one(cqe);
        true
    }

    /// Moves the consumer index past entry `cqe` (the one at the index) and publishes it.
    #[inline(always)]
    fn consumed_one(&mut self, cqe: DevPtr) {
        self.step_past(cqe);
        self.publish_ci();
    }

    /// Moves the consumer index past entry `cqe` (the one at the index).
    #[inline(always)]
    fn step_past(&mut self, cqe: DevPtr) {
        // SAFETY: at most one past the last entry, and then replaced by the first.
        let mut next = unsafe { cqe.add(64) };
        if next == self.ring_end {
            (next, self.parity) = wrap(self.g.ring, self.parity);
        }
        self.next = next;
        self.ci = self.ci.wrapping_add(1);
    }

    /// Tells the device how far software has consumed (the doorbell record's set_ci).
    #[inline(always)]
    fn publish_ci(&mut self) {
        to_device_barrier();
        // SAFETY: word 0 of the CQ doorbell record (geometry contract).
        unsafe { self.g.dbrec.write_u32(CQ_SET_CI * 4, (self.ci & CQ_CI_MASK).to_be()) };
    }

    /// [`Self::poll_ring_one`] after an entry that completes nothing: passes over it and
    /// any more such, up to the first that completes something (true, in `wc`) or the
    /// first the device still owns.
    #[cold]
    #[inline(never)]
    fn poll_ring_one_past_skipped(&mut self, wc: &mut WorkCompletion) -> bool {
        let found = loop {
            let cqe = self.next;
            // Take the changes in and look again before passing over the entry.
            if self.may_be_newly_attached(cqe) {
                self.apply_attachments();
                if decode(&self.qps, cqe, self.owned_op_own(cqe), wc) {
                    self.step_past(cqe);
                    break true;
                }
            }
            self.step_past(cqe);
            let cqe = self.next;
            // SAFETY: byte 63 of entry `cqe`, inside the ring.
            let op_own = unsafe { cqe.read_u8(63) };
            if op_own >> 4 == cqe_opcode::INVALID || (op_own ^ self.parity) & 1 != 0 {
                break false;
            }
            from_device_barrier();
            if decode(&self.qps, cqe, op_own, wc) {
                self.step_past(cqe);
                break true;
            }
        };
        self.publish_ci();
        found
    }

    #[cold]
    fn apply_attachments(&mut self) {
        self.attachments.changed.store(false, Ordering::Relaxed);
        let changes = std::mem::take(
            &mut *self.attachments.pending.lock().unwrap_or_else(|e| e.into_inner()),
        );
        for (uidx, change) in changes {
            let i = uidx as usize;
            let qp = match change {
                Change::Attach(qp) => Some(qp),
                Change::Detach { stale_before } => {
                    self.mark_stale(uidx, stale_before);
                    None
                }
            };
            if self.qps.len() <= i {
                self.qps.resize_with(i + 1, || None);
            }
            self.qps[i] = qp;
        }
    }

    /// Rewrites the user index of `uidx`'s CQEs still in the ring before index
    /// `stale_before` (software owns them; the device writes no more for the detached QP)
    /// so they are skipped. Entries from that index on keep theirs: a QP reset and
    /// connected again keeps its user index, and its new completions may already be here.
    /// The SRQ entries the skipped receive completions consumed go back to the SRQ, as
    /// rdma-core's CQ clean frees them: nothing else would, and the SRQ would shrink.
    fn mark_stale(&mut self, uidx: u32, stale_before: u32) {
        let ahead = stale_before.wrapping_sub(self.ci) & CQ_CI_MASK;
        if ahead > self.g.ncqe {
            return; // the poller is past that index already
        }
        let srq = match self.qps.get(uidx as usize) {
            Some(Some(qp)) => match &qp.recv {
                RecvSource::Srq(srq) => Some(srq.clone()),
                RecvSource::Queue(_) => None,
            },
            _ => None,
        };
        let end = self.ci.wrapping_add(ahead);
        let mut i = self.ci;
        while i != end
            && let Some((cqe, op_own)) = self.owned_cqe(i)
        {
            from_device_barrier();
            // SAFETY: the srqn_uidx and wqe_counter words of a software-owned CQE.
            unsafe {
                if u32::from_be(cqe.read_u32(32)) & 0x00ff_ffff == uidx {
                    if let Some(srq) = &srq
                        && is_responder(op_own >> 4)
                    {
                        srq.complete(u16::from_be(cqe.read_u16(60)));
                    }
                    cqe.write_u32(32, STALE_UIDX.to_be());
                }
            }
            i = i.wrapping_add(1);
            if i.wrapping_sub(self.ci) > self.g.ncqe {
                break;
            }
        }
    }

    /// Requests one completion event for the next CQE (`solicited`: the next solicited or
    /// error CQE), rdma-core's `mlx5_arm_cq`. `arm_sn` counts the completion events
    /// consumed from the channel so far (`ibv_get_cq_event`).
    pub fn arm(&mut self, solicited: bool, arm_sn: u32, model: &impl Model) {
        let sn = arm_sn & 3;
        let cmd = if solicited { CQ_DB_REQ_NOT_SOL } else { CQ_DB_REQ_NOT };
        let word = cq_arm_word(sn, cmd, self.ci & CQ_CI_MASK);
        // SAFETY: word 1 of the CQ doorbell record (geometry contract).
        unsafe { self.g.dbrec.write_u32(CQ_ARM_DB * 4, word.to_be()) };
        self.doorbell.ring(cq_arm_doorbell(word, self.g.cqn), model);
    }

    /// Moves to the ring RESIZE_CQ installed, as rdma-core's `mlx5_cq_resize_copy_cqes`
    /// does: the device wrote every completion before the resize into the old ring, then a
    /// RESIZE_CQ entry, and continues in the new ring after that entry's index. The waiting
    /// completions are copied to the same running indices (shifted by one, so the resize
    /// entry's slot is consumed at the front) with the new ring's owner bits; nothing is
    /// lost. Fails if the old ring holds no RESIZE_CQ entry (the device did not resize).
    ///
    /// # Safety
    /// As for [`CqRing::new`], for the new ring (`new_ncqe` 64-byte entries, every op_own
    /// 0xF0).
    pub unsafe fn switch_buffer(&mut self, new_ring: DevPtr, new_ncqe: u32) -> Result<(), u32> {
        // A detach waiting to be taken in counts its stale entries by index in the old ring:
        // marked there first, they move with the copy (which shifts every index by one).
        if self.attachments.changed.load(Ordering::Acquire) {
            self.apply_attachments();
        }
        let mut i = self.ci;
        loop {
            let Some((cqe, op_own)) = self.owned_cqe(i) else {
                return Err(i.wrapping_sub(self.ci));
            };
            from_device_barrier();
            if op_own >> 4 == cqe_opcode::RESIZE_CQ {
                break;
            }
            let to = i.wrapping_add(1);
            // SAFETY: entry `to` of the new ring (caller's contract).
            let dst = unsafe { new_ring.add(((to & (new_ncqe - 1)) as usize) << 6) };
            let mut bytes = [0u8; 64];
            // SAFETY: a software-owned CQE of the old ring; the new entry is ours until we
            // publish the consumer index.
            unsafe {
                cqe.read_bytes(0, &mut bytes);
                bytes[63] = (bytes[63] & !CQE_OWNER_MASK) | u8::from(to & new_ncqe != 0);
                dst.write_bytes(0, &bytes);
            }
            i = i.wrapping_add(1);
            if i.wrapping_sub(self.ci) > self.g.ncqe {
                return Err(i.wrapping_sub(self.ci));
            }
        }
        self.g.ring = new_ring;
        self.g.ncqe = new_ncqe;
        self.ci = self.ci.wrapping_add(1);
        self.resume_at_ci();
        to_device_barrier();
        // SAFETY: word 0 of the CQ doorbell record (geometry contract).
        unsafe { self.g.dbrec.write_u32(CQ_SET_CI * 4, (self.ci & CQ_CI_MASK).to_be()) };
        Ok(())
    }
}

/// The CQ index (24 bits, as the doorbell record counts) just past the entries software
/// owns from index `from` on: where the device writes its next CQE. Reads only the
/// ownership bytes, so it may run beside the poller.
///
/// # Safety
/// `ring` is a live CQ ring of `ncqe` 64-byte entries (a power of two).
pub unsafe fn software_end(ring: DevPtr, ncqe: u32, from: u32) -> u32 {
    let mut i = from;
    for _ in 0..ncqe {
        // SAFETY: byte 63 of entry `i & (ncqe-1)`, inside the ring (caller's contract).
        let op_own = unsafe { ring.add(((i & (ncqe - 1)) as usize) << 6).read_u8(63) };
        let sw_owner = i & ncqe != 0;
        if op_own >> 4 == cqe_opcode::INVALID || ((op_own & CQE_OWNER_MASK) != 0) != sw_owner {
            break;
        }
        i = i.wrapping_add(1);
    }
    i & CQ_CI_MASK
}

/// True if an entry at CQ index `from` up to (not including) `end` is the QP's with user
/// index `uidx`.
///
/// # Safety
/// `ring` is a CQ ring of `ncqe` entries (a power of two), and software owns its entries
/// from `from` to `end`.
pub unsafe fn holds_entries_of(ring: DevPtr, ncqe: u32, from: u32, end: u32, uidx: u32) -> bool {
    let mut i = from;
    while i != end {
        // SAFETY: the srqn_uidx word of entry `i & (ncqe-1)`, inside the ring.
        let word = unsafe { ring.add(((i & (ncqe - 1)) as usize) << 6).read_u32(32) };
        if u32::from_be(word) & 0x00ff_ffff == uidx {
            return true;
        }
        i = i.wrapping_add(1) & CQ_CI_MASK;
    }
    false
}

/// What [`CqRing::poll_one_common`] found at the consumer index.
enum Polled {
    /// One of the two commonest entries, now in the completion.
    Found,
    /// Nothing: the device still owns the entry.
    Empty,
    /// An entry for the general path.
    Other,
}

/// The CQE after the ring's last: the first, in the next pass (owner parity flipped).
/// Out of line, so the polling loop tests one pointer per entry.
#[cold]
fn wrap(ring: DevPtr, parity: u8) -> (DevPtr, u8) {
    (ring, parity ^ 1)
}

/// One CQE into `wc`; false for entries that complete nothing (a resize marker, a
/// detached QP's leftovers). The commonest, a requester's success with no byte count (a
/// SEND, an RDMA WRITE), is decoded here; the rest out of line, so the polling loop keeps
/// its values in registers.
#[inline(always)]
fn decode(
    qps: &[Option<Arc<QpCompletions>>],
    cqe: DevPtr,
    op_own: u8,
    wc: &mut WorkCompletion,
) -> bool {
    let Some(qp) = qp_of(qps, cqe) else { return false };
    decode_requester(qp, cqe, op_own, wc)
        || decode_plain_receive(qp, cqe, op_own, wc)
        || decode_other(qp, cqe, op_own, wc)
}

/// The QP a CQE belongs to, by its user index; None for an index not (or no longer) in the
/// table.
#[inline(always)]
fn qp_of(qps: &[Option<Arc<QpCompletions>>], cqe: DevPtr) -> Option<&QpCompletions> {
    // SAFETY: the user index of a 64-byte CQE the device handed to software.
    let uidx = u32::from_be(unsafe { cqe.read_u32(32) }) & 0x00ff_ffff;
    qps.get(uidx as usize)?.as_deref()
}

/// [`decode`] of the two commonest entries only (a requester's success with no byte count,
/// a plain receive into the QP's own queue): false, with nothing consumed, for any other
/// entry, which the caller hands to the general decoder.
#[inline(always)]
fn decode_common(
    qps: &[Option<Arc<QpCompletions>>],
    cqe: DevPtr,
    op_own: u8,
    wc: &mut WorkCompletion,
) -> bool {
    let Some(qp) = qp_of(qps, cqe) else { return false };
    // Acquire: having seen the flag, the poller sees the queued detach too (`changed`).
    if qp.detached.load(Ordering::Acquire) {
        return false;
    }
    decode_requester(qp, cqe, op_own, wc) || decode_plain_receive(qp, cqe, op_own, wc)
}

/// A requester's success with no byte count (a SEND, an RDMA WRITE) into `wc`; false, with
/// nothing consumed, for any other entry.
#[inline(always)]
fn decode_requester(qp: &QpCompletions, cqe: DevPtr, op_own: u8, wc: &mut WorkCompletion) -> bool {
    // SAFETY (all reads below): fields of a 64-byte CQE the device handed to software.
    // The WQE's opcode is the top byte of sop_drop_qpn (byte 56), read on its own so the
    // table needs no shift or mask.
    let opcode = match REQUESTER_NO_BYTE_COUNT[usize::from(unsafe { cqe.read_u8(56) })] {
        Some(opcode) if op_own >> 4 == cqe_opcode::REQ => opcode,
        _ => return false,
    };
    let wqe_counter = u16::from_be(unsafe { cqe.read_u16(60) });
    // The whole completion at once: a few wide stores.
    *wc = WorkCompletion {
        wr_id: qp.send.complete(wqe_counter),
        byte_len: 0,
        qpn: qp.qpn,
        src_qp: 0,
        imm_data: 0,
        status: WcStatus::Success,
        opcode,
        flags: 0,
        syndrome: 0,
        vendor_syndrome: 0,
    };
    true
}

/// A plain SEND received into the QP's own receive queue (one per message of a ping-pong)
/// into `wc`, without the general decoder's call; false, with nothing consumed, for any
/// other entry.
#[inline(always)]
fn decode_plain_receive(
    qp: &QpCompletions,
    cqe: DevPtr,
    op_own: u8,
    wc: &mut WorkCompletion,
) -> bool {
    let RecvSource::Queue(rq) = &qp.recv else { return false };
    if op_own >> 4 != cqe_opcode::RESP_SEND {
        return false;
    }
    *wc = received(qp, rq.complete_next(), cqe, op_own);
    true
}

/// The completion of a successful receive (a SEND, with or without immediate or
/// invalidate, or an RDMA WRITE with immediate) of `qp` into the request `wr_id`.
#[inline(always)]
fn received(qp: &QpCompletions, wr_id: u64, cqe: DevPtr, op_own: u8) -> WorkCompletion {
    let op = op_own >> 4;
    let with_imm = op == cqe_opcode::RESP_WR_IMM || op == cqe_opcode::RESP_SEND_IMM;
    // The invalidated rkey sits where immediate data would.
    let with_inv = op == cqe_opcode::RESP_SEND_INV;
    let mut flags = if with_imm { WorkCompletion::HAS_IMM } else { 0 };
    if with_inv {
        flags |= WorkCompletion::HAS_INV;
    }
    if op_own & CQE_SE_MASK != 0 {
        flags |= WorkCompletion::SOLICITED;
    }
    // SAFETY (all reads below): fields of a 64-byte CQE the device handed to software.
    WorkCompletion {
        wr_id,
        byte_len: u32::from_be(unsafe { cqe.read_u32(44) }),
        qpn: qp.qpn,
        src_qp: u32::from_be(unsafe { cqe.read_u32(24) }) & 0x00ff_ffff,
        imm_data: if with_imm || with_inv { u32::from_be(unsafe { cqe.read_u32(36) }) } else { 0 },
        status: WcStatus::Success,
        opcode: if op == cqe_opcode::RESP_WR_IMM {
            WcOpcode::RecvRdmaWithImm
        } else {
            WcOpcode::Recv
        },
        flags,
        syndrome: 0,
        vendor_syndrome: 0,
    }
}

/// A CQE [`decode_requester`] and [`decode_plain_receive`] leave: a requester's success
/// with a byte count (RDMA READ, atomics), a receive of another kind or into an SRQ, an
/// error, or one that completes nothing (false).
#[inline(never)]
fn decode_other(qp: &QpCompletions, cqe: DevPtr, op_own: u8, wc: &mut WorkCompletion) -> bool {
    // SAFETY (all reads below): fields of a 64-byte CQE the device handed to software.
    let sop_qpn = u32::from_be(unsafe { cqe.read_u32(56) });
    let wqe_counter = u16::from_be(unsafe { cqe.read_u16(60) });
    let op = op_own >> 4;
    let qpn = qp.qpn;
    if matches!(
        op,
        cqe_opcode::RESP_SEND
            | cqe_opcode::RESP_SEND_IMM
            | cqe_opcode::RESP_SEND_INV
            | cqe_opcode::RESP_WR_IMM
    ) {
        *wc = received(qp, recv_wr_id(qp, wqe_counter), cqe, op_own);
        return true;
    }
    if op == cqe_opcode::REQ {
        let wqe_opcode = (sop_qpn >> 24) as u8;
        let (opcode, len) = REQUESTER[usize::from(wqe_opcode) & 0x3f];
        *wc = WorkCompletion {
            wr_id: qp.send.complete(wqe_counter),
            byte_len: match len {
                ReqLen::Zero => 0,
                ReqLen::Eight => 8,
                ReqLen::ByteCount => u32::from_be(unsafe { cqe.read_u32(44) }),
            },
            qpn,
            opcode,
            flags: if sent_imm(wqe_opcode) { WorkCompletion::SENT_IMM } else { 0 },
            ..WorkCompletion::default()
        };
        return true;
    }
    if op == cqe_opcode::REQ_ERR || op == cqe_opcode::RESP_ERR {
        let syndrome = unsafe { cqe.read_u8(55) };
        let (wr_id, opcode) = if op == cqe_opcode::REQ_ERR {
            (qp.send.complete(wqe_counter), REQUESTER[(sop_qpn >> 24) as usize & 0x3f].0)
        } else {
            (recv_wr_id(qp, wqe_counter), WcOpcode::Recv)
        };
        *wc = WorkCompletion {
            wr_id,
            byte_len: 0,
            qpn,
            src_qp: 0,
            imm_data: 0,
            status: WcStatus::from_syndrome(syndrome),
            opcode,
            flags: 0,
            syndrome,
            vendor_syndrome: unsafe { cqe.read_u8(54) },
        };
        return true;
    }
    false // RESIZE_CQ marker, NO_PACKET, signature errors: nothing to report
}

/// What a requester CQE's byte count means for the WQE's opcode.
#[derive(Clone, Copy)]
enum ReqLen {
    Zero,
    Eight,
    ByteCount,
}

/// [`REQUESTER`]'s opcodes whose completion reports no byte count and no flag, indexed by
/// the whole opcode byte; `None` for the others (decoded out of line): those with a byte
/// count, and the SEND and RDMA WRITE with immediate, whose completion has
/// [`WorkCompletion::SENT_IMM`].
const REQUESTER_NO_BYTE_COUNT: [Option<WcOpcode>; 256] = {
    let mut t = [None; 256];
    let mut i = 0;
    while i < REQUESTER.len() {
        if let (opcode, ReqLen::Zero) = REQUESTER[i]
            && !sent_imm(i as u8)
        {
            t[i] = Some(opcode);
        }
        i += 1;
    }
    t
};

/// A requester's WQE opcode that carried immediate data: its completion has verbs'
/// `IBV_WC_WITH_IMM`, as rdma-core's mlx5 provider sets it (`handle_good_req`).
const fn sent_imm(wqe_opcode: u8) -> bool {
    wqe_opcode == opcode::RDMA_WRITE_IMM || wqe_opcode == opcode::SEND_IMM
}

/// The completion opcode and byte length of a requester CQE, by the mlx5 opcode of its WQE
/// (the top byte of sop_drop_qpn; the opcodes posted here are all below 0x40).
const REQUESTER: [(WcOpcode, ReqLen); 64] = {
    let mut t = [(WcOpcode::Send, ReqLen::Zero); 64];
    t[opcode::NOP as usize] = (WcOpcode::Nop, ReqLen::Zero);
    t[opcode::RDMA_WRITE as usize] = (WcOpcode::RdmaWrite, ReqLen::Zero);
    t[opcode::RDMA_WRITE_IMM as usize] = (WcOpcode::RdmaWrite, ReqLen::Zero);
    t[opcode::RDMA_READ as usize] = (WcOpcode::RdmaRead, ReqLen::ByteCount);
    t[opcode::ATOMIC_CS as usize] = (WcOpcode::CompareSwap, ReqLen::Eight);
    t[opcode::ATOMIC_FA as usize] = (WcOpcode::FetchAdd, ReqLen::Eight);
    // rdma-core reports the UMR WQEs it posts for binds as IBV_WC_BIND_MW.
    t[opcode::UMR as usize] = (WcOpcode::BindMw, ReqLen::Zero);
    t
};

/// A responder's CQE (it consumed a receive), rdma-core's `is_responder`.
fn is_responder(opcode: u8) -> bool {
    matches!(
        opcode,
        cqe_opcode::RESP_WR_IMM
            | cqe_opcode::RESP_SEND
            | cqe_opcode::RESP_SEND_IMM
            | cqe_opcode::RESP_SEND_INV
            | cqe_opcode::RESP_ERR
    )
}

#[inline(always)]
fn recv_wr_id(qp: &QpCompletions, wqe_counter: u16) -> u64 {
    match &qp.recv {
        RecvSource::Queue(rq) => rq.complete_next(),
        RecvSource::Srq(srq) => srq.complete(wqe_counter),
    }
}
