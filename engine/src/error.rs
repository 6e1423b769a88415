//! [`DatError`]: a `DAT_RETURN` type and subtype (DAT 2.0 numbering, the constants of
//! [`ferrodat_abi::dat::ret`] and [`ferrodat_abi::dat::subtype`]) with an optional message
//! saying what failed and what to do about it.
//!
//! Every fallible engine call returns [`DatResult`]; `capi` turns the error into the number
//! a C consumer receives with [`DatError::consumer_code`].
//!
//! # Class bit and the two bare codes
//!
//! [`DatError::code`] is always `DAT_CLASS_ERROR | type | subtype`, as OFA's `DAT_ERROR()`
//! builds it. Two outcomes are not failures and consumers compare them with `==` against the
//! bare header constant, so [`DatError::consumer_code`] returns them without the class bit:
//!
//! - `DAT_QUEUE_EMPTY` (0x000D0000) from `dat_evd_dequeue`: `dtest -p` polls with
//!   `ret == DAT_QUEUE_EMPTY` (`reference/dat-provider.md` §3); OFA's 0x800D0000 breaks it.
//! - `DAT_TIMEOUT_EXPIRED` (0x000F0000) from `dat_evd_wait`: OFA's openib providers return it
//!   bare on the DTO-EVD wait path (`dapl_convert_errno(ETIMEDOUT)` is plain
//!   `DAT_TIMEOUT_EXPIRED`), and consumers such as MPI glue test `retval == DAT_TIMEOUT_EXPIRED`.
//!   Consumers that use `DAT_GET_TYPE()` accept either form.

use std::borrow::Cow;
use std::fmt;

use ferrodat_abi::dat::{Return, ReturnSubtype, ret, subtype};

/// The result of an engine call: the value, or the `DAT_RETURN` that `capi` reports.
pub type DatResult<T> = Result<T, DatError>;

/// A DAT error: a `DAT_RETURN` type ([`ret`]), a subtype ([`subtype`]) and an optional
/// message for people (never part of the numeric code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatError {
    return_type: Return,
    subtype: ReturnSubtype,
    detail: Option<Cow<'static, str>>,
}

/// The types [`DatError::consumer_code`] returns without the class bit (see the module docs).
const RETURNED_BARE: [Return; 2] = [ret::QUEUE_EMPTY, ret::TIMEOUT_EXPIRED];

impl DatError {
    /// An error of type `return_type` (a [`ret`] type constant, not a class or mask) with
    /// subtype `subtype` (a [`subtype`] constant; [`subtype::NO_SUBTYPE`] for none).
    pub const fn new(return_type: Return, subtype: ReturnSubtype) -> Self {
        debug_assert!(
            return_type & !ret::TYPE_MASK == 0 && return_type != ret::SUCCESS,
            "DatError::new wants a DAT_RETURN type (bits 29..16, not SUCCESS)"
        );
        debug_assert!(subtype & !ret::SUBTYPE_MASK == 0, "subtypes are 16 bits");
        DatError { return_type, subtype, detail: None }
    }

    /// `DAT_INVALID_HANDLE` with an object subtype, e.g. [`subtype::INVALID_HANDLE_EP`].
    pub const fn invalid_handle(subtype: ReturnSubtype) -> Self {
        Self::new(ret::INVALID_HANDLE, subtype)
    }

    /// `DAT_INVALID_HANDLE` naming the argument: `DAT_INVALID_HANDLE1`..`10` for `arg` 1..=10
    /// (arguments counted from 1, as the man pages do). Any other `arg` is a bug in the
    /// caller; it gets no subtype rather than a wrong one.
    pub const fn invalid_handle_arg(arg: u32) -> Self {
        debug_assert!(arg >= 1 && arg <= 10, "DAT names handle arguments 1..=10");
        Self::invalid_handle(numbered_subtype(subtype::INVALID_HANDLE1, arg))
    }

