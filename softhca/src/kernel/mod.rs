//! The kernel side of uverbs: what `write()` and `mmap()` on `/dev/infiniband/uverbsN` do
//! for an mlx5 device (Linux core/uverbs_main.c, uverbs_cmd.c and hw/mlx5/).
//!
//! [`Uverbs`] is one open of the device (a `struct file`). [`Uverbs::write`] takes the exact
//! bytes of a command, checks the header as `ib_uverbs_write`/`verify_hdr` do, runs the
//! handler and writes the response through the command's `response` pointer. Errors carry
//! the kernel's errno for the same input; where softhca does not model something the kernel
//! would do, the command fails with EOPNOTSUPP and the module docs say so.
//!
//! Dispatch follows the kernel's method tables: a command number past the table is
//! EOPNOTSUPP; a number in the table the device does not implement (POLL_CQ, POST_SEND,
//! REQ_NOTIFY_CQ, ... on mlx5) reaches a stub that checks only `in_words` and answers
//! EOPNOTSUPP; command bits other than the extended flag are EINVAL.

mod bfreg;
mod call;
pub mod caps;
mod context;
mod cq;
mod handles;
mod memory_window;
mod mmap;
mod pd_mr;
mod qp;
pub mod qp_state;
mod srq;

use crate::device::Device;
use crate::errno::Errno;
use crate::objects::CompChannel;
use crate::user_memory;
use call::{Call, UserBuf};
use context::Context;
use ferrodat_abi::mlx5;
use ferrodat_abi::uverbs::{self, CmdHdr, ExCmdHdr, cmd, ex_cmd};
use handles::{HandleTable, Object};
use std::borrow::Cow;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use zerocopy::FromBytes;

/// One open of a software HCA's uverbs device.
///
/// # Memory contract
///
/// Like the kernel, softhca writes responses through the user addresses a command carries
/// (and the hardware side later reads and writes the queues and regions it registers). They
/// are checked — a bad address gives EFAULT, never a fault — but not owned: the caller must
/// only pass addresses of memory it lends for that purpose and that no Rust reference
/// aliases, exactly as it would to a real device.
#[derive(Debug)]
pub struct Uverbs {
    device: Arc<Device>,
    file: Mutex<File>,
    /// UAR pages of the file's context (0 before GET_CONTEXT): what the doorbell entry
    /// point checks a store against without taking the file lock on every post.
    uar_pages: AtomicUsize,
}

/// What the kernel keeps per `struct ib_uverbs_file`.
#[derive(Debug, Default)]
pub(crate) struct File {
    /// The ucontext, after GET_CONTEXT.
    pub context: Option<Context>,
    /// Handles of this file's objects.
    pub handles: HandleTable,
    /// Completion channels created on this file (CREATE_CQ may name them by fd): the
    /// reference of the user's fd. CQs on a channel hold their own.
    pub channels: Vec<Arc<CompChannel>>,
}

impl File {
    /// Drops the file's reference to the completion channels the user has closed, as
    /// the close of the kernel's channel file drops the fd's reference: a channel goes,
    /// with our socket end, once no CQ holds it either. softhca sees no close(2), so the
    /// channel commands (CREATE_COMP_CHANNEL, CREATE_CQ, DESTROY_CQ) look: a closed
    /// channel lasts until the next of them (or the file's close, which drops them all).
    pub fn release_closed_channels(&mut self) {
        self.channels.retain(|ch| !ch.user_closed());
    }
}

/// What a handler works with.
pub(crate) struct Session<'a> {
    pub dev: &'a Arc<Device>,
    pub file: &'a mut File,
}

impl Session<'_> {
    /// `ib_uverbs_get_ucontext`: EINVAL before GET_CONTEXT.
    pub fn context(&self) -> Result<&Context, Errno> {
        self.file.context.as_ref().ok_or(Errno::EINVAL)
    }

    /// The handle the object being created will get. Responses are written before the
    /// object is committed, as the kernel writes them before it commits the uobject.
    pub fn next_handle(&self) -> u32 {
        self.file.handles.next_free()
    }
}

type Handler = fn(&mut Session<'_>, &Call<'_>) -> Result<(), Errno>;

/// A `struct uverbs_api_write_method`.
#[derive(Clone, Copy)]
struct Method {
    handler: Handler,
    is_ex: bool,
    has_udata: bool,
    has_resp: bool,
    req_size: usize,
    resp_size: usize,
}

