//! `abi::mlx5` against `rdma/mlx5-abi.h` and `infiniband/mlx5dv.h`.
//!
//! Not compared, because no installed header defines them (kernel `mlx5_ib.h` / rdma-core
//! `providers/mlx5/mlx5.h` values, see reference/mlx5-uverbs.md §3-§4): `MMAP_CMD_SHIFT`,
//! `MMAP_CMD_MASK`, `MMAP_INDEX_MASK`, `ADAPTER_PAGE_SIZE`, `BF_OFFSET`, `BFREGS_PER_UAR`,
//! `CQ_SET_CI`, `CQ_ARM_DB`, `CQ_ARM_SN_SHIFT`, `CQ_ARM_SN_MASK`. `SEND_WQE_DS`,
//! `CQ_CI_MASK` and the `op_own` bit positions are compared with what the headers imply.

use crate::probe::Probe;
use ferrodat_abi::mlx5::*;

pub fn register(p: &mut Probe) {
    provider_commands(p);
    query_device(p);
    uar(p);
    wqe(p);
    cqe(p);
}

fn provider_commands(p: &mut Probe) {
    check_const!(p, "MLX5_IB_UVERBS_ABI_VERSION" => ABI_VERSION);

    check_struct!(
        p,
        "struct mlx5_ib_alloc_ucontext_req_v2",
        AllocUcontextReqV2 {
            total_num_bfregs,
            num_low_latency_bfregs,
            flags,
            comp_mask,
            max_cqe_version,
            reserved0,
            reserved1,
            reserved2,
            lib_caps,
        }
    );
    check_const!(p,
        "MLX5_IB_ALLOC_UCTX_DEVX" => alloc_uctx::DEVX,
        "MLX5_LIB_CAP_4K_UAR" => lib_cap::UAR_4K,
        "MLX5_LIB_CAP_DYN_UAR" => lib_cap::DYN_UAR,
    );

    check_struct!(
        p,
        "struct mlx5_ib_alloc_ucontext_resp",
        AllocUcontextResp {
            qp_tab_size,
            bf_reg_size,
            tot_bfregs,
            cache_line_size,
            max_sq_desc_sz,
            max_rq_desc_sz,
            max_send_wqebb,
            max_recv_wr,
            max_srq_recv_wr,
            num_ports,
            flow_action_flags,
            comp_mask,
            response_length,
            cqe_version,
            cmds_supp_uhw,
            eth_min_inline,
            clock_info_versions,
            hca_core_clock_offset,
            log_uar_size,
            num_uars_per_page,
            num_dyn_bfregs,
            dump_fill_mkey,
        }
    );
    check_const!(p,
        "MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET" => alloc_ucontext_resp_mask::CORE_CLOCK_OFFSET,
        "MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY" => alloc_ucontext_resp_mask::DUMP_FILL_MKEY,
        "MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE" => alloc_ucontext_resp_mask::ECE,
        "MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_SQD2RTS" => alloc_ucontext_resp_mask::SQD2RTS,
        "MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_REAL_TIME_TS" => alloc_ucontext_resp_mask::REAL_TIME_TS,
        "MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_MKEY_UPDATE_TAG" => alloc_ucontext_resp_mask::MKEY_UPDATE_TAG,
        "MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE" => user_cmds_supp_uhw::QUERY_DEVICE,
        "MLX5_USER_CMDS_SUPP_UHW_CREATE_AH" => user_cmds_supp_uhw::CREATE_AH,
        "MLX5_USER_INLINE_MODE_NA" => user_inline_mode::NA,
        "MLX5_USER_INLINE_MODE_NONE" => user_inline_mode::NONE,
        "MLX5_USER_INLINE_MODE_L2" => user_inline_mode::L2,
        "MLX5_USER_INLINE_MODE_IP" => user_inline_mode::IP,
        "MLX5_USER_INLINE_MODE_TCP_UDP" => user_inline_mode::TCP_UDP,
        "MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM" => flow_action_flags::ESP_AES_GCM,
        "MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_REQ_METADATA" => flow_action_flags::ESP_AES_GCM_REQ_METADATA,
        "MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_SPI_STEERING" => flow_action_flags::ESP_AES_GCM_SPI_STEERING,
        "MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_FULL_OFFLOAD" => flow_action_flags::ESP_AES_GCM_FULL_OFFLOAD,
        "MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_TX_IV_IS_ESN" => flow_action_flags::ESP_AES_GCM_TX_IV_IS_ESN,
    );

    check_struct!(
        p,
        "struct mlx5_ib_clock_info",
        ClockInfo { sign, resv, nsec, cycles, frac, mult, shift, mask, overflow_period }
    );
    check_const!(p,
        "MLX5_IB_CLOCK_INFO_V1" => clock_info::V1,
        "MLX5_IB_CLOCK_INFO_KERNEL_UPDATING" => clock_info::KERNEL_UPDATING,
    );

    check_struct!(p, "struct mlx5_ib_alloc_pd_resp", AllocPdResp { pdn });
    check_struct!(
        p,
        "struct mlx5_ib_alloc_mw",
        AllocMw { comp_mask, num_klms, reserved1, reserved2 }
    );

    check_struct!(
        p,
        "struct mlx5_ib_create_cq",
        CreateCq {
            buf_addr,
            db_addr,
            cqe_size,
            cqe_comp_en,
            cqe_comp_res_format,
            flags,
            uar_page_index,
            reserved0,
            reserved1,
        }
    );
    check_const!(p,
        "MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD" => create_cq_flags::CQE_128B_PAD,
        "MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX" => create_cq_flags::UAR_PAGE_INDEX,
        "MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS" => create_cq_flags::REAL_TIME_TS,
        "MLX5_IB_CQE_RES_FORMAT_HASH" => cqe_res_format::HASH,
        "MLX5_IB_CQE_RES_FORMAT_CSUM" => cqe_res_format::CSUM,
        "MLX5_IB_CQE_RES_FORMAT_CSUM_STRIDX" => cqe_res_format::CSUM_STRIDX,
    );
    check_struct!(p, "struct mlx5_ib_create_cq_resp", CreateCqResp { cqn, reserved });
    check_struct!(
        p,
        "struct mlx5_ib_resize_cq",
        ResizeCq { buf_addr, cqe_size, reserved0, reserved1 }
    );

    check_struct!(
        p,
        "struct mlx5_ib_create_srq",
        CreateSrq { buf_addr, db_addr, flags, reserved0, uidx, reserved1 }
    );
    check_const!(p, "MLX5_SRQ_FLAG_SIGNATURE" => srq_flag::SIGNATURE);
    check_struct!(p, "struct mlx5_ib_create_srq_resp", CreateSrqResp { srqn, reserved });

    check_struct!(
        p,
        "struct mlx5_ib_create_qp_dci_streams",
        CreateQpDciStreams { log_num_concurent, log_num_errored }
    );
    check_struct!(p, "struct mlx5_ib_create_qp", CreateQp {
        buf_addr, db_addr, sq_wqe_count, rq_wqe_count, rq_wqe_shift, flags, uidx,
        bfreg_index, sq_buf_addr, sq_buf_addr => "access_key", ece_options, dci_streams,
        dci_streams.log_num_concurent, dci_streams.log_num_errored, reserved,
    });
    check_const!(p,
        "MLX5_QP_FLAG_SIGNATURE" => qp_flag::SIGNATURE,
        "MLX5_QP_FLAG_SCATTER_CQE" => qp_flag::SCATTER_CQE,
        "MLX5_QP_FLAG_TUNNEL_OFFLOADS" => qp_flag::TUNNEL_OFFLOADS,
        "MLX5_QP_FLAG_BFREG_INDEX" => qp_flag::BFREG_INDEX,
        "MLX5_QP_FLAG_TYPE_DCT" => qp_flag::TYPE_DCT,
        "MLX5_QP_FLAG_TYPE_DCI" => qp_flag::TYPE_DCI,
        "MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_UC" => qp_flag::TIR_ALLOW_SELF_LB_UC,
        "MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_MC" => qp_flag::TIR_ALLOW_SELF_LB_MC,
        "MLX5_QP_FLAG_ALLOW_SCATTER_CQE" => qp_flag::ALLOW_SCATTER_CQE,
        "MLX5_QP_FLAG_PACKET_BASED_CREDIT_MODE" => qp_flag::PACKET_BASED_CREDIT_MODE,
        "MLX5_QP_FLAG_UAR_PAGE_INDEX" => qp_flag::UAR_PAGE_INDEX,
        "MLX5_QP_FLAG_DCI_STREAM" => qp_flag::DCI_STREAM,
        "MLX5_WQ_FLAG_SIGNATURE" => wq_flag::SIGNATURE,
    );
    check_struct!(
        p,
        "struct mlx5_ib_create_qp_resp",
        CreateQpResp {
            bfreg_index,
            ece_options,
            comp_mask,
            tirn,
            tisn,
            rqn,
            sqn,
            reserved1,
            tir_icm_addr,
        }
    );
    check_const!(p,
        "MLX5_IB_CREATE_QP_RESP_MASK_TIRN" => create_qp_resp_mask::TIRN,
        "MLX5_IB_CREATE_QP_RESP_MASK_TISN" => create_qp_resp_mask::TISN,
        "MLX5_IB_CREATE_QP_RESP_MASK_RQN" => create_qp_resp_mask::RQN,
        "MLX5_IB_CREATE_QP_RESP_MASK_SQN" => create_qp_resp_mask::SQN,
        "MLX5_IB_CREATE_QP_RESP_MASK_TIR_ICM_ADDR" => create_qp_resp_mask::TIR_ICM_ADDR,
    );
}

