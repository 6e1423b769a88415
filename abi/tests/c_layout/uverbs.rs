//! `abi::uverbs` against `rdma/ib_user_verbs.h`.

use crate::probe::Probe;
use ferrodat_abi::uverbs::*;

pub fn register(p: &mut Probe) {
    check_struct!(p, "struct ib_uverbs_cmd_hdr", CmdHdr { command, in_words, out_words });
}
