//! Shared pieces of the driver's data-path tests: a private fabric directory per test, a
//! softhca device on it, and a peer process (this test binary re-executed in the `peer`
//! role) that owns QPs, CQs, an optional SRQ and 1 MiB of registered memory, driven by a
//! line protocol:
//!
//! | command | answer |
//! |---|---|
//! | `QP send_wr recv_wr send_sge recv_sge inline srq(0/1)` | `QP index qpn` |
//! | `CONNECT index remote_qpn our_psn their_psn` | `CONNECTED` |
//! | `RECV index wr_id sges` (`off:len,...` or `-`) | `POSTED` or `POSTERR index reason` |
//! | `RECVN index n wr_id0 off stride len` | `POSTED` |
//! | `SRECVN n wr_id0 off stride len` | `POSTED` (to the SRQ) |
//! | `SEND index wr_id sges` (signalled, not waited for) | `POSTED` |
//! | `POLL r\|s n` (receive or send CQ, up to n within [`WAIT`]; 0: one look) | `WC …` lines, `POLLED k` |
//! | `DUMP off len` / `FILL off hex` | `DATA hex` / `FILLED` |
//! | `EXIT` | (exits) |
//!
//! The peer runs softhca's progress thread, so one-sided operations aimed at it complete
//! while it sits reading its pipe, as they would on hardware.
#![allow(dead_code)]

#[path = "../../../softhca/tests/support/child.rs"]
pub mod child;

use child::{ChildProc, ROLE_ENV, read_command, say};
use ferrodat_driver::completion::{WcOpcode, WcStatus, WorkCompletion};
use ferrodat_driver::work_request::{Payload, RecvWr, SendOp, SendWr, Sge};
use ferrodat_driver::{
    Access, Context, Cq, CqOptions, MrBuf, Pd, Qp, QpAttr, QpCaps, QpInit, QpState, RemoteQp, Srq,
};
use ferrodat_softhca::Device;
use ferrodat_softhca::config::DeviceConfig;
use ferrodat_softhca::fabric::{FabricDir, SHM_DIR_ENV};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Bounded wait for completions: turns a hang into a failure, long enough for a loaded box.
pub const WAIT: Duration = Duration::from_secs(10);
/// The peer's registered memory.
pub const PEER_MR: usize = 1 << 20;
/// Path MTU 1024.
pub const MTU: u8 = 3;
/// PSNs: the parent's QPs send from 0x100, the peer's from 0x200.
pub const PARENT_PSN: u32 = 0x100;
pub const PEER_PSN: u32 = 0x200;
/// Peer configuration: CQ entries of both its CQs.
pub const PEER_CQE_ENV: &str = "FERRODAT_DRIVER_TEST_PEER_CQE";
/// Peer configuration: `max_wr,max_sge` of an SRQ to create.
pub const PEER_SRQ_ENV: &str = "FERRODAT_DRIVER_TEST_PEER_SRQ";

/// A private fabric directory under /dev/shm, removed on drop.
pub struct TestFabric {
    pub path: PathBuf,
}