/// `UAPI_DEF_WRITE_*`: a legacy method with its core request/response sizes.
const fn legacy(handler: Handler, req: usize, resp: usize, udata: bool) -> Method {
    Method {
        handler,
        is_ex: false,
        has_udata: udata,
        has_resp: resp > 0,
        req_size: req,
        resp_size: resp,
    }
}

/// `DECLARE_UVERBS_WRITE_EX` with `UAPI_DEF_WRITE_IO_EX` / `UAPI_DEF_WRITE_I_EX`: the core
/// request must reach `req` bytes (its last required member) and, when a response is
/// asked for, the core response `resp` bytes; `verify_hdr` answers ENOSPC otherwise.
const fn extended(handler: Handler, req: usize, resp: usize) -> Method {
    Method { handler, is_ex: true, has_udata: true, has_resp: true, req_size: req, resp_size: resp }
}

/// `uapi->notsupp_method`: what a command number the device lacks dispatches to.
const NOT_SUPPORTED: Method = legacy(not_supported, 0, 0, false);

fn not_supported(_: &mut Session<'_>, _: &Call<'_>) -> Result<(), Errno> {
    Err(Errno::EOPNOTSUPP)
}

/// `uapi->num_write`: one past the highest legacy method mlx5 enables (OPEN_QP).
const NUM_WRITE: u32 = cmd::OPEN_QP + 1;
/// `uapi->num_write_ex`: one past the highest extended method mlx5 enables (MODIFY_CQ).
const NUM_WRITE_EX: u32 = ex_cmd::MODIFY_CQ + 1;

/// The legacy method table as mlx5 sees it (`uverbs_def_write_intf` minus the commands not
/// in the device's `uverbs_cmd_mask`). Commands mlx5 has but softhca does not model (AH,
/// XRC, REREG_MR, QUERY_SRQ, multicast) are stubs too.
fn legacy_method(command: u32) -> Method {
    use std::mem::size_of as s;
    use uverbs::*;
    match command {
        cmd::GET_CONTEXT => {
            legacy(context::get_context, s::<GetContext>(), s::<GetContextResp>(), true)
        }
        cmd::QUERY_DEVICE => {
            legacy(context::query_device, s::<QueryDevice>(), s::<QueryDeviceResp>(), false)
        }
        cmd::QUERY_PORT => {
            legacy(context::query_port, s::<QueryPort>(), s::<QueryPortResp>(), false)
        }
        cmd::ALLOC_PD => legacy(pd_mr::alloc_pd, s::<AllocPd>(), s::<AllocPdResp>(), true),
        cmd::DEALLOC_PD => legacy(pd_mr::dealloc_pd, s::<DeallocPd>(), 0, false),
        cmd::REG_MR => legacy(pd_mr::reg_mr, s::<RegMr>(), s::<RegMrResp>(), true),
        cmd::DEREG_MR => legacy(pd_mr::dereg_mr, s::<DeregMr>(), 0, false),
        cmd::ALLOC_MW => legacy(memory_window::alloc_mw, s::<AllocMw>(), s::<AllocMwResp>(), true),
        cmd::DEALLOC_MW => legacy(memory_window::dealloc_mw, s::<DeallocMw>(), 0, false),
        cmd::CREATE_COMP_CHANNEL => legacy(
            cq::create_comp_channel,
            s::<CreateCompChannel>(),
            s::<CreateCompChannelResp>(),
            false,
        ),
        cmd::CREATE_CQ => legacy(cq::create_cq, s::<CreateCq>(), s::<CreateCqResp>(), true),
        cmd::RESIZE_CQ => legacy(cq::resize_cq, s::<ResizeCq>(), s::<ResizeCqResp>(), true),
        cmd::DESTROY_CQ => legacy(cq::destroy_cq, s::<DestroyCq>(), s::<DestroyCqResp>(), false),
        cmd::CREATE_QP => legacy(qp::create_qp, s::<CreateQp>(), s::<CreateQpResp>(), true),
        cmd::QUERY_QP => legacy(qp::query_qp, s::<QueryQp>(), s::<QueryQpResp>(), false),
        cmd::MODIFY_QP => legacy(qp::modify_qp, s::<ModifyQp>(), 0, false),
        cmd::DESTROY_QP => legacy(qp::destroy_qp, s::<DestroyQp>(), s::<DestroyQpResp>(), false),
        cmd::CREATE_SRQ => legacy(srq::create_srq, s::<CreateSrq>(), s::<CreateSrqResp>(), true),
        cmd::MODIFY_SRQ => {
            Method { has_resp: false, ..legacy(srq::modify_srq, s::<ModifySrq>(), 0, true) }
        }
        cmd::DESTROY_SRQ => {
            legacy(srq::destroy_srq, s::<DestroySrq>(), s::<DestroySrqResp>(), false)
        }
        _ => NOT_SUPPORTED,
    }
}

