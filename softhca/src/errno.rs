//! The errno values softhca answers with, as the kernel would.

use std::fmt;

/// A Linux errno, returned where the kernel's uverbs `write()` or `mmap()` would fail.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// Bad header, size, attribute or argument.
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    /// A user pointer that cannot be read or written.
    pub const EFAULT: Errno = Errno(libc::EFAULT);
    /// Out of objects or memory.
    pub const ENOMEM: Errno = Errno(libc::ENOMEM);
    /// The object is still in use by another object.
    pub const EBUSY: Errno = Errno(libc::EBUSY);
    /// The file was opened by another process (a forked child's copy of its parent's):
    /// as the kernel answers a write from other credentials than the opener's.
    pub const EACCES: Errno = Errno(libc::EACCES);
    /// Unknown command.
    pub const ENOSYS: Errno = Errno(libc::ENOSYS);
    /// Response buffer too small.
    pub const ENOSPC: Errno = Errno(libc::ENOSPC);
    /// Operation not supported.
    pub const EOPNOTSUPP: Errno = Errno(libc::EOPNOTSUPP);
    /// Not permitted.
    pub const EPERM: Errno = Errno(libc::EPERM);
    /// Handle names no object of that type.
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    /// The device failed (DEVICE_FATAL was reported): its firmware makes, changes and
    /// queries no more objects (mlx5's internal-error state; EIO before Linux 5.18).
    pub const ENOLINK: Errno = Errno(libc::ENOLINK);
    /// Try again later; GET_CONTEXT on a device that is not active.
    pub const EAGAIN: Errno = Errno(libc::EAGAIN);

    /// The symbolic name, e.g. `"EINVAL"`.
    pub fn name(self) -> &'static str {
        match self.0 {
            libc::EINVAL => "EINVAL",
            libc::EFAULT => "EFAULT",
            libc::ENOMEM => "ENOMEM",
            libc::EBUSY => "EBUSY",
            libc::ENOSYS => "ENOSYS",
            libc::ENOSPC => "ENOSPC",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            libc::EPERM => "EPERM",
            libc::ENOENT => "ENOENT",
            libc::EAGAIN => "EAGAIN",
            libc::EEXIST => "EEXIST",
            libc::EMFILE => "EMFILE",
            libc::ENOLINK => "ENOLINK",
            _ => "E?",
        }
    }

    /// The errno of the last failed libc call on this thread.
    pub fn last() -> Errno {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), std::io::Error::from_raw_os_error(self.0))
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Errno {}

impl From<Errno> for std::io::Error {
    fn from(e: Errno) -> Self {
        std::io::Error::from_raw_os_error(e.0)
    }
}
