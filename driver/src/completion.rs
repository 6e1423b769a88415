//! What polling a completion queue gives: a [`WorkCompletion`] per finished work request,
//! with the status decoded from the mlx5 error syndrome.

use ferrodat_abi::mlx5::cqe_syndrome as syn;
use ferrodat_abi::uverbs::wc_status;

/// One finished work request. Compact (32 bytes) because polling writes one per CQE;
/// the optional parts are read through methods. Laid out (`repr(C)`, this order) so that
/// what a successful send's completion leaves zero, `byte_len` to `vendor_syndrome`, is
/// one run of 16 bytes, one store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct WorkCompletion {
    /// The `wr_id` of the request.
    pub wr_id: u64,
    /// The local QP number.
    pub qpn: u32,
    /// Bytes received (receives), read (RDMA READ) or 8 (atomics); 0 otherwise.
    pub byte_len: u32,
    /// For receives: the sender's QP number.
    pub src_qp: u32,
    /// Immediate data, valid when `flags` has [`WorkCompletion::HAS_IMM`]; or the rkey a
    /// SEND with invalidate invalidated, with [`WorkCompletion::HAS_INV`].
    pub(crate) imm_data: u32,
    /// Success or why not.
    pub status: WcStatus,
    /// [`WorkCompletion::HAS_IMM`], [`WorkCompletion::SOLICITED`],
    /// [`WorkCompletion::HAS_INV`], [`WorkCompletion::SENT_IMM`].
    pub(crate) flags: u8,
    /// For errors: the mlx5 syndrome (0 for success).
    pub(crate) syndrome: u8,
    /// For errors: the vendor syndrome.
    pub(crate) vendor_syndrome: u8,
    /// What completed. For an error completion, the side (send or receive) it belongs to.
    pub opcode: WcOpcode,
}

impl WorkCompletion {
    pub(crate) const HAS_IMM: u8 = 1;
    pub(crate) const SOLICITED: u8 = 2;
    pub(crate) const HAS_INV: u8 = 4;
    /// A requester's success for a SEND or RDMA WRITE with immediate: verbs'
    /// `IBV_WC_WITH_IMM` without a value (the request's own).
    pub(crate) const SENT_IMM: u8 = 8;

    /// True if the request succeeded.
    pub fn is_ok(&self) -> bool {
        self.status == WcStatus::Success
    }

    /// Immediate data (host order) a receive got with a SEND or RDMA WRITE with immediate;
    /// `None` for requester completions (see [`WorkCompletion::carries_imm`]).
    pub fn imm(&self) -> Option<u32> {
        (self.flags & Self::HAS_IMM != 0).then_some(self.imm_data)
    }

    /// Verbs' `IBV_WC_WITH_IMM`: a receive of a message with immediate data (the value is
    /// [`WorkCompletion::imm`]), or — as rdma-core's mlx5 provider reports it — the
    /// successful requester completion of a SEND or RDMA WRITE with immediate, whose value
    /// is the one the request carried and is not reported again (`imm` is `None` there).
    /// Error completions carry no flags, as in rdma-core.
    pub fn carries_imm(&self) -> bool {
        self.flags & (Self::HAS_IMM | Self::SENT_IMM) != 0
    }

    /// The same completion with immediate data `imm` (for tools and tests that rebuild
    /// completions, e.g. from another process's report).
    pub fn with_imm(mut self, imm: Option<u32>) -> WorkCompletion {
        self.imm_data = imm.unwrap_or(0);
        self.flags = (self.flags & !Self::HAS_IMM) | if imm.is_some() { Self::HAS_IMM } else { 0 };
        self
    }

    /// For a receive of a SEND with invalidate (from a peer that sends them): the rkey the
    /// device invalidated (`IBV_WC_WITH_INV`, `invalidated_rkey` in verbs).
    pub fn invalidated_rkey(&self) -> Option<u32> {
        (self.flags & Self::HAS_INV != 0).then_some(self.imm_data)
    }

    /// For receives: the sender set the solicited-event bit.
    pub fn solicited(&self) -> bool {
        self.flags & Self::SOLICITED != 0
    }

    /// For errors: the mlx5 syndrome and vendor syndrome, as the HCA wrote them.
    pub fn syndrome(&self) -> Option<(u8, u8)> {
        (self.status != WcStatus::Success).then_some((self.syndrome, self.vendor_syndrome))
    }
}

