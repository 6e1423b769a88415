//! An endpoint's parameters: `dat_ep_query` (every field of `DAT_EP_PARAM`),
//! `dat_ep_modify` (the `DAT_EP_PARAM_MASK` fields it may change, in the states the
//! legal-calls table allows), `dat_ep_get_status`, `dat_ep_recv_query` and
//! `dat_ep_set_watermark`.
//!
//! What `dat_ep_modify` does with what the QP fixed at creation (decisions, after OFA
//! dapl's `dapl_ep_modify.c` and `openib_common/qp.c`):
//!
//! - Queue sizes and IOV limits may change within what CREATE_QP granted (the EP's limits
//!   shrink or grow back); beyond it they are refused with `DAT_INVALID_PARAMETER/ARG3`, as
//!   OFA's verbs path ends (`ibv_modify_qp(IBV_QP_CAP)`: mlx5 cannot resize a QP, EINVAL →
//!   `DAT_INVALID_PARAMETER`). Create the EP with the larger attributes instead.
//! - A new PZ or DTO EVD needs a new QP (its PD and CQs are fixed), which OFA's common layer
//!   allocates and swaps in. Here too — but only while no DTO is posted on the EP, since the
//!   old QP's receives cannot move to the new one: otherwise `DAT_INVALID_STATE` with the
//!   current state as subtype (post the receives after the modify). A DTO EVD may become
//!   NULL (its completions then go to the endpoint's silent CQ, `ep::silent`) or real again
//!   by the same rule; an SRQ endpoint's recv EVD may not be NULL (`DAT_MODEL_NOT_SUPPORTED`).
//! - A NULL PZ is refused (`DAT_INVALID_PARAMETER`): the QP lives in its PZ.
//! - The connection EVD, completion flags, QoS, RDMA READ limits (used when connecting) and
//!   message sizes are plain values.
//! - Read-only fields in the mask (IA, state, communicator, addresses, port qualifiers, SRQ)
//!   give `DAT_INVALID_PARAMETER/ARG2`, as OFA. Bad values give `ARG3` (the parameter struct).
//!
//! `dat_ep_create` and `dat_ep_create_with_srq` check and keep every attribute the same way
//! ([`checked_attr`]), against the IA only (their QP is built from the attributes); a bad
//! value is their attribute argument, `ARG6` and `ARG7`.

use super::{
    Ep, EpAttr, Sides, SilentCq, Wiring, lock, receive_stream, request_stream, solicited_wait,
    unsignalled,
};
use crate::dto::CookieRing;
use crate::ep_state::{EpState, Trigger, transition};
use crate::error::{DatError, DatResult};
use crate::evd::Evd;
use crate::evd::notification::Stream;
use crate::ia::{Ia, IaAttr};
use crate::pz::Pz;
use crate::srq::Srq;
use ferrodat_abi::dat::{
    EpParamMask, completion_flags, ep_field, evd_flags, qos, ret, service_type, subtype,
};
use ferrodat_driver::QpCaps;
use std::net::IpAddr;
use std::sync::atomic::Ordering;

/// `DAT_COMM`: the socket triple of the connection manager's TCP exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpComm {
    /// `AF_INET` or `AF_INET6`, as the IA's address.
    pub domain: i32,
    /// `SOCK_STREAM`.
    pub socket_type: i32,
    /// `IPPROTO_TCP`.
    pub protocol: i32,
}

/// `DAT_EP_PARAM`, as `dat_ep_query` reports it: every field.
#[derive(Clone, Debug)]
pub struct EpParam {
    /// `ia_handle`.
    pub ia: Ia,
    /// `ep_state`.
    pub ep_state: EpState,
    /// `comm`.
    pub comm: EpComm,
    /// `local_ia_address_ptr`: the IA's address.
    pub local_ia_address: IpAddr,
    /// `local_port_qual`: the conn_qual a passive EP was reached on, the TCP port an active
    /// EP connects from; 0 before any connection.
    pub local_port_qual: u64,
    /// `remote_ia_address_ptr`: the peer's address, once connecting or accepting.
    pub remote_ia_address: Option<IpAddr>,
    /// `remote_port_qual`: the conn_qual connected to (active), the requester's port
    /// (passive); 0 before any connection.
    pub remote_port_qual: u64,
    /// `pz_handle`.
    pub pz: Option<Pz>,
    /// `recv_evd_handle`.
    pub recv_evd: Option<Evd>,
    /// `request_evd_handle`.
    pub request_evd: Option<Evd>,
    /// `connect_evd_handle`.
    pub connect_evd: Option<Evd>,
    /// `srq_handle`.
    pub srq: Option<Srq>,
    /// `ep_attr`.
    pub ep_attr: EpAttr,
}

