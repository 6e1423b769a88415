//! The DAT 2.0 C types a provider hands to OFA `libdat2` and its consumers (`dat2/*.h`).
//!
//! Layouts are those of LP64 Linux (x86_64 and aarch64) with `DAT_EXTENSIONS` defined, which
//! `udat_config.h` does by default: every consumer and `libdat2` itself is built that way, so
//! [`Event`] carries `event_extension_data` and [`Provider`] has its 81st slot.
//!
//! - Scalars and handles: the aliases below. C enums are 4 bytes; a field or argument of enum
//!   type is a `u32` alias here and its values are plain consts in a small module (e.g.
//!   [`ep_state`]), so any value a peer sends can be represented.
//! - `DAT_RETURN`: [`ret`] (types and class bits) and [`subtype`].
//! - Other constants: one module per C enum or mask ([`event`], [`dtos`], [`evd_flags`],
//!   [`ia_field`], ...), the IB extension's in `ib_*` modules.
//! - Structs and unions: attributes, parameters and events ([`IaAttr`], [`EpParam`], [`Event`],
//!   ...), the IB extension event data ([`IbExtensionEventData`]) and the provider table
//!   ([`Provider`]) with one function-pointer type per slot.
//!
//! Structs without pointers derive the full zerocopy set. Structs with pointers (handles,
//! `char *`, function pointers) derive `FromZeros`, `KnownLayout` and `Immutable` only, and keep
//! C's implicit padding (nothing needs their bytes). Unions print as `Name { .. }`: which member
//! is valid depends on a neighbouring field.

use core::ffi::{c_char, c_void};

mod consts;
mod ib;
mod provider;
mod status;
mod types;

pub use consts::*;
pub use ib::*;
pub use provider::*;
pub use status::*;
pub use types::*;

/// `Debug` for a union: only the type name, since which member is valid depends on context.
macro_rules! opaque_debug {
    ($($t:ty),* $(,)?) => {$(
        impl ::core::fmt::Debug for $t {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(stringify!($t)).finish_non_exhaustive()
            }
        }
    )*};
}
use opaque_debug;

// ---------------------------------------------------------------------------------------------
// Scalar types (dat_platform_specific.h, dat.h, udat.h)
// ---------------------------------------------------------------------------------------------

/// `DAT_RETURN`: status of every DAT call ([`ret`] | [`subtype`]).
pub type Return = u32;
/// `DAT_RETURN_SUBTYPE`: the low 16 bits of a [`Return`] ([`subtype`]).
pub type ReturnSubtype = u32;
/// `DAT_COUNT`: a signed count (`int`).
pub type Count = i32;
/// `DAT_BOOLEAN`: [`FALSE`] or [`TRUE`] (a 4-byte enum).
pub type Boolean = u32;
/// `DAT_TIMEOUT`: microseconds, [`TIMEOUT_INFINITE`] for no limit.
pub type Timeout = u32;
/// `DAT_VLEN`: a 64-bit length.
pub type Vlen = u64;
/// `DAT_VADDR`: a 64-bit virtual address in host order.
pub type Vaddr = u64;
/// `DAT_PADDR`: a 64-bit physical address.
pub type Paddr = u64;
/// `DAT_SEG_LENGTH`: a 32-bit data segment length.
pub type SegLength = u32;
/// `DAT_LMR_CONTEXT`: the local key of an LMR.
pub type LmrContext = u32;
/// `DAT_RMR_CONTEXT`: the remote key of an LMR or RMR.
pub type RmrContext = u32;
/// `DAT_CONN_QUAL`: a connection qualifier (for ferrodat: a TCP port).
pub type ConnQual = u64;
/// `DAT_PORT_QUAL`: a port qualifier.
pub type PortQual = u64;
/// `DAT_FD`: a file descriptor.
pub type Fd = i32;
/// `DAT_EXTENDED_OP`: the operation number of `dat_extension_op` (`int`; [`ib_op`]).
pub type ExtendedOp = i32;
/// `DAT_NAME_PTR`: an IA or attribute name (`char *`).
pub type NamePtr = *mut c_char;
/// `DAT_IA_ADDRESS_PTR`: an IA address, a socket address starting with its family.
pub type IaAddressPtr = *mut SockAddr;
/// `DAT_SOCK_ADDR6`: `struct sockaddr_in6`.
pub type SockAddr6 = SockAddrIn6;
/// `DAT_LMR_COOKIE`: `char (*)[DAT_LMR_COOKIE_SIZE]`, the id of shared memory.
pub type LmrCookie = *mut [c_char; LMR_COOKIE_SIZE];
/// `DAT_DTO_COOKIE`: the consumer's cookie of a DTO, returned in its completion.
pub type DtoCookie = Context;
/// `DAT_RMR_COOKIE`: the consumer's cookie of an RMR bind.
pub type RmrCookie = Context;

