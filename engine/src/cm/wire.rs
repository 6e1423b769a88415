//! The connection manager's messages on the TCP stream.
//!
//! Every message is one frame: a big-endian `u32` body length, then the body. A body
//! starts with the magic `"FDCM"`, the protocol version ([`VERSION`]) and a kind byte, then
//! the kind's fields, all integers big-endian:
//!
//! | kind | fields after the 6-byte header |
//! |---|---|
//! | REQ 1, REP 2 | qpn u32 (24 bits), psn u32 (24 bits), gid 16 bytes, responder resources u8, initiator depth u8, path MTU u8 (1 = 256 … 5 = 4096), reserved u8 (0), private data length u16, private data |
//! | REJ 3 | reason u8 ([`RejectReason`]), reserved u8 (0), private data length u16, private data |
//! | RTU 4, DREQ 5, DREP 6 | (none) |
//!
//! The body length must be exactly what the fields need, private data is at most
//! [`MAX_PRIVATE_DATA`] bytes (DAT `max_private_data_size`), and every field is range
//! checked: whatever a peer sends, decoding gives a message or a [`WireError`] saying what
//! was wrong — it never panics and never allocates more than one maximal frame.
//! `tests/cm_hostile_peer.rs` feeds random and mutated frames to real CMs over sockets.

use std::fmt;

/// `"FDCM"`: the first four body bytes of every message.
pub const MAGIC: u32 = u32::from_be_bytes(*b"FDCM");
/// The protocol version this code speaks (and the only one it accepts).
pub const VERSION: u8 = 1;
/// The most private data a REQ, REP or REJ carries (DAT `max_private_data_size`).
pub const MAX_PRIVATE_DATA: usize = 256;
/// Bytes of the length prefix.
pub const PREFIX_LEN: usize = 4;
/// Bytes of magic, version and kind.
pub const HEADER_LEN: usize = 6;
/// Bytes of a REQ/REP's fixed fields (before the private data).
const QP_FIELDS_LEN: usize = 4 + 4 + 16 + 1 + 1 + 1 + 1 + 2;
/// The largest body any valid message has.
pub const MAX_BODY_LEN: usize = HEADER_LEN + QP_FIELDS_LEN + MAX_PRIVATE_DATA;
/// The largest RDMA READ depth (responder resources, initiator depth) a peer may ask for.
pub const MAX_RD_ATOMIC: u8 = 16;

const KIND_REQ: u8 = 1;
const KIND_REP: u8 = 2;
const KIND_REJ: u8 = 3;
const KIND_RTU: u8 = 4;
const KIND_DREQ: u8 = 5;
const KIND_DREP: u8 = 6;

/// What one side tells the other about its QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnInfo {
    /// The QP number (24 bits).
    pub qpn: u32,
    /// The first PSN this side sends with (24 bits); the peer's RQ PSN.
    pub psn: u32,
    /// This side's GID (RoCE v2: the IPv4-mapped or IPv6 address of the port).
    pub gid: [u8; 16],
    /// RDMA READs/atomics this side serves at once (its `max_dest_rd_atomic`, 0..=16).
    pub responder_resources: u8,
    /// RDMA READs/atomics this side issues at once (its `max_rd_atomic`, 0..=16).
    pub initiator_depth: u8,
    /// The largest path MTU this side supports (IB encoding, 1 = 256 … 5 = 4096).
    pub path_mtu: u8,
}

/// Why a REJ was sent: decides which event the active side gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// The consumer called reject (→ `PEER_REJECTED`).
    Consumer = 1,
    /// Nobody listens on the conn_qual any more (→ `NON_PEER_REJECTED`).
    NoListener = 2,
    /// The listener's backlog of undecided requests is full (→ `NON_PEER_REJECTED`).
    Backlog = 3,
    /// The provider gave the request up (request dropped undecided, IA closing)
    /// (→ `NON_PEER_REJECTED`).
    Provider = 4,
}

impl RejectReason {
    fn from_u8(v: u8) -> Option<RejectReason> {
        Some(match v {
            1 => RejectReason::Consumer,
            2 => RejectReason::NoListener,
            3 => RejectReason::Backlog,
            4 => RejectReason::Provider,
            _ => return None,
        })
    }
}

/// One CM message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    /// Connection request (active → passive).
    Req { info: ConnInfo, private_data: Vec<u8> },
    /// Accept (passive → active).
    Rep { info: ConnInfo, private_data: Vec<u8> },
    /// Reject (passive → active, or active → passive to refuse a REP).
    Rej { reason: RejectReason, private_data: Vec<u8> },
    /// Ready to use: the active QP is ready, the connection is established (active → passive).
    Rtu,
    /// Disconnect request (either way).
    Dreq,
    /// Disconnect reply.
    Drep,
}

