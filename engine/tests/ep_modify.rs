//! `dat_ep_query`, `dat_ep_modify`, `dat_ep_get_status`, `dat_ep_recv_query` and
//! `dat_ep_set_watermark` over softhca: every field of `DAT_EP_PARAM` before and after a
//! connection, the mask and state rules of `dat_ep_modify` with their exact codes, limits
//! that apply to later posts, and a new PZ or DTO EVD (a new QP) carrying a connection; and
//! `dat_ep_create`'s attributes, kept and checked as `dat_ep_modify` keeps and checks them.

mod support;

use support::{Side, WAIT_US, side};

use ferrodat_abi::dat::{
    completion_flags, ep_field, evd_flags, event, psp_flags, qos, ret, service_type, subtype,
};
use ferrodat_engine::ep::{Ep, EpAttr, EpParamUpdate};
use ferrodat_engine::ep_state::{DisconnectMode, EpState};
use ferrodat_engine::error::DatError;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::pz::Pz;
use ferrodat_engine::sp::{Psp, Rsp};

fn established(evd: &Evd) {
    match evd.wait(WAIT_US, 1).unwrap().0 {
        Event::Connection { number, .. } => {
            assert_eq!(number, event::CONNECTION_EVENT_ESTABLISHED)
        }
        other => panic!("expected ESTABLISHED, got {other:?}"),
    }
}

/// Connects `client.ep` (events on `conn_evd`) to a PSP of `server` with a provider-picked
/// conn_qual, accepted on `server.ep`. Returns the PSP (listening while it lives).
fn connect(server: &Side, client_ep: &Ep, conn_evd: &Evd) -> Psp {
    let psp = Psp::create_any(&server.ia, &server.cr_evd, psp_flags::CONSUMER).unwrap();
    client_ep.connect(server.ia.attr().address, psp.conn_qual(), None, b"hi").unwrap();
    let Event::ConnectionRequest { cr, .. } = server.cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a connection request")
    };
    cr.accept(Some(&server.ep), b"").unwrap();
    established(conn_evd);
    established(&server.conn_evd);
    psp
}

fn dto(ev: Event) -> ferrodat_engine::dto::DtoCompletion {
    match ev {
        Event::Dto { completion, .. } => completion,
        other => panic!("expected a DTO completion, got {other:?}"),
    }
}

fn assert_code(e: &DatError, want: DatError) {
    assert_eq!(e.code(), want.code(), "got {e}");
    assert!(e.detail().is_some_and(|d| d.len() > 20), "no useful message: {e}");
}

/// A port nothing listens on now (the kernel's pick), for an RSP's conn_qual.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A change to the parameters `dat_ep_modify` is given.
type Change = Box<dyn Fn(&mut EpParamUpdate)>;

fn update(ep: &Ep) -> EpParamUpdate {
    EpParamUpdate::from_current(ep)
}

#[test]
fn query_reports_every_field_of_a_fresh_endpoint() {
    let s = side();
    let p = s.ep.query();
    assert!(p.ia.same(&s.ia));
    assert_eq!(p.ep_state, EpState::Unconnected);
    assert_eq!(
        (p.comm.domain, p.comm.socket_type, p.comm.protocol),
        (libc::AF_INET, libc::SOCK_STREAM, libc::IPPROTO_TCP)
    );
    assert_eq!(p.local_ia_address, s.ia.attr().address);
    assert_eq!((p.local_port_qual, p.remote_ia_address, p.remote_port_qual), (0, None, 0));
    assert!(p.pz.unwrap().same(&s.pz));
    assert!(p.recv_evd.unwrap().same(&s.recv_evd));
    assert!(p.request_evd.unwrap().same(&s.req_evd));
    assert!(p.connect_evd.unwrap().same(&s.conn_evd));
    assert!(p.srq.is_none());
    let a = p.ep_attr;
    assert_eq!(a, EpAttr::defaults(&s.ia));
    assert_eq!((a.service_type, a.qos), (service_type::RC, qos::BEST_EFFORT));
    assert_eq!(
        (a.max_recv_dtos, a.max_request_dtos, a.max_recv_iov, a.max_request_iov),
        (16, 16, 4, 4)
    );
    assert_eq!(a.srq_soft_hw, u32::MAX);
}

