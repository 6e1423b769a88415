//! Endpoints with a NULL recv or request EVD (`DAT_HANDLE_NULL`: the consumer is not
//! interested in those completions): their posts work as usual, for as long as the consumer
//! likes (the completions nobody dequeues must not fill the queues), no event appears
//! anywhere for them, a failed one still ends the connection, and `dat_ep_query` and
//! `dat_ep_modify` see and set the NULL.

mod support;

use support::{Side, WAIT_US, side};

use ferrodat_abi::dat::{completion_flags, dtos, evd_flags, event};
use ferrodat_engine::ep::{Ep, EpAttr, EpParamUpdate};
use ferrodat_engine::ep_state::{DisconnectMode, EpState};
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::lmr::{LmrTriplet, RmrTriplet};
use ferrodat_engine::sp::Psp;

/// The queue depth the endpoints under test are given: each test posts many times more.
const DEPTH: u32 = 4;
/// DTOs each test posts on the side without an EVD: ten times round the queue.
const MANY: u64 = 10 * DEPTH as u64;

fn dto(ev: Event) -> ferrodat_engine::dto::DtoCompletion {
    match ev {
        Event::Dto { completion, .. } => completion,
        other => panic!("expected a DTO completion, got {other:?}"),
    }
}

fn connection_event(evd: &Evd) -> u32 {
    match evd.wait(WAIT_US, 1).unwrap().0 {
        Event::Connection { number, .. } => number,
        other => panic!("expected a connection event, got {other:?}"),
    }
}

/// Attributes with queues of [`DEPTH`] each way.
fn shallow(s: &Side) -> EpAttr {
    EpAttr { max_recv_dtos: DEPTH, max_request_dtos: DEPTH, ..EpAttr::defaults(&s.ia) }
}

/// An endpoint of `side`'s with its recv and connection EVDs but no request EVD, and the
/// [`shallow`] queues.
fn without_request_evd(side: &Side) -> Ep {
    Ep::create_nullable(
        &side.pz,
        Some(&side.recv_evd),
        None,
        Some(&side.conn_evd),
        None,
        Some(shallow(side)),
    )
    .unwrap()
}

/// Connects `client_ep` (connection events on the client's EVD) to `server_ep` through a
/// PSP on `port`; both see ESTABLISHED.
fn connect(server: &Side, server_ep: &Ep, client: &Side, client_ep: &Ep, port: u16) -> Psp {
    let psp = Psp::create(&server.ia, port, &server.cr_evd).unwrap();
    client_ep.connect(server.ia.attr().address, port, None, b"").unwrap();
    let Event::ConnectionRequest { cr, .. } = server.cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a connection request")
    };
    cr.accept(Some(server_ep), b"").unwrap();
    for conn_evd in [&client.conn_evd, &server.conn_evd] {
        assert_eq!(connection_event(conn_evd), event::CONNECTION_EVENT_ESTABLISHED);
    }
    psp
}

/// An async EVD for `s`'s IA, to see that nothing is reported there either.
fn async_evd(s: &Side) -> Evd {
    let evd = Evd::create(&s.ia, 8, evd_flags::ASYNC).unwrap();
    s.ia.set_async_evd(&evd);
    evd
}

/// Nothing waits on any of `evds` (`what` names them in the failure).
fn quiet(evds: &[(&Evd, &str)]) {
    for (evd, what) in evds {
        if let Ok(ev) = evd.dequeue() {
            panic!("{what}: unexpected {ev:?}");
        }
    }
}

/// The 16 bytes of message `i`.
fn message(i: u64) -> [u8; 16] {
    let mut m = *b"message ........";
    m[8..].copy_from_slice(&i.to_le_bytes());
    m
}

