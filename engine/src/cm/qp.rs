//! From exchanged [`ConnInfo`]s to a connected QP: what to advertise, what both sides
//! agree on, and the MODIFY_QP sequence. See the module docs of [`super`] for when each
//! side calls [`connect_qp`].

use super::wire::{ConnInfo, MAX_RD_ATOMIC};
use ferrodat_driver::{Access, Context, Error, Qp, QpAttr, QpState, RemoteQp};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A fresh 24-bit starting PSN (different per call and per process, as IB CM does, so a
/// stale packet of an earlier connection on a reused QP number is not taken as new).
pub fn random_psn() -> u32 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let t = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    let mut x = t
        ^ (u64::from(std::process::id()) << 32)
        ^ COUNTER.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x & 0xff_ffff) as u32
}

/// What this side advertises for `qp`: its QPN, a [`random_psn`], port 1's source GID
/// ([`Context::source_gid`]), the port's active MTU and the RDMA READ limits (the EP's
/// `max_rdma_read_out` / `max_rdma_read_in`, each capped at 16).
pub fn local_conn_info(
    ctx: &Context,
    qp: &Qp<'_>,
    initiator_depth: u8,
    responder_resources: u8,
) -> Result<ConnInfo, Error> {
    let port = ctx.query_port(1)?;
    Ok(ConnInfo {
        qpn: qp.qpn(),
        psn: random_psn(),
        gid: ctx.source_gid(1)?.1,
        responder_resources: responder_resources.min(MAX_RD_ATOMIC),
        initiator_depth: initiator_depth.min(MAX_RD_ATOMIC),
        path_mtu: port.active_mtu.clamp(1, 5),
    })
}

/// What both sides of a connection use, computed the same way on each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// The smaller of the two path MTUs.
    pub path_mtu: u8,
    /// RDMA READs this side may have outstanding: min(our initiator depth, their
    /// responder resources) — our `max_rd_atomic`.
    pub max_rd_atomic: u8,
    /// RDMA READs this side serves: min(our responder resources, their initiator depth)
    /// — our `max_dest_rd_atomic`.
    pub max_dest_rd_atomic: u8,
}

/// The values `local` and `peer` agree on.
pub fn negotiate(local: &ConnInfo, peer: &ConnInfo) -> Negotiated {
    Negotiated {
        path_mtu: local.path_mtu.min(peer.path_mtu),
        max_rd_atomic: local.initiator_depth.min(peer.responder_resources),
        max_dest_rd_atomic: local.responder_resources.min(peer.initiator_depth),
    }
}

/// Brings `qp` up towards `peer`: RESET→INIT (with `access`; skipped when the QP is
/// already in INIT, as an EP with pre-posted receives is), INIT→RTR (the peer's QPN, PSN
/// and GID, the negotiated MTU and READ depth), RTR→RTS (our PSN `local.psn`). A QP in any
/// other state is refused: reset it first (`dat_ep_reset`).
pub fn connect_qp(
    qp: &mut Qp<'_>,
    local: &ConnInfo,
    peer: &ConnInfo,
    access: Access,
) -> Result<(), Error> {
    let n = negotiate(local, peer);
    match qp.query()?.state {
        Some(QpState::Reset) => qp.modify(&QpAttr::reset_to_init(access))?,
        Some(QpState::Init) => {}
        other => {
            return Err(Error::invalid(
                "connect QP",
                format!(
                    "qpn {:#x} is in state {other:?}; connecting needs RESET or INIT (reset \
                     the endpoint first)",
                    qp.qpn()
                ),
            ));
        }
    }
    let remote = RemoteQp {
        qpn: peer.qpn,
        psn: peer.psn,
        gid: peer.gid,
        max_rd_atomic: n.max_dest_rd_atomic,
    };
    let (sgid_index, _) = qp.context().source_gid(1)?;
    qp.modify(&QpAttr::init_to_rtr(&remote, n.path_mtu).source_gid_index(sgid_index))?;
    qp.modify(&QpAttr::rtr_to_rts(local.psn, n.max_rd_atomic).timeout(ACK_TIMEOUT))
}

/// The local ACK timeout of a connected QP: 4.096 µs × 2^16 ≈ 268 ms, times 8 tries
/// (retry_cnt 7) before a request fails with a transport error — OFA dapl's defaults. The
/// verbs default of 14 (67 ms, about half a second in all) broke 4 MiB RDMA writes of
/// busy-polling consumers on a loaded 2-core host running softhca, whose responder is a
/// thread that may wait that long for a core.
pub const ACK_TIMEOUT: u8 = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psns_are_24_bits_and_vary() {
        let a: Vec<u32> = (0..64).map(|_| random_psn()).collect();
        assert!(a.iter().all(|p| *p <= 0xff_ffff));
        let mut d = a.clone();
        d.sort_unstable();
        d.dedup();
        assert!(d.len() > 60, "{a:?}");
    }

    #[test]
    fn both_sides_negotiate_mirror_images() {
        let a = ConnInfo {
            qpn: 1,
            psn: 2,
            gid: [0; 16],
            responder_resources: 8,
            initiator_depth: 2,
            path_mtu: 5,
        };
        let b = ConnInfo { responder_resources: 1, initiator_depth: 16, path_mtu: 3, ..a };
        let (na, nb) = (negotiate(&a, &b), negotiate(&b, &a));
        assert_eq!(na, Negotiated { path_mtu: 3, max_rd_atomic: 1, max_dest_rd_atomic: 8 });
        assert_eq!(na.path_mtu, nb.path_mtu);
        assert_eq!(na.max_rd_atomic, nb.max_dest_rd_atomic);
        assert_eq!(na.max_dest_rd_atomic, nb.max_rd_atomic);
    }
}
