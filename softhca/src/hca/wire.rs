//! The packets two softhca QPs exchange over the shared-memory fabric.
//!
//! softhca carries RC traffic as messages rather than MTU-sized frames: a request message
//! is cut into segments of at most [`SEGMENT_BYTES`], each a [`PacketHeader`] followed by
//! its payload (or, for a one-segment SEND or an ACK, the 16-byte [`CompactHeader`]), and the responder answers each message once. The header is host-endian:
//! both ends are on this host. What the protocol keeps from RC: every request has a PSN
//! (one per message, from the QP's `sq_psn`; the responder expects its `rq_psn`), responses
//! come back in request order, and a responder that cannot place a message answers with
//! the NAK a real responder would send (RNR, remote access, invalid request, operation
//! error). Receivers validate every header field before using it: a packet is input from
//! another process.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// The largest payload of one packet. The fabric is memory, not a wire, so segments are
/// larger than any path MTU; what the consumer observes (completion order, byte counts,
/// errors) does not depend on the segment size. 64 KiB rather than 16: each record costs
/// a fixed amount (its WQE, header, ring positions and cache lines that move between the
/// cores) besides its copy, and RDMA WRITE streams of 1 MiB ran at ~24 GB/s instead of
/// ~17 in the good runs (`ferrodat perf`, 256 KiB rings either way).
pub const SEGMENT_BYTES: usize = 64 * 1024;

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
    /// An RDMA WRITE or READ whose data the requester placed in (or took from) the
    /// responder's memory itself (`hca::placement`): one segment, no payload, `length` the
    /// bytes placed.
    pub const PLACED: u8 = 64;
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

/// Record kind bit of a packet in the compact encoding (the low byte is the [`kind`]).
///
/// A one-segment SEND or an ACK whose header carries nothing beyond the fields of
/// [`CompactHeader`] travels as that 16-byte header instead of the 72-byte
/// [`PacketHeader`], so a small message fits in one cache line with its record header.
/// The fields it leaves out have fixed values (see [`CompactHeader::expand`]); the sending
/// QP is the ring's producer, checked when the ring was opened.
pub const COMPACT_RECORD: u16 = 0x100;

/// The compact header (see [`COMPACT_RECORD`]).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CompactHeader {
    /// [`flag`] bits.
    pub flags: u8,
    /// As [`PacketHeader::rnr_retry`].
    pub rnr_retry: u8,
    /// Zero.
    pub reserved: u16,
    /// As [`PacketHeader::imm`].
    pub imm: [u8; 4],
    /// As [`PacketHeader::psn`].
    pub psn: u32,
    /// As [`PacketHeader::ack_psn`].
    pub ack_psn: u32,
}

const _: () = assert!(size_of::<CompactHeader>() == 16);

impl CompactHeader {
    /// The compact form of `h` with `payload_len` bytes of payload, if it has one: a SEND
    /// that is a whole message in one segment, or an ACK, with no field the compact form
    /// leaves out set to anything but its fixed value.
    pub fn compact(h: &PacketHeader, payload_len: usize) -> Option<Self> {
        let whole = flag::FIRST | flag::LAST;
        let fits = matches!(h.kind, kind::SEND | kind::ACK)
            && h.flags & whole == whole
            && h.syndrome == 0
            && h.length == payload_len as u64
            && h.offset == 0
            && h.remote_addr == 0
            && h.rkey == 0
            && h.operand == 0
            && h.compare == 0
            && h.reserved == 0
            && (h.kind == kind::SEND || payload_len == 0);
        fits.then_some(CompactHeader {
            flags: h.flags,
            rnr_retry: h.rnr_retry,
            reserved: 0,
            imm: h.imm,
            psn: h.psn,
            ack_psn: h.ack_psn,
        })
    }

    /// The full header of a compact record of kind `kind` from `src_qpn` with
    /// `payload_len` bytes of payload; `None` if the record is malformed (a kind without a
    /// compact form, reserved bits set, not a whole message).
    pub fn expand(&self, kind: u8, src_qpn: u32, payload_len: usize) -> Option<PacketHeader> {
        let whole = flag::FIRST | flag::LAST;
        let valid = matches!(kind, kind::SEND | kind::ACK)
            && self.reserved == 0
            && self.flags & whole == whole
            && (kind == kind::SEND || payload_len == 0);
        valid.then(|| PacketHeader {
            kind,
            flags: self.flags,
            rnr_retry: self.rnr_retry,
            imm: self.imm,
            src_qpn,
            psn: self.psn,
            payload_len: payload_len as u32,
            length: payload_len as u64,
            ack_psn: self.ack_psn,
            ..Default::default()
        })
    }
}

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
    fn compact_headers_round_trip_and_refuse_what_they_cannot_carry() {
        let send = PacketHeader {
            kind: kind::SEND,
            flags: flag::FIRST | flag::LAST | flag::ACK_PIGGYBACK | flag::IMMEDIATE,
            rnr_retry: 7,
            imm: [1, 2, 3, 4],
            src_qpn: 0x42,
            psn: 9,
            payload_len: 8,
            length: 8,
            ack_psn: 5,
            ..Default::default()
        };
        let c = CompactHeader::compact(&send, 8).expect("fits");
        assert_eq!(c.expand(kind::SEND, 0x42, 8), Some(send));
        let ack = PacketHeader {
            kind: kind::ACK,
            flags: flag::FIRST | flag::LAST,
            src_qpn: 0x42,
            psn: 3,
            ..Default::default()
        };
        let c = CompactHeader::compact(&ack, 0).expect("fits");
        assert_eq!(c.expand(kind::ACK, 0x42, 0), Some(ack));
        // Segments, WRITEs, NAKs and anything with an offset keep the full header.
        assert!(CompactHeader::compact(&PacketHeader { length: 9, ..send }, 8).is_none());
        assert!(CompactHeader::compact(&PacketHeader { flags: flag::FIRST, ..send }, 8).is_none());
        assert!(CompactHeader::compact(&PacketHeader { kind: kind::WRITE, ..send }, 8).is_none());
        assert!(CompactHeader::compact(&PacketHeader { syndrome: 1, ..ack }, 0).is_none());
        assert!(CompactHeader::compact(&PacketHeader { operand: 1, ..ack }, 0).is_none());
        // Garbage from the ring is refused.
        let c = CompactHeader::compact(&send, 8).expect("fits");
        assert!(c.expand(kind::READ, 0x42, 8).is_none());
        assert!(c.expand(kind::ACK, 0x42, 8).is_none());
        assert!(CompactHeader { reserved: 1, ..c }.expand(kind::SEND, 0x42, 8).is_none());
        assert!(CompactHeader { flags: flag::LAST, ..c }.expand(kind::SEND, 0x42, 8).is_none());
    }

    #[test]
    fn timers() {
        assert_eq!(rnr_timer_us(12), 640);
        assert_eq!(rnr_timer_us(0), 655_360);
        assert_eq!(ack_timeout_us(14), Some(67_108));
        assert_eq!(ack_timeout_us(0), None);
    }
}