#[test]
fn query_after_connecting_names_both_ends() {
    let server = side();
    let client = side();
    let psp = connect(&server, &client.ep, &client.conn_evd);
    let c = client.ep.query();
    let s = server.ep.query();
    assert_eq!((c.ep_state, s.ep_state), (EpState::Connected, EpState::Connected));
    // The active side connected to the PSP's conn_qual from a port of its own; the passive
    // side was reached on the conn_qual and sees the requester's port.
    assert_eq!(c.remote_ia_address, Some(server.ia.attr().address));
    assert_eq!(c.remote_port_qual, psp.conn_qual() as u64);
    assert_ne!(c.local_port_qual, 0);
    assert_eq!(s.local_port_qual, psp.conn_qual() as u64);
    assert_eq!(s.remote_ia_address, Some(client.ia.attr().address));
    assert_eq!(s.remote_port_qual, c.local_port_qual);
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

#[test]
fn get_status_says_whether_dtos_are_outstanding_each_way() {
    let server = side();
    let client = side();
    let st = client.ep.get_status();
    assert_eq!((st.state, st.recv_idle, st.request_idle), (EpState::Unconnected, true, true));
    server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], 1, 0).unwrap();
    assert!(!server.ep.get_status().recv_idle, "a receive is posted");
    let _psp = connect(&server, &client.ep, &client.conn_evd);
    client.ep.post_send(&[client.buf.triplet(0, 8).unwrap()], 2, 0).unwrap();
    assert!(!client.ep.get_status().request_idle, "the send is not reaped yet");
    assert_eq!(dto(client.req_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 2);
    assert_eq!(dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, 1);
    let (c, s) = (client.ep.get_status(), server.ep.get_status());
    assert_eq!((c.state, c.recv_idle, c.request_idle), (EpState::Connected, true, true));
    assert_eq!((s.recv_idle, s.request_idle), (true, true));
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

#[test]
fn modify_refuses_read_only_and_unknown_fields_with_arg2() {
    let s = side();
    let u = update(&s.ep);
    for mask in [
        ep_field::IA_HANDLE,
        ep_field::EP_STATE,
        ep_field::COMM,
        ep_field::LOCAL_IA_ADDRESS_PTR,
        ep_field::LOCAL_PORT_QUAL,
        ep_field::REMOTE_IA_ADDRESS_PTR,
        ep_field::REMOTE_PORT_QUAL,
        ep_field::SRQ_HANDLE,
        ep_field::ALL,
        1 << 40,
    ] {
        let e = s.ep.modify(mask, &u).unwrap_err();
        assert_code(&e, DatError::invalid_parameter(2));
    }
}

#[test]
fn modify_follows_the_legal_calls_table_with_the_state_as_subtype() {
    let server = side();
    let client = side();
    let u = update(&client.ep);
    // UNCONNECTED: every class.
    for mask in [ep_field::PZ_HANDLE, ep_field::EP_ATTR_ALL, ep_field::CONNECT_EVD_HANDLE] {
        client.ep.modify(mask, &u).unwrap();
    }
    // RESERVED: EVDs and attributes yes, PZ and transport/provider attributes no.
    let other = side();
    let rsp = Rsp::create(&other.ia, free_port(), &other.ep, &other.cr_evd).unwrap();
    let ou = update(&other.ep);
    other.ep.modify(ep_field::EP_ATTR_MAX_RECV_DTOS | ep_field::RECV_EVD_HANDLE, &ou).unwrap();
    for mask in [ep_field::PZ_HANDLE, ep_field::EP_ATTR_PROVIDER_SPECIFIC_ATTR] {
        let e = other.ep.modify(mask, &ou).unwrap_err();
        assert_code(&e, DatError::invalid_state(subtype::INVALID_STATE_EP_RESERVED));
    }
    rsp.free().unwrap();
    // CONNECTED: nothing.
    let _psp = connect(&server, &client.ep, &client.conn_evd);
    for mask in [
        ep_field::PZ_HANDLE,
        ep_field::RECV_EVD_HANDLE,
        ep_field::EP_ATTR_MAX_REQUEST_IOV,
        ep_field::EP_ATTR_NUM_TRANSPORT_ATTR,
    ] {
        let e = client.ep.modify(mask, &u).unwrap_err();
        assert_code(&e, DatError::invalid_state(subtype::INVALID_STATE_EP_CONNECTED));
    }
    // DISCONNECTED: nothing either (reset first).
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    let e = client.ep.modify(ep_field::EP_ATTR_QOS, &u).unwrap_err();
    assert_code(&e, DatError::invalid_state(subtype::INVALID_STATE_EP_DISCONNECTED));
}

#[test]
fn bad_values_are_arg3_and_change_nothing() {
    let s = side();
    let before = s.ep.attr();
    let ia_max_dtos = s.ia.attr().max_dto_per_ep;
    let no_dto = Evd::create(&s.ia, 4, evd_flags::CONNECTION).unwrap();
    let other_ia = support::ia();
    let cases: Vec<(u64, Change, &str)> = vec![
        (
            ep_field::EP_ATTR_SERVICE_TYPE,
            Box::new(|u| u.ep_attr.service_type = 1),
            "DAT_SERVICE_TYPE_RC",
        ),
        (ep_field::EP_ATTR_QOS, Box::new(|u| u.ep_attr.qos = qos::PREMIUM), "BEST_EFFORT"),
        (
            ep_field::EP_ATTR_RECV_COMPLETION_FLAGS,
            Box::new(|u| u.ep_attr.recv_completion_flags = completion_flags::SUPPRESS),
            "cannot suppress",
        ),
        (
            ep_field::EP_ATTR_REQUEST_COMPLETION_FLAGS,
            Box::new(|u| u.ep_attr.request_completion_flags = completion_flags::BARRIER_FENCE),
            "given per post",
        ),
        (
            ep_field::EP_ATTR_MAX_RECV_DTOS,
            Box::new(move |u| u.ep_attr.max_recv_dtos = ia_max_dtos + 1),
            "exceeds the IA's",
        ),
        (
            ep_field::EP_ATTR_MAX_REQUEST_DTOS,
            Box::new(move |u| u.ep_attr.max_request_dtos = ia_max_dtos),
            "cannot grow",
        ),
        (ep_field::EP_ATTR_SRQ_SOFT_HW, Box::new(|u| u.ep_attr.srq_soft_hw = 3), "watermarks"),
        (
            ep_field::EP_ATTR_PROVIDER_SPECIFIC_ATTR,
            Box::new(|u| u.ep_attr.ep_provider_specific = vec![("X".into(), "1".into())]),
            "defines none",
        ),
        (ep_field::PZ_HANDLE, Box::new(|u| u.pz = None), "need a PZ"),
        (
            ep_field::REQUEST_EVD_HANDLE,
            Box::new(move |u| u.request_evd = Some(no_dto.clone())),
            "DAT_EVD_DTO_FLAG",
        ),
        (
            ep_field::CONNECT_EVD_HANDLE,
            Box::new({
                let dto = s.req_evd.clone();
                move |u| u.connect_evd = Some(dto.clone())
            }),
            "DAT_EVD_CONNECTION_FLAG",
        ),
        (
            ep_field::PZ_HANDLE,
            Box::new(move |u| u.pz = Some(Pz::create(&other_ia).unwrap())),
            "another IA",
        ),
    ];
    for (mask, change, says) in cases {
        let mut u = update(&s.ep);
        change(&mut u);
        // With a good field next to the bad one: all or nothing.
        u.ep_attr.max_request_iov = 2;
        let e = s.ep.modify(mask | ep_field::EP_ATTR_MAX_REQUEST_IOV, &u).unwrap_err();
        assert_code(&e, DatError::invalid_parameter(3));
        assert!(e.to_string().contains(says), "{mask:#x}: {e}");
        assert_eq!(s.ep.attr(), before, "{mask:#x} changed something");
        assert!(s.ep.query().pz.unwrap().same(&s.pz));
    }
}

#[test]
fn limits_change_within_the_qp_and_apply_to_later_posts() {
    let s = side();
    let mut u = update(&s.ep);
    u.ep_attr.max_recv_iov = 1;
    u.ep_attr.recv_completion_flags = completion_flags::SOLICITED_WAIT;
    u.ep_attr.max_rdma_read_in = 1;
    let mask = ep_field::EP_ATTR_MAX_RECV_IOV
        | ep_field::EP_ATTR_RECV_COMPLETION_FLAGS
        | ep_field::EP_ATTR_MAX_RDMA_READ_IN;
    s.ep.modify(mask, &u).unwrap();
    let a = s.ep.query().ep_attr;
    assert_eq!(
        (a.max_recv_iov, a.recv_completion_flags, a.max_rdma_read_in, a.max_request_iov),
        (1, completion_flags::SOLICITED_WAIT, 1, 4)
    );
    let two = [s.buf.triplet(0, 8).unwrap(), s.buf.triplet(8, 8).unwrap()];
    let e = s.ep.post_recv(&two, 1, 0).unwrap_err();
    assert_code(&e, DatError::invalid_parameter(2));
    assert!(e.to_string().contains("at most 1"), "{e}");
    // Back up to what the QP was made with: two segments go again.
    u.ep_attr.max_recv_iov = 4;
    s.ep.modify(ep_field::EP_ATTR_MAX_RECV_IOV, &u).unwrap();
    s.ep.post_recv(&two, 1, 0).unwrap();
}

#[test]
fn new_dto_evds_get_a_new_qp_and_the_connections_completions() {
    let server = side();
    let client = side();
    let new_recv = Evd::create(&client.ia, 16, evd_flags::DTO).unwrap();
    let new_req = Evd::create(&client.ia, 16, evd_flags::DTO).unwrap();
    let mut u = update(&client.ep);
    u.recv_evd = Some(new_recv.clone());
    u.request_evd = Some(new_req.clone());
    client.ep.modify(ep_field::RECV_EVD_HANDLE | ep_field::REQUEST_EVD_HANDLE, &u).unwrap();
    let p = client.ep.query();
    assert!(p.recv_evd.unwrap().same(&new_recv) && p.request_evd.unwrap().same(&new_req));
    client.ep.post_recv(&[client.buf.triplet(0, 64).unwrap()], 11, 0).unwrap();
    server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], 21, 0).unwrap();
    let _psp = connect(&server, &client.ep, &client.conn_evd);
    client.buf.write(100, b"via the new QP").unwrap();
    client.ep.post_send(&[client.buf.triplet(100, 14).unwrap()], 12, 0).unwrap();
    assert_eq!(dto(new_req.wait(WAIT_US, 1).unwrap().0).user_cookie, 12);
    let r = dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0);
    assert_eq!((r.user_cookie, r.status, r.transfered_length), (21, 0, 14));
    server.buf.write(200, b"back").unwrap();
    server.ep.post_send(&[server.buf.triplet(200, 4).unwrap()], 22, 0).unwrap();
    assert_eq!(dto(new_recv.wait(WAIT_US, 1).unwrap().0).user_cookie, 11);
    let mut got = [0u8; 4];
    client.buf.read(0, &mut got).unwrap();
    assert_eq!(&got, b"back");
    // Nothing reached the EVDs the endpoint left.
    for old in [&client.req_evd, &client.recv_evd] {
        assert_eq!(old.dequeue().unwrap_err().return_type(), ret::QUEUE_EMPTY);
    }
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    // The endpoint let go of its old EVDs: they can be freed; the new ones cannot.
    let Side { req_evd, recv_evd, ep, .. } = client;
    req_evd.free().expect("the endpoint no longer uses its old request EVD");
    recv_evd.free().expect("the endpoint no longer uses its old receive EVD");
    let (_new_req, e) = new_req.free().unwrap_err();
    assert_eq!(e.subtype(), subtype::INVALID_STATE_EVD_IN_USE, "{e}");
    drop(ep);
}

