//! Return codes and state changes the DAT 1.2 man pages give, checked call by call through
//! the public API over softhca: `dat_evd_wait` (threshold, timeout, nmore, waiters),
//! `dat_evd_resize`/`free`/`post_se`, the endpoint calls in each state (disconnect, reset,
//! free, posts) and the frees of memory objects in use. Each test quotes the man page line
//! it checks.

mod support;

use support::{code, software};

use support::{WAIT_US, connected, side};

use ferrodat_abi::dat::{
    completion_flags, dto_status, ep_field, evd_flags, event, mem_priv, ret, subtype,
};
use ferrodat_engine::cno::Cno;
use ferrodat_engine::ep::{Ep, EpAttr, EpParamUpdate};
use ferrodat_engine::ep_state::{DisconnectMode, EpState};
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::lmr::{Lmr, MemPriv};
use ferrodat_engine::pz::Pz;
use ferrodat_engine::rmr::Rmr;
use ferrodat_engine::sp::Rsp;
use std::time::Duration;

/// "If the value of the threshold is larger than the Event Dispatcher queue length, the
/// operation fails with the return DAT_INVALID_PARAMETER" — and with events already queued
/// a wait of timeout 0 returns at once when they meet the threshold, with "nmore ... at
/// least the value of (threshold -1)"; on DAT_TIMEOUT_EXPIRED "no event is dequeued ...
/// However, an nmore value is returned".
#[test]
fn a_wait_on_events_already_queued_meets_its_threshold_at_once() {
    let ia = support::ia();
    let evd = Evd::create(&ia, 4, evd_flags::SOFTWARE).unwrap();
    for p in [1, 2, 3] {
        evd.post_se(p).unwrap();
    }
    let (ev, nmore) = evd.wait(0, 3).expect("three queued events meet threshold 3 at once");
    assert_eq!((software(ev), nmore), (1, 2), "the oldest, two left");
    let (e, nmore) = evd.wait_counting(0, 3).map(drop).unwrap_err();
    assert_eq!(e.return_type(), ret::TIMEOUT_EXPIRED, "{e}");
    assert_eq!(nmore, Some(2), "a timed-out wait reports the events queued, none taken");
    let (ev, nmore) = evd.wait(ferrodat_engine::evd::DAT_TIMEOUT_INFINITE, 2).unwrap();
    assert_eq!((software(ev), nmore), (2, 1), "an infinite wait whose threshold is met");
    let e = evd.wait(0, 5).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_PARAMETER, subtype::INVALID_ARG3), "5 > qlen 4: {e}");
}

/// dat_evd_disable: it "disables the Event Dispatcher so that the arrival of an event does
/// not affect the associated CNO" — a waiter of the EVD itself is not aborted; and
/// dat_evd_wait on an EVD with a CNO is allowed: "The CNO associated with the evd_handle()
/// is not triggered upon event arrival if there is a Consumer blocked on dat_evd_wait()".
#[test]
fn disable_and_a_cno_leave_a_direct_waiter_waiting() {
    let ia = support::ia();
    let cno = Cno::create(&ia).unwrap();
    let evd = Evd::create_with_cno(&ia, 4, Some(&cno), evd_flags::SOFTWARE).unwrap();
    let waiter = std::thread::spawn({
        let evd = evd.clone();
        move || evd.wait(WAIT_US, 1)
    });
    std::thread::sleep(Duration::from_millis(50));
    evd.disable();
    std::thread::sleep(Duration::from_millis(50));
    assert!(!waiter.is_finished(), "dat_evd_disable does not end a dat_evd_wait");
    evd.post_se(7).unwrap();
    let (ev, nmore) = waiter.join().unwrap().expect("the waiter takes the event");
    assert_eq!((software(ev), nmore), (7, 0));
}

