//! Service points and connection requests: a PSP listens on a connection qualifier of the
//! IA's address and reports each request as a `DAT_CONNECTION_REQUEST_EVENT` carrying a
//! [`Cr`], which the consumer queries, accepts on an endpoint, rejects, or hands off to
//! another service point of the IA.

use crate::cm::{self, CmEvent, CmEvents, ConnRequest, Listener};
use crate::ep::{Ep, Placeholders, WeakEp};
use crate::ep_state::{EpState, Trigger};
use crate::error::{DatError, DatResult};
use crate::evd::Evd;
use crate::event::{Event, ObjectId, new_object_id};
use crate::ia::Ia;
use ferrodat_abi::dat::{psp_flags, ret, subtype};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// A public service point (`dat_psp_create`): the consumer names the endpoint when it
/// accepts, or (`DAT_PSP_PROVIDER_FLAG`) the provider creates one per request.
#[derive(Debug)]
pub struct Psp {
    id: ObjectId,
    ia: Ia,
    conn_qual: u16,
    evd: Evd,
    /// `DAT_PSP_CONSUMER_FLAG` or `DAT_PSP_PROVIDER_FLAG`.
    flags: u32,
    /// What its listener reports to (also the target of `dat_cr_handoff`).
    events: Arc<PspEvents>,
    /// Its listener (taken by an abrupt IA close).
    listener: Arc<Mutex<Option<Listener>>>,
}

impl Psp {
    /// `dat_psp_create(ia, conn_qual, evd, DAT_PSP_CONSUMER_FLAG)`: requests on `conn_qual`
    /// become connection-request events on `evd` (its qlen is the backlog).
    pub fn create(ia: &Ia, conn_qual: u16, evd: &Evd) -> DatResult<Psp> {
        Psp::create_with_flags(ia, conn_qual, evd, psp_flags::CONSUMER)
    }

    /// `dat_psp_create(ia, conn_qual, evd, psp_flags)`: with `DAT_PSP_PROVIDER_FLAG` each
    /// request comes with an endpoint the provider made (`ep::provider`), which
    /// `dat_cr_query` names.
    pub fn create_with_flags(ia: &Ia, conn_qual: u16, evd: &Evd, flags: u32) -> DatResult<Psp> {
        check_cr_evd(ia, evd, "dat_psp_create")?;
        let provider = check_psp_flags(ia, flags, "dat_psp_create")?;
        let id = new_object_id();
        let events = Arc::new(PspEvents { sp: id, evd: evd.clone(), reserved: None, provider });
        let sink: cm::Sink = events.clone();
        let listener = ia
            .cm()?
            .listen(conn_qual, evd.qlen(), sink)
            .map_err(|e| listen_error("dat_psp_create", e))?;
        Ok(Psp::listening(ia, id, evd, flags, listener, events))
    }

    fn listening(
        ia: &Ia,
        id: ObjectId,
        evd: &Evd,
        flags: u32,
        listener: Listener,
        events: Arc<PspEvents>,
    ) -> Psp {
        let conn_qual = listener.conn_qual();
        let listener = listening_for(ia, listener);
        ia.service_points().add(conn_qual, &events);
        Psp { id, ia: ia.clone(), conn_qual, evd: evd.clone(), flags, events, listener }
    }

    /// Its id (connection-request events name it).
    pub fn id(&self) -> ObjectId {
        self.id
    }

    /// `dat_psp_query`: the connection qualifier.
    pub fn conn_qual(&self) -> u16 {
        self.conn_qual
    }

    /// `dat_psp_query`: the EVD requests are reported on.
    pub fn evd(&self) -> &Evd {
        &self.evd
    }
}

impl Drop for Psp {
    fn drop(&mut self) {
        self.ia.service_points().remove(self.conn_qual, &self.events);
    }
}

