//! The HCA data path in one process: two RC QPs on one softhca, connected to each other,
//! driven by the test's own minimal driver (WQEs and CQEs from `ferrodat_abi` types).

mod support;

use ferrodat_abi::mlx5::{cqe_opcode, cqe_syndrome, opcode};
use ferrodat_abi::uverbs::{access, qp_state};
use std::time::Duration;
use support::*;

const WAIT: Duration = Duration::from_secs(5);

#[test]
fn send_lands_in_the_posted_receive_with_both_completions() {
    let mut p = pair("send", rc_attrs());
    let src = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let dst = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let data: Vec<u8> = (0..100u8).collect();
    src.buf.write(0, &data);
    let ridx = p.b.post_recv(&[(dst.addr(), 4096, dst.key)]);
    let sidx = p.a.post_send(&p.engine, &send(vec![(src.addr(), 100, src.key)]));
    let wa = p.cq_a.wait(&p.engine, 1, WAIT);
    let wb = p.cq_b.wait(&p.engine, 1, WAIT);
    assert_eq!(wa.len(), 1, "requester completion");
    assert_eq!(wa[0].opcode, cqe_opcode::REQ);
    assert_eq!(wa[0].wqe_opcode, opcode::SEND);
    assert_eq!(wa[0].wqe_counter, sidx);
    assert_eq!(wa[0].qpn, p.a.qpn);
    assert_eq!(wb.len(), 1, "responder completion");
    assert_eq!(wb[0].opcode, cqe_opcode::RESP_SEND);
    assert_eq!(wb[0].byte_cnt, 100);
    assert_eq!(wb[0].wqe_counter, ridx);
    assert_eq!(wb[0].qpn, p.b.qpn);
    assert_eq!(wb[0].srqn_uidx, p.b.qpn & 0xffff, "cqe_version 1 reports the user index");
    assert_eq!(dst.buf.read(0, 100), data);
    assert_eq!(dst.buf.read(100, 4), vec![0; 4], "nothing written past the message");
}

/// A SEND is delivered and its ACK is on its way back when the sender's QP is moved to
/// ERR (its connection manager learned of a disconnect first, over another channel): the
/// ACK that had already arrived counts, as it would on hardware, so the SEND completes
/// successfully instead of being flushed.
#[test]
fn an_ack_that_arrived_before_the_error_state_still_completes_the_send() {
    for round in 0..20 {
        let mut p = pair("ack-before-err", rc_attrs());
        let src = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
        let dst = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
        p.b.post_recv(&[(dst.addr(), 64, dst.key)]);
        p.a.post_send(&p.engine, &send(vec![(src.addr(), 12, src.key)]));
        let wb = p.cq_b.wait(&p.engine, 1, WAIT);
        assert_eq!(wb[0].opcode, cqe_opcode::RESP_SEND);
        // B's ACK is in A's inbound ring; A has not read it yet.
        p.engine.modify_qp(p.a.qpn, qp_state::ERR, rc_attrs());
        let wa = p.cq_a.wait(&p.engine, 1, WAIT);
        assert_eq!(wa.len(), 1, "round {round}: the sender's completion");
        assert_eq!(
            (wa[0].opcode, wa[0].syndrome),
            (cqe_opcode::REQ, None),
            "round {round}: the delivered and acknowledged SEND completes successfully"
        );
    }
}

#[test]
fn send_with_immediate_and_solicited() {
    let mut p = pair("sendimm", rc_attrs());
    let src = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let dst = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    p.b.post_recv(&[(dst.addr(), 64, dst.key)]);
    let wr = SendWr {
        opcode: opcode::SEND_IMM,
        sges: vec![(src.addr(), 8, src.key)],
        imm: 0xdead_beef,
        solicited: true,
        signaled: true,
        ..Default::default()
    };
    p.a.post_send(&p.engine, &wr);
    let wb = p.cq_b.wait(&p.engine, 1, WAIT);
    assert_eq!(wb[0].opcode, cqe_opcode::RESP_SEND_IMM);
    assert_eq!(wb[0].imm, 0xdead_beef);
    assert!(wb[0].solicited);
    assert_eq!(p.cq_a.wait(&p.engine, 1, WAIT).len(), 1);
}

#[test]
fn rdma_write_read_and_write_with_immediate() {
    let mut p = pair("rdma", rc_attrs());
    let local = Mr::new(&p.engine, p.pdn, 8192, ALL_ACCESS);
    let remote = Mr::new(&p.engine, p.pdn, 8192, ALL_ACCESS);
    let pattern: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    local.buf.write(0, &pattern);
    let wr = |op, sges, remote_at: (u64, u32)| SendWr {
        opcode: op,
        sges,
        remote: Some(remote_at),
        signaled: true,
        ..Default::default()
    };
    p.a.post_send(
        &p.engine,
        &wr(
            opcode::RDMA_WRITE,
            vec![(local.addr(), 4096, local.key)],
            (remote.addr() + 100, remote.key),
        ),
    );
    let w = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!((w[0].opcode, w[0].wqe_opcode), (cqe_opcode::REQ, opcode::RDMA_WRITE));
    assert_eq!(remote.buf.read(100, 4096), pattern);
    assert!(p.cq_b.poll_one().is_none(), "a plain RDMA WRITE is invisible to the target");

    // Read it back into another place.
    p.a.post_send(
        &p.engine,
        &wr(
            opcode::RDMA_READ,
            vec![(local.addr() + 4096, 4096, local.key)],
            (remote.addr() + 100, remote.key),
        ),
    );
    let r = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(r[0].wqe_opcode, opcode::RDMA_READ);
    assert_eq!(r[0].byte_cnt, 4096);
    assert_eq!(local.buf.read(4096, 4096), pattern);

    // Write with immediate consumes a receive and reports the immediate.
    let ridx = p.b.post_recv(&[(remote.addr(), 16, remote.key)]);
    let mut wi = wr(
        opcode::RDMA_WRITE_IMM,
        vec![(local.addr(), 32, local.key)],
        (remote.addr() + 5000, remote.key),
    );
    wi.imm = 0x7777;
    p.a.post_send(&p.engine, &wi);
    let wb = p.cq_b.wait(&p.engine, 1, WAIT);
    assert_eq!(wb[0].opcode, cqe_opcode::RESP_WR_IMM);
    assert_eq!(wb[0].imm, 0x7777);
    assert_eq!(wb[0].byte_cnt, 32);
    assert_eq!(wb[0].wqe_counter, ridx);
    assert_eq!(remote.buf.read(5000, 32), pattern[..32]);
    assert_eq!(p.cq_a.wait(&p.engine, 1, WAIT).len(), 1);
}

/// Both QPs READ a region larger than their rings from each other at once: each side's
/// outbound ring fills with READ response data while the peer's fills with its own, and
/// each must keep draining its inbound ring (the responses to its own READ) meanwhile, or
/// both stall until the transport timer fails the READs (what `dtest` with its default 4 MiB
/// buffers ran into).
#[test]
fn crossing_reads_larger_than_the_rings_both_complete() {
    const LEN: usize = 2 << 20; // eight 256 KiB rings' worth
    let mut p = pair("crossing-reads", rc_attrs());
    let a_mem = Mr::new(&p.engine, p.pdn, 2 * LEN, ALL_ACCESS);
    let b_mem = Mr::new(&p.engine, p.pdn, 2 * LEN, ALL_ACCESS);
    let a_data: Vec<u8> = (0..LEN).map(|i| (i % 251) as u8).collect();
    let b_data: Vec<u8> = (0..LEN).map(|i| (i % 241) as u8).collect();
    a_mem.buf.write(0, &a_data);
    b_mem.buf.write(0, &b_data);
    let read = |into: &Mr, from: &Mr| SendWr {
        opcode: opcode::RDMA_READ,
        sges: vec![(into.addr() + LEN as u64, LEN as u32, into.key)],
        remote: Some((from.addr(), from.key)),
        signaled: true,
        ..Default::default()
    };
    p.a.post_send(&p.engine, &read(&a_mem, &b_mem));
    p.b.post_send(&p.engine, &read(&b_mem, &a_mem));
    let wa = p.cq_a.wait(&p.engine, 1, WAIT);
    let wb = p.cq_b.wait(&p.engine, 1, WAIT);
    assert_eq!(wa.len(), 1, "A's READ did not complete");
    assert_eq!(wb.len(), 1, "B's READ did not complete");
    for (w, who) in [(&wa[0], "A"), (&wb[0], "B")] {
        assert_eq!(w.opcode, cqe_opcode::REQ, "{who}'s READ failed: syndrome {:?}", w.syndrome);
        assert_eq!(w.byte_cnt, LEN as u32, "{who}'s READ length");
    }
    assert!(a_mem.buf.read(LEN, LEN) == b_data, "A read B's bytes");
    assert!(b_mem.buf.read(LEN, LEN) == a_data, "B read A's bytes");
}

