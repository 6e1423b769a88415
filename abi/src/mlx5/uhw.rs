//! Provider data appended to uverbs commands and responses (`rdma/mlx5-abi.h`), host-endian.
//!
//! The driver request follows the core request directly; the driver response follows the
//! core response. Fields named `reserved*` must be zero.

use crate::layout::layout;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `MLX5_IB_UVERBS_ABI_VERSION`: the driver ABI (`uverbsN/abi_version` in sysfs, the netlink
/// chardev ABI). rdma-core's mlx5 accepts only this value.
pub const ABI_VERSION: u32 = 1;

// ---------------------------------------------------------------------------------------
// GET_CONTEXT

/// `struct mlx5_ib_alloc_ucontext_req_v2`: the GET_CONTEXT request data. rdma-core falls
/// back to the first 24 bytes (no `lib_caps`) and then to 16 (no `max_cqe_version`, i.e.
/// `struct mlx5_ib_alloc_ucontext_req` plus `flags`/`comp_mask`) when the kernel refuses it.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct AllocUcontextReqV2 {
    /// Static bfregs wanted (4 per UAR; rdma-core asks for 16 by default).
    pub total_num_bfregs: u32,
    /// How many of them are dedicated low-latency bfregs (rdma-core: 4).
    pub num_low_latency_bfregs: u32,
    /// [`alloc_uctx`] flags.
    pub flags: u32,
    /// Request comp_mask; no bits are defined, must be 0.
    pub comp_mask: u32,
    /// Highest CQE version the library understands (rdma-core: 1).
    pub max_cqe_version: u8,
    /// Reserved.
    pub reserved0: u8,
    /// Reserved.
    pub reserved1: u16,
    /// Reserved.
    pub reserved2: u32,
    /// [`lib_cap`] bits.
    pub lib_caps: u64,
}
layout!(AllocUcontextReqV2, size = 32,
    total_num_bfregs @ 0, num_low_latency_bfregs @ 4, flags @ 8, comp_mask @ 12,
    max_cqe_version @ 16, reserved0 @ 17, reserved1 @ 18, reserved2 @ 20, lib_caps @ 24);

/// `enum mlx5_ib_alloc_uctx_v2_flags`: [`AllocUcontextReqV2::flags`].
pub mod alloc_uctx {
    /// `MLX5_IB_ALLOC_UCTX_DEVX`: ask for a DEVX-capable context (needs the ioctl path).
    pub const DEVX: u32 = 1 << 0;
}

/// `enum mlx5_lib_caps`: [`AllocUcontextReqV2::lib_caps`].
pub mod lib_cap {
    /// `MLX5_LIB_CAP_4K_UAR`: the library handles 4 KB UARs inside larger system pages.
    pub const UAR_4K: u64 = 1 << 0;
    /// `MLX5_LIB_CAP_DYN_UAR`: the library can allocate UARs dynamically; a kernel that
    /// honours it may answer `tot_bfregs == 0` (no static UARs).
    pub const DYN_UAR: u64 = 1 << 1;
}

