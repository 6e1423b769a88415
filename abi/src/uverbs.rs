//! The uverbs `write()` command protocol of `rdma/ib_user_verbs.h`.
//!
//! A command is one `write()` on `/dev/infiniband/uverbsN`: a [`CmdHdr`] (or, for extended
//! commands, a [`CmdHdr`] followed by an [`ExCmdHdr`]), the core request, then the driver's
//! request ("UHW", see [`crate::mlx5`]). The kernel writes the core response, then the
//! driver's response, to the user address in the request's `response` field. All fields are
//! host-endian, except the GUIDs of [`QueryDeviceResp`], which are big-endian.
//!
//! Where the C struct ends in a flexible `driver_data[]` array, that array is not a Rust
//! field: the driver's data simply follows the struct, and the C `sizeof` excludes it too.
//!
//! The value sets live in small modules. Kernel uapi names (`rdma/ib_user_verbs.h`,
//! `rdma/ib_user_ioctl_verbs.h`) are used where they exist; the rest (QP states, QP
//! attribute mask, MTU, WC status, async events, port states, ...) exist only as libibverbs
//! enums in `infiniband/verbs.h`, whose values the kernel ABI shares.

use crate::layout::layout;
use zerocopy::byteorder::big_endian;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `IB_USER_VERBS_ABI_VERSION`: the uverbs ABI this layout describes (sysfs
/// `class/infiniband_verbs/abi_version`).
pub const ABI_VERSION: u32 = 6;

/// `IB_USER_VERBS_CMD_THRESHOLD`: the first command number used only by extended commands.
pub const CMD_THRESHOLD: u32 = 50;

/// `IB_USER_VERBS_CMD_COMMAND_MASK`: the command-number bits of [`CmdHdr::command`].
pub const CMD_COMMAND_MASK: u32 = 0xff;

/// `IB_USER_VERBS_CMD_FLAG_EXTENDED`: set in [`CmdHdr::command`] for an extended command
/// ([`ex_cmd`]), which an [`ExCmdHdr`] follows.
pub const CMD_FLAG_EXTENDED: u32 = 0x8000_0000;

/// `IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE`: the largest log2 size of an RWQ indirection table.
pub const MAX_LOG_IND_TBL_SIZE: u32 = 0x0d;

/// `IB_DEVICE_NAME_MAX`: the size of an IB device name buffer, NUL included.
pub const DEVICE_NAME_MAX: usize = 64;

/// `enum ib_uverbs_write_cmds`: legacy command numbers ([`CmdHdr::command`]).
pub mod cmd {
    /// `IB_USER_VERBS_CMD_GET_CONTEXT`: open the verbs context ([`super::GetContext`]).
    pub const GET_CONTEXT: u32 = 0;
    /// `IB_USER_VERBS_CMD_QUERY_DEVICE`: device attributes ([`super::QueryDevice`]).
    pub const QUERY_DEVICE: u32 = 1;
    /// `IB_USER_VERBS_CMD_QUERY_PORT`: port attributes ([`super::QueryPort`]).
    pub const QUERY_PORT: u32 = 2;
    /// `IB_USER_VERBS_CMD_ALLOC_PD`: allocate a protection domain ([`super::AllocPd`]).
    pub const ALLOC_PD: u32 = 3;
    /// `IB_USER_VERBS_CMD_DEALLOC_PD`: free a protection domain ([`super::DeallocPd`]).
    pub const DEALLOC_PD: u32 = 4;
    /// `IB_USER_VERBS_CMD_CREATE_AH`: create an address handle.
    pub const CREATE_AH: u32 = 5;
    /// `IB_USER_VERBS_CMD_MODIFY_AH`: modify an address handle (never implemented by Linux).
    pub const MODIFY_AH: u32 = 6;
    /// `IB_USER_VERBS_CMD_QUERY_AH`: query an address handle (never implemented by Linux).
    pub const QUERY_AH: u32 = 7;
    /// `IB_USER_VERBS_CMD_DESTROY_AH`: destroy an address handle.
    pub const DESTROY_AH: u32 = 8;
    /// `IB_USER_VERBS_CMD_REG_MR`: register a memory region ([`super::RegMr`]).
    pub const REG_MR: u32 = 9;
    /// `IB_USER_VERBS_CMD_REG_SMR`: register a shared memory region (never implemented).
    pub const REG_SMR: u32 = 10;
    /// `IB_USER_VERBS_CMD_REREG_MR`: re-register a memory region.
    pub const REREG_MR: u32 = 11;
    /// `IB_USER_VERBS_CMD_QUERY_MR`: query a memory region (never implemented as a write).
    pub const QUERY_MR: u32 = 12;
    /// `IB_USER_VERBS_CMD_DEREG_MR`: deregister a memory region ([`super::DeregMr`]).
    pub const DEREG_MR: u32 = 13;
    /// `IB_USER_VERBS_CMD_ALLOC_MW`: allocate a memory window.
    pub const ALLOC_MW: u32 = 14;
    /// `IB_USER_VERBS_CMD_BIND_MW`: bind a memory window (never implemented as a write).
    pub const BIND_MW: u32 = 15;
    /// `IB_USER_VERBS_CMD_DEALLOC_MW`: free a memory window.
    pub const DEALLOC_MW: u32 = 16;
    /// `IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL`: create a completion channel
    /// ([`super::CreateCompChannel`]).
    pub const CREATE_COMP_CHANNEL: u32 = 17;
    /// `IB_USER_VERBS_CMD_CREATE_CQ`: create a completion queue ([`super::CreateCq`]).
    pub const CREATE_CQ: u32 = 18;
    /// `IB_USER_VERBS_CMD_RESIZE_CQ`: resize a completion queue ([`super::ResizeCq`]).
    pub const RESIZE_CQ: u32 = 19;
    /// `IB_USER_VERBS_CMD_DESTROY_CQ`: destroy a completion queue ([`super::DestroyCq`]).
    pub const DESTROY_CQ: u32 = 20;
    /// `IB_USER_VERBS_CMD_POLL_CQ`: poll a CQ through the kernel (not used by mlx5).
    pub const POLL_CQ: u32 = 21;
    /// `IB_USER_VERBS_CMD_PEEK_CQ`: peek a CQ (never implemented).
    pub const PEEK_CQ: u32 = 22;
    /// `IB_USER_VERBS_CMD_REQ_NOTIFY_CQ`: arm a CQ through the kernel
    /// ([`super::ReqNotifyCq`]; mlx5 arms in user space).
    pub const REQ_NOTIFY_CQ: u32 = 23;
    /// `IB_USER_VERBS_CMD_CREATE_QP`: create a queue pair ([`super::CreateQp`]).
    pub const CREATE_QP: u32 = 24;
    /// `IB_USER_VERBS_CMD_QUERY_QP`: query a queue pair ([`super::QueryQp`]).
    pub const QUERY_QP: u32 = 25;
    /// `IB_USER_VERBS_CMD_MODIFY_QP`: modify a queue pair ([`super::ModifyQp`]).
    pub const MODIFY_QP: u32 = 26;
    /// `IB_USER_VERBS_CMD_DESTROY_QP`: destroy a queue pair ([`super::DestroyQp`]).
    pub const DESTROY_QP: u32 = 27;
    /// `IB_USER_VERBS_CMD_POST_SEND`: post sends through the kernel (not used by mlx5).
    pub const POST_SEND: u32 = 28;
    /// `IB_USER_VERBS_CMD_POST_RECV`: post receives through the kernel (not used by mlx5).
    pub const POST_RECV: u32 = 29;
    /// `IB_USER_VERBS_CMD_ATTACH_MCAST`: attach a QP to a multicast group.
    pub const ATTACH_MCAST: u32 = 30;
    /// `IB_USER_VERBS_CMD_DETACH_MCAST`: detach a QP from a multicast group.
    pub const DETACH_MCAST: u32 = 31;
    /// `IB_USER_VERBS_CMD_CREATE_SRQ`: create a shared receive queue ([`super::CreateSrq`]).
    pub const CREATE_SRQ: u32 = 32;
    /// `IB_USER_VERBS_CMD_MODIFY_SRQ`: modify a shared receive queue ([`super::ModifySrq`]).
    pub const MODIFY_SRQ: u32 = 33;
    /// `IB_USER_VERBS_CMD_QUERY_SRQ`: query a shared receive queue.
    pub const QUERY_SRQ: u32 = 34;
    /// `IB_USER_VERBS_CMD_DESTROY_SRQ`: destroy a shared receive queue ([`super::DestroySrq`]).
    pub const DESTROY_SRQ: u32 = 35;
    /// `IB_USER_VERBS_CMD_POST_SRQ_RECV`: post SRQ receives through the kernel.
    pub const POST_SRQ_RECV: u32 = 36;
    /// `IB_USER_VERBS_CMD_OPEN_XRCD`: open an XRC domain.
    pub const OPEN_XRCD: u32 = 37;
    /// `IB_USER_VERBS_CMD_CLOSE_XRCD`: close an XRC domain.
    pub const CLOSE_XRCD: u32 = 38;
    /// `IB_USER_VERBS_CMD_CREATE_XSRQ`: create an SRQ of any type (basic, XRC, tag matching).
    pub const CREATE_XSRQ: u32 = 39;
    /// `IB_USER_VERBS_CMD_OPEN_QP`: open a shareable (XRC target) QP.
    pub const OPEN_QP: u32 = 40;
}

/// The extended command numbers (the anonymous enum after `enum ib_uverbs_write_cmds`), sent
/// as [`CMD_FLAG_EXTENDED`]` | n` with an [`ExCmdHdr`].
pub mod ex_cmd {
    /// `IB_USER_VERBS_EX_CMD_QUERY_DEVICE`: [`super::ExQueryDevice`].
    pub const QUERY_DEVICE: u32 = 1;
    /// `IB_USER_VERBS_EX_CMD_CREATE_CQ`: [`super::ExCreateCq`].
    pub const CREATE_CQ: u32 = 18;
    /// `IB_USER_VERBS_EX_CMD_CREATE_QP`: [`super::ExCreateQp`].
    pub const CREATE_QP: u32 = 24;
    /// `IB_USER_VERBS_EX_CMD_MODIFY_QP`: [`super::ExModifyQp`].
    pub const MODIFY_QP: u32 = 26;
    /// `IB_USER_VERBS_EX_CMD_CREATE_FLOW`: create a steering flow.
    pub const CREATE_FLOW: u32 = 50;
    /// `IB_USER_VERBS_EX_CMD_DESTROY_FLOW`: destroy a steering flow.
    pub const DESTROY_FLOW: u32 = 51;
    /// `IB_USER_VERBS_EX_CMD_CREATE_WQ`: create a receive work queue.
    pub const CREATE_WQ: u32 = 52;
    /// `IB_USER_VERBS_EX_CMD_MODIFY_WQ`: modify a receive work queue.
    pub const MODIFY_WQ: u32 = 53;
    /// `IB_USER_VERBS_EX_CMD_DESTROY_WQ`: destroy a receive work queue.
    pub const DESTROY_WQ: u32 = 54;
    /// `IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL`: create an RWQ indirection table.
    pub const CREATE_RWQ_IND_TBL: u32 = 55;
    /// `IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL`: destroy an RWQ indirection table.
    pub const DESTROY_RWQ_IND_TBL: u32 = 56;
    /// `IB_USER_VERBS_EX_CMD_MODIFY_CQ`: modify CQ moderation.
    pub const MODIFY_CQ: u32 = 57;
}

// ---------------------------------------------------------------------------------------
// Headers
// ---------------------------------------------------------------------------------------

/// `struct ib_uverbs_cmd_hdr`: the header of every command.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CmdHdr {
    /// Command number ([`cmd`]), or [`CMD_FLAG_EXTENDED`] | the extended command number.
    pub command: u32,
    /// Whole write length in 4-byte words, header included (legacy commands); for extended
    /// commands, the core request length in 8-byte words, both headers excluded.
    pub in_words: u16,
    /// Response length in 4-byte words (legacy) or the core response in 8-byte words (extended).
    pub out_words: u16,
}
layout!(CmdHdr, size = 8, command @ 0, in_words @ 4, out_words @ 6);

