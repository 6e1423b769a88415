//! What softhca writes into CQEs, checked against how rdma-core's mlx5 provider
//! (`providers/mlx5/cq.c`) and the kernel's mlx5_ib parse them and against what a
//! ConnectX reports: opcodes, byte counts, WQE counters, flush completions, syndromes.

mod support;

use ferrodat_abi::mlx5::{cqe_opcode, cqe_syndrome, opcode};
use std::time::Duration;
use support::*;

const WAIT: Duration = Duration::from_secs(5);

/// The raw 64 bytes of the `n`-th CQE written into `cq` (already polled or not).
fn raw_cqe(cq: &Cq, n: u32) -> [u8; 64] {
    let mut bytes = [0u8; 64];
    cq.buf.read_into((n & (cq.ncqe - 1)) as usize * 64, &mut bytes);
    bytes
}

/// `flags_rqpn` of a RoCE receive: mlx5_ib's `handle_responder` reads the RoCE L3 header
/// type (`MLX5_CQE_ROCE_L3_HEADER_TYPE_*`: GRH 0, IPv6 1, IPv4 2) from bits 25:24 on an
/// Ethernet port, and both it and rdma-core's `handle_responder` set the GRH flag when
/// bits 29:28 are non-zero. The pair's GID is IPv4-mapped: IPv4, whichever receive path
/// (the compact record of a small SEND, or a SEND too large for it) delivered it.
#[test]
fn a_roce_v2_receive_reports_its_l3_header_type_where_mlx5_ib_reads_it() {
    let mut p = pair("l3type", rc_attrs());
    let src = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let dst = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    p.b.post_recv(&[(dst.addr(), 2048, dst.key)]);
    p.b.post_recv(&[(dst.addr() + 2048, 2048, dst.key)]);
    let small = SendWr {
        opcode: opcode::SEND,
        inline: Some(vec![7; 8]),
        signaled: true,
        ..Default::default()
    };
    p.a.post_send(&p.engine, &small);
    p.a.post_send(&p.engine, &send(vec![(src.addr(), 1000, src.key)]));
    let wb = p.cq_b.wait(&p.engine, 2, WAIT);
    assert_eq!(wb.len(), 2);
    for (n, what) in [(0, "small SEND"), (1, "large SEND")] {
        assert_eq!(wb[n as usize].opcode, cqe_opcode::RESP_SEND, "{what}");
        let cqe = raw_cqe(&p.cq_b, n);
        let flags_rqpn = u32::from_be_bytes(cqe[24..28].try_into().unwrap());
        assert_eq!(flags_rqpn & 0xff_ffff, p.a.qpn, "{what}: source QP");
        assert_eq!(flags_rqpn >> 24 & 3, 2, "{what}: roce_packet_type IPv4 ({flags_rqpn:#x})");
        assert_ne!(flags_rqpn >> 28 & 3, 0, "{what}: GRH present ({flags_rqpn:#x})");
    }
}

/// SENDs without data segments (ds 1: rdma-core writes no segment for zero SGEs), with
/// and without immediate data: the receives complete with byte_cnt 0, the immediate as
/// written, each naming its receive WQE; the requester CQEs name each SEND.
#[test]
fn sends_without_data_segments_complete_with_zero_bytes() {
    let mut p = pair("zsge", rc_attrs());
    let dst = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let r0 = p.b.post_recv(&[(dst.addr(), 64, dst.key)]);
    let r1 = p.b.post_recv(&[]);
    let s0 = p.a.post_send(&p.engine, &send(vec![]));
    let s1 = p.a.post_send(
        &p.engine,
        &SendWr {
            opcode: opcode::SEND_IMM,
            imm: 0x0102_0304,
            signaled: true,
            ..Default::default()
        },
    );
    let wa = p.cq_a.wait(&p.engine, 2, WAIT);
    let wb = p.cq_b.wait(&p.engine, 2, WAIT);
    assert_eq!(wa.len(), 2);
    assert_eq!(
        (wa[0].opcode, wa[0].wqe_opcode, wa[0].wqe_counter),
        (cqe_opcode::REQ, opcode::SEND, s0)
    );
    assert_eq!(
        (wa[1].opcode, wa[1].wqe_opcode, wa[1].wqe_counter),
        (cqe_opcode::REQ, opcode::SEND_IMM, s1)
    );
    assert_eq!(wb.len(), 2);
    assert_eq!((wb[0].opcode, wb[0].byte_cnt, wb[0].wqe_counter), (cqe_opcode::RESP_SEND, 0, r0));
    assert_eq!(
        (wb[1].opcode, wb[1].byte_cnt, wb[1].wqe_counter, wb[1].imm),
        (cqe_opcode::RESP_SEND_IMM, 0, r1, 0x0102_0304)
    );
}

/// An unsignalled WQE that fails completes in error, and every unsignalled WQE behind it
/// is flushed with its own CQE (rdma-core's parse sets `sq.tail` from each one's
/// wqe_counter).
#[test]
fn unsignalled_wqes_fail_and_flush_with_their_own_cqes() {
    let mut p = pair("unsigerr", rc_attrs());
    let src = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let bad = SendWr { signaled: false, ..send(vec![(src.addr(), 8, src.key ^ 0x100)]) };
    let good = SendWr { signaled: false, ..send(vec![(src.addr(), 8, src.key)]) };
    let i0 = p.a.post_send(&p.engine, &bad);
    let i1 = p.a.post_send(&p.engine, &good);
    let i2 = p.a.post_send(&p.engine, &good);
    let w = p.cq_a.wait(&p.engine, 3, WAIT);
    assert_eq!(w.len(), 3);
    assert_eq!((w[0].syndrome, w[0].wqe_counter), (Some(cqe_syndrome::LOCAL_PROT_ERR), i0));
    assert_eq!((w[1].syndrome, w[1].wqe_counter), (Some(cqe_syndrome::WR_FLUSH_ERR), i1));
    assert_eq!((w[2].syndrome, w[2].wqe_counter), (Some(cqe_syndrome::WR_FLUSH_ERR), i2));
}

/// An RDMA READ reports the bytes read in byte_cnt (rdma-core's `handle_good_req` copies it
/// into byte_len for READs only), 0 for a READ without data segments.
#[test]
fn rdma_read_byte_counts() {
    let mut p = pair("rdcount", rc_attrs());
    let local = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let remote = Mr::new(&p.engine, p.pdn, 64, ALL_ACCESS);
    let r0 = p.a.post_send(&p.engine, &read_wr(vec![], (remote.addr(), remote.key)));
    let r1 = p.a.post_send(
        &p.engine,
        &read_wr(vec![(local.addr(), 24, local.key)], (remote.addr(), remote.key)),
    );
    let w = p.cq_a.wait(&p.engine, 2, WAIT);
    assert_eq!(w.len(), 2);
    assert_eq!((w[0].wqe_counter, w[0].byte_cnt, w[0].syndrome), (r0, 0, None));
    assert_eq!((w[1].wqe_counter, w[1].byte_cnt, w[1].syndrome), (r1, 24, None));
}