/// The extended method table. Extended commands mlx5 has but softhca does not model
/// (flows, WQs, indirection tables, CQ moderation) pass the extended header checks and
/// then fail with EOPNOTSUPP.
///
/// The sizes are `offsetofend` of the members `uverbs_def_write_intf` names (uverbs_cmd.c);
/// those of the commands softhca does not model are the same numbers from
/// `rdma/ib_user_verbs.h`.
fn extended_method(command: u32) -> Method {
    use std::mem::{offset_of, size_of as s};
    use uverbs::*;
    match command {
        ex_cmd::QUERY_DEVICE => extended(
            context::ex_query_device,
            s::<ExQueryDevice>(),
            offset_of!(ExQueryDeviceResp, response_length) + 4,
        ),
        ex_cmd::CREATE_CQ => extended(cq::ex_create_cq, s::<ExCreateCq>(), s::<ExCreateCqResp>()),
        ex_cmd::CREATE_QP => {
            extended(qp::ex_create_qp, offset_of!(ExCreateQp, comp_mask) + 4, s::<ExCreateQpResp>())
        }
        ex_cmd::MODIFY_QP => extended(
            qp::ex_modify_qp,
            offset_of!(ExModifyQp, base) + s::<ModifyQp>(),
            s::<ExModifyQpResp>(),
        ),
        // struct ib_uverbs_create_flow up to flow_attr / its response up to flow_handle.
        ex_cmd::CREATE_FLOW => extended(not_supported, 24, 8),
        // struct ib_uverbs_destroy_flow (no response).
        ex_cmd::DESTROY_FLOW => extended(not_supported, 8, 0),
        // struct ib_uverbs_ex_create_wq up to max_sge / its response up to wqn.
        ex_cmd::CREATE_WQ => extended(not_supported, 32, 24),
        // struct ib_uverbs_ex_modify_wq up to curr_wq_state (no response).
        ex_cmd::MODIFY_WQ => extended(not_supported, 16, 0),
        // struct ib_uverbs_ex_destroy_wq up to wq_handle / its response up to reserved.
        ex_cmd::DESTROY_WQ => extended(not_supported, 8, 16),
        // struct ib_uverbs_ex_create_rwq_ind_table up to log_ind_tbl_size / response up to
        // ind_tbl_num.
        ex_cmd::CREATE_RWQ_IND_TBL => extended(not_supported, 8, 16),
        // struct ib_uverbs_ex_destroy_rwq_ind_table (no response).
        ex_cmd::DESTROY_RWQ_IND_TBL => extended(not_supported, 8, 0),
        // struct ib_uverbs_ex_modify_cq (no response).
        ex_cmd::MODIFY_CQ => extended(not_supported, 16, 0),
        _ => NOT_SUPPORTED,
    }
}

