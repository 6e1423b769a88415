//! Constants of `dat.h`, `udat.h`, `udat_config.h`, `dat_platform_specific.h` and
//! `dat_registry.h`, one module per C enum or mask. The IB extension's own enums are in
//! `ib.rs`; its values that extend a core enum (`DAT_IB_DTO_*`, `DAT_IB_HANDLE_TYPE_*`, ...)
//! sit here next to the core values.

use core::ffi::CStr;

use super::{Boolean, Count, ExtendedOp, Timeout};

/// `DAT_FALSE`.
pub const FALSE: Boolean = 0;
/// `DAT_TRUE`.
pub const TRUE: Boolean = 1;

/// `DAT_NAME_MAX_LENGTH`: size of the name arrays (`ia_name`, `adapter_name`, ...).
pub const NAME_MAX_LENGTH: usize = 256;
/// `DAT_LMR_COOKIE_SIZE`: size of the shared-memory id a [`super::LmrCookie`] points to.
pub const LMR_COOKIE_SIZE: usize = 40;
/// `DAT_OPTIMAL_ALIGNMENT`: the default performance-optimal buffer alignment.
pub const OPTIMAL_ALIGNMENT: u32 = 256;

/// `DAT_VERSION_MAJOR`: the DAT API major version consumers are built for.
pub const VERSION_MAJOR: u32 = 2;
/// `DAT_VERSION_MINOR`: the DAT API minor version consumers are built for.
pub const VERSION_MINOR: u32 = 0;
/// `DAT_THREADSAFE` as `udat_config.h` sets it: consumers open IAs as non-thread-safe, and
/// the registry key (name, 2, 0, thread safety) must match exactly, so a provider registers
/// and reports `is_thread_safe` = `DAT_FALSE`.
pub const THREADSAFE: Boolean = FALSE;

/// `DAT_TIMEOUT_INFINITE`: wait without limit.
pub const TIMEOUT_INFINITE: Timeout = !0;
/// `DAT_WATERMARK_INFINITE`: no watermark.
pub const WATERMARK_INFINITE: Count = !0;
/// `DAT_HW_DEFAULT`: default hard high watermark (= [`WATERMARK_INFINITE`]).
pub const HW_DEFAULT: Count = WATERMARK_INFINITE;
/// `DAT_SRQ_LW_DEFAULT`: default SRQ low watermark.
pub const SRQ_LW_DEFAULT: Count = 0;
/// `DAT_VALUE_UNKNOWN`: a count the provider cannot report.
pub const VALUE_UNKNOWN: Count = !0 - 1;

/// `DAT_OPEN_EXTENSION_BASE`: extended ops from here on are called without an open IA
/// (`dat_extension_op` passes them through before the handle check).
pub const OPEN_EXTENSION_BASE: ExtendedOp = 0x1000;
/// `DAT_CLOSE_EXTENSION_BASE`: extended ops that end an [`OPEN_EXTENSION_BASE`] one.
pub const CLOSE_EXTENSION_BASE: ExtendedOp = 0x2000;

/// `DAT_AF_INET` (`AF_INET`): family of an IPv4 [`super::IaAddressPtr`].
pub const AF_INET: u16 = 2;
/// `DAT_AF_INET6` (`AF_INET6`): family of an IPv6 [`super::IaAddressPtr`].
pub const AF_INET6: u16 = 10;

/// `DAT_PROVIDER_INIT_FUNC_STR`: the symbol libdat2 `dlsym`s to initialise a provider
/// ([`super::ProviderInitFunc`]).
pub const PROVIDER_INIT_FUNC_STR: &CStr = c"dat_provider_init";
/// `DAT_PROVIDER_FINI_FUNC_STR`: the symbol libdat2 `dlsym`s before unloading a provider
/// ([`super::ProviderFiniFunc`]).
pub const PROVIDER_FINI_FUNC_STR: &CStr = c"dat_provider_fini";

/// `DAT_HANDLE_TYPE` (`udat.h`), returned by `dat_get_handle_type`; plus the IB extension types
/// (`dat_ib_extensions.h`).
pub mod handle_type {
    use crate::dat::HandleType;
    /// `DAT_HANDLE_TYPE_CR`: connection request.
    pub const CR: HandleType = 0;
    /// `DAT_HANDLE_TYPE_EP`: endpoint.
    pub const EP: HandleType = 1;
    /// `DAT_HANDLE_TYPE_EVD`: event dispatcher.
    pub const EVD: HandleType = 2;
    /// `DAT_HANDLE_TYPE_IA`: interface adapter.
    pub const IA: HandleType = 3;
    /// `DAT_HANDLE_TYPE_LMR`: local memory region.
    pub const LMR: HandleType = 4;
    /// `DAT_HANDLE_TYPE_PSP`: public service point.
    pub const PSP: HandleType = 5;
    /// `DAT_HANDLE_TYPE_PZ`: protection zone.
    pub const PZ: HandleType = 6;
    /// `DAT_HANDLE_TYPE_RMR`: remote memory region.
    pub const RMR: HandleType = 7;
    /// `DAT_HANDLE_TYPE_RSP`: reserved service point.
    pub const RSP: HandleType = 8;
    /// `DAT_HANDLE_TYPE_CNO`: consumer notification object.
    pub const CNO: HandleType = 9;
    /// `DAT_HANDLE_TYPE_SRQ`: shared receive queue.
    pub const SRQ: HandleType = 10;
    /// `DAT_HANDLE_TYPE_CSP`: common service point.
    pub const CSP: HandleType = 11;
    /// `DAT_HANDLE_TYPE_EXTENSION_BASE`: first extension handle type.
    pub const EXTENSION_BASE: HandleType = 12;
    /// `DAT_IB_HANDLE_TYPE_EXT`: IB extension handle.
    pub const IB_EXT: HandleType = 12;
    /// `DAT_IB_HANDLE_TYPE_COLLECTIVE`: IB collective handle.
    pub const IB_COLLECTIVE: HandleType = 13;
}

/// `DAT_EP_STATE` (`dat.h`): the endpoint states of `dat_ep_query`/`dat_ep_get_status`.
pub mod ep_state {
    use crate::dat::EpState;
    /// `DAT_EP_STATE_UNCONNECTED`: quiescent.
    pub const UNCONNECTED: EpState = 0;
    /// `DAT_EP_STATE_UNCONFIGURED_UNCONNECTED`: created without EVDs or attributes it needs.
    pub const UNCONFIGURED_UNCONNECTED: EpState = 1;
    /// `DAT_EP_STATE_RESERVED`: reserved by an RSP.
    pub const RESERVED: EpState = 2;
    /// `DAT_EP_STATE_UNCONFIGURED_RESERVED`: unconfigured and reserved.
    pub const UNCONFIGURED_RESERVED: EpState = 3;
    /// `DAT_EP_STATE_PASSIVE_CONNECTION_PENDING`: accepted, waiting for the connection.
    pub const PASSIVE_CONNECTION_PENDING: EpState = 4;
    /// `DAT_EP_STATE_UNCONFIGURED_PASSIVE`: unconfigured, passive side.
    pub const UNCONFIGURED_PASSIVE: EpState = 5;
    /// `DAT_EP_STATE_ACTIVE_CONNECTION_PENDING`: connect requested.
    pub const ACTIVE_CONNECTION_PENDING: EpState = 6;
    /// `DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING`: provider-created EP awaiting accept.
    pub const TENTATIVE_CONNECTION_PENDING: EpState = 7;
    /// `DAT_EP_STATE_UNCONFIGURED_TENTATIVE`: unconfigured, tentative.
    pub const UNCONFIGURED_TENTATIVE: EpState = 8;
    /// `DAT_EP_STATE_CONNECTED`: connected.
    pub const CONNECTED: EpState = 9;
    /// `DAT_EP_STATE_DISCONNECT_PENDING`: graceful disconnect in progress.
    pub const DISCONNECT_PENDING: EpState = 10;
    /// `DAT_EP_STATE_DISCONNECTED`: disconnected (also the error state).
    pub const DISCONNECTED: EpState = 11;
    /// `DAT_EP_STATE_COMPLETION_PENDING`: connection established, completions pending.
    pub const COMPLETION_PENDING: EpState = 12;
    /// `DAT_EP_STATE_CONNECTED_SINGLE_PATH`: connected on one path (HA).
    pub const CONNECTED_SINGLE_PATH: EpState = 13;
    /// `DAT_EP_STATE_CONNECTED_MULTI_PATH`: connected on several paths (HA).
    pub const CONNECTED_MULTI_PATH: EpState = 14;
    /// `DAT_EP_STATE_ERROR`: backward-compatible name of [`DISCONNECTED`].
    pub const ERROR: EpState = 11;
}

