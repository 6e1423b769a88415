//! An eventfd used as a wake-up: one thread raises it, another sleeps in `poll(2)` on it
//! (the EVD notifier, the CM thread, the device-event thread).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A non-blocking, close-on-exec eventfd.
#[derive(Debug)]
pub(crate) struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// A new eventfd, counter 0. Fails only when the process is out of file descriptors.
    pub(crate) fn new() -> io::Result<EventFd> {
        // SAFETY: plain syscall, no pointers.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: eventfd just returned this fd; nothing else owns it.
        Ok(EventFd { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// Adds 1 to the counter. It can only fail with EAGAIN (counter at its maximum, i.e.
    /// already readable), which is as good as success.
    pub(crate) fn raise(&self) {
        let one: u64 = 1;
        loop {
            // SAFETY: writes 8 bytes from a live u64 to our eventfd.
            let n = unsafe { libc::write(self.as_raw_fd(), (&raw const one).cast(), 8) };
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return;
        }
    }

    /// Empties the counter (it does not block: the fd is non-blocking).
    pub(crate) fn drain(&self) {
        let mut v: u64 = 0;
        loop {
            // SAFETY: reads 8 bytes into a live u64 from our eventfd.
            let n = unsafe { libc::read(self.as_raw_fd(), (&raw mut v).cast(), 8) };
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return;
        }
    }
}

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(fd: RawFd) -> bool {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one live pollfd.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }

    #[test]
    fn raised_it_is_readable_until_drained() {
        let e = EventFd::new().unwrap();
        assert!(!readable(e.as_raw_fd()));
        e.raise();
        e.raise();
        assert!(readable(e.as_raw_fd()));
        e.drain();
        assert!(!readable(e.as_raw_fd()), "one drain empties the counter");
        e.drain(); // on an empty counter: returns (EAGAIN), does not block
    }
}
