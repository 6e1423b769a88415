//! Memory lent to the device: queue buffers and doorbell records.
//!
//! A [`DmaBuf`] is a page-aligned anonymous mapping, zeroed, marked `MADV_DONTFORK` (a
//! `fork()` must not turn the pinned pages copy-on-write under the device). It exposes only
//! its address and length: the device writes it behind the compiler's back, so no Rust
//! reference to its bytes is ever handed out; access is volatile through raw pointers.
//!
//! Doorbell records are carved from pages in `cache_line_size` slots, as rdma-core's
//! `mlx5_alloc_dbrec` does ([`DbPool`] / [`DbRecord`]).

use crate::channel::page_size;
use crate::error::{Error, Result};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

/// How a [`DmaBuf`] was backed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// Ordinary pages.
    Normal,
    /// hugetlbfs pages (`MAP_HUGETLB`, 2 MiB).
    HugeTlb,
    /// Ordinary pages advised `MADV_HUGEPAGE` (transparent huge pages).
    Thp,
    /// A memfd mapped `MAP_SHARED`: on softhca, a peer process can write it directly (an
    /// RDMA WRITE costs one copy, none of it on this process's CPU); on hardware it is
    /// ordinary memory.
    SharedFile,
}

/// A page-aligned, zeroed anonymous mapping lent to the device. Unmapped on drop.
#[derive(Debug)]
pub struct DmaBuf {
    ptr: NonNull<u8>,
    len: usize,
    backing: Backing,
    /// The memfd of a [`Backing::SharedFile`] buffer, kept open for the device model to
    /// find (see [`DmaBuf::new_shared`]).
    _file: Option<std::fs::File>,
}

// SAFETY: the mapping is owned address space; only raw addresses leave this type, and the
// users of those addresses synchronise their volatile accesses.
unsafe impl Send for DmaBuf {}
// SAFETY: as above; `&DmaBuf` yields only the address and length.
unsafe impl Sync for DmaBuf {}

const HUGE_2M: usize = 2 << 20;

impl DmaBuf {
    /// `len` bytes (rounded up to whole pages, at least one) of zeroed ordinary memory.
    pub fn new(len: usize) -> Result<DmaBuf> {
        let len = len.max(1).next_multiple_of(page_size());
        let ptr = map(len, 0).map_err(|e| {
            Error::errno("allocate queue memory", e).with_detail(format!("{len} bytes"))
        })?;
        let buf = DmaBuf { ptr, len, backing: Backing::Normal, _file: None };
        buf.dont_fork()?;
        Ok(buf)
    }

    /// `len` bytes backed by huge pages where possible: hugetlb 2 MiB pages, else
    /// transparent huge pages (for lengths of at least 2 MiB), else ordinary pages.
    pub fn new_huge(len: usize) -> Result<DmaBuf> {
        let huge_len = len.max(1).next_multiple_of(HUGE_2M);
        if let Ok(ptr) = map(huge_len, libc::MAP_HUGETLB | (21 << libc::MAP_HUGE_SHIFT)) {
            let buf = DmaBuf { ptr, len: huge_len, backing: Backing::HugeTlb, _file: None };
            buf.dont_fork()?;
            return Ok(buf);
        }
        let mut buf = DmaBuf::new(len)?;
        if buf.len >= HUGE_2M {
            // SAFETY: advice on our own mapping; it changes no contents.
            let rc =
                unsafe { libc::madvise(buf.ptr.as_ptr().cast(), buf.len, libc::MADV_HUGEPAGE) };
            if rc == 0 {
                buf.backing = Backing::Thp;
            }
        }
        Ok(buf)
    }

