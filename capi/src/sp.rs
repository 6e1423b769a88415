//! Service points (PSP, RSP) and connection requests.

use crate::body::{Body, CrBody, PspBody, RspBody};
use crate::ep::{ep, ep_body, private_data};
use crate::evd::{evd, evd_body};
use crate::handle::{self, Object};
use crate::ia::{ia, ia_body};
use crate::ret::{call, required};
use ferrodat_abi::dat::{self as abi, handle_type, subtype};
use ferrodat_engine::error::{DatError, DatResult};
use ferrodat_engine::sp::{Psp, Rsp};
use std::sync::Arc;

fn conn_qual(q: abi::ConnQual) -> DatResult<u16> {
    u16::try_from(q).map_err(|_| {
        DatError::invalid_parameter(2)
            .with_detail(format!("connection qualifier {q}: ferrodat's are TCP ports, 0..=65535"))
    })
}

/// `psp_create_func(ia, conn_qual, evd, flags, &psp)`: consumer-created endpoints only.
pub(crate) unsafe extern "C" fn psp_create(
    ia_h: abi::IaHandle,
    q: abi::ConnQual,
    evd_h: abi::EvdHandle,
    flags: abi::PspFlags,
    out: *mut abi::PspHandle,
) -> abi::Return {
    call("dat_psp_create", || {
        let ia_obj = ia(ia_h)?;
        let evd_obj = evd(evd_h, subtype::INVALID_HANDLE_EVD_CR)?;
        let out = required(out, 5, "dat_psp_create's PSP handle pointer")?;
        // Unknown flags: the engine's DAT_INVALID_PARAMETER/ARG4.
        let (ia, evd) = (&ia_body(&ia_obj).ia, evd_body(&evd_obj).evd());
        let psp = Psp::create_with_flags(ia, conn_qual(q)?, evd, flags)?;
        let id = psp.id();
        let body = Body::Psp(PspBody { psp, evd: evd_h as usize, flags });
        let (h, _) =
            handle::register(Object::new(ia_obj.provider(), ia_h as usize, body), Some(id));
        // SAFETY: checked non-null.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// `psp_create_any_func(ia, &conn_qual, evd, flags, &psp)`: listens on a free connection
/// qualifier the engine picks and says which through `conn_qual`; consumer-created
/// endpoints only, as `dat_psp_create`.
pub(crate) unsafe extern "C" fn psp_create_any(
    ia_h: abi::IaHandle,
    q_out: *mut abi::ConnQual,
    evd_h: abi::EvdHandle,
    flags: abi::PspFlags,
    out: *mut abi::PspHandle,
) -> abi::Return {
    call("dat_psp_create_any", || {
        let ia_obj = ia(ia_h)?;
        let q_out = required(q_out, 2, "dat_psp_create_any's connection qualifier pointer")?;
        let evd_obj = evd(evd_h, subtype::INVALID_HANDLE_EVD_CR)?;
        let out = required(out, 5, "dat_psp_create_any's PSP handle pointer")?;
        if evd_obj.ia != ia_h as usize {
            return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_EVD_CR)
                .with_detail("dat_psp_create_any: the EVD belongs to another IA"));
        }
        // Unknown flags: the engine's DAT_INVALID_PARAMETER/ARG4.
        let psp = Psp::create_any(&ia_body(&ia_obj).ia, evd_body(&evd_obj).evd(), flags)?;
        let id = psp.id();
        let q = psp.conn_qual();
        let body = Body::Psp(PspBody { psp, evd: evd_h as usize, flags });
        let (h, _) =
            handle::register(Object::new(ia_obj.provider(), ia_h as usize, body), Some(id));
        // SAFETY: both checked non-null; the consumer's variables.
        unsafe {
            q_out.write(u64::from(q));
            out.write(h);
        }
        Ok(())
    })
}

/// `psp_query_func(psp, mask, &param)`.
pub(crate) unsafe extern "C" fn psp_query(
    psp_h: abi::PspHandle,
    _mask: abi::PspParamMask,
    param: *mut abi::PspParam,
) -> abi::Return {
    call("dat_psp_query", || {
        let o = handle::get(psp_h, handle_type::PSP, subtype::INVALID_HANDLE_PSP)?;
        let Body::Psp(b) = &o.body else { unreachable!("type checked") };
        let param = required(param, 3, "dat_psp_query's parameter pointer")?;
        let p = abi::PspParam {
            ia_handle: o.ia as abi::IaHandle,
            conn_qual: u64::from(b.psp.conn_qual()),
            evd_handle: b.evd as abi::EvdHandle,
            psp_flags: b.flags,
        };
        // SAFETY: checked non-null; the consumer's struct.
        unsafe { param.write(p) };
        Ok(())
    })
}

/// `psp_free_func(psp)`: stops listening.
pub(crate) unsafe extern "C" fn psp_free(psp_h: abi::PspHandle) -> abi::Return {
    call("dat_psp_free", || {
        handle::free(psp_h, handle_type::PSP, subtype::INVALID_HANDLE_PSP, |_| Ok(()))
    })
}

/// `rsp_create_func(ia, conn_qual, ep, evd, &rsp)`.
pub(crate) unsafe extern "C" fn rsp_create(
    ia_h: abi::IaHandle,
    q: abi::ConnQual,
    ep_h: abi::EpHandle,
    evd_h: abi::EvdHandle,
    out: *mut abi::RspHandle,
) -> abi::Return {
    call("dat_rsp_create", || {
        let ia_obj = ia(ia_h)?;
        let ep_obj = ep(ep_h)?;
        let evd_obj = evd(evd_h, subtype::INVALID_HANDLE_EVD_CR)?;
        let out = required(out, 5, "dat_rsp_create's RSP handle pointer")?;
        let rsp = Rsp::create(
            &ia_body(&ia_obj).ia,
            conn_qual(q)?,
            &ep_body(&ep_obj).ep,
            evd_body(&evd_obj).evd(),
        )?;
        let id = rsp.id();
        let body = Body::Rsp(RspBody { rsp: Some(rsp), ep: ep_h as usize, evd: evd_h as usize });
        let (h, _) =
            handle::register(Object::new(ia_obj.provider(), ia_h as usize, body), Some(id));
        // SAFETY: checked non-null.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// `rsp_query_func(rsp, mask, &param)`.
pub(crate) unsafe extern "C" fn rsp_query(
    rsp_h: abi::RspHandle,
    _mask: abi::RspParamMask,
    param: *mut abi::RspParam,
) -> abi::Return {
    call("dat_rsp_query", || {
        let o = handle::get(rsp_h, handle_type::RSP, subtype::INVALID_HANDLE_RSP)?;
        let Body::Rsp(b) = &o.body else { unreachable!("type checked") };
        let param = required(param, 3, "dat_rsp_query's parameter pointer")?;
        let rsp = b.rsp.as_ref().expect("a registered RSP holds its RSP");
        let p = abi::RspParam {
            ia_handle: o.ia as abi::IaHandle,
            conn_qual: u64::from(rsp.conn_qual()),
            evd_handle: b.evd as abi::EvdHandle,
            // NULL once the consumer freed the endpoint its request took.
            ep_handle: if rsp.ep().is_some() {
                b.ep as abi::EpHandle
            } else {
                std::ptr::null_mut()
            },
        };
        // SAFETY: checked non-null; the consumer's struct.
        unsafe { param.write(p) };
        Ok(())
    })
}

/// `rsp_free_func(rsp)`.
pub(crate) unsafe extern "C" fn rsp_free(rsp_h: abi::RspHandle) -> abi::Return {
    call("dat_rsp_free", || {
        handle::free(rsp_h, handle_type::RSP, subtype::INVALID_HANDLE_RSP, |o| {
            let Body::Rsp(b) = &mut o.body else { unreachable!("type checked") };
            b.rsp.take().expect("a registered RSP holds its RSP").free()
        })
    })
}

fn cr(h: abi::CrHandle) -> DatResult<Arc<Object>> {
    handle::get(h, handle_type::CR, subtype::INVALID_HANDLE_CR)
}

fn cr_body(o: &Object) -> &CrBody {
    match &o.body {
        Body::Cr(b) => b,
        _ => unreachable!("handle::get checked the type"),
    }
}

/// `cr_query_func(cr, mask, &param)`: the pointers stay valid until the CR is accepted or
/// rejected.
pub(crate) unsafe extern "C" fn cr_query(
    cr_h: abi::CrHandle,
    _mask: abi::CrParamMask,
    param: *mut abi::CrParam,
) -> abi::Return {
    call("dat_cr_query", || {
        let o = cr(cr_h)?;
        let b = cr_body(&o);
        let param = required(param, 3, "dat_cr_query's parameter pointer")?;
        let p = abi::CrParam {
            remote_ia_address_ptr: b.remote.as_ptr(),
            remote_port_qual: b.remote_port,
            private_data_size: b.private_data.len() as abi::Count,
            private_data: if b.private_data.is_empty() {
                std::ptr::null_mut()
            } else {
                b.private_data.as_ptr().cast_mut().cast()
            },
            local_ep_handle: b.ep as abi::EpHandle,
        };
        // SAFETY: checked non-null; the consumer's struct.
        unsafe { param.write(p) };
        Ok(())
    })
}

/// `cr_accept_func(cr, ep, pd_size, pd)`: the CR handle is used up on success.
pub(crate) unsafe extern "C" fn cr_accept(
    cr_h: abi::CrHandle,
    ep_h: abi::EpHandle,
    pd_size: abi::Count,
    pd: *mut libc::c_void,
) -> abi::Return {
    call("dat_cr_accept", || {
        let o = cr(cr_h)?;
        let ep_obj = if ep_h.is_null() { None } else { Some(ep(ep_h)?) };
        // SAFETY: the consumer's `pd_size` bytes.
        let data = unsafe { private_data(pd_size, pd, 4) }?;
        cr_body(&o).cr.accept(ep_obj.as_deref().map(|e| &ep_body(e).ep), data)?;
        drop(o);
        let _ = handle::free(cr_h, handle_type::CR, subtype::INVALID_HANDLE_CR, |_| Ok(()));
        Ok(())
    })
}

/// `cr_reject_func(cr, pd_size, pd)`: the requester gets PEER_REJECTED carrying the
/// private data; the CR handle is used up.
pub(crate) unsafe extern "C" fn cr_reject(
    cr_h: abi::CrHandle,
    pd_size: abi::Count,
    pd: *mut libc::c_void,
) -> abi::Return {
    call("dat_cr_reject", || {
        let o = cr(cr_h)?;
        // SAFETY: the consumer's `pd_size` bytes.
        let data = unsafe { private_data(pd_size, pd, 3) }?;
        let b = cr_body(&o);
        b.cr.reject_with(data)?;
        // An endpoint the provider made for the request goes back to it (OFA frees it).
        let provider_ep = b.provider_ep.then_some(b.ep as abi::EpHandle);
        drop(o);
        let _ = handle::free(cr_h, handle_type::CR, subtype::INVALID_HANDLE_CR, |_| Ok(()));
        if let Some(ep_h) = provider_ep {
            let _ = handle::free(ep_h, handle_type::EP, subtype::INVALID_HANDLE_EP, |_| Ok(()));
        }
        Ok(())
    })
}

/// `cr_handoff_func(cr, conn_qual)`: the request goes to the IA's service point on
/// `conn_qual`, which reports it with a new CR; this CR handle is used up.
pub(crate) unsafe extern "C" fn cr_handoff(cr_h: abi::CrHandle, q: abi::ConnQual) -> abi::Return {
    call("dat_cr_handoff", || {
        let o = cr(cr_h)?;
        cr_body(&o).cr.handoff(conn_qual(q)?)?;
        drop(o);
        let _ = handle::free(cr_h, handle_type::CR, subtype::INVALID_HANDLE_CR, |_| Ok(()));
        Ok(())
    })
}
