//! IA open, query and close; the handle-generic calls (consumer context, handle type).

use crate::body::{Body, EvdBody, IaBody, NamedAttrs};
use crate::handle::{self, Object};
use crate::provider;
use crate::ret::{call, put};
use crate::sockaddr::SockStorage;
use ferrodat_abi::dat::{self as abi, FALSE, TRUE, evd_flags, handle_type, subtype};
use ferrodat_engine::ep::Ep;
use ferrodat_engine::error::{DatError, DatResult};
use ferrodat_engine::evd::Evd;
use ferrodat_engine::ia::{CloseMode, Ia};
use std::ffi::{CStr, c_char};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn truth(b: bool) -> abi::Boolean {
    if b { TRUE } else { FALSE }
}

/// Copies `s` into a fixed C char array, NUL-terminated (cut if too long).
fn fill_name(dst: &mut [c_char; abi::NAME_MAX_LENGTH], s: &str) {
    dst.fill(0);
    for (d, b) in dst.iter_mut().zip(s.bytes().take(abi::NAME_MAX_LENGTH - 1)) {
        *d = b as c_char;
    }
}

fn count(n: u32) -> abi::Count {
    n.min(i32::MAX as u32) as abi::Count
}

/// The IA object behind `h`.
pub(crate) fn ia(h: abi::IaHandle) -> DatResult<Arc<Object>> {
    handle::get(h, handle_type::IA, subtype::INVALID_HANDLE_IA)
}

pub(crate) fn ia_body(o: &Object) -> &IaBody {
    match &o.body {
        Body::Ia(b) => b,
        _ => unreachable!("handle::get checked the type"),
    }
}

/// `ia_open_func(name, async_evd_qlen, &async_evd, &ia)`.
pub(crate) unsafe extern "C" fn ia_open(
    name: abi::NamePtr,
    async_evd_qlen: abi::Count,
    async_evd: *mut abi::EvdHandle,
    ia_out: *mut abi::IaHandle,
) -> abi::Return {
    call("dat_ia_open", || {
        if name.is_null() {
            return Err(DatError::invalid_parameter(1).with_detail("dat_ia_open: NULL IA name"));
        }
        let ia_out = crate::ret::required(ia_out, 4, "dat_ia_open's IA handle pointer")?;
        let async_evd = crate::ret::required(async_evd, 3, "dat_ia_open's async EVD pointer")?;
        // SAFETY: non-null; libdat2 passes the consumer's NUL-terminated name.
        let name = unsafe { CStr::from_ptr(name) };
        let (entry, spec) = provider::lookup(name).ok_or_else(|| {
            DatError::new(abi::ret::PROVIDER_NOT_FOUND, subtype::NAME_NOT_REGISTERED).with_detail(
                format!(
                    "dat_ia_open: {name:?} is not a dat.conf entry ferrodat was initialised for"
                ),
            )
        })?;
        let ia = Ia::open(&name.to_string_lossy(), &spec)?;
        let attr = ia.attr().clone();
        let pattr = ia.provider_attr().clone();
        let body = IaBody {
            ia: ia.clone(),
            address: SockStorage::new(SocketAddr::new(attr.address, 0)),
            transport_attr: NamedAttrs::new(&attr.transport_attr),
            vendor_attr: NamedAttrs::new(&attr.vendor_attr),
            provider_attr: NamedAttrs::new(&pattr.provider_specific_attr),
            async_evd: AtomicUsize::new(0),
            closing: std::sync::atomic::AtomicBool::new(false),
        };
        let (h, obj) = handle::register_at(
            &entry.table,
            |me| Object::new(&entry.table, me, Body::Ia(body)),
            None,
        );
        let ia_addr = h as usize;
        // SAFETY: `async_evd` is non-null (checked) and the consumer's in/out variable.
        let given = unsafe { *async_evd };
        let result = (|| -> DatResult<()> {
            let evd_handle = if given.is_null() {
                let qlen = async_evd_qlen.max(1) as u32;
                let evd = Evd::create(&ia, qlen, evd_flags::ASYNC)?;
                ia.set_async_evd(&evd);
                let id = evd.id();
                let body = EvdBody { evd: Some(evd), cno: AtomicUsize::new(0) };
                let (eh, _) =
                    handle::register(Object::new(&entry.table, ia_addr, Body::Evd(body)), Some(id));
                eh
            } else if given == abi::EVD_ASYNC_EXISTS {
                // Another open instance has the IA's async EVD: this one reports it out of
                // scope (udat.h), and the consumer's variable keeps what it passed.
                abi::EVD_OUT_OF_SCOPE
            } else {
                let o = crate::evd::evd(given, subtype::INVALID_HANDLE_EVD_ASYNC)?;
                let evd = crate::evd::evd_body(&o).evd();
                if evd.flags() & evd_flags::ASYNC == 0 {
                    return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_EVD_ASYNC)
                        .with_detail(format!(
                            "dat_ia_open: the EVD passed as the async EVD was created with \
                             flags {:#x}, without DAT_EVD_ASYNC_FLAG; pass an async EVD or \
                             DAT_HANDLE_NULL for the provider to make one",
                            evd.flags()
                        )));
                }
                ia.set_async_evd(evd);
                given
            };
            ia_body(&obj).async_evd.store(evd_handle as usize, Ordering::Relaxed);
            if evd_handle != abi::EVD_OUT_OF_SCOPE {
                // SAFETY: checked non-null above.
                unsafe { async_evd.write(evd_handle) };
            }
            Ok(())
        })();
        if let Err(e) = result {
            drop(obj);
            drop(handle::take_all_of_ia(ia_addr));
            return Err(e);
        }
        // SAFETY: checked non-null above.
        unsafe { ia_out.write(h) };
        Ok(())
    })
}

