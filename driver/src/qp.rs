//! RC queue pairs: CREATE_QP with rdma-core's mlx5 queue sizes, MODIFY_QP through a
//! [`QpAttr`] builder, QUERY_QP, DESTROY_QP, and the geometry the data path posts into.

use crate::context::{BfReg, Context};
use crate::cq::{Cq, CqInner};
use crate::cq_ring::{QpCompletions, RecvSource};
use crate::dma::{DbRecord, DmaBuf};
use crate::doorbell::BlueFlame;
use crate::error::{Error, Result};
use crate::mmio::DevPtr;
use crate::mr::Access;
use crate::mw::Mw;
use crate::pd::Pd;
use crate::recv_queue::{RecvGeometry, RecvQueue, RecvTracker};
use crate::send_queue::{SendGeometry, SendQueue};
use crate::srq::Srq;
use crate::user_index::UserIndex;
use crate::work_request::{
    Payload, PostError, PostErrorReason, RecvWr, SendFlags, SendOp, SendWr, Sge, WorkQueue,
};
use ferrodat_abi::mlx5::{self, SEND_WQE_BB};
use ferrodat_abi::uverbs::{self, QpDest, QueryQpResp, cmd, qp_attr as qa, qp_type};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;
use zerocopy::IntoBytes;

/// rdma-core's RC send-WQE overhead (ctrl + the largest of raddr/atomic/UMR/bind-MW
/// segments): every SQ slot has room for it.
pub const SQ_OVERHEAD: usize = 192;
/// `sizeof(struct mlx5_wqe_inl_data_seg)`.
const INLINE_HDR: usize = 4;
/// `sizeof(struct mlx5_wqe_data_seg)`.
const DATA_SEG: usize = 16;

/// Queue capacities (asked of CREATE_QP, or granted by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpCaps {
    /// Send WRs.
    pub max_send_wr: u32,
    /// Receive WRs (ignored with an SRQ).
    pub max_recv_wr: u32,
    /// SGEs per send WR.
    pub max_send_sge: u32,
    /// SGEs per receive WR.
    pub max_recv_sge: u32,
    /// Inline bytes per send WR.
    pub max_inline_data: u32,
}

impl Default for QpCaps {
    fn default() -> Self {
        QpCaps {
            max_send_wr: 16,
            max_recv_wr: 16,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        }
    }
}

/// How to create a QP.
#[derive(Clone, Copy, Debug)]
pub struct QpInit<'a> {
    /// CQ for send completions.
    pub send_cq: &'a Cq,
    /// CQ for receive completions.
    pub recv_cq: &'a Cq,
    /// Receive from this SRQ instead of an own RQ.
    pub srq: Option<&'a Srq>,
    /// Capacities.
    pub caps: QpCaps,
    /// Every send WR generates a completion.
    pub sq_sig_all: bool,
    /// The value async events carry (a context-unique one if `None`).
    pub user_handle: Option<u64>,
}

impl<'a> QpInit<'a> {
    /// The common case: completions to `send_cq` and `recv_cq`, a receive queue of its
    /// own, signalled only where a request asks, a context-unique user handle. Change the
    /// rest with struct update syntax: `QpInit { srq: Some(&srq), ..QpInit::new(&cq, &cq,
    /// caps) }`.
    pub fn new(send_cq: &'a Cq, recv_cq: &'a Cq, caps: QpCaps) -> QpInit<'a> {
        QpInit { send_cq, recv_cq, srq: None, caps, sq_sig_all: false, user_handle: None }
    }
}

/// QP states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum QpState {
    /// Reset.
    Reset = 0,
    /// Initialised.
    Init = 1,
    /// Ready to receive.
    Rtr = 2,
    /// Ready to send.
    Rts = 3,
    /// Send queue drained.
    Sqd = 4,
    /// Send queue error.
    Sqe = 5,
    /// Error.
    Err = 6,
}

impl QpState {
    /// From the wire value.
    pub fn from_u8(v: u8) -> Option<QpState> {
        Some(match v {
            0 => QpState::Reset,
            1 => QpState::Init,
            2 => QpState::Rtr,
            3 => QpState::Rts,
            4 => QpState::Sqd,
            5 => QpState::Sqe,
            6 => QpState::Err,
            _ => return None,
        })
    }
}

/// A RoCE v2 address vector (GRH always present).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressVector {
    /// The peer's GID.
    pub dgid: [u8; 16],
    /// Our GID's table index (0 by default; [`Context::source_gid`] gives the one a
    /// connection should use).
    pub sgid_index: u8,
    /// Hop limit (64 by default).
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label.
    pub flow_label: u32,
    /// Service level.
    pub sl: u8,
    /// Port (1).
    pub port_num: u8,
}

