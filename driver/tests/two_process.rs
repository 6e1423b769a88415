//! The data path between two processes over softhca: this test process owns one side of
//! each connection, a re-executed copy of it (role `peer`, see `support`) the other. Every
//! test runs on its own private fabric directory, removed at the end, and checks what a
//! user relies on: data byte for byte, wr_ids in order, statuses, queue space.

mod support;

use ferrodat_driver::completion::{WcOpcode, WcStatus, WorkCompletion};
use ferrodat_driver::work_request::{
    Payload, PostErrorReason, RecvWr, SendFlags, SendOp, SendWr, Sge,
};
use ferrodat_driver::{Access, CompChannel, Cq, CqOptions, QpCaps, QpState};
use support::*;

/// The peer process (does nothing unless re-executed in the peer role).
#[test]
fn peer_role() {
    peer_main();
}

fn caps(send_wr: u32, recv_wr: u32, sge: u32, inline: u32) -> QpCaps {
    QpCaps {
        max_send_wr: send_wr,
        max_recv_wr: recv_wr,
        max_send_sge: sge,
        max_recv_sge: sge,
        max_inline_data: inline,
    }
}

/// Polls exactly one completion (fails after `WAIT`).
fn one(cq: &mut Cq) -> WorkCompletion {
    let got = poll_n(cq, 1);
    assert_eq!(got.len(), 1, "no completion within {WAIT:?}");
    got[0]
}

fn assert_wc(w: &WorkCompletion, wr_id: u64, opcode: WcOpcode, status: WcStatus) {
    assert_eq!((w.wr_id, w.opcode, w.status), (wr_id, opcode, status), "{w:?}");
}

#[test]
fn every_opcode_moves_the_right_bytes() {
    let mut f = Fixture::new("opcodes", &[]);
    {
        let mr = f.pd.alloc_mr(1 << 20, Access::ALL).unwrap();
        let mut cq = cq(&f.ctx, 64);
        let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(32, 16, 1, 64));
        let p = f.peer_qp(caps(16, 16, 1, 0), false);
        f.connect(&mut qp, p, 7);

        // SEND: 3000 bytes land in the peer's receive.
        let data = pattern(1, 3000);
        mr.write(0, &data).unwrap();
        f.peer_post(&format!("RECV {} 11 0:4096", p.0));
        qp.post_send(&[SendWr::new(1, SendOp::Send, Payload::Sges(&[mr.sge(0, 3000).unwrap()]))])
            .unwrap();
        assert_wc(&one(&mut cq), 1, WcOpcode::Send, WcStatus::Success);
        let r = f.peer_poll("r", 1);
        assert_wc(&r[0], 11, WcOpcode::Recv, WcStatus::Success);
        assert_eq!((r[0].byte_len, r[0].imm(), r[0].src_qp), (3000, None, qp.qpn()));
        assert_eq!(f.peer_data(0, 3000), data);

        // SEND with immediate: the imm is in the receive completion.
        f.peer_post(&format!("RECV {} 12 4096:4096", p.0));
        let sge = mr.sge(100, 16).unwrap();
        qp.post_send(&[SendWr::new(2, SendOp::SendImm(0xdead_beef), Payload::Sges(&[sge]))])
            .unwrap();
        assert_wc(&one(&mut cq), 2, WcOpcode::Send, WcStatus::Success);
        let r = f.peer_poll("r", 1);
        assert_wc(&r[0], 12, WcOpcode::Recv, WcStatus::Success);
        assert_eq!((r[0].byte_len, r[0].imm()), (16, Some(0xdead_beef)));
        assert_eq!(f.peer_data(4096, 16), data[100..116]);

        // RDMA WRITE: no receive consumed, the bytes land at the remote address.
        let w = SendOp::RdmaWrite(f.remote(100_000));
        qp.post_send(&[SendWr::new(3, w, Payload::Sges(&[mr.sge(0, 3000).unwrap()]))]).unwrap();
        assert_wc(&one(&mut cq), 3, WcOpcode::RdmaWrite, WcStatus::Success);
        assert_eq!(f.peer_data(100_000, 3000), data);

        // RDMA WRITE with immediate: consumes a receive (no scatter list needed).
        f.peer_post(&format!("RECV {} 13 -", p.0));
        let w = SendOp::RdmaWriteImm(f.remote(200_000), 0xabcd);
        qp.post_send(&[SendWr::new(4, w, Payload::Sges(&[mr.sge(500, 32).unwrap()]))]).unwrap();
        assert_wc(&one(&mut cq), 4, WcOpcode::RdmaWrite, WcStatus::Success);
        let r = f.peer_poll("r", 1);
        assert_wc(&r[0], 13, WcOpcode::RecvRdmaWithImm, WcStatus::Success);
        assert_eq!((r[0].byte_len, r[0].imm()), (32, Some(0xabcd)));
        assert_eq!(f.peer_data(200_000, 32), data[500..532]);

        // RDMA READ: the peer's bytes land in our scatter entry; byte_len is the length.
        let remote_bytes = pattern(2, 5000);
        f.peer_fill(300_000, &remote_bytes);
        let rd = SendOp::RdmaRead(f.remote(300_000));
        qp.post_send(&[SendWr::new(5, rd, Payload::Sges(&[mr.sge(500_000, 5000).unwrap()]))])
            .unwrap();
        let w = one(&mut cq);
        assert_wc(&w, 5, WcOpcode::RdmaRead, WcStatus::Success);
        assert_eq!(w.byte_len, 5000);
        let mut got = vec![0u8; 5000];
        mr.read(500_000, &mut got).unwrap();
        assert_eq!(got, remote_bytes);

        // Fetch-and-add, then compare-and-swap (a hit, then a miss): the old value lands
        // in our 8 bytes, the target is updated (host byte order, as softhca keeps it).
        let v0: u64 = 0x0123_4567_89ab_cdef;
        f.peer_fill(400_000, &v0.to_ne_bytes());
        let old = |mr: &ferrodat_driver::MrBuf| {
            let mut b = [0u8; 8];
            mr.read(600_000, &mut b).unwrap();
            u64::from_ne_bytes(b)
        };
        let fa = SendOp::FetchAdd { remote: f.remote(400_000), add: 10 };
        qp.post_send(&[SendWr::new(6, fa, Payload::Sges(&[mr.sge(600_000, 8).unwrap()]))]).unwrap();
        let w = one(&mut cq);
        assert_wc(&w, 6, WcOpcode::FetchAdd, WcStatus::Success);
        assert_eq!(w.byte_len, 8);
        assert_eq!(old(&mr), v0);
        assert_eq!(f.peer_data(400_000, 8), (v0 + 10).to_ne_bytes());
        let cs = SendOp::CompareSwap { remote: f.remote(400_000), compare: v0 + 10, swap: 77 };
        qp.post_send(&[SendWr::new(7, cs, Payload::Sges(&[mr.sge(600_000, 8).unwrap()]))]).unwrap();
        assert_wc(&one(&mut cq), 7, WcOpcode::CompareSwap, WcStatus::Success);
        assert_eq!(old(&mr), v0 + 10);
        assert_eq!(f.peer_data(400_000, 8), 77u64.to_ne_bytes());
        let miss = SendOp::CompareSwap { remote: f.remote(400_000), compare: 5, swap: 99 };
        qp.post_send(&[SendWr::new(8, miss, Payload::Sges(&[mr.sge(600_000, 8).unwrap()]))])
            .unwrap();
        assert_wc(&one(&mut cq), 8, WcOpcode::CompareSwap, WcStatus::Success);
        assert_eq!(old(&mr), 77, "a failed compare still returns the old value");
        assert_eq!(f.peer_data(400_000, 8), 77u64.to_ne_bytes(), "and leaves it");

        // NOP: completes, touches nothing.
        qp.post_send(&[SendWr::new(9, SendOp::Nop, Payload::EMPTY)]).unwrap();
        assert_wc(&one(&mut cq), 9, WcOpcode::Nop, WcStatus::Success);
        assert!(f.peer_poll("r", 0).is_empty());
    }
    f.finish();
}

