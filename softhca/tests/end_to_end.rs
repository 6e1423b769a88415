//! End to end through the command path: every object is made with uverbs `write()` command
//! buffers the way rdma-core's mlx5 provider makes them (GET_CONTEXT, ALLOC_PD, REG_MR,
//! CREATE_COMP_CHANNEL, CREATE_CQ, CREATE_QP, MODIFY_QP, CREATE_SRQ, ...), the UAR pages are
//! mmapped, WQEs are written into the QP buffer, the SQ counter into the doorbell record and
//! the doorbell into the bfreg CREATE_QP named; CQEs are polled by the ownership rule, and
//! completion/async events are read from the fds the commands returned. Nothing here
//! touches the engine or the device tables directly: what is asserted is what a user of the
//! verbs sees.
//!
//! All QPs are on one device in this process (loopback: the destination GID is the
//! device's own), each test on its own private fabric directory.

#[path = "support/completion.rs"]
mod completion;
#[path = "support/mem.rs"]
mod mem;
#[path = "support/verbs.rs"]
mod verbs;

use completion::Wc;
use ferrodat_abi::mlx5::{cqe_opcode, cqe_syndrome, opcode};
use ferrodat_abi::uverbs::{self, ModifyQp, access, cmd, event, qp_attr, qp_state};
use ferrodat_softhca::Errno;
use verbs::*;
use zerocopy::IntoBytes;

const LOCAL: u32 = access::LOCAL_WRITE;
const REMOTE: u32 = access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ;

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn send(sges: Vec<(u64, u32, u32)>) -> SendWr {
    SendWr { opcode: opcode::SEND, sges, signaled: true, ..Default::default() }
}

fn rdma(op: u8, sges: Vec<(u64, u32, u32)>, raddr: u64, rkey: u32) -> SendWr {
    SendWr { opcode: op, sges, remote: Some((raddr, rkey)), signaled: true, ..Default::default() }
}

/// A requester completion of `op` for WQE `idx` of `qp`.
#[track_caller]
fn assert_req(wc: &Wc, qp: &Qp, op: u8, idx: u16) {
    assert_eq!(wc.opcode, cqe_opcode::REQ, "{wc:?}");
    assert_eq!((wc.wqe_opcode, wc.wqe_counter, wc.qpn), (op, idx, qp.qpn), "{wc:?}");
    assert_eq!(wc.srqn_uidx, qp.uidx, "CQE version 1 carries the QP's user index: {wc:?}");
}

/// An error completion with `syndrome`.
#[track_caller]
fn assert_err(wc: &Wc, cqe_op: u8, syndrome: u8, qp: &Qp, idx: u16) {
    assert_eq!((wc.opcode, wc.syndrome), (cqe_op, Some(syndrome)), "{wc:?}");
    assert_eq!((wc.wqe_counter, wc.qpn), (idx, qp.qpn), "{wc:?}");
}

// =======================================================================================

/// Two RC QPs on one device, each with its own CQ, connected to each other and in RTS.
fn connected_pair() -> (Verbs, Pd, Cq, Cq, Qp, Qp) {
    let v = Verbs::open();
    let pd = v.alloc_pd();
    let cq_a = v.create_cq(63, None, 0xa);
    let cq_b = v.create_cq(63, None, 0xb);
    let a = v.create_qp(&pd, &cq_a, &cq_a, None, QpCaps::default());
    let b = v.create_qp(&pd, &cq_b, &cq_b, None, QpCaps::default());
    v.connect_pair(&a, &b);
    (v, pd, cq_a, cq_b, a, b)
}