/// `uapi_get_method`.
fn method_for(command: u32) -> Result<Method, Errno> {
    if command & !(uverbs::CMD_FLAG_EXTENDED | uverbs::CMD_COMMAND_MASK) != 0 {
        return Err(Errno::EINVAL);
    }
    let index = command & uverbs::CMD_COMMAND_MASK;
    if command & uverbs::CMD_FLAG_EXTENDED != 0 {
        if index >= NUM_WRITE_EX {
            return Err(Errno::EOPNOTSUPP);
        }
        return Ok(extended_method(index));
    }
    if index >= NUM_WRITE {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(legacy_method(index))
}

/// The errno `command` fails with once the device failed (`Engine::is_fatal`), as on a
/// mlx5 device in its internal-error state, `None` for the commands that go on: its
/// firmware completes destroys, deallocations and moves to ERR or RESET (`MODIFY_QP`
/// decides by the state asked for, in `kernel/qp.rs`) so that the consumer can clean up,
/// and fails every other command, queries of QPs and SRQs included, with ENOLINK (EIO
/// before Linux 5.18); GET_CONTEXT answers EAGAIN (`mlx5_ib_alloc_ucontext` on an
/// inactive device). What the kernel answers without the firmware goes on too:
/// QUERY_DEVICE (the attributes cached at registration), QUERY_PORT and
/// CREATE_COMP_CHANNEL.
fn refused_by_a_failed_device(command: u32) -> Option<Errno> {
    let index = command & uverbs::CMD_COMMAND_MASK;
    let goes_on = if command & uverbs::CMD_FLAG_EXTENDED != 0 {
        matches!(
            index,
            ex_cmd::QUERY_DEVICE
                | ex_cmd::MODIFY_QP
                | ex_cmd::DESTROY_FLOW
                | ex_cmd::DESTROY_WQ
                | ex_cmd::DESTROY_RWQ_IND_TBL
        )
    } else {
        matches!(
            index,
            cmd::QUERY_DEVICE
                | cmd::QUERY_PORT
                | cmd::CREATE_COMP_CHANNEL
                | cmd::DEALLOC_PD
                | cmd::DESTROY_AH
                | cmd::DEREG_MR
                | cmd::DEALLOC_MW
                | cmd::DESTROY_CQ
                | cmd::MODIFY_QP
                | cmd::DESTROY_QP
                | cmd::DETACH_MCAST
                | cmd::DESTROY_SRQ
                | cmd::CLOSE_XRCD
        )
    };
    match (goes_on, command) {
        (true, _) => None,
        (false, cmd::GET_CONTEXT) => Some(Errno::EAGAIN),
        (false, _) => Some(Errno::ENOLINK),
    }
}

/// errnos errno.rs has no name for.
pub(crate) const EBADF: Errno = Errno(libc::EBADF);
pub(crate) const ENODATA: Errno = Errno(libc::ENODATA);

const HDR: usize = size_of::<CmdHdr>();
const EX_HDR: usize = size_of::<ExCmdHdr>();

impl Uverbs {
    /// Opens the device (`ib_uverbs_open`): a file with no context yet.
    pub fn open(device: Arc<Device>) -> Result<Uverbs, Errno> {
        // A device a forked child inherited is its parent's: the child opens its own.
        if !device.engine().owner().is_current() {
            return Err(Errno::EACCES);
        }
        Ok(Uverbs { device, file: Mutex::new(File::default()), uar_pages: AtomicUsize::new(0) })
    }

    /// False in a forked child's copy of the file, which runs no command and releases
    /// nothing (`owning_process.rs`): the file belongs to the device's process, as `open`
    /// refuses any other.
    fn opened_here(&self) -> bool {
        self.device.engine().owner().is_current()
    }

    /// The device this file is open on.
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// The async event fd GET_CONTEXT returned, if it ran.
    pub fn async_fd(&self) -> Option<RawFd> {
        self.lock().context.as_ref().map(|c| c.async_fd)
    }

    /// Runs one command (`ib_uverbs_write`): `Ok(buf.len())` on success, the kernel's errno
    /// otherwise. See the type's memory contract.
    pub fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        if !self.opened_here() {
            return Err(Errno::EACCES);
        }
        let Ok((hdr, _)) = CmdHdr::read_from_prefix(buf) else {
            return Err(Errno::EINVAL); // count < sizeof(hdr)
        };
        let method = method_for(hdr.command)?;
        if let Some(errno) = refused_by_a_failed_device(hdr.command)
            && self.device.engine().is_fatal()
        {
            return Err(errno);
        }
        let call = if method.is_ex {
            split_extended(buf, &hdr, &method)?
        } else {
            split_legacy(buf, hdr, &method)?
        };
        let mut file = self.lock();
        let done = (method.handler)(&mut Session { dev: &self.device, file: &mut file }, &call);
        // A context, once made, stays for the file's life (one per file).
        let pages = file.context.as_ref().map_or(0, |ctx| ctx.uar.count());
        self.uar_pages.store(pages, Ordering::Release);
        done.map(|()| buf.len())
    }

    /// Maps a UAR page (`mlx5_ib_mmap`): `pgoff` is the mmap offset in pages,
    /// `(cmd << 8) | index`. The returned mapping is the caller's, to `munmap(ptr, len)`.
    pub fn mmap(&self, pgoff: u64, len: usize) -> Result<NonNull<u8>, Errno> {
        if !self.opened_here() {
            return Err(Errno::EACCES);
        }
        mmap::mmap(self.lock().context.as_ref(), pgoff, len)
    }

    /// Model entry point (a no-op on hardware): the driver stored the 8 bytes `stored` to
    /// UAR page `uar_page` at byte `offset`. At the CQ doorbell (0x20) they are the 64-bit
    /// arm doorbell, and softhca arms that CQ; in a BlueFlame register (0x800 and up) they
    /// are the control segment's first 8 bytes, and softhca executes that QP's new WQEs, up
    /// to the SQ counter in its doorbell record. Stores elsewhere, or to a page the context
    /// does not have, are ignored, as the device ignores them.
    ///
    /// The caller passes the value it stored rather than softhca reading the register back:
    /// several threads share a UAR page's CQ doorbell (and may share a BlueFlame register),
    /// and a read-back could see another thread's later store, losing this one, where the
    /// device sees every store.
    pub fn doorbell_rung(&self, uar_page: u32, offset: u32, stored: [u8; 8]) {
        let page_exists = (uar_page as usize) < self.uar_pages.load(Ordering::Acquire);
        let offset = offset as usize;
        if !page_exists || offset + 8 > mlx5::ADAPTER_PAGE_SIZE {
            return;
        }
        let engine = self.device.engine();
        if offset == mlx5::CQ_DOORBELL {
            let arm = u32::from_be_bytes([stored[0], stored[1], stored[2], stored[3]]);
            let cqn =
                u32::from_be_bytes([stored[4], stored[5], stored[6], stored[7]]) & 0x00ff_ffff;
            engine.arm_cq(cqn, arm);
            engine.cq_armed_by_doorbell();
        } else if offset >= mlx5::BF_OFFSET {
            let qpn_ds = u32::from_be_bytes([stored[4], stored[5], stored[6], stored[7]]);
            engine.sq_doorbell(qpn_ds >> 8);
        }
    }

    /// Model entry point (a no-op on hardware): the driver polled a CQ and found it empty.
    /// softhca reads the peers' packets, runs its timers and flushes receives posted to a
    /// QP in ERR. True if completions may have been written (worth polling again).
    pub fn progress(&self) -> bool {
        self.device.engine().progress()
    }

    fn lock(&self) -> MutexGuard<'_, File> {
        self.file.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `verify_hdr` and the udata split of a legacy command.
fn split_legacy<'a>(buf: &'a [u8], hdr: CmdHdr, method: &Method) -> Result<Call<'a>, Errno> {
    let count = buf.len();
    if usize::from(hdr.in_words) * 4 != count {
        return Err(Errno::EINVAL);
    }
    let mut core_in: Cow<'a, [u8]> = Cow::Borrowed(&buf[HDR..]);
    if count < method.req_size + HDR {
        // rdma-core v18/v19 sent DESTROY_CQ as a 16-byte write of a 24-byte struct; the
        // kernel takes in_words as 6 and reads the rest from the caller's memory after the
        // buffer.
        if hdr.command == cmd::DESTROY_CQ && count == 16 {
            let mut full = vec![0u8; method.req_size];
            user_memory::copy_from_user(buf.as_ptr() as u64 + HDR as u64, &mut full)?;
            core_in = Cow::Owned(full);
        } else {
            return Err(Errno::ENOSPC);
        }
    }
    let out_len = usize::from(hdr.out_words) * 4;
    if out_len < method.resp_size {
        return Err(Errno::ENOSPC);
    }
    let mut driver_in: &'a [u8] = &[];
    let mut driver_in_addr = 0;
    if method.has_udata {
        // The driver's data is whatever follows the core request (count >= req_size + hdr).
        driver_in = &buf[HDR + method.req_size..];
        if !driver_in.is_empty() {
            driver_in_addr = driver_in.as_ptr() as u64;
        }
        core_in = Cow::Borrowed(&buf[HDR..HDR + method.req_size]);
    }
    let (mut core_out, mut driver_out) = (UserBuf::default(), UserBuf::default());
    if method.has_resp {
        // The request starts with `__aligned_u64 response` (checked by the uapi macros).
        let response = u64::read_from_prefix(&core_in).map(|(r, _)| r).unwrap_or(0);
        if method.has_udata {
            core_out = UserBuf { addr: response, len: method.resp_size };
            let extra = out_len - method.resp_size;
            if extra > 0 {
                driver_out =
                    UserBuf { addr: response.wrapping_add(method.resp_size as u64), len: extra };
            }
        } else {
            core_out = UserBuf { addr: response, len: out_len };
        }
        if core_out.len == 0 {
            core_out.addr = 0;
        }
    }
    Ok(Call { core_in, core_out, driver_in, driver_in_addr, driver_out })
}

