//! Two-process 8-byte SEND/RECV latency through the ferrodat driver over softhca, next to
//! the floor (two processes bouncing one cache line) and to unmodified rdma-core on
//! softhca (perftest's `ib_send_lat` through the preload library, if installed), all
//! measured in the same run.
//!
//! `cargo bench -p ferrodat-benches --bench driver_latency` (`FERRODAT_BENCH_SAMPLES` and
//! `FERRODAT_BENCH_ROUNDS` size the run). Latency is half a round trip, as perftest
//! reports it. Both sides busy-poll; no progress thread runs.

#[path = "../../softhca/tests/support/child.rs"]
#[allow(dead_code)]
mod child;

use child::{ChildProc, ROLE_ENV, read_command, say};
use ferrodat_benches::stats::{Summary, summarize};
use ferrodat_benches::two_process::{FLOOR_ROLE, env_or, floor_child, measure_floor};
use ferrodat_driver::completion::{WcOpcode, WorkCompletion};
use ferrodat_driver::work_request::{Payload, RecvWr, SendFlags, SendOp, SendWr};
use ferrodat_driver::{Access, Context, Cq, CqOptions, MrBuf, Pd, Qp, QpCaps, QpInit, RemoteQp};
use ferrodat_softhca::config::DeviceConfig;
use ferrodat_softhca::fabric::SHM_DIR_ENV;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const MESSAGE: usize = 8;

fn main() {
    match std::env::var(ROLE_ENV).as_deref() {
        Ok(FLOOR_ROLE) => floor_child(),
        Ok("echo") => echo_child(),
        _ => parent(),
    }
}

/// One side of the ping-pong: context, CQ, QP and a receive buffer on softhca0.
struct Side {
    ctx: Context,
    cq: Cq,
    qp: Qp<'static>,
    mr: &'static MrBuf,
}

impl Side {
    fn new() -> Side {
        let ctx = ferrodat_driver::open("softhca0").expect("open softhca0");
        let pd = Pd::new(&ctx).unwrap();
        let cq = Cq::new(&ctx, &CqOptions { cqe: 256, ..Default::default() }).unwrap();
        let caps =
            QpCaps { max_send_wr: 128, max_recv_wr: 64, max_inline_data: 60, ..Default::default() };
        let init = QpInit::new(&cq, &cq, caps);
        let qp = Qp::new(&pd, &init).unwrap();
        // The region lives as long as the process: leaked, so the QP can borrow it 'static.
        let mr: &'static MrBuf = Box::leak(Box::new(pd.alloc_mr(4096, Access::ALL).unwrap()));
        Side { ctx, cq, qp, mr }
    }

    fn connect(&mut self, peer_qpn: u32) {
        let gid = self.ctx.source_gid(1).unwrap().1;
        let peer = RemoteQp { qpn: peer_qpn, psn: 0, gid, max_rd_atomic: 1 };
        self.qp.connect(&peer, 0, 3, Access::ALL).unwrap();
        for i in 0..32 {
            self.post_recv(i);
        }
    }

    fn post_recv(&mut self, wr_id: u64) {
        let sge = [self.mr.sge(0, 64).unwrap()];
        self.qp.post_recv(&[RecvWr { wr_id, sges: &sge }]).unwrap();
    }

    fn send(&mut self, n: u64) {
        let flags = if n.is_multiple_of(64) { SendFlags::SIGNALED } else { SendFlags::NONE };
        let wr = SendWr::new(n, SendOp::Send, Payload::Inline(&[0xa5; MESSAGE])).flags(flags);
        self.qp.post_send(&[wr]).unwrap();
    }

    /// Polls until a receive completes, reposts it.
    fn await_recv(&mut self) {
        let mut wc = [WorkCompletion::default(); 4];
        loop {
            let n = self.cq.poll(&mut wc);
            for w in &wc[..n] {
                assert!(w.is_ok(), "completion error: {w:?}");
                if w.opcode == WcOpcode::Recv {
                    self.post_recv(w.wr_id);
                    return;
                }
            }
        }
    }
}

fn echo_child() {
    let mut side = Side::new();
    say(&format!("READY {}", side.qp.qpn()));
    let peer: u32 = read_command().parse().unwrap();
    let rounds: u64 = read_command().parse().unwrap();
    side.connect(peer);
    say("GO");
    for n in 1..=rounds {
        side.await_recv();
        side.send(n);
    }
    let _ = read_command();
}

