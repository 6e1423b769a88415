//! Decoding the send WQEs a driver posts, as the HCA reads them.
//!
//! A send WQE is a control segment followed by opcode-specific segments, in 16-byte units
//! ("ds"): RC order is `ctrl, [raddr], [atomic], data… | inline`. A memory-window bind is
//! opcode UMR: `ctrl (imm = the window's key), umr ctrl, mkey context, [one KLM padded to
//! 64 bytes]`, exactly as rdma-core's `set_bind_wr` writes it for a type 1 window; other
//! UMR uses (memory registration, type 2 windows, local invalidation) are not modelled. The caller copies the
//! WQE's `ds * 16` bytes out of the send queue (unwrapping the ring) and hands them here;
//! nothing is read from application memory during decoding. A WQE the HCA cannot execute
//! decodes to the syndrome hardware reports for it: `LOCAL_QP_OP_ERR`.

use super::mr::{BoundRange, WindowBind};
use ferrodat_abi::mlx5::{
    INLINE_SEG, MKEY_CONTEXT_FREE, SEND_WQE_DS, WqeAtomicSeg, WqeCtrlSeg, WqeDataSeg,
    WqeMkeyContextSeg, WqeRaddrSeg, WqeUmrCtrlSeg, WqeUmrKlmSeg, cqe_syndrome, mkey_access,
    mkey_mask, opcode, umr_ctrl_flag, wqe_ctrl,
};
use ferrodat_abi::uverbs::access;
use zerocopy::FromBytes;

/// The largest WQE: `ds` is a 6-bit field of 16-byte units.
pub const MAX_WQE_BYTES: usize = 63 * SEND_WQE_DS;

/// A data segment's byte count of 0 means 2 GiB on mlx5 (which is why drivers never post
/// zero-length segments).
const ZERO_BYTE_COUNT_MEANS: u32 = 0x8000_0000;

/// One scatter/gather element of a WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge {
    /// Virtual address (or offset for zero-based MRs).
    pub addr: u64,
    /// Bytes.
    pub length: u32,
    /// The local key of the MR that covers it.
    pub lkey: u32,
}

/// Where a WQE's local data is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalData {
    /// Data segments: `count` of them starting at byte `offset` of the WQE.
    Gather {
        /// Byte offset of the first data segment.
        offset: usize,
        /// Number of data segments.
        count: usize,
    },
    /// Inline bytes carried in the WQE itself, at `offset`, `len` long.
    Inline {
        /// Byte offset of the data.
        offset: usize,
        /// Length in bytes.
        len: usize,
    },
}

/// The remote side of an RDMA or atomic operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remote {
    /// Remote virtual address.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// A decoded send WQE, borrowing the copied WQE bytes.
#[derive(Clone, Copy, Debug)]
pub struct SendWqe<'a> {
    bytes: &'a [u8],
    /// The mlx5 opcode ([`opcode`]).
    pub opcode: u8,
    /// The WQE index from the control segment; reported as the CQE's `wqe_counter`.
    pub wqe_index: u16,
    /// The QPN the driver wrote into the control segment.
    pub qpn: u32,
    /// Size in 16-byte units.
    pub ds: usize,
    /// A completion is requested (CQ_UPDATE).
    pub signaled: bool,
    /// The receiver should raise a solicited event.
    pub solicited: bool,
    /// Wait for earlier RDMA READs and atomics to complete first.
    pub fence: bool,
    /// Immediate data, as the 4 bytes the driver wrote (already in network order).
    pub imm: [u8; 4],
    /// Remote address and key (RDMA and atomics).
    pub remote: Option<Remote>,
    /// Atomic operands: `(swap or add, compare)`.
    pub atomic: Option<(u64, u64)>,
    /// A memory-window bind (opcode UMR).
    pub bind: Option<WindowBind>,
    /// Local data.
    pub data: LocalData,
}

