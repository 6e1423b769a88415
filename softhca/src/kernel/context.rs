//! GET_CONTEXT, QUERY_DEVICE (legacy and extended) and QUERY_PORT
//! (`ib_uverbs_get_context`, `mlx5_ib_alloc_ucontext`, `ib_uverbs_query_device`,
//! `ib_uverbs_ex_query_device` + `mlx5_ib_query_device`, `ib_uverbs_query_port` +
//! `mlx5_query_port_roce`).
//!
//! Choices where softhca answers like a particular kernel: the context always gets static
//! UARs — the DYN_UAR library capability is ignored, as by kernels before dynamic UARs, since
//! softhca has no ioctl path to allocate UARs — and `num_dyn_bfregs` is 0; DEVX is refused
//! as on a device without `log_max_uctx` (rdma-core retries without it); no clock page and
//! no mlx5 QUERY_DEVICE_EX data are advertised (`comp_mask` 0, `cmds_supp_uhw` 0).

use super::Session;
use super::bfreg::BfregInfo;
use super::call::Call;
use super::caps::*;
use crate::errno::Errno;
use crate::hca::events::EventSink;
use crate::objects::{AsyncEventFile, UarPages};
use ferrodat_abi::mlx5;
use ferrodat_abi::uverbs::{self, atomic_cap, link_layer, port_state};
use std::os::fd::{IntoRawFd, RawFd};
use std::sync::Arc;
use zerocopy::IntoBytes;
use zerocopy::big_endian;

/// What the kernel keeps per ucontext (`struct mlx5_ib_ucontext`).
#[derive(Debug)]
pub(crate) struct Context {
    /// CQE version in use: 1 puts the QP's user index in CQEs.
    pub cqe_version: u8,
    /// Static bfreg usage.
    pub bfregs: BfregInfo,
    /// The static UAR pages.
    pub uar: Arc<UarPages>,
    /// Where async events go.
    pub async_file: Arc<AsyncEventFile>,
    /// The async fd number the user got.
    pub async_fd: RawFd,
}

/// `offsetof(struct mlx5_ib_alloc_ucontext_req_v2, max_cqe_version)`: the shortest v2 request.
const MIN_REQ_V2: usize = 16;
/// `sizeof(struct mlx5_ib_alloc_ucontext_req)`: the version-0 request.
const REQ_V0: usize = 8;

pub(crate) fn get_context(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    c.request::<uverbs::GetContext>()?;
    let (async_file, user_end) = AsyncEventFile::create()?;
    let resp = uverbs::GetContextResp {
        async_fd: async_file.user_fd() as u32,
        num_comp_vectors: NUM_COMP_VECTORS,
    };
    c.respond(resp.as_bytes())?;
    // ib_init_ucontext: one context per file.
    if s.file.context.is_some() {
        return Err(Errno::EINVAL);
    }
    let (req, ver) = parse_ucontext_request(c)?;
    let total = align_bfregs(req.total_num_bfregs);
    let bfregs = BfregInfo::new(ver, total, req.num_low_latency_bfregs);
    let uar = Arc::new(UarPages::new(bfregs.static_pages() as usize)?);
    s.dev.engine().watch_uar(&uar);
    let cqe_version = CQE_VERSION.min(req.max_cqe_version);
    let mut resp = mlx5::AllocUcontextResp {
        qp_tab_size: 1 << LOG_MAX_QP,
        bf_reg_size: BF_REG_SIZE,
        tot_bfregs: total,
        cache_line_size: CACHE_LINE_SIZE,
        max_sq_desc_sz: MAX_WQE_SZ_SQ as u16,
        max_rq_desc_sz: MAX_WQE_SZ_RQ as u16,
        max_send_wqebb: MAX_QP_WQES,
        max_recv_wr: MAX_QP_WQES,
        max_srq_recv_wr: 1 << LOG_MAX_SRQ_SZ,
        num_ports: u16::from(NUM_PORTS),
        cqe_version,
        // mlx5_query_min_inline + 1: ConnectX-5 needs no inlined headers.
        eth_min_inline: mlx5::user_inline_mode::NONE,
        log_uar_size: mlx5::ADAPTER_PAGE_SIZE.trailing_zeros(),
        num_uars_per_page: 1,
        ..Default::default()
    };
    resp.response_length = c.driver_out.len.min(size_of::<mlx5::AllocUcontextResp>()) as u32;
    c.driver_write(&resp.as_bytes()[..resp.response_length as usize])?;
    let async_file = Arc::new(async_file);
    s.dev.engine().add_device_event_sink(&(Arc::clone(&async_file) as Arc<dyn EventSink>));
    s.file.context = Some(Context {
        cqe_version,
        bfregs,
        uar,
        async_fd: user_end.into_raw_fd(),
        async_file: Arc::clone(&async_file),
    });
    Ok(())
}