    /// `DAT_INVALID_PARAMETER` naming the argument: `DAT_INVALID_ARG1`..`10` for `arg` 1..=10
    /// (counted from 1). Any other `arg` is a bug in the caller; it gets no subtype.
    pub const fn invalid_parameter(arg: u32) -> Self {
        debug_assert!(arg >= 1 && arg <= 10, "DAT names arguments 1..=10");
        Self::new(ret::INVALID_PARAMETER, numbered_subtype(subtype::INVALID_ARG1, arg))
    }

    /// `DAT_INVALID_STATE` with a state subtype, e.g. the current EP state's
    /// (`crate::ep_state::EpState::subtype`) or [`subtype::INVALID_STATE_EVD_WAITER`].
    pub const fn invalid_state(subtype: ReturnSubtype) -> Self {
        Self::new(ret::INVALID_STATE, subtype)
    }

    /// `DAT_INSUFFICIENT_RESOURCES` with a resource subtype, e.g.
    /// [`subtype::RESOURCE_MEMORY`].
    pub const fn insufficient_resources(subtype: ReturnSubtype) -> Self {
        Self::new(ret::INSUFFICIENT_RESOURCES, subtype)
    }

    /// `DAT_QUEUE_EMPTY`: `dat_evd_dequeue` found nothing. Returned bare to consumers.
    pub const fn queue_empty() -> Self {
        Self::new(ret::QUEUE_EMPTY, subtype::NO_SUBTYPE)
    }

    /// `DAT_TIMEOUT_EXPIRED`: a wait ran out of time. Returned bare to consumers.
    pub const fn timeout_expired() -> Self {
        Self::new(ret::TIMEOUT_EXPIRED, subtype::NO_SUBTYPE)
    }

    /// `DAT_INTERNAL_ERROR`: the provider itself failed; the detail should say where.
    pub const fn internal_error() -> Self {
        Self::new(ret::INTERNAL_ERROR, subtype::NO_SUBTYPE)
    }

    /// `DAT_NOT_IMPLEMENTED`: the provider does not offer this call or option.
    pub const fn not_implemented() -> Self {
        Self::new(ret::NOT_IMPLEMENTED, subtype::NO_SUBTYPE)
    }

    /// The same error with a message saying what failed and what to do; it is shown by
    /// `Display` and never changes the code.
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<Cow<'static, str>>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// The type bits (`DAT_GET_TYPE`), one of the [`ret`] type constants.
    pub const fn return_type(&self) -> Return {
        self.return_type
    }

    /// The subtype bits (`DAT_GET_SUBTYPE`), one of the [`subtype`] constants.
    pub const fn subtype(&self) -> ReturnSubtype {
        self.subtype
    }

    /// The message for people, if any.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// `DAT_CLASS_ERROR | type | subtype`: the error as OFA's `DAT_ERROR()` encodes it.
    pub const fn code(&self) -> Return {
        ret::CLASS_ERROR | self.return_type | self.subtype
    }

    /// The `DAT_RETURN` that `capi` hands to a C consumer: [`code`](Self::code), except
    /// `DAT_QUEUE_EMPTY` and `DAT_TIMEOUT_EXPIRED`, which go back without the class bit
    /// because consumers compare them with `==` (module docs).
    pub const fn consumer_code(&self) -> Return {
        let mut i = 0;
        while i < RETURNED_BARE.len() {
            if RETURNED_BARE[i] == self.return_type {
                return self.return_type | self.subtype;
            }
            i += 1;
        }
        self.code()
    }

    /// Parses a `DAT_RETURN` back into an error (without detail). `None` for success, a
    /// warning, an unknown type or subtype, or a code without the class bit other than the
    /// two bare forms [`consumer_code`](Self::consumer_code) produces. Type and subtype are
    /// not checked for belonging together: DAT's subtypes are one enum shared by all types.
    pub fn from_code(code: Return) -> Option<DatError> {
        if code & ret::CLASS_WARNING != 0 {
            return None;
        }
        let return_type = ret::get_type(code);
        let subtype = ret::get_subtype(code);
        if return_type == ret::SUCCESS || type_name(return_type).is_none() {
            return None;
        }
        subtype_name(subtype)?;
        let has_class_bit = code & ret::CLASS_ERROR != 0;
        if !has_class_bit && !RETURNED_BARE.contains(&return_type) {
            return None;
        }
        Some(DatError::new(return_type, subtype))
    }
}

