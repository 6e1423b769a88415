//! The baselines, measured in the same run as the ferrodat rows: the shared-memory floor,
//! the least software HCA, TCP ping-pong, single-core memcpy and the two-copy pipeline.
//!
//! The floor, the least software HCA and the pipeline each run against a helper process
//! (this executable, `perf --baseline-helper KIND:FILE`) that answers through a shared
//! file; the helper dies with this process.

use super::control::Control;
use super::plan::{Outcome, Sizing, Timed, timed_groups};
use super::{ChildGuard, RemoveOnDrop};
use ferrodat_engine::perf::floor::{STALL, SharedLine};
use ferrodat_engine::perf::least_hca::{End, LeastHca};
use ferrodat_engine::perf::pipeline::Pipeline;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Largest TCP message the server echoes.
const MAX_TCP_MESSAGE: usize = 16 << 20;
/// First byte of a TCP ping-pong message: go on, or this was the last one.
const TCP_CONTINUE: u8 = 0;
const TCP_STOP: u8 = 1;

/// The pid of the run that started a helper (the helper checks it is still its parent).
const HELPER_PARENT_ENV: &str = "FERRODAT_PERF_HELPER_PARENT";

/// What a helper process answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Helper {
    /// The floor's cache line.
    Floor,
    /// The least software HCA's ping-pong.
    LeastHca,
    /// The two-copy pipeline's consumer.
    Pipeline,
}

impl Helper {
    const ALL: [Helper; 3] = [Helper::Floor, Helper::LeastHca, Helper::Pipeline];

    fn name(self) -> &'static str {
        match self {
            Helper::Floor => "floor",
            Helper::LeastHca => "least-hca",
            Helper::Pipeline => "pipeline",
        }
    }

    /// What the errors call it.
    fn title(self) -> String {
        format!("the {} helper process", self.name())
    }
}

/// `KIND:FILE`, as `--baseline-helper` takes it.
pub fn parse_helper(s: &str) -> Result<(Helper, PathBuf), String> {
    let (kind, file) = s.split_once(':').ok_or_else(|| format!("{s:?}: give KIND:FILE"))?;
    let kind = Helper::ALL.into_iter().find(|h| h.name() == kind).ok_or_else(|| {
        let kinds: Vec<_> = Helper::ALL.iter().map(|h| h.name()).collect();
        format!("{kind:?} is not a helper: one of {}", kinds.join(", "))
    })?;
    Ok((kind, PathBuf::from(file)))
}

/// A scratch file for a helper's shared memory, removed when dropped.
fn scratch_file(kind: Helper) -> RemoveOnDrop {
    let dir = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("ferrodat-perf-{}-{}", kind.name(), std::process::id()));
    let _ = std::fs::remove_file(&path);
    RemoveOnDrop::new(path)
}

/// Starts the `kind` helper on `path` (which this process has set up) and waits until it
/// is ready.
fn start_helper(kind: Helper, path: &Path) -> Result<ChildGuard, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let arg = format!("{}:{}", kind.name(), path.display());
    let mut helper = ChildGuard::spawn(
        Command::new(exe)
            .args(["perf", "--baseline-helper", &arg])
            .env(HELPER_PARENT_ENV, std::process::id().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped()),
    )
    .map_err(|e| format!("cannot start {}: {e}", kind.title()))?;
    let mut ready = String::new();
    if let Some(out) = helper.child().stdout.take() {
        BufReader::new(out)
            .read_line(&mut ready)
            .map_err(|e| format!("reading {}: {e}", kind.title()))?;
    }
    if ready.trim() != "READY" {
        return Err(format!("{} did not start (see its error above)", kind.title()));
    }
    Ok(helper)
}

/// The error of a run whose helper stopped answering (`error` says how): names the helper
/// and what became of it.
fn helper_stopped(helper: &mut ChildGuard, kind: Helper, error: String) -> String {
    let pid = helper.child().id();
    // The look below may reap it: deregistered first, so the interrupt thread never
    // signals its pid once reused (the helper dies with this process anyway).
    super::interrupt::remove_child(pid);
    let state = match helper.child().try_wait() {
        Ok(Some(status)) => format!("it ended: {status}"),
        _ => "it is still running, but got no CPU time or is stuck".to_string(),
    };
    let name = kind.name();
    format!(
        "the {name} helper process (pid {pid}, perf --baseline-helper {name}:…) stopped \
         answering: {error}; {state}"
    )
}

/// One slice of a ping-pong baseline's row against a `kind` helper: the initiator `open`s
/// the shared file, the helper starts, `ping(initiator, group, more)` takes samples of
/// `group` round trips while `more` says (a warm-up, then the slice), `stop` ends the
/// helper. Half the round trip.
fn ping_pong<P, E: ToString>(
    kind: Helper,
    sizing: Sizing,
    open: impl FnOnce(&Path) -> Result<P, String>,
    mut ping: impl FnMut(&mut P, u32, &mut dyn FnMut() -> bool) -> Result<Vec<Duration>, E>,
    stop: impl FnOnce(&P),
) -> Result<Timed, String> {
    let file = scratch_file(kind);
    let mut initiator = open(file.path())?;
    let mut helper = start_helper(kind, file.path())?;
    let group = sizing.group();
    let mut run = |sizing: Sizing| {
        let mut meter = sizing.meter();
        ping(&mut initiator, group, &mut || {
            let more = meter.more();
            meter.add(u64::from(group));
            more
        })
        .map_err(|e| helper_stopped(&mut helper, kind, e.to_string()))
    };
    run(sizing.warmup())?;
    let samples = run(sizing)?;
    stop(&initiator);
    helper.finish(&kind.title())?;
    Ok(Timed::new((samples, group), true))
}

