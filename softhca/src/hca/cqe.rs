//! Building CQE64s and publishing them into a completion queue the way the HCA does.

use super::app_memory::{AppSpan, OutOfSpan};
use ferrodat_abi::mlx5::{
    CQE_OPCODE_SHIFT, CQE_OWNER_MASK, CQE_SE_MASK, Cqe64, ErrCqe, cqe_opcode,
};
use zerocopy::IntoBytes;
use zerocopy::byteorder::big_endian::{U16, U32};

/// `flags_rqpn` of a RoCE v2 receive, by the packet's L3 header. Bits 25:24 hold the RoCE
/// L3 header type (`MLX5_CQE_ROCE_L3_HEADER_TYPE_*`: IPv6 1, IPv4 2), where mlx5_ib's
/// `handle_responder` reads it on an Ethernet port (rdma-core reads the same bits as part of
/// `sl`, as it does on hardware). Bits 29:28 are the GRH field: non-zero makes rdma-core and
/// mlx5_ib set `IBV_WC_GRH`.
const ROCE_IPV4_FLAGS: u32 = 2 << 28 | 2 << 24;
const ROCE_IPV6_FLAGS: u32 = 1 << 28 | 1 << 24;

/// The CQE fields softhca fills for a successful completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// `cqe_opcode::REQ` or one of the `RESP_*` opcodes.
    pub cqe_opcode: u8,
    /// For requester completions, the mlx5 send opcode of the completed WQE.
    pub wqe_opcode: u8,
    /// Our QPN.
    pub qpn: u32,
    /// The QP's user index (cqe_version 1), or the SRQ number for SRQ receives with
    /// cqe_version 0, else 0.
    pub srqn_uidx: u32,
    /// SQ: the WQE index from its control segment; RQ/SRQ: the receive WQE's index.
    pub wqe_counter: u16,
    /// Responder: bytes received; requester: bytes read (RDMA READ) or 8 (atomics).
    pub byte_cnt: u32,
    /// Immediate data as it travelled (network order bytes).
    pub imm: [u8; 4],
    /// Responder: the sender's QPN.
    pub src_qpn: u32,
    /// Responder: the sender asked for a solicited event.
    pub solicited: bool,
    /// Responder: the packet came over IPv4 (else IPv6); RoCE v2 always has an L3 header.
    pub ipv4: bool,
}

/// Encodes a successful completion (without the owner bit, which [`CqProducer`] sets).
#[inline(always)]
pub fn success_cqe(c: &Completion) -> [u8; 64] {
    let responder = c.cqe_opcode != cqe_opcode::REQ;
    let mut cqe = Cqe64 {
        srqn_uidx: U32::new(c.srqn_uidx & 0x00ff_ffff),
        byte_cnt: U32::new(c.byte_cnt),
        sop_drop_qpn: U32::new(if responder {
            c.qpn & 0x00ff_ffff
        } else {
            u32::from(c.wqe_opcode) << 24 | (c.qpn & 0x00ff_ffff)
        }),
        wqe_counter: U16::new(c.wqe_counter),
        op_own: c.cqe_opcode << CQE_OPCODE_SHIFT,
        ..Default::default()
    };
    if responder {
        let l3 = if c.ipv4 { ROCE_IPV4_FLAGS } else { ROCE_IPV6_FLAGS };
        cqe.flags_rqpn = U32::new(l3 | (c.src_qpn & 0x00ff_ffff));
        cqe.imm_inval_pkey = U32::new(u32::from_be_bytes(c.imm));
        if c.solicited {
            cqe.op_own |= CQE_SE_MASK;
        }
    }
    let mut out = [0u8; 64];
    out.copy_from_slice(cqe.as_bytes());
    out
}

/// The CQE fields of an error completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErrorCompletion {
    /// True for a send-queue (requester) error, false for a receive-queue error.
    pub requester: bool,
    /// `cqe_syndrome::*`.
    pub syndrome: u8,
    /// Vendor syndrome byte (informational).
    pub vendor_syndrome: u8,
    /// The mlx5 opcode of the failed send WQE (requester only).
    pub wqe_opcode: u8,
    /// Our QPN.
    pub qpn: u32,
    /// As in [`Completion::srqn_uidx`].
    pub srqn_uidx: u32,
    /// The failed WQE's index.
    pub wqe_counter: u16,
}

