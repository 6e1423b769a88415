//! Completion queues: CREATE_CQ, RESIZE_CQ, DESTROY_CQ, and the ring geometry the data path
//! polls.

use crate::comp_channel::CompChannel;
use crate::completion::WorkCompletion;
use crate::context::Context;
use crate::cq_ring::{
    CqAttachments, CqRing as PollRing, QpCompletions, holds_entries_of, software_end,
};
use crate::dma::{DbRecord, DmaBuf};
use crate::doorbell::CqDoorbell;
use crate::error::{Error, Result};
use crate::mmio::DevPtr;
use ferrodat_abi::mlx5::{self, cqe_opcode};
use ferrodat_abi::uverbs::{self, cmd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use zerocopy::IntoBytes;

/// CQE size this driver uses.
pub const CQE_SIZE: u32 = 64;

/// How to create a CQ.
#[derive(Clone, Debug, Default)]
pub struct CqOptions<'a> {
    /// At least this many entries (rounded up to `2^n - 1`, as rdma-core does).
    pub cqe: u32,
    /// Report completion events to this channel (after arming).
    pub channel: Option<&'a CompChannel>,
    /// Completion vector (below the context's `num_comp_vectors`).
    pub comp_vector: u32,
    /// The value completion events carry; a context-unique one if `None`.
    pub user_handle: Option<u64>,
}

/// A completion queue: the handle that polls and arms it. QPs hold its resource, so
/// DESTROY_CQ runs only after the handle and the last QP using it are gone.
///
/// Polling and arming take `&mut self`: one thread polls a CQ at a time, without a lock.
/// To poll from another thread, move the `Cq` there (it is `Send`).
#[derive(Debug)]
pub struct Cq {
    pub(crate) inner: Arc<CqInner>,
    ring: PollRing,
}

/// The ring as the data path sees it (a snapshot: RESIZE_CQ replaces it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqGeometry {
    /// First CQE.
    pub buf: NonNull<u8>,
    /// Entries (a power of two).
    pub ncqe: u32,
    /// Bytes per CQE (64).
    pub cqe_size: u32,
}

// SAFETY: the geometry is addresses into memory the Cq owns; it grants no access itself.
unsafe impl Send for CqGeometry {}
// SAFETY: as above.
unsafe impl Sync for CqGeometry {}

#[derive(Debug)]
pub(crate) struct CqBuffers {
    buf: DmaBuf,
    ncqe: u32,
    /// Buffers replaced by RESIZE_CQ: the device may still have been writing them, so they
    /// live as long as the CQ.
    retired: Vec<DmaBuf>,
}

#[derive(Debug)]
pub(crate) struct CqInner {
    ctx: Context,
    handle: u32,
    cqn: u32,
    user_handle: u64,
    ring: Mutex<CqBuffers>,
    dbrec: DbRecord,
    channel: Option<CompChannel>,
    /// Completion events consumed (`ibv_get_cq_event` → `arm_sn++`); the arm word carries
    /// it mod 4.
    pub(crate) arm_sn: AtomicU32,
    /// Where QPs completing into this CQ register their work trackers for the poller.
    pub(crate) attachments: Arc<CqAttachments>,
    pub(crate) comp_events: AtomicU32,
    destroyed: AtomicBool,
}

/// What DESTROY_CQ reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqEventCounts {
    /// Completion events the device delivered for the CQ.
    pub comp_events_reported: u32,
    /// Async events the device delivered for the CQ.
    pub async_events_reported: u32,
}

fn new_ring(entries: u32) -> Result<DmaBuf> {
    let buf = DmaBuf::new(entries as usize * CQE_SIZE as usize)?;
    let invalid = [cqe_opcode::INVALID << 4];
    for i in 0..entries as usize {
        // every op_own = 0xF0: opcode INVALID, owner 0 (mlx5_alloc_cq_buf)
        buf.write(i * CQE_SIZE as usize + CQE_SIZE as usize - 1, &invalid);
    }
    Ok(buf)
}

