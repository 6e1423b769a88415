//! CREATE_COMP_CHANNEL, CREATE_CQ (legacy and extended), RESIZE_CQ, DESTROY_CQ
//! (`ib_uverbs_create_comp_channel`, `create_cq` + `mlx5_ib_create_cq`/`create_cq_user`,
//! `ib_uverbs_resize_cq` + `mlx5_ib_resize_cq`, `ib_uverbs_destroy_cq`).
//!
//! REQ_NOTIFY_CQ is not here on purpose: mlx5 arms CQs in user space and its
//! `uverbs_cmd_mask` lacks the command, so the kernel answers EOPNOTSUPP.
//!
//! Not modelled (refused as by a device without the capability): CQE compression
//! (EOPNOTSUPP), 128-byte padding of 64-byte CQEs (EOPNOTSUPP), UAR page indices from
//! dynamically allocated UARs (EINVAL: softhca allocates none). RESIZE_CQ hands the new
//! ring to the hardware side, which marks the switch with a RESIZE_CQ entry in the old ring.

use super::Session;
use super::call::{Call, read_extended};
use super::caps::{MAX_CQ_ENTRIES, NUM_COMP_VECTORS};
use super::handles::{Kind, Object};
use crate::errno::Errno;
use crate::hca::app_memory::AppSpan;
use crate::hca::engine::{CqFlags, CqSetup};
use crate::hca::events::EventSink;
use crate::objects::{CompChannel, Cq};
use crate::user_memory::{self, Access};
use ferrodat_abi::mlx5;
use ferrodat_abi::uverbs::{self, cq_flags, event};
use std::mem::offset_of;
use std::os::fd::IntoRawFd;
use std::sync::Arc;
use zerocopy::IntoBytes;

pub(crate) fn create_comp_channel(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    c.request::<uverbs::CreateCompChannel>()?;
    s.context()?;
    s.file.release_closed_channels();
    let (channel, user_end) = CompChannel::create()?;
    c.respond(uverbs::CreateCompChannelResp { fd: channel.user_fd() as u32 }.as_bytes())?;
    let _ = user_end.into_raw_fd(); // the user's from now on
    s.file.channels.push(Arc::new(channel));
    Ok(())
}

pub(crate) fn create_cq(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::CreateCq>()?;
    let ex = uverbs::ExCreateCq {
        user_handle: cmd.user_handle,
        cqe: cmd.cqe,
        comp_vector: cmd.comp_vector,
        comp_channel: cmd.comp_channel,
        ..Default::default()
    };
    create(s, c, &ex, |handle, cqe| {
        c.respond(uverbs::CreateCqResp { cq_handle: handle, cqe }.as_bytes())
    })
}

pub(crate) fn ex_create_cq(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::ExCreateCq>()?;
    if cmd.comp_mask != 0 || cmd.reserved != 0 {
        return Err(Errno::EINVAL);
    }
    create(s, c, &cmd, |handle, cqe| {
        let resp = uverbs::ExCreateCqResp {
            base: uverbs::CreateCqResp { cq_handle: handle, cqe },
            comp_mask: 0,
            response_length: c.response_length(size_of::<uverbs::ExCreateCqResp>()),
        };
        c.respond(resp.as_bytes())
    })
}