/// `struct mlx5_ib_alloc_ucontext_resp`: the GET_CONTEXT response data (72 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct AllocUcontextResp {
    /// Size of the QP number table (QPNs are looked up modulo this).
    pub qp_tab_size: u32,
    /// Bytes per bfreg in a UAR (two BlueFlame halves); 0 disables BlueFlame.
    pub bf_reg_size: u32,
    /// Static bfregs granted (4 per UAR); 0 = none, UARs must be allocated dynamically.
    pub tot_bfregs: u32,
    /// CPU cache line size; doorbell records are spaced by it (must not be 0).
    pub cache_line_size: u32,
    /// Largest send WQE in bytes.
    pub max_sq_desc_sz: u16,
    /// Largest receive WQE in bytes.
    pub max_rq_desc_sz: u16,
    /// Largest send queue, in WQEBBs.
    pub max_send_wqebb: u32,
    /// Largest receive queue, in WQEs.
    pub max_recv_wr: u32,
    /// Largest SRQ, in WQEs.
    pub max_srq_recv_wr: u32,
    /// Number of ports.
    pub num_ports: u16,
    /// [`flow_action_flags`] supported.
    pub flow_action_flags: u16,
    /// [`alloc_ucontext_resp_mask`]: which optional fields are valid.
    pub comp_mask: u32,
    /// Bytes of this response the kernel filled in.
    pub response_length: u32,
    /// CQE version in use: 0 (CQEs carry the QPN) or 1 (CQEs carry the QP's `uidx`).
    pub cqe_version: u8,
    /// [`user_cmds_supp_uhw`]: commands that carry driver data in their extended form.
    pub cmds_supp_uhw: u8,
    /// Minimum inline mode for Ethernet ([`user_inline_mode`], off by one: 0 = not given).
    pub eth_min_inline: u8,
    /// Bitmap of clock-info page versions, bit [`clock_info::V1`].
    pub clock_info_versions: u8,
    /// Offset of the HCA core clock within the CORE_CLOCK mmap page.
    pub hca_core_clock_offset: u64,
    /// log2 of the UAR size (0 with `num_uars_per_page` 0: one UAR per system page).
    pub log_uar_size: u32,
    /// UARs per system page.
    pub num_uars_per_page: u32,
    /// bfregs available for dynamic allocation.
    pub num_dyn_bfregs: u32,
    /// The mkey that fills dumped memory (valid with `DUMP_FILL_MKEY`).
    pub dump_fill_mkey: u32,
}
layout!(AllocUcontextResp, size = 72,
    qp_tab_size @ 0, bf_reg_size @ 4, tot_bfregs @ 8, cache_line_size @ 12,
    max_sq_desc_sz @ 16, max_rq_desc_sz @ 18, max_send_wqebb @ 20, max_recv_wr @ 24,
    max_srq_recv_wr @ 28, num_ports @ 32, flow_action_flags @ 34, comp_mask @ 36,
    response_length @ 40, cqe_version @ 44, cmds_supp_uhw @ 45, eth_min_inline @ 46,
    clock_info_versions @ 47, hca_core_clock_offset @ 48, log_uar_size @ 56,
    num_uars_per_page @ 60, num_dyn_bfregs @ 64, dump_fill_mkey @ 68);

/// `enum mlx5_ib_alloc_ucontext_resp_mask`: [`AllocUcontextResp::comp_mask`].
pub mod alloc_ucontext_resp_mask {
    /// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET`: `hca_core_clock_offset` is valid.
    pub const CORE_CLOCK_OFFSET: u32 = 1 << 0;
    /// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY`: `dump_fill_mkey` is valid.
    pub const DUMP_FILL_MKEY: u32 = 1 << 1;
    /// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE`: enhanced connection establishment supported.
    pub const ECE: u32 = 1 << 2;
    /// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_SQD2RTS`: SQD to RTS transition supported.
    pub const SQD2RTS: u32 = 1 << 3;
    /// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_REAL_TIME_TS`: CQE timestamps are real time.
    pub const REAL_TIME_TS: u32 = 1 << 4;
    /// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_MKEY_UPDATE_TAG`: mkey tag update supported.
    pub const MKEY_UPDATE_TAG: u32 = 1 << 5;
}

/// `enum mlx5_user_cmds_supp_uhw`: [`AllocUcontextResp::cmds_supp_uhw`].
pub mod user_cmds_supp_uhw {
    /// `MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE`: QUERY_DEVICE_EX carries a [`super::QueryDeviceResp`].
    pub const QUERY_DEVICE: u8 = 1 << 0;
    /// `MLX5_USER_CMDS_SUPP_UHW_CREATE_AH`: CREATE_AH carries driver data.
    pub const CREATE_AH: u8 = 1 << 1;
}

/// `enum mlx5_user_inline_mode`: [`AllocUcontextResp::eth_min_inline`] (firmware value + 1).
pub mod user_inline_mode {
    /// `MLX5_USER_INLINE_MODE_NA`: not reported.
    pub const NA: u8 = 0;
    /// `MLX5_USER_INLINE_MODE_NONE`: no headers need inlining.
    pub const NONE: u8 = 1;
    /// `MLX5_USER_INLINE_MODE_L2`: L2 headers must be inlined.
    pub const L2: u8 = 2;
    /// `MLX5_USER_INLINE_MODE_IP`: up to the IP header.
    pub const IP: u8 = 3;
    /// `MLX5_USER_INLINE_MODE_TCP_UDP`: up to the TCP/UDP header.
    pub const TCP_UDP: u8 = 4;
}

/// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_*`: [`AllocUcontextResp::flow_action_flags`].
pub mod flow_action_flags {
    /// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM`.
    pub const ESP_AES_GCM: u16 = 1 << 0;
    /// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_REQ_METADATA`.
    pub const ESP_AES_GCM_REQ_METADATA: u16 = 1 << 1;
    /// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_SPI_STEERING`.
    pub const ESP_AES_GCM_SPI_STEERING: u16 = 1 << 2;
    /// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_FULL_OFFLOAD`.
    pub const ESP_AES_GCM_FULL_OFFLOAD: u16 = 1 << 3;
    /// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_TX_IV_IS_ESN`.
    pub const ESP_AES_GCM_TX_IV_IS_ESN: u16 = 1 << 4;
}

/// `struct mlx5_ib_clock_info`: the read-only page mapped with [`super::mmap_cmd::CLOCK_INFO`]
/// (host-endian; the kernel updates it under a seqcount in `sign`).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ClockInfo {
    /// Sequence word; [`clock_info::KERNEL_UPDATING`] is set while the kernel writes.
    pub sign: u32,
    /// Reserved.
    pub resv: u32,
    /// Nanoseconds at `cycles`.
    pub nsec: u64,
    /// HCA core clock value at the last update.
    pub cycles: u64,
    /// Fractional nanoseconds carried over.
    pub frac: u64,
    /// Cycles-to-ns multiplier.
    pub mult: u32,
    /// Cycles-to-ns shift.
    pub shift: u32,
    /// Mask of the free-running counter.
    pub mask: u64,
    /// Update period, ns.
    pub overflow_period: u64,
}
layout!(ClockInfo, size = 56,
    sign @ 0, resv @ 4, nsec @ 8, cycles @ 16, frac @ 24, mult @ 32, shift @ 36,
    mask @ 40, overflow_period @ 48);

/// Clock-info page constants.
pub mod clock_info {
    /// `MLX5_IB_CLOCK_INFO_V1`: bit index in [`super::AllocUcontextResp::clock_info_versions`],
    /// and the mmap index of that version.
    pub const V1: u8 = 0;
    /// `MLX5_IB_CLOCK_INFO_KERNEL_UPDATING`: bit of [`super::ClockInfo::sign`].
    pub const KERNEL_UPDATING: u32 = 1;
}

// ---------------------------------------------------------------------------------------
// ALLOC_PD

/// `struct mlx5_ib_alloc_pd_resp`: the ALLOC_PD response data.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct AllocPdResp {
    /// The device PD number.
    pub pdn: u32,
}
layout!(AllocPdResp, size = 4, pdn @ 0);

// ---------------------------------------------------------------------------------------
// ALLOC_MW

/// `struct mlx5_ib_alloc_mw`: the ALLOC_MW request data. rdma-core never sends it (its
/// ALLOC_MW carries no driver data, and mlx5_ib then allocates one KLM's worth of
/// translation room); the kernel accepts it with all fields but `num_klms` zero.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct AllocMw {
    /// Must be 0.
    pub comp_mask: u32,
    /// KLM entries to reserve (0 means 1; rounded up to 4).
    pub num_klms: u8,
    /// Must be 0.
    pub reserved1: u8,
    /// Must be 0.
    pub reserved2: u16,
}
layout!(AllocMw, size = 8, comp_mask @ 0, num_klms @ 4, reserved1 @ 5, reserved2 @ 6);

// ---------------------------------------------------------------------------------------
// QUERY_DEVICE_EX

/// `struct mlx5_ib_tso_caps`: [`QueryDeviceResp::tso_caps`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct TsoCaps {
    /// Largest TSO payload in bytes.
    pub max_tso: u32,
    /// Bit `1 << ib_qp_type` per QP type that supports TSO.
    pub supported_qpts: u32,
}
layout!(TsoCaps, size = 8, max_tso @ 0, supported_qpts @ 4);

/// `struct mlx5_ib_rss_caps`: [`QueryDeviceResp::rss_caps`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct RssCaps {
    /// [`rx_hash_fields`] the device can hash on.
    pub rx_hash_fields_mask: u64,
    /// [`rx_hash_func`] supported.
    pub rx_hash_function: u8,
    /// Reserved.
    pub reserved: [u8; 7],
}
layout!(RssCaps, size = 16, rx_hash_fields_mask @ 0, rx_hash_function @ 8, reserved @ 9);