#[test]
fn loopback_send_write_read_then_a_bad_rkey_moves_the_requester_to_err() {
    let (v, pd, mut cq_a, mut cq_b, mut a, mut b) = connected_pair();
    // rdma-core's defaults give each of the first QPs a dedicated low-latency bfreg.
    assert_eq!((a.bfreg_index, b.bfreg_index), (24, 25));
    for (qp, peer) in [(&a, &b), (&b, &a)] {
        let q = v.query_qp(qp);
        assert_eq!(q.qp_state, qp_state::RTS);
        assert_eq!(q.dest_qp_num, peer.qpn);
        assert_eq!(q.dest.dgid, v.dev.gid());
    }
    let local = v.reg_mr(&pd, 4096, LOCAL);
    let remote = v.reg_mr(&pd, 4096, REMOTE);

    // SEND: two SGEs gathered, scattered over the receive's two SGEs.
    local.write(0, b"hello, ");
    local.write(100, b"world");
    let r = v.post_recv(&mut b, &[remote.sge(0, 8), remote.sge(512, 64)]);
    let s = v.post_send(&mut a, &[send(vec![local.sge(0, 7), local.sge(100, 5)])]);
    assert_req(&v.wait(&mut cq_a, 1)[0], &a, opcode::SEND, s[0]);
    let wb = v.wait(&mut cq_b, 1)[0];
    assert_eq!(
        (wb.opcode, wb.byte_cnt, wb.wqe_counter, wb.qpn),
        (cqe_opcode::RESP_SEND, 12, r, b.qpn)
    );
    assert_eq!(wb.srqn_uidx, b.uidx);
    assert_eq!(remote.read(0, 8), b"hello, w");
    assert_eq!(remote.read(512, 5), b"orld\0", "nothing written past the message");

    // SEND with inline data (a lone small WQE: BlueFlame copies it into the register).
    let inline = pattern(60, 7);
    let r = v.post_recv(&mut b, &[remote.sge(1024, 64)]);
    let wr = SendWr { inline: Some(inline.clone()), ..send(vec![]) };
    let s = v.post_send(&mut a, &[wr]);
    assert_req(&v.wait(&mut cq_a, 1)[0], &a, opcode::SEND, s[0]);
    let wb = v.wait(&mut cq_b, 1)[0];
    assert_eq!((wb.opcode, wb.byte_cnt, wb.wqe_counter), (cqe_opcode::RESP_SEND, 60, r));
    assert_eq!(remote.read(1024, 60), inline);

    // RDMA WRITE: lands in the remote region, consumes no receive.
    let data = pattern(300, 1);
    local.write(1024, &data);
    let s = v.post_send(
        &mut a,
        &[rdma(opcode::RDMA_WRITE, vec![local.sge(1024, 300)], remote.addr + 2048, remote.rkey)],
    );
    assert_req(&v.wait(&mut cq_a, 1)[0], &a, opcode::RDMA_WRITE, s[0]);
    assert_eq!(remote.read(2048, 300), data);

    // RDMA READ, batched behind an unsignalled WRITE (one doorbell for both; only the
    // signalled READ completes).
    let back = pattern(200, 2);
    remote.write(3000, &back);
    let unsignalled = SendWr {
        signaled: false,
        ..rdma(opcode::RDMA_WRITE, vec![local.sge(0, 16)], remote.addr + 3500, remote.rkey)
    };
    let read = rdma(opcode::RDMA_READ, vec![local.sge(3500, 200)], remote.addr + 3000, remote.rkey);
    let s = v.post_send(&mut a, &[unsignalled, read]);
    let wa = v.wait(&mut cq_a, 1)[0];
    assert_req(&wa, &a, opcode::RDMA_READ, s[1]);
    assert_eq!(wa.byte_cnt, 200);
    assert_eq!(local.read(3500, 200), back);
    assert_eq!(remote.read(3500, 16), local.read(0, 16), "the unsignalled WRITE was executed");
    v.settle();
    assert_eq!(cq_a.poll_one(), None, "an unsignalled WQE makes no CQE");
    assert_eq!(cq_b.poll_one(), None, "RDMA consumes no receive");
    assert_eq!(v.query_qp(&a).qp_state, qp_state::RTS);

    // A WRITE with a bad rkey: REMOTE_ACCESS error, the target untouched, the requester moved
    // to ERR by the hardware and the SEND queued behind it flushed.
    let before = remote.read(0, 4096);
    let bad_key = remote.rkey ^ 0xff;
    let s = v.post_send(
        &mut a,
        &[
            rdma(opcode::RDMA_WRITE, vec![local.sge(1024, 64)], remote.addr, bad_key),
            send(vec![local.sge(0, 8)]),
        ],
    );
    let wa = v.wait(&mut cq_a, 2);
    assert_err(&wa[0], cqe_opcode::REQ_ERR, cqe_syndrome::REMOTE_ACCESS_ERR, &a, s[0]);
    assert_eq!(wa[0].wqe_opcode, opcode::RDMA_WRITE);
    assert_err(&wa[1], cqe_opcode::REQ_ERR, cqe_syndrome::WR_FLUSH_ERR, &a, s[1]);
    assert_eq!(remote.read(0, 4096), before, "a rejected WRITE touches no memory");
    assert_eq!(v.query_qp(&a).qp_state, qp_state::ERR, "QUERY_QP reads the hardware's state");
    // The responder that refused the access is in ERR too, with an access-error event.
    assert_eq!(v.query_qp(&b).qp_state, qp_state::ERR);
    let ev = v.async_event().expect("an async event for the responder");
    assert_eq!((ev.element, ev.event_type), (b.user_handle, event::QP_ACCESS_ERR));
    assert!(v.async_event().is_none());

    // Work posted to a QP in ERR completes at once with a flush error.
    let s = v.post_send(&mut a, &[send(vec![local.sge(0, 8)])]);
    assert_err(&v.wait(&mut cq_a, 1)[0], cqe_opcode::REQ_ERR, cqe_syndrome::WR_FLUSH_ERR, &a, s[0]);

    assert_eq!(v.destroy_qp(&a).unwrap().events_reported, 0);
    assert_eq!(v.destroy_qp(&b).unwrap().events_reported, 1);
    assert_eq!(v.destroy_cq(&cq_a).unwrap().comp_events_reported, 0);
    assert_eq!(v.destroy_cq(&cq_b).unwrap().comp_events_reported, 0);
}

