//! EVD behaviour a consumer relies on, through the public API over softhca: software
//! events, wait thresholds and timeouts, unwaitable, one waiter at a time — on plain EVDs
//! and on DTO EVDs whose completions arrive from a connected peer.

mod support;

use support::{code, software};

use ferrodat_abi::dat::{evd_flags, event, mem_priv, ret, subtype};
use ferrodat_engine::ep::Ep;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::lmr::{Lmr, MemPriv};
use ferrodat_engine::pz::Pz;
use ferrodat_engine::sp::Psp;
use std::time::{Duration, Instant};

const WAIT_US: u32 = 5_000_000;

#[test]
fn software_events_come_back_in_order_and_a_full_evd_says_queue_full() {
    let ia = support::ia();
    let evd = Evd::create(&ia, 3, evd_flags::SOFTWARE).unwrap();
    for p in [11, 22, 33] {
        evd.post_se(p).unwrap();
    }
    let e = evd.post_se(44).unwrap_err();
    assert_eq!(e.return_type(), ret::QUEUE_FULL, "{e}");
    assert_eq!(software(evd.dequeue().unwrap()), 11);
    let (ev, more) = evd.wait(0, 1).unwrap();
    assert_eq!((software(ev), more), (22, 1));
    assert_eq!(software(evd.dequeue().unwrap()), 33);
    let e = evd.dequeue().unwrap_err();
    assert_eq!(e.return_type(), ret::QUEUE_EMPTY, "{e}");

    // Only an EVD made for software events takes them.
    let dto = Evd::create(&ia, 4, evd_flags::DTO).unwrap();
    let e = dto.post_se(1).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_PARAMETER, subtype::INVALID_ARG1), "{e}");
    assert!(e.to_string().contains("SOFTWARE"), "{e}");
}

#[test]
fn a_dto_evd_dequeues_its_queued_events_in_order_across_a_resize() {
    // A DTO EVD that also takes software events: they wait in its queue, which a dequeue
    // holding the CQ source reads without the queue's lock; a resize replaces the queue
    // under that lock, so the dequeues after it must see the new one.
    let ia = support::ia();
    let evd = Evd::create(&ia, 4, evd_flags::SOFTWARE | evd_flags::DTO).unwrap();
    for p in [1, 2, 3] {
        evd.post_se(p).unwrap();
    }
    assert_eq!(software(evd.dequeue().unwrap()), 1);
    evd.resize(16).unwrap();
    for p in 4..=10 {
        evd.post_se(p).unwrap();
    }
    let got: Vec<u64> = (0..9).map(|_| software(evd.dequeue().unwrap())).collect();
    assert_eq!(got, [2, 3, 4, 5, 6, 7, 8, 9, 10], "nothing lost or reordered by the resize");
    let e = evd.dequeue().unwrap_err();
    assert_eq!(e.return_type(), ret::QUEUE_EMPTY, "{e}");
    evd.resize(2).unwrap();
    evd.post_se(11).unwrap();
    evd.post_se(12).unwrap();
    assert_eq!(evd.post_se(13).unwrap_err().return_type(), ret::QUEUE_FULL, "qlen 2 now");
    assert_eq!(software(evd.dequeue().unwrap()), 11);
    assert_eq!(software(evd.wait(0, 1).unwrap().0), 12);
}

#[test]
fn a_wait_returns_only_when_the_threshold_is_met_and_times_out_with_nothing_taken() {
    let ia = support::ia();
    let evd = Evd::create(&ia, 8, evd_flags::SOFTWARE).unwrap();
    for bad in [0, 9] {
        let e = evd.wait(0, bad).unwrap_err();
        assert_eq!(code(&e), (ret::INVALID_PARAMETER, subtype::INVALID_ARG3), "threshold {bad}");
    }
    evd.post_se(1).unwrap();
    evd.post_se(2).unwrap();
    let started = Instant::now();
    let e = evd.wait(50_000, 3).unwrap_err();
    assert_eq!(e.return_type(), ret::TIMEOUT_EXPIRED, "{e}");
    assert!(started.elapsed() >= Duration::from_millis(50), "the timeout was honoured");
    // Nothing was taken by the timed-out wait.
    let waiter = std::thread::spawn({
        let evd = evd.clone();
        move || evd.wait(WAIT_US, 3)
    });
    std::thread::sleep(Duration::from_millis(50));
    assert!(!waiter.is_finished(), "two events do not meet a threshold of three");
    evd.post_se(3).unwrap();
    let (ev, more) = waiter.join().unwrap().unwrap();
    assert_eq!((software(ev), more), (1, 2));
}