/// Message `k` of the wrap test: its length (1..=300, sometimes over the inline limit) and
/// bytes.
fn wrap_msg(k: u64) -> Vec<u8> {
    pattern(k as u32, (k * 37 % 300 + 1) as usize)
}

#[test]
fn small_rings_wrap_many_times_in_order() {
    // Both sides: SQ for 4 WRs, RQ of 4, CQs of 8 entries. Each round moves 4 messages each
    // way (4 sends + 4 receives = 8 CQEs on our CQ), with lengths from 1 to 300 bytes,
    // inline when they fit, so multi-block WQEs straddle the SQ's end.
    let mut f = Fixture::new("wrap", &[(PEER_CQE_ENV, "4")]);
    {
        let mr = f.pd.alloc_mr(1 << 16, Access::ALL).unwrap();
        let mut cq = cq(&f.ctx, 4);
        assert_eq!(cq.ncqe(), 8);
        let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(4, 4, 1, 64));
        let p = f.peer_qp(caps(4, 4, 1, 0), false);
        f.connect(&mut qp, p, 7);
        let g = *qp.geometry();
        let max_inline = qp.caps().max_inline_data as usize;
        let rounds = 30u64;
        let msgs = rounds * 4;
        assert!(
            msgs > 3 * u64::from(g.sq_wqe_cnt),
            "SQ of {} blocks wraps > 3 times",
            g.sq_wqe_cnt
        );
        assert!(msgs > 3 * u64::from(g.rq_wqe_cnt) && 2 * msgs > 3 * u64::from(cq.ncqe()));
        let mut wc = [WorkCompletion::default(); 4];
        for r in 0..rounds {
            // Us → peer.
            f.peer_post(&format!("RECVN {} 4 {} 0 512 512", p.0, r * 4));
            for j in 0..4u64 {
                let k = r * 4 + j;
                let m = wrap_msg(k);
                mr.write(j as usize * 512, &m).unwrap();
                let sge = [mr.sge(j as usize * 512, m.len()).unwrap()];
                let payload =
                    if m.len() <= max_inline { Payload::Inline(&m) } else { Payload::Sges(&sge) };
                qp.post_send(&[SendWr::new(k, SendOp::Send, payload)])
                    .unwrap_or_else(|e| panic!("message {k}: {e}"));
            }
            assert_eq!(cq.poll_wait(&mut wc, WAIT), 4, "round {r}");
            for (j, w) in wc.iter().enumerate() {
                assert_wc(w, r * 4 + j as u64, WcOpcode::Send, WcStatus::Success);
            }
            let got = f.peer_poll("r", 4);
            assert_eq!(got.len(), 4, "round {r}");
            let dump = f.peer_data(0, 4 * 512);
            for (j, w) in got.iter().enumerate() {
                let k = r * 4 + j as u64;
                let m = wrap_msg(k);
                assert_wc(w, k, WcOpcode::Recv, WcStatus::Success);
                assert_eq!(w.byte_len as usize, m.len());
                assert_eq!(dump[j * 512..j * 512 + m.len()], m[..], "message {k}");
            }
            // Peer → us: it echoes the 4 messages back into our receives.
            let sges: Vec<_> = (0..4).map(|j| mr.sge(8192 + j * 512, 512).unwrap()).collect();
            for (j, s) in sges.iter().enumerate() {
                qp.post_recv(&[RecvWr { wr_id: 1000 + r * 4 + j as u64, sges: &[*s] }]).unwrap();
            }
            for j in 0..4u64 {
                let len = wrap_msg(r * 4 + j).len();
                f.peer_post(&format!("SEND {} {} {}:{len}", p.0, 5000 + j, j * 512));
            }
            let sent = f.peer_poll("s", 4);
            assert!(sent.iter().all(|w| w.status == WcStatus::Success), "{sent:?}");
            assert_eq!(cq.poll_wait(&mut wc, WAIT), 4, "round {r}");
            for (j, w) in wc.iter().enumerate() {
                let k = r * 4 + j as u64;
                let m = wrap_msg(k);
                assert_wc(w, 1000 + k, WcOpcode::Recv, WcStatus::Success);
                assert_eq!(w.byte_len as usize, m.len());
                let mut got = vec![0u8; m.len()];
                mr.read(8192 + j * 512, &mut got).unwrap();
                assert_eq!(got, m, "echo of message {k}");
            }
        }
        assert_eq!(qp.send_space(), g.sq_wqe_cnt, "every block retired");
    }
    f.finish();
}