/// What a completion reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum WcOpcode {
    /// A SEND (with or without immediate) finished.
    #[default]
    Send,
    /// An RDMA WRITE (with or without immediate) finished.
    RdmaWrite,
    /// An RDMA READ finished; the data is in the scatter list.
    RdmaRead,
    /// A compare-and-swap finished; the old value is in the scatter entry.
    CompareSwap,
    /// A fetch-and-add finished; the old value is in the scatter entry.
    FetchAdd,
    /// A NOP finished.
    Nop,
    /// A memory-window bind (or unbind) executed: the window has its new key.
    BindMw,
    /// A receive consumed an incoming SEND.
    Recv,
    /// A receive consumed an incoming RDMA WRITE with immediate (no data moved into it).
    RecvRdmaWithImm,
}

/// The status of a completion (`enum ibv_wc_status`), with what it means for the caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum WcStatus {
    /// The request succeeded.
    #[default]
    Success,
    /// Local length error: a received message was longer than the receive's buffers.
    LocalLength,
    /// Local QP operation error: the request was malformed for this QP.
    LocalQpOperation,
    /// Local protection error: a local key is wrong, of another PD, or lacks LOCAL_WRITE.
    LocalProtection,
    /// Flushed: the QP went to the error state before the request was executed.
    Flushed,
    /// Memory window bind error.
    MwBind,
    /// Bad response from the peer.
    BadResponse,
    /// Local access error (an inbound request hit a local key it may not use).
    LocalAccess,
    /// The peer found the request invalid (e.g. a message longer than its receive).
    RemoteInvalidRequest,
    /// The peer refused the access: wrong rkey, out of the region, or missing
    /// REMOTE_WRITE/READ/ATOMIC rights.
    RemoteAccess,
    /// The peer could not complete the operation.
    RemoteOperation,
    /// Transport retries exhausted: the peer did not answer (gone, or not connected).
    RetryExceeded,
    /// Receiver-not-ready retries exhausted: the peer posted no receive in time.
    RnrRetryExceeded,
    /// The peer aborted the operation.
    RemoteAborted,
    /// Another error; the syndrome is in the completion.
    General,
}

impl WcStatus {
    /// Every status, in the order of their values (a table indexed by `status as usize`
    /// can be built from it).
    pub const ALL: [WcStatus; 15] = [
        WcStatus::Success,
        WcStatus::LocalLength,
        WcStatus::LocalQpOperation,
        WcStatus::LocalProtection,
        WcStatus::Flushed,
        WcStatus::MwBind,
        WcStatus::BadResponse,
        WcStatus::LocalAccess,
        WcStatus::RemoteInvalidRequest,
        WcStatus::RemoteAccess,
        WcStatus::RemoteOperation,
        WcStatus::RetryExceeded,
        WcStatus::RnrRetryExceeded,
        WcStatus::RemoteAborted,
        WcStatus::General,
    ];

    /// The status an mlx5 error syndrome stands for (rdma-core's `mlx5_handle_error_cqe`).
    pub fn from_syndrome(syndrome: u8) -> WcStatus {
        match syndrome {
            syn::LOCAL_LENGTH_ERR => WcStatus::LocalLength,
            syn::LOCAL_QP_OP_ERR => WcStatus::LocalQpOperation,
            syn::LOCAL_PROT_ERR => WcStatus::LocalProtection,
            syn::WR_FLUSH_ERR => WcStatus::Flushed,
            syn::MW_BIND_ERR => WcStatus::MwBind,
            syn::BAD_RESP_ERR => WcStatus::BadResponse,
            syn::LOCAL_ACCESS_ERR => WcStatus::LocalAccess,
            syn::REMOTE_INVAL_REQ_ERR => WcStatus::RemoteInvalidRequest,
            syn::REMOTE_ACCESS_ERR => WcStatus::RemoteAccess,
            syn::REMOTE_OP_ERR => WcStatus::RemoteOperation,
            syn::TRANSPORT_RETRY_EXC_ERR => WcStatus::RetryExceeded,
            syn::RNR_RETRY_EXC_ERR => WcStatus::RnrRetryExceeded,
            syn::REMOTE_ABORTED_ERR => WcStatus::RemoteAborted,
            _ => WcStatus::General,
        }
    }

