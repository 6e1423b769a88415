//! Volatile access to memory the device reads or writes (queue buffers, doorbell records,
//! UAR pages), and the barriers that order it, as rdma-core's `util/udma_barrier.h` and
//! `mmio.h` define them for x86_64 and aarch64 (but for [`from_device_barrier`] on x86,
//! which follows Linux's `dma_rmb()`).
//!
//! The data path never forms a Rust reference to such memory: the device (or softhca, on
//! another thread or in another process) may write it at any time.

use std::ptr::NonNull;
use std::sync::atomic::{Ordering, compiler_fence};

/// 16 bytes moved as one: an SSE register on x86_64, a NEON one on aarch64.
#[cfg(target_arch = "x86_64")]
pub type Wide = std::arch::x86_64::__m128i;
/// 16 bytes moved as one: an SSE register on x86_64, a NEON one on aarch64.
#[cfg(target_arch = "aarch64")]
pub type Wide = std::arch::aarch64::uint8x16_t;
/// 16 bytes moved as one (two words where the target has no vector registers).
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub type Wide = u128;

/// Whether this target has the device-memory barriers and 64-bit doorbell stores real
/// hardware needs (rdma-core's for x86_64 and aarch64). Elsewhere the fallbacks order plain
/// memory only, enough for softhca, and real devices are refused.
pub const ORDERS_DEVICE_MEMORY: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// A raw address inside memory lent to the device. Copyable; every access is volatile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevPtr(NonNull<u8>);

// SAFETY: a DevPtr is an address, not a reference; every access through it is volatile and
// documented by its owner (the queue that holds it) as safe from the threads it allows.
unsafe impl Send for DevPtr {}
// SAFETY: as above.
unsafe impl Sync for DevPtr {}

impl DevPtr {
    /// # Safety
    /// `ptr` must point into a mapping that stays valid for as long as any copy of the
    /// returned value is used, and accesses made through it must stay inside that mapping.
    pub unsafe fn new(ptr: NonNull<u8>) -> DevPtr {
        DevPtr(ptr)
    }

    /// The address as the device sees it (user virtual address).
    pub fn addr(self) -> u64 {
        self.0.as_ptr() as u64
    }

    /// `self + offset`.
    ///
    /// # Safety
    /// `offset` must stay inside the mapping.
    #[inline(always)]
    pub unsafe fn add(self, offset: usize) -> DevPtr {
        // SAFETY: the caller keeps the result inside the mapping, so it is non-null.
        DevPtr(unsafe { NonNull::new_unchecked(self.0.as_ptr().add(offset)) })
    }

    /// Volatile 64-bit store of `value` as it is in memory (callers pass big-endian bytes).
    ///
    /// # Safety
    /// 8 bytes at `self + offset` are inside the mapping and 8-byte aligned.
    #[inline(always)]
    pub unsafe fn write_u64(self, offset: usize, value: u64) {
        // SAFETY: per the caller's contract.
        unsafe { self.0.as_ptr().add(offset).cast::<u64>().write_volatile(value) }
    }

    /// Volatile 16-byte store (one vector store where the target has them: BlueFlame
    /// copies in as few bus writes as rdma-core's).
    ///
    /// # Safety
    /// 16 bytes at `self + offset` are inside the mapping and 16-byte aligned.
    #[inline(always)]
    pub unsafe fn write_u128(self, offset: usize, value: Wide) {
        // SAFETY: per the caller's contract.
        unsafe { self.0.as_ptr().add(offset).cast::<Wide>().write_volatile(value) }
    }

    /// Volatile 16-byte load.
    ///
    /// # Safety
    /// As [`DevPtr::write_u128`].
    #[inline(always)]
    pub unsafe fn read_u128(self, offset: usize) -> Wide {
        // SAFETY: per the caller's contract.
        unsafe { self.0.as_ptr().add(offset).cast::<Wide>().read_volatile() }
    }

    /// Volatile 32-bit store.
    ///
    /// # Safety
    /// 4 bytes at `self + offset` are inside the mapping and 4-byte aligned.
    #[inline(always)]
    pub unsafe fn write_u32(self, offset: usize, value: u32) {
        // SAFETY: per the caller's contract.
        unsafe { self.0.as_ptr().add(offset).cast::<u32>().write_volatile(value) }
    }

    /// Volatile 16-bit store.
    ///
    /// # Safety
    /// 2 bytes at `self + offset` are inside the mapping and 2-byte aligned.
    #[inline(always)]
    pub unsafe fn write_u16(self, offset: usize, value: u16) {
        // SAFETY: per the caller's contract.
        unsafe { self.0.as_ptr().add(offset).cast::<u16>().write_volatile(value) }
    }

    /// Volatile byte store.
    ///
    /// # Safety
    /// The byte at `self + offset` is inside the mapping.
    #[inline(always)]
    pub unsafe fn write_u8(self, offset: usize, value: u8) {
        // SAFETY: per the caller's contract.
        unsafe { self.0.as_ptr().add(offset).write_volatile(value) }
    }