#[test]
fn inline_sizes_at_the_boundaries() {
    let mut f = Fixture::new("inline", &[]);
    {
        let mr = f.pd.alloc_mr(1 << 16, Access::ALL).unwrap();
        let mut cq = cq(&f.ctx, 64);
        let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(16, 16, 2, 100));
        let p = f.peer_qp(caps(16, 16, 1, 0), false);
        f.connect(&mut qp, p, 7);
        let max = qp.caps().max_inline_data as usize;
        assert!(max >= 100, "granted {max} inline bytes for 100 asked");
        assert_eq!(max, qp.geometry().sq_max_inline as usize, "caps and the queue agree");

        let sizes = [0, 1, max];
        for (i, &n) in sizes.iter().enumerate() {
            f.peer_post(&format!("RECV {} {i} {}:1024", p.0, i * 1024));
            let m = pattern(n as u32 + 3, n);
            qp.post_send(&[SendWr::new(i as u64, SendOp::Send, Payload::Inline(&m))])
                .unwrap_or_else(|e| panic!("{n} inline bytes: {e}"));
            assert_wc(&one(&mut cq), i as u64, WcOpcode::Send, WcStatus::Success);
            let r = f.peer_poll("r", 1);
            assert_wc(&r[0], i as u64, WcOpcode::Recv, WcStatus::Success);
            assert_eq!(r[0].byte_len as usize, n);
            assert_eq!(f.peer_data(i * 1024, n), m, "{n} inline bytes");
        }
        // max bytes gathered inline from two entries of registered memory.
        let m = pattern(9, max);
        mr.write(0, &m[..max / 2]).unwrap();
        mr.write(4000, &m[max / 2..]).unwrap();
        let two = [mr.sge(0, max / 2).unwrap(), mr.sge(4000, max - max / 2).unwrap()];
        f.peer_post(&format!("RECV {} 3 4096:1024", p.0));
        qp.post_send(&[SendWr::new(3, SendOp::Send, Payload::InlineSges(&two))]).unwrap();
        assert_wc(&one(&mut cq), 3, WcOpcode::Send, WcStatus::Success);
        assert_eq!(f.peer_poll("r", 1)[0].byte_len as usize, max);
        assert_eq!(f.peer_data(4096, max), m);

        // max + 1: refused, nothing posted (the queue space is unchanged, and in a batch
        // only the request before it reaches the peer).
        let space = qp.send_space();
        let long = pattern(5, max + 1);
        let e = qp.post_send(&[SendWr::new(4, SendOp::Send, Payload::Inline(&long))]).unwrap_err();
        assert_eq!(e.index, 0);
        assert_eq!(e.reason, PostErrorReason::InlineTooLong { given: max + 1, max: max as u32 });
        assert_eq!(qp.send_space(), space);
        let w = SendOp::RdmaWrite(f.remote(50_000));
        let e = qp
            .post_send(&[SendWr::new(5, w, Payload::InlineSges(&[mr.sge(0, max + 1).unwrap()]))])
            .unwrap_err();
        assert!(matches!(e.reason, PostErrorReason::InlineTooLong { .. }), "{e}");
        f.peer_post(&format!("RECVN {} 2 20 8192 1024 1024", p.0));
        let short = pattern(6, 10);
        let batch = [
            SendWr::new(6, SendOp::Send, Payload::Inline(&short)),
            SendWr::new(7, SendOp::Send, Payload::Inline(&long)),
            SendWr::new(8, SendOp::Send, Payload::Inline(&short)),
        ];
        let e = qp.post_send(&batch).unwrap_err();
        assert_eq!(e.index, 1);
        assert_wc(&one(&mut cq), 6, WcOpcode::Send, WcStatus::Success);
        // The next post goes right after wr 6: the peer's next receive gets it.
        let last = pattern(7, 20);
        qp.post_send(&[SendWr::new(9, SendOp::Send, Payload::Inline(&last))]).unwrap();
        assert_wc(&one(&mut cq), 9, WcOpcode::Send, WcStatus::Success);
        let r = f.peer_poll("r", 2);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].wr_id, r[0].byte_len, r[1].wr_id, r[1].byte_len), (20, 10, 21, 20));
        assert_eq!(f.peer_data(8192, 10), short);
        assert_eq!(f.peer_data(9216, 20), last);
        assert_eq!(f.peer_data(50_000, 8), [0u8; 8], "the refused RDMA WRITE never ran");
    }
    f.finish();
}

