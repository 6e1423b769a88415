//! The IB extension (`dat_ib_extensions.h`, extension API 2.0.9): extended event data, the
//! address handle of UD, collective types, and the extension's own enums. Values that extend
//! a core enum (`DAT_IB_DTO_*`, `DAT_IB_HANDLE_TYPE_*`, `DAT_IB_MEM_PRIV_REMOTE_ATOMIC`,
//! `DAT_IB_SERVICE_TYPE_UD`, `DAT_IB_EVD_EXTENSION_FLAG`, the IB event numbers and return
//! types) are in the core modules ([`dtos`], [`handle_type`], ...).

use core::ffi::c_void;

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use super::*;
use crate::layout::layout;

/// `DAT_IB_EXTENSION_VERSION`: 2.0.9, reported in `IaAttr::extension_version`.
pub const IB_EXTENSION_VERSION: Count = 209;

/// `DAT_IB_EXT_TYPE` ([`ib_ext_type`]).
pub type IbExtType = u32;
/// `DAT_IB_STATUS` ([`ib_status`]).
pub type IbStatus = u32;
/// `DAT_IA_COUNTER_TYPE` ([`ia_counter_type`]).
pub type IaCounterType = u32;
/// `DAT_IB_COLLECTIVE_DATA_TYPE` ([`ib_collective_type`]).
pub type IbCollectiveDataType = u32;
/// `DAT_IB_COLLECTIVE_REDUCE_DATA_OP` ([`ib_reduce_op`]).
pub type IbCollectiveReduceDataOp = u32;
/// `DAT_IB_COLLECTIVE_RANK`: a rank in a collective group.
pub type IbCollectiveRank = u32;
/// `DAT_IB_COLLECTIVE_ID`: a network-unique collective group id.
pub type IbCollectiveId = u32;
/// `DAT_IB_COLLECTIVE_MEMBER`: opaque member address information.
pub type IbCollectiveMember = *mut c_void;

/// `struct ibv_ah`: opaque; `IbAddrHandle::ah` points to the provider's own address handle
/// object (ferrodat's, not libibverbs').
#[repr(C)]
#[derive(Debug)]
pub struct IbvAh {
    _opaque: [u8; 0],
}

/// `DAT_IB_ADDR_HANDLE`: a UD destination, returned in extended UD connection events and
/// passed to `ib_op::UD_SEND`.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct IbAddrHandle {
    /// The address handle.
    pub ah: *mut IbvAh,
    /// Remote QP number.
    pub qpn: u32,
    /// Remote IA address.
    pub ia_addr: SockAddr6,
}
layout!(IbAddrHandle, size = 40, ah @ 0, qpn @ 8, ia_addr @ 12);

/// `DAT_IB_IMMED_DATA`: the immediate data of an extended completion.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct IbImmedData {
    /// The 32-bit immediate value.
    pub data: u32,
}
layout!(IbImmedData, size = 4, data @ 0);

/// `DAT_IB_COLLECTIVE_EVENT_DATA`: data of a collective completion.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct IbCollectiveEventData {
    /// The collective handle.
    pub handle: Handle,
    /// The consumer's context.
    pub context: Context,
}
layout!(IbCollectiveEventData, size = 16, handle @ 0, context @ 8);

/// The unnamed union `val` of `DAT_IB_EXTENSION_EVENT_DATA`.
#[repr(C)]
#[derive(Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub union IbExtensionEventVal {
    /// Immediate data ([`ib_ext_type::RDMA_WRITE_IMMED_DATA`], [`ib_ext_type::RECV_IMMED_DATA`]).
    pub immed: IbImmedData,
}
layout!(IbExtensionEventVal, size = 4, immed @ 0);

/// The anonymous union of `DAT_IB_EXTENSION_EVENT_DATA` (C accesses its members directly as
/// `remote_ah` and `coll`).
#[repr(C)]
#[derive(Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub union IbExtensionEventAnon {
    /// UD address handle (UD connection events).
    pub remote_ah: IbAddrHandle,
    /// Collective data ([`event::IB_COLLECTIVE_EVENT`]).
    pub coll: IbCollectiveEventData,
}
layout!(IbExtensionEventAnon, size = 40, remote_ah @ 0, coll @ 0);

/// `DAT_IB_EXTENSION_EVENT_DATA`: what `Event::event_extension_data` holds for IB extension
/// events (`event_number >= event::IB_EXTENSION_RANGE_BASE`); exactly its 64 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct IbExtensionEventData {
    /// Kind of extended completion ([`ib_ext_type`]).
    pub r#type: IbExtType,
    /// Status ([`ib_status`]).
    pub status: IbStatus,
    /// Immediate data.
    pub val: IbExtensionEventVal,
    /// The anonymous union: `remote_ah` or `coll`.
    pub anon: IbExtensionEventAnon,
    /// UD: the CM handle to release with `ib_op::UD_CM_FREE`.
    pub context: Context,
}
layout!(IbExtensionEventData, size = 64, r#type @ 0, status @ 4, val @ 8, anon @ 16,
    context @ 56);
const _: () = assert!(size_of::<IbExtensionEventData>() == size_of::<[u64; 8]>());

