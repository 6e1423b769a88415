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

/// The state letter (`R`, `S`, ...) of each thread of this process named after softhca0's
/// progress thread (`softhca-softhca0`, cut to 15 bytes by the kernel).
fn progress_thread_states() -> Vec<char> {
    let tasks = std::fs::read_dir("/proc/self/task").expect("list /proc/self/task");
    tasks
        .filter_map(|t| {
            let path = t.ok()?.path();
            let comm = std::fs::read_to_string(path.join("comm")).ok()?;
            if comm.trim_end() != "softhca-softhca" {
                return None;
            }
            let stat = std::fs::read_to_string(path.join("stat")).ok()?;
            stat[stat.rfind(')')? + 1..].trim_start().chars().next()
        })
        .collect()
}

/// A process that armed a CQ (which started softhca's progress thread) and then forked: the
/// child inherits the device but not the thread, and closes the device (its CQ, channel and
/// context) without waiting for, or joining, a thread it does not have.
#[test]
fn a_child_forked_after_an_arm_closes_the_device() {
    if std::env::var_os(ferrodat_softhca::device::ENV_PROGRESS_THREAD).is_some() {
        eprintln!("skipped: {} is set", ferrodat_softhca::device::ENV_PROGRESS_THREAD);
        return;
    }
    let fabric = TestFabric::new("fork-after-arm");
    let ctx = open(&fabric, "softhca0", "127.0.0.1");
    let channel = CompChannel::new(&ctx).unwrap();
    let mut armed =
        Cq::new(&ctx, &CqOptions { cqe: 16, channel: Some(&channel), ..Default::default() })
            .unwrap();
    armed.arm(false);
    // Fork while the thread sleeps on the fabric's futex, holding no reference to the
    // engine (as it does whenever the device is idle), so that the child's close is the
    // engine's last.
    let deadline = Instant::now() + Duration::from_secs(5);
    while progress_thread_states() != ['S'] {
        assert!(Instant::now() < deadline, "the arm started no sleeping progress thread");
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: the child only drops what it inherited, then leaves with _exit (no test
    // harness code runs there).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let closed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            drop(armed);
            drop(channel);
            drop(ctx);
        }));
        // SAFETY: ends the child at once.
        unsafe { libc::_exit(if closed.is_ok() { 0 } else { 1 }) };
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut status = 0;
    loop {
        // SAFETY: polls our own child; `status` is a live int.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if done == pid {
            break;
        }
        if Instant::now() > deadline {
            // SAFETY: our own child, which has not been reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the child's close hung (waiting for a progress thread it does not have)");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(libc::WIFEXITED(status), "the child died: status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "closing the device in the child panicked");
    drop(armed);
    drop(channel);
    drop(ctx);
}