impl TestFabric {
    pub fn new(tag: &str) -> TestFabric {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            PathBuf::from(format!("/dev/shm/ferrodat-drvtest-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create the fabric directory");
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

/// softhca0 (127.0.0.1) on `fabric`, with its progress thread running if `progress`.
pub fn device(fabric: FabricDir, progress: bool) -> Arc<Device> {
    let config = DeviceConfig { name: "softhca0".into(), addr: "127.0.0.1".parse().unwrap() };
    let dev = Device::new_in(config, fabric).expect("join the private fabric");
    if progress {
        dev.engine().start_progress_thread().expect("start the progress thread");
    }
    dev
}

pub fn cq(ctx: &Context, cqe: u32) -> Cq {
    Cq::new(ctx, &CqOptions { cqe, ..Default::default() }).expect("CREATE_CQ")
}

pub fn new_qp<'m>(pd: &Pd, scq: &Cq, rcq: &Cq, srq: Option<&Srq>, caps: QpCaps) -> Qp<'m> {
    Qp::new(pd, &QpInit { srq, ..QpInit::new(scq, rcq, caps) })
        .unwrap_or_else(|e| panic!("CREATE_QP {caps:?}: {e}"))
}

/// RESET→INIT→RTR→RTS towards `remote_qpn` (same host GID), with `rnr_retry`.
pub fn connect_qp(
    qp: &mut Qp<'_>,
    gid: [u8; 16],
    remote_qpn: u32,
    our_psn: u32,
    their_psn: u32,
    rnr_retry: u8,
) {
    let peer = RemoteQp { qpn: remote_qpn, psn: their_psn, gid, max_rd_atomic: 4 };
    qp.modify(&QpAttr::reset_to_init(Access::ALL)).expect("RESET→INIT");
    let (sgid_index, _) = qp.context().source_gid(1).expect("source GID");
    qp.modify(&QpAttr::init_to_rtr(&peer, MTU).source_gid_index(sgid_index)).expect("INIT→RTR");
    qp.modify(&QpAttr::rtr_to_rts(our_psn, 4).rnr_retry(rnr_retry)).expect("RTR→RTS");
    assert_eq!(qp.query().unwrap().state, Some(QpState::Rts));
}

/// Deterministic test bytes.
pub fn pattern(seed: u32, len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 13) as u8 ^ seed as u8)
        .collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// `off:len,off:len` (or `-` for none) of a registered buffer.
fn parse_sges<'a>(mr: &'a MrBuf, s: &str) -> Vec<Sge<'a>> {
    if s == "-" {
        return Vec::new();
    }
    s.split(',')
        .map(|p| {
            let (o, l) = p.split_once(':').expect("off:len");
            mr.sge(o.parse().unwrap(), l.parse().unwrap()).expect("SGE inside the peer MR")
        })
        .collect()
}

/// Polls `n` completions (fewer if `WAIT` passes first).
pub fn poll_n(cq: &mut Cq, n: usize) -> Vec<WorkCompletion> {
    let mut out = vec![WorkCompletion::default(); n];
    let got = cq.poll_wait(&mut out, WAIT);
    out.truncate(got);
    out
}

/// One poll without waiting: the completion waiting now, if any.
pub fn poll_now(cq: &mut Cq) -> Vec<WorkCompletion> {
    let mut out = [WorkCompletion::default(); 1];
    let n = cq.poll(&mut out);
    out[..n].to_vec()
}

fn wc_line(w: &WorkCompletion) -> String {
    format!(
        "WC {} {:?} {:?} {} {} {} {}",
        w.wr_id,
        w.status,
        w.opcode,
        w.byte_len,
        w.imm().map_or("-".to_string(), |i| i.to_string()),
        w.qpn,
        w.src_qp
    )
}

const ALL_OPCODES: [WcOpcode; 8] = [
    WcOpcode::Send,
    WcOpcode::RdmaWrite,
    WcOpcode::RdmaRead,
    WcOpcode::CompareSwap,
    WcOpcode::FetchAdd,
    WcOpcode::Nop,
    WcOpcode::Recv,
    WcOpcode::RecvRdmaWithImm,
];

/// A `WC` line back into a completion (no syndrome, solicited false).
fn parse_wc(rest: &str) -> WorkCompletion {
    let f: Vec<&str> = rest.split_whitespace().collect();
    let status = *WcStatus::ALL.iter().find(|s| format!("{s:?}") == f[1]).expect("status");
    let opcode = *ALL_OPCODES.iter().find(|o| format!("{o:?}") == f[2]).expect("opcode");
    let mut w = WorkCompletion::default();
    w.wr_id = f[0].parse().unwrap();
    w.status = status;
    w.opcode = opcode;
    w.byte_len = f[3].parse().unwrap();
    w.qpn = f[5].parse().unwrap();
    w.src_qp = f[6].parse().unwrap();
    w.with_imm((f[4] != "-").then(|| f[4].parse().unwrap()))
}