/// Encodes an error completion (without the owner bit).
pub fn error_cqe(e: &ErrorCompletion) -> [u8; 64] {
    let op = if e.requester { cqe_opcode::REQ_ERR } else { cqe_opcode::RESP_ERR };
    let cqe = ErrCqe {
        srqn: U32::new(e.srqn_uidx & 0x00ff_ffff),
        vendor_err_synd: e.vendor_syndrome,
        syndrome: e.syndrome,
        s_wqe_opcode_qpn: U32::new(u32::from(e.wqe_opcode) << 24 | (e.qpn & 0x00ff_ffff)),
        wqe_counter: U16::new(e.wqe_counter),
        op_own: op << CQE_OPCODE_SHIFT,
        ..Default::default()
    };
    let mut out = [0u8; 64];
    out.copy_from_slice(cqe.as_bytes());
    out
}

/// Why a CQE could not be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqError {
    /// Every entry holds a completion the consumer has not released (its consumer index in
    /// the doorbell record is a full ring behind): hardware reports a CQ overrun (an async
    /// `IBV_EVENT_CQ_ERR`) and the CQ stops.
    Overrun,
    /// The CQ's buffer or doorbell record span is wrong: a softhca bug.
    Span(OutOfSpan),
}

impl From<OutOfSpan> for CqError {
    fn from(e: OutOfSpan) -> Self {
        CqError::Span(e)
    }
}

/// The device's producer side of one CQ: the buffer, the doorbell record the consumer
/// publishes its index in, and the producer index.
#[derive(Debug)]
pub struct CqProducer {
    buf: AppSpan,
    dbrec: AppSpan,
    ncqe: u32,
    cqe_size: usize,
    producer_index: u32,
}

impl CqProducer {
    /// `buf` holds `ncqe` (a power of two) entries of `cqe_size` bytes (64 or 128; a 64-byte
    /// CQE is the second half of a 128-byte one); `dbrec` is the 8-byte doorbell record.
    pub fn new(buf: AppSpan, dbrec: AppSpan, ncqe: u32, cqe_size: usize) -> Self {
        debug_assert!(ncqe.is_power_of_two());
        CqProducer { buf, dbrec, ncqe, cqe_size, producer_index: 0 }
    }

    /// The number of CQEs written so far (wrapping).
    pub fn producer_index(&self) -> u32 {
        self.producer_index
    }

    /// The consumer index the application last published (24 bits).
    pub fn consumer_index(&self) -> Result<u32, OutOfSpan> {
        Ok(self.dbrec.read_be32(0)? & 0x00ff_ffff)
    }

    /// Entries written and not yet released by the consumer.
    pub fn outstanding(&self) -> Result<u32, OutOfSpan> {
        Ok(self.producer_index.wrapping_sub(self.consumer_index()?) & 0x00ff_ffff)
    }

    /// Writes one CQE with the owner bit of its pass over the ring, last. A full ring is an
    /// overrun, unless `overwrite` (a CQ created to ignore overruns: the entry goes over
    /// one the consumer has not polled).
    #[inline]
    pub fn push(&mut self, cqe: &[u8; 64], overwrite: bool) -> Result<(), CqError> {
        if !overwrite && self.outstanding()? >= self.ncqe {
            return Err(CqError::Overrun);
        }
        let index = self.producer_index & (self.ncqe - 1);
        let owner = u8::from(self.producer_index & self.ncqe != 0);
        let op_own = (cqe[63] & !CQE_OWNER_MASK) | owner;
        let offset = index as usize * self.cqe_size + (self.cqe_size - 64);
        self.buf.publish_entry_with_last(offset, cqe, op_own)?;
        self.producer_index = self.producer_index.wrapping_add(1);
        Ok(())
    }

