//! CREATE_QP, QUERY_QP, MODIFY_QP (legacy and extended), DESTROY_QP (`create_qp` +
//! `mlx5_ib_create_qp`/`create_user_qp`, `ib_uverbs_query_qp` + `mlx5_ib_query_qp`,
//! `modify_qp` + `_ib_modify_qp` + `mlx5_ib_modify_qp`, `ib_uverbs_destroy_qp`).
//!
//! RC only: the other types mlx5 supports (UC, UD, XRC, raw packet, DC) fail with
//! EOPNOTSUPP where the driver would accept them; unknown types are EINVAL as in the core.
//! Where the kernel leaves a check to the firmware, softhca applies the firmware's rule and
//! says so (RQ stride and size limits, a queue without a buffer, a UAR it did not allocate,
//! a MODIFY_QP whose CUR_STATE is not the QP's state). Routes are not resolved: a unicast
//! destination always gets the default hop limit.

use super::Session;
use super::call::{Call, read_extended};
use super::caps::*;
use super::handles::{Kind, Object};
use super::qp_state::{mlx5_has_command, modify_is_ok};
use crate::errno::Errno;
use crate::hca::app_memory::AppSpan;
use crate::hca::events::EventSink;
use crate::hca::queue_pair::{QpAttributes, QpSetup};
use crate::objects::QpAttrs;
use crate::objects::{AddressVector, Qp, QpCaps, QpState};
use crate::user_memory::{self, Access};
use ferrodat_abi::mlx5::{self, qp_flag};
use ferrodat_abi::uverbs::{
    self, access, create_qp_mask, event, qp_attr, qp_create_flags, qp_type,
};
use std::mem::offset_of;
use std::sync::Arc;
use zerocopy::IntoBytes;

/// Kernel-only create flags the core accepts (`IB_QP_CREATE_CROSS_CHANNEL`,
/// `_MANAGED_SEND`, `_MANAGED_RECV`; not in the uapi headers).
const CREATE_CROSS_CHANNEL: u32 = 1 << 2;
const CREATE_MANAGED_SEND: u32 = 1 << 3;
const CREATE_MANAGED_RECV: u32 = 1 << 4;
/// The create flags `create_qp` lets through to the driver.
const CORE_CREATE_FLAGS: u32 = qp_create_flags::BLOCK_MULTICAST_LOOPBACK
    | CREATE_CROSS_CHANNEL
    | CREATE_MANAGED_SEND
    | CREATE_MANAGED_RECV
    | qp_create_flags::SCATTER_FCS
    | qp_create_flags::CVLAN_STRIPPING
    | qp_create_flags::SOURCE_QPN
    | qp_create_flags::PCI_WRITE_END_PADDING;
/// Create flags that change nothing for an RC QP on softhca.
const RC_CREATE_FLAGS: u32 =
    qp_create_flags::BLOCK_MULTICAST_LOOPBACK | qp_create_flags::PCI_WRITE_END_PADDING;
/// mlx5 CREATE_QP flags softhca implements (for RC).
const RC_VENDOR_FLAGS: u32 = qp_flag::SIGNATURE
    | qp_flag::SCATTER_CQE
    | qp_flag::ALLOW_SCATTER_CQE
    | qp_flag::BFREG_INDEX
    | qp_flag::UAR_PAGE_INDEX;
/// `IB_QP_ATTR_STANDARD_BITS`.
const ATTR_STANDARD_BITS: u32 = (1 << 21) - 1;
/// `IB_QP_SET_QKEY`: privileged Q_Keys.
const SET_QKEY: u32 = 0x8000_0000;
/// 24-bit QPC fields.
const MASK_24: u32 = 0xff_ffff;

// ---------------------------------------------------------------------------------------
// CREATE_QP

pub(crate) fn create_qp(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::CreateQp>()?;
    let ex = uverbs::ExCreateQp {
        user_handle: cmd.user_handle,
        pd_handle: cmd.pd_handle,
        send_cq_handle: cmd.send_cq_handle,
        recv_cq_handle: cmd.recv_cq_handle,
        srq_handle: cmd.srq_handle,
        max_send_wr: cmd.max_send_wr,
        max_recv_wr: cmd.max_recv_wr,
        max_send_sge: cmd.max_send_sge,
        max_recv_sge: cmd.max_recv_sge,
        max_inline_data: cmd.max_inline_data,
        sq_sig_all: cmd.sq_sig_all,
        qp_type: cmd.qp_type,
        is_srq: cmd.is_srq,
        ..Default::default()
    };
    create(s, c, ex, |base| c.respond(base.as_bytes()))
}