/// The floor: this process and a helper bounce one cache line of shared memory; half the
/// round trip. One slice of the floor's row (see [`super::plan::turns`]).
pub fn floor(sizing: Sizing) -> Result<Timed, String> {
    ping_pong(
        Helper::Floor,
        sizing,
        |path| {
            SharedLine::map(path)
                .map_err(|e| format!("cannot map the floor's shared line {}: {e}", path.display()))
        },
        |line, group, more| line.ping_while(group, STALL, |_| more()),
        SharedLine::stop,
    )
}

/// The least software HCA: an 8-byte SEND/RECV ping-pong with a helper through the least
/// work a software HCA does per message (`ferrodat_engine::perf::least_hca`); half the
/// round trip.
/// One slice of its row (it takes turns with the floor).
pub fn least_hca(sizing: Sizing) -> Result<Timed, String> {
    ping_pong(
        Helper::LeastHca,
        sizing,
        |path| LeastHca::open(path, End::Initiator),
        |hca, group, more| hca.ping_while(group, STALL, |_| more()),
        LeastHca::stop,
    )
}

/// The two-copy pipeline: messages of `size` bytes copied through a shared ring into a
/// helper's buffer (`ferrodat_engine::perf::pipeline`).
pub fn pipeline(size: usize, sizing: Sizing) -> Result<Outcome, String> {
    let file = scratch_file(Helper::Pipeline);
    let pipe = Pipeline::create(file.path(), size)?;
    let source: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let mut helper = start_helper(Helper::Pipeline, file.path())?;
    let mut stream = |sizing: Sizing| {
        let mut meter = sizing.meter();
        pipe.stream_while(&source, STALL, |_| {
            let more = meter.more();
            meter.add(1);
            more
        })
        .map_err(|e| helper_stopped(&mut helper, Helper::Pipeline, e))
    };
    stream(sizing.warmup())?;
    let (messages, elapsed) = stream(sizing)?;
    pipe.stop();
    helper.finish(&Helper::Pipeline.title())?;
    Ok(Outcome::Bandwidth {
        bytes: messages * size as u64,
        messages,
        seconds: elapsed.as_secs_f64(),
    })
}

/// A helper process: answers through `path` until the run tells it to stop.
pub fn helper(kind: Helper, path: &Path) -> Result<(), String> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and no pointers: the helper
    // spins, so it must die with the process that started it.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    // A run killed before that call took effect sends no signal: then this process has
    // another parent already, and must not start spinning.
    let Some(started_by) =
        std::env::var(HELPER_PARENT_ENV).ok().and_then(|p| p.parse::<u32>().ok())
    else {
        return Err(format!(
            "--baseline-helper is for the processes ferrodat perf starts itself \
             ({HELPER_PARENT_ENV} names the run); run `ferrodat perf` instead"
        ));
    };
    if started_by != std::os::unix::process::parent_id() {
        return Err(format!("{}: the run that started it has ended", kind.title()));
    }
    let ready = || {
        println!("READY");
        std::io::stdout().flush().map_err(|e| e.to_string())
    };
    match kind {
        Helper::Floor => {
            let line = SharedLine::open(path)
                .map_err(|e| format!("floor helper: cannot map {}: {e}", path.display()))?;
            ready()?;
            line.pong();
        }
        Helper::LeastHca => {
            let mut hca = LeastHca::open(path, End::Responder)?;
            ready()?;
            hca.pong()?;
        }
        Helper::Pipeline => {
            let pipe = Pipeline::open(path)?;
            let mut dest = vec![0u8; pipe.message_bytes()?];
            ready()?;
            pipe.drain(&mut dest)?;
        }
    }
    Ok(())
}

/// Single-core memcpy bandwidth: one buffer of `size` bytes copied into another, over and
/// over.
pub fn memcpy(size: usize, sizing: Sizing) -> Outcome {
    let src: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let mut dst = vec![0u8; size];
    let mut copy = |sizing: Sizing| {
        let mut meter = sizing.meter();
        let start = Instant::now();
        let mut copies = 0u64;
        while meter.more() {
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&mut dst);
            copies += 1;
            meter.add(1);
        }
        (copies, start.elapsed().as_secs_f64())
    };
    copy(sizing.warmup());
    let (copies, seconds) = copy(sizing);
    Outcome::Bandwidth { bytes: copies * size as u64, messages: copies, seconds }
}

/// TCP ping-pong of `size`-byte messages with the server over the control connection;
/// half the round trip.
pub fn tcp(ctl: &mut Control, size: usize, sizing: Sizing) -> Result<Timed, String> {
    ctl.start_tcp(size)?;
    let mut message = vec![0x5a; size];
    message[0] = TCP_CONTINUE;
    let mut answer = vec![0u8; size];
    let (samples, group) = timed_groups(sizing, || {
        ctl.write_all(&message)?;
        ctl.read_exact(&mut answer)
    })?;
    message[0] = TCP_STOP;
    ctl.write_all(&message)?;
    ctl.wait_done()?;
    Ok(Timed::new((samples, group), true))
}

/// Server: echoes `size`-byte messages until one starts with the stop byte.
pub fn tcp_echo(ctl: &mut Control, size: usize) -> Result<(), String> {
    if !(1..=MAX_TCP_MESSAGE).contains(&size) {
        return Err(ctl.fail(format!("TCP message of {size} bytes: use 1 to {MAX_TCP_MESSAGE}")));
    }
    let mut buf = vec![0u8; size];
    ctl.send("GO")?;
    loop {
        ctl.read_exact(&mut buf)?;
        if buf[0] == TCP_STOP {
            break;
        }
        ctl.write_all(&buf)?;
    }
    ctl.send("DONE")
}
