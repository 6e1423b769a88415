//! The endpoint state machine: one pure function, [`transition`], that both the API calls on
//! an EP and the connection manager's events go through.
//!
//! It follows `reference/udapl-semantics.md` §2a (transitions) and §2b (legal calls): a call
//! marked `-` there fails with `DAT_INVALID_STATE` whose subtype names the endpoint's
//! current state ([`EpState::subtype`], as dapl's `dapls_ep_state_subtype` does). A step
//! that is allowed returns the next state and the [`Effects`] the caller must carry out
//! (flush, CM message, connection event, ...); the function itself touches nothing.
//!
//! Decisions where the sources leave a choice:
//!
//! - `dat_ep_disconnect(GRACEFUL)` on DISCONNECT_PENDING has no effect (the man page; dapl's
//!   `INVALID_PARAMETER/ARG2` is not followed).
//! - Disconnecting during connection setup (ACTIVE_CONNECTION_PENDING, COMPLETION_PENDING)
//!   ends in DISCONNECTED at once with a `DISCONNECTED` event (as OFA does), pre-posted
//!   receives flushed.
//! - An endpoint without a PZ or a connection EVD cannot connect or accept:
//!   `INVALID_STATE/EP_NOTREADY`. The caller says what the EP has in a [`Readiness`] carried
//!   by the connect and accept triggers; the state is checked first, so an EP in the wrong
//!   state is reported by its state whatever it lacks.
//! - A connection-manager event that does not apply to the current state is stale (the EP
//!   moved on, e.g. a local abrupt disconnect crossed the peer's): `INVALID_STATE` with the
//!   current state, which the CM drops.
//! - An endpoint that is destroyed (`dat_ep_free`, or `dat_cr_reject` of a provider-created
//!   EP) gets [`Effects::destroy_endpoint`]; `next` is then the state the object is torn
//!   down in: DISCONNECTED after `dat_ep_free`, UNCONNECTED for a rejected provider EP.

use std::fmt;

use ferrodat_abi::dat::{self as abi, CloseFlags, EventNumber, ReturnSubtype, event, subtype};

use crate::error::{DatError, DatResult};

/// The DAT 2.0 endpoint states an EP can be in (`DAT_EP_STATE`, values from
/// [`abi::ep_state`]). The UNCONFIGURED_* states are never entered (an EP that lacks a PZ or
/// connection EVD is reported as EP_NOTREADY instead), nor are the HA states
/// CONNECTED_SINGLE_PATH/MULTI_PATH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum EpState {
    /// Idle: created, reset, or rejected; receives may be pre-posted.
    Unconnected = abi::ep_state::UNCONNECTED,
    /// Owned by a Reserved Service Point waiting for a request.
    Reserved = abi::ep_state::RESERVED,
    /// A request arrived on this EP's RSP; the consumer accepts or rejects it.
    PassiveConnectionPending = abi::ep_state::PASSIVE_CONNECTION_PENDING,
    /// `dat_ep_connect` sent a request; waiting for the peer.
    ActiveConnectionPending = abi::ep_state::ACTIVE_CONNECTION_PENDING,
    /// A provider-created EP holding a request that arrived on a PSP with the provider flag.
    TentativeConnectionPending = abi::ep_state::TENTATIVE_CONNECTION_PENDING,
    /// Connected: data transfer allowed.
    Connected = abi::ep_state::CONNECTED,
    /// A graceful disconnect waits for outstanding requests; new requests are refused.
    DisconnectPending = abi::ep_state::DISCONNECT_PENDING,
    /// The connection (or its setup) is over; posts complete as flushed until reset.
    Disconnected = abi::ep_state::DISCONNECTED,
    /// Passive side after `dat_cr_accept`, before the connection is established.
    CompletionPending = abi::ep_state::COMPLETION_PENDING,
}

impl EpState {
    /// Every state, in the column order of the legal-calls table (§2b).
    pub const ALL: [EpState; 9] = [
        EpState::Unconnected,
        EpState::Reserved,
        EpState::PassiveConnectionPending,
        EpState::ActiveConnectionPending,
        EpState::TentativeConnectionPending,
        EpState::CompletionPending,
        EpState::Connected,
        EpState::DisconnectPending,
        EpState::Disconnected,
    ];

    /// The state `dat_ep_create` (and `dat_ep_create_with_srq`) gives an EP.
    pub const AFTER_EP_CREATE: EpState = EpState::Unconnected;

    /// The state of an EP the provider creates for a request arriving on a PSP created with
    /// `DAT_PSP_PROVIDER_FLAG` (NULL PZ and EVDs until the consumer modifies it).
    pub const AFTER_PROVIDER_CREATE: EpState = EpState::TentativeConnectionPending;

    /// The `DAT_EP_STATE` value `dat_ep_query` and `dat_ep_get_status` report.
    pub const fn to_raw(self) -> abi::EpState {
        self as abi::EpState
    }

    /// The state for a `DAT_EP_STATE` value, `None` for the states an EP never enters.
    pub const fn from_raw(raw: abi::EpState) -> Option<EpState> {
        let mut i = 0;
        while i < Self::ALL.len() {
            if Self::ALL[i] as abi::EpState == raw {
                return Some(Self::ALL[i]);
            }
            i += 1;
        }
        None
    }

    /// The `DAT_INVALID_STATE` subtype naming this state, for calls it does not allow.
    pub const fn subtype(self) -> ReturnSubtype {
        match self {
            EpState::Unconnected => subtype::INVALID_STATE_EP_UNCONNECTED,
            EpState::Reserved => subtype::INVALID_STATE_EP_RESERVED,
            EpState::PassiveConnectionPending => subtype::INVALID_STATE_EP_PASSCONNPENDING,
            EpState::ActiveConnectionPending => subtype::INVALID_STATE_EP_ACTCONNPENDING,
            EpState::TentativeConnectionPending => subtype::INVALID_STATE_EP_TENTCONNPENDING,
            EpState::CompletionPending => subtype::INVALID_STATE_EP_COMPLPENDING,
            EpState::Connected => subtype::INVALID_STATE_EP_CONNECTED,
            EpState::DisconnectPending => subtype::INVALID_STATE_EP_DISCPENDING,
            EpState::Disconnected => subtype::INVALID_STATE_EP_DISCONNECTED,
        }
    }

