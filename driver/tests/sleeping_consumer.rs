//! A consumer that arms its CQ and sleeps on the completion channel gets its event when the
//! peer answers later, as on hardware, though no thread of its process polls: softhca
//! starts its progress thread at the first arm, and that thread takes the peer's
//! acknowledgement in while the consumer sleeps. (Before, such a wait slept to its timeout
//! unless `FERRODAT_SOFTHCA_PROGRESS_THREAD=1` had started the thread.)
//!
//! The two sides are two HCAs of one process (softhca0 and softhca1, each its own engine),
//! so the peer's polling does no work for the sleeper's HCA.

mod support;

use ferrodat_driver::completion::{WcOpcode, WorkCompletion};
use ferrodat_driver::work_request::{Payload, RecvWr, SendFlags, SendOp, SendWr};
use ferrodat_driver::{Access, CompChannel, Context, Cq, CqOptions, Pd, QpCaps};
use ferrodat_softhca::Device;
use ferrodat_softhca::config::DeviceConfig;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::*;

/// How long the peer stays idle after the SEND was posted: long past the consumer's
/// spinning, so it is asleep when the acknowledgement comes.
const PEER_IDLE: Duration = Duration::from_millis(300);
/// The consumer's wait: what it would sleep to without the progress thread.
const CONSUMER_WAIT: Duration = Duration::from_secs(5);

fn open(fabric: &TestFabric, name: &str, addr: &str) -> Context {
    let config = DeviceConfig { name: name.into(), addr: addr.parse().unwrap() };
    let dev = Device::new_in(config, fabric.dir()).expect("join the private fabric");
    Context::open_softhca(dev).expect("open the device")
}

#[test]
fn a_consumer_asleep_on_its_armed_cq_is_woken_by_the_peers_late_answer() {
    if let Ok(v) = std::env::var(ferrodat_softhca::device::ENV_PROGRESS_THREAD) {
        // 1: every device has its thread from the start, the peer's too, which would answer
        // at once and leave nothing for the first arm to show; 0: the arm starts none.
        eprintln!("skipped: {} is {v}", ferrodat_softhca::device::ENV_PROGRESS_THREAD);
        return;
    }
    let fabric = TestFabric::new("sleeper");
    let ctx = open(&fabric, "softhca0", "127.0.0.1");
    let gid = ctx.source_gid(1).unwrap().1;
    let pd = Pd::new(&ctx).unwrap();
    let channel = CompChannel::new(&ctx).unwrap();
    let mut send_cq =
        Cq::new(&ctx, &CqOptions { cqe: 16, channel: Some(&channel), ..Default::default() })
            .unwrap();
    let recv_cq = cq(&ctx, 16);
    let caps = QpCaps { max_inline_data: 16, ..Default::default() };
    let mut qp = new_qp(&pd, &send_cq, &recv_cq, None, caps);

    let (to_peer, from_us) = mpsc::channel::<u32>();
    let (to_us, from_peer) = mpsc::channel::<(u32, [u8; 16])>();
    let (go, posted) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let fabric = &fabric;
        let peer = s.spawn(move || {
            // The peer: its own HCA, a receive posted, then idle until well after the SEND.
            let ctx = open(fabric, "softhca1", "127.0.0.2");
            let pd = Pd::new(&ctx).unwrap();
            let mut peer_cq = cq(&ctx, 16);
            let mut peer_qp = new_qp(&pd, &peer_cq, &peer_cq, None, caps);
            to_us.send((peer_qp.qpn(), ctx.source_gid(1).unwrap().1)).unwrap();
            let our_qpn = from_us.recv().unwrap();
            connect_qp(&mut peer_qp, gid, our_qpn, PEER_PSN, PARENT_PSN, 7);
            let mr = pd.alloc_mr(64, Access::ALL).unwrap();
            let sge = [mr.sge(0, 64).unwrap()];
            peer_qp.post_recv(&[RecvWr { wr_id: 1, sges: &sge }]).unwrap();
            posted.recv().unwrap();
            std::thread::sleep(PEER_IDLE);
            let got = poll_n(&mut peer_cq, 1);
            assert!(got[0].is_ok() && got[0].opcode == WcOpcode::Recv, "{got:?}");
            let mut data = [0u8; 8];
            mr.read(0, &mut data).unwrap();
            data
        });
        let (peer_qpn, peer_gid) = from_peer.recv().unwrap();
        connect_qp(&mut qp, peer_gid, peer_qpn, PARENT_PSN, PEER_PSN, 7);
        to_peer.send(qp.qpn()).unwrap();

        let wr =
            SendWr::new(7, SendOp::Send, Payload::Inline(b"asleep!\0")).flags(SendFlags::SIGNALED);
        qp.post_send(&[wr]).unwrap();
        send_cq.arm(false);
        let slept = Instant::now();
        go.send(()).unwrap();
        let event = channel.wait(Some(CONSUMER_WAIT)).expect("wait on the channel");
        let woke = slept.elapsed();
        assert!(
            event.is_some(),
            "no completion event within {CONSUMER_WAIT:?}: nothing took the peer's \
             acknowledgement in while this thread slept"
        );
        assert!(woke >= PEER_IDLE, "woken after {woke:?}, before the peer answered");
        let mut wc = [WorkCompletion::default(); 1];
        assert_eq!(send_cq.poll(&mut wc), 1, "the event came without its completion");
        assert!(wc[0].is_ok() && wc[0].wr_id == 7, "{:?}", wc[0]);
        assert_eq!(&peer.join().unwrap(), b"asleep!\0");
    });
}