/// The mlx5 request checks of `mlx5_ib_alloc_ucontext` and `calc_total_bfregs`.
fn parse_ucontext_request(c: &Call<'_>) -> Result<(mlx5::AllocUcontextReqV2, u8), Errno> {
    let inlen = c.driver_in.len();
    let ver = match inlen {
        REQ_V0 => 0,
        n if n >= MIN_REQ_V2 => 2,
        _ => return Err(Errno::EINVAL),
    };
    let bytes = c.driver_read(inlen.min(size_of::<mlx5::AllocUcontextReqV2>()))?;
    let req = super::call::read_extended::<mlx5::AllocUcontextReqV2>(&bytes, Errno::EINVAL)?;
    if req.flags & !mlx5::alloc_uctx::DEVX != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if req.comp_mask != 0 || req.reserved0 != 0 || req.reserved1 != 0 || req.reserved2 != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let total = align_bfregs(req.total_num_bfregs);
    if req.num_low_latency_bfregs > total.wrapping_sub(1) {
        return Err(Errno::EINVAL);
    }
    if req.flags & mlx5::alloc_uctx::DEVX != 0 {
        return Err(Errno::EINVAL); // mlx5_ib_devx_create: no log_max_uctx
    }
    if total == 0 {
        return Err(Errno::EINVAL);
    }
    if total > MAX_BFREGS {
        return Err(Errno::ENOMEM);
    }
    Ok((req, ver))
}

/// `ALIGN(n, MLX5_NON_FP_BFREGS_PER_UAR)` in the kernel's u32 arithmetic.
fn align_bfregs(n: u32) -> u32 {
    n.wrapping_add(NON_FP_BFREGS_PER_UAR - 1) & !(NON_FP_BFREGS_PER_UAR - 1)
}

/// The legacy device attributes (`copy_query_dev_fields` of `mlx5_ib_query_device`).
fn device_attrs(s: &Session<'_>) -> uverbs::QueryDeviceResp {
    let max_qp = 1u32 << LOG_MAX_QP;
    uverbs::QueryDeviceResp {
        fw_ver: FW_VER,
        node_guid: big_endian::U64::new(s.dev.node_guid()),
        sys_image_guid: big_endian::U64::new(s.dev.node_guid()),
        max_mr_size: u64::MAX,
        page_size_cap: !(4096u64 - 1),
        vendor_id: VENDOR_ID,
        vendor_part_id: VENDOR_PART_ID,
        hw_ver: HW_VER,
        max_qp,
        max_qp_wr: MAX_QP_WQES,
        device_cap_flags: DEVICE_CAP_FLAGS as u32,
        max_sge: MAX_SEND_SGE.min(MAX_RECV_SGE),
        max_sge_rd: MAX_SGE_RD,
        max_cq: 1 << LOG_MAX_CQ,
        max_cqe: MAX_CQ_ENTRIES - 1,
        max_mr: 1 << LOG_MAX_MKEY,
        max_mw: MAX_MW,
        max_pd: 1 << LOG_MAX_PD,
        max_qp_rd_atom: MAX_RD_ATOMIC,
        max_res_rd_atom: MAX_RD_ATOMIC * max_qp,
        max_qp_init_rd_atom: MAX_RD_ATOMIC,
        atomic_cap: atomic_cap::HCA,
        max_srq: 1 << LOG_MAX_SRQ,
        max_srq_wr: (1 << LOG_MAX_SRQ_SZ) - 1,
        max_srq_sge: MAX_RECV_SGE - 1,
        max_pkeys: PKEY_TABLE_LEN,
        local_ca_ack_delay: LOCAL_CA_ACK_DELAY,
        phys_port_cnt: NUM_PORTS,
        ..Default::default()
    }
}