/// A reserved service point (`dat_rsp_create`): one request, on the endpoint it holds.
#[derive(Debug)]
pub struct Rsp {
    id: ObjectId,
    ia: Ia,
    conn_qual: u16,
    evd: Evd,
    events: Arc<PspEvents>,
    listener: Arc<Mutex<Option<Listener>>>,
}

impl Rsp {
    /// `dat_rsp_create(ia, conn_qual, ep, evd)`: `ep` goes RESERVED; the first request on
    /// `conn_qual` becomes a connection-request event on `evd`, for that EP.
    pub fn create(ia: &Ia, conn_qual: u16, ep: &Ep, evd: &Evd) -> DatResult<Rsp> {
        check_cr_evd(ia, evd, "dat_rsp_create")?;
        if !ep.ia().same(ia) {
            return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_EP)
                .with_detail("dat_rsp_create: the endpoint belongs to another IA"));
        }
        let cm = ia.cm()?;
        ep.rsp_step(Trigger::RspCreate)?;
        let id = new_object_id();
        let events = Arc::new(PspEvents {
            sp: id,
            evd: evd.clone(),
            reserved: Some(ep.downgrade()),
            provider: None,
        });
        let sink: cm::Sink = events.clone();
        let listener = cm.listen(conn_qual, 1, sink).map_err(|e| {
            let _ = ep.rsp_step(Trigger::RspFree);
            listen_error("dat_rsp_create", e)
        })?;
        ia.service_points().add(conn_qual, &events);
        Ok(Rsp {
            id,
            ia: ia.clone(),
            conn_qual,
            evd: evd.clone(),
            events,
            listener: listening_for(ia, listener),
        })
    }

    /// Its id.
    pub fn id(&self) -> ObjectId {
        self.id
    }

    /// `dat_rsp_query`: the connection qualifier.
    pub fn conn_qual(&self) -> u16 {
        self.conn_qual
    }

    /// `dat_rsp_query`: the endpoint it holds (None once the consumer freed it, after its
    /// request took it).
    pub fn ep(&self) -> Option<Ep> {
        self.events.reserved.as_ref().and_then(WeakEp::upgrade)
    }

    /// `dat_rsp_free`: stops listening; a still-reserved EP goes back to UNCONNECTED (a
    /// request already reported keeps its EP).
    pub fn free(self) -> DatResult<()> {
        self.listener.lock().unwrap_or_else(|e| e.into_inner()).take();
        match self.ep() {
            Some(ep) => ep.rsp_step(Trigger::RspFree),
            None => Ok(()),
        }
    }
}

impl Drop for Rsp {
    fn drop(&mut self) {
        self.ia.service_points().remove(self.conn_qual, &self.events);
    }
}

/// The service points of one IA by connection qualifier: where `dat_cr_handoff` looks
/// for its target. Held weakly: a freed service point stops taking requests at once.
#[derive(Debug, Default)]
pub(crate) struct ServicePoints(Mutex<HashMap<u16, Weak<PspEvents>>>);

impl ServicePoints {
    fn add(&self, conn_qual: u16, sp: &Arc<PspEvents>) {
        self.lock().insert(conn_qual, Arc::downgrade(sp));
    }

    fn remove(&self, conn_qual: u16, sp: &Arc<PspEvents>) {
        let mut map = self.lock();
        if map.get(&conn_qual).is_some_and(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(sp))) {
            map.remove(&conn_qual);
        }
    }

    fn get(&self, conn_qual: u16) -> Option<Arc<PspEvents>> {
        self.lock().get(&conn_qual).and_then(Weak::upgrade)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u16, Weak<PspEvents>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Debug)]
struct PspEvents {
    sp: ObjectId,
    evd: Evd,
    /// An RSP's endpoint: the request is for it. Weakly: once its request took the
    /// endpoint, the consumer may free it before the RSP, and its QP, PZ and EVDs must go
    /// then.
    reserved: Option<WeakEp>,
    /// A PSP with `DAT_PSP_PROVIDER_FLAG`: what its endpoints start on.
    provider: Option<Arc<Placeholders>>,
}

