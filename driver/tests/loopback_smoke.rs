//! The data path end to end over softhca in one process: a loopback pair exchanging a SEND
//! and an RDMA WRITE, data checked byte for byte.

#[path = "support/loopback.rs"]
mod loopback;

use ferrodat_driver::completion::{WcOpcode, WcStatus, WorkCompletion};
use ferrodat_driver::work_request::{Payload, RecvWr, Remote, SendOp, SendWr};
use ferrodat_driver::{Access, Context, Cq, CqOptions, Mr, Pd, Qp};
use ferrodat_softhca::Device;
use ferrodat_softhca::config::DeviceConfig;
use ferrodat_softhca::fabric::FabricDir;
use std::time::Duration;

/// Names the device to test instead of a private in-process softhca0 — e.g. `mlx5_0`, a
/// real HCA, or the one the preload library serves through the kernel channel.
pub const DEVICE_ENV: &str = "FERRODAT_DRIVER_TEST_DEVICE";

/// softhca0 on 127.0.0.1, in-process, on a private fabric directory (returned, for the
/// test to remove).
fn private_softhca(tag: &str) -> (Context, String) {
    let path = format!("/dev/shm/ferrodat-drv-{tag}-{}", std::process::id());
    let config = DeviceConfig { name: "softhca0".into(), addr: "127.0.0.1".parse().unwrap() };
    let dev = Device::new_in(config, FabricDir::new(&path)).unwrap();
    (Context::open_softhca(dev).unwrap(), path)
}

#[test]
fn send_and_rdma_write_between_two_qps_of_one_context() {
    let (ctx, path) = match std::env::var(DEVICE_ENV) {
        Ok(name) => (ferrodat_driver::open(&name).unwrap_or_else(|e| panic!("{e}")), String::new()),
        Err(_) => private_softhca("smoke"),
    };
    eprintln!(
        "device: {} ({})",
        ctx.name(),
        if ctx.channel().is_softhca() { "softhca channel" } else { "kernel channel" }
    );
    let pd = Pd::new(&ctx).unwrap();
    let mut cq = Cq::new(&ctx, &CqOptions { cqe: 64, ..Default::default() }).unwrap();
    let mut src = vec![0u8; 4096];
    let mut dst = vec![0u8; 4096];
    let src_mr = pd.reg_mr(&mut src, Access::ALL).unwrap();
    let dst_mr = pd.reg_mr(&mut dst, Access::ALL).unwrap();
    let (mut a, mut b) = loopback::connected_pair(&ctx, &pd, &cq, false);

    src_mr.write(0, b"hello, ferrodat").unwrap();
    b.post_recv(&[RecvWr { wr_id: 7, sges: &[dst_mr.sge(0, 64).unwrap()] }]).unwrap();
    a.post_send(&[SendWr::new(1, SendOp::Send, Payload::Sges(&[src_mr.sge(0, 15).unwrap()]))])
        .unwrap();
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(cq.poll_wait(&mut wc[..2], Duration::from_secs(5)), 2);
    let recv = wc[..2].iter().find(|w| w.opcode == WcOpcode::Recv).expect("a receive");
    assert_eq!((recv.wr_id, recv.byte_len, recv.status), (7, 15, WcStatus::Success));
    assert_eq!(recv.src_qp, a.qpn());
    let send = wc[..2].iter().find(|w| w.opcode == WcOpcode::Send).expect("a send");
    assert_eq!((send.wr_id, send.qpn), (1, a.qpn()));
    let mut got = [0u8; 15];
    dst_mr.read(0, &mut got).unwrap();
    assert_eq!(&got, b"hello, ferrodat");

    let remote = Remote { addr: dst_mr.addr() + 100, rkey: dst_mr.rkey() };
    a.post_send(&[SendWr::new(2, SendOp::RdmaWrite(remote), Payload::Inline(b"written"))]).unwrap();
    assert_eq!(cq.poll_wait(&mut wc[..1], Duration::from_secs(5)), 1);
    assert_eq!(
        (wc[0].wr_id, wc[0].opcode, wc[0].status),
        (2, WcOpcode::RdmaWrite, WcStatus::Success)
    );
    let mut got = [0u8; 7];
    dst_mr.read(100, &mut got).unwrap();
    assert_eq!(&got, b"written");
    drop((a, b));
    let _ = std::fs::remove_dir_all(&path);
}