// =======================================================================================

#[test]
fn completion_channel_fires_once_per_arm() {
    let v = Verbs::open();
    let pd = v.alloc_pd();
    let ch = v.create_comp_channel();
    let user_handle = 0x7f00_dead_beef_0042;
    let mut rcq = v.create_cq(15, Some(ch), user_handle);
    let mut scq = v.create_cq(15, None, 0x5c);
    let mut a = v.create_qp(&pd, &scq, &scq, None, QpCaps::default());
    let mut b = v.create_qp(&pd, &scq, &rcq, None, QpCaps::default());
    v.connect_pair(&a, &b);
    let mr = v.reg_mr(&pd, 4096, LOCAL);
    for i in 0..8 {
        v.post_recv(&mut b, &[mr.sge(64 * i, 64)]);
    }
    let mut sent = 0;
    let mut send_one = |solicited: bool| {
        let wr = SendWr { solicited, ..send(vec![mr.sge(2048, 8)]) };
        v.post_send(&mut a, &[wr]);
        sent += 1;
    };

    // Armed, nothing completed yet: no event.
    v.arm_cq(&rcq, false);
    v.settle();
    assert!(!readable(ch, 0), "no event before a completion");

    // The completion fires the channel: one 8-byte record, the CQ's user_handle.
    send_one(false);
    v.drive_until("the completion channel to become readable", || readable(ch, 0));
    assert_eq!(comp_event(ch).cq_handle, user_handle);
    rcq.arm_sn += 1; // ibv_get_cq_event
    assert!(!readable(ch, 0), "exactly one record per event");
    assert_eq!(v.wait(&mut rcq, 1)[0].opcode, cqe_opcode::RESP_SEND);

    // Not re-armed: the next completion makes no event.
    send_one(false);
    assert_eq!(v.wait(&mut rcq, 1)[0].opcode, cqe_opcode::RESP_SEND);
    v.settle();
    assert!(!readable(ch, 0), "one event per arm");

    // Re-armed with the next sequence number: one more event.
    v.arm_cq(&rcq, false);
    assert!(!readable(ch, 0), "nothing waits in the CQ");
    send_one(false);
    v.drive_until("the event after re-arming", || readable(ch, 0));
    assert_eq!(comp_event(ch).cq_handle, user_handle);
    rcq.arm_sn += 1;
    v.wait(&mut rcq, 1);

    // Armed for solicited completions only: an unsolicited SEND does not fire it, a
    // solicited one does.
    v.arm_cq(&rcq, true);
    send_one(false);
    let wc = v.wait(&mut rcq, 1)[0];
    assert!(!wc.solicited);
    v.settle();
    assert!(!readable(ch, 0), "a solicited-only arm ignores unsolicited completions");
    send_one(true);
    v.drive_until("the solicited event", || readable(ch, 0));
    assert_eq!(comp_event(ch).cq_handle, user_handle);
    rcq.arm_sn += 1;
    let wc = v.wait(&mut rcq, 1)[0];
    assert!(wc.solicited, "the CQE carries the solicited flag: {wc:?}");

    // Arming while a CQE already waits past the consumer index fires at once.
    send_one(false);
    v.wait_for_cqe(&rcq);
    assert!(!readable(ch, 0));
    v.arm_cq(&rcq, false);
    assert!(readable(ch, 0), "arming with a CQE waiting fires immediately");
    assert_eq!(comp_event(ch).cq_handle, user_handle);
    rcq.arm_sn += 1;
    v.wait(&mut rcq, 1);

    // Every SEND completed at the requester, and nothing else came.
    let wcs = v.wait(&mut scq, sent);
    assert!(wcs.iter().all(|wc| wc.opcode == cqe_opcode::REQ && wc.qpn == a.qpn), "{wcs:?}");
    v.settle();
    assert_eq!(rcq.poll_one(), None);
    assert!(!readable(ch, 0));

    v.destroy_qp(&a).unwrap();
    v.destroy_qp(&b).unwrap();
    assert_eq!(v.destroy_cq(&rcq).unwrap().comp_events_reported, 4, "events delivered");
    assert_eq!(v.destroy_cq(&scq).unwrap().comp_events_reported, 0);
    close(ch);
}

