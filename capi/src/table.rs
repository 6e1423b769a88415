//! The `DAT_PROVIDER` table: every slot filled (a NULL slot would crash the consumer that
//! calls it). The optional DAT 2.0 calls the engine does not offer answer
//! `DAT_MODEL_NOT_SUPPORTED`, as OFA dapl's do, saying so on stderr under
//! `FERRODAT_TRACE`: the connectionless service points (`dat_csp_*`) and
//! `dat_ep_common_connect`, `dat_ep_post_send_with_invalidate`,
//! `dat_ep_post_rdma_read_to_rmr` and `dat_ia_ha_related`. Everything else reaches the
//! engine, which may also refuse a model it does not offer with `DAT_MODEL_NOT_SUPPORTED`
//! (endpoint and SRQ watermarks, RMRs for one endpoint).

use crate::ret::model_not_supported;
use crate::{ep, evd, ext, ia, mem, rmr, sp, srq};
use ferrodat_abi::dat::{self as abi};
use zerocopy::FromZeros;

/// A slot function that answers `DAT_MODEL_NOT_SUPPORTED`, with the slot's exact signature.
macro_rules! unsupported_slot {
    ($name:ident, $verb:literal, ($($arg:ty),*)) => {
        unsafe extern "C" fn $name($(_: $arg),*) -> abi::Return {
            model_not_supported($verb)
        }
    };
}

unsupported_slot!(
    csp_create,
    "dat_csp_create",
    (abi::IaHandle, *mut abi::Comm, abi::IaAddressPtr, abi::EvdHandle, *mut abi::CspHandle)
);
unsupported_slot!(
    csp_query,
    "dat_csp_query",
    (abi::CspHandle, abi::CspParamMask, *mut abi::CspParam)
);
unsupported_slot!(csp_free, "dat_csp_free", (abi::CspHandle));
unsupported_slot!(
    ep_common_connect,
    "dat_ep_common_connect",
    (abi::EpHandle, abi::IaAddressPtr, abi::Timeout, abi::Count, *mut libc::c_void)
);
unsupported_slot!(
    ep_post_send_with_invalidate,
    "dat_ep_post_send_with_invalidate",
    (
        abi::EpHandle,
        abi::Count,
        *mut abi::LmrTriplet,
        abi::DtoCookie,
        abi::CompletionFlags,
        abi::Boolean,
        abi::RmrContext
    )
);
unsupported_slot!(
    ep_post_rdma_read_to_rmr,
    "dat_ep_post_rdma_read_to_rmr",
    (
        abi::EpHandle,
        *const abi::RmrTriplet,
        abi::DtoCookie,
        *const abi::RmrTriplet,
        abi::CompletionFlags
    )
);
unsupported_slot!(
    ia_ha_related,
    "dat_ia_ha_related",
    (abi::IaHandle, abi::NamePtr, *mut abi::Boolean)
);

