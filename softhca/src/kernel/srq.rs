//! CREATE_SRQ, MODIFY_SRQ, DESTROY_SRQ for basic SRQs (`__uverbs_create_xsrq` +
//! `mlx5_ib_create_srq`/`create_srq_user`, `ib_uverbs_modify_srq` + `mlx5_ib_modify_srq`,
//! `ib_uverbs_destroy_srq`). As on mlx5, CREATE_SRQ ignores `srq_limit` (the limit is armed
//! with MODIFY_SRQ) and SRQs cannot be resized.

use super::Session;
use super::call::{Call, read_extended};
use super::caps::{LOG_MAX_SRQ_SZ, MAX_RECV_SGE};
use super::handles::{Kind, Object};
use crate::errno::Errno;
use crate::hca::app_memory::AppSpan;
use crate::hca::events::EventSink;
use crate::hca::shared_receive_queue::SrqSetup;
use crate::objects::Srq;
use crate::user_memory::{self, Access};
use ferrodat_abi::mlx5;
use ferrodat_abi::uverbs::{self, event, srq_attr};
use std::sync::Arc;
use zerocopy::IntoBytes;

/// `sizeof(struct mlx5_wqe_srq_next_seg)`: the link at the head of every SRQ WQE.
const NEXT_SEG: u32 = 16;
/// `sizeof(struct mlx5_wqe_data_seg)`.
const DATA_SEG: u32 = 16;

pub(crate) fn create_srq(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::CreateSrq>()?;
    let ctx = s.context()?;
    let (async_file, pdn) = (ctx.async_file.clone(), s.file.handles.get(cmd.pd_handle, Kind::Pd)?);
    // mlx5_ib_create_srq
    if cmd.max_wr >= 1 << LOG_MAX_SRQ_SZ || cmd.max_sge > MAX_RECV_SGE {
        return Err(Errno::EINVAL);
    }
    let wqe_cnt = (cmd.max_wr + 1).next_power_of_two();
    let desc = (NEXT_SEG + cmd.max_sge * DATA_SEG).next_power_of_two().max(32);
    let buf_size = u64::from(wqe_cnt) * u64::from(desc);
    // create_srq_user
    let len = c.driver_in.len().min(size_of::<mlx5::CreateSrq>());
    let ucmd = read_extended::<mlx5::CreateSrq>(&c.driver_in[..len], Errno::EINVAL)?;
    if ucmd.reserved0 != 0 || ucmd.reserved1 != 0 {
        return Err(Errno::EINVAL);
    }
    if c.driver_in.len() > size_of::<mlx5::CreateSrq>()
        && !c.driver_cleared_from(size_of::<mlx5::CreateSrq>())
    {
        return Err(Errno::EINVAL);
    }
    super::pd_mr::check_umem(ucmd.buf_addr, buf_size, user_memory::page_size() as u64)?;
    user_memory::check_mapped(ucmd.buf_addr, buf_size, Access::Read)?;
    user_memory::check_mapped(ucmd.db_addr, 8, Access::Read)?;
    if ucmd.buf_addr % 64 != 0 {
        return Err(Errno::EINVAL); // create_srq_cmd: quantized page offset
    }

    let srqn = s.dev.alloc_srqn()?;
    let handle = s.next_handle();
    let driver_resp = mlx5::CreateSrqResp { srqn, reserved: 0 };
    let outlen = c.driver_out.len.min(size_of::<mlx5::CreateSrqResp>());
    let written = c.driver_write(&driver_resp.as_bytes()[..outlen]).and_then(|()| {
        // srqn is reported in the core response for XRC SRQs only.
        let resp = uverbs::CreateSrqResp {
            srq_handle: handle,
            max_wr: wqe_cnt - 1,
            max_sge: cmd.max_sge,
            srqn: 0,
        };
        c.respond(resp.as_bytes())
    });
    written?;
    let srq = Srq {
        srqn,
        user_handle: cmd.user_handle,
        pdn,
        buf_addr: ucmd.buf_addr,
        wqe_cnt,
        wqe_shift: desc.trailing_zeros(),
        max_sge: cmd.max_sge,
        db_addr: ucmd.db_addr,
        signature: ucmd.flags & mlx5::srq_flag::SIGNATURE != 0,
        limit: 0,
        async_file,
        events_reported: 0,
    };
    // SAFETY: the buffer and doorbell record were checked mapped above; the application
    // keeps them until DESTROY_SRQ (the Uverbs memory contract).
    let (buf, dbrec) = unsafe {
        (
            AppSpan::new(srq.buf_addr as usize, buf_size as usize),
            AppSpan::new(srq.db_addr as usize, 8),
        )
    };
    s.dev.engine().add_srq(
        SrqSetup {
            srqn,
            user_handle: srq.user_handle,
            pdn,
            buf,
            wqe_count: srq.wqe_cnt,
            wqe_shift: srq.wqe_shift,
            dbrec,
        },
        Some(srq.async_file.clone() as Arc<dyn EventSink>),
    );
    s.dev.state().srqs.insert(srqn, srq);
    s.file.handles.insert(Object::Srq(srqn));
    Ok(())
}

pub(crate) fn modify_srq(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::ModifySrq>()?;
    let srqn = s.file.handles.get(cmd.srq_handle, Kind::Srq)?;
    if cmd.attr_mask & srq_attr::MAX_WR != 0 {
        return Err(Errno::EINVAL); // mlx5 cannot resize SRQs
    }
    if cmd.attr_mask & srq_attr::LIMIT != 0 {
        let mut st = s.dev.state();
        let srq = st.srqs.get_mut(&srqn).ok_or(Errno::ENOENT)?;
        if cmd.srq_limit >= srq.wqe_cnt {
            return Err(Errno::EINVAL);
        }
        srq.limit = cmd.srq_limit;
        drop(st);
        s.dev.engine().set_srq_limit(srqn, cmd.srq_limit);
    }
    Ok(())
}

pub(crate) fn destroy_srq(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::DestroySrq>()?;
    let srqn = s.file.handles.get(cmd.srq_handle, Kind::Srq)?;
    let mut st = s.dev.state();
    // ib_destroy_srq_user: the SRQ's usecnt counts the QPs attached to it.
    if st.qps.values().any(|q| q.srqn == Some(srqn)) {
        return Err(Errno::EBUSY);
    }
    let srq = st.srqs.remove(&srqn).ok_or(Errno::ENOENT)?;
    drop(st);
    let hw_events = s.dev.free_srqn(srqn);
    s.file.handles.remove(cmd.srq_handle);
    // Reported means read by the user (the kernel drops the unread ones with the SRQ).
    let srq_events = [event::SRQ_ERR, event::SRQ_LIMIT_REACHED];
    let unread = srq.async_file.remove_unread(srq.user_handle, &srq_events);
    let events_reported = srq.events_reported.wrapping_add(hw_events).wrapping_sub(unread);
    c.respond(uverbs::DestroySrqResp { events_reported }.as_bytes())
}