/// `DAT_IB_COLLECTIVE_GROUP`: process layout of a collective group.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct IbCollectiveGroup {
    /// Processes on this node.
    pub local_size: i32,
    /// My rank within the node.
    pub local_rank: i32,
    /// Global rank of each local process.
    pub local_ranks: *mut i32,
    /// Number of nodes (one external process each).
    pub external_size: i32,
    /// My rank among the external processes, or -1.
    pub external_rank: i32,
    /// Global rank of each external process.
    pub external_ranks: *mut i32,
    /// Global rank to local rank, -1 if on another node.
    pub intranode_table: *mut i32,
    /// Global rank to external rank, -1 if not external.
    pub internode_table: *mut i32,
    /// Whether the group is the whole world.
    pub is_comm_world: i32,
}
layout!(IbCollectiveGroup, size = 56, local_size @ 0, local_rank @ 4, local_ranks @ 8,
    external_size @ 16, external_rank @ 20, external_ranks @ 24, intranode_table @ 32,
    internode_table @ 40, is_comm_world @ 48);

opaque_debug!(IbExtensionEventVal, IbExtensionEventAnon);

/// The IB extension's provider-specific attribute names (`DAT_IB_ATTR_*`, `DAT_IB_COLL_*`),
/// listed in `ProviderAttr::provider_specific_attr` to advertise operations.
pub mod ib_attr {
    use core::ffi::CStr;
    /// `DAT_IB_ATTR_COUNTERS`: counters support.
    pub const COUNTERS: &CStr = c"DAT_COUNTERS";
    /// `DAT_IB_ATTR_FETCH_AND_ADD`: fetch and add support.
    pub const FETCH_AND_ADD: &CStr = c"DAT_IB_FETCH_AND_ADD";
    /// `DAT_IB_ATTR_CMP_AND_SWAP`: compare and swap support.
    pub const CMP_AND_SWAP: &CStr = c"DAT_IB_CMP_AND_SWAP";
    /// `DAT_IB_ATTR_IMMED_DATA`: immediate data support.
    pub const IMMED_DATA: &CStr = c"DAT_IB_IMMED_DATA";
    /// `DAT_IB_ATTR_UD`: unreliable datagram support.
    pub const UD: &CStr = c"DAT_IB_UD";
    /// `DAT_IB_COLL_SET_CLOCK`: collective set clock support.
    pub const COLL_SET_CLOCK: &CStr = c"DAT_COLL_SET_CLOCK";
    /// `DAT_IB_COLL_READ_CLOCK`: collective read clock support.
    pub const COLL_READ_CLOCK: &CStr = c"DAT_COLL_READ_CLOCK";
    /// `DAT_IB_COLL_BROADCAST`: collective broadcast support.
    pub const COLL_BROADCAST: &CStr = c"DAT_COLL_BROADCAST";
    /// `DAT_IB_COLL_BARRIER`: collective barrier support.
    pub const COLL_BARRIER: &CStr = c"DAT_COLL_BARRIER";
    /// `DAT_IB_COLL_SCATTER`: collective scatter support.
    pub const COLL_SCATTER: &CStr = c"DAT_COLL_SCATTER";
    /// `DAT_IB_COLL_SCATTERV`: collective scatterv support.
    pub const COLL_SCATTERV: &CStr = c"DAT_COLL_SCATTERV";
    /// `DAT_IB_COLL_GATHER`: collective gather support.
    pub const COLL_GATHER: &CStr = c"DAT_COLL_GATHER";
    /// `DAT_IB_COLL_GATHERV`: collective gatherv support.
    pub const COLL_GATHERV: &CStr = c"DAT_COLL_GATHERV";
    /// `DAT_IB_COLL_ALLGATHER`: collective allgather support.
    pub const COLL_ALLGATHER: &CStr = c"DAT_COLL_ALLGATHER";
    /// `DAT_IB_COLL_ALLGATHERV`: collective allgatherv support.
    pub const COLL_ALLGATHERV: &CStr = c"DAT_COLL_ALLGATHERV";
    /// `DAT_IB_COLL_ALLTOALL`: collective alltoall support.
    pub const COLL_ALLTOALL: &CStr = c"DAT_COLL_ALLTOALL";
    /// `DAT_IB_COLL_ALLTOALLV`: collective alltoallv support.
    pub const COLL_ALLTOALLV: &CStr = c"DAT_COLL_ALLTOALLV";
    /// `DAT_IB_COLL_REDUCE`: collective reduce support.
    pub const COLL_REDUCE: &CStr = c"DAT_COLL_REDUCE";
    /// `DAT_IB_COLL_ALLREDUCE`: collective allreduce support.
    pub const COLL_ALLREDUCE: &CStr = c"DAT_COLL_ALLREDUCE";
    /// `DAT_IB_COLL_REDUCE_SCATTER`: collective reduce scatter support.
    pub const COLL_REDUCE_SCATTER: &CStr = c"DAT_COLL_REDUCE_SCATTER";
    /// `DAT_IB_COLL_SCAN`: collective scan support.
    pub const COLL_SCAN: &CStr = c"DAT_COLL_SCAN";
}

