//! `abi::dat` against `dat2/*.h`.
//!
//! Besides `check_struct!`/`check_const!`, this file checks what sizes and offsets cannot see:
//! each struct's alignment, each field's C type and the full C signature of every function
//! type and `DAT_PROVIDER` slot. The C type is derived from the Rust type
//! (`std::any::type_name`) and compared with `__builtin_types_compatible_p`, which tells
//! `int` from `unsigned`, `unsigned long` from `unsigned long long`, `const T *` from `T *`
//! and a wrong argument count or order. Integer fields are compared by signedness (their size
//! is already checked), since C enums and `DAT_UVERYLONG` have several spellings.

use std::any::type_name;
use std::collections::HashMap;
use std::ffi::CStr;

use crate::probe::Probe;
use ferrodat_abi::dat::*;

/// Rust types that are not C types of the same name: `i8`/`u8` only ever stand for `c_char`
/// here (its signedness differs between x86_64 and aarch64), `u64` for `DAT_UINT64`.
fn primitive(name: &str) -> Option<&'static str> {
    Some(match name {
        "i8" | "u8" => "char",
        "u16" => "unsigned short",
        "i16" => "short",
        "u32" => "unsigned int",
        "i32" => "int",
        "u64" => "unsigned long",
        "i64" => "long",
        "core::ffi::c_void" | "()" => "void",
        _ => return None,
    })
}

fn is_integer(name: &str) -> bool {
    matches!(name, "i8" | "u8" | "i16" | "u16" | "i32" | "u32" | "i64" | "u64")
}

fn is_signed(name: &str) -> bool {
    name.starts_with('i')
}

/// Splits `a, b<c, d>, e` at top-level commas.
fn split_args(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, ch) in s.char_indices() {
        match ch {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() {
        out.push(s[start..].trim());
    }
    out
}

/// Collects type names and type checks; resolves them once every struct is known.
pub struct Types {
    /// Rust type name (last path segment) -> C type.
    names: HashMap<String, String>,
    /// (report name, C type expression of the field or typedef, Rust type name)
    pending: Vec<(String, String, &'static str)>,
}

impl Types {
    fn new() -> Self {
        Types { names: HashMap::new(), pending: Vec::new() }
    }

    fn name(&mut self, rust: &str, c: &str) {
        let last = rust.rsplit("::").next().unwrap();
        self.names.insert(last.to_string(), c.to_string());
    }

    fn check(&mut self, label: String, c_type_expr: String, rust: &'static str) {
        self.pending.push((label, c_type_expr, rust));
    }

    /// The C type for a Rust type name, or None for a type C cannot name.
    fn c_type(&self, rust: &str) -> Option<String> {
        let rust = rust.trim();
        if let Some(p) = primitive(rust) {
            return Some(p.to_string());
        }
        if let Some(inner) = rust.strip_prefix("*mut ") {
            return Some(format!("__typeof__({}) *", self.c_type(inner)?));
        }
        if let Some(inner) = rust.strip_prefix("*const ") {
            return Some(format!("__typeof__({}) const *", self.c_type(inner)?));
        }
        if let Some(inner) = rust.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            let (elem, n) = inner.rsplit_once(';').unwrap();
            return Some(format!("__typeof__({} [{}])", self.c_type(elem)?, n.trim()));
        }
        if let Some(f) =
            rust.strip_prefix("core::option::Option<").and_then(|r| r.strip_suffix('>'))
        {
            let f = f.strip_prefix("unsafe extern \"C\" fn(").expect("only C function pointers");
            let close = f.rfind(')').unwrap();
            let ret = f[close + 1..].trim().strip_prefix("->").map(str::trim).unwrap_or("()");
            let args: Option<Vec<String>> =
                split_args(&f[..close]).into_iter().map(|a| self.c_type(a)).collect();
            let args = args?;
            let args = if args.is_empty() { "void".to_string() } else { args.join(", ") };
            return Some(format!("__typeof__({} (*)({}))", self.c_type(ret)?, args));
        }
        if rust.contains('<') {
            return None;
        }
        self.names.get(rust.rsplit("::").next().unwrap()).cloned()
    }

    fn finish(self, p: &mut Probe) {
        for (label, c_expr, rust) in &self.pending {
            if is_integer(rust) {
                p.push(
                    format!("signedness of {label} (Rust {rust})"),
                    format!("((__typeof__({c_expr}))-1 < 0)"),
                    is_signed(rust) as u64,
                    1,
                );
                continue;
            }
            let Some(c) = self.c_type(rust) else {
                assert!(
                    UNNAMEABLE.iter().any(|u| rust.ends_with(u)),
                    "no C type for the Rust type {rust} of {label}"
                );
                continue;
            };
            p.push(
                format!("C type of {label} is {c} (Rust {rust})"),
                format!("__builtin_types_compatible_p(__typeof__({c_expr}), {c})"),
                1,
                1,
            );
        }
    }
}

/// Rust types without a C name: the anonymous union of `DAT_IB_EXTENSION_EVENT_DATA` (its
/// members are checked through the struct).
const UNNAMEABLE: &[&str] = &["IbExtensionEventAnon"];

/// `check_struct!` plus the struct's alignment and each listed field's C type.
macro_rules! dat_struct {
    ($p:expr, $ty:expr, $c:literal, $t:ty { $($f:ident $(. $g:ident)* $(=> $cf:literal)?),* $(,)? }) => {{
        let p: &mut Probe = $p;
        let ty: &mut Types = $ty;
        check_struct!(p, $c, $t { $($f $(. $g)* $(=> $cf)?),* });
        p.push(
            format!("_Alignof({})", $c),
            format!("_Alignof({})", $c),
            ::core::mem::align_of::<$t>() as u64,
            8,
        );
        ty.name(type_name::<$t>(), $c);
        $(
            #[allow(unused_mut, unused_assignments)]
            let mut c_path = stringify!($f $(. $g)*).replace(' ', "");
            $( c_path = $cf.to_string(); )?
            ty.check(
                format!("{}.{}", $c, c_path),
                format!("(({} *)0)->{}", $c, c_path),
                field_type_name(|s: &$t| unsafe { &s.$f $(. $g)* }),
            );
        )*
    }};
}

/// The type name of a field, from a closure that is never called.
fn field_type_name<T, F>(_: impl Fn(&T) -> &F) -> &'static str {
    type_name::<F>()
}

/// A C typedef against a Rust type alias: size, and signedness or C type.
macro_rules! dat_alias {
    ($p:expr, $ty:expr, $($c:literal => $t:ty),* $(,)?) => {{
        let p: &mut Probe = $p;
        let ty: &mut Types = $ty;
        $(
            p.push(format!("sizeof({})", $c), format!("sizeof({})", $c),
                ::core::mem::size_of::<$t>() as u64, 8);
            ty.check($c.to_string(), format!("*({} *)0", $c), type_name::<$t>());
        )*
    }};
}

/// A string macro against a `&CStr`: same bytes, same length.
fn check_str(p: &mut Probe, c: &str, rust: &CStr) {
    let bytes = rust.to_bytes_with_nul();
    let text = rust.to_str().unwrap();
    assert!(text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "{text}");
    p.push(
        format!("{c} == \"{text}\""),
        format!(
            "(sizeof({c}) == {} && __builtin_memcmp({c}, \"{text}\", {}) == 0)",
            bytes.len(),
            bytes.len()
        ),
        1,
        1,
    );
}

