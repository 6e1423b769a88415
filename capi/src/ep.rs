//! Endpoints: create, query, connect, disconnect, the DTO posts, status, reset and free.

use crate::body::{Body, EpBody};
use crate::evd::{evd, evd_body};
use crate::handle::{self, Object};
use crate::ia::{ia, ia_body};
use crate::mem::{pz, pz_body, triplet};
use crate::ret::{call, put, required, slice};
use crate::sockaddr::{SockStorage, ip_of};
use ferrodat_abi::dat::{self as abi, FALSE, handle_type, service_type, subtype};
use ferrodat_engine::ep::{Ep, EpAttr};
use ferrodat_engine::ep_state::DisconnectMode;
use ferrodat_engine::error::{DatError, DatResult};
use ferrodat_engine::lmr::{LmrTriplet, RmrTriplet};
use std::mem::MaybeUninit;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zerocopy::FromZeros;

pub(crate) fn ep(h: abi::EpHandle) -> DatResult<Arc<Object>> {
    handle::get(h, handle_type::EP, subtype::INVALID_HANDLE_EP)
}

pub(crate) fn ep_body(o: &Object) -> &EpBody {
    match &o.body {
        Body::Ep(b) => b,
        _ => unreachable!("handle::get checked the type"),
    }
}

/// The engine attributes for a consumer's `DAT_EP_ATTR` (NULL: the provider's defaults).
/// A zero size or count means "the default" (dtest passes max_message_size 0).
///
/// # Safety
/// `attr` must be NULL or point to a readable `DAT_EP_ATTR`.
unsafe fn ep_attr(
    ia: &ferrodat_engine::ia::Ia,
    attr: *const abi::EpAttr,
) -> DatResult<Option<EpAttr>> {
    if attr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null; the consumer's struct.
    let a = unsafe { &*attr };
    if a.service_type != service_type::RC {
        return Err(DatError::new(abi::ret::MODEL_NOT_SUPPORTED, subtype::NO_SUBTYPE).with_detail(
            format!(
                "dat_ep_create: service type {}; ferrodat endpoints are reliable connected \
                 (DAT_SERVICE_TYPE_RC)",
                a.service_type
            ),
        ));
    }
    let d = EpAttr::defaults(ia);
    let pick = |v: i32, default: u32, what: &str| -> DatResult<u32> {
        match v {
            0 => Ok(default),
            n if n < 0 => Err(DatError::invalid_parameter(6)
                .with_detail(format!("dat_ep_create: {what} {n} is negative"))),
            n => Ok(n as u32),
        }
    };
    let size = |v: u32, default: u32| if v == 0 { default } else { v };
    Ok(Some(EpAttr {
        max_message_size: size(a.max_message_size, d.max_message_size),
        max_rdma_size: size(a.max_rdma_size, d.max_rdma_size),
        max_recv_dtos: pick(a.max_recv_dtos, d.max_recv_dtos, "max_recv_dtos")?,
        max_request_dtos: pick(a.max_request_dtos, d.max_request_dtos, "max_request_dtos")?,
        max_recv_iov: pick(a.max_recv_iov, d.max_recv_iov, "max_recv_iov")?,
        max_request_iov: pick(a.max_request_iov, d.max_request_iov, "max_request_iov")?,
        max_rdma_read_in: pick(a.max_rdma_read_in, d.max_rdma_read_in, "max_rdma_read_in")?,
        max_rdma_read_out: pick(a.max_rdma_read_out, d.max_rdma_read_out, "max_rdma_read_out")?,
        ..d
    }))
}

