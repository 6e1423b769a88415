//! The passive side: listening on (IA address, conn_qual), connection requests, accept and
//! reject.

use super::reactor::{Conn, Reactor, State};
use super::wire::{ConnInfo, Msg, RejectReason};
use super::{CONN_QUAL_ANY, Cm, CmError, CmEvent, Cmd, ConnId, Connection, Shared, Sink, deliver};
use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// How long a listener whose accept failed (out of file descriptors) is left alone.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// A listening conn_qual (the CM side of a PSP or RSP). Dropping it stops listening:
/// requests not yet read are refused with `NON_PEER_REJECTED`; requests already delivered
/// stay valid.
pub struct Listener {
    id: u64,
    port: u16,
    shared: Arc<Shared>,
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listener").field("port", &self.port).finish()
    }
}

impl Listener {
    /// The conn_qual (TCP port) listened on.
    pub fn conn_qual(&self) -> u16 {
        self.port
    }
}

impl Drop for Listener {
    /// Stops listening and waits until the socket is closed, so the conn_qual can be
    /// listened on again at once (dapltest reuses its ports). Dropped in a sink (on the
    /// CM thread) it cannot wait: the socket closes when the sink returns.
    fn drop(&mut self) {
        if self.shared.on_cm_thread() {
            let _ = self.shared.send(Cmd::Unlisten { id: self.id, done: None });
            return;
        }
        let (done, closed) = std::sync::mpsc::sync_channel(0);
        if self.shared.send(Cmd::Unlisten { id: self.id, done: Some(done) }).is_ok() {
            // Err: the sender was dropped — after the close, or unprocessed because the CM
            // itself closed (which closes the socket too).
            let _ = closed.recv();
        }
    }
}

impl Cm {
    /// Listens on (IA address, `conn_qual`); each request becomes a
    /// [`CmEvent::ConnRequest`] on `sink`. At most `backlog` requests (the CR EVD's
    /// qlen) may wait undecided; more are refused with `NON_PEER_REJECTED`.
    pub fn listen(&self, conn_qual: u16, backlog: usize, sink: Sink) -> Result<Listener, CmError> {
        if conn_qual == 0 {
            return Err(CmError::Invalid(
                "conn_qual 0 is not a port to listen on: use listen_any (psp_create_any) to \
                 have one picked"
                    .into(),
            ));
        }
        let addr = SocketAddr::new(self.shared.local, conn_qual);
        let sock = TcpListener::bind(addr).map_err(|err| bind_error(addr, err))?;
        self.start_listening(sock, conn_qual, backlog, sink)
    }

    /// Listens on a free conn_qual from [`CONN_QUAL_ANY`] (psp_create_any); the port is
    /// [`Listener::conn_qual`].
    pub fn listen_any(&self, backlog: usize, sink: Sink) -> Result<Listener, CmError> {
        // Successive calls start where the last one ended, so they do not all probe the
        // same taken ports first.
        static NEXT: AtomicU16 = AtomicU16::new(0);
        let (lo, hi) = (*CONN_QUAL_ANY.start(), *CONN_QUAL_ANY.end());
        let span = hi - lo + 1;
        for _ in 0..span {
            let port = lo + NEXT.fetch_add(1, Ordering::Relaxed) % span;
            let addr = SocketAddr::new(self.shared.local, port);
            match TcpListener::bind(addr) {
                Ok(sock) => return self.start_listening(sock, port, backlog, sink),
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                Err(err) => return Err(bind_error(addr, err)),
            }
        }
        Err(CmError::NoFreeConnQual)
    }

    fn start_listening(
        &self,
        sock: TcpListener,
        port: u16,
        backlog: usize,
        sink: Sink,
    ) -> Result<Listener, CmError> {
        sock.set_nonblocking(true).map_err(|err| CmError::Io {
            what: format!("make the listening socket on port {port} nonblocking"),
            err,
        })?;
        let id = self.shared.new_id();
        self.shared.send(Cmd::Listen { id, sock, backlog: backlog.max(1), sink })?;
        Ok(Listener { id, port, shared: self.shared.clone() })
    }
}

fn bind_error(addr: SocketAddr, err: io::Error) -> CmError {
    match err.kind() {
        io::ErrorKind::AddrInUse => CmError::ConnQualInUse { addr },
        io::ErrorKind::AddrNotAvailable => CmError::Io {
            what: format!(
                "listen on {addr}: {} is not an address of this host; the IA address must be \
                 a local interface address",
                addr.ip()
            ),
            err,
        },
        io::ErrorKind::PermissionDenied => CmError::Io {
            what: format!(
                "listen on {addr}: ports below 1024 need privileges; use a higher conn_qual"
            ),
            err,
        },
        _ => CmError::Io { what: format!("listen on {addr}"), err },
    }
}

