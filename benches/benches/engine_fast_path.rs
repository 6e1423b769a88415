//! Instruction counts of the DAT layer's fast path (iai-callgrind): `dat_ep_post_send` and
//! `dat_ep_post_recv` of one segment on a connected endpoint, and `dat_evd_dequeue` of one
//! DTO event — the harvest of its CQE from the CQ, the cookie-ring lookup, the event
//! queue — through the engine as a consumer calls it.
//!
//! The endpoints are connected over softhca in the benchmark process. softhca is a model
//! of the hardware: its work when the doorbell rings (executing the WQE) is what silicon
//! does on hardware, so callgrind is told not to count it (`--toggle-collect` on that
//! model entry point); every instruction the engine and the driver execute is counted.
//! The dequeue finds its CQE at the first poll and calls no model entry point.
//!
//! `cargo bench -p ferrodat-benches --bench engine_fast_path`. Budget (issue 6): post_send
//! ≤ 250 instructions, dequeue of one DTO event ≤ 200.

use ferrodat_abi::dat::{evd_flags, mem_priv};
use ferrodat_engine::ep::Ep;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::ia::{Ia, IaSpec};
use ferrodat_engine::lmr::{Lmr, LmrTriplet, MemPriv};
use ferrodat_engine::pz::Pz;
use ferrodat_engine::sp::Psp;
use ferrodat_softhca::fabric::use_private_fabric;
use iai_callgrind::{LibraryBenchmarkConfig, library_benchmark, library_benchmark_group, main};
use std::hint::black_box;
use std::time::Duration;

/// Two connected endpoints in one process, and what their benchmarks use.
struct Connected {
    client: Ep,
    client_dto: Evd,
    triplet: [LmrTriplet; 1],
    _keep: (Ia, Ia, Psp, Ep, Evd, Lmr, Lmr),
}

fn connected() -> Box<Connected> {
    use_private_fabric("bench-engine");
    let spec = IaSpec::parse("softhca0 1 127.0.0.1").unwrap();
    let (sia, cia) = (Ia::open("ferro0", &spec).unwrap(), Ia::open("ferro0", &spec).unwrap());
    let (spz, cpz) = (Pz::create(&sia).unwrap(), Pz::create(&cia).unwrap());
    let server_dto = Evd::create(&sia, 64, evd_flags::DTO).unwrap();
    let server_conn = Evd::create(&sia, 4, evd_flags::CONNECTION).unwrap();
    let cr_evd = Evd::create(&sia, 4, evd_flags::CR).unwrap();
    let client_dto = Evd::create(&cia, 64, evd_flags::DTO).unwrap();
    let client_conn = Evd::create(&cia, 4, evd_flags::CONNECTION).unwrap();
    let server = Ep::create(&spz, &server_dto, &server_dto, Some(&server_conn), None).unwrap();
    let client = Ep::create(&cpz, &client_dto, &client_dto, Some(&client_conn), None).unwrap();
    let server_buf = Lmr::alloc(&spz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    let client_buf = Lmr::alloc(&cpz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    for i in 0..8 {
        server.post_recv(&[server_buf.triplet(0, 64).unwrap()], i, 0).unwrap();
    }
    let psp = Psp::create(&sia, 31990, &cr_evd).unwrap();
    client.connect(sia.attr().address, 31990, None, &[]).unwrap();
    let wait = 60_000_000; // µs: valgrind runs the CM and softhca threads slowly
    let Event::ConnectionRequest { cr, .. } = cr_evd.wait(wait, 1).unwrap().0 else {
        panic!("expected a connection request")
    };
    cr.accept(Some(&server), &[]).unwrap();
    client_conn.wait(wait, 1).unwrap();
    server_conn.wait(wait, 1).unwrap();
    let triplet = [client_buf.triplet(0, 8).unwrap()];
    Box::new(Connected {
        client,
        client_dto,
        triplet,
        _keep: (sia, cia, psp, server, server_dto, server_buf, client_buf),
    })
}

/// A connected client with one send's completion waiting, unharvested, in its CQ, after
/// a first send and dequeue (the EVD's first harvest sets up what later ones reuse).
fn completion_waiting() -> Box<Connected> {
    let c = connected();
    // On another thread, so that nothing of it could be collected with the benchmark.
    std::thread::scope(|s| {
        s.spawn(|| {
            c.client.post_send(&c.triplet, 6, 0).unwrap();
            assert!(matches!(c.client_dto.wait(60_000_000, 1), Ok((Event::Dto { .. }, 0))));
            c.client.post_send(&c.triplet, 7, 0).unwrap();
        });
    });
    // softhca's progress threads carry the message and its acknowledgement; the CQE is
    // written then. (The benchmark asserts it found it.)
    std::thread::sleep(Duration::from_millis(500));
    c
}

#[library_benchmark(
    // softhca's doorbell entry point executes the WQE: the device's work, not ours (see
    // the module doc). The setup rings no doorbell, so the toggle pairs up in the
    // measured call.
    config = LibraryBenchmarkConfig::default()
        .valgrind_args(["--toggle-collect=*Uverbs*doorbell_rung*"])
)]
#[bench::one_segment(setup = connected)]
fn post_send_1_segment(c: Box<Connected>) -> Box<Connected> {
    assert!(black_box(c.client.post_send(black_box(&c.triplet), 1, 0)).is_ok());
    c
}

#[library_benchmark]
#[bench::one_event(setup = completion_waiting)]
fn dequeue_1_dto_event(c: Box<Connected>) -> Box<Connected> {
    let ev = black_box(c.client_dto.dequeue());
    assert!(matches!(ev, Ok(Event::Dto { .. })), "{ev:?}");
    c
}

// Reposting a receive, as a consumer does for each message it takes: no doorbell to ring
// (receives are published through the doorbell record only), so nothing of softhca runs.
#[library_benchmark]
#[bench::one_segment(setup = connected)]
fn post_recv_1_segment(c: Box<Connected>) -> Box<Connected> {
    assert!(black_box(c.client.post_recv(black_box(&c.triplet), 1, 0)).is_ok());
    c
}

library_benchmark_group!(
    name = engine;
    benchmarks = post_send_1_segment, post_recv_1_segment, dequeue_1_dto_event
);

main!(library_benchmark_groups = engine);
