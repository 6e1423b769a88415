//! Protection zones: a driver PD. LMRs, RMRs, EPs and SRQs made in a PZ hold it, so
//! `dat_pz_free` refuses while any of them lives (`DAT_INVALID_STATE_PZ_IN_USE`).

use crate::error::{DatError, DatResult};
use crate::ia::Ia;
use ferrodat_abi::dat::subtype;
use ferrodat_driver::Pd;
use std::sync::Arc;

/// A protection zone. Cheap to clone; the objects made in it hold a clone.
#[derive(Clone, Debug)]
pub struct Pz {
    inner: Arc<PzInner>,
}

#[derive(Debug)]
struct PzInner {
    ia: Ia,
    pd: Pd,
}

impl Pz {
    /// `dat_pz_create`.
    pub fn create(ia: &Ia) -> DatResult<Pz> {
        let pd = Pd::new(ia.context()).map_err(|e| {
            DatError::insufficient_resources(subtype::RESOURCE_PROTECTION_DOMAIN)
                .with_detail(format!("dat_pz_create on {}: {e}", ia.name()))
        })?;
        Ok(Pz { inner: Arc::new(PzInner { ia: ia.clone(), pd }) })
    }

    /// `dat_pz_query`: the IA it belongs to.
    pub fn ia(&self) -> &Ia {
        &self.inner.ia
    }

    /// Both handles are the same PZ.
    pub fn same(&self, other: &Pz) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The driver PD under it.
    pub(crate) fn pd(&self) -> &Pd {
        &self.inner.pd
    }

    /// `dat_pz_free`: refused while an LMR, RMR, EP or SRQ uses the PZ (the caller keeps
    /// its handle then; an engine thread's momentary hold through a freed endpoint is
    /// waited out); DEALLOC_PD runs when the last handle goes.
    pub fn free(self) -> Result<(), (Pz, DatError)> {
        let users = crate::transient_hold::other_holders(&self.inner);
        if users > 0 {
            let e = DatError::invalid_state(subtype::INVALID_STATE_PZ_IN_USE).with_detail(format!(
                "dat_pz_free: {users} object(s) (LMRs, RMRs, EPs, SRQs) still use the PZ; free \
                 them first"
            ));
            return Err((self, e));
        }
        Ok(())
    }
}

/// `DAT_PZ_PARAM`, as `dat_pz_query` reports it.
#[derive(Clone, Debug)]
pub struct PzParam {
    /// `ia_handle`.
    pub ia: Ia,
}

impl Pz {
    /// `dat_pz_query`: every field of `DAT_PZ_PARAM`.
    pub fn query(&self) -> PzParam {
        PzParam { ia: self.inner.ia.clone() }
    }
}
