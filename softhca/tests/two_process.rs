//! The data path between two processes on one host: the test process is the requester,
//! a re-executed copy of it (role `peer`) owns the responder QP and its memory. The peer
//! runs the progress thread, so one-sided operations complete while it sits blocked
//! reading its next command from a pipe, as they would on hardware.

mod support;

use ferrodat_abi::mlx5::{cqe_opcode, cqe_syndrome, opcode};
use ferrodat_softhca::fabric::{FabricDir, SHM_DIR_ENV};
use ferrodat_softhca::hca::engine::Engine;
use std::time::{Duration, Instant};
use support::child::{ChildProc, ROLE_ENV, read_command, say};
use support::*;

const WAIT: Duration = Duration::from_secs(10);
const PEER_MR_BYTES: usize = 1 << 20;
const RQ_ENV: &str = "SOFTHCA_TEST_RQ";
const HCA_ENV: &str = "SOFTHCA_TEST_HCA";

/// The GID of 127.0.0.`host`.
fn gid_of_host(host: u8) -> [u8; 16] {
    let mut gid = LOCALHOST_GID;
    gid[15] = host;
    gid
}

fn pattern(seed: u32, len: usize) -> Vec<u8> {
    (0..len as u32).map(|i| (i.wrapping_mul(2654435761).wrapping_add(seed) >> 11) as u8).collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The peer process.
#[test]
fn peer_role() {
    if std::env::var(ROLE_ENV).as_deref() != Ok("peer") {
        return;
    }
    let rq: u32 = std::env::var(RQ_ENV).ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    // The HCA the peer opens: `name last-byte-of-its-address` (default softhca0, 127.0.0.1).
    let hca = std::env::var(HCA_ENV).unwrap_or_else(|_| "softhca0 1".to_string());
    let (name, host) = hca.split_once(' ').expect("HCA_ENV: name and address byte");
    let gid = gid_of_host(host.parse().unwrap());
    let engine = Engine::open_in(FabricDir::from_env(), name, gid).unwrap();
    let pdn = engine.registry().alloc_pdn();
    let mut cq = Cq::new(&engine, 16);
    let mut qp = Qp::new(
        &engine,
        QpSpec {
            pdn,
            send_cqn: cq.cqn,
            recv_cqn: cq.cqn,
            srqn: None,
            sq_wqebbs: 8,
            rq_wqe_count: rq,
            max_recv_sge: 1,
            sq_sig_all: false,
        },
    );
    let mr = Mr::new(&engine, pdn, PEER_MR_BYTES, ALL_ACCESS);
    mr.buf.write(0, &pattern(1, PEER_MR_BYTES));
    let mut shared: Option<SharedMr> = None;
    say(&format!("READY {} {} {}", qp.qpn, mr.addr(), mr.key));
    loop {
        let cmd = read_command();
        let words: Vec<&str> = cmd.split_whitespace().collect();
        match words.as_slice() {
            ["CONNECT", peer, timeout, retry] | ["CONNECT", peer, timeout, retry, _] => {
                let peer_gid = match words.get(4) {
                    Some(host) => gid_of_host(host.parse().unwrap()),
                    None => LOCALHOST_GID,
                };
                let mut attrs = rc_attrs();
                attrs.timeout = timeout.parse().unwrap();
                attrs.retry_cnt = retry.parse().unwrap();
                qp.connect(&engine, peer_gid, peer.parse().unwrap(), attrs);
                engine.start_progress_thread().unwrap();
                say("CONNECTED");
            }
            ["RECV", n, len] => {
                let len: u32 = len.parse().unwrap();
                for i in 0..n.parse::<u64>().unwrap() {
                    qp.post_recv(&[(mr.addr() + i * u64::from(len), len, mr.key)]);
                }
                say("POSTED");
            }
            ["POLL", n] => {
                let got = cq.wait(&engine, n.parse().unwrap(), WAIT);
                for w in &got {
                    say(&format!(
                        "WC {} {} {} {} {}",
                        w.opcode,
                        w.byte_cnt,
                        w.imm,
                        w.wqe_counter,
                        w.syndrome.map(i32::from).unwrap_or(-1)
                    ));
                }
                say(&format!("POLLED {}", got.len()));
            }
            ["DUMP", off, len] => {
                say(&format!(
                    "DATA {}",
                    hex(&mr.buf.read(off.parse().unwrap(), len.parse().unwrap()))
                ));
            }
            ["ECHO", n, len] => {
                // Ping-pong: receive a message, send it back; the requester measures.
                let len: u32 = len.parse().unwrap();
                qp.post_recv(&[(mr.addr(), len, mr.key)]);
                say("ECHOING");
                for i in 0..n.parse::<u32>().unwrap() {
                    // Wait for the next message; send completions (every 4th send is
                    // signalled, to retire the unsignalled ones) may come in between.
                    loop {
                        let got = cq.wait(&engine, 1, WAIT);
                        let Some(w) = got.first() else { continue };
                        if w.opcode == cqe_opcode::REQ {
                            continue;
                        }
                        assert_eq!(w.opcode, cqe_opcode::RESP_SEND, "echo {i}: {w:?}");
                        break;
                    }
                    qp.post_recv(&[(mr.addr(), len, mr.key)]);
                    let wr = SendWr {
                        opcode: opcode::SEND,
                        inline: Some(mr.buf.read(0, len as usize)),
                        signaled: i % 4 == 3,
                        ..Default::default()
                    };
                    qp.post_send(&engine, &wr);
                }
                say("ECHOED");
            }
            ["SHARED_MR", len] => {
                // A region in a shared memfd mapping: exported, peers place WRITEs in it
                // and READs out of it.
                let region = SharedMr::new(&engine, pdn, len.parse().unwrap(), ALL_ACCESS);
                say(&format!("SHARED {} {}", region.addr, region.key));
                shared = Some(region);
            }
            ["DUMP_SHARED", off, len] => {
                let region = shared.as_ref().expect("SHARED_MR first");
                say(&format!(
                    "DATA {}",
                    hex(&region.read(off.parse().unwrap(), len.parse().unwrap()))
                ));
            }
            ["EXIT"] | [] => break,
            other => panic!("unknown command {other:?}"),
        }
    }
    engine.stop_progress_thread();
}

/// The requester side: our engine, QP, CQ and memory, connected to a fresh peer.
struct Requester {
    engine: std::sync::Arc<Engine>,
    qp: Qp,
    cq: Cq,
    mr: Mr,
    peer: ChildProc,
    peer_addr: u64,
    peer_key: u32,
    _fabric: TestFabric,
}

fn connect(tag: &str, rq: u32, sq_wqebbs: u32, timeout: u8, retry: u8) -> Requester {
    let fabric = TestFabric::new(tag);
    std::fs::create_dir_all(fabric.path()).unwrap();
    let dir = fabric.path().to_str().unwrap().to_string();
    let rq_s = rq.to_string();
    let mut peer = ChildProc::spawn("peer_role", "peer", &[(SHM_DIR_ENV, &dir), (RQ_ENV, &rq_s)]);
    let ready = peer.expect("READY");
    let f: Vec<&str> = ready.split_whitespace().collect();
    let (peer_qpn, peer_addr, peer_key): (u32, u64, u32) =
        (f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].parse().unwrap());
    let engine = Engine::open_in(fabric.dir.clone(), "softhca0", LOCALHOST_GID).unwrap();
    let pdn = engine.registry().alloc_pdn();
    let cq = Cq::new(&engine, 16);
    let qp = Qp::new(&engine, QpSpec::on_cq(pdn, &cq, sq_wqebbs, rq));
    let mr = Mr::new(&engine, pdn, PEER_MR_BYTES, ALL_ACCESS);
    let mut attrs = rc_attrs();
    attrs.timeout = timeout;
    attrs.retry_cnt = retry;
    qp.connect(&engine, LOCALHOST_GID, peer_qpn, attrs);
    peer.send(&format!("CONNECT {} {timeout} {retry}", qp.qpn));
    peer.expect("CONNECTED");
    Requester { engine, qp, cq, mr, peer, peer_addr, peer_key, _fabric: fabric }
}

