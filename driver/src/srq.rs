//! Shared receive queues (basic SRQs): CREATE_SRQ with rdma-core's buffer layout,
//! MODIFY_SRQ (limit), DESTROY_SRQ. QUERY_SRQ is not offered: softhca does not model it.

use crate::dma::{DbRecord, DmaBuf};
use crate::error::{Error, Result};
use crate::mmio::DevPtr;
use crate::pd::Pd;
use crate::srq_ring::{SrqGeometry as RingGeometry, SrqRing};
use crate::user_index::UserIndex;
use crate::work_request::{PostError, RecvWr};
use ferrodat_abi::mlx5::{self, WqeSrqNextSeg};
use ferrodat_abi::uverbs::{self, cmd, srq_attr};
use std::ptr::NonNull;
use std::sync::Arc;
use zerocopy::IntoBytes;
use zerocopy::byteorder::big_endian::U16;

/// The SRQ's raw layout, for the data path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqGeometry {
    /// The WQE buffer: `wqe_cnt` entries of `1 << wqe_shift` bytes, each a
    /// [`WqeSrqNextSeg`] then `max_sge` data segments. Initially the free list links
    /// entry i to i + 1; head 0, tail `wqe_cnt - 1`.
    pub buf: NonNull<u8>,
    /// Entries (power of two).
    pub wqe_cnt: u32,
    /// log2 of the stride.
    pub wqe_shift: u32,
    /// Data segments per WQE.
    pub max_sge: u32,
    /// The doorbell record (`[0]` = WQE counter, big-endian).
    pub dbrec: NonNull<u8>,
    /// The SRQ number.
    pub srqn: u32,
    /// The user index (CQE version 1).
    pub uidx: u32,
}

// SAFETY: addresses into memory the Srq owns; the geometry grants no access by itself.
unsafe impl Send for SrqGeometry {}
// SAFETY: as above.
unsafe impl Sync for SrqGeometry {}

/// A shared receive queue. Cheap to clone; QPs using it hold a clone.
#[derive(Clone, Debug)]
pub struct Srq {
    pub(crate) inner: Arc<SrqInner>,
}

#[derive(Debug)]
pub(crate) struct SrqInner {
    handle: u32,
    geometry: SrqGeometry,
    max_wr: u32,
    user_handle: u64,
    pd: Pd,
    ring: Arc<SrqRing>,
    dbrec: DbRecord,
    _buf: DmaBuf,
    /// Given back when dropped, after DESTROY_SRQ.
    _user_index: UserIndex,
}

impl Srq {
    /// CREATE_SRQ for at least `max_wr` receives of `max_sge` SGEs: `roundup_pow2(max_wr + 1)`
    /// entries of `roundup_pow2(max(32, 16 + 16 * max_sge))` bytes, the free list linked.
    pub fn new(pd: &Pd, max_wr: u32, max_sge: u32) -> Result<Srq> {
        let ctx = pd.context();
        let a = ctx.attr();
        let max_desc_sge = (u32::from(a.max_rq_desc_sz).saturating_sub(16)) / 16;
        if max_wr == 0 || max_wr >= a.max_srq_recv_wr || max_sge == 0 || max_sge > max_desc_sge {
            return Err(Error::errno("CREATE_SRQ", libc::EINVAL)
                .with_detail(format!("max_wr {max_wr}, max_sge {max_sge}"))
                .with_hint(format!(
                    "1 <= max_wr < {} and 1 <= max_sge <= {max_desc_sge}",
                    a.max_srq_recv_wr
                )));
        }
        let cnt = (max_wr + 1).next_power_of_two();
        let stride = (16 + 16 * max_sge).max(32).next_power_of_two();
        let buf = DmaBuf::new(cnt as usize * stride as usize)?;
        for i in 0..cnt {
            let next = WqeSrqNextSeg {
                next_wqe_index: U16::new(((i + 1) & (cnt - 1)) as u16),
                ..Default::default()
            };
            buf.write((i * stride) as usize, next.as_bytes());
        }
        let dbrec = ctx.alloc_dbrec("CREATE_SRQ")?;
        let user_index = ctx.alloc_uidx("CREATE_SRQ")?;
        let uidx = user_index.get();
        let user_handle = ctx.alloc_user_handle();
        let req = uverbs::CreateSrq {
            user_handle,
            pd_handle: pd.handle(),
            max_wr: cnt - 1,
            max_sge,
            srq_limit: 0,
            ..Default::default()
        };
        let ucmd = mlx5::CreateSrq {
            buf_addr: buf.addr(),
            db_addr: dbrec.addr(),
            flags: 0,
            uidx,
            ..Default::default()
        };
        let out = size_of::<uverbs::CreateSrqResp>() + size_of::<mlx5::CreateSrqResp>();
        let r = ctx
            .run("CREATE_SRQ", cmd::CREATE_SRQ, req.as_bytes(), ucmd.as_bytes(), out)
            .map_err(|e| e.with_detail(format!("{cnt} entries of {stride} bytes")))?;
        let resp: uverbs::CreateSrqResp = crate::command::read("CREATE_SRQ", &r, 0)?;
        let m: mlx5::CreateSrqResp =
            crate::command::read("CREATE_SRQ", &r, size_of::<uverbs::CreateSrqResp>())?;
        let inner = SrqInner {
            handle: resp.srq_handle,
            geometry: SrqGeometry {
                buf: buf.as_ptr(),
                wqe_cnt: cnt,
                wqe_shift: stride.trailing_zeros(),
                max_sge,
                dbrec: dbrec.as_ptr(),
                srqn: m.srqn,
                uidx,
            },
            max_wr: resp.max_wr,
            user_handle,
            pd: pd.clone(),
            // SAFETY: the buffer and doorbell record live in `inner` next to the ring.
            ring: Arc::new(unsafe {
                SrqRing::new(RingGeometry {
                    ring: DevPtr::new(buf.as_ptr()),
                    wqe_cnt: cnt,
                    wqe_shift: stride.trailing_zeros(),
                    max_sge,
                    dbrec: DevPtr::new(dbrec.as_ptr()),
                })
            }),
            dbrec,
            _buf: buf,
            _user_index: user_index,
        };
        Ok(Srq { inner: Arc::new(inner) })
    }

