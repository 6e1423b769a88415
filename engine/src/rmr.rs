//! Remote memory regions: a type 1 memory window in a PZ, bound to part of an LMR by a
//! bind posted on a connected endpoint, giving the peer an rmr_context that reaches that
//! part only, with the rights the bind granted.
//!
//! - `dat_rmr_create` ([`Rmr::create`]) allocates the window; it grants nothing yet.
//! - `dat_rmr_bind` ([`Rmr::bind`]) posts the bind as a request of the endpoint (in order
//!   with its other requests; the device makes the requests after it wait for it) and
//!   returns the new rmr_context at once; the peer may use it once the bind completed,
//!   which the consumer learns from a `DAT_RMR_BIND_COMPLETION_EVENT` on the endpoint's
//!   request EVD (unless suppressed). A zero-length triplet unbinds: the old context stops
//!   working and a new one (useless until the next bind) is returned.
//! - `dat_rmr_query` ([`Rmr::query`]) reports the binding as last posted (OFA dapl's
//!   rule: the parameters change when the bind is posted, not when it completes).
//! - `dat_rmr_free` ([`Rmr::free`]) is allowed bound or unbound and destroys the window:
//!   its context fails from then on. An LMR an RMR is bound in cannot be freed
//!   ([`Lmr::free`]: `DAT_INVALID_STATE_LMR_IN_USE`) until the RMR is unbound or freed.
//!
//! # Which event
//!
//! DAT 2.0's `dat.h` has both `DAT_RMR_BIND_COMPLETION_EVENT` (with
//! `DAT_RMR_BIND_COMPLETION_EVENT_DATA {rmr_handle, user_cookie, status}`) and a DTO type
//! `DAT_DTO_BIND_MW` commented "binds are reported via DTO events". OFA dapl 2.x — the
//! reference provider for that header — reports `DAT_RMR_BIND_COMPLETION_EVENT` from its
//! RMR cookies and never produces `DAT_DTO_BIND_MW`, so that is what this provider does
//! ([`Event::RmrBind`](crate::event::Event::RmrBind)); `DAT_DTO_BIND_MW` tags the bind's
//! slot in the endpoint's cookie ring. The status is `DAT_RMR_BIND_SUCCESS`,
//! `DAT_DTO_ERR_FLUSHED` (= `DAT_RMR_BIND_FAILURE`, the endpoint went down first) or
//! `DAT_RMR_OPERATION_FAILED` (the device refused the bind, which puts the endpoint's QP in
//! the error state: later requests complete flushed).
//!
//! # Checks
//!
//! As OFA and illumos dapl (`dapli_rmr_bind_fuse`): the triplet's lmr_context must be the
//! LMR's and the triplet inside it, the endpoint CONNECTED (`DAT_INVALID_STATE` with the
//! endpoint's state as subtype; on a DISCONNECTED endpoint the bind completes at once as
//! flushed, as every request does there per the DAT state table), and the LMR, RMR and
//! endpoint in one PZ. Argument numbers are DAT 2.0's `dat_rmr_bind` positions (rmr 1,
//! lmr 2, triplet 3, mem_priv 4, va_type 5, ep 6, cookie 7, flags 8). An LMR created
//! without write privileges is not registered for window binding ([`MemPriv::access`]):
//! binding in it is `DAT_PRIVILEGES_VIOLATION`.

use crate::ep::Ep;
use crate::error::{DatError, DatResult};
use crate::event::{ObjectId, new_object_id};
use crate::ia::Ia;
use crate::lmr::{Lmr, LmrInUse, LmrTriplet, MemPriv};
use crate::pz::Pz;
use ferrodat_abi::dat::{completion_flags, mem_priv, ret, subtype};
use ferrodat_driver::Access;
use ferrodat_driver::work_request::Sge;
use std::sync::{Mutex, MutexGuard};

/// The largest range one bind covers: what an mlx5 KLM entry can describe.
pub const MAX_BIND_LENGTH: u64 = 1 << 31;

/// What an RMR is bound to, as last posted.
#[derive(Clone, Debug)]
pub struct RmrBinding {
    /// The LMR the range lies in (kept registered while the RMR is bound to it).
    pub lmr: Lmr,
    /// The range.
    pub triplet: LmrTriplet,
    /// The rights granted to the peer.
    pub mem_priv: MemPriv,
    /// The endpoint the bind was posted on.
    pub ep: ObjectId,
}

