//! Shared receive queues.

use crate::body::{Body, SrqBody};
use crate::ep::with_iov;
use crate::handle::{self, Object};
use crate::ia::ia;
use crate::mem::{pz, pz_body};
use crate::ret::{call, required};
use ferrodat_abi::dat::{self as abi, VALUE_UNKNOWN, handle_type, subtype};
use ferrodat_engine::error::{DatError, DatResult};
use ferrodat_engine::srq::Srq;
use std::sync::Arc;

pub(crate) fn srq(h: abi::SrqHandle) -> DatResult<Arc<Object>> {
    handle::get(h, handle_type::SRQ, subtype::INVALID_HANDLE_SRQ)
}

pub(crate) fn srq_body(o: &Object) -> &SrqBody {
    match &o.body {
        Body::Srq(b) => b,
        _ => unreachable!("handle::get checked the type"),
    }
}

/// `srq_create_func(ia, pz, &attr, &srq)`.
pub(crate) unsafe extern "C" fn srq_create(
    ia_h: abi::IaHandle,
    pz_h: abi::PzHandle,
    attr: *mut abi::SrqAttr,
    out: *mut abi::SrqHandle,
) -> abi::Return {
    call("dat_srq_create", || {
        let ia_obj = ia(ia_h)?;
        let pz_obj = pz(pz_h, subtype::INVALID_HANDLE_PZ)?;
        let out = required(out, 4, "dat_srq_create's SRQ handle pointer")?;
        if pz_obj.ia != ia_h as usize {
            return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_PZ)
                .with_detail("dat_srq_create: the PZ belongs to another IA"));
        }
        if attr.is_null() {
            return Err(
                DatError::invalid_parameter(3).with_detail("dat_srq_create: NULL attributes")
            );
        }
        // SAFETY: non-null; the consumer's DAT_SRQ_ATTR.
        let a = unsafe { attr.read_unaligned() };
        let (Ok(dtos), Ok(iov)) = (u32::try_from(a.max_recv_dtos), u32::try_from(a.max_recv_iov))
        else {
            return Err(DatError::invalid_parameter(3).with_detail(format!(
                "dat_srq_create: max_recv_dtos {} / max_recv_iov {} must not be negative",
                a.max_recv_dtos, a.max_recv_iov
            )));
        };
        // An SRQ that could hold no receive is no SRQ anyone can have (as an EVD of qlen 0
        // is none); and the man page: "The Consumer must set low_watermark to
        // DAT_SRQ_LW_DEFAULT" (a watermark is set later with dat_srq_set_lw; illumos dapl
        // refuses any other value here too).
        if dtos == 0 || iov == 0 || a.low_watermark != 0 {
            return Err(DatError::invalid_parameter(3).with_detail(format!(
                "dat_srq_create: max_recv_dtos {dtos}, max_recv_iov {iov}, low_watermark {}; \
                 an SRQ holds at least one receive of at least one segment, and its low \
                 watermark must be DAT_SRQ_LW_DEFAULT (0) at create",
                a.low_watermark
            )));
        }
        let s = Srq::create(pz_body(&pz_obj).pz(), dtos, iov)?;
        let body = Body::Srq(SrqBody { srq: s, pz: pz_h as usize });
        let (h, _) = handle::register(Object::new(ia_obj.provider(), ia_h as usize, body), None);
        // SAFETY: checked non-null.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// `srq_free_func(srq)`: refused while endpoints use it.
pub(crate) unsafe extern "C" fn srq_free(srq_h: abi::SrqHandle) -> abi::Return {
    call("dat_srq_free", || {
        let users = handle::find(handle_type::EP, |o| match &o.body {
            Body::Ep(b) => b.srq == srq_h as usize,
            _ => false,
        });
        if !users.is_empty() && !srq_h.is_null() {
            return Err(DatError::invalid_state(subtype::INVALID_STATE_SRQ_IN_USE).with_detail(
                format!(
                    "dat_srq_free: {} endpoint(s) still receive from the SRQ; free them first",
                    users.len()
                ),
            ));
        }
        handle::free(srq_h, handle_type::SRQ, subtype::INVALID_HANDLE_SRQ, |_| Ok(()))
    })
}

/// `srq_post_recv_func(srq, count, iov, cookie)`.
pub(crate) unsafe extern "C" fn srq_post_recv(
    srq_h: abi::SrqHandle,
    count: abi::Count,
    iov: *mut abi::LmrTriplet,
    cookie: abi::DtoCookie,
) -> abi::Return {
    call("dat_srq_post_recv", || {
        let o = srq(srq_h)?;
        // SAFETY: every member of the union covers its 8 bytes.
        let c = unsafe { cookie.as_64 };
        let srq = &srq_body(&o).srq;
        // SAFETY: the consumer's IOV, read only up to the limit.
        unsafe { with_iov(count, iov, srq.recv_iov_limit(), |l| srq.post_recv(l, c)) }
    })
}

/// `srq_query_func(srq, mask, &param)`: every field, with the counts the engine keeps:
/// `outstanding_dto_count` is the receives posted and not yet completed; which of them an
/// endpoint has taken is known only at completion, so `available_dto_count` reads
/// DAT_VALUE_UNKNOWN; the low watermark is DAT_SRQ_LW_DEFAULT (none is offered).
pub(crate) unsafe extern "C" fn srq_query(
    srq_h: abi::SrqHandle,
    _mask: abi::SrqParamMask,
    param: *mut abi::SrqParam,
) -> abi::Return {
    call("dat_srq_query", || {
        let o = srq(srq_h)?;
        let b = srq_body(&o);
        let param = required(param, 3, "dat_srq_query's parameter pointer")?;
        let q = b.srq.query();
        let count = |v: u32| v.min(i32::MAX as u32) as abi::Count;
        let p = abi::SrqParam {
            ia_handle: o.ia as abi::IaHandle,
            srq_state: q.srq_state,
            pz_handle: b.pz as abi::PzHandle,
            max_recv_dtos: count(q.max_recv_dtos),
            max_recv_iov: count(q.max_recv_iov),
            low_watermark: count(q.low_watermark),
            available_dto_count: q.available_dto_count.map_or(VALUE_UNKNOWN, count),
            outstanding_dto_count: count(q.outstanding_dto_count),
        };
        // SAFETY: checked non-null; the consumer's struct.
        unsafe { param.write(p) };
        Ok(())
    })
}

/// A count argument of the SRQ calls (argument 2 of both).
fn srq_count(verb: &str, what: &str, v: abi::Count) -> DatResult<u32> {
    u32::try_from(v).map_err(|_| {
        DatError::invalid_parameter(2).with_detail(format!("{verb}: {what} {v} is negative"))
    })
}

/// `srq_resize_func(srq, max_recv_dtos)`: within what the device granted the SRQ, and not
/// below the receives outstanding (the engine's checks and answers).
pub(crate) unsafe extern "C" fn srq_resize(
    srq_h: abi::SrqHandle,
    max_recv_dtos: abi::Count,
) -> abi::Return {
    call("dat_srq_resize", || {
        let o = srq(srq_h)?;
        let n = srq_count("dat_srq_resize", "max_recv_dtos", max_recv_dtos)?;
        srq_body(&o).srq.resize(n)
    })
}

/// `srq_set_lw_func(srq, low_watermark)`: the engine checks the argument and answers
/// DAT_MODEL_NOT_SUPPORTED: it offers no SRQ low watermark (`srq_watermarks_supported` is
/// 0; the device's SRQ_LIMIT_REACHED event is not read yet).
pub(crate) unsafe extern "C" fn srq_set_lw(
    srq_h: abi::SrqHandle,
    low_watermark: abi::Count,
) -> abi::Return {
    call("dat_srq_set_lw", || {
        let o = srq(srq_h)?;
        let n = srq_count("dat_srq_set_lw", "low_watermark", low_watermark)?;
        srq_body(&o).srq.set_lw(n)
    })
}