#[test]
fn resize_cq_keeps_waiting_completions_and_continues_in_the_new_ring() {
    let (ctx, path) = private_softhca("resize");
    let pd = Pd::new(&ctx).unwrap();
    let mut cq = Cq::new(&ctx, &CqOptions { cqe: 4, ..Default::default() }).unwrap();
    let mut buf = vec![0u8; 4096];
    let mr = pd.reg_mr(&mut buf, Access::ALL).unwrap();
    let (mut a, mut b) = loopback::connected_pair(&ctx, &pd, &cq, true);
    fn exchange<'m>(a: &mut Qp<'m>, b: &mut Qp<'m>, cq: &mut Cq, mr: &'m Mr<'_>, round: u64) {
        let mut wc = [WorkCompletion::default(); 2];
        b.post_recv(&[RecvWr { wr_id: round, sges: &[mr.sge(0, 64).unwrap()] }]).unwrap();
        let msg = round.to_le_bytes();
        a.post_send(&[SendWr::new(round, SendOp::Send, Payload::Inline(&msg))]).unwrap();
        assert_eq!(cq.poll_wait(&mut wc, Duration::from_secs(5)), 2, "round {round}");
        assert!(wc.iter().all(|w| w.is_ok() && w.wr_id == round), "{wc:?}");
    }
    for round in 0..6 {
        exchange(&mut a, &mut b, &mut cq, &mr, round); // wraps the 8-entry ring
    }
    assert_eq!(cq.resize(60).unwrap(), 64);
    for round in 6..140 {
        exchange(&mut a, &mut b, &mut cq, &mr, round); // wraps the 64-entry ring twice
    }
    // Completions waiting in the old ring are carried over to the new one.
    b.post_recv(&[RecvWr { wr_id: 500, sges: &[mr.sge(0, 64).unwrap()] }]).unwrap();
    a.post_send(&[SendWr::new(501, SendOp::Send, Payload::Inline(b"carried"))]).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !cq.has_completion() && std::time::Instant::now() < deadline {
        ctx.channel().progress();
    }
    assert_eq!(cq.resize(200).unwrap(), 256);
    let mut wc = [WorkCompletion::default(); 2];
    assert_eq!(cq.poll_wait(&mut wc, Duration::from_secs(5)), 2);
    let mut ids: Vec<u64> = wc.iter().map(|w| w.wr_id).collect();
    ids.sort();
    assert_eq!(ids, [500, 501]);
    exchange(&mut a, &mut b, &mut cq, &mr, 600);
    drop((a, b));
    let _ = std::fs::remove_dir_all(&path);
}

