//! Command-level tests of softhca's kernel side: every command with good buffers (response
//! fields checked) and bad ones, each failing with the errno Linux gives (uverbs core +
//! mlx5_ib; the kernel function is named where the reason is not obvious).
//!
//! Every test builds its own unregistered device, so tests share no state and run in
//! parallel.

#[path = "support/mem.rs"]
mod mem;

use ferrodat_abi::mlx5;
use ferrodat_abi::uverbs::{self, qp_attr as qa, *};
use ferrodat_softhca::config::DeviceConfig;
use ferrodat_softhca::kernel::qp_state::{RC_TRANSITIONS, mlx5_has_command, transition};
use ferrodat_softhca::objects::QpState;
use ferrodat_softhca::{Device, Errno, Uverbs};
use mem::{Mem, page};
use std::cell::RefCell;
use std::os::fd::RawFd;
use std::sync::Arc;
use zerocopy::{FromBytes, IntoBytes};

const EBADF: Errno = Errno(libc::EBADF);
const ENODATA: Errno = Errno(libc::ENODATA);

// ---------------------------------------------------------------------------------------
// User memory

/// An address that is never mapped (the first page).
const UNMAPPED: u64 = 0x10;

fn read<T: FromBytes>(bytes: &[u8]) -> T {
    T::read_from_prefix(bytes).unwrap().0
}

fn close(fd: RawFd) {
    // SAFETY: closing an fd the device handed to us (the user).
    unsafe { libc::close(fd) };
}

// ---------------------------------------------------------------------------------------
// Command buffers

fn legacy_buf(command: u32, body: &[u8], driver: &[u8], out: usize) -> Vec<u8> {
    let len = 8 + body.len() + driver.len();
    let hdr = CmdHdr { command, in_words: (len / 4) as u16, out_words: (out / 4) as u16 };
    [hdr.as_bytes(), body, driver].concat()
}

fn ex_buf(
    command: u32,
    core: &[u8],
    driver: &[u8],
    response: u64,
    out: usize,
    driver_out: usize,
) -> Vec<u8> {
    let hdr = CmdHdr {
        command: CMD_FLAG_EXTENDED | command,
        in_words: (core.len() / 8) as u16,
        out_words: (out / 8) as u16,
    };
    let ex = ExCmdHdr {
        response,
        provider_in_words: (driver.len() / 8) as u16,
        provider_out_words: (driver_out / 8) as u16,
        cmd_hdr_reserved: 0,
    };
    [hdr.as_bytes(), ex.as_bytes(), core, driver].concat()
}

/// rdma-core's GET_CONTEXT request: 16 bfregs, 4 low-latency, CQE v1, 4K+dynamic UAR caps.
fn uctx_req() -> mlx5::AllocUcontextReqV2 {
    mlx5::AllocUcontextReqV2 {
        total_num_bfregs: 16,
        num_low_latency_bfregs: 4,
        max_cqe_version: 1,
        lib_caps: mlx5::lib_cap::UAR_4K | mlx5::lib_cap::DYN_UAR,
        ..Default::default()
    }
}

const UCTX_RESP: usize = size_of::<GetContextResp>() + size_of::<mlx5::AllocUcontextResp>();

// ---------------------------------------------------------------------------------------
// Fixture

struct Fx {
    dev: Arc<Device>,
    uv: Uverbs,
    mem: RefCell<Vec<Mem>>,
}

fn device() -> Arc<Device> {
    Device::new(DeviceConfig { name: "softhca-test".into(), addr: "192.0.2.7".parse().unwrap() })
        .expect("join the softhca fabric")
}

/// A file with no context.
fn fresh() -> Fx {
    let dev = device();
    let uv = Uverbs::open(dev.clone()).unwrap();
    Fx { dev, uv, mem: RefCell::new(Vec::new()) }
}

/// A file with rdma-core's context.
fn ctx() -> Fx {
    let fx = fresh();
    fx.get_context(uctx_req().as_bytes()).unwrap();
    fx
}

/// The objects `Fx::qp` creates.
#[derive(Clone, Copy, Debug)]
struct QpH {
    pd: u32,
    cq: u32,
    qp: u32,
    qpn: u32,
}

impl Drop for Fx {
    fn drop(&mut self) {
        if let Some(fd) = self.uv.async_fd() {
            close(fd);
        }
    }
}

impl Fx {
    /// Memory that lives as long as the fixture.
    fn lend(&self, len: usize) -> u64 {
        let m = Mem::new(len);
        let a = m.addr();
        self.mem.borrow_mut().push(m);
        a
    }

    /// A legacy command whose response (`out` bytes) goes to a fresh buffer, its address
    /// patched into the request's `response` field.
    fn cmd(&self, command: u32, req: &[u8], driver: &[u8], out: usize) -> Result<Vec<u8>, Errno> {
        let resp = Mem::new(out);
        let mut body = req.to_vec();
        if out > 0 {
            body[..8].copy_from_slice(&resp.addr().to_ne_bytes());
        }
        let buf = legacy_buf(command, &body, driver, out);
        assert_eq!(self.uv.write(&buf)?, buf.len());
        Ok(resp.bytes()[..out].to_vec())
    }

    /// A legacy command without response.
    fn cmd0(&self, command: u32, req: &[u8], driver: &[u8]) -> Result<(), Errno> {
        let buf = legacy_buf(command, req, driver, 0);
        assert_eq!(self.uv.write(&buf)?, buf.len());
        Ok(())
    }

    /// An extended command; returns (core response, driver response).
    fn ex(
        &self,
        command: u32,
        core: &[u8],
        driver: &[u8],
        out: usize,
        driver_out: usize,
    ) -> Result<(Vec<u8>, Vec<u8>), Errno> {
        let resp = Mem::new(out + driver_out);
        let buf = ex_buf(command, core, driver, resp.addr(), out, driver_out);
        assert_eq!(self.uv.write(&buf)?, buf.len());
        let b = resp.bytes();
        Ok((b[..out].to_vec(), b[out..out + driver_out].to_vec()))
    }

    fn get_context(
        &self,
        driver: &[u8],
    ) -> Result<(GetContextResp, mlx5::AllocUcontextResp), Errno> {
        let r = self.cmd(cmd::GET_CONTEXT, GetContext::default().as_bytes(), driver, UCTX_RESP)?;
        Ok((read(&r), read(&r[8..])))
    }

    fn alloc_pd(&self) -> (u32, u32) {
        let r = self.cmd(cmd::ALLOC_PD, AllocPd::default().as_bytes(), &[], 8).unwrap();
        (read::<AllocPdResp>(&r).pd_handle, read::<mlx5::AllocPdResp>(&r[4..]).pdn)
    }

    fn reg_mr(
        &self,
        pd_handle: u32,
        start: u64,
        length: u64,
        access_flags: u32,
    ) -> Result<RegMrResp, Errno> {
        let req =
            RegMr { start, length, hca_va: start, pd_handle, access_flags, ..Default::default() };
        self.cmd(cmd::REG_MR, req.as_bytes(), &[], 12).map(|r| read(&r))
    }

    fn channel(&self) -> RawFd {
        let r = self
            .cmd(cmd::CREATE_COMP_CHANNEL, CreateCompChannel::default().as_bytes(), &[], 4)
            .unwrap();
        read::<CreateCompChannelResp>(&r).fd as RawFd
    }

    /// mlx5 CREATE_CQ data with a ring for `entries` 64-byte CQEs and a doorbell record.
    fn cq_ucmd(&self, entries: u32) -> mlx5::CreateCq {
        mlx5::CreateCq {
            buf_addr: self.lend(entries as usize * 64),
            db_addr: self.lend(64),
            cqe_size: 64,
            ..Default::default()
        }
    }

    fn create_cq_with(&self, req: CreateCq, ucmd: &[u8]) -> Result<(CreateCqResp, u32), Errno> {
        let r = self.cmd(cmd::CREATE_CQ, req.as_bytes(), ucmd, 16)?;
        Ok((read(&r), read::<mlx5::CreateCqResp>(&r[8..]).cqn))
    }

    fn create_cq(&self, cqe: u32, comp_channel: i32) -> (u32, u32) {
        let ring = (cqe + 1).next_power_of_two();
        let req = CreateCq { user_handle: 0xc0ffee, cqe, comp_channel, ..Default::default() };
        let (resp, cqn) = self.create_cq_with(req, self.cq_ucmd(ring).as_bytes()).unwrap();
        (resp.cq_handle, cqn)
    }

    fn destroy_cq(&self, cq_handle: u32) -> Result<DestroyCqResp, Errno> {
        let req = DestroyCq { cq_handle, ..Default::default() };
        self.cmd(cmd::DESTROY_CQ, req.as_bytes(), &[], 8).map(|r| read(&r))
    }

    /// rdma-core's mlx5 data for an RC QP with `max_send_wr` 1 and `max_recv_wr` 500 (1 SGE):
    /// 4 WQEBBs of SQ, 512 RQ entries of 16 bytes.
    fn qp_ucmd(&self, sq_wqe_count: u32, rq_wqe_count: u32, rq_wqe_shift: u32) -> mlx5::CreateQp {
        // Absurd sizes (the checks refuse them first) get a small buffer.
        let rq = (rq_wqe_count as usize).checked_shl(rq_wqe_shift).unwrap_or(0);
        let size = (rq + sq_wqe_count as usize * 64).min(1 << 24);
        mlx5::CreateQp {
            buf_addr: self.lend(size),
            db_addr: self.lend(64),
            sq_wqe_count,
            rq_wqe_count,
            rq_wqe_shift,
            flags: mlx5::qp_flag::SCATTER_CQE,
            uidx: 7,
            ..Default::default()
        }
    }

    fn qp_req(pd: u32, cq: u32) -> CreateQp {
        CreateQp {
            user_handle: 0x5150,
            pd_handle: pd,
            send_cq_handle: cq,
            recv_cq_handle: cq,
            max_send_wr: 1,
            max_recv_wr: 500,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 60,
            qp_type: qp_type::RC,
            ..Default::default()
        }
    }

    fn create_qp_with(
        &self,
        req: CreateQp,
        ucmd: &[u8],
    ) -> Result<(CreateQpResp, mlx5::CreateQpResp), Errno> {
        let r = self.cmd(cmd::CREATE_QP, req.as_bytes(), ucmd, 32 + 40)?;
        Ok((read(&r), read(&r[32..])))
    }

    /// PD, CQ and an RC QP in RESET.
    fn qp(&self) -> QpH {
        let (pd, _) = self.alloc_pd();
        let (cq, _) = self.create_cq(511, -1);
        let (qp, qpn) = self.add_qp(pd, cq);
        QpH { pd, cq, qp, qpn }
    }

    fn add_qp(&self, pd: u32, cq: u32) -> (u32, u32) {
        let (resp, _) =
            self.create_qp_with(Fx::qp_req(pd, cq), self.qp_ucmd(4, 512, 4).as_bytes()).unwrap();
        (resp.qp_handle, resp.qpn)
    }

    fn modify(&self, m: &ModifyQp) -> Result<(), Errno> {
        self.cmd0(cmd::MODIFY_QP, m.as_bytes(), &[])
    }

    fn query(&self, qp_handle: u32) -> QueryQpResp {
        let req = QueryQp { qp_handle, attr_mask: 0, ..Default::default() };
        read(&self.cmd(cmd::QUERY_QP, req.as_bytes(), &[], 128).unwrap())
    }

    fn destroy_qp(&self, qp_handle: u32) -> Result<DestroyQpResp, Errno> {
        let req = DestroyQp { qp_handle, ..Default::default() };
        self.cmd(cmd::DESTROY_QP, req.as_bytes(), &[], 4).map(|r| read(&r))
    }

    /// Moves a QP to `to` along the normal path (through RESET first).
    fn drive(&self, qp: u32, to: QpState) {
        self.modify(&ModifyQp { qp_handle: qp, attr_mask: qa::STATE, ..Default::default() })
            .unwrap();
        if to == QpState::Reset {
            return;
        }
        self.modify(&to_init(qp)).unwrap();
        match to {
            QpState::Init => {}
            QpState::Err => self.modify(&full(qp, QpState::Init, QpState::Err, qa::STATE)).unwrap(),
            _ => {
                self.modify(&to_rtr(qp)).unwrap();
                if to == QpState::Rts {
                    self.modify(&to_rts(qp)).unwrap();
                }
            }
        }
        assert_eq!(self.query(qp).qp_state, to as u8);
    }

    fn state_of(&self, qpn: u32) -> QpState {
        self.dev.state().qps[&qpn].state
    }
}

// ---------------------------------------------------------------------------------------
// MODIFY_QP requests (the masks and values ibv_rc_pingpong sends)

const REMOTE_GID: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 8];

fn dest() -> QpDest {
    QpDest {
        dgid: REMOTE_GID,
        sgid_index: 0,
        hop_limit: 1,
        is_global: 1,
        port_num: 1,
        ..Default::default()
    }
}

/// Every attribute set to a valid value, so that only `mask` decides the outcome.
fn full(qp: u32, cur: QpState, next: QpState, mask: u32) -> ModifyQp {
    ModifyQp {
        dest: dest(),
        alt_dest: dest(),
        qp_handle: qp,
        attr_mask: mask,
        rq_psn: 0x1234,
        sq_psn: 0x4321,
        dest_qp_num: 0x108,
        qp_access_flags: access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ,
        qp_state: next as u8,
        cur_qp_state: cur as u8,
        path_mtu: mtu::MTU_1024,
        en_sqd_async_notify: 1,
        max_rd_atomic: 1,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        port_num: 1,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        alt_port_num: 1,
        ..Default::default()
    }
}

fn to_init(qp: u32) -> ModifyQp {
    full(qp, QpState::Reset, QpState::Init, 0x39)
}
fn to_rtr(qp: u32) -> ModifyQp {
    full(qp, QpState::Init, QpState::Rtr, 0x129181)
}
fn to_rts(qp: u32) -> ModifyQp {
    full(qp, QpState::Rtr, QpState::Rts, 0x12e01)
}

// =======================================================================================
// Header checks and dispatch (ib_uverbs_write, verify_hdr, uapi_get_method)

#[test]
fn writes_shorter_than_a_header_are_einval() {
    let fx = fresh();
    assert_eq!(fx.uv.write(&[]), Err(Errno::EINVAL));
    assert_eq!(fx.uv.write(&[0; 7]), Err(Errno::EINVAL));
}

#[test]
fn in_words_must_match_the_write_length() {
    let fx = ctx();
    let mut buf = legacy_buf(
        cmd::QUERY_PORT,
        QueryPort { port_num: 1, ..Default::default() }.as_bytes(),
        &[],
        40,
    );
    buf[4] += 1; // in_words one too many
    assert_eq!(fx.uv.write(&buf), Err(Errno::EINVAL));
    buf.push(0); // not a multiple of 4 either
    assert_eq!(fx.uv.write(&buf), Err(Errno::EINVAL));
}

#[test]
fn request_shorter_than_the_core_struct_is_enospc() {
    // verify_hdr: count < req_size + sizeof(hdr) is ENOSPC (not EINVAL).
    let fx = ctx();
    let buf = legacy_buf(cmd::QUERY_PORT, &[0u8; 8], &[], 40);
    assert_eq!(fx.uv.write(&buf), Err(Errno::ENOSPC));
    let buf = legacy_buf(cmd::CREATE_QP, &[0u8; 52], &[], 72);
    assert_eq!(fx.uv.write(&buf), Err(Errno::ENOSPC));
}

#[test]
fn response_smaller_than_the_core_struct_is_enospc() {
    let fx = ctx();
    let buf = legacy_buf(cmd::QUERY_DEVICE, QueryDevice::default().as_bytes(), &[], 172);
    assert_eq!(fx.uv.write(&buf), Err(Errno::ENOSPC));
    let r = fx.cmd(
        cmd::QUERY_PORT,
        QueryPort { port_num: 1, ..Default::default() }.as_bytes(),
        &[],
        36,
    );
    assert_eq!(r, Err(Errno::ENOSPC));
}