    /// `len` bytes (whole pages) of a memfd mapped `MAP_SHARED`, zeroed. The descriptor
    /// stays open while the buffer lives, so that softhca's REG_MR finds the file behind
    /// the memory and lets peers place RDMA WRITEs into it (it costs one descriptor).
    pub fn new_shared(len: usize) -> Result<DmaBuf> {
        use std::os::fd::{AsRawFd, FromRawFd};
        let len = len.max(1).next_multiple_of(page_size());
        // SAFETY: a NUL-terminated name and valid flags; the result is checked.
        let fd = unsafe { libc::memfd_create(c"ferrodat-mr".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::last_os_error("memfd_create (shared MR memory)"));
        }
        // SAFETY: the descriptor just created, owned from here on.
        let file = unsafe { std::fs::File::from_raw_fd(fd) };
        file.set_len(len as u64).map_err(|e| {
            Error::errno("size the shared MR memory", e.raw_os_error().unwrap_or(libc::EIO))
                .with_detail(format!("{len} bytes"))
                .with_hint("is /dev/shm (tmpfs) full?")
        })?;
        // SAFETY: a fresh shared mapping of our own memfd at a kernel-chosen address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os_error("mmap (shared MR memory)"));
        }
        let ptr = NonNull::new(p.cast()).ok_or_else(|| Error::last_os_error("mmap"))?;
        let buf = DmaBuf { ptr, len, backing: Backing::SharedFile, _file: Some(file) };
        buf.dont_fork()?;
        Ok(buf)
    }

    fn dont_fork(&self) -> Result<()> {
        // SAFETY: advice on our own mapping; it changes no contents.
        let rc = unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_DONTFORK) };
        if rc != 0 {
            return Err(Error::last_os_error("madvise(MADV_DONTFORK)"));
        }
        Ok(())
    }

    /// The first byte.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The address as the device sees it (a user virtual address).
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// Length in bytes (whole pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true; for clippy's `len` rule.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How the memory is backed.
    pub fn backing(&self) -> Backing {
        self.backing
    }

    /// Volatile copy of `src` to `offset`. False (nothing written) if out of bounds.
    pub fn write(&self, offset: usize, src: &[u8]) -> bool {
        if offset.checked_add(src.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        for (i, b) in src.iter().enumerate() {
            // SAFETY: offset + i < len (checked above), inside our mapping.
            unsafe { self.ptr.as_ptr().add(offset + i).write_volatile(*b) };
        }
        true
    }

    /// Volatile copy from `offset` into `dst`. False (nothing read) if out of bounds.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> bool {
        if offset.checked_add(dst.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        for (i, b) in dst.iter_mut().enumerate() {
            // SAFETY: offset + i < len (checked above), inside our mapping.
            *b = unsafe { self.ptr.as_ptr().add(offset + i).read_volatile() };
        }
        true
    }
}

impl Drop for DmaBuf {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

fn map(len: usize, extra_flags: i32) -> std::result::Result<NonNull<u8>, i32> {
    // SAFETY: a fresh private anonymous mapping at a kernel-chosen address.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra_flags,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOMEM));
    }
    NonNull::new(p.cast()).ok_or(libc::ENOMEM)
}

/// Doorbell-record pages of one context, carved in `slot`-byte slots.
#[derive(Debug)]
pub struct DbPool {
    inner: Arc<Mutex<PoolInner>>,
}

#[derive(Debug)]
struct PoolInner {
    slot: usize,
    pages: Vec<DmaBuf>,
    free: Vec<(usize, usize)>,
}

/// One doorbell record (two big-endian u32, zeroed at allocation) in its own slot. Freed
/// back to its pool on drop; its page lives as long as any record of the pool.
#[derive(Debug)]
pub struct DbRecord {
    addr: NonNull<u8>,
    page: usize,
    index: usize,
    pool: Arc<Mutex<PoolInner>>,
}

// SAFETY: the record is an address in memory its pool owns (kept alive by the Arc); access
// through it is volatile and synchronised by its user.
unsafe impl Send for DbRecord {}
// SAFETY: as above.
unsafe impl Sync for DbRecord {}

