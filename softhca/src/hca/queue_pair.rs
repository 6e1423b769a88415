//! An RC queue pair as the HCA runs it.
//!
//! - The **requester** reads the send queue between what it has executed and the SQ
//!   counter in doorbell record word 1, checks each WQE's local keys, turns it into request
//!   packets on the QP's outbound ring, and completes WQEs in order as responses arrive
//!   (unsignalled ones without a CQE). RDMA READ data and atomic results land in the WQE's
//!   local buffers. A NAK, an exhausted RNR or transport retry count, or a WQE it cannot
//!   execute completes that WQE in error and moves the QP to ERR.
//! - The **responder** reads the peer's packets: SEND takes the next receive entry (RQ or
//!   SRQ) and scatters into it, RDMA WRITE and READ and atomics go through the rkey checks
//!   of [`MemoryRegions`], and every message is answered in order (ACK, READ data, atomic
//!   value, or NAK). With no receive entry it answers RNR NAK and drops what follows until
//!   the requester retransmits, as an RC responder does.
//! - In **ERR** every outstanding and newly posted WQE, send and receive, completes with
//!   `WR_FLUSH_ERR`, signalled or not: the WQE that failed carries the error and everything
//!   behind it is flushed, even a NOP that needed no response. A send posted in ERR is
//!   flushed at its doorbell; a receive (mlx5 has no receive doorbell) when the engine next
//!   reads the doorbell record, on any progress call. The receives of an SRQ belong to the
//!   SRQ and stay. RESET forgets everything without completions.

use super::app_memory::{AppSpan, OutOfSpan};
use super::completion_queue::CompletionQueue;
use super::cqe::{Completion, ErrorCompletion, error_cqe, success_cqe};
use super::events::EventSink;
use super::fifo::Fifo;
use super::id_map::IdMap;
use super::mr::{KeyError, MemoryRegions};
use super::placement::{
    Imports, PEER_CHECK_INTERVAL, PLACE_CHUNK_BYTES, PLACE_MIN_BYTES, Placing, QpFacts,
};
use super::recv_wqe::scatter_list;
use super::send_wqe::{self, MAX_WQE_BYTES, SendWqe, Sge};
use super::shared_receive_queue::{ReceiveEntry, SharedReceiveQueue};
use super::wire::{self, CompactHeader, PacketHeader, SEGMENT_BYTES, flag, kind, nak};
use crate::fabric::{
    FilledPushError, MappingReader, PlaceError, QpNotifier, RecordFiller, RecordView, Registry,
    RingConsumer, RingError, RingProducer, SharedMapping, SmallRecord,
};
use ferrodat_abi::mlx5::{
    INLINE_SEG, INVALID_LKEY, SEND_WQE_BB, SEND_WQE_DS, WqeCtrlSeg, WqeDataSeg, cqe_opcode,
    cqe_syndrome, opcode, wqe_ctrl,
};
use ferrodat_abi::uverbs::{access, event, qp_state};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zerocopy::{FromBytes, IntoBytes};

/// The largest message a port accepts (QUERY_PORT `max_msg_sz`).
pub const MAX_MESSAGE_BYTES: u64 = 1 << 30;

/// The largest receive entry (`max_rq_desc_sz` of GET_CONTEXT is 512).
const MAX_RECEIVE_ENTRY_BYTES: usize = 1024;

/// A requester asks for an immediate ACK at least this often, so unsignalled WQEs retire.
const ACK_REQUEST_EVERY: usize = 16;

/// Packets of at most this many bytes (header and payload) travel through the ring as
/// whole words copied in one go: every ACK, a small SEND with either header.
const SMALL_RECORD_WORDS: usize = 12;
const SMALL_RECORD_BYTES: usize = 8 * SMALL_RECORD_WORDS;

/// The largest SEND the requester's fast path carries (a compact packet in a small record).
const SMALL_SEND_BYTES: usize = SMALL_RECORD_BYTES - size_of::<CompactHeader>();

/// Responses queued but not yet on the ring before the responder stops reading requests.
const MAX_QUEUED_RESPONSES: usize = 64;

/// What CREATE_QP tells the HCA.
#[derive(Clone, Copy, Debug)]
pub struct QpSetup {
    /// QP number.
    pub qpn: u32,
    /// The consumer's handle (async events carry it).
    pub user_handle: u64,
    /// User index reported in CQEs when `cqe_version` is 1.
    pub uidx: u32,
    /// The context's CQE version (0 or 1).
    pub cqe_version: u8,
    /// Its PD.
    pub pdn: u32,
    /// Completion queue of the send queue.
    pub send_cqn: u32,
    /// Completion queue of the receive queue.
    pub recv_cqn: u32,
    /// The SRQ receives come from, if any.
    pub srqn: Option<u32>,
    /// The send queue ring: `sq_wqebbs * 64` bytes.
    pub sq: AppSpan,
    /// Send queue size in 64-byte basic blocks (a power of two).
    pub sq_wqebbs: u32,
    /// The receive queue ring: `rq_wqe_count << rq_wqe_shift` bytes (empty with an SRQ).
    pub rq: AppSpan,
    /// Receive queue entries (a power of two, or 0).
    pub rq_wqe_count: u32,
    /// log2 of the receive entry size.
    pub rq_wqe_shift: u32,
    /// Bytes to skip at the start of each receive entry (a signature segment).
    pub rq_skip: usize,
    /// The 8-byte doorbell record: word 0 the RQ counter, word 1 the SQ counter.
    pub dbrec: AppSpan,
    /// Every send WQE is signalled.
    pub sq_sig_all: bool,
}

/// The attributes MODIFY_QP set that the data path uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpAttributes {
    /// `access::REMOTE_*` rights the QP grants its peer.
    pub access_flags: u32,
    /// The peer QP.
    pub dest_qpn: u32,
    /// The peer's GID.
    pub dgid: [u8; 16],
    /// First PSN the requester sends.
    pub sq_psn: u32,
    /// First PSN the responder expects.
    pub rq_psn: u32,
    /// Local ACK timeout exponent (0 = infinite).
    pub timeout: u8,
    /// Transport retries before RETRY_EXC_ERR.
    pub retry_cnt: u8,
    /// RNR retries before RNR_RETRY_EXC_ERR (7 = infinite).
    pub rnr_retry: u8,
    /// The RNR timer this responder advertises.
    pub min_rnr_timer: u8,
    /// RDMA READs and atomics in flight as requester.
    pub max_rd_atomic: u8,
}

/// The objects a QP's data path touches besides itself.
pub struct Hardware<'a> {
    /// Registered memory and memory windows of this process (bind WQEs change windows).
    pub regions: &'a mut MemoryRegions,
    /// CQs by number.
    pub cqs: &'a mut IdMap<u32, CompletionQueue>,
    /// SRQs by number.
    pub srqs: &'a mut IdMap<u32, SharedReceiveQueue>,
    /// A reusable buffer.
    pub scratch: &'a mut Vec<u8>,
    /// The time of this pass, read from the clock on first use.
    pub now: Option<Instant>,
    /// The engine's last clock reading: never later than the true time, possibly earlier.
    pub coarse_now: Instant,
    /// Peers' exported regions this process's requesters place WRITEs into and READs out
    /// of.
    pub imports: &'a mut Imports,
}

impl Hardware<'_> {
    /// The time of this pass (one clock read per pass, and none if no timer is involved).
    pub fn now(&mut self) -> Instant {
        *self.now.get_or_insert_with(Instant::now)
    }

    /// The time of this pass if the clock was read, else the engine's last reading (no
    /// clock read: for starting timers whose expiry is re-checked against the clock).
    pub fn coarse_now(&self) -> Instant {
        self.now.unwrap_or(self.coarse_now)
    }
}

/// The operation of an outstanding send WQE.
#[derive(Clone, Debug)]
enum Operation {
    /// Completes without a packet (NOP).
    Local,
    /// SEND or RDMA WRITE (data goes out; done at ACK).
    Transfer,
    /// RDMA READ (boxed: every SEND and WRITE moves an `Operation` through the
    /// outstanding queue, and a READ's buffers would make each of them larger).
    Read(Box<ReadBuffers>),
    /// Atomic; the original value lands in the 8 bytes `sge` names (translated again when
    /// the response comes, as for a READ's buffers: `translate_read_targets`).
    Atomic { sge: Sge },
}

/// Where an RDMA READ's data goes: `length` bytes into the buffers `sges` name (`targets`,
/// as last translated); `received` of them arrived (the responses come in order, each at
/// the offset where the last one ended).
#[derive(Clone, Debug)]
struct ReadBuffers {
    sges: Vec<Sge>,
    targets: Vec<AppSpan>,
    length: u64,
    received: u64,
}

/// A send WQE between execution and completion.
#[derive(Clone, Debug)]
struct Outstanding {
    /// Position of the WQE in the SQ (WQEBB counter), to read it again for retransmission.
    sq_pos: u16,
    wqe_index: u16,
    wqe_opcode: u8,
    signaled: bool,
    fence: bool,
    psn: u32,
    operation: Operation,
    /// Completed: `Ok(byte_cnt)` or `Err(syndrome)`.
    outcome: Option<Result<u32, u8>>,
    rnr_naks: u8,
    /// An RDMA WRITE or READ whose data the requester placed itself (`placement.rs`).
    placed: bool,
}

impl Outstanding {
    fn is_read_or_atomic(&self) -> bool {
        matches!(self.operation, Operation::Read(_) | Operation::Atomic { .. })
    }
}

/// Where the requester's transmission stands: the next packet belongs to
/// `outstanding[index]` at byte `offset`.
#[derive(Clone, Copy, Debug, Default)]
struct TransmitCursor {
    index: usize,
    offset: u64,
}

/// A message the responder is receiving.
#[derive(Clone, Debug)]
struct InboundMessage {
    psn: u32,
    kind: u8,
    length: u64,
    received: u64,
    entry: Option<ReceiveEntry>,
    /// Receive buffers (SEND) or the RDMA WRITE target, as last translated: again before
    /// each later segment (`retarget`), as an HCA checks the key at each packet.
    targets: Vec<AppSpan>,
    /// What `targets` is translated from: the receive entry's buffers in this PD (SEND), or
    /// this key and address (WRITE).
    pdn: u32,
    rkey: u32,
    remote_addr: u64,
    imm: Option<[u8; 4]>,
    solicited: bool,
    ack_request: bool,
}

/// A response the responder owes the requester.
#[derive(Clone, Copy, Debug)]
enum Response {
    Packet(PacketHeader),
    /// READ data from `length` bytes at `addr` under `rkey`, sent up to `offset`; the
    /// source is translated again for each segment, so a region deregistered meanwhile is
    /// not read (the READ is NAKed).
    ReadData {
        psn: u32,
        rkey: u32,
        addr: u64,
        length: u64,
        offset: u64,
    },
}

/// The room a pass of [`QueuePair::run_inbound`] granted the peer's requester: the first
/// grant wakes it at once, later ones in the same pass once at its end, so that a peer
/// that asks again before every record costs a wake per pass, not one per record.
#[derive(Default)]
struct RoomWakes {
    woken: bool,
    owed: bool,
}

/// What [`RoomWakes`] looks at and wakes: the QP (a test gives a stand-in).
trait RoomPeer {
    /// True, once per request, if the peer's producer asked for room our reading made.
    fn room_granted(&self) -> bool;
    /// Wakes the peer's producer.
    fn wake_producer(&self);
}

impl RoomPeer for QueuePair {
    #[inline(always)]
    fn room_granted(&self) -> bool {
        QueuePair::room_granted(self)
    }

    #[inline(always)]
    fn wake_producer(&self) {
        QueuePair::wake_producer(self)
    }
}

