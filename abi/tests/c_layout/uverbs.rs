//! `abi::uverbs` against `rdma/ib_user_verbs.h`, `rdma/ib_user_ioctl_verbs.h` and, for the
//! value sets the kernel uapi does not name, `infiniband/verbs.h`.

use crate::probe::Probe;
use ferrodat_abi::uverbs::*;

pub fn register(p: &mut Probe) {
    structs(p);
    constants(p);
}

fn structs(p: &mut Probe) {
    // Headers.
    check_struct!(p, "struct ib_uverbs_cmd_hdr", CmdHdr { command, in_words, out_words });
    check_struct!(
        p,
        "struct ib_uverbs_ex_cmd_hdr",
        ExCmdHdr { response, provider_in_words, provider_out_words, cmd_hdr_reserved }
    );

    // Context, device and port.
    check_struct!(p, "struct ib_uverbs_get_context", GetContext { response });
    check_struct!(
        p,
        "struct ib_uverbs_get_context_resp",
        GetContextResp { async_fd, num_comp_vectors }
    );
    check_struct!(p, "struct ib_uverbs_query_device", QueryDevice { response });
    check_struct!(
        p,
        "struct ib_uverbs_query_device_resp",
        QueryDeviceResp {
            fw_ver,
            node_guid,
            sys_image_guid,
            max_mr_size,
            page_size_cap,
            vendor_id,
            vendor_part_id,
            hw_ver,
            max_qp,
            max_qp_wr,
            device_cap_flags,
            max_sge,
            max_sge_rd,
            max_cq,
            max_cqe,
            max_mr,
            max_pd,
            max_qp_rd_atom,
            max_ee_rd_atom,
            max_res_rd_atom,
            max_qp_init_rd_atom,
            max_ee_init_rd_atom,
            atomic_cap,
            max_ee,
            max_rdd,
            max_mw,
            max_raw_ipv6_qp,
            max_raw_ethy_qp,
            max_mcast_grp,
            max_mcast_qp_attach,
            max_total_mcast_qp_attach,
            max_ah,
            max_fmr,
            max_map_per_fmr,
            max_srq,
            max_srq_wr,
            max_srq_sge,
            max_pkeys,
            local_ca_ack_delay,
            phys_port_cnt,
            reserved,
        }
    );
    check_struct!(p, "struct ib_uverbs_ex_query_device", ExQueryDevice { comp_mask, reserved });
    // The anonymous struct type of `per_transport_caps`, named through typeof.
    check_struct!(
        p,
        "__typeof__(((struct ib_uverbs_odp_caps *)0)->per_transport_caps)",
        OdpPerTransportCaps { rc_odp_caps, uc_odp_caps, ud_odp_caps }
    );
    check_struct!(p, "struct ib_uverbs_odp_caps", OdpCaps {
        general_caps, per_transport_caps, per_transport_caps.rc_odp_caps,
        per_transport_caps.uc_odp_caps, per_transport_caps.ud_odp_caps, reserved,
    });
    check_struct!(
        p,
        "struct ib_uverbs_rss_caps",
        RssCaps {
            supported_qpts,
            max_rwq_indirection_tables,
            max_rwq_indirection_table_size,
            reserved,
        }
    );
    check_struct!(
        p,
        "struct ib_uverbs_tm_caps",
        TmCaps { max_rndv_hdr_size, max_num_tags, flags, max_ops, max_sge, reserved }
    );
    check_struct!(
        p,
        "struct ib_uverbs_cq_moderation_caps",
        CqModerationCaps { max_cq_moderation_count, max_cq_moderation_period, reserved }
    );
    check_struct!(p, "struct ib_uverbs_ex_query_device_resp", ExQueryDeviceResp {
        base, base.fw_ver, base.node_guid, base.device_cap_flags, base.phys_port_cnt,
        base.reserved, comp_mask, response_length,
        odp_caps, odp_caps.general_caps, odp_caps.per_transport_caps.rc_odp_caps,
        odp_caps.per_transport_caps.uc_odp_caps, odp_caps.per_transport_caps.ud_odp_caps,
        odp_caps.reserved, timestamp_mask, hca_core_clock, device_cap_flags_ex,
        rss_caps, rss_caps.supported_qpts, rss_caps.max_rwq_indirection_tables,
        rss_caps.max_rwq_indirection_table_size, rss_caps.reserved, max_wq_type_rq,
        raw_packet_caps, tm_caps, tm_caps.max_rndv_hdr_size, tm_caps.max_num_tags,
        tm_caps.flags, tm_caps.max_ops, tm_caps.max_sge, tm_caps.reserved,
        cq_moderation_caps, cq_moderation_caps.max_cq_moderation_count,
        cq_moderation_caps.max_cq_moderation_period, cq_moderation_caps.reserved, max_dm_size,
        xrc_odp_caps, reserved,
    });
    check_struct!(p, "struct ib_uverbs_query_port", QueryPort { response, port_num, reserved });
    check_struct!(
        p,
        "struct ib_uverbs_query_port_resp",
        QueryPortResp {
            port_cap_flags,
            max_msg_sz,
            bad_pkey_cntr,
            qkey_viol_cntr,
            gid_tbl_len,
            pkey_tbl_len,
            lid,
            sm_lid,
            state,
            max_mtu,
            active_mtu,
            lmc,
            max_vl_num,
            sm_sl,
            subnet_timeout,
            init_type_reply,
            active_width,
            active_speed,
            phys_state,
            link_layer,
            flags,
            reserved,
        }
    );

    // Protection domains and memory regions.
    check_struct!(p, "struct ib_uverbs_alloc_pd", AllocPd { response });
    check_struct!(p, "struct ib_uverbs_alloc_pd_resp", AllocPdResp { pd_handle });
    check_struct!(p, "struct ib_uverbs_dealloc_pd", DeallocPd { pd_handle });
    check_struct!(
        p,
        "struct ib_uverbs_reg_mr",
        RegMr { response, start, length, hca_va, pd_handle, access_flags }
    );
    check_struct!(p, "struct ib_uverbs_reg_mr_resp", RegMrResp { mr_handle, lkey, rkey });
    check_struct!(p, "struct ib_uverbs_dereg_mr", DeregMr { mr_handle });
    check_struct!(
        p,
        "struct ib_uverbs_alloc_mw",
        AllocMw { response, pd_handle, mw_type, reserved }
    );
    check_struct!(p, "struct ib_uverbs_alloc_mw_resp", AllocMwResp { mw_handle, rkey });
    check_struct!(p, "struct ib_uverbs_dealloc_mw", DeallocMw { mw_handle });
    check_const!(p,
        "IBV_MW_TYPE_1" => mw_type::TYPE_1,
        "IBV_MW_TYPE_2" => mw_type::TYPE_2,
    );

    // Completion channels and completion queues.
    check_struct!(p, "struct ib_uverbs_create_comp_channel", CreateCompChannel { response });
    check_struct!(p, "struct ib_uverbs_create_comp_channel_resp", CreateCompChannelResp { fd });
    check_struct!(
        p,
        "struct ib_uverbs_create_cq",
        CreateCq { response, user_handle, cqe, comp_vector, comp_channel, reserved }
    );
    check_struct!(
        p,
        "struct ib_uverbs_ex_create_cq",
        ExCreateCq { user_handle, cqe, comp_vector, comp_channel, comp_mask, flags, reserved }
    );
    check_struct!(p, "struct ib_uverbs_create_cq_resp", CreateCqResp { cq_handle, cqe });
    check_struct!(p, "struct ib_uverbs_ex_create_cq_resp", ExCreateCqResp {
        base, base.cq_handle, base.cqe, comp_mask, response_length,
    });
    check_struct!(p, "struct ib_uverbs_resize_cq", ResizeCq { response, cq_handle, cqe });
    check_struct!(p, "struct ib_uverbs_resize_cq_resp", ResizeCqResp { cqe, reserved });
    check_struct!(p, "struct ib_uverbs_req_notify_cq", ReqNotifyCq { cq_handle, solicited_only });
    check_struct!(p, "struct ib_uverbs_destroy_cq", DestroyCq { response, cq_handle, reserved });
    check_struct!(
        p,
        "struct ib_uverbs_destroy_cq_resp",
        DestroyCqResp { comp_events_reported, async_events_reported }
    );

    // Queue pairs.
    check_struct!(
        p,
        "struct ib_uverbs_create_qp",
        CreateQp {
            response,
            user_handle,
            pd_handle,
            send_cq_handle,
            recv_cq_handle,
            srq_handle,
            max_send_wr,
            max_recv_wr,
            max_send_sge,
            max_recv_sge,
            max_inline_data,
            sq_sig_all,
            qp_type,
            is_srq,
            reserved,
        }
    );
    check_struct!(
        p,
        "struct ib_uverbs_ex_create_qp",
        ExCreateQp {
            user_handle,
            pd_handle,
            send_cq_handle,
            recv_cq_handle,
            srq_handle,
            max_send_wr,
            max_recv_wr,
            max_send_sge,
            max_recv_sge,
            max_inline_data,
            sq_sig_all,
            qp_type,
            is_srq,
            reserved,
            comp_mask,
            create_flags,
            rwq_ind_tbl_handle,
            source_qpn,
        }
    );
    check_struct!(
        p,
        "struct ib_uverbs_create_qp_resp",
        CreateQpResp {
            qp_handle,
            qpn,
            max_send_wr,
            max_recv_wr,
            max_send_sge,
            max_recv_sge,
            max_inline_data,
            reserved,
        }
    );
    check_struct!(p, "struct ib_uverbs_ex_create_qp_resp", ExCreateQpResp {
        base, base.qp_handle, base.qpn, base.reserved, comp_mask, response_length,
    });
    check_struct!(
        p,
        "struct ib_uverbs_qp_dest",
        QpDest {
            dgid,
            flow_label,
            dlid,
            reserved,
            sgid_index,
            hop_limit,
            traffic_class,
            sl,
            src_path_bits,
            static_rate,
            is_global,
            port_num,
        }
    );
    check_struct!(p, "struct ib_uverbs_query_qp", QueryQp { response, qp_handle, attr_mask });
    check_struct!(p, "struct ib_uverbs_query_qp_resp", QueryQpResp {
        dest, dest.dgid, dest.port_num, alt_dest, alt_dest.dgid, alt_dest.port_num,
        max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, qkey, rq_psn,
        sq_psn, dest_qp_num, qp_access_flags, pkey_index, alt_pkey_index, qp_state,
        cur_qp_state, path_mtu, path_mig_state, sq_draining, max_rd_atomic,
        max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry,
        alt_port_num, alt_timeout, sq_sig_all, reserved,
    });
    check_struct!(p, "struct ib_uverbs_modify_qp", ModifyQp {
        dest, dest.dgid, dest.flow_label, dest.dlid, dest.sgid_index, dest.hop_limit,
        dest.traffic_class, dest.sl, dest.static_rate, dest.is_global, dest.port_num,
        alt_dest, alt_dest.dgid, alt_dest.port_num, qp_handle, attr_mask, qkey, rq_psn,
        sq_psn, dest_qp_num, qp_access_flags, pkey_index, alt_pkey_index, qp_state,
        cur_qp_state, path_mtu, path_mig_state, en_sqd_async_notify, max_rd_atomic,
        max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry,
        alt_port_num, alt_timeout, reserved,
    });
    check_struct!(p, "struct ib_uverbs_ex_modify_qp", ExModifyQp {
        base, base.dest, base.qp_handle, base.attr_mask, base.qp_state, base.reserved,
        rate_limit, reserved,
    });
    check_struct!(
        p,
        "struct ib_uverbs_ex_modify_qp_resp",
        ExModifyQpResp { comp_mask, response_length }
    );
    check_struct!(p, "struct ib_uverbs_destroy_qp", DestroyQp { response, qp_handle, reserved });
    check_struct!(p, "struct ib_uverbs_destroy_qp_resp", DestroyQpResp { events_reported });

    // Shared receive queues.
    check_struct!(
        p,
        "struct ib_uverbs_create_srq",
        CreateSrq { response, user_handle, pd_handle, max_wr, max_sge, srq_limit }
    );
    check_struct!(
        p,
        "struct ib_uverbs_create_srq_resp",
        CreateSrqResp { srq_handle, max_wr, max_sge, srqn }
    );
    check_struct!(
        p,
        "struct ib_uverbs_modify_srq",
        ModifySrq { srq_handle, attr_mask, max_wr, srq_limit }
    );
    check_struct!(p, "struct ib_uverbs_destroy_srq", DestroySrq { response, srq_handle, reserved });
    check_struct!(p, "struct ib_uverbs_destroy_srq_resp", DestroySrqResp { events_reported });

    // Event records.
    check_struct!(p, "struct ib_uverbs_comp_event_desc", CompEventDesc { cq_handle });
    check_struct!(
        p,
        "struct ib_uverbs_async_event_desc",
        AsyncEventDesc { element, event_type, reserved }
    );
}

