//! The baselines, measured in the same run as the ferrodat rows: the shared-memory floor,
//! TCP ping-pong and single-core memcpy.

use super::control::Control;
use super::plan::{Outcome, Sizing, Timed, timed_groups};
use super::{ChildGuard, RemoveOnDrop};
use ferrodat_engine::perf::floor::{STALL, SharedLine, Stalled};
use ferrodat_engine::perf::stats::summarize;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Largest TCP message the server echoes.
const MAX_TCP_MESSAGE: usize = 16 << 20;
/// First byte of a TCP ping-pong message: go on, or this was the last one.
const TCP_CONTINUE: u8 = 0;
const TCP_STOP: u8 = 1;

/// The floor: this process and a helper (this executable, `perf --floor-helper`) bounce
/// one cache line of shared memory; half the round trip. One slice of the floor's row
/// (see [`super::plan::turns`]).
pub fn floor(sizing: Sizing) -> Result<Timed, String> {
    let dir = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("ferrodat-perf-floor-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let _remove = RemoveOnDrop::new(path.clone());
    {
        let line = SharedLine::map(&path)
            .map_err(|e| format!("cannot map the floor's shared line {}: {e}", path.display()))?;
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
        let child = Command::new(exe)
            .arg("perf")
            .arg("--floor-helper")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the floor's helper process: {e}"))?;
        let mut helper = ChildGuard::new(child);
        let mut ready = String::new();
        if let Some(out) = helper.child().stdout.take() {
            BufReader::new(out)
                .read_line(&mut ready)
                .map_err(|e| format!("reading the floor helper: {e}"))?;
        }
        if ready.trim() != "READY" {
            return Err("the floor's helper process did not start (see its error above)".into());
        }
        let group = sizing.group();
        // A helper that dies (or is killed) stops answering: the run ends with an error
        // naming it instead of spinning forever.
        let stalled = |e: Stalled, helper: &mut ChildGuard| {
            let pid = helper.child().id();
            // The look below may reap it: deregistered first, so the interrupt thread never
            // signals its pid once reused (the helper dies with this process anyway).
            super::interrupt::remove_child(pid);
            let state = match helper.child().try_wait() {
                Ok(Some(status)) => format!("it ended: {status}"),
                _ => "it is still running, but got no CPU time or is stuck".to_string(),
            };
            format!(
                "the floor's helper process (pid {pid}, perf --floor-helper) stopped answering: {e}; {state}"
            )
        };
        let mut warm = sizing.warmup().meter();
        line.ping_while(group, STALL, |_| {
            let more = warm.more();
            warm.add(u64::from(group));
            more
        })
        .map_err(|e| stalled(e, &mut helper))?;
        let mut meter = sizing.meter();
        let samples = line
            .ping_while(group, STALL, |_| {
                let more = meter.more();
                meter.add(u64::from(group));
                more
            })
            .map_err(|e| stalled(e, &mut helper))?;
        line.stop();
        helper.finish("the floor's helper process")?;
        Ok(Timed::new((samples, group), true))
    }
}

/// The floor's helper process: answers the cache line until told to stop.
pub fn floor_helper(path: &Path) -> Result<(), String> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and no pointers: the helper
    // spins, so it must die with the process that started it.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let line = SharedLine::map(path)
        .map_err(|e| format!("floor helper: cannot map {}: {e}", path.display()))?;
    println!("READY");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    line.pong();
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
pub fn tcp(ctl: &mut Control, size: usize, sizing: Sizing) -> Result<Outcome, String> {
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
    Ok(Outcome::Latency {
        summary: summarize(&samples, group).halved(),
        samples: samples.len(),
        group,
    })
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