/// Two threads arm their own CQs through the one CQ doorbell of UAR page 0: both stores
/// land before either tells the model (B's overwrote A's in the register). The device sees
/// every store, so both CQs are armed and each completion fires its own channel. (softhca
/// once read the register back and armed B twice: A's waiter slept through its
/// completion, the dapltest hang with four threads.)
#[test]
fn arms_of_two_cqs_through_the_shared_doorbell_are_both_seen() {
    let v = Verbs::open();
    let pd = v.alloc_pd();
    let (ch_a, ch_b) = (v.create_comp_channel(), v.create_comp_channel());
    let mut rcq_a = v.create_cq(15, Some(ch_a), 0xa);
    let mut rcq_b = v.create_cq(15, Some(ch_b), 0xb);
    let mut scq = v.create_cq(15, None, 0x5c);
    let mut a = v.create_qp(&pd, &scq, &rcq_a, None, QpCaps::default());
    let mut b = v.create_qp(&pd, &scq, &rcq_b, None, QpCaps::default());
    v.connect_pair(&a, &b);
    let mr = v.reg_mr(&pd, 4096, LOCAL);
    v.post_recv(&mut a, &[mr.sge(0, 64)]);
    v.post_recv(&mut b, &[mr.sge(64, 64)]);

    let stored_a = v.store_cq_arm(&rcq_a, false);
    let stored_b = v.store_cq_arm(&rcq_b, false);
    v.cq_doorbell_rung(stored_a);
    v.cq_doorbell_rung(stored_b);

    v.post_send(&mut a, &[send(vec![mr.sge(2048, 8)])]);
    v.post_send(&mut b, &[send(vec![mr.sge(2048, 8)])]);
    v.drive_until("the event of A's receive CQ", || readable(ch_a, 0));
    v.drive_until("the event of B's receive CQ", || readable(ch_b, 0));
    assert_eq!(comp_event(ch_a).cq_handle, 0xa);
    assert_eq!(comp_event(ch_b).cq_handle, 0xb);
    assert_eq!(v.wait(&mut rcq_a, 1)[0].opcode, cqe_opcode::RESP_SEND);
    assert_eq!(v.wait(&mut rcq_b, 1)[0].opcode, cqe_opcode::RESP_SEND);
    v.wait(&mut scq, 2);

    v.destroy_qp(&a).unwrap();
    v.destroy_qp(&b).unwrap();
    assert_eq!(v.destroy_cq(&rcq_a).unwrap().comp_events_reported, 1);
    assert_eq!(v.destroy_cq(&rcq_b).unwrap().comp_events_reported, 1);
    v.destroy_cq(&scq).unwrap();
    close(ch_a);
    close(ch_b);
}

