//! Single-process data-path tests where a second process adds nothing: the post-time
//! errors (refused requests leave the queue as it was) and the flush on ERR.

mod support;

use ferrodat_driver::completion::{WcOpcode, WcStatus};
use ferrodat_driver::work_request::{
    Payload, PostError, PostErrorReason, RecvWr, Remote, SendFlags, SendOp, SendWr, Sge, WorkQueue,
};
use ferrodat_driver::{Access, Context, Cq, Pd, Qp, QpAttr, QpCaps, Srq};
use support::*;

fn open(tag: &str) -> (Context, TestFabric) {
    let fabric = TestFabric::new(tag);
    let ctx = Context::open_softhca(device(fabric.dir(), false)).expect("open softhca0");
    (ctx, fabric)
}

/// Two QPs of `pd` on one CQ, connected to each other on port 1 (PSNs 1 and 2).
fn loopback_pair<'m>(ctx: &Context, pd: &Pd, c: &Cq, caps: QpCaps) -> (Qp<'m>, Qp<'m>) {
    let mut a = new_qp(pd, c, c, None, caps);
    let mut b = new_qp(pd, c, c, None, caps);
    let gid = ctx.source_gid(1).unwrap().1;
    connect_qp(&mut a, gid, b.qpn(), 1, 2, 7);
    connect_qp(&mut b, gid, a.qpn(), 2, 1, 7);
    (a, b)
}

/// A refused post names its queue by verb, the errno rdma-core's mlx5 provider would give,
/// and (in its text) the verb, the errno's name and `text`.
fn says(e: &PostError, queue: WorkQueue, errno: i32, text: &str) {
    assert_eq!((e.queue, e.errno()), (queue, errno), "{e}");
    let shown = e.to_string();
    assert!(shown.starts_with(queue.verb()), "{shown}");
    assert!(shown.contains(text), "{shown} lacks {text:?}");
}

