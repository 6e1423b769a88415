//! The least software HCA: the smallest amount of work a software model of an HCA does to
//! carry one 8-byte SEND/RECV ping-pong between two processes, as a baseline measured in
//! the same run as softhca (`ferrodat perf`, `benches/softhca_latency`).
//!
//! Each side keeps its own send queue, receive queue and CQ in mlx5's formats; the two
//! processes share one 64-byte slot per direction in a file (a ping-pong never has more
//! than one message in flight each way). Per message:
//!
//! - the sender writes an inline SEND WQE (control and inline segments, big-endian, as a
//!   driver does) and, at its doorbell, executes it: reads the WQE back, checks its opcode
//!   and inline length, and copies the payload into its outbound slot, published by one
//!   Release store of the slot's sequence word;
//! - the receiver, polling, finds its CQ empty, looks at its inbound slot, takes the next
//!   receive WQE (one data segment), checks its key and length, copies the payload into
//!   the receive buffer, writes a CQE (opcode, byte count, WQE counter, QP number, the
//!   owner byte last), polls it and posts the receive again.
//!
//! Nothing else: no PSNs or acknowledgements beyond the slot's sequence word, no key
//! tables, no locks, no flow control, and every error is a check that stops the run. Each
//! direction reuses one line: a ring of slots that the messages stream through, as
//! softhca's are, measured 1.6-2.4x the floor against 1.1-1.6x for one reused slot
//! (2026-11-28; the hardware prefetchers of the two cores chase each other down a
//! streaming ring). So this row over the floor is about what the machine charges for the
//! bytes of a verbs SEND, and softhca's row over this one what its semantics, generality
//! and ring layout cost.

use super::floor::{SPINS_PER_CLOCK_READ, Stalled, stalled};
use super::shared_file::{self, Role};
use ferrodat_abi::mlx5::{
    CQE_OPCODE_SHIFT, CQE_OWNER_MASK, Cqe64, INLINE_SEG, SEND_WQE_BB, SEND_WQE_DS, WqeCtrlSeg,
    WqeDataSeg, WqeInlDataSeg, cqe_opcode, opcode,
};
use ferrodat_softhca::fabric::SharedMapping;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use zerocopy::byteorder::big_endian::{U32, U64};
use zerocopy::{FromBytes, IntoBytes};

/// Words per slot: the sequence word, the byte count, the payload, padding to a line.
const SLOT_WORDS: usize = 8;
/// The word the initiator sets to end the responder's loop, on a line of its own.
const STOP_WORD: usize = 0;
/// The initiator's outbound slot and the responder's, each on a 128-byte line pair of its
/// own (the adjacent-line prefetcher moves lines in pairs).
const INITIATOR_SLOT: usize = 16;
const RESPONDER_SLOT: usize = 32;
/// The size of the shared file.
const FILE_BYTES: usize = (RESPONDER_SLOT + 16) * 8;
const _: () = assert!(SLOT_WORDS <= 16);

/// Send queue size in WQE basic blocks, receive queue entries, CQ entries.
const SQ_WQEBBS: usize = 64;
const RQ_ENTRIES: usize = 64;
const CQ_ENTRIES: usize = 64;
/// Receives posted at the start (the rest of the queue stays free).
const RECEIVES_POSTED: usize = 16;
/// The QP number and the receive buffer's key: one QP and one region, so both are fixed.
const QPN: u32 = 0x00_0101;
const LKEY: u32 = 0x0000_1200;
/// The receive buffer.
const RECV_BYTES: usize = 64;
/// The message: one 8-byte word, inline.
const MESSAGE_BYTES: usize = 8;
/// Byte offsets in a CQE ([`Cqe64`]'s layout): the byte count, the QP number, the WQE
/// counter, the opcode and owner byte.
const CQE_BYTES: usize = size_of::<Cqe64>();
const BYTE_CNT: usize = std::mem::offset_of!(Cqe64, byte_cnt);
const QPN_AT: usize = std::mem::offset_of!(Cqe64, sop_drop_qpn);
const COUNTER_AT: usize = std::mem::offset_of!(Cqe64, wqe_counter);
const OP_OWN: usize = std::mem::offset_of!(Cqe64, op_own);
const _: () =
    assert!(BYTE_CNT + 4 <= QPN_AT && QPN_AT + 4 == COUNTER_AT && COUNTER_AT + 3 == OP_OWN);
/// Stop-word checks of a waiting responder: one in this many empty looks.
const STOP_CHECK_EVERY: u32 = 256;

/// Which side of the ping-pong a process is: which slot it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Sends first, times the round trips, and stops the responder.
    Initiator,
    /// Echoes every message until stopped.
    Responder,
}

