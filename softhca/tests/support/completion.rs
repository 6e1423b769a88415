//! Decoding a CQE64 the way a driver reads it back.

use ferrodat_abi::mlx5::{CQE_SE_MASK, Cqe64, ErrCqe, cqe_opcode};
use zerocopy::FromBytes;

/// A completion read back from a CQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wc {
    pub opcode: u8,
    pub syndrome: Option<u8>,
    pub wqe_counter: u16,
    pub byte_cnt: u32,
    pub qpn: u32,
    pub wqe_opcode: u8,
    pub imm: u32,
    pub srqn_uidx: u32,
    pub solicited: bool,
}

/// The completion in a software-owned 64-byte CQE.
pub fn decode_cqe(bytes: &[u8; 64]) -> Wc {
    let op_own = bytes[63];
    let op = op_own >> 4;
    if op == cqe_opcode::REQ_ERR || op == cqe_opcode::RESP_ERR {
        let e = ErrCqe::read_from_bytes(bytes).expect("64 bytes");
        Wc {
            opcode: op,
            syndrome: Some(e.syndrome),
            wqe_counter: e.wqe_counter.get(),
            byte_cnt: 0,
            qpn: e.s_wqe_opcode_qpn.get() & 0xff_ffff,
            wqe_opcode: (e.s_wqe_opcode_qpn.get() >> 24) as u8,
            imm: 0,
            srqn_uidx: e.srqn.get() & 0xff_ffff,
            solicited: false,
        }
    } else {
        let c = Cqe64::read_from_bytes(bytes).expect("64 bytes");
        Wc {
            opcode: op,
            syndrome: None,
            wqe_counter: c.wqe_counter.get(),
            byte_cnt: c.byte_cnt.get(),
            qpn: c.sop_drop_qpn.get() & 0xff_ffff,
            wqe_opcode: (c.sop_drop_qpn.get() >> 24) as u8,
            imm: c.imm_inval_pkey.get(),
            srqn_uidx: c.srqn_uidx.get() & 0xff_ffff,
            solicited: op_own & CQE_SE_MASK != 0,
        }
    }
}
