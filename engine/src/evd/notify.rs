//! The sleeping half of `dat_evd_wait`: an eventfd that producers poke only when a waiter
//! has announced itself, polled together with the completion-channel fds of the EVD's CQs.
//!
//! # Protocol (no lost wake-up; model: `loom-tests/tests/evd_notify.rs`)
//!
//! One word, `state`, holds the number of announced sleepers (bits 0..24), the reason of
//! the last [`Notifier::wake_all`] (bits 24..32) and a wake-all generation (bits 32..64).
//!
//! - waiter: [`Notifier::announce`] (`state += 1`, then a SeqCst fence), **re-check** the
//!   condition it waits for (queue length, CQs after arming, EVD flags), and only then
//!   [`Ticket::sleep`]; dropping the [`Ticket`] withdraws the announcement.
//! - producer: make the event visible (push), then [`Notifier::notify`]: a SeqCst fence
//!   and a plain load of `state`; only if a sleeper is announced does it write the eventfd.
//!   A push with no waiter costs a fence and a load, no syscall.
//!
//! The two fences are ordered one way or the other: if the producer's comes first, the
//! waiter's re-check sees the event; if the waiter's comes first, the producer's load sees
//! the announcement and the eventfd is written (the token stays in the eventfd until the
//! waiter drains it, so a write before the waiter's `poll` is not lost either).
//!
//! `wake_all` bumps the generation with an RMW on `state` and writes the eventfd if a
//! sleeper is announced. A ticket remembers the generation it was announced under and
//! reports [`Woken::Kicked`] once it changed. A waiter announced after the bump does not
//! see a changed generation, but its announce RMW reads the bump's value, so it sees every
//! flag the kicker stored before calling `wake_all` (set UNWAITABLE, then `wake_all`; the
//! waiter checks the flags after announcing).

use crate::sync::{AtomicU64, Ordering, fence};
use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::time::Instant;

const SLEEPERS: u64 = (1 << 24) - 1;
const REASON_SHIFT: u32 = 24;
const GEN_SHIFT: u32 = 32;

/// Why [`Notifier::wake_all`] woke the sleepers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum WakeReason {
    /// `dat_evd_set_unwaitable`: the waiter fails with `DAT_INVALID_STATE`.
    Unwaitable = 1,
    /// EVD freed or IA closed: the waiter fails with `DAT_ABORT`.
    Abort = 2,
}

impl WakeReason {
    fn from_bits(b: u8) -> Option<WakeReason> {
        match b {
            1 => Some(WakeReason::Unwaitable),
            2 => Some(WakeReason::Abort),
            _ => None,
        }
    }
}

/// What ended a [`Ticket::sleep`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woken {
    /// The notifier was poked and/or some extra fds are readable.
    Ready(Ready),
    /// The deadline passed.
    Timeout,
    /// [`Notifier::wake_all`] ran since the ticket was announced (the latest reason).
    Kicked(WakeReason),
}

/// Which fds woke a sleeper: the notifier itself and/or indexes into `extra_fds`.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Ready(u64);

impl Ready {
    /// The most extra fds one [`Ticket::sleep`] polls, and the most a `Ready` names (see
    /// [`Ticket::sleep_on_all`]).
    pub const MAX_EXTRA_FDS: usize = 63;

    /// A producer poked the notifier.
    pub fn notified(self) -> bool {
        self.0 & 1 != 0
    }

    /// `extra_fds[i]` is readable.
    pub fn fd(self, i: usize) -> bool {
        i < Self::MAX_EXTRA_FDS && self.0 & (2 << i) != 0
    }

    /// The indexes of the readable extra fds.
    pub fn fds(self) -> impl Iterator<Item = usize> {
        (0..Self::MAX_EXTRA_FDS).filter(move |&i| self.fd(i))
    }
}

impl fmt::Debug for Ready {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ready")
            .field("notified", &self.notified())
            .field("fds", &self.fds().collect::<Vec<_>>())
            .finish()
    }
}

/// The wake-up side of an EVD: see the module docs for the protocol.
pub struct Notifier {
    state: AtomicU64,
    signal: Signal,
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.load(Ordering::Relaxed);
        f.debug_struct("Notifier")
            .field("sleepers", &(s & SLEEPERS))
            .field("generation", &(s >> GEN_SHIFT))
            .finish()
    }
}

impl Notifier {
    /// A notifier with its eventfd.
    pub fn new() -> io::Result<Notifier> {
        Ok(Notifier { state: AtomicU64::new(0), signal: Signal::new()? })
    }

