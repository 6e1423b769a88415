//! RMRs end to end in one process over softhca: two endpoints connected through the
//! connection manager; the server binds an RMR over part of its LMR and the client reads
//! and writes through the RMR's context — inside the range and rights only; after an
//! unbind (or a free) the context fails with a DTO error; every argument and state error of
//! `dat_rmr_bind`.

mod support;

use support::{Side, WAIT_US, connected, side};

use ferrodat_abi::dat::{
    Return, ReturnSubtype, dto_status, evd_flags, event, mem_priv, ret, subtype,
};
use ferrodat_engine::ep::Ep;
use ferrodat_engine::ep_state::{DisconnectMode, EpState};
use ferrodat_engine::error::DatError;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::lmr::{Lmr, LmrTriplet, MemPriv, RmrTriplet};
use ferrodat_engine::pz::Pz;
use ferrodat_engine::rmr::Rmr;

const RW: MemPriv = MemPriv(mem_priv::REMOTE_READ | mem_priv::REMOTE_WRITE);

/// The bind completion on `side`'s request EVD: (rmr id, ep id, cookie, status).
fn bind_event(side: &Side) -> (u64, u64, u64, u32) {
    match side.req_evd.wait(WAIT_US, 1).unwrap().0 {
        Event::RmrBind { rmr, ep, user_cookie, status } => (rmr, ep, user_cookie, status),
        other => panic!("expected an RMR bind completion, got {other:?}"),
    }
}

/// The status of the client's next DTO completion.
fn dto_status_of(side: &Side) -> u32 {
    match side.req_evd.wait(WAIT_US, 1).unwrap().0 {
        Event::Dto { completion, .. } => completion.status,
        other => panic!("expected a DTO completion, got {other:?}"),
    }
}

fn window(server: &Side, rmr_context: u32, offset: u64, length: u64) -> RmrTriplet {
    RmrTriplet {
        rmr_context,
        // (wrapping: an offset of u64::MAX is the byte before the window)
        virtual_address: server.buf.registered_address().wrapping_add(1024).wrapping_add(offset),
        segment_length: length,
    }
}

fn expect_err(r: Result<u32, DatError>, return_type: Return, sub: ReturnSubtype, says: &str) {
    let e = r.expect_err(says);
    assert_eq!((e.return_type(), e.subtype()), (return_type, sub), "{e}");
    assert!(e.to_string().contains(says), "{e}");
}

#[test]
fn the_peer_reads_and_writes_through_a_bound_rmr_until_it_is_unbound() {
    let (server, client, _psp) = connected(31260);
    let rmr = Rmr::create(&server.pz).unwrap();
    let q = rmr.query();
    assert!(q.binding.is_none(), "a new RMR is unbound");
    assert!(q.pz.same(&server.pz));
    let first = rmr.rmr_context();

    let range = server.buf.triplet(1024, 256).unwrap();
    let ctx = rmr.bind(Some(&server.buf), &range, RW, &server.ep, 77, 0).unwrap();
    assert_ne!(ctx, first, "a bind makes a new context");
    assert_ne!(ctx, server.buf.rmr_context());
    assert_eq!(bind_event(&server), (rmr.id(), server.ep.id(), 77, dto_status::SUCCESS));
    let q = rmr.query();
    let b = q.binding.expect("bound");
    assert_eq!((b.triplet, b.mem_priv, b.ep, q.rmr_context), (range, RW, server.ep.id(), ctx));
    assert!(b.lmr.same(&server.buf));

    // RDMA WRITE through the RMR, then READ it back elsewhere.
    let data: Vec<u8> = (0..64).map(|i| (i * 3 + 1) as u8).collect();
    client.buf.write(5000, &data).unwrap();
    let local = client.buf.triplet(5000, 64).unwrap();
    client.ep.post_rdma_write(&[local], 1, &window(&server, ctx, 10, 64), 0).unwrap();
    assert_eq!(dto_status_of(&client), dto_status::SUCCESS);
    let mut got = vec![0u8; 64];
    server.buf.read(1034, &mut got).unwrap();
    assert_eq!(got, data);
    let back = client.buf.triplet(6000, 64).unwrap();
    client.ep.post_rdma_read(&[back], 2, &window(&server, ctx, 10, 64), 0).unwrap();
    assert_eq!(dto_status_of(&client), dto_status::SUCCESS);
    client.buf.read(6000, &mut got).unwrap();
    assert_eq!(got, data);

    // A suppressed bind makes no event; the unbind after it does.
    let empty = LmrTriplet { segment_length: 0, ..range };
    let again = rmr.bind(Some(&server.buf), &range, RW, &server.ep, 78, 1).unwrap();
    let unbound = rmr.bind(None, &empty, MemPriv(0), &server.ep, 79, 0).unwrap();
    assert!(again != ctx && unbound != again);
    assert_eq!(bind_event(&server), (rmr.id(), server.ep.id(), 79, dto_status::SUCCESS));
    assert!(rmr.query().binding.is_none());

    // The LMR could not be freed while the RMR was bound in it; now it can.
    rmr.bind(Some(&server.buf), &range, RW, &server.ep, 80, 0).unwrap();
    assert_eq!(bind_event(&server).2, 80);
    let (lmr, e) = server.buf.clone().free().unwrap_err();
    assert_eq!(
        (e.return_type(), e.subtype()),
        (ret::INVALID_STATE, subtype::INVALID_STATE_LMR_IN_USE)
    );
    assert!(e.to_string().contains("unbind them"), "{e}");
    rmr.bind(None, &empty, MemPriv(0), &server.ep, 81, 0).unwrap();
    assert_eq!(bind_event(&server).2, 81);
    lmr.free().unwrap();

    // The old context now fails: a remote access error for the client's DTO.
    client.ep.post_rdma_write(&[local], 3, &window(&server, again, 10, 64), 0).unwrap();
    assert_eq!(dto_status_of(&client), dto_status::ERR_REMOTE_ACCESS);
    rmr.free().unwrap();
}

