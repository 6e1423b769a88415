//! Structs and unions of `dat.h`, `udat.h` and `dat_platform_specific.h`: addresses, attributes,
//! parameters and events.

use core::ffi::{c_char, c_void};

use zerocopy::byteorder::big_endian::{U16, U32};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use super::*;
use crate::layout::layout;

// ---------------------------------------------------------------------------------------------
// Socket addresses (dat_platform_specific.h uses the OS's own): a DAT_IA_ADDRESS_PTR points to
// a `sockaddr` whose family says whether it is really a `sockaddr_in` or a `sockaddr_in6`.
// ---------------------------------------------------------------------------------------------

/// `struct sockaddr` (`DAT_SOCK_ADDR`): the generic socket address header.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct SockAddr {
    /// Address family ([`AF_INET`], [`AF_INET6`]).
    pub sa_family: u16,
    /// Family-specific address bytes.
    pub sa_data: [c_char; 14],
}
layout!(SockAddr, size = 16, sa_family @ 0, sa_data @ 2);

/// `struct sockaddr_in`: an IPv4 socket address. Aligned to 4 like C's (`in_addr` is a `u32`).
#[repr(C, align(4))]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct SockAddrIn {
    /// [`AF_INET`].
    pub sin_family: u16,
    /// Port, network order.
    pub sin_port: U16,
    /// IPv4 address (`struct in_addr`), network order.
    pub sin_addr: U32,
    /// Zero padding to the size of [`SockAddr`].
    pub sin_zero: [u8; 8],
}
layout!(SockAddrIn, size = 16, sin_family @ 0, sin_port @ 2, sin_addr @ 4, sin_zero @ 8);

/// `struct sockaddr_in6` (`DAT_SOCK_ADDR6`): an IPv6 socket address.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct SockAddrIn6 {
    /// [`AF_INET6`].
    pub sin6_family: u16,
    /// Port, network order.
    pub sin6_port: U16,
    /// Flow information, network order.
    pub sin6_flowinfo: U32,
    /// IPv6 address (`struct in6_addr`).
    pub sin6_addr: [u8; 16],
    /// Scope id (interface index), host order.
    pub sin6_scope_id: u32,
}
layout!(SockAddrIn6, size = 28, sin6_family @ 0, sin6_port @ 2, sin6_flowinfo @ 4, sin6_addr @ 8,
    sin6_scope_id @ 24);

// ---------------------------------------------------------------------------------------------
// Generic types (dat.h)
// ---------------------------------------------------------------------------------------------

/// `DAT_CONTEXT` (also `DAT_DTO_COOKIE`, `DAT_RMR_COOKIE`): 8 bytes of consumer data, passed by
/// value.
#[repr(C)]
#[derive(Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub union Context {
    /// As a pointer.
    pub as_ptr: *mut c_void,
    /// As a 64-bit integer.
    pub as_64: u64,
    /// As an index (`DAT_UVERYLONG`, `unsigned long long`).
    pub as_index: u64,
}
layout!(Context, size = 8, as_ptr @ 0, as_64 @ 0, as_index @ 0);

/// `DAT_NAMED_ATTR`: a provider-, vendor- or transport-specific attribute.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct NamedAttr {
    /// Attribute name.
    pub name: *const c_char,
    /// Attribute value.
    pub value: *const c_char,
}
layout!(NamedAttr, size = 16, name @ 0, value @ 8);

/// `DAT_LMR_TRIPLET`: one local buffer segment of a DTO.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct LmrTriplet {
    /// Start address (or offset for zero-based LMRs).
    pub virtual_address: Vaddr,
    /// Length; 0 makes the other two fields irrelevant.
    pub segment_length: SegLength,
    /// The LMR's local key.
    pub lmr_context: LmrContext,
}
layout!(LmrTriplet, size = 16, virtual_address @ 0, segment_length @ 8, lmr_context @ 12);

/// `DAT_RMR_TRIPLET`: the remote buffer of an RDMA operation.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct RmrTriplet {
    /// Remote start address.
    pub virtual_address: Vaddr,
    /// Length.
    pub segment_length: SegLength,
    /// The remote key.
    pub rmr_context: RmrContext,
}
layout!(RmrTriplet, size = 16, virtual_address @ 0, segment_length @ 8, rmr_context @ 12);