/// What was wrong with bytes from a peer, or with a message we were asked to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The body ends before field `field` (needs `need` bytes, has `have`).
    Truncated { field: &'static str, need: usize, have: usize },
    /// The length prefix announces more than any valid message has.
    FrameTooLong { len: usize },
    /// The body is longer than its fields.
    TrailingBytes { extra: usize },
    /// The body does not start with `"FDCM"`: the peer is not a ferrodat CM.
    BadMagic { got: u32 },
    /// The peer speaks another protocol version.
    BadVersion { got: u8 },
    /// An unknown message kind.
    UnknownKind { got: u8 },
    /// A field holds a value outside its range.
    OutOfRange { field: &'static str, value: u64 },
    /// Private data longer than [`MAX_PRIVATE_DATA`].
    PrivateDataTooLong { len: usize },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated { field, need, have } => write!(
                f,
                "CM message truncated at {field}: needs {need} more bytes, has {have} (the peer \
                 sent a short message)"
            ),
            WireError::FrameTooLong { len } => write!(
                f,
                "CM message announces {len} bytes, more than the largest valid one \
                 ({MAX_BODY_LEN}): the peer is not a ferrodat CM or its stream is corrupt"
            ),
            WireError::TrailingBytes { extra } => {
                write!(f, "CM message has {extra} bytes after its last field")
            }
            WireError::BadMagic { got } => write!(
                f,
                "CM message starts with {got:#010x}, not \"FDCM\": the peer at this conn_qual \
                 is not a ferrodat connection manager"
            ),
            WireError::BadVersion { got } => write!(
                f,
                "CM protocol version {got} from the peer, this side speaks {VERSION}: run the \
                 same ferrodat version on both ends"
            ),
            WireError::UnknownKind { got } => write!(f, "unknown CM message kind {got}"),
            WireError::OutOfRange { field, value } => {
                write!(f, "CM message field {field} = {value} is out of range")
            }
            WireError::PrivateDataTooLong { len } => write!(
                f,
                "{len} bytes of private data, the most a connection carries is \
                 {MAX_PRIVATE_DATA} (max_private_data_size)"
            ),
        }
    }
}

impl std::error::Error for WireError {}

impl ConnInfo {
    /// Checks the ranges the wire format allows (also done before sending).
    pub fn validate(&self) -> Result<(), WireError> {
        let check = |field, value: u64, ok: bool| {
            if ok { Ok(()) } else { Err(WireError::OutOfRange { field, value }) }
        };
        check("qpn", self.qpn.into(), self.qpn <= 0xff_ffff)?;
        check("psn", self.psn.into(), self.psn <= 0xff_ffff)?;
        check(
            "responder_resources",
            self.responder_resources.into(),
            self.responder_resources <= MAX_RD_ATOMIC,
        )?;
        check(
            "initiator_depth",
            self.initiator_depth.into(),
            self.initiator_depth <= MAX_RD_ATOMIC,
        )?;
        check("path_mtu", self.path_mtu.into(), (1..=5).contains(&self.path_mtu))
    }
}

/// Checks a private-data length against [`MAX_PRIVATE_DATA`].
pub fn check_private_data(pd: &[u8]) -> Result<(), WireError> {
    if pd.len() > MAX_PRIVATE_DATA {
        Err(WireError::PrivateDataTooLong { len: pd.len() })
    } else {
        Ok(())
    }
}

impl Msg {
    fn kind(&self) -> u8 {
        match self {
            Msg::Req { .. } => KIND_REQ,
            Msg::Rep { .. } => KIND_REP,
            Msg::Rej { .. } => KIND_REJ,
            Msg::Rtu => KIND_RTU,
            Msg::Dreq => KIND_DREQ,
            Msg::Drep => KIND_DREP,
        }
    }

