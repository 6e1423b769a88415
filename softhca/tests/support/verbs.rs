//! A small command-driven "verbs" layer for end-to-end tests: it talks to softhca only the
//! way rdma-core's mlx5 provider talks to the kernel and the HCA — uverbs `write()` command
//! buffers, `mmap` of the UAR pages, queue buffers and doorbell records it owns, WQEs built
//! from `ferrodat_abi::mlx5` types, BlueFlame/doorbell stores into the mapped UAR, CQE64s
//! polled by the ownership rule — plus the two model entry points a driver calls on softhca
//! ([`Uverbs::doorbell_rung`] after a UAR store, [`Uverbs::progress`] when a poll finds
//! nothing). It never reaches into the engine or the device tables.
//!
//! Sizes follow rdma-core's mlx5 provider (`mlx5_calc_sq_size`, `mlx5_calc_rq_size`,
//! `mlx5_alloc_srq_buf`), and so do the doorbell sequences (`post_send_db`, `mlx5_arm_cq`,
//! `mlx5_post_srq_recv`, `mlx5_free_srq_wqe`).
#![allow(dead_code)]

use crate::completion::{Wc, decode_cqe};
pub use crate::mem::{Mem, page};
use ferrodat_abi::mlx5::{
    self, BF_OFFSET, BFREGS_PER_UAR, CQ_DB_REQ_NOT, CQ_DB_REQ_NOT_SOL, CQ_DOORBELL, CQE_OWNER_MASK,
    INLINE_SEG, INVALID_LKEY, SEND_WQE_BB, WqeCtrlSeg, WqeDataSeg, WqeRaddrSeg, WqeSrqNextSeg,
    cq_arm_doorbell, cq_arm_word, cqe_opcode, mmap_cmd, wqe_ctrl,
};
use ferrodat_abi::uverbs::{
    self, AsyncEventDesc, CmdHdr, CompEventDesc, QpDest, QueryQpResp, access, cmd, mtu,
    qp_attr as qa, qp_state, qp_type,
};
use ferrodat_softhca::config::DeviceConfig;
use ferrodat_softhca::fabric::FabricDir;
use ferrodat_softhca::{Device, Errno, Uverbs};
use std::cell::{Cell, RefCell};
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{Ordering, fence};
use std::time::{Duration, Instant};
use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, IntoBytes};

/// How long any bounded wait may take before the test fails (everything here completes
/// in microseconds; the bound only turns a hang into a clear failure).
pub const WAIT: Duration = Duration::from_secs(5);

/// rdma-core's RC send-WQE overhead (ctrl + the largest of raddr/atomic/UMR/bind-MW
/// segments): 192 bytes, so one SGE gives a 256-byte slot and 60 bytes of inline data.
const SQ_OVERHEAD: usize = 192;

// ---------------------------------------------------------------------------------------
// Memory and the fabric

/// Volatile copy into lent memory (the device may read it concurrently).
fn write_bytes(addr: u64, data: &[u8]) {
    for (i, b) in data.iter().enumerate() {
        // SAFETY: callers pass addresses inside memory this layer lent to the device.
        unsafe { std::ptr::write_volatile((addr as *mut u8).add(i), *b) };
    }
}

/// Volatile copy out of lent memory (the device may write it concurrently).
fn read_bytes(addr: u64, len: usize) -> Vec<u8> {
    // SAFETY: callers pass addresses inside memory this layer lent to the device.
    (0..len).map(|i| unsafe { std::ptr::read_volatile((addr as *const u8).add(i)) }).collect()
}

fn write_be32(addr: u64, v: u32) {
    // SAFETY: `addr` is a doorbell record slot this layer allocated (8-byte aligned).
    unsafe { std::ptr::write_volatile(addr as *mut [u8; 4], v.to_be_bytes()) };
}

fn read_u8(addr: u64) -> u8 {
    // SAFETY: inside a CQ ring this layer lent to the device.
    unsafe { std::ptr::read_volatile(addr as *const u8) }
}

/// A private fabric directory (`/dev/shm/ferrodat-e2e-<pid>-<n>`), removed on drop.
pub struct TestFabric {
    path: PathBuf,
}