/// `DAT_COMM` (`dat_platform_specific.h`): a communicator, socket-style.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct Comm {
    /// Socket domain.
    pub domain: i32,
    /// Socket type.
    pub r#type: i32,
    /// Protocol.
    pub protocol: i32,
}
layout!(Comm, size = 12, domain @ 0, r#type @ 4, protocol @ 8);

// ---------------------------------------------------------------------------------------------
// Parameters and attributes (dat.h, udat.h)
// ---------------------------------------------------------------------------------------------

/// `DAT_RMR_PARAM`: `dat_rmr_query` result ([`rmr_field`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct RmrParam {
    /// Owning IA.
    pub ia_handle: IaHandle,
    /// Protection zone.
    pub pz_handle: PzHandle,
    /// The bound region.
    pub lmr_triplet: LmrTriplet,
    /// Access rights ([`mem_priv`]).
    pub mem_priv: MemPrivFlags,
    /// Remote key.
    pub rmr_context: RmrContext,
    /// Scope ([`rmr_scope`]).
    pub rmr_scope: RmrScope,
    /// Address type ([`va_type`]).
    pub va_type: VaType,
}
layout!(RmrParam, size = 48, ia_handle @ 0, pz_handle @ 8, lmr_triplet @ 16, mem_priv @ 32,
    rmr_context @ 36, rmr_scope @ 40, va_type @ 44);

/// `DAT_IA_ATTR` (`struct dat_ia_attr`, `udat.h`): `dat_ia_query` IA attributes ([`ia_field`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct IaAttr {
    /// Adapter name, NUL-terminated.
    pub adapter_name: [c_char; NAME_MAX_LENGTH],
    /// Vendor name, NUL-terminated.
    pub vendor_name: [c_char; NAME_MAX_LENGTH],
    /// Hardware major version.
    pub hardware_version_major: u32,
    /// Hardware minor version.
    pub hardware_version_minor: u32,
    /// Firmware major version.
    pub firmware_version_major: u32,
    /// Firmware minor version.
    pub firmware_version_minor: u32,
    /// The IA's address (must stay valid while the IA is open).
    pub ia_address_ptr: IaAddressPtr,
    /// Maximum EPs.
    pub max_eps: Count,
    /// Maximum outstanding DTOs per EP.
    pub max_dto_per_ep: Count,
    /// Maximum incoming RDMA reads per EP (DAT 1.0 `max_rdma_read_per_ep`).
    pub max_rdma_read_per_ep_in: Count,
    /// Maximum outgoing RDMA reads per EP.
    pub max_rdma_read_per_ep_out: Count,
    /// Maximum EVDs.
    pub max_evds: Count,
    /// Maximum EVD queue length.
    pub max_evd_qlen: Count,
    /// Maximum IOV segments per DTO.
    pub max_iov_segments_per_dto: Count,
    /// Maximum LMRs.
    pub max_lmrs: Count,
    /// Maximum LMR size.
    pub max_lmr_block_size: SegLength,
    /// Highest address an LMR may cover.
    pub max_lmr_virtual_address: Vaddr,
    /// Maximum PZs.
    pub max_pzs: Count,
    /// Maximum message size (DAT 1.x `max_mtu_size`).
    pub max_message_size: SegLength,
    /// Maximum RDMA size.
    pub max_rdma_size: SegLength,
    /// Maximum RMRs.
    pub max_rmrs: Count,
    /// Highest RMR target address.
    pub max_rmr_target_address: Vaddr,
    /// Maximum SRQs.
    pub max_srqs: Count,
    /// Maximum EPs per SRQ.
    pub max_ep_per_srq: Count,
    /// Maximum receives per SRQ.
    pub max_recv_per_srq: Count,
    /// Maximum IOV segments per RDMA read.
    pub max_iov_segments_per_rdma_read: Count,
    /// Maximum IOV segments per RDMA write.
    pub max_iov_segments_per_rdma_write: Count,
    /// Maximum incoming RDMA reads per IA.
    pub max_rdma_read_in: Count,
    /// Maximum outgoing RDMA reads per IA.
    pub max_rdma_read_out: Count,
    /// Whether `max_rdma_read_per_ep_in` is guaranteed.
    pub max_rdma_read_per_ep_in_guaranteed: Boolean,
    /// Whether `max_rdma_read_per_ep_out` is guaranteed.
    pub max_rdma_read_per_ep_out_guaranteed: Boolean,
    /// Whether zero-based addressing is supported.
    pub zb_supported: Boolean,
    /// Supported extension ([`extension`]); libdat2 enables `dat_extension_op` if non-zero.
    pub extension_supported: Extension,
    /// Extension version ([`IB_EXTENSION_VERSION`]).
    pub extension_version: Count,
    /// Number of entries in `transport_attr`.
    pub num_transport_attr: Count,
    /// Transport-specific attributes.
    pub transport_attr: *mut NamedAttr,
    /// Number of entries in `vendor_attr`.
    pub num_vendor_attr: Count,
    /// Vendor-specific attributes.
    pub vendor_attr: *mut NamedAttr,
}
layout!(IaAttr, size = 688, adapter_name @ 0, vendor_name @ 256, hardware_version_major @ 512,
    hardware_version_minor @ 516, firmware_version_major @ 520, firmware_version_minor @ 524,
    ia_address_ptr @ 528, max_eps @ 536, max_dto_per_ep @ 540, max_rdma_read_per_ep_in @ 544,
    max_rdma_read_per_ep_out @ 548, max_evds @ 552, max_evd_qlen @ 556,
    max_iov_segments_per_dto @ 560, max_lmrs @ 564, max_lmr_block_size @ 568,
    max_lmr_virtual_address @ 576, max_pzs @ 584, max_message_size @ 588, max_rdma_size @ 592,
    max_rmrs @ 596, max_rmr_target_address @ 600, max_srqs @ 608, max_ep_per_srq @ 612,
    max_recv_per_srq @ 616, max_iov_segments_per_rdma_read @ 620,
    max_iov_segments_per_rdma_write @ 624, max_rdma_read_in @ 628, max_rdma_read_out @ 632,
    max_rdma_read_per_ep_in_guaranteed @ 636, max_rdma_read_per_ep_out_guaranteed @ 640,
    zb_supported @ 644, extension_supported @ 648, extension_version @ 652,
    num_transport_attr @ 656, transport_attr @ 664, num_vendor_attr @ 672, vendor_attr @ 680);

