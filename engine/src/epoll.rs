//! An epoll set: the file descriptor a `dat_cno_fd_create` CNO hands out. It is readable
//! (POLLIN) while any fd in it is; the consumer polls it, the CNO adds and removes the
//! fds (its trigger eventfd, its EVDs' completion channels).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A close-on-exec epoll instance, closed on drop.
#[derive(Debug)]
pub(crate) struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    /// A new, empty set. Fails when the process is out of file descriptors.
    pub(crate) fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall, no pointers.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: epoll_create1 just returned this fd; nothing else owns it.
        Ok(Epoll { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// Watches `fd` for POLLIN, level-triggered: the set is readable while `fd` is.
    /// The caller keeps `fd` open while it is in the set (a closed fd whose file is still
    /// open elsewhere would stay in it).
    pub(crate) fn add(&self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: fd as u64 };
        // SAFETY: `ev` is a live epoll_event; the kernel copies it.
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }

    /// Stops watching `fd` (ENOENT if it was not watched).
    pub(crate) fn remove(&self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: `ev` is a live epoll_event (ignored by DEL, required non-NULL by old
        // kernels).
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) };
        if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }
}

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::event_fd::EventFd;

    fn readable(fd: RawFd) -> bool {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one live pollfd.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }

    #[test]
    fn the_set_is_readable_while_a_member_is() {
        let set = Epoll::new().unwrap();
        let (a, b) = (EventFd::new().unwrap(), EventFd::new().unwrap());
        set.add(a.as_raw_fd()).unwrap();
        set.add(b.as_raw_fd()).unwrap();
        assert!(!readable(set.as_raw_fd()));
        b.raise();
        assert!(readable(set.as_raw_fd()));
        assert!(readable(set.as_raw_fd()), "level-triggered: still readable");
        b.drain();
        assert!(!readable(set.as_raw_fd()));
        set.remove(b.as_raw_fd()).unwrap();
        b.raise();
        assert!(!readable(set.as_raw_fd()), "a removed fd no longer counts");
        assert_eq!(set.remove(b.as_raw_fd()).unwrap_err().raw_os_error(), Some(libc::ENOENT));
        a.raise();
        assert!(readable(set.as_raw_fd()));
    }
}