impl CmEvents for PspEvents {
    fn event(&self, ev: CmEvent) {
        if let CmEvent::ConnRequest(request) = ev {
            let conn_qual = request.conn_qual();
            self.deliver(request, conn_qual);
        }
    }
}

impl PspEvents {
    /// A PSP takes any number of requests; an RSP one, while its endpoint is RESERVED.
    fn can_take_a_request(&self) -> bool {
        match &self.reserved {
            None => true,
            Some(weak) => weak.upgrade().is_some_and(|ep| ep.state() == EpState::Reserved),
        }
    }

    /// A request for this service point (arrived on `conn_qual`, or handed off to it)
    /// becomes a connection-request event with a fresh CR.
    fn deliver(&self, request: ConnRequest, conn_qual: u16) {
        let reserved = match &self.reserved {
            Some(weak) => match weak.upgrade() {
                Some(ep) if ep.rsp_step(Trigger::RequestArrivedOnRsp).is_ok() => Some(ep),
                // The RSP was used or freed: the request is refused undecided.
                _ => return,
            },
            None => None,
        };
        let provider_made = reserved.is_none() && self.provider.is_some();
        let ep = match (reserved, &self.provider) {
            (Some(ep), _) => Some(ep),
            (None, Some(placeholders)) => {
                match Ep::create_for_request(placeholders, request.remote()) {
                    Ok(ep) => Some(ep),
                    // No QP for it: the request is refused undecided (NON_PEER_REJECTED).
                    Err(_) => return,
                }
            }
            (None, None) => None,
        };
        let cr = Cr {
            inner: Arc::new(CrInner {
                id: new_object_id(),
                request: Mutex::new(Some(request)),
                ep,
                provider_made,
                sp: self.sp,
                ia: self.evd.ia().clone(),
            }),
        };
        // A full EVD drops the request undecided (the requester sees it refused) and the
        // overflow is reported on the async EVD.
        let conn_qual = u64::from(conn_qual);
        let ev = Event::ConnectionRequest { sp: self.sp, cr: cr.clone(), conn_qual };
        self.evd.ia().post_or_report(&self.evd, ev);
    }
}

/// A connection request (`DAT_CR_HANDLE`). Cheap to clone; accepting or rejecting it
/// uses it up.
#[derive(Clone, Debug)]
pub struct Cr {
    inner: Arc<CrInner>,
}

#[derive(Debug)]
struct CrInner {
    id: ObjectId,
    request: Mutex<Option<ConnRequest>>,
    /// The endpoint the request came with (an RSP's, or one the provider made).
    ep: Option<Ep>,
    /// `ep` is one the provider made (a PSP with `DAT_PSP_PROVIDER_FLAG`).
    provider_made: bool,
    /// The service point it arrived on, and that service point's IA.
    sp: ObjectId,
    ia: Ia,
}

impl PartialEq for Cr {
    fn eq(&self, other: &Cr) -> bool {
        self.inner.id == other.inner.id
    }
}

impl Eq for Cr {}

impl Cr {
    /// Its id.
    pub fn id(&self) -> ObjectId {
        self.inner.id
    }

    fn with_request<R>(&self, f: impl FnOnce(&mut ConnRequest) -> DatResult<R>) -> DatResult<R> {
        let mut g = self.inner.request.lock().unwrap_or_else(|e| e.into_inner());
        match g.as_mut() {
            Some(r) => f(r),
            None => Err(DatError::invalid_handle(subtype::INVALID_HANDLE_CR)
                .with_detail("this connection request was already accepted or rejected")),
        }
    }

    /// The endpoint that came with the request is one the provider made for it (a PSP
    /// with `DAT_PSP_PROVIDER_FLAG`), not an RSP's: a reject hands it back.
    pub fn endpoint_is_providers(&self) -> bool {
        self.inner.provider_made
    }

