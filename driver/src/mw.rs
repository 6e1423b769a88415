//! Memory windows (type 1): a remote key that grants access to part of a memory region,
//! moved and revoked by bind work requests posted on a QP of the window's PD.
//!
//! [`Pd::alloc_mw`] makes a window that grants nothing; [`crate::Qp::bind_mw`] posts the
//! bind (rdma-core's `ibv_bind_mw`: the window's key gets a new variant byte, the new key
//! is returned at once and the peer may use it once the bind has executed, which every
//! later request of that QP waits for); binding with no region unbinds. DEALLOC_MW runs on
//! drop and revokes the key whether or not it is bound.

use crate::error::Result;
use crate::mr::Access;
use crate::pd::Pd;
use ferrodat_abi::uverbs::{self, cmd, mw_type};
use std::sync::atomic::{AtomicU32, Ordering};
use zerocopy::IntoBytes;

/// A type 1 memory window (ALLOC_MW). It holds its [`Pd`].
#[derive(Debug)]
pub struct Mw {
    pd: Pd,
    handle: u32,
    /// The key of the last bind posted (rdma-core's `mw->rkey`, updated when a bind is
    /// posted, not when it completes).
    rkey: AtomicU32,
}

/// What a bind work request carries ([`crate::work_request::SendOp::BindMw`]); made by
/// [`Mw::next_bind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MwBind {
    /// The window's current key (the WQE names the window by it).
    pub window_key: u32,
    /// The key the window has once the bind executed: the variant byte incremented
    /// (`ibv_inc_rkey`).
    pub new_key: u32,
    /// The remote rights the window grants (REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC).
    pub access: Access,
}

impl Pd {
    /// ALLOC_MW of a type 1 window in this PD.
    pub fn alloc_mw(&self) -> Result<Mw> {
        let req = uverbs::AllocMw {
            pd_handle: self.handle(),
            mw_type: mw_type::TYPE_1,
            ..Default::default()
        };
        let r = self
            .context()
            .run("ALLOC_MW", cmd::ALLOC_MW, req.as_bytes(), &[], size_of::<uverbs::AllocMwResp>())
            .map_err(|e| e.with_hint("the device must report memory windows (MEM_WINDOW)"))?;
        let resp: uverbs::AllocMwResp = crate::command::read("ALLOC_MW", &r, 0)?;
        Ok(Mw { pd: self.clone(), handle: resp.mw_handle, rkey: AtomicU32::new(resp.rkey) })
    }
}

impl Mw {
    /// The key of the last bind posted (the ALLOC_MW key before any): what a peer uses.
    pub fn rkey(&self) -> u32 {
        self.rkey.load(Ordering::Acquire)
    }

    /// The PD.
    pub fn pd(&self) -> &Pd {
        &self.pd
    }

    /// The bind that moves the window from its current key to the next one, granting
    /// `access` (ignored for an unbind). Post it with [`crate::Qp::bind_mw`], which records
    /// the new key once the bind is posted.
    pub fn next_bind(&self, access: Access) -> MwBind {
        let window_key = self.rkey();
        let new_key = window_key & !0xff | (window_key.wrapping_add(1) & 0xff);
        MwBind { window_key, new_key, access }
    }

    /// Records that `bind` was posted: the window's key is now `bind.new_key`.
    pub(crate) fn posted(&self, bind: &MwBind) {
        self.rkey.store(bind.new_key, Ordering::Release);
    }
}

impl Drop for Mw {
    fn drop(&mut self) {
        let req = uverbs::DeallocMw { mw_handle: self.handle };
        let what = format_args!("MW rkey {:#x}", self.rkey());
        self.pd.context().run_on_drop("DEALLOC_MW", cmd::DEALLOC_MW, req.as_bytes(), 0, what);
    }
}
