//! Counters that wrap, driven across their wrap end to end through the HCA: the 24-bit
//! PSNs of both directions (every kind of request, ACKs deferred and piggybacked, an RNR
//! NAK and the retransmission behind it) and the 16-bit WQE counters of the SQ and the RQ
//! (the doorbell record's counters and the CQEs' `wqe_counter`) after more than 65536 WQEs.

mod support;

use ferrodat_abi::mlx5::{cqe_opcode, opcode};
use ferrodat_softhca::hca::queue_pair::QpAttributes;
use std::time::Duration;
use support::*;

const WAIT: Duration = Duration::from_secs(5);

/// PSNs are 24 bits: the first PSN after the wrap.
const PSN_SPACE: u32 = 1 << 24;

fn pattern(seed: u32, len: usize) -> Vec<u8> {
    (0..len as u32).map(|i| (i.wrapping_mul(2654435761).wrapping_add(seed) >> 11) as u8).collect()
}

/// A loopback pair whose A sends from PSN `a_psn` (B expects it) and B from `b_psn`.
fn pair_from(tag: &str, a_psn: u32, b_psn: u32) -> Pair {
    let a = QpAttributes { sq_psn: a_psn, rq_psn: b_psn, ..rc_attrs() };
    let b = QpAttributes { sq_psn: b_psn, rq_psn: a_psn, ..rc_attrs() };
    pair_of(tag, a, b, 64, 64, false)
}

/// The requester completions among `wcs`: (wqe_counter, wqe_opcode, byte_cnt), each a
/// success (an error fails the test with the list).
fn requester_ok(wcs: &[Wc]) -> Vec<(u16, u8, u32)> {
    assert!(wcs.iter().all(|w| w.syndrome.is_none()), "a completion failed: {wcs:?}");
    wcs.iter()
        .filter(|w| w.opcode == cqe_opcode::REQ)
        .map(|w| (w.wqe_counter, w.wqe_opcode, w.byte_cnt))
        .collect()
}