/// `enum mlx5_rx_hash_function_flags`: [`RssCaps::rx_hash_function`].
pub mod rx_hash_func {
    /// `MLX5_RX_HASH_FUNC_TOEPLITZ`.
    pub const TOEPLITZ: u8 = 1 << 0;
}

/// `enum mlx5_rx_hash_fields`: [`RssCaps::rx_hash_fields_mask`].
pub mod rx_hash_fields {
    /// `MLX5_RX_HASH_SRC_IPV4`.
    pub const SRC_IPV4: u64 = 1 << 0;
    /// `MLX5_RX_HASH_DST_IPV4`.
    pub const DST_IPV4: u64 = 1 << 1;
    /// `MLX5_RX_HASH_SRC_IPV6`.
    pub const SRC_IPV6: u64 = 1 << 2;
    /// `MLX5_RX_HASH_DST_IPV6`.
    pub const DST_IPV6: u64 = 1 << 3;
    /// `MLX5_RX_HASH_SRC_PORT_TCP`.
    pub const SRC_PORT_TCP: u64 = 1 << 4;
    /// `MLX5_RX_HASH_DST_PORT_TCP`.
    pub const DST_PORT_TCP: u64 = 1 << 5;
    /// `MLX5_RX_HASH_SRC_PORT_UDP`.
    pub const SRC_PORT_UDP: u64 = 1 << 6;
    /// `MLX5_RX_HASH_DST_PORT_UDP`.
    pub const DST_PORT_UDP: u64 = 1 << 7;
    /// `MLX5_RX_HASH_IPSEC_SPI`.
    pub const IPSEC_SPI: u64 = 1 << 8;
    /// `MLX5_RX_HASH_INNER`: hash on the inner (tunnelled) headers.
    pub const INNER: u64 = 1 << 31;
}

/// `struct mlx5_ib_cqe_comp_caps`: [`QueryDeviceResp::cqe_comp_caps`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CqeCompCaps {
    /// Most CQEs one compressed session can hold.
    pub max_num: u32,
    /// [`cqe_res_format`] bits supported.
    pub supported_format: u32,
}
layout!(CqeCompCaps, size = 8, max_num @ 0, supported_format @ 4);

/// `enum mlx5_ib_cqe_comp_res_format`: [`CqeCompCaps::supported_format`] and
/// [`CreateCq::cqe_comp_res_format`].
pub mod cqe_res_format {
    /// `MLX5_IB_CQE_RES_FORMAT_HASH`: mini-CQEs carry the RSS hash.
    pub const HASH: u8 = 1 << 0;
    /// `MLX5_IB_CQE_RES_FORMAT_CSUM`: mini-CQEs carry the checksum.
    pub const CSUM: u8 = 1 << 1;
    /// `MLX5_IB_CQE_RES_FORMAT_CSUM_STRIDX`: checksum and stride index.
    pub const CSUM_STRIDX: u8 = 1 << 2;
}

/// `struct mlx5_packet_pacing_caps`: [`QueryDeviceResp::packet_pacing_caps`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct PacketPacingCaps {
    /// Lowest rate limit, kbps.
    pub qp_rate_limit_min: u32,
    /// Highest rate limit, kbps.
    pub qp_rate_limit_max: u32,
    /// Bit `1 << ib_qp_type` per QP type that supports pacing.
    pub supported_qpts: u32,
    /// [`pp_cap`] bits.
    pub cap_flags: u8,
    /// Reserved.
    pub reserved: [u8; 3],
}
layout!(PacketPacingCaps, size = 16,
    qp_rate_limit_min @ 0, qp_rate_limit_max @ 4, supported_qpts @ 8, cap_flags @ 12,
    reserved @ 13);

/// `enum mlx5_ib_packet_pacing_cap_flags`: [`PacketPacingCaps::cap_flags`].
pub mod pp_cap {
    /// `MLX5_IB_PP_SUPPORT_BURST`.
    pub const SUPPORT_BURST: u8 = 1 << 0;
}