impl Requester {
    fn post(&mut self, wr: &SendWr) -> Wc {
        self.qp.post_send(&self.engine, wr);
        let w = self.cq.wait(&self.engine, 1, WAIT);
        assert_eq!(w.len(), 1, "no completion for {wr:?}");
        w[0]
    }

    /// Has the peer register `len` bytes of a shared memfd mapping (exported: WRITEs into
    /// it are placed); its address and key.
    fn shared_region(&mut self, len: usize) -> (u64, u32) {
        self.peer.send(&format!("SHARED_MR {len}"));
        let shared = self.peer.expect("SHARED");
        let f: Vec<&str> = shared.split_whitespace().collect();
        (f[0].parse().unwrap(), f[1].parse().unwrap())
    }

    fn peer_data(&mut self, off: usize, len: usize) -> Vec<u8> {
        self.peer.send(&format!("DUMP {off} {len}"));
        unhex(&self.peer.expect("DATA"))
    }

    /// The peer's completions: (opcode, byte_cnt, imm, wqe_counter, syndrome or -1).
    fn peer_poll(&mut self, n: usize) -> Vec<(u8, u32, u32, u16, i32)> {
        self.peer.send(&format!("POLL {n}"));
        let mut out = Vec::new();
        loop {
            let line = self.peer.expect("");
            if let Some(rest) = line.strip_prefix("WC ") {
                let f: Vec<&str> = rest.split_whitespace().collect();
                out.push((
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                    f[3].parse().unwrap(),
                    f[4].parse().unwrap(),
                ));
            } else if line.starts_with("POLLED") {
                return out;
            }
        }
    }
}