#[test]
fn a_null_recv_evd_endpoint_takes_many_times_its_receive_queue_of_messages() {
    let server = side();
    let client = side();
    let server_async = async_evd(&server);
    let attr = shallow(&server);
    let ep = Ep::create_nullable(
        &server.pz,
        None,
        Some(&server.req_evd),
        Some(&server.conn_evd),
        None,
        Some(attr),
    )
    .unwrap();
    let q = ep.query();
    assert!(q.recv_evd.is_none(), "the query reports the NULL recv EVD");
    assert!(q.request_evd.unwrap().same(&server.req_evd));
    let slot = |i: u64| server.buf.triplet((i % u64::from(DEPTH)) * 64, 64).unwrap();
    for i in 0..u64::from(DEPTH) {
        ep.post_recv(&[slot(i)], 1000 + i, 0).unwrap();
    }
    let _psp = connect(&server, &ep, &client, &client.ep, 31440);
    for i in 0..MANY {
        client.buf.write(4096, &message(i)).unwrap();
        client.ep.post_send(&[client.buf.triplet(4096, 16).unwrap()], i, 0).unwrap();
        let sent = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
        assert_eq!((sent.user_cookie, sent.status, sent.operation), (i, 0, dtos::SEND), "{i}");
        let mut got = [0u8; 16];
        server.buf.read(((i % u64::from(DEPTH)) * 64) as usize, &mut got).unwrap();
        assert_eq!(got, message(i), "message {i} landed in its receive");
        let held = ep.recv_query().unwrap().nbufs_allocated;
        assert_eq!(held, Some(DEPTH - 1), "the receive message {i} took holds no buffer");
        // The receive it took is reposted: the endpoint keeps DEPTH posted, which only
        // works if the completions nobody dequeues give their places back.
        ep.post_recv(&[slot(i)], 1000 + i + u64::from(DEPTH), 0)
            .unwrap_or_else(|e| panic!("repost after message {i}: {e}"));
    }
    let status = ep.get_status();
    assert_eq!(status.state, EpState::Connected);
    assert!(!status.recv_idle && status.request_idle, "{status:?}");
    quiet(&[
        (&server.recv_evd, "the server's other recv EVD"),
        (&server.req_evd, "the server's request EVD"),
        (&server.conn_evd, "the server's connect EVD"),
        (&server_async, "the server's async EVD"),
        (&client.recv_evd, "the client's recv EVD"),
    ]);
    // The flushes of the receives still posted make no events either.
    ep.disconnect(DisconnectMode::Abrupt).unwrap();
    assert_eq!(connection_event(&server.conn_evd), event::CONNECTION_EVENT_DISCONNECTED);
    assert!(ep.get_status().recv_idle, "the flushed receives are taken in");
    quiet(&[(&server.req_evd, "request EVD"), (&server.recv_evd, "recv EVD")]);
    // A receive posted now completes at once as flushed, silently too.
    ep.post_recv(&[slot(0)], 7, 0).unwrap();
    quiet(&[(&server.recv_evd, "recv EVD"), (&server.conn_evd, "connect EVD")]);
}