/// A connection request on a [`Listener`] (the CM side of a CR): accept it with
/// [`accept`](ConnRequest::accept) or refuse it with [`reject`](ConnRequest::reject).
/// Dropped undecided, it is rejected (`NON_PEER_REJECTED` at the peer).
pub struct ConnRequest {
    id: ConnId,
    shared: Arc<Shared>,
    remote: SocketAddr,
    conn_qual: u16,
    peer: ConnInfo,
    private_data: Vec<u8>,
    decided: bool,
}

impl fmt::Debug for ConnRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnRequest")
            .field("id", &self.id)
            .field("remote", &self.remote)
            .field("conn_qual", &self.conn_qual)
            .field("peer", &self.peer)
            .field("private_data_len", &self.private_data.len())
            .finish()
    }
}

impl ConnRequest {
    /// The id the connection's events will carry.
    pub fn id(&self) -> ConnId {
        self.id
    }

    /// The requester's IP address and (ephemeral) TCP port.
    pub fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// The conn_qual the request came in on.
    pub fn conn_qual(&self) -> u16 {
        self.conn_qual
    }

    /// The requester's QP: bring the local QP up towards it ([`super::connect_qp`]) before
    /// accepting.
    pub fn peer(&self) -> &ConnInfo {
        &self.peer
    }

    /// The requester's private data.
    pub fn private_data(&self) -> &[u8] {
        &self.private_data
    }

    /// Accepts: sends the REP with `local` (this side's QP, already at RTS) and
    /// `private_data`. `sink` then gets `Established` when the RTU arrives, or
    /// `AcceptCompletionError`; afterwards the connection's disconnect events. Fails at
    /// once (request still undecided) on too much private data or a bad `local`.
    pub fn accept(
        &mut self,
        local: &ConnInfo,
        private_data: &[u8],
        sink: Sink,
    ) -> Result<Connection, CmError> {
        if self.decided {
            return Err(CmError::AlreadyDecided { conn: self.id });
        }
        let rep = Msg::Rep { info: *local, private_data: private_data.to_vec() }.encode()?;
        self.shared.send(Cmd::Accept { conn: self.id, rep, sink })?;
        self.decided = true;
        Ok(Connection { id: self.id, shared: self.shared.clone(), local_port: self.conn_qual })
    }

    /// Rejects with `private_data` (the peer gets `PEER_REJECTED`).
    pub fn reject(&mut self, private_data: &[u8]) -> Result<(), CmError> {
        if self.decided {
            return Err(CmError::AlreadyDecided { conn: self.id });
        }
        let rej = Msg::Rej { reason: RejectReason::Consumer, private_data: private_data.to_vec() }
            .encode()?;
        self.shared.send(Cmd::Reject { conn: self.id, rej })?;
        self.decided = true;
        Ok(())
    }
}

impl Drop for ConnRequest {
    fn drop(&mut self) {
        if !self.decided {
            let rej = Msg::Rej { reason: RejectReason::Provider, private_data: Vec::new() }
                .encode()
                .expect("an empty REJ is valid");
            let _ = self.shared.send(Cmd::Reject { conn: self.id, rej });
        }
    }
}

impl Reactor {
    /// The listening socket is readable: take every pending TCP connection there is room
    /// for (see [`super::CmConfig::max_unrequested`]).
    pub(super) fn accept_ready(&mut self, lid: u64) {
        loop {
            if !self.make_room(lid) {
                if let Some(l) = self.listeners.get_mut(&lid) {
                    l.full = true;
                }
                return;
            }
            let Some(l) = self.listeners.get(&lid) else { return };
            match l.sock.accept() {
                Ok((sock, remote)) => {
                    if sock.set_nonblocking(true).is_err() {
                        continue; // dropped: the peer sees the close
                    }
                    let _ = sock.set_nodelay(true);
                    let deadline = super::deadline_after(self.config.req_timeout);
                    let mut c = Conn::new(sock, remote, State::PassiveNew, Some(deadline));
                    c.listener = Some(lid);
                    let id = ConnId(self.shared.new_id());
                    self.conns.insert(id, c);
                    if let Some(l) = self.listeners.get_mut(&lid) {
                        l.unrequested.push_back((id, Instant::now()));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // EMFILE and friends: the connection stays in the kernel's backlog.
                    // The socket stays readable, so it is left out of the poll for a while
                    // (retrying at once would spin the CM thread), and said once per pause.
                    let port = l.port;
                    if let Some(l) = self.listeners.get_mut(&lid) {
                        l.paused_until = Some(Instant::now() + ACCEPT_RETRY);
                    }
                    eprintln!(
                        "ferrodat: CM accept on port {port} failed: {e}; retrying in {} ms \
                         (raise the open-file limit, ulimit -n, if this repeats)",
                        ACCEPT_RETRY.as_millis()
                    );
                    return;
                }
            }
        }
    }

    /// Whether listener `lid` may accept another connection: fewer than
    /// [`super::CmConfig::max_unrequested`] of its connections wait for their REQ, or the
    /// oldest of them has waited past the grace and is closed now (silently: a peer that
    /// sent nothing expects nothing).
    pub(super) fn make_room(&mut self, lid: u64) -> bool {
        let max = self.config.max_unrequested.max(1);
        let grace = self.config.unrequested_grace;
        let conns = &self.conns;
        let Some(l) = self.listeners.get_mut(&lid) else { return false };
        if l.unrequested.len() < max {
            return true;
        }
        // Forget the connections that sent their REQ or went.
        l.unrequested.retain(|(id, _)| {
            conns.get(id).is_some_and(|c| c.state == State::PassiveNew && c.listener == Some(lid))
        });
        if l.unrequested.len() < max {
            return true;
        }
        match l.unrequested.front() {
            Some(&(oldest, at)) if at.elapsed() >= grace => {
                l.unrequested.pop_front();
                self.finish(oldest, None);
                true
            }
            _ => false,
        }
    }

    pub(super) fn unlisten(&mut self, lid: u64) {
        drop(self.listeners.remove(&lid));
        // Connections that have not sent their REQ yet have nowhere to go.
        let orphans: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.state == State::PassiveNew && c.listener == Some(lid))
            .map(|(id, _)| *id)
            .collect();
        for id in orphans {
            self.refuse(id, RejectReason::NoListener);
        }
    }

