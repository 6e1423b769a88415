//! `ferrodat perf`: latency and bandwidth of the layers of ferrodat next to the baselines a
//! user compares them with, measured in the same run, as one table (or `--json`).
//!
//! With no arguments it starts a server process (this executable, `perf --server`) and runs
//! the client here, both on this host over softhca. `--server` and `--client HOST` run the
//! two sides separately (two hosts, or two network namespaces). The client drives: it asks
//! the server for each test over a TCP control connection ([`control`]), which also carries
//! the QP information both sides exchange ([`ferrodat_engine::cm`]'s `ConnInfo`,
//! `local_conn_info` and `connect_qp`) and the TCP ping-pong baseline.
//!
//! Rows ([`plan`]): the baselines ([`baseline`]: the shared-memory floor, the least
//! software HCA, single-core memcpy, the two-copy pipeline, TCP ping-pong), then each RDMA test ([`workload`]) at the driver level ([`rdma`]:
//! the QP posted to and polled directly) and at the DAT level ([`dat`]: the same test
//! through the engine's EP and EVDs, connected by the engine's connection manager).

mod baseline;
mod control;
mod dat;
mod interrupt;
mod plan;
mod progress;
mod rdma;
mod report;
mod workload;

use clap::Args;
use control::Control;
use plan::{Level, Measured, Row, SLICES, Sizing, Test};
use progress::Progress;
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The control port `--server` listens on and `--client` connects to by default (clear of
/// perftest's 18515 and of the ports the OFA test programs use).
pub const DEFAULT_PORT: u16 = 18520;

/// Seconds each row runs for by default: eighteen rows and their warm-ups stay under a
/// minute.
const DEFAULT_DURATION: f64 = 2.0;

/// The shortest `--duration`: a row of 10 ms still takes a few samples of 100 round trips
/// (a TCP ping-pong's take a few ms each), and each of its [`SLICES`] latency slices one or
/// more. Shorter, a row's numbers would mean nothing; whatever the duration, each timed
/// loop still takes at least one sample (see [`plan::Meter::more`]).
const MIN_DURATION: f64 = 0.01;

/// The longest `--duration`.
const MAX_DURATION: f64 = 3600.0;

#[derive(Args, Debug)]
pub struct PerfArgs {
    /// Run only the server side: wait for one `ferrodat perf --client` on --port, serve its
    /// run, exit.
    #[arg(long, conflicts_with = "client")]
    server: bool,
    /// Run only the client side, against `ferrodat perf --server` on HOST; the baselines
    /// that need no server (floor, least software HCA, memcpy, pipeline) run on this host.
    #[arg(long, value_name = "HOST")]
    client: Option<String>,
    /// The TCP control port of the server. Its DAT service point (PSP) listens on the first
    /// free port after it.
    #[arg(long, default_value_t = DEFAULT_PORT, value_name = "PORT")]
    port: u16,
    /// The address the server listens on.
    #[arg(long, value_name = "ADDR", default_value_t = IpAddr::V4(Ipv4Addr::UNSPECIFIED), requires = "server")]
    bind: IpAddr,
    /// The RDMA device (default: the first softhca device, softhca0 unless
    /// FERRODAT_SOFTHCA says otherwise; e.g. mlx5_0 for hardware). On two hosts over
    /// softhca, give each its own address: FERRODAT_SOFTHCA=softhca0=<this host's IP>.
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
    /// Print the results as one JSON object instead of the table.
    #[arg(long, conflicts_with = "server")]
    json: bool,
    /// Seconds each row runs, 0.01 to 3600 (after a warm-up of a tenth of that) [default: 2].
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, allow_negative_numbers = true, conflicts_with_all = ["iters", "server"])]
    duration: Option<f64>,
    /// Run each row for N round trips (latency; rounded up to whole samples of up to 100)
    /// or N messages (bandwidth) instead of a duration, after a warm-up of N/10.
    #[arg(long, value_name = "N", value_parser = parse_iters, allow_negative_numbers = true, conflicts_with = "server")]
    iters: Option<u64>,
    /// (internal) a baseline's helper process: KIND (floor, least-hca, pipeline) answers
    /// the run through the shared FILE.
    #[arg(long, value_name = "KIND:FILE", hide = true, exclusive = true, value_parser = baseline::parse_helper)]
    baseline_helper: Option<(baseline::Helper, PathBuf)>,
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number of seconds (e.g. 0.5)"))?;
    if !(v.is_finite() && (MIN_DURATION..=MAX_DURATION).contains(&v)) {
        return Err(format!(
            "{s} seconds: give a duration of at least {MIN_DURATION} (a shorter row has no \
             time to take a sample) and at most {MAX_DURATION}"
        ));
    }
    Ok(v)
}