/// The peer process: runs when the role says so (call it from a `#[test]` named `peer_role`).
pub fn peer_main() {
    if std::env::var(ROLE_ENV).as_deref() != Ok("peer") {
        return;
    }
    let dev = device(FabricDir::from_env(), true);
    let ctx = Context::open_softhca(dev.clone()).expect("open softhca0");
    let pd = Pd::new(&ctx).unwrap();
    let mr = pd.alloc_mr(PEER_MR, Access::ALL).unwrap();
    let cqe: u32 = std::env::var(PEER_CQE_ENV).ok().and_then(|v| v.parse().ok()).unwrap_or(256);
    let mut scq = cq(&ctx, cqe);
    let mut rcq = cq(&ctx, cqe);
    let srq = std::env::var(PEER_SRQ_ENV).ok().map(|v| {
        let (w, s) = v.split_once(',').expect("max_wr,max_sge");
        Srq::new(&pd, w.parse().unwrap(), s.parse().unwrap()).expect("CREATE_SRQ")
    });
    let mut qps: Vec<Qp<'_>> = Vec::new();
    let gid = ctx.source_gid(1).unwrap().1;
    say(&format!("READY {} {}", mr.addr(), mr.rkey()));
    loop {
        let cmd = read_command();
        let w: Vec<&str> = cmd.split_whitespace().collect();
        let num = |i: usize| -> u64 { w[i].parse().unwrap() };
        match w.as_slice() {
            ["QP", ..] => {
                let caps = QpCaps {
                    max_send_wr: num(1) as u32,
                    max_recv_wr: num(2) as u32,
                    max_send_sge: num(3) as u32,
                    max_recv_sge: num(4) as u32,
                    max_inline_data: num(5) as u32,
                };
                let s = if num(6) == 1 {
                    Some(srq.as_ref().expect("the peer has an SRQ"))
                } else {
                    None
                };
                let qp = new_qp(&pd, &scq, &rcq, s, caps);
                say(&format!("QP {} {}", qps.len(), qp.qpn()));
                qps.push(qp);
            }
            ["CONNECT", ..] => {
                let i = num(1) as usize;
                connect_qp(&mut qps[i], gid, num(2) as u32, num(3) as u32, num(4) as u32, 7);
                say("CONNECTED");
            }
            ["RECV", i, wr_id, sges] => {
                let sges = parse_sges(&mr, sges);
                let wr = RecvWr { wr_id: wr_id.parse().unwrap(), sges: &sges };
                match qps[i.parse::<usize>().unwrap()].post_recv(&[wr]) {
                    Ok(()) => say("POSTED"),
                    Err(e) => say(&format!("POSTERR {} {:?}", e.index, e.reason)),
                }
            }
            ["RECVN", ..] | ["SRECVN", ..] => {
                let srq_post = w[0] == "SRECVN";
                let a = if srq_post { 1 } else { 2 };
                let (n, wr0, off, stride, len) =
                    (num(a), num(a + 1), num(a + 2), num(a + 3), num(a + 4));
                for k in 0..n {
                    let sge = mr.sge((off + k * stride) as usize, len as usize).unwrap();
                    let wr = RecvWr { wr_id: wr0 + k, sges: &[sge] };
                    let r = if srq_post {
                        srq.as_ref().expect("SRQ").post_recv(&[wr])
                    } else {
                        qps[num(1) as usize].post_recv(&[wr])
                    };
                    r.unwrap_or_else(|e| panic!("peer receive {k}: {e}"));
                }
                say("POSTED");
            }
            ["SEND", i, wr_id, sges] => {
                let sges = parse_sges(&mr, sges);
                let wr = SendWr::new(wr_id.parse().unwrap(), SendOp::Send, Payload::Sges(&sges));
                qps[i.parse::<usize>().unwrap()].post_send(&[wr]).expect("peer SEND");
                say("POSTED");
            }
            ["POLL", which, n] => {
                let cq = if *which == "s" { &mut scq } else { &mut rcq };
                // `POLL x 0`: one look without waiting (reports what is there, if any).
                let got = match n.parse().unwrap() {
                    0 => poll_now(cq),
                    n => poll_n(cq, n),
                };
                for c in &got {
                    say(&wc_line(c));
                }
                say(&format!("POLLED {}", got.len()));
            }
            ["DUMP", off, len] => {
                let mut b = vec![0u8; len.parse().unwrap()];
                mr.read(off.parse().unwrap(), &mut b).unwrap();
                say(&format!("DATA {}", hex(&b)));
            }
            ["FILL", off, data] => {
                mr.write(off.parse().unwrap(), &unhex(data)).unwrap();
                say("FILLED");
            }
            ["EXIT"] | [] => break,
            other => panic!("peer: unknown command {other:?}"),
        }
    }
    drop(qps);
    dev.engine().stop_progress_thread();
}

