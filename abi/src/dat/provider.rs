//! The provider table `DAT_PROVIDER` (`udat_redirection.h`), the function-pointer type of each
//! slot (`dat_redirection.h`, `udat_redirection.h`), the registry entry points
//! (`dat_registry.h`) and the `va_list` of `handle_extendedop_func`.
//!
//! Every slot is an `Option` of an `unsafe extern "C" fn` with the exact C signature. C's
//! `const DAT_PVOID` / `const DAT_NAME_PTR` parameters are `void *const` / `char *const` (the
//! `const` applies to the parameter, not the pointee), so they are `*mut` here; `const T *`
//! parameters are `*const T`. By-value unions and structs (`DAT_CONTEXT`,
//! `DAT_REGION_DESCRIPTION`, `DAT_OS_WAIT_PROXY_AGENT`) are passed as such.

use core::ffi::{c_char, c_void};

use zerocopy::{FromZeros, Immutable, KnownLayout};

use super::*;
use crate::layout::layout;

// ---------------------------------------------------------------------------------------------
// va_list
// ---------------------------------------------------------------------------------------------

/// x86_64 SysV `__va_list_tag`: `va_list` is `__va_list_tag[1]`, so as a parameter it decays
/// to a pointer to the caller's tag ([`VaList`]); `va_arg` in the callee advances the caller's
/// copy. Integer and pointer arguments come from `reg_save_area + gp_offset` while
/// `gp_offset < 48`, then from `overflow_arg_area` in 8-byte steps.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct VaListTag {
    /// Offset in `reg_save_area` of the next general-purpose register argument (0..=48).
    pub gp_offset: u32,
    /// Offset in `reg_save_area` of the next vector register argument (48..=176).
    pub fp_offset: u32,
    /// Next stack argument.
    pub overflow_arg_area: *mut c_void,
    /// The saved argument registers (6 GPRs, then 8 XMMs).
    pub reg_save_area: *mut c_void,
}
layout!(VaListTag, size = 24, gp_offset @ 0, fp_offset @ 4, overflow_arg_area @ 8,
    reg_save_area @ 16);

/// AArch64 AAPCS64 `va_list` (`struct __va_list`), a 32-byte struct passed by value. Being a
/// composite larger than 16 bytes, AAPCS64 passes it by reference: the caller copies it to
/// memory and passes a pointer to the copy in the argument's register. rustc lowers a by-value
/// `extern "C"` parameter of this type the same way (checked against GCC's code for both
/// sides), so [`VaList`] is this struct by value on aarch64. Integer and pointer arguments come
/// from `__gr_top + __gr_offs` while `__gr_offs < 0` (8-byte steps), then from `__stack`.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct VaListAarch64 {
    /// Next stack argument.
    pub __stack: *mut c_void,
    /// End of the saved general-purpose register area.
    pub __gr_top: *mut c_void,
    /// End of the saved vector register area.
    pub __vr_top: *mut c_void,
    /// Negative offset from `__gr_top` of the next register argument; >= 0 once exhausted.
    pub __gr_offs: i32,
    /// Negative offset from `__vr_top` of the next vector register argument.
    pub __vr_offs: i32,
}
layout!(VaListAarch64, size = 32, __stack @ 0, __gr_top @ 8, __vr_top @ 16, __gr_offs @ 24,
    __vr_offs @ 28);

/// The `va_list` parameter of [`HandleExtendedopFunc`] as it is passed on x86_64: a pointer
/// to the caller's `__va_list_tag`.
#[cfg(target_arch = "x86_64")]
pub type VaList = *mut VaListTag;
/// The `va_list` parameter of [`HandleExtendedopFunc`] as it is passed on aarch64: the
/// `struct __va_list` by value (in registers: a pointer to the caller's copy).
#[cfg(target_arch = "aarch64")]
pub type VaList = VaListAarch64;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("abi::dat knows how va_list is passed only on x86_64 and aarch64");

// ---------------------------------------------------------------------------------------------
// Function types, in the order of the header that declares them
// ---------------------------------------------------------------------------------------------

/// `DAT_IA_OPEN_FUNC`: `ia_open_func(name, async_evd_min_qlen, &async_evd_handle, &ia_handle)`.
/// `*async_evd_handle` is in/out: null asks the provider to create the async EVD.
pub type IaOpenFunc =
    Option<unsafe extern "C" fn(NamePtr, Count, *mut EvdHandle, *mut IaHandle) -> Return>;
/// `DAT_IA_OPENV_FUNC`: `dat_ia_openv` (libdat2's entry point; not a slot).
pub type IaOpenvFunc = Option<
    unsafe extern "C" fn(
        NamePtr,
        Count,
        *mut EvdHandle,
        *mut IaHandle,
        u32,
        u32,
        Boolean,
    ) -> Return,
