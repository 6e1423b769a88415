//! The driver's wrapping counters against softhca, in one process: the SQ's 16-bit WQEBB
//! counter, the RQ's and SRQ's 16-bit counters, the CQ's consumer index and ownership
//! parity over thousands of laps, the 2-bit arm sequence number over many events, and
//! PSNs that start just before the 24-bit wrap — with every wr_id coming back right.

mod support;

use ferrodat_driver::completion::{WcOpcode, WcStatus, WorkCompletion};
use ferrodat_driver::work_request::{Payload, RecvWr, SendFlags, SendOp, SendWr};
use ferrodat_driver::{Access, CompChannel, Context, Cq, CqOptions, QpCaps, Srq};
use support::*;

/// Takes exactly `n` completions from `cq` (failing after [`WAIT`]).
fn take(cq: &mut Cq, n: usize) -> Vec<WorkCompletion> {
    let mut out = vec![WorkCompletion::default(); n];
    let got = cq.poll_wait(&mut out, WAIT);
    assert_eq!(got, n, "{got} of {n} completions within {WAIT:?}: {:?}", &out[..got]);
    out
}

/// 66,000 SENDs each way between two QPs whose PSNs start 256 before the 24-bit wrap: A's
/// go to B's SRQ, B's to A's own receive queue. Each batch of 16 mixes one-WQEBB WQEs
/// (one gather entry; inline) with two-WQEBB ones (four gather entries), so that the SQ's
/// 16-bit counter passes 65536 inside a WQE, and unsignalled ones that a later signalled
/// completion retires. Small CQs (16 entries) go round thousands of times; A's receive CQ
/// is armed every 32nd batch and its event waited for (the 2-bit arm sequence number goes
/// round many times). Every completion carries its wr_id, in order, with its byte count,
/// and each message lands in the buffer its receive named.
#[test]
fn sixty_six_thousand_sends_each_way_keep_their_wr_ids_across_every_counter_wrap() {
    const BATCH: u64 = 16;
    const MESSAGES: u64 = 66_000;
    let fabric = TestFabric::new("counterwrap");
    let ctx = Context::open_softhca(device(fabric.dir(), false)).expect("open softhca0");
    let pd = ferrodat_driver::Pd::new(&ctx).unwrap();
    let ch = CompChannel::new(&ctx).unwrap();
    let (mut scq_a, mut scq_b, mut rcq_b) = (cq(&ctx, 16), cq(&ctx, 16), cq(&ctx, 16));
    let mut rcq_a = Cq::new(
        &ctx,
        &CqOptions { cqe: 16, channel: Some(&ch), user_handle: Some(0xa), ..Default::default() },
    )
    .unwrap();
    let srq = Srq::new(&pd, 31, 1).expect("CREATE_SRQ");
    let caps = QpCaps {
        max_send_wr: 16,
        max_recv_wr: 16,
        max_send_sge: 4,
        max_recv_sge: 1,
        max_inline_data: 12,
    };
    let mut a = new_qp(&pd, &scq_a, &rcq_a, None, caps);
    let mut b = new_qp(&pd, &scq_b, &rcq_b, Some(&srq), caps);
    let gid = ctx.source_gid(1).unwrap().1;
    let (a_psn, b_psn) = (0xff_ff00, 0xff_ff80);
    connect_qp(&mut a, gid, b.qpn(), a_psn, b_psn, 7);
    connect_qp(&mut b, gid, a.qpn(), b_psn, a_psn, 7);
    // Sources: message i's four bytes at 16 * (i % 64); receives: 64 bytes at 64 * (i % 64).
    let src_a = pd.alloc_mr(1024, Access::ALL).unwrap();
    let src_b = pd.alloc_mr(1024, Access::ALL).unwrap();
    let dst_a = pd.alloc_mr(4096, Access::ALL).unwrap();
    let dst_b = pd.alloc_mr(4096, Access::ALL).unwrap();
    let (mut sq_blocks, mut straddled, mut arms) = (0u32, false, 0u32);
    for batch in 0..MESSAGES / BATCH {
        let first = batch * BATCH;
        let slots = || (first..first + BATCH).map(|i| (i, 64 * (i % 64) as usize));
        let recv_sges: Vec<_> = slots().map(|(_, at)| [dst_b.sge(at, 64).unwrap()]).collect();
        let wrs: Vec<_> = slots()
            .zip(&recv_sges)
            .map(|((i, _), sges)| RecvWr { wr_id: 1 << 40 | i, sges })
            .collect();
        srq.post_recv(&wrs).unwrap();
        let recv_sges: Vec<_> = slots().map(|(_, at)| [dst_a.sge(at, 64).unwrap()]).collect();
        let wrs: Vec<_> = slots()
            .zip(&recv_sges)
            .map(|((i, _), sges)| RecvWr { wr_id: 2 << 40 | i, sges })
            .collect();
        a.post_recv(&wrs).unwrap();
        let armed = batch % 32 == 0;
        if armed {
            rcq_a.arm(false);
        }
        // A's messages carry 0xa0 in their first byte, B's 0xb0.
        let msg = |marker: u32, i: u64| (marker << 24 | i as u32 & 0xff_ffff).to_be_bytes();
        for (from, src, sender_cq, dst_rcq, marker, recv_tag) in [
            (&mut a, &src_a, &mut scq_a, &mut rcq_b, 0xa0, 1u64 << 40),
            (&mut b, &src_b, &mut scq_b, &mut rcq_a, 0xb0, 2 << 40),
        ] {
            let is_a = marker == 0xa0;
            let msgs: Vec<[u8; 4]> = slots().map(|(i, _)| msg(marker, i)).collect();
            for (i, _) in slots() {
                src.write(16 * (i % 64) as usize, &msgs[(i - first) as usize]).unwrap();
            }
            let gathers: Vec<_> = slots()
                .map(|(i, _)| {
                    let at = 16 * (i % 64) as usize;
                    (0..4).map(|k| src.sge(at + k, 1).unwrap()).collect::<Vec<_>>()
                })
                .collect();
            let (mut wrs, mut lens, mut signalled) = (Vec::new(), Vec::new(), Vec::new());
            for (i, _) in slots() {
                let k = (i - first) as usize;
                // Two WQEBBs every third WQE, and at WQEBB 65535 of A (it straddles the
                // wrap); the others one, by turns inline and one gather entry of 1 byte.
                let two = i % 3 == 0 || (is_a && sq_blocks % 65536 == 65535);
                let (payload, len) = if two {
                    (Payload::Sges(&gathers[k]), 4)
                } else if i % 2 == 0 {
                    (Payload::Inline(&msgs[k]), 4)
                } else {
                    (Payload::Sges(&gathers[k][..1]), 1)
                };
                if is_a {
                    straddled |= two && sq_blocks % 65536 == 65535;
                    sq_blocks += if two { 2 } else { 1 };
                }
                let signaled = i % 5 != 2 || k == BATCH as usize - 1;
                if signaled {
                    signalled.push(i);
                }
                let flags = if signaled { SendFlags::SIGNALED } else { SendFlags::NONE };
                wrs.push(SendWr::new(i, SendOp::Send, payload).flags(flags));
                lens.push(len);
            }
            from.post_send(&wrs).unwrap();
            let sent = take(sender_cq, signalled.len());
            assert!(sent.iter().all(|w| w.status == WcStatus::Success), "batch {batch}: {sent:?}");
            let ids: Vec<u64> = sent.iter().map(|w| w.wr_id).collect();
            assert_eq!(ids, signalled, "batch {batch}: the signalled sends' wr_ids");
            let got = take(dst_rcq, BATCH as usize);
            for ((w, (i, at)), len) in got.iter().zip(slots()).zip(lens) {
                assert_eq!(
                    (w.wr_id, w.opcode, w.status, w.byte_len),
                    (recv_tag | i, WcOpcode::Recv, WcStatus::Success, len),
                    "message {i} of {marker:#x}"
                );
                let dst = if is_a { &dst_b } else { &dst_a };
                let mut landed = [0u8; 4];
                dst.read(at, &mut landed).unwrap();
                let want = msg(marker, i);
                assert_eq!(landed[..len as usize], want[..len as usize], "message {i}");
            }
        }
        if armed {
            assert_eq!(ch.wait(Some(WAIT)).unwrap(), Some(0xa), "batch {batch}: the event");
            arms += 1;
            assert_eq!(rcq_a.arm_sn(), arms);
        }
    }
    assert!(sq_blocks > 65536 + 1024 && straddled, "{sq_blocks} WQEBBs, straddled {straddled}");
    assert!(arms > 16, "{arms} arms");
    for c in [&mut scq_a, &mut scq_b, &mut rcq_a, &mut rcq_b] {
        assert!(poll_now(c).is_empty(), "each completion once");
    }
}