/// dat_evd_resize: "If the number of entries on the event queue is larger then the
/// requested evd_min_qlen, the operation can return DAT_INVALID_STATE and not change an
/// instance of Event Dispatcher"; exactly as many fits.
#[test]
fn a_resize_below_the_queued_events_is_invalid_state_and_changes_nothing() {
    let ia = support::ia();
    let evd = Evd::create(&ia, 4, evd_flags::SOFTWARE).unwrap();
    for p in [1, 2, 3] {
        evd.post_se(p).unwrap();
    }
    let e = evd.resize(2).unwrap_err();
    assert_eq!(e.return_type(), ret::INVALID_STATE, "{e}");
    assert_eq!(evd.qlen(), 4, "the refused resize changed nothing");
    evd.resize(3).expect("three queued events fit a queue of three");
    let got: Vec<u64> = (0..3).map(|_| software(evd.dequeue().unwrap())).collect();
    assert_eq!(got, [1, 2, 3]);
}

/// dat_evd_free: "All events on the queue of the specified Event Dispatcher are lost" (a
/// free with events queued succeeds); DAT_INVALID_STATE: "There are Event Streams
/// associated with the Event Dispatcher feeding it" (an endpoint); dat_ep_free: "The
/// freeing of an Endpoint also destroys an Event Stream for each of the associated Event
/// Dispatchers".
#[test]
fn an_evd_with_events_queued_is_freed_one_an_endpoint_feeds_is_not() {
    let ia = support::ia();
    let evd = Evd::create(&ia, 4, evd_flags::SOFTWARE).unwrap();
    evd.post_se(1).unwrap();
    evd.free().map_err(|(_, e)| e).expect("queued events do not keep an EVD");

    let pz = Pz::create(&ia).unwrap();
    let dto = Evd::create(&ia, 8, evd_flags::DTO).unwrap();
    let ep = Ep::create(&pz, &dto, &dto, None, None).unwrap();
    let (dto, e) = dto.free().unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EVD_IN_USE), "{e}");
    ep.free().unwrap();
    dto.free().map_err(|(_, e)| e).expect("the endpoint's streams went with it");
}

/// dat_evd_wait: "If EVD is used by an Endpoint for a DTO completion stream that is
/// configured for a Consumer-controlled event Notification (... DAT_COMPLETION_UNSIGNALLED_FLAG
/// for Request Completion Type for Send, RDMA Read, RDMA Write and RMR Bind), the threshold
/// value must be 1. An attempt to specify some other value for threshold for this case
/// results in DAT_INVALID_STATE."
#[test]
fn an_evd_fed_by_unsignalled_requests_takes_threshold_one_only() {
    let ia = support::ia();
    let pz = Pz::create(&ia).unwrap();
    let recv = Evd::create(&ia, 8, evd_flags::DTO).unwrap();
    let req = Evd::create(&ia, 8, evd_flags::DTO | evd_flags::SOFTWARE).unwrap();
    let attr =
        EpAttr { request_completion_flags: completion_flags::UNSIGNALLED, ..EpAttr::defaults(&ia) };
    let ep = Ep::create(&pz, &recv, &req, None, Some(attr)).unwrap();
    req.post_se(1).unwrap();
    req.post_se(2).unwrap();
    let e = req.wait(0, 2).unwrap_err();
    assert_eq!(
        code(&e),
        (ret::INVALID_STATE, subtype::INVALID_STATE_EVD_CONFIG_NOTIFY),
        "threshold 2 on an EVD fed by unsignalled requests: {e}"
    );
    assert!(e.to_string().contains("UNSIGNALLED"), "the error names the cause: {e}");
    let (ev, nmore) = req.wait(0, 1).expect("threshold 1 is fine");
    assert_eq!((software(ev), nmore), (1, 1));
    // The receive EVD of that endpoint is not concerned.
    let e = recv.wait(0, 2).unwrap_err();
    assert_eq!(e.return_type(), ret::TIMEOUT_EXPIRED, "{e}");
    // dat_ep_modify clears the flag: threshold 2 is fine; setting it again refuses it.
    let mut update = EpParamUpdate::from_current(&ep);
    update.ep_attr.request_completion_flags = completion_flags::DEFAULT;
    ep.modify(ep_field::EP_ATTR_REQUEST_COMPLETION_FLAGS, &update).unwrap();
    req.post_se(3).unwrap();
    let (ev, nmore) = req.wait(0, 2).expect("the endpoint's requests are signalled now");
    assert_eq!((software(ev), nmore), (2, 1));
    update.ep_attr.request_completion_flags = completion_flags::UNSIGNALLED;
    ep.modify(ep_field::EP_ATTR_REQUEST_COMPLETION_FLAGS, &update).unwrap();
    let e = req.wait(0, 2).unwrap_err();
    assert_eq!(e.return_type(), ret::INVALID_STATE, "UNSIGNALLED again: {e}");
    // Once the endpoint is gone, so is the restriction.
    ep.free().unwrap();
    req.post_se(4).unwrap();
    let (ev, nmore) = req.wait(0, 2).expect("no unsignalled stream feeds the EVD any more");
    assert_eq!((software(ev), nmore), (3, 1));
}

