//! The uverbs channel: how command bytes reach the "kernel" and UAR pages get mapped.
//!
//! [`Channel::Kernel`] is an open `/dev/infiniband/uverbsN` (real `open`/`write`/`mmap`/
//! `close` syscalls through libc, so an LD_PRELOAD library can serve it);
//! [`Channel::Softhca`] hands the same bytes to an in-process softhca device. Dispatch is a
//! `match`, no trait object. The two model entry points ([`Channel::doorbell_rung`],
//! [`Channel::progress`]) are no-ops on the kernel channel, where the silicon does that work.

use crate::error::{Error, Result};
use ferrodat_softhca::Uverbs;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

/// The system page size.
pub fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no memory-safety preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if v > 0 { v as usize } else { 4096 }
    })
}

/// An open uverbs char device.
#[derive(Debug)]
pub struct KernelFile {
    fd: OwnedFd,
    path: PathBuf,
}

impl KernelFile {
    /// Opens `path` `O_RDWR | O_CLOEXEC` (RDWR because the UAR pages are mapped from it) and
    /// checks it is a char device with `dev` as its number (`(0, 0)` skips that check, as
    /// libibverbs does).
    pub fn open(path: &Path, dev: (u32, u32)) -> Result<KernelFile> {
        let what = || format!("{}", path.display());
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::invalid("open", "the path contains a NUL byte"))?;
        // SAFETY: `c` is a valid NUL-terminated path; open has no other preconditions.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(Error::last_os_error("open").with_detail(what()));
        }
        // SAFETY: `fd` was just returned by open and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is open; `st` is ours to write.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(Error::last_os_error("open").with_detail(what()));
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFCHR {
            return Err(Error::invalid("open", "not a character device").with_detail(what()));
        }
        let rdev = (libc::major(st.st_rdev), libc::minor(st.st_rdev));
        if dev != (0, 0) && rdev != dev {
            return Err(Error::invalid(
                "open",
                format!(
                    "device number {}:{} does not match sysfs {}:{}",
                    rdev.0, rdev.1, dev.0, dev.1
                ),
            )
            .with_detail(what())
            .with_hint("the /dev node belongs to another device: check udev's /dev/infiniband"));
        }
        Ok(KernelFile { fd, path: path.to_path_buf() })
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The raw fd.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Where uverbs commands go.
#[derive(Debug)]
pub enum Channel {
    /// A real uverbs char device.
    Kernel(KernelFile),
    /// An in-process softhca device.
    Softhca(Uverbs),
}

/// A mapped UAR page, unmapped on drop. Only its address is exposed: the page is device
/// memory (MMIO on hardware), written with volatile stores only.
#[derive(Debug)]
pub struct UarMapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain address space owned by this value; no Rust reference into it
// exists, and all access goes through raw volatile pointers whose synchronisation the data
// path owns.
unsafe impl Send for UarMapping {}
// SAFETY: as above; `&UarMapping` only yields the address.
unsafe impl Sync for UarMapping {}