/// `ep_create_func` and `ep_create_with_srq_func`.
#[allow(clippy::too_many_arguments)]
unsafe fn create(
    verb: &'static str,
    ia_h: abi::IaHandle,
    pz_h: abi::PzHandle,
    recv_h: abi::EvdHandle,
    request_h: abi::EvdHandle,
    connect_h: abi::EvdHandle,
    srq_h: Option<abi::SrqHandle>,
    attr: *const abi::EpAttr,
    out: *mut abi::EpHandle,
) -> abi::Return {
    call(verb, || {
        let ia_obj = ia(ia_h)?;
        let out = required(out, if srq_h.is_some() { 8 } else { 7 }, "the EP handle pointer")?;
        let pz_obj = pz(pz_h, subtype::INVALID_HANDLE_PZ)?;
        let recv = evd(recv_h, subtype::INVALID_HANDLE_EVD_RECV)?;
        let request = evd(request_h, subtype::INVALID_HANDLE_EVD_REQUEST)?;
        let connect = if connect_h.is_null() {
            None
        } else {
            Some(evd(connect_h, subtype::INVALID_HANDLE_EVD_CONN)?)
        };
        for (o, bad) in [
            (&pz_obj, subtype::INVALID_HANDLE_PZ),
            (&recv, subtype::INVALID_HANDLE_EVD_RECV),
            (&request, subtype::INVALID_HANDLE_EVD_REQUEST),
        ] {
            if o.ia != ia_h as usize {
                return Err(DatError::invalid_handle(bad)
                    .with_detail(format!("{verb}: an object of another IA")));
            }
        }
        // SAFETY: NULL or the consumer's DAT_EP_ATTR.
        let attr = unsafe { ep_attr(&ia_body(&ia_obj).ia, attr) }?;
        let pz = pz_body(&pz_obj).pz();
        let connect_evd = connect.as_deref().map(|o| evd_body(o).evd());
        let (e, srq_addr) = match srq_h {
            None => (
                Ep::create(pz, evd_body(&recv).evd(), evd_body(&request).evd(), connect_evd, attr)?,
                0,
            ),
            Some(srq_h) => {
                let s = crate::srq::srq(srq_h)?;
                let srq = &crate::srq::srq_body(&s).srq;
                let e = Ep::create_with_srq(
                    pz,
                    evd_body(&recv).evd(),
                    evd_body(&request).evd(),
                    connect_evd,
                    srq,
                    attr,
                )?;
                (e, srq_h as usize)
            }
        };
        let id = e.id();
        let body = Body::Ep(EpBody {
            ep: e,
            pz: pz_h as usize,
            recv_evd: recv_h as usize,
            request_evd: request_h as usize,
            connect_evd: connect_h as usize,
            srq: srq_addr,
            private_data: Mutex::new(Vec::new()),
            remote: Mutex::new(SockStorage::default()),
        });
        let (h, _) =
            handle::register(Object::new(ia_obj.provider(), ia_h as usize, body), Some(id));
        // SAFETY: checked non-null.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// `ep_create_func(ia, pz, recv_evd, request_evd, connect_evd, &attr, &ep)`.
pub(crate) unsafe extern "C" fn ep_create(
    ia_h: abi::IaHandle,
    pz_h: abi::PzHandle,
    recv_h: abi::EvdHandle,
    request_h: abi::EvdHandle,
    connect_h: abi::EvdHandle,
    attr: *const abi::EpAttr,
    out: *mut abi::EpHandle,
) -> abi::Return {
    // SAFETY: forwarded from libdat2's caller.
    unsafe { create("dat_ep_create", ia_h, pz_h, recv_h, request_h, connect_h, None, attr, out) }
}

/// `ep_create_with_srq_func(ia, pz, recv_evd, request_evd, connect_evd, srq, &attr, &ep)`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn ep_create_with_srq(
    ia_h: abi::IaHandle,
    pz_h: abi::PzHandle,
    recv_h: abi::EvdHandle,
    request_h: abi::EvdHandle,
    connect_h: abi::EvdHandle,
    srq_h: abi::SrqHandle,
    attr: *const abi::EpAttr,
    out: *mut abi::EpHandle,
) -> abi::Return {
    // SAFETY: forwarded from libdat2's caller.
    unsafe {
        create(
            "dat_ep_create_with_srq",
            ia_h,
            pz_h,
            recv_h,
            request_h,
            connect_h,
            Some(srq_h),
            attr,
            out,
        )
    }
}

/// `ep_query_func(ep, mask, &param)`: every field, whatever the mask.
pub(crate) unsafe extern "C" fn ep_query(
    ep_h: abi::EpHandle,
    _mask: abi::EpParamMask,
    param: *mut abi::EpParam,
) -> abi::Return {
    call("dat_ep_query", || {
        let o = ep(ep_h)?;
        let b = ep_body(&o);
        let param = required(param, 3, "dat_ep_query's parameter pointer")?;
        let ia_obj = ia(o.ia as abi::IaHandle)?;
        let a = b.ep.attr();
        let mut p = abi::EpParam::new_zeroed();
        p.ia_handle = o.ia as abi::IaHandle;
        p.ep_state = b.ep.state().to_raw();
        p.local_ia_address_ptr = ia_body(&ia_obj).address.as_ptr();
        p.local_port_qual = 0;
        match b.ep.remote_address() {
            Some(remote) => {
                let mut slot = b.remote.lock().unwrap_or_else(|e| e.into_inner());
                *slot = SockStorage::new(remote);
                p.remote_ia_address_ptr = slot.as_ptr();
                p.remote_port_qual = u64::from(remote.port());
            }
            None => {
                // A pointer to a zero address, never NULL: consumers print it unconditionally.
                let mut slot = b.remote.lock().unwrap_or_else(|e| e.into_inner());
                *slot = SockStorage::new(std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
                p.remote_ia_address_ptr = slot.as_ptr();
            }
        }
        p.pz_handle = b.pz as abi::PzHandle;
        p.recv_evd_handle = b.recv_evd as abi::EvdHandle;
        p.request_evd_handle = b.request_evd as abi::EvdHandle;
        p.connect_evd_handle = b.connect_evd as abi::EvdHandle;
        p.srq_handle = b.srq as abi::SrqHandle;
        let count = |v: u32| v.min(i32::MAX as u32) as abi::Count;
        p.ep_attr.service_type = service_type::RC;
        p.ep_attr.max_message_size = a.max_message_size;
        p.ep_attr.max_rdma_size = a.max_rdma_size;
        p.ep_attr.max_recv_dtos = count(a.max_recv_dtos);
        p.ep_attr.max_request_dtos = count(a.max_request_dtos);
        p.ep_attr.max_recv_iov = count(a.max_recv_iov);
        p.ep_attr.max_request_iov = count(a.max_request_iov);
        p.ep_attr.max_rdma_read_in = count(a.max_rdma_read_in);
        p.ep_attr.max_rdma_read_out = count(a.max_rdma_read_out);
        p.ep_attr.max_rdma_read_iov = count(a.max_request_iov);
        p.ep_attr.max_rdma_write_iov = count(a.max_request_iov);
        // SAFETY: checked non-null; the consumer's struct.
        unsafe { param.write(p) };
        Ok(())
    })
}

fn conn_qual(q: abi::ConnQual, arg: u32) -> DatResult<u16> {
    u16::try_from(q).map_err(|_| {
        DatError::invalid_parameter(arg)
            .with_detail(format!("connection qualifier {q}: ferrodat's are TCP ports, 0..=65535"))
    })
}

fn timeout(t: abi::Timeout) -> Option<Duration> {
    (t != abi::TIMEOUT_INFINITE).then(|| Duration::from_micros(t.into()))
}

/// The consumer's private data as a slice: `size` bytes at `data`, argument `arg` (its
/// size is argument `arg - 1`).
///
/// # Safety
/// If `size` > 0, `data` must point to `size` readable bytes.
pub(crate) unsafe fn private_data<'a>(
    size: abi::Count,
    data: *const libc::c_void,
    arg: u32,
) -> DatResult<&'a [u8]> {
    match size {
        n if n < 0 => Err(DatError::invalid_parameter(arg - 1)
            .with_detail(format!("a negative private data size {n}"))),
        n if n > 0 && data.is_null() => Err(DatError::invalid_parameter(arg).with_detail(format!(
            "{n} bytes of private data at a NULL pointer; pass the data or size 0"
        ))),
        // SAFETY: forwarded.
        _ => unsafe { slice(data.cast::<u8>(), size, arg) },
    }
}

/// `ep_connect_func(ep, remote, conn_qual, timeout, pd_size, pd, qos, flags)`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn ep_connect(
    ep_h: abi::EpHandle,
    remote: abi::IaAddressPtr,
    remote_conn_qual: abi::ConnQual,
    t: abi::Timeout,
    pd_size: abi::Count,
    pd: *mut libc::c_void,
    _qos: abi::Qos,
    _flags: abi::ConnectFlags,
) -> abi::Return {
    call("dat_ep_connect", || {
        let o = ep(ep_h)?;
        // SAFETY: the consumer's sockaddr.
        let ip = unsafe { ip_of(remote, 2) }?;
        let q = conn_qual(remote_conn_qual, 3)?;
        // SAFETY: the consumer's `pd_size` bytes.
        let data = unsafe { private_data(pd_size, pd, 6) }?;
        ep_body(&o).ep.connect(ip, q, timeout(t), data)
    })
}