impl<'a> SendWqe<'a> {
    /// The WQE's data segments (empty for inline data).
    pub fn sges(&self) -> impl Iterator<Item = Sge> + 'a {
        let (offset, count) = match self.data {
            LocalData::Gather { offset, count } => (offset, count),
            LocalData::Inline { .. } => (0, 0),
        };
        let bytes = self.bytes;
        (0..count).map(move |i| {
            let at = offset + i * SEND_WQE_DS;
            let seg = WqeDataSeg::read_from_bytes(&bytes[at..at + SEND_WQE_DS])
                .expect("decode checked that every data segment lies inside the WQE");
            let length = match seg.byte_count.get() {
                0 => ZERO_BYTE_COUNT_MEANS,
                n => n,
            };
            Sge { addr: seg.addr.get(), length, lkey: seg.lkey.get() }
        })
    }

    /// The inline bytes (empty for gathered data).
    pub fn inline_data(&self) -> &'a [u8] {
        match self.data {
            LocalData::Inline { offset, len } => &self.bytes[offset..offset + len],
            LocalData::Gather { .. } => &[],
        }
    }

    /// Total local bytes: the message length for SEND/WRITE, the READ target size.
    pub fn local_length(&self) -> u64 {
        match self.data {
            LocalData::Inline { len, .. } => len as u64,
            LocalData::Gather { .. } => self.sges().map(|s| u64::from(s.length)).sum(),
        }
    }
}

/// Reads the control segment of a WQE: `(opcode, wqe_index, ds)`; enough to know how many
/// bytes the whole WQE has before copying it.
pub fn peek_ctrl(first16: &[u8; 16]) -> (u8, u16, usize) {
    let ctrl = WqeCtrlSeg::read_from_bytes(first16).expect("16 bytes");
    let w = ctrl.opmod_idx_opcode.get();
    ((w & 0xff) as u8, (w >> 8) as u16, (ctrl.qpn_ds.get() & 0x3f) as usize)
}

/// Decodes one send WQE from its bytes (`ds * 16` of them, ring already unwrapped).
/// Returns the CQE syndrome hardware reports for a WQE it cannot execute.
pub fn decode(bytes: &[u8]) -> Result<SendWqe<'_>, u8> {
    const BAD: u8 = cqe_syndrome::LOCAL_QP_OP_ERR;
    let first: &[u8; 16] = bytes.get(..SEND_WQE_DS).and_then(|b| b.try_into().ok()).ok_or(BAD)?;
    let ctrl = WqeCtrlSeg::read_from_bytes(first).map_err(|_| BAD)?;
    let (op, wqe_index, ds) = peek_ctrl(first);
    let len = ds * SEND_WQE_DS;
    if ds == 0 || len > bytes.len() {
        return Err(BAD);
    }
    let bytes = &bytes[..len];
    let fm_ce_se = ctrl.fm_ce_se;
    let mut wqe = SendWqe {
        bytes,
        opcode: op,
        wqe_index,
        qpn: ctrl.qpn_ds.get() >> 8,
        ds,
        signaled: fm_ce_se & wqe_ctrl::CQ_UPDATE != 0,
        solicited: fm_ce_se & wqe_ctrl::SOLICITED != 0,
        fence: fm_ce_se & (wqe_ctrl::FENCE | wqe_ctrl::INITIATOR_SMALL_FENCE) != 0,
        imm: ctrl.imm.get().to_be_bytes(),
        remote: None,
        atomic: None,
        bind: None,
        data: LocalData::Gather { offset: SEND_WQE_DS, count: 0 },
    };

    let mut at = SEND_WQE_DS;
    let take = |at: &mut usize| -> Result<&[u8], u8> {
        let seg = bytes.get(*at..*at + SEND_WQE_DS).ok_or(BAD)?;
        *at += SEND_WQE_DS;
        Ok(seg)
    };
    match op {
        opcode::NOP => return Ok(wqe),
        opcode::UMR => {
            wqe.bind = Some(decode_bind(bytes, ctrl.imm.get())?);
            wqe.data = LocalData::Gather { offset: len, count: 0 };
            return Ok(wqe);
        }
        opcode::SEND | opcode::SEND_IMM => {}
        opcode::RDMA_WRITE | opcode::RDMA_WRITE_IMM | opcode::RDMA_READ => {
            let r = WqeRaddrSeg::read_from_bytes(take(&mut at)?).map_err(|_| BAD)?;
            wqe.remote = Some(Remote { addr: r.raddr.get(), rkey: r.rkey.get() });
        }
        opcode::ATOMIC_CS | opcode::ATOMIC_FA => {
            let r = WqeRaddrSeg::read_from_bytes(take(&mut at)?).map_err(|_| BAD)?;
            wqe.remote = Some(Remote { addr: r.raddr.get(), rkey: r.rkey.get() });
            let a = WqeAtomicSeg::read_from_bytes(take(&mut at)?).map_err(|_| BAD)?;
            wqe.atomic = Some((a.swap_add.get(), a.compare.get()));
        }
        _ => return Err(BAD),
    }
    wqe.data = decode_local_data(bytes, at)?;
    // An atomic returns exactly 8 bytes into one data segment: inline data (which libmlx5
    // writes for IBV_SEND_INLINE whatever the opcode) has nowhere to take them.
    if wqe.atomic.is_some() {
        if !matches!(wqe.data, LocalData::Gather { count: 1, .. }) {
            return Err(BAD);
        }
        if wqe.local_length() != 8 {
            return Err(cqe_syndrome::LOCAL_LENGTH_ERR);
        }
    }
    // RDMA READ results land in memory: they cannot be inline.
    if op == opcode::RDMA_READ && matches!(wqe.data, LocalData::Inline { .. }) {
        return Err(BAD);
    }
    Ok(wqe)
}