#[test]
fn a_null_request_evd_endpoint_sends_and_writes_many_times_its_send_queue() {
    let server = side();
    let client = side();
    let client_async = async_evd(&client);
    let ep = without_request_evd(&client);
    let q = ep.query();
    assert!(q.request_evd.is_none() && q.recv_evd.unwrap().same(&client.recv_evd));
    let _psp = connect(&server, &server.ep, &client, &ep, 31441);
    let target = |i: u64| RmrTriplet {
        rmr_context: server.buf.rmr_context(),
        virtual_address: server.buf.registered_address() + 2048 + (i % 8) * 16,
        segment_length: 16,
    };
    for i in 0..MANY {
        // Half the rounds ask for no completion at all (an unsignalled request's place comes
        // back only with a later signalled one): the endpoint still gets its places back.
        let flags = if i < MANY / 2 { completion_flags::SUPPRESS } else { 0 };
        server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], i, 0).unwrap();
        client.buf.write(4096, &message(i)).unwrap();
        let one = [client.buf.triplet(4096, 16).unwrap()];
        ep.post_send(&one, i, flags).unwrap_or_else(|e| panic!("send {i}: {e}"));
        let r = dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0);
        assert_eq!((r.user_cookie, r.status, r.transfered_length), (i, 0, 16), "{i}");
        let mut got = [0u8; 16];
        server.buf.read(0, &mut got).unwrap();
        assert_eq!(got, message(i));
        ep.post_rdma_write(&one, 500 + i, &target(i), flags)
            .unwrap_or_else(|e| panic!("write {i}: {e}"));
    }
    // The last write is in order behind a send the server saw; one more send flushes it
    // through: once it arrives, every write before it has landed.
    server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], 9999, 0).unwrap();
    ep.post_send(&[client.buf.triplet(4096, 16).unwrap()], 9999, 0).unwrap();
    assert_eq!(dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 9999);
    for i in MANY - 8..MANY {
        let mut got = [0u8; 16];
        server.buf.read((2048 + (i % 8) * 16) as usize, &mut got).unwrap();
        assert_eq!(got, message(i), "write {i} landed");
    }
    assert_eq!(ep.state(), EpState::Connected);
    quiet(&[
        (&client.req_evd, "the client's other request EVD"),
        (&client.recv_evd, "the client's recv EVD"),
        (&client.conn_evd, "the client's connect EVD"),
        (&client_async, "the client's async EVD"),
        (&server.req_evd, "the server's request EVD"),
    ]);
    // Every request was taken in: none is outstanding.
    assert!(ep.get_status().request_idle);
}