/// `ep_dup_connect_func(ep, dup_ep, timeout, pd_size, pd, qos)`.
pub(crate) unsafe extern "C" fn ep_dup_connect(
    ep_h: abi::EpHandle,
    dup_h: abi::EpHandle,
    t: abi::Timeout,
    pd_size: abi::Count,
    pd: *mut libc::c_void,
    _qos: abi::Qos,
) -> abi::Return {
    call("dat_ep_dup_connect", || {
        let o = ep(ep_h)?;
        let dup = handle::get(dup_h, handle_type::EP, subtype::INVALID_HANDLE2)?;
        // SAFETY: the consumer's `pd_size` bytes.
        let data = unsafe { private_data(pd_size, pd, 5) }?;
        ep_body(&o).ep.dup_connect(&ep_body(&dup).ep, timeout(t), data)
    })
}

/// `ep_disconnect_func(ep, flags)`.
pub(crate) unsafe extern "C" fn ep_disconnect(
    ep_h: abi::EpHandle,
    flags: abi::CloseFlags,
) -> abi::Return {
    call("dat_ep_disconnect", || {
        let o = ep(ep_h)?;
        let mode = DisconnectMode::from_close_flags(flags).ok_or_else(|| {
            DatError::invalid_parameter(2).with_detail(format!(
                "dat_ep_disconnect: close flags {flags}; use DAT_CLOSE_ABRUPT_FLAG or \
                 DAT_CLOSE_GRACEFUL_FLAG"
            ))
        })?;
        ep_body(&o).ep.disconnect(mode)
    })
}

