//! Return codes and state changes the DAT 1.2 man pages give for connection management,
//! checked call by call through the public API over softhca: `dat_psp_create(_any)`,
//! `dat_rsp_create`/`free`, `dat_cr_accept`/`reject`, `dat_ep_connect`/`dup_connect`.
//! Each test quotes the man page line it checks.

mod support;

use support::code;

use support::{Side, WAIT_US, side};

use ferrodat_abi::dat::{dto_status, event, psp_flags, ret, subtype};
use ferrodat_engine::cm::MAX_PRIVATE_DATA;
use ferrodat_engine::ep_state::{DisconnectMode, EpState};
use ferrodat_engine::event::Event;
use ferrodat_engine::sp::{Cr, Psp, Rsp};
use std::time::Duration;

fn request(s: &Side) -> Cr {
    match s.cr_evd.wait(WAIT_US, 1).unwrap().0 {
        Event::ConnectionRequest { cr, .. } => cr,
        other => panic!("expected a connection request, got {other:?}"),
    }
}

fn connection(s: &Side) -> (u32, Vec<u8>) {
    match s.conn_evd.wait(WAIT_US, 1).unwrap().0 {
        Event::Connection { number, private_data, .. } => (number, private_data),
        other => panic!("expected a connection event, got {other:?}"),
    }
}

/// dat_psp_create_any: DAT_INVALID_HANDLE "The ia_handle or evd_handle parameter is
/// invalid" — as for dat_psp_create, an EVD of another IA is not this IA's CR EVD.
#[test]
fn psp_create_any_refuses_another_ias_evd_as_psp_create_does() {
    let (s, other) = (side(), side());
    let want = (ret::INVALID_HANDLE, subtype::INVALID_HANDLE_EVD_CR);
    let e = Psp::create(&s.ia, 32001, &other.cr_evd).map(drop).unwrap_err();
    assert_eq!(code(&e), want, "{e}");
    let e = Psp::create_any(&s.ia, &other.cr_evd, psp_flags::CONSUMER).map(drop).unwrap_err();
    assert_eq!(code(&e), want, "{e}");
}

/// dat_rsp_create: DAT_INVALID_STATE "Parameter in an invalid state. For example, an
/// Endpoint was not in the Idle state"; DAT_CONN_QUAL_IN_USE "Specified Connection
/// Qualifier is in use" (the refused RSP leaves its endpoint as it was).
#[test]
fn rsp_create_needs_an_unconnected_endpoint_and_a_free_conn_qual() {
    let s = side();
    let _psp = Psp::create(&s.ia, 32002, &s.cr_evd).unwrap();
    let e = Rsp::create(&s.ia, 32002, &s.ep, &s.cr_evd).map(drop).unwrap_err();
    assert_eq!(e.return_type(), ret::CONN_QUAL_IN_USE, "{e}");
    assert_eq!(s.ep.state(), EpState::Unconnected, "the refused RSP did not reserve it");
    let rsp = Rsp::create(&s.ia, 32003, &s.ep, &s.cr_evd).unwrap();
    let e = Rsp::create(&s.ia, 32004, &s.ep, &s.cr_evd).map(drop).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EP_RESERVED), "{e}");
    rsp.free().unwrap();
    assert_eq!(s.ep.state(), EpState::Unconnected, "dat_rsp_free gives the endpoint back");
    Rsp::create(&s.ia, 32004, &s.ep, &s.cr_evd).expect("UNCONNECTED again").free().unwrap();
}