/// A request that fails on an endpoint without a request EVD (here a send from memory
/// the key does not cover: a local error, which the peer never sees) still ends the
/// connection: BROKEN on the connect EVD, as when an EVD harvests the failure, once the
/// endpoint takes its completions in (at its next post or status query).
#[test]
fn a_failed_request_without_an_evd_still_breaks_the_connection() {
    let server = side();
    let client = side();
    let ep = without_request_evd(&client);
    let _psp = connect(&server, &server.ep, &client, &ep, 31442);
    let good = client.buf.triplet(0, 16).unwrap();
    let bad = LmrTriplet { lmr_context: good.lmr_context ^ 0x5a5a_0000, ..good };
    ep.post_send(&[bad], 1, 0).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while ep.get_status().state == EpState::Connected {
        assert!(std::time::Instant::now() < deadline, "the failure was never noticed");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(ep.state(), EpState::Disconnected);
    assert_eq!(connection_event(&client.conn_evd), event::CONNECTION_EVENT_BROKEN);
    // The peer is told: the abrupt disconnect of a broken connection.
    assert_eq!(connection_event(&server.conn_evd), event::CONNECTION_EVENT_DISCONNECTED);
    quiet(&[(&client.req_evd, "request EVD"), (&client.recv_evd, "recv EVD")]);
}

/// `dat_ep_modify` sets NULL DTO EVDs and real ones again, as it changes any EVD: before
/// anything is posted, in the states that allow it; events follow the EVD of the moment,
/// and with both EVDs back every completion is an event again.
#[test]
fn dat_ep_modify_takes_dto_evds_away_and_gives_them_back() {
    let server = side();
    let client = side();
    let ep = Ep::create(
        &client.pz,
        &client.recv_evd,
        &client.req_evd,
        Some(&client.conn_evd),
        Some(shallow(&client)),
    )
    .unwrap();
    let evds = ferrodat_abi::dat::ep_field::RECV_EVD_HANDLE
        | ferrodat_abi::dat::ep_field::REQUEST_EVD_HANDLE;
    let mut u = EpParamUpdate::from_current(&ep);
    u.request_evd = None;
    ep.modify(evds, &u).unwrap();
    let q = ep.query();
    assert!(q.request_evd.is_none() && q.recv_evd.unwrap().same(&client.recv_evd));
    let psp = connect(&server, &server.ep, &client, &ep, 31443);
    for i in 0..MANY {
        server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], i, 0).unwrap();
        ep.post_send(&[client.buf.triplet(4096, 16).unwrap()], i, 0)
            .unwrap_or_else(|e| panic!("send {i}: {e}"));
        assert_eq!(dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, i);
    }
    quiet(&[(&client.req_evd, "the request EVD taken away")]);
    // Not while connected (the legal-calls table), NULL or not.
    let e = ep.modify(evds, &EpParamUpdate::from_current(&ep)).unwrap_err();
    assert_eq!(e.return_type(), ferrodat_abi::dat::ret::INVALID_STATE, "{e}");

    // Back to UNCONNECTED: the request EVD comes back, the recv EVD goes.
    ep.disconnect(DisconnectMode::Abrupt).unwrap();
    assert_eq!(connection_event(&client.conn_evd), event::CONNECTION_EVENT_DISCONNECTED);
    assert_eq!(connection_event(&server.conn_evd), event::CONNECTION_EVENT_DISCONNECTED);
    ep.reset().unwrap();
    server.ep.reset().unwrap();
    let mut u = EpParamUpdate::from_current(&ep);
    u.request_evd = Some(client.req_evd.clone());
    u.recv_evd = None;
    ep.modify(evds, &u).unwrap();
    let q = ep.query();
    assert!(q.recv_evd.is_none() && q.request_evd.unwrap().same(&client.req_evd));
    for i in 0..u64::from(DEPTH) {
        ep.post_recv(&[client.buf.triplet(i * 64, 64).unwrap()], 100 + i, 0).unwrap();
    }
    drop(psp);
    let _psp = connect(&server, &server.ep, &client, &ep, 31444);
    for i in 0..MANY {
        // The server sends into the client's silent receives, which it reposts.
        server.ep.post_send(&[server.buf.triplet(4096, 16).unwrap()], i, 0).unwrap();
        assert_eq!(dto(server.req_evd.wait(WAIT_US, 1).unwrap().0).status, 0, "{i}");
        let slot = client.buf.triplet((i % u64::from(DEPTH)) * 64, 64).unwrap();
        ep.post_recv(&[slot], 200 + i, 0).unwrap_or_else(|e| panic!("repost {i}: {e}"));
        // The client's sends complete on its request EVD again.
        server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], i, 0).unwrap();
        ep.post_send(&[client.buf.triplet(4096, 16).unwrap()], 300 + i, 0).unwrap();
        let sent = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
        assert_eq!((sent.user_cookie, sent.status), (300 + i, 0));
        assert_eq!(dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, i);
    }
    quiet(&[(&client.recv_evd, "the recv EVD taken away")]);

    // Both EVDs back: every completion is an event again (the posts leave the silent CQ's
    // path, which nothing feeds any more).
    ep.disconnect(DisconnectMode::Abrupt).unwrap();
    assert_eq!(connection_event(&client.conn_evd), event::CONNECTION_EVENT_DISCONNECTED);
    assert_eq!(connection_event(&server.conn_evd), event::CONNECTION_EVENT_DISCONNECTED);
    ep.reset().unwrap();
    server.ep.reset().unwrap();
    let mut u = EpParamUpdate::from_current(&ep);
    u.recv_evd = Some(client.recv_evd.clone());
    ep.modify(evds, &u).unwrap();
    let q = ep.query();
    assert!(q.recv_evd.unwrap().same(&client.recv_evd));
    assert!(q.request_evd.unwrap().same(&client.req_evd));
    let _psp = connect(&server, &server.ep, &client, &ep, 31447);
    for i in 0..MANY {
        ep.post_recv(&[client.buf.triplet(0, 64).unwrap()], 400 + i, 0).unwrap();
        server.ep.post_send(&[server.buf.triplet(4096, 16).unwrap()], i, 0).unwrap();
        assert_eq!(dto(server.req_evd.wait(WAIT_US, 1).unwrap().0).status, 0, "{i}");
        assert_eq!(dto(client.recv_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 400 + i);
        server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], i, 0).unwrap();
        ep.post_send(&[client.buf.triplet(4096, 16).unwrap()], 500 + i, 0).unwrap();
        assert_eq!(dto(client.req_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 500 + i);
        assert_eq!(dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, i);
    }
}

