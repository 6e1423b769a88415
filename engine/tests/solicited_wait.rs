//! Receive EVDs of endpoints created with DAT_COMPLETION_SOLICITED_WAIT_FLAG in their
//! `recv_completion_flags`, over softhca: the waiter (and the CNO) wakes for a solicited
//! receive — the sender's `dat_ep_post_send` carried the flag — or a failed one, and sleeps
//! through the others, which stay queued in order; threshold 1 only.

mod support;

use support::code;

use ferrodat_abi::dat::{
    completion_flags, dto_status, ep_field, evd_flags, event, mem_priv, ret, subtype,
};
use ferrodat_engine::cno::Cno;
use ferrodat_engine::dto::DtoCompletion;
use ferrodat_engine::ep::{Ep, EpAttr, EpParamUpdate};
use ferrodat_engine::ep_state::DisconnectMode;
use ferrodat_engine::error::DatError;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::ia::Ia;
use ferrodat_engine::lmr::{Lmr, MemPriv};
use ferrodat_engine::pz::Pz;
use ferrodat_engine::sp::Psp;
use std::thread;
use std::time::{Duration, Instant};
use support::WAIT_US;

/// Long enough for a completion that should wake a waiter to have done so.
const SETTLE: Duration = Duration::from_millis(50);

/// A waiter woken by the CQ's channel returns well within this; one that was not woken
/// sleeps out its [`WAIT_US`] (and its last harvest would find the events all the same).
const WOKEN: Duration = Duration::from_secs(2);

/// Joins `waiter`, which must have been woken (not have slept out its timeout) since `from`.
fn woken<T>(waiter: thread::JoinHandle<T>, from: Instant) -> T {
    let r = waiter.join().unwrap();
    assert!(from.elapsed() < WOKEN, "the waiter slept {:?}: not woken", from.elapsed());
    r
}

fn dto(ev: Event) -> DtoCompletion {
    match ev {
        Event::Dto { completion, .. } => completion,
        other => panic!("expected a DTO event, got {other:?}"),
    }
}

/// A connected pair. The server's endpoint receives on `recv_evd` alone (its requests go
/// to another EVD) with `recv_completion_flags`.
struct Pair {
    _psp: Psp,
    server_ia: Ia,
    server_pz: Pz,
    server: Ep,
    server_buf: Lmr,
    recv_evd: Evd,
    server_conn: Evd,
    client: Ep,
    client_buf: Lmr,
    client_dto: Evd,
}