/// `enum mlx5_ib_mpw_caps`: [`QueryDeviceResp::mlx5_ib_support_multi_pkt_send_wqes`].
pub mod mpw_caps {
    /// `MPW_RESERVED`.
    pub const RESERVED: u32 = 1 << 0;
    /// `MLX5_IB_ALLOW_MPW`: multi-packet send WQEs allowed.
    pub const ALLOW_MPW: u32 = 1 << 1;
    /// `MLX5_IB_SUPPORT_EMPW`: enhanced multi-packet send WQEs supported.
    pub const SUPPORT_EMPW: u32 = 1 << 2;
}

/// `struct mlx5_ib_sw_parsing_caps`: [`QueryDeviceResp::sw_parsing_caps`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct SwParsingCaps {
    /// [`sw_parsing`] offloads.
    pub sw_parsing_offloads: u32,
    /// Bit `1 << ib_qp_type` per QP type that supports them.
    pub supported_qpts: u32,
}
layout!(SwParsingCaps, size = 8, sw_parsing_offloads @ 0, supported_qpts @ 4);

/// `enum mlx5_ib_sw_parsing_offloads`: [`SwParsingCaps::sw_parsing_offloads`].
pub mod sw_parsing {
    /// `MLX5_IB_SW_PARSING`.
    pub const SW_PARSING: u32 = 1 << 0;
    /// `MLX5_IB_SW_PARSING_CSUM`.
    pub const CSUM: u32 = 1 << 1;
    /// `MLX5_IB_SW_PARSING_LSO`.
    pub const LSO: u32 = 1 << 2;
}

/// `struct mlx5_ib_striding_rq_caps`: [`QueryDeviceResp::striding_rq_caps`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct StridingRqCaps {
    /// Smallest log2 stride size in bytes.
    pub min_single_stride_log_num_of_bytes: u32,
    /// Largest log2 stride size in bytes.
    pub max_single_stride_log_num_of_bytes: u32,
    /// Smallest log2 number of strides per WQE.
    pub min_single_wqe_log_num_of_strides: u32,
    /// Largest log2 number of strides per WQE.
    pub max_single_wqe_log_num_of_strides: u32,
    /// Bit `1 << ib_qp_type` per QP type that supports striding RQs.
    pub supported_qpts: u32,
    /// Reserved.
    pub reserved: u32,
}
layout!(StridingRqCaps, size = 24,
    min_single_stride_log_num_of_bytes @ 0, max_single_stride_log_num_of_bytes @ 4,
    min_single_wqe_log_num_of_strides @ 8, max_single_wqe_log_num_of_strides @ 12,
    supported_qpts @ 16, reserved @ 20);

/// `struct mlx5_ib_dci_streams_caps`: [`QueryDeviceResp::dci_streams_caps`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct DciStreamsCaps {
    /// Largest log2 number of concurrent DCI streams (C spelling kept).
    pub max_log_num_concurent: u8,
    /// Largest log2 number of errored DCI streams.
    pub max_log_num_errored: u8,
}
layout!(DciStreamsCaps, size = 2, max_log_num_concurent @ 0, max_log_num_errored @ 1);

/// `struct mlx5_ib_query_device_resp`: driver data after the QUERY_DEVICE_EX response, sent
/// only when [`user_cmds_supp_uhw::QUERY_DEVICE`] is set in GET_CONTEXT's response.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct QueryDeviceResp {
    /// No bits defined.
    pub comp_mask: u32,
    /// Bytes of this response the kernel filled in.
    pub response_length: u32,
    /// TSO capabilities.
    pub tso_caps: TsoCaps,
    /// RSS capabilities.
    pub rss_caps: RssCaps,
    /// CQE compression capabilities.
    pub cqe_comp_caps: CqeCompCaps,
    /// Packet pacing capabilities.
    pub packet_pacing_caps: PacketPacingCaps,
    /// [`mpw_caps`] bits.
    pub mlx5_ib_support_multi_pkt_send_wqes: u32,
    /// [`query_dev_resp_flags`] bits.
    pub flags: u32,
    /// Software parsing capabilities.
    pub sw_parsing_caps: SwParsingCaps,
    /// Striding RQ capabilities.
    pub striding_rq_caps: StridingRqCaps,
    /// [`tunneled_offloads`] bits.
    pub tunnel_offloads_caps: u32,
    /// DCI stream capabilities.
    pub dci_streams_caps: DciStreamsCaps,
    /// Reserved.
    pub reserved: u16,
}
layout!(QueryDeviceResp, size = 104,
    comp_mask @ 0, response_length @ 4, tso_caps @ 8, rss_caps @ 16, cqe_comp_caps @ 32,
    packet_pacing_caps @ 40, mlx5_ib_support_multi_pkt_send_wqes @ 56, flags @ 60,
    sw_parsing_caps @ 64, striding_rq_caps @ 72, tunnel_offloads_caps @ 96,
    dci_streams_caps @ 100, reserved @ 102);