    /// `dat_cr_query`: every field of `DAT_CR_PARAM`.
    pub fn query(&self) -> DatResult<CrParam> {
        self.with_request(|r| {
            Ok(CrParam {
                remote_ia_address: r.remote().ip(),
                remote_port_qual: u64::from(r.remote().port()),
                private_data: r.private_data().to_vec(),
                local_ep: self.inner.ep.clone(),
            })
        })
    }

    /// `dat_cr_accept(cr, ep, private_data)`; `ep` None (DAT's NULL) for a request that
    /// came with its endpoint (an RSP's).
    pub fn accept(&self, ep: Option<&Ep>, private_data: &[u8]) -> DatResult<()> {
        let mut g = self.inner.request.lock().unwrap_or_else(|e| e.into_inner());
        let Some(request) = g.as_mut() else {
            return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_CR)
                .with_detail("this connection request was already accepted or rejected"));
        };
        if let Some(ep) = ep
            && !ep.ia().same(&self.inner.ia)
        {
            return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_EP).with_detail(
                "dat_cr_accept: the endpoint belongs to another IA than the request's service \
                 point",
            ));
        }
        match (ep, &self.inner.ep) {
            (Some(ep), None) => ep.accept(request, private_data, false)?,
            (None, Some(own)) => own.accept(request, private_data, true)?,
            (Some(ep), Some(own)) if ep.id() == own.id() => {
                own.accept(request, private_data, true)?
            }
            (None, None) => {
                return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_EP).with_detail(
                    "dat_cr_accept: this request came on a PSP: name the endpoint to accept it on",
                ));
            }
            (Some(_), Some(_)) => {
                return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_EP).with_detail(
                    "dat_cr_accept: this request belongs to its RSP's endpoint; accept it with \
                     that one (or NULL)",
                ));
            }
        }
        *g = None;
        Ok(())
    }

    /// `dat_cr_reject` without private data.
    pub fn reject(&self) -> DatResult<()> {
        self.reject_with(&[])
    }

    /// `dat_cr_reject(cr, private_data_size, private_data)`: the requester gets
    /// PEER_REJECTED with `private_data`.
    pub fn reject_with(&self, private_data: &[u8]) -> DatResult<()> {
        let mut g = self.inner.request.lock().unwrap_or_else(|e| e.into_inner());
        let Some(request) = g.as_mut() else {
            return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_CR)
                .with_detail("this connection request was already accepted or rejected"));
        };
        // Too much private data is refused as dat_cr_accept refuses it: naming the size,
        // here the second argument.
        if private_data.len() > cm::MAX_PRIVATE_DATA {
            return Err(DatError::invalid_parameter(2).with_detail(format!(
                "dat_cr_reject: {} bytes of private data; max_private_data_size is {}",
                private_data.len(),
                cm::MAX_PRIVATE_DATA
            )));
        }
        request.reject(private_data).map_err(|e| {
            DatError::invalid_parameter(3).with_detail(format!("dat_cr_reject: {e}"))
        })?;
        *g = None;
        // The request's own endpoint: an RSP's goes back to UNCONNECTED, a provider-created
        // one back to the provider (its handle is dead).
        if let Some(ep) = &self.inner.ep {
            let _ = ep.rsp_step(Trigger::CrReject);
        }
        Ok(())
    }
    /// `dat_cr_handoff(cr, conn_qual)`: the request goes to the IA's service point on
    /// `conn_qual`, which reports it as a new connection-request event with a new CR; this
    /// one is used up. The request keeps counting against the backlog of the service
    /// point it arrived on until it is decided.
    pub fn handoff(&self, conn_qual: u16) -> DatResult<()> {
        let mut g = self.inner.request.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_CR)
                .with_detail("this connection request was already accepted or rejected"));
        }
        if let Some(ep) = &self.inner.ep {
            return Err(DatError::invalid_state(ep.state().subtype()).with_detail(
                "dat_cr_handoff: this request holds its endpoint (an RSP's or one the provider \
                 made); accept or reject it",
            ));
        }
        let target = self.inner.ia.service_points().get(conn_qual);
        if let Some(t) = &target
            && !t.can_take_a_request()
        {
            return Err(DatError::invalid_parameter(2).with_detail(format!(
                "dat_cr_handoff: the RSP on connection qualifier {conn_qual} already took its \
                 one request; hand the request to a PSP"
            )));
        }
        let Some(target) = target.filter(|t| t.sp != self.inner.sp) else {
            return Err(DatError::invalid_parameter(2).with_detail(format!(
                "dat_cr_handoff: no other service point of this IA listens on connection \
                 qualifier {conn_qual}; create a PSP there first"
            )));
        };
        let request = g.take().expect("checked above");
        drop(g);
        target.deliver(request, conn_qual);
        Ok(())
    }
}