/// `verify_hdr` and the udata split of an extended command.
fn split_extended<'a>(buf: &'a [u8], hdr: &CmdHdr, method: &Method) -> Result<Call<'a>, Errno> {
    let Ok((ex, _)) = ExCmdHdr::read_from_prefix(&buf[HDR..]) else {
        return Err(Errno::EINVAL);
    };
    let body = &buf[HDR + EX_HDR..];
    let core_len = usize::from(hdr.in_words) * 8;
    let driver_len = usize::from(ex.provider_in_words) * 8;
    if core_len + driver_len != body.len() {
        return Err(Errno::EINVAL);
    }
    if core_len < method.req_size {
        return Err(Errno::ENOSPC);
    }
    if ex.cmd_hdr_reserved != 0 {
        return Err(Errno::EINVAL);
    }
    let core_out_len = usize::from(hdr.out_words) * 8;
    let driver_out_len = usize::from(ex.provider_out_words) * 8;
    if ex.response != 0 {
        if core_out_len == 0 && driver_out_len == 0 {
            return Err(Errno::EINVAL);
        }
        if core_out_len < method.resp_size {
            return Err(Errno::ENOSPC);
        }
        if !user_memory::access_ok(ex.response, (core_out_len + driver_out_len) as u64) {
            return Err(Errno::EFAULT);
        }
    } else if core_out_len != 0 || driver_out_len != 0 {
        return Err(Errno::EINVAL);
    }
    let driver_in = &body[core_len..];
    let buf_or_null = |addr: u64, len: usize| UserBuf { addr: if len > 0 { addr } else { 0 }, len };
    Ok(Call {
        core_in: Cow::Borrowed(&body[..core_len]),
        core_out: buf_or_null(ex.response, core_out_len),
        driver_in,
        driver_in_addr: if driver_len > 0 { driver_in.as_ptr() as u64 } else { 0 },
        driver_out: buf_or_null(ex.response.wrapping_add(core_out_len as u64), driver_out_len),
    })
}

