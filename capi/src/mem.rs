//! Protection zones and local memory regions.

use crate::body::{Body, LmrBody, PzBody};
use crate::handle::{self, Object};
use crate::ia::ia;
use crate::ret::{call, put, required, slice};
use ferrodat_abi::dat::{self as abi, handle_type, mem_type, subtype, va_type};
use ferrodat_engine::error::{DatError, DatResult};
use ferrodat_engine::lmr::{Lmr, LmrTriplet, MemPriv};
use std::sync::Arc;

pub(crate) fn pz(h: abi::PzHandle, bad: abi::ReturnSubtype) -> DatResult<Arc<Object>> {
    handle::get(h, handle_type::PZ, bad)
}

pub(crate) fn pz_body(o: &Object) -> &PzBody {
    match &o.body {
        Body::Pz(b) => b,
        _ => unreachable!("handle::get checked the type"),
    }
}

pub(crate) fn lmr(h: abi::LmrHandle) -> DatResult<Arc<Object>> {
    handle::get(h, handle_type::LMR, subtype::INVALID_HANDLE_LMR)
}

pub(crate) fn lmr_body(o: &Object) -> &LmrBody {
    match &o.body {
        Body::Lmr(b) => b,
        _ => unreachable!("handle::get checked the type"),
    }
}