/// One process's end: its private queues and the shared slots.
pub struct LeastHca {
    map: SharedMapping,
    /// First word of the slot this end writes, and of the one it reads.
    out_slot: usize,
    in_slot: usize,
    /// Messages the device sent and received (the next sequence words are these plus
    /// one). Each WQE is executed at its doorbell and each message takes one receive and
    /// writes one CQE, so these are also the device's SQ, RQ and CQ counters.
    sent: u64,
    received: u64,
    sq: Vec<u8>,
    /// The driver's SQ and RQ counters: WQEs posted.
    sq_posted: u16,
    rq: Vec<u8>,
    rq_posted: u16,
    cq: Vec<u8>,
    /// CQEs the driver polled: each completes one receive, so also its RQ counter of
    /// completed receives.
    cq_polled: u32,
    /// Registered memory must not move while receives name it: on the heap.
    recv_buf: Box<[u8; RECV_BYTES]>,
}

impl LeastHca {
    /// Maps the shared slots in `path` (the initiator creates the file, the responder
    /// opens it) and sets up this end's queues, with its first receives posted.
    pub fn open(path: &Path, end: End) -> Result<LeastHca, String> {
        let role = match end {
            End::Initiator => Role::Create,
            End::Responder => Role::Join,
        };
        let map = shared_file::map(path, FILE_BYTES, role)
            .map_err(|e| format!("cannot map the least-HCA slots {}: {e}", path.display()))?;
        let (out_slot, in_slot) = match end {
            End::Initiator => (INITIATOR_SLOT, RESPONDER_SLOT),
            End::Responder => (RESPONDER_SLOT, INITIATOR_SLOT),
        };
        let mut cq = vec![0u8; CQ_ENTRIES * size_of::<Cqe64>()];
        // As a driver does: every entry starts invalid and owned by the device.
        for entry in cq.chunks_exact_mut(size_of::<Cqe64>()) {
            entry[63] = cqe_opcode::INVALID << CQE_OPCODE_SHIFT;
        }
        let mut hca = LeastHca {
            map,
            out_slot,
            in_slot,
            sent: 0,
            received: 0,
            sq: vec![0; SQ_WQEBBS * SEND_WQE_BB],
            sq_posted: 0,
            rq: vec![0; RQ_ENTRIES * SEND_WQE_DS],
            rq_posted: 0,
            cq,
            cq_polled: 0,
            recv_buf: Box::new([0; RECV_BYTES]),
        };
        for _ in 0..RECEIVES_POSTED {
            hca.post_recv();
        }
        Ok(hca)
    }

    fn words(&self) -> &[AtomicU64] {
        self.map.words()
    }

    /// The device's SQ counter: WQEs executed.
    fn sq_executed(&self) -> u16 {
        self.sent as u16
    }

    /// The device's RQ counter: receives taken.
    fn rq_taken(&self) -> u16 {
        self.received as u16
    }

    /// The receive buffer's address, as a receive WQE names it.
    fn recv_addr(&self) -> u64 {
        self.recv_buf.as_ptr() as u64
    }

    /// The driver posts a receive of the whole buffer.
    fn post_recv(&mut self) {
        let at = usize::from(self.rq_posted) % RQ_ENTRIES * SEND_WQE_DS;
        let seg = WqeDataSeg {
            byte_count: U32::new(RECV_BYTES as u32),
            lkey: U32::new(LKEY),
            addr: U64::new(self.recv_addr()),
        };
        self.rq[at..at + SEND_WQE_DS].copy_from_slice(seg.as_bytes());
        self.rq_posted = self.rq_posted.wrapping_add(1);
    }

    /// The driver posts an unsignalled inline SEND of `value`, then rings the doorbell:
    /// the device executes it at once.
    fn post_send(&mut self, value: u64) -> Result<(), String> {
        let at = usize::from(self.sq_posted) % SQ_WQEBBS * SEND_WQE_BB;
        let ctrl = WqeCtrlSeg {
            opmod_idx_opcode: U32::new(u32::from(self.sq_posted) << 8 | u32::from(opcode::SEND)),
            qpn_ds: U32::new(QPN << 8 | 2),
            ..Default::default()
        };
        let inline = WqeInlDataSeg { byte_count: U32::new(MESSAGE_BYTES as u32 | INLINE_SEG) };
        let wqe = &mut self.sq[at..at + 2 * SEND_WQE_DS];
        wqe[..SEND_WQE_DS].copy_from_slice(ctrl.as_bytes());
        wqe[SEND_WQE_DS..SEND_WQE_DS + 4].copy_from_slice(inline.as_bytes());
        wqe[SEND_WQE_DS + 4..SEND_WQE_DS + 4 + MESSAGE_BYTES].copy_from_slice(&value.to_ne_bytes());
        self.sq_posted = self.sq_posted.wrapping_add(1);
        self.execute_send()
    }

