//! The connection manager: QP numbers, PSNs, GIDs, RDMA-read limits and private data
//! exchanged over TCP on the IA's address, like OFA's socket CM. It knows nothing of DAT
//! objects: the EP layer gives it [`ConnInfo`]s and private data and gets [`CmEvent`]s
//! back through a [`CmEvents`] sink.
//!
//! # Addressing
//!
//! A DAT address is an IP socket address; the connection qualifier is a TCP port on the
//! IA's address. [`Cm::listen`] binds `(IA address, conn_qual)` (taken: [`CmError::ConnQualInUse`]);
//! [`Cm::listen_any`] picks a free port in [`CONN_QUAL_ANY`], a range clear of the ports
//! the OFA test programs use (15828, 31111/31112, 45248, 62000–63001) and of Linux's
//! ephemeral range. Active connections leave from the IA address and an ephemeral port.
//!
//! # The handshake
//!
//! ```text
//!  active (ep_connect)                              passive (PSP/RSP)
//!  QP: RESET or INIT (receives may be pre-posted)   listen(conn_qual)
//!  connect() ── TCP ─────────────────────────────▶  accept(2)
//!            ── REQ {qpn, psn, gid, rd limits, mtu, pdata} ─▶
//!                                                   ConnRequest → listener sink (CR event)
//!                                                   consumer: connect_qp(qp, local, peer):
//!                                                     RESET→INIT→RTR→RTS  (before the REP!)
//!                                                   ConnRequest::accept(local, pdata)
//!            ◀─ REP {qpn, psn, gid, rd limits, mtu, pdata} ─
//!  Established{peer, pdata} → sink; the sink runs
//!    connect_qp(qp, local, peer): →RTR→RTS
//!  after the sink returns:
//!            ── RTU ─────────────────────────────▶  Established → sink
//!  DTOs may flow both ways                          DTOs may flow both ways
//! ```
//!
//! Why this order: a QP must be at least RTR before packets reach it, or they are dropped
//! and the sender has to retry. The passive QP goes RTR *and* RTS before the REP, because
//! the active side may send as soon as it has the REP. The active QP goes RTR/RTS while the
//! sink handles `Established` — the RTU, after which the passive side may send, leaves
//! only when the sink has returned. So **the active side's sink must bring its QP to RTS
//! before returning from `Established`** (or call [`Connection::refuse_reply`] if that
//! fails: a REJ goes instead of the RTU); the passive side brings its QP up before calling
//! [`ConnRequest::accept`].
//! Posting on the passive side before its `Established` is not allowed by DAT (the EP is
//! COMPLETION_PENDING) but would be harmless: the active QP is ready once the RTU is sent.
//!
//! A REJ instead of the REP ends the attempt: `PeerRejected` (the consumer rejected) or
//! `NonPeerRejected` (no listener any more, backlog full, request dropped). TCP refused is
//! tried again for up to [`NO_LISTENER_GRACE`], then `NonPeerRejected` too; a failing
//! route is `Unreachable`, and no REP within the timeout `TimedOut`. On the passive side a
//! closed socket, a REJ or no RTU within
//! [`CmConfig::rtu_timeout`] after the REP is `AcceptCompletionError`.
//!
//! # Disconnect
//!
//! [`Connection::disconnect`]`(graceful = true)` sends DREQ and reports `Disconnected`
//! when the DREP comes (or after [`CmConfig::disconnect_timeout`]); `graceful = false`
//! sends DREQ and reports `Disconnected` at once. The peer answers a DREQ with a DREP and
//! reports `Disconnected`. A peer whose socket closes without a DREQ (process killed, IA
//! closed) is `Disconnected` with [`DisconnectReason::PeerClosed`]; a reset socket or
//! garbage on the stream is `Broken`. Disconnecting a connection that is still being set
//! up aborts it (`Disconnected`, `LocalAbort`). Moving the QP to ERR (flushing its work
//! requests) is the EP layer's part.
//!
//! # Order across connections
//!
//! IB's CM carries every connection's messages on one MAD QP, so a peer that sends the
//! RTU of one connection and then the DREQ of another has them handled in that order. Here
//! each connection is its own TCP socket, and the two can arrive the other way round (in
//! one poll round, or in different rounds when the kernel delivers loopback packets on
//! two CPUs). A consumer that counts connection events (dtestcm) then sees a DISCONNECTED
//! before the last ESTABLISHED. So the passive side keeps that order itself: in each poll
//! round, connections still being set up are handled first, and a DREQ is held while a
//! connection from the same peer address that was waiting for its RTU when the DREQ came
//! still waits, at most [`CmConfig::teardown_hold`].
//!
//! # Threads
//!
//! Each [`Cm`] runs one thread (`ferrodat-cm`) with a `poll(2)` loop over its listening
//! sockets, its connections and an eventfd the API calls wake it with; the API calls only
//! queue commands, so they never block on the network and may be called from any thread,
//! including from inside a sink. Sinks are called on the CM thread, one event at a time,
//! in order per connection; they should be quick (push to a queue) and must not block
//! waiting for another CM event. Dropping the [`Cm`] (IA close) stops the thread and
//! closes every socket; handles that outlive it fail with [`CmError::Closed`]. Dropping a
//! [`Listener`] stops listening, dropping a [`Connection`] aborts it without further
//! events, and dropping an undecided [`ConnRequest`] rejects it.