/// `struct ib_uverbs_ex_cmd_hdr`: the second header of an extended command, after [`CmdHdr`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ExCmdHdr {
    /// User address of the response buffer (core response, then the driver's).
    pub response: u64,
    /// Driver request length in 8-byte words.
    pub provider_in_words: u16,
    /// Driver response length in 8-byte words.
    pub provider_out_words: u16,
    /// Must be zero.
    pub cmd_hdr_reserved: u32,
}
layout!(ExCmdHdr, size = 16, response @ 0, provider_in_words @ 8, provider_out_words @ 10,
    cmd_hdr_reserved @ 12);

// ---------------------------------------------------------------------------------------
// Context, device and port
// ---------------------------------------------------------------------------------------

/// `struct ib_uverbs_get_context`: GET_CONTEXT request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GetContext {
    /// User address of the [`GetContextResp`] buffer.
    pub response: u64,
}
layout!(GetContext, size = 8, response @ 0);

/// `struct ib_uverbs_get_context_resp`: GET_CONTEXT response; the driver's response follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GetContextResp {
    /// File descriptor that delivers [`AsyncEventDesc`] records.
    pub async_fd: u32,
    /// Number of completion vectors (valid [`CreateCq::comp_vector`] values).
    pub num_comp_vectors: u32,
}
layout!(GetContextResp, size = 8, async_fd @ 0, num_comp_vectors @ 4);

/// `struct ib_uverbs_query_device`: QUERY_DEVICE request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct QueryDevice {
    /// User address of the [`QueryDeviceResp`] buffer.
    pub response: u64,
}
layout!(QueryDevice, size = 8, response @ 0);

/// `struct ib_uverbs_query_device_resp`: QUERY_DEVICE response (the device attributes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct QueryDeviceResp {
    /// Firmware version.
    pub fw_ver: u64,
    /// Node GUID (big-endian, `__be64`).
    pub node_guid: big_endian::U64,
    /// System image GUID (big-endian, `__be64`).
    pub sys_image_guid: big_endian::U64,
    /// Largest registrable memory region, in bytes.
    pub max_mr_size: u64,
    /// Supported page sizes (bit n set: 2^n bytes).
    pub page_size_cap: u64,
    /// IEEE vendor id (0x02c9 for Mellanox).
    pub vendor_id: u32,
    /// Vendor part id (PCI device id).
    pub vendor_part_id: u32,
    /// Hardware version.
    pub hw_ver: u32,
    /// Maximum number of QPs.
    pub max_qp: u32,
    /// Maximum outstanding work requests per queue.
    pub max_qp_wr: u32,
    /// Device capabilities, low 32 bits of [`device_cap`].
    pub device_cap_flags: u32,
    /// Maximum scatter/gather entries per send or receive WR.
    pub max_sge: u32,
    /// Maximum scatter/gather entries per RDMA READ WR.
    pub max_sge_rd: u32,
    /// Maximum number of CQs.
    pub max_cq: u32,
    /// Maximum entries per CQ.
    pub max_cqe: u32,
    /// Maximum number of memory regions.
    pub max_mr: u32,
    /// Maximum number of protection domains.
    pub max_pd: u32,
    /// Maximum outstanding RDMA READ/atomic operations a QP can be the target of.
    pub max_qp_rd_atom: u32,
    /// Maximum outstanding RDMA READ/atomic operations per EE context.
    pub max_ee_rd_atom: u32,
    /// Maximum RDMA READ/atomic responder resources of the device.
    pub max_res_rd_atom: u32,
    /// Maximum outstanding RDMA READ/atomic operations a QP can initiate.
    pub max_qp_init_rd_atom: u32,
    /// Maximum RDMA READ/atomic operations an EE context can initiate.
    pub max_ee_init_rd_atom: u32,
    /// Atomic operation support ([`atomic_cap`]).
    pub atomic_cap: u32,
    /// Maximum number of EE contexts.
    pub max_ee: u32,
    /// Maximum number of reliable datagram domains.
    pub max_rdd: u32,
    /// Maximum number of memory windows.
    pub max_mw: u32,
    /// Maximum number of raw IPv6 QPs.
    pub max_raw_ipv6_qp: u32,
    /// Maximum number of raw Ethertype QPs.
    pub max_raw_ethy_qp: u32,
    /// Maximum number of multicast groups.
    pub max_mcast_grp: u32,
    /// Maximum QPs attached to one multicast group.
    pub max_mcast_qp_attach: u32,
    /// Maximum QP attachments over all multicast groups.
    pub max_total_mcast_qp_attach: u32,
    /// Maximum number of address handles.
    pub max_ah: u32,
    /// Maximum number of fast memory regions.
    pub max_fmr: u32,
    /// Maximum remaps per FMR.
    pub max_map_per_fmr: u32,
    /// Maximum number of SRQs.
    pub max_srq: u32,
    /// Maximum outstanding work requests per SRQ.
    pub max_srq_wr: u32,
    /// Maximum scatter/gather entries per SRQ receive WR.
    pub max_srq_sge: u32,
    /// Number of partition keys.
    pub max_pkeys: u16,
    /// Local CA ACK delay (IBA encoding: 4.096 µs * 2^n).
    pub local_ca_ack_delay: u8,
    /// Number of physical ports.
    pub phys_port_cnt: u8,
    /// Reserved.
    pub reserved: [u8; 4],
}
layout!(QueryDeviceResp, size = 176,
    fw_ver @ 0, node_guid @ 8, sys_image_guid @ 16, max_mr_size @ 24, page_size_cap @ 32,
    vendor_id @ 40, vendor_part_id @ 44, hw_ver @ 48, max_qp @ 52, max_qp_wr @ 56,
    device_cap_flags @ 60, max_sge @ 64, max_sge_rd @ 68, max_cq @ 72, max_cqe @ 76,
    max_mr @ 80, max_pd @ 84, max_qp_rd_atom @ 88, max_ee_rd_atom @ 92, max_res_rd_atom @ 96,
    max_qp_init_rd_atom @ 100, max_ee_init_rd_atom @ 104, atomic_cap @ 108, max_ee @ 112,
    max_rdd @ 116, max_mw @ 120, max_raw_ipv6_qp @ 124, max_raw_ethy_qp @ 128,
    max_mcast_grp @ 132, max_mcast_qp_attach @ 136, max_total_mcast_qp_attach @ 140,
    max_ah @ 144, max_fmr @ 148, max_map_per_fmr @ 152, max_srq @ 156, max_srq_wr @ 160,
    max_srq_sge @ 164, max_pkeys @ 168, local_ca_ack_delay @ 170, phys_port_cnt @ 171,
    reserved @ 172);

/// `struct ib_uverbs_ex_query_device`: extended QUERY_DEVICE request. Unlike the legacy
/// command it carries no `response` field; the [`ExCmdHdr`] has it.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ExQueryDevice {
    /// Must be zero.
    pub comp_mask: u32,
    /// Must be zero.
    pub reserved: u32,
}
layout!(ExQueryDevice, size = 8, comp_mask @ 0, reserved @ 4);

/// The anonymous `per_transport_caps` struct of `struct ib_uverbs_odp_caps`: on-demand paging
/// support per QP transport ([`odp_transport`] bits).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct OdpPerTransportCaps {
    /// RC operations that support ODP.
    pub rc_odp_caps: u32,
    /// UC operations that support ODP.
    pub uc_odp_caps: u32,
    /// UD operations that support ODP.
    pub ud_odp_caps: u32,
}
layout!(OdpPerTransportCaps, size = 12, rc_odp_caps @ 0, uc_odp_caps @ 4, ud_odp_caps @ 8);

/// `struct ib_uverbs_odp_caps`: on-demand paging capabilities.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct OdpCaps {
    /// General ODP support ([`odp_general`] bits).
    pub general_caps: u64,
    /// ODP support per transport.
    pub per_transport_caps: OdpPerTransportCaps,
    /// Reserved.
    pub reserved: u32,
}
layout!(OdpCaps, size = 24, general_caps @ 0, per_transport_caps @ 8, reserved @ 20);

/// `struct ib_uverbs_rss_caps`: receive-side scaling capabilities.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct RssCaps {
    /// QP types that support RSS (bit `1 << qp_type`, see [`qp_type`]).
    pub supported_qpts: u32,
    /// Maximum number of RWQ indirection tables.
    pub max_rwq_indirection_tables: u32,
    /// Maximum entries per RWQ indirection table.
    pub max_rwq_indirection_table_size: u32,
    /// Reserved.
    pub reserved: u32,
}
layout!(RssCaps, size = 16, supported_qpts @ 0, max_rwq_indirection_tables @ 4,
    max_rwq_indirection_table_size @ 8, reserved @ 12);

/// `struct ib_uverbs_tm_caps`: tag-matching capabilities.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct TmCaps {
    /// Largest rendezvous request header, in bytes.
    pub max_rndv_hdr_size: u32,
    /// Maximum entries in the tag-matching list.
    pub max_num_tags: u32,
    /// Tag-matching flags ([`tm_cap`]).
    pub flags: u32,
    /// Maximum outstanding list operations.
    pub max_ops: u32,
    /// Maximum scatter/gather entries per tag-matching entry.
    pub max_sge: u32,
    /// Reserved.
    pub reserved: u32,
}
layout!(TmCaps, size = 24, max_rndv_hdr_size @ 0, max_num_tags @ 4, flags @ 8, max_ops @ 12,
    max_sge @ 16, reserved @ 20);

/// `struct ib_uverbs_cq_moderation_caps`: CQ event moderation limits.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CqModerationCaps {
    /// Largest completion count before an event.
    pub max_cq_moderation_count: u16,
    /// Largest moderation period, in microseconds.
    pub max_cq_moderation_period: u16,
    /// Reserved.
    pub reserved: u32,
}
layout!(CqModerationCaps, size = 8, max_cq_moderation_count @ 0, max_cq_moderation_period @ 2,
    reserved @ 4);

/// `struct ib_uverbs_ex_query_device_resp`: extended QUERY_DEVICE response. The kernel
/// writes at most `out_words * 8` bytes and reports how many in `response_length`.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ExQueryDeviceResp {
    /// The legacy attributes.
    pub base: QueryDeviceResp,
    /// Zero.
    pub comp_mask: u32,
    /// Bytes of this struct the kernel filled in.
    pub response_length: u32,
    /// On-demand paging capabilities.
    pub odp_caps: OdpCaps,
    /// Valid bits of a completion timestamp.
    pub timestamp_mask: u64,
    /// HCA core clock, in kHz.
    pub hca_core_clock: u64,
    /// All device capabilities ([`device_cap`]).
    pub device_cap_flags_ex: u64,
    /// Receive-side scaling capabilities.
    pub rss_caps: RssCaps,
    /// Maximum number of receive work queues.
    pub max_wq_type_rq: u32,
    /// Raw packet QP capabilities ([`raw_packet_cap`]).
    pub raw_packet_caps: u32,
    /// Tag-matching capabilities.
    pub tm_caps: TmCaps,
    /// CQ moderation limits.
    pub cq_moderation_caps: CqModerationCaps,
    /// Largest device memory allocation, in bytes.
    pub max_dm_size: u64,
    /// XRC operations that support ODP ([`odp_transport`] bits).
    pub xrc_odp_caps: u32,
    /// Reserved.
    pub reserved: u32,
}
layout!(ExQueryDeviceResp, size = 304,
    base @ 0, comp_mask @ 176, response_length @ 180, odp_caps @ 184, timestamp_mask @ 208,
    hca_core_clock @ 216, device_cap_flags_ex @ 224, rss_caps @ 232, max_wq_type_rq @ 248,
    raw_packet_caps @ 252, tm_caps @ 256, cq_moderation_caps @ 280, max_dm_size @ 288,
    xrc_odp_caps @ 296, reserved @ 300);