/// Every kind of request, both ways, with the PSNs of each direction starting just before
/// the 24-bit wrap: A's 13 requests start `k` PSNs before it, so that over k = 1..=13 each
/// of them is the one at 0xffffff and each the one at 0 (B's start elsewhere near it).
/// Large SENDs and WRITEs go in several segments, READs come back in several responses
/// (or are placed), unsignalled requests are acknowledged late (by the ACK of a later
/// signalled request, or a later request's response), and a SEND without a receive is RNR
/// NAKed with requests behind it that are dropped and sent again. The IB rule the
/// responder and requester must keep: PSNs compare modulo 2^24 (a request at 0 follows
/// one at 0xffffff; an ACK for 1 covers 0xffffff and 0).
#[test]
fn every_request_kind_crosses_the_psn_wrap_both_ways() {
    const BIG: usize = 150_000; // more than two 64 KiB segments
    for k in 1..=13u32 {
        let a_psn = PSN_SPACE - k;
        let b_psn = (PSN_SPACE - k % 6) % PSN_SPACE;
        let mut p = pair_from("psnwrap", a_psn, b_psn);
        let ctx = format!("A from {a_psn:#x}, B from {b_psn:#x}");
        let a_src = Mr::new(&p.engine, p.pdn, 256 << 10, ALL_ACCESS);
        let a_back = Mr::new(&p.engine, p.pdn, 512 << 10, ALL_ACCESS);
        let a_recv = Mr::new(&p.engine, p.pdn, 64 << 10, ALL_ACCESS);
        let b_mem = Mr::new(&p.engine, p.pdn, 512 << 10, ALL_ACCESS);
        let b_back = Mr::new(&p.engine, p.pdn, 256 << 10, ALL_ACCESS);
        let b_shared = SharedMr::new(&p.engine, p.pdn, 256 << 10, ALL_ACCESS);
        let data = pattern(k, 256 << 10);
        a_src.buf.write(0, &data);
        b_mem.buf.write(500_000, &100u64.to_ne_bytes());
        let placed_before = (p.engine.placed_writes(), p.engine.placed_reads());

        // A's first nine requests; B has receives for the three that take one.
        for off in [0u64, 4096, 256] {
            let len = if off == 4096 { 200_000 } else { 64 };
            p.b.post_recv(&[(b_mem.addr() + off, len, b_mem.key)]);
        }
        for i in 0..8u64 {
            p.a.post_recv(&[(a_recv.addr() + 8192 * i, 8192, a_recv.key)]);
        }
        let mut expected = Vec::new();
        let unsignalled = |mut wr: SendWr| {
            wr.signaled = false;
            wr
        };
        let inline_send = |bytes: &[u8], signaled| SendWr {
            opcode: opcode::SEND,
            inline: Some(bytes.to_vec()),
            signaled,
            ..Default::default()
        };
        // 0: a small SEND (the compact path), 1: a large one, both unsignalled; 2: a large
        // WRITE through the ring (the target is not exported), whose ACK covers all three.
        p.a.post_send(&p.engine, &inline_send(b"psn-wrap", false));
        p.a.post_send(&p.engine, &unsignalled(send(vec![(a_src.addr(), 200_000, a_src.key)])));
        let to_ring = (b_mem.addr() + 262_144, b_mem.key);
        let w2 = write_wr(vec![(a_src.addr(), BIG as u32, a_src.key)], to_ring);
        let w2 = p.a.post_send(&p.engine, &w2);
        let got = requester_ok(&p.cq_a.wait(&p.engine, 1, WAIT));
        assert_eq!(got, [(w2, opcode::RDMA_WRITE, 0)], "{ctx}: the ACK of 0..=2");
        // 3: a large WRITE placed (everything before it is acknowledged), unsignalled;
        // 4: a READ of it, placed too (the request before it was placed).
        let placed = (b_shared.addr, b_shared.key);
        p.a.post_send(
            &p.engine,
            &unsignalled(write_wr(vec![(a_src.addr() + 1000, BIG as u32, a_src.key)], placed)),
        );
        let read_placed = read_wr(vec![(a_back.addr() + 200_000, BIG as u32, a_back.key)], placed);
        expected.push((p.a.post_send(&p.engine, &read_placed), opcode::RDMA_READ, BIG as u32));
        // 5: a WRITE with immediate data; 6: a large READ of what 2 wrote, through the ring.
        let mut imm =
            write_wr(vec![(a_src.addr() + 7, 100, a_src.key)], (b_mem.addr() + 420_000, b_mem.key));
        imm.opcode = opcode::RDMA_WRITE_IMM;
        imm.imm = 0x1234_5678;
        expected.push((p.a.post_send(&p.engine, &imm), opcode::RDMA_WRITE_IMM, 0));
        let read_ring = read_wr(vec![(a_back.addr(), BIG as u32, a_back.key)], to_ring);
        expected.push((p.a.post_send(&p.engine, &read_ring), opcode::RDMA_READ, BIG as u32));
        // 7, 8: fetch-and-add 5, then compare-and-swap 105 -> 7.
        let atomic = |op, at: u64, operands| SendWr {
            opcode: op,
            sges: vec![(a_back.addr() + 480_000 + at, 8, a_back.key)],
            remote: Some((b_mem.addr() + 500_000, b_mem.key)),
            atomic: Some(operands),
            signaled: true,
            ..Default::default()
        };
        let fa = atomic(opcode::ATOMIC_FA, 0, (5, 0));
        expected.push((p.a.post_send(&p.engine, &fa), opcode::ATOMIC_FA, 8));
        let cs = atomic(opcode::ATOMIC_CS, 8, (7, 105));
        expected.push((p.a.post_send(&p.engine, &cs), opcode::ATOMIC_CS, 8));

        let got = requester_ok(&p.cq_a.wait(&p.engine, expected.len(), WAIT));
        assert_eq!(got, expected, "{ctx}: A's signalled requests, in order, each once");
        let wb = p.cq_b.wait(&p.engine, 3, WAIT);
        assert_eq!(
            wb.iter().map(|w| (w.opcode, w.byte_cnt, w.syndrome)).collect::<Vec<_>>(),
            [
                (cqe_opcode::RESP_SEND, 8, None),
                (cqe_opcode::RESP_SEND, 200_000, None),
                (cqe_opcode::RESP_WR_IMM, 100, None),
            ],
            "{ctx}: B's receives"
        );
        assert_eq!(wb[2].imm, 0x1234_5678, "{ctx}");
        assert_eq!(b_mem.buf.read(0, 8), b"psn-wrap", "{ctx}");
        assert!(b_mem.buf.read(4096, 200_000) == data[..200_000], "{ctx}: the large SEND");
        assert!(b_mem.buf.read(262_144, BIG) == data[..BIG], "{ctx}: the WRITE via the ring");
        assert!(b_shared.read(0, BIG) == data[1000..1000 + BIG], "{ctx}: the placed WRITE");
        assert_eq!(b_mem.buf.read(420_000, 100), data[7..107], "{ctx}: the WRITE with immediate");
        assert!(a_back.buf.read(0, BIG) == data[..BIG], "{ctx}: the READ via the ring");
        assert!(a_back.buf.read(200_000, BIG) == data[1000..1000 + BIG], "{ctx}: the placed READ");
        assert_eq!(a_back.buf.read(480_000, 8), 100u64.to_ne_bytes(), "{ctx}: FA's original");
        assert_eq!(a_back.buf.read(480_008, 8), 105u64.to_ne_bytes(), "{ctx}: CS's original");
        assert_eq!(b_mem.buf.read(500_000, 8), 7u64.to_ne_bytes(), "{ctx}: the atomics' result");
        let placed_after = (p.engine.placed_writes(), p.engine.placed_reads());
        assert_eq!(placed_after, (placed_before.0 + 1, placed_before.1 + 1), "{ctx}: placed");

        // B's requests cross its own wrap, carrying the ACKs B owes A.
        let mut b_expected = Vec::new();
        p.b.post_send(&p.engine, &inline_send(b"from B 0", false));
        let b_read = read_wr(vec![(b_back.addr(), 100_000, b_back.key)], (a_src.addr(), a_src.key));
        b_expected.push((p.b.post_send(&p.engine, &b_read), opcode::RDMA_READ, 100_000));
        let b_write = write_wr(
            vec![(b_mem.addr() + 4096, 5000, b_mem.key)],
            (a_recv.addr() + 60_000, a_recv.key),
        );
        p.b.post_send(&p.engine, &unsignalled(b_write));
        let last = send(vec![(b_mem.addr() + 4096, 3000, b_mem.key)]);
        b_expected.push((p.b.post_send(&p.engine, &last), opcode::SEND, 0));
        assert_eq!(
            requester_ok(&p.cq_b.wait(&p.engine, 2, WAIT)),
            b_expected,
            "{ctx}: B's signalled requests"
        );
        let wa = p.cq_a.wait(&p.engine, 2, WAIT);
        assert_eq!(
            wa.iter().map(|w| (w.opcode, w.byte_cnt)).collect::<Vec<_>>(),
            [(cqe_opcode::RESP_SEND, 8), (cqe_opcode::RESP_SEND, 3000)],
            "{ctx}: A's receives"
        );
        assert!(b_back.buf.read(0, 100_000) == data[..100_000], "{ctx}: B's READ");
        assert!(a_recv.buf.read(60_000, 5000) == data[..5000], "{ctx}: B's WRITE");
        assert_eq!(a_recv.buf.read(8192, 3000), data[..3000], "{ctx}: B's SEND");

        // 9: a SEND B has no receive for (RNR NAK), with a WRITE, a READ of what it wrote
        // and a SEND behind it, dropped by B until 9 comes again.
        p.a.post_send(&p.engine, &inline_send(b"rnr-9...", false));
        let mut w10 = write_wr(vec![], (b_mem.addr() + 450_000, b_mem.key));
        w10.inline = Some(b"written by request 10".to_vec());
        p.a.post_send(&p.engine, &unsignalled(w10));
        let r11 = read_wr(
            vec![(a_back.addr() + 490_000, 21, a_back.key)],
            (b_mem.addr() + 450_000, b_mem.key),
        );
        let r11 = p.a.post_send(&p.engine, &r11);
        let s12 = p.a.post_send(&p.engine, &inline_send(b"last-12.", true));
        let early = p.cq_a.wait(&p.engine, 1, Duration::from_millis(30));
        assert!(early.is_empty(), "{ctx}: nothing completes behind the RNR NAK: {early:?}");
        for off in [0u64, 64] {
            p.b.post_recv(&[(b_mem.addr() + off, 64, b_mem.key)]);
        }
        let got = requester_ok(&p.cq_a.wait(&p.engine, 2, WAIT));
        assert_eq!(
            got,
            [(r11, opcode::RDMA_READ, 21), (s12, opcode::SEND, 0)],
            "{ctx}: the requests behind the RNR NAK"
        );
        assert_eq!(a_back.buf.read(490_000, 21), b"written by request 10", "{ctx}");
        let wb = p.cq_b.wait(&p.engine, 2, WAIT);
        assert_eq!(wb.len(), 2, "{ctx}: the SENDs 9 and 12");
        assert_eq!(b_mem.buf.read(0, 8), b"rnr-9...", "{ctx}");
        assert_eq!(b_mem.buf.read(64, 8), b"last-12.", "{ctx}");
        // Nothing more: each request completed once.
        assert!(p.cq_a.wait(&p.engine, 1, Duration::from_millis(5)).is_empty(), "{ctx}");
        assert!(p.cq_b.wait(&p.engine, 1, Duration::from_millis(5)).is_empty(), "{ctx}");
    }
}