#[test]
fn malformed_requests_are_refused_and_nothing_is_posted() {
    let (ctx, _fabric) = open("posterr");
    let pd = ferrodat_driver::Pd::new(&ctx).unwrap();
    let mr = pd.alloc_mr(4096, Access::ALL).unwrap();
    let mut c = cq(&ctx, 32);
    let caps = QpCaps { max_send_wr: 4, max_recv_wr: 4, ..Default::default() };
    let (mut a, mut b) = loopback_pair(&ctx, &pd, &c, caps);
    let space = a.send_space();
    let remote = Remote { addr: mr.addr() + 1024, rkey: mr.rkey() };
    let eight = [mr.sge(0, 8).unwrap()];
    let nine = [mr.sge(0, 9).unwrap()];
    let cases = [
        (SendOp::FetchAdd { remote, add: 1 }, Payload::Sges(&nine), PostErrorReason::BadAtomic),
        (
            SendOp::CompareSwap {
                remote: Remote { addr: remote.addr + 4, ..remote },
                compare: 0,
                swap: 1,
            },
            Payload::Sges(&eight),
            PostErrorReason::BadAtomic,
        ),
        (SendOp::FetchAdd { remote, add: 1 }, Payload::EMPTY, PostErrorReason::BadAtomic),
        (SendOp::RdmaRead(remote), Payload::Inline(b"x"), PostErrorReason::InlineNotAllowed),
    ];
    for (op, payload, reason) in cases {
        let e = a.post_send(&[SendWr::new(1, op, payload)]).unwrap_err();
        assert_eq!((e.index, e.reason), (0, reason), "{op:?}");
        says(&e, WorkQueue::Send, libc::EINVAL, "post_send: work request 0 refused (EINVAL)");
        assert_eq!(a.send_space(), space, "{op:?}: nothing posted");
    }
    // The receive queue: full after its capacity, refused without a trace.
    let cap = a.geometry().rq_wqe_cnt as u64;
    let sge = [mr.sge(2048, 64).unwrap()];
    let wrs: Vec<RecvWr> = (0..=cap).map(|i| RecvWr { wr_id: 100 + i, sges: &sge }).collect();
    let e = a.post_recv(&wrs).unwrap_err();
    assert_eq!(
        (e.index, e.reason),
        (cap as usize, PostErrorReason::QueueFull { capacity: cap as u32 })
    );
    // As mlx5_post_recv: ENOMEM, and the hint is about receives, not about signalling sends.
    says(&e, WorkQueue::Receive, libc::ENOMEM, "post_recv: work request");
    assert!(e.to_string().contains("receive queue is full"), "{e}");
    assert!(!e.to_string().contains("signal"), "{e}");
    // Nothing of the refused requests ran: a SEND from b lands in a's first receive, and
    // a's next send completion is the next request posted.
    mr.write(0, b"after the errors").unwrap();
    b.post_send(&[SendWr::new(7, SendOp::Send, Payload::Sges(&[mr.sge(0, 16).unwrap()]))]).unwrap();
    a.post_send(&[SendWr::new(8, SendOp::Nop, Payload::EMPTY)]).unwrap();
    let mut got = poll_n(&mut c, 3);
    got.sort_by_key(|w| w.wr_id);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!((got[0].wr_id, got[0].opcode, got[0].byte_len), (7, WcOpcode::Send, 0));
    assert_eq!((got[1].wr_id, got[1].opcode), (8, WcOpcode::Nop));
    assert_eq!((got[2].wr_id, got[2].opcode, got[2].byte_len), (100, WcOpcode::Recv, 16));
    assert!(got.iter().all(|w| w.is_ok()), "{got:?}");
    let mut back = [0u8; 16];
    mr.read(2048, &mut back).unwrap();
    assert_eq!(&back, b"after the errors");

    // A QP on an SRQ has no receive queue of its own; the SRQ refuses past its size.
    let srq = Srq::new(&pd, 3, 1).unwrap();
    let mut s = new_qp(&pd, &c, &c, Some(&srq), caps);
    let e = s.post_recv(&[RecvWr { wr_id: 1, sges: &sge }]).unwrap_err();
    assert_eq!(e.reason, PostErrorReason::NoReceiveQueue);
    says(&e, WorkQueue::Receive, libc::ENOMEM, "post receives to the SRQ");
    let max = srq.max_wr() as u64;
    let wrs: Vec<RecvWr> = (0..=max).map(|i| RecvWr { wr_id: i, sges: &sge }).collect();
    let e = srq.post_recv(&wrs).unwrap_err();
    assert_eq!(e.index as u64, max);
    assert!(matches!(e.reason, PostErrorReason::QueueFull { .. }), "{e}");
    says(&e, WorkQueue::SharedReceive, libc::ENOMEM, "post_srq_recv: work request");
    assert_eq!(srq.outstanding() as u64, max);
    let sges2 = [mr.sge(0, 8).unwrap(), mr.sge(8, 8).unwrap()];
    let e = srq.post_recv(&[RecvWr { wr_id: 9, sges: &sges2 }]).unwrap_err();
    assert!(matches!(e.reason, PostErrorReason::TooManySges { given: 2, max: 1 }), "{e}");
    // Too many entries: EINVAL for a receive, as mlx5_post_srq_recv and mlx5_post_recv say.
    says(&e, WorkQueue::SharedReceive, libc::EINVAL, "2 scatter/gather entries");

    // A receive-only QP (max_send_wr 0) has no send queue: every post is refused before
    // anything is written (its geometry has no send blocks); its receives still go.
    let receive_only = QpCaps { max_send_wr: 0, max_recv_wr: 4, ..Default::default() };
    let mut r = new_qp(&pd, &c, &c, None, receive_only);
    assert_eq!(r.geometry().sq_wqe_cnt, 0);
    for (op, payload) in [
        (SendOp::Send, Payload::EMPTY),
        (SendOp::Nop, Payload::EMPTY),
        (SendOp::Send, Payload::Inline(b"x")),
        (SendOp::RdmaWrite(remote), Payload::Sges(&eight)),
    ] {
        let e = r.post_send(&[SendWr::new(1, op, payload)]).unwrap_err();
        assert_eq!((e.index, e.reason), (0, PostErrorReason::NoSendQueue), "{op:?}");
        assert!(e.to_string().contains("no send queue"), "{e}");
    }
    assert_eq!(r.send_space(), 0);
    r.post_recv(&[RecvWr { wr_id: 1, sges: &sge }]).unwrap();
}