/// `DAT_EP_ATTR`: endpoint attributes (`dat_ep_create`, `EpParam::ep_attr`).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct EpAttr {
    /// Service type ([`service_type`]).
    pub service_type: ServiceType,
    /// Maximum message size.
    pub max_message_size: SegLength,
    /// Maximum RDMA size.
    pub max_rdma_size: SegLength,
    /// Quality of service ([`qos`]).
    pub qos: Qos,
    /// Completion flags of receives ([`completion_flags`]).
    pub recv_completion_flags: CompletionFlags,
    /// Completion flags of requests ([`completion_flags`]).
    pub request_completion_flags: CompletionFlags,
    /// Maximum outstanding receives.
    pub max_recv_dtos: Count,
    /// Maximum outstanding requests.
    pub max_request_dtos: Count,
    /// Maximum IOV segments per receive.
    pub max_recv_iov: Count,
    /// Maximum IOV segments per request.
    pub max_request_iov: Count,
    /// Maximum incoming RDMA reads.
    pub max_rdma_read_in: Count,
    /// Maximum outgoing RDMA reads.
    pub max_rdma_read_out: Count,
    /// SRQ soft high watermark.
    pub srq_soft_hw: Count,
    /// Maximum IOV segments per RDMA read.
    pub max_rdma_read_iov: Count,
    /// Maximum IOV segments per RDMA write.
    pub max_rdma_write_iov: Count,
    /// Number of entries in `ep_transport_specific`.
    pub ep_transport_specific_count: Count,
    /// Transport-specific attributes.
    pub ep_transport_specific: *mut NamedAttr,
    /// Number of entries in `ep_provider_specific`.
    pub ep_provider_specific_count: Count,
    /// Provider-specific attributes.
    pub ep_provider_specific: *mut NamedAttr,
}
layout!(EpAttr, size = 88, service_type @ 0, max_message_size @ 4, max_rdma_size @ 8, qos @ 12,
    recv_completion_flags @ 16, request_completion_flags @ 20, max_recv_dtos @ 24,
    max_request_dtos @ 28, max_recv_iov @ 32, max_request_iov @ 36, max_rdma_read_in @ 40,
    max_rdma_read_out @ 44, srq_soft_hw @ 48, max_rdma_read_iov @ 52, max_rdma_write_iov @ 56,
    ep_transport_specific_count @ 60, ep_transport_specific @ 64,
    ep_provider_specific_count @ 72, ep_provider_specific @ 80);

