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

// ---------------------------------------------------------------------------------------
// UMR: binding a memory window

/// `MLX5_WQE_UMR_CTRL_FLAG_*`: bits of [`WqeUmrCtrlSeg::flags`].
pub mod umr_ctrl_flag {
    /// `MLX5_WQE_UMR_CTRL_FLAG_INLINE`: the translation (KLM) follows inline in the WQE.
    pub const INLINE: u8 = 1 << 7;
    /// `MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE`: fail unless the mkey is free (type 2 bind).
    pub const CHECK_FREE: u8 = 1 << 5;
    /// `MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET`: `translation_offset` is valid.
    pub const TRANSLATION_OFFSET: u8 = 1 << 4;
    /// `MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN`: fail unless the mkey is bound to this QP (type 2
    /// invalidation).
    pub const CHECK_QPN: u8 = 1 << 3;
}

/// `MLX5_WQE_UMR_CTRL_MKEY_MASK_*`: which [`WqeMkeyContextSeg`] fields a UMR changes
/// ([`WqeUmrCtrlSeg::mkey_mask`]).
pub mod mkey_mask {
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN`.
    pub const LEN: u64 = 1 << 0;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR`.
    pub const START_ADDR: u64 = 1 << 6;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_SIG_ERR`.
    pub const SIG_ERR: u64 = 1 << 9;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_BSF_ENABLE`.
    pub const BSF_ENABLE: u64 = 1 << 12;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY`: the key's variant byte.
    pub const MKEY: u64 = 1 << 13;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN`.
    pub const QPN: u64 = 1 << 14;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE`.
    pub const ACCESS_LOCAL_WRITE: u64 = 1 << 18;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ`.
    pub const ACCESS_REMOTE_READ: u64 = 1 << 19;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE`.
    pub const ACCESS_REMOTE_WRITE: u64 = 1 << 20;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC`.
    pub const ACCESS_ATOMIC: u64 = 1 << 21;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE`.
    pub const FREE: u64 = 1 << 29;
}

/// `struct mlx5_wqe_umr_ctrl_seg` (48 bytes): after the control segment of a UMR WQE.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct WqeUmrCtrlSeg {
    /// [`umr_ctrl_flag`] bits.
    pub flags: u8,
    /// Reserved.
    pub rsvd0: [u8; 3],
    /// Size of the inline translation: rdma-core's `get_klm_octo`, the KLM count rounded up
    /// to 8 and halved (4 for one KLM, 0 for none).
    pub klm_octowords: U16,
    /// Translation offset (union with `bsf_octowords`).
    pub translation_offset: U16,
    /// [`mkey_mask`] bits.
    pub mkey_mask: U64,
    /// Reserved.
    pub rsvd1: [u8; 32],
}
layout!(WqeUmrCtrlSeg, size = 48,
    flags @ 0, rsvd0 @ 1, klm_octowords @ 4, translation_offset @ 6, mkey_mask @ 8, rsvd1 @ 16);

/// `MLX5_WQE_MKEY_CONTEXT_FREE`: [`WqeMkeyContextSeg::free`] for an unbind.
pub const MKEY_CONTEXT_FREE: u8 = 1 << 6;

/// `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_*`: bits of [`WqeMkeyContextSeg::access_flags`].
pub mod mkey_access {
    /// `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC`.
    pub const ATOMIC: u8 = 1 << 6;
    /// `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE`.
    pub const REMOTE_WRITE: u8 = 1 << 5;
    /// `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ`.
    pub const REMOTE_READ: u8 = 1 << 4;
    /// `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE`.
    pub const LOCAL_WRITE: u8 = 1 << 3;
    /// `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_READ`.
    pub const LOCAL_READ: u8 = 1 << 2;
}

/// `struct mlx5_wqe_mkey_context_seg` (64 bytes): the new state of the mkey a UMR changes,
/// after the [`WqeUmrCtrlSeg`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct WqeMkeyContextSeg {
    /// [`MKEY_CONTEXT_FREE`] to unbind, else 0.
    pub free: u8,
    /// Reserved.
    pub reserved1: u8,
    /// [`mkey_access`] bits.
    pub access_flags: u8,
    /// Reserved (signature flags).
    pub sf: u8,
    /// `qpn << 8 | variant`: the new key's variant byte; the QPN is 0xffffff for type 1.
    pub qpn_mkey: U32,
    /// Reserved.
    pub reserved2: U32,
    /// Flags and PD (unused by a bind).
    pub flags_pd: U32,
    /// First address the key covers.
    pub start_addr: U64,
    /// Bytes it covers.
    pub len: U64,
    /// Signature BSF size.
    pub bsf_octword_size: U32,
    /// Reserved.
    pub reserved3: [U32; 4],
    /// Translation size.
    pub translations_octword_size: U32,
    /// Reserved.
    pub reserved4: [u8; 3],
    /// log2 of the page size.
    pub log_page_size: u8,
    /// Reserved.
    pub reserved: U32,
}
layout!(WqeMkeyContextSeg, size = 64,
    free @ 0, reserved1 @ 1, access_flags @ 2, sf @ 3, qpn_mkey @ 4, reserved2 @ 8,
    flags_pd @ 12, start_addr @ 16, len @ 24, bsf_octword_size @ 32, reserved3 @ 36,
    translations_octword_size @ 52, reserved4 @ 56, log_page_size @ 59, reserved @ 60);

/// `struct mlx5_wqe_umr_klm_seg` (16 bytes): one indirect translation entry — `byte_count`
/// bytes at `address` under `mkey`. A bind WQE carries one, padded to 64 bytes.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct WqeUmrKlmSeg {
    /// Bytes (at most 2 GiB).
    pub byte_count: U32,
    /// The memory region's key.
    pub mkey: U32,
    /// Start address under that key.
    pub address: U64,
}
layout!(WqeUmrKlmSeg, size = 16, byte_count @ 0, mkey @ 4, address @ 8);
