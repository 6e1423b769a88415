//! Two endpoints connected through the connection manager, in one process over softhca:
//! the dtest sequence at the Rust API — PSP, request with private data, accept, the
//! ESTABLISHED events, SEND/RECV, RDMA WRITE and READ checked byte for byte, disconnect.

mod support;

use support::{Side, WAIT_US, connection, dto, side};

use ferrodat_abi::dat::{dto_status, dtos, evd_flags, event, mem_priv, ret, subtype};
use ferrodat_engine::ep::Ep;
use ferrodat_engine::ep_state::{DisconnectMode, EpState};
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::lmr::{Lmr, MemPriv, RmrTriplet};
use ferrodat_engine::sp::Psp;

#[test]
fn two_endpoints_connect_exchange_data_and_disconnect() {
    let server = side();
    let client = side();
    let psp = Psp::create(&server.ia, 31150, &server.cr_evd).unwrap();
    assert_eq!(psp.conn_qual(), 31150);
    // Receives pre-posted before the connection (dtest posts three).
    for s in [&server, &client] {
        s.ep.post_recv(&[s.buf.triplet(0, 64).unwrap()], 100, 0).unwrap();
    }

    let pdata: Vec<u8> = (1..=48).collect();
    client.ep.connect(server.ia.attr().address, 31150, None, &pdata).unwrap();
    assert_eq!(client.ep.state(), EpState::ActiveConnectionPending);
    let (request, _) = server.cr_evd.wait(WAIT_US, 1).unwrap();
    let Event::ConnectionRequest { sp, cr, conn_qual } = request else {
        panic!("expected a connection request, got {request:?}")
    };
    assert_eq!((sp, conn_qual), (psp.id(), 31150));
    let got = cr.query().unwrap().private_data;
    assert_eq!(got, pdata);
    let reply: Vec<u8> = pdata.iter().map(|b| b + 1).collect();
    let e = cr.accept(Some(&client.another_ep()), &reply).unwrap_err();
    assert_eq!(e.subtype(), subtype::INVALID_HANDLE_EP, "an endpoint of another IA: {e}");
    cr.accept(Some(&server.ep), &reply).unwrap();
    assert!(cr.accept(Some(&server.ep), &reply).is_err(), "a CR is used up by its accept");

    let (number, got) = connection(client.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!((number, got), (event::CONNECTION_EVENT_ESTABLISHED, reply));
    let (number, _) = connection(server.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(number, event::CONNECTION_EVENT_ESTABLISHED);
    assert_eq!(client.ep.state(), EpState::Connected);
    assert_eq!(server.ep.state(), EpState::Connected);
    assert_eq!(client.ep.remote_address(), Some("127.0.0.1:31150".parse().unwrap()));
    assert_eq!(server.ep.remote_address().map(|a| a.ip()), Some("127.0.0.1".parse().unwrap()));

    // SEND/RECV: 16 bytes into the pre-posted receive.
    client.buf.write(4096, b"sixteen bytes!!!").unwrap();
    client.ep.post_send(&[client.buf.triplet(4096, 16).unwrap()], 7, 0).unwrap();
    let recv = dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(
        (recv.user_cookie, recv.status, recv.transfered_length, recv.operation),
        (100, 0, 16, dtos::RECEIVE)
    );
    let mut got = [0u8; 16];
    server.buf.read(0, &mut got).unwrap();
    assert_eq!(&got, b"sixteen bytes!!!");
    let sent = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(
        (sent.user_cookie, sent.status, sent.transfered_length, sent.operation),
        (7, 0, 16, dtos::SEND)
    );

    // RDMA WRITE into the server's region, then RDMA READ it back into another place.
    let target = RmrTriplet {
        rmr_context: server.buf.rmr_context(),
        virtual_address: server.buf.registered_address() + 1000,
        segment_length: 100,
    };
    let data: Vec<u8> = (0..100).map(|i| (i * 7) as u8).collect();
    client.buf.write(5000, &data).unwrap();
    client.ep.post_rdma_write(&[client.buf.triplet(5000, 100).unwrap()], 8, &target, 0).unwrap();
    let w = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(
        (w.user_cookie, w.status, w.transfered_length, w.operation),
        (8, 0, 100, dtos::RDMA_WRITE)
    );
    let mut got = vec![0u8; 100];
    server.buf.read(1000, &mut got).unwrap();
    assert_eq!(got, data);
    client.ep.post_rdma_read(&[client.buf.triplet(6000, 100).unwrap()], 9, &target, 0).unwrap();
    let r = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(
        (r.user_cookie, r.status, r.transfered_length, r.operation),
        (9, 0, 100, dtos::RDMA_READ)
    );
    client.buf.read(6000, &mut got).unwrap();
    assert_eq!(got, data);

    // A suppressed success makes no event; the signalled one after it does.
    client.ep.post_rdma_write(&[client.buf.triplet(5000, 100).unwrap()], 10, &target, 1).unwrap();
    client.ep.post_rdma_write(&[client.buf.triplet(5000, 100).unwrap()], 11, &target, 0).unwrap();
    assert_eq!(dto(client.req_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 11);

    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    let (number, _) = connection(client.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(number, event::CONNECTION_EVENT_DISCONNECTED);
    let (number, _) = connection(server.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(number, event::CONNECTION_EVENT_DISCONNECTED);
    assert_eq!(server.ep.state(), EpState::Disconnected);
    // The server's remaining receives: none posted, so nothing flushed; a new post on the
    // DISCONNECTED EP completes as flushed, unless it has more segments than the endpoint
    // takes: that is refused in every state.
    let five = [server.buf.triplet(0, 8).unwrap(); 5];
    let e = server.ep.post_recv(&five, 199, 0).unwrap_err();
    assert_eq!(e.return_type(), ferrodat_abi::dat::ret::INVALID_PARAMETER, "{e}");
    let e = server.ep.post_send(&five, 199, 0).unwrap_err();
    assert_eq!(e.return_type(), ferrodat_abi::dat::ret::INVALID_PARAMETER, "{e}");
    server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], 200, 0).unwrap();
    let flushed = dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(
        (flushed.user_cookie, flushed.status),
        (200, ferrodat_abi::dat::dto_status::ERR_FLUSHED)
    );
}

#[test]
fn a_connect_nobody_listens_for_is_reported_as_peer_rejected() {
    let client = side();
    client.ep.connect("127.0.0.1".parse().unwrap(), 31151, None, b"").unwrap();
    let (number, _) = connection(client.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(number, event::CONNECTION_EVENT_PEER_REJECTED);
    assert_eq!(client.ep.state(), EpState::Disconnected);
}

#[test]
fn a_connect_or_accept_refused_for_its_arguments_leaves_the_endpoint_as_it_was() {
    let (server, client, _psp) = listening_pair(31180);
    for s in [&server, &client] {
        s.ep.post_recv(&[s.buf.triplet(0, 64).unwrap()], 100, 0).unwrap();
    }
    let address = server.ia.attr().address;
    let too_much = vec![7u8; 257];
    let arg = |e: ferrodat_engine::error::DatError| (e.return_type(), e.subtype());
    let e = client.ep.connect(address, 31180, None, &too_much).unwrap_err();
    assert_eq!(arg(e), (ret::INVALID_PARAMETER, subtype::INVALID_ARG5));
    let e = client.ep.connect(address, 0, None, b"").unwrap_err();
    assert_eq!(arg(e), (ret::INVALID_PARAMETER, subtype::INVALID_ARG3));
    // Still UNCONNECTED, its receive not flushed: the next connect goes through.
    assert_eq!(client.ep.state(), EpState::Unconnected);
    assert!(client.recv_evd.dequeue().is_err(), "nothing flushed");
    client.ep.connect(address, 31180, None, b"hello").unwrap();
    let Event::ConnectionRequest { cr, .. } = server.cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a connection request")
    };
    // The accept, likewise: refused, with the server's endpoint untouched; then accepted.
    let e = cr.accept(Some(&server.ep), &too_much).unwrap_err();
    assert_eq!(arg(e), (ret::INVALID_PARAMETER, subtype::INVALID_ARG3));
    assert_eq!(server.ep.state(), EpState::Unconnected);
    cr.accept(Some(&server.ep), b"welcome").unwrap();
    for s in [&server, &client] {
        let (number, _) = connection(s.conn_evd.wait(WAIT_US, 1).unwrap().0);
        assert_eq!(number, event::CONNECTION_EVENT_ESTABLISHED);
    }
    // The receives posted before the refused calls are the ones the first SENDs land in.
    for (from, to) in [(&client, &server), (&server, &client)] {
        from.ep.post_send(&[from.buf.triplet(4096, 8).unwrap()], 9, 0).unwrap();
        let r = dto(to.recv_evd.wait(WAIT_US, 1).unwrap().0);
        assert_eq!((r.user_cookie, r.status, r.transfered_length), (100, 0, 8));
    }
}

#[test]
fn freeing_a_connected_endpoint_reports_disconnected_on_both_sides_once() {
    let (server, client, _psp) = listening_pair(31181);
    connect(&server, &client, 31181);
    client.ep.clone().free().unwrap();
    for s in [&client, &server] {
        let (number, _) = connection(s.conn_evd.wait(WAIT_US, 1).unwrap().0);
        assert_eq!(number, event::CONNECTION_EVENT_DISCONNECTED);
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(client.conn_evd.dequeue().is_err(), "one DISCONNECTED for the freed endpoint");
    assert_eq!(server.ep.state(), EpState::Disconnected);
}

#[test]
fn a_post_on_a_disconnected_endpoint_completes_after_the_flushes_of_earlier_posts() {
    let (server, client, _psp) = listening_pair(31182);
    connect(&server, &client, 31182);
    for i in 1..=2u64 {
        server.ep.post_recv(&[server.buf.triplet(64 * i, 64).unwrap()], i, 0).unwrap();
    }
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    let (number, _) = connection(server.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(number, event::CONNECTION_EVENT_DISCONNECTED);
    // The "marker" a consumer posts before dat_ep_reset: its flushed completion must come
    // after those of everything posted before it (they may still be in the CQ).
    server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], 3, 0).unwrap();
    let order: Vec<(u64, u32)> = (0..3)
        .map(|_| {
            let c = dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0);
            (c.user_cookie, c.status)
        })
        .collect();
    let flushed = dto_status::ERR_FLUSHED;
    assert_eq!(order, [(1, flushed), (2, flushed), (3, flushed)]);
}

/// Connects `client` to `server` through `server`'s PSP on `port`.
fn connect(server: &Side, client: &Side, port: u16) {
    connect_ep(server, &server.ep, &client.ep, &client.conn_evd, port);
}

/// Connects endpoint `ep` (connection events on `conn_evd`) to `server`'s PSP on `port`,
/// accepted on `accept_on`; both sides see ESTABLISHED.
fn connect_ep(server: &Side, accept_on: &Ep, ep: &Ep, conn_evd: &Evd, port: u16) {
    ep.connect(server.ia.attr().address, port, None, b"hello").unwrap();
    let Event::ConnectionRequest { cr, .. } = server.cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a connection request")
    };
    cr.accept(Some(accept_on), b"").unwrap();
    assert_eq!(
        connection(conn_evd.wait(WAIT_US, 1).unwrap().0).0,
        event::CONNECTION_EVENT_ESTABLISHED
    );
    assert_eq!(
        connection(server.conn_evd.wait(WAIT_US, 1).unwrap().0).0,
        event::CONNECTION_EVENT_ESTABLISHED
    );
}

/// A server and a client side, the server listening on `port` (its PSP).
fn listening_pair(port: u16) -> (Side, Side, Psp) {
    let server = side();
    let client = side();
    let psp = Psp::create(&server.ia, port, &server.cr_evd).unwrap();
    (server, client, psp)
}

/// One SEND from `from` into a receive `to` posts now, data checked.
fn exchange(from: &Side, to: &Side, cookie: u64) {
    to.ep.post_recv(&[to.buf.triplet(0, 64).unwrap()], cookie, 0).unwrap();
    from.buf.write(4096, &cookie.to_le_bytes()).unwrap();
    from.ep.post_send(&[from.buf.triplet(4096, 8).unwrap()], cookie, 0).unwrap();
    let r = dto(to.recv_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!((r.user_cookie, r.status, r.transfered_length), (cookie, 0, 8));
    let mut got = [0u8; 8];
    to.buf.read(0, &mut got).unwrap();
    assert_eq!(u64::from_le_bytes(got), cookie);
    let sent = from.req_evd.wait(WAIT_US, 1);
    assert_eq!(dto(sent.unwrap_or_else(|e| panic!("send {cookie}: {e}")).0).user_cookie, cookie);
}

#[test]
fn a_graceful_disconnect_then_reset_lets_the_same_endpoints_connect_again() {
    let (server, client, _psp) = listening_pair(31152);
    for round in 0..3u64 {
        connect(&server, &client, 31152);
        exchange(&client, &server, 10 * round + 1);
        exchange(&server, &client, 10 * round + 2);
        client.ep.disconnect(DisconnectMode::Graceful).unwrap();
        assert_eq!(
            connection(client.conn_evd.wait(WAIT_US, 1).unwrap().0).0,
            event::CONNECTION_EVENT_DISCONNECTED
        );
        assert_eq!(
            connection(server.conn_evd.wait(WAIT_US, 1).unwrap().0).0,
            event::CONNECTION_EVENT_DISCONNECTED
        );
        assert_eq!(client.ep.state(), EpState::Disconnected);
        // dapltest's server resets its EP and reuses it for the next test.
        server.ep.reset().unwrap();
        client.ep.reset().unwrap();
        assert_eq!(server.ep.state(), EpState::Unconnected);
    }
    // Posting on an UNCONNECTED EP's send side is refused with its state.
    let e = client.ep.post_send(&[client.buf.triplet(0, 8).unwrap()], 1, 0).unwrap_err();
    assert_eq!(e.subtype(), ferrodat_abi::dat::subtype::INVALID_STATE_EP_UNCONNECTED, "{e}");
}

#[test]
fn write_with_immediate_and_atomics_as_dtestx_uses_them() {
    let (server, client, _psp) = listening_pair(31153);
    connect(&server, &client, 31153);
    // RDMA WRITE with immediate consumes a receive at the peer, which reports the data.
    server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], 4, 0).unwrap();
    let target = |offset: u64, len: u64| RmrTriplet {
        rmr_context: server.buf.rmr_context(),
        virtual_address: server.buf.registered_address() + offset,
        segment_length: len,
    };
    client.buf.write(4096, &[0x5a; 256]).unwrap();
    client
        .ep
        .post_rdma_write_immed(
            &[client.buf.triplet(4096, 256).unwrap()],
            0x9999,
            &target(2048, 256),
            0x7777,
            0,
        )
        .unwrap();
    let own = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(
        (own.user_cookie, own.operation, own.transfered_length),
        (0x9999, dtos::IB_RDMA_WRITE_IMMED, 256)
    );
    assert_eq!(own.ib_extension, Some((ferrodat_abi::dat::ib_ext_type::RDMA_WRITE_IMMED, None)));
    let inbound = dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!((inbound.user_cookie, inbound.transfered_length), (4, 256));
    assert_eq!(
        inbound.ib_extension,
        Some((ferrodat_abi::dat::ib_ext_type::RDMA_WRITE_IMMED_DATA, Some(0x7777)))
    );
    let mut got = [0u8; 256];
    server.buf.read(2048, &mut got).unwrap();
    assert_eq!(got, [0x5a; 256]);

    // Compare-and-swap, then fetch-and-add, on 8 bytes of the server's region.
    server.buf.write(64, &100u64.to_ne_bytes()).unwrap();
    let old = client.buf.triplet(0, 8).unwrap();
    client.ep.post_cmp_and_swap(100, 555, &old, 1, &target(64, 8), 0).unwrap();
    let cs = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!((cs.user_cookie, cs.status, cs.operation), (1, 0, dtos::IB_CMP_SWAP));
    let mut word = [0u8; 8];
    client.buf.read(0, &mut word).unwrap();
    assert_eq!(u64::from_ne_bytes(word), 100, "the old value");
    client.ep.post_fetch_and_add(45, &old, 2, &target(64, 8), 0).unwrap();
    let fa = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!((fa.user_cookie, fa.status, fa.operation), (2, 0, dtos::IB_FETCH_ADD));
    client.buf.read(0, &mut word).unwrap();
    assert_eq!(u64::from_ne_bytes(word), 555, "the value the swap stored");
    server.buf.read(64, &mut word).unwrap();
    assert_eq!(u64::from_ne_bytes(word), 600);

    // A region registered without the remote-atomic privilege refuses atomics, as the
    // device does: a remote access error, memory untouched.
    let plain = Lmr::alloc(&server.ep.pz(), 64, MemPriv(mem_priv::ALL)).unwrap();
    plain.write(0, &7u64.to_ne_bytes()).unwrap();
    let no_atomics = RmrTriplet {
        rmr_context: plain.rmr_context(),
        virtual_address: plain.registered_address(),
        segment_length: 8,
    };
    client.ep.post_fetch_and_add(1, &old, 3, &no_atomics, 0).unwrap();
    let refused = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(
        (refused.user_cookie, refused.status),
        (3, ferrodat_abi::dat::dto_status::ERR_REMOTE_ACCESS)
    );
    plain.read(0, &mut word).unwrap();
    assert_eq!(u64::from_ne_bytes(word), 7);
    // That failure ended the connection: an extension post now completes at once, flushed,
    // and is still reported as the extension operation it is.
    assert_eq!(client.ep.state(), EpState::Disconnected);
    client.ep.post_cmp_and_swap(1, 2, &old, 5, &target(64, 8), 0).unwrap();
    let flushed = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(
        (flushed.user_cookie, flushed.status, flushed.operation, flushed.ib_extension),
        (
            5,
            ferrodat_abi::dat::dto_status::ERR_FLUSHED,
            dtos::IB_CMP_SWAP,
            Some((ferrodat_abi::dat::ib_ext_type::CMP_AND_SWAP, None))
        )
    );
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

#[test]
fn a_cno_wakes_for_completions_and_software_events_on_its_enabled_evds() {
    use ferrodat_engine::cno::Cno;
    use std::time::Duration;
    let (server, client, _psp) = listening_pair(31154);
    // dtest -c: the DTO EVDs report to a CNO; the consumer waits on the CNO, then dequeues.
    let cno = Cno::create(&server.ia).unwrap();
    server.recv_evd.modify_cno(Some(&cno));
    let soft = Evd::create_with_cno(&server.ia, 4, Some(&cno), evd_flags::SOFTWARE).unwrap();
    let e = cno.wait(Some(Duration::from_millis(20))).unwrap_err();
    assert_eq!(e.code(), ferrodat_engine::error::DatError::timeout_expired().code(), "nothing yet");
    connect(&server, &client, 31154);

    server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], 5, 0).unwrap();
    client.buf.write(4096, b"ping").unwrap();
    client.ep.post_send(&[client.buf.triplet(4096, 4).unwrap()], 6, 0).unwrap();
    let hint = cno
        .wait(Some(Duration::from_secs(5)))
        .expect("the receive wakes the CNO")
        .expect("an EVD as the hint");
    assert_eq!(hint.id(), server.recv_evd.id());
    // The event may still be in the CQ: a dequeue harvests it.
    let mut got = None;
    for _ in 0..1000 {
        if let Ok(ev) = server.recv_evd.dequeue() {
            got = Some(ev);
            break;
        }
    }
    assert_eq!(dto(got.expect("dequeued after the CNO woke")).user_cookie, 5);

    // A software event on a disabled EVD queues but does not trigger the CNO.
    soft.disable();
    soft.post_se(0xfeed).unwrap();
    let e = cno.wait(Some(Duration::from_millis(20)));
    assert!(e.is_err(), "a disabled EVD does not trigger: {e:?}");
    soft.enable();
    assert_eq!(cno.wait(Some(Duration::from_secs(5))).unwrap().unwrap().id(), soft.id());
    assert_eq!(soft.dequeue().unwrap(), Event::Software { pointer: 0xfeed });
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