#[test]
fn unwaitable_wakes_the_waiter_refuses_new_waits_and_still_lets_events_be_dequeued() {
    let ia = support::ia();
    let evd = Evd::create(&ia, 4, evd_flags::SOFTWARE).unwrap();
    let waiter = std::thread::spawn({
        let evd = evd.clone();
        move || evd.wait(u32::MAX, 1)
    });
    std::thread::sleep(Duration::from_millis(50));
    // One waiter owns the EVD.
    let e = evd.wait(0, 1).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EVD_WAITER), "{e}");
    let e = evd.dequeue().unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EVD_WAITER), "{e}");

    evd.set_unwaitable();
    let e = waiter.join().unwrap().unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EVD_UNWAITABLE), "{e}");
    let e = evd.wait(0, 1).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EVD_UNWAITABLE), "{e}");
    evd.post_se(5).unwrap();
    assert_eq!(software(evd.dequeue().unwrap()), 5);

    evd.clear_unwaitable();
    evd.post_se(6).unwrap();
    assert_eq!(software(evd.wait(WAIT_US, 1).unwrap().0), 6);
}

/// A connected pair whose server receives on `recv_evd`.
struct Pair {
    _psp: Psp,
    client: Ep,
    client_buf: Lmr,
    server: Ep,
    server_buf: Lmr,
    recv_evd: Evd,
    client_dto: Evd,
}

fn pair(port: u16) -> Pair {
    let (sia, cia) = (support::ia(), support::ia());
    let (spz, cpz) = (Pz::create(&sia).unwrap(), Pz::create(&cia).unwrap());
    let recv_evd = Evd::create(&sia, 16, evd_flags::DTO).unwrap();
    let sconn = Evd::create(&sia, 4, evd_flags::CONNECTION).unwrap();
    let cr_evd = Evd::create(&sia, 4, evd_flags::CR).unwrap();
    let client_dto = Evd::create(&cia, 16, evd_flags::DTO).unwrap();
    let cconn = Evd::create(&cia, 4, evd_flags::CONNECTION).unwrap();
    let server = Ep::create(&spz, &recv_evd, &recv_evd, Some(&sconn), None).unwrap();
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
    Pair { _psp: psp, client, client_buf, server, server_buf, recv_evd, client_dto }
}

#[test]
fn a_dto_evd_waiter_sleeps_until_the_threshold_of_completions_arrived() {
    let p = pair(31330);
    for i in 0..3 {
        p.server.post_recv(&[p.server_buf.triplet(i * 64, 64).unwrap()], i, 0).unwrap();
    }
    // The waiter sleeps on the CQ; the messages come one at a time.
    let waiter = std::thread::spawn({
        let evd = p.recv_evd.clone();
        move || evd.wait(WAIT_US, 3)
    });
    std::thread::sleep(Duration::from_millis(30));
    // A second waiter on a DTO EVD is refused, not queued behind the first.
    let e = p.recv_evd.wait(0, 1).unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EVD_WAITER), "{e}");
    for i in 0..3u64 {
        p.client_buf.write(2048, &i.to_le_bytes()).unwrap();
        p.client.post_send(&[p.client_buf.triplet(2048, 8).unwrap()], i, 0).unwrap();
        assert!(matches!(p.client_dto.wait(WAIT_US, 1).unwrap().0, Event::Dto { .. }));
        if i < 2 {
            std::thread::sleep(Duration::from_millis(30));
            assert!(!waiter.is_finished(), "{} of 3 completions woke the waiter", i + 1);
        }
    }
    let (ev, more) = waiter.join().unwrap().unwrap();
    let Event::Dto { completion, .. } = ev else { panic!("{ev:?}") };
    assert_eq!((completion.user_cookie, completion.transfered_length, more), (0, 8, 2));
    // A DTO EVD times out like any other, nothing taken.
    for cookie in [1, 2] {
        let Event::Dto { completion, .. } = p.recv_evd.wait(WAIT_US, 1).unwrap().0 else {
            panic!()
        };
        assert_eq!(completion.user_cookie, cookie);
    }
    let e = p.recv_evd.wait(20_000, 1).unwrap_err();
    assert_eq!(e.return_type(), ret::TIMEOUT_EXPIRED, "{e}");
}

#[test]
fn unwaitable_wakes_a_waiter_sleeping_on_a_cq() {
    let p = pair(31331);
    let waiter = std::thread::spawn({
        let evd = p.recv_evd.clone();
        move || evd.wait(u32::MAX, 1)
    });
    std::thread::sleep(Duration::from_millis(30));
    p.recv_evd.set_unwaitable();
    let e = waiter.join().unwrap().unwrap_err();
    assert_eq!(code(&e), (ret::INVALID_STATE, subtype::INVALID_STATE_EVD_UNWAITABLE), "{e}");
    // Completions still arrive and can be dequeued.
    p.server.post_recv(&[p.server_buf.triplet(0, 64).unwrap()], 9, 0).unwrap();
    p.client.post_send(&[p.client_buf.triplet(0, 8).unwrap()], 9, 0).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let ev = loop {
        match p.recv_evd.dequeue() {
            Ok(ev) => break ev,
            Err(e) if e.return_type() == ret::QUEUE_EMPTY && Instant::now() < deadline => {
                std::thread::yield_now()
            }
            Err(e) => panic!("dequeue: {e}"),
        }
    };
    assert!(matches!(ev, Event::Dto { .. }), "{ev:?}");
}
