//! The active side: connect, the REQ, and what the passive side answers.

use super::reactor::{Conn, Reactor, State};
use super::wire::{ConnInfo, Msg, RejectReason};
use super::{Cm, CmError, CmEvent, Cmd, ConnId, Connection, NonPeerReason, Sink};
use std::io;
use std::mem::size_of;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// A connection handed to the CM thread: the socket with its TCP connect under way (or
/// done), the REQ to send and the deadline.
pub(super) struct Connecting {
    id: ConnId,
    sock: TcpStream,
    req: Vec<u8>,
    deadline: Option<Instant>,
    sink: Sink,
    retry: Retry,
    /// The connect was refused already: wait, then try again.
    refused: bool,
}

/// What an active connection needs to try its TCP connect again while nothing listens.
#[derive(Clone, Copy, Debug)]
pub(super) struct Retry {
    local: IpAddr,
    to: SocketAddr,
    /// No more tries after this: the refusal is reported.
    until: Instant,
    /// When the next try is due (RetryWait only).
    pub(super) next_at: Option<Instant>,
    /// The pause before the next try (doubling up to [`RETRY_PAUSE_MAX`]).
    pause: Duration,
}

/// The first pause between connect tries while nothing listens, and the longest.
const RETRY_PAUSE_MIN: Duration = Duration::from_millis(5);
const RETRY_PAUSE_MAX: Duration = Duration::from_millis(200);

impl Retry {
    fn new(local: IpAddr, to: SocketAddr, timeout: Option<Duration>) -> Retry {
        let grace = timeout.map_or(super::NO_LISTENER_GRACE, |t| t.min(super::NO_LISTENER_GRACE));
        Retry {
            local,
            to,
            until: super::deadline_after(grace),
            next_at: None,
            pause: RETRY_PAUSE_MIN,
        }
    }

    /// Schedules the next try after a refusal at `now`; false when the grace is over.
    fn schedule(&mut self, now: Instant) -> bool {
        if now >= self.until {
            self.next_at = None;
            return false;
        }
        self.next_at = Some((now + self.pause).min(self.until));
        self.pause = (self.pause * 2).min(RETRY_PAUSE_MAX);
        true
    }
}

impl Cm {
    /// Connects to the listener at (`remote`, `conn_qual`) with this side's QP `local`
    /// (at RESET or INIT) and `private_data`. Returns at once; `sink` gets the outcome:
    /// `Established` (bring the QP to RTS in the sink, see the module docs),
    /// `PeerRejected`, `NonPeerRejected`, `Unreachable` or `TimedOut` (no REP within
    /// `timeout`; `None` waits forever), then the connection's disconnect events. Fails at
    /// once on too much private data, a bad `local`, or no socket.
    pub fn connect(
        &self,
        remote: IpAddr,
        conn_qual: u16,
        local: &ConnInfo,
        private_data: &[u8],
        timeout: Option<Duration>,
        sink: Sink,
    ) -> Result<Connection, CmError> {
        if conn_qual == 0 {
            return Err(CmError::Invalid(
                "conn_qual 0 names no listener: pass the PSP's conn_qual".into(),
            ));
        }
        let req = Msg::Req { info: *local, private_data: private_data.to_vec() }.encode()?;
        let id = ConnId(self.shared.new_id());
        let to = SocketAddr::new(remote, conn_qual);
        let mut conn = Connection { id, shared: self.shared.clone(), local_port: 0 };
        let retry = Retry::new(self.shared.local, to, timeout);
        let deadline = timeout.map(super::deadline_after);
        match start_connect(self.shared.local, to) {
            Ok(sock) => {
                conn.local_port = sock.local_addr().map(|a| a.port()).unwrap_or(0);
                let c = Connecting { id, sock, req, deadline, sink, retry, refused: false };
                self.shared.send(Cmd::Connect(c))?;
            }
            Err(Start::Local(e)) => return Err(e),
            Err(Start::Refused(err, sock)) if is_no_listener(&err) => {
                let c = Connecting { id, sock, req, deadline, sink, retry, refused: true };
                self.shared.send(Cmd::Connect(c))?;
            }
            Err(Start::Refused(err, _)) => {
                let ev = outcome_of(id, &err);
                self.shared.send(Cmd::Deliver { sink, ev })?;
            }
        }
        Ok(conn)
    }
}

enum Start {
    /// Our side could not make the socket.
    Local(CmError),
    /// connect() failed at once (refused, no route): an outcome for the sink, or a
    /// reason to try again. The socket is the one that failed.
    Refused(io::Error, TcpStream),
}

/// Nothing listens on the port (yet).
fn is_no_listener(err: &io::Error) -> bool {
    err.raw_os_error() == Some(libc::ECONNREFUSED)
}

