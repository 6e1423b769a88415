//! Event dispatchers and consumer notification objects, and the translation of engine events
//! into `DAT_EVENT`s.

use crate::body::{Body, CnoBody, CrBody, EpBody, EpWiring, EvdBody};
use crate::handle::{self, Object};
use crate::ia::{ia, ia_body};
use crate::ret::{call, put, required};
use crate::sockaddr::SockStorage;
use ferrodat_abi::dat::{self as abi, event, handle_type, ib_status, proxy_type, subtype};
use ferrodat_engine::cno::Cno;
use ferrodat_engine::error::{DatError, DatResult};
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use zerocopy::FromZeros;

pub(crate) fn evd(h: abi::EvdHandle, bad: abi::ReturnSubtype) -> DatResult<Arc<Object>> {
    handle::get(h, handle_type::EVD, bad)
}

pub(crate) fn evd_body(o: &Object) -> &EvdBody {
    match &o.body {
        Body::Evd(b) => b,
        _ => unreachable!("handle::get checked the type"),
    }
}

fn cno(h: abi::CnoHandle) -> DatResult<Arc<Object>> {
    handle::get(h, handle_type::CNO, subtype::INVALID_HANDLE_CNO)
}

fn cno_body(o: &Object) -> &CnoBody {
    match &o.body {
        Body::Cno(b) => b,
        _ => unreachable!("handle::get checked the type"),
    }
}

/// An optional CNO argument: NULL is none.
fn optional_cno(h: abi::CnoHandle) -> DatResult<Option<Arc<Object>>> {
    if h.is_null() { Ok(None) } else { cno(h).map(Some) }
}

