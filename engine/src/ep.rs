//! Endpoints: an RC QP with its EVDs (a NULL DTO EVD's completions go to a private CQ,
//! `ep::silent`), the DAT state machine ([`crate::ep_state`]) driving
//! it, cookie rings for its DTOs, and its connection through the connection manager.
//!
//! Every state change — from an API call or a connection-manager event — goes through
//! [`transition`] under the EP's state lock; the [`Effects`](crate::ep_state::Effects) it returns are carried out
//! here (flush the QP, send a disconnect, report the connection event). Posting checks
//! the state without that lock (an atomic copy of it) and posts under the QP's own lock,
//! which one thread per EP never contends.

use crate::cm::{self, CmEvent, CmEvents, ConnInfo, Connection, DisconnectReason, NonPeerReason};
use crate::dto::{Cookie, CookieRing, DtoCompletion};
use crate::ep_state::{DisconnectMode, EpState, Flush, Readiness, Trigger, transition};
use crate::error::{DatError, DatResult};
use crate::evd::Evd;
use crate::evd::cq_source::{DtoFailures, EpCompletions};
use crate::evd::early_completions::EarlyCompletions;
use crate::evd::notification::Stream;
use crate::event::{Event, ObjectId, new_object_id};
use crate::ia::Ia;
use crate::lmr::{LmrTriplet, RmrTriplet};
use crate::plain_mutex::PlainMutex;
use crate::pz::Pz;
use crate::srq::Srq;
use ferrodat_abi::dat::{completion_flags, dto_status, dtos, ep_field, evd_flags, subtype};
use ferrodat_driver::work_request::{
    Payload, PostError, PostErrorReason, RecvWr, Remote, SendFlags, SendOp, SendWr, Sge,
};
use ferrodat_driver::{Access, Qp, QpCaps, QpInit};
use silent::SilentCq;
use std::mem::MaybeUninit;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

mod param;
mod provider;
mod silent;
mod teardown;
pub use param::{EpComm, EpParam, EpParamUpdate, EpRecvInfo, EpStatus};
pub(crate) use provider::Placeholders;

/// `DAT_EP_ATTR`: the service, sizes, limits and completion behaviour of an endpoint —
/// every field of the C struct (the named-attribute arrays as name/value pairs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpAttr {
    /// `DAT_SERVICE_TYPE`: reliable connected (`DAT_SERVICE_TYPE_RC`), the only one here.
    pub service_type: u32,
    /// Largest message.
    pub max_message_size: u32,
    /// Largest RDMA operation.
    pub max_rdma_size: u32,
    /// `DAT_QOS_*` (the provider offers best effort only).
    pub qos: u32,
    /// `DAT_COMPLETION_*` flags the receives use.
    pub recv_completion_flags: u32,
    /// `DAT_COMPLETION_*` flags the requests use.
    pub request_completion_flags: u32,
    /// Receives that may be outstanding.
    pub max_recv_dtos: u32,
    /// Requests (sends, RDMA) that may be outstanding.
    pub max_request_dtos: u32,
    /// Segments of a receive's IOV.
    pub max_recv_iov: u32,
    /// Segments of a request's IOV.
    pub max_request_iov: u32,
    /// Incoming RDMA READs in flight.
    pub max_rdma_read_in: u32,
    /// Outgoing RDMA READs in flight.
    pub max_rdma_read_out: u32,
    /// Soft high watermark of an SRQ endpoint; `u32::MAX` (`DAT_WATERMARK_INFINITE`): none
    /// (this provider offers no SRQ watermarks).
    pub srq_soft_hw: u32,
    /// Segments of an RDMA READ's local IOV.
    pub max_rdma_read_iov: u32,
    /// Segments of an RDMA WRITE's local IOV.
    pub max_rdma_write_iov: u32,
    /// Transport-specific attributes (name, value); none are defined here.
    pub ep_transport_specific: Vec<(String, String)>,
    /// Provider-specific attributes (name, value); none are defined here.
    pub ep_provider_specific: Vec<(String, String)>,
}

impl EpAttr {
    /// What an EP created without attributes gets: OFA dapl's defaults (16 DTOs each way, 4
    /// segments, 4 RDMA READs), which dapltest's limits assume.
    pub fn defaults(ia: &Ia) -> EpAttr {
        let a = ia.attr();
        EpAttr {
            service_type: ferrodat_abi::dat::service_type::RC,
            max_message_size: a.max_message_size,
            max_rdma_size: a.max_rdma_size,
            qos: ferrodat_abi::dat::qos::BEST_EFFORT,
            recv_completion_flags: completion_flags::DEFAULT,
            request_completion_flags: completion_flags::DEFAULT,
            max_recv_dtos: 16,
            max_request_dtos: 16,
            max_recv_iov: 4,
            max_request_iov: 4,
            max_rdma_read_in: 4,
            max_rdma_read_out: 4,
            srq_soft_hw: u32::MAX,
            max_rdma_read_iov: 4.min(a.max_iov_segments_per_rdma_read),
            max_rdma_write_iov: 4.min(a.max_iov_segments_per_rdma_write),
            ep_transport_specific: Vec::new(),
            ep_provider_specific: Vec::new(),
        }
    }
}

/// An endpoint. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Ep {
    inner: Arc<EpInner>,
}

#[derive(Debug)]
struct EpInner {
    id: ObjectId,
    ia: Ia,
    /// Its PZ and EVDs (`dat_ep_modify` may change them; a new PZ or DTO EVD means a new QP).
    wiring: Mutex<Wiring>,
    /// Its attributes (`dat_ep_query`, `dat_ep_modify`).
    attr: Mutex<EpAttr>,
    /// Copies of `attr`'s IOV limits for the post paths, which take no lock for them.
    recv_iov_limit: AtomicU32,
    request_iov_limit: AtomicU32,
    rdma_read_iov_limit: AtomicU32,
    rdma_write_iov_limit: AtomicU32,
    /// The state, changed only under this lock through `transition`.
    state: Mutex<EpState>,
    /// A copy of the state for the post paths' check.
    state_word: AtomicU32,
    qp: PlainMutex<Qp<'static>>,
    completions: Arc<EpCompletions>,
    /// The CQ of its DTO streams without an EVD, made when it first has one (kept for its
    /// life: a later `dat_ep_modify` may take an EVD away again).
    silent: OnceLock<SilentCq>,
    /// The SRQ its receives come from.
    srq: Option<Srq>,
    /// Our side of the connection exchange (its PSN); set while connecting or accepting.
    local: Mutex<Option<ConnInfo>>,
    conn: Mutex<Option<Connection>>,
    /// Which connection attempt is the current one: each connect or accept takes the next
    /// number, and events of earlier ones (a late REP or teardown of a connection the
    /// consumer aborted and reset) are dropped.
    attempt: AtomicU64,
    /// The current (or last) connection was made by `dat_ep_connect`, not accepted.
    active: AtomicBool,
    /// The peer's address and connection qualifier (`dat_ep_query`'s remote address and
    /// port), once connecting or accepting.
    remote: Mutex<Option<std::net::SocketAddr>>,
    /// `dat_ep_free` returned: the handle is gone, even while another thread (the CM's, a
    /// completion's) still holds the endpoint for a moment, so an RSP no longer names it.
    freed: AtomicBool,
}

/// What an EP is wired to: the PZ its QP lives in and the EVDs its events go to (a DTO
/// EVD of `None`: DAT_HANDLE_NULL, those completions go to the EP's [`SilentCq`]).
#[derive(Clone, Debug)]
struct Wiring {
    pz: Pz,
    request_evd: Option<Evd>,
    recv_evd: Option<Evd>,
    connect_evd: Option<Evd>,
    /// Whether the consumer gave `pz`. An EP the provider creates for a PSP's request
    /// starts on a placeholder PZ (DAT: NULL) until `dat_ep_modify` names the consumer's.
    pz_given: bool,
}

impl Ep {
    /// `dat_ep_create(ia, pz, recv_evd, request_evd, connect_evd, attr)` with both DTO EVDs
    /// (see [`Ep::create_nullable`] for NULL ones). `attr` (`None`: [`EpAttr::defaults`]) is
    /// checked field by field as `dat_ep_modify` checks it, against the IA, and kept as it is
    /// (`dat_ep_query` reports it); a bad value is `DAT_INVALID_PARAMETER/DAT_INVALID_ARG6`.
    pub fn create(
        pz: &Pz,
        recv_evd: &Evd,
        request_evd: &Evd,
        connect_evd: Option<&Evd>,
        attr: Option<EpAttr>,
    ) -> DatResult<Ep> {
        Ep::create_nullable(pz, Some(recv_evd), Some(request_evd), connect_evd, None, attr)
    }