pub(crate) fn ex_create_qp(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::ExCreateQp>()?;
    if cmd.comp_mask & !create_qp_mask::SUP_COMP_MASK != 0 || cmd.reserved != 0 {
        return Err(Errno::EINVAL);
    }
    create(s, c, cmd, |base| {
        let resp = uverbs::ExCreateQpResp {
            base,
            comp_mask: 0,
            response_length: c.response_length(size_of::<uverbs::ExCreateQpResp>()),
        };
        c.respond(resp.as_bytes())
    })
}

/// The objects a CREATE_QP names, looked up in the core's order.
struct Parents {
    pdn: u32,
    send_cqn: u32,
    recv_cqn: u32,
    srqn: Option<u32>,
}

/// `create_qp` (core) then the mlx5 driver; `respond` writes the core response.
fn create(
    s: &mut Session<'_>,
    c: &Call<'_>,
    mut cmd: uverbs::ExCreateQp,
    respond: impl FnOnce(uverbs::CreateQpResp) -> Result<(), Errno>,
) -> Result<(), Errno> {
    match cmd.qp_type {
        qp_type::RC | qp_type::UC | qp_type::UD | qp_type::XRC_INI | qp_type::DRIVER => {}
        qp_type::RAW_PACKET if !has_cap_net_raw() => return Err(Errno::EPERM),
        qp_type::RAW_PACKET => {}
        qp_type::XRC_TGT => {
            s.context()?;
            return Err(Errno::EINVAL); // its "PD" must be an XRCD, and softhca has none
        }
        _ => return Err(Errno::EINVAL),
    }
    s.context()?;
    let parents = lookup_parents(s, &mut cmd)?;
    if cmd.create_flags & !CORE_CREATE_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    if cmd.create_flags & qp_create_flags::SOURCE_QPN != 0 && !has_cap_net_raw() {
        return Err(Errno::EPERM);
    }
    // mlx5_ib_create_qp
    if cmd.qp_type != qp_type::RC {
        return Err(Errno::EOPNOTSUPP); // not modelled
    }
    let ucmd = parse_create_qp_udata(c)?;
    let cqe_version = s.context()?.cqe_version;
    let uidx = user_index(cqe_version, ucmd.uidx)?;
    if cmd.create_flags & !RC_CREATE_FLAGS != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let mut caps = QpCaps {
        max_send_wr: cmd.max_send_wr,
        max_recv_wr: cmd.max_recv_wr,
        max_send_sge: cmd.max_send_sge,
        max_recv_sge: cmd.max_recv_sge,
        max_inline_data: cmd.max_inline_data,
    };
    let signature = ucmd.flags & qp_flag::SIGNATURE != 0;
    let rq = rq_size(&mut caps, parents.srqn.is_some(), signature, &ucmd)?;
    if ucmd.sq_wqe_count > MAX_QP_WQES {
        return Err(Errno::EINVAL);
    }
    let uar_flags = ucmd.flags & (qp_flag::UAR_PAGE_INDEX | qp_flag::BFREG_INDEX);
    if uar_flags != 0 {
        // A UAR page index, or a bfreg of a dynamic UAR page: softhca allocates no
        // dynamic UARs, so none of these can name one.
        return Err(Errno::EINVAL);
    }
    if ucmd.sq_wqe_count != 0 && !ucmd.sq_wqe_count.is_power_of_two() {
        return Err(Errno::EINVAL);
    }
    let buf_size = (u64::from(ucmd.rq_wqe_count) << ucmd.rq_wqe_shift.min(32))
        + u64::from(ucmd.sq_wqe_count) * 64;
    check_qp_buffer(ucmd.buf_addr, buf_size)?;
    user_memory::check_mapped(ucmd.db_addr, 8, Access::Read)?;

    let ctx = s.file.context.as_mut().ok_or(Errno::EINVAL)?;
    let bfreg = ctx.bfregs.alloc();
    let (uar, async_file) = (ctx.uar.clone(), ctx.async_file.clone());
    let async_sink: Arc<dyn EventSink> = async_file.clone();
    let allocation = match s.dev.alloc_qpn() {
        Ok(a) => a,
        Err(e) => {
            ctx.bfregs.free(bfreg.kernel_index);
            return Err(e);
        }
    };
    let qpn = allocation.qpn;
    let rq_bytes = u64::from(rq.hw_count) << rq.shift;
    // SAFETY: check_qp_buffer and check_mapped verified the ranges above; the application
    // keeps them mapped until DESTROY_QP (the Uverbs memory contract).
    let (sq, rq_span, dbrec) = unsafe {
        (
            AppSpan::new((ucmd.buf_addr + rq_bytes) as usize, ucmd.sq_wqe_count as usize * 64),
            AppSpan::new(ucmd.buf_addr as usize, rq_bytes as usize),
            AppSpan::new(ucmd.db_addr as usize, 8),
        )
    };
    let setup = QpSetup {
        qpn,
        user_handle: cmd.user_handle,
        uidx: uidx.unwrap_or(0),
        cqe_version,
        pdn: parents.pdn,
        send_cqn: parents.send_cqn,
        recv_cqn: parents.recv_cqn,
        srqn: parents.srqn,
        sq,
        sq_wqebbs: ucmd.sq_wqe_count,
        rq: rq_span,
        rq_wqe_count: if parents.srqn.is_some() { 0 } else { rq.hw_count },
        rq_wqe_shift: rq.shift,
        rq_skip: if signature { 16 } else { 0 },
        dbrec,
        sq_sig_all: cmd.sq_sig_all != 0,
    };
    if let Err(e) = s.dev.engine().add_qp(allocation, setup, Some(async_sink)) {
        s.dev.free_qpn(qpn);
        if let Some(ctx) = s.file.context.as_mut() {
            ctx.bfregs.free(bfreg.kernel_index);
        }
        return Err(Errno(e.errno()));
    }
    let handle = s.next_handle();
    let driver_resp = mlx5::CreateQpResp { bfreg_index: bfreg.user_index, ..Default::default() };
    let outlen = c.driver_out.len.min(size_of::<mlx5::CreateQpResp>());
    let written = c.driver_write(&driver_resp.as_bytes()[..outlen]).and_then(|()| {
        respond(uverbs::CreateQpResp {
            qp_handle: handle,
            qpn,
            max_send_wr: caps.max_send_wr,
            max_recv_wr: caps.max_recv_wr,
            max_send_sge: caps.max_send_sge,
            max_recv_sge: caps.max_recv_sge,
            max_inline_data: caps.max_inline_data,
            reserved: 0,
        })
    });
    if let Err(e) = written {
        s.dev.free_qpn(qpn);
        if let Some(ctx) = s.file.context.as_mut() {
            ctx.bfregs.free(bfreg.kernel_index);
        }
        return Err(e);
    }
    let qp = Qp {
        qpn,
        user_handle: cmd.user_handle,
        uidx,
        pdn: parents.pdn,
        send_cqn: parents.send_cqn,
        recv_cqn: parents.recv_cqn,
        srqn: parents.srqn,
        buf_addr: ucmd.buf_addr,
        buf_size,
        rq_wqe_cnt: rq.hw_count,
        rq_wqe_shift: rq.shift,
        rq_max_gs: rq.max_gs,
        sq_offset: u64::from(rq.hw_count) << rq.shift,
        sq_wqe_cnt: ucmd.sq_wqe_count,
        db_addr: ucmd.db_addr,
        sq_sig_all: cmd.sq_sig_all != 0,
        signature,
        scatter_to_cqe: ucmd.flags & qp_flag::SCATTER_CQE != 0,
        bfreg,
        uar,
        caps,
        state: QpState::Reset,
        attrs: Default::default(),
        async_file,
        events_reported: 0,
    };
    s.dev.state().qps.insert(qpn, qp);
    s.file.handles.insert(Object::Qp(qpn));
    Ok(())
}