/// The kernel gives the first QPs of a context a low-latency bfreg each and the next ones
/// a medium bfreg that later QPs share: those take doorbells only (no BlueFlame copies that
/// two posting threads could interleave in one register), and posting through them works.
#[test]
fn qps_past_the_dedicated_bfregs_post_through_shared_doorbell_only_registers() {
    let (ctx, path) = private_softhca("bfreg");
    let pd = Pd::new(&ctx).unwrap();
    let mut cq = Cq::new(&ctx, &CqOptions { cqe: 64, ..Default::default() }).unwrap();
    let (first, second) = loopback::connected_pair(&ctx, &pd, &cq, false);
    let (third, fourth) = loopback::connected_pair(&ctx, &pd, &cq, false);
    for q in [&first, &second, &third, &fourth] {
        assert_eq!(q.geometry().bfreg.buf_size, 256, "a dedicated bfreg: BlueFlame");
    }
    let (mut a, mut b) = loopback::connected_pair(&ctx, &pd, &cq, false);
    for q in [&a, &b] {
        let bfreg = q.geometry().bfreg;
        assert_ne!(bfreg.index, 0);
        assert_eq!(bfreg.buf_size, 0, "bfreg {} is shared: doorbells only", bfreg.index);
    }

    let mut dst = vec![0u8; 4096];
    let dst_mr = pd.reg_mr(&mut dst, Access::ALL).unwrap();
    b.post_recv(&[RecvWr { wr_id: 9, sges: &[dst_mr.sge(0, 64).unwrap()] }]).unwrap();
    // An inline SEND of more than a control segment: BlueFlame on a dedicated register.
    a.post_send(&[SendWr::new(3, SendOp::Send, Payload::Inline(b"through a shared bfreg"))])
        .unwrap();
    let mut wc = [WorkCompletion::default(); 2];
    assert_eq!(cq.poll_wait(&mut wc, Duration::from_secs(5)), 2);
    let recv = wc.iter().find(|w| w.opcode == WcOpcode::Recv).expect("a receive");
    assert_eq!((recv.wr_id, recv.byte_len, recv.status), (9, 22, WcStatus::Success));
    let mut got = [0u8; 22];
    dst_mr.read(0, &mut got).unwrap();
    assert_eq!(&got, b"through a shared bfreg");
    drop((a, b, first, second, third, fourth));
    let _ = std::fs::remove_dir_all(&path);
}

/// A QP reset and connected again keeps its user index, so the CQ gets its detach and its
/// new attach at once. Completions of the new connection that reach the CQ before anyone
/// polls it must still be reported; only the old connection's are dropped (rdma-core
/// removes those at the reset).
#[test]
fn completions_after_a_reset_and_reconnect_are_reported_the_old_ones_dropped() {
    let (ctx, path) = private_softhca("reset");
    let pd = Pd::new(&ctx).unwrap();
    let mut cq = Cq::new(&ctx, &CqOptions { cqe: 64, ..Default::default() }).unwrap();
    let mut buf = vec![0u8; 4096];
    let mr = pd.reg_mr(&mut buf, Access::ALL).unwrap();
    let (mut a, mut b) = loopback::connected_pair(&ctx, &pd, &cq, true);
    let mut wc = [WorkCompletion::default(); 4];
    // Polled once, so the CQ knows both QPs.
    assert_eq!(cq.poll(&mut wc), 0);

    // The old connection: a SEND and its receive complete, and nobody polls them.
    b.post_recv(&[RecvWr { wr_id: 1, sges: &[mr.sge(0, 64).unwrap()] }]).unwrap();
    a.post_send(&[SendWr::new(2, SendOp::Send, Payload::Inline(b"old"))]).unwrap();
    while !cq.has_completion() {
        ctx.channel().progress();
    }
    std::thread::sleep(Duration::from_millis(20));
    ctx.channel().progress();

    // Both QPs reset and connected again; the new connection's completions arrive before
    // the next poll.
    a.reset().unwrap();
    b.reset().unwrap();
    let gid = ctx.source_gid(1).unwrap().1;
    let peer = |q: &Qp, psn| ferrodat_driver::RemoteQp { qpn: q.qpn(), psn, gid, max_rd_atomic: 4 };
    let (pa, pb) = (peer(&a, 33), peer(&b, 44));
    a.connect(&pb, 33, 3, Access::ALL).unwrap();
    b.connect(&pa, 44, 3, Access::ALL).unwrap();
    b.post_recv(&[RecvWr { wr_id: 3, sges: &[mr.sge(64, 64).unwrap()] }]).unwrap();
    a.post_send(&[SendWr::new(4, SendOp::Send, Payload::Inline(b"new"))]).unwrap();
    for _ in 0..1000 {
        ctx.channel().progress();
    }

    // The old entries come first in the ring: were they not skipped, they would be these.
    let n = cq.poll_wait(&mut wc[..2], Duration::from_secs(5));
    let mut got: Vec<(u64, WcOpcode, WcStatus)> =
        wc[..n].iter().map(|w| (w.wr_id, w.opcode, w.status)).collect();
    assert_eq!(cq.poll(&mut wc), 0, "nothing after them");
    got.sort_by_key(|g| g.0);
    assert_eq!(
        got,
        [(3, WcOpcode::Recv, WcStatus::Success), (4, WcOpcode::Send, WcStatus::Success)],
        "the new connection's completions, and none of the old"
    );
    drop((a, b));
    let _ = std::fs::remove_dir_all(&path);
}