    /// Called by a producer after its event became visible (after a successful push):
    /// wakes an announced sleeper; otherwise a fence and a load.
    #[inline]
    pub fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.state.load(Ordering::Relaxed) & SLEEPERS != 0 {
            self.signal.raise();
        }
    }

    /// Announces a sleeper. Re-check the condition after this and before
    /// [`Ticket::sleep`]; an event made visible after the re-check wakes the sleep.
    pub fn announce(&self) -> Ticket<'_> {
        let s = self.state.fetch_add(1, Ordering::SeqCst);
        debug_assert!(s & SLEEPERS != SLEEPERS, "2^24 sleepers on one notifier");
        fence(Ordering::SeqCst);
        Ticket { notifier: self, generation: s >> GEN_SHIFT }
    }

    /// Wakes every announced sleeper with [`Woken::Kicked`]`(reason)`. Store whatever state
    /// the woken waiters must see (e.g. the UNWAITABLE flag) before calling this.
    pub fn wake_all(&self, reason: WakeReason) {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            let generation = (s >> GEN_SHIFT).wrapping_add(1) & 0xffff_ffff;
            let new = (generation << GEN_SHIFT)
                | (u64::from(reason as u8) << REASON_SHIFT)
                | (s & SLEEPERS);
            match self.state.compare_exchange(s, new, Ordering::SeqCst, Ordering::Relaxed) {
                Ok(_) => break,
                Err(cur) => s = cur,
            }
        }
        if s & SLEEPERS != 0 {
            self.signal.raise();
        }
    }

    /// The number of [`wake_all`](Notifier::wake_all) calls so far (mod 2^32) and the
    /// latest reason.
    pub fn last_wake(&self) -> (u32, Option<WakeReason>) {
        let s = self.state.load(Ordering::Acquire);
        ((s >> GEN_SHIFT) as u32, WakeReason::from_bits((s >> REASON_SHIFT) as u8))
    }

    /// Announced sleepers now (a snapshot, for diagnostics and tests).
    pub fn sleepers(&self) -> usize {
        (self.state.load(Ordering::Relaxed) & SLEEPERS) as usize
    }

    /// The eventfd (e.g. to put it into an epoll set elsewhere); `None` under loom.
    pub fn fd(&self) -> Option<RawFd> {
        self.signal.fd()
    }
}

/// An announced sleeper (see [`Notifier::announce`]); dropping it withdraws the
/// announcement.
pub struct Ticket<'a> {
    notifier: &'a Notifier,
    generation: u64,
}

impl fmt::Debug for Ticket<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket").field("generation", &self.generation).finish()
    }
}

impl Ticket<'_> {
    /// `Some(reason)` once `wake_all` ran after this ticket was announced.
    pub fn kicked(&self) -> Option<WakeReason> {
        let s = self.notifier.state.load(Ordering::Acquire);
        if s >> GEN_SHIFT != self.generation {
            Some(WakeReason::from_bits((s >> REASON_SHIFT) as u8).unwrap_or(WakeReason::Abort))
        } else {
            None
        }
    }

    /// Sleeps until the notifier is poked, one of `extra_fds` (at most
    /// [`Ready::MAX_EXTRA_FDS`]; [`Ticket::sleep_on_all`] takes more) is readable,
    /// `wake_all` runs, or `deadline` (`None`: never) passes. Drains the eventfd; the extra
    /// fds are left for the caller to consume. EINTR is retried with the remaining time; a
    /// kick takes precedence over readiness. Returns at once if something is already
    /// pending.
    ///
    /// Under loom the eventfd is a modelled mutex and condvar: `extra_fds` must be empty,
    /// and a sleep with a deadline does not block (it times out if nothing is pending).
    pub fn sleep(&self, extra_fds: &[RawFd], deadline: Option<Instant>) -> io::Result<Woken> {
        if extra_fds.len() > Ready::MAX_EXTRA_FDS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} fds to poll; one EVD sleep polls at most {}",
                    extra_fds.len(),
                    Ready::MAX_EXTRA_FDS
                ),
            ));
        }
        self.sleep_polling(extra_fds, deadline)
    }

    /// [`Ticket::sleep`] for a sleeper that looks at all its sources after any wake-up (a
    /// CNO, one completion channel per EVD): any number of `extra_fds`. [`Woken::Ready`]
    /// tells whether the notifier was poked, but names readable fds only among the first
    /// [`Ready::MAX_EXTRA_FDS`]; with none named, some later fd may be the one.
    pub fn sleep_on_all(
        &self,
        extra_fds: &[RawFd],
        deadline: Option<Instant>,
    ) -> io::Result<Woken> {
        self.sleep_polling(extra_fds, deadline)
    }

    fn sleep_polling(&self, extra_fds: &[RawFd], deadline: Option<Instant>) -> io::Result<Woken> {
        loop {
            if let Some(r) = self.kicked() {
                return Ok(Woken::Kicked(r));
            }
            let woken = self.notifier.signal.wait(extra_fds, deadline)?;
            if let Some(r) = self.kicked() {
                return Ok(Woken::Kicked(r));
            }
            match woken {
                Some(ready) => return Ok(Woken::Ready(ready)),
                None if deadline.is_some_and(|d| Instant::now() >= d) || cfg!(loom) => {
                    return Ok(Woken::Timeout);
                }
                None => {}
            }
        }
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.notifier.state.fetch_sub(1, Ordering::Release);
    }
}