#[test]
fn gather_and_scatter_with_one_to_max_sges() {
    let mut f = Fixture::new("sges", &[]);
    {
        let mr = f.pd.alloc_mr(1 << 16, Access::ALL).unwrap();
        let mut cq = cq(&f.ctx, 64);
        let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(16, 16, 4, 0));
        let max_send = qp.caps().max_send_sge as usize;
        let max_recv = qp.caps().max_recv_sge as usize;
        assert!(max_send >= 4 && max_recv >= 4, "{:?}", qp.caps());
        let p = f.peer_qp(caps(16, 16, 4, 0), false);
        f.connect(&mut qp, p, 7);
        let src = pattern(11, 8192);
        mr.write(0, &src).unwrap();
        for k in 1..=max_send.min(max_recv) {
            // Gather k pieces of different lengths from scattered places.
            let lens: Vec<usize> = (0..k).map(|i| 13 + 50 * i + k).collect();
            let total: usize = lens.iter().sum();
            let sges: Vec<Sge> = lens
                .iter()
                .enumerate()
                .map(|(i, &l)| mr.sge(1000 * i + 7 * k, l).unwrap())
                .collect();
            let expected: Vec<u8> = lens
                .iter()
                .enumerate()
                .flat_map(|(i, &l)| src[1000 * i + 7 * k..1000 * i + 7 * k + l].to_vec())
                .collect();
            // Scatter into k entries split at other boundaries: the first k-1 take
            // `total / k` bytes each, the last the rest plus spare room.
            let piece = total / k;
            let rl: Vec<usize> =
                (0..k).map(|i| if i + 1 < k { piece } else { total + 64 }).collect();
            let base = 10_000 * k;
            let spec: Vec<String> =
                rl.iter().enumerate().map(|(i, &l)| format!("{}:{l}", base + 2000 * i)).collect();
            f.peer_post(&format!("RECV {} {k} {}", p.0, spec.join(",")));
            qp.post_send(&[SendWr::new(k as u64, SendOp::Send, Payload::Sges(&sges))])
                .unwrap_or_else(|e| panic!("{k} SGEs: {e}"));
            assert_wc(&one(&mut cq), k as u64, WcOpcode::Send, WcStatus::Success);
            let r = f.peer_poll("r", 1);
            assert_wc(&r[0], k as u64, WcOpcode::Recv, WcStatus::Success);
            assert_eq!(r[0].byte_len as usize, total);
            let mut at = 0;
            for (i, &l) in rl.iter().enumerate() {
                let n = l.min(total - at);
                assert_eq!(
                    f.peer_data(base + 2000 * i, n),
                    expected[at..at + n],
                    "{k} SGEs: receive entry {i}"
                );
                at += n;
            }
            // And the gathered message as one RDMA WRITE.
            let w = SendOp::RdmaWrite(f.remote(200_000 + 10_000 * k));
            qp.post_send(&[SendWr::new(100 + k as u64, w, Payload::Sges(&sges))]).unwrap();
            assert_wc(&one(&mut cq), 100 + k as u64, WcOpcode::RdmaWrite, WcStatus::Success);
            assert_eq!(f.peer_data(200_000 + 10_000 * k, total), expected);
        }
        // One more than the maximum: refused on both queues, nothing posted.
        let space = qp.send_space();
        let too_many: Vec<Sge> = (0..=max_send).map(|i| mr.sge(i * 8, 8).unwrap()).collect();
        let e =
            qp.post_send(&[SendWr::new(1, SendOp::Send, Payload::Sges(&too_many))]).unwrap_err();
        assert_eq!(
            (e.index, e.reason),
            (0, PostErrorReason::TooManySges { given: max_send + 1, max: max_send as u32 })
        );
        assert_eq!(qp.send_space(), space);
        let too_many: Vec<Sge> = (0..=max_recv).map(|i| mr.sge(i * 8, 8).unwrap()).collect();
        let e = qp.post_recv(&[RecvWr { wr_id: 1, sges: &too_many }]).unwrap_err();
        assert_eq!(
            (e.index, e.reason),
            (0, PostErrorReason::TooManySges { given: max_recv + 1, max: max_recv as u32 })
        );
        // Nothing was posted: a SEND from the peer lands in the next receive we post.
        qp.post_recv(&[RecvWr { wr_id: 77, sges: &[mr.sge(30_000, 64).unwrap()] }]).unwrap();
        f.peer_post(&format!("SEND {} 1 0:40", p.0));
        let w = one(&mut cq);
        assert_wc(&w, 77, WcOpcode::Recv, WcStatus::Success);
        assert_eq!(w.byte_len, 40);
        assert_eq!(f.peer_poll("s", 1)[0].status, WcStatus::Success);
    }
    f.finish();
}