    /// `dat_ep_create` (`srq` None) or `dat_ep_create_with_srq` with any DTO EVD NULL
    /// (`None`): the consumer is not interested in those completions. Their posts work as
    /// usual; their completions make no event (a failed one still ends the connection, when
    /// the endpoint next posts or is queried or modified: see `ep::silent`). An SRQ endpoint
    /// needs its recv EVD (`DAT_MODEL_NOT_SUPPORTED` without).
    pub fn create_nullable(
        pz: &Pz,
        recv_evd: Option<&Evd>,
        request_evd: Option<&Evd>,
        connect_evd: Option<&Evd>,
        srq: Option<&Srq>,
        attr: Option<EpAttr>,
    ) -> DatResult<Ep> {
        Ep::create_in(pz, recv_evd, request_evd, connect_evd, srq, attr, Origin::Consumer)
    }

    /// `dat_ep_create_with_srq`: receives come from `srq` (post them there). `attr` is
    /// checked as [`Ep::create`] checks it; a bad value is
    /// `DAT_INVALID_PARAMETER/DAT_INVALID_ARG7`, the attributes' argument here.
    pub fn create_with_srq(
        pz: &Pz,
        recv_evd: &Evd,
        request_evd: &Evd,
        connect_evd: Option<&Evd>,
        srq: &Srq,
        attr: Option<EpAttr>,
    ) -> DatResult<Ep> {
        Ep::create_nullable(pz, Some(recv_evd), Some(request_evd), connect_evd, Some(srq), attr)
    }