    /// The message's name on the wire ("REQ", "REP", …).
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Req { .. } => "REQ",
            Msg::Rep { .. } => "REP",
            Msg::Rej { .. } => "REJ",
            Msg::Rtu => "RTU",
            Msg::Dreq => "DREQ",
            Msg::Drep => "DREP",
        }
    }

    /// The whole frame (length prefix and body); fails on out-of-range fields or too much
    /// private data.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let mut b = Vec::with_capacity(PREFIX_LEN + MAX_BODY_LEN);
        b.extend_from_slice(&[0; PREFIX_LEN]);
        b.extend_from_slice(&MAGIC.to_be_bytes());
        b.push(VERSION);
        b.push(self.kind());
        match self {
            Msg::Req { info, private_data } | Msg::Rep { info, private_data } => {
                info.validate()?;
                check_private_data(private_data)?;
                b.extend_from_slice(&info.qpn.to_be_bytes());
                b.extend_from_slice(&info.psn.to_be_bytes());
                b.extend_from_slice(&info.gid);
                b.extend_from_slice(&[
                    info.responder_resources,
                    info.initiator_depth,
                    info.path_mtu,
                    0,
                ]);
                b.extend_from_slice(&(private_data.len() as u16).to_be_bytes());
                b.extend_from_slice(private_data);
            }
            Msg::Rej { reason, private_data } => {
                check_private_data(private_data)?;
                b.extend_from_slice(&[*reason as u8, 0]);
                b.extend_from_slice(&(private_data.len() as u16).to_be_bytes());
                b.extend_from_slice(private_data);
            }
            Msg::Rtu | Msg::Dreq | Msg::Drep => {}
        }
        let body = (b.len() - PREFIX_LEN) as u32;
        b[..PREFIX_LEN].copy_from_slice(&body.to_be_bytes());
        Ok(b)
    }
}