>;
/// `DAT_IA_CLOSE_FUNC`: `(ia_handle, close_flags)`.
pub type IaCloseFunc = Option<unsafe extern "C" fn(IaHandle, CloseFlags) -> Return>;
/// `DAT_IA_QUERY_FUNC`: `(ia_handle, &async_evd, ia_attr_mask, &ia_attr, provider_attr_mask,
/// &provider_attr)`; every pointer may be null.
pub type IaQueryFunc = Option<
    unsafe extern "C" fn(
        IaHandle,
        *mut EvdHandle,
        IaAttrMask,
        *mut IaAttr,
        ProviderAttrMask,
        *mut ProviderAttr,
    ) -> Return,
>;
/// `DAT_SET_CONSUMER_CONTEXT_FUNC`: `(handle, context)`.
pub type SetConsumerContextFunc = Option<unsafe extern "C" fn(Handle, Context) -> Return>;
/// `DAT_GET_CONSUMER_CONTEXT_FUNC`: `(handle, &context)`.
pub type GetConsumerContextFunc = Option<unsafe extern "C" fn(Handle, *mut Context) -> Return>;
/// `DAT_GET_HANDLE_TYPE_FUNC`: `(handle, &handle_type)`.
pub type GetHandleTypeFunc = Option<unsafe extern "C" fn(Handle, *mut HandleType) -> Return>;
/// `DAT_CR_QUERY_FUNC`: `(cr_handle, cr_param_mask, &cr_param)`.
pub type CrQueryFunc = Option<unsafe extern "C" fn(CrHandle, CrParamMask, *mut CrParam) -> Return>;
/// `DAT_CR_ACCEPT_FUNC`: `(cr_handle, ep_handle, private_data_size, private_data)`.
pub type CrAcceptFunc =
    Option<unsafe extern "C" fn(CrHandle, EpHandle, Count, *mut c_void) -> Return>;
/// `DAT_CR_REJECT_FUNC`: `(cr_handle, private_data_size, private_data)`.
pub type CrRejectFunc = Option<unsafe extern "C" fn(CrHandle, Count, *mut c_void) -> Return>;
/// `DAT_CR_HANDOFF_FUNC`: `(cr_handle, handoff)`.
pub type CrHandoffFunc = Option<unsafe extern "C" fn(CrHandle, ConnQual) -> Return>;
/// `DAT_EVD_RESIZE_FUNC`: `(evd_handle, evd_min_qlen)`.
pub type EvdResizeFunc = Option<unsafe extern "C" fn(EvdHandle, Count) -> Return>;
/// `DAT_EVD_POST_SE_FUNC`: `(evd_handle, &event)`.
pub type EvdPostSeFunc = Option<unsafe extern "C" fn(EvdHandle, *const Event) -> Return>;
/// `DAT_EVD_DEQUEUE_FUNC`: `(evd_handle, &event)`.
pub type EvdDequeueFunc = Option<unsafe extern "C" fn(EvdHandle, *mut Event) -> Return>;
/// `DAT_EVD_FREE_FUNC`: `(evd_handle)`.
pub type EvdFreeFunc = Option<unsafe extern "C" fn(EvdHandle) -> Return>;
/// `DAT_EVD_QUERY_FUNC`: `(evd_handle, evd_param_mask, &evd_param)`.
pub type EvdQueryFunc =
    Option<unsafe extern "C" fn(EvdHandle, EvdParamMask, *mut EvdParam) -> Return>;
/// `DAT_EP_CREATE_FUNC`: `(ia_handle, pz_handle, recv_evd, request_evd, connect_evd,
/// &ep_attr, &ep_handle)`; `ep_attr` may be null.
pub type EpCreateFunc = Option<
    unsafe extern "C" fn(
        IaHandle,
        PzHandle,
        EvdHandle,
        EvdHandle,
        EvdHandle,
        *const EpAttr,
        *mut EpHandle,
    ) -> Return,
>;
/// `DAT_EP_CREATE_WITH_SRQ_FUNC`: `(ia_handle, pz_handle, recv_evd, request_evd,
/// connect_evd, srq_handle, &ep_attr, &ep_handle)`.
pub type EpCreateWithSrqFunc = Option<
    unsafe extern "C" fn(
        IaHandle,
        PzHandle,
        EvdHandle,
        EvdHandle,
        EvdHandle,
        SrqHandle,
        *const EpAttr,
        *mut EpHandle,
    ) -> Return,
>;
/// `DAT_EP_QUERY_FUNC`: `(ep_handle, ep_param_mask, &ep_param)`.
pub type EpQueryFunc = Option<unsafe extern "C" fn(EpHandle, EpParamMask, *mut EpParam) -> Return>;
/// `DAT_EP_MODIFY_FUNC`: `(ep_handle, ep_param_mask, &ep_param)`.
pub type EpModifyFunc =
    Option<unsafe extern "C" fn(EpHandle, EpParamMask, *const EpParam) -> Return>;