#[test]
fn batched_posts_and_unsignalled_runs() {
    let mut f = Fixture::new("batch", &[]);
    {
        let mr = f.pd.alloc_mr(1 << 16, Access::ALL).unwrap();
        let mut cq = cq(&f.ctx, 16);
        let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(8, 16, 1, 0));
        let p = f.peer_qp(caps(16, 64, 1, 0), false);
        f.connect(&mut qp, p, 7);
        let blocks = qp.geometry().sq_wqe_cnt;
        assert_eq!(qp.send_space(), blocks);

        // Rounds of 8 RDMA WRITEs in one call, only the last signalled: one completion
        // per round frees all 8; over the rounds far more than the SQ holds.
        let rounds = 3 * blocks as usize / 8 + 2;
        for r in 0..rounds {
            let m = pattern(r as u32, 8 * 64);
            mr.write(0, &m).unwrap();
            let sges: Vec<[Sge; 1]> = (0..8).map(|i| [mr.sge(64 * i, 64).unwrap()]).collect();
            let wrs: Vec<SendWr> = (0..8)
                .map(|i| {
                    let w = SendOp::RdmaWrite(f.remote(r * 512 + 64 * i));
                    let flags = if i == 7 { SendFlags::SIGNALED } else { SendFlags::NONE };
                    SendWr::new((r * 8 + i) as u64, w, Payload::Sges(&sges[i])).flags(flags)
                })
                .collect();
            qp.post_send(&wrs).unwrap_or_else(|e| panic!("round {r}: {e}"));
            assert_wc(&one(&mut cq), (r * 8 + 7) as u64, WcOpcode::RdmaWrite, WcStatus::Success);
            assert_eq!(qp.send_space(), blocks, "round {r}: the signalled completion freed all");
            assert_eq!(f.peer_data(r * 512, 512), m, "round {r}");
        }
        // No completion came for the unsignalled ones: the next is a marker NOP.
        qp.post_send(&[SendWr::new(999, SendOp::Nop, Payload::EMPTY)]).unwrap();
        assert_wc(&one(&mut cq), 999, WcOpcode::Nop, WcStatus::Success);

        // Unsignalled requests hold their room until a later signalled one completes: fill
        // the SQ exactly — max_post requests, as rdma-core counts them, though these
        // one-block NOPs leave blocks free: more would overrun a CQ sized for max_send_wr
        // once they are signalled —, the next post is refused.
        let max_post = qp.geometry().sq_max_post;
        assert!(max_post >= 8 && max_post < blocks, "{max_post} of {blocks} blocks");
        assert_eq!(qp.caps().max_send_wr, max_post, "CREATE_QP reports what the queue takes");
        let sge = [mr.sge(0, 8).unwrap()];
        let unsignalled =
            |i: u64| SendWr::new(i, SendOp::Nop, Payload::Sges(&sge)).flags(SendFlags::NONE);
        let fill: Vec<SendWr> = (0..u64::from(max_post) - 1).map(unsignalled).collect();
        qp.post_send(&fill).unwrap();
        assert_eq!(qp.send_space(), blocks - (max_post - 1));
        let e = qp.post_send(&[unsignalled(500), unsignalled(501)]).unwrap_err();
        assert_eq!(e.index, 1);
        assert_eq!(e.reason, PostErrorReason::QueueFull { capacity: max_post });
        assert_eq!(qp.send_space(), blocks - max_post);
        assert!(poll_now(&mut cq).is_empty());
        // (wr 500 took the last block, unsignalled: nothing will ever free the queue but a
        // reset, as on hardware. Reconnect to carry on.)
        qp.reset().unwrap();
        assert_eq!(qp.send_space(), blocks);

        // Batched SENDs: one call, 8 SENDs, the peer's 8 receives complete in order.
        let p2 = f.peer_qp(caps(16, 64, 1, 0), false);
        f.connect(&mut qp, p2, 7);
        f.peer_post(&format!("RECVN {} 8 40 0 256 256", p2.0));
        let msgs: Vec<Vec<u8>> = (0..8).map(|i| pattern(40 + i, 10 + 20 * i as usize)).collect();
        for (i, m) in msgs.iter().enumerate() {
            mr.write(1000 + 256 * i, m).unwrap();
        }
        let sges: Vec<[Sge; 1]> = msgs
            .iter()
            .enumerate()
            .map(|(i, m)| [mr.sge(1000 + 256 * i, m.len()).unwrap()])
            .collect();
        let wrs: Vec<SendWr> = (0..8)
            .map(|i| {
                let flags = if i % 4 == 3 { SendFlags::SIGNALED } else { SendFlags::NONE };
                SendWr::new(i as u64, SendOp::Send, Payload::Sges(&sges[i])).flags(flags)
            })
            .collect();
        qp.post_send(&wrs).unwrap();
        let mut wc = [WorkCompletion::default(); 2];
        assert_eq!(cq.poll_wait(&mut wc, WAIT), 2);
        assert_eq!((wc[0].wr_id, wc[1].wr_id), (3, 7), "only the signalled ones complete");
        let r = f.peer_poll("r", 8);
        assert_eq!(r.len(), 8);
        for (i, w) in r.iter().enumerate() {
            assert_wc(w, 40 + i as u64, WcOpcode::Recv, WcStatus::Success);
            assert_eq!(f.peer_data(256 * i, msgs[i].len()), msgs[i]);
        }
    }
    f.finish();
}