/// `struct ib_uverbs_query_port`: QUERY_PORT request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct QueryPort {
    /// User address of the [`QueryPortResp`] buffer.
    pub response: u64,
    /// Port number, from 1.
    pub port_num: u8,
    /// Reserved.
    pub reserved: [u8; 7],
}
layout!(QueryPort, size = 16, response @ 0, port_num @ 8, reserved @ 9);

/// `struct ib_uverbs_query_port_resp`: QUERY_PORT response (the port attributes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct QueryPortResp {
    /// Port capabilities ([`port_cap`]).
    pub port_cap_flags: u32,
    /// Largest message size, in bytes.
    pub max_msg_sz: u32,
    /// Bad P_Key counter.
    pub bad_pkey_cntr: u32,
    /// Q_Key violation counter.
    pub qkey_viol_cntr: u32,
    /// GID table length.
    pub gid_tbl_len: u32,
    /// P_Key table length.
    pub pkey_tbl_len: u16,
    /// Base LID (0 on Ethernet).
    pub lid: u16,
    /// Subnet manager LID.
    pub sm_lid: u16,
    /// Logical port state ([`port_state`]).
    pub state: u8,
    /// Largest supported MTU ([`mtu`]).
    pub max_mtu: u8,
    /// Active MTU ([`mtu`]).
    pub active_mtu: u8,
    /// LID mask count.
    pub lmc: u8,
    /// Number of virtual lanes (IBA encoding).
    pub max_vl_num: u8,
    /// Subnet manager service level.
    pub sm_sl: u8,
    /// Subnet propagation delay (IBA encoding).
    pub subnet_timeout: u8,
    /// InitTypeReply from the SM.
    pub init_type_reply: u8,
    /// Active link width (IBA encoding: 1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x).
    pub active_width: u8,
    /// Active link speed (IBA encoding: 1 = SDR, 2 = DDR, 4 = QDR, ...).
    pub active_speed: u8,
    /// Physical port state (IBA encoding: 5 = LinkUp).
    pub phys_state: u8,
    /// Link layer ([`link_layer`]).
    pub link_layer: u8,
    /// Port flags ([`port_flags`]).
    pub flags: u8,
    /// Reserved.
    pub reserved: u8,
}
layout!(QueryPortResp, size = 40,
    port_cap_flags @ 0, max_msg_sz @ 4, bad_pkey_cntr @ 8, qkey_viol_cntr @ 12,
    gid_tbl_len @ 16, pkey_tbl_len @ 20, lid @ 22, sm_lid @ 24, state @ 26, max_mtu @ 27,
    active_mtu @ 28, lmc @ 29, max_vl_num @ 30, sm_sl @ 31, subnet_timeout @ 32,
    init_type_reply @ 33, active_width @ 34, active_speed @ 35, phys_state @ 36,
    link_layer @ 37, flags @ 38, reserved @ 39);

// ---------------------------------------------------------------------------------------
// Protection domains and memory regions
// ---------------------------------------------------------------------------------------

/// `struct ib_uverbs_alloc_pd`: ALLOC_PD request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct AllocPd {
    /// User address of the [`AllocPdResp`] buffer.
    pub response: u64,
}
layout!(AllocPd, size = 8, response @ 0);

/// `struct ib_uverbs_alloc_pd_resp`: ALLOC_PD response; the driver's response follows
/// directly (4-byte aligned).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct AllocPdResp {
    /// Handle of the new PD.
    pub pd_handle: u32,
}
layout!(AllocPdResp, size = 4, pd_handle @ 0);

/// `struct ib_uverbs_dealloc_pd`: DEALLOC_PD request (no response).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct DeallocPd {
    /// Handle of the PD to free.
    pub pd_handle: u32,
}
layout!(DeallocPd, size = 4, pd_handle @ 0);

/// `struct ib_uverbs_reg_mr`: REG_MR request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct RegMr {
    /// User address of the [`RegMrResp`] buffer.
    pub response: u64,
    /// User virtual address of the region.
    pub start: u64,
    /// Length of the region, in bytes.
    pub length: u64,
    /// Address the HCA uses for the region's first byte (usually `start`).
    pub hca_va: u64,
    /// Handle of the PD the region belongs to.
    pub pd_handle: u32,
    /// Access rights ([`access`]).
    pub access_flags: u32,
}
layout!(RegMr, size = 40, response @ 0, start @ 8, length @ 16, hca_va @ 24, pd_handle @ 32,
    access_flags @ 36);

/// `struct ib_uverbs_reg_mr_resp`: REG_MR response; the driver's response follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct RegMrResp {
    /// Handle of the new MR.
    pub mr_handle: u32,
    /// Local key.
    pub lkey: u32,
    /// Remote key.
    pub rkey: u32,
}
layout!(RegMrResp, size = 12, mr_handle @ 0, lkey @ 4, rkey @ 8);

/// `struct ib_uverbs_dereg_mr`: DEREG_MR request (no response).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct DeregMr {
    /// Handle of the MR to deregister.
    pub mr_handle: u32,
}
layout!(DeregMr, size = 4, mr_handle @ 0);

/// `struct ib_uverbs_alloc_mw`: ALLOC_MW request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct AllocMw {
    /// User address of the [`AllocMwResp`] buffer.
    pub response: u64,
    /// Handle of the PD the window belongs to.
    pub pd_handle: u32,
    /// [`mw_type`]: 1 (bound by a bind WQE, any QP of the PD) or 2 (bound to one QP).
    pub mw_type: u8,
    /// Reserved, zero.
    pub reserved: [u8; 3],
}
layout!(AllocMw, size = 16, response @ 0, pd_handle @ 8, mw_type @ 12, reserved @ 13);

/// `struct ib_uverbs_alloc_mw_resp`: ALLOC_MW response; the driver's response follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct AllocMwResp {
    /// Handle of the new window.
    pub mw_handle: u32,
    /// Its remote key before any bind (a bind gives it a new variant byte).
    pub rkey: u32,
}
layout!(AllocMwResp, size = 8, mw_handle @ 0, rkey @ 4);

/// `struct ib_uverbs_dealloc_mw`: DEALLOC_MW request (no response).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct DeallocMw {
    /// Handle of the window to free.
    pub mw_handle: u32,
}
layout!(DeallocMw, size = 4, mw_handle @ 0);

/// `enum ib_mw_type` (`IBV_MW_TYPE_*`): [`AllocMw::mw_type`].
pub mod mw_type {
    /// `IBV_MW_TYPE_1`: bound with `ibv_bind_mw`, usable on any QP of its PD.
    pub const TYPE_1: u8 = 1;
    /// `IBV_MW_TYPE_2`: bound with a posted IBV_WR_BIND_MW, tied to that QP.
    pub const TYPE_2: u8 = 2;
}

// ---------------------------------------------------------------------------------------
// Completion channels and completion queues
// ---------------------------------------------------------------------------------------

/// `struct ib_uverbs_create_comp_channel`: CREATE_COMP_CHANNEL request.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateCompChannel {
    /// User address of the [`CreateCompChannelResp`] buffer.
    pub response: u64,
}
layout!(CreateCompChannel, size = 8, response @ 0);

/// `struct ib_uverbs_create_comp_channel_resp`: CREATE_COMP_CHANNEL response.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateCompChannelResp {
    /// File descriptor that delivers [`CompEventDesc`] records.
    pub fd: u32,
}
layout!(CreateCompChannelResp, size = 4, fd @ 0);

/// `struct ib_uverbs_create_cq`: CREATE_CQ request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateCq {
    /// User address of the [`CreateCqResp`] buffer.
    pub response: u64,
    /// Opaque value returned in [`CompEventDesc::cq_handle`] and async events.
    pub user_handle: u64,
    /// Requested number of entries.
    pub cqe: u32,
    /// Completion vector, below [`GetContextResp::num_comp_vectors`].
    pub comp_vector: u32,
    /// Completion channel fd, or -1 for none.
    pub comp_channel: i32,
    /// Must be zero.
    pub reserved: u32,
}
layout!(CreateCq, size = 32, response @ 0, user_handle @ 8, cqe @ 16, comp_vector @ 20,
    comp_channel @ 24, reserved @ 28);

/// `struct ib_uverbs_ex_create_cq`: extended CREATE_CQ request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ExCreateCq {
    /// Opaque value returned in [`CompEventDesc::cq_handle`] and async events.
    pub user_handle: u64,
    /// Requested number of entries.
    pub cqe: u32,
    /// Completion vector, below [`GetContextResp::num_comp_vectors`].
    pub comp_vector: u32,
    /// Completion channel fd, or -1 for none.
    pub comp_channel: i32,
    /// Must be zero.
    pub comp_mask: u32,
    /// Creation flags ([`cq_flags`]).
    pub flags: u32,
    /// Must be zero.
    pub reserved: u32,
}
layout!(ExCreateCq, size = 32, user_handle @ 0, cqe @ 8, comp_vector @ 12, comp_channel @ 16,
    comp_mask @ 20, flags @ 24, reserved @ 28);

/// `struct ib_uverbs_create_cq_resp`: CREATE_CQ response; the driver's response follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateCqResp {
    /// Handle of the new CQ.
    pub cq_handle: u32,
    /// Actual number of entries.
    pub cqe: u32,
}
layout!(CreateCqResp, size = 8, cq_handle @ 0, cqe @ 4);

/// `struct ib_uverbs_ex_create_cq_resp`: extended CREATE_CQ response.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ExCreateCqResp {
    /// The legacy response.
    pub base: CreateCqResp,
    /// Zero.
    pub comp_mask: u32,
    /// Bytes of this struct the kernel filled in.
    pub response_length: u32,
}
layout!(ExCreateCqResp, size = 16, base @ 0, comp_mask @ 8, response_length @ 12);

/// `struct ib_uverbs_resize_cq`: RESIZE_CQ request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ResizeCq {
    /// User address of the [`ResizeCqResp`] buffer.
    pub response: u64,
    /// Handle of the CQ.
    pub cq_handle: u32,
    /// Requested number of entries.
    pub cqe: u32,
}
layout!(ResizeCq, size = 16, response @ 0, cq_handle @ 8, cqe @ 12);

/// `struct ib_uverbs_resize_cq_resp`: RESIZE_CQ response; the driver's response follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ResizeCqResp {
    /// Actual number of entries.
    pub cqe: u32,
    /// Reserved.
    pub reserved: u32,
}
layout!(ResizeCqResp, size = 8, cqe @ 0, reserved @ 4);

/// `struct ib_uverbs_req_notify_cq`: REQ_NOTIFY_CQ request (no response).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ReqNotifyCq {
    /// Handle of the CQ.
    pub cq_handle: u32,
    /// Non-zero: raise an event only for solicited completions.
    pub solicited_only: u32,
}
layout!(ReqNotifyCq, size = 8, cq_handle @ 0, solicited_only @ 4);