/// `DAT_RMR_PARAM`.
#[derive(Clone, Debug)]
pub struct RmrParam {
    /// `ia_handle`.
    pub ia: Ia,
    /// `pz_handle`.
    pub pz: Pz,
    /// `lmr_triplet` and `mem_priv`: `None` while unbound (the man page leaves them
    /// undefined then).
    pub binding: Option<RmrBinding>,
    /// `rmr_context`: the window's current context (after an unbind, one that grants
    /// nothing).
    pub rmr_context: u32,
}

/// A remote memory region (one owner: [`Rmr::free`] revokes its context at once).
#[derive(Debug)]
pub struct Rmr {
    id: ObjectId,
    pz: Pz,
    mw: ferrodat_driver::Mw,
    /// The binding as posted, and the LMR's in-use mark while bound.
    binding: Mutex<Option<(RmrBinding, LmrInUse)>>,
}

impl Rmr {
    /// `dat_rmr_create` in `pz`.
    pub fn create(pz: &Pz) -> DatResult<Rmr> {
        let mw = pz.pd().alloc_mw().map_err(|e| {
            DatError::insufficient_resources(subtype::RESOURCE_MEMORY_REGION).with_detail(format!(
                "dat_rmr_create on {}: {e} (the IA's max_rmrs is {})",
                pz.ia().name(),
                pz.ia().attr().max_rmrs
            ))
        })?;
        Ok(Rmr { id: new_object_id(), pz: pz.clone(), mw, binding: Mutex::new(None) })
    }

    /// Its id: bind completion events name it by it.
    pub fn id(&self) -> ObjectId {
        self.id
    }

    /// Its PZ.
    pub fn pz(&self) -> &Pz {
        &self.pz
    }

    /// The current rmr_context (the last one [`Rmr::bind`] returned, or the window's first
    /// before any bind).
    pub fn rmr_context(&self) -> u32 {
        self.mw.rkey()
    }

    /// `dat_rmr_query`: every parameter (the Rust side has no use for the mask).
    pub fn query(&self) -> RmrParam {
        RmrParam {
            ia: self.pz.ia().clone(),
            pz: self.pz.clone(),
            binding: lock(&self.binding).as_ref().map(|(b, _)| b.clone()),
            rmr_context: self.rmr_context(),
        }
    }