/// dat_rsp_free: "Consumers shall be aware that due to a race condition, this Reserved
/// Service Point might have generated a Connection Request Event and passed the associated
/// Endpoint to a Consumer in it"; "This operation has no effect on previously generated
/// Connection Request Event and Connection Request". Returns DAT_SUCCESS.
#[test]
fn rsp_free_after_its_request_keeps_the_request_and_its_endpoint() {
    let (server, client) = (side(), side());
    let rsp = Rsp::create(&server.ia, 32005, &server.ep, &server.cr_evd).unwrap();
    client.ep.connect(server.ia.attr().address, 32005, None, b"rsp").unwrap();
    let cr = request(&server);
    assert_eq!(server.ep.state(), EpState::PassiveConnectionPending);
    rsp.free().expect("dat_rsp_free succeeds after its request arrived");
    assert_eq!(server.ep.state(), EpState::PassiveConnectionPending, "still the request's");
    assert_eq!(cr.query().unwrap().private_data, b"rsp");
    cr.accept(None, b"").unwrap();
    assert_eq!(connection(&client).0, event::CONNECTION_EVENT_ESTABLISHED);
    assert_eq!(connection(&server).0, event::CONNECTION_EVENT_ESTABLISHED);
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

/// dat_cr_accept: "If the provided local Endpoint does not satisfy the requested
/// Connection Request, the operation fails without any effect on the local Endpoint,
/// Pending Connection Request, private data, or remote Endpoint"; "This operation, if
/// successful, also destroys the Connection Request instance. Use of the handle of the
/// destroyed cr_handle in any consequent operation fails" (a reject after the accept).
#[test]
fn a_refused_accept_leaves_the_request_pending_and_a_used_request_is_dead() {
    let (server, client) = (side(), side());
    let _psp = Psp::create(&server.ia, 32006, &server.cr_evd).unwrap();
    client.ep.connect(server.ia.attr().address, 32006, None, b"first").unwrap();
    let cr = request(&server);
    // An endpoint an RSP holds is not UNCONNECTED.
    let held = server.another_ep();
    let rsp = Rsp::create(&server.ia, 32007, &held, &server.cr_evd).unwrap();
    let e = cr.accept(Some(&held), b"").unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EP_RESERVED), "{e}");
    let e = cr.accept(Some(&server.ep), &[1; MAX_PRIVATE_DATA + 1]).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_PARAMETER, subtype::INVALID_ARG3), "{e}");
    assert_eq!(cr.query().unwrap().private_data, b"first", "the request is still pending");
    cr.accept(Some(&server.ep), &[2; MAX_PRIVATE_DATA]).unwrap();
    let e = cr.reject().unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_HANDLE, subtype::INVALID_HANDLE_CR), "{e}");
    let e = cr.accept(Some(&held), b"").unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_HANDLE, subtype::INVALID_HANDLE_CR), "{e}");
    assert_eq!(
        connection(&client),
        (event::CONNECTION_EVENT_ESTABLISHED, vec![2; MAX_PRIVATE_DATA])
    );
    assert_eq!(connection(&server).0, event::CONNECTION_EVENT_ESTABLISHED);
    rsp.free().unwrap();
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

/// dat_cr_accept: "If the Provider cannot complete the Connection establishment, the
/// connection is not established and the Consumer is notified through a Connection Event
/// of type DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR ... It can be caused by the
/// active side timeout expiration ... If Connection is not established, Endpoint
/// transitions into Disconnected state and all posted Recv DTOs are flushed to its
/// recv_evd_handle."
#[test]
fn accepting_after_the_requester_timed_out_is_an_accept_completion_error() {
    let (server, client) = (side(), side());
    let _psp = Psp::create(&server.ia, 32008, &server.cr_evd).unwrap();
    let timeout = Duration::from_millis(200);
    client.ep.connect(server.ia.attr().address, 32008, Some(timeout), b"hurry").unwrap();
    let cr = request(&server);
    assert_eq!(connection(&client).0, event::CONNECTION_EVENT_TIMED_OUT);
    assert_eq!(client.ep.state(), EpState::Disconnected);
    server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], 41, 0).unwrap();
    cr.accept(Some(&server.ep), b"too late").expect("the accept itself is asynchronous");
    assert_eq!(connection(&server).0, event::CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
    assert_eq!(server.ep.state(), EpState::Disconnected);
    match server.recv_evd.wait(WAIT_US, 1).unwrap().0 {
        Event::Dto { completion, .. } => {
            assert_eq!((completion.user_cookie, completion.status), (41, dto_status::ERR_FLUSHED))
        }
        other => panic!("expected the flushed receive, got {other:?}"),
    }
}