// ----- queries, create_any and free (dat_psp_*, dat_rsp_query) -----

/// `DAT_PSP_PARAM`, as `dat_psp_query` reports it.
#[derive(Clone, Debug)]
pub struct PspParam {
    /// `ia_handle`.
    pub ia: Ia,
    /// `conn_qual`.
    pub conn_qual: u64,
    /// `evd_handle`: where its connection requests are reported.
    pub evd: Evd,
    /// `psp_flags`: `DAT_PSP_CONSUMER_FLAG` or `DAT_PSP_PROVIDER_FLAG`.
    pub psp_flags: u32,
}

/// `DAT_RSP_PARAM`, as `dat_rsp_query` reports it.
#[derive(Clone, Debug)]
pub struct RspParam {
    /// `ia_handle`.
    pub ia: Ia,
    /// `conn_qual`.
    pub conn_qual: u64,
    /// `evd_handle`: where its connection request is reported.
    pub evd: Evd,
    /// `ep_handle`: the endpoint it holds (None once freed, after its request took it).
    pub ep: Option<Ep>,
}

/// `DAT_CR_PARAM`, as `dat_cr_query` reports it.
#[derive(Clone, Debug)]
pub struct CrParam {
    /// `remote_ia_address_ptr`: the requester's address.
    pub remote_ia_address: IpAddr,
    /// `remote_port_qual`: the requester's port.
    pub remote_port_qual: u64,
    /// `private_data` (its size is `private_data_size`).
    pub private_data: Vec<u8>,
    /// `local_ep_handle`: the endpoint the request came with (an RSP's); `None` for a
    /// PSP's request, accepted on an endpoint the consumer names.
    pub local_ep: Option<Ep>,
}

impl Psp {
    /// `dat_psp_create_any(ia, evd, psp_flags)`: listens on a free connection qualifier
    /// the provider picks (from `cm::CONN_QUAL_ANY`); [`Psp::conn_qual`] says which.
    pub fn create_any(ia: &Ia, evd: &Evd, flags: u32) -> DatResult<Psp> {
        check_cr_evd(ia, evd, "dat_psp_create_any")?;
        let provider = check_psp_flags(ia, flags, "dat_psp_create_any")?;
        let id = new_object_id();
        let events = Arc::new(PspEvents { sp: id, evd: evd.clone(), reserved: None, provider });
        let sink: cm::Sink = events.clone();
        let listener = ia.cm()?.listen_any(evd.qlen(), sink).map_err(|e| match e {
            cm::CmError::NoFreeConnQual => {
                DatError::new(ret::CONN_QUAL_UNAVAILABLE, subtype::NO_SUBTYPE).with_detail(format!(
                    "dat_psp_create_any: {e}; free service points or pick a conn_qual with \
                     dat_psp_create"
                ))
            }
            other => DatError::insufficient_resources(subtype::RESOURCE_MEMORY)
                .with_detail(format!("dat_psp_create_any: {other}")),
        })?;
        Ok(Psp::listening(ia, id, evd, flags, listener, events))
    }

