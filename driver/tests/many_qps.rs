//! Many connections between one pair of processes, as an MPI job or a storage target has
//! them: 256 connected RC QPs per process, each moving a few SENDs and RDMA WRITEs both
//! ways at once, on one shared CQ, on a CQ per QP, and sleeping on a completion channel.
//! softhca polls the inbound rings of a few recently busy QPs directly and relies on
//! notifications for the rest (`MAX_POLLED_RINGS` in `hca/engine.rs`): traffic on many
//! more rings than that must flow without waiting for a retransmission timer.
//!
//! Each side runs the same exchange; the peer is this binary re-executed (role
//! `many-peer`), and the two meet through lines on its stdin/stdout.

mod support;

use ferrodat_driver::completion::{WcOpcode, WcStatus, WorkCompletion};
use ferrodat_driver::work_request::{Payload, RecvWr, Remote, SendFlags, SendOp, SendWr};
use ferrodat_driver::{
    Access, CompChannel, Context, Cq, CqOptions, MrBuf, Pd, Qp, QpAttr, QpCaps, QpInit, RemoteQp,
};
use ferrodat_softhca::fabric::{FabricDir, SHM_DIR_ENV};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use support::child::{ChildProc, ROLE_ENV, read_command, say};
use support::{MTU, TestFabric, device, pattern};

/// QPs per process.
const QPS: usize = 256;
/// Active QPs in the successive rounds (the last is all of them).
const ROUNDS: [usize; 4] = [1, 8, 64, QPS];
/// SENDs and RDMA WRITEs each QP posts per round (each way).
const PER_QP: usize = 2;
/// Bytes of each message slot; messages are 1..=SLOT bytes, some inline.
const SLOT: usize = 1536;
/// ACK timeout exponent of every QP: 4.096 µs × 2^20 ≈ 4.3 s. A message that only a
/// retransmission would deliver (a lost notification) shows as a round that takes longer
/// than [`ROUND_LIMIT`].
const ACK_TIMEOUT: u8 = 20;
/// The longest a round may take: well under the ACK timeout, far above what a loaded
/// 2-core machine needs (tens of milliseconds for the largest round in a debug build).
const ROUND_LIMIT: Duration = Duration::from_secs(2);
/// Environment of the peer: the CQ mode.
const MODE_ENV: &str = "FERRODAT_MANY_QPS_MODE";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// One CQ for every QP's sends and receives, busy-polled.
    SharedCq,
    /// A CQ per QP, polled in turn.
    CqPerQp,
    /// One CQ on a completion channel: the consumer sleeps, softhca's progress thread
    /// moves the packets.
    SharedCqEvents,
}