impl RoomWakes {
    /// After a record (`end`: after the pass's last look).
    #[inline(always)]
    fn granted(&mut self, peer: &impl RoomPeer, end: bool) {
        if peer.room_granted() {
            if self.woken {
                self.owed = true;
            } else {
                self.woken = true;
                peer.wake_producer();
            }
        }
        if end && std::mem::take(&mut self.owed) {
            peer.wake_producer();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{RoomPeer, RoomWakes};
    use std::cell::Cell;

    /// A peer whose producer asks for room before every record (`asks`), counting wakes.
    struct Peer {
        asks: Cell<bool>,
        wakes: Cell<u32>,
    }

    impl RoomPeer for Peer {
        fn room_granted(&self) -> bool {
            self.asks.get()
        }

        fn wake_producer(&self) {
            self.wakes.set(self.wakes.get() + 1);
        }
    }

    /// A peer that asks for room again before every record gets two wakes per pass, not
    /// one per record: the first at once, the rest folded into one at the pass's end.
    #[test]
    fn a_pass_wakes_the_producer_at_most_twice() {
        for (records, asks, expected) in [(10, true, 2), (1, true, 1), (10, false, 0)] {
            let peer = Peer { asks: Cell::new(asks), wakes: Cell::new(0) };
            let mut room = RoomWakes::default();
            for _ in 0..records {
                room.granted(&peer, false);
            }
            peer.asks.set(false);
            room.granted(&peer, true);
            assert_eq!(peer.wakes.get(), expected, "{records} records, asking: {asks}");
        }
        // A grant found only at the pass's last look wakes once, there.
        let peer = Peer { asks: Cell::new(true), wakes: Cell::new(0) };
        RoomWakes::default().granted(&peer, true);
        assert_eq!(peer.wakes.get(), 1);
    }
}

/// Both directions of the QP's connection through the fabric.
pub struct Link {
    /// Requests and responses this QP sends (its peer reads them).
    pub outbound: RingProducer,
    peer: Option<PeerEnd>,
}

struct PeerEnd {
    registry: Registry,
    qpn: u32,
    inbound: Option<RingConsumer>,
    notifier: Option<QpNotifier>,
    /// The epoch of the peer's facts when this QP first placed into it: a peer that
    /// reconnected since (a new epoch) is another connection, and takes no placements.
    facts_epoch: Option<u16>,
}

impl Link {
    /// A link with this QP's ring and no peer yet.
    pub fn new(outbound: RingProducer) -> Self {
        Link { outbound, peer: None }
    }
}

/// The HCA's state of one RC QP.
pub struct QueuePair {
    /// What CREATE_QP said.
    pub setup: QpSetup,
    /// Current state (`qp_state::*`).
    state: u8,
    attrs: QpAttributes,
    /// The local ACK timeout of `attrs.timeout` (None: infinite).
    ack_timeout: Option<Duration>,
    link: Link,
    /// WQEBB counter of the next WQE to execute.
    sq_head: u16,
    /// Receive entries taken from the RQ.
    rq_head: u16,
    outstanding: Fifo<Outstanding>,
    cursor: TransmitCursor,
    /// Entries before the cursor (sent) still without an outcome: requests waiting for
    /// their response. Kept up to date where the cursor moves or outcomes are set, so the
    /// timers need no scan (checked against a scan in debug builds).
    awaiting: usize,
    next_psn: u32,
    /// Retransmit from the cursor no earlier than this (after an RNR NAK).
    resume_at: Option<Instant>,
    /// When a response last arrived while requests were in flight.
    last_response: Instant,
    /// `last_response + ack_timeout` (None: no timeout), what [`Self::next_deadline`]
    /// reports while the timer runs. Only [`Self::set_last_response`] and `transition`
    /// (the timeout) change either, and they keep it up to date: most restarts reuse the
    /// same coarse clock reading, so the sum is rarely worked out again.
    ack_deadline: Option<Instant>,
    /// `last_response` counts: requests are in flight.
    ack_timer_running: bool,
    /// `last_response` was taken from the engine's last clock reading rather than the
    /// clock, so it may be early: when the timer expires it is restarted from the clock
    /// once without counting a retry.
    ack_timer_coarse: bool,
    /// The engine keeps this QP on its list of QPs with timers (lazily pruned).
    pub(crate) on_timer_list: bool,
    /// The engine keeps this QP on its list of QPs to run on every pass.
    pub(crate) on_always_list: bool,
    /// The engine keeps this QP on its list of QPs in ERR whose receive doorbell record
    /// it watches.
    pub(crate) on_error_list: bool,
    timeouts: u8,
    expected_psn: u32,
    inbound: Option<InboundMessage>,
    /// After an RNR NAK for this PSN, requests are dropped until it is retransmitted.
    rnr_psn: Option<u32>,
    responses: VecDeque<Response>,
    /// An SRQ-attached QP reported its last WQE after entering ERR.
    last_wqe_reported: bool,
    /// Packets were pushed since the peer was last notified.
    unannounced: bool,
    /// Asynchronous events delivered for this QP (DESTROY_QP reports them).
    async_events_reported: u32,
    /// Where asynchronous events go.
    async_events: Option<Arc<dyn EventSink>>,
    /// An ACK owed but held back for a piggyback: the PSN, and whether a whole responder
    /// pass has gone by since (then it goes out on its own).
    deferred_ack: Option<(u32, bool)>,
    /// The scatter list of the last message, kept for its allocation.
    spare_targets: Vec<AppSpan>,
    /// There is a peer but its ring or notifier is not open yet (`attach` retries): kept
    /// with `link.peer` so the data path tests a flag.
    peer_incomplete: bool,
    /// What the small-SEND fast path needs of the fixed setup and attributes, worked out
    /// once rather than per packet.
    fast: FastPathFacts,
    /// When the peer's process was last seen alive (for placement, `peer_alive`).
    peer_checked_at: Option<Instant>,
}

/// Facts about a QP that change only with its setup (never) or at MODIFY_QP, for the
/// receive fast path ([`QueuePair::receive_small_send`]).
#[derive(Clone, Copy, Debug, Default)]
struct FastPathFacts {
    /// Receives come from the QP's own RQ, whose entries have room for at least one data
    /// segment after the skip.
    own_rq: bool,
    /// An RQ entry has room for a second segment after the first (read to find the
    /// terminator).
    second_segment: bool,
    /// The srqn_uidx field of the QP's responder CQEs.
    srqn_uidx: u32,
    /// The peer's GID is an IPv4-mapped address (responder CQEs report the L3 type).
    ipv4: bool,
}

impl FastPathFacts {
    fn new(setup: &QpSetup, srqn_uidx: u32, dgid: &[u8; 16]) -> Self {
        let stride = 1usize << setup.rq_wqe_shift;
        let usable = stride.min(MAX_RECEIVE_ENTRY_BYTES);
        FastPathFacts {
            own_rq: setup.srqn.is_none()
                && setup.rq_wqe_count > 0
                && setup.rq_skip + SEND_WQE_DS <= usable,
            second_segment: setup.rq_skip + 2 * SEND_WQE_DS <= usable,
            srqn_uidx,
            ipv4: is_ipv4_mapped(dgid),
        }
    }
}

/// The GID is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
fn is_ipv4_mapped(gid: &[u8; 16]) -> bool {
    gid[..12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
}

impl std::fmt::Debug for QueuePair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueuePair")
            .field("qpn", &self.setup.qpn)
            .field("state", &self.state)
            .field("sq_head", &self.sq_head)
            .field("outstanding", &self.outstanding.len())
            .finish()
    }
}

/// Maps a key failure on a local buffer to the CQE syndrome hardware reports.
fn local_key_syndrome(_: KeyError) -> u8 {
    cqe_syndrome::LOCAL_PROT_ERR
}

fn nak_syndrome(reason: u8) -> u8 {
    match reason {
        nak::REMOTE_ACCESS => cqe_syndrome::REMOTE_ACCESS_ERR,
        nak::INVALID_REQUEST => cqe_syndrome::REMOTE_INVAL_REQ_ERR,
        nak::RNR_RETRY_EXCEEDED => cqe_syndrome::RNR_RETRY_EXC_ERR,
        _ => cqe_syndrome::REMOTE_OP_ERR,
    }
}

impl QueuePair {
    /// A QP in RESET.
    pub fn new(setup: QpSetup, link: Link, now: Instant) -> Self {
        let mut qp = QueuePair {
            setup,
            state: qp_state::RESET,
            attrs: QpAttributes::default(),
            ack_timeout: None,
            link,
            sq_head: 0,
            rq_head: 0,
            outstanding: Fifo::default(),
            cursor: TransmitCursor::default(),
            awaiting: 0,
            next_psn: 0,
            resume_at: None,
            last_response: now,
            ack_deadline: None,
            ack_timer_running: false,
            ack_timer_coarse: false,
            on_timer_list: false,
            on_always_list: false,
            on_error_list: false,
            timeouts: 0,
            expected_psn: 0,
            inbound: None,
            rnr_psn: None,
            responses: VecDeque::new(),
            last_wqe_reported: false,
            unannounced: false,
            async_events_reported: 0,
            async_events: None,
            deferred_ack: None,
            spare_targets: Vec::new(),
            peer_incomplete: false,
            fast: FastPathFacts::default(),
            peer_checked_at: None,
        };
        qp.refresh_fast_path_facts();
        qp
    }

    fn refresh_fast_path_facts(&mut self) {
        self.fast = FastPathFacts::new(&self.setup, self.responder_srqn_uidx(), &self.attrs.dgid);
    }

    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.setup.qpn
    }

    /// The current state.
    pub fn state(&self) -> u8 {
        self.state
    }

    /// The PSNs the QP context holds now: the next request's (`next_send_psn`) and the
    /// next one expected from the peer (`next_rcv_psn`). They move with every message; what
    /// MODIFY_QP set is only where they started.
    pub fn next_psns(&self) -> (u32, u32) {
        (self.next_psn, self.expected_psn)
    }

    /// Asynchronous events delivered for this QP.
    pub fn async_events_reported(&self) -> u32 {
        self.async_events_reported
    }

    /// Where the QP's asynchronous events go (CREATE_QP's completion channel, if any).
    pub fn set_async_events(&mut self, sink: Option<Arc<dyn EventSink>>) {
        self.async_events = sink;
    }

    fn post_async(&mut self, event_type: u32, _hw: &Hardware<'_>) {
        if let Some(sink) = &self.async_events
            && sink.async_event(self.setup.user_handle, event_type)
        {
            self.async_events_reported += 1;
        }
    }

    /// Whether the engine must look at this QP on every pass, besides reacting to doorbells
    /// and packets: it holds back an ACK, owes responses, waits for ring space or for the
    /// peer's ring to appear. (Otherwise only [`QueuePair::next_deadline`], a timer, does.)
    #[inline]
    pub(crate) fn needs_every_pass(&self) -> bool {
        // The cheap and most frequent reason first: an ACK held back after a SEND.
        if self.deferred_ack.is_some() || !self.responses.is_empty() {
            return true;
        }
        let connected = matches!(self.state, qp_state::RTR | qp_state::RTS | qp_state::SQD);
        let unattached = connected && self.peer_incomplete;
        let blocked_transmit = self.resume_at.is_none()
            && self.outstanding.get(self.cursor.index).is_some_and(|o| o.outcome.is_none());
        unattached || blocked_transmit
    }

    /// The QP moved to `state` with `attrs` (MODIFY_QP already validated the transition).
    /// `peer_registry` is the HCA that owns `attrs.dgid` (at RTR).
    pub fn transition(
        &mut self,
        state: u8,
        attrs: QpAttributes,
        peer_registry: Option<Registry>,
        hw: &mut Hardware<'_>,
    ) {
        let previous = self.state;
        if state == qp_state::ERR
            && matches!(previous, qp_state::RTR | qp_state::RTS | qp_state::SQD)
        {
            // What the peer sent before the modify counts, as on hardware, where packets are
            // handled as they arrive: above all the ACKs and responses of our requests, which
            // may be waiting in the ring while the application, told of a disconnect by its
            // connection manager over another channel, moves the QP to ERR.
            self.run_inbound(hw);
        }
        self.attrs = attrs;
        self.refresh_fast_path_facts();
        self.ack_timeout = wire::ack_timeout_us(attrs.timeout).map(Duration::from_micros);
        self.ack_deadline = self.ack_timeout.map(|t| self.last_response + t);
        self.state = state;
        match state {
            qp_state::RESET => {
                // Told, and waited for, while the peer is still known: forgetting drops it,
                // and with it the ring a placement in progress shows its open gate in.
                self.publish_facts();
                self.forget_everything();
            }
            qp_state::INIT if previous == qp_state::RESET => self.forget_everything(),
            qp_state::RTR if previous == qp_state::INIT => {
                self.expected_psn = attrs.rq_psn & wire::PSN_MASK;
                self.link.outbound.reset(attrs.dest_qpn);
                // Told at the first transmission even if nothing fits yet: the new peer
                // then skips what the old one left unread (its first look at the new
                // epoch), which frees the room a first push may be waiting for.
                self.unannounced = true;
                self.link.peer = peer_registry.map(|registry| PeerEnd {
                    registry,
                    qpn: attrs.dest_qpn,
                    inbound: None,
                    notifier: None,
                    facts_epoch: None,
                });
                self.peer_incomplete = self.link.peer.is_some();
                self.attach();
            }
            qp_state::RTS if previous == qp_state::RTR => {
                self.next_psn = attrs.sq_psn & wire::PSN_MASK;
                self.ack_timer_running = false;
            }
            qp_state::ERR => self.enter_error(hw),
            _ => {}
        }
        // After the match: an RTR has started the ring's new epoch by now.
        self.publish_facts();
    }

    /// Tells the peer's requester what it needs for placing WRITEs and READs
    /// (`placement.rs`): the state, the remote rights and the PD, in the ring's header.
    fn publish_facts(&self) {
        let facts = QpFacts {
            state: self.state,
            remote_access: self.attrs.access_flags,
            epoch: self.link.outbound.epoch() as u16,
            pdn: self.setup.pdn,
        };
        let before = QpFacts::decode(self.link.outbound.qp_facts());
        self.link.outbound.publish_qp_facts(facts.encode());
        if before.takes_placement_away(&facts) {
            // A placement that saw the old facts finishes before the change takes effect.
            self.wait_for_peer_placement();
        }
    }

    /// Waits while the peer QP places a WRITE or READ in this process's memory (its gate, in
    /// the ring it sends us, is open), opening that ring for the purpose if this QP has
    /// not attached it yet.
    fn wait_for_peer_placement(&self) {
        let Some(peer) = self.link.peer.as_ref() else { return };
        match &peer.inbound {
            Some(inbound) => inbound.wait_while_producer_places(),
            None => {
                if let Ok(ring) = peer.registry.open_ring(peer.qpn, self.setup.qpn) {
                    ring.wait_while_producer_places();
                }
            }
        }
    }

    fn forget_everything(&mut self) {
        self.sq_head = 0;
        self.rq_head = 0;
        self.outstanding.clear();
        self.cursor = TransmitCursor::default();
        self.awaiting = 0;
        self.resume_at = None;
        self.timeouts = 0;
        self.inbound = None;
        self.rnr_psn = None;
        // A reset context starts from zero, as QUERY_QP then reads it (RTR and RTS set them).
        self.next_psn = 0;
        self.expected_psn = 0;
        self.responses.clear();
        self.deferred_ack = None;
        self.last_wqe_reported = false;
        if let Some(peer) = self.link.peer.take() {
            drop(peer);
            self.link.outbound.reset(0);
        }
        self.peer_incomplete = false;
    }

    /// Opens the peer's ring and notifier once they exist (the peer may reach RTR later).
    #[inline]
    fn attach(&mut self) {
        if self.peer_incomplete {
            self.attach_slow();
        }
    }

    #[cold]
    fn attach_slow(&mut self) {
        let my_qpn = self.setup.qpn;
        if let Some(peer) = &mut self.link.peer {
            if peer.inbound.is_none() {
                peer.inbound = peer.registry.open_ring(peer.qpn, my_qpn).ok();
            }
            if peer.notifier.is_none() {
                peer.notifier = peer.registry.notifier_for_qp(peer.qpn);
            }
        }
        self.peer_incomplete =
            self.link.peer.as_ref().is_some_and(|p| p.inbound.is_none() || p.notifier.is_none());
    }

    /// Tells the peer that packets wait for it (a syscall only if it sleeps).
    #[inline(always)]
    fn notify_peer(&mut self) {
        if self.unannounced {
            self.announce();
        }
    }

    fn announce(&mut self) {
        if let Some(n) = self.link.peer.as_ref().and_then(|p| p.notifier.as_ref()) {
            // A peer polling our ring sees the records without being told.
            if !self.link.outbound.consumer_polls() {
                n.notify();
            }
            self.unannounced = false;
        }
    }

    /// Where the peer's reading of our ring stands (changes whenever it reads).
    pub(crate) fn outbound_read_position(&self) -> u64 {
        self.link.outbound.consumer_head()
    }

    /// True if the peer's ring may hold records we have not read (one load, for polling).
    #[inline]
    pub(crate) fn inbound_may_have_records(&self) -> bool {
        self.link
            .peer
            .as_ref()
            .and_then(|p| p.inbound.as_ref())
            .is_some_and(RingConsumer::may_have_records)
    }

    /// Tells the peer that we poll its ring (it stops notifying us) or no longer do. When
    /// stopping, true means records may have arrived unannounced: run the QP.
    pub(crate) fn set_inbound_polling(&mut self, polling: bool) -> bool {
        match self.link.peer.as_mut().and_then(|p| p.inbound.as_mut()) {
            Some(inbound) => inbound.set_polling(polling),
            None => false,
        }
    }

    // ================================================================ completions