/// An endpoint's EVDs and SRQ come from its PZ's IA (another IA's would number objects of
/// another device context), and its SRQ from its PZ (srq_ep_pz_difference_supported is
/// FALSE); each refusal names the argument.
#[test]
fn an_endpoint_takes_its_evds_and_srq_from_its_own_ia_and_pz() {
    use ferrodat_engine::error::DatError;
    use ferrodat_engine::pz::Pz;
    use ferrodat_engine::srq::Srq;
    let (a, b) = (side(), side());
    let code = |r: Result<Ep, DatError>| r.map(|_| ()).unwrap_err().code();
    let handle = |s| DatError::invalid_handle(s).code();
    let conn = Some(&a.conn_evd);
    assert_eq!(
        code(Ep::create(&a.pz, &b.recv_evd, &a.req_evd, conn, None)),
        handle(subtype::INVALID_HANDLE_EVD_RECV)
    );
    assert_eq!(
        code(Ep::create(&a.pz, &a.recv_evd, &b.req_evd, conn, None)),
        handle(subtype::INVALID_HANDLE_EVD_REQUEST)
    );
    assert_eq!(
        code(Ep::create(&a.pz, &a.recv_evd, &a.req_evd, Some(&b.conn_evd), None)),
        handle(subtype::INVALID_HANDLE_EVD_CONN)
    );
    let srq_b = Srq::create(&b.pz, 8, 1).unwrap();
    assert_eq!(
        code(Ep::create_with_srq(&a.pz, &a.recv_evd, &a.req_evd, conn, &srq_b, None)),
        handle(subtype::INVALID_HANDLE_SRQ)
    );
    let srq_other_pz = Srq::create(&Pz::create(&a.ia).unwrap(), 8, 1).unwrap();
    assert_eq!(
        code(Ep::create_with_srq(&a.pz, &a.recv_evd, &a.req_evd, conn, &srq_other_pz, None)),
        DatError::invalid_parameter(2).code()
    );
}