/// `DAT_EVENT_NUMBER` (`dat.h`) and `DAT_IB_EVENT_NUMBER` (`dat_ib_extensions.h`):
/// `Event::event_number`.
pub mod event {
    use crate::dat::EventNumber;
    /// `DAT_DTO_COMPLETION_EVENT`: a DTO (or bind) completed.
    pub const DTO_COMPLETION_EVENT: EventNumber = 0x1;
    /// `DAT_RMR_BIND_COMPLETION_EVENT`: an RMR bind completed.
    pub const RMR_BIND_COMPLETION_EVENT: EventNumber = 0x1001;
    /// `DAT_CONNECTION_REQUEST_EVENT`: a connection request arrived on a service point.
    pub const CONNECTION_REQUEST_EVENT: EventNumber = 0x2001;
    /// `DAT_CONNECTION_EVENT_ESTABLISHED`: the connection is established.
    pub const CONNECTION_EVENT_ESTABLISHED: EventNumber = 0x4001;
    /// `DAT_CONNECTION_EVENT_PEER_REJECTED`: the peer rejected the request.
    pub const CONNECTION_EVENT_PEER_REJECTED: EventNumber = 0x4002;
    /// `DAT_CONNECTION_EVENT_NON_PEER_REJECTED`: rejected by someone other than the peer.
    pub const CONNECTION_EVENT_NON_PEER_REJECTED: EventNumber = 0x4003;
    /// `DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR`: the accept did not complete.
    pub const CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR: EventNumber = 0x4004;
    /// `DAT_CONNECTION_EVENT_DISCONNECTED`: the connection was disconnected.
    pub const CONNECTION_EVENT_DISCONNECTED: EventNumber = 0x4005;
    /// `DAT_CONNECTION_EVENT_BROKEN`: the connection broke.
    pub const CONNECTION_EVENT_BROKEN: EventNumber = 0x4006;
    /// `DAT_CONNECTION_EVENT_TIMED_OUT`: the connect timed out.
    pub const CONNECTION_EVENT_TIMED_OUT: EventNumber = 0x4007;
    /// `DAT_CONNECTION_EVENT_UNREACHABLE`: the remote address is unreachable.
    pub const CONNECTION_EVENT_UNREACHABLE: EventNumber = 0x4008;
    /// `DAT_ASYNC_ERROR_EVD_OVERFLOW`: an EVD overflowed.
    pub const ASYNC_ERROR_EVD_OVERFLOW: EventNumber = 0x8001;
    /// `DAT_ASYNC_ERROR_IA_CATASTROPHIC`: the IA failed.
    pub const ASYNC_ERROR_IA_CATASTROPHIC: EventNumber = 0x8002;
    /// `DAT_ASYNC_ERROR_EP_BROKEN`: an EP broke.
    pub const ASYNC_ERROR_EP_BROKEN: EventNumber = 0x8003;
    /// `DAT_ASYNC_ERROR_TIMED_OUT`: an asynchronous operation timed out.
    pub const ASYNC_ERROR_TIMED_OUT: EventNumber = 0x8004;
    /// `DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR`: provider internal error.
    pub const ASYNC_ERROR_PROVIDER_INTERNAL_ERROR: EventNumber = 0x8005;
    /// `DAT_HA_DOWN_TO_1`: a multipath connection is down to one path.
    pub const HA_DOWN_TO_1: EventNumber = 0x8101;
    /// `DAT_HA_UP_TO_MULTI_PATH`: a connection is back to several paths.
    pub const HA_UP_TO_MULTI_PATH: EventNumber = 0x8102;
    /// `DAT_SOFTWARE_EVENT`: posted with `dat_evd_post_se`.
    pub const SOFTWARE_EVENT: EventNumber = 0x10001;
    /// `DAT_EXTENSION_EVENT`: generic extension event.
    pub const EXTENSION_EVENT: EventNumber = 0x20000;
    /// `DAT_IB_EXTENSION_RANGE_BASE`: first IB extension event number.
    pub const IB_EXTENSION_RANGE_BASE: EventNumber = 0x40000;
    /// `DAT_IW_EXTENSION_RANGE_BASE`: first iWARP extension event number.
    pub const IW_EXTENSION_RANGE_BASE: EventNumber = 0x80000;
    /// `DAT_IB_DTO_EVENT`: an extended DTO completed (data in `event_extension_data`).
    pub const IB_DTO_EVENT: EventNumber = 0x40000;
    /// `DAT_IB_UD_CONNECTION_REQUEST_EVENT`: UD connection request.
    pub const IB_UD_CONNECTION_REQUEST_EVENT: EventNumber = 0x40001;
    /// `DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED`: UD address handle resolved.
    pub const IB_UD_CONNECTION_EVENT_ESTABLISHED: EventNumber = 0x40002;
    /// `DAT_IB_UD_CONNECTION_REJECT_EVENT`: UD connection rejected.
    pub const IB_UD_CONNECTION_REJECT_EVENT: EventNumber = 0x40003;
    /// `DAT_IB_UD_CONNECTION_ERROR_EVENT`: UD connection error.
    pub const IB_UD_CONNECTION_ERROR_EVENT: EventNumber = 0x40004;
    /// `DAT_IB_COLLECTIVE_EVENT`: a collective operation completed.
    pub const IB_COLLECTIVE_EVENT: EventNumber = 0x40005;
}

/// `DAT_DTO_COMPLETION_STATUS` (`dat.h`): `DtoCompletionEventData::status`; RMR binds report the
/// same values.
pub mod dto_status {
    use crate::dat::DtoCompletionStatus;
    /// `DAT_DTO_SUCCESS`: completed successfully.
    pub const SUCCESS: DtoCompletionStatus = 0;
    /// `DAT_DTO_ERR_FLUSHED`: flushed (EP disconnected or in error).
    pub const ERR_FLUSHED: DtoCompletionStatus = 1;
    /// `DAT_DTO_ERR_LOCAL_LENGTH`: local buffer too small.
    pub const ERR_LOCAL_LENGTH: DtoCompletionStatus = 2;
    /// `DAT_DTO_ERR_LOCAL_EP`: local EP error.
    pub const ERR_LOCAL_EP: DtoCompletionStatus = 3;
    /// `DAT_DTO_ERR_LOCAL_PROTECTION`: local protection error.
    pub const ERR_LOCAL_PROTECTION: DtoCompletionStatus = 4;
    /// `DAT_DTO_ERR_BAD_RESPONSE`: bad response from the remote side.
    pub const ERR_BAD_RESPONSE: DtoCompletionStatus = 5;
    /// `DAT_DTO_ERR_REMOTE_ACCESS`: remote access error (bad rkey, bounds, rights).
    pub const ERR_REMOTE_ACCESS: DtoCompletionStatus = 6;
    /// `DAT_DTO_ERR_REMOTE_RESPONDER`: remote responder error.
    pub const ERR_REMOTE_RESPONDER: DtoCompletionStatus = 7;
    /// `DAT_DTO_ERR_TRANSPORT`: transport error (retries exceeded).
    pub const ERR_TRANSPORT: DtoCompletionStatus = 8;
    /// `DAT_DTO_ERR_RECEIVER_NOT_READY`: RNR retries exceeded.
    pub const ERR_RECEIVER_NOT_READY: DtoCompletionStatus = 9;
    /// `DAT_DTO_ERR_PARTIAL_PACKET`: partial packet.
    pub const ERR_PARTIAL_PACKET: DtoCompletionStatus = 10;
    /// `DAT_RMR_OPERATION_FAILED`: an RMR operation failed.
    pub const RMR_OPERATION_FAILED: DtoCompletionStatus = 11;
    /// `DAT_DTO_ERR_LOCAL_MM_ERROR`: local memory management error (kDAPL).
    pub const ERR_LOCAL_MM_ERROR: DtoCompletionStatus = 12;
    /// `DAT_DTO_LENGTH_ERROR`: old name of [`ERR_LOCAL_LENGTH`].
    pub const LENGTH_ERROR: DtoCompletionStatus = 2;
    /// `DAT_DTO_FAILURE`: old name of [`ERR_FLUSHED`].
    pub const FAILURE: DtoCompletionStatus = 1;
    /// `DAT_RMR_BIND_SUCCESS`: old RMR bind status, = [`SUCCESS`].
    pub const RMR_BIND_SUCCESS: DtoCompletionStatus = 0;
    /// `DAT_RMR_BIND_FAILURE`: old RMR bind status, = [`ERR_FLUSHED`].
    pub const RMR_BIND_FAILURE: DtoCompletionStatus = 1;
}