    fn requester_cqe(&self, o: &Outstanding, result: Result<u32, u8>) -> [u8; 64] {
        let uidx = if self.setup.cqe_version >= 1 { self.setup.uidx } else { 0 };
        match result {
            Ok(byte_cnt) => success_cqe(&Completion {
                cqe_opcode: cqe_opcode::REQ,
                wqe_opcode: o.wqe_opcode,
                qpn: self.setup.qpn,
                srqn_uidx: uidx,
                wqe_counter: o.wqe_index,
                byte_cnt,
                ..Default::default()
            }),
            Err(syndrome) => error_cqe(&ErrorCompletion {
                requester: true,
                syndrome,
                wqe_opcode: o.wqe_opcode,
                qpn: self.setup.qpn,
                srqn_uidx: uidx,
                wqe_counter: o.wqe_index,
                ..Default::default()
            }),
        }
    }

    /// Writes the requester CQE of `o` (out of line: most WQEs complete silently).
    #[inline(never)]
    fn push_requester_cqe(&self, o: &Outstanding, result: Result<u32, u8>, hw: &mut Hardware<'_>) {
        let cqe = self.requester_cqe(o, result);
        self.push_cqe(self.setup.send_cqn, cqe, hw);
    }

    fn responder_srqn_uidx(&self) -> u32 {
        match (self.setup.cqe_version, self.setup.srqn) {
            (v, _) if v >= 1 => self.setup.uidx,
            (_, Some(srqn)) => srqn,
            _ => 0,
        }
    }

    #[inline]
    fn push_cqe(&self, cqn: u32, cqe: [u8; 64], hw: &mut Hardware<'_>) -> bool {
        match hw.cqs.get_mut(&cqn) {
            Some(cq) => cq.push(&cqe).is_ok(),
            None => false,
        }
    }

    fn receive_error(&self, entry: ReceiveEntry, syndrome: u8, hw: &mut Hardware<'_>) {
        let cqe = error_cqe(&ErrorCompletion {
            requester: false,
            syndrome,
            qpn: self.setup.qpn,
            srqn_uidx: self.responder_srqn_uidx(),
            wqe_counter: entry.index,
            ..Default::default()
        });
        self.push_cqe(self.setup.recv_cqn, cqe, hw);
    }

    /// Completes finished WQEs at the head of the send queue, in order. An error
    /// completion moves the QP to ERR. (Acknowledged unsignalled SEND/WRITEs at the head
    /// never get here: [`Self::ack_through`] retires them itself.)
    #[inline(always)]
    fn complete_in_order(&mut self, hw: &mut Hardware<'_>) {
        // Most calls find nothing finished: decide that without a call.
        if self.outstanding.front().is_some_and(|head| head.outcome.is_some()) {
            self.complete_finished(hw);
        }
    }

    #[inline(always)]
    fn complete_finished(&mut self, hw: &mut Hardware<'_>) {
        while let Some(head) = self.outstanding.front() {
            let Some(result) = head.outcome else { break };
            if head.signaled || self.setup.sq_sig_all || result.is_err() {
                self.push_requester_cqe(head, result, hw);
            }
            self.outstanding.pop_front();
            self.cursor.index = self.cursor.index.saturating_sub(1);
            if result.is_err() {
                // The failed WQE carries the error; nothing behind it completes normally,
                // not even a WQE that needed no response (NOP, bind): RC completes in order.
                self.state = qp_state::ERR;
                self.publish_facts();
                self.flush_everything(hw);
                return;
            }
        }
    }

    /// The QP enters ERR (MODIFY_QP, or a fatal error as responder). WQEs that finished
    /// in order before it complete as they finished — the hardware wrote their CQEs when
    /// their responses arrived; an error among them completes with its own syndrome — and
    /// everything behind is flushed.
    #[inline(never)]
    fn enter_error(&mut self, hw: &mut Hardware<'_>) {
        self.state = qp_state::ERR;
        self.publish_facts();
        self.complete_in_order(hw);
        self.flush_everything(hw);
    }

    /// The device failed (`Engine::is_fatal`): a QP past RESET goes to ERR, flushing its
    /// work requests, as a MODIFY_QP to ERR would, but without reading the peer first.
    pub(crate) fn device_failed(&mut self, hw: &mut Hardware<'_>) {
        if !matches!(self.state, qp_state::RESET | qp_state::ERR) {
            self.enter_error(hw);
        }
    }

    /// ERR: every WQE still owned by the HCA completes with `WR_FLUSH_ERR`, signalled or
    /// not (mlx5_ib's drain posts an unsignalled RDMA WRITE and waits for its flush CQE),
    /// whatever its own progress: a WQE behind the failed one is never reported done.
    /// Idempotent.
    fn flush_everything(&mut self, hw: &mut Hardware<'_>) {
        while let Some(o) = self.outstanding.pop_front() {
            let cqe = self.requester_cqe(&o, Err(cqe_syndrome::WR_FLUSH_ERR));
            self.push_cqe(self.setup.send_cqn, cqe, hw);
        }
        self.cursor = TransmitCursor::default();
        self.awaiting = 0;
        self.flush_unexecuted_sends(hw);
        if let Some(msg) = self.inbound.take()
            && let Some(entry) = msg.entry
        {
            self.receive_error(entry, cqe_syndrome::WR_FLUSH_ERR, hw);
        }
        self.flush_receives(hw);
        self.responses.clear();
        self.deferred_ack = None;
        self.rnr_psn = None;
        if self.setup.srqn.is_some() && !self.last_wqe_reported {
            self.last_wqe_reported = true;
            self.post_async(event::QP_LAST_WQE_REACHED, hw);
        }
    }

    /// Doorbell record word 1 as the consumer last wrote it (the SQ counter, big-endian
    /// in memory): what a device watching doorbell records compares against.
    pub fn sq_doorbell_record(&self) -> Option<u32> {
        self.setup.dbrec.read_be32(4).ok()
    }

    fn sq_tail(&self) -> u16 {
        self.setup.dbrec.read_be32(4).map(|v| v as u16).unwrap_or(self.sq_head)
    }

    fn flush_unexecuted_sends(&mut self, hw: &mut Hardware<'_>) {
        let tail = self.sq_tail();
        while self.sq_head != tail {
            let Some(ctrl) = self.read_ctrl(self.sq_head) else { break };
            let (op, wqe_index, ds) = send_wqe::peek_ctrl(&ctrl);
            let o = Outstanding {
                sq_pos: self.sq_head,
                wqe_index,
                wqe_opcode: op,
                signaled: true,
                fence: false,
                psn: 0,
                operation: Operation::Local,
                outcome: None,
                rnr_naks: 0,
                placed: false,
            };
            let cqe = self.requester_cqe(&o, Err(cqe_syndrome::WR_FLUSH_ERR));
            self.push_cqe(self.setup.send_cqn, cqe, hw);
            self.sq_head = self.sq_head.wrapping_add(wqebbs(ds.max(1)));
        }
    }

    /// In ERR with a receive queue of its own: a receive posted now must be flushed
    /// without any doorbell (mlx5 has none for receives; the device reads the record, as
    /// mlx5_ib's drain relies on), so the engine watches the record on every poll.
    pub(crate) fn watches_receives_in_error(&self) -> bool {
        self.state == qp_state::ERR && self.setup.srqn.is_none() && self.setup.rq_wqe_count > 0
    }

    /// Receives were posted that the QP has not taken (or flushed) yet.
    pub(crate) fn has_new_receives(&self) -> bool {
        self.setup.rq_wqe_count > 0 && self.setup.srqn.is_none() && self.rq_tail() != self.rq_head
    }

    fn rq_tail(&self) -> u16 {
        self.setup.dbrec.read_be32(0).map(|v| v as u16).unwrap_or(self.rq_head)
    }

    fn flush_receives(&mut self, hw: &mut Hardware<'_>) {
        if self.setup.srqn.is_some() || self.setup.rq_wqe_count == 0 {
            return;
        }
        let tail = self.rq_tail();
        while self.rq_head != tail {
            let index = self.rq_head & (self.setup.rq_wqe_count as u16 - 1);
            let entry = ReceiveEntry { index, bytes: self.setup.rq };
            self.receive_error(entry, cqe_syndrome::WR_FLUSH_ERR, hw);
            self.rq_head = self.rq_head.wrapping_add(1);
        }
    }

    // ================================================================ requester

    fn read_ctrl(&self, pos: u16) -> Option<[u8; 16]> {
        let at = (u32::from(pos) & (self.setup.sq_wqebbs - 1)) as usize * SEND_WQE_BB;
        let mut ctrl = [0u8; 16];
        self.setup.sq.read(at, &mut ctrl).ok()?;
        Some(ctrl)
    }

    /// Copies the WQE at SQ position `pos` into `out` (unwrapping the ring).
    fn read_wqe(&self, pos: u16, out: &mut Vec<u8>) -> Option<usize> {
        let ctrl = self.read_ctrl(pos)?;
        let (_, _, ds) = send_wqe::peek_ctrl(&ctrl);
        let len = (ds.max(1) * SEND_WQE_DS).min(MAX_WQE_BYTES);
        out.clear();
        out.resize(len, 0);
        let ring = self.setup.sq.len();
        let start = (u32::from(pos) & (self.setup.sq_wqebbs - 1)) as usize * SEND_WQE_BB;
        let first = len.min(ring - start);
        self.setup.sq.read(start, &mut out[..first]).ok()?;
        if first < len {
            self.setup.sq.read(0, &mut out[first..]).ok()?;
        }
        Some(ds)
    }

    /// A progress pass: the peer's packets, then the requester. The requester's part is
    /// skipped when it could do nothing the inbound part has not just done: in RTS with no
    /// new WQE, no RNR back-off and no transport timer running (so no request waits for a
    /// response), it would only transmit, complete and arm the timer again, as
    /// [`Self::run_inbound`] did last.
    pub fn run_pass(&mut self, hw: &mut Hardware<'_>) {
        self.run_inbound(hw);
        if self.state == qp_state::RTS
            && self.resume_at.is_none()
            && !self.ack_timer_running
            && self.sq_tail() == self.sq_head
        {
            return;
        }
        self.run_requester(hw);
    }

    /// The SQ doorbell rang or the QP needs attention: execute and transmit.
    pub fn run_requester(&mut self, hw: &mut Hardware<'_>) {
        match self.state {
            qp_state::ERR => {
                self.flush_unexecuted_sends(hw);
                self.flush_receives(hw);
                return;
            }
            qp_state::RTS | qp_state::SQD => {}
            _ => return,
        }
        self.attach();
        self.check_ack_timeout(hw);
        if self.state == qp_state::ERR {
            return;
        }
        if self.state == qp_state::RTS {
            self.fetch_new_wqes(hw);
        }
        self.transmit(hw);
        self.complete_in_order(hw);
        self.arm_ack_timer(hw);
        self.check_awaiting();
    }

    /// Decodes new WQEs into `outstanding`, checking their local keys. Stops after one that
    /// fails (it will complete in error in order).
    fn fetch_new_wqes(&mut self, hw: &mut Hardware<'_>) {
        let tail = self.sq_tail();
        while self.sq_head != tail {
            if self.outstanding.back().is_some_and(|o| matches!(o.outcome, Some(Err(_)))) {
                break;
            }
            if !self.send_small(self.sq_head, hw) && !self.fetch_wqe(hw) {
                break;
            }
        }
    }

    /// The general case of [`Self::fetch_new_wqes`] for the WQE at `sq_head` (out of line:
    /// the common small SEND never gets here). False: it could not be read.
    #[inline(never)]
    fn fetch_wqe(&mut self, hw: &mut Hardware<'_>) -> bool {
        let pos = self.sq_head;
        let mut bytes = std::mem::take(hw.scratch);
        let Some(ds) = self.read_wqe(pos, &mut bytes) else {
            *hw.scratch = bytes;
            return false;
        };
        let entry = match send_wqe::decode(&bytes) {
            Ok(wqe) => {
                let entry = self.admit(pos, &wqe, hw.regions);
                if self.can_transmit_at_once(&entry) {
                    // The common case: the new WQE is next in line and nothing holds it
                    // back; send it now, from the bytes just decoded.
                    self.sq_head = self.sq_head.wrapping_add(wqebbs(ds.max(1)));
                    self.outstanding.push_back(entry);
                    if self.send_packets(&wqe, hw) == Some(true) {
                        self.advance_cursor();
                    }
                    *hw.scratch = bytes;
                    return true;
                }
                entry
            }
            Err(syndrome) => {
                let (op, wqe_index, _) =
                    send_wqe::peek_ctrl(bytes[..16].try_into().expect("16 bytes"));
                Outstanding {
                    sq_pos: pos,
                    wqe_index,
                    wqe_opcode: op,
                    signaled: true,
                    fence: false,
                    psn: self.next_psn,
                    operation: Operation::Local,
                    outcome: Some(Err(syndrome)),
                    rnr_naks: 0,
                    placed: false,
                }
            }
        };
        self.sq_head = self.sq_head.wrapping_add(wqebbs(ds.max(1)));
        self.outstanding.push_back(entry);
        *hw.scratch = bytes;
        true
    }