impl TestFabric {
    pub fn new() -> TestFabric {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = PathBuf::from(format!("/dev/shm/ferrodat-e2e-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        TestFabric { path }
    }

    pub fn dir(&self) -> FabricDir {
        FabricDir::new(&self.path)
    }
}

impl Drop for TestFabric {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

// ---------------------------------------------------------------------------------------
// File descriptors

/// `poll(2)` for POLLIN with `timeout_ms`.
pub fn readable(fd: RawFd, timeout_ms: i32) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    n == 1 && p.revents & libc::POLLIN != 0
}

/// One `read(2)` of up to `max` bytes.
pub fn read_fd(fd: RawFd, max: usize) -> Vec<u8> {
    let mut buf = vec![0u8; max];
    // SAFETY: `buf` has `max` bytes of room.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), max) };
    assert!(n >= 0, "read({fd}): {}", std::io::Error::last_os_error());
    buf.truncate(n as usize);
    buf
}

pub fn close(fd: RawFd) {
    // SAFETY: closing an fd the device handed to the user (us), once.
    unsafe { libc::close(fd) };
}

// ---------------------------------------------------------------------------------------
// Objects

/// ALLOC_PD.
#[derive(Clone, Copy, Debug)]
pub struct Pd {
    pub handle: u32,
    pub pdn: u32,
}

/// REG_MR over memory the context owns.
#[derive(Clone, Copy, Debug)]
pub struct Mr {
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
    pub addr: u64,
    pub len: usize,
}

impl Mr {
    pub fn write(&self, offset: usize, data: &[u8]) {
        assert!(offset + data.len() <= self.len);
        write_bytes(self.addr + offset as u64, data);
    }

    pub fn read(&self, offset: usize, len: usize) -> Vec<u8> {
        assert!(offset + len <= self.len);
        read_bytes(self.addr + offset as u64, len)
    }

    /// An SGE `(addr, len, lkey)` for `len` bytes at `offset`.
    pub fn sge(&self, offset: usize, len: u32) -> (u64, u32, u32) {
        (self.addr + offset as u64, len, self.lkey)
    }
}

/// CREATE_CQ: the consumer side of a CQ.
#[derive(Debug)]
pub struct Cq {
    pub handle: u32,
    pub cqn: u32,
    pub user_handle: u64,
    /// Entries (a power of two); CREATE_CQ answered `ncqe - 1`.
    pub ncqe: u32,
    buf: u64,
    dbrec: u64,
    /// Consumer index.
    pub ci: u32,
    /// Completion events consumed (`ibv_get_cq_event` → `arm_sn++`).
    pub arm_sn: u32,
}

impl Cq {
    fn entry(&self, n: u32) -> u64 {
        self.buf + u64::from(n & (self.ncqe - 1)) * 64
    }

    /// True if software owns the next entry (a CQE waits), without consuming it.
    pub fn has_cqe(&self) -> bool {
        let op_own = read_u8(self.entry(self.ci) + 63);
        let sw_owner = self.ci & self.ncqe != 0;
        op_own >> 4 != cqe_opcode::INVALID && (op_own & CQE_OWNER_MASK != 0) == sw_owner
    }

    /// One CQE if software owns the next entry (`mlx5_poll_one`), then `set_ci`.
    pub fn poll_one(&mut self) -> Option<Wc> {
        if !self.has_cqe() {
            return None;
        }
        fence(Ordering::Acquire);
        let bytes = read_bytes(self.entry(self.ci), 64);
        let wc = decode_cqe(bytes.as_slice().try_into().expect("64 bytes"));
        self.ci = self.ci.wrapping_add(1);
        fence(Ordering::Release);
        write_be32(self.dbrec + 4 * mlx5::CQ_SET_CI as u64, self.ci & mlx5::CQ_CI_MASK);
        Some(wc)
    }
}

/// Capacities asked of CREATE_QP.
#[derive(Clone, Copy, Debug)]
pub struct QpCaps {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

impl Default for QpCaps {
    fn default() -> Self {
        QpCaps {
            max_send_wr: 16,
            max_recv_wr: 16,
            max_send_sge: 2,
            max_recv_sge: 2,
            max_inline_data: 60,
        }
    }
}

/// CREATE_QP: the driver side of an RC QP.
#[derive(Debug)]
pub struct Qp {
    pub handle: u32,
    pub qpn: u32,
    pub user_handle: u64,
    pub uidx: u32,
    buf: u64,
    sq_offset: u64,
    pub sq_wqebbs: u32,
    pub rq_wqe_cnt: u32,
    rq_wqe_shift: u32,
    dbrec: u64,
    /// SQ producer counter in WQEBBs (`sq.cur_post`).
    pub sq_pi: u16,
    /// RQ producer counter (`rq.head`).
    pub rq_pi: u16,
    /// The bfreg CREATE_QP named (4-per-UAR numbering).
    pub bfreg_index: u32,
    /// UAR page of the bfreg, and the register's offset in it.
    bf_page: u32,
    bf_reg: u32,
    /// BlueFlame half in use (toggles by `bf_buf_size`), and the half size (0: doorbell
    /// only, bfreg 0).
    bf_offset: u32,
    bf_buf_size: u32,
}

/// CREATE_SRQ: the driver side of a basic SRQ.
#[derive(Debug)]
pub struct Srq {
    pub handle: u32,
    pub srqn: u32,
    pub user_handle: u64,
    buf: u64,
    /// Entries (`srq->max`).
    pub wqe_cnt: u32,
    stride: u32,
    max_gs: u32,
    dbrec: u64,
    /// Free-list head and tail.
    pub head: u16,
    pub tail: u16,
    /// WQEs posted (the doorbell record's counter).
    pub counter: u16,
}

/// One send work request.
#[derive(Clone, Debug, Default)]
pub struct SendWr {
    pub opcode: u8,
    /// `(addr, len, lkey)`.
    pub sges: Vec<(u64, u32, u32)>,
    pub inline: Option<Vec<u8>>,
    /// `(remote addr, rkey)` for RDMA operations.
    pub remote: Option<(u64, u32)>,
    pub imm: u32,
    pub signaled: bool,
    pub solicited: bool,
}

// ---------------------------------------------------------------------------------------
// The context

/// One open of the device with its ucontext, as rdma-core holds it.
pub struct Verbs {
    /// Dropped first: closing the file destroys every object before the memory they use
    /// is unmapped.
    pub uv: Uverbs,
    pub dev: Arc<Device>,
    pub async_fd: RawFd,
    pub tot_bfregs: u32,
    pub bf_reg_size: u32,
    pub cqe_version: u8,
    /// The user's mappings of the static UAR pages (rdma-core maps them all at open).
    uar: Vec<NonNull<u8>>,
    /// Doorbell records are carved from pages in cache-line slots, as rdma-core does.
    db_page: Cell<u64>,
    db_next: Cell<usize>,
    next_uidx: Cell<u32>,
    mem: RefCell<Vec<Mem>>,
    _fabric: TestFabric,
}

impl Drop for Verbs {
    fn drop(&mut self) {
        close(self.async_fd);
        for p in &self.uar {
            // SAFETY: a one-page mapping `Uverbs::mmap` gave us, unmapped once.
            unsafe { libc::munmap(p.as_ptr().cast(), page()) };
        }
    }
}

fn read<T: FromBytes>(bytes: &[u8]) -> T {
    T::read_from_prefix(bytes).unwrap().0
}

impl Verbs {
    /// A fresh device `softhca0` (127.0.0.1) on a private fabric, opened and given a context
    /// the way rdma-core's mlx5 provider asks for one (16 bfregs, 4 low-latency, CQE v1);
    /// then the static UAR pages are mapped.
    pub fn open() -> Verbs {
        let fabric = TestFabric::new();
        let config = DeviceConfig { name: "softhca0".into(), addr: "127.0.0.1".parse().unwrap() };
        let dev = Device::new_in(config, fabric.dir()).expect("join the private softhca fabric");
        let uv = Uverbs::open(dev.clone()).expect("open the device");
        let req = mlx5::AllocUcontextReqV2 {
            total_num_bfregs: 16,
            num_low_latency_bfregs: 4,
            max_cqe_version: 1,
            lib_caps: mlx5::lib_cap::UAR_4K | mlx5::lib_cap::DYN_UAR,
            ..Default::default()
        };
        let out = size_of::<uverbs::GetContextResp>() + size_of::<mlx5::AllocUcontextResp>();
        let r = run_command(
            &uv,
            cmd::GET_CONTEXT,
            uverbs::GetContext::default().as_bytes(),
            req.as_bytes(),
            out,
        )
        .expect("GET_CONTEXT");
        let core: uverbs::GetContextResp = read(&r);
        let m: mlx5::AllocUcontextResp = read(&r[8..]);
        assert!(m.tot_bfregs > 0 && m.cache_line_size > 0 && m.num_uars_per_page == 1);
        let pages = m.tot_bfregs / (m.num_uars_per_page * 2);
        let uar = (0..pages)
            .map(|i| {
                let pgoff = mmap_cmd::REGULAR_PAGE << mlx5::MMAP_CMD_SHIFT | u64::from(i);
                uv.mmap(pgoff, page()).expect("mmap a UAR page")
            })
            .collect();
        Verbs {
            uv,
            dev,
            async_fd: core.async_fd as RawFd,
            tot_bfregs: m.tot_bfregs,
            bf_reg_size: m.bf_reg_size,
            cqe_version: m.cqe_version,
            uar,
            db_page: Cell::new(0),
            db_next: Cell::new(usize::MAX),
            next_uidx: Cell::new(1),
            mem: RefCell::new(Vec::new()),
            _fabric: fabric,
        }
    }

    /// Memory that lives as long as the context.
    pub fn lend(&self, len: usize) -> u64 {
        let m = Mem::new(len);
        let a = m.addr();
        self.mem.borrow_mut().push(m);
        a
    }

    /// An 8-byte doorbell record in its own 64-byte slot (zeroed).
    fn alloc_dbrec(&self) -> u64 {
        let slot = 64;
        if self.db_next.get() >= page() / slot {
            self.db_page.set(self.lend(page()));
            self.db_next.set(0);
        }
        let at = self.db_page.get() + (self.db_next.get() * slot) as u64;
        self.db_next.set(self.db_next.get() + 1);
        at
    }

    /// A legacy command whose `out`-byte response goes to a fresh buffer, its address patched
    /// into the request's `response` field. Returns the response bytes.
    pub fn cmd(
        &self,
        command: u32,
        req: &[u8],
        driver: &[u8],
        out: usize,
    ) -> Result<Vec<u8>, Errno> {
        run_command(&self.uv, command, req, driver, out)
    }

    pub fn alloc_pd(&self) -> Pd {
        let r = self
            .cmd(cmd::ALLOC_PD, uverbs::AllocPd::default().as_bytes(), &[], 8)
            .expect("ALLOC_PD");
        Pd {
            handle: read::<uverbs::AllocPdResp>(&r).pd_handle,
            pdn: read::<mlx5::AllocPdResp>(&r[4..]).pdn,
        }
    }

    /// REG_MR over `len` fresh bytes.
    pub fn reg_mr(&self, pd: &Pd, len: usize, access_flags: u32) -> Mr {
        let addr = self.lend(len);
        let req = uverbs::RegMr {
            start: addr,
            length: len as u64,
            hca_va: addr,
            pd_handle: pd.handle,
            access_flags,
            ..Default::default()
        };
        let r = self.cmd(cmd::REG_MR, req.as_bytes(), &[], 12).expect("REG_MR");
        let resp: uverbs::RegMrResp = read(&r);
        Mr { handle: resp.mr_handle, lkey: resp.lkey, rkey: resp.rkey, addr, len }
    }

    /// CREATE_COMP_CHANNEL: the channel fd (the caller's to close).
    pub fn create_comp_channel(&self) -> RawFd {
        let r = self
            .cmd(cmd::CREATE_COMP_CHANNEL, uverbs::CreateCompChannel::default().as_bytes(), &[], 4)
            .expect("CREATE_COMP_CHANNEL");
        read::<uverbs::CreateCompChannelResp>(&r).fd as RawFd
    }

    /// CREATE_CQ for at least `cqe` entries, as `mlx5_create_cq`: a ring of
    /// `roundup_pow2(cqe + 1)` 64-byte CQEs with every op_own 0xF0, and a doorbell record.
    pub fn create_cq(&self, cqe: u32, channel: Option<RawFd>, user_handle: u64) -> Cq {
        let ncqe = (cqe + 1).next_power_of_two();
        let buf = self.lend(ncqe as usize * 64);
        for i in 0..u64::from(ncqe) {
            write_bytes(buf + i * 64 + 63, &[cqe_opcode::INVALID << 4]);
        }
        let dbrec = self.alloc_dbrec();
        let req = uverbs::CreateCq {
            user_handle,
            cqe: ncqe - 1,
            comp_vector: 0,
            comp_channel: channel.unwrap_or(-1),
            ..Default::default()
        };
        let ucmd =
            mlx5::CreateCq { buf_addr: buf, db_addr: dbrec, cqe_size: 64, ..Default::default() };
        let r = self.cmd(cmd::CREATE_CQ, req.as_bytes(), ucmd.as_bytes(), 16).expect("CREATE_CQ");
        let resp: uverbs::CreateCqResp = read(&r);
        assert_eq!(resp.cqe, ncqe - 1, "CREATE_CQ answers the ring size - 1");
        let cqn = read::<mlx5::CreateCqResp>(&r[8..]).cqn;
        Cq { handle: resp.cq_handle, cqn, user_handle, ncqe, buf, dbrec, ci: 0, arm_sn: 0 }
    }

    pub fn destroy_cq(&self, cq: &Cq) -> Result<uverbs::DestroyCqResp, Errno> {
        let req = uverbs::DestroyCq { cq_handle: cq.handle, ..Default::default() };
        self.cmd(cmd::DESTROY_CQ, req.as_bytes(), &[], 8).map(|r| read(&r))
    }

    /// CREATE_QP (RC) with the buffer mlx5 computes: RQ at offset 0, SQ after it.
    pub fn create_qp(
        &self,
        pd: &Pd,
        send_cq: &Cq,
        recv_cq: &Cq,
        srq: Option<&Srq>,
        caps: QpCaps,
    ) -> Qp {
        // mlx5_calc_send_wqe / mlx5_calc_sq_size.
        let plain = SQ_OVERHEAD + caps.max_send_sge as usize * 16;
        let inline = if caps.max_inline_data > 0 {
            SQ_OVERHEAD + (4 + caps.max_inline_data as usize).next_multiple_of(16)
        } else {
            0
        };
        let wqe_size = plain.max(inline).next_multiple_of(SEND_WQE_BB);
        let sq_wqebbs =
            ((caps.max_send_wr as usize * wqe_size).next_power_of_two() / SEND_WQE_BB) as u32;
        // mlx5_calc_rq_size (no RQ with an SRQ).
        let (rq_wqe_cnt, rq_wqe_shift) = if srq.is_some() || caps.max_recv_wr == 0 {
            (0, 0)
        } else {
            let stride = (16 * caps.max_recv_sge.max(1) as usize).next_power_of_two();
            let size = (caps.max_recv_wr.next_power_of_two() as usize * stride).max(SEND_WQE_BB);
            ((size / stride) as u32, stride.trailing_zeros())
        };
        let rq_bytes = u64::from(rq_wqe_cnt) << rq_wqe_shift;
        let buf = self.lend(rq_bytes as usize + sq_wqebbs as usize * SEND_WQE_BB);
        let dbrec = self.alloc_dbrec();
        let uidx = self.next_uidx.get();
        self.next_uidx.set(uidx + 1);
        let user_handle = 0x9900_0000 | u64::from(uidx);
        let req = uverbs::CreateQp {
            user_handle,
            pd_handle: pd.handle,
            send_cq_handle: send_cq.handle,
            recv_cq_handle: recv_cq.handle,
            srq_handle: srq.map_or(0, |s| s.handle),
            max_send_wr: caps.max_send_wr,
            max_recv_wr: if srq.is_some() { 0 } else { caps.max_recv_wr },
            max_send_sge: caps.max_send_sge,
            max_recv_sge: if srq.is_some() { 0 } else { caps.max_recv_sge },
            max_inline_data: caps.max_inline_data,
            sq_sig_all: 0,
            qp_type: qp_type::RC,
            is_srq: u8::from(srq.is_some()),
            ..Default::default()
        };
        let ucmd = mlx5::CreateQp {
            buf_addr: buf,
            db_addr: dbrec,
            sq_wqe_count: sq_wqebbs,
            rq_wqe_count: rq_wqe_cnt,
            rq_wqe_shift,
            flags: mlx5::qp_flag::SCATTER_CQE,
            uidx: if self.cqe_version >= 1 { uidx } else { 0xff_ffff },
            ..Default::default()
        };
        let r =
            self.cmd(cmd::CREATE_QP, req.as_bytes(), ucmd.as_bytes(), 32 + 40).expect("CREATE_QP");
        let resp: uverbs::CreateQpResp = read(&r);
        let bfreg_index = read::<mlx5::CreateQpResp>(&r[32..]).bfreg_index;
        // The bfreg array rdma-core builds over the mapped pages (one UAR per page).
        let k = bfreg_index % BFREGS_PER_UAR;
        assert!(k < 2, "bfreg {bfreg_index} is not a user bfreg");
        let bf_page = bfreg_index / BFREGS_PER_UAR;
        assert!((bf_page as usize) < self.uar.len(), "bfreg {bfreg_index} past the mapped UARs");
        Qp {
            handle: resp.qp_handle,
            qpn: resp.qpn,
            user_handle,
            uidx,
            buf,
            sq_offset: rq_bytes,
            sq_wqebbs,
            rq_wqe_cnt,
            rq_wqe_shift,
            dbrec,
            sq_pi: 0,
            rq_pi: 0,
            bfreg_index,
            bf_page,
            bf_reg: BF_OFFSET as u32 + k * self.bf_reg_size,
            bf_offset: 0,
            bf_buf_size: if bfreg_index == 0 { 0 } else { self.bf_reg_size / 2 },
        }
    }

    pub fn modify_qp(&self, m: &uverbs::ModifyQp) -> Result<(), Errno> {
        self.cmd(cmd::MODIFY_QP, m.as_bytes(), &[], 0).map(drop)
    }

    /// Connects `a` and `b` to each other (each as [`Verbs::connect`]).
    pub fn connect_pair(&self, a: &Qp, b: &Qp) {
        self.connect(a, b.qpn);
        self.connect(b, a.qpn);
    }

    /// RESET→INIT→RTR→RTS towards `dest_qpn` on this device (loopback: dgid = our GID),
    /// with the masks the kernel requires for RC and every remote right.
    pub fn connect(&self, qp: &Qp, dest_qpn: u32) {
        let access_flags = access::LOCAL_WRITE
            | access::REMOTE_WRITE
            | access::REMOTE_READ
            | access::REMOTE_ATOMIC;
        let base = uverbs::ModifyQp { qp_handle: qp.handle, ..Default::default() };
        let init = uverbs::ModifyQp {
            attr_mask: qa::STATE | qa::PKEY_INDEX | qa::PORT | qa::ACCESS_FLAGS,
            qp_state: qp_state::INIT,
            pkey_index: 0,
            port_num: 1,
            qp_access_flags: access_flags,
            ..base
        };
        self.modify_qp(&init).expect("MODIFY_QP RESET→INIT");
        let rtr = uverbs::ModifyQp {
            attr_mask: qa::STATE
                | qa::AV
                | qa::PATH_MTU
                | qa::DEST_QPN
                | qa::RQ_PSN
                | qa::MAX_DEST_RD_ATOMIC
                | qa::MIN_RNR_TIMER,
            qp_state: qp_state::RTR,
            dest: QpDest {
                dgid: self.dev.gid(),
                sgid_index: 0,
                hop_limit: 64,
                is_global: 1,
                port_num: 1,
                ..Default::default()
            },
            path_mtu: mtu::MTU_1024,
            dest_qp_num: dest_qpn,
            rq_psn: 0x1234,
            max_dest_rd_atomic: 4,
            min_rnr_timer: 1,
            ..base
        };
        self.modify_qp(&rtr).expect("MODIFY_QP INIT→RTR");
        let rts = uverbs::ModifyQp {
            attr_mask: qa::STATE
                | qa::TIMEOUT
                | qa::RETRY_CNT
                | qa::RNR_RETRY
                | qa::SQ_PSN
                | qa::MAX_QP_RD_ATOMIC,
            qp_state: qp_state::RTS,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            sq_psn: 0x1234,
            max_rd_atomic: 4,
            ..base
        };
        self.modify_qp(&rts).expect("MODIFY_QP RTR→RTS");
    }

    /// MODIFY_QP to ERR (allowed from every state but RESET with only STATE).
    pub fn to_error(&self, qp: &Qp) {
        let m = uverbs::ModifyQp {
            qp_handle: qp.handle,
            attr_mask: qa::STATE,
            qp_state: qp_state::ERR,
            ..Default::default()
        };
        self.modify_qp(&m).expect("MODIFY_QP →ERR");
    }

    /// MODIFY_QP to RESET, then what `mlx5_modify_qp` does after it: the queue indices and
    /// both doorbell-record counters go back to 0.
    pub fn reset(&self, qp: &mut Qp) {
        let m = uverbs::ModifyQp {
            qp_handle: qp.handle,
            attr_mask: qa::STATE,
            qp_state: qp_state::RESET,
            ..Default::default()
        };
        self.modify_qp(&m).expect("MODIFY_QP →RESET");
        qp.sq_pi = 0;
        qp.rq_pi = 0;
        write_be32(qp.dbrec + 4 * mlx5::RCV_DBR as u64, 0);
        write_be32(qp.dbrec + 4 * mlx5::SND_DBR as u64, 0);
    }

    pub fn query_qp(&self, qp: &Qp) -> QueryQpResp {
        let req = uverbs::QueryQp { qp_handle: qp.handle, attr_mask: 0, ..Default::default() };
        read(&self.cmd(cmd::QUERY_QP, req.as_bytes(), &[], 128).expect("QUERY_QP"))
    }

    pub fn destroy_qp(&self, qp: &Qp) -> Result<uverbs::DestroyQpResp, Errno> {
        let req = uverbs::DestroyQp { qp_handle: qp.handle, ..Default::default() };
        self.cmd(cmd::DESTROY_QP, req.as_bytes(), &[], 4).map(|r| read(&r))
    }

    /// CREATE_SRQ as `mlx5_create_srq`: `max = roundup_pow2(max_wr + 1)` entries of
    /// `roundup_pow2(max(32, 16 + 16 * max_sge))` bytes, the free list linked i → i+1.
    pub fn create_srq(&self, pd: &Pd, max_wr: u32, max_sge: u32, user_handle: u64) -> Srq {
        let max = (max_wr + 1).next_power_of_two();
        let stride = (16 + 16 * max_sge).max(32).next_power_of_two();
        let buf = self.lend((max * stride) as usize);
        for i in 0..max {
            let next = WqeSrqNextSeg {
                next_wqe_index: U16::new(((i + 1) & (max - 1)) as u16),
                ..Default::default()
            };
            write_bytes(buf + u64::from(i * stride), next.as_bytes());
        }
        let dbrec = self.alloc_dbrec();
        let req = uverbs::CreateSrq {
            user_handle,
            pd_handle: pd.handle,
            max_wr: max - 1,
            max_sge,
            srq_limit: 0,
            ..Default::default()
        };
        let uidx = self.next_uidx.get();
        self.next_uidx.set(uidx + 1);
        let ucmd =
            mlx5::CreateSrq { buf_addr: buf, db_addr: dbrec, flags: 0, uidx, ..Default::default() };
        let r =
            self.cmd(cmd::CREATE_SRQ, req.as_bytes(), ucmd.as_bytes(), 16 + 8).expect("CREATE_SRQ");
        let resp: uverbs::CreateSrqResp = read(&r);
        assert_eq!(resp.max_wr, max - 1);
        let srqn = read::<mlx5::CreateSrqResp>(&r[16..]).srqn;
        Srq {
            handle: resp.srq_handle,
            srqn,
            user_handle,
            buf,
            wqe_cnt: max,
            stride,
            max_gs: max_sge,
            dbrec,
            head: 0,
            tail: (max - 1) as u16,
            counter: 0,
        }
    }

    pub fn modify_srq_limit(&self, srq: &Srq, limit: u32) -> Result<(), Errno> {
        let req = uverbs::ModifySrq {
            srq_handle: srq.handle,
            attr_mask: uverbs::srq_attr::LIMIT,
            max_wr: 0,
            srq_limit: limit,
        };
        self.cmd(cmd::MODIFY_SRQ, req.as_bytes(), &[], 0).map(drop)
    }

    pub fn destroy_srq(&self, srq: &Srq) -> Result<uverbs::DestroySrqResp, Errno> {
        let req = uverbs::DestroySrq { srq_handle: srq.handle, ..Default::default() };
        self.cmd(cmd::DESTROY_SRQ, req.as_bytes(), &[], 4).map(|r| read(&r))
    }

    // -----------------------------------------------------------------------------------
    // Data path

    /// Writes the WQEs, publishes the SQ counter in dbrec[1], stores to the QP's bfreg in
    /// the mapped UAR (BlueFlame for a lone small WQE, else the last ctrl's first 8 bytes)
    /// and tells the model (`post_send_db`). Returns each WQE's index.
    pub fn post_send(&self, qp: &mut Qp, wrs: &[SendWr]) -> Vec<u16> {
        assert!(!wrs.is_empty());
        let mut idxs = Vec::new();
        let mut last = (0u16, 0usize);
        for wr in wrs {
            let (idx, ds) = write_wqe(qp, wr);
            idxs.push(idx);
            last = (idx, ds);
        }
        fence(Ordering::Release);
        write_be32(qp.dbrec + 4 * mlx5::SND_DBR as u64, u32::from(qp.sq_pi));
        fence(Ordering::SeqCst);
        let (idx, ds) = last;
        let page = self.uar[qp.bf_page as usize].as_ptr();
        let reg_off = qp.bf_reg + qp.bf_offset;
        // SAFETY: `page` is our one-page mapping of the QP's UAR; the register and its
        // halves (bf_reg + up to bf_reg_size) are inside the page.
        let reg = unsafe { page.add(reg_off as usize) };
        let ctrl: [u8; 8] = read_bytes(qp.sq_addr(u32::from(idx)), 8).try_into().unwrap();
        // rdma-core prefers BlueFlame for a lone WQE that fits a register half.
        if wrs.len() == 1 && qp.bf_buf_size != 0 && ds > 1 && ds * 16 <= qp.bf_buf_size as usize {
            // BlueFlame: the whole WQE, in 64-byte chunks, wrapping at the SQ end.
            let bbs = (ds * 16).div_ceil(SEND_WQE_BB);
            for i in 0..bbs {
                let pos = (u32::from(idx) + i as u32) & (qp.sq_wqebbs - 1);
                let chunk = read_bytes(qp.sq_addr(pos), SEND_WQE_BB);
                for (j, b) in chunk.iter().enumerate() {
                    // SAFETY: inside the register half (ds * 16 <= buf_size).
                    unsafe { reg.add(i * SEND_WQE_BB + j).write_volatile(*b) };
                }
            }
        } else {
            // SAFETY: an 8-byte store into the register, 8-byte aligned.
            unsafe { (reg as *mut [u8; 8]).write_volatile(ctrl) };
        }
        fence(Ordering::SeqCst);
        self.uv.doorbell_rung(qp.bf_page, reg_off, ctrl);
        qp.bf_offset ^= qp.bf_buf_size;
        idxs
    }

    /// Posts one receive (`mlx5_post_recv`): data segments at `rq.head`, a terminator if
    /// fewer than fit, then dbrec[0] = head. Returns the WQE index.
    pub fn post_recv(&self, qp: &mut Qp, sges: &[(u64, u32, u32)]) -> u16 {
        assert!(qp.rq_wqe_cnt > 0, "QP has no RQ");
        let idx = qp.rq_pi & (qp.rq_wqe_cnt as u16 - 1);
        let stride = 1u64 << qp.rq_wqe_shift;
        let base = qp.buf + u64::from(idx) * stride;
        write_data_segs(base, sges, (stride / 16) as usize);
        qp.rq_pi = qp.rq_pi.wrapping_add(1);
        fence(Ordering::Release);
        write_be32(qp.dbrec + 4 * mlx5::RCV_DBR as u64, u32::from(qp.rq_pi));
        idx
    }

    /// Posts one SRQ receive (`mlx5_post_srq_recv`): takes the free-list head, follows its
    /// link, fills the data segments, bumps the counter in dbrec[0]. Returns the index.
    pub fn post_srq_recv(&self, srq: &mut Srq, sges: &[(u64, u32, u32)]) -> u16 {
        assert_ne!(srq.head, srq.tail, "SRQ full");
        let idx = srq.head;
        let at = srq.buf + u64::from(u32::from(idx) * srq.stride);
        let next = WqeSrqNextSeg::read_from_bytes(&read_bytes(at, 16)).unwrap();
        srq.head = next.next_wqe_index.get();
        write_data_segs(at + 16, sges, srq.max_gs as usize);
        srq.counter = srq.counter.wrapping_add(1);
        fence(Ordering::Release);
        write_be32(srq.dbrec, u32::from(srq.counter));
        idx
    }

    /// Gives a consumed SRQ entry back to the free list (`mlx5_free_srq_wqe`).
    pub fn free_srq_wqe(&self, srq: &mut Srq, idx: u16) {
        let at = srq.buf + u64::from(u32::from(srq.tail) * srq.stride);
        write_bytes(at + 2, &idx.to_be_bytes());
        srq.tail = idx;
    }

    /// Arms `cq` (`mlx5_arm_cq`): [`Verbs::store_cq_arm`], then the model's doorbell entry
    /// point with the stored bytes.
    pub fn arm_cq(&self, cq: &Cq, solicited: bool) {
        let stored = self.store_cq_arm(cq, solicited);
        self.uv.doorbell_rung(0, CQ_DOORBELL as u32, stored);
    }

    /// The stores of an arm without telling the model: dbrec[1] = `sn<<28 | cmd | ci`, then
    /// the 64-bit big-endian `(word << 32) | cqn` at UAR page 0 + 0x20. Returns the bytes
    /// stored there (for interleaving two threads' arms of one shared doorbell).
    pub fn store_cq_arm(&self, cq: &Cq, solicited: bool) -> [u8; 8] {
        let command = if solicited { CQ_DB_REQ_NOT_SOL } else { CQ_DB_REQ_NOT };
        let word = cq_arm_word(cq.arm_sn & 3, command, cq.ci & mlx5::CQ_CI_MASK);
        write_be32(cq.dbrec + 4 * mlx5::CQ_ARM_DB as u64, word);
        fence(Ordering::SeqCst);
        let doorbell = cq_arm_doorbell(word, cq.cqn).to_be_bytes();
        // SAFETY: our mapping of UAR page 0; 0x20..0x28 is inside it and 8-byte aligned.
        unsafe { (self.uar[0].as_ptr().add(CQ_DOORBELL) as *mut [u8; 8]).write_volatile(doorbell) };
        fence(Ordering::SeqCst);
        doorbell
    }

    /// The model's doorbell entry point for a CQ arm whose bytes were `stored`.
    pub fn cq_doorbell_rung(&self, stored: [u8; 8]) {
        self.uv.doorbell_rung(0, CQ_DOORBELL as u32, stored);
    }

    /// Polls until `cond` holds, calling the model's progress entry point when it does not;
    /// panics with `what` after [`WAIT`].
    pub fn drive_until(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + WAIT;
        while !cond() {
            assert!(Instant::now() < deadline, "timed out after {WAIT:?} waiting for {what}");
            if !self.uv.progress() {
                std::thread::yield_now();
            }
        }
    }

    /// Polls `cq` (driving progress) until `n` CQEs came; panics after [`WAIT`].
    pub fn wait(&self, cq: &mut Cq, n: usize) -> Vec<Wc> {
        let mut out = Vec::new();
        let cqn = cq.cqn;
        self.drive_until(&format!("{n} CQE(s) on CQ {cqn:#x}"), || {
            while let Some(wc) = cq.poll_one() {
                out.push(wc);
            }
            out.len() >= n
        });
        assert_eq!(out.len(), n, "more CQEs than expected on CQ {cqn:#x}: {out:?}");
        out
    }

    /// Drives progress until the CQ holds a CQE, without consuming it.
    pub fn wait_for_cqe(&self, cq: &Cq) {
        self.drive_until(&format!("a CQE on CQ {:#x}", cq.cqn), || cq.has_cqe());
    }

    /// A few progress passes, so that a check that something did *not* happen (no CQE, no
    /// event) gives the model every chance to get it wrong.
    pub fn settle(&self) {
        for _ in 0..64 {
            self.uv.progress();
        }
    }

    /// The next 16-byte async event, if one is readable now.
    pub fn async_event(&self) -> Option<AsyncEventDesc> {
        if !readable(self.async_fd, 0) {
            return None;
        }
        let bytes = read_fd(self.async_fd, 64);
        assert_eq!(bytes.len(), size_of::<AsyncEventDesc>(), "async records are 16 bytes");
        Some(read(&bytes))
    }
}

/// One completion event read from a channel (`ibv_get_cq_event`): exactly 8 bytes.
pub fn comp_event(fd: RawFd) -> CompEventDesc {
    let bytes = read_fd(fd, 64);
    assert_eq!(bytes.len(), size_of::<CompEventDesc>(), "completion records are 8 bytes");
    read(&bytes)
}

fn run_command(
    uv: &Uverbs,
    command: u32,
    req: &[u8],
    driver: &[u8],
    out: usize,
) -> Result<Vec<u8>, Errno> {
    // The response buffer is lent to the device for the call: only its address is used.
    let mut resp = vec![0u64; out.div_ceil(8).max(1)];
    let resp_addr = resp.as_mut_ptr() as u64;
    let mut body = req.to_vec();
    if out > 0 {
        body[..8].copy_from_slice(&resp_addr.to_ne_bytes());
    }
    let len = size_of::<CmdHdr>() + body.len() + driver.len();
    let hdr = CmdHdr { command, in_words: (len / 4) as u16, out_words: (out / 4) as u16 };
    let buf = [hdr.as_bytes(), &body, driver].concat();
    assert_eq!(uv.write(&buf)?, buf.len(), "write() returns the count");
    // The device wrote the response through the pointer; read it back without assuming
    // the compiler saw that.
    let bytes = read_bytes(resp_addr, out);
    drop(resp);
    Ok(bytes)
}

fn write_data_segs(at: u64, sges: &[(u64, u32, u32)], max: usize) {
    assert!(sges.len() <= max, "more SGEs than the WQE holds");
    for (i, &(addr, len, lkey)) in sges.iter().enumerate() {
        let seg =
            WqeDataSeg { byte_count: U32::new(len), lkey: U32::new(lkey), addr: U64::new(addr) };
        write_bytes(at + 16 * i as u64, seg.as_bytes());
    }
    if sges.len() < max {
        let end =
            WqeDataSeg { byte_count: U32::new(0), lkey: U32::new(INVALID_LKEY), addr: U64::new(0) };
        write_bytes(at + 16 * sges.len() as u64, end.as_bytes());
    }
}

impl Qp {
    fn sq_addr(&self, wqebb: u32) -> u64 {
        self.buf + self.sq_offset + u64::from(wqebb & (self.sq_wqebbs - 1)) * SEND_WQE_BB as u64
    }
}

/// Builds one WQE at `sq.cur_post` (ctrl, [raddr], data segs | inline), writing it WQEBB by
/// WQEBB with the ring's wrap; returns (its index, ds).
fn write_wqe(qp: &mut Qp, wr: &SendWr) -> (u16, usize) {
    let idx = qp.sq_pi;
    let mut bytes = vec![0u8; 16];
    if let Some((addr, rkey)) = wr.remote {
        let seg =
            WqeRaddrSeg { raddr: U64::new(addr), rkey: U32::new(rkey), reserved: U32::new(0) };
        bytes.extend_from_slice(seg.as_bytes());
    }
    if let Some(data) = &wr.inline {
        bytes.extend_from_slice(&(INLINE_SEG | data.len() as u32).to_be_bytes());
        bytes.extend_from_slice(data);
        bytes.resize(bytes.len().next_multiple_of(16), 0);
    }
    for &(addr, len, lkey) in wr.sges.iter().filter(|s| s.1 != 0) {
        let seg =
            WqeDataSeg { byte_count: U32::new(len), lkey: U32::new(lkey), addr: U64::new(addr) };
        bytes.extend_from_slice(seg.as_bytes());
    }
    let ds = bytes.len() / 16;
    let mut fm_ce_se = 0;
    if wr.signaled {
        fm_ce_se |= wqe_ctrl::CQ_UPDATE;
    }
    if wr.solicited {
        fm_ce_se |= wqe_ctrl::SOLICITED;
    }
    let ctrl = WqeCtrlSeg {
        opmod_idx_opcode: U32::new(u32::from(idx) << 8 | u32::from(wr.opcode)),
        qpn_ds: U32::new(qp.qpn << 8 | ds as u32),
        fm_ce_se,
        imm: U32::new(wr.imm),
        ..Default::default()
    };
    bytes[..16].copy_from_slice(ctrl.as_bytes());
    let bbs = bytes.len().div_ceil(SEND_WQE_BB);
    bytes.resize(bbs * SEND_WQE_BB, 0);
    for (i, chunk) in bytes.chunks(SEND_WQE_BB).enumerate() {
        write_bytes(qp.sq_addr(u32::from(idx) + i as u32), chunk);
    }
    qp.sq_pi = qp.sq_pi.wrapping_add(bbs as u16);
    (idx, ds)
}
