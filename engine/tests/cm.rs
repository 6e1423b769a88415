//! The connection manager end to end over 127.0.0.1: handshakes between two CMs of one
//! process (on real softhca QPs where the QPs matter), private data, rejects, failures,
//! disconnects, a killed peer process and a connection loop that must not leak.
//!
//! Ports: listeners use `listen_any` (20000–29999) or, where a fixed conn_qual is the
//! point, 31100–31199 (below the kernel's ephemeral range, so no outgoing connection of
//! another program can be holding it); "nothing listens here" and "never answers" use kernel-picked ports.
//! Waits are for events with a generous deadline (a loaded 2-core machine), never timed
//! assertions.

mod support;

#[path = "../../softhca/tests/support/child.rs"]
#[allow(dead_code)]
mod child;

use child::{ChildProc, ROLE_ENV, read_command, say};
use ferrodat_driver::completion::{WcOpcode, WcStatus, WorkCompletion};
use ferrodat_driver::work_request::{Payload, RecvWr, SendFlags, SendOp, SendWr};
use ferrodat_driver::{Access, Context, Cq, CqOptions, Pd, Qp, QpAttr, QpCaps, QpInit};
use ferrodat_engine::cm::wire::{self, Msg};
use ferrodat_engine::cm::{
    self, Cm, CmError, CmEvent, ConnInfo, ConnRequest, DisconnectReason, MAX_PRIVATE_DATA,
    NonPeerReason, Sink,
};
use ferrodat_softhca::Device;
use ferrodat_softhca::config::DeviceConfig;
use ferrodat_softhca::fabric::FabricDir;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// How long any one event may take before the test gives up (a hang guard, not a check).
const WAIT: Duration = Duration::from_secs(30);

/// Events of one sink, in order.
struct Events(Receiver<CmEvent>);

impl Events {
    fn next(&self) -> CmEvent {
        match self.0.recv_timeout(WAIT) {
            Ok(ev) => ev,
            Err(RecvTimeoutError::Timeout) => panic!("no CM event within {WAIT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the CM dropped the sink"),
        }
    }

    fn request(&self) -> ConnRequest {
        match self.next() {
            CmEvent::ConnRequest(r) => r,
            other => panic!("expected a connection request, got {other:?}"),
        }
    }

    fn established(&self) -> (ConnInfo, Vec<u8>) {
        match self.next() {
            CmEvent::Established { peer, private_data, .. } => (peer, private_data),
            other => panic!("expected Established, got {other:?}"),
        }
    }

    fn disconnected(&self) -> DisconnectReason {
        match self.next() {
            CmEvent::Disconnected { reason, .. } => reason,
            other => panic!("expected Disconnected, got {other:?}"),
        }
    }

    fn nothing_pending(&self) -> bool {
        self.0.try_recv().is_err()
    }
}

fn sink() -> (Sink, Events) {
    let (tx, rx) = channel();
    (Arc::new(move |ev| drop(tx.send(ev))), Events(rx))
}

/// A sink that, on `Established`, waits until the test thread has brought the QP up
/// (`ready`) before returning — as the EP layer does by running `connect_qp` in the sink —
/// so the RTU leaves only then.
fn gated_sink() -> (Sink, Events, Sender<()>) {
    let (tx, rx) = channel();
    let (ready_tx, ready_rx) = channel::<()>();
    let ready_rx = Mutex::new(ready_rx);
    let s: Sink = Arc::new(move |ev: CmEvent| {
        let gate = matches!(ev, CmEvent::Established { .. });
        let _ = tx.send(ev);
        if gate {
            let _ = ready_rx.lock().unwrap().recv_timeout(WAIT);
        }
    });
    (s, Events(rx), ready_tx)
}

/// A QP description for tests where no QP is involved.
fn fake_info(qpn: u32) -> ConnInfo {
    ConnInfo {
        qpn,
        psn: cm::random_psn(),
        gid: [0; 16],
        responder_resources: 4,
        initiator_depth: 4,
        path_mtu: 3,
    }
}

fn pdata(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add(i as u8)).collect()
}

/// A port nothing listens on (the kernel's pick, released).
fn dead_port() -> u16 {
    TcpListener::bind((LOCALHOST, 0)).unwrap().local_addr().unwrap().port()
}

/// A private fabric directory under /dev/shm, removed on drop.
struct Fabric(PathBuf);

