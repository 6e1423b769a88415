//! softhca's side of fork(2) (`owning_process.rs`): a child forked from a process with an
//! open device file holds a copy of the file, whose objects are the parent's. The copy
//! answers commands and mmaps with EACCES (what a C program sees through the preload
//! library), a new file on the inherited device is refused alike, `Device::open` gives the
//! child a device of its own (not the parent's, which its registry of open devices still
//! names), and the parent keeps its QPNs and goes on using its QPs. (What the child's drops leave alone is tested through the
//! driver, in `driver/tests/forked_child.rs`.)
//!
//! One test in this binary: `fork` with no other test threads running.

#[path = "support/completion.rs"]
mod completion;
#[path = "support/mem.rs"]
mod mem;
#[path = "support/verbs.rs"]
mod verbs;

use ferrodat_abi::mlx5::{self, mmap_cmd};
use ferrodat_softhca::{Device, Errno, Uverbs};
use mem::page;
use std::sync::Arc;
use verbs::*;

/// Exit codes of the child: 0, or which refusal did not come.
const CHILD_OK: i32 = 0;
const WRITE_NOT_REFUSED: i32 = 3;
const MMAP_NOT_REFUSED: i32 = 4;
const OPEN_NOT_REFUSED: i32 = 5;
const CHILD_PANICKED: i32 = 6;
const REGISTRY_GAVE_THE_PARENTS: i32 = 7;
const OWN_DEVICE_FAILED: i32 = 8;

/// In the child: the inherited file and device refuse it; `Device::open` of the name the
/// parent opened gives a device of the child's own, which works.
fn child(v: &Verbs, qp: &Qp, registered: &Arc<Device>) -> i32 {
    if v.destroy_qp(qp).err() != Some(Errno::EACCES) {
        return WRITE_NOT_REFUSED;
    }
    let pgoff = mmap_cmd::REGULAR_PAGE << mlx5::MMAP_CMD_SHIFT;
    if v.uv.mmap(pgoff, page()).err() != Some(Errno::EACCES) {
        return MMAP_NOT_REFUSED;
    }
    if Uverbs::open(v.dev.clone()).err() != Some(Errno::EACCES) {
        return OPEN_NOT_REFUSED;
    }
    let Ok(own) = Device::open(registered.name()) else { return OWN_DEVICE_FAILED };
    if Arc::ptr_eq(&own, registered) || !own.engine().owner().is_current() {
        return REGISTRY_GAVE_THE_PARENTS;
    }
    if Uverbs::open(own).is_err() {
        return OWN_DEVICE_FAILED;
    }
    CHILD_OK
}

#[test]
fn a_forked_childs_copy_of_a_device_file_is_refused_and_the_parent_keeps_its_qps() {
    let v = Verbs::open();
    let pd = v.alloc_pd();
    let cq = v.create_cq(16, None, 1);
    let a = v.create_qp(&pd, &cq, &cq, None, QpCaps::default());
    let b = v.create_qp(&pd, &cq, &cq, None, QpCaps::default());
    v.connect_pair(&a, &b);
    // A device opened by name, as the DAT layer opens them: the registry names it.
    ferrodat_softhca::fabric::use_private_fabric("softhca-fork");
    let registered = Device::open("softhca0").expect("open softhca0 by name");
    // SAFETY: fork has no preconditions; this binary runs no other test thread, and the
    // child only makes the calls above and leaves with _exit (the private fabric directory
    // the parent's `Verbs` removes on drop stays: nothing of the child is dropped).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let run = std::panic::AssertUnwindSafe(|| child(&v, &a, &registered));
        let code = std::panic::catch_unwind(run).unwrap_or(CHILD_PANICKED);
        // SAFETY: ends the child at once, without the test harness.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is ours to write.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status), "the child died: status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), CHILD_OK, "the child's exit code");

    for qp in [&a, &b] {
        let owner = v.dev.engine().registry().owner_of(qp.qpn).map(|o| o.pid);
        assert_eq!(owner, Some(std::process::id()), "QPN {:#x}'s owner", qp.qpn);
    }
    assert_eq!(v.query_qp(&a).qp_state, ferrodat_abi::uverbs::qp_state::RTS);
    v.destroy_qp(&a).expect("the parent destroys its own QP");
    assert_eq!(v.dev.engine().registry().owner_of(a.qpn), None, "and its QPN is free");
}