#[test]
fn unknown_and_unsupported_commands_answer_like_the_kernel() {
    let fx = ctx();
    // Past the method table (num_write = OPEN_QP + 1): EOPNOTSUPP.
    for command in [41, 50, 0xff] {
        assert_eq!(
            fx.uv.write(&legacy_buf(command, &[], &[], 0)),
            Err(Errno::EOPNOTSUPP),
            "{command}"
        );
    }
    // In the table but not an mlx5 method (notsupp_method: sizes 0): EOPNOTSUPP once
    // in_words matches, EINVAL before.
    for command in [
        cmd::MODIFY_AH,
        cmd::POLL_CQ,
        cmd::REQ_NOTIFY_CQ,
        cmd::POST_SEND,
        cmd::POST_RECV,
        cmd::PEEK_CQ,
    ] {
        let buf = legacy_buf(command, &[0; 8], &[], 0);
        assert_eq!(fx.uv.write(&buf), Err(Errno::EOPNOTSUPP), "{command}");
        let mut bad = buf.clone();
        bad[4] = 9;
        assert_eq!(fx.uv.write(&bad), Err(Errno::EINVAL), "{command}");
    }
    // Command bits other than the extended flag: EINVAL (uapi_get_method).
    assert_eq!(
        fx.uv.write(&legacy_buf(0x4000_0000 | cmd::QUERY_DEVICE, &[0; 8], &[], 176)),
        Err(Errno::EINVAL)
    );
    assert_eq!(fx.uv.write(&legacy_buf(0x100, &[], &[], 0)), Err(Errno::EINVAL));
    // Extended numbers past the table: EOPNOTSUPP; extended numbers without a method use the
    // legacy stub's checks.
    assert_eq!(fx.uv.write(&ex_buf(58, &[], &[], 0, 0, 0)), Err(Errno::EOPNOTSUPP));
    assert_eq!(fx.uv.write(&ex_buf(2, &[0; 8], &[], 0, 0, 0)), Err(Errno::EINVAL));
    assert_eq!(
        fx.uv.write(&legacy_buf(CMD_FLAG_EXTENDED | 2, &[], &[], 0)),
        Err(Errno::EOPNOTSUPP)
    );
    // Extended methods mlx5 has but softhca does not model (a core request as long as
    // struct ib_uverbs_create_flow up to flow_attr).
    assert_eq!(
        fx.uv.write(&ex_buf(ex_cmd::CREATE_FLOW, &[0; 24], &[], 0, 0, 0)),
        Err(Errno::EOPNOTSUPP)
    );
}

#[test]
fn commands_before_get_context() {
    let fx = fresh();
    assert_eq!(
        fx.cmd(cmd::QUERY_DEVICE, QueryDevice::default().as_bytes(), &[], 176),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        fx.cmd(
            cmd::QUERY_PORT,
            QueryPort { port_num: 1, ..Default::default() }.as_bytes(),
            &[],
            40
        ),
        Err(Errno::EINVAL)
    );
    assert_eq!(fx.cmd(cmd::ALLOC_PD, AllocPd::default().as_bytes(), &[], 8), Err(Errno::EINVAL));
    assert_eq!(
        fx.cmd(cmd::CREATE_COMP_CHANNEL, CreateCompChannel::default().as_bytes(), &[], 4),
        Err(Errno::EINVAL)
    );
    // Lookups do not need a context: no such handle.
    assert_eq!(
        fx.cmd0(cmd::DEALLOC_PD, DeallocPd { pd_handle: 0 }.as_bytes(), &[]),
        Err(Errno::ENOENT)
    );
    assert_eq!(fx.destroy_cq(0), Err(Errno::ENOENT));
    assert_eq!(fx.uv.mmap(0, page()), Err(Errno::EINVAL));
    assert_eq!(fx.uv.async_fd(), None);
}