/// `DAT_IB_OP` (`dat_ib_extensions.h`): the `DAT_EXTENDED_OP` values of the IB extension, passed
/// to `Provider::handle_extendedop_func` with the operation's arguments in the `va_list`.
pub mod ib_op {
    use crate::dat::ExtendedOp;
    /// `DAT_IB_FETCH_AND_ADD_OP`: atomic fetch and add; va_args: u64 add, `*mut LmrTriplet`,
    /// cookie, `*mut RmrTriplet`, flags.
    pub const FETCH_AND_ADD: ExtendedOp = 0;
    /// `DAT_IB_CMP_AND_SWAP_OP`: atomic compare and swap; va_args: u64 compare, u64 swap, `*mut
    /// LmrTriplet`, cookie, `*mut RmrTriplet`, flags.
    pub const CMP_AND_SWAP: ExtendedOp = 1;
    /// `DAT_IB_RDMA_WRITE_IMMED_OP`: RDMA write with immediate; va_args: count, `*mut LmrTriplet`,
    /// cookie, `*mut RmrTriplet`, u32 immediate, flags.
    pub const RDMA_WRITE_IMMED: ExtendedOp = 2;
    /// `DAT_IB_UD_SEND_OP`: UD send; va_args: count, `*mut LmrTriplet`, `*mut IbAddrHandle`,
    /// cookie, flags.
    pub const UD_SEND: ExtendedOp = 3;
    /// `DAT_IB_QUERY_COUNTERS_OP`: query counters; va_args: int counter, `*mut u64`, int reset.
    pub const QUERY_COUNTERS: ExtendedOp = 4;
    /// `DAT_IB_PRINT_COUNTERS_OP`: print counters; va_args: int counter, int reset.
    pub const PRINT_COUNTERS: ExtendedOp = 5;
    /// `DAT_IB_COLLECTIVE_CREATE_MEMBER_OP`.
    pub const COLLECTIVE_CREATE_MEMBER: ExtendedOp = 6;
    /// `DAT_IB_COLLECTIVE_FREE_MEMBER_OP`.
    pub const COLLECTIVE_FREE_MEMBER: ExtendedOp = 7;
    /// `DAT_IB_COLLECTIVE_CREATE_GROUP_OP`.
    pub const COLLECTIVE_CREATE_GROUP: ExtendedOp = 8;
    /// `DAT_IB_COLLECTIVE_FREE_GROUP_OP`.
    pub const COLLECTIVE_FREE_GROUP: ExtendedOp = 9;
    /// `DAT_IB_COLLECTIVE_SET_CLOCK_OP`.
    pub const COLLECTIVE_SET_CLOCK: ExtendedOp = 10;
    /// `DAT_IB_COLLECTIVE_READ_CLOCK_OP`.
    pub const COLLECTIVE_READ_CLOCK: ExtendedOp = 11;
    /// `DAT_IB_COLLECTIVE_SCATTER_OP`.
    pub const COLLECTIVE_SCATTER: ExtendedOp = 12;
    /// `DAT_IB_COLLECTIVE_SCATTERV_OP`.
    pub const COLLECTIVE_SCATTERV: ExtendedOp = 13;
    /// `DAT_IB_COLLECTIVE_GATHER_OP`.
    pub const COLLECTIVE_GATHER: ExtendedOp = 14;
    /// `DAT_IB_COLLECTIVE_GATHERV_OP`.
    pub const COLLECTIVE_GATHERV: ExtendedOp = 15;
    /// `DAT_IB_COLLECTIVE_ALLGATHER_OP`.
    pub const COLLECTIVE_ALLGATHER: ExtendedOp = 16;
    /// `DAT_IB_COLLECTIVE_ALLGATHERV_OP`.
    pub const COLLECTIVE_ALLGATHERV: ExtendedOp = 17;
    /// `DAT_IB_COLLECTIVE_ALLTOALL_OP`.
    pub const COLLECTIVE_ALLTOALL: ExtendedOp = 18;
    /// `DAT_IB_COLLECTIVE_ALLTOALLV_OP`.
    pub const COLLECTIVE_ALLTOALLV: ExtendedOp = 19;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP`.
    pub const COLLECTIVE_REDUCE: ExtendedOp = 20;
    /// `DAT_IB_COLLECTIVE_ALLREDUCE_OP`.
    pub const COLLECTIVE_ALLREDUCE: ExtendedOp = 21;
    /// `DAT_IB_COLLECTIVE_REDUCE_SCATTER_OP`.
    pub const COLLECTIVE_REDUCE_SCATTER: ExtendedOp = 22;
    /// `DAT_IB_COLLECTIVE_SCAN_OP`.
    pub const COLLECTIVE_SCAN: ExtendedOp = 23;
    /// `DAT_IB_COLLECTIVE_BROADCAST_OP`.
    pub const COLLECTIVE_BROADCAST: ExtendedOp = 24;
    /// `DAT_IB_COLLECTIVE_BARRIER_OP`.
    pub const COLLECTIVE_BARRIER: ExtendedOp = 25;
    /// `DAT_IB_START_COUNTERS_OP`: start sampling IA counters; va_args: counter type.
    pub const START_COUNTERS: ExtendedOp = 26;
    /// `DAT_IB_STOP_COUNTERS_OP`: stop sampling IA counters; va_args: counter type.
    pub const STOP_COUNTERS: ExtendedOp = 27;
    /// `DAT_IB_UD_CM_FREE_OP`: free a UD CM object; va_args: `Context`.
    pub const UD_CM_FREE: ExtendedOp = 28;
    /// `DAT_IB_UD_AH_FREE_OP`: free a UD address handle; va_args: `*mut IbAddrHandle`.
    pub const UD_AH_FREE: ExtendedOp = 29;
    /// `DAT_IB_OPEN_QUERY_OP`: fast attribute query without a full open (the handle argument is the
    /// IA name).
    pub const OPEN_QUERY: ExtendedOp = 0x1000;
    /// `DAT_IB_CLOSE_QUERY_OP`: ends an [`OPEN_QUERY`].
    pub const CLOSE_QUERY: ExtendedOp = 0x2000;
}

/// `DAT_IB_EXT_TYPE` (`dat_ib_extensions.h`): `IbExtensionEventData::type`, the kind of extended
/// completion reported with `event::IB_DTO_EVENT` (and the UD/collective events).
pub mod ib_ext_type {
    use crate::dat::IbExtType;
    /// `DAT_IB_FETCH_AND_ADD`: a fetch and add completed.
    pub const FETCH_AND_ADD: IbExtType = 0;
    /// `DAT_IB_CMP_AND_SWAP`: a compare and swap completed.
    pub const CMP_AND_SWAP: IbExtType = 1;
    /// `DAT_IB_RDMA_WRITE_IMMED`: an RDMA write with immediate completed (requester).
    pub const RDMA_WRITE_IMMED: IbExtType = 2;
    /// `DAT_IB_RDMA_WRITE_IMMED_DATA`: an RDMA write with immediate arrived (`val.immed` holds the
    /// data).
    pub const RDMA_WRITE_IMMED_DATA: IbExtType = 3;
    /// `DAT_IB_RECV_IMMED_DATA`: a send with immediate arrived (`val.immed` holds the data).
    pub const RECV_IMMED_DATA: IbExtType = 4;
    /// `DAT_IB_UD_CONNECT_REQUEST`: UD connection request.
    pub const UD_CONNECT_REQUEST: IbExtType = 5;
    /// `DAT_IB_UD_REMOTE_AH`: UD remote address handle resolved (active side, `remote_ah`).
    pub const UD_REMOTE_AH: IbExtType = 6;
    /// `DAT_IB_UD_PASSIVE_REMOTE_AH`: UD remote address handle resolved (passive side,
    /// `remote_ah`).
    pub const UD_PASSIVE_REMOTE_AH: IbExtType = 7;
    /// `DAT_IB_UD_SEND`: UD send completed.
    pub const UD_SEND: IbExtType = 8;
    /// `DAT_IB_UD_RECV`: UD receive completed.
    pub const UD_RECV: IbExtType = 9;
    /// `DAT_IB_UD_CONNECT_REJECT`: UD connection rejected.
    pub const UD_CONNECT_REJECT: IbExtType = 10;
    /// `DAT_IB_UD_CONNECT_ERROR`: UD connection error.
    pub const UD_CONNECT_ERROR: IbExtType = 11;
    /// `DAT_IB_COLLECTIVE_CREATE_STATUS`.
    pub const COLLECTIVE_CREATE_STATUS: IbExtType = 12;
    /// `DAT_IB_COLLECTIVE_CREATE_DATA`.
    pub const COLLECTIVE_CREATE_DATA: IbExtType = 13;
    /// `DAT_IB_COLLECTIVE_CLOCK_SET_STATUS`.
    pub const COLLECTIVE_CLOCK_SET_STATUS: IbExtType = 14;
    /// `DAT_IB_COLLECTIVE_SCATTER_STATUS`.
    pub const COLLECTIVE_SCATTER_STATUS: IbExtType = 15;
    /// `DAT_IB_COLLECTIVE_SCATTERV_STATUS`.
    pub const COLLECTIVE_SCATTERV_STATUS: IbExtType = 16;
    /// `DAT_IB_COLLECTIVE_GATHER_STATUS`.
    pub const COLLECTIVE_GATHER_STATUS: IbExtType = 17;
    /// `DAT_IB_COLLECTIVE_GATHERV_STATUS`.
    pub const COLLECTIVE_GATHERV_STATUS: IbExtType = 18;
    /// `DAT_IB_COLLECTIVE_ALLGATHER_STATUS`.
    pub const COLLECTIVE_ALLGATHER_STATUS: IbExtType = 19;
    /// `DAT_IB_COLLECTIVE_ALLGATHERV_STATUS`.
    pub const COLLECTIVE_ALLGATHERV_STATUS: IbExtType = 20;
    /// `DAT_IB_COLLECTIVE_ALLTOALL_STATUS`.
    pub const COLLECTIVE_ALLTOALL_STATUS: IbExtType = 21;
    /// `DAT_IB_COLLECTIVE_ALLTOALLV_STATUS`.
    pub const COLLECTIVE_ALLTOALLV_STATUS: IbExtType = 22;
    /// `DAT_IB_COLLECTIVE_REDUCE_STATUS`.
    pub const COLLECTIVE_REDUCE_STATUS: IbExtType = 23;
    /// `DAT_IB_COLLECTIVE_ALLREDUCE_STATUS`.
    pub const COLLECTIVE_ALLREDUCE_STATUS: IbExtType = 24;
    /// `DAT_IB_COLLECTIVE_REDUCE_SCATTER_STATUS`.
    pub const COLLECTIVE_REDUCE_SCATTER_STATUS: IbExtType = 25;
    /// `DAT_IB_COLLECTIVE_SCAN_STATUS`.
    pub const COLLECTIVE_SCAN_STATUS: IbExtType = 26;
    /// `DAT_IB_COLLECTIVE_BROADCAST_STATUS`.
    pub const COLLECTIVE_BROADCAST_STATUS: IbExtType = 27;
    /// `DAT_IB_COLLECTIVE_BARRIER_STATUS`.
    pub const COLLECTIVE_BARRIER_STATUS: IbExtType = 28;
}

/// `DAT_IB_STATUS` (`dat_ib_extensions.h`): `IbExtensionEventData::status`.
pub mod ib_status {
    use crate::dat::IbStatus;
    /// `DAT_OP_SUCCESS`: the extended operation succeeded.
    pub const OP_SUCCESS: IbStatus = 0;
    /// `DAT_IB_OP_ERR`: the extended operation failed.
    pub const OP_ERR: IbStatus = 1;
    /// `DAT_IB_COLL_COMP_ERR`: a collective failed.
    pub const COLL_COMP_ERR: IbStatus = 2;
}

/// `DAT_IA_COUNTERS` (`dat_ib_extensions.h`): IA counter indexes for
/// `ib_op::QUERY_COUNTERS`/`PRINT_COUNTERS`
/// (passed as `int`).
pub mod ia_counter {
    /// `DCNT_IA_PZ_CREATE`.
    pub const PZ_CREATE: i32 = 0;
    /// `DCNT_IA_PZ_FREE`.
    pub const PZ_FREE: i32 = 1;
    /// `DCNT_IA_LMR_CREATE`.
    pub const LMR_CREATE: i32 = 2;
    /// `DCNT_IA_LMR_FREE`.
    pub const LMR_FREE: i32 = 3;
    /// `DCNT_IA_RMR_CREATE`.
    pub const RMR_CREATE: i32 = 4;
    /// `DCNT_IA_RMR_FREE`.
    pub const RMR_FREE: i32 = 5;
    /// `DCNT_IA_PSP_CREATE`.
    pub const PSP_CREATE: i32 = 6;
    /// `DCNT_IA_PSP_CREATE_ANY`.
    pub const PSP_CREATE_ANY: i32 = 7;
    /// `DCNT_IA_PSP_FREE`.
    pub const PSP_FREE: i32 = 8;
    /// `DCNT_IA_RSP_CREATE`.
    pub const RSP_CREATE: i32 = 9;
    /// `DCNT_IA_RSP_FREE`.
    pub const RSP_FREE: i32 = 10;
    /// `DCNT_IA_EVD_CREATE`.
    pub const EVD_CREATE: i32 = 11;
    /// `DCNT_IA_EVD_FREE`.
    pub const EVD_FREE: i32 = 12;
    /// `DCNT_IA_EP_CREATE`.
    pub const EP_CREATE: i32 = 13;
    /// `DCNT_IA_EP_FREE`.
    pub const EP_FREE: i32 = 14;
    /// `DCNT_IA_SRQ_CREATE`.
    pub const SRQ_CREATE: i32 = 15;
    /// `DCNT_IA_SRQ_FREE`.
    pub const SRQ_FREE: i32 = 16;
    /// `DCNT_IA_SP_CR`.
    pub const SP_CR: i32 = 17;
    /// `DCNT_IA_SP_CR_ACCEPTED`.
    pub const SP_CR_ACCEPTED: i32 = 18;
    /// `DCNT_IA_SP_CR_REJECTED`.
    pub const SP_CR_REJECTED: i32 = 19;
    /// `DCNT_IA_MEM_ALLOC`.
    pub const MEM_ALLOC: i32 = 20;
    /// `DCNT_IA_MEM_ALLOC_DATA`.
    pub const MEM_ALLOC_DATA: i32 = 21;
    /// `DCNT_IA_MEM_FREE`.
    pub const MEM_FREE: i32 = 22;
    /// `DCNT_IA_ASYNC_ERROR`.
    pub const ASYNC_ERROR: i32 = 23;
    /// `DCNT_IA_ASYNC_QP_ERROR`.
    pub const ASYNC_QP_ERROR: i32 = 24;
    /// `DCNT_IA_ASYNC_CQ_ERROR`.
    pub const ASYNC_CQ_ERROR: i32 = 25;
    /// `DCNT_IA_CM_LISTEN`.
    pub const CM_LISTEN: i32 = 26;
    /// `DCNT_IA_CM_REQ_TX`.
    pub const CM_REQ_TX: i32 = 27;
    /// `DCNT_IA_CM_REQ_RX`.
    pub const CM_REQ_RX: i32 = 28;
    /// `DCNT_IA_CM_REP_TX`.
    pub const CM_REP_TX: i32 = 29;
    /// `DCNT_IA_CM_REP_RX`.
    pub const CM_REP_RX: i32 = 30;
    /// `DCNT_IA_CM_RTU_TX`.
    pub const CM_RTU_TX: i32 = 31;
    /// `DCNT_IA_CM_RTU_RX`.
    pub const CM_RTU_RX: i32 = 32;
    /// `DCNT_IA_CM_USER_REJ_TX`.
    pub const CM_USER_REJ_TX: i32 = 33;
    /// `DCNT_IA_CM_USER_REJ_RX`.
    pub const CM_USER_REJ_RX: i32 = 34;
    /// `DCNT_IA_CM_ACTIVE_EST`.
    pub const CM_ACTIVE_EST: i32 = 35;
    /// `DCNT_IA_CM_PASSIVE_EST`.
    pub const CM_PASSIVE_EST: i32 = 36;
    /// `DCNT_IA_CM_AH_REQ_TX`.
    pub const CM_AH_REQ_TX: i32 = 37;
    /// `DCNT_IA_CM_AH_REQ_RX`.
    pub const CM_AH_REQ_RX: i32 = 38;
    /// `DCNT_IA_CM_AH_RESOLVED`.
    pub const CM_AH_RESOLVED: i32 = 39;
    /// `DCNT_IA_CM_DREQ_TX`.
    pub const CM_DREQ_TX: i32 = 40;
    /// `DCNT_IA_CM_DREQ_RX`.
    pub const CM_DREQ_RX: i32 = 41;
    /// `DCNT_IA_CM_DREP_TX`.
    pub const CM_DREP_TX: i32 = 42;
    /// `DCNT_IA_CM_DREP_RX`.
    pub const CM_DREP_RX: i32 = 43;
    /// `DCNT_IA_CM_MRA_TX`.
    pub const CM_MRA_TX: i32 = 44;
    /// `DCNT_IA_CM_MRA_RX`.
    pub const CM_MRA_RX: i32 = 45;
    /// `DCNT_IA_CM_REQ_FULLQ_POLL`.
    pub const CM_REQ_FULLQ_POLL: i32 = 46;
    /// `DCNT_IA_CM_ERR`.
    pub const CM_ERR: i32 = 47;
    /// `DCNT_IA_CM_ERR_REQ_FULLQ`.
    pub const CM_ERR_REQ_FULLQ: i32 = 48;
    /// `DCNT_IA_CM_ERR_REQ_DUP`.
    pub const CM_ERR_REQ_DUP: i32 = 49;
    /// `DCNT_IA_CM_ERR_REQ_RETRY`.
    pub const CM_ERR_REQ_RETRY: i32 = 50;
    /// `DCNT_IA_CM_ERR_REP_DUP`.
    pub const CM_ERR_REP_DUP: i32 = 51;
    /// `DCNT_IA_CM_ERR_REP_RETRY`.
    pub const CM_ERR_REP_RETRY: i32 = 52;
    /// `DCNT_IA_CM_ERR_RTU_DUP`.
    pub const CM_ERR_RTU_DUP: i32 = 53;
    /// `DCNT_IA_CM_ERR_RTU_RETRY`.
    pub const CM_ERR_RTU_RETRY: i32 = 54;
    /// `DCNT_IA_CM_ERR_REFUSED`.
    pub const CM_ERR_REFUSED: i32 = 55;
    /// `DCNT_IA_CM_ERR_RESET`.
    pub const CM_ERR_RESET: i32 = 56;
    /// `DCNT_IA_CM_ERR_TIMEOUT`.
    pub const CM_ERR_TIMEOUT: i32 = 57;
    /// `DCNT_IA_CM_ERR_REJ_TX`.
    pub const CM_ERR_REJ_TX: i32 = 58;
    /// `DCNT_IA_CM_ERR_REJ_RX`.
    pub const CM_ERR_REJ_RX: i32 = 59;
    /// `DCNT_IA_CM_ERR_DREQ_DUP`.
    pub const CM_ERR_DREQ_DUP: i32 = 60;
    /// `DCNT_IA_CM_ERR_DREQ_RETRY`.
    pub const CM_ERR_DREQ_RETRY: i32 = 61;
    /// `DCNT_IA_CM_ERR_DREP_DUP`.
    pub const CM_ERR_DREP_DUP: i32 = 62;
    /// `DCNT_IA_CM_ERR_DREP_RETRY`.
    pub const CM_ERR_DREP_RETRY: i32 = 63;
    /// `DCNT_IA_CM_ERR_MRA_DUP`.
    pub const CM_ERR_MRA_DUP: i32 = 64;
    /// `DCNT_IA_CM_ERR_MRA_RETRY`.
    pub const CM_ERR_MRA_RETRY: i32 = 65;
    /// `DCNT_IA_CM_ERR_UNEXPECTED`.
    pub const CM_ERR_UNEXPECTED: i32 = 66;
    /// `DCNT_IA_LNK_ERR_RCV`.
    pub const LNK_ERR_RCV: i32 = 67;
    /// `DCNT_IA_LNK_ERR_RCV_REM_PHYS`.
    pub const LNK_ERR_RCV_REM_PHYS: i32 = 68;
    /// `DCNT_IA_LNK_ERR_RCV_CONSTRAINT`.
    pub const LNK_ERR_RCV_CONSTRAINT: i32 = 69;
    /// `DCNT_IA_LNK_ERR_XMT_DISCARDS`.
    pub const LNK_ERR_XMT_DISCARDS: i32 = 70;
    /// `DCNT_IA_LNK_ERR_XMT_CONTRAINT`.
    pub const LNK_ERR_XMT_CONTRAINT: i32 = 71;
    /// `DCNT_IA_LNK_ERR_INTEGRITY`.
    pub const LNK_ERR_INTEGRITY: i32 = 72;
    /// `DCNT_IA_LNK_ERR_EXC_BUF_OVERRUN`.
    pub const LNK_ERR_EXC_BUF_OVERRUN: i32 = 73;
    /// `DCNT_IA_LNK_WARN_RCV_SW_RELAY`.
    pub const LNK_WARN_RCV_SW_RELAY: i32 = 74;
    /// `DCNT_IA_LNK_WARN_XMT_WAIT`.
    pub const LNK_WARN_XMT_WAIT: i32 = 75;
    /// `DCNT_IA_DIAG_ERR_RQ_RAE`.
    pub const DIAG_ERR_RQ_RAE: i32 = 76;
    /// `DCNT_IA_DIAG_ERR_RQ_OOS`.
    pub const DIAG_ERR_RQ_OOS: i32 = 77;
    /// `DCNT_IA_DIAG_ERR_RQ_RIRE`.
    pub const DIAG_ERR_RQ_RIRE: i32 = 78;
    /// `DCNT_IA_DIAG_ERR_RQ_UDSDPRD`.
    pub const DIAG_ERR_RQ_UDSDPRD: i32 = 79;
    /// `DCNT_IA_DIAG_ERR_SQ_RAE`.
    pub const DIAG_ERR_SQ_RAE: i32 = 80;
    /// `DCNT_IA_DIAG_ERR_SQ_OOS`.
    pub const DIAG_ERR_SQ_OOS: i32 = 81;
    /// `DCNT_IA_DIAG_ERR_SQ_RIRE`.
    pub const DIAG_ERR_SQ_RIRE: i32 = 82;
    /// `DCNT_IA_DIAG_ERR_SQ_RREE`.
    pub const DIAG_ERR_SQ_RREE: i32 = 83;
    /// `DCNT_IA_DIAG_ERR_SQ_TREE`.
    pub const DIAG_ERR_SQ_TREE: i32 = 84;
    /// `DCNT_IA_ALL_COUNTERS`: the number of counters (query/print all).
    pub const ALL_COUNTERS: i32 = 85;
}

/// `DAT_EP_COUNTERS` (`dat_ib_extensions.h`): EP counter indexes (passed as `int`).
pub mod ep_counter {
    /// `DCNT_EP_CONNECT`.
    pub const CONNECT: i32 = 0;
    /// `DCNT_EP_DISCONNECT`.
    pub const DISCONNECT: i32 = 1;
    /// `DCNT_EP_POST_SEND`.
    pub const POST_SEND: i32 = 2;
    /// `DCNT_EP_POST_SEND_DATA`.
    pub const POST_SEND_DATA: i32 = 3;
    /// `DCNT_EP_POST_SEND_UD`.
    pub const POST_SEND_UD: i32 = 4;
    /// `DCNT_EP_POST_SEND_UD_DATA`.
    pub const POST_SEND_UD_DATA: i32 = 5;
    /// `DCNT_EP_POST_RECV`.
    pub const POST_RECV: i32 = 6;
    /// `DCNT_EP_POST_RECV_DATA`.
    pub const POST_RECV_DATA: i32 = 7;
    /// `DCNT_EP_POST_WRITE`.
    pub const POST_WRITE: i32 = 8;
    /// `DCNT_EP_POST_WRITE_DATA`.
    pub const POST_WRITE_DATA: i32 = 9;
    /// `DCNT_EP_POST_WRITE_IMM`.
    pub const POST_WRITE_IMM: i32 = 10;
    /// `DCNT_EP_POST_WRITE_IMM_DATA`.
    pub const POST_WRITE_IMM_DATA: i32 = 11;
    /// `DCNT_EP_POST_READ`.
    pub const POST_READ: i32 = 12;
    /// `DCNT_EP_POST_READ_DATA`.
    pub const POST_READ_DATA: i32 = 13;
    /// `DCNT_EP_POST_CMP_SWAP`.
    pub const POST_CMP_SWAP: i32 = 14;
    /// `DCNT_EP_POST_FETCH_ADD`.
    pub const POST_FETCH_ADD: i32 = 15;
    /// `DCNT_EP_RECV`.
    pub const RECV: i32 = 16;
    /// `DCNT_EP_RECV_DATA`.
    pub const RECV_DATA: i32 = 17;
    /// `DCNT_EP_RECV_UD`.
    pub const RECV_UD: i32 = 18;
    /// `DCNT_EP_RECV_UD_DATA`.
    pub const RECV_UD_DATA: i32 = 19;
    /// `DCNT_EP_RECV_IMM`.
    pub const RECV_IMM: i32 = 20;
    /// `DCNT_EP_RECV_IMM_DATA`.
    pub const RECV_IMM_DATA: i32 = 21;
    /// `DCNT_EP_RECV_RDMA_IMM`.
    pub const RECV_RDMA_IMM: i32 = 22;
    /// `DCNT_EP_RECV_RDMA_IMM_DATA`.
    pub const RECV_RDMA_IMM_DATA: i32 = 23;
    /// `DCNT_EP_ALL_COUNTERS`: the number of counters (query/print all).
    pub const ALL_COUNTERS: i32 = 24;
}

/// `DAT_EVD_COUNTERS` (`dat_ib_extensions.h`): EVD counter indexes (passed as `int`).
pub mod evd_counter {
    /// `DCNT_EVD_WAIT`.
    pub const WAIT: i32 = 0;
    /// `DCNT_EVD_WAIT_BLOCKED`.
    pub const WAIT_BLOCKED: i32 = 1;
    /// `DCNT_EVD_WAIT_NOTIFY`.
    pub const WAIT_NOTIFY: i32 = 2;
    /// `DCNT_EVD_DEQUEUE`.
    pub const DEQUEUE: i32 = 3;
    /// `DCNT_EVD_DEQUEUE_FOUND`.
    pub const DEQUEUE_FOUND: i32 = 4;
    /// `DCNT_EVD_DEQUEUE_NOT_FOUND`.
    pub const DEQUEUE_NOT_FOUND: i32 = 5;
    /// `DCNT_EVD_DEQUEUE_POLL`.
    pub const DEQUEUE_POLL: i32 = 6;
    /// `DCNT_EVD_DEQUEUE_POLL_FOUND`.
    pub const DEQUEUE_POLL_FOUND: i32 = 7;
    /// `DCNT_EVD_CONN_CALLBACK`.
    pub const CONN_CALLBACK: i32 = 8;
    /// `DCNT_EVD_DTO_CALLBACK`.
    pub const DTO_CALLBACK: i32 = 9;
    /// `DCNT_EVD_ALL_COUNTERS`: the number of counters (query/print all).
    pub const ALL_COUNTERS: i32 = 10;
}

/// `DAT_IA_COUNTER_TYPE` (`dat_ib_extensions.h`): counter groups for
/// `ib_op::START_COUNTERS`/`STOP_COUNTERS`.
pub mod ia_counter_type {
    use crate::dat::IaCounterType;
    /// `DCNT_IA_CM`: connection manager counters.
    pub const CM: IaCounterType = 0;
    /// `DCNT_IA_LNK`: link counters.
    pub const LNK: IaCounterType = 1;
    /// `DCNT_IA_DIAG`: diagnostic counters.
    pub const DIAG: IaCounterType = 2;
}

/// `DAT_IB_COLLECTIVE_DATA_TYPE` (`dat_ib_extensions.h`): element type of a reduction.
pub mod ib_collective_type {
    use crate::dat::IbCollectiveDataType;
    /// `DAT_IB_COLLECTIVE_TYPE_INT8`.
    pub const INT8: IbCollectiveDataType = 0;
    /// `DAT_IB_COLLECTIVE_TYPE_UINT8`.
    pub const UINT8: IbCollectiveDataType = 1;
    /// `DAT_IB_COLLECTIVE_TYPE_INT16`.
    pub const INT16: IbCollectiveDataType = 2;
    /// `DAT_IB_COLLECTIVE_TYPE_UINT16`.
    pub const UINT16: IbCollectiveDataType = 3;
    /// `DAT_IB_COLLECTIVE_TYPE_INT32`.
    pub const INT32: IbCollectiveDataType = 4;
    /// `DAT_IB_COLLECTIVE_TYPE_UINT32`.
    pub const UINT32: IbCollectiveDataType = 5;
    /// `DAT_IB_COLLECTIVE_TYPE_INT64`.
    pub const INT64: IbCollectiveDataType = 6;
    /// `DAT_IB_COLLECTIVE_TYPE_UINT64`.
    pub const UINT64: IbCollectiveDataType = 7;
    /// `DAT_IB_COLLECTIVE_TYPE_FLOAT`.
    pub const FLOAT: IbCollectiveDataType = 8;
    /// `DAT_IB_COLLECTIVE_TYPE_DOUBLE`.
    pub const DOUBLE: IbCollectiveDataType = 9;
    /// `DAT_IB_COLLECTIVE_TYPE_LONG_DOUBLE`.
    pub const LONG_DOUBLE: IbCollectiveDataType = 10;
    /// `DAT_IB_COLLECTIVE_TYPE_SHORT_INT`.
    pub const SHORT_INT: IbCollectiveDataType = 11;
    /// `DAT_IB_COLLECTIVE_TYPE_2INT`.
    pub const TWO_INT: IbCollectiveDataType = 12;
    /// `DAT_IB_COLLECTIVE_TYPE_FLOAT_INT`.
    pub const FLOAT_INT: IbCollectiveDataType = 13;
    /// `DAT_IB_COLLECTIVE_TYPE_LONG_INT`.
    pub const LONG_INT: IbCollectiveDataType = 14;
    /// `DAT_IB_COLLECTIVE_TYPE_DOUBLE_INT`.
    pub const DOUBLE_INT: IbCollectiveDataType = 15;
}

/// `DAT_IB_COLLECTIVE_REDUCE_DATA_OP` (`dat_ib_extensions.h`): reduction operator.
pub mod ib_reduce_op {
    use crate::dat::IbCollectiveReduceDataOp;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP_MAX`.
    pub const MAX: IbCollectiveReduceDataOp = 0;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP_MIN`.
    pub const MIN: IbCollectiveReduceDataOp = 1;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP_SUM`.
    pub const SUM: IbCollectiveReduceDataOp = 2;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP_PROD`.
    pub const PROD: IbCollectiveReduceDataOp = 3;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP_LAND`.
    pub const LAND: IbCollectiveReduceDataOp = 4;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP_BAND`.
    pub const BAND: IbCollectiveReduceDataOp = 5;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP_LOR`.
    pub const LOR: IbCollectiveReduceDataOp = 6;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP_BOR`.
    pub const BOR: IbCollectiveReduceDataOp = 7;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP_LXOR`.
    pub const LXOR: IbCollectiveReduceDataOp = 8;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP_BXOR`.
    pub const BXOR: IbCollectiveReduceDataOp = 9;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP_MAXLOC`.
    pub const MAXLOC: IbCollectiveReduceDataOp = 10;
    /// `DAT_IB_COLLECTIVE_REDUCE_OP_MINLOC`.
    pub const MINLOC: IbCollectiveReduceDataOp = 11;
}