/// An endpoint the provider made for a request (`DAT_PSP_PROVIDER_FLAG`) may keep its NULL
/// DTO EVDs: named a PZ and a connection EVD it is ready, is accepted with a NULL
/// endpoint, and its receives take the peer's messages.
#[test]
fn a_provider_endpoint_is_accepted_with_only_its_pz_and_connection_evd_named() {
    use ferrodat_abi::dat::{ep_field, psp_flags};
    let server = side();
    let client = side();
    let psp = Psp::create_any(&server.ia, &server.cr_evd, psp_flags::PROVIDER).unwrap();
    client.ep.connect(server.ia.attr().address, psp.conn_qual(), None, b"").unwrap();
    let Event::ConnectionRequest { cr, .. } = server.cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a connection request")
    };
    let ep = cr.query().unwrap().local_ep.expect("the provider's endpoint");
    let mut u = EpParamUpdate::from_current(&ep);
    assert!(u.recv_evd.is_none() && u.request_evd.is_none(), "DAT: NULL until named");
    u.pz = Some(server.pz.clone());
    u.connect_evd = Some(server.conn_evd.clone());
    ep.modify(ep_field::PZ_HANDLE | ep_field::CONNECT_EVD_HANDLE, &u).unwrap();
    let q = ep.query();
    assert!(q.pz.is_some() && q.recv_evd.is_none() && q.request_evd.is_none());
    for i in 0..u64::from(DEPTH) {
        ep.post_recv(&[server.buf.triplet(i * 64, 64).unwrap()], i, 0).unwrap();
    }
    cr.accept(None, b"").unwrap();
    for conn_evd in [&client.conn_evd, &server.conn_evd] {
        assert_eq!(connection_event(conn_evd), event::CONNECTION_EVENT_ESTABLISHED);
    }
    for i in 0..MANY {
        client.buf.write(4096, &message(i)).unwrap();
        client.ep.post_send(&[client.buf.triplet(4096, 16).unwrap()], i, 0).unwrap();
        assert_eq!(dto(client.req_evd.wait(WAIT_US, 1).unwrap().0).status, 0, "{i}");
        let offset = (i % 4) * 64;
        let mut got = [0u8; 16];
        server.buf.read(offset as usize, &mut got).unwrap();
        assert_eq!(got, message(i));
        ep.post_recv(&[server.buf.triplet(offset, 64).unwrap()], i, 0).unwrap();
    }
    quiet(&[(&server.recv_evd, "recv EVD"), (&server.req_evd, "request EVD")]);
}

/// An SRQ endpoint's receives are taken from the SRQ as messages arrive and only their
/// completions say so: without a recv EVD nobody would take those in, so it is refused, at
/// create and modify alike (`DAT_MODEL_NOT_SUPPORTED`); its request EVD may be NULL.
#[test]
fn an_srq_endpoint_needs_its_recv_evd_but_not_its_request_evd() {
    use ferrodat_abi::dat::{ep_field, ret};
    use ferrodat_engine::srq::Srq;
    let s = side();
    let srq = Srq::create(&s.pz, 8, 1).unwrap();
    let e = Ep::create_nullable(&s.pz, None, Some(&s.req_evd), None, Some(&srq), None).unwrap_err();
    assert_eq!(e.return_type(), ret::MODEL_NOT_SUPPORTED, "{e}");
    assert!(e.to_string().contains("give the endpoint a recv EVD"), "{e}");
    let ep = Ep::create_nullable(&s.pz, Some(&s.recv_evd), None, None, Some(&srq), None).unwrap();
    assert!(ep.query().request_evd.is_none());
    let mut u = EpParamUpdate::from_current(&ep);
    u.recv_evd = None;
    let e = ep.modify(ep_field::RECV_EVD_HANDLE, &u).unwrap_err();
    assert_eq!(e.return_type(), ret::MODEL_NOT_SUPPORTED, "{e}");
    assert!(ep.query().recv_evd.unwrap().same(&s.recv_evd), "unchanged");
}

