//! Single-thread loopback 8-byte SEND/RECV ping-pong over softhca, for instruction counts:
//! one engine, QPs A and B connected to each other, one thread doing both sides. Run it
//! under callgrind with two round counts and divide the difference by the number of
//! messages (two per round trip):
//!
//! ```text
//! cargo bench -p ferrodat-benches --bench softhca_loopback --no-run
//! FERRODAT_BENCH_ROUNDS=20000 valgrind --tool=callgrind <bench binary>
//! ```
//!
//! Without valgrind it prints the time per message (single thread, no cache-line
//! transfers: the software cost of the path). With `FERRODAT_BENCH_IDLE_PASSES=N` (N <= 4000) it
//! then times N idle progress passes (nothing to do, the rings polled): the loop a waiting
//! consumer spins in; compare two N under callgrind for its instruction count.

#[path = "../../softhca/tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use ferrodat_abi::mlx5::{cqe_opcode, opcode};
use std::time::Instant;
use support::*;

fn main() {
    let rounds: u64 =
        std::env::var("FERRODAT_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000);
    let mut p = pair_with("loopback", rc_attrs(), 256, 64);
    let mr_a = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let mr_b = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    for _ in 0..16 {
        p.a.post_recv(&[(mr_a.addr(), 64, mr_a.key)]);
        p.b.post_recv(&[(mr_b.addr(), 64, mr_b.key)]);
    }
    let mut wr = SendWr { opcode: opcode::SEND, inline: Some(vec![0xa5; 8]), ..Default::default() };
    let engine = p.engine.clone();
    // One direction: `from` posts, `to` polls until the receive completes and reposts it.
    let mut one_way = |from: &mut Qp, to: &mut Qp, to_cq: &mut Cq, mr: &Mr, n: u64| {
        wr.signaled = n.is_multiple_of(64);
        from.post_send(&engine, &wr);
        loop {
            let Some(wc) = to_cq.poll_one() else {
                engine.progress();
                continue;
            };
            if wc.opcode == cqe_opcode::RESP_SEND {
                to.post_recv(&[(mr.addr(), 64, mr.key)]);
                return;
            }
            assert_eq!(wc.syndrome, None, "completion error {wc:?}");
        }
    };
    let start = Instant::now();
    for n in 0..rounds {
        one_way(&mut p.a, &mut p.b, &mut p.cq_b, &mr_b, n);
        one_way(&mut p.b, &mut p.a, &mut p.cq_a, &mr_a, n);
    }
    let elapsed = start.elapsed();
    println!(
        "softhca loopback: {rounds} round trips, {:.0} ns per message",
        elapsed.as_nanos() as f64 / (2 * rounds) as f64
    );
    // An idle pass with both rings polled: what a waiting consumer repeats between
    // messages, so its cost is the granularity at which it notices one.
    // At most 4000: softhca stops polling a ring after 4096 passes without a record.
    let idle: u64 = std::env::var("FERRODAT_BENCH_IDLE_PASSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
        .min(4000);
    if idle > 0 {
        // The last messages' held-back ACKs and the like go out first.
        while engine.progress() {}
        let mut found_work = 0;
        let start = Instant::now();
        for _ in 0..idle {
            found_work += u32::from(engine.progress());
        }
        println!(
            "softhca idle progress pass: {idle} passes, {:.1} ns each ({found_work} found work)",
            start.elapsed().as_nanos() as f64 / idle as f64
        );
    }
}