#[test]
fn moving_to_err_flushes_every_posted_receive_with_its_wr_id() {
    let (ctx, _fabric) = open("flush");
    let pd = ferrodat_driver::Pd::new(&ctx).unwrap();
    let mr = pd.alloc_mr(4096, Access::ALL).unwrap();
    let mut c = cq(&ctx, 64);
    let caps = QpCaps { max_send_wr: 8, max_recv_wr: 8, ..Default::default() };
    let (mut a, mut b) = loopback_pair(&ctx, &pd, &c, caps);
    let n = a.geometry().rq_wqe_cnt as u64;
    // Fill the RQ, consume half, fill it again: the flush starts mid-ring and wraps.
    let sges: Vec<_> = (0..n).map(|i| [mr.sge(64 * i as usize, 64).unwrap()]).collect();
    for round in 0..2 {
        let count = if round == 0 { n } else { n / 2 };
        let wrs: Vec<RecvWr> = (0..count)
            .map(|i| RecvWr { wr_id: 1000 * round + i, sges: &sges[i as usize] })
            .collect();
        a.post_recv(&wrs).unwrap();
        if round == 0 {
            for i in 0..n / 2 {
                b.post_send(&[SendWr::new(i, SendOp::Send, Payload::Inline(b"hi"))]).unwrap();
            }
            let got = poll_n(&mut c, 2 * (n / 2) as usize);
            assert_eq!(got.len() as u64, n, "{got:?}");
        }
    }
    // Outstanding now: receives n/2..n of round 0, then n/2 of round 1 (the ring full).
    let e = a.post_recv(&[RecvWr { wr_id: 9, sges: &sges[0] }]).unwrap_err();
    assert_eq!(e.reason, PostErrorReason::QueueFull { capacity: n as u32 });
    a.to_error().unwrap();
    let got = poll_n(&mut c, n as usize);
    let ids: Vec<u64> = got.iter().map(|w| w.wr_id).collect();
    let want: Vec<u64> = (n / 2..n).chain(1000..1000 + n / 2).collect();
    assert_eq!(ids, want);
    for w in &got {
        assert_eq!(
            (w.status, w.opcode, w.qpn),
            (WcStatus::Flushed, WcOpcode::Recv, a.qpn()),
            "{w:?}"
        );
    }
    assert!(poll_now(&mut c).is_empty());
}

