//! A completion queue as the HCA runs it: the producer side of the ring, arming, and the
//! one completion event per arm.

use super::cqe::{CqError, CqProducer};
use super::engine::CqFlags;
use super::events::EventSink;
use ferrodat_abi::mlx5::{
    CQ_ARM_SN_MASK, CQ_ARM_SN_SHIFT, CQ_CI_MASK, CQ_DB_REQ_NOT_SOL, CQE_SE_MASK, Cqe64, cqe_opcode,
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
    flags: CqFlags,
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
            flags: CqFlags::default(),
        }
    }

    /// The same CQ with CREATE_CQ's `flags`.
    pub fn with_flags(mut self, flags: CqFlags) -> Self {
        self.flags = flags;
        self
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
        let mut stamped;
        // An error CQE has no timestamp: its bytes 48-55 hold the syndromes (`mlx5_err_cqe`).
        let cqe = if self.flags.timestamps && !is_error_cqe(cqe) {
            stamped = *cqe;
            stamped[CQE_TIMESTAMP..CQE_TIMESTAMP + 8].copy_from_slice(&core_clock().to_be_bytes());
            &stamped
        } else {
            cqe
        };
        match self.producer.push(cqe, self.flags.ignore_overrun) {
            Ok(()) => {}
            Err(CqError::Overrun) => {
                self.broken = true;
                if let Some(sink) = &self.async_events
                    && sink.async_event(self.user_handle, event::CQ_ERR)
                {
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

/// Byte offset of the timestamp in a CQE64.
const CQE_TIMESTAMP: usize = std::mem::offset_of!(Cqe64, timestamp);

/// The HCA core clock now, in ticks of [`crate::kernel::caps::HCA_CORE_CLOCK_KHZ`], from
/// CLOCK_MONOTONIC: one clock for every process on the host, as a device's is for all its
/// users.
fn core_clock() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let ns = (ts.tv_sec as u128) * 1_000_000_000 + ts.tv_nsec as u128;
    (ns * u128::from(crate::kernel::caps::HCA_CORE_CLOCK_KHZ) / 1_000_000) as u64
}

/// A requester or responder error CQE (by its opcode, the high nibble of byte 63).
#[cold]
fn is_error_cqe(cqe: &[u8; 64]) -> bool {
    matches!(cqe[63] >> 4, cqe_opcode::REQ_ERR | cqe_opcode::RESP_ERR)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hca::app_memory::AppSpan;
    use crate::hca::cqe::{Completion, success_cqe};
    use ferrodat_abi::mlx5::opcode;

    /// A CQ of `ncqe` entries over `buf` and `db` (which outlive it), with `flags`.
    fn cq(buf: &mut [u8], db: &mut [u8; 8], ncqe: u32, flags: CqFlags) -> CompletionQueue {
        // SAFETY: both buffers outlive the CQ (the callers keep them).
        let (b, d) = unsafe {
            (
                AppSpan::new(buf.as_mut_ptr() as usize, buf.len()),
                AppSpan::new(db.as_mut_ptr() as usize, 8),
            )
        };
        CompletionQueue::new(1, 7, CqProducer::new(b, d, ncqe, 64), None, None).with_flags(flags)
    }

    fn completion() -> [u8; 64] {
        success_cqe(&Completion {
            cqe_opcode: cqe_opcode::REQ,
            wqe_opcode: opcode::SEND,
            qpn: 0x108,
            ..Default::default()
        })
    }

    fn timestamp(buf: &[u8], index: usize) -> u64 {
        let at = index * 64 + CQE_TIMESTAMP;
        u64::from_be_bytes(buf[at..at + 8].try_into().unwrap())
    }

    /// Counts the completion events a CQ delivers.
    #[derive(Default)]
    struct Counted(std::sync::atomic::AtomicU32);

    impl Counted {
        fn events(&self) -> u32 {
            self.0.load(std::sync::atomic::Ordering::Relaxed)
        }
    }

    impl EventSink for Counted {
        fn completion_event(&self, _user_handle: u64) -> bool {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            true
        }
        fn async_event(&self, _element: u64, _event_type: u32) -> bool {
            true
        }
    }

    #[test]
    fn a_solicited_arm_fires_for_a_solicited_receive_or_an_error_only() {
        use crate::hca::cqe::{ErrorCompletion, error_cqe};
        use ferrodat_abi::mlx5::{CQ_DB_REQ_NOT, cq_arm_word, cqe_syndrome};
        let (mut buf, mut db) = (vec![0u8; 16 * 64], [0u8; 8]);
        // SAFETY: both buffers outlive the CQ (dropped after it, at the end of the test).
        let (b, d) = unsafe {
            (
                AppSpan::new(buf.as_mut_ptr() as usize, buf.len()),
                AppSpan::new(db.as_mut_ptr() as usize, 8),
            )
        };
        let events = Arc::new(Counted::default());
        let sink: Arc<dyn EventSink> = events.clone();
        let mut cq = CompletionQueue::new(1, 7, CqProducer::new(b, d, 16, 64), Some(sink), None);
        let receive = |solicited| {
            success_cqe(&Completion {
                cqe_opcode: cqe_opcode::RESP_SEND,
                qpn: 0x108,
                solicited,
                ..Default::default()
            })
        };
        let flushed = |requester| {
            error_cqe(&ErrorCompletion {
                requester,
                syndrome: cqe_syndrome::WR_FLUSH_ERR,
                qpn: 0x108,
                ..Default::default()
            })
        };
        // Armed with the consumer caught up on everything pushed so far, under the next
        // sequence number.
        let arm = |cq: &mut CompletionQueue, sn: u32, cmd: u32| {
            let ci = cq.producer.producer_index();
            cq.arm(cq_arm_word(sn, cmd, ci));
        };

        // Successful sends and unsolicited receives leave a solicited arm armed.
        arm(&mut cq, 0, CQ_DB_REQ_NOT_SOL);
        cq.push(&completion()).unwrap();
        cq.push(&receive(false)).unwrap();
        assert_eq!(events.events(), 0, "no solicited or failed completion yet");
        // A receive of a SEND with the solicited bit fires it, once.
        cq.push(&receive(true)).unwrap();
        cq.push(&receive(true)).unwrap();
        assert_eq!(events.events(), 1, "one event per arm");
        // A flushed receive fires the next one, and a failed request the one after.
        arm(&mut cq, 1, CQ_DB_REQ_NOT_SOL);
        cq.push(&receive(false)).unwrap();
        assert_eq!(events.events(), 1);
        cq.push(&flushed(false)).unwrap();
        assert_eq!(events.events(), 2, "a flushed receive is a solicited completion");
        arm(&mut cq, 2, CQ_DB_REQ_NOT_SOL);
        cq.push(&completion()).unwrap();
        assert_eq!(events.events(), 2);
        cq.push(&flushed(true)).unwrap();
        assert_eq!(events.events(), 3, "so is a failed request");
        // A plain arm takes any completion.
        arm(&mut cq, 3, CQ_DB_REQ_NOT);
        cq.push(&completion()).unwrap();
        assert_eq!(events.events(), 4);
        assert_eq!(cq.events_reported(), 4);
    }

    #[test]
    fn cqes_carry_the_core_clock_only_when_the_cq_asked_for_timestamps() {
        let (mut buf, mut db) = (vec![0xf0u8; 4 * 64], [0u8; 8]);
        let mut plain = cq(&mut buf, &mut db, 4, CqFlags::default());
        plain.push(&completion()).unwrap();
        assert_eq!(timestamp(&buf, 0), 0);

        let (mut buf, mut db) = (vec![0xf0u8; 4 * 64], [0u8; 8]);
        let flags = CqFlags { timestamps: true, ..CqFlags::default() };
        let mut stamped = cq(&mut buf, &mut db, 4, flags);
        let before = core_clock();
        stamped.push(&completion()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        stamped.push(&completion()).unwrap();
        let (t0, t1) = (timestamp(&buf, 0), timestamp(&buf, 1));
        assert!(before <= t0 && t0 < t1, "{before} {t0} {t1}");
        // 2 ms of a 78.125 MHz clock is 156 250 ticks.
        assert!(t1 - t0 >= 156_250, "{}", t1 - t0);
    }

    #[test]
    fn error_cqes_keep_their_syndromes_when_the_cq_stamps_completions() {
        use crate::hca::cqe::{ErrorCompletion, error_cqe};
        use ferrodat_abi::mlx5::cqe_syndrome;
        let (mut buf, mut db) = (vec![0xf0u8; 4 * 64], [0u8; 8]);
        let flags = CqFlags { timestamps: true, ..CqFlags::default() };
        let mut stamped = cq(&mut buf, &mut db, 4, flags);
        let failed = error_cqe(&ErrorCompletion {
            requester: true,
            syndrome: cqe_syndrome::REMOTE_ACCESS_ERR,
            qpn: 0x108,
            ..Default::default()
        });
        stamped.push(&failed).unwrap();
        drop(stamped);
        assert_eq!(buf[..64], failed[..64], "the error CQE as built, syndromes included");
    }

    #[test]
    fn a_cq_that_ignores_overrun_overwrites_instead_of_failing() {
        let (mut buf, mut db) = (vec![0xf0u8; 2 * 64], [0u8; 8]);
        let mut strict = cq(&mut buf, &mut db, 2, CqFlags::default());
        strict.push(&completion()).unwrap();
        strict.push(&completion()).unwrap();
        assert_eq!(strict.push(&completion()), Err(CqError::Overrun));
        assert!(strict.is_broken());

        let (mut buf, mut db) = (vec![0xf0u8; 2 * 64], [0u8; 8]);
        let flags = CqFlags { ignore_overrun: true, ..CqFlags::default() };
        let mut lenient = cq(&mut buf, &mut db, 2, flags);
        for _ in 0..5 {
            lenient.push(&completion()).unwrap();
        }
        assert!(!lenient.is_broken());
        assert_eq!(lenient.async_events_reported(), 0, "no CQ error");
        // Entry 4 (third pass, owner bit 0) went over entry 2 in slot 0.
        assert_eq!(buf[63] & 1, 0);
    }
}
