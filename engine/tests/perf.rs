//! `ferrodat perf`: argument errors, the `--json` shape, and short runs end to end (no
//! timing thresholds: these are benchmarks, the tests only check that every row ran).

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// Every row a run has, by its JSON id, in order: the baselines, then each RDMA test at
/// the driver level and at the DAT level.
const ROWS: [&str; 20] = [
    "baseline.shm_floor.8",
    "baseline.least_hca_pingpong.8",
    "baseline.memcpy.1048576",
    "baseline.shm_pipeline.1048576",
    "baseline.tcp_pingpong.8",
    "baseline.tcp_pingpong.4096",
    "driver.send_recv_lat.8",
    "dat.send_recv_lat.8",
    "driver.send_recv_lat.4096",
    "dat.send_recv_lat.4096",
    "driver.rdma_write_lat.8",
    "dat.rdma_write_lat.8",
    "driver.rdma_read_lat.8",
    "dat.rdma_read_lat.8",
    "driver.rdma_write_bw.4096",
    "dat.rdma_write_bw.4096",
    "driver.rdma_write_bw.65536",
    "dat.rdma_write_bw.65536",
    "driver.rdma_write_bw.1048576",
    "dat.rdma_write_bw.1048576",
];

/// The end-to-end runs busy-poll two or three processes each: one at a time, so a
/// two-core machine is not oversubscribed several times over.
static ONE_RUN_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_run_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

fn ferrodat() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrodat"));
    cmd.env_remove("FERRODAT_SOFTHCA").env_remove("FERRODAT_SOFTHCA_SHM_DIR");
    cmd
}