#[test]
fn an_srq_feeds_the_receives_of_several_endpoints() {
    use ferrodat_engine::srq::Srq;
    let server = side();
    let srq = Srq::create(&server.ep.pz(), 16, 1).unwrap();
    let eps: Vec<Ep> = (0..2)
        .map(|_| {
            Ep::create_with_srq(
                &server.ep.pz(),
                &server.recv_evd,
                &server.req_evd,
                Some(&server.conn_evd),
                &srq,
                None,
            )
            .unwrap()
        })
        .collect();
    let e = eps[0].post_recv(&[server.buf.triplet(0, 64).unwrap()], 1, 0).unwrap_err();
    assert_eq!(e.return_type(), ferrodat_abi::dat::ret::INVALID_STATE);
    assert_eq!(e.subtype(), 0, "post_recv on an SRQ endpoint is plain INVALID_STATE");
    for i in 0..6u64 {
        srq.post_recv(&[server.buf.triplet(64 * i, 64).unwrap()], 100 + i).unwrap();
    }
    let _psp = Psp::create(&server.ia, 31155, &server.cr_evd).unwrap();
    let clients: Vec<Side> = (0..2).map(|_| side()).collect();
    for (client, ep) in clients.iter().zip(&eps) {
        connect_ep(&server, ep, &client.ep, &client.conn_evd, 31155);
    }
    let mut seen = Vec::new();
    for round in 0..3u8 {
        for (k, client) in clients.iter().enumerate() {
            client.buf.write(4096, &[round, k as u8]).unwrap();
            client.ep.post_send(&[client.buf.triplet(4096, 2).unwrap()], 1, 0).unwrap();
            assert_eq!(dto(client.req_evd.wait(WAIT_US, 1).unwrap().0).status, 0);
            let Event::Dto { ep, completion } = server.recv_evd.wait(WAIT_US, 1).unwrap().0 else {
                panic!("expected a receive")
            };
            assert_eq!(ep, eps[k].id(), "the receive is reported on the endpoint it arrived on");
            assert_eq!((completion.transfered_length, completion.operation), (2, dtos::RECEIVE));
            let slot = completion.user_cookie - 100;
            let mut got = [0u8; 2];
            server.buf.read(64 * slot as usize, &mut got).unwrap();
            assert_eq!(got, [round, k as u8]);
            seen.push(completion.user_cookie);
        }
    }
    seen.sort();
    assert_eq!(seen, (100..106).collect::<Vec<_>>(), "each SRQ receive used once");

    // Teardown: an SRQ endpoint whose connection ends reports EP_BROKEN on the async EVD
    // (IB's "last WQE reached": it takes no more of the SRQ's receives), after its
    // DISCONNECTED, for that endpoint only; an endpoint without an SRQ reports none.
    let server_async = Evd::create(&server.ia, 8, evd_flags::ASYNC).unwrap();
    server.ia.set_async_evd(&server_async);
    let client_async = Evd::create(&clients[0].ia, 8, evd_flags::ASYNC).unwrap();
    clients[0].ia.set_async_evd(&client_async);
    clients[0].ep.disconnect(DisconnectMode::Abrupt).unwrap();
    let Event::Connection { number, ep, .. } = server.conn_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected the server's DISCONNECTED")
    };
    assert_eq!((number, ep), (event::CONNECTION_EVENT_DISCONNECTED, eps[0].id()));
    assert_eq!(
        server_async.wait(WAIT_US, 1).unwrap().0,
        Event::Async { number: event::ASYNC_ERROR_EP_BROKEN, object: eps[0].id() }
    );
    assert!(server_async.dequeue().is_err(), "one EP_BROKEN, for the endpoint that ended");
    assert!(client_async.dequeue().is_err(), "no EP_BROKEN for an endpoint without an SRQ");
    // The local side's own disconnect reports it too.
    eps[1].disconnect(DisconnectMode::Abrupt).unwrap();
    assert_eq!(
        server_async.wait(WAIT_US, 1).unwrap().0,
        Event::Async { number: event::ASYNC_ERROR_EP_BROKEN, object: eps[1].id() }
    );
}