fn query_device(p: &mut Probe) {
    check_struct!(p, "struct mlx5_ib_tso_caps", TsoCaps { max_tso, supported_qpts });
    check_struct!(
        p,
        "struct mlx5_ib_rss_caps",
        RssCaps { rx_hash_fields_mask, rx_hash_function, reserved }
    );
    check_struct!(p, "struct mlx5_ib_cqe_comp_caps", CqeCompCaps { max_num, supported_format });
    check_struct!(
        p,
        "struct mlx5_packet_pacing_caps",
        PacketPacingCaps {
            qp_rate_limit_min,
            qp_rate_limit_max,
            supported_qpts,
            cap_flags,
            reserved,
        }
    );
    check_struct!(
        p,
        "struct mlx5_ib_sw_parsing_caps",
        SwParsingCaps { sw_parsing_offloads, supported_qpts }
    );
    check_struct!(
        p,
        "struct mlx5_ib_striding_rq_caps",
        StridingRqCaps {
            min_single_stride_log_num_of_bytes,
            max_single_stride_log_num_of_bytes,
            min_single_wqe_log_num_of_strides,
            max_single_wqe_log_num_of_strides,
            supported_qpts,
            reserved,
        }
    );
    check_struct!(
        p,
        "struct mlx5_ib_dci_streams_caps",
        DciStreamsCaps { max_log_num_concurent, max_log_num_errored }
    );
    check_struct!(
        p,
        "struct mlx5_ib_query_device_resp",
        QueryDeviceResp {
            comp_mask,
            response_length,
            tso_caps,
            rss_caps,
            cqe_comp_caps,
            packet_pacing_caps,
            mlx5_ib_support_multi_pkt_send_wqes,
            flags,
            sw_parsing_caps,
            striding_rq_caps,
            tunnel_offloads_caps,
            dci_streams_caps,
            reserved,
        }
    );
    check_const!(p,
        "MLX5_RX_HASH_FUNC_TOEPLITZ" => rx_hash_func::TOEPLITZ,
        "MLX5_RX_HASH_SRC_IPV4" => rx_hash_fields::SRC_IPV4,
        "MLX5_RX_HASH_DST_IPV4" => rx_hash_fields::DST_IPV4,
        "MLX5_RX_HASH_SRC_IPV6" => rx_hash_fields::SRC_IPV6,
        "MLX5_RX_HASH_DST_IPV6" => rx_hash_fields::DST_IPV6,
        "MLX5_RX_HASH_SRC_PORT_TCP" => rx_hash_fields::SRC_PORT_TCP,
        "MLX5_RX_HASH_DST_PORT_TCP" => rx_hash_fields::DST_PORT_TCP,
        "MLX5_RX_HASH_SRC_PORT_UDP" => rx_hash_fields::SRC_PORT_UDP,
        "MLX5_RX_HASH_DST_PORT_UDP" => rx_hash_fields::DST_PORT_UDP,
        "MLX5_RX_HASH_IPSEC_SPI" => rx_hash_fields::IPSEC_SPI,
        "MLX5_RX_HASH_INNER" => rx_hash_fields::INNER,
        "MLX5_IB_PP_SUPPORT_BURST" => pp_cap::SUPPORT_BURST,
        "MPW_RESERVED" => mpw_caps::RESERVED,
        "MLX5_IB_ALLOW_MPW" => mpw_caps::ALLOW_MPW,
        "MLX5_IB_SUPPORT_EMPW" => mpw_caps::SUPPORT_EMPW,
        "MLX5_IB_SW_PARSING" => sw_parsing::SW_PARSING,
        "MLX5_IB_SW_PARSING_CSUM" => sw_parsing::CSUM,
        "MLX5_IB_SW_PARSING_LSO" => sw_parsing::LSO,
        "MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_COMP" => query_dev_resp_flags::CQE_128B_COMP,
        "MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_PAD" => query_dev_resp_flags::CQE_128B_PAD,
        "MLX5_IB_QUERY_DEV_RESP_PACKET_BASED_CREDIT_MODE" => query_dev_resp_flags::PACKET_BASED_CREDIT_MODE,
        "MLX5_IB_QUERY_DEV_RESP_FLAGS_SCAT2CQE_DCT" => query_dev_resp_flags::SCAT2CQE_DCT,
        "MLX5_IB_TUNNELED_OFFLOADS_VXLAN" => tunneled_offloads::VXLAN,
        "MLX5_IB_TUNNELED_OFFLOADS_GRE" => tunneled_offloads::GRE,
        "MLX5_IB_TUNNELED_OFFLOADS_GENEVE" => tunneled_offloads::GENEVE,
        "MLX5_IB_TUNNELED_OFFLOADS_MPLS_GRE" => tunneled_offloads::MPLS_GRE,
        "MLX5_IB_TUNNELED_OFFLOADS_MPLS_UDP" => tunneled_offloads::MPLS_UDP,
    );
}

