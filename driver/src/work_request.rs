//! What callers post: scatter/gather entries, send and receive work requests.
//!
//! An [`Sge`] names registered memory and borrows the memory region it came from, so the
//! region (and the buffer under it) cannot be deregistered or freed while a queue pair that
//! may still use it exists: a [`crate::Qp`] is generic over that borrow.

use std::marker::PhantomData;

/// One scatter/gather entry: `len` bytes at `addr` in a region with local key `lkey`.
///
/// Made by a memory region (`Mr::sge`), which it borrows for `'a`; or, for memory the
/// caller manages itself, by the unsafe [`Sge::from_raw`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge<'a> {
    addr: u64,
    len: u32,
    lkey: u32,
    region: PhantomData<&'a ()>,
}

impl<'a> Sge<'a> {
    /// The longest entry: 2 GiB - 1. mlx5 reads a data segment whose byte count has its
    /// top bit set as an inline segment (of the low 31 bits' length), so a longer entry
    /// would go out as the wrong data, not fail. No message is that long anyway
    /// (`max_msg_sz` is 1 GiB).
    pub const MAX_LEN: u32 = (1 << 31) - 1;

    /// An entry inside a region the caller holds for `'a` (the region checked the bounds).
    pub(crate) fn new(addr: u64, len: u32, lkey: u32) -> Sge<'a> {
        Sge { addr, len, lkey, region: PhantomData }
    }

    /// An entry for memory the borrow checker cannot see (e.g. a region shared with C).
    ///
    /// # Safety
    /// `addr..addr+len` must stay mapped, registered under `lkey`, and not be accessed
    /// through a Rust reference while any work request naming it is outstanding. If the
    /// entry is used for inline data, the bytes must be readable now. `len` is at most
    /// [`Sge::MAX_LEN`] (the device would read more as an inline segment).
    pub unsafe fn from_raw(addr: u64, len: u32, lkey: u32) -> Sge<'a> {
        Sge::new(addr, len, lkey)
    }

    /// The virtual address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// The length in bytes.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// True for a zero-length entry (the HCA skips those).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The local key of the region.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }
}

/// Where a one-sided operation goes in the peer's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remote {
    /// Virtual address in the peer's registered region.
    pub addr: u64,
    /// The region's remote key.
    pub rkey: u32,
}

/// The operation of a send work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// SEND: the payload lands in the peer's next receive.
    Send,
    /// SEND with 32-bit immediate data (host order here; it travels big-endian).
    SendImm(u32),
    /// RDMA WRITE of the payload to `Remote`.
    RdmaWrite(Remote),
    /// RDMA WRITE with immediate: also consumes a receive at the peer.
    RdmaWriteImm(Remote, u32),
    /// RDMA READ from `Remote` into the scatter list.
    RdmaRead(Remote),
    /// 64-bit compare-and-swap at `Remote` (8-byte aligned); the old value lands in the
    /// single 8-byte scatter entry.
    CompareSwap {
        /// Target.
        remote: Remote,
        /// Value to compare with.
        compare: u64,
        /// Value stored if equal.
        swap: u64,
    },
    /// 64-bit fetch-and-add at `Remote`; the old value lands in the 8-byte scatter entry.
    FetchAdd {
        /// Target.
        remote: Remote,
        /// Value added.
        add: u64,
    },
    /// No operation: completes in order, touches nothing (useful as a signalled marker).
    Nop,
    /// Bind a memory window to the one scatter entry of the payload (the region it lies
    /// in must allow [`crate::Access::MW_BIND`], at most 2 GiB), or unbind it with an empty
    /// payload. The WQE after it waits for it to execute (rdma-core's small fence). Made
    /// by [`crate::Mw::next_bind`]; [`crate::Qp::bind_mw`] posts one and records the key.
    BindMw(crate::mw::MwBind),
}

