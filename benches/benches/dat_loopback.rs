//! Single-thread loopback 8-byte SEND/RECV ping-pong through the DAT API (the engine's
//! EPs and EVDs) over softhca, for instruction counts: two IAs in one process, their EPs
//! connected through the connection manager, one thread doing both sides as `ferrodat
//! perf`'s DAT rows do (sends suppressed but every 32nd, completions by busy-polling
//! `dat_evd_dequeue`, each receive reposted). It is `driver_loopback` with the DAT layer
//! on top, so the difference between the two is what the DAT layer adds. Run it under
//! callgrind with two round counts and divide the difference by the number of messages
//! (two per round trip):
//!
//! ```text
//! cargo bench -p ferrodat-benches --bench dat_loopback --no-run
//! FERRODAT_BENCH_ROUNDS=20000 valgrind --tool=callgrind <bench binary>
//! ```
//!
//! Without valgrind it prints the time per message (single thread, no cache-line
//! transfers: the software cost of the path).

use ferrodat_abi::dat::{completion_flags, dtos, evd_flags, mem_priv, ret};
use ferrodat_engine::ep::{Ep, EpAttr};
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::ia::{Ia, IaSpec};
use ferrodat_engine::lmr::{Lmr, LmrTriplet, MemPriv};
use ferrodat_engine::pz::Pz;
use ferrodat_engine::sp::Psp;
use ferrodat_softhca::fabric::use_private_fabric;
use std::time::Instant;

/// Sends go out suppressed but every this many (as `ferrodat perf`'s DAT rows).
const SIGNAL_EVERY: u64 = 32;
/// Receives each side keeps posted.
const RECEIVES: u64 = 16;

/// One side: its EP, its receive and request EVDs, and the LMR it sends from and
/// receives into.
struct Side {
    ep: Ep,
    recv_evd: Evd,
    req_evd: Evd,
    conn_evd: Evd,
    lmr: Lmr,
    /// Requests posted and signalled requests completed.
    posted: u64,
    signalled: u64,
    completed: u64,
}

impl Side {
    fn new(ia: &Ia) -> Side {
        let pz = Pz::create(ia).unwrap();
        let recv_evd = Evd::create(ia, 64, evd_flags::DTO).unwrap();
        let req_evd = Evd::create(ia, 64, evd_flags::DTO).unwrap();
        let conn_evd = Evd::create(ia, 4, evd_flags::CONNECTION).unwrap();
        // Room for the suppressed sends before each signalled one: an unsignalled send
        // stays outstanding until a later completion retires it.
        let attr = EpAttr { max_request_dtos: 2 * SIGNAL_EVERY as u32, ..EpAttr::defaults(ia) };
        let ep = Ep::create(&pz, &recv_evd, &req_evd, Some(&conn_evd), Some(attr)).unwrap();
        let lmr = Lmr::alloc(&pz, 4096, MemPriv(mem_priv::ALL)).unwrap();
        Side { ep, recv_evd, req_evd, conn_evd, lmr, posted: 0, signalled: 0, completed: 0 }
    }

    fn triplet(&self, offset: u64, length: u64) -> [LmrTriplet; 1] {
        [self.lmr.triplet(offset, length).unwrap()]
    }

    /// Sends 8 bytes, signalled every [`SIGNAL_EVERY`]th; takes the request completions
    /// as they come (as `ferrodat perf` does while a signalled one is outstanding).
    fn send(&mut self, src: &[LmrTriplet; 1]) {
        self.posted += 1;
        let signal = self.posted.is_multiple_of(SIGNAL_EVERY);
        let flags = if signal { 0 } else { completion_flags::SUPPRESS };
        self.ep.post_send(src, self.posted, flags).unwrap();
        if signal {
            self.signalled += 1;
        }
    }

    /// Busy-polls until a receive completes, then reposts it.
    fn receive(&mut self, dst: &[LmrTriplet; 1]) {
        loop {
            if self.signalled > self.completed {
                match self.req_evd.dequeue() {
                    Ok(Event::Dto { completion, .. }) => {
                        assert_eq!(completion.operation, dtos::SEND, "{completion:?}");
                        self.completed += 1;
                    }
                    Err(e) if e.return_type() == ret::QUEUE_EMPTY => {}
                    other => panic!("request EVD: {other:?}"),
                }
            }
            match self.recv_evd.dequeue() {
                Ok(Event::Dto { completion, .. }) => {
                    assert_eq!(completion.transfered_length, 8, "{completion:?}");
                    self.ep.post_recv(dst, completion.user_cookie, 0).unwrap();
                    return;
                }
                Err(e) if e.return_type() == ret::QUEUE_EMPTY => {}
                other => panic!("receive EVD: {other:?}"),
            }
        }
    }
}

fn main() {
    let rounds: u64 =
        std::env::var("FERRODAT_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000);
    use_private_fabric("bench-dat-loopback");
    // One thread busy-polls both sides, so nothing needs softhca's progress thread, which
    // would only compete for the CPU (the driver and softhca loopbacks run without it).
    // SAFETY: no other thread exists yet.
    unsafe { std::env::set_var("FERRODAT_SOFTHCA_PROGRESS_THREAD", "0") };
    let spec = IaSpec::parse("softhca0 1 127.0.0.1").unwrap();
    let (server_ia, client_ia) =
        (Ia::open("ferro0", &spec).unwrap(), Ia::open("ferro0", &spec).unwrap());
    let mut server = Side::new(&server_ia);
    let mut client = Side::new(&client_ia);
    let (src, dst) = (client.triplet(0, 8), client.triplet(64, 64));
    let (server_src, server_dst) = (server.triplet(0, 8), server.triplet(64, 64));
    for i in 0..RECEIVES {
        server.ep.post_recv(&server_dst, i, 0).unwrap();
        client.ep.post_recv(&dst, i, 0).unwrap();
    }
    // Connect through a PSP on a port of its own (the engine's connection manager).
    let cr_evd = Evd::create(&server_ia, 4, evd_flags::CR).unwrap();
    let port = 31_997;
    let _psp = Psp::create(&server_ia, port, &cr_evd).unwrap();
    client.ep.connect(server_ia.attr().address, port, None, &[]).unwrap();
    let wait = 10_000_000; // µs
    let Event::ConnectionRequest { cr, .. } = cr_evd.wait(wait, 1).unwrap().0 else {
        panic!("expected a connection request")
    };
    cr.accept(Some(&server.ep), &[]).unwrap();
    for side in [&client, &server] {
        let (ev, _) = side.conn_evd.wait(wait, 1).unwrap();
        assert!(matches!(ev, Event::Connection { .. }), "{ev:?}");
    }
    let start = Instant::now();
    for _ in 0..rounds {
        client.send(&src);
        server.receive(&server_dst);
        server.send(&server_src);
        client.receive(&dst);
    }
    let elapsed = start.elapsed();
    println!(
        "DAT loopback over softhca: {rounds} round trips, {:.0} ns per message",
        elapsed.as_nanos() as f64 / (2 * rounds) as f64
    );
}