/// The eventfd.
#[cfg(not(loom))]
struct Signal {
    fd: crate::event_fd::EventFd,
}

#[cfg(not(loom))]
impl Signal {
    fn new() -> io::Result<Signal> {
        Ok(Signal { fd: crate::event_fd::EventFd::new()? })
    }

    fn fd(&self) -> Option<RawFd> {
        use std::os::fd::AsRawFd;
        Some(self.fd.as_raw_fd())
    }

    fn raise(&self) {
        self.fd.raise();
    }

    fn drain(&self) {
        self.fd.drain();
    }

    /// One poll(2) of the eventfd and `extra` until `deadline`; `None` on timeout or EINTR
    /// (the caller re-checks and comes back).
    fn wait(&self, extra: &[RawFd], deadline: Option<Instant>) -> io::Result<Option<Ready>> {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                // Round up, so a sub-millisecond remainder sleeps instead of spinning.
                i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
            }
        };
        let mut fds = Vec::with_capacity(1 + extra.len());
        fds.push(libc::pollfd { fd: self.fd().unwrap_or(-1), events: libc::POLLIN, revents: 0 });
        fds.extend(extra.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }));
        // SAFETY: `fds` is a live array of `fds.len()` pollfds.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.raw_os_error() == Some(libc::EINTR) { Ok(None) } else { Err(e) };
        }
        if n == 0 {
            return Ok(None);
        }
        let mut ready = Ready(0);
        if fds[0].revents & libc::POLLIN != 0 {
            self.drain();
            ready.0 |= 1;
        }
        for (i, p) in fds[1..].iter().enumerate() {
            if p.revents & libc::POLLIN != 0 {
                // Past the mask's room (a `sleep_on_all`), readiness is not named.
                if i < Ready::MAX_EXTRA_FDS {
                    ready.0 |= 2 << i;
                }
            } else if p.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                return Err(io::Error::other(format!(
                    "EVD wait: completion-channel fd {} reports {} (revents {:#x})",
                    p.fd,
                    if p.revents & libc::POLLNVAL != 0 {
                        "POLLNVAL: not an open fd"
                    } else {
                        "an error or hang-up"
                    },
                    p.revents
                )));
            }
        }
        Ok(Some(ready))
    }
}

/// The eventfd as loom sees it: a counter under a mutex and a condvar.
#[cfg(loom)]
struct Signal {
    count: crate::sync::Mutex<u64>,
    cv: crate::sync::Condvar,
}

#[cfg(loom)]
impl Signal {
    fn new() -> io::Result<Signal> {
        Ok(Signal { count: crate::sync::Mutex::new(0), cv: crate::sync::Condvar::new() })
    }

    fn fd(&self) -> Option<RawFd> {
        None
    }

    fn raise(&self) {
        *self.count.lock().unwrap() += 1;
        self.cv.notify_all();
    }

