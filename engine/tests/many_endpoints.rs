//! Hundreds of connected endpoints between two IAs, as a storage target holds them: data
//! both ways on shared EVDs, then the client's `dat_ia_close` (abrupt) ends them all
//! promptly and the server sees each disconnected, and the server frees its endpoints.

mod support;

use ferrodat_abi::dat::{evd_flags, event, mem_priv};
use ferrodat_engine::ep::Ep;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::ia::CloseMode;
use ferrodat_engine::lmr::{Lmr, MemPriv, RmrTriplet};
use ferrodat_engine::pz::Pz;
use ferrodat_engine::sp::Psp;
use std::time::{Duration, Instant};
use support::{WAIT_US, ia};

const EPS: u64 = 200;
const PORT: u16 = 31_377;

#[test]
fn hundreds_of_connected_endpoints_move_data_and_close_with_their_ia() {
    let (sia, cia) = (ia(), ia());
    let (spz, cpz) = (Pz::create(&sia).unwrap(), Pz::create(&cia).unwrap());
    let q = (4 * EPS) as u32;
    let evds = |ia| {
        (
            Evd::create(ia, q, evd_flags::DTO).unwrap(),
            Evd::create(ia, q, evd_flags::CONNECTION).unwrap(),
        )
    };
    let ((sdto, sconn), (cdto, cconn)) = (evds(&sia), evds(&cia));
    let cr_evd = Evd::create(&sia, q, evd_flags::CR).unwrap();
    let all = MemPriv(mem_priv::ALL);
    let slot = 64u64;
    let sbuf = Lmr::alloc(&spz, (3 * EPS * slot) as usize, all).unwrap();
    let cbuf = Lmr::alloc(&cpz, (3 * EPS * slot) as usize, all).unwrap();
    let _psp = Psp::create(&sia, PORT, &cr_evd).unwrap();
    let mut server_eps = Vec::new();
    let mut client_eps = Vec::new();
    for i in 0..EPS {
        let s = Ep::create(&spz, &sdto, &sdto, Some(&sconn), None).unwrap();
        let c = Ep::create(&cpz, &cdto, &cdto, Some(&cconn), None).unwrap();
        s.post_recv(&[sbuf.triplet(i * slot, slot).unwrap()], i, 0).unwrap();
        c.post_recv(&[cbuf.triplet(i * slot, slot).unwrap()], i, 0).unwrap();
        c.connect(sia.attr().address, PORT, None, b"").unwrap();
        let Event::ConnectionRequest { cr, .. } = cr_evd.wait(WAIT_US, 1).unwrap().0 else {
            panic!("connection {i}: expected a request")
        };
        cr.accept(Some(&s), b"").unwrap();
        for evd in [&cconn, &sconn] {
            let ev = evd.wait(WAIT_US, 1).unwrap().0;
            assert!(
                matches!(ev, Event::Connection { number: event::CONNECTION_EVENT_ESTABLISHED, .. }),
                "connection {i}: {ev:?}"
            );
        }
        server_eps.push(s);
        client_eps.push(c);
    }
    // Every connection: an RDMA WRITE and a SEND from the client, a SEND back.
    let start = Instant::now();
    for i in 0..EPS {
        let (c, s) = (&client_eps[i as usize], &server_eps[i as usize]);
        cbuf.write(((EPS + i) * slot) as usize, &[i as u8; 8]).unwrap();
        let remote = RmrTriplet {
            rmr_context: sbuf.rmr_context(),
            virtual_address: sbuf.registered_address() + (2 * EPS + i) * slot,
            segment_length: 8,
        };
        c.post_rdma_write(&[cbuf.triplet((EPS + i) * slot, 8).unwrap()], 1000 + i, &remote, 0)
            .unwrap();
        c.post_send(&[cbuf.triplet((EPS + i) * slot, 8).unwrap()], 2000 + i, 0).unwrap();
        sbuf.write(((EPS + i) * slot) as usize, &[!(i as u8); 8]).unwrap();
        s.post_send(&[sbuf.triplet((EPS + i) * slot, 8).unwrap()], 3000 + i, 0).unwrap();
    }
    let mut cookies = std::collections::BTreeSet::new();
    for (side, evd, n) in [(0, &sdto, 2 * EPS), (1, &cdto, 3 * EPS)] {
        for _ in 0..n {
            let Event::Dto { completion: d, .. } = evd.wait(WAIT_US, 1).unwrap().0 else {
                panic!("expected a DTO")
            };
            assert_eq!(d.status, 0, "{d:?}");
            assert!(cookies.insert((side, d.user_cookie)), "completion twice: {d:?}");
        }
    }
    eprintln!("{} DTOs on {EPS} connections in {:?}", 5 * EPS, start.elapsed());
    for i in 0..EPS {
        let mut got = [0u8; 8];
        sbuf.read((i * slot) as usize, &mut got).unwrap();
        assert_eq!(got, [i as u8; 8], "SEND of connection {i}");
        sbuf.read(((2 * EPS + i) * slot) as usize, &mut got).unwrap();
        assert_eq!(got, [i as u8; 8], "RDMA WRITE of connection {i}");
        cbuf.read((i * slot) as usize, &mut got).unwrap();
        assert_eq!(got, [!(i as u8); 8], "SEND back on connection {i}");
    }

    // The client goes away with everything it has: the server hears of each connection.
    drop(client_eps);
    drop((cdto, cconn, cbuf));
    let start = Instant::now();
    cia.close(CloseMode::Abrupt).unwrap();
    let closed = start.elapsed();
    for i in 0..EPS {
        let ev = sconn.wait(WAIT_US, 1).unwrap_or_else(|e| panic!("disconnect {i}: {e}")).0;
        assert!(
            matches!(ev, Event::Connection { number: event::CONNECTION_EVENT_DISCONNECTED, .. }),
            "{ev:?}"
        );
    }
    let heard = start.elapsed();
    let start = Instant::now();
    for s in server_eps {
        s.free().unwrap();
    }
    let freed = start.elapsed();
    eprintln!(
        "dat_ia_close {closed:?}, all {EPS} disconnected after {heard:?}, freed in {freed:?}"
    );
    assert!(heard < Duration::from_secs(3), "{EPS} disconnections took {heard:?}");
}