/// The QP a failed request put in ERR flushes the endpoint's receives onto its recv EVD:
/// a consumer that only waits there learns of the failure with them (BROKEN), without
/// posting again.
#[test]
fn a_failed_request_without_an_evd_is_noticed_with_the_flushed_receives() {
    let server = side();
    let client = side();
    let ep = without_request_evd(&client);
    ep.post_recv(&[client.buf.triplet(0, 64).unwrap()], 77, 0).unwrap();
    let _psp = connect(&server, &server.ep, &client, &ep, 31445);
    let good = client.buf.triplet(64, 16).unwrap();
    let bad = LmrTriplet { lmr_context: good.lmr_context ^ 0x5a5a_0000, ..good };
    ep.post_send(&[bad], 1, 0).unwrap();
    let flushed = dto(client.recv_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!(
        (flushed.user_cookie, flushed.status),
        (77, ferrodat_abi::dat::dto_status::ERR_FLUSHED)
    );
    assert_eq!(connection_event(&client.conn_evd), event::CONNECTION_EVENT_BROKEN);
    assert_eq!(ep.state(), EpState::Disconnected);
    assert_eq!(connection_event(&server.conn_evd), event::CONNECTION_EVENT_DISCONNECTED);
}

/// RMR binds are requests too: on an endpoint without a request EVD they bind (the peer
/// writes through the window), unbind, and make no event, again and again.
#[test]
fn rmr_binds_on_a_null_request_evd_endpoint_work_without_events() {
    use ferrodat_abi::dat::mem_priv;
    use ferrodat_engine::lmr::MemPriv;
    use ferrodat_engine::rmr::Rmr;
    let server = side();
    let client = side();
    let ep = without_request_evd(&server);
    let _psp = connect(&server, &ep, &client, &client.ep, 31446);
    let rmr = Rmr::create(&server.pz).unwrap();
    let range = server.buf.triplet(1024, 64).unwrap();
    let rw = MemPriv(mem_priv::REMOTE_READ | mem_priv::REMOTE_WRITE);
    for i in 0..MANY {
        let ctx = rmr
            .bind(Some(&server.buf), &range, rw, &ep, i, 0)
            .unwrap_or_else(|e| panic!("bind {i}: {e}"));
        let window = RmrTriplet {
            rmr_context: ctx,
            virtual_address: server.buf.registered_address() + 1024,
            segment_length: 16,
        };
        client.buf.write(4096, &message(i)).unwrap();
        let local = [client.buf.triplet(4096, 16).unwrap()];
        client.ep.post_rdma_write(&local, i, &window, 0).unwrap();
        let w = dto(client.req_evd.wait(WAIT_US, 1).unwrap().0);
        assert_eq!((w.user_cookie, w.status), (i, 0), "write {i} through the window");
        let mut got = [0u8; 16];
        server.buf.read(1024, &mut got).unwrap();
        assert_eq!(got, message(i));
        let empty = LmrTriplet { segment_length: 0, ..range };
        rmr.bind(None, &empty, MemPriv(0), &ep, 1000 + i, 0)
            .unwrap_or_else(|e| panic!("unbind {i}: {e}"));
    }
    quiet(&[(&server.req_evd, "request EVD"), (&server.recv_evd, "recv EVD")]);
    assert_eq!(ep.state(), EpState::Connected);
}