#[test]
fn a_new_pz_moves_the_qp_and_frees_the_old_pz() {
    let server = side();
    let client = side();
    let old_pz = Pz::create(&client.ia).unwrap();
    let ep = Ep::create(&old_pz, &client.recv_evd, &client.req_evd, Some(&client.conn_evd), None)
        .unwrap();
    let mut u = update(&ep);
    u.pz = Some(client.pz.clone());
    ep.modify(ep_field::PZ_HANDLE, &u).unwrap();
    assert!(ep.pz().same(&client.pz));
    old_pz.free().expect("nothing uses the old PZ any more");
    let _psp = connect(&server, &ep, &client.conn_evd);
    server.ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], 1, 0).unwrap();
    // client.buf is in the new PZ: the send reads it.
    client.buf.write(0, b"pz").unwrap();
    ep.post_send(&[client.buf.triplet(0, 2).unwrap()], 2, 0).unwrap();
    assert_eq!(dto(client.req_evd.wait(WAIT_US, 1).unwrap().0).status, 0);
    assert_eq!(dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0).transfered_length, 2);
    ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

#[test]
fn a_new_qp_is_refused_while_receives_are_posted() {
    let s = side();
    s.ep.post_recv(&[s.buf.triplet(0, 64).unwrap()], 1, 0).unwrap();
    let spare = Evd::create(&s.ia, 16, evd_flags::DTO).unwrap();
    let mut u = update(&s.ep);
    u.recv_evd = Some(spare);
    let e = s.ep.modify(ep_field::RECV_EVD_HANDLE, &u).unwrap_err();
    assert_code(&e, DatError::invalid_state(subtype::INVALID_STATE_EP_UNCONNECTED));
    assert!(e.to_string().contains("1 DTO(s) are posted"), "{e}");
    assert!(s.ep.recv_evd().unwrap().same(&s.recv_evd));
    // The same EVD again needs no new QP.
    let u = update(&s.ep);
    s.ep.modify(ep_field::RECV_EVD_HANDLE | ep_field::PZ_HANDLE, &u).unwrap();
}