/// `DAT_EP_PARAM`: `dat_ep_query`/`dat_ep_modify` parameters ([`ep_field`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct EpParam {
    /// Owning IA.
    pub ia_handle: IaHandle,
    /// State ([`ep_state`]).
    pub ep_state: EpState,
    /// Communicator.
    pub comm: Comm,
    /// Local address.
    pub local_ia_address_ptr: IaAddressPtr,
    /// Local port qualifier.
    pub local_port_qual: PortQual,
    /// Remote address.
    pub remote_ia_address_ptr: IaAddressPtr,
    /// Remote port qualifier.
    pub remote_port_qual: PortQual,
    /// Protection zone.
    pub pz_handle: PzHandle,
    /// EVD of receive completions.
    pub recv_evd_handle: EvdHandle,
    /// EVD of request completions.
    pub request_evd_handle: EvdHandle,
    /// EVD of connection events.
    pub connect_evd_handle: EvdHandle,
    /// Shared receive queue, if any.
    pub srq_handle: SrqHandle,
    /// Attributes.
    pub ep_attr: EpAttr,
}
layout!(EpParam, size = 184, ia_handle @ 0, ep_state @ 8, comm @ 12, local_ia_address_ptr @ 24,
    local_port_qual @ 32, remote_ia_address_ptr @ 40, remote_port_qual @ 48, pz_handle @ 56,
    recv_evd_handle @ 64, request_evd_handle @ 72, connect_evd_handle @ 80, srq_handle @ 88,
    ep_attr @ 96);

/// `DAT_SRQ_ATTR`: `dat_srq_create` attributes.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct SrqAttr {
    /// Maximum outstanding receives.
    pub max_recv_dtos: Count,
    /// Maximum IOV segments per receive.
    pub max_recv_iov: Count,
    /// Low watermark.
    pub low_watermark: Count,
}
layout!(SrqAttr, size = 12, max_recv_dtos @ 0, max_recv_iov @ 4, low_watermark @ 8);

/// `DAT_SRQ_PARAM`: `dat_srq_query` result ([`srq_field`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct SrqParam {
    /// Owning IA.
    pub ia_handle: IaHandle,
    /// State ([`srq_state`]).
    pub srq_state: SrqState,
    /// Protection zone.
    pub pz_handle: PzHandle,
    /// Maximum outstanding receives.
    pub max_recv_dtos: Count,
    /// Maximum IOV segments per receive.
    pub max_recv_iov: Count,
    /// Low watermark.
    pub low_watermark: Count,
    /// Receives posted and not consumed.
    pub available_dto_count: Count,
    /// Receives consumed and not completed.
    pub outstanding_dto_count: Count,
}
layout!(SrqParam, size = 48, ia_handle @ 0, srq_state @ 8, pz_handle @ 16, max_recv_dtos @ 24,
    max_recv_iov @ 28, low_watermark @ 32, available_dto_count @ 36, outstanding_dto_count @ 40);

/// `DAT_PZ_PARAM`: `dat_pz_query` result ([`pz_field`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct PzParam {
    /// Owning IA.
    pub ia_handle: IaHandle,
}
layout!(PzParam, size = 8, ia_handle @ 0);

/// `DAT_PSP_PARAM`: `dat_psp_query` result ([`psp_field`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct PspParam {
    /// Owning IA.
    pub ia_handle: IaHandle,
    /// Connection qualifier listened on.
    pub conn_qual: ConnQual,
    /// EVD of connection requests.
    pub evd_handle: EvdHandle,
    /// Who creates the EP ([`psp_flags`]).
    pub psp_flags: PspFlags,
}
layout!(PspParam, size = 32, ia_handle @ 0, conn_qual @ 8, evd_handle @ 16, psp_flags @ 24);

/// `DAT_RSP_PARAM`: `dat_rsp_query` result ([`rsp_field`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct RspParam {
    /// Owning IA.
    pub ia_handle: IaHandle,
    /// Connection qualifier listened on.
    pub conn_qual: ConnQual,
    /// EVD of connection requests.
    pub evd_handle: EvdHandle,
    /// The reserved EP.
    pub ep_handle: EpHandle,
}
layout!(RspParam, size = 32, ia_handle @ 0, conn_qual @ 8, evd_handle @ 16, ep_handle @ 24);