/// `DAT_EP_STATE` ([`ep_state`]).
pub type EpState = u32;
/// `DAT_EVENT_NUMBER` ([`event`]).
pub type EventNumber = u32;
/// `DAT_DTO_COMPLETION_STATUS` ([`dto_status`]); also `DAT_RMR_BIND_COMPLETION_STATUS`.
pub type DtoCompletionStatus = u32;
/// `DAT_DTOS` ([`dtos`]).
pub type Dtos = u32;
/// `DAT_HANDLE_TYPE` ([`handle_type`]).
pub type HandleType = u32;
/// `DAT_COMPLETION_FLAGS` ([`completion_flags`]).
pub type CompletionFlags = u32;
/// `DAT_EVD_FLAGS` ([`evd_flags`]).
pub type EvdFlags = u32;
/// `DAT_EVD_STATE` ([`evd_state`]).
pub type EvdState = u32;
/// `DAT_MEM_PRIV_FLAGS` ([`mem_priv`]).
pub type MemPrivFlags = u32;
/// `DAT_MEM_TYPE` ([`mem_type`]).
pub type MemType = u32;
/// `DAT_VA_TYPE` ([`va_type`]).
pub type VaType = u32;
/// `DAT_CLOSE_FLAGS` ([`close_flags`]).
pub type CloseFlags = u32;
/// `DAT_CONNECT_FLAGS` ([`connect_flags`]).
pub type ConnectFlags = u32;
/// `DAT_PSP_FLAGS` ([`psp_flags`]).
pub type PspFlags = u32;
/// `DAT_QOS` ([`qos`]).
pub type Qos = u32;
/// `DAT_SERVICE_TYPE` ([`service_type`]).
pub type ServiceType = u32;
/// `DAT_RMR_SCOPE` ([`rmr_scope`]).
pub type RmrScope = u32;
/// `DAT_IOV_OWNERSHIP` ([`iov_ownership`]).
pub type IovOwnership = u32;
/// `DAT_EP_CREATOR_FOR_PSP` ([`ep_creator`]).
pub type EpCreatorForPsp = u32;
/// `DAT_EXTENSION` ([`extension`]).
pub type Extension = u32;
/// `DAT_SRQ_STATE` ([`srq_state`]).
pub type SrqState = u32;
/// `DAT_PROXY_TYPE` ([`proxy_type`]).
pub type ProxyType = u32;
/// `DAT_PZ_SUPPORT` ([`pz_support`]).
pub type PzSupport = u32;
/// `DAT_HA_LB` ([`ha_lb`]).
pub type HaLb = u32;
/// `DAT_HA_RELATIONSHIP` ([`ha_relationship`]).
pub type HaRelationship = u32;

/// `DAT_IA_ATTR_MASK` ([`ia_field`]).
pub type IaAttrMask = u64;
/// `DAT_PROVIDER_ATTR_MASK` ([`provider_field`]).
pub type ProviderAttrMask = u64;
/// `DAT_EP_PARAM_MASK` ([`ep_field`]).
pub type EpParamMask = u64;
/// `DAT_SRQ_PARAM_MASK` ([`srq_field`]).
pub type SrqParamMask = u32;
/// `DAT_PZ_PARAM_MASK` ([`pz_field`]).
pub type PzParamMask = u32;
/// `DAT_PSP_PARAM_MASK` ([`psp_field`]).
pub type PspParamMask = u32;
/// `DAT_RSP_PARAM_MASK` ([`rsp_field`]).
pub type RspParamMask = u32;
/// `DAT_CSP_PARAM_MASK` ([`csp_field`]).
pub type CspParamMask = u32;
/// `DAT_CR_PARAM_MASK` ([`cr_field`]).
pub type CrParamMask = u32;
/// `DAT_RMR_PARAM_MASK` ([`rmr_field`]).
pub type RmrParamMask = u32;
/// `DAT_EVD_PARAM_MASK` ([`evd_field`]).
pub type EvdParamMask = u32;
/// `DAT_LMR_PARAM_MASK` ([`lmr_field`]).
pub type LmrParamMask = u32;
/// `DAT_CNO_PARAM_MASK` ([`cno_field`]).
pub type CnoParamMask = u32;

// ---------------------------------------------------------------------------------------------
// Handles (dat.h, udat.h). Every object a provider hands out must start with a pointer to its
// `Provider`: libdat2 dispatches with `(*(DAT_PROVIDER **)handle)->slot(...)`.
// ---------------------------------------------------------------------------------------------

/// `DAT_HANDLE`: any DAT object.
pub type Handle = *mut c_void;
/// `DAT_CR_HANDLE`: connection request.
pub type CrHandle = Handle;
/// `DAT_EP_HANDLE`: endpoint.
pub type EpHandle = Handle;
/// `DAT_EVD_HANDLE`: event dispatcher.
pub type EvdHandle = Handle;
/// `DAT_IA_HANDLE`: interface adapter (consumers see libdat2's small integer instead).
pub type IaHandle = Handle;
/// `DAT_LMR_HANDLE`: local memory region.
pub type LmrHandle = Handle;
/// `DAT_PSP_HANDLE`: public service point.
pub type PspHandle = Handle;
/// `DAT_PZ_HANDLE`: protection zone.
pub type PzHandle = Handle;
/// `DAT_RMR_HANDLE`: remote memory region.
pub type RmrHandle = Handle;
/// `DAT_RSP_HANDLE`: reserved service point.
pub type RspHandle = Handle;
/// `DAT_SRQ_HANDLE`: shared receive queue.
pub type SrqHandle = Handle;
/// `DAT_CSP_HANDLE`: common service point.
pub type CspHandle = Handle;
/// `DAT_CNO_HANDLE`: consumer notification object.
pub type CnoHandle = Handle;
/// `DAT_IB_COLLECTIVE_HANDLE`: IB collective group.
pub type IbCollectiveHandle = Handle;

/// `DAT_HANDLE_NULL`.
pub const HANDLE_NULL: Handle = core::ptr::null_mut();
/// `DAT_EVD_ASYNC_EXISTS`: passed as the async EVD to `dat_ia_open` when another open
/// instance of the IA already has one.
pub const EVD_ASYNC_EXISTS: EvdHandle = core::ptr::without_provenance_mut(1);
/// `DAT_EVD_OUT_OF_SCOPE`: returned by `dat_ia_query` for the async EVD of an instance opened
/// with [`EVD_ASYNC_EXISTS`].
pub const EVD_OUT_OF_SCOPE: EvdHandle = core::ptr::without_provenance_mut(2);
