//! `libsofthca_preload.so`: softhca as `/dev/infiniband/uverbsN` for unmodified verbs
//! programs (Debian's rdma-core: libibverbs 44 and its mlx5 provider).
//!
//! ```text
//! SYSFS_PATH=<tree written by ferrodat_softhca::sysfs::write_tree> \
//! LD_PRELOAD=target/debug/libsofthca_preload.so ibv_devinfo -v
//! ```
//!
//! libibverbs finds devices through sysfs (`SYSFS_PATH`) once its netlink socket fails, then
//! stats and opens `/dev/infiniband/uverbsN` and speaks the uverbs write() protocol to it
//! (`reference/mlx5-uverbs.md` §1, §2, §6). This library interposes exactly those calls:
//!
//! - `stat`/`stat64`/`lstat`/`__xstat`… of `/dev/infiniband/uverbsN` answer for `/dev/null`
//!   (a char device; the tree's `dev` file is `0:0`, so libibverbs checks no dev_t);
//! - `open`/`open64`/`openat`/`openat64` of that path open `/dev/null` for real and tie the fd
//!   to a [`Uverbs`] of configured device N (`FERRODAT_SOFTHCA`, in order). `fstat` on the
//!   fd therefore already reports a char device and is not interposed;
//! - `write` on the fd runs [`Uverbs::write`]; `ioctl(fd, RDMA_VERBS_IOCTL)` is ENOTTY, so
//!   libibverbs uses write() for everything; `mmap` on the fd maps a UAR page
//!   ([`Uverbs::mmap`], an ordinary mapping the program may `munmap`); `close` drops it
//!   (its objects go with the file's last fd; a forked child's close leaves the parent's
//!   alone), and so do `close_range` and `dup2`/`dup3` onto it; `dup`/`dup2`/`dup3` of it
//!   make another fd of the same file (not `fcntl(F_DUPFD)`, nor glibc's internal closes);
//! - `socket(AF_NETLINK, _, NETLINK_RDMA)` fails with EPROTONOSUPPORT, as on a kernel
//!   without ib_core, so libibverbs reads sysfs.
//!
//! What softhca does not model (UC, UD, XRC and DC QPs, flow steering, …; librdmacm's
//! `/dev/infiniband/rdma_cm`) still fails as it did, and the library says on stderr, once,
//! what was refused and why (`refusals`): the programs print only "Couldn't create QP".
//!
//! rdma-core never calls softhca's model entry points, so every opened device runs its
//! progress thread in the mode that watches doorbell records and UAR pages itself
//! ([`Engine::start_progress_thread_watching_doorbells`]).
//!
//! Every call for anything else goes to the next definition (`dlsym(RTLD_NEXT, …)`), and
//! no panic crosses the C boundary: a failure becomes -1 with errno set.
//!
//! [`Engine::start_progress_thread_watching_doorbells`]:
//!     ferrodat_softhca::hca::engine::Engine::start_progress_thread_watching_doorbells

mod refusals;

use ferrodat_softhca::{Device, Errno, Uverbs, config};
use libc::{c_char, c_int, c_ulong, c_void, mode_t, off_t, size_t, ssize_t};
use std::collections::HashMap;
use std::ffi::CStr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// `RDMA_VERBS_IOCTL`: `_IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr)`.
const RDMA_VERBS_IOCTL: c_ulong = 0xc018_1b01;
/// `NETLINK_RDMA`.
const NETLINK_RDMA: c_int = 20;
/// Where libibverbs looks for the char devices (hard-coded, not under SYSFS_PATH).
const DEV_PREFIX: &[u8] = b"/dev/infiniband/uverbs";

/// An open uverbs file: its device, and the process that opened it.
struct File {
    uverbs: Arc<Uverbs>,
    /// A child that inherited the fd across fork(2) shares the file, as with the kernel's
    /// device file: its close must not tear the parent's objects down.
    owner: libc::pid_t,
}

/// Open uverbs files by fd.
fn files() -> &'static Mutex<HashMap<c_int, File>> {
    static FILES: OnceLock<Mutex<HashMap<c_int, File>>> = OnceLock::new();
    FILES.get_or_init(Default::default)
}

/// How many fds are in [`files`]: while 0, `write`/`mmap`/`close` skip the lock.
static OPEN_FILES: AtomicUsize = AtomicUsize::new(0);

/// Fds below this are also in [`FD_BITS`].
const FD_BITS_LEN: usize = 4096;