#[test]
fn extended_header_checks() {
    let fx = ctx();
    let core = ExQueryDevice::default();
    let resp = Mem::new(304);
    // Shorter than both headers.
    let mut short = ex_buf(ex_cmd::QUERY_DEVICE, core.as_bytes(), &[], resp.addr(), 304, 0);
    short.truncate(20);
    assert_eq!(fx.uv.write(&short), Err(Errno::EINVAL));
    // Word counts that do not add up to the write length.
    let mut buf = ex_buf(ex_cmd::QUERY_DEVICE, core.as_bytes(), &[], resp.addr(), 304, 0);
    buf[4] = 2;
    assert_eq!(fx.uv.write(&buf), Err(Errno::EINVAL));
    // Reserved word.
    let mut buf = ex_buf(ex_cmd::QUERY_DEVICE, core.as_bytes(), &[], resp.addr(), 304, 0);
    buf[20] = 1;
    assert_eq!(fx.uv.write(&buf), Err(Errno::EINVAL));
    // A response pointer but no room, and room but no pointer.
    assert_eq!(
        fx.uv.write(&ex_buf(ex_cmd::QUERY_DEVICE, core.as_bytes(), &[], resp.addr(), 0, 0)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        fx.uv.write(&ex_buf(ex_cmd::QUERY_DEVICE, core.as_bytes(), &[], 0, 304, 0)),
        Err(Errno::EINVAL)
    );
    // access_ok: a response range outside user space.
    let kernel_addr = 0xffff_8000_0000_0000;
    assert_eq!(
        fx.uv.write(&ex_buf(ex_cmd::QUERY_DEVICE, core.as_bytes(), &[], kernel_addr, 304, 0)),
        Err(Errno::EFAULT)
    );
    // No response at all is fine.
    assert!(fx.uv.write(&ex_buf(ex_cmd::QUERY_DEVICE, core.as_bytes(), &[], 0, 0, 0)).is_ok());
}

#[test]
fn bad_response_pointers_are_efault_and_leave_nothing_behind() {
    let fx = ctx();
    let mut req = QueryDevice { response: UNMAPPED };
    assert_eq!(
        fx.uv.write(&legacy_buf(cmd::QUERY_DEVICE, req.as_bytes(), &[], 176)),
        Err(Errno::EFAULT)
    );
    req.response = 0;
    assert_eq!(
        fx.uv.write(&legacy_buf(cmd::QUERY_DEVICE, req.as_bytes(), &[], 176)),
        Err(Errno::EFAULT)
    );
    // A read-only response buffer.
    let ro = Mem::new(page());
    ro.protect(libc::PROT_READ);
    req.response = ro.addr();
    assert_eq!(
        fx.uv.write(&legacy_buf(cmd::QUERY_DEVICE, req.as_bytes(), &[], 176)),
        Err(Errno::EFAULT)
    );
    // ALLOC_PD whose response cannot be written is undone: the next PD gets handle 0.
    let bad = AllocPd { response: UNMAPPED };
    assert_eq!(fx.uv.write(&legacy_buf(cmd::ALLOC_PD, bad.as_bytes(), &[], 8)), Err(Errno::EFAULT));
    assert!(fx.dev.state().pds.is_empty());
    assert_eq!(fx.alloc_pd().0, 0);
}

#[test]
fn nonzero_bytes_past_a_request_without_driver_data_are_eopnotsupp() {
    // uverbs_request: a newer ABI's fields this kernel does not know must be zero.
    let fx = ctx();
    let mut req = QueryDevice::default().as_bytes().to_vec();
    req.extend([0u8; 8]);
    assert!(fx.cmd(cmd::QUERY_DEVICE, &req, &[], 176).is_ok());
    req[12] = 1;
    assert_eq!(fx.cmd(cmd::QUERY_DEVICE, &req, &[], 176), Err(Errno::EOPNOTSUPP));
}

#[test]
fn destroy_cq_accepts_the_rdma_core_v18_short_write() {
    // verify_hdr: a 16-byte DESTROY_CQ is read as the 24-byte struct.
    let fx = ctx();
    let (cq, _) = fx.create_cq(15, -1);
    let resp = Mem::new(8);
    let mut buf = legacy_buf(
        cmd::DESTROY_CQ,
        DestroyCq { response: resp.addr(), cq_handle: cq, reserved: 0 }.as_bytes(),
        &[],
        8,
    );
    buf[4] = 4; // in_words: 16 bytes
    assert_eq!(fx.uv.write(&buf[..16]), Ok(16));
    assert!(fx.dev.state().cqs.is_empty());
}

// =======================================================================================
// GET_CONTEXT (ib_uverbs_get_context, mlx5_ib_alloc_ucontext)

#[test]
fn get_context_answers_like_mlx5_on_a_connectx5() {
    let fx = fresh();
    let (core, m) = fx.get_context(uctx_req().as_bytes()).unwrap();
    assert_eq!(core.num_comp_vectors, 1);
    assert_eq!(fx.uv.async_fd(), Some(core.async_fd as RawFd));
    assert_eq!(m.qp_tab_size, 1 << 16, "the QP table of softhca's registry");
    assert_eq!(m.bf_reg_size, 512);
    assert_eq!(m.tot_bfregs, 16);
    assert_eq!(m.cache_line_size, 64);
    assert_eq!((m.max_sq_desc_sz, m.max_rq_desc_sz), (512, 512));
    assert_eq!((m.max_send_wqebb, m.max_recv_wr, m.max_srq_recv_wr), (1 << 15, 1 << 15, 1 << 15));
    assert_eq!(m.num_ports, 1);
    assert_eq!(m.comp_mask, 0);
    assert_eq!(m.response_length, 72);
    assert_eq!(m.cqe_version, 1);
    assert_eq!(m.cmds_supp_uhw, 0);
    assert_eq!(m.eth_min_inline, mlx5::user_inline_mode::NONE);
    assert_eq!(m.clock_info_versions, 0);
    assert_eq!((m.log_uar_size, m.num_uars_per_page, m.num_dyn_bfregs), (12, 1, 0));
    assert_eq!(m.dump_fill_mkey, 0);
}

#[test]
fn get_context_accepts_the_shorter_requests_rdma_core_retries_with() {
    for (len, cqe_version) in [(24usize, 1u8), (16, 0)] {
        let fx = fresh();
        let (_, m) = fx.get_context(&uctx_req().as_bytes()[..len]).unwrap();
        assert_eq!(m.cqe_version, cqe_version, "{len}-byte request");
        assert_eq!(m.tot_bfregs, 16);
    }
    // The version-0 request: 8 bytes, no flags.
    let fx = fresh();
    let (_, m) = fx.get_context(&uctx_req().as_bytes()[..8]).unwrap();
    assert_eq!((m.cqe_version, m.tot_bfregs), (0, 16));
    // Any other length below 16: EINVAL.
    for len in [0, 4, 12] {
        assert_eq!(
            fresh().get_context(&uctx_req().as_bytes()[..len]).err(),
            Some(Errno::EINVAL),
            "{len}"
        );
    }
}

#[test]
fn get_context_twice_is_einval() {
    // ib_init_ucontext: one ucontext per file.
    let fx = ctx();
    let first = fx.uv.async_fd();
    assert_eq!(fx.get_context(uctx_req().as_bytes()).err(), Some(Errno::EINVAL));
    assert_eq!(fx.uv.async_fd(), first);
}

#[test]
fn get_context_request_checks() {
    let with = |f: &dyn Fn(&mut mlx5::AllocUcontextReqV2)| {
        let mut r = uctx_req();
        f(&mut r);
        fresh().get_context(r.as_bytes()).map(|(_, m)| m)
    };
    assert_eq!(with(&|r| r.flags = mlx5::alloc_uctx::DEVX).err(), Some(Errno::EINVAL));
    assert_eq!(with(&|r| r.flags = 2).err(), Some(Errno::EOPNOTSUPP));
    assert_eq!(with(&|r| r.comp_mask = 1).err(), Some(Errno::EOPNOTSUPP));
    assert_eq!(with(&|r| r.reserved0 = 1).err(), Some(Errno::EOPNOTSUPP));
    assert_eq!(with(&|r| r.reserved2 = 1).err(), Some(Errno::EOPNOTSUPP));
    assert_eq!(with(&|r| r.total_num_bfregs = 0).err(), Some(Errno::EINVAL));
    assert_eq!(with(&|r| r.num_low_latency_bfregs = 16).err(), Some(Errno::EINVAL));
    // calc_total_bfregs: more than MLX5_MAX_BFREGS (512) is ENOMEM.
    assert_eq!(with(&|r| r.total_num_bfregs = 513).err(), Some(Errno::ENOMEM));
    assert_eq!(with(&|r| r.total_num_bfregs = 512).unwrap().tot_bfregs, 512);
    // Rounded up to whole UARs (2 bfregs each).
    assert_eq!(with(&|r| r.total_num_bfregs = 17).unwrap().tot_bfregs, 18);
}

#[test]
fn get_context_response_follows_the_callers_buffer() {
    let fx = fresh();
    let resp = Mem::new(page());
    resp.fill(0xaa);
    let req = GetContext { response: resp.addr() };
    // Room for 44 bytes of the 72-byte mlx5 response (up to `response_length` itself).
    let buf = legacy_buf(cmd::GET_CONTEXT, req.as_bytes(), uctx_req().as_bytes(), 8 + 44);
    fx.uv.write(&buf).unwrap();
    let m: mlx5::AllocUcontextResp = read(&resp.bytes()[8..]);
    assert_eq!(m.response_length, 44);
    assert_eq!(resp.bytes()[8 + 44], 0xaa, "nothing written past response_length");
    // Core response only: fine, mlx5 writes nothing.
    let fx = fresh();
    assert!(
        fx.cmd(cmd::GET_CONTEXT, GetContext::default().as_bytes(), uctx_req().as_bytes(), 8)
            .is_ok()
    );
}

#[test]
fn get_context_with_a_bad_response_creates_no_context() {
    let fx = fresh();
    let buf = legacy_buf(
        cmd::GET_CONTEXT,
        GetContext { response: UNMAPPED }.as_bytes(),
        uctx_req().as_bytes(),
        UCTX_RESP,
    );
    assert_eq!(fx.uv.write(&buf), Err(Errno::EFAULT));
    assert_eq!(fx.uv.async_fd(), None);
    assert!(fx.get_context(uctx_req().as_bytes()).is_ok());
}

// =======================================================================================
// QUERY_DEVICE, QUERY_DEVICE_EX, QUERY_PORT

#[test]
fn query_device_reports_connectx5_limits() {
    let fx = ctx();
    let d: QueryDeviceResp =
        read(&fx.cmd(cmd::QUERY_DEVICE, QueryDevice::default().as_bytes(), &[], 176).unwrap());
    assert_eq!((d.vendor_id, d.vendor_part_id), (0x02c9, 4119));
    assert_eq!(d.fw_ver, (16 << 32) | (35 << 16) | 2000);
    assert_eq!(d.node_guid.get(), fx.dev.node_guid());
    assert_eq!(d.node_guid.get(), 0x00c9_c0ff_fe00_0207, "from 192.0.2.7");
    assert_eq!(d.sys_image_guid, d.node_guid);
    assert_eq!((d.max_qp_wr, d.max_sge, d.max_sge_rd), (32768, 30, 30));
    assert_eq!(d.max_cqe, 4_194_303);
    assert_eq!(d.max_qp, 65536, "the QP table of softhca's registry, not a ConnectX-5's 2^18");
    assert_eq!((d.max_qp_rd_atom, d.max_qp_init_rd_atom), (16, 16));
    assert_eq!(d.atomic_cap, atomic_cap::HCA);
    assert_eq!(d.phys_port_cnt, 1);
    assert_eq!((d.max_srq_wr, d.max_srq_sge, d.max_pkeys), (32767, 31, 128));
    assert_eq!(d.page_size_cap, 0xffff_ffff_ffff_f000);
    assert_ne!(d.device_cap_flags as u64 & device_cap::RC_RNR_NAK_GEN, 0);
}

#[test]
fn query_device_zero_fills_a_larger_response_buffer() {
    let fx = ctx();
    let resp = Mem::new(page());
    resp.fill(0xaa);
    let buf =
        legacy_buf(cmd::QUERY_DEVICE, QueryDevice { response: resp.addr() }.as_bytes(), &[], 200);
    fx.uv.write(&buf).unwrap();
    assert!(resp.bytes()[176..200].iter().all(|&b| b == 0));
    assert_eq!(resp.bytes()[200], 0xaa);
}

#[test]
fn extended_commands_check_their_core_sizes() {
    // verify_hdr with the sizes UAPI_DEF_WRITE_IO_EX records: a core request shorter than
    // its last required member, or a core response shorter than `response_length`, is
    // ENOSPC before any handler runs (and before the reserved word is looked at).
    let fx = ctx();
    let h = fx.qp();
    let qd = ExQueryDevice::default();
    let r = |c: u32, core: &[u8], out: usize, dout: usize| fx.ex(c, core, &[], out, dout).err();
    assert_eq!(r(ex_cmd::QUERY_DEVICE, &[], 304, 0), Some(Errno::ENOSPC), "query: no core");
    assert_eq!(r(ex_cmd::QUERY_DEVICE, qd.as_bytes(), 176, 0), Some(Errno::ENOSPC), "query: 176");
    assert_eq!(r(ex_cmd::QUERY_DEVICE, qd.as_bytes(), 184, 0), None, "query: 184 is enough");
    let mut reserved = ex_buf(ex_cmd::QUERY_DEVICE, &[], &[], 0, 0, 0);
    reserved[20] = 1;
    assert_eq!(fx.uv.write(&reserved), Err(Errno::ENOSPC), "size before reserved word");

    let cq = ExCreateCq { cqe: 15, comp_channel: -1, ..Default::default() };
    let ucmd = fx.cq_ucmd(16);
    let cq_ex =
        |core: &[u8], out: usize| fx.ex(ex_cmd::CREATE_CQ, core, ucmd.as_bytes(), out, 8).err();
    assert_eq!(cq_ex(&cq.as_bytes()[..24], 16), Some(Errno::ENOSPC), "create_cq: no reserved");
    assert_eq!(cq_ex(cq.as_bytes(), 8), Some(Errno::ENOSPC), "create_cq: 8-byte response");
    assert_eq!(cq_ex(cq.as_bytes(), 16), None, "create_cq: full sizes");

    let qp = ex_create_rc_qp(h.pd, h.cq);
    let u = fx.qp_ucmd(4, 512, 4);
    let qp_ex =
        |core: &[u8], out: usize| fx.ex(ex_cmd::CREATE_QP, core, u.as_bytes(), out, 40).err();
    assert_eq!(qp_ex(&qp.as_bytes()[..48], 40), Some(Errno::ENOSPC), "create_qp: no comp_mask");
    assert_eq!(qp_ex(qp.as_bytes(), 32), Some(Errno::ENOSPC), "create_qp: 32-byte response");
    // Up to comp_mask is enough: the rest is zero-extended.
    assert_eq!(qp_ex(&qp.as_bytes()[..56], 40), None, "create_qp: 56 bytes");

    let m = ExModifyQp { base: to_init(h.qp), rate_limit: 0, reserved: 0 };
    assert_eq!(r(ex_cmd::MODIFY_QP, &m.as_bytes()[..104], 8, 0), Some(Errno::ENOSPC), "modify");
    assert_eq!(
        r(ex_cmd::MODIFY_QP, m.as_bytes(), 0, 8),
        Some(Errno::ENOSPC),
        "modify: no core out"
    );
    assert_eq!(r(ex_cmd::MODIFY_QP, &m.as_bytes()[..112], 8, 0), None, "modify: base only");
    assert_eq!(fx.state_of(h.qpn), QpState::Init);

    // Commands softhca does not model check their sizes too.
    assert_eq!(r(ex_cmd::CREATE_FLOW, &[0; 16], 8, 0), Some(Errno::ENOSPC), "create_flow");
    assert_eq!(r(ex_cmd::MODIFY_CQ, &[0; 8], 0, 0), Some(Errno::ENOSPC), "modify_cq");
}

#[test]
fn query_device_ex_answers_with_the_full_response_or_what_fits() {
    let fx = ctx();
    let core = ExQueryDevice::default();
    let (r, _) = fx.ex(ex_cmd::QUERY_DEVICE, core.as_bytes(), &[], 304, 0).unwrap();
    let d: ExQueryDeviceResp = read(&r);
    assert_eq!(d.response_length, 304);
    assert_eq!(d.base.vendor_part_id, 4119);
    assert_eq!(d.hca_core_clock, 78125);
    assert_eq!(d.timestamp_mask, 0x7fff_ffff_ffff_ffff);
    assert_eq!(d.device_cap_flags_ex & 0xffff_ffff, u64::from(d.base.device_cap_flags));
    assert_eq!(d.odp_caps.general_caps, 0);
    // What an older library asks for: 184 bytes, truncated, response_length says so.
    let (r, _) = fx.ex(ex_cmd::QUERY_DEVICE, core.as_bytes(), &[], 184, 0).unwrap();
    assert_eq!(read::<u32>(&r[180..]), 184);
    // A core request without its `reserved` word is too short (verify_hdr: ENOSPC).
    assert_eq!(fx.ex(ex_cmd::QUERY_DEVICE, &[], &[], 304, 0).err(), Some(Errno::ENOSPC));
    // mlx5 data: grows field by field; at least its 8-byte header.
    let (_, m) = fx.ex(ex_cmd::QUERY_DEVICE, core.as_bytes(), &[], 304, 16).unwrap();
    assert_eq!(read::<u32>(&m[4..]), 16);
    let (_, m) = fx.ex(ex_cmd::QUERY_DEVICE, core.as_bytes(), &[], 304, 104).unwrap();
    assert_eq!(read::<mlx5::QueryDeviceResp>(&m).response_length, 104);
}

#[test]
fn query_device_ex_request_checks() {
    let fx = ctx();
    let bad = ExQueryDevice { comp_mask: 1, reserved: 0 };
    assert_eq!(fx.ex(ex_cmd::QUERY_DEVICE, bad.as_bytes(), &[], 304, 0).err(), Some(Errno::EINVAL));
    let bad = ExQueryDevice { comp_mask: 0, reserved: 1 };
    assert_eq!(fx.ex(ex_cmd::QUERY_DEVICE, bad.as_bytes(), &[], 304, 0).err(), Some(Errno::EINVAL));
    let mut long = ExQueryDevice::default().as_bytes().to_vec();
    long.extend([0, 0, 0, 0, 0, 0, 0, 1]);
    assert_eq!(fx.ex(ex_cmd::QUERY_DEVICE, &long, &[], 304, 0).err(), Some(Errno::EOPNOTSUPP));
    // mlx5_ib_query_device: driver input must be zero.
    assert_eq!(
        fx.ex(ex_cmd::QUERY_DEVICE, &[0; 8], &[1, 0, 0, 0, 0, 0, 0, 0], 304, 8).err(),
        Some(Errno::EINVAL)
    );
    assert!(fx.ex(ex_cmd::QUERY_DEVICE, &[0; 8], &[0; 8], 304, 8).is_ok());
}

#[test]
fn query_port_reports_an_active_roce_port() {
    let fx = ctx();
    let q = |port_num| {
        fx.cmd(cmd::QUERY_PORT, QueryPort { port_num, ..Default::default() }.as_bytes(), &[], 40)
    };
    let p: QueryPortResp = read(&q(1).unwrap());
    assert_eq!(p.state, port_state::ACTIVE);
    assert_eq!(p.phys_state, 5);
    assert_eq!(p.link_layer, link_layer::ETHERNET);
    assert_eq!((p.active_mtu, p.max_mtu), (mtu::MTU_1024, mtu::MTU_4096));
    assert!(p.gid_tbl_len >= 1);
    assert_eq!((p.lid, p.sm_lid, p.pkey_tbl_len), (0, 0, 1));
    assert_eq!(p.max_msg_sz, 1 << 30);
    assert_ne!(p.port_cap_flags & port_cap::IP_BASED_GIDS, 0);
    // mlx5 sets GRH_REQUIRED only on InfiniBand links (get_core_cap_flags).
    assert_eq!(p.flags & port_flags::GRH_REQUIRED, 0);
    assert_eq!(q(0).err(), Some(Errno::EINVAL));
    assert_eq!(q(2).err(), Some(Errno::EINVAL));
}

// =======================================================================================
// PD and MR

#[test]
fn alloc_and_dealloc_pd() {
    let fx = ctx();
    let (h0, pdn0) = fx.alloc_pd();
    let (h1, pdn1) = fx.alloc_pd();
    assert_eq!((h0, h1), (0, 1));
    assert_ne!(pdn0, pdn1);
    assert!(fx.dev.state().pds.contains_key(&pdn1));
    fx.cmd0(cmd::DEALLOC_PD, DeallocPd { pd_handle: h0 }.as_bytes(), &[]).unwrap();
    assert!(!fx.dev.state().pds.contains_key(&pdn0));
    assert_eq!(
        fx.cmd0(cmd::DEALLOC_PD, DeallocPd { pd_handle: h0 }.as_bytes(), &[]),
        Err(Errno::ENOENT)
    );
    // Handles are reused lowest first.
    assert_eq!(fx.alloc_pd().0, 0);
}

#[test]
fn alloc_pd_without_room_for_the_pdn_is_efault() {
    // mlx5_ib_alloc_pd copies the pdn with ib_copy_to_udata even when out_words has no room.
    let fx = ctx();
    assert_eq!(fx.cmd(cmd::ALLOC_PD, AllocPd::default().as_bytes(), &[], 4), Err(Errno::EFAULT));
    assert!(fx.dev.state().pds.is_empty());
}

#[test]
fn dealloc_pd_handle_errors_and_busy() {
    let fx = ctx();
    let (pd, pdn) = fx.alloc_pd();
    let (cq, _) = fx.create_cq(15, -1);
    // A handle of another type: EINVAL (rdma_lookup_get_uobject).
    assert_eq!(
        fx.cmd0(cmd::DEALLOC_PD, DeallocPd { pd_handle: cq }.as_bytes(), &[]),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        fx.cmd0(cmd::DEALLOC_PD, DeallocPd { pd_handle: 77 }.as_bytes(), &[]),
        Err(Errno::ENOENT)
    );
    let buf = fx.lend(4096);
    let mr = fx.reg_mr(pd, buf, 4096, access::LOCAL_WRITE).unwrap();
    assert_eq!(
        fx.cmd0(cmd::DEALLOC_PD, DeallocPd { pd_handle: pd }.as_bytes(), &[]),
        Err(Errno::EBUSY)
    );
    fx.cmd0(cmd::DEREG_MR, DeregMr { mr_handle: mr.mr_handle }.as_bytes(), &[]).unwrap();
    fx.cmd0(cmd::DEALLOC_PD, DeallocPd { pd_handle: pd }.as_bytes(), &[]).unwrap();
    assert!(!fx.dev.state().pds.contains_key(&pdn));
}

#[test]
fn reg_mr_records_the_region() {
    let fx = ctx();
    let (pd, pdn) = fx.alloc_pd();
    let buf = fx.lend(3 * 4096);
    let acc =
        access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC;
    let req = RegMr {
        start: buf + 100,
        length: 8000,
        hca_va: 0x7000_0064,
        pd_handle: pd,
        access_flags: acc,
        ..Default::default()
    };
    let r: RegMrResp = read(&fx.cmd(cmd::REG_MR, req.as_bytes(), &[], 12).unwrap());
    assert_eq!(r.lkey, r.rkey);
    let st = fx.dev.state();
    let mr = st.mr_by_key(r.lkey).unwrap();
    assert_eq!(mr.lkey >> 8, mr.index);
    assert_eq!(
        (mr.start, mr.length, mr.iova, mr.access, mr.pdn),
        (buf + 100, 8000, 0x7000_0064, acc, pdn)
    );
    assert!(st.mr_by_key(r.lkey ^ 1).is_none(), "the variant byte is part of the key");
}

#[test]
fn reg_mr_access_checks() {
    // ib_check_mr_access
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    let buf = fx.lend(4096);
    let reg = |acc| fx.reg_mr(pd, buf, 4096, acc).map(|_| ());
    assert_eq!(reg(access::REMOTE_WRITE), Err(Errno::EINVAL));
    assert_eq!(reg(access::REMOTE_ATOMIC | access::REMOTE_READ), Err(Errno::EINVAL));
    assert_eq!(reg(1 << 15), Err(Errno::EINVAL));
    assert_eq!(reg(access::LOCAL_WRITE | access::ON_DEMAND), Err(Errno::EOPNOTSUPP));
    assert_eq!(reg(1 << 8), Err(Errno::EOPNOTSUPP)); // FLUSH_GLOBAL
    assert_eq!(reg(access::REMOTE_READ), Ok(()));
    assert_eq!(reg(0), Ok(()));
    assert_eq!(reg(access::LOCAL_WRITE | access::RELAXED_ORDERING), Ok(()));
}

#[test]
fn reg_mr_range_checks() {
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    let guarded = Mem::guarded(4096);
    let buf = guarded.addr();
    // ib_umem_get: empty or wrapping ranges are EINVAL, unmapped ones EFAULT.
    assert_eq!(fx.reg_mr(pd, buf, 0, 0).err(), Some(Errno::EINVAL));
    assert_eq!(fx.reg_mr(pd, u64::MAX - 4095, 8192, 0).err(), Some(Errno::EINVAL));
    assert_eq!(fx.reg_mr(pd, UNMAPPED, 4096, 0).err(), Some(Errno::EFAULT));
    assert_eq!(fx.reg_mr(pd, buf, 8192, 0).err(), Some(Errno::EFAULT), "runs past the mapping");
    // Read-only memory can be registered without write access only.
    let ro = Mem::new(4096);
    ro.protect(libc::PROT_READ);
    assert!(fx.reg_mr(pd, ro.addr(), 4096, access::REMOTE_READ).is_ok());
    assert_eq!(fx.reg_mr(pd, ro.addr(), 4096, access::LOCAL_WRITE).err(), Some(Errno::EFAULT));
    // ib_uverbs_reg_mr: start and hca_va must share their page offset.
    let req =
        RegMr { start: buf, length: 64, hca_va: buf + 8, pd_handle: pd, ..Default::default() };
    assert_eq!(fx.cmd(cmd::REG_MR, req.as_bytes(), &[], 12).err(), Some(Errno::EINVAL));
    assert_eq!(fx.reg_mr(9, buf, 64, 0).err(), Some(Errno::ENOENT));
}

#[test]
fn dereg_mr() {
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    let buf = fx.lend(4096);
    let mr = fx.reg_mr(pd, buf, 4096, 0).unwrap();
    fx.cmd0(cmd::DEREG_MR, DeregMr { mr_handle: mr.mr_handle }.as_bytes(), &[]).unwrap();
    assert!(fx.dev.state().mrs.is_empty());
    assert_eq!(
        fx.cmd0(cmd::DEREG_MR, DeregMr { mr_handle: mr.mr_handle }.as_bytes(), &[]),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        fx.cmd0(cmd::DEREG_MR, DeregMr { mr_handle: pd }.as_bytes(), &[]),
        Err(Errno::EINVAL)
    );
}

#[test]
fn alloc_mw_records_a_free_window_and_dealloc_mw_destroys_it() {
    let fx = ctx();
    let (pd, pdn) = fx.alloc_pd();
    let alloc = |pd_handle: u32, mw_type: u8, driver: &[u8]| {
        let req = AllocMw { pd_handle, mw_type, ..Default::default() };
        fx.cmd(cmd::ALLOC_MW, req.as_bytes(), driver, 8).map(|r| read::<AllocMwResp>(&r))
    };
    let mw = alloc(pd, mw_type::TYPE_1, &[]).unwrap();
    {
        let st = fx.dev.state();
        let rec = st.mws.get(&(mw.rkey >> 8)).expect("the window is recorded");
        assert_eq!((rec.rkey, rec.pdn), (mw.rkey, pdn));
    }
    let (key, bound) = fx.dev.engine().memory_window(mw.rkey >> 8).expect("hardware knows it");
    assert_eq!((key, bound), (mw.rkey, None), "a new window is free");
    // ib_uverbs_alloc_mw: the PD lookup's own errno (as every command's), a bad type EINVAL.
    assert_eq!(alloc(77, mw_type::TYPE_1, &[]).err(), Some(Errno::ENOENT), "no such handle");
    assert_eq!(alloc(mw.mw_handle, mw_type::TYPE_1, &[]).err(), Some(Errno::EINVAL), "not a PD");
    assert_eq!(alloc(pd, 0, &[]).err(), Some(Errno::EINVAL));
    assert_eq!(alloc(pd, 3, &[]).err(), Some(Errno::EINVAL));
    // mlx5_ib_alloc_mw answers {comp_mask, response_length} where the caller made room.
    let req = AllocMw { pd_handle: pd, mw_type: mw_type::TYPE_1, ..Default::default() };
    let r = fx.cmd(cmd::ALLOC_MW, req.as_bytes(), &[], 16).unwrap();
    assert_eq!((read::<u32>(&r[8..]), read::<u32>(&r[12..])), (0, 8), "driver response");
    // Type 2 windows are not modelled (MEM_WINDOW_TYPE_2B is not reported).
    assert_eq!(alloc(pd, mw_type::TYPE_2, &[]).err(), Some(Errno::EOPNOTSUPP));
    // mlx5_ib_alloc_mw: the driver request may ask for KLMs, nothing else.
    let klms = mlx5::AllocMw { num_klms: 4, ..Default::default() };
    assert!(alloc(pd, mw_type::TYPE_1, klms.as_bytes()).is_ok());
    let masked = mlx5::AllocMw { comp_mask: 1, ..Default::default() };
    assert_eq!(alloc(pd, mw_type::TYPE_1, masked.as_bytes()).err(), Some(Errno::EOPNOTSUPP));
    let tail = [mlx5::AllocMw::default().as_bytes(), &[0, 0, 0, 0, 0, 0, 0, 1]].concat();
    assert_eq!(alloc(pd, mw_type::TYPE_1, &tail).err(), Some(Errno::EOPNOTSUPP));
    // A PD with windows cannot be freed (its usecnt counts them).
    assert_eq!(
        fx.cmd0(cmd::DEALLOC_PD, DeallocPd { pd_handle: pd }.as_bytes(), &[]),
        Err(Errno::EBUSY)
    );
    let dealloc = |mw_handle| fx.cmd0(cmd::DEALLOC_MW, DeallocMw { mw_handle }.as_bytes(), &[]);
    assert_eq!(dealloc(pd), Err(Errno::EINVAL), "a PD handle");
    dealloc(mw.mw_handle).unwrap();
    assert_eq!(dealloc(mw.mw_handle), Err(Errno::ENOENT), "already freed");
    assert!(fx.dev.engine().memory_window(mw.rkey >> 8).is_none(), "the key is gone");
    assert!(!fx.dev.state().mws.contains_key(&(mw.rkey >> 8)));
}

#[test]
fn query_device_reports_type_1_memory_windows() {
    let fx = ctx();
    let r = fx.cmd(
        cmd::QUERY_DEVICE,
        QueryDevice::default().as_bytes(),
        &[],
        size_of::<QueryDeviceResp>(),
    );
    let attrs: QueryDeviceResp = read(&r.unwrap());
    assert_ne!(u64::from(attrs.device_cap_flags) & device_cap::MEM_WINDOW, 0);
    assert_eq!(u64::from(attrs.device_cap_flags) & device_cap::MEM_WINDOW_TYPE_2B, 0);
    assert_eq!(attrs.max_mw, 1 << 24);
}

// =======================================================================================
// Completion channels and CQs

fn poll_in(fd: RawFd, timeout_ms: i32) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, timeout_ms) == 1 && p.revents & libc::POLLIN != 0 }
}