    /// The C name, e.g. `DAT_EP_STATE_CONNECTED`.
    pub const fn name(self) -> &'static str {
        match self {
            EpState::Unconnected => "DAT_EP_STATE_UNCONNECTED",
            EpState::Reserved => "DAT_EP_STATE_RESERVED",
            EpState::PassiveConnectionPending => "DAT_EP_STATE_PASSIVE_CONNECTION_PENDING",
            EpState::ActiveConnectionPending => "DAT_EP_STATE_ACTIVE_CONNECTION_PENDING",
            EpState::TentativeConnectionPending => "DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING",
            EpState::CompletionPending => "DAT_EP_STATE_COMPLETION_PENDING",
            EpState::Connected => "DAT_EP_STATE_CONNECTED",
            EpState::DisconnectPending => "DAT_EP_STATE_DISCONNECT_PENDING",
            EpState::Disconnected => "DAT_EP_STATE_DISCONNECTED",
        }
    }
}

impl fmt::Display for EpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `dat_ep_disconnect`'s flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DisconnectMode {
    /// `DAT_CLOSE_ABRUPT_FLAG` (the default): outstanding work is flushed.
    Abrupt,
    /// `DAT_CLOSE_GRACEFUL_FLAG`: outstanding requests complete first (DISCONNECT_PENDING).
    Graceful,
}

impl DisconnectMode {
    /// The mode for a `DAT_CLOSE_FLAGS` value; `None` for anything else, which `capi`
    /// reports as `DAT_INVALID_PARAMETER/ARG2`.
    pub const fn from_close_flags(flags: CloseFlags) -> Option<DisconnectMode> {
        match flags {
            abi::close_flags::ABRUPT => Some(DisconnectMode::Abrupt),
            abi::close_flags::GRACEFUL => Some(DisconnectMode::Graceful),
            _ => None,
        }
    }
}

/// What an EP has that connection setup needs: a PZ (its QP lives in one) and a connection
/// EVD (where the outcome is reported). Lacking either gives `INVALID_STATE/EP_NOTREADY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Readiness {
    /// The EP has a protection zone.
    pub has_pz: bool,
    /// The EP has a connection EVD.
    pub has_connect_evd: bool,
}

impl Readiness {
    /// An EP with both a PZ and a connection EVD.
    pub const READY: Readiness = Readiness { has_pz: true, has_connect_evd: true };

    /// Whether connection setup may start.
    pub const fn is_ready(self) -> bool {
        self.has_pz && self.has_connect_evd
    }
}

/// Something that may move an EP: a DAT call on it, or a connection-manager event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trigger {
    // ----- DAT calls -----
    /// `dat_ep_connect`.
    Connect(Readiness),
    /// `dat_ep_dup_connect` (the other EP's own checks are the caller's).
    DupConnect(Readiness),
    /// `dat_ep_disconnect`.
    Disconnect(DisconnectMode),
    /// `dat_ep_reset`.
    Reset,
    /// `dat_ep_free`.
    Free,
    /// `dat_ep_post_send`.
    PostSend,
    /// `dat_ep_post_rdma_read`.
    PostRdmaRead,
    /// `dat_ep_post_rdma_write`.
    PostRdmaWrite,
    /// `dat_rmr_bind` on this EP.
    RmrBind,
    /// `dat_ep_post_recv` on an EP with its own receive queue.
    PostRecv,
    /// `dat_ep_post_recv` on an EP created with an SRQ: always plain `INVALID_STATE`.
    PostRecvOnSrqEndpoint,
    /// `dat_ep_modify` of the PZ.
    ModifyPz,
    /// `dat_ep_modify` of the EVDs, queue sizes, QoS, completion flags, DTO/IOV/RDMA-read
    /// limits. A mask touching several classes must be legal for each: call `transition`
    /// once per class.
    ModifyEndpointAttributes,
    /// `dat_ep_modify` of transport- or provider-specific attributes.
    ModifyTransportOrProviderAttributes,
    /// `dat_cr_accept(cr, ep)` naming this EP for a request that came without one (a PSP
    /// in consumer mode).
    CrAcceptNamingEndpoint(Readiness),
    /// `dat_cr_accept(cr, NULL)` (or naming the request's own EP) for a request that came
    /// with this EP: an RSP's EP or a provider-created one.
    CrAcceptNullEndpoint(Readiness),
    /// `dat_cr_reject` of the request this EP holds.
    CrReject,
    /// `dat_rsp_create` with this EP.
    RspCreate,
    /// `dat_rsp_free` of the RSP created with this EP.
    RspFree,
    /// `dat_ep_query`, `dat_ep_get_status`, `dat_{set,get}_consumer_context`,
    /// `dat_ep_recv_query`, `dat_ep_set_watermark`: allowed in every state.
    Query,

    // ----- connection-manager events -----
    /// A connection request arrived on the RSP that holds this EP (the RSP reports
    /// `CONNECTION_REQUEST_EVENT` on its own EVD and is used up).
    RequestArrivedOnRsp,
    /// Active side: the peer accepted (`ESTABLISHED`).
    PeerAccepted,
    /// Passive side: the peer confirmed our accept (RTU, `ESTABLISHED`).
    ReadyToUseReceived,
    /// Active side: the peer's consumer rejected the request.
    PeerRejected,
    /// Active side: rejected by the peer's provider (no listener, backlog full, QoS).
    NonPeerRejected,
    /// Active side: the remote address cannot be reached.
    Unreachable,
    /// Active side: the peer did not answer within the connect timeout.
    TimedOut,
    /// Passive side: the accept did not complete (the peer gave up or never confirmed).
    AcceptFailed,
    /// The peer disconnected.
    PeerDisconnected,
    /// A local graceful disconnect finished waiting: every outstanding request completed.
    GracefulDisconnectDone,
    /// A DTO or transport error, or a failed RMR bind, broke the connection.
    TransportError,
    /// Active side: the peer accepted, but this side could not bring its QP up for the
    /// connection (on hardware: a GID it cannot resolve); the peer's accept fails. OFA
    /// reports it as `BROKEN` (its `IB_CME_LOCAL_FAILURE`).
    LocalSetupFailed,

    // ----- the provider undoing a call -----
    /// `dat_ep_connect` (or `_dup_connect`) failed before anything was sent (no socket to
    /// connect from): the endpoint goes back to UNCONNECTED untouched and the call
    /// returns the error, as OFA dapl does.
    ConnectNotStarted,
}