/// `DAT_DTOS` (`dat.h`) and `DAT_IB_DTOS` (`dat_ib_extensions.h`):
/// `DtoCompletionEventData::operation`.
pub mod dtos {
    use crate::dat::Dtos;
    /// `DAT_DTO_SEND`: send.
    pub const SEND: Dtos = 0;
    /// `DAT_DTO_RDMA_WRITE`: RDMA write.
    pub const RDMA_WRITE: Dtos = 1;
    /// `DAT_DTO_RDMA_READ`: RDMA read.
    pub const RDMA_READ: Dtos = 2;
    /// `DAT_DTO_RECEIVE`: receive.
    pub const RECEIVE: Dtos = 3;
    /// `DAT_DTO_RECEIVE_WITH_INVALIDATE`: receive that invalidated an RMR.
    pub const RECEIVE_WITH_INVALIDATE: Dtos = 4;
    /// `DAT_DTO_BIND_MW`: RMR bind (DAT 2.0 reports binds as DTO events).
    pub const BIND_MW: Dtos = 5;
    /// `DAT_DTO_LMR_FMR`: fast memory registration (kDAPL).
    pub const LMR_FMR: Dtos = 6;
    /// `DAT_DTO_LMR_INVALIDATE`: LMR invalidate (kDAPL).
    pub const LMR_INVALIDATE: Dtos = 7;
    /// `DAT_DTO_EXTENSION_BASE`: first extension DTO.
    pub const EXTENSION_BASE: Dtos = 8;
    /// `DAT_IB_DTO_RDMA_WRITE_IMMED`: RDMA write with immediate data.
    pub const IB_RDMA_WRITE_IMMED: Dtos = 8;
    /// `DAT_IB_DTO_RECV_IMMED`: receive of an RDMA write with immediate.
    pub const IB_RECV_IMMED: Dtos = 9;
    /// `DAT_IB_DTO_FETCH_ADD`: atomic fetch and add.
    pub const IB_FETCH_ADD: Dtos = 10;
    /// `DAT_IB_DTO_CMP_SWAP`: atomic compare and swap.
    pub const IB_CMP_SWAP: Dtos = 11;
    /// `DAT_IB_DTO_RECV_MSG_IMMED`: receive of a send with immediate.
    pub const IB_RECV_MSG_IMMED: Dtos = 12;
    /// `DAT_IB_DTO_SEND_UD`: UD send.
    pub const IB_SEND_UD: Dtos = 13;
    /// `DAT_IB_DTO_RECV_UD`: UD receive.
    pub const IB_RECV_UD: Dtos = 14;
    /// `DAT_IB_DTO_RECV_UD_IMMED`: UD receive with immediate.
    pub const IB_RECV_UD_IMMED: Dtos = 15;
    /// `DAT_IB_DTO_COLLECTIVES`: collective operation.
    pub const IB_COLLECTIVES: Dtos = 16;
}

/// `DAT_EVD_FLAGS` (`dat.h`): the event streams an EVD accepts; plus the IB extension flag.
pub mod evd_flags {
    use crate::dat::EvdFlags;
    /// `DAT_EVD_SOFTWARE_FLAG`: software events.
    pub const SOFTWARE: EvdFlags = 0x1;
    /// `DAT_EVD_CR_FLAG`: connection requests.
    pub const CR: EvdFlags = 0x10;
    /// `DAT_EVD_DTO_FLAG`: DTO completions.
    pub const DTO: EvdFlags = 0x20;
    /// `DAT_EVD_CONNECTION_FLAG`: connection events.
    pub const CONNECTION: EvdFlags = 0x40;
    /// `DAT_EVD_RMR_BIND_FLAG`: RMR bind completions.
    pub const RMR_BIND: EvdFlags = 0x80;
    /// `DAT_EVD_ASYNC_FLAG`: asynchronous errors.
    pub const ASYNC: EvdFlags = 0x100;
    /// `DAT_EVD_DEFAULT_FLAG`: all DAT event streams, no software events.
    pub const DEFAULT: EvdFlags = 0x1F0;
    /// `DAT_EVD_EXTENSION_BASE`: first extension flag.
    pub const EXTENSION_BASE: EvdFlags = 0x200;
    /// `DAT_IB_EVD_EXTENSION_FLAG`: IB extended events.
    pub const IB_EXTENSION: EvdFlags = 0x200;
}

/// `DAT_COMPLETION_FLAGS` (`dat.h`): per-DTO completion control and EP completion attributes.
pub mod completion_flags {
    use crate::dat::CompletionFlags;
    /// `DAT_COMPLETION_DEFAULT_FLAG`: complete with notification.
    pub const DEFAULT: CompletionFlags = 0x0;
    /// `DAT_COMPLETION_SUPPRESS_FLAG`: no completion event if successful.
    pub const SUPPRESS: CompletionFlags = 0x1;
    /// `DAT_COMPLETION_SOLICITED_WAIT_FLAG`: sender-controlled notification of the receive.
    pub const SOLICITED_WAIT: CompletionFlags = 0x2;
    /// `DAT_COMPLETION_UNSIGNALLED_FLAG`: completion does not signal a waiter.
    pub const UNSIGNALLED: CompletionFlags = 0x4;
    /// `DAT_COMPLETION_BARRIER_FENCE_FLAG`: wait for previous RDMA reads first.
    pub const BARRIER_FENCE: CompletionFlags = 0x8;
    /// `DAT_COMPLETION_EVD_THRESHOLD_FLAG`: waiter wakeup controlled by the `dat_evd_wait`
    /// threshold (uDAPL EP attribute).
    pub const EVD_THRESHOLD: CompletionFlags = 0x10;
    /// `DAT_COMPLETION_LMR_INVALIDATE_FENCE_FLAG`: fence an LMR invalidate (kDAPL).
    pub const LMR_INVALIDATE_FENCE: CompletionFlags = 0x20;
}

/// `DAT_MEM_PRIV_FLAGS` (`dat.h`) and `DAT_IB_MEM_PRIV_FLAGS` (`dat_ib_extensions.h`).
pub mod mem_priv {
    use crate::dat::MemPrivFlags;
    /// `DAT_MEM_PRIV_NONE_FLAG`: no access.
    pub const NONE: MemPrivFlags = 0x0;
    /// `DAT_MEM_PRIV_LOCAL_READ_FLAG`: local read.
    pub const LOCAL_READ: MemPrivFlags = 0x1;
    /// `DAT_MEM_PRIV_REMOTE_READ_FLAG`: remote read.
    pub const REMOTE_READ: MemPrivFlags = 0x2;
    /// `DAT_MEM_PRIV_LOCAL_WRITE_FLAG`: local write.
    pub const LOCAL_WRITE: MemPrivFlags = 0x10;
    /// `DAT_MEM_PRIV_REMOTE_WRITE_FLAG`: remote write.
    pub const REMOTE_WRITE: MemPrivFlags = 0x20;
    /// `DAT_MEM_PRIV_ALL_FLAG`: all four.
    pub const ALL: MemPrivFlags = 0x33;
    /// `DAT_MEM_PRIV_EXTENSION_BASE`: first extension privilege.
    pub const EXTENSION_BASE: MemPrivFlags = 0x40;
    /// `DAT_MEM_PRIV_READ_FLAG`: DAT 1.0 local and remote read.
    pub const READ: MemPrivFlags = 0x3;
    /// `DAT_MEM_PRIV_WRITE_FLAG`: DAT 1.0 local and remote write.
    pub const WRITE: MemPrivFlags = 0x30;
    /// `DAT_IB_MEM_PRIV_REMOTE_ATOMIC`: remote atomics (IB extension).
    pub const IB_REMOTE_ATOMIC: MemPrivFlags = 0x40;
}