/// `DAT_EP_CONNECT_FUNC`: `(ep_handle, remote_ia_address, remote_conn_qual, timeout,
/// private_data_size, private_data, qos, connect_flags)`.
pub type EpConnectFunc = Option<
    unsafe extern "C" fn(
        EpHandle,
        IaAddressPtr,
        ConnQual,
        Timeout,
        Count,
        *mut c_void,
        Qos,
        ConnectFlags,
    ) -> Return,
>;
/// `DAT_EP_COMMON_CONNECT_FUNC`: `(ep_handle, remote_ia_address, timeout, private_data_size,
/// private_data)`.
pub type EpCommonConnectFunc =
    Option<unsafe extern "C" fn(EpHandle, IaAddressPtr, Timeout, Count, *mut c_void) -> Return>;
/// `DAT_EP_DUP_CONNECT_FUNC`: `(ep_handle, ep_dup_handle, timeout, private_data_size,
/// private_data, qos)`.
pub type EpDupConnectFunc =
    Option<unsafe extern "C" fn(EpHandle, EpHandle, Timeout, Count, *mut c_void, Qos) -> Return>;
/// `DAT_EP_DISCONNECT_FUNC`: `(ep_handle, close_flags)`.
pub type EpDisconnectFunc = Option<unsafe extern "C" fn(EpHandle, CloseFlags) -> Return>;
/// `DAT_EP_POST_SEND_FUNC`: `(ep_handle, num_segments, local_iov, user_cookie,
/// completion_flags)`.
pub type EpPostSendFunc = Option<
    unsafe extern "C" fn(EpHandle, Count, *mut LmrTriplet, DtoCookie, CompletionFlags) -> Return,
>;
/// `DAT_EP_POST_SEND_WITH_INVALIDATE_FUNC`: `(ep_handle, num_segments, local_iov,
/// user_cookie, completion_flags, invalidate_flag, rmr_context)`.
pub type EpPostSendWithInvalidateFunc = Option<
    unsafe extern "C" fn(
        EpHandle,
        Count,
        *mut LmrTriplet,
        DtoCookie,
        CompletionFlags,
        Boolean,
        RmrContext,
    ) -> Return,
>;
/// `DAT_EP_POST_RECV_FUNC`: `(ep_handle, num_segments, local_iov, user_cookie,
/// completion_flags)`.
pub type EpPostRecvFunc = Option<
    unsafe extern "C" fn(EpHandle, Count, *mut LmrTriplet, DtoCookie, CompletionFlags) -> Return,
>;
/// `DAT_EP_POST_RDMA_READ_FUNC`: `(ep_handle, num_segments, local_iov, user_cookie,
/// &remote_iov, completion_flags)`.
pub type EpPostRdmaReadFunc = Option<
    unsafe extern "C" fn(
        EpHandle,
        Count,
        *mut LmrTriplet,
        DtoCookie,
        *const RmrTriplet,
        CompletionFlags,
    ) -> Return,
>;
/// `DAT_EP_POST_RDMA_READ_TO_RMR_FUNC`: `(ep_handle, &local_iov, user_cookie, &remote_iov,
/// completion_flags)`.
pub type EpPostRdmaReadToRmrFunc = Option<
    unsafe extern "C" fn(
        EpHandle,
        *const RmrTriplet,
        DtoCookie,
        *const RmrTriplet,
        CompletionFlags,
    ) -> Return,
>;
/// `DAT_EP_POST_RDMA_WRITE_FUNC`: `(ep_handle, num_segments, local_iov, user_cookie,
/// &remote_iov, completion_flags)`.
pub type EpPostRdmaWriteFunc = Option<
    unsafe extern "C" fn(
        EpHandle,
        Count,
        *mut LmrTriplet,
        DtoCookie,
        *const RmrTriplet,
        CompletionFlags,
    ) -> Return,
>;
/// `DAT_EP_GET_STATUS_FUNC`: `(ep_handle, &ep_state, &recv_idle, &request_idle)`.
pub type EpGetStatusFunc =
    Option<unsafe extern "C" fn(EpHandle, *mut EpState, *mut Boolean, *mut Boolean) -> Return>;