mod active;
mod listener;
pub mod qp;
mod reactor;
pub mod wire;

pub use listener::{ConnRequest, Listener};
pub use qp::{connect_qp, local_conn_info, negotiate, random_psn};
pub use wire::{ConnInfo, MAX_PRIVATE_DATA, RejectReason};

use crate::owned_thread::OwnedThread;
use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an active connect keeps trying while nothing listens on the conn_qual
/// (bounded by the connect's own timeout) before it reports NON_PEER_REJECTED. IB's CM
/// resends an unanswered REQ in the same way, so a consumer may connect a moment before
/// its peer creates the PSP (dtest and dtestx do: they tell the client their address
/// first).
pub const NO_LISTENER_GRACE: Duration = Duration::from_secs(2);

/// The ports [`Cm::listen_any`] picks from.
pub const CONN_QUAL_ANY: RangeInclusive<u16> = 20000..=29999;

/// Names one connection (active or passive) of a [`Cm`]; unique for the CM's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u64);

/// Why a connection attempt got `NON_PEER_REJECTED`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NonPeerReason {
    /// TCP refused: nothing listens on the conn_qual.
    NoListener,
    /// The listener went away while the request was in flight (REJ, or the socket closed
    /// before any answer).
    ListenerGone,
    /// The listener's backlog of undecided requests is full.
    Backlog,
    /// The passive provider dropped the request undecided.
    Provider,
    /// The peer broke the protocol (what it sent is in the text).
    Protocol(String),
}

/// How a connection ended, for `Disconnected`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisconnectReason {
    /// Our graceful disconnect completed (DREP received, or crossed DREQs).
    LocalGraceful,
    /// Our graceful disconnect got no DREP in time, or the peer closed instead.
    LocalGracefulUnanswered,
    /// Our abrupt disconnect (DREQ sent, not waited for).
    LocalAbrupt,
    /// We aborted a connection still being set up.
    LocalAbort,
    /// The peer sent DREQ.
    PeerRequest,
    /// The peer's socket closed without a DREQ (peer process died, peer IA closed).
    PeerClosed,
}

/// What the CM reports. `ConnRequest` goes to the listener's sink, the rest to the sink
/// given with [`Cm::connect`] or [`ConnRequest::accept`].
#[derive(Debug)]
pub enum CmEvent {
    /// A request on a listener: accept or reject it (→ `CONNECTION_REQUEST_EVENT`).
    ConnRequest(ConnRequest),
    /// The connection is up (→ `ESTABLISHED`). Active side: the peer's QP info and REP
    /// private data; bring the QP to RTS before returning (see the module docs). Passive
    /// side: after the RTU, no private data.
    Established { conn: ConnId, peer: ConnInfo, private_data: Vec<u8> },
    /// The consumer at the peer rejected (→ `PEER_REJECTED`).
    PeerRejected { conn: ConnId, private_data: Vec<u8> },
    /// No listener, backlog full or the peer's provider refused (→ `NON_PEER_REJECTED`).
    NonPeerRejected { conn: ConnId, reason: NonPeerReason },
    /// No route to the peer (→ `UNREACHABLE`).
    Unreachable { conn: ConnId, detail: String },
    /// No answer within the connect timeout (→ `TIMED_OUT`).
    TimedOut { conn: ConnId },
    /// The accept did not complete: no RTU, a REJ or the socket closed (→
    /// `ACCEPT_COMPLETION_ERROR`).
    AcceptCompletionError { conn: ConnId, detail: String },
    /// The connection is over (→ `DISCONNECTED`).
    Disconnected { conn: ConnId, reason: DisconnectReason },
    /// The connection failed: socket reset or protocol violation (→ `BROKEN`).
    Broken { conn: ConnId, detail: String },
}