/// The table (its `device_name` is set by the caller, which owns the name).
pub(crate) fn build() -> abi::Provider {
    let mut t = abi::Provider::new_zeroed();
    t.ia_open_func = Some(ia::ia_open);
    t.ia_query_func = Some(ia::ia_query);
    t.ia_close_func = Some(ia::ia_close);
    t.set_consumer_context_func = Some(ia::set_consumer_context);
    t.get_consumer_context_func = Some(ia::get_consumer_context);
    t.get_handle_type_func = Some(ia::get_handle_type);
    t.cno_create_func = Some(evd::cno_create);
    t.cno_modify_agent_func = Some(evd::cno_modify_agent);
    t.cno_query_func = Some(evd::cno_query);
    t.cno_free_func = Some(evd::cno_free);
    t.cno_wait_func = Some(evd::cno_wait);
    t.cr_query_func = Some(sp::cr_query);
    t.cr_accept_func = Some(sp::cr_accept);
    t.cr_reject_func = Some(sp::cr_reject);
    t.cr_handoff_func = Some(sp::cr_handoff);
    t.evd_create_func = Some(evd::evd_create);
    t.evd_query_func = Some(evd::evd_query);
    t.evd_modify_cno_func = Some(evd::evd_modify_cno);
    t.evd_enable_func = Some(evd::evd_enable);
    t.evd_disable_func = Some(evd::evd_disable);
    t.evd_wait_func = Some(evd::evd_wait);
    t.evd_resize_func = Some(evd::evd_resize);
    t.evd_post_se_func = Some(evd::evd_post_se);
    t.evd_dequeue_func = Some(evd::evd_dequeue);
    t.evd_free_func = Some(evd::evd_free);
    t.ep_create_func = Some(ep::ep_create);
    t.ep_query_func = Some(ep::ep_query);
    t.ep_modify_func = Some(ep::ep_modify);
    t.ep_connect_func = Some(ep::ep_connect);
    t.ep_dup_connect_func = Some(ep::ep_dup_connect);
    t.ep_disconnect_func = Some(ep::ep_disconnect);
    t.ep_post_send_func = Some(ep::ep_post_send);
    t.ep_post_recv_func = Some(ep::ep_post_recv);
    t.ep_post_rdma_read_func = Some(ep::ep_post_rdma_read);
    t.ep_post_rdma_write_func = Some(ep::ep_post_rdma_write);
    t.ep_get_status_func = Some(ep::ep_get_status);
    t.ep_free_func = Some(ep::ep_free);
    t.lmr_create_func = Some(mem::lmr_create);
    t.lmr_query_func = Some(mem::lmr_query);
    t.lmr_free_func = Some(mem::lmr_free);
    t.rmr_create_func = Some(rmr::rmr_create);
    t.rmr_query_func = Some(rmr::rmr_query);
    t.rmr_bind_func = Some(rmr::rmr_bind);
    t.rmr_free_func = Some(rmr::rmr_free);
    t.psp_create_func = Some(sp::psp_create);
    t.psp_query_func = Some(sp::psp_query);
    t.psp_free_func = Some(sp::psp_free);
    t.rsp_create_func = Some(sp::rsp_create);
    t.rsp_query_func = Some(sp::rsp_query);
    t.rsp_free_func = Some(sp::rsp_free);
    t.pz_create_func = Some(mem::pz_create);
    t.pz_query_func = Some(mem::pz_query);
    t.pz_free_func = Some(mem::pz_free);
    t.psp_create_any_func = Some(sp::psp_create_any);
    t.ep_reset_func = Some(ep::ep_reset);
    t.evd_set_unwaitable_func = Some(evd::evd_set_unwaitable);
    t.evd_clear_unwaitable_func = Some(evd::evd_clear_unwaitable);
    t.lmr_sync_rdma_read_func = Some(mem::lmr_sync_rdma_read);
    t.lmr_sync_rdma_write_func = Some(mem::lmr_sync_rdma_write);
    t.ep_create_with_srq_func = Some(ep::ep_create_with_srq);
    t.ep_recv_query_func = Some(ep::ep_recv_query);
    t.ep_set_watermark_func = Some(ep::ep_set_watermark);
    t.srq_create_func = Some(srq::srq_create);
    t.srq_free_func = Some(srq::srq_free);
    t.srq_post_recv_func = Some(srq::srq_post_recv);
    t.srq_query_func = Some(srq::srq_query);
    t.srq_resize_func = Some(srq::srq_resize);
    t.srq_set_lw_func = Some(srq::srq_set_lw);
    t.csp_create_func = Some(csp_create);
    t.csp_query_func = Some(csp_query);
    t.csp_free_func = Some(csp_free);
    t.ep_common_connect_func = Some(ep_common_connect);
    t.rmr_create_for_ep_func = Some(rmr::rmr_create_for_ep);
    t.ep_post_send_with_invalidate_func = Some(ep_post_send_with_invalidate);
    t.ep_post_rdma_read_to_rmr_func = Some(ep_post_rdma_read_to_rmr);
    t.cno_fd_create_func = Some(evd::cno_fd_create);
    t.cno_trigger_func = Some(evd::cno_trigger);
    t.ia_ha_related_func = Some(ia_ha_related);
    t.handle_extendedop_func = Some(ext::extended_op);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_slot_is_filled() {
        let t = build();
        // SAFETY: Provider is 81 pointer-sized slots (asserted in abi); reading it as words
        // only looks at their values.
        let words: [usize; 81] = unsafe { std::mem::transmute(t) };
        // Slot 0 (device_name) is set by the owner of the name; slot 1 is ours to leave.
        for (i, w) in words.iter().enumerate().skip(2) {
            assert_ne!(*w, 0, "slot {i} is NULL");
        }
    }

    #[test]
    fn optional_calls_not_offered_answer_model_not_supported_as_ofa_dapl() {
        let expected = abi::ret::CLASS_ERROR | abi::ret::MODEL_NOT_SUPPORTED;
        // SAFETY (both): the slots ignore their arguments.
        unsafe {
            assert_eq!(csp_free(std::ptr::null_mut()), expected);
            assert_eq!(
                ia_ha_related(std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut()),
                expected
            );
        }
    }
}
