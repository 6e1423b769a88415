//! Access to application memory, the way the HCA's DMA engine reaches it.
//!
//! The driver hands softhca addresses (queue buffers, doorbell records, registered memory)
//! that the application keeps writing concurrently, so softhca never forms a Rust reference
//! to them: every access is a raw volatile read or write, or an atomic, bounded by an
//! [`AppSpan`] whose range the kernel side checked when the object was created. Like a real
//! HCA after pinning, softhca then trusts the mapping to stay: an application that unmaps a
//! registered buffer or a queue while the HCA may still use it breaks the contract here too
//! (on hardware it would leave pinned pages behind; here the process faults).

use std::sync::atomic::{AtomicU64, Ordering, fence};

use crate::fabric::{MappingReader, RecordFiller, RecordView, SharedMapping};

/// A range of application memory the HCA may access. Cheap to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppSpan {
    addr: usize,
    len: usize,
}

/// An access outside its span: a bug in softhca's own bounds checks, reported rather than
/// performed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfSpan;

impl AppSpan {
    /// # Safety
    /// `addr..addr+len` must be mapped, readable and writable application memory for as long
    /// as this span (and any copy) is used, as pinned memory would be for a real HCA. The
    /// kernel side checks the mapping when the object is created.
    pub unsafe fn new(addr: usize, len: usize) -> Self {
        AppSpan { addr, len }
    }

    /// Start address.
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty span.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The sub-span `offset..offset+len`.
    pub fn sub(&self, offset: usize, len: usize) -> Result<AppSpan, OutOfSpan> {
        self.check(offset, len)?;
        Ok(AppSpan { addr: self.addr + offset, len })
    }

