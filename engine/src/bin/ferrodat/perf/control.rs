//! The control connection between the client and the server: one TCP stream, text lines.
//!
//! ```text
//! client                                     server
//! FERRODAT-PERF 3                       ──▶
//!                                       ◀──  FERRODAT-PERF 3 <device> <progress thread: on|off|as-needed>
//! QP <qpn> <psn> <gid> <rr> <id> <mtu> <addr> <rkey>  ──▶   (connects its QP first)
//!                                       ◀──  QP … (the same for its side)
//! DAT <lmr address> <rmr_context>       ──▶   (opens its IA, EP, LMR and a PSP)
//!                                       ◀──  DAT <ia address> <conn_qual> <lmr address> <rmr_context>
//!      … dat_ep_connect to the PSP; the server accepts the request …
//!                                       ◀──  READY   (its EP saw ESTABLISHED)
//! TCP <bytes>  | RUN <job> <bytes> | DAT-RUN <job> <bytes>  ──▶
//!                                       ◀──  GO
//!      … the test (TCP: raw messages on this stream; RUN: on the QP; DAT-RUN: on the EP) …
//!                                       ◀──  DONE
//! BYE                                   ──▶
//! ```
//!
//! A side that fails sends `ERR <what>` when it can, so the other reports the reason
//! instead of a closed socket.

use ferrodat_engine::cm::ConnInfo;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{IpAddr, TcpStream};
use std::time::Duration;

const HELLO: &str = "FERRODAT-PERF";
const VERSION: u32 = 3;

/// How long either side waits for the next line: longer than any row of a sane run
/// (the client measures its local baselines between two commands).
const LINE_TIMEOUT: Duration = Duration::from_secs(600);

/// How long either side waits for the other's greeting: a server busy with its client (it
/// serves one, then exits) accepts another's connection but does not answer, nor does a
/// program that is not a ferrodat perf server.
const GREETING_TIMEOUT: Duration = Duration::from_secs(10);

/// What a side tells the other about its QP and its buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpInfo {
    /// QP number, PSN, GID, READ depths, MTU.
    pub conn: ConnInfo,
    /// The address of its registered buffer.
    pub addr: u64,
    /// The buffer's remote key.
    pub rkey: u32,
}

/// What a side tells the other about its DAT endpoint's memory (and, from the server,
/// where its PSP listens).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DatInfo {
    /// The server's IA address and the PSP's connection qualifier (None from the client).
    pub listen: Option<(IpAddr, u16)>,
    /// The LMR's registered address.
    pub addr: u64,
    /// Its rmr_context.
    pub rmr_context: u32,
}

/// What the server is asked to do on the QP (or on the EP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// Answer each SEND of this size with one, until a SEND with the stop immediate.
    Echo(usize),
    /// Answer each RDMA WRITE of this size (seen in memory) with one, until the stop value.
    WriteLat(usize),
    /// Only poll (so softhca moves the client's one-sided traffic), until a SEND with the
    /// stop immediate.
    Serve,
}

/// A client request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// TCP echo of messages of this size on the control stream.
    Tcp(usize),
    /// Set up the DAT endpoint; the client's LMR (no `listen`).
    Dat(DatInfo),
    /// A job on the QP.
    Run(Job),
    /// A job on the DAT endpoint.
    RunDat(Job),
    /// The run is over.
    Bye,
}

/// One end of the control connection.
pub struct Control {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Control {
    /// Wraps a connected stream (no Nagle delay: the TCP baseline runs on it).
    pub fn new(stream: TcpStream) -> Result<Control, String> {
        let setup = |s: &TcpStream| -> std::io::Result<TcpStream> {
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(LINE_TIMEOUT))?;
            s.try_clone()
        };
        let writer = setup(&stream).map_err(|e| format!("control connection: {e}"))?;
        Ok(Control { reader: BufReader::new(stream), writer })
    }