    #[allow(clippy::too_many_arguments)]
    fn create_in(
        pz: &Pz,
        recv_evd: Option<&Evd>,
        request_evd: Option<&Evd>,
        connect_evd: Option<&Evd>,
        srq: Option<&Srq>,
        attr: Option<EpAttr>,
        origin: Origin,
    ) -> DatResult<Ep> {
        let ia = pz.ia().clone();
        let (verb, attr_arg) =
            if srq.is_some() { ("dat_ep_create_with_srq", 7) } else { ("dat_ep_create", 6) };
        // Everything of one endpoint lives in one IA's device context: another IA's EVD or
        // SRQ numbers an object of another context (the device would take this context's
        // object of the same number), as dat_ep_modify also refuses. And each EVD must be
        // of its kind, as OFA's dapl_ep_create and dat_ep_modify require: a DTO EVD takes no
        // connection events, a CR EVD no completions.
        for (bad, evd, what, kind, kind_name) in [
            (
                subtype::INVALID_HANDLE_EVD_RECV,
                recv_evd,
                "recv_evd",
                evd_flags::DTO,
                "DAT_EVD_DTO_FLAG",
            ),
            (
                subtype::INVALID_HANDLE_EVD_REQUEST,
                request_evd,
                "request_evd",
                evd_flags::DTO,
                "DAT_EVD_DTO_FLAG",
            ),
            (
                subtype::INVALID_HANDLE_EVD_CONN,
                connect_evd,
                "connect_evd",
                evd_flags::CONNECTION,
                "DAT_EVD_CONNECTION_FLAG",
            ),
        ] {
            let Some(evd) = evd else { continue };
            if !evd.ia().same(&ia) {
                return Err(DatError::invalid_handle(bad).with_detail(format!(
                    "{verb}: {what} belongs to another IA than the PZ; use EVDs of the \
                     endpoint's IA"
                )));
            }
            if evd.flags() & kind == 0 {
                return Err(DatError::invalid_handle(bad)
                    .with_detail(format!("{verb}: {what} was created without {kind_name}")));
            }
        }
        if let Some(srq) = srq {
            if recv_evd.is_none() {
                return Err(no_srq_receives_without_evd(verb));
            }
            if !srq.pz().ia().same(&ia) {
                return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_SRQ).with_detail(
                    "dat_ep_create_with_srq: the SRQ belongs to another IA than the PZ",
                ));
            }
            if !srq.pz().same(pz) {
                return Err(DatError::invalid_parameter(2).with_detail(
                    "dat_ep_create_with_srq: the SRQ is in another PZ than the endpoint \
                     (srq_ep_pz_difference_supported is FALSE)",
                ));
            }
        }
        // Every attribute is checked and kept as dat_ep_modify checks and keeps it, against
        // the IA only: the QP is built from them.
        let defaults = EpAttr::defaults(&ia);
        let check = param::AttrCheck {
            verb,
            arg: attr_arg,
            ia: ia.attr(),
            srq_ep: srq.is_some(),
            qp: None,
        };
        let attr = param::checked_attr(
            &defaults,
            attr.as_ref().unwrap_or(&defaults),
            ep_field::EP_ATTR_ALL,
            &check,
        )?;
        // RDMA READs and WRITEs gather from the send queue's segments too.
        let send_sge =
            attr.max_request_iov.max(attr.max_rdma_read_iov).max(attr.max_rdma_write_iov);
        let caps = QpCaps {
            max_send_wr: attr.max_request_dtos.max(1),
            max_recv_wr: attr.max_recv_dtos.max(1),
            max_send_sge: send_sge.max(1),
            max_recv_sge: attr.max_recv_iov.max(1),
            max_inline_data: 60,
        };
        let silent = OnceLock::new();
        if recv_evd.is_none() || request_evd.is_none() {
            let cq = SilentCq::new(&ia, &caps, verb)?;
            cq.set_requests(request_evd.is_none());
            let _ = silent.set(cq);
        }
        let sides = Sides { recv: recv_evd, request: request_evd, silent: silent.get() };
        let qp = build_qp(pz, &sides, srq, caps, verb)?;
        if let Some(silent) = silent.get() {
            silent.fit(&qp.caps(), verb)?;
        }
        let qp_handle = qp.user_handle();
        let id = new_object_id();
        let completions = Arc::new(EpCompletions {
            ep: id,
            requests: CookieRing::new(qp.geometry().sq_wqe_cnt),
            receives: srq.is_none().then(|| CookieRing::new(qp.geometry().rq_wqe_cnt)),
            early: EarlyCompletions::default(),
            owner: Default::default(),
            silent_streams: AtomicBool::new(silent.get().is_some()),
        });
        completions.requests.set_limit(attr.max_request_dtos);
        if let Some(r) = &completions.receives {
            r.set_limit(attr.max_recv_dtos);
        }
        let qpn = qp.qpn();
        if let Some(evd) = request_evd {
            evd.attach(qpn, completions.clone(), request_stream(&attr))?;
        }
        if let Some(evd) = recv_evd
            && let Err(e) = evd.attach(qpn, completions.clone(), receive_stream(&attr))
        {
            if let Some(req) = request_evd {
                let _ = req.with_cq(|s| s.detach(qpn));
            }
            return Err(e);
        }
        let ep = Ep {
            inner: Arc::new(EpInner {
                id,
                ia,
                wiring: Mutex::new(Wiring {
                    pz: pz.clone(),
                    request_evd: request_evd.cloned(),
                    recv_evd: recv_evd.cloned(),
                    connect_evd: connect_evd.cloned(),
                    pz_given: origin == Origin::Consumer,
                }),
                recv_iov_limit: AtomicU32::new(attr.max_recv_iov),
                request_iov_limit: AtomicU32::new(attr.max_request_iov),
                rdma_read_iov_limit: AtomicU32::new(attr.max_rdma_read_iov),
                rdma_write_iov_limit: AtomicU32::new(attr.max_rdma_write_iov),
                attr: Mutex::new(attr),
                state: Mutex::new(origin.initial_state()),
                state_word: AtomicU32::new(origin.initial_state().to_raw()),
                qp: PlainMutex::new(qp),
                completions,
                silent,
                srq: srq.cloned(),
                local: Mutex::new(None),
                conn: Mutex::new(None),
                attempt: AtomicU64::new(0),
                active: AtomicBool::new(false),
                remote: Mutex::new(None),
                freed: AtomicBool::new(false),
            }),
        };
        let owner: Arc<dyn DtoFailures> = Arc::new(EpFailures { ep: Arc::downgrade(&ep.inner) });
        let _ = ep.inner.completions.owner.set(owner);
        ep.register_with_ia();
        // The device's QP errors (a peer's bad rkey, an invalid request) break this EP.
        ep.inner.ia.watch_device_object(qp_handle, id, Arc::downgrade(&ep.inner) as _);
        Ok(ep)
    }

    /// Its id (events name it by id).
    pub fn id(&self) -> ObjectId {
        self.inner.id
    }

    /// `dat_ep_get_status`: the current state.
    pub fn state(&self) -> EpState {
        *lock(&self.inner.state)
    }

    /// `dat_ep_query`: its attributes.
    pub fn attr(&self) -> EpAttr {
        lock(&self.inner.attr).clone()
    }

    /// The PZ its QP lives in (for an endpoint the provider created, a placeholder until
    /// the consumer names one; [`Ep::query`] then reports none).
    pub fn pz(&self) -> Pz {
        lock(&self.inner.wiring).pz.clone()
    }

    /// `dat_ep_query`: the EVD its receives complete on (None: NULL, no events).
    pub fn recv_evd(&self) -> Option<Evd> {
        lock(&self.inner.wiring).recv_evd.clone()
    }

    /// `dat_ep_query`: the EVD its requests complete on (None: NULL, no events).
    pub fn request_evd(&self) -> Option<Evd> {
        lock(&self.inner.wiring).request_evd.clone()
    }

    /// `dat_ep_query`: the peer's address and port (its connection qualifier for the
    /// active side), once a connection was requested or accepted.
    pub fn remote_address(&self) -> Option<std::net::SocketAddr> {
        *lock(&self.inner.remote)
    }

    /// `dat_ep_query`: the SRQ its receives come from, if any.
    pub fn srq(&self) -> Option<&Srq> {
        self.inner.srq.as_ref()
    }

    /// `dat_ep_query`: the EVD its connection events go to.
    pub fn connect_evd(&self) -> Option<Evd> {
        lock(&self.inner.wiring).connect_evd.clone()
    }

    /// What connection setup needs: a provider-created EP is not ready before the consumer
    /// names its PZ (its DTO EVDs may stay NULL).
    fn readiness(&self) -> Readiness {
        let w = lock(&self.inner.wiring);
        Readiness { has_pz: w.pz_given, has_connect_evd: w.connect_evd.is_some() }
    }

    /// Takes in the completions of the streams without an EVD ([`SilentCq::drain`]); one
    /// that failed ends the connection, as a failed DTO an EVD harvests does.
    #[cold]
    #[inline(never)]
    fn drain_silent(&self, silent: &SilentCq) {
        if silent.drain(&self.inner.completions) {
            EpFailures { ep: Arc::downgrade(&self.inner) }.dto_failed();
        }
    }

    /// The flags a request posted with completion `flags` goes out with: as given, or, on
    /// an endpoint with a silent CQ (drained first), signalled if its completion goes there.
    #[inline(always)]
    fn request_flags(&self, flags: u32) -> u32 {
        match self.inner.silent.get() {
            None => flags,
            Some(silent) => self.drain_silent_for_request(silent, flags),
        }
    }

    #[cold]
    #[inline(never)]
    fn drain_silent_for_request(&self, silent: &SilentCq, flags: u32) -> u32 {
        self.drain_silent(silent);
        if silent.has_requests() { flags & !completion_flags::SUPPRESS } else { flags }
    }

    /// `dat_ep_post_recv`. (The receive's completion flags matter for notification only;
    /// receives always complete with an event, unless the recv EVD is NULL.)
    #[inline]
    pub fn post_recv(&self, local: &[LmrTriplet], cookie: u64, flags: u32) -> DatResult<()> {
        // Every state but DISCONNECTED takes a receive with no effect (the state table's
        // PostRecv row, pinned down by its test): one segment on an endpoint with its own
        // receive queue (and no silent CQ to drain first) goes straight to the QP.
        if let [t] = local
            && flags & completion_flags::UNSIGNALLED == 0
            && self.inner.silent.get().is_none()
            && let Some(ring) = &self.inner.completions.receives
            && self.inner.state_word.load(Ordering::Acquire) != EpState::Disconnected.to_raw()
            && let Ok(len) = u32::try_from(t.segment_length)
            && self.inner.recv_iov_limit.load(Ordering::Relaxed) != 0
        {
            let cookie = receive_cookie(cookie, t.segment_length);
            return self.post_with_cookie(ring, cookie, "dat_ep_post_recv", |qp, wr_id| {
                // SAFETY: as in `sges`: the triplet names memory the consumer registered;
                // the device checks key and bounds and fails the DTO otherwise, touching
                // nothing.
                let sge = [unsafe { Sge::from_raw(t.virtual_address, len, t.lmr_context) }];
                qp.post_recv(&[RecvWr { wr_id, sges: &sge }])
            });
        }
        self.post_recv_general(local, cookie, flags)
    }

    /// [`Ep::post_recv`] in any state, with any number of segments: the state machine's
    /// verdict (a DISCONNECTED endpoint completes the post as flushed), the IOV checks.
    #[inline(never)]
    fn post_recv_general(&self, local: &[LmrTriplet], cookie: u64, flags: u32) -> DatResult<()> {
        if flags & completion_flags::UNSIGNALLED != 0
            && self.attr().recv_completion_flags & completion_flags::UNSIGNALLED == 0
        {
            // The man page: UNSIGNALLED "is only valid if the Endpoint Recv Completion Flags
            // DAT_COMPLETION_UNSIGNALLED_FLAG. Otherwise, DAT_INVALID_PARAMETER is returned."
            return Err(DatError::invalid_parameter(5).with_detail(
                "dat_ep_post_recv: DAT_COMPLETION_UNSIGNALLED_FLAG on an endpoint whose \
                 recv_completion_flags lack it; set it in the endpoint's attributes \
                 (dat_ep_create or dat_ep_modify) or post with DAT_COMPLETION_DEFAULT_FLAG",
            ));
        }
        if let Some(silent) = self.inner.silent.get() {
            self.drain_silent(silent);
        }
        let Some(ring) = &self.inner.completions.receives else {
            return Err(transition(self.current(), Trigger::PostRecvOnSrqEndpoint)
                .err()
                .unwrap_or_else(|| DatError::invalid_state(subtype::NO_SUBTYPE))
                .with_detail(
                    "dat_ep_post_recv on an endpoint created with an SRQ: post to the SRQ",
                ));
        };
        // The IOV first: a post the endpoint could never take is refused in every state,
        // not completed as flushed on a DISCONNECTED one.
        let mut buf: SgeBuf = [const { MaybeUninit::uninit() }; MAX_IOV];
        let max_iov = self.inner.recv_iov_limit.load(Ordering::Relaxed);
        let sges = sges(local, max_iov, "dat_ep_post_recv", &mut buf)?;
        let step = transition(self.current(), Trigger::PostRecv)?;
        if step.effects.flush_this_post {
            let length = total_length(local);
            return self.flushed(self.recv_evd(), cookie, length, dtos::RECEIVE);
        }
        let length = total_length(local);
        self.post_with_cookie(
            ring,
            receive_cookie(cookie, length),
            "dat_ep_post_recv",
            |qp, wr_id| qp.post_recv(&[RecvWr { wr_id, sges }]),
        )
    }

    /// The most segments a SEND (or an atomic) may have here: `max_request_iov`.
    pub fn request_iov_limit(&self) -> usize {
        (self.inner.request_iov_limit.load(Ordering::Relaxed) as usize).min(MAX_IOV)
    }

    /// The most local segments an RDMA READ may have here: `max_rdma_read_iov`.
    pub fn rdma_read_iov_limit(&self) -> usize {
        (self.inner.rdma_read_iov_limit.load(Ordering::Relaxed) as usize).min(MAX_IOV)
    }

    /// The most local segments an RDMA WRITE (with immediate data too) may have here:
    /// `max_rdma_write_iov`.
    pub fn rdma_write_iov_limit(&self) -> usize {
        (self.inner.rdma_write_iov_limit.load(Ordering::Relaxed) as usize).min(MAX_IOV)
    }

    /// The limit `op`'s local segments are held to (a constant choice where the post is
    /// inlined with its operation).
    #[inline(always)]
    fn iov_limit(&self, op: &SendOp) -> &AtomicU32 {
        match op {
            SendOp::RdmaRead(_) => &self.inner.rdma_read_iov_limit,
            SendOp::RdmaWrite(_) | SendOp::RdmaWriteImm(..) => &self.inner.rdma_write_iov_limit,
            _ => &self.inner.request_iov_limit,
        }
    }

    /// The most segments a receive may have here.
    pub fn recv_iov_limit(&self) -> usize {
        (self.inner.recv_iov_limit.load(Ordering::Relaxed) as usize).min(MAX_IOV)
    }

    /// `dat_ep_post_send`.
    #[inline]
    pub fn post_send(&self, local: &[LmrTriplet], cookie: u64, flags: u32) -> DatResult<()> {
        self.post_request(
            Trigger::PostSend,
            SendOp::Send,
            dtos::SEND,
            local,
            cookie,
            flags,
            "dat_ep_post_send",
        )
    }

    /// `dat_ep_post_rdma_write` to `remote`.
    pub fn post_rdma_write(
        &self,
        local: &[LmrTriplet],
        cookie: u64,
        remote: &RmrTriplet,
        flags: u32,
    ) -> DatResult<()> {
        let r = Remote { addr: remote.virtual_address, rkey: remote.rmr_context };
        self.post_request(
            Trigger::PostRdmaWrite,
            SendOp::RdmaWrite(r),
            dtos::RDMA_WRITE,
            local,
            cookie,
            flags,
            "dat_ep_post_rdma_write",
        )
    }

    /// `dat_ep_post_rdma_read` from `remote`.
    pub fn post_rdma_read(
        &self,
        local: &[LmrTriplet],
        cookie: u64,
        remote: &RmrTriplet,
        flags: u32,
    ) -> DatResult<()> {
        let r = Remote { addr: remote.virtual_address, rkey: remote.rmr_context };
        self.post_request(
            Trigger::PostRdmaRead,
            SendOp::RdmaRead(r),
            dtos::RDMA_READ,
            local,
            cookie,
            flags,
            "dat_ep_post_rdma_read",
        )
    }

    /// The IB extension `dat_ib_post_rdma_write_immed`.
    pub fn post_rdma_write_immed(
        &self,
        local: &[LmrTriplet],
        cookie: u64,
        remote: &RmrTriplet,
        immediate: u32,
        flags: u32,
    ) -> DatResult<()> {
        let r = Remote { addr: remote.virtual_address, rkey: remote.rmr_context };
        self.post_request(
            Trigger::PostRdmaWrite,
            SendOp::RdmaWriteImm(r, immediate),
            dtos::IB_RDMA_WRITE_IMMED,
            local,
            cookie,
            flags,
            "dat_ib_post_rdma_write_immed",
        )
    }

    /// The IB extension `dat_ib_post_cmp_and_swap`: the old 8 bytes at `remote` land in
    /// `local` (one 8-byte segment); `swap` is stored there if they equal `compare`.
    pub fn post_cmp_and_swap(
        &self,
        compare: u64,
        swap: u64,
        local: &LmrTriplet,
        cookie: u64,
        remote: &RmrTriplet,
        flags: u32,
    ) -> DatResult<()> {
        let r = Remote { addr: remote.virtual_address, rkey: remote.rmr_context };
        let op = SendOp::CompareSwap { remote: r, compare, swap };
        self.post_request(
            Trigger::PostRdmaWrite,
            op,
            dtos::IB_CMP_SWAP,
            std::slice::from_ref(local),
            cookie,
            flags,
            "dat_ib_post_cmp_and_swap",
        )
    }

    /// The IB extension `dat_ib_post_fetch_and_add`: the old 8 bytes at `remote` land in
    /// `local`; `add` is added there.
    pub fn post_fetch_and_add(
        &self,
        add: u64,
        local: &LmrTriplet,
        cookie: u64,
        remote: &RmrTriplet,
        flags: u32,
    ) -> DatResult<()> {
        let r = Remote { addr: remote.virtual_address, rkey: remote.rmr_context };
        let op = SendOp::FetchAdd { remote: r, add };
        self.post_request(
            Trigger::PostRdmaWrite,
            op,
            dtos::IB_FETCH_ADD,
            std::slice::from_ref(local),
            cookie,
            flags,
            "dat_ib_post_fetch_and_add",
        )
    }

    /// The request posts. One segment on a CONNECTED endpoint — nearly every post — goes
    /// straight to the QP (inlined into each post call, so the operation is a constant
    /// there); anything else takes [`Ep::post_request_general`].
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn post_request(
        &self,
        trigger: Trigger,
        op: SendOp,
        operation: u32,
        local: &[LmrTriplet],
        cookie: u64,
        flags: u32,
        verb: &'static str,
    ) -> DatResult<()> {
        // CONNECTED allows every post with no effect (a test in ep_state pins that down).
        // An endpoint with a silent CQ drains it first, in the general path.
        if let [t] = local
            && self.inner.silent.get().is_none()
            && self.inner.state_word.load(Ordering::Acquire) == EpState::Connected.to_raw()
            && t.segment_length <= u64::from(Sge::MAX_LEN)
            && let Ok(len) = u32::try_from(t.segment_length)
            && self.iov_limit(&op).load(Ordering::Relaxed) != 0
        {
            let cookie = request_cookie(cookie, t.segment_length, operation, flags);
            let ring = &self.inner.completions.requests;
            return self.post_with_cookie(ring, cookie, verb, |qp, wr_id| {
                // SAFETY: as in `sges`: the triplet names memory the consumer registered;
                // the device checks key and bounds and fails the DTO otherwise, touching
                // nothing.
                let sge = [unsafe { Sge::from_raw(t.virtual_address, len, t.lmr_context) }];
                qp.post_send(&[request_wr(wr_id, op, &sge, flags)])
            });
        }
        self.post_request_general(trigger, op, operation, local, cookie, flags, verb)
    }

    /// [`Ep::post_request`] in any state, with any number of segments: the state machine's
    /// verdict (a DISCONNECTED endpoint completes the post as flushed), the IOV checks.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn post_request_general(
        &self,
        trigger: Trigger,
        op: SendOp,
        operation: u32,
        local: &[LmrTriplet],
        cookie: u64,
        flags: u32,
        verb: &'static str,
    ) -> DatResult<()> {
        let flags = self.request_flags(flags);
        let length = total_length(local);
        // The IOV first, as for receives.
        let mut buf: SgeBuf = [const { MaybeUninit::uninit() }; MAX_IOV];
        let max_iov = self.iov_limit(&op).load(Ordering::Relaxed);
        let sges = sges(local, max_iov, verb, &mut buf)?;
        request_segments_fit(local, verb)?;
        let state = self.current();
        if state != EpState::Connected {
            let step = transition(state, trigger)?;
            if step.effects.flush_this_post {
                return self.flushed(self.request_evd(), cookie, length, operation);
            }
        }
        let cookie = request_cookie(cookie, length, operation, flags);
        self.post_with_cookie(&self.inner.completions.requests, cookie, verb, |qp, wr_id| {
            qp.post_send(&[request_wr(wr_id, op, sges, flags)])
        })
    }

    /// Reserves a cookie slot in `ring` (requests or receives), has `post` post the work
    /// request with that slot as its wr_id, and commits the slot if it was posted.
    #[inline(always)]
    fn post_with_cookie<R>(
        &self,
        ring: &CookieRing,
        cookie: Cookie,
        verb: &'static str,
        post: impl FnOnce(&mut Qp<'static>, u64) -> Result<R, PostError>,
    ) -> DatResult<R> {
        // Under the QP's lock, which serialises the endpoint's posters: the slot reserved is
        // the one this work request is posted with.
        let mut qp = self.inner.qp.lock();
        let wr_id = ring.reserve(cookie)?;
        let posted = post(&mut qp, wr_id).map_err(|e| post_error(verb, e))?;
        ring.commit();
        Ok(posted)
    }

    /// Whether `dat_rmr_bind` may post on this endpoint now (CONNECTED, or DISCONNECTED
    /// where it completes flushed); `DAT_INVALID_STATE` with the state otherwise.
    pub(crate) fn check_rmr_bind_state(&self) -> DatResult<()> {
        transition(self.current(), Trigger::RmrBind).map(drop)
    }

    /// `dat_rmr_bind`'s post ([`crate::rmr`]): binds `mw` to `region` granting `access`,
    /// or unbinds it (`None`), as a request of this endpoint (in order with its other
    /// requests; those after it wait for it). Its completion is an [`Event::RmrBind`] for
    /// `rmr` on the request EVD. Returns the window's new key, or `None` when the endpoint
    /// is DISCONNECTED and the bind completed at once as flushed.
    pub(crate) fn post_rmr_bind(
        &self,
        mw: &ferrodat_driver::Mw,
        region: Option<Sge<'static>>,
        access: Access,
        rmr: ObjectId,
        cookie: u64,
        flags: u32,
    ) -> DatResult<Option<u32>> {
        let flags = self.request_flags(flags);
        let step = transition(self.current(), Trigger::RmrBind)?;
        if step.effects.flush_this_post {
            let status = dto_status::ERR_FLUSHED;
            let ev = Event::RmrBind { rmr, ep: self.inner.id, user_cookie: cookie, status };
            // No request EVD: nobody is told, as of any request's completion.
            let Some(evd) = self.request_evd() else { return Ok(None) };
            evd.post_event(ev).map_err(|_| {
                DatError::new(ferrodat_abi::dat::ret::QUEUE_FULL, subtype::NO_SUBTYPE)
                    .with_detail("the request EVD has no room for the flushed bind's completion")
            })?;
            return Ok(None);
        }
        let suppress = flags & completion_flags::SUPPRESS != 0;
        let bind = Cookie { user_cookie: cookie, length: rmr, operation: dtos::BIND_MW, suppress };
        let mut send_flags = if suppress { SendFlags::NONE } else { SendFlags::SIGNALED };
        if flags & completion_flags::BARRIER_FENCE != 0 {
            send_flags = send_flags | SendFlags::FENCE;
        }
        let ring = &self.inner.completions.requests;
        self.post_with_cookie(ring, bind, "dat_rmr_bind", |qp, wr_id| {
            qp.bind_mw(mw, wr_id, region, access, send_flags)
        })
        .map(Some)
    }

    /// A post on a DISCONNECTED endpoint succeeds and completes at once as flushed, on
    /// `evd` (None: the stream's EVD is NULL, and nobody is told).
    fn flushed(&self, evd: Option<Evd>, cookie: u64, length: u64, operation: u32) -> DatResult<()> {
        let Some(evd) = evd else { return Ok(()) };
        // An IB extension operation flushed here is reported as one flushed through the
        // CQ is (a DAT_IB_DTO_EVENT, which extension consumers such as dtestx dispatch on).
        let (operation, ib_extension) = crate::dto::request_kind(operation);
        let completion = DtoCompletion {
            user_cookie: cookie,
            status: dto_status::ERR_FLUSHED,
            transfered_length: length,
            operation,
            ib_extension,
        };
        evd.post_event(Event::Dto { ep: self.inner.id, completion }).map_err(|_| {
            DatError::new(ferrodat_abi::dat::ret::QUEUE_FULL, subtype::NO_SUBTYPE)
                .with_detail("the EVD has no room for the flushed completion of this post")
        })
    }

    fn current(&self) -> EpState {
        EpState::from_raw(self.inner.state_word.load(Ordering::Acquire))
            .unwrap_or(EpState::Disconnected)
    }

    /// Applies `trigger` under the state lock and carries out its effects on the QP;
    /// returns them (the caller sends the CM message and reports the connection event,
    /// after the lock is released).
    fn step(&self, trigger: Trigger) -> DatResult<crate::ep_state::Effects> {
        let mut state = lock(&self.inner.state);
        let step = transition(*state, trigger)?;
        *state = step.next;
        self.inner.state_word.store(step.next.to_raw(), Ordering::Release);
        let e = step.effects;
        if e.flush != Flush::Nothing {
            // The QP in ERR: the device flushes every outstanding work request; the flushed
            // completions reach the EVDs like any other.
            let _ = self.inner.qp.lock().to_error();
        }
        if e.recycle_qp {
            // Back to a fresh QP: RESET (the driver forgets its queues and the CQs skip the
            // old completions), then the cookie windows start over.
            let _ = self.inner.qp.lock().reset();
            // The CQs drop the old incarnation's completions now, before the QP can make
            // new ones with the same user index. (This waits for a waiter sleeping on the
            // EVDs: reset the EP from the thread that waits on them, as dapltest does.)
            let (request_evd, recv_evd) = {
                let w = lock(&self.inner.wiring);
                (w.request_evd.clone(), w.recv_evd.clone())
            };
            for evd in [request_evd, recv_evd].iter().flatten() {
                let _ = evd.with_cq(|s| s.sync_attachments());
            }
            if let Some(silent) = self.inner.silent.get() {
                silent.forget_reset_qps();
            }
            self.inner.completions.requests.reset();
            if let Some(r) = &self.inner.completions.receives {
                r.reset();
            }
            *lock(&self.inner.local) = None;
        }
        drop(state);
        if e.flush != Flush::Nothing && self.inner.srq.is_some() {
            // An SRQ endpoint's QP in ERR takes no more of the SRQ's receives: the device
            // says so with IB's "last WQE reached", which DAT providers report as
            // DAT_ASYNC_ERROR_EP_BROKEN for the EP. Consumers wait for it before they
            // free the EP or repost its receives elsewhere (dtestsrq does, after each
            // DISCONNECTED).
            self.inner
                .ia
                .report_async(ferrodat_abi::dat::event::ASYNC_ERROR_EP_BROKEN, self.inner.id);
        }
        Ok(e)
    }

    /// A CM event's step: a disconnect the state machine asks for is abrupt.
    fn step_from_cm(&self, trigger: Trigger) -> DatResult<Option<u32>> {
        let e = self.step(trigger)?;
        if e.send == Some(crate::ep_state::CmMessage::Disconnect)
            && let Some(conn) = lock(&self.inner.conn).take()
        {
            let _ = conn.disconnect(false);
        }
        Ok(e.connection_event)
    }

    fn report(&self, number: Option<u32>, private_data: Vec<u8>) {
        if let (Some(number), Some(evd)) = (number, self.connect_evd()) {
            let ev = Event::Connection { number, ep: self.inner.id, private_data };
            self.inner.ia.post_or_report(&evd, ev);
        }
    }

    /// `dat_ep_connect` to `remote`:`conn_qual` with `private_data`; the outcome arrives
    /// as a connection event (ESTABLISHED, PEER_REJECTED, ...).
    pub fn connect(
        &self,
        remote: IpAddr,
        conn_qual: u16,
        timeout: Option<Duration>,
        private_data: &[u8],
    ) -> DatResult<()> {
        self.connect_with("dat_ep_connect", remote, conn_qual, timeout, private_data, 5)
    }

    /// [`Ep::connect`]; `private_data_arg` is the private data size's argument number
    /// (`dat_ep_connect` and `dat_ep_dup_connect` differ). Arguments are checked before the
    /// endpoint changes state: a refused call leaves it, and its receives, as they were.
    fn connect_with(
        &self,
        verb: &str,
        remote: IpAddr,
        conn_qual: u16,
        timeout: Option<Duration>,
        private_data: &[u8],
        private_data_arg: u32,
    ) -> DatResult<()> {
        check_private_data(verb, private_data, private_data_arg)?;
        if conn_qual == 0 {
            return Err(DatError::invalid_parameter(3).with_detail(format!(
                "{verb}: conn_qual 0 names no listener; pass the PSP's conn_qual"
            )));
        }
        let cm = self.inner.ia.cm()?;
        let local = self.advertised(&self.inner.qp.lock())?;
        self.step(Trigger::Connect(self.readiness()))?;
        *lock(&self.inner.local) = Some(local);
        *lock(&self.inner.remote) = Some(std::net::SocketAddr::new(remote, conn_qual));
        self.inner.active.store(true, Ordering::Release);
        let sink = self.next_attempt();
        match cm.connect(remote, conn_qual, &local, private_data, timeout, sink) {
            Ok(conn) => {
                *lock(&self.inner.conn) = Some(conn);
                Ok(())
            }
            Err(e) => {
                // Nothing was sent: the endpoint goes back as it was (receives kept).
                let _ = self.step(Trigger::ConnectNotStarted);
                *lock(&self.inner.local) = None;
                *lock(&self.inner.remote) = None;
                Err(connect_error(verb, e))
            }
        }
    }

    /// The sink of a new connection attempt, which from now on is the only one whose
    /// events reach this endpoint.
    fn next_attempt(&self) -> cm::Sink {
        let attempt = self.inner.attempt.fetch_add(1, Ordering::AcqRel) + 1;
        Arc::new(EpEvents { ep: Arc::downgrade(&self.inner), attempt })
    }

    /// What this endpoint advertises for `qp` in a connection exchange: as OFA dapl does,
    /// its `max_rdma_read_out` as the initiator depth and its `max_rdma_read_in` as the
    /// responder resources, on both sides of the connection.
    fn advertised(&self, qp: &Qp<'static>) -> DatResult<cm::wire::ConnInfo> {
        let (out, inn) = {
            let a = lock(&self.inner.attr);
            (a.max_rdma_read_out.min(255) as u8, a.max_rdma_read_in.min(255) as u8)
        };
        cm::local_conn_info(self.inner.ia.context(), qp, out, inn).map_err(internal)
    }

    /// `dat_ep_dup_connect`: connects to the same peer and connection qualifier as
    /// `other`, which must be connected (or connecting) already.
    pub fn dup_connect(
        &self,
        other: &Ep,
        timeout: Option<Duration>,
        private_data: &[u8],
    ) -> DatResult<()> {
        // OFA's rule: the endpoint to copy is connected now (a reset one keeps its last
        // peer's address, which must not be dialled again).
        let state = other.state();
        if state != EpState::Connected {
            return Err(DatError::invalid_state(state.subtype()).with_detail(format!(
                "dat_ep_dup_connect: the endpoint to copy is {state}, not CONNECTED"
            )));
        }
        // Its remote address names the peer's listener only if it connected actively; an
        // accepted endpoint's names the requester's own TCP port.
        let remote = other.remote_address().filter(|_| other.inner.active.load(Ordering::Acquire));
        let Some(remote) = remote else {
            return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_EP).with_detail(
                "dat_ep_dup_connect: the endpoint to copy was connected by dat_cr_accept, so \
                 the peer's connection qualifier is not known; copy an endpoint that connected \
                 with dat_ep_connect",
            ));
        };
        let (ip, port) = (remote.ip(), remote.port());
        self.connect_with("dat_ep_dup_connect", ip, port, timeout, private_data, 4)
    }

    /// `dat_ep_disconnect`. Abrupt: flushed at once, DISCONNECTED reported. Graceful:
    /// DISCONNECT_PENDING (new requests refused) until the peer answers the disconnect,
    /// then DISCONNECTED.
    pub fn disconnect(&self, mode: DisconnectMode) -> DatResult<()> {
        let graceful = mode == DisconnectMode::Graceful;
        let e = self.step(Trigger::Disconnect(mode))?;
        let pending = e.refuse_new_requests && e.connection_event.is_none();
        if e.send.is_some() || pending {
            let conn = lock(&self.inner.conn);
            if let Some(c) = conn.as_ref() {
                let _ = c.disconnect(graceful && pending);
            }
        }
        self.report(e.connection_event, Vec::new());
        self.release_early();
        Ok(())
    }

    /// After the outcome of a passive connection was reported: receives parked before it
    /// follow it.
    fn release_early(&self) {
        if self.inner.completions.early.release()
            && let Some(evd) = self.recv_evd()
        {
            evd.release_early(self.inner.completions.clone());
        }
    }

    /// `dat_ep_reset`: a DISCONNECTED endpoint back to UNCONNECTED with a fresh QP
    /// (undequeued completions of the old connection may be lost, as DAT allows).
    pub fn reset(&self) -> DatResult<()> {
        self.step(Trigger::Reset)?;
        lock(&self.inner.conn).take();
        Ok(())
    }

    /// `dat_ep_free`: ends any connection; the QP goes when the last handle does.
    pub fn free(self) -> DatResult<()> {
        let e = self.step(Trigger::Free)?;
        self.inner.freed.store(true, Ordering::Release);
        if e.send.is_some()
            && let Some(conn) = lock(&self.inner.conn).take()
        {
            let _ = conn.disconnect(false);
        }
        // A connection aborted by the free ends with DISCONNECTED on the connection EVD,
        // as an abrupt disconnect's does: teardown code may count one per endpoint.
        self.report(e.connection_event, Vec::new());
        Ok(())
    }

    /// An RSP reserves the endpoint (`dat_rsp_create`) or lets it go (`dat_rsp_free`), or
    /// a request arrived on that RSP.
    pub(crate) fn rsp_step(&self, trigger: Trigger) -> DatResult<()> {
        self.step(trigger).map(drop)
    }

    /// A reference that does not keep the endpoint (its QP, PZ and EVDs) alive: for an
    /// RSP, which must not hold an endpoint the consumer freed after its request.
    pub(crate) fn downgrade(&self) -> WeakEp {
        WeakEp(Arc::downgrade(&self.inner))
    }

    /// The IA it was created on.
    pub(crate) fn ia(&self) -> &Ia {
        &self.inner.ia
    }

    /// Passive side: accept `request` on this EP with `private_data` (`dat_cr_accept`);
    /// `reserved`: the EP came with the request (an RSP's), accepted with a NULL EP.
    pub(crate) fn accept(
        &self,
        request: &mut cm::ConnRequest,
        private_data: &[u8],
        reserved: bool,
    ) -> DatResult<()> {
        let accepted = self.accept_inner(request, private_data, reserved);
        if accepted.is_err() {
            // No connection came of it: receives flow as before.
            self.release_early();
        }
        accepted
    }

    fn accept_inner(
        &self,
        request: &mut cm::ConnRequest,
        private_data: &[u8],
        reserved: bool,
    ) -> DatResult<()> {
        let trigger = if reserved {
            Trigger::CrAcceptNullEndpoint(self.readiness())
        } else {
            Trigger::CrAcceptNamingEndpoint(self.readiness())
        };
        // Refused before the QP is touched: an EP in the wrong state (or not ready), or
        // bad private data, keeps its QP and state as they were.
        check_private_data("dat_cr_accept", private_data, 3)?;
        transition(self.current(), trigger)?;
        let local = {
            let mut qp = self.inner.qp.lock();
            let local = self.advertised(&qp)?;
            // From RTR on the QP can receive, but the consumer learns of the connection only
            // with ESTABLISHED: receives that complete before it wait on the endpoint.
            self.inner.completions.early.close();
            cm::connect_qp(&mut qp, &local, request.peer(), Access::ALL).map_err(internal)?;
            local
        };
        self.step(trigger)?;
        *lock(&self.inner.local) = Some(local);
        *lock(&self.inner.remote) = Some(request.remote());
        self.inner.active.store(false, Ordering::Release);
        let sink = self.next_attempt();
        let conn = request.accept(&local, private_data, sink).map_err(|e| {
            DatError::invalid_parameter(3).with_detail(format!("dat_cr_accept: {e}"))
        })?;
        *lock(&self.inner.conn) = Some(conn);
        Ok(())
    }
}