/// Bytes of the KLM part of a bind WQE: one KLM padded to 64 (rdma-core's
/// `set_umr_data_seg`).
const BIND_KLM_BYTES: usize = 64;

/// The `mkey_mask` of a type 1 unbind, and the bits a bind adds.
const UNBIND_MASK: u64 = mkey_mask::FREE | mkey_mask::MKEY;
const BIND_MASK: u64 = UNBIND_MASK
    | mkey_mask::LEN
    | mkey_mask::START_ADDR
    | mkey_mask::ACCESS_LOCAL_WRITE
    | mkey_mask::ACCESS_REMOTE_READ
    | mkey_mask::ACCESS_REMOTE_WRITE
    | mkey_mask::ACCESS_ATOMIC;

/// The UMR segments after the control segment of `bytes` (the whole WQE), as a type 1
/// bind (with one KLM) or unbind (without). Anything else is a UMR this HCA model does not
/// execute: LOCAL_QP_OP_ERR.
fn decode_bind(bytes: &[u8], window_key: u32) -> Result<WindowBind, u8> {
    const BAD: u8 = cqe_syndrome::LOCAL_QP_OP_ERR;
    let umr_at = SEND_WQE_DS;
    let mkey_at = umr_at + size_of::<WqeUmrCtrlSeg>();
    let klm_at = mkey_at + size_of::<WqeMkeyContextSeg>();
    let umr =
        WqeUmrCtrlSeg::read_from_bytes(bytes.get(umr_at..mkey_at).ok_or(BAD)?).map_err(|_| BAD)?;
    let mkey = WqeMkeyContextSeg::read_from_bytes(bytes.get(mkey_at..klm_at).ok_or(BAD)?)
        .map_err(|_| BAD)?;
    let type_1_flags = umr_ctrl_flag::INLINE | umr_ctrl_flag::TRANSLATION_OFFSET;
    if umr.flags != type_1_flags || mkey.qpn_mkey.get() >> 8 != 0xff_ffff {
        return Err(BAD);
    }
    let variant = mkey.qpn_mkey.get() as u8;
    if mkey.free == MKEY_CONTEXT_FREE {
        if umr.mkey_mask.get() != UNBIND_MASK || umr.klm_octowords.get() != 0 {
            return Err(BAD);
        }
        if bytes.len() != klm_at {
            return Err(BAD);
        }
        return Ok(WindowBind { window_key, variant, range: None });
    }
    if mkey.free != 0 || umr.mkey_mask.get() != BIND_MASK || umr.klm_octowords.get() != 4 {
        return Err(BAD);
    }
    let klm_bytes = bytes.get(klm_at..klm_at + BIND_KLM_BYTES).ok_or(BAD)?;
    if bytes.len() != klm_at + BIND_KLM_BYTES {
        return Err(BAD);
    }
    let klm =
        WqeUmrKlmSeg::read_from_bytes(&klm_bytes[..size_of::<WqeUmrKlmSeg>()]).map_err(|_| BAD)?;
    let (addr, len) = (mkey.start_addr.get(), mkey.len.get());
    // One KLM covering the window exactly, at most 2 GiB (the KLM byte count's range).
    if len == 0
        || len > 1 << 31
        || u64::from(klm.byte_count.get()) != len
        || klm.address.get() != addr
    {
        return Err(BAD);
    }
    let flag = |bit: u8, right: u32| if mkey.access_flags & bit != 0 { right } else { 0 };
    let rights = flag(mkey_access::LOCAL_WRITE, access::LOCAL_WRITE)
        | flag(mkey_access::REMOTE_READ, access::REMOTE_READ)
        | flag(mkey_access::REMOTE_WRITE, access::REMOTE_WRITE)
        | flag(mkey_access::ATOMIC, access::REMOTE_ATOMIC);
    let range = BoundRange { addr, len, access: rights, region_key: klm.mkey.get() };
    Ok(WindowBind { window_key, variant, range: Some(range) })
}

