//! `dat_ia_close` over softhca: graceful refuses while the IA has objects and says which;
//! abrupt aborts connections (the peer sees DISCONNECTED), stops listeners and releases
//! every waiter with DAT_ABORT. Frees that count an object's users (a graceful close,
//! `dat_pz_free`, `dat_srq_free`) wait out an engine thread's momentary hold.

mod support;

use ferrodat_abi::dat::{close_flags, evd_flags, event, psp_flags, ret, subtype};
use ferrodat_engine::cno::Cno;
use ferrodat_engine::ep::Ep;
use ferrodat_engine::ep_state::EpState;
use ferrodat_engine::error::DatError;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::ia::CloseMode;
use ferrodat_engine::pz::Pz;
use ferrodat_engine::sp::Psp;
use std::time::Duration;

/// Five seconds in µs: a bound that turns a hang into a failure.
const WAIT_US: u32 = 5_000_000;

fn connection_event(evd: &Evd) -> u32 {
    match evd.wait(WAIT_US, 1).unwrap().0 {
        Event::Connection { number, .. } => number,
        other => panic!("expected a connection event, got {other:?}"),
    }
}

#[test]
fn close_flags_map_to_modes() {
    assert_eq!(CloseMode::from_close_flags(close_flags::ABRUPT), Some(CloseMode::Abrupt));
    assert_eq!(CloseMode::from_close_flags(close_flags::GRACEFUL), Some(CloseMode::Graceful));
    assert_eq!(CloseMode::from_close_flags(7), None);
}

#[test]
fn graceful_close_refuses_while_objects_exist_and_names_them() {
    let ia = support::ia();
    let pz = Pz::create(&ia).unwrap();
    let evd = Evd::create(&ia, 8, evd_flags::DTO | evd_flags::CONNECTION).unwrap();
    let ep = Ep::create(&pz, &evd, &evd, Some(&evd), None).unwrap();
    let (ia, e) = ia.close(CloseMode::Graceful).unwrap_err();
    assert_eq!(
        (e.return_type(), e.subtype()),
        (ret::INVALID_STATE, subtype::INVALID_STATE_IA_IN_USE)
    );
    let text = e.to_string();
    assert!(text.contains("1 endpoint") && text.contains("1 EVD"), "{text}");
    assert!(text.contains("DAT_CLOSE_ABRUPT_FLAG"), "{text}");
    drop(ep);
    drop(evd);
    // Only the PZ is left: still refused, and said so.
    let (ia, e) = ia.close(CloseMode::Graceful).unwrap_err();
    assert!(e.to_string().contains("PZs, LMRs, SRQs"), "{e}");
    pz.free().unwrap();
    ia.close(CloseMode::Graceful).expect("nothing uses the IA now");
}