/// Private data within `max_private_data_size` ([`cm::MAX_PRIVATE_DATA`]); its size is
/// argument `arg` of `verb`.
fn check_private_data(verb: &str, private_data: &[u8], arg: u32) -> DatResult<()> {
    if private_data.len() > cm::MAX_PRIVATE_DATA {
        return Err(DatError::invalid_parameter(arg).with_detail(format!(
            "{verb}: {} bytes of private data; max_private_data_size is {}",
            private_data.len(),
            cm::MAX_PRIVATE_DATA
        )));
    }
    Ok(())
}

impl Drop for EpInner {
    fn drop(&mut self) {
        // The QP's completions stop being this EP's (a later QP may get the same number).
        let qpn = self.qp.lock().qpn();
        let w = lock(&self.wiring);
        for evd in [&w.request_evd, &w.recv_evd].into_iter().flatten() {
            let _ = evd.with_cq(|s| s.detach(qpn));
        }
        if let Some(conn) = lock(&self.conn).take() {
            let _ = conn.disconnect(false);
        }
    }
}

/// Who creates an EP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// `dat_ep_create`: UNCONNECTED, on the consumer's PZ and EVDs.
    Consumer,
    /// The provider, for a request on a PSP with `DAT_PSP_PROVIDER_FLAG`:
    /// TENTATIVE_CONNECTION_PENDING, on placeholders.
    Provider,
}