fn pair(port: u16, recv_completion_flags: u32) -> Pair {
    let (sia, cia) = (support::ia(), support::ia());
    let (spz, cpz) = (Pz::create(&sia).unwrap(), Pz::create(&cia).unwrap());
    let recv_evd = Evd::create(&sia, 8, evd_flags::DTO).unwrap();
    let sreq = Evd::create(&sia, 8, evd_flags::DTO).unwrap();
    let sconn = Evd::create(&sia, 4, evd_flags::CONNECTION).unwrap();
    let cr_evd = Evd::create(&sia, 4, evd_flags::CR).unwrap();
    let client_dto = Evd::create(&cia, 16, evd_flags::DTO).unwrap();
    let cconn = Evd::create(&cia, 4, evd_flags::CONNECTION).unwrap();
    let attr = EpAttr { recv_completion_flags, ..EpAttr::defaults(&sia) };
    let server = Ep::create(&spz, &recv_evd, &sreq, Some(&sconn), Some(attr)).unwrap();
    let client = Ep::create(&cpz, &client_dto, &client_dto, Some(&cconn), None).unwrap();
    let server_buf = Lmr::alloc(&spz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    let client_buf = Lmr::alloc(&cpz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    let psp = Psp::create(&sia, port, &cr_evd).unwrap();
    client.connect(sia.attr().address, port, None, &[]).unwrap();
    let Event::ConnectionRequest { cr, .. } = cr_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected a request")
    };
    cr.accept(Some(&server), &[]).unwrap();
    for evd in [&cconn, &sconn] {
        let ev = evd.wait(WAIT_US, 1).unwrap().0;
        assert!(
            matches!(ev, Event::Connection { number: event::CONNECTION_EVENT_ESTABLISHED, .. }),
            "{ev:?}"
        );
    }
    Pair {
        _psp: psp,
        server_ia: sia,
        server_pz: spz,
        server,
        server_buf,
        recv_evd,
        server_conn: sconn,
        client,
        client_buf,
        client_dto,
    }
}

impl Pair {
    /// A thread waiting on the receive EVD, given time to fall asleep.
    fn waiter_asleep(&self) -> thread::JoinHandle<Result<(Event, usize), DatError>> {
        let waiter = thread::spawn({
            let evd = self.recv_evd.clone();
            move || evd.wait(WAIT_US, 1)
        });
        thread::sleep(SETTLE);
        waiter
    }

    /// Posts `n` receives of 64 bytes, cookies 0..n.
    fn post_receives(&self, n: u64) {
        for i in 0..n {
            self.server.post_recv(&[self.server_buf.triplet(i * 64, 64).unwrap()], i, 0).unwrap();
        }
    }

    /// Sends 8 bytes with `flags` (DAT_COMPLETION_SOLICITED_WAIT_FLAG or not) and waits for
    /// the send's completion: the message has landed in the server's CQ by then.
    fn send(&self, cookie: u64, flags: u32) {
        self.client.post_send(&[self.client_buf.triplet(2048, 8).unwrap()], cookie, flags).unwrap();
        let c = dto(self.client_dto.wait(WAIT_US, 1).unwrap().0);
        assert_eq!((c.user_cookie, c.status), (cookie, dto_status::SUCCESS));
    }
}

/// The cookie of the receive a wait returned, and `nmore`.
fn received(r: Result<(Event, usize), DatError>) -> (u64, usize) {
    let (ev, nmore) = r.unwrap();
    let c = dto(ev);
    assert_eq!(c.status, dto_status::SUCCESS, "{c:?}");
    (c.user_cookie, nmore)
}

#[test]
fn a_waiter_sleeps_through_unsolicited_receives_and_wakes_for_a_solicited_one() {
    let p = pair(31410, completion_flags::SOLICITED_WAIT);
    p.post_receives(6);
    // Two unsolicited messages: a wait times out, nothing taken; both are queued.
    p.send(0, 0);
    p.send(1, 0);
    let (e, nmore) = p.recv_evd.wait_counting(20_000, 1).unwrap_err();
    assert_eq!(e.return_type(), ret::TIMEOUT_EXPIRED, "{e}");
    assert_eq!(nmore, Some(2), "both receives are on the EVD");
    assert_eq!(dto(p.recv_evd.dequeue().unwrap()).user_cookie, 0, "and can be dequeued");

    // A waiter sleeps through another unsolicited one...
    let waiter = p.waiter_asleep();
    p.send(2, 0);
    thread::sleep(SETTLE);
    assert!(!waiter.is_finished(), "an unsolicited receive woke the waiter");
    // ...and a solicited one wakes it: the oldest event comes first.
    let sent = Instant::now();
    p.send(3, completion_flags::SOLICITED_WAIT);
    assert_eq!(received(woken(waiter, sent)), (1, 2));
    assert_eq!(received(p.recv_evd.wait(0, 1)), (2, 1));
    let (ev, nmore) = p.recv_evd.wait(0, 1).unwrap();
    assert_eq!((dto(ev).user_cookie, nmore), (3, 0));
    // Found empty: the next unsolicited one does not end a wait either.
    p.send(4, 0);
    let e = p.recv_evd.wait(20_000, 1).unwrap_err();
    assert_eq!(e.return_type(), ret::TIMEOUT_EXPIRED, "{e}");
    assert_eq!(dto(p.recv_evd.dequeue().unwrap()).user_cookie, 4);
    p.client.disconnect(DisconnectMode::Abrupt).unwrap();
}

#[test]
fn a_flushed_receive_wakes_the_waiter_behind_the_unsolicited_ones() {
    let p = pair(31411, completion_flags::SOLICITED_WAIT);
    p.post_receives(3);
    let waiter = p.waiter_asleep();
    p.send(0, 0);
    thread::sleep(SETTLE);
    assert!(!waiter.is_finished(), "an unsolicited receive woke the waiter");
    // The server ends the connection: its two receives left are flushed, which wakes the
    // waiter; the unsolicited receive comes first.
    let disconnected = Instant::now();
    p.server.disconnect(DisconnectMode::Abrupt).unwrap();
    assert_eq!(received(woken(waiter, disconnected)), (0, 2));
    for cookie in [1, 2] {
        let c = dto(p.recv_evd.wait(WAIT_US, 1).unwrap().0);
        assert_eq!((c.user_cookie, c.status), (cookie, dto_status::ERR_FLUSHED));
    }
    let ev = p.server_conn.wait(WAIT_US, 1).unwrap().0;
    assert!(
        matches!(ev, Event::Connection { number: event::CONNECTION_EVENT_DISCONNECTED, .. }),
        "{ev:?}"
    );
}

#[test]
fn a_cno_is_triggered_by_solicited_receives_only() {
    let p = pair(31412, completion_flags::SOLICITED_WAIT);
    let cno = Cno::create(&p.server_ia).unwrap();
    p.recv_evd.modify_cno(Some(&cno));
    p.post_receives(3);
    p.send(0, 0);
    let e = cno.wait(Some(SETTLE)).unwrap_err();
    assert_eq!(e.return_type(), ret::TIMEOUT_EXPIRED, "an unsolicited receive triggered: {e}");
    // A CNO waiter sleeps through another one, and wakes for a solicited one.
    let waiter = thread::spawn({
        let cno = cno.clone();
        move || cno.wait(Some(Duration::from_secs(5)))
    });
    thread::sleep(SETTLE);
    p.send(1, 0);
    thread::sleep(SETTLE);
    assert!(!waiter.is_finished(), "an unsolicited receive woke the CNO");
    p.send(2, completion_flags::SOLICITED_WAIT);
    let hint = waiter.join().unwrap().unwrap().expect("the receive EVD as the hint");
    assert_eq!(hint.id(), p.recv_evd.id());
    // Every receive is there to dequeue, in order.
    for cookie in 0..3 {
        assert_eq!(dto(p.recv_evd.dequeue().unwrap()).user_cookie, cookie);
    }
    assert_eq!(p.recv_evd.dequeue().unwrap_err().return_type(), ret::QUEUE_EMPTY);
    p.recv_evd.modify_cno(None);
    p.client.disconnect(DisconnectMode::Abrupt).unwrap();
}

/// The same for a CNO's file descriptor: unsolicited receives leave it unreadable, a
/// solicited one makes it readable, and the trigger names the EVD with all three queued.
#[test]
fn a_cno_fd_is_readable_for_solicited_receives_only() {
    let p = pair(31417, completion_flags::SOLICITED_WAIT);
    let cno = Cno::create_with_fd(&p.server_ia).unwrap();
    let fd = cno.fd().unwrap();
    p.recv_evd.modify_cno(Some(&cno));
    let readable = |timeout: Duration| {
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one live pollfd.
        unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as i32) == 1 }
    };
    p.post_receives(3);
    for cookie in 0..2 {
        p.send(cookie, 0);
        assert!(!readable(SETTLE), "unsolicited receive {cookie} made the fd readable");
        assert!(cno.trigger().unwrap().is_none(), "unsolicited receive {cookie} triggered");
    }
    p.send(2, completion_flags::SOLICITED_WAIT);
    assert!(readable(WOKEN), "the solicited receive made the fd readable");
    assert_eq!(cno.trigger().unwrap().expect("the receive EVD").id(), p.recv_evd.id());
    assert!(!readable(Duration::ZERO));
    for cookie in 0..3 {
        assert_eq!(dto(p.recv_evd.dequeue().unwrap()).user_cookie, cookie);
    }
    p.recv_evd.modify_cno(None);
    p.client.disconnect(DisconnectMode::Abrupt).unwrap();
}