/// `ia_query_func(ia, &async_evd, ia_mask, &ia_attr, provider_mask, &provider_attr)`: every
/// output is optional; all fields are filled whatever the masks ask.
pub(crate) unsafe extern "C" fn ia_query(
    ia_h: abi::IaHandle,
    async_evd: *mut abi::EvdHandle,
    ia_mask: abi::IaAttrMask,
    ia_attr: *mut abi::IaAttr,
    provider_mask: abi::ProviderAttrMask,
    provider_attr: *mut abi::ProviderAttr,
) -> abi::Return {
    call("dat_ia_query", || {
        let obj = ia(ia_h)?;
        let b = ia_body(&obj);
        // A mask that asks for fields needs somewhere to put them (OFA's rule; libdat2
        // itself passes NULL with a mask of 0). Without a mask, NULL just skips the struct.
        if ia_mask != 0 && ia_attr.is_null() {
            return Err(DatError::invalid_parameter(4).with_detail(format!(
                "dat_ia_query: ia_attr_mask {ia_mask:#x} asks for IA attributes but ia_attr is \
                 NULL; pass a DAT_IA_ATTR, or a mask of 0"
            )));
        }
        if provider_mask != 0 && provider_attr.is_null() {
            return Err(DatError::invalid_parameter(6).with_detail(format!(
                "dat_ia_query: provider_attr_mask {provider_mask:#x} asks for provider \
                 attributes but provider_attr is NULL; pass a DAT_PROVIDER_ATTR, or a mask of 0"
            )));
        }
        // SAFETY: NULL or the consumer's output variable.
        unsafe { put(async_evd, b.async_evd.load(Ordering::Relaxed) as abi::EvdHandle) };
        if !ia_attr.is_null() {
            let a = b.ia.attr();
            // SAFETY: non-null, the consumer's DAT_IA_ATTR (plain data, any bytes valid).
            let out = unsafe { &mut *ia_attr };
            fill_name(&mut out.adapter_name, &a.adapter_name);
            fill_name(&mut out.vendor_name, &a.vendor_name);
            out.hardware_version_major = a.hardware_version.0;
            out.hardware_version_minor = a.hardware_version.1;
            out.firmware_version_major = a.firmware_version.0;
            out.firmware_version_minor = a.firmware_version.1;
            out.ia_address_ptr = b.address.as_ptr();
            out.max_eps = count(a.max_eps);
            out.max_dto_per_ep = count(a.max_dto_per_ep);
            out.max_rdma_read_per_ep_in = count(a.max_rdma_read_per_ep_in);
            out.max_rdma_read_per_ep_out = count(a.max_rdma_read_per_ep_out);
            out.max_evds = count(a.max_evds);
            out.max_evd_qlen = count(a.max_evd_qlen);
            out.max_iov_segments_per_dto = count(a.max_iov_segments_per_dto);
            out.max_lmrs = count(a.max_lmrs);
            out.max_lmr_block_size = a.max_lmr_block_size.min(u64::from(u32::MAX)) as u32;
            out.max_lmr_virtual_address = a.max_lmr_virtual_address;
            out.max_pzs = count(a.max_pzs);
            out.max_message_size = a.max_message_size;
            out.max_rdma_size = a.max_rdma_size;
            out.max_rmrs = count(a.max_rmrs);
            out.max_rmr_target_address = a.max_rmr_target_address;
            out.max_srqs = count(a.max_srqs);
            out.max_ep_per_srq = count(a.max_ep_per_srq);
            out.max_recv_per_srq = count(a.max_recv_per_srq);
            out.max_iov_segments_per_rdma_read = count(a.max_iov_segments_per_rdma_read);
            out.max_iov_segments_per_rdma_write = count(a.max_iov_segments_per_rdma_write);
            out.max_rdma_read_in = count(a.max_rdma_read_in);
            out.max_rdma_read_out = count(a.max_rdma_read_out);
            out.max_rdma_read_per_ep_in_guaranteed = truth(a.max_rdma_read_per_ep_in_guaranteed);
            out.max_rdma_read_per_ep_out_guaranteed = truth(a.max_rdma_read_per_ep_out_guaranteed);
            out.zb_supported = truth(a.zb_supported);
            out.extension_supported = a.extension_supported;
            out.extension_version = a.extension_version as abi::Count;
            out.num_transport_attr = b.transport_attr.len();
            out.transport_attr = b.transport_attr.as_ptr();
            out.num_vendor_attr = b.vendor_attr.len();
            out.vendor_attr = b.vendor_attr.as_ptr();
        }
        if !provider_attr.is_null() {
            let p = b.ia.provider_attr();
            // SAFETY: non-null, the consumer's DAT_PROVIDER_ATTR.
            let out = unsafe { &mut *provider_attr };
            fill_name(&mut out.provider_name, &p.provider_name);
            out.provider_version_major = p.provider_version.0;
            out.provider_version_minor = p.provider_version.1;
            out.dapl_version_major = p.dapl_version.0;
            out.dapl_version_minor = p.dapl_version.1;
            out.lmr_mem_types_supported = p.lmr_mem_types_supported;
            out.iov_ownership_on_return = p.iov_ownership_on_return;
            out.dat_qos_supported = p.dat_qos_supported;
            out.completion_flags_supported = p.completion_flags_supported;
            out.is_thread_safe = truth(p.is_thread_safe);
            out.max_private_data_size = count(p.max_private_data_size);
            out.supports_multipath = truth(p.supports_multipath);
            out.ep_creator = p.ep_creator;
            out.pz_support = p.pz_support;
            out.optimal_buffer_alignment = p.optimal_buffer_alignment;
            for (row, src) in
                out.evd_stream_merging_supported.iter_mut().zip(&p.evd_stream_merging_supported)
            {
                for (d, s) in row.iter_mut().zip(src) {
                    *d = truth(*s);
                }
            }
            out.srq_supported = truth(p.srq_supported);
            out.srq_watermarks_supported = p.srq_watermarks_supported as abi::Count;
            out.srq_ep_pz_difference_supported = truth(p.srq_ep_pz_difference_supported);
            out.srq_info_supported = p.srq_info_supported as abi::Count;
            out.ep_recv_info_supported = p.ep_recv_info_supported as abi::Count;
            out.lmr_sync_req = truth(p.lmr_sync_req);
            out.dto_async_return_guaranteed = truth(p.dto_async_return_guaranteed);
            out.rdma_write_for_rdma_read_req = truth(p.rdma_write_for_rdma_read_req);
            out.rdma_read_lmr_rmr_context_exposure = truth(p.rdma_read_lmr_rmr_context_exposure);
            out.rmr_scope_supported = p.rmr_scope_supported;
            out.is_signal_safe = truth(p.is_signal_safe);
            out.ha_supported = truth(p.ha_supported);
            out.ha_loadbalancing = p.ha_loadbalancing;
            out.num_provider_specific_attr = b.provider_attr.len();
            out.provider_specific_attr = b.provider_attr.as_ptr();
        }
        Ok(())
    })
}