/// `roundup_pow2(cqe + 1)`, with rdma-core's range check.
fn ring_entries(op: &'static str, cqe: u32) -> Result<u32> {
    if cqe > 0x7fff_ffff - 1 {
        return Err(Error::errno(op, libc::EINVAL).with_detail(format!("cqe {cqe}")));
    }
    Ok((cqe + 1).next_power_of_two())
}

impl Cq {
    /// CREATE_CQ with a ring of `roundup_pow2(cqe + 1)` 64-byte CQEs (every `op_own` 0xF0)
    /// and a doorbell record.
    pub fn new(ctx: &Context, opts: &CqOptions<'_>) -> Result<Cq> {
        let entries = ring_entries("CREATE_CQ", opts.cqe)?;
        if opts.comp_vector >= ctx.attr().num_comp_vectors.max(1) {
            return Err(Error::errno("CREATE_CQ", libc::EINVAL)
                .with_detail(format!("comp_vector {}", opts.comp_vector))
                .with_hint(format!(
                    "the device has {} completion vector(s)",
                    ctx.attr().num_comp_vectors
                )));
        }
        let buf = new_ring(entries)?;
        let dbrec = ctx.alloc_dbrec("CREATE_CQ")?;
        let user_handle = opts.user_handle.unwrap_or_else(|| ctx.alloc_user_handle());
        let req = uverbs::CreateCq {
            user_handle,
            cqe: entries - 1,
            comp_vector: opts.comp_vector,
            comp_channel: opts.channel.map_or(-1, std::os::fd::AsRawFd::as_raw_fd),
            ..Default::default()
        };
        let ucmd = mlx5::CreateCq {
            buf_addr: buf.addr(),
            db_addr: dbrec.addr(),
            cqe_size: CQE_SIZE,
            ..Default::default()
        };
        let out = size_of::<uverbs::CreateCqResp>() + size_of::<mlx5::CreateCqResp>();
        let r = ctx
            .run("CREATE_CQ", cmd::CREATE_CQ, req.as_bytes(), ucmd.as_bytes(), out)
            .map_err(|e| e.with_detail(format!("{entries} entries")))?;
        let resp: uverbs::CreateCqResp = crate::command::read("CREATE_CQ", &r, 0)?;
        let m: mlx5::CreateCqResp =
            crate::command::read("CREATE_CQ", &r, size_of::<uverbs::CreateCqResp>())?;
        let (uar, uar_index) = ctx
            .uar_page(0)
            .ok_or_else(|| Error::invalid("CREATE_CQ", "the context has no UAR page"))?;
        // SAFETY: the ring, the doorbell record and the UAR page live as long as the CQ's
        // resource (`inner`, which the handle holds next to the ring, and which holds the
        // context that maps the UAR).
        let ring = unsafe {
            PollRing::new(
                crate::cq_ring::CqGeometry {
                    ring: DevPtr::new(buf.as_ptr()),
                    ncqe: entries,
                    dbrec: DevPtr::new(dbrec.as_ptr()),
                    cqn: m.cqn,
                },
                CqDoorbell::new(DevPtr::new(uar), uar_index),
            )
        };
        let attachments = ring.attachments().clone();
        let inner = Arc::new(CqInner {
            ctx: ctx.clone(),
            handle: resp.cq_handle,
            cqn: m.cqn,
            user_handle,
            ring: Mutex::new(CqBuffers { buf, ncqe: entries, retired: Vec::new() }),
            attachments: attachments.clone(),
            dbrec,
            channel: opts.channel.cloned(),
            arm_sn: AtomicU32::new(0),
            comp_events: AtomicU32::new(0),
            destroyed: AtomicBool::new(false),
        });
        if resp.cqe != entries - 1 {
            return Err(Error::invalid(
                "CREATE_CQ",
                format!("asked for {} entries, the device answered {}", entries - 1, resp.cqe),
            )); // (the CQ is destroyed as `inner` drops)
        }
        if let Some(ch) = opts.channel {
            let mut cqs = ch.inner.cqs.lock().unwrap_or_else(|e| e.into_inner());
            cqs.retain(|_, w| w.strong_count() > 0);
            // Events name their CQ by user handle only: a second CQ with the same one would
            // take the first one's events (and its arm count), and one of them would stop
            // raising any.
            if cqs.contains_key(&user_handle) {
                return Err(Error::invalid(
                    "CREATE_CQ",
                    format!(
                        "user handle {user_handle:#x} is already another CQ's on this \
                         completion channel"
                    ),
                )
                .with_hint("give each CQ of a channel its own user handle, or none")); // (the CQ is destroyed as `inner` drops)
            }
            cqs.insert(user_handle, Arc::downgrade(&inner));
        }
        Ok(Cq { inner, ring })
    }

