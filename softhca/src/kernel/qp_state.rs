//! The RC column of the kernel's QP state table (`qp_state_table` in core/verbs.c, checked by
//! `ib_modify_qp_is_ok`) and the transitions mlx5 has a firmware command for (`optab` in
//! `__mlx5_ib_modify_qp`).

use crate::objects::QpState;
use ferrodat_abi::uverbs::qp_attr::*;

/// One legal transition: the attributes it requires and those it also accepts
/// (`IB_QP_STATE` is always accepted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    /// Current state.
    pub from: QpState,
    /// Next state.
    pub to: QpState,
    /// Attribute bits that must be present.
    pub required: u32,
    /// Attribute bits that may be present.
    pub optional: u32,
}

const fn t(from: QpState, to: QpState, required: u32, optional: u32) -> Transition {
    Transition { from, to, required, optional }
}

use QpState::{Err, Init, Reset, Rtr, Rts, Sqd, Sqe};

/// Every transition `qp_state_table` marks valid, with its RC parameters. (MLNX_OFED adds
/// vendor bits to RTR→RTS and RTS→RTS; upstream has none, and neither has softhca.)
pub const RC_TRANSITIONS: &[Transition] = &[
    t(Reset, Reset, 0, 0),
    t(Reset, Init, PKEY_INDEX | PORT | ACCESS_FLAGS, 0),
    t(Init, Reset, 0, 0),
    t(Init, Err, 0, 0),
    t(Init, Init, 0, PKEY_INDEX | PORT | ACCESS_FLAGS),
    t(
        Init,
        Rtr,
        AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
        ALT_PATH | ACCESS_FLAGS | PKEY_INDEX,
    ),
    t(Rtr, Reset, 0, 0),
    t(Rtr, Err, 0, 0),
    t(
        Rtr,
        Rts,
        TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC,
        CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE,
    ),
    t(Rts, Reset, 0, 0),
    t(Rts, Err, 0, 0),
    t(Rts, Rts, 0, CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER),
    t(Rts, Sqd, 0, EN_SQD_ASYNC_NOTIFY),
    t(Sqd, Reset, 0, 0),
    t(Sqd, Err, 0, 0),
    t(Sqd, Rts, 0, CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE),
    t(
        Sqd,
        Sqd,
        0,
        PORT | AV
            | TIMEOUT
            | RETRY_CNT
            | RNR_RETRY
            | MAX_QP_RD_ATOMIC
            | MAX_DEST_RD_ATOMIC
            | ALT_PATH
            | ACCESS_FLAGS
            | PKEY_INDEX
            | MIN_RNR_TIMER
            | PATH_MIG_STATE,
    ),
    t(Sqe, Reset, 0, 0),
    t(Sqe, Err, 0, 0),
    t(Sqe, Rts, 0, 0),
    t(Err, Reset, 0, 0),
    t(Err, Err, 0, 0),
];

/// The table entry for `from → to`, if the transition is valid at all.
pub fn transition(from: QpState, to: QpState) -> Option<&'static Transition> {
    RC_TRANSITIONS.iter().find(|t| t.from == from && t.to == to)
}

/// `ib_modify_qp_is_ok` for an RC QP.
pub fn modify_is_ok(cur: QpState, next: QpState, mask: u32) -> bool {
    // CUR_STATE only makes sense where the hardware may have moved the QP on its own.
    if mask & CUR_STATE != 0 && !matches!(cur, Rtr | Rts | Sqd | Sqe) {
        return false;
    }
    let Some(t) = transition(cur, next) else {
        return false;
    };
    mask & t.required == t.required && mask & !(t.required | t.optional | STATE) == 0
}

/// Whether mlx5 has a firmware command for `from → to` (`optab`): it lacks RTS→SQD and
/// SQD→SQD, so those fail with EINVAL although the core table allows them.
pub fn mlx5_has_command(from: QpState, to: QpState) -> bool {
    matches!(
        (from, to),
        (_, Reset | Err)
            | (Reset, Init)
            | (Init, Init)
            | (Init, Rtr)
            | (Rtr, Rts)
            | (Rts, Rts)
            | (Sqd, Rts)
            | (Sqe, Rts)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pingpong_masks_pass() {
        assert!(modify_is_ok(Reset, Init, 0x39));
        assert!(modify_is_ok(Init, Rtr, 0x129181));
        assert!(modify_is_ok(Rtr, Rts, 0x12e01));
        assert!(!modify_is_ok(Reset, Err, STATE));
        assert!(!modify_is_ok(Init, Rts, STATE));
        assert!(!modify_is_ok(Init, Init, STATE | CUR_STATE));
    }
}