/// How many IOV segments fit on the stack; longer IOVs (beyond what a QP takes anyway) go
/// to the heap.
const STACK_IOV: usize = 16;

/// Runs `f` on the consumer's IOV converted to engine triplets, without allocating for the
/// usual few segments.
///
/// # Safety
/// If `count` > 0, `iov` must point to `count` readable triplets.
pub(crate) unsafe fn with_iov<R>(
    count: abi::Count,
    iov: *const abi::LmrTriplet,
    f: impl FnOnce(&[LmrTriplet]) -> DatResult<R>,
) -> DatResult<R> {
    // SAFETY: forwarded.
    let segs = unsafe { slice(iov, count, 3) }?;
    if segs.len() <= STACK_IOV {
        let mut buf = [MaybeUninit::<LmrTriplet>::uninit(); STACK_IOV];
        for (d, s) in buf.iter_mut().zip(segs) {
            d.write(triplet(s));
        }
        // SAFETY: the first segs.len() elements were just written.
        let done =
            unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<LmrTriplet>(), segs.len()) };
        f(done)
    } else {
        let v: Vec<LmrTriplet> = segs.iter().map(triplet).collect();
        f(&v)
    }
}

/// The consumer's remote triplet.
///
/// # Safety
/// `r` must be NULL or point to a readable `DAT_RMR_TRIPLET`.
pub(crate) unsafe fn remote(r: *const abi::RmrTriplet, arg: u32) -> DatResult<RmrTriplet> {
    if r.is_null() {
        return Err(DatError::invalid_parameter(arg)
            .with_detail("a NULL remote IOV; pass the peer's DAT_RMR_TRIPLET"));
    }
    // SAFETY: non-null; the consumer's triplet.
    let r = unsafe { r.read_unaligned() };
    Ok(RmrTriplet {
        rmr_context: r.rmr_context,
        virtual_address: r.virtual_address,
        segment_length: u64::from(r.segment_length),
    })
}

fn cookie(c: abi::DtoCookie) -> u64 {
    // SAFETY: every member of the union covers its 8 bytes.
    unsafe { c.as_64 }
}