#[test]
fn a_solicited_wait_receive_stream_takes_threshold_one_only() {
    let p = pair(31413, completion_flags::SOLICITED_WAIT);
    let refused = (ret::INVALID_STATE, subtype::INVALID_STATE_EVD_CONFIG_SOLICITED);
    let e = p.recv_evd.wait(0, 2).unwrap_err();
    assert_eq!(code(&e), refused, "{e}");
    assert!(e.to_string().contains("threshold 1"), "{e}");
    // Out of range stays a parameter error.
    let e = p.recv_evd.wait(0, 9).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_PARAMETER, subtype::INVALID_ARG3), "{e}");
    assert_eq!(p.recv_evd.wait(0, 1).unwrap_err().return_type(), ret::TIMEOUT_EXPIRED);

    // Another endpoint on the EVD with plain receives: the rule still holds (a
    // SOLICITED_WAIT stream feeds it), and every receive wakes the waiter now.
    let sreq = Evd::create(&p.server_ia, 8, evd_flags::DTO).unwrap();
    let plain = Ep::create(&p.server_pz, &p.recv_evd, &sreq, Some(&p.server_conn), None).unwrap();
    assert_eq!(code(&p.recv_evd.wait(0, 2).unwrap_err()), refused);
    p.post_receives(1);
    let waiter = p.waiter_asleep();
    let sent = Instant::now();
    p.send(0, 0);
    assert_eq!(received(woken(waiter, sent)), (0, 0), "mixed streams: every event notifies");
    drop(plain);
    p.client.disconnect(DisconnectMode::Abrupt).unwrap();
}