#[test]
fn abrupt_close_aborts_connections_listeners_and_waiters() {
    let server_ia = support::ia();
    let server_pz = Pz::create(&server_ia).unwrap();
    let server_cr = Evd::create(&server_ia, 4, evd_flags::CR).unwrap();
    let server_conn = Evd::create(&server_ia, 4, evd_flags::CONNECTION).unwrap();
    let server_dto = Evd::create(&server_ia, 16, evd_flags::DTO).unwrap();
    let server_ep =
        Ep::create(&server_pz, &server_dto, &server_dto, Some(&server_conn), None).unwrap();
    let psp = Psp::create_any(&server_ia, &server_cr, psp_flags::CONSUMER).unwrap();

    let ia = support::ia();
    let pz = Pz::create(&ia).unwrap();
    let conn = Evd::create(&ia, 4, evd_flags::CONNECTION).unwrap();
    let dto = Evd::create(&ia, 16, evd_flags::DTO).unwrap();
    let cr_evd = Evd::create(&ia, 4, evd_flags::CR).unwrap();
    let cno = Cno::create(&ia).unwrap();
    let ep = Ep::create(&pz, &dto, &dto, Some(&conn), None).unwrap();
    let own_psp = Psp::create_any(&ia, &cr_evd, psp_flags::CONSUMER).unwrap();
    let own_port = own_psp.conn_qual();
    ep.connect(server_ia.attr().address, psp.conn_qual(), None, b"").unwrap();
    let Event::ConnectionRequest { cr, .. } = server_cr.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a request")
    };
    cr.accept(Some(&server_ep), b"").unwrap();
    assert_eq!(connection_event(&conn), event::CONNECTION_EVENT_ESTABLISHED);
    assert_eq!(connection_event(&server_conn), event::CONNECTION_EVENT_ESTABLISHED);

    // Threads blocked in an EVD wait and a CNO wait.
    let evd_waiter = {
        let dto = dto.clone();
        std::thread::spawn(move || dto.wait(WAIT_US, 1))
    };
    let cno_waiter = {
        let cno = cno.clone();
        std::thread::spawn(move || cno.wait(Some(Duration::from_secs(5))))
    };
    std::thread::sleep(Duration::from_millis(50));

    ia.clone().close(CloseMode::Abrupt).unwrap();

    let e = evd_waiter.join().unwrap().unwrap_err();
    assert_eq!(e.return_type(), ret::ABORT, "{e}");
    // CNO waiters are released with a NULL EVD (dat_ia_close and dat_cno_wait man pages);
    // the handle is dead afterwards.
    assert!(cno_waiter.join().unwrap().unwrap().is_none());
    let e = cno.wait(Some(Duration::from_millis(1))).unwrap_err();
    assert_eq!(e.code(), DatError::invalid_handle(subtype::INVALID_HANDLE_CNO).code(), "{e}");
    // Later waits fail the same way.
    assert_eq!(conn.wait(1000, 1).unwrap_err().return_type(), ret::ABORT);
    assert_eq!(ep.state(), EpState::Disconnected);
    // The peer sees its connection end.
    assert_eq!(connection_event(&server_conn), event::CONNECTION_EVENT_DISCONNECTED);
    // The closed IA's listener is gone: its conn_qual is free again.
    let reuse = Psp::create(&server_ia, own_port, &server_cr).unwrap();
    assert_eq!(reuse.conn_qual(), own_port);
}

/// Holds `what` on another thread for `how_long`, as an engine thread holds an object it
/// is delivering an event of.
fn held_for<T: Send + 'static>(what: T, how_long: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(how_long);
        drop(what);
    })
}

/// The CM thread delivering a freed endpoint's last event holds the endpoint, and through
/// it the SRQ, PZ, EVDs and IA, for a moment: frees of those wait such a hold out rather
/// than refuse them as in use (they did, now and then). A hold that lasts is still refused.
#[test]
fn frees_wait_out_a_momentary_hold_and_refuse_a_lasting_one() {
    use ferrodat_engine::srq::Srq;
    let moment = Duration::from_millis(5);
    let ia = support::ia();
    let pz = Pz::create(&ia).unwrap();
    let evd = Evd::create(&ia, 8, evd_flags::DTO | evd_flags::CONNECTION).unwrap();
    let srq = Srq::create(&pz, 8, 1).unwrap();

    let ep = Ep::create_with_srq(&pz, &evd, &evd, Some(&evd), &srq, None).unwrap();
    let holder = held_for(ep.clone(), moment);
    ep.free().unwrap();
    srq.free().map_err(|(_, e)| e).expect("the SRQ waits out the freed endpoint's hold");
    holder.join().unwrap();

    // Held for a second: far past a moment, so the PZ counts as in use.
    let ep = Ep::create(&pz, &evd, &evd, Some(&evd), None).unwrap();
    let holder = held_for(ep.clone(), Duration::from_secs(1));
    ep.free().unwrap();
    let (pz, e) = pz.free().unwrap_err();
    assert_eq!(e.subtype(), subtype::INVALID_STATE_PZ_IN_USE, "{e}");
    holder.join().unwrap();

    let ep = Ep::create(&pz, &evd, &evd, Some(&evd), None).unwrap();
    let holder = held_for(ep.clone(), moment);
    ep.free().unwrap();
    pz.free().map_err(|(_, e)| e).expect("the PZ waits out the freed endpoint's hold");
    holder.join().unwrap();

    evd.free().map_err(|(_, e)| e).unwrap();
    let holder = held_for(ia.clone(), moment);
    ia.close(CloseMode::Graceful).map_err(|(_, e)| e).expect("the IA waits out the hold");
    holder.join().unwrap();
}