impl Drop for Uverbs {
    /// `ib_uverbs_close` → `uverbs_destroy_ufile_hw`: every object of the file goes, QPs
    /// before what they use. The user's event fds stay open (they are the user's).
    fn drop(&mut self) {
        if !self.opened_here() {
            return; // a forked child's copy: the objects are the parent's
        }
        let file = self.file.get_mut().unwrap_or_else(|e| e.into_inner());
        let objects: Vec<Object> = file.handles.objects().collect();
        let mut st = self.device.state();
        let dev = &self.device;
        for obj in &objects {
            if let Object::Qp(qpn) = *obj {
                if let Some(qp) = st.qps.remove(&qpn)
                    && let Some(ctx) = file.context.as_mut()
                {
                    ctx.bfregs.free(qp.bfreg.kernel_index);
                }
                dev.free_qpn(qpn);
            }
        }
        for obj in &objects {
            match *obj {
                Object::Srq(n) => {
                    st.srqs.remove(&n);
                    dev.free_srqn(n);
                }
                Object::Cq(n) => {
                    st.cqs.remove(&n);
                    dev.free_cqn(n);
                }
                Object::Mr(n) => {
                    st.mrs.remove(&n);
                    dev.free_mkey_index(n);
                }
                Object::Mw(n) => {
                    st.mws.remove(&n);
                    dev.free_mkey_index(n);
                }
                _ => {}
            }
        }
        for obj in &objects {
            if let Object::Pd(n) = *obj {
                st.pds.remove(&n);
            }
        }
        file.handles.clear();
    }
}
