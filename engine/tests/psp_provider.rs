//! A PSP with `DAT_PSP_PROVIDER_FLAG` over softhca: each request comes with an endpoint the
//! provider made (TENTATIVE_CONNECTION_PENDING, no PZ or EVDs); the consumer names them with
//! `dat_ep_modify` and accepts with a NULL endpoint, or rejects and the endpoint goes back.
//! Also the other request-owned endpoint (an RSP's) on reject, and accept refused by state.

mod support;

use support::{WAIT_US, side};

use ferrodat_abi::dat::{ep_field, event, psp_flags, subtype};
use ferrodat_engine::ep::{Ep, EpAttr, EpParamUpdate};
use ferrodat_engine::ep_state::{DisconnectMode, EpState};
use ferrodat_engine::error::DatError;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::sp::{Cr, Psp};

fn request(evd: &Evd) -> Cr {
    match evd.wait(WAIT_US, 1).unwrap().0 {
        Event::ConnectionRequest { cr, .. } => cr,
        other => panic!("expected a connection request, got {other:?}"),
    }
}

fn connection_event(evd: &Evd) -> u32 {
    match evd.wait(WAIT_US, 1).unwrap().0 {
        Event::Connection { number, .. } => number,
        other => panic!("expected a connection event, got {other:?}"),
    }
}

fn dto(evd: &Evd) -> ferrodat_engine::dto::DtoCompletion {
    match evd.wait(WAIT_US, 1).unwrap().0 {
        Event::Dto { completion, .. } => completion,
        other => panic!("expected a DTO completion, got {other:?}"),
    }
}

#[test]
fn the_provider_endpoint_is_modified_then_accepted_with_null() {
    let server = side();
    let client = side();
    assert_eq!(server.ia.provider_attr().ep_creator, ferrodat_abi::dat::ep_creator::IFASKED);
    let psp = Psp::create_any(&server.ia, &server.cr_evd, psp_flags::PROVIDER).unwrap();
    client.ep.connect(server.ia.attr().address, psp.conn_qual(), None, b"provider").unwrap();
    let cr = request(&server.cr_evd);
    let p = cr.query().unwrap();
    assert_eq!(p.private_data, b"provider");
    let ep = p.local_ep.expect("the provider made an endpoint for the request");

    // As DAT hands it out: tentative, default attributes, no PZ or EVDs.
    let q = ep.query();
    assert_eq!(q.ep_state, EpState::TentativeConnectionPending);
    assert!(q.pz.is_none() && q.recv_evd.is_none() && q.request_evd.is_none());
    assert!(q.connect_evd.is_none());
    assert_eq!(q.ep_attr, EpAttr::defaults(&server.ia));
    assert_eq!(q.remote_ia_address, Some(client.ia.attr().address));
    assert_eq!(q.remote_port_qual, client.ep.query().local_port_qual);
    let e = ep.clone().free().unwrap_err();
    assert_eq!(e.code(), DatError::invalid_state(subtype::INVALID_STATE_EP_TENTCONNPENDING).code());
    let e = cr.accept(None, b"").unwrap_err();
    assert_eq!(e.code(), DatError::invalid_state(subtype::INVALID_STATE_EP_NOTREADY).code(), "{e}");

    // The consumer names its PZ and EVDs (legal in TENTATIVE_CONNECTION_PENDING).
    let mut u = EpParamUpdate::from_current(&ep);
    assert!(u.pz.is_none());
    u.pz = Some(server.pz.clone());
    u.recv_evd = Some(server.recv_evd.clone());
    u.request_evd = Some(server.req_evd.clone());
    u.connect_evd = Some(server.conn_evd.clone());
    let mask = ep_field::PZ_HANDLE
        | ep_field::RECV_EVD_HANDLE
        | ep_field::REQUEST_EVD_HANDLE
        | ep_field::CONNECT_EVD_HANDLE;
    ep.modify(mask, &u).unwrap();
    let q = ep.query();
    assert!(q.pz.unwrap().same(&server.pz) && q.recv_evd.unwrap().same(&server.recv_evd));
    assert!(q.request_evd.unwrap().same(&server.req_evd));

    ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], 5, 0).unwrap();
    cr.accept(None, b"welcome").unwrap();
    assert_eq!(connection_event(&client.conn_evd), event::CONNECTION_EVENT_ESTABLISHED);
    assert_eq!(connection_event(&server.conn_evd), event::CONNECTION_EVENT_ESTABLISHED);
    assert_eq!(ep.state(), EpState::Connected);
    client.buf.write(0, b"to the provider's ep").unwrap();
    client.ep.post_send(&[client.buf.triplet(0, 20).unwrap()], 6, 0).unwrap();
    assert_eq!(dto(&client.req_evd).user_cookie, 6);
    let r = dto(&server.recv_evd);
    assert_eq!((r.user_cookie, r.status, r.transfered_length), (5, 0, 20));
    let mut got = [0u8; 20];
    server.buf.read(0, &mut got).unwrap();
    assert_eq!(&got, b"to the provider's ep");
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