#[test]
fn an_rsp_takes_one_request_for_the_endpoint_it_holds() {
    use ferrodat_engine::sp::Rsp;
    let server = side();
    let client = side();
    let rsp = Rsp::create(&server.ia, 31156, &server.ep, &server.cr_evd).unwrap();
    assert_eq!(server.ep.state(), EpState::Reserved);
    let e = server.ep.connect("127.0.0.1".parse().unwrap(), 1, None, b"").unwrap_err();
    assert_eq!(e.subtype(), ferrodat_abi::dat::subtype::INVALID_STATE_EP_RESERVED, "{e}");
    client.ep.connect(server.ia.attr().address, 31156, None, b"rsp").unwrap();
    let Event::ConnectionRequest { sp, cr, .. } = server.cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a request")
    };
    assert_eq!(sp, rsp.id());
    assert_eq!(server.ep.state(), EpState::PassiveConnectionPending);
    let other = server.another_ep();
    let e = cr.accept(Some(&other), b"").unwrap_err();
    assert!(e.to_string().contains("RSP's endpoint"), "{e}");
    cr.accept(None, b"").unwrap();
    assert_eq!(
        connection(client.conn_evd.wait(WAIT_US, 1).unwrap().0).0,
        event::CONNECTION_EVENT_ESTABLISHED
    );
    assert_eq!(
        connection(server.conn_evd.wait(WAIT_US, 1).unwrap().0).0,
        event::CONNECTION_EVENT_ESTABLISHED
    );
    exchange(&client, &server, 1);
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

/// An RSP and a PSP take their EVD (a CR EVD) and endpoint from their own IA; and an RSP
/// whose request took its endpoint does not keep that endpoint alive: once the consumer
/// freed it, its EVDs can be freed too, before the RSP.
#[test]
fn service_points_check_their_objects_and_an_rsp_lets_its_used_endpoint_go() {
    use ferrodat_engine::error::DatError;
    use ferrodat_engine::sp::Rsp;
    let (server, client, other) = (side(), side(), side());
    let handle = |s| DatError::invalid_handle(s).code();
    let code = |r: Result<Rsp, DatError>| r.map(|_| ()).unwrap_err().code();
    let cr = subtype::INVALID_HANDLE_EVD_CR;
    assert_eq!(code(Rsp::create(&server.ia, 31184, &server.ep, &server.recv_evd)), handle(cr));
    assert_eq!(code(Rsp::create(&server.ia, 31184, &server.ep, &other.cr_evd)), handle(cr));
    let e = Rsp::create(&server.ia, 31184, &other.ep, &server.cr_evd).map(|_| ()).unwrap_err();
    assert_eq!(e.code(), handle(subtype::INVALID_HANDLE_EP));
    assert_eq!(other.ep.state(), EpState::Unconnected, "the refused RSP did not reserve it");
    let e = Psp::create(&server.ia, 31184, &other.cr_evd).map(|_| ()).unwrap_err();
    assert_eq!(e.code(), handle(cr));

    // An RSP on its own endpoint and EVDs, used, then the endpoint freed first.
    let cr_evd = Evd::create(&server.ia, 2, evd_flags::CR).unwrap();
    let recv = Evd::create(&server.ia, 8, evd_flags::DTO).unwrap();
    let ep = Ep::create(&server.pz, &recv, &server.req_evd, Some(&server.conn_evd), None).unwrap();
    let rsp = Rsp::create(&server.ia, 31184, &ep, &cr_evd).unwrap();
    client.ep.connect(server.ia.attr().address, 31184, None, b"").unwrap();
    let Event::ConnectionRequest { cr: request, .. } = cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a request")
    };
    request.accept(None, b"").unwrap();
    for evd in [&client.conn_evd, &server.conn_evd] {
        assert_eq!(
            connection(evd.wait(WAIT_US, 1).unwrap().0).0,
            event::CONNECTION_EVENT_ESTABLISHED
        );
    }
    ep.disconnect(DisconnectMode::Abrupt).unwrap();
    drop(request);
    // Another thread (the CM's, a flushed completion's) may hold the endpoint for a moment
    // as the consumer frees it; the RSP must not name it even then.
    let held_elsewhere = ep.clone();
    ep.free().unwrap();
    assert!(rsp.query().ep.is_none(), "the RSP no longer names the freed endpoint");
    drop(held_elsewhere);
    recv.free().expect("the freed endpoint's receive EVD is free to go");
    rsp.free().unwrap();
}

#[test]
fn a_psp_refuses_requests_past_its_evds_qlen() {
    let server = side();
    let small = Evd::create(&server.ia, 1, evd_flags::CR).unwrap();
    let _psp = Psp::create(&server.ia, 31157, &small).unwrap();
    let clients: Vec<Side> = (0..2).map(|_| side()).collect();
    for c in &clients {
        c.ep.connect(server.ia.attr().address, 31157, None, b"").unwrap();
    }
    // The EVD's qlen is the PSP's backlog: one request waits, the other is refused.
    let Event::ConnectionRequest { cr: _waiting, .. } = small.wait(WAIT_US, 1).unwrap().0 else {
        panic!("the request that fit")
    };
    let refused: Vec<u32> = clients
        .iter()
        .filter_map(|c| c.conn_evd.wait(200_000, 1).ok().map(|(ev, _)| connection(ev).0))
        .collect();
    assert_eq!(refused, [event::CONNECTION_EVENT_NON_PEER_REJECTED]);
}

#[test]
fn a_full_evd_reports_its_overflow_on_the_async_evd() {
    let server = side();
    let client = side();
    let async_evd = Evd::create(&client.ia, 4, evd_flags::ASYNC).unwrap();
    client.ia.set_async_evd(&async_evd);
    let pz = client.ep.pz();
    let tiny = Evd::create(&client.ia, 1, evd_flags::CONNECTION).unwrap();
    let ep = Ep::create(&pz, &client.recv_evd, &client.req_evd, Some(&tiny), None).unwrap();
    let _psp = Psp::create(&server.ia, 31158, &server.cr_evd).unwrap();
    ep.connect(server.ia.attr().address, 31158, None, b"").unwrap();
    let Event::ConnectionRequest { cr, .. } = server.cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a request")
    };
    cr.accept(Some(&server.ep), b"").unwrap();
    assert_eq!(
        connection(server.conn_evd.wait(WAIT_US, 1).unwrap().0).0,
        event::CONNECTION_EVENT_ESTABLISHED
    );
    // ESTABLISHED fills the client's one-entry EVD; the DISCONNECTED after it overflows.
    server.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    let (overflow, _) = async_evd.wait(WAIT_US, 1).unwrap();
    assert_eq!(
        overflow,
        Event::Async { number: event::ASYNC_ERROR_EVD_OVERFLOW, object: tiny.id() }
    );
    assert_eq!(connection(tiny.wait(WAIT_US, 1).unwrap().0).0, event::CONNECTION_EVENT_ESTABLISHED);
}