    fn wait(&self, extra: &[RawFd], deadline: Option<Instant>) -> io::Result<Option<Ready>> {
        assert!(extra.is_empty(), "the loom model of the notifier polls no fds");
        let mut count = self.count.lock().unwrap();
        if *count == 0 {
            if deadline.is_some() {
                return Ok(None);
            }
            count = self.cv.wait(count).unwrap();
        }
        if *count == 0 {
            // woken without a token (a spurious wake-up): the caller re-checks and sleeps again
            return Ok(Some(Ready(0)));
        }
        *count = 0;
        Ok(Some(Ready(1)))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    const LONG: Duration = Duration::from_secs(20);

    use crate::evd::test_pipe as pipe;

    #[test]
    fn notify_without_sleeper_leaves_nothing_behind() {
        let n = Notifier::new().unwrap();
        n.notify();
        let t = n.announce();
        assert_eq!(n.sleepers(), 1);
        // nothing was written: the sleep runs into its deadline
        assert_eq!(t.sleep(&[], Some(Instant::now())).unwrap(), Woken::Timeout);
        drop(t);
        assert_eq!(n.sleepers(), 0);
    }

    #[test]
    fn notify_after_announce_wakes_even_before_the_sleep() {
        let n = Notifier::new().unwrap();
        let t = n.announce();
        n.notify();
        match t.sleep(&[], Some(Instant::now() + LONG)).unwrap() {
            Woken::Ready(r) => assert!(r.notified() && r.fds().next().is_none()),
            w => panic!("{w:?}"),
        }
        // the token was drained
        assert_eq!(t.sleep(&[], Some(Instant::now())).unwrap(), Woken::Timeout);
    }

    #[test]
    fn wakes_from_another_thread() {
        let n = Arc::new(Notifier::new().unwrap());
        let t = n.announce();
        let n2 = n.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            n2.notify();
        });
        assert!(
            matches!(t.sleep(&[], Some(Instant::now() + LONG)).unwrap(), Woken::Ready(r) if r.notified())
        );
        h.join().unwrap();
    }

    #[test]
    fn extra_fd_readiness_is_reported_by_index() {
        let n = Notifier::new().unwrap();
        let (r0, _w0) = pipe();
        let (r1, w1) = pipe();
        use std::io::Write;
        use std::os::fd::AsRawFd;
        std::fs::File::from(w1.try_clone().unwrap()).write_all(b"x").unwrap();
        let t = n.announce();
        match t.sleep(&[r0.as_raw_fd(), r1.as_raw_fd()], Some(Instant::now() + LONG)).unwrap() {
            Woken::Ready(r) => {
                assert!(!r.notified());
                assert_eq!(r.fds().collect::<Vec<_>>(), vec![1]);
            }
            w => panic!("{w:?}"),
        }
        drop(w1);
    }

    #[test]
    fn wake_all_kicks_current_sleepers_with_its_reason() {
        let n = Arc::new(Notifier::new().unwrap());
        let t = n.announce();
        let n2 = n.clone();
        let h = std::thread::spawn(move || n2.wake_all(WakeReason::Unwaitable));
        assert_eq!(t.sleep(&[], None).unwrap(), Woken::Kicked(WakeReason::Unwaitable));
        h.join().unwrap();
        assert_eq!(n.last_wake(), (1, Some(WakeReason::Unwaitable)));
        drop(t);
        // a ticket announced afterwards is not kicked by the old wake_all
        let t = n.announce();
        assert_eq!(t.kicked(), None);
        n.wake_all(WakeReason::Abort);
        assert_eq!(t.sleep(&[], None).unwrap(), Woken::Kicked(WakeReason::Abort));
    }

    #[test]
    fn timeout_with_nothing_pending() {
        let n = Notifier::new().unwrap();
        let (r, _w) = pipe();
        use std::os::fd::AsRawFd;
        let t = n.announce();
        let deadline = Instant::now() + Duration::from_millis(3);
        assert_eq!(t.sleep(&[r.as_raw_fd()], Some(deadline)).unwrap(), Woken::Timeout);
        assert!(Instant::now() >= deadline);
    }

    #[test]
    fn sleep_on_all_polls_more_fds_than_the_mask_names() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let n = Notifier::new().unwrap();
        let pipes: Vec<_> = (0..Ready::MAX_EXTRA_FDS + 2).map(|_| pipe()).collect();
        let fds: Vec<RawFd> = pipes.iter().map(|(r, _)| r.as_raw_fd()).collect();
        let t = n.announce();
        assert_eq!(t.sleep_on_all(&fds, Some(Instant::now())).unwrap(), Woken::Timeout);
        // the last fd, past the mask: woken, nothing named
        let (_, w) = pipes.last().unwrap();
        std::fs::File::from(w.try_clone().unwrap()).write_all(b"x").unwrap();
        match t.sleep_on_all(&fds, Some(Instant::now() + LONG)).unwrap() {
            Woken::Ready(r) => assert!(!r.notified() && r.fds().next().is_none(), "{r:?}"),
            w => panic!("{w:?}"),
        }
        // one within the mask is named
        std::fs::File::from(pipes[3].1.try_clone().unwrap()).write_all(b"x").unwrap();
        match t.sleep_on_all(&fds, Some(Instant::now() + LONG)).unwrap() {
            Woken::Ready(r) => assert_eq!(r.fds().collect::<Vec<_>>(), vec![3]),
            w => panic!("{w:?}"),
        }
    }

    #[test]
    fn bad_fds_are_errors_not_hangs() {
        let n = Notifier::new().unwrap();
        let t = n.announce();
        let too_many = vec![0; Ready::MAX_EXTRA_FDS + 1];
        assert_eq!(t.sleep(&too_many, None).unwrap_err().kind(), io::ErrorKind::InvalidInput);
        // a closed pipe's read end with no writer: POLLHUP without POLLIN
        let (r, w) = pipe();
        drop(w);
        use std::os::fd::AsRawFd;
        assert!(t.sleep(&[r.as_raw_fd()], Some(Instant::now() + LONG)).is_err());
    }
}