/// `create_cq` with the mlx5 driver; `respond(handle, cqe)` writes the core response.
fn create(
    s: &mut Session<'_>,
    c: &Call<'_>,
    cmd: &uverbs::ExCreateCq,
    respond: impl FnOnce(u32, u32) -> Result<(), Errno>,
) -> Result<(), Errno> {
    if cmd.comp_vector >= NUM_COMP_VECTORS {
        return Err(Errno::EINVAL);
    }
    s.file.release_closed_channels();
    let ctx = s.context()?;
    let channel = if cmd.comp_channel >= 0 {
        let fd = cmd.comp_channel;
        let found = s.file.channels.iter().find(|ch| ch.is_user_fd(fd)).cloned();
        Some(found.ok_or(super::EBADF)?) // not a completion channel of this file
    } else {
        None
    };
    let entries = ring_entries(cmd.cqe, MAX_CQ_ENTRIES)?;
    if cmd.flags & !(cq_flags::TIMESTAMP_COMPLETION | cq_flags::IGNORE_OVERRUN) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let flags = CqFlags {
        timestamps: cmd.flags & cq_flags::TIMESTAMP_COMPLETION != 0,
        ignore_overrun: cmd.flags & cq_flags::IGNORE_OVERRUN != 0,
    };
    let ucmd = parse_create_cq_udata(c)?;
    let cqe_size = ucmd.cqe_size;
    check_cq_buffer(ucmd.buf_addr, entries, cqe_size)?;
    user_memory::check_mapped(ucmd.db_addr, 8, Access::Read)?;
    if ucmd.flags & mlx5::create_cq_flags::UAR_PAGE_INDEX != 0 {
        return Err(Errno::EINVAL); // no dynamically allocated UAR carries that index
    }
    if ucmd.cqe_comp_en == 1 {
        return Err(Errno::EOPNOTSUPP);
    }
    if ucmd.flags & mlx5::create_cq_flags::CQE_128B_PAD != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let cq = Cq {
        cqn: s.dev.alloc_cqn()?,
        user_handle: cmd.user_handle,
        buf_addr: ucmd.buf_addr,
        ncqe: entries,
        cqe_size,
        db_addr: ucmd.db_addr,
        uar: ctx.uar.clone(),
        uar_page: 0,
        comp_vector: cmd.comp_vector,
        channel,
        async_file: ctx.async_file.clone(),
        comp_events_reported: 0,
        async_events_reported: 0,
    };
    let handle = s.next_handle();
    let written = c
        .driver_write(cq.cqn.as_bytes()) // mlx5 copies just the cqn
        .and_then(|()| respond(handle, entries - 1));
    written?;
    let cqn = cq.cqn;
    // SAFETY: check_cq_buffer and check_mapped verified both ranges; the application keeps
    // them mapped until DESTROY_CQ (the Uverbs memory contract).
    let (buf, dbrec) = unsafe {
        (
            AppSpan::new(cq.buf_addr as usize, cq.ncqe as usize * cq.cqe_size as usize),
            AppSpan::new(cq.db_addr as usize, 8),
        )
    };
    s.dev.engine().add_cq(CqSetup {
        cqn,
        user_handle: cq.user_handle,
        buf,
        dbrec,
        ncqe: cq.ncqe,
        cqe_size: cq.cqe_size as usize,
        channel: cq.channel.clone().map(|c| c as Arc<dyn EventSink>),
        async_events: Some(cq.async_file.clone() as Arc<dyn EventSink>),
        flags,
    });
    s.dev.state().cqs.insert(cqn, cq);
    s.file.handles.insert(Object::Cq(cqn));
    Ok(())
}

/// The ring size for a request of `cqe` entries: `roundup_pow_of_two(cqe + 1)`, and the
/// range checks around it (EINVAL).
fn ring_entries(cqe: u32, max: u32) -> Result<u32, Errno> {
    // (the kernel's `int` test `entries < 0` is covered: such values exceed `max`)
    if cqe > max {
        return Err(Errno::EINVAL);
    }
    let entries = (cqe + 1).next_power_of_two();
    if entries > max {
        return Err(Errno::EINVAL);
    }
    Ok(entries)
}

/// The mlx5 CREATE_CQ data (`create_cq_user`): at least up to `flags`, known flags, a
/// 64/128-byte CQE, reserved fields zero.
fn parse_create_cq_udata(c: &Call<'_>) -> Result<mlx5::CreateCq, Errno> {
    let len = c.driver_in.len().min(size_of::<mlx5::CreateCq>());
    if len < offset_of!(mlx5::CreateCq, flags) {
        return Err(Errno::EINVAL);
    }
    let ucmd = read_extended::<mlx5::CreateCq>(&c.driver_in[..len], Errno::EINVAL)?;
    let known = mlx5::create_cq_flags::CQE_128B_PAD
        | mlx5::create_cq_flags::UAR_PAGE_INDEX
        | mlx5::create_cq_flags::REAL_TIME_TS;
    if ucmd.flags & !known != 0 {
        return Err(Errno::EINVAL);
    }
    if (ucmd.cqe_size != 64 && ucmd.cqe_size != 128) || ucmd.reserved0 != 0 || ucmd.reserved1 != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(ucmd)
}

