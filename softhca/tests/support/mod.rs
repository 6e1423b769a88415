//! A minimal mlx5 "driver" for softhca's own tests: it owns queue buffers and doorbell
//! records, writes WQEs built from `ferrodat_abi::mlx5` types, rings the model's doorbell
//! entry point and polls CQE64s by the ownership rule — what a real driver does, written
//! independently of ferrodat-driver so the model is tested against the format, not
//! against our driver.
#![allow(dead_code)]

pub mod child;
pub mod completion;
pub mod fuzz_rng;

pub use completion::{Wc, decode_cqe};

use ferrodat_abi::mlx5::{
    CQE_OWNER_MASK, INLINE_SEG, INVALID_LKEY, SEND_WQE_BB, WqeAtomicSeg, WqeCtrlSeg, WqeDataSeg,
    WqeRaddrSeg, cq_arm_word, cqe_opcode, opcode, wqe_ctrl,
};
use ferrodat_abi::uverbs::{access, qp_state};
use ferrodat_softhca::fabric::FabricDir;
use ferrodat_softhca::hca::app_memory::AppSpan;
use ferrodat_softhca::hca::engine::{CqSetup, Engine};
use ferrodat_softhca::hca::mr::MemoryRegion;
use ferrodat_softhca::hca::queue_pair::{QpAttributes, QpSetup};
use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerocopy::IntoBytes;
use zerocopy::byteorder::big_endian::{U32, U64};

/// Page-aligned zeroed memory the "application" owns.
pub struct Buffer {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: plain memory; tests share it only through raw addresses like an application.
unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}

impl Buffer {
    pub fn new(len: usize) -> Self {
        let layout = Layout::from_size_align(len.max(1), 4096).unwrap();
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Buffer { ptr, len }
    }
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn span(&self) -> AppSpan {
        // SAFETY: the buffer outlives the engine objects in every test (dropped last).
        unsafe { AppSpan::new(self.ptr as usize, self.len) }
    }
    pub fn write(&self, offset: usize, data: &[u8]) {
        assert!(offset + data.len() <= self.len);
        // SAFETY: in bounds.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(offset), data.len()) };
    }
    pub fn read(&self, offset: usize, len: usize) -> Vec<u8> {
        assert!(offset + len <= self.len);
        let mut v = vec![0u8; len];
        // SAFETY: in bounds; volatile-free copy is fine in tests after a completion.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset), v.as_mut_ptr(), len) };
        v
    }
    /// Copies `out.len()` bytes from `offset` into `out` (no allocation).
    pub fn read_into(&self, offset: usize, out: &mut [u8]) {
        assert!(offset + out.len() <= self.len);
        // SAFETY: in bounds.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset), out.as_mut_ptr(), out.len()) };
    }
    pub fn fill(&self, byte: u8) {
        // SAFETY: in bounds.
        unsafe { std::ptr::write_bytes(self.ptr, byte, self.len) };
    }
    pub fn write_be32_volatile(&self, offset: usize, v: u32) {
        // SAFETY: in bounds.
        unsafe { std::ptr::write_volatile(self.ptr.add(offset) as *mut [u8; 4], v.to_be_bytes()) };
    }
    pub fn read_u8_volatile(&self, offset: usize) -> u8 {
        // SAFETY: in bounds.
        unsafe { std::ptr::read_volatile(self.ptr.add(offset)) }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { dealloc(self.ptr, Layout::from_size_align(self.len.max(1), 4096).unwrap()) };
    }
}

/// A private fabric directory per test, removed at the end.
pub struct TestFabric {
    pub dir: FabricDir,
    path: std::path::PathBuf,
}