/// On hardware a QP in ERR flushes a receive posted to it without any doorbell (mlx5 has
/// none for receives: mlx5_ib's drain posts one after moving the QP to ERR and waits for
/// its CQE). Polling finds the flush, once (in-process softhca already at the next poll;
/// on the kernel channel, softhca's doorbell-watching thread does it a moment later).
#[test]
fn a_receive_posted_in_err_is_flushed_by_the_next_poll() {
    let (ctx, _fabric) = open("errrecv");
    let pd = ferrodat_driver::Pd::new(&ctx).unwrap();
    let mr = pd.alloc_mr(4096, Access::ALL).unwrap();
    let mut c = cq(&ctx, 64);
    let caps = QpCaps { max_send_wr: 8, max_recv_wr: 8, ..Default::default() };
    let (mut a, mut b) = loopback_pair(&ctx, &pd, &c, caps);
    a.to_error().unwrap();
    assert!(poll_now(&mut c).is_empty(), "nothing was outstanding");
    let sge = [mr.sge(0, 64).unwrap()];

    a.post_recv(&[RecvWr { wr_id: 31, sges: &sge }]).unwrap();
    let got = poll_n(&mut c, 1);
    assert_eq!(got.len(), 1, "the flush of the receive posted in ERR");
    assert_eq!(
        (got[0].wr_id, got[0].status, got[0].opcode, got[0].qpn),
        (31, WcStatus::Flushed, WcOpcode::Recv, a.qpn())
    );
    // Later receives too, each once, in order.
    a.post_recv(&[RecvWr { wr_id: 32, sges: &sge }, RecvWr { wr_id: 33, sges: &sge }]).unwrap();
    let ids: Vec<(u64, WcStatus)> = poll_n(&mut c, 2).iter().map(|w| (w.wr_id, w.status)).collect();
    assert_eq!(ids, [(32, WcStatus::Flushed), (33, WcStatus::Flushed)]);
    assert!(poll_now(&mut c).is_empty());
    // A send posted in ERR is flushed at its doorbell, unsignalled or not.
    a.post_send(&[SendWr::new(34, SendOp::Nop, Payload::EMPTY).flags(SendFlags::NONE)]).unwrap();
    let got = poll_now(&mut c);
    assert_eq!((got.len(), got[0].wr_id, got[0].status), (1, 34, WcStatus::Flushed), "{got:?}");

    // RESET forgets the queues without completions; connected again, the QP works from
    // its first entries.
    a.reset().unwrap();
    b.reset().unwrap();
    assert!(poll_now(&mut c).is_empty(), "RESET writes no completion");
    let gid = ctx.source_gid(1).unwrap().1;
    connect_qp(&mut a, gid, b.qpn(), 10, 20, 7);
    connect_qp(&mut b, gid, a.qpn(), 20, 10, 7);
    a.post_recv(&[RecvWr { wr_id: 40, sges: &sge }]).unwrap();
    mr.write(1024, b"after the reset").unwrap();
    let msg = [mr.sge(1024, 15).unwrap()];
    b.post_send(&[SendWr::new(41, SendOp::Send, Payload::Sges(&msg))]).unwrap();
    let mut got = poll_n(&mut c, 2);
    got.sort_by_key(|w| w.wr_id);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!((got[0].wr_id, got[0].status, got[0].byte_len), (40, WcStatus::Success, 15));
    assert_eq!((got[1].wr_id, got[1].status), (41, WcStatus::Success));
    let mut back = [0u8; 15];
    mr.read(0, &mut back).unwrap();
    assert_eq!(&back, b"after the reset");
}

/// The receives of an SRQ belong to the SRQ, not to one QP: a QP on it entering ERR
/// flushes none of them, and another QP on the SRQ still receives into them.
#[test]
fn a_qp_entering_err_leaves_the_srq_receives_alone() {
    let (ctx, _fabric) = open("errsrq");
    let pd = ferrodat_driver::Pd::new(&ctx).unwrap();
    let mr = pd.alloc_mr(4096, Access::ALL).unwrap();
    let mut c = cq(&ctx, 64);
    let caps = QpCaps { max_send_wr: 8, max_recv_wr: 8, ..Default::default() };
    let srq = Srq::new(&pd, 7, 1).unwrap();
    let mut doomed = new_qp(&pd, &c, &c, Some(&srq), caps);
    let mut survivor = new_qp(&pd, &c, &c, Some(&srq), caps);
    let mut sender = new_qp(&pd, &c, &c, None, caps);
    let gid = ctx.source_gid(1).unwrap().1;
    connect_qp(&mut doomed, gid, sender.qpn(), 1, 2, 7);
    connect_qp(&mut survivor, gid, sender.qpn(), 3, 4, 7);
    connect_qp(&mut sender, gid, survivor.qpn(), 4, 3, 7);
    srq.post_recv(&[RecvWr { wr_id: 50, sges: &[mr.sge(0, 64).unwrap()] }]).unwrap();
    doomed.to_error().unwrap();
    assert!(poll_now(&mut c).is_empty(), "the SRQ's receive is not flushed");
    srq.post_recv(&[RecvWr { wr_id: 51, sges: &[mr.sge(64, 64).unwrap()] }]).unwrap();
    assert!(poll_now(&mut c).is_empty(), "nor one posted to the SRQ after the ERR");
    mr.write(1024, b"still there").unwrap();
    let msg = [mr.sge(1024, 11).unwrap()];
    sender.post_send(&[SendWr::new(52, SendOp::Send, Payload::Sges(&msg))]).unwrap();
    let mut got = poll_n(&mut c, 2);
    got.sort_by_key(|w| w.wr_id);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        (got[0].wr_id, got[0].status, got[0].qpn, got[0].byte_len),
        (50, WcStatus::Success, survivor.qpn(), 11)
    );
    assert_eq!((got[1].wr_id, got[1].status), (52, WcStatus::Success));
    assert!(poll_now(&mut c).is_empty());
}