/// `first + (arg - 1)` for `arg` in 1..=10 (the numbered ARG/HANDLE subtypes are
/// consecutive), `NO_SUBTYPE` otherwise.
const fn numbered_subtype(first: ReturnSubtype, arg: u32) -> ReturnSubtype {
    if arg >= 1 && arg <= 10 { first + (arg - 1) } else { subtype::NO_SUBTYPE }
}

impl fmt::Display for DatError {
    /// `DAT_INVALID_STATE (DAT_INVALID_STATE_EP_DISCONNECTED): detail`; the subtype is left
    /// out when there is none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match type_name(self.return_type) {
            Some(name) => f.write_str(name)?,
            None => write!(f, "DAT_RETURN type {:#010x}", self.return_type)?,
        }
        if self.subtype != subtype::NO_SUBTYPE {
            match subtype_name(self.subtype) {
                Some(name) => write!(f, " ({name})")?,
                None => write!(f, " (subtype {})", self.subtype)?,
            }
        }
        if let Some(detail) = &self.detail {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DatError {}

/// `(constant, "DAT_" + its name)` pairs, so a name cannot drift from its constant.
macro_rules! name_table {
    ($module:ident: $($name:ident),* $(,)?) => {
        &[$(($module::$name, concat!("DAT_", stringify!($name)))),*]
    };
}

/// Every `DAT_RETURN` type of `dat_error.h` (2.0) and `DAT_IB_RETURN`'s `DAT_IB_ERR`.
/// `DAT_NAME_NOT_FOUND` (= PROVIDER_NOT_FOUND) and `DAT_EXTENSION_BASE` (= IB_ERR) are
/// aliases and print under the name listed here.
const TYPE_NAMES: &[(Return, &str)] = name_table!(ret:
    SUCCESS, ABORT, CONN_QUAL_IN_USE, INSUFFICIENT_RESOURCES, INTERNAL_ERROR, INVALID_HANDLE,
    INVALID_PARAMETER, INVALID_STATE, LENGTH_ERROR, MODEL_NOT_SUPPORTED, PROVIDER_NOT_FOUND,
    PRIVILEGES_VIOLATION, PROTECTION_VIOLATION, QUEUE_EMPTY, QUEUE_FULL, TIMEOUT_EXPIRED,
    PROVIDER_ALREADY_REGISTERED, PROVIDER_IN_USE, INVALID_ADDRESS, INTERRUPTED_CALL,
    CONN_QUAL_UNAVAILABLE, RESERVED_LMR, PORT_IN_USE, COMM_NOT_SUPPORTED, IB_ERR,
    NOT_IMPLEMENTED,
);

/// Every `DAT_RETURN_SUBTYPE` of `dat_error.h` (2.0).
const SUBTYPE_NAMES: &[(ReturnSubtype, &str)] = name_table!(subtype:
    NO_SUBTYPE, SUB_INTERRUPTED,
    RESOURCE_MEMORY, RESOURCE_DEVICE, RESOURCE_TEP, RESOURCE_TEVD, RESOURCE_PROTECTION_DOMAIN,
    RESOURCE_MEMORY_REGION, RESOURCE_ERROR_HANDLER, RESOURCE_CREDITS, RESOURCE_SRQ,
    INVALID_HANDLE_IA, INVALID_HANDLE_EP, INVALID_HANDLE_LMR, INVALID_HANDLE_RMR,
    INVALID_HANDLE_PZ, INVALID_HANDLE_PSP, INVALID_HANDLE_RSP, INVALID_HANDLE_CR,
    INVALID_HANDLE_CNO, INVALID_HANDLE_EVD_CR, INVALID_HANDLE_EVD_REQUEST,
    INVALID_HANDLE_EVD_RECV, INVALID_HANDLE_EVD_CONN, INVALID_HANDLE_EVD_ASYNC,
    INVALID_HANDLE_SRQ, INVALID_HANDLE_CSP,
    INVALID_HANDLE1, INVALID_HANDLE2, INVALID_HANDLE3, INVALID_HANDLE4, INVALID_HANDLE5,
    INVALID_HANDLE6, INVALID_HANDLE7, INVALID_HANDLE8, INVALID_HANDLE9, INVALID_HANDLE10,
    INVALID_ARG1, INVALID_ARG2, INVALID_ARG3, INVALID_ARG4, INVALID_ARG5, INVALID_ARG6,
    INVALID_ARG7, INVALID_ARG8, INVALID_ARG9, INVALID_ARG10,
    INVALID_STATE_EP_UNCONNECTED, INVALID_STATE_EP_ACTCONNPENDING,
    INVALID_STATE_EP_PASSCONNPENDING, INVALID_STATE_EP_TENTCONNPENDING,
    INVALID_STATE_EP_CONNECTED, INVALID_STATE_EP_DISCONNECTED, INVALID_STATE_EP_RESERVED,
    INVALID_STATE_EP_COMPLPENDING, INVALID_STATE_EP_DISCPENDING,
    INVALID_STATE_EP_PROVIDERCONTROL, INVALID_STATE_EP_NOTREADY,
    INVALID_STATE_EP_RECV_WATERMARK, INVALID_STATE_EP_PZ, INVALID_STATE_EP_EVD_REQUEST,
    INVALID_STATE_EP_EVD_RECV, INVALID_STATE_EP_EVD_CONNECT,
    INVALID_STATE_EP_UNCONFIGURED, INVALID_STATE_EP_UNCONFRESERVED,
    INVALID_STATE_EP_UNCONFPASSIVE, INVALID_STATE_EP_UNCONFTENTATIVE,
    INVALID_STATE_CNO_IN_USE, INVALID_STATE_CNO_DEAD,
    INVALID_STATE_EVD_OPEN, INVALID_STATE_EVD_ENABLED, INVALID_STATE_EVD_DISABLED,
    INVALID_STATE_EVD_WAITABLE, INVALID_STATE_EVD_UNWAITABLE, INVALID_STATE_EVD_IN_USE,
    INVALID_STATE_EVD_CONFIG_NOTIFY, INVALID_STATE_EVD_CONFIG_SOLICITED,
    INVALID_STATE_EVD_CONFIG_THRESHOLD, INVALID_STATE_EVD_WAITER, INVALID_STATE_EVD_ASYNC,
    INVALID_STATE_IA_IN_USE, INVALID_STATE_LMR_IN_USE, INVALID_STATE_LMR_FREE,
    INVALID_STATE_PZ_IN_USE, INVALID_STATE_PZ_FREE,
    INVALID_STATE_SRQ_OPERATIONAL, INVALID_STATE_SRQ_ERROR, INVALID_STATE_SRQ_IN_USE,
    INVALID_STATE_SRQ_SHUTDOWN,
    PRIVILEGES_READ, PRIVILEGES_WRITE, PRIVILEGES_RDMA_READ, PRIVILEGES_RDMA_WRITE,
    PROTECTION_READ, PROTECTION_WRITE, PROTECTION_RDMA_READ, PROTECTION_RDMA_WRITE,
    INVALID_ADDRESS_UNSUPPORTED, INVALID_ADDRESS_UNREACHABLE, INVALID_ADDRESS_MALFORMED,
    NAME_NOT_REGISTERED, MAJOR_NOT_FOUND, MINOR_NOT_FOUND, THREAD_SAFETY_NOT_FOUND,
);

/// The C name of a `DAT_RETURN` type (the type bits, e.g. 0x00070000 → `DAT_INVALID_STATE`).
pub fn type_name(return_type: Return) -> Option<&'static str> {
    TYPE_NAMES.iter().find(|&&(value, _)| value == return_type).map(|&(_, name)| name)
}