impl TestFabric {
    pub fn new(tag: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::path::PathBuf::from(format!(
            "/dev/shm/ferrodat-test-{tag}-{}-{n}",
            std::process::id()
        ));
        TestFabric { dir: FabricDir::new(&path), path }
    }
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

/// Removes the [`TestFabric`] directories of process `pid`: a child test process that died
/// by a signal could not remove its own.
pub fn remove_test_fabrics_of(pid: u32) {
    let Ok(entries) = std::fs::read_dir("/dev/shm") else { return };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        // ferrodat-test-<tag>-<pid>-<n>, the tag possibly with dashes of its own.
        let Some(rest) = name.strip_prefix("ferrodat-test-") else { continue };
        let mut from_end = rest.rsplitn(3, '-');
        let (_n, owner) = (from_end.next(), from_end.next());
        if owner.and_then(|o| o.parse::<u32>().ok()) == Some(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Drop for TestFabric {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

pub const LOCALHOST_GID: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1];

/// A registered buffer.
pub struct Mr {
    pub buf: Buffer,
    pub key: u32,
}

impl Mr {
    pub fn new(engine: &Engine, pdn: u32, len: usize, access_flags: u32) -> Mr {
        let buf = Buffer::new(len);
        let key = engine.registry().alloc_mkey();
        engine.add_memory_region(MemoryRegion {
            key,
            pdn,
            iova: buf.addr(),
            memory: buf.span(),
            access: access_flags,
        });
        Mr { buf, key }
    }
    pub fn addr(&self) -> u64 {
        self.buf.addr()
    }
}

/// A registered buffer in a shared memfd mapping, exported as REG_MR exports one (peers
/// place RDMA WRITEs into it directly). Dropping it deregisters (withdraws) it.
pub struct SharedMr {
    pub engine: Arc<Engine>,
    pub addr: u64,
    pub len: usize,
    pub key: u32,
    _memfd: std::fs::File,
}

impl SharedMr {
    pub fn new(engine: &Arc<Engine>, pdn: u32, len: usize, access_flags: u32) -> SharedMr {
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: a valid NUL-terminated name; the result is checked.
        let fd = unsafe {
            libc::memfd_create(
                c"softhca-test-shared-mr".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
        // SAFETY: the descriptor just created, owned from here on.
        let memfd = unsafe { std::fs::File::from_raw_fd(fd) };
        memfd.set_len(len as u64).unwrap();
        // SAFETY: a fresh shared mapping of our memfd; checked below, unmapped on drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                memfd.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED, "mmap: {}", std::io::Error::last_os_error());
        let addr = p as u64;
        let key = engine.registry().alloc_mkey();
        engine.add_memory_region(MemoryRegion {
            key,
            pdn,
            iova: addr,
            // SAFETY: the mapping lives until drop, after the region is removed.
            memory: unsafe { AppSpan::new(addr as usize, len) },
            access: access_flags,
        });
        if ferrodat_softhca::fabric::exported_for(access_flags) {
            let backing = ferrodat_softhca::shared_backing::find(addr, len as u64)
                .expect("a shared memfd mapping has a backing file");
            let region = ferrodat_softhca::fabric::ExportedRegion {
                key,
                pdn,
                access: access_flags,
                iova: addr,
                length: len as u64,
                file_offset: backing.file_offset,
            };
            engine.export_memory_region(region, backing.file).unwrap();
        }
        SharedMr { engine: engine.clone(), addr, len, key, _memfd: memfd }
    }

    /// The memfd's device (major, minor) and inode, as `/proc/self/maps` lists mappings.
    pub fn file_id(&self) -> (u64, u64, u64) {
        use std::os::unix::fs::MetadataExt;
        let m = self._memfd.metadata().unwrap();
        let dev = m.dev();
        let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
        let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
        (major, minor, m.ino())
    }

    pub fn read(&self, offset: usize, len: usize) -> Vec<u8> {
        assert!(offset + len <= self.len);
        // SAFETY: inside our live mapping; volatile, as the peer may write it.
        (0..len)
            .map(|i| unsafe {
                std::ptr::read_volatile((self.addr as usize + offset + i) as *const u8)
            })
            .collect()
    }

    pub fn fill(&self, byte: u8) {
        // SAFETY: our live mapping, nobody writes it at this point of a test.
        unsafe { std::ptr::write_bytes(self.addr as *mut u8, byte, self.len) };
    }

    /// Seals the file against new writable mappings (F_SEAL_FUTURE_WRITE), as a
    /// producer of read-only data would; the mapping made at creation stays writable.
    pub fn seal_future_writes(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl on our own descriptor; the result is checked.
        let rc = unsafe {
            libc::fcntl(self._memfd.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_FUTURE_WRITE)
        };
        assert_eq!(rc, 0, "F_SEAL_FUTURE_WRITE: {}", std::io::Error::last_os_error());
    }

    pub fn write(&self, offset: usize, data: &[u8]) {
        assert!(offset + data.len() <= self.len);
        // SAFETY: in bounds of our live mapping; nobody else writes it at this point.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                (self.addr as usize + offset) as *mut u8,
                data.len(),
            )
        };
    }
}

impl Drop for SharedMr {
    fn drop(&mut self) {
        self.engine.remove_memory_region(self.key >> 8);
        // SAFETY: the mapping made in `new`; the region using it is gone.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
    }
}

/// The consumer side of a CQ.
pub struct Cq {
    pub cqn: u32,
    pub buf: Buffer,
    pub dbrec: Buffer,
    pub ncqe: u32,
    pub ci: u32,
    pub arm_sn: u32,
}

impl Cq {
    pub fn new(engine: &Engine, ncqe: u32) -> Cq {
        let buf = Buffer::new(64 * ncqe as usize);
        for i in 0..ncqe as usize {
            buf.write(i * 64 + 63, &[0xf0]); // INVALID, owner 0, as rdma-core initialises
        }
        let dbrec = Buffer::new(64);
        let cqn = engine.registry().alloc_cqn();
        engine.add_cq(CqSetup {
            cqn,
            user_handle: 0xc0ffee00 | u64::from(cqn),
            buf: buf.span(),
            dbrec: dbrec.span(),
            ncqe,
            cqe_size: 64,
            channel: None,
            async_events: None,
            flags: Default::default(),
        });
        Cq { cqn, buf, dbrec, ncqe, ci: 0, arm_sn: 0 }
    }

    /// One CQE if software owns the next entry (as mlx5's poll: check the owner byte,
    /// read the entry after an acquire fence, release it through the doorbell record).
    pub fn poll_one(&mut self) -> Option<Wc> {
        let at = (self.ci & (self.ncqe - 1)) as usize * 64;
        let op_own = self.buf.read_u8_volatile(at + 63);
        let sw_owner = self.ci & self.ncqe != 0;
        if op_own >> 4 == cqe_opcode::INVALID || (op_own & CQE_OWNER_MASK != 0) != sw_owner {
            return None;
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        let mut bytes = [0u8; 64];
        self.buf.read_into(at, &mut bytes);
        let wc = decode_cqe(&bytes);
        self.ci = self.ci.wrapping_add(1);
        self.dbrec.write_be32_volatile(0, self.ci & 0xffffff);
        Some(wc)
    }

    /// Polls, calling the engine's progress, until `n` CQEs arrived or `timeout` passed.
    pub fn wait(&mut self, engine: &Engine, n: usize, timeout: Duration) -> Vec<Wc> {
        let start = Instant::now();
        let mut out = Vec::new();
        while out.len() < n {
            match self.poll_one() {
                Some(wc) => out.push(wc),
                None => {
                    if start.elapsed() > timeout {
                        break;
                    }
                    if !engine.progress() {
                        std::thread::yield_now();
                    }
                }
            }
        }
        out
    }

    /// Arms for the next (or next solicited) completion, as mlx5_arm_cq does.
    pub fn arm(&mut self, engine: &Engine, solicited: bool) {
        let cmd = if solicited { 1 << 24 } else { 0 };
        let word = cq_arm_word(self.arm_sn & 3, cmd, self.ci & 0xffffff);
        self.dbrec.write_be32_volatile(4, word);
        engine.arm_cq(self.cqn, word);
    }
}

/// One WQE to post.
#[derive(Clone, Debug, Default)]
pub struct SendWr {
    pub opcode: u8,
    pub sges: Vec<(u64, u32, u32)>, // addr, len, lkey
    pub inline: Option<Vec<u8>>,
    pub remote: Option<(u64, u32)>,
    pub atomic: Option<(u64, u64)>,
    pub imm: u32,
    pub signaled: bool,
    pub solicited: bool,
    pub fence: bool,
}

/// The driver side of a QP.
pub struct Qp {
    pub qpn: u32,
    pub sq: Buffer,
    pub sq_wqebbs: u32,
    pub rq: Buffer,
    pub rq_wqe_count: u32,
    pub rq_stride: usize,
    pub dbrec: Buffer,
    pub sq_pi: u16,
    pub rq_pi: u16,
    pub pdn: u32,
}

pub struct QpSpec {
    pub pdn: u32,
    pub send_cqn: u32,
    pub recv_cqn: u32,
    pub srqn: Option<u32>,
    pub sq_wqebbs: u32,
    pub rq_wqe_count: u32,
    pub max_recv_sge: u32,
    pub sq_sig_all: bool,
}

impl QpSpec {
    /// A QP whose sends and receives complete on `cq`: its own receive queue with one
    /// segment per entry, selective signalling.
    pub fn on_cq(pdn: u32, cq: &Cq, sq_wqebbs: u32, rq_wqe_count: u32) -> QpSpec {
        QpSpec {
            pdn,
            send_cqn: cq.cqn,
            recv_cqn: cq.cqn,
            srqn: None,
            sq_wqebbs,
            rq_wqe_count,
            max_recv_sge: 1,
            sq_sig_all: false,
        }
    }
}

impl Qp {
    pub fn new(engine: &Engine, spec: QpSpec) -> Qp {
        let alloc = engine.alloc_qpn().unwrap();
        let rq_stride = (16 * spec.max_recv_sge.max(1) as usize).next_power_of_two();
        let sq = Buffer::new(spec.sq_wqebbs as usize * SEND_WQE_BB);
        let rq = Buffer::new((spec.rq_wqe_count as usize * rq_stride).max(64));
        let dbrec = Buffer::new(64);
        engine
            .add_qp(
                alloc,
                QpSetup {
                    qpn: alloc.qpn,
                    user_handle: u64::from(alloc.qpn),
                    uidx: alloc.qpn & 0xffff,
                    cqe_version: 1,
                    pdn: spec.pdn,
                    send_cqn: spec.send_cqn,
                    recv_cqn: spec.recv_cqn,
                    srqn: spec.srqn,
                    sq: sq.span(),
                    sq_wqebbs: spec.sq_wqebbs,
                    rq: rq.span(),
                    rq_wqe_count: spec.rq_wqe_count,
                    rq_wqe_shift: rq_stride.trailing_zeros(),
                    rq_skip: 0,
                    dbrec: dbrec.span(),
                    sq_sig_all: spec.sq_sig_all,
                },
                None,
            )
            .unwrap();
        Qp {
            qpn: alloc.qpn,
            sq,
            sq_wqebbs: spec.sq_wqebbs,
            rq,
            rq_wqe_count: spec.rq_wqe_count,
            rq_stride,
            dbrec,
            sq_pi: 0,
            rq_pi: 0,
            pdn: spec.pdn,
        }
    }

    /// RESET -> INIT -> RTR -> RTS towards (gid, dest_qpn).
    pub fn connect(&self, engine: &Engine, gid: [u8; 16], dest_qpn: u32, attrs: QpAttributes) {
        let a = QpAttributes { dest_qpn, dgid: gid, ..attrs };
        engine.modify_qp(self.qpn, qp_state::INIT, a);
        engine.modify_qp(self.qpn, qp_state::RTR, a);
        engine.modify_qp(self.qpn, qp_state::RTS, a);
    }

    /// Writes one WQE at the producer position, segment by segment straight into the send
    /// queue (wrapping at the ring end like mlx5); returns its WQE index.
    pub fn write_wqe(&mut self, wr: &SendWr) -> u16 {
        let idx = self.sq_pi;
        let ring_bytes = self.sq_wqebbs as usize * SEND_WQE_BB;
        let base = usize::from(idx) * SEND_WQE_BB;
        let sq = &self.sq;
        let mut len = 16;
        let put = |len: &mut usize, seg: &[u8]| {
            for (i, chunk) in seg.chunks(16).enumerate() {
                let at = (base + *len + i * 16) & (ring_bytes - 1);
                sq.write(at, chunk);
            }
            *len += seg.len();
        };
        let mut flags = 0;
        if wr.signaled {
            flags |= wqe_ctrl::CQ_UPDATE;
        }
        if wr.solicited {
            flags |= wqe_ctrl::SOLICITED;
        }
        if wr.fence {
            flags |= wqe_ctrl::FENCE;
        }
        if let Some((addr, rkey)) = wr.remote {
            let seg =
                WqeRaddrSeg { raddr: U64::new(addr), rkey: U32::new(rkey), reserved: U32::new(0) };
            put(&mut len, seg.as_bytes());
        }
        if let Some((swap, cmp)) = wr.atomic {
            let seg = WqeAtomicSeg { swap_add: U64::new(swap), compare: U64::new(cmp) };
            put(&mut len, seg.as_bytes());
        }
        if let Some(data) = &wr.inline {
            // The inline segment: its byte count, then the data, padded to 16 bytes.
            let mut seg = [0u8; 16];
            seg[..4].copy_from_slice(&(INLINE_SEG | data.len() as u32).to_be_bytes());
            let first = data.len().min(12);
            seg[4..4 + first].copy_from_slice(&data[..first]);
            put(&mut len, &seg);
            for chunk in data[first..].chunks(16) {
                let mut seg = [0u8; 16];
                seg[..chunk.len()].copy_from_slice(chunk);
                put(&mut len, &seg);
            }
        }
        for &(addr, l, lkey) in &wr.sges {
            let seg =
                WqeDataSeg { byte_count: U32::new(l), lkey: U32::new(lkey), addr: U64::new(addr) };
            put(&mut len, seg.as_bytes());
        }
        let ds = len / 16;
        let ctrl = WqeCtrlSeg {
            opmod_idx_opcode: U32::new(u32::from(idx) << 8 | u32::from(wr.opcode)),
            qpn_ds: U32::new(self.qpn << 8 | ds as u32),
            fm_ce_se: flags,
            imm: U32::new(wr.imm),
            ..Default::default()
        };
        self.sq.write(base & (ring_bytes - 1), ctrl.as_bytes());
        self.sq_pi = self.sq_pi.wrapping_add(len.div_ceil(64) as u16);
        idx
    }

    /// Publishes the SQ counter and rings the doorbell.
    pub fn ring(&self, engine: &Engine) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        self.dbrec.write_be32_volatile(4, u32::from(self.sq_pi));
        engine.sq_doorbell(self.qpn);
    }

    pub fn post_send(&mut self, engine: &Engine, wr: &SendWr) -> u16 {
        let idx = self.write_wqe(wr);
        self.ring(engine);
        idx
    }

    /// Posts one receive with these (addr, len, lkey) segments.
    pub fn post_recv(&mut self, sges: &[(u64, u32, u32)]) -> u16 {
        let idx = self.rq_pi & (self.rq_wqe_count as u16 - 1);
        let base = idx as usize * self.rq_stride;
        let max = self.rq_stride / 16;
        for (i, &(addr, len, lkey)) in sges.iter().enumerate() {
            self.rq.write(
                base + i * 16,
                WqeDataSeg {
                    byte_count: U32::new(len),
                    lkey: U32::new(lkey),
                    addr: U64::new(addr),
                }
                .as_bytes(),
            );
        }
        if sges.len() < max {
            self.rq.write(
                base + sges.len() * 16,
                WqeDataSeg {
                    byte_count: U32::new(0),
                    lkey: U32::new(INVALID_LKEY),
                    addr: U64::new(0),
                }
                .as_bytes(),
            );
        }
        self.rq_pi = self.rq_pi.wrapping_add(1);
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        self.dbrec.write_be32_volatile(0, u32::from(self.rq_pi));
        idx
    }
}

/// Default RC attributes like ibv_rc_pingpong's, with every remote right.
pub fn rc_attrs() -> QpAttributes {
    QpAttributes {
        access_flags: access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC,
        sq_psn: 0x1234,
        rq_psn: 0x1234,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        min_rnr_timer: 1,
        max_rd_atomic: 4,
        ..Default::default()
    }
}

pub fn send(sges: Vec<(u64, u32, u32)>) -> SendWr {
    SendWr { opcode: opcode::SEND, sges, signaled: true, ..Default::default() }
}

/// A signalled RDMA WRITE from `sges` to `remote` (address, rkey).
pub fn write_wr(sges: Vec<(u64, u32, u32)>, remote: (u64, u32)) -> SendWr {
    SendWr {
        opcode: opcode::RDMA_WRITE,
        sges,
        remote: Some(remote),
        signaled: true,
        ..Default::default()
    }
}

/// A signalled RDMA READ into `sges` from `remote` (address, rkey).
pub fn read_wr(sges: Vec<(u64, u32, u32)>, remote: (u64, u32)) -> SendWr {
    SendWr { opcode: opcode::RDMA_READ, ..write_wr(sges, remote) }
}

/// A loopback pair on one engine: A and B connected to each other, each with its CQ.
pub struct Pair {
    pub engine: Arc<Engine>,
    pub a: Qp,
    pub b: Qp,
    pub cq_a: Cq,
    pub cq_b: Cq,
    pub pdn: u32,
    _fabric: TestFabric,
}

pub fn pair(tag: &str, attrs: QpAttributes) -> Pair {
    pair_with(tag, attrs, 64, 64)
}

pub fn pair_with(tag: &str, attrs: QpAttributes, sq_wqebbs: u32, rq: u32) -> Pair {
    pair_signalling(tag, attrs, sq_wqebbs, rq, false)
}

/// As [`pair_with`], both QPs created with `sq_sig_all` as given.
pub fn pair_signalling(
    tag: &str,
    attrs: QpAttributes,
    sq_wqebbs: u32,
    rq: u32,
    sq_sig_all: bool,
) -> Pair {
    pair_of(tag, attrs, attrs, sq_wqebbs, rq, sq_sig_all)
}

/// As [`pair_signalling`], A connected with `attrs_a` and B with `attrs_b` (say, for
/// different PSNs each way: A's `sq_psn` is B's `rq_psn` and the other way round).
pub fn pair_of(
    tag: &str,
    attrs_a: QpAttributes,
    attrs_b: QpAttributes,
    sq_wqebbs: u32,
    rq: u32,
    sq_sig_all: bool,
) -> Pair {
    let fabric = TestFabric::new(tag);
    let engine = Engine::open_in(fabric.dir.clone(), "softhca0", LOCALHOST_GID).unwrap();
    let pdn = engine.registry().alloc_pdn();
    let cq_a = Cq::new(&engine, 256);
    let cq_b = Cq::new(&engine, 256);
    let spec = |cq: &Cq| QpSpec {
        pdn,
        send_cqn: cq.cqn,
        recv_cqn: cq.cqn,
        srqn: None,
        sq_wqebbs,
        rq_wqe_count: rq,
        max_recv_sge: 16,
        sq_sig_all,
    };
    let a = Qp::new(&engine, spec(&cq_a));
    let b = Qp::new(&engine, spec(&cq_b));
    a.connect(&engine, LOCALHOST_GID, b.qpn, attrs_a);
    b.connect(&engine, LOCALHOST_GID, a.qpn, attrs_b);
    Pair { engine, a, b, cq_a, cq_b, pdn, _fabric: fabric }
}

pub const ALL_ACCESS: u32 =
    access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC;