#[test]
fn srq_entries_of_a_destroyed_qps_unpolled_receives_go_back_to_the_srq() {
    let (ctx, _fabric) = open("srqclean");
    let pd = ferrodat_driver::Pd::new(&ctx).unwrap();
    let mr = pd.alloc_mr(4096, Access::ALL).unwrap();
    let (mut send_cq, mut recv_cq) = (cq(&ctx, 32), cq(&ctx, 32));
    let srq = Srq::new(&pd, 4, 1).unwrap();
    let caps = QpCaps { max_send_wr: 8, max_recv_wr: 4, ..Default::default() };
    let mut a = new_qp(&pd, &send_cq, &send_cq, None, caps);
    let mut b = new_qp(&pd, &recv_cq, &recv_cq, Some(&srq), caps);
    let gid = ctx.source_gid(1).unwrap().1;
    connect_qp(&mut a, gid, b.qpn(), 1, 2, 7);
    connect_qp(&mut b, gid, a.qpn(), 2, 1, 7);
    // Polled once, so the receive CQ knows b before its completions arrive.
    assert!(poll_now(&mut recv_cq).is_empty());
    let max = srq.max_wr() as u64;
    let sge = [mr.sge(0, 64).unwrap()];
    let fill: Vec<RecvWr> = (0..max).map(|i| RecvWr { wr_id: i, sges: &sge }).collect();
    srq.post_recv(&fill).unwrap();

    // Three SENDs land in three SRQ entries; their completions wait, unpolled, when b goes.
    for i in 0..3 {
        a.post_send(&[SendWr::new(10 + i, SendOp::Send, Payload::Inline(b"x"))]).unwrap();
    }
    let acked = poll_n(&mut send_cq, 3);
    assert!(acked.len() == 3 && acked.iter().all(|w| w.is_ok()), "{acked:?}");
    assert_eq!(srq.outstanding() as u64, max);
    drop(b);

    // The destroyed QP's receive completions are skipped, and the entries they used are
    // free again: the SRQ takes exactly three more.
    assert!(poll_now(&mut recv_cq).is_empty(), "nothing reported for a destroyed QP");
    assert_eq!(srq.outstanding() as u64, max - 3);
    let more: Vec<RecvWr> = (0..3).map(|i| RecvWr { wr_id: 100 + i, sges: &sge }).collect();
    srq.post_recv(&more).unwrap();
    let e = srq.post_recv(&[RecvWr { wr_id: 200, sges: &sge }]).unwrap_err();
    assert!(matches!(e.reason, PostErrorReason::QueueFull { .. }), "{e}");
}