/// `ia_close_func(ia, flags)`. Abrupt: waiters on the IA's EVDs and CNOs return DAT_ABORT,
/// and everything made on the IA is destroyed with it (endpoints first, so their
/// connections end before their EVDs go). Graceful: refused
/// while anything but the async EVD this provider created is left.
pub(crate) unsafe extern "C" fn ia_close(
    ia_h: abi::IaHandle,
    flags: abi::CloseFlags,
) -> abi::Return {
    call("dat_ia_close", || {
        let obj = ia(ia_h)?;
        let ia_addr = ia_h as usize;
        let own_async = ia_body(&obj).async_evd.load(Ordering::Relaxed);
        match flags {
            abi::close_flags::ABRUPT => {}
            abi::close_flags::GRACEFUL => {
                let left: Vec<_> = handle::children_of_ia(ia_addr)
                    .into_iter()
                    .filter(|(a, _)| *a != own_async)
                    .collect();
                if !left.is_empty() {
                    let names: Vec<String> = left
                        .iter()
                        .map(|(a, k)| format!("{} {:#x}", handle::kind_name(*k), a))
                        .collect();
                    return Err(DatError::invalid_state(subtype::INVALID_STATE_IA_IN_USE)
                        .with_detail(format!(
                            "dat_ia_close(GRACEFUL): {} object(s) still open ({}); free them \
                             or close ABRUPT",
                            left.len(),
                            names.join(", ")
                        )));
                }
            }
            other => {
                return Err(DatError::invalid_parameter(2).with_detail(format!(
                    "dat_ia_close: close flags {other}; use DAT_CLOSE_ABRUPT_FLAG or \
                     DAT_CLOSE_GRACEFUL_FLAG"
                )));
            }
        }
        if ia_body(&obj).closing.swap(true, Ordering::AcqRel) {
            return Err(DatError::invalid_handle(subtype::INVALID_HANDLE_IA)
                .with_detail("dat_ia_close: another thread is closing this IA".to_string()));
        }
        let engine_ia = ia_body(&obj).ia.clone();
        drop(obj);
        if flags == abi::close_flags::ABRUPT {
            // Threads waiting on the IA's EVDs and CNOs return DAT_ABORT, and its
            // connections end, before the handles go (the consumer may never wake them).
            let _ = engine_ia.close(CloseMode::Abrupt);
        }
        let mut all = handle::take_all_of_ia(ia_addr);
        // Endpoints end their connections first; then the rest in an order that frees
        // users before what they use.
        let rank = |k: abi::HandleType| match k {
            handle_type::CR => 0,
            handle_type::RSP => 1,
            handle_type::PSP => 2,
            handle_type::EP => 3,
            handle_type::SRQ => 4,
            handle_type::LMR | handle_type::RMR => 5,
            handle_type::EVD => 6,
            handle_type::CNO => 7,
            handle_type::PZ => 8,
            _ => 9,
        };
        all.sort_by_key(|o| rank(o.kind));
        for o in all {
            if let Body::Ep(b) = &o.body {
                let _ = Ep::free(b.ep.clone());
            }
            drop(o);
        }
        Ok(())
    })
}