/// `struct ib_uverbs_destroy_cq`: DESTROY_CQ request.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct DestroyCq {
    /// User address of the [`DestroyCqResp`] buffer.
    pub response: u64,
    /// Handle of the CQ.
    pub cq_handle: u32,
    /// Must be zero.
    pub reserved: u32,
}
layout!(DestroyCq, size = 16, response @ 0, cq_handle @ 8, reserved @ 12);

/// `struct ib_uverbs_destroy_cq_resp`: DESTROY_CQ response; the caller must have
/// acknowledged this many events before it frees the CQ.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct DestroyCqResp {
    /// Completion events delivered for the CQ.
    pub comp_events_reported: u32,
    /// Async events delivered for the CQ.
    pub async_events_reported: u32,
}
layout!(DestroyCqResp, size = 8, comp_events_reported @ 0, async_events_reported @ 4);

// ---------------------------------------------------------------------------------------
// Queue pairs
// ---------------------------------------------------------------------------------------

/// `struct ib_uverbs_create_qp`: CREATE_QP request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateQp {
    /// User address of the [`CreateQpResp`] buffer.
    pub response: u64,
    /// Opaque value returned in async events.
    pub user_handle: u64,
    /// Handle of the PD.
    pub pd_handle: u32,
    /// Handle of the send CQ.
    pub send_cq_handle: u32,
    /// Handle of the receive CQ.
    pub recv_cq_handle: u32,
    /// Handle of the SRQ, if `is_srq`.
    pub srq_handle: u32,
    /// Requested send queue depth.
    pub max_send_wr: u32,
    /// Requested receive queue depth.
    pub max_recv_wr: u32,
    /// Requested scatter/gather entries per send WR.
    pub max_send_sge: u32,
    /// Requested scatter/gather entries per receive WR.
    pub max_recv_sge: u32,
    /// Requested inline data per send WR, in bytes.
    pub max_inline_data: u32,
    /// Non-zero: every send WR generates a completion.
    pub sq_sig_all: u8,
    /// QP type ([`qp_type`]).
    pub qp_type: u8,
    /// Non-zero: receives come from the SRQ `srq_handle`.
    pub is_srq: u8,
    /// Must be zero.
    pub reserved: u8,
}
layout!(CreateQp, size = 56, response @ 0, user_handle @ 8, pd_handle @ 16,
    send_cq_handle @ 20, recv_cq_handle @ 24, srq_handle @ 28, max_send_wr @ 32,
    max_recv_wr @ 36, max_send_sge @ 40, max_recv_sge @ 44, max_inline_data @ 48,
    sq_sig_all @ 52, qp_type @ 53, is_srq @ 54, reserved @ 55);

/// `struct ib_uverbs_ex_create_qp`: extended CREATE_QP request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ExCreateQp {
    /// Opaque value returned in async events.
    pub user_handle: u64,
    /// Handle of the PD.
    pub pd_handle: u32,
    /// Handle of the send CQ.
    pub send_cq_handle: u32,
    /// Handle of the receive CQ.
    pub recv_cq_handle: u32,
    /// Handle of the SRQ, if `is_srq`.
    pub srq_handle: u32,
    /// Requested send queue depth.
    pub max_send_wr: u32,
    /// Requested receive queue depth.
    pub max_recv_wr: u32,
    /// Requested scatter/gather entries per send WR.
    pub max_send_sge: u32,
    /// Requested scatter/gather entries per receive WR.
    pub max_recv_sge: u32,
    /// Requested inline data per send WR, in bytes.
    pub max_inline_data: u32,
    /// Non-zero: every send WR generates a completion.
    pub sq_sig_all: u8,
    /// QP type ([`qp_type`]).
    pub qp_type: u8,
    /// Non-zero: receives come from the SRQ `srq_handle`.
    pub is_srq: u8,
    /// Must be zero.
    pub reserved: u8,
    /// Valid optional fields ([`create_qp_mask`]).
    pub comp_mask: u32,
    /// Creation flags ([`qp_create_flags`]).
    pub create_flags: u32,
    /// Handle of the RWQ indirection table, if `comp_mask` says so.
    pub rwq_ind_tbl_handle: u32,
    /// Source QPN, with [`qp_create_flags::SOURCE_QPN`].
    pub source_qpn: u32,
}
layout!(ExCreateQp, size = 64, user_handle @ 0, pd_handle @ 8, send_cq_handle @ 12,
    recv_cq_handle @ 16, srq_handle @ 20, max_send_wr @ 24, max_recv_wr @ 28,
    max_send_sge @ 32, max_recv_sge @ 36, max_inline_data @ 40, sq_sig_all @ 44,
    qp_type @ 45, is_srq @ 46, reserved @ 47, comp_mask @ 48, create_flags @ 52,
    rwq_ind_tbl_handle @ 56, source_qpn @ 60);

/// `struct ib_uverbs_create_qp_resp`: CREATE_QP (and OPEN_QP) response; the driver's
/// response follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateQpResp {
    /// Handle of the new QP.
    pub qp_handle: u32,
    /// QP number.
    pub qpn: u32,
    /// Actual send queue depth.
    pub max_send_wr: u32,
    /// Actual receive queue depth.
    pub max_recv_wr: u32,
    /// Actual scatter/gather entries per send WR.
    pub max_send_sge: u32,
    /// Actual scatter/gather entries per receive WR.
    pub max_recv_sge: u32,
    /// Actual inline data per send WR, in bytes.
    pub max_inline_data: u32,
    /// Reserved.
    pub reserved: u32,
}
layout!(CreateQpResp, size = 32, qp_handle @ 0, qpn @ 4, max_send_wr @ 8, max_recv_wr @ 12,
    max_send_sge @ 16, max_recv_sge @ 20, max_inline_data @ 24, reserved @ 28);

/// `struct ib_uverbs_ex_create_qp_resp`: extended CREATE_QP response.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ExCreateQpResp {
    /// The legacy response.
    pub base: CreateQpResp,
    /// Zero.
    pub comp_mask: u32,
    /// Bytes of this struct the kernel filled in.
    pub response_length: u32,
}
layout!(ExCreateQpResp, size = 40, base @ 0, comp_mask @ 32, response_length @ 36);

/// `struct ib_uverbs_qp_dest`: a QP's primary or alternate path (address vector), in
/// [`QueryQpResp`] and [`ModifyQp`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct QpDest {
    /// Destination GID (network byte order, as on the wire).
    pub dgid: [u8; 16],
    /// GRH flow label.
    pub flow_label: u32,
    /// Destination LID (0 on Ethernet).
    pub dlid: u16,
    /// Reserved.
    pub reserved: u16,
    /// Index of the source GID in the port's GID table.
    pub sgid_index: u8,
    /// GRH hop limit.
    pub hop_limit: u8,
    /// GRH traffic class.
    pub traffic_class: u8,
    /// Service level.
    pub sl: u8,
    /// Source path bits (LMC).
    pub src_path_bits: u8,
    /// Static rate limit ([`rate`]).
    pub static_rate: u8,
    /// Non-zero: the path has a GRH (required on RoCE).
    pub is_global: u8,
    /// Port number, from 1.
    pub port_num: u8,
}
layout!(QpDest, size = 32, dgid @ 0, flow_label @ 16, dlid @ 20, reserved @ 22,
    sgid_index @ 24, hop_limit @ 25, traffic_class @ 26, sl @ 27, src_path_bits @ 28,
    static_rate @ 29, is_global @ 30, port_num @ 31);

/// `struct ib_uverbs_query_qp`: QUERY_QP request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct QueryQp {
    /// User address of the [`QueryQpResp`] buffer.
    pub response: u64,
    /// Handle of the QP.
    pub qp_handle: u32,
    /// Attributes wanted ([`qp_attr`]).
    pub attr_mask: u32,
}
layout!(QueryQp, size = 16, response @ 0, qp_handle @ 8, attr_mask @ 12);

/// `struct ib_uverbs_query_qp_resp`: QUERY_QP response; the driver's response follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct QueryQpResp {
    /// Primary path.
    pub dest: QpDest,
    /// Alternate path.
    pub alt_dest: QpDest,
    /// Send queue depth.
    pub max_send_wr: u32,
    /// Receive queue depth.
    pub max_recv_wr: u32,
    /// Scatter/gather entries per send WR.
    pub max_send_sge: u32,
    /// Scatter/gather entries per receive WR.
    pub max_recv_sge: u32,
    /// Inline data per send WR, in bytes.
    pub max_inline_data: u32,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// Send PSN.
    pub sq_psn: u32,
    /// Remote QP number.
    pub dest_qp_num: u32,
    /// Remote access rights ([`access`]).
    pub qp_access_flags: u32,
    /// P_Key index.
    pub pkey_index: u16,
    /// Alternate path P_Key index.
    pub alt_pkey_index: u16,
    /// Current state ([`qp_state`]).
    pub qp_state: u8,
    /// Current state as the caller believed it ([`qp_state`]).
    pub cur_qp_state: u8,
    /// Path MTU ([`mtu`]).
    pub path_mtu: u8,
    /// Path migration state ([`mig_state`]).
    pub path_mig_state: u8,
    /// Non-zero while the send queue drains (SQD).
    pub sq_draining: u8,
    /// Outstanding RDMA READ/atomic operations as initiator.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA READ/atomic operations as responder.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer (IBA encoding).
    pub min_rnr_timer: u8,
    /// Port number.
    pub port_num: u8,
    /// Local ACK timeout (4.096 µs * 2^n).
    pub timeout: u8,
    /// Transport retry count.
    pub retry_cnt: u8,
    /// RNR retry count (7 = infinite).
    pub rnr_retry: u8,
    /// Alternate path port number.
    pub alt_port_num: u8,
    /// Alternate path local ACK timeout.
    pub alt_timeout: u8,
    /// Non-zero: every send WR generates a completion.
    pub sq_sig_all: u8,
    /// Reserved.
    pub reserved: [u8; 5],
}
layout!(QueryQpResp, size = 128,
    dest @ 0, alt_dest @ 32, max_send_wr @ 64, max_recv_wr @ 68, max_send_sge @ 72,
    max_recv_sge @ 76, max_inline_data @ 80, qkey @ 84, rq_psn @ 88, sq_psn @ 92,
    dest_qp_num @ 96, qp_access_flags @ 100, pkey_index @ 104, alt_pkey_index @ 106,
    qp_state @ 108, cur_qp_state @ 109, path_mtu @ 110, path_mig_state @ 111,
    sq_draining @ 112, max_rd_atomic @ 113, max_dest_rd_atomic @ 114, min_rnr_timer @ 115,
    port_num @ 116, timeout @ 117, retry_cnt @ 118, rnr_retry @ 119, alt_port_num @ 120,
    alt_timeout @ 121, sq_sig_all @ 122, reserved @ 123);