/// The C name of a `DAT_RETURN` subtype (e.g. 52 → `DAT_INVALID_STATE_EP_DISCONNECTED`).
pub fn subtype_name(subtype: ReturnSubtype) -> Option<&'static str> {
    SUBTYPE_NAMES.iter().find(|&&(value, _)| value == subtype).map(|&(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pub const NAME: Type = value;` lines of one `pub mod` of abi's status.rs, read from
    /// the source so that a constant added there fails the coverage tests here.
    fn abi_status_constants(module: &str) -> Vec<(String, u32)> {
        let source = include_str!("../../abi/src/dat/status.rs");
        let header = format!("pub mod {module} {{");
        let body = source.split(&header).nth(1).expect("module in status.rs");
        let body = &body[..body.find("\n}").expect("end of module")];
        body.lines()
            .filter_map(|line| {
                let rest = line.trim().strip_prefix("pub const ")?;
                let (name, rest) = rest.split_once(':')?;
                if !name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
                {
                    return None; // a `pub const fn`, not a constant
                }
                let value = rest.split_once('=')?.1.trim().trim_end_matches(';');
                let value = match value.strip_prefix("0x") {
                    Some(hex) => u32::from_str_radix(hex, 16),
                    None => value.parse(),
                }
                .expect("numeric constant");
                Some((name.to_string(), value))
            })
            .collect()
    }

    #[test]
    fn every_type_constant_has_its_c_name() {
        // Class bits and masks are not types; DAT_IB_COLLECTIVE_ERR (0x10000001) is the
        // second DAT_IB_RETURN enumerator and has subtype bits set, so it is no type either.
        let not_types = ["CLASS_ERROR", "CLASS_WARNING", "CLASS_SUCCESS", "TYPE_MASK"];
        let not_types = [&not_types[..], &["SUBTYPE_MASK", "IB_COLLECTIVE_ERR"]].concat();
        let aliases = [("NAME_NOT_FOUND", "PROVIDER_NOT_FOUND"), ("EXTENSION_BASE", "IB_ERR")];
        let constants = abi_status_constants("ret");
        assert!(constants.len() > 30, "parsed too few constants: {constants:?}");
        let mut named = 0;
        for (name, value) in constants {
            if not_types.contains(&name.as_str()) {
                continue;
            }
            let canonical = aliases.iter().find(|a| a.0 == name).map_or(name.as_str(), |a| a.1);
            assert_eq!(type_name(value), Some(format!("DAT_{canonical}").as_str()), "{name}");
            if canonical == name {
                named += 1;
            }
        }
        assert_eq!(named, TYPE_NAMES.len(), "TYPE_NAMES has entries abi does not");
    }

    #[test]
    fn every_subtype_constant_has_its_c_name() {
        let constants = abi_status_constants("subtype");
        assert_eq!(constants.len(), 104, "DAT 2.0 has subtypes 0..=103");
        for (name, value) in &constants {
            assert_eq!(subtype_name(*value), Some(format!("DAT_{name}").as_str()), "{name}");
        }
        assert_eq!(SUBTYPE_NAMES.len(), constants.len(), "SUBTYPE_NAMES has extra entries");
    }

    #[test]
    fn code_round_trips_through_from_code_for_every_type_and_subtype() {
        for &(return_type, _) in TYPE_NAMES.iter().filter(|t| t.0 != ret::SUCCESS) {
            for &(sub, _) in SUBTYPE_NAMES {
                let error = DatError::new(return_type, sub);
                assert_eq!(DatError::from_code(error.code()), Some(error.clone()));
                assert_eq!(DatError::from_code(error.consumer_code()), Some(error));
            }
        }
    }

    #[test]
    fn from_code_refuses_what_is_not_an_error_code() {
        assert_eq!(DatError::from_code(ret::SUCCESS), None);
        assert_eq!(DatError::from_code(ret::CLASS_ERROR), None, "class bit, no type");
        assert_eq!(DatError::from_code(0x4007_0000), None, "warning class");
        assert_eq!(DatError::from_code(0x8018_0000), None, "type 0x18 does not exist");
        assert_eq!(DatError::from_code(0x8007_0068), None, "subtype 104 does not exist");
        // Bare INVALID_STATE is illumos's bug (cr_accept, Tavor posts), not a DAT code.
        assert_eq!(DatError::from_code(0x0007_0000), None);
        assert_eq!(DatError::from_code(0x000D_0000), Some(DatError::queue_empty()));
        assert_eq!(DatError::from_code(0x800F_0000), Some(DatError::timeout_expired()));
    }

    #[test]
    fn codes_match_the_dat_2_0_numbering() {
        // Literals from udapl-semantics.md §5, not from the abi constants.
        let cases = [
            (DatError::invalid_state(subtype::INVALID_STATE_EP_DISCONNECTED), 0x8007_0034),
            (DatError::invalid_state(subtype::INVALID_STATE_EP_NOTREADY), 0x8007_0039),
            (DatError::invalid_state(subtype::INVALID_STATE_EVD_WAITER), 0x8007_004E),
            (DatError::invalid_handle(subtype::INVALID_HANDLE_EP), 0x8005_000C),
            (DatError::invalid_handle_arg(1), 0x8005_001B),
            (DatError::invalid_handle_arg(10), 0x8005_0024),
            (DatError::invalid_parameter(1), 0x8006_0025),
            (DatError::invalid_parameter(2), 0x8006_0026),
            (DatError::invalid_parameter(10), 0x8006_002E),
            (DatError::insufficient_resources(subtype::RESOURCE_MEMORY), 0x8003_0002),
            (DatError::internal_error(), 0x8004_0000),
            (DatError::not_implemented(), 0xBFFF_0000),
            (DatError::queue_empty(), 0x800D_0000),
            (DatError::timeout_expired(), 0x800F_0000),
            (DatError::new(ret::QUEUE_FULL, subtype::NO_SUBTYPE), 0x800E_0000),
        ];
        for (error, code) in cases {
            assert_eq!(error.code(), code, "{error}");
        }
    }

    #[test]
    fn consumer_code_is_bare_only_for_queue_empty_and_timeout() {
        assert_eq!(DatError::queue_empty().consumer_code(), 0x000D_0000);
        assert_eq!(DatError::timeout_expired().consumer_code(), 0x000F_0000);
        assert_eq!(DatError::new(ret::QUEUE_FULL, 0).consumer_code(), 0x800E_0000);
        let disconnected = DatError::invalid_state(subtype::INVALID_STATE_EP_DISCONNECTED);
        assert_eq!(disconnected.consumer_code(), 0x8007_0034);
        assert_eq!(
            DatError::new(ret::ABORT, subtype::SUB_INTERRUPTED).consumer_code(),
            0x8001_0001
        );
    }

    #[test]
    fn display_names_type_subtype_and_detail() {
        let error = DatError::invalid_state(subtype::INVALID_STATE_EP_DISCONNECTED)
            .with_detail("dat_ep_connect needs an UNCONNECTED endpoint; call dat_ep_reset first");
        assert_eq!(
            error.to_string(),
            "DAT_INVALID_STATE (DAT_INVALID_STATE_EP_DISCONNECTED): dat_ep_connect needs an \
             UNCONNECTED endpoint; call dat_ep_reset first"
        );
        assert_eq!(DatError::queue_empty().to_string(), "DAT_QUEUE_EMPTY");
        assert_eq!(
            DatError::invalid_parameter(3).to_string(),
            "DAT_INVALID_PARAMETER (DAT_INVALID_ARG3)"
        );
        assert_eq!(
            DatError::new(ret::EXTENSION_BASE, subtype::NO_SUBTYPE).to_string(),
            "DAT_IB_ERR"
        );
    }

    #[test]
    fn detail_is_kept_and_does_not_change_the_code() {
        let plain = DatError::invalid_handle(subtype::INVALID_HANDLE_PZ);
        let explained = plain.clone().with_detail(format!("PZ handle {:#x} was freed", 0x40));
        assert_eq!(plain.detail(), None);
        assert_eq!(explained.detail(), Some("PZ handle 0x40 was freed"));
        assert_eq!(explained.code(), plain.code());
        assert_eq!(explained.return_type(), ret::INVALID_HANDLE);
        assert_eq!(explained.subtype(), subtype::INVALID_HANDLE_PZ);
        let as_std: &dyn std::error::Error = &explained;
        assert!(as_std.to_string().ends_with(": PZ handle 0x40 was freed"));
    }
}