/// `DAT_MEM_TYPE` (`udat.h`): what `RegionDescription` holds in `dat_lmr_create`.
pub mod mem_type {
    use crate::dat::MemType;
    /// `DAT_MEM_TYPE_VIRTUAL`: a virtual address (`for_va`).
    pub const VIRTUAL: MemType = 0;
    /// `DAT_MEM_TYPE_LMR`: an existing LMR (`for_lmr_handle`).
    pub const LMR: MemType = 1;
    /// `DAT_MEM_TYPE_SHARED_VIRTUAL`: shared memory (`for_shared_memory`, uDAPL).
    pub const SHARED_VIRTUAL: MemType = 2;
}

/// `DAT_VA_TYPE` (`dat.h`): how LMR/RMR addresses are interpreted.
pub mod va_type {
    use crate::dat::VaType;
    /// `DAT_VA_TYPE_VA`: virtual addresses.
    pub const VA: VaType = 0;
    /// `DAT_VA_TYPE_ZB`: zero-based offsets.
    pub const ZB: VaType = 1;
}

/// `DAT_CLOSE_FLAGS` (`dat.h`): `dat_ia_close` and `dat_ep_disconnect`.
pub mod close_flags {
    use crate::dat::CloseFlags;
    /// `DAT_CLOSE_ABRUPT_FLAG`: abrupt; outstanding work is flushed.
    pub const ABRUPT: CloseFlags = 0;
    /// `DAT_CLOSE_GRACEFUL_FLAG`: graceful; outstanding work completes first.
    pub const GRACEFUL: CloseFlags = 1;
    /// `DAT_CLOSE_DEFAULT`: = [`ABRUPT`].
    pub const DEFAULT: CloseFlags = 0;
}

/// `DAT_CONNECT_FLAGS` (`dat.h`): `dat_ep_connect`.
pub mod connect_flags {
    use crate::dat::ConnectFlags;
    /// `DAT_CONNECT_DEFAULT_FLAG`: single path.
    pub const DEFAULT: ConnectFlags = 0;
    /// `DAT_CONNECT_MULTIPATH_REQUESTED_FLAG`: multipath requested. A `#define` in `dat.h` renames
    /// the enumerator, so in C it is really called `DAT_CONNECT_MULTIPATH_FLAG`.
    pub const MULTIPATH_REQUESTED: ConnectFlags = 1;
    /// `DAT_CONNECT_MULTIPATH_REQUIRED_FLAG`: multipath required.
    pub const MULTIPATH_REQUIRED: ConnectFlags = 2;
}

/// `DAT_PSP_FLAGS` (`dat.h`): who creates the EP of a PSP connection request.
pub mod psp_flags {
    use crate::dat::PspFlags;
    /// `DAT_PSP_CONSUMER_FLAG`: the consumer provides the EP.
    pub const CONSUMER: PspFlags = 0;
    /// `DAT_PSP_PROVIDER_FLAG`: the provider creates the EP.
    pub const PROVIDER: PspFlags = 1;
}

/// `DAT_QOS` (`dat.h`): quality of service.
pub mod qos {
    use crate::dat::Qos;
    /// `DAT_QOS_BEST_EFFORT`: best effort.
    pub const BEST_EFFORT: Qos = 0x0;
    /// `DAT_QOS_HIGH_THROUGHPUT`: high throughput.
    pub const HIGH_THROUGHPUT: Qos = 0x1;
    /// `DAT_QOS_LOW_LATENCY`: low latency.
    pub const LOW_LATENCY: Qos = 0x2;
    /// `DAT_QOS_ECONOMY`: neither low latency nor high throughput.
    pub const ECONOMY: Qos = 0x4;
    /// `DAT_QOS_PREMIUM`: both low latency and high throughput.
    pub const PREMIUM: Qos = 0x8;
}

/// `DAT_SERVICE_TYPE` (`dat.h`) and `DAT_IB_SERVICE_TYPE` (`dat_ib_extensions.h`).
pub mod service_type {
    use crate::dat::ServiceType;
    /// `DAT_SERVICE_TYPE_RC`: reliable connection.
    pub const RC: ServiceType = 0;
    /// `DAT_SERVICE_TYPE_EXTENSION_BASE`: first extension service type.
    pub const EXTENSION_BASE: ServiceType = 1;
    /// `DAT_IB_SERVICE_TYPE_UD`: unreliable datagram (IB extension).
    pub const IB_UD: ServiceType = 1;
}

/// `DAT_EVD_STATE` (`udat.h`): three orthogonal substates (enabled, waitable, configuration).
pub mod evd_state {
    use crate::dat::EvdState;
    /// `DAT_EVD_STATE_ENABLED`: enabled.
    pub const ENABLED: EvdState = 0x1;
    /// `DAT_EVD_STATE_DISABLED`: disabled.
    pub const DISABLED: EvdState = 0x2;
    /// `DAT_EVD_STATE_WAITABLE`: waitable.
    pub const WAITABLE: EvdState = 0x4;
    /// `DAT_EVD_STATE_UNWAITABLE`: unwaitable.
    pub const UNWAITABLE: EvdState = 0x8;
    /// `DAT_EVD_STATE_CONFIG_NOTIFY`: notify on every event.
    pub const CONFIG_NOTIFY: EvdState = 0x10;
    /// `DAT_EVD_STATE_CONFIG_SOLICITED`: notify on solicited events.
    pub const CONFIG_SOLICITED: EvdState = 0x20;
    /// `DAT_EVD_STATE_CONFIG_THRESHOLD`: notify at the wait threshold (= NOTIFY | SOLICITED bits).
    pub const CONFIG_THRESHOLD: EvdState = 0x30;
}

/// `DAT_RMR_SCOPE` (`dat.h`): RMR protection scope.
pub mod rmr_scope {
    use crate::dat::RmrScope;
    /// `DAT_RMR_SCOPE_EP`: bound to at most one EP at a time.
    pub const EP: RmrScope = 0;
    /// `DAT_RMR_SCOPE_PZ`: bound to a protection zone.
    pub const PZ: RmrScope = 1;
    /// `DAT_RMR_SCOPE_ANY`: both.
    pub const ANY: RmrScope = 2;
}

/// `DAT_IOV_OWNERSHIP` (`dat.h`): `ProviderAttr::iov_ownership_on_return`.
pub mod iov_ownership {
    use crate::dat::IovOwnership;
    /// `DAT_IOV_CONSUMER`: the consumer may reuse the IOV at any time.
    pub const CONSUMER: IovOwnership = 0;
    /// `DAT_IOV_PROVIDER_NOMOD`: the provider does not modify the IOV.
    pub const PROVIDER_NOMOD: IovOwnership = 1;
    /// `DAT_IOV_PROVIDER_MOD`: the provider may modify the IOV until completion.
    pub const PROVIDER_MOD: IovOwnership = 2;
}

/// `DAT_EP_CREATOR_FOR_PSP` (`dat.h`): `ProviderAttr::ep_creator`.
pub mod ep_creator {
    use crate::dat::EpCreatorForPsp;
    /// `DAT_PSP_CREATES_EP_NEVER`: the provider never creates the EP.
    pub const NEVER: EpCreatorForPsp = 0;
    /// `DAT_PSP_CREATES_EP_IFASKED`: the provider creates it if asked.
    pub const IFASKED: EpCreatorForPsp = 1;
    /// `DAT_PSP_CREATES_EP_ALWAYS`: the provider always creates it.
    pub const ALWAYS: EpCreatorForPsp = 2;
}

/// `DAT_EXTENSION` (`dat.h`): `IaAttr::extension_supported`. libdat2 enables `dat_extension_op`
/// only
/// if `dat_ia_open`'s internal query returns non-zero here.
pub mod extension {
    use crate::dat::Extension;
    /// `DAT_EXTENSION_NONE`: no extension.
    pub const NONE: Extension = 0;
    /// `DAT_EXTENSION_IB`: the IB extension (also `DAT_IB_EXTENSION`).
    pub const IB: Extension = 1;
    /// `DAT_EXTENSION_IW`: the iWARP extension (also `DAT_IW_EXTENSION`).
    pub const IW: Extension = 2;
}

/// `DAT_SRQ_STATE` (`dat.h`).
pub mod srq_state {
    use crate::dat::SrqState;
    /// `DAT_SRQ_STATE_ERROR`: in error.
    pub const ERROR: SrqState = 0;
    /// `DAT_SRQ_STATE_OPERATIONAL`: operational.
    pub const OPERATIONAL: SrqState = 1;
    /// `DAT_SRQ_STATE_SHUTDOWN`: shut down.
    pub const SHUTDOWN: SrqState = 2;
}

