//! The DAT layer between two processes over softhca: a server process with a PSP and a
//! client process that connects, sends, writes and disconnects — the dtest shape.

#[path = "../../softhca/tests/support/child.rs"]
#[allow(dead_code)]
mod child;
mod support;

use child::{ChildProc, ROLE_ENV, read_command, say};
use ferrodat_abi::dat::{dtos, evd_flags, event, mem_priv};
use ferrodat_engine::ep::Ep;
use ferrodat_engine::ep_state::DisconnectMode;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::lmr::{Lmr, MemPriv, RmrTriplet};
use ferrodat_engine::pz::Pz;
use ferrodat_engine::sp::Psp;
use ferrodat_softhca::fabric::SHM_DIR_ENV;

const WAIT_US: u32 = 10_000_000;
const PORT: u16 = 31160;

struct Side {
    ep: Ep,
    conn_evd: Evd,
    req_evd: Evd,
    recv_evd: Evd,
    buf: Lmr,
    pz: Pz,
}

fn side(ia: &ferrodat_engine::ia::Ia) -> Side {
    let pz = Pz::create(ia).unwrap();
    let conn_evd = Evd::create(ia, 8, evd_flags::CONNECTION).unwrap();
    let req_evd = Evd::create(ia, 32, evd_flags::DTO).unwrap();
    let recv_evd = Evd::create(ia, 32, evd_flags::DTO).unwrap();
    let ep = Ep::create(&pz, &recv_evd, &req_evd, Some(&conn_evd), None).unwrap();
    let buf = Lmr::alloc(&pz, 1 << 16, MemPriv(mem_priv::ALL)).unwrap();
    Side { ep, conn_evd, req_evd, recv_evd, buf, pz }
}

fn number(ev: Event) -> u32 {
    match ev {
        Event::Connection { number, .. } => number,
        other => panic!("expected a connection event, got {other:?}"),
    }
}

fn dto(ev: Event) -> ferrodat_engine::dto::DtoCompletion {
    match ev {
        Event::Dto { completion, .. } => completion,
        other => panic!("expected a DTO completion, got {other:?}"),
    }
}

