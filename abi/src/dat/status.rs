//! `DAT_RETURN` (`dat_error.h`, and `DAT_IB_RETURN` of `dat_ib_extensions.h`).

/// `DAT_RETURN` values (`dat_error.h`): a `u32` made of a class bit (31 error, 30 warning),
/// a type (bits 29..16, the constants below) and a subtype (bits 15..0, [`super::subtype`]).
/// OFA builds errors as `CLASS_ERROR | type | subtype`; `DAT_SUCCESS` is plain 0.
pub mod ret {
    use crate::dat::Return;
    /// `DAT_CLASS_ERROR`: the error class bit (31).
    pub const CLASS_ERROR: Return = 0x80000000;
    /// `DAT_CLASS_WARNING`: the warning class bit (30).
    pub const CLASS_WARNING: Return = 0x40000000;
    /// `DAT_CLASS_SUCCESS`: the success class (no class bit).
    pub const CLASS_SUCCESS: Return = 0x0;
    /// `DAT_TYPE_MASK`: the type bits (29..16).
    pub const TYPE_MASK: Return = 0x3FFF0000;
    /// `DAT_SUBTYPE_MASK`: the subtype bits (15..0).
    pub const SUBTYPE_MASK: Return = 0xFFFF;
    /// `DAT_SUCCESS`: the operation succeeded.
    pub const SUCCESS: Return = 0x0;
    /// `DAT_ABORT`: aborted because the IA was closed or the EVD destroyed.
    pub const ABORT: Return = 0x10000;
    /// `DAT_CONN_QUAL_IN_USE`: the connection qualifier is in use.
    pub const CONN_QUAL_IN_USE: Return = 0x20000;
    /// `DAT_INSUFFICIENT_RESOURCES`: resource limits reached.
    pub const INSUFFICIENT_RESOURCES: Return = 0x30000;
    /// `DAT_INTERNAL_ERROR`: provider internal error.
    pub const INTERNAL_ERROR: Return = 0x40000;
    /// `DAT_INVALID_HANDLE`: a DAT handle was invalid.
    pub const INVALID_HANDLE: Return = 0x50000;
    /// `DAT_INVALID_PARAMETER`: a parameter was invalid.
    pub const INVALID_PARAMETER: Return = 0x60000;
    /// `DAT_INVALID_STATE`: an object is in the wrong state for the operation.
    pub const INVALID_STATE: Return = 0x70000;
    /// `DAT_LENGTH_ERROR`: a buffer is too small for the data.
    pub const LENGTH_ERROR: Return = 0x80000;
    /// `DAT_MODEL_NOT_SUPPORTED`: the requested model is not supported.
    pub const MODEL_NOT_SUPPORTED: Return = 0x90000;
    /// `DAT_PROVIDER_NOT_FOUND`: the IA name is not registered.
    pub const PROVIDER_NOT_FOUND: Return = 0xA0000;
    /// `DAT_PRIVILEGES_VIOLATION`: memory privileges violated.
    pub const PRIVILEGES_VIOLATION: Return = 0xB0000;
    /// `DAT_PROTECTION_VIOLATION`: protection (PZ or LMR) violated.
    pub const PROTECTION_VIOLATION: Return = 0xC0000;
    /// `DAT_QUEUE_EMPTY`: no event to dequeue (`dtest` expects it without the class bit).
    pub const QUEUE_EMPTY: Return = 0xD0000;
    /// `DAT_QUEUE_FULL`: the event dispatcher queue is full.
    pub const QUEUE_FULL: Return = 0xE0000;
    /// `DAT_TIMEOUT_EXPIRED`: the wait timed out (uDAPL only).
    pub const TIMEOUT_EXPIRED: Return = 0xF0000;
    /// `DAT_PROVIDER_ALREADY_REGISTERED`: the provider name is already registered.
    pub const PROVIDER_ALREADY_REGISTERED: Return = 0x100000;
    /// `DAT_PROVIDER_IN_USE`: the provider is in use and cannot be closed.
    pub const PROVIDER_IN_USE: Return = 0x110000;
    /// `DAT_INVALID_ADDRESS`: the remote address is invalid or unreachable.
    pub const INVALID_ADDRESS: Return = 0x120000;
    /// `DAT_INTERRUPTED_CALL`: a wait was interrupted (Unix only).
    pub const INTERRUPTED_CALL: Return = 0x130000;
    /// `DAT_CONN_QUAL_UNAVAILABLE`: no connection qualifier is available.
    pub const CONN_QUAL_UNAVAILABLE: Return = 0x140000;
    /// `DAT_RESERVED_LMR`: reserved LMR (kDAPL only).
    pub const RESERVED_LMR: Return = 0x150000;
    /// `DAT_PORT_IN_USE`: the IP port is in use.
    pub const PORT_IN_USE: Return = 0x160000;
    /// `DAT_COMM_NOT_SUPPORTED`: the communicator is not supported.
    pub const COMM_NOT_SUPPORTED: Return = 0x170000;
    /// `DAT_EXTENSION_BASE`: first extension type; 0x10000000..0x3FFF0000 is reserved for
    /// extensions.
    pub const EXTENSION_BASE: Return = 0x10000000;
    /// `DAT_NOT_IMPLEMENTED`: the provider does not support the operation.
    pub const NOT_IMPLEMENTED: Return = 0x3FFF0000;
    /// `DAT_NAME_NOT_FOUND`: DAT 1.0 name of [`PROVIDER_NOT_FOUND`].
    pub const NAME_NOT_FOUND: Return = 0xA0000;
    /// `DAT_IB_ERR` (`DAT_IB_RETURN`): IB extension error type.
    pub const IB_ERR: Return = 0x10000000;
    /// `DAT_IB_COLLECTIVE_ERR` (`DAT_IB_RETURN`): IB collective extension error type.
    pub const IB_COLLECTIVE_ERR: Return = 0x10000001;