/// `pz_create_func(ia, &pz)`.
pub(crate) unsafe extern "C" fn pz_create(
    ia_h: abi::IaHandle,
    out: *mut abi::PzHandle,
) -> abi::Return {
    call("dat_pz_create", || {
        let ia_obj = ia(ia_h)?;
        let out = required(out, 2, "dat_pz_create's PZ handle pointer")?;
        let pz = ferrodat_engine::pz::Pz::create(&crate::ia::ia_body(&ia_obj).ia)?;
        let body = Body::Pz(PzBody { pz: Some(pz) });
        let (h, _) = handle::register(Object::new(ia_obj.provider(), ia_h as usize, body), None);
        // SAFETY: checked non-null; the consumer's variable.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// `pz_query_func(pz, mask, &param)`.
pub(crate) unsafe extern "C" fn pz_query(
    pz_h: abi::PzHandle,
    _mask: abi::PzParamMask,
    param: *mut abi::PzParam,
) -> abi::Return {
    call("dat_pz_query", || {
        let o = pz(pz_h, subtype::INVALID_HANDLE_PZ)?;
        let param = required(param, 3, "dat_pz_query's parameter pointer")?;
        // SAFETY: checked non-null; the consumer's struct.
        unsafe { param.write(abi::PzParam { ia_handle: o.ia as abi::IaHandle }) };
        Ok(())
    })
}

/// `pz_free_func(pz)`: refused while LMRs, EPs or SRQs use it.
pub(crate) unsafe extern "C" fn pz_free(pz_h: abi::PzHandle) -> abi::Return {
    call("dat_pz_free", || {
        let me = pz_h as usize;
        let users = handle::find_any(|o| match &o.body {
            Body::Ep(b) => b.wiring().pz == me,
            Body::Lmr(b) => b.pz == me,
            Body::Rmr(b) => b.pz == me,
            Body::Srq(b) => b.pz == me,
            _ => false,
        });
        if !users.is_empty() && !pz_h.is_null() {
            return Err(DatError::invalid_state(subtype::INVALID_STATE_PZ_IN_USE).with_detail(
                format!(
                    "dat_pz_free: {} LMR(s), RMR(s), endpoint(s) or SRQ(s) still use the PZ; \
                     free them first",
                    users.len()
                ),
            ));
        }
        crate::ret::settle(|| {
            handle::free(pz_h, handle_type::PZ, subtype::INVALID_HANDLE_PZ, |o| {
                let Body::Pz(b) = &mut o.body else { unreachable!("type checked") };
                let pz = b.pz.take().expect("a registered PZ holds its PZ");
                pz.free().map_err(|(pz, e)| {
                    b.pz = Some(pz);
                    e
                })
            })
        })
    })
}

/// `lmr_create_func(ia, mem_type, region, length, pz, privileges, va_type, &lmr,
/// &lmr_context, &rmr_context, &registered_size, &registered_address)`: every memory type
/// (virtual memory, another LMR's memory, shared memory), virtual addressing.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn lmr_create(
    ia_h: abi::IaHandle,
    mem: abi::MemType,
    region: abi::RegionDescription,
    length: abi::Vlen,
    pz_h: abi::PzHandle,
    privileges: abi::MemPrivFlags,
    va: abi::VaType,
    lmr_out: *mut abi::LmrHandle,
    lmr_context: *mut abi::LmrContext,
    rmr_context: *mut abi::RmrContext,
    registered_size: *mut abi::Vlen,
    registered_address: *mut abi::Vaddr,
) -> abi::Return {
    call("dat_lmr_create", || {
        let ia_obj = ia(ia_h)?;
        let pz_obj = pz(pz_h, subtype::INVALID_HANDLE_PZ)?;
        if pz_obj.ia != ia_h as usize {
            return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_PZ)
                .with_detail("dat_lmr_create: the PZ belongs to another IA"));
        }
        let lmr_out = required(lmr_out, 8, "dat_lmr_create's LMR handle pointer")?;
        check_va_type("dat_lmr_create", va, 7)?;
        let pz = pz_body(&pz_obj).pz();
        let privileges = MemPriv(privileges);
        // What the region is, for dat_lmr_query: the description the consumer gave.
        let (lmr, region, length, shared_id) = match mem {
            mem_type::VIRTUAL => {
                // SAFETY: for DAT_MEM_TYPE_VIRTUAL the union holds `for_va`.
                let address = unsafe { region.for_va }.cast::<u8>();
                // SAFETY: DAT's contract: the consumer keeps the memory mapped until
                // dat_lmr_free, and the provider never makes a Rust reference to it.
                let lmr = unsafe { Lmr::create_virtual(pz, address, length, privileges) }?;
                (lmr, address as u64, length, None)
            }
            mem_type::LMR => {
                // SAFETY: for DAT_MEM_TYPE_LMR the union holds `for_lmr_handle`.
                let original_h = unsafe { region.for_lmr_handle };
                let original = lmr(original_h)?;
                let lmr = Lmr::create_from(lmr_body(&original).lmr(), pz, privileges)?;
                let size = lmr.registered_size();
                (lmr, original_h as u64, size, None)
            }
            mem_type::SHARED_VIRTUAL => {
                // SAFETY: for DAT_MEM_TYPE_SHARED_VIRTUAL the union holds
                // `for_shared_memory`.
                let shared = unsafe { region.for_shared_memory };
                if shared.shared_memory_id.is_null() {
                    return Err(DatError::invalid_parameter(3).with_detail(
                        "dat_lmr_create(DAT_MEM_TYPE_SHARED_VIRTUAL): a NULL shared_memory_id; \
                         pass the DAT_LMR_COOKIE naming the shared memory",
                    ));
                }
                // SAFETY: non-null; DAT_LMR_COOKIE points to DAT_LMR_COOKIE_SIZE chars of
                // the consumer's, copied here (dat_lmr_query hands out the copy).
                let id = Box::new(unsafe { shared.shared_memory_id.read_unaligned() });
                let address = shared.virtual_address.cast::<u8>();
                // SAFETY: as for DAT_MEM_TYPE_VIRTUAL: this process's mapping of the shared
                // memory stays until dat_lmr_free. The registration is this process's
                // own; the id only names the memory, as OFA's interface has it.
                let lmr = unsafe { Lmr::create_virtual(pz, address, length, privileges) }?;
                (lmr, address as u64, length, Some(id))
            }
            other => {
                return Err(DatError::invalid_parameter(2).with_detail(format!(
                    "dat_lmr_create: memory type {other:#x}; use DAT_MEM_TYPE_VIRTUAL, \
                     DAT_MEM_TYPE_LMR or DAT_MEM_TYPE_SHARED_VIRTUAL"
                )));
            }
        };
        // SAFETY (all four): NULL or the consumer's variables.
        unsafe {
            put(lmr_context, lmr.lmr_context());
            put(rmr_context, lmr.rmr_context());
            put(registered_size, lmr.registered_size());
            put(registered_address, lmr.registered_address());
        }
        let body = Body::Lmr(LmrBody {
            lmr: Some(lmr),
            pz: pz_h as usize,
            mem_type: mem,
            region,
            shared_id,
            length,
            privileges: privileges.0,
            va_type: va,
        });
        let (h, _) = handle::register(Object::new(ia_obj.provider(), ia_h as usize, body), None);
        // SAFETY: checked non-null.
        unsafe { lmr_out.write(h) };
        Ok(())
    })
}