/// The local-data part after the opcode segments: one inline segment, or data segments up
/// to the end of the WQE.
fn decode_local_data(bytes: &[u8], at: usize) -> Result<LocalData, u8> {
    const BAD: u8 = cqe_syndrome::LOCAL_QP_OP_ERR;
    if at == bytes.len() {
        return Ok(LocalData::Gather { offset: at, count: 0 });
    }
    let word = u32::from_be_bytes(bytes[at..at + 4].try_into().map_err(|_| BAD)?);
    if word & INLINE_SEG != 0 {
        let len = (word & !INLINE_SEG) as usize;
        let offset = at + 4;
        if offset + len > bytes.len() {
            return Err(BAD);
        }
        return Ok(LocalData::Inline { offset, len });
    }
    Ok(LocalData::Gather { offset: at, count: (bytes.len() - at) / SEND_WQE_DS })
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;
    use zerocopy::byteorder::big_endian::{U16, U32, U64};

    fn ctrl(op: u8, idx: u16, qpn: u32, ds: u8, flags: u8) -> WqeCtrlSeg {
        WqeCtrlSeg {
            opmod_idx_opcode: U32::new(u32::from(idx) << 8 | u32::from(op)),
            qpn_ds: U32::new(qpn << 8 | u32::from(ds)),
            fm_ce_se: flags,
            ..Default::default()
        }
    }

    fn data(len: u32, lkey: u32, addr: u64) -> WqeDataSeg {
        WqeDataSeg { byte_count: U32::new(len), lkey: U32::new(lkey), addr: U64::new(addr) }
    }

    #[test]
    fn send_with_two_sges() {
        let mut b = Vec::new();
        b.extend_from_slice(ctrl(opcode::SEND, 7, 0x108, 3, wqe_ctrl::CQ_UPDATE).as_bytes());
        b.extend_from_slice(data(4096, 0x1234, 0x1000).as_bytes());
        b.extend_from_slice(data(0, 0x1234, 0x9000).as_bytes());
        let w = decode(&b).unwrap();
        assert_eq!((w.opcode, w.wqe_index, w.qpn, w.ds), (opcode::SEND, 7, 0x108, 3));
        assert!(w.signaled && !w.solicited && !w.fence);
        let sges: Vec<_> = w.sges().collect();
        assert_eq!(sges[0], Sge { addr: 0x1000, length: 4096, lkey: 0x1234 });
        assert_eq!(sges[1].length, 0x8000_0000, "byte_count 0 means 2 GiB");
    }

    #[test]
    fn inline_write_with_immediate() {
        let mut c = ctrl(opcode::RDMA_WRITE_IMM, 1, 5, 3, wqe_ctrl::SOLICITED | wqe_ctrl::FENCE);
        c.imm = U32::new(0x1122_3344);
        let mut b = c.as_bytes().to_vec();
        b.extend_from_slice(
            WqeRaddrSeg { raddr: U64::new(0xdead_0000), rkey: U32::new(9), reserved: U32::new(0) }
                .as_bytes(),
        );
        b.extend_from_slice(&(INLINE_SEG | 8).to_be_bytes());
        b.extend_from_slice(b"abcdefgh");
        b.resize(48, 0);
        let w = decode(&b).unwrap();
        assert_eq!(w.remote, Some(Remote { addr: 0xdead_0000, rkey: 9 }));
        assert_eq!(w.inline_data(), b"abcdefgh");
        assert_eq!(w.imm, [0x11, 0x22, 0x33, 0x44]);
        assert!(w.solicited && w.fence && !w.signaled);
        assert_eq!(w.local_length(), 8);
    }

    #[test]
    fn atomic_needs_one_8_byte_target() {
        let mut b = ctrl(opcode::ATOMIC_CS, 0, 5, 4, 0).as_bytes().to_vec();
        b.extend_from_slice(&[0u8; 16]);
        b.extend_from_slice(
            WqeAtomicSeg { swap_add: U64::new(2), compare: U64::new(1) }.as_bytes(),
        );
        b.extend_from_slice(data(8, 1, 0x10).as_bytes());
        assert_eq!(decode(&b).unwrap().atomic, Some((2, 1)));
        let at = b.len() - 16;
        b[at..at + 16].copy_from_slice(data(16, 1, 0x10).as_bytes());
        assert_eq!(decode(&b).unwrap_err(), cqe_syndrome::LOCAL_LENGTH_ERR);
        // Eight inline bytes (libmlx5 writes them for IBV_SEND_INLINE on any opcode), or
        // two 4-byte segments: nowhere to put the 8-byte result. Refused, not executed.
        let mut inline = b[..at].to_vec();
        inline.extend_from_slice(&(INLINE_SEG | 8).to_be_bytes());
        inline.extend_from_slice(&[0u8; 12]);
        assert_eq!(decode(&inline).unwrap_err(), cqe_syndrome::LOCAL_QP_OP_ERR);
        let mut two = ctrl(opcode::ATOMIC_FA, 0, 5, 5, 0).as_bytes().to_vec();
        two.extend_from_slice(&b[16..at]);
        two.extend_from_slice(data(4, 1, 0x10).as_bytes());
        two.extend_from_slice(data(4, 1, 0x20).as_bytes());
        assert_eq!(decode(&two).unwrap_err(), cqe_syndrome::LOCAL_QP_OP_ERR);
    }

    #[test]
    fn malformed_wqes_are_local_qp_op_errors() {
        let bad = cqe_syndrome::LOCAL_QP_OP_ERR;
        assert_eq!(decode(&[0u8; 8]).unwrap_err(), bad, "shorter than a ctrl segment");
        assert_eq!(decode(ctrl(opcode::SEND, 0, 1, 0, 0).as_bytes()).unwrap_err(), bad, "ds 0");
        assert_eq!(
            decode(ctrl(opcode::SEND, 0, 1, 2, 0).as_bytes()).unwrap_err(),
            bad,
            "ds > bytes"
        );
        assert_eq!(decode(ctrl(0x3e, 0, 1, 1, 0).as_bytes()).unwrap_err(), bad, "unknown opcode");
        let mut b = ctrl(opcode::RDMA_WRITE, 0, 1, 1, 0).as_bytes().to_vec();
        assert_eq!(decode(&b).unwrap_err(), bad, "RDMA without raddr segment");
        b = ctrl(opcode::SEND, 0, 1, 2, 0).as_bytes().to_vec();
        b.extend_from_slice(&(INLINE_SEG | 13).to_be_bytes());
        b.resize(32, 0);
        assert_eq!(decode(&b).unwrap_err(), bad, "inline longer than the WQE");
    }

    /// A type 1 bind as rdma-core's `set_bind_wr` writes it (12 ds), or an unbind (8 ds).
    fn bind_wqe(len: u64) -> Vec<u8> {
        use ferrodat_abi::mlx5::{WqeMkeyContextSeg, WqeUmrCtrlSeg, WqeUmrKlmSeg};
        let ds = if len > 0 { 12 } else { 8 };
        let mut c = ctrl(opcode::UMR, 4, 7, ds, wqe_ctrl::CQ_UPDATE);
        c.imm = U32::new(0x0900);
        let mut umr = WqeUmrCtrlSeg {
            flags: umr_ctrl_flag::INLINE | umr_ctrl_flag::TRANSLATION_OFFSET,
            mkey_mask: U64::new(UNBIND_MASK),
            ..Default::default()
        };
        let mut mkey = WqeMkeyContextSeg {
            free: MKEY_CONTEXT_FREE,
            qpn_mkey: U32::new(0xffff_ff01),
            ..Default::default()
        };
        if len > 0 {
            umr.mkey_mask = U64::new(BIND_MASK);
            umr.klm_octowords = U16::new(4);
            mkey.free = 0;
            mkey.access_flags = mkey_access::REMOTE_READ | mkey_access::ATOMIC;
            mkey.start_addr = U64::new(0x1010);
            mkey.len = U64::new(len);
        }
        let mut b = [c.as_bytes(), umr.as_bytes(), mkey.as_bytes()].concat();
        if len > 0 {
            let klm = WqeUmrKlmSeg {
                byte_count: U32::new(len as u32),
                mkey: U32::new(0x0305),
                address: U64::new(0x1010),
            };
            b.extend_from_slice(klm.as_bytes());
            b.resize(b.len() + 48, 0);
        }
        b
    }

    #[test]
    fn binds_and_unbinds_decode_and_other_umrs_are_refused() {
        let bound = bind_wqe(0x20);
        let w = decode(&bound).unwrap();
        let range = BoundRange {
            addr: 0x1010,
            len: 0x20,
            access: access::REMOTE_READ | access::REMOTE_ATOMIC,
            region_key: 0x0305,
        };
        assert_eq!(w.bind, Some(WindowBind { window_key: 0x0900, variant: 1, range: Some(range) }));
        assert_eq!((w.ds, w.local_length()), (12, 0));
        let unbound = bind_wqe(0);
        let w = decode(&unbound).unwrap();
        assert_eq!(w.bind, Some(WindowBind { window_key: 0x0900, variant: 1, range: None }));
        let bad = cqe_syndrome::LOCAL_QP_OP_ERR;
        let mut b = bind_wqe(0x20);
        b[16] |= umr_ctrl_flag::CHECK_FREE; // a type 2 bind
        assert_eq!(decode(&b).unwrap_err(), bad, "type 2");
        let mut b = bind_wqe(0x20);
        b[16 + 48 + 4] = 0x12; // qpn_mkey: a QP number, type 2
        assert_eq!(decode(&b).unwrap_err(), bad, "qpn");
        let mut b = bind_wqe(0x20);
        b[16 + 48 + 64] ^= 0x01; // the KLM's byte count differs from the window's length
        assert_eq!(decode(&b).unwrap_err(), bad, "klm length");
        let mut b = bind_wqe(0x20);
        b[16 + 8 + 3] |= 0x02; // mkey_mask bit 9 (SIG_ERR): not a bind
        assert_eq!(decode(&b).unwrap_err(), bad, "mask");
        let b = bind_wqe(0x20);
        assert_eq!(decode(&b[..16 * 11]).unwrap_err(), bad, "ds larger than the bytes");
    }

    #[test]
    fn nop_has_no_data() {
        let nop = ctrl(opcode::NOP, 3, 1, 1, wqe_ctrl::CQ_UPDATE);
        let w = decode(nop.as_bytes()).unwrap();
        assert_eq!(w.local_length(), 0);
        assert!(w.signaled);
    }
}
