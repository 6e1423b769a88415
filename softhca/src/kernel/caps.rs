//! The personality: ConnectX-5 capabilities (the mlx5 `HCA_CAP` values a real card reports)
//! and what mlx5_ib derives from them. Every limit reported here is one the commands enforce.
//! Features softhca does not model (UD, XRC, type 2 memory windows, multicast, ODP, DEVX,
//! dynamic UARs, CQE compression) are reported absent.

use ferrodat_abi::uverbs::{device_cap, mtu, port_cap};

/// PCI vendor 0x15b3 appears as IEEE OUI 0x02c9 (`mlx5_query_vendor_id`).
pub const VENDOR_ID: u32 = 0x02c9;
/// ConnectX-5 (PCI device 0x1017).
pub const VENDOR_PART_ID: u32 = 0x1017;
/// PCI revision.
pub const HW_VER: u32 = 0;
/// Firmware 16.35.2000 (`maj << 32 | min << 16 | sub`).
pub const FW_VER: u64 = (16 << 32) | (35 << 16) | 2000;

/// `log_max_qp`: QP numbers (also `qp_tab_size`). A ConnectX-5 has 2^18; softhca's QP
/// table in the fabric registry holds 2^16 per HCA, and that is what it reports, since a
/// consumer sizes itself from `max_qp` (a DAT IA's `max_eps`). Each process can hold
/// 4096 of them (`fabric::layout::registry::PENDING_SLOTS`), a limit verbs has no
/// attribute for.
pub const LOG_MAX_QP: u32 = 16;
const _: () = assert!(1 << LOG_MAX_QP == crate::fabric::layout::registry::QP_CAPACITY);
/// `log_max_qp_sz`: largest SQ (WQEBBs) and RQ (WQEs).
pub const LOG_MAX_QP_SZ: u32 = 15;
/// Largest SQ in WQEBBs / RQ in WQEs.
pub const MAX_QP_WQES: u32 = 1 << LOG_MAX_QP_SZ;
/// `log_max_cq_sz`: largest CQ in entries.
pub const LOG_MAX_CQ_SZ: u32 = 22;
/// Largest CQ ring (entries, a power of two); the largest `cqe` a caller may ask for is one
/// less.
pub const MAX_CQ_ENTRIES: u32 = 1 << LOG_MAX_CQ_SZ;
/// `log_max_cq`.
pub const LOG_MAX_CQ: u32 = 24;
/// `log_max_mkey`.
pub const LOG_MAX_MKEY: u32 = 24;
/// `log_max_pd`.
pub const LOG_MAX_PD: u32 = 24;
/// `log_max_srq`.
pub const LOG_MAX_SRQ: u32 = 23;
/// `log_max_srq_sz`.
pub const LOG_MAX_SRQ_SZ: u32 = 15;
/// `max_wqe_sz_sq`: largest send WQE in bytes.
pub const MAX_WQE_SZ_SQ: u32 = 512;
/// `max_wqe_sz_rq`: largest receive WQE (stride) in bytes.
pub const MAX_WQE_SZ_RQ: u32 = 512;
/// Send SGEs: (512 - ctrl 16 - raddr 16) / 16.
pub const MAX_SEND_SGE: u32 = (MAX_WQE_SZ_SQ - 32) / 16;
/// Receive SGEs: 512 / 16.
pub const MAX_RECV_SGE: u32 = MAX_WQE_SZ_RQ / 16;
/// `MLX5_MAX_SGE_RD`.
pub const MAX_SGE_RD: u32 = (512 - 16 - 16) / 16;
/// `log_max_ra_req_qp` / `log_max_ra_res_qp`: RDMA READ/atomic depth per QP.
pub const LOG_MAX_RA_QP: u32 = 4;
/// Largest `max_rd_atomic` / `max_dest_rd_atomic`.
pub const MAX_RD_ATOMIC: u32 = 1 << LOG_MAX_RA_QP;
/// `local_ca_ack_delay`.
pub const LOCAL_CA_ACK_DELAY: u8 = 16;
/// P_Key table size (`pkey_table_size` 0 → 128).
pub const PKEY_TABLE_LEN: u16 = 128;
/// `roce_address_table_size`: GID table length of the port (entry 0 holds the port's GID).
pub const GID_TABLE_LEN: u32 = 256;
/// `log_max_msg`.
pub const LOG_MAX_MSG: u32 = 30;
/// `1 << log_bf_reg_size`.
pub const BF_REG_SIZE: u32 = 512;
/// `cache_line_size()`.
pub const CACHE_LINE_SIZE: u32 = 64;
/// Completion vectors (comp EQs) offered.
pub const NUM_COMP_VECTORS: u32 = 1;
/// `MLX5_MAX_BFREGS`: most static bfregs a context may ask for.
pub const MAX_BFREGS: u32 = 256 * 2;
/// `MLX5_NON_FP_BFREGS_PER_UAR`: user bfregs per UAR (the kernel numbering).
pub const NON_FP_BFREGS_PER_UAR: u32 = 2;
/// Ports.
pub const NUM_PORTS: u8 = 1;
/// `device_frequency_khz`.
pub const HCA_CORE_CLOCK_KHZ: u64 = 78_125;
/// `MLX5_IB_DEFAULT_UIDX`: "no user index" (CQE version 0).
pub const DEFAULT_UIDX: u32 = 0xff_ffff;
/// CQE version the device supports (`cqe_version` cap).
pub const CQE_VERSION: u8 = 1;