    /// `dat_psp_query`: every field of `DAT_PSP_PARAM`.
    pub fn query(&self) -> PspParam {
        PspParam {
            ia: self.ia.clone(),
            conn_qual: u64::from(self.conn_qual),
            evd: self.evd.clone(),
            psp_flags: self.flags,
        }
    }

    /// `dat_psp_free`: stops listening at once (the conn_qual can be listened on again
    /// when this returns). Requests not yet reported are refused (`NON_PEER_REJECTED` at the
    /// requester); requests already reported stay valid until accepted or rejected, as OFA
    /// keeps its CR records past `dat_psp_free`.
    pub fn free(self) -> DatResult<()> {
        self.listener.lock().unwrap_or_else(|e| e.into_inner()).take();
        Ok(())
    }
}

impl Rsp {
    /// `dat_rsp_query`: every field of `DAT_RSP_PARAM`.
    pub fn query(&self) -> RspParam {
        RspParam {
            ia: self.ia.clone(),
            conn_qual: u64::from(self.conn_qual),
            evd: self.evd.clone(),
            ep: self.ep(),
        }
    }
}

/// The DAT error for a listen on an explicit conn_qual (argument 2 of `dat_psp_create` and
/// `dat_rsp_create`) that failed.
fn listen_error(verb: &str, e: cm::CmError) -> DatError {
    match e {
        cm::CmError::ConnQualInUse { .. } => {
            DatError::new(ret::CONN_QUAL_IN_USE, subtype::NO_SUBTYPE).with_detail(format!(
                "{verb}: {e}; pick another connection qualifier or free the service point using it"
            ))
        }
        cm::CmError::Invalid(_) => {
            DatError::invalid_parameter(2).with_detail(format!("{verb}: {e}"))
        }
        other => DatError::insufficient_resources(subtype::RESOURCE_MEMORY)
            .with_detail(format!("{verb}: {other}")),
    }
}

/// A service point's listener, which an abrupt close of `ia` stops.
fn listening_for(ia: &Ia, listener: Listener) -> Arc<Mutex<Option<Listener>>> {
    let shared = Arc::new(Mutex::new(Some(listener)));
    let child: std::sync::Weak<dyn crate::ia::IaChild> = Arc::downgrade(&shared) as _;
    ia.register(child);
    shared
}

impl crate::ia::IaChild for Mutex<Option<Listener>> {
    fn kind(&self) -> crate::ia::ChildKind {
        crate::ia::ChildKind::ServicePoint
    }

    /// Stops listening (requests already reported keep their CRs).
    fn abort_for_ia_close(self: Arc<Self>) {
        self.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// The placeholders a provider-model PSP's endpoints start on, `None` for the consumer
/// model; unknown flags are `DAT_INVALID_PARAMETER/ARG4`.
/// A service point's EVD: a CR EVD of the service point's own IA.
fn check_cr_evd(ia: &Ia, evd: &Evd, verb: &str) -> DatResult<()> {
    let bad = |why: &str| {
        Err(DatError::invalid_handle(subtype::INVALID_HANDLE_EVD_CR)
            .with_detail(format!("{verb}: the EVD {why}")))
    };
    if evd.flags() & ferrodat_abi::dat::evd_flags::CR == 0 {
        return bad("was created without DAT_EVD_CR_FLAG");
    }
    if !evd.ia().same(ia) {
        return bad("belongs to another IA");
    }
    Ok(())
}

fn check_psp_flags(ia: &Ia, flags: u32, verb: &str) -> DatResult<Option<Arc<Placeholders>>> {
    match flags {
        psp_flags::CONSUMER => Ok(None),
        psp_flags::PROVIDER => Ok(Some(Arc::new(Placeholders::new(ia)?))),
        other => Err(DatError::invalid_parameter(4).with_detail(format!(
            "{verb}: psp_flags {other}: use DAT_PSP_CONSUMER_FLAG ({}) or DAT_PSP_PROVIDER_FLAG \
             ({})",
            psp_flags::CONSUMER,
            psp_flags::PROVIDER
        ))),
    }
}
