//! The uverbs `write()` command protocol of `rdma/ib_user_verbs.h`.
//!
//! A command is one `write()` on `/dev/infiniband/uverbsN`: a [`CmdHdr`] (or, for extended
//! commands, a [`CmdHdr`] followed by an [`ExCmdHdr`]), the core request, then the driver's
//! request ("UHW", see [`crate::mlx5`]). The kernel writes the core response, then the
//! driver's response, to the user address in the request's `response` field. All fields are
//! host-endian, except the GUIDs of [`QueryDeviceResp`], which are big-endian.

use crate::layout::layout;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `struct ib_uverbs_cmd_hdr`: the header of every command.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct CmdHdr {
    /// Command number ([`cmd`]), or [`CMD_FLAG_EXTENDED`] | the extended command number.
    pub command: u32,
    /// Whole write length in 4-byte words, header included (legacy commands); for extended
    /// commands, the core request length in 8-byte words, both headers excluded.
    pub in_words: u16,
    /// Response length in 4-byte words (legacy) or the core response in 8-byte words (extended).
    pub out_words: u16,
}
layout!(CmdHdr, size = 8, command @ 0, in_words @ 4, out_words @ 6);