fn read_fd(fd: RawFd, max: usize) -> Vec<u8> {
    let mut buf = vec![0u8; max];
    // SAFETY: `buf` has `max` bytes of room.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), max) };
    assert!(n >= 0, "read: {}", std::io::Error::last_os_error());
    buf.truncate(n as usize);
    buf
}

#[test]
fn completion_channel_delivers_exact_8_byte_records() {
    let fx = ctx();
    let ch = fx.channel();
    let (cq, cqn) = fx.create_cq(63, ch);
    assert!(!poll_in(ch, 0));
    assert!(fx.dev.state().cqs.get_mut(&cqn).unwrap().fire_completion_event());
    assert!(fx.dev.state().cqs.get_mut(&cqn).unwrap().fire_completion_event());
    assert!(poll_in(ch, 1000));
    // A larger read still yields one record.
    assert_eq!(read_fd(ch, 64), 0xc0ffee_u64.to_ne_bytes());
    assert_eq!(read::<CompEventDesc>(&read_fd(ch, 8)).cq_handle, 0xc0ffee);
    assert!(!poll_in(ch, 0));
    assert_eq!(fx.destroy_cq(cq).unwrap().comp_events_reported, 2);
    // The user may close its end at any time: events are then dropped, not an error.
    let (_, cqn) = fx.create_cq(63, ch);
    close(ch);
    assert!(!fx.dev.state().cqs.get_mut(&cqn).unwrap().fire_completion_event());
    assert_eq!(fx.dev.state().cqs[&cqn].comp_events_reported, 0);
}

#[test]
fn destroy_cq_reports_the_events_read_and_drops_the_unread() {
    // The kernel counts an event when the user reads it; libibverbs' destroy waits until
    // the acknowledged events reach that count, so unread ones must not be counted.
    let fx = ctx();
    let ch = fx.channel();
    let (cq, cqn) = fx.create_cq(63, ch);
    for _ in 0..3 {
        assert!(fx.dev.state().cqs.get_mut(&cqn).unwrap().fire_completion_event());
    }
    assert_eq!(read::<CompEventDesc>(&read_fd(ch, 8)).cq_handle, 0xc0ffee);
    assert_eq!(fx.destroy_cq(cq).unwrap().comp_events_reported, 1);
    assert!(!poll_in(ch, 0), "the destroyed CQ's unread events left the channel");
    close(ch);
}

#[test]
fn create_cq_names_channels_by_fd() {
    let fx = ctx();
    let other = ctx();
    let foreign = other.channel();
    // Not a channel, a channel of another file, or a closed one: EBADF (lookup_get_fd_uobject).
    assert_eq!(
        fx.create_cq_with(
            CreateCq { cqe: 15, comp_channel: 0, ..Default::default() },
            fx.cq_ucmd(16).as_bytes()
        )
        .err(),
        Some(EBADF)
    );
    assert_eq!(
        fx.create_cq_with(
            CreateCq { cqe: 15, comp_channel: foreign, ..Default::default() },
            fx.cq_ucmd(16).as_bytes()
        )
        .err(),
        Some(EBADF)
    );
    let ch = fx.channel();
    close(ch);
    assert_eq!(
        fx.create_cq_with(
            CreateCq { cqe: 15, comp_channel: ch, ..Default::default() },
            fx.cq_ucmd(16).as_bytes()
        )
        .err(),
        Some(EBADF)
    );
    // Any negative value means "no channel".
    assert!(
        fx.create_cq_with(
            CreateCq { cqe: 15, comp_channel: -7, ..Default::default() },
            fx.cq_ucmd(16).as_bytes()
        )
        .is_ok()
    );
    close(foreign);
}

#[test]
fn create_cq_rounds_the_ring_and_records_it() {
    let fx = ctx();
    let ucmd = fx.cq_ucmd(512);
    let (resp, cqn) = fx
        .create_cq_with(
            CreateCq { user_handle: 42, cqe: 500, comp_channel: -1, ..Default::default() },
            ucmd.as_bytes(),
        )
        .unwrap();
    assert_eq!(resp.cqe, 511);
    assert!(cqn <= 0xff_ffff);
    let st = fx.dev.state();
    let cq = &st.cqs[&cqn];
    assert_eq!(
        (cq.ncqe, cq.cqe_size, cq.buf_addr, cq.db_addr, cq.user_handle),
        (512, 64, ucmd.buf_addr, ucmd.db_addr, 42)
    );
    assert!(cq.channel.is_none());
    drop(st);
    // Already a power of two minus one, and the smallest.
    assert_eq!(
        fx.create_cq_with(
            CreateCq { cqe: 511, comp_channel: -1, ..Default::default() },
            fx.cq_ucmd(512).as_bytes()
        )
        .unwrap()
        .0
        .cqe,
        511
    );
    assert_eq!(
        fx.create_cq_with(
            CreateCq { cqe: 0, comp_channel: -1, ..Default::default() },
            fx.cq_ucmd(1).as_bytes()
        )
        .unwrap()
        .0
        .cqe,
        0
    );
    // 128-byte CQEs.
    let big = mlx5::CreateCq { cqe_size: 128, buf_addr: fx.lend(16 * 128), ..fx.cq_ucmd(16) };
    let (_, cqn) = fx
        .create_cq_with(
            CreateCq { cqe: 15, comp_channel: -1, ..Default::default() },
            big.as_bytes(),
        )
        .unwrap();
    assert_eq!(fx.dev.state().cqs[&cqn].cqe_size, 128);
}

#[test]
fn create_cq_size_and_vector_checks() {
    // mlx5_ib_create_cq: at most 2^22 entries after rounding; create_cq: comp_vector range.
    let fx = ctx();
    let small = fx.cq_ucmd(16);
    let try_cqe = |cqe| {
        fx.create_cq_with(
            CreateCq { cqe, comp_channel: -1, ..Default::default() },
            small.as_bytes(),
        )
        .err()
    };
    assert_eq!(try_cqe(4_194_304), Some(Errno::EINVAL));
    assert_eq!(try_cqe(0x8000_0000), Some(Errno::EINVAL));
    assert_eq!(try_cqe(u32::MAX), Some(Errno::EINVAL));
    let vec1 = CreateCq { cqe: 15, comp_vector: 1, comp_channel: -1, ..Default::default() };
    assert_eq!(fx.create_cq_with(vec1, small.as_bytes()).err(), Some(Errno::EINVAL));
}

#[test]
fn create_cq_driver_data_checks() {
    // create_cq_user
    let fx = ctx();
    let req = CreateCq { cqe: 15, comp_channel: -1, ..Default::default() };
    let good = fx.cq_ucmd(16);
    let with = |f: &dyn Fn(&mut mlx5::CreateCq)| {
        let mut u = good;
        f(&mut u);
        fx.create_cq_with(req, u.as_bytes()).err()
    };
    assert_eq!(
        fx.create_cq_with(req, &good.as_bytes()[..20]).err(),
        Some(Errno::EINVAL),
        "shorter than `flags`"
    );
    assert_eq!(fx.create_cq_with(req, &[]).err(), Some(Errno::EINVAL));
    assert!(fx.create_cq_with(req, &good.as_bytes()[..24]).is_ok(), "up to `flags` is enough");
    assert_eq!(with(&|u| u.cqe_size = 32), Some(Errno::EINVAL));
    assert_eq!(with(&|u| u.reserved1 = 1), Some(Errno::EINVAL));
    assert_eq!(with(&|u| u.flags = 1 << 5), Some(Errno::EINVAL));
    assert_eq!(with(&|u| u.buf_addr = UNMAPPED), Some(Errno::EFAULT));
    assert_eq!(with(&|u| u.buf_addr += 8), Some(Errno::EINVAL), "64-byte aligned page offset");
    assert_eq!(with(&|u| u.db_addr = UNMAPPED), Some(Errno::EFAULT));
    assert_eq!(with(&|u| u.cqe_comp_en = 1), Some(Errno::EOPNOTSUPP));
    assert_eq!(with(&|u| u.flags = mlx5::create_cq_flags::CQE_128B_PAD), Some(Errno::EOPNOTSUPP));
    assert_eq!(with(&|u| u.flags = mlx5::create_cq_flags::UAR_PAGE_INDEX), Some(Errno::EINVAL));
    let ro = Mem::new(4096);
    ro.protect(libc::PROT_READ);
    assert_eq!(with(&|u| u.buf_addr = ro.addr()), Some(Errno::EFAULT), "the ring must be writable");
    // mlx5 copies the cqn: no room for it is EFAULT, and no CQ is left behind.
    assert_eq!(
        fx.cmd(cmd::CREATE_CQ, req.as_bytes(), good.as_bytes(), 8).err(),
        Some(Errno::EFAULT)
    );
    assert!(fx.dev.state().cqs.len() == 1);
}

#[test]
fn ex_create_cq() {
    let fx = ctx();
    let core = ExCreateCq { user_handle: 9, cqe: 100, comp_channel: -1, ..Default::default() };
    let (r, m) =
        fx.ex(ex_cmd::CREATE_CQ, core.as_bytes(), fx.cq_ucmd(128).as_bytes(), 16, 8).unwrap();
    let resp: ExCreateCqResp = read(&r);
    assert_eq!((resp.base.cqe, resp.response_length), (127, 16));
    assert!(fx.dev.state().cqs.contains_key(&read::<mlx5::CreateCqResp>(&m).cqn));
    let bad = ExCreateCq { comp_mask: 1, ..core };
    assert_eq!(
        fx.ex(ex_cmd::CREATE_CQ, bad.as_bytes(), fx.cq_ucmd(128).as_bytes(), 16, 8).err(),
        Some(Errno::EINVAL)
    );
    let bad = ExCreateCq { flags: 1 << 4, ..core };
    assert_eq!(
        fx.ex(ex_cmd::CREATE_CQ, bad.as_bytes(), fx.cq_ucmd(128).as_bytes(), 16, 8).err(),
        Some(Errno::EOPNOTSUPP)
    );
    let ts = ExCreateCq { flags: cq_flags::TIMESTAMP_COMPLETION, ..core };
    assert!(fx.ex(ex_cmd::CREATE_CQ, ts.as_bytes(), fx.cq_ucmd(128).as_bytes(), 16, 8).is_ok());
}

#[test]
fn destroy_cq_reports_events_and_refuses_while_a_qp_uses_it() {
    let fx = ctx();
    let h = fx.qp();
    assert_eq!(fx.destroy_cq(h.cq), Err(Errno::EBUSY));
    assert_eq!(fx.destroy_cq(h.pd), Err(Errno::EINVAL));
    let cqn = fx.dev.state().qps[&h.qpn].send_cqn;
    // Two CQ errors, one read by the user: the kernel counts what was read, and drops the
    // unread one with the CQ (libibverbs waits for the acknowledged count to reach it).
    let async_fd = fx.uv.async_fd().unwrap();
    for _ in 0..2 {
        assert!(fx.dev.state().cqs.get_mut(&cqn).unwrap().post_async_event(event::CQ_ERR));
    }
    assert!(poll_in(async_fd, 1000));
    let d: AsyncEventDesc = read(&read_fd(async_fd, 64));
    assert_eq!(d.event_type, event::CQ_ERR);
    fx.destroy_qp(h.qp).unwrap();
    let r = fx.destroy_cq(h.cq).unwrap();
    assert_eq!((r.comp_events_reported, r.async_events_reported), (0, 1));
    assert!(!poll_in(async_fd, 50), "the unread event went with the CQ");
    assert_eq!(fx.destroy_cq(h.cq), Err(Errno::ENOENT));
}

#[test]
fn req_notify_cq_is_not_an_mlx5_command() {
    // mlx5 arms CQs in user space; REQ_NOTIFY_CQ is not in its uverbs_cmd_mask.
    let fx = ctx();
    let (cq, _) = fx.create_cq(15, -1);
    let req = ReqNotifyCq { cq_handle: cq, solicited_only: 0 };
    assert_eq!(fx.cmd0(cmd::REQ_NOTIFY_CQ, req.as_bytes(), &[]), Err(Errno::EOPNOTSUPP));
}