/// The CQE ring is pinned writable, and must start at a 64-byte multiple within its page
/// (the CQ context's quantized page offset).
fn check_cq_buffer(addr: u64, entries: u32, cqe_size: u32) -> Result<(), Errno> {
    let len = u64::from(entries) * u64::from(cqe_size);
    super::pd_mr::check_umem(addr, len, user_memory::page_size() as u64)?;
    user_memory::check_mapped(addr, len, Access::Write)?;
    if !addr.is_multiple_of(64) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

pub(crate) fn resize_cq(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::ResizeCq>()?;
    let cqn = s.file.handles.get(cmd.cq_handle, Kind::Cq)?;
    let cur = s.dev.state().cqs.get(&cqn).map(|cq| cq.ncqe).ok_or(Errno::ENOENT)?;
    if cmd.cqe < 1 || cmd.cqe > MAX_CQ_ENTRIES {
        return Err(Errno::EINVAL);
    }
    let entries = (cmd.cqe + 1).next_power_of_two();
    if entries > MAX_CQ_ENTRIES + 1 {
        return Err(Errno::EINVAL);
    }
    if entries != cur {
        let bytes = c.driver_read(size_of::<mlx5::ResizeCq>())?;
        let ucmd = read_extended::<mlx5::ResizeCq>(&bytes, Errno::EINVAL)?;
        if ucmd.reserved0 != 0 || ucmd.reserved1 != 0 {
            return Err(Errno::EINVAL);
        }
        let cqe_size = u32::from(ucmd.cqe_size);
        check_cq_buffer(ucmd.buf_addr, entries, cqe_size)?;
        if cqe_size != 64 && cqe_size != 128 {
            return Err(Errno::EINVAL); // the firmware knows no other CQE size
        }
        // SAFETY: check_cq_buffer verified the range; the application keeps it mapped
        // until DESTROY_CQ or the next resize (the Uverbs memory contract).
        let buf =
            unsafe { AppSpan::new(ucmd.buf_addr as usize, entries as usize * cqe_size as usize) };
        if !s.dev.engine().resize_cq(cqn, buf, entries, cqe_size as usize) {
            return Err(Errno::EINVAL);
        }
        if let Some(cq) = s.dev.state().cqs.get_mut(&cqn) {
            cq.buf_addr = ucmd.buf_addr;
            cq.ncqe = entries;
            cq.cqe_size = cqe_size;
        }
    }
    let cqe = s.dev.state().cqs.get(&cqn).map_or(0, |cq| cq.ncqe - 1);
    c.respond(uverbs::ResizeCqResp { cqe, reserved: 0 }.as_bytes())
}

pub(crate) fn destroy_cq(s: &mut Session<'_>, c: &Call<'_>) -> Result<(), Errno> {
    let cmd = c.request::<uverbs::DestroyCq>()?;
    let cqn = s.file.handles.get(cmd.cq_handle, Kind::Cq)?;
    let mut st = s.dev.state();
    // ib_destroy_cq_user: the CQ's usecnt counts the QPs that complete into it.
    if st.qps.values().any(|q| q.send_cqn == cqn || q.recv_cqn == cqn) {
        return Err(Errno::EBUSY);
    }
    let cq = st.cqs.remove(&cqn).ok_or(Errno::ENOENT)?;
    drop(st);
    let (hw_comp, hw_async) = s.dev.free_cqn(cqn);
    s.file.handles.remove(cmd.cq_handle);
    // The kernel counts an event as reported when the user reads it; unread ones leave
    // the channel with the CQ (ib_uverbs_release_ucq), and libibverbs waits for the count
    // of acknowledged events to reach the one reported here.
    let unread = cq.channel.as_ref().map_or(0, |ch| ch.remove_unread(cq.user_handle));
    let resp = uverbs::DestroyCqResp {
        comp_events_reported: cq.comp_events_reported.wrapping_add(hw_comp).wrapping_sub(unread),
        async_events_reported: cq
            .async_events_reported
            .wrapping_add(hw_async)
            .wrapping_sub(cq.async_file.remove_unread(cq.user_handle, &[event::CQ_ERR])),
    };
    let written = c.respond(resp.as_bytes());
    // A channel the user closed while this CQ was on it goes now, with the CQ's
    // reference (`cq`, dropped below): the last one, if this was its last CQ.
    s.file.release_closed_channels();
    drop(cq);
    written
}