    /// The common case of [`Self::fetch_new_wqes`] without decoding into the general
    /// structures: a SEND of at most [`SMALL_SEND_BYTES`] bytes (inline, or one data
    /// segment), without fence, that can go out at once (as [`Self::can_transmit_at_once`])
    /// travels as one compact packet built straight from the WQE. False, with nothing
    /// done, for anything else (the general path handles it, errors included).
    fn send_small(&mut self, pos: u16, hw: &mut Hardware<'_>) -> bool {
        if self.state != qp_state::RTS
            || self.cursor.index != self.outstanding.len()
            || self.cursor.offset != 0
            || self.resume_at.is_some()
            || self.link.peer.is_none()
        {
            return false;
        }
        // A WQE of at most 4 ds lies inside its first basic block: no ring wrap.
        let at = (u32::from(pos) & (self.setup.sq_wqebbs - 1)) as usize * SEND_WQE_BB;
        let mut wqe = [0u8; SEND_WQE_BB];
        if self.setup.sq.read(at, &mut wqe).is_err() {
            return false;
        }
        let Ok((ctrl, rest)) = WqeCtrlSeg::read_from_prefix(&wqe) else { return false };
        let word = ctrl.opmod_idx_opcode.get();
        let (op, wqe_index) = ((word & 0xff) as u8, (word >> 8) as u16);
        let ds = (ctrl.qpn_ds.get() & 0x3f) as usize;
        let fence = wqe_ctrl::FENCE | wqe_ctrl::INITIATOR_SMALL_FENCE;
        if !matches!(op, opcode::SEND | opcode::SEND_IMM)
            || !(2..=4).contains(&ds)
            || ctrl.fm_ce_se & fence != 0
        {
            return false;
        }
        let mut words = [0u64; SMALL_RECORD_WORDS];
        let record = words.as_mut_bytes();
        let header_len = size_of::<CompactHeader>();
        let seg_word = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let len = if seg_word & INLINE_SEG != 0 {
            // As `send_wqe::decode`: the inline bytes must lie inside the WQE.
            let len = (seg_word & !INLINE_SEG) as usize;
            if len > SMALL_SEND_BYTES || SEND_WQE_DS + 4 + len > ds * SEND_WQE_DS {
                return false;
            }
            record[header_len..header_len + len].copy_from_slice(&rest[4..4 + len]);
            len
        } else {
            if ds != 2 {
                return false;
            }
            let Ok(seg) = WqeDataSeg::read_from_bytes(&rest[..SEND_WQE_DS]) else { return false };
            let len = seg.byte_count.get() as usize; // 0 would mean 2 GiB
            if len == 0 || len > SMALL_SEND_BYTES {
                return false;
            }
            let source =
                hw.regions.translate(seg.lkey.get(), self.setup.pdn, seg.addr.get(), len as u64, 0);
            match source {
                Ok(span) if span.read(0, &mut record[header_len..header_len + len]).is_ok() => len,
                _ => return false,
            }
        };
        let signaled = ctrl.fm_ce_se & wqe_ctrl::CQ_UPDATE != 0;
        let mut flags = flag::FIRST | flag::LAST;
        if ctrl.fm_ce_se & wqe_ctrl::SOLICITED != 0 {
            flags |= flag::SOLICITED;
        }
        if op == opcode::SEND_IMM {
            flags |= flag::IMMEDIATE;
        }
        // As `send_packets` (which runs with the entry at the cursor, not counted yet).
        if signaled
            || self.setup.sq_sig_all
            || (self.awaiting >= ACK_REQUEST_EVERY && self.unacknowledged() >= ACK_REQUEST_EVERY)
        {
            flags |= flag::ACK_REQUEST;
        }
        let mut ack_psn = 0;
        if let Some((psn, _)) = self.deferred_ack {
            flags |= flag::ACK_PIGGYBACK;
            ack_psn = psn;
        }
        let psn = self.next_psn;
        let header = CompactHeader {
            flags,
            rnr_retry: self.attrs.rnr_retry,
            reserved: 0,
            imm: ctrl.imm.get().to_be_bytes(),
            psn,
            ack_psn,
        };
        record[..header_len].copy_from_slice(header.as_bytes());
        self.next_psn = wire::next_psn(psn);
        self.sq_head = self.sq_head.wrapping_add(wqebbs(ds));
        self.outstanding.push_back(Outstanding {
            sq_pos: pos,
            wqe_index,
            wqe_opcode: op,
            signaled,
            fence: false,
            psn,
            operation: Operation::Transfer,
            outcome: None,
            rnr_naks: 0,
            placed: false,
        });
        let kind = wire::COMPACT_RECORD | u16::from(kind::SEND);
        if self.link.outbound.try_push_words(kind, &words, header_len + len).is_ok() {
            self.unannounced = true;
            if flags & flag::ACK_PIGGYBACK != 0 {
                self.deferred_ack = None;
            }
            self.advance_cursor();
        }
        // Else the ring is full: the cursor stays on the entry and `transmit` sends it
        // later from the WQE, as for any other.
        true
    }

    /// Whether `entry`, about to be appended, can be transmitted right away: transmission
    /// has caught up (the cursor is at the end), no RNR back-off runs, there is a peer,
    /// and it is a SEND or WRITE without a fence (READs and atomics go through
    /// [`QueuePair::transmit`] for the outstanding-READ limit).
    fn can_transmit_at_once(&self, entry: &Outstanding) -> bool {
        self.state == qp_state::RTS
            && self.cursor.index == self.outstanding.len()
            && self.cursor.offset == 0
            && self.resume_at.is_none()
            && entry.outcome.is_none()
            && !entry.fence
            && matches!(entry.operation, Operation::Transfer)
            && self.link.peer.is_some()
    }

    /// Turns a decoded WQE into an outstanding entry, with its local buffers checked.
    fn admit(&mut self, pos: u16, wqe: &SendWqe<'_>, regions: &mut MemoryRegions) -> Outstanding {
        let mut o = Outstanding {
            sq_pos: pos,
            wqe_index: wqe.wqe_index,
            wqe_opcode: wqe.opcode,
            signaled: wqe.signaled,
            fence: wqe.fence,
            psn: 0,
            operation: Operation::Local,
            outcome: None,
            rnr_naks: 0,
            placed: false,
        };
        let pdn = self.setup.pdn;
        let checked = match wqe.opcode {
            opcode::NOP => Ok(Operation::Local),
            // A bind takes effect when the HCA executes it, in order: later WQEs and the
            // peer's requests that follow them see the new key.
            opcode::UMR => {
                let bind = wqe.bind.expect("decode gives every UMR WQE its bind");
                regions
                    .bind_window(pdn, &bind)
                    .map(|()| Operation::Local)
                    .map_err(|_| cqe_syndrome::MW_BIND_ERR)
            }
            opcode::SEND | opcode::SEND_IMM | opcode::RDMA_WRITE | opcode::RDMA_WRITE_IMM => {
                if wqe.local_length() > MAX_MESSAGE_BYTES {
                    Err(cqe_syndrome::LOCAL_LENGTH_ERR)
                } else {
                    wqe.sges()
                        .try_for_each(|s| {
                            regions
                                .translate(s.lkey, pdn, s.addr, u64::from(s.length), 0)
                                .map(|_| ())
                        })
                        .map(|_| Operation::Transfer)
                        .map_err(local_key_syndrome)
                }
            }
            opcode::RDMA_READ => {
                let sges: Vec<Sge> = wqe.sges().collect();
                let mut targets = Vec::with_capacity(sges.len());
                translate_read_targets(&sges, &mut targets, regions, pdn).map(|()| {
                    Operation::Read(Box::new(ReadBuffers {
                        sges,
                        targets,
                        length: wqe.local_length(),
                        received: 0,
                    }))
                })
            }
            _ => match wqe.sges().next() {
                Some(s) => regions
                    .translate(s.lkey, pdn, s.addr, 8, access::LOCAL_WRITE)
                    .map(|_| Operation::Atomic { sge: s })
                    .map_err(local_key_syndrome),
                // Decode lets no atomic through without its one data segment.
                None => Err(cqe_syndrome::LOCAL_QP_OP_ERR),
            },
        };
        match checked {
            Ok(Operation::Local) => o.outcome = Some(Ok(0)),
            Ok(op) => {
                o.operation = op;
                o.psn = self.next_psn;
                self.next_psn = wire::next_psn(self.next_psn);
            }
            Err(syndrome) => o.outcome = Some(Err(syndrome)),
        }
        o
    }

    /// Sends packets from the cursor on, until the ring is full, a fence or the RDMA READ
    /// limit holds, or an RNR back-off is running.
    #[inline(always)]
    fn transmit(&mut self, hw: &mut Hardware<'_>) {
        // Most calls find everything sent: decide that without a call.
        if self.resume_at.is_none() && self.cursor.index >= self.outstanding.len() {
            if self.link.peer.is_some() {
                self.notify_peer();
            }
            return;
        }
        self.transmit_from_cursor(hw);
    }

    fn transmit_from_cursor(&mut self, hw: &mut Hardware<'_>) {
        if let Some(at) = self.resume_at {
            if hw.now() < at {
                return;
            }
            self.resume_at = None;
        }
        if self.link.peer.is_none() {
            return;
        }
        let mut bytes = std::mem::take(hw.scratch);
        while self.cursor.index < self.outstanding.len() {
            let o = &self.outstanding[self.cursor.index];
            if o.outcome.is_some() || matches!(o.operation, Operation::Local) {
                if matches!(o.outcome, Some(Err(_))) {
                    break;
                }
                self.advance_cursor();
                continue;
            }
            let (pos, is_read, fence) = (o.sq_pos, o.is_read_or_atomic(), o.fence);
            if self.cursor.offset == 0 && (fence || is_read) {
                let reads = self
                    .outstanding
                    .iter()
                    .take(self.cursor.index)
                    .filter(|p| p.is_read_or_atomic() && p.outcome.is_none())
                    .count();
                if fence && reads > 0 {
                    break;
                }
                if is_read && reads >= usize::from(self.attrs.max_rd_atomic.max(1)) {
                    break;
                }
            }
            if self.read_wqe(pos, &mut bytes).is_none() {
                break;
            }
            let Ok(wqe) = send_wqe::decode(&bytes) else { break };
            match self.send_packets(&wqe, hw) {
                Some(true) => self.advance_cursor(),
                _ => break,
            }
        }
        *hw.scratch = bytes;
        self.notify_peer();
    }

    /// Pushes the packets of the WQE in `bytes` for `outstanding[cursor.index]` from the
    /// cursor's offset. `Some(true)`: all sent; `Some(false)`/`None`: ring full.
    fn send_packets(&mut self, wqe: &SendWqe<'_>, hw: &mut Hardware<'_>) -> Option<bool> {
        let o = &self.outstanding[self.cursor.index];
        let mut header = PacketHeader {
            src_qpn: self.setup.qpn,
            psn: o.psn,
            rnr_retry: self.attrs.rnr_retry,
            imm: wqe.imm,
            length: wqe.local_length(),
            ..Default::default()
        };
        if wqe.solicited {
            header.flags |= flag::SOLICITED;
        }
        // (`awaiting` bounds the count from above: most calls need no scan.)
        if wqe.signaled
            || self.setup.sq_sig_all
            || (self.awaiting >= ACK_REQUEST_EVERY && self.unacknowledged() >= ACK_REQUEST_EVERY)
        {
            header.flags |= flag::ACK_REQUEST;
        }
        if let Some(r) = wqe.remote {
            header.remote_addr = r.addr;
            header.rkey = r.rkey;
        }
        match wqe.opcode {
            opcode::RDMA_READ => {
                header.kind = kind::READ;
                if header.length >= PLACE_MIN_BYTES
                    && let Some(pushed) = self.place(wqe, &header, hw)
                {
                    return Some(pushed);
                }
                header.flags |= flag::FIRST | flag::LAST;
                return self.push(&header, &[]).then_some(true);
            }
            opcode::ATOMIC_CS | opcode::ATOMIC_FA => {
                let (operand, compare) = wqe.atomic.expect("atomic WQE has operands");
                header.kind =
                    if wqe.opcode == opcode::ATOMIC_CS { kind::ATOMIC_CS } else { kind::ATOMIC_FA };
                header.flags |= flag::FIRST | flag::LAST;
                header.operand = operand;
                header.compare = compare;
                header.length = 8;
                return self.push(&header, &[]).then_some(true);
            }
            opcode::SEND | opcode::SEND_IMM => header.kind = kind::SEND,
            _ => header.kind = kind::WRITE,
        }
        if matches!(wqe.opcode, opcode::SEND_IMM | opcode::RDMA_WRITE_IMM) {
            header.flags |= flag::IMMEDIATE;
        }
        self.send_segments(wqe, header, hw)
    }

    /// The SEND or WRITE segments of `wqe` from the cursor on, each gathered from the WQE's
    /// buffers straight into its ring record (a small one through the word path).
    fn send_segments(
        &mut self,
        wqe: &SendWqe<'_>,
        header: PacketHeader,
        hw: &mut Hardware<'_>,
    ) -> Option<bool> {
        let (total, base_addr) = (header.length, header.remote_addr);
        if header.kind == kind::WRITE
            && header.flags & flag::IMMEDIATE == 0
            && total >= PLACE_MIN_BYTES
            && let Some(pushed) = self.place(wqe, &header, hw)
        {
            return Some(pushed);
        }
        loop {
            let offset = self.cursor.offset;
            let len = (total - offset).min(SEGMENT_BYTES as u64) as usize;
            let mut h = header;
            h.offset = offset;
            h.remote_addr = base_addr.wrapping_add(offset);
            if offset == 0 {
                h.flags |= flag::FIRST;
            }
            if offset + len as u64 == total {
                h.flags |= flag::LAST;
            }
            let pdn = self.setup.pdn;
            let pushed = if len <= SMALL_RECORD_BYTES {
                let mut small = [0u8; SMALL_RECORD_BYTES];
                gather(wqe, hw.regions, pdn, offset, &mut small[..len])?;
                self.push(&h, &small[..len])
            } else {
                let regions = &*hw.regions;
                self.push_filled(&h, len, |record| {
                    gather_into_record(wqe, regions, pdn, offset, record)
                })?
            };
            if !pushed {
                return Some(false);
            }
            self.cursor.offset = offset + len as u64;
            if self.cursor.offset >= total {
                return Some(true);
            }
        }
    }