/// `DAT_PROXY_TYPE` (`udat.h`): which member of `CnoParam::proxy` is valid.
pub mod proxy_type {
    use crate::dat::ProxyType;
    /// `DAT_PROXY_TYPE_NONE`: no proxy.
    pub const NONE: ProxyType = 0;
    /// `DAT_PROXY_TYPE_AGENT`: an OS wait proxy agent.
    pub const AGENT: ProxyType = 1;
    /// `DAT_PROXY_TYPE_FD`: a file descriptor.
    pub const FD: ProxyType = 2;
}

/// `DAT_PZ_SUPPORT` (`udat.h`): `ProviderAttr::pz_support`.
pub mod pz_support {
    use crate::dat::PzSupport;
    /// `DAT_PZ_UNIQUE`: PZs are unique to an IA.
    pub const UNIQUE: PzSupport = 0;
    /// `DAT_PZ_SHAREABLE`: PZs can be shared.
    pub const SHAREABLE: PzSupport = 1;
}

/// `DAT_HA_LB` (`dat.h`): `ProviderAttr::ha_loadbalancing`.
pub mod ha_lb {
    use crate::dat::HaLb;
    /// `DAT_HA_LB_NONE`: no load balancing.
    pub const NONE: HaLb = 0;
    /// `DAT_HA_LB_INTERCOMM`: across communicators.
    pub const INTERCOMM: HaLb = 1;
    /// `DAT_HA_LB_INTRACOMM`: within a communicator.
    pub const INTRACOMM: HaLb = 2;
}

/// `DAT_HA_RELATIONSHIP` (`dat_registry.h`).
pub mod ha_relationship {
    use crate::dat::HaRelationship;
    /// `DAT_HA_FALSE`: the two IAs are not related.
    pub const FALSE: HaRelationship = 0;
    /// `DAT_HA_TRUE`: the two IAs are related.
    pub const TRUE: HaRelationship = 1;
    /// `DAT_HA_UNKNOWN`: the relationship is not known.
    pub const UNKNOWN: HaRelationship = 2;
    /// `DAT_HA_CONFLICTING`: the IAs disagree.
    pub const CONFLICTING: HaRelationship = 3;
    /// `DAT_HA_EXTENSION_BASE`: first extension value.
    pub const EXTENSION_BASE: HaRelationship = 4;
}

/// The `*_ASYNC_ERROR_REASON` enums (`dat.h`): `AsynchErrorEventData::reason`, per object type.
pub mod async_reason {
    use crate::dat::Count;
    /// `DAT_IA_CATASTROPHIC_ERROR`: IA catastrophic error.
    pub const IA_CATASTROPHIC_ERROR: Count = 0;
    /// `DAT_IA_OTHER_ERROR`: other IA error.
    pub const IA_OTHER_ERROR: Count = 1;
    /// `DAT_EP_TRANSFER_TO_ERROR`: the EP went to error.
    pub const EP_TRANSFER_TO_ERROR: Count = 0;
    /// `DAT_EP_OTHER_ERROR`: other EP error.
    pub const EP_OTHER_ERROR: Count = 1;
    /// `DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT`: an EP reached its SRQ soft high watermark.
    pub const SRQ_SOFT_HIGH_WATERMARK_EVENT: Count = 2;
    /// `DAT_EVD_OVERFLOW_ERROR`: the EVD overflowed.
    pub const EVD_OVERFLOW_ERROR: Count = 0;
    /// `DAT_EVD_OTHER_ERROR`: other EVD error.
    pub const EVD_OTHER_ERROR: Count = 1;
    /// `DAT_SRQ_TRANSFER_TO_ERROR`: the SRQ went to error.
    pub const SRQ_TRANSFER_TO_ERROR: Count = 0;
    /// `DAT_SRQ_OTHER_ERROR`: other SRQ error.
    pub const SRQ_OTHER_ERROR: Count = 1;
    /// `DAT_SRQ_LOW_WATERMARK_EVENT`: the SRQ reached its low watermark.
    pub const SRQ_LOW_WATERMARK_EVENT: Count = 2;
    /// `DAT_LMR_OTHER_ERROR`: LMR error.
    pub const LMR_OTHER_ERROR: Count = 0;
    /// `DAT_RMR_OTHER_ERROR`: RMR error.
    pub const RMR_OTHER_ERROR: Count = 0;
    /// `DAT_PZ_OTHER_ERROR`: PZ error.
    pub const PZ_OTHER_ERROR: Count = 0;
}

