//! Two RC QPs of one context on one CQ, connected to each other: the loopback pair the
//! single-process data-path tests (and the hardware smoke test) run on.
#![allow(dead_code)]

use ferrodat_driver::{Access, Context, Cq, Pd, Qp, QpCaps, QpInit, RemoteQp};

/// QPs `a` and `b` (60 inline bytes, default sizes) on `cq`, at RTS towards each other.
pub fn connected_pair<'m>(ctx: &Context, pd: &Pd, cq: &Cq, sq_sig_all: bool) -> (Qp<'m>, Qp<'m>) {
    let init = QpInit {
        sq_sig_all,
        ..QpInit::new(cq, cq, QpCaps { max_inline_data: 60, ..Default::default() })
    };
    connected_pair_of(ctx, [pd, pd], &init)
}

/// QPs `a` in `pds[0]` and `b` in `pds[1]`, both made from `init`, at RTS towards each other.
pub fn connected_pair_of<'m>(ctx: &Context, pds: [&Pd; 2], init: &QpInit) -> (Qp<'m>, Qp<'m>) {
    let mut a = Qp::new(pds[0], init).unwrap_or_else(|e| panic!("CREATE_QP: {e}"));
    let mut b = Qp::new(pds[1], init).unwrap_or_else(|e| panic!("CREATE_QP: {e}"));
    let gid = ctx.source_gid(1).unwrap().1;
    let peer = |q: &Qp, psn| RemoteQp { qpn: q.qpn(), psn, gid, max_rd_atomic: 4 };
    let (pa, pb) = (peer(&a, 11), peer(&b, 22));
    a.connect(&pb, 11, 3, Access::ALL).unwrap();
    b.connect(&pa, 22, 3, Access::ALL).unwrap();
    (a, b)
}