impl Trigger {
    /// Whether this is a connection-manager event rather than a DAT call.
    pub const fn is_cm_event(self) -> bool {
        matches!(
            self,
            Trigger::RequestArrivedOnRsp
                | Trigger::PeerAccepted
                | Trigger::ReadyToUseReceived
                | Trigger::PeerRejected
                | Trigger::NonPeerRejected
                | Trigger::Unreachable
                | Trigger::TimedOut
                | Trigger::AcceptFailed
                | Trigger::PeerDisconnected
                | Trigger::GracefulDisconnectDone
                | Trigger::TransportError
                | Trigger::LocalSetupFailed
        )
    }

    /// The call or event, as error messages name it.
    pub const fn name(self) -> &'static str {
        match self {
            Trigger::Connect(_) => "dat_ep_connect",
            Trigger::DupConnect(_) => "dat_ep_dup_connect",
            Trigger::Disconnect(DisconnectMode::Abrupt) => "dat_ep_disconnect(ABRUPT)",
            Trigger::Disconnect(DisconnectMode::Graceful) => "dat_ep_disconnect(GRACEFUL)",
            Trigger::Reset => "dat_ep_reset",
            Trigger::Free => "dat_ep_free",
            Trigger::PostSend => "dat_ep_post_send",
            Trigger::PostRdmaRead => "dat_ep_post_rdma_read",
            Trigger::PostRdmaWrite => "dat_ep_post_rdma_write",
            Trigger::RmrBind => "dat_rmr_bind",
            Trigger::PostRecv | Trigger::PostRecvOnSrqEndpoint => "dat_ep_post_recv",
            Trigger::ModifyPz => "dat_ep_modify of the PZ",
            Trigger::ModifyEndpointAttributes => {
                "dat_ep_modify of EVDs, queue sizes, QoS, completion flags or limits"
            }
            Trigger::ModifyTransportOrProviderAttributes => {
                "dat_ep_modify of transport or provider attributes"
            }
            Trigger::CrAcceptNamingEndpoint(_) => "dat_cr_accept naming this endpoint",
            Trigger::CrAcceptNullEndpoint(_) => "dat_cr_accept of the request this endpoint holds",
            Trigger::CrReject => "dat_cr_reject",
            Trigger::RspCreate => "dat_rsp_create",
            Trigger::RspFree => "dat_rsp_free",
            Trigger::Query => "dat_ep_query",
            Trigger::RequestArrivedOnRsp => "connection request on the RSP",
            Trigger::PeerAccepted => "peer accepted the connection",
            Trigger::ReadyToUseReceived => "peer confirmed the accept (RTU)",
            Trigger::PeerRejected => "peer rejected the connection",
            Trigger::NonPeerRejected => "peer's provider rejected the connection",
            Trigger::Unreachable => "peer unreachable",
            Trigger::TimedOut => "connection request timed out",
            Trigger::AcceptFailed => "accept did not complete",
            Trigger::PeerDisconnected => "peer disconnected",
            Trigger::GracefulDisconnectDone => "graceful disconnect drained",
            Trigger::TransportError => "transport error",
            Trigger::LocalSetupFailed => "this side could not bring its QP up for the connection",
            Trigger::ConnectNotStarted => "dat_ep_connect that could not start",
        }
    }
}

/// A connection-manager message the caller must send to the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmMessage {
    /// The connection request (after `dat_ep_connect`/`dat_ep_dup_connect`).
    ConnectRequest,
    /// The accept reply with the consumer's private data.
    AcceptReply,
    /// The reject reply.
    Reject,
    /// End the connection or abort its setup.
    Disconnect,
}

/// Which posted work the caller must complete as `DAT_DTO_ERR_FLUSHED` now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flush {
    /// Nothing.
    Nothing,
    /// Pre-posted receives (failed or aborted connection setup; no request can be
    /// outstanding then).
    Receives,
    /// Every outstanding receive, send, RDMA and bind.
    Everything,
}

/// What the caller of [`transition`] must do besides storing the next state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Effects {
    /// A message to send to the peer.
    pub send: Option<CmMessage>,
    /// Posted work to complete as flushed.
    pub flush: Flush,
    /// The post being made completes at once as flushed (posts on DISCONNECTED succeed).
    pub flush_this_post: bool,
    /// Refuse new sends, RDMA and binds from now on (a graceful disconnect is draining).
    pub refuse_new_requests: bool,
    /// Bring the QP back to a fresh, connectable state and forget its outstanding work
    /// (undequeued completions may be lost, as `dat_ep_reset` allows).
    pub recycle_qp: bool,
    /// Tear the endpoint down; its handle is dead for the consumer.
    pub destroy_endpoint: bool,
    /// The connection event to report on the EP's connection EVD
    /// ([`event`]`::CONNECTION_EVENT_*`), after any successful completions already reaped.
    pub connection_event: Option<EventNumber>,
}

impl Effects {
    /// Nothing to do.
    pub const NONE: Effects = Effects {
        send: None,
        flush: Flush::Nothing,
        flush_this_post: false,
        refuse_new_requests: false,
        recycle_qp: false,
        destroy_endpoint: false,
        connection_event: None,
    };

    /// Whether there is nothing to do.
    pub fn is_none(&self) -> bool {
        *self == Effects::NONE
    }
}

/// An allowed step: the state to move to and what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Step {
    /// The EP's state after the step.
    pub next: EpState,
    /// What the caller must do.
    pub effects: Effects,
}

/// Applies `trigger` to an EP in `state`: the step to take, or the `DAT_INVALID_STATE`
/// error to return (see the module docs for the rules and decisions).
pub fn transition(state: EpState, trigger: Trigger) -> DatResult<Step> {
    rule(state, trigger).map_err(|refusal| refusal.into_error(state, trigger))
}

/// Why a trigger is refused, before it becomes a [`DatError`] with a message.
enum Refusal {
    /// `-` in the legal-calls table.
    WrongState,
    /// Connection setup on an EP without a PZ or connection EVD.
    NotReady(Readiness),
    /// `dat_ep_post_recv` on an SRQ endpoint.
    SrqEndpoint,
    /// A CM event for a state the EP has already left.
    StaleEvent,
}

const fn stay(state: EpState) -> Step {
    Step { next: state, effects: Effects::NONE }
}