/// `DAT_EP_FREE_FUNC`: `(ep_handle)`.
pub type EpFreeFunc = Option<unsafe extern "C" fn(EpHandle) -> Return>;
/// `DAT_EP_RESET_FUNC`: `(ep_handle)`.
pub type EpResetFunc = Option<unsafe extern "C" fn(EpHandle) -> Return>;
/// `DAT_EP_RECV_QUERY_FUNC`: `(ep_handle, &nbufs_allocated, &bufs_alloc_span)`.
pub type EpRecvQueryFunc = Option<unsafe extern "C" fn(EpHandle, *mut Count, *mut Count) -> Return>;
/// `DAT_EP_SET_WATERMARK_FUNC`: `(ep_handle, soft_high_watermark, hard_high_watermark)`.
pub type EpSetWatermarkFunc = Option<unsafe extern "C" fn(EpHandle, Count, Count) -> Return>;
/// `DAT_LMR_FREE_FUNC`: `(lmr_handle)`.
pub type LmrFreeFunc = Option<unsafe extern "C" fn(LmrHandle) -> Return>;
/// `DAT_LMR_SYNC_RDMA_READ_FUNC`: `(ia_handle, local_segments, num_segments)`.
pub type LmrSyncRdmaReadFunc =
    Option<unsafe extern "C" fn(IaHandle, *const LmrTriplet, Vlen) -> Return>;
/// `DAT_LMR_SYNC_RDMA_WRITE_FUNC`: `(ia_handle, local_segments, num_segments)`.
pub type LmrSyncRdmaWriteFunc =
    Option<unsafe extern "C" fn(IaHandle, *const LmrTriplet, Vlen) -> Return>;
/// `DAT_RMR_CREATE_FUNC`: `(pz_handle, &rmr_handle)`.
pub type RmrCreateFunc = Option<unsafe extern "C" fn(PzHandle, *mut RmrHandle) -> Return>;
/// `DAT_RMR_CREATE_FOR_EP_FUNC`: `(pz_handle, &rmr_handle)`.
pub type RmrCreateForEpFunc = Option<unsafe extern "C" fn(PzHandle, *mut RmrHandle) -> Return>;
/// `DAT_RMR_QUERY_FUNC`: `(rmr_handle, rmr_param_mask, &rmr_param)`.
pub type RmrQueryFunc =
    Option<unsafe extern "C" fn(RmrHandle, RmrParamMask, *mut RmrParam) -> Return>;
/// `DAT_RMR_BIND_FUNC`: `(rmr_handle, lmr_handle, &lmr_triplet, mem_priv, va_type,
/// ep_handle, user_cookie, completion_flags, &rmr_context)`.
pub type RmrBindFunc = Option<
    unsafe extern "C" fn(
        RmrHandle,
        LmrHandle,
        *const LmrTriplet,
        MemPrivFlags,
        VaType,
        EpHandle,
        RmrCookie,
        CompletionFlags,
        *mut RmrContext,
    ) -> Return,
>;
/// `DAT_RMR_FREE_FUNC`: `(rmr_handle)`.
pub type RmrFreeFunc = Option<unsafe extern "C" fn(RmrHandle) -> Return>;
/// `DAT_PSP_CREATE_FUNC`: `(ia_handle, conn_qual, evd_handle, psp_flags, &psp_handle)`.
pub type PspCreateFunc =
    Option<unsafe extern "C" fn(IaHandle, ConnQual, EvdHandle, PspFlags, *mut PspHandle) -> Return>;
/// `DAT_PSP_CREATE_ANY_FUNC`: `(ia_handle, &conn_qual, evd_handle, psp_flags, &psp_handle)`.
pub type PspCreateAnyFunc = Option<
    unsafe extern "C" fn(IaHandle, *mut ConnQual, EvdHandle, PspFlags, *mut PspHandle) -> Return,
>;
/// `DAT_PSP_QUERY_FUNC`: `(psp_handle, psp_param_mask, &psp_param)`.
pub type PspQueryFunc =
    Option<unsafe extern "C" fn(PspHandle, PspParamMask, *mut PspParam) -> Return>;
/// `DAT_PSP_FREE_FUNC`: `(psp_handle)`.
pub type PspFreeFunc = Option<unsafe extern "C" fn(PspHandle) -> Return>;
/// `DAT_RSP_CREATE_FUNC`: `(ia_handle, conn_qual, ep_handle, evd_handle, &rsp_handle)`.
pub type RspCreateFunc =
    Option<unsafe extern "C" fn(IaHandle, ConnQual, EpHandle, EvdHandle, *mut RspHandle) -> Return>;
/// `DAT_RSP_QUERY_FUNC`: `(rsp_handle, rsp_param_mask, &rsp_param)`.
pub type RspQueryFunc =
    Option<unsafe extern "C" fn(RspHandle, RspParamMask, *mut RspParam) -> Return>;
/// `DAT_RSP_FREE_FUNC`: `(rsp_handle)`.
pub type RspFreeFunc = Option<unsafe extern "C" fn(RspHandle) -> Return>;
/// `DAT_CSP_CREATE_FUNC`: `(ia_handle, &comm, address, evd_handle, &csp_handle)`.
pub type CspCreateFunc = Option<
    unsafe extern "C" fn(IaHandle, *mut Comm, IaAddressPtr, EvdHandle, *mut CspHandle) -> Return,