impl Fabric {
    fn new() -> Fabric {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = PathBuf::from(format!("/dev/shm/ferrodat-cm-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        Fabric(path)
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn softhca(fabric: &Fabric) -> Context {
    let config = DeviceConfig { name: "softhca0".into(), addr: "127.0.0.1".parse().unwrap() };
    let dev = Device::new_in(config, FabricDir::new(&fabric.0)).expect("join the private fabric");
    Context::open_softhca(dev).expect("open softhca0")
}

fn new_qp<'m>(pd: &Pd, cq: &Cq) -> Qp<'m> {
    Qp::new(pd, &QpInit::new(cq, cq, QpCaps { max_inline_data: 64, ..Default::default() }))
        .expect("CREATE_QP")
}

fn poll_one(cq: &mut Cq) -> WorkCompletion {
    let mut wc = [WorkCompletion::default()];
    assert_eq!(cq.poll_wait(&mut wc, WAIT), 1, "no completion within {WAIT:?}");
    wc[0]
}

/// The full handshake on real QPs, then SENDs both ways through the driver, then a
/// graceful disconnect seen by both.
#[test]
fn handshake_connects_real_qps_and_data_flows_both_ways() {
    let fabric = Fabric::new();
    let ctx = softhca(&fabric);
    let pd = Pd::new(&ctx).unwrap();
    let mut cq_a = Cq::new(&ctx, &CqOptions { cqe: 16, ..Default::default() }).unwrap();
    let mut cq_b = Cq::new(&ctx, &CqOptions { cqe: 16, ..Default::default() }).unwrap();
    let mr_a = pd.alloc_mr(4096, Access::ALL).unwrap();
    let mr_b = pd.alloc_mr(4096, Access::ALL).unwrap();
    let mut qp_a = new_qp(&pd, &cq_a);
    let mut qp_b = new_qp(&pd, &cq_b);

    let (cm_a, cm_b) = (Cm::new(LOCALHOST).unwrap(), Cm::new(LOCALHOST).unwrap());
    let (lsink, requests) = sink();
    let listener = cm_b.listen_any(4, lsink).unwrap();
    let port = listener.conn_qual();
    assert!(cm::CONN_QUAL_ANY.contains(&port), "{port}");

    // Active: the EP's QP is in INIT with a receive pre-posted, as DAT allows.
    let info_a = cm::local_conn_info(&ctx, &qp_a, 4, 4).unwrap();
    qp_a.modify(&QpAttr::reset_to_init(Access::ALL)).unwrap();
    qp_a.post_recv(&[RecvWr { wr_id: 10, sges: &[mr_a.sge(0, 256).unwrap()] }]).unwrap();
    let (sink_a, events_a, ready_a) = gated_sink();
    let req_pd = pdata(48, 1);
    let conn_a = cm_a.connect(LOCALHOST, port, &info_a, &req_pd, None, sink_a).unwrap();

    // Passive: the request, then the QP up, then accept.
    let mut req = requests.request();
    assert_eq!(req.private_data(), &req_pd[..]);
    assert_eq!(*req.peer(), info_a);
    assert_eq!(req.conn_qual(), port);
    assert_eq!(req.remote().ip(), LOCALHOST);
    assert_eq!(req.id(), req.id());
    let info_b = cm::local_conn_info(&ctx, &qp_b, 4, 4).unwrap();
    cm::connect_qp(&mut qp_b, &info_b, req.peer(), Access::ALL).unwrap();
    qp_b.post_recv(&[RecvWr { wr_id: 20, sges: &[mr_b.sge(0, 256).unwrap()] }]).unwrap();
    let rep_pd = pdata(48, 2);
    let (sink_b, events_b) = sink();
    let conn_b = req.accept(&info_b, &rep_pd, sink_b).unwrap();
    assert!(matches!(req.accept(&info_b, &[], sink().0), Err(CmError::AlreadyDecided { .. })));
    drop(req);

    // Active: REP → Established with the passive QP and private data; QP up; RTU.
    let (peer, got_pd) = events_a.established();
    assert_eq!((peer, got_pd), (info_b, rep_pd));
    cm::connect_qp(&mut qp_a, &info_a, &peer, Access::ALL).unwrap();
    // Connected with OFA dapl's transport timer: 268 ms, 7 retries.
    for qp in [&qp_a, &qp_b] {
        let attr = qp.query().unwrap();
        assert_eq!((attr.timeout, attr.retry_cnt), (cm::qp::ACK_TIMEOUT, 7));
    }
    ready_a.send(()).unwrap();
    // Passive: RTU → Established, no private data.
    let (peer, got_pd) = events_b.established();
    assert_eq!((peer, got_pd.len()), (info_a, 0));

    // The QPs are really connected: a SEND each way.
    let msgs: [&[u8]; 2] = [b"active to passive", b"passive to active"];
    qp_a.post_send(&[SendWr::new(1, SendOp::Send, Payload::Inline(msgs[0]))]).unwrap();
    qp_b.post_send(&[SendWr::new(2, SendOp::Send, Payload::Inline(msgs[1]))]).unwrap();
    // Each CQ gets its side's send completion and the peer's message, in either order.
    for (cq, mr, send_id, recv_id, msg, src) in [
        (&mut cq_a, &mr_a, 1, 10, msgs[1], qp_b.qpn()),
        (&mut cq_b, &mr_b, 2, 20, msgs[0], qp_a.qpn()),
    ] {
        let mut wc = [poll_one(cq), poll_one(cq)];
        wc.sort_by_key(|w| w.opcode != WcOpcode::Send);
        assert_eq!(
            (wc[0].wr_id, wc[0].opcode, wc[0].status),
            (send_id, WcOpcode::Send, WcStatus::Success)
        );
        let r = wc[1];
        assert_eq!((r.wr_id, r.opcode, r.status), (recv_id, WcOpcode::Recv, WcStatus::Success));
        assert_eq!((r.byte_len as usize, r.src_qp), (msg.len(), src));
        let mut got = vec![0u8; msg.len()];
        mr.read(0, &mut got).unwrap();
        assert_eq!(got, msg);
    }

    // Graceful disconnect from the active side.
    conn_a.disconnect(true).unwrap();
    assert_eq!(events_b.disconnected(), DisconnectReason::PeerRequest);
    assert_eq!(events_a.disconnected(), DisconnectReason::LocalGraceful);
    // A second disconnect of a finished connection does nothing.
    conn_a.disconnect(true).unwrap();
    conn_b.disconnect(false).unwrap();
    drop((conn_a, conn_b, listener, cm_a, cm_b));
    assert!(events_a.nothing_pending() && events_b.nothing_pending());
    drop((qp_a, qp_b));
}

/// `connect_qp` with starting PSNs just before the 24-bit wrap (0xfffff0 and 0xfffff8:
/// `random_psn` may pick them): SENDs, RDMA WRITEs and READs both ways carry on across
/// the wrap, each completing once with its data.
#[test]
fn a_connection_whose_psns_start_just_before_the_wrap_carries_traffic_both_ways() {
    let fabric = Fabric::new();
    let ctx = softhca(&fabric);
    let pd = Pd::new(&ctx).unwrap();
    let cq = || Cq::new(&ctx, &CqOptions { cqe: 16, ..Default::default() }).unwrap();
    let (mut scq_a, mut rcq_a, mut scq_b, mut rcq_b) = (cq(), cq(), cq(), cq());
    let mr_a = pd.alloc_mr(1 << 16, Access::ALL).unwrap();
    let mr_b = pd.alloc_mr(1 << 16, Access::ALL).unwrap();
    let qp = |scq, rcq| {
        let caps = QpCaps { max_inline_data: 64, ..Default::default() };
        let init = QpInit::new(scq, rcq, caps);
        Qp::new(&pd, &init).expect("CREATE_QP")
    };
    let (mut qp_a, mut qp_b) = (qp(&scq_a, &rcq_a), qp(&scq_b, &rcq_b));
    let info_a = ConnInfo { psn: 0xff_fff0, ..cm::local_conn_info(&ctx, &qp_a, 4, 4).unwrap() };
    let info_b = ConnInfo { psn: 0xff_fff8, ..cm::local_conn_info(&ctx, &qp_b, 4, 4).unwrap() };
    cm::connect_qp(&mut qp_b, &info_b, &info_a, Access::ALL).unwrap();
    cm::connect_qp(&mut qp_a, &info_a, &info_b, Access::ALL).unwrap();
    // 3 requests per round and side, 12 rounds: both sides pass their wrap.
    for round in 0..12u64 {
        for a_sends in [true, false] {
            let (from, scq, to, rcq, src, dst, seed) = if a_sends {
                (&mut qp_a, &mut scq_a, &mut qp_b, &mut rcq_b, &mr_a, &mr_b, 0xa0)
            } else {
                (&mut qp_b, &mut scq_b, &mut qp_a, &mut rcq_a, &mr_b, &mr_a, 0xb0)
            };
            let data: Vec<u8> =
                (0..4096).map(|i| (seed ^ round as u8).wrapping_add(i as u8)).collect();
            src.write(0, &data).unwrap();
            let remote = ferrodat_driver::work_request::Remote {
                addr: dst.addr() + 16384,
                rkey: dst.rkey(),
            };
            to.post_recv(&[RecvWr { wr_id: 100 + round, sges: &[dst.sge(0, 4096).unwrap()] }])
                .unwrap();
            let gather = [src.sge(0, 4096).unwrap()];
            let back = [src.sge(8192, 4096).unwrap()];
            let wrs = [
                SendWr::new(round, SendOp::Send, Payload::Sges(&gather)),
                SendWr::new(10 + round, SendOp::RdmaWrite(remote), Payload::Sges(&gather)),
                SendWr::new(20 + round, SendOp::RdmaRead(remote), Payload::Sges(&back)),
            ];
            from.post_send(&wrs.map(|wr| wr.flags(SendFlags::SIGNALED))).unwrap();
            let got: Vec<_> = (0..3).map(|_| poll_one(scq)).map(|w| (w.wr_id, w.status)).collect();
            let ok = WcStatus::Success;
            assert_eq!(got, [(round, ok), (10 + round, ok), (20 + round, ok)], "round {round}");
            let r = poll_one(rcq);
            assert_eq!(
                (r.wr_id, r.opcode, r.status, r.byte_len, r.src_qp),
                (100 + round, WcOpcode::Recv, ok, 4096, from.qpn()),
                "round {round}"
            );
            let mut landed = vec![0u8; 4096];
            dst.read(0, &mut landed).unwrap();
            assert!(landed == data, "round {round}: the SEND");
            src.read(8192, &mut landed).unwrap();
            assert!(landed == data, "round {round}: the READ brought the WRITE's bytes back");
        }
    }
}

/// One connection with fake QPs between `active` and a listener's `requests`; returns the
/// two connections with their event streams, established.
fn establish(
    active: &Cm,
    port: u16,
    requests: &Events,
    req_pd: &[u8],
    rep_pd: &[u8],
) -> ((cm::Connection, Events), (cm::Connection, Events)) {
    let (sa, ea) = sink();
    let (ia, ib) = (fake_info(0x100), fake_info(0x200));
    let ca = active.connect(LOCALHOST, port, &ia, req_pd, Some(WAIT), sa).unwrap();
    let mut req = requests.request();
    assert_eq!(req.private_data(), req_pd);
    assert_eq!(*req.peer(), ia);
    let (sb, eb) = sink();
    let cb = req.accept(&ib, rep_pd, sb).unwrap();
    assert_eq!(ea.established(), (ib, rep_pd.to_vec()));
    assert_eq!(eb.established(), (ia, vec![]));
    ((ca, ea), (cb, eb))
}

#[test]
fn private_data_of_every_allowed_size_both_ways_and_one_too_many_refused() {
    let (cm_a, cm_b) = (Cm::new(LOCALHOST).unwrap(), Cm::new(LOCALHOST).unwrap());
    let (lsink, requests) = sink();
    let listener = cm_b.listen_any(4, lsink).unwrap();
    let port = listener.conn_qual();
    for len in [0, 1, 48, MAX_PRIVATE_DATA] {
        let ((ca, ea), (cb, eb)) =
            establish(&cm_a, port, &requests, &pdata(len, 3), &pdata(len, 7));
        cb.disconnect(false).unwrap();
        assert_eq!(eb.disconnected(), DisconnectReason::LocalAbrupt);
        assert_eq!(ea.disconnected(), DisconnectReason::PeerRequest);
        drop((ca, cb));
    }
    // max + 1: connect refuses at once, nothing is sent.
    let too_long = pdata(MAX_PRIVATE_DATA + 1, 0);
    let e = cm_a.connect(LOCALHOST, port, &fake_info(1), &too_long, None, sink().0).unwrap_err();
    assert!(e.to_string().contains("257 bytes of private data"), "{e}");
    // … and so does accept, leaving the request undecided and acceptable.
    let (sa, ea) = sink();
    let _ca = cm_a.connect(LOCALHOST, port, &fake_info(1), &[], None, sa).unwrap();
    let mut req = requests.request();
    let (sb, eb) = sink();
    assert!(matches!(req.accept(&fake_info(2), &too_long, sb.clone()), Err(CmError::Wire(_))));
    assert!(matches!(req.reject(&too_long), Err(CmError::Wire(_))));
    let bad_qpn = ConnInfo { qpn: 1 << 24, ..fake_info(2) };
    assert!(matches!(req.accept(&bad_qpn, &[], sb.clone()), Err(CmError::Wire(_))));
    let _cb = req.accept(&fake_info(2), &[], sb).unwrap();
    ea.established();
    eb.established();
}

#[test]
fn reject_reaches_the_active_side_with_its_private_data() {
    let (cm_a, cm_b) = (Cm::new(LOCALHOST).unwrap(), Cm::new(LOCALHOST).unwrap());
    let (lsink, requests) = sink();
    let listener = cm_b.listen_any(4, lsink).unwrap();
    let (sa, ea) = sink();
    let ca = cm_a.connect(LOCALHOST, listener.conn_qual(), &fake_info(1), b"hi", None, sa);
    let ca = ca.unwrap();
    let mut req = requests.request();
    req.reject(b"go away").unwrap();
    assert!(matches!(req.reject(&[]), Err(CmError::AlreadyDecided { .. })));
    match ea.next() {
        CmEvent::PeerRejected { conn, private_data } => {
            assert_eq!((conn, &private_data[..]), (ca.id(), &b"go away"[..]));
        }
        other => panic!("expected PeerRejected, got {other:?}"),
    }
    // A request dropped undecided is refused by the provider, not the peer.
    let (sa, ea) = sink();
    let _ca = cm_a.connect(LOCALHOST, listener.conn_qual(), &fake_info(1), &[], None, sa);
    drop(requests.request());
    match ea.next() {
        CmEvent::NonPeerRejected { reason, .. } => assert_eq!(reason, NonPeerReason::Provider),
        other => panic!("expected NonPeerRejected, got {other:?}"),
    }
}

#[test]
fn full_backlog_refuses_as_non_peer_and_frees_up_after_a_decision() {
    let (cm_a, cm_b) = (Cm::new(LOCALHOST).unwrap(), Cm::new(LOCALHOST).unwrap());
    let (lsink, requests) = sink();
    let listener = cm_b.listen_any(1, lsink).unwrap();
    let port = listener.conn_qual();
    let (sa, _ea) = sink();
    let _first = cm_a.connect(LOCALHOST, port, &fake_info(1), &[], None, sa).unwrap();
    let mut pending = requests.request();
    let (sa, ea) = sink();
    let _second = cm_a.connect(LOCALHOST, port, &fake_info(2), &[], None, sa).unwrap();
    match ea.next() {
        CmEvent::NonPeerRejected { reason, .. } => assert_eq!(reason, NonPeerReason::Backlog),
        other => panic!("expected NonPeerRejected(Backlog), got {other:?}"),
    }
    pending.reject(&[]).unwrap();
    let ((_ca, _ea), (_cb, _eb)) = establish(&cm_a, port, &requests, &[], &[]);
}

#[test]
fn no_listener_is_non_peer_rejected() {
    let cm_a = Cm::new(LOCALHOST).unwrap();
    let (sa, ea) = sink();
    let started = Instant::now();
    let c = cm_a.connect(LOCALHOST, dead_port(), &fake_info(1), &[], None, sa).unwrap();
    match ea.next() {
        CmEvent::NonPeerRejected { conn, reason } => {
            assert_eq!((conn, reason), (c.id(), NonPeerReason::NoListener));
        }
        other => panic!("expected NonPeerRejected(NoListener), got {other:?}"),
    }
    // Not at the first refusal: the connect kept trying for the grace period.
    assert!(started.elapsed() >= cm::NO_LISTENER_GRACE, "rejected after {:?}", started.elapsed());
    // A connect timeout shorter than the grace bounds the tries.
    let (sa, ea) = sink();
    let short = Some(Duration::from_millis(100));
    let _c = cm_a.connect(LOCALHOST, dead_port(), &fake_info(1), &[], short, sa).unwrap();
    match ea.next() {
        CmEvent::NonPeerRejected { reason, .. } => assert_eq!(reason, NonPeerReason::NoListener),
        other => panic!("expected NonPeerRejected(NoListener), got {other:?}"),
    }
    // A listener that went away before answering: its undecided request is refused.
    let cm_b = Cm::new(LOCALHOST).unwrap();
    let (lsink, requests) = sink();
    let listener = cm_b.listen_any(4, lsink).unwrap();
    let (sa, ea) = sink();
    let _c = cm_a.connect(LOCALHOST, listener.conn_qual(), &fake_info(1), &[], None, sa);
    let req = requests.request();
    drop(listener);
    drop(cm_b); // IA closed: the request's socket closes
    match ea.next() {
        CmEvent::NonPeerRejected { reason, .. } => assert_eq!(reason, NonPeerReason::ListenerGone),
        other => panic!("expected NonPeerRejected(ListenerGone), got {other:?}"),
    }
    drop(req);
}

/// A connect that comes a moment before the listener (dtest's client can beat the
/// server's dat_psp_create) is accepted once the listener is up, as IB's CM resends its
/// REQ.
#[test]
fn a_connect_just_before_the_listener_gets_through() {
    let (cm_a, cm_b) = (Cm::new(LOCALHOST).unwrap(), Cm::new(LOCALHOST).unwrap());
    // A fixed port, not a kernel-picked one: a port from the ephemeral range, free when
    // picked, can be bound by a parallel test's listener before ours (its REQ then went
    // to that listener and the test waited out its 30 s for a request).
    let port = 31103;
    let (sa, ea) = sink();
    let _ca = cm_a.connect(LOCALHOST, port, &fake_info(1), b"early", Some(WAIT), sa).unwrap();
    // Let a few tries be refused first.
    std::thread::sleep(Duration::from_millis(50));
    let (lsink, requests) = sink();
    let _listener = cm_b.listen(port, 4, lsink).unwrap();
    let mut req = requests.request();
    assert_eq!(req.private_data(), b"early");
    let (sb, eb) = sink();
    let _cb = req.accept(&fake_info(2), b"", sb).unwrap();
    assert_eq!(ea.established().0.qpn, 2, "the REP of the listener that came up");
    eb.established();
}

#[test]
fn a_listener_that_never_answers_times_out() {
    // The kernel completes the TCP handshake from the backlog; nobody ever reads the REQ.
    let silent = TcpListener::bind((LOCALHOST, 0)).unwrap();
    let port = silent.local_addr().unwrap().port();
    let cm_a = Cm::new(LOCALHOST).unwrap();
    let (sa, ea) = sink();
    let c = cm_a
        .connect(LOCALHOST, port, &fake_info(1), &[1, 2, 3], Some(Duration::from_millis(200)), sa)
        .unwrap();
    match ea.next() {
        CmEvent::TimedOut { conn } => assert_eq!(conn, c.id()),
        other => panic!("expected TimedOut, got {other:?}"),
    }
    drop(silent);
}

#[test]
fn garbage_from_the_listener_is_a_clear_non_peer_reject() {
    let not_cm = TcpListener::bind((LOCALHOST, 0)).unwrap();
    let port = not_cm.local_addr().unwrap().port();
    let cm_a = Cm::new(LOCALHOST).unwrap();
    let (sa, ea) = sink();
    let _c = cm_a.connect(LOCALHOST, port, &fake_info(1), &[], None, sa).unwrap();
    let (mut s, _) = not_cm.accept().unwrap();
    std::io::Write::write_all(&mut s, b"\0\0\0\x08HTTP/1.1").unwrap();
    match ea.next() {
        CmEvent::NonPeerRejected { reason: NonPeerReason::Protocol(why), .. } => {
            assert!(why.contains("not a ferrodat connection manager"), "{why}");
        }
        other => panic!("expected NonPeerRejected(Protocol), got {other:?}"),
    }
}

#[test]
fn conn_qual_in_use_is_refused_until_freed() {
    let cm_b = Cm::new(LOCALHOST).unwrap();
    let first = cm_b.listen(31101, 4, sink().0).unwrap();
    assert_eq!(first.conn_qual(), 31101);
    let e = cm_b.listen(31101, 4, sink().0).unwrap_err();
    assert!(matches!(e, CmError::ConnQualInUse { .. }), "{e:?}");
    assert!(e.to_string().contains("conn_qual 31101 is in use on 127.0.0.1"), "{e}");
    // Another program's socket counts too.
    let other = TcpListener::bind((LOCALHOST, 31102)).unwrap();
    assert!(matches!(cm_b.listen(31102, 4, sink().0), Err(CmError::ConnQualInUse { .. })));
    drop(other);
    let again = cm_b.listen(31102, 4, sink().0).unwrap();
    // Freed: listening again works at once (dropping a listener waits for the close).
    drop(first);
    let relisten = cm_b.listen(31101, 4, sink().0).unwrap();
    assert!(matches!(cm_b.listen(0, 4, sink().0), Err(CmError::Invalid(_))));
    drop((again, relisten));
}

#[test]
fn abrupt_disconnect_and_dropped_handles_are_seen_by_the_peer() {
    let (cm_a, cm_b) = (Cm::new(LOCALHOST).unwrap(), Cm::new(LOCALHOST).unwrap());
    let (lsink, requests) = sink();
    let listener = cm_b.listen_any(4, lsink).unwrap();
    let port = listener.conn_qual();

    // Abrupt from the passive side: both see Disconnected at once.
    let ((ca, ea), (cb, eb)) = establish(&cm_a, port, &requests, &[], &[]);
    cb.disconnect(false).unwrap();
    assert_eq!(eb.disconnected(), DisconnectReason::LocalAbrupt);
    assert_eq!(ea.disconnected(), DisconnectReason::PeerRequest);
    drop((ca, cb));

    // Graceful from the passive side.
    let ((ca, ea), (cb, eb)) = establish(&cm_a, port, &requests, &[], &[]);
    cb.disconnect(true).unwrap();
    assert_eq!(ea.disconnected(), DisconnectReason::PeerRequest);
    assert_eq!(eb.disconnected(), DisconnectReason::LocalGraceful);
    drop((ca, cb));

    // Both at once: each ends up disconnected, exactly once.
    let ((ca, ea), (cb, eb)) = establish(&cm_a, port, &requests, &[], &[]);
    ca.disconnect(true).unwrap();
    cb.disconnect(true).unwrap();
    ea.disconnected();
    eb.disconnected();
    drop((ca, cb));
    assert!(ea.nothing_pending() && eb.nothing_pending());

    // The EP freed (handle dropped): the peer sees a disconnect, the dropper nothing.
    let ((ca, ea), (cb, eb)) = establish(&cm_a, port, &requests, &[], &[]);
    drop(ca);
    assert_eq!(eb.disconnected(), DisconnectReason::PeerRequest);
    drop(cb);
    assert!(matches!(ea.0.recv_timeout(WAIT), Err(RecvTimeoutError::Disconnected)));

    // The IA closed (CM dropped): the peer sees its socket close.
    let ((ca, _ea), (cb, eb)) = establish(&cm_a, port, &requests, &[], &[]);
    drop(cm_a);
    assert_eq!(eb.disconnected(), DisconnectReason::PeerClosed);
    assert!(matches!(ca.disconnect(true), Err(CmError::Closed)));
    drop((ca, cb));
}

#[test]
fn aborting_a_connection_being_set_up() {
    let (cm_a, cm_b) = (Cm::new(LOCALHOST).unwrap(), Cm::new(LOCALHOST).unwrap());
    let (lsink, requests) = sink();
    let listener = cm_b.listen_any(4, lsink).unwrap();
    let (sa, ea) = sink();
    let ca = cm_a.connect(LOCALHOST, listener.conn_qual(), &fake_info(1), &[], None, sa).unwrap();
    let mut req = requests.request();
    ca.disconnect(false).unwrap();
    assert_eq!(ea.disconnected(), DisconnectReason::LocalAbort);
    // The passive side accepts a request whose requester is gone. (Whether its CM saw the
    // close before the accept or the REP then hits a closed or reset socket is a race;
    // the event is the same.)
    let (sb, eb) = sink();
    let _cb = req.accept(&fake_info(2), &[], sb).unwrap();
    match eb.next() {
        CmEvent::AcceptCompletionError { detail, .. } => {
            assert!(detail.contains("peer") || detail.contains("active side"), "{detail}")
        }
        other => panic!("expected AcceptCompletionError, got {other:?}"),
    }
}

/// The re-executed test binary's roles (does nothing unless run as a child).
#[test]
fn child_role() {
    match std::env::var(ROLE_ENV).as_deref() {
        Ok("cm-active") => child_active(),
        Ok("cm-loop") => child_loop(),
        Ok("cm-emfile") => child_emfile(),
        Ok("cm-pollfail") => child_poll_fails(),
        _ => {}
    }
}

/// Child: connect to the parent's conn_qual, report, then wait to be killed.
fn child_active() {
    let port: u16 = std::env::var("CM_TEST_PORT").unwrap().parse().unwrap();
    let cm_a = Cm::new(LOCALHOST).unwrap();
    let (sa, ea) = sink();
    let _c = cm_a.connect(LOCALHOST, port, &fake_info(7), b"child", None, sa).unwrap();
    ea.established();
    say("ESTABLISHED");
    // Stay until killed (or the parent closes our stdin).
    let _ = read_command();
}

#[test]
fn a_killed_peer_process_is_seen_by_the_survivor() {
    let cm_b = Cm::new(LOCALHOST).unwrap();
    let (lsink, requests) = sink();
    let listener = cm_b.listen_any(4, lsink).unwrap();
    let port = listener.conn_qual().to_string();
    let mut child = ChildProc::spawn("child_role", "cm-active", &[("CM_TEST_PORT", &port)]);
    let mut req = requests.request();
    assert_eq!(req.private_data(), b"child");
    let (sb, eb) = sink();
    let _cb = req.accept(&fake_info(8), &[], sb).unwrap();
    eb.established();
    assert_eq!(child.expect("ESTABLISHED"), "");
    child.kill();
    match eb.next() {
        CmEvent::Disconnected { reason, .. } => assert_eq!(reason, DisconnectReason::PeerClosed),
        CmEvent::Broken { detail, .. } => assert!(detail.contains("failed"), "{detail}"),
        other => panic!("expected Disconnected or Broken, got {other:?}"),
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// Child (alone in its process, so the fd count is its own): 200 connections in a row,
/// each accepted, established and disconnected; no socket may be left behind.
fn child_loop() {
    let result = std::panic::catch_unwind(|| {
        let (fds0, threads0) = (open_fds(), threads());
        let (cm_a, cm_b) = (Cm::new(LOCALHOST).unwrap(), Cm::new(LOCALHOST).unwrap());
        let (lsink, requests) = sink();
        let listener = cm_b.listen(31110, 256, lsink).unwrap();
        let settle = |cm: &Cm| {
            let deadline = Instant::now() + WAIT;
            while cm.open_connections() != 0 {
                assert!(Instant::now() < deadline, "connections never closed");
                std::thread::sleep(Duration::from_millis(2));
            }
        };
        let base = open_fds();
        for i in 0..200 {
            let pd = pdata(48, i as u8);
            let ((ca, ea), (cb, eb)) = establish(&cm_a, 31110, &requests, &pd, &pd);
            if i % 2 == 0 {
                ca.disconnect(true).unwrap();
            } else {
                cb.disconnect(true).unwrap();
            }
            ea.disconnected();
            eb.disconnected();
            drop((ca, cb));
            if i == 99 {
                settle(&cm_a);
                settle(&cm_b);
                assert_eq!(open_fds(), base, "fds after 100 connections");
            }
        }
        settle(&cm_a);
        settle(&cm_b);
        let after = open_fds();
        assert_eq!(after, base, "fds after 200 connections");
        assert_eq!(threads(), threads0 + 2, "one thread per CM");
        // The IA closes: each CM's thread, eventfd and listening socket go.
        drop((listener, cm_a, cm_b));
        assert_eq!((open_fds(), threads()), (fds0, threads0), "fds and threads after the CMs");
        after
    });
    match result {
        Ok(n) => say(&format!("OK {n}")),
        Err(_) => say("FAIL the connection loop panicked (see its stderr)"),
    }
}

#[test]
fn two_hundred_connections_leak_no_fds_and_closing_the_cms_frees_everything() {
    let mut child = ChildProc::spawn("child_role", "cm-loop", &[]);
    let line = child.expect("OK");
    assert!(!line.is_empty());
    child.finish();
}

/// Child (alone in its process, as it exhausts its fds): a listener whose accept fails
/// for want of file descriptors must not spin the CM thread; once fds are free again the
/// waiting connection is accepted and its request delivered.
fn child_emfile() {
    let result = std::panic::catch_unwind(|| {
        let cm = Cm::new(LOCALHOST).unwrap();
        let (lsink, requests) = sink();
        let listener = cm.listen_any(4, lsink).unwrap();
        let port = listener.conn_qual();
        // Every fd but one taken, then the one left taken by our own connect: the CM's
        // accept of it finds none.
        let mut hog = Vec::new();
        while let Ok(f) = std::fs::File::open("/dev/null") {
            hog.push(f);
        }
        hog.pop();
        let mut peer = TcpStream::connect((LOCALHOST, port)).unwrap();
        let before = support::cpu_time();
        std::thread::sleep(Duration::from_millis(500));
        let spent = support::cpu_time() - before;
        hog.clear();
        // The request goes through once the listener is polled again.
        write_msg(&mut peer, &Msg::Req { info: fake_info(9), private_data: b"late".to_vec() });
        assert_eq!(requests.request().private_data(), b"late");
        spent
    });
    match result {
        Ok(spent) => say(&format!("OK {}", spent.as_millis())),
        Err(_) => say("FAIL the EMFILE child panicked (see its stderr)"),
    }
}

/// Child: the CM thread's poll fails (more fds to poll than RLIMIT_NOFILE allows gives
/// EINVAL) and the thread stops; a listener dropped after must not wait forever for a
/// thread that is gone, and a connect says the CM is closed.
fn child_poll_fails() {
    let result = std::panic::catch_unwind(|| {
        let cm = Cm::new(LOCALHOST).unwrap();
        let (lsink, _requests) = sink();
        let listener = cm.listen_any(4, lsink).unwrap();
        let port = listener.conn_qual();
        let mut peers: Vec<TcpStream> =
            (0..3).map(|_| TcpStream::connect((LOCALHOST, port)).unwrap()).collect();
        // The CM accepts them: then it polls 5 fds, more than the limit set below.
        let deadline = Instant::now() + WAIT;
        while cm.open_connections() < 3 {
            assert!(Instant::now() < deadline, "the CM never accepted the connections");
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: reads, then sets, this process's fd limits through a live struct.
        let saved = unsafe {
            assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
            let saved = limit;
            limit.rlim_cur = 2;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
            saved
        };
        // A byte on a connection wakes the thread; its next poll fails. (Generous: on a
        // loaded two-core host the thread may wait for a core.)
        peers[0].write_all(b"x").unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(listener);
            let _ = tx.send(());
        });
        let returned = rx.recv_timeout(Duration::from_secs(5)).is_ok();
        // SAFETY: restores the limits read above.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &saved) }, 0);
        let (s3, _e3) = sink();
        let closed = matches!(
            cm.connect(LOCALHOST, port, &fake_info(4), b"", None, s3),
            Err(CmError::Closed)
        );
        (returned, closed)
    });
    match result {
        Ok((true, true)) => say("OK"),
        Ok((returned, closed)) => {
            say(&format!("FAIL listener drop returned: {returned}, connect closed: {closed}"))
        }
        Err(_) => say("FAIL the poll-failure child panicked (see its stderr)"),
    }
}

#[test]
fn after_the_cm_thread_stops_on_a_poll_failure_nothing_waits_for_it() {
    let mut child = ChildProc::spawn("child_role", "cm-pollfail", &[]);
    child.expect("OK");
    child.finish();
}

/// A listener that runs out of file descriptors waits (100 ms at a time) instead of
/// spinning the CM thread on the socket that stays readable (it used a whole core and
/// printed the error hundreds of thousands of times a second), and accepts the waiting
/// connection once fds are free again.
#[test]
fn a_listener_out_of_fds_waits_instead_of_spinning() {
    let mut child = ChildProc::spawn("child_role", "cm-emfile", &[]);
    let line = child.expect("OK");
    let spent_ms: u64 = line.trim().parse().unwrap();
    assert!(spent_ms < 150, "the CM thread used {spent_ms} ms of CPU in 500 ms");
    child.finish();
}

/// Writes one CM message on a raw socket (the test playing an active CM by hand).
fn write_msg(sock: &mut TcpStream, msg: &Msg) {
    sock.write_all(&msg.encode().unwrap()).unwrap();
}

/// Reads one whole CM message from a raw socket.
fn read_msg(sock: &mut TcpStream) -> Msg {
    sock.set_read_timeout(Some(WAIT)).unwrap();
    let mut buf = Vec::new();
    loop {
        if let Some((msg, _)) = wire::decode_frame(&buf).unwrap() {
            return msg;
        }
        let mut chunk = [0u8; 512];
        let n = sock.read(&mut chunk).expect("a CM message within the wait");
        assert!(n > 0, "the CM closed the socket instead of answering");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A peer that brings up many connections and then tears them all down (dtestcm) sends
/// every RTU before any DREQ. When the passive CM finds RTUs and DREQs waiting on
/// different connections at once, it must report the ESTABLISHEDs first: dtestcm's
/// server counts 1000 connection events as "established" before it waits for the
/// disconnects, and a DISCONNECTED reported ahead of a pending ESTABLISHED is lost to it.
#[test]
fn rtus_waiting_beside_dreqs_are_reported_first() {
    const EACH: usize = 8;
    let cm_b = Cm::new(LOCALHOST).unwrap();
    let cm_a = Cm::new(LOCALHOST).unwrap();
    // The listener's sink holds the passive CM thread while the test lines up the
    // messages, when the request carrying BLOCK comes in.
    const BLOCK: &[u8] = b"hold the CM thread";
    let (req_tx, requests) = channel();
    let (held_tx, held) = channel::<()>();
    let (release, release_rx) = channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let lsink: Sink = Arc::new(move |ev: CmEvent| {
        if let CmEvent::ConnRequest(r) = &ev
            && r.private_data() == BLOCK
        {
            let _ = held_tx.send(());
            let _ = release_rx.lock().unwrap().recv_timeout(WAIT);
        }
        let _ = req_tx.send(ev);
    });
    let requests = Events(requests);
    let listener = cm_b.listen_any(64, lsink).unwrap();
    let port = listener.conn_qual();

    // Every passive event of the test, in the order the CM reported them.
    let (order_tx, order) = channel::<(&'static str, CmEvent)>();
    let tagged = |tag: &'static str| -> Sink {
        let tx = Mutex::new(order_tx.clone());
        Arc::new(move |ev| drop(tx.lock().unwrap().send((tag, ev))))
    };

    // Group "down": established, to be disconnected by their (real) active CM.
    let mut down = Vec::new();
    for i in 0..EACH {
        let (sa, ea) = sink();
        let ca = cm_a.connect(LOCALHOST, port, &fake_info(i as u32), &[], Some(WAIT), sa).unwrap();
        let cb =
            requests.request().accept(&fake_info(0x100 + i as u32), &[], tagged("down")).unwrap();
        ea.established();
        down.push((ca, ea, cb));
    }
    for _ in 0..EACH {
        match order.recv_timeout(WAIT).unwrap() {
            ("down", CmEvent::Established { .. }) => {}
            other => panic!("expected a passive Established, got {other:?}"),
        }
    }
    // Group "up": REQ sent and REP received by hand; the RTU is still to come.
    let mut up = Vec::new();
    for i in 0..EACH {
        let mut s = TcpStream::connect((LOCALHOST, port)).unwrap();
        write_msg(&mut s, &Msg::Req { info: fake_info(0x200 + i as u32), private_data: vec![] });
        let cb =
            requests.request().accept(&fake_info(0x300 + i as u32), &[], tagged("up")).unwrap();
        assert!(matches!(read_msg(&mut s), Msg::Rep { .. }));
        up.push((s, cb));
    }

    // Hold the passive CM thread, then line up the RTUs and, after them, the DREQs.
    let mut blocker = TcpStream::connect((LOCALHOST, port)).unwrap();
    write_msg(&mut blocker, &Msg::Req { info: fake_info(0x400), private_data: BLOCK.to_vec() });
    held.recv_timeout(WAIT).expect("the passive CM took the blocking request");
    for (s, _) in &mut up {
        write_msg(s, &Msg::Rtu);
    }
    for (ca, ea, _) in &down {
        ca.disconnect(false).unwrap();
        // Reported once the DREQ is written: it is in the passive CM's socket now.
        assert_eq!(ea.disconnected(), DisconnectReason::LocalAbrupt);
    }
    release.send(()).unwrap();

    let reported: Vec<(&str, bool)> = (0..2 * EACH)
        .map(|_| match order.recv_timeout(WAIT).expect("a passive event") {
            (tag, CmEvent::Established { .. }) => (tag, true),
            (tag, CmEvent::Disconnected { .. }) => (tag, false),
            other => panic!("unexpected passive event {other:?}"),
        })
        .collect();
    let expected: Vec<(&str, bool)> =
        [("up", true); EACH].into_iter().chain([("down", false); EACH]).collect();
    assert_eq!(reported, expected, "every RTU's Established before the DREQs' Disconnected");
    drop((up, down, blocker, listener));
}

/// A listener whose accepted connections report, in one channel, every passive event
/// tagged with the group the test put the connection in.
struct Ordered {
    listener: cm::Listener,
    requests: Events,
    order_tx: Sender<(&'static str, CmEvent)>,
    order: Receiver<(&'static str, CmEvent)>,
}

impl Ordered {
    fn new(cm_b: &Cm) -> Ordered {
        let (lsink, requests) = sink();
        let listener = cm_b.listen_any(64, lsink).unwrap();
        let (order_tx, order) = channel();
        Ordered { listener, requests, order_tx, order }
    }

    fn tagged(&self, tag: &'static str) -> Sink {
        let tx = Mutex::new(self.order_tx.clone());
        Arc::new(move |ev| drop(tx.lock().unwrap().send((tag, ev))))
    }

    /// A connection from `cm_a`, established on both sides; its passive events say "down".
    fn established(&self, cm_a: &Cm, qpn: u32) -> (cm::Connection, Events, cm::Connection) {
        let (sa, ea) = sink();
        let port = self.listener.conn_qual();
        let ca = cm_a.connect(LOCALHOST, port, &fake_info(qpn), &[], Some(WAIT), sa).unwrap();
        let cb = self
            .requests
            .request()
            .accept(&fake_info(qpn | 0x100), &[], self.tagged("down"))
            .unwrap();
        ea.established();
        assert!(matches!(self.next(), ("down", CmEvent::Established { .. })));
        (ca, ea, cb)
    }

    /// A connection from 127.0.0.1 played by hand up to the REP: the passive side waits
    /// for its RTU. Its passive events say "up".
    fn waiting_for_rtu(&self, qpn: u32) -> (TcpStream, cm::Connection) {
        let mut s = TcpStream::connect((LOCALHOST, self.listener.conn_qual())).unwrap();
        write_msg(&mut s, &Msg::Req { info: fake_info(qpn), private_data: vec![] });
        let cb = self
            .requests
            .request()
            .accept(&fake_info(qpn | 0x100), &[], self.tagged("up"))
            .unwrap();
        assert!(matches!(read_msg(&mut s), Msg::Rep { .. }));
        (s, cb)
    }

    fn next(&self) -> (&'static str, CmEvent) {
        self.order.recv_timeout(WAIT).expect("a passive event within the wait")
    }
}

fn hold_config(teardown_hold: Duration) -> cm::CmConfig {
    cm::CmConfig { teardown_hold, ..cm::CmConfig::default() }
}

/// The same peer's RTU can also reach the passive CM in a later poll round than a DREQ it
/// wrote after it (loopback packets delivered on two CPUs). The DREQ, and the EOF of the
/// abrupt disconnect behind it, wait for that RTU: ESTABLISHED first, then DISCONNECTED
/// with the peer's reason.
#[test]
fn an_rtu_arriving_after_a_dreq_of_the_same_peer_is_still_reported_first() {
    let cm_b = Cm::with_config(LOCALHOST, hold_config(WAIT)).unwrap();
    let cm_a = Cm::new(LOCALHOST).unwrap();
    let p = Ordered::new(&cm_b);
    let (ca, ea, down) = p.established(&cm_a, 1);
    let (mut s, up) = p.waiting_for_rtu(2);

    ca.disconnect(false).unwrap();
    assert_eq!(ea.disconnected(), DisconnectReason::LocalAbrupt);
    // Give the passive CM time to read the DREQ and the EOF before the RTU exists. (Not a
    // timed check: a slower machine only makes the test pass without the late arrival.)
    std::thread::sleep(Duration::from_millis(200));
    assert!(p.order.try_recv().is_err(), "the DISCONNECTED waits for the RTU");
    write_msg(&mut s, &Msg::Rtu);

    assert!(matches!(p.next(), ("up", CmEvent::Established { .. })));
    match p.next() {
        ("down", CmEvent::Disconnected { reason, .. }) => {
            assert_eq!(reason, DisconnectReason::PeerRequest)
        }
        other => panic!("expected the held Disconnected, got {other:?}"),
    }
    drop((s, up, down, p));
}

/// A peer that never sends its RTU delays its other DISCONNECTEDs by the hold at most; the
/// graceful disconnect still gets its DREP, and the late RTU still establishes.
#[test]
fn a_missing_rtu_delays_the_same_peers_disconnect_only_by_the_hold() {
    disconnect_beside_a_missing_rtu(Duration::from_millis(300), LOCALHOST, "once the hold ran out");
}

/// Only the DREQs of the peer whose RTU is missing wait: another peer address's disconnect
/// is reported at once, even with a hold longer than the test's wait.
#[test]
fn a_missing_rtu_does_not_hold_another_peers_disconnect() {
    let other_peer = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    disconnect_beside_a_missing_rtu(2 * WAIT, other_peer, "at once");
}

/// A connection from `active` disconnected gracefully while one from 127.0.0.1 waits for
/// its RTU, on a passive CM holding DREQs up to `teardown_hold`: the DISCONNECTED comes
/// (`when`, for the message), the DREP reaches the active side, and the RTU sent then
/// still establishes the other.
fn disconnect_beside_a_missing_rtu(teardown_hold: Duration, active: IpAddr, when: &str) {
    let cm_b = Cm::with_config(LOCALHOST, hold_config(teardown_hold)).unwrap();
    let cm_a = Cm::new(active).unwrap();
    let p = Ordered::new(&cm_b);
    let (ca, ea, down) = p.established(&cm_a, 1);
    let (mut s, up) = p.waiting_for_rtu(2);

    ca.disconnect(true).unwrap();
    match p.next() {
        ("down", CmEvent::Disconnected { reason, .. }) => {
            assert_eq!(reason, DisconnectReason::PeerRequest)
        }
        other => panic!("expected the Disconnected {when}, got {other:?}"),
    }
    assert_eq!(ea.disconnected(), DisconnectReason::LocalGraceful, "the DREP came");
    write_msg(&mut s, &Msg::Rtu);
    assert!(matches!(p.next(), ("up", CmEvent::Established { .. })));
    drop((s, up, down, p));
}

/// A held DREQ goes as soon as the connection it waits for is given up (here the passive
/// consumer drops the connection whose RTU is missing), not when the hold runs out.
#[test]
fn a_held_dreq_goes_when_the_awaited_connection_is_dropped() {
    let cm_b = Cm::with_config(LOCALHOST, hold_config(2 * WAIT)).unwrap();
    let cm_a = Cm::new(LOCALHOST).unwrap();
    let p = Ordered::new(&cm_b);
    let (ca, ea, down) = p.established(&cm_a, 1);
    let (s, up) = p.waiting_for_rtu(2);

    ca.disconnect(true).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(p.order.try_recv().is_err(), "held while the RTU may come");
    drop(up);
    match p.next() {
        ("down", CmEvent::Disconnected { reason, .. }) => {
            assert_eq!(reason, DisconnectReason::PeerRequest)
        }
        other => {
            panic!("expected the Disconnected once the other connection was dropped, got {other:?}")
        }
    }
    assert_eq!(ea.disconnected(), DisconnectReason::LocalGraceful, "the DREP came");
    drop((s, down, p));
}

fn capped_config(max_unrequested: usize, unrequested_grace: Duration) -> cm::CmConfig {
    cm::CmConfig { max_unrequested, unrequested_grace, ..cm::CmConfig::default() }
}

/// True once the peer closed `sock` (end of stream, or a reset) within `within`; false if
/// it is still open then.
fn closed_by_peer(sock: &mut TcpStream, within: Duration) -> bool {
    sock.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 64];
    match sock.read(&mut b) {
        Ok(0) => true,
        Ok(_) => panic!("the CM sent something on a connection that sent it nothing"),
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

/// TCP connections that never send a request cannot hold the listener's process's file
/// descriptors: past `max_unrequested`, the oldest that waited past the grace is closed,
/// and a real request behind them still gets through.
#[test]
fn idle_connections_past_the_cap_are_closed_oldest_first_and_a_request_gets_through() {
    let cm_a = Cm::new(LOCALHOST).unwrap();
    let cm_b = Cm::with_config(LOCALHOST, capped_config(4, Duration::from_millis(200))).unwrap();
    let (lsink, requests) = sink();
    let listener = cm_b.listen_any(8, lsink).unwrap();
    let port = listener.conn_qual();
    let mut idle: Vec<TcpStream> =
        (0..12).map(|_| TcpStream::connect((LOCALHOST, port)).unwrap()).collect();
    let (sa, _ea) = sink();
    let _real = cm_a.connect(LOCALHOST, port, &fake_info(9), b"real", None, sa).unwrap();
    let request = requests.request();
    assert_eq!(request.private_data(), b"real");
    // Made room for the 8 that followed them, then for the real one: the first 9 idle
    // connections were closed, oldest first.
    for (i, sock) in idle.iter_mut().take(9).enumerate() {
        assert!(closed_by_peer(sock, WAIT), "idle connection {i} is still open");
    }
    assert!(cm_b.open_connections() <= 4 + 1, "{} connections held", cm_b.open_connections());
}

/// A burst of real connections far past the cap all get through: they are young, so none
/// is closed; accepting waits while the cap is reached and goes on as their requests come.
#[test]
fn a_burst_of_real_connections_past_the_cap_all_get_through() {
    let cm_a = Cm::new(LOCALHOST).unwrap();
    let cm_b = Cm::with_config(LOCALHOST, capped_config(2, Duration::from_secs(60))).unwrap();
    let (lsink, requests) = sink();
    let listener = cm_b.listen_any(64, lsink).unwrap();
    let port = listener.conn_qual();
    let mut conns = Vec::new();
    for i in 0..40u8 {
        let (sa, ea) = sink();
        conns.push((cm_a.connect(LOCALHOST, port, &fake_info(u32::from(i)), &[i], None, sa), ea));
    }
    let mut seen: Vec<u8> = (0..40).map(|_| requests.request().private_data()[0]).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..40).collect::<Vec<u8>>());
    for (c, _) in &conns {
        assert!(c.is_ok());
    }
}

/// The active side could not bring its QP up on the REP (on hardware: a GID it cannot
/// resolve): its sink refuses the reply, the peer's accept fails instead of completing,
/// and the refusal is only for the sink handling `Established`.
#[test]
fn a_reply_the_active_side_refuses_fails_the_peers_accept() {
    let (cm_a, cm_b) = (Cm::new(LOCALHOST).unwrap(), Cm::new(LOCALHOST).unwrap());
    let (lsink, requests) = sink();
    let listener = cm_b.listen_any(1, lsink).unwrap();
    let port = listener.conn_qual();
    let slot: Arc<Mutex<Option<cm::Connection>>> = Arc::new(Mutex::new(None));
    let (tx, active_events) = channel();
    let refusing: Sink = Arc::new({
        let slot = slot.clone();
        move |ev: CmEvent| {
            if matches!(ev, CmEvent::Established { .. })
                && let Some(c) = slot.lock().unwrap().as_ref()
            {
                c.refuse_reply().expect("refusing from the sink handling Established");
            }
            let _ = tx.send(ev);
        }
    });
    let ca = cm_a.connect(LOCALHOST, port, &fake_info(0x100), &[], Some(WAIT), refusing).unwrap();
    assert!(ca.refuse_reply().is_err(), "only the sink handling Established may refuse");
    *slot.lock().unwrap() = Some(ca);
    let mut req = requests.request();
    let (sb, passive) = sink();
    let _cb = req.accept(&fake_info(0x200), &[], sb).unwrap();
    match passive.next() {
        CmEvent::AcceptCompletionError { .. } => {}
        other => panic!("expected AcceptCompletionError, got {other:?}"),
    }
    let active = Events(active_events);
    active.established();
    // The refused connection says nothing more to its owner.
    std::thread::sleep(Duration::from_millis(200));
    assert!(active.nothing_pending());
}