/// `evd_create_func(ia, qlen, cno, flags, &evd)`.
pub(crate) unsafe extern "C" fn evd_create(
    ia_h: abi::IaHandle,
    qlen: abi::Count,
    cno_h: abi::CnoHandle,
    flags: abi::EvdFlags,
    out: *mut abi::EvdHandle,
) -> abi::Return {
    call("dat_evd_create", || {
        let ia_obj = ia(ia_h)?;
        let out = required(out, 5, "dat_evd_create's EVD handle pointer")?;
        if qlen <= 0 {
            return Err(DatError::invalid_parameter(2)
                .with_detail(format!("dat_evd_create: qlen {qlen}; ask for at least 1 event")));
        }
        let cno_obj = optional_cno(cno_h)?;
        let cno = cno_obj.as_deref().map(|o| &cno_body(o).cno);
        let e = Evd::create_with_cno(&ia_body(&ia_obj).ia, qlen as u32, cno, flags)?;
        let id = e.id();
        let body = Body::Evd(EvdBody { evd: Some(e), cno: AtomicUsize::new(cno_h as usize) });
        let (h, _) =
            handle::register(Object::new(ia_obj.provider(), ia_h as usize, body), Some(id));
        // SAFETY: checked non-null.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// `evd_query_func(evd, mask, &param)`.
pub(crate) unsafe extern "C" fn evd_query(
    evd_h: abi::EvdHandle,
    _mask: abi::EvdParamMask,
    param: *mut abi::EvdParam,
) -> abi::Return {
    call("dat_evd_query", || {
        let o = evd(evd_h, subtype::NO_SUBTYPE)?;
        let b = evd_body(&o);
        let param = required(param, 3, "dat_evd_query's parameter pointer")?;
        let p = abi::EvdParam {
            ia_handle: o.ia as abi::IaHandle,
            evd_qlen: b.evd().qlen().min(i32::MAX as usize) as abi::Count,
            // Enabled or disabled, and waitable or not (the bits OR together, as in OFA).
            evd_state: b.evd().query().evd_state,
            cno_handle: b.cno.load(Ordering::Relaxed) as abi::CnoHandle,
            evd_flags: b.evd().flags(),
        };
        // SAFETY: checked non-null; the consumer's struct.
        unsafe { param.write(p) };
        Ok(())
    })
}

/// `evd_modify_cno_func(evd, cno)`: NULL detaches.
pub(crate) unsafe extern "C" fn evd_modify_cno(
    evd_h: abi::EvdHandle,
    cno_h: abi::CnoHandle,
) -> abi::Return {
    call("dat_evd_modify_cno", || {
        let o = evd(evd_h, subtype::NO_SUBTYPE)?;
        let c = optional_cno(cno_h)?;
        let b = evd_body(&o);
        b.evd().modify_cno(c.as_deref().map(|c| &cno_body(c).cno));
        b.cno.store(cno_h as usize, Ordering::Relaxed);
        Ok(())
    })
}

/// `evd_enable_func` / `evd_disable_func` / `evd_set_unwaitable_func` /
/// `evd_clear_unwaitable_func`: one switch each.
unsafe fn evd_switch(verb: &'static str, evd_h: abi::EvdHandle, f: fn(&EvdBody)) -> abi::Return {
    call(verb, || {
        let o = evd(evd_h, subtype::NO_SUBTYPE)?;
        f(evd_body(&o));
        Ok(())
    })
}

pub(crate) unsafe extern "C" fn evd_enable(evd_h: abi::EvdHandle) -> abi::Return {
    // SAFETY: only the handle is passed on, and it is validated.
    unsafe {
        evd_switch("dat_evd_enable", evd_h, |b| {
            b.evd().enable();
        })
    }
}

pub(crate) unsafe extern "C" fn evd_disable(evd_h: abi::EvdHandle) -> abi::Return {
    // SAFETY: as above.
    unsafe {
        evd_switch("dat_evd_disable", evd_h, |b| {
            b.evd().disable();
        })
    }
}

pub(crate) unsafe extern "C" fn evd_set_unwaitable(evd_h: abi::EvdHandle) -> abi::Return {
    // SAFETY: as above.
    unsafe { evd_switch("dat_evd_set_unwaitable", evd_h, |b| b.evd().set_unwaitable()) }
}

pub(crate) unsafe extern "C" fn evd_clear_unwaitable(evd_h: abi::EvdHandle) -> abi::Return {
    // SAFETY: as above.
    unsafe { evd_switch("dat_evd_clear_unwaitable", evd_h, |b| b.evd().clear_unwaitable()) }
}

/// `evd_wait_func(evd, timeout, threshold, &event, &nmore)`.
pub(crate) unsafe extern "C" fn evd_wait(
    evd_h: abi::EvdHandle,
    timeout: abi::Timeout,
    threshold: abi::Count,
    out: *mut abi::Event,
    nmore_out: *mut abi::Count,
) -> abi::Return {
    call("dat_evd_wait", || {
        let o = evd(evd_h, subtype::NO_SUBTYPE)?;
        let out = required(out, 4, "dat_evd_wait's event pointer")?;
        if threshold <= 0 {
            return Err(DatError::invalid_parameter(3)
                .with_detail(format!("dat_evd_wait: threshold {threshold}; wait for at least 1")));
        }
        let (ev, more) = match evd_body(&o).evd().wait_counting(timeout, threshold as u32) {
            Ok(got) => got,
            Err((e, nmore)) => {
                // On a timeout, `nmore` is valid: the events queued (none dequeued).
                if let Some(n) = nmore {
                    // SAFETY: NULL or the consumer's variable.
                    unsafe { put(nmore_out, n.min(i32::MAX as usize) as abi::Count) };
                }
                return Err(e);
            }
        };
        // SAFETY: checked non-null; the consumer's DAT_EVENT.
        unsafe { out.write(to_c(&o, evd_h, ev)) };
        // SAFETY: NULL or the consumer's variable.
        unsafe { put(nmore_out, more.min(i32::MAX as usize) as abi::Count) };
        Ok(())
    })
}

/// `evd_dequeue_func(evd, &event)`: a bare DAT_QUEUE_EMPTY when there is none.
pub(crate) unsafe extern "C" fn evd_dequeue(
    evd_h: abi::EvdHandle,
    out: *mut abi::Event,
) -> abi::Return {
    call("dat_evd_dequeue", || {
        let o = evd(evd_h, subtype::NO_SUBTYPE)?;
        let out = required(out, 2, "dat_evd_dequeue's event pointer")?;
        let ev = evd_body(&o).evd().dequeue()?;
        // SAFETY: checked non-null; the consumer's DAT_EVENT.
        unsafe { out.write(to_c(&o, evd_h, ev)) };
        Ok(())
    })
}

/// `evd_resize_func(evd, qlen)`.
pub(crate) unsafe extern "C" fn evd_resize(evd_h: abi::EvdHandle, qlen: abi::Count) -> abi::Return {
    call("dat_evd_resize", || {
        let o = evd(evd_h, subtype::NO_SUBTYPE)?;
        let q = u32::try_from(qlen).map_err(|_| {
            DatError::invalid_parameter(2).with_detail(format!("dat_evd_resize: qlen {qlen}"))
        })?;
        evd_body(&o).evd().resize(q)
    })
}

/// `evd_post_se_func(evd, &event)`: a software event carrying the event's pointer.
pub(crate) unsafe extern "C" fn evd_post_se(
    evd_h: abi::EvdHandle,
    ev: *const abi::Event,
) -> abi::Return {
    call("dat_evd_post_se", || {
        let o = evd(evd_h, subtype::NO_SUBTYPE)?;
        if ev.is_null() {
            return Err(DatError::invalid_parameter(2).with_detail("dat_evd_post_se: NULL event"));
        }
        // SAFETY: non-null; the consumer's DAT_EVENT.
        let ev = unsafe { &*ev };
        if ev.event_number != event::SOFTWARE_EVENT {
            return Err(DatError::invalid_parameter(2).with_detail(format!(
                "dat_evd_post_se: event number {:#x}; only DAT_SOFTWARE_EVENT can be posted",
                ev.event_number
            )));
        }
        // SAFETY: a software event carries software_event_data.
        let pointer = unsafe { ev.event_data.software_event_data.pointer } as u64;
        evd_body(&o).evd().post_se(pointer)
    })
}

/// `evd_free_func(evd)`: refused while endpoints or service points use it; a thread
/// waiting on the EVD returns DAT_ABORT.
pub(crate) unsafe extern "C" fn evd_free(evd_h: abi::EvdHandle) -> abi::Return {
    call("dat_evd_free", || {
        let me = evd_h as usize;
        let users: Vec<_> = handle::find_any(|o| match &o.body {
            Body::Ep(b) => b.wiring().uses_evd(me),
            Body::Psp(b) => b.evd == me,
            Body::Rsp(b) => b.evd == me,
            _ => false,
        });
        if !users.is_empty() && !evd_h.is_null() {
            return Err(DatError::invalid_state(subtype::INVALID_STATE_EVD_IN_USE).with_detail(
                format!(
                    "dat_evd_free: {} endpoint(s) or service point(s) still use the EVD; free \
                     them first",
                    users.len()
                ),
            ));
        }
        let async_of_ia = handle::find(handle_type::IA, |o| match &o.body {
            Body::Ia(b) => b.async_evd.load(Ordering::Relaxed) == me,
            _ => false,
        });
        // DAT: a thread waiting on the EVD returns DAT_ABORT when it is freed. Woken, it
        // returns and lets go of the handle, which `settle` waits for.
        let waits_aborted = match evd(evd_h, subtype::NO_SUBTYPE) {
            Ok(o) => {
                evd_body(&o).evd().abort_waits_for_free();
                true
            }
            Err(_) => false,
        };
        let freed = crate::ret::settle(|| {
            handle::free(evd_h, handle_type::EVD, subtype::NO_SUBTYPE, |o| {
                let Body::Evd(b) = &mut o.body else { unreachable!("type checked") };
                let e = b.evd.take().expect("a registered EVD holds its EVD");
                // Not `free`: its wait would hold the handle table; `settle` retries instead.
                e.free_now().map_err(|(e, err)| {
                    b.evd = Some(e);
                    err
                })
            })
        });
        if freed.is_err()
            && waits_aborted
            && let Ok(o) = evd(evd_h, subtype::NO_SUBTYPE)
        {
            evd_body(&o).evd().resume_waits();
        }
        freed?;
        for ia_obj in async_of_ia {
            let _ = ia_body(&ia_obj).async_evd.compare_exchange(
                evd_h as usize,
                0,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        Ok(())
    })
}

/// `cno_create_func(ia, agent, &cno)`: only the NULL proxy agent (`dat_cno_wait` is the
/// way to be woken).
pub(crate) unsafe extern "C" fn cno_create(
    ia_h: abi::IaHandle,
    agent: abi::OsWaitProxyAgent,
    out: *mut abi::CnoHandle,
) -> abi::Return {
    call("dat_cno_create", || {
        let ia_obj = ia(ia_h)?;
        let out = required(out, 3, "dat_cno_create's CNO handle pointer")?;
        refuse_agent("dat_cno_create", &agent)?;
        let c = Cno::create(&ia_body(&ia_obj).ia)?;
        let body = Body::Cno(CnoBody { cno: c });
        let (h, _) = handle::register(Object::new(ia_obj.provider(), ia_h as usize, body), None);
        // SAFETY: checked non-null.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// `cno_fd_create_func(ia, &fd, &cno)`: a CNO whose file descriptor, owned by the CNO
/// (closed by `dat_cno_free`), becomes readable when the CNO is triggered;
/// `dat_cno_trigger` names the EVD and re-arms (see the engine's `cno` module).
pub(crate) unsafe extern "C" fn cno_fd_create(
    ia_h: abi::IaHandle,
    fd_out: *mut abi::Fd,
    out: *mut abi::CnoHandle,
) -> abi::Return {
    call("dat_cno_fd_create", || {
        let ia_obj = ia(ia_h)?;
        let fd_out = required(fd_out, 2, "dat_cno_fd_create's file descriptor pointer")?;
        let out = required(out, 3, "dat_cno_fd_create's CNO handle pointer")?;
        let c = Cno::create_with_fd(&ia_body(&ia_obj).ia)?;
        let fd = c.fd().ok_or_else(|| {
            DatError::internal_error().with_detail("dat_cno_fd_create: the new CNO has no fd")
        })?;
        let body = Body::Cno(CnoBody { cno: c });
        let (h, _) = handle::register(Object::new(ia_obj.provider(), ia_h as usize, body), None);
        // SAFETY: both checked non-null; the consumer's places for the results.
        unsafe {
            fd_out.write(fd);
            out.write(h);
        }
        Ok(())
    })
}

/// `cno_trigger_func(cno, &evd)`: never blocks; an EVD with an event waiting (a hint), or
/// DAT_HANDLE_NULL, and the CNO's fd re-armed.
pub(crate) unsafe extern "C" fn cno_trigger(
    cno_h: abi::CnoHandle,
    out: *mut abi::EvdHandle,
) -> abi::Return {
    call("dat_cno_trigger", || {
        let o = cno(cno_h)?;
        let out = required(out, 2, "dat_cno_trigger's EVD handle pointer")?;
        let ready = cno_body(&o).cno.trigger()?;
        let h = ready.map_or(std::ptr::null_mut(), |evd| handle::handle_of_id(evd.id()));
        // SAFETY: checked non-null.
        unsafe { out.write(h) };
        Ok(())
    })
}

fn refuse_agent(verb: &str, agent: &abi::OsWaitProxyAgent) -> DatResult<()> {
    if agent.proxy_agent_func.is_some() {
        return Err(DatError::not_implemented().with_detail(format!(
            "{verb}: OS wait proxy agents are not supported; pass DAT_OS_WAIT_PROXY_AGENT_NULL \
             and use dat_cno_wait"
        )));
    }
    Ok(())
}

/// `cno_modify_agent_func(cno, agent)`.
pub(crate) unsafe extern "C" fn cno_modify_agent(
    cno_h: abi::CnoHandle,
    agent: abi::OsWaitProxyAgent,
) -> abi::Return {
    call("dat_cno_modify_agent", || {
        cno(cno_h)?;
        refuse_agent("dat_cno_modify_agent", &agent)
    })
}

/// `cno_query_func(cno, mask, &param)`.
pub(crate) unsafe extern "C" fn cno_query(
    cno_h: abi::CnoHandle,
    _mask: abi::CnoParamMask,
    param: *mut abi::CnoParam,
) -> abi::Return {
    call("dat_cno_query", || {
        let o = cno(cno_h)?;
        let param = required(param, 3, "dat_cno_query's parameter pointer")?;
        let mut p = abi::CnoParam::new_zeroed();
        p.ia_handle = o.ia as abi::IaHandle;
        p.proxy_type = proxy_type::NONE;
        if let Some(fd) = cno_body(&o).cno.fd() {
            p.proxy_type = proxy_type::FD;
            p.proxy.fd = fd;
        }
        // SAFETY: checked non-null; the consumer's struct.
        unsafe { param.write(p) };
        Ok(())
    })
}

/// `cno_free_func(cno)`: refused while EVDs report to it.
pub(crate) unsafe extern "C" fn cno_free(cno_h: abi::CnoHandle) -> abi::Return {
    call("dat_cno_free", || {
        let users = handle::find(handle_type::EVD, |o| match &o.body {
            Body::Evd(b) => b.cno.load(Ordering::Relaxed) == cno_h as usize,
            _ => false,
        });
        if !users.is_empty() && !cno_h.is_null() {
            return Err(DatError::invalid_state(subtype::INVALID_STATE_CNO_IN_USE).with_detail(
                format!(
                    "dat_cno_free: {} EVD(s) still report to the CNO; free them or detach them \
                     with dat_evd_modify_cno(evd, NULL)",
                    users.len()
                ),
            ));
        }
        // The engine's free closes a CNO's fd now (no call is in flight on the handle).
        handle::free(cno_h, handle_type::CNO, subtype::INVALID_HANDLE_CNO, |o| match &o.body {
            Body::Cno(b) => b.cno.clone().free().map_err(|(_, e)| e),
            _ => Ok(()),
        })
    })
}

/// `cno_wait_func(cno, timeout, &evd)`: an EVD with an event waiting (a hint).
pub(crate) unsafe extern "C" fn cno_wait(
    cno_h: abi::CnoHandle,
    timeout: abi::Timeout,
    out: *mut abi::EvdHandle,
) -> abi::Return {
    call("dat_cno_wait", || {
        let o = cno(cno_h)?;
        let out = required(out, 3, "dat_cno_wait's EVD handle pointer")?;
        let t = (timeout != abi::TIMEOUT_INFINITE).then(|| Duration::from_micros(timeout.into()));
        let ready = cno_body(&o).cno.wait(t)?;
        let h = ready.map_or(std::ptr::null_mut(), |evd| handle::handle_of_id(evd.id()));
        // SAFETY: checked non-null.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// The `DAT_EVENT` for engine event `ev` taken from EVD `evd_obj` (handle `evd_h`).
fn to_c(evd_obj: &Object, evd_h: abi::EvdHandle, ev: Event) -> abi::Event {
    let mut out = abi::Event::new_zeroed();
    out.evd_handle = evd_h;
    match ev {
        Event::Dto { ep, completion } => {
            if completion.status != abi::dto_status::SUCCESS && crate::ret::tracing() {
                eprintln!(
                    "ferrodat: DTO completion with status {} (DAT_DTO_*): operation {}, cookie \
                     {:#x}, {} bytes",
                    completion.status,
                    completion.operation,
                    completion.user_cookie,
                    completion.transfered_length
                );
            }
            out.event_number = event::DTO_COMPLETION_EVENT;
            out.event_data.dto_completion_event_data = abi::DtoCompletionEventData {
                ep_handle: handle::handle_of_id(ep),
                user_cookie: abi::Context { as_64: completion.user_cookie },
                status: completion.status,
                transfered_length: completion.transfered_length.min(u64::from(u32::MAX)) as u32,
                operation: completion.operation,
                rmr_context: 0,
            };
            if let Some((kind, immediate)) = completion.ib_extension {
                out.event_number = event::IB_DTO_EVENT;
                let mut ext = abi::IbExtensionEventData::new_zeroed();
                ext.r#type = kind;
                ext.status = if completion.status == abi::dto_status::SUCCESS {
                    ib_status::OP_SUCCESS
                } else {
                    ib_status::OP_ERR
                };
                ext.val.immed.data = immediate.unwrap_or(0);
                // SAFETY: IbExtensionEventData is exactly the 64 bytes of
                // event_extension_data (asserted in abi), plain data both.
                out.event_extension_data =
                    unsafe { std::mem::transmute::<abi::IbExtensionEventData, [u64; 8]>(ext) };
            }
        }
        Event::ConnectionRequest { sp, cr, conn_qual } => {
            out.event_number = event::CONNECTION_REQUEST_EVENT;
            let ia_obj =
                handle::get(evd_obj.ia as abi::Handle, handle_type::IA, subtype::INVALID_HANDLE_IA)
                    .ok();
            let (remote, private_data, local_ep) = match cr.query() {
                Ok(p) => (
                    std::net::SocketAddr::new(p.remote_ia_address, p.remote_port_qual as u16),
                    p.private_data,
                    p.local_ep,
                ),
                Err(_) => (std::net::SocketAddr::from(([0, 0, 0, 0], 0)), Vec::new(), None),
            };
            // From the request itself, not its service point, which may be freed by now.
            let provider_ep = cr.endpoint_is_providers();
            let ep = match local_ep {
                // A PSP with DAT_PSP_PROVIDER_FLAG: the endpoint the engine made for the
                // request gets its handle now, with no PZ or EVDs (`dat_ep_modify` names
                // them), for `dat_cr_query` to hand out.
                Some(made) if provider_ep => {
                    let id = made.id();
                    let body = Body::Ep(EpBody::new(made, EpWiring::default(), 0));
                    let obj = Object::new(evd_obj.provider(), evd_obj.ia, body);
                    handle::register(obj, Some(id)).0 as usize
                }
                // An RSP's endpoint: the consumer's handle for it.
                Some(reserved) => handle::handle_of_id(reserved.id()) as usize,
                None => 0,
            };
            let body = Body::Cr(CrBody {
                cr,
                remote: SockStorage::new(remote),
                remote_port: u64::from(remote.port()),
                private_data,
                ep,
                provider_ep,
            });
            let (cr_h, _) =
                handle::register(Object::new(evd_obj.provider(), evd_obj.ia, body), None);
            out.event_data.cr_arrival_event_data = abi::CrArrivalEventData {
                sp_handle: abi::SpHandle { psp_handle: handle::handle_of_id(sp) },
                local_ia_address_ptr: ia_obj
                    .as_deref()
                    .map_or(std::ptr::null_mut(), |o| ia_body(o).address.as_ptr()),
                conn_qual,
                cr_handle: cr_h,
                truncate_flag: abi::FALSE,
            };
        }
        Event::Connection { number, ep, private_data } => {
            out.event_number = number;
            let ep_obj = handle::object_of_id(ep);
            let (ep_h, size, data) = match ep_obj.as_deref().map(|o| &o.body) {
                Some(Body::Ep(b)) => {
                    // The data an event points to stays valid until the endpoint is freed or
                    // reset (dat_evd_dequeue): an event without private data (DISCONNECTED,
                    // say) leaves the last one's in place.
                    if private_data.is_empty() {
                        (handle::handle_of_id(ep), 0, std::ptr::null_mut())
                    } else {
                        let mut slot = b.private_data.lock().unwrap_or_else(|e| e.into_inner());
                        *slot = private_data;
                        let ptr = slot.as_mut_ptr().cast::<libc::c_void>();
                        (handle::handle_of_id(ep), slot.len(), ptr)
                    }
                }
                _ => (std::ptr::null_mut(), 0, std::ptr::null_mut()),
            };
            out.event_data.connect_event_data = abi::ConnectionEventData {
                ep_handle: ep_h,
                private_data_size: size as abi::Count,
                private_data: data,
            };
        }
        Event::Async { number, object } => {
            out.event_number = number;
            let h = handle::handle_of_id(object);
            out.event_data.asynch_error_event_data = abi::AsynchErrorEventData {
                dat_handle: if h.is_null() { evd_obj.ia as abi::Handle } else { h },
                reason: 0,
            };
        }
        Event::RmrBind { rmr, ep: _, user_cookie, status } => {
            out.event_number = event::RMR_BIND_COMPLETION_EVENT;
            out.event_data.rmr_completion_event_data = abi::RmrBindCompletionEventData {
                rmr_handle: handle::handle_of_id(rmr),
                user_cookie: abi::Context { as_64: user_cookie },
                status,
            };
        }
        Event::Software { pointer } => {
            out.event_number = event::SOFTWARE_EVENT;
            out.event_data.software_event_data =
                abi::SoftwareEventData { pointer: pointer as *mut libc::c_void };
        }
    }
    out
}