#[test]
fn rejecting_hands_the_provider_endpoint_back() {
    let server = side();
    let client = side();
    let psp = Psp::create_any(&server.ia, &server.cr_evd, psp_flags::PROVIDER).unwrap();
    client.ep.connect(server.ia.attr().address, psp.conn_qual(), None, b"").unwrap();
    let cr = request(&server.cr_evd);
    let ep = cr.query().unwrap().local_ep.unwrap();
    cr.reject().unwrap();
    assert_eq!(connection_event(&client.conn_evd), event::CONNECTION_EVENT_PEER_REJECTED);
    assert_eq!(ep.state(), EpState::Unconnected);
    // Each request gets its own endpoint.
    let second =
        Ep::create(&client.pz, &client.recv_evd, &client.req_evd, Some(&client.conn_evd), None)
            .unwrap();
    second.connect(server.ia.attr().address, psp.conn_qual(), None, b"").unwrap();
    let other = request(&server.cr_evd).query().unwrap().local_ep.unwrap();
    assert_ne!(other.id(), ep.id());
}

#[test]
fn rejecting_an_rsp_request_gives_its_endpoint_back_unconnected() {
    use ferrodat_engine::sp::Rsp;
    let server = side();
    let client = side();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _rsp = Rsp::create(&server.ia, port, &server.ep, &server.cr_evd).unwrap();
    client.ep.connect(server.ia.attr().address, port, None, b"").unwrap();
    let cr = request(&server.cr_evd);
    assert_eq!(server.ep.state(), EpState::PassiveConnectionPending);
    cr.reject().unwrap();
    assert_eq!(connection_event(&client.conn_evd), event::CONNECTION_EVENT_PEER_REJECTED);
    assert_eq!(server.ep.state(), EpState::Unconnected);
}

#[test]
fn accepting_on_a_connected_endpoint_is_refused_by_its_state_and_leaves_it_working() {
    let server = side();
    let client = side();
    let psp = Psp::create_any(&server.ia, &server.cr_evd, psp_flags::CONSUMER).unwrap();
    client.ep.connect(server.ia.attr().address, psp.conn_qual(), None, b"").unwrap();
    request(&server.cr_evd).accept(Some(&server.ep), b"").unwrap();
    assert_eq!(connection_event(&client.conn_evd), event::CONNECTION_EVENT_ESTABLISHED);
    assert_eq!(connection_event(&server.conn_evd), event::CONNECTION_EVENT_ESTABLISHED);
    let third = side();
    third.ep.connect(server.ia.attr().address, psp.conn_qual(), None, b"").unwrap();
    let cr = request(&server.cr_evd);
    let e = cr.accept(Some(&server.ep), b"").unwrap_err();
    assert_eq!(
        e.code(),
        DatError::invalid_state(subtype::INVALID_STATE_EP_CONNECTED).code(),
        "{e}"
    );
    // The first connection still carries data.
    server.ep.post_recv(&[server.buf.triplet(0, 8).unwrap()], 1, 0).unwrap();
    client.ep.post_send(&[client.buf.triplet(0, 8).unwrap()], 2, 0).unwrap();
    assert_eq!(dto(&server.recv_evd).status, 0);
    cr.reject().unwrap();
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}