/// The parent side of a two-process test: our device (progress thread running, so the
/// completion channel fires while we sleep), context and PD, and the peer process.
/// Field order is drop order: the peer exits before the fabric directory goes.
pub struct Fixture {
    pub peer: ChildProc,
    pub ctx: Context,
    pub pd: Pd,
    pub gid: [u8; 16],
    pub peer_addr: u64,
    pub peer_rkey: u32,
    pub dev: Arc<Device>,
    pub fabric: TestFabric,
}

impl Fixture {
    /// Spawns the peer (extra environment in `env`) on a fresh private fabric.
    pub fn new(tag: &str, env: &[(&str, &str)]) -> Fixture {
        let fabric = TestFabric::new(tag);
        let dir = fabric.path.to_str().unwrap().to_string();
        let mut envs = vec![(SHM_DIR_ENV, dir.as_str())];
        envs.extend_from_slice(env);
        let mut peer = ChildProc::spawn("peer_role", "peer", &envs);
        let ready = peer.expect("READY");
        let f: Vec<&str> = ready.split_whitespace().collect();
        let dev = device(fabric.dir(), true);
        let ctx = Context::open_softhca(dev.clone()).expect("open softhca0");
        let pd = Pd::new(&ctx).unwrap();
        let gid = ctx.source_gid(1).unwrap().1;
        Fixture {
            peer,
            ctx,
            pd,
            gid,
            peer_addr: f[0].parse().unwrap(),
            peer_rkey: f[1].parse().unwrap(),
            dev,
            fabric,
        }
    }

    /// A peer QP (on its own RQ, or its SRQ): (index, qpn).
    pub fn peer_qp(&mut self, caps: QpCaps, srq: bool) -> (usize, u32) {
        self.peer.send(&format!(
            "QP {} {} {} {} {} {}",
            caps.max_send_wr,
            caps.max_recv_wr,
            caps.max_send_sge,
            caps.max_recv_sge,
            caps.max_inline_data,
            u8::from(srq)
        ));
        let a = self.peer.expect("QP");
        let (i, q) = a.split_once(' ').unwrap();
        (i.parse().unwrap(), q.parse().unwrap())
    }

    /// Connects our `qp` and peer QP `peer` both ways; our RNR retry count is `rnr_retry`.
    pub fn connect(&mut self, qp: &mut Qp<'_>, peer: (usize, u32), rnr_retry: u8) {
        self.peer.send(&format!("CONNECT {} {} {PEER_PSN} {PARENT_PSN}", peer.0, qp.qpn()));
        self.peer.expect("CONNECTED");
        connect_qp(qp, self.gid, peer.1, PARENT_PSN, PEER_PSN, rnr_retry);
    }

    /// Runs a peer command that answers `POSTED`.
    pub fn peer_post(&mut self, cmd: &str) {
        self.peer.send(cmd);
        self.peer.expect("POSTED");
    }

    /// Up to `n` completions of the peer's receive (`r`) or send (`s`) CQ.
    pub fn peer_poll(&mut self, which: &str, n: usize) -> Vec<WorkCompletion> {
        self.peer.send(&format!("POLL {which} {n}"));
        let mut out = Vec::new();
        loop {
            let line = self.peer.line();
            if let Some(rest) = line.strip_prefix("WC ") {
                out.push(parse_wc(rest));
            } else if line.starts_with("POLLED") {
                return out;
            } else {
                panic!("unexpected peer line {line:?}");
            }
        }
    }

    pub fn peer_data(&mut self, off: usize, len: usize) -> Vec<u8> {
        self.peer.send(&format!("DUMP {off} {len}"));
        unhex(&self.peer.expect("DATA"))
    }

    pub fn peer_fill(&mut self, off: usize, data: &[u8]) {
        self.peer.send(&format!("FILL {off} {}", hex(data)));
        self.peer.expect("FILLED");
    }

    /// Where `off` of the peer's memory is, for one-sided operations.
    pub fn remote(&self, off: usize) -> ferrodat_driver::work_request::Remote {
        ferrodat_driver::work_request::Remote {
            addr: self.peer_addr + off as u64,
            rkey: self.peer_rkey,
        }
    }

    /// Ends the peer and requires its clean exit.
    pub fn finish(mut self) {
        self.peer.send("EXIT");
        self.peer.finish();
        self.dev.engine().stop_progress_thread();
    }
}