/// One bit per fd below [`FD_BITS_LEN`]: set while the fd is in [`files`]. Calls on other
/// fds (the common case once a device is open) answer without the lock, so a write(2) from
/// a signal handler cannot wait for a lock its own thread holds.
static FD_BITS: [AtomicU64; FD_BITS_LEN / 64] = [const { AtomicU64::new(0) }; FD_BITS_LEN / 64];

fn mark_fd(fd: c_int, open: bool) {
    if let Ok(i) = usize::try_from(fd)
        && i < FD_BITS_LEN
    {
        let bit = 1u64 << (i % 64);
        if open {
            FD_BITS[i / 64].fetch_or(bit, Ordering::AcqRel);
        } else {
            FD_BITS[i / 64].fetch_and(!bit, Ordering::AcqRel);
        }
    }
}

/// Whether `fd` may be in [`files`] (false means surely not).
fn maybe_ours(fd: c_int) -> bool {
    if fd < 0 || OPEN_FILES.load(Ordering::Acquire) == 0 {
        return false;
    }
    match usize::try_from(fd) {
        Ok(i) if i < FD_BITS_LEN => FD_BITS[i / 64].load(Ordering::Acquire) & (1 << (i % 64)) != 0,
        _ => true,
    }
}

fn file_of(fd: c_int) -> Option<Arc<Uverbs>> {
    if !maybe_ours(fd) {
        return None;
    }
    files().lock().unwrap_or_else(|e| e.into_inner()).get(&fd).map(|f| f.uverbs.clone())
}

fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns this thread's errno, always valid to write.
    unsafe { *libc::__errno_location() = e };
}

/// Runs `f`, turning a panic into `fail` with errno EIO (never unwinds into C).
fn guarded<T>(fail: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        set_errno(libc::EIO);
        fail
    })
}

/// The next definition of `name` (a NUL-terminated symbol name), looked up once.
macro_rules! real {
    ($name:literal as $ty:ty) => {{
        static PTR: OnceLock<usize> = OnceLock::new();
        let p = *PTR.get_or_init(|| {
            // SAFETY: the name is a NUL-terminated literal; dlsym has no other precondition.
            unsafe { libc::dlsym(libc::RTLD_NEXT, concat!($name, "\0").as_ptr().cast()) as usize }
        });
        if p == 0 {
            None
        } else {
            // SAFETY: `p` is the address of the C function `$name`, whose C signature `$ty`
            // transcribes.
            Some(unsafe { std::mem::transmute::<usize, $ty>(p) })
        }
    }};
}

/// Device index N if `path` is `/dev/infiniband/uverbsN` and N is configured.
///
/// # Safety
/// `path` is null or a NUL-terminated string.
unsafe fn uverbs_index(path: *const c_char) -> Option<usize> {
    if path.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated (the caller's contract, as for open(2)).
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    let digits = bytes.strip_prefix(DEV_PREFIX)?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: usize = std::str::from_utf8(digits).ok()?.parse().ok()?;
    let count = match config::devices() {
        Ok(devices) => devices.len(),
        Err(e) => {
            // Said once: without it a malformed list reads as "No IB devices found".
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| eprintln!("softhca-preload: {e}; no softhca device is served"));
            0
        }
    };
    (n < count).then_some(n)
}

const DEV_NULL: &CStr = c"/dev/null";

/// Opens configured device `index`: a real fd of `/dev/null` tied to a new [`Uverbs`].
fn open_uverbs(index: usize, flags: c_int) -> c_int {
    let Some(real_open) = real!("open" as unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int)
    else {
        set_errno(libc::ENOSYS);
        return -1;
    };
    let cfg = match config::devices() {
        Ok(list) => list.into_iter().nth(index),
        Err(e) => {
            eprintln!("softhca-preload: {e}");
            None
        }
    };
    let Some(cfg) = cfg else {
        set_errno(libc::ENODEV);
        return -1;
    };
    let device = match Device::open(&cfg.name) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("softhca-preload: cannot open {}: {e}", cfg.name);
            set_errno(libc::ENODEV);
            return -1;
        }
    };
    if let Err(e) = device.engine().start_progress_thread_watching_doorbells() {
        eprintln!("softhca-preload: cannot start the progress thread of {}: {e}", cfg.name);
        set_errno(libc::ENOMEM);
        return -1;
    }
    let Ok(uverbs) = Uverbs::open(device) else {
        set_errno(libc::ENODEV);
        return -1;
    };
    let keep = flags & libc::O_CLOEXEC;
    // SAFETY: DEV_NULL is NUL-terminated; plain open(2) of /dev/null.
    let fd = unsafe { real_open(DEV_NULL.as_ptr(), libc::O_RDWR | keep) };
    if fd < 0 {
        return fd;
    }
    // SAFETY: getpid has no preconditions.
    let owner = unsafe { libc::getpid() };
    files()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(fd, File { uverbs: Arc::new(uverbs), owner });
    mark_fd(fd, true);
    OPEN_FILES.fetch_add(1, Ordering::AcqRel);
    fd
}