/// `DAT_CSP_PARAM`: `dat_csp_query` result ([`csp_field`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct CspParam {
    /// Owning IA.
    pub ia_handle: IaHandle,
    /// Communicator.
    pub comm: *mut Comm,
    /// Address listened on.
    pub address_ptr: IaAddressPtr,
    /// EVD of connection requests.
    pub evd_handle: EvdHandle,
}
layout!(CspParam, size = 32, ia_handle @ 0, comm @ 8, address_ptr @ 16, evd_handle @ 24);

/// `DAT_CR_PARAM`: `dat_cr_query` result ([`cr_field`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct CrParam {
    /// Address of the requesting IA.
    pub remote_ia_address_ptr: IaAddressPtr,
    /// Port qualifier of the requesting EP.
    pub remote_port_qual: PortQual,
    /// Size of `private_data`.
    pub private_data_size: Count,
    /// Private data sent with the request.
    pub private_data: *mut c_void,
    /// The EP of a PSP with provider-created EPs or of an RSP, else null.
    pub local_ep_handle: EpHandle,
}
layout!(CrParam, size = 40, remote_ia_address_ptr @ 0, remote_port_qual @ 8,
    private_data_size @ 16, private_data @ 24, local_ep_handle @ 32);

// ---------------------------------------------------------------------------------------------
// Events (dat.h)
// ---------------------------------------------------------------------------------------------

/// `DAT_DTO_COMPLETION_EVENT_DATA`: [`event::DTO_COMPLETION_EVENT`] (and IB extended DTOs).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct DtoCompletionEventData {
    /// The EP the DTO was posted on.
    pub ep_handle: EpHandle,
    /// The cookie given when posting.
    pub user_cookie: DtoCookie,
    /// Status ([`dto_status`]).
    pub status: DtoCompletionStatus,
    /// Bytes transferred (valid on success). The C name is misspelt.
    pub transfered_length: SegLength,
    /// The operation ([`dtos`]).
    pub operation: Dtos,
    /// The RMR invalidated by a receive with invalidate.
    pub rmr_context: RmrContext,
}
layout!(DtoCompletionEventData, size = 32, ep_handle @ 0, user_cookie @ 8, status @ 16,
    transfered_length @ 20, operation @ 24, rmr_context @ 28);

/// `DAT_RMR_BIND_COMPLETION_EVENT_DATA`: [`event::RMR_BIND_COMPLETION_EVENT`].
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct RmrBindCompletionEventData {
    /// The RMR.
    pub rmr_handle: RmrHandle,
    /// The cookie given to the bind.
    pub user_cookie: RmrCookie,
    /// Status ([`dto_status`]).
    pub status: DtoCompletionStatus,
}
layout!(RmrBindCompletionEventData, size = 24, rmr_handle @ 0, user_cookie @ 8, status @ 16);

/// `DAT_SP_HANDLE`: the service point that received a connection request.
#[repr(C)]
#[derive(Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub union SpHandle {
    /// As an RSP.
    pub rsp_handle: RspHandle,
    /// As a PSP.
    pub psp_handle: PspHandle,
    /// As a CSP.
    pub csp_handle: CspHandle,
}
layout!(SpHandle, size = 8, rsp_handle @ 0, psp_handle @ 0, csp_handle @ 0);

/// `DAT_CR_ARRIVAL_EVENT_DATA`: [`event::CONNECTION_REQUEST_EVENT`].
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct CrArrivalEventData {
    /// The service point (null for an RSP, which is destroyed by the request).
    pub sp_handle: SpHandle,
    /// Local address the request arrived on.
    pub local_ia_address_ptr: IaAddressPtr,
    /// Connection qualifier it arrived on.
    pub conn_qual: ConnQual,
    /// The new connection request, to accept or reject.
    pub cr_handle: CrHandle,
    /// Whether the private data was truncated.
    pub truncate_flag: Boolean,
}
layout!(CrArrivalEventData, size = 40, sp_handle @ 0, local_ia_address_ptr @ 8, conn_qual @ 16,
    cr_handle @ 24, truncate_flag @ 32);

/// `DAT_CONNECTION_EVENT_DATA`: the `event::CONNECTION_EVENT_*` events.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct ConnectionEventData {
    /// The EP.
    pub ep_handle: EpHandle,
    /// Size of `private_data`.
    pub private_data_size: Count,
    /// Private data from the peer.
    pub private_data: *mut c_void,
}
layout!(ConnectionEventData, size = 24, ep_handle @ 0, private_data_size @ 8, private_data @ 16);