impl CmEvent {
    /// The connection the event is about.
    pub fn conn(&self) -> ConnId {
        match self {
            CmEvent::ConnRequest(r) => r.id(),
            CmEvent::Established { conn, .. }
            | CmEvent::PeerRejected { conn, .. }
            | CmEvent::NonPeerRejected { conn, .. }
            | CmEvent::Unreachable { conn, .. }
            | CmEvent::TimedOut { conn }
            | CmEvent::AcceptCompletionError { conn, .. }
            | CmEvent::Disconnected { conn, .. }
            | CmEvent::Broken { conn, .. } => *conn,
        }
    }
}

/// Where the CM delivers events (the EP layer pushes them into EVDs). Called on the CM
/// thread; see the module docs for what a sink may do.
pub trait CmEvents: Send + Sync {
    /// One event.
    fn event(&self, ev: CmEvent);
}

impl<F: Fn(CmEvent) + Send + Sync> CmEvents for F {
    fn event(&self, ev: CmEvent) {
        self(ev)
    }
}

/// A sink shared between the CM and its owner.
pub type Sink = Arc<dyn CmEvents>;

/// Timeouts of the CM's own waits (the connect timeout is per call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmConfig {
    /// Passive: how long after the REP the RTU may take before `AcceptCompletionError`.
    pub rtu_timeout: Duration,
    /// Passive: how long an accepted TCP connection may take to send its REQ.
    pub req_timeout: Duration,
    /// Passive: how many accepted TCP connections of one listener may be waiting for their
    /// REQ (each holds a file descriptor). At the cap, the oldest of them that has waited
    /// longer than [`CmConfig::unrequested_grace`] is closed to make room; if none has,
    /// accepting pauses (new connections wait in the kernel's backlog) until one sends its
    /// REQ, goes, or grows old. So idle connections cannot use up the process's descriptors,
    /// and a burst of real ones (which send their REQ at once) is never cut.
    pub max_unrequested: usize,
    /// Passive: see [`CmConfig::max_unrequested`].
    pub unrequested_grace: Duration,
    /// How long a graceful disconnect waits for the DREP.
    pub disconnect_timeout: Duration,
    /// How long a closing socket waits for the peer to close after our last message.
    pub linger_timeout: Duration,
    /// Passive: how long a peer's DREQ may wait for the RTUs of that peer's connections
    /// that were still being set up when it came (see the reactor's `Hold`). Bounds the
    /// delay a peer that never sends its RTU can add to its other disconnects.
    pub teardown_hold: Duration,
}

impl Default for CmConfig {
    fn default() -> CmConfig {
        CmConfig {
            rtu_timeout: Duration::from_secs(60),
            req_timeout: Duration::from_secs(30),
            max_unrequested: 256,
            unrequested_grace: Duration::from_secs(1),
            disconnect_timeout: Duration::from_secs(10),
            linger_timeout: Duration::from_secs(2),
            teardown_hold: Duration::from_secs(1),
        }
    }
}

/// What a CM call could not do.
#[derive(Debug)]
pub enum CmError {
    /// Something listens on `(IA address, conn_qual)` already.
    ConnQualInUse { addr: SocketAddr },
    /// [`Cm::listen_any`] found every port of [`CONN_QUAL_ANY`] taken.
    NoFreeConnQual,
    /// A message could not be built (too much private data, a field out of range).
    Wire(wire::WireError),
    /// The request was already accepted or rejected.
    AlreadyDecided { conn: ConnId },
    /// The CM was dropped (IA closed).
    Closed,
    /// An argument the CM cannot use.
    Invalid(String),
    /// A socket call failed.
    Io { what: String, err: io::Error },
}