    /// Places the RDMA WRITE or READ at the cursor: copies it straight into (WRITE) or out
    /// of (READ) the peer's exported memory, a chunk of at most [`PLACE_CHUNK_BYTES`] per
    /// call, and pushes its header with the last one, when `placement.rs`'s conditions
    /// hold. `Some(true)`: all placed and the header sent; `Some(false)`: more to place at
    /// the next pass, or the ring is full, or the request failed part-way (it then
    /// completes in error); `None`: send it through the ring instead (nothing was placed).
    fn place(
        &mut self,
        wqe: &SendWqe<'_>,
        header: &PacketHeader,
        hw: &mut Hardware<'_>,
    ) -> Option<bool> {
        let reading = header.kind == kind::READ;
        let right = if reading { access::REMOTE_READ } else { access::REMOTE_WRITE };
        let index = self.cursor.index;
        let start = self.cursor.offset;
        let continuing = start > 0;
        if continuing {
            if !self.outstanding[index].placed {
                return None; // going through the ring already
            }
        } else {
            if self.outstanding.iter().take(index).any(|o| {
                o.outcome.is_none() && !o.placed && !matches!(o.operation, Operation::Local)
            }) {
                return None; // an earlier request is not done at the responder yet
            }
            // A local buffer that no longer translates is the ring path's case, as before
            // (a READ's are translated below, for writing, before each chunk).
            let pdn = self.setup.pdn;
            if !reading
                && wqe.sges().any(|s| {
                    hw.regions.translate(s.lkey, pdn, s.addr, u64::from(s.length), 0).is_err()
                })
            {
                return None;
            }
            if !self.peer_alive(hw) {
                return None;
            }
        }
        if reading {
            // The buffers as they are registered now, for each chunk, as for each response
            // of a READ through the ring.
            let pdn = self.setup.pdn;
            if let Operation::Read(read) = &mut self.outstanding[index].operation
                && let Err(syndrome) =
                    translate_read_targets(&read.sges, &mut read.targets, hw.regions, pdn)
            {
                self.fail_placed(index, syndrome, hw);
                return Some(false);
            }
        }
        let len = (header.length - start).min(PLACE_CHUNK_BYTES);
        let last = start + len == header.length;
        let pdn = self.setup.pdn;
        let mut seen_epoch = None;
        let step = 'place: {
            let Some((peer, inbound)) =
                self.link.peer.as_ref().and_then(|p| Some((p, p.inbound.as_ref()?)))
            else {
                break 'place Placing::Refused;
            };
            let Hardware { regions, imports, .. } = &mut *hw;
            let Some(import) = imports.get(&peer.registry, header.rkey, inbound.producer_pid())
            else {
                break 'place Placing::Refused;
            };
            let region = *import.region();
            // The whole request must fit at its start, as the responder checks it at its
            // first packet: nothing of one that does not is placed.
            if !continuing
                && (region.access & right == 0 || !import.covers(header.remote_addr, header.length))
            {
                break 'place Placing::Refused;
            }
            // The gate: while it is open, the peer's MODIFY_QP or DESTROY_QP that takes away
            // what its facts allow waits (ring.rs, `set_placing`); so the facts are read
            // after it opened.
            self.link.outbound.set_placing(true);
            let facts = QpFacts::decode(inbound.producer_qp_facts().unwrap_or(0));
            // Rights and PD count at the start, as on the ring path; later chunks need only
            // a peer QP that still takes requests.
            let allowed = if continuing {
                facts.takes_requests()
            } else {
                facts.grants(right) && facts.pdn == region.pdn
            };
            if !allowed || peer.facts_epoch.is_some_and(|e| e != facts.epoch) {
                break 'place Placing::Refused;
            }
            seen_epoch = Some(facts.epoch);
            let placement = match import.claim(header.remote_addr.wrapping_add(start), len) {
                Ok(placement) => placement,
                Err(PlaceError::Withdrawn) => break 'place Placing::Withdrawn,
                // Every user slot taken: a request under way waits for one.
                Err(PlaceError::Busy) if continuing => break 'place Placing::Retry,
                Err(_) => break 'place Placing::Refused,
            };
            if last {
                // The header goes with the last chunk, while the slot is held: the
                // responder only answers it (an ACK, or an empty READ response), and the
                // answer is handled under this QP's lock, after the copy; a later request
                // is pushed after the copy too.
                let mut h = *header;
                h.flags |= flag::FIRST | flag::LAST | flag::PLACED;
                if !self.push(&h, &[]) {
                    break 'place Placing::Retry;
                }
            }
            let copied = if reading {
                let Operation::Read(read) = &self.outstanding[index].operation else {
                    break 'place Placing::Refused; // admitted as a READ: not reached
                };
                placement.read(|map, at| {
                    let data = Payload::InMapping { map, at, len: len as usize };
                    scatter(&read.targets, start, data).ok()
                })
            } else {
                placement.write(|map, at| {
                    gather_into_mapping(wqe, regions, pdn, start, len as usize, map, at)
                })
            };
            match (copied, last) {
                (Err(_), _) => Placing::Failed,
                (Ok(()), true) => Placing::Done,
                (Ok(()), false) => Placing::More,
            }
        };
        // Closed on every way out of the block (a store of 0 if it never opened).
        self.link.outbound.set_placing(false);
        if let (Some(epoch), Some(peer)) = (seen_epoch, self.link.peer.as_mut()) {
            peer.facts_epoch.get_or_insert(epoch);
        }
        let registry_uid = self.link.peer.as_ref().map(|p| p.registry.uid());
        match step {
            Placing::Done | Placing::More => {
                let o = &mut self.outstanding[index];
                o.placed = true;
                if let Operation::Read(read) = &mut o.operation {
                    // The responder's empty response to the header starts where this ends.
                    read.received = start + len;
                }
                self.cursor.offset = start + len;
                if last {
                    let placed = if reading {
                        &mut hw.imports.placed_reads
                    } else {
                        &mut hw.imports.placed_writes
                    };
                    *placed += 1;
                }
                Some(last)
            }
            Placing::Retry => Some(false),
            Placing::Refused | Placing::Withdrawn if !continuing => {
                if let (Placing::Withdrawn, Some(uid)) = (&step, registry_uid) {
                    hw.imports.forget(uid, header.rkey);
                }
                None
            }
            Placing::Refused | Placing::Withdrawn | Placing::Failed => {
                // Part of the data may have landed: the request fails, as one whose region
                // or responder goes away in the middle (the header, if pushed, is answered
                // to no effect).
                if let Some(uid) = registry_uid {
                    hw.imports.forget(uid, header.rkey);
                }
                self.fail_placed(index, cqe_syndrome::REMOTE_ACCESS_ERR, hw);
                Some(false)
            }
        }
    }

    /// The request at `index`, being placed, fails with `syndrome`; completed here: a later
    /// chunk is placed from a progress pass, which completes nothing after transmitting.
    fn fail_placed(&mut self, index: usize, syndrome: u8, hw: &mut Hardware<'_>) {
        self.outstanding[index].outcome = Some(Err(syndrome));
        self.cursor = TransmitCursor { index: self.outstanding.len(), offset: 0 };
        self.recount_awaiting();
        self.complete_in_order(hw);
    }

    /// Whether the peer's process is still there, looked at no more often than every
    /// [`PEER_CHECK_INTERVAL`] (a few system calls): a dead peer's memory takes no more
    /// placements (its WRITEs and READs then take the ring, and time out as before).
    fn peer_alive(&mut self, hw: &mut Hardware<'_>) -> bool {
        let now = hw.now();
        if self.peer_checked_at.is_some_and(|at| now.duration_since(at) < PEER_CHECK_INTERVAL) {
            return true;
        }
        hw.imports.prune();
        let alive = self
            .link
            .peer
            .as_ref()
            .and_then(|p| p.inbound.as_ref())
            .is_some_and(|inbound| !inbound.producer_gone());
        self.peer_checked_at = alive.then_some(now);
        alive
    }

    /// A request is part-way placed: the rest goes at the next passes (the engine wakes a
    /// sleeping progress thread for it).
    pub(crate) fn placement_pending(&self) -> bool {
        self.cursor.offset > 0
            && self
                .outstanding
                .get(self.cursor.index)
                .is_some_and(|o| o.placed && o.outcome.is_none())
    }

    /// The QP goes away (DESTROY_QP): its peer stops placing into this process's memory
    /// through it before this returns.
    pub(crate) fn stop_placements(&mut self) {
        self.link.outbound.publish_qp_facts(0);
        self.wait_for_peer_placement();
    }

    /// SEND/WRITE messages sent and not yet acknowledged.
    fn unacknowledged(&self) -> usize {
        self.outstanding
            .iter()
            .take(self.cursor.index)
            .filter(|o| o.outcome.is_none() && matches!(o.operation, Operation::Transfer))
            .count()
    }

    /// `header` as it goes out with `payload_len` bytes, in its wire form: with the ACK the
    /// responder side owes riding on a request, saving a packet (then the second value is
    /// true).
    fn outgoing_header(&self, header: &PacketHeader, payload_len: usize) -> (WireHeader, bool) {
        let mut h = *header;
        h.payload_len = payload_len as u32;
        let piggyback = h.kind < kind::ACK && self.deferred_ack.is_some();
        if piggyback {
            h.flags |= flag::ACK_PIGGYBACK;
            h.ack_psn = self.deferred_ack.map(|(psn, _)| psn).unwrap_or_default();
        }
        (WireHeader::new(&h, payload_len), piggyback)
    }

    /// Book-keeping after a push attempt; returns `pushed`.
    fn after_push(&mut self, pushed: bool, piggyback: bool) -> bool {
        self.unannounced |= pushed;
        if pushed && piggyback {
            self.deferred_ack = None;
        }
        pushed
    }

    /// As [`Self::push`], for a payload of `payload_len` bytes that `fill` appends straight
    /// into the ring record (no intermediate buffer). `None`: `fill` failed, nothing was
    /// sent; `Some(false)`: the ring is full.
    fn push_filled(
        &mut self,
        header: &PacketHeader,
        payload_len: usize,
        fill: impl FnOnce(&mut RecordFiller<'_>) -> Option<()>,
    ) -> Option<bool> {
        let (wire_header, piggyback) = self.outgoing_header(header, payload_len);
        let (kind, header_bytes) = (wire_header.record_kind(), wire_header.bytes());
        let filled = self
            .link
            .outbound
            .try_push_filled(kind, header_bytes, payload_len, |r| fill(r).ok_or(()));
        let pushed = match filled {
            Ok(()) => true,
            Err(FilledPushError::Fill(())) => return None,
            Err(FilledPushError::Ring(_)) => false,
        };
        Some(self.after_push(pushed, piggyback))
    }

    fn push(&mut self, header: &PacketHeader, payload: &[u8]) -> bool {
        let (wire_header, piggyback) = self.outgoing_header(header, payload.len());
        let outbound = &mut self.link.outbound;
        let (kind, header_bytes) = (wire_header.record_kind(), wire_header.bytes());
        let len = header_bytes.len() + payload.len();
        let pushed = if len <= SMALL_RECORD_BYTES {
            let mut words = [0u64; SMALL_RECORD_WORDS];
            let bytes = words.as_mut_bytes();
            bytes[..header_bytes.len()].copy_from_slice(header_bytes);
            bytes[header_bytes.len()..len].copy_from_slice(payload);
            outbound.try_push_words(kind, &words, len)
        } else {
            outbound.try_push(kind, header_bytes, &[payload])
        }
        .is_ok();
        self.after_push(pushed, piggyback)
    }

    /// Transport timeout: no response for `timeout` while requests are in flight counts
    /// one retry; past `retry_cnt` the oldest request fails with RETRY_EXC_ERR. (Nothing is
    /// lost in shared memory, so only a dead or stuck peer gets here.)
    fn check_ack_timeout(&mut self, hw: &mut Hardware<'_>) {
        if self.awaiting == 0 || self.resume_at.is_some() {
            self.ack_timer_running = false;
            return;
        }
        if !self.ack_timer_running {
            // Requests just went out: the timeout counts from here.
            self.start_ack_timer(hw);
            return;
        }
        let Some(timeout) = self.ack_timeout else { return };
        let now = hw.now();
        if now.duration_since(self.last_response) < timeout {
            return;
        }
        self.set_last_response(now);
        if std::mem::take(&mut self.ack_timer_coarse) {
            // Started from a stale reading: count from a real one instead.
            return;
        }
        self.timeouts += 1;
        if self.timeouts > self.attrs.retry_cnt.min(7) {
            if let Some(o) = self.outstanding.iter_mut().find(|o| o.outcome.is_none()) {
                o.outcome = Some(Err(cqe_syndrome::TRANSPORT_RETRY_EXC_ERR));
            }
            self.cursor.index = self.outstanding.len();
            self.recount_awaiting();
            self.complete_in_order(hw);
        }
    }

    /// Starts the transport timer without reading the clock: from the pass's clock
    /// reading if there was one, else from the engine's last one (then marked coarse).
    fn start_ack_timer(&mut self, hw: &Hardware<'_>) {
        self.ack_timer_running = true;
        self.ack_timer_coarse = hw.now.is_none();
        self.set_last_response(hw.coarse_now());
    }

    /// The transport timer counts from `at` (keeping `ack_deadline` with it).
    #[inline(always)]
    fn set_last_response(&mut self, at: Instant) {
        if at != self.last_response {
            self.last_response = at;
            self.ack_deadline = self.ack_timeout.map(|t| at + t);
        }
    }

    /// Requests went out: start the transport timer if it does not run.
    fn arm_ack_timer(&mut self, hw: &Hardware<'_>) {
        if !self.ack_timer_running && self.resume_at.is_none() && self.awaiting > 0 {
            self.start_ack_timer(hw);
        }
    }

    /// The deadline of the QP's next timer, if one runs (for a sleeping progress thread).
    pub fn next_deadline(&self) -> Option<Instant> {
        if let Some(at) = self.resume_at {
            return Some(at);
        }
        if self.awaiting == 0 {
            return None;
        }
        if !self.ack_timer_running {
            return Some(self.last_response); // due now: starts the timer
        }
        self.ack_deadline
    }

    // ================================================================ inbound packets

    /// Reads the peer's packets: its requests (we respond) and its responses (to our
    /// requests).
    pub fn run_inbound(&mut self, hw: &mut Hardware<'_>) {
        if !matches!(self.state, qp_state::RTR | qp_state::RTS | qp_state::SQD | qp_state::ERR) {
            return;
        }
        self.attach();
        let mut first = true;
        let mut room = RoomWakes::default();
        loop {
            // A full outbound ring does not stop us reading: the peer may be blocked on
            // *its* full ring until we consume it (both sides streaming READ responses or
            // WRITE data at each other), and what we read meanwhile either needs no answer
            // (responses to our requests) or queues one, up to MAX_QUEUED_RESPONSES.
            self.send_responses(hw);
            if self.responses.len() >= MAX_QUEUED_RESPONSES {
                break;
            }
            let Some(peer) = self.link.peer.as_mut() else { break };
            let Some(inbound) = peer.inbound.as_mut() else { break };
            // After a record, one load of the header at the head tells whether another
            // follows (most passes carry one message), cheaper than a pop that finds nothing.
            if !std::mem::take(&mut first) && !inbound.may_have_records() {
                break;
            }
            let src_qpn = inbound.src_qpn();
            // Small records (every ACK, small SENDs) are copied out whole in one go; the
            // common one, a small SEND, is handled here, everything else out of line.
            let mut small = [0u64; SMALL_RECORD_WORDS];
            let popped = inbound.pop_small(&mut small);
            match popped {
                Ok(SmallRecord::None) => break,
                Ok(SmallRecord::Record { kind, len })
                    if kind == wire::COMPACT_RECORD | u16::from(kind::SEND)
                        && self.receive_small_send(&small.as_bytes()[..len], src_qpn, hw) => {}
                popped => {
                    if !self.inbound_record(popped, &small, src_qpn, hw) {
                        break;
                    }
                    // At once after any record but a small SEND (data segments are
                    // these): the producer refills while we read on. Small SENDs, the
                    // latency path, leave it to the pass's end.
                    room.granted(self, false);
                }
            }
        }
        // Also after the last look: a pass that only moved the head (a new epoch, whose
        // consumer skips the old one's bytes) may have made the room asked for.
        room.granted(self, true);
        self.complete_in_order(hw);
        if self.state == qp_state::RTS {
            self.transmit(hw);
        }
        // An ACK held back for a whole pass with no request to ride on goes out alone.
        match self.deferred_ack {
            Some((psn, true)) => {
                self.deferred_ack = None;
                self.respond(kind::ACK, psn, 0, 0);
                self.send_responses(hw);
            }
            Some((psn, false)) => self.deferred_ack = Some((psn, true)),
            None => {}
        }
        if self.state == qp_state::RTS {
            self.arm_ack_timer(hw);
        }
        self.check_awaiting();
    }

    /// True, once, if the peer's requester waits for room in its ring and our reading
    /// made it (`ring.rs`, "Room"): wake its QP ([`Self::wake_producer`]), whose owner may
    /// sleep until then. Left for later while there is no notifier to wake it with.
    #[inline(always)]
    fn room_granted(&self) -> bool {
        self.link.peer.as_ref().is_some_and(|peer| {
            peer.notifier.is_some() && peer.inbound.as_ref().is_some_and(|i| i.take_room_request())
        })
    }

    /// Wakes the peer's QP (a grant of room in its ring).
    #[cold]
    fn wake_producer(&self) {
        if let Some(notifier) = self.link.peer.as_ref().and_then(|p| p.notifier.as_ref()) {
            notifier.notify();
        }
    }

    /// The general case of one record of [`Self::run_inbound`] (`popped` is what
    /// `pop_small` found: a small record already copied into `small`, or a larger one
    /// still in the ring, or an error). False: stop reading.
    #[inline(never)]
    fn inbound_record(
        &mut self,
        popped: Result<SmallRecord, RingError>,
        small: &[u64; SMALL_RECORD_WORDS],
        src_qpn: u32,
        hw: &mut Hardware<'_>,
    ) -> bool {
        match popped {
            Ok(SmallRecord::None) => false,
            Ok(SmallRecord::Record { kind, len }) => {
                let bytes = &small.as_bytes()[..len];
                // A malformed packet is dropped.
                if let Some((header, at)) = parse_packet(kind, bytes, src_qpn) {
                    self.accept_packet(&header, Payload::Copied(&bytes[at..]), hw);
                }
                true
            }
            Ok(SmallRecord::Larger) => self.inbound_record_in_ring(src_qpn, hw),
            Err(_) => {
                self.inbound_corrupt(hw);
                false
            }
        }
    }

    /// Handles the next record while it is still in the ring, so that its payload goes
    /// straight from the ring to its destination, then consumes it. False: stop reading.
    fn inbound_record_in_ring(&mut self, src_qpn: u32, hw: &mut Hardware<'_>) -> bool {
        // The consumer leaves the link while the record is handled (which needs `&mut
        // self`); nothing on the request or response path touches the peer's ring.
        let Some(mut ring) = self.link.peer.as_mut().and_then(|p| p.inbound.take()) else {
            return false;
        };
        let handled = ring.consume(|record| {
            // A malformed packet is dropped.
            if let Some((header, at)) = read_packet_header(record, src_qpn) {
                let len = record.len() - at;
                self.accept_packet(&header, Payload::InRing { record, offset: at, len }, hw);
            }
        });
        let Ok(found) = handled else {
            self.inbound_corrupt(hw);
            return false;
        };
        if let Some(peer) = self.link.peer.as_mut()
            && peer.inbound.is_none()
        {
            peer.inbound = Some(ring);
        }
        found.is_some()
    }

    /// The peer's ring broke the ring protocol ([`RingError::Corrupt`]: garbage, or a
    /// hostile producer): nothing more from this peer can be trusted, and the ring
    /// cannot resynchronise before the peer resets it. The connection ends as at any
    /// protocol violation of the requester — NAK invalid request, async event, ERR —
    /// and the ring is closed, so no later pass reads it again (it used to be re-read,
    /// and to fail, on every pass: a progress thread spun on it, the QP stayed in RTS).
    #[cold]
    fn inbound_corrupt(&mut self, hw: &mut Hardware<'_>) {
        if let Some(peer) = self.link.peer.as_mut() {
            peer.inbound = None;
        }
        if self.state != qp_state::ERR {
            self.responder_fatal(self.expected_psn, nak::INVALID_REQUEST, event::QP_REQ_ERR, hw);
        }
    }

    /// One well-formed packet from the peer: a response to our requests or a request.
    /// Dropped, as a QP in ERR or a stranger's packet is.
    fn accept_packet(&mut self, header: &PacketHeader, data: Payload<'_>, hw: &mut Hardware<'_>) {
        if self.state == qp_state::ERR || header.src_qpn != self.attrs.dest_qpn {
            return;
        }
        if header.kind >= kind::ACK {
            self.handle_response(header, data, hw);
        } else {
            if header.flags & flag::ACK_PIGGYBACK != 0 {
                self.ack_timer_running = false;
                self.timeouts = 0;
                self.ack_through(header.ack_psn);
            }
            self.handle_request(header, data, hw);
        }
    }

    // ---------------------------------------------------------------- responses

    fn handle_response(&mut self, h: &PacketHeader, payload: Payload<'_>, hw: &mut Hardware<'_>) {
        // The transport timer restarts at the next check (no clock read per packet).
        self.ack_timer_running = false;
        self.timeouts = 0;
        let sent = self.cursor.index.min(self.outstanding.len());
        let Some(pos) = self.outstanding.iter().take(sent + 1).position(|o| {
            o.outcome.is_none() && !matches!(o.operation, Operation::Local) && o.psn == h.psn
        }) else {
            if h.kind == kind::ACK {
                self.ack_through(h.psn);
            }
            return;
        };
        if h.kind == kind::ACK {
            self.ack_through(h.psn);
            return;
        }
        match h.kind {
            kind::READ_RESPONSE => {
                let pdn = self.setup.pdn;
                let o = &mut self.outstanding[pos];
                if let Operation::Read(read) = &mut o.operation {
                    let ReadBuffers { sges, targets, length, received } = &mut **read;
                    // The responses must cover the READ exactly, in order: anything else
                    // (short, too long, out of order, repeated) would complete it with
                    // stale bytes in its buffer. Hardware calls that a bad response.
                    let end = *received + payload.len() as u64;
                    let last = h.flags & flag::LAST != 0;
                    if h.offset != *received || end > *length || (last && end != *length) {
                        o.outcome = Some(Err(cqe_syndrome::BAD_RESP_ERR));
                    } else if let Err(syndrome) =
                        translate_read_targets(sges, targets, hw.regions, pdn)
                    {
                        o.outcome = Some(Err(syndrome));
                    } else if scatter(targets, h.offset, payload).is_err() {
                        o.outcome = Some(Err(cqe_syndrome::LOCAL_LENGTH_ERR));
                    } else if last {
                        o.outcome = Some(Ok(*length as u32));
                    } else {
                        *received = end;
                    }
                }
                self.ack_before(pos);
            }
            kind::ATOMIC_RESPONSE => {
                let pdn = self.setup.pdn;
                let o = &mut self.outstanding[pos];
                if let Operation::Atomic { sge } = o.operation {
                    // The buffer as registered now: one deregistered meanwhile takes nothing.
                    o.outcome = Some(
                        hw.regions
                            .translate(sge.lkey, pdn, sge.addr, 8, access::LOCAL_WRITE)
                            .map_err(local_key_syndrome)
                            .and_then(|target| {
                                target
                                    .write(0, &h.operand.to_ne_bytes())
                                    .map(|_| 8)
                                    .map_err(|_| cqe_syndrome::LOCAL_PROT_ERR)
                            }),
                    );
                }
                self.ack_before(pos);
            }
            kind::NAK => {
                self.ack_before(pos);
                self.outstanding[pos].outcome = Some(Err(nak_syndrome(h.syndrome)));
                self.cursor.index = self.outstanding.len();
            }
            kind::RNR_NAK => {
                self.ack_before(pos);
                let o = &mut self.outstanding[pos];
                o.rnr_naks = o.rnr_naks.saturating_add(1);
                if self.attrs.rnr_retry < 7 && o.rnr_naks > self.attrs.rnr_retry {
                    o.outcome = Some(Err(cqe_syndrome::RNR_RETRY_EXC_ERR));
                    self.cursor.index = self.outstanding.len();
                } else {
                    // Go back to the NAKed request after the responder's RNR timer.
                    self.cursor = TransmitCursor { index: pos, offset: 0 };
                    let wait = wire::rnr_timer_us(h.syndrome);
                    self.resume_at = Some(hw.now() + Duration::from_micros(wait));
                }
            }
            _ => {}
        }
        self.recount_awaiting();
    }

    /// The cursor passes the entry it is at (sent, or needing no packet).
    #[inline(always)]
    fn advance_cursor(&mut self) {
        if self.outstanding[self.cursor.index].outcome.is_none() {
            self.awaiting += 1;
        }
        self.cursor = TransmitCursor { index: self.cursor.index + 1, offset: 0 };
    }

    /// Recomputes `awaiting` (after the rare changes: NAKs, READ and atomic responses,
    /// timeouts).
    fn recount_awaiting(&mut self) {
        self.awaiting = self.scan_awaiting();
    }

    fn scan_awaiting(&self) -> usize {
        self.outstanding.iter().take(self.cursor.index).filter(|o| o.outcome.is_none()).count()
    }

    fn check_awaiting(&self) {
        debug_assert_eq!(self.awaiting, self.scan_awaiting(), "awaiting out of date");
    }

    /// Every SEND/WRITE up to and including `psn` is acknowledged.
    #[inline(always)]
    fn ack_through(&mut self, psn: u32) {
        // Sent, unsignalled SEND/WRITEs at the front that the ACK covers are retired here
        // rather than marked done for `complete_in_order` to pop: at the front nothing
        // precedes them, so retiring now is in order, and without a CQE (unsignalled, no
        // `sq_sig_all`, a success) nothing else observes the difference. Each was before
        // the cursor without an outcome, so it counted in `awaiting`.
        if !self.setup.sq_sig_all {
            while self.cursor.index > 0
                && let Some(o) = self.outstanding.front()
                && o.outcome.is_none()
                && !o.signaled
                && matches!(o.operation, Operation::Transfer)
                && wire::psn_at_or_before(o.psn, psn)
            {
                self.outstanding.pop_front();
                self.cursor.index -= 1;
                self.awaiting -= 1;
            }
            if self.cursor.index == 0 {
                return;
            }
        }
        // By index: an iterator's setup costs more than the one or two entries usually in
        // flight.
        let sent = self.cursor.index.min(self.outstanding.len());
        let mut acked = 0;
        for i in 0..sent {
            let o = &mut self.outstanding[i];
            if o.outcome.is_none()
                && matches!(o.operation, Operation::Transfer)
                && wire::psn_at_or_before(o.psn, psn)
            {
                o.outcome = Some(Ok(0));
                acked += 1;
            }
        }
        self.awaiting = self.awaiting.saturating_sub(acked);
    }

    /// A response for entry `pos` implies that every SEND/WRITE before it completed.
    fn ack_before(&mut self, pos: usize) {
        for o in self.outstanding.iter_mut().take(pos) {
            if o.outcome.is_none() && matches!(o.operation, Operation::Transfer) {
                o.outcome = Some(Ok(0));
            }
        }
    }

    // ---------------------------------------------------------------- requests

    fn respond(&mut self, kind: u8, psn: u32, syndrome: u8, operand: u64) {
        let h = PacketHeader {
            kind,
            flags: flag::FIRST | flag::LAST,
            syndrome,
            src_qpn: self.setup.qpn,
            psn,
            operand,
            ..Default::default()
        };
        // Consecutive ACKs collapse into the newest.
        if kind == kind::ACK
            && let Some(Response::Packet(last)) = self.responses.back_mut()
            && last.kind == kind::ACK
        {
            last.psn = psn;
            return;
        }
        self.responses.push_back(Response::Packet(h));
    }

    /// Pushes owed responses; false if the ring filled up.
    #[inline(always)]
    fn send_responses(&mut self, hw: &mut Hardware<'_>) -> bool {
        if self.responses.is_empty() {
            self.notify_peer();
            return true;
        }
        self.send_owed_responses(hw)
    }

    fn send_owed_responses(&mut self, hw: &mut Hardware<'_>) -> bool {
        let mut source_lost = false;
        while let Some(r) = self.responses.front_mut() {
            match r {
                Response::Packet(h) => {
                    let h = *h;
                    if !self.push(&h, &[]) {
                        break;
                    }
                }
                Response::ReadData { psn, rkey, addr, length, offset } => {
                    let (psn, off) = (*psn, *offset);
                    let source = if *length == 0 {
                        // SAFETY: an empty span is never dereferenced.
                        Ok(unsafe { AppSpan::new(0, 0) })
                    } else {
                        let pdn = self.setup.pdn;
                        hw.regions.translate_remote(*rkey, pdn, *addr, *length, access::REMOTE_READ)
                    };
                    let Ok(source) = source else {
                        // Deregistered (or unbound) while its data went out: the READ is
                        // NAKed where it stands in the queue, and the QP ends in ERR.
                        *r = Response::Packet(PacketHeader {
                            kind: kind::NAK,
                            flags: flag::FIRST | flag::LAST,
                            syndrome: nak::REMOTE_ACCESS,
                            src_qpn: self.setup.qpn,
                            psn,
                            ..Default::default()
                        });
                        source_lost = true;
                        // Nothing after it goes out: the connection ends here.
                        self.responses.truncate(1);
                        continue;
                    };
                    let len = (source.len() as u64 - off).min(SEGMENT_BYTES as u64) as usize;
                    let mut h = PacketHeader {
                        kind: kind::READ_RESPONSE,
                        src_qpn: self.setup.qpn,
                        psn,
                        offset: off,
                        ..Default::default()
                    };
                    if off == 0 {
                        h.flags |= flag::FIRST;
                    }
                    let last = off + len as u64 >= source.len() as u64;
                    if last {
                        h.flags |= flag::LAST;
                    }
                    // Straight from the source into the ring (a small chunk through the
                    // word path); zeros if the source range were ever out of its span.
                    let pushed = if len <= SMALL_RECORD_BYTES {
                        let mut chunk = [0u8; SMALL_RECORD_BYTES];
                        let _ = source.read(off as usize, &mut chunk[..len]);
                        self.push(&h, &chunk[..len])
                    } else {
                        self.push_filled(&h, len, |record| {
                            source
                                .copy_into_record(off as usize, len, record)
                                .or_else(|_| record.append_zeros(len).map_err(|_| OutOfSpan))
                                .ok()
                        })
                        .unwrap_or(false)
                    };
                    if !pushed {
                        break;
                    }
                    if !last {
                        if let Some(Response::ReadData { offset, .. }) = self.responses.front_mut()
                        {
                            *offset = off + len as u64;
                        }
                        continue;
                    }
                }
            }
            self.responses.pop_front();
        }
        self.notify_peer();
        if source_lost && self.state != qp_state::ERR {
            // The NAK is already queued, in PSN order.
            self.enter_error_keeping_responses(event::QP_ACCESS_ERR, hw);
            return self.send_owed_responses(hw);
        }
        self.responses.is_empty()
    }

    /// Ends the connection from the responder side: NAK, QP to ERR, async event.
    fn responder_fatal(&mut self, psn: u32, reason: u8, async_event: u32, hw: &mut Hardware<'_>) {
        // A responder answers in PSN order: READ data and atomic results owed for earlier
        // requests (still queued when the ring was full) go out before the NAK, and both
        // survive the move to ERR, which otherwise drops what is queued; later passes send
        // what the ring cannot take now.
        self.respond(kind::NAK, psn, reason, 0);
        self.enter_error_keeping_responses(async_event, hw);
        self.send_responses(hw);
    }

    /// The QP goes to ERR with an async event, keeping the responses it owes (the move to
    /// ERR otherwise drops what is queued).
    fn enter_error_keeping_responses(&mut self, async_event: u32, hw: &mut Hardware<'_>) {
        let owed = std::mem::take(&mut self.responses);
        self.post_async(async_event, hw);
        self.state = qp_state::ERR;
        self.enter_error(hw);
        self.responses = owed;
    }

    fn take_receive_entry(&mut self, hw: &mut Hardware<'_>) -> Option<(ReceiveEntry, u32)> {
        if let Some(srqn) = self.setup.srqn {
            let srq = hw.srqs.get_mut(&srqn)?;
            let pdn = srq.pdn;
            return srq.take().map(|e| (e, pdn));
        }
        if self.setup.rq_wqe_count == 0 || self.rq_head == self.rq_tail() {
            return None;
        }
        let index = self.rq_head & (self.setup.rq_wqe_count as u16 - 1);
        let stride = 1usize << self.setup.rq_wqe_shift;
        let bytes = self.setup.rq.sub(usize::from(index) * stride, stride).ok()?;
        self.rq_head = self.rq_head.wrapping_add(1);
        Some((ReceiveEntry { index, bytes }, self.setup.pdn))
    }

    fn handle_request(&mut self, h: &PacketHeader, payload: Payload<'_>, hw: &mut Hardware<'_>) {
        let first = h.flags & flag::FIRST != 0;
        if let Some(waiting) = self.rnr_psn {
            if h.psn != waiting || !first {
                return; // dropped until the requester retransmits the RNR-NAKed request
            }
            self.rnr_psn = None;
        }
        // A message in progress continues only with its own next segment.
        if let Some(msg) = &self.inbound
            && (first || h.psn != msg.psn || h.offset != msg.received)
        {
            return;
        }
        if self.inbound.is_none() {
            if !first {
                return;
            }
            if h.psn != self.expected_psn {
                // A duplicate (already executed): acknowledge again; anything else is out
                // of sequence and dropped.
                if wire::psn_at_or_before(h.psn, self.expected_psn.wrapping_sub(1) & wire::PSN_MASK)
                    && matches!(h.kind, kind::SEND | kind::WRITE)
                    && h.flags & flag::LAST != 0
                {
                    self.respond(
                        kind::ACK,
                        self.expected_psn.wrapping_sub(1) & wire::PSN_MASK,
                        0,
                        0,
                    );
                }
                return;
            }
            if !self.start_request(h, hw) {
                return;
            }
        }
        let skip = self.rq_skip();
        let Some(msg) = self.inbound.as_mut() else { return };
        if msg.received > 0 && !msg.targets.is_empty() {
            // A later segment lands where the key says now: a region deregistered since the
            // first one takes nothing more.
            let retargeted = match msg.entry {
                Some(entry) if msg.kind == kind::SEND => {
                    receive_targets(&entry, skip, msg.pdn, hw.regions, &mut msg.targets)
                        .map(|_| ())
                        .map_err(|_| ())
                }
                _ => hw
                    .regions
                    .translate_remote(
                        msg.rkey,
                        msg.pdn,
                        msg.remote_addr,
                        msg.length,
                        access::REMOTE_WRITE,
                    )
                    .map(|span| {
                        msg.targets.clear();
                        msg.targets.push(span);
                    })
                    .map_err(|_| ()),
            };
            if retargeted.is_err() {
                let (entry, psn, kind) = (msg.entry, msg.psn, msg.kind);
                self.inbound = None;
                if kind == kind::SEND {
                    if let Some(entry) = entry {
                        self.receive_error(entry, cqe_syndrome::LOCAL_PROT_ERR, hw);
                    }
                    self.responder_fatal(psn, nak::REMOTE_OPERATION, event::QP_FATAL, hw);
                } else {
                    // A WRITE with immediate data took its receive: it ends flushed.
                    if let Some(entry) = entry {
                        self.receive_error(entry, cqe_syndrome::WR_FLUSH_ERR, hw);
                    }
                    self.responder_fatal(psn, nak::REMOTE_ACCESS, event::QP_ACCESS_ERR, hw);
                }
                return;
            }
        }
        // A message carries exactly the length its first segment announced: a segment
        // beyond it, or a last one short of it, is a requester breaking the protocol (a
        // receive would otherwise report bytes that never came, or get more than it was
        // told), as a length error is on the wire.
        let received = msg.received + payload.len() as u64;
        let last = h.flags & flag::LAST != 0;
        let length_ok = received <= msg.length && (!last || received == msg.length);
        if !length_ok || scatter(&msg.targets, h.offset, payload).is_err() {
            let entry = msg.entry;
            let psn = msg.psn;
            self.inbound = None;
            if let Some(entry) = entry {
                self.receive_error(entry, cqe_syndrome::LOCAL_LENGTH_ERR, hw);
            }
            self.responder_fatal(psn, nak::INVALID_REQUEST, event::QP_REQ_ERR, hw);
            return;
        }
        msg.received = received;
        if !last {
            return;
        }
        msg.ack_request = h.flags & flag::ACK_REQUEST != 0;
        let mut msg = self.inbound.take().expect("message in progress");
        self.spare_targets = std::mem::take(&mut msg.targets);
        self.expected_psn = wire::next_psn(self.expected_psn);
        if let Some(entry) = msg.entry {
            let cqe_op = match (msg.kind, msg.imm.is_some()) {
                (kind::WRITE, _) => cqe_opcode::RESP_WR_IMM,
                (_, true) => cqe_opcode::RESP_SEND_IMM,
                _ => cqe_opcode::RESP_SEND,
            };
            let cqe = success_cqe(&Completion {
                cqe_opcode: cqe_op,
                qpn: self.setup.qpn,
                srqn_uidx: self.responder_srqn_uidx(),
                wqe_counter: entry.index,
                byte_cnt: msg.length as u32,
                imm: msg.imm.unwrap_or_default(),
                src_qpn: self.attrs.dest_qpn,
                solicited: msg.solicited,
                ipv4: self.fast.ipv4,
                ..Default::default()
            });
            if !self.push_cqe(self.setup.recv_cqn, cqe, hw) {
                self.responder_fatal(msg.psn, nak::REMOTE_OPERATION, event::QP_FATAL, hw);
                return;
            }
        }
        if msg.ack_request {
            self.deferred_ack = None;
            self.respond(kind::ACK, msg.psn, 0, 0);
        } else {
            self.deferred_ack = Some((msg.psn, false));
        }
    }

    /// The common case of a compact SEND record (`bytes`) from `src_qpn`, handled without
    /// the general structures: the next expected message, in one piece, whose receive
    /// entry (RQ, not SRQ) has one data segment that holds it and translates. Does what
    /// the general path does for it (piggybacked ACK, scatter, CQE, ACK owed). False, with
    /// nothing done, for anything else.
    fn receive_small_send(&mut self, bytes: &[u8], src_qpn: u32, hw: &mut Hardware<'_>) -> bool {
        const C: usize = size_of::<CompactHeader>();
        let whole = flag::FIRST | flag::LAST;
        let Some((Ok(c), payload)) =
            bytes.split_at_checked(C).map(|(h, p)| (CompactHeader::read_from_bytes(h), p))
        else {
            return false;
        };
        if c.reserved != 0
            || c.flags & whole != whole
            || self.state == qp_state::ERR
            || !matches!(self.state, qp_state::RTR | qp_state::RTS | qp_state::SQD)
            || src_qpn != self.attrs.dest_qpn
            || self.rnr_psn.is_some()
            || self.inbound.is_some()
            || c.psn != self.expected_psn
            || !self.fast.own_rq
            || self.rq_head == self.rq_tail()
        {
            return false;
        }
        // The receive entry: one data segment holding the message, then the terminator
        // or the end of the entry (the general path translates every segment). Whether
        // the entry has room for one or two segments is fixed per QP (`fast`).
        let index = self.rq_head & (self.setup.rq_wqe_count as u16 - 1);
        let at = (usize::from(index) << self.setup.rq_wqe_shift) + self.setup.rq_skip;
        // Fixed-size reads of the one or two segments (no call to a general copy).
        let Ok(raw) = self.setup.rq.read_array::<SEND_WQE_DS>(at) else { return false };
        let first = WqeDataSeg::read_from_bytes(&raw).expect("a data segment is 16 bytes");
        // As `scatter_list`: segments up to one with the invalid lkey.
        if self.fast.second_segment {
            let Ok(raw) = self.setup.rq.read_array::<SEND_WQE_DS>(at + SEND_WQE_DS) else {
                return false;
            };
            let second = WqeDataSeg::read_from_bytes(&raw).expect("a data segment is 16 bytes");
            if second.lkey.get() != INVALID_LKEY {
                return false;
            }
        }
        let (lkey, length) = (first.lkey.get(), first.byte_count.get());
        if lkey == INVALID_LKEY || (length as usize) < payload.len() {
            return false;
        }
        let Ok(target) = hw.regions.translate(
            lkey,
            self.setup.pdn,
            first.addr.get(),
            u64::from(length),
            access::LOCAL_WRITE,
        ) else {
            return false;
        };
        if target.write(0, payload).is_err() {
            return false;
        }
        if c.flags & flag::ACK_PIGGYBACK != 0 {
            self.ack_timer_running = false;
            self.timeouts = 0;
            self.ack_through(c.ack_psn);
        }
        self.rq_head = self.rq_head.wrapping_add(1);
        self.expected_psn = wire::next_psn(self.expected_psn);
        let imm = c.flags & flag::IMMEDIATE != 0;
        let cqe = success_cqe(&Completion {
            cqe_opcode: if imm { cqe_opcode::RESP_SEND_IMM } else { cqe_opcode::RESP_SEND },
            qpn: self.setup.qpn,
            srqn_uidx: self.fast.srqn_uidx,
            wqe_counter: index,
            byte_cnt: payload.len() as u32,
            imm: if imm { c.imm } else { [0; 4] },
            src_qpn: self.attrs.dest_qpn,
            solicited: c.flags & flag::SOLICITED != 0,
            ipv4: self.fast.ipv4,
            ..Default::default()
        });
        if !self.push_cqe(self.setup.recv_cqn, cqe, hw) {
            self.responder_fatal(c.psn, nak::REMOTE_OPERATION, event::QP_FATAL, hw);
        } else if c.flags & flag::ACK_REQUEST != 0 {
            self.deferred_ack = None;
            self.respond(kind::ACK, c.psn, 0, 0);
        } else {
            self.deferred_ack = Some((c.psn, false));
        }
        true
    }

    /// Checks a new request and sets up its message. False: it was answered (NAK, RNR,
    /// READ data, atomic value) or dropped.
    fn start_request(&mut self, h: &PacketHeader, hw: &mut Hardware<'_>) -> bool {
        let qp_allows = |bit: u32| self.attrs.access_flags & bit != 0;
        let with_imm = h.flags & flag::IMMEDIATE != 0;
        match h.kind {
            kind::SEND => {
                let Some((entry, pdn)) = self.take_receive_entry(hw) else {
                    self.rnr(h.psn);
                    return false;
                };
                let mut targets = std::mem::take(&mut self.spare_targets);
                let skip = self.rq_skip();
                let capacity = match receive_targets(&entry, skip, pdn, hw.regions, &mut targets) {
                    Ok(capacity) => capacity,
                    Err(ReceiveTargetsError::Unreadable) => return false,
                    Err(ReceiveTargetsError::Key) => {
                        self.receive_error(entry, cqe_syndrome::LOCAL_PROT_ERR, hw);
                        self.responder_fatal(h.psn, nak::REMOTE_OPERATION, event::QP_FATAL, hw);
                        return false;
                    }
                };
                if h.length > capacity {
                    self.receive_error(entry, cqe_syndrome::LOCAL_LENGTH_ERR, hw);
                    self.responder_fatal(h.psn, nak::INVALID_REQUEST, event::QP_REQ_ERR, hw);
                    return false;
                }
                self.inbound = Some(InboundMessage {
                    psn: h.psn,
                    kind: kind::SEND,
                    length: h.length,
                    received: 0,
                    entry: Some(entry),
                    targets,
                    pdn,
                    rkey: 0,
                    remote_addr: 0,
                    imm: with_imm.then_some(h.imm),
                    solicited: h.flags & flag::SOLICITED != 0,
                    ack_request: false,
                });
                true
            }
            kind::WRITE => {
                let placed = h.flags & flag::PLACED != 0;
                if placed {
                    // The data is in place already (the requester checked the region and
                    // this QP's published facts); a placed header that could not have been
                    // is a requester breaking the protocol.
                    let whole = flag::FIRST | flag::LAST;
                    if with_imm || h.payload_len != 0 || h.flags & whole != whole || h.offset != 0 {
                        self.responder_fatal(h.psn, nak::INVALID_REQUEST, event::QP_REQ_ERR, hw);
                        return false;
                    }
                    // No rights check here: they count at a message's start, which for a
                    // placed WRITE was the requester's first chunk (it read this QP's
                    // published rights); a header that lies only gets an ACK.
                }
                let target = if h.length == 0 || placed {
                    None
                } else {
                    match hw.regions.translate_remote(
                        h.rkey,
                        self.setup.pdn,
                        h.remote_addr,
                        h.length,
                        access::REMOTE_WRITE,
                    ) {
                        Ok(span) if qp_allows(access::REMOTE_WRITE) => Some(span),
                        _ => {
                            self.responder_fatal(
                                h.psn,
                                nak::REMOTE_ACCESS,
                                event::QP_ACCESS_ERR,
                                hw,
                            );
                            return false;
                        }
                    }
                };
                let entry = if with_imm {
                    match self.take_receive_entry(hw) {
                        Some((e, _)) => Some(e),
                        None => {
                            self.rnr(h.psn);
                            return false;
                        }
                    }
                } else {
                    None
                };
                self.inbound = Some(InboundMessage {
                    psn: h.psn,
                    kind: kind::WRITE,
                    length: h.length,
                    received: if placed { h.length } else { 0 },
                    entry,
                    targets: target.into_iter().collect(),
                    pdn: self.setup.pdn,
                    rkey: h.rkey,
                    remote_addr: h.remote_addr,
                    imm: with_imm.then_some(h.imm),
                    solicited: h.flags & flag::SOLICITED != 0,
                    ack_request: false,
                });
                true
            }
            kind::READ if h.flags & flag::PLACED != 0 => {
                // The requester copied the data itself (it checked the region and this QP's
                // published facts): the READ takes its place in sequence and is answered
                // with an empty last response where its data would have ended. A placed
                // header that could not have been is a requester breaking the protocol.
                let whole = flag::FIRST | flag::LAST;
                if h.payload_len != 0 || h.flags & whole != whole || h.offset != 0 {
                    self.responder_fatal(h.psn, nak::INVALID_REQUEST, event::QP_REQ_ERR, hw);
                    return false;
                }
                self.expected_psn = wire::next_psn(self.expected_psn);
                self.responses.push_back(Response::Packet(PacketHeader {
                    kind: kind::READ_RESPONSE,
                    flags: flag::LAST,
                    src_qpn: self.setup.qpn,
                    psn: h.psn,
                    offset: h.length,
                    ..Default::default()
                }));
                false
            }
            kind::READ => {
                let source = if h.length == 0 {
                    // SAFETY: an empty span is never dereferenced.
                    Ok(unsafe { AppSpan::new(0, 0) })
                } else {
                    hw.regions.translate_remote(
                        h.rkey,
                        self.setup.pdn,
                        h.remote_addr,
                        h.length,
                        access::REMOTE_READ,
                    )
                };
                match source {
                    Ok(_) if qp_allows(access::REMOTE_READ) => {
                        self.expected_psn = wire::next_psn(self.expected_psn);
                        self.responses.push_back(Response::ReadData {
                            psn: h.psn,
                            rkey: h.rkey,
                            addr: h.remote_addr,
                            length: h.length,
                            offset: 0,
                        });
                    }
                    _ => self.responder_fatal(h.psn, nak::REMOTE_ACCESS, event::QP_ACCESS_ERR, hw),
                }
                false
            }
            kind::ATOMIC_CS | kind::ATOMIC_FA => {
                if !h.remote_addr.is_multiple_of(8) {
                    self.responder_fatal(h.psn, nak::INVALID_REQUEST, event::QP_REQ_ERR, hw);
                    return false;
                }
                let target = hw.regions.translate_remote(
                    h.rkey,
                    self.setup.pdn,
                    h.remote_addr,
                    8,
                    access::REMOTE_ATOMIC,
                );
                let Some(span) = target.ok().filter(|_| qp_allows(access::REMOTE_ATOMIC)) else {
                    self.responder_fatal(h.psn, nak::REMOTE_ACCESS, event::QP_ACCESS_ERR, hw);
                    return false;
                };
                let Ok(word) = span.atomic_u64(0) else {
                    self.responder_fatal(h.psn, nak::INVALID_REQUEST, event::QP_REQ_ERR, hw);
                    return false;
                };
                use std::sync::atomic::Ordering::SeqCst;
                let original = if h.kind == kind::ATOMIC_CS {
                    match word.compare_exchange(h.compare, h.operand, SeqCst, SeqCst) {
                        Ok(v) | Err(v) => v,
                    }
                } else {
                    word.fetch_add(h.operand, SeqCst)
                };
                self.expected_psn = wire::next_psn(self.expected_psn);
                self.respond(kind::ATOMIC_RESPONSE, h.psn, 0, original);
                false
            }
            // An opcode this responder does not support: IB answers NAK invalid request
            // (dropping it would leave the PSN unanswered and wedge the connection).
            _ => {
                self.responder_fatal(h.psn, nak::INVALID_REQUEST, event::QP_REQ_ERR, hw);
                false
            }
        }
    }

    /// Where a receive entry's data segments start (an SRQ entry has its next-WQE header).
    fn rq_skip(&self) -> usize {
        if self.setup.srqn.is_some() { SEND_WQE_DS } else { self.setup.rq_skip }
    }

    fn rnr(&mut self, psn: u32) {
        self.rnr_psn = Some(psn);
        self.respond(kind::RNR_NAK, psn, self.attrs.min_rnr_timer, 0);
    }
}