/// Posts `wrs` and expects the first to fail with `status`, the rest (and the receives
/// posted before, `recv_ids`) flushed with their wr_ids; the QP ends in ERR.
fn expect_error_then_flush<'m>(
    qp: &mut ferrodat_driver::Qp<'m>,
    cq: &mut Cq,
    wrs: &[SendWr<'m, '_>],
    status: WcStatus,
    recv_ids: &[u64],
) {
    qp.post_send(wrs).unwrap();
    let got = poll_n(cq, wrs.len() + recv_ids.len());
    assert_eq!(got.len(), wrs.len() + recv_ids.len(), "{got:?}");
    let sends: Vec<_> = got.iter().filter(|w| w.opcode != WcOpcode::Recv).collect();
    let recvs: Vec<_> = got.iter().filter(|w| w.opcode == WcOpcode::Recv).collect();
    assert_eq!(sends.len(), wrs.len(), "{got:?}");
    assert_eq!((sends[0].wr_id, sends[0].status), (wrs[0].wr_id, status), "{got:?}");
    assert!(sends[0].syndrome().is_some());
    for (w, wr) in sends[1..].iter().zip(&wrs[1..]) {
        assert_eq!((w.wr_id, w.status), (wr.wr_id, WcStatus::Flushed), "{got:?}");
    }
    let ids: Vec<u64> = recvs.iter().map(|w| w.wr_id).collect();
    assert_eq!(ids, recv_ids, "{got:?}");
    assert!(recvs.iter().all(|w| w.status == WcStatus::Flushed), "{got:?}");
    assert_eq!(qp.query().unwrap().state, Some(QpState::Err));
    // A request posted to a QP in error is flushed too.
    qp.post_send(&[SendWr::new(4242, SendOp::Nop, Payload::EMPTY)]).unwrap();
    let w = one(cq);
    assert_eq!((w.wr_id, w.status), (4242, WcStatus::Flushed));
}

