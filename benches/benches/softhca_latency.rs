//! Two-process 8-byte SEND/RECV latency over softhca, next to the floor measured in the
//! same run (two processes bouncing one cache line through shared memory) and the least
//! software HCA (the WQE, shared slot and CQE a software HCA writes and reads per
//! message, `ferrodat_engine::perf::least_hca`): softhca / floor is the target's ratio,
//! the least software HCA / floor how much of it the machine takes.
//!
//! `cargo bench -p ferrodat-benches --bench softhca_latency` (`FERRODAT_BENCH_SAMPLES`
//! and `FERRODAT_BENCH_ROUNDS` size the run). Latency is half a round trip, as perftest
//! reports it. Both sides busy-poll; no progress thread runs, so each side does the HCA
//! work for its own QP on its own thread, as a polling application would.

#[path = "../../softhca/tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use ferrodat_abi::mlx5::{cqe_opcode, opcode};
use ferrodat_benches::stats::{Summary, summarize};
use ferrodat_benches::two_process::{
    FLOOR_ROLE, LEAST_HCA_ROLE, env_or, floor_child, least_hca_child, measure_floor,
    measure_least_hca,
};
use ferrodat_softhca::fabric::{FabricDir, SHM_DIR_ENV};
use ferrodat_softhca::hca::engine::Engine;
use std::time::Instant;
use support::child::{ChildProc, ROLE_ENV, read_command, say};
use support::*;

const MESSAGE: usize = 8;

fn main() {
    match std::env::var(ROLE_ENV).as_deref() {
        Ok(FLOOR_ROLE) => floor_child(),
        Ok(LEAST_HCA_ROLE) => least_hca_child(),
        Ok("echo") => echo_child(),
        _ => parent(),
    }
}

/// The answering process: its own engine, QP and CQ; echoes every message back.
fn echo_child() {
    let engine = Engine::open_in(FabricDir::from_env(), "softhca0", LOCALHOST_GID).unwrap();
    let pdn = engine.registry().alloc_pdn();
    let mut cq = Cq::new(&engine, 256);
    let mut qp = Qp::new(&engine, spec(pdn, &cq));
    let mr = Mr::new(&engine, pdn, 4096, ALL_ACCESS);
    say(&format!("READY {}", qp.qpn));
    let peer: u32 = read_command().parse().unwrap();
    let rounds: u64 = read_command().parse().unwrap();
    qp.connect(&engine, LOCALHOST_GID, peer, rc_attrs());
    for _ in 0..16 {
        qp.post_recv(&[(mr.addr(), 64, mr.key)]);
    }
    say("GO");
    let mut echoed = 0u64;
    let mut wr =
        SendWr { opcode: opcode::SEND, inline: Some(vec![0x5a; MESSAGE]), ..Default::default() };
    while echoed < rounds {
        let Some(wc) = cq.poll_one() else {
            engine.progress();
            continue;
        };
        if wc.opcode != cqe_opcode::RESP_SEND {
            continue; // a send completion
        }
        qp.post_recv(&[(mr.addr(), 64, mr.key)]);
        echoed += 1;
        wr.signaled = echoed.is_multiple_of(64);
        qp.post_send(&engine, &wr);
    }
    // Answer until the parent is done reading its completions.
    let _ = read_command();
}

fn spec(pdn: u32, cq: &Cq) -> QpSpec {
    QpSpec::on_cq(pdn, cq, 256, 64)
}

fn measure_softhca(samples: usize, rounds: u32) -> Summary {
    let fabric = TestFabric::new("bench");
    std::fs::create_dir_all(fabric.path()).unwrap();
    let dir = fabric.path().to_str().unwrap().to_string();
    let mut child = ChildProc::spawn("", "echo", &[(SHM_DIR_ENV, &dir)]);
    let peer: u32 = child.expect("READY").parse().unwrap();
    let engine = Engine::open_in(fabric.dir.clone(), "softhca0", LOCALHOST_GID).unwrap();
    let pdn = engine.registry().alloc_pdn();
    let mut cq = Cq::new(&engine, 256);
    let mut qp = Qp::new(&engine, spec(pdn, &cq));
    let mr = Mr::new(&engine, pdn, 4096, ALL_ACCESS);
    qp.connect(&engine, LOCALHOST_GID, peer, rc_attrs());
    let warmup = (samples / 10 + 1) * rounds as usize;
    let total = warmup + samples * rounds as usize;
    child.send(&qp.qpn.to_string());
    child.send(&total.to_string());
    child.expect("GO");
    for _ in 0..16 {
        qp.post_recv(&[(mr.addr(), 64, mr.key)]);
    }
    let mut sent = 0u64;
    let mut wr =
        SendWr { opcode: opcode::SEND, inline: Some(vec![0xa5; MESSAGE]), ..Default::default() };
    let mut round_trip = || {
        sent += 1;
        wr.signaled = sent.is_multiple_of(64);
        qp.post_send(&engine, &wr);
        loop {
            let Some(wc) = cq.poll_one() else {
                engine.progress();
                continue;
            };
            if wc.opcode == cqe_opcode::RESP_SEND {
                qp.post_recv(&[(mr.addr(), 64, mr.key)]);
                return;
            }
            assert_eq!(wc.syndrome, None, "completion error {wc:?}");
        }
    };
    for _ in 0..warmup {
        round_trip();
    }
    let mut rtt = Vec::with_capacity(samples);
    for _ in 0..samples {
        let start = Instant::now();
        for _ in 0..rounds {
            round_trip();
        }
        rtt.push(start.elapsed());
    }
    child.send("done");
    drop(child);
    summarize(&rtt, rounds).halved()
}

fn parent() {
    let samples = env_or("FERRODAT_BENCH_SAMPLES", 200) as usize;
    let rounds = env_or("FERRODAT_BENCH_ROUNDS", 500);
    let started = Instant::now();
    let floor = measure_floor(samples, rounds);
    let least = measure_least_hca(samples, rounds);
    let softhca = measure_softhca(samples, rounds);
    println!(
        "softhca two-process latency, half round trip, {samples} samples x {rounds} round trips ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    println!("{:<44} {:>10} {:>10} {:>10}", "", "median ns", "p99 ns", "min ns");
    let row = |name: &str, s: &Summary| {
        println!("{name:<44} {:>10.0} {:>10.0} {:>10.0}", s.median_ns, s.p99_ns, s.min_ns)
    };
    row("floor: two processes bouncing one cache line", &floor);
    row("least software HCA: WQE, shared slot, CQE", &least);
    row("softhca: 8-byte SEND/RECV ping-pong", &softhca);
    let ratio = softhca.median_ns / floor.median_ns;
    println!(
        "softhca / floor (median): {ratio:.2}x  (target: within 3x) {}",
        if ratio <= 3.0 { "met" } else { "NOT met" }
    );
    println!(
        "  least software HCA / floor: {:.2}x; softhca / least software HCA: {:.2}x",
        least.median_ns / floor.median_ns,
        softhca.median_ns / least.median_ns
    );
}