/// Parses a whole packet record of kind `kind` from `src_qpn`: its header and where its
/// payload starts. `None`: malformed (the same checks as a record read piecewise).
fn parse_packet(kind: u16, bytes: &[u8], src_qpn: u32) -> Option<(PacketHeader, usize)> {
    decode_packet_header(kind, bytes, bytes.len(), src_qpn)
}

/// As [`parse_packet`], for a record still in the ring: its header, copied out, and where
/// its payload starts in the record.
fn read_packet_header(record: &RecordView<'_>, src_qpn: u32) -> Option<(PacketHeader, usize)> {
    let mut prefix = [0u8; size_of::<PacketHeader>()];
    let n = record.len().min(prefix.len());
    record.read(0, &mut prefix[..n]).ok()?;
    decode_packet_header(record.kind(), &prefix[..n], record.len(), src_qpn)
}

/// The header of a packet record of kind `kind` and `record_len` bytes from `src_qpn`,
/// given the record's first bytes (`prefix`, at least a header's worth if the record
/// has them), and where its payload starts. `None`: malformed.
fn decode_packet_header(
    kind: u16,
    prefix: &[u8],
    record_len: usize,
    src_qpn: u32,
) -> Option<(PacketHeader, usize)> {
    if kind & 0xff00 == wire::COMPACT_RECORD {
        const C: usize = size_of::<CompactHeader>();
        let payload_len = record_len.checked_sub(C)?;
        if payload_len > SEGMENT_BYTES {
            return None;
        }
        let header = CompactHeader::read_from_bytes(prefix.get(..C)?).ok()?.expand(
            kind as u8,
            src_qpn,
            payload_len,
        )?;
        return Some((header, C));
    }
    const H: usize = size_of::<PacketHeader>();
    let header = PacketHeader::read_from_bytes(prefix.get(..H)?).ok()?;
    if header.payload_len as usize != record_len - H || header.payload_len as usize > SEGMENT_BYTES
    {
        return None;
    }
    Some((header, H))
}