#[test]
fn outside_its_range_or_rights_the_rmr_context_fails() {
    // Each refused access breaks its connection: one connection per case.
    let cases: [(&str, MemPriv, u64, bool); 4] = [
        ("one byte past the end", RW, 250, false),
        ("one byte before the start", RW, u64::MAX, false),
        ("a write with read rights only", MemPriv(mem_priv::REMOTE_READ), 0, false),
        ("a read with write rights only", MemPriv(mem_priv::REMOTE_WRITE), 0, true),
    ];
    for (i, (what, rights, offset, read)) in cases.into_iter().enumerate() {
        let (server, client, _psp) = connected(31261 + i as u16);
        let rmr = Rmr::create(&server.pz).unwrap();
        let range = server.buf.triplet(1024, 256).unwrap();
        let ctx = rmr.bind(Some(&server.buf), &range, rights, &server.ep, 1, 0).unwrap();
        assert_eq!(bind_event(&server).3, dto_status::SUCCESS, "{what}");
        let local = client.buf.triplet(0, 8).unwrap();
        let remote = window(&server, ctx, offset, 8);
        if read {
            client.ep.post_rdma_read(&[local], 1, &remote, 0).unwrap();
        } else {
            client.ep.post_rdma_write(&[local], 1, &remote, 0).unwrap();
        }
        assert_eq!(dto_status_of(&client), dto_status::ERR_REMOTE_ACCESS, "{what}");
    }
}

#[test]
fn a_freed_rmr_context_fails() {
    let (server, client, _psp) = connected(31266);
    let rmr = Rmr::create(&server.pz).unwrap();
    let range = server.buf.triplet(0, 4096).unwrap();
    let ctx = rmr.bind(Some(&server.buf), &range, RW, &server.ep, 1, 0).unwrap();
    assert_eq!(bind_event(&server).3, dto_status::SUCCESS);
    // The PZ is in use while the RMR lives.
    let pz = server.pz.clone();
    let (pz, e) = pz.free().unwrap_err();
    assert_eq!(e.subtype(), subtype::INVALID_STATE_PZ_IN_USE);
    drop(pz);
    rmr.free().unwrap();
    let local = client.buf.triplet(0, 8).unwrap();
    let remote = RmrTriplet {
        rmr_context: ctx,
        virtual_address: server.buf.registered_address(),
        segment_length: 8,
    };
    client.ep.post_rdma_write(&[local], 1, &remote, 0).unwrap();
    assert_eq!(dto_status_of(&client), dto_status::ERR_REMOTE_ACCESS);
}