impl fmt::Display for CmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CmError::ConnQualInUse { addr } => write!(
                f,
                "conn_qual {} is in use on {}: another PSP/RSP or program listens there; \
                 pick another conn_qual or free that one",
                addr.port(),
                addr.ip()
            ),
            CmError::NoFreeConnQual => write!(
                f,
                "no free conn_qual in {}..={} on this address: free some PSPs or pass an \
                 explicit conn_qual",
                CONN_QUAL_ANY.start(),
                CONN_QUAL_ANY.end()
            ),
            CmError::Wire(e) => write!(f, "{e}"),
            CmError::AlreadyDecided { conn } => {
                write!(f, "connection request {} was already accepted or rejected", conn.0)
            }
            CmError::Closed => {
                write!(f, "the connection manager is closed (its IA was closed): open the IA again")
            }
            CmError::Invalid(s) => write!(f, "{s}"),
            CmError::Io { what, err } => write!(f, "{what}: {err}"),
        }
    }
}

impl std::error::Error for CmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CmError::Wire(e) => Some(e),
            CmError::Io { err, .. } => Some(err),
            _ => None,
        }
    }
}

impl From<wire::WireError> for CmError {
    fn from(e: wire::WireError) -> CmError {
        CmError::Wire(e)
    }
}

/// What the API calls ask the CM thread to do.
enum Cmd {
    Listen {
        id: u64,
        sock: std::net::TcpListener,
        backlog: usize,
        sink: Sink,
    },
    /// Stop listening; `done` is dropped once the socket is closed.
    Unlisten {
        id: u64,
        done: Option<std::sync::mpsc::SyncSender<()>>,
    },
    Connect(active::Connecting),
    /// A connect that failed before it reached the loop: deliver the event from there.
    Deliver {
        sink: Sink,
        ev: CmEvent,
    },
    Accept {
        conn: ConnId,
        rep: Vec<u8>,
        sink: Sink,
    },
    Reject {
        conn: ConnId,
        rej: Vec<u8>,
    },
    Disconnect {
        conn: ConnId,
        graceful: bool,
    },
    /// The [`Connection`] handle was dropped: abort quietly.
    Release {
        conn: ConnId,
    },
}

struct Queue {
    cmds: Vec<Cmd>,
    closed: bool,
}

/// What the handles and the CM thread share.
struct Shared {
    queue: Mutex<Queue>,
    wake: crate::event_fd::EventFd,
    next_id: AtomicU64,
    local: IpAddr,
    /// Connections (sockets) the CM thread holds, as of its last loop turn.
    open: AtomicUsize,
    /// The CM thread (calls made from it, by sinks, must not wait for it).
    thread: std::sync::OnceLock<std::thread::ThreadId>,
    /// Active connections whose sink, handling `Established`, could not bring its QP up
    /// ([`Connection::refuse_reply`]): the REP is answered with a REJ, not the RTU.
    refused_replies: Mutex<Vec<ConnId>>,
}

impl Shared {
    fn send(&self, cmd: Cmd) -> Result<(), CmError> {
        {
            let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            if q.closed {
                return Err(CmError::Closed);
            }
            q.cmds.push(cmd);
        }
        self.wake();
        Ok(())
    }

    fn wake(&self) {
        self.wake.raise();
    }

    fn on_cm_thread(&self) -> bool {
        self.thread.get() == Some(&std::thread::current().id())
    }

    fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// The connection manager of one IA: its thread, listeners and connections.
pub struct Cm {
    shared: Arc<Shared>,
    thread: OwnedThread,
}

impl fmt::Debug for Cm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cm").field("local", &self.shared.local).finish()
    }
}

impl Cm {
    /// A CM for the IA at `local` with the default [`CmConfig`].
    pub fn new(local: IpAddr) -> Result<Cm, CmError> {
        Cm::with_config(local, CmConfig::default())
    }