/// `struct ib_uverbs_modify_qp`: MODIFY_QP request (no response, no `response` field); the
/// driver's request follows. Only the attributes named in `attr_mask` are read.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ModifyQp {
    /// Primary path ([`qp_attr::AV`]).
    pub dest: QpDest,
    /// Alternate path ([`qp_attr::ALT_PATH`]).
    pub alt_dest: QpDest,
    /// Handle of the QP.
    pub qp_handle: u32,
    /// Attributes to change ([`qp_attr`]).
    pub attr_mask: u32,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// Send PSN.
    pub sq_psn: u32,
    /// Remote QP number.
    pub dest_qp_num: u32,
    /// Remote access rights ([`access`]).
    pub qp_access_flags: u32,
    /// P_Key index.
    pub pkey_index: u16,
    /// Alternate path P_Key index.
    pub alt_pkey_index: u16,
    /// New state ([`qp_state`]).
    pub qp_state: u8,
    /// Current state as the caller believes it ([`qp_state`]).
    pub cur_qp_state: u8,
    /// Path MTU ([`mtu`]).
    pub path_mtu: u8,
    /// Path migration state ([`mig_state`]).
    pub path_mig_state: u8,
    /// Non-zero: raise an event when the send queue has drained (SQD).
    pub en_sqd_async_notify: u8,
    /// Outstanding RDMA READ/atomic operations as initiator.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA READ/atomic operations as responder.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer (IBA encoding).
    pub min_rnr_timer: u8,
    /// Port number.
    pub port_num: u8,
    /// Local ACK timeout (4.096 µs * 2^n).
    pub timeout: u8,
    /// Transport retry count.
    pub retry_cnt: u8,
    /// RNR retry count (7 = infinite).
    pub rnr_retry: u8,
    /// Alternate path port number.
    pub alt_port_num: u8,
    /// Alternate path local ACK timeout.
    pub alt_timeout: u8,
    /// Must be zero.
    pub reserved: [u8; 2],
}
layout!(ModifyQp, size = 112,
    dest @ 0, alt_dest @ 32, qp_handle @ 64, attr_mask @ 68, qkey @ 72, rq_psn @ 76,
    sq_psn @ 80, dest_qp_num @ 84, qp_access_flags @ 88, pkey_index @ 92,
    alt_pkey_index @ 94, qp_state @ 96, cur_qp_state @ 97, path_mtu @ 98,
    path_mig_state @ 99, en_sqd_async_notify @ 100, max_rd_atomic @ 101,
    max_dest_rd_atomic @ 102, min_rnr_timer @ 103, port_num @ 104, timeout @ 105,
    retry_cnt @ 106, rnr_retry @ 107, alt_port_num @ 108, alt_timeout @ 109, reserved @ 110);

/// `struct ib_uverbs_ex_modify_qp`: extended MODIFY_QP request; the driver's request follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ExModifyQp {
    /// The legacy request.
    pub base: ModifyQp,
    /// Send rate limit in kbit/s ([`qp_attr::RATE_LIMIT`]).
    pub rate_limit: u32,
    /// Must be zero.
    pub reserved: u32,
}
layout!(ExModifyQp, size = 120, base @ 0, rate_limit @ 112, reserved @ 116);

/// `struct ib_uverbs_ex_modify_qp_resp`: extended MODIFY_QP response.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ExModifyQpResp {
    /// Zero.
    pub comp_mask: u32,
    /// Bytes of this struct the kernel filled in.
    pub response_length: u32,
}
layout!(ExModifyQpResp, size = 8, comp_mask @ 0, response_length @ 4);

/// `struct ib_uverbs_destroy_qp`: DESTROY_QP request.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct DestroyQp {
    /// User address of the [`DestroyQpResp`] buffer.
    pub response: u64,
    /// Handle of the QP.
    pub qp_handle: u32,
    /// Must be zero.
    pub reserved: u32,
}
layout!(DestroyQp, size = 16, response @ 0, qp_handle @ 8, reserved @ 12);

/// `struct ib_uverbs_destroy_qp_resp`: DESTROY_QP response; the caller must have
/// acknowledged this many async events before it frees the QP.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct DestroyQpResp {
    /// Async events delivered for the QP.
    pub events_reported: u32,
}
layout!(DestroyQpResp, size = 4, events_reported @ 0);

// ---------------------------------------------------------------------------------------
// Shared receive queues
// ---------------------------------------------------------------------------------------

/// `struct ib_uverbs_create_srq`: CREATE_SRQ request (basic SRQ); the driver's request
/// follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateSrq {
    /// User address of the [`CreateSrqResp`] buffer.
    pub response: u64,
    /// Opaque value returned in async events.
    pub user_handle: u64,
    /// Handle of the PD.
    pub pd_handle: u32,
    /// Requested queue depth.
    pub max_wr: u32,
    /// Requested scatter/gather entries per receive WR.
    pub max_sge: u32,
    /// Limit event threshold (0: disarmed).
    pub srq_limit: u32,
}
layout!(CreateSrq, size = 32, response @ 0, user_handle @ 8, pd_handle @ 16, max_wr @ 20,
    max_sge @ 24, srq_limit @ 28);

/// `struct ib_uverbs_create_srq_resp`: CREATE_SRQ response; the driver's response follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CreateSrqResp {
    /// Handle of the new SRQ.
    pub srq_handle: u32,
    /// Actual queue depth.
    pub max_wr: u32,
    /// Actual scatter/gather entries per receive WR.
    pub max_sge: u32,
    /// SRQ number (XRC SRQs).
    pub srqn: u32,
}
layout!(CreateSrqResp, size = 16, srq_handle @ 0, max_wr @ 4, max_sge @ 8, srqn @ 12);

/// `struct ib_uverbs_modify_srq`: MODIFY_SRQ request (no response); the driver's request
/// follows.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ModifySrq {
    /// Handle of the SRQ.
    pub srq_handle: u32,
    /// Attributes to change ([`srq_attr`]).
    pub attr_mask: u32,
    /// New queue depth ([`srq_attr::MAX_WR`]).
    pub max_wr: u32,
    /// New limit event threshold ([`srq_attr::LIMIT`]).
    pub srq_limit: u32,
}
layout!(ModifySrq, size = 16, srq_handle @ 0, attr_mask @ 4, max_wr @ 8, srq_limit @ 12);

/// `struct ib_uverbs_destroy_srq`: DESTROY_SRQ request.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct DestroySrq {
    /// User address of the [`DestroySrqResp`] buffer.
    pub response: u64,
    /// Handle of the SRQ.
    pub srq_handle: u32,
    /// Must be zero.
    pub reserved: u32,
}
layout!(DestroySrq, size = 16, response @ 0, srq_handle @ 8, reserved @ 12);

/// `struct ib_uverbs_destroy_srq_resp`: DESTROY_SRQ response.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct DestroySrqResp {
    /// Async events delivered for the SRQ.
    pub events_reported: u32,
}
layout!(DestroySrqResp, size = 4, events_reported @ 0);

// ---------------------------------------------------------------------------------------
// Event records read from the completion-channel and async-event fds
// ---------------------------------------------------------------------------------------

/// `struct ib_uverbs_comp_event_desc`: one `read()` record of a completion channel.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CompEventDesc {
    /// The CQ's [`CreateCq::user_handle`].
    pub cq_handle: u64,
}
layout!(CompEventDesc, size = 8, cq_handle @ 0);

/// `struct ib_uverbs_async_event_desc`: one `read()` record of the async-event fd.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct AsyncEventDesc {
    /// The object's `user_handle` (CQ, QP, SRQ, WQ), or the port number for port events.
    pub element: u64,
    /// Event type ([`event`]).
    pub event_type: u32,
    /// Reserved.
    pub reserved: u32,
}
layout!(AsyncEventDesc, size = 16, element @ 0, event_type @ 8, reserved @ 12);

// ---------------------------------------------------------------------------------------
// Value sets
// ---------------------------------------------------------------------------------------

/// QP states (`enum ibv_qp_state`, `IBV_QPS_*`; the kernel uapi has no names for them):
/// [`ModifyQp::qp_state`], [`QueryQpResp::qp_state`].
pub mod qp_state {
    /// `IBV_QPS_RESET`.
    pub const RESET: u8 = 0;
    /// `IBV_QPS_INIT`.
    pub const INIT: u8 = 1;
    /// `IBV_QPS_RTR`: ready to receive.
    pub const RTR: u8 = 2;
    /// `IBV_QPS_RTS`: ready to send.
    pub const RTS: u8 = 3;
    /// `IBV_QPS_SQD`: send queue drained.
    pub const SQD: u8 = 4;
    /// `IBV_QPS_SQE`: send queue error.
    pub const SQE: u8 = 5;
    /// `IBV_QPS_ERR`.
    pub const ERR: u8 = 6;
    /// `IBV_QPS_UNKNOWN`: libibverbs only; never on the wire.
    pub const UNKNOWN: u8 = 7;
}

/// Path migration states (`enum ibv_mig_state`, `IBV_MIG_*`): `path_mig_state`.
pub mod mig_state {
    /// `IBV_MIG_MIGRATED`.
    pub const MIGRATED: u8 = 0;
    /// `IBV_MIG_REARM`.
    pub const REARM: u8 = 1;
    /// `IBV_MIG_ARMED`.
    pub const ARMED: u8 = 2;
}

/// QP attribute mask bits (`enum ibv_qp_attr_mask`, `IBV_QP_*`; the kernel's `IB_QP_*` are
/// not uapi): [`ModifyQp::attr_mask`], [`QueryQp::attr_mask`]. Bits 21..24 (SMAC/VID) are
/// obsolete.
pub mod qp_attr {
    /// `IBV_QP_STATE`: `qp_state`.
    pub const STATE: u32 = 1 << 0;
    /// `IBV_QP_CUR_STATE`: `cur_qp_state`.
    pub const CUR_STATE: u32 = 1 << 1;
    /// `IBV_QP_EN_SQD_ASYNC_NOTIFY`: `en_sqd_async_notify`.
    pub const EN_SQD_ASYNC_NOTIFY: u32 = 1 << 2;
    /// `IBV_QP_ACCESS_FLAGS`: `qp_access_flags`.
    pub const ACCESS_FLAGS: u32 = 1 << 3;
    /// `IBV_QP_PKEY_INDEX`: `pkey_index`.
    pub const PKEY_INDEX: u32 = 1 << 4;
    /// `IBV_QP_PORT`: `port_num`.
    pub const PORT: u32 = 1 << 5;
    /// `IBV_QP_QKEY`: `qkey`.
    pub const QKEY: u32 = 1 << 6;
    /// `IBV_QP_AV`: `dest` (primary path).
    pub const AV: u32 = 1 << 7;
    /// `IBV_QP_PATH_MTU`: `path_mtu`.
    pub const PATH_MTU: u32 = 1 << 8;
    /// `IBV_QP_TIMEOUT`: `timeout`.
    pub const TIMEOUT: u32 = 1 << 9;
    /// `IBV_QP_RETRY_CNT`: `retry_cnt`.
    pub const RETRY_CNT: u32 = 1 << 10;
    /// `IBV_QP_RNR_RETRY`: `rnr_retry`.
    pub const RNR_RETRY: u32 = 1 << 11;
    /// `IBV_QP_RQ_PSN`: `rq_psn`.
    pub const RQ_PSN: u32 = 1 << 12;
    /// `IBV_QP_MAX_QP_RD_ATOMIC`: `max_rd_atomic`.
    pub const MAX_QP_RD_ATOMIC: u32 = 1 << 13;
    /// `IBV_QP_ALT_PATH`: `alt_dest`, `alt_pkey_index`, `alt_port_num`, `alt_timeout`.
    pub const ALT_PATH: u32 = 1 << 14;
    /// `IBV_QP_MIN_RNR_TIMER`: `min_rnr_timer`.
    pub const MIN_RNR_TIMER: u32 = 1 << 15;
    /// `IBV_QP_SQ_PSN`: `sq_psn`.
    pub const SQ_PSN: u32 = 1 << 16;
    /// `IBV_QP_MAX_DEST_RD_ATOMIC`: `max_dest_rd_atomic`.
    pub const MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
    /// `IBV_QP_PATH_MIG_STATE`: `path_mig_state`.
    pub const PATH_MIG_STATE: u32 = 1 << 18;
    /// `IBV_QP_CAP`: queue sizes.
    pub const CAP: u32 = 1 << 19;
    /// `IBV_QP_DEST_QPN`: `dest_qp_num`.
    pub const DEST_QPN: u32 = 1 << 20;
    /// `IBV_QP_RATE_LIMIT`: [`super::ExModifyQp::rate_limit`] (extended command only).
    pub const RATE_LIMIT: u32 = 1 << 25;
}