    /// Sends one line.
    pub fn send(&mut self, line: &str) -> Result<(), String> {
        self.writer
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|e| format!("the control connection broke ({e}): the other side stopped"))
    }

    /// Receives one line; `ERR …` from the other side becomes an error.
    pub fn recv(&mut self) -> Result<String, String> {
        self.recv_or(|waited| {
            format!(
                "the other side sent nothing for {} s: it stopped or is stuck (see its output)",
                waited.as_secs()
            )
        })
    }

    /// [`Self::recv`], with `silence(timeout)` as the error when the read timed out.
    fn recv_or(&mut self, silence: impl FnOnce(Duration) -> String) -> Result<String, String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => Err("the other side closed the control connection (see its output)".into()),
            Ok(_) => {
                let line = line.trim_end().to_string();
                match line.strip_prefix("ERR ") {
                    Some(why) => Err(format!("the other side failed: {why}")),
                    None => Ok(line),
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                let waited = self.reader.get_ref().read_timeout().ok().flatten();
                Err(silence(waited.unwrap_or(LINE_TIMEOUT)))
            }
            Err(e) => Err(format!("reading the control connection: {e}")),
        }
    }

    /// The other side's greeting: [`Self::recv`] within [`GREETING_TIMEOUT`]; if none comes,
    /// the error says `who` sent none and `why` that may be.
    fn recv_greeting(&mut self, who: &str, why: &str) -> Result<String, String> {
        let timeout = |c: &Self, t| {
            c.reader
                .get_ref()
                .set_read_timeout(Some(t))
                .map_err(|e| format!("control connection: {e}"))
        };
        timeout(self, GREETING_TIMEOUT)?;
        let line = self
            .recv_or(|waited| format!("{who} sent no greeting within {} s{why}", waited.as_secs()));
        timeout(self, LINE_TIMEOUT)?;
        line
    }

    /// Receives one line and checks it is `want`.
    pub fn expect(&mut self, want: &str) -> Result<(), String> {
        let got = self.recv()?;
        if got != want {
            return Err(format!("protocol error: expected {want:?}, got {got:?}"));
        }
        Ok(())
    }

    /// Tells the other side why this one fails (best effort) and returns the error.
    pub fn fail(&mut self, why: String) -> String {
        let _ = self.send(&format!("ERR {}", why.replace('\n', " ")));
        why
    }

    /// Client: the greeting; returns the server's device name and its progress-thread
    /// setting.
    pub fn hello_client(&mut self) -> Result<(String, String), String> {
        self.send(&format!("{HELLO} {VERSION}"))?;
        let line = self.recv_greeting(
            "the server accepted the connection but",
            ": it is serving another client (a server serves one client, then exits: start \
             another on another --port), or it is not a ferrodat perf server",
        )?;
        let mut words = line.split_whitespace();
        let (hello, version) = (words.next(), words.next().and_then(|v| v.parse::<u32>().ok()));
        match (hello, version, words.next(), words.next()) {
            (Some(HELLO), Some(VERSION), Some(device), Some(progress)) => {
                Ok((device.to_string(), progress.to_string()))
            }
            (Some(HELLO), Some(v), _, _) if v != VERSION => Err(format!(
                "the server speaks ferrodat perf protocol {v}, this client {VERSION}: run the \
                 same ferrodat version on both sides"
            )),
            _ => Err(format!("the server is not a ferrodat perf server (it said {line:?})")),
        }
    }

    /// Server: answers the greeting with its device name and progress-thread setting.
    pub fn hello_server(&mut self, device: &str, progress: &str) -> Result<(), String> {
        let line = self.recv_greeting("the client", " (not a ferrodat perf client?)")?;
        let mut words = line.split_whitespace();
        match (words.next(), words.next().and_then(|v| v.parse::<u32>().ok())) {
            (Some(HELLO), Some(VERSION)) => {
                self.send(&format!("{HELLO} {VERSION} {device} {progress}"))
            }
            (Some(HELLO), Some(v)) => Err(self.fail(format!(
                "the client speaks ferrodat perf protocol {v}, this server {VERSION}: run the \
                 same ferrodat version on both sides"
            ))),
            _ => Err(format!("not a ferrodat perf client (it said {line:?})")),
        }
    }

    /// Client: sends our QP info, returns the server's (whose QP is ready by then).
    pub fn exchange_qp_client(&mut self, local: &QpInfo) -> Result<QpInfo, String> {
        self.send(&encode_qp(local))?;
        let line = self.recv()?;
        decode_qp(&line).map_err(|e| format!("the server's QP information: {e}"))
    }

    /// Server: receives the client's QP info, lets `connect` bring our QP up towards it
    /// and returns ours, which is sent back.
    pub fn exchange_qp_server(
        &mut self,
        connect: impl FnOnce(&QpInfo) -> Result<QpInfo, String>,
    ) -> Result<(), String> {
        let line = self.recv()?;
        let peer =
            decode_qp(&line).map_err(|e| self.fail(format!("the client's QP information: {e}")))?;
        let local = connect(&peer).map_err(|e| self.fail(e))?;
        self.send(&encode_qp(&local))
    }

    /// Client: sends our LMR, returns the server's with where its PSP listens.
    pub fn exchange_dat_client(&mut self, local: &DatInfo) -> Result<DatInfo, String> {
        self.send(&encode_dat(local))?;
        let line = self.recv()?;
        match decode_dat(&line) {
            Ok(info @ DatInfo { listen: Some(_), .. }) => Ok(info),
            Ok(_) => Err(format!("the server's DAT information names no PSP: {line:?}")),
            Err(e) => Err(format!("the server's DAT information: {e}")),
        }
    }

    /// Server: answers [`Command::Dat`] with our LMR and PSP.
    pub fn answer_dat(&mut self, local: &DatInfo) -> Result<(), String> {
        self.send(&encode_dat(local))
    }

    /// Server: the next request.
    pub fn next_command(&mut self) -> Result<Command, String> {
        let line = self.recv()?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let size = |w: Option<&&str>| -> Result<usize, String> {
            w.and_then(|s| s.parse().ok()).ok_or_else(|| format!("bad size in {line:?}"))
        };
        let command = match words.first().copied() {
            Some("TCP") => Command::Tcp(size(words.get(1))?),
            Some(run @ ("RUN" | "DAT-RUN")) => {
                let job = match words.get(1).copied() {
                    Some("echo") => Job::Echo(size(words.get(2))?),
                    Some("write_lat") => Job::WriteLat(size(words.get(2))?),
                    Some("serve") => Job::Serve,
                    _ => return Err(self.fail(format!("unknown job in {line:?}"))),
                };
                if run == "RUN" { Command::Run(job) } else { Command::RunDat(job) }
            }
            Some("DAT") => match decode_dat(&line) {
                Ok(info) => Command::Dat(info),
                Err(e) => return Err(self.fail(format!("the client's DAT information: {e}"))),
            },
            Some("BYE") => Command::Bye,
            _ => return Err(self.fail(format!("unknown request {line:?}"))),
        };
        Ok(command)
    }

    /// Client: asks for a TCP echo of `size`-byte messages and waits until it starts.
    pub fn start_tcp(&mut self, size: usize) -> Result<(), String> {
        self.send(&format!("TCP {size}"))?;
        self.expect("GO")
    }

    /// Client: asks for a job on the QP and waits until the server is ready for it.
    pub fn start_job(&mut self, job: Job) -> Result<(), String> {
        self.start("RUN", job)
    }

    /// Client: asks for a job on the DAT endpoint and waits until the server is ready.
    pub fn start_dat_job(&mut self, job: Job) -> Result<(), String> {
        self.start("DAT-RUN", job)
    }

    fn start(&mut self, run: &str, job: Job) -> Result<(), String> {
        let line = match job {
            Job::Echo(n) => format!("{run} echo {n}"),
            Job::WriteLat(n) => format!("{run} write_lat {n}"),
            Job::Serve => format!("{run} serve"),
        };
        self.send(&line)?;
        self.expect("GO")
    }

    /// Client: waits until the server finished the current test.
    pub fn wait_done(&mut self) -> Result<(), String> {
        self.expect("DONE")
    }

    /// Client: ends the run.
    pub fn bye(&mut self) -> Result<(), String> {
        self.send("BYE")
    }

    /// True if the other side closed the connection (a look without blocking).
    pub fn peer_gone(&mut self) -> bool {
        let s = self.reader.get_ref();
        if s.set_nonblocking(true).is_err() {
            return false;
        }
        let mut b = [0u8; 1];
        let gone = matches!(s.peek(&mut b), Ok(0));
        let _ = s.set_nonblocking(false);
        gone
    }

    /// The stream for raw messages (the TCP baseline): reads go through the line buffer,
    /// so nothing the other side sent is lost between lines and messages.
    pub fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), String> {
        self.reader.read_exact(buf).map_err(|e| format!("TCP ping-pong read: {e}"))
    }

    /// Writes one raw message.
    pub fn write_all(&mut self, buf: &[u8]) -> Result<(), String> {
        self.writer.write_all(buf).map_err(|e| format!("TCP ping-pong write: {e}"))
    }
}