fn uar(p: &mut Probe) {
    check_const!(p,
        "MLX5_IB_MMAP_REGULAR_PAGE" => mmap_cmd::REGULAR_PAGE,
        "MLX5_MMAP_GET_REGULAR_PAGES_CMD" => mmap_cmd::REGULAR_PAGE,
        "MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES" => mmap_cmd::GET_CONTIGUOUS_PAGES,
        "MLX5_IB_MMAP_WC_PAGE" => mmap_cmd::WC_PAGE,
        "MLX5_IB_MMAP_NC_PAGE" => mmap_cmd::NC_PAGE,
        "MLX5_MMAP_GET_NC_PAGES_CMD" => mmap_cmd::NC_PAGE,
        "MLX5_IB_MMAP_CORE_CLOCK" => mmap_cmd::CORE_CLOCK,
        "MLX5_IB_MMAP_ALLOC_WC" => mmap_cmd::ALLOC_WC,
        "MLX5_IB_MMAP_CLOCK_INFO" => mmap_cmd::CLOCK_INFO,
        "MLX5_IB_MMAP_DEVICE_MEM" => mmap_cmd::DEVICE_MEM,
        // The encoder against the kernel's formula `((cmd << 8) | index) * PAGE_SIZE`.
        "(((unsigned long long)MLX5_IB_MMAP_NC_PAGE << 8) | 7) * 4096"
            => mmap_offset(mmap_cmd::NC_PAGE, 7, 4096),
        "MLX5_CQ_DOORBELL" => CQ_DOORBELL,
        "MLX5_RCV_DBR" => RCV_DBR,
        "MLX5_SND_DBR" => SND_DBR,
        "MLX5_CQ_DB_REQ_NOT_SOL" => CQ_DB_REQ_NOT_SOL,
        "MLX5_CQ_DB_REQ_NOT" => CQ_DB_REQ_NOT,
        // The consumer index fills the bits below the arm command.
        "MLX5_CQ_DB_REQ_NOT_SOL - 1" => CQ_CI_MASK,
        // rdma-core's mlx5_arm_cq: `sn << 28 | cmd | ci` with sn = arm_sn & 3, ci 24 bits.
        "(uint32_t)((6 & 3) << 28 | MLX5_CQ_DB_REQ_NOT_SOL | (0x1abcdef & 0xffffff))"
            => cq_arm_word(6, CQ_DB_REQ_NOT_SOL, 0x1ab_cdef),
        "((uint64_t)0x21abcdefu << 32) | 0x40" => cq_arm_doorbell(0x21ab_cdef, 0x40),
    );
}