impl Origin {
    fn initial_state(self) -> EpState {
        match self {
            Origin::Consumer => EpState::AFTER_EP_CREATE,
            Origin::Provider => EpState::AFTER_PROVIDER_CREATE,
        }
    }
}

/// The DAT error for a connect the CM could not start.
fn connect_error(verb: &str, e: cm::CmError) -> DatError {
    match e {
        cm::CmError::Io { ref err, .. }
            if matches!(err.raw_os_error(), Some(libc::EADDRNOTAVAIL | libc::EADDRINUSE)) =>
        {
            DatError::new(ferrodat_abi::dat::ret::INVALID_ADDRESS, subtype::NO_SUBTYPE).with_detail(
                format!("{verb}: {e}; check that the IA's address is configured on this host"),
            )
        }
        cm::CmError::Io { .. } => DatError::insufficient_resources(subtype::RESOURCE_MEMORY)
            .with_detail(format!(
                "{verb}: {e} (out of file descriptors or ports? see ulimit -n); the endpoint \
                 is UNCONNECTED as before the call"
            )),
        cm::CmError::Closed => DatError::internal_error()
            .with_detail(format!("{verb}: {e}; the IA's connection manager has stopped")),
        other => DatError::invalid_parameter(2).with_detail(format!("{verb}: {other}")),
    }
}

