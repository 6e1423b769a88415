//! A shared receive queue as the HCA runs it: it follows the free list the driver links
//! through the entries' next segments, and raises the limit event when the number of
//! posted entries drops below the armed limit.

use super::app_memory::AppSpan;
use super::events::EventSink;
use super::recv_wqe::srq_next_index;
use ferrodat_abi::uverbs::event;
use std::sync::Arc;

/// The HCA's state of one SRQ.
pub struct SharedReceiveQueue {
    /// SRQ number.
    pub srqn: u32,
    /// The consumer's handle (async events carry it).
    pub user_handle: u64,
    /// The PD receive buffers must belong to.
    pub pdn: u32,
    buf: AppSpan,
    wqe_count: u32,
    wqe_shift: u32,
    dbrec: AppSpan,
    /// The entry the HCA takes next.
    head: u16,
    /// Entries taken so far (16-bit, like the driver's counter in the doorbell record).
    taken: u16,
    limit: u32,
    async_events: Option<Arc<dyn EventSink>>,
    async_events_reported: u32,
}

/// What CREATE_SRQ tells the HCA.
#[derive(Clone, Copy, Debug)]
pub struct SrqSetup {
    /// SRQ number.
    pub srqn: u32,
    /// The consumer's handle.
    pub user_handle: u64,
    /// Its PD.
    pub pdn: u32,
    /// The entries: `wqe_count << wqe_shift` bytes.
    pub buf: AppSpan,
    /// Number of entries (a power of two).
    pub wqe_count: u32,
    /// log2 of the entry size.
    pub wqe_shift: u32,
    /// The doorbell record: word 0 counts the entries posted (16 bits).
    pub dbrec: AppSpan,
}

/// One receive entry taken from an SRQ or RQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiveEntry {
    /// Its index: the CQE's wqe_counter.
    pub index: u16,
    /// Where its bytes are.
    pub bytes: AppSpan,
}

impl SharedReceiveQueue {
    /// An SRQ as CREATE_SRQ described it.
    pub fn new(setup: SrqSetup, async_events: Option<Arc<dyn EventSink>>) -> Self {
        let SrqSetup { srqn, user_handle, pdn, buf, wqe_count, wqe_shift, dbrec } = setup;
        SharedReceiveQueue {
            srqn,
            user_handle,
            pdn,
            buf,
            wqe_count,
            wqe_shift,
            dbrec,
            head: 0,
            taken: 0,
            limit: 0,
            async_events,
            async_events_reported: 0,
        }
    }

    /// Entries posted and not yet taken.
    pub fn available(&self) -> u16 {
        let posted = self.dbrec.read_be32(0).map(|c| c as u16).unwrap_or(self.taken);
        posted.wrapping_sub(self.taken)
    }

    /// Asynchronous events (limit reached) delivered so far.
    pub fn async_events_reported(&self) -> u32 {
        self.async_events_reported
    }

    /// Arms the limit event (MODIFY_SRQ with a limit; 0 disarms).
    pub fn set_limit(&mut self, limit: u32) {
        self.limit = limit;
    }

    /// The armed limit.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Takes the next posted entry, following the free-list links.
    pub fn take(&mut self) -> Option<ReceiveEntry> {
        if self.available() == 0 {
            return None;
        }
        let stride = 1usize << self.wqe_shift;
        let index = self.head;
        let bytes =
            self.buf.sub(usize::from(index) % self.wqe_count as usize * stride, stride).ok()?;
        let mut next_seg = [0u8; 16];
        bytes.read(0, &mut next_seg).ok()?;
        self.head = srq_next_index(&next_seg)? % self.wqe_count as u16;
        self.taken = self.taken.wrapping_add(1);
        if self.limit != 0 && u32::from(self.available()) < self.limit {
            self.limit = 0;
            if let Some(sink) = &self.async_events
                && sink.async_event(self.user_handle, event::SRQ_LIMIT_REACHED)
            {
                self.async_events_reported += 1;
            }
        }
        Some(ReceiveEntry { index, bytes })
    }
}