fn wqe(p: &mut Probe) {
    check_struct!(
        p,
        "struct mlx5_wqe_ctrl_seg",
        WqeCtrlSeg { opmod_idx_opcode, qpn_ds, signature, dci_stream_channel_id, fm_ce_se, imm }
    );
    check_struct!(p, "struct mlx5_wqe_raddr_seg", WqeRaddrSeg { raddr, rkey, reserved });
    check_struct!(p, "struct mlx5_wqe_atomic_seg", WqeAtomicSeg { swap_add, compare });
    check_struct!(p, "struct mlx5_wqe_data_seg", WqeDataSeg { byte_count, lkey, addr });
    check_struct!(p, "struct mlx5_wqe_inl_data_seg", WqeInlDataSeg { byte_count });
    check_struct!(
        p,
        "struct mlx5_wqe_srq_next_seg",
        WqeSrqNextSeg { rsvd0, next_wqe_index, signature, rsvd1 }
    );
    check_struct!(
        p,
        "struct mlx5_wqe_umr_ctrl_seg",
        WqeUmrCtrlSeg { flags, rsvd0, klm_octowords, translation_offset, mkey_mask, rsvd1 }
    );
    check_struct!(
        p,
        "struct mlx5_wqe_mkey_context_seg",
        WqeMkeyContextSeg {
            free,
            reserved1,
            access_flags,
            sf,
            qpn_mkey,
            reserved2,
            flags_pd,
            start_addr,
            len,
            bsf_octword_size,
            reserved3,
            translations_octword_size,
            reserved4,
            log_page_size,
            reserved,
        }
    );
    check_struct!(p, "struct mlx5_wqe_umr_klm_seg", WqeUmrKlmSeg { byte_count, mkey, address });
    check_const!(p,
        "MLX5_WQE_UMR_CTRL_FLAG_INLINE" => umr_ctrl_flag::INLINE,
        "MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE" => umr_ctrl_flag::CHECK_FREE,
        "MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET" => umr_ctrl_flag::TRANSLATION_OFFSET,
        "MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN" => umr_ctrl_flag::CHECK_QPN,
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN" => mkey_mask::LEN,
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR" => mkey_mask::START_ADDR,
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_SIG_ERR" => mkey_mask::SIG_ERR,
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_BSF_ENABLE" => mkey_mask::BSF_ENABLE,
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY" => mkey_mask::MKEY,
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN" => mkey_mask::QPN,
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE" => mkey_mask::ACCESS_LOCAL_WRITE,
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ" => mkey_mask::ACCESS_REMOTE_READ,
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE" => mkey_mask::ACCESS_REMOTE_WRITE,
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC" => mkey_mask::ACCESS_ATOMIC,
        "MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE" => mkey_mask::FREE,
        "MLX5_WQE_MKEY_CONTEXT_FREE" => MKEY_CONTEXT_FREE,
        "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC" => mkey_access::ATOMIC,
        "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE" => mkey_access::REMOTE_WRITE,
        "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ" => mkey_access::REMOTE_READ,
        "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE" => mkey_access::LOCAL_WRITE,
        "MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_READ" => mkey_access::LOCAL_READ,
    );
    check_const!(p,
        "MLX5_SEND_WQE_BB" => SEND_WQE_BB,
        "MLX5_SEND_WQE_SHIFT" => SEND_WQE_SHIFT,
        // The ctrl segment is exactly one ds unit.
        "sizeof(struct mlx5_wqe_ctrl_seg)" => SEND_WQE_DS,
        "MLX5_INLINE_SEG" => INLINE_SEG,
        "MLX5_INVALID_LKEY" => INVALID_LKEY,
        "MLX5_WQE_CTRL_CQ_UPDATE" => wqe_ctrl::CQ_UPDATE,
        "MLX5_WQE_CTRL_SOLICITED" => wqe_ctrl::SOLICITED,
        "MLX5_WQE_CTRL_FENCE" => wqe_ctrl::FENCE,
        "MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE" => wqe_ctrl::INITIATOR_SMALL_FENCE,
        "MLX5_OPCODE_NOP" => opcode::NOP,
        "MLX5_OPCODE_SEND_INVAL" => opcode::SEND_INVAL,
        "MLX5_OPCODE_RDMA_WRITE" => opcode::RDMA_WRITE,
        "MLX5_OPCODE_RDMA_WRITE_IMM" => opcode::RDMA_WRITE_IMM,
        "MLX5_OPCODE_SEND" => opcode::SEND,
        "MLX5_OPCODE_SEND_IMM" => opcode::SEND_IMM,
        "MLX5_OPCODE_TSO" => opcode::TSO,
        "MLX5_OPCODE_RDMA_READ" => opcode::RDMA_READ,
        "MLX5_OPCODE_ATOMIC_CS" => opcode::ATOMIC_CS,
        "MLX5_OPCODE_ATOMIC_FA" => opcode::ATOMIC_FA,
        "MLX5_OPCODE_ATOMIC_MASKED_CS" => opcode::ATOMIC_MASKED_CS,
        "MLX5_OPCODE_ATOMIC_MASKED_FA" => opcode::ATOMIC_MASKED_FA,
        "MLX5_OPCODE_FMR" => opcode::FMR,
        "MLX5_OPCODE_LOCAL_INVAL" => opcode::LOCAL_INVAL,
        "MLX5_OPCODE_CONFIG_CMD" => opcode::CONFIG_CMD,
        "MLX5_OPCODE_SET_PSV" => opcode::SET_PSV,
        "MLX5_OPCODE_UMR" => opcode::UMR,
        "MLX5_OPCODE_TAG_MATCHING" => opcode::TAG_MATCHING,
        "MLX5_OPCODE_FLOW_TBL_ACCESS" => opcode::FLOW_TBL_ACCESS,
        "MLX5_OPCODE_MMO" => opcode::MMO,
    );
}

