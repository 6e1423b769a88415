//! The EVD engine's building blocks.
//!
//! - [`queue`]: [`EventQueue`], the bounded lock-free MPMC FIFO an EVD's events wait in
//!   (exact qlen capacity, FIFO per producer, each event to exactly one consumer).
//! - [`notify`]: [`Notifier`], the eventfd a sleeping waiter polls together with its CQs'
//!   completion channels; producers write it only when a waiter announced itself.
//! - [`waiter`]: [`EvdCore`], `dat_evd_wait` / `dat_evd_dequeue` / `set_unwaitable` /
//!   `resize` over a queue, a notifier and an event source ([`Harvest`], which the DTO
//!   side implements over its CQs).
//! - [`early_completions`]: where a passive endpoint's receives that complete before its
//!   ESTABLISHED is reported wait, so the consumer sees the connection first and loses
//!   nothing.
//! - [`notification`]: which events end a wait and trigger the CNO — all of them, or on an
//!   EVD fed by SOLICITED_WAIT receives only the solicited, failed and posted ones.
//!
//! The lock-free protocols (queue, notifier) are model-checked in `loom-tests/`
//! (`evd_queue`, `evd_notify`), built from this very source with `--cfg loom`.
//!
//! Left to the EVD object: stream flags and the merging matrix, CNO triggering (on a post
//! with no waiter, [`EvdCore::has_waiter`]), the threshold-1 rule for consumer-controlled
//! notification (SOLICITED_WAIT receives: [`notification`]), overflow reporting to the
//! async EVD (a harvest's lost events, [`EvdCore::take_unreported_overflows`]; a full
//! [`EvdCore::post`]), and the one cross-stream order DAT demands (successful in-progress
//! DTO completions before DISCONNECTED on a shared EVD: the CM must not post DISCONNECTED
//! while the QP's completions still sit unharvested in the CQ).

pub mod cq_source;
pub mod early_completions;
pub mod notification;
pub mod notify;
mod object;
pub mod queue;
pub mod waiter;

pub use notify::{Notifier, Ready, Ticket, WakeReason, Woken};
pub(crate) use object::EvdShared;
pub use object::{Evd, EvdParam};
pub use queue::EventQueue;
pub use waiter::{
    Backlog, DAT_TIMEOUT_INFINITE, EvdCore, Harvest, Harvested, NoSource, SourceError, WaitError,
};

/// A pipe (read end, write end) for the tests, both ends close-on-exec.
#[cfg(all(test, not(loom)))]
pub(crate) fn test_pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two fds pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: pipe2 just created both fds; nothing else owns them.
    unsafe {
        (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1]))
    }
}