pub fn register(p: &mut Probe) {
    let mut ty = Types::new();
    let t = &mut ty;

    // Socket addresses: layout only (C's field types are unions and typedefs of the OS).
    dat_struct!(p, t, "struct sockaddr", SockAddr { sa_family, sa_data });
    check_struct!(p, "struct sockaddr_in", SockAddrIn { sin_family, sin_port, sin_addr, sin_zero });
    check_struct!(
        p,
        "struct sockaddr_in6",
        SockAddrIn6 { sin6_family, sin6_port, sin6_flowinfo, sin6_addr, sin6_scope_id }
    );
    for (c, align) in [
        ("struct sockaddr_in", align_of::<SockAddrIn>()),
        ("struct sockaddr_in6", align_of::<SockAddrIn6>()),
    ] {
        p.push(format!("_Alignof({c})"), format!("_Alignof({c})"), align as u64, 8);
    }
    t.name(type_name::<SockAddrIn6>(), "struct sockaddr_in6");

    // dat.h
    dat_struct!(p, t, "DAT_CONTEXT", Context { as_ptr, as_64, as_index });
    dat_struct!(p, t, "DAT_NAMED_ATTR", NamedAttr { name, value });
    dat_struct!(
        p,
        t,
        "DAT_LMR_TRIPLET",
        LmrTriplet { virtual_address, segment_length, lmr_context }
    );
    dat_struct!(
        p,
        t,
        "DAT_RMR_TRIPLET",
        RmrTriplet { virtual_address, segment_length, rmr_context }
    );
    dat_struct!(p, t, "DAT_COMM", Comm { domain, r#type => "type", protocol });
    dat_struct!(p, t, "DAT_RMR_PARAM", RmrParam {
        ia_handle, pz_handle, lmr_triplet, lmr_triplet.virtual_address,
        lmr_triplet.segment_length, lmr_triplet.lmr_context, mem_priv, rmr_context, rmr_scope,
        va_type,
    });
    dat_struct!(
        p,
        t,
        "DAT_IA_ATTR",
        IaAttr {
            adapter_name,
            vendor_name,
            hardware_version_major,
            hardware_version_minor,
            firmware_version_major,
            firmware_version_minor,
            ia_address_ptr,
            max_eps,
            max_dto_per_ep,
            max_rdma_read_per_ep_in,
            max_rdma_read_per_ep_out,
            max_evds,
            max_evd_qlen,
            max_iov_segments_per_dto,
            max_lmrs,
            max_lmr_block_size,
            max_lmr_virtual_address,
            max_pzs,
            max_message_size,
            max_rdma_size,
            max_rmrs,
            max_rmr_target_address,
            max_srqs,
            max_ep_per_srq,
            max_recv_per_srq,
            max_iov_segments_per_rdma_read,
            max_iov_segments_per_rdma_write,
            max_rdma_read_in,
            max_rdma_read_out,
            max_rdma_read_per_ep_in_guaranteed,
            max_rdma_read_per_ep_out_guaranteed,
            zb_supported,
            extension_supported,
            extension_version,
            num_transport_attr,
            transport_attr,
            num_vendor_attr,
            vendor_attr,
        }
    );
    dat_struct!(
        p,
        t,
        "DAT_EP_ATTR",
        EpAttr {
            service_type,
            max_message_size,
            max_rdma_size,
            qos,
            recv_completion_flags,
            request_completion_flags,
            max_recv_dtos,
            max_request_dtos,
            max_recv_iov,
            max_request_iov,
            max_rdma_read_in,
            max_rdma_read_out,
            srq_soft_hw,
            max_rdma_read_iov,
            max_rdma_write_iov,
            ep_transport_specific_count,
            ep_transport_specific,
            ep_provider_specific_count,
            ep_provider_specific,
        }
    );
    dat_struct!(p, t, "DAT_EP_PARAM", EpParam {
        ia_handle, ep_state, comm, comm.domain, comm.r#type => "comm.type", comm.protocol,
        local_ia_address_ptr, local_port_qual, remote_ia_address_ptr, remote_port_qual, pz_handle,
        recv_evd_handle, request_evd_handle, connect_evd_handle, srq_handle, ep_attr,
        ep_attr.service_type, ep_attr.max_rdma_read_out, ep_attr.ep_provider_specific,
    });
    dat_struct!(p, t, "DAT_SRQ_ATTR", SrqAttr { max_recv_dtos, max_recv_iov, low_watermark });
    dat_struct!(
        p,
        t,
        "DAT_SRQ_PARAM",
        SrqParam {
            ia_handle,
            srq_state,
            pz_handle,
            max_recv_dtos,
            max_recv_iov,
            low_watermark,
            available_dto_count,
            outstanding_dto_count,
        }
    );
    dat_struct!(p, t, "DAT_PZ_PARAM", PzParam { ia_handle });
    dat_struct!(p, t, "DAT_PSP_PARAM", PspParam { ia_handle, conn_qual, evd_handle, psp_flags });
    dat_struct!(p, t, "DAT_RSP_PARAM", RspParam { ia_handle, conn_qual, evd_handle, ep_handle });
    dat_struct!(p, t, "DAT_CSP_PARAM", CspParam { ia_handle, comm, address_ptr, evd_handle });
    dat_struct!(
        p,
        t,
        "DAT_CR_PARAM",
        CrParam {
            remote_ia_address_ptr,
            remote_port_qual,
            private_data_size,
            private_data,
            local_ep_handle,
        }
    );

    // Events.
    dat_struct!(
        p,
        t,
        "DAT_DTO_COMPLETION_EVENT_DATA",
        DtoCompletionEventData {
            ep_handle,
            user_cookie,
            status,
            transfered_length,
            operation,
            rmr_context,
        }
    );
    dat_struct!(
        p,
        t,
        "DAT_RMR_BIND_COMPLETION_EVENT_DATA",
        RmrBindCompletionEventData { rmr_handle, user_cookie, status }
    );
    dat_struct!(p, t, "DAT_SP_HANDLE", SpHandle { rsp_handle, psp_handle, csp_handle });
    dat_struct!(
        p,
        t,
        "DAT_CR_ARRIVAL_EVENT_DATA",
        CrArrivalEventData { sp_handle, local_ia_address_ptr, conn_qual, cr_handle, truncate_flag }
    );
    dat_struct!(
        p,
        t,
        "DAT_CONNECTION_EVENT_DATA",
        ConnectionEventData { ep_handle, private_data_size, private_data }
    );
    dat_struct!(p, t, "DAT_ASYNCH_ERROR_EVENT_DATA", AsynchErrorEventData { dat_handle, reason });
    dat_struct!(p, t, "DAT_SOFTWARE_EVENT_DATA", SoftwareEventData { pointer });
    dat_struct!(
        p,
        t,
        "DAT_EVENT_DATA",
        EventData {
            dto_completion_event_data,
            rmr_completion_event_data,
            cr_arrival_event_data,
            connect_event_data,
            asynch_error_event_data,
            software_event_data,
        }
    );
    dat_struct!(p, t, "DAT_EVENT", Event {
        event_number, evd_handle, event_data,
        event_data.dto_completion_event_data,
        event_data.dto_completion_event_data.ep_handle,
        event_data.dto_completion_event_data.user_cookie,
        event_data.dto_completion_event_data.user_cookie.as_64,
        event_data.dto_completion_event_data.status,
        event_data.dto_completion_event_data.transfered_length,
        event_data.dto_completion_event_data.operation,
        event_data.dto_completion_event_data.rmr_context,
        event_data.rmr_completion_event_data,
        event_data.rmr_completion_event_data.rmr_handle,
        event_data.rmr_completion_event_data.user_cookie,
        event_data.rmr_completion_event_data.status,
        event_data.cr_arrival_event_data,
        event_data.cr_arrival_event_data.sp_handle,
        event_data.cr_arrival_event_data.sp_handle.psp_handle,
        event_data.cr_arrival_event_data.local_ia_address_ptr,
        event_data.cr_arrival_event_data.conn_qual,
        event_data.cr_arrival_event_data.cr_handle,
        event_data.cr_arrival_event_data.truncate_flag,
        event_data.connect_event_data,
        event_data.connect_event_data.ep_handle,
        event_data.connect_event_data.private_data_size,
        event_data.connect_event_data.private_data,
        event_data.asynch_error_event_data,
        event_data.asynch_error_event_data.dat_handle,
        event_data.asynch_error_event_data.reason,
        event_data.software_event_data,
        event_data.software_event_data.pointer,
        event_extension_data,
    });

    // Registration and uDAPL objects.
    dat_struct!(
        p,
        t,
        "DAT_PROVIDER_INFO",
        ProviderInfo { ia_name, dapl_version_major, dapl_version_minor, is_thread_safe }
    );
    dat_struct!(
        p,
        t,
        "DAT_EVD_PARAM",
        EvdParam { ia_handle, evd_qlen, evd_state, cno_handle, evd_flags }
    );
    dat_struct!(p, t, "DAT_SHARED_MEMORY", SharedMemory { virtual_address, shared_memory_id });
    dat_struct!(p, t, "DAT_REGION_DESCRIPTION", RegionDescription {
        for_va, for_lmr_handle, for_shared_memory, for_shared_memory.virtual_address,
        for_shared_memory.shared_memory_id,
    });
    dat_struct!(p, t, "DAT_LMR_PARAM", LmrParam {
        ia_handle, mem_type, region_desc, region_desc.for_va, region_desc.for_lmr_handle,
        region_desc.for_shared_memory, length, pz_handle, mem_priv, va_type, lmr_context,
        rmr_context, registered_size, registered_address,
    });
    dat_struct!(
        p,
        t,
        "DAT_OS_WAIT_PROXY_AGENT",
        OsWaitProxyAgent { instance_data, proxy_agent_func }
    );
    dat_struct!(p, t, "__typeof__(((DAT_CNO_PARAM *)0)->proxy)", CnoProxy { agent, fd, none });
    dat_struct!(p, t, "DAT_CNO_PARAM", CnoParam {
        ia_handle, proxy_type, proxy, proxy.agent, proxy.agent.instance_data,
        proxy.agent.proxy_agent_func, proxy.fd, proxy.none,
    });
    dat_struct!(
        p,
        t,
        "DAT_PROVIDER_ATTR",
        ProviderAttr {
            provider_name,
            provider_version_major,
            provider_version_minor,
            dapl_version_major,
            dapl_version_minor,
            lmr_mem_types_supported,
            iov_ownership_on_return,
            dat_qos_supported,
            completion_flags_supported,
            is_thread_safe,
            max_private_data_size,
            supports_multipath,
            ep_creator,
            pz_support,
            optimal_buffer_alignment,
            evd_stream_merging_supported,
            srq_supported,
            srq_watermarks_supported,
            srq_ep_pz_difference_supported,
            srq_info_supported,
            ep_recv_info_supported,
            lmr_sync_req,
            dto_async_return_guaranteed,
            rdma_write_for_rdma_read_req,
            rdma_read_lmr_rmr_context_exposure,
            rmr_scope_supported,
            is_signal_safe,
            ha_supported,
            ha_loadbalancing,
            num_provider_specific_attr,
            provider_specific_attr,
        }
    );

    // va_list as handle_extendedop_func receives it.
    #[cfg(target_arch = "x86_64")]
    dat_struct!(
        p,
        t,
        "__typeof__(((va_list *)0)[0][0])",
        VaListTag { gp_offset, fp_offset, overflow_arg_area, reg_save_area }
    );
    #[cfg(target_arch = "aarch64")]
    dat_struct!(
        p,
        t,
        "va_list",
        VaListAarch64 { __stack, __gr_top, __vr_top, __gr_offs, __vr_offs }
    );

    dat_struct!(
        p,
        t,
        "DAT_PROVIDER",
        Provider {
            device_name,
            extension,
            ia_open_func,
            ia_query_func,
            ia_close_func,
            set_consumer_context_func,
            get_consumer_context_func,
            get_handle_type_func,
            cno_create_func,
            cno_modify_agent_func,
            cno_query_func,
            cno_free_func,
            cno_wait_func,
            cr_query_func,
            cr_accept_func,
            cr_reject_func,
            cr_handoff_func,
            evd_create_func,
            evd_query_func,
            evd_modify_cno_func,
            evd_enable_func,
            evd_disable_func,
            evd_wait_func,
            evd_resize_func,
            evd_post_se_func,
            evd_dequeue_func,
            evd_free_func,
            ep_create_func,
            ep_query_func,
            ep_modify_func,
            ep_connect_func,
            ep_dup_connect_func,
            ep_disconnect_func,
            ep_post_send_func,
            ep_post_recv_func,
            ep_post_rdma_read_func,
            ep_post_rdma_write_func,
            ep_get_status_func,
            ep_free_func,
            lmr_create_func,
            lmr_query_func,
            lmr_free_func,
            rmr_create_func,
            rmr_query_func,
            rmr_bind_func,
            rmr_free_func,
            psp_create_func,
            psp_query_func,
            psp_free_func,
            rsp_create_func,
            rsp_query_func,
            rsp_free_func,
            pz_create_func,
            pz_query_func,
            pz_free_func,
            psp_create_any_func,
            ep_reset_func,
            evd_set_unwaitable_func,
            evd_clear_unwaitable_func,
            lmr_sync_rdma_read_func,
            lmr_sync_rdma_write_func,
            ep_create_with_srq_func,
            ep_recv_query_func,
            ep_set_watermark_func,
            srq_create_func,
            srq_free_func,
            srq_post_recv_func,
            srq_query_func,
            srq_resize_func,
            srq_set_lw_func,
            csp_create_func,
            csp_query_func,
            csp_free_func,
            ep_common_connect_func,
            rmr_create_for_ep_func,
            ep_post_send_with_invalidate_func,
            ep_post_rdma_read_to_rmr_func,
            cno_fd_create_func,
            cno_trigger_func,
            ia_ha_related_func,
            handle_extendedop_func,
        }
    );

    // IB extension.
    t.name(type_name::<IbvAh>(), "struct ibv_ah");
    dat_struct!(p, t, "DAT_IB_ADDR_HANDLE", IbAddrHandle { ah, qpn, ia_addr });
    dat_struct!(p, t, "DAT_IB_IMMED_DATA", IbImmedData { data });
    dat_struct!(p, t, "DAT_IB_COLLECTIVE_EVENT_DATA", IbCollectiveEventData { handle, context });
    dat_struct!(p, t, "__typeof__(((DAT_IB_EXTENSION_EVENT_DATA *)0)->val)", IbExtensionEventVal {
        immed, immed.data,
    });
    dat_struct!(p, t, "DAT_IB_EXTENSION_EVENT_DATA", IbExtensionEventData {
        r#type => "type", status, val, val.immed, val.immed.data,
        // The anonymous union: C names its members directly; `remote_ah` is its largest.
        anon => "remote_ah",
        anon.remote_ah => "remote_ah", anon.remote_ah.ah => "remote_ah.ah",
        anon.remote_ah.qpn => "remote_ah.qpn", anon.remote_ah.ia_addr => "remote_ah.ia_addr",
        anon.coll => "coll", anon.coll.handle => "coll.handle",
        anon.coll.context => "coll.context",
        context,
    });
    dat_struct!(
        p,
        t,
        "DAT_IB_COLLECTIVE_GROUP",
        IbCollectiveGroup {
            local_size,
            local_rank,
            local_ranks,
            external_size,
            external_rank,
            external_ranks,
            intranode_table,
            internode_table,
            is_comm_world,
        }
    );

    // Typedefs: scalars, handles, by-value types.
    dat_alias!(p, t,
        "DAT_RETURN" => Return, "DAT_RETURN_SUBTYPE" => ReturnSubtype, "DAT_COUNT" => Count,
        "DAT_BOOLEAN" => Boolean, "DAT_TIMEOUT" => Timeout, "DAT_VLEN" => Vlen,
        "DAT_VADDR" => Vaddr, "DAT_PADDR" => Paddr, "DAT_SEG_LENGTH" => SegLength,
        "DAT_LMR_CONTEXT" => LmrContext, "DAT_RMR_CONTEXT" => RmrContext,
        "DAT_CONN_QUAL" => ConnQual, "DAT_PORT_QUAL" => PortQual, "DAT_FD" => Fd,
        "DAT_EXTENDED_OP" => ExtendedOp, "DAT_NAME_PTR" => NamePtr,
        "DAT_IA_ADDRESS_PTR" => IaAddressPtr, "DAT_SOCK_ADDR" => SockAddr,
        "DAT_SOCK_ADDR6" => SockAddr6, "DAT_LMR_COOKIE" => LmrCookie,
        "DAT_DTO_COOKIE" => DtoCookie, "DAT_RMR_COOKIE" => RmrCookie,
        "DAT_EP_STATE" => EpState, "DAT_EVENT_NUMBER" => EventNumber,
        "DAT_DTO_COMPLETION_STATUS" => DtoCompletionStatus,
        "DAT_RMR_BIND_COMPLETION_STATUS" => DtoCompletionStatus, "DAT_DTOS" => Dtos,
        "DAT_HANDLE_TYPE" => HandleType, "DAT_COMPLETION_FLAGS" => CompletionFlags,
        "DAT_EVD_FLAGS" => EvdFlags, "DAT_EVD_STATE" => EvdState,
        "DAT_MEM_PRIV_FLAGS" => MemPrivFlags, "DAT_MEM_TYPE" => MemType, "DAT_VA_TYPE" => VaType,
        "DAT_CLOSE_FLAGS" => CloseFlags, "DAT_CONNECT_FLAGS" => ConnectFlags,
        "DAT_PSP_FLAGS" => PspFlags, "DAT_QOS" => Qos, "DAT_SERVICE_TYPE" => ServiceType,
        "DAT_RMR_SCOPE" => RmrScope, "DAT_IOV_OWNERSHIP" => IovOwnership,
        "DAT_EP_CREATOR_FOR_PSP" => EpCreatorForPsp, "DAT_EXTENSION" => Extension,
        "DAT_SRQ_STATE" => SrqState, "DAT_PROXY_TYPE" => ProxyType,
        "DAT_PZ_SUPPORT" => PzSupport, "DAT_HA_LB" => HaLb,
        "DAT_HA_RELATIONSHIP" => HaRelationship,
        "DAT_IA_ATTR_MASK" => IaAttrMask, "DAT_PROVIDER_ATTR_MASK" => ProviderAttrMask,
        "DAT_EP_PARAM_MASK" => EpParamMask, "DAT_SRQ_PARAM_MASK" => SrqParamMask,
        "DAT_PZ_PARAM_MASK" => PzParamMask, "DAT_PSP_PARAM_MASK" => PspParamMask,
        "DAT_RSP_PARAM_MASK" => RspParamMask, "DAT_CSP_PARAM_MASK" => CspParamMask,
        "DAT_CR_PARAM_MASK" => CrParamMask, "DAT_RMR_PARAM_MASK" => RmrParamMask,
        "DAT_EVD_PARAM_MASK" => EvdParamMask, "DAT_LMR_PARAM_MASK" => LmrParamMask,
        "DAT_CNO_PARAM_MASK" => CnoParamMask,
        "DAT_HANDLE" => Handle, "DAT_CR_HANDLE" => CrHandle, "DAT_EP_HANDLE" => EpHandle,
        "DAT_EVD_HANDLE" => EvdHandle, "DAT_IA_HANDLE" => IaHandle,
        "DAT_LMR_HANDLE" => LmrHandle, "DAT_PSP_HANDLE" => PspHandle,
        "DAT_PZ_HANDLE" => PzHandle, "DAT_RMR_HANDLE" => RmrHandle,
        "DAT_RSP_HANDLE" => RspHandle, "DAT_SRQ_HANDLE" => SrqHandle,
        "DAT_CSP_HANDLE" => CspHandle, "DAT_CNO_HANDLE" => CnoHandle,
        "DAT_IB_COLLECTIVE_HANDLE" => IbCollectiveHandle,
        "DAT_IB_EXT_TYPE" => IbExtType, "DAT_IB_STATUS" => IbStatus,
        "DAT_IA_COUNTER_TYPE" => IaCounterType,
        "DAT_IB_COLLECTIVE_DATA_TYPE" => IbCollectiveDataType,
        "DAT_IB_COLLECTIVE_REDUCE_DATA_OP" => IbCollectiveReduceDataOp,
        "DAT_IB_COLLECTIVE_RANK" => IbCollectiveRank, "DAT_IB_COLLECTIVE_ID" => IbCollectiveId,
        "DAT_IB_COLLECTIVE_MEMBER" => IbCollectiveMember,
    );

    // Function types: the full C signature of each (the DAT_PROVIDER slots above are checked
    // the same way through their field types).
    dat_alias!(p, t,
        "DAT_IA_OPEN_FUNC" => IaOpenFunc, "DAT_IA_OPENV_FUNC" => IaOpenvFunc,
        "DAT_IA_CLOSE_FUNC" => IaCloseFunc, "DAT_IA_QUERY_FUNC" => IaQueryFunc,
        "DAT_SET_CONSUMER_CONTEXT_FUNC" => SetConsumerContextFunc,
        "DAT_GET_CONSUMER_CONTEXT_FUNC" => GetConsumerContextFunc,
        "DAT_GET_HANDLE_TYPE_FUNC" => GetHandleTypeFunc, "DAT_CR_QUERY_FUNC" => CrQueryFunc,
        "DAT_CR_ACCEPT_FUNC" => CrAcceptFunc, "DAT_CR_REJECT_FUNC" => CrRejectFunc,
        "DAT_CR_HANDOFF_FUNC" => CrHandoffFunc, "DAT_EVD_RESIZE_FUNC" => EvdResizeFunc,
        "DAT_EVD_POST_SE_FUNC" => EvdPostSeFunc, "DAT_EVD_DEQUEUE_FUNC" => EvdDequeueFunc,
        "DAT_EVD_FREE_FUNC" => EvdFreeFunc, "DAT_EVD_QUERY_FUNC" => EvdQueryFunc,
        "DAT_EP_CREATE_FUNC" => EpCreateFunc,
        "DAT_EP_CREATE_WITH_SRQ_FUNC" => EpCreateWithSrqFunc,
        "DAT_EP_QUERY_FUNC" => EpQueryFunc, "DAT_EP_MODIFY_FUNC" => EpModifyFunc,
        "DAT_EP_CONNECT_FUNC" => EpConnectFunc,
        "DAT_EP_COMMON_CONNECT_FUNC" => EpCommonConnectFunc,
        "DAT_EP_DUP_CONNECT_FUNC" => EpDupConnectFunc,
        "DAT_EP_DISCONNECT_FUNC" => EpDisconnectFunc, "DAT_EP_POST_SEND_FUNC" => EpPostSendFunc,
        "DAT_EP_POST_SEND_WITH_INVALIDATE_FUNC" => EpPostSendWithInvalidateFunc,
        "DAT_EP_POST_RECV_FUNC" => EpPostRecvFunc,
        "DAT_EP_POST_RDMA_READ_FUNC" => EpPostRdmaReadFunc,
        "DAT_EP_POST_RDMA_READ_TO_RMR_FUNC" => EpPostRdmaReadToRmrFunc,
        "DAT_EP_POST_RDMA_WRITE_FUNC" => EpPostRdmaWriteFunc,
        "DAT_EP_GET_STATUS_FUNC" => EpGetStatusFunc, "DAT_EP_FREE_FUNC" => EpFreeFunc,
        "DAT_EP_RESET_FUNC" => EpResetFunc, "DAT_EP_RECV_QUERY_FUNC" => EpRecvQueryFunc,
        "DAT_EP_SET_WATERMARK_FUNC" => EpSetWatermarkFunc, "DAT_LMR_FREE_FUNC" => LmrFreeFunc,
        "DAT_LMR_SYNC_RDMA_READ_FUNC" => LmrSyncRdmaReadFunc,
        "DAT_LMR_SYNC_RDMA_WRITE_FUNC" => LmrSyncRdmaWriteFunc,
        "DAT_RMR_CREATE_FUNC" => RmrCreateFunc, "DAT_RMR_CREATE_FOR_EP_FUNC" => RmrCreateForEpFunc,
        "DAT_RMR_QUERY_FUNC" => RmrQueryFunc, "DAT_RMR_BIND_FUNC" => RmrBindFunc,
        "DAT_RMR_FREE_FUNC" => RmrFreeFunc, "DAT_PSP_CREATE_FUNC" => PspCreateFunc,
        "DAT_PSP_CREATE_ANY_FUNC" => PspCreateAnyFunc, "DAT_PSP_QUERY_FUNC" => PspQueryFunc,
        "DAT_PSP_FREE_FUNC" => PspFreeFunc, "DAT_RSP_CREATE_FUNC" => RspCreateFunc,
        "DAT_RSP_QUERY_FUNC" => RspQueryFunc, "DAT_RSP_FREE_FUNC" => RspFreeFunc,
        "DAT_CSP_CREATE_FUNC" => CspCreateFunc, "DAT_CSP_QUERY_FUNC" => CspQueryFunc,
        "DAT_CSP_FREE_FUNC" => CspFreeFunc, "DAT_PZ_CREATE_FUNC" => PzCreateFunc,
        "DAT_PZ_QUERY_FUNC" => PzQueryFunc, "DAT_PZ_FREE_FUNC" => PzFreeFunc,
        "DAT_SRQ_CREATE_FUNC" => SrqCreateFunc, "DAT_SRQ_SET_LW_FUNC" => SrqSetLwFunc,
        "DAT_SRQ_FREE_FUNC" => SrqFreeFunc, "DAT_SRQ_QUERY_FUNC" => SrqQueryFunc,
        "DAT_SRQ_RESIZE_FUNC" => SrqResizeFunc, "DAT_SRQ_POST_RECV_FUNC" => SrqPostRecvFunc,
        "DAT_IA_HA_RELATED_FUNC" => IaHaRelatedFunc,
        "DAT_HANDLE_EXTENDEDOP_FUNC" => HandleExtendedopFunc,
        "DAT_LMR_CREATE_FUNC" => LmrCreateFunc, "DAT_LMR_QUERY_FUNC" => LmrQueryFunc,
        "DAT_EVD_CREATE_FUNC" => EvdCreateFunc, "DAT_EVD_MODIFY_CNO_FUNC" => EvdModifyCnoFunc,
        "DAT_CNO_CREATE_FUNC" => CnoCreateFunc, "DAT_CNO_FD_CREATE_FUNC" => CnoFdCreateFunc,
        "DAT_CNO_TRIGGER_FUNC" => CnoTriggerFunc,
        "DAT_CNO_MODIFY_AGENT_FUNC" => CnoModifyAgentFunc, "DAT_CNO_QUERY_FUNC" => CnoQueryFunc,
        "DAT_CNO_FREE_FUNC" => CnoFreeFunc, "DAT_CNO_WAIT_FUNC" => CnoWaitFunc,
        "DAT_EVD_ENABLE_FUNC" => EvdEnableFunc, "DAT_EVD_WAIT_FUNC" => EvdWaitFunc,
        "DAT_EVD_DISABLE_FUNC" => EvdDisableFunc,
        "DAT_EVD_SET_UNWAITABLE_FUNC" => EvdSetUnwaitableFunc,
        "DAT_EVD_CLEAR_UNWAITABLE_FUNC" => EvdClearUnwaitableFunc,
        "DAT_PROVIDER_INIT_FUNC" => ProviderInitFunc,
        "DAT_PROVIDER_FINI_FUNC" => ProviderFiniFunc, "DAT_AGENT_FUNC" => AgentFunc,
    );
    ty.finish(p);

    // Constants outside the enum modules.
    check_const!(p,
        "DAT_FALSE" => FALSE, "DAT_TRUE" => TRUE,
        "DAT_NAME_MAX_LENGTH" => NAME_MAX_LENGTH, "DAT_LMR_COOKIE_SIZE" => LMR_COOKIE_SIZE,
        "DAT_OPTIMAL_ALIGNMENT" => OPTIMAL_ALIGNMENT,
        "DAT_VERSION_MAJOR" => VERSION_MAJOR, "DAT_VERSION_MINOR" => VERSION_MINOR,
        "DAT_THREADSAFE" => THREADSAFE,
        "DAT_TIMEOUT_INFINITE" => TIMEOUT_INFINITE,
        "DAT_WATERMARK_INFINITE" => WATERMARK_INFINITE, "DAT_HW_DEFAULT" => HW_DEFAULT,
        "DAT_SRQ_LW_DEFAULT" => SRQ_LW_DEFAULT, "DAT_VALUE_UNKNOWN" => VALUE_UNKNOWN,
        "DAT_OPEN_EXTENSION_BASE" => OPEN_EXTENSION_BASE,
        "DAT_CLOSE_EXTENSION_BASE" => CLOSE_EXTENSION_BASE,
        "DAT_AF_INET" => AF_INET, "DAT_AF_INET6" => AF_INET6,
        "DAT_HANDLE_NULL" => HANDLE_NULL,
        "DAT_EVD_ASYNC_EXISTS" => EVD_ASYNC_EXISTS, "DAT_EVD_OUT_OF_SCOPE" => EVD_OUT_OF_SCOPE,
        "DAT_IB_EXTENSION_VERSION" => IB_EXTENSION_VERSION,
        // Second C names of values defined once in Rust.
        "DAT_CONNECT_MULTIPATH_FLAG" => connect_flags::MULTIPATH_REQUESTED,
        "DAT_IA_ALL" => ia_field::ALL,
        "DAT_IB_EXTENSION" => extension::IB, "DAT_IW_EXTENSION" => extension::IW,
        "DAT_QUERY_COUNTERS_OP" => ib_op::QUERY_COUNTERS,
        "DAT_PRINT_COUNTERS_OP" => ib_op::PRINT_COUNTERS,
        // The status helpers against the header's macros.
        "DAT_GET_TYPE(0x800A0064u)" => ret::get_type(0x800A_0064),
        "DAT_GET_SUBTYPE(0x800A0064u)" => ret::get_subtype(0x800A_0064),
        "(DAT_IS_WARNING(0x40060000u) != 0)" => ret::is_warning(0x4006_0000),
        "(DAT_IS_WARNING(0x80060000u) != 0)" => ret::is_warning(0x8006_0000),
    );
    for (c, rust) in [
        ("DAT_PROVIDER_INIT_FUNC_STR", PROVIDER_INIT_FUNC_STR),
        ("DAT_PROVIDER_FINI_FUNC_STR", PROVIDER_FINI_FUNC_STR),
        ("DAT_IB_ATTR_COUNTERS", ib_attr::COUNTERS),
        ("DAT_IB_ATTR_FETCH_AND_ADD", ib_attr::FETCH_AND_ADD),
        ("DAT_IB_ATTR_CMP_AND_SWAP", ib_attr::CMP_AND_SWAP),
        ("DAT_IB_ATTR_IMMED_DATA", ib_attr::IMMED_DATA),
        ("DAT_IB_ATTR_UD", ib_attr::UD),
        ("DAT_IB_COLL_SET_CLOCK", ib_attr::COLL_SET_CLOCK),
        ("DAT_IB_COLL_READ_CLOCK", ib_attr::COLL_READ_CLOCK),
        ("DAT_IB_COLL_BROADCAST", ib_attr::COLL_BROADCAST),
        ("DAT_IB_COLL_BARRIER", ib_attr::COLL_BARRIER),
        ("DAT_IB_COLL_SCATTER", ib_attr::COLL_SCATTER),
        ("DAT_IB_COLL_SCATTERV", ib_attr::COLL_SCATTERV),
        ("DAT_IB_COLL_GATHER", ib_attr::COLL_GATHER),
        ("DAT_IB_COLL_GATHERV", ib_attr::COLL_GATHERV),
        ("DAT_IB_COLL_ALLGATHER", ib_attr::COLL_ALLGATHER),
        ("DAT_IB_COLL_ALLGATHERV", ib_attr::COLL_ALLGATHERV),
        ("DAT_IB_COLL_ALLTOALL", ib_attr::COLL_ALLTOALL),
        ("DAT_IB_COLL_ALLTOALLV", ib_attr::COLL_ALLTOALLV),
        ("DAT_IB_COLL_REDUCE", ib_attr::COLL_REDUCE),
        ("DAT_IB_COLL_ALLREDUCE", ib_attr::COLL_ALLREDUCE),
        ("DAT_IB_COLL_REDUCE_SCATTER", ib_attr::COLL_REDUCE_SCATTER),
        ("DAT_IB_COLL_SCAN", ib_attr::COLL_SCAN),
    ] {
        check_str(p, c, rust);
    }

    // One check_const! per C enum or mask module.
    check_const!(p,
        "DAT_CLASS_ERROR" => ret::CLASS_ERROR,
        "DAT_CLASS_WARNING" => ret::CLASS_WARNING,
        "DAT_CLASS_SUCCESS" => ret::CLASS_SUCCESS,
        "DAT_TYPE_MASK" => ret::TYPE_MASK,
        "DAT_SUBTYPE_MASK" => ret::SUBTYPE_MASK,
        "DAT_SUCCESS" => ret::SUCCESS,
        "DAT_ABORT" => ret::ABORT,
        "DAT_CONN_QUAL_IN_USE" => ret::CONN_QUAL_IN_USE,
        "DAT_INSUFFICIENT_RESOURCES" => ret::INSUFFICIENT_RESOURCES,
        "DAT_INTERNAL_ERROR" => ret::INTERNAL_ERROR,
        "DAT_INVALID_HANDLE" => ret::INVALID_HANDLE,
        "DAT_INVALID_PARAMETER" => ret::INVALID_PARAMETER,
        "DAT_INVALID_STATE" => ret::INVALID_STATE,
        "DAT_LENGTH_ERROR" => ret::LENGTH_ERROR,
        "DAT_MODEL_NOT_SUPPORTED" => ret::MODEL_NOT_SUPPORTED,
        "DAT_PROVIDER_NOT_FOUND" => ret::PROVIDER_NOT_FOUND,
        "DAT_PRIVILEGES_VIOLATION" => ret::PRIVILEGES_VIOLATION,
        "DAT_PROTECTION_VIOLATION" => ret::PROTECTION_VIOLATION,
        "DAT_QUEUE_EMPTY" => ret::QUEUE_EMPTY,
        "DAT_QUEUE_FULL" => ret::QUEUE_FULL,
        "DAT_TIMEOUT_EXPIRED" => ret::TIMEOUT_EXPIRED,
        "DAT_PROVIDER_ALREADY_REGISTERED" => ret::PROVIDER_ALREADY_REGISTERED,
        "DAT_PROVIDER_IN_USE" => ret::PROVIDER_IN_USE,
        "DAT_INVALID_ADDRESS" => ret::INVALID_ADDRESS,
        "DAT_INTERRUPTED_CALL" => ret::INTERRUPTED_CALL,
        "DAT_CONN_QUAL_UNAVAILABLE" => ret::CONN_QUAL_UNAVAILABLE,
        "DAT_RESERVED_LMR" => ret::RESERVED_LMR,
        "DAT_PORT_IN_USE" => ret::PORT_IN_USE,
        "DAT_COMM_NOT_SUPPORTED" => ret::COMM_NOT_SUPPORTED,
        "DAT_EXTENSION_BASE" => ret::EXTENSION_BASE,
        "DAT_NOT_IMPLEMENTED" => ret::NOT_IMPLEMENTED,
        "DAT_NAME_NOT_FOUND" => ret::NAME_NOT_FOUND,
        "DAT_IB_ERR" => ret::IB_ERR,
        "DAT_IB_COLLECTIVE_ERR" => ret::IB_COLLECTIVE_ERR,
    );
    check_const!(p,
        "DAT_NO_SUBTYPE" => subtype::NO_SUBTYPE,
        "DAT_SUB_INTERRUPTED" => subtype::SUB_INTERRUPTED,
        "DAT_RESOURCE_MEMORY" => subtype::RESOURCE_MEMORY,
        "DAT_RESOURCE_DEVICE" => subtype::RESOURCE_DEVICE,
        "DAT_RESOURCE_TEP" => subtype::RESOURCE_TEP,
        "DAT_RESOURCE_TEVD" => subtype::RESOURCE_TEVD,
        "DAT_RESOURCE_PROTECTION_DOMAIN" => subtype::RESOURCE_PROTECTION_DOMAIN,
        "DAT_RESOURCE_MEMORY_REGION" => subtype::RESOURCE_MEMORY_REGION,
        "DAT_RESOURCE_ERROR_HANDLER" => subtype::RESOURCE_ERROR_HANDLER,
        "DAT_RESOURCE_CREDITS" => subtype::RESOURCE_CREDITS,
        "DAT_RESOURCE_SRQ" => subtype::RESOURCE_SRQ,
        "DAT_INVALID_HANDLE_IA" => subtype::INVALID_HANDLE_IA,
        "DAT_INVALID_HANDLE_EP" => subtype::INVALID_HANDLE_EP,
        "DAT_INVALID_HANDLE_LMR" => subtype::INVALID_HANDLE_LMR,
        "DAT_INVALID_HANDLE_RMR" => subtype::INVALID_HANDLE_RMR,
        "DAT_INVALID_HANDLE_PZ" => subtype::INVALID_HANDLE_PZ,
        "DAT_INVALID_HANDLE_PSP" => subtype::INVALID_HANDLE_PSP,
        "DAT_INVALID_HANDLE_RSP" => subtype::INVALID_HANDLE_RSP,
        "DAT_INVALID_HANDLE_CR" => subtype::INVALID_HANDLE_CR,
        "DAT_INVALID_HANDLE_CNO" => subtype::INVALID_HANDLE_CNO,
        "DAT_INVALID_HANDLE_EVD_CR" => subtype::INVALID_HANDLE_EVD_CR,
        "DAT_INVALID_HANDLE_EVD_REQUEST" => subtype::INVALID_HANDLE_EVD_REQUEST,
        "DAT_INVALID_HANDLE_EVD_RECV" => subtype::INVALID_HANDLE_EVD_RECV,
        "DAT_INVALID_HANDLE_EVD_CONN" => subtype::INVALID_HANDLE_EVD_CONN,
        "DAT_INVALID_HANDLE_EVD_ASYNC" => subtype::INVALID_HANDLE_EVD_ASYNC,
        "DAT_INVALID_HANDLE_SRQ" => subtype::INVALID_HANDLE_SRQ,
        "DAT_INVALID_HANDLE_CSP" => subtype::INVALID_HANDLE_CSP,
        "DAT_INVALID_HANDLE1" => subtype::INVALID_HANDLE1,
        "DAT_INVALID_HANDLE2" => subtype::INVALID_HANDLE2,
        "DAT_INVALID_HANDLE3" => subtype::INVALID_HANDLE3,
        "DAT_INVALID_HANDLE4" => subtype::INVALID_HANDLE4,
        "DAT_INVALID_HANDLE5" => subtype::INVALID_HANDLE5,
        "DAT_INVALID_HANDLE6" => subtype::INVALID_HANDLE6,
        "DAT_INVALID_HANDLE7" => subtype::INVALID_HANDLE7,
        "DAT_INVALID_HANDLE8" => subtype::INVALID_HANDLE8,
        "DAT_INVALID_HANDLE9" => subtype::INVALID_HANDLE9,
        "DAT_INVALID_HANDLE10" => subtype::INVALID_HANDLE10,
        "DAT_INVALID_ARG1" => subtype::INVALID_ARG1,
        "DAT_INVALID_ARG2" => subtype::INVALID_ARG2,
        "DAT_INVALID_ARG3" => subtype::INVALID_ARG3,
        "DAT_INVALID_ARG4" => subtype::INVALID_ARG4,
        "DAT_INVALID_ARG5" => subtype::INVALID_ARG5,
        "DAT_INVALID_ARG6" => subtype::INVALID_ARG6,
        "DAT_INVALID_ARG7" => subtype::INVALID_ARG7,
        "DAT_INVALID_ARG8" => subtype::INVALID_ARG8,
        "DAT_INVALID_ARG9" => subtype::INVALID_ARG9,
        "DAT_INVALID_ARG10" => subtype::INVALID_ARG10,
        "DAT_INVALID_STATE_EP_UNCONNECTED" => subtype::INVALID_STATE_EP_UNCONNECTED,
        "DAT_INVALID_STATE_EP_ACTCONNPENDING" => subtype::INVALID_STATE_EP_ACTCONNPENDING,
        "DAT_INVALID_STATE_EP_PASSCONNPENDING" => subtype::INVALID_STATE_EP_PASSCONNPENDING,
        "DAT_INVALID_STATE_EP_TENTCONNPENDING" => subtype::INVALID_STATE_EP_TENTCONNPENDING,
        "DAT_INVALID_STATE_EP_CONNECTED" => subtype::INVALID_STATE_EP_CONNECTED,
        "DAT_INVALID_STATE_EP_DISCONNECTED" => subtype::INVALID_STATE_EP_DISCONNECTED,
        "DAT_INVALID_STATE_EP_RESERVED" => subtype::INVALID_STATE_EP_RESERVED,
        "DAT_INVALID_STATE_EP_COMPLPENDING" => subtype::INVALID_STATE_EP_COMPLPENDING,
        "DAT_INVALID_STATE_EP_DISCPENDING" => subtype::INVALID_STATE_EP_DISCPENDING,
        "DAT_INVALID_STATE_EP_PROVIDERCONTROL" => subtype::INVALID_STATE_EP_PROVIDERCONTROL,
        "DAT_INVALID_STATE_EP_NOTREADY" => subtype::INVALID_STATE_EP_NOTREADY,
        "DAT_INVALID_STATE_EP_RECV_WATERMARK" => subtype::INVALID_STATE_EP_RECV_WATERMARK,
        "DAT_INVALID_STATE_EP_PZ" => subtype::INVALID_STATE_EP_PZ,
        "DAT_INVALID_STATE_EP_EVD_REQUEST" => subtype::INVALID_STATE_EP_EVD_REQUEST,
        "DAT_INVALID_STATE_EP_EVD_RECV" => subtype::INVALID_STATE_EP_EVD_RECV,
        "DAT_INVALID_STATE_EP_EVD_CONNECT" => subtype::INVALID_STATE_EP_EVD_CONNECT,
        "DAT_INVALID_STATE_EP_UNCONFIGURED" => subtype::INVALID_STATE_EP_UNCONFIGURED,
        "DAT_INVALID_STATE_EP_UNCONFRESERVED" => subtype::INVALID_STATE_EP_UNCONFRESERVED,
        "DAT_INVALID_STATE_EP_UNCONFPASSIVE" => subtype::INVALID_STATE_EP_UNCONFPASSIVE,
        "DAT_INVALID_STATE_EP_UNCONFTENTATIVE" => subtype::INVALID_STATE_EP_UNCONFTENTATIVE,
        "DAT_INVALID_STATE_CNO_IN_USE" => subtype::INVALID_STATE_CNO_IN_USE,
        "DAT_INVALID_STATE_CNO_DEAD" => subtype::INVALID_STATE_CNO_DEAD,
        "DAT_INVALID_STATE_EVD_OPEN" => subtype::INVALID_STATE_EVD_OPEN,
        "DAT_INVALID_STATE_EVD_ENABLED" => subtype::INVALID_STATE_EVD_ENABLED,
        "DAT_INVALID_STATE_EVD_DISABLED" => subtype::INVALID_STATE_EVD_DISABLED,
        "DAT_INVALID_STATE_EVD_WAITABLE" => subtype::INVALID_STATE_EVD_WAITABLE,
        "DAT_INVALID_STATE_EVD_UNWAITABLE" => subtype::INVALID_STATE_EVD_UNWAITABLE,
        "DAT_INVALID_STATE_EVD_IN_USE" => subtype::INVALID_STATE_EVD_IN_USE,
        "DAT_INVALID_STATE_EVD_CONFIG_NOTIFY" => subtype::INVALID_STATE_EVD_CONFIG_NOTIFY,
        "DAT_INVALID_STATE_EVD_CONFIG_SOLICITED" => subtype::INVALID_STATE_EVD_CONFIG_SOLICITED,
        "DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD" => subtype::INVALID_STATE_EVD_CONFIG_THRESHOLD,
        "DAT_INVALID_STATE_EVD_WAITER" => subtype::INVALID_STATE_EVD_WAITER,
        "DAT_INVALID_STATE_EVD_ASYNC" => subtype::INVALID_STATE_EVD_ASYNC,
        "DAT_INVALID_STATE_IA_IN_USE" => subtype::INVALID_STATE_IA_IN_USE,
        "DAT_INVALID_STATE_LMR_IN_USE" => subtype::INVALID_STATE_LMR_IN_USE,
        "DAT_INVALID_STATE_LMR_FREE" => subtype::INVALID_STATE_LMR_FREE,
        "DAT_INVALID_STATE_PZ_IN_USE" => subtype::INVALID_STATE_PZ_IN_USE,
        "DAT_INVALID_STATE_PZ_FREE" => subtype::INVALID_STATE_PZ_FREE,
        "DAT_INVALID_STATE_SRQ_OPERATIONAL" => subtype::INVALID_STATE_SRQ_OPERATIONAL,
        "DAT_INVALID_STATE_SRQ_ERROR" => subtype::INVALID_STATE_SRQ_ERROR,
        "DAT_INVALID_STATE_SRQ_IN_USE" => subtype::INVALID_STATE_SRQ_IN_USE,
        "DAT_INVALID_STATE_SRQ_SHUTDOWN" => subtype::INVALID_STATE_SRQ_SHUTDOWN,
        "DAT_PRIVILEGES_READ" => subtype::PRIVILEGES_READ,
        "DAT_PRIVILEGES_WRITE" => subtype::PRIVILEGES_WRITE,
        "DAT_PRIVILEGES_RDMA_READ" => subtype::PRIVILEGES_RDMA_READ,
        "DAT_PRIVILEGES_RDMA_WRITE" => subtype::PRIVILEGES_RDMA_WRITE,
        "DAT_PROTECTION_READ" => subtype::PROTECTION_READ,
        "DAT_PROTECTION_WRITE" => subtype::PROTECTION_WRITE,
        "DAT_PROTECTION_RDMA_READ" => subtype::PROTECTION_RDMA_READ,
        "DAT_PROTECTION_RDMA_WRITE" => subtype::PROTECTION_RDMA_WRITE,
        "DAT_INVALID_ADDRESS_UNSUPPORTED" => subtype::INVALID_ADDRESS_UNSUPPORTED,
        "DAT_INVALID_ADDRESS_UNREACHABLE" => subtype::INVALID_ADDRESS_UNREACHABLE,
        "DAT_INVALID_ADDRESS_MALFORMED" => subtype::INVALID_ADDRESS_MALFORMED,
        "DAT_NAME_NOT_REGISTERED" => subtype::NAME_NOT_REGISTERED,
        "DAT_MAJOR_NOT_FOUND" => subtype::MAJOR_NOT_FOUND,
        "DAT_MINOR_NOT_FOUND" => subtype::MINOR_NOT_FOUND,
        "DAT_THREAD_SAFETY_NOT_FOUND" => subtype::THREAD_SAFETY_NOT_FOUND,
    );
    check_const!(p,
        "DAT_HANDLE_TYPE_CR" => handle_type::CR,
        "DAT_HANDLE_TYPE_EP" => handle_type::EP,
        "DAT_HANDLE_TYPE_EVD" => handle_type::EVD,
        "DAT_HANDLE_TYPE_IA" => handle_type::IA,
        "DAT_HANDLE_TYPE_LMR" => handle_type::LMR,
        "DAT_HANDLE_TYPE_PSP" => handle_type::PSP,
        "DAT_HANDLE_TYPE_PZ" => handle_type::PZ,
        "DAT_HANDLE_TYPE_RMR" => handle_type::RMR,
        "DAT_HANDLE_TYPE_RSP" => handle_type::RSP,
        "DAT_HANDLE_TYPE_CNO" => handle_type::CNO,
        "DAT_HANDLE_TYPE_SRQ" => handle_type::SRQ,
        "DAT_HANDLE_TYPE_CSP" => handle_type::CSP,
        "DAT_HANDLE_TYPE_EXTENSION_BASE" => handle_type::EXTENSION_BASE,
        "DAT_IB_HANDLE_TYPE_EXT" => handle_type::IB_EXT,
        "DAT_IB_HANDLE_TYPE_COLLECTIVE" => handle_type::IB_COLLECTIVE,
    );
    check_const!(p,
        "DAT_EP_STATE_UNCONNECTED" => ep_state::UNCONNECTED,
        "DAT_EP_STATE_UNCONFIGURED_UNCONNECTED" => ep_state::UNCONFIGURED_UNCONNECTED,
        "DAT_EP_STATE_RESERVED" => ep_state::RESERVED,
        "DAT_EP_STATE_UNCONFIGURED_RESERVED" => ep_state::UNCONFIGURED_RESERVED,
        "DAT_EP_STATE_PASSIVE_CONNECTION_PENDING" => ep_state::PASSIVE_CONNECTION_PENDING,
        "DAT_EP_STATE_UNCONFIGURED_PASSIVE" => ep_state::UNCONFIGURED_PASSIVE,
        "DAT_EP_STATE_ACTIVE_CONNECTION_PENDING" => ep_state::ACTIVE_CONNECTION_PENDING,
        "DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING" => ep_state::TENTATIVE_CONNECTION_PENDING,
        "DAT_EP_STATE_UNCONFIGURED_TENTATIVE" => ep_state::UNCONFIGURED_TENTATIVE,
        "DAT_EP_STATE_CONNECTED" => ep_state::CONNECTED,
        "DAT_EP_STATE_DISCONNECT_PENDING" => ep_state::DISCONNECT_PENDING,
        "DAT_EP_STATE_DISCONNECTED" => ep_state::DISCONNECTED,
        "DAT_EP_STATE_COMPLETION_PENDING" => ep_state::COMPLETION_PENDING,
        "DAT_EP_STATE_CONNECTED_SINGLE_PATH" => ep_state::CONNECTED_SINGLE_PATH,
        "DAT_EP_STATE_CONNECTED_MULTI_PATH" => ep_state::CONNECTED_MULTI_PATH,
        "DAT_EP_STATE_ERROR" => ep_state::ERROR,
    );
    check_const!(p,
        "DAT_DTO_COMPLETION_EVENT" => event::DTO_COMPLETION_EVENT,
        "DAT_RMR_BIND_COMPLETION_EVENT" => event::RMR_BIND_COMPLETION_EVENT,
        "DAT_CONNECTION_REQUEST_EVENT" => event::CONNECTION_REQUEST_EVENT,
        "DAT_CONNECTION_EVENT_ESTABLISHED" => event::CONNECTION_EVENT_ESTABLISHED,
        "DAT_CONNECTION_EVENT_PEER_REJECTED" => event::CONNECTION_EVENT_PEER_REJECTED,
        "DAT_CONNECTION_EVENT_NON_PEER_REJECTED" => event::CONNECTION_EVENT_NON_PEER_REJECTED,
        "DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR" => event::CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR,
        "DAT_CONNECTION_EVENT_DISCONNECTED" => event::CONNECTION_EVENT_DISCONNECTED,
        "DAT_CONNECTION_EVENT_BROKEN" => event::CONNECTION_EVENT_BROKEN,
        "DAT_CONNECTION_EVENT_TIMED_OUT" => event::CONNECTION_EVENT_TIMED_OUT,
        "DAT_CONNECTION_EVENT_UNREACHABLE" => event::CONNECTION_EVENT_UNREACHABLE,
        "DAT_ASYNC_ERROR_EVD_OVERFLOW" => event::ASYNC_ERROR_EVD_OVERFLOW,
        "DAT_ASYNC_ERROR_IA_CATASTROPHIC" => event::ASYNC_ERROR_IA_CATASTROPHIC,
        "DAT_ASYNC_ERROR_EP_BROKEN" => event::ASYNC_ERROR_EP_BROKEN,
        "DAT_ASYNC_ERROR_TIMED_OUT" => event::ASYNC_ERROR_TIMED_OUT,
        "DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR" => event::ASYNC_ERROR_PROVIDER_INTERNAL_ERROR,
        "DAT_HA_DOWN_TO_1" => event::HA_DOWN_TO_1,
        "DAT_HA_UP_TO_MULTI_PATH" => event::HA_UP_TO_MULTI_PATH,
        "DAT_SOFTWARE_EVENT" => event::SOFTWARE_EVENT,
        "DAT_EXTENSION_EVENT" => event::EXTENSION_EVENT,
        "DAT_IB_EXTENSION_RANGE_BASE" => event::IB_EXTENSION_RANGE_BASE,
        "DAT_IW_EXTENSION_RANGE_BASE" => event::IW_EXTENSION_RANGE_BASE,
        "DAT_IB_DTO_EVENT" => event::IB_DTO_EVENT,
        "DAT_IB_UD_CONNECTION_REQUEST_EVENT" => event::IB_UD_CONNECTION_REQUEST_EVENT,
        "DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED" => event::IB_UD_CONNECTION_EVENT_ESTABLISHED,
        "DAT_IB_UD_CONNECTION_REJECT_EVENT" => event::IB_UD_CONNECTION_REJECT_EVENT,
        "DAT_IB_UD_CONNECTION_ERROR_EVENT" => event::IB_UD_CONNECTION_ERROR_EVENT,
        "DAT_IB_COLLECTIVE_EVENT" => event::IB_COLLECTIVE_EVENT,
    );
    check_const!(p,
        "DAT_DTO_SUCCESS" => dto_status::SUCCESS,
        "DAT_DTO_ERR_FLUSHED" => dto_status::ERR_FLUSHED,
        "DAT_DTO_ERR_LOCAL_LENGTH" => dto_status::ERR_LOCAL_LENGTH,
        "DAT_DTO_ERR_LOCAL_EP" => dto_status::ERR_LOCAL_EP,
        "DAT_DTO_ERR_LOCAL_PROTECTION" => dto_status::ERR_LOCAL_PROTECTION,
        "DAT_DTO_ERR_BAD_RESPONSE" => dto_status::ERR_BAD_RESPONSE,
        "DAT_DTO_ERR_REMOTE_ACCESS" => dto_status::ERR_REMOTE_ACCESS,
        "DAT_DTO_ERR_REMOTE_RESPONDER" => dto_status::ERR_REMOTE_RESPONDER,
        "DAT_DTO_ERR_TRANSPORT" => dto_status::ERR_TRANSPORT,
        "DAT_DTO_ERR_RECEIVER_NOT_READY" => dto_status::ERR_RECEIVER_NOT_READY,
        "DAT_DTO_ERR_PARTIAL_PACKET" => dto_status::ERR_PARTIAL_PACKET,
        "DAT_RMR_OPERATION_FAILED" => dto_status::RMR_OPERATION_FAILED,
        "DAT_DTO_ERR_LOCAL_MM_ERROR" => dto_status::ERR_LOCAL_MM_ERROR,
        "DAT_DTO_LENGTH_ERROR" => dto_status::LENGTH_ERROR,
        "DAT_DTO_FAILURE" => dto_status::FAILURE,
        "DAT_RMR_BIND_SUCCESS" => dto_status::RMR_BIND_SUCCESS,
        "DAT_RMR_BIND_FAILURE" => dto_status::RMR_BIND_FAILURE,
    );
    check_const!(p,
        "DAT_DTO_SEND" => dtos::SEND,
        "DAT_DTO_RDMA_WRITE" => dtos::RDMA_WRITE,
        "DAT_DTO_RDMA_READ" => dtos::RDMA_READ,
        "DAT_DTO_RECEIVE" => dtos::RECEIVE,
        "DAT_DTO_RECEIVE_WITH_INVALIDATE" => dtos::RECEIVE_WITH_INVALIDATE,
        "DAT_DTO_BIND_MW" => dtos::BIND_MW,
        "DAT_DTO_LMR_FMR" => dtos::LMR_FMR,
        "DAT_DTO_LMR_INVALIDATE" => dtos::LMR_INVALIDATE,
        "DAT_DTO_EXTENSION_BASE" => dtos::EXTENSION_BASE,
        "DAT_IB_DTO_RDMA_WRITE_IMMED" => dtos::IB_RDMA_WRITE_IMMED,
        "DAT_IB_DTO_RECV_IMMED" => dtos::IB_RECV_IMMED,
        "DAT_IB_DTO_FETCH_ADD" => dtos::IB_FETCH_ADD,
        "DAT_IB_DTO_CMP_SWAP" => dtos::IB_CMP_SWAP,
        "DAT_IB_DTO_RECV_MSG_IMMED" => dtos::IB_RECV_MSG_IMMED,
        "DAT_IB_DTO_SEND_UD" => dtos::IB_SEND_UD,
        "DAT_IB_DTO_RECV_UD" => dtos::IB_RECV_UD,
        "DAT_IB_DTO_RECV_UD_IMMED" => dtos::IB_RECV_UD_IMMED,
        "DAT_IB_DTO_COLLECTIVES" => dtos::IB_COLLECTIVES,
    );
    check_const!(p,
        "DAT_EVD_SOFTWARE_FLAG" => evd_flags::SOFTWARE,
        "DAT_EVD_CR_FLAG" => evd_flags::CR,
        "DAT_EVD_DTO_FLAG" => evd_flags::DTO,
        "DAT_EVD_CONNECTION_FLAG" => evd_flags::CONNECTION,
        "DAT_EVD_RMR_BIND_FLAG" => evd_flags::RMR_BIND,
        "DAT_EVD_ASYNC_FLAG" => evd_flags::ASYNC,
        "DAT_EVD_DEFAULT_FLAG" => evd_flags::DEFAULT,
        "DAT_EVD_EXTENSION_BASE" => evd_flags::EXTENSION_BASE,
        "DAT_IB_EVD_EXTENSION_FLAG" => evd_flags::IB_EXTENSION,
    );
    check_const!(p,
        "DAT_COMPLETION_DEFAULT_FLAG" => completion_flags::DEFAULT,
        "DAT_COMPLETION_SUPPRESS_FLAG" => completion_flags::SUPPRESS,
        "DAT_COMPLETION_SOLICITED_WAIT_FLAG" => completion_flags::SOLICITED_WAIT,
        "DAT_COMPLETION_UNSIGNALLED_FLAG" => completion_flags::UNSIGNALLED,
        "DAT_COMPLETION_BARRIER_FENCE_FLAG" => completion_flags::BARRIER_FENCE,
        "DAT_COMPLETION_EVD_THRESHOLD_FLAG" => completion_flags::EVD_THRESHOLD,
        "DAT_COMPLETION_LMR_INVALIDATE_FENCE_FLAG" => completion_flags::LMR_INVALIDATE_FENCE,
    );
    check_const!(p,
        "DAT_MEM_PRIV_NONE_FLAG" => mem_priv::NONE,
        "DAT_MEM_PRIV_LOCAL_READ_FLAG" => mem_priv::LOCAL_READ,
        "DAT_MEM_PRIV_REMOTE_READ_FLAG" => mem_priv::REMOTE_READ,
        "DAT_MEM_PRIV_LOCAL_WRITE_FLAG" => mem_priv::LOCAL_WRITE,
        "DAT_MEM_PRIV_REMOTE_WRITE_FLAG" => mem_priv::REMOTE_WRITE,
        "DAT_MEM_PRIV_ALL_FLAG" => mem_priv::ALL,
        "DAT_MEM_PRIV_EXTENSION_BASE" => mem_priv::EXTENSION_BASE,
        "DAT_MEM_PRIV_READ_FLAG" => mem_priv::READ,
        "DAT_MEM_PRIV_WRITE_FLAG" => mem_priv::WRITE,
        "DAT_IB_MEM_PRIV_REMOTE_ATOMIC" => mem_priv::IB_REMOTE_ATOMIC,
    );
    check_const!(p,
        "DAT_MEM_TYPE_VIRTUAL" => mem_type::VIRTUAL,
        "DAT_MEM_TYPE_LMR" => mem_type::LMR,
        "DAT_MEM_TYPE_SHARED_VIRTUAL" => mem_type::SHARED_VIRTUAL,
    );
    check_const!(p,
        "DAT_VA_TYPE_VA" => va_type::VA,
        "DAT_VA_TYPE_ZB" => va_type::ZB,
    );
    check_const!(p,
        "DAT_CLOSE_ABRUPT_FLAG" => close_flags::ABRUPT,
        "DAT_CLOSE_GRACEFUL_FLAG" => close_flags::GRACEFUL,
        "DAT_CLOSE_DEFAULT" => close_flags::DEFAULT,
    );
    check_const!(p,
        "DAT_CONNECT_DEFAULT_FLAG" => connect_flags::DEFAULT,
        "DAT_CONNECT_MULTIPATH_REQUESTED_FLAG" => connect_flags::MULTIPATH_REQUESTED,
        "DAT_CONNECT_MULTIPATH_REQUIRED_FLAG" => connect_flags::MULTIPATH_REQUIRED,
    );
    check_const!(p,
        "DAT_PSP_CONSUMER_FLAG" => psp_flags::CONSUMER,
        "DAT_PSP_PROVIDER_FLAG" => psp_flags::PROVIDER,
    );
    check_const!(p,
        "DAT_QOS_BEST_EFFORT" => qos::BEST_EFFORT,
        "DAT_QOS_HIGH_THROUGHPUT" => qos::HIGH_THROUGHPUT,
        "DAT_QOS_LOW_LATENCY" => qos::LOW_LATENCY,
        "DAT_QOS_ECONOMY" => qos::ECONOMY,
        "DAT_QOS_PREMIUM" => qos::PREMIUM,
    );
    check_const!(p,
        "DAT_SERVICE_TYPE_RC" => service_type::RC,
        "DAT_SERVICE_TYPE_EXTENSION_BASE" => service_type::EXTENSION_BASE,
        "DAT_IB_SERVICE_TYPE_UD" => service_type::IB_UD,
    );
    check_const!(p,
        "DAT_EVD_STATE_ENABLED" => evd_state::ENABLED,
        "DAT_EVD_STATE_DISABLED" => evd_state::DISABLED,
        "DAT_EVD_STATE_WAITABLE" => evd_state::WAITABLE,
        "DAT_EVD_STATE_UNWAITABLE" => evd_state::UNWAITABLE,
        "DAT_EVD_STATE_CONFIG_NOTIFY" => evd_state::CONFIG_NOTIFY,
        "DAT_EVD_STATE_CONFIG_SOLICITED" => evd_state::CONFIG_SOLICITED,
        "DAT_EVD_STATE_CONFIG_THRESHOLD" => evd_state::CONFIG_THRESHOLD,
    );
    check_const!(p,
        "DAT_RMR_SCOPE_EP" => rmr_scope::EP,
        "DAT_RMR_SCOPE_PZ" => rmr_scope::PZ,
        "DAT_RMR_SCOPE_ANY" => rmr_scope::ANY,
    );
    check_const!(p,
        "DAT_IOV_CONSUMER" => iov_ownership::CONSUMER,
        "DAT_IOV_PROVIDER_NOMOD" => iov_ownership::PROVIDER_NOMOD,
        "DAT_IOV_PROVIDER_MOD" => iov_ownership::PROVIDER_MOD,
    );
    check_const!(p,
        "DAT_PSP_CREATES_EP_NEVER" => ep_creator::NEVER,
        "DAT_PSP_CREATES_EP_IFASKED" => ep_creator::IFASKED,
        "DAT_PSP_CREATES_EP_ALWAYS" => ep_creator::ALWAYS,
    );
    check_const!(p,
        "DAT_EXTENSION_NONE" => extension::NONE,
        "DAT_EXTENSION_IB" => extension::IB,
        "DAT_EXTENSION_IW" => extension::IW,
    );
    check_const!(p,
        "DAT_SRQ_STATE_ERROR" => srq_state::ERROR,
        "DAT_SRQ_STATE_OPERATIONAL" => srq_state::OPERATIONAL,
        "DAT_SRQ_STATE_SHUTDOWN" => srq_state::SHUTDOWN,
    );
    check_const!(p,
        "DAT_PROXY_TYPE_NONE" => proxy_type::NONE,
        "DAT_PROXY_TYPE_AGENT" => proxy_type::AGENT,
        "DAT_PROXY_TYPE_FD" => proxy_type::FD,
    );
    check_const!(p,
        "DAT_PZ_UNIQUE" => pz_support::UNIQUE,
        "DAT_PZ_SHAREABLE" => pz_support::SHAREABLE,
    );
    check_const!(p,
        "DAT_HA_LB_NONE" => ha_lb::NONE,
        "DAT_HA_LB_INTERCOMM" => ha_lb::INTERCOMM,
        "DAT_HA_LB_INTRACOMM" => ha_lb::INTRACOMM,
    );
    check_const!(p,
        "DAT_HA_FALSE" => ha_relationship::FALSE,
        "DAT_HA_TRUE" => ha_relationship::TRUE,
        "DAT_HA_UNKNOWN" => ha_relationship::UNKNOWN,
        "DAT_HA_CONFLICTING" => ha_relationship::CONFLICTING,
        "DAT_HA_EXTENSION_BASE" => ha_relationship::EXTENSION_BASE,
    );
    check_const!(p,
        "DAT_IA_CATASTROPHIC_ERROR" => async_reason::IA_CATASTROPHIC_ERROR,
        "DAT_IA_OTHER_ERROR" => async_reason::IA_OTHER_ERROR,
        "DAT_EP_TRANSFER_TO_ERROR" => async_reason::EP_TRANSFER_TO_ERROR,
        "DAT_EP_OTHER_ERROR" => async_reason::EP_OTHER_ERROR,
        "DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT" => async_reason::SRQ_SOFT_HIGH_WATERMARK_EVENT,
        "DAT_EVD_OVERFLOW_ERROR" => async_reason::EVD_OVERFLOW_ERROR,
        "DAT_EVD_OTHER_ERROR" => async_reason::EVD_OTHER_ERROR,
        "DAT_SRQ_TRANSFER_TO_ERROR" => async_reason::SRQ_TRANSFER_TO_ERROR,
        "DAT_SRQ_OTHER_ERROR" => async_reason::SRQ_OTHER_ERROR,
        "DAT_SRQ_LOW_WATERMARK_EVENT" => async_reason::SRQ_LOW_WATERMARK_EVENT,
        "DAT_LMR_OTHER_ERROR" => async_reason::LMR_OTHER_ERROR,
        "DAT_RMR_OTHER_ERROR" => async_reason::RMR_OTHER_ERROR,
        "DAT_PZ_OTHER_ERROR" => async_reason::PZ_OTHER_ERROR,
    );
    check_const!(p,
        "DAT_IA_FIELD_IA_ADAPTER_NAME" => ia_field::IA_ADAPTER_NAME,
        "DAT_IA_FIELD_IA_VENDOR_NAME" => ia_field::IA_VENDOR_NAME,
        "DAT_IA_FIELD_IA_HARDWARE_MAJOR_VERSION" => ia_field::IA_HARDWARE_MAJOR_VERSION,
        "DAT_IA_FIELD_IA_HARDWARE_MINOR_VERSION" => ia_field::IA_HARDWARE_MINOR_VERSION,
        "DAT_IA_FIELD_IA_FIRMWARE_MAJOR_VERSION" => ia_field::IA_FIRMWARE_MAJOR_VERSION,
        "DAT_IA_FIELD_IA_FIRMWARE_MINOR_VERSION" => ia_field::IA_FIRMWARE_MINOR_VERSION,
        "DAT_IA_FIELD_IA_ADDRESS_PTR" => ia_field::IA_ADDRESS_PTR,
        "DAT_IA_FIELD_IA_MAX_EPS" => ia_field::IA_MAX_EPS,
        "DAT_IA_FIELD_IA_MAX_DTO_PER_EP" => ia_field::IA_MAX_DTO_PER_EP,
        "DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN" => ia_field::IA_MAX_RDMA_READ_PER_EP_IN,
        "DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT" => ia_field::IA_MAX_RDMA_READ_PER_EP_OUT,
        "DAT_IA_FIELD_IA_MAX_EVDS" => ia_field::IA_MAX_EVDS,
        "DAT_IA_FIELD_IA_MAX_EVD_QLEN" => ia_field::IA_MAX_EVD_QLEN,
        "DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_DTO" => ia_field::IA_MAX_IOV_SEGMENTS_PER_DTO,
        "DAT_IA_FIELD_IA_MAX_LMRS" => ia_field::IA_MAX_LMRS,
        "DAT_IA_FIELD_IA_MAX_LMR_BLOCK_SIZE" => ia_field::IA_MAX_LMR_BLOCK_SIZE,
        "DAT_IA_FIELD_IA_MAX_LMR_VIRTUAL_ADDRESS" => ia_field::IA_MAX_LMR_VIRTUAL_ADDRESS,
        "DAT_IA_FIELD_IA_MAX_PZS" => ia_field::IA_MAX_PZS,
        "DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE" => ia_field::IA_MAX_MESSAGE_SIZE,
        "DAT_IA_FIELD_IA_MAX_RDMA_SIZE" => ia_field::IA_MAX_RDMA_SIZE,
        "DAT_IA_FIELD_IA_MAX_RMRS" => ia_field::IA_MAX_RMRS,
        "DAT_IA_FIELD_IA_MAX_RMR_TARGET_ADDRESS" => ia_field::IA_MAX_RMR_TARGET_ADDRESS,
        "DAT_IA_FIELD_IA_MAX_SRQS" => ia_field::IA_MAX_SRQS,
        "DAT_IA_FIELD_IA_MAX_EP_PER_SRQ" => ia_field::IA_MAX_EP_PER_SRQ,
        "DAT_IA_FIELD_IA_MAX_RECV_PER_SRQ" => ia_field::IA_MAX_RECV_PER_SRQ,
        "DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_READ" => ia_field::IA_MAX_IOV_SEGMENTS_PER_RDMA_READ,
        "DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_WRITE" => ia_field::IA_MAX_IOV_SEGMENTS_PER_RDMA_WRITE,
        "DAT_IA_FIELD_IA_MAX_RDMA_READ_IN" => ia_field::IA_MAX_RDMA_READ_IN,
        "DAT_IA_FIELD_IA_MAX_RDMA_READ_OUT" => ia_field::IA_MAX_RDMA_READ_OUT,
        "DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN_GUARANTEED" => ia_field::IA_MAX_RDMA_READ_PER_EP_IN_GUARANTEED,
        "DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT_GUARANTEED" => ia_field::IA_MAX_RDMA_READ_PER_EP_OUT_GUARANTEED,
        "DAT_IA_FIELD_IA_ZB_SUPPORTED" => ia_field::IA_ZB_SUPPORTED,
        "DAT_IA_FIELD_IA_EXTENSIONS_SUPPORTED" => ia_field::IA_EXTENSIONS_SUPPORTED,
        "DAT_IA_FIELD_IA_EXTENSION" => ia_field::IA_EXTENSION,
        "DAT_IA_FIELD_IA_EXTENSION_VERSION" => ia_field::IA_EXTENSION_VERSION,
        "DAT_IA_FIELD_IA_NUM_TRANSPORT_ATTR" => ia_field::IA_NUM_TRANSPORT_ATTR,
        "DAT_IA_FIELD_IA_TRANSPORT_ATTR" => ia_field::IA_TRANSPORT_ATTR,
        "DAT_IA_FIELD_IA_NUM_VENDOR_ATTR" => ia_field::IA_NUM_VENDOR_ATTR,
        "DAT_IA_FIELD_IA_VENDOR_ATTR" => ia_field::IA_VENDOR_ATTR,
        "DAT_IA_FIELD_IA_MAX_MTU_SIZE" => ia_field::IA_MAX_MTU_SIZE,
        "DAT_IA_FIELD_ALL" => ia_field::ALL,
        "DAT_IA_FIELD_NONE" => ia_field::NONE,
    );
    check_const!(p,
        "DAT_PROVIDER_FIELD_PROVIDER_NAME" => provider_field::PROVIDER_NAME,
        "DAT_PROVIDER_FIELD_PROVIDER_VERSION_MAJOR" => provider_field::PROVIDER_VERSION_MAJOR,
        "DAT_PROVIDER_FIELD_PROVIDER_VERSION_MINOR" => provider_field::PROVIDER_VERSION_MINOR,
        "DAT_PROVIDER_FIELD_DAPL_VERSION_MAJOR" => provider_field::DAPL_VERSION_MAJOR,
        "DAT_PROVIDER_FIELD_DAPL_VERSION_MINOR" => provider_field::DAPL_VERSION_MINOR,
        "DAT_PROVIDER_FIELD_LMR_MEM_TYPE_SUPPORTED" => provider_field::LMR_MEM_TYPE_SUPPORTED,
        "DAT_PROVIDER_FIELD_IOV_OWNERSHIP" => provider_field::IOV_OWNERSHIP,
        "DAT_PROVIDER_FIELD_DAT_QOS_SUPPORTED" => provider_field::DAT_QOS_SUPPORTED,
        "DAT_PROVIDER_FIELD_COMPLETION_FLAGS_SUPPORTED" => provider_field::COMPLETION_FLAGS_SUPPORTED,
        "DAT_PROVIDER_FIELD_IS_THREAD_SAFE" => provider_field::IS_THREAD_SAFE,
        "DAT_PROVIDER_FIELD_MAX_PRIVATE_DATA_SIZE" => provider_field::MAX_PRIVATE_DATA_SIZE,
        "DAT_PROVIDER_FIELD_SUPPORTS_MULTIPATH" => provider_field::SUPPORTS_MULTIPATH,
        "DAT_PROVIDER_FIELD_EP_CREATOR" => provider_field::EP_CREATOR,
        "DAT_PROVIDER_FIELD_PZ_SUPPORT" => provider_field::PZ_SUPPORT,
        "DAT_PROVIDER_FIELD_OPTIMAL_BUFFER_ALIGNMENT" => provider_field::OPTIMAL_BUFFER_ALIGNMENT,
        "DAT_PROVIDER_FIELD_EVD_STREAM_MERGING_SUPPORTED" => provider_field::EVD_STREAM_MERGING_SUPPORTED,
        "DAT_PROVIDER_FIELD_SRQ_SUPPORTED" => provider_field::SRQ_SUPPORTED,
        "DAT_PROVIDER_FIELD_SRQ_WATERMARKS_SUPPORTED" => provider_field::SRQ_WATERMARKS_SUPPORTED,
        "DAT_PROVIDER_FIELD_SRQ_EP_PZ_DIFFERENCE_SUPPORTED" => provider_field::SRQ_EP_PZ_DIFFERENCE_SUPPORTED,
        "DAT_PROVIDER_FIELD_SRQ_INFO_SUPPORTED" => provider_field::SRQ_INFO_SUPPORTED,
        "DAT_PROVIDER_FIELD_EP_RECV_INFO_SUPPORTED" => provider_field::EP_RECV_INFO_SUPPORTED,
        "DAT_PROVIDER_FIELD_LMR_SYNC_REQ" => provider_field::LMR_SYNC_REQ,
        "DAT_PROVIDER_FIELD_DTO_ASYNC_RETURN_GUARANTEED" => provider_field::DTO_ASYNC_RETURN_GUARANTEED,
        "DAT_PROVIDER_FIELD_RDMA_WRITE_FOR_RDMA_READ_REQ" => provider_field::RDMA_WRITE_FOR_RDMA_READ_REQ,
        "DAT_PROVIDER_FIELD_RDMA_READ_LMR_RMR_CONTEXT_EXPOSURE" => provider_field::RDMA_READ_LMR_RMR_CONTEXT_EXPOSURE,
        "DAT_PROVIDER_FIELD_RMR_SCOPE_SUPPORTED" => provider_field::RMR_SCOPE_SUPPORTED,
        "DAT_PROVIDER_FIELD_IS_SIGNAL_SAFE" => provider_field::IS_SIGNAL_SAFE,
        "DAT_PROVIDER_FIELD_HA_SUPPORTED" => provider_field::HA_SUPPORTED,
        "DAT_PROVIDER_FIELD_HA_LB" => provider_field::HA_LB,
        "DAT_PROVIDER_FIELD_NUM_PROVIDER_SPECIFIC_ATTR" => provider_field::NUM_PROVIDER_SPECIFIC_ATTR,
        "DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR" => provider_field::PROVIDER_SPECIFIC_ATTR,
        "DAT_PROVIDER_FIELD_ALL" => provider_field::ALL,
        "DAT_PROVIDER_FIELD_NONE" => provider_field::NONE,
    );
    check_const!(p,
        "DAT_EP_FIELD_IA_HANDLE" => ep_field::IA_HANDLE,
        "DAT_EP_FIELD_EP_STATE" => ep_field::EP_STATE,
        "DAT_EP_FIELD_COMM" => ep_field::COMM,
        "DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR" => ep_field::LOCAL_IA_ADDRESS_PTR,
        "DAT_EP_FIELD_LOCAL_PORT_QUAL" => ep_field::LOCAL_PORT_QUAL,
        "DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR" => ep_field::REMOTE_IA_ADDRESS_PTR,
        "DAT_EP_FIELD_REMOTE_PORT_QUAL" => ep_field::REMOTE_PORT_QUAL,
        "DAT_EP_FIELD_PZ_HANDLE" => ep_field::PZ_HANDLE,
        "DAT_EP_FIELD_RECV_EVD_HANDLE" => ep_field::RECV_EVD_HANDLE,
        "DAT_EP_FIELD_REQUEST_EVD_HANDLE" => ep_field::REQUEST_EVD_HANDLE,
        "DAT_EP_FIELD_CONNECT_EVD_HANDLE" => ep_field::CONNECT_EVD_HANDLE,
        "DAT_EP_FIELD_SRQ_HANDLE" => ep_field::SRQ_HANDLE,
        "DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE" => ep_field::EP_ATTR_SERVICE_TYPE,
        "DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE" => ep_field::EP_ATTR_MAX_MESSAGE_SIZE,
        "DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE" => ep_field::EP_ATTR_MAX_RDMA_SIZE,
        "DAT_EP_FIELD_EP_ATTR_QOS" => ep_field::EP_ATTR_QOS,
        "DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS" => ep_field::EP_ATTR_RECV_COMPLETION_FLAGS,
        "DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS" => ep_field::EP_ATTR_REQUEST_COMPLETION_FLAGS,
        "DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS" => ep_field::EP_ATTR_MAX_RECV_DTOS,
        "DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS" => ep_field::EP_ATTR_MAX_REQUEST_DTOS,
        "DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV" => ep_field::EP_ATTR_MAX_RECV_IOV,
        "DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV" => ep_field::EP_ATTR_MAX_REQUEST_IOV,
        "DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN" => ep_field::EP_ATTR_MAX_RDMA_READ_IN,
        "DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT" => ep_field::EP_ATTR_MAX_RDMA_READ_OUT,
        "DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW" => ep_field::EP_ATTR_SRQ_SOFT_HW,
        "DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV" => ep_field::EP_ATTR_MAX_RDMA_READ_IOV,
        "DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV" => ep_field::EP_ATTR_MAX_RDMA_WRITE_IOV,
        "DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR" => ep_field::EP_ATTR_NUM_TRANSPORT_ATTR,
        "DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR" => ep_field::EP_ATTR_TRANSPORT_SPECIFIC_ATTR,
        "DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR" => ep_field::EP_ATTR_NUM_PROVIDER_ATTR,
        "DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR" => ep_field::EP_ATTR_PROVIDER_SPECIFIC_ATTR,
        "DAT_EP_FIELD_EP_ATTR_ALL" => ep_field::EP_ATTR_ALL,
        "DAT_EP_FIELD_ALL" => ep_field::ALL,
    );
    check_const!(p,
        "DAT_SRQ_FIELD_IA_HANDLE" => srq_field::IA_HANDLE,
        "DAT_SRQ_FIELD_SRQ_STATE" => srq_field::SRQ_STATE,
        "DAT_SRQ_FIELD_PZ_HANDLE" => srq_field::PZ_HANDLE,
        "DAT_SRQ_FIELD_MAX_RECV_DTO" => srq_field::MAX_RECV_DTO,
        "DAT_SRQ_FIELD_MAX_RECV_IOV" => srq_field::MAX_RECV_IOV,
        "DAT_SRQ_FIELD_LOW_WATERMARK" => srq_field::LOW_WATERMARK,
        "DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT" => srq_field::AVAILABLE_DTO_COUNT,
        "DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT" => srq_field::OUTSTANDING_DTO_COUNT,
        "DAT_SRQ_FIELD_ALL" => srq_field::ALL,
    );
    check_const!(p,
        "DAT_PZ_FIELD_IA_HANDLE" => pz_field::IA_HANDLE,
        "DAT_PZ_FIELD_ALL" => pz_field::ALL,
    );
    check_const!(p,
        "DAT_PSP_FIELD_IA_HANDLE" => psp_field::IA_HANDLE,
        "DAT_PSP_FIELD_CONN_QUAL" => psp_field::CONN_QUAL,
        "DAT_PSP_FIELD_EVD_HANDLE" => psp_field::EVD_HANDLE,
        "DAT_PSP_FIELD_PSP_FLAGS" => psp_field::PSP_FLAGS,
        "DAT_PSP_FIELD_ALL" => psp_field::ALL,
    );
    check_const!(p,
        "DAT_RSP_FIELD_IA_HANDLE" => rsp_field::IA_HANDLE,
        "DAT_RSP_FIELD_CONN_QUAL" => rsp_field::CONN_QUAL,
        "DAT_RSP_FIELD_EVD_HANDLE" => rsp_field::EVD_HANDLE,
        "DAT_RSP_FIELD_EP_HANDLE" => rsp_field::EP_HANDLE,
        "DAT_RSP_FIELD_ALL" => rsp_field::ALL,
    );
    check_const!(p,
        "DAT_CSP_FIELD_IA_HANDLE" => csp_field::IA_HANDLE,
        "DAT_CSP_FIELD_COMM" => csp_field::COMM,
        "DAT_CSP_FIELD_IA_ADDRESS" => csp_field::IA_ADDRESS,
        "DAT_CSP_FIELD_EVD_HANDLE" => csp_field::EVD_HANDLE,
        "DAT_CSP_FIELD_ALL" => csp_field::ALL,
    );
    check_const!(p,
        "DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR" => cr_field::REMOTE_IA_ADDRESS_PTR,
        "DAT_CR_FIELD_REMOTE_PORT_QUAL" => cr_field::REMOTE_PORT_QUAL,
        "DAT_CR_FIELD_PRIVATE_DATA_SIZE" => cr_field::PRIVATE_DATA_SIZE,
        "DAT_CR_FIELD_PRIVATE_DATA" => cr_field::PRIVATE_DATA,
        "DAT_CR_FIELD_LOCAL_EP_HANDLE" => cr_field::LOCAL_EP_HANDLE,
        "DAT_CR_FIELD_ALL" => cr_field::ALL,
    );
    check_const!(p,
        "DAT_RMR_FIELD_IA_HANDLE" => rmr_field::IA_HANDLE,
        "DAT_RMR_FIELD_PZ_HANDLE" => rmr_field::PZ_HANDLE,
        "DAT_RMR_FIELD_LMR_TRIPLET" => rmr_field::LMR_TRIPLET,
        "DAT_RMR_FIELD_MEM_PRIV" => rmr_field::MEM_PRIV,
        "DAT_RMR_FIELD_RMR_CONTEXT" => rmr_field::RMR_CONTEXT,
        "DAT_RMR_FIELD_RMR_SCOPE" => rmr_field::RMR_SCOPE,
        "DAT_RMR_FIELD_VA_TYPE" => rmr_field::VA_TYPE,
        "DAT_RMR_FIELD_ALL" => rmr_field::ALL,
    );
    check_const!(p,
        "DAT_EVD_FIELD_IA_HANDLE" => evd_field::IA_HANDLE,
        "DAT_EVD_FIELD_EVD_QLEN" => evd_field::EVD_QLEN,
        "DAT_EVD_FIELD_EVD_STATE" => evd_field::EVD_STATE,
        "DAT_EVD_FIELD_CNO" => evd_field::CNO,
        "DAT_EVD_FIELD_EVD_FLAGS" => evd_field::EVD_FLAGS,
        "DAT_EVD_FIELD_ALL" => evd_field::ALL,
    );
    check_const!(p,
        "DAT_LMR_FIELD_IA_HANDLE" => lmr_field::IA_HANDLE,
        "DAT_LMR_FIELD_MEM_TYPE" => lmr_field::MEM_TYPE,
        "DAT_LMR_FIELD_REGION_DESC" => lmr_field::REGION_DESC,
        "DAT_LMR_FIELD_LENGTH" => lmr_field::LENGTH,
        "DAT_LMR_FIELD_PZ_HANDLE" => lmr_field::PZ_HANDLE,
        "DAT_LMR_FIELD_MEM_PRIV" => lmr_field::MEM_PRIV,
        "DAT_LMR_FIELD_VA_TYPE" => lmr_field::VA_TYPE,
        "DAT_LMR_FIELD_LMR_CONTEXT" => lmr_field::LMR_CONTEXT,
        "DAT_LMR_FIELD_RMR_CONTEXT" => lmr_field::RMR_CONTEXT,
        "DAT_LMR_FIELD_REGISTERED_SIZE" => lmr_field::REGISTERED_SIZE,
        "DAT_LMR_FIELD_REGISTERED_ADDRESS" => lmr_field::REGISTERED_ADDRESS,
        "DAT_LMR_FIELD_ALL" => lmr_field::ALL,
    );
    check_const!(p,
        "DAT_CNO_FIELD_IA_HANDLE" => cno_field::IA_HANDLE,
        "DAT_CNO_FIELD_PROXY_TYPE" => cno_field::PROXY_TYPE,
        "DAT_CNO_FIELD_PROXY" => cno_field::PROXY,
        "DAT_CNO_FIELD_ALL" => cno_field::ALL,
    );
    check_const!(p,
        "DAT_IB_FETCH_AND_ADD_OP" => ib_op::FETCH_AND_ADD,
        "DAT_IB_CMP_AND_SWAP_OP" => ib_op::CMP_AND_SWAP,
        "DAT_IB_RDMA_WRITE_IMMED_OP" => ib_op::RDMA_WRITE_IMMED,
        "DAT_IB_UD_SEND_OP" => ib_op::UD_SEND,
        "DAT_IB_QUERY_COUNTERS_OP" => ib_op::QUERY_COUNTERS,
        "DAT_IB_PRINT_COUNTERS_OP" => ib_op::PRINT_COUNTERS,
        "DAT_IB_COLLECTIVE_CREATE_MEMBER_OP" => ib_op::COLLECTIVE_CREATE_MEMBER,
        "DAT_IB_COLLECTIVE_FREE_MEMBER_OP" => ib_op::COLLECTIVE_FREE_MEMBER,
        "DAT_IB_COLLECTIVE_CREATE_GROUP_OP" => ib_op::COLLECTIVE_CREATE_GROUP,
        "DAT_IB_COLLECTIVE_FREE_GROUP_OP" => ib_op::COLLECTIVE_FREE_GROUP,
        "DAT_IB_COLLECTIVE_SET_CLOCK_OP" => ib_op::COLLECTIVE_SET_CLOCK,
        "DAT_IB_COLLECTIVE_READ_CLOCK_OP" => ib_op::COLLECTIVE_READ_CLOCK,
        "DAT_IB_COLLECTIVE_SCATTER_OP" => ib_op::COLLECTIVE_SCATTER,
        "DAT_IB_COLLECTIVE_SCATTERV_OP" => ib_op::COLLECTIVE_SCATTERV,
        "DAT_IB_COLLECTIVE_GATHER_OP" => ib_op::COLLECTIVE_GATHER,
        "DAT_IB_COLLECTIVE_GATHERV_OP" => ib_op::COLLECTIVE_GATHERV,
        "DAT_IB_COLLECTIVE_ALLGATHER_OP" => ib_op::COLLECTIVE_ALLGATHER,
        "DAT_IB_COLLECTIVE_ALLGATHERV_OP" => ib_op::COLLECTIVE_ALLGATHERV,
        "DAT_IB_COLLECTIVE_ALLTOALL_OP" => ib_op::COLLECTIVE_ALLTOALL,
        "DAT_IB_COLLECTIVE_ALLTOALLV_OP" => ib_op::COLLECTIVE_ALLTOALLV,
        "DAT_IB_COLLECTIVE_REDUCE_OP" => ib_op::COLLECTIVE_REDUCE,
        "DAT_IB_COLLECTIVE_ALLREDUCE_OP" => ib_op::COLLECTIVE_ALLREDUCE,
        "DAT_IB_COLLECTIVE_REDUCE_SCATTER_OP" => ib_op::COLLECTIVE_REDUCE_SCATTER,
        "DAT_IB_COLLECTIVE_SCAN_OP" => ib_op::COLLECTIVE_SCAN,
        "DAT_IB_COLLECTIVE_BROADCAST_OP" => ib_op::COLLECTIVE_BROADCAST,
        "DAT_IB_COLLECTIVE_BARRIER_OP" => ib_op::COLLECTIVE_BARRIER,
        "DAT_IB_START_COUNTERS_OP" => ib_op::START_COUNTERS,
        "DAT_IB_STOP_COUNTERS_OP" => ib_op::STOP_COUNTERS,
        "DAT_IB_UD_CM_FREE_OP" => ib_op::UD_CM_FREE,
        "DAT_IB_UD_AH_FREE_OP" => ib_op::UD_AH_FREE,
        "DAT_IB_OPEN_QUERY_OP" => ib_op::OPEN_QUERY,
        "DAT_IB_CLOSE_QUERY_OP" => ib_op::CLOSE_QUERY,
    );
    check_const!(p,
        "DAT_IB_FETCH_AND_ADD" => ib_ext_type::FETCH_AND_ADD,
        "DAT_IB_CMP_AND_SWAP" => ib_ext_type::CMP_AND_SWAP,
        "DAT_IB_RDMA_WRITE_IMMED" => ib_ext_type::RDMA_WRITE_IMMED,
        "DAT_IB_RDMA_WRITE_IMMED_DATA" => ib_ext_type::RDMA_WRITE_IMMED_DATA,
        "DAT_IB_RECV_IMMED_DATA" => ib_ext_type::RECV_IMMED_DATA,
        "DAT_IB_UD_CONNECT_REQUEST" => ib_ext_type::UD_CONNECT_REQUEST,
        "DAT_IB_UD_REMOTE_AH" => ib_ext_type::UD_REMOTE_AH,
        "DAT_IB_UD_PASSIVE_REMOTE_AH" => ib_ext_type::UD_PASSIVE_REMOTE_AH,
        "DAT_IB_UD_SEND" => ib_ext_type::UD_SEND,
        "DAT_IB_UD_RECV" => ib_ext_type::UD_RECV,
        "DAT_IB_UD_CONNECT_REJECT" => ib_ext_type::UD_CONNECT_REJECT,
        "DAT_IB_UD_CONNECT_ERROR" => ib_ext_type::UD_CONNECT_ERROR,
        "DAT_IB_COLLECTIVE_CREATE_STATUS" => ib_ext_type::COLLECTIVE_CREATE_STATUS,
        "DAT_IB_COLLECTIVE_CREATE_DATA" => ib_ext_type::COLLECTIVE_CREATE_DATA,
        "DAT_IB_COLLECTIVE_CLOCK_SET_STATUS" => ib_ext_type::COLLECTIVE_CLOCK_SET_STATUS,
        "DAT_IB_COLLECTIVE_SCATTER_STATUS" => ib_ext_type::COLLECTIVE_SCATTER_STATUS,
        "DAT_IB_COLLECTIVE_SCATTERV_STATUS" => ib_ext_type::COLLECTIVE_SCATTERV_STATUS,
        "DAT_IB_COLLECTIVE_GATHER_STATUS" => ib_ext_type::COLLECTIVE_GATHER_STATUS,
        "DAT_IB_COLLECTIVE_GATHERV_STATUS" => ib_ext_type::COLLECTIVE_GATHERV_STATUS,
        "DAT_IB_COLLECTIVE_ALLGATHER_STATUS" => ib_ext_type::COLLECTIVE_ALLGATHER_STATUS,
        "DAT_IB_COLLECTIVE_ALLGATHERV_STATUS" => ib_ext_type::COLLECTIVE_ALLGATHERV_STATUS,
        "DAT_IB_COLLECTIVE_ALLTOALL_STATUS" => ib_ext_type::COLLECTIVE_ALLTOALL_STATUS,
        "DAT_IB_COLLECTIVE_ALLTOALLV_STATUS" => ib_ext_type::COLLECTIVE_ALLTOALLV_STATUS,
        "DAT_IB_COLLECTIVE_REDUCE_STATUS" => ib_ext_type::COLLECTIVE_REDUCE_STATUS,
        "DAT_IB_COLLECTIVE_ALLREDUCE_STATUS" => ib_ext_type::COLLECTIVE_ALLREDUCE_STATUS,
        "DAT_IB_COLLECTIVE_REDUCE_SCATTER_STATUS" => ib_ext_type::COLLECTIVE_REDUCE_SCATTER_STATUS,
        "DAT_IB_COLLECTIVE_SCAN_STATUS" => ib_ext_type::COLLECTIVE_SCAN_STATUS,
        "DAT_IB_COLLECTIVE_BROADCAST_STATUS" => ib_ext_type::COLLECTIVE_BROADCAST_STATUS,
        "DAT_IB_COLLECTIVE_BARRIER_STATUS" => ib_ext_type::COLLECTIVE_BARRIER_STATUS,
    );
    check_const!(p,
        "DAT_OP_SUCCESS" => ib_status::OP_SUCCESS,
        "DAT_IB_OP_ERR" => ib_status::OP_ERR,
        "DAT_IB_COLL_COMP_ERR" => ib_status::COLL_COMP_ERR,
    );
    check_const!(p,
        "DCNT_IA_PZ_CREATE" => ia_counter::PZ_CREATE,
        "DCNT_IA_PZ_FREE" => ia_counter::PZ_FREE,
        "DCNT_IA_LMR_CREATE" => ia_counter::LMR_CREATE,
        "DCNT_IA_LMR_FREE" => ia_counter::LMR_FREE,
        "DCNT_IA_RMR_CREATE" => ia_counter::RMR_CREATE,
        "DCNT_IA_RMR_FREE" => ia_counter::RMR_FREE,
        "DCNT_IA_PSP_CREATE" => ia_counter::PSP_CREATE,
        "DCNT_IA_PSP_CREATE_ANY" => ia_counter::PSP_CREATE_ANY,
        "DCNT_IA_PSP_FREE" => ia_counter::PSP_FREE,
        "DCNT_IA_RSP_CREATE" => ia_counter::RSP_CREATE,
        "DCNT_IA_RSP_FREE" => ia_counter::RSP_FREE,
        "DCNT_IA_EVD_CREATE" => ia_counter::EVD_CREATE,
        "DCNT_IA_EVD_FREE" => ia_counter::EVD_FREE,
        "DCNT_IA_EP_CREATE" => ia_counter::EP_CREATE,
        "DCNT_IA_EP_FREE" => ia_counter::EP_FREE,
        "DCNT_IA_SRQ_CREATE" => ia_counter::SRQ_CREATE,
        "DCNT_IA_SRQ_FREE" => ia_counter::SRQ_FREE,
        "DCNT_IA_SP_CR" => ia_counter::SP_CR,
        "DCNT_IA_SP_CR_ACCEPTED" => ia_counter::SP_CR_ACCEPTED,
        "DCNT_IA_SP_CR_REJECTED" => ia_counter::SP_CR_REJECTED,
        "DCNT_IA_MEM_ALLOC" => ia_counter::MEM_ALLOC,
        "DCNT_IA_MEM_ALLOC_DATA" => ia_counter::MEM_ALLOC_DATA,
        "DCNT_IA_MEM_FREE" => ia_counter::MEM_FREE,
        "DCNT_IA_ASYNC_ERROR" => ia_counter::ASYNC_ERROR,
        "DCNT_IA_ASYNC_QP_ERROR" => ia_counter::ASYNC_QP_ERROR,
        "DCNT_IA_ASYNC_CQ_ERROR" => ia_counter::ASYNC_CQ_ERROR,
        "DCNT_IA_CM_LISTEN" => ia_counter::CM_LISTEN,
        "DCNT_IA_CM_REQ_TX" => ia_counter::CM_REQ_TX,
        "DCNT_IA_CM_REQ_RX" => ia_counter::CM_REQ_RX,
        "DCNT_IA_CM_REP_TX" => ia_counter::CM_REP_TX,
        "DCNT_IA_CM_REP_RX" => ia_counter::CM_REP_RX,
        "DCNT_IA_CM_RTU_TX" => ia_counter::CM_RTU_TX,
        "DCNT_IA_CM_RTU_RX" => ia_counter::CM_RTU_RX,
        "DCNT_IA_CM_USER_REJ_TX" => ia_counter::CM_USER_REJ_TX,
        "DCNT_IA_CM_USER_REJ_RX" => ia_counter::CM_USER_REJ_RX,
        "DCNT_IA_CM_ACTIVE_EST" => ia_counter::CM_ACTIVE_EST,
        "DCNT_IA_CM_PASSIVE_EST" => ia_counter::CM_PASSIVE_EST,
        "DCNT_IA_CM_AH_REQ_TX" => ia_counter::CM_AH_REQ_TX,
        "DCNT_IA_CM_AH_REQ_RX" => ia_counter::CM_AH_REQ_RX,
        "DCNT_IA_CM_AH_RESOLVED" => ia_counter::CM_AH_RESOLVED,
        "DCNT_IA_CM_DREQ_TX" => ia_counter::CM_DREQ_TX,
        "DCNT_IA_CM_DREQ_RX" => ia_counter::CM_DREQ_RX,
        "DCNT_IA_CM_DREP_TX" => ia_counter::CM_DREP_TX,
        "DCNT_IA_CM_DREP_RX" => ia_counter::CM_DREP_RX,
        "DCNT_IA_CM_MRA_TX" => ia_counter::CM_MRA_TX,
        "DCNT_IA_CM_MRA_RX" => ia_counter::CM_MRA_RX,
        "DCNT_IA_CM_REQ_FULLQ_POLL" => ia_counter::CM_REQ_FULLQ_POLL,
        "DCNT_IA_CM_ERR" => ia_counter::CM_ERR,
        "DCNT_IA_CM_ERR_REQ_FULLQ" => ia_counter::CM_ERR_REQ_FULLQ,
        "DCNT_IA_CM_ERR_REQ_DUP" => ia_counter::CM_ERR_REQ_DUP,
        "DCNT_IA_CM_ERR_REQ_RETRY" => ia_counter::CM_ERR_REQ_RETRY,
        "DCNT_IA_CM_ERR_REP_DUP" => ia_counter::CM_ERR_REP_DUP,
        "DCNT_IA_CM_ERR_REP_RETRY" => ia_counter::CM_ERR_REP_RETRY,
        "DCNT_IA_CM_ERR_RTU_DUP" => ia_counter::CM_ERR_RTU_DUP,
        "DCNT_IA_CM_ERR_RTU_RETRY" => ia_counter::CM_ERR_RTU_RETRY,
        "DCNT_IA_CM_ERR_REFUSED" => ia_counter::CM_ERR_REFUSED,
        "DCNT_IA_CM_ERR_RESET" => ia_counter::CM_ERR_RESET,
        "DCNT_IA_CM_ERR_TIMEOUT" => ia_counter::CM_ERR_TIMEOUT,
        "DCNT_IA_CM_ERR_REJ_TX" => ia_counter::CM_ERR_REJ_TX,
        "DCNT_IA_CM_ERR_REJ_RX" => ia_counter::CM_ERR_REJ_RX,
        "DCNT_IA_CM_ERR_DREQ_DUP" => ia_counter::CM_ERR_DREQ_DUP,
        "DCNT_IA_CM_ERR_DREQ_RETRY" => ia_counter::CM_ERR_DREQ_RETRY,
        "DCNT_IA_CM_ERR_DREP_DUP" => ia_counter::CM_ERR_DREP_DUP,
        "DCNT_IA_CM_ERR_DREP_RETRY" => ia_counter::CM_ERR_DREP_RETRY,
        "DCNT_IA_CM_ERR_MRA_DUP" => ia_counter::CM_ERR_MRA_DUP,
        "DCNT_IA_CM_ERR_MRA_RETRY" => ia_counter::CM_ERR_MRA_RETRY,
        "DCNT_IA_CM_ERR_UNEXPECTED" => ia_counter::CM_ERR_UNEXPECTED,
        "DCNT_IA_LNK_ERR_RCV" => ia_counter::LNK_ERR_RCV,
        "DCNT_IA_LNK_ERR_RCV_REM_PHYS" => ia_counter::LNK_ERR_RCV_REM_PHYS,
        "DCNT_IA_LNK_ERR_RCV_CONSTRAINT" => ia_counter::LNK_ERR_RCV_CONSTRAINT,
        "DCNT_IA_LNK_ERR_XMT_DISCARDS" => ia_counter::LNK_ERR_XMT_DISCARDS,
        "DCNT_IA_LNK_ERR_XMT_CONTRAINT" => ia_counter::LNK_ERR_XMT_CONTRAINT,
        "DCNT_IA_LNK_ERR_INTEGRITY" => ia_counter::LNK_ERR_INTEGRITY,
        "DCNT_IA_LNK_ERR_EXC_BUF_OVERRUN" => ia_counter::LNK_ERR_EXC_BUF_OVERRUN,
        "DCNT_IA_LNK_WARN_RCV_SW_RELAY" => ia_counter::LNK_WARN_RCV_SW_RELAY,
        "DCNT_IA_LNK_WARN_XMT_WAIT" => ia_counter::LNK_WARN_XMT_WAIT,
        "DCNT_IA_DIAG_ERR_RQ_RAE" => ia_counter::DIAG_ERR_RQ_RAE,
        "DCNT_IA_DIAG_ERR_RQ_OOS" => ia_counter::DIAG_ERR_RQ_OOS,
        "DCNT_IA_DIAG_ERR_RQ_RIRE" => ia_counter::DIAG_ERR_RQ_RIRE,
        "DCNT_IA_DIAG_ERR_RQ_UDSDPRD" => ia_counter::DIAG_ERR_RQ_UDSDPRD,
        "DCNT_IA_DIAG_ERR_SQ_RAE" => ia_counter::DIAG_ERR_SQ_RAE,
        "DCNT_IA_DIAG_ERR_SQ_OOS" => ia_counter::DIAG_ERR_SQ_OOS,
        "DCNT_IA_DIAG_ERR_SQ_RIRE" => ia_counter::DIAG_ERR_SQ_RIRE,
        "DCNT_IA_DIAG_ERR_SQ_RREE" => ia_counter::DIAG_ERR_SQ_RREE,
        "DCNT_IA_DIAG_ERR_SQ_TREE" => ia_counter::DIAG_ERR_SQ_TREE,
        "DCNT_IA_ALL_COUNTERS" => ia_counter::ALL_COUNTERS,
    );
    check_const!(p,
        "DCNT_EP_CONNECT" => ep_counter::CONNECT,
        "DCNT_EP_DISCONNECT" => ep_counter::DISCONNECT,
        "DCNT_EP_POST_SEND" => ep_counter::POST_SEND,
        "DCNT_EP_POST_SEND_DATA" => ep_counter::POST_SEND_DATA,
        "DCNT_EP_POST_SEND_UD" => ep_counter::POST_SEND_UD,
        "DCNT_EP_POST_SEND_UD_DATA" => ep_counter::POST_SEND_UD_DATA,
        "DCNT_EP_POST_RECV" => ep_counter::POST_RECV,
        "DCNT_EP_POST_RECV_DATA" => ep_counter::POST_RECV_DATA,
        "DCNT_EP_POST_WRITE" => ep_counter::POST_WRITE,
        "DCNT_EP_POST_WRITE_DATA" => ep_counter::POST_WRITE_DATA,
        "DCNT_EP_POST_WRITE_IMM" => ep_counter::POST_WRITE_IMM,
        "DCNT_EP_POST_WRITE_IMM_DATA" => ep_counter::POST_WRITE_IMM_DATA,
        "DCNT_EP_POST_READ" => ep_counter::POST_READ,
        "DCNT_EP_POST_READ_DATA" => ep_counter::POST_READ_DATA,
        "DCNT_EP_POST_CMP_SWAP" => ep_counter::POST_CMP_SWAP,
        "DCNT_EP_POST_FETCH_ADD" => ep_counter::POST_FETCH_ADD,
        "DCNT_EP_RECV" => ep_counter::RECV,
        "DCNT_EP_RECV_DATA" => ep_counter::RECV_DATA,
        "DCNT_EP_RECV_UD" => ep_counter::RECV_UD,
        "DCNT_EP_RECV_UD_DATA" => ep_counter::RECV_UD_DATA,
        "DCNT_EP_RECV_IMM" => ep_counter::RECV_IMM,
        "DCNT_EP_RECV_IMM_DATA" => ep_counter::RECV_IMM_DATA,
        "DCNT_EP_RECV_RDMA_IMM" => ep_counter::RECV_RDMA_IMM,
        "DCNT_EP_RECV_RDMA_IMM_DATA" => ep_counter::RECV_RDMA_IMM_DATA,
        "DCNT_EP_ALL_COUNTERS" => ep_counter::ALL_COUNTERS,
    );
    check_const!(p,
        "DCNT_EVD_WAIT" => evd_counter::WAIT,
        "DCNT_EVD_WAIT_BLOCKED" => evd_counter::WAIT_BLOCKED,
        "DCNT_EVD_WAIT_NOTIFY" => evd_counter::WAIT_NOTIFY,
        "DCNT_EVD_DEQUEUE" => evd_counter::DEQUEUE,
        "DCNT_EVD_DEQUEUE_FOUND" => evd_counter::DEQUEUE_FOUND,
        "DCNT_EVD_DEQUEUE_NOT_FOUND" => evd_counter::DEQUEUE_NOT_FOUND,
        "DCNT_EVD_DEQUEUE_POLL" => evd_counter::DEQUEUE_POLL,
        "DCNT_EVD_DEQUEUE_POLL_FOUND" => evd_counter::DEQUEUE_POLL_FOUND,
        "DCNT_EVD_CONN_CALLBACK" => evd_counter::CONN_CALLBACK,
        "DCNT_EVD_DTO_CALLBACK" => evd_counter::DTO_CALLBACK,
        "DCNT_EVD_ALL_COUNTERS" => evd_counter::ALL_COUNTERS,
    );
    check_const!(p,
        "DCNT_IA_CM" => ia_counter_type::CM,
        "DCNT_IA_LNK" => ia_counter_type::LNK,
        "DCNT_IA_DIAG" => ia_counter_type::DIAG,
    );
    check_const!(p,
        "DAT_IB_COLLECTIVE_TYPE_INT8" => ib_collective_type::INT8,
        "DAT_IB_COLLECTIVE_TYPE_UINT8" => ib_collective_type::UINT8,
        "DAT_IB_COLLECTIVE_TYPE_INT16" => ib_collective_type::INT16,
        "DAT_IB_COLLECTIVE_TYPE_UINT16" => ib_collective_type::UINT16,
        "DAT_IB_COLLECTIVE_TYPE_INT32" => ib_collective_type::INT32,
        "DAT_IB_COLLECTIVE_TYPE_UINT32" => ib_collective_type::UINT32,
        "DAT_IB_COLLECTIVE_TYPE_INT64" => ib_collective_type::INT64,
        "DAT_IB_COLLECTIVE_TYPE_UINT64" => ib_collective_type::UINT64,
        "DAT_IB_COLLECTIVE_TYPE_FLOAT" => ib_collective_type::FLOAT,
        "DAT_IB_COLLECTIVE_TYPE_DOUBLE" => ib_collective_type::DOUBLE,
        "DAT_IB_COLLECTIVE_TYPE_LONG_DOUBLE" => ib_collective_type::LONG_DOUBLE,
        "DAT_IB_COLLECTIVE_TYPE_SHORT_INT" => ib_collective_type::SHORT_INT,
        "DAT_IB_COLLECTIVE_TYPE_2INT" => ib_collective_type::TWO_INT,
        "DAT_IB_COLLECTIVE_TYPE_FLOAT_INT" => ib_collective_type::FLOAT_INT,
        "DAT_IB_COLLECTIVE_TYPE_LONG_INT" => ib_collective_type::LONG_INT,
        "DAT_IB_COLLECTIVE_TYPE_DOUBLE_INT" => ib_collective_type::DOUBLE_INT,
    );
    check_const!(p,
        "DAT_IB_COLLECTIVE_REDUCE_OP_MAX" => ib_reduce_op::MAX,
        "DAT_IB_COLLECTIVE_REDUCE_OP_MIN" => ib_reduce_op::MIN,
        "DAT_IB_COLLECTIVE_REDUCE_OP_SUM" => ib_reduce_op::SUM,
        "DAT_IB_COLLECTIVE_REDUCE_OP_PROD" => ib_reduce_op::PROD,
        "DAT_IB_COLLECTIVE_REDUCE_OP_LAND" => ib_reduce_op::LAND,
        "DAT_IB_COLLECTIVE_REDUCE_OP_BAND" => ib_reduce_op::BAND,
        "DAT_IB_COLLECTIVE_REDUCE_OP_LOR" => ib_reduce_op::LOR,
        "DAT_IB_COLLECTIVE_REDUCE_OP_BOR" => ib_reduce_op::BOR,
        "DAT_IB_COLLECTIVE_REDUCE_OP_LXOR" => ib_reduce_op::LXOR,
        "DAT_IB_COLLECTIVE_REDUCE_OP_BXOR" => ib_reduce_op::BXOR,
        "DAT_IB_COLLECTIVE_REDUCE_OP_MAXLOC" => ib_reduce_op::MAXLOC,
        "DAT_IB_COLLECTIVE_REDUCE_OP_MINLOC" => ib_reduce_op::MINLOC,
    );
}
