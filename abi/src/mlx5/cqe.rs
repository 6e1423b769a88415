//! Completion queue entries (`infiniband/mlx5dv.h`), big-endian, with their opcodes and
//! error syndromes.

use crate::layout::layout;
use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `MLX5_CQE_*` opcodes: the high nibble of [`Cqe64::op_own`].
pub mod cqe_opcode {
    /// `MLX5_CQE_REQ`: requester (send queue) completion.
    pub const REQ: u8 = 0;
    /// `MLX5_CQE_RESP_WR_IMM`: responder, RDMA WRITE with immediate.
    pub const RESP_WR_IMM: u8 = 1;
    /// `MLX5_CQE_RESP_SEND`: responder, SEND.
    pub const RESP_SEND: u8 = 2;
    /// `MLX5_CQE_RESP_SEND_IMM`: responder, SEND with immediate.
    pub const RESP_SEND_IMM: u8 = 3;
    /// `MLX5_CQE_RESP_SEND_INV`: responder, SEND with invalidate.
    pub const RESP_SEND_INV: u8 = 4;
    /// `MLX5_CQE_RESIZE_CQ`: marks the switch to the resized buffer.
    pub const RESIZE_CQ: u8 = 5;
    /// `MLX5_CQE_NO_PACKET`.
    pub const NO_PACKET: u8 = 6;
    /// `MLX5_CQE_SIG_ERR`: signature error.
    pub const SIG_ERR: u8 = 12;
    /// `MLX5_CQE_REQ_ERR`: requester error; read the entry as an [`super::ErrCqe`].
    pub const REQ_ERR: u8 = 13;
    /// `MLX5_CQE_RESP_ERR`: responder error; read the entry as an [`super::ErrCqe`].
    pub const RESP_ERR: u8 = 14;
    /// `MLX5_CQE_INVALID`: never written by the device; software initialises entries to it.
    pub const INVALID: u8 = 15;
}

/// `MLX5_CQE_OWNER_MASK`: the ownership bit of [`Cqe64::op_own`].
pub const CQE_OWNER_MASK: u8 = 1;
/// Shift of the opcode in [`Cqe64::op_own`] (`mlx5dv_get_cqe_opcode`: `op_own >> 4`).
pub const CQE_OPCODE_SHIFT: u32 = 4;
/// Solicited-event bit of [`Cqe64::op_own`] (`mlx5dv_get_cqe_se`: bit 1).
pub const CQE_SE_MASK: u8 = 1 << 1;
/// Shift of the 2-bit CQE format in [`Cqe64::op_own`] (`mlx5dv_get_cqe_format`: bits 3..2;
/// format 3 = compressed).
pub const CQE_FORMAT_SHIFT: u32 = 2;
/// `MLX5_INLINE_SCATTER_32`: `op_own` bit: up to 32 received bytes are in the CQE itself
/// (bytes 0..32), not in the receive buffer.
pub const INLINE_SCATTER_32: u8 = 0x4;
/// `MLX5_INLINE_SCATTER_64`: `op_own` bit: up to 64 received bytes are in the CQE (128-byte
/// CQEs: the first half).
pub const INLINE_SCATTER_64: u8 = 0x8;

/// `MLX5_CQE_SYNDROME_*`: [`ErrCqe::syndrome`].
pub mod cqe_syndrome {
    /// `MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR`.
    pub const LOCAL_LENGTH_ERR: u8 = 0x01;
    /// `MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR`.
    pub const LOCAL_QP_OP_ERR: u8 = 0x02;
    /// `MLX5_CQE_SYNDROME_LOCAL_PROT_ERR`.
    pub const LOCAL_PROT_ERR: u8 = 0x04;
    /// `MLX5_CQE_SYNDROME_WR_FLUSH_ERR`: flushed (QP in error).
    pub const WR_FLUSH_ERR: u8 = 0x05;
    /// `MLX5_CQE_SYNDROME_MW_BIND_ERR`.
    pub const MW_BIND_ERR: u8 = 0x06;
    /// `MLX5_CQE_SYNDROME_BAD_RESP_ERR`.
    pub const BAD_RESP_ERR: u8 = 0x10;
    /// `MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR`.
    pub const LOCAL_ACCESS_ERR: u8 = 0x11;
    /// `MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR`.
    pub const REMOTE_INVAL_REQ_ERR: u8 = 0x12;
    /// `MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR`.
    pub const REMOTE_ACCESS_ERR: u8 = 0x13;
    /// `MLX5_CQE_SYNDROME_REMOTE_OP_ERR`.
    pub const REMOTE_OP_ERR: u8 = 0x14;
    /// `MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR`.
    pub const TRANSPORT_RETRY_EXC_ERR: u8 = 0x15;
    /// `MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR`.
    pub const RNR_RETRY_EXC_ERR: u8 = 0x16;
    /// `MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR`.
    pub const REMOTE_ABORTED_ERR: u8 = 0x22;
}

