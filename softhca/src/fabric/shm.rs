//! A `MAP_SHARED` file mapping with bounds-checked atomic and volatile accessors.
//!
//! Every byte of a [`SharedMapping`] may be written at any moment by another process, so
//! nothing here ever hands out a `&u8`, `&[u8]` or `&u64` into it. Words are reached as
//! `&AtomicU32`/`&AtomicU64` (atomics are `UnsafeCell`s: concurrent mutation by others is
//! allowed), bytes are copied in and out with volatile loads and stores.
//!
//! Offsets are checked on every access. The atomic accessors panic on a bad offset: their
//! offsets are layout constants or values the caller has already reduced modulo a
//! validated capacity, so a failure is a bug in this crate, never bad data from a peer.
//! The byte copies return [`OutOfBounds`] instead, because their lengths come from
//! records.
//!
//! Bulk payload (the data of WRITEs, SENDs and READ responses, which softhca forwards
//! between application buffers and never interprets) is copied with one `memmove` through
//! raw pointers ([`SharedMapping::copy_in_raw`], [`SharedMapping::copy_out_raw`]) rather
//! than word by word: still no reference into the mapping, and the ring protocol gives
//! each side the bytes it copies exclusively (a producer only writes space the consumer
//! freed, a consumer only reads records published to it). A hostile peer that broke the
//! protocol could only garble the bytes copied, as a DMA engine racing a CPU would; every
//! value softhca *acts on* (headers, lengths, positions) still goes through the atomic and
//! volatile accessors and is validated.
//!
//! A peer that *truncates* a file we have mapped would make touching a page past the new
//! end raise `SIGBUS`; every mapping is guarded against that ([`super::sigbus`]): the pages
//! become zero-filled private memory and [`SharedMapping::lost`] says so.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};

use super::FabricError;
use super::sigbus::{self, Guard};

/// A byte range outside the mapping, or misaligned for the requested access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfBounds {
    /// Where the range starts.
    pub offset: usize,
    /// Its length.
    pub len: usize,
    /// The mapping's length.
    pub mapping_len: usize,
}

impl std::fmt::Display for OutOfBounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes at offset {} lie outside a {}-byte shared mapping (or are misaligned)",
            self.len, self.offset, self.mapping_len
        )
    }
}

impl std::error::Error for OutOfBounds {}

/// A `MAP_SHARED` mapping of a file (read-write, but for the read-only mappings of peers' regions
/// this process may only read), unmapped on drop.
#[derive(Debug)]
pub struct SharedMapping {
    base: NonNull<u8>,
    len: usize,
    /// The range registered with the SIGBUS handler.
    guard: Guard,
}

// SAFETY: the mapping is plain process memory owned by this value; every access goes
// through atomics or volatile copies (never references to plain data), so moving it to or
// sharing it with other threads cannot create a data race on Rust-visible values.
unsafe impl Send for SharedMapping {}
// SAFETY: see `Send`: `&SharedMapping` only allows atomic and volatile access.
unsafe impl Sync for SharedMapping {}

impl SharedMapping {
    /// Maps the first `len` bytes of `file` read-write and shared. `path` is for errors only.
    pub fn map(file: &File, len: usize, path: &Path) -> Result<Self, FabricError> {
        Self::map_at(file, 0, len, path)
    }

    /// Maps `len` bytes of `file` from `offset` (a multiple of the page size) read-write
    /// and shared. `path` is for errors only.
    pub fn map_at(file: &File, offset: u64, len: usize, path: &Path) -> Result<Self, FabricError> {
        Self::map_with(file, offset, len, path, libc::PROT_READ | libc::PROT_WRITE)
    }

    /// As [`Self::map_at`], read-only: a store through the mapping faults. Only for a
    /// peer's region this process may only read (`memory_export.rs`, whose placements
    /// refuse to write into such an import).
    pub(crate) fn map_at_read_only(
        file: &File,
        offset: u64,
        len: usize,
        path: &Path,
    ) -> Result<Self, FabricError> {
        Self::map_with(file, offset, len, path, libc::PROT_READ)
    }