impl AddressVector {
    /// Towards `dgid` with sgid index 0, hop limit 64, port 1.
    pub fn roce(dgid: [u8; 16]) -> AddressVector {
        AddressVector {
            dgid,
            sgid_index: 0,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
            sl: 0,
            port_num: 1,
        }
    }
}

/// MODIFY_QP attributes: each setter also sets its bit in the attribute mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpAttr {
    raw: uverbs::ModifyQp,
}

macro_rules! setter {
    ($(#[$m:meta])* $name:ident, $field:ident : $t:ty, $bit:expr) => {
        $(#[$m])*
        pub fn $name(mut self, v: $t) -> QpAttr {
            self.raw.$field = v;
            self.raw.attr_mask |= $bit;
            self
        }
    };
}

impl QpAttr {
    /// No attributes.
    pub fn new() -> QpAttr {
        QpAttr::default()
    }

    /// The attribute mask so far.
    pub fn mask(&self) -> u32 {
        self.raw.attr_mask
    }

    /// The request as it will be sent (handle not yet filled in).
    pub fn raw(&self) -> &uverbs::ModifyQp {
        &self.raw
    }

    /// The target state.
    pub fn state(mut self, s: QpState) -> QpAttr {
        self.raw.qp_state = s as u8;
        self.raw.attr_mask |= qa::STATE;
        self
    }

    /// The state the caller believes the QP is in.
    pub fn cur_state(mut self, s: QpState) -> QpAttr {
        self.raw.cur_qp_state = s as u8;
        self.raw.attr_mask |= qa::CUR_STATE;
        self
    }

    /// Remote access rights.
    pub fn access(mut self, a: Access) -> QpAttr {
        self.raw.qp_access_flags = a.bits();
        self.raw.attr_mask |= qa::ACCESS_FLAGS;
        self
    }

    /// The primary path.
    pub fn av(mut self, av: AddressVector) -> QpAttr {
        self.raw.dest = QpDest {
            dgid: av.dgid,
            flow_label: av.flow_label,
            sgid_index: av.sgid_index,
            hop_limit: av.hop_limit,
            traffic_class: av.traffic_class,
            sl: av.sl,
            is_global: 1,
            port_num: av.port_num,
            ..Default::default()
        };
        self.raw.attr_mask |= qa::AV;
        self
    }

    /// Our source GID's table index in the primary path set by [`Self::av`] (for
    /// [`Self::init_to_rtr`], which takes index 0: [`Context::source_gid`] gives the one
    /// to use).
    pub fn source_gid_index(mut self, index: u8) -> QpAttr {
        self.raw.dest.sgid_index = index;
        self
    }

    setter!(/// P_Key index.
        pkey_index, pkey_index: u16, qa::PKEY_INDEX);
    setter!(/// Port number (from 1).
        port, port_num: u8, qa::PORT);
    setter!(/// Path MTU ([`uverbs::mtu`]: 1 = 256 … 5 = 4096).
        path_mtu, path_mtu: u8, qa::PATH_MTU);
    setter!(/// The peer's QPN.
        dest_qpn, dest_qp_num: u32, qa::DEST_QPN);
    setter!(/// The first PSN expected from the peer.
        rq_psn, rq_psn: u32, qa::RQ_PSN);
    setter!(/// Our first PSN.
        sq_psn, sq_psn: u32, qa::SQ_PSN);
    setter!(/// Outstanding RDMA READ/atomics we initiate.
        max_rd_atomic, max_rd_atomic: u8, qa::MAX_QP_RD_ATOMIC);
    setter!(/// Outstanding RDMA READ/atomics we serve.
        max_dest_rd_atomic, max_dest_rd_atomic: u8, qa::MAX_DEST_RD_ATOMIC);
    setter!(/// Minimum RNR NAK timer (IBA encoding).
        min_rnr_timer, min_rnr_timer: u8, qa::MIN_RNR_TIMER);
    setter!(/// Local ACK timeout (4.096 µs × 2^n).
        timeout, timeout: u8, qa::TIMEOUT);
    setter!(/// Transport retries.
        retry_cnt, retry_cnt: u8, qa::RETRY_CNT);
    setter!(/// RNR retries (7 = infinite).
        rnr_retry, rnr_retry: u8, qa::RNR_RETRY);
    setter!(/// Ask for an SQ_DRAINED event on →SQD.
        en_sqd_async_notify, en_sqd_async_notify: u8, qa::EN_SQD_ASYNC_NOTIFY);

    /// RESET→INIT as the kernel requires for RC: STATE, PKEY_INDEX (0), PORT (1),
    /// ACCESS_FLAGS.
    pub fn reset_to_init(access: Access) -> QpAttr {
        QpAttr::new().state(QpState::Init).pkey_index(0).port(1).access(access)
    }

    /// INIT→RTR towards `peer`: STATE, AV (RoCE v2, sgid index 0 unless
    /// [`Self::source_gid_index`] says otherwise, hop limit 64), PATH_MTU,
    /// DEST_QPN, RQ_PSN, MAX_DEST_RD_ATOMIC (`peer.max_rd_atomic`), MIN_RNR_TIMER (12).
    pub fn init_to_rtr(peer: &RemoteQp, path_mtu: u8) -> QpAttr {
        QpAttr::new()
            .state(QpState::Rtr)
            .av(AddressVector::roce(peer.gid))
            .path_mtu(path_mtu)
            .dest_qpn(peer.qpn)
            .rq_psn(peer.psn)
            .max_dest_rd_atomic(peer.max_rd_atomic)
            .min_rnr_timer(12)
    }

    /// RTR→RTS: STATE, TIMEOUT (14), RETRY_CNT (7), RNR_RETRY (7), SQ_PSN,
    /// MAX_QP_RD_ATOMIC.
    pub fn rtr_to_rts(sq_psn: u32, max_rd_atomic: u8) -> QpAttr {
        QpAttr::new()
            .state(QpState::Rts)
            .timeout(14)
            .retry_cnt(7)
            .rnr_retry(7)
            .sq_psn(sq_psn)
            .max_rd_atomic(max_rd_atomic)
    }
}

/// What a QP needs to know about its peer to connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteQp {
    /// The peer's QPN.
    pub qpn: u32,
    /// The peer's first send PSN (our rq_psn).
    pub psn: u32,
    /// The peer's GID.
    pub gid: [u8; 16],
    /// RDMA READ/atomic depth both ways (1..=16).
    pub max_rd_atomic: u8,
}

/// The queues' raw layout, for the data path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpGeometry {
    /// The work queue buffer: RQ at `rq_offset`, SQ at `sq_offset`.
    pub buf: NonNull<u8>,
    /// Buffer length in bytes.
    pub buf_len: usize,
    /// RQ start (0).
    pub rq_offset: usize,
    /// RQ entries (power of two; 0 with an SRQ).
    pub rq_wqe_cnt: u32,
    /// log2 of the RQ stride.
    pub rq_wqe_shift: u32,
    /// Data segments per receive WQE.
    pub rq_max_sge: u32,
    /// SQ start.
    pub sq_offset: usize,
    /// SQ size in 64-byte WQEBBs (power of two).
    pub sq_wqe_cnt: u32,
    /// Send WRs that fit (worst-case WQE size).
    pub sq_max_post: u32,
    /// Inline bytes per send WQE.
    pub sq_max_inline: u32,
    /// Data segments per send WQE.
    pub sq_max_sge: u32,
    /// The doorbell record (`[0]` RQ counter, `[1]` SQ counter, big-endian).
    pub dbrec: NonNull<u8>,
    /// The QP number.
    pub qpn: u32,
    /// The user index CQEs carry with CQE version 1.
    pub uidx: u32,
    /// Where to ring the SQ.
    pub bfreg: BfReg,
}