#[test]
fn every_opcode_across_two_processes() {
    let mut r = connect("opcodes", 64, 64, 14, 7);
    let (pa, pk) = (r.peer_addr, r.peer_key);
    let data = pattern(7, 3000);
    r.mr.buf.write(0, &data);
    let lkey = r.mr.key;
    let base = r.mr.addr();

    // SEND and SEND with immediate.
    r.peer.send("RECV 2 4096");
    r.peer.expect("POSTED");
    let w = r.post(&send(vec![(base, 3000, lkey)]));
    assert_eq!((w.opcode, w.wqe_opcode), (cqe_opcode::REQ, opcode::SEND));
    let mut imm = send(vec![(base, 16, lkey)]);
    imm.opcode = opcode::SEND_IMM;
    imm.imm = 0x0102_0304;
    r.post(&imm);
    let got = r.peer_poll(2);
    assert_eq!(got[0], (cqe_opcode::RESP_SEND, 3000, 0, 0, -1));
    assert_eq!(got[1], (cqe_opcode::RESP_SEND_IMM, 16, 0x0102_0304, 1, -1));
    assert_eq!(r.peer_data(0, 3000), data);

    // RDMA WRITE, READ and atomics complete while the peer is blocked reading its pipe.
    let write = SendWr {
        opcode: opcode::RDMA_WRITE,
        sges: vec![(base, 3000, lkey)],
        remote: Some((pa + 100_000, pk)),
        signaled: true,
        ..Default::default()
    };
    assert_eq!(r.post(&write).syndrome, None);
    let read = SendWr {
        opcode: opcode::RDMA_READ,
        sges: vec![(base + 200_000, 5000, lkey)],
        remote: Some((pa + 300_000, pk)),
        signaled: true,
        ..Default::default()
    };
    let w = r.post(&read);
    assert_eq!((w.wqe_opcode, w.byte_cnt), (opcode::RDMA_READ, 5000));
    assert_eq!(r.mr.buf.read(200_000, 5000), pattern(1, PEER_MR_BYTES)[300_000..305_000]);
    let fa = SendWr {
        opcode: opcode::ATOMIC_FA,
        sges: vec![(base + 8, 8, lkey)],
        remote: Some((pa + 400_000, pk)),
        atomic: Some((10, 0)),
        signaled: true,
        ..Default::default()
    };
    let before =
        u64::from_ne_bytes(pattern(1, PEER_MR_BYTES)[400_000..400_008].try_into().unwrap());
    r.post(&fa);
    assert_eq!(r.mr.buf.read(8, 8), before.to_ne_bytes());
    let mut cs = fa.clone();
    cs.opcode = opcode::ATOMIC_CS;
    cs.atomic = Some((77, before.wrapping_add(10)));
    r.post(&cs);
    assert_eq!(r.peer_data(100_000, 3000), data, "RDMA WRITE data");
    assert_eq!(r.peer_data(400_000, 8), 77u64.to_ne_bytes(), "FA then CS");

    // RDMA WRITE with immediate consumes a receive on the peer.
    r.peer.send("RECV 1 64");
    r.peer.expect("POSTED");
    let mut wi = write.clone();
    wi.opcode = opcode::RDMA_WRITE_IMM;
    wi.imm = 0xabcd;
    wi.sges = vec![(base, 32, lkey)];
    r.post(&wi);
    let got = r.peer_poll(1);
    assert_eq!((got[0].0, got[0].1, got[0].2), (cqe_opcode::RESP_WR_IMM, 32, 0xabcd));

    // A bad rkey fails at the responder without touching its memory.
    let mut bad = write.clone();
    bad.remote = Some((pa, pk ^ 0x100));
    assert_eq!(r.post(&bad).syndrome, Some(cqe_syndrome::REMOTE_ACCESS_ERR));
    assert_eq!(r.peer_data(0, 16), data[..16], "untouched");
    r.peer.send("EXIT");
}