/// `MLX5_CQE_VENDOR_SYNDROME_*`: [`ErrCqe::vendor_err_synd`].
pub mod cqe_vendor_syndrome {
    /// `MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT`: on-demand-paging page fault.
    pub const ODP_PFAULT: u8 = 0x93;
}

/// `struct mlx5_cqe64`: a completion (64 bytes; the second half of a 128-byte CQE).
///
/// Bytes 0..32 are a union in C; this is its first (normal) member, an anonymous struct
/// whose fields C reaches as `cqe.wqe_id` etc. The other members (`struct mlx5_tm_cqe
/// tm_cqe`, `struct ibv_tmh tmh`) are tag-matching views not used here; with
/// [`INLINE_SCATTER_32`] the bytes hold received data.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct Cqe64 {
    /// Reserved.
    pub rsvd0: [u8; 2],
    /// WQE id (striding RQ).
    pub wqe_id: U16,
    /// Reserved.
    pub rsvd4: [u8; 13],
    /// Bits 6..0: path bits of the destination LID (IB).
    pub ml_path: u8,
    /// Reserved (C name; it sits at byte 18).
    pub rsvd20: [u8; 4],
    /// Source LID (IB).
    pub slid: U16,
    /// Source QP bits 23..0, SL bits 27..24, GRH present bits 29..28 (responder).
    pub flags_rqpn: U32,
    /// Header-data-split / IP extension bits (Ethernet).
    pub hds_ip_ext: u8,
    /// L4 header type and L3/L4 checksum bits (Ethernet).
    pub l4_hdr_type_etc: u8,
    /// VLAN tag (Ethernet).
    pub vlan_info: U16,
    /// SRQ number bits 23..0, or the QP's user index with CQE version 1.
    pub srqn_uidx: U32,
    /// Immediate data (raw, network order), invalidated rkey, or pkey index (low 16 bits).
    pub imm_inval_pkey: U32,
    /// Application id (tag matching / striding RQ).
    pub app: u8,
    /// Application opcode.
    pub app_op: u8,
    /// Application info.
    pub app_info: U16,
    /// Responder: bytes received; requester: bytes read by RDMA READ (8 for atomics).
    pub byte_cnt: U32,
    /// Completion timestamp (HCA core clock, or real time).
    pub timestamp: U64,
    /// QP number bits 23..0; in requester CQEs bits 31..24 are the WQE's [`super::opcode`].
    pub sop_drop_qpn: U32,
    /// Requester: the completed WQE's index (from its ctrl segment); responder: the RQ
    /// counter of the consumed WQE.
    pub wqe_counter: U16,
    /// CQE signature.
    pub signature: u8,
    /// Opcode bits 7..4 ([`cqe_opcode`]), format / inline scatter bits 3..2, solicited
    /// bit 1, owner bit 0. Written last by the device.
    pub op_own: u8,
}
layout!(Cqe64, size = 64,
    rsvd0 @ 0, wqe_id @ 2, rsvd4 @ 4, ml_path @ 17, rsvd20 @ 18, slid @ 22, flags_rqpn @ 24,
    hds_ip_ext @ 28, l4_hdr_type_etc @ 29, vlan_info @ 30, srqn_uidx @ 32,
    imm_inval_pkey @ 36, app @ 40, app_op @ 41, app_info @ 42, byte_cnt @ 44,
    timestamp @ 48, sop_drop_qpn @ 56, wqe_counter @ 60, signature @ 62, op_own @ 63);

/// `struct mlx5_err_cqe`: the same 64 bytes when the opcode is [`cqe_opcode::REQ_ERR`] or
/// [`cqe_opcode::RESP_ERR`]. (The header declares host `uint32_t`/`uint16_t` fields; the
/// device writes them big-endian and rdma-core byte-swaps them.)
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ErrCqe {
    /// Reserved.
    pub rsvd0: [u8; 32],
    /// SRQ number bits 23..0 (or the user index with CQE version 1).
    pub srqn: U32,
    /// Reserved.
    pub rsvd1: [u8; 18],
    /// Vendor syndrome ([`cqe_vendor_syndrome`]).
    pub vendor_err_synd: u8,
    /// Error syndrome ([`cqe_syndrome`]).
    pub syndrome: u8,
    /// WQE opcode bits 31..24 and QP number bits 23..0.
    pub s_wqe_opcode_qpn: U32,
    /// Index of the failed WQE (as in [`Cqe64::wqe_counter`]).
    pub wqe_counter: U16,
    /// CQE signature.
    pub signature: u8,
    /// As [`Cqe64::op_own`].
    pub op_own: u8,
}
layout!(ErrCqe, size = 64,
    rsvd0 @ 0, srqn @ 32, rsvd1 @ 36, vendor_err_synd @ 54, syndrome @ 55,
    s_wqe_opcode_qpn @ 56, wqe_counter @ 60, signature @ 62, op_own @ 63);