    /// The context.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// The CQ number.
    pub fn cqn(&self) -> u32 {
        self.inner.cqn
    }

    /// Entries in the ring (a power of two).
    pub fn ncqe(&self) -> u32 {
        self.ring().ncqe
    }

    /// The user handle completion events carry.
    pub fn user_handle(&self) -> u64 {
        self.inner.user_handle
    }

    /// Completion events consumed so far through the channel (the arm sequence number).
    pub fn arm_sn(&self) -> u32 {
        self.inner.arm_sn.load(Ordering::Acquire)
    }

    /// The channel events go to.
    pub fn channel(&self) -> Option<&CompChannel> {
        self.inner.channel.as_ref()
    }

    fn ring(&self) -> MutexGuard<'_, CqBuffers> {
        self.inner.ring.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The ring's current geometry (for the data path; re-read after [`Cq::resize`]).
    pub fn geometry(&self) -> CqGeometry {
        let r = self.ring();
        CqGeometry { buf: r.buf.as_ptr(), ncqe: r.ncqe, cqe_size: CQE_SIZE }
    }

    /// The doorbell record (`[0]` consumer index, `[1]` arm word).
    pub fn dbrec(&self) -> &DbRecord {
        &self.inner.dbrec
    }

    /// The doorbell record's address.
    pub fn dbrec_addr(&self) -> u64 {
        self.inner.dbrec.addr()
    }

    /// UAR page 0, where the CQ arm doorbell ([`mlx5::CQ_DOORBELL`]) is: address and index.
    pub fn uar(&self) -> (NonNull<u8>, u32) {
        // Context::init refuses contexts without UAR pages, so page 0 exists.
        self.inner.ctx.uar_page(0).unwrap_or((NonNull::dangling(), 0))
    }

    pub(crate) fn handle(&self) -> u32 {
        self.inner.handle
    }

    /// Fills `out` with up to `out.len()` completions, oldest first; returns how many.
    /// On softhca an empty poll also lets the model move packets (the `progress` entry
    /// point), so a polling loop is all a program needs.
    #[inline]
    pub fn poll(&mut self, out: &mut [WorkCompletion]) -> usize {
        self.ring.poll(out, self.inner.ctx.channel())
    }

    /// [`Cq::poll`] of one completion into `wc` (true if one was written), for callers
    /// that take completions one at a time and need no slice. The channel of the model
    /// entry points is looked up only when the CQ is found empty.
    #[inline]
    pub fn poll_one(&mut self, wc: &mut WorkCompletion) -> bool {
        self.ring.poll_one(wc, &LazyChannel(&self.inner.ctx))
    }

    /// True if a completion waits (nothing is consumed).
    pub fn has_completion(&self) -> bool {
        self.ring.has_completion()
    }

    /// Requests one completion event on the CQ's channel for the next completion (with
    /// `solicited`: the next solicited or error completion). Arm, then poll once more
    /// before sleeping, so a completion that arrived in between is not missed.
    pub fn arm(&mut self, solicited: bool) {
        let sn = self.inner.arm_sn.load(Ordering::Acquire);
        self.ring.arm(solicited, sn, self.inner.ctx.channel());
    }