/// dat_ep_post_recv: DAT_COMPLETION_UNSIGNALLED_FLAG "is only valid if the Endpoint Recv
/// Completion Flags DAT_COMPLETION_UNSIGNALLED_FLAG. Otherwise, DAT_INVALID_PARAMETER is
/// returned." The refused receive is not posted: the endpoint still has its room.
#[test]
fn an_unsignalled_receive_needs_an_endpoint_configured_for_it() {
    let s = side();
    let t = s.buf.triplet(0, 16).unwrap();
    let e = s.ep.post_recv(&[t], 1, completion_flags::UNSIGNALLED).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_PARAMETER, subtype::INVALID_ARG5), "{e}");
    assert!(e.to_string().contains("recv_completion_flags"), "the error says why: {e}");
    assert_eq!(s.ep.recv_query().unwrap().nbufs_allocated, Some(0), "nothing was posted");
    s.ep.post_recv(&[t], 2, completion_flags::DEFAULT).expect("the default flag is fine");

    let attr =
        EpAttr { recv_completion_flags: completion_flags::UNSIGNALLED, ..EpAttr::defaults(&s.ia) };
    let ep = Ep::create(&s.pz, &s.recv_evd, &s.req_evd, None, Some(attr)).unwrap();
    ep.post_recv(&[t], 3, completion_flags::UNSIGNALLED)
        .expect("an endpoint whose receives are UNSIGNALLED takes the flag");
}

/// dat_ep_disconnect: "Disconnecting an Endpoint in DAT_EP_STATE_UNCONNECTED,
/// DAT_EP_STATE_RESERVED, ... is disallowed"; dat_ep_reset: valid "for both Disconnected
/// and Unconnected states"; dat_ep_free: "can be destroyed in any Endpoint state except
/// Reserved, Passive Connection Pending, and Tentative Connection Pending"; posts of sends
/// need CONNECTED, receives are taken in "all states of the Endpoint".
#[test]
fn unconnected_and_reserved_endpoints_refuse_what_the_man_pages_disallow() {
    let s = side();
    let ep = s.another_ep();
    for mode in [DisconnectMode::Abrupt, DisconnectMode::Graceful] {
        let e = ep.disconnect(mode).unwrap_err();
        assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EP_UNCONNECTED), "{e}");
    }
    ep.reset().expect("reset on UNCONNECTED is a no-op");
    let t = s.buf.triplet(0, 16).unwrap();
    let e = ep.post_send(&[t], 1, 0).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EP_UNCONNECTED), "{e}");
    ep.post_recv(&[t], 2, 0).expect("a receive is taken before the connection");

    let rsp = Rsp::create(&s.ia, 31901, &ep, &s.cr_evd).unwrap();
    assert_eq!(ep.state(), EpState::Reserved);
    let reserved = (ret::INVALID_STATE, subtype::INVALID_STATE_EP_RESERVED);
    assert_eq!(code(&ep.disconnect(DisconnectMode::Abrupt).unwrap_err()), reserved);
    assert_eq!(code(&ep.reset().unwrap_err()), reserved);
    assert_eq!(code(&ep.post_send(&[t], 3, 0).unwrap_err()), reserved);
    ep.post_recv(&[t], 4, 0).expect("a receive is taken on a RESERVED endpoint");
    assert_eq!(code(&ep.clone().free().unwrap_err()), reserved);
    assert_eq!(ep.state(), EpState::Reserved, "the refused free left it reserved");
    rsp.free().unwrap();
    assert_eq!(ep.state(), EpState::Unconnected);
    ep.free().expect("free on UNCONNECTED");
    assert!(
        matches!(s.recv_evd.dequeue(), Err(e) if e.return_type() == ret::QUEUE_EMPTY),
        "freeing an UNCONNECTED endpoint reports nothing"
    );
}