/// Device capabilities mlx5_ib always sets, and MEM_WINDOW (type 1 windows); those that
/// depend on features softhca lacks (XRC, type 2B windows, flow steering, ...) are left
/// out. (A card with `imaicl` reports MEM_WINDOW and MEM_WINDOW_TYPE_2B together; softhca
/// models type 1 only, so ALLOC_MW of type 2 is refused with EOPNOTSUPP.)
pub const DEVICE_CAP_FLAGS: u64 = device_cap::CHANGE_PHY_PORT
    | device_cap::PORT_ACTIVE_EVENT
    | device_cap::SYS_IMAGE_GUID
    | device_cap::RC_RNR_NAK_GEN
    | device_cap::MEM_WINDOW;

/// `max_mw`: mlx5_ib reports `1 << log_max_mkey` when it supports windows.
pub const MAX_MW: u32 = 1 << LOG_MAX_MKEY;

/// Port capabilities of a RoCE port: CM supported, IP-based GIDs.
pub const PORT_CAP_FLAGS: u32 = port_cap::CM_SUP | port_cap::IP_BASED_GIDS;
/// QUERY_PORT `flags`: mlx5 sets GRH_REQUIRED only on InfiniBand links, never on RoCE
/// (`get_core_cap_flags`), although every RoCE address vector must carry a GRH anyway.
pub const PORT_FLAGS: u8 = 0;
/// `IB_MTU_4096`.
pub const MAX_MTU: u8 = mtu::MTU_4096;
/// `iboe_get_mtu(1500)`: a 1500-byte netdev MTU leaves room for 1024-byte RoCE payloads.
pub const ACTIVE_MTU: u8 = mtu::MTU_1024;
/// `IB_WIDTH_4X`.
pub const ACTIVE_WIDTH: u8 = 2;
/// `IB_SPEED_EDR` (4 × 25 Gb/s: a 100 GbE port).
pub const ACTIVE_SPEED: u8 = 32;
/// `IB_PORT_PHYS_STATE_LINK_UP`.
pub const PHYS_STATE_LINK_UP: u8 = 5;
/// The hop limit `ib_resolve_eth_dmac` takes from the route (default TTL / hop limit).
pub const ROUTE_HOP_LIMIT: u8 = 64;