const fn step(next: EpState, effects: Effects) -> Step {
    Step { next, effects }
}

const fn check_ready(readiness: Readiness) -> Result<(), Refusal> {
    if readiness.is_ready() { Ok(()) } else { Err(Refusal::NotReady(readiness)) }
}

/// Setup ended without a connection: pre-posted receives flushed, `event` reported.
const fn setup_failed(event: EventNumber) -> Step {
    step(
        EpState::Disconnected,
        Effects { flush: Flush::Receives, connection_event: Some(event), ..Effects::NONE },
    )
}

/// The state machine proper: §2a and §2b.
fn rule(state: EpState, trigger: Trigger) -> Result<Step, Refusal> {
    use EpState::*;
    use Trigger::*;
    let sent = |message: CmMessage| Effects { send: Some(message), ..Effects::NONE };
    let disconnected_by_us = Effects {
        send: Some(CmMessage::Disconnect),
        flush: Flush::Everything,
        connection_event: Some(event::CONNECTION_EVENT_DISCONNECTED),
        ..Effects::NONE
    };
    Ok(match (trigger, state) {
        (Connect(readiness) | DupConnect(readiness), Unconnected) => {
            check_ready(readiness)?;
            step(ActiveConnectionPending, sent(CmMessage::ConnectRequest))
        }

        // Both flags abort setup; only receives can be outstanding before CONNECTED.
        (Disconnect(_), ActiveConnectionPending | CompletionPending) => {
            step(Disconnected, Effects { flush: Flush::Receives, ..disconnected_by_us })
        }
        (Disconnect(DisconnectMode::Graceful), Connected) => {
            step(DisconnectPending, Effects { refuse_new_requests: true, ..Effects::NONE })
        }
        (Disconnect(DisconnectMode::Abrupt), Connected | DisconnectPending) => {
            step(Disconnected, disconnected_by_us)
        }
        // The man page: graceful on DISCONNECT_PENDING "has no effect"; on DISCONNECTED
        // either flag is a no-op.
        (Disconnect(DisconnectMode::Graceful), DisconnectPending) => stay(state),
        (Disconnect(_), Disconnected) => stay(state),

        // On UNCONNECTED a no-op that keeps pre-posted receives.
        (Reset, Unconnected) => stay(state),
        (Reset, Disconnected) => step(Unconnected, Effects { recycle_qp: true, ..Effects::NONE }),

        (Free, Unconnected | Disconnected) => {
            step(Disconnected, Effects { destroy_endpoint: true, ..Effects::NONE })
        }
        // Freeing during setup or while connected aborts the connection, which is
        // reported as an abrupt disconnect's is (DISCONNECTED; OFA dapl does so too).
        (Free, ActiveConnectionPending | CompletionPending | Connected | DisconnectPending) => {
            step(
                Disconnected,
                Effects {
                    destroy_endpoint: true,
                    connection_event: Some(event::CONNECTION_EVENT_DISCONNECTED),
                    ..sent(CmMessage::Disconnect)
                },
            )
        }

        (PostSend | PostRdmaRead | PostRdmaWrite | RmrBind, Connected) => stay(state),
        (PostSend | PostRdmaRead | PostRdmaWrite | RmrBind | PostRecv, Disconnected) => {
            step(Disconnected, Effects { flush_this_post: true, ..Effects::NONE })
        }
        (PostRecv, _) => stay(state),
        (PostRecvOnSrqEndpoint, _) => return Err(Refusal::SrqEndpoint),

        (ModifyPz, Unconnected | TentativeConnectionPending) => stay(state),
        (
            ModifyEndpointAttributes,
            Unconnected | Reserved | PassiveConnectionPending | TentativeConnectionPending,
        ) => stay(state),
        (ModifyTransportOrProviderAttributes, Unconnected) => stay(state),

        (CrAcceptNamingEndpoint(readiness), Unconnected)
        | (
            CrAcceptNullEndpoint(readiness),
            PassiveConnectionPending | TentativeConnectionPending,
        ) => {
            check_ready(readiness)?;
            step(CompletionPending, sent(CmMessage::AcceptReply))
        }
        // The RSP's EP goes back to the consumer; a provider EP goes back to the provider.
        (CrReject, PassiveConnectionPending) => step(Unconnected, sent(CmMessage::Reject)),
        (CrReject, TentativeConnectionPending) => {
            step(Unconnected, Effects { destroy_endpoint: true, ..sent(CmMessage::Reject) })
        }

        (RspCreate, Unconnected) => step(Reserved, Effects::NONE),
        (RspFree, Reserved) => step(Unconnected, Effects::NONE),
        // A request already used the RSP up and took the EP with it: dat_rsp_free "has no
        // effect on previously generated Connection Request".
        (RspFree, _) => stay(state),

        (Query, _) => stay(state),

        (RequestArrivedOnRsp, Reserved) => step(PassiveConnectionPending, Effects::NONE),
        (PeerAccepted, ActiveConnectionPending) | (ReadyToUseReceived, CompletionPending) => step(
            Connected,
            Effects {
                connection_event: Some(event::CONNECTION_EVENT_ESTABLISHED),
                ..Effects::NONE
            },
        ),
        (PeerRejected, ActiveConnectionPending) => {
            setup_failed(event::CONNECTION_EVENT_PEER_REJECTED)
        }
        (NonPeerRejected, ActiveConnectionPending) => {
            setup_failed(event::CONNECTION_EVENT_NON_PEER_REJECTED)
        }
        (Unreachable, ActiveConnectionPending) => setup_failed(event::CONNECTION_EVENT_UNREACHABLE),
        (TimedOut, ActiveConnectionPending) => setup_failed(event::CONNECTION_EVENT_TIMED_OUT),
        (LocalSetupFailed, ActiveConnectionPending) => setup_failed(event::CONNECTION_EVENT_BROKEN),
        (AcceptFailed, CompletionPending) => {
            setup_failed(event::CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR)
        }
        (PeerDisconnected, Connected | DisconnectPending) => step(
            Disconnected,
            Effects {
                flush: Flush::Everything,
                connection_event: Some(event::CONNECTION_EVENT_DISCONNECTED),
                ..Effects::NONE
            },
        ),
        // The requests have drained: now tell the peer; remaining receives are flushed.
        (GracefulDisconnectDone, DisconnectPending) => step(Disconnected, disconnected_by_us),
        // The library ends a broken connection itself (dapl does) and reports BROKEN.
        (TransportError, Connected | DisconnectPending) => step(
            Disconnected,
            Effects {
                connection_event: Some(event::CONNECTION_EVENT_BROKEN),
                ..disconnected_by_us
            },
        ),

        (ConnectNotStarted, ActiveConnectionPending) => step(Unconnected, Effects::NONE),

        (trigger, _) if trigger.is_cm_event() => return Err(Refusal::StaleEvent),
        _ => return Err(Refusal::WrongState),
    })
}

