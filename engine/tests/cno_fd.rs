//! CNOs with a file descriptor (`dat_cno_fd_create`, `dat_cno_trigger`) over softhca: the
//! fd a consumer's event loop polls becomes readable when an attached, enabled EVD gets an
//! event nobody waits for directly (a receive of a peer's SEND, a software event), and
//! `trigger` names that EVD and re-arms, the fd unreadable until the next event.

mod support;

use ferrodat_abi::dat::{evd_flags, ret, subtype};
use ferrodat_engine::cno::Cno;
use ferrodat_engine::ep_state::DisconnectMode;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};
use support::{Side, WAIT_US, connected};

/// Long enough for a completion that makes the fd readable to have done so.
const SETTLE: Duration = Duration::from_millis(50);

/// `poll(2)` of `fd` for POLLIN, up to `timeout`: whether it is readable.
fn readable_within(fd: RawFd, timeout: Duration) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ms = i32::try_from(timeout.as_millis()).unwrap();
    // SAFETY: one live pollfd.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    assert!(n >= 0, "poll: {}", std::io::Error::last_os_error());
    assert_eq!(p.revents & (libc::POLLERR | libc::POLLNVAL), 0, "revents {:#x}", p.revents);
    n == 1
}

fn readable(fd: RawFd) -> bool {
    readable_within(fd, Duration::ZERO)
}

fn cookie(ev: Event) -> u64 {
    match ev {
        Event::Dto { completion, .. } => completion.user_cookie,
        other => panic!("expected a DTO completion, got {other:?}"),
    }
}

/// `from` sends 8 bytes into a receive `to` posted before, and waits for the send's
/// completion (so the message is in `to`'s CQ).
fn send(from: &Side, to: &Side, n: u64) {
    to.ep.post_recv(&[to.buf.triplet(64 * (n % 64), 64).unwrap()], n, 0).unwrap();
    from.buf.write(4096, &n.to_le_bytes()).unwrap();
    from.ep.post_send(&[from.buf.triplet(4096, 8).unwrap()], n, 0).unwrap();
    assert_eq!(cookie(from.req_evd.wait(WAIT_US, 1).unwrap().0), n);
}

/// The server's receive EVD attached to a fresh fd CNO.
fn attached(server: &Side) -> (Cno, RawFd) {
    let cno = Cno::create_with_fd(&server.ia).unwrap();
    let fd = cno.fd().expect("a CNO made with a file descriptor has one");
    server.recv_evd.modify_cno(Some(&cno));
    (cno, fd)
}