// ============================================================== open

/// `open(2)`. The mode is read as the third argument: variadic and fixed integer arguments
/// are passed alike on the Linux ABIs this builds for.
///
/// # Safety
/// As open(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { open_common("open", path, flags, mode) }
}

/// `open64(2)`, as [`open`].
///
/// # Safety
/// As open(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { open_common("open64", path, flags, mode) }
}

/// # Safety
/// As open(2).
unsafe fn open_common(which: &str, path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    // SAFETY: path is the caller's NUL-terminated string.
    if let Some(n) = guarded(None, || unsafe { uverbs_index(path) }) {
        return guarded(-1, || open_uverbs(n, flags));
    }
    let real = if which == "open" {
        real!("open" as unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int)
    } else {
        real!("open64" as unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int)
    };
    match real {
        // SAFETY: the real open with the caller's arguments.
        Some(f) => unsafe { after_open(path, f(path, flags, mode)) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// `openat(2)`; only absolute paths can name the device.
///
/// # Safety
/// As openat(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: mode_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { openat_common("openat", dirfd, path, flags, mode) }
}

/// `openat64(2)`, as [`openat`].
///
/// # Safety
/// As openat(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn openat64(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: mode_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { openat_common("openat64", dirfd, path, flags, mode) }
}

/// # Safety
/// As openat(2).
unsafe fn openat_common(
    which: &str,
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: mode_t,
) -> c_int {
    // SAFETY: path is the caller's NUL-terminated string.
    if let Some(n) = guarded(None, || unsafe { uverbs_index(path) }) {
        return guarded(-1, || open_uverbs(n, flags));
    }
    type OpenAt = unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int;
    let real =
        if which == "openat" { real!("openat" as OpenAt) } else { real!("openat64" as OpenAt) };
    match real {
        // SAFETY: the real openat with the caller's arguments.
        Some(f) => unsafe { after_open(path, f(dirfd, path, flags, mode)) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// `fd`, what the real open of `path` returned; a missing librdmacm device file is said
/// once ([`refusals::rdma_cm_missing`]), errno kept.
///
/// # Safety
/// `path` is null or NUL-terminated.
unsafe fn after_open(path: *const c_char, fd: c_int) -> c_int {
    if fd < 0 && !path.is_null() {
        // SAFETY: non-null and NUL-terminated (the caller's contract).
        let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
        if bytes == refusals::RDMA_CM {
            // SAFETY: __errno_location returns this thread's errno, always valid to read.
            let errno = unsafe { *libc::__errno_location() };
            guarded((), refusals::rdma_cm_missing);
            set_errno(errno);
        }
    }
    fd
}

// ============================================================== stat

/// The path to stat instead of `path`: `/dev/null` for a configured uverbs device.
///
/// # Safety
/// `path` is null or NUL-terminated.
unsafe fn stat_path(path: *const c_char) -> *const c_char {
    // SAFETY: forwarded contract.
    match guarded(None, || unsafe { uverbs_index(path) }) {
        Some(_) => DEV_NULL.as_ptr(),
        None => path,
    }
}

macro_rules! stat_hook {
    ($name:ident, $sym:literal) => {
        /// Stats `/dev/null` for a configured `/dev/infiniband/uverbsN`, else the real one.
        ///
        /// # Safety
        /// As stat(2).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(path: *const c_char, buf: *mut c_void) -> c_int {
            // SAFETY: the caller's NUL-terminated path.
            let path = unsafe { stat_path(path) };
            match real!($sym as unsafe extern "C" fn(*const c_char, *mut c_void) -> c_int) {
                // SAFETY: the real function with the caller's buffer.
                Some(f) => unsafe { f(path, buf) },
                None => {
                    set_errno(libc::ENOSYS);
                    -1
                }
            }
        }
    };
}

stat_hook!(stat, "stat");
stat_hook!(stat64, "stat64");
stat_hook!(lstat, "lstat");
stat_hook!(lstat64, "lstat64");

macro_rules! xstat_hook {
    ($name:ident, $sym:literal) => {
        /// glibc's versioned stat (`__xstat(ver, path, buf)`), as [`stat`].
        ///
        /// # Safety
        /// As stat(2).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(ver: c_int, path: *const c_char, buf: *mut c_void) -> c_int {
            // SAFETY: the caller's NUL-terminated path.
            let path = unsafe { stat_path(path) };
            type X = unsafe extern "C" fn(c_int, *const c_char, *mut c_void) -> c_int;
            match real!($sym as X) {
                // SAFETY: the real function with the caller's buffer.
                Some(f) => unsafe { f(ver, path, buf) },
                None => {
                    set_errno(libc::ENOSYS);
                    -1
                }
            }
        }
    };
}

xstat_hook!(__xstat, "__xstat");
xstat_hook!(__xstat64, "__xstat64");
xstat_hook!(__lxstat, "__lxstat");
xstat_hook!(__lxstat64, "__lxstat64");

// ============================================================== the device fd

/// `write(2)`: a uverbs command on a device fd.
///
/// # Safety
/// As write(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, count: size_t) -> ssize_t {
    if let Some(file) = file_of(fd) {
        return guarded(-1, || {
            if buf.is_null() && count > 0 {
                set_errno(libc::EFAULT);
                return -1;
            }
            let bytes = if count == 0 {
                &[][..]
            } else {
                // SAFETY: write(2)'s contract: `count` readable bytes at `buf`.
                unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), count) }
            };
            match file.write(bytes) {
                Ok(n) => n as ssize_t,
                Err(Errno(e)) => {
                    refusals::command_failed(bytes, e);
                    set_errno(e);
                    -1
                }
            }
        });
    }
    match real!("write" as unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t) {
        // SAFETY: the real write with the caller's arguments.
        Some(f) => unsafe { f(fd, buf, count) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// `ioctl(2)`: on a device fd every request is ENOTTY (`RDMA_VERBS_IOCTL` included), so
/// libibverbs falls back to write(). The argument is read as one pointer-sized value.
///
/// # Safety
/// As ioctl(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    if file_of(fd).is_some() {
        let _ = request == RDMA_VERBS_IOCTL; // the one libibverbs sends; all alike here
        set_errno(libc::ENOTTY);
        return -1;
    }
    match real!("ioctl" as unsafe extern "C" fn(c_int, c_ulong, ...) -> c_int) {
        // SAFETY: the real ioctl with the caller's arguments.
        Some(f) => unsafe { f(fd, request, arg) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// `mmap(2)`: on a device fd, a UAR page (offset = page offset × page size).
///
/// # Safety
/// As mmap(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    if let Some(file) = file_of(fd) {
        return guarded(libc::MAP_FAILED, || {
            let page = page_size();
            if offset < 0 || !(offset as u64).is_multiple_of(page) {
                set_errno(libc::EINVAL);
                return libc::MAP_FAILED;
            }
            match file.mmap(offset as u64 / page, len) {
                Ok(p) => p.as_ptr().cast(),
                Err(Errno(e)) => {
                    set_errno(e);
                    libc::MAP_FAILED
                }
            }
        });
    }
    type Mmap =
        unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void;
    match real!("mmap" as Mmap) {
        // SAFETY: the real mmap with the caller's arguments.
        Some(f) => unsafe { f(addr, len, prot, flags, fd, offset) },
        None => {
            set_errno(libc::ENOSYS);
            libc::MAP_FAILED
        }
    }
}

/// `mmap64`, as [`mmap`] (off_t is 64-bit here).
///
/// # Safety
/// As mmap(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { mmap(addr, len, prot, flags, fd, offset) }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u64 } else { 4096 }
}