// =======================================================================================

#[test]
fn srq_shared_by_two_qps_with_limit_and_last_wqe_events() {
    let v = Verbs::open();
    let pd = v.alloc_pd();
    let mut scq = v.create_cq(15, None, 0x5c);
    let mut rcq = v.create_cq(15, None, 0x7c);
    let srq_handle = 0x5151_0000_0001;
    let mut srq = v.create_srq(&pd, 15, 1, srq_handle);
    assert_eq!(srq.wqe_cnt, 16);
    let mr = v.reg_mr(&pd, 4096, LOCAL);
    for i in 0..4u16 {
        assert_eq!(v.post_srq_recv(&mut srq, &[mr.sge(64 * usize::from(i), 64)]), i);
    }
    let caps = QpCaps::default();
    let mut r1 = v.create_qp(&pd, &scq, &scq, None, caps);
    let mut r2 = v.create_qp(&pd, &scq, &scq, None, caps);
    let s1 = v.create_qp(&pd, &rcq, &rcq, Some(&srq), caps);
    let s2 = v.create_qp(&pd, &rcq, &rcq, Some(&srq), caps);
    v.connect_pair(&r1, &s1);
    v.connect_pair(&r2, &s2);

    // Arm the limit: an event once fewer than 3 posted WQEs remain.
    v.modify_srq_limit(&srq, 3).expect("MODIFY_SRQ LIMIT");
    assert!(v.async_event().is_none());

    let src = v.reg_mr(&pd, 4096, LOCAL);
    src.write(0, b"from r1");
    src.write(64, b"from r2");
    v.post_send(&mut r1, &[send(vec![src.sge(0, 7)])]);
    let wc = v.wait(&mut rcq, 1)[0];
    assert_eq!((wc.opcode, wc.qpn, wc.byte_cnt), (cqe_opcode::RESP_SEND, s1.qpn, 7));
    assert_eq!(wc.wqe_counter, 0, "the SRQ index of the WQE used");
    assert_eq!(wc.srqn_uidx, s1.uidx, "CQE version 1: the receiving QP's user index");
    assert_eq!(mr.read(0, 7), b"from r1");
    v.free_srq_wqe(&mut srq, wc.wqe_counter);
    v.settle();
    assert!(v.async_event().is_none(), "3 WQEs left is not below the limit");

    v.post_send(&mut r2, &[send(vec![src.sge(64, 7)])]);
    let wc = v.wait(&mut rcq, 1)[0];
    assert_eq!((wc.opcode, wc.qpn, wc.byte_cnt), (cqe_opcode::RESP_SEND, s2.qpn, 7));
    assert_eq!(wc.wqe_counter, 1);
    assert_eq!(wc.srqn_uidx, s2.uidx);
    assert_eq!(mr.read(64, 7), b"from r2");
    v.free_srq_wqe(&mut srq, wc.wqe_counter);
    let ev = v.async_event().expect("the SRQ limit event");
    assert_eq!((ev.element, ev.event_type), (srq_handle, event::SRQ_LIMIT_REACHED));
    assert_eq!(ev.event_type, 15);
    let wcs = v.wait(&mut scq, 2);
    assert_eq!((wcs[0].qpn, wcs[1].qpn), (r1.qpn, r2.qpn));

    // The limit event fires once per arm.
    src.write(128, b"again");
    v.post_send(&mut r1, &[send(vec![src.sge(128, 5)])]);
    let wc = v.wait(&mut rcq, 1)[0];
    assert_eq!((wc.qpn, wc.wqe_counter), (s1.qpn, 2));
    v.wait(&mut scq, 1);
    v.settle();
    assert!(v.async_event().is_none(), "the limit disarms when it fires");

    // An SRQ-attached QP moved to ERR reports its last WQE; the SRQ's WQEs are not flushed.
    v.to_error(&s1);
    let ev = v.async_event().expect("the last-WQE-reached event");
    assert_eq!((ev.element, ev.event_type), (s1.user_handle, event::QP_LAST_WQE_REACHED));
    assert_eq!(ev.event_type, 16);
    v.settle();
    assert!(v.async_event().is_none());
    assert_eq!(rcq.poll_one(), None, "SRQ WQEs belong to the SRQ, not to the QP in error");
    assert_eq!(v.query_qp(&s1).qp_state, qp_state::ERR);

    // The other responder still receives from the SRQ.
    v.post_send(&mut r2, &[send(vec![src.sge(64, 7)])]);
    let wc = v.wait(&mut rcq, 1)[0];
    assert_eq!((wc.qpn, wc.wqe_counter), (s2.qpn, 3));
    v.wait(&mut scq, 1);

    assert_eq!(v.destroy_srq(&srq).err(), Some(Errno::EBUSY));
    assert_eq!(v.destroy_qp(&s1).unwrap().events_reported, 1, "the last-WQE event");
    assert_eq!(v.destroy_qp(&s2).unwrap().events_reported, 0);
    v.destroy_qp(&r1).unwrap();
    v.destroy_qp(&r2).unwrap();
    assert_eq!(v.destroy_srq(&srq).unwrap().events_reported, 1, "the limit event");
}