/// A region the peer registered from a shared memfd mapping takes RDMA WRITEs placed by
/// this process directly, and gives READs of 4 KiB and more the same way, while the peer
/// sits blocked in its pipe; WRITE with immediate and small READs use the ring as before.
#[test]
fn writes_into_and_reads_from_a_peers_shared_region_are_placed_across_processes() {
    let mut r = connect("placed", 64, 64, 14, 7);
    let (sa, sk) = r.shared_region(4 << 20);
    let data = pattern(9, PEER_MR_BYTES);
    r.mr.buf.write(0, &data);
    let (base, lkey) = (r.mr.addr(), r.mr.key);

    let write = SendWr {
        opcode: opcode::RDMA_WRITE,
        sges: vec![(base, PEER_MR_BYTES as u32, lkey)],
        remote: Some((sa + 12_345, sk)),
        signaled: true,
        ..Default::default()
    };
    assert_eq!(r.post(&write).syndrome, None);
    assert_eq!(r.engine.placed_writes(), 1, "placed into the peer's memory");
    let check = |r: &mut Requester, off: usize, len: usize| {
        r.peer.send(&format!("DUMP_SHARED {off} {len}"));
        unhex(&r.peer.expect("DATA"))
    };
    assert_eq!(check(&mut r, 12_345, PEER_MR_BYTES), data);
    assert_eq!(check(&mut r, 0, 12_345), vec![0; 12_345], "bytes before the range");

    // With immediate: through the ring, and it consumes a receive.
    r.peer.send("RECV 1 64");
    r.peer.expect("POSTED");
    let mut wi = write.clone();
    wi.opcode = opcode::RDMA_WRITE_IMM;
    wi.imm = 0x5151;
    wi.sges = vec![(base, 4096, lkey)];
    wi.remote = Some((sa + (2 << 20), sk));
    assert_eq!(r.post(&wi).syndrome, None);
    let got = r.peer_poll(1);
    assert_eq!((got[0].0, got[0].1, got[0].2), (cqe_opcode::RESP_WR_IMM, 4096, 0x5151));
    assert_eq!(r.engine.placed_writes(), 1);
    assert_eq!(check(&mut r, 2 << 20, 4096), data[..4096]);

    // READ back what was placed (the responder reads its own memory).
    let read = SendWr {
        opcode: opcode::RDMA_READ,
        sges: vec![(base + 500_000, 1000, lkey)],
        remote: Some((sa + 12_345, sk)),
        signaled: true,
        ..Default::default()
    };
    assert_eq!(r.post(&read).byte_cnt, 1000);
    assert_eq!(r.mr.buf.read(500_000, 1000), data[..1000]);
    assert_eq!(r.engine.placed_reads(), 0, "a small READ takes the ring");
    // The whole placed WRITE back, itself placed: copied out of the peer's memory.
    r.mr.buf.fill(0);
    let whole = SendWr { sges: vec![(base, PEER_MR_BYTES as u32, lkey)], ..read };
    assert_eq!(r.post(&whole).byte_cnt, PEER_MR_BYTES as u32);
    assert_eq!(r.engine.placed_reads(), 1, "placed out of the peer's memory");
    assert!(r.mr.buf.read(0, PEER_MR_BYTES) == data);
    r.peer.send("EXIT");
}

/// A peer that died takes no more placements (its region may be a file others map): the
/// WRITE goes through the ring and ends in retry exceeded, as it would on hardware.
#[test]
fn a_dead_peers_shared_region_takes_no_placements() {
    // Timeout 14 (67 ms a try): the WRITE before the kill must not run out of retries while
    // a loaded 2-core machine keeps the live peer off the CPU (timeout 10 failed so once
    // in 15 runs); the one after it then fails within about 200 ms.
    let mut r = connect("placed-dead", 64, 64, 14, 2);
    let (sa, sk) = r.shared_region(1 << 20);
    let (base, lkey) = (r.mr.addr(), r.mr.key);
    let write = SendWr {
        opcode: opcode::RDMA_WRITE,
        sges: vec![(base, 65536, lkey)],
        remote: Some((sa, sk)),
        signaled: true,
        ..Default::default()
    };
    assert_eq!(r.post(&write).syndrome, None);
    assert_eq!(r.engine.placed_writes(), 1);
    r.peer.kill();
    // Past the requester's liveness interval (hca/placement.rs, PEER_CHECK_INTERVAL).
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(r.post(&write).syndrome, Some(cqe_syndrome::TRANSPORT_RETRY_EXC_ERR));
    assert_eq!(r.engine.placed_writes(), 1, "placed into a dead process's memory");
}