/// dat_ep_disconnect on a connected endpoint, abrupt: "all outstanding DTOs and RMR Binds
/// are completed unsuccessfully" (the pre-posted receive flushed to recv_evd), then "a
/// DAT_CONNECTION_EVENT_DISCONNECTED event on connect_evd_handle"; "Disconnecting an
/// unconnected Disconnected Endpoint is no-op"; dat_ep_reset then brings it to UNCONNECTED,
/// and on CONNECTED it is DAT_INVALID_STATE.
#[test]
fn abrupt_disconnect_flushes_reports_once_and_reset_needs_disconnected() {
    let (server, client, _psp) = connected(31902);
    let t = client.buf.triplet(0, 16).unwrap();
    client.ep.post_recv(&[t], 77, 0).unwrap();
    let e = client.ep.reset().unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EP_CONNECTED), "{e}");
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
    assert_eq!(client.ep.state(), EpState::Disconnected);
    match client.recv_evd.wait(WAIT_US, 1).unwrap().0 {
        Event::Dto { completion, .. } => {
            assert_eq!((completion.user_cookie, completion.status), (77, dto_status::ERR_FLUSHED))
        }
        other => panic!("expected the flushed receive, got {other:?}"),
    }
    for s in [&client, &server] {
        match s.conn_evd.wait(WAIT_US, 1).unwrap().0 {
            Event::Connection { number: event::CONNECTION_EVENT_DISCONNECTED, .. } => {}
            other => panic!("expected DISCONNECTED, got {other:?}"),
        }
    }
    client.ep.disconnect(DisconnectMode::Graceful).expect("a no-op on DISCONNECTED");
    client.ep.disconnect(DisconnectMode::Abrupt).expect("a no-op on DISCONNECTED");
    let e = client.conn_evd.wait(100_000, 1).unwrap_err();
    assert_eq!(e.return_type(), ret::TIMEOUT_EXPIRED, "no second DISCONNECTED: {e}");
    // A send on DISCONNECTED succeeds and is flushed at once.
    client.ep.post_send(&[t], 78, 0).unwrap();
    match client.req_evd.wait(WAIT_US, 1).unwrap().0 {
        Event::Dto { completion, .. } => {
            assert_eq!((completion.user_cookie, completion.status), (78, dto_status::ERR_FLUSHED))
        }
        other => panic!("expected the flushed send, got {other:?}"),
    }
    client.ep.reset().unwrap();
    assert_eq!(client.ep.state(), EpState::Unconnected);
}