fn constants(p: &mut Probe) {
    check_const!(p,
        "IB_USER_VERBS_ABI_VERSION" => ABI_VERSION,
        "IB_USER_VERBS_CMD_THRESHOLD" => CMD_THRESHOLD,
        "IB_USER_VERBS_CMD_COMMAND_MASK" => CMD_COMMAND_MASK,
        "IB_USER_VERBS_CMD_FLAG_EXTENDED" => CMD_FLAG_EXTENDED,
        "IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE" => MAX_LOG_IND_TBL_SIZE,
        "IB_DEVICE_NAME_MAX" => DEVICE_NAME_MAX,
    );

    check_const!(p,
        "IB_USER_VERBS_CMD_GET_CONTEXT" => cmd::GET_CONTEXT,
        "IB_USER_VERBS_CMD_QUERY_DEVICE" => cmd::QUERY_DEVICE,
        "IB_USER_VERBS_CMD_QUERY_PORT" => cmd::QUERY_PORT,
        "IB_USER_VERBS_CMD_ALLOC_PD" => cmd::ALLOC_PD,
        "IB_USER_VERBS_CMD_DEALLOC_PD" => cmd::DEALLOC_PD,
        "IB_USER_VERBS_CMD_CREATE_AH" => cmd::CREATE_AH,
        "IB_USER_VERBS_CMD_MODIFY_AH" => cmd::MODIFY_AH,
        "IB_USER_VERBS_CMD_QUERY_AH" => cmd::QUERY_AH,
        "IB_USER_VERBS_CMD_DESTROY_AH" => cmd::DESTROY_AH,
        "IB_USER_VERBS_CMD_REG_MR" => cmd::REG_MR,
        "IB_USER_VERBS_CMD_REG_SMR" => cmd::REG_SMR,
        "IB_USER_VERBS_CMD_REREG_MR" => cmd::REREG_MR,
        "IB_USER_VERBS_CMD_QUERY_MR" => cmd::QUERY_MR,
        "IB_USER_VERBS_CMD_DEREG_MR" => cmd::DEREG_MR,
        "IB_USER_VERBS_CMD_ALLOC_MW" => cmd::ALLOC_MW,
        "IB_USER_VERBS_CMD_BIND_MW" => cmd::BIND_MW,
        "IB_USER_VERBS_CMD_DEALLOC_MW" => cmd::DEALLOC_MW,
        "IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL" => cmd::CREATE_COMP_CHANNEL,
        "IB_USER_VERBS_CMD_CREATE_CQ" => cmd::CREATE_CQ,
        "IB_USER_VERBS_CMD_RESIZE_CQ" => cmd::RESIZE_CQ,
        "IB_USER_VERBS_CMD_DESTROY_CQ" => cmd::DESTROY_CQ,
        "IB_USER_VERBS_CMD_POLL_CQ" => cmd::POLL_CQ,
        "IB_USER_VERBS_CMD_PEEK_CQ" => cmd::PEEK_CQ,
        "IB_USER_VERBS_CMD_REQ_NOTIFY_CQ" => cmd::REQ_NOTIFY_CQ,
        "IB_USER_VERBS_CMD_CREATE_QP" => cmd::CREATE_QP,
        "IB_USER_VERBS_CMD_QUERY_QP" => cmd::QUERY_QP,
        "IB_USER_VERBS_CMD_MODIFY_QP" => cmd::MODIFY_QP,
        "IB_USER_VERBS_CMD_DESTROY_QP" => cmd::DESTROY_QP,
        "IB_USER_VERBS_CMD_POST_SEND" => cmd::POST_SEND,
        "IB_USER_VERBS_CMD_POST_RECV" => cmd::POST_RECV,
        "IB_USER_VERBS_CMD_ATTACH_MCAST" => cmd::ATTACH_MCAST,
        "IB_USER_VERBS_CMD_DETACH_MCAST" => cmd::DETACH_MCAST,
        "IB_USER_VERBS_CMD_CREATE_SRQ" => cmd::CREATE_SRQ,
        "IB_USER_VERBS_CMD_MODIFY_SRQ" => cmd::MODIFY_SRQ,
        "IB_USER_VERBS_CMD_QUERY_SRQ" => cmd::QUERY_SRQ,
        "IB_USER_VERBS_CMD_DESTROY_SRQ" => cmd::DESTROY_SRQ,
        "IB_USER_VERBS_CMD_POST_SRQ_RECV" => cmd::POST_SRQ_RECV,
        "IB_USER_VERBS_CMD_OPEN_XRCD" => cmd::OPEN_XRCD,
        "IB_USER_VERBS_CMD_CLOSE_XRCD" => cmd::CLOSE_XRCD,
        "IB_USER_VERBS_CMD_CREATE_XSRQ" => cmd::CREATE_XSRQ,
        "IB_USER_VERBS_CMD_OPEN_QP" => cmd::OPEN_QP,
    );

    check_const!(p,
        "IB_USER_VERBS_EX_CMD_QUERY_DEVICE" => ex_cmd::QUERY_DEVICE,
        "IB_USER_VERBS_EX_CMD_CREATE_CQ" => ex_cmd::CREATE_CQ,
        "IB_USER_VERBS_EX_CMD_CREATE_QP" => ex_cmd::CREATE_QP,
        "IB_USER_VERBS_EX_CMD_MODIFY_QP" => ex_cmd::MODIFY_QP,
        "IB_USER_VERBS_EX_CMD_CREATE_FLOW" => ex_cmd::CREATE_FLOW,
        "IB_USER_VERBS_EX_CMD_DESTROY_FLOW" => ex_cmd::DESTROY_FLOW,
        "IB_USER_VERBS_EX_CMD_CREATE_WQ" => ex_cmd::CREATE_WQ,
        "IB_USER_VERBS_EX_CMD_MODIFY_WQ" => ex_cmd::MODIFY_WQ,
        "IB_USER_VERBS_EX_CMD_DESTROY_WQ" => ex_cmd::DESTROY_WQ,
        "IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL" => ex_cmd::CREATE_RWQ_IND_TBL,
        "IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL" => ex_cmd::DESTROY_RWQ_IND_TBL,
        "IB_USER_VERBS_EX_CMD_MODIFY_CQ" => ex_cmd::MODIFY_CQ,
    );

    check_const!(p,
        "IBV_QPS_RESET" => qp_state::RESET,
        "IBV_QPS_INIT" => qp_state::INIT,
        "IBV_QPS_RTR" => qp_state::RTR,
        "IBV_QPS_RTS" => qp_state::RTS,
        "IBV_QPS_SQD" => qp_state::SQD,
        "IBV_QPS_SQE" => qp_state::SQE,
        "IBV_QPS_ERR" => qp_state::ERR,
        "IBV_QPS_UNKNOWN" => qp_state::UNKNOWN,
        "IBV_MIG_MIGRATED" => mig_state::MIGRATED,
        "IBV_MIG_REARM" => mig_state::REARM,
        "IBV_MIG_ARMED" => mig_state::ARMED,
    );

    check_const!(p,
        "IBV_QP_STATE" => qp_attr::STATE,
        "IBV_QP_CUR_STATE" => qp_attr::CUR_STATE,
        "IBV_QP_EN_SQD_ASYNC_NOTIFY" => qp_attr::EN_SQD_ASYNC_NOTIFY,
        "IBV_QP_ACCESS_FLAGS" => qp_attr::ACCESS_FLAGS,
        "IBV_QP_PKEY_INDEX" => qp_attr::PKEY_INDEX,
        "IBV_QP_PORT" => qp_attr::PORT,
        "IBV_QP_QKEY" => qp_attr::QKEY,
        "IBV_QP_AV" => qp_attr::AV,
        "IBV_QP_PATH_MTU" => qp_attr::PATH_MTU,
        "IBV_QP_TIMEOUT" => qp_attr::TIMEOUT,
        "IBV_QP_RETRY_CNT" => qp_attr::RETRY_CNT,
        "IBV_QP_RNR_RETRY" => qp_attr::RNR_RETRY,
        "IBV_QP_RQ_PSN" => qp_attr::RQ_PSN,
        "IBV_QP_MAX_QP_RD_ATOMIC" => qp_attr::MAX_QP_RD_ATOMIC,
        "IBV_QP_ALT_PATH" => qp_attr::ALT_PATH,
        "IBV_QP_MIN_RNR_TIMER" => qp_attr::MIN_RNR_TIMER,
        "IBV_QP_SQ_PSN" => qp_attr::SQ_PSN,
        "IBV_QP_MAX_DEST_RD_ATOMIC" => qp_attr::MAX_DEST_RD_ATOMIC,
        "IBV_QP_PATH_MIG_STATE" => qp_attr::PATH_MIG_STATE,
        "IBV_QP_CAP" => qp_attr::CAP,
        "IBV_QP_DEST_QPN" => qp_attr::DEST_QPN,
        "IBV_QP_RATE_LIMIT" => qp_attr::RATE_LIMIT,
    );

    check_const!(p,
        "IB_UVERBS_ACCESS_LOCAL_WRITE" => access::LOCAL_WRITE,
        "IB_UVERBS_ACCESS_REMOTE_WRITE" => access::REMOTE_WRITE,
        "IB_UVERBS_ACCESS_REMOTE_READ" => access::REMOTE_READ,
        "IB_UVERBS_ACCESS_REMOTE_ATOMIC" => access::REMOTE_ATOMIC,
        "IB_UVERBS_ACCESS_MW_BIND" => access::MW_BIND,
        "IB_UVERBS_ACCESS_ZERO_BASED" => access::ZERO_BASED,
        "IB_UVERBS_ACCESS_ON_DEMAND" => access::ON_DEMAND,
        "IB_UVERBS_ACCESS_HUGETLB" => access::HUGETLB,
        "IB_UVERBS_ACCESS_RELAXED_ORDERING" => access::RELAXED_ORDERING,
        "IB_UVERBS_ACCESS_OPTIONAL_FIRST" => access::OPTIONAL_FIRST,
        "IB_UVERBS_ACCESS_OPTIONAL_LAST" => access::OPTIONAL_LAST,
        "IB_UVERBS_ACCESS_OPTIONAL_RANGE" => access::OPTIONAL_RANGE,
        // The libibverbs names must agree with the uapi ones.
        "IBV_ACCESS_LOCAL_WRITE" => access::LOCAL_WRITE,
        "IBV_ACCESS_REMOTE_WRITE" => access::REMOTE_WRITE,
        "IBV_ACCESS_REMOTE_READ" => access::REMOTE_READ,
        "IBV_ACCESS_REMOTE_ATOMIC" => access::REMOTE_ATOMIC,
        "IBV_ACCESS_MW_BIND" => access::MW_BIND,
        "IBV_ACCESS_ZERO_BASED" => access::ZERO_BASED,
        "IBV_ACCESS_ON_DEMAND" => access::ON_DEMAND,
        "IBV_ACCESS_HUGETLB" => access::HUGETLB,
        "IBV_ACCESS_RELAXED_ORDERING" => access::RELAXED_ORDERING,
    );

    check_const!(p,
        "IBV_MTU_256" => mtu::MTU_256,
        "IBV_MTU_512" => mtu::MTU_512,
        "IBV_MTU_1024" => mtu::MTU_1024,
        "IBV_MTU_2048" => mtu::MTU_2048,
        "IBV_MTU_4096" => mtu::MTU_4096,
    );

    check_const!(p,
        "IBV_RATE_MAX" => rate::MAX,
        "IBV_RATE_2_5_GBPS" => rate::RATE_2_5_GBPS,
        "IBV_RATE_5_GBPS" => rate::RATE_5_GBPS,
        "IBV_RATE_10_GBPS" => rate::RATE_10_GBPS,
        "IBV_RATE_20_GBPS" => rate::RATE_20_GBPS,
        "IBV_RATE_30_GBPS" => rate::RATE_30_GBPS,
        "IBV_RATE_40_GBPS" => rate::RATE_40_GBPS,
        "IBV_RATE_60_GBPS" => rate::RATE_60_GBPS,
        "IBV_RATE_80_GBPS" => rate::RATE_80_GBPS,
        "IBV_RATE_120_GBPS" => rate::RATE_120_GBPS,
        "IBV_RATE_14_GBPS" => rate::RATE_14_GBPS,
        "IBV_RATE_56_GBPS" => rate::RATE_56_GBPS,
        "IBV_RATE_112_GBPS" => rate::RATE_112_GBPS,
        "IBV_RATE_168_GBPS" => rate::RATE_168_GBPS,
        "IBV_RATE_25_GBPS" => rate::RATE_25_GBPS,
        "IBV_RATE_100_GBPS" => rate::RATE_100_GBPS,
        "IBV_RATE_200_GBPS" => rate::RATE_200_GBPS,
        "IBV_RATE_300_GBPS" => rate::RATE_300_GBPS,
        "IBV_RATE_28_GBPS" => rate::RATE_28_GBPS,
        "IBV_RATE_50_GBPS" => rate::RATE_50_GBPS,
        "IBV_RATE_400_GBPS" => rate::RATE_400_GBPS,
        "IBV_RATE_600_GBPS" => rate::RATE_600_GBPS,
        "IBV_RATE_800_GBPS" => rate::RATE_800_GBPS,
        "IBV_RATE_1200_GBPS" => rate::RATE_1200_GBPS,
    );

    check_const!(p,
        "IB_UVERBS_QPT_RC" => qp_type::RC,
        "IB_UVERBS_QPT_UC" => qp_type::UC,
        "IB_UVERBS_QPT_UD" => qp_type::UD,
        "IB_UVERBS_QPT_RAW_PACKET" => qp_type::RAW_PACKET,
        "IB_UVERBS_QPT_XRC_INI" => qp_type::XRC_INI,
        "IB_UVERBS_QPT_XRC_TGT" => qp_type::XRC_TGT,
        "IB_UVERBS_QPT_DRIVER" => qp_type::DRIVER,
        "IBV_QPT_RC" => qp_type::RC,
        "IBV_QPT_UC" => qp_type::UC,
        "IBV_QPT_UD" => qp_type::UD,
        "IBV_QPT_RAW_PACKET" => qp_type::RAW_PACKET,
        "IBV_QPT_XRC_SEND" => qp_type::XRC_INI,
        "IBV_QPT_XRC_RECV" => qp_type::XRC_TGT,
        "IBV_QPT_DRIVER" => qp_type::DRIVER,
    );

    check_const!(p,
        "IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK" => qp_create_flags::BLOCK_MULTICAST_LOOPBACK,
        "IB_UVERBS_QP_CREATE_SCATTER_FCS" => qp_create_flags::SCATTER_FCS,
        "IB_UVERBS_QP_CREATE_CVLAN_STRIPPING" => qp_create_flags::CVLAN_STRIPPING,
        "IBV_QP_CREATE_SOURCE_QPN" => qp_create_flags::SOURCE_QPN,
        "IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING" => qp_create_flags::PCI_WRITE_END_PADDING,
        "IB_UVERBS_QP_CREATE_SQ_SIG_ALL" => qp_create_flags::SQ_SIG_ALL,
        "IB_UVERBS_CREATE_QP_MASK_IND_TABLE" => create_qp_mask::IND_TABLE,
        "IB_UVERBS_CREATE_QP_SUP_COMP_MASK" => create_qp_mask::SUP_COMP_MASK,
        "IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION" => cq_flags::TIMESTAMP_COMPLETION,
        "IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN" => cq_flags::IGNORE_OVERRUN,
        "IBV_SRQ_MAX_WR" => srq_attr::MAX_WR,
        "IBV_SRQ_LIMIT" => srq_attr::LIMIT,
    );

    check_const!(p,
        "IB_UVERBS_WC_SEND" => wc_opcode::SEND,
        "IB_UVERBS_WC_RDMA_WRITE" => wc_opcode::RDMA_WRITE,
        "IB_UVERBS_WC_RDMA_READ" => wc_opcode::RDMA_READ,
        "IB_UVERBS_WC_COMP_SWAP" => wc_opcode::COMP_SWAP,
        "IB_UVERBS_WC_FETCH_ADD" => wc_opcode::FETCH_ADD,
        "IB_UVERBS_WC_BIND_MW" => wc_opcode::BIND_MW,
        "IB_UVERBS_WC_LOCAL_INV" => wc_opcode::LOCAL_INV,
        "IB_UVERBS_WC_TSO" => wc_opcode::TSO,
        "IBV_WC_SEND" => wc_opcode::SEND,
        "IBV_WC_RDMA_WRITE" => wc_opcode::RDMA_WRITE,
        "IBV_WC_RDMA_READ" => wc_opcode::RDMA_READ,
        "IBV_WC_COMP_SWAP" => wc_opcode::COMP_SWAP,
        "IBV_WC_FETCH_ADD" => wc_opcode::FETCH_ADD,
        "IBV_WC_BIND_MW" => wc_opcode::BIND_MW,
        "IBV_WC_LOCAL_INV" => wc_opcode::LOCAL_INV,
        "IBV_WC_TSO" => wc_opcode::TSO,
        "IBV_WC_ATOMIC_WRITE" => wc_opcode::ATOMIC_WRITE,
        "IBV_WC_RECV" => wc_opcode::RECV,
        "IBV_WC_RECV_RDMA_WITH_IMM" => wc_opcode::RECV_RDMA_WITH_IMM,
        "IBV_WC_TM_ADD" => wc_opcode::TM_ADD,
        "IBV_WC_TM_DEL" => wc_opcode::TM_DEL,
        "IBV_WC_TM_SYNC" => wc_opcode::TM_SYNC,
        "IBV_WC_TM_RECV" => wc_opcode::TM_RECV,
        "IBV_WC_TM_NO_TAG" => wc_opcode::TM_NO_TAG,
        "IBV_WC_DRIVER1" => wc_opcode::DRIVER1,
        "IBV_WC_DRIVER2" => wc_opcode::DRIVER2,
        "IBV_WC_DRIVER3" => wc_opcode::DRIVER3,
    );

    check_const!(p,
        "IBV_WC_SUCCESS" => wc_status::SUCCESS,
        "IBV_WC_LOC_LEN_ERR" => wc_status::LOC_LEN_ERR,
        "IBV_WC_LOC_QP_OP_ERR" => wc_status::LOC_QP_OP_ERR,
        "IBV_WC_LOC_EEC_OP_ERR" => wc_status::LOC_EEC_OP_ERR,
        "IBV_WC_LOC_PROT_ERR" => wc_status::LOC_PROT_ERR,
        "IBV_WC_WR_FLUSH_ERR" => wc_status::WR_FLUSH_ERR,
        "IBV_WC_MW_BIND_ERR" => wc_status::MW_BIND_ERR,
        "IBV_WC_BAD_RESP_ERR" => wc_status::BAD_RESP_ERR,
        "IBV_WC_LOC_ACCESS_ERR" => wc_status::LOC_ACCESS_ERR,
        "IBV_WC_REM_INV_REQ_ERR" => wc_status::REM_INV_REQ_ERR,
        "IBV_WC_REM_ACCESS_ERR" => wc_status::REM_ACCESS_ERR,
        "IBV_WC_REM_OP_ERR" => wc_status::REM_OP_ERR,
        "IBV_WC_RETRY_EXC_ERR" => wc_status::RETRY_EXC_ERR,
        "IBV_WC_RNR_RETRY_EXC_ERR" => wc_status::RNR_RETRY_EXC_ERR,
        "IBV_WC_LOC_RDD_VIOL_ERR" => wc_status::LOC_RDD_VIOL_ERR,
        "IBV_WC_REM_INV_RD_REQ_ERR" => wc_status::REM_INV_RD_REQ_ERR,
        "IBV_WC_REM_ABORT_ERR" => wc_status::REM_ABORT_ERR,
        "IBV_WC_INV_EECN_ERR" => wc_status::INV_EECN_ERR,
        "IBV_WC_INV_EEC_STATE_ERR" => wc_status::INV_EEC_STATE_ERR,
        "IBV_WC_FATAL_ERR" => wc_status::FATAL_ERR,
        "IBV_WC_RESP_TIMEOUT_ERR" => wc_status::RESP_TIMEOUT_ERR,
        "IBV_WC_GENERAL_ERR" => wc_status::GENERAL_ERR,
        "IBV_WC_TM_ERR" => wc_status::TM_ERR,
        "IBV_WC_TM_RNDV_INCOMPLETE" => wc_status::TM_RNDV_INCOMPLETE,
    );

    check_const!(p,
        "IBV_WC_GRH" => wc_flags::GRH,
        "IBV_WC_WITH_IMM" => wc_flags::WITH_IMM,
        "IBV_WC_IP_CSUM_OK" => wc_flags::IP_CSUM_OK,
        "IBV_WC_WITH_INV" => wc_flags::WITH_INV,
        "IBV_WC_TM_SYNC_REQ" => wc_flags::TM_SYNC_REQ,
        "IBV_WC_TM_MATCH" => wc_flags::TM_MATCH,
        "IBV_WC_TM_DATA_VALID" => wc_flags::TM_DATA_VALID,
    );

    check_const!(p,
        "IB_UVERBS_WR_RDMA_WRITE" => wr_opcode::RDMA_WRITE,
        "IB_UVERBS_WR_RDMA_WRITE_WITH_IMM" => wr_opcode::RDMA_WRITE_WITH_IMM,
        "IB_UVERBS_WR_SEND" => wr_opcode::SEND,
        "IB_UVERBS_WR_SEND_WITH_IMM" => wr_opcode::SEND_WITH_IMM,
        "IB_UVERBS_WR_RDMA_READ" => wr_opcode::RDMA_READ,
        "IB_UVERBS_WR_ATOMIC_CMP_AND_SWP" => wr_opcode::ATOMIC_CMP_AND_SWP,
        "IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD" => wr_opcode::ATOMIC_FETCH_AND_ADD,
        "IB_UVERBS_WR_LOCAL_INV" => wr_opcode::LOCAL_INV,
        "IB_UVERBS_WR_BIND_MW" => wr_opcode::BIND_MW,
        "IB_UVERBS_WR_SEND_WITH_INV" => wr_opcode::SEND_WITH_INV,
        "IB_UVERBS_WR_TSO" => wr_opcode::TSO,
        "IB_UVERBS_WR_RDMA_READ_WITH_INV" => wr_opcode::RDMA_READ_WITH_INV,
        "IB_UVERBS_WR_MASKED_ATOMIC_CMP_AND_SWP" => wr_opcode::MASKED_ATOMIC_CMP_AND_SWP,
        "IB_UVERBS_WR_MASKED_ATOMIC_FETCH_AND_ADD" => wr_opcode::MASKED_ATOMIC_FETCH_AND_ADD,
        "IBV_SEND_FENCE" => send_flags::FENCE,
        "IBV_SEND_SIGNALED" => send_flags::SIGNALED,
        "IBV_SEND_SOLICITED" => send_flags::SOLICITED,
        "IBV_SEND_INLINE" => send_flags::INLINE,
        "IBV_SEND_IP_CSUM" => send_flags::IP_CSUM,
    );

    check_const!(p,
        "IBV_EVENT_CQ_ERR" => event::CQ_ERR,
        "IBV_EVENT_QP_FATAL" => event::QP_FATAL,
        "IBV_EVENT_QP_REQ_ERR" => event::QP_REQ_ERR,
        "IBV_EVENT_QP_ACCESS_ERR" => event::QP_ACCESS_ERR,
        "IBV_EVENT_COMM_EST" => event::COMM_EST,
        "IBV_EVENT_SQ_DRAINED" => event::SQ_DRAINED,
        "IBV_EVENT_PATH_MIG" => event::PATH_MIG,
        "IBV_EVENT_PATH_MIG_ERR" => event::PATH_MIG_ERR,
        "IBV_EVENT_DEVICE_FATAL" => event::DEVICE_FATAL,
        "IBV_EVENT_PORT_ACTIVE" => event::PORT_ACTIVE,
        "IBV_EVENT_PORT_ERR" => event::PORT_ERR,
        "IBV_EVENT_LID_CHANGE" => event::LID_CHANGE,
        "IBV_EVENT_PKEY_CHANGE" => event::PKEY_CHANGE,
        "IBV_EVENT_SM_CHANGE" => event::SM_CHANGE,
        "IBV_EVENT_SRQ_ERR" => event::SRQ_ERR,
        "IBV_EVENT_SRQ_LIMIT_REACHED" => event::SRQ_LIMIT_REACHED,
        "IBV_EVENT_QP_LAST_WQE_REACHED" => event::QP_LAST_WQE_REACHED,
        "IBV_EVENT_CLIENT_REREGISTER" => event::CLIENT_REREGISTER,
        "IBV_EVENT_GID_CHANGE" => event::GID_CHANGE,
        "IBV_EVENT_WQ_FATAL" => event::WQ_FATAL,
    );

    check_const!(p,
        "IBV_PORT_NOP" => port_state::NOP,
        "IBV_PORT_DOWN" => port_state::DOWN,
        "IBV_PORT_INIT" => port_state::INIT,
        "IBV_PORT_ARMED" => port_state::ARMED,
        "IBV_PORT_ACTIVE" => port_state::ACTIVE,
        "IBV_PORT_ACTIVE_DEFER" => port_state::ACTIVE_DEFER,
        "IBV_LINK_LAYER_UNSPECIFIED" => link_layer::UNSPECIFIED,
        "IBV_LINK_LAYER_INFINIBAND" => link_layer::INFINIBAND,
        "IBV_LINK_LAYER_ETHERNET" => link_layer::ETHERNET,
        "IB_UVERBS_QPF_GRH_REQUIRED" => port_flags::GRH_REQUIRED,
    );

    check_const!(p,
        "IB_UVERBS_PCF_SM" => port_cap::SM,
        "IB_UVERBS_PCF_NOTICE_SUP" => port_cap::NOTICE_SUP,
        "IB_UVERBS_PCF_TRAP_SUP" => port_cap::TRAP_SUP,
        "IB_UVERBS_PCF_OPT_IPD_SUP" => port_cap::OPT_IPD_SUP,
        "IB_UVERBS_PCF_AUTO_MIGR_SUP" => port_cap::AUTO_MIGR_SUP,
        "IB_UVERBS_PCF_SL_MAP_SUP" => port_cap::SL_MAP_SUP,
        "IB_UVERBS_PCF_MKEY_NVRAM" => port_cap::MKEY_NVRAM,
        "IB_UVERBS_PCF_PKEY_NVRAM" => port_cap::PKEY_NVRAM,
        "IB_UVERBS_PCF_LED_INFO_SUP" => port_cap::LED_INFO_SUP,
        "IB_UVERBS_PCF_SM_DISABLED" => port_cap::SM_DISABLED,
        "IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP" => port_cap::SYS_IMAGE_GUID_SUP,
        "IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP" => port_cap::PKEY_SW_EXT_PORT_TRAP_SUP,
        "IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP" => port_cap::EXTENDED_SPEEDS_SUP,
        "IB_UVERBS_PCF_CM_SUP" => port_cap::CM_SUP,
        "IB_UVERBS_PCF_SNMP_TUNNEL_SUP" => port_cap::SNMP_TUNNEL_SUP,
        "IB_UVERBS_PCF_REINIT_SUP" => port_cap::REINIT_SUP,
        "IB_UVERBS_PCF_DEVICE_MGMT_SUP" => port_cap::DEVICE_MGMT_SUP,
        "IB_UVERBS_PCF_VENDOR_CLASS_SUP" => port_cap::VENDOR_CLASS_SUP,
        "IB_UVERBS_PCF_DR_NOTICE_SUP" => port_cap::DR_NOTICE_SUP,
        "IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP" => port_cap::CAP_MASK_NOTICE_SUP,
        "IB_UVERBS_PCF_BOOT_MGMT_SUP" => port_cap::BOOT_MGMT_SUP,
        "IB_UVERBS_PCF_LINK_LATENCY_SUP" => port_cap::LINK_LATENCY_SUP,
        "IB_UVERBS_PCF_CLIENT_REG_SUP" => port_cap::CLIENT_REG_SUP,
        "IB_UVERBS_PCF_IP_BASED_GIDS" => port_cap::IP_BASED_GIDS,
        "IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP" => port_cap::LINK_SPEED_WIDTH_TABLE_SUP,
        "IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP" => port_cap::VENDOR_SPECIFIC_MADS_TABLE_SUP,
        "IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP" => port_cap::MCAST_PKEY_TRAP_SUPPRESSION_SUP,
        "IB_UVERBS_PCF_MCAST_FDB_TOP_SUP" => port_cap::MCAST_FDB_TOP_SUP,
        "IB_UVERBS_PCF_HIERARCHY_INFO_SUP" => port_cap::HIERARCHY_INFO_SUP,
    );

    check_const!(p,
        "IBV_ATOMIC_NONE" => atomic_cap::NONE,
        "IBV_ATOMIC_HCA" => atomic_cap::HCA,
        "IBV_ATOMIC_GLOB" => atomic_cap::GLOB,
    );

    check_const!(p,
        "IB_UVERBS_DEVICE_RESIZE_MAX_WR" => device_cap::RESIZE_MAX_WR,
        "IB_UVERBS_DEVICE_BAD_PKEY_CNTR" => device_cap::BAD_PKEY_CNTR,
        "IB_UVERBS_DEVICE_BAD_QKEY_CNTR" => device_cap::BAD_QKEY_CNTR,
        "IB_UVERBS_DEVICE_RAW_MULTI" => device_cap::RAW_MULTI,
        "IB_UVERBS_DEVICE_AUTO_PATH_MIG" => device_cap::AUTO_PATH_MIG,
        "IB_UVERBS_DEVICE_CHANGE_PHY_PORT" => device_cap::CHANGE_PHY_PORT,
        "IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE" => device_cap::UD_AV_PORT_ENFORCE,
        "IB_UVERBS_DEVICE_CURR_QP_STATE_MOD" => device_cap::CURR_QP_STATE_MOD,
        "IB_UVERBS_DEVICE_SHUTDOWN_PORT" => device_cap::SHUTDOWN_PORT,
        "IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT" => device_cap::PORT_ACTIVE_EVENT,
        "IB_UVERBS_DEVICE_SYS_IMAGE_GUID" => device_cap::SYS_IMAGE_GUID,
        "IB_UVERBS_DEVICE_RC_RNR_NAK_GEN" => device_cap::RC_RNR_NAK_GEN,
        "IB_UVERBS_DEVICE_SRQ_RESIZE" => device_cap::SRQ_RESIZE,
        "IB_UVERBS_DEVICE_N_NOTIFY_CQ" => device_cap::N_NOTIFY_CQ,
        "IB_UVERBS_DEVICE_MEM_WINDOW" => device_cap::MEM_WINDOW,
        "IB_UVERBS_DEVICE_UD_IP_CSUM" => device_cap::UD_IP_CSUM,
        "IB_UVERBS_DEVICE_XRC" => device_cap::XRC,
        "IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS" => device_cap::MEM_MGT_EXTENSIONS,
        "IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A" => device_cap::MEM_WINDOW_TYPE_2A,
        "IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B" => device_cap::MEM_WINDOW_TYPE_2B,
        "IB_UVERBS_DEVICE_RC_IP_CSUM" => device_cap::RC_IP_CSUM,
        "IB_UVERBS_DEVICE_RAW_IP_CSUM" => device_cap::RAW_IP_CSUM,
        "IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING" => device_cap::MANAGED_FLOW_STEERING,
        "IB_UVERBS_DEVICE_RAW_SCATTER_FCS" => device_cap::RAW_SCATTER_FCS,
        "IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING" => device_cap::PCI_WRITE_END_PADDING,
        "IBV_DEVICE_RAW_SCATTER_FCS" => device_cap::RAW_SCATTER_FCS,
        "IBV_DEVICE_PCI_WRITE_END_PADDING" => device_cap::PCI_WRITE_END_PADDING,
    );

    check_const!(p,
        "IB_UVERBS_RAW_PACKET_CAP_CVLAN_STRIPPING" => raw_packet_cap::CVLAN_STRIPPING,
        "IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS" => raw_packet_cap::SCATTER_FCS,
        "IB_UVERBS_RAW_PACKET_CAP_IP_CSUM" => raw_packet_cap::IP_CSUM,
        "IB_UVERBS_RAW_PACKET_CAP_DELAY_DROP" => raw_packet_cap::DELAY_DROP,
        "IBV_ODP_SUPPORT" => odp_general::SUPPORT,
        "IBV_ODP_SUPPORT_IMPLICIT" => odp_general::SUPPORT_IMPLICIT,
        "IBV_ODP_SUPPORT_SEND" => odp_transport::SEND,
        "IBV_ODP_SUPPORT_RECV" => odp_transport::RECV,
        "IBV_ODP_SUPPORT_WRITE" => odp_transport::WRITE,
        "IBV_ODP_SUPPORT_READ" => odp_transport::READ,
        "IBV_ODP_SUPPORT_ATOMIC" => odp_transport::ATOMIC,
        "IBV_ODP_SUPPORT_SRQ_RECV" => odp_transport::SRQ_RECV,
        "IBV_TM_CAP_RC" => tm_cap::RC,
    );
}
