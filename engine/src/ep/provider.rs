//! Endpoints the provider creates for requests on a PSP with `DAT_PSP_PROVIDER_FLAG`.
//!
//! Such an endpoint comes with its connection request in TENTATIVE_CONNECTION_PENDING
//! with the default attributes and, as DAT says, no PZ and no EVDs (`dat_ep_query`
//! reports NULL). The consumer names them with `dat_ep_modify` (legal in that state), then
//! accepts with `dat_cr_accept(cr, NULL)`; accepting before is
//! `DAT_INVALID_STATE/EP_NOTREADY`, rejecting hands the endpoint back to the provider.
//!
//! Until then its QP sits in a placeholder PZ the PSP owns, its completions going to its own
//! silent CQ as for any NULL DTO EVD (`ep::silent`); the modify swaps in a QP on the
//! consumer's PZ and EVDs (`ep::param`), so its queue sizes are the defaults', which the
//! modify may lower. The consumer may leave the DTO EVDs NULL; the PZ it must name.

use super::{Ep, Origin, lock};
use crate::error::DatResult;
use crate::ia::Ia;
use crate::pz::Pz;
use std::net::SocketAddr;

/// The PZ a provider-created endpoint's QP sits in until the consumer names its own.
#[derive(Debug)]
pub(crate) struct Placeholders {
    pz: Pz,
}

impl Placeholders {
    pub(crate) fn new(ia: &Ia) -> DatResult<Placeholders> {
        Ok(Placeholders { pz: Pz::create(ia)? })
    }
}

impl Ep {
    /// A provider-created endpoint for a request from `remote` (see the module docs); its
    /// query names the requester from the start.
    pub(crate) fn create_for_request(p: &Placeholders, remote: SocketAddr) -> DatResult<Ep> {
        let ep = Ep::create_in(&p.pz, None, None, None, None, None, Origin::Provider)?;
        *lock(&ep.inner.remote) = Some(remote);
        Ok(ep)
    }
}