#[test]
fn ping_pong_wraps_every_queue_across_processes() {
    // RQ of 4 and an SQ of 8 WQEBBs on both sides, CQs of 16: 200 round trips wrap the
    // RQs 50 times, the SQs 25 times and the CQs more than 12 times.
    let mut r = connect("wrap2", 4, 8, 14, 7);
    let rounds = 200;
    r.peer.send(&format!("ECHO {rounds} 8"));
    r.peer.expect("ECHOING");
    let lkey = r.mr.key;
    let base = r.mr.addr();
    for i in 0..rounds {
        r.qp.post_recv(&[(base + 64, 8, lkey)]);
        let msg = (i as u64).to_be_bytes();
        let wr = SendWr {
            opcode: opcode::SEND,
            inline: Some(msg.to_vec()),
            signaled: true,
            ..Default::default()
        };
        r.qp.post_send(&r.engine, &wr);
        let mut seen = Vec::new();
        let start = Instant::now();
        while seen.len() < 2 && start.elapsed() < WAIT {
            seen.extend(r.cq.wait(&r.engine, 2 - seen.len(), WAIT));
        }
        assert_eq!(seen.len(), 2, "round {i}");
        let recv = seen.iter().find(|w| w.opcode == cqe_opcode::RESP_SEND).expect("echo");
        assert_eq!(recv.byte_cnt, 8);
        assert_eq!(r.mr.buf.read(64, 8), msg, "round {i}");
    }
    r.peer.expect("ECHOED");
    r.peer.send("EXIT");
}

#[test]
fn a_killed_peer_ends_in_retry_exceeded() {
    // timeout 10 (~4 ms) and 2 retries: the error comes within ~15 ms of the last packet.
    let mut r = connect("killed", 64, 64, 10, 2);
    r.peer.kill();
    let write = SendWr {
        opcode: opcode::RDMA_WRITE,
        sges: vec![(r.mr.addr(), 8, r.mr.key)],
        remote: Some((r.peer_addr, r.peer_key)),
        signaled: true,
        ..Default::default()
    };
    let start = Instant::now();
    let w = r.post(&write);
    assert_eq!(w.syndrome, Some(cqe_syndrome::TRANSPORT_RETRY_EXC_ERR));
    assert!(start.elapsed() < Duration::from_secs(2), "took {:?}", start.elapsed());
    // The dead process's QP is reclaimed by the next opener of the HCA.
    let again = Engine::open_in(r._fabric.dir.clone(), "softhca0", LOCALHOST_GID).unwrap();
    drop(again);
}

/// A peer on another HCA, in the fabric at `dir`: its QPN, MR address and key.
fn spawn_peer_on(dir: &str, hca: &str) -> (ChildProc, u32, u64, u32) {
    let mut peer = ChildProc::spawn("peer_role", "peer", &[(SHM_DIR_ENV, dir), (HCA_ENV, hca)]);
    let ready = peer.expect("READY");
    let f: Vec<&str> = ready.split_whitespace().collect();
    (peer, f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].parse().unwrap())
}