/// How an endpoint with `attr` feeds its receive EVD: with SOLICITED_WAIT in its
/// `recv_completion_flags`, its receives wake a waiter only when solicited or failed.
fn receive_stream(attr: &EpAttr) -> Stream {
    Stream::Receives { solicited_wait: solicited_wait(attr) }
}

/// How an endpoint with `attr` feeds its request EVD: with UNSIGNALLED in its
/// `request_completion_flags`, waits on that EVD take threshold 1 only.
fn request_stream(attr: &EpAttr) -> Stream {
    Stream::Requests { unsignalled: unsignalled(attr) }
}

/// Whether `attr` has UNSIGNALLED in its `request_completion_flags`.
fn unsignalled(attr: &EpAttr) -> bool {
    attr.request_completion_flags & completion_flags::UNSIGNALLED != 0
}

/// Whether `attr` has SOLICITED_WAIT in its `recv_completion_flags`.
fn solicited_wait(attr: &EpAttr) -> bool {
    attr.recv_completion_flags & completion_flags::SOLICITED_WAIT != 0
}

/// Where an endpoint's two DTO streams complete: their EVDs' CQs, or for a NULL EVD
/// (`None`) the endpoint's silent CQ.
struct Sides<'a> {
    recv: Option<&'a Evd>,
    request: Option<&'a Evd>,
    silent: Option<&'a SilentCq>,
}