fn encode_qp(q: &QpInfo) -> String {
    let gid: String = q.conn.gid.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "QP {} {} {gid} {} {} {} {:x} {:x}",
        q.conn.qpn,
        q.conn.psn,
        q.conn.responder_resources,
        q.conn.initiator_depth,
        q.conn.path_mtu,
        q.addr,
        q.rkey
    )
}

fn decode_qp(line: &str) -> Result<QpInfo, String> {
    let w: Vec<&str> = line.split_whitespace().collect();
    if w.len() != 9 || w[0] != "QP" {
        return Err(format!("expected 'QP' and 8 fields, got {line:?}"));
    }
    let num = |i: usize| -> Result<u32, String> {
        w[i].parse().map_err(|_| format!("field {i} of {line:?} is not a number"))
    };
    let small = |i: usize| -> Result<u8, String> {
        w[i].parse().map_err(|_| format!("field {i} of {line:?} is not a small number"))
    };
    let hex = w[3].as_bytes();
    if hex.len() != 32 {
        return Err(format!("the GID in {line:?} is not 32 hex digits"));
    }
    let mut gid = [0u8; 16];
    for (i, g) in gid.iter_mut().enumerate() {
        let pair = std::str::from_utf8(&hex[2 * i..2 * i + 2]).map_err(|e| e.to_string())?;
        *g = u8::from_str_radix(pair, 16).map_err(|_| format!("the GID in {line:?} is not hex"))?;
    }
    let conn = ConnInfo {
        qpn: num(1)?,
        psn: num(2)?,
        gid,
        responder_resources: small(4)?,
        initiator_depth: small(5)?,
        path_mtu: small(6)?,
    };
    conn.validate().map_err(|e| e.to_string())?;
    let addr = u64::from_str_radix(w[7], 16).map_err(|_| format!("bad address in {line:?}"))?;
    let rkey = u32::from_str_radix(w[8], 16).map_err(|_| format!("bad rkey in {line:?}"))?;
    Ok(QpInfo { conn, addr, rkey })
}

