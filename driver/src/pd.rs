//! Protection domains.

use crate::context::Context;
use crate::error::Result;
use ferrodat_abi::mlx5;
use ferrodat_abi::uverbs::{self, cmd};
use std::sync::Arc;
use zerocopy::IntoBytes;

/// A protection domain (ALLOC_PD). Cheap to clone; MRs, QPs and SRQs hold a clone, so
/// DEALLOC_PD runs when the last of them goes.
#[derive(Clone, Debug)]
pub struct Pd {
    pub(crate) inner: Arc<PdInner>,
}

#[derive(Debug)]
pub(crate) struct PdInner {
    pub(crate) ctx: Context,
    pub(crate) handle: u32,
    pdn: u32,
}

impl Pd {
    /// ALLOC_PD.
    pub fn new(ctx: &Context) -> Result<Pd> {
        let out = size_of::<uverbs::AllocPdResp>() + size_of::<mlx5::AllocPdResp>();
        let r =
            ctx.run("ALLOC_PD", cmd::ALLOC_PD, uverbs::AllocPd::default().as_bytes(), &[], out)?;
        let core: uverbs::AllocPdResp = crate::command::read("ALLOC_PD", &r, 0)?;
        let m: mlx5::AllocPdResp =
            crate::command::read("ALLOC_PD", &r, size_of::<uverbs::AllocPdResp>())?;
        Ok(Pd { inner: Arc::new(PdInner { ctx: ctx.clone(), handle: core.pd_handle, pdn: m.pdn }) })
    }

    /// The context.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// The device's PD number.
    pub fn pdn(&self) -> u32 {
        self.inner.pdn
    }

    pub(crate) fn handle(&self) -> u32 {
        self.inner.handle
    }
}

impl Drop for PdInner {
    fn drop(&mut self) {
        let req = uverbs::DeallocPd { pd_handle: self.handle };
        let what = format_args!("PD {:#x}", self.pdn);
        self.ctx.run_on_drop("DEALLOC_PD", cmd::DEALLOC_PD, req.as_bytes(), 0, what);
    }
}
