//! Endpoints: create, query, connect, disconnect, the DTO posts, status, reset and free.

use crate::body::{Body, EpBody, EpWiring};
use crate::evd::{evd, evd_body};
use crate::handle::{self, Object};
use crate::ia::{ia, ia_body};
use crate::mem::{pz, pz_body, triplet};
use crate::ret::{call, put, required, slice};
use crate::sockaddr::{SockStorage, ip_of};
use ferrodat_abi::dat::{
    self as abi, FALSE, TRUE, VALUE_UNKNOWN, WATERMARK_INFINITE, ep_field, handle_type, subtype,
};
use ferrodat_engine::ep::{Ep, EpAttr, EpParamUpdate};
use ferrodat_engine::ep_state::DisconnectMode;
use ferrodat_engine::error::{DatError, DatResult};
use ferrodat_engine::lmr::{LmrTriplet, RmrTriplet};
use std::mem::MaybeUninit;
use std::sync::Arc;
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

/// The engine attributes for a consumer's `DAT_EP_ATTR` (NULL: the provider's defaults):
/// every field, checked by the engine as `dat_ep_modify` checks it and kept as given, but
/// that a zero means "not set: the provider's default" where a zero cannot be meant, as
/// consumers that clear the struct and set a few fields expect (dtest, dtestsrq, MPI
/// stacks):
///
/// - `max_message_size`, `max_rdma_size`: no message or RDMA could be sized 0 (dtest passes
///   max_message_size 0); the default is the IA's maximum.
/// - the DTO and IOV counts: an endpoint with 0 could post nothing (OFA refuses 0 with a
///   DTO EVD given; this provider has always taken it as the default).
/// - `max_rdma_read_iov`, `max_rdma_write_iov` and `srq_soft_hw`: fields most consumers
///   never set (dtest and dtestsrq leave them 0, MPI stacks set them to 0; OFA ignores
///   them); the defaults are 4 segments (at most the IA's) and DAT_WATERMARK_INFINITE (no
///   watermark; none is offered).
///
/// `max_rdma_read_in`/`_out` are kept as given, 0 included: the man page's way to say the
/// endpoint serves or issues no RDMA READs (dtestsrq sets both to 0), as OFA keeps it. The
/// QoS and the completion flags are kept as given too (0 is BEST_EFFORT and
/// DAT_COMPLETION_DEFAULT_FLAG). A negative count or a bad named-attribute array is
/// `DAT_INVALID_PARAMETER` with `arg`, the attributes' argument of `verb`.
///
/// # Safety
/// `attr` must be NULL or point to a readable `DAT_EP_ATTR` whose named-attribute arrays
/// are as [`named_attrs`] needs them.
unsafe fn ep_attr(
    ia: &ferrodat_engine::ia::Ia,
    attr: *const abi::EpAttr,
    verb: &'static str,
    arg: u32,
) -> DatResult<Option<EpAttr>> {
    if attr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null; the consumer's struct.
    let a = unsafe { &*attr };
    let d = EpAttr::defaults(ia);
    let count = |v: abi::Count, what: &str| -> DatResult<u32> {
        u32::try_from(v).map_err(|_| {
            DatError::invalid_parameter(arg)
                .with_detail(format!("{verb}: ep_attr.{what} {v} is negative"))
        })
    };
    let or_default = |v: u32, default: u32| if v == 0 { default } else { v };
    let counted = |v: abi::Count, default: u32, what: &str| -> DatResult<u32> {
        Ok(or_default(count(v, what)?, default))
    };
    Ok(Some(EpAttr {
        service_type: a.service_type,
        max_message_size: or_default(a.max_message_size, d.max_message_size),
        max_rdma_size: or_default(a.max_rdma_size, d.max_rdma_size),
        qos: a.qos,
        recv_completion_flags: a.recv_completion_flags,
        request_completion_flags: a.request_completion_flags,
        max_recv_dtos: counted(a.max_recv_dtos, d.max_recv_dtos, "max_recv_dtos")?,
        max_request_dtos: counted(a.max_request_dtos, d.max_request_dtos, "max_request_dtos")?,
        max_recv_iov: counted(a.max_recv_iov, d.max_recv_iov, "max_recv_iov")?,
        max_request_iov: counted(a.max_request_iov, d.max_request_iov, "max_request_iov")?,
        max_rdma_read_in: count(a.max_rdma_read_in, "max_rdma_read_in")?,
        max_rdma_read_out: count(a.max_rdma_read_out, "max_rdma_read_out")?,
        // DAT_WATERMARK_INFINITE is the all-ones count; the engine judges the value.
        srq_soft_hw: or_default(a.srq_soft_hw as u32, d.srq_soft_hw),
        max_rdma_read_iov: counted(a.max_rdma_read_iov, d.max_rdma_read_iov, "max_rdma_read_iov")?,
        max_rdma_write_iov: counted(
            a.max_rdma_write_iov,
            d.max_rdma_write_iov,
            "max_rdma_write_iov",
        )?,
        // SAFETY: the consumer's arrays of that many entries.
        ep_transport_specific: unsafe {
            named_attrs(
                a.ep_transport_specific_count,
                a.ep_transport_specific,
                "ep_transport_specific",
                verb,
                arg,
            )
        }?,
        // SAFETY: as above.
        ep_provider_specific: unsafe {
            named_attrs(
                a.ep_provider_specific_count,
                a.ep_provider_specific,
                "ep_provider_specific",
                verb,
                arg,
            )
        }?,
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
        // The attributes and the handle pointer are the last two arguments.
        let attr_arg = if srq_h.is_some() { 7 } else { 6 };
        let out = required(out, attr_arg + 1, "the EP handle pointer")?;
        // DAT lets the PZ be NULL until dat_ep_modify sets it (OFA dapl creates the QP
        // then); this provider builds the QP at create, in its PZ. NULL DTO EVDs are fine:
        // those completions make no events.
        if pz_h.is_null() {
            return Err(DatError::new(abi::ret::MODEL_NOT_SUPPORTED, subtype::NO_SUBTYPE)
                .with_detail(format!(
                    "{verb} with a NULL PZ: ferrodat creates the endpoint's QP at once, in its \
                     PZ; pass the PZ here"
                )));
        }
        let pz_obj = pz(pz_h, subtype::INVALID_HANDLE_PZ)?;
        let nullable = |h: abi::EvdHandle, bad| {
            if h.is_null() { Ok(None) } else { evd(h, bad).map(Some) }
        };
        let recv = nullable(recv_h, subtype::INVALID_HANDLE_EVD_RECV)?;
        let request = nullable(request_h, subtype::INVALID_HANDLE_EVD_REQUEST)?;
        let connect = nullable(connect_h, subtype::INVALID_HANDLE_EVD_CONN)?;
        for (o, bad) in [
            (Some(&pz_obj), subtype::INVALID_HANDLE_PZ),
            (recv.as_ref(), subtype::INVALID_HANDLE_EVD_RECV),
            (request.as_ref(), subtype::INVALID_HANDLE_EVD_REQUEST),
        ] {
            if let Some(o) = o
                && o.ia != ia_h as usize
            {
                return Err(DatError::invalid_handle(bad)
                    .with_detail(format!("{verb}: an object of another IA")));
            }
        }
        // SAFETY: NULL or the consumer's DAT_EP_ATTR.
        let attr = unsafe { ep_attr(&ia_body(&ia_obj).ia, attr, verb, attr_arg) }?;
        let pz = pz_body(&pz_obj).pz();
        let recv_evd = recv.as_deref().map(|o| evd_body(o).evd());
        let request_evd = request.as_deref().map(|o| evd_body(o).evd());
        let connect_evd = connect.as_deref().map(|o| evd_body(o).evd());
        let (e, srq_addr) = match srq_h {
            None => (Ep::create_nullable(pz, recv_evd, request_evd, connect_evd, None, attr)?, 0),
            Some(srq_h) => {
                let s = crate::srq::srq(srq_h)?;
                let srq = &crate::srq::srq_body(&s).srq;
                let e =
                    Ep::create_nullable(pz, recv_evd, request_evd, connect_evd, Some(srq), attr)?;
                (e, srq_h as usize)
            }
        };
        let id = e.id();
        let wiring = EpWiring {
            pz: pz_h as usize,
            recv_evd: recv_h as usize,
            request_evd: request_h as usize,
            connect_evd: connect_h as usize,
        };
        let body = Body::Ep(EpBody::new(e, wiring, srq_addr));
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
        let q = b.ep.query();
        let w = b.wiring();
        let mut p = abi::EpParam::new_zeroed();
        p.ia_handle = o.ia as abi::IaHandle;
        p.ep_state = q.ep_state.to_raw();
        p.comm = abi::Comm {
            domain: q.comm.domain,
            r#type: q.comm.socket_type,
            protocol: q.comm.protocol,
        };
        p.local_ia_address_ptr = ia_body(&ia_obj).address.as_ptr();
        p.local_port_qual = q.local_port_qual;
        // A pointer to the peer's address, or to a zero address before any connection,
        // never NULL: consumers print it unconditionally.
        let remote = b.ep.remote_address().unwrap_or(std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
        let mut slot = b.remote.lock().unwrap_or_else(|e| e.into_inner());
        *slot = SockStorage::new(remote);
        p.remote_ia_address_ptr = slot.as_ptr();
        drop(slot);
        p.remote_port_qual = q.remote_port_qual;
        p.pz_handle = w.pz as abi::PzHandle;
        p.recv_evd_handle = w.recv_evd as abi::EvdHandle;
        p.request_evd_handle = w.request_evd as abi::EvdHandle;
        p.connect_evd_handle = w.connect_evd as abi::EvdHandle;
        p.srq_handle = b.srq as abi::SrqHandle;
        let a = &q.ep_attr;
        let count = |v: u32| v.min(i32::MAX as u32) as abi::Count;
        p.ep_attr = abi::EpAttr {
            service_type: a.service_type,
            max_message_size: a.max_message_size,
            max_rdma_size: a.max_rdma_size,
            qos: a.qos,
            recv_completion_flags: a.recv_completion_flags,
            request_completion_flags: a.request_completion_flags,
            max_recv_dtos: count(a.max_recv_dtos),
            max_request_dtos: count(a.max_request_dtos),
            max_recv_iov: count(a.max_recv_iov),
            max_request_iov: count(a.max_request_iov),
            max_rdma_read_in: count(a.max_rdma_read_in),
            max_rdma_read_out: count(a.max_rdma_read_out),
            // DAT_WATERMARK_INFINITE is the all-ones count.
            srq_soft_hw: a.srq_soft_hw as abi::Count,
            max_rdma_read_iov: count(a.max_rdma_read_iov),
            max_rdma_write_iov: count(a.max_rdma_write_iov),
            // The engine defines no endpoint attributes of either kind.
            ep_transport_specific_count: 0,
            ep_transport_specific: std::ptr::null_mut(),
            ep_provider_specific_count: 0,
            ep_provider_specific: std::ptr::null_mut(),
        };
        // SAFETY: checked non-null; the consumer's struct.
        unsafe { param.write(p) };
        Ok(())
    })
}

/// The longest list of transport- or provider-specific endpoint attributes read (this
/// provider defines none; the engine refuses any it is asked to set).
const MAX_NAMED_ATTRS: abi::Count = 64;

/// A `DAT_NAMED_ATTR` array of a `DAT_EP_ATTR` as name/value pairs (a NULL value reads as
/// empty); a bad array is `DAT_INVALID_PARAMETER` with `arg`, the argument of `verb` that
/// holds the attributes.
///
/// # Safety
/// If 0 < `count` <= [`MAX_NAMED_ATTRS`], `attrs` must point to `count` readable entries
/// whose names and values are NULL or C strings.
unsafe fn named_attrs(
    count: abi::Count,
    attrs: *const abi::NamedAttr,
    what: &str,
    verb: &str,
    arg: u32,
) -> DatResult<Vec<(String, String)>> {
    let bad = |why: String| {
        DatError::invalid_parameter(arg).with_detail(format!("{verb}: ep_attr.{what}: {why}"))
    };
    let list = match count {
        0 => &[][..],
        n if n < 0 => return Err(bad(format!("a negative count {n}"))),
        // This provider defines none; a longer list is not read (nor allocated for).
        n if n > MAX_NAMED_ATTRS => {
            return Err(bad(format!("{n} attributes; at most {MAX_NAMED_ATTRS} are taken")));
        }
        n if attrs.is_null() => return Err(bad(format!("{n} attributes at a NULL pointer"))),
        // SAFETY: non-null, and the consumer promises `n` entries.
        n => unsafe { std::slice::from_raw_parts(attrs, n as usize) },
    };
    let text = |p: *const std::ffi::c_char| {
        // SAFETY: non-null; the consumer's C string.
        unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
    };
    list.iter()
        .enumerate()
        .map(|(i, a)| {
            if a.name.is_null() {
                return Err(bad(format!("attribute {i} has a NULL name")));
            }
            let value = if a.value.is_null() { String::new() } else { text(a.value) };
            Ok((text(a.name), value))
        })
        .collect()
}

/// The engine's update for `dat_ep_modify(ep, mask, param)`: the endpoint's current
/// parameters with the fields `mask` names taken from the consumer's (handles validated).
/// Returns the objects behind the new handles too, held until the modify is done so that
/// none can be freed halfway.
///
/// # Safety
/// `p` is the consumer's `DAT_EP_PARAM`; its attribute arrays are read if the mask names
/// them (see [`named_attrs`]).
unsafe fn ep_update(
    b: &EpBody,
    mask: abi::EpParamMask,
    p: &abi::EpParam,
) -> DatResult<(EpParamUpdate, Vec<Arc<Object>>)> {
    let mut u = EpParamUpdate::from_current(&b.ep);
    let mut held = Vec::new();
    let has = |bit: abi::EpParamMask| mask & bit != 0;
    if has(ep_field::PZ_HANDLE) {
        u.pz = if p.pz_handle.is_null() {
            None
        } else {
            let o = pz(p.pz_handle, subtype::INVALID_HANDLE_PZ)?;
            let z = pz_body(&o).pz().clone();
            held.push(o);
            Some(z)
        };
    }
    for (bit, h, bad, slot) in [
        (
            ep_field::RECV_EVD_HANDLE,
            p.recv_evd_handle,
            subtype::INVALID_HANDLE_EVD_RECV,
            &mut u.recv_evd,
        ),
        (
            ep_field::REQUEST_EVD_HANDLE,
            p.request_evd_handle,
            subtype::INVALID_HANDLE_EVD_REQUEST,
            &mut u.request_evd,
        ),
        (
            ep_field::CONNECT_EVD_HANDLE,
            p.connect_evd_handle,
            subtype::INVALID_HANDLE_EVD_CONN,
            &mut u.connect_evd,
        ),
    ] {
        if !has(bit) {
            continue;
        }
        *slot = if h.is_null() {
            None
        } else {
            let o = evd(h, bad)?;
            let e = evd_body(&o).evd().clone();
            held.push(o);
            Some(e)
        };
    }
    let c = &p.ep_attr;
    let a = &mut u.ep_attr;
    let count = |v: abi::Count, name: &str| {
        u32::try_from(v).map_err(|_| {
            DatError::invalid_parameter(3)
                .with_detail(format!("dat_ep_modify: ep_attr.{name} {v} is negative"))
        })
    };
    // Fields taken as they are, and counts (DAT_COUNT, signed in C) that must not be
    // negative: each copied when its mask bit is set.
    macro_rules! take {
        ($($bit:ident => $field:ident),* $(,)?) => {
            $(if has(ep_field::$bit) {
                a.$field = c.$field;
            })*
        };
    }
    take!(
        EP_ATTR_SERVICE_TYPE => service_type,
        EP_ATTR_MAX_MESSAGE_SIZE => max_message_size,
        EP_ATTR_MAX_RDMA_SIZE => max_rdma_size,
        EP_ATTR_QOS => qos,
        EP_ATTR_RECV_COMPLETION_FLAGS => recv_completion_flags,
        EP_ATTR_REQUEST_COMPLETION_FLAGS => request_completion_flags,
    );
    macro_rules! count {
        ($($bit:ident => $field:ident),* $(,)?) => {
            $(if has(ep_field::$bit) {
                a.$field = count(c.$field, stringify!($field))?;
            })*
        };
    }
    count!(
        EP_ATTR_MAX_RECV_DTOS => max_recv_dtos,
        EP_ATTR_MAX_REQUEST_DTOS => max_request_dtos,
        EP_ATTR_MAX_RECV_IOV => max_recv_iov,
        EP_ATTR_MAX_REQUEST_IOV => max_request_iov,
        EP_ATTR_MAX_RDMA_READ_IN => max_rdma_read_in,
        EP_ATTR_MAX_RDMA_READ_OUT => max_rdma_read_out,
        EP_ATTR_MAX_RDMA_READ_IOV => max_rdma_read_iov,
        EP_ATTR_MAX_RDMA_WRITE_IOV => max_rdma_write_iov,
    );
    if has(ep_field::EP_ATTR_SRQ_SOFT_HW) {
        // DAT_WATERMARK_INFINITE is the all-ones count; the engine judges the value.
        a.srq_soft_hw = c.srq_soft_hw as u32;
    }
    if has(ep_field::EP_ATTR_NUM_TRANSPORT_ATTR | ep_field::EP_ATTR_TRANSPORT_SPECIFIC_ATTR) {
        // SAFETY: the consumer's array of that many entries.
        a.ep_transport_specific = unsafe {
            named_attrs(
                c.ep_transport_specific_count,
                c.ep_transport_specific,
                "ep_transport_specific",
                "dat_ep_modify",
                3,
            )
        }?;
    }
    if has(ep_field::EP_ATTR_NUM_PROVIDER_ATTR | ep_field::EP_ATTR_PROVIDER_SPECIFIC_ATTR) {
        // SAFETY: the consumer's array of that many entries.
        a.ep_provider_specific = unsafe {
            named_attrs(
                c.ep_provider_specific_count,
                c.ep_provider_specific,
                "ep_provider_specific",
                "dat_ep_modify",
                3,
            )
        }?;
    }
    Ok((u, held))
}

/// `ep_modify_func(ep, mask, &param)`: the fields `mask` names change, all or none; what
/// the engine refuses (a field that cannot change, one that cannot in this state, a value
/// beyond the QP) comes back as its error.
pub(crate) unsafe extern "C" fn ep_modify(
    ep_h: abi::EpHandle,
    mask: abi::EpParamMask,
    param: *const abi::EpParam,
) -> abi::Return {
    call("dat_ep_modify", || {
        let o = ep(ep_h)?;
        let b = ep_body(&o);
        if param.is_null() {
            return Err(DatError::invalid_parameter(3).with_detail(
                "dat_ep_modify: a NULL parameter struct; pass a DAT_EP_PARAM holding the \
                 fields the mask names",
            ));
        }
        // SAFETY: non-null; the consumer's DAT_EP_PARAM.
        let p = unsafe { &*param };
        let _one_at_a_time = b.modifying.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the consumer's struct and the arrays it names.
        let (update, _held) = unsafe { ep_update(b, mask, p) }?;
        b.ep.modify(mask, &update)?;
        let mut guard = b.wiring.lock().unwrap_or_else(|e| e.into_inner());
        let w = &mut *guard;
        for (bit, h, slot) in [
            (ep_field::PZ_HANDLE, p.pz_handle, &mut w.pz),
            (ep_field::RECV_EVD_HANDLE, p.recv_evd_handle, &mut w.recv_evd),
            (ep_field::REQUEST_EVD_HANDLE, p.request_evd_handle, &mut w.request_evd),
            (ep_field::CONNECT_EVD_HANDLE, p.connect_evd_handle, &mut w.connect_evd),
        ] {
            if mask & bit != 0 {
                *slot = h as usize;
            }
        }
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
/// size is argument `arg - 1`). A size beyond `max_private_data_size` is refused before
/// the slice is made: the engine may copy the data before it checks the length, and the
/// consumer's buffer need not be as long as a wrong size says.
///
/// # Safety
/// If 0 < `size` <= `max_private_data_size`, `data` must point to `size` readable bytes.
pub(crate) unsafe fn private_data<'a>(
    size: abi::Count,
    data: *const libc::c_void,
    arg: u32,
) -> DatResult<&'a [u8]> {
    const MAX: usize = ferrodat_engine::cm::MAX_PRIVATE_DATA;
    match size {
        n if n < 0 => Err(DatError::invalid_parameter(arg - 1)
            .with_detail(format!("a negative private data size {n}"))),
        n if n as usize > MAX => Err(DatError::invalid_parameter(arg - 1)
            .with_detail(format!("{n} bytes of private data; max_private_data_size is {MAX}"))),
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
/// usual few segments. A count above `max`, the most segments the endpoint or SRQ takes, is
/// refused before a segment is read: the consumer's array may not be that long.
///
/// # Safety
/// If 0 < `count` <= `max`, `iov` must point to `count` readable triplets.
pub(crate) unsafe fn with_iov<R>(
    count: abi::Count,
    iov: *const abi::LmrTriplet,
    max: usize,
    f: impl FnOnce(&[LmrTriplet]) -> DatResult<R>,
) -> DatResult<R> {
    if usize::try_from(count).is_ok_and(|n| n > max) {
        return Err(DatError::invalid_parameter(2)
            .with_detail(format!("{count} segments, where at most {max} are taken here")));
    }
    // SAFETY: forwarded (the count is within `max`).
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
        let ep = &ep_body(&o).ep;
        // SAFETY: the consumer's IOV, read only up to the limit.
        unsafe {
            with_iov(count, iov, ep.request_iov_limit(), |l| ep.post_send(l, cookie(c), flags))
        }
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
        let ep = &ep_body(&o).ep;
        // SAFETY: the consumer's IOV, read only up to the limit.
        unsafe { with_iov(count, iov, ep.recv_iov_limit(), |l| ep.post_recv(l, cookie(c), flags)) }
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
    // SAFETY: the consumer's arguments, passed on.
    unsafe {
        post_rdma(
            "dat_ep_post_rdma_read",
            ep_h,
            count,
            iov,
            c,
            r,
            flags,
            Ep::rdma_read_iov_limit,
            Ep::post_rdma_read,
        )
    }
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
    // SAFETY: as above.
    unsafe {
        post_rdma(
            "dat_ep_post_rdma_write",
            ep_h,
            count,
            iov,
            c,
            r,
            flags,
            Ep::rdma_write_iov_limit,
            Ep::post_rdma_write,
        )
    }
}

/// An RDMA READ or WRITE (`post`) with the remote triplet `r` (argument 5), its local IOV
/// held to `limit` (the endpoint's `max_rdma_read_iov` or `max_rdma_write_iov`).
///
/// # Safety
/// `iov` and `r` are the consumer's: `count` triplets, one triplet (or NULL, refused).
#[allow(clippy::too_many_arguments)]
unsafe fn post_rdma(
    verb: &'static str,
    ep_h: abi::EpHandle,
    count: abi::Count,
    iov: *mut abi::LmrTriplet,
    c: abi::DtoCookie,
    r: *const abi::RmrTriplet,
    flags: abi::CompletionFlags,
    limit: fn(&Ep) -> usize,
    post: fn(&Ep, &[LmrTriplet], u64, &RmrTriplet, u32) -> DatResult<()>,
) -> abi::Return {
    call(verb, || {
        let o = ep(ep_h)?;
        // SAFETY: the consumer's triplet.
        let r = unsafe { remote(r, 5) }?;
        let ep = &ep_body(&o).ep;
        // SAFETY: the consumer's IOV, read only up to the limit.
        unsafe { with_iov(count, iov, limit(ep), |l| post(ep, l, cookie(c), &r, flags)) }
    })
}

/// `ep_get_status_func(ep, &state, &recv_idle, &request_idle)`: every output optional
/// (dtestx passes a NULL state). An idle flag is TRUE when no DTO of that direction is
/// outstanding (an SRQ endpoint's receives are the SRQ's: its receive side reads idle).
pub(crate) unsafe extern "C" fn ep_get_status(
    ep_h: abi::EpHandle,
    state: *mut abi::EpState,
    recv_idle: *mut abi::Boolean,
    request_idle: *mut abi::Boolean,
) -> abi::Return {
    call("dat_ep_get_status", || {
        let o = ep(ep_h)?;
        let s = ep_body(&o).ep.get_status();
        let truth = |b: bool| if b { TRUE } else { FALSE };
        // SAFETY (all three): NULL or the consumer's variables.
        unsafe {
            put(state, s.state.to_raw());
            put(recv_idle, truth(s.recv_idle));
            put(request_idle, truth(s.request_idle));
        }
        Ok(())
    })
}

/// `ep_recv_query_func(ep, &nbufs_allocated, &bufs_alloc_span)`: both outputs required;
/// a count the engine cannot know is DAT_VALUE_UNKNOWN (for an SRQ endpoint the engine
/// answers DAT_MODEL_NOT_SUPPORTED, which comes back as is).
pub(crate) unsafe extern "C" fn ep_recv_query(
    ep_h: abi::EpHandle,
    nbufs_allocated: *mut abi::Count,
    bufs_alloc_span: *mut abi::Count,
) -> abi::Return {
    call("dat_ep_recv_query", || {
        let o = ep(ep_h)?;
        let nbufs = required(nbufs_allocated, 2, "dat_ep_recv_query's nbufs_allocated pointer")?;
        let span = required(bufs_alloc_span, 3, "dat_ep_recv_query's bufs_alloc_span pointer")?;
        let info = ep_body(&o).ep.recv_query()?;
        let count =
            |v: Option<u32>| v.map_or(VALUE_UNKNOWN, |n| n.min(i32::MAX as u32) as abi::Count);
        // SAFETY: both checked non-null; the consumer's variables.
        unsafe {
            nbufs.write(count(info.nbufs_allocated));
            span.write(count(info.bufs_alloc_span));
        }
        Ok(())
    })
}

/// A watermark argument: DAT_WATERMARK_INFINITE (the all-ones count) or a count.
fn watermark(v: abi::Count, arg: u32, name: &str) -> DatResult<u32> {
    match v {
        WATERMARK_INFINITE => Ok(u32::MAX),
        n if n < 0 => Err(DatError::invalid_parameter(arg).with_detail(format!(
            "{name} {n} is negative; give a count or DAT_WATERMARK_INFINITE"
        ))),
        n => Ok(n as u32),
    }
}

/// `ep_set_watermark_func(ep, soft_high, hard_high)`: the engine checks the arguments and
/// answers DAT_MODEL_NOT_SUPPORTED (it offers no endpoint watermarks,
/// `srq_watermarks_supported` is 0).
pub(crate) unsafe extern "C" fn ep_set_watermark(
    ep_h: abi::EpHandle,
    soft_high: abi::Count,
    hard_high: abi::Count,
) -> abi::Return {
    call("dat_ep_set_watermark", || {
        let o = ep(ep_h)?;
        let soft = watermark(soft_high, 2, "dat_ep_set_watermark: the soft high watermark")?;
        let hard = watermark(hard_high, 3, "dat_ep_set_watermark: the hard high watermark")?;
        ep_body(&o).ep.set_watermark(soft, hard)
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