/// `DAT_IA_ATTR_MASK` bits (`dat.h`, `udat.h`): which `IaAttr` fields `dat_ia_query` fills.
/// `IA_EXTENSION` and `IA_EXTENSIONS_SUPPORTED` are the same bit.
pub mod ia_field {
    use crate::dat::IaAttrMask;
    /// `DAT_IA_FIELD_IA_ADAPTER_NAME`.
    pub const IA_ADAPTER_NAME: IaAttrMask = 0x1;
    /// `DAT_IA_FIELD_IA_VENDOR_NAME`.
    pub const IA_VENDOR_NAME: IaAttrMask = 0x2;
    /// `DAT_IA_FIELD_IA_HARDWARE_MAJOR_VERSION`.
    pub const IA_HARDWARE_MAJOR_VERSION: IaAttrMask = 0x4;
    /// `DAT_IA_FIELD_IA_HARDWARE_MINOR_VERSION`.
    pub const IA_HARDWARE_MINOR_VERSION: IaAttrMask = 0x8;
    /// `DAT_IA_FIELD_IA_FIRMWARE_MAJOR_VERSION`.
    pub const IA_FIRMWARE_MAJOR_VERSION: IaAttrMask = 0x10;
    /// `DAT_IA_FIELD_IA_FIRMWARE_MINOR_VERSION`.
    pub const IA_FIRMWARE_MINOR_VERSION: IaAttrMask = 0x20;
    /// `DAT_IA_FIELD_IA_ADDRESS_PTR`.
    pub const IA_ADDRESS_PTR: IaAttrMask = 0x40;
    /// `DAT_IA_FIELD_IA_MAX_EPS`.
    pub const IA_MAX_EPS: IaAttrMask = 0x80;
    /// `DAT_IA_FIELD_IA_MAX_DTO_PER_EP`.
    pub const IA_MAX_DTO_PER_EP: IaAttrMask = 0x100;
    /// `DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN`.
    pub const IA_MAX_RDMA_READ_PER_EP_IN: IaAttrMask = 0x200;
    /// `DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT`.
    pub const IA_MAX_RDMA_READ_PER_EP_OUT: IaAttrMask = 0x400;
    /// `DAT_IA_FIELD_IA_MAX_EVDS`.
    pub const IA_MAX_EVDS: IaAttrMask = 0x800;
    /// `DAT_IA_FIELD_IA_MAX_EVD_QLEN`.
    pub const IA_MAX_EVD_QLEN: IaAttrMask = 0x1000;
    /// `DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_DTO`.
    pub const IA_MAX_IOV_SEGMENTS_PER_DTO: IaAttrMask = 0x2000;
    /// `DAT_IA_FIELD_IA_MAX_LMRS`.
    pub const IA_MAX_LMRS: IaAttrMask = 0x4000;
    /// `DAT_IA_FIELD_IA_MAX_LMR_BLOCK_SIZE`.
    pub const IA_MAX_LMR_BLOCK_SIZE: IaAttrMask = 0x8000;
    /// `DAT_IA_FIELD_IA_MAX_LMR_VIRTUAL_ADDRESS`.
    pub const IA_MAX_LMR_VIRTUAL_ADDRESS: IaAttrMask = 0x10000;
    /// `DAT_IA_FIELD_IA_MAX_PZS`.
    pub const IA_MAX_PZS: IaAttrMask = 0x20000;
    /// `DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE`.
    pub const IA_MAX_MESSAGE_SIZE: IaAttrMask = 0x40000;
    /// `DAT_IA_FIELD_IA_MAX_RDMA_SIZE`.
    pub const IA_MAX_RDMA_SIZE: IaAttrMask = 0x80000;
    /// `DAT_IA_FIELD_IA_MAX_RMRS`.
    pub const IA_MAX_RMRS: IaAttrMask = 0x100000;
    /// `DAT_IA_FIELD_IA_MAX_RMR_TARGET_ADDRESS`.
    pub const IA_MAX_RMR_TARGET_ADDRESS: IaAttrMask = 0x200000;
    /// `DAT_IA_FIELD_IA_MAX_SRQS`.
    pub const IA_MAX_SRQS: IaAttrMask = 0x400000;
    /// `DAT_IA_FIELD_IA_MAX_EP_PER_SRQ`.
    pub const IA_MAX_EP_PER_SRQ: IaAttrMask = 0x800000;
    /// `DAT_IA_FIELD_IA_MAX_RECV_PER_SRQ`.
    pub const IA_MAX_RECV_PER_SRQ: IaAttrMask = 0x1000000;
    /// `DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_READ`.
    pub const IA_MAX_IOV_SEGMENTS_PER_RDMA_READ: IaAttrMask = 0x2000000;
    /// `DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_WRITE`.
    pub const IA_MAX_IOV_SEGMENTS_PER_RDMA_WRITE: IaAttrMask = 0x4000000;
    /// `DAT_IA_FIELD_IA_MAX_RDMA_READ_IN`.
    pub const IA_MAX_RDMA_READ_IN: IaAttrMask = 0x8000000;
    /// `DAT_IA_FIELD_IA_MAX_RDMA_READ_OUT`.
    pub const IA_MAX_RDMA_READ_OUT: IaAttrMask = 0x10000000;
    /// `DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN_GUARANTEED`.
    pub const IA_MAX_RDMA_READ_PER_EP_IN_GUARANTEED: IaAttrMask = 0x20000000;
    /// `DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT_GUARANTEED`.
    pub const IA_MAX_RDMA_READ_PER_EP_OUT_GUARANTEED: IaAttrMask = 0x40000000;
    /// `DAT_IA_FIELD_IA_ZB_SUPPORTED`.
    pub const IA_ZB_SUPPORTED: IaAttrMask = 0x80000000;
    /// `DAT_IA_FIELD_IA_EXTENSIONS_SUPPORTED`.
    pub const IA_EXTENSIONS_SUPPORTED: IaAttrMask = 0x100000000;
    /// `DAT_IA_FIELD_IA_EXTENSION`.
    pub const IA_EXTENSION: IaAttrMask = 0x100000000;
    /// `DAT_IA_FIELD_IA_EXTENSION_VERSION`.
    pub const IA_EXTENSION_VERSION: IaAttrMask = 0x200000000;
    /// `DAT_IA_FIELD_IA_NUM_TRANSPORT_ATTR`.
    pub const IA_NUM_TRANSPORT_ATTR: IaAttrMask = 0x400000000;
    /// `DAT_IA_FIELD_IA_TRANSPORT_ATTR`.
    pub const IA_TRANSPORT_ATTR: IaAttrMask = 0x800000000;
    /// `DAT_IA_FIELD_IA_NUM_VENDOR_ATTR`.
    pub const IA_NUM_VENDOR_ATTR: IaAttrMask = 0x1000000000;
    /// `DAT_IA_FIELD_IA_VENDOR_ATTR`.
    pub const IA_VENDOR_ATTR: IaAttrMask = 0x2000000000;
    /// `DAT_IA_FIELD_IA_MAX_MTU_SIZE`: DAT 1.x name of [`IA_MAX_MESSAGE_SIZE`].
    pub const IA_MAX_MTU_SIZE: IaAttrMask = 0x40000;
    /// `DAT_IA_FIELD_ALL` (also `DAT_IA_ALL`): every field; libdat2 queries this at open.
    pub const ALL: IaAttrMask = 0x3FFFFFFFFF;
    /// `DAT_IA_FIELD_NONE`: no field.
    pub const NONE: IaAttrMask = 0x0;
}

/// `DAT_PROVIDER_ATTR_MASK` bits (`udat.h`): which `ProviderAttr` fields `dat_ia_query` fills.
pub mod provider_field {
    use crate::dat::ProviderAttrMask;
    /// `DAT_PROVIDER_FIELD_PROVIDER_NAME`.
    pub const PROVIDER_NAME: ProviderAttrMask = 0x1;
    /// `DAT_PROVIDER_FIELD_PROVIDER_VERSION_MAJOR`.
    pub const PROVIDER_VERSION_MAJOR: ProviderAttrMask = 0x2;
    /// `DAT_PROVIDER_FIELD_PROVIDER_VERSION_MINOR`.
    pub const PROVIDER_VERSION_MINOR: ProviderAttrMask = 0x4;
    /// `DAT_PROVIDER_FIELD_DAPL_VERSION_MAJOR`.
    pub const DAPL_VERSION_MAJOR: ProviderAttrMask = 0x8;
    /// `DAT_PROVIDER_FIELD_DAPL_VERSION_MINOR`.
    pub const DAPL_VERSION_MINOR: ProviderAttrMask = 0x10;
    /// `DAT_PROVIDER_FIELD_LMR_MEM_TYPE_SUPPORTED`.
    pub const LMR_MEM_TYPE_SUPPORTED: ProviderAttrMask = 0x20;
    /// `DAT_PROVIDER_FIELD_IOV_OWNERSHIP`.
    pub const IOV_OWNERSHIP: ProviderAttrMask = 0x40;
    /// `DAT_PROVIDER_FIELD_DAT_QOS_SUPPORTED`.
    pub const DAT_QOS_SUPPORTED: ProviderAttrMask = 0x80;
    /// `DAT_PROVIDER_FIELD_COMPLETION_FLAGS_SUPPORTED`.
    pub const COMPLETION_FLAGS_SUPPORTED: ProviderAttrMask = 0x100;
    /// `DAT_PROVIDER_FIELD_IS_THREAD_SAFE`.
    pub const IS_THREAD_SAFE: ProviderAttrMask = 0x200;
    /// `DAT_PROVIDER_FIELD_MAX_PRIVATE_DATA_SIZE`.
    pub const MAX_PRIVATE_DATA_SIZE: ProviderAttrMask = 0x400;
    /// `DAT_PROVIDER_FIELD_SUPPORTS_MULTIPATH`.
    pub const SUPPORTS_MULTIPATH: ProviderAttrMask = 0x800;
    /// `DAT_PROVIDER_FIELD_EP_CREATOR`.
    pub const EP_CREATOR: ProviderAttrMask = 0x1000;
    /// `DAT_PROVIDER_FIELD_PZ_SUPPORT`.
    pub const PZ_SUPPORT: ProviderAttrMask = 0x2000;
    /// `DAT_PROVIDER_FIELD_OPTIMAL_BUFFER_ALIGNMENT`.
    pub const OPTIMAL_BUFFER_ALIGNMENT: ProviderAttrMask = 0x4000;
    /// `DAT_PROVIDER_FIELD_EVD_STREAM_MERGING_SUPPORTED`.
    pub const EVD_STREAM_MERGING_SUPPORTED: ProviderAttrMask = 0x8000;
    /// `DAT_PROVIDER_FIELD_SRQ_SUPPORTED`.
    pub const SRQ_SUPPORTED: ProviderAttrMask = 0x10000;
    /// `DAT_PROVIDER_FIELD_SRQ_WATERMARKS_SUPPORTED`.
    pub const SRQ_WATERMARKS_SUPPORTED: ProviderAttrMask = 0x20000;
    /// `DAT_PROVIDER_FIELD_SRQ_EP_PZ_DIFFERENCE_SUPPORTED`.
    pub const SRQ_EP_PZ_DIFFERENCE_SUPPORTED: ProviderAttrMask = 0x40000;
    /// `DAT_PROVIDER_FIELD_SRQ_INFO_SUPPORTED`.
    pub const SRQ_INFO_SUPPORTED: ProviderAttrMask = 0x80000;
    /// `DAT_PROVIDER_FIELD_EP_RECV_INFO_SUPPORTED`.
    pub const EP_RECV_INFO_SUPPORTED: ProviderAttrMask = 0x100000;
    /// `DAT_PROVIDER_FIELD_LMR_SYNC_REQ`.
    pub const LMR_SYNC_REQ: ProviderAttrMask = 0x200000;
    /// `DAT_PROVIDER_FIELD_DTO_ASYNC_RETURN_GUARANTEED`.
    pub const DTO_ASYNC_RETURN_GUARANTEED: ProviderAttrMask = 0x400000;
    /// `DAT_PROVIDER_FIELD_RDMA_WRITE_FOR_RDMA_READ_REQ`.
    pub const RDMA_WRITE_FOR_RDMA_READ_REQ: ProviderAttrMask = 0x800000;
    /// `DAT_PROVIDER_FIELD_RDMA_READ_LMR_RMR_CONTEXT_EXPOSURE`.
    pub const RDMA_READ_LMR_RMR_CONTEXT_EXPOSURE: ProviderAttrMask = 0x1000000;
    /// `DAT_PROVIDER_FIELD_RMR_SCOPE_SUPPORTED`.
    pub const RMR_SCOPE_SUPPORTED: ProviderAttrMask = 0x2000000;
    /// `DAT_PROVIDER_FIELD_IS_SIGNAL_SAFE`.
    pub const IS_SIGNAL_SAFE: ProviderAttrMask = 0x4000000;
    /// `DAT_PROVIDER_FIELD_HA_SUPPORTED`.
    pub const HA_SUPPORTED: ProviderAttrMask = 0x8000000;
    /// `DAT_PROVIDER_FIELD_HA_LB`.
    pub const HA_LB: ProviderAttrMask = 0x10000000;
    /// `DAT_PROVIDER_FIELD_NUM_PROVIDER_SPECIFIC_ATTR`.
    pub const NUM_PROVIDER_SPECIFIC_ATTR: ProviderAttrMask = 0x20000000;
    /// `DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR`.
    pub const PROVIDER_SPECIFIC_ATTR: ProviderAttrMask = 0x40000000;
    /// `DAT_PROVIDER_FIELD_ALL`: every field; libdat2 queries this at close.
    pub const ALL: ProviderAttrMask = 0x7FFFFFFF;
    /// `DAT_PROVIDER_FIELD_NONE`: no field.
    pub const NONE: ProviderAttrMask = 0x0;
}

