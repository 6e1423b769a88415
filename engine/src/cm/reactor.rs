//! The CM thread: one `poll(2)` loop over the eventfd, the listening sockets and the
//! connections, with a state machine per connection. The passive states are handled in
//! `listener.rs`, the active ones in `active.rs`, the shared ones here.

use super::wire::{self, Msg};
use super::{
    CmConfig, CmEvent, Cmd, ConnId, DisconnectReason, NonPeerReason, Shared, Sink, deliver,
};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Active: TCP connect in progress (REQ waiting in `out`).
    Connecting,
    /// Active: nothing listened yet; the TCP connect is tried again at `Conn::retry`'s
    /// `next_at` (see [`super::NO_LISTENER_GRACE`]). The socket is the refused one; not
    /// polled.
    RetryWait,
    /// Active: REQ sent, waiting for REP or REJ.
    ReqSent,
    /// Passive: TCP accepted, waiting for the REQ.
    PassiveNew,
    /// Passive: ConnRequest delivered, waiting for the consumer's accept or reject.
    Requested,
    /// Passive: REP sent, waiting for the RTU.
    RepSent,
    /// Both: connected.
    Established,
    /// Both: graceful DREQ sent, waiting for the DREP.
    DreqSent,
    /// Both: last message queued; flush, half-close, wait for the peer's close. No events.
    Closing,
}

impl State {
    /// Before Established: the handshake is still going on.
    fn is_setting_up(self) -> bool {
        matches!(
            self,
            State::Connecting
                | State::RetryWait
                | State::ReqSent
                | State::PassiveNew
                | State::Requested
                | State::RepSent
        )
    }
}

pub(super) struct Listening {
    pub(super) sock: TcpListener,
    pub(super) port: u16,
    pub(super) backlog: usize,
    /// Requests delivered and not yet accepted or rejected.
    pub(super) pending: usize,
    pub(super) sink: Sink,
    /// After an accept failed for want of file descriptors (EMFILE and the like): not
    /// polled until then (the socket stays readable, so polling it would spin), the
    /// connections waiting in the kernel's backlog meanwhile.
    pub(super) paused_until: Option<Instant>,
    /// Accepted connections that had not sent their REQ when last looked at, oldest first,
    /// with when each was accepted (entries whose connection moved on are dropped lazily).
    pub(super) unrequested: std::collections::VecDeque<(ConnId, Instant)>,
    /// At [`super::CmConfig::max_unrequested`] with none old enough to close: not polled
    /// until there is room (see `Reactor::make_room`).
    pub(super) full: bool,
}

pub(super) struct Conn {
    pub(super) sock: TcpStream,
    /// The peer's address: where the active side connects to, or what the passive side's
    /// accept returned.
    pub(super) remote: SocketAddr,
    pub(super) state: State,
    /// Where this connection's events go (None: passive before accept, or released).
    pub(super) sink: Option<Sink>,
    pub(super) inbuf: Vec<u8>,
    pub(super) out: Vec<u8>,
    pub(super) deadline: Option<Instant>,
    /// Passive: the listener the request came in on (for its backlog count).
    pub(super) listener: Option<u64>,
    /// Passive, Requested: why the active side is gone (then accept fails).
    pub(super) peer_gone: Option<String>,
    /// Passive: the peer's QP info from the REQ (reported again with `Established`).
    pub(super) peer: Option<wire::ConnInfo>,
    /// Write-half already shut (Closing).
    pub(super) shut: bool,
    /// Active: how to try the TCP connect again while nothing listens.
    pub(super) retry: Option<super::active::Retry>,
    /// A DREQ from the peer waiting for RTUs that may have been sent before it; the
    /// socket is not read meanwhile (its EOF would come before the DREQ is handled).
    held: Option<Hold>,
}

/// A peer's DREQ kept back until the connections from the same peer address that were
/// waiting for their RTU when it came have had it (or failed), or `until` passes. The
/// peer wrote those RTUs before the DREQ; delivered the other way round, its consumer
/// would see this DISCONNECTED before their ESTABLISHED (see the module docs of `cm`).
struct Hold {
    awaiting: Vec<ConnId>,
    until: Instant,
}