// SAFETY: addresses into memory the Qp owns; the geometry grants no access by itself.
unsafe impl Send for QpGeometry {}
// SAFETY: as above.
unsafe impl Sync for QpGeometry {}

/// QUERY_QP, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QpInfo {
    /// Current state.
    pub state: Option<QpState>,
    /// Path MTU.
    pub path_mtu: u8,
    /// Peer QPN.
    pub dest_qpn: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// Send PSN.
    pub sq_psn: u32,
    /// Remote access rights.
    pub access: Access,
    /// RDMA READ/atomic depth as initiator.
    pub max_rd_atomic: u8,
    /// RDMA READ/atomic depth as target.
    pub max_dest_rd_atomic: u8,
    /// Min RNR timer.
    pub min_rnr_timer: u8,
    /// ACK timeout.
    pub timeout: u8,
    /// Retries.
    pub retry_cnt: u8,
    /// RNR retries.
    pub rnr_retry: u8,
    /// Port.
    pub port_num: u8,
    /// Peer GID.
    pub dgid: [u8; 16],
    /// Capacities: the receive side as the kernel reports it, the send side as the
    /// QP was created with (the kernel reports 0 there for a user QP).
    pub caps: QpCaps,
    /// The raw response.
    pub raw: QueryQpResp,
}

/// An RC queue pair: holds its PD, CQs and SRQ alive; DESTROY_QP runs when it is dropped.
///
/// `'m` is how long the memory regions it posts from must live: a work request names an
/// [`crate::work_request::Sge`] that borrows its [`crate::Mr`] for `'m`, so no region can be deregistered (or
/// its buffer freed or touched) while the QP may still use it. Posting takes `&mut self`:
/// one thread posts at a time, without a lock; move the `Qp` to post from another thread.
#[derive(Debug)]
pub struct Qp<'m> {
    pub(crate) inner: Arc<QpInner>,
    sq: SendQueue,
    rq: Option<RecvQueue>,
    regions: PhantomData<&'m ()>,
}