/// A responder that fails a request still answers the ones before it first (in PSN order,
/// as hardware does): a READ larger than the ring, queued when a WRITE with a bad rkey
/// arrives behind it, completes with its data, and the WRITE gets the remote access error.
#[test]
fn a_responder_error_behind_a_large_read_still_answers_the_read_first() {
    const LEN: usize = 1 << 20; // four rings' worth of READ data
    let mut p = pair("read-then-nak", rc_attrs());
    let local = Mr::new(&p.engine, p.pdn, LEN, ALL_ACCESS);
    let remote = Mr::new(&p.engine, p.pdn, LEN, ALL_ACCESS);
    let data: Vec<u8> = (0..LEN).map(|i| (i % 253) as u8).collect();
    remote.buf.write(0, &data);
    let read = SendWr {
        opcode: opcode::RDMA_READ,
        sges: vec![(local.addr(), LEN as u32, local.key)],
        remote: Some((remote.addr(), remote.key)),
        signaled: true,
        ..Default::default()
    };
    let write = SendWr {
        opcode: opcode::RDMA_WRITE,
        sges: vec![(local.addr(), 8, local.key)],
        remote: Some((remote.addr(), remote.key ^ 0x100)), // not a key of the peer's
        signaled: true,
        ..Default::default()
    };
    let r = p.a.post_send(&p.engine, &read);
    let w = p.a.post_send(&p.engine, &write);
    let got = p.cq_a.wait(&p.engine, 2, WAIT);
    let seen: Vec<_> = got.iter().map(|c| (c.opcode, c.syndrome, c.wqe_counter)).collect();
    assert_eq!(
        seen,
        [
            (cqe_opcode::REQ, None, r),
            (cqe_opcode::REQ_ERR, Some(cqe_syndrome::REMOTE_ACCESS_ERR), w)
        ]
    );
    assert!(local.buf.read(0, LEN) == data, "the READ's data arrived");
}

/// A connected pair, a local 64-byte region for an atomic's result, a remote one holding
/// 100 at offset 8, and a signalled fetch-and-add of 5 from the first to the second.
fn fetch_and_add_of_5(tag: &str) -> (Pair, Mr, Mr, SendWr) {
    let p = pair(tag, rc_attrs());
    let local = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let remote = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    remote.buf.write(8, &100u64.to_ne_bytes());
    let fa = SendWr {
        opcode: opcode::ATOMIC_FA,
        sges: vec![(local.addr(), 8, local.key)],
        remote: Some((remote.addr() + 8, remote.key)),
        atomic: Some((5, 0)),
        signaled: true,
        ..Default::default()
    };
    (p, local, remote, fa)
}

/// An atomic whose local buffer is deregistered while it is in flight fails with a local
/// protection error, and its original value does not land there (the HCA checks the key
/// when it writes the result).
#[test]
fn an_atomic_into_a_buffer_deregistered_in_flight_fails_without_landing() {
    let (mut p, local, _remote, fa) = fetch_and_add_of_5("atomic-dereg");
    p.a.post_send(&p.engine, &fa);
    p.engine.remove_memory_region(local.key >> 8);
    let w = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].syndrome, Some(cqe_syndrome::LOCAL_PROT_ERR), "{w:?}");
    assert_eq!(local.buf.read(0, 8), [0; 8], "the result landed after DEREG_MR");
}

#[test]
fn atomics_return_the_original_value() {
    let (mut p, local, remote, fa) = fetch_and_add_of_5("atomic");
    p.a.post_send(&p.engine, &fa);
    let w = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!((w[0].wqe_opcode, w[0].byte_cnt), (opcode::ATOMIC_FA, 8));
    assert_eq!(local.buf.read(0, 8), 100u64.to_ne_bytes());
    assert_eq!(remote.buf.read(8, 8), 105u64.to_ne_bytes());

    let cs = |compare, swap| SendWr {
        opcode: opcode::ATOMIC_CS,
        sges: vec![(local.addr(), 8, local.key)],
        remote: Some((remote.addr() + 8, remote.key)),
        atomic: Some((swap, compare)),
        signaled: true,
        ..Default::default()
    };
    p.a.post_send(&p.engine, &cs(1, 7)); // compare fails
    p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(local.buf.read(0, 8), 105u64.to_ne_bytes());
    assert_eq!(remote.buf.read(8, 8), 105u64.to_ne_bytes(), "failed compare leaves memory");
    p.a.post_send(&p.engine, &cs(105, 7));
    p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(remote.buf.read(8, 8), 7u64.to_ne_bytes());
}

#[test]
fn nop_and_unsignalled_wqes() {
    let mut p = pair("unsig", rc_attrs());
    let src = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let dst = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let mut w = SendWr {
        opcode: opcode::RDMA_WRITE,
        sges: vec![(src.addr(), 8, src.key)],
        remote: Some((dst.addr(), dst.key)),
        ..Default::default()
    };
    for _ in 0..5 {
        p.a.post_send(&p.engine, &w);
    }
    assert!(
        p.cq_a.wait(&p.engine, 1, Duration::from_millis(200)).is_empty(),
        "unsignalled: no CQE"
    );
    w.signaled = true;
    let last = p.a.post_send(&p.engine, &w);
    let got = p.cq_a.wait(&p.engine, 2, Duration::from_millis(500));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].wqe_counter, last);
    let nop = SendWr { opcode: opcode::NOP, signaled: true, ..Default::default() };
    let n = p.a.post_send(&p.engine, &nop);
    let got = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!((got[0].wqe_opcode, got[0].wqe_counter), (opcode::NOP, n));
}

/// An 8-byte inline SEND (the small-message path), its bytes all `byte`.
fn small_send(byte: u8, signaled: bool) -> SendWr {
    SendWr { opcode: opcode::SEND, inline: Some(vec![byte; 8]), signaled, ..Default::default() }
}

/// The requester CQEs among `wcs` (both QPs of a pair complete sends and receives on one
/// CQ): (opcode, syndrome, wqe_counter).
fn requester_cqes(wcs: &[Wc]) -> Vec<(u8, Option<u8>, u16)> {
    wcs.iter()
        .filter(|w| w.opcode == cqe_opcode::REQ || w.opcode == cqe_opcode::REQ_ERR)
        .map(|w| (w.opcode, w.syndrome, w.wqe_counter))
        .collect()
}

/// Each QP of the pair gets `n` 64-byte receives in its MR, the i-th at offset 64 * i.
fn post_receives(p: &mut Pair, n: u64, mr_a: &Mr, mr_b: &Mr) {
    for i in 0..n {
        p.a.post_recv(&[(mr_a.addr() + 64 * i, 64, mr_a.key)]);
        p.b.post_recv(&[(mr_b.addr() + 64 * i, 64, mr_b.key)]);
    }
}

