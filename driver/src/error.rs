//! The driver's one error type: what failed, why, and what to do about it.

use std::borrow::Cow;
use std::fmt;

/// Why an operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The kernel (or softhca, which answers like it) returned this errno.
    Errno(i32),
    /// The driver refused the request before it reached the device (bad argument, bad
    /// response, no device, ...). The text says what is wrong.
    Invalid(String),
}

/// A failed driver operation: the verb or command (`"CREATE_QP"`, `"open"`, `"REG_MR"`),
/// the cause (an errno with its name, or a driver-side reason), an optional detail and a
/// hint that says what to do. [`Display`](fmt::Display) prints all of it on one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    op: Cow<'static, str>,
    cause: Cause,
    detail: Option<String>,
    hint: Option<String>,
}

/// The driver's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// `op` failed with `errno`; the hint is derived from the pair ([`hint_for`]).
    pub fn errno(op: impl Into<Cow<'static, str>>, errno: i32) -> Error {
        let op = op.into();
        let hint = hint_for(&op, errno);
        Error { op, cause: Cause::Errno(errno), detail: None, hint }
    }

    /// `op` was refused by the driver for `reason`.
    pub fn invalid(op: impl Into<Cow<'static, str>>, reason: impl Into<String>) -> Error {
        Error { op: op.into(), cause: Cause::Invalid(reason.into()), detail: None, hint: None }
    }

    /// `op` failed with the errno of the last failed libc call on this thread.
    pub fn last_os_error(op: impl Into<Cow<'static, str>>) -> Error {
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
        Error::errno(op, e)
    }

    /// Adds a detail (what object, which value).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Error {
        self.detail = Some(detail.into());
        self
    }

    /// Replaces the hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Error {
        self.hint = Some(hint.into());
        self
    }

    /// The verb or command that failed, e.g. `"CREATE_QP"`.
    pub fn op(&self) -> &str {
        &self.op
    }

    /// The cause.
    pub fn cause(&self) -> &Cause {
        &self.cause
    }

    /// The errno, if the kernel/device answered with one.
    pub fn errno_value(&self) -> Option<i32> {
        match self.cause {
            Cause::Errno(e) => Some(e),
            Cause::Invalid(_) => None,
        }
    }

    /// The errno's symbolic name (`"EINVAL"`), if there is an errno.
    pub fn errno_name(&self) -> Option<&'static str> {
        self.errno_value().map(errno_name)
    }

    /// The detail, if any.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// What to do about it, if the driver knows.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: ", self.op)?;
        match &self.cause {
            Cause::Errno(e) => {
                write!(f, "{} ({})", errno_name(*e), std::io::Error::from_raw_os_error(*e))?
            }
            Cause::Invalid(reason) => f.write_str(reason)?,
        }
        if let Some(d) = &self.detail {
            write!(f, " [{d}]")?;
        }
        if let Some(h) = &self.hint {
            write!(f, "; hint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        match e.errno_value() {
            Some(n) => std::io::Error::new(std::io::Error::from_raw_os_error(n).kind(), e),
            None => std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
        }
    }
}

/// The symbolic name of an errno (`"E?"` for one this table lacks).
pub fn errno_name(e: i32) -> &'static str {
    match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOTTY => "ENOTTY",
        libc::ENOSPC => "ENOSPC",
        libc::ERANGE => "ERANGE",
        libc::ENOSYS => "ENOSYS",
        libc::ENODATA => "ENODATA",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EOVERFLOW => "EOVERFLOW",
        _ => "E?",
    }
}

/// The current RLIMIT_MEMLOCK soft limit in bytes (`None`: unlimited or unknown).
pub fn memlock_limit() -> Option<u64> {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into `r`, which is ours.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) };
    if rc != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    Some(r.rlim_cur)
}

/// The hint for `errno` from `op`: RLIMIT_MEMLOCK for pinning failures, permissions for
/// opening the device, the QP transition rules for MODIFY_QP, and so on.
pub fn hint_for(op: &str, errno: i32) -> Option<String> {
    let pins = matches!(op, "REG_MR" | "CREATE_CQ" | "CREATE_QP" | "CREATE_SRQ" | "RESIZE_CQ");
    let hint = match errno {
        // ib_umem_get: ENOMEM when the pin would pass RLIMIT_MEMLOCK; EFAULT when pinning
        // fails (unmapped memory, or read-only memory pinned for writing), whatever the limit.
        libc::EFAULT if pins => "the buffer is not mapped with the access the device needs \
                                 (writable for LOCAL_WRITE and remote write/atomic; lend memory \
                                 that stays mapped while registered)"
            .to_string(),
        libc::ENOMEM if pins => match memlock_limit() {
            Some(l) => format!(
                "RLIMIT_MEMLOCK is {}: raise it with `ulimit -l unlimited` (or memlock in \
                 /etc/security/limits.conf); the device pins the memory it is lent",
                human_bytes(l)
            ),
            None => "the device is out of memory or resources; free objects or use smaller queues"
                .to_string(),
        },
        libc::EACCES | libc::EPERM if op == "open" => {
            "check the permissions of /dev/infiniband/uverbsN (usually group rdma, or a udev \
             rule giving mode 0666); or use softhca (FERRODAT_SOFTHCA)"
                .to_string()
        }
        libc::ENOENT | libc::ENODEV | libc::ENXIO if op == "open" => {
            "the uverbs char device is missing: load mlx5_ib (modprobe mlx5_ib) or use softhca"
                .to_string()
        }
        libc::EINVAL if op == "MODIFY_QP" => {
            "the transition or its attribute mask is not allowed: RC goes RESET→INIT→RTR→RTS, \
             each step with the attributes the kernel requires (see QpAttr)"
                .to_string()
        }
        libc::EINVAL => {
            "an argument is outside what the device supports (see Context::query_device and the \
             GET_CONTEXT limits)"
                .to_string()
        }
        libc::ENOMEM => "the device or the kernel is out of resources; free objects".to_string(),
        libc::EBUSY => "the object is still used by another one; destroy that first".to_string(),
        libc::ENOSYS | libc::EOPNOTSUPP | libc::ENOTTY => {
            "the kernel or device does not support this command".to_string()
        }
        libc::EMFILE | libc::ENFILE => "out of file descriptors: raise `ulimit -n`".to_string(),
        libc::ENOENT | libc::EBADF => {
            "the object handle is unknown to the device (already destroyed?)".to_string()
        }
        libc::ENOSPC => "response buffer too small: a driver/kernel ABI mismatch".to_string(),
        _ => return None,
    };
    Some(hint)
}

fn human_bytes(b: u64) -> String {
    if b >= 1 << 30 && b.is_multiple_of(1 << 30) {
        format!("{} GiB", b >> 30)
    } else if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_has_op_errno_and_hint_on_one_line() {
        let e = Error::errno("MODIFY_QP", libc::EINVAL).with_detail("qpn 0x100 RESET→RTS");
        let s = e.to_string();
        assert!(s.starts_with("MODIFY_QP failed: EINVAL"), "{s}");
        assert!(s.contains("qpn 0x100") && s.contains("hint:") && !s.contains('\n'), "{s}");
        assert_eq!(e.errno_name(), Some("EINVAL"));
    }

    #[test]
    fn sizes_are_human() {
        assert_eq!(human_bytes(64 * 1024), "64 KiB");
        assert_eq!(human_bytes(8 << 20), "8 MiB");
        assert_eq!(human_bytes(100), "100 bytes");
    }
}