#[test]
fn dat_ep_modify_turns_solicited_wait_on_and_off_for_the_receive_evd() {
    let s = support::side();
    let mut u = EpParamUpdate::from_current(&s.ep);
    u.ep_attr.recv_completion_flags = completion_flags::SOLICITED_WAIT;
    s.ep.modify(ep_field::EP_ATTR_RECV_COMPLETION_FLAGS, &u).unwrap();
    let e = s.recv_evd.wait(0, 2).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EVD_CONFIG_SOLICITED));
    // The request EVD is not fed by receives: no rule there.
    assert_eq!(s.req_evd.wait(0, 2).unwrap_err().return_type(), ret::TIMEOUT_EXPIRED);
    // A new receive EVD takes the flag along with the endpoint's receives.
    let other = Evd::create(&s.ia, 8, evd_flags::DTO).unwrap();
    u.recv_evd = Some(other.clone());
    s.ep.modify(ep_field::RECV_EVD_HANDLE, &u).unwrap();
    assert_eq!(s.recv_evd.wait(0, 2).unwrap_err().return_type(), ret::TIMEOUT_EXPIRED);
    assert_eq!(code(&other.wait(0, 2).unwrap_err()).1, subtype::INVALID_STATE_EVD_CONFIG_SOLICITED);
    u.ep_attr.recv_completion_flags = completion_flags::DEFAULT;
    s.ep.modify(ep_field::EP_ATTR_RECV_COMPLETION_FLAGS, &u).unwrap();
    assert_eq!(other.wait(0, 2).unwrap_err().return_type(), ret::TIMEOUT_EXPIRED);
}