/// `lmr_query_func(lmr, mask, &param)`.
pub(crate) unsafe extern "C" fn lmr_query(
    lmr_h: abi::LmrHandle,
    _mask: abi::LmrParamMask,
    param: *mut abi::LmrParam,
) -> abi::Return {
    call("dat_lmr_query", || {
        let o = lmr(lmr_h)?;
        let b = lmr_body(&o);
        let param = required(param, 3, "dat_lmr_query's parameter pointer")?;
        let p = abi::LmrParam {
            ia_handle: o.ia as abi::IaHandle,
            mem_type: b.mem_type,
            region_desc: b.region_description(),
            length: b.length,
            pz_handle: b.pz as abi::PzHandle,
            mem_priv: b.privileges,
            va_type: b.va_type,
            lmr_context: b.lmr().lmr_context(),
            rmr_context: b.lmr().rmr_context(),
            registered_size: b.lmr().registered_size(),
            registered_address: b.lmr().registered_address(),
        };
        // SAFETY: checked non-null; the consumer's struct.
        unsafe { param.write(p) };
        Ok(())
    })
}

/// `lmr_free_func(lmr)`: deregisters the memory; refused (the handle stays good) while an
/// RMR is bound in it.
pub(crate) unsafe extern "C" fn lmr_free(lmr_h: abi::LmrHandle) -> abi::Return {
    call("dat_lmr_free", || {
        handle::free(lmr_h, handle_type::LMR, subtype::INVALID_HANDLE_LMR, |o| {
            let Body::Lmr(b) = &mut o.body else { unreachable!("type checked") };
            let lmr = b.lmr.take().expect("a registered LMR holds its LMR");
            lmr.free().map_err(|(lmr, e)| {
                b.lmr = Some(lmr);
                e
            })
        })
    })
}

/// `lmr_sync_rdma_read_func` / `_write_func(ia, segments, count)`: memory is coherent with
/// RDMA here (`lmr_sync_req` FALSE), so this checks that every segment lies in an LMR of
/// the IA, as the engine's `Lmr::sync_rdma` does.
unsafe fn lmr_sync(
    verb: &'static str,
    ia_h: abi::IaHandle,
    segments: *const abi::LmrTriplet,
    count: abi::Vlen,
) -> abi::Return {
    call(verb, || {
        ia(ia_h)?;
        let n = abi::Count::try_from(count).map_err(|_| {
            DatError::invalid_parameter(3).with_detail(format!("{verb}: {count} segments"))
        })?;
        // SAFETY: the consumer's array of `count` triplets.
        let segs = unsafe { slice(segments, n, 2) }?;
        let lmrs = handle::find(handle_type::LMR, |o| o.ia == ia_h as usize);
        let lmr_refs: Vec<&Lmr> = lmrs.iter().map(|o| lmr_body(o).lmr()).collect();
        // Converted one by one: nothing is allocated by the consumer's count.
        Lmr::sync_rdma(&lmr_refs, segs.iter().map(triplet))
    })
}

pub(crate) unsafe extern "C" fn lmr_sync_rdma_read(
    ia_h: abi::IaHandle,
    segments: *const abi::LmrTriplet,
    count: abi::Vlen,
) -> abi::Return {
    // SAFETY: forwarded from libdat2's caller.
    unsafe { lmr_sync("dat_lmr_sync_rdma_read", ia_h, segments, count) }
}

pub(crate) unsafe extern "C" fn lmr_sync_rdma_write(
    ia_h: abi::IaHandle,
    segments: *const abi::LmrTriplet,
    count: abi::Vlen,
) -> abi::Return {
    // SAFETY: forwarded from libdat2's caller.
    unsafe { lmr_sync("dat_lmr_sync_rdma_write", ia_h, segments, count) }
}

/// A C `DAT_LMR_TRIPLET` as the engine takes it.
pub(crate) fn triplet(t: &abi::LmrTriplet) -> LmrTriplet {
    LmrTriplet {
        lmr_context: t.lmr_context,
        virtual_address: t.virtual_address,
        segment_length: u64::from(t.segment_length),
    }
}

/// A `DAT_VA_TYPE` argument (argument `arg` of `verb`): DAT_VA_TYPE_VA is offered;
/// zero-based addressing is a model the provider lacks (`zb_supported` is FALSE); anything
/// else is no type at all.
pub(crate) fn check_va_type(verb: &str, va: abi::VaType, arg: u32) -> Result<(), DatError> {
    match va {
        va_type::VA => Ok(()),
        va_type::ZB => Err(DatError::new(abi::ret::MODEL_NOT_SUPPORTED, subtype::NO_SUBTYPE)
            .with_detail(format!(
                "{verb}: zero-based addressing is not supported (zb_supported is FALSE); use \
                 DAT_VA_TYPE_VA"
            ))),
        other => Err(DatError::invalid_parameter(arg)
            .with_detail(format!("{verb}: va_type {other}; use DAT_VA_TYPE_VA"))),
    }
}