/// `DAT_EP_PARAM_MASK` bits (`dat.h`): `dat_ep_query`/`dat_ep_modify`.
pub mod ep_field {
    use crate::dat::EpParamMask;
    /// `DAT_EP_FIELD_IA_HANDLE`.
    pub const IA_HANDLE: EpParamMask = 0x1;
    /// `DAT_EP_FIELD_EP_STATE`.
    pub const EP_STATE: EpParamMask = 0x2;
    /// `DAT_EP_FIELD_COMM`.
    pub const COMM: EpParamMask = 0x4;
    /// `DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR`.
    pub const LOCAL_IA_ADDRESS_PTR: EpParamMask = 0x8;
    /// `DAT_EP_FIELD_LOCAL_PORT_QUAL`.
    pub const LOCAL_PORT_QUAL: EpParamMask = 0x10;
    /// `DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR`.
    pub const REMOTE_IA_ADDRESS_PTR: EpParamMask = 0x20;
    /// `DAT_EP_FIELD_REMOTE_PORT_QUAL`.
    pub const REMOTE_PORT_QUAL: EpParamMask = 0x40;
    /// `DAT_EP_FIELD_PZ_HANDLE`.
    pub const PZ_HANDLE: EpParamMask = 0x80;
    /// `DAT_EP_FIELD_RECV_EVD_HANDLE`.
    pub const RECV_EVD_HANDLE: EpParamMask = 0x100;
    /// `DAT_EP_FIELD_REQUEST_EVD_HANDLE`.
    pub const REQUEST_EVD_HANDLE: EpParamMask = 0x200;
    /// `DAT_EP_FIELD_CONNECT_EVD_HANDLE`.
    pub const CONNECT_EVD_HANDLE: EpParamMask = 0x400;
    /// `DAT_EP_FIELD_SRQ_HANDLE`.
    pub const SRQ_HANDLE: EpParamMask = 0x800;
    /// `DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE`.
    pub const EP_ATTR_SERVICE_TYPE: EpParamMask = 0x1000;
    /// `DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE`.
    pub const EP_ATTR_MAX_MESSAGE_SIZE: EpParamMask = 0x2000;
    /// `DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE`.
    pub const EP_ATTR_MAX_RDMA_SIZE: EpParamMask = 0x4000;
    /// `DAT_EP_FIELD_EP_ATTR_QOS`.
    pub const EP_ATTR_QOS: EpParamMask = 0x8000;
    /// `DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS`.
    pub const EP_ATTR_RECV_COMPLETION_FLAGS: EpParamMask = 0x10000;
    /// `DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS`.
    pub const EP_ATTR_REQUEST_COMPLETION_FLAGS: EpParamMask = 0x20000;
    /// `DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS`.
    pub const EP_ATTR_MAX_RECV_DTOS: EpParamMask = 0x40000;
    /// `DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS`.
    pub const EP_ATTR_MAX_REQUEST_DTOS: EpParamMask = 0x80000;
    /// `DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV`.
    pub const EP_ATTR_MAX_RECV_IOV: EpParamMask = 0x100000;
    /// `DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV`.
    pub const EP_ATTR_MAX_REQUEST_IOV: EpParamMask = 0x200000;
    /// `DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN`.
    pub const EP_ATTR_MAX_RDMA_READ_IN: EpParamMask = 0x400000;
    /// `DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT`.
    pub const EP_ATTR_MAX_RDMA_READ_OUT: EpParamMask = 0x800000;
    /// `DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW`.
    pub const EP_ATTR_SRQ_SOFT_HW: EpParamMask = 0x1000000;
    /// `DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV`.
    pub const EP_ATTR_MAX_RDMA_READ_IOV: EpParamMask = 0x2000000;
    /// `DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV`.
    pub const EP_ATTR_MAX_RDMA_WRITE_IOV: EpParamMask = 0x4000000;
    /// `DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR`.
    pub const EP_ATTR_NUM_TRANSPORT_ATTR: EpParamMask = 0x8000000;
    /// `DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR`.
    pub const EP_ATTR_TRANSPORT_SPECIFIC_ATTR: EpParamMask = 0x10000000;
    /// `DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR`.
    pub const EP_ATTR_NUM_PROVIDER_ATTR: EpParamMask = 0x20000000;
    /// `DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR`.
    pub const EP_ATTR_PROVIDER_SPECIFIC_ATTR: EpParamMask = 0x40000000;
    /// `DAT_EP_FIELD_EP_ATTR_ALL`: every `ep_attr` field.
    pub const EP_ATTR_ALL: EpParamMask = 0x7FFFF000;
    /// `DAT_EP_FIELD_ALL`: every field.
    pub const ALL: EpParamMask = 0x7FFFFFFF;
}

/// `DAT_SRQ_PARAM_MASK` (`dat.h`): `dat_srq_query`.
pub mod srq_field {
    use crate::dat::SrqParamMask;
    /// `DAT_SRQ_FIELD_IA_HANDLE`.
    pub const IA_HANDLE: SrqParamMask = 0x1;
    /// `DAT_SRQ_FIELD_SRQ_STATE`.
    pub const SRQ_STATE: SrqParamMask = 0x2;
    /// `DAT_SRQ_FIELD_PZ_HANDLE`.
    pub const PZ_HANDLE: SrqParamMask = 0x4;
    /// `DAT_SRQ_FIELD_MAX_RECV_DTO`.
    pub const MAX_RECV_DTO: SrqParamMask = 0x8;
    /// `DAT_SRQ_FIELD_MAX_RECV_IOV`.
    pub const MAX_RECV_IOV: SrqParamMask = 0x10;
    /// `DAT_SRQ_FIELD_LOW_WATERMARK`.
    pub const LOW_WATERMARK: SrqParamMask = 0x20;
    /// `DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT`.
    pub const AVAILABLE_DTO_COUNT: SrqParamMask = 0x40;
    /// `DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT`.
    pub const OUTSTANDING_DTO_COUNT: SrqParamMask = 0x80;
    /// `DAT_SRQ_FIELD_ALL`: every field.
    pub const ALL: SrqParamMask = 0xFF;
}

/// `DAT_PZ_PARAM_MASK` (`dat.h`): `dat_pz_query`.
pub mod pz_field {
    use crate::dat::PzParamMask;
    /// `DAT_PZ_FIELD_IA_HANDLE`.
    pub const IA_HANDLE: PzParamMask = 0x1;
    /// `DAT_PZ_FIELD_ALL`: every field.
    pub const ALL: PzParamMask = 0x1;
}