/// ACKs retire acknowledged unsignalled SENDs without a CQE, whether the ACK rides on the
/// peer's SEND (several at once) or comes alone for a signalled SEND among them; each
/// signalled SEND completes once, in order, with its own WQE counter.
#[test]
fn acks_retire_unsignalled_sends_and_signalled_ones_complete_in_order() {
    let mut p = pair("ackretire", rc_attrs());
    let mr_a = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let mr_b = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    post_receives(&mut p, 16, &mr_a, &mr_b);
    // Three unsignalled SENDs, delivered; B holds their ACK back for a request to carry.
    for i in 0..3 {
        p.a.post_send(&p.engine, &small_send(i, false));
    }
    let wb = p.cq_b.wait(&p.engine, 3, WAIT);
    assert_eq!(wb.iter().map(|w| w.opcode).collect::<Vec<_>>(), [cqe_opcode::RESP_SEND; 3]);
    // B's SEND carries the ACK of all three.
    p.b.post_send(&p.engine, &small_send(0xb0, false));
    let wa = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(wa[0].opcode, cqe_opcode::RESP_SEND, "only B's SEND: {wa:?}");
    // A signalled SEND behind them completes alone.
    let s3 = p.a.post_send(&p.engine, &small_send(3, true));
    assert_eq!(s3, 3);
    let wa = p.cq_a.wait(&p.engine, 2, Duration::from_millis(100));
    assert_eq!(requester_cqes(&wa), [(cqe_opcode::REQ, None, s3)]);
    // Unsignalled, signalled, unsignalled: the signalled one asks for its ACK, which
    // retires the first and completes it; the third waits for the ACK B's next SEND
    // carries.
    p.a.post_send(&p.engine, &small_send(4, false));
    let s5 = p.a.post_send(&p.engine, &small_send(5, true));
    p.a.post_send(&p.engine, &small_send(6, false));
    let wa = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(requester_cqes(&wa), [(cqe_opcode::REQ, None, s5)]);
    let wb = p.cq_b.wait(&p.engine, 3, WAIT);
    assert_eq!(wb.len(), 3);
    p.b.post_send(&p.engine, &small_send(0xb1, false));
    let s7 = p.a.post_send(&p.engine, &small_send(7, true));
    let wa = p.cq_a.wait(&p.engine, 3, Duration::from_millis(100));
    assert_eq!(requester_cqes(&wa), [(cqe_opcode::REQ, None, s7)], "{wa:?}");
    assert_eq!(wa.iter().filter(|w| w.opcode == cqe_opcode::RESP_SEND).count(), 1);
    for i in 0..8u8 {
        assert_eq!(mr_b.buf.read(64 * usize::from(i), 8), [i; 8], "SEND {i} in its receive");
    }
    assert!(p.cq_a.wait(&p.engine, 1, Duration::from_millis(50)).is_empty(), "each once");
}

/// With `sq_sig_all` every WQE completes with a CQE, also those an ACK covers together.
#[test]
fn with_sq_sig_all_an_ack_for_several_sends_completes_each() {
    let mut p = pair_signalling("ackall", rc_attrs(), 64, 64, true);
    let mr_a = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let mr_b = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    post_receives(&mut p, 4, &mr_a, &mr_b);
    let sent: Vec<u16> = (0..3).map(|i| p.a.post_send(&p.engine, &small_send(i, false))).collect();
    assert_eq!(p.cq_b.wait(&p.engine, 3, WAIT).len(), 3);
    // B's SEND carries the ACK of all three.
    p.b.post_send(&p.engine, &small_send(0xb0, false));
    let wa = p.cq_a.wait(&p.engine, 4, WAIT);
    let ok = |c: u16| (cqe_opcode::REQ, None, c);
    assert_eq!(requester_cqes(&wa), [ok(sent[0]), ok(sent[1]), ok(sent[2])]);
}

/// An ACK that covers the first SEND only (riding on B's SEND), then an RNR NAK for the
/// second (no receive posted): the first is retired, the second and a signalled third are
/// transmitted again once receives are posted, and the third completes.
#[test]
fn an_rnr_nak_after_an_ack_for_the_sends_before_it() {
    let mut p = pair("ackrnr", rc_attrs()); // rnr_retry 7: forever
    let mr_a = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let mr_b = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    post_receives(&mut p, 1, &mr_a, &mr_b);
    p.a.post_send(&p.engine, &small_send(0, false));
    assert_eq!(p.cq_b.wait(&p.engine, 1, WAIT).len(), 1);
    // B has not read these yet when its SEND, with the ACK of the first, goes out.
    p.a.post_send(&p.engine, &small_send(1, false));
    let s2 = p.a.post_send(&p.engine, &small_send(2, true));
    p.b.post_send(&p.engine, &small_send(0xb0, false));
    let wa = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(wa[0].opcode, cqe_opcode::RESP_SEND);
    for _ in 0..20 {
        p.engine.progress();
    }
    assert!(p.cq_a.poll_one().is_none(), "nothing completes while B has no receive");
    for i in 1..3 {
        p.b.post_recv(&[(mr_b.addr() + 64 * i, 64, mr_b.key)]);
    }
    let wb = p.cq_b.wait(&p.engine, 2, WAIT);
    assert_eq!(
        wb.iter().map(|w| (w.opcode, w.wqe_counter)).collect::<Vec<_>>(),
        [(cqe_opcode::RESP_SEND, 1), (cqe_opcode::RESP_SEND, 2)]
    );
    assert_eq!(mr_b.buf.read(64, 8), [1; 8]);
    assert_eq!(mr_b.buf.read(128, 8), [2; 8]);
    let wa = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(requester_cqes(&wa), [(cqe_opcode::REQ, None, s2)]);
}

/// An ACK (riding on B's SEND) retires the first SEND; a WRITE behind it is NAKed for a
/// bad rkey: it completes in error although unsignalled, the signalled SEND behind it is
/// flushed, and the retired SEND has no CQE.
#[test]
fn a_nak_after_an_ack_for_the_send_before_it() {
    let mut p = pair("acknak", rc_attrs());
    let mr_a = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let mr_b = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    post_receives(&mut p, 2, &mr_a, &mr_b);
    p.a.post_send(&p.engine, &small_send(0, false));
    assert_eq!(p.cq_b.wait(&p.engine, 1, WAIT).len(), 1);
    let bad_write = SendWr {
        opcode: opcode::RDMA_WRITE,
        inline: Some(vec![1; 8]),
        remote: Some((mr_b.addr() + 1024, mr_b.key ^ 0x100)),
        ..Default::default()
    };
    let w1 = p.a.post_send(&p.engine, &bad_write);
    let s2 = p.a.post_send(&p.engine, &small_send(2, true));
    p.b.post_send(&p.engine, &small_send(0xb0, false));
    let wa = p.cq_a.wait(&p.engine, 3, WAIT);
    assert_eq!(
        requester_cqes(&wa),
        [
            (cqe_opcode::REQ_ERR, Some(cqe_syndrome::REMOTE_ACCESS_ERR), w1),
            (cqe_opcode::REQ_ERR, Some(cqe_syndrome::WR_FLUSH_ERR), s2),
        ]
    );
    assert_eq!(mr_b.buf.read(1024, 8), [0; 8], "nothing written by the bad WRITE");
}

#[test]
fn inline_data_at_the_size_limits_and_sixteen_sges() {
    let mut p = pair("inline", rc_attrs());
    let dst = Mr::new(&p.engine, p.pdn, 1 << 16, ALL_ACCESS);
    for len in [0usize, 1, 12, 28, 60, 188, 444] {
        let data: Vec<u8> = (0..len).map(|i| (i as u8) ^ 0x5a).collect();
        p.b.post_recv(&[(dst.addr(), 1024, dst.key)]);
        let wr = SendWr {
            opcode: opcode::SEND,
            inline: Some(data.clone()),
            signaled: true,
            ..Default::default()
        };
        p.a.post_send(&p.engine, &wr);
        let wb = p.cq_b.wait(&p.engine, 1, WAIT);
        assert_eq!(wb[0].byte_cnt as usize, len, "inline {len}");
        assert_eq!(dst.buf.read(0, len), data);
        p.cq_a.wait(&p.engine, 1, WAIT);
    }
    // 16 gather segments into 16 scatter segments of different sizes.
    let src = Mr::new(&p.engine, p.pdn, 1 << 16, ALL_ACCESS);
    let pattern: Vec<u8> = (0..(1u32 << 16)).map(|i| (i % 251) as u8).collect();
    src.buf.write(0, &pattern);
    let gather: Vec<_> =
        (0..16u64).map(|i| (src.addr() + i * 1000, 100 + i as u32, src.key)).collect();
    let total: u32 = gather.iter().map(|g| g.1).sum();
    let scatter: Vec<_> = (0..16u64).map(|i| (dst.addr() + i * 2000, 120, dst.key)).collect();
    dst.buf.fill(0);
    p.b.post_recv(&scatter);
    p.a.post_send(&p.engine, &send(gather.clone()));
    let wb = p.cq_b.wait(&p.engine, 1, WAIT);
    assert_eq!(wb[0].byte_cnt, total);
    let sent: Vec<u8> = gather
        .iter()
        .flat_map(|&(a, l, _)| {
            let off = (a - src.addr()) as usize;
            pattern[off..off + l as usize].to_vec()
        })
        .collect();
    let mut received = Vec::new();
    let mut left = total as usize;
    for &(a, l, _) in &scatter {
        let take = left.min(l as usize);
        received.extend(dst.buf.read((a - dst.addr()) as usize, take));
        left -= take;
    }
    assert_eq!(received, sent);
}