#[test]
fn a_new_connection_evd_gets_the_connection_events() {
    let server = side();
    let client = side();
    let conn2 = Evd::create(&client.ia, 4, evd_flags::CONNECTION).unwrap();
    let mut u = update(&client.ep);
    u.connect_evd = Some(conn2.clone());
    client.ep.modify(ep_field::CONNECT_EVD_HANDLE, &u).unwrap();
    let _psp = connect(&server, &client.ep, &conn2);
    assert_eq!(client.conn_evd.dequeue().unwrap_err().return_type(), ret::QUEUE_EMPTY);
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    // NULL: an endpoint without a connection EVD cannot connect (EP_NOTREADY).
    let spare = side();
    let mut u = update(&spare.ep);
    u.connect_evd = None;
    spare.ep.modify(ep_field::CONNECT_EVD_HANDLE, &u).unwrap();
    let e = spare.ep.connect(server.ia.attr().address, 1, None, b"").unwrap_err();
    assert_code(&e, DatError::invalid_state(subtype::INVALID_STATE_EP_NOTREADY));
}

#[test]
fn recv_query_counts_an_endpoints_own_receives_and_watermarks_are_not_offered() {
    let s = side();
    let none = s.ep.recv_query().unwrap();
    assert_eq!((none.nbufs_allocated, none.bufs_alloc_span), (Some(0), Some(0)));
    for i in 0..3 {
        s.ep.post_recv(&[s.buf.triplet(i * 64, 64).unwrap()], i, 0).unwrap();
    }
    let three = s.ep.recv_query().unwrap();
    assert_eq!((three.nbufs_allocated, three.bufs_alloc_span), (Some(3), Some(3)));
    // An SRQ endpoint's buffers are not known before they complete.
    let srq = ferrodat_engine::srq::Srq::create(&s.pz, 8, 1).unwrap();
    let on_srq =
        Ep::create_with_srq(&s.pz, &s.recv_evd, &s.req_evd, Some(&s.conn_evd), &srq, None).unwrap();
    let e = on_srq.recv_query().unwrap_err();
    assert_code(&e, DatError::new(ret::MODEL_NOT_SUPPORTED, subtype::NO_SUBTYPE));
    // Watermarks: arguments checked, then not offered (the man page's answer).
    let e = s.ep.set_watermark(u32::MAX, u32::MAX).unwrap_err();
    assert_code(&e, DatError::new(ret::MODEL_NOT_SUPPORTED, subtype::NO_SUBTYPE));
    let e = s.ep.set_watermark(17, u32::MAX).unwrap_err();
    assert_code(&e, DatError::invalid_parameter(2));
    let e = s.ep.set_watermark(1, 17).unwrap_err();
    assert_code(&e, DatError::invalid_parameter(3));
    assert_eq!(s.ia.provider_attr().srq_watermarks_supported, 0);
}