>;
/// `DAT_CSP_QUERY_FUNC`: `(csp_handle, csp_param_mask, &csp_param)`.
pub type CspQueryFunc =
    Option<unsafe extern "C" fn(CspHandle, CspParamMask, *mut CspParam) -> Return>;
/// `DAT_CSP_FREE_FUNC`: `(csp_handle)`.
pub type CspFreeFunc = Option<unsafe extern "C" fn(CspHandle) -> Return>;
/// `DAT_PZ_CREATE_FUNC`: `(ia_handle, &pz_handle)`.
pub type PzCreateFunc = Option<unsafe extern "C" fn(IaHandle, *mut PzHandle) -> Return>;
/// `DAT_PZ_QUERY_FUNC`: `(pz_handle, pz_param_mask, &pz_param)`.
pub type PzQueryFunc = Option<unsafe extern "C" fn(PzHandle, PzParamMask, *mut PzParam) -> Return>;
/// `DAT_PZ_FREE_FUNC`: `(pz_handle)`.
pub type PzFreeFunc = Option<unsafe extern "C" fn(PzHandle) -> Return>;
/// `DAT_SRQ_CREATE_FUNC`: `(ia_handle, pz_handle, &srq_attr, &srq_handle)`.
pub type SrqCreateFunc =
    Option<unsafe extern "C" fn(IaHandle, PzHandle, *mut SrqAttr, *mut SrqHandle) -> Return>;
/// `DAT_SRQ_SET_LW_FUNC`: `(srq_handle, low_watermark)`.
pub type SrqSetLwFunc = Option<unsafe extern "C" fn(SrqHandle, Count) -> Return>;
/// `DAT_SRQ_FREE_FUNC`: `(srq_handle)`.
pub type SrqFreeFunc = Option<unsafe extern "C" fn(SrqHandle) -> Return>;
/// `DAT_SRQ_QUERY_FUNC`: `(srq_handle, srq_param_mask, &srq_param)`.
pub type SrqQueryFunc =
    Option<unsafe extern "C" fn(SrqHandle, SrqParamMask, *mut SrqParam) -> Return>;
/// `DAT_SRQ_RESIZE_FUNC`: `(srq_handle, srq_max_recv_dto)`.
pub type SrqResizeFunc = Option<unsafe extern "C" fn(SrqHandle, Count) -> Return>;
/// `DAT_SRQ_POST_RECV_FUNC`: `(srq_handle, num_segments, local_iov, user_cookie)`.
pub type SrqPostRecvFunc =
    Option<unsafe extern "C" fn(SrqHandle, Count, *mut LmrTriplet, DtoCookie) -> Return>;
/// `DAT_IA_HA_RELATED_FUNC`: `(ia_handle, provider_name, &answer)`.
pub type IaHaRelatedFunc = Option<unsafe extern "C" fn(IaHandle, NamePtr, *mut Boolean) -> Return>;
/// `DAT_HANDLE_EXTENDEDOP_FUNC`: `(handle, op, args)`, the target of `dat_extension_op`
/// ([`ib_op`] says what `args` holds). libdat2 copies this slot into its registry at
/// registration.
pub type HandleExtendedopFunc = Option<unsafe extern "C" fn(Handle, ExtendedOp, VaList) -> Return>;

/// `DAT_LMR_CREATE_FUNC`: `(ia_handle, mem_type, region_description, length, pz_handle,
/// privileges, va_type, &lmr_handle, &lmr_context, &rmr_context, &registered_length,
/// &registered_address)`.
pub type LmrCreateFunc = Option<
    unsafe extern "C" fn(
        IaHandle,
        MemType,
        RegionDescription,
        Vlen,
        PzHandle,
        MemPrivFlags,
        VaType,
        *mut LmrHandle,
        *mut LmrContext,
        *mut RmrContext,
        *mut Vlen,
        *mut Vaddr,
    ) -> Return,
>;
/// `DAT_LMR_QUERY_FUNC`: `(lmr_handle, lmr_param_mask, &lmr_param)`.
pub type LmrQueryFunc =
    Option<unsafe extern "C" fn(LmrHandle, LmrParamMask, *mut LmrParam) -> Return>;
/// `DAT_EVD_CREATE_FUNC`: `(ia_handle, evd_min_qlen, cno_handle, evd_flags, &evd_handle)`.
pub type EvdCreateFunc =
    Option<unsafe extern "C" fn(IaHandle, Count, CnoHandle, EvdFlags, *mut EvdHandle) -> Return>;
/// `DAT_EVD_MODIFY_CNO_FUNC`: `(evd_handle, cno_handle)`.
pub type EvdModifyCnoFunc = Option<unsafe extern "C" fn(EvdHandle, CnoHandle) -> Return>;
/// `DAT_CNO_CREATE_FUNC`: `(ia_handle, agent, &cno_handle)`.
pub type CnoCreateFunc =
    Option<unsafe extern "C" fn(IaHandle, OsWaitProxyAgent, *mut CnoHandle) -> Return>;