/// `--iters`: a whole number of round trips or messages, at least 1.
fn parse_iters(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{s:?}: give a whole number of round trips or messages, at least 1")),
    }
}

/// Runs `ferrodat perf` as the arguments say; returns the text to print on stdout.
pub fn run(args: PerfArgs) -> Result<String, String> {
    use ferrodat_softhca::device::ENV_PROGRESS_THREAD;
    // Both sides poll all the time, as perftest's do: softhca's progress thread, which a DAT
    // IA starts for consumers that may block, would only compete with them for the cores
    // (measured 2026-11-28: p99 latencies up to 3.8-43 us, the 1 MiB stream 20-45% slower).
    // A user's explicit choice stands; the report says which was in effect.
    if std::env::var_os(ENV_PROGRESS_THREAD).is_none() {
        // SAFETY: `ferrodat perf` calls this from main before it starts any thread, so no
        // other thread reads or writes the environment meanwhile.
        unsafe { std::env::set_var(ENV_PROGRESS_THREAD, "0") };
    }
    if let Some((kind, path)) = &args.baseline_helper {
        baseline::helper(*kind, path)?;
        return Ok(String::new());
    }
    let device = match &args.device {
        Some(d) => d.clone(),
        None => default_device()?,
    };
    if args.server {
        let listener = TcpListener::bind((args.bind, args.port)).map_err(|e| {
            format!(
                "cannot listen on {}:{} ({e}): another ferrodat perf server may run there; \
                 pick another --port",
                args.bind, args.port
            )
        })?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        // The line local mode waits for (and a user sees): the port actually bound.
        println!("ferrodat perf server: listening on {addr}, device {device}");
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        let (stream, peer) =
            listener.accept().map_err(|e| format!("accepting the client on {addr} failed: {e}"))?;
        serve(stream, peer, &device, addr.port())?;
        return Ok(String::new());
    }
    let sizing = match (args.iters, args.duration) {
        (Some(n), _) => Sizing::Iters(n),
        (None, d) => Sizing::Duration(Duration::from_secs_f64(d.unwrap_or(DEFAULT_DURATION))),
    };
    let report = match &args.client {
        Some(host) => {
            interrupt::install()?;
            let addrs = resolve(host, args.port)?;
            let stream = connect_any(&addrs, CONNECT_TIMEOUT).map_err(|tried| {
                format!(
                    "cannot reach a ferrodat perf server at {host} (tried {tried}): start \
                     `ferrodat perf --server --port {}` there first",
                    args.port
                )
            })?;
            client(stream, &device, sizing, false)?
        }
        None => local(&device, sizing)?,
    };
    Ok(if args.json { report::json(&report) } else { report::table(&report) })
}

/// The first softhca device discovery finds.
fn default_device() -> Result<String, String> {
    use ferrodat_driver::discovery::{DeviceKind, discover};
    let found = discover();
    found
        .devices
        .iter()
        .find(|d| matches!(d.kind, DeviceKind::Softhca(_)))
        .map(|d| d.name.clone())
        .ok_or_else(|| {
            let skipped = if found.skipped.is_empty() {
                String::new()
            } else {
                format!(" ({})", found.skipped.join("; "))
            };
            format!(
                "no softhca device is configured{skipped}; set FERRODAT_SOFTHCA=softhca0=127.0.0.1 \
                 or name a device with --device"
            )
        })
}

/// Fails unless discovery finds `device`, naming the devices it found (or why it found
/// none).
fn check_device(device: &str) -> Result<(), String> {
    let found = ferrodat_driver::discovery::discover();
    if found.devices.iter().any(|d| d.name == device) {
        return Ok(());
    }
    Err(crate::missing_device(&found, device))
}

/// How long `--client` waits for each address of the server to answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Every address `host` resolves to, in the resolver's order (a name often has an IPv6 and
/// an IPv4 one, and the server listens on only one of them by default: 0.0.0.0).
fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| {
            // HOST:PORT in one argument, as other tools take it.
            let port_hint = match host.parse::<SocketAddr>() {
                Ok(a) => {
                    format!(" (give the port on its own: --client {} --port {})", a.ip(), a.port())
                }
                Err(_) => String::new(),
            };
            format!("cannot resolve --client {host:?}: {e}{port_hint}")
        })?
        .collect();
    if addrs.is_empty() {
        return Err(format!("--client {host:?} resolves to no address"));
    }
    Ok(addrs)
}