/// Memory access flags (`enum ib_uverbs_access_flags`, `IB_UVERBS_ACCESS_*`, equal to
/// `IBV_ACCESS_*`): [`RegMr::access_flags`], `qp_access_flags`.
pub mod access {
    /// `IB_UVERBS_ACCESS_LOCAL_WRITE`.
    pub const LOCAL_WRITE: u32 = 1 << 0;
    /// `IB_UVERBS_ACCESS_REMOTE_WRITE`.
    pub const REMOTE_WRITE: u32 = 1 << 1;
    /// `IB_UVERBS_ACCESS_REMOTE_READ`.
    pub const REMOTE_READ: u32 = 1 << 2;
    /// `IB_UVERBS_ACCESS_REMOTE_ATOMIC`.
    pub const REMOTE_ATOMIC: u32 = 1 << 3;
    /// `IB_UVERBS_ACCESS_MW_BIND`.
    pub const MW_BIND: u32 = 1 << 4;
    /// `IB_UVERBS_ACCESS_ZERO_BASED`: the region's addresses start at 0, not at `hca_va`.
    pub const ZERO_BASED: u32 = 1 << 5;
    /// `IB_UVERBS_ACCESS_ON_DEMAND`: on-demand paging.
    pub const ON_DEMAND: u32 = 1 << 6;
    /// `IB_UVERBS_ACCESS_HUGETLB`.
    pub const HUGETLB: u32 = 1 << 7;
    /// `IB_UVERBS_ACCESS_RELAXED_ORDERING` (an optional flag).
    pub const RELAXED_ORDERING: u32 = OPTIONAL_FIRST;
    /// `IB_UVERBS_ACCESS_OPTIONAL_FIRST`: lowest optional flag; a kernel that does not know
    /// an optional flag ignores it instead of failing.
    pub const OPTIONAL_FIRST: u32 = 1 << 20;
    /// `IB_UVERBS_ACCESS_OPTIONAL_LAST`: highest optional flag.
    pub const OPTIONAL_LAST: u32 = 1 << 29;
    /// `IB_UVERBS_ACCESS_OPTIONAL_RANGE`: all optional flag bits.
    pub const OPTIONAL_RANGE: u32 = ((OPTIONAL_LAST << 1) - 1) & !(OPTIONAL_FIRST - 1);
}

/// MTU codes (`enum ibv_mtu`, `IBV_MTU_*`): `path_mtu`, [`QueryPortResp::max_mtu`],
/// [`QueryPortResp::active_mtu`].
pub mod mtu {
    /// `IBV_MTU_256`.
    pub const MTU_256: u8 = 1;
    /// `IBV_MTU_512`.
    pub const MTU_512: u8 = 2;
    /// `IBV_MTU_1024`.
    pub const MTU_1024: u8 = 3;
    /// `IBV_MTU_2048`.
    pub const MTU_2048: u8 = 4;
    /// `IBV_MTU_4096`.
    pub const MTU_4096: u8 = 5;
}

/// Static rate codes (`enum ibv_rate`, `IBV_RATE_*`; IBA encoding, not monotonic):
/// [`QpDest::static_rate`].
pub mod rate {
    /// `IBV_RATE_MAX`: no limit.
    pub const MAX: u8 = 0;
    /// `IBV_RATE_2_5_GBPS`.
    pub const RATE_2_5_GBPS: u8 = 2;
    /// `IBV_RATE_5_GBPS`.
    pub const RATE_5_GBPS: u8 = 5;
    /// `IBV_RATE_10_GBPS`.
    pub const RATE_10_GBPS: u8 = 3;
    /// `IBV_RATE_20_GBPS`.
    pub const RATE_20_GBPS: u8 = 6;
    /// `IBV_RATE_30_GBPS`.
    pub const RATE_30_GBPS: u8 = 4;
    /// `IBV_RATE_40_GBPS`.
    pub const RATE_40_GBPS: u8 = 7;
    /// `IBV_RATE_60_GBPS`.
    pub const RATE_60_GBPS: u8 = 8;
    /// `IBV_RATE_80_GBPS`.
    pub const RATE_80_GBPS: u8 = 9;
    /// `IBV_RATE_120_GBPS`.
    pub const RATE_120_GBPS: u8 = 10;
    /// `IBV_RATE_14_GBPS`.
    pub const RATE_14_GBPS: u8 = 11;
    /// `IBV_RATE_56_GBPS`.
    pub const RATE_56_GBPS: u8 = 12;
    /// `IBV_RATE_112_GBPS`.
    pub const RATE_112_GBPS: u8 = 13;
    /// `IBV_RATE_168_GBPS`.
    pub const RATE_168_GBPS: u8 = 14;
    /// `IBV_RATE_25_GBPS`.
    pub const RATE_25_GBPS: u8 = 15;
    /// `IBV_RATE_100_GBPS`.
    pub const RATE_100_GBPS: u8 = 16;
    /// `IBV_RATE_200_GBPS`.
    pub const RATE_200_GBPS: u8 = 17;
    /// `IBV_RATE_300_GBPS`.
    pub const RATE_300_GBPS: u8 = 18;
    /// `IBV_RATE_28_GBPS`.
    pub const RATE_28_GBPS: u8 = 19;
    /// `IBV_RATE_50_GBPS`.
    pub const RATE_50_GBPS: u8 = 20;
    /// `IBV_RATE_400_GBPS`.
    pub const RATE_400_GBPS: u8 = 21;
    /// `IBV_RATE_600_GBPS`.
    pub const RATE_600_GBPS: u8 = 22;
    /// `IBV_RATE_800_GBPS`.
    pub const RATE_800_GBPS: u8 = 23;
    /// `IBV_RATE_1200_GBPS`.
    pub const RATE_1200_GBPS: u8 = 24;
}

/// QP types (`enum ib_uverbs_qp_type`, `IB_UVERBS_QPT_*`, equal to `IBV_QPT_*`):
/// [`CreateQp::qp_type`].
pub mod qp_type {
    /// `IB_UVERBS_QPT_RC`: reliable connected.
    pub const RC: u8 = 2;
    /// `IB_UVERBS_QPT_UC`: unreliable connected.
    pub const UC: u8 = 3;
    /// `IB_UVERBS_QPT_UD`: unreliable datagram.
    pub const UD: u8 = 4;
    /// `IB_UVERBS_QPT_RAW_PACKET`.
    pub const RAW_PACKET: u8 = 8;
    /// `IB_UVERBS_QPT_XRC_INI`: XRC initiator (`IBV_QPT_XRC_SEND`).
    pub const XRC_INI: u8 = 9;
    /// `IB_UVERBS_QPT_XRC_TGT`: XRC target (`IBV_QPT_XRC_RECV`).
    pub const XRC_TGT: u8 = 10;
    /// `IB_UVERBS_QPT_DRIVER`: driver-specific type.
    pub const DRIVER: u8 = 0xff;
}

/// QP creation flags (`enum ib_uverbs_qp_create_flags`, `IB_UVERBS_QP_CREATE_*`; plus
/// `IBV_QP_CREATE_SOURCE_QPN`): [`ExCreateQp::create_flags`].
pub mod qp_create_flags {
    /// `IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK`.
    pub const BLOCK_MULTICAST_LOOPBACK: u32 = 1 << 1;
    /// `IB_UVERBS_QP_CREATE_SCATTER_FCS`.
    pub const SCATTER_FCS: u32 = 1 << 8;
    /// `IB_UVERBS_QP_CREATE_CVLAN_STRIPPING`.
    pub const CVLAN_STRIPPING: u32 = 1 << 9;
    /// `IBV_QP_CREATE_SOURCE_QPN`: use [`super::ExCreateQp::source_qpn`] (no uapi name).
    pub const SOURCE_QPN: u32 = 1 << 10;
    /// `IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING`.
    pub const PCI_WRITE_END_PADDING: u32 = 1 << 11;
    /// `IB_UVERBS_QP_CREATE_SQ_SIG_ALL`.
    pub const SQ_SIG_ALL: u32 = 1 << 12;
}

/// Extended CREATE_QP optional fields (`enum ib_uverbs_create_qp_mask`):
/// [`ExCreateQp::comp_mask`].
pub mod create_qp_mask {
    /// `IB_UVERBS_CREATE_QP_MASK_IND_TABLE`: `rwq_ind_tbl_handle` is valid.
    pub const IND_TABLE: u32 = 1 << 0;
    /// `IB_UVERBS_CREATE_QP_SUP_COMP_MASK`: all bits the kernel knows.
    pub const SUP_COMP_MASK: u32 = IND_TABLE;
}

/// Extended CREATE_CQ flags (`enum ib_uverbs_ex_create_cq_flags`): [`ExCreateCq::flags`].
pub mod cq_flags {
    /// `IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION`: completions carry a timestamp.
    pub const TIMESTAMP_COMPLETION: u32 = 1 << 0;
    /// `IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN`: the HCA does not check for CQ overrun.
    pub const IGNORE_OVERRUN: u32 = 1 << 1;
}

/// SRQ attribute mask bits (`enum ibv_srq_attr_mask`, `IBV_SRQ_*`):
/// [`ModifySrq::attr_mask`].
pub mod srq_attr {
    /// `IBV_SRQ_MAX_WR`: resize to `max_wr`.
    pub const MAX_WR: u32 = 1 << 0;
    /// `IBV_SRQ_LIMIT`: arm the limit event at `srq_limit`.
    pub const LIMIT: u32 = 1 << 1;
}

/// Work completion opcodes: `enum ib_uverbs_wc_opcode` (`IB_UVERBS_WC_*`) for the send side,
/// `enum ibv_wc_opcode` (`IBV_WC_*`) for the values the kernel enum lacks.
pub mod wc_opcode {
    /// `IB_UVERBS_WC_SEND`.
    pub const SEND: u32 = 0;
    /// `IB_UVERBS_WC_RDMA_WRITE`.
    pub const RDMA_WRITE: u32 = 1;
    /// `IB_UVERBS_WC_RDMA_READ`.
    pub const RDMA_READ: u32 = 2;
    /// `IB_UVERBS_WC_COMP_SWAP`.
    pub const COMP_SWAP: u32 = 3;
    /// `IB_UVERBS_WC_FETCH_ADD`.
    pub const FETCH_ADD: u32 = 4;
    /// `IB_UVERBS_WC_BIND_MW`.
    pub const BIND_MW: u32 = 5;
    /// `IB_UVERBS_WC_LOCAL_INV`.
    pub const LOCAL_INV: u32 = 6;
    /// `IB_UVERBS_WC_TSO`.
    pub const TSO: u32 = 7;
    /// `IBV_WC_ATOMIC_WRITE`.
    pub const ATOMIC_WRITE: u32 = 9;
    /// `IBV_WC_RECV`: set in every receive opcode, so `opcode & RECV` tests for a receive.
    pub const RECV: u32 = 1 << 7;
    /// `IBV_WC_RECV_RDMA_WITH_IMM`.
    pub const RECV_RDMA_WITH_IMM: u32 = RECV + 1;
    /// `IBV_WC_TM_ADD`.
    pub const TM_ADD: u32 = RECV + 2;
    /// `IBV_WC_TM_DEL`.
    pub const TM_DEL: u32 = RECV + 3;
    /// `IBV_WC_TM_SYNC`.
    pub const TM_SYNC: u32 = RECV + 4;
    /// `IBV_WC_TM_RECV`.
    pub const TM_RECV: u32 = RECV + 5;
    /// `IBV_WC_TM_NO_TAG`.
    pub const TM_NO_TAG: u32 = RECV + 6;
    /// `IBV_WC_DRIVER1`.
    pub const DRIVER1: u32 = RECV + 7;
    /// `IBV_WC_DRIVER2`.
    pub const DRIVER2: u32 = RECV + 8;
    /// `IBV_WC_DRIVER3`.
    pub const DRIVER3: u32 = RECV + 9;
}