#[test]
fn a_destroyed_qps_user_index_goes_to_the_next_qp_and_its_old_completions_stay_skipped() {
    let (ctx, _fabric) = open("uidx");
    let pd = ferrodat_driver::Pd::new(&ctx).unwrap();
    let mut c = cq(&ctx, 32);
    let caps = QpCaps { max_send_wr: 4, max_recv_wr: 4, ..Default::default() };
    let (mut a, b) = loopback_pair(&ctx, &pd, &c, caps);
    assert!(poll_now(&mut c).is_empty(), "the CQ knows both QPs");
    let old = a.geometry().uidx;
    // A completion of a's waits, unpolled, when a goes.
    a.post_send(&[SendWr::new(1, SendOp::Nop, Payload::EMPTY)]).unwrap();
    while !c.has_completion() {
        ctx.channel().progress();
    }
    drop(a);

    // The next QP gets the lowest free index, a's; its completion is reported, a's is not.
    let mut n = new_qp(&pd, &c, &c, None, caps);
    assert_eq!(n.geometry().uidx, old, "the destroyed QP's user index, handed out again");
    let gid = ctx.source_gid(1).unwrap().1;
    connect_qp(&mut n, gid, b.qpn(), 3, 4, 7);
    n.post_send(&[SendWr::new(2, SendOp::Nop, Payload::EMPTY)]).unwrap();
    let got = poll_n(&mut c, 1);
    assert_eq!(got.iter().map(|w| (w.wr_id, w.qpn)).collect::<Vec<_>>(), [(2, n.qpn())]);
    assert!(poll_now(&mut c).is_empty(), "nothing of the destroyed QP's");
}

#[test]
fn a_resize_between_a_reset_and_the_next_poll_keeps_the_old_completions_out() {
    let (ctx, _fabric) = open("resizereset");
    let pd = ferrodat_driver::Pd::new(&ctx).unwrap();
    let mr = pd.alloc_mr(4096, Access::ALL).unwrap();
    let mut c = cq(&ctx, 8);
    let caps = QpCaps { max_send_wr: 4, max_recv_wr: 4, ..Default::default() };
    let mut q = new_qp(&pd, &c, &c, None, caps);
    assert!(poll_now(&mut c).is_empty(), "the CQ knows the QP");
    q.modify(&QpAttr::reset_to_init(Access::ALL)).unwrap();
    let sge = [mr.sge(0, 64).unwrap()];
    for wr_id in [1, 2] {
        q.post_recv(&[RecvWr { wr_id, sges: &sge }]).unwrap();
    }
    // Their flush completions wait, unpolled, through the reset and the resize.
    q.to_error().unwrap();
    while !c.has_completion() {
        ctx.channel().progress();
    }
    q.reset().unwrap();
    c.resize(64).unwrap();
    q.modify(&QpAttr::reset_to_init(Access::ALL)).unwrap();
    q.post_recv(&[RecvWr { wr_id: 100, sges: &sge }]).unwrap();
    let mut got = Vec::new();
    for _ in 0..50 {
        got.extend(poll_now(&mut c).iter().map(|w| (w.wr_id, w.status)));
    }
    assert_eq!(got, [], "no old completion, and none posing as the new receive's");
}

#[test]
fn of_threads_waiting_on_a_channel_for_one_event_the_others_time_out() {
    use ferrodat_driver::{CompChannel, CqOptions};
    use std::sync::mpsc;
    use std::time::Duration;
    const WAITERS: usize = 6;
    let (ctx, _fabric) = open("waiters");
    let pd = ferrodat_driver::Pd::new(&ctx).unwrap();
    let ch = CompChannel::new(&ctx).unwrap();
    let mut c =
        Cq::new(&ctx, &CqOptions { cqe: 64, channel: Some(&ch), ..Default::default() }).unwrap();
    let caps = QpCaps { max_send_wr: 8, max_recv_wr: 4, ..Default::default() };
    let (mut a, _b) = loopback_pair(&ctx, &pd, &c, caps);
    assert!(poll_now(&mut c).is_empty());
    // Several rounds: the waiters that lose the event must not be left in a read that
    // blocks past their timeout (they all see the fd readable when the event comes).
    for round in 0..6u64 {
        c.arm(false);
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            for _ in 0..WAITERS {
                let (tx, ch) = (tx.clone(), ch.clone());
                s.spawn(move || tx.send(ch.wait(Some(Duration::from_millis(300))).unwrap()));
            }
            std::thread::sleep(Duration::from_millis(50)); // all asleep in the wait
            a.post_send(&[SendWr::new(round, SendOp::Nop, Payload::EMPTY)]).unwrap();
            let mut got = Vec::new();
            for _ in 0..WAITERS {
                match rx.recv_timeout(Duration::from_secs(3)) {
                    Ok(r) => got.push(r),
                    Err(_) => {
                        // Stuck past its timeout: free it with more events, then fail.
                        for i in 0..WAITERS as u64 {
                            c.arm(false);
                            a.post_send(&[SendWr::new(100 + i, SendOp::Nop, Payload::EMPTY)])
                                .unwrap();
                            std::thread::sleep(Duration::from_millis(20));
                            let _ = poll_now(&mut c);
                        }
                        panic!("round {round}: a waiter overstayed its 300 ms timeout");
                    }
                }
            }
            assert_eq!(got.iter().filter(|r| r.is_some()).count(), 1, "round {round}: {got:?}");
        });
        assert_eq!(poll_now(&mut c).len(), 1, "round {round}: the NOP's completion");
    }
}