    /// The device executes the WQE at its SQ counter: into the outbound slot (which the
    /// peer has read: it answered the last message).
    fn execute_send(&mut self) -> Result<(), String> {
        let at = usize::from(self.sq_executed()) % SQ_WQEBBS * SEND_WQE_BB;
        let wqe: &[u8; 2 * SEND_WQE_DS] =
            self.sq[at..at + 2 * SEND_WQE_DS].try_into().expect("two WQE segments");
        // Each field read as it was written (a wider load over two narrower stores, as a
        // copy of the whole segment makes, waits for the stores to retire: the driver's
        // WQE is still in this core's store buffer).
        let op = wqe[3];
        let ds = u32::from(wqe[7] & 0x3f);
        let seg = be32(wqe, SEND_WQE_DS);
        let len = (seg & !INLINE_SEG) as usize;
        if op != opcode::SEND || ds != 2 || seg & INLINE_SEG == 0 || len != MESSAGE_BYTES {
            return Err(not_a_small_send(self.sq_executed(), op, ds, seg));
        }
        let rest = &wqe[SEND_WQE_DS..];
        let mut payload = [0u8; MESSAGE_BYTES];
        payload.copy_from_slice(&rest[4..4 + MESSAGE_BYTES]);
        let slot = self.out_slot;
        let w = self.words();
        w[slot + 2].store(u64::from_ne_bytes(payload), Ordering::Relaxed);
        w[slot + 1].store(len as u64, Ordering::Relaxed);
        w[slot].store(self.sent + 1, Ordering::Release);
        self.sent += 1;
        Ok(())
    }

    /// The device's look at the inbound slot: a new message there goes into the next
    /// receive and gets its CQE. False: nothing had arrived.
    fn progress(&mut self) -> Result<bool, String> {
        let slot = self.in_slot;
        let w = self.words();
        if w[slot].load(Ordering::Acquire) != self.received + 1 {
            return Ok(false);
        }
        let len = w[slot + 1].load(Ordering::Relaxed) as usize;
        let payload = w[slot + 2].load(Ordering::Relaxed).to_ne_bytes();
        if self.rq_taken() == self.rq_posted {
            return Err(no_receive());
        }
        let at = usize::from(self.rq_taken()) % RQ_ENTRIES * SEND_WQE_DS;
        let entry: &[u8; SEND_WQE_DS] =
            self.rq[at..at + SEND_WQE_DS].try_into().expect("a whole receive WQE");
        // Field by field, as the driver stored them (see `execute_send`).
        let byte_count = be32(entry, 0);
        let lkey = be32(entry, 4);
        let addr = u64::from_be_bytes(entry[8..16].try_into().expect("8 bytes"));
        let offset = addr.wrapping_sub(self.recv_addr()) as usize;
        // This HCA carries 8-byte messages only: the copy is one word.
        if lkey != LKEY
            || len != MESSAGE_BYTES
            || (byte_count as usize) < MESSAGE_BYTES
            || offset > RECV_BYTES - MESSAGE_BYTES
        {
            return Err(self.receive_refused(len, byte_count, lkey, addr));
        }
        self.recv_buf[offset..offset + MESSAGE_BYTES].copy_from_slice(&payload);
        // The CQE: every field the device leaves zero, then the ones a receive reports,
        // the owner byte last (in place: no staging copy of the 64 bytes).
        let (written, counter) = (self.received as u32, self.rq_taken());
        let owner = (written / CQ_ENTRIES as u32) as u8 & CQE_OWNER_MASK;
        let at = written as usize % CQ_ENTRIES * CQE_BYTES;
        let entry: &mut [u8; CQE_BYTES] =
            (&mut self.cq[at..at + CQE_BYTES]).try_into().expect("a whole CQE");
        entry[..BYTE_CNT].fill(0);
        entry[BYTE_CNT..BYTE_CNT + 4].copy_from_slice(&(len as u32).to_be_bytes());
        entry[BYTE_CNT + 4..QPN_AT].fill(0);
        entry[QPN_AT..QPN_AT + 4].copy_from_slice(&QPN.to_be_bytes());
        entry[COUNTER_AT..COUNTER_AT + 2].copy_from_slice(&counter.to_be_bytes());
        entry[COUNTER_AT + 2] = 0;
        entry[OP_OWN] = cqe_opcode::RESP_SEND << CQE_OPCODE_SHIFT | owner;
        self.received += 1;
        Ok(true)
    }

