//! Service points and connection requests: a PSP listens on a connection qualifier of the
//! IA's address and reports each request as a `DAT_CONNECTION_REQUEST_EVENT` carrying a
//! [`Cr`], which the consumer queries, accepts on an endpoint, rejects, or hands off to
//! another service point of the IA.

use crate::cm::{self, CmEvent, CmEvents, ConnRequest, Listener};
use crate::ep::Ep;
use crate::ep_state::Trigger;
use crate::error::{DatError, DatResult};
use crate::evd::Evd;
use crate::event::{Event, ObjectId, new_object_id};
use crate::ia::Ia;
use ferrodat_abi::dat::{ret, subtype};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// A public service point (`dat_psp_create`, consumer model).
#[derive(Debug)]
pub struct Psp {
    id: ObjectId,
    conn_qual: u16,
    evd: Evd,
    events: Arc<PspEvents>,
    _listener: Listener,
}

impl Psp {
    /// `dat_psp_create(ia, conn_qual, evd, DAT_PSP_CONSUMER_FLAG)`: requests on `conn_qual`
    /// become connection-request events on `evd` (its qlen is the backlog).
    pub fn create(ia: &Ia, conn_qual: u16, evd: &Evd) -> DatResult<Psp> {
        let id = new_object_id();
        let events = Arc::new(PspEvents { sp: id, evd: evd.clone(), reserved: None });
        let sink: cm::Sink = events.clone();
        let listener = ia.cm()?.listen(conn_qual, evd.qlen(), sink).map_err(|e| match e {
            cm::CmError::ConnQualInUse { .. } => {
                DatError::new(ret::CONN_QUAL_IN_USE, subtype::NO_SUBTYPE).with_detail(format!(
                    "dat_psp_create: {e}; pick another connection qualifier or free the service \
                     point using it"
                ))
            }
            other => DatError::insufficient_resources(subtype::RESOURCE_MEMORY)
                .with_detail(format!("dat_psp_create: {other}")),
        })?;
        let conn_qual = listener.conn_qual();
        ia.service_points().add(conn_qual, &events);
        Ok(Psp { id, conn_qual, evd: evd.clone(), events, _listener: listener })
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
        self.evd.ia().service_points().remove(self.conn_qual, &self.events);
    }
}

/// A reserved service point (`dat_rsp_create`): one request, on the endpoint it holds.
#[derive(Debug)]
pub struct Rsp {
    id: ObjectId,
    conn_qual: u16,
    ep: Ep,
    events: Arc<PspEvents>,
    listener: Mutex<Option<Listener>>,
}

impl Rsp {
    /// `dat_rsp_create(ia, conn_qual, ep, evd)`: `ep` goes RESERVED; the first request on
    /// `conn_qual` becomes a connection-request event on `evd`, for that EP.
    pub fn create(ia: &Ia, conn_qual: u16, ep: &Ep, evd: &Evd) -> DatResult<Rsp> {
        ep.rsp_step(Trigger::RspCreate)?;
        let id = new_object_id();
        let events = Arc::new(PspEvents { sp: id, evd: evd.clone(), reserved: Some(ep.clone()) });
        let sink: cm::Sink = events.clone();
        let listener = ia.cm()?.listen(conn_qual, 1, sink).map_err(|e| {
            let _ = ep.rsp_step(Trigger::RspFree);
            DatError::new(ret::CONN_QUAL_IN_USE, subtype::NO_SUBTYPE)
                .with_detail(format!("dat_rsp_create: {e}"))
        })?;
        ia.service_points().add(conn_qual, &events);
        Ok(Rsp { id, conn_qual, ep: ep.clone(), events, listener: Mutex::new(Some(listener)) })
    }

    /// Its id.
    pub fn id(&self) -> ObjectId {
        self.id
    }

    /// `dat_rsp_query`: the connection qualifier.
    pub fn conn_qual(&self) -> u16 {
        self.conn_qual
    }

    /// `dat_rsp_query`: the endpoint it holds.
    pub fn ep(&self) -> &Ep {
        &self.ep
    }

    /// `dat_rsp_free`: stops listening; a still-reserved EP goes back to UNCONNECTED (a
    /// request already reported keeps its EP).
    pub fn free(self) -> DatResult<()> {
        self.listener.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.ep.rsp_step(Trigger::RspFree)
    }
}

impl Drop for Rsp {
    fn drop(&mut self) {
        self.events.evd.ia().service_points().remove(self.conn_qual, &self.events);
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
    /// An RSP's endpoint: the request is for it.
    reserved: Option<Ep>,
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
    /// A request for this service point (arrived on `conn_qual`, or handed off to it)
    /// becomes a connection-request event with a fresh CR.
    fn deliver(&self, request: ConnRequest, conn_qual: u16) {
        if let Some(ep) = &self.reserved
            && ep.rsp_step(Trigger::RequestArrivedOnRsp).is_err()
        {
            return; // the RSP was used or freed: the request is refused undecided
        }
        let cr = Cr {
            inner: Arc::new(CrInner {
                id: new_object_id(),
                request: Mutex::new(Some(request)),
                ep: self.reserved.clone(),
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
    /// The endpoint the request came with (an RSP's).
    ep: Option<Ep>,
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

    /// `dat_cr_query`: the requester's address and private data.
    pub fn query(&self) -> DatResult<(SocketAddr, Vec<u8>)> {
        self.with_request(|r| Ok((r.remote(), r.private_data().to_vec())))
    }

    /// `dat_cr_accept(cr, ep, private_data)`; `ep` None (DAT's NULL) for a request that
    /// came with its endpoint (an RSP's).
    pub fn accept(&self, ep: Option<&Ep>, private_data: &[u8]) -> DatResult<()> {
        let mut g = self.inner.request.lock().unwrap_or_else(|e| e.into_inner());
        let Some(request) = g.as_mut() else {
            return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_CR)
                .with_detail("this connection request was already accepted or rejected"));
        };
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
        request.reject(private_data).map_err(|e| {
            DatError::invalid_parameter(3).with_detail(format!("dat_cr_reject: {e}"))
        })?;
        *g = None;
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
                "dat_cr_handoff: this request arrived on an RSP and holds its endpoint; accept \
                 or reject it",
            ));
        }
        let target = self.inner.ia.service_points().get(conn_qual);
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
