//! The objects uverbs commands create, as plain data the hardware side reads.
//!
//! Each object is recorded by the command that creates it, exactly as the kernel and the
//! mlx5 firmware would hold it (the firmware's view where the two differ: e.g. the QP's
//! effective remote access, the rounded RDMA-read depth). They live in
//! [`DeviceState`](crate::device::DeviceState) tables keyed by their device number (pdn,
//! mkey index, cqn, qpn, srqn) and change only under that lock.
//!
//! Two pieces are shared with the user process rather than recorded: the completion channel
//! and async event fds (one end of a `SOCK_SEQPACKET` socketpair each; the user reads exact
//! 8- or 16-byte records from the other end) and the UAR pages (a memfd the user maps with
//! [`Uverbs::mmap`](crate::kernel::Uverbs::mmap) and softhca watches through its own mapping).

use crate::errno::Errno;
use ferrodat_abi::uverbs::{self, AsyncEventDesc, CompEventDesc};
use std::fmt;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use zerocopy::{FromBytes, IntoBytes};

// ---------------------------------------------------------------------------------------
// Event channels

/// Our sending end of an event fd, and the identity of the end the user reads.
struct EventChannel {
    ours: OwnedFd,
    user_fd: RawFd,
    user_ident: (u64, u64),
}

impl EventChannel {
    /// A socketpair whose second end goes to the user (read-only, close-on-exec, like the
    /// kernel's anon-inode event files). The caller hands that end over with `into_raw_fd`
    /// once the command succeeds, or drops it to abort.
    fn create() -> Result<(EventChannel, OwnedFd), Errno> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` has room for the two descriptors socketpair writes.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(Errno::last());
        }
        // SAFETY: socketpair succeeded, so both descriptors are fresh and owned by nobody else.
        let (ours, user) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // The kernel's event files have no write(); closing the user's sending side keeps
        // stray writes from piling up in our receive queue.
        // SAFETY: shutdown on a descriptor we own.
        unsafe { libc::shutdown(user.as_raw_fd(), libc::SHUT_WR) };
        let user_ident = fd_identity(user.as_raw_fd()).ok_or_else(Errno::last)?;
        Ok((EventChannel { ours, user_fd: user.as_raw_fd(), user_ident }, user))
    }

    /// Sends one record without blocking and without SIGPIPE. False when the user closed
    /// its end or its queue is full — the event is dropped, as the kernel drops events for
    /// a closed event file.
    fn send(&self, record: &[u8]) -> bool {
        // SAFETY: `record` is a valid buffer for the duration of the call.
        let n = unsafe {
            libc::send(
                self.ours.as_raw_fd(),
                record.as_ptr().cast(),
                record.len(),
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        };
        n == record.len() as isize
    }

    /// Takes the records not yet read from the user's end, keeps those `remove` rejects
    /// (sent again, in order) and returns how many it removed. Nothing if the user's fd
    /// is no longer ours (closed, or its number reused).
    fn remove_unread(&self, remove: impl Fn(&[u8]) -> bool) -> u32 {
        if !self.is_user_fd(self.user_fd) {
            return 0;
        }
        let mut kept = Vec::new();
        let mut removed = 0;
        let mut buf = [0u8; 64];
        loop {
            // SAFETY: `buf` has `buf.len()` bytes of room; a non-blocking receive on the
            // user end, which is still the socket we created (checked above).
            let n = unsafe {
                libc::recv(self.user_fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT)
            };
            if n <= 0 {
                break;
            }
            let record = &buf[..n as usize];
            if remove(record) {
                removed += 1;
            } else {
                kept.push(record.to_vec());
            }
        }
        for record in kept {
            self.send(&record);
        }
        removed
    }

    /// Whether `fd` (in this process) is still the user end we created.
    fn is_user_fd(&self, fd: RawFd) -> bool {
        fd == self.user_fd && fd_identity(fd) == Some(self.user_ident)
    }

    /// Whether the user's end is gone: every descriptor of it (dups and forked copies
    /// included) is closed, which the socket reports on our end as a hangup. This is the
    /// moment the kernel's event file loses its last user reference; a `user_fd` number
    /// that is closed or reused says less, as the file may live on under another number.
    fn user_closed(&self) -> bool {
        let mut p = libc::pollfd { fd: self.ours.as_raw_fd(), events: 0, revents: 0 };
        // SAFETY: one valid pollfd on a descriptor we own; a zero timeout never blocks.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        // Our end never sees a hangup while the user's is open: the user end's
        // SHUT_WR (at create) shows here as read-shutdown only, POLLHUP needs both.
        n == 1 && p.revents & libc::POLLHUP != 0
    }
}

/// `(st_dev, st_ino)` of an open fd: a socket keeps its inode for its whole life, so this
/// tells our channel from an unrelated file that reused the number after a close.
fn fd_identity(fd: RawFd) -> Option<(u64, u64)> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a full `struct stat` into `st` on success; we read it only then.
    let rc = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: fstat returned 0, so `st` is initialised.
    let st = unsafe { st.assume_init() };
    #[allow(clippy::unnecessary_cast)] // the widths of st_dev/st_ino differ between targets
    Some((st.st_dev as u64, st.st_ino as u64))
}

impl fmt::Debug for EventChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventChannel")
            .field("ours", &self.ours.as_raw_fd())
            .field("user_fd", &self.user_fd)
            .finish()
    }
}

/// A completion channel (CREATE_COMP_CHANNEL): the user reads one 8-byte
/// [`CompEventDesc`] per completion event from its fd.
#[derive(Debug)]
pub struct CompChannel(EventChannel);

impl CompChannel {
    pub(crate) fn create() -> Result<(CompChannel, OwnedFd), Errno> {
        EventChannel::create().map(|(c, user)| (CompChannel(c), user))
    }

    /// Delivers one completion event for the CQ whose CREATE_CQ `user_handle` this is.
    /// False if it could not be delivered (user end closed, queue full).
    pub fn notify(&self, user_handle: u64) -> bool {
        self.0.send(CompEventDesc { cq_handle: user_handle }.as_bytes())
    }

    /// The fd number the user was given.
    pub fn user_fd(&self) -> RawFd {
        self.0.user_fd
    }

    /// `ib_uverbs_release_ucq`: drops the events of the CQ with `user_handle` that the
    /// user has not read yet; returns how many.
    pub(crate) fn remove_unread(&self, user_handle: u64) -> u32 {
        self.0.remove_unread(|r| r == CompEventDesc { cq_handle: user_handle }.as_bytes())
    }

    pub(crate) fn is_user_fd(&self, fd: RawFd) -> bool {
        self.0.is_user_fd(fd)
    }

    /// The user closed every descriptor of the channel: the file's own reference is gone
    /// and only the CQs still on it keep the channel (and our socket end) alive.
    pub(crate) fn user_closed(&self) -> bool {
        self.0.user_closed()
    }
}

/// The async event fd of a context (GET_CONTEXT `async_fd`): 16-byte [`AsyncEventDesc`]
/// records.
#[derive(Debug)]
pub struct AsyncEventFile(EventChannel);

impl AsyncEventFile {
    pub(crate) fn create() -> Result<(AsyncEventFile, OwnedFd), Errno> {
        EventChannel::create().map(|(c, user)| (AsyncEventFile(c), user))
    }

    /// Delivers `{element, event_type}` ([`uverbs::event`] types; `element` is the object's
    /// `user_handle`, or the port number for port events). False if not delivered.
    pub fn post(&self, element: u64, event_type: u32) -> bool {
        self.0.send(AsyncEventDesc { element, event_type, reserved: 0 }.as_bytes())
    }

    /// The fd number the user was given.
    pub fn user_fd(&self) -> RawFd {
        self.0.user_fd
    }

    /// Removes the events about `element` of one of `types` the user has not read yet
    /// (the kernel drops an object's unread events when it is destroyed) and returns how
    /// many: the kernel counts an event as reported when the user reads it, and
    /// libibverbs's destroy waits until the events it acknowledged reach that count.
    pub fn remove_unread(&self, element: u64, types: &[u32]) -> u32 {
        self.0.remove_unread(|record| {
            AsyncEventDesc::read_from_bytes(record)
                .is_ok_and(|d| d.element == element && types.contains(&d.event_type))
        })
    }
}

/// The hardware side delivers through the same fds ([`crate::hca::events::EventSink`]):
/// a completion channel carries completion events only.
impl crate::hca::events::EventSink for CompChannel {
    fn completion_event(&self, user_handle: u64) -> bool {
        self.notify(user_handle)
    }

    fn async_event(&self, _element: u64, _event_type: u32) -> bool {
        false
    }
}

/// The async fd carries asynchronous events only.
impl crate::hca::events::EventSink for AsyncEventFile {
    fn completion_event(&self, _user_handle: u64) -> bool {
        false
    }

    fn async_event(&self, element: u64, event_type: u32) -> bool {
        self.post(element, event_type)
    }
}

// ---------------------------------------------------------------------------------------
// UAR pages

/// A context's static UAR pages: one memfd, mapped once for softhca (to watch doorbells) and
/// once per user `mmap` (which the user may `munmap` at will, like a real BAR mapping).
#[derive(Debug)]
pub struct UarPages {
    memfd: OwnedFd,
    base: NonNull<u8>,
    pages: usize,
    page_size: usize,
}

// SAFETY: `base` is a shared mapping owned by this struct; the struct itself never reads or
// writes through it, it only hands out addresses, so moving or sharing it across threads is
// as safe as sharing an integer.
unsafe impl Send for UarPages {}
// SAFETY: see `Send`; no method dereferences `base`.
unsafe impl Sync for UarPages {}

impl UarPages {
    /// `pages` zeroed pages of the system page size.
    pub(crate) fn new(pages: usize) -> Result<UarPages, Errno> {
        let page_size = crate::user_memory::page_size();
        let len = pages.checked_mul(page_size).filter(|&l| l > 0).ok_or(Errno::EINVAL)?;
        // SAFETY: the name is a valid NUL-terminated string.
        let fd = unsafe { libc::memfd_create(c"softhca-uar".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: memfd_create returned a fresh descriptor we now own.
        let memfd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: ftruncate on a descriptor we own.
        if unsafe { libc::ftruncate(memfd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(Errno::last());
        }
        let base = map_shared(&memfd, 0, len)?;
        Ok(UarPages { memfd, base, pages, page_size })
    }

    /// Number of pages.
    pub fn count(&self) -> usize {
        self.pages
    }

    /// softhca's own view of page `index` (doorbells written by the user appear here).
    pub fn page(&self, index: usize) -> Option<NonNull<u8>> {
        if index >= self.pages {
            return None;
        }
        // SAFETY: `index * page_size` is inside the `pages * page_size` mapping at `base`.
        Some(unsafe { self.base.add(index * self.page_size) })
    }

    /// A fresh user mapping of page `index` (the caller owns it: `munmap(ptr, page_size)`).
    pub(crate) fn map_for_user(&self, index: usize) -> Result<NonNull<u8>, Errno> {
        if index >= self.pages {
            return Err(Errno::EINVAL);
        }
        map_shared(&self.memfd, index * self.page_size, self.page_size)
    }
}

impl Drop for UarPages {
    fn drop(&mut self) {
        // SAFETY: `base` is our own mapping of exactly this length, unmapped once here;
        // user mappings of the memfd are separate and stay valid.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.pages * self.page_size) };
    }
}

fn map_shared(fd: &OwnedFd, offset: usize, len: usize) -> Result<NonNull<u8>, Errno> {
    // SAFETY: a new shared mapping of our memfd; it aliases no Rust object.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            offset as libc::off_t,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(Errno::last());
    }
    NonNull::new(p.cast()).ok_or(Errno::ENOMEM)
}

// ---------------------------------------------------------------------------------------
// Protection domains and memory regions

/// A protection domain (ALLOC_PD).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pd {
    /// Device PD number (the mlx5 ALLOC_PD response).
    pub pdn: u32,
}

/// A memory region (REG_MR). Nothing is pinned; the data path must access the range with
/// checks of its own (the user may unmap it, as it could behind a real HCA's back only by
/// breaking its own process).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mr {
    /// mkey index (24 bits): the key without its variant byte.
    pub index: u32,
    /// Local key, `index << 8 | variant`.
    pub lkey: u32,
    /// Remote key (equal to `lkey`, as on mlx5).
    pub rkey: u32,
    /// User virtual address of the first byte.
    pub start: u64,
    /// Length in bytes (> 0).
    pub length: u64,
    /// The address work requests use for the first byte (REG_MR `hca_va`).
    pub iova: u64,
    /// Access flags as registered ([`uverbs::access`]).
    pub access: u32,
    /// PD the region belongs to.
    pub pdn: u32,
}

/// A memory window (ALLOC_MW): an mkey with no translation until a bind WQE gives it one.
/// The kernel records only this; which range it is bound to is hardware state (the
/// engine's [`MemoryRegions`](crate::hca::mr::MemoryRegions)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mw {
    /// mkey index (24 bits), from the same space as MRs.
    pub index: u32,
    /// The remote key ALLOC_MW returned (`index << 8 | variant`); binds change the variant.
    pub rkey: u32,
    /// PD the window belongs to.
    pub pdn: u32,
}

// ---------------------------------------------------------------------------------------
// Completion queues

/// A completion queue (CREATE_CQ).
#[derive(Clone, Debug)]
pub struct Cq {
    /// Device CQ number (24 bits; the low half of the arm doorbell).
    pub cqn: u32,
    /// CREATE_CQ `user_handle`: what completion and async events carry.
    pub user_handle: u64,
    /// User address of the CQE ring.
    pub buf_addr: u64,
    /// Ring size in entries, a power of two (the user was told `ncqe - 1`).
    pub ncqe: u32,
    /// 64 or 128; with 128 the CQE64 is the second half of each entry.
    pub cqe_size: u32,
    /// User address of the doorbell record (`[CQ_SET_CI]`, `[CQ_ARM_DB]`, big-endian).
    pub db_addr: u64,
    /// The context's UAR pages; the arm doorbell is page `uar_page` at `CQ_DOORBELL`.
    pub uar: std::sync::Arc<UarPages>,
    /// Index in `uar` of the page with this CQ's arm doorbell.
    pub uar_page: u32,
    /// Completion vector.
    pub comp_vector: u32,
    /// Where completion events go, if anywhere.
    pub channel: Option<std::sync::Arc<CompChannel>>,
    /// The owner's async event fd (CQ error events).
    pub async_file: std::sync::Arc<AsyncEventFile>,
    /// Completion events delivered (DESTROY_CQ reports this).
    pub comp_events_reported: u32,
    /// Async events delivered (DESTROY_CQ reports this).
    pub async_events_reported: u32,
}

impl Cq {
    /// Fires one completion event on the CQ's channel; counts it if delivered.
    pub fn fire_completion_event(&mut self) -> bool {
        let sent = self.channel.as_ref().is_some_and(|c| c.notify(self.user_handle));
        if sent {
            self.comp_events_reported = self.comp_events_reported.wrapping_add(1);
        }
        sent
    }

    /// Posts an async event (e.g. [`uverbs::event::CQ_ERR`]); counts it if delivered.
    pub fn post_async_event(&mut self, event_type: u32) -> bool {
        let sent = self.async_file.post(self.user_handle, event_type);
        if sent {
            self.async_events_reported = self.async_events_reported.wrapping_add(1);
        }
        sent
    }
}

// ---------------------------------------------------------------------------------------
// Queue pairs

/// QP states ([`uverbs::qp_state`] values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum QpState {
    /// RESET: just created, or reset; nothing is processed.
    Reset = uverbs::qp_state::RESET,
    /// INIT: receives may be posted, nothing is processed.
    Init = uverbs::qp_state::INIT,
    /// RTR: ready to receive.
    Rtr = uverbs::qp_state::RTR,
    /// RTS: ready to send.
    Rts = uverbs::qp_state::RTS,
    /// SQD: send queue drained.
    Sqd = uverbs::qp_state::SQD,
    /// SQE: send queue error (not used by RC).
    Sqe = uverbs::qp_state::SQE,
    /// ERR: every outstanding and new WQE completes with a flush error.
    Err = uverbs::qp_state::ERR,
}

impl QpState {
    /// All states, in wire order.
    pub const ALL: [QpState; 7] = [
        QpState::Reset,
        QpState::Init,
        QpState::Rtr,
        QpState::Rts,
        QpState::Sqd,
        QpState::Sqe,
        QpState::Err,
    ];

    /// The state with wire value `v`, if any.
    pub fn from_u8(v: u8) -> Option<QpState> {
        QpState::ALL.get(usize::from(v)).copied()
    }
}

/// A QP's primary path (MODIFY_QP `dest` with `AV`), as the firmware holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddressVector {
    /// Destination GID (network order).
    pub dgid: [u8; 16],
    /// Source GID index in the port's table.
    pub sgid_index: u8,
    /// Hop limit in effect: the kernel replaces the caller's with the route's (64) for a
    /// unicast RoCE destination, and mlx5 raises values below 2 to 64.
    pub hop_limit: u8,
    /// Traffic class (carried as DSCP on RoCE v2).
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Service level (the Ethernet priority on RoCE).
    pub sl: u8,
    /// Static rate code ([`uverbs::rate`]).
    pub static_rate: u8,
    /// Port number.
    pub port_num: u8,
}

/// The attributes MODIFY_QP sets, as the QP context holds them. Fields a transition did
/// not name keep their previous value; RESET returns them to [`QpAttrs::default`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QpAttrs {
    /// Port (set at RESET→INIT).
    pub port_num: u8,
    /// P_Key index.
    pub pkey_index: u16,
    /// Access flags as last requested ([`uverbs::access`]).
    pub access_flags: u32,
    /// Remote access the responder grants: REMOTE_READ/WRITE/ATOMIC bits of
    /// `access_flags`, except that mlx5 grants only REMOTE_WRITE while the responder depth
    /// (`max_dest_rd_atomic` as requested) is 0.
    pub remote_access: u32,
    /// Path MTU code ([`uverbs::mtu`], 1..=5), 0 before INIT→RTR.
    pub path_mtu: u8,
    /// Remote QP number (24 bits).
    pub dest_qp_num: u32,
    /// Primary path (valid from INIT→RTR).
    pub av: Option<AddressVector>,
    /// Expected PSN of the next inbound request (24 bits).
    pub rq_psn: u32,
    /// PSN of the next outbound request (24 bits).
    pub sq_psn: u32,
    /// Local ACK timeout, 4.096 µs × 2^timeout (5 bits; 0 = infinite).
    pub timeout: u8,
    /// Transport retries (3 bits).
    pub retry_cnt: u8,
    /// RNR retries (3 bits; 7 = infinite).
    pub rnr_retry: u8,
    /// RNR NAK timer code sent to requesters (5 bits).
    pub min_rnr_timer: u8,
    /// Outstanding RDMA READ/atomics as initiator: the firmware's power of two ≥ request.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA READ/atomics as responder: the firmware's power of two ≥ request.
    pub max_dest_rd_atomic: u8,
    /// `max_dest_rd_atomic` exactly as last requested (0 disables remote read/atomic).
    pub responder_depth: u8,
    /// Path migration state ([`uverbs::mig_state`]).
    pub path_mig_state: u8,
    /// Q_Key (UD only; never set on RC).
    pub qkey: u32,
    /// SQD-drained event requested.
    pub en_sqd_async_notify: bool,
}

impl Default for QpAttrs {
    /// A fresh QP context: `log_sra_max`/`log_rra_max` are 0, i.e. depth 1.
    fn default() -> Self {
        QpAttrs {
            port_num: 0,
            pkey_index: 0,
            access_flags: 0,
            remote_access: 0,
            path_mtu: 0,
            dest_qp_num: 0,
            av: None,
            rq_psn: 0,
            sq_psn: 0,
            timeout: 0,
            retry_cnt: 0,
            rnr_retry: 0,
            min_rnr_timer: 0,
            max_rd_atomic: 1,
            max_dest_rd_atomic: 1,
            responder_depth: 0,
            path_mig_state: uverbs::mig_state::MIGRATED,
            qkey: 0,
            en_sqd_async_notify: false,
        }
    }
}

/// The blue-flame register a QP rings (static UAR mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bfreg {
    /// Kernel numbering (2 per UAR): index into the context's usage counts.
    pub kernel_index: u32,
    /// The CREATE_QP response numbering (4 per UAR, `k` in 0..2 usable).
    pub user_index: u32,
    /// UAR page holding it.
    pub uar_page: u32,
    /// Byte offset of the register in that page (`BF_OFFSET + k * bf_reg_size`).
    pub offset: u32,
}

/// The capacities CREATE_QP asked for (echoed in its response).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCaps {
    /// Send queue depth requested.
    pub max_send_wr: u32,
    /// Receive queue depth requested (0 with an SRQ).
    pub max_recv_wr: u32,
    /// SGEs per send WR requested.
    pub max_send_sge: u32,
    /// SGEs per receive WR requested (0 with an SRQ).
    pub max_recv_sge: u32,
    /// Inline bytes per send WR requested.
    pub max_inline_data: u32,
}

/// A queue pair (CREATE_QP; RC only).
#[derive(Clone, Debug)]
pub struct Qp {
    /// QP number (24 bits).
    pub qpn: u32,
    /// CREATE_QP `user_handle`: what async events carry.
    pub user_handle: u64,
    /// User index for CQEs (`srqn_uidx`) with CQE version 1; `None` with version 0 (the
    /// CQE then carries the QPN only).
    pub uidx: Option<u32>,
    /// PD.
    pub pdn: u32,
    /// CQ of send completions.
    pub send_cqn: u32,
    /// CQ of receive completions.
    pub recv_cqn: u32,
    /// SRQ receives come from, if any (then the QP has no RQ).
    pub srqn: Option<u32>,
    /// User address of the WQ buffer (RQ at 0, SQ at `sq_offset`).
    pub buf_addr: u64,
    /// Bytes of that buffer the kernel checked (`rq_wqe_count << rq_wqe_shift` +
    /// `sq_wqe_cnt * 64`, with the counts as the caller gave them).
    pub buf_size: u64,
    /// RQ entries the hardware uses: `2^floor(log2(rq_wqe_count))` (the firmware takes a
    /// log2 size), 0 without an RQ.
    pub rq_wqe_cnt: u32,
    /// log2 of the RQ stride in bytes.
    pub rq_wqe_shift: u32,
    /// Scatter entries per RQ WQE (`stride / 16`, minus one with signatures).
    pub rq_max_gs: u32,
    /// Byte offset of the SQ in the buffer (`rq_wqe_cnt << rq_wqe_shift`).
    pub sq_offset: u64,
    /// SQ size in 64-byte WQEBBs (a power of two; 0 = no SQ).
    pub sq_wqe_cnt: u32,
    /// User address of the doorbell record (`[RCV_DBR]`, `[SND_DBR]`, big-endian).
    pub db_addr: u64,
    /// Every send WR generates a CQE.
    pub sq_sig_all: bool,
    /// WQEs carry a signature (`MLX5_QP_FLAG_SIGNATURE`).
    pub signature: bool,
    /// Small receives may be scattered to the CQE (`MLX5_QP_FLAG_SCATTER_CQE`).
    pub scatter_to_cqe: bool,
    /// The blue-flame register assigned (static mode).
    pub bfreg: Bfreg,
    /// The context's UAR pages (the bfreg is in page `bfreg.uar_page`).
    pub uar: std::sync::Arc<UarPages>,
    /// Capacities requested.
    pub caps: QpCaps,
    /// Current state. Changed only by [`DeviceState::set_qp_state`](crate::device::DeviceState::set_qp_state).
    pub state: QpState,
    /// MODIFY_QP attributes.
    pub attrs: QpAttrs,
    /// The owner's async event fd.
    pub async_file: std::sync::Arc<AsyncEventFile>,
    /// Async events delivered (DESTROY_QP reports this).
    pub events_reported: u32,
}

impl Qp {
    /// Posts an async event (e.g. [`uverbs::event::QP_FATAL`]); counts it if delivered.
    pub fn post_async_event(&mut self, event_type: u32) -> bool {
        let sent = self.async_file.post(self.user_handle, event_type);
        if sent {
            self.events_reported = self.events_reported.wrapping_add(1);
        }
        sent
    }

    /// softhca's view of the QP's blue-flame register (doorbell writes land here).
    pub fn bfreg_addr(&self) -> Option<NonNull<u8>> {
        let page = self.uar.page(self.bfreg.uar_page as usize)?;
        // SAFETY: `offset` is below the UAR size (BF_OFFSET + 2 * 512 < 4096 ≤ page size).
        Some(unsafe { page.add(self.bfreg.offset as usize) })
    }
}

// ---------------------------------------------------------------------------------------
// Shared receive queues

/// A shared receive queue (CREATE_SRQ, basic type).
#[derive(Clone, Debug)]
pub struct Srq {
    /// SRQ number (24 bits).
    pub srqn: u32,
    /// CREATE_SRQ `user_handle`: what async events carry.
    pub user_handle: u64,
    /// PD.
    pub pdn: u32,
    /// User address of the WQE ring.
    pub buf_addr: u64,
    /// Ring size in WQEs, a power of two (the user was told `wqe_cnt - 1`).
    pub wqe_cnt: u32,
    /// log2 of the WQE stride (≥ 5: a next-segment plus data segments).
    pub wqe_shift: u32,
    /// Scatter entries per WQE as requested.
    pub max_sge: u32,
    /// User address of the doorbell record (`[0]` = producer counter, big-endian).
    pub db_addr: u64,
    /// WQEs carry a signature.
    pub signature: bool,
    /// Armed limit: fire SRQ_LIMIT_REACHED (then disarm, i.e. 0) when fewer WQEs remain.
    pub limit: u32,
    /// The owner's async event fd.
    pub async_file: std::sync::Arc<AsyncEventFile>,
    /// Async events delivered (DESTROY_SRQ reports this).
    pub events_reported: u32,
}

impl Srq {
    /// Posts an async event (e.g. [`uverbs::event::SRQ_LIMIT_REACHED`]); counts it if delivered.
    pub fn post_async_event(&mut self, event_type: u32) -> bool {
        let sent = self.async_file.post(self.user_handle, event_type);
        if sent {
            self.events_reported = self.events_reported.wrapping_add(1);
        }
        sent
    }
}