    /// The error for a message the receive at the head of the queue cannot take.
    #[cold]
    #[inline(never)]
    fn receive_refused(&self, len: usize, byte_count: u32, lkey: u32, addr: u64) -> String {
        format!(
            "least HCA: message {} of {len} bytes does not fit receive {} (key {lkey:#x}, \
             {byte_count} bytes at {addr:#x})",
            self.received,
            self.rq_taken()
        )
    }

    /// The driver polls one CQE: the received word, or None if the CQ is empty.
    fn poll(&mut self) -> Result<Option<u64>, String> {
        let at = self.cq_polled as usize % CQ_ENTRIES * CQE_BYTES;
        let entry: &[u8; CQE_BYTES] = self.cq[at..at + CQE_BYTES].try_into().expect("a whole CQE");
        let op_own = entry[OP_OWN];
        let owner = (self.cq_polled / CQ_ENTRIES as u32) as u8 & CQE_OWNER_MASK;
        if op_own >> CQE_OPCODE_SHIFT == cqe_opcode::INVALID || op_own & CQE_OWNER_MASK != owner {
            return Ok(None);
        }
        // What a driver reads of a receive's CQE: opcode, byte count, QP, WQE counter.
        let counter = u16::from_be_bytes([entry[COUNTER_AT], entry[COUNTER_AT + 1]]);
        if op_own >> CQE_OPCODE_SHIFT != cqe_opcode::RESP_SEND
            || be32(entry, BYTE_CNT) as usize != MESSAGE_BYTES
            || be32(entry, QPN_AT) & 0x00ff_ffff != QPN
            || counter != self.cq_polled as u16
        {
            return Err(unexpected_cqe(entry));
        }
        self.cq_polled = self.cq_polled.wrapping_add(1);
        let mut word = [0u8; MESSAGE_BYTES];
        word.copy_from_slice(&self.recv_buf[..MESSAGE_BYTES]);
        Ok(Some(u64::from_ne_bytes(word)))
    }

