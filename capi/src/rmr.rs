//! Remote memory regions: create, query, bind (posted on an endpoint; its completion is a
//! `DAT_RMR_BIND_COMPLETION_EVENT` on the endpoint's request EVD, see `evd::to_c`) and free.
//! The engine's RMRs are type 1 memory windows (see `ferrodat_engine::rmr`).

use crate::body::{Body, RmrBody};
use crate::ep::{ep, ep_body};
use crate::handle::{self, Object};
use crate::mem::{lmr, lmr_body, pz, pz_body};
use crate::ret::{call, put, required};
use ferrodat_abi::dat::{self as abi, handle_type, rmr_scope, subtype, va_type};
use ferrodat_engine::error::{DatError, DatResult};
use ferrodat_engine::lmr::{LmrTriplet, MemPriv};
use ferrodat_engine::rmr::Rmr;
use std::sync::Arc;

fn rmr(h: abi::RmrHandle) -> DatResult<Arc<Object>> {
    handle::get(h, handle_type::RMR, subtype::INVALID_HANDLE_RMR)
}

fn rmr_body(o: &Object) -> &RmrBody {
    match &o.body {
        Body::Rmr(b) => b,
        _ => unreachable!("handle::get checked the type"),
    }
}

/// `rmr_create_func(pz, &rmr)`: an unbound window in the PZ.
pub(crate) unsafe extern "C" fn rmr_create(
    pz_h: abi::PzHandle,
    out: *mut abi::RmrHandle,
) -> abi::Return {
    call("dat_rmr_create", || {
        let pz_obj = pz(pz_h, subtype::INVALID_HANDLE_PZ)?;
        let out = required(out, 2, "dat_rmr_create's RMR handle pointer")?;
        let r = Rmr::create(pz_body(&pz_obj).pz())?;
        let id = r.id();
        let body = Body::Rmr(RmrBody { rmr: Some(r), pz: pz_h as usize });
        let (h, _) = handle::register(Object::new(pz_obj.provider(), pz_obj.ia, body), Some(id));
        // SAFETY: checked non-null; the consumer's variable.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// `rmr_create_for_ep_func(pz, &rmr)`: an RMR whose context only the connection it is
/// bound on may use (an InfiniBand type 2 window). The driver allocates type 1 windows
/// only, whose context every connection in the PZ can use, so handing one out here would
/// grant more than the consumer asked for: DAT_MODEL_NOT_SUPPORTED, as OFA dapl answers,
/// once the arguments are checked.
pub(crate) unsafe extern "C" fn rmr_create_for_ep(
    pz_h: abi::PzHandle,
    out: *mut abi::RmrHandle,
) -> abi::Return {
    call("dat_rmr_create_for_ep", || {
        pz(pz_h, subtype::INVALID_HANDLE_PZ)?;
        required(out, 2, "dat_rmr_create_for_ep's RMR handle pointer")?;
        Err(DatError::new(abi::ret::MODEL_NOT_SUPPORTED, subtype::NO_SUBTYPE).with_detail(
            "dat_rmr_create_for_ep: ferrodat's RMRs are type 1 memory windows, whose context \
             any connection in the PZ may use, not one connection only; use dat_rmr_create \
             (rmr_scope_supported is DAT_RMR_SCOPE_EP: a bind is posted on one endpoint)",
        ))
    })
}

/// `rmr_query_func(rmr, mask, &param)`: every field; the triplet and privileges are the
/// last bind posted (zero while unbound).
pub(crate) unsafe extern "C" fn rmr_query(
    rmr_h: abi::RmrHandle,
    _mask: abi::RmrParamMask,
    param: *mut abi::RmrParam,
) -> abi::Return {
    call("dat_rmr_query", || {
        let o = rmr(rmr_h)?;
        let b = rmr_body(&o);
        let param = required(param, 3, "dat_rmr_query's parameter pointer")?;
        let q = b.rmr().query();
        let (lmr_triplet, mem_priv) = match &q.binding {
            Some(bound) => (
                abi::LmrTriplet {
                    virtual_address: bound.triplet.virtual_address,
                    // A bind covers at most 2 GiB (the engine's MAX_BIND_LENGTH).
                    segment_length: bound.triplet.segment_length.min(u64::from(u32::MAX)) as u32,
                    lmr_context: bound.triplet.lmr_context,
                },
                bound.mem_priv.0,
            ),
            None => (abi::LmrTriplet::default(), 0),
        };
        let p = abi::RmrParam {
            ia_handle: o.ia as abi::IaHandle,
            pz_handle: b.pz as abi::PzHandle,
            lmr_triplet,
            mem_priv,
            rmr_context: q.rmr_context,
            rmr_scope: rmr_scope::EP,
            va_type: va_type::VA,
        };
        // SAFETY: checked non-null; the consumer's struct.
        unsafe { param.write(p) };
        Ok(())
    })
}

/// `rmr_bind_func(rmr, lmr, &triplet, mem_priv, va_type, ep, cookie, flags, &rmr_context)`:
/// posts the bind on `ep` (a zero-length triplet unbinds; the LMR may then be NULL) and
/// returns the RMR's new context through `rmr_context`, usable by the peer once the bind
/// completed.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn rmr_bind(
    rmr_h: abi::RmrHandle,
    lmr_h: abi::LmrHandle,
    triplet: *const abi::LmrTriplet,
    mem_priv: abi::MemPrivFlags,
    va: abi::VaType,
    ep_h: abi::EpHandle,
    cookie: abi::RmrCookie,
    flags: abi::CompletionFlags,
    context_out: *mut abi::RmrContext,
) -> abi::Return {
    call("dat_rmr_bind", || {
        let r = rmr(rmr_h)?;
        let lmr_obj = if lmr_h.is_null() { None } else { Some(lmr(lmr_h)?) };
        if triplet.is_null() {
            return Err(DatError::invalid_parameter(3).with_detail(
                "dat_rmr_bind: a NULL LMR triplet; pass the range to bind (length 0 unbinds)",
            ));
        }
        // SAFETY: non-null; the consumer's triplet.
        let t = unsafe { triplet.read_unaligned() };
        crate::mem::check_va_type("dat_rmr_bind", va, 5)?;
        let ep_obj = ep(ep_h)?;
        let range = LmrTriplet {
            lmr_context: t.lmr_context,
            virtual_address: t.virtual_address,
            segment_length: u64::from(t.segment_length),
        };
        // SAFETY: every member of the union covers its 8 bytes.
        let cookie = unsafe { cookie.as_64 };
        let context = rmr_body(&r).rmr().bind(
            lmr_obj.as_deref().map(|o| lmr_body(o).lmr()),
            &range,
            MemPriv(mem_priv),
            &ep_body(&ep_obj).ep,
            cookie,
            flags,
        )?;
        // The output is optional, as in OFA (an unbind has no use for it).
        // SAFETY: NULL or the consumer's variable.
        unsafe { put(context_out, context) };
        Ok(())
    })
}

/// `rmr_free_func(rmr)`, bound or not: its context fails from then on.
pub(crate) unsafe extern "C" fn rmr_free(rmr_h: abi::RmrHandle) -> abi::Return {
    call("dat_rmr_free", || {
        handle::free(rmr_h, handle_type::RMR, subtype::INVALID_HANDLE_RMR, |o| {
            let Body::Rmr(b) = &mut o.body else { unreachable!("type checked") };
            b.rmr.take().expect("a registered RMR holds its RMR").free()
        })
    })
}