/// `set_consumer_context_func(handle, context)`.
pub(crate) unsafe extern "C" fn set_consumer_context(
    h: abi::Handle,
    context: abi::Context,
) -> abi::Return {
    call("dat_set_consumer_context", || {
        // SAFETY: every member of the union covers its 8 bytes.
        handle::get_any(h)?.set_context(unsafe { context.as_64 });
        Ok(())
    })
}

/// `get_consumer_context_func(handle, &context)`.
pub(crate) unsafe extern "C" fn get_consumer_context(
    h: abi::Handle,
    context: *mut abi::Context,
) -> abi::Return {
    call("dat_get_consumer_context", || {
        let v = handle::get_any(h)?.context();
        let out = crate::ret::required(context, 2, "dat_get_consumer_context's context pointer")?;
        // SAFETY: non-null, the consumer's variable.
        unsafe { out.write(abi::Context { as_64: v }) };
        Ok(())
    })
}

/// `get_handle_type_func(handle, &type)`.
pub(crate) unsafe extern "C" fn get_handle_type(
    h: abi::Handle,
    kind: *mut abi::HandleType,
) -> abi::Return {
    call("dat_get_handle_type", || {
        let k = handle::get_any(h)?.kind;
        let out = crate::ret::required(kind, 2, "dat_get_handle_type's type pointer")?;
        // SAFETY: non-null, the consumer's variable.
        unsafe { out.write(k) };
        Ok(())
    })
}