/// Takes `fd` out of [`files`], as its close does: the file's objects go with its last
/// fd (as the kernel releases a file when its last reference goes), unless another process
/// opened it (a forked child's copy: the objects are the parent's, and the child has none
/// of the device's threads to stop).
fn forget_fd(fd: c_int) {
    if !maybe_ours(fd) {
        return;
    }
    let removed = guarded(None, || files().lock().unwrap_or_else(|e| e.into_inner()).remove(&fd));
    if let Some(file) = removed {
        mark_fd(fd, false);
        OPEN_FILES.fetch_sub(1, Ordering::AcqRel);
        // SAFETY: getpid has no preconditions.
        if file.owner == unsafe { libc::getpid() } {
            guarded((), || drop(file));
        } else {
            std::mem::forget(file);
        }
    }
}

/// `new`, a duplicate of `old` (dup, dup2, dup3), is the same device file when `old` is.
fn share_fd(old: c_int, new: c_int) {
    if new < 0 || !maybe_ours(old) {
        return;
    }
    guarded((), || {
        let mut files = files().lock().unwrap_or_else(|e| e.into_inner());
        let Some(f) = files.get(&old) else { return };
        let copy = File { uverbs: f.uverbs.clone(), owner: f.owner };
        if files.insert(new, copy).is_none() {
            mark_fd(new, true);
            OPEN_FILES.fetch_add(1, Ordering::AcqRel);
        }
    });
}