/// The peer HCA's registry was rebuilt after its last user died (another run used the
/// name with another address, then one with the first again). A process that talked to
/// the old one must find the new one: its QPs to the new run's QPs used to look them up in
/// the old, unlinked registry it had cached, never found them nor woke their owner, and
/// ended in retry exceeded against a live, idle peer.
#[test]
fn a_peer_hca_rebuilt_after_its_users_died_is_looked_up_again() {
    let fabric = TestFabric::new("rebuilt-peer");
    std::fs::create_dir_all(fabric.path()).unwrap();
    let dir = fabric.path().to_str().unwrap().to_string();
    let engine = Engine::open_in(fabric.dir.clone(), "softhca0", LOCALHOST_GID).unwrap();
    let pdn = engine.registry().alloc_pdn();
    let mut cq = Cq::new(&engine, 16);
    let mr = Mr::new(&engine, pdn, 4096, ALL_ACCESS);
    let mut attrs = rc_attrs();
    // About 70 ms in all: well under the idle sleep of the peer's progress thread (1 s).
    (attrs.timeout, attrs.retry_cnt) = (12, 3);
    let mut run = |peer: &mut ChildProc, peer_qpn: u32, remote: (u64, u32)| {
        let mut qp = Qp::new(&engine, QpSpec::on_cq(pdn, &cq, 64, 64));
        qp.connect(&engine, gid_of_host(2), peer_qpn, attrs);
        peer.send(&format!("CONNECT {} 12 3 1", qp.qpn));
        peer.expect("CONNECTED");
        // Let the peer's progress thread go to sleep: only a notification wakes it soon.
        std::thread::sleep(Duration::from_millis(50));
        qp.post_send(&engine, &write_wr(vec![(mr.addr(), 8, mr.key)], remote));
        let w = cq.wait(&engine, 1, WAIT);
        assert_eq!(w.len(), 1);
        w[0].syndrome
    };

    let (mut first, qpn, addr, key) = spawn_peer_on(&dir, "softhca1 2");
    assert_eq!(run(&mut first, qpn, (addr, key)), None);
    first.kill();
    // Another run uses softhca1 with another address, then one with the first again:
    // each finds no live user and rebuilds the registry.
    drop(fabric.dir.open_hca("softhca1", gid_of_host(3)).unwrap());
    drop(fabric.dir.open_hca("softhca1", gid_of_host(2)).unwrap());
    let (mut second, qpn, addr, key) = spawn_peer_on(&dir, "softhca1 2");
    assert_eq!(run(&mut second, qpn, (addr, key)), None, "the new run's QP was not reached");
    second.send("EXIT");
}

/// The peer dies between CREATE_QP and RTR: our QP never finds its ring nor its owner, and
/// its request still ends in retry exceeded instead of waiting for the peer to appear.
#[test]
fn a_peer_killed_before_rtr_ends_in_retry_exceeded() {
    let fabric = TestFabric::new("killed-before-rtr");
    std::fs::create_dir_all(fabric.path()).unwrap();
    let dir = fabric.path().to_str().unwrap().to_string();
    let (mut peer, peer_qpn, addr, key) = spawn_peer_on(&dir, "softhca0 1");
    peer.kill();
    let engine = Engine::open_in(fabric.dir.clone(), "softhca0", LOCALHOST_GID).unwrap();
    let pdn = engine.registry().alloc_pdn();
    let mut cq = Cq::new(&engine, 16);
    let mut qp = Qp::new(&engine, QpSpec::on_cq(pdn, &cq, 64, 64));
    let mr = Mr::new(&engine, pdn, 4096, ALL_ACCESS);
    let mut attrs = rc_attrs();
    (attrs.timeout, attrs.retry_cnt) = (10, 2);
    qp.connect(&engine, LOCALHOST_GID, peer_qpn, attrs);
    qp.post_send(&engine, &write_wr(vec![(mr.addr(), 8, mr.key)], (addr, key)));
    let start = Instant::now();
    let w = cq.wait(&engine, 1, WAIT);
    assert_eq!(w.len(), 1, "no completion");
    assert_eq!(w[0].syndrome, Some(cqe_syndrome::TRANSPORT_RETRY_EXC_ERR));
    assert!(start.elapsed() < Duration::from_secs(2), "took {:?}", start.elapsed());
}

/// A consumer that only sleeps (never calls progress) hears of a killed peer from the
/// progress thread's transport timer.
#[test]
fn the_progress_thread_alone_reports_a_killed_peer() {
    let mut r = connect("killed-asleep", 64, 64, 10, 2);
    r.engine.start_progress_thread().unwrap();
    r.peer.kill();
    let (addr, key) = (r.peer_addr, r.peer_key);
    r.qp.post_send(&r.engine, &write_wr(vec![(r.mr.addr(), 8, r.mr.key)], (addr, key)));
    let start = Instant::now();
    let w = loop {
        if let Some(w) = r.cq.poll_one() {
            break w;
        }
        assert!(start.elapsed() < Duration::from_secs(2), "no completion from the thread");
        std::thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(w.syndrome, Some(cqe_syndrome::TRANSPORT_RETRY_EXC_ERR));
    r.engine.stop_progress_thread();
}