#[test]
fn a_receive_makes_the_fd_readable_and_trigger_names_its_evd_and_rearms() {
    let (server, client, _psp) = connected(31500);
    let (cno, fd) = attached(&server);
    assert!(!readable(fd), "readable before anything happened");
    assert!(cno.trigger().unwrap().is_none(), "nothing to report yet");
    assert!(!readable(fd));

    send(&client, &server, 1);
    assert!(readable_within(fd, Duration::from_secs(5)), "the receive made the fd readable");
    let hint = cno.trigger().unwrap().expect("the receive EVD as the hint");
    assert_eq!(hint.id(), server.recv_evd.id());
    assert!(!readable(fd), "trigger re-armed: unreadable until the next event");
    assert_eq!(cookie(server.recv_evd.dequeue().unwrap()), 1);
    assert!(!readable_within(fd, SETTLE), "the dequeue made it readable");

    // The next one, and again.
    send(&client, &server, 2);
    assert!(readable_within(fd, Duration::from_secs(5)), "the second receive");
    assert_eq!(cno.trigger().unwrap().unwrap().id(), server.recv_evd.id());
    assert_eq!(cookie(server.recv_evd.dequeue().unwrap()), 2);
    assert!(!readable_within(fd, SETTLE));
    assert!(cno.trigger().unwrap().is_none());

    // dat_cno_wait keeps working on such a CNO.
    send(&client, &server, 3);
    assert_eq!(cno.wait(Some(Duration::from_secs(5))).unwrap().unwrap().id(), server.recv_evd.id());
    assert_eq!(cookie(server.recv_evd.dequeue().unwrap()), 3);

    server.recv_evd.modify_cno(None);
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

/// A software event posted to an attached EVD triggers the CNO; on a disabled EVD it only
/// queues, and enabling the EVD reports it (as `dat_cno_wait` would return it then).
#[test]
fn software_events_trigger_it_unless_the_evd_is_disabled() {
    let ia = support::ia();
    let cno = Cno::create_with_fd(&ia).unwrap();
    let fd = cno.fd().unwrap();
    let soft = Evd::create_with_cno(&ia, 4, Some(&cno), evd_flags::SOFTWARE).unwrap();
    assert!(!readable(fd));
    soft.post_se(0xfeed).unwrap();
    assert!(readable(fd), "a posted event makes the fd readable at once");
    assert_eq!(cno.trigger().unwrap().unwrap().id(), soft.id());
    assert!(!readable(fd));
    assert_eq!(soft.dequeue().unwrap(), Event::Software { pointer: 0xfeed });

    soft.disable();
    soft.post_se(0xbeef).unwrap();
    assert!(!readable(fd), "a disabled EVD does not trigger");
    assert!(cno.trigger().unwrap().is_none(), "nor does a trigger report it");
    soft.enable();
    assert!(readable(fd), "enabled with an event queued");
    assert_eq!(cno.trigger().unwrap().unwrap().id(), soft.id());
    assert!(!readable(fd));
    assert_eq!(soft.dequeue().unwrap(), Event::Software { pointer: 0xbeef });

    // Attached with an event already queued: readable at once.
    let late = Evd::create(&ia, 4, evd_flags::SOFTWARE).unwrap();
    late.post_se(7).unwrap();
    late.modify_cno(Some(&cno));
    assert!(readable(fd), "attached with an event queued");
    assert_eq!(cno.trigger().unwrap().unwrap().id(), late.id());
    late.modify_cno(None);
    soft.modify_cno(None);
}

/// Two EVDs with events: one trigger names one, and the fd stays readable for the other,
/// which the next trigger names; the fd is unreadable after that.
#[test]
fn with_two_evds_holding_events_each_trigger_names_one_and_the_fd_stays_readable() {
    let ia = support::ia();
    let cno = Cno::create_with_fd(&ia).unwrap();
    let fd = cno.fd().unwrap();
    let evds: Vec<Evd> = (0..2)
        .map(|_| Evd::create_with_cno(&ia, 4, Some(&cno), evd_flags::SOFTWARE).unwrap())
        .collect();
    for (i, e) in evds.iter().enumerate() {
        e.post_se(i as u64).unwrap();
    }
    let first = cno.trigger().unwrap().unwrap();
    assert!(readable(fd), "the other EVD still holds an event");
    first.dequeue().unwrap();
    let second = cno.trigger().unwrap().unwrap();
    assert!(!first.same(&second), "the EVDs take turns as the hint");
    assert!(!readable(fd));
    second.dequeue().unwrap();
    assert!(cno.trigger().unwrap().is_none());
    // Both again: the second trigger names the one the first did not, though the first
    // one's event is still queued (the consumer did not drain it): that keeps the fd
    // readable, and the third trigger names it again.
    for (i, e) in evds.iter().enumerate() {
        e.post_se(i as u64).unwrap();
    }
    let first = cno.trigger().unwrap().unwrap();
    let second = cno.trigger().unwrap().unwrap();
    assert!(!first.same(&second));
    assert!(readable(fd), "the first EVD was not drained");
    assert!(cno.trigger().unwrap().is_some());
    for e in &evds {
        e.dequeue().unwrap();
        e.modify_cno(None);
    }
}

/// A thread waiting on the EVD directly takes its completion: the CNO is not triggered by
/// it, as `dat_cno_wait` is not. Once that waiter returned, the CNO watches the EVD again.
#[test]
fn a_direct_waiter_takes_the_event_and_the_cno_watches_the_evd_after_it() {
    let (server, client, _psp) = connected(31501);
    let (cno, fd) = attached(&server);
    let evd = server.recv_evd.clone();
    let waiter = std::thread::spawn(move || evd.wait(WAIT_US, 1));
    std::thread::sleep(SETTLE); // the waiter is asleep on the EVD
    send(&client, &server, 1);
    assert_eq!(cookie(waiter.join().unwrap().unwrap().0), 1, "the direct waiter got it");
    assert!(!readable(fd), "the waiter's event left the fd readable");
    assert!(cno.trigger().unwrap().is_none(), "the waiter's event triggered the CNO");

    send(&client, &server, 2);
    assert!(readable_within(fd, Duration::from_secs(5)), "watched again after the waiter");
    assert_eq!(cno.trigger().unwrap().unwrap().id(), server.recv_evd.id());
    assert_eq!(cookie(server.recv_evd.dequeue().unwrap()), 2);
    server.recv_evd.modify_cno(None);
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

/// An event loop: the client sends N messages from another thread, each once the server
/// has drained the last; the server sleeps in poll(2) on the fd, then triggers and
/// dequeues. A wake-up lost between a trigger's look and its re-arm hangs the loop (5 s
/// poll); a trigger that re-armed before it harvested would wake the fd again for the
/// message it reported (an empty trigger per message).
#[test]
fn an_event_loop_polling_the_fd_receives_every_message() {
    const N: u64 = 300;
    let (server, client, _psp) = connected(31502);
    let (cno, fd) = attached(&server);
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    std::thread::scope(|s| {
        let server = &server;
        let client = &client;
        s.spawn(move || {
            for n in 0..N {
                let ready = rx.recv_timeout(Duration::from_secs(10)).expect("the server is ready");
                assert_eq!(ready, n);
                client.buf.write(4096, &n.to_le_bytes()).unwrap();
                client.ep.post_send(&[client.buf.triplet(4096, 8).unwrap()], n, 0).unwrap();
                assert_eq!(cookie(client.req_evd.wait(WAIT_US, 1).unwrap().0), n);
            }
        });
        // A receive for message `n`, then the client may send it.
        let ready_for = |n: u64| {
            server.ep.post_recv(&[server.buf.triplet(64 * (n % 64), 64).unwrap()], n, 0).unwrap();
            tx.send(n).unwrap();
        };
        ready_for(0);
        let mut next = 0;
        let mut empty_triggers = 0;
        let started = Instant::now();
        while next < N {
            assert!(
                readable_within(fd, Duration::from_secs(5)),
                "message {next}: the fd never became readable (a lost wake-up)"
            );
            let Some(evd) = cno.trigger().unwrap() else {
                empty_triggers += 1;
                continue;
            };
            assert!(evd.same(&server.recv_evd));
            while let Ok(ev) = evd.dequeue() {
                assert_eq!(cookie(ev), next);
                next += 1;
            }
            if next < N {
                ready_for(next);
            }
        }
        assert!(!readable_within(fd, SETTLE), "readable after the last message");
        eprintln!("{N} messages through poll + trigger in {:?}", started.elapsed());
        assert_eq!(empty_triggers, 0, "wake-ups that found nothing");
    });
    server.recv_evd.modify_cno(None);
    client.ep.disconnect(DisconnectMode::Abrupt).unwrap();
}

/// Whether `fd` is open on the same open file as `other` (kcmp(2); where the kernel lacks
/// it, whether `fd` is open at all).
fn same_file(fd: RawFd, other: RawFd) -> bool {
    const KCMP_FILE: libc::c_long = 0;
    let pid = libc::c_long::from(std::process::id() as i32);
    // SAFETY: kcmp compares two of our own fds; no memory is passed.
    let rc = unsafe { libc::syscall(libc::SYS_kcmp, pid, pid, KCMP_FILE, fd, other) };
    if rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
        // SAFETY: F_GETFD on a number: no memory is touched.
        return unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1;
    }
    rc == 0
}

#[test]
fn a_freed_cno_closes_its_fd_and_refuses_triggers() {
    let ia = support::ia();
    let cno = Cno::create_with_fd(&ia).unwrap();
    let fd = cno.fd().unwrap();
    // Another test of this binary may get the number as soon as it is closed: a duplicate
    // of the CNO's file tells whether `fd` still is that file.
    // SAFETY: dup of an open fd; the duplicate is closed below.
    let dup = unsafe { libc::dup(fd) };
    assert!(dup >= 0);
    assert!(same_file(fd, dup), "the check tells the CNO's file while it is open");
    let soft = Evd::create_with_cno(&ia, 4, Some(&cno), evd_flags::SOFTWARE).unwrap();
    let (still, e) = cno.free().unwrap_err();
    assert_eq!(
        (e.return_type(), e.subtype()),
        (ret::INVALID_STATE, subtype::INVALID_STATE_CNO_IN_USE)
    );
    soft.modify_cno(None);
    let other = still.clone();
    still.free().unwrap();
    assert!(!same_file(fd, dup), "fd {fd} is still the CNO's after dat_cno_free");
    // SAFETY: closes our own duplicate.
    unsafe { libc::close(dup) };
    assert_eq!(other.fd(), None);
    let e = other.trigger().unwrap_err();
    assert_eq!((e.return_type(), e.subtype()), (ret::INVALID_HANDLE, subtype::INVALID_HANDLE_CNO));
    assert!(e.to_string().contains("dat_cno_trigger"), "{e}");

    // A plain CNO has no fd; its trigger is a look that does not block.
    let plain = Cno::create(&ia).unwrap();
    assert_eq!(plain.fd(), None);
    let soft = Evd::create_with_cno(&ia, 4, Some(&plain), evd_flags::SOFTWARE).unwrap();
    assert!(plain.trigger().unwrap().is_none());
    soft.post_se(1).unwrap();
    assert_eq!(plain.trigger().unwrap().unwrap().id(), soft.id());
    soft.modify_cno(None);
}

/// The IA's abrupt close releases the CNO: the fd becomes readable and the trigger says the
/// handle is dead; freeing the last EVD makes it readable with nothing to report.
#[test]
fn releases_make_the_fd_readable() {
    let ia = support::ia();
    let cno = Cno::create_with_fd(&ia).unwrap();
    let fd = cno.fd().unwrap();
    let soft = Evd::create_with_cno(&ia, 4, Some(&cno), evd_flags::SOFTWARE).unwrap();
    soft.free().unwrap();
    assert!(readable(fd), "the last EVD freed");
    assert!(cno.trigger().unwrap().is_none());
    assert!(!readable(fd));

    ia.close(ferrodat_engine::ia::CloseMode::Abrupt).unwrap();
    assert!(readable(fd), "the IA closed");
    let e = cno.trigger().unwrap_err();
    assert_eq!(e.return_type(), ret::INVALID_HANDLE, "{e}");
}