// =======================================================================================

#[test]
fn modify_qp_to_err_flushes_every_outstanding_receive_in_order() {
    let v = Verbs::open();
    let pd = v.alloc_pd();
    let mut cq_a = v.create_cq(31, None, 0xa);
    let mut cq_b = v.create_cq(31, None, 0xb);
    let caps = QpCaps { max_recv_wr: 8, ..QpCaps::default() };
    let mut a = v.create_qp(&pd, &cq_a, &cq_a, None, caps);
    let mut b = v.create_qp(&pd, &cq_b, &cq_b, None, caps);
    assert_eq!(b.rq_wqe_cnt, 8);
    v.connect_pair(&a, &b);
    let mr = v.reg_mr(&pd, 4096, LOCAL);

    // Fill the RQ, consume 6 entries, post 4 more: the ring wraps, entries 6, 7, 0..3 wait.
    for i in 0..8 {
        v.post_recv(&mut b, &[mr.sge(64 * i, 64)]);
    }
    for _ in 0..6 {
        v.post_send(&mut a, &[send(vec![mr.sge(1024, 4)])]);
    }
    let done = v.wait(&mut cq_b, 6);
    let counters: Vec<u16> = done.iter().map(|wc| wc.wqe_counter).collect();
    assert_eq!(counters, [0, 1, 2, 3, 4, 5]);
    v.wait(&mut cq_a, 6);
    let posted: Vec<u16> = (0..4).map(|i| v.post_recv(&mut b, &[mr.sge(64 * i, 64)])).collect();
    assert_eq!(posted, [0, 1, 2, 3]);

    v.to_error(&b);
    assert_eq!(v.query_qp(&b).qp_state, qp_state::ERR);
    let flushed = v.wait(&mut cq_b, 6);
    for (wc, idx) in flushed.iter().zip([6u16, 7, 0, 1, 2, 3]) {
        assert_err(wc, cqe_opcode::RESP_ERR, cqe_syndrome::WR_FLUSH_ERR, &b, idx);
    }
    v.settle();
    assert_eq!(cq_b.poll_one(), None, "one flush CQE per outstanding receive");

    // A send posted on the QP in ERR is flushed too.
    let s = v.post_send(&mut b, &[send(vec![mr.sge(0, 8)])]);
    assert_err(&v.wait(&mut cq_b, 1)[0], cqe_opcode::REQ_ERR, cqe_syndrome::WR_FLUSH_ERR, &b, s[0]);
    assert_eq!(cq_a.poll_one(), None);
}