/// Graceful: "During that time, the local Endpoint is in a DAT_EP_DISCONNECT_PENDING
/// state", "No new Send, RDMA Read, and RDMA Write DTOs, or RMR Binds can be posted", "The
/// graceful dat_ep_disconnect() call when the local Endpoint is in the
/// DAT_EP_DISCONNECT_PENDING state has no effect", and it ends in DISCONNECTED with the
/// DISCONNECTED event.
#[test]
fn graceful_disconnect_ends_in_disconnected_with_one_event() {
    let (server, client, _psp) = connected(31903);
    client.ep.disconnect(DisconnectMode::Graceful).unwrap();
    let state = client.ep.state();
    assert!(
        matches!(state, EpState::DisconnectPending | EpState::Disconnected),
        "graceful goes through DISCONNECT_PENDING: {state}"
    );
    if state == EpState::DisconnectPending {
        let t = client.buf.triplet(0, 16).unwrap();
        let e = client.ep.post_send(&[t], 1, 0).unwrap_err();
        assert_eq!(e.return_type(), ret::INVALID_STATE, "{e}");
        client.ep.disconnect(DisconnectMode::Graceful).expect("no effect while pending");
    }
    for s in [&client, &server] {
        match s.conn_evd.wait(WAIT_US, 1).unwrap().0 {
            Event::Connection { number: event::CONNECTION_EVENT_DISCONNECTED, .. } => {}
            other => panic!("expected DISCONNECTED, got {other:?}"),
        }
        assert_eq!(s.ep.state(), EpState::Disconnected);
    }
    let e = client.conn_evd.wait(100_000, 1).unwrap_err();
    assert_eq!(e.return_type(), ret::TIMEOUT_EXPIRED, "one DISCONNECTED only: {e}");
}

/// dat_lmr_free: "The LMR cannot be destroyed if it is in use by an RMR" (DAT_INVALID_STATE);
/// dat_pz_free: "cannot be destroyed if it is in use by an Endpoint, LMR, or RMR".
#[test]
fn an_lmr_an_rmr_is_bound_in_and_a_pz_with_objects_are_not_freed() {
    let (server, _client, _psp) = connected(31904);
    let lmr = Lmr::alloc(&server.pz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    let rmr = Rmr::create(&server.pz).unwrap();
    let range = lmr.triplet(0, 64).unwrap();
    rmr.bind(Some(&lmr), &range, MemPriv(mem_priv::REMOTE_READ), &server.ep, 5, 0).unwrap();
    match server.req_evd.wait(WAIT_US, 1).unwrap().0 {
        Event::RmrBind { status, .. } => assert_eq!(status, 0, "bound"),
        other => panic!("expected the bind's completion, got {other:?}"),
    }
    let (lmr, e) = lmr.free().unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_LMR_IN_USE), "{e}");

    let pz = Pz::create(&server.ia).unwrap();
    let rmr2 = Rmr::create(&pz).unwrap();
    let (pz, e) = pz.free().unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_PZ_IN_USE), "{e}");
    rmr2.free().unwrap();
    pz.free().map_err(|(_, e)| e).expect("an empty PZ is freed");

    rmr.free().unwrap();
    lmr.free().map_err(|(_, e)| e).expect("no RMR is bound in it any more");
}

/// dat_lmr_free of an LMR not bound by an RMR succeeds even with DTOs using it, and "Any
/// DTO operation that uses the destroyed LMR after the dat_lmr_free() is completed shall
/// fail and report a protection violation".
#[test]
fn a_dto_on_a_freed_lmr_fails_with_a_protection_error() {
    let (server, client, _psp) = connected(31905);
    let lmr = Lmr::alloc(&client.pz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    let t = lmr.triplet(0, 64).unwrap();
    let r = server.buf.triplet(0, 64).unwrap();
    server.ep.post_recv(&[r], 1, 0).unwrap();
    lmr.free().map_err(|(_, e)| e).expect("no RMR is bound in it");
    match client.ep.post_send(&[t], 2, 0) {
        Err(e) => assert_eq!(e.return_type(), ret::PROTECTION_VIOLATION, "{e}"),
        Ok(()) => match client.req_evd.wait(WAIT_US, 1).unwrap().0 {
            Event::Dto { completion, .. } => assert_eq!(
                (completion.user_cookie, completion.status),
                (2, dto_status::ERR_LOCAL_PROTECTION),
                "a send from a freed LMR"
            ),
            other => panic!("expected the send's completion, got {other:?}"),
        },
    }
}