/// `rdma_uattrs_has_raw_cap`: CAP_NET_RAW in our effective set.
fn has_cap_net_raw() -> bool {
    const CAP_NET_RAW: u32 = 13;
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_NET_RAW) != 0)
}

fn lookup_parents(s: &Session<'_>, cmd: &mut uverbs::ExCreateQp) -> Result<Parents, Errno> {
    let h = &s.file.handles;
    if cmd.comp_mask & create_qp_mask::IND_TABLE != 0 {
        h.get(cmd.rwq_ind_tbl_handle, Kind::RwqIndTbl)?; // never exists: ENOENT or EINVAL
    }
    let mut srqn = None;
    let mut recv_cqn = None;
    if cmd.qp_type == qp_type::XRC_INI {
        cmd.max_recv_wr = 0;
        cmd.max_recv_sge = 0;
    } else {
        if cmd.is_srq != 0 {
            srqn = Some(h.get(cmd.srq_handle, Kind::Srq)?);
        }
        if cmd.recv_cq_handle != cmd.send_cq_handle {
            recv_cqn = Some(h.get(cmd.recv_cq_handle, Kind::Cq)?);
        }
    }
    let send_cqn = h.get(cmd.send_cq_handle, Kind::Cq)?;
    let pdn = h.get(cmd.pd_handle, Kind::Pd)?;
    Ok(Parents { pdn, send_cqn, recv_cqn: recv_cqn.unwrap_or(send_cqn), srqn })
}