/// Work completion status (`enum ibv_wc_status`, `IBV_WC_*`; the kernel's `IB_WC_*` are
/// not uapi).
pub mod wc_status {
    /// `IBV_WC_SUCCESS`.
    pub const SUCCESS: u32 = 0;
    /// `IBV_WC_LOC_LEN_ERR`.
    pub const LOC_LEN_ERR: u32 = 1;
    /// `IBV_WC_LOC_QP_OP_ERR`.
    pub const LOC_QP_OP_ERR: u32 = 2;
    /// `IBV_WC_LOC_EEC_OP_ERR`.
    pub const LOC_EEC_OP_ERR: u32 = 3;
    /// `IBV_WC_LOC_PROT_ERR`.
    pub const LOC_PROT_ERR: u32 = 4;
    /// `IBV_WC_WR_FLUSH_ERR`.
    pub const WR_FLUSH_ERR: u32 = 5;
    /// `IBV_WC_MW_BIND_ERR`.
    pub const MW_BIND_ERR: u32 = 6;
    /// `IBV_WC_BAD_RESP_ERR`.
    pub const BAD_RESP_ERR: u32 = 7;
    /// `IBV_WC_LOC_ACCESS_ERR`.
    pub const LOC_ACCESS_ERR: u32 = 8;
    /// `IBV_WC_REM_INV_REQ_ERR`.
    pub const REM_INV_REQ_ERR: u32 = 9;
    /// `IBV_WC_REM_ACCESS_ERR`.
    pub const REM_ACCESS_ERR: u32 = 10;
    /// `IBV_WC_REM_OP_ERR`.
    pub const REM_OP_ERR: u32 = 11;
    /// `IBV_WC_RETRY_EXC_ERR`.
    pub const RETRY_EXC_ERR: u32 = 12;
    /// `IBV_WC_RNR_RETRY_EXC_ERR`.
    pub const RNR_RETRY_EXC_ERR: u32 = 13;
    /// `IBV_WC_LOC_RDD_VIOL_ERR`.
    pub const LOC_RDD_VIOL_ERR: u32 = 14;
    /// `IBV_WC_REM_INV_RD_REQ_ERR`.
    pub const REM_INV_RD_REQ_ERR: u32 = 15;
    /// `IBV_WC_REM_ABORT_ERR`.
    pub const REM_ABORT_ERR: u32 = 16;
    /// `IBV_WC_INV_EECN_ERR`.
    pub const INV_EECN_ERR: u32 = 17;
    /// `IBV_WC_INV_EEC_STATE_ERR`.
    pub const INV_EEC_STATE_ERR: u32 = 18;
    /// `IBV_WC_FATAL_ERR`.
    pub const FATAL_ERR: u32 = 19;
    /// `IBV_WC_RESP_TIMEOUT_ERR`.
    pub const RESP_TIMEOUT_ERR: u32 = 20;
    /// `IBV_WC_GENERAL_ERR`.
    pub const GENERAL_ERR: u32 = 21;
    /// `IBV_WC_TM_ERR`.
    pub const TM_ERR: u32 = 22;
    /// `IBV_WC_TM_RNDV_INCOMPLETE`.
    pub const TM_RNDV_INCOMPLETE: u32 = 23;
}

/// Work completion flags (`enum ibv_wc_flags`, `IBV_WC_*`).
pub mod wc_flags {
    /// `IBV_WC_GRH`: the receive buffer starts with a 40-byte GRH.
    pub const GRH: u32 = 1 << 0;
    /// `IBV_WC_WITH_IMM`: immediate data is valid.
    pub const WITH_IMM: u32 = 1 << 1;
    /// `IBV_WC_IP_CSUM_OK` (`1 << IBV_WC_IP_CSUM_OK_SHIFT`).
    pub const IP_CSUM_OK: u32 = 1 << 2;
    /// `IBV_WC_WITH_INV`: an rkey was invalidated.
    pub const WITH_INV: u32 = 1 << 3;
    /// `IBV_WC_TM_SYNC_REQ`.
    pub const TM_SYNC_REQ: u32 = 1 << 4;
    /// `IBV_WC_TM_MATCH`.
    pub const TM_MATCH: u32 = 1 << 5;
    /// `IBV_WC_TM_DATA_VALID`.
    pub const TM_DATA_VALID: u32 = 1 << 6;
}

/// Work request opcodes (`enum ib_uverbs_wr_opcode`, `IB_UVERBS_WR_*`).
pub mod wr_opcode {
    /// `IB_UVERBS_WR_RDMA_WRITE`.
    pub const RDMA_WRITE: u32 = 0;
    /// `IB_UVERBS_WR_RDMA_WRITE_WITH_IMM`.
    pub const RDMA_WRITE_WITH_IMM: u32 = 1;
    /// `IB_UVERBS_WR_SEND`.
    pub const SEND: u32 = 2;
    /// `IB_UVERBS_WR_SEND_WITH_IMM`.
    pub const SEND_WITH_IMM: u32 = 3;
    /// `IB_UVERBS_WR_RDMA_READ`.
    pub const RDMA_READ: u32 = 4;
    /// `IB_UVERBS_WR_ATOMIC_CMP_AND_SWP`.
    pub const ATOMIC_CMP_AND_SWP: u32 = 5;
    /// `IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD`.
    pub const ATOMIC_FETCH_AND_ADD: u32 = 6;
    /// `IB_UVERBS_WR_LOCAL_INV`.
    pub const LOCAL_INV: u32 = 7;
    /// `IB_UVERBS_WR_BIND_MW`.
    pub const BIND_MW: u32 = 8;
    /// `IB_UVERBS_WR_SEND_WITH_INV`.
    pub const SEND_WITH_INV: u32 = 9;
    /// `IB_UVERBS_WR_TSO`.
    pub const TSO: u32 = 10;
    /// `IB_UVERBS_WR_RDMA_READ_WITH_INV`.
    pub const RDMA_READ_WITH_INV: u32 = 11;
    /// `IB_UVERBS_WR_MASKED_ATOMIC_CMP_AND_SWP`.
    pub const MASKED_ATOMIC_CMP_AND_SWP: u32 = 12;
    /// `IB_UVERBS_WR_MASKED_ATOMIC_FETCH_AND_ADD`.
    pub const MASKED_ATOMIC_FETCH_AND_ADD: u32 = 13;
}

/// Send flags (`enum ibv_send_flags`, `IBV_SEND_*`; no uapi names).
pub mod send_flags {
    /// `IBV_SEND_FENCE`: wait for earlier RDMA READ/atomic operations.
    pub const FENCE: u32 = 1 << 0;
    /// `IBV_SEND_SIGNALED`: generate a completion.
    pub const SIGNALED: u32 = 1 << 1;
    /// `IBV_SEND_SOLICITED`: set the solicited-event bit.
    pub const SOLICITED: u32 = 1 << 2;
    /// `IBV_SEND_INLINE`: copy the data into the WQE.
    pub const INLINE: u32 = 1 << 3;
    /// `IBV_SEND_IP_CSUM`: offload the IP checksum.
    pub const IP_CSUM: u32 = 1 << 4;
}

/// Async event types (`enum ibv_event_type`, `IBV_EVENT_*`, equal to the kernel's
/// `enum ib_event_type`): [`AsyncEventDesc::event_type`].
pub mod event {
    /// `IBV_EVENT_CQ_ERR`.
    pub const CQ_ERR: u32 = 0;
    /// `IBV_EVENT_QP_FATAL`.
    pub const QP_FATAL: u32 = 1;
    /// `IBV_EVENT_QP_REQ_ERR`.
    pub const QP_REQ_ERR: u32 = 2;
    /// `IBV_EVENT_QP_ACCESS_ERR`.
    pub const QP_ACCESS_ERR: u32 = 3;
    /// `IBV_EVENT_COMM_EST`: communication established (first packet in RTR).
    pub const COMM_EST: u32 = 4;
    /// `IBV_EVENT_SQ_DRAINED`.
    pub const SQ_DRAINED: u32 = 5;
    /// `IBV_EVENT_PATH_MIG`.
    pub const PATH_MIG: u32 = 6;
    /// `IBV_EVENT_PATH_MIG_ERR`.
    pub const PATH_MIG_ERR: u32 = 7;
    /// `IBV_EVENT_DEVICE_FATAL`.
    pub const DEVICE_FATAL: u32 = 8;
    /// `IBV_EVENT_PORT_ACTIVE`.
    pub const PORT_ACTIVE: u32 = 9;
    /// `IBV_EVENT_PORT_ERR`.
    pub const PORT_ERR: u32 = 10;
    /// `IBV_EVENT_LID_CHANGE`.
    pub const LID_CHANGE: u32 = 11;
    /// `IBV_EVENT_PKEY_CHANGE`.
    pub const PKEY_CHANGE: u32 = 12;
    /// `IBV_EVENT_SM_CHANGE`.
    pub const SM_CHANGE: u32 = 13;
    /// `IBV_EVENT_SRQ_ERR`.
    pub const SRQ_ERR: u32 = 14;
    /// `IBV_EVENT_SRQ_LIMIT_REACHED`.
    pub const SRQ_LIMIT_REACHED: u32 = 15;
    /// `IBV_EVENT_QP_LAST_WQE_REACHED`.
    pub const QP_LAST_WQE_REACHED: u32 = 16;
    /// `IBV_EVENT_CLIENT_REREGISTER`.
    pub const CLIENT_REREGISTER: u32 = 17;
    /// `IBV_EVENT_GID_CHANGE`.
    pub const GID_CHANGE: u32 = 18;
    /// `IBV_EVENT_WQ_FATAL`.
    pub const WQ_FATAL: u32 = 19;
}

/// Logical port states (`enum ibv_port_state`, `IBV_PORT_*`): [`QueryPortResp::state`].
pub mod port_state {
    /// `IBV_PORT_NOP`.
    pub const NOP: u8 = 0;
    /// `IBV_PORT_DOWN`.
    pub const DOWN: u8 = 1;
    /// `IBV_PORT_INIT`.
    pub const INIT: u8 = 2;
    /// `IBV_PORT_ARMED`.
    pub const ARMED: u8 = 3;
    /// `IBV_PORT_ACTIVE`.
    pub const ACTIVE: u8 = 4;
    /// `IBV_PORT_ACTIVE_DEFER`.
    pub const ACTIVE_DEFER: u8 = 5;
}

/// Link layers (the anonymous `IBV_LINK_LAYER_*` enum): [`QueryPortResp::link_layer`].
pub mod link_layer {
    /// `IBV_LINK_LAYER_UNSPECIFIED`: treated as InfiniBand.
    pub const UNSPECIFIED: u8 = 0;
    /// `IBV_LINK_LAYER_INFINIBAND`.
    pub const INFINIBAND: u8 = 1;
    /// `IBV_LINK_LAYER_ETHERNET`: RoCE.
    pub const ETHERNET: u8 = 2;
}

