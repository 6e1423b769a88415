//! A child forked from a process that uses the driver inherits its context, PD, CQ, QPs
//! and MRs. They stay the parent's: on hardware a DESTROY through the inherited uverbs file
//! would destroy them for the parent too, and their queues are not even mapped in the child
//! (MADV_DONTFORK). So the child's drops send no command and touch no queue (before, the
//! child died of SIGSEGV, and softhca gave the parent's QPNs back), and a command or a new
//! context the child asks for on what it inherited is refused with an error that says
//! why. A device of its own works in the child; the parent's QPs keep their QPNs and move
//! messages afterwards.
//!
//! One test in this binary: `fork` with no other test threads running.

#[path = "support/loopback.rs"]
mod loopback;
mod support;

use ferrodat_driver::completion::{WcOpcode, WcStatus};
use ferrodat_driver::work_request::{Payload, RecvWr, SendOp, SendWr};
use ferrodat_driver::{Access, Context, Cq, CqOptions, MrBuf, Pd, Qp, QpCaps};
use ferrodat_softhca::Device;
use ferrodat_softhca::fabric::FabricDir;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use support::*;

/// Exit codes of the child.
const CHILD_OK: i32 = 0;
const CHILD_COMMAND_NOT_REFUSED: i32 = 3;
const CHILD_PANICKED: i32 = 4;

/// One SEND from `a` (out of `src`) to `b` (into `dst`), checked on arrival.
fn exchange<'m>(
    (a, b): (&mut Qp<'m>, &mut Qp<'m>),
    cq: &mut Cq,
    (src, dst): (&'m MrBuf, &'m MrBuf),
    text: &[u8],
) {
    src.write(0, text).unwrap();
    b.post_recv(&[RecvWr { wr_id: 2, sges: &[dst.sge(0, 64).unwrap()] }]).unwrap();
    let sges = [src.sge(0, text.len()).unwrap()];
    a.post_send(&[SendWr::new(1, SendOp::Send, Payload::Sges(&sges))]).unwrap();
    let wcs = poll_n(cq, 2);
    assert_eq!(wcs.len(), 2, "both completions: {wcs:?}");
    assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "{wcs:?}");
    let recv = wcs.iter().find(|w| w.opcode == WcOpcode::Recv).expect("the receive");
    assert_eq!(recv.byte_len as usize, text.len());
    let mut got = vec![0u8; text.len()];
    dst.read(0, &mut got).unwrap();
    assert_eq!(got, text);
}

/// What the child does with everything it inherited: asks for a command and for a second
/// context on the inherited device (both must be refused, naming the fork), then drops it
/// all, then makes a device, CQ and QP of its own on the same fabric.
fn child(
    fabric: FabricDir,
    dev: Arc<Device>,
    ctx: Context,
    pd: Pd,
    cq: Cq,
    qps: [Qp<'_>; 2],
    mr: MrBuf,
) -> i32 {
    let refused = |what: &str, r: Result<(), ferrodat_driver::Error>| match r {
        Err(e) if e.to_string().contains("forked") => true,
        other => {
            eprintln!("{what} in the child: {other:?}");
            false
        }
    };
    let cq_on_inherited = Cq::new(&ctx, &CqOptions { cqe: 4, ..Default::default() });
    let ctx_on_inherited = Context::open_softhca(dev.clone());
    if !refused("CREATE_CQ", cq_on_inherited.map(drop))
        || !refused("open", ctx_on_inherited.map(drop))
    {
        return CHILD_COMMAND_NOT_REFUSED;
    }
    drop(qps);
    drop(mr);
    drop(cq);
    drop(pd);
    drop(ctx);
    drop(dev);
    // A device of its own works in the child.
    let own = Context::open_softhca(device(fabric, false)).unwrap();
    let own_pd = Pd::new(&own).unwrap();
    let own_cq = support::cq(&own, 4);
    drop(new_qp(&own_pd, &own_cq, &own_cq, None, QpCaps::default()));
    CHILD_OK
}

#[test]
fn a_forked_childs_drops_leave_the_parents_objects_alone() {
    let fabric = TestFabric::new("fork");
    let dev = device(fabric.dir(), false);
    let ctx = Context::open_softhca(dev.clone()).unwrap();
    let pd = Pd::new(&ctx).unwrap();
    let mut cq = cq(&ctx, 16);
    let [src_mr, spare] = [(); 2].map(|()| pd.alloc_mr(64, Access::ALL).unwrap());
    // Shared memory: softhca exports it to peers through a file of the fabric.
    let dst_mr = pd.alloc_mr_shared(64, Access::ALL).unwrap();
    let export = dev.engine().registry().export_path(dst_mr.rkey() >> 8);
    assert!(export.exists(), "{} is exported", export.display());
    let (src, dst) = (&src_mr, &dst_mr);
    let (mut a, mut b) = loopback::connected_pair(&ctx, &pd, &cq, true);
    exchange((&mut a, &mut b), &mut cq, (src, dst), b"before the fork");
    let qpns = [a.qpn(), b.qpn()];

    // The child's stderr comes back through a pipe: its drops must print nothing.
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0, "pipe2");
    // SAFETY: pipe2 just returned these descriptors, owned by nobody else.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fork has no preconditions; this test binary runs no other test thread, and the
    // child only drops driver objects and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: both descriptors are open; fd 2 becomes the pipe's write end.
        unsafe { libc::dup2(write_end.as_raw_fd(), 2) };
        // (The fabric directory itself stays: a moved `TestFabric` would remove it.)
        let fabric_dir = fabric.dir();
        let catch = |f: Box<dyn FnOnce() -> i32 + '_>| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(CHILD_PANICKED)
        };
        let mut code = catch(Box::new(move || child(fabric_dir, dev, ctx, pd, cq, [a, b], spare)));
        // The QPs' buffers last: with them goes the child's last handle of the context,
        // and with that the device file.
        if code == CHILD_OK {
            code = catch(Box::new(move || {
                drop((src_mr, dst_mr));
                CHILD_OK
            }));
        }
        // SAFETY: ends the child at once, without running the parent's atexit handlers or
        // the test harness.
        unsafe { libc::_exit(code) };
    }
    drop(write_end);
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is ours to write.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    let mut said = String::new();
    std::fs::File::from(read_end).read_to_string(&mut said).unwrap();
    assert!(libc::WIFEXITED(status), "the child died of signal {}: {said}", libc::WTERMSIG(status));
    assert_eq!(libc::WEXITSTATUS(status), CHILD_OK, "the child: {said}");
    assert!(said.is_empty(), "the child's drops printed: {said}");

    // The parent's QPs and exported memory are still its own, and still work.
    assert!(export.exists(), "{} outlived the child", export.display());
    for qpn in qpns {
        let owner = dev.engine().registry().owner_of(qpn);
        assert_eq!(owner.map(|o| o.pid), Some(std::process::id()), "QPN {qpn:#x}'s owner");
    }
    exchange((&mut a, &mut b), &mut cq, (src, dst), b"after the child is gone");
}