impl UarMapping {
    /// The first byte of the page.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The mapping's length (one system page).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true (a mapping has at least one page); for clippy's `len` rule.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for UarMapping {
    fn drop(&mut self) {
        // SAFETY: `ptr..ptr+len` is a mapping this value owns, unmapped exactly once.
        let rc = unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        if rc != 0 {
            eprintln!(
                "ferrodat-driver: munmap of a UAR page failed: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

impl Channel {
    /// Runs one command: `Ok(())` if the write consumed exactly `buf.len()` bytes, else the
    /// errno (EIO for a short write).
    pub fn write_command(&self, buf: &[u8]) -> std::result::Result<(), i32> {
        match self {
            Channel::Kernel(k) => {
                // SAFETY: `buf` is valid for `buf.len()` bytes of reading.
                let n = unsafe { libc::write(k.raw_fd(), buf.as_ptr().cast(), buf.len()) };
                if n < 0 {
                    Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
                } else if n as usize != buf.len() {
                    Err(libc::EIO)
                } else {
                    Ok(())
                }
            }
            Channel::Softhca(uv) => match uv.write(buf) {
                Ok(n) if n == buf.len() => Ok(()),
                Ok(_) => Err(libc::EIO),
                Err(e) => Err(e.0),
            },
        }
    }

    /// Maps one page of the device at page offset `pgoff` (mlx5: `(cmd << 8) | index`),
    /// `PROT_WRITE`, `MAP_SHARED`.
    pub fn mmap_uar(&self, pgoff: u64) -> Result<UarMapping> {
        let len = page_size();
        let detail = || format!("page offset {pgoff:#x}");
        match self {
            Channel::Kernel(k) => {
                let offset = pgoff
                    .checked_mul(len as u64)
                    .and_then(|o| libc::off_t::try_from(o).ok())
                    .ok_or_else(|| Error::invalid("mmap UAR", "offset overflows off_t"))?;
                // SAFETY: a fresh shared mapping of the device at a kernel-chosen address;
                // nothing in this process is overwritten.
                let p = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        len,
                        libc::PROT_WRITE,
                        libc::MAP_SHARED,
                        k.raw_fd(),
                        offset,
                    )
                };
                if p == libc::MAP_FAILED {
                    return Err(Error::last_os_error("mmap UAR").with_detail(detail()));
                }
                let ptr = NonNull::new(p.cast()).ok_or_else(|| {
                    Error::invalid("mmap UAR", "the kernel mapped the page at address 0")
                })?;
                Ok(UarMapping { ptr, len })
            }
            Channel::Softhca(uv) => match uv.mmap(pgoff, len) {
                Ok(ptr) => Ok(UarMapping { ptr, len }),
                Err(e) => Err(Error::errno("mmap UAR", e.0).with_detail(detail())),
            },
        }
    }

    /// The async event fd GET_CONTEXT returned (softhca knows it; for the kernel channel the
    /// context keeps it from the response).
    pub fn async_fd(&self) -> Option<RawFd> {
        match self {
            Channel::Kernel(_) => None,
            Channel::Softhca(uv) => uv.async_fd(),
        }
    }

    /// Model entry point: the driver just stored `stored()` to UAR page `uar_page` at byte
    /// `offset` (a send doorbell/BlueFlame or the CQ arm doorbell). softhca executes the new
    /// WQEs or arms the CQ on this thread; on hardware this is a no-op.
    #[inline]
    pub fn doorbell_rung(&self, uar_page: u32, offset: u32, stored: impl FnOnce() -> [u8; 8]) {
        match self {
            Channel::Kernel(_) => {}
            Channel::Softhca(uv) => uv.doorbell_rung(uar_page, offset, stored()),
        }
    }

    /// Model entry point: a poll found the CQ empty. softhca reads peers' packets and runs
    /// timers; true if something arrived. Always false on hardware.
    #[inline]
    pub fn progress(&self) -> bool {
        match self {
            Channel::Kernel(_) => false,
            Channel::Softhca(uv) => uv.progress(),
        }
    }

    /// Model entry point: a consumer of this device may block (sleep in a wait, or do
    /// anything but poll) while peers need it to answer. softhca then starts its progress
    /// thread, unless `FERRODAT_SOFTHCA_PROGRESS_THREAD=0` refused it; true if one runs.
    /// Hardware serves its peers by itself: false, nothing done.
    pub fn serve_in_background(&self) -> Result<bool> {
        match self {
            Channel::Kernel(_) => Ok(false),
            Channel::Softhca(uv) => uv.device().engine().serve_in_background().map_err(|e| {
                Error::errno(
                    "start softhca's progress thread",
                    e.raw_os_error().unwrap_or(libc::EAGAIN),
                )
                .with_hint(
                    "the process may be at its thread limit (ulimit -u); a process that polls \
                     its CQs all the time can do without: FERRODAT_SOFTHCA_PROGRESS_THREAD=0",
                )
            }),
        }
    }

    /// How many QPs one process can hold on this device, where that is fewer than the
    /// device's `max_qp` says: softhca's per-process slots (verbs has no attribute for it).
    /// `None` on hardware.
    pub fn qps_per_process(&self) -> Option<u32> {
        match self {
            Channel::Kernel(_) => None,
            Channel::Softhca(_) => {
                Some(ferrodat_softhca::fabric::layout::registry::PENDING_SLOTS as u32)
            }
        }
    }

    /// True for the softhca channel.
    pub fn is_softhca(&self) -> bool {
        matches!(self, Channel::Softhca(_))
    }
}