/// Requester completions over softhca: a signalled SEND and RDMA WRITE with immediate carry
/// verbs' WITH_IMM (as rdma-core's mlx5 provider reports them, without a value), a plain
/// SEND and RDMA WRITE do not; the receiver's completions carry the flag with the values.
#[test]
fn requests_with_immediate_complete_with_the_with_imm_flag() {
    let (ctx, path) = private_softhca("imm");
    let pd = Pd::new(&ctx).unwrap();
    let mut cq = Cq::new(&ctx, &CqOptions { cqe: 64, ..Default::default() }).unwrap();
    let mut src = vec![0u8; 4096];
    let mut dst = vec![0u8; 4096];
    let src_mr = pd.reg_mr(&mut src, Access::ALL).unwrap();
    let dst_mr = pd.reg_mr(&mut dst, Access::ALL).unwrap();
    let (mut a, mut b) = loopback::connected_pair(&ctx, &pd, &cq, false);
    // The SEND with immediate, the WRITE with immediate and the plain SEND each consume one.
    for wr_id in 100..103 {
        b.post_recv(&[RecvWr { wr_id, sges: &[dst_mr.sge(0, 64).unwrap()] }]).unwrap();
    }
    let remote = Remote { addr: dst_mr.addr() + 256, rkey: dst_mr.rkey() };
    let requests = [
        (1, SendOp::SendImm(0x1111), true),
        (2, SendOp::RdmaWriteImm(remote, 0x2222), true),
        (3, SendOp::Send, false),
        (4, SendOp::RdmaWrite(remote), false),
    ];
    let payload = [src_mr.sge(0, 16).unwrap()];
    for (wr_id, op, _) in requests {
        a.post_send(&[SendWr::new(wr_id, op, Payload::Sges(&payload))]).unwrap();
    }
    let mut wc = [WorkCompletion::default(); 8];
    let n = cq.poll_wait(&mut wc[..7], Duration::from_secs(5));
    assert_eq!(n, 7, "4 requests and 3 receives: {:?}", &wc[..n]);
    let of = |qpn: u32, wr_id: u64| {
        *wc[..n].iter().find(|w| w.qpn == qpn && w.wr_id == wr_id).expect("its completion")
    };
    for (wr_id, op, with_imm) in requests {
        let w = of(a.qpn(), wr_id);
        assert_eq!(
            (w.status, w.carries_imm(), w.imm()),
            (WcStatus::Success, with_imm, None),
            "{op:?}"
        );
    }
    for (wr_id, opcode, imm) in [
        (100, WcOpcode::Recv, Some(0x1111)),
        (101, WcOpcode::RecvRdmaWithImm, Some(0x2222)),
        (102, WcOpcode::Recv, None),
    ] {
        let w = of(b.qpn(), wr_id);
        assert_eq!(
            (w.status, w.opcode, w.carries_imm(), w.imm()),
            (WcStatus::Success, opcode, imm.is_some(), imm),
            "receive {wr_id}"
        );
    }
    drop((a, b));
    let _ = std::fs::remove_dir_all(&path);
}