pub(crate) fn query_device(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    s.context()?;
    c.request::<uverbs::QueryDevice>()?;
    c.respond(device_attrs(s).as_bytes())
}

pub(crate) fn ex_query_device(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    s.context()?;
    let cmd = c.request::<uverbs::ExQueryDevice>()?;
    if cmd.comp_mask != 0 || cmd.reserved != 0 {
        return Err(Errno::EINVAL);
    }
    mlx5_query_device_udata(c)?;
    let mut resp = uverbs::ExQueryDeviceResp {
        base: device_attrs(s),
        timestamp_mask: 0x7fff_ffff_ffff_ffff,
        hca_core_clock: HCA_CORE_CLOCK_KHZ,
        device_cap_flags_ex: DEVICE_CAP_FLAGS,
        ..Default::default()
    };
    resp.response_length = c.response_length(size_of::<uverbs::ExQueryDeviceResp>());
    c.respond(resp.as_bytes())
}

/// The driver part of `mlx5_ib_query_device`: checks, and a response grown field by field
/// as far as the caller's buffer reaches, every capability zero (softhca has no raw
/// packet QPs, RSS, TSO, CQE compression, packet pacing, striding RQ or tunnels).
fn mlx5_query_device_udata(c: &Call<'_>) -> Result<(), Errno> {
    use mlx5::QueryDeviceResp as R;
    use std::mem::offset_of;
    const HEADER: usize = offset_of!(R, tso_caps);
    let outlen = c.driver_out.len;
    if outlen != 0 && outlen < HEADER {
        return Err(Errno::EINVAL);
    }
    if !c.driver_in.is_empty() && !c.driver_cleared_from(0) {
        return Err(Errno::EINVAL);
    }
    if outlen == 0 {
        return Ok(());
    }
    // End offsets of the fields the kernel adds when they fit (they are contiguous).
    let ends = [
        offset_of!(R, rss_caps),
        offset_of!(R, cqe_comp_caps),
        offset_of!(R, packet_pacing_caps),
        offset_of!(R, mlx5_ib_support_multi_pkt_send_wqes),
        offset_of!(R, flags),
        offset_of!(R, sw_parsing_caps),
        offset_of!(R, striding_rq_caps),
        offset_of!(R, tunnel_offloads_caps),
        offset_of!(R, dci_streams_caps),
        offset_of!(R, reserved),
        size_of::<R>(),
    ];
    let length = ends.iter().copied().filter(|&end| end <= outlen).max().unwrap_or(HEADER);
    let resp = R { response_length: length as u32, ..Default::default() };
    c.driver_write(&resp.as_bytes()[..length])
}

pub(crate) fn query_port(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    s.context()?;
    let cmd = c.request::<uverbs::QueryPort>()?;
    if cmd.port_num != 1 {
        return Err(Errno::EINVAL); // rdma_is_port_valid
    }
    let resp = uverbs::QueryPortResp {
        port_cap_flags: PORT_CAP_FLAGS,
        max_msg_sz: 1 << LOG_MAX_MSG,
        gid_tbl_len: GID_TABLE_LEN,
        pkey_tbl_len: 1,
        state: port_state::ACTIVE,
        max_mtu: MAX_MTU,
        active_mtu: ACTIVE_MTU,
        active_width: ACTIVE_WIDTH,
        active_speed: ACTIVE_SPEED,
        phys_state: PHYS_STATE_LINK_UP,
        link_layer: link_layer::ETHERNET,
        flags: PORT_FLAGS,
        ..Default::default()
    };
    c.respond(resp.as_bytes())
}