    fn map_with(
        file: &File,
        offset: u64,
        len: usize,
        path: &Path,
        protection: libc::c_int,
    ) -> Result<Self, FabricError> {
        if len == 0 {
            return Err(FabricError::bad_file(path, "the file is empty".to_string()));
        }
        let offset = libc::off_t::try_from(offset).map_err(|_| {
            FabricError::bad_file(path, format!("offset {offset} is beyond any file"))
        })?;
        // SAFETY: a null address hint, a non-zero length and an open descriptor: the kernel
        // validates everything else (an unaligned offset included) and reports failure as MAP_FAILED, checked below.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                protection,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                offset,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(FabricError::os(
                "mmap (MAP_SHARED)",
                path,
                std::io::Error::last_os_error(),
                "is /dev/shm full, or the address-space limit (ulimit -v) too small?",
            ));
        }
        let base = NonNull::new(raw.cast::<u8>()).ok_or_else(|| {
            FabricError::bad_file(path, "mmap returned a null address".to_string())
        })?;
        let Some(guard) = sigbus::guard(base.as_ptr() as usize, len) else {
            // SAFETY: the mapping just made, referenced by nothing yet.
            unsafe { libc::munmap(raw, len) };
            return Err(FabricError::Exhausted {
                what: "shared mappings guarded against truncation",
                capacity: sigbus::MAX_GUARDED,
                path: path.to_path_buf(),
                hint: "destroy unused QPs (each maps two rings)",
            });
        };
        Ok(Self { base, len, guard })
    }

    /// Whether the file was truncated under the mapping (by a peer: ours never shrink a
    /// published file). The mapping then shows zero-filled private memory, and whatever
    /// it held is gone: treat its producer as broken.
    pub fn lost(&self) -> bool {
        self.guard.lost()
    }

    fn checked_range(&self, offset: usize, len: usize) -> Result<(), OutOfBounds> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(OutOfBounds { offset, len, mapping_len: self.len }),
        }
    }

    /// The address of `offset`, once `offset..offset+len` is checked to lie inside the
    /// mapping (which stays mapped while `&self` lives). No reference is formed.
    #[inline]
    fn range_ptr(&self, offset: usize, len: usize) -> Result<*mut u8, OutOfBounds> {
        self.checked_range(offset, len)?;
        // SAFETY: offset <= offset + len <= self.len: inside (or one past) the mapping.
        Ok(unsafe { self.base.as_ptr().add(offset) })
    }

    fn assert_word(&self, offset: usize, size: usize) {
        assert!(
            offset.is_multiple_of(size) && self.checked_range(offset, size).is_ok(),
            "softhca fabric bug: {size}-byte word at offset {offset} in a {}-byte mapping",
            self.len
        );
    }

    /// The whole mapping as 8-byte words (its length rounded down), for the fast paths that
    /// reach words at fixed or masked offsets: slice indexing is then the only check.
    #[inline]
    pub fn words(&self) -> &[AtomicU64] {
        // SAFETY: the base is page-aligned and the first `len / 8` words lie inside the
        // mapping, which stays mapped while `&self` lives; AtomicU64 has u64's layout and
        // permits concurrent mutation by other processes.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().cast(), self.len / 8) }
    }

    /// The 8-byte word at `offset` (must be in bounds and 8-aligned; panics otherwise).
    #[inline]
    pub fn u64_at(&self, offset: usize) -> &AtomicU64 {
        self.assert_word(offset, 8);
        // SAFETY: in bounds and 8-aligned (checked above; mmap returns page-aligned memory);
        // the memory stays mapped while `&self` lives; AtomicU64 has u64's layout and
        // permits concurrent mutation by other processes.
        unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(offset).cast()) }
    }

    /// The 4-byte word at `offset` (must be in bounds and 4-aligned; panics otherwise).
    #[inline]
    pub(crate) fn u32_at(&self, offset: usize) -> &AtomicU32 {
        self.assert_word(offset, 4);
        // SAFETY: as for `u64_at`, with 4-byte size and alignment.
        unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(offset).cast()) }
    }

    /// Copies `dst.len()` 8-byte words starting at `offset` (8-aligned) out of the mapping,
    /// with volatile loads: one bounds check for the whole range.
    #[inline]
    pub(crate) fn load_words(&self, offset: usize, dst: &mut [u64]) -> Result<(), OutOfBounds> {
        let len = dst.len() * 8;
        if !offset.is_multiple_of(8) {
            return Err(OutOfBounds { offset, len, mapping_len: self.len });
        }
        // Inside the mapping, and 8-aligned (the mapping is page-aligned): every word read
        // is in bounds and aligned.
        let src = self.range_ptr(offset, len)?.cast::<u64>();
        for (i, word) in dst.iter_mut().enumerate() {
            // SAFETY: i < dst.len(): inside the checked range.
            *word = unsafe { src.add(i).read_volatile() };
        }
        Ok(())
    }

    /// Copies `dst.len()` bytes starting at `offset` out of the mapping (volatile loads:
    /// 8 bytes at a time where the shared side is aligned).
    pub(crate) fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result<(), OutOfBounds> {
        let src = self.range_ptr(offset, dst.len())?;
        let mut i = 0;
        while i < dst.len() && !(src as usize + i).is_multiple_of(8) {
            // SAFETY: i < len, so src+i is inside the checked range.
            dst[i] = unsafe { src.add(i).read_volatile() };
            i += 1;
        }
        while i + 8 <= dst.len() {
            // SAFETY: src+i is 8-aligned (loop above) and src+i..src+i+8 is in range.
            let word = unsafe { src.add(i).cast::<u64>().read_volatile() };
            dst[i..i + 8].copy_from_slice(&word.to_ne_bytes());
            i += 8;
        }
        while i < dst.len() {
            // SAFETY: i < len, inside the checked range.
            dst[i] = unsafe { src.add(i).read_volatile() };
            i += 1;
        }
        Ok(())
    }

    /// Copies `src` into the mapping at `offset` (volatile stores, 8 bytes at a time where
    /// the shared side is aligned).
    pub(crate) fn write_bytes(&self, offset: usize, src: &[u8]) -> Result<(), OutOfBounds> {
        let dst = self.range_ptr(offset, src.len())?;
        let mut i = 0;
        while i < src.len() && !(dst as usize + i).is_multiple_of(8) {
            // SAFETY: i < len, inside the checked range.
            unsafe { dst.add(i).write_volatile(src[i]) };
            i += 1;
        }
        while i + 8 <= src.len() {
            let mut word = [0u8; 8];
            word.copy_from_slice(&src[i..i + 8]);
            // SAFETY: dst+i is 8-aligned (loop above) and dst+i..dst+i+8 is in range.
            unsafe { dst.add(i).cast::<u64>().write_volatile(u64::from_ne_bytes(word)) };
            i += 8;
        }
        while i < src.len() {
            // SAFETY: i < len, inside the checked range.
            unsafe { dst.add(i).write_volatile(src[i]) };
            i += 1;
        }
        Ok(())
    }
}