/// The DAT error for an SRQ endpoint without a recv EVD.
fn no_srq_receives_without_evd(verb: &str) -> DatError {
    DatError::new(ferrodat_abi::dat::ret::MODEL_NOT_SUPPORTED, subtype::NO_SUBTYPE).with_detail(
        format!(
            "{verb}: an SRQ endpoint with a NULL recv EVD: its receives are taken from the SRQ \
             as messages arrive and only their completions show it, which ferrodat does not \
             let go unread; give the endpoint a recv EVD"
        ),
    )
}

/// Runs `f` on the CQ a stream completes into: `evd`'s, or the silent CQ's if None.
fn with_stream_cq<R>(
    evd: Option<&Evd>,
    silent: Option<&SilentCq>,
    f: impl FnOnce(&ferrodat_driver::Cq) -> R,
) -> DatResult<R> {
    match (evd, silent) {
        (Some(evd), _) => evd.with_cq(|s| f(s.cq())),
        (None, Some(silent)) => Ok(f(&silent.cq())),
        (None, None) => Err(DatError::internal_error()
            .with_detail("a DTO stream without an EVD and without the endpoint's silent CQ")),
    }
}

/// A QP in `pz` whose completions go where `sides` says.
fn build_qp(
    pz: &Pz,
    sides: &Sides<'_>,
    srq: Option<&Srq>,
    caps: QpCaps,
    verb: &str,
) -> DatResult<Qp<'static>> {
    let make_qp = |send_cq: &ferrodat_driver::Cq, recv_cq: &ferrodat_driver::Cq| {
        Qp::new(
            pz.pd(),
            &QpInit { srq: srq.map(Srq::driver), ..QpInit::new(send_cq, recv_cq, caps) },
        )
    };
    // One CQ may take both streams (one EVD, or the silent CQ): lock it once.
    let one_cq = match (sides.request, sides.recv) {
        (Some(a), Some(b)) => a.same(b),
        (None, None) => true,
        _ => false,
    };
    if one_cq {
        with_stream_cq(sides.request, sides.silent, |cq| make_qp(cq, cq))?
    } else {
        with_stream_cq(sides.request, sides.silent, |req| {
            with_stream_cq(sides.recv, sides.silent, |recv| make_qp(req, recv))
        })??
    }
    .map_err(|e| {
        DatError::insufficient_resources(subtype::RESOURCE_TEP).with_detail(format!("{verb}: {e}"))
    })
}

/// An endpoint held weakly ([`Ep::downgrade`]).
#[derive(Clone, Debug)]
pub(crate) struct WeakEp(Weak<EpInner>);

impl WeakEp {
    /// The endpoint, unless the consumer freed it (whoever still holds it for a moment).
    pub(crate) fn upgrade(&self) -> Option<Ep> {
        self.0
            .upgrade()
            .filter(|inner| !inner.freed.load(Ordering::Acquire))
            .map(|inner| Ep { inner })
    }
}

/// An EP's failed DTOs.
#[derive(Debug)]
struct EpFailures {
    ep: Weak<EpInner>,
}

impl DtoFailures for EpFailures {
    /// A failed DTO ends the connection: BROKEN here, an abrupt disconnect to the peer
    /// (a stale call, e.g. on an endpoint already disconnected, changes nothing).
    fn dto_failed(&self) {
        let Some(inner) = self.ep.upgrade() else { return };
        let ep = Ep { inner };
        if let Ok(number) = ep.step_from_cm(Trigger::TransportError) {
            ep.report(number, Vec::new());
        }
    }

    /// A DTO of an endpoint with a stream without an EVD was flushed: that stream's
    /// completions are taken in, in case one of them failed and put the QP in ERR.
    fn flushed(&self) {
        let Some(inner) = self.ep.upgrade() else { return };
        if let Some(silent) = inner.silent.get() {
            Ep { inner: inner.clone() }.drain_silent(silent);
        }
    }
}

impl crate::ia::DeviceErrorTarget for EpInner {
    /// The device put the QP in ERR (a peer's bad rkey, an invalid request): the
    /// connection ends as on a failed DTO. An SRQ endpoint's teardown reports EP_BROKEN
    /// itself.
    fn device_error(self: Arc<Self>, _number: u32) -> bool {
        let has_srq = self.srq.is_some();
        let ep = Ep { inner: self };
        if let Ok(number) = ep.step_from_cm(Trigger::TransportError) {
            ep.report(number, Vec::new());
        }
        !has_srq
    }
}

/// The connection-manager events of one connection attempt of an EP.
#[derive(Debug)]
struct EpEvents {
    ep: Weak<EpInner>,
    /// The attempt (`EpInner::attempt`) this connection is.
    attempt: u64,
}