/// The `DAT_EP_PARAM` a consumer passes to `dat_ep_modify`: the fields it may change (the
/// mask says which are read; `None` is `DAT_HANDLE_NULL`).
#[derive(Clone, Debug)]
pub struct EpParamUpdate {
    /// `pz_handle`.
    pub pz: Option<Pz>,
    /// `recv_evd_handle`.
    pub recv_evd: Option<Evd>,
    /// `request_evd_handle`.
    pub request_evd: Option<Evd>,
    /// `connect_evd_handle`.
    pub connect_evd: Option<Evd>,
    /// `ep_attr`.
    pub ep_attr: EpAttr,
}

impl EpParamUpdate {
    /// The EP's current parameters, to change a few fields of.
    pub fn from_current(ep: &Ep) -> EpParamUpdate {
        let w = lock(&ep.inner.wiring).clone();
        EpParamUpdate {
            pz: w.pz_given.then_some(w.pz),
            recv_evd: w.recv_evd,
            request_evd: w.request_evd,
            connect_evd: w.connect_evd,
            ep_attr: ep.attr(),
        }
    }
}

/// `dat_ep_recv_query`'s two counts; `None` is `DAT_VALUE_UNKNOWN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpRecvInfo {
    /// `nbufs_allocated`: receive buffers the endpoint holds whose completion has not been
    /// generated.
    pub nbufs_allocated: Option<u32>,
    /// `bufs_alloc_span`: completions the endpoint can still generate for the messages it
    /// holds buffers for.
    pub bufs_alloc_span: Option<u32>,
}

/// `dat_ep_get_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpStatus {
    /// The state.
    pub state: EpState,
    /// No receive is outstanding (always true for an SRQ endpoint: its receives are the
    /// SRQ's).
    pub recv_idle: bool,
    /// No request (send, RDMA, atomic) is outstanding.
    pub request_idle: bool,
}

/// One size or limit `dat_ep_modify` may set: the requested value, the IA's limit, the
/// QP's (`None`: not fixed by the QP), and where it goes.
struct Limit<'a> {
    name: &'static str,
    bit: EpParamMask,
    value: u32,
    ia_max: u32,
    qp_max: Option<u32>,
    slot: &'a mut u32,
}

/// Mask bits naming fields `dat_ep_modify` cannot change.
const READ_ONLY: EpParamMask = ep_field::IA_HANDLE
    | ep_field::EP_STATE
    | ep_field::COMM
    | ep_field::LOCAL_IA_ADDRESS_PTR
    | ep_field::LOCAL_PORT_QUAL
    | ep_field::REMOTE_IA_ADDRESS_PTR
    | ep_field::REMOTE_PORT_QUAL
    | ep_field::SRQ_HANDLE;

/// Transport- and provider-specific attributes: UNCONNECTED only.
const TRANSPORT_OR_PROVIDER: EpParamMask = ep_field::EP_ATTR_NUM_TRANSPORT_ATTR
    | ep_field::EP_ATTR_TRANSPORT_SPECIFIC_ATTR
    | ep_field::EP_ATTR_NUM_PROVIDER_ATTR
    | ep_field::EP_ATTR_PROVIDER_SPECIFIC_ATTR;

/// EVDs and the other attributes (sizes, QoS, flags, limits).
const ENDPOINT_ATTRIBUTES: EpParamMask = (ep_field::RECV_EVD_HANDLE
    | ep_field::REQUEST_EVD_HANDLE
    | ep_field::CONNECT_EVD_HANDLE
    | ep_field::EP_ATTR_ALL)
    & !TRANSPORT_OR_PROVIDER;

/// The values `recv_completion_flags` may take (the `dat_ep_modify` man page: not SUPPRESS
/// or BARRIER_FENCE, which apply to requests only; IB cannot suppress a receive's
/// completion either).
const RECV_FLAGS: u32 = completion_flags::SOLICITED_WAIT
    | completion_flags::UNSIGNALLED
    | completion_flags::EVD_THRESHOLD;

/// The values `request_completion_flags` may take (the man page: UNSIGNALLED or
/// EVD_THRESHOLD; SOLICITED_WAIT and BARRIER_FENCE are per post, always allowed). SUPPRESS
/// too, though the man page names it only per post: consumers written for OFA dapl, which
/// does not check these flags, pass it here for "unsignalled" (NetPIPE's DAT module does).
const REQUEST_FLAGS: u32 =
    completion_flags::UNSIGNALLED | completion_flags::EVD_THRESHOLD | completion_flags::SUPPRESS;