fn run(args: &[&str]) -> Output {
    ferrodat().args(args).output().expect("run ferrodat")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The private softhca fabric directory a local run of process `pid` makes.
fn private_shm_of(pid: u32) -> PathBuf {
    PathBuf::from(format!("/dev/shm/ferrodat-perf-{pid}"))
}

/// Runs `ferrodat <args>` to its end; its output and the directory its local run uses.
fn run_and_its_shm(args: &[&str]) -> (Output, PathBuf) {
    let child = ferrodat()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ferrodat");
    let shm = private_shm_of(child.id());
    (child.wait_with_output().expect("wait for ferrodat"), shm)
}

/// A usage error: exit status 2, nothing on stdout, the option named on stderr, no
/// fabric directory left behind.
fn usage_error(args: &[&str], mentions: &str) {
    usage_error_saying(args, &[mentions]);
}

fn usage_error_saying(args: &[&str], mentions: &[&str]) {
    let (out, shm) = run_and_its_shm(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
    for m in mentions {
        assert!(err.contains(m), "{args:?} should mention {m:?}: {err}");
    }
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(!shm.exists(), "{args:?} left {}", shm.display());
}

#[test]
fn argument_errors_name_the_argument() {
    usage_error(&["perf", "--client"], "--client");
    usage_error(&["perf", "--iters", "many"], "--iters");
    usage_error_saying(&["perf", "--iters", "0"], &["--iters", "at least 1"]);
    usage_error_saying(&["perf", "--iters", "-5"], &["--iters", "at least 1"]);
    usage_error_saying(&["perf", "--duration", "-1"], &["--duration", "at least 0.01"]);
    usage_error(&["perf", "--duration", "0"], "--duration");
    usage_error(&["perf", "--duration", "soon"], "--duration");
    usage_error(&["perf", "--duration", "1", "--iters", "10"], "--iters");
    usage_error(&["perf", "--server", "--client", "h"], "--client");
    usage_error(&["perf", "--server", "--json"], "--json");
    usage_error(&["perf", "--port", "70000"], "--port");
    usage_error(&["perf", "--bind", "127.0.0.1"], "--server");
    // The helpers' own option: a kind that does not exist is named, with the ones that do.
    usage_error_saying(
        &["perf", "--baseline-helper", "nosuch:/dev/shm/x"],
        &["--baseline-helper", "nosuch", "floor, least-hca, pipeline"],
    );
    usage_error(&["perf", "--baseline-helper", "floor"], "KIND:FILE");
}

#[test]
fn a_helper_without_its_run_exits_at_once_and_creates_nothing() {
    // Started by a run that has ended (another parent now): it must not spin for ever.
    let file = std::env::temp_dir().join(format!("ferrodat-orphan-{}", std::process::id()));
    for kind in ["floor", "least-hca", "pipeline"] {
        let arg = format!("{kind}:{}", file.display());
        let out = ferrodat()
            .args(["perf", "--baseline-helper", &arg])
            .env("FERRODAT_PERF_HELPER_PARENT", "1")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{kind}: {err}");
        assert!(err.contains("the run that started it has ended"), "{kind}: {err}");
        // Its run removed the shared file (or never made it): the helper does not make one.
        let out = ferrodat()
            .args(["perf", "--baseline-helper", &arg])
            .env("FERRODAT_PERF_HELPER_PARENT", std::process::id().to_string())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{kind}: {err}");
        assert!(err.contains(&file.display().to_string()), "{kind}: {err}");
        assert!(!file.exists(), "{kind} made {}", file.display());
        // Not started by a run at all: it says what the option is for.
        let out = run(&["perf", "--baseline-helper", &arg]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{kind}: {err}");
        assert!(err.contains("run `ferrodat perf` instead"), "{kind}: {err}");
    }
}

#[test]
fn a_duration_too_short_for_a_sample_is_an_argument_error() {
    // It used to run, panic summarising no samples (exit 101) and leave its fabric
    // directory behind.
    for d in ["0.00000001", "0.009"] {
        usage_error_saying(&["perf", "--duration", d, "--json"], &["--duration", d, "0.01"]);
    }
    let out = run(&["perf", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("0.01 to 3600"), "--help gives the range of --duration: {help}");
}

#[test]
fn a_run_of_the_shortest_duration_has_a_sample_in_every_row_and_cleans_up() {
    let _one = one_run_at_a_time();
    let (out, shm) = run_and_its_shm(&["perf", "--duration", "0.01", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!shm.exists(), "left {}", shm.display());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sizing"]["duration_s"], 0.01, "{v}");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), ROWS.len());
    for r in rows {
        match r["kind"].as_str().unwrap() {
            "latency" => assert!(r["samples"].as_u64().unwrap() >= 1, "{r}"),
            _ => assert!(r["messages"].as_u64().unwrap() >= 1, "{r}"),
        }
    }
}

#[test]
fn a_run_that_fails_after_its_setup_leaves_no_fabric_directory() {
    let _one = one_run_at_a_time();
    let (out, shm) = run_and_its_shm(&["perf", "--device", "nosuch", "--iters", "1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("nosuch"), "{err}");
    // Said once: the server child is not started for a device that does not exist.
    assert_eq!(err.matches("no device \"nosuch\"").count(), 1, "{err}");
    assert!(!shm.exists(), "left {}", shm.display());
}

#[test]
fn a_client_without_a_server_says_how_to_start_one() {
    // A port nothing listens on: bind one, note it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = run(&["perf", "--client", "127.0.0.1", "--port", &port.to_string(), "--iters", "1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(err.contains(&format!("ferrodat perf --server --port {port}")), "{err}");
    let out = run(&["perf", "--client", "no-such-host.invalid", "--iters", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no-such-host.invalid"), "{}", stderr(&out));
    // HOST:PORT in one argument is pointed at --port.
    let out = run(&["perf", "--client", "127.0.0.1:18520", "--iters", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--client 127.0.0.1 --port 18520"), "{}", stderr(&out));
}

/// A server that accepts but never answers (one busy with another client: it serves one
/// at a time) used to keep the client waiting silently for ten minutes; it now gives up
/// after the greeting's timeout and says why.
#[test]
fn a_client_of_a_server_that_does_not_answer_gives_up_and_says_why() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let started = std::time::Instant::now();
    let out = run(&["perf", "--client", "127.0.0.1", "--port", &port.to_string(), "--iters", "1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("sent no greeting within 10 s"), "{err}");
    assert!(err.contains("serving another client"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "gave up in time");
    drop(listener);
}

/// Checks the JSON object of a run: every row present once, with positive numbers.
fn check_json(text: &str, mode: &str) {
    check_json_of_device(text, mode, "softhca0");
}

fn check_json_of_device(text: &str, mode: &str, device: &str) {
    let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(v["tool"], "ferrodat perf");
    // 3: the least software HCA and the pipeline rows, ratios without a target.
    // 5: the server's progress-thread setting.
    assert_eq!(v["version"], 5);
    assert_eq!(v["mode"], mode);
    assert_eq!(v["device"], device);
    assert_eq!(v["sizing"]["iters"], 200);
    assert!(v["seconds"].as_f64().unwrap() > 0.0);
    let rows = v["rows"].as_array().unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ROWS);
    for r in rows {
        let level = r["level"].as_str().unwrap();
        assert!(r["id"].as_str().unwrap().starts_with(level), "{r}");
        assert!(r["bytes"].as_u64().unwrap() > 0, "{r}");
        assert!(!r["test"].as_str().unwrap().is_empty(), "{r}");
        let positive = |k: &str| {
            let x = r[k].as_f64().unwrap_or_else(|| panic!("{k} missing in {r}"));
            assert!(x > 0.0 && x.is_finite(), "{k} in {r}");
        };
        match r["kind"].as_str().unwrap() {
            "latency" => {
                for k in ["median_ns", "p99_ns", "min_ns", "samples", "ops_per_sample"] {
                    positive(k);
                }
                let (min, med, p99) =
                    (r["min_ns"].as_f64(), r["median_ns"].as_f64(), r["p99_ns"].as_f64());
                assert!(min <= med && med <= p99, "{r}");
                assert!(r["half_round_trip"].is_boolean(), "{r}");
            }
            "bandwidth" => {
                for k in ["mb_per_s", "mmsg_per_s", "messages", "bytes_moved", "seconds"] {
                    positive(k);
                }
            }
            other => panic!("kind {other} in {r}"),
        }
    }
    assert!(v["dat_completions"].as_str().unwrap().contains("dat_evd_dequeue"));
    assert!(v["buffers"].as_str().unwrap().contains("memfd"));
    assert!(
        v["progress_thread"].as_str().unwrap().contains("polls all the time"),
        "the perf command runs without softhca's progress thread unless told: {}",
        v["progress_thread"]
    );
    let ratios = v["ratios"].as_array().unwrap();
    let names: Vec<&str> = ratios.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "send_recv_8_over_floor",
            "least_hca_over_floor",
            "send_recv_8_over_least_hca",
            "tcp_8_over_send_recv_8",
            "rdma_write_bw_1m_over_memcpy",
            "pipeline_over_memcpy",
            "rdma_write_bw_1m_over_pipeline",
            "dat_over_driver_send_recv_8"
        ]
    );
    let levels: Vec<&str> = ratios.iter().map(|r| r["level"].as_str().unwrap()).collect();
    assert_eq!(levels, ["dat", "baseline", "dat", "dat", "driver", "baseline", "driver", "dat"]);
    let value = |id: &str| {
        let r = ratios.iter().find(|r| r["id"] == id).unwrap();
        r["value"].as_f64().unwrap_or_else(|| panic!("no value in {r}"))
    };
    for r in ratios {
        assert!(r["value"].as_f64().unwrap() > 0.0, "{r}");
        // A target's ratio says whether it is met; the ratios that explain it have neither.
        assert_eq!(r["met"].is_boolean(), r["target"].is_string(), "{r}");
        assert!(r["met"].is_boolean() || (r["met"].is_null() && r["target"].is_null()), "{r}");
    }
    // Each explained target is the product of its two factors.
    for (whole, parts) in [
        ("send_recv_8_over_floor", ["least_hca_over_floor", "send_recv_8_over_least_hca"]),
        (
            "rdma_write_bw_1m_over_memcpy",
            ["pipeline_over_memcpy", "rdma_write_bw_1m_over_pipeline"],
        ),
    ] {
        let product = value(parts[0]) * value(parts[1]);
        assert!((product / value(whole) - 1.0).abs() < 1e-9, "{whole} = {parts:?}: {ratios:?}");
    }
}

#[test]
fn a_short_local_run_gives_every_row_as_json() {
    let _one = one_run_at_a_time();
    let out = run(&["perf", "--iters", "200", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(text.lines().count(), 1, "one JSON line: {text}");
    check_json(&text, "local");
    // The progress went to stderr, one line per row when it is not a terminal.
    assert_eq!(
        stderr(&out).lines().filter(|l| l.starts_with("ferrodat perf: [")).count(),
        ROWS.len()
    );
}

#[test]
fn a_short_local_run_prints_the_table() {
    let _one = one_run_at_a_time();
    let out = run(&["perf", "--iters", "100"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    // Each RDMA test is a driver row and a DAT row of the same title.
    for (title, times) in [
        ("shared-memory floor: two processes", 1),
        ("least software HCA: WQE, shared slot, CQE, 8 B", 1),
        ("two-copy pipeline: two processes, shm ring, 1 MiB", 1),
        ("(no target; ", 4),
        ("TCP loopback ping-pong, 8 B", 1),
        ("TCP loopback ping-pong, 4 KiB", 1),
        ("memcpy, one core, 1 MiB", 1),
        ("SEND/RECV ping-pong, 8 B", 2),
        ("SEND/RECV ping-pong, 4 KiB", 2),
        ("RDMA WRITE ping-pong, 8 B", 2),
        ("RDMA READ (whole round trip), 8 B", 2),
        ("RDMA WRITE stream, 4 KiB", 2),
        ("RDMA WRITE stream, 64 KiB", 2),
        ("RDMA WRITE stream, 1 MiB", 2),
        ("busy-polling dat_evd_dequeue", 1),
        ("ratios", 1),
    ] {
        assert_eq!(text.matches(title).count(), times, "{title:?} {times} times in:\n{text}");
    }
    assert!(!text.contains("not yet built"), "{text}");
    let dat_rows = text.lines().filter(|l| l.starts_with("dat ")).count();
    assert_eq!(dat_rows, 7, "seven DAT rows in:\n{text}");
    // Both sides here run without the progress thread: one line says so for both.
    assert!(text.contains("softhca: no progress thread"), "{text}");
    assert!(text.contains("both sides poll all the time"), "{text}");
}

/// `ferrodat perf --server --port 0 <args>` on the fabric in `shm` (created here), and the
/// port it says it listens on, after `listening` (its address and a colon) in its first
/// line.
fn start_server(shm: &Path, args: &[&str], listening: &str) -> (Child, String) {
    start_server_with(shm, args, listening, &[])
}

/// [`start_server`] with extra environment variables.
fn start_server_with(
    shm: &Path,
    args: &[&str],
    listening: &str,
    env: &[(&str, &str)],
) -> (Child, String) {
    std::fs::create_dir_all(shm).unwrap();
    let mut server = ferrodat()
        .args(["perf", "--server", "--port", "0"])
        .args(args)
        .envs(env.iter().copied())
        .env("FERRODAT_SOFTHCA_SHM_DIR", shm)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port = line
        .split(listening)
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("the server said {line:?}"))
        .to_string();
    (server, port)
}

/// The client reports the server's progress-thread setting beside its own: a server
/// started by hand may have been told to run the thread, which competes for the cores.
#[test]
fn server_and_client_run_as_separate_commands() {
    let _one = one_run_at_a_time();
    let shm = PathBuf::from(format!("/dev/shm/ferrodat-perf-test-{}", std::process::id()));
    let (mut server, port) = start_server_with(
        &shm,
        &["--bind", "127.0.0.1"],
        "127.0.0.1:",
        &[("FERRODAT_SOFTHCA_PROGRESS_THREAD", "1")],
    );
    let out = ferrodat()
        .args(["perf", "--client", "127.0.0.1", "--port", &port, "--iters", "200", "--json"])
        .env("FERRODAT_SOFTHCA_SHM_DIR", &shm)
        .output()
        .unwrap();
    let status = server.wait().unwrap();
    let _ = std::fs::remove_dir_all(&shm);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(status.success(), "the server serves one run, then exits");
    let text = String::from_utf8(out.stdout).unwrap();
    check_json(&text, "client");
    let v: Value = serde_json::from_str(&text).unwrap();
    let server_setting = v["server_progress_thread"].as_str().unwrap();
    assert!(server_setting.contains("on at every device open"), "{server_setting}");
}

/// Two network namespaces joined by a veth pair, `10.199.<n>.1` and `.2`, deleted on drop
/// (with them the veth pair).
struct NamespacePair {
    names: [String; 2],
    addresses: [String; 2],
}

impl NamespacePair {
    /// `None`, with the reason printed, where namespaces cannot be made (not root, no
    /// `ip`, a container without the permission).
    fn create() -> Option<NamespacePair> {
        let id = std::process::id();
        let names = [format!("fdt-{id}-a"), format!("fdt-{id}-b")];
        let net = id % 250;
        let addresses = [format!("10.199.{net}.1"), format!("10.199.{net}.2")];
        let pair = NamespacePair { names, addresses };
        let [a, b] = &pair.names;
        let (va, vb) = (format!("fdt{id}a"), format!("fdt{id}b"));
        let steps: Vec<Vec<String>> = vec![
            vec!["netns".into(), "add".into(), a.clone()],
            vec!["netns".into(), "add".into(), b.clone()],
            ["link", "add", &va, "netns", a, "type", "veth", "peer", "name", &vb, "netns", b]
                .map(String::from)
                .to_vec(),
        ];
        let mut steps = steps;
        for (ns, dev, addr) in [(a, &va, &pair.addresses[0]), (b, &vb, &pair.addresses[1])] {
            steps.push(
                ["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev]
                    .map(String::from)
                    .to_vec(),
            );
            steps.push(["-n", ns, "link", "set", dev, "up"].map(String::from).to_vec());
            steps.push(["-n", ns, "link", "set", "lo", "up"].map(String::from).to_vec());
            // `ip netns exec` also needs to make a mount namespace, which some containers
            // refuse even where the network namespace could be made.
            steps.push(["netns", "exec", ns, "true"].map(String::from).to_vec());
        }
        for step in &steps {
            match Command::new("ip").args(step).output() {
                Ok(out) if out.status.success() => {}
                Ok(out) => {
                    eprintln!("skipped: `ip {}` failed: {}", step.join(" "), stderr(&out).trim());
                    return None; // drop deletes what was made
                }
                Err(e) => {
                    eprintln!("skipped: cannot run ip (iproute2): {e}");
                    return None;
                }
            }
        }
        Some(pair)
    }

    /// `ferrodat perf <args>` in namespace `side` (0 or 1) as softhca HCA `device` with
    /// that side's address, in the fabric directory `shm` (shared: one host).
    fn ferrodat(&self, side: usize, device: &str, shm: &std::path::Path, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.names[side], env!("CARGO_BIN_EXE_ferrodat"), "perf"]);
        cmd.args(args);
        cmd.env("FERRODAT_SOFTHCA", format!("{device}={}", self.addresses[side]));
        cmd.env("FERRODAT_SOFTHCA_SHM_DIR", shm);
        cmd
    }
}

impl Drop for NamespacePair {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = Command::new("ip").args(["netns", "del", name]).output();
        }
    }
}

/// Starts `ferrodat perf --server` in namespace 0 as `device`; returns it and its port.
fn server_in(
    net: &NamespacePair,
    device: &str,
    shm: &std::path::Path,
) -> (std::process::Child, String) {
    let bind = &net.addresses[0];
    let mut server = net
        .ferrodat(0, device, shm, &["--server", "--bind", bind, "--port", "0", "--device", device])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port = line
        .split(&format!("{bind}:"))
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("the server said {line:?}"))
        .to_string();
    (server, port)
}

#[test]
fn server_and_client_run_in_two_network_namespaces_on_one_fabric() {
    let _one = one_run_at_a_time();
    let Some(net) = NamespacePair::create() else { return };
    let shm = PathBuf::from(format!("/dev/shm/ferrodat-perf-netns-{}", std::process::id()));
    std::fs::create_dir_all(&shm).unwrap();

    // One fabric directory, two HCAs: each namespace names its own, with its address.
    let (server, port) = server_in(&net, "softhca0", &shm);
    let out = net
        .ferrodat(1, "softhca1", &shm, &["--client", &net.addresses[0], "--port", &port])
        .args(["--device", "softhca1", "--iters", "200", "--json"])
        .output()
        .unwrap();
    let served = server.wait_with_output().unwrap();
    assert!(out.status.success(), "client: {}\nserver: {}", stderr(&out), stderr(&served));
    assert!(served.status.success(), "the server serves one run, then exits");
    check_json_of_device(&String::from_utf8(out.stdout).unwrap(), "client", "softhca1");

    // The same HCA name with two addresses: one side is told, neither waits forever.
    let (server, port) = server_in(&net, "softhca0", &shm);
    let out = net
        .ferrodat(1, "softhca0", &shm, &["--client", &net.addresses[0], "--port", &port])
        .args(["--iters", "200", "--json"])
        .output()
        .unwrap();
    let served = server.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&shm);
    assert!(!out.status.success(), "one HCA name cannot have two GIDs");
    let both = format!("{}{}", stderr(&out), stderr(&served));
    assert!(both.contains("has GID") && both.contains("another name"), "{both}");
}

/// The process ids of `parent`'s children whose command line contains `arg`.
fn children_with_arg(parent: u32, arg: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // pid (comm) state ppid …: the command name may hold spaces, so after the last ')'.
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1));
        if ppid != Some(&parent.to_string()) {
            continue;
        }
        // Before its exec, a child still shows its parent's command line.
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// A run whose `kind` helper (floor, least-hca) is killed while it answers ends with an
/// error naming it and `says`, and leaves no file behind.
fn a_helper_that_dies_ends_the_run(kind: &str, says: &str) {
    let _one = one_run_at_a_time();
    // Long rows: the first slices of the floor and the least software HCA (and their
    // helpers) last seconds each.
    let client = ferrodat()
        .args(["perf", "--duration", "60", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ferrodat");
    let shm = private_shm_of(client.id());
    let file = PathBuf::from(format!("/dev/shm/ferrodat-perf-{kind}-{}", client.id()));
    let arg = format!("{kind}:{}", file.display());
    let waited = std::time::Instant::now();
    let helper = loop {
        if let Some(&pid) = children_with_arg(client.id(), &arg).first() {
            break pid;
        }
        assert!(waited.elapsed().as_secs() < 60, "no {kind} helper process appeared");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    // Well inside the slice's 0.4 s warm-up and 3.8 s of measurement: it is answering.
    std::thread::sleep(std::time::Duration::from_millis(1000));
    // SAFETY: kill(2) on the pid of a child of our child, found just now.
    assert_eq!(unsafe { libc::kill(helper as i32, libc::SIGKILL) }, 0);
    let killed = std::time::Instant::now();
    // It used to spin forever: give it the stall timeout and more, then stop it.
    let mut client = client;
    let status = loop {
        if let Some(status) = client.try_wait().unwrap() {
            break Some(status);
        }
        if killed.elapsed().as_secs() > 30 {
            let _ = client.kill();
            let _ = client.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let out = client.wait_with_output().unwrap();
    let left = [shm.exists(), file.exists()];
    let _ = std::fs::remove_dir_all(&shm);
    let _ = std::fs::remove_file(&file);
    let err = stderr(&out);
    let status =
        status.unwrap_or_else(|| panic!("still running 30 s after its helper died: {err}"));
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "no report from a failed run");
    let named = format!(
        "the {kind} helper process (pid {helper}, perf --baseline-helper {kind}:…) stopped \
         answering"
    );
    for m in [named.as_str(), says, "it ended: signal: 9"] {
        assert!(err.contains(m), "missing {m:?} in: {err}");
    }
    assert_eq!(left, [false, false], "left {} or {}", shm.display(), file.display());
}

#[test]
fn a_floor_helper_that_dies_ends_the_run_with_an_error_naming_it() {
    a_helper_that_dies_ends_the_run("floor", "no answer on the shared line for 5.0 s");
}

#[test]
fn a_least_hca_helper_that_dies_ends_the_run_with_an_error_naming_it() {
    a_helper_that_dies_ends_the_run("least-hca", "least HCA: no message for 5.0 s (after ");
}

/// Runs `ferrodat perf <args>` with `/etc/hosts` replaced by `hosts` (a private mount
/// namespace: `unshare -m`, which needs root or a user namespace, as `unshare -rn` gives);
/// `None`, with the reason printed, where that cannot be done or the resolver does not
/// give the addresses in `hosts`' order.
fn ferrodat_with_hosts(
    hosts: &str,
    name: &str,
    envs: &[(&str, &PathBuf)],
    args: &[&str],
) -> Option<Output> {
    let dir = std::env::temp_dir().join(format!("ferrodat-perf-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hosts");
    std::fs::write(&file, hosts).unwrap();
    let in_ns = |script: &str, extra: &[&str]| {
        let mut cmd = Command::new("unshare");
        cmd.args(["-m", "sh", "-c", script, "sh"]).arg(&file).args(extra);
        cmd.env_remove("FERRODAT_SOFTHCA").env_remove("FERRODAT_SOFTHCA_SHM_DIR");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        cmd.output()
    };
    // The order the resolver gives, there.
    let probe = in_ns(r#"mount --bind "$1" /etc/hosts && getent ahosts "$2""#, &[name]);
    let wanted: Vec<&str> = hosts.lines().filter_map(|l| l.split_whitespace().next()).collect();
    let skip = |why: String| {
        eprintln!("skipped: {why}");
        let _ = std::fs::remove_dir_all(&dir);
        None
    };
    match probe {
        Err(e) => return skip(format!("cannot run unshare: {e}")),
        Ok(out) if !out.status.success() => {
            return skip(format!("cannot replace /etc/hosts: {}", stderr(&out).trim()));
        }
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let mut got: Vec<&str> =
                text.lines().filter_map(|l| l.split_whitespace().next()).collect();
            got.dedup();
            if got != wanted {
                return skip(format!("the resolver gives {got:?} for {wanted:?}"));
            }
        }
    }
    let script = r#"mount --bind "$1" /etc/hosts && shift && exec "$@""#;
    let mut extra = vec![env!("CARGO_BIN_EXE_ferrodat"), "perf"];
    extra.extend_from_slice(args);
    let out = in_ns(script, &extra).expect("run ferrodat under unshare");
    let _ = std::fs::remove_dir_all(&dir);
    Some(out)
}

#[test]
fn a_client_tries_every_address_of_the_server_name() {
    let _one = one_run_at_a_time();
    // A name whose first address is IPv6, a server on its default --bind 0.0.0.0: the
    // client used to try [::1] alone and give up.
    let hosts = "::1 ferrodat-dual\n127.0.0.1 ferrodat-dual\n";
    let shm = PathBuf::from(format!("/dev/shm/ferrodat-perf-dual-{}", std::process::id()));
    let (mut server, port) = start_server(&shm, &[], "0.0.0.0:");
    let envs = [("FERRODAT_SOFTHCA_SHM_DIR", &shm)];
    let args = ["--client", "ferrodat-dual", "--port", &port, "--iters", "200", "--json"];
    let Some(out) = ferrodat_with_hosts(hosts, "ferrodat-dual", &envs, &args) else {
        let _ = server.kill();
        let _ = server.wait();
        let _ = std::fs::remove_dir_all(&shm);
        return;
    };
    if !out.status.success() {
        // It never came: the server would wait for it forever.
        let _ = server.kill();
    }
    let status = server.wait().unwrap();
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&shm);
    }
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(status.success(), "the server serves one run, then exits");
    check_json(&String::from_utf8(out.stdout).unwrap(), "client");

    // Nothing listens: the error names each address tried.
    let out = ferrodat_with_hosts(hosts, "ferrodat-dual", &envs, &args).unwrap();
    let _ = std::fs::remove_dir_all(&shm);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for m in [
        "cannot reach a ferrodat perf server at ferrodat-dual (tried ".to_string(),
        format!("[::1]:{port}: "),
        format!(", 127.0.0.1:{port}: "),
        format!("ferrodat perf --server --port {port}"),
    ] {
        assert!(err.contains(&m), "missing {m:?} in: {err}");
    }
}

/// The children of process `pid`, from /proc.
fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // "pid (comm) state ppid ...": the command may hold spaces, the last ')' ends it.
        let after_comm = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
        let ppid = after_comm.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            children.push(child);
        }
    }
    children
}

#[test]
fn an_interrupted_run_removes_its_files_and_processes_and_dies_of_the_signal() {
    use std::os::unix::process::ExitStatusExt;
    let _one = one_run_at_a_time();
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let mut run = ferrodat()
            .args(["perf", "--duration", "3", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run ferrodat");
        let pid = run.id();
        let shm = private_shm_of(pid);
        let floor = PathBuf::from(format!("/dev/shm/ferrodat-perf-floor-{pid}"));
        // The first row, the floor, has both scratch paths and both children (the local
        // server and the floor's helper) at once.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let children = loop {
            let children = children_of(pid);
            if shm.exists() && floor.exists() && children.len() >= 2 {
                break children;
            }
            assert!(std::time::Instant::now() < deadline, "the floor row never started");
            assert!(run.try_wait().unwrap().is_none(), "the run ended before the signal");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        // SAFETY: kill takes plain integers; `pid` is our unreaped child.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, signal) }, 0);
        let out = run.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.signal(), Some(signal), "{:?}: {err}", out.status);
        assert!(err.contains("interrupted"), "{err}");
        assert!(!shm.exists(), "signal {signal} left {}", shm.display());
        assert!(!floor.exists(), "signal {signal} left {}", floor.display());
        for child in children {
            assert!(
                !Path::new(&format!("/proc/{child}")).exists(),
                "signal {signal} left child process {child} (of {pid})"
            );
        }
    }
}