/// The data of a send work request.
#[derive(Clone, Copy, Debug)]
pub enum Payload<'a, 's> {
    /// Gather from registered memory (for RDMA READ and atomics: scatter into it).
    Sges(&'s [Sge<'a>]),
    /// Copy these bytes into the work queue entry now (`IBV_SEND_INLINE` with the bytes
    /// given directly): no registration needed, the slice may be reused on return.
    Inline(&'s [u8]),
    /// Copy the bytes the entries name into the work queue entry now, as `IBV_SEND_INLINE`
    /// does (the keys are not checked).
    InlineSges(&'s [Sge<'a>]),
}

impl Payload<'_, '_> {
    /// No data.
    pub const EMPTY: Payload<'static, 'static> = Payload::Sges(&[]);
}

/// Flags of a send work request (`IBV_SEND_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendFlags(u8);

impl SendFlags {
    // The values are the control segment's fm_ce_se bits, so building a WQE copies them.
    /// No flag: unsignalled (no completion unless the QP signals all).
    pub const NONE: SendFlags = SendFlags(0);
    /// Write a completion for this request.
    pub const SIGNALED: SendFlags = SendFlags(ferrodat_abi::mlx5::wqe_ctrl::CQ_UPDATE);
    /// Set the solicited-event bit (the peer's CQ armed for solicited events fires).
    pub const SOLICITED: SendFlags = SendFlags(ferrodat_abi::mlx5::wqe_ctrl::SOLICITED);
    /// Start only after earlier RDMA READs and atomics of this QP completed.
    pub const FENCE: SendFlags = SendFlags(ferrodat_abi::mlx5::wqe_ctrl::FENCE);

    /// True if every flag of `other` is set.
    pub fn contains(self, other: SendFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The control segment's fm_ce_se byte.
    #[inline(always)]
    pub(crate) fn fm_ce_se(self) -> u8 {
        self.0
    }
}

impl std::ops::BitOr for SendFlags {
    type Output = SendFlags;
    fn bitor(self, rhs: SendFlags) -> SendFlags {
        SendFlags(self.0 | rhs.0)
    }
}

/// One send work request.
#[derive(Clone, Copy, Debug)]
pub struct SendWr<'a, 's> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// What to do.
    pub op: SendOp,
    /// The data.
    pub payload: Payload<'a, 's>,
    /// Signalled, solicited, fenced.
    pub flags: SendFlags,
}

impl<'a, 's> SendWr<'a, 's> {
    /// A signalled request.
    pub fn new(wr_id: u64, op: SendOp, payload: Payload<'a, 's>) -> SendWr<'a, 's> {
        SendWr { wr_id, op, payload, flags: SendFlags::SIGNALED }
    }

    /// The same request with `flags` instead.
    pub fn flags(mut self, flags: SendFlags) -> SendWr<'a, 's> {
        self.flags = flags;
        self
    }
}

/// One receive work request: where an incoming SEND's bytes go.
#[derive(Clone, Copy, Debug)]
pub struct RecvWr<'a, 's> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// The scatter list (may be empty for a message without data or RDMA WRITE immediate).
    pub sges: &'s [Sge<'a>],
}

/// Why a post was refused. Nothing of the refused request (or those after it in the batch)
/// reached the queue; the requests before it were posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostError {
    /// The queue posted to.
    pub queue: WorkQueue,
    /// Index in the batch of the request that was refused.
    pub index: usize,
    /// Why.
    pub reason: PostErrorReason,
}

/// The queue a [`PostError`] is about, named by its verb.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkQueue {
    /// A QP's send queue (`post_send`).
    Send,
    /// A QP's own receive queue (`post_recv`).
    Receive,
    /// A shared receive queue (`post_srq_recv`).
    SharedReceive,
}

impl WorkQueue {
    /// The verb that posts to it, as rdma-core names it without the `ibv_` prefix.
    pub fn verb(self) -> &'static str {
        match self {
            WorkQueue::Send => "post_send",
            WorkQueue::Receive => "post_recv",
            WorkQueue::SharedReceive => "post_srq_recv",
        }
    }
}