    fn check(&self, offset: usize, len: usize) -> Result<usize, OutOfSpan> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(self.addr + offset),
            _ => Err(OutOfSpan),
        }
    }

    /// Copies `out.len()` bytes from `offset` into `out`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), OutOfSpan> {
        let at = self.check(offset, out.len())?;
        // SAFETY: in bounds of a span the constructor's contract keeps mapped; `out` is ours
        // and cannot overlap application memory we only know by address.
        unsafe { std::ptr::copy_nonoverlapping(at as *const u8, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// The `N` bytes at `offset` (a fixed-size copy, inlined rather than a call).
    #[inline]
    pub fn read_array<const N: usize>(&self, offset: usize) -> Result<[u8; N], OutOfSpan> {
        let at = self.check(offset, N)?;
        let mut out = [0u8; N];
        // SAFETY: as in `read`.
        unsafe { std::ptr::copy_nonoverlapping(at as *const u8, out.as_mut_ptr(), N) };
        Ok(out)
    }

    /// Copies `data` to `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), OutOfSpan> {
        let at = self.check(offset, data.len())?;
        // SAFETY: as in `read`; `data` may be in application memory too (a copy between
        // two registered buffers), so use the overlap-safe copy.
        unsafe { std::ptr::copy(data.as_ptr(), at as *mut u8, data.len()) };
        Ok(())
    }

    /// Copies `len` bytes from `src` (at `src_offset`) to this span at `offset`.
    pub fn copy_from(
        &self,
        offset: usize,
        src: &AppSpan,
        src_offset: usize,
        len: usize,
    ) -> Result<(), OutOfSpan> {
        let to = self.check(offset, len)?;
        let from = src.check(src_offset, len)?;
        // SAFETY: both ranges are inside spans the contract keeps mapped; `copy` allows the
        // overlap an application may create between its own buffers.
        unsafe { std::ptr::copy(from as *const u8, to as *mut u8, len) };
        Ok(())
    }

    /// Appends `len` bytes from `offset` to a ring record being filled: the requester's
    /// gather, straight from application memory into the ring. `Err` also when the record
    /// has less room left (a bug in the caller's arithmetic, refused rather than done).
    #[inline]
    pub fn copy_into_record(
        &self,
        offset: usize,
        len: usize,
        record: &mut RecordFiller<'_>,
    ) -> Result<(), OutOfSpan> {
        let at = self.check(offset, len)?;
        // SAFETY: in bounds of a span the constructor's contract keeps mapped and readable.
        unsafe { record.append_raw(at as *const u8, len) }.map_err(|_| OutOfSpan)
    }

    /// Copies `len` bytes from `offset` into a shared mapping at `map_offset`: a placed
    /// RDMA WRITE, straight from application memory into the peer's exported region.
    #[inline]
    pub fn copy_into_mapping(
        &self,
        offset: usize,
        len: usize,
        map: &SharedMapping,
        map_offset: usize,
    ) -> Result<(), OutOfSpan> {
        let at = self.check(offset, len)?;
        // SAFETY: in bounds of a span the constructor's contract keeps mapped and readable.
        unsafe { map.copy_in_raw(map_offset, at as *const u8, len) }.map_err(|_| OutOfSpan)
    }

    /// Copies `len` bytes from a shared mapping at `map_offset` to `offset`: a placed RDMA
    /// READ, straight from the peer's exported region into application memory.
    #[inline]
    pub fn copy_from_mapping(
        &self,
        offset: usize,
        len: usize,
        map: MappingReader<'_>,
        map_offset: usize,
    ) -> Result<(), OutOfSpan> {
        let at = self.check(offset, len)?;
        // SAFETY: in bounds of a span the constructor's contract keeps mapped and writable.
        unsafe { map.copy_out_raw(map_offset, at as *mut u8, len) }.map_err(|_| OutOfSpan)
    }

    /// Copies `len` bytes from `record_offset` in a ring record to `offset`: the
    /// responder's scatter, straight from the ring into application memory. `Err` also when
    /// the range is outside the record (a bug in the caller's arithmetic).
    #[inline]
    pub fn copy_from_record(
        &self,
        offset: usize,
        record: &RecordView<'_>,
        record_offset: usize,
        len: usize,
    ) -> Result<(), OutOfSpan> {
        let at = self.check(offset, len)?;
        // SAFETY: in bounds of a span the constructor's contract keeps mapped and writable.
        unsafe { record.copy_out_raw(record_offset, at as *mut u8, len) }.map_err(|_| OutOfSpan)
    }

    /// Reads a big-endian u32 with one volatile load (doorbell records).
    pub fn read_be32(&self, offset: usize) -> Result<u32, OutOfSpan> {
        let at = self.check(offset, 4)?;
        if at % 4 == 0 {
            // SAFETY: in bounds and 4-aligned: one 4-byte load (the usual doorbell record).
            return Ok(u32::from_be(unsafe { std::ptr::read_volatile(at as *const u32) }));
        }
        // SAFETY: in bounds; byte loads because doorbell records are only 4-aligned by
        // convention, which the driver may break.
        let raw = unsafe { std::ptr::read_volatile(at as *const [u8; 4]) };
        Ok(u32::from_be_bytes(raw))
    }

    /// Writes a big-endian u32 with one volatile store.
    pub fn write_be32(&self, offset: usize, value: u32) -> Result<(), OutOfSpan> {
        let at = self.check(offset, 4)?;
        // SAFETY: in bounds of the span.
        unsafe { std::ptr::write_volatile(at as *mut [u8; 4], value.to_be_bytes()) };
        Ok(())
    }

    /// Reads one byte with a volatile load.
    pub fn read_u8(&self, offset: usize) -> Result<u8, OutOfSpan> {
        let at = self.check(offset, 1)?;
        // SAFETY: in bounds of the span.
        Ok(unsafe { std::ptr::read_volatile(at as *const u8) })
    }

    /// Publishes a 64-byte completion entry: bytes 0..63 first, then, after a release fence,
    /// the last byte (`op_own`, which carries the ownership bit), so that a consumer that
    /// sees the new owner bit also sees the whole entry.
    pub fn publish_entry(&self, offset: usize, entry: &[u8; 64]) -> Result<(), OutOfSpan> {
        self.publish_entry_with_last(offset, entry, entry[63])
    }

    /// As [`Self::publish_entry`], with `last` as the entry's last byte instead of
    /// `entry[63]` (the producer adds the owner bit without copying the entry).
    #[inline]
    pub fn publish_entry_with_last(
        &self,
        offset: usize,
        entry: &[u8; 64],
        last: u8,
    ) -> Result<(), OutOfSpan> {
        let at = self.check(offset, 64)?;
        // SAFETY: in bounds of the span; the consumer reads this memory only after it sees
        // the owner byte written below.
        unsafe { std::ptr::copy_nonoverlapping(entry.as_ptr(), at as *mut u8, 63) };
        fence(Ordering::Release);
        // SAFETY: in bounds of the span.
        unsafe { std::ptr::write_volatile((at + 63) as *mut u8, last) };
        Ok(())
    }

    /// The 8-byte word at `offset` as an atomic, for RDMA atomics. `offset` must make the
    /// address 8-byte aligned (the caller checks, as hardware does).
    pub fn atomic_u64(&self, offset: usize) -> Result<&AtomicU64, OutOfSpan> {
        let at = self.check(offset, 8)?;
        if at % 8 != 0 {
            return Err(OutOfSpan);
        }
        // SAFETY: aligned, in bounds and mapped per the contract; AtomicU64 has the layout of
        // u64 and only atomic operations go through this reference, which is how another
        // process or the device races with the application on this word anyway.
        Ok(unsafe { &*(at as *const AtomicU64) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_checked() {
        let mut buf = vec![0u8; 64];
        // SAFETY: `buf` outlives the span.
        let span = unsafe { AppSpan::new(buf.as_mut_ptr() as usize, buf.len()) };
        span.write(60, &[1, 2, 3, 4]).unwrap();
        assert_eq!(span.write(61, &[1, 2, 3, 4]), Err(OutOfSpan));
        assert_eq!(span.sub(usize::MAX, 2), Err(OutOfSpan));
        span.write_be32(0, 0x0102_0304).unwrap();
        assert_eq!(span.read_be32(0).unwrap(), 0x0102_0304);
        assert_eq!(buf[..4], [1, 2, 3, 4]);
    }

    #[test]
    fn publish_writes_owner_byte_last_and_all_bytes() {
        let mut buf = vec![0u8; 128];
        // SAFETY: `buf` outlives the span.
        let span = unsafe { AppSpan::new(buf.as_mut_ptr() as usize, buf.len()) };
        let mut e = [7u8; 64];
        e[63] = 0x21;
        span.publish_entry(64, &e).unwrap();
        assert_eq!(&buf[64..], &e[..]);
    }
}