#[test]
fn resize_cq() {
    let fx = ctx();
    let (cq, cqn) = fx.create_cq(15, -1);
    let resize = |cqe, ucmd: mlx5::ResizeCq| {
        fx.cmd(
            cmd::RESIZE_CQ,
            ResizeCq { cq_handle: cq, cqe, ..Default::default() }.as_bytes(),
            ucmd.as_bytes(),
            8,
        )
        .map(|r| read::<ResizeCqResp>(&r).cqe)
    };
    let ring = fx.lend(256 * 64);
    assert_eq!(
        resize(200, mlx5::ResizeCq { buf_addr: ring, cqe_size: 64, ..Default::default() }),
        Ok(255)
    );
    let (ncqe, buf) = {
        let st = fx.dev.state();
        (st.cqs[&cqn].ncqe, st.cqs[&cqn].buf_addr)
    };
    assert_eq!((ncqe, buf), (256, ring));
    // Same size: nothing to do (the driver data is not even read).
    assert_eq!(resize(255, mlx5::ResizeCq::default()), Ok(255));
    assert_eq!(resize(0, mlx5::ResizeCq::default()), Err(Errno::EINVAL));
    assert_eq!(resize(4_194_304, mlx5::ResizeCq::default()), Err(Errno::EINVAL));
    assert_eq!(
        resize(1000, mlx5::ResizeCq { buf_addr: UNMAPPED, cqe_size: 64, ..Default::default() }),
        Err(Errno::EFAULT)
    );
    assert_eq!(
        resize(1000, mlx5::ResizeCq { buf_addr: ring, cqe_size: 0, ..Default::default() }),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        resize(
            1000,
            mlx5::ResizeCq { buf_addr: ring, cqe_size: 64, reserved0: 1, ..Default::default() }
        ),
        Err(Errno::EINVAL)
    );
    let r = fx.cmd(
        cmd::RESIZE_CQ,
        ResizeCq { cq_handle: 99, cqe: 31, ..Default::default() }.as_bytes(),
        &[0; 16],
        8,
    );
    assert_eq!(r.err(), Some(Errno::ENOENT));
}

// =======================================================================================
// QPs

#[test]
fn create_qp_answers_and_records_like_mlx5() {
    let fx = ctx();
    let (pd, pdn) = fx.alloc_pd();
    let (cq, cqn) = fx.create_cq(511, -1);
    let ucmd = fx.qp_ucmd(4, 512, 4);
    let (resp, m) = fx.create_qp_with(Fx::qp_req(pd, cq), ucmd.as_bytes()).unwrap();
    assert_eq!(
        (resp.max_send_wr, resp.max_recv_wr, resp.max_send_sge, resp.max_recv_sge),
        (1, 500, 1, 1)
    );
    assert_eq!(resp.max_inline_data, 60);
    assert!(resp.qpn <= 0xff_ffff && resp.qpn > 1);
    // alloc_bfreg: the first QP gets the first low-latency bfreg (kernel 12 = UAR page 6).
    assert_eq!(m.bfreg_index, 24);
    let st = fx.dev.state();
    let qp = &st.qps[&resp.qpn];
    assert_eq!(qp.state, QpState::Reset);
    assert_eq!((qp.pdn, qp.send_cqn, qp.recv_cqn, qp.srqn), (pdn, cqn, cqn, None));
    assert_eq!(
        (qp.buf_addr, qp.db_addr, qp.uidx, qp.user_handle),
        (ucmd.buf_addr, ucmd.db_addr, Some(7), 0x5150)
    );
    assert_eq!(
        (qp.rq_wqe_cnt, qp.rq_wqe_shift, qp.sq_wqe_cnt, qp.sq_offset),
        (512, 4, 4, 512 * 16)
    );
    assert_eq!((qp.bfreg.uar_page, qp.bfreg.offset), (6, 0x800));
    assert!(qp.scatter_to_cqe && !qp.sq_sig_all && !qp.signature);
    assert_eq!(qp.attrs, Default::default());
}

#[test]
fn bfregs_follow_alloc_bfreg() {
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    let (cq, _) = fx.create_cq(63, -1);
    let mut got = Vec::new();
    for _ in 0..6 {
        let (_, m) =
            fx.create_qp_with(Fx::qp_req(pd, cq), fx.qp_ucmd(4, 512, 4).as_bytes()).unwrap();
        got.push(m.bfreg_index);
    }
    // High class 12..15 (→ 24, 25, 28, 29), then the least used medium ones 1, 2 (→ 1, 4).
    assert_eq!(got, [24, 25, 28, 29, 1, 4]);
    // A version-0 context shares bfreg 0.
    let v0 = fresh();
    v0.get_context(&uctx_req().as_bytes()[..8]).unwrap();
    let (pd, _) = v0.alloc_pd();
    let (cq, _) = v0.create_cq(63, -1);
    let ucmd = mlx5::CreateQp { uidx: 0xff_ffff, ..v0.qp_ucmd(4, 512, 4) };
    assert_eq!(v0.create_qp_with(Fx::qp_req(pd, cq), ucmd.as_bytes()).unwrap().1.bfreg_index, 0);
}

#[test]
fn create_qp_size_checks() {
    // create_user_qp, set_rq_size, set_user_buf_size
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    let (cq, _) = fx.create_cq(63, -1);
    let req = Fx::qp_req(pd, cq);
    let try_q = |req: CreateQp, u: mlx5::CreateQp| fx.create_qp_with(req, u.as_bytes()).err();
    assert_eq!(try_q(req, fx.qp_ucmd(3, 512, 4)), Some(Errno::EINVAL), "SQ not a power of two");
    assert_eq!(
        try_q(req, fx.qp_ucmd(65536, 512, 4)),
        Some(Errno::EINVAL),
        "SQ over max_send_wqebb"
    );
    assert_eq!(
        try_q(CreateQp { max_recv_wr: 32769, ..req }, fx.qp_ucmd(4, 512, 4)),
        Some(Errno::EINVAL)
    );
    assert_eq!(try_q(req, fx.qp_ucmd(4, 512, 33)), Some(Errno::EINVAL));
    assert_eq!(
        try_q(req, fx.qp_ucmd(4, 64, 10)),
        Some(Errno::EINVAL),
        "stride over max_rq_desc_sz"
    );
    assert_eq!(
        try_q(req, fx.qp_ucmd(4, 65536, 4)),
        Some(Errno::EINVAL),
        "RQ over the firmware maximum"
    );
    // No RQ (max_recv_wr 0): the driver data must not describe one.
    let norq = CreateQp { max_recv_wr: 0, ..req };
    assert_eq!(try_q(norq, fx.qp_ucmd(4, 1, 4)), Some(Errno::EINVAL));
    assert_eq!(try_q(norq, fx.qp_ucmd(4, 0, 4)), Some(Errno::EINVAL));
    let (resp, _) = fx.create_qp_with(norq, fx.qp_ucmd(4, 0, 0).as_bytes()).unwrap();
    assert_eq!((resp.max_recv_wr, resp.max_recv_sge), (0, 0));
    // With signatures the stride needs room for one: 16 bytes leave no SGE... but is legal;
    // below 16 bytes it is not.
    let sig =
        |shift| mlx5::CreateQp { flags: mlx5::qp_flag::SIGNATURE, ..fx.qp_ucmd(4, 512, shift) };
    assert_eq!(try_q(req, sig(3)), Some(Errno::EINVAL));
    assert!(fx.create_qp_with(req, sig(5).as_bytes()).is_ok());
    // A non-power-of-two RQ: the firmware takes floor(log2).
    let (resp, _) = fx.create_qp_with(req, fx.qp_ucmd(4, 500, 4).as_bytes()).unwrap();
    assert_eq!(fx.dev.state().qps[&resp.qpn].rq_wqe_cnt, 256);
}

#[test]
fn create_qp_driver_data_checks() {
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    let (cq, _) = fx.create_cq(63, -1);
    let req = Fx::qp_req(pd, cq);
    let good = fx.qp_ucmd(4, 512, 4);
    let with = |f: &dyn Fn(&mut mlx5::CreateQp)| {
        let mut u = good;
        f(&mut u);
        fx.create_qp_with(req, u.as_bytes()).err()
    };
    // process_udata_size: shorter than `ece_options` is no data at all.
    assert_eq!(fx.create_qp_with(req, &good.as_bytes()[..40]).err(), Some(Errno::EINVAL));
    assert!(fx.create_qp_with(req, &good.as_bytes()[..48]).is_ok());
    // check_ucmd_data: from `reserved` on, all zero.
    assert_eq!(with(&|u| u.reserved = 1), Some(Errno::EINVAL));
    let mut long = good.as_bytes().to_vec();
    long.extend([0u8; 8]);
    assert!(fx.create_qp_with(req, &long).is_ok());
    long[60] = 1;
    assert_eq!(fx.create_qp_with(req, &long).err(), Some(Errno::EINVAL));
    // process_vendor_flags
    assert_eq!(with(&|u| u.flags |= mlx5::qp_flag::TUNNEL_OFFLOADS), Some(Errno::EINVAL));
    assert_eq!(with(&|u| u.flags |= 1 << 20), Some(Errno::EINVAL));
    assert_eq!(with(&|u| u.flags |= mlx5::qp_flag::TYPE_DCT), Some(Errno::EOPNOTSUPP));
    // No dynamic UARs exist for these to name.
    assert_eq!(with(&|u| u.flags |= mlx5::qp_flag::BFREG_INDEX), Some(Errno::EINVAL));
    assert_eq!(with(&|u| u.flags |= mlx5::qp_flag::UAR_PAGE_INDEX), Some(Errno::EINVAL));
    // get_qp_user_index with CQE version 1.
    assert_eq!(with(&|u| u.uidx = 0xff_ffff), Some(Errno::EINVAL));
    assert_eq!(with(&|u| u.uidx = 0x100_0000), Some(Errno::EINVAL));
    // Buffers: pinned (EFAULT), 64-byte page offset (EINVAL), doorbell pinned (EFAULT).
    assert_eq!(with(&|u| u.buf_addr = UNMAPPED), Some(Errno::EFAULT));
    assert_eq!(with(&|u| u.buf_addr += 32), Some(Errno::EINVAL));
    assert_eq!(with(&|u| u.buf_addr = 0), Some(Errno::EINVAL));
    assert_eq!(with(&|u| u.db_addr = UNMAPPED), Some(Errno::EFAULT));
    // Without a QP left behind, and the bfregs given back: the next QP is the first one.
    assert_eq!(fx.dev.state().qps.len(), 2);
}

#[test]
fn create_qp_with_cqe_version_0_needs_the_default_uidx() {
    let fx = fresh();
    fx.get_context(&uctx_req().as_bytes()[..16]).unwrap();
    let (pd, _) = fx.alloc_pd();
    let (cq, _) = fx.create_cq(63, -1);
    let req = Fx::qp_req(pd, cq);
    assert_eq!(fx.create_qp_with(req, fx.qp_ucmd(4, 512, 4).as_bytes()).err(), Some(Errno::EINVAL));
    let ucmd = mlx5::CreateQp { uidx: 0xff_ffff, ..fx.qp_ucmd(4, 512, 4) };
    let (resp, _) = fx.create_qp_with(req, ucmd.as_bytes()).unwrap();
    assert_eq!(fx.dev.state().qps[&resp.qpn].uidx, None);
}

#[test]
fn create_qp_types_and_handles() {
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    let (cq, _) = fx.create_cq(63, -1);
    let req = Fx::qp_req(pd, cq);
    let u = fx.qp_ucmd(4, 512, 4);
    let try_q = |r: CreateQp| fx.create_qp_with(r, u.as_bytes()).err();
    for t in [qp_type::UC, qp_type::UD, qp_type::XRC_INI] {
        assert_eq!(try_q(CreateQp { qp_type: t, ..req }), Some(Errno::EOPNOTSUPP), "type {t}");
    }
    assert_eq!(try_q(CreateQp { qp_type: qp_type::XRC_TGT, ..req }), Some(Errno::EINVAL));
    assert_eq!(try_q(CreateQp { qp_type: 0, ..req }), Some(Errno::EINVAL));
    assert_eq!(try_q(CreateQp { qp_type: 7, ..req }), Some(Errno::EINVAL));
    assert_eq!(try_q(CreateQp { pd_handle: 50, ..req }), Some(Errno::ENOENT));
    assert_eq!(try_q(CreateQp { pd_handle: cq, ..req }), Some(Errno::EINVAL));
    assert_eq!(
        try_q(CreateQp { send_cq_handle: pd, recv_cq_handle: pd, ..req }),
        Some(Errno::EINVAL)
    );
    assert_eq!(try_q(CreateQp { recv_cq_handle: 50, ..req }), Some(Errno::ENOENT));
    assert_eq!(try_q(CreateQp { is_srq: 1, srq_handle: 50, ..req }), Some(Errno::ENOENT));
    // Separate send and receive CQs.
    let (cq2, cqn2) = fx.create_cq(63, -1);
    let (resp, _) =
        fx.create_qp_with(CreateQp { recv_cq_handle: cq2, ..req }, u.as_bytes()).unwrap();
    assert_eq!(fx.dev.state().qps[&resp.qpn].recv_cqn, cqn2);
    assert_eq!(fx.destroy_cq(cq2), Err(Errno::EBUSY));
}

#[test]
fn create_qp_with_a_bad_response_leaves_nothing() {
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    let (cq, _) = fx.create_cq(63, -1);
    let mut req = Fx::qp_req(pd, cq);
    req.response = UNMAPPED;
    let buf = legacy_buf(cmd::CREATE_QP, req.as_bytes(), fx.qp_ucmd(4, 512, 4).as_bytes(), 72);
    assert_eq!(fx.uv.write(&buf), Err(Errno::EFAULT));
    assert!(fx.dev.state().qps.is_empty());
    // The bfreg went back too: the next QP gets the first low-latency one again.
    let (_, m) = fx.create_qp_with(Fx::qp_req(pd, cq), fx.qp_ucmd(4, 512, 4).as_bytes()).unwrap();
    assert_eq!(m.bfreg_index, 24);
    // Core response only is fine: mlx5 copies min(outlen, 40) = 0 bytes.
    assert!(
        fx.cmd(cmd::CREATE_QP, Fx::qp_req(pd, cq).as_bytes(), fx.qp_ucmd(4, 512, 4).as_bytes(), 32)
            .is_ok()
    );
}

/// The core of an EX_CREATE_QP for an RC QP on PD `pd` and CQ `cq` (1 send WR, 500
/// receive WRs, one SGE each: the driver data of `qp_ucmd(4, 512, 4)` fits it).
fn ex_create_rc_qp(pd: u32, cq: u32) -> ExCreateQp {
    ExCreateQp {
        pd_handle: pd,
        send_cq_handle: cq,
        recv_cq_handle: cq,
        max_send_wr: 1,
        max_recv_wr: 500,
        max_send_sge: 1,
        max_recv_sge: 1,
        qp_type: qp_type::RC,
        ..Default::default()
    }
}

#[test]
fn ex_create_qp() {
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    let (cq, _) = fx.create_cq(63, -1);
    let core = ex_create_rc_qp(pd, cq);
    let u = fx.qp_ucmd(4, 512, 4);
    let (r, m) = fx.ex(ex_cmd::CREATE_QP, core.as_bytes(), u.as_bytes(), 40, 40).unwrap();
    let resp: ExCreateQpResp = read(&r);
    assert_eq!(resp.response_length, 40);
    assert_eq!(read::<mlx5::CreateQpResp>(&m).bfreg_index, 24);
    assert!(fx.dev.state().qps.contains_key(&resp.base.qpn));
    let ind = ExCreateQp { comp_mask: create_qp_mask::IND_TABLE, rwq_ind_tbl_handle: 40, ..core };
    assert_eq!(
        fx.ex(ex_cmd::CREATE_QP, ind.as_bytes(), u.as_bytes(), 40, 40).err(),
        Some(Errno::ENOENT)
    );
    let bad = ExCreateQp { comp_mask: 2, ..core };
    assert_eq!(
        fx.ex(ex_cmd::CREATE_QP, bad.as_bytes(), u.as_bytes(), 40, 40).err(),
        Some(Errno::EINVAL)
    );
    let flags = ExCreateQp { create_flags: qp_create_flags::SQ_SIG_ALL, ..core };
    assert_eq!(
        fx.ex(ex_cmd::CREATE_QP, flags.as_bytes(), u.as_bytes(), 40, 40).err(),
        Some(Errno::EINVAL)
    );
    let lb = ExCreateQp { create_flags: qp_create_flags::BLOCK_MULTICAST_LOOPBACK, ..core };
    assert!(fx.ex(ex_cmd::CREATE_QP, lb.as_bytes(), u.as_bytes(), 40, 40).is_ok());
}

