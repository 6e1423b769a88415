//! What the library says on stderr, once per kind, when a verbs program asks for something
//! softhca does not model. The programs cannot say it: `ibv_uc_pingpong` and
//! `ibv_ud_pingpong` print "Couldn't create QP", `ibv_xsrq_pingpong` "Couldn't Open the XRC
//! Domain 95", perftest "Failed to create QP.", and librdmacm (`rping`, perftest's `-R`)
//! "No such file or directory" or nothing at all.
//!
//! softhca answers what it leaves out with EOPNOTSUPP (`ferrodat_softhca::kernel`), which
//! no command of the programs that work draws (GET_CONTEXT's DEVX attempt, which every
//! program makes first, is EINVAL, as from an mlx5 without DEVX): a note on it does not
//! sound in a run that works.

use ferrodat_abi::uverbs::{
    CMD_FLAG_EXTENDED, CmdHdr, CreateQp, ExCmdHdr, ExCreateQp, cmd, ex_cmd,
};
use ferrodat_abi::uverbs::{qp_type, qp_type::RC};
use std::mem::{offset_of, size_of};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where the limits are listed.
const LIMITS: &str = "README.md, \"Run verbs programs without RDMA hardware\", lists the limits";

/// Commands already explained: bit `n` of `[0]` for legacy command `n`, of `[1]` for
/// extended command `n` (numbers from 64 share bit 63).
static SAID: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// `write(2)` of command `bytes` on a device fd failed with `errno`: says why, the first
/// time, if softhca refused it as something it does not model.
pub(crate) fn command_failed(bytes: &[u8], errno: i32) {
    if errno != libc::EOPNOTSUPP {
        return;
    }
    if let Some(note) = note(bytes) {
        eprintln!("softhca-preload: {note}");
    }
}

/// The note for refused command `bytes`, or None if one was given for its command already.
fn note(bytes: &[u8]) -> Option<String> {
    let word = u32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?);
    let extended = word & CMD_FLAG_EXTENDED != 0;
    let number = word & 0xff;
    let bit = 1u64 << number.min(63);
    if SAID[usize::from(extended)].fetch_or(bit, Ordering::Relaxed) & bit != 0 {
        return None;
    }
    let qp_type_at = if extended {
        size_of::<CmdHdr>() + size_of::<ExCmdHdr>() + offset_of!(ExCreateQp, qp_type)
    } else {
        size_of::<CmdHdr>() + offset_of!(CreateQp, qp_type)
    };
    let what = match (extended, number) {
        (false, cmd::CREATE_QP) | (true, ex_cmd::CREATE_QP) => match bytes.get(qp_type_at) {
            Some(&RC) => {
                return Some(format!(
                    "CREATE_QP of an RC QP refused (EOPNOTSUPP): it asks for something \
                     softhca does not model (create flags, sizes); {LIMITS}"
                ));
            }
            Some(&t) => {
                return Some(format!(
                    "CREATE_QP of {} refused (EOPNOTSUPP): softhca models RC QPs only \
                     (with SRQs); UC, UD, XRC, raw packet and DC QPs are not modelled; {LIMITS}",
                    qp_type_name(t)
                ));
            }
            None => "CREATE_QP".to_string(),
        },
        (false, cmd::OPEN_XRCD | cmd::CREATE_XSRQ | cmd::OPEN_QP) => {
            return Some(format!(
                "{} refused (EOPNOTSUPP): softhca does not model XRC; {LIMITS}",
                name(number)
            ));
        }
        (false, cmd::CREATE_AH) => {
            return Some(format!(
                "CREATE_AH refused (EOPNOTSUPP): softhca has no address handles (UD is not \
                 modelled); {LIMITS}"
            ));
        }
        (false, n) => name(n).to_string(),
        (true, n) => ex_name(n),
    };
    Some(format!("{what} refused (EOPNOTSUPP): softhca does not model it; {LIMITS}"))
}

fn qp_type_name(t: u8) -> String {
    match t {
        qp_type::UC => "a UC QP".into(),
        qp_type::UD => "a UD QP".into(),
        qp_type::RAW_PACKET => "a raw packet QP".into(),
        qp_type::XRC_INI => "an XRC initiator QP".into(),
        qp_type::XRC_TGT => "an XRC target QP".into(),
        qp_type::DRIVER => "a driver QP (mlx5 DC)".into(),
        t => format!("a QP of type {t}"),
    }
}

