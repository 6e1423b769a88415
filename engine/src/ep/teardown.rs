//! An endpoint's part in an abrupt `dat_ia_close`: its connection is aborted without
//! further events and it ends in DISCONNECTED (posts on it then complete as flushed).

use super::{Ep, EpInner, lock};
use crate::ep_state::Trigger;
use crate::ia::{ChildKind, IaChild};
use std::sync::{Arc, Weak};

impl Ep {
    /// Lets the IA find the endpoint when it is closed abruptly.
    pub(super) fn register_with_ia(&self) {
        let child: Weak<dyn IaChild> = Arc::downgrade(&self.inner) as _;
        self.inner.ia.register(child);
    }
}

impl IaChild for EpInner {
    fn kind(&self) -> ChildKind {
        ChildKind::Endpoint
    }

    /// As `dat_ep_free` would (DISCONNECTED, the connection aborted), in every state: an
    /// RSP's or a request's endpoint, which `dat_ep_free` refuses, just loses its
    /// connection.
    fn abort_for_ia_close(self: Arc<Self>) {
        let ep = Ep { inner: self };
        // Refused in RESERVED / PASSIVE_ or TENTATIVE_CONNECTION_PENDING: nothing is
        // connected there, and the request's connection is dropped below.
        let _ = ep.step(Trigger::Free);
        if let Some(conn) = lock(&ep.inner.conn).take() {
            let _ = conn.disconnect(false);
        }
    }
}