/// dat_cr_reject (2.0: with private data): the requester gets PEER_REJECTED carrying it;
/// more than max_private_data_size is refused as the accept's is (DAT_INVALID_PARAMETER,
/// the size argument), leaving the request pending.
#[test]
fn a_reject_carries_its_private_data_and_refuses_too_much() {
    let (server, client) = (side(), side());
    let _psp = Psp::create(&server.ia, 32009, &server.cr_evd).unwrap();
    client.ep.connect(server.ia.attr().address, 32009, None, b"").unwrap();
    let cr = request(&server);
    let e = cr.reject_with(&[0; MAX_PRIVATE_DATA + 1]).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_PARAMETER, subtype::INVALID_ARG2), "{e}");
    cr.reject_with(b"go away").unwrap();
    assert_eq!(connection(&client), (event::CONNECTION_EVENT_PEER_REJECTED, b"go away".to_vec()));
    assert_eq!(client.ep.state(), EpState::Disconnected);
}

/// dat_ep_connect: DAT_INVALID_STATE "Endpoint was not in DAT_EP_STATE_UNCONNECTED state";
/// dat_ep_dup_connect: likewise, and its private data size is its fourth argument.
#[test]
fn connect_and_dup_connect_need_an_unconnected_endpoint() {
    let (server, client, _psp) = support::connected(32010);
    let address = server.ia.attr().address;
    let e = client.ep.connect(address, 32010, None, b"").unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EP_CONNECTED), "{e}");
    let e = client.ep.dup_connect(&client.ep, None, b"").unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EP_CONNECTED), "{e}");
    let fresh = client.another_ep();
    let e = fresh.dup_connect(&client.ep, None, &[0; MAX_PRIVATE_DATA + 1]).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_PARAMETER, subtype::INVALID_ARG4), "{e}");
    assert_eq!(fresh.state(), EpState::Unconnected);
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

/// dat_psp_create and dat_rsp_create: DAT_INVALID_PARAMETER "The conn_qual ... parameter
/// is invalid" — 0 is no TCP port to listen on (dat_psp_create_any picks one).
#[test]
fn a_service_point_on_conn_qual_zero_is_an_invalid_parameter() {
    let s = side();
    let want = (ret::INVALID_PARAMETER, subtype::INVALID_ARG2);
    let e = Psp::create(&s.ia, 0, &s.cr_evd).map(drop).unwrap_err();
    assert_eq!(code(&e), want, "{e}");
    let e = Rsp::create(&s.ia, 0, &s.ep, &s.cr_evd).map(drop).unwrap_err();
    assert_eq!(code(&e), want, "{e}");
    assert_eq!(s.ep.state(), EpState::Unconnected, "the refused RSP did not reserve it");
}

/// dat_rmr_bind: "The value of DAT_COMPLETION_UNSIGNALLED_FLAG is only valid if the
/// Endpoint Request Completion Flags DAT_COMPLETION_UNSIGNALLED_FLAG. Otherwise,
/// DAT_INVALID_PARAMETER is returned" (completion_flags: DAT 2.0's argument 8). Nothing is
/// bound or posted; the same bind without the flag goes through.
#[test]
fn an_unsignalled_bind_needs_an_endpoint_configured_for_it() {
    use ferrodat_abi::dat::{completion_flags, mem_priv};
    use ferrodat_engine::lmr::MemPriv;
    use ferrodat_engine::rmr::Rmr;
    let (server, _client, _psp) = support::connected(32012);
    let rmr = Rmr::create(&server.pz).unwrap();
    let range = server.buf.triplet(0, 256).unwrap();
    let rw = MemPriv(mem_priv::REMOTE_READ | mem_priv::REMOTE_WRITE);
    let unsignalled = completion_flags::UNSIGNALLED;
    let e = rmr.bind(Some(&server.buf), &range, rw, &server.ep, 5, unsignalled).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_PARAMETER, subtype::INVALID_ARG8), "{e}");
    assert!(rmr.query().binding.is_none(), "nothing was bound");
    assert!(server.req_evd.dequeue().is_err(), "nothing was posted");
    rmr.bind(Some(&server.buf), &range, rw, &server.ep, 6, 0).unwrap();
    match server.req_evd.wait(WAIT_US, 1).unwrap().0 {
        Event::RmrBind { user_cookie, status, .. } => {
            assert_eq!((user_cookie, status), (6, dto_status::SUCCESS))
        }
        other => panic!("expected the bind's completion, got {other:?}"),
    }
}