/// The client, in the child process: connects, sends its region's address (as dtest sends
/// an RMR triplet), RDMA-writes into the server's, waits to be disconnected.
fn client() {
    let ia = support::ia();
    let s = side(&ia);
    s.ep.post_recv(&[s.buf.triplet(0, 64).unwrap()], 1, 0).unwrap();
    say("READY");
    let _go = read_command();
    s.ep.connect("127.0.0.1".parse().unwrap(), PORT, None, &[7u8; 48]).unwrap();
    assert_eq!(number(s.conn_evd.wait(WAIT_US, 1).unwrap().0), event::CONNECTION_EVENT_ESTABLISHED);
    // The server's region (address, rmr_context) arrives in a message.
    let r = dto(s.recv_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!((r.user_cookie, r.transfered_length), (1, 12));
    let mut msg = [0u8; 12];
    s.buf.read(0, &mut msg).unwrap();
    let target = RmrTriplet {
        virtual_address: u64::from_be_bytes(msg[..8].try_into().unwrap()),
        rmr_context: u32::from_be_bytes(msg[8..].try_into().unwrap()),
        segment_length: 4096,
    };
    let data: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    s.buf.write(8192, &data).unwrap();
    s.ep.post_rdma_write(&[s.buf.triplet(8192, 4096).unwrap()], 2, &target, 0).unwrap();
    let w = dto(s.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!((w.user_cookie, w.status, w.operation), (2, 0, dtos::RDMA_WRITE));
    // Tell the server the write is done.
    s.buf.write(100, b"done").unwrap();
    s.ep.post_send(&[s.buf.triplet(100, 4).unwrap()], 3, 0).unwrap();
    assert_eq!(dto(s.req_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 3);
    assert_eq!(
        number(s.conn_evd.wait(WAIT_US, 1).unwrap().0),
        event::CONNECTION_EVENT_DISCONNECTED
    );
    say("DONE");
    let _ = read_command();
    drop(s.pz);
}

#[test]
fn a_server_and_a_client_process_connect_and_move_data() {
    if std::env::var(ROLE_ENV).as_deref() == Ok("client") {
        return client();
    }
    let ia = support::ia();
    let fabric = std::env::var(SHM_DIR_ENV).unwrap();
    let s = side(&ia);
    let cr_evd = Evd::create(&ia, 4, evd_flags::CR).unwrap();
    let psp = Psp::create(&ia, PORT, &cr_evd).unwrap();
    s.ep.post_recv(&[s.buf.triplet(0, 64).unwrap()], 10, 0).unwrap();
    let mut child = ChildProc::spawn(
        "a_server_and_a_client_process_connect_and_move_data",
        "client",
        &[(SHM_DIR_ENV, &fabric), ("FERRODAT_SOFTHCA_PROGRESS_THREAD", "1")],
    );
    child.expect("READY");
    child.send("go");
    let Event::ConnectionRequest { cr, sp, .. } = cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a connection request")
    };
    assert_eq!(sp, psp.id());
    assert_eq!(cr.query().unwrap().private_data, vec![7u8; 48]);
    cr.accept(Some(&s.ep), b"").unwrap();
    assert_eq!(number(s.conn_evd.wait(WAIT_US, 1).unwrap().0), event::CONNECTION_EVENT_ESTABLISHED);
    // Send our region's address and rmr_context, big-endian (dtest's RMR triplet).
    let mut msg = s.buf.registered_address().to_be_bytes().to_vec();
    msg.extend_from_slice(&s.buf.rmr_context().to_be_bytes());
    s.buf.write(200, &msg).unwrap();
    s.ep.post_send(&[s.buf.triplet(200, 12).unwrap()], 11, 0).unwrap();
    assert_eq!(dto(s.req_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 11);
    let done = dto(s.recv_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!((done.user_cookie, done.transfered_length), (10, 4), "{done:?}");
    let mut got = vec![0u8; 4096];
    s.buf.read(0, &mut got).unwrap();
    let data: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(
        got[4..],
        data[4..],
        "the RDMA WRITE landed (the first bytes were overwritten by 'done')"
    );
    s.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    assert_eq!(
        number(s.conn_evd.wait(WAIT_US, 1).unwrap().0),
        event::CONNECTION_EVENT_DISCONNECTED
    );
    child.expect("DONE");
    child.finish();
}

const KILL_PORT: u16 = 31161;

/// The client of the kill test: connects, then sends as fast as the server takes them,
/// until it is killed.
fn streaming_client() {
    let ia = support::ia();
    let s = side(&ia);
    s.ep.connect("127.0.0.1".parse().unwrap(), KILL_PORT, None, &[]).unwrap();
    assert_eq!(number(s.conn_evd.wait(WAIT_US, 1).unwrap().0), event::CONNECTION_EVENT_ESTABLISHED);
    say("CONNECTED");
    for i in 0u64.. {
        s.buf.write(0, &i.to_le_bytes()).unwrap();
        s.ep.post_send(&[s.buf.triplet(0, 1024).unwrap()], i, 0).unwrap();
        let c = dto(s.req_evd.wait(WAIT_US, 1).unwrap().0);
        if c.status != 0 {
            break;
        }
    }
    say("STOPPED");
    let _ = read_command();
}

/// A peer process killed in the middle of a stream of sends: the survivor gets a
/// connection event (never a hang), and its posted receives come back flushed.
#[test]
fn a_peer_killed_mid_transfer_ends_the_connection_with_an_event() {
    if std::env::var(ROLE_ENV).as_deref() == Ok("streaming-client") {
        return streaming_client();
    }
    let ia = support::ia();
    let fabric = std::env::var(SHM_DIR_ENV).unwrap();
    let s = side(&ia);
    let cr_evd = Evd::create(&ia, 4, evd_flags::CR).unwrap();
    let _psp = Psp::create(&ia, KILL_PORT, &cr_evd).unwrap();
    const RECVS: u64 = 16;
    for i in 0..RECVS {
        s.ep.post_recv(&[s.buf.triplet(i * 1024, 1024).unwrap()], i, 0).unwrap();
    }
    let mut child = ChildProc::spawn(
        "a_peer_killed_mid_transfer_ends_the_connection_with_an_event",
        "streaming-client",
        &[(SHM_DIR_ENV, &fabric), ("FERRODAT_SOFTHCA_PROGRESS_THREAD", "1")],
    );
    let Event::ConnectionRequest { cr, .. } = cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a connection request")
    };
    cr.accept(Some(&s.ep), b"").unwrap();
    assert_eq!(number(s.conn_evd.wait(WAIT_US, 1).unwrap().0), event::CONNECTION_EVENT_ESTABLISHED);
    child.expect("CONNECTED");
    // Take a few messages, reposting, then kill the sender mid-stream.
    for next in RECVS..RECVS + 40 {
        let r = dto(s.recv_evd.wait(WAIT_US, 1).unwrap().0);
        assert_eq!((r.status, r.transfered_length), (0, 1024), "{r:?}");
        let slot = r.user_cookie % RECVS;
        s.ep.post_recv(&[s.buf.triplet(slot * 1024, 1024).unwrap()], next, 0).unwrap();
    }
    child.kill();

    // The connection ends with an event on the survivor.
    let ev = s.conn_evd.wait(WAIT_US, 1).unwrap().0;
    let n = number(ev);
    assert!(
        n == event::CONNECTION_EVENT_DISCONNECTED || n == event::CONNECTION_EVENT_BROKEN,
        "expected DISCONNECTED or BROKEN after the peer died, got {n:#x}"
    );
    // Every receive still posted comes back: the ones that got a message before the kill,
    // then the rest flushed. None is lost, none hangs.
    let mut flushed = 0;
    let mut seen = 0;
    while seen < RECVS {
        let r = dto(s.recv_evd.wait(WAIT_US, 1).unwrap().0);
        seen += 1;
        if r.status == ferrodat_abi::dat::dto_status::ERR_FLUSHED {
            flushed += 1;
        } else {
            assert_eq!(r.status, 0, "{r:?}");
        }
    }
    assert!(flushed > 0, "the receives left posted were flushed");
    let e = s.recv_evd.wait(100_000, 1).unwrap_err();
    assert_eq!(e.return_type(), ferrodat_abi::dat::ret::TIMEOUT_EXPIRED, "{e}");
}

/// The child of the test below: out of file descriptors, `dat_ep_connect` cannot make its
/// socket. It must say so (INSUFFICIENT_RESOURCES) and leave the endpoint UNCONNECTED with
/// its pre-posted receive in place, so that the same connect works once fds are free and
/// the receive takes the first message.
fn fd_starved_connector() {
    let ia = support::ia();
    let s = side(&ia);
    let cr_evd = Evd::create(&ia, 4, evd_flags::CR).unwrap();
    let _psp = Psp::create(&ia, 31183, &cr_evd).unwrap(); // the CM runs from here on
    s.ep.post_recv(&[s.buf.triplet(0, 64).unwrap()], 77, 0).unwrap();
    let to = "127.0.0.1".parse().unwrap();
    let mut hog = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        hog.push(f);
    }
    let refused = s.ep.connect(to, 31183, None, b"");
    hog.clear();
    let e = match refused {
        Ok(()) => return say("FAIL the connect succeeded without file descriptors"),
        Err(e) => e,
    };
    if e.return_type() != ferrodat_abi::dat::ret::INSUFFICIENT_RESOURCES {
        return say(&format!("FAIL wrong error: {e}"));
    }
    if s.ep.state() != ferrodat_engine::ep_state::EpState::Unconnected {
        return say(&format!("FAIL state after the refused connect: {:?}", s.ep.state()));
    }
    if s.recv_evd.wait(100_000, 1).is_ok() || s.conn_evd.dequeue().is_ok() {
        return say("FAIL the refused connect flushed the receive or reported an event");
    }
    // Fds back: the same endpoint connects (to its own IA's PSP) and its receive is there.
    s.ep.connect(to, 31183, None, b"").unwrap();
    let Event::ConnectionRequest { cr, .. } = cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        return say("FAIL no request");
    };
    let server = side(&ia);
    cr.accept(Some(&server.ep), b"").unwrap();
    // Both sides: the accepting one is CONNECTED only once the RTU arrived.
    for evd in [&s.conn_evd, &server.conn_evd] {
        assert_eq!(number(evd.wait(WAIT_US, 1).unwrap().0), event::CONNECTION_EVENT_ESTABLISHED);
    }
    server.buf.write(0, b"fd ok").unwrap();
    server.ep.post_send(&[server.buf.triplet(0, 5).unwrap()], 1, 0).unwrap();
    let r = dto(s.recv_evd.wait(WAIT_US, 1).unwrap().0);
    if (r.user_cookie, r.transfered_length) != (77, 5) {
        return say(&format!("FAIL the pre-posted receive: {r:?}"));
    }
    say("OK");
}

#[test]
fn a_connect_without_file_descriptors_fails_and_leaves_the_endpoint_as_it_was() {
    if std::env::var(ROLE_ENV).as_deref() == Ok("fd-starved") {
        return fd_starved_connector();
    }
    support::private_fabric();
    let fabric = std::env::var(SHM_DIR_ENV).unwrap();
    let mut child = ChildProc::spawn(
        "a_connect_without_file_descriptors_fails_and_leaves_the_endpoint_as_it_was",
        "fd-starved",
        &[(SHM_DIR_ENV, &fabric), ("FERRODAT_SOFTHCA_PROGRESS_THREAD", "1")],
    );
    child.expect("OK");
    child.finish();
}