#[test]
fn error_completions_carry_their_status_and_flush_the_rest() {
    let mut f = Fixture::new("errors", &[]);
    {
        let mr = f.pd.alloc_mr(1 << 16, Access::ALL).unwrap();
        mr.write(0, &pattern(3, 4096)).unwrap();
        let mut cq = cq(&f.ctx, 64);
        let good = [mr.sge(0, 64).unwrap()];
        let nop = |id| SendWr::new(id, SendOp::Nop, Payload::EMPTY);

        // A bad lkey: local protection error.
        let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(16, 16, 1, 0));
        let p = f.peer_qp(caps(16, 16, 1, 0), false);
        f.connect(&mut qp, p, 7);
        qp.post_recv(&[RecvWr { wr_id: 50, sges: &good }, RecvWr { wr_id: 51, sges: &good }])
            .unwrap();
        // SAFETY: the address is registered (under another key); the device must refuse
        // the key and touch nothing.
        let bad = [unsafe { Sge::from_raw(mr.addr(), 64, mr.lkey() ^ 0x5a00) }];
        let wrs = [
            SendWr::new(1, SendOp::RdmaWrite(f.remote(0)), Payload::Sges(&bad)),
            SendWr::new(2, SendOp::RdmaWrite(f.remote(100)), Payload::Sges(&good)),
            nop(3),
        ];
        expect_error_then_flush(&mut qp, &mut cq, &wrs, WcStatus::LocalProtection, &[50, 51]);
        assert_eq!(f.peer_data(0, 256), [0u8; 256], "nothing written");
        drop(qp);

        // A bad rkey, and a range past the end of the peer's region: remote access error,
        // the peer's memory untouched.
        for (tag, remote) in [
            (
                "bad rkey",
                ferrodat_driver::work_request::Remote { rkey: f.peer_rkey ^ 0x100, ..f.remote(0) },
            ),
            ("past the end", f.remote(PEER_MR - 32)),
        ] {
            let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(16, 16, 1, 0));
            let p = f.peer_qp(caps(16, 16, 1, 0), false);
            f.connect(&mut qp, p, 7);
            let wrs = [
                SendWr::new(1, SendOp::RdmaWrite(remote), Payload::Sges(&good)),
                SendWr::new(2, SendOp::RdmaWrite(f.remote(4096)), Payload::Sges(&good)),
                SendWr::new(3, SendOp::RdmaWrite(f.remote(8192)), Payload::Sges(&good)),
            ];
            expect_error_then_flush(&mut qp, &mut cq, &wrs, WcStatus::RemoteAccess, &[]);
            assert_eq!(f.peer_data(0, 64), [0u8; 64], "{tag}: nothing written");
            assert_eq!(f.peer_data(PEER_MR - 32, 32), [0u8; 32], "{tag}: nothing written");
            // RDMA READ out of range fails the same way.
            drop(qp);
        }
        let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(16, 16, 1, 0));
        let p = f.peer_qp(caps(16, 16, 1, 0), false);
        f.connect(&mut qp, p, 7);
        let dst = [mr.sge(8192, 64).unwrap()];
        let wrs = [
            SendWr::new(1, SendOp::RdmaRead(f.remote(PEER_MR - 8)), Payload::Sges(&dst)),
            SendWr::new(2, SendOp::RdmaWrite(f.remote(8192)), Payload::Sges(&good)),
        ];
        expect_error_then_flush(&mut qp, &mut cq, &wrs, WcStatus::RemoteAccess, &[]);
        drop(qp);

        // No receive at the peer and rnr_retry 1: receiver-not-ready retries exceeded.
        let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(16, 16, 1, 0));
        let p = f.peer_qp(caps(16, 16, 1, 0), false);
        f.connect(&mut qp, p, 1);
        qp.post_recv(&[RecvWr { wr_id: 60, sges: &good }]).unwrap();
        let wrs = [
            SendWr::new(1, SendOp::Send, Payload::Sges(&good)),
            SendWr::new(2, SendOp::Send, Payload::Sges(&good)),
            SendWr::new(3, SendOp::RdmaWrite(f.remote(8192)), Payload::Sges(&good)),
        ];
        expect_error_then_flush(&mut qp, &mut cq, &wrs, WcStatus::RnrRetryExceeded, &[60]);
        assert!(f.peer_poll("r", 0).is_empty());
        drop(qp);

        // A receive too small for the message: local length error at the receiver, remote
        // invalid request at the sender.
        let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(16, 16, 1, 0));
        let p = f.peer_qp(caps(16, 16, 1, 0), false);
        f.connect(&mut qp, p, 7);
        f.peer_post(&format!("RECV {} 70 0:16", p.0));
        let wrs = [
            SendWr::new(1, SendOp::Send, Payload::Sges(&good)),
            SendWr::new(2, SendOp::RdmaWrite(f.remote(8192)), Payload::Sges(&good)),
        ];
        expect_error_then_flush(&mut qp, &mut cq, &wrs, WcStatus::RemoteInvalidRequest, &[]);
        let r = f.peer_poll("r", 1);
        assert_eq!((r[0].wr_id, r[0].status), (70, WcStatus::LocalLength), "{r:?}");
    }
    f.finish();
}

#[test]
fn completion_channel_wakes_on_a_peer_send() {
    let mut f = Fixture::new("channel", &[]);
    {
        let mr = f.pd.alloc_mr(4096, Access::ALL).unwrap();
        let ch = CompChannel::new(&f.ctx).unwrap();
        let mut scq = cq(&f.ctx, 16);
        let mut rcq = Cq::new(
            &f.ctx,
            &CqOptions {
                cqe: 16,
                channel: Some(&ch),
                user_handle: Some(0xc0ffee),
                ..Default::default()
            },
        )
        .unwrap();
        let mut qp = new_qp(&f.pd, &scq, &rcq, None, caps(16, 16, 1, 0));
        let p = f.peer_qp(caps(16, 16, 1, 0), false);
        f.connect(&mut qp, p, 7);
        f.peer_fill(0, b"wake up, parent!");
        for round in 0..3u64 {
            qp.post_recv(&[RecvWr { wr_id: round, sges: &[mr.sge(0, 64).unwrap()] }]).unwrap();
            rcq.arm(false);
            assert!(poll_now(&mut rcq).is_empty());
            // Nothing sent: no event.
            assert_eq!(ch.wait(Some(std::time::Duration::from_millis(50))).unwrap(), None);
            f.peer_post(&format!("SEND {} {round} 0:16", p.0));
            assert_eq!(ch.wait(Some(WAIT)).unwrap(), Some(0xc0ffee), "round {round}");
            assert_eq!(rcq.arm_sn(), round as u32 + 1);
            let w = one(&mut rcq);
            assert_wc(&w, round, WcOpcode::Recv, WcStatus::Success);
            let mut got = [0u8; 16];
            mr.read(0, &mut got).unwrap();
            assert_eq!(&got, b"wake up, parent!");
            assert_eq!(f.peer_poll("s", 1)[0].status, WcStatus::Success);
        }
        assert!(poll_now(&mut scq).is_empty());
    }
    f.finish();
}