/// A packet header in the form it goes into a ring record: the 16-byte compact header when
/// it says everything, else the whole one.
enum WireHeader {
    Compact(CompactHeader, u8),
    Full(PacketHeader),
}

impl WireHeader {
    fn new(h: &PacketHeader, payload_len: usize) -> WireHeader {
        match CompactHeader::compact(h, payload_len) {
            Some(c) => WireHeader::Compact(c, h.kind),
            None => WireHeader::Full(*h),
        }
    }

    /// The record's kind: the packet kind, marked compact if it is.
    fn record_kind(&self) -> u16 {
        match self {
            WireHeader::Compact(_, kind) => wire::COMPACT_RECORD | u16::from(*kind),
            WireHeader::Full(h) => u16::from(h.kind),
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            WireHeader::Compact(c, _) => c.as_bytes(),
            WireHeader::Full(h) => h.as_bytes(),
        }
    }
}

/// WQEBBs a WQE of `ds` 16-byte units occupies.
fn wqebbs(ds: usize) -> u16 {
    (ds * SEND_WQE_DS).div_ceil(SEND_WQE_BB) as u16
}

/// One contiguous piece of a WQE's local data.
enum Piece<'a> {
    /// Inline data in the WQE.
    Inline(&'a [u8]),
    /// `len` bytes at `offset` in a translated buffer.
    Buffer { span: AppSpan, offset: usize, len: usize },
}

