//! The packets two softhca QPs exchange over the shared-memory fabric.
//!
//! softhca carries RC traffic as messages rather than MTU-sized frames: a request message
//! is cut into segments of at most [`SEGMENT_BYTES`], each a [`PacketHeader`] followed by
//! its payload, and the responder answers each message once. The header is host-endian:
//! both ends are on this host. What the protocol keeps from RC: every request has a PSN
//! (one per message, from the QP's `sq_psn`; the responder expects its `rq_psn`), responses
//! come back in request order, and a responder that cannot place a message answers with
//! the NAK a real responder would send (RNR, remote access, invalid request, operation
//! error). Receivers validate every header field before using it: a packet is input from
//! another process.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// The largest payload of one packet. The fabric is memory, not a wire, so segments are
/// larger than any path MTU; what the consumer observes (completion order, byte counts,
/// errors) does not depend on the segment size.
pub const SEGMENT_BYTES: usize = 16 * 1024;

/// Packet kinds.
pub mod kind {
    /// Request: a SEND segment (payload: data).
    pub const SEND: u8 = 1;
    /// Request: an RDMA WRITE segment (payload: data for `remote_addr`).
    pub const WRITE: u8 = 2;
    /// Request: RDMA READ of `length` bytes at `remote_addr` (no payload).
    pub const READ: u8 = 3;
    /// Request: compare-and-swap (`operand` = swap, `compare`).
    pub const ATOMIC_CS: u8 = 4;
    /// Request: fetch-and-add (`operand` = add).
    pub const ATOMIC_FA: u8 = 5;
    /// Response: every request up to and including `psn` completed.
    pub const ACK: u8 = 16;
    /// Response: the request `psn` failed at the responder (`syndrome`); the connection is
    /// over.
    pub const NAK: u8 = 17;
    /// Response: a segment of RDMA READ data for request `psn` at byte `offset`.
    pub const READ_RESPONSE: u8 = 18;
    /// Response: the original value of an atomic (`operand`).
    pub const ATOMIC_RESPONSE: u8 = 19;
    /// Response: receiver not ready for request `psn`; it keeps the request and retries
    /// (`rnr_count` NAKs so far).
    pub const RNR_NAK: u8 = 20;
}

/// Header flags.
pub mod flag {
    /// First segment of a message.
    pub const FIRST: u8 = 1;
    /// Last segment of a message.
    pub const LAST: u8 = 2;
    /// The requester asked for a solicited event at the receiver.
    pub const SOLICITED: u8 = 4;
    /// The message carries immediate data (`imm`).
    pub const IMMEDIATE: u8 = 8;
    /// The requester wants an ACK for this message at once (a signalled WQE, or enough
    /// unacknowledged ones), like the AckReq bit of an RC packet. Other messages are
    /// acknowledged late: piggybacked on the responder's next request, or after one more
    /// pass of the responder.
    pub const ACK_REQUEST: u8 = 16;
    /// `ack_psn` acknowledges every request of the receiver up to it (a piggybacked ACK).
    pub const ACK_PIGGYBACK: u8 = 32;
}

/// NAK reasons (the requester turns them into the matching CQE syndrome).
pub mod nak {
    /// Remote access error: bad rkey, PD mismatch, out of range, missing permission.
    pub const REMOTE_ACCESS: u8 = 1;
    /// Invalid request: message too long for the receive buffer, misaligned atomic,
    /// operation the QP does not allow.
    pub const INVALID_REQUEST: u8 = 2;
    /// The responder failed to carry out a valid request (e.g. its CQ overran).
    pub const REMOTE_OPERATION: u8 = 3;
    /// RNR retries exhausted: the requester's `rnr_retry` count of RNR NAKs was reached.
    pub const RNR_RETRY_EXCEEDED: u8 = 4;
}

/// The header of every packet.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct PacketHeader {
    /// [`kind`].
    pub kind: u8,
    /// [`flag`] bits.
    pub flags: u8,
    /// [`nak`] reason for NAKs.
    pub syndrome: u8,
    /// Requests: the requester's `rnr_retry` (7 = retry forever), so the responder knows
    /// when to give up an RNR wait; RNR NAKs: the NAKs sent so far.
    pub rnr_retry: u8,
    /// Immediate data, as the requester's WQE carried it (network order bytes).
    pub imm: [u8; 4],
    /// The sending QP.
    pub src_qpn: u32,
    /// The message's sequence number (24 bits).
    pub psn: u32,
    /// Remote key (RDMA, atomics).
    pub rkey: u32,
    /// Payload bytes following this header.
    pub payload_len: u32,
    /// Remote address of this segment (WRITE), of the whole request (READ, atomics).
    pub remote_addr: u64,
    /// Requests: the message's total length. READ responses: unused.
    pub length: u64,
    /// Byte offset of this segment within its message.
    pub offset: u64,
    /// Atomics: swap or add value; atomic responses: the original value.
    pub operand: u64,
    /// Compare-and-swap: the compare value.
    pub compare: u64,
    /// With [`flag::ACK_PIGGYBACK`]: the sender's responder has completed every request
    /// up to this PSN.
    pub ack_psn: u32,
    /// Zero.
    pub reserved: u32,
}

const _: () = assert!(size_of::<PacketHeader>() == 72);

/// PSNs are 24-bit and wrap.
pub const PSN_MASK: u32 = 0x00ff_ffff;

/// The PSN after `psn`.
pub fn next_psn(psn: u32) -> u32 {
    psn.wrapping_add(1) & PSN_MASK
}

/// Whether `psn` is at or before `last` in 24-bit serial arithmetic.
pub fn psn_at_or_before(psn: u32, last: u32) -> bool {
    (last.wrapping_sub(psn) & PSN_MASK) < (1 << 23)
}

/// The RNR timer of `min_rnr_timer` values 0..=31 (IB spec table 45), in microseconds.
pub fn rnr_timer_us(min_rnr_timer: u8) -> u64 {
    const TABLE_US: [u64; 32] = [
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560,
        3_840, 5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880,
        163_840, 245_760, 327_680, 491_520,
    ];
    TABLE_US[usize::from(min_rnr_timer & 31)]
}

/// The local ACK timeout of a QP's `timeout` attribute: 4.096 µs × 2^timeout; 0 means
/// infinite (None).
pub fn ack_timeout_us(timeout: u8) -> Option<u64> {
    match timeout {
        0 => None,
        t => Some((4_096u64 << t.min(31)) / 1_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_serial_arithmetic_wraps() {
        assert_eq!(next_psn(PSN_MASK), 0);
        assert!(psn_at_or_before(PSN_MASK, 2));
        assert!(psn_at_or_before(5, 5));
        assert!(!psn_at_or_before(6, 5));
    }

    #[test]
    fn timers() {
        assert_eq!(rnr_timer_us(12), 640);
        assert_eq!(rnr_timer_us(0), 655_360);
        assert_eq!(ack_timeout_us(14), Some(67_108));
        assert_eq!(ack_timeout_us(0), None);
    }
}