impl Mode {
    fn parse(s: &str) -> Mode {
        match s {
            "shared" => Mode::SharedCq,
            "per-qp" => Mode::CqPerQp,
            "events" => Mode::SharedCqEvents,
            other => panic!("unknown mode {other}"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::SharedCq => "shared",
            Mode::CqPerQp => "per-qp",
            Mode::SharedCqEvents => "events",
        }
    }
}

/// How a side talks to the other: the parent through the child's pipes, the child
/// through its stdin and stdout.
trait Line {
    fn tell(&mut self, line: &str);
    fn hear(&mut self, word: &str) -> String;
}

impl Line for ChildProc {
    fn tell(&mut self, line: &str) {
        self.send(line);
    }
    fn hear(&mut self, word: &str) -> String {
        self.expect(word)
    }
}

struct ToParent;

impl Line for ToParent {
    fn tell(&mut self, line: &str) {
        say(line);
    }
    fn hear(&mut self, word: &str) -> String {
        let line = read_command();
        line.strip_prefix(word)
            .unwrap_or_else(|| panic!("expected {word}, got {line:?}"))
            .trim()
            .to_string()
    }
}

/// The bytes side `side` sends as message `k` (0..2*PER_QP: writes, then sends) of QP
/// `qp` in round `round`.
fn message(side: u32, round: usize, qp: usize, k: usize) -> Vec<u8> {
    let seed = (side << 28) ^ ((round as u32) << 20) ^ ((qp as u32) << 4) ^ k as u32;
    let len = 1 + (qp * 131 + k * 517 + round * 71) % SLOT;
    pattern(seed, len)
}

/// Where message `k` of QP `qp` lands in the receiver's memory: the receive area first
/// (PER_QP slots per QP), then the write area.
fn slot(qp: usize, k: usize) -> usize {
    (qp * 2 * PER_QP + k) * SLOT
}

/// The wr_id of message `k` of QP `qp` (receives use the same numbering).
fn wr_id(qp: usize, k: usize) -> u64 {
    ((qp as u64) << 16) | k as u64
}

/// One side of the exchange: `QPS` connected QPs, the CQ(s) of `mode`, and memory for
/// what it sends (`src`) and what the peer sends it (`dst`).
fn run_side(side: u32, mode: Mode, ctx: &Context, line: &mut dyn Line) -> Vec<(usize, Duration)> {
    let bytes = QPS * 2 * PER_QP * SLOT;
    let pd = Pd::new(ctx).unwrap();
    let src: MrBuf = pd.alloc_mr(bytes, Access::ALL).unwrap();
    let dst: MrBuf = pd.alloc_mr(bytes, Access::ALL).unwrap();
    let channel = (mode == Mode::SharedCqEvents).then(|| CompChannel::new(ctx).unwrap());
    let per_qp_cqes = (3 * PER_QP) as u32;
    let mut cqs: Vec<Cq> = match mode {
        Mode::SharedCq | Mode::SharedCqEvents => vec![
            Cq::new(
                ctx,
                &CqOptions {
                    cqe: (QPS * 3 * PER_QP) as u32,
                    channel: channel.as_ref(),
                    ..Default::default()
                },
            )
            .expect("CREATE_CQ (shared)"),
        ],
        Mode::CqPerQp => (0..QPS)
            .map(|i| {
                Cq::new(ctx, &CqOptions { cqe: per_qp_cqes, ..Default::default() })
                    .unwrap_or_else(|e| panic!("CREATE_CQ {i}: {e}"))
            })
            .collect(),
    };
    let caps = QpCaps {
        max_send_wr: (2 * PER_QP) as u32,
        max_recv_wr: PER_QP as u32,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 64,
    };
    let mut qps: Vec<Qp<'_>> = (0..QPS)
        .map(|i| {
            let cq = &cqs[if mode == Mode::CqPerQp { i } else { 0 }];
            let init = QpInit::new(cq, cq, caps);
            Qp::new(&pd, &init).unwrap_or_else(|e| panic!("CREATE_QP {i}: {e}"))
        })
        .collect();
    let qpns: Vec<String> = qps.iter().map(|q| q.qpn().to_string()).collect();
    line.tell(&format!("SETUP {} {} {}", dst.addr(), dst.rkey(), qpns.join(",")));
    let setup = line.hear("SETUP");
    let f: Vec<&str> = setup.split_whitespace().collect();
    let (peer_addr, peer_rkey): (u64, u32) = (f[0].parse().unwrap(), f[1].parse().unwrap());
    let peer_qpns: Vec<u32> = f[2].split(',').map(|q| q.parse().unwrap()).collect();
    assert_eq!(peer_qpns.len(), QPS);
    let gid = ctx.source_gid(1).unwrap();
    let (our_psn, their_psn) = if side == 0 { (0x100, 0x200) } else { (0x200, 0x100) };
    for (qp, &remote) in qps.iter_mut().zip(&peer_qpns) {
        let peer = RemoteQp { qpn: remote, psn: their_psn, gid: gid.1, max_rd_atomic: 1 };
        qp.modify(&QpAttr::reset_to_init(Access::ALL)).unwrap();
        qp.modify(&QpAttr::init_to_rtr(&peer, MTU).source_gid_index(gid.0)).unwrap();
        qp.modify(&QpAttr::rtr_to_rts(our_psn, 1).timeout(ACK_TIMEOUT)).unwrap();
    }

    let mut timings = Vec::new();
    for (round, &active) in ROUNDS.iter().enumerate() {
        for (i, qp) in qps.iter_mut().enumerate().take(active) {
            for k in 0..PER_QP {
                let sge = dst.sge(slot(i, k), SLOT).unwrap();
                qp.post_recv(&[RecvWr { wr_id: wr_id(i, k), sges: &[sge] }])
                    .unwrap_or_else(|e| panic!("receive {k} of QP {i}: {e}"));
            }
        }
        // Both sides' receives are posted before either sends: no RNR.
        line.tell("POSTED");
        line.hear("POSTED");
        let start = Instant::now();
        for (i, qp) in qps.iter_mut().enumerate().take(active) {
            // The writes first: a receive of the same QP then proves they landed.
            for k in 0..2 * PER_QP {
                let m = message(side, round, i, k);
                let at = slot(i, k);
                src.write(at, &m).unwrap();
                let sge = [src.sge(at, m.len()).unwrap()];
                let payload = if m.len() <= 64 { Payload::Inline(&m) } else { Payload::Sges(&sge) };
                let op = if k < PER_QP {
                    SendOp::RdmaWrite(Remote {
                        addr: peer_addr + slot(i, PER_QP + k) as u64,
                        rkey: peer_rkey,
                    })
                } else {
                    SendOp::Send
                };
                let wr = SendWr::new(wr_id(i, k), op, payload).flags(SendFlags::SIGNALED);
                qp.post_send(&[wr]).unwrap_or_else(|e| panic!("post {k} on QP {i}: {e}"));
            }
        }
        // Each QP completes 2*PER_QP requests and PER_QP receives.
        let expected = active * 3 * PER_QP;
        let mut seen: HashMap<(u32, bool, u64), WorkCompletion> = HashMap::new();
        let deadline = start + ROUND_LIMIT;
        let mut wc = [WorkCompletion::default(); 32];
        let mut turn = 0;
        while seen.len() < expected {
            assert!(
                Instant::now() < deadline,
                "{mode:?} round of {active} QPs: {} of {expected} completions within \
                 {ROUND_LIMIT:?}",
                seen.len()
            );
            let cq = &mut cqs[turn];
            if mode == Mode::CqPerQp {
                turn = (turn + 1) % active;
            }
            let mut n = cq.poll(&mut wc);
            if n == 0
                && let Some(ch) = &channel
            {
                cq.arm(false);
                n = cq.poll(&mut wc);
                if n == 0 {
                    let left = deadline.saturating_duration_since(Instant::now());
                    let _ = ch.wait(Some(left)).expect("wait for a completion event");
                    continue;
                }
            }
            for w in &wc[..n] {
                let receive = w.opcode == WcOpcode::Recv;
                let prev = seen.insert((w.qpn, receive, w.wr_id), *w);
                assert!(prev.is_none(), "{mode:?}: completion twice: {w:?}");
                assert_eq!(w.status, WcStatus::Success, "{w:?}");
            }
        }
        let elapsed = start.elapsed();
        timings.push((active, elapsed));
        // Exactly the completions expected, and then the data.
        for (i, qp) in qps.iter().enumerate().take(active) {
            for k in 0..PER_QP {
                let m = message(1 - side, round, i, PER_QP + k);
                let r = seen.get(&(qp.qpn(), true, wr_id(i, k))).unwrap_or_else(|| {
                    panic!("{mode:?}: no receive {k} on QP {i} (round of {active})")
                });
                assert_eq!((r.byte_len as usize, r.src_qp), (m.len(), peer_qpns[i]), "{r:?}");
                let mut got = vec![0u8; m.len()];
                dst.read(slot(i, k), &mut got).unwrap();
                assert!(got == m, "{mode:?}: SEND {k} of QP {i} arrived altered");
                let w = message(1 - side, round, i, k);
                let mut got = vec![0u8; w.len()];
                dst.read(slot(i, PER_QP + k), &mut got).unwrap();
                assert!(got == w, "{mode:?}: RDMA WRITE {k} of QP {i} arrived altered");
            }
            for k in 0..2 * PER_QP {
                let c = seen
                    .get(&(qp.qpn(), false, wr_id(i, k)))
                    .unwrap_or_else(|| panic!("{mode:?}: no completion of request {k} on QP {i}"));
                let op = if k < PER_QP { WcOpcode::RdmaWrite } else { WcOpcode::Send };
                assert_eq!(c.opcode, op, "{c:?}");
            }
        }
        assert_eq!(seen.len(), expected, "{mode:?}: completions of QPs that sent nothing");
        line.tell("DONE");
        line.hear("DONE");
        // Nothing more comes: no completion is reported twice.
        for cq in &mut cqs {
            assert_eq!(cq.poll(&mut wc), 0, "{mode:?}: an extra completion: {:?}", wc[0]);
        }
    }
    drop(qps);
    timings
}

/// The peer process (does nothing unless re-executed in the peer role).
#[test]
fn many_peer_role() {
    if std::env::var(ROLE_ENV).as_deref() != Ok("many-peer") {
        return;
    }
    let mode = Mode::parse(&std::env::var(MODE_ENV).unwrap());
    let dev = device(FabricDir::from_env(), true);
    let ctx = Context::open_softhca(dev.clone()).unwrap();
    run_side(1, mode, &ctx, &mut ToParent);
    dev.engine().stop_progress_thread();
    say("EXITING");
}

fn exchange(mode: Mode) {
    let fabric = TestFabric::new(&format!("many-{}", mode.name()));
    let dir = fabric.path.to_str().unwrap().to_string();
    let mut peer = ChildProc::spawn(
        "many_peer_role",
        "many-peer",
        &[(SHM_DIR_ENV, dir.as_str()), (MODE_ENV, mode.name())],
    );
    let dev = device(fabric.dir(), mode == Mode::SharedCqEvents);
    let ctx = Context::open_softhca(dev.clone()).unwrap();
    let timings = run_side(0, mode, &ctx, &mut peer);
    for (active, t) in timings {
        let messages = active * 2 * PER_QP * 2;
        eprintln!(
            "{mode:?}: {active:3} active QPs, {messages:4} messages both ways in {t:?} \
             ({:?} per message)",
            t / messages as u32
        );
    }
    peer.expect("EXITING");
    peer.finish();
    dev.engine().stop_progress_thread();
}

#[test]
fn many_qps_on_one_shared_cq() {
    exchange(Mode::SharedCq);
}

#[test]
fn many_qps_each_with_its_own_cq() {
    exchange(Mode::CqPerQp);
}

#[test]
fn many_qps_on_a_shared_cq_waited_on_a_channel() {
    exchange(Mode::SharedCqEvents);
}