#[test]
fn an_srq_endpoint_keeps_its_srq_and_the_srqs_pz() {
    use ferrodat_engine::srq::Srq;
    let s = side();
    let srq = Srq::create(&s.pz, 16, 1).unwrap();
    let ep =
        Ep::create_with_srq(&s.pz, &s.recv_evd, &s.req_evd, Some(&s.conn_evd), &srq, None).unwrap();
    assert!(ep.query().srq.is_some());
    assert!(ep.get_status().recv_idle, "an SRQ endpoint's receives are the SRQ's");
    // Its receive queue is the SRQ: max_recv_dtos is not bounded by a receive queue of its
    // own (only by the IA).
    let mut u = update(&ep);
    u.ep_attr.max_recv_dtos = 200;
    ep.modify(ep_field::EP_ATTR_MAX_RECV_DTOS, &u).unwrap();
    assert_eq!(ep.attr().max_recv_dtos, 200);
    // Another PZ would separate it from its SRQ's.
    let mut u = update(&ep);
    u.pz = Some(Pz::create(&s.ia).unwrap());
    let e = ep.modify(ep_field::PZ_HANDLE, &u).unwrap_err();
    assert_code(&e, DatError::invalid_parameter(3));
    assert!(e.to_string().contains("SRQ is in another PZ"), "{e}");
}