    /// `dat_rmr_bind`: binds the RMR to `triplet` inside `lmr` with the remote rights of
    /// `privileges` (REMOTE_READ, REMOTE_WRITE, the IB extension's REMOTE_ATOMIC; the local
    /// flags mean nothing to a peer and are ignored), posted on `ep`; or, for a triplet of
    /// length 0, unbinds it (`lmr` is then not needed). `flags` may hold SUPPRESS,
    /// UNSIGNALLED and BARRIER_FENCE. Returns the new rmr_context; the completion event
    /// carries `cookie`.
    pub fn bind(
        &self,
        lmr: Option<&Lmr>,
        triplet: &LmrTriplet,
        privileges: MemPriv,
        ep: &Ep,
        cookie: u64,
        flags: u32,
    ) -> DatResult<u32> {
        let allowed = completion_flags::SUPPRESS
            | completion_flags::UNSIGNALLED
            | completion_flags::BARRIER_FENCE;
        if flags & !allowed != 0 {
            return Err(DatError::invalid_parameter(8).with_detail(format!(
                "dat_rmr_bind: completion flags {flags:#x}; a bind takes only \
                 DAT_COMPLETION_SUPPRESS_FLAG, _UNSIGNALLED_FLAG and _BARRIER_FENCE_FLAG"
            )));
        }
        // The man page: UNSIGNALLED "is only valid if the Endpoint Request Completion Flags
        // DAT_COMPLETION_UNSIGNALLED_FLAG. Otherwise, DAT_INVALID_PARAMETER is returned" (OFA
        // and illumos dapl check it too).
        if flags & completion_flags::UNSIGNALLED != 0
            && ep.attr().request_completion_flags & completion_flags::UNSIGNALLED == 0
        {
            return Err(DatError::invalid_parameter(8).with_detail(
                "dat_rmr_bind: DAT_COMPLETION_UNSIGNALLED_FLAG on an endpoint whose \
                 request_completion_flags lack it; create or modify the endpoint with it, or \
                 bind with DAT_COMPLETION_SUPPRESS_FLAG",
            ));
        }
        if !ep.pz().same(&self.pz) {
            return Err(DatError::invalid_parameter(6).with_detail(
                "dat_rmr_bind: the endpoint is in another PZ than the RMR; bind on an endpoint \
                 of the RMR's PZ",
            ));
        }
        if triplet.segment_length == 0 {
            return self.unbind(ep, cookie, flags);
        }
        let lmr = lmr.ok_or_else(|| {
            DatError::invalid_handle(subtype::INVALID_HANDLE_LMR)
                .with_detail("dat_rmr_bind: binding (a non-zero length) needs the LMR")
        })?;
        let access = remote_access(privileges)?;
        if triplet.lmr_context != lmr.lmr_context() {
            return Err(DatError::invalid_parameter(3).with_detail(format!(
                "dat_rmr_bind: the triplet's lmr_context {:#x} is not the LMR's ({:#x})",
                triplet.lmr_context,
                lmr.lmr_context()
            )));
        }
        // OFA dapl checks the endpoint's state here, before the range: an EP that cannot
        // take the bind says so first.
        ep.check_rmr_bind_state()?;
        let start = lmr.registered_address();
        let inside = triplet.virtual_address >= start
            && triplet
                .virtual_address
                .checked_add(triplet.segment_length)
                .is_some_and(|end| end <= start + lmr.registered_size());
        if !inside {
            return Err(DatError::invalid_parameter(3).with_detail(format!(
                "dat_rmr_bind: {:#x} + {} bytes is not inside the LMR ({start:#x} + {} bytes)",
                triplet.virtual_address,
                triplet.segment_length,
                lmr.registered_size()
            )));
        }
        if triplet.segment_length > MAX_BIND_LENGTH {
            return Err(DatError::new(ret::LENGTH_ERROR, subtype::NO_SUBTYPE).with_detail(
                format!(
                    "dat_rmr_bind: {} bytes; one bind covers at most 2 GiB",
                    triplet.segment_length
                ),
            ));
        }
        if !lmr.pz().same(&self.pz) {
            return Err(DatError::invalid_parameter(2).with_detail(
                "dat_rmr_bind: the LMR is in another PZ than the RMR and the endpoint",
            ));
        }
        if !lmr.rmr_bindable() {
            return Err(DatError::new(ret::PRIVILEGES_VIOLATION, subtype::NO_SUBTYPE).with_detail(
                format!(
                    "dat_rmr_bind: the LMR was created with privileges {:#x}, which do not let \
                     RMRs bind in it; create it with DAT_MEM_PRIV_LOCAL_WRITE_FLAG (or remote \
                     write)",
                    lmr.privileges().0
                ),
            ));
        }
        // SAFETY: the range lies inside the LMR (checked above), which this RMR keeps
        // registered from now on (the binding holds it); the device only translates
        // through it and checks the key itself.
        let region = unsafe {
            Sge::from_raw(triplet.virtual_address, triplet.segment_length as u32, lmr.lmr_context())
        };
        let mut binding = lock(&self.binding);
        let key = ep.post_rmr_bind(&self.mw, Some(region), access, self.id, cookie, flags)?;
        if key.is_some() {
            let posted = RmrBinding {
                lmr: lmr.clone(),
                triplet: *triplet,
                mem_priv: privileges,
                ep: ep.id(),
            };
            *binding = Some((posted, LmrInUse::new(lmr)));
        }
        Ok(self.rmr_context())
    }

    fn unbind(&self, ep: &Ep, cookie: u64, flags: u32) -> DatResult<u32> {
        let mut binding = lock(&self.binding);
        let key = ep.post_rmr_bind(&self.mw, None, Access::default(), self.id, cookie, flags)?;
        if key.is_some() {
            *binding = None;
        }
        Ok(self.rmr_context())
    }

    /// `dat_rmr_free`, bound or not: the window is destroyed, its context fails from now on
    /// (a bind still in flight completes, flushed or not, with its event).
    pub fn free(self) -> DatResult<()> {
        drop(self);
        Ok(())
    }
}

/// The driver rights a bind grants for DAT `privileges`.
fn remote_access(privileges: MemPriv) -> DatResult<Access> {
    let known = mem_priv::ALL | mem_priv::IB_REMOTE_ATOMIC;
    if privileges.0 & !known != 0 {
        return Err(DatError::invalid_parameter(4).with_detail(format!(
            "dat_rmr_bind: memory privileges {:#x} carry unknown bits {:#x}; use \
             DAT_MEM_PRIV_REMOTE_READ_FLAG, _REMOTE_WRITE_FLAG, DAT_IB_MEM_PRIV_REMOTE_ATOMIC",
            privileges.0,
            privileges.0 & !known
        )));
    }
    let mut access = Access::default();
    if privileges.0 & mem_priv::REMOTE_READ != 0 {
        access |= Access::REMOTE_READ;
    }
    if privileges.0 & mem_priv::REMOTE_WRITE != 0 {
        access |= Access::REMOTE_WRITE;
    }
    if privileges.0 & mem_priv::IB_REMOTE_ATOMIC != 0 {
        access |= Access::REMOTE_ATOMIC;
    }
    Ok(access)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