impl Conn {
    pub(super) fn new(
        sock: TcpStream,
        remote: SocketAddr,
        state: State,
        deadline: Option<Instant>,
    ) -> Conn {
        Conn {
            sock,
            remote,
            state,
            sink: None,
            inbuf: Vec::new(),
            out: Vec::new(),
            deadline,
            listener: None,
            peer_gone: None,
            peer: None,
            shut: false,
            retry: None,
            held: None,
        }
    }

    fn polled(&self) -> bool {
        !(self.state == State::Requested && self.peer_gone.is_some())
            && self.state != State::RetryWait
            && self.held.is_none()
    }
}

/// Reads of one connection's socket per poll round (4 KiB each): enough for any CM
/// message exchange, small enough that a flooding peer cannot starve the others.
const MAX_READS_PER_ROUND: usize = 16;

pub(super) struct Reactor {
    pub(super) shared: Arc<Shared>,
    pub(super) config: CmConfig,
    pub(super) listeners: HashMap<u64, Listening>,
    pub(super) conns: HashMap<ConnId, Conn>,
    /// The connections with a held DREQ, in the order the DREQs came.
    held: Vec<ConnId>,
}

/// How a socket stopped working.
pub(super) enum Lost {
    /// Orderly close (read returned 0).
    Eof,
    /// A socket error (reset, …).
    Error(io::Error),
}

impl Reactor {
    pub(super) fn new(shared: Arc<Shared>, config: CmConfig) -> Reactor {
        Reactor {
            shared,
            config,
            listeners: HashMap::new(),
            conns: HashMap::new(),
            held: Vec::new(),
        }
    }