    /// A CM for the IA at `local`; starts its thread.
    pub fn with_config(local: IpAddr, config: CmConfig) -> Result<Cm, CmError> {
        let wake = crate::event_fd::EventFd::new().map_err(|err| CmError::Io {
            what: "create the CM's eventfd (out of file descriptors?)".into(),
            err,
        })?;
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue { cmds: Vec::new(), closed: false }),
            wake,
            next_id: AtomicU64::new(1),
            local,
            open: AtomicUsize::new(0),
            thread: std::sync::OnceLock::new(),
            refused_replies: Mutex::new(Vec::new()),
        });
        let reactor = reactor::Reactor::new(shared.clone(), config);
        let thread = OwnedThread::spawn("ferrodat-cm".into(), 256 * 1024, move || reactor.run())
            .map_err(|err| CmError::Io { what: "start the CM thread".into(), err })?;
        if let Some(id) = thread.id() {
            let _ = shared.thread.set(id);
        }
        Ok(Cm { shared, thread })
    }

    /// The IA address this CM listens and connects from.
    pub fn local_addr(&self) -> IpAddr {
        self.shared.local
    }

    /// How many connection sockets the CM holds (being set up, connected, undecided or
    /// closing), as of its thread's last turn: 0 once everything is over and closed.
    pub fn open_connections(&self) -> usize {
        self.shared.open.load(Ordering::Relaxed)
    }
}

impl Drop for Cm {
    fn drop(&mut self) {
        self.shared.queue.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        self.shared.wake();
        if self.shared.on_cm_thread() {
            // Dropped by a sink: the thread cannot wait for itself. It sees `closed` when
            // the sink returns and closes everything on its way out.
            return;
        }
        // (In a forked child the thread does not exist: the join lets go.)
        if self.thread.join().is_err() {
            eprintln!("ferrodat: the CM thread panicked; its sockets are closed anyway");
        }
        // Commands queued after the thread's last look (sockets in them) close now.
        let left =
            std::mem::take(&mut self.shared.queue.lock().unwrap_or_else(|p| p.into_inner()).cmds);
        drop(left);
    }
}

/// One connection, active (from [`Cm::connect`]) or passive (from
/// [`ConnRequest::accept`]). Dropping it aborts the connection without further events.
#[derive(Debug)]
pub struct Connection {
    id: ConnId,
    shared: Arc<Shared>,
    /// Our side's TCP port: the conn_qual listened on (passive), the socket's own port
    /// (active; 0 if the connect failed before a socket was bound).
    local_port: u16,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared").field("local", &self.local).finish()
    }
}

impl Connection {
    /// The id its events carry.
    pub fn id(&self) -> ConnId {
        self.id
    }

    /// Our side's port qualifier (`dat_ep_query`'s `local_port_qual`).
    pub fn local_port(&self) -> u16 {
        self.local_port
    }

    /// Disconnects: graceful waits for the peer's DREP, abrupt does not; either way the
    /// sink gets `Disconnected`. While the connection is being set up this aborts it. A
    /// connection already over is left alone (no event).
    pub fn disconnect(&self, graceful: bool) -> Result<(), CmError> {
        self.shared.send(Cmd::Disconnect { conn: self.id, graceful })
    }

    /// Active side, from the sink while it handles `Established`: this side could not
    /// bring its QP up (on hardware: a GID it cannot resolve), so the peer gets a REJ
    /// instead of the RTU (its accept fails: `AcceptCompletionError`) and the connection
    /// ends with no further event. Anywhere else it is refused: use
    /// [`Connection::disconnect`].
    pub fn refuse_reply(&self) -> Result<(), CmError> {
        if !self.shared.on_cm_thread() {
            return Err(CmError::Invalid(
                "refuse_reply is for the sink handling Established (on the CM thread); \
                 disconnect instead"
                    .into(),
            ));
        }
        self.shared.refused_replies.lock().unwrap_or_else(|p| p.into_inner()).push(self.id);
        Ok(())
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let _ = self.shared.send(Cmd::Release { conn: self.id });
    }
}

/// Delivers one event, keeping the CM thread alive if the sink panics.
fn deliver(sink: &Sink, ev: CmEvent) {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sink.event(ev)));
    if r.is_err() {
        eprintln!("ferrodat: a CM event sink panicked; the event is lost, the CM goes on");
    }
}

/// `now + d`, or far in the future when that overflows.
fn deadline_after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d).unwrap_or(now + Duration::from_secs(86400 * 365))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_may_be_shared_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<Cm>();
        send_sync::<Connection>();
        send_sync::<Listener>();
        send_sync::<ConnRequest>();
        send::<CmEvent>();
    }
}
