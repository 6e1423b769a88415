//! What the two-process latency benchmarks share: sizing from the environment, the floor
//! — two processes bouncing one cache line — and the least software HCA, both measured in
//! the same run as the benchmark's own rows.

#[path = "../../softhca/tests/support/child.rs"]
#[allow(dead_code)]
pub mod child;

use crate::floor::{STALL, SharedLine};
use crate::least_hca::{End, LeastHca};
use crate::stats::{Summary, summarize};
use child::{ChildProc, say};

/// The environment variable that hands the floor's or the least software HCA's child its
/// shared file.
pub const FLOOR_PATH_ENV: &str = "FERRODAT_BENCH_FLOOR_PATH";

/// The role of the child process that answers the floor's ping.
pub const FLOOR_ROLE: &str = "floor";

/// The role of the child process that answers the least software HCA's ping-pong.
pub const LEAST_HCA_ROLE: &str = "least-hca";

/// `name` from the environment as a number, `default` when unset or not a number.
pub fn env_or(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The floor's child: answers every ping on the shared line until killed.
pub fn floor_child() {
    let path = std::env::var(FLOOR_PATH_ENV).expect("the floor's line path");
    let line = SharedLine::open(std::path::Path::new(&path)).expect("map the floor line");
    say("READY");
    line.pong();
}

/// The half round trip of a ping-pong against a child of this binary in `role`, through
/// a shared file in /dev/shm named after `name`: `open` maps it (before the child starts),
/// `ping(initiator, samples)` takes `samples` samples of `rounds` round trips, `stop` ends
/// the child; the first tenth (and one) of the samples are a warm-up.
fn measure_against_child<P>(
    name: &str,
    role: &str,
    samples: usize,
    rounds: u32,
    open: impl FnOnce(&std::path::Path) -> P,
    ping: impl FnOnce(&mut P, usize) -> Vec<std::time::Duration>,
    stop: impl FnOnce(&P),
) -> Summary {
    let path =
        std::path::PathBuf::from(format!("/dev/shm/ferrodat-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let mut initiator = open(&path);
    let mut child =
        ChildProc::spawn("", role, &[(FLOOR_PATH_ENV, path.to_str().expect("utf-8 path"))]);
    child.expect("READY");
    let warmup = samples / 10 + 1;
    let rtt = ping(&mut initiator, warmup + samples);
    stop(&initiator);
    drop(child);
    let _ = std::fs::remove_file(&path);
    summarize(&rtt[warmup..], rounds).halved()
}

/// The floor's half round trip: `samples` samples of `rounds` round trips each (after a
/// tenth as many warm-up samples), against a child of this binary in [`FLOOR_ROLE`].
pub fn measure_floor(samples: usize, rounds: u32) -> Summary {
    measure_against_child(
        "floor",
        FLOOR_ROLE,
        samples,
        rounds,
        |path| SharedLine::map(path).expect("map the floor line"),
        // `ping` stops the child itself.
        |line, total| line.ping(total, rounds).unwrap_or_else(|e| panic!("the floor's child: {e}")),
        |_| {},
    )
}

/// The least software HCA's child: echoes every message until the parent stops it.
pub fn least_hca_child() {
    let path = std::env::var(FLOOR_PATH_ENV).expect("the least software HCA's file");
    let mut hca = LeastHca::open(std::path::Path::new(&path), End::Responder)
        .unwrap_or_else(|e| panic!("{e}"));
    say("READY");
    hca.pong().unwrap_or_else(|e| panic!("{e}"));
}

/// The least software HCA's half round trip (`ferrodat_engine::perf::least_hca`):
/// `samples` samples of `rounds` round trips each (after a tenth as many warm-up samples),
/// against a child of this binary in [`LEAST_HCA_ROLE`].
pub fn measure_least_hca(samples: usize, rounds: u32) -> Summary {
    measure_against_child(
        "least-hca",
        LEAST_HCA_ROLE,
        samples,
        rounds,
        |path| LeastHca::open(path, End::Initiator).unwrap_or_else(|e| panic!("{e}")),
        |hca, total| {
            hca.ping_while(rounds, STALL, |taken| taken < total).unwrap_or_else(|e| panic!("{e}"))
        },
        LeastHca::stop,
    )
}