/// Connects to the first of `addrs` that answers, trying each in turn; else says what
/// was tried: `[::1]:18520: Connection refused (os error 111), 127.0.0.1:18520: …`.
fn connect_any(addrs: &[SocketAddr], timeout: Duration) -> Result<TcpStream, String> {
    let mut tried = Vec::with_capacity(addrs.len());
    for addr in addrs {
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(stream) => return Ok(stream),
            Err(e) => tried.push(format!("{addr}: {e}")),
        }
    }
    Err(tried.join(", "))
}

/// No arguments: a server child on the loopback, the client here.
fn local(device: &str, sizing: Sizing) -> Result<report::Report, String> {
    // A private softhca fabric directory, so the run neither sees nor disturbs other
    // softhca users of this host — unless the user chose one.
    let private_shm = if std::env::var_os(ferrodat_softhca::fabric::SHM_DIR_ENV).is_none() {
        let dir = std::env::temp_dir().join(format!("ferrodat-perf-shm-{}", std::process::id()));
        let dir = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from(format!("/dev/shm/ferrodat-perf-{}", std::process::id()))
        } else {
            dir
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create the softhca directory {}: {e}", dir.display()))?;
        // Removed however the run ends: an error, or a panic unwinding through here.
        let dir = RemoveOnDrop::new(dir);
        // SAFETY: `ferrodat perf` calls this from main before it starts any thread, so no
        // other thread reads or writes the environment meanwhile.
        unsafe { std::env::set_var(ferrodat_softhca::fabric::SHM_DIR_ENV, dir.path()) };
        Some(dir)
    } else {
        None
    };
    // After the environment is set (no other thread may run while it is).
    interrupt::install()?;
    let result = (|| {
        // Before the server child starts: it would report a missing device too, twice over.
        check_device(device)?;
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
        let mut server = ChildGuard::spawn(
            Command::new(exe)
                .args([
                    "perf",
                    "--server",
                    "--bind",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--device",
                    device,
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::piped()),
        )
        .map_err(|e| format!("cannot start the server process: {e}"))?;
        let stdout = server.child().stdout.take().ok_or("the server process has no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| format!("reading the server process's address: {e}"))?;
        let addr: SocketAddr = line
            .trim()
            .strip_prefix("ferrodat perf server: listening on ")
            .and_then(|rest| rest.split(',').next())
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| {
                format!(
                    "the server process did not start (it said {:?}; see its error above)",
                    line.trim()
                )
            })?;
        let stream = TcpStream::connect(addr)
            .map_err(|e| format!("cannot reach the server process at {addr}: {e}"))?;
        let report = client(stream, device, sizing, true)?;
        server.finish("the server process")?;
        Ok(report)
    })();
    // The server child (killed by its guard if still running) is gone before its
    // fabric directory.
    drop(private_shm);
    result
}

/// A scratch file or directory of the run (the private softhca fabric directory, a
/// baseline helper's shared file): removed when dropped, so on every way out of the run, a panic's
/// unwinding included, and by [`interrupt`] on a signal.
pub struct RemoveOnDrop(PathBuf);

impl RemoveOnDrop {
    pub fn new(path: PathBuf) -> Self {
        interrupt::add_path(&path);
        Self(path)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        interrupt::remove_path(&self.0);
        if self.0.is_dir() {
            let _ = std::fs::remove_dir_all(&self.0);
        } else {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// A child process of the run (the local server, a baseline's helper): killed and
/// reaped if the run ends before it does, by [`interrupt`] on a signal.
pub struct ChildGuard(Child);

impl ChildGuard {
    /// Starts `command` as a child of the run (see [`interrupt::spawn_child`]).
    pub fn spawn(command: &mut Command) -> std::io::Result<Self> {
        interrupt::spawn_child(command).map(Self)
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.0
    }

    /// Waits for the child, `what` in the errors (e.g. "the server process").
    fn finish(mut self, what: &str) -> Result<(), String> {
        // It stays registered (killed on a signal) until it has ended, and is deregistered
        // before it is reaped: the interrupt thread never signals a reused pid.
        interrupt::wait_until_ended(self.0.id());
        interrupt::remove_child(self.0.id());
        let status = self.0.wait().map_err(|e| format!("waiting for {what}: {e}"))?;
        if !status.success() {
            return Err(format!("{what} failed ({status}); its error is above"));
        }
        Ok(())
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        interrupt::remove_child(self.0.id());
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The client: the baselines, the QP, every row; the server serves each in turn.
fn client(
    stream: TcpStream,
    device: &str,
    sizing: Sizing,
    local: bool,
) -> Result<report::Report, String> {
    let server = stream.peer_addr().map_err(|e| e.to_string())?;
    let mut ctl = Control::new(stream)?;
    let (server_device, server_progress_thread) = ctl.hello_client()?;
    let resources = rdma::Resources::open(device)?;
    let mr = resources.alloc_mr()?;
    let mut side = rdma::Side::new(&resources, &mr)?;
    let peer = ctl.exchange_qp_client(&side.local_info())?;
    side.connect(&peer)?;
    // The DAT endpoint: the server opens a PSP and says where; we connect to it.
    let mut dat_side = dat::Side::open(device)?;
    let dat_peer = ctl.exchange_dat_client(&dat_side.local_info())?;
    dat_side.set_peer(&dat_peer);
    if let Some((address, conn_qual)) = dat_peer.listen {
        dat_side.connect(address, conn_qual)?;
    }
    ctl.expect("READY")?;

    let rows_planned = plan::rows();
    let mut progress = Progress::new(rows_planned.len(), sizing);
    let started = Instant::now();
    let mut rows = Vec::with_capacity(rows_planned.len());
    // Rows measured ahead of their place in the table (in turns with an earlier row).
    let mut measured: Vec<(Test, Measured)> = Vec::new();
    for (i, test) in rows_planned.iter().enumerate() {
        progress.row(i, &test.title(local));
        // Rows compared with each other are measured in turns (plan::turns, SLICES):
        // all are taken when the first comes up, and reported in the rows' order.
        if let Some(at) = measured.iter().position(|(t, _)| t == test) {
            let (test, so_far) = measured.remove(at);
            rows.push(Row { test, title: test.title(local), result: so_far.outcome() });
            continue;
        }
        let mut slice = |test: Test, sizing: Sizing| -> Result<Measured, String> {
            Ok(match test {
                Test::SendRecv(Level::Dat, n) => {
                    Measured::Latency(workload::send_recv(&mut dat_side, &mut ctl, n, sizing)?)
                }
                Test::WriteLat(Level::Dat, n) => {
                    Measured::Latency(workload::write_lat(&mut dat_side, &mut ctl, n, sizing)?)
                }
                Test::ReadLat(Level::Dat, n) => {
                    Measured::Latency(workload::read_lat(&mut dat_side, &mut ctl, n, sizing)?)
                }
                Test::WriteBw(Level::Dat, n) => {
                    Measured::Bandwidth(workload::write_bw(&mut dat_side, &mut ctl, n, sizing)?)
                }
                Test::SendRecv(_, n) => {
                    Measured::Latency(workload::send_recv(&mut side, &mut ctl, n, sizing)?)
                }
                Test::WriteLat(_, n) => {
                    Measured::Latency(workload::write_lat(&mut side, &mut ctl, n, sizing)?)
                }
                Test::ReadLat(_, n) => {
                    Measured::Latency(workload::read_lat(&mut side, &mut ctl, n, sizing)?)
                }
                Test::WriteBw(_, n) => {
                    Measured::Bandwidth(workload::write_bw(&mut side, &mut ctl, n, sizing)?)
                }
                Test::Floor => Measured::Latency(baseline::floor(sizing)?),
                Test::LeastHca => Measured::Latency(baseline::least_hca(sizing)?),
                Test::Tcp(n) => Measured::Latency(baseline::tcp(&mut ctl, n, sizing)?),
                Test::Memcpy(n) => Measured::Bandwidth(baseline::memcpy(n, sizing)),
                Test::Pipeline(n) => Measured::Bandwidth(baseline::pipeline(n, sizing)?),
            })
        };
        let turns = plan::turns(*test);
        let slices = if turns.len() > 1 { SLICES } else { 1 };
        let mut so_far: Vec<Measured> = Vec::with_capacity(turns.len());
        for &t in &turns {
            so_far.push(slice(t, sizing.slice(slices))?);
        }
        for _ in 1..slices {
            for (&t, row) in turns.iter().zip(&mut so_far) {
                row.absorb(slice(t, sizing.slice(slices))?);
            }
        }
        let mut taken = turns.into_iter().zip(so_far);
        let (first, result) = taken.next().expect("a test takes turns with itself");
        rows.push(Row { test: first, title: first.title(local), result: result.outcome() });
        measured.extend(taken);
    }
    progress.finish();
    dat_side.disconnect()?;
    ctl.bye()?;
    Ok(report::Report {
        device: device.to_string(),
        server_device,
        server: server.to_string(),
        server_progress_thread,
        local,
        sizing,
        seconds: started.elapsed().as_secs_f64(),
        rows,
    })
}

/// The server: answers one client's run, then returns. `port` is the control port it
/// listens on, which its PSP's connection qualifier follows.
fn serve(stream: TcpStream, peer: SocketAddr, device: &str, port: u16) -> Result<(), String> {
    let mut ctl = Control::new(stream)?;
    ctl.hello_server(device, report::progress_thread_setting())
        .map_err(|e| format!("client {peer}: {e}"))?;
    let resources = rdma::Resources::open(device)?;
    let mr = resources.alloc_mr()?;
    let mut side = rdma::Side::new(&resources, &mr)?;
    ctl.exchange_qp_server(|info| {
        side.connect(info)?;
        Ok(side.local_info())
    })?;
    let mut dat_side: Option<dat::Side> = None;
    loop {
        match ctl.next_command()? {
            control::Command::Tcp(size) => baseline::tcp_echo(&mut ctl, size)?,
            control::Command::Run(job) => workload::serve(&mut side, &mut ctl, job)?,
            control::Command::Dat(client) => {
                dat_side = Some(dat_server(&mut ctl, device, port, &client)?);
            }
            control::Command::RunDat(job) => match dat_side.as_mut() {
                Some(d) => workload::serve(d, &mut ctl, job)?,
                None => return Err(ctl.fail("a DAT job before the DAT setup".into())),
            },
            control::Command::Bye => return Ok(()),
        }
    }
}

/// Server: the DAT endpoint for `client`: opened, its PSP on a qualifier after `port`
/// told to the client, the client's request accepted, READY once the EP is connected.
fn dat_server(
    ctl: &mut Control,
    device: &str,
    port: u16,
    client: &control::DatInfo,
) -> Result<dat::Side, String> {
    let mut side = dat::Side::open(device).map_err(|e| ctl.fail(e))?;
    let listen = side.listen(port).map_err(|e| ctl.fail(e))?;
    let mut info = side.local_info();
    info.listen = Some(listen);
    ctl.answer_dat(&info)?;
    side.set_peer(client);
    side.accept().map_err(|e| ctl.fail(e))?;
    ctl.send("READY")?;
    Ok(side)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_goes_when_a_panic_unwinds_past_it() {
        let dir =
            std::env::temp_dir().join(format!("ferrodat-remove-on-drop-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/file"), b"x").unwrap();
        let file = dir.with_extension("file");
        std::fs::write(&file, b"x").unwrap();
        let unwound = std::panic::catch_unwind(|| {
            let _dir = RemoveOnDrop::new(dir.clone());
            let _file = RemoveOnDrop::new(file.clone());
            panic!("a failure in the middle of a run");
        });
        assert!(unwound.is_err());
        assert!(!dir.exists(), "{}", dir.display());
        assert!(!file.exists(), "{}", file.display());
    }

    #[test]
    fn a_client_tries_each_address_of_the_server_in_turn() {
        // The server's default --bind: IPv4 only. A name's first address is often IPv6.
        let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let v6: SocketAddr = (std::net::Ipv6Addr::LOCALHOST, port).into();
        let v4: SocketAddr = (Ipv4Addr::LOCALHOST, port).into();
        let stream = connect_any(&[v6, v4], Duration::from_secs(5)).unwrap();
        assert_eq!(stream.peer_addr().unwrap(), v4);
        let (_, from) = listener.accept().unwrap();
        assert_eq!(from, stream.local_addr().unwrap());
        // Nothing answers: each address is named with its error.
        drop((stream, listener));
        let err = connect_any(&[v6, v4], Duration::from_secs(5)).unwrap_err();
        assert!(err.starts_with(&format!("[::1]:{port}: ")), "{err}");
        assert!(err.contains(&format!(", 127.0.0.1:{port}: ")), "{err}");
    }

    #[test]
    fn durations_too_short_for_a_sample_are_refused() {
        assert_eq!(parse_seconds("0.01"), Ok(0.01));
        assert_eq!(parse_seconds("3600"), Ok(3600.0));
        for bad in ["0.00000001", "0.009", "0", "-1", "3601", "inf", "NaN"] {
            let err = parse_seconds(bad).unwrap_err();
            assert!(err.contains("at least 0.01") && err.contains(bad), "{bad}: {err}");
        }
    }
}