/// More than 65536 WQEs through an SQ of 64 WQEBBs and an RQ of 64 entries: the SQ's
/// 16-bit WQEBB counter (in the doorbell record and the control segments) wraps with WQEs
/// of one and of two WQEBBs, so at 65536 one WQE straddles the wrap, and the RQ's counter
/// wraps too. Every requester CQE names the WQE it completes by the index in its control
/// segment, every receive CQE the RQ entry, and each message lands whole in its receive.
#[test]
fn sixteen_bit_wqe_counters_wrap_with_every_completion_naming_its_wqe() {
    const BATCH: u32 = 16;
    const MESSAGES: u32 = 66_000;
    let mut p = pair_with("wqewrap", rc_attrs(), 64, 64);
    let src = Mr::new(&p.engine, p.pdn, 64 * 16, ALL_ACCESS);
    let dst = Mr::new(&p.engine, p.pdn, 64 * 64, ALL_ACCESS);
    let (mut sq_blocks, mut straddled) = (0u32, false);
    for batch in 0..MESSAGES / BATCH {
        let mut sends = Vec::new();
        let mut receives = Vec::new();
        for j in 0..BATCH {
            let i = batch * BATCH + j;
            let slot = u64::from(i % 64);
            receives.push(p.b.post_recv(&[(dst.addr() + 64 * slot, 64, dst.key)]));
            let msg = i.to_be_bytes();
            // Every third WQE is two WQEBBs (four gather entries), and so is the one
            // at WQEBB 65535 (it straddles the wrap); the others one (inline). Some are
            // unsignalled, but the batch's last is signalled.
            let wr = if i.is_multiple_of(3) || sq_blocks % 65536 == 65535 {
                let at = 16 * u64::from(i % 64);
                src.buf.write(at as usize, &msg);
                let wr = send(vec![
                    (src.addr() + at, 1, src.key),
                    (src.addr() + at + 1, 1, src.key),
                    (src.addr() + at + 2, 1, src.key),
                    (src.addr() + at + 3, 1, src.key),
                ]);
                straddled |= sq_blocks % 65536 == 65535;
                sq_blocks += 2;
                wr
            } else {
                sq_blocks += 1;
                SendWr { opcode: opcode::SEND, inline: Some(msg.to_vec()), ..Default::default() }
            };
            let signaled = i % 5 != 2 || j == BATCH - 1;
            let idx = p.a.write_wqe(&SendWr { signaled, ..wr });
            if signaled {
                sends.push(idx);
            }
        }
        p.a.ring(&p.engine);
        let wa = p.cq_a.wait(&p.engine, sends.len(), WAIT);
        assert!(wa.iter().all(|w| w.syndrome.is_none()), "batch {batch}: {wa:?}");
        assert_eq!(wa.iter().map(|w| w.wqe_counter).collect::<Vec<_>>(), sends, "batch {batch}");
        let wb = p.cq_b.wait(&p.engine, BATCH as usize, WAIT);
        assert!(wb.iter().all(|w| w.opcode == cqe_opcode::RESP_SEND), "batch {batch}: {wb:?}");
        assert_eq!(wb.iter().map(|w| w.wqe_counter).collect::<Vec<_>>(), receives);
        for j in 0..BATCH {
            let i = batch * BATCH + j;
            let slot = (i % 64) as usize;
            assert_eq!(dst.buf.read(64 * slot, 4), i.to_be_bytes(), "message {i}");
        }
    }
    assert!(sq_blocks > 65536 + 1024 && straddled, "{sq_blocks} WQEBBs, straddled {straddled}");
    assert!(p.cq_a.wait(&p.engine, 1, Duration::from_millis(5)).is_empty(), "each once");
}