impl Ep {
    /// `dat_ep_query`: every field of `DAT_EP_PARAM`.
    pub fn query(&self) -> EpParam {
        let ia = self.inner.ia.clone();
        let local_ia_address = ia.attr().address;
        let w = lock(&self.inner.wiring).clone();
        let remote = *lock(&self.inner.remote);
        let local_port_qual =
            lock(&self.inner.conn).as_ref().map_or(0, |c| u64::from(c.local_port()));
        EpParam {
            ep_state: self.state(),
            comm: EpComm {
                domain: if local_ia_address.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 },
                socket_type: libc::SOCK_STREAM,
                protocol: libc::IPPROTO_TCP,
            },
            local_ia_address,
            local_port_qual,
            remote_ia_address: remote.map(|a| a.ip()),
            remote_port_qual: remote.map_or(0, |a| u64::from(a.port())),
            pz: w.pz_given.then_some(w.pz),
            recv_evd: w.recv_evd,
            request_evd: w.request_evd,
            connect_evd: w.connect_evd,
            srq: self.inner.srq.clone(),
            ep_attr: self.attr(),
            ia,
        }
    }

    /// `dat_ep_get_status`: the state and whether DTOs are outstanding each way. The
    /// completions of a stream without an EVD are taken in first (one that failed ends the
    /// connection, which the state then shows).
    pub fn get_status(&self) -> EpStatus {
        if let Some(silent) = self.inner.silent.get() {
            self.drain_silent(silent);
        }
        let c = &self.inner.completions;
        EpStatus {
            state: self.state(),
            recv_idle: c.receives.as_ref().is_none_or(|r| r.outstanding() == 0),
            request_idle: c.requests.outstanding() == 0,
        }
    }

    /// `dat_ep_recv_query`. An endpoint with its own receive queue is given each buffer
    /// when it is posted, so `nbufs_allocated` is its receives posted and not yet completed;
    /// they take messages in order, so the span is the same count (the man page: never
    /// less than the buffers). An SRQ endpoint takes buffers from the SRQ as messages
    /// arrive, which only their completions show: neither count is known, and the man
    /// page's answer for that is `DAT_MODEL_NOT_SUPPORTED` (OFA dapl answers
    /// `DAT_NOT_IMPLEMENTED` for every endpoint).
    pub fn recv_query(&self) -> DatResult<EpRecvInfo> {
        self.state_allows(Trigger::Query)?;
        // Receives completed without an EVD hold no buffer any more.
        if let Some(silent) = self.inner.silent.get() {
            self.drain_silent(silent);
        }
        match &self.inner.completions.receives {
            Some(ring) => {
                let n = ring.outstanding();
                Ok(EpRecvInfo { nbufs_allocated: Some(n), bufs_alloc_span: Some(n) })
            }
            None => Err(DatError::new(ret::MODEL_NOT_SUPPORTED, subtype::NO_SUBTYPE).with_detail(
                "dat_ep_recv_query: an SRQ endpoint's buffers are known only as they complete; \
                 count the completions on its recv EVD, or watch the SRQ with dat_srq_query",
            )),
        }
    }

    /// `dat_ep_set_watermark`: high watermarks are not offered (`srq_watermarks_supported`
    /// is 0), which the man page answers with `DAT_MODEL_NOT_SUPPORTED` (OFA dapl:
    /// `DAT_NOT_IMPLEMENTED`). The arguments are checked first: `DAT_WATERMARK_INFINITE`
    /// (`u32::MAX`) or a count up to `max_recv_dtos`.
    pub fn set_watermark(&self, soft_high: u32, hard_high: u32) -> DatResult<()> {
        self.state_allows(Trigger::Query)?;
        let max = lock(&self.inner.attr).max_recv_dtos;
        for (arg, value) in [(2, soft_high), (3, hard_high)] {
            if value != u32::MAX && value > max {
                return Err(DatError::invalid_parameter(arg).with_detail(format!(
                    "dat_ep_set_watermark: watermark {value} above the endpoint's \
                     max_recv_dtos {max}"
                )));
            }
        }
        Err(DatError::new(ret::MODEL_NOT_SUPPORTED, subtype::NO_SUBTYPE).with_detail(
            "dat_ep_set_watermark: this provider offers no endpoint high watermarks \
             (srq_watermarks_supported is 0); size the receives with max_recv_dtos",
        ))
    }

    fn state_allows(&self, trigger: Trigger) -> DatResult<()> {
        transition(self.state(), trigger).map(drop)
    }

    /// `dat_ep_modify(mask, params)`: changes the fields `mask` names, all or none. See the
    /// module docs for what can change when.
    pub fn modify(&self, mask: EpParamMask, params: &EpParamUpdate) -> DatResult<()> {
        if mask & !ep_field::ALL != 0 {
            return Err(DatError::invalid_parameter(2).with_detail(format!(
                "dat_ep_modify: mask {mask:#x} has bits {:#x} that name no DAT_EP_PARAM field",
                mask & !ep_field::ALL
            )));
        }
        if mask & READ_ONLY != 0 {
            return Err(DatError::invalid_parameter(2).with_detail(format!(
                "dat_ep_modify: mask {mask:#x} names fields that cannot change ({:#x}: IA, state, \
                 communicator, addresses, port qualifiers, SRQ); leave them out",
                mask & READ_ONLY
            )));
        }
        // Completions already made count as done for the checks below (a stream without an
        // EVD has nobody else to take them in). Before the state lock: a failed one ends the
        // connection, which takes it.
        if let Some(silent) = self.inner.silent.get() {
            self.drain_silent(silent);
        }
        // The state lock is held throughout: a connect or accept cannot start halfway.
        let state = lock(&self.inner.state);
        for (bits, trigger) in [
            (ep_field::PZ_HANDLE, Trigger::ModifyPz),
            (ENDPOINT_ATTRIBUTES, Trigger::ModifyEndpointAttributes),
            (TRANSPORT_OR_PROVIDER, Trigger::ModifyTransportOrProviderAttributes),
        ] {
            if mask & bits != 0 {
                transition(*state, trigger)?;
            }
        }
        let old_wiring = lock(&self.inner.wiring).clone();
        let new_wiring = self.modified_wiring(mask, params, &old_wiring)?;
        let caps = self.inner.qp.lock().caps();
        let new_attr = self.modified_attr(*state, mask, &params.ep_attr, &caps)?;
        let rewire = !new_wiring.pz.same(&old_wiring.pz)
            || !same_evd(&new_wiring.recv_evd, &old_wiring.recv_evd)
            || !same_evd(&new_wiring.request_evd, &old_wiring.request_evd);
        let silent_now = new_wiring.recv_evd.is_none() || new_wiring.request_evd.is_none();
        if silent_now && self.inner.silent.get().is_none() {
            // Made once, before the QP that needs it (the state lock keeps modifies apart).
            let _ = self.inner.silent.set(SilentCq::new(&self.inner.ia, &caps, "dat_ep_modify")?);
        }
        if rewire {
            let streams = (request_stream(&new_attr), receive_stream(&new_attr));
            self.replace_qp(*state, &old_wiring, &new_wiring, &caps, streams)?;
        } else {
            let old_attr = self.attr();
            if new_attr.recv_completion_flags != old_attr.recv_completion_flags
                && let Some(recv_evd) = &new_wiring.recv_evd
            {
                // Only before receives are posted (checked above): the receive EVD's waiter
                // wakes as the new flags say from the first receive on.
                let qpn = self.inner.qp.lock().qpn();
                recv_evd.set_solicited_wait(qpn, solicited_wait(&new_attr));
            }
            if new_attr.request_completion_flags != old_attr.request_completion_flags
                && let Some(request_evd) = &new_wiring.request_evd
            {
                // The request EVD's waits take threshold 1 only while UNSIGNALLED is set.
                let qpn = self.inner.qp.lock().qpn();
                request_evd.set_unsignalled_requests(qpn, unsignalled(&new_attr));
            }
        }
        if let Some(silent) = self.inner.silent.get() {
            silent.set_requests(new_wiring.request_evd.is_none());
        }
        self.inner.recv_iov_limit.store(new_attr.max_recv_iov, Ordering::Relaxed);
        self.inner.request_iov_limit.store(new_attr.max_request_iov, Ordering::Relaxed);
        self.inner.rdma_read_iov_limit.store(new_attr.max_rdma_read_iov, Ordering::Relaxed);
        self.inner.rdma_write_iov_limit.store(new_attr.max_rdma_write_iov, Ordering::Relaxed);
        let c = &self.inner.completions;
        c.requests.set_limit(new_attr.max_request_dtos);
        if let Some(r) = &c.receives {
            r.set_limit(new_attr.max_recv_dtos);
        }
        *lock(&self.inner.attr) = new_attr;
        *lock(&self.inner.wiring) = new_wiring;
        // Only now, as a modify that fails changes nothing: with both streams on EVDs the
        // silent CQ (drained above) gets nothing from the new QP, and their flushes need
        // not be told.
        self.inner.completions.silent_streams.store(silent_now, Ordering::Relaxed);
        Ok(())
    }

    /// The PZ and EVDs after the modify, checked.
    fn modified_wiring(
        &self,
        mask: EpParamMask,
        params: &EpParamUpdate,
        old: &Wiring,
    ) -> DatResult<Wiring> {
        let bad = |what: String| {
            Err(DatError::invalid_parameter(3).with_detail(format!("dat_ep_modify: {what}")))
        };
        let mut w = old.clone();
        if mask & ep_field::PZ_HANDLE != 0 {
            match &params.pz {
                None => return bad("pz_handle NULL: this provider's endpoints need a PZ".into()),
                Some(pz) if !pz.ia().same(&self.inner.ia) => {
                    return bad("the PZ belongs to another IA".into());
                }
                Some(pz) if self.inner.srq.as_ref().is_some_and(|s| !s.pz().same(pz)) => {
                    return bad(
                        "the endpoint's SRQ is in another PZ (srq_ep_pz_difference_supported \
                         is FALSE)"
                            .into(),
                    );
                }
                Some(pz) => {
                    w.pz = pz.clone();
                    w.pz_given = true;
                }
            }
        }
        for (bit, new, slot, name) in [
            (ep_field::RECV_EVD_HANDLE, &params.recv_evd, &mut w.recv_evd, "recv_evd_handle"),
            (
                ep_field::REQUEST_EVD_HANDLE,
                &params.request_evd,
                &mut w.request_evd,
                "request_evd_handle",
            ),
        ] {
            if mask & bit == 0 {
                continue;
            }
            match new {
                None if bit == ep_field::RECV_EVD_HANDLE && self.inner.srq.is_some() => {
                    return Err(super::no_srq_receives_without_evd("dat_ep_modify"));
                }
                // NULL: those completions make no events from now on.
                None => *slot = None,
                Some(evd) if evd.flags() & evd_flags::DTO == 0 => {
                    return bad(format!("{name}: the EVD was created without DAT_EVD_DTO_FLAG"));
                }
                Some(evd) if !evd.ia().same(&self.inner.ia) => {
                    return bad(format!("{name}: the EVD belongs to another IA"));
                }
                Some(evd) => *slot = Some(evd.clone()),
            }
        }
        if mask & ep_field::CONNECT_EVD_HANDLE != 0 {
            match &params.connect_evd {
                Some(evd) if evd.flags() & evd_flags::CONNECTION == 0 => {
                    return bad("connect_evd_handle: the EVD was created without \
                         DAT_EVD_CONNECTION_FLAG"
                        .into());
                }
                Some(evd) if !evd.ia().same(&self.inner.ia) => {
                    return bad("connect_evd_handle: the EVD belongs to another IA".into());
                }
                other => w.connect_evd = other.clone(),
            }
        }
        Ok(w)
    }

    /// The attributes after the modify: [`checked_attr`] against the IA and the QP, after
    /// the one check that depends on what is posted. `state` is the EP's (its lock is held
    /// by the caller).
    fn modified_attr(
        &self,
        state: EpState,
        mask: EpParamMask,
        req: &EpAttr,
        caps: &QpCaps,
    ) -> DatResult<EpAttr> {
        let base = self.attr();
        if mask & ep_field::EP_ATTR_RECV_COMPLETION_FLAGS != 0 {
            let posted = self.inner.completions.receives.as_ref().map_or(0, |r| r.outstanding());
            if posted > 0 && req.recv_completion_flags != base.recv_completion_flags {
                // The man page: changed "before posting of any Recvs".
                return Err(DatError::invalid_state(state.subtype()).with_detail(format!(
                    "dat_ep_modify: recv_completion_flags change only before receives are \
                     posted, and {posted} are; set them first"
                )));
            }
        }
        let on = AttrCheck {
            verb: "dat_ep_modify",
            arg: 3,
            ia: self.inner.ia.attr(),
            srq_ep: self.inner.srq.is_some(),
            qp: Some(caps),
        };
        checked_attr(&base, req, mask, &on)
    }

    /// A new QP with the same capacities in the new PZ, on the new EVDs' CQs, in place of
    /// the old one (whose completions stop being this EP's). Only with no DTO posted. Like
    /// `dat_ep_create` and `dat_ep_reset`, this waits for a thread sleeping in a wait on
    /// one of the EVDs (their CQs are locked for the attach).
    fn replace_qp(
        &self,
        state: EpState,
        old: &Wiring,
        new: &Wiring,
        caps: &QpCaps,
        (requests, receives): (Stream, Stream),
    ) -> DatResult<()> {
        let c = &self.inner.completions;
        let busy = |posted: u32| {
            DatError::invalid_state(state.subtype()).with_detail(format!(
                "dat_ep_modify: a new PZ or DTO EVD needs a new QP, and {posted} DTO(s) are \
                 posted on the current one; modify the endpoint before posting"
            ))
        };
        let outstanding =
            || c.requests.outstanding() + c.receives.as_ref().map_or(0, CookieRing::outstanding);
        if outstanding() > 0 {
            return Err(busy(outstanding()));
        }
        let sides = Sides {
            recv: new.recv_evd.as_ref(),
            request: new.request_evd.as_ref(),
            silent: self.inner.silent.get(),
        };
        let qp = super::build_qp(&new.pz, &sides, self.inner.srq.as_ref(), *caps, "dat_ep_modify")?;
        let qpn = qp.qpn();
        let new_qp_handle = qp.user_handle();
        // The new QP's completions are this EP's before it can make any (attached first);
        // the old one's stop being so once it is gone (detached last). No CQ lock is taken
        // while the QP lock is held.
        let detach_new = || {
            for evd in [&new.request_evd, &new.recv_evd].into_iter().flatten() {
                let _ = evd.with_cq(|s| s.detach(qpn));
            }
        };
        if let Some(evd) = &new.request_evd {
            evd.attach(qpn, c.clone(), requests)?;
        }
        if let Some(evd) = &new.recv_evd
            && let Err(e) = evd.attach(qpn, c.clone(), receives)
        {
            detach_new();
            return Err(e);
        }
        let old_qp = {
            let mut slot = self.inner.qp.lock();
            let same_geometry = qp.geometry().sq_wqe_cnt == slot.geometry().sq_wqe_cnt
                && qp.geometry().rq_wqe_cnt == slot.geometry().rq_wqe_cnt;
            // Posts commit under this lock: checked here, none can have reached the old QP
            // unseen, and later ones go to the new QP. The cookie windows carry on (every
            // slot is retired, so their counts stay right whichever QP a slot goes to).
            let posted = outstanding();
            if !same_geometry || posted > 0 {
                drop(slot);
                detach_new();
                return Err(if posted > 0 {
                    busy(posted)
                } else {
                    DatError::internal_error().with_detail(
                        "dat_ep_modify: the new QP's queues differ from the old one's; the \
                         endpoint is unchanged",
                    )
                });
            }
            std::mem::replace(&mut *slot, qp)
        };
        let ia = &self.inner.ia;
        ia.watch_device_object(
            new_qp_handle,
            self.inner.id,
            std::sync::Arc::downgrade(&self.inner) as _,
        );
        ia.forget_device_object(old_qp.user_handle());
        // Detached before it is destroyed: its number may then go to another QP at once.
        let old_qpn = old_qp.qpn();
        for evd in [&old.request_evd, &old.recv_evd].into_iter().flatten() {
            let _ = evd.with_cq(|s| s.detach(old_qpn));
        }
        drop(old_qp);
        Ok(())
    }
}