/// `DAT_ASYNCH_ERROR_EVENT_DATA`: the `event::ASYNC_ERROR_*` events.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct AsynchErrorEventData {
    /// The affected object: IA (unaffiliated), EP, EVD, SRQ, LMR, RMR or PZ.
    pub dat_handle: Handle,
    /// Object-specific reason ([`async_reason`]).
    pub reason: Count,
}
layout!(AsynchErrorEventData, size = 16, dat_handle @ 0, reason @ 8);

/// `DAT_SOFTWARE_EVENT_DATA`: [`event::SOFTWARE_EVENT`].
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct SoftwareEventData {
    /// The consumer's pointer.
    pub pointer: *mut c_void,
}
layout!(SoftwareEventData, size = 8, pointer @ 0);

/// `DAT_EVENT_DATA`: the event-specific data; `Event::event_number` says which member.
#[repr(C)]
#[derive(Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub union EventData {
    /// DTO completion.
    pub dto_completion_event_data: DtoCompletionEventData,
    /// RMR bind completion.
    pub rmr_completion_event_data: RmrBindCompletionEventData,
    /// Connection request arrival.
    pub cr_arrival_event_data: CrArrivalEventData,
    /// Connection event.
    pub connect_event_data: ConnectionEventData,
    /// Asynchronous error.
    pub asynch_error_event_data: AsynchErrorEventData,
    /// Software event.
    pub software_event_data: SoftwareEventData,
}
layout!(EventData, size = 40, dto_completion_event_data @ 0, rmr_completion_event_data @ 0,
    cr_arrival_event_data @ 0, connect_event_data @ 0, asynch_error_event_data @ 0,
    software_event_data @ 0);

/// `DAT_EVENT`: one event, as `dat_evd_dequeue`/`dat_evd_wait` return it.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct Event {
    /// What happened ([`event`]).
    pub event_number: EventNumber,
    /// The EVD the event came from.
    pub evd_handle: EvdHandle,
    /// Event data.
    pub event_data: EventData,
    /// Extension data; an [`IbExtensionEventData`] for IB extension events.
    pub event_extension_data: [u64; 8],
}
layout!(Event, size = 120, event_number @ 0, evd_handle @ 8, event_data @ 16,
    event_extension_data @ 56);

// ---------------------------------------------------------------------------------------------
// Provider registration (dat.h) and uDAPL objects (udat.h)
// ---------------------------------------------------------------------------------------------

/// `DAT_PROVIDER_INFO`: the registry key of a provider: (name, version, thread safety).
/// libdat2 passes it to `dat_provider_init`; the provider registers with the same pointer.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct ProviderInfo {
    /// IA name from `dat.conf`, NUL-terminated.
    pub ia_name: [c_char; NAME_MAX_LENGTH],
    /// DAT major version ([`VERSION_MAJOR`]).
    pub dapl_version_major: u32,
    /// DAT minor version ([`VERSION_MINOR`]).
    pub dapl_version_minor: u32,
    /// Thread safety ([`THREADSAFE`]).
    pub is_thread_safe: Boolean,
}
layout!(ProviderInfo, size = 268, ia_name @ 0, dapl_version_major @ 256,
    dapl_version_minor @ 260, is_thread_safe @ 264);

/// `DAT_EVD_PARAM` (`struct dat_evd_param`): `dat_evd_query` result ([`evd_field`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct EvdParam {
    /// Owning IA.
    pub ia_handle: IaHandle,
    /// Queue length.
    pub evd_qlen: Count,
    /// State ([`evd_state`]).
    pub evd_state: EvdState,
    /// Attached CNO, if any.
    pub cno_handle: CnoHandle,
    /// Event streams ([`evd_flags`]).
    pub evd_flags: EvdFlags,
}
layout!(EvdParam, size = 32, ia_handle @ 0, evd_qlen @ 8, evd_state @ 12, cno_handle @ 16,
    evd_flags @ 24);

/// `DAT_SHARED_MEMORY`: shared memory for an LMR ([`mem_type::SHARED_VIRTUAL`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct SharedMemory {
    /// Start address.
    pub virtual_address: *mut c_void,
    /// Shared memory id.
    pub shared_memory_id: LmrCookie,
}
layout!(SharedMemory, size = 16, virtual_address @ 0, shared_memory_id @ 8);

