//! Work queue entry segments (`infiniband/mlx5dv.h`), big-endian, and the send opcodes.

use crate::layout::layout;
use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `MLX5_SEND_WQE_BB`: bytes per send WQE basic block (WQEBB), the unit of the SQ counter.
pub const SEND_WQE_BB: usize = 64;
/// `MLX5_SEND_WQE_SHIFT`: log2 of [`SEND_WQE_BB`].
pub const SEND_WQE_SHIFT: u32 = 6;
/// Bytes per "ds" unit counted in [`WqeCtrlSeg::qpn_ds`] (kernel `MLX5_SEND_WQE_DS` in
/// `linux/mlx5/qp.h`; not in the uapi headers). Every segment is a multiple of it.
pub const SEND_WQE_DS: usize = 16;
/// `MLX5_INLINE_SEG`: flag in [`WqeInlDataSeg::byte_count`] marking inline data.
pub const INLINE_SEG: u32 = 0x8000_0000;
/// `MLX5_INVALID_LKEY`: lkey of the data segment that ends a short receive WQE.
pub const INVALID_LKEY: u32 = 0x100;

/// `MLX5_OPCODE_*`: the send opcode, low byte of [`WqeCtrlSeg::opmod_idx_opcode`] (and bits
/// 31..24 of `Cqe64::sop_drop_qpn` in requester CQEs).
pub mod opcode {
    /// `MLX5_OPCODE_NOP`.
    pub const NOP: u8 = 0x00;
    /// `MLX5_OPCODE_SEND_INVAL`: send with invalidate (rkey in `imm`).
    pub const SEND_INVAL: u8 = 0x01;
    /// `MLX5_OPCODE_RDMA_WRITE`.
    pub const RDMA_WRITE: u8 = 0x08;
    /// `MLX5_OPCODE_RDMA_WRITE_IMM`.
    pub const RDMA_WRITE_IMM: u8 = 0x09;
    /// `MLX5_OPCODE_SEND`.
    pub const SEND: u8 = 0x0a;
    /// `MLX5_OPCODE_SEND_IMM`.
    pub const SEND_IMM: u8 = 0x0b;
    /// `MLX5_OPCODE_TSO`.
    pub const TSO: u8 = 0x0e;
    /// `MLX5_OPCODE_RDMA_READ`.
    pub const RDMA_READ: u8 = 0x10;
    /// `MLX5_OPCODE_ATOMIC_CS`: compare and swap.
    pub const ATOMIC_CS: u8 = 0x11;
    /// `MLX5_OPCODE_ATOMIC_FA`: fetch and add.
    pub const ATOMIC_FA: u8 = 0x12;
    /// `MLX5_OPCODE_ATOMIC_MASKED_CS`.
    pub const ATOMIC_MASKED_CS: u8 = 0x14;
    /// `MLX5_OPCODE_ATOMIC_MASKED_FA`.
    pub const ATOMIC_MASKED_FA: u8 = 0x15;
    /// `MLX5_OPCODE_FMR`.
    pub const FMR: u8 = 0x19;
    /// `MLX5_OPCODE_LOCAL_INVAL`.
    pub const LOCAL_INVAL: u8 = 0x1b;
    /// `MLX5_OPCODE_CONFIG_CMD`.
    pub const CONFIG_CMD: u8 = 0x1f;
    /// `MLX5_OPCODE_SET_PSV`.
    pub const SET_PSV: u8 = 0x20;
    /// `MLX5_OPCODE_UMR`: user memory registration (also bind MW).
    pub const UMR: u8 = 0x25;
    /// `MLX5_OPCODE_TAG_MATCHING`.
    pub const TAG_MATCHING: u8 = 0x28;
    /// `MLX5_OPCODE_FLOW_TBL_ACCESS`.
    pub const FLOW_TBL_ACCESS: u8 = 0x2c;
    /// `MLX5_OPCODE_MMO`: memory-to-memory offload.
    pub const MMO: u8 = 0x2f;
}