/// Whether two DTO EVD settings name the same EVD (or both NULL).
fn same_evd(a: &Option<Evd>, b: &Option<Evd>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.same(b),
        (None, None) => true,
        _ => false,
    }
}

/// Who checks endpoint attributes, for [`checked_attr`]: the verb and the argument that
/// carries the attributes (`dat_ep_modify`: 3, its `DAT_EP_PARAM`; `dat_ep_create`: 6;
/// `dat_ep_create_with_srq`: 7), and what they are checked against.
pub(super) struct AttrCheck<'a> {
    /// The verb the errors name.
    pub(super) verb: &'static str,
    /// The argument number of `DAT_INVALID_PARAMETER` for a bad value.
    pub(super) arg: u32,
    /// The IA's limits.
    pub(super) ia: &'a IaAttr,
    /// The endpoint takes its receives from an SRQ (its receive limits are the IA's only).
    pub(super) srq_ep: bool,
    /// What the endpoint's QP was created with (`dat_ep_modify`: a QP cannot grow); `None`
    /// at create, where the QP is built from the checked attributes.
    pub(super) qp: Option<&'a QpCaps>,
}

/// `base` with the fields of `req` that `mask` names, each checked as `dat_ep_modify` and
/// `dat_ep_create` check them: the service type (RC) and QoS (best effort) offered, the
/// completion flags an endpoint attribute may take, every size and limit against the IA
/// (and the QP, given one), the SRQ watermark (none offered) and the named attributes (none
/// defined). A bad value is `DAT_INVALID_PARAMETER` with `on.arg`; nothing is half applied.
pub(super) fn checked_attr(
    base: &EpAttr,
    req: &EpAttr,
    mask: EpParamMask,
    on: &AttrCheck<'_>,
) -> DatResult<EpAttr> {
    let mut a = base.clone();
    let bad = |what: String| {
        Err(DatError::invalid_parameter(on.arg).with_detail(format!("{}: ep_attr.{what}", on.verb)))
    };
    let has = |bit: EpParamMask| mask & bit != 0;
    if has(ep_field::EP_ATTR_SERVICE_TYPE) {
        if req.service_type != service_type::RC {
            return bad(format!(
                "service_type {}: only DAT_SERVICE_TYPE_RC is offered",
                req.service_type
            ));
        }
        a.service_type = req.service_type;
    }
    if has(ep_field::EP_ATTR_QOS) {
        if req.qos != qos::BEST_EFFORT {
            return bad(format!("qos {:#x}: only DAT_QOS_BEST_EFFORT is offered", req.qos));
        }
        a.qos = req.qos;
    }
    if has(ep_field::EP_ATTR_RECV_COMPLETION_FLAGS) {
        if req.recv_completion_flags & !RECV_FLAGS != 0 {
            return bad(format!(
                "recv_completion_flags {:#x}: receives take only SOLICITED_WAIT, \
                 UNSIGNALLED and EVD_THRESHOLD (IB cannot suppress a receive's completion)",
                req.recv_completion_flags
            ));
        }
        a.recv_completion_flags = req.recv_completion_flags;
    }
    if has(ep_field::EP_ATTR_REQUEST_COMPLETION_FLAGS) {
        if req.request_completion_flags & !REQUEST_FLAGS != 0 {
            return bad(format!(
                "request_completion_flags {:#x}: the endpoint attribute takes UNSIGNALLED \
                 and EVD_THRESHOLD only (SUPPRESS is tolerated, as OFA takes it); \
                 SOLICITED_WAIT and BARRIER_FENCE are given per post",
                req.request_completion_flags
            ));
        }
        a.request_completion_flags = req.request_completion_flags;
    }
    // An SRQ endpoint's receive queue is the SRQ: its receive limits are the IA's only.
    let recv_qp = |v: fn(&QpCaps) -> u32| if on.srq_ep { None } else { on.qp.map(v) };
    let send_qp = |v: fn(&QpCaps) -> u32| on.qp.map(v);
    let limits = [
        Limit {
            name: "max_message_size",
            bit: ep_field::EP_ATTR_MAX_MESSAGE_SIZE,
            value: req.max_message_size,
            ia_max: on.ia.max_message_size,
            qp_max: None,
            slot: &mut a.max_message_size,
        },
        Limit {
            name: "max_rdma_size",
            bit: ep_field::EP_ATTR_MAX_RDMA_SIZE,
            value: req.max_rdma_size,
            ia_max: on.ia.max_rdma_size,
            qp_max: None,
            slot: &mut a.max_rdma_size,
        },
        Limit {
            name: "max_recv_dtos",
            bit: ep_field::EP_ATTR_MAX_RECV_DTOS,
            value: req.max_recv_dtos,
            ia_max: on.ia.max_dto_per_ep,
            qp_max: recv_qp(|c| c.max_recv_wr),
            slot: &mut a.max_recv_dtos,
        },
        Limit {
            name: "max_request_dtos",
            bit: ep_field::EP_ATTR_MAX_REQUEST_DTOS,
            value: req.max_request_dtos,
            ia_max: on.ia.max_dto_per_ep,
            qp_max: send_qp(|c| c.max_send_wr),
            slot: &mut a.max_request_dtos,
        },
        Limit {
            name: "max_recv_iov",
            bit: ep_field::EP_ATTR_MAX_RECV_IOV,
            value: req.max_recv_iov,
            ia_max: on.ia.max_iov_segments_per_dto,
            qp_max: recv_qp(|c| c.max_recv_sge),
            slot: &mut a.max_recv_iov,
        },
        Limit {
            name: "max_request_iov",
            bit: ep_field::EP_ATTR_MAX_REQUEST_IOV,
            value: req.max_request_iov,
            ia_max: on.ia.max_iov_segments_per_dto,
            qp_max: send_qp(|c| c.max_send_sge),
            slot: &mut a.max_request_iov,
        },
        Limit {
            name: "max_rdma_read_in",
            bit: ep_field::EP_ATTR_MAX_RDMA_READ_IN,
            value: req.max_rdma_read_in,
            ia_max: on.ia.max_rdma_read_per_ep_in,
            qp_max: None,
            slot: &mut a.max_rdma_read_in,
        },
        Limit {
            name: "max_rdma_read_out",
            bit: ep_field::EP_ATTR_MAX_RDMA_READ_OUT,
            value: req.max_rdma_read_out,
            ia_max: on.ia.max_rdma_read_per_ep_out,
            qp_max: None,
            slot: &mut a.max_rdma_read_out,
        },
        Limit {
            name: "max_rdma_read_iov",
            bit: ep_field::EP_ATTR_MAX_RDMA_READ_IOV,
            value: req.max_rdma_read_iov,
            ia_max: on.ia.max_iov_segments_per_rdma_read,
            qp_max: send_qp(|c| c.max_send_sge),
            slot: &mut a.max_rdma_read_iov,
        },
        Limit {
            name: "max_rdma_write_iov",
            bit: ep_field::EP_ATTR_MAX_RDMA_WRITE_IOV,
            value: req.max_rdma_write_iov,
            ia_max: on.ia.max_iov_segments_per_rdma_write,
            qp_max: send_qp(|c| c.max_send_sge),
            slot: &mut a.max_rdma_write_iov,
        },
    ];
    for Limit { name, bit, value, ia_max, qp_max, slot } in limits {
        if !has(bit) {
            continue;
        }
        if value > ia_max {
            return bad(format!("{name} {value} exceeds the IA's {ia_max}"));
        }
        if let Some(qp_max) = qp_max
            && value > qp_max
        {
            return bad(format!(
                "{name} {value} exceeds the {qp_max} the endpoint's QP was created with; \
                 a QP cannot grow: create the endpoint with the larger attributes"
            ));
        }
        *slot = value;
    }
    if has(ep_field::EP_ATTR_SRQ_SOFT_HW) {
        if req.srq_soft_hw != u32::MAX {
            return bad(format!(
                "srq_soft_hw {}: this provider offers no SRQ watermarks \
                 (srq_watermarks_supported is 0); use DAT_WATERMARK_INFINITE",
                req.srq_soft_hw
            ));
        }
        a.srq_soft_hw = req.srq_soft_hw;
    }
    for (bits, list, name) in [
        (
            ep_field::EP_ATTR_NUM_TRANSPORT_ATTR | ep_field::EP_ATTR_TRANSPORT_SPECIFIC_ATTR,
            &req.ep_transport_specific,
            "ep_transport_specific",
        ),
        (
            ep_field::EP_ATTR_NUM_PROVIDER_ATTR | ep_field::EP_ATTR_PROVIDER_SPECIFIC_ATTR,
            &req.ep_provider_specific,
            "ep_provider_specific",
        ),
    ] {
        if has(bits) && !list.is_empty() {
            return bad(format!(
                "{name}: {} attribute(s) ({}); this provider defines none for endpoints",
                list.len(),
                list.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_classes_cover_every_field_once() {
        assert_eq!(READ_ONLY & ENDPOINT_ATTRIBUTES, 0);
        assert_eq!(READ_ONLY & TRANSPORT_OR_PROVIDER, 0);
        assert_eq!(ENDPOINT_ATTRIBUTES & TRANSPORT_OR_PROVIDER, 0);
        assert_eq!(
            READ_ONLY | ENDPOINT_ATTRIBUTES | TRANSPORT_OR_PROVIDER | ep_field::PZ_HANDLE,
            ep_field::ALL
        );
    }

    #[test]
    fn endpoint_completion_flags_are_the_man_pages() {
        for per_post_only in [completion_flags::SUPPRESS, completion_flags::BARRIER_FENCE] {
            assert_eq!(RECV_FLAGS & per_post_only, 0);
        }
        assert_eq!(REQUEST_FLAGS & completion_flags::BARRIER_FENCE, 0);
        // Tolerated for consumers written for OFA (see REQUEST_FLAGS).
        assert_ne!(REQUEST_FLAGS & completion_flags::SUPPRESS, 0);
        assert_eq!(REQUEST_FLAGS & completion_flags::SOLICITED_WAIT, 0);
        assert_ne!(RECV_FLAGS & completion_flags::SOLICITED_WAIT, 0);
    }
}