    /// Waits for the next message, as a polling consumer does: poll the CQ, and when it
    /// is empty let the device look at the inbound slot. Reposts the receive. `Ok(None)` when
    /// `stop_when` says so (checked now and then while nothing arrives); an error after
    /// `stall` without a message.
    fn next_message(
        &mut self,
        stall: Duration,
        stop_when: impl Fn(&Self) -> bool,
    ) -> Result<Option<u64>, String> {
        let mut spins = 0u32;
        let mut since = None;
        loop {
            if let Some(value) = self.poll()? {
                self.post_recv();
                return Ok(Some(value));
            }
            if self.progress()? {
                continue;
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(STOP_CHECK_EVERY) && stop_when(self) {
                return Ok(None);
            }
            if spins.is_multiple_of(SPINS_PER_CLOCK_READ) {
                stalled(&mut since, stall, self.received).map_err(|e: Stalled| {
                    format!(
                        "least HCA: no message for {:.1} s (after {} messages): the other \
                         process died or stopped",
                        e.waited.as_secs_f64(),
                        e.round_trips
                    )
                })?;
            }
            std::hint::spin_loop();
        }
    }

    /// The initiator, for as long as `more(samples taken so far)` says: samples of
    /// `rounds` round trips each, every echo checked. An error when the responder stops
    /// answering for `stall`, or breaks the protocol.
    pub fn ping_while(
        &mut self,
        rounds: u32,
        stall: Duration,
        mut more: impl FnMut(usize) -> bool,
    ) -> Result<Vec<Duration>, String> {
        let mut out = Vec::new();
        while more(out.len()) {
            let start = Instant::now();
            for _ in 0..rounds {
                let value = self.sent + 1;
                self.post_send(value)?;
                match self.next_message(stall, |_| false)? {
                    Some(echo) if echo == value => {}
                    echo => {
                        return Err(format!("least HCA: sent {value}, the echo was {echo:?}"));
                    }
                }
            }
            out.push(start.elapsed());
        }
        Ok(out)
    }

    /// The initiator tells the responder to return.
    pub fn stop(&self) {
        self.words()[STOP_WORD].store(1, Ordering::Release);
    }

    /// The responder: echoes every message until the initiator calls [`Self::stop`].
    /// Returns the number of messages echoed.
    pub fn pong(&mut self) -> Result<u64, String> {
        let stopped = |hca: &Self| hca.words()[STOP_WORD].load(Ordering::Acquire) != 0;
        // No stall limit: the responder waits for as long as its initiator needs (it dies
        // with it, see the callers).
        while let Some(value) = self.next_message(Duration::MAX, stopped)? {
            self.post_send(value)?;
        }
        Ok(self.received)
    }
}

/// The big-endian 32-bit field at `at`.
#[inline(always)]
fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// The error for a WQE other than the inline SEND this HCA executes.
#[cold]
fn not_a_small_send(index: u16, op: u8, ds: u32, seg: u32) -> String {
    format!(
        "least HCA: WQE {index} is not an inline {MESSAGE_BYTES}-byte SEND (opcode {op:#x}, ds \
         {ds}, segment {seg:#x})"
    )
}

/// The error for a message that finds no receive posted.
#[cold]
fn no_receive() -> String {
    "least HCA: a message arrived with no receive posted".into()
}

/// The error for a CQE the device of this module never writes.
#[cold]
fn unexpected_cqe(entry: &[u8; CQE_BYTES]) -> String {
    let cqe = Cqe64::read_from_bytes(entry).map(|c| format!("{c:?}")).unwrap_or_default();
    format!("least HCA: unexpected CQE {cqe}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(name: &str) -> std::path::PathBuf {
        shared_file::test_path("least-hca", name)
    }

    /// Both ends on one file: the initiator, the responder and the file.
    fn pair(name: &str) -> (LeastHca, LeastHca, std::path::PathBuf) {
        let path = path(name);
        let initiator = LeastHca::open(&path, End::Initiator).unwrap();
        let responder = LeastHca::open(&path, End::Responder).unwrap();
        (initiator, responder, path)
    }

    #[test]
    fn a_ping_pong_past_every_queue_wrap_echoes_each_message() {
        let (mut initiator, mut responder, path) = pair("wraps");
        let echo = std::thread::spawn(move || responder.pong());
        // Dozens of laps of the SQ, RQ and CQ.
        let rounds = 100;
        let samples = 30;
        let timed = initiator.ping_while(rounds, Duration::from_secs(30), |n| n < samples);
        initiator.stop();
        let echoed = echo.join().unwrap().unwrap();
        assert_eq!(timed.unwrap().len(), samples);
        assert_eq!(echoed, (samples * rounds as usize) as u64);
        assert_eq!(initiator.received, echoed);
        // The last CQE the initiator polled is the device's: a RESP_SEND of 8 bytes for
        // the receive it consumed, with the owner bit of its lap.
        let last = initiator.cq_polled.wrapping_sub(1);
        let at = last as usize % CQ_ENTRIES * 64;
        let cqe = Cqe64::read_from_bytes(&initiator.cq[at..at + 64]).unwrap();
        assert_eq!(cqe.op_own >> 4, cqe_opcode::RESP_SEND);
        assert_eq!(cqe.op_own & 1, (last / CQ_ENTRIES as u32) as u8 & 1);
        assert_eq!(cqe.byte_cnt.get(), 8);
        assert_eq!(cqe.wqe_counter.get(), initiator.rq_taken().wrapping_sub(1));
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn with_no_responder_the_ping_gives_up_after_the_stall_timeout() {
        let path = path("alone");
        let mut initiator = LeastHca::open(&path, End::Initiator).unwrap();
        let started = Instant::now();
        let err = initiator.ping_while(10, Duration::from_millis(50), |n| n < 10).unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert!(err.contains("died or stopped") && err.contains("after 0 messages"), "{err}");
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_message_with_no_receive_posted_is_an_error_not_a_lost_message() {
        let (mut initiator, mut responder, path) = pair("rnr");
        // The responder takes every message but never posts a receive again.
        for value in 1..=RECEIVES_POSTED as u64 {
            initiator.post_send(value).unwrap();
            assert!(responder.progress().unwrap());
        }
        initiator.post_send(0).unwrap();
        let err = responder.progress().unwrap_err();
        assert!(err.contains("no receive posted"), "{err}");
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_receive_that_does_not_hold_the_message_is_refused() {
        let (mut initiator, mut responder, path) = pair("short");
        // The first receive now points past the end of the buffer.
        let seg = WqeDataSeg {
            byte_count: U32::new(8),
            lkey: U32::new(LKEY),
            addr: U64::new(responder.recv_addr() + RECV_BYTES as u64 - 4),
        };
        responder.rq[..SEND_WQE_DS].copy_from_slice(seg.as_bytes());
        initiator.post_send(7).unwrap();
        let err = responder.progress().unwrap_err();
        assert!(err.contains("does not fit receive 0"), "{err}");
        assert_eq!(responder.poll().unwrap(), None, "no CQE for a refused message");
        let _ = std::fs::remove_file(path);
    }
}