    /// The SRQ number.
    pub fn srqn(&self) -> u32 {
        self.inner.geometry.srqn
    }

    /// Receives it holds (the device's `max_wr`).
    pub fn max_wr(&self) -> u32 {
        self.inner.max_wr
    }

    /// The user handle async events (SRQ_LIMIT_REACHED) carry.
    pub fn user_handle(&self) -> u64 {
        self.inner.user_handle
    }

    /// The raw layout for the data path.
    pub fn geometry(&self) -> &SrqGeometry {
        &self.inner.geometry
    }

    /// The doorbell record.
    pub fn dbrec(&self) -> &DbRecord {
        &self.inner.dbrec
    }

    /// The PD.
    pub fn pd(&self) -> &Pd {
        &self.inner.pd
    }

    pub(crate) fn handle(&self) -> u32 {
        self.inner.handle
    }

    pub(crate) fn ring(&self) -> &Arc<SrqRing> {
        &self.inner.ring
    }

    /// Posts receives to the SRQ (any thread; the SRQ's free list is behind a mutex, as
    /// several QPs and their pollers share it). The regions must stay registered until the
    /// receives complete: the SRQ, shared by clones, cannot tie them to a lifetime.
    pub fn post_recv(&self, wrs: &[RecvWr<'_, '_>]) -> std::result::Result<(), PostError> {
        self.inner.ring.post(wrs)
    }

    /// Receives posted and not yet completed.
    pub fn outstanding(&self) -> u32 {
        self.inner.ring.outstanding()
    }

    /// MODIFY_SRQ: arm the limit event (SRQ_LIMIT_REACHED when fewer than `limit` WQEs
    /// remain); 0 disarms.
    pub fn set_limit(&self, limit: u32) -> Result<()> {
        let req = uverbs::ModifySrq {
            srq_handle: self.inner.handle,
            attr_mask: srq_attr::LIMIT,
            max_wr: 0,
            srq_limit: limit,
        };
        self.inner
            .pd
            .context()
            .run("MODIFY_SRQ", cmd::MODIFY_SRQ, req.as_bytes(), &[], 0)
            .map(drop)
            .map_err(|e| e.with_detail(format!("srqn {:#x} limit {limit}", self.srqn())))
    }
}

impl Drop for SrqInner {
    fn drop(&mut self) {
        let req = uverbs::DestroySrq { srq_handle: self.handle, ..Default::default() };
        self.pd.context().run_on_drop(
            "DESTROY_SRQ",
            cmd::DESTROY_SRQ,
            req.as_bytes(),
            size_of::<uverbs::DestroySrqResp>(),
            format_args!("SRQ {:#x}", self.geometry.srqn),
        );
    }
}