#[test]
fn recv_completion_flags_change_only_before_receives_are_posted() {
    let s = side();
    let mut u = update(&s.ep);
    u.ep_attr.recv_completion_flags = completion_flags::EVD_THRESHOLD;
    s.ep.modify(ep_field::EP_ATTR_RECV_COMPLETION_FLAGS, &u).unwrap();
    s.ep.post_recv(&[s.buf.triplet(0, 64).unwrap()], 1, 0).unwrap();
    u.ep_attr.recv_completion_flags = completion_flags::SOLICITED_WAIT;
    let e = s.ep.modify(ep_field::EP_ATTR_RECV_COMPLETION_FLAGS, &u).unwrap_err();
    assert_code(&e, DatError::invalid_state(subtype::INVALID_STATE_EP_UNCONNECTED));
    assert!(e.to_string().contains("before receives are posted"), "{e}");
    assert_eq!(s.ep.attr().recv_completion_flags, completion_flags::EVD_THRESHOLD);
    // The same value again changes nothing and is allowed.
    u.ep_attr.recv_completion_flags = completion_flags::EVD_THRESHOLD;
    s.ep.modify(ep_field::EP_ATTR_RECV_COMPLETION_FLAGS, &u).unwrap();
    // Request flags: the per-post ones are not endpoint attributes.
    u.ep_attr.request_completion_flags = completion_flags::UNSIGNALLED;
    s.ep.modify(ep_field::EP_ATTR_REQUEST_COMPLETION_FLAGS, &u).unwrap();
    assert_eq!(s.ep.query().ep_attr.request_completion_flags, completion_flags::UNSIGNALLED);
}