#[test]
fn srq_shared_by_three_qps_is_replenished_and_wraps() {
    // The peer's SRQ holds 7 receives (8 entries); its 3 QPs share it. Each round we send
    // 7 messages round-robin from our 3 QPs, the peer polls them and posts 7 new receives.
    let mut f = Fixture::new("srq", &[(PEER_SRQ_ENV, "7,1")]);
    {
        let mut cq = cq(&f.ctx, 64);
        let mut qps = Vec::new();
        let mut peer_qpns = Vec::new();
        for _ in 0..3 {
            let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(16, 1, 1, 64));
            let p = f.peer_qp(caps(4, 0, 1, 0), true);
            f.connect(&mut qp, p, 7);
            peer_qpns.push(p.1);
            qps.push(qp);
        }
        let rounds = 6u64;
        let mut next_seq = [0u64; 3];
        for r in 0..rounds {
            f.peer_post(&format!("SRECVN 7 {} 0 128 128", r * 100));
            for m in 0..7u64 {
                let q = (m % 3) as usize;
                let body = format!("qp{q} seq{}", next_seq[q]);
                next_seq[q] += 1;
                qps[q]
                    .post_send(&[SendWr::new(m, SendOp::Send, Payload::Inline(body.as_bytes()))])
                    .unwrap();
            }
            assert_eq!(poll_n(&mut cq, 7).len(), 7);
            let got = f.peer_poll("r", 7);
            assert_eq!(got.len(), 7, "round {r}");
            let mut slots: Vec<u64> = got.iter().map(|w| w.wr_id - r * 100).collect();
            let mut seen = [Vec::new(), Vec::new(), Vec::new()];
            for w in &got {
                assert_eq!(w.status, WcStatus::Success, "{w:?}");
                let slot = w.wr_id - r * 100;
                assert!(slot < 7, "a wr_id of this round: {w:?}");
                let q = peer_qpns.iter().position(|&n| n == w.qpn).expect("one of the peer QPs");
                assert_eq!(w.src_qp, qps[q].qpn());
                let body = f.peer_data(slot as usize * 128, w.byte_len as usize);
                let body = String::from_utf8(body).unwrap();
                let (qq, seq) = body.split_once(" seq").unwrap();
                assert_eq!(qq, format!("qp{q}"), "the data came from the QP that completed");
                seen[q].push(seq.parse::<u64>().unwrap());
            }
            slots.sort();
            assert_eq!(slots, (0..7).collect::<Vec<_>>(), "every receive completed once");
            for (q, s) in seen.iter().enumerate() {
                assert!(s.windows(2).all(|w| w[1] == w[0] + 1), "qp {q} in order: {s:?}");
            }
        }
        assert_eq!(next_seq.iter().sum::<u64>(), 42);
    }
    f.finish();
}

/// After an RDMA WRITE fails with a remote access error, a NOP posted behind it is flushed:
/// RC completes in order and a QP in error flushes everything outstanding, even a WQE that
/// needed no response (softhca once completed the NOP with success).
#[test]
fn nop_behind_a_remote_error_is_flushed() {
    let mut f = Fixture::new("nopflush", &[]);
    {
        let mr = f.pd.alloc_mr(4096, Access::ALL).unwrap();
        mr.write(0, &[0xab; 64]).unwrap();
        let mut cq = cq(&f.ctx, 64);
        let good = [mr.sge(0, 64).unwrap()];
        let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(16, 16, 1, 0));
        let p = f.peer_qp(caps(16, 16, 1, 0), false);
        f.connect(&mut qp, p, 7);
        let bad =
            ferrodat_driver::work_request::Remote { rkey: f.peer_rkey ^ 0x100, ..f.remote(0) };
        let unsignalled = SendFlags::NONE;
        let wrs = [
            SendWr::new(1, SendOp::RdmaWrite(bad), Payload::Sges(&good)),
            SendWr::new(2, SendOp::Nop, Payload::EMPTY),
            // Unsignalled WQEs behind the error still report their flush.
            SendWr::new(3, SendOp::Nop, Payload::EMPTY).flags(unsignalled),
            SendWr::new(4, SendOp::RdmaWrite(f.remote(64)), Payload::Sges(&good))
                .flags(unsignalled),
        ];
        expect_error_then_flush(&mut qp, &mut cq, &wrs, WcStatus::RemoteAccess, &[]);
        assert_eq!(f.peer_data(64, 64), [0u8; 64], "nothing written behind the error");
        drop(qp);

        // The failing WQE reports its error even when unsignalled.
        let mut qp = new_qp(&f.pd, &cq, &cq, None, caps(16, 16, 1, 0));
        let p = f.peer_qp(caps(16, 16, 1, 0), false);
        f.connect(&mut qp, p, 7);
        let wrs = [
            SendWr::new(5, SendOp::RdmaWrite(bad), Payload::Sges(&good)).flags(unsignalled),
            SendWr::new(6, SendOp::Nop, Payload::EMPTY).flags(unsignalled),
        ];
        expect_error_then_flush(&mut qp, &mut cq, &wrs, WcStatus::RemoteAccess, &[]);
    }
    f.finish();
}