fn cqe(p: &mut Probe) {
    check_struct!(
        p,
        "struct mlx5_cqe64",
        Cqe64 {
            rsvd0,
            wqe_id,
            rsvd4,
            ml_path,
            rsvd20,
            slid,
            flags_rqpn,
            hds_ip_ext,
            l4_hdr_type_etc,
            vlan_info,
            srqn_uidx,
            imm_inval_pkey,
            app,
            app_op,
            app_info,
            byte_cnt,
            timestamp,
            sop_drop_qpn,
            wqe_counter,
            signature,
            op_own,
        }
    );
    check_struct!(
        p,
        "struct mlx5_err_cqe",
        ErrCqe {
            rsvd0,
            srqn,
            rsvd1,
            vendor_err_synd,
            syndrome,
            s_wqe_opcode_qpn,
            wqe_counter,
            signature,
            op_own,
        }
    );
    check_const!(p,
        "MLX5_CQE_OWNER_MASK" => CQE_OWNER_MASK,
        "MLX5_INLINE_SCATTER_32" => INLINE_SCATTER_32,
        "MLX5_INLINE_SCATTER_64" => INLINE_SCATTER_64,
        // The op_own accessors of mlx5dv.h against the Rust bit positions.
        "({ struct mlx5_cqe64 c = { .op_own = 0xd6 }; mlx5dv_get_cqe_opcode(&c); })"
            => 0xd6u8 >> CQE_OPCODE_SHIFT,
        "({ struct mlx5_cqe64 c = { .op_own = 0x01 }; mlx5dv_get_cqe_owner(&c); })"
            => (0x01u8 & CQE_OWNER_MASK != 0) as u8,
        "({ struct mlx5_cqe64 c = { .op_own = 0xfe }; mlx5dv_get_cqe_owner(&c); })"
            => (0xfeu8 & CQE_OWNER_MASK != 0) as u8,
        "({ struct mlx5_cqe64 c = { .op_own = 0x02 }; mlx5dv_get_cqe_se(&c); })"
            => (0x02u8 & CQE_SE_MASK != 0) as u8,
        "({ struct mlx5_cqe64 c = { .op_own = 0xfd }; mlx5dv_get_cqe_se(&c); })"
            => (0xfdu8 & CQE_SE_MASK != 0) as u8,
        "({ struct mlx5_cqe64 c = { .op_own = 0x04 }; mlx5dv_get_cqe_format(&c); })"
            => (0x04u8 >> CQE_FORMAT_SHIFT) & 3,
        "({ struct mlx5_cqe64 c = { .op_own = 0xfc }; mlx5dv_get_cqe_format(&c); })"
            => (0xfcu8 >> CQE_FORMAT_SHIFT) & 3,
        "MLX5_CQE_REQ" => cqe_opcode::REQ,
        "MLX5_CQE_RESP_WR_IMM" => cqe_opcode::RESP_WR_IMM,
        "MLX5_CQE_RESP_SEND" => cqe_opcode::RESP_SEND,
        "MLX5_CQE_RESP_SEND_IMM" => cqe_opcode::RESP_SEND_IMM,
        "MLX5_CQE_RESP_SEND_INV" => cqe_opcode::RESP_SEND_INV,
        "MLX5_CQE_RESIZE_CQ" => cqe_opcode::RESIZE_CQ,
        "MLX5_CQE_NO_PACKET" => cqe_opcode::NO_PACKET,
        "MLX5_CQE_SIG_ERR" => cqe_opcode::SIG_ERR,
        "MLX5_CQE_REQ_ERR" => cqe_opcode::REQ_ERR,
        "MLX5_CQE_RESP_ERR" => cqe_opcode::RESP_ERR,
        "MLX5_CQE_INVALID" => cqe_opcode::INVALID,
        "MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR" => cqe_syndrome::LOCAL_LENGTH_ERR,
        "MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR" => cqe_syndrome::LOCAL_QP_OP_ERR,
        "MLX5_CQE_SYNDROME_LOCAL_PROT_ERR" => cqe_syndrome::LOCAL_PROT_ERR,
        "MLX5_CQE_SYNDROME_WR_FLUSH_ERR" => cqe_syndrome::WR_FLUSH_ERR,
        "MLX5_CQE_SYNDROME_MW_BIND_ERR" => cqe_syndrome::MW_BIND_ERR,
        "MLX5_CQE_SYNDROME_BAD_RESP_ERR" => cqe_syndrome::BAD_RESP_ERR,
        "MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR" => cqe_syndrome::LOCAL_ACCESS_ERR,
        "MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR" => cqe_syndrome::REMOTE_INVAL_REQ_ERR,
        "MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR" => cqe_syndrome::REMOTE_ACCESS_ERR,
        "MLX5_CQE_SYNDROME_REMOTE_OP_ERR" => cqe_syndrome::REMOTE_OP_ERR,
        "MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR" => cqe_syndrome::TRANSPORT_RETRY_EXC_ERR,
        "MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR" => cqe_syndrome::RNR_RETRY_EXC_ERR,
        "MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR" => cqe_syndrome::REMOTE_ABORTED_ERR,
        "MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT" => cqe_vendor_syndrome::ODP_PFAULT,
    );
}
