//! Two RC QPs of one context on one CQ, connected to each other: the loopback pair the
//! single-process data-path tests (and the hardware smoke test) run on.

use ferrodat_driver::{Access, Context, Cq, Pd, Qp, QpCaps, QpInit, RemoteQp};

/// QPs `a` and `b` (60 inline bytes, default sizes) on `cq`, at RTS towards each other.
pub fn connected_pair<'m>(ctx: &Context, pd: &Pd, cq: &Cq, sq_sig_all: bool) -> (Qp<'m>, Qp<'m>) {
    let init = QpInit {
        sq_sig_all,
        ..QpInit::new(cq, cq, QpCaps { max_inline_data: 60, ..Default::default() })
    };
    let mut a = Qp::new(pd, &init).unwrap();
    let mut b = Qp::new(pd, &init).unwrap();
    let gid = ctx.source_gid(1).unwrap().1;
    let peer = |q: &Qp, psn| RemoteQp { qpn: q.qpn(), psn, gid, max_rd_atomic: 4 };
    let (pa, pb) = (peer(&a, 11), peer(&b, 22));
    a.connect(&pb, 11, 3, Access::ALL).unwrap();
    b.connect(&pa, 22, 3, Access::ALL).unwrap();
    (a, b)
}