/// `enum mlx5_ib_query_dev_resp_flags`: [`QueryDeviceResp::flags`].
pub mod query_dev_resp_flags {
    /// `MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_COMP`: 128-byte CQE compression supported.
    pub const CQE_128B_COMP: u32 = 1 << 0;
    /// `MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_PAD`: 128-byte CQE padding supported.
    pub const CQE_128B_PAD: u32 = 1 << 1;
    /// `MLX5_IB_QUERY_DEV_RESP_PACKET_BASED_CREDIT_MODE`.
    pub const PACKET_BASED_CREDIT_MODE: u32 = 1 << 2;
    /// `MLX5_IB_QUERY_DEV_RESP_FLAGS_SCAT2CQE_DCT`: scatter-to-CQE on DCT.
    pub const SCAT2CQE_DCT: u32 = 1 << 3;
}

/// `enum mlx5_ib_tunnel_offloads`: [`QueryDeviceResp::tunnel_offloads_caps`].
pub mod tunneled_offloads {
    /// `MLX5_IB_TUNNELED_OFFLOADS_VXLAN`.
    pub const VXLAN: u32 = 1 << 0;
    /// `MLX5_IB_TUNNELED_OFFLOADS_GRE`.
    pub const GRE: u32 = 1 << 1;
    /// `MLX5_IB_TUNNELED_OFFLOADS_GENEVE`.
    pub const GENEVE: u32 = 1 << 2;
    /// `MLX5_IB_TUNNELED_OFFLOADS_MPLS_GRE`.
    pub const MPLS_GRE: u32 = 1 << 3;
    /// `MLX5_IB_TUNNELED_OFFLOADS_MPLS_UDP`.
    pub const MPLS_UDP: u32 = 1 << 4;
}

// ---------------------------------------------------------------------------------------
// CREATE_CQ / RESIZE_CQ

/// `struct mlx5_ib_create_cq`: the CREATE_CQ request data.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateCq {
    /// User address of the CQE ring (`ncqe * cqe_size` bytes).
    pub buf_addr: u64,
    /// User address of the CQ doorbell record (2 × BE u32).
    pub db_addr: u64,
    /// CQE size in bytes: 64 or 128.
    pub cqe_size: u32,
    /// Non-zero: enable CQE compression.
    pub cqe_comp_en: u8,
    /// [`cqe_res_format`] of compressed CQEs.
    pub cqe_comp_res_format: u8,
    /// [`create_cq_flags`].
    pub flags: u16,
    /// UAR page of the CQ doorbell, with [`create_cq_flags::UAR_PAGE_INDEX`].
    pub uar_page_index: u16,
    /// Reserved.
    pub reserved0: u16,
    /// Reserved.
    pub reserved1: u32,
}
layout!(CreateCq, size = 32,
    buf_addr @ 0, db_addr @ 8, cqe_size @ 16, cqe_comp_en @ 20, cqe_comp_res_format @ 21,
    flags @ 22, uar_page_index @ 24, reserved0 @ 26, reserved1 @ 28);

/// `enum mlx5_ib_create_cq_flags`: [`CreateCq::flags`].
pub mod create_cq_flags {
    /// `MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD`: pad 64-byte CQEs to 128 bytes.
    pub const CQE_128B_PAD: u16 = 1 << 0;
    /// `MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX`: `uar_page_index` is valid.
    pub const UAR_PAGE_INDEX: u16 = 1 << 1;
    /// `MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS`: real-time CQE timestamps.
    pub const REAL_TIME_TS: u16 = 1 << 2;
}

/// `struct mlx5_ib_create_cq_resp`: the CREATE_CQ response data.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateCqResp {
    /// The device CQ number (the low 32 bits of the arm doorbell).
    pub cqn: u32,
    /// Reserved.
    pub reserved: u32,
}
layout!(CreateCqResp, size = 8, cqn @ 0, reserved @ 4);