/// Every attribute away from its default and within what the IA offers (the service type,
/// QoS, SRQ watermark and named attributes have one value each here, the default): sizes,
/// completion flags, DTO and IOV counts, RDMA READ depths and IOVs, with an RDMA WRITE IOV
/// above both the request IOV and the 4 segments a default endpoint's QP gathers.
fn every_attribute_set() -> EpAttr {
    EpAttr {
        service_type: service_type::RC,
        max_message_size: 4096,
        max_rdma_size: 1 << 20,
        qos: qos::BEST_EFFORT,
        recv_completion_flags: completion_flags::SOLICITED_WAIT,
        request_completion_flags: completion_flags::UNSIGNALLED,
        max_recv_dtos: 8,
        max_request_dtos: 12,
        max_recv_iov: 2,
        max_request_iov: 1,
        max_rdma_read_in: 2,
        max_rdma_read_out: 3,
        srq_soft_hw: u32::MAX,
        max_rdma_read_iov: 2,
        max_rdma_write_iov: 8,
        ep_transport_specific: Vec::new(),
        ep_provider_specific: Vec::new(),
    }
}

#[test]
fn create_keeps_every_attribute_and_builds_its_qp_for_them() {
    use ferrodat_engine::srq::Srq;
    let s = side();
    let attr = every_attribute_set();
    let ep =
        Ep::create(&s.pz, &s.recv_evd, &s.req_evd, Some(&s.conn_evd), Some(attr.clone())).unwrap();
    assert_eq!(ep.query().ep_attr, attr);
    // The QP was built for every one of them: asking for all of them again is no growth
    // (the RDMA WRITE IOV needs more gather segments than the request IOV).
    ep.modify(ep_field::EP_ATTR_ALL, &update(&ep)).unwrap();
    assert_eq!(ep.attr(), attr);
    // The receive IOV limit applies to posts.
    let three =
        [s.buf.triplet(0, 8).unwrap(), s.buf.triplet(8, 8).unwrap(), s.buf.triplet(16, 8).unwrap()];
    let e = ep.post_recv(&three, 1, 0).unwrap_err();
    assert_code(&e, DatError::invalid_parameter(2));
    ep.post_recv(&three[..2], 1, 0).unwrap();
    // An SRQ endpoint keeps them too.
    let srq = Srq::create(&s.pz, 16, 1).unwrap();
    let on_srq = Ep::create_with_srq(
        &s.pz,
        &s.recv_evd,
        &s.req_evd,
        Some(&s.conn_evd),
        &srq,
        Some(attr.clone()),
    )
    .unwrap();
    assert_eq!(on_srq.query().ep_attr, attr);
    on_srq.modify(ep_field::EP_ATTR_ALL, &update(&on_srq)).unwrap();
}