    pub(super) fn refuse(&mut self, id: ConnId, reason: RejectReason) {
        self.send(id, &Msg::Rej { reason, private_data: Vec::new() });
        self.closing(id);
    }

    pub(super) fn on_req(&mut self, id: ConnId, peer: ConnInfo, private_data: Vec<u8>) {
        let lid = self.conns.get(&id).and_then(|c| c.listener);
        let Some(l) = lid.and_then(|lid| self.listeners.get_mut(&lid)) else {
            self.refuse(id, RejectReason::NoListener);
            return;
        };
        if l.pending >= l.backlog {
            self.refuse(id, RejectReason::Backlog);
            return;
        }
        l.pending += 1;
        let (sink, conn_qual) = (l.sink.clone(), l.port);
        let Some(remote) = self.peer_addr(id) else {
            self.finish(id, None);
            return;
        };
        if let Some(c) = self.conns.get_mut(&id) {
            c.state = State::Requested;
            c.deadline = None;
            c.peer = Some(peer);
        }
        let req = ConnRequest {
            id,
            shared: self.shared.clone(),
            remote,
            conn_qual,
            peer,
            private_data,
            decided: false,
        };
        deliver(&sink, CmEvent::ConnRequest(req));
    }

    /// The request is decided: it no longer counts against its listener's backlog.
    fn decided(&mut self, id: ConnId) -> bool {
        let Some(c) = self.conns.get_mut(&id) else { return false };
        if c.state != State::Requested {
            return false;
        }
        if let Some(l) = c.listener.take().and_then(|lid| self.listeners.get_mut(&lid)) {
            l.pending = l.pending.saturating_sub(1);
        }
        true
    }

    pub(super) fn accept_cmd(&mut self, id: ConnId, rep: Vec<u8>, sink: Sink) {
        if !self.decided(id) {
            deliver(
                &sink,
                CmEvent::AcceptCompletionError {
                    conn: id,
                    detail: "the request is gone (its connection was already closed)".into(),
                },
            );
            return;
        }
        let rtu_deadline = super::deadline_after(self.config.rtu_timeout);
        let Some(c) = self.conns.get_mut(&id) else { return };
        c.sink = Some(sink);
        if let Some(why) = c.peer_gone.take() {
            self.finish(
                id,
                Some(CmEvent::AcceptCompletionError {
                    conn: id,
                    detail: format!("the active side gave up before the accept: {why}"),
                }),
            );
            return;
        }
        c.state = State::RepSent;
        c.deadline = Some(rtu_deadline);
        self.send_frame(id, rep);
    }

    pub(super) fn reject_cmd(&mut self, id: ConnId, rej: Vec<u8>) {
        if !self.decided(id) {
            return;
        }
        if self.conns.get(&id).is_some_and(|c| c.peer_gone.is_some()) {
            self.finish(id, None);
            return;
        }
        self.send_frame(id, rej);
        self.closing(id);
    }

    pub(super) fn on_rtu(&mut self, id: ConnId) {
        let Some(c) = self.conns.get_mut(&id) else { return };
        c.state = State::Established;
        c.deadline = None;
        let peer = c.peer.expect("a passive connection has the REQ's QP info");
        self.notify(id, CmEvent::Established { conn: id, peer, private_data: Vec::new() });
    }
}