/// `struct mlx5_ib_resize_cq`: the RESIZE_CQ request data.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ResizeCq {
    /// User address of the new CQE ring.
    pub buf_addr: u64,
    /// CQE size in bytes: 64 or 128.
    pub cqe_size: u16,
    /// Reserved.
    pub reserved0: u16,
    /// Reserved.
    pub reserved1: u32,
}
layout!(ResizeCq, size = 16, buf_addr @ 0, cqe_size @ 8, reserved0 @ 10, reserved1 @ 12);

// ---------------------------------------------------------------------------------------
// CREATE_SRQ

/// `struct mlx5_ib_create_srq`: the CREATE_SRQ request data.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateSrq {
    /// User address of the SRQ WQE ring.
    pub buf_addr: u64,
    /// User address of the SRQ doorbell record.
    pub db_addr: u64,
    /// [`srq_flag`] bits.
    pub flags: u32,
    /// Reserved (explicit padding).
    pub reserved0: u32,
    /// User index reported in CQEs with CQE version 1.
    pub uidx: u32,
    /// Reserved.
    pub reserved1: u32,
}
layout!(CreateSrq, size = 32,
    buf_addr @ 0, db_addr @ 8, flags @ 16, reserved0 @ 20, uidx @ 24, reserved1 @ 28);

/// `MLX5_SRQ_FLAG_*`: [`CreateSrq::flags`].
pub mod srq_flag {
    /// `MLX5_SRQ_FLAG_SIGNATURE`: WQEs carry a signature byte.
    pub const SIGNATURE: u32 = 1 << 0;
}

/// `struct mlx5_ib_create_srq_resp`: the CREATE_SRQ response data.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateSrqResp {
    /// The device SRQ number.
    pub srqn: u32,
    /// Reserved.
    pub reserved: u32,
}
layout!(CreateSrqResp, size = 8, srqn @ 0, reserved @ 4);

// ---------------------------------------------------------------------------------------
// CREATE_QP

/// `struct mlx5_ib_create_qp_dci_streams`: [`CreateQp::dci_streams`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateQpDciStreams {
    /// log2 concurrent DCI streams (C spelling kept).
    pub log_num_concurent: u8,
    /// log2 errored DCI streams.
    pub log_num_errored: u8,
}
layout!(CreateQpDciStreams, size = 2, log_num_concurent @ 0, log_num_errored @ 1);

/// `struct mlx5_ib_create_qp`: the CREATE_QP request data.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateQp {
    /// User address of the WQ buffer: RQ at offset 0, SQ right after it.
    pub buf_addr: u64,
    /// User address of the QP doorbell record ([`super::RCV_DBR`], [`super::SND_DBR`]).
    pub db_addr: u64,
    /// SQ size in 64-byte WQEBBs (power of two).
    pub sq_wqe_count: u32,
    /// RQ size in WQEs (power of two).
    pub rq_wqe_count: u32,
    /// log2 of the RQ stride in bytes.
    pub rq_wqe_shift: u32,
    /// [`qp_flag`] bits.
    pub flags: u32,
    /// User index reported in CQEs with CQE version 1.
    pub uidx: u32,
    /// bfreg wanted, with [`qp_flag::BFREG_INDEX`] (or UAR page with `UAR_PAGE_INDEX`).
    pub bfreg_index: u32,
    /// Union in C: `sq_buf_addr` (separate SQ buffer, raw packet QPs) or `access_key`
    /// (DCT access key).
    pub sq_buf_addr: u64,
    /// Enhanced connection establishment options.
    pub ece_options: u32,
    /// DCI stream sizes, with [`qp_flag::DCI_STREAM`].
    pub dci_streams: CreateQpDciStreams,
    /// Reserved.
    pub reserved: u16,
}
layout!(CreateQp, size = 56,
    buf_addr @ 0, db_addr @ 8, sq_wqe_count @ 16, rq_wqe_count @ 20, rq_wqe_shift @ 24,
    flags @ 28, uidx @ 32, bfreg_index @ 36, sq_buf_addr @ 40, ece_options @ 48,
    dci_streams @ 52, reserved @ 54);