#[test]
fn large_messages_cross_in_segments() {
    let mut p = pair("large", rc_attrs());
    let len = 1 << 20;
    let src = Mr::new(&p.engine, p.pdn, len, ALL_ACCESS);
    let dst = Mr::new(&p.engine, p.pdn, len, ALL_ACCESS);
    let back = Mr::new(&p.engine, p.pdn, len, ALL_ACCESS);
    let pattern: Vec<u8> =
        (0..len as u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    src.buf.write(0, &pattern);
    p.b.post_recv(&[(dst.addr(), len as u32, dst.key)]);
    p.a.post_send(&p.engine, &send(vec![(src.addr(), len as u32, src.key)]));
    let wb = p.cq_b.wait(&p.engine, 1, WAIT);
    assert_eq!(wb[0].byte_cnt as usize, len);
    assert!(dst.buf.read(0, len) == pattern, "1 MiB SEND intact");
    p.cq_a.wait(&p.engine, 1, WAIT);
    let read = SendWr {
        opcode: opcode::RDMA_READ,
        sges: vec![(back.addr(), len as u32, back.key)],
        remote: Some((dst.addr(), dst.key)),
        signaled: true,
        ..Default::default()
    };
    p.a.post_send(&p.engine, &read);
    let r = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(r[0].byte_cnt as usize, len);
    assert!(back.buf.read(0, len) == pattern, "1 MiB READ intact");

    // A WRITE and a SEND of 1 MiB + 50 bytes, gathered from uneven pieces of `src` whose
    // ends fall inside segments and whose last 50 bytes (a segment of their own,
    // sent as a small record) span two pieces; the WRITE lands at an odd offset, the SEND
    // scatters across receive segments of uneven sizes. Each crosses the ring many times.
    let pieces: [(usize, u32); 7] =
        [(3, 7), (20, 16389), (17000, 100), (40001, 983_040), (5, 49_040), (11, 20), (900, 30)];
    let total: usize = pieces.iter().map(|&(_, l)| l as usize).sum();
    assert_eq!(total, len + 50);
    let sent: Vec<u8> =
        pieces.iter().flat_map(|&(at, l)| pattern[at..at + l as usize].iter().copied()).collect();
    let gather: Vec<_> =
        pieces.iter().map(|&(at, l)| (src.addr() + at as u64, l, src.key)).collect();
    let far = Mr::new(&p.engine, p.pdn, 2 * len, ALL_ACCESS);
    let write = SendWr {
        opcode: opcode::RDMA_WRITE,
        sges: gather.clone(),
        remote: Some((far.addr() + 12_345, far.key)),
        signaled: true,
        ..Default::default()
    };
    p.a.post_send(&p.engine, &write);
    let w = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!((w[0].opcode, w[0].wqe_opcode), (cqe_opcode::REQ, opcode::RDMA_WRITE));
    assert!(far.buf.read(12_345, total) == sent, "gathered WRITE intact");
    assert!(far.buf.read(0, 12_345).iter().all(|&b| b == 0), "nothing before the target");
    assert!(far.buf.read(12_345 + total, 100).iter().all(|&b| b == 0), "nor after it");

    let scatter: Vec<_> = [(0u64, 5u32), (100, 16_380), (20_000, 700_001), (800_000, 400_000)]
        .iter()
        .map(|&(at, l)| (far.addr() + at, l, far.key))
        .collect();
    far.buf.fill(0);
    p.b.post_recv(&scatter);
    p.a.post_send(&p.engine, &send(gather));
    let wb = p.cq_b.wait(&p.engine, 1, WAIT);
    assert_eq!(wb[0].byte_cnt as usize, total);
    let mut received = Vec::new();
    for &(addr, l, _) in &scatter {
        let take = (total - received.len()).min(l as usize);
        received.extend(far.buf.read((addr - far.addr()) as usize, take));
    }
    assert!(received == sent, "gathered SEND scattered intact");
    p.cq_a.wait(&p.engine, 1, WAIT);
}

#[test]
fn queues_wrap_many_times() {
    // 8-WQEBB send queue, 4-entry receive queue, 16-entry CQs: 100 round trips wrap the SQ
    // 12 times, the RQ 25 times and the CQs 6+ times.
    let mut p = pair_with("wrap", rc_attrs(), 8, 4);
    let src = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let dst = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    for i in 0..100u32 {
        let msg = i.to_be_bytes();
        src.buf.write(0, &msg);
        let ridx = p.b.post_recv(&[(dst.addr(), 64, dst.key)]);
        // Alternate an inline WQE (1 WQEBB) with a 2-WQEBB one to wrap mid-WQE.
        let wr = if i % 2 == 0 {
            SendWr {
                opcode: opcode::SEND,
                inline: Some(msg.to_vec()),
                signaled: true,
                ..Default::default()
            }
        } else {
            let mut w = send(vec![(src.addr(), 4, src.key); 4]);
            w.sges.truncate(4);
            w
        };
        let sidx = p.a.post_send(&p.engine, &wr);
        let wb = p.cq_b.wait(&p.engine, 1, WAIT);
        assert_eq!(wb.len(), 1, "round {i}");
        assert_eq!(wb[0].wqe_counter, ridx, "round {i}");
        assert_eq!(dst.buf.read(0, 4), msg, "round {i}");
        let wa = p.cq_a.wait(&p.engine, 1, WAIT);
        assert_eq!(wa[0].wqe_counter, sidx, "round {i}");
    }
}

#[test]
fn local_protection_errors_then_flush() {
    let mut p = pair("lprot", rc_attrs());
    let src = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let readonly = Mr::new(&p.engine, p.pdn, 64, access::REMOTE_READ);
    let other_pd = Mr::new(&p.engine, p.pdn + 1, 64, ALL_ACCESS);
    let remote = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    // A bad lkey fails with LOCAL_PROT; the WQE after it is flushed.
    let bad = p.a.post_send(&p.engine, &send(vec![(src.addr(), 8, src.key ^ 0x100)]));
    let next = p.a.post_send(&p.engine, &send(vec![(src.addr(), 8, src.key)]));
    let w = p.cq_a.wait(&p.engine, 2, WAIT);
    assert_eq!(w.len(), 2);
    assert_eq!(
        (w[0].opcode, w[0].syndrome, w[0].wqe_counter),
        (cqe_opcode::REQ_ERR, Some(cqe_syndrome::LOCAL_PROT_ERR), bad)
    );
    assert_eq!((w[1].syndrome, w[1].wqe_counter), (Some(cqe_syndrome::WR_FLUSH_ERR), next));
    // Later posts flush at once.
    let later = p.a.post_send(&p.engine, &send(vec![(src.addr(), 8, src.key)]));
    let w = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!((w[0].syndrome, w[0].wqe_counter), (Some(cqe_syndrome::WR_FLUSH_ERR), later));

    // PD mismatch and RDMA READ into memory without LOCAL_WRITE: local protection too.
    for (what, wr) in [
        ("pd mismatch", send(vec![(other_pd.addr(), 8, other_pd.key)])),
        (
            "read without local write",
            SendWr {
                opcode: opcode::RDMA_READ,
                sges: vec![(readonly.addr(), 8, readonly.key)],
                remote: Some((remote.addr(), remote.key)),
                signaled: true,
                ..Default::default()
            },
        ),
    ] {
        let mut p = pair("lprot2", rc_attrs());
        let _keep = (&src, &readonly, &other_pd, &remote);
        // Re-register in this pair's engine with the same layout.
        let s2 = Mr::new(
            &p.engine,
            p.pdn + if what == "pd mismatch" { 1 } else { 0 },
            64,
            if what == "pd mismatch" { ALL_ACCESS } else { access::REMOTE_READ },
        );
        let r2 = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
        let mut wr = wr.clone();
        wr.sges = vec![(s2.addr(), 8, s2.key)];
        if wr.remote.is_some() {
            wr.remote = Some((r2.addr(), r2.key));
        }
        p.a.post_send(&p.engine, &wr);
        let w = p.cq_a.wait(&p.engine, 1, WAIT);
        assert_eq!(w[0].syndrome, Some(cqe_syndrome::LOCAL_PROT_ERR), "{what}");
    }
}

fn remote_error(
    tag: &str,
    remote_access: u32,
    qp_access: u32,
    op: u8,
    offset: u64,
    len: u32,
) -> Wc {
    let mut attrs = rc_attrs();
    attrs.access_flags = qp_access;
    let mut p = pair(tag, attrs);
    let local = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let remote = Mr::new(&p.engine, p.pdn, 64, remote_access | access::LOCAL_WRITE);
    let wr = SendWr {
        opcode: op,
        sges: vec![(local.addr(), len, local.key)],
        remote: Some((remote.addr() + offset, remote.key)),
        atomic: (op == opcode::ATOMIC_FA).then_some((1, 0)),
        signaled: true,
        ..Default::default()
    };
    p.a.post_send(&p.engine, &wr);
    let w = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(w.len(), 1, "{tag}: a completion");
    assert_eq!(remote.buf.read(0, 64), vec![0; 64], "{tag}: target memory untouched");
    w[0]
}

#[test]
fn remote_access_errors() {
    let rw = access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC;
    let e = |w: Wc| (w.opcode, w.syndrome);
    let rem = (cqe_opcode::REQ_ERR, Some(cqe_syndrome::REMOTE_ACCESS_ERR));
    assert_eq!(e(remote_error("w-noperm", access::REMOTE_READ, rw, opcode::RDMA_WRITE, 0, 8)), rem);
    assert_eq!(e(remote_error("r-noperm", access::REMOTE_WRITE, rw, opcode::RDMA_READ, 0, 8)), rem);
    assert_eq!(e(remote_error("a-noperm", access::REMOTE_WRITE, rw, opcode::ATOMIC_FA, 0, 8)), rem);
    assert_eq!(e(remote_error("w-range", rw, rw, opcode::RDMA_WRITE, 60, 8)), rem);
    assert_eq!(e(remote_error("w-qp", rw, access::REMOTE_READ, opcode::RDMA_WRITE, 0, 8)), rem);
    assert_eq!(
        e(remote_error("a-misaligned", rw, rw, opcode::ATOMIC_FA, 4, 8)),
        (cqe_opcode::REQ_ERR, Some(cqe_syndrome::REMOTE_INVAL_REQ_ERR))
    );
}

#[test]
fn bad_rkey_is_a_remote_access_error() {
    let mut p = pair("rkey", rc_attrs());
    let local = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let remote = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let wr = SendWr {
        opcode: opcode::RDMA_WRITE,
        sges: vec![(local.addr(), 8, local.key)],
        remote: Some((remote.addr(), remote.key.wrapping_add(0x100))),
        signaled: true,
        ..Default::default()
    };
    p.a.post_send(&p.engine, &wr);
    let w = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(w[0].syndrome, Some(cqe_syndrome::REMOTE_ACCESS_ERR));
}

#[test]
fn receive_too_small_fails_both_sides() {
    let mut p = pair("loclen", rc_attrs());
    let src = Mr::new(&p.engine, p.pdn, 256, ALL_ACCESS);
    let dst = Mr::new(&p.engine, p.pdn, 256, ALL_ACCESS);
    let ridx = p.b.post_recv(&[(dst.addr(), 16, dst.key)]);
    let spare = p.b.post_recv(&[(dst.addr(), 16, dst.key)]);
    p.a.post_send(&p.engine, &send(vec![(src.addr(), 100, src.key)]));
    let wa = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(wa[0].syndrome, Some(cqe_syndrome::REMOTE_INVAL_REQ_ERR));
    let wb = p.cq_b.wait(&p.engine, 2, WAIT);
    assert_eq!(
        (wb[0].opcode, wb[0].syndrome, wb[0].wqe_counter),
        (cqe_opcode::RESP_ERR, Some(cqe_syndrome::LOCAL_LENGTH_ERR), ridx)
    );
    assert_eq!(
        (wb[1].syndrome, wb[1].wqe_counter),
        (Some(cqe_syndrome::WR_FLUSH_ERR), spare),
        "the rest is flushed"
    );
}

#[test]
fn rnr_retry_exceeded_after_the_retry_count() {
    let mut attrs = rc_attrs();
    attrs.rnr_retry = 2;
    attrs.min_rnr_timer = 1; // 10 µs
    let mut p = pair("rnr", attrs);
    let src = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    p.a.post_send(&p.engine, &send(vec![(src.addr(), 8, src.key)]));
    let w = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(w[0].syndrome, Some(cqe_syndrome::RNR_RETRY_EXC_ERR));
}

#[test]
fn rnr_then_a_late_receive_succeeds() {
    let mut p = pair("rnrlate", rc_attrs()); // rnr_retry 7 = forever
    let src = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let dst = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    src.buf.write(0, b"late");
    p.a.post_send(&p.engine, &send(vec![(src.addr(), 4, src.key)]));
    assert!(p.cq_a.wait(&p.engine, 1, Duration::from_millis(50)).is_empty());
    p.b.post_recv(&[(dst.addr(), 64, dst.key)]);
    let wb = p.cq_b.wait(&p.engine, 1, WAIT);
    assert_eq!(wb[0].byte_cnt, 4);
    assert_eq!(dst.buf.read(0, 4), b"late");
    assert_eq!(p.cq_a.wait(&p.engine, 1, WAIT)[0].syndrome, None);
}

#[test]
fn moving_to_err_flushes_posted_receives_and_sends() {
    let mut p = pair("flush", rc_attrs());
    let dst = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let r: Vec<u16> = (0..3).map(|_| p.b.post_recv(&[(dst.addr(), 64, dst.key)])).collect();
    p.engine.modify_qp(p.b.qpn, ferrodat_abi::uverbs::qp_state::ERR, rc_attrs());
    let wb = p.cq_b.wait(&p.engine, 3, WAIT);
    assert_eq!(wb.iter().map(|w| w.wqe_counter).collect::<Vec<_>>(), r);
    assert!(wb.iter().all(
        |w| w.opcode == cqe_opcode::RESP_ERR && w.syndrome == Some(cqe_syndrome::WR_FLUSH_ERR)
    ));
}

/// RC completes in order and a QP in error flushes everything it still owns: the WQEs
/// behind a failed one — a NOP that needed no response and unsignalled ones included —
/// complete with WR_FLUSH_ERR, each with a CQE (mlx5_ib's drain waits for the flush of an
/// unsignalled WQE).
#[test]
fn every_wqe_behind_a_remote_error_is_flushed_even_a_nop() {
    let mut p = pair("errnop", rc_attrs());
    let local = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let remote = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    local.buf.fill(0xab);
    let write = |rkey: u32, signaled: bool| SendWr {
        opcode: opcode::RDMA_WRITE,
        sges: vec![(local.addr(), 8, local.key)],
        remote: Some((remote.addr() + 8, rkey)),
        signaled,
        ..Default::default()
    };
    let nop = |signaled: bool| SendWr { opcode: opcode::NOP, signaled, ..Default::default() };
    let posted = [
        p.a.post_send(&p.engine, &write(remote.key ^ 0x100, true)),
        p.a.post_send(&p.engine, &nop(true)),
        p.a.post_send(&p.engine, &nop(false)),
        p.a.post_send(&p.engine, &write(remote.key, false)),
    ];
    let w = p.cq_a.wait(&p.engine, 4, WAIT);
    let got: Vec<_> = w.iter().map(|w| (w.opcode, w.syndrome, w.wqe_counter)).collect();
    let flushed = |i: usize| (cqe_opcode::REQ_ERR, Some(cqe_syndrome::WR_FLUSH_ERR), posted[i]);
    assert_eq!(
        got,
        [
            (cqe_opcode::REQ_ERR, Some(cqe_syndrome::REMOTE_ACCESS_ERR), posted[0]),
            flushed(1),
            flushed(2),
            flushed(3),
        ]
    );
    assert_eq!(p.engine.qp_state(p.a.qpn), Some(ferrodat_abi::uverbs::qp_state::ERR));
    assert_eq!(remote.buf.read(0, 64), vec![0; 64], "nothing written behind the error");
    assert!(p.cq_a.wait(&p.engine, 1, Duration::from_millis(50)).is_empty(), "each once");
}

/// MODIFY_QP to ERR while a WRITE waits for its ACK: the NOP behind it is flushed too,
/// not completed (it cannot complete before the WRITE it follows).
#[test]
fn moving_to_err_flushes_a_nop_behind_an_unanswered_write() {
    let mut p = pair("errmod", rc_attrs());
    let local = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let remote = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let write = SendWr {
        opcode: opcode::RDMA_WRITE,
        sges: vec![(local.addr(), 8, local.key)],
        remote: Some((remote.addr(), remote.key)),
        signaled: true,
        ..Default::default()
    };
    let nop = SendWr { opcode: opcode::NOP, signaled: true, ..Default::default() };
    // No progress call between: B has not answered the WRITE yet.
    let posted = [p.a.post_send(&p.engine, &write), p.a.post_send(&p.engine, &nop)];
    p.engine.modify_qp(p.a.qpn, ferrodat_abi::uverbs::qp_state::ERR, rc_attrs());
    let w = p.cq_a.wait(&p.engine, 2, WAIT);
    let got: Vec<_> = w.iter().map(|w| (w.syndrome, w.wqe_counter)).collect();
    let flush = Some(cqe_syndrome::WR_FLUSH_ERR);
    assert_eq!(got, [(flush, posted[0]), (flush, posted[1])]);
}

/// mlx5 has no receive doorbell: the device reads the record, and a QP in ERR flushes a
/// receive posted to it at once (mlx5_ib's drain relies on it). One progress call — what
/// an empty poll makes — writes the flush CQE, and says so.
#[test]
fn a_receive_posted_in_err_is_flushed_by_one_progress_call() {
    let mut p = pair("errrecv", rc_attrs());
    let dst = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    p.engine.modify_qp(p.b.qpn, ferrodat_abi::uverbs::qp_state::ERR, rc_attrs());
    assert!(p.cq_b.poll_one().is_none());
    for _ in 0..2 {
        let r = p.b.post_recv(&[(dst.addr(), 64, dst.key)]);
        assert!(p.engine.progress(), "new completions to poll");
        let w = p.cq_b.poll_one().expect("flushed by that one call");
        assert_eq!(
            (w.opcode, w.syndrome, w.wqe_counter, w.qpn),
            (cqe_opcode::RESP_ERR, Some(cqe_syndrome::WR_FLUSH_ERR), r, p.b.qpn)
        );
        p.engine.progress();
        assert!(p.cq_b.poll_one().is_none(), "flushed once");
    }
    // In RESET the QP owns no receive: one posted there waits, without a completion.
    p.engine.modify_qp(p.b.qpn, ferrodat_abi::uverbs::qp_state::RESET, rc_attrs());
    p.b.post_recv(&[(dst.addr(), 64, dst.key)]);
    p.engine.progress();
    assert!(p.cq_b.wait(&p.engine, 1, Duration::from_millis(50)).is_empty());
}

#[test]
fn dead_peer_ends_in_retry_exceeded() {
    let mut attrs = rc_attrs();
    attrs.timeout = 8; // ~1 ms
    attrs.retry_cnt = 2;
    let mut p = pair("retry", attrs);
    let src = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let remote = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    p.engine.remove_qp(p.b.qpn); // the peer QP vanishes: nothing will answer
    let wr = SendWr {
        opcode: opcode::RDMA_WRITE,
        sges: vec![(src.addr(), 8, src.key)],
        remote: Some((remote.addr(), remote.key)),
        signaled: true,
        ..Default::default()
    };
    p.a.post_send(&p.engine, &wr);
    let w = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(w[0].syndrome, Some(cqe_syndrome::TRANSPORT_RETRY_EXC_ERR));
}

#[test]
fn a_wqe_the_hca_cannot_execute_is_a_local_qp_operation_error() {
    let mut p = pair("badop", rc_attrs());
    let wr = SendWr { opcode: 0x3e, signaled: true, ..Default::default() };
    let bad = p.a.post_send(&p.engine, &wr);
    let w = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(
        (w[0].opcode, w[0].syndrome, w[0].wqe_counter),
        (cqe_opcode::REQ_ERR, Some(cqe_syndrome::LOCAL_QP_OP_ERR), bad)
    );
}

#[test]
fn an_atomic_with_inline_data_fails_as_a_local_qp_operation_error_and_nothing_panics() {
    let mut p = pair("inlineatomic", rc_attrs());
    let target = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    // libmlx5 writes inline data for IBV_SEND_INLINE whatever the opcode.
    let wr = SendWr {
        opcode: opcode::ATOMIC_FA,
        inline: Some(vec![0; 8]),
        remote: Some((target.addr(), target.key)),
        atomic: Some((1, 0)),
        signaled: true,
        ..Default::default()
    };
    let bad = p.a.post_send(&p.engine, &wr);
    let w = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(
        (w[0].opcode, w[0].syndrome, w[0].wqe_counter),
        (cqe_opcode::REQ_ERR, Some(cqe_syndrome::LOCAL_QP_OP_ERR), bad)
    );
    assert_eq!(target.buf.read(0, 8), vec![0; 8], "nothing added");
}

#[test]
fn a_receive_buffer_with_a_bad_key_fails_both_sides() {
    let mut p = pair("remop", rc_attrs());
    let src = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let dst = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let ridx = p.b.post_recv(&[(dst.addr(), 64, dst.key ^ 0x100)]);
    p.a.post_send(&p.engine, &send(vec![(src.addr(), 8, src.key)]));
    let wa = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(
        wa[0].syndrome,
        Some(cqe_syndrome::REMOTE_OP_ERR),
        "requester: remote operational error"
    );
    let wb = p.cq_b.wait(&p.engine, 1, WAIT);
    assert_eq!(
        (wb[0].opcode, wb[0].syndrome, wb[0].wqe_counter),
        (cqe_opcode::RESP_ERR, Some(cqe_syndrome::LOCAL_PROT_ERR), ridx)
    );
    assert_eq!(dst.buf.read(0, 64), vec![0; 64], "nothing written");
}

#[test]
fn the_largest_inline_wqe() {
    // ds is 6 bits: 63 units of 16 bytes = ctrl (16) + inline header (4) + 988 bytes.
    let mut p = pair_with("maxinline", rc_attrs(), 64, 64);
    let dst = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let data: Vec<u8> = (0..988u32).map(|i| (i * 13) as u8).collect();
    p.b.post_recv(&[(dst.addr(), 4096, dst.key)]);
    let wr = SendWr {
        opcode: opcode::SEND,
        inline: Some(data.clone()),
        signaled: true,
        ..Default::default()
    };
    p.a.post_send(&p.engine, &wr);
    let wb = p.cq_b.wait(&p.engine, 1, WAIT);
    assert_eq!(wb[0].byte_cnt, 988);
    assert_eq!(dst.buf.read(0, 988), data);
}

/// CPU time (user + system) of this process's thread named `name`, from
/// `/proc/self/task/*/stat` (clock ticks).
fn thread_cpu_ticks(name: &str) -> Option<u64> {
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        // The kernel keeps the first 15 bytes of a thread's name.
        if comm.trim() != &name[..name.len().min(15)] {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
        // Fields after the parenthesised command: state is field 3, utime 14, stime 15.
        let rest = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        return Some(fields[11].parse::<u64>().ok()? + fields[12].parse::<u64>().ok()?);
    }
    None
}

#[test]
fn an_idle_progress_thread_costs_no_cpu() {
    let p = pair("idle", rc_attrs());
    p.engine.start_progress_thread().unwrap();
    let name = "softhca-softhca0";
    // Let it pass its spinning phase, then measure a quiet half second of its own CPU time.
    std::thread::sleep(Duration::from_millis(100));
    let before = thread_cpu_ticks(name).expect("the progress thread is running");
    std::thread::sleep(Duration::from_millis(500));
    let used = thread_cpu_ticks(name).expect("the progress thread is running") - before;
    // SAFETY: sysconf has no preconditions.
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    assert!(used * 1000 / ticks_per_s < 20, "idle progress thread used {used} ticks in 500 ms");
    p.engine.stop_progress_thread();
}

/// Rings polled directly while the application polls go back to notifications before the
/// progress thread sleeps: a SEND posted while it sleeps still wakes it and completes.
#[test]
fn a_sleeping_progress_thread_is_notified_after_rings_were_polled() {
    let mut p = pair("polled-then-sleep", rc_attrs());
    let src = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let dst = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    // Ping-pong driven by this thread: both inbound rings become polled.
    for i in 0..20u32 {
        p.b.post_recv(&[(dst.addr(), 64, dst.key)]);
        p.a.post_send(&p.engine, &send(vec![(src.addr(), 8, src.key)]));
        let wb = p.cq_b.wait(&p.engine, 1, WAIT);
        assert_eq!(wb.len(), 1, "message {i}");
        let wa = p.cq_a.wait(&p.engine, 1, WAIT);
        assert_eq!(wa.len(), 1, "send completion {i}");
    }
    // Now only the progress thread moves packets; let it reach its futex sleep.
    p.engine.start_progress_thread().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    p.b.post_recv(&[(dst.addr(), 64, dst.key)]);
    p.a.post_send(&p.engine, &send(vec![(src.addr(), 8, src.key)]));
    // Well within the sleeping thread's 1 s timeout: it must be woken, not time out.
    let deadline = std::time::Instant::now() + Duration::from_millis(500);
    let (mut got_b, mut got_a) = (None, None);
    while (got_b.is_none() || got_a.is_none()) && std::time::Instant::now() < deadline {
        got_b = got_b.or_else(|| p.cq_b.poll_one());
        got_a = got_a.or_else(|| p.cq_a.poll_one());
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(got_b.map(|w| w.opcode), Some(cqe_opcode::RESP_SEND), "the receive completed");
    assert_eq!(got_a.map(|w| w.syndrome), Some(None), "the send completed");
    p.engine.stop_progress_thread();
}

/// A device closed while its progress thread sleeps is gone at once (its QPs leave the
/// fabric), not when the thread's sleep ends, up to a second later.
#[test]
fn dropping_the_engine_while_its_progress_thread_sleeps_drops_it_at_once() {
    let fabric = TestFabric::new("drop-sleeping");
    // A name of its own: the other tests' progress threads are "softhca-softhca0".
    let engine = ferrodat_softhca::hca::engine::Engine::open_in(
        fabric.dir.clone(),
        "hcadrop",
        LOCALHOST_GID,
    )
    .unwrap();
    engine.start_progress_thread().unwrap();
    let name = "softhca-hcadrop";
    // Past its spinning phase: asleep, with no work, for up to a second.
    std::thread::sleep(Duration::from_millis(200));
    assert!(thread_cpu_ticks(name).is_some(), "the progress thread is running");
    let weak = std::sync::Arc::downgrade(&engine);
    drop(engine);
    // Only if our drop raced with a pass in progress does the thread drop it, at the
    // pass's end: well under 100 ms. The sleep it was in had 800 ms left.
    let deadline = std::time::Instant::now() + Duration::from_millis(100);
    while (weak.strong_count() > 0 || thread_cpu_ticks(name).is_some())
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(weak.strong_count(), 0, "the sleeping progress thread kept the engine alive");
    assert!(thread_cpu_ticks(name).is_none(), "the progress thread outlived its engine");
}

/// Two HCAs in one process (`hca1` at 127.0.0.1, `hca2` at 127.0.0.2), so that each
/// engine's work is its own: a QP on each, connected, with its own PD and CQ.
struct TwoHcas {
    e1: std::sync::Arc<ferrodat_softhca::hca::engine::Engine>,
    e2: std::sync::Arc<ferrodat_softhca::hca::engine::Engine>,
    pdn1: u32,
    pdn2: u32,
    cq1: Cq,
    cq2: Cq,
    qp1: Qp,
    qp2: Qp,
    gid2: [u8; 16],
    _fabric: TestFabric,
}

impl TwoHcas {
    fn new(tag: &str) -> TwoHcas {
        let fabric = TestFabric::new(tag);
        let mut gid2 = LOCALHOST_GID;
        gid2[15] = 2;
        let open = |name: &str, gid| {
            ferrodat_softhca::hca::engine::Engine::open_in(fabric.dir.clone(), name, gid).unwrap()
        };
        let (e1, e2) = (open(&format!("{tag}1"), LOCALHOST_GID), open(&format!("{tag}2"), gid2));
        let (pdn1, pdn2) = (e1.registry().alloc_pdn(), e2.registry().alloc_pdn());
        let (cq1, cq2) = (Cq::new(&e1, 256), Cq::new(&e2, 256));
        let qp1 = Qp::new(&e1, Self::spec(pdn1, &cq1));
        let qp2 = Qp::new(&e2, Self::spec(pdn2, &cq2));
        qp1.connect(&e1, gid2, qp2.qpn, rc_attrs());
        qp2.connect(&e2, LOCALHOST_GID, qp1.qpn, rc_attrs());
        TwoHcas { e1, e2, pdn1, pdn2, cq1, cq2, qp1, qp2, gid2, _fabric: fabric }
    }

    fn spec(pdn: u32, cq: &Cq) -> QpSpec {
        QpSpec::on_cq(pdn, cq, 64, 16)
    }

    /// Drives both engines until QP 1's CQ has a completion.
    fn wait1(&mut self) -> Wc {
        let TwoHcas { e1, e2, cq1, .. } = self;
        drive_until(e1, e2, cq1)
    }

    /// Drives both engines until QP 2's CQ has a completion.
    fn wait2(&mut self) -> Wc {
        let TwoHcas { e1, e2, cq2, .. } = self;
        drive_until(e1, e2, cq2)
    }
}

/// Drives both engines until `cq` has a completion.
fn drive_until(
    e1: &ferrodat_softhca::hca::engine::Engine,
    e2: &ferrodat_softhca::hca::engine::Engine,
    cq: &mut Cq,
) -> Wc {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        e1.progress();
        e2.progress();
        if let Some(wc) = cq.poll_one() {
            return wc;
        }
        assert!(std::time::Instant::now() < deadline, "no completion");
    }
}

/// A requester whose WRITE fills its ring waits for the peer to read; the peer's reading
/// wakes it (`ring.rs`, "Room") rather than leaving it to find the room at its next look,
/// which for a sleeping progress thread is up to a millisecond later. Two HCAs in one
/// process, so that each engine's work is its own: the requester's engine has nothing to
/// do, and says so, until the responder's engine reads.
#[test]
fn a_requester_waiting_for_ring_room_is_woken_when_the_peer_reads() {
    let mut h = TwoHcas::new("hcaroom");
    const LEN: usize = 1 << 20; // four rings' worth
    let src = Mr::new(&h.e1, h.pdn1, LEN, ALL_ACCESS);
    let dst = Mr::new(&h.e2, h.pdn2, LEN, ALL_ACCESS);
    let data: Vec<u8> = (0..LEN).map(|i| (i * 7 + i / 4096) as u8).collect();
    src.buf.write(0, &data);
    h.qp1.post_send(
        &h.e1,
        &write_wr(vec![(src.addr(), LEN as u32, src.key)], (dst.addr(), dst.key)),
    );
    // The doorbell filled the ring; the requester has nothing to do until the peer reads.
    while h.e1.progress() {}
    assert!(!h.e1.progress(), "the requester's engine found work before the peer read");
    assert!(h.e2.progress(), "the responder read the ring");
    assert!(h.e1.progress(), "the responder's reading woke the requester");
    let wc = h.wait1();
    assert_eq!(wc.syndrome, None, "{wc:?}");
    assert!(dst.buf.read(0, LEN) == data, "the WRITE's bytes arrived intact");
}

/// A requester reconnected (RESET, then RTR to a new peer QP) while its ring still holds
/// what the old peer never read: the old epoch's bytes count as used until the new peer
/// skips them, which it does at its first look, so the requester announces itself even
/// when its first push does not fit; the new peer's look then grants the room. Before,
/// nobody told the new peer anything, and the WRITE waited for ever without even a
/// timeout (no request had gone out). In both orders of the two sides' connects.
#[test]
fn a_requester_reconnected_with_a_full_ring_reaches_its_new_peer() {
    for new_peer_connects_first in [false, true] {
        let mut h = TwoHcas::new("hcarc");
        const LEN: usize = 1 << 20;
        let src = Mr::new(&h.e1, h.pdn1, LEN, ALL_ACCESS);
        src.buf.fill(0x5c);
        let dst = Mr::new(&h.e2, h.pdn2, LEN, ALL_ACCESS);
        let write = |len: usize, to: &Mr| {
            write_wr(vec![(src.addr(), len as u32, src.key)], (to.addr(), to.key))
        };
        h.qp1.post_send(&h.e1, &write(LEN, &dst));
        while h.e1.progress() {}
        // The old peer goes away unread; the requester reconnects to a new QP.
        h.e2.modify_qp(h.qp2.qpn, qp_state::RESET, rc_attrs());
        h.e1.modify_qp(h.qp1.qpn, qp_state::RESET, rc_attrs());
        h.qp1.sq_pi = 0;
        while h.cq1.poll_one().is_some() {}
        let new_peer = Qp::new(&h.e2, TwoHcas::spec(h.pdn2, &h.cq2));
        if new_peer_connects_first {
            new_peer.connect(&h.e2, LOCALHOST_GID, h.qp1.qpn, rc_attrs());
            for _ in 0..10 {
                h.e2.progress();
            }
            h.qp1.connect(&h.e1, h.gid2, new_peer.qpn, rc_attrs());
        } else {
            h.qp1.connect(&h.e1, h.gid2, new_peer.qpn, rc_attrs());
            new_peer.connect(&h.e2, LOCALHOST_GID, h.qp1.qpn, rc_attrs());
        }
        // The new peer's own first announcement (at RTR, as the requester's), out of the
        // way: it would wake the requester too.
        h.e2.sq_doorbell(new_peer.qpn);
        while h.e1.progress() {}
        let dst_new = Mr::new(&h.e2, h.pdn2, 1 << 16, ALL_ACCESS);
        h.qp1.post_send(&h.e1, &write(1 << 16, &dst_new));
        // The first push did not fit, and told the new peer; its first look skips the old
        // epoch's bytes, which frees the room, and wakes the requester (at its pass's end:
        // it read no record).
        while h.e1.progress() {}
        assert!(
            h.e2.progress(),
            "the new peer was told (new peer first: {new_peer_connects_first})"
        );
        assert!(h.e1.progress(), "the new peer's look woke the requester");
        let wc = h.wait1();
        assert_eq!(wc.syndrome, None, "{wc:?}");
        assert!(dst_new.buf.read(0, 1 << 16).iter().all(|&b| b == 0x5c), "the bytes arrived");
    }
}

/// What lands of a message through the ring whose buffer is deregistered part-way, as an
/// HCA checks the key at each packet: nothing after DEREG_MR, and the request fails.
/// `landed` counts the leading bytes of `buf` (filled with 0xee) that now hold `byte`.
fn landed(buf: &Mr, len: usize, byte: u8) -> usize {
    buf.buf.read(0, len).iter().take_while(|&&b| b == byte).count()
}

/// A WRITE through the ring whose target region is deregistered between two segments
/// fails with a remote access error, and no later segment lands.
#[test]
fn a_write_whose_target_is_deregistered_part_way_lands_no_more() {
    let mut h = TwoHcas::new("hcaderegw");
    const LEN: usize = 1 << 20;
    let src = Mr::new(&h.e1, h.pdn1, LEN, ALL_ACCESS);
    src.buf.fill(0x11);
    let dst = Mr::new(&h.e2, h.pdn2, LEN, ALL_ACCESS);
    dst.buf.fill(0xee);
    h.qp1.post_send(
        &h.e1,
        &write_wr(vec![(src.addr(), LEN as u32, src.key)], (dst.addr(), dst.key)),
    );
    while h.e1.progress() {}
    h.e2.progress();
    let before = landed(&dst, LEN, 0x11);
    assert!(before > 0 && before < LEN, "part of the WRITE landed first: {before}");
    h.e2.remove_memory_region(dst.key >> 8);
    let wc = h.wait1();
    assert_eq!(wc.syndrome, Some(cqe_syndrome::REMOTE_ACCESS_ERR), "{wc:?}");
    assert_eq!(landed(&dst, LEN, 0x11), before, "bytes landed after DEREG_MR");
    assert!(dst.buf.read(before, LEN - before).iter().all(|&b| b == 0xee));
    assert_eq!(h.e2.qp_state(h.qp2.qpn), Some(qp_state::ERR));
}

/// A SEND through the ring whose receive buffer is deregistered between two segments: the
/// receive completes with a local protection error, the SEND with a remote operation
/// error, and no later segment lands.
#[test]
fn a_send_whose_receive_buffer_is_deregistered_part_way_lands_no_more() {
    let mut h = TwoHcas::new("hcaderegs");
    const LEN: usize = 1 << 20;
    let src = Mr::new(&h.e1, h.pdn1, LEN, ALL_ACCESS);
    src.buf.fill(0x22);
    let rbuf = Mr::new(&h.e2, h.pdn2, LEN, ALL_ACCESS);
    rbuf.buf.fill(0xee);
    h.qp2.post_recv(&[(rbuf.addr(), LEN as u32, rbuf.key)]);
    h.qp1.post_send(
        &h.e1,
        &SendWr { signaled: true, ..send(vec![(src.addr(), LEN as u32, src.key)]) },
    );
    while h.e1.progress() {}
    h.e2.progress();
    let before = landed(&rbuf, LEN, 0x22);
    assert!(before > 0 && before < LEN, "part of the SEND landed first: {before}");
    h.e2.remove_memory_region(rbuf.key >> 8);
    let recv = h.wait2();
    assert_eq!(recv.syndrome, Some(cqe_syndrome::LOCAL_PROT_ERR), "{recv:?}");
    let sent = h.wait1();
    assert_eq!(sent.syndrome, Some(cqe_syndrome::REMOTE_OP_ERR), "{sent:?}");
    assert_eq!(landed(&rbuf, LEN, 0x22), before, "bytes landed after DEREG_MR");
}

/// A READ through the ring whose source region the responder deregisters while its data
/// goes out: the responder NAKs it (remote access error) instead of reading memory it no
/// longer may, and ends in ERR; what it sent before lands, nothing after.
#[test]
fn a_read_whose_source_is_deregistered_part_way_reads_no_more() {
    let mut h = TwoHcas::new("hcaderegr");
    const LEN: usize = 1 << 20;
    let source = Mr::new(&h.e2, h.pdn2, LEN, ALL_ACCESS);
    source.buf.fill(0x33);
    let sink = Mr::new(&h.e1, h.pdn1, LEN, ALL_ACCESS);
    sink.buf.fill(0xee);
    let read = read_wr(vec![(sink.addr(), LEN as u32, sink.key)], (source.addr(), source.key));
    h.qp1.post_send(&h.e1, &read);
    while h.e1.progress() {}
    // The responder fills its ring with the first segments of the READ data.
    h.e2.progress();
    h.e2.remove_memory_region(source.key >> 8);
    let wc = h.wait1();
    assert_eq!(wc.syndrome, Some(cqe_syndrome::REMOTE_ACCESS_ERR), "{wc:?}");
    let got = landed(&sink, LEN, 0x33);
    assert!(got < LEN, "the whole READ arrived");
    assert!(sink.buf.read(got, LEN - got).iter().all(|&b| b == 0xee), "partial segments");
    assert_eq!(h.e2.qp_state(h.qp2.qpn), Some(qp_state::ERR));
}

/// Once the device failed (its registry lost), a MODIFY_QP that reaches the engine after
/// the failure moved its QPs to ERR cannot take one out again: the kernel's check may have
/// passed just before the failure, so the engine refuses every transition but to ERR or
/// RESET under its own lock.
#[test]
fn a_failed_device_keeps_its_qps_out_of_the_states_that_take_requests() {
    let p = pair("failed-device", rc_attrs());
    let registry = p.engine.registry().path().to_owned();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&registry)
        .and_then(|f| f.set_len(0))
        .expect("truncate the registry");
    for _ in 0..8 {
        p.engine.progress();
    }
    assert!(p.engine.is_fatal());
    assert_eq!(p.engine.qp_state(p.a.qpn), Some(qp_state::ERR));
    let attrs = ferrodat_softhca::hca::queue_pair::QpAttributes {
        dest_qpn: p.b.qpn,
        dgid: LOCALHOST_GID,
        ..rc_attrs()
    };
    for state in [qp_state::INIT, qp_state::RTR, qp_state::RTS] {
        assert!(!p.engine.modify_qp(p.a.qpn, state, attrs), "to {state}");
        assert_eq!(p.engine.qp_state(p.a.qpn), Some(qp_state::ERR), "to {state}");
    }
    assert!(p.engine.modify_qp(p.a.qpn, qp_state::RESET, attrs));
    assert_eq!(p.engine.qp_state(p.a.qpn), Some(qp_state::RESET));
    assert!(!p.engine.modify_qp(p.a.qpn, qp_state::INIT, attrs), "a reset QP stays in RESET");
}