impl Refusal {
    fn into_error(self, state: EpState, trigger: Trigger) -> DatError {
        let call = trigger.name();
        match self {
            Refusal::WrongState => {
                let allowed: Vec<&str> = EpState::ALL
                    .iter()
                    .filter(|&&s| !matches!(rule(s, trigger), Err(Refusal::WrongState)))
                    .map(|s| s.name())
                    .collect();
                let hint = wrong_state_hint(state, trigger)
                    .map_or(String::new(), |hint| format!("; {hint}"));
                DatError::invalid_state(state.subtype()).with_detail(format!(
                    "{call} is not allowed on an endpoint in {state} (allowed in {}){hint}",
                    allowed.join(", ")
                ))
            }
            Refusal::NotReady(readiness) => {
                let missing = match (readiness.has_pz, readiness.has_connect_evd) {
                    (false, false) => "a protection zone and a connection EVD",
                    (false, true) => "a protection zone",
                    _ => "a connection EVD",
                };
                DatError::invalid_state(subtype::INVALID_STATE_EP_NOTREADY).with_detail(format!(
                    "{call}: the endpoint lacks {missing}; set it with dat_ep_modify first"
                ))
            }
            Refusal::SrqEndpoint => DatError::invalid_state(subtype::NO_SUBTYPE).with_detail(
                "dat_ep_post_recv on an endpoint that receives from an SRQ; post the buffer \
                 with dat_srq_post_recv",
            ),
            Refusal::StaleEvent => DatError::invalid_state(state.subtype()).with_detail(format!(
                "connection-manager event '{call}' does not apply to an endpoint in {state}; \
                 the endpoint has moved on and the event is dropped"
            )),
        }
    }
}