/// Reads fields off a body, failing with [`WireError::Truncated`] past its end.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], WireError> {
        if self.buf.len() < n {
            return Err(WireError::Truncated { field, need: n, have: self.buf.len() });
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn u8(&mut self, field: &'static str) -> Result<u8, WireError> {
        Ok(self.take(field, 1)?[0])
    }

    fn u16(&mut self, field: &'static str) -> Result<u16, WireError> {
        let b = self.take(field, 2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, WireError> {
        let b = self.take(field, 4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn reserved(&mut self, field: &'static str) -> Result<(), WireError> {
        match self.u8(field)? {
            0 => Ok(()),
            v => Err(WireError::OutOfRange { field, value: v.into() }),
        }
    }

    fn private_data(&mut self) -> Result<Vec<u8>, WireError> {
        let len = self.u16("private data length")? as usize;
        if len > MAX_PRIVATE_DATA {
            return Err(WireError::PrivateDataTooLong { len });
        }
        Ok(self.take("private data", len)?.to_vec())
    }

    fn conn_info(&mut self) -> Result<ConnInfo, WireError> {
        let qpn = self.u32("qpn")?;
        let psn = self.u32("psn")?;
        let mut gid = [0; 16];
        gid.copy_from_slice(self.take("gid", 16)?);
        let info = ConnInfo {
            qpn,
            psn,
            gid,
            responder_resources: self.u8("responder_resources")?,
            initiator_depth: self.u8("initiator_depth")?,
            path_mtu: self.u8("path_mtu")?,
        };
        self.reserved("reserved (after path_mtu)")?;
        info.validate()?;
        Ok(info)
    }
}

/// Decodes one complete body (the bytes after the length prefix).
pub fn decode_body(body: &[u8]) -> Result<Msg, WireError> {
    if body.len() > MAX_BODY_LEN {
        return Err(WireError::FrameTooLong { len: body.len() });
    }
    let mut r = Reader { buf: body };
    let magic = r.u32("magic")?;
    if magic != MAGIC {
        return Err(WireError::BadMagic { got: magic });
    }
    let version = r.u8("version")?;
    if version != VERSION {
        return Err(WireError::BadVersion { got: version });
    }
    let msg = match r.u8("kind")? {
        KIND_REQ => Msg::Req { info: r.conn_info()?, private_data: r.private_data()? },
        KIND_REP => Msg::Rep { info: r.conn_info()?, private_data: r.private_data()? },
        KIND_REJ => {
            let v = r.u8("reject reason")?;
            let reason = RejectReason::from_u8(v)
                .ok_or(WireError::OutOfRange { field: "reject reason", value: v.into() })?;
            r.reserved("reserved (after reject reason)")?;
            Msg::Rej { reason, private_data: r.private_data()? }
        }
        KIND_RTU => Msg::Rtu,
        KIND_DREQ => Msg::Dreq,
        KIND_DREP => Msg::Drep,
        k => return Err(WireError::UnknownKind { got: k }),
    };
    if !r.buf.is_empty() {
        return Err(WireError::TrailingBytes { extra: r.buf.len() });
    }
    Ok(msg)
}

/// Decodes the first frame of `buf`: `Ok(None)` while the frame is incomplete, else the
/// message and the bytes it used. A length prefix beyond [`MAX_BODY_LEN`] fails at once,
/// so a reader never buffers more than one maximal frame.
pub fn decode_frame(buf: &[u8]) -> Result<Option<(Msg, usize)>, WireError> {
    if buf.len() < PREFIX_LEN {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if len > MAX_BODY_LEN {
        return Err(WireError::FrameTooLong { len });
    }
    if buf.len() < PREFIX_LEN + len {
        return Ok(None);
    }
    let msg = decode_body(&buf[PREFIX_LEN..PREFIX_LEN + len])?;
    Ok(Some((msg, PREFIX_LEN + len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> ConnInfo {
        ConnInfo {
            qpn: 0x12_3456,
            psn: 0xab_cdef,
            gid: *b"0123456789abcdef",
            responder_resources: 4,
            initiator_depth: 3,
            path_mtu: 3,
        }
    }

    fn all_messages() -> Vec<Msg> {
        vec![
            Msg::Req { info: info(), private_data: vec![] },
            Msg::Req { info: info(), private_data: (1..=48).collect() },
            Msg::Rep { info: info(), private_data: vec![0x5a; MAX_PRIVATE_DATA] },
            Msg::Rej { reason: RejectReason::Consumer, private_data: vec![1, 2, 3] },
            Msg::Rej { reason: RejectReason::NoListener, private_data: vec![] },
            Msg::Rej { reason: RejectReason::Backlog, private_data: vec![] },
            Msg::Rej { reason: RejectReason::Provider, private_data: vec![] },
            Msg::Rtu,
            Msg::Dreq,
            Msg::Drep,
        ]
    }

    #[test]
    fn every_message_round_trips() {
        for m in all_messages() {
            let f = m.encode().unwrap();
            assert_eq!(decode_frame(&f).unwrap(), Some((m.clone(), f.len())), "{m:?}");
        }
    }

    #[test]
    fn frames_concatenate_and_partial_frames_wait() {
        let a = Msg::Req { info: info(), private_data: vec![7; 10] }.encode().unwrap();
        let b = Msg::Rtu.encode().unwrap();
        let both = [a.clone(), b.clone()].concat();
        let (m, n) = decode_frame(&both).unwrap().unwrap();
        assert_eq!((m.name(), n), ("REQ", a.len()));
        assert_eq!(decode_frame(&both[n..]).unwrap().unwrap().0, Msg::Rtu);
        for cut in 0..a.len() {
            assert_eq!(decode_frame(&a[..cut]).unwrap(), None, "cut at {cut}");
        }
    }

    #[test]
    fn too_much_private_data_is_refused_both_ways() {
        let pd = vec![0; MAX_PRIVATE_DATA + 1];
        let e = Msg::Rep { info: info(), private_data: pd.clone() }.encode().unwrap_err();
        assert_eq!(e, WireError::PrivateDataTooLong { len: MAX_PRIVATE_DATA + 1 });
        assert!(e.to_string().contains("257 bytes of private data"), "{e}");
        // Forge one: a REJ with a 257-byte length field.
        let mut body = Msg::Rej { reason: RejectReason::Consumer, private_data: vec![] }
            .encode()
            .unwrap()[PREFIX_LEN..]
            .to_vec();
        let at = body.len() - 2;
        body[at..].copy_from_slice(&257u16.to_be_bytes());
        body.extend_from_slice(&pd);
        assert_eq!(decode_body(&body), Err(WireError::PrivateDataTooLong { len: 257 }));
    }

    #[test]
    fn out_of_range_fields_are_refused_before_sending() {
        for (bad, field) in [
            (ConnInfo { qpn: 1 << 24, ..info() }, "qpn"),
            (ConnInfo { psn: 1 << 24, ..info() }, "psn"),
            (ConnInfo { path_mtu: 0, ..info() }, "path_mtu"),
            (ConnInfo { path_mtu: 6, ..info() }, "path_mtu"),
            (ConnInfo { responder_resources: 17, ..info() }, "responder_resources"),
            (ConnInfo { initiator_depth: 200, ..info() }, "initiator_depth"),
        ] {
            match (Msg::Req { info: bad, private_data: vec![] }).encode() {
                Err(WireError::OutOfRange { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    /// A valid REQ body with one byte changed.
    fn req_body_with(at: usize, v: u8) -> Vec<u8> {
        let mut b = Msg::Req { info: info(), private_data: vec![9; 4] }.encode().unwrap()
            [PREFIX_LEN..]
            .to_vec();
        b[at] = v;
        b
    }

    #[test]
    fn malformed_bodies_say_what_is_wrong() {
        assert!(matches!(decode_body(&req_body_with(0, b'X')), Err(WireError::BadMagic { .. })));
        let e = decode_body(&req_body_with(4, 2)).unwrap_err();
        assert_eq!(e, WireError::BadVersion { got: 2 });
        assert!(e.to_string().contains("same ferrodat version"), "{e}");
        assert_eq!(decode_body(&req_body_with(5, 0)), Err(WireError::UnknownKind { got: 0 }));
        assert_eq!(decode_body(&req_body_with(5, 77)), Err(WireError::UnknownKind { got: 77 }));
        // qpn's top byte (offset 6) must be 0.
        assert!(matches!(
            decode_body(&req_body_with(6, 1)),
            Err(WireError::OutOfRange { field: "qpn", .. })
        ));
        // path MTU at 6 + 4 + 4 + 16 + 2 = 32.
        assert!(matches!(
            decode_body(&req_body_with(32, 9)),
            Err(WireError::OutOfRange { field: "path_mtu", .. })
        ));
        assert!(matches!(
            decode_body(&req_body_with(33, 1)),
            Err(WireError::OutOfRange { field: "reserved (after path_mtu)", .. })
        ));
        // Private data length says 5, 4 follow.
        assert_eq!(
            decode_body(&req_body_with(35, 5)),
            Err(WireError::Truncated { field: "private data", need: 5, have: 4 })
        );
        // Private data length says 3, 4 follow.
        assert_eq!(decode_body(&req_body_with(35, 3)), Err(WireError::TrailingBytes { extra: 1 }));
        let mut rej =
            Msg::Rej { reason: RejectReason::Consumer, private_data: vec![] }.encode().unwrap();
        rej[PREFIX_LEN + HEADER_LEN] = 9;
        assert!(matches!(
            decode_body(&rej[PREFIX_LEN..]),
            Err(WireError::OutOfRange { field: "reject reason", value: 9 })
        ));
        let mut rtu = Msg::Rtu.encode().unwrap();
        rtu.push(0);
        rtu[3] += 1;
        assert_eq!(decode_frame(&rtu), Err(WireError::TrailingBytes { extra: 1 }));
        let huge = [0xff, 0xff, 0xff, 0xff, 1, 2];
        assert!(matches!(decode_frame(&huge), Err(WireError::FrameTooLong { .. })));
        assert!(matches!(decode_body(&[]), Err(WireError::Truncated { field: "magic", .. })));
    }

    #[test]
    fn every_truncation_of_every_body_is_an_error() {
        for m in all_messages() {
            let f = m.encode().unwrap();
            let body = &f[PREFIX_LEN..];
            for cut in 0..body.len() {
                assert!(
                    matches!(decode_body(&body[..cut]), Err(WireError::Truncated { .. })),
                    "{} cut at {cut}",
                    m.name()
                );
            }
        }
    }

    /// xorshift64*: a fixed-seed generator, so a failure reproduces.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Property: for any bytes, decoding returns (never panics), and whatever decodes
    /// re-encodes to exactly the bytes it came from.
    #[test]
    fn random_bytes_never_panic_and_what_decodes_is_canonical() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let valid: Vec<Vec<u8>> = all_messages().iter().map(|m| m.encode().unwrap()).collect();
        let mut decoded = 0;
        for i in 0..50_000 {
            let buf: Vec<u8> = if i % 2 == 0 {
                // Pure noise, sometimes with a plausible prefix and header.
                let len = rng.below(MAX_BODY_LEN + 16);
                let mut b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                if i % 4 == 0 && b.len() >= 10 {
                    let body_len = (b.len() - 4) as u32;
                    b[..4].copy_from_slice(&body_len.to_be_bytes());
                    b[4..8].copy_from_slice(&MAGIC.to_be_bytes());
                    b[8] = VERSION;
                    b[9] = 1 + rng.below(6) as u8;
                }
                b
            } else {
                // A valid frame with a few bytes mutated and maybe cut or extended.
                let mut b = valid[rng.below(valid.len())].clone();
                for _ in 0..1 + rng.below(3) {
                    let at = rng.below(b.len());
                    b[at] = rng.next() as u8;
                }
                match rng.below(3) {
                    0 => b.truncate(rng.below(b.len() + 1)),
                    1 => b.extend((0..rng.below(8)).map(|_| rng.next() as u8)),
                    _ => {}
                }
                b
            };
            if let Ok(Some((m, n))) = decode_frame(&buf) {
                decoded += 1;
                assert_eq!(m.encode().unwrap(), buf[..n], "non-canonical decode of {buf:?}");
            }
            if buf.len() >= 4 {
                let _ = decode_body(&buf[4..]);
            }
        }
        assert!(decoded > 0, "the mutations never produced a valid message");
    }
}
