//! Shared receive queues: receives posted once, consumed by whichever endpoint created
//! with the SRQ gets a message first. A receive's wr_id is the consumer's cookie (SRQ
//! receives complete in any order; their events need nothing else).

use crate::error::{DatError, DatResult};
use crate::lmr::LmrTriplet;
use crate::pz::Pz;
use ferrodat_abi::dat::{ret, srq_state, subtype};
use ferrodat_driver::work_request::{PostErrorReason, RecvWr, Sge};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

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
    /// `max_recv_dtos`: receives it may hold (`dat_srq_resize` changes it within what the
    /// device granted).
    max_recv_dtos: AtomicU32,
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
        let max_recv_dtos = AtomicU32::new(srq.max_wr());
        Ok(Srq {
            inner: Arc::new(SrqInner {
                pz: pz.clone(),
                srq,
                max_recv_iov: max_recv_iov.max(1),
                max_recv_dtos,
            }),
        })
    }

    /// Its PZ.
    pub fn pz(&self) -> &Pz {
        &self.inner.pz
    }

    /// `dat_srq_query`: receives it holds.
    pub fn max_recv_dtos(&self) -> u32 {
        self.inner.max_recv_dtos.load(Ordering::Relaxed)
    }

    pub(crate) fn driver(&self) -> &ferrodat_driver::Srq {
        &self.inner.srq
    }

    /// The most segments a receive may have here.
    pub fn recv_iov_limit(&self) -> usize {
        self.inner.max_recv_iov as usize
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
        let limit = self.max_recv_dtos();
        if self.inner.srq.outstanding() >= limit {
            return Err(DatError::insufficient_resources(subtype::RESOURCE_SRQ).with_detail(
                format!(
                    "dat_srq_post_recv: the SRQ holds its max_recv_dtos ({limit}) receives; \
                     wait for completions or dat_srq_resize it"
                ),
            ));
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

// ----- query, resize, low watermark, free (dat_srq_*) -----

/// `DAT_SRQ_PARAM`, as `dat_srq_query` reports it.
#[derive(Clone, Debug)]
pub struct SrqParam {
    /// `ia_handle`.
    pub ia: crate::ia::Ia,
    /// `srq_state`: `DAT_SRQ_STATE_OPERATIONAL` (the device reports no SRQ errors to us).
    pub srq_state: u32,
    /// `pz_handle`.
    pub pz: Pz,
    /// `max_recv_dtos`.
    pub max_recv_dtos: u32,
    /// `max_recv_iov`.
    pub max_recv_iov: u32,
    /// `low_watermark`: `DAT_SRQ_LW_DEFAULT` (0; low watermarks are not offered).
    pub low_watermark: u32,
    /// `available_dto_count`: `None` (`DAT_VALUE_UNKNOWN`): which posted receives an
    /// endpoint has taken is known only when they complete.
    pub available_dto_count: Option<u32>,
    /// `outstanding_dto_count`: receives posted and not yet completed (reaped from a CQ).
    pub outstanding_dto_count: u32,
}

impl Srq {
    /// `dat_srq_query`: every field of `DAT_SRQ_PARAM`.
    pub fn query(&self) -> SrqParam {
        SrqParam {
            ia: self.inner.pz.ia().clone(),
            srq_state: srq_state::OPERATIONAL,
            pz: self.inner.pz.clone(),
            max_recv_dtos: self.max_recv_dtos(),
            max_recv_iov: self.inner.max_recv_iov,
            low_watermark: 0,
            available_dto_count: None,
            outstanding_dto_count: self.inner.srq.outstanding(),
        }
    }

    /// `dat_srq_resize(srq, max_recv_dtos)`: no posted receive is lost. Refused with
    /// `DAT_INVALID_STATE` below the receives outstanding (posted and not yet reaped), as
    /// the DAT spec says. The device cannot grow an SRQ (mlx5 has no MODIFY_SRQ of its
    /// size), so sizes up to what CREATE_SRQ granted are honoured and more is
    /// `DAT_INSUFFICIENT_RESOURCES`: create an SRQ of the size needed.
    pub fn resize(&self, max_recv_dtos: u32) -> DatResult<()> {
        let ia_max = self.inner.pz.ia().attr().max_recv_per_srq;
        if max_recv_dtos == 0 || max_recv_dtos > ia_max {
            return Err(DatError::invalid_parameter(2).with_detail(format!(
                "dat_srq_resize: {max_recv_dtos} receives; give 1 to the IA's \
                 max_recv_per_srq {ia_max}"
            )));
        }
        let outstanding = self.inner.srq.outstanding();
        if max_recv_dtos < outstanding {
            return Err(DatError::invalid_state(subtype::NO_SUBTYPE).with_detail(format!(
                "dat_srq_resize: {outstanding} receives are outstanding, more than \
                 {max_recv_dtos}; reap completions first"
            )));
        }
        let granted = self.inner.srq.max_wr();
        if max_recv_dtos > granted {
            return Err(DatError::insufficient_resources(subtype::RESOURCE_SRQ).with_detail(
                format!(
                    "dat_srq_resize: {max_recv_dtos} receives, and the device gave this SRQ \
                     room for {granted} and cannot grow it; create a larger SRQ"
                ),
            ));
        }
        self.inner.max_recv_dtos.store(max_recv_dtos, Ordering::Relaxed);
        Ok(())
    }

    /// `dat_srq_set_lw`: low watermarks are not offered (`srq_watermarks_supported` is 0),
    /// which the man page answers with `DAT_MODEL_NOT_SUPPORTED` (OFA dapl:
    /// `DAT_NOT_IMPLEMENTED`). The argument is checked first (at most `max_recv_dtos`).
    ///
    /// Why not offered: the device would raise SRQ_LIMIT_REACHED on the context's async
    /// channel (the driver can arm it), but the engine reads no device async events yet,
    /// and DAT names the event only by its reason (`DAT_SRQ_LOW_WATERMARK_EVENT`), not by
    /// an event number.
    pub fn set_lw(&self, low_watermark: u32) -> DatResult<()> {
        let max = self.max_recv_dtos();
        if low_watermark > max {
            return Err(DatError::invalid_parameter(2).with_detail(format!(
                "dat_srq_set_lw: low watermark {low_watermark} above max_recv_dtos {max}"
            )));
        }
        Err(DatError::new(ret::MODEL_NOT_SUPPORTED, subtype::NO_SUBTYPE).with_detail(
            "dat_srq_set_lw: this provider offers no SRQ low watermark event \
             (srq_watermarks_supported is 0); watch outstanding_dto_count with dat_srq_query",
        ))
    }

    /// `dat_srq_free`: refused while an endpoint uses the SRQ
    /// (`DAT_INVALID_STATE/SRQ_IN_USE`; the caller keeps its handle; an engine thread's
    /// momentary hold through a freed endpoint is waited out); DESTROY_SRQ runs when the
    /// last handle goes.
    pub fn free(self) -> Result<(), (Srq, DatError)> {
        let users = crate::transient_hold::other_holders(&self.inner);
        if users > 0 {
            let e = DatError::invalid_state(subtype::INVALID_STATE_SRQ_IN_USE).with_detail(
                format!("dat_srq_free: {users} endpoint(s) still use the SRQ; free them first"),
            );
            return Err((self, e));
        }
        Ok(())
    }
}