#[test]
fn a_qp_the_hardware_moved_to_err_stays_there_until_reset_and_then_works_again() {
    let (v, pd, mut cq_a, mut cq_b, mut a, mut b) = connected_pair();
    let local = v.reg_mr(&pd, 4096, LOCAL);
    let remote = v.reg_mr(&pd, 4096, REMOTE);
    let bad = rdma(opcode::RDMA_WRITE, vec![local.sge(0, 8)], remote.addr, remote.rkey ^ 0xff);
    let s = v.post_send(&mut a, &[bad]);
    let wc = v.wait(&mut cq_a, 1)[0];
    assert_err(&wc, cqe_opcode::REQ_ERR, cqe_syndrome::REMOTE_ACCESS_ERR, &a, s[0]);
    let q = v.query_qp(&a);
    assert_eq!((q.qp_state, q.cur_qp_state), (qp_state::ERR, qp_state::ERR));

    // RTS→RTS (as the kernel still has it cached): the firmware runs RTS2RTS against the
    // QP context, which is in ERR, and fails (bad resource state: EINVAL). The QP stays in
    // ERR and keeps flushing.
    let rts2rts = ModifyQp {
        qp_handle: a.handle,
        attr_mask: qp_attr::STATE | qp_attr::MIN_RNR_TIMER,
        qp_state: qp_state::RTS,
        min_rnr_timer: 3,
        ..Default::default()
    };
    assert_eq!(v.modify_qp(&rts2rts), Err(Errno::EINVAL));
    assert_eq!(v.query_qp(&a).qp_state, qp_state::ERR);
    let s = v.post_send(&mut a, &[send(vec![local.sge(0, 8)])]);
    let wc = v.wait(&mut cq_a, 1)[0];
    assert_err(&wc, cqe_opcode::REQ_ERR, cqe_syndrome::WR_FLUSH_ERR, &a, s[0]);

    // RESET (rdma-core then rewinds its indices and doorbell records) and reconnect: the
    // pair works again.
    v.reset(&mut a);
    v.reset(&mut b);
    assert_eq!(v.query_qp(&a).qp_state, qp_state::RESET);
    v.connect_pair(&a, &b);
    let r = v.post_recv(&mut b, &[remote.sge(0, 64)]);
    local.write(0, b"again!!!");
    let s = v.post_send(&mut a, &[send(vec![local.sge(0, 8)])]);
    assert_req(&v.wait(&mut cq_a, 1)[0], &a, opcode::SEND, s[0]);
    let wb = v.wait(&mut cq_b, 1)[0];
    assert_eq!((wb.opcode, wb.wqe_counter, wb.byte_cnt), (cqe_opcode::RESP_SEND, r, 8));
    assert_eq!(remote.read(0, 8), b"again!!!");
}