    /// `DAT_GET_TYPE(status)`: the type bits of a status.
    pub const fn get_type(status: Return) -> Return {
        status & TYPE_MASK
    }
    /// `DAT_GET_SUBTYPE(status)`: the subtype bits of a status.
    pub const fn get_subtype(status: Return) -> Return {
        status & SUBTYPE_MASK
    }
    /// `DAT_IS_WARNING(status)`: whether the warning class bit is set.
    pub const fn is_warning(status: Return) -> bool {
        status & CLASS_WARNING != 0
    }
}

/// `DAT_RETURN_SUBTYPE` (`dat_error.h`): the low 16 bits of a [`super::Return`]. One
/// sequential enum for all types; the comments name the type each group belongs to.
pub mod subtype {
    use crate::dat::ReturnSubtype;
    /// `DAT_NO_SUBTYPE`: no subtype.
    pub const NO_SUBTYPE: ReturnSubtype = 0;
    /// `DAT_SUB_INTERRUPTED` (ABORT): interrupted by a signal or otherwise.
    pub const SUB_INTERRUPTED: ReturnSubtype = 1;
    /// `DAT_RESOURCE_MEMORY` (INSUFFICIENT_RESOURCES): host memory.
    pub const RESOURCE_MEMORY: ReturnSubtype = 2;
    /// `DAT_RESOURCE_DEVICE` (INSUFFICIENT_RESOURCES): device resources.
    pub const RESOURCE_DEVICE: ReturnSubtype = 3;
    /// `DAT_RESOURCE_TEP` (INSUFFICIENT_RESOURCES): transport endpoint (QP).
    pub const RESOURCE_TEP: ReturnSubtype = 4;
    /// `DAT_RESOURCE_TEVD` (INSUFFICIENT_RESOURCES): transport EVD (CQ).
    pub const RESOURCE_TEVD: ReturnSubtype = 5;
    /// `DAT_RESOURCE_PROTECTION_DOMAIN` (INSUFFICIENT_RESOURCES): protection domain.
    pub const RESOURCE_PROTECTION_DOMAIN: ReturnSubtype = 6;
    /// `DAT_RESOURCE_MEMORY_REGION` (INSUFFICIENT_RESOURCES): HCA memory for an LMR or RMR.
    pub const RESOURCE_MEMORY_REGION: ReturnSubtype = 7;
    /// `DAT_RESOURCE_ERROR_HANDLER` (INSUFFICIENT_RESOURCES): error handler.
    pub const RESOURCE_ERROR_HANDLER: ReturnSubtype = 8;
    /// `DAT_RESOURCE_CREDITS` (INSUFFICIENT_RESOURCES): credits, e.g. RDMA Read as target.
    pub const RESOURCE_CREDITS: ReturnSubtype = 9;
    /// `DAT_RESOURCE_SRQ` (INSUFFICIENT_RESOURCES): shared receive queue.
    pub const RESOURCE_SRQ: ReturnSubtype = 10;
    /// `DAT_INVALID_HANDLE_IA` (INVALID_HANDLE): bad IA handle.
    pub const INVALID_HANDLE_IA: ReturnSubtype = 11;
    /// `DAT_INVALID_HANDLE_EP` (INVALID_HANDLE): bad EP handle.
    pub const INVALID_HANDLE_EP: ReturnSubtype = 12;
    /// `DAT_INVALID_HANDLE_LMR` (INVALID_HANDLE): bad LMR handle.
    pub const INVALID_HANDLE_LMR: ReturnSubtype = 13;
    /// `DAT_INVALID_HANDLE_RMR` (INVALID_HANDLE): bad RMR handle.
    pub const INVALID_HANDLE_RMR: ReturnSubtype = 14;
    /// `DAT_INVALID_HANDLE_PZ` (INVALID_HANDLE): bad PZ handle.
    pub const INVALID_HANDLE_PZ: ReturnSubtype = 15;
    /// `DAT_INVALID_HANDLE_PSP` (INVALID_HANDLE): bad PSP handle.
    pub const INVALID_HANDLE_PSP: ReturnSubtype = 16;
    /// `DAT_INVALID_HANDLE_RSP` (INVALID_HANDLE): bad RSP handle.
    pub const INVALID_HANDLE_RSP: ReturnSubtype = 17;
    /// `DAT_INVALID_HANDLE_CR` (INVALID_HANDLE): bad CR handle.
    pub const INVALID_HANDLE_CR: ReturnSubtype = 18;
    /// `DAT_INVALID_HANDLE_CNO` (INVALID_HANDLE): bad CNO handle.
    pub const INVALID_HANDLE_CNO: ReturnSubtype = 19;
    /// `DAT_INVALID_HANDLE_EVD_CR` (INVALID_HANDLE): bad connection request EVD handle.
    pub const INVALID_HANDLE_EVD_CR: ReturnSubtype = 20;
    /// `DAT_INVALID_HANDLE_EVD_REQUEST` (INVALID_HANDLE): bad request EVD handle.
    pub const INVALID_HANDLE_EVD_REQUEST: ReturnSubtype = 21;
    /// `DAT_INVALID_HANDLE_EVD_RECV` (INVALID_HANDLE): bad receive EVD handle.
    pub const INVALID_HANDLE_EVD_RECV: ReturnSubtype = 22;
    /// `DAT_INVALID_HANDLE_EVD_CONN` (INVALID_HANDLE): bad connection EVD handle.
    pub const INVALID_HANDLE_EVD_CONN: ReturnSubtype = 23;
    /// `DAT_INVALID_HANDLE_EVD_ASYNC` (INVALID_HANDLE): bad async EVD handle.
    pub const INVALID_HANDLE_EVD_ASYNC: ReturnSubtype = 24;
    /// `DAT_INVALID_HANDLE_SRQ` (INVALID_HANDLE): bad SRQ handle.
    pub const INVALID_HANDLE_SRQ: ReturnSubtype = 25;
    /// `DAT_INVALID_HANDLE_CSP` (INVALID_HANDLE): bad CSP handle.
    pub const INVALID_HANDLE_CSP: ReturnSubtype = 26;
    /// `DAT_INVALID_HANDLE1` (INVALID_HANDLE): argument 1 is a bad handle.
    pub const INVALID_HANDLE1: ReturnSubtype = 27;
    /// `DAT_INVALID_HANDLE2` (INVALID_HANDLE): argument 2 is a bad handle.
    pub const INVALID_HANDLE2: ReturnSubtype = 28;
    /// `DAT_INVALID_HANDLE3` (INVALID_HANDLE): argument 3 is a bad handle.
    pub const INVALID_HANDLE3: ReturnSubtype = 29;
    /// `DAT_INVALID_HANDLE4` (INVALID_HANDLE): argument 4 is a bad handle.
    pub const INVALID_HANDLE4: ReturnSubtype = 30;
    /// `DAT_INVALID_HANDLE5` (INVALID_HANDLE): argument 5 is a bad handle.
    pub const INVALID_HANDLE5: ReturnSubtype = 31;
    /// `DAT_INVALID_HANDLE6` (INVALID_HANDLE): argument 6 is a bad handle.
    pub const INVALID_HANDLE6: ReturnSubtype = 32;
    /// `DAT_INVALID_HANDLE7` (INVALID_HANDLE): argument 7 is a bad handle.
    pub const INVALID_HANDLE7: ReturnSubtype = 33;
    /// `DAT_INVALID_HANDLE8` (INVALID_HANDLE): argument 8 is a bad handle.
    pub const INVALID_HANDLE8: ReturnSubtype = 34;
    /// `DAT_INVALID_HANDLE9` (INVALID_HANDLE): argument 9 is a bad handle.
    pub const INVALID_HANDLE9: ReturnSubtype = 35;
    /// `DAT_INVALID_HANDLE10` (INVALID_HANDLE): argument 10 is a bad handle.
    pub const INVALID_HANDLE10: ReturnSubtype = 36;
    /// `DAT_INVALID_ARG1` (INVALID_PARAMETER): argument 1 is invalid.
    pub const INVALID_ARG1: ReturnSubtype = 37;
    /// `DAT_INVALID_ARG2` (INVALID_PARAMETER): argument 2 is invalid.
    pub const INVALID_ARG2: ReturnSubtype = 38;
    /// `DAT_INVALID_ARG3` (INVALID_PARAMETER): argument 3 is invalid.
    pub const INVALID_ARG3: ReturnSubtype = 39;
    /// `DAT_INVALID_ARG4` (INVALID_PARAMETER): argument 4 is invalid.
    pub const INVALID_ARG4: ReturnSubtype = 40;
    /// `DAT_INVALID_ARG5` (INVALID_PARAMETER): argument 5 is invalid.
    pub const INVALID_ARG5: ReturnSubtype = 41;
    /// `DAT_INVALID_ARG6` (INVALID_PARAMETER): argument 6 is invalid.
    pub const INVALID_ARG6: ReturnSubtype = 42;
    /// `DAT_INVALID_ARG7` (INVALID_PARAMETER): argument 7 is invalid.
    pub const INVALID_ARG7: ReturnSubtype = 43;
    /// `DAT_INVALID_ARG8` (INVALID_PARAMETER): argument 8 is invalid.
    pub const INVALID_ARG8: ReturnSubtype = 44;
    /// `DAT_INVALID_ARG9` (INVALID_PARAMETER): argument 9 is invalid.
    pub const INVALID_ARG9: ReturnSubtype = 45;
    /// `DAT_INVALID_ARG10` (INVALID_PARAMETER): argument 10 is invalid.
    pub const INVALID_ARG10: ReturnSubtype = 46;
    /// `DAT_INVALID_STATE_EP_UNCONNECTED` (INVALID_STATE): EP is unconnected.
    pub const INVALID_STATE_EP_UNCONNECTED: ReturnSubtype = 47;
    /// `DAT_INVALID_STATE_EP_ACTCONNPENDING` (INVALID_STATE): EP has an active connection pending.
    pub const INVALID_STATE_EP_ACTCONNPENDING: ReturnSubtype = 48;
    /// `DAT_INVALID_STATE_EP_PASSCONNPENDING` (INVALID_STATE): EP has a passive connection pending.
    pub const INVALID_STATE_EP_PASSCONNPENDING: ReturnSubtype = 49;
    /// `DAT_INVALID_STATE_EP_TENTCONNPENDING` (INVALID_STATE): EP has a tentative connection
    /// pending.
    pub const INVALID_STATE_EP_TENTCONNPENDING: ReturnSubtype = 50;
    /// `DAT_INVALID_STATE_EP_CONNECTED` (INVALID_STATE): EP is connected.
    pub const INVALID_STATE_EP_CONNECTED: ReturnSubtype = 51;
    /// `DAT_INVALID_STATE_EP_DISCONNECTED` (INVALID_STATE): EP is disconnected.
    pub const INVALID_STATE_EP_DISCONNECTED: ReturnSubtype = 52;
    /// `DAT_INVALID_STATE_EP_RESERVED` (INVALID_STATE): EP is reserved.
    pub const INVALID_STATE_EP_RESERVED: ReturnSubtype = 53;
    /// `DAT_INVALID_STATE_EP_COMPLPENDING` (INVALID_STATE): EP has a completion pending.
    pub const INVALID_STATE_EP_COMPLPENDING: ReturnSubtype = 54;
    /// `DAT_INVALID_STATE_EP_DISCPENDING` (INVALID_STATE): EP has a disconnect pending.
    pub const INVALID_STATE_EP_DISCPENDING: ReturnSubtype = 55;
    /// `DAT_INVALID_STATE_EP_PROVIDERCONTROL` (INVALID_STATE): EP is under provider control.
    pub const INVALID_STATE_EP_PROVIDERCONTROL: ReturnSubtype = 56;
    /// `DAT_INVALID_STATE_EP_NOTREADY` (INVALID_STATE): EP is not ready.
    pub const INVALID_STATE_EP_NOTREADY: ReturnSubtype = 57;
    /// `DAT_INVALID_STATE_EP_RECV_WATERMARK` (INVALID_STATE): EP receive watermark.
    pub const INVALID_STATE_EP_RECV_WATERMARK: ReturnSubtype = 58;
    /// `DAT_INVALID_STATE_EP_PZ` (INVALID_STATE): EP protection zone.
    pub const INVALID_STATE_EP_PZ: ReturnSubtype = 59;
    /// `DAT_INVALID_STATE_EP_EVD_REQUEST` (INVALID_STATE): EP request EVD.
    pub const INVALID_STATE_EP_EVD_REQUEST: ReturnSubtype = 60;
    /// `DAT_INVALID_STATE_EP_EVD_RECV` (INVALID_STATE): EP receive EVD.
    pub const INVALID_STATE_EP_EVD_RECV: ReturnSubtype = 61;
    /// `DAT_INVALID_STATE_EP_EVD_CONNECT` (INVALID_STATE): EP connection EVD.
    pub const INVALID_STATE_EP_EVD_CONNECT: ReturnSubtype = 62;
    /// `DAT_INVALID_STATE_EP_UNCONFIGURED` (INVALID_STATE): EP is unconfigured.
    pub const INVALID_STATE_EP_UNCONFIGURED: ReturnSubtype = 63;
    /// `DAT_INVALID_STATE_EP_UNCONFRESERVED` (INVALID_STATE): EP is unconfigured and reserved.
    pub const INVALID_STATE_EP_UNCONFRESERVED: ReturnSubtype = 64;
    /// `DAT_INVALID_STATE_EP_UNCONFPASSIVE` (INVALID_STATE): EP is unconfigured and passive.
    pub const INVALID_STATE_EP_UNCONFPASSIVE: ReturnSubtype = 65;
    /// `DAT_INVALID_STATE_EP_UNCONFTENTATIVE` (INVALID_STATE): EP is unconfigured and tentative.
    pub const INVALID_STATE_EP_UNCONFTENTATIVE: ReturnSubtype = 66;
    /// `DAT_INVALID_STATE_CNO_IN_USE` (INVALID_STATE): CNO is in use.
    pub const INVALID_STATE_CNO_IN_USE: ReturnSubtype = 67;
    /// `DAT_INVALID_STATE_CNO_DEAD` (INVALID_STATE): CNO is dead.
    pub const INVALID_STATE_CNO_DEAD: ReturnSubtype = 68;
    /// `DAT_INVALID_STATE_EVD_OPEN` (INVALID_STATE): EVD is open.
    pub const INVALID_STATE_EVD_OPEN: ReturnSubtype = 69;
    /// `DAT_INVALID_STATE_EVD_ENABLED` (INVALID_STATE): EVD is enabled.
    pub const INVALID_STATE_EVD_ENABLED: ReturnSubtype = 70;
    /// `DAT_INVALID_STATE_EVD_DISABLED` (INVALID_STATE): EVD is disabled.
    pub const INVALID_STATE_EVD_DISABLED: ReturnSubtype = 71;
    /// `DAT_INVALID_STATE_EVD_WAITABLE` (INVALID_STATE): EVD is waitable.
    pub const INVALID_STATE_EVD_WAITABLE: ReturnSubtype = 72;
    /// `DAT_INVALID_STATE_EVD_UNWAITABLE` (INVALID_STATE): EVD is unwaitable.
    pub const INVALID_STATE_EVD_UNWAITABLE: ReturnSubtype = 73;
    /// `DAT_INVALID_STATE_EVD_IN_USE` (INVALID_STATE): EVD is in use.
    pub const INVALID_STATE_EVD_IN_USE: ReturnSubtype = 74;
    /// `DAT_INVALID_STATE_EVD_CONFIG_NOTIFY` (INVALID_STATE): EVD is configured for notify.
    pub const INVALID_STATE_EVD_CONFIG_NOTIFY: ReturnSubtype = 75;
    /// `DAT_INVALID_STATE_EVD_CONFIG_SOLICITED` (INVALID_STATE): EVD is configured for solicited.
    pub const INVALID_STATE_EVD_CONFIG_SOLICITED: ReturnSubtype = 76;
    /// `DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD` (INVALID_STATE): EVD is configured for threshold.
    pub const INVALID_STATE_EVD_CONFIG_THRESHOLD: ReturnSubtype = 77;
    /// `DAT_INVALID_STATE_EVD_WAITER` (INVALID_STATE): EVD already has a waiter.
    pub const INVALID_STATE_EVD_WAITER: ReturnSubtype = 78;
    /// `DAT_INVALID_STATE_EVD_ASYNC` (INVALID_STATE): an async EVD is required.
    pub const INVALID_STATE_EVD_ASYNC: ReturnSubtype = 79;
    /// `DAT_INVALID_STATE_IA_IN_USE` (INVALID_STATE): IA is in use.
    pub const INVALID_STATE_IA_IN_USE: ReturnSubtype = 80;
    /// `DAT_INVALID_STATE_LMR_IN_USE` (INVALID_STATE): LMR is in use.
    pub const INVALID_STATE_LMR_IN_USE: ReturnSubtype = 81;
    /// `DAT_INVALID_STATE_LMR_FREE` (INVALID_STATE): LMR is free.
    pub const INVALID_STATE_LMR_FREE: ReturnSubtype = 82;
    /// `DAT_INVALID_STATE_PZ_IN_USE` (INVALID_STATE): PZ is in use.
    pub const INVALID_STATE_PZ_IN_USE: ReturnSubtype = 83;
    /// `DAT_INVALID_STATE_PZ_FREE` (INVALID_STATE): PZ is free.
    pub const INVALID_STATE_PZ_FREE: ReturnSubtype = 84;
    /// `DAT_INVALID_STATE_SRQ_OPERATIONAL` (INVALID_STATE): SRQ is operational.
    pub const INVALID_STATE_SRQ_OPERATIONAL: ReturnSubtype = 85;
    /// `DAT_INVALID_STATE_SRQ_ERROR` (INVALID_STATE): SRQ is in error.
    pub const INVALID_STATE_SRQ_ERROR: ReturnSubtype = 86;
    /// `DAT_INVALID_STATE_SRQ_IN_USE` (INVALID_STATE): SRQ is in use.
    pub const INVALID_STATE_SRQ_IN_USE: ReturnSubtype = 87;
    /// `DAT_INVALID_STATE_SRQ_SHUTDOWN` (INVALID_STATE): SRQ is shut down.
    pub const INVALID_STATE_SRQ_SHUTDOWN: ReturnSubtype = 88;
    /// `DAT_PRIVILEGES_READ` (PRIVILEGES_VIOLATION): local read privilege.
    pub const PRIVILEGES_READ: ReturnSubtype = 89;
    /// `DAT_PRIVILEGES_WRITE` (PRIVILEGES_VIOLATION): local write privilege.
    pub const PRIVILEGES_WRITE: ReturnSubtype = 90;
    /// `DAT_PRIVILEGES_RDMA_READ` (PRIVILEGES_VIOLATION): RDMA read privilege.
    pub const PRIVILEGES_RDMA_READ: ReturnSubtype = 91;
    /// `DAT_PRIVILEGES_RDMA_WRITE` (PRIVILEGES_VIOLATION): RDMA write privilege.
    pub const PRIVILEGES_RDMA_WRITE: ReturnSubtype = 92;
    /// `DAT_PROTECTION_READ` (PROTECTION_VIOLATION): local read.
    pub const PROTECTION_READ: ReturnSubtype = 93;
    /// `DAT_PROTECTION_WRITE` (PROTECTION_VIOLATION): local write.
    pub const PROTECTION_WRITE: ReturnSubtype = 94;
    /// `DAT_PROTECTION_RDMA_READ` (PROTECTION_VIOLATION): RDMA read.
    pub const PROTECTION_RDMA_READ: ReturnSubtype = 95;
    /// `DAT_PROTECTION_RDMA_WRITE` (PROTECTION_VIOLATION): RDMA write.
    pub const PROTECTION_RDMA_WRITE: ReturnSubtype = 96;
    /// `DAT_INVALID_ADDRESS_UNSUPPORTED` (INVALID_ADDRESS): well-formed but unusable (multicast,
    /// broadcast).
    pub const INVALID_ADDRESS_UNSUPPORTED: ReturnSubtype = 97;
    /// `DAT_INVALID_ADDRESS_UNREACHABLE` (INVALID_ADDRESS): known to be unreachable.
    pub const INVALID_ADDRESS_UNREACHABLE: ReturnSubtype = 98;
    /// `DAT_INVALID_ADDRESS_MALFORMED` (INVALID_ADDRESS): malformed address.
    pub const INVALID_ADDRESS_MALFORMED: ReturnSubtype = 99;
    /// `DAT_NAME_NOT_REGISTERED` (PROVIDER_NOT_FOUND): no provider registered under the name.
    pub const NAME_NOT_REGISTERED: ReturnSubtype = 100;
    /// `DAT_MAJOR_NOT_FOUND` (PROVIDER_NOT_FOUND): no provider with the major version.
    pub const MAJOR_NOT_FOUND: ReturnSubtype = 101;
    /// `DAT_MINOR_NOT_FOUND` (PROVIDER_NOT_FOUND): no provider with the minor version.
    pub const MINOR_NOT_FOUND: ReturnSubtype = 102;
    /// `DAT_THREAD_SAFETY_NOT_FOUND` (PROVIDER_NOT_FOUND): no provider with the thread safety.
    pub const THREAD_SAFETY_NOT_FOUND: ReturnSubtype = 103;
}
