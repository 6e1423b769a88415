//! UAR mapping (mmap offset encoding, page layout), doorbell records and the CQ arm word.
//!
//! Several values here are not in the uapi headers (the kernel's `mlx5_ib.h` and
//! rdma-core's `providers/mlx5/mlx5.h` define them); those are marked so and are checked by
//! the layout test only where a header offers something to compare with.

// ---------------------------------------------------------------------------------------
// mmap offsets

/// `enum mlx5_ib_mmap_cmd`: the command in an mmap offset on the uverbs fd.
pub mod mmap_cmd {
    /// `MLX5_IB_MMAP_REGULAR_PAGE` (= `MLX5_MMAP_GET_REGULAR_PAGES_CMD`): static UAR system
    /// page `index` (write-combining where possible).
    pub const REGULAR_PAGE: u64 = 0;
    /// `MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES`: obsolete, the kernel answers ENOSYS.
    pub const GET_CONTIGUOUS_PAGES: u64 = 1;
    /// `MLX5_IB_MMAP_WC_PAGE`: static UAR page `index`, write-combining.
    pub const WC_PAGE: u64 = 2;
    /// `MLX5_IB_MMAP_NC_PAGE` (= `MLX5_MMAP_GET_NC_PAGES_CMD`): static UAR page `index`,
    /// non-cached.
    pub const NC_PAGE: u64 = 3;
    /// `MLX5_IB_MMAP_CORE_CLOCK`: the read-only HCA core clock page.
    pub const CORE_CLOCK: u64 = 5;
    /// `MLX5_IB_MMAP_ALLOC_WC`: legacy dynamic UAR allocation (index bits 8..15 go to
    /// offset bits 16..23).
    pub const ALLOC_WC: u64 = 6;
    /// `MLX5_IB_MMAP_CLOCK_INFO`: the [`ClockInfo`](crate::mlx5::ClockInfo) page; index = version.
    pub const CLOCK_INFO: u64 = 7;
    /// `MLX5_IB_MMAP_DEVICE_MEM`: device memory.
    pub const DEVICE_MEM: u64 = 8;
}

/// Bit position of the command in the mmap page offset (kernel `MLX5_IB_MMAP_CMD_SHIFT`;
/// not in the uapi headers).
pub const MMAP_CMD_SHIFT: u32 = 8;
/// Mask of the command after the shift (kernel `MLX5_IB_MMAP_CMD_MASK`; not in the uapi
/// headers).
pub const MMAP_CMD_MASK: u64 = 0xff;
/// Mask of the index in the page offset: the bits below [`MMAP_CMD_SHIFT`].
pub const MMAP_INDEX_MASK: u64 = (1 << MMAP_CMD_SHIFT) - 1;

/// The byte offset to pass to `mmap(.., page_size, .., uverbs_fd, offset)` for `cmd`
/// ([`mmap_cmd`]) and `index` (< 256): `((cmd << 8) | index) * page_size`, `page_size` being
/// the system page size. The kernel wants a length of exactly one system page.
pub const fn mmap_offset(cmd: u64, index: u64, page_size: u64) -> u64 {
    ((cmd << MMAP_CMD_SHIFT) | index) * page_size
}

// ---------------------------------------------------------------------------------------
// UAR page layout

/// Size of one UAR (`MLX5_ADAPTER_PAGE_SIZE` in rdma-core and the kernel; not in the uapi
/// headers). A system page holds `num_uars_per_page` of them.
pub const ADAPTER_PAGE_SIZE: usize = 4096;
/// `MLX5_CQ_DOORBELL`: offset in a UAR of the CQ arm doorbell (a 64-bit big-endian store of
/// [`cq_arm_doorbell`]).
pub const CQ_DOORBELL: usize = 0x20;
/// Offset in a UAR of bfreg 0; bfreg `k` is at `BF_OFFSET + k * bf_reg_size`
/// (`MLX5_BF_OFFSET` in the kernel and rdma-core; not in the uapi headers).
pub const BF_OFFSET: usize = 0x800;
/// bfregs per UAR in the numbering of `tot_bfregs` and `CreateQpResp::bfreg_index`
/// (kernel `MLX5_BFREGS_PER_UAR`; not in the uapi headers). k = 0, 1 are for user space.
pub const BFREGS_PER_UAR: u32 = 4;

// ---------------------------------------------------------------------------------------
// Doorbell records: two big-endian u32 at the `db_addr` of CREATE_QP / CREATE_CQ.

/// `MLX5_RCV_DBR`: QP doorbell record index of the RQ producer counter (WQEs, mod 2^16).
pub const RCV_DBR: usize = 0;
/// `MLX5_SND_DBR`: QP doorbell record index of the SQ producer counter (WQEBBs, mod 2^16).
pub const SND_DBR: usize = 1;
/// CQ doorbell record index of the consumer index, 24 bits (rdma-core `MLX5_CQ_SET_CI`;
/// not in the uapi headers).
pub const CQ_SET_CI: usize = 0;
/// CQ doorbell record index of the last arm word (rdma-core `MLX5_CQ_ARM_DB`; not in the
/// uapi headers).
pub const CQ_ARM_DB: usize = 1;

// ---------------------------------------------------------------------------------------
// CQ arming

/// `MLX5_CQ_DB_REQ_NOT_SOL`: arm command "event on the next solicited CQE".
pub const CQ_DB_REQ_NOT_SOL: u32 = 1 << 24;
/// `MLX5_CQ_DB_REQ_NOT`: arm command "event on the next CQE".
pub const CQ_DB_REQ_NOT: u32 = 0;
/// Position of the 2-bit arm sequence number in the arm word (rdma-core writes `sn << 28`;
/// not in the uapi headers).
pub const CQ_ARM_SN_SHIFT: u32 = 28;
/// Mask of the arm sequence number (the count of events consumed, mod 4).
pub const CQ_ARM_SN_MASK: u32 = 0x3;
/// Mask of the consumer index in the arm word and in `dbrec[CQ_SET_CI]`.
pub const CQ_CI_MASK: u32 = 0xff_ffff;

/// The arm word `sn << 28 | cmd | ci` (host order): written big-endian to
/// `dbrec[CQ_ARM_DB]` and as the high half of [`cq_arm_doorbell`]. `cmd` is
/// [`CQ_DB_REQ_NOT`] or [`CQ_DB_REQ_NOT_SOL`]; `sn` and `ci` are masked.
pub const fn cq_arm_word(sn: u32, cmd: u32, ci: u32) -> u32 {
    (sn & CQ_ARM_SN_MASK) << CQ_ARM_SN_SHIFT | cmd | (ci & CQ_CI_MASK)
}

/// The 64-bit value stored big-endian at UAR + [`CQ_DOORBELL`]: arm word high, CQN low.
pub const fn cq_arm_doorbell(arm_word: u32, cqn: u32) -> u64 {
    (arm_word as u64) << 32 | cqn as u64
}