/// `DAT_REGION_DESCRIPTION`: the memory of `dat_lmr_create`, passed by value (16 bytes);
/// the `mem_type` argument says which member.
#[repr(C)]
#[derive(Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub union RegionDescription {
    /// [`mem_type::VIRTUAL`]: a virtual address.
    pub for_va: *mut c_void,
    /// [`mem_type::LMR`]: an existing LMR.
    pub for_lmr_handle: LmrHandle,
    /// [`mem_type::SHARED_VIRTUAL`]: shared memory.
    pub for_shared_memory: SharedMemory,
}
layout!(RegionDescription, size = 16, for_va @ 0, for_lmr_handle @ 0, for_shared_memory @ 0);

/// `DAT_LMR_PARAM` (`struct dat_lmr_param`): `dat_lmr_query` result ([`lmr_field`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct LmrParam {
    /// Owning IA.
    pub ia_handle: IaHandle,
    /// Memory type ([`mem_type`]).
    pub mem_type: MemType,
    /// The registered memory.
    pub region_desc: RegionDescription,
    /// Requested length.
    pub length: Vlen,
    /// Protection zone.
    pub pz_handle: PzHandle,
    /// Access rights ([`mem_priv`]).
    pub mem_priv: MemPrivFlags,
    /// Address type ([`va_type`]).
    pub va_type: VaType,
    /// Local key.
    pub lmr_context: LmrContext,
    /// Remote key.
    pub rmr_context: RmrContext,
    /// Length actually registered.
    pub registered_size: Vlen,
    /// Address actually registered.
    pub registered_address: Vaddr,
}
layout!(LmrParam, size = 80, ia_handle @ 0, mem_type @ 8, region_desc @ 16, length @ 32,
    pz_handle @ 40, mem_priv @ 48, va_type @ 52, lmr_context @ 56, rmr_context @ 60,
    registered_size @ 64, registered_address @ 72);

/// `DAT_AGENT_FUNC`: an OS wait proxy agent, called with its instance data and the EVD.
pub type AgentFunc = Option<unsafe extern "C" fn(*mut c_void, EvdHandle)>;

/// `DAT_OS_WAIT_PROXY_AGENT`: the agent a CNO calls, passed by value (16 bytes).
/// `DAT_OS_WAIT_PROXY_AGENT_NULL` is the zeroed value.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct OsWaitProxyAgent {
    /// Passed to the function.
    pub instance_data: *mut c_void,
    /// The function.
    pub proxy_agent_func: AgentFunc,
}
layout!(OsWaitProxyAgent, size = 16, instance_data @ 0, proxy_agent_func @ 8);

/// The unnamed union `proxy` of `DAT_CNO_PARAM`; `proxy_type` says which member.
#[repr(C)]
#[derive(Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub union CnoProxy {
    /// [`proxy_type::AGENT`].
    pub agent: OsWaitProxyAgent,
    /// [`proxy_type::FD`].
    pub fd: Fd,
    /// [`proxy_type::NONE`].
    pub none: *mut c_void,
}
layout!(CnoProxy, size = 16, agent @ 0, fd @ 0, none @ 0);

/// `DAT_CNO_PARAM`: `dat_cno_query` result ([`cno_field`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct CnoParam {
    /// Owning IA.
    pub ia_handle: IaHandle,
    /// Kind of proxy ([`proxy_type`]).
    pub proxy_type: ProxyType,
    /// The proxy.
    pub proxy: CnoProxy,
}
layout!(CnoParam, size = 32, ia_handle @ 0, proxy_type @ 8, proxy @ 16);