#[test]
fn on_a_shared_evd_completions_come_before_disconnected() {
    let server = side();
    let client = side();
    // One EVD for the client's receives, requests and connection events.
    let shared = Evd::create(&client.ia, 64, evd_flags::DTO | evd_flags::CONNECTION).unwrap();
    // One EVD for both DTO streams too (one CQ for the QP), as DAT allows.
    let ep = Ep::create(&client.ep.pz(), &shared, &shared, Some(&shared), None).unwrap();
    for i in 0..3 {
        ep.post_recv(&[client.buf.triplet(64 * i, 64).unwrap()], i, 0).unwrap();
    }
    let _psp = Psp::create(&server.ia, 31159, &server.cr_evd).unwrap();
    connect_ep(&server, &server.ep, &ep, &shared, 31159);
    // Three sends, then the server disconnects at once, before the client looked.
    for i in 0..3u64 {
        server.ep.post_send(&[server.buf.triplet(0, 8).unwrap()], i, 0).unwrap();
        assert_eq!(dto(server.req_evd.wait(WAIT_US, 1).unwrap().0).status, 0);
    }
    server.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50)); // let the DREQ arrive first
    let mut order = Vec::new();
    loop {
        match shared.wait(WAIT_US, 1).unwrap().0 {
            Event::Dto { completion, .. } => order.push(format!("recv {}", completion.user_cookie)),
            Event::Connection { number, .. } => {
                assert_eq!(number, event::CONNECTION_EVENT_DISCONNECTED);
                order.push("DISCONNECTED".into());
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(order, ["recv 0", "recv 1", "recv 2", "DISCONNECTED"]);
}

#[test]
fn a_dto_evd_resizes_with_completions_waiting_and_is_freed_only_when_unused() {
    let (server, client, _psp) = listening_pair(31161);
    connect(&server, &client, 31161);
    for i in 0..5u64 {
        server.ep.post_recv(&[server.buf.triplet(64 * i, 64).unwrap()], i, 0).unwrap();
    }
    for i in 0..5u64 {
        client.ep.post_send(&[client.buf.triplet(0, 8).unwrap()], i, 0).unwrap();
    }
    // Let the completions reach the CQ, unharvested. Shrinking the EVD below them is
    // refused (the CQ could not hold them); growing it (and its CQ) keeps them.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let e = client.req_evd.resize(2).unwrap_err();
    assert!(e.to_string().contains("5 completions wait"), "{e}");
    client.req_evd.resize(200).unwrap();
    assert_eq!(client.req_evd.qlen(), 200);
    let cookies: Vec<u64> =
        (0..5).map(|_| dto(client.req_evd.wait(WAIT_US, 1).unwrap().0).user_cookie).collect();
    assert_eq!(cookies, [0, 1, 2, 3, 4], "nothing lost across the resize, in order");
    let e = client.req_evd.resize(0).unwrap_err();
    assert_eq!(e.code(), ferrodat_engine::error::DatError::invalid_parameter(2).code());
    // The EP holds its EVDs: freeing one it uses is refused.
    let spare = Evd::create(&client.ia, 4, evd_flags::SOFTWARE).unwrap();
    let Side { ep, req_evd, .. } = client;
    let (req_evd, e) = req_evd.free().unwrap_err();
    assert_eq!(e.subtype(), ferrodat_abi::dat::subtype::INVALID_STATE_EVD_IN_USE, "{e}");
    drop(ep);
    req_evd.free().expect("free once the EP is gone");
    spare.free().unwrap();
}

/// A shared DTO and connection EVD keeps connection events and the flushed completions of
/// posts on a DISCONNECTED endpoint behind the CQ's completions; after a resize it holds as
/// many of those as its new qlen, as it does of everything else, and loses none; it does
/// not shrink below the ones waiting.
#[test]
fn a_grown_shared_evd_holds_as_many_flushed_posts_as_its_new_qlen() {
    let (server, client, _psp) = listening_pair(31180);
    let shared = Evd::create(&client.ia, 2, evd_flags::DTO | evd_flags::CONNECTION).unwrap();
    let ep = Ep::create(&client.pz, &shared, &shared, Some(&shared), None).unwrap();
    connect_ep(&server, &server.ep, &ep, &shared, 31180);
    ep.disconnect(DisconnectMode::Abrupt).unwrap();
    let (number, _) = connection(shared.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(number, event::CONNECTION_EVENT_DISCONNECTED);
    shared.resize(64).unwrap();
    for i in 0..5u64 {
        ep.post_send(&[client.buf.triplet(0, 8).unwrap()], i, 0)
            .unwrap_or_else(|e| panic!("post {i} on the grown EVD: {e}"));
    }
    let e = shared.resize(2).unwrap_err();
    assert!(e.to_string().contains("5 connection events and flushed DTOs wait"), "{e}");
    let flushed: Vec<(u64, u32)> = (0..5)
        .map(|_| {
            let c = dto(shared.wait(WAIT_US, 1).unwrap().0);
            (c.user_cookie, c.status)
        })
        .collect();
    let expect: Vec<(u64, u32)> = (0..5).map(|i| (i, dto_status::ERR_FLUSHED)).collect();
    assert_eq!(flushed, expect);
}

#[test]
fn dup_connect_reaches_the_same_peer() {
    let (server, client, _psp) = listening_pair(31162);
    connect(&server, &client, 31162);
    let second = client.another_ep();
    let lonely = client.another_ep();
    let e = second.dup_connect(&lonely, None, b"").unwrap_err();
    assert_eq!(
        e.code(),
        ferrodat_engine::error::DatError::invalid_state(EpState::Unconnected.subtype()).code(),
        "{e}"
    );
    // An accepted endpoint's peer address is the requester's own port, not a listener.
    let e = second.dup_connect(&server.ep, None, b"").unwrap_err();
    assert!(e.to_string().contains("connected by dat_cr_accept"), "{e}");
    let server_second = server.another_ep();
    second.dup_connect(&client.ep, None, b"dup").unwrap();
    let Event::ConnectionRequest { cr, conn_qual, .. } = server.cr_evd.wait(WAIT_US, 1).unwrap().0
    else {
        panic!("expected a request")
    };
    assert_eq!((conn_qual, cr.query().unwrap().private_data), (31162, b"dup".to_vec()));
    cr.accept(Some(&server_second), b"").unwrap();
    assert_eq!(
        connection(client.conn_evd.wait(WAIT_US, 1).unwrap().0).0,
        event::CONNECTION_EVENT_ESTABLISHED
    );
    assert_eq!(second.state(), EpState::Connected);
    // Disconnected and reset, the endpoint still knows its last peer, but is not copied.
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    client.ep.reset().unwrap();
    let third = client.another_ep();
    let e = third.dup_connect(&client.ep, None, b"").unwrap_err();
    assert_eq!(e.return_type(), ferrodat_abi::dat::ret::INVALID_STATE, "{e}");
    assert!(server.cr_evd.wait(100_000, 1).is_err(), "no request from the refused copy");
}

#[test]
fn a_handed_off_request_arrives_on_the_other_psp_and_connects_there() {
    let server = side();
    let client = side();
    let front_evd = Evd::create(&server.ia, 4, evd_flags::CR).unwrap();
    let front = Psp::create(&server.ia, 31170, &front_evd).unwrap();
    let back = Psp::create(&server.ia, 31171, &server.cr_evd).unwrap();
    client.ep.connect(server.ia.attr().address, 31170, None, b"route me").unwrap();
    let Event::ConnectionRequest { cr, sp, .. } = front_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a connection request on the front PSP")
    };
    assert_eq!(sp, front.id());

    // Targets that are not another service point of this IA are refused; the CR stays.
    for bad in [31172, 31170] {
        let e = cr.handoff(bad).unwrap_err();
        assert_eq!(
            (e.return_type(), e.subtype()),
            (ret::INVALID_PARAMETER, subtype::INVALID_ARG2),
            "handoff to {bad}: {e}"
        );
        assert!(e.to_string().contains(&bad.to_string()), "{e}");
    }
    cr.handoff(31171).unwrap();
    // The old CR is used up.
    let e = cr.accept(Some(&server.ep), b"").unwrap_err();
    assert_eq!(e.return_type(), ret::INVALID_HANDLE, "{e}");
    assert_eq!(cr.handoff(31171).unwrap_err().return_type(), ret::INVALID_HANDLE);

    let Event::ConnectionRequest { cr: moved, sp, conn_qual } =
        server.cr_evd.wait(WAIT_US, 1).unwrap().0
    else {
        panic!("expected the request on the back PSP")
    };
    assert_eq!((sp, conn_qual), (back.id(), 31171));
    assert_ne!(moved.id(), cr.id());
    assert_eq!(moved.query().unwrap().private_data, b"route me");
    moved.accept(Some(&server.ep), b"routed").unwrap();
    let (number, pdata) = connection(client.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!((number, pdata), (event::CONNECTION_EVENT_ESTABLISHED, b"routed".to_vec()));
    let (number, _) = connection(server.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(number, event::CONNECTION_EVENT_ESTABLISHED);
    exchange(&client, &server, 0xbeef);
    assert!(front_evd.dequeue().is_err(), "nothing else arrived on the front PSP");

    // A freed PSP is no handoff target any more.
    drop(back);
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    let ep2 = client.another_ep();
    ep2.connect(server.ia.attr().address, 31170, None, b"").unwrap();
    let Event::ConnectionRequest { cr, .. } = front_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a second request")
    };
    assert_eq!(cr.handoff(31171).unwrap_err().return_type(), ret::INVALID_PARAMETER);
    // Nor is an RSP that already took its one request: the request stays here.
    let rsp_evd = Evd::create(&server.ia, 2, evd_flags::CR).unwrap();
    let reserved = server.another_ep();
    let _rsp = ferrodat_engine::sp::Rsp::create(&server.ia, 31186, &reserved, &rsp_evd).unwrap();
    let ep3_conn = Evd::create(&client.ia, 4, evd_flags::CONNECTION).unwrap();
    let ep3 =
        Ep::create(&client.pz, &client.recv_evd, &client.req_evd, Some(&ep3_conn), None).unwrap();
    ep3.connect(server.ia.attr().address, 31186, None, b"").unwrap();
    let Event::ConnectionRequest { cr: taken, .. } = rsp_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected the RSP's request")
    };
    let e = cr.handoff(31186).unwrap_err();
    assert!(e.to_string().contains("already took its one request"), "{e}");
    taken.reject().unwrap();
    // Rejected with private data, which the requester gets.
    cr.reject_with(b"no room").unwrap();
    loop {
        let ev = client.conn_evd.wait(WAIT_US, 1).unwrap().0;
        let (number, pdata) = connection(ev);
        if number == event::CONNECTION_EVENT_PEER_REJECTED {
            assert_eq!(pdata, b"no room");
            break;
        }
        assert_eq!(number, event::CONNECTION_EVENT_DISCONNECTED, "the first EP's disconnect");
    }
}

/// A DTO that fails (here an RDMA WRITE with a bad rkey) ends the connection: the error
/// completion first, then the end of the connection on both connect EVDs, and later posts
/// complete flushed. Each side ends it itself (BROKEN: the requester for its failed DTO,
/// the target for its QP error, see `a_peers_bad_rkey_breaks_the_target_endpoint`) unless
/// the other's teardown reaches it first (DISCONNECTED).
#[test]
fn a_failed_dto_breaks_the_connection() {
    let (server, client, _psp) = listening_pair(31174);
    connect(&server, &client, 31174);
    let bad = RmrTriplet {
        rmr_context: server.buf.rmr_context() ^ 0x5a5a_0000,
        virtual_address: server.buf.registered_address(),
        segment_length: 64,
    };
    client.ep.post_rdma_write(&[client.buf.triplet(0, 64).unwrap()], 41, &bad, 0).unwrap();
    let failed = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(failed.user_cookie, 41);
    assert_eq!(failed.status, ferrodat_abi::dat::dto_status::ERR_REMOTE_ACCESS, "{failed:?}");
    let ended = [event::CONNECTION_EVENT_BROKEN, event::CONNECTION_EVENT_DISCONNECTED];
    let (number, _) = connection(client.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert!(ended.contains(&number), "client: {number:#x}");
    assert_eq!(client.ep.state(), EpState::Disconnected);
    let (number, _) = connection(server.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert!(ended.contains(&number), "server: {number:#x}");
    // A post now completes at once, flushed; the EP can be reset and used again.
    client.ep.post_send(&[client.buf.triplet(0, 8).unwrap()], 42, 0).unwrap();
    let flushed = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(
        (flushed.user_cookie, flushed.status),
        (42, ferrodat_abi::dat::dto_status::ERR_FLUSHED)
    );
    assert!(client.conn_evd.wait(50_000, 1).is_err(), "one BROKEN, nothing more");
    client.ep.reset().unwrap();
    server.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    server.ep.reset().unwrap();
    connect(&server, &client, 31174);
    exchange(&client, &server, 43);
}

/// An endpoint takes as many outstanding DTOs as its attributes say, not as many as its
/// QP's queues happen to hold (they round up): the post past max_request_dtos (or
/// max_recv_dtos) is refused with INSUFFICIENT_RESOURCES, so an EVD sized by the DAT rules
/// (qlen at least the DTOs that may complete on it) never overflows.
#[test]
fn an_endpoint_takes_no_more_outstanding_dtos_than_its_attributes_say() {
    use ferrodat_engine::ep::EpAttr;
    let (server, client, _psp) = listening_pair(31185);
    let attr = EpAttr { max_request_dtos: 4, max_recv_dtos: 5, ..EpAttr::defaults(&client.ia) };
    let req = Evd::create(&client.ia, 4, evd_flags::DTO).unwrap();
    let ep =
        Ep::create(&client.pz, &client.recv_evd, &req, Some(&client.conn_evd), Some(attr)).unwrap();
    let mut receives = 0u64;
    while ep.post_recv(&[client.buf.triplet(64 * receives, 64).unwrap()], receives, 0).is_ok() {
        receives += 1;
        assert!(receives <= 64, "no limit on receives");
    }
    assert_eq!(receives, 5, "max_recv_dtos");
    connect_ep(&server, &server.ep, &ep, &client.conn_evd, 31185);
    let target = RmrTriplet {
        rmr_context: server.buf.rmr_context(),
        virtual_address: server.buf.registered_address(),
        segment_length: 8,
    };
    let write = |n: u64| ep.post_rdma_write(&[client.buf.triplet(0, 8).unwrap()], n, &target, 0);
    let mut posted = 0u64;
    let refused = loop {
        match write(posted) {
            Ok(()) => posted += 1,
            Err(e) => break e,
        }
        assert!(posted <= 64, "no limit on requests");
    };
    assert_eq!(posted, 4, "max_request_dtos");
    assert_eq!(refused.return_type(), ferrodat_abi::dat::ret::INSUFFICIENT_RESOURCES, "{refused}");
    // All four complete on the four-entry EVD; then there is room again.
    for n in 0..4 {
        let c = dto(req.wait(WAIT_US, 1).unwrap().0);
        assert_eq!((c.user_cookie, c.status), (n, 0));
    }
    write(4).unwrap();
    assert_eq!(dto(req.wait(WAIT_US, 1).unwrap().0).user_cookie, 4);
    // Absurd segment lengths are refused, whatever they add up to (no overflow panic).
    let huge = ferrodat_engine::lmr::LmrTriplet {
        segment_length: u64::MAX / 2 + 1,
        ..client.buf.triplet(0, 8).unwrap()
    };
    let e = ep.post_send(&[huge, huge], 9, 0).unwrap_err();
    assert_eq!(e.return_type(), ferrodat_abi::dat::ret::LENGTH_ERROR, "{e}");
}

/// RDMA READ limits one way only, as a storage target that reads from its clients sets
/// them: the server reads (max_rdma_read_out 4) and serves none (max_rdma_read_in 0), the
/// client the reverse. Each side advertises its out limit as its initiator depth and its
/// in limit as its responder resources, so the server's READ of the client's memory goes
/// through; advertising one limit for both left the client serving none.
#[test]
fn rdma_read_limits_are_negotiated_per_direction() {
    use ferrodat_engine::ep::EpAttr;
    let (server, client, _psp) = listening_pair(31177);
    let one_way = |side: &Side, out: u32, inn: u32| {
        let attr =
            EpAttr { max_rdma_read_out: out, max_rdma_read_in: inn, ..EpAttr::defaults(&side.ia) };
        Ep::create(&side.pz, &side.recv_evd, &side.req_evd, Some(&side.conn_evd), Some(attr))
            .unwrap()
    };
    let (reader, served) = (one_way(&server, 4, 0), one_way(&client, 0, 4));
    connect_ep(&server, &reader, &served, &client.conn_evd, 31177);
    let data: Vec<u8> = (0..64).map(|i| (i * 3 + 1) as u8).collect();
    client.buf.write(512, &data).unwrap();
    let source = RmrTriplet {
        rmr_context: client.buf.rmr_context(),
        virtual_address: client.buf.registered_address() + 512,
        segment_length: 64,
    };
    reader.post_rdma_read(&[server.buf.triplet(2048, 64).unwrap()], 61, &source, 0).unwrap();
    let r = dto(server.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!((r.user_cookie, r.status, r.transfered_length), (61, 0, 64), "{r:?}");
    let mut got = vec![0u8; 64];
    server.buf.read(2048, &mut got).unwrap();
    assert_eq!(got, data);
}

/// The device puts the target's QP in ERR when a peer's RDMA WRITE names a bad rkey; it
/// says so only in an async event (QP_ACCESS_ERR), which the target's IA reports as
/// DAT_ASYNC_ERROR_EP_BROKEN for that endpoint, as OFA dapl does, and the endpoint's
/// connection ends (BROKEN), as on a failed DTO. The requester learns of it from its failed
/// completion instead, and its async EVD stays empty. The requester does not dequeue its
/// failure until the target has seen all this: its own teardown would otherwise tell the
/// target first.
#[test]
fn a_peers_bad_rkey_breaks_the_target_endpoint() {
    let (server, client, _psp) = listening_pair(31175);
    let server_async = Evd::create(&server.ia, 4, evd_flags::ASYNC).unwrap();
    server.ia.set_async_evd(&server_async);
    let client_async = Evd::create(&client.ia, 4, evd_flags::ASYNC).unwrap();
    client.ia.set_async_evd(&client_async);
    connect(&server, &client, 31175);
    let bad = RmrTriplet {
        rmr_context: server.buf.rmr_context() ^ 0x5a5a_0000,
        virtual_address: server.buf.registered_address(),
        segment_length: 64,
    };
    client.ep.post_rdma_write(&[client.buf.triplet(0, 64).unwrap()], 51, &bad, 0).unwrap();
    assert_eq!(
        server_async.wait(WAIT_US, 1).unwrap().0,
        Event::Async { number: event::ASYNC_ERROR_EP_BROKEN, object: server.ep.id() }
    );
    let (number, _) = connection(server.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(number, event::CONNECTION_EVENT_BROKEN);
    assert_eq!(server.ep.state(), EpState::Disconnected);
    assert!(server_async.wait(50_000, 1).is_err(), "one EP_BROKEN for one QP error");

    let failed = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(failed.status, dto_status::ERR_REMOTE_ACCESS, "{failed:?}");
    assert!(client_async.dequeue().is_err(), "no async error for the requester");
}

/// As above for a target endpoint on an SRQ: one EP_BROKEN, though both the QP error and
/// the QP leaving the SRQ (IB's "last WQE reached") call for one.
#[test]
fn a_peers_bad_rkey_breaks_an_srq_endpoint_once() {
    use ferrodat_engine::srq::Srq;
    let (server, client, _psp) = listening_pair(31179);
    let server_async = Evd::create(&server.ia, 4, evd_flags::ASYNC).unwrap();
    server.ia.set_async_evd(&server_async);
    let srq = Srq::create(&server.pz, 4, 1).unwrap();
    let (pz, recv, req) = (&server.pz, &server.recv_evd, &server.req_evd);
    let target = Ep::create_with_srq(pz, recv, req, Some(&server.conn_evd), &srq, None).unwrap();
    connect_ep(&server, &target, &client.ep, &client.conn_evd, 31179);
    let bad = RmrTriplet {
        rmr_context: server.buf.rmr_context() ^ 0x5a5a_0000,
        virtual_address: server.buf.registered_address(),
        segment_length: 64,
    };
    client.ep.post_rdma_write(&[client.buf.triplet(0, 64).unwrap()], 52, &bad, 0).unwrap();
    assert_eq!(
        server_async.wait(WAIT_US, 1).unwrap().0,
        Event::Async { number: event::ASYNC_ERROR_EP_BROKEN, object: target.id() }
    );
    let (number, _) = connection(server.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(number, event::CONNECTION_EVENT_BROKEN);
    assert!(server_async.wait(100_000, 1).is_err(), "one EP_BROKEN for one QP error");
}

/// A DTO EVD whose CQ overruns (more completions than its qlen, none dequeued) is
/// reported as DAT_ASYNC_ERROR_EVD_OVERFLOW for that EVD: the device's CQ_ERR.
#[test]
fn a_cq_overrun_is_reported_as_the_evds_overflow() {
    let (server, client, _psp) = listening_pair(31176);
    let client_async = Evd::create(&client.ia, 4, evd_flags::ASYNC).unwrap();
    client.ia.set_async_evd(&client_async);
    let tiny = Evd::create(&client.ia, 1, evd_flags::DTO).unwrap();
    let ep = Ep::create(&client.pz, &tiny, &client.req_evd, Some(&client.conn_evd), None).unwrap();
    connect_ep(&server, &server.ep, &ep, &client.conn_evd, 31176);
    for i in 0..8u64 {
        ep.post_recv(&[client.buf.triplet(64 * i, 64).unwrap()], i, 0).unwrap();
    }
    for i in 0..8u64 {
        server.ep.post_send(&[server.buf.triplet(0, 8).unwrap()], i, 0).unwrap();
    }
    assert_eq!(
        client_async.wait(WAIT_US, 1).unwrap().0,
        Event::Async { number: event::ASYNC_ERROR_EVD_OVERFLOW, object: tiny.id() }
    );
}

/// `dat_ep_connect`'s timeout: a listener that takes the TCP connection but never answers
/// the request (a hung peer) gives TIMED_OUT after the timeout, and the endpoint can be
/// reset and used again.
#[test]
fn a_connect_nobody_answers_times_out() {
    let client = side();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let started = std::time::Instant::now();
    let timeout = std::time::Duration::from_millis(300);
    client.ep.connect("127.0.0.1".parse().unwrap(), port, Some(timeout), b"anyone?").unwrap();
    let (number, _) = connection(client.conn_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(number, event::CONNECTION_EVENT_TIMED_OUT);
    assert!(started.elapsed() >= timeout, "TIMED_OUT came before the timeout");
    assert_eq!(client.ep.state(), EpState::Disconnected);
    client.ep.reset().unwrap();
    assert_eq!(client.ep.state(), EpState::Unconnected);
    drop(silent);
}

/// A thread waiting on an EVD directly owns it: its CNO is not triggered by that EVD, and a
/// CNO wait meanwhile honours its own timeout instead of blocking behind the waiter. Once
/// the waiter returns, the CNO watches the EVD again, within the same CNO wait.
#[test]
fn a_cno_wait_is_not_held_up_by_a_direct_waiter_and_watches_the_evd_after_it() {
    use ferrodat_engine::cno::Cno;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    let (server, client, _psp) = listening_pair(31163);
    let cno = Cno::create(&server.ia).unwrap();
    server.recv_evd.modify_cno(Some(&cno));
    connect(&server, &client, 31163);
    for cookie in [1, 2] {
        server.ep.post_recv(&[server.buf.triplet(64 * cookie, 64).unwrap()], cookie, 0).unwrap();
    }
    let send = |what: &[u8]| {
        client.buf.write(4096, what).unwrap();
        client.ep.post_send(&[client.buf.triplet(4096, what.len() as u64).unwrap()], 9, 0).unwrap();
        assert_eq!(dto(client.req_evd.wait(WAIT_US, 1).unwrap().0).status, 0);
    };

    let evd = server.recv_evd.clone();
    let waiter = std::thread::spawn(move || evd.wait(WAIT_US, 1));
    std::thread::sleep(Duration::from_millis(50)); // the waiter is asleep on the EVD
    let (tx, rx) = mpsc::channel();
    let c = cno.clone();
    std::thread::spawn(move || {
        let start = Instant::now();
        let r = c.wait(Some(Duration::from_millis(20)));
        tx.send((r.map(|e| e.map(|e| e.id())), start.elapsed())).unwrap();
    });
    let Ok((timed_out, took)) = rx.recv_timeout(Duration::from_secs(3)) else {
        send(b"release the waiter");
        panic!("the CNO wait blocked behind the EVD's direct waiter past its 20 ms timeout");
    };
    assert!(timed_out.is_err(), "no event yet: {timed_out:?}");
    assert!(took < Duration::from_secs(2), "took {took:?}");

    // A CNO wait that starts while the waiter still owns the EVD...
    let (tx, rx) = mpsc::channel();
    let c = cno.clone();
    std::thread::spawn(move || {
        tx.send(c.wait(Some(Duration::from_secs(10))).map(|e| e.map(|e| e.id()))).unwrap();
    });
    std::thread::sleep(Duration::from_millis(50));
    // ...does not take the waiter's event,
    send(b"one");
    let (ev, _) = waiter.join().unwrap().expect("the direct waiter gets its receive");
    assert_eq!(dto(ev).user_cookie, 1);
    assert!(rx.try_recv().is_err(), "the waiter's event does not trigger the CNO");
    // and watches the EVD's CQ again once the waiter is gone.
    send(b"two");
    let hint = rx.recv_timeout(Duration::from_secs(5)).expect("the CNO woke for the second");
    assert_eq!(hint.unwrap(), Some(server.recv_evd.id()));
    assert_eq!(dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 2);
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

/// One CNO over many DTO EVDs (one per connection is the usual CNO use): the wait polls
/// one completion channel per EVD, more than an EVD wait's fd mask holds (63), and wakes
/// for a completion on the last of them. It once failed at once with DAT_INTERNAL_ERROR.
#[test]
fn a_cno_over_64_dto_evds_sleeps_and_wakes_for_a_completion_on_the_last() {
    use ferrodat_engine::cno::Cno;
    use std::sync::mpsc;
    use std::time::Duration;
    let (server, client, _psp) = listening_pair(31400);
    connect(&server, &client, 31400);
    let cno = Cno::create(&server.ia).unwrap();
    let others: Vec<Evd> = (0..63)
        .map(|_| Evd::create_with_cno(&server.ia, 4, Some(&cno), evd_flags::DTO).unwrap())
        .collect();
    server.recv_evd.modify_cno(Some(&cno)); // the 64th
    let e = cno.wait(Some(Duration::from_millis(20))).map(|e| e.map(|e| e.id())).unwrap_err();
    assert_eq!(e.code(), ferrodat_engine::error::DatError::timeout_expired().code(), "{e}");

    let (tx, rx) = mpsc::channel();
    let c = cno.clone();
    std::thread::spawn(move || {
        tx.send(c.wait(Some(Duration::from_secs(10))).map(|e| e.map(|e| e.id())))
    });
    std::thread::sleep(Duration::from_millis(100)); // the CNO sleeps on the 64 channels
    server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], 5, 0).unwrap();
    client.buf.write(4096, b"ping").unwrap();
    client.ep.post_send(&[client.buf.triplet(4096, 4).unwrap()], 6, 0).unwrap();
    let hint = rx.recv_timeout(Duration::from_secs(5)).expect("the receive woke the CNO");
    assert_eq!(hint.unwrap(), Some(server.recv_evd.id()));
    assert_eq!(dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 5);
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    server.recv_evd.modify_cno(None);
    for evd in others {
        evd.free().unwrap();
    }
}

/// A DTO EVD that starts triggering a CNO while a thread sleeps in `dat_cno_wait` —
/// attached (`dat_evd_modify_cno`), created for it (`dat_evd_create` with the CNO, a new
/// connection's EVD) or enabled — wakes that wait with its next completion. The sleeping
/// wait used to poll only the channels of the EVDs it had armed before it slept, and slept
/// through those completions until its timeout.
#[test]
fn a_sleeping_cno_wakes_for_an_evd_attached_created_or_enabled_after_it_slept() {
    use ferrodat_engine::cno::Cno;
    use std::sync::mpsc;
    use std::time::Duration;
    type Hint = ferrodat_engine::error::DatResult<Option<u64>>;
    let (server, client, _psp) = listening_pair(31401);
    connect(&server, &client, 31401);
    let cno = Cno::create(&server.ia).unwrap();
    // A thread sleeping in dat_cno_wait (3 s) when this returns.
    let sleeping = || -> mpsc::Receiver<Hint> {
        let (tx, rx) = mpsc::channel();
        let c = cno.clone();
        std::thread::spawn(move || {
            tx.send(c.wait(Some(Duration::from_secs(3))).map(|e| e.map(|e| e.id())))
        });
        std::thread::sleep(Duration::from_millis(100));
        rx
    };
    // A receive completes on `on` (cookie), its send on `from`'s request EVD.
    let receive = |on: &Ep, from: &Side, cookie: u64| {
        on.post_recv(&[server.buf.triplet(0, 64).unwrap()], cookie, 0).unwrap();
        from.buf.write(4096, b"ping").unwrap();
        from.ep.post_send(&[from.buf.triplet(4096, 4).unwrap()], cookie, 0).unwrap();
        assert_eq!(dto(from.req_evd.wait(WAIT_US, 1).unwrap().0).status, 0);
    };
    // Well before the wait's 3 s timeout.
    let woken = |rx: mpsc::Receiver<Hint>, what: &str| {
        let hint = rx.recv_timeout(Duration::from_secs(2));
        hint.unwrap_or_else(|e| panic!("{what}: the sleeping CNO wait missed it ({e})"))
    };

    let rx = sleeping();
    server.recv_evd.modify_cno(Some(&cno));
    receive(&server.ep, &client, 1);
    let hint = woken(rx, "attached").unwrap();
    assert_eq!(hint, Some(server.recv_evd.id()));
    assert_eq!(dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 1);

    server.recv_evd.disable();
    let rx = sleeping();
    server.recv_evd.enable();
    receive(&server.ep, &client, 2);
    assert_eq!(woken(rx, "enabled").unwrap(), Some(server.recv_evd.id()));
    assert_eq!(dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 2);

    let rx = sleeping();
    let new_evd = Evd::create_with_cno(&server.ia, 8, Some(&cno), evd_flags::DTO).unwrap();
    let new_ep =
        Ep::create(&server.pz, &new_evd, &server.req_evd, Some(&server.conn_evd), None).unwrap();
    let second = side();
    connect_ep(&server, &new_ep, &second.ep, &second.conn_evd, 31401);
    receive(&new_ep, &second, 3);
    assert_eq!(woken(rx, "created").unwrap(), Some(new_evd.id()));
    assert_eq!(dto(new_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 3);
    for c in [&client, &second] {
        c.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    }
}

/// A server thread waits for completions on the receive EVD its endpoints share while
/// another thread creates, connects and frees endpoints on that EVD: none of those calls
/// waits for the sleeping waiter, and the waiter gets the completion of a new endpoint.
#[test]
fn endpoints_come_and_go_on_an_evd_another_thread_waits_on() {
    use std::sync::mpsc;
    use std::time::Duration;
    let (server, client, _psp) = listening_pair(31164);
    std::thread::scope(|s| {
        let waiter = s.spawn(|| server.recv_evd.wait(2 * WAIT_US, 1));
        std::thread::sleep(Duration::from_millis(50)); // the waiter sleeps on the EVD
        let (tx, rx) = mpsc::channel();
        let server = &server;
        s.spawn(move || {
            let passing = server.another_ep();
            passing.reset().unwrap();
            passing.free().unwrap();
            tx.send(server.another_ep()).unwrap();
        });
        let ep = rx
            .recv_timeout(Duration::from_secs(3))
            .expect("dat_ep_create/reset/free waited for the EVD's sleeping waiter");
        connect_ep(server, &ep, &client.ep, &client.conn_evd, 31164);
        ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], 77, 0).unwrap();
        client.buf.write(4096, b"late").unwrap();
        client.ep.post_send(&[client.buf.triplet(4096, 4).unwrap()], 1, 0).unwrap();
        let (ev, _) = waiter.join().unwrap().expect("the waiter gets the new endpoint's receive");
        let c = dto(ev);
        assert_eq!((c.user_cookie, c.status, c.transfered_length), (77, 0, 4));
        client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    });
}
