//! What the tests of C DAT consumers share: the built provider library, a private world (a
//! dat.conf naming it, a softhca fabric directory) and a server/client pair of processes
//! whose output is collected (the stock test programs' exit codes say nothing).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use super::private_net::{PrivateNet, private_net_or_host};

/// The IA name the tests' dat.conf gives the provider.
pub const IA_NAME: &str = "ferro-test0";

/// The workspace's root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `libferrodat.so`, built (debug) on first use.
pub fn provider_lib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace().join("target"));
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "ferrodat-capi"])
            .current_dir(workspace())
            .env("CARGO_TARGET_DIR", &target)
            .status()
            .expect("run cargo build -p ferrodat-capi");
        assert!(status.success(), "cargo build -p ferrodat-capi failed");
        let lib = target.join("debug").join("libferrodat.so");
        assert!(lib.exists(), "{} missing after the build", lib.display());
        lib.canonicalize().unwrap()
    })
}

/// One pair of programs at a time in this process: heavy runs would starve each other's
/// timeouts on two cores. (Their fixed TCP ports, 15828 for the stock programs' address
/// exchange, 45248 and 62000 as connection qualifiers, no longer need it where each world
/// has its own network namespace.)
pub fn port_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A private world: a dat.conf with one entry for the provider on softhca0 (127.0.0.1), a
/// fabric directory the processes meet in and, where it can be made, a network namespace
/// of its own (see `private_net`). Removed on drop.
pub struct DatWorld {
    pub dir: PathBuf,
    shm: PathBuf,
    net: Option<PrivateNet>,
}

impl DatWorld {
    pub fn new(tag: &str) -> DatWorld {
        DatWorld::with_instance_data(tag, "softhca0 1 127.0.0.1")
    }

    /// As [`DatWorld::new`], with the entry's instance data ("device port ip") given.
    pub fn with_instance_data(tag: &str, instance_data: &str) -> DatWorld {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!("ferrodat-dat-{tag}-{}-{nanos}", std::process::id());
        let dir = std::env::temp_dir().join(&name);
        let shm = Path::new("/dev/shm").join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&shm).unwrap();
        let conf = format!(
            "# written by the ferrodat tests\n{IA_NAME} u2.0 nonthreadsafe default {} \
             ferrodat.2.0 \"{instance_data}\" \"\"\n",
            provider_lib().display()
        );
        std::fs::write(dir.join("dat.conf"), conf).unwrap();
        DatWorld { dir, shm, net: private_net_or_host() }
    }

    /// `program args…` in this world: libdat2 reads our dat.conf, softhca meets its peers
    /// in our fabric and serves one-sided operations from its progress thread while the
    /// program blocks elsewhere, and failing calls say why on stderr.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Command {
        let mut cmd = match &self.net {
            Some(net) => net.command(program),
            None => Command::new(program),
        };
        cmd.args(args)
            .current_dir(&self.dir)
            .env("DAT_OVERRIDE", self.dir.join("dat.conf"))
            .env("FERRODAT_SOFTHCA_SHM_DIR", &self.shm)
            .env_remove("FERRODAT_SOFTHCA_PROGRESS_THREAD")
            .env("FERRODAT_TRACE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }
}

impl DatWorld {
    /// As [`DatWorld::command`], with stdout line-buffered (`stdbuf -oL`): the stock
    /// programs print their progress without flushing it, and the tests wait for it.
    pub fn stock(&self, program: &str, args: &[&str]) -> Command {
        let mut all = vec!["-oL", program];
        all.extend_from_slice(args);
        self.command("stdbuf", &all)
    }
}

impl Drop for DatWorld {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_dir_all(&self.shm);
    }
}

/// A finished (or killed) program's output, stdout and stderr interleaved by line arrival.
#[derive(Debug)]
pub struct Run {
    pub output: String,
    pub timed_out: bool,
}

impl Run {
    /// The last `n` lines, for failure messages.
    pub fn tail(&self, n: usize) -> String {
        let lines: Vec<&str> = self.output.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

/// A running program whose output lines arrive on a channel.
pub struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: String,
}

impl Running {
    pub fn spawn(mut cmd: Command) -> Running {
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        let (tx, rx) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Running { child, lines: rx, seen: String::new() }
    }