    /// RESIZE_CQ: writes the RESIZE_CQ entry at the producer index of the current ring, then
    /// continues in `buf` (`ncqe` entries) at the next index, as the firmware does; the
    /// consumer copies what it had not polled yet and skips the marker. The marker is
    /// written even into a full ring (the firmware does not count it as a completion).
    pub fn resize(&mut self, buf: AppSpan, ncqe: u32, cqe_size: usize) -> Result<(), CqError> {
        debug_assert!(ncqe.is_power_of_two());
        let mut marker = [0u8; 64];
        marker[63] = cqe_opcode::RESIZE_CQ << 4 | u8::from(self.producer_index & self.ncqe != 0);
        let index = self.producer_index & (self.ncqe - 1);
        let offset = index as usize * self.cqe_size + (self.cqe_size - 64);
        self.buf.publish_entry(offset, &marker)?;
        self.producer_index = self.producer_index.wrapping_add(1);
        self.buf = buf;
        self.ncqe = ncqe;
        self.cqe_size = cqe_size;
        Ok(())
    }

    /// The arm word the consumer last wrote into doorbell record word 1:
    /// `sn << 28 | cmd << 24 | ci`.
    pub fn arm_word(&self) -> Result<u32, OutOfSpan> {
        self.dbrec.read_be32(4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrodat_abi::mlx5::opcode;

    fn owned_by_software(buf: &[u8], n: u32, ncqe: u32) -> bool {
        let op_own = buf[(n & (ncqe - 1)) as usize * 64 + 63];
        op_own >> 4 != cqe_opcode::INVALID && (op_own & 1 != 0) == (n & ncqe != 0)
    }

    #[test]
    fn ownership_flips_each_pass_and_overrun_is_detected() {
        let ncqe = 4u32;
        let mut buf = vec![0xf0u8; 64 * ncqe as usize]; // rdma-core initialises op_own to INVALID
        let mut db = [0u8; 8];
        // SAFETY: both buffers outlive the producer.
        let (b, d) = unsafe {
            (
                AppSpan::new(buf.as_mut_ptr() as usize, buf.len()),
                AppSpan::new(db.as_mut_ptr() as usize, 8),
            )
        };
        let mut cq = CqProducer::new(b, d, ncqe, 64);
        let c = Completion {
            cqe_opcode: cqe_opcode::REQ,
            wqe_opcode: opcode::SEND,
            qpn: 0x108,
            ..Default::default()
        };
        let mut ci = 0u32;
        for pass in 0..3 {
            for _ in 0..ncqe {
                cq.push(&success_cqe(&c), false).unwrap();
            }
            assert_eq!(cq.push(&success_cqe(&c), false), Err(CqError::Overrun), "pass {pass}");
            for _ in 0..ncqe {
                assert!(owned_by_software(&buf, ci, ncqe));
                ci += 1;
            }
            assert!(!owned_by_software(&buf, ci, ncqe), "next pass not yet written");
            db[..4].copy_from_slice(&ci.to_be_bytes());
        }
    }

    /// The consumer index in the doorbell record has 24 bits while the producer counts on:
    /// free space and overrun are judged modulo 2^24 across the consumer's wrap (and the
    /// producer's own at 2^32), and the owner bit keeps flipping each pass.
    #[test]
    fn the_24_bit_consumer_index_wraps_under_a_producer_that_counts_on() {
        let ncqe = 4u32;
        for start in [(1u32 << 24) - 2, u32::MAX - 1] {
            let mut buf = vec![0xf0u8; 64 * ncqe as usize];
            let mut db = [0u8; 8];
            // SAFETY: both buffers outlive the producer.
            let (b, d) = unsafe {
                (
                    AppSpan::new(buf.as_mut_ptr() as usize, buf.len()),
                    AppSpan::new(db.as_mut_ptr() as usize, 8),
                )
            };
            let mut cq = CqProducer::new(b, d, ncqe, 64);
            cq.producer_index = start;
            let c = Completion { cqe_opcode: cqe_opcode::REQ, qpn: 0x108, ..Default::default() };
            let mut ci = start;
            let publish = |db: &mut [u8; 8], ci: u32| {
                db[..4].copy_from_slice(&(ci & 0xff_ffff).to_be_bytes());
            };
            publish(&mut db, ci);
            for round in 0..3 {
                // Fill the ring; poll and release half; fill it again; poll and release all.
                for (fill, poll) in [(ncqe, ncqe / 2), (ncqe / 2, ncqe)] {
                    for _ in 0..fill {
                        cq.push(&success_cqe(&c), false).unwrap();
                    }
                    let full = cq.push(&success_cqe(&c), false);
                    assert_eq!(full, Err(CqError::Overrun), "{start:#x} {round} {ci:#x}");
                    for _ in 0..poll {
                        assert!(owned_by_software(&buf, ci, ncqe), "{start:#x} {round} {ci:#x}");
                        ci = ci.wrapping_add(1);
                    }
                    publish(&mut db, ci);
                    assert_eq!(cq.outstanding(), Ok(ncqe - poll), "{start:#x} {round} {ci:#x}");
                }
                assert!(!owned_by_software(&buf, ci, ncqe), "the next pass is not written yet");
            }
        }
    }

    #[test]
    fn resize_marks_the_old_ring_and_continues_at_the_next_index_in_the_new_one() {
        let mut old = vec![0xf0u8; 64 * 4];
        let mut new = vec![0xf0u8; 64 * 16];
        let mut db = [0u8; 8];
        // SAFETY: the buffers outlive the producer.
        let (o, n, d) = unsafe {
            (
                AppSpan::new(old.as_mut_ptr() as usize, old.len()),
                AppSpan::new(new.as_mut_ptr() as usize, new.len()),
                AppSpan::new(db.as_mut_ptr() as usize, 8),
            )
        };
        let mut cq = CqProducer::new(o, d, 4, 64);
        let c = Completion {
            cqe_opcode: cqe_opcode::REQ,
            wqe_opcode: opcode::SEND,
            ..Default::default()
        };
        for _ in 0..3 {
            cq.push(&success_cqe(&c), false).unwrap();
        }
        cq.resize(n, 16, 64).unwrap();
        // The marker sits at index 3 of the old ring, owned by software (first pass).
        assert_eq!(old[3 * 64 + 63], cqe_opcode::RESIZE_CQ << 4);
        assert_eq!(cq.producer_index(), 4);
        cq.push(&success_cqe(&c), false).unwrap();
        assert!(owned_by_software(&new, 4, 16), "the next completion is index 4 of the new ring");
        assert!(!owned_by_software(&new, 5, 16));
    }

    #[test]
    fn requester_cqe_carries_the_wqe_opcode_and_responder_the_source() {
        let req = success_cqe(&Completion {
            cqe_opcode: cqe_opcode::REQ,
            wqe_opcode: opcode::RDMA_READ,
            qpn: 0x10203,
            wqe_counter: 9,
            byte_cnt: 77,
            ..Default::default()
        });
        assert_eq!(&req[56..60], &[opcode::RDMA_READ, 0x01, 0x02, 0x03]);
        assert_eq!(&req[60..62], &[0, 9]);
        assert_eq!(&req[44..48], &77u32.to_be_bytes());
        let resp = success_cqe(&Completion {
            cqe_opcode: cqe_opcode::RESP_SEND_IMM,
            qpn: 5,
            src_qpn: 6,
            imm: [1, 2, 3, 4],
            solicited: true,
            ipv4: true,
            ..Default::default()
        });
        assert_eq!(resp[63], cqe_opcode::RESP_SEND_IMM << 4 | CQE_SE_MASK);
        assert_eq!(&resp[36..40], &[1, 2, 3, 4]);
        assert_eq!(&resp[24..28], &(2u32 << 28 | 2 << 24 | 6).to_be_bytes());
    }

    #[test]
    fn error_cqe_layout() {
        let e = error_cqe(&ErrorCompletion {
            requester: true,
            syndrome: 0x13,
            wqe_opcode: opcode::RDMA_WRITE,
            qpn: 0x42,
            wqe_counter: 3,
            ..Default::default()
        });
        assert_eq!(e[55], 0x13);
        assert_eq!(e[63] >> 4, cqe_opcode::REQ_ERR);
        assert_eq!(&e[56..60], &[opcode::RDMA_WRITE, 0, 0, 0x42]);
    }
}