/// The name of legacy command `n` (`IB_USER_VERBS_CMD_*`).
fn name(n: u32) -> &'static str {
    const NAMES: [&str; 41] = [
        "GET_CONTEXT",
        "QUERY_DEVICE",
        "QUERY_PORT",
        "ALLOC_PD",
        "DEALLOC_PD",
        "CREATE_AH",
        "MODIFY_AH",
        "QUERY_AH",
        "DESTROY_AH",
        "REG_MR",
        "REG_SMR",
        "REREG_MR",
        "QUERY_MR",
        "DEREG_MR",
        "ALLOC_MW",
        "BIND_MW",
        "DEALLOC_MW",
        "CREATE_COMP_CHANNEL",
        "CREATE_CQ",
        "RESIZE_CQ",
        "DESTROY_CQ",
        "POLL_CQ",
        "PEEK_CQ",
        "REQ_NOTIFY_CQ",
        "CREATE_QP",
        "QUERY_QP",
        "MODIFY_QP",
        "DESTROY_QP",
        "POST_SEND",
        "POST_RECV",
        "ATTACH_MCAST",
        "DETACH_MCAST",
        "CREATE_SRQ",
        "MODIFY_SRQ",
        "QUERY_SRQ",
        "DESTROY_SRQ",
        "POST_SRQ_RECV",
        "OPEN_XRCD",
        "CLOSE_XRCD",
        "CREATE_XSRQ",
        "OPEN_QP",
    ];
    NAMES.get(n as usize).copied().unwrap_or("a verbs command")
}

/// The name of extended command `n` (`IB_USER_VERBS_EX_CMD_*`).
fn ex_name(n: u32) -> String {
    let known = match n {
        ex_cmd::QUERY_DEVICE => "EX_QUERY_DEVICE",
        ex_cmd::CREATE_CQ => "EX_CREATE_CQ",
        ex_cmd::MODIFY_QP => "EX_MODIFY_QP",
        ex_cmd::CREATE_FLOW => "CREATE_FLOW (flow steering)",
        ex_cmd::DESTROY_FLOW => "DESTROY_FLOW",
        ex_cmd::CREATE_WQ => "CREATE_WQ (work queues)",
        ex_cmd::MODIFY_WQ => "MODIFY_WQ",
        ex_cmd::DESTROY_WQ => "DESTROY_WQ",
        ex_cmd::CREATE_RWQ_IND_TBL => "CREATE_RWQ_IND_TBL (RSS)",
        ex_cmd::DESTROY_RWQ_IND_TBL => "DESTROY_RWQ_IND_TBL",
        ex_cmd::MODIFY_CQ => "MODIFY_CQ (CQ moderation)",
        n => return format!("extended verbs command {n}"),
    };
    known.to_string()
}

/// librdmacm's device file, which the library does not serve.
pub(crate) const RDMA_CM: &[u8] = b"/dev/infiniband/rdma_cm";

/// An open of [`RDMA_CM`] failed: says once that softhca has no connection manager.
pub(crate) fn rdma_cm_missing() {
    static SAID: Once = Once::new();
    SAID.call_once(|| {
        eprintln!(
            "softhca-preload: /dev/infiniband/rdma_cm is not served: softhca has no RDMA \
             connection manager, so librdmacm programs (rping, ucmatose, perftest -R) cannot \
             run; programs that exchange QP numbers over TCP (ibv_rc_pingpong, perftest \
             without -R) can; {LIMITS}"
        )
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A legacy CREATE_QP command of `qp_type`, as libibverbs writes it (header, core
    /// request; the driver's request is left out).
    fn create_qp(t: u8) -> Vec<u8> {
        let mut bytes = vec![0u8; size_of::<CmdHdr>() + size_of::<CreateQp>()];
        bytes[..4].copy_from_slice(&cmd::CREATE_QP.to_ne_bytes());
        bytes[size_of::<CmdHdr>() + offset_of!(CreateQp, qp_type)] = t;
        bytes
    }

    #[test]
    fn a_refused_qp_type_is_named_once() {
        let first = note(&create_qp(qp_type::UD)).expect("a note");
        assert!(first.contains("a UD QP") && first.contains("RC QPs only"), "{first}");
        assert_eq!(note(&create_qp(qp_type::UC)), None, "said once per command");
    }

    #[test]
    fn an_extended_command_is_named_by_its_number() {
        let mut bytes = vec![0u8; 8];
        bytes[..4].copy_from_slice(&(CMD_FLAG_EXTENDED | ex_cmd::CREATE_WQ).to_ne_bytes());
        let text = note(&bytes).expect("a note");
        assert!(text.starts_with("CREATE_WQ (work queues) refused (EOPNOTSUPP)"), "{text}");
    }
}