    /// Polls until `out` has `n` completions or `timeout` passes; returns how many came.
    /// Busy-polls: for sleeping, arm the CQ and wait on its [`CompChannel`].
    pub fn poll_wait(&mut self, out: &mut [WorkCompletion], timeout: std::time::Duration) -> usize {
        let deadline = std::time::Instant::now() + timeout;
        let mut got = 0;
        while got < out.len() {
            got += self.poll(&mut out[got..]);
            if got < out.len() && std::time::Instant::now() >= deadline {
                break;
            }
        }
        got
    }

    /// RESIZE_CQ to at least `cqe` entries; returns the new entry count. Completions
    /// waiting in the old ring are carried over (the device marks where it switched with a
    /// RESIZE_CQ entry); the old buffer stays allocated until the CQ is destroyed.
    pub fn resize(&mut self, cqe: u32) -> Result<u32> {
        let entries = ring_entries("RESIZE_CQ", cqe)?;
        let mut ring = self.inner.ring.lock().unwrap_or_else(|e| e.into_inner());
        if entries == ring.ncqe {
            return Ok(entries);
        }
        // The completions waiting are copied into the new ring: it must hold them (verbs
        // refuses a resize below the CQEs in the CQ).
        let (from, end) = self.inner.software_owned(&ring);
        let waiting = end.wrapping_sub(from) & mlx5::CQ_CI_MASK;
        if waiting > entries - 1 {
            return Err(Error::errno("RESIZE_CQ", libc::EINVAL).with_detail(format!(
                "{waiting} completions wait in cqn {:#x}, more than {} entries hold; poll \
                 them first or resize to at least {waiting}",
                self.inner.cqn,
                entries - 1
            )));
        }
        let buf = new_ring(entries)?;
        let req = uverbs::ResizeCq {
            cq_handle: self.inner.handle,
            cqe: entries - 1,
            ..Default::default()
        };
        let ucmd = mlx5::ResizeCq {
            buf_addr: buf.addr(),
            cqe_size: CQE_SIZE as u16,
            ..Default::default()
        };
        let r = self
            .inner
            .ctx
            .run(
                "RESIZE_CQ",
                cmd::RESIZE_CQ,
                req.as_bytes(),
                ucmd.as_bytes(),
                size_of::<uverbs::ResizeCqResp>(),
            )
            .map_err(|e| {
                e.with_detail(format!("cqn {:#x} to {entries} entries", self.inner.cqn))
            })?;
        let resp: uverbs::ResizeCqResp = crate::command::read("RESIZE_CQ", &r, 0)?;
        if resp.cqe != entries - 1 {
            return Err(Error::invalid(
                "RESIZE_CQ",
                format!("asked for {} entries, the device answered {}", entries - 1, resp.cqe),
            ));
        }
        // SAFETY: the new buffer lives in `inner` as long as the CQ (old ones too); it was
        // initialised with every op_own 0xF0.
        let switched = unsafe { self.ring.switch_buffer(DevPtr::new(buf.as_ptr()), entries) };
        if let Err(seen) = switched {
            // The device accepted the command but wrote no RESIZE_CQ entry: keep polling the
            // old ring, and keep the new one allocated in case the device writes it later.
            ring.retired.push(buf);
            return Err(Error::invalid(
                "RESIZE_CQ",
                format!(
                    "cqn {:#x}: no RESIZE_CQ entry after {seen} completion(s) in the old ring",
                    self.inner.cqn
                ),
            )
            .with_hint("the device did not move the CQ; it keeps its old size"));
        }
        let old = std::mem::replace(&mut ring.buf, buf);
        ring.retired.push(old);
        ring.ncqe = entries;
        Ok(entries)
    }