#[derive(Debug)]
pub(crate) struct QpInner {
    handle: u32,
    geometry: QpGeometry,
    caps: QpCaps,
    user_handle: u64,
    // Parents and memory: dropped after DESTROY_QP ran in Drop.
    pd: Pd,
    send_cq: Arc<CqInner>,
    recv_cq: Arc<CqInner>,
    srq: Option<Srq>,
    dbrec: DbRecord,
    _buf: DmaBuf,
    /// Given back when dropped: after DESTROY_QP and the CQs' detach, so the next holder's
    /// completions cannot be taken for this QP's.
    _user_index: UserIndex,
    /// What the CQs complete this QP's requests with (see [`QpCompletions`]); None
    /// before the attach and after the detach.
    completions: std::sync::Mutex<Option<Arc<QpCompletions>>>,
}

/// `mlx5_calc_sq_size` for RC: (wqe bytes, WQEBBs, max_post, max_inline, max_sge).
pub(crate) fn sq_size(
    caps: &QpCaps,
    max_sq_desc: usize,
    max_wqebb: u32,
) -> Result<(usize, u32, u32, u32, u32)> {
    if caps.max_send_wr == 0 {
        return Ok((0, 0, 0, 0, 0));
    }
    let plain = SQ_OVERHEAD + caps.max_send_sge as usize * DATA_SEG;
    let inline = if caps.max_inline_data > 0 {
        SQ_OVERHEAD + (INLINE_HDR + caps.max_inline_data as usize).next_multiple_of(16)
    } else {
        0
    };
    let wqe = plain.max(inline).next_multiple_of(SEND_WQE_BB);
    if wqe > max_sq_desc {
        return Err(Error::errno("CREATE_QP", libc::EINVAL).with_detail(format!(
            "a send WQE for {} SGEs / {} inline bytes needs {wqe} bytes, the device allows {max_sq_desc}",
            caps.max_send_sge, caps.max_inline_data
        )));
    }
    let bytes = (caps.max_send_wr as usize)
        .checked_mul(wqe)
        .and_then(usize::checked_next_power_of_two)
        .filter(|b| b / SEND_WQE_BB <= max_wqebb as usize)
        .ok_or_else(|| {
            Error::errno("CREATE_QP", libc::EINVAL).with_detail(format!(
                "{} send WRs of {wqe} bytes exceed the device's {max_wqebb} WQEBBs",
                caps.max_send_wr
            ))
        })?;
    // A slot of the overhead alone (no gather entry, no inline data) has no inline room:
    // rdma-core's signed arithmetic gives -4 there and refuses every inline post.
    let max_inline = (wqe - SQ_OVERHEAD).saturating_sub(INLINE_HDR) as u32;
    let max_sge = ((wqe - SQ_OVERHEAD) / DATA_SEG) as u32;
    Ok((wqe, (bytes / SEND_WQE_BB) as u32, (bytes / wqe) as u32, max_inline, max_sge))
}

/// `mlx5_calc_rq_size`: (entries, log2 stride).
fn rq_size(caps: &QpCaps, max_rq_desc: usize, max_recv_wr: u32) -> Result<(u32, u32)> {
    if caps.max_recv_wr == 0 {
        return Ok((0, 0));
    }
    if caps.max_recv_wr > max_recv_wr {
        return Err(Error::errno("CREATE_QP", libc::EINVAL).with_detail(format!(
            "{} receive WRs, the device allows {max_recv_wr}",
            caps.max_recv_wr
        )));
    }
    let stride = (DATA_SEG * caps.max_recv_sge.max(1) as usize).next_power_of_two();
    if stride > max_rq_desc {
        return Err(Error::errno("CREATE_QP", libc::EINVAL).with_detail(format!(
            "{} receive SGEs need {stride} bytes, the device allows {max_rq_desc}",
            caps.max_recv_sge
        )));
    }
    let size = (caps.max_recv_wr.next_power_of_two() as usize * stride).max(SEND_WQE_BB);
    Ok(((size / stride) as u32, stride.trailing_zeros()))
}

