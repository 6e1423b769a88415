//! The events an EVD hands out (`DAT_EVENT`, Rust side).

use crate::dto::DtoCompletion;
use ferrodat_abi::dat::EventNumber;

/// Identifies an object an event names (an EP, a service point, a CR): the id the object
/// was created with, unique in the process. The C provider maps it to a handle.
pub type ObjectId = u64;

/// One DAT event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A DTO finished (`DAT_DTO_COMPLETION_EVENT`, or `DAT_IB_DTO_EVENT` for the IB
    /// extension operations).
    Dto {
        /// The endpoint it was posted on.
        ep: ObjectId,
        /// What completed.
        completion: DtoCompletion,
    },
    /// An RMR bind (or unbind) posted with `dat_rmr_bind` finished
    /// (`DAT_RMR_BIND_COMPLETION_EVENT`, on the endpoint's request EVD, as OFA dapl reports
    /// binds; see [`crate::rmr`]).
    RmrBind {
        /// The RMR.
        rmr: ObjectId,
        /// The endpoint the bind was posted on.
        ep: ObjectId,
        /// The consumer's `DAT_RMR_COOKIE`.
        user_cookie: u64,
        /// `DAT_RMR_BIND_SUCCESS`, `DAT_DTO_ERR_FLUSHED` (= `DAT_RMR_BIND_FAILURE`) or
        /// `DAT_RMR_OPERATION_FAILED` (the device refused the bind).
        status: u32,
    },
    /// A connection request arrived on a service point (`DAT_CONNECTION_REQUEST_EVENT`).
    ConnectionRequest {
        /// The PSP or RSP it arrived on.
        sp: ObjectId,
        /// The connection request to query, accept or reject.
        cr: crate::sp::Cr,
        /// The connection qualifier it arrived on.
        conn_qual: u64,
    },
    /// A connection event on an endpoint (`DAT_CONNECTION_EVENT_*`).
    Connection {
        /// `DAT_CONNECTION_EVENT_ESTABLISHED`, `_PEER_REJECTED`, `_DISCONNECTED`, ...
        number: EventNumber,
        /// The endpoint.
        ep: ObjectId,
        /// The peer's private data (ESTABLISHED on the active side, PEER_REJECTED).
        private_data: Vec<u8>,
    },
    /// An asynchronous error (`DAT_ASYNC_ERROR_*`).
    Async {
        /// `DAT_ASYNC_ERROR_EVD_OVERFLOW`, `_EP_BROKEN`, ...
        number: EventNumber,
        /// The object it concerns.
        object: ObjectId,
    },
    /// `dat_evd_post_se`: the consumer's pointer, handed back.
    Software {
        /// The `DAT_PVOID` posted.
        pointer: u64,
    },
}

/// A fresh object id (never 0, so 0 can mean "none" at the C boundary).
pub fn new_object_id() -> ObjectId {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