/// A nonblocking TCP socket bound to the IA address with its connect to `to` started.
fn start_connect(local: IpAddr, to: SocketAddr) -> Result<TcpStream, Start> {
    let family = if to.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: socket() takes no pointers; a non-negative result is a new fd we own.
    let fd = unsafe {
        libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
    };
    if fd < 0 {
        return Err(Start::Local(CmError::Io {
            what: "create a TCP socket for a connection (out of file descriptors?)".into(),
            err: io::Error::last_os_error(),
        }));
    }
    // SAFETY: fd was just created and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if local.is_ipv4() == to.is_ipv4() && !local.is_unspecified() {
        // SO_REUSEADDR, so that when this connection ends in TIME_WAIT on its ephemeral port,
        // a PSP may still listen on that port number (listeners set it too; without it on
        // both sides the TIME_WAIT blocks the listen for a minute). Best effort: a failure
        // costs only that.
        let one: libc::c_int = 1;
        // SAFETY: `one` is a live c_int and its size is passed; the fd is ours.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_REUSEADDR,
                (&raw const one).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        let (sa, len) = sockaddr(SocketAddr::new(local, 0));
        // SAFETY: sa is a live sockaddr_storage of which len bytes are initialised.
        if unsafe { libc::bind(fd.as_raw_fd(), (&raw const sa).cast(), len) } != 0 {
            return Err(Start::Local(CmError::Io {
                what: format!(
                    "bind the connection's socket to the IA address {local}: is it an address \
                     of this host?"
                ),
                err: io::Error::last_os_error(),
            }));
        }
    }
    let (sa, len) = sockaddr(to);
    // SAFETY: as above.
    if unsafe { libc::connect(fd.as_raw_fd(), (&raw const sa).cast(), len) } != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(Start::Refused(err, TcpStream::from(fd)));
        }
    }
    let sock = TcpStream::from(fd);
    let _ = sock.set_nodelay(true);
    Ok(sock)
}