/// `DAT_CNO_FD_CREATE_FUNC`: `(ia_handle, &fd, &cno_handle)`.
pub type CnoFdCreateFunc =
    Option<unsafe extern "C" fn(IaHandle, *mut Fd, *mut CnoHandle) -> Return>;
/// `DAT_CNO_TRIGGER_FUNC`: `(cno_handle, &evd_handle)`.
pub type CnoTriggerFunc = Option<unsafe extern "C" fn(CnoHandle, *mut EvdHandle) -> Return>;
/// `DAT_CNO_MODIFY_AGENT_FUNC`: `(cno_handle, agent)`.
pub type CnoModifyAgentFunc = Option<unsafe extern "C" fn(CnoHandle, OsWaitProxyAgent) -> Return>;
/// `DAT_CNO_QUERY_FUNC`: `(cno_handle, cno_param_mask, &cno_param)`.
pub type CnoQueryFunc =
    Option<unsafe extern "C" fn(CnoHandle, CnoParamMask, *mut CnoParam) -> Return>;
/// `DAT_CNO_FREE_FUNC`: `(cno_handle)`.
pub type CnoFreeFunc = Option<unsafe extern "C" fn(CnoHandle) -> Return>;
/// `DAT_CNO_WAIT_FUNC`: `(cno_handle, timeout, &evd_handle)`.
pub type CnoWaitFunc = Option<unsafe extern "C" fn(CnoHandle, Timeout, *mut EvdHandle) -> Return>;
/// `DAT_EVD_ENABLE_FUNC`: `(evd_handle)`.
pub type EvdEnableFunc = Option<unsafe extern "C" fn(EvdHandle) -> Return>;
/// `DAT_EVD_WAIT_FUNC`: `(evd_handle, timeout, threshold, &event, &n_more_events)`.
pub type EvdWaitFunc =
    Option<unsafe extern "C" fn(EvdHandle, Timeout, Count, *mut Event, *mut Count) -> Return>;
/// `DAT_EVD_DISABLE_FUNC`: `(evd_handle)`.
pub type EvdDisableFunc = Option<unsafe extern "C" fn(EvdHandle) -> Return>;
/// `DAT_EVD_SET_UNWAITABLE_FUNC`: `(evd_handle)`.
pub type EvdSetUnwaitableFunc = Option<unsafe extern "C" fn(EvdHandle) -> Return>;
/// `DAT_EVD_CLEAR_UNWAITABLE_FUNC`: `(evd_handle)`.
pub type EvdClearUnwaitableFunc = Option<unsafe extern "C" fn(EvdHandle) -> Return>;

/// `DAT_PROVIDER_INIT_FUNC`: the exported `dat_provider_init(info, instance_data)`
/// ([`PROVIDER_INIT_FUNC_STR`]); `instance_data` is the `dat.conf` ia_params string.
pub type ProviderInitFunc = Option<unsafe extern "C" fn(*const ProviderInfo, *const c_char)>;
/// `DAT_PROVIDER_FINI_FUNC`: the exported `dat_provider_fini(info)`
/// ([`PROVIDER_FINI_FUNC_STR`]).
pub type ProviderFiniFunc = Option<unsafe extern "C" fn(*const ProviderInfo)>;

// ---------------------------------------------------------------------------------------------
// DAT_PROVIDER
// ---------------------------------------------------------------------------------------------