/// Calls `each` with the pieces of the WQE's local data from message offset `offset`, `len`
/// bytes in all. `None`: an SGE no longer translates, the data is shorter, or `each` failed.
fn gather_pieces(
    wqe: &SendWqe<'_>,
    regions: &MemoryRegions,
    pdn: u32,
    offset: u64,
    len: usize,
    mut each: impl FnMut(Piece<'_>) -> Option<()>,
) -> Option<()> {
    if len == 0 {
        return Some(());
    }
    let inline = wqe.inline_data();
    if !inline.is_empty() {
        return each(Piece::Inline(inline.get(offset as usize..offset as usize + len)?));
    }
    let mut skip = offset;
    let mut filled = 0;
    for sge in wqe.sges() {
        let sge_len = u64::from(sge.length);
        if skip >= sge_len {
            skip -= sge_len;
            continue;
        }
        let span = regions.translate(sge.lkey, pdn, sge.addr, sge_len, 0).ok()?;
        let take = ((sge_len - skip) as usize).min(len - filled);
        each(Piece::Buffer { span, offset: skip as usize, len: take })?;
        filled += take;
        skip = 0;
        if filled == len {
            return Some(());
        }
    }
    None
}

/// Copies the WQE's local data from message offset `offset` into `out`.
fn gather(
    wqe: &SendWqe<'_>,
    regions: &MemoryRegions,
    pdn: u32,
    offset: u64,
    out: &mut [u8],
) -> Option<()> {
    let mut filled = 0;
    gather_pieces(wqe, regions, pdn, offset, out.len(), |piece| {
        let len = match piece {
            Piece::Inline(bytes) => {
                out[filled..filled + bytes.len()].copy_from_slice(bytes);
                bytes.len()
            }
            Piece::Buffer { span, offset, len } => {
                span.read(offset, &mut out[filled..filled + len]).ok()?;
                len
            }
        };
        filled += len;
        Some(())
    })
}

/// Appends the WQE's local data from message offset `offset` to a ring record, as much as
/// the record has room for, straight from the application's buffers.
fn gather_into_record(
    wqe: &SendWqe<'_>,
    regions: &MemoryRegions,
    pdn: u32,
    offset: u64,
    record: &mut RecordFiller<'_>,
) -> Option<()> {
    let len = record.remaining();
    gather_pieces(wqe, regions, pdn, offset, len, |piece| match piece {
        Piece::Inline(bytes) => record.append(bytes).ok(),
        Piece::Buffer { span, offset, len } => span.copy_into_record(offset, len, record).ok(),
    })
}

/// Copies `len` bytes of the WQE's local data from message offset `offset` into a peer's
/// exported memory at `at` in `map`: a chunk of a placed RDMA WRITE.
fn gather_into_mapping(
    wqe: &SendWqe<'_>,
    regions: &MemoryRegions,
    pdn: u32,
    offset: u64,
    len: usize,
    map: &SharedMapping,
    at: usize,
) -> Option<()> {
    let mut done = 0;
    gather_pieces(wqe, regions, pdn, offset, len, |piece| {
        let n = match piece {
            Piece::Inline(bytes) => {
                map.copy_in(at + done, bytes).ok()?;
                bytes.len()
            }
            Piece::Buffer { span, offset, len } => {
                span.copy_into_mapping(offset, len, map, at + done).ok()?;
                len
            }
        };
        done += n;
        Some(())
    })
}

/// A packet's payload: copied out of the ring (a small record), or still in its record.
#[derive(Clone, Copy)]
enum Payload<'a> {
    Copied(&'a [u8]),
    InRing {
        record: &'a RecordView<'a>,
        offset: usize,
        len: usize,
    },
    /// `len` bytes at `at` in a peer's exported region (a placed READ).
    InMapping {
        map: MappingReader<'a>,
        at: usize,
        len: usize,
    },
}

impl Payload<'_> {
    fn len(&self) -> usize {
        match self {
            Payload::Copied(bytes) => bytes.len(),
            Payload::InRing { len, .. } | Payload::InMapping { len, .. } => *len,
        }
    }

    /// Copies `len` bytes from payload offset `from` to `target` at `target_offset`.
    fn copy_to(
        &self,
        from: usize,
        len: usize,
        target: &AppSpan,
        target_offset: usize,
    ) -> Result<(), OutOfSpan> {
        match self {
            Payload::Copied(bytes) => {
                target.write(target_offset, bytes.get(from..from + len).ok_or(OutOfSpan)?)
            }
            Payload::InRing { record, offset, len: payload_len } => {
                if from + len > *payload_len {
                    return Err(OutOfSpan);
                }
                target.copy_from_record(target_offset, record, offset + from, len)
            }
            Payload::InMapping { map, at, len: payload_len } => {
                if from + len > *payload_len {
                    return Err(OutOfSpan);
                }
                target.copy_from_mapping(target_offset, len, *map, at + from)
            }
        }
    }
}

/// Why [`receive_targets`] failed.
enum ReceiveTargetsError {
    /// The entry could not be read.
    Unreadable,
    /// A buffer does not translate (LOCAL_WRITE in the entry's PD).
    Key,
}

/// The buffers of receive entry `entry` (its data segments from `skip`, up to the
/// terminator), translated (LOCAL_WRITE, PD `pdn`) into `targets`; their total length.
/// Read one segment at a time (no staging of the whole stride), at a message's first
/// packet and again at each later one.
fn receive_targets(
    entry: &ReceiveEntry,
    skip: usize,
    pdn: u32,
    regions: &MemoryRegions,
    targets: &mut Vec<AppSpan>,
) -> Result<u64, ReceiveTargetsError> {
    targets.clear();
    let mut capacity = 0u64;
    let stride = entry.bytes.len().min(MAX_RECEIVE_ENTRY_BYTES);
    let mut at = skip;
    while at + SEND_WQE_DS <= stride {
        let mut raw = [0u8; SEND_WQE_DS];
        if entry.bytes.read(at, &mut raw).is_err() {
            return Err(ReceiveTargetsError::Unreadable);
        }
        at += SEND_WQE_DS;
        let Some(sge) = scatter_list(&raw, 0).next() else { break };
        let span = regions
            .translate(sge.lkey, pdn, sge.addr, u64::from(sge.length), access::LOCAL_WRITE)
            .map_err(|_| ReceiveTargetsError::Key)?;
        capacity += u64::from(sge.length);
        targets.push(span);
    }
    Ok(capacity)
}

/// Translates a READ's local buffers `sges` (LOCAL_WRITE) into `targets`, again before
/// each chunk of data lands, as an HCA checks the memory key at each write: a buffer
/// deregistered while the READ is in flight fails it with a local protection error
/// rather than taking its data. Err: the CQE syndrome.
fn translate_read_targets(
    sges: &[Sge],
    targets: &mut Vec<AppSpan>,
    regions: &MemoryRegions,
    pdn: u32,
) -> Result<(), u8> {
    targets.clear();
    for s in sges {
        let span = regions
            .translate(s.lkey, pdn, s.addr, u64::from(s.length), access::LOCAL_WRITE)
            .map_err(local_key_syndrome)?;
        targets.push(span);
    }
    Ok(())
}

/// Copies `data` to message offset `offset` across `targets`. Err: it does not fit.
fn scatter(targets: &[AppSpan], offset: u64, data: Payload<'_>) -> Result<(), ()> {
    let mut skip = offset as usize;
    let mut done = 0;
    let total = data.len();
    for t in targets {
        if done == total {
            break;
        }
        if skip >= t.len() {
            skip -= t.len();
            continue;
        }
        let take = (t.len() - skip).min(total - done);
        data.copy_to(done, take, t, skip).map_err(|_| ())?;
        done += take;
        skip = 0;
    }
    if done == total { Ok(()) } else { Err(()) }
}