    /// The `IBV_WC_*` value.
    pub fn ibv_code(self) -> u32 {
        match self {
            WcStatus::Success => wc_status::SUCCESS,
            WcStatus::LocalLength => wc_status::LOC_LEN_ERR,
            WcStatus::LocalQpOperation => wc_status::LOC_QP_OP_ERR,
            WcStatus::LocalProtection => wc_status::LOC_PROT_ERR,
            WcStatus::Flushed => wc_status::WR_FLUSH_ERR,
            WcStatus::MwBind => wc_status::MW_BIND_ERR,
            WcStatus::BadResponse => wc_status::BAD_RESP_ERR,
            WcStatus::LocalAccess => wc_status::LOC_ACCESS_ERR,
            WcStatus::RemoteInvalidRequest => wc_status::REM_INV_REQ_ERR,
            WcStatus::RemoteAccess => wc_status::REM_ACCESS_ERR,
            WcStatus::RemoteOperation => wc_status::REM_OP_ERR,
            WcStatus::RetryExceeded => wc_status::RETRY_EXC_ERR,
            WcStatus::RnrRetryExceeded => wc_status::RNR_RETRY_EXC_ERR,
            WcStatus::RemoteAborted => wc_status::REM_ABORT_ERR,
            WcStatus::General => wc_status::GENERAL_ERR,
        }
    }

    /// What happened and what to check, in one sentence.
    pub fn explain(self) -> &'static str {
        match self {
            WcStatus::Success => "success",
            WcStatus::LocalLength => {
                "local length error: the incoming message is longer than the posted receive \
                 buffers (post larger receives)"
            }
            WcStatus::LocalQpOperation => {
                "local QP operation error: the work request is not valid for this QP (check \
                 the opcode, sizes and QP state)"
            }
            WcStatus::LocalProtection => {
                "local protection error: an lkey is invalid, belongs to another PD, or the \
                 region lacks LOCAL_WRITE for data written into it"
            }
            WcStatus::Flushed => {
                "flushed: the QP entered the error state before this request ran (look at the \
                 first error completion before it)"
            }
            WcStatus::MwBind => "memory window bind error",
            WcStatus::BadResponse => "bad response from the peer (transport protocol error)",
            WcStatus::LocalAccess => "local access error on an inbound request",
            WcStatus::RemoteInvalidRequest => {
                "remote invalid request: the peer rejected the request (message longer than \
                 its receive, or an operation its QP does not allow)"
            }
            WcStatus::RemoteAccess => {
                "remote access error: the rkey is wrong, the range is outside the peer's \
                 region, or the region lacks REMOTE_WRITE/READ/ATOMIC access"
            }
            WcStatus::RemoteOperation => "remote operation error: the peer could not execute it",
            WcStatus::RetryExceeded => {
                "transport retry counter exceeded: the peer did not answer (is it alive and \
                 connected? check timeout and retry_cnt)"
            }
            WcStatus::RnrRetryExceeded => {
                "RNR retry counter exceeded: the peer had no receive posted (post receives \
                 earlier, or raise rnr_retry)"
            }
            WcStatus::RemoteAborted => "the peer aborted the operation",
            WcStatus::General => "general error (see the syndrome)",
        }
    }
}

impl std::fmt::Display for WcStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.explain())
    }
}

const _: () = assert!(size_of::<WorkCompletion>() == 32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_syndrome_maps_to_its_verbs_status() {
        let table = [
            (syn::LOCAL_LENGTH_ERR, wc_status::LOC_LEN_ERR),
            (syn::LOCAL_QP_OP_ERR, wc_status::LOC_QP_OP_ERR),
            (syn::LOCAL_PROT_ERR, wc_status::LOC_PROT_ERR),
            (syn::WR_FLUSH_ERR, wc_status::WR_FLUSH_ERR),
            (syn::MW_BIND_ERR, wc_status::MW_BIND_ERR),
            (syn::BAD_RESP_ERR, wc_status::BAD_RESP_ERR),
            (syn::LOCAL_ACCESS_ERR, wc_status::LOC_ACCESS_ERR),
            (syn::REMOTE_INVAL_REQ_ERR, wc_status::REM_INV_REQ_ERR),
            (syn::REMOTE_ACCESS_ERR, wc_status::REM_ACCESS_ERR),
            (syn::REMOTE_OP_ERR, wc_status::REM_OP_ERR),
            (syn::TRANSPORT_RETRY_EXC_ERR, wc_status::RETRY_EXC_ERR),
            (syn::RNR_RETRY_EXC_ERR, wc_status::RNR_RETRY_EXC_ERR),
            (syn::REMOTE_ABORTED_ERR, wc_status::REM_ABORT_ERR),
            (0x77, wc_status::GENERAL_ERR),
        ];
        for (syndrome, ibv) in table {
            assert_eq!(WcStatus::from_syndrome(syndrome).ibv_code(), ibv, "syndrome {syndrome:#x}");
        }
    }
}
