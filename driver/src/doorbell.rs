//! Telling the device about new work: the BlueFlame register a QP rings, the CQ arm
//! doorbell, and the two model entry points softhca needs where silicon notices by itself.

use crate::mmio::{DevPtr, wc_barrier};

/// What the data path tells the device model besides the stores hardware sees: softhca
/// cannot snoop a UAR store, so after one the driver says where it wrote; and when a poll
/// finds nothing, the model may need the caller's thread to move packets. On hardware both
/// are no-ops. Implemented by the uverbs channel; the data path is generic over
/// it, so there is no virtual call per post or poll.
pub trait Model {
    /// 8 bytes were just stored to UAR page `uar_page` at byte `offset`; `stored` gives them
    /// (for a BlueFlame copy: its first 8, the control segment's) to a model that needs
    /// them, and costs nothing on hardware, which does not call it. The value comes from
    /// the storer, not from a read-back, because threads share a page's CQ doorbell: a
    /// read-back could find another thread's later store.
    fn doorbell_rung(&self, uar_page: u32, offset: u32, stored: impl FnOnce() -> [u8; 8]);
    /// A poll found the CQ empty; true if the model made progress (worth polling again).
    fn progress(&self) -> bool;
}

/// Real hardware: the HCA sees the stores.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hardware;

impl Model for Hardware {
    #[inline(always)]
    fn doorbell_rung(&self, _: u32, _: u32, _: impl FnOnce() -> [u8; 8]) {}
    #[inline(always)]
    fn progress(&self) -> bool {
        false
    }
}

/// One BlueFlame register (a "bfreg") as a QP uses it: two halves of `buf_size` bytes,
/// rung alternately; `buf_size` 0 means a doorbell-only register (bfreg 0, shared).
#[derive(Debug)]
pub struct BlueFlame {
    reg: DevPtr,
    buf_size: u32,
    /// Which half is next (0 or `buf_size`).
    offset: u32,
    uar_page: u32,
    offset_in_page: u32,
}

impl BlueFlame {
    /// A BlueFlame copy moves whole 64-byte blocks, so `buf_size` is taken down to whole
    /// blocks (0, doorbell only, if less than one): a copy never passes its half.
    ///
    /// # Safety
    /// `reg` is the register's address in a mapped UAR page (`uar_page`, at
    /// `offset_in_page`), with `2 * buf_size` bytes (at least 8) writable from there, and
    /// the mapping outlives this value.
    pub unsafe fn new(reg: DevPtr, buf_size: u32, uar_page: u32, offset_in_page: u32) -> BlueFlame {
        let buf_size = buf_size & !63;
        BlueFlame { reg, buf_size, offset: 0, uar_page, offset_in_page }
    }

    /// Bytes of WQE one BlueFlame write may carry (0: doorbell only).
    #[inline(always)]
    pub fn buf_size(&self) -> u32 {
        self.buf_size
    }

    /// Rings with the first 8 bytes of the last control segment (`ctrl_head`, memory
    /// order), after the doorbell record was updated.
    #[inline(always)]
    pub fn ring_doorbell(&mut self, ctrl_head: u64, model: &impl Model) {
        let at = self.offset;
        wc_barrier();
        // SAFETY: 8 bytes at `offset` (0 or buf_size) are inside the register (`new`).
        unsafe { self.reg.write_u64(at as usize, ctrl_head) };
        wc_barrier();
        self.offset ^= self.buf_size;
        model.doorbell_rung(self.uar_page, self.offset_in_page + at, || ctrl_head.to_ne_bytes());
    }

    /// Rings by copying a whole WQE into the register: `chunks` 64-byte blocks, produced by
    /// `block(i)` (the WQE may wrap around the ring, so the caller hands out blocks).
    #[inline(always)]
    pub fn ring_blueflame(
        &mut self,
        chunks: usize,
        block: impl Fn(usize) -> DevPtr,
        model: &impl Model,
    ) {
        let at = self.offset as usize;
        wc_barrier();
        for c in 0..chunks {
            let src = block(c);
            for w in 0..4 {
                // SAFETY: `src` is a 64-byte block of the send ring; the destination is
                // inside the register half: the caller keeps the WQE within buf_size, a
                // whole number of blocks (`new`), so chunks * 64 <= buf_size.
                unsafe { self.reg.write_u128(at + c * 64 + w * 16, src.read_u128(w * 16)) };
            }
        }
        wc_barrier();
        self.offset ^= self.buf_size;
        model.doorbell_rung(self.uar_page, self.offset_in_page + at as u32, || {
            // SAFETY: the first 8 bytes of the first block, which the loop just copied.
            unsafe { block(0).read_u64(0) }.to_ne_bytes()
        });
    }
}

/// The CQ doorbell of a UAR page (offset 0x20): where arm requests go.
#[derive(Clone, Copy, Debug)]
pub struct CqDoorbell {
    page: DevPtr,
    uar_page: u32,
}

impl CqDoorbell {
    /// # Safety
    /// `page` is a mapped UAR page (index `uar_page` of the context) that outlives this.
    pub unsafe fn new(page: DevPtr, uar_page: u32) -> CqDoorbell {
        CqDoorbell { page, uar_page }
    }

    /// Stores the 64-bit arm doorbell (`cq_arm_doorbell`, written big-endian).
    #[inline]
    pub fn ring(&self, doorbell: u64, model: &impl Model) {
        let offset = ferrodat_abi::mlx5::CQ_DOORBELL;
        wc_barrier();
        // SAFETY: offset 0x20 of a mapped UAR page (`new`), 8-byte aligned.
        unsafe { self.page.write_u64(offset, doorbell.to_be()) };
        wc_barrier();
        model.doorbell_rung(self.uar_page, offset as u32, || doorbell.to_be_bytes());
    }
}

impl Model for crate::channel::Channel {
    #[inline(always)]
    fn doorbell_rung(&self, uar_page: u32, offset: u32, stored: impl FnOnce() -> [u8; 8]) {
        crate::channel::Channel::doorbell_rung(self, uar_page, offset, stored);
    }
    #[inline(always)]
    fn progress(&self) -> bool {
        crate::channel::Channel::progress(self)
    }
}