impl SharedMapping {
    /// Copies `len` bytes from `src` into the mapping at `offset` with one `memmove`:
    /// for bulk payload that is only forwarded, never interpreted (see the module docs).
    ///
    /// # Safety
    /// `src..src+len` must be readable for the duration of the call (it may be another
    /// mapping, even this one: the copy allows overlap).
    #[inline]
    pub unsafe fn copy_in_raw(
        &self,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<(), OutOfBounds> {
        let dst = self.range_ptr(offset, len)?;
        // SAFETY: the destination is inside the mapping (`range_ptr`); the caller vouches
        // for the source; `copy` tolerates overlap; no reference to either side is formed.
        unsafe { std::ptr::copy(src, dst, len) };
        Ok(())
    }

    /// Copies `src` into the mapping at `offset` with one `memmove` (bulk payload, as
    /// [`Self::copy_in_raw`], from a slice of ours).
    #[inline]
    pub fn copy_in(&self, offset: usize, src: &[u8]) -> Result<(), OutOfBounds> {
        // SAFETY: a live slice is readable for its length throughout the call.
        unsafe { self.copy_in_raw(offset, src.as_ptr(), src.len()) }
    }

    /// Fills `dst` from the mapping at `offset` with one `memmove` (bulk payload, as
    /// [`Self::copy_out_raw`], into a slice of ours).
    #[inline]
    pub fn copy_out(&self, offset: usize, dst: &mut [u8]) -> Result<(), OutOfBounds> {
        // SAFETY: a live exclusive slice is writable for its length throughout the call.
        unsafe { self.copy_out_raw(offset, dst.as_mut_ptr(), dst.len()) }
    }

    /// Zeroes `len` bytes at `offset` with one `memset`: for space a ring consumer hands
    /// back, which no other process reads or writes until it sees the consumer's next
    /// Release store (so, as for bulk payload, no word-by-word volatile stores).
    #[inline]
    pub fn zero_bytes(&self, offset: usize, len: usize) -> Result<(), OutOfBounds> {
        let dst = self.range_ptr(offset, len)?;
        // SAFETY: inside the mapping (`range_ptr`); no reference into it is formed.
        unsafe { std::ptr::write_bytes(dst, 0, len) };
        Ok(())
    }

    /// Copies `len` bytes starting at `offset` out of the mapping to `dst` with one
    /// `memmove` (bulk payload, as [`Self::copy_in_raw`]).
    ///
    /// # Safety
    /// `dst..dst+len` must be writable for the duration of the call.
    #[inline]
    pub unsafe fn copy_out_raw(
        &self,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), OutOfBounds> {
        let src = self.range_ptr(offset, len)?;
        // SAFETY: as in `copy_in_raw`, with the caller vouching for the destination.
        unsafe { std::ptr::copy(src, dst, len) };
        Ok(())
    }
}

impl Drop for SharedMapping {
    fn drop(&mut self) {
        // Unregistered before the range is unmapped (and may be reused by another mapping).
        self.guard.release();
        // SAFETY: base/len describe exactly the mapping created in `map`, and no reference
        // into it outlives `self` (accessors borrow `self`).
        let rc = unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        debug_assert_eq!(rc, 0, "munmap of a mapping we created failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_truncated_under_its_mapping_reads_as_zeros_and_is_lost() {
        let path =
            std::env::temp_dir().join(format!("ferrodat-shm-truncated-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.set_len(3 * 4096).unwrap();
        let map = SharedMapping::map(&file, 3 * 4096, &path).unwrap();
        map.u64_at(8192).store(0x5a5a, std::sync::atomic::Ordering::Relaxed);
        assert!(!map.lost());
        file.set_len(4096).unwrap();
        let _ = std::fs::remove_file(&path);
        // Past the new end: no SIGBUS; the whole mapping is now private zeros.
        assert_eq!(map.u64_at(8192).load(std::sync::atomic::Ordering::Relaxed), 0);
        assert!(map.lost());
        map.u64_at(0).store(7, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(map.u64_at(0).load(std::sync::atomic::Ordering::Relaxed), 7);
        let mut out = [1u8; 16];
        map.copy_out(4096 + 8, &mut out).unwrap();
        assert_eq!(out, [0; 16]);
    }
}