/// `MLX5_QP_FLAG_*`: [`CreateQp::flags`].
pub mod qp_flag {
    /// `MLX5_QP_FLAG_SIGNATURE`: WQEs carry a signature byte.
    pub const SIGNATURE: u32 = 1 << 0;
    /// `MLX5_QP_FLAG_SCATTER_CQE`: small receives may be scattered into the CQE.
    pub const SCATTER_CQE: u32 = 1 << 1;
    /// `MLX5_QP_FLAG_TUNNEL_OFFLOADS`.
    pub const TUNNEL_OFFLOADS: u32 = 1 << 2;
    /// `MLX5_QP_FLAG_BFREG_INDEX`: `bfreg_index` names the bfreg to use.
    pub const BFREG_INDEX: u32 = 1 << 3;
    /// `MLX5_QP_FLAG_TYPE_DCT`.
    pub const TYPE_DCT: u32 = 1 << 4;
    /// `MLX5_QP_FLAG_TYPE_DCI`.
    pub const TYPE_DCI: u32 = 1 << 5;
    /// `MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_UC`.
    pub const TIR_ALLOW_SELF_LB_UC: u32 = 1 << 6;
    /// `MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_MC`.
    pub const TIR_ALLOW_SELF_LB_MC: u32 = 1 << 7;
    /// `MLX5_QP_FLAG_ALLOW_SCATTER_CQE`.
    pub const ALLOW_SCATTER_CQE: u32 = 1 << 8;
    /// `MLX5_QP_FLAG_PACKET_BASED_CREDIT_MODE`.
    pub const PACKET_BASED_CREDIT_MODE: u32 = 1 << 9;
    /// `MLX5_QP_FLAG_UAR_PAGE_INDEX`: `bfreg_index` is a dynamically allocated UAR page id.
    pub const UAR_PAGE_INDEX: u32 = 1 << 10;
    /// `MLX5_QP_FLAG_DCI_STREAM`: `dci_streams` is valid.
    pub const DCI_STREAM: u32 = 1 << 11;
}

/// `MLX5_WQ_FLAG_*`: flags of the (not mirrored) CREATE_WQ request.
pub mod wq_flag {
    /// `MLX5_WQ_FLAG_SIGNATURE`.
    pub const SIGNATURE: u32 = 1 << 0;
}

/// `struct mlx5_ib_create_qp_resp`: the CREATE_QP response data.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateQpResp {
    /// bfreg granted, in the 4-per-UAR numbering (`uar * 4 + k`, k in 0..4).
    pub bfreg_index: u32,
    /// Enhanced connection establishment options accepted.
    pub ece_options: u32,
    /// [`create_qp_resp_mask`]: which of the following fields are valid.
    pub comp_mask: u32,
    /// TIR number (raw packet QPs).
    pub tirn: u32,
    /// TIS number (raw packet QPs).
    pub tisn: u32,
    /// RQ number (raw packet QPs).
    pub rqn: u32,
    /// SQ number (raw packet QPs).
    pub sqn: u32,
    /// Reserved.
    pub reserved1: u32,
    /// ICM address of the TIR.
    pub tir_icm_addr: u64,
}
layout!(CreateQpResp, size = 40,
    bfreg_index @ 0, ece_options @ 4, comp_mask @ 8, tirn @ 12, tisn @ 16, rqn @ 20,
    sqn @ 24, reserved1 @ 28, tir_icm_addr @ 32);

/// `enum mlx5_ib_create_qp_resp_mask`: [`CreateQpResp::comp_mask`].
pub mod create_qp_resp_mask {
    /// `MLX5_IB_CREATE_QP_RESP_MASK_TIRN`.
    pub const TIRN: u32 = 1 << 0;
    /// `MLX5_IB_CREATE_QP_RESP_MASK_TISN`.
    pub const TISN: u32 = 1 << 1;
    /// `MLX5_IB_CREATE_QP_RESP_MASK_RQN`.
    pub const RQN: u32 = 1 << 2;
    /// `MLX5_IB_CREATE_QP_RESP_MASK_SQN`.
    pub const SQN: u32 = 1 << 3;
    /// `MLX5_IB_CREATE_QP_RESP_MASK_TIR_ICM_ADDR`.
    pub const TIR_ICM_ADDR: u32 = 1 << 4;
}