    /// DESTROY_CQ now, returning the event counts; fails (handing the CQ back) if another
    /// handle or a QP still uses it.
    pub fn destroy(self) -> std::result::Result<CqEventCounts, Box<(Cq, Error)>> {
        let Cq { inner, ring } = self;
        match Arc::try_unwrap(inner) {
            Ok(inner) => match inner.destroy() {
                Ok(counts) => {
                    inner.destroyed.store(true, Ordering::Relaxed);
                    Ok(counts)
                }
                Err(e) => Err(Box::new((Cq { inner: Arc::new(inner), ring }, e))),
            },
            Err(inner) => Err(Box::new((
                Cq { inner, ring },
                Error::invalid("DESTROY_CQ", "the CQ is still used by a QP or another handle")
                    .with_hint("drop the QPs using it first"),
            ))),
        }
    }
}

impl CqInner {
    fn destroy(&self) -> Result<CqEventCounts> {
        let req = uverbs::DestroyCq { cq_handle: self.handle, ..Default::default() };
        let r = self
            .ctx
            .run(
                "DESTROY_CQ",
                cmd::DESTROY_CQ,
                req.as_bytes(),
                &[],
                size_of::<uverbs::DestroyCqResp>(),
            )
            .map_err(|e| e.with_detail(format!("cqn {:#x}", self.cqn)))?;
        let resp: uverbs::DestroyCqResp = crate::command::read("DESTROY_CQ", &r, 0)?;
        Ok(CqEventCounts {
            comp_events_reported: resp.comp_events_reported,
            async_events_reported: resp.async_events_reported,
        })
    }
}

impl Drop for CqInner {
    fn drop(&mut self) {
        // Destroyed already, or a forked child's copy of the parent's CQ.
        if self.destroyed.load(Ordering::Relaxed) || self.ctx.is_inherited() {
            return;
        }
        if let Err(e) = self.destroy() {
            eprintln!("ferrodat-driver: dropping CQ {:#x}: {e}", self.cqn);
        }
    }
}

impl CqInner {
    /// The CQ number.
    pub(crate) fn cqn(&self) -> u32 {
        self.cqn
    }

    /// Detaches the QP with user index `uidx` (destroyed, or reset): its CQEs now in the
    /// ring are skipped, the ones a reconnection under the same index adds later are not
    /// (rdma-core's `mlx5_cq_clean` at the same moment, which removes them).
    pub(crate) fn detach_qp(&self, uidx: u32, qp: &QpCompletions) {
        // Under the buffers' lock: a resize neither moves the ring meanwhile nor
        // republishes the consumer index.
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let (from, end) = self.software_owned(&ring);
        // SAFETY: the current ring of `ncqe` entries, alive with the CQ; software owns its
        // entries from `from` to `end`.
        let left_in_ring =
            unsafe { holds_entries_of(DevPtr::new(ring.buf.as_ptr()), ring.ncqe, from, end, uidx) };
        self.attachments.detach(uidx, qp, end, left_in_ring);
    }

    /// The CQ indexes of the entries software owns in `ring` (the current buffers, whose
    /// lock the caller holds): from the published consumer index to where the device
    /// writes next.
    fn software_owned(&self, ring: &CqBuffers) -> (u32, u32) {
        let from = self.dbrec.read_be32(mlx5::CQ_SET_CI) & mlx5::CQ_CI_MASK;
        // SAFETY: the current ring of `ncqe` entries, alive with the CQ.
        let end = unsafe { software_end(DevPtr::new(ring.buf.as_ptr()), ring.ncqe, from) };
        (from, end)
    }
}

/// The model entry points of a context's channel, looked up only when one is called (by a
/// poll that found the CQ empty), not on every poll.
struct LazyChannel<'a>(&'a Context);

impl crate::doorbell::Model for LazyChannel<'_> {
    #[inline(always)]
    fn doorbell_rung(&self, uar_page: u32, offset: u32, stored: impl FnOnce() -> [u8; 8]) {
        self.0.channel().doorbell_rung(uar_page, offset, stored);
    }
    #[inline(always)]
    fn progress(&self) -> bool {
        self.0.channel().progress()
    }
}