#[test]
fn query_qp_in_reset() {
    // mlx5_ib_query_qp: a user QP's send capacities and inline size are unknown to the
    // kernel (0); the RQ is reported as created.
    let fx = ctx();
    let h = fx.qp();
    let q = fx.query(h.qp);
    assert_eq!((q.qp_state, q.cur_qp_state), (0, 0));
    assert_eq!((q.max_send_wr, q.max_send_sge, q.max_inline_data), (0, 0, 0));
    assert_eq!((q.max_recv_wr, q.max_recv_sge), (512, 1));
    assert_eq!((q.max_rd_atomic, q.max_dest_rd_atomic), (1, 1));
    assert_eq!(q.dest.is_global, 0);
    let req = QueryQp { qp_handle: h.cq, ..Default::default() };
    assert_eq!(fx.cmd(cmd::QUERY_QP, req.as_bytes(), &[], 128).err(), Some(Errno::EINVAL));
    let req = QueryQp { qp_handle: 99, ..Default::default() };
    assert_eq!(fx.cmd(cmd::QUERY_QP, req.as_bytes(), &[], 128).err(), Some(Errno::ENOENT));
}

#[test]
fn pingpong_connects_and_every_attribute_is_recorded() {
    let fx = ctx();
    let h = fx.qp();
    let mut init = to_init(h.qp);
    init.qp_access_flags =
        access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC;
    fx.modify(&init).unwrap();
    // No responder resources yet: only remote writes are enabled (set_qpc_atomic_flags).
    assert_eq!(fx.query(h.qp).qp_access_flags, access::REMOTE_WRITE);
    let mut rtr = to_rtr(h.qp);
    rtr.dest_qp_num = 0x1ab_cdef; // 24-bit field
    rtr.rq_psn = 0x1ff_ffff;
    rtr.max_dest_rd_atomic = 3;
    rtr.dest.flow_label = 0x12345;
    rtr.dest.traffic_class = 0x20;
    rtr.dest.sl = 3;
    fx.modify(&rtr).unwrap();
    let mut rts = to_rts(h.qp);
    rts.timeout = 0x2e; // 5-bit field
    rts.retry_cnt = 9; // 3-bit fields
    rts.sq_psn = 0x77;
    rts.max_rd_atomic = 5;
    fx.modify(&rts).unwrap();
    assert_eq!(fx.state_of(h.qpn), QpState::Rts);

    let st = fx.dev.state();
    let a = &st.qps[&h.qpn].attrs;
    assert_eq!((a.port_num, a.pkey_index, a.path_mtu), (1, 0, mtu::MTU_1024));
    assert_eq!(a.remote_access, access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC);
    assert_eq!((a.dest_qp_num, a.rq_psn, a.sq_psn), (0xab_cdef, 0xff_ffff, 0x77));
    assert_eq!((a.timeout, a.retry_cnt, a.rnr_retry, a.min_rnr_timer), (0x0e, 1, 7, 12));
    // The firmware keeps log2 depths: 3 → 4, 5 → 8.
    assert_eq!((a.max_dest_rd_atomic, a.responder_depth, a.max_rd_atomic), (4, 3, 8));
    let av = a.av.as_ref().unwrap();
    assert_eq!((av.dgid, av.sgid_index, av.port_num), (REMOTE_GID, 0, 1));
    assert_eq!((av.flow_label, av.traffic_class, av.sl), (0x12345, 0x20, 3));
    // ib_resolve_eth_dmac takes the route's hop limit.
    assert_eq!(av.hop_limit, 64);
    drop(st);

    let q = fx.query(h.qp);
    assert_eq!(
        (q.qp_state, q.path_mtu, q.dest_qp_num, q.sq_psn, q.rq_psn),
        (3, 3, 0xab_cdef, 0x77, 0xff_ffff)
    );
    assert_eq!(
        (q.dest.is_global, q.dest.port_num, q.dest.dgid, q.dest.hop_limit),
        (1, 1, REMOTE_GID, 64)
    );
    assert_eq!((q.max_rd_atomic, q.max_dest_rd_atomic, q.timeout, q.retry_cnt), (8, 4, 0x0e, 1));
    assert_eq!((q.port_num, q.min_rnr_timer, q.rnr_retry), (1, 12, 7));
    assert_eq!(
        q.qp_access_flags,
        access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC
    );
    // RoCE paths read back without SL or traffic class (they are eth_prio/DSCP in the QPC).
    assert_eq!((q.dest.sl, q.dest.traffic_class), (0, 0));
}

/// Every RC transition of `qp_state_table` from every reachable state: the required mask
/// alone succeeds (if mlx5 has a firmware command for it), each required bit missing is
/// EINVAL, each bit the transition does not allow is EINVAL, each optional bit is accepted.
#[test]
fn every_rc_transition_checks_its_attribute_mask() {
    let fx = ctx();
    let h = fx.qp();
    let reachable = [QpState::Reset, QpState::Init, QpState::Rtr, QpState::Rts, QpState::Err];
    for from in reachable {
        for to in QpState::ALL {
            fx.drive(h.qp, from);
            let Some(t) = transition(from, to) else {
                // Not in the table: EINVAL whatever the mask.
                assert_eq!(
                    fx.modify(&full(h.qp, from, to, qa::STATE)),
                    Err(Errno::EINVAL),
                    "{from:?}→{to:?}"
                );
                continue;
            };
            for bit in (0..=20).map(|b| 1u32 << b) {
                if bit & t.required != 0 {
                    let m = full(h.qp, from, to, qa::STATE | (t.required & !bit));
                    assert_eq!(
                        fx.modify(&m),
                        Err(Errno::EINVAL),
                        "{from:?}→{to:?} without {bit:#x}"
                    );
                } else if bit & (t.optional | qa::STATE) == 0 {
                    let m = full(h.qp, from, to, qa::STATE | t.required | bit);
                    assert_eq!(fx.modify(&m), Err(Errno::EINVAL), "{from:?}→{to:?} with {bit:#x}");
                }
            }
            assert_eq!(fx.state_of(h.qpn), from, "failed modifies change nothing");
            let ok = mlx5_has_command(from, to);
            let result = fx.modify(&full(h.qp, from, to, qa::STATE | t.required));
            if !ok {
                assert_eq!(result, Err(Errno::EINVAL), "{from:?}→{to:?}: no mlx5 command");
                continue;
            }
            assert_eq!(result, Ok(()), "{from:?}→{to:?}");
            assert_eq!(fx.state_of(h.qpn), to);
            // Optional attributes (alternate paths are refused on RoCE).
            for bit in (0..=20).map(|b| 1u32 << b).filter(|b| t.optional & b != 0) {
                fx.drive(h.qp, from);
                let expect = if bit == qa::ALT_PATH { Err(Errno::EINVAL) } else { Ok(()) };
                let m = full(h.qp, from, to, qa::STATE | t.required | bit);
                assert_eq!(fx.modify(&m), expect, "{from:?}→{to:?} with optional {bit:#x}");
            }
        }
    }
    // The table itself: RESET and ERR are reachable from every state but RESET→ERR.
    for from in QpState::ALL {
        assert!(transition(from, QpState::Reset).is_some());
        assert_eq!(transition(from, QpState::Err).is_some(), from != QpState::Reset);
    }
    assert_eq!(RC_TRANSITIONS.len(), 22);
}

#[test]
fn reset_and_err_from_every_reachable_state() {
    let fx = ctx();
    let h = fx.qp();
    for from in [QpState::Init, QpState::Rtr, QpState::Rts, QpState::Err] {
        for to in [QpState::Reset, QpState::Err] {
            fx.drive(h.qp, from);
            fx.modify(&ModifyQp {
                qp_handle: h.qp,
                attr_mask: qa::STATE,
                qp_state: to as u8,
                ..Default::default()
            })
            .unwrap();
            assert_eq!(fx.state_of(h.qpn), to, "{from:?}→{to:?}");
        }
    }
    // RESET→ERR is not in the kernel's table.
    fx.drive(h.qp, QpState::Reset);
    let m = ModifyQp { qp_handle: h.qp, attr_mask: qa::STATE, qp_state: 6, ..Default::default() };
    assert_eq!(fx.modify(&m), Err(Errno::EINVAL));
}

#[test]
fn reset_returns_the_context_to_its_initial_values() {
    let fx = ctx();
    let h = fx.qp();
    fx.drive(h.qp, QpState::Rts);
    fx.drive(h.qp, QpState::Reset);
    let a = fx.dev.state().qps[&h.qpn].attrs.clone();
    assert_eq!((a.port_num, a.av, a.sq_psn, a.path_mtu), (0, None, 0, 0));
    assert_eq!(fx.query(h.qp).qp_state, 0);
    // And the QP can be connected again.
    fx.drive(h.qp, QpState::Rts);
}

#[test]
fn modify_qp_attribute_checks() {
    let fx = ctx();
    let h = fx.qp();
    let init = |f: &dyn Fn(&mut ModifyQp)| {
        fx.drive(h.qp, QpState::Reset);
        let mut m = to_init(h.qp);
        f(&mut m);
        fx.modify(&m)
    };
    assert_eq!(init(&|m| m.port_num = 2), Err(Errno::EINVAL));
    assert_eq!(init(&|m| m.port_num = 0), Err(Errno::EINVAL));
    assert_eq!(init(&|m| m.pkey_index = 128), Err(Errno::EINVAL));
    assert_eq!(init(&|m| m.pkey_index = 127), Ok(()));
    assert_eq!(init(&|m| m.qp_state = 7), Err(Errno::EINVAL));
    // Privileged Q_Key (IB_QP_SET_QKEY): EPERM before the mask is even looked at.
    assert_eq!(
        init(&|m| {
            m.attr_mask |= qa::QKEY;
            m.qkey = 0x8000_0000
        }),
        Err(Errno::EPERM)
    );
    assert_eq!(init(&|m| m.attr_mask |= 1 << 21), Err(Errno::EOPNOTSUPP));

    let rtr = |f: &dyn Fn(&mut ModifyQp)| {
        fx.drive(h.qp, QpState::Init);
        let mut m = to_rtr(h.qp);
        f(&mut m);
        fx.modify(&m)
    };
    assert_eq!(rtr(&|m| m.path_mtu = 0), Err(Errno::EINVAL));
    assert_eq!(rtr(&|m| m.path_mtu = 6), Err(Errno::EINVAL));
    assert_eq!(rtr(&|m| m.path_mtu = mtu::MTU_4096), Ok(()));
    assert_eq!(rtr(&|m| m.max_dest_rd_atomic = 17), Err(Errno::EINVAL));
    assert_eq!(rtr(&|m| m.max_dest_rd_atomic = 16), Ok(()));
    assert_eq!(rtr(&|m| m.dest.is_global = 0), Err(Errno::EINVAL), "RoCE needs a GRH");
    assert_eq!(rtr(&|m| m.dest.sgid_index = 1), Err(ENODATA), "empty GID table entry");
    assert_eq!(rtr(&|m| m.dest.port_num = 2), Err(Errno::EINVAL));
    assert_eq!(rtr(&|m| m.dest.port_num = 0), Err(Errno::EINVAL));
    assert_eq!(rtr(&|m| m.dest.static_rate = 1), Err(Errno::EINVAL));
    assert_eq!(rtr(&|m| m.dest.static_rate = 24), Err(Errno::EINVAL));
    assert_eq!(rtr(&|m| m.dest.static_rate = uverbs::rate::RATE_100_GBPS), Ok(()));
    assert_eq!(
        rtr(&|m| {
            m.attr_mask |= qa::ALT_PATH;
            m.alt_port_num = 2
        }),
        Err(Errno::EINVAL)
    );

    let rts = |f: &dyn Fn(&mut ModifyQp)| {
        fx.drive(h.qp, QpState::Rtr);
        let mut m = to_rts(h.qp);
        f(&mut m);
        fx.modify(&m)
    };
    assert_eq!(rts(&|m| m.max_rd_atomic = 17), Err(Errno::EINVAL));
    assert_eq!(rts(&|m| m.max_rd_atomic = 0), Ok(()));
    assert_eq!(fx.query(h.qp).max_rd_atomic, 1, "0 leaves the depth as it was");
    // A multicast destination keeps its hop limit, raised to 64 if below 2.
    assert_eq!(
        rtr(&|m| {
            m.dest.dgid[0] = 0xff;
            m.dest.hop_limit = 9
        }),
        Ok(())
    );
    assert_eq!(fx.dev.state().qps[&h.qpn].attrs.av.as_ref().unwrap().hop_limit, 9);
}

#[test]
fn modify_qp_current_state_must_be_true() {
    // The firmware runs RTS2RTS only on a QP in RTS.
    let fx = ctx();
    let h = fx.qp();
    fx.drive(h.qp, QpState::Rtr);
    let lie = full(h.qp, QpState::Rts, QpState::Rts, qa::STATE | qa::CUR_STATE);
    assert_eq!(fx.modify(&lie), Err(Errno::EINVAL));
    fx.drive(h.qp, QpState::Rts);
    let truth =
        full(h.qp, QpState::Rts, QpState::Rts, qa::STATE | qa::CUR_STATE | qa::MIN_RNR_TIMER);
    assert_eq!(fx.modify(&truth), Ok(()));
    // CUR_STATE is only meaningful from RTR, RTS, SQD or SQE (ib_modify_qp_is_ok).
    fx.drive(h.qp, QpState::Init);
    let early = full(h.qp, QpState::Init, QpState::Init, qa::STATE | qa::CUR_STATE);
    assert_eq!(fx.modify(&early), Err(Errno::EINVAL));
    // Out-of-range current state.
    let m = ModifyQp {
        qp_handle: h.qp,
        attr_mask: qa::CUR_STATE,
        cur_qp_state: 9,
        ..Default::default()
    };
    assert_eq!(fx.modify(&m), Err(Errno::EINVAL));
}

#[test]
fn modify_qp_without_state_stays_put() {
    let fx = ctx();
    let h = fx.qp();
    fx.drive(h.qp, QpState::Init);
    let m = ModifyQp {
        qp_handle: h.qp,
        attr_mask: qa::ACCESS_FLAGS,
        qp_access_flags: access::REMOTE_WRITE,
        ..Default::default()
    };
    fx.modify(&m).unwrap();
    assert_eq!(fx.state_of(h.qpn), QpState::Init);
    assert_eq!(fx.dev.state().qps[&h.qpn].attrs.access_flags, access::REMOTE_WRITE);
    // RESET→RESET accepts nothing but the state.
    fx.drive(h.qp, QpState::Reset);
    assert_eq!(
        fx.modify(&ModifyQp { qp_handle: h.qp, attr_mask: 0, ..Default::default() }),
        Ok(())
    );
    assert_eq!(
        fx.modify(&ModifyQp { qp_handle: h.qp, attr_mask: qa::PKEY_INDEX, ..Default::default() }),
        Err(Errno::EINVAL)
    );
    // RTS→SQD is in the core table, but mlx5 has no firmware command for it.
    fx.drive(h.qp, QpState::Rts);
    assert_eq!(fx.modify(&full(h.qp, QpState::Rts, QpState::Sqd, qa::STATE)), Err(Errno::EINVAL));
}

#[test]
fn modify_qp_request_and_handle_checks() {
    let fx = ctx();
    let h = fx.qp();
    assert_eq!(
        fx.modify(&ModifyQp { qp_handle: 99, attr_mask: qa::STATE, ..Default::default() }),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        fx.modify(&ModifyQp { qp_handle: h.pd, attr_mask: qa::STATE, ..Default::default() }),
        Err(Errno::EINVAL)
    );
    // MODIFY_QP has no driver data: bytes past the 112-byte struct must be zero.
    let mut long = to_init(h.qp).as_bytes().to_vec();
    long.extend([0u8; 8]);
    assert_eq!(fx.cmd0(cmd::MODIFY_QP, &long, &[]), Ok(()));
    long[115] = 1;
    assert_eq!(fx.cmd0(cmd::MODIFY_QP, &long, &[]), Err(Errno::EOPNOTSUPP));
}