impl DbPool {
    /// A pool with `slot`-byte slots (the context's `cache_line_size`, at least 8, a power
    /// of two no larger than a page).
    pub fn new(slot: usize) -> DbPool {
        let slot = slot.clamp(8, page_size()).next_power_of_two();
        DbPool { inner: Arc::new(Mutex::new(PoolInner { slot, pages: Vec::new(), free: vec![] })) }
    }

    /// A zeroed record.
    pub fn alloc(&self) -> Result<DbRecord> {
        let mut p = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if p.free.is_empty() {
            let page = DmaBuf::new(page_size())?;
            let n = p.pages.len();
            let per_page = page_size() / p.slot;
            p.free.extend((0..per_page).rev().map(|i| (n, i)));
            p.pages.push(page);
        }
        let (page, index) = p.free.pop().ok_or_else(|| Error::invalid("alloc dbrec", "empty"))?;
        let base = p.pages[page].as_ptr();
        // SAFETY: index * slot < page_size: inside the page.
        let addr = unsafe { base.add(index * p.slot) };
        // SAFETY: 8 bytes at the slot start, inside the page, 8-byte aligned.
        unsafe { addr.as_ptr().cast::<u64>().write_volatile(0) };
        Ok(DbRecord { addr, page, index, pool: self.inner.clone() })
    }
}

impl DbRecord {
    /// The record's first byte.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.addr
    }

    /// The address passed to the device as `db_addr`.
    pub fn addr(&self) -> u64 {
        self.addr.as_ptr() as u64
    }

    /// Volatile big-endian store of `value` into word `i` (0 or 1).
    pub fn write_be32(&self, i: usize, value: u32) {
        if i < 2 {
            // SAFETY: word i of the 8-byte record, 4-byte aligned, inside our slot.
            unsafe {
                self.addr.as_ptr().add(4 * i).cast::<[u8; 4]>().write_volatile(value.to_be_bytes())
            };
        }
    }

    /// Volatile big-endian load of word `i` (0 or 1); 0 for another index.
    pub fn read_be32(&self, i: usize) -> u32 {
        if i >= 2 {
            return 0;
        }
        // SAFETY: word i of the 8-byte record, inside our slot.
        u32::from_be_bytes(unsafe {
            self.addr.as_ptr().add(4 * i).cast::<[u8; 4]>().read_volatile()
        })
    }
}

impl Drop for DbRecord {
    fn drop(&mut self) {
        let mut p = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        p.free.push((self.page, self.index));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dma_is_page_aligned_zeroed_and_bounds_checked() {
        let b = DmaBuf::new(100).unwrap();
        assert_eq!(b.addr() % page_size() as u64, 0);
        assert_eq!(b.len(), page_size());
        let mut x = [1u8; 8];
        assert!(b.read(0, &mut x));
        assert_eq!(x, [0; 8]);
        assert!(b.write(page_size() - 1, &[7]));
        assert!(!b.write(page_size(), &[7]));
        assert!(!b.read(usize::MAX, &mut x));
    }

    #[test]
    fn huge_falls_back() {
        let b = DmaBuf::new_huge(4096).unwrap();
        assert!(b.len() >= 4096);
    }

    #[test]
    fn dbrecs_get_distinct_cache_line_slots_and_are_reused() {
        let pool = DbPool::new(64);
        let a = pool.alloc().unwrap();
        let b = pool.alloc().unwrap();
        assert_eq!(b.addr() - a.addr(), 64);
        a.write_be32(1, 0x1234);
        assert_eq!(a.read_be32(1), 0x1234);
        let a_addr = a.addr();
        drop(a);
        let c = pool.alloc().unwrap();
        assert_eq!(c.addr(), a_addr);
        assert_eq!(c.read_be32(1), 0, "a reused record is zeroed");
        let many: Vec<_> = (0..200).map(|_| pool.alloc().unwrap()).collect();
        assert_eq!(many.len(), 200);
    }
}