    /// Waits until a line containing `marker` arrives; false if the program ended or
    /// `timeout` passed first.
    pub fn wait_for(&mut self, marker: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let hit = line.contains(marker);
                    self.seen.push_str(&line);
                    self.seen.push('\n');
                    if hit {
                        return true;
                    }
                }
                Err(_) => return false,
            }
        }
    }

    /// What the program printed up to the line [`Running::wait_for`] last stopped at.
    pub fn seen(&self) -> &str {
        &self.seen
    }

    /// Collects the rest of the output; kills the program if it is not done by `timeout`.
    pub fn finish(mut self, timeout: Duration) -> Run {
        let deadline = Instant::now() + timeout;
        let mut timed_out = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push_str(&line);
                    self.seen.push('\n');
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    timed_out = true;
                    let _ = self.child.kill();
                    break;
                }
            }
        }
        let _ = self.child.wait();
        Run { output: std::mem::take(&mut self.seen), timed_out }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A test that panics between spawn and finish leaves no stray process behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl DatWorld {
    /// True once something in this world's network listens on TCP `port` (any address),
    /// from its /proc/net/tcp{,6}: connecting to find out would use up a server's only
    /// accept.
    pub fn listening(&self, port: u16) -> bool {
        let tables = match &self.net {
            Some(net) => net.tcp_tables(),
            None => ["/proc/net/tcp", "/proc/net/tcp6"].map(PathBuf::from),
        };
        let wanted = format!(":{port:04X}");
        tables.iter().any(|table| {
            std::fs::read_to_string(table).unwrap_or_default().lines().skip(1).any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                // local_address is "ADDR:PORT" in hex; state 0A is LISTEN.
                f.len() > 3 && f[1].ends_with(&wanted) && f[3] == "0A"
            })
        })
    }
}

/// The TCP port the stock dtest programs exchange addresses on (the server listens on it
/// only after printing that it waits for the client).
pub const OOB_PORT: u16 = 15828;

/// Runs `server` until it prints `ready` (and, if `port` is given, listens there), then
/// `client`; returns both outputs.
pub fn server_then_client(
    world: &DatWorld,
    mut server: Running,
    ready: &str,
    port: Option<u16>,
    client: Command,
    timeout: Duration,
) -> (Run, Run) {
    if !server.wait_for(ready, Duration::from_secs(60)) {
        let run = server.finish(Duration::from_secs(1));
        panic!("the server never printed {ready:?}:\n{}", run.tail(30));
    }
    if let Some(port) = port {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !world.listening(port) {
            assert!(Instant::now() < deadline, "the server never listened on TCP {port}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let client = Running::spawn(client);
    let client_run = client.finish(timeout);
    let server_run = server.finish(Duration::from_secs(30));
    (server_run, client_run)
}

/// Runs a stock server and client that exchange addresses on [`OOB_PORT`], starting the
/// client once the server printed `ready` and listens there. (dtest's and dtestx's servers
/// create their PSP only after handing the client their address; the connection manager
/// keeps trying a refused connect for a moment, as an IB CM resends its REQ, so the pair
/// runs once.)
pub fn oob_pair(
    world: &DatWorld,
    program: &str,
    server_args: &[&str],
    ready: &str,
    client_args: &[&str],
    timeout: Duration,
) -> (Run, Run) {
    let mut server = Running::spawn(world.stock(program, server_args));
    if !server.wait_for(ready, Duration::from_secs(60)) {
        let run = server.finish(Duration::from_secs(1));
        panic!("{program}: the server never printed {ready:?}:\n{}", run.tail(30));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !world.listening(OOB_PORT) {
        assert!(Instant::now() < deadline, "{program}: the server never listened on {OOB_PORT}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let client = Running::spawn(world.stock(program, client_args)).finish(timeout);
    (server.finish(Duration::from_secs(30)), client)
}

/// Compiles the DAT consumer `source` (a path in the workspace) with the installed DAT 2.0
/// headers and libdat2 into `world` as `name`; None (with a note) without the headers.
/// Warnings are errors: the C we ship compiles cleanly.
pub fn build_c_consumer(world: &DatWorld, source: &str, name: &str) -> Option<PathBuf> {
    if !Path::new("/usr/include/dat2/udat.h").exists() {
        eprintln!("/usr/include/dat2 missing (apt-get install libdapl-dev); nothing to run");
        return None;
    }
    let source = workspace().join(source);
    let exe = world.dir.join(name);
    let out = Command::new("cc")
        .args(["-Wall", "-Wextra", "-Werror", "-pthread", "-o"])
        .arg(&exe)
        .arg(&source)
        .arg("-ldat2")
        .output()
        .expect("run cc (install a C compiler)");
    assert!(
        out.status.success(),
        "compiling {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}