/// `DAT_PROVIDER` (`struct dat_provider`, `udat_redirection.h`): 81 pointer slots, 648 bytes.
/// libdat2 dispatches every call except `dat_ia_open` through the first word of the handle
/// (`*(DAT_PROVIDER **)handle`), so every object must start with a pointer to this table, and
/// it must live at a stable address. Fill every slot: a null slot crashes the consumer; return
/// [`ret::NOT_IMPLEMENTED`] instead.
#[repr(C)]
#[derive(Debug, Clone, Copy, FromZeros, KnownLayout, Immutable)]
pub struct Provider {
    /// Slot 0: the IA name; libdat2's `dat_ia_close` reads it to find the registry entry.
    pub device_name: *const c_char,
    /// Slot 1: free for the provider.
    pub extension: *mut c_void,
    /// Slot 2.
    pub ia_open_func: IaOpenFunc,
    /// Slot 3.
    pub ia_query_func: IaQueryFunc,
    /// Slot 4.
    pub ia_close_func: IaCloseFunc,
    /// Slot 5.
    pub set_consumer_context_func: SetConsumerContextFunc,
    /// Slot 6.
    pub get_consumer_context_func: GetConsumerContextFunc,
    /// Slot 7.
    pub get_handle_type_func: GetHandleTypeFunc,
    /// Slot 8 (uDAPL only).
    pub cno_create_func: CnoCreateFunc,
    /// Slot 9 (uDAPL only).
    pub cno_modify_agent_func: CnoModifyAgentFunc,
    /// Slot 10 (uDAPL only).
    pub cno_query_func: CnoQueryFunc,
    /// Slot 11 (uDAPL only).
    pub cno_free_func: CnoFreeFunc,
    /// Slot 12 (uDAPL only).
    pub cno_wait_func: CnoWaitFunc,
    /// Slot 13.
    pub cr_query_func: CrQueryFunc,
    /// Slot 14.
    pub cr_accept_func: CrAcceptFunc,
    /// Slot 15.
    pub cr_reject_func: CrRejectFunc,
    /// Slot 16.
    pub cr_handoff_func: CrHandoffFunc,
    /// Slot 17.
    pub evd_create_func: EvdCreateFunc,
    /// Slot 18.
    pub evd_query_func: EvdQueryFunc,
    /// Slot 19 (uDAPL only).
    pub evd_modify_cno_func: EvdModifyCnoFunc,
    /// Slot 20 (uDAPL only).
    pub evd_enable_func: EvdEnableFunc,
    /// Slot 21 (uDAPL only).
    pub evd_disable_func: EvdDisableFunc,
    /// Slot 22 (uDAPL only).
    pub evd_wait_func: EvdWaitFunc,
    /// Slot 23.
    pub evd_resize_func: EvdResizeFunc,
    /// Slot 24.
    pub evd_post_se_func: EvdPostSeFunc,
    /// Slot 25.
    pub evd_dequeue_func: EvdDequeueFunc,
    /// Slot 26.
    pub evd_free_func: EvdFreeFunc,
    /// Slot 27.
    pub ep_create_func: EpCreateFunc,
    /// Slot 28.
    pub ep_query_func: EpQueryFunc,
    /// Slot 29.
    pub ep_modify_func: EpModifyFunc,
    /// Slot 30.
    pub ep_connect_func: EpConnectFunc,
    /// Slot 31.
    pub ep_dup_connect_func: EpDupConnectFunc,
    /// Slot 32.
    pub ep_disconnect_func: EpDisconnectFunc,
    /// Slot 33.
    pub ep_post_send_func: EpPostSendFunc,
    /// Slot 34.
    pub ep_post_recv_func: EpPostRecvFunc,
    /// Slot 35.
    pub ep_post_rdma_read_func: EpPostRdmaReadFunc,
    /// Slot 36.
    pub ep_post_rdma_write_func: EpPostRdmaWriteFunc,
    /// Slot 37.
    pub ep_get_status_func: EpGetStatusFunc,
    /// Slot 38.
    pub ep_free_func: EpFreeFunc,
    /// Slot 39.
    pub lmr_create_func: LmrCreateFunc,
    /// Slot 40.
    pub lmr_query_func: LmrQueryFunc,
    /// Slot 41.
    pub lmr_free_func: LmrFreeFunc,
    /// Slot 42.
    pub rmr_create_func: RmrCreateFunc,
    /// Slot 43.
    pub rmr_query_func: RmrQueryFunc,
    /// Slot 44.
    pub rmr_bind_func: RmrBindFunc,
    /// Slot 45.
    pub rmr_free_func: RmrFreeFunc,
    /// Slot 46.
    pub psp_create_func: PspCreateFunc,
    /// Slot 47.
    pub psp_query_func: PspQueryFunc,
    /// Slot 48.
    pub psp_free_func: PspFreeFunc,
    /// Slot 49.
    pub rsp_create_func: RspCreateFunc,
    /// Slot 50.
    pub rsp_query_func: RspQueryFunc,
    /// Slot 51.
    pub rsp_free_func: RspFreeFunc,
    /// Slot 52.
    pub pz_create_func: PzCreateFunc,
    /// Slot 53.
    pub pz_query_func: PzQueryFunc,
    /// Slot 54.
    pub pz_free_func: PzFreeFunc,
    /// Slot 55 (DAT 1.1).
    pub psp_create_any_func: PspCreateAnyFunc,
    /// Slot 56 (DAT 1.1).
    pub ep_reset_func: EpResetFunc,
    /// Slot 57 (uDAPL 1.1).
    pub evd_set_unwaitable_func: EvdSetUnwaitableFunc,
    /// Slot 58 (uDAPL 1.1).
    pub evd_clear_unwaitable_func: EvdClearUnwaitableFunc,
    /// Slot 59 (DAT 1.2).
    pub lmr_sync_rdma_read_func: LmrSyncRdmaReadFunc,
    /// Slot 60 (DAT 1.2).
    pub lmr_sync_rdma_write_func: LmrSyncRdmaWriteFunc,
    /// Slot 61.
    pub ep_create_with_srq_func: EpCreateWithSrqFunc,
    /// Slot 62.
    pub ep_recv_query_func: EpRecvQueryFunc,
    /// Slot 63.
    pub ep_set_watermark_func: EpSetWatermarkFunc,
    /// Slot 64.
    pub srq_create_func: SrqCreateFunc,
    /// Slot 65.
    pub srq_free_func: SrqFreeFunc,
    /// Slot 66.
    pub srq_post_recv_func: SrqPostRecvFunc,
    /// Slot 67.
    pub srq_query_func: SrqQueryFunc,
    /// Slot 68.
    pub srq_resize_func: SrqResizeFunc,
    /// Slot 69.
    pub srq_set_lw_func: SrqSetLwFunc,
    /// Slot 70 (DAT 2.0).
    pub csp_create_func: CspCreateFunc,
    /// Slot 71 (DAT 2.0).
    pub csp_query_func: CspQueryFunc,
    /// Slot 72 (DAT 2.0).
    pub csp_free_func: CspFreeFunc,
    /// Slot 73 (DAT 2.0).
    pub ep_common_connect_func: EpCommonConnectFunc,
    /// Slot 74 (DAT 2.0).
    pub rmr_create_for_ep_func: RmrCreateForEpFunc,
    /// Slot 75 (DAT 2.0).
    pub ep_post_send_with_invalidate_func: EpPostSendWithInvalidateFunc,
    /// Slot 76 (DAT 2.0).
    pub ep_post_rdma_read_to_rmr_func: EpPostRdmaReadToRmrFunc,
    /// Slot 77 (DAT 2.0).
    pub cno_fd_create_func: CnoFdCreateFunc,
    /// Slot 78 (DAT 2.0).
    pub cno_trigger_func: CnoTriggerFunc,
    /// Slot 79 (DAT 2.0).
    pub ia_ha_related_func: IaHaRelatedFunc,
    /// Slot 80 (`DAT_EXTENSIONS`).
    pub handle_extendedop_func: HandleExtendedopFunc,
}
layout!(Provider, size = 648, device_name @ 0, extension @ 8, ia_open_func @ 16,
    ia_query_func @ 24, ia_close_func @ 32, set_consumer_context_func @ 40,
    get_consumer_context_func @ 48, get_handle_type_func @ 56, cno_create_func @ 64,
    cno_modify_agent_func @ 72, cno_query_func @ 80, cno_free_func @ 88, cno_wait_func @ 96,
    cr_query_func @ 104, cr_accept_func @ 112, cr_reject_func @ 120, cr_handoff_func @ 128,
    evd_create_func @ 136, evd_query_func @ 144, evd_modify_cno_func @ 152,
    evd_enable_func @ 160, evd_disable_func @ 168, evd_wait_func @ 176, evd_resize_func @ 184,
    evd_post_se_func @ 192, evd_dequeue_func @ 200, evd_free_func @ 208, ep_create_func @ 216,
    ep_query_func @ 224, ep_modify_func @ 232, ep_connect_func @ 240, ep_dup_connect_func @ 248,
    ep_disconnect_func @ 256, ep_post_send_func @ 264, ep_post_recv_func @ 272,
    ep_post_rdma_read_func @ 280, ep_post_rdma_write_func @ 288, ep_get_status_func @ 296,
    ep_free_func @ 304, lmr_create_func @ 312, lmr_query_func @ 320, lmr_free_func @ 328,
    rmr_create_func @ 336, rmr_query_func @ 344, rmr_bind_func @ 352, rmr_free_func @ 360,
    psp_create_func @ 368, psp_query_func @ 376, psp_free_func @ 384, rsp_create_func @ 392,
    rsp_query_func @ 400, rsp_free_func @ 408, pz_create_func @ 416, pz_query_func @ 424,
    pz_free_func @ 432, psp_create_any_func @ 440, ep_reset_func @ 448,
    evd_set_unwaitable_func @ 456, evd_clear_unwaitable_func @ 464,
    lmr_sync_rdma_read_func @ 472, lmr_sync_rdma_write_func @ 480,
    ep_create_with_srq_func @ 488, ep_recv_query_func @ 496, ep_set_watermark_func @ 504,
    srq_create_func @ 512, srq_free_func @ 520, srq_post_recv_func @ 528, srq_query_func @ 536,
    srq_resize_func @ 544, srq_set_lw_func @ 552, csp_create_func @ 560, csp_query_func @ 568,
    csp_free_func @ 576, ep_common_connect_func @ 584, rmr_create_for_ep_func @ 592,
    ep_post_send_with_invalidate_func @ 600, ep_post_rdma_read_to_rmr_func @ 608,
    cno_fd_create_func @ 616, cno_trigger_func @ 624, ia_ha_related_func @ 632,
    handle_extendedop_func @ 640);