#[test]
fn create_refuses_each_bad_attribute_as_modify_does_naming_the_attribute_argument() {
    use ferrodat_engine::srq::Srq;
    let s = side();
    let ia = s.ia.attr().clone();
    assert!(ia.max_message_size < u32::MAX && ia.max_rdma_size < u32::MAX, "{ia:?}");
    type Bad = Box<dyn Fn(&mut EpAttr)>;
    let cases: Vec<(Bad, &str)> = vec![
        (Box::new(|a| a.service_type = 1), "DAT_SERVICE_TYPE_RC"),
        (Box::new(|a| a.qos = qos::HIGH_THROUGHPUT), "BEST_EFFORT"),
        (Box::new(|a| a.recv_completion_flags = completion_flags::SUPPRESS), "cannot suppress"),
        (
            Box::new(|a| a.recv_completion_flags = completion_flags::BARRIER_FENCE),
            "cannot suppress",
        ),
        (
            Box::new(|a| a.request_completion_flags = completion_flags::BARRIER_FENCE),
            "given per post",
        ),
        (
            Box::new(|a| a.request_completion_flags = completion_flags::SOLICITED_WAIT),
            "given per post",
        ),
        (Box::new(|a| a.max_message_size = u32::MAX), "max_message_size"),
        (Box::new(move |a| a.max_rdma_size = ia.max_rdma_size + 1), "max_rdma_size"),
        (Box::new(move |a| a.max_recv_dtos = ia.max_dto_per_ep + 1), "max_recv_dtos"),
        (Box::new(move |a| a.max_request_dtos = ia.max_dto_per_ep + 1), "max_request_dtos"),
        (Box::new(move |a| a.max_recv_iov = ia.max_iov_segments_per_dto + 1), "max_recv_iov"),
        (Box::new(move |a| a.max_request_iov = ia.max_iov_segments_per_dto + 1), "max_request_iov"),
        (
            Box::new(move |a| a.max_rdma_read_in = ia.max_rdma_read_per_ep_in + 1),
            "max_rdma_read_in",
        ),
        (
            Box::new(move |a| a.max_rdma_read_out = ia.max_rdma_read_per_ep_out + 1),
            "max_rdma_read_out",
        ),
        (
            Box::new(move |a| a.max_rdma_read_iov = ia.max_iov_segments_per_rdma_read + 1),
            "max_rdma_read_iov",
        ),
        (
            Box::new(move |a| a.max_rdma_write_iov = ia.max_iov_segments_per_rdma_write + 1),
            "max_rdma_write_iov",
        ),
        (Box::new(|a| a.srq_soft_hw = 3), "watermarks"),
        (Box::new(|a| a.ep_transport_specific = vec![("X".into(), "1".into())]), "defines none"),
        (Box::new(|a| a.ep_provider_specific = vec![("Y".into(), "2".into())]), "defines none"),
    ];
    // A PZ of their own: nothing may be left holding it.
    let pz = Pz::create(&s.ia).unwrap();
    let srq = Srq::create(&pz, 16, 1).unwrap();
    for (change, says) in cases {
        let mut attr = every_attribute_set();
        change(&mut attr);
        let Err(e) =
            Ep::create(&pz, &s.recv_evd, &s.req_evd, Some(&s.conn_evd), Some(attr.clone()))
        else {
            panic!("dat_ep_create took a bad attribute ({says})");
        };
        assert_code(&e, DatError::invalid_parameter(6));
        let text = e.to_string();
        assert!(text.contains("dat_ep_create: ep_attr.") && text.contains(says), "{text}");
        let Err(e) =
            Ep::create_with_srq(&pz, &s.recv_evd, &s.req_evd, Some(&s.conn_evd), &srq, Some(attr))
        else {
            panic!("dat_ep_create_with_srq took a bad attribute ({says})");
        };
        assert_code(&e, DatError::invalid_parameter(7));
        let text = e.to_string();
        assert!(text.contains("dat_ep_create_with_srq: ep_attr.") && text.contains(says), "{text}");
    }
    srq.free().unwrap();
    pz.free().expect("no refused endpoint holds the PZ");
}
