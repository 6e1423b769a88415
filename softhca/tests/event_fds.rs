//! softhca's side of the event fds goes away with the user's. In the kernel a completion
//! channel is a file that the user's fd and every CQ on it hold a reference to, released
//! when the last one goes: once the user closed the fd and the last CQ on it is destroyed,
//! in either order. The async event fd goes with the uverbs file.
//!
//! Counted with /proc/self/fd, so this is its own test binary and its tests run one at a
//! time (`fd_growth::serial`): nothing else in the process opens or closes fds meanwhile
//! but softhca itself.

#[path = "support/completion.rs"]
mod completion;
#[path = "support/fd_growth.rs"]
mod fd_growth;
#[path = "support/mem.rs"]
mod mem;
#[path = "support/verbs.rs"]
mod verbs;

use ferrodat_abi::uverbs::access;
use std::os::fd::RawFd;
use verbs::*;

/// Rounds each test repeats: a leak of one fd per round is far above `SLACK`.
const ROUNDS: usize = 100;
/// What a round may leave open at most, in all: a channel whose release waits for the
/// next command, nothing per round.
const SLACK: usize = 2;

use fd_growth::serial;

/// [`fd_growth::assert_no_fd_growth`] with this binary's rounds and slack.
fn assert_no_fd_growth_of(what: &str, round: impl FnMut()) {
    fd_growth::assert_no_fd_growth(what, ROUNDS, SLACK, round);
}

/// The fd is open in this process.
fn is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD only queries the descriptor table.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// The other end of the event fd `fd` is gone (poll reports a hangup).
fn hung_up(fd: RawFd) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd; zero timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 1 && p.revents & libc::POLLHUP != 0
}

fn dup(fd: RawFd) -> RawFd {
    // SAFETY: dup of an fd we hold; the copy is ours to close.
    let d = unsafe { libc::dup(fd) };
    assert!(d >= 0, "dup: {}", std::io::Error::last_os_error());
    d
}

#[test]
fn comp_channel_closed_after_its_cq_is_destroyed_leaves_no_fd() {
    let _serial = serial();
    let v = Verbs::open();
    assert_no_fd_growth_of("channel + CQ, DESTROY_CQ, close", || {
        let ch = v.create_comp_channel();
        let cq = v.create_cq(15, Some(ch), 0xc0);
        v.destroy_cq(&cq).expect("DESTROY_CQ");
        close(ch);
    });
}

#[test]
fn comp_channel_closed_before_its_cq_is_destroyed_leaves_no_fd() {
    let _serial = serial();
    let v = Verbs::open();
    // The CQ keeps the channel (the kernel's file reference) until DESTROY_CQ.
    assert_no_fd_growth_of("channel + CQ, close, DESTROY_CQ", || {
        let ch = v.create_comp_channel();
        let cq = v.create_cq(15, Some(ch), 0xc1);
        close(ch);
        v.arm_cq(&cq, false);
        v.settle();
        v.destroy_cq(&cq).expect("DESTROY_CQ");
    });
}

#[test]
fn comp_channel_without_cq_leaves_no_fd() {
    let _serial = serial();
    let v = Verbs::open();
    assert_no_fd_growth_of("channel, close", || close(v.create_comp_channel()));
}

#[test]
fn channels_that_stay_open_keep_working_beside_closed_ones() {
    let _serial = serial();
    let v = Verbs::open();
    let kept = v.create_comp_channel();
    for _ in 0..10 {
        close(v.create_comp_channel());
    }
    let other = v.create_comp_channel(); // releases what was closed
    let cq = v.create_cq(15, Some(kept), 0x4b);
    assert!(is_open(kept));
    v.destroy_cq(&cq).expect("DESTROY_CQ");
    close(kept);
    close(other);
}

#[test]
fn channel_lives_while_a_dup_of_its_fd_is_open() {
    let _serial = serial();
    let v = Verbs::open();
    // The channel is the file, not the number: closing one of two descriptors of it
    // releases nothing, and the other still reads events.
    let ch = v.create_comp_channel();
    let copy = dup(ch);
    close(ch);
    let other = v.create_comp_channel(); // a channel command: closed channels are released
    let cq = v.create_cq(15, Some(other), 0x0d);
    v.destroy_cq(&cq).expect("DESTROY_CQ");
    assert!(!hung_up(copy), "softhca released a channel whose file is still open");
    close(copy);
    close(other);
}

#[test]
fn events_through_a_channel_every_round_leave_no_fd() {
    let _serial = serial();
    let v = Verbs::open();
    let pd = v.alloc_pd();
    let mr = v.reg_mr(&pd, 4096, access::LOCAL_WRITE);
    // What an engine's EVD and endpoint do: a channel and CQ, a connected QP pair, a
    // completion event read, then everything destroyed and the channel closed.
    assert_no_fd_growth_of("channel, CQ, QPs, SEND, event, destroy, close", || {
        let ch = v.create_comp_channel();
        let mut cq = v.create_cq(15, Some(ch), 0xe0);
        let mut a = v.create_qp(&pd, &cq, &cq, None, QpCaps::default());
        let mut b = v.create_qp(&pd, &cq, &cq, None, QpCaps::default());
        v.connect_pair(&a, &b);
        v.post_recv(&mut b, &[mr.sge(0, 64)]);
        v.arm_cq(&cq, false);
        let wr = SendWr {
            opcode: ferrodat_abi::mlx5::opcode::SEND,
            sges: vec![mr.sge(2048, 8)],
            signaled: true,
            ..Default::default()
        };
        v.post_send(&mut a, &[wr]);
        v.drive_until("the completion event", || readable(ch, 0));
        assert_eq!(comp_event(ch).cq_handle, 0xe0);
        cq.arm_sn += 1;
        v.wait(&mut cq, 2);
        v.destroy_qp(&a).expect("DESTROY_QP");
        v.destroy_qp(&b).expect("DESTROY_QP");
        v.destroy_cq(&cq).expect("DESTROY_CQ");
        close(ch);
    });
}

#[test]
fn device_open_and_close_leaves_no_fd() {
    let _serial = serial();
    // GET_CONTEXT makes the async fd and the UAR pages; the user closes the async fd
    // (Verbs::drop) and softhca's side goes with the file.
    assert_no_fd_growth_of("open, GET_CONTEXT, channel + CQ, close", || {
        let v = Verbs::open();
        let ch = v.create_comp_channel();
        let cq = v.create_cq(15, Some(ch), 0xd0);
        v.destroy_cq(&cq).expect("DESTROY_CQ");
        close(ch);
    });
}

#[test]
fn device_closed_with_channel_and_cq_still_open_leaves_no_fd() {
    let _serial = serial();
    // `ib_uverbs_close` destroys the CQs; the channel goes once the user closes it too.
    assert_no_fd_growth_of("open, channel + CQ, close device, close channel", || {
        let v = Verbs::open();
        let ch = v.create_comp_channel();
        let _cq = v.create_cq(15, Some(ch), 0xd1);
        drop(v);
        close(ch);
    });
}