#[test]
fn ex_modify_qp() {
    let fx = ctx();
    let h = fx.qp();
    let m = ExModifyQp { base: to_init(h.qp), rate_limit: 0, reserved: 0 };
    let (r, _) = fx.ex(ex_cmd::MODIFY_QP, m.as_bytes(), &[], 8, 0).unwrap();
    assert_eq!(read::<ExModifyQpResp>(&r).response_length, 8);
    assert_eq!(fx.state_of(h.qpn), QpState::Init);
    // RATE_LIMIT passes the core but not an RC transition.
    let mut rl = ExModifyQp { base: to_rtr(h.qp), rate_limit: 1000, reserved: 0 };
    rl.base.attr_mask |= qa::RATE_LIMIT;
    assert_eq!(fx.ex(ex_cmd::MODIFY_QP, rl.as_bytes(), &[], 8, 0).err(), Some(Errno::EINVAL));
    let mut bad = ExModifyQp { base: to_rtr(h.qp), rate_limit: 0, reserved: 0 };
    bad.base.attr_mask |= 1 << 22;
    assert_eq!(fx.ex(ex_cmd::MODIFY_QP, bad.as_bytes(), &[], 8, 0).err(), Some(Errno::EOPNOTSUPP));
}

#[test]
fn ex_modify_qp_driver_data_checks_follow_mlx5() {
    // mlx5_ib_modify_qp: driver data shorter than struct mlx5_ib_modify_qp up to
    // ece_options (16 bytes) is EINVAL; zero data asks for nothing and the transition
    // happens; non-zero bytes past the struct, unknown comp_mask bits or burst_info's
    // reserved field are EOPNOTSUPP.
    let fx = ctx();
    let h = fx.qp();
    let m = |base: ModifyQp| ExModifyQp { base, rate_limit: 0, reserved: 0 };
    let run = |base: ModifyQp, udata: &[u8]| {
        fx.ex(ex_cmd::MODIFY_QP, m(base).as_bytes(), udata, 8, 0).err()
    };
    assert_eq!(run(to_init(h.qp), &[0; 8]), Some(Errno::EINVAL), "8 bytes of driver data");
    assert_eq!(fx.state_of(h.qpn), QpState::Reset);
    assert_eq!(run(to_init(h.qp), &[0; 16]), None, "16 zero bytes");
    assert_eq!(fx.state_of(h.qpn), QpState::Init);
    let mut unknown_mask = [0u8; 16];
    unknown_mask[0] = 0x80;
    assert_eq!(run(to_rtr(h.qp), &unknown_mask), Some(Errno::EOPNOTSUPP), "comp_mask");
    let mut reserved = [0u8; 16];
    reserved[10] = 1;
    assert_eq!(run(to_rtr(h.qp), &reserved), Some(Errno::EOPNOTSUPP), "burst reserved");
    let mut tail = [0u8; 24];
    tail[20] = 1;
    assert_eq!(run(to_rtr(h.qp), &tail), Some(Errno::EOPNOTSUPP), "non-zero tail");
    assert_eq!(fx.state_of(h.qpn), QpState::Init);
    assert_eq!(run(to_rtr(h.qp), &[0; 24]), None, "24 zero bytes");
    assert_eq!(fx.state_of(h.qpn), QpState::Rtr);
}

#[test]
fn destroy_qp_reports_async_events_delivered() {
    let fx = ctx();
    let h = fx.qp();
    let async_fd = fx.uv.async_fd().unwrap();
    assert!(fx.dev.state().qps.get_mut(&h.qpn).unwrap().post_async_event(event::COMM_EST));
    assert!(poll_in(async_fd, 1000));
    let rec = read_fd(async_fd, 64);
    assert_eq!(rec.len(), 16);
    let d: AsyncEventDesc = read(&rec);
    assert_eq!((d.element, d.event_type, d.reserved), (0x5150, event::COMM_EST, 0));
    // A second one, left unread, is dropped with the QP and not counted; another
    // object's unread event stays.
    assert!(fx.dev.state().qps.get_mut(&h.qpn).unwrap().post_async_event(event::QP_FATAL));
    let cqn = fx.dev.state().qps[&h.qpn].send_cqn;
    assert!(fx.dev.state().cqs.get_mut(&cqn).unwrap().post_async_event(event::CQ_ERR));
    assert_eq!(fx.destroy_qp(h.qp).unwrap().events_reported, 1);
    let d: AsyncEventDesc = read(&read_fd(async_fd, 64));
    assert_eq!(d.event_type, event::CQ_ERR, "the CQ's event is still there");
    assert!(!poll_in(async_fd, 50));
    assert_eq!(fx.destroy_qp(h.qp).err(), Some(Errno::ENOENT));
    assert!(fx.dev.state().qps.is_empty());
    // Now the PD and CQ are free.
    assert!(fx.destroy_cq(h.cq).is_ok());
    fx.cmd0(cmd::DEALLOC_PD, DeallocPd { pd_handle: h.pd }.as_bytes(), &[]).unwrap();
}

#[test]
fn dealloc_pd_refuses_while_a_qp_uses_it() {
    let fx = ctx();
    let h = fx.qp();
    assert_eq!(
        fx.cmd0(cmd::DEALLOC_PD, DeallocPd { pd_handle: h.pd }.as_bytes(), &[]),
        Err(Errno::EBUSY)
    );
}

// =======================================================================================
// SRQs

fn srq_ucmd(fx: &Fx, max_wr: u32, max_sge: u32) -> mlx5::CreateSrq {
    let desc = (16 + max_sge * 16).next_power_of_two().max(32) as usize;
    let size = (max_wr + 1).next_power_of_two() as usize * desc;
    mlx5::CreateSrq { buf_addr: fx.lend(size + 64), db_addr: fx.lend(64), ..Default::default() }
}

fn create_srq(
    fx: &Fx,
    pd: u32,
    max_wr: u32,
    max_sge: u32,
    ucmd: &[u8],
) -> Result<(CreateSrqResp, u32), Errno> {
    let req = CreateSrq {
        user_handle: 0x5e9,
        pd_handle: pd,
        max_wr,
        max_sge,
        srq_limit: 10,
        ..Default::default()
    };
    let r = fx.cmd(cmd::CREATE_SRQ, req.as_bytes(), ucmd, 16 + 8)?;
    Ok((read(&r), read::<mlx5::CreateSrqResp>(&r[16..]).srqn))
}

#[test]
fn create_srq_rounds_and_records() {
    let fx = ctx();
    let (pd, pdn) = fx.alloc_pd();
    let u = srq_ucmd(&fx, 100, 2);
    let (resp, srqn) = create_srq(&fx, pd, 100, 2, u.as_bytes()).unwrap();
    assert_eq!((resp.max_wr, resp.max_sge, resp.srqn), (127, 2, 0));
    let st = fx.dev.state();
    let s = &st.srqs[&srqn];
    assert_eq!((s.pdn, s.wqe_cnt, s.wqe_shift, s.max_sge), (pdn, 128, 6, 2));
    assert_eq!((s.buf_addr, s.db_addr, s.limit), (u.buf_addr, u.db_addr, 0));
}

#[test]
fn create_srq_checks() {
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    let u = srq_ucmd(&fx, 100, 2);
    assert_eq!(create_srq(&fx, pd, 32768, 1, u.as_bytes()).err(), Some(Errno::EINVAL));
    assert_eq!(create_srq(&fx, pd, 100, 33, u.as_bytes()).err(), Some(Errno::EINVAL));
    assert_eq!(create_srq(&fx, 42, 100, 2, u.as_bytes()).err(), Some(Errno::ENOENT));
    let bad = mlx5::CreateSrq { reserved1: 1, ..u };
    assert_eq!(create_srq(&fx, pd, 100, 2, bad.as_bytes()).err(), Some(Errno::EINVAL));
    let bad = mlx5::CreateSrq { buf_addr: UNMAPPED, ..u };
    assert_eq!(create_srq(&fx, pd, 100, 2, bad.as_bytes()).err(), Some(Errno::EFAULT));
    let bad = mlx5::CreateSrq { buf_addr: u.buf_addr + 16, ..u };
    assert_eq!(create_srq(&fx, pd, 100, 2, bad.as_bytes()).err(), Some(Errno::EINVAL));
    let bad = mlx5::CreateSrq { db_addr: UNMAPPED, ..u };
    assert_eq!(create_srq(&fx, pd, 100, 2, bad.as_bytes()).err(), Some(Errno::EFAULT));
    let mut long = u.as_bytes().to_vec();
    long.extend([0, 0, 0, 0, 0, 0, 0, 1]);
    assert_eq!(create_srq(&fx, pd, 100, 2, &long).err(), Some(Errno::EINVAL));
    assert!(fx.dev.state().srqs.is_empty());
}

#[test]
fn modify_srq_arms_the_limit() {
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    let (resp, srqn) = create_srq(&fx, pd, 100, 2, srq_ucmd(&fx, 100, 2).as_bytes()).unwrap();
    let modify = |attr_mask, max_wr, srq_limit| {
        let req = ModifySrq { srq_handle: resp.srq_handle, attr_mask, max_wr, srq_limit };
        fx.cmd0(cmd::MODIFY_SRQ, req.as_bytes(), &[])
    };
    assert_eq!(modify(srq_attr::LIMIT, 0, 20), Ok(()));
    assert_eq!(fx.dev.state().srqs[&srqn].limit, 20);
    assert_eq!(modify(srq_attr::LIMIT, 0, 128), Err(Errno::EINVAL));
    assert_eq!(modify(srq_attr::LIMIT, 0, 127), Ok(()));
    assert_eq!(modify(srq_attr::MAX_WR, 200, 0), Err(Errno::EINVAL), "mlx5 cannot resize SRQs");
    assert_eq!(modify(0, 0, 0), Ok(()));
    let req = ModifySrq { srq_handle: 77, attr_mask: srq_attr::LIMIT, max_wr: 0, srq_limit: 1 };
    assert_eq!(fx.cmd0(cmd::MODIFY_SRQ, req.as_bytes(), &[]), Err(Errno::ENOENT));
}

#[test]
fn srq_attached_qp_and_destroy() {
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    let (cq, _) = fx.create_cq(63, -1);
    let (srq, srqn) = create_srq(&fx, pd, 100, 2, srq_ucmd(&fx, 100, 2).as_bytes()).unwrap();
    let req = CreateQp {
        is_srq: 1,
        srq_handle: srq.srq_handle,
        max_recv_wr: 0,
        max_recv_sge: 0,
        ..Fx::qp_req(pd, cq)
    };
    let (qp, _) = fx.create_qp_with(req, fx.qp_ucmd(4, 0, 0).as_bytes()).unwrap();
    assert_eq!(fx.dev.state().qps[&qp.qpn].srqn, Some(srqn));
    // With an SRQ the QP has no RQ, whatever max_recv_wr says.
    let req2 = CreateQp { max_recv_wr: 50, ..req };
    let (qp2, _) = fx.create_qp_with(req2, fx.qp_ucmd(4, 0, 0).as_bytes()).unwrap();
    assert_eq!((qp2.max_recv_wr, qp2.max_recv_sge), (0, 0));
    let destroy = || {
        let req = DestroySrq { srq_handle: srq.srq_handle, ..Default::default() };
        fx.cmd(cmd::DESTROY_SRQ, req.as_bytes(), &[], 4).map(|r| read::<DestroySrqResp>(&r))
    };
    assert_eq!(destroy().err(), Some(Errno::EBUSY));
    fx.destroy_qp(qp.qp_handle).unwrap();
    fx.destroy_qp(qp2.qp_handle).unwrap();
    // An event nobody read is not reported, and goes with the SRQ.
    assert!(fx.dev.state().srqs.get_mut(&srqn).unwrap().post_async_event(event::SRQ_LIMIT_REACHED));
    assert_eq!(destroy().unwrap().events_reported, 0);
    assert!(!poll_in(fx.uv.async_fd().unwrap(), 50), "the unread event went with the SRQ");
    assert_eq!(destroy().err(), Some(Errno::ENOENT));
}

// =======================================================================================
// mmap (mlx5_ib_mmap, uar_mmap)

fn pgoff(cmd: u64, index: u64) -> u64 {
    (cmd << mlx5::MMAP_CMD_SHIFT) | index
}

fn unmap(p: std::ptr::NonNull<u8>) {
    // SAFETY: a mapping `Uverbs::mmap` gave us, one page long.
    unsafe { libc::munmap(p.as_ptr().cast(), page()) };
}

#[test]
fn mmap_maps_the_static_uar_pages_softhca_watches() {
    let fx = ctx();
    let h = fx.qp();
    // rdma-core maps tot_bfregs / 2 = 8 pages.
    for cmd in [mlx5::mmap_cmd::REGULAR_PAGE, mlx5::mmap_cmd::WC_PAGE, mlx5::mmap_cmd::NC_PAGE] {
        for i in 0..8 {
            unmap(fx.uv.mmap(pgoff(cmd, i), page()).unwrap());
        }
    }
    // The QP's bfreg (UAR page 6, 0x800): a BlueFlame write through the user's mapping
    // shows in softhca's view.
    let user = fx.uv.mmap(pgoff(0, 6), page()).unwrap();
    // SAFETY: our fresh mapping of one page; 0x800 + 8 is inside it.
    unsafe { user.as_ptr().add(0x800).cast::<u64>().write_volatile(0x0a00_0000_0201_0800) };
    let seen = fx.dev.state().qps[&h.qpn].bfreg_addr().unwrap();
    // SAFETY: softhca's own view of the same page, alive while the QP exists.
    assert_eq!(unsafe { seen.as_ptr().cast::<u64>().read_volatile() }, 0x0a00_0000_0201_0800);
    unmap(user);
}

#[test]
fn mmap_rejects_what_mlx5_rejects() {
    let fx = ctx();
    let p = page();
    assert_eq!(fx.uv.mmap(pgoff(0, 0), 2 * p), Err(Errno::EINVAL));
    // mmap(2) rounds the length to whole pages before the driver checks it.
    unmap(fx.uv.mmap(pgoff(0, 0), p / 2).unwrap());
    assert_eq!(fx.uv.mmap(pgoff(0, 0), p + 1), Err(Errno::EINVAL));
    assert_eq!(fx.uv.mmap(pgoff(0, 0), 0), Err(Errno::EINVAL));
    assert_eq!(fx.uv.mmap(pgoff(0, 8), p), Err(Errno::EINVAL), "past the static pages");
    assert_eq!(fx.uv.mmap(pgoff(3, 255), p), Err(Errno::EINVAL));
    assert_eq!(fx.uv.mmap(pgoff(mlx5::mmap_cmd::GET_CONTIGUOUS_PAGES, 0), p), Err(Errno::ENOSYS));
    assert_eq!(fx.uv.mmap(pgoff(mlx5::mmap_cmd::ALLOC_WC, 0), p), Err(Errno::EINVAL));
    assert_eq!(fx.uv.mmap(pgoff(mlx5::mmap_cmd::CORE_CLOCK, 0), p), Err(Errno::EOPNOTSUPP));
    assert_eq!(fx.uv.mmap(pgoff(mlx5::mmap_cmd::CORE_CLOCK, 0), 2 * p), Err(Errno::EINVAL));
    assert_eq!(fx.uv.mmap(pgoff(mlx5::mmap_cmd::CLOCK_INFO, 0), p), Err(Errno::EOPNOTSUPP));
    assert_eq!(fx.uv.mmap(pgoff(mlx5::mmap_cmd::DEVICE_MEM, 0), p), Err(Errno::EINVAL));
    assert_eq!(fx.uv.mmap(pgoff(4, 0), p), Err(Errno::EINVAL));
    assert_eq!(fx.uv.mmap(pgoff(0xff, 0), p), Err(Errno::EINVAL));
    // The command is 8 bits; higher offset bits do not change a static page's index.
    unmap(fx.uv.mmap(pgoff(0, 0) | 1 << 16, p).unwrap());
}

