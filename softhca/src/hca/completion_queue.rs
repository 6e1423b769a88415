//! A completion queue as the HCA runs it: the producer side of the ring, arming, and the
//! one completion event per arm.

use super::cqe::{CqError, CqProducer};
use super::events::EventSink;
use ferrodat_abi::mlx5::{
    CQ_ARM_SN_MASK, CQ_ARM_SN_SHIFT, CQ_CI_MASK, CQ_DB_REQ_NOT_SOL, CQE_SE_MASK, cqe_opcode,
};
use ferrodat_abi::uverbs::event;
use std::sync::Arc;

/// How the CQ is armed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Armed {
    No,
    Next,
    Solicited,
}

/// The HCA's state of one CQ.
pub struct CompletionQueue {
    /// CQ number.
    pub cqn: u32,
    /// The consumer's handle for it (the value completion events carry).
    pub user_handle: u64,
    producer: CqProducer,
    channel: Option<Arc<dyn EventSink>>,
    async_events: Option<Arc<dyn EventSink>>,
    armed: Armed,
    /// The sequence number of the arm that last produced an event: a repeated arm with
    /// it is stale and ignored, as the device does.
    fired_sn: Option<u32>,
    events_reported: u32,
    async_events_reported: u32,
    broken: bool,
}

impl std::fmt::Debug for CompletionQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletionQueue")
            .field("cqn", &self.cqn)
            .field("producer_index", &self.producer.producer_index())
            .field("armed", &self.armed)
            .finish()
    }
}

impl CompletionQueue {
    /// A CQ writing into `producer`'s ring; `channel` receives completion events,
    /// `async_events` the CQ error event.
    pub fn new(
        cqn: u32,
        user_handle: u64,
        producer: CqProducer,
        channel: Option<Arc<dyn EventSink>>,
        async_events: Option<Arc<dyn EventSink>>,
    ) -> Self {
        CompletionQueue {
            cqn,
            user_handle,
            producer,
            channel,
            async_events,
            armed: Armed::No,
            fired_sn: None,
            events_reported: 0,
            async_events_reported: 0,
            broken: false,
        }
    }

    /// Completion events delivered so far (DESTROY_CQ reports it).
    pub fn events_reported(&self) -> u32 {
        self.events_reported
    }

    /// Asynchronous events (CQ error) delivered so far.
    pub fn async_events_reported(&self) -> u32 {
        self.async_events_reported
    }

    /// True once the CQ overran: it accepts no more entries, as the device stops it.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Writes one CQE, then fires the channel if the CQ is armed for it.
    #[inline]
    pub fn push(&mut self, cqe: &[u8; 64]) -> Result<(), CqError> {
        if self.broken {
            return Err(CqError::Overrun);
        }
        match self.producer.push(cqe) {
            Ok(()) => {}
            Err(CqError::Overrun) => {
                self.broken = true;
                if let Some(sink) = &self.async_events {
                    sink.async_event(self.user_handle, event::CQ_ERR);
                    self.async_events_reported += 1;
                }
                return Err(CqError::Overrun);
            }
            Err(e) => return Err(e),
        }
        if self.armed != Armed::No && self.triggers(cqe) {
            self.fire();
        }
        Ok(())
    }

    fn triggers(&self, cqe: &[u8; 64]) -> bool {
        let op = cqe[63] >> 4;
        self.armed == Armed::Next
            || cqe[63] & CQE_SE_MASK != 0
            || op == cqe_opcode::REQ_ERR
            || op == cqe_opcode::RESP_ERR
    }

    fn fire(&mut self) {
        self.armed = Armed::No;
        if let Some(channel) = &self.channel
            && channel.completion_event(self.user_handle)
        {
            self.events_reported += 1;
        }
    }

    /// RESIZE_CQ: the marker into the current ring, then on in the new one.
    pub fn resize(
        &mut self,
        buf: super::app_memory::AppSpan,
        ncqe: u32,
        cqe_size: usize,
    ) -> Result<(), CqError> {
        self.producer.resize(buf, ncqe, cqe_size)
    }

    /// Doorbell record word 1 (`sn << 28 | cmd | ci`) as the consumer last wrote it.
    pub fn arm_word(&self) -> Option<u32> {
        self.producer.arm_word().ok()
    }

    /// The consumer rang the CQ doorbell (UAR offset 0x20) with `arm_word` =
    /// `sn << 28 | cmd | ci`. If entries past `ci` already wait, the event fires at once,
    /// so a consumer that arms after a completion arrived does not sleep forever.
    pub fn arm(&mut self, arm_word: u32) {
        let sn = (arm_word >> CQ_ARM_SN_SHIFT) & CQ_ARM_SN_MASK;
        if self.armed == Armed::No && self.fired_sn == Some(sn) {
            return;
        }
        self.fired_sn = Some(sn);
        self.armed = if arm_word & CQ_DB_REQ_NOT_SOL != 0 { Armed::Solicited } else { Armed::Next };
        let ci = arm_word & CQ_CI_MASK;
        let waiting = self.producer.producer_index().wrapping_sub(ci) & CQ_CI_MASK;
        // A solicited arm needs a solicited or error entry; without reading them back we
        // fire only for the plain arm (the consumer polls the CQ after any event anyway).
        if waiting != 0 && waiting <= (1 << 23) && self.armed == Armed::Next {
            self.fire();
        }
    }
}