fn measure_driver(samples: usize, rounds: u32) -> Summary {
    let dir = PathBuf::from(format!("/dev/shm/ferrodat-bench-driver-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // SAFETY: set before any other thread of this process exists that reads the environment.
    unsafe { std::env::set_var(SHM_DIR_ENV, &dir) };
    let mut child = ChildProc::spawn("", "echo", &[(SHM_DIR_ENV, dir.to_str().unwrap())]);
    let peer: u32 = child.expect("READY").parse().unwrap();
    let mut side = Side::new();
    side.connect(peer);
    let warmup = (samples / 10 + 1) * rounds as usize;
    let total = warmup + samples * rounds as usize;
    child.send(&side.qp.qpn().to_string());
    child.send(&total.to_string());
    child.expect("GO");
    let mut n = 0u64;
    let mut round_trip = || {
        n += 1;
        side.send(n);
        side.await_recv();
    };
    for _ in 0..warmup {
        round_trip();
    }
    let mut rtt = Vec::with_capacity(samples);
    for _ in 0..samples {
        let start = Instant::now();
        for _ in 0..rounds {
            round_trip();
        }
        rtt.push(start.elapsed());
    }
    child.send("done");
    drop(child);
    let _ = std::fs::remove_dir_all(&dir);
    summarize(&rtt, rounds).halved()
}

/// perftest's `ib_send_lat -s 8` between two processes, rdma-core on softhca through the
/// preload library: (t_min, t_typical, 99th percentile) in ns, or why it did not run.
fn measure_ib_send_lat(iters: u32) -> Result<(f64, f64, f64), String> {
    if Command::new("ib_send_lat").arg("--help").output().is_err() {
        return Err("ib_send_lat not installed (scripts/install-deps installs perftest)".into());
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = Command::new(cargo)
        .args(["build", "--quiet", "--release", "-p", "ferrodat-softhca-preload"])
        .current_dir(&workspace)
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .map_err(|e| format!("cargo build of the preload library: {e}"))?;
    if !built.success() {
        return Err("cargo build -p ferrodat-softhca-preload failed".into());
    }
    let lib = target.join("release").join("libsofthca_preload.so");
    let dir = std::env::temp_dir().join(format!("ferrodat-bench-perftest-{}", std::process::id()));
    let devices = [DeviceConfig { name: "softhca0".into(), addr: "127.0.0.1".parse().unwrap() }];
    ferrodat_softhca::sysfs::write_tree(&dir.join("sys"), &devices)
        .map_err(|e| format!("sysfs tree: {e}"))?;
    std::fs::create_dir_all(dir.join("shm")).unwrap();
    let iters = iters.to_string();
    let args = ["-d", "mlx5_0", "-x", "0", "-s", "8", "-n", &iters, "-p", "18790"];
    let command = |extra: Option<&str>| {
        let mut c = Command::new("ib_send_lat");
        c.args(args).args(extra).env("LD_PRELOAD", &lib).env("SYSFS_PATH", dir.join("sys"));
        c.env("FERRODAT_SOFTHCA", "softhca0=127.0.0.1").env(SHM_DIR_ENV, dir.join("shm"));
        c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        c
    };
    let server = command(None).spawn().map_err(|e| format!("ib_send_lat server: {e}"))?;
    let mut client_out = None;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(100));
        let out = command(Some("127.0.0.1")).output().map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() && text.contains("onnect") && !text.contains("QP") {
            continue; // the server is not listening yet
        }
        client_out = Some(out);
        break;
    }
    let _ = server.wait_with_output();
    let _ = std::fs::remove_dir_all(&dir);
    let out = client_out.ok_or("the ib_send_lat client never reached its server")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    // #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
    let row = stdout
        .lines()
        .skip_while(|l| !l.contains("#bytes"))
        .nth(1)
        .ok_or_else(|| format!("no result row in ib_send_lat's output:\n{stdout}"))?;
    let cols: Vec<f64> = row.split_whitespace().filter_map(|c| c.parse().ok()).collect();
    if cols.len() < 8 {
        return Err(format!("unexpected ib_send_lat row: {row}"));
    }
    Ok((cols[2] * 1000.0, cols[4] * 1000.0, cols[7] * 1000.0))
}

fn parent() {
    let samples = env_or("FERRODAT_BENCH_SAMPLES", 200) as usize;
    let rounds = env_or("FERRODAT_BENCH_ROUNDS", 500);
    let started = Instant::now();
    let floor = measure_floor(samples, rounds);
    let driver = measure_driver(samples, rounds);
    let perftest = measure_ib_send_lat(env_or("FERRODAT_BENCH_PERFTEST_ITERS", 2000));
    println!(
        "8-byte SEND/RECV latency over softhca, half round trip, {samples} samples x {rounds} round trips ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    println!("{:<52} {:>10} {:>10} {:>10}", "", "median ns", "p99 ns", "min ns");
    let row = |name: &str, s: &Summary| {
        println!("{name:<52} {:>10.0} {:>10.0} {:>10.0}", s.median_ns, s.p99_ns, s.min_ns)
    };
    row("floor: two processes bouncing one cache line", &floor);
    row("ferrodat driver: 8-byte SEND/RECV ping-pong", &driver);
    match perftest {
        Ok((min, typical, p99)) => {
            println!(
                "{:<52} {typical:>10.0} {p99:>10.0} {min:>10.0}",
                "rdma-core ib_send_lat -s 8 (t_typical)"
            );
            println!(
                "driver / rdma-core (median vs t_typical): {:.3}x",
                driver.median_ns / typical
            );
        }
        Err(why) => println!("rdma-core ib_send_lat: not measured: {why}"),
    }
    println!("driver / floor (median): {:.2}x", driver.median_ns / floor.median_ns);
}