impl CmEvents for EpEvents {
    fn event(&self, ev: CmEvent) {
        let Some(inner) = self.ep.upgrade() else { return };
        if inner.attempt.load(Ordering::Acquire) != self.attempt {
            return; // a connection the endpoint has since left behind
        }
        let ep = Ep { inner };
        let (trigger, pdata) = match ev {
            CmEvent::Established { peer, private_data, .. } => {
                let local = *lock(&ep.inner.local);
                let active = ep.current() == EpState::ActiveConnectionPending;
                if active && let Some(local) = local {
                    let mut qp = ep.inner.qp.lock();
                    if cm::connect_qp(&mut qp, &local, &peer, Access::ALL).is_err() {
                        drop(qp);
                        // The peer gets a REJ instead of the RTU; the consumer BROKEN.
                        if let Some(c) = lock(&ep.inner.conn).take() {
                            let _ = c.refuse_reply();
                        }
                        if let Ok(number) = ep.step_from_cm(Trigger::LocalSetupFailed) {
                            ep.report(number, Vec::new());
                        }
                        return;
                    }
                }
                let trigger =
                    if active { Trigger::PeerAccepted } else { Trigger::ReadyToUseReceived };
                (trigger, if active { private_data } else { Vec::new() })
            }
            CmEvent::PeerRejected { private_data, .. } => (Trigger::PeerRejected, private_data),
            // Nothing listening: reported as a peer reject, which consumers such as dapltest
            // retry (the listener may not be up yet).
            CmEvent::NonPeerRejected { reason: NonPeerReason::NoListener, .. } => {
                (Trigger::PeerRejected, Vec::new())
            }
            CmEvent::NonPeerRejected { .. } => (Trigger::NonPeerRejected, Vec::new()),
            CmEvent::Unreachable { .. } => (Trigger::Unreachable, Vec::new()),
            CmEvent::TimedOut { .. } => (Trigger::TimedOut, Vec::new()),
            CmEvent::AcceptCompletionError { .. } => (Trigger::AcceptFailed, Vec::new()),
            CmEvent::Disconnected {
                reason: DisconnectReason::LocalGraceful | DisconnectReason::LocalGracefulUnanswered,
                ..
            } => (Trigger::GracefulDisconnectDone, Vec::new()),
            CmEvent::Disconnected { .. } => (Trigger::PeerDisconnected, Vec::new()),
            CmEvent::Broken { .. } => (Trigger::TransportError, Vec::new()),
            CmEvent::ConnRequest(_) => return,
        };
        // A stale event (the EP moved on) is dropped, as the state machine says.
        if let Ok(number) = ep.step_from_cm(trigger) {
            ep.report(number, pdata);
            ep.release_early();
        }
    }
}

/// The bytes of an IOV, for the cookie. Wrapping: the segments are checked after (`sges`),
/// and a caller's absurd lengths must not panic a debug build here.
#[inline(always)]
fn total_length(local: &[LmrTriplet]) -> u64 {
    local.iter().fold(0u64, |sum, t| sum.wrapping_add(t.segment_length))
}

/// The cookie of a receive of `length` bytes (receives always complete with an event).
#[inline(always)]
fn receive_cookie(user_cookie: u64, length: u64) -> Cookie {
    Cookie { user_cookie, length, operation: dtos::RECEIVE, suppress: false }
}

/// The cookie of a request of `length` bytes posted with DAT completion `flags`.
#[inline(always)]
fn request_cookie(user_cookie: u64, length: u64, operation: u32, flags: u32) -> Cookie {
    let suppress = flags & completion_flags::SUPPRESS != 0;
    Cookie { user_cookie, length, operation, suppress }
}

/// The work request of a DAT request posted with completion `flags`: signalled unless
/// suppressed, solicited for SOLICITED_WAIT, fenced for BARRIER_FENCE.
#[inline(always)]
fn request_wr<'s>(
    wr_id: u64,
    op: SendOp,
    sges: &'s [Sge<'static>],
    flags: u32,
) -> SendWr<'static, 's> {
    let suppress = flags & completion_flags::SUPPRESS != 0;
    let mut send_flags = if suppress { SendFlags::NONE } else { SendFlags::SIGNALED };
    if flags & completion_flags::SOLICITED_WAIT != 0 {
        send_flags = send_flags | SendFlags::SOLICITED;
    }
    if flags & completion_flags::BARRIER_FENCE != 0 {
        send_flags = send_flags | SendFlags::FENCE;
    }
    SendWr::new(wr_id, op, Payload::Sges(sges)).flags(send_flags)
}

/// The most segments one DTO's IOV may have here (above every device's max_sge we drive,
/// 30 for mlx5): SGE lists live on the stack, so a post allocates nothing.
const MAX_IOV: usize = 32;

/// Room for a DTO's scatter/gather list on the caller's stack (left uninitialised: only
/// the entries [`sges`] writes are read).
type SgeBuf = [MaybeUninit<Sge<'static>>; MAX_IOV];

/// DAT_LENGTH_ERROR for a request segment longer than the driver's [`Sge::MAX_LEN`]
/// (2 GiB - 1): mlx5 would take its byte count for an inline segment's (of the low 31 bits'
/// length, so 2 GiB became an empty message that completed successfully). None could be
/// sent anyway: a message is at most `max_message_size` (1 GiB).
fn request_segments_fit(local: &[LmrTriplet], verb: &str) -> DatResult<()> {
    match local.iter().position(|t| t.segment_length > u64::from(Sge::MAX_LEN)) {
        None => Ok(()),
        Some(i) => Err(DatError::new(ferrodat_abi::dat::ret::LENGTH_ERROR, subtype::NO_SUBTYPE)
            .with_detail(format!(
                "{verb}: segment {i} is {} bytes; a request's segments are under 2 GiB each \
                 (a message is at most max_message_size)",
                local[i].segment_length
            ))),
    }
}

/// Driver SGEs for DAT LMR triplets, written into `buf`.
fn sges<'b>(
    local: &[LmrTriplet],
    max: u32,
    verb: &str,
    buf: &'b mut SgeBuf,
) -> DatResult<&'b [Sge<'static>]> {
    if local.len() > (max as usize).min(MAX_IOV) {
        return Err(DatError::invalid_parameter(2).with_detail(format!(
            "{verb}: {} segments, the endpoint takes at most {max}",
            local.len()
        )));
    }
    for (slot, t) in buf.iter_mut().zip(local) {
        let len = u32::try_from(t.segment_length).map_err(|_| {
            DatError::new(ferrodat_abi::dat::ret::LENGTH_ERROR, subtype::NO_SUBTYPE)
                .with_detail(format!("{verb}: a segment of {} bytes", t.segment_length))
        })?;
        // SAFETY: the triplet names memory the consumer registered (lmr_context); the
        // device checks the key and bounds and fails the DTO with a protection error
        // otherwise, touching nothing (DAT's contract for IOVs).
        slot.write(unsafe { Sge::from_raw(t.virtual_address, len, t.lmr_context) });
    }
    // SAFETY: the loop above initialised the first `local.len()` entries.
    Ok(unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<Sge<'static>>(), local.len()) })
}

#[cold]
#[inline(never)]
fn post_error(verb: &str, e: PostError) -> DatError {
    let d = match e.reason {
        PostErrorReason::QueueFull { .. } | PostErrorReason::NoSendQueue => {
            DatError::insufficient_resources(subtype::RESOURCE_TEP)
        }
        PostErrorReason::TooManySges { .. } => DatError::invalid_parameter(2),
        _ => DatError::invalid_parameter(2),
    };
    d.with_detail(format!("{verb}: {e}"))
}

fn internal(e: ferrodat_driver::Error) -> DatError {
    DatError::internal_error().with_detail(e.to_string())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::ConnId;
    use crate::ia::IaSpec;
    use ferrodat_abi::dat::{evd_flags, event};

    /// A connect aborted, reset and started again: the CM may still deliver events of the
    /// aborted attempt (a REP or a timeout read before it handled the abort). They must not
    /// act on the new attempt; the new attempt's own events must.
    #[test]
    fn events_of_an_earlier_connection_attempt_are_dropped() {
        ferrodat_softhca::fabric::use_private_fabric("engine-ep-unit");
        let ia = Ia::open("ferro0", &IaSpec::parse("softhca0 1 127.0.0.1").unwrap()).unwrap();
        let pz = Pz::create(&ia).unwrap();
        let evd = Evd::create(&ia, 8, evd_flags::DTO | evd_flags::CONNECTION).unwrap();
        let ep = Ep::create(&pz, &evd, &evd, Some(&evd), None).unwrap();
        ep.step(Trigger::Connect(ep.readiness())).unwrap();
        let (old, new) = (ep.next_attempt(), ep.next_attempt());
        old.event(CmEvent::TimedOut { conn: ConnId(1) });
        assert_eq!(ep.state(), EpState::ActiveConnectionPending, "the old attempt's timeout");
        assert!(evd.dequeue().is_err(), "nothing reported for it");
        new.event(CmEvent::TimedOut { conn: ConnId(2) });
        assert_eq!(ep.state(), EpState::Disconnected);
        match evd.dequeue().unwrap() {
            Event::Connection { number, .. } => {
                assert_eq!(number, event::CONNECTION_EVENT_TIMED_OUT)
            }
            other => panic!("expected TIMED_OUT, got {other:?}"),
        }
    }
}