    pub(super) fn run(mut self) {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut lids: Vec<u64> = Vec::new();
        let mut cids: Vec<ConnId> = Vec::new();
        loop {
            let cmds = {
                let mut q = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
                if q.closed {
                    break;
                }
                std::mem::take(&mut q.cmds)
            };
            for c in cmds {
                self.command(c);
            }
            self.expire(Instant::now());
            self.retry_due(Instant::now());
            // A command or an expiry may have ended a connection a held DREQ waits for.
            self.release_held(Instant::now());
            self.shared.open.store(self.conns.len(), std::sync::atomic::Ordering::Relaxed);

            fds.clear();
            lids.clear();
            cids.clear();
            let pfd = |fd, events| libc::pollfd { fd, events, revents: 0 };
            fds.push(pfd(self.shared.wake.as_raw_fd(), libc::POLLIN));
            let full: Vec<u64> =
                self.listeners.iter().filter(|(_, l)| l.full).map(|(id, _)| *id).collect();
            for lid in full {
                if self.make_room(lid)
                    && let Some(l) = self.listeners.get_mut(&lid)
                {
                    l.full = false;
                }
            }
            let now = Instant::now();
            for (id, l) in &mut self.listeners {
                if l.paused_until.is_some_and(|t| t > now) || l.full {
                    continue;
                }
                l.paused_until = None;
                lids.push(*id);
                fds.push(pfd(l.sock.as_raw_fd(), libc::POLLIN));
            }
            // Connections still being set up are polled, and so handled, first. A peer
            // that connects many endpoints and then tears them all down (dtestcm) sends
            // each RTU before any DREQ; when one round finds an RTU on one connection and
            // a DREQ on another, the RTU goes first, so the consumer sees every
            // ESTABLISHED before the DISCONNECTEDs that follow it, as IB's CM (one MAD QP
            // for all connections) delivers them. Per connection, TCP keeps the order.
            for setting_up in [true, false] {
                for (id, c) in &self.conns {
                    if !c.polled() || c.state.is_setting_up() != setting_up {
                        continue;
                    }
                    let mut ev = libc::POLLIN;
                    if c.state == State::Connecting || !c.out.is_empty() {
                        ev |= libc::POLLOUT;
                    }
                    cids.push(*id);
                    fds.push(pfd(c.sock.as_raw_fd(), ev));
                }
            }
            let next_wake = self
                .conns
                .values()
                .flat_map(|c| {
                    [
                        c.deadline,
                        c.retry.as_ref().and_then(|r| r.next_at),
                        c.held.as_ref().map(|h| h.until),
                    ]
                })
                .flatten()
                .chain(self.listeners.values().filter_map(|l| l.paused_until))
                .chain(self.listeners.values().filter(|l| l.full).filter_map(|l| {
                    // When its oldest unrequested connection may be closed for room.
                    l.unrequested.front().map(|(_, at)| *at + self.config.unrequested_grace)
                }))
                .min();
            let timeout = match next_wake {
                None => -1,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    // Round up so we do not wake just before the deadline and spin.
                    (left.as_micros().div_ceil(1000)).min(i32::MAX as u128) as i32
                }
            };
            // SAFETY: fds is a live Vec of pollfd; poll writes only revents.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                eprintln!("ferrodat: the CM's poll failed ({e}); the CM thread stops");
                break;
            }
            if fds[0].revents != 0 {
                self.shared.wake.drain();
            }
            for (i, lid) in lids.iter().enumerate() {
                if fds[1 + i].revents != 0 {
                    self.accept_ready(*lid);
                }
            }
            let base = 1 + lids.len();
            for (i, cid) in cids.iter().enumerate() {
                let rev = fds[base + i].revents;
                if rev != 0 {
                    self.conn_ready(*cid, rev);
                }
            }
            self.release_held(Instant::now());
        }
        // However the loop ended (the CM dropped, or poll failing), nothing runs the queue
        // from now on: later calls see it closed, and the commands left in it are dropped,
        // which releases whoever waits for one (a listener's drop waits for its Unlisten).
        let left = {
            let mut q = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            q.closed = true;
            std::mem::take(&mut q.cmds)
        };
        drop(left);
    }

    fn command(&mut self, c: Cmd) {
        match c {
            Cmd::Listen { id, sock, backlog, sink } => {
                let port = sock.local_addr().map(|a| a.port()).unwrap_or(0);
                let l = Listening {
                    sock,
                    port,
                    backlog,
                    pending: 0,
                    sink,
                    paused_until: None,
                    unrequested: std::collections::VecDeque::new(),
                    full: false,
                };
                self.listeners.insert(id, l);
            }
            Cmd::Unlisten { id, done } => {
                self.unlisten(id);
                drop(done);
            }
            Cmd::Connect(c) => self.start_active(c),
            Cmd::Deliver { sink, ev } => deliver(&sink, ev),
            Cmd::Accept { conn, rep, sink } => self.accept_cmd(conn, rep, sink),
            Cmd::Reject { conn, rej } => self.reject_cmd(conn, rej),
            Cmd::Disconnect { conn, graceful } => self.disconnect_cmd(conn, graceful),
            Cmd::Release { conn } => self.release_cmd(conn),
        }
    }

    fn expire(&mut self, now: Instant) {
        let due: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            let Some(c) = self.conns.get(&id) else { continue };
            let ev = match c.state {
                State::Connecting | State::ReqSent => Some(CmEvent::TimedOut { conn: id }),
                // The connect timeout ran out before anything listened.
                State::RetryWait => {
                    Some(CmEvent::NonPeerRejected { conn: id, reason: NonPeerReason::NoListener })
                }
                State::RepSent => Some(CmEvent::AcceptCompletionError {
                    conn: id,
                    detail: format!(
                        "no RTU from the active side within {:?} of the REP",
                        self.config.rtu_timeout
                    ),
                }),
                State::DreqSent => Some(CmEvent::Disconnected {
                    conn: id,
                    reason: DisconnectReason::LocalGracefulUnanswered,
                }),
                // No REQ in time, or the peer never closed after our last message.
                State::PassiveNew | State::Closing | State::Requested | State::Established => None,
            };
            self.finish(id, ev);
        }
    }

    /// Removes the connection (closing its socket) and delivers `ev` to its sink.
    pub(super) fn finish(&mut self, id: ConnId, ev: Option<CmEvent>) {
        if let Some(c) = self.conns.remove(&id)
            && let (Some(sink), Some(ev)) = (c.sink, ev)
        {
            deliver(&sink, ev);
        }
    }

    /// Delivers `ev` to the connection's sink, keeping the connection.
    pub(super) fn notify(&mut self, id: ConnId, ev: CmEvent) {
        if let Some(sink) = self.conns.get(&id).and_then(|c| c.sink.clone()) {
            deliver(&sink, ev);
        }
    }

    /// Queues a message and tries to write it now.
    pub(super) fn send(&mut self, id: ConnId, msg: &Msg) {
        let frame = msg.encode().expect("the CM builds only valid messages");
        self.send_frame(id, frame);
    }

    pub(super) fn send_frame(&mut self, id: ConnId, frame: Vec<u8>) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.out.extend_from_slice(&frame);
        }
        self.flush(id);
    }

    /// Our last message is queued: from now on no events, close when the peer has it.
    pub(super) fn closing(&mut self, id: ConnId) {
        let linger = super::deadline_after(self.config.linger_timeout);
        if let Some(c) = self.conns.get_mut(&id) {
            c.state = State::Closing;
            c.sink = None;
            c.deadline = Some(linger);
        }
        self.flush(id);
    }

    fn flush(&mut self, id: ConnId) {
        let Some(c) = self.conns.get_mut(&id) else { return };
        if c.state == State::Connecting {
            return;
        }
        while !c.out.is_empty() {
            match c.sock.write(&c.out) {
                Ok(0) => break,
                Ok(n) => {
                    c.out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.lost(id, Lost::Error(e));
                    return;
                }
            }
        }
        if c.out.is_empty() && c.state == State::Closing && !c.shut {
            c.shut = true;
            let _ = c.sock.shutdown(Shutdown::Write);
        }
    }

    fn conn_ready(&mut self, id: ConnId, revents: i16) {
        let Some(c) = self.conns.get(&id) else { return };
        if c.state == State::Connecting {
            self.connect_ready(id);
            return;
        }
        if revents & libc::POLLOUT != 0 {
            self.flush(id);
        }
        if revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            self.read_ready(id);
        }
    }

    fn read_ready(&mut self, id: ConnId) {
        let mut buf = [0u8; 4096];
        // A bounded amount per poll round (poll is level-triggered: the rest is read in the
        // next round): a peer writing faster than this thread reads would otherwise keep
        // it here, serving no other connection and running no timer.
        for _ in 0..MAX_READS_PER_ROUND {
            let Some(c) = self.conns.get_mut(&id) else { return };
            if !c.polled() {
                return;
            }
            match c.sock.read(&mut buf) {
                Ok(0) => {
                    self.lost(id, Lost::Eof);
                    return;
                }
                Ok(n) => {
                    if c.state == State::Closing {
                        continue; // whatever comes after our last word is ignored
                    }
                    c.inbuf.extend_from_slice(&buf[..n]);
                    if !self.parse(id) {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.lost(id, Lost::Error(e));
                    return;
                }
            }
        }
    }

    /// Handles every complete frame in the input; false when the connection went away.
    fn parse(&mut self, id: ConnId) -> bool {
        loop {
            let Some(c) = self.conns.get_mut(&id) else { return false };
            if c.held.is_some() {
                return true; // the rest waits with the DREQ
            }
            if c.state == State::Closing || !c.polled() {
                c.inbuf.clear();
                return true;
            }
            match wire::decode_frame(&c.inbuf) {
                Ok(None) => return true,
                Ok(Some((msg, n))) => {
                    c.inbuf.drain(..n);
                    self.message(id, msg);
                }
                Err(e) => {
                    self.protocol_error(id, e.to_string());
                    return self.conns.contains_key(&id);
                }
            }
        }
    }

    fn message(&mut self, id: ConnId, msg: Msg) {
        let Some(state) = self.conns.get(&id).map(|c| c.state) else { return };
        match (state, msg) {
            (State::PassiveNew, Msg::Req { info, private_data }) => {
                self.on_req(id, info, private_data)
            }
            (State::ReqSent, Msg::Rep { info, private_data }) => {
                self.on_rep(id, info, private_data)
            }
            (State::ReqSent, Msg::Rej { reason, private_data }) => {
                self.on_rej(id, reason, private_data)
            }
            (State::RepSent, Msg::Rtu) => self.on_rtu(id),
            (State::RepSent, Msg::Rej { .. }) => self.finish(
                id,
                Some(CmEvent::AcceptCompletionError {
                    conn: id,
                    detail: "the active side refused the REP".into(),
                }),
            ),
            (State::Established, Msg::Dreq) => {
                if !self.hold_dreq(id) {
                    self.on_dreq(id);
                }
            }
            (State::DreqSent, Msg::Dreq) => self.on_dreq(id),
            (State::DreqSent, Msg::Drep) => {
                self.notify(
                    id,
                    CmEvent::Disconnected { conn: id, reason: DisconnectReason::LocalGraceful },
                );
                self.closing(id);
            }
            (state, msg) => self.protocol_error(
                id,
                format!("unexpected {} from the peer in CM state {state:?}", msg.name()),
            ),
        }
    }

    /// The peer's DREQ: answered with a DREP, and the connection is over.
    fn on_dreq(&mut self, id: ConnId) {
        let Some(state) = self.conns.get(&id).map(|c| c.state) else { return };
        let reason = match state {
            State::Established => DisconnectReason::PeerRequest,
            // Crossed DREQs: ours is answered by theirs; answer theirs too.
            State::DreqSent => DisconnectReason::LocalGraceful,
            // The consumer released or closed it while the DREQ was held.
            _ => return,
        };
        self.send(id, &Msg::Drep);
        self.notify(id, CmEvent::Disconnected { conn: id, reason });
        self.closing(id);
    }

    /// Holds the DREQ that just came on `id` if connections from the same peer address
    /// wait for their RTU (see [`Hold`]); true when held.
    fn hold_dreq(&mut self, id: ConnId) -> bool {
        if !self.conns.values().any(|c| c.state == State::RepSent) {
            return false;
        }
        let Some(peer) = self.peer_addr(id).map(|a| a.ip()) else { return false };
        let awaiting: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.state == State::RepSent && c.remote.ip() == peer)
            .map(|(cid, _)| *cid)
            .collect();
        if awaiting.is_empty() {
            return false;
        }
        let until = super::deadline_after(self.config.teardown_hold);
        let Some(c) = self.conns.get_mut(&id) else { return false };
        c.held = Some(Hold { awaiting, until });
        self.held.push(id);
        true
    }

    /// Handles the held DREQs whose awaited connections are all past `RepSent` (or gone),
    /// or whose time is up, in the order they came. A later DREQ never awaits less than an
    /// earlier one, so this keeps their order too.
    fn release_held(&mut self, now: Instant) {
        if self.held.is_empty() {
            return;
        }
        let mut still = Vec::new();
        for id in std::mem::take(&mut self.held) {
            let conns = &self.conns;
            let Some(c) = self.conns.get(&id) else { continue };
            let Some(h) = &c.held else { continue };
            let waiting = h
                .awaiting
                .iter()
                .any(|a| conns.get(a).is_some_and(|ac| ac.state == State::RepSent));
            if waiting && now < h.until && c.state == State::Established {
                still.push(id);
                continue;
            }
            if let Some(c) = self.conns.get_mut(&id) {
                c.held = None;
            }
            self.on_dreq(id);
            // Whatever the peer sent after its DREQ (nothing, normally) is handled now;
            // the socket is polled again from the next round.
            self.parse(id);
        }
        self.held.extend(still);
    }

    /// The peer broke the protocol.
    fn protocol_error(&mut self, id: ConnId, detail: String) {
        let Some(c) = self.conns.get_mut(&id) else { return };
        let ev = match c.state {
            State::Connecting | State::RetryWait | State::ReqSent => {
                Some(CmEvent::NonPeerRejected { conn: id, reason: NonPeerReason::Protocol(detail) })
            }
            State::Requested => {
                c.peer_gone = Some(format!("the active side broke the protocol: {detail}"));
                return;
            }
            State::RepSent => Some(CmEvent::AcceptCompletionError { conn: id, detail }),
            State::Established => Some(CmEvent::Broken { conn: id, detail }),
            State::DreqSent => Some(CmEvent::Disconnected {
                conn: id,
                reason: DisconnectReason::LocalGracefulUnanswered,
            }),
            State::PassiveNew | State::Closing => None,
        };
        self.finish(id, ev);
    }

    /// The socket closed or failed.
    pub(super) fn lost(&mut self, id: ConnId, how: Lost) {
        let Some(c) = self.conns.get_mut(&id) else { return };
        let what = match &how {
            Lost::Eof => "the peer closed the connection".to_string(),
            Lost::Error(e) => format!("the connection to the peer failed: {e}"),
        };
        let ev = match c.state {
            State::Connecting | State::RetryWait | State::ReqSent => {
                Some(CmEvent::NonPeerRejected { conn: id, reason: NonPeerReason::ListenerGone })
            }
            State::Requested => {
                c.peer_gone = Some(what);
                return;
            }
            State::RepSent => Some(CmEvent::AcceptCompletionError { conn: id, detail: what }),
            State::Established => Some(match how {
                Lost::Eof => {
                    CmEvent::Disconnected { conn: id, reason: DisconnectReason::PeerClosed }
                }
                Lost::Error(_) => CmEvent::Broken { conn: id, detail: what },
            }),
            State::DreqSent => Some(CmEvent::Disconnected {
                conn: id,
                reason: DisconnectReason::LocalGracefulUnanswered,
            }),
            State::PassiveNew | State::Closing => None,
        };
        self.finish(id, ev);
    }

    fn disconnect_cmd(&mut self, id: ConnId, graceful: bool) {
        let Some(c) = self.conns.get_mut(&id) else { return };
        match c.state {
            State::Established if graceful => {
                c.state = State::DreqSent;
                c.deadline = Some(super::deadline_after(self.config.disconnect_timeout));
                self.send(id, &Msg::Dreq);
            }
            State::Established | State::DreqSent => {
                if c.state == State::Established {
                    self.send(id, &Msg::Dreq);
                }
                self.notify(
                    id,
                    CmEvent::Disconnected { conn: id, reason: DisconnectReason::LocalAbrupt },
                );
                self.closing(id);
            }
            State::Connecting | State::RetryWait | State::ReqSent | State::RepSent => self.finish(
                id,
                Some(CmEvent::Disconnected { conn: id, reason: DisconnectReason::LocalAbort }),
            ),
            // Not ours to disconnect (undecided request) or already over.
            State::PassiveNew | State::Requested | State::Closing => {}
        }
    }

    fn release_cmd(&mut self, id: ConnId) {
        let Some(c) = self.conns.get_mut(&id) else { return };
        c.sink = None;
        match c.state {
            State::Established => {
                self.send(id, &Msg::Dreq);
                self.closing(id);
            }
            State::DreqSent => self.closing(id),
            State::Connecting | State::RetryWait | State::ReqSent | State::RepSent => {
                self.finish(id, None)
            }
            State::PassiveNew | State::Requested | State::Closing => {}
        }
    }

    /// The peer address of a connection, for the request event.
    pub(super) fn peer_addr(&self, id: ConnId) -> Option<SocketAddr> {
        self.conns.get(&id).map(|c| c.remote)
    }
}