/// `ep_post_send_func(ep, count, iov, cookie, flags)`.
pub(crate) unsafe extern "C" fn ep_post_send(
    ep_h: abi::EpHandle,
    count: abi::Count,
    iov: *mut abi::LmrTriplet,
    c: abi::DtoCookie,
    flags: abi::CompletionFlags,
) -> abi::Return {
    call("dat_ep_post_send", || {
        let o = ep(ep_h)?;
        // SAFETY: the consumer's IOV.
        unsafe { with_iov(count, iov, |l| ep_body(&o).ep.post_send(l, cookie(c), flags)) }
    })
}

/// `ep_post_recv_func(ep, count, iov, cookie, flags)`.
pub(crate) unsafe extern "C" fn ep_post_recv(
    ep_h: abi::EpHandle,
    count: abi::Count,
    iov: *mut abi::LmrTriplet,
    c: abi::DtoCookie,
    flags: abi::CompletionFlags,
) -> abi::Return {
    call("dat_ep_post_recv", || {
        let o = ep(ep_h)?;
        // SAFETY: the consumer's IOV.
        unsafe { with_iov(count, iov, |l| ep_body(&o).ep.post_recv(l, cookie(c), flags)) }
    })
}

/// `ep_post_rdma_read_func(ep, count, iov, cookie, &remote, flags)`.
pub(crate) unsafe extern "C" fn ep_post_rdma_read(
    ep_h: abi::EpHandle,
    count: abi::Count,
    iov: *mut abi::LmrTriplet,
    c: abi::DtoCookie,
    r: *const abi::RmrTriplet,
    flags: abi::CompletionFlags,
) -> abi::Return {
    call("dat_ep_post_rdma_read", || {
        let o = ep(ep_h)?;
        // SAFETY: the consumer's triplet.
        let r = unsafe { remote(r, 5) }?;
        // SAFETY: the consumer's IOV.
        unsafe { with_iov(count, iov, |l| ep_body(&o).ep.post_rdma_read(l, cookie(c), &r, flags)) }
    })
}

/// `ep_post_rdma_write_func(ep, count, iov, cookie, &remote, flags)`.
pub(crate) unsafe extern "C" fn ep_post_rdma_write(
    ep_h: abi::EpHandle,
    count: abi::Count,
    iov: *mut abi::LmrTriplet,
    c: abi::DtoCookie,
    r: *const abi::RmrTriplet,
    flags: abi::CompletionFlags,
) -> abi::Return {
    call("dat_ep_post_rdma_write", || {
        let o = ep(ep_h)?;
        // SAFETY: the consumer's triplet.
        let r = unsafe { remote(r, 5) }?;
        // SAFETY: the consumer's IOV.
        unsafe { with_iov(count, iov, |l| ep_body(&o).ep.post_rdma_write(l, cookie(c), &r, flags)) }
    })
}

/// `ep_get_status_func(ep, &state, &recv_idle, &request_idle)`: every output optional
/// (dtestx passes a NULL state). The engine does not yet expose whether the queues are
/// idle, so both idle flags read FALSE ("may have work outstanding"), never a guess of TRUE.
pub(crate) unsafe extern "C" fn ep_get_status(
    ep_h: abi::EpHandle,
    state: *mut abi::EpState,
    recv_idle: *mut abi::Boolean,
    request_idle: *mut abi::Boolean,
) -> abi::Return {
    call("dat_ep_get_status", || {
        let o = ep(ep_h)?;
        // SAFETY (all three): NULL or the consumer's variables.
        unsafe {
            put(state, ep_body(&o).ep.state().to_raw());
            put(recv_idle, FALSE);
            put(request_idle, FALSE);
        }
        Ok(())
    })
}

/// `ep_reset_func(ep)`.
pub(crate) unsafe extern "C" fn ep_reset(ep_h: abi::EpHandle) -> abi::Return {
    call("dat_ep_reset", || ep_body(&*ep(ep_h)?).ep.reset())
}

/// `ep_free_func(ep)`: ends any connection (abruptly) and frees the endpoint.
pub(crate) unsafe extern "C" fn ep_free(ep_h: abi::EpHandle) -> abi::Return {
    call("dat_ep_free", || {
        handle::free(ep_h, handle_type::EP, subtype::INVALID_HANDLE_EP, |o| {
            let Body::Ep(b) = &o.body else { unreachable!("type checked") };
            b.ep.clone().free()
        })
    })
}