/// `process_udata_size`, `check_ucmd_data` and `process_vendor_flags` for RC.
fn parse_create_qp_udata(c: &Call<'_>) -> Result<mlx5::CreateQp, Errno> {
    let inlen = c.driver_in.len();
    // Requests from before ECE (shorter than `ece_options`) count as no request at all.
    if inlen < offset_of!(mlx5::CreateQp, ece_options) {
        return Err(Errno::EINVAL);
    }
    if inlen > offset_of!(mlx5::CreateQp, reserved)
        && !c.driver_cleared_from(offset_of!(mlx5::CreateQp, reserved))
    {
        return Err(Errno::EINVAL);
    }
    let len = inlen.min(size_of::<mlx5::CreateQp>());
    let ucmd = read_extended::<mlx5::CreateQp>(&c.driver_in[..len], Errno::EINVAL)?;
    if ucmd.flags & (qp_flag::TYPE_DCI | qp_flag::TYPE_DCT) != 0 {
        return Err(Errno::EOPNOTSUPP); // DC transport: not modelled
    }
    if ucmd.flags & !RC_VENDOR_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(ucmd)
}

/// `get_qp_user_index`: with CQE version 1 the caller must supply a 24-bit index other than
/// the "none" value; with version 0 it must supply exactly "none".
fn user_index(cqe_version: u8, uidx: u32) -> Result<Option<u32>, Errno> {
    match cqe_version {
        0 if uidx == DEFAULT_UIDX => Ok(None),
        0 => Err(Errno::EINVAL),
        _ if uidx == DEFAULT_UIDX || uidx & !MASK_24 != 0 => Err(Errno::EINVAL),
        _ => Ok(Some(uidx)),
    }
}

/// The RQ as the hardware will use it.
struct RqSize {
    hw_count: u32,
    shift: u32,
    max_gs: u32,
}

/// `set_rq_size` (user variant) and its consistency check in `create_user_qp`, plus the
/// firmware's limits on the RQ it is given.
fn rq_size(
    caps: &mut QpCaps,
    has_srq: bool,
    signature: bool,
    ucmd: &mlx5::CreateQp,
) -> Result<RqSize, Errno> {
    if caps.max_recv_wr > MAX_QP_WQES {
        return Err(Errno::EINVAL);
    }
    let has_rq = !has_srq && caps.max_recv_wr != 0;
    let (count, shift, max_gs) = if has_rq {
        let shift = ucmd.rq_wqe_shift;
        if shift > 32 {
            return Err(Errno::EINVAL);
        }
        let per_wqe = (1u64 << shift) / 16;
        if per_wqe < u64::from(signature) {
            return Err(Errno::EINVAL);
        }
        (ucmd.rq_wqe_count, shift, (per_wqe - u64::from(signature)) as u32)
    } else {
        caps.max_recv_wr = 0;
        caps.max_recv_sge = 0;
        (0, 0, 0)
    };
    if ucmd.rq_wqe_shift != shift || ucmd.rq_wqe_count != count {
        return Err(Errno::EINVAL);
    }
    if count != 0 {
        // Firmware: log_rq_stride is 16..max_wqe_sz_rq bytes, log_rq_size ≤ log_max_qp_sz.
        if !(4..=MAX_WQE_SZ_RQ.trailing_zeros()).contains(&shift) || count > MAX_QP_WQES {
            return Err(Errno::EINVAL);
        }
    }
    // The firmware takes log2 of the count.
    let hw_count = if count == 0 { 0 } else { 1 << count.ilog2() };
    Ok(RqSize { hw_count, shift, max_gs })
}