#[test]
fn a_resize_below_the_completions_waiting_is_refused_and_loses_none() {
    let (ctx, _fabric) = open("resizesmall");
    let pd = ferrodat_driver::Pd::new(&ctx).unwrap();
    let mut c = cq(&ctx, 16);
    let caps = QpCaps { max_send_wr: 8, max_recv_wr: 4, ..Default::default() };
    let (mut a, _b) = loopback_pair(&ctx, &pd, &c, caps);
    assert!(poll_now(&mut c).is_empty());
    for i in 0..6 {
        a.post_send(&[SendWr::new(i, SendOp::Nop, Payload::EMPTY)]).unwrap();
    }
    while !c.has_completion() {
        ctx.channel().progress();
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    let e = c.resize(2).unwrap_err();
    assert_eq!(e.errno_name(), Some("EINVAL"), "{e}");
    assert!(e.to_string().contains("6 completions wait"), "{e}");
    assert!(c.resize(8).unwrap() >= 8, "room for them: allowed");
    let got = poll_n(&mut c, 6);
    assert_eq!(got.iter().map(|w| w.wr_id).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
}

#[test]
fn a_send_queue_without_gather_entries_refuses_inline_data_instead_of_panicking() {
    // max_send_sge 0 and no inline data: rdma-core's slot is the 192-byte overhead alone,
    // which leaves no inline room (its signed arithmetic gives -4, refusing every inline
    // post); the driver must say "at most 0 inline bytes", not underflow.
    let (ctx, _fabric) = open("nosge");
    let pd = ferrodat_driver::Pd::new(&ctx).unwrap();
    let c = cq(&ctx, 16);
    let caps = QpCaps { max_send_wr: 4, max_send_sge: 0, max_inline_data: 0, ..Default::default() };
    let mut a = new_qp(&pd, &c, &c, None, caps);
    assert_eq!(a.caps().max_inline_data, 0, "{:?}", a.caps());
    assert_eq!(a.geometry().sq_max_inline, 0);
    let e = a.post_send(&[SendWr::new(1, SendOp::Send, Payload::Inline(&[7u8; 600]))]).unwrap_err();
    assert_eq!(e.reason, PostErrorReason::InlineTooLong { given: 600, max: 0 }, "{e}");
    // set_data_inl_seg's answer: ENOMEM.
    says(&e, WorkQueue::Send, libc::ENOMEM, "600 bytes of inline data");
}

#[test]
fn an_entry_of_2_gib_or_more_is_refused_when_it_is_made() {
    // mlx5 would read its byte count as an inline segment's and send the wrong data: the
    // driver refuses the entry itself, before any post (untouched pages cost nothing).
    let (ctx, _fabric) = open("bigsge");
    let pd = ferrodat_driver::Pd::new(&ctx).unwrap();
    let mr = pd.alloc_mr((1 << 31) + 4096, Access::LOCAL_WRITE).unwrap();
    let longest = mr.sge(4096, Sge::MAX_LEN as usize).unwrap();
    assert_eq!(longest.len(), Sge::MAX_LEN);
    let e = mr.sge(0, 1 << 31).unwrap_err();
    assert!(e.to_string().contains("2 GiB - 1"), "{e}");
}