impl PostError {
    /// The errno rdma-core's mlx5 provider returns for the same refusal: ENOMEM when the
    /// request does not fit (queue full or absent, more gather entries or inline bytes than
    /// a send WQE holds), EINVAL for a malformed request (and, as mlx5_post_recv answers,
    /// for too many scatter entries in a receive).
    pub fn errno(&self) -> i32 {
        match self.reason {
            PostErrorReason::QueueFull { .. }
            | PostErrorReason::NoSendQueue
            | PostErrorReason::NoReceiveQueue
            | PostErrorReason::InlineTooLong { .. } => libc::ENOMEM,
            PostErrorReason::TooManySges { .. } if self.queue == WorkQueue::Send => libc::ENOMEM,
            PostErrorReason::TooManySges { .. }
            | PostErrorReason::BadAtomic
            | PostErrorReason::InlineNotAllowed
            | PostErrorReason::BadBind => libc::EINVAL,
        }
    }
}

/// The reason of a [`PostError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostErrorReason {
    /// The work queue has no room: completions must be polled first (for a send queue,
    /// only signalled completions free the unsignalled requests before them).
    QueueFull {
        /// Requests the queue holds (for a send queue, its `max_post`: larger WQEs can
        /// also fill its 64-byte blocks first).
        capacity: u32,
    },
    /// More scatter/gather entries than the queue was created for.
    TooManySges {
        /// Entries given.
        given: usize,
        /// The queue's limit.
        max: u32,
    },
    /// More inline bytes than the queue was created for.
    InlineTooLong {
        /// Bytes given.
        given: usize,
        /// The queue's limit.
        max: u32,
    },
    /// An atomic operation needs exactly one 8-byte scatter entry and an 8-byte aligned
    /// remote address.
    BadAtomic,
    /// RDMA READ and atomics cannot take inline data.
    InlineNotAllowed,
    /// The QP takes its receives from an SRQ (or was created without a receive queue).
    NoReceiveQueue,
    /// The QP was created without a send queue (`max_send_wr` 0).
    NoSendQueue,
    /// A memory-window bind needs no payload (unbind) or one non-empty scatter entry of
    /// at most 2 GiB, not inline data.
    BadBind,
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let errno = crate::error::errno_name(self.errno());
        write!(f, "{}: work request {} refused ({errno}): ", self.queue.verb(), self.index)?;
        match (self.reason, self.queue) {
            (PostErrorReason::QueueFull { capacity }, WorkQueue::Send) => write!(
                f,
                "the send queue is full ({capacity} requests, or its 64-byte blocks); poll \
                 completions first, and signal at least one send request in every batch so \
                 unsignalled ones are retired"
            ),
            (PostErrorReason::QueueFull { capacity }, _) => write!(
                f,
                "the receive queue is full ({capacity} entries); poll completions first: each \
                 completed receive frees its entry"
            ),
            (PostErrorReason::TooManySges { given, max }, _) => write!(
                f,
                "{given} scatter/gather entries, the queue takes at most {max}; create the queue \
                 pair with a larger max_send_sge/max_recv_sge"
            ),
            (PostErrorReason::InlineTooLong { given, max }, _) => write!(
                f,
                "{given} bytes of inline data, the queue takes at most {max}; create the queue pair \
                 with a larger max_inline_data or post the data from registered memory"
            ),
            (PostErrorReason::BadAtomic, _) => write!(
                f,
                "an atomic operation needs one 8-byte scatter entry and an 8-byte aligned remote \
                 address"
            ),
            (PostErrorReason::InlineNotAllowed, _) => {
                write!(f, "RDMA READ and atomic operations cannot carry inline data")
            }
            (PostErrorReason::BadBind, _) => write!(
                f,
                "a memory-window bind takes one non-empty scatter entry of at most 2 GiB (the \
                 range to bind) or none (unbind)"
            ),
            (PostErrorReason::NoReceiveQueue, _) => write!(
                f,
                "the QP has no receive queue of its own (it uses an SRQ): post receives to the SRQ"
            ),
            (PostErrorReason::NoSendQueue, _) => write!(
                f,
                "the QP was created with max_send_wr 0 and has no send queue; create it with \
                 room for the send requests it is to post"
            ),
        }
    }
}

impl std::error::Error for PostError {}