// =======================================================================================
// Lifetime and robustness

#[test]
fn closing_the_file_destroys_its_objects() {
    let dev = device();
    let other = Uverbs::open(dev.clone()).unwrap();
    {
        let fx = Fx {
            dev: dev.clone(),
            uv: Uverbs::open(dev.clone()).unwrap(),
            mem: RefCell::new(Vec::new()),
        };
        fx.get_context(uctx_req().as_bytes()).unwrap();
        let h = fx.qp();
        let buf = fx.lend(4096);
        fx.reg_mr(h.pd, buf, 4096, 0).unwrap();
        let st = dev.state();
        assert_eq!((st.pds.len(), st.cqs.len(), st.qps.len(), st.mrs.len()), (1, 1, 1, 1));
    }
    let st = dev.state();
    assert!(st.pds.is_empty() && st.cqs.is_empty() && st.qps.is_empty() && st.mrs.is_empty());
    drop(st);
    drop(other);
}

#[test]
fn files_do_not_see_each_others_handles() {
    let a = ctx();
    let b = Fx {
        dev: a.dev.clone(),
        uv: Uverbs::open(a.dev.clone()).unwrap(),
        mem: RefCell::new(Vec::new()),
    };
    b.get_context(uctx_req().as_bytes()).unwrap();
    let (pa, pdn_a) = a.alloc_pd();
    let (pb, pdn_b) = b.alloc_pd();
    assert_eq!((pa, pb), (0, 0), "handles are per file");
    assert_ne!(pdn_a, pdn_b, "numbers are per device");
    b.cmd0(cmd::DEALLOC_PD, DeallocPd { pd_handle: 0 }.as_bytes(), &[]).unwrap();
    assert!(a.dev.state().pds.contains_key(&pdn_a));
}

#[test]
fn device_registry_shares_one_device_per_name() {
    // The default configuration (no FERRODAT_SOFTHCA in the test environment) or whatever
    // is configured: the first name opens twice to the same device.
    let names = ferrodat_softhca::config::devices().unwrap();
    let name = &names[0].name;
    let a = Device::open(name).unwrap();
    let b = Device::open(name).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert!(Device::open("not-configured").is_err());
}

/// A deterministic stream of pseudo-random numbers (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Random command bytes never crash the model: every write answers Ok or an errno. Every
/// response pointer is aimed at a scratch buffer (a random one could hit live memory).
#[test]
fn random_commands_never_crash() {
    let fx = ctx();
    let h = fx.qp();
    fx.drive(h.qp, QpState::Init);
    let scratch = Mem::new(1 << 16);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut errnos) = (0u32, std::collections::BTreeMap::new());
    for round in 0..20_000 {
        let r = rng.next();
        // Half the time a command softhca implements, with at least its core request and
        // room for its response, so that the noise reaches the handlers.
        let (command, min_len, min_out) = match r % 8 {
            0 => ((r >> 8) as u32 % 42, 0, 0),
            1 => (CMD_FLAG_EXTENDED | ((r >> 8) as u32 % 60), 0, 0),
            2 => ((r >> 8) as u32, 0, 0),
            3 => ([cmd::CREATE_QP, cmd::MODIFY_QP, cmd::CREATE_CQ][(r >> 8) as usize % 3], 0, 0),
            _ => {
                let (c, req, resp) = MODELLED[(r >> 8) as usize % MODELLED.len()];
                (c, req, resp)
            }
        };
        let len = (min_len + (rng.next() % 96) as usize) & !3;
        let mut body: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Mostly small values, so handles and sizes are often plausible.
        for b in body.iter_mut().skip(8) {
            if !rng.next().is_multiple_of(4) {
                *b = (rng.next() % 4) as u8;
            }
        }
        let out_words = (min_out / 4 + (rng.next() % 40) as usize) as u16;
        let buf = if command & CMD_FLAG_EXTENDED != 0 && len >= 16 {
            let words = (len - 16) / 8 * 8;
            let split = (rng.next() as usize % (words / 8 + 1)) * 8;
            let (core, driver) = body[16..16 + words].split_at(split);
            ex_buf(
                command & 0xff,
                core,
                driver,
                scratch.addr(),
                usize::from(out_words % 40) * 8,
                8 * (round % 3),
            )
        } else {
            if len >= 8 {
                body[..8].copy_from_slice(&scratch.addr().to_ne_bytes());
            }
            let mut b = legacy_buf(command, &body, &[], usize::from(out_words) * 4);
            if rng.next().is_multiple_of(8) {
                b[4] = rng.next() as u8; // a wrong in_words now and then
            }
            b
        };
        match fx.uv.write(&buf) {
            Ok(n) => {
                assert_eq!(n, buf.len());
                accepted += 1;
            }
            Err(e) => {
                assert!(e.0 > 0, "{e}");
                *errnos.entry(e.0).or_insert(0u32) += 1;
            }
        }
        let _ = fx.uv.mmap(rng.next() % 0x1000, page() << (rng.next() % 2));
    }
    eprintln!("accepted {accepted}, refused {errnos:?}");
    // The noise reaches handlers, not just the header checks.
    assert!(accepted > 100, "{accepted}");
    assert!(errnos.len() >= 5, "{errnos:?}");
}

// =======================================================================================
// Every command: header checks and bad response pointers

/// The legacy commands softhca implements, with their core request and response sizes.
const MODELLED: &[(u32, usize, usize)] = &[
    (cmd::GET_CONTEXT, size_of::<GetContext>(), size_of::<GetContextResp>()),
    (cmd::QUERY_DEVICE, size_of::<QueryDevice>(), size_of::<QueryDeviceResp>()),
    (cmd::QUERY_PORT, size_of::<QueryPort>(), size_of::<QueryPortResp>()),
    (cmd::ALLOC_PD, size_of::<AllocPd>(), size_of::<AllocPdResp>()),
    (cmd::DEALLOC_PD, size_of::<DeallocPd>(), 0),
    (cmd::REG_MR, size_of::<RegMr>(), size_of::<RegMrResp>()),
    (cmd::DEREG_MR, size_of::<DeregMr>(), 0),
    (cmd::CREATE_COMP_CHANNEL, size_of::<CreateCompChannel>(), size_of::<CreateCompChannelResp>()),
    (cmd::CREATE_CQ, size_of::<CreateCq>(), size_of::<CreateCqResp>()),
    (cmd::RESIZE_CQ, size_of::<ResizeCq>(), size_of::<ResizeCqResp>()),
    (cmd::DESTROY_CQ, size_of::<DestroyCq>(), size_of::<DestroyCqResp>()),
    (cmd::CREATE_QP, size_of::<CreateQp>(), size_of::<CreateQpResp>()),
    (cmd::QUERY_QP, size_of::<QueryQp>(), size_of::<QueryQpResp>()),
    (cmd::MODIFY_QP, size_of::<ModifyQp>(), 0),
    (cmd::DESTROY_QP, size_of::<DestroyQp>(), size_of::<DestroyQpResp>()),
    (cmd::CREATE_SRQ, size_of::<CreateSrq>(), size_of::<CreateSrqResp>()),
    (cmd::MODIFY_SRQ, size_of::<ModifySrq>(), 0),
    (cmd::DESTROY_SRQ, size_of::<DestroySrq>(), size_of::<DestroySrqResp>()),
];

#[test]
fn every_command_checks_its_header() {
    // verify_hdr, before any handler runs (so with or without a context).
    let fx = ctx();
    for &(command, req, resp) in MODELLED {
        let body = vec![0u8; req];
        let mut buf = legacy_buf(command, &body, &[], resp);
        buf[4] += 1;
        assert_eq!(fx.uv.write(&buf), Err(Errno::EINVAL), "cmd {command}: in_words");
        let short = legacy_buf(command, &body[..req - 4], &[], resp);
        if command == cmd::DESTROY_CQ {
            continue; // the rdma-core v18 exception (tested above)
        }
        assert_eq!(fx.uv.write(&short), Err(Errno::ENOSPC), "cmd {command}: short request");
        if resp > 0 {
            let small = legacy_buf(command, &body, &[], resp - 4);
            assert_eq!(fx.uv.write(&small), Err(Errno::ENOSPC), "cmd {command}: short response");
        }
    }
}

#[test]
fn every_command_with_a_bad_response_pointer_is_efault() {
    let fx = ctx();
    let h = fx.qp();
    let (srq, _) = create_srq(&fx, h.pd, 100, 2, srq_ucmd(&fx, 100, 2).as_bytes()).unwrap();
    let ring = fx.lend(64 * 64);
    let mr_buf = fx.lend(4096);
    let (extra_cq, _) = fx.create_cq(15, -1);
    let (qp2, _) = fx.add_qp(h.pd, h.cq);
    let counts = |fx: &Fx| {
        let st = fx.dev.state();
        (st.pds.len(), st.mrs.len(), st.cqs.len(), st.qps.len(), st.srqs.len())
    };
    let before = counts(&fx);
    let cases: Vec<(u32, Vec<u8>, Vec<u8>, usize)> = vec![
        (cmd::QUERY_DEVICE, QueryDevice::default().as_bytes().into(), vec![], 176),
        (
            cmd::QUERY_PORT,
            QueryPort { port_num: 1, ..Default::default() }.as_bytes().into(),
            vec![],
            40,
        ),
        (cmd::ALLOC_PD, AllocPd::default().as_bytes().into(), vec![], 8),
        (
            cmd::REG_MR,
            RegMr {
                start: mr_buf,
                length: 64,
                hca_va: mr_buf,
                pd_handle: h.pd,
                ..Default::default()
            }
            .as_bytes()
            .into(),
            vec![],
            12,
        ),
        (cmd::CREATE_COMP_CHANNEL, CreateCompChannel::default().as_bytes().into(), vec![], 4),
        (
            cmd::CREATE_CQ,
            CreateCq { cqe: 15, comp_channel: -1, ..Default::default() }.as_bytes().into(),
            fx.cq_ucmd(16).as_bytes().into(),
            16,
        ),
        (
            cmd::RESIZE_CQ,
            ResizeCq { cq_handle: extra_cq, cqe: 63, ..Default::default() }.as_bytes().into(),
            mlx5::ResizeCq { buf_addr: ring, cqe_size: 64, ..Default::default() }.as_bytes().into(),
            8,
        ),
        (
            cmd::QUERY_QP,
            QueryQp { qp_handle: h.qp, ..Default::default() }.as_bytes().into(),
            vec![],
            128,
        ),
        (
            cmd::CREATE_QP,
            Fx::qp_req(h.pd, h.cq).as_bytes().into(),
            fx.qp_ucmd(4, 512, 4).as_bytes().into(),
            72,
        ),
        (
            cmd::CREATE_SRQ,
            CreateSrq { pd_handle: h.pd, max_wr: 10, max_sge: 1, ..Default::default() }
                .as_bytes()
                .into(),
            srq_ucmd(&fx, 10, 1).as_bytes().into(),
            24,
        ),
    ];
    for (command, req, driver, out) in cases {
        for response in [0, UNMAPPED, 0xffff_8000_0000_0000] {
            let mut body = req.clone();
            body[..8].copy_from_slice(&response.to_ne_bytes());
            let buf = legacy_buf(command, &body, &driver, out);
            assert_eq!(
                fx.uv.write(&buf),
                Err(Errno::EFAULT),
                "cmd {command} response {response:#x}"
            );
        }
    }
    assert_eq!(counts(&fx), before, "failed creates leave nothing behind");
    // Destroys happen before the response is written: the object is gone, the caller gets
    // EFAULT (ib_uverbs_destroy_cq and friends).
    let destroys: Vec<(u32, Vec<u8>)> = vec![
        (
            cmd::DESTROY_QP,
            DestroyQp { response: UNMAPPED, qp_handle: qp2, reserved: 0 }.as_bytes().into(),
        ),
        (
            cmd::DESTROY_CQ,
            DestroyCq { response: UNMAPPED, cq_handle: extra_cq, reserved: 0 }.as_bytes().into(),
        ),
        (
            cmd::DESTROY_SRQ,
            DestroySrq { response: UNMAPPED, srq_handle: srq.srq_handle, reserved: 0 }
                .as_bytes()
                .into(),
        ),
    ];
    for (command, req) in destroys {
        let out = if command == cmd::DESTROY_CQ { 8 } else { 4 };
        assert_eq!(
            fx.uv.write(&legacy_buf(command, &req, &[], out)),
            Err(Errno::EFAULT),
            "cmd {command}"
        );
    }
    let (pds, mrs, cqs, qps, srqs) = counts(&fx);
    assert_eq!(
        (pds, mrs, cqs, qps, srqs),
        (before.0, before.1, before.2 - 1, before.3 - 1, before.4 - 1)
    );
}

#[test]
fn uverbs_and_device_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Uverbs>();
    send_sync::<Device>();
    let fx = ctx();
    let uv = &fx.uv;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(move || {
                let resp = Mem::new(8);
                for _ in 0..100 {
                    let alloc = AllocPd { response: resp.addr() };
                    uv.write(&legacy_buf(cmd::ALLOC_PD, alloc.as_bytes(), &[], 8)).unwrap();
                    let pd_handle = read::<AllocPdResp>(resp.bytes()).pd_handle;
                    let dealloc = DeallocPd { pd_handle };
                    uv.write(&legacy_buf(cmd::DEALLOC_PD, dealloc.as_bytes(), &[], 0)).unwrap();
                }
            });
        }
    });
    assert!(fx.dev.state().pds.is_empty());
}

/// REG_MR exports memory mapped from a shared file when peers may write or read it
/// (placement, `fabric/memory_export.rs`); other memory, and memory without a remote right,
/// stay private. DEREG_MR
/// withdraws the export, file included.
#[test]
fn reg_mr_exports_shared_file_memory_that_peers_may_write_or_read() {
    use std::os::fd::{AsRawFd, FromRawFd};
    let fx = ctx();
    let (pd, _) = fx.alloc_pd();
    // SAFETY: a NUL-terminated name; checked.
    let fd = unsafe { libc::memfd_create(c"reg-mr-export".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    // SAFETY: the descriptor just created, owned from here on.
    let memfd = unsafe { std::fs::File::from_raw_fd(fd) };
    memfd.set_len(4 * 4096).unwrap();
    // SAFETY: a fresh shared mapping of our memfd, checked; unmapped at the end.
    let shared = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4 * 4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            memfd.as_raw_fd(),
            0,
        )
    };
    assert_ne!(shared, libc::MAP_FAILED);
    let engine = fx.dev.engine();
    let writable = access::LOCAL_WRITE | access::REMOTE_WRITE;

    let mr = fx.reg_mr(pd, shared as u64 + 4096, 8192, writable).unwrap();
    assert!(engine.is_exported(mr.rkey >> 8), "shared memory with REMOTE_WRITE");
    let export = engine.registry().export_path(mr.rkey >> 8);
    assert!(export.exists());
    let read_only = fx.reg_mr(pd, shared as u64, 4096, access::REMOTE_READ).unwrap();
    assert!(engine.is_exported(read_only.rkey >> 8), "REMOTE_READ: READs are placed");
    let local = fx.reg_mr(pd, shared as u64 + 12288, 4096, access::LOCAL_WRITE).unwrap();
    assert!(!engine.is_exported(local.rkey >> 8), "no remote right: nothing to place");
    let private = fx.lend(4096);
    let private_mr = fx.reg_mr(pd, private, 4096, writable).unwrap();
    assert!(!engine.is_exported(private_mr.rkey >> 8), "private memory cannot be shared");

    fx.cmd0(cmd::DEREG_MR, DeregMr { mr_handle: mr.mr_handle }.as_bytes(), &[]).unwrap();
    assert!(!engine.is_exported(mr.rkey >> 8));
    assert!(!export.exists(), "DEREG_MR removes the export file");
    // SAFETY: the mapping made above; its regions that matter are gone.
    unsafe { libc::munmap(shared, 4 * 4096) };
}