/// `DAT_PROVIDER_ATTR` (`struct dat_provider_attr`, `udat.h`): `dat_ia_query` provider
/// attributes ([`provider_field`]). libdat2's `dat_ia_close` rebuilds the registry key from
/// `dapl_version_*` and `is_thread_safe`, so they must be 2, 0 and [`FALSE`].
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct ProviderAttr {
    /// Provider name, NUL-terminated.
    pub provider_name: [c_char; NAME_MAX_LENGTH],
    /// Provider major version.
    pub provider_version_major: u32,
    /// Provider minor version.
    pub provider_version_minor: u32,
    /// DAT major version.
    pub dapl_version_major: u32,
    /// DAT minor version.
    pub dapl_version_minor: u32,
    /// Supported memory types ([`mem_type`] bits).
    pub lmr_mem_types_supported: MemType,
    /// IOV ownership on return ([`iov_ownership`]).
    pub iov_ownership_on_return: IovOwnership,
    /// Supported QoS ([`qos`] bits).
    pub dat_qos_supported: Qos,
    /// Supported completion flags ([`completion_flags`] bits).
    pub completion_flags_supported: CompletionFlags,
    /// Thread safety.
    pub is_thread_safe: Boolean,
    /// Maximum private data size.
    pub max_private_data_size: Count,
    /// Whether multipath is supported.
    pub supports_multipath: Boolean,
    /// Who creates EPs for PSPs ([`ep_creator`]).
    pub ep_creator: EpCreatorForPsp,
    /// PZ sharing ([`pz_support`]).
    pub pz_support: PzSupport,
    /// Optimal buffer alignment.
    pub optimal_buffer_alignment: u32,
    /// Which event streams may share an EVD; rows and columns in [`evd_flags`] order
    /// (software, CR, DTO, connection, RMR bind, async). `const` in C.
    pub evd_stream_merging_supported: [[Boolean; 6]; 6],
    /// Whether SRQs are supported.
    pub srq_supported: Boolean,
    /// SRQ watermark support.
    pub srq_watermarks_supported: Count,
    /// Whether an SRQ and its EPs may be in different PZs.
    pub srq_ep_pz_difference_supported: Boolean,
    /// SRQ query support.
    pub srq_info_supported: Count,
    /// EP receive query support.
    pub ep_recv_info_supported: Count,
    /// Whether `dat_lmr_sync_rdma_*` is required.
    pub lmr_sync_req: Boolean,
    /// Whether DTO errors are reported asynchronously only.
    pub dto_async_return_guaranteed: Boolean,
    /// Whether an RDMA read target needs RDMA write rights.
    pub rdma_write_for_rdma_read_req: Boolean,
    /// Whether RDMA read exposes the LMR's RMR context.
    pub rdma_read_lmr_rmr_context_exposure: Boolean,
    /// Supported RMR scopes ([`rmr_scope`]).
    pub rmr_scope_supported: RmrScope,
    /// Whether calls are async-signal safe.
    pub is_signal_safe: Boolean,
    /// Whether high availability is supported.
    pub ha_supported: Boolean,
    /// HA load balancing ([`ha_lb`]).
    pub ha_loadbalancing: HaLb,
    /// Number of entries in `provider_specific_attr`.
    pub num_provider_specific_attr: Count,
    /// Provider-specific attributes (the IB extension lists its operations here).
    pub provider_specific_attr: *mut NamedAttr,
}
layout!(ProviderAttr, size = 520, provider_name @ 0, provider_version_major @ 256,
    provider_version_minor @ 260, dapl_version_major @ 264, dapl_version_minor @ 268,
    lmr_mem_types_supported @ 272, iov_ownership_on_return @ 276, dat_qos_supported @ 280,
    completion_flags_supported @ 284, is_thread_safe @ 288, max_private_data_size @ 292,
    supports_multipath @ 296, ep_creator @ 300, pz_support @ 304, optimal_buffer_alignment @ 308,
    evd_stream_merging_supported @ 312, srq_supported @ 456, srq_watermarks_supported @ 460,
    srq_ep_pz_difference_supported @ 464, srq_info_supported @ 468, ep_recv_info_supported @ 472,
    lmr_sync_req @ 476, dto_async_return_guaranteed @ 480, rdma_write_for_rdma_read_req @ 484,
    rdma_read_lmr_rmr_context_exposure @ 488, rmr_scope_supported @ 492, is_signal_safe @ 496,
    ha_supported @ 500, ha_loadbalancing @ 504, num_provider_specific_attr @ 508,
    provider_specific_attr @ 512);

opaque_debug!(EventData, RegionDescription, CnoProxy);

impl core::fmt::Debug for Context {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // SAFETY: every member covers all 8 bytes, so any initialised value reads as a u64.
        write!(f, "Context({:#x})", unsafe { self.as_64 })
    }
}

impl core::fmt::Debug for SpHandle {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // SAFETY: all three members are handles of the same type.
        write!(f, "SpHandle({:p})", unsafe { self.psp_handle })
    }
}