/// The passive side's first receive often completes before its ESTABLISHED is reported,
/// and is held back until then (`early_receive.rs`). Held back or not, an unsolicited
/// receive does not end a wait and a solicited one does: whether a receive notifies is
/// kept with it while it waits.
#[test]
fn a_receive_held_back_until_established_notifies_only_if_solicited() {
    const PORT: u16 = 31414;
    const ROUNDS: u64 = 10;
    let (sia, cia) = (support::ia(), support::ia());
    let (spz, cpz) = (Pz::create(&sia).unwrap(), Pz::create(&cia).unwrap());
    let recv_evd = Evd::create(&sia, 8, evd_flags::DTO).unwrap();
    let sreq = Evd::create(&sia, 8, evd_flags::DTO).unwrap();
    let sconn = Evd::create(&sia, 4, evd_flags::CONNECTION).unwrap();
    let cr_evd = Evd::create(&sia, 4, evd_flags::CR).unwrap();
    let client_dto = Evd::create(&cia, 8, evd_flags::DTO).unwrap();
    let cconn = Evd::create(&cia, 4, evd_flags::CONNECTION).unwrap();
    let server_buf = Lmr::alloc(&spz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    let client_buf = Lmr::alloc(&cpz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    let _psp = Psp::create(&sia, PORT, &cr_evd).unwrap();
    let attr = EpAttr {
        recv_completion_flags: completion_flags::SOLICITED_WAIT,
        ..EpAttr::defaults(&sia)
    };
    let connection_event = |evd: &Evd, number: u32, round: u64| {
        let ev = evd.wait(WAIT_US, 1).unwrap().0;
        assert!(
            matches!(ev, Event::Connection { number: n, .. } if n == number),
            "round {round}: expected connection event {number:#x}, got {ev:?}"
        );
    };
    let sent = |cookie: u64, round: u64| {
        let c = dto(client_dto.wait(WAIT_US, 1).unwrap().0);
        assert_eq!((c.user_cookie, c.status), (cookie, dto_status::SUCCESS), "round {round}");
    };
    for round in 0..ROUNDS {
        let server = Ep::create(&spz, &recv_evd, &sreq, Some(&sconn), Some(attr.clone())).unwrap();
        let client = Ep::create(&cpz, &client_dto, &client_dto, Some(&cconn), None).unwrap();
        for cookie in 0..2 {
            server.post_recv(&[server_buf.triplet(cookie * 64, 64).unwrap()], cookie, 0).unwrap();
        }
        client.connect(sia.attr().address, PORT, None, &[]).unwrap();
        let Event::ConnectionRequest { cr, .. } = cr_evd.wait(WAIT_US, 1).unwrap().0 else {
            panic!("round {round}: expected a request")
        };
        // The client sends, unsolicited, the moment it sees ESTABLISHED.
        let sender = thread::spawn({
            let (client, cconn, client_buf) = (client.clone(), cconn.clone(), client_buf.clone());
            move || {
                connection_event(&cconn, event::CONNECTION_EVENT_ESTABLISHED, round);
                client.post_send(&[client_buf.triplet(2048, 8).unwrap()], 0, 0).unwrap();
            }
        });
        cr.accept(Some(&server), &[]).unwrap();
        connection_event(&sconn, event::CONNECTION_EVENT_ESTABLISHED, round);
        sender.join().unwrap();
        sent(0, round);
        let e = recv_evd.wait(20_000, 1).unwrap_err();
        assert_eq!(e.return_type(), ret::TIMEOUT_EXPIRED, "round {round}: {e}");
        let solicited = Instant::now();
        client
            .post_send(&[client_buf.triplet(2048, 8).unwrap()], 1, completion_flags::SOLICITED_WAIT)
            .unwrap();
        let waited = received(recv_evd.wait(WAIT_US, 1));
        assert!(solicited.elapsed() < WOKEN, "round {round}: the solicited receive woke nobody");
        assert_eq!(waited, (0, 1), "round {round}");
        assert_eq!(received(recv_evd.wait(0, 1)), (1, 0), "round {round}");
        sent(1, round);
        client.disconnect(DisconnectMode::Abrupt).unwrap();
        connection_event(&sconn, event::CONNECTION_EVENT_DISCONNECTED, round);
        let ev = cconn.wait(WAIT_US, 1).unwrap().0;
        assert!(matches!(ev, Event::Connection { .. }), "round {round}: {ev:?}");
        drop(server);
        drop(client);
    }
}

/// An EVD that stops being solicited-only while a waiter sleeps (another endpoint's
/// plain stream joins it) owes that waiter the wake-ups of the new mode.
#[test]
fn a_waiter_asleep_when_the_evd_stops_being_solicited_only_wakes_for_any_receive() {
    let p = pair(31415, completion_flags::SOLICITED_WAIT);
    p.post_receives(1);
    let waiter = p.waiter_asleep();
    // Mixed streams from now on: every event notifies (notification.rs).
    let sreq = Evd::create(&p.server_ia, 8, evd_flags::DTO).unwrap();
    let plain = Ep::create(&p.server_pz, &p.recv_evd, &sreq, Some(&p.server_conn), None).unwrap();
    thread::sleep(SETTLE);
    let sent = Instant::now();
    p.send(0, 0);
    assert_eq!(received(woken(waiter, sent)), (0, 0), "mixed streams: every event notifies");
    drop(plain);
    p.client.disconnect(DisconnectMode::Abrupt).unwrap();
}

/// The same for a CNO asleep when the EVD stops being solicited-only.
#[test]
fn a_cno_asleep_when_the_evd_stops_being_solicited_only_wakes_for_any_receive() {
    let p = pair(31416, completion_flags::SOLICITED_WAIT);
    let cno = Cno::create(&p.server_ia).unwrap();
    p.recv_evd.modify_cno(Some(&cno));
    p.post_receives(1);
    let waiter = thread::spawn({
        let cno = cno.clone();
        move || cno.wait(Some(Duration::from_secs(5))).map(|e| e.is_some())
    });
    thread::sleep(SETTLE);
    let sreq = Evd::create(&p.server_ia, 8, evd_flags::DTO).unwrap();
    let plain = Ep::create(&p.server_pz, &p.recv_evd, &sreq, Some(&p.server_conn), None).unwrap();
    thread::sleep(SETTLE);
    let sent = Instant::now();
    p.send(0, 0);
    assert!(woken(waiter, sent).unwrap(), "mixed streams: every event triggers the CNO");
    p.recv_evd.modify_cno(None);
    drop(plain);
    p.client.disconnect(DisconnectMode::Abrupt).unwrap();
}
