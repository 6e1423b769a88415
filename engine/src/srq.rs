//! Shared receive queues: receives posted once, consumed by whichever endpoint created
//! with the SRQ gets a message first. A receive's wr_id is the consumer's cookie (SRQ
//! receives complete in any order; their events need nothing else).

use crate::error::{DatError, DatResult};
use crate::lmr::LmrTriplet;
use crate::pz::Pz;
use ferrodat_abi::dat::subtype;
use ferrodat_driver::work_request::{PostErrorReason, RecvWr, Sge};
use std::sync::Arc;

/// An SRQ. Cheap to clone; endpoints created with it hold a clone.
#[derive(Clone, Debug)]
pub struct Srq {
    inner: Arc<SrqInner>,
}

#[derive(Debug)]
struct SrqInner {
    pz: Pz,
    srq: ferrodat_driver::Srq,
    max_recv_iov: u32,
}

impl Srq {
    /// `dat_srq_create(ia, pz, {max_recv_dtos, max_recv_iov, low_watermark})`.
    pub fn create(pz: &Pz, max_recv_dtos: u32, max_recv_iov: u32) -> DatResult<Srq> {
        let srq = ferrodat_driver::Srq::new(pz.pd(), max_recv_dtos, max_recv_iov.max(1)).map_err(
            |e| {
                DatError::insufficient_resources(subtype::RESOURCE_SRQ)
                    .with_detail(format!("dat_srq_create: {e}"))
            },
        )?;
        Ok(Srq {
            inner: Arc::new(SrqInner { pz: pz.clone(), srq, max_recv_iov: max_recv_iov.max(1) }),
        })
    }

    /// Its PZ.
    pub fn pz(&self) -> &Pz {
        &self.inner.pz
    }

    /// `dat_srq_query`: receives it holds.
    pub fn max_recv_dtos(&self) -> u32 {
        self.inner.srq.max_wr()
    }

    pub(crate) fn driver(&self) -> &ferrodat_driver::Srq {
        &self.inner.srq
    }

    /// `dat_srq_post_recv`.
    pub fn post_recv(&self, local: &[LmrTriplet], cookie: u64) -> DatResult<()> {
        if local.len() > self.inner.max_recv_iov as usize {
            return Err(DatError::invalid_parameter(2).with_detail(format!(
                "dat_srq_post_recv: {} segments, the SRQ takes at most {}",
                local.len(),
                self.inner.max_recv_iov
            )));
        }
        let mut sges = Vec::with_capacity(local.len());
        for t in local {
            let len = u32::try_from(t.segment_length).map_err(|_| {
                DatError::invalid_parameter(2).with_detail(format!(
                    "dat_srq_post_recv: a segment of {} bytes",
                    t.segment_length
                ))
            })?;
            // SAFETY: the triplet names memory the consumer registered; the device checks
            // the key and bounds and fails the receive otherwise, touching nothing.
            sges.push(unsafe { Sge::from_raw(t.virtual_address, len, t.lmr_context) });
        }
        self.inner.srq.post_recv(&[RecvWr { wr_id: cookie, sges: &sges }]).map_err(|e| {
            let d = match e.reason {
                PostErrorReason::QueueFull { .. } => {
                    DatError::insufficient_resources(subtype::RESOURCE_SRQ)
                }
                _ => DatError::invalid_parameter(2),
            };
            d.with_detail(format!("dat_srq_post_recv: {e}"))
        })
    }
}