/// What to do instead, for the refusals consumers run into most.
fn wrong_state_hint(state: EpState, trigger: Trigger) -> Option<&'static str> {
    use EpState::*;
    use Trigger::*;
    Some(match (trigger, state) {
        (Connect(_) | DupConnect(_) | CrAcceptNamingEndpoint(_) | RspCreate, Disconnected) => {
            "call dat_ep_reset first to make it UNCONNECTED again"
        }
        (PostSend | PostRdmaRead | PostRdmaWrite | RmrBind, DisconnectPending) => {
            "a graceful disconnect is waiting for outstanding requests; new ones are refused"
        }
        (PostSend | PostRdmaRead | PostRdmaWrite | RmrBind, _) => {
            "sends, RDMA and binds need a CONNECTED endpoint"
        }
        (Free | Disconnect(_), Reserved) => "free the RSP holding it first (dat_rsp_free)",
        (Free | Disconnect(_), PassiveConnectionPending | TentativeConnectionPending) => {
            "accept or reject the pending connection request first (dat_cr_reject)"
        }
        (Disconnect(_), Unconnected) => "there is no connection or connection setup to end",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Ep::post_request` skips the state machine in CONNECTED: posting there must be
    /// legal, change nothing and flush nothing.
    #[test]
    fn a_request_post_on_a_connected_endpoint_is_a_plain_post() {
        for trigger in [Trigger::PostSend, Trigger::PostRdmaWrite, Trigger::PostRdmaRead] {
            let step = transition(EpState::Connected, trigger).unwrap();
            assert_eq!(step.next, EpState::Connected, "{trigger:?}");
            assert_eq!(step.effects, Effects::NONE, "{trigger:?}");
        }
    }
    use ferrodat_abi::dat::ret;

    const NOT_READY: [Readiness; 3] = [
        Readiness { has_pz: false, has_connect_evd: true },
        Readiness { has_pz: true, has_connect_evd: false },
        Readiness { has_pz: false, has_connect_evd: false },
    ];

    /// One row per trigger: its cell in each state, in the columns
    ///
    /// ```text
    ///  UNC RES PCP ACP TCP CPN CON DSP DSC
    /// ```
    ///
    /// `-` INVALID_STATE with the current state as subtype; `Y` allowed, a real move (its
    /// step is checked by the transition tests); `=` allowed, same state, no effects;
    /// `F` allowed, same state, the post completes as flushed; `S` plain INVALID_STATE
    /// (NO_SUBTYPE). Written from §2b of udapl-semantics.md (and §2a for the rows §2b has
    /// no line for: cr_reject, rsp_free and the CM events), not from the code.
    const LEGAL_CALLS: &[(Trigger, &str)] = &[
        (Trigger::Connect(Readiness::READY), "Y - - - - - - - -"),
        (Trigger::DupConnect(Readiness::READY), "Y - - - - - - - -"),
        (Trigger::Disconnect(DisconnectMode::Abrupt), "- - - Y - Y Y Y ="),
        (Trigger::Disconnect(DisconnectMode::Graceful), "- - - Y - Y Y = ="),
        (Trigger::Reset, "= - - - - - - - Y"),
        (Trigger::Free, "Y - - Y - Y Y Y Y"),
        (Trigger::PostSend, "- - - - - - = - F"),
        (Trigger::PostRdmaRead, "- - - - - - = - F"),
        (Trigger::PostRdmaWrite, "- - - - - - = - F"),
        (Trigger::RmrBind, "- - - - - - = - F"),
        (Trigger::PostRecv, "= = = = = = = = F"),
        (Trigger::PostRecvOnSrqEndpoint, "S S S S S S S S S"),
        (Trigger::ModifyPz, "= - - - = - - - -"),
        (Trigger::ModifyEndpointAttributes, "= = = - = - - - -"),
        (Trigger::ModifyTransportOrProviderAttributes, "= - - - - - - - -"),
        (Trigger::CrAcceptNamingEndpoint(Readiness::READY), "Y - - - - - - - -"),
        (Trigger::CrAcceptNullEndpoint(Readiness::READY), "- - Y - Y - - - -"),
        (Trigger::CrReject, "- - Y - Y - - - -"),
        (Trigger::RspCreate, "Y - - - - - - - -"),
        (Trigger::RspFree, "= Y = = = = = = ="),
        (Trigger::Query, "= = = = = = = = ="),
        // Connection-manager events: `-` = stale, dropped.
        (Trigger::RequestArrivedOnRsp, "- Y - - - - - - -"),
        (Trigger::PeerAccepted, "- - - Y - - - - -"),
        (Trigger::ReadyToUseReceived, "- - - - - Y - - -"),
        (Trigger::PeerRejected, "- - - Y - - - - -"),
        (Trigger::NonPeerRejected, "- - - Y - - - - -"),
        (Trigger::Unreachable, "- - - Y - - - - -"),
        (Trigger::TimedOut, "- - - Y - - - - -"),
        (Trigger::AcceptFailed, "- - - - - Y - - -"),
        (Trigger::PeerDisconnected, "- - - - - - Y Y -"),
        (Trigger::GracefulDisconnectDone, "- - - - - - - Y -"),
        (Trigger::TransportError, "- - - - - - Y Y -"),
        (Trigger::LocalSetupFailed, "- - - Y - - - - -"),
        // The provider undoing its own step.
        (Trigger::ConnectNotStarted, "- - - Y - - - - -"),
    ];

    /// A distinct number per trigger variant; the exhaustive match makes a new variant a
    /// compile error here until the table above gets a row for it.
    fn variant_number(trigger: Trigger) -> usize {
        match trigger {
            Trigger::Connect(_) => 0,
            Trigger::DupConnect(_) => 1,
            Trigger::Disconnect(DisconnectMode::Abrupt) => 2,
            Trigger::Disconnect(DisconnectMode::Graceful) => 3,
            Trigger::Reset => 4,
            Trigger::Free => 5,
            Trigger::PostSend => 6,
            Trigger::PostRdmaRead => 7,
            Trigger::PostRdmaWrite => 8,
            Trigger::RmrBind => 9,
            Trigger::PostRecv => 10,
            Trigger::PostRecvOnSrqEndpoint => 11,
            Trigger::ModifyPz => 12,
            Trigger::ModifyEndpointAttributes => 13,
            Trigger::ModifyTransportOrProviderAttributes => 14,
            Trigger::CrAcceptNamingEndpoint(_) => 15,
            Trigger::CrAcceptNullEndpoint(_) => 16,
            Trigger::CrReject => 17,
            Trigger::RspCreate => 18,
            Trigger::RspFree => 19,
            Trigger::Query => 20,
            Trigger::RequestArrivedOnRsp => 21,
            Trigger::PeerAccepted => 22,
            Trigger::ReadyToUseReceived => 23,
            Trigger::PeerRejected => 24,
            Trigger::NonPeerRejected => 25,
            Trigger::Unreachable => 26,
            Trigger::TimedOut => 27,
            Trigger::AcceptFailed => 28,
            Trigger::PeerDisconnected => 29,
            Trigger::GracefulDisconnectDone => 30,
            Trigger::TransportError => 31,
            Trigger::ConnectNotStarted => 32,
            Trigger::LocalSetupFailed => 33,
        }
    }

    #[test]
    fn legal_calls_table_has_one_row_per_trigger() {
        let mut numbers: Vec<usize> = LEGAL_CALLS.iter().map(|row| variant_number(row.0)).collect();
        numbers.sort_unstable();
        assert_eq!(numbers, (0..34).collect::<Vec<_>>());
    }

    #[test]
    fn every_cell_of_the_legal_calls_table() {
        let columns = "UNC RES PCP ACP TCP CPN CON DSP DSC";
        assert_eq!(EpState::ALL.map(|s| s.to_raw()), [0, 2, 4, 6, 7, 12, 9, 10, 11], "{columns}");
        for &(trigger, row) in LEGAL_CALLS {
            let cells: Vec<&str> = row.split(' ').collect();
            assert_eq!(cells.len(), 9, "{trigger:?}");
            for (&state, cell) in EpState::ALL.iter().zip(cells) {
                let outcome = transition(state, trigger);
                let at = format!("{trigger:?} in {state}: {outcome:?}");
                match cell {
                    "-" => {
                        let error = outcome.expect_err(&at);
                        assert_eq!(error.code(), 0x8007_0000 | state.subtype(), "{at}");
                    }
                    "S" => assert_eq!(outcome.expect_err(&at).code(), 0x8007_0000, "{at}"),
                    "Y" => assert_ne!(outcome.expect(&at), stay(state), "{at}"),
                    "=" => assert_eq!(outcome.expect(&at), stay(state), "{at}"),
                    "F" => {
                        let flushed = Effects { flush_this_post: true, ..Effects::NONE };
                        assert_eq!(outcome.expect(&at), step(state, flushed), "{at}");
                    }
                    other => panic!("bad cell {other:?} in the table"),
                }
            }
        }
    }

    fn expect_step(state: EpState, trigger: Trigger, next: EpState, effects: Effects) {
        assert_eq!(
            transition(state, trigger),
            Ok(Step { next, effects }),
            "{trigger:?} in {state}"
        );
    }

    fn report(number: EventNumber) -> Effects {
        Effects { connection_event: Some(number), ..Effects::NONE }
    }

    fn send(message: CmMessage) -> Effects {
        Effects { send: Some(message), ..Effects::NONE }
    }

    use EpState::*;

    #[test]
    fn creation_states() {
        assert_eq!(EpState::AFTER_EP_CREATE, Unconnected);
        assert_eq!(EpState::AFTER_PROVIDER_CREATE, TentativeConnectionPending);
    }

    #[test]
    fn active_side_transitions() {
        let ready = Readiness::READY;
        for connect in [Trigger::Connect(ready), Trigger::DupConnect(ready)] {
            expect_step(
                Unconnected,
                connect,
                ActiveConnectionPending,
                send(CmMessage::ConnectRequest),
            );
        }
        expect_step(
            ActiveConnectionPending,
            Trigger::PeerAccepted,
            Connected,
            report(event::CONNECTION_EVENT_ESTABLISHED),
        );
        let failures = [
            (Trigger::PeerRejected, event::CONNECTION_EVENT_PEER_REJECTED),
            (Trigger::NonPeerRejected, event::CONNECTION_EVENT_NON_PEER_REJECTED),
            (Trigger::Unreachable, event::CONNECTION_EVENT_UNREACHABLE),
            (Trigger::TimedOut, event::CONNECTION_EVENT_TIMED_OUT),
            (Trigger::LocalSetupFailed, event::CONNECTION_EVENT_BROKEN),
        ];
        for (trigger, number) in failures {
            let effects = Effects { flush: Flush::Receives, ..report(number) };
            expect_step(ActiveConnectionPending, trigger, Disconnected, effects);
        }
        // A connect that could not start: back as it was, receives kept, nothing reported.
        expect_step(
            ActiveConnectionPending,
            Trigger::ConnectNotStarted,
            Unconnected,
            Effects::NONE,
        );
    }

    #[test]
    fn passive_side_transitions() {
        let ready = Readiness::READY;
        expect_step(Unconnected, Trigger::RspCreate, Reserved, Effects::NONE);
        expect_step(Reserved, Trigger::RspFree, Unconnected, Effects::NONE);
        expect_step(
            Reserved,
            Trigger::RequestArrivedOnRsp,
            PassiveConnectionPending,
            Effects::NONE,
        );
        let accept_reply = send(CmMessage::AcceptReply);
        expect_step(
            Unconnected,
            Trigger::CrAcceptNamingEndpoint(ready),
            CompletionPending,
            accept_reply,
        );
        for holder in [PassiveConnectionPending, TentativeConnectionPending] {
            expect_step(
                holder,
                Trigger::CrAcceptNullEndpoint(ready),
                CompletionPending,
                accept_reply,
            );
        }
        expect_step(
            PassiveConnectionPending,
            Trigger::CrReject,
            Unconnected,
            send(CmMessage::Reject),
        );
        expect_step(
            TentativeConnectionPending,
            Trigger::CrReject,
            Unconnected,
            Effects { destroy_endpoint: true, ..send(CmMessage::Reject) },
        );
        expect_step(
            CompletionPending,
            Trigger::ReadyToUseReceived,
            Connected,
            report(event::CONNECTION_EVENT_ESTABLISHED),
        );
        expect_step(
            CompletionPending,
            Trigger::AcceptFailed,
            Disconnected,
            Effects {
                flush: Flush::Receives,
                ..report(event::CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR)
            },
        );
    }

    #[test]
    fn disconnect_transitions() {
        let abrupt = Trigger::Disconnect(DisconnectMode::Abrupt);
        let graceful = Trigger::Disconnect(DisconnectMode::Graceful);
        let ended_by_us = Effects {
            send: Some(CmMessage::Disconnect),
            flush: Flush::Everything,
            ..report(event::CONNECTION_EVENT_DISCONNECTED)
        };
        for setup in [ActiveConnectionPending, CompletionPending] {
            for flag in [abrupt, graceful] {
                let aborted = Effects { flush: Flush::Receives, ..ended_by_us };
                expect_step(setup, flag, Disconnected, aborted);
            }
        }
        expect_step(
            Connected,
            graceful,
            DisconnectPending,
            Effects { refuse_new_requests: true, ..Effects::NONE },
        );
        expect_step(Connected, abrupt, Disconnected, ended_by_us);
        expect_step(DisconnectPending, abrupt, Disconnected, ended_by_us);
        expect_step(DisconnectPending, Trigger::GracefulDisconnectDone, Disconnected, ended_by_us);
        expect_step(DisconnectPending, graceful, DisconnectPending, Effects::NONE);
        expect_step(Disconnected, abrupt, Disconnected, Effects::NONE);
        expect_step(Disconnected, graceful, Disconnected, Effects::NONE);
        let peer_ended =
            Effects { flush: Flush::Everything, ..report(event::CONNECTION_EVENT_DISCONNECTED) };
        expect_step(Connected, Trigger::PeerDisconnected, Disconnected, peer_ended);
        expect_step(DisconnectPending, Trigger::PeerDisconnected, Disconnected, peer_ended);
        let broken =
            Effects { connection_event: Some(event::CONNECTION_EVENT_BROKEN), ..ended_by_us };
        expect_step(Connected, Trigger::TransportError, Disconnected, broken);
        expect_step(DisconnectPending, Trigger::TransportError, Disconnected, broken);
    }

    #[test]
    fn reset_and_free_transitions() {
        expect_step(
            Disconnected,
            Trigger::Reset,
            Unconnected,
            Effects { recycle_qp: true, ..Effects::NONE },
        );
        expect_step(Unconnected, Trigger::Reset, Unconnected, Effects::NONE);
        let destroyed = Effects { destroy_endpoint: true, ..Effects::NONE };
        for idle in [Unconnected, Disconnected] {
            expect_step(idle, Trigger::Free, Disconnected, destroyed);
        }
        for live in [ActiveConnectionPending, CompletionPending, Connected, DisconnectPending] {
            let aborted = Effects {
                send: Some(CmMessage::Disconnect),
                connection_event: Some(event::CONNECTION_EVENT_DISCONNECTED),
                ..destroyed
            };
            expect_step(live, Trigger::Free, Disconnected, aborted);
        }
    }

    #[test]
    fn posts_in_disconnected_are_flushed_and_posts_in_connected_just_go() {
        let flushed = Effects { flush_this_post: true, ..Effects::NONE };
        for post in
            [Trigger::PostSend, Trigger::PostRdmaRead, Trigger::PostRdmaWrite, Trigger::RmrBind]
        {
            expect_step(Connected, post, Connected, Effects::NONE);
            expect_step(Disconnected, post, Disconnected, flushed);
        }
        expect_step(Disconnected, Trigger::PostRecv, Disconnected, flushed);
        expect_step(Unconnected, Trigger::PostRecv, Unconnected, Effects::NONE);
    }

    #[test]
    fn connection_setup_on_an_unready_endpoint_is_ep_notready() {
        for readiness in NOT_READY {
            for (trigger, state) in [
                (Trigger::Connect(readiness), Unconnected),
                (Trigger::DupConnect(readiness), Unconnected),
                (Trigger::CrAcceptNamingEndpoint(readiness), Unconnected),
                (Trigger::CrAcceptNullEndpoint(readiness), PassiveConnectionPending),
                (Trigger::CrAcceptNullEndpoint(readiness), TentativeConnectionPending),
            ] {
                let error = transition(state, trigger).expect_err("not ready");
                assert_eq!(error.code(), 0x8007_0039, "{trigger:?} in {state}: {error}");
            }
            // The wrong state wins over missing pieces.
            let error = transition(Connected, Trigger::Connect(readiness)).expect_err("connected");
            assert_eq!(error.code(), 0x8007_0033, "{error}");
        }
    }

    #[test]
    fn exact_codes_of_state_errors() {
        let code = |state, trigger| transition(state, trigger).expect_err("refused").code();
        let connect = Trigger::Connect(Readiness::READY);
        assert_eq!(code(Disconnected, connect), 0x8007_0034);
        assert_eq!(code(Unconnected, Trigger::PostSend), 0x8007_002F);
        assert_eq!(code(ActiveConnectionPending, Trigger::PostSend), 0x8007_0030);
        assert_eq!(code(PassiveConnectionPending, Trigger::Free), 0x8007_0031);
        assert_eq!(code(TentativeConnectionPending, Trigger::Free), 0x8007_0032);
        assert_eq!(code(Connected, Trigger::Reset), 0x8007_0033);
        assert_eq!(code(Reserved, Trigger::Free), 0x8007_0035);
        assert_eq!(code(CompletionPending, Trigger::PostSend), 0x8007_0036);
        assert_eq!(code(DisconnectPending, Trigger::PostSend), 0x8007_0037);
        assert_eq!(code(Connected, Trigger::PostRecvOnSrqEndpoint), 0x8007_0000);
        let error = transition(Disconnected, connect).unwrap_err();
        assert_eq!(error.return_type(), ret::INVALID_STATE);
        assert_eq!(error.subtype(), subtype::INVALID_STATE_EP_DISCONNECTED);
    }

    #[test]
    fn error_messages_say_what_failed_and_what_to_do() {
        let message = |state, trigger| transition(state, trigger).unwrap_err().to_string();
        assert_eq!(
            message(Disconnected, Trigger::Connect(Readiness::READY)),
            "DAT_INVALID_STATE (DAT_INVALID_STATE_EP_DISCONNECTED): dat_ep_connect is not \
             allowed on an endpoint in DAT_EP_STATE_DISCONNECTED (allowed in \
             DAT_EP_STATE_UNCONNECTED); call dat_ep_reset first to make it UNCONNECTED again"
        );
        assert_eq!(
            message(DisconnectPending, Trigger::PostSend),
            "DAT_INVALID_STATE (DAT_INVALID_STATE_EP_DISCPENDING): dat_ep_post_send is not \
             allowed on an endpoint in DAT_EP_STATE_DISCONNECT_PENDING (allowed in \
             DAT_EP_STATE_CONNECTED, DAT_EP_STATE_DISCONNECTED); a graceful disconnect is \
             waiting for outstanding requests; new ones are refused"
        );
        assert_eq!(
            message(Unconnected, Trigger::Connect(NOT_READY[0])),
            "DAT_INVALID_STATE (DAT_INVALID_STATE_EP_NOTREADY): dat_ep_connect: the endpoint \
             lacks a protection zone; set it with dat_ep_modify first"
        );
        assert_eq!(
            message(Connected, Trigger::PostRecvOnSrqEndpoint),
            "DAT_INVALID_STATE: dat_ep_post_recv on an endpoint that receives from an SRQ; \
             post the buffer with dat_srq_post_recv"
        );
        assert!(
            message(Reserved, Trigger::Free)
                .ends_with("free the RSP holding it first (dat_rsp_free)")
        );
        assert_eq!(
            message(Disconnected, Trigger::PeerAccepted),
            "DAT_INVALID_STATE (DAT_INVALID_STATE_EP_DISCONNECTED): connection-manager event \
             'peer accepted the connection' does not apply to an endpoint in \
             DAT_EP_STATE_DISCONNECTED; the endpoint has moved on and the event is dropped"
        );
    }

    #[test]
    fn raw_values_subtypes_and_names_match_the_dat_2_0_headers() {
        // (state, DAT_EP_STATE value, INVALID_STATE subtype and its name), literals from the
        // 2.0 headers.
        let expected = [
            (Unconnected, 0, 47, "UNCONNECTED"),
            (Reserved, 2, 53, "RESERVED"),
            (PassiveConnectionPending, 4, 49, "PASSCONNPENDING"),
            (ActiveConnectionPending, 6, 48, "ACTCONNPENDING"),
            (TentativeConnectionPending, 7, 50, "TENTCONNPENDING"),
            (Connected, 9, 51, "CONNECTED"),
            (DisconnectPending, 10, 55, "DISCPENDING"),
            (Disconnected, 11, 52, "DISCONNECTED"),
            (CompletionPending, 12, 54, "COMPLPENDING"),
        ];
        for (state, raw, sub, sub_name) in expected {
            assert_eq!(state.to_raw(), raw, "{state}");
            assert_eq!(EpState::from_raw(raw), Some(state));
            assert_eq!(state.subtype(), sub, "{state}");
            let name = format!("DAT_INVALID_STATE_EP_{sub_name}");
            assert_eq!(crate::error::subtype_name(sub), Some(name.as_str()));
        }
        for never_entered in [1, 3, 5, 8, 13, 14, 15] {
            assert_eq!(EpState::from_raw(never_entered), None, "{never_entered}");
        }
        assert_eq!(Connected.to_string(), "DAT_EP_STATE_CONNECTED");
    }

    #[test]
    fn close_flags_map_to_disconnect_modes() {
        assert_eq!(DisconnectMode::from_close_flags(0), Some(DisconnectMode::Abrupt));
        assert_eq!(DisconnectMode::from_close_flags(1), Some(DisconnectMode::Graceful));
        assert_eq!(DisconnectMode::from_close_flags(2), None);
    }

    #[test]
    fn cm_events_are_told_apart_from_calls() {
        let cm_rows = LEGAL_CALLS.iter().filter(|row| row.0.is_cm_event()).count();
        assert_eq!(cm_rows, 12);
        assert!(!Trigger::Query.is_cm_event());
        assert!(Trigger::TransportError.is_cm_event() && Trigger::LocalSetupFailed.is_cm_event());
        assert!(Effects::NONE.is_none());
        assert!(!Effects { recycle_qp: true, ..Effects::NONE }.is_none());
    }
}