impl<'m> Qp<'m> {
    /// CREATE_QP (RC): one buffer with the RQ then the SQ, sized as rdma-core's mlx5
    /// provider sizes them, a doorbell record, and the bfreg the kernel picks.
    pub fn new(pd: &Pd, init: &QpInit<'_>) -> Result<Qp<'m>> {
        let ctx = pd.context();
        let a = ctx.attr();
        let mut caps = init.caps;
        if init.srq.is_some() {
            caps.max_recv_wr = 0;
            caps.max_recv_sge = 0;
        }
        let (_, sq_wqebbs, sq_max_post, max_inline, sq_max_sge) =
            sq_size(&caps, a.max_sq_desc_sz as usize, a.max_send_wqebb)?;
        let (rq_cnt, rq_shift) = rq_size(&caps, a.max_rq_desc_sz as usize, a.max_recv_wr)?;
        let rq_bytes = (rq_cnt as usize) << rq_shift;
        let buf = DmaBuf::new(rq_bytes + sq_wqebbs as usize * SEND_WQE_BB)?;
        let dbrec = ctx.alloc_dbrec("CREATE_QP")?;
        let user_index = ctx.alloc_uidx("CREATE_QP")?;
        let uidx = user_index.get();
        let user_handle = init.user_handle.unwrap_or_else(|| ctx.alloc_user_handle());
        let req = uverbs::CreateQp {
            user_handle,
            pd_handle: pd.handle(),
            send_cq_handle: init.send_cq.handle(),
            recv_cq_handle: init.recv_cq.handle(),
            srq_handle: init.srq.map_or(0, Srq::handle),
            max_send_wr: caps.max_send_wr,
            max_recv_wr: caps.max_recv_wr,
            max_send_sge: caps.max_send_sge,
            max_recv_sge: caps.max_recv_sge,
            max_inline_data: caps.max_inline_data,
            sq_sig_all: u8::from(init.sq_sig_all),
            qp_type: qp_type::RC,
            is_srq: u8::from(init.srq.is_some()),
            ..Default::default()
        };
        let ucmd = mlx5::CreateQp {
            buf_addr: buf.addr(),
            db_addr: dbrec.addr(),
            sq_wqe_count: sq_wqebbs,
            rq_wqe_count: rq_cnt,
            rq_wqe_shift: rq_shift,
            flags: 0, // no SCATTER_CQE: receive data always lands in the buffers
            uidx,
            ..Default::default()
        };
        let out = size_of::<uverbs::CreateQpResp>() + size_of::<mlx5::CreateQpResp>();
        let r = ctx
            .run("CREATE_QP", cmd::CREATE_QP, req.as_bytes(), ucmd.as_bytes(), out)
            .map_err(|e| e.with_detail(format!("{caps:?}")))?;
        let resp: uverbs::CreateQpResp = crate::command::read("CREATE_QP", &r, 0)?;
        let m: mlx5::CreateQpResp =
            crate::command::read("CREATE_QP", &r, size_of::<uverbs::CreateQpResp>())?;
        // The kernel echoes the request for user QPs; as rdma-core's mlx5 provider does,
        // report the limits the queues were sized for, which are the ones the posts enforce:
        // the requests each queue takes (its `max_post`: 8 asked of 256-byte slots may give
        // more once the ring is rounded to a power of two; the CQs are sized for these), and
        // the inline and gather limits (a 256-byte slot takes 124 inline bytes for 100 asked).
        let granted = QpCaps {
            max_send_wr: resp.max_send_wr.max(sq_max_post),
            max_recv_wr: resp.max_recv_wr.max(rq_cnt),
            max_send_sge: resp.max_send_sge.max(sq_max_sge),
            max_recv_sge: resp.max_recv_sge,
            max_inline_data: resp.max_inline_data.max(max_inline),
        };
        let bfreg = match ctx.bfreg(m.bfreg_index) {
            Ok(b) => b,
            Err(e) => {
                destroy_qp(ctx, resp.qp_handle, resp.qpn);
                return Err(e);
            }
        };
        let geometry = QpGeometry {
            buf: buf.as_ptr(),
            buf_len: buf.len(),
            rq_offset: 0,
            rq_wqe_cnt: rq_cnt,
            rq_wqe_shift: rq_shift,
            rq_max_sge: if rq_cnt == 0 { 0 } else { (1u32 << rq_shift) / DATA_SEG as u32 },
            sq_offset: rq_bytes,
            sq_wqe_cnt: sq_wqebbs,
            sq_max_post,
            sq_max_inline: max_inline,
            sq_max_sge,
            dbrec: dbrec.as_ptr(),
            qpn: resp.qpn,
            uidx,
            bfreg,
        };
        let inner = QpInner {
            handle: resp.qp_handle,
            geometry,
            caps: granted,
            user_handle,
            pd: pd.clone(),
            send_cq: init.send_cq.inner.clone(),
            recv_cq: init.recv_cq.inner.clone(),
            srq: init.srq.cloned(),
            dbrec,
            _buf: buf,
            _user_index: user_index,
            completions: std::sync::Mutex::new(None),
        };
        let inner = Arc::new(inner);
        let (sq, rq) = inner.queues(init.sq_sig_all);
        let qp = Qp { inner, sq, rq, regions: PhantomData };
        qp.attach();
        Ok(qp)
    }

    /// Registers the queues' trackers with the CQs, so polling them gives our wr_ids.
    fn attach(&self) {
        let recv = match (&self.rq, &self.inner.srq) {
            (Some(rq), _) => RecvSource::Queue(rq.tracker().clone()),
            (None, Some(srq)) => RecvSource::Srq(srq.ring().clone()),
            (None, None) => RecvSource::Queue(Arc::new(RecvTracker::new(1))),
        };
        let qp =
            Arc::new(QpCompletions::new(self.inner.geometry.qpn, self.sq.tracker().clone(), recv));
        // Kept for the detach (a modify to RESET detaches and attaches anew).
        *self.inner.completions.lock().unwrap_or_else(|e| e.into_inner()) = Some(qp.clone());
        let uidx = self.inner.geometry.uidx;
        self.inner.send_cq.attachments.attach(uidx, qp.clone());
        if !Arc::ptr_eq(&self.inner.send_cq, &self.inner.recv_cq) {
            self.inner.recv_cq.attachments.attach(uidx, qp);
        }
    }

    /// Posts send work requests, building one WQE each and ringing the doorbell once
    /// (BlueFlame for a single small WQE). On error, the requests before the refused one
    /// were posted; see [`PostError`].
    #[inline]
    pub fn post_send(&mut self, wrs: &[SendWr<'m, '_>]) -> std::result::Result<(), PostError> {
        self.sq.post(wrs, self.inner.pd.context().channel())
    }

    /// Binds memory window `mw` to `region` granting `access` (remote read, write,
    /// atomic), or unbinds it (`None`): rdma-core's `ibv_bind_mw`. Returns the window's new
    /// key, valid for peers once the bind executed (the completion, if signalled, says
    /// so; requests posted after it on this QP wait for it). The region must lie in a
    /// memory region of the window's PD registered with [`Access::MW_BIND`], and remote
    /// write or atomic rights need that region to be locally writable; otherwise the
    /// bind completes with [`crate::completion::WcStatus::MwBind`] and the QP enters the
    /// error state.
    pub fn bind_mw(
        &mut self,
        mw: &Mw,
        wr_id: u64,
        region: Option<Sge<'m>>,
        access: Access,
        flags: SendFlags,
    ) -> std::result::Result<u32, PostError> {
        let bind = mw.next_bind(access);
        let range = region.as_slice();
        self.post_send(&[SendWr {
            wr_id,
            op: SendOp::BindMw(bind),
            payload: Payload::Sges(range),
            flags,
        }])?;
        mw.posted(&bind);
        Ok(bind.new_key)
    }

    /// Posts receive work requests (not for a QP attached to an SRQ: post to the SRQ).
    #[inline]
    pub fn post_recv(&mut self, wrs: &[RecvWr<'m, '_>]) -> std::result::Result<(), PostError> {
        match &mut self.rq {
            Some(rq) => rq.post(wrs),
            None => Err(PostError {
                queue: WorkQueue::Receive,
                index: 0,
                reason: PostErrorReason::NoReceiveQueue,
            }),
        }
    }

    /// 64-byte send blocks free now (a WQE takes 1-4 or more; each signalled completion
    /// polled frees its WQE and the unsignalled ones before it). Blocks are one of two
    /// limits: the queue also takes at most `caps().max_send_wr` requests at once, so a
    /// post of small WQEs can be refused while blocks are free.
    pub fn send_space(&self) -> u32 {
        self.sq.free_blocks()
    }

    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.inner.geometry.qpn
    }