/// `close(2)`: a device fd drops its file (destroying its objects with its last fd, as the
/// kernel's release does) before the fd itself closes.
///
/// # Safety
/// As close(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    forget_fd(fd);
    match real!("close" as unsafe extern "C" fn(c_int) -> c_int) {
        // SAFETY: the real close.
        Some(f) => unsafe { f(fd) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// `close_range(2)`: the device fds in the range close as with [`close`] (unless the call
/// only marks them close-on-exec).
///
/// # Safety
/// As close_range(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close_range(
    first: libc::c_uint,
    last: libc::c_uint,
    flags: c_int,
) -> c_int {
    if flags & (libc::CLOSE_RANGE_CLOEXEC as c_int) == 0 && OPEN_FILES.load(Ordering::Acquire) > 0 {
        let ours: Vec<c_int> = guarded(Vec::new(), || {
            let files = files().lock().unwrap_or_else(|e| e.into_inner());
            files
                .keys()
                .copied()
                .filter(|&fd| fd >= 0 && (first..=last).contains(&(fd as libc::c_uint)))
                .collect()
        });
        for fd in ours {
            forget_fd(fd);
        }
    }
    match real!("close_range" as unsafe extern "C" fn(libc::c_uint, libc::c_uint, c_int) -> c_int) {
        // SAFETY: the real close_range.
        Some(f) => unsafe { f(first, last, flags) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// `dup(2)`: a duplicate of a device fd is the same device file.
///
/// # Safety
/// As dup(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup(old: c_int) -> c_int {
    let new = match real!("dup" as unsafe extern "C" fn(c_int) -> c_int) {
        // SAFETY: the real dup.
        Some(f) => unsafe { f(old) },
        None => {
            set_errno(libc::ENOSYS);
            return -1;
        }
    };
    share_fd(old, new);
    new
}

/// `dup2(2)`: `new` closes first (a device fd as with [`close`]), then is `old`'s file.
///
/// # Safety
/// As dup2(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    let Some(real) = real!("dup2" as unsafe extern "C" fn(c_int, c_int) -> c_int) else {
        set_errno(libc::ENOSYS);
        return -1;
    };
    // SAFETY: fcntl(F_GETFD) has no memory preconditions; it checks that `old` is open.
    if old != new && unsafe { libc::fcntl(old, libc::F_GETFD) } >= 0 {
        forget_fd(new);
    }
    // SAFETY: the real dup2.
    let r = unsafe { real(old, new) };
    if r >= 0 && old != new {
        share_fd(old, r);
    }
    r
}

/// `dup3(2)`, as [`dup2`].
///
/// # Safety
/// As dup3(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    let Some(real) = real!("dup3" as unsafe extern "C" fn(c_int, c_int, c_int) -> c_int) else {
        set_errno(libc::ENOSYS);
        return -1;
    };
    // SAFETY: as in dup2.
    if old != new && unsafe { libc::fcntl(old, libc::F_GETFD) } >= 0 {
        forget_fd(new);
    }
    // SAFETY: the real dup3.
    let r = unsafe { real(old, new, flags) };
    if r >= 0 {
        share_fd(old, r);
    }
    r
}

/// `socket(2)`: `NETLINK_RDMA` is EPROTONOSUPPORT (as without ib_core), so libibverbs
/// reads sysfs instead of asking the kernel's RDMA netlink.
///
/// # Safety
/// As socket(2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
    if domain == libc::AF_NETLINK && protocol == NETLINK_RDMA {
        set_errno(libc::EPROTONOSUPPORT);
        return -1;
    }
    match real!("socket" as unsafe extern "C" fn(c_int, c_int, c_int) -> c_int) {
        // SAFETY: the real socket.
        Some(f) => unsafe { f(domain, ty, protocol) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}
