//! Single-thread loopback 8-byte SEND/RECV ping-pong through the ferrodat driver over
//! softhca, for instruction counts: one context, QPs A and B connected to each other, one
//! thread doing both sides. It is `softhca_loopback` with the driver in place of softhca's
//! test support, so the difference between the two is what the driver and its entry points
//! into softhca (doorbell, progress) add. Run it under callgrind with two round counts and
//! divide the difference by the number of messages (two per round trip):
//!
//! ```text
//! cargo bench -p ferrodat-benches --bench driver_loopback --no-run
//! FERRODAT_BENCH_ROUNDS=20000 valgrind --tool=callgrind <bench binary>
//! ```
//!
//! Without valgrind it prints the time per message (single thread, no cache-line
//! transfers: the software cost of the path).

use ferrodat_driver::completion::{WcOpcode, WorkCompletion};
use ferrodat_driver::work_request::{Payload, RecvWr, SendFlags, SendOp, SendWr};
use ferrodat_driver::{Access, Cq, CqOptions, MrBuf, Pd, Qp, QpCaps, QpInit, RemoteQp};
use ferrodat_softhca::fabric::SHM_DIR_ENV;
use std::time::Instant;

fn main() {
    let rounds: u64 =
        std::env::var("FERRODAT_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000);
    let dir = format!("/dev/shm/ferrodat-bench-driver-loopback-{}", std::process::id());
    std::fs::create_dir_all(&dir).expect("create the fabric directory");
    // SAFETY: set before any other thread of this process exists that reads the environment.
    unsafe { std::env::set_var(SHM_DIR_ENV, &dir) };
    let ctx = ferrodat_driver::open("softhca0").expect("open softhca0");
    let pd = Pd::new(&ctx).expect("PD");
    let cq_options = CqOptions { cqe: 256, ..Default::default() };
    let (mut cq_a, mut cq_b) =
        (Cq::new(&ctx, &cq_options).unwrap(), Cq::new(&ctx, &cq_options).unwrap());
    let caps =
        QpCaps { max_send_wr: 128, max_recv_wr: 64, max_inline_data: 60, ..Default::default() };
    let init = |cq| QpInit::new(cq, cq, caps);
    // Leaked: the QPs borrow posted buffers for their whole life.
    let mr: &'static MrBuf = Box::leak(Box::new(pd.alloc_mr(4096, Access::ALL).expect("MR")));
    let mut a = Qp::new(&pd, &init(&cq_a)).expect("QP A");
    let mut b = Qp::new(&pd, &init(&cq_b)).expect("QP B");
    let gid = ctx.source_gid(1).expect("GID").1;
    let (qpn_a, qpn_b) = (a.qpn(), b.qpn());
    a.connect(&RemoteQp { qpn: qpn_b, psn: 0, gid, max_rd_atomic: 1 }, 0, 3, Access::ALL).unwrap();
    b.connect(&RemoteQp { qpn: qpn_a, psn: 0, gid, max_rd_atomic: 1 }, 0, 3, Access::ALL).unwrap();
    let recv_sge = [mr.sge(0, 64).unwrap()];
    let recv = RecvWr { wr_id: 0, sges: &recv_sge };
    for _ in 0..16 {
        a.post_recv(&[recv]).unwrap();
        b.post_recv(&[recv]).unwrap();
    }
    // One direction: `from` sends, `to` polls until its receive completes and reposts it.
    let one_way = |from: &mut Qp, to: &mut Qp, to_cq: &mut Cq, n: u64| {
        let flags = if n.is_multiple_of(64) { SendFlags::SIGNALED } else { SendFlags::NONE };
        let wr = SendWr::new(n, SendOp::Send, Payload::Inline(&[0xa5; 8])).flags(flags);
        from.post_send(&[wr]).unwrap();
        let mut wc = [WorkCompletion::default(); 1];
        loop {
            if to_cq.poll(&mut wc) == 0 {
                continue;
            }
            assert!(wc[0].is_ok(), "completion error: {:?}", wc[0]);
            if wc[0].opcode == WcOpcode::Recv {
                to.post_recv(&[recv]).unwrap();
                return;
            }
        }
    };
    let start = Instant::now();
    for n in 0..rounds {
        one_way(&mut a, &mut b, &mut cq_b, n);
        one_way(&mut b, &mut a, &mut cq_a, n);
    }
    let elapsed = start.elapsed();
    println!(
        "driver loopback over softhca: {rounds} round trips, {:.0} ns per message",
        elapsed.as_nanos() as f64 / (2 * rounds) as f64
    );
    drop((a, b));
    let _ = std::fs::remove_dir_all(&dir);
}