fn sockaddr(a: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v4.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { (&raw mut ss).cast::<libc::sockaddr_in>().write(sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: v6.ip().octets() },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { (&raw mut ss).cast::<libc::sockaddr_in6>().write(sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// Whether `sock` is connected to itself (same address and port at both ends).
fn is_self_connected(sock: &TcpStream) -> bool {
    matches!((sock.local_addr(), sock.peer_addr()), (Ok(l), Ok(p)) if l == p)
}

/// The event for a TCP connect that failed with `err`.
pub(super) fn outcome_of(conn: ConnId, err: &io::Error) -> CmEvent {
    match err.raw_os_error() {
        Some(libc::ECONNREFUSED) => {
            CmEvent::NonPeerRejected { conn, reason: NonPeerReason::NoListener }
        }
        Some(libc::ETIMEDOUT) => CmEvent::TimedOut { conn },
        Some(libc::ECONNRESET | libc::ECONNABORTED) => {
            CmEvent::NonPeerRejected { conn, reason: NonPeerReason::ListenerGone }
        }
        _ => CmEvent::Unreachable { conn, detail: format!("TCP connect failed: {err}") },
    }
}

impl Reactor {
    pub(super) fn start_active(&mut self, c: Connecting) {
        let mut conn = Conn::new(c.sock, c.retry.to, State::Connecting, c.deadline);
        conn.sink = Some(c.sink);
        conn.out = c.req;
        conn.retry = Some(c.retry);
        self.conns.insert(c.id, conn);
        if c.refused {
            self.refused(c.id, io::Error::from_raw_os_error(libc::ECONNREFUSED));
        }
    }

    /// The TCP connect of `id` failed with `err`. Nothing listening is tried again for a
    /// while (see [`super::NO_LISTENER_GRACE`]); anything else, or a refusal after the
    /// grace, is reported.
    fn refused(&mut self, id: ConnId, err: io::Error) {
        let Some(c) = self.conns.get_mut(&id) else { return };
        if is_no_listener(&err)
            && let Some(retry) = c.retry.as_mut()
            && retry.schedule(Instant::now())
        {
            c.state = State::RetryWait;
            return;
        }
        let ev = outcome_of(id, &err);
        self.finish(id, Some(ev));
    }

    /// Starts the TCP connects whose retry is due.
    pub(super) fn retry_due(&mut self, now: Instant) {
        let due: Vec<(ConnId, Retry)> = self
            .conns
            .iter()
            .filter(|(_, c)| c.state == State::RetryWait)
            .filter_map(|(id, c)| {
                c.retry.filter(|r| r.next_at.is_some_and(|t| t <= now)).map(|r| (*id, r))
            })
            .collect();
        for (id, retry) in due {
            match start_connect(retry.local, retry.to) {
                Ok(sock) => {
                    if let Some(c) = self.conns.get_mut(&id) {
                        c.sock = sock;
                        c.state = State::Connecting;
                    }
                }
                Err(Start::Refused(err, sock)) => {
                    if let Some(c) = self.conns.get_mut(&id) {
                        c.sock = sock;
                    }
                    self.refused(id, err);
                }
                Err(Start::Local(e)) => {
                    let ev = CmEvent::Unreachable { conn: id, detail: e.to_string() };
                    self.finish(id, Some(ev));
                }
            }
        }
    }

    /// The TCP connect finished (POLLOUT/POLLERR): send the REQ or report the failure.
    pub(super) fn connect_ready(&mut self, id: ConnId) {
        let Some(c) = self.conns.get_mut(&id) else { return };
        match c.sock.take_error() {
            Ok(None) if is_self_connected(&c.sock) => {
                // A connect to a port of this host that nothing listens on can land on
                // itself: the kernel chose that very port as the socket's own, and TCP's
                // simultaneous open connected the socket to itself (our REQ would come
                // back as the peer's). Nobody listens there.
                self.refused(id, io::Error::from_raw_os_error(libc::ECONNREFUSED));
            }
            Ok(None) => {
                // Writable without error: connected (a reset right after shows up on the
                // first read or write).
                c.state = State::ReqSent;
                self.send_frame(id, Vec::new());
            }
            Ok(Some(err)) | Err(err) => self.refused(id, err),
        }
    }

    pub(super) fn on_rep(&mut self, id: ConnId, peer: ConnInfo, private_data: Vec<u8>) {
        let Some(c) = self.conns.get_mut(&id) else { return };
        c.state = State::Established;
        c.deadline = None;
        // The sink brings the QP to RTS while handling this; the RTU goes after, or a REJ
        // if it could not (`Connection::refuse_reply`).
        self.notify(id, CmEvent::Established { conn: id, peer, private_data });
        // Taken whole: sinks run on this thread one at a time, so an entry for another
        // connection came from a sink that called it outside its Established, and means
        // nothing.
        let refused = std::mem::take(
            &mut *self.shared.refused_replies.lock().unwrap_or_else(|p| p.into_inner()),
        )
        .contains(&id);
        if refused {
            self.refuse(id, RejectReason::Provider);
        } else {
            self.send(id, &Msg::Rtu);
        }
    }

    pub(super) fn on_rej(&mut self, id: ConnId, reason: RejectReason, private_data: Vec<u8>) {
        let ev = match reason {
            RejectReason::Consumer => CmEvent::PeerRejected { conn: id, private_data },
            RejectReason::NoListener => {
                CmEvent::NonPeerRejected { conn: id, reason: NonPeerReason::ListenerGone }
            }
            RejectReason::Backlog => {
                CmEvent::NonPeerRejected { conn: id, reason: NonPeerReason::Backlog }
            }
            RejectReason::Provider => {
                CmEvent::NonPeerRejected { conn: id, reason: NonPeerReason::Provider }
            }
        };
        self.finish(id, Some(ev));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_connected_to_itself_is_told_from_a_connection() {
        // What a connect to a dead port of this host can become: bound to the port it
        // connects to, the socket opens a connection with itself.
        use std::os::fd::FromRawFd;
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        // SAFETY: socket() takes no pointers; the fd is handed to a TcpStream at once.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        assert!(fd >= 0);
        // SAFETY: a fresh fd we own.
        let sock = unsafe { TcpStream::from_raw_fd(fd) };
        let (sa, len) = sockaddr(port);
        // SAFETY: sa is a live sockaddr_storage of which len bytes are initialised.
        unsafe {
            assert_eq!(libc::bind(fd, (&raw const sa).cast(), len), 0);
            assert_eq!(libc::connect(fd, (&raw const sa).cast(), len), 0, "self-connect");
        }
        assert!(is_self_connected(&sock));
        // An ordinary connection is not.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        assert!(!is_self_connected(&other));
    }

    #[test]
    fn connect_errors_map_to_dat_events() {
        let id = ConnId(1);
        let ev = |errno| outcome_of(id, &io::Error::from_raw_os_error(errno));
        assert!(matches!(
            ev(libc::ECONNREFUSED),
            CmEvent::NonPeerRejected { reason: NonPeerReason::NoListener, .. }
        ));
        assert!(matches!(ev(libc::ETIMEDOUT), CmEvent::TimedOut { .. }));
        for e in [libc::EHOSTUNREACH, libc::ENETUNREACH, libc::ENETDOWN, libc::EHOSTDOWN] {
            match ev(e) {
                CmEvent::Unreachable { detail, .. } => assert!(detail.contains("TCP connect")),
                other => panic!("errno {e}: {other:?}"),
            }
        }
    }
}