    /// The capacities CREATE_QP granted.
    pub fn caps(&self) -> QpCaps {
        self.inner.caps
    }

    /// The user handle async events carry.
    pub fn user_handle(&self) -> u64 {
        self.inner.user_handle
    }

    /// The raw queue layout for the data path.
    pub fn geometry(&self) -> &QpGeometry {
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

    /// The send CQ.
    pub fn send_cqn(&self) -> u32 {
        self.inner.send_cq.cqn()
    }

    /// The receive CQ.
    pub fn recv_cqn(&self) -> u32 {
        self.inner.recv_cq.cqn()
    }

    /// The SRQ, if receives come from one.
    pub fn srq(&self) -> Option<&Srq> {
        self.inner.srq.as_ref()
    }

    /// The context.
    pub fn context(&self) -> &Context {
        self.inner.pd.context()
    }

    /// MODIFY_QP with `attr`. Going to RESET also zeroes both doorbell-record counters, as
    /// rdma-core does, and starts the queues over. The QP's CQs forget its old completions
    /// at their next poll: poll each of them once (an empty `poll(&mut [])` will do) before
    /// the QP is connected again, or the old completions and the new ones, which carry the
    /// same user index, cannot be told apart (rdma-core cleans the CQs under their lock).
    pub fn modify(&mut self, attr: &QpAttr) -> Result<()> {
        let mut raw = attr.raw;
        raw.qp_handle = self.inner.handle;
        self.context().run("MODIFY_QP", cmd::MODIFY_QP, raw.as_bytes(), &[], 0).map_err(|e| {
            let to = if raw.attr_mask & qa::STATE != 0 {
                format!("{:?}", QpState::from_u8(raw.qp_state))
            } else {
                "(no state change)".into()
            };
            e.with_detail(format!("qpn {:#x} → {to}, attr_mask {:#x}", self.qpn(), raw.attr_mask))
        })?;
        if raw.attr_mask & qa::STATE != 0 && raw.qp_state == QpState::Reset as u8 {
            self.inner.dbrec.write_be32(mlx5::RCV_DBR, 0);
            self.inner.dbrec.write_be32(mlx5::SND_DBR, 0);
            // Fresh queues from index 0; the CQs forget this QP's old completions (the
            // detach marks them stale, as rdma-core's cq_clean removes them).
            let sig_all = self.sq.sig_all();
            (self.sq, self.rq) = self.inner.queues(sig_all);
            self.inner.detach();
            self.attach();
        }
        Ok(())
    }

    /// RESET→INIT→RTR→RTS towards `peer`, with our first send PSN `sq_psn`, path MTU
    /// `path_mtu` and remote `access`, from port 1's [`Context::source_gid`].
    pub fn connect(
        &mut self,
        peer: &RemoteQp,
        sq_psn: u32,
        path_mtu: u8,
        access: Access,
    ) -> Result<()> {
        let (sgid_index, _) = self.context().source_gid(1)?;
        self.modify(&QpAttr::reset_to_init(access))?;
        self.modify(&QpAttr::init_to_rtr(peer, path_mtu).source_gid_index(sgid_index))?;
        self.modify(&QpAttr::rtr_to_rts(sq_psn, peer.max_rd_atomic))
    }

    /// → ERR (flushes outstanding WQEs).
    pub fn to_error(&mut self) -> Result<()> {
        self.modify(&QpAttr::new().state(QpState::Err))
    }

    /// → RESET.
    pub fn reset(&mut self) -> Result<()> {
        self.modify(&QpAttr::new().state(QpState::Reset))
    }

    /// RTS → SQD. Note: mlx5 has no firmware command for this transition, so mlx5_ib (and
    /// softhca) answer EINVAL; it is here for devices that have it.
    pub fn to_sqd(&mut self) -> Result<()> {
        self.modify(&QpAttr::new().state(QpState::Sqd))
    }

    /// QUERY_QP (all attributes).
    pub fn query(&self) -> Result<QpInfo> {
        let req = uverbs::QueryQp {
            qp_handle: self.inner.handle,
            attr_mask: !0 >> 7,
            ..Default::default()
        };
        let r = self
            .context()
            .run("QUERY_QP", cmd::QUERY_QP, req.as_bytes(), &[], size_of::<QueryQpResp>())
            .map_err(|e| e.with_detail(format!("qpn {:#x}", self.qpn())))?;
        let raw: QueryQpResp = crate::command::read("QUERY_QP", &r, 0)?;
        Ok(QpInfo {
            state: QpState::from_u8(raw.qp_state),
            path_mtu: raw.path_mtu,
            dest_qpn: raw.dest_qp_num,
            rq_psn: raw.rq_psn,
            sq_psn: raw.sq_psn,
            access: Access::from_bits_retain(raw.qp_access_flags),
            max_rd_atomic: raw.max_rd_atomic,
            max_dest_rd_atomic: raw.max_dest_rd_atomic,
            min_rnr_timer: raw.min_rnr_timer,
            timeout: raw.timeout,
            retry_cnt: raw.retry_cnt,
            rnr_retry: raw.rnr_retry,
            port_num: raw.port_num,
            dgid: raw.dest.dgid,
            // mlx5_ib answers 0 for a user QP's send side (it never sized it); as
            // rdma-core's mlx5_query_qp does, report what the send queue was built with.
            caps: QpCaps {
                max_send_wr: self.inner.caps.max_send_wr,
                max_recv_wr: raw.max_recv_wr,
                max_send_sge: self.inner.caps.max_send_sge,
                max_recv_sge: raw.max_recv_sge,
                max_inline_data: self.inner.caps.max_inline_data,
            },
            raw,
        })
    }
}

impl QpInner {
    /// Send and receive queues over this QP's buffer, from index 0.
    fn queues(&self, sig_all: bool) -> (SendQueue, Option<RecvQueue>) {
        let g = &self.geometry;
        let b = &g.bfreg;
        // SAFETY: the buffer, doorbell record and UAR page (held by the context in `pd`)
        // live as long as `QpInner`, which the Qp holding these queues keeps; the queues
        // are the only writers of their parts of the buffer and record.
        unsafe {
            let buf = DevPtr::new(g.buf);
            let dbrec = DevPtr::new(g.dbrec);
            let sq = SendQueue::new(
                SendGeometry {
                    ring: buf.add(g.sq_offset),
                    wqe_cnt: g.sq_wqe_cnt.max(1),
                    qpn: g.qpn,
                    max_inline: g.sq_max_inline,
                    max_sge: g.sq_max_sge,
                    sig_all,
                    max_post: g.sq_max_post,
                    dbrec_sq: dbrec.add(4 * mlx5::SND_DBR),
                    absent: g.sq_wqe_cnt == 0,
                },
                BlueFlame::new(DevPtr::new(b.reg), b.buf_size, b.uar_page, b.offset_in_page),
            );
            let rq = (g.rq_wqe_cnt > 0).then(|| {
                RecvQueue::new(RecvGeometry {
                    ring: buf.add(g.rq_offset),
                    wqe_cnt: g.rq_wqe_cnt,
                    wqe_shift: g.rq_wqe_shift,
                    max_sge: self.caps.max_recv_sge.clamp(1, g.rq_max_sge),
                    dbrec_rq: dbrec.add(4 * mlx5::RCV_DBR),
                })
            });
            (sq, rq)
        }
    }

