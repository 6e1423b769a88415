//! The completion queue of an endpoint's DTO streams that have no EVD.
//!
//! DAT lets `recv_evd_handle` or `request_evd_handle` be `DAT_HANDLE_NULL`: the consumer
//! is not interested in those completions. The posts still work (receives take incoming
//! messages, requests go out); their completions make no event anywhere. A QP needs a CQ
//! for each queue, so such a stream completes into this private CQ, which nothing waits
//! on. OFA dapl parks such QPs on one empty CQ per device and gives the QP no queue on
//! that side (`dapls_ib_qp_alloc`); here the queue stays usable, so its completions must
//! be taken: the driver frees send and receive slots only as their completions are polled,
//! and the endpoint's cookie windows ([`crate::dto`]) only as they are retired.
//!
//! The endpoint drains this CQ (no thread does) at each post, at `dat_ep_get_status`,
//! `dat_ep_recv_query` and `dat_ep_modify`, and when an EVD harvests a flushed DTO of its
//! other stream (its QP is in ERR: maybe a DTO here failed). Every completion found
//! retires its cookie slot, and one that failed (not a flush) ends the connection as a
//! failed DTO does anywhere. The CQ holds as many entries as the
//! QP's two queues, and at most that many completions can be waiting (each is of a work
//! request still counted outstanding), so it never overflows.

use crate::error::{DatError, DatResult};
use crate::evd::cq_source::EpCompletions;
use crate::ia::Ia;
use crate::plain_mutex::{PlainGuard, PlainMutex};
use ferrodat_abi::dat::subtype;
use ferrodat_driver::completion::{WcOpcode, WcStatus, WorkCompletion};
use ferrodat_driver::{Cq, CqOptions, QpCaps};
use std::sync::atomic::{AtomicBool, Ordering};

/// A private CQ for the streams of one endpoint that have no EVD.
#[derive(Debug)]
pub(super) struct SilentCq {
    cq: PlainMutex<Cq>,
    /// The endpoint's requests complete here now (its request EVD is NULL): they are then
    /// posted signalled whatever the consumer's flags say, so that each one's completion
    /// frees its send queue slot (an unsignalled request waits for a later signalled one,
    /// which a consumer that wants no completions may never post).
    requests: AtomicBool,
}

impl SilentCq {
    /// A CQ on `ia`'s device with room for every completion a QP of `caps` can have
    /// outstanding on both queues.
    pub(super) fn new(ia: &Ia, caps: &QpCaps, verb: &str) -> DatResult<SilentCq> {
        let cq = Cq::new(ia.context(), &CqOptions { cqe: entries(caps), ..Default::default() })
            .map_err(|e| cq_error(verb, e))?;
        Ok(SilentCq { cq: PlainMutex::new(cq), requests: AtomicBool::new(false) })
    }

    /// Makes room for every completion a QP of the caps the device granted (`caps`, which
    /// may exceed those asked for at create, and which `dat_ep_modify` may raise the
    /// limits to) can have outstanding.
    pub(super) fn fit(&self, caps: &QpCaps, verb: &str) -> DatResult<()> {
        let cqe = entries(caps);
        let mut cq = self.cq.lock();
        if cq.ncqe() < cqe {
            cq.resize(cqe).map_err(|e| cq_error(verb, e))?;
        }
        Ok(())
    }

    /// The CQ, locked (to create a QP on it).
    pub(super) fn cq(&self) -> PlainGuard<'_, Cq> {
        self.cq.lock()
    }

    /// Whether the endpoint's requests complete here.
    #[inline(always)]
    pub(super) fn has_requests(&self) -> bool {
        self.requests.load(Ordering::Relaxed)
    }

    /// The endpoint's requests complete here from now on, or no longer.
    pub(super) fn set_requests(&self, requests: bool) {
        self.requests.store(requests, Ordering::Relaxed);
    }

    /// Takes every completion waiting, retiring each one's cookie slot in `ep`'s windows
    /// (and, in the driver, its queue slot). Returns whether one of them failed for a
    /// reason other than a flush.
    pub(super) fn drain(&self, ep: &EpCompletions) -> bool {
        let mut cq = self.cq.lock();
        let mut wcs = [WorkCompletion::default(); 16];
        let mut failed = false;
        loop {
            let n = cq.poll(&mut wcs);
            for wc in &wcs[..n] {
                // The driver reports a failed receive as a receive too.
                let received = matches!(wc.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm);
                match (&ep.receives, received) {
                    (_, false) => {
                        let _ = ep.requests.complete(wc.wr_id);
                    }
                    (Some(ring), true) => {
                        let _ = ring.complete(wc.wr_id);
                    }
                    // An SRQ's receive: nothing of the endpoint's to retire (not offered
                    // without a recv EVD anyway).
                    (None, true) => {}
                }
                failed |= !wc.is_ok() && wc.status != WcStatus::Flushed;
            }
            if n < wcs.len() {
                return failed;
            }
        }
    }

    /// Drops the completions an old incarnation of a reset QP left here (before the QP
    /// can make new ones with the same slots), as an EVD's CQ does.
    pub(super) fn forget_reset_qps(&self) {
        self.cq.lock().poll(&mut []);
    }
}

/// Entries for every completion a QP of `caps` can have outstanding on both queues.
fn entries(caps: &QpCaps) -> u32 {
    caps.max_send_wr.saturating_add(caps.max_recv_wr)
}

fn cq_error(verb: &str, e: ferrodat_driver::Error) -> DatError {
    DatError::insufficient_resources(subtype::RESOURCE_TEP)
        .with_detail(format!("{verb}: the CQ for the completions of a NULL DTO EVD: {e}"))
}