#[test]
fn bind_arguments_are_checked_before_anything_is_posted() {
    let (server, _client, _psp) = connected(31267);
    let rmr = Rmr::create(&server.pz).unwrap();
    let range = server.buf.triplet(1024, 256).unwrap();
    let bind = |lmr: Option<&Lmr>, t: &LmrTriplet, p: MemPriv, ep: &Ep, flags: u32| {
        rmr.bind(lmr, t, p, ep, 5, flags)
    };
    let bad = ret::INVALID_PARAMETER;
    let wrong_key = LmrTriplet { lmr_context: range.lmr_context ^ 0x100, ..range };
    expect_err(
        bind(Some(&server.buf), &wrong_key, RW, &server.ep, 0),
        bad,
        subtype::INVALID_ARG3,
        "not the LMR's",
    );
    let past = LmrTriplet { virtual_address: range.virtual_address + 8000, ..range };
    expect_err(
        bind(Some(&server.buf), &past, RW, &server.ep, 0),
        bad,
        subtype::INVALID_ARG3,
        "not inside the LMR",
    );
    expect_err(
        bind(Some(&server.buf), &range, MemPriv(0x100), &server.ep, 0),
        bad,
        subtype::INVALID_ARG4,
        "unknown bits",
    );
    expect_err(
        bind(Some(&server.buf), &range, RW, &server.ep, 0x2),
        bad,
        subtype::INVALID_ARG8,
        "completion flags",
    );
    expect_err(
        bind(None, &range, RW, &server.ep, 0),
        ret::INVALID_HANDLE,
        subtype::INVALID_HANDLE_LMR,
        "needs the LMR",
    );

    // An LMR or endpoint of another PZ.
    let other_pz = Pz::create(&server.ia).unwrap();
    let foreign = Lmr::alloc(&other_pz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    let t = foreign.triplet(0, 64).unwrap();
    expect_err(
        bind(Some(&foreign), &t, RW, &server.ep, 0),
        bad,
        subtype::INVALID_ARG2,
        "another PZ",
    );
    let evd = Evd::create(&server.ia, 8, evd_flags::DTO).unwrap();
    let other_ep = Ep::create(&other_pz, &evd, &evd, None, None).unwrap();
    expect_err(
        bind(Some(&server.buf), &range, RW, &other_ep, 0),
        bad,
        subtype::INVALID_ARG6,
        "another PZ",
    );

    // An LMR without write privileges is not registered for binding.
    let read_only = Lmr::alloc(&server.pz, 4096, MemPriv(mem_priv::REMOTE_READ)).unwrap();
    let t = read_only.triplet(0, 64).unwrap();
    expect_err(
        bind(Some(&read_only), &t, MemPriv(mem_priv::REMOTE_READ), &server.ep, 0),
        ret::PRIVILEGES_VIOLATION,
        subtype::NO_SUBTYPE,
        "DAT_MEM_PRIV_LOCAL_WRITE_FLAG",
    );
    assert!(rmr.query().binding.is_none(), "nothing was bound");
    // Nothing was posted: the request EVD is empty.
    assert!(server.req_evd.dequeue().is_err());
}

#[test]
fn binding_needs_a_connected_endpoint_and_flushes_on_a_disconnected_one() {
    let server = side();
    let rmr = Rmr::create(&server.pz).unwrap();
    let range = server.buf.triplet(0, 64).unwrap();
    // UNCONNECTED: DAT_INVALID_STATE with the state as subtype, for binds and unbinds.
    let e = rmr.bind(Some(&server.buf), &range, RW, &server.ep, 1, 0).unwrap_err();
    assert_eq!(
        (e.return_type(), e.subtype()),
        (ret::INVALID_STATE, subtype::INVALID_STATE_EP_UNCONNECTED),
        "{e}"
    );
    let empty = LmrTriplet { segment_length: 0, ..range };
    let e = rmr.bind(None, &empty, MemPriv(0), &server.ep, 1, 0).unwrap_err();
    assert_eq!(e.subtype(), subtype::INVALID_STATE_EP_UNCONNECTED, "{e}");

    // DISCONNECTED: the bind is accepted and completes at once, flushed; nothing changes.
    let (server, client, _psp) = connected(31268);
    let rmr = Rmr::create(&server.pz).unwrap();
    let before = rmr.rmr_context();
    server.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    for s in [&server, &client] {
        match s.conn_evd.wait(WAIT_US, 1).unwrap().0 {
            Event::Connection { number: event::CONNECTION_EVENT_DISCONNECTED, .. } => {}
            other => panic!("expected DISCONNECTED, got {other:?}"),
        }
    }
    assert_eq!(server.ep.state(), EpState::Disconnected);
    let range = server.buf.triplet(0, 64).unwrap();
    let ctx = rmr.bind(Some(&server.buf), &range, RW, &server.ep, 9, 0).unwrap();
    assert_eq!(ctx, before, "a flushed bind binds nothing");
    assert_eq!(bind_event(&server), (rmr.id(), server.ep.id(), 9, dto_status::ERR_FLUSHED));
    assert!(rmr.query().binding.is_none());
}