    fn detach(&self) {
        let taken = self.completions.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(qp) = taken else { return };
        self.send_cq.detach_qp(self.geometry.uidx, &qp);
        if !Arc::ptr_eq(&self.send_cq, &self.recv_cq) {
            self.recv_cq.detach_qp(self.geometry.uidx, &qp);
        }
    }
}

impl Drop for QpInner {
    fn drop(&mut self) {
        if self.pd.context().is_inherited() {
            // A forked child's copy: the QP, and the CQ memory `detach` would touch (not
            // mapped here), are the parent's.
            return;
        }
        destroy_qp(self.pd.context(), self.handle, self.geometry.qpn);
        self.detach();
    }
}

/// DESTROY_QP; a failure is reported on stderr (it runs from Drop).
fn destroy_qp(ctx: &Context, handle: u32, qpn: u32) {
    let req = uverbs::DestroyQp { qp_handle: handle, ..Default::default() };
    let resp_len = size_of::<uverbs::DestroyQpResp>();
    ctx.run_on_drop(
        "DESTROY_QP",
        cmd::DESTROY_QP,
        req.as_bytes(),
        resp_len,
        format_args!("QP {qpn:#x}"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sq_sizes_match_rdma_core() {
        // max_send_wr 1, 1 SGE: 256-byte slot = 4 WQEBBs, 60 inline bytes (observed).
        let caps = QpCaps { max_send_wr: 1, max_send_sge: 1, ..Default::default() };
        let (wqe, bbs, post, inl, sge) = sq_size(&caps, 512, 1 << 15).unwrap();
        assert_eq!((wqe, bbs, post, inl, sge), (256, 4, 1, 60, 4));
        let caps =
            QpCaps { max_send_wr: 16, max_send_sge: 2, max_inline_data: 60, ..Default::default() };
        let (wqe, bbs, ..) = sq_size(&caps, 512, 1 << 15).unwrap();
        assert_eq!((wqe, bbs), (256, 64));
        // No gather entry and no inline data: the 192-byte overhead alone, no inline room.
        let none = QpCaps { max_send_wr: 4, max_send_sge: 0, ..Default::default() };
        assert_eq!(sq_size(&none, 512, 1 << 15).unwrap(), (192, 16, 5, 0, 0));
        let big = QpCaps { max_send_sge: 30, ..Default::default() };
        assert!(sq_size(&big, 512, 1 << 15).is_err());
    }

    #[test]
    fn rq_sizes_match_rdma_core() {
        let caps = QpCaps { max_recv_wr: 500, max_recv_sge: 1, ..Default::default() };
        assert_eq!(rq_size(&caps, 512, 1 << 15).unwrap(), (512, 4));
        let caps = QpCaps { max_recv_wr: 1, max_recv_sge: 3, ..Default::default() };
        assert_eq!(rq_size(&caps, 512, 1 << 15).unwrap(), (1, 6));
        let caps = QpCaps { max_recv_wr: 2, max_recv_sge: 1, ..Default::default() };
        assert_eq!(rq_size(&caps, 512, 1 << 15).unwrap(), (4, 4), "at least 64 bytes");
    }
}