/// A device whose registry file was truncated under this process's mapping (which
/// `fabric/sigbus.rs` turns from a SIGBUS into a lost mapping) can no longer find its
/// peers nor be found: it has failed for good, as an mlx5 device in its internal-error
/// state. The contexts hear DEVICE_FATAL once; every QP is in ERR with its work requests
/// flushed, so a consumer waiting for a completion is told; commands the firmware would run
/// fail with ENOLINK, while a move to ERR or RESET and destroys still work, so the
/// consumer can clean up. A QP already in ERR (whose receive queue every progress call
/// watches) does not hide the failure.
#[test]
fn a_lost_registry_fails_the_device_and_flushes_every_qp() {
    let v = Verbs::open();
    let pd = v.alloc_pd();
    let mut cq_a = v.create_cq(31, None, 0xa);
    let cq_b = v.create_cq(31, None, 0xb);
    let cq_c = v.create_cq(31, None, 0xc);
    let mut a = v.create_qp(&pd, &cq_a, &cq_a, None, QpCaps::default());
    let b = v.create_qp(&pd, &cq_b, &cq_b, None, QpCaps::default());
    let c = v.create_qp(&pd, &cq_c, &cq_c, None, QpCaps::default());
    v.connect_pair(&a, &b);
    v.connect(&c, c.qpn);
    v.to_error(&c);
    let mr = v.reg_mr(&pd, 4096, LOCAL);
    let posted = [v.post_recv(&mut a, &[mr.sge(0, 64)]), v.post_recv(&mut a, &[mr.sge(64, 64)])];
    v.settle();
    assert!(v.async_event().is_none() && cq_a.poll_one().is_none());

    let registry = v.dev.engine().registry().path().to_owned();
    let file = std::fs::OpenOptions::new().write(true).open(&registry).expect("the registry");
    file.set_len(0).expect("truncate the registry");
    // Progress looks at the registry's wake words, loses the mapping, then fails the device.
    v.settle();
    let fatal = v.async_event().expect("DEVICE_FATAL");
    assert_eq!((fatal.event_type, fatal.element), (event::DEVICE_FATAL, 1));
    v.settle();
    assert!(v.async_event().is_none(), "DEVICE_FATAL is reported once");
    let flushed = v.wait(&mut cq_a, 2);
    for (wc, idx) in flushed.iter().zip(posted) {
        assert_err(wc, cqe_opcode::RESP_ERR, cqe_syndrome::WR_FLUSH_ERR, &a, idx);
    }
    // A request posted now is flushed as on any QP in ERR.
    let s = v.post_send(&mut a, &[send(vec![mr.sge(0, 8)])]);
    assert_err(&v.wait(&mut cq_a, 1)[0], cqe_opcode::REQ_ERR, cqe_syndrome::WR_FLUSH_ERR, &a, s[0]);

    // Nothing new is made, changed or queried through the firmware...
    let alloc = v.cmd(cmd::ALLOC_PD, uverbs::AllocPd::default().as_bytes(), &[], 8);
    assert_eq!(alloc.err(), Some(Errno::ENOLINK));
    let query = uverbs::QueryQp { qp_handle: a.handle, attr_mask: 0, ..Default::default() };
    let query = v.cmd(cmd::QUERY_QP, query.as_bytes(), &[], 128);
    assert_eq!(query.err(), Some(Errno::ENOLINK));
    let to_rts = ModifyQp {
        qp_handle: a.handle,
        attr_mask: qp_attr::STATE,
        qp_state: qp_state::RTS,
        ..Default::default()
    };
    assert_eq!(v.modify_qp(&to_rts), Err(Errno::ENOLINK));
    // ...but the consumer can still clean up.
    let to_reset = ModifyQp { qp_state: qp_state::RESET, ..to_rts };
    assert_eq!(v.modify_qp(&to_reset), Ok(()));
    v.destroy_qp(&b).expect("DESTROY_QP on a failed device");
    v.destroy_cq(&cq_b).expect("DESTROY_CQ on a failed device");
}