/// `DAT_PSP_PARAM_MASK` (`dat.h`): `dat_psp_query`.
pub mod psp_field {
    use crate::dat::PspParamMask;
    /// `DAT_PSP_FIELD_IA_HANDLE`.
    pub const IA_HANDLE: PspParamMask = 0x1;
    /// `DAT_PSP_FIELD_CONN_QUAL`.
    pub const CONN_QUAL: PspParamMask = 0x2;
    /// `DAT_PSP_FIELD_EVD_HANDLE`.
    pub const EVD_HANDLE: PspParamMask = 0x4;
    /// `DAT_PSP_FIELD_PSP_FLAGS`.
    pub const PSP_FLAGS: PspParamMask = 0x8;
    /// `DAT_PSP_FIELD_ALL`: every field.
    pub const ALL: PspParamMask = 0xF;
}

/// `DAT_RSP_PARAM_MASK` (`dat.h`): `dat_rsp_query`.
pub mod rsp_field {
    use crate::dat::RspParamMask;
    /// `DAT_RSP_FIELD_IA_HANDLE`.
    pub const IA_HANDLE: RspParamMask = 0x1;
    /// `DAT_RSP_FIELD_CONN_QUAL`.
    pub const CONN_QUAL: RspParamMask = 0x2;
    /// `DAT_RSP_FIELD_EVD_HANDLE`.
    pub const EVD_HANDLE: RspParamMask = 0x4;
    /// `DAT_RSP_FIELD_EP_HANDLE`.
    pub const EP_HANDLE: RspParamMask = 0x8;
    /// `DAT_RSP_FIELD_ALL`: every field.
    pub const ALL: RspParamMask = 0xF;
}

/// `DAT_CSP_PARAM_MASK` (`dat.h`): `dat_csp_query`.
pub mod csp_field {
    use crate::dat::CspParamMask;
    /// `DAT_CSP_FIELD_IA_HANDLE`.
    pub const IA_HANDLE: CspParamMask = 0x1;
    /// `DAT_CSP_FIELD_COMM`.
    pub const COMM: CspParamMask = 0x2;
    /// `DAT_CSP_FIELD_IA_ADDRESS`.
    pub const IA_ADDRESS: CspParamMask = 0x4;
    /// `DAT_CSP_FIELD_EVD_HANDLE`.
    pub const EVD_HANDLE: CspParamMask = 0x8;
    /// `DAT_CSP_FIELD_ALL`: every field.
    pub const ALL: CspParamMask = 0xF;
}

/// `DAT_CR_PARAM_MASK` (`dat.h`): `dat_cr_query`.
pub mod cr_field {
    use crate::dat::CrParamMask;
    /// `DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR`.
    pub const REMOTE_IA_ADDRESS_PTR: CrParamMask = 0x1;
    /// `DAT_CR_FIELD_REMOTE_PORT_QUAL`.
    pub const REMOTE_PORT_QUAL: CrParamMask = 0x2;
    /// `DAT_CR_FIELD_PRIVATE_DATA_SIZE`.
    pub const PRIVATE_DATA_SIZE: CrParamMask = 0x4;
    /// `DAT_CR_FIELD_PRIVATE_DATA`.
    pub const PRIVATE_DATA: CrParamMask = 0x8;
    /// `DAT_CR_FIELD_LOCAL_EP_HANDLE`.
    pub const LOCAL_EP_HANDLE: CrParamMask = 0x10;
    /// `DAT_CR_FIELD_ALL`: every field.
    pub const ALL: CrParamMask = 0x1F;
}

/// `DAT_RMR_PARAM_MASK` (`dat.h`): `dat_rmr_query`.
pub mod rmr_field {
    use crate::dat::RmrParamMask;
    /// `DAT_RMR_FIELD_IA_HANDLE`.
    pub const IA_HANDLE: RmrParamMask = 0x1;
    /// `DAT_RMR_FIELD_PZ_HANDLE`.
    pub const PZ_HANDLE: RmrParamMask = 0x2;
    /// `DAT_RMR_FIELD_LMR_TRIPLET`.
    pub const LMR_TRIPLET: RmrParamMask = 0x4;
    /// `DAT_RMR_FIELD_MEM_PRIV`.
    pub const MEM_PRIV: RmrParamMask = 0x8;
    /// `DAT_RMR_FIELD_RMR_CONTEXT`.
    pub const RMR_CONTEXT: RmrParamMask = 0x10;
    /// `DAT_RMR_FIELD_RMR_SCOPE`.
    pub const RMR_SCOPE: RmrParamMask = 0x20;
    /// `DAT_RMR_FIELD_VA_TYPE`.
    pub const VA_TYPE: RmrParamMask = 0x40;
    /// `DAT_RMR_FIELD_ALL`: every field.
    pub const ALL: RmrParamMask = 0x7F;
}

/// `DAT_EVD_PARAM_MASK` (`udat.h`): `dat_evd_query`.
pub mod evd_field {
    use crate::dat::EvdParamMask;
    /// `DAT_EVD_FIELD_IA_HANDLE`.
    pub const IA_HANDLE: EvdParamMask = 0x1;
    /// `DAT_EVD_FIELD_EVD_QLEN`.
    pub const EVD_QLEN: EvdParamMask = 0x2;
    /// `DAT_EVD_FIELD_EVD_STATE`.
    pub const EVD_STATE: EvdParamMask = 0x4;
    /// `DAT_EVD_FIELD_CNO`.
    pub const CNO: EvdParamMask = 0x8;
    /// `DAT_EVD_FIELD_EVD_FLAGS`.
    pub const EVD_FLAGS: EvdParamMask = 0x10;
    /// `DAT_EVD_FIELD_ALL`: every field.
    pub const ALL: EvdParamMask = 0x1F;
}

/// `DAT_LMR_PARAM_MASK` (`udat.h`): `dat_lmr_query`.
pub mod lmr_field {
    use crate::dat::LmrParamMask;
    /// `DAT_LMR_FIELD_IA_HANDLE`.
    pub const IA_HANDLE: LmrParamMask = 0x1;
    /// `DAT_LMR_FIELD_MEM_TYPE`.
    pub const MEM_TYPE: LmrParamMask = 0x2;
    /// `DAT_LMR_FIELD_REGION_DESC`.
    pub const REGION_DESC: LmrParamMask = 0x4;
    /// `DAT_LMR_FIELD_LENGTH`.
    pub const LENGTH: LmrParamMask = 0x8;
    /// `DAT_LMR_FIELD_PZ_HANDLE`.
    pub const PZ_HANDLE: LmrParamMask = 0x10;
    /// `DAT_LMR_FIELD_MEM_PRIV`.
    pub const MEM_PRIV: LmrParamMask = 0x20;
    /// `DAT_LMR_FIELD_VA_TYPE`.
    pub const VA_TYPE: LmrParamMask = 0x40;
    /// `DAT_LMR_FIELD_LMR_CONTEXT`.
    pub const LMR_CONTEXT: LmrParamMask = 0x80;
    /// `DAT_LMR_FIELD_RMR_CONTEXT`.
    pub const RMR_CONTEXT: LmrParamMask = 0x100;
    /// `DAT_LMR_FIELD_REGISTERED_SIZE`.
    pub const REGISTERED_SIZE: LmrParamMask = 0x200;
    /// `DAT_LMR_FIELD_REGISTERED_ADDRESS`.
    pub const REGISTERED_ADDRESS: LmrParamMask = 0x400;
    /// `DAT_LMR_FIELD_ALL`: every field.
    pub const ALL: LmrParamMask = 0x7FF;
}

/// `DAT_CNO_PARAM_MASK` (`udat.h`): `dat_cno_query`. The header's values are not bits
/// (`PROXY` = 3, `ALL` = 4); they are kept as the header has them.
pub mod cno_field {
    use crate::dat::CnoParamMask;
    /// `DAT_CNO_FIELD_IA_HANDLE`.
    pub const IA_HANDLE: CnoParamMask = 1;
    /// `DAT_CNO_FIELD_PROXY_TYPE`.
    pub const PROXY_TYPE: CnoParamMask = 2;
    /// `DAT_CNO_FIELD_PROXY`.
    pub const PROXY: CnoParamMask = 3;
    /// `DAT_CNO_FIELD_ALL`: every field.
    pub const ALL: CnoParamMask = 4;
}