/// `MLX5_WQE_CTRL_*`: bits of [`WqeCtrlSeg::fm_ce_se`].
pub mod wqe_ctrl {
    /// `MLX5_WQE_CTRL_CQ_UPDATE`: generate a CQE (signaled WQE).
    pub const CQ_UPDATE: u8 = 2 << 2;
    /// `MLX5_WQE_CTRL_SOLICITED`: set the solicited-event bit.
    pub const SOLICITED: u8 = 1 << 1;
    /// `MLX5_WQE_CTRL_FENCE`: wait for earlier RDMA READs and atomics (fence mode 4).
    pub const FENCE: u8 = 4 << 5;
    /// `MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE`: small fence (fence mode 1).
    pub const INITIATOR_SMALL_FENCE: u8 = 1 << 5;
}

/// `struct mlx5_wqe_ctrl_seg` (packed, 16 bytes): first segment of every send WQE.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct WqeCtrlSeg {
    /// `opmod << 24 | (wqe_index & 0xffff) << 8 | opcode` ([`opcode`]); wqe_index is the SQ
    /// counter (WQEBBs) at this WQE's first block.
    pub opmod_idx_opcode: U32,
    /// `qpn << 8 | ds`: QP number and the WQE's size in 16-byte units (6 bits).
    pub qpn_ds: U32,
    /// WQE signature (XOR over the WQE) with `qp_flag::SIGNATURE`, else 0.
    pub signature: u8,
    /// DCI stream channel id (DCI QPs), else 0.
    pub dci_stream_channel_id: U16,
    /// [`wqe_ctrl`] bits: fence mode, completion (CE), solicited event (SE).
    pub fm_ce_se: u8,
    /// Immediate data (as given by the user, already network order) for *_IMM, the rkey to
    /// invalidate for SEND_INVAL, or the mkey for UMR.
    pub imm: U32,
}
layout!(WqeCtrlSeg, size = 16,
    opmod_idx_opcode @ 0, qpn_ds @ 4, signature @ 8, dci_stream_channel_id @ 9,
    fm_ce_se @ 11, imm @ 12);

/// `struct mlx5_wqe_raddr_seg`: remote address of RDMA and atomic WQEs, after the ctrl.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct WqeRaddrSeg {
    /// Remote virtual address.
    pub raddr: U64,
    /// Remote key.
    pub rkey: U32,
    /// Reserved.
    pub reserved: U32,
}
layout!(WqeRaddrSeg, size = 16, raddr @ 0, rkey @ 8, reserved @ 12);

/// `struct mlx5_wqe_atomic_seg`: operands of an atomic WQE, after the raddr segment.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct WqeAtomicSeg {
    /// Swap value (compare and swap) or addend (fetch and add).
    pub swap_add: U64,
    /// Compare value (compare and swap).
    pub compare: U64,
}
layout!(WqeAtomicSeg, size = 16, swap_add @ 0, compare @ 8);

/// `struct mlx5_wqe_data_seg`: one scatter/gather entry, in send and receive WQEs.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct WqeDataSeg {
    /// Length in bytes (0 in a receive terminator; rdma-core never posts a zero-length
    /// send segment).
    pub byte_count: U32,
    /// Local key ([`INVALID_LKEY`] in a receive terminator).
    pub lkey: U32,
    /// Local virtual address.
    pub addr: U64,
}
layout!(WqeDataSeg, size = 16, byte_count @ 0, lkey @ 4, addr @ 8);

/// `struct mlx5_wqe_inl_data_seg`: header of inline send data; the data follows directly
/// and the block is padded to 16 bytes. (The header declares a host `uint32_t`; rdma-core
/// stores it big-endian.)
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct WqeInlDataSeg {
    /// `len | INLINE_SEG`.
    pub byte_count: U32,
}
layout!(WqeInlDataSeg, size = 4, byte_count @ 0);

/// `struct mlx5_wqe_srq_next_seg`: first segment of each SRQ WQE, linking the free list.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct WqeSrqNextSeg {
    /// Reserved.
    pub rsvd0: [u8; 2],
    /// Index of the next WQE in the SRQ free list.
    pub next_wqe_index: U16,
    /// WQE signature (with `srq_flag::SIGNATURE`).
    pub signature: u8,
    /// Reserved.
    pub rsvd1: [u8; 11],
}
layout!(WqeSrqNextSeg, size = 16, rsvd0 @ 0, next_wqe_index @ 2, signature @ 4, rsvd1 @ 5);