    /// Volatile 64-bit load.
    ///
    /// # Safety
    /// As [`DevPtr::write_u64`].
    #[inline(always)]
    pub unsafe fn read_u64(self, offset: usize) -> u64 {
        // SAFETY: per the caller's contract.
        unsafe { self.0.as_ptr().add(offset).cast::<u64>().read_volatile() }
    }

    /// Volatile 32-bit load.
    ///
    /// # Safety
    /// As [`DevPtr::write_u32`].
    #[inline(always)]
    pub unsafe fn read_u32(self, offset: usize) -> u32 {
        // SAFETY: per the caller's contract.
        unsafe { self.0.as_ptr().add(offset).cast::<u32>().read_volatile() }
    }

    /// Volatile 16-bit load.
    ///
    /// # Safety
    /// As [`DevPtr::write_u16`].
    #[inline(always)]
    pub unsafe fn read_u16(self, offset: usize) -> u16 {
        // SAFETY: per the caller's contract.
        unsafe { self.0.as_ptr().add(offset).cast::<u16>().read_volatile() }
    }

    /// Volatile byte load.
    ///
    /// # Safety
    /// As [`DevPtr::write_u8`].
    #[inline(always)]
    pub unsafe fn read_u8(self, offset: usize) -> u8 {
        // SAFETY: per the caller's contract.
        unsafe { self.0.as_ptr().add(offset).read_volatile() }
    }

    /// Volatile copy of `src` to `self + offset`, byte by byte (inline data is not aligned).
    ///
    /// # Safety
    /// `src.len()` bytes at `self + offset` are inside the mapping.
    #[inline]
    pub unsafe fn write_bytes(self, offset: usize, src: &[u8]) {
        let dst = self.0.as_ptr().wrapping_add(offset);
        let mut i = 0;
        // Word stores where the destination allows; the tail byte by byte.
        while i + 8 <= src.len() && (dst as usize + i).is_multiple_of(8) {
            let word = u64::from_ne_bytes(src[i..i + 8].try_into().expect("8 bytes"));
            // SAFETY: inside the mapping (caller) and 8-byte aligned (checked).
            unsafe { dst.add(i).cast::<u64>().write_volatile(word) };
            i += 8;
        }
        while i < src.len() {
            // SAFETY: inside the mapping (caller).
            unsafe { dst.add(i).write_volatile(src[i]) };
            i += 1;
        }
    }

    /// Volatile copy of `dst.len()` bytes from `self + offset`.
    ///
    /// # Safety
    /// `dst.len()` bytes at `self + offset` are inside the mapping.
    #[inline]
    pub unsafe fn read_bytes(self, offset: usize, dst: &mut [u8]) {
        let src = self.0.as_ptr().wrapping_add(offset);
        for (i, b) in dst.iter_mut().enumerate() {
            // SAFETY: inside the mapping (caller).
            *b = unsafe { src.add(i).read_volatile() };
        }
    }
}

/// Makes the queue entries written so far visible to the device before the doorbell
/// record that announces them (`udma_to_device_barrier`): x86 keeps stores in order, so a
/// compiler barrier; arm64 `dmb oshst`.
#[inline(always)]
pub fn to_device_barrier() {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction; no memory is accessed.
    unsafe {
        std::arch::asm!("dmb oshst", options(nostack, preserves_flags))
    };
    compiler_fence(Ordering::SeqCst);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    std::sync::atomic::fence(Ordering::SeqCst);
}

/// Orders the read of a CQE's ownership byte before the reads of its other fields
/// (`udma_from_device_barrier`): on x86 a compiler barrier, arm64 `dmb oshld`.
///
/// x86 keeps loads in order and DMA to write-back memory is coherent, so nothing but the
/// compiler needs holding back: Linux's `dma_rmb()` and DPDK's `rte_io_rmb()` are compiler
/// barriers there, and the kernel's mlx5 driver uses `dma_rmb()` at this very point.
/// rdma-core issues an `lfence`, which dispatch-serialises the core: it cost 11-17 ns a
/// message in `driver_loopback` (122-128 against 108-111 ns, alternated builds).
#[inline(always)]
pub fn from_device_barrier() {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction; no memory is accessed.
    unsafe {
        std::arch::asm!("dmb oshld", options(nostack, preserves_flags))
    };
    compiler_fence(Ordering::SeqCst);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    std::sync::atomic::fence(Ordering::SeqCst);
}

/// Orders stores to write-combining UAR memory (BlueFlame, doorbells) against everything
/// before and after (`mmio_wc_start` / `mmio_flush_writes`): x86 `sfence`, arm64 `dsb st`.
#[inline(always)]
pub fn wc_barrier() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a barrier instruction; no memory is accessed.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction; no memory is accessed.
    unsafe {
        std::arch::asm!("dsb st", options(nostack, preserves_flags))
    };
    compiler_fence(Ordering::SeqCst);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    std::sync::atomic::fence(Ordering::SeqCst);
}