/// Port flags (`enum ib_uverbs_query_port_flags`): [`QueryPortResp::flags`].
pub mod port_flags {
    /// `IB_UVERBS_QPF_GRH_REQUIRED`: every address vector on this port needs a GRH.
    pub const GRH_REQUIRED: u8 = 1 << 0;
}

/// Port capabilities (`enum ib_uverbs_query_port_cap_flags`, `IB_UVERBS_PCF_*`):
/// [`QueryPortResp::port_cap_flags`].
pub mod port_cap {
    /// `IB_UVERBS_PCF_SM`.
    pub const SM: u32 = 1 << 1;
    /// `IB_UVERBS_PCF_NOTICE_SUP`.
    pub const NOTICE_SUP: u32 = 1 << 2;
    /// `IB_UVERBS_PCF_TRAP_SUP`.
    pub const TRAP_SUP: u32 = 1 << 3;
    /// `IB_UVERBS_PCF_OPT_IPD_SUP`.
    pub const OPT_IPD_SUP: u32 = 1 << 4;
    /// `IB_UVERBS_PCF_AUTO_MIGR_SUP`.
    pub const AUTO_MIGR_SUP: u32 = 1 << 5;
    /// `IB_UVERBS_PCF_SL_MAP_SUP`.
    pub const SL_MAP_SUP: u32 = 1 << 6;
    /// `IB_UVERBS_PCF_MKEY_NVRAM`.
    pub const MKEY_NVRAM: u32 = 1 << 7;
    /// `IB_UVERBS_PCF_PKEY_NVRAM`.
    pub const PKEY_NVRAM: u32 = 1 << 8;
    /// `IB_UVERBS_PCF_LED_INFO_SUP`.
    pub const LED_INFO_SUP: u32 = 1 << 9;
    /// `IB_UVERBS_PCF_SM_DISABLED`.
    pub const SM_DISABLED: u32 = 1 << 10;
    /// `IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP`.
    pub const SYS_IMAGE_GUID_SUP: u32 = 1 << 11;
    /// `IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP`.
    pub const PKEY_SW_EXT_PORT_TRAP_SUP: u32 = 1 << 12;
    /// `IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP`.
    pub const EXTENDED_SPEEDS_SUP: u32 = 1 << 14;
    /// `IB_UVERBS_PCF_CM_SUP`.
    pub const CM_SUP: u32 = 1 << 16;
    /// `IB_UVERBS_PCF_SNMP_TUNNEL_SUP`.
    pub const SNMP_TUNNEL_SUP: u32 = 1 << 17;
    /// `IB_UVERBS_PCF_REINIT_SUP`.
    pub const REINIT_SUP: u32 = 1 << 18;
    /// `IB_UVERBS_PCF_DEVICE_MGMT_SUP`.
    pub const DEVICE_MGMT_SUP: u32 = 1 << 19;
    /// `IB_UVERBS_PCF_VENDOR_CLASS_SUP`.
    pub const VENDOR_CLASS_SUP: u32 = 1 << 20;
    /// `IB_UVERBS_PCF_DR_NOTICE_SUP`.
    pub const DR_NOTICE_SUP: u32 = 1 << 21;
    /// `IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP`.
    pub const CAP_MASK_NOTICE_SUP: u32 = 1 << 22;
    /// `IB_UVERBS_PCF_BOOT_MGMT_SUP`.
    pub const BOOT_MGMT_SUP: u32 = 1 << 23;
    /// `IB_UVERBS_PCF_LINK_LATENCY_SUP`.
    pub const LINK_LATENCY_SUP: u32 = 1 << 24;
    /// `IB_UVERBS_PCF_CLIENT_REG_SUP`.
    pub const CLIENT_REG_SUP: u32 = 1 << 25;
    /// `IB_UVERBS_PCF_IP_BASED_GIDS`: Linux-internal flag (RoCE: GIDs are IP addresses).
    pub const IP_BASED_GIDS: u32 = 1 << 26;
    /// `IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP`.
    pub const LINK_SPEED_WIDTH_TABLE_SUP: u32 = 1 << 27;
    /// `IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP`.
    pub const VENDOR_SPECIFIC_MADS_TABLE_SUP: u32 = 1 << 28;
    /// `IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP`.
    pub const MCAST_PKEY_TRAP_SUPPRESSION_SUP: u32 = 1 << 29;
    /// `IB_UVERBS_PCF_MCAST_FDB_TOP_SUP`.
    pub const MCAST_FDB_TOP_SUP: u32 = 1 << 30;
    /// `IB_UVERBS_PCF_HIERARCHY_INFO_SUP`.
    pub const HIERARCHY_INFO_SUP: u32 = 1 << 31;
}

/// Atomic operation support (`enum ibv_atomic_cap`, `IBV_ATOMIC_*`):
/// [`QueryDeviceResp::atomic_cap`].
pub mod atomic_cap {
    /// `IBV_ATOMIC_NONE`.
    pub const NONE: u32 = 0;
    /// `IBV_ATOMIC_HCA`: atomic within this HCA only.
    pub const HCA: u32 = 1;
    /// `IBV_ATOMIC_GLOB`: atomic with respect to all memory accesses.
    pub const GLOB: u32 = 2;
}

/// Device capabilities (`enum ib_uverbs_device_cap_flags`, `IB_UVERBS_DEVICE_*`, equal to
/// `IBV_DEVICE_*`): [`ExQueryDeviceResp::device_cap_flags_ex`]; the low 32 bits also appear
/// in [`QueryDeviceResp::device_cap_flags`]. Bits 9, 15, 16, 19, 22, 27, 30..33, 35 and 37
/// may be set by old kernels and mean nothing.
pub mod device_cap {
    /// `IB_UVERBS_DEVICE_RESIZE_MAX_WR`.
    pub const RESIZE_MAX_WR: u64 = 1 << 0;
    /// `IB_UVERBS_DEVICE_BAD_PKEY_CNTR`.
    pub const BAD_PKEY_CNTR: u64 = 1 << 1;
    /// `IB_UVERBS_DEVICE_BAD_QKEY_CNTR`.
    pub const BAD_QKEY_CNTR: u64 = 1 << 2;
    /// `IB_UVERBS_DEVICE_RAW_MULTI`.
    pub const RAW_MULTI: u64 = 1 << 3;
    /// `IB_UVERBS_DEVICE_AUTO_PATH_MIG`.
    pub const AUTO_PATH_MIG: u64 = 1 << 4;
    /// `IB_UVERBS_DEVICE_CHANGE_PHY_PORT`.
    pub const CHANGE_PHY_PORT: u64 = 1 << 5;
    /// `IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE`.
    pub const UD_AV_PORT_ENFORCE: u64 = 1 << 6;
    /// `IB_UVERBS_DEVICE_CURR_QP_STATE_MOD`.
    pub const CURR_QP_STATE_MOD: u64 = 1 << 7;
    /// `IB_UVERBS_DEVICE_SHUTDOWN_PORT`.
    pub const SHUTDOWN_PORT: u64 = 1 << 8;
    /// `IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT`.
    pub const PORT_ACTIVE_EVENT: u64 = 1 << 10;
    /// `IB_UVERBS_DEVICE_SYS_IMAGE_GUID`.
    pub const SYS_IMAGE_GUID: u64 = 1 << 11;
    /// `IB_UVERBS_DEVICE_RC_RNR_NAK_GEN`.
    pub const RC_RNR_NAK_GEN: u64 = 1 << 12;
    /// `IB_UVERBS_DEVICE_SRQ_RESIZE`.
    pub const SRQ_RESIZE: u64 = 1 << 13;
    /// `IB_UVERBS_DEVICE_N_NOTIFY_CQ`.
    pub const N_NOTIFY_CQ: u64 = 1 << 14;
    /// `IB_UVERBS_DEVICE_MEM_WINDOW`.
    pub const MEM_WINDOW: u64 = 1 << 17;
    /// `IB_UVERBS_DEVICE_UD_IP_CSUM`.
    pub const UD_IP_CSUM: u64 = 1 << 18;
    /// `IB_UVERBS_DEVICE_XRC`.
    pub const XRC: u64 = 1 << 20;
    /// `IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS`.
    pub const MEM_MGT_EXTENSIONS: u64 = 1 << 21;
    /// `IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A`.
    pub const MEM_WINDOW_TYPE_2A: u64 = 1 << 23;
    /// `IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B`.
    pub const MEM_WINDOW_TYPE_2B: u64 = 1 << 24;
    /// `IB_UVERBS_DEVICE_RC_IP_CSUM`.
    pub const RC_IP_CSUM: u64 = 1 << 25;
    /// `IB_UVERBS_DEVICE_RAW_IP_CSUM` (deprecated: [`super::raw_packet_cap::IP_CSUM`]).
    pub const RAW_IP_CSUM: u64 = 1 << 26;
    /// `IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING`.
    pub const MANAGED_FLOW_STEERING: u64 = 1 << 29;
    /// `IB_UVERBS_DEVICE_RAW_SCATTER_FCS` (deprecated:
    /// [`super::raw_packet_cap::SCATTER_FCS`]).
    pub const RAW_SCATTER_FCS: u64 = 1 << 34;
    /// `IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING`.
    pub const PCI_WRITE_END_PADDING: u64 = 1 << 36;
}

/// Raw packet QP capabilities (`enum ib_uverbs_raw_packet_caps`):
/// [`ExQueryDeviceResp::raw_packet_caps`].
pub mod raw_packet_cap {
    /// `IB_UVERBS_RAW_PACKET_CAP_CVLAN_STRIPPING`.
    pub const CVLAN_STRIPPING: u32 = 1 << 0;
    /// `IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS`.
    pub const SCATTER_FCS: u32 = 1 << 1;
    /// `IB_UVERBS_RAW_PACKET_CAP_IP_CSUM`.
    pub const IP_CSUM: u32 = 1 << 2;
    /// `IB_UVERBS_RAW_PACKET_CAP_DELAY_DROP`.
    pub const DELAY_DROP: u32 = 1 << 3;
}

/// General on-demand paging capabilities (`enum ibv_odp_general_caps`):
/// [`OdpCaps::general_caps`].
pub mod odp_general {
    /// `IBV_ODP_SUPPORT`: ODP is supported.
    pub const SUPPORT: u64 = 1 << 0;
    /// `IBV_ODP_SUPPORT_IMPLICIT`: implicit (whole address space) ODP is supported.
    pub const SUPPORT_IMPLICIT: u64 = 1 << 1;
}

/// Per-transport on-demand paging capabilities (`enum ibv_odp_transport_cap_bits`):
/// [`OdpPerTransportCaps`], [`ExQueryDeviceResp::xrc_odp_caps`].
pub mod odp_transport {
    /// `IBV_ODP_SUPPORT_SEND`.
    pub const SEND: u32 = 1 << 0;
    /// `IBV_ODP_SUPPORT_RECV`.
    pub const RECV: u32 = 1 << 1;
    /// `IBV_ODP_SUPPORT_WRITE`.
    pub const WRITE: u32 = 1 << 2;
    /// `IBV_ODP_SUPPORT_READ`.
    pub const READ: u32 = 1 << 3;
    /// `IBV_ODP_SUPPORT_ATOMIC`.
    pub const ATOMIC: u32 = 1 << 4;
    /// `IBV_ODP_SUPPORT_SRQ_RECV`.
    pub const SRQ_RECV: u32 = 1 << 5;
}

/// Tag-matching capability flags (`enum ibv_tm_cap_flags`): [`TmCaps::flags`].
pub mod tm_cap {
    /// `IBV_TM_CAP_RC`: tag matching on RC QPs.
    pub const RC: u32 = 1 << 0;
}