fn encode_dat(d: &DatInfo) -> String {
    match d.listen {
        Some((ip, conn_qual)) => format!("DAT {ip} {conn_qual} {:x} {:x}", d.addr, d.rmr_context),
        None => format!("DAT {:x} {:x}", d.addr, d.rmr_context),
    }
}

fn decode_dat(line: &str) -> Result<DatInfo, String> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let (listen, lmr) = match w.as_slice() {
        ["DAT", ip, conn_qual, lmr @ ..] if lmr.len() == 2 => {
            let ip = ip.parse().map_err(|_| format!("bad IA address in {line:?}"))?;
            let q = conn_qual.parse().map_err(|_| format!("bad conn_qual in {line:?}"))?;
            (Some((ip, q)), lmr)
        }
        ["DAT", lmr @ ..] if lmr.len() == 2 => (None, lmr),
        _ => return Err(format!("expected 'DAT' and 2 or 4 fields, got {line:?}")),
    };
    let addr = u64::from_str_radix(lmr[0], 16).map_err(|_| format!("bad address in {line:?}"))?;
    let rmr_context =
        u32::from_str_radix(lmr[1], 16).map_err(|_| format!("bad rmr_context in {line:?}"))?;
    Ok(DatInfo { listen, addr, rmr_context })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qp_info_round_trips() {
        let q = QpInfo {
            conn: ConnInfo {
                qpn: 0x1234,
                psn: 0xab_cdef,
                gid: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1],
                responder_resources: 16,
                initiator_depth: 4,
                path_mtu: 5,
            },
            addr: 0x7f00_dead_0000,
            rkey: 0xbeef,
        };
        assert_eq!(decode_qp(&encode_qp(&q)), Ok(q));
        assert!(decode_qp("QP 1 2").is_err());
        assert!(decode_qp(&encode_qp(&q).replace("ffff7f", "zzzz7f")).is_err());
    }

    #[test]
    fn dat_info_round_trips() {
        let server = DatInfo {
            listen: Some(("127.0.0.1".parse().unwrap(), 18521)),
            addr: 0x7f00_dead_0000,
            rmr_context: 0x1234,
        };
        let client = DatInfo { listen: None, ..server };
        assert_eq!(decode_dat(&encode_dat(&server)), Ok(server));
        assert_eq!(decode_dat(&encode_dat(&client)), Ok(client));
        assert!(decode_dat("DAT 1").is_err());
        assert!(decode_dat("DAT 127.0.0.1 x 1 2").is_err());
    }
}