/// The WQ buffer is pinned (EINVAL on wrap-around, EFAULT if unmapped) and must start at a
/// 64-byte multiple within its page. A non-empty queue needs a buffer (firmware).
fn check_qp_buffer(addr: u64, size: u64) -> Result<(), Errno> {
    if size == 0 {
        return Ok(());
    }
    if addr == 0 {
        return Err(Errno::EINVAL);
    }
    super::pd_mr::check_umem(addr, size, user_memory::page_size() as u64)?;
    user_memory::check_mapped(addr, size, Access::Read)?;
    if !addr.is_multiple_of(64) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// QUERY_QP

pub(crate) fn query_qp(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::QueryQp>()?;
    let qpn = s.file.handles.get(cmd.qp_handle, Kind::Qp)?;
    let mut resp = {
        let st = s.dev.state();
        let qp = st.qps.get(&qpn).ok_or(Errno::ENOENT)?;
        query_response(qp)
    };
    // Like mlx5_ib_query_qp, which reads the state back from the QP context: the hardware
    // may have moved the QP to ERR on its own. It reports it as the current state too, and
    // the PSNs as the context has them now (next_send_psn, next_rcv_psn): the ones MODIFY_QP
    // set only until the first message. Before RTR (RTS) the context holds what was set.
    if let Some(ctx) = s.dev.engine().qp_context(qpn) {
        resp.qp_state = ctx.state;
        resp.cur_qp_state = ctx.state;
        if !matches!(state_of(ctx.state), Ok(QpState::Reset | QpState::Init)) {
            resp.rq_psn = ctx.next_rcv_psn;
            if ctx.state != QpState::Rtr as u8 {
                resp.sq_psn = ctx.next_send_psn;
            }
        }
    }
    c.respond(resp.as_bytes())
}

/// What `mlx5_ib_query_qp` reads back from the QP context. A user QP's send capacities
/// and inline size are not known to the kernel (0); a RoCE path reads back without SL,
/// traffic class or LID (they live in other QPC fields) but always with a GRH.
fn query_response(qp: &Qp) -> uverbs::QueryQpResp {
    let a = &qp.attrs;
    let mut dest = uverbs::QpDest::default();
    if a.port_num != 0 {
        dest.port_num = a.port_num;
        dest.is_global = 1;
        if let Some(av) = &a.av {
            dest.dgid = av.dgid;
            dest.flow_label = av.flow_label;
            dest.sgid_index = av.sgid_index;
            dest.hop_limit = av.hop_limit;
            dest.static_rate = av.static_rate;
        }
    }
    uverbs::QueryQpResp {
        dest,
        max_recv_wr: qp.rq_wqe_cnt,
        max_recv_sge: qp.rq_max_gs,
        qkey: a.qkey,
        rq_psn: a.rq_psn,
        sq_psn: a.sq_psn,
        dest_qp_num: a.dest_qp_num,
        qp_access_flags: a.remote_access,
        pkey_index: a.pkey_index,
        qp_state: qp.state as u8,
        cur_qp_state: qp.state as u8,
        path_mtu: a.path_mtu,
        path_mig_state: a.path_mig_state,
        max_rd_atomic: a.max_rd_atomic,
        max_dest_rd_atomic: a.max_dest_rd_atomic,
        min_rnr_timer: a.min_rnr_timer,
        port_num: a.port_num,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        sq_sig_all: u8::from(qp.sq_sig_all),
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------------------
// MODIFY_QP

pub(crate) fn modify_qp(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::ModifyQp>()?;
    if cmd.attr_mask & !ATTR_STANDARD_BITS != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    modify(s, cmd, None)
}

pub(crate) fn ex_modify_qp(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::ExModifyQp>()?;
    if cmd.base.attr_mask & !(ATTR_STANDARD_BITS | qp_attr::RATE_LIMIT) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    modify(s, cmd.base, Some(c))?;
    let resp = uverbs::ExModifyQpResp {
        comp_mask: 0,
        response_length: c.response_length(size_of::<uverbs::ExModifyQpResp>()),
    };
    c.respond(resp.as_bytes())
}

fn port_valid(port: u8) -> bool {
    (1..=NUM_PORTS).contains(&port)
}

/// `modify_qp` (core), `_ib_modify_qp` and `mlx5_ib_modify_qp`, in their order. `ex` is the
/// extended command, whose mlx5 driver data may ask for ECE or out-of-order placement:
/// neither is modelled (EOPNOTSUPP).
fn modify(
    s: &mut Session<'_>,
    mut cmd: uverbs::ModifyQp,
    ex: Option<&Call<'_>>,
) -> Result<(), Errno> {
    let qpn = s.file.handles.get(cmd.qp_handle, Kind::Qp)?;
    let to_err_or_reset = cmd.attr_mask & qp_attr::STATE != 0
        && (cmd.qp_state == QpState::Err as u8 || cmd.qp_state == QpState::Reset as u8);
    if !to_err_or_reset && s.dev.engine().is_fatal() {
        // A failed mlx5 device completes 2ERR and 2RST, and fails every other transition.
        return Err(Errno::ENOLINK);
    }
    // The QP context's real state: the hardware may have moved the QP to ERR on its own.
    let hw_in_error = s.dev.engine().qp_state(qpn) == Some(QpState::Err as u8);
    let mut st = s.dev.state();
    let qp = st.qps.get(&qpn).ok_or(Errno::ENOENT)?;
    let mut mask = cmd.attr_mask;

    // modify_qp (uverbs): ports, states in range, privileged Q_Keys.
    if mask & qp_attr::PORT != 0 && !port_valid(cmd.port_num) {
        return Err(Errno::EINVAL);
    }
    if mask & qp_attr::AV != 0 {
        if !port_valid(cmd.dest.port_num) {
            return Err(Errno::EINVAL);
        }
        if mask & qp_attr::STATE != 0 && cmd.qp_state == QpState::Rtr as u8 {
            // INIT→RTR: the path's port must be the one set at RESET→INIT.
            if cmd.dest.port_num != qp.attrs.port_num {
                return Err(Errno::EINVAL);
            }
        } else {
            // SQD→SQD: a new path moves the QP to its port.
            let both = qp_attr::AV | qp_attr::PORT;
            if mask & both == both && cmd.port_num != cmd.dest.port_num {
                return Err(Errno::EINVAL);
            }
            if mask & qp_attr::PORT == 0 {
                mask |= qp_attr::PORT;
                cmd.port_num = cmd.dest.port_num;
            }
        }
    }
    if mask & qp_attr::ALT_PATH != 0
        && (!port_valid(cmd.alt_port_num)
            || !port_valid(cmd.alt_dest.port_num)
            || cmd.alt_port_num != cmd.alt_dest.port_num)
    {
        return Err(Errno::EINVAL);
    }
    let err_state = QpState::Err as u8;
    if (mask & qp_attr::CUR_STATE != 0 && cmd.cur_qp_state > err_state)
        || (mask & qp_attr::STATE != 0 && cmd.qp_state > err_state)
    {
        return Err(Errno::EINVAL);
    }
    if mask & qp_attr::QKEY != 0 && cmd.qkey & SET_QKEY != 0 {
        return Err(Errno::EPERM);
    }

    // _ib_modify_qp: address vectors (RoCE needs a GRH and a populated source GID);
    // alternate paths (APM) are not supported on RoCE.
    let av = if mask & qp_attr::AV != 0 { Some(check_av(&cmd.dest)?) } else { None };
    if mask & qp_attr::ALT_PATH != 0 {
        check_av(&cmd.alt_dest)?;
        return Err(Errno::EINVAL);
    }

    // mlx5_ib_modify_qp
    if let Some(c) = ex {
        check_modify_udata(c)?;
    }
    let cur = if mask & qp_attr::CUR_STATE != 0 { state_of(cmd.cur_qp_state)? } else { qp.state };
    let new = if mask & qp_attr::STATE != 0 { state_of(cmd.qp_state)? } else { cur };
    if !modify_is_ok(cur, new, mask) {
        return Err(Errno::EINVAL);
    }
    if mask & qp_attr::PKEY_INDEX != 0 && cmd.pkey_index >= PKEY_TABLE_LEN {
        return Err(Errno::EINVAL);
    }
    let too_deep = |bit: u32, v: u8| mask & bit != 0 && u32::from(v) > MAX_RD_ATOMIC;
    if too_deep(qp_attr::MAX_QP_RD_ATOMIC, cmd.max_rd_atomic)
        || too_deep(qp_attr::MAX_DEST_RD_ATOMIC, cmd.max_dest_rd_atomic)
    {
        return Err(Errno::EINVAL);
    }
    if cur == QpState::Reset && new == QpState::Reset {
        return Ok(());
    }

    // __mlx5_ib_modify_qp and the firmware.
    if mask & qp_attr::PATH_MTU != 0
        && !(uverbs::mtu::MTU_256..=uverbs::mtu::MTU_4096).contains(&cmd.path_mtu)
    {
        return Err(Errno::EINVAL);
    }
    if mask & qp_attr::AV != 0 && !rate_valid(cmd.dest.static_rate) {
        return Err(Errno::EINVAL);
    }
    if !mlx5_has_command(cur, new) {
        return Err(Errno::EINVAL);
    }
    // The firmware runs e.g. RTS2RTS only on a QP that is in RTS: a CUR_STATE that is not the
    // QP's state fails there.
    if cur != qp.state {
        return Err(Errno::EINVAL);
    }
    // The firmware also checks the QP context, which an error completion may have moved to
    // ERR behind the kernel's back: from there only 2RST and 2ERR succeed, anything else
    // fails with a bad resource state (EINVAL).
    if hw_in_error && !matches!(new, QpState::Reset | QpState::Err) {
        return Err(Errno::EINVAL);
    }

    let before = qp.attrs.clone();
    if let Some(qp) = st.qps.get_mut(&qpn) {
        apply(&mut qp.attrs, &cmd, mask, av);
    }
    st.set_qp_state(qpn, new);
    let attrs = st.qps.get(&qpn).map(|qp| hardware_attributes(&qp.attrs)).unwrap_or_default();
    drop(st);
    if !s.dev.engine().modify_qp(qpn, new as u8, attrs) {
        // The device failed after the check above: the transition did not happen.
        let mut st = s.dev.state();
        if let Some(qp) = st.qps.get_mut(&qpn) {
            qp.attrs = before;
        }
        st.set_qp_state(qpn, cur);
        return Err(Errno::ENOLINK);
    }
    Ok(())
}

/// `sizeof(struct mlx5_ib_modify_qp)`: `comp_mask`, `burst_info`, `ece_options`.
const MODIFY_QP_UDATA: usize = 16;

/// The udata checks of `mlx5_ib_modify_qp`: data that does not reach the end of
/// `ece_options` is EINVAL, non-zero bytes past the struct EOPNOTSUPP, unknown `comp_mask`
/// bits or a non-zero `burst_info.reserved` EOPNOTSUPP. All-zero data asks for nothing.
/// What softhca does not model (out-of-order placement, ECE options) is EOPNOTSUPP.
fn check_modify_udata(c: &Call<'_>) -> Result<(), Errno> {
    let data = c.driver_in;
    if data.is_empty() {
        return Ok(());
    }
    if data.len() < MODIFY_QP_UDATA {
        return Err(Errno::EINVAL);
    }
    if data.len() > MODIFY_QP_UDATA && !c.driver_cleared_from(MODIFY_QP_UDATA) {
        return Err(Errno::EOPNOTSUPP);
    }
    let comp_mask = u32::from_ne_bytes([data[0], data[1], data[2], data[3]]);
    let burst_reserved = u16::from_ne_bytes([data[10], data[11]]);
    let ece_options = u32::from_ne_bytes([data[12], data[13], data[14], data[15]]);
    if comp_mask != 0 || burst_reserved != 0 || ece_options != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(())
}

/// What the data path needs of the QP context.
fn hardware_attributes(a: &QpAttrs) -> QpAttributes {
    QpAttributes {
        access_flags: a.remote_access,
        dest_qpn: a.dest_qp_num,
        dgid: a.av.as_ref().map(|av| av.dgid).unwrap_or_default(),
        sq_psn: a.sq_psn,
        rq_psn: a.rq_psn,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        min_rnr_timer: a.min_rnr_timer,
        max_rd_atomic: a.max_rd_atomic,
    }
}

fn state_of(v: u8) -> Result<QpState, Errno> {
    QpState::from_u8(v).ok_or(Errno::EINVAL)
}

/// `mlx5r_ib_rate`: port rate (0), or 2.5 .. 800 Gb/s.
fn rate_valid(rate: u8) -> bool {
    rate == uverbs::rate::MAX
        || (uverbs::rate::RATE_2_5_GBPS..=uverbs::rate::RATE_800_GBPS).contains(&rate)
}

/// `rdma_check_ah_attr` / `rdma_fill_sgid_attr` / `ib_resolve_eth_dmac` for a RoCE port.
fn check_av(dest: &uverbs::QpDest) -> Result<AddressVector, Errno> {
    if dest.is_global == 0 {
        return Err(Errno::EINVAL); // RoCE address vectors need a GRH
    }
    if u32::from(dest.sgid_index) >= GID_TABLE_LEN {
        return Err(Errno::EINVAL);
    }
    if dest.sgid_index != 0 {
        return Err(super::ENODATA); // only entry 0 of the GID table is populated
    }
    let multicast = dest.dgid[0] == 0xff;
    // Unicast: the route's hop limit replaces the caller's. mlx5 then raises < 2 to 64.
    let hop_limit = if multicast { dest.hop_limit } else { ROUTE_HOP_LIMIT };
    Ok(AddressVector {
        dgid: dest.dgid,
        sgid_index: dest.sgid_index,
        hop_limit: if hop_limit < 2 { ROUTE_HOP_LIMIT } else { hop_limit },
        traffic_class: dest.traffic_class,
        flow_label: dest.flow_label & 0xf_ffff,
        sl: dest.sl,
        static_rate: dest.static_rate,
        port_num: dest.port_num,
    })
}

/// Stores the attributes `mask` names the way the QP context keeps them.
fn apply(
    a: &mut crate::objects::QpAttrs,
    cmd: &uverbs::ModifyQp,
    mask: u32,
    av: Option<AddressVector>,
) {
    let has = |bit: u32| mask & bit != 0;
    if has(qp_attr::PORT) {
        a.port_num = cmd.port_num;
    }
    if has(qp_attr::PKEY_INDEX) {
        a.pkey_index = cmd.pkey_index;
    }
    if has(qp_attr::ACCESS_FLAGS) {
        a.access_flags = cmd.qp_access_flags;
    }
    if has(qp_attr::MAX_DEST_RD_ATOMIC) {
        a.responder_depth = cmd.max_dest_rd_atomic;
        if cmd.max_dest_rd_atomic != 0 {
            a.max_dest_rd_atomic = cmd.max_dest_rd_atomic.next_power_of_two();
        }
    }
    if has(qp_attr::ACCESS_FLAGS | qp_attr::MAX_DEST_RD_ATOMIC) {
        // set_qpc_atomic_flags: without responder resources only remote writes are allowed.
        let remote = access::REMOTE_READ | access::REMOTE_WRITE | access::REMOTE_ATOMIC;
        let allowed = if a.responder_depth == 0 { access::REMOTE_WRITE } else { remote };
        a.remote_access = a.access_flags & allowed;
    }
    if has(qp_attr::PATH_MTU) {
        a.path_mtu = cmd.path_mtu;
    }
    if has(qp_attr::DEST_QPN) {
        a.dest_qp_num = cmd.dest_qp_num & MASK_24;
    }
    if let Some(av) = av {
        a.av = Some(av);
    }
    if has(qp_attr::RQ_PSN) {
        a.rq_psn = cmd.rq_psn & MASK_24;
    }
    if has(qp_attr::SQ_PSN) {
        a.sq_psn = cmd.sq_psn & MASK_24;
    }
    // QPC field widths: timeouts 5 bits, retry counts 3 bits.
    if has(qp_attr::TIMEOUT) {
        a.timeout = cmd.timeout & 0x1f;
    }
    if has(qp_attr::RETRY_CNT) {
        a.retry_cnt = cmd.retry_cnt & 0x7;
    }
    if has(qp_attr::RNR_RETRY) {
        a.rnr_retry = cmd.rnr_retry & 0x7;
    }
    if has(qp_attr::MIN_RNR_TIMER) {
        a.min_rnr_timer = cmd.min_rnr_timer & 0x1f;
    }
    if has(qp_attr::MAX_QP_RD_ATOMIC) && cmd.max_rd_atomic != 0 {
        a.max_rd_atomic = cmd.max_rd_atomic.next_power_of_two();
    }
    if has(qp_attr::PATH_MIG_STATE) && cmd.path_mig_state <= uverbs::mig_state::ARMED {
        a.path_mig_state = cmd.path_mig_state;
    }
    if has(qp_attr::QKEY) {
        a.qkey = cmd.qkey;
    }
    if has(qp_attr::EN_SQD_ASYNC_NOTIFY) {
        a.en_sqd_async_notify = cmd.en_sqd_async_notify != 0;
    }
}

// ---------------------------------------------------------------------------------------
// DESTROY_QP

pub(crate) fn destroy_qp(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::DestroyQp>()?;
    let qpn = s.file.handles.get(cmd.qp_handle, Kind::Qp)?;
    let qp = s.dev.state().qps.remove(&qpn).ok_or(Errno::ENOENT)?;
    if let Some(ctx) = s.file.context.as_mut() {
        ctx.bfregs.free(qp.bfreg.kernel_index);
    }
    let hw_events = s.dev.free_qpn(qpn);
    s.file.handles.remove(cmd.qp_handle);
    // Reported means read by the user (the kernel drops the unread ones with the QP).
    let unread = qp.async_file.remove_unread(qp.user_handle, QP_EVENTS);
    let events_reported = qp.events_reported.wrapping_add(hw_events).wrapping_sub(unread);
    c.respond(uverbs::DestroyQpResp { events_reported }.as_bytes())
}

/// The asynchronous events affiliated with a QP.
const QP_EVENTS: &[u32] = &[
    event::QP_FATAL,
    event::QP_REQ_ERR,
    event::QP_ACCESS_ERR,
    event::COMM_EST,
    event::SQ_DRAINED,
    event::PATH_MIG,
    event::PATH_MIG_ERR,
    event::QP_LAST_WQE_REACHED,
];
