//! On a machine with an RDMA device (`/dev/infiniband/uverbsN` found through sysfs): open
//! it, post a NOP, then loop back an RC SEND and an RDMA WRITE between two QPs on port 1,
//! data checked. Without one the test prints why it did nothing and passes. (Under the
//! preload library, `tests/tests/driver_preload.rs` runs it against softhca's `mlx5_0`.)

#[path = "support/loopback.rs"]
mod loopback;

use ferrodat_driver::completion::{WcOpcode, WcStatus, WorkCompletion};
use ferrodat_driver::discovery::{DeviceKind, discover};
use ferrodat_driver::work_request::{Payload, RecvWr, Remote, SendOp, SendWr};
use ferrodat_driver::{Access, Context, Cq, CqOptions, Pd};
use std::time::Duration;

#[test]
fn nop_send_and_rdma_write_on_a_hardware_device() {
    let found = discover();
    let Some(dev) = found.devices.iter().find(|d| matches!(d.kind, DeviceKind::Hardware(_))) else {
        println!(
            "hardware smoke test skipped: no RDMA device (/dev/infiniband/uverbsN with mlx5) \
             found; skipped entries: {:?}",
            found.skipped
        );
        return;
    };
    let ctx = Context::open_device(dev).unwrap_or_else(|e| panic!("{e}"));
    println!("hardware smoke test on {} (kernel channel)", ctx.name());
    let pd = Pd::new(&ctx).unwrap();
    let mut cq = Cq::new(&ctx, &CqOptions { cqe: 16, ..Default::default() }).unwrap();
    let mut src = vec![0u8; 256];
    let mut dst = vec![0u8; 256];
    let src_mr = pd.reg_mr(&mut src, Access::ALL).unwrap();
    let dst_mr = pd.reg_mr(&mut dst, Access::ALL).unwrap();
    let (mut a, mut b) = loopback::connected_pair(&ctx, &pd, &cq, false);
    let mut wc = [WorkCompletion::default(); 2];
    let wait = Duration::from_secs(5);

    a.post_send(&[SendWr::new(1, SendOp::Nop, Payload::EMPTY)]).unwrap();
    assert_eq!(cq.poll_wait(&mut wc[..1], wait), 1, "the NOP completes");
    assert_eq!((wc[0].wr_id, wc[0].opcode, wc[0].status), (1, WcOpcode::Nop, WcStatus::Success));

    src_mr.write(0, b"over the wire").unwrap();
    b.post_recv(&[RecvWr { wr_id: 2, sges: &[dst_mr.sge(0, 64).unwrap()] }]).unwrap();
    a.post_send(&[SendWr::new(3, SendOp::Send, Payload::Sges(&[src_mr.sge(0, 13).unwrap()]))])
        .unwrap();
    assert_eq!(cq.poll_wait(&mut wc, wait), 2, "the SEND and its receive complete");
    assert!(wc.iter().all(|w| w.is_ok()), "{wc:?}");
    let mut got = [0u8; 13];
    dst_mr.read(0, &mut got).unwrap();
    assert_eq!(&got, b"over the wire");

    let remote = Remote { addr: dst_mr.addr() + 128, rkey: dst_mr.rkey() };
    let sge = [src_mr.sge(0, 13).unwrap()];
    a.post_send(&[SendWr::new(4, SendOp::RdmaWrite(remote), Payload::Sges(&sge))]).unwrap();
    assert_eq!(cq.poll_wait(&mut wc[..1], wait), 1, "the RDMA WRITE completes");
    assert_eq!(
        (wc[0].wr_id, wc[0].opcode, wc[0].status),
        (4, WcOpcode::RdmaWrite, WcStatus::Success)
    );
    dst_mr.read(128, &mut got).unwrap();
    assert_eq!(&got, b"over the wire");
    let _: &Context = &ctx;
}
