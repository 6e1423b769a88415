//! The other stock test programs of Debian's dapl2-utils over libferrodat.so on softhca,
//! server and client as separate processes on 127.0.0.1 (see `dtest.rs` for dtest itself).
//! Their exit codes say nothing, so each verdict comes from their output.

mod support;

use std::path::Path;
use std::time::Duration;
use support::dapl::{
    DatWorld, IA_NAME, OOB_PORT, Run, Running, oob_pair, port_lock, server_then_client,
};

fn installed(program: &str) -> bool {
    let here = Path::new(program).exists();
    if !here {
        eprintln!("{program} is not installed (apt-get install dapl2-utils); nothing to run");
    }
    here
}

/// Lines where a program or the provider (FERRODAT_TRACE) reported a failure.
fn failures(run: &Run) -> Vec<&str> {
    run.output
        .lines()
        .filter(|l| {
            l.contains("Error") || l.contains("ERROR") || l.contains("ERR:") || l.contains("FAILED")
        })
        .collect()
}

fn assert_clean(what: &str, run: &Run, must_contain: &[&str]) {
    assert_clean_beside(what, run, must_contain, None);
}

/// As [`assert_clean`], showing the other side's output too on failure.
fn assert_clean_beside(what: &str, run: &Run, must_contain: &[&str], other: Option<&Run>) {
    let missing: Vec<&&str> = must_contain.iter().filter(|m| !run.output.contains(**m)).collect();
    let failed = failures(run);
    assert!(
        missing.is_empty() && failed.is_empty() && !run.timed_out,
        "{what}: {}missing {missing:?}; failures:\n{}\n--- last output:\n{}{}",
        if run.timed_out { "killed after the time limit; " } else { "" },
        failed.join("\n"),
        run.tail(25),
        other.map_or(String::new(), |o| format!(
            "\n--- the other side's last output:\n{}",
            o.tail(15)
        ))
    );
}

/// dtestx: RDMA write with immediate data both ways, then compare-and-swap and
/// fetch-and-add, all through `dat_extension_op` (arguments read from its va_list).
#[test]
fn dtestx_passes_its_immediate_data_and_atomic_tests() {
    const DTESTX: &str = "/usr/bin/dtestx";
    if !installed(DTESTX) {
        return;
    }
    let _ports = port_lock();
    let world = DatWorld::new("dtestx");
    let (server, client) = oob_pair(
        &world,
        DTESTX,
        &["-P", IA_NAME, "-s"],
        "waiting to snd addr",
        &["-P", IA_NAME, "-h", "127.0.0.1"],
        Duration::from_secs(120),
    );
    for (side, run, other) in [("server", &server, &client), ("client", &client, &server)] {
        assert_clean_beside(
            &format!("dtestx {side}"),
            run,
            &[
                "CMP_SWAP test - PASSED",
                "FETCH_ADD test - PASSED",
                "IB extension test - immed/atomic test PASSED",
            ],
            Some(other),
        );
    }
}

/// dtestcm: 1000 connections set up in bursts of 100 and torn down (events by polling
/// dat_evd_dequeue), private data checked on each.
#[test]
fn dtestcm_completes_a_thousand_connections() {
    dtestcm(&[]);
}

/// dtestcm -w: the same, waiting in dat_evd_wait.
#[test]
fn dtestcm_completes_a_thousand_connections_waiting() {
    dtestcm(&["-w"]);
}

fn dtestcm(opts: &[&str]) {
    const DTESTCM: &str = "/usr/bin/dtestcm";
    if !installed(DTESTCM) {
        return;
    }
    let _ports = port_lock();
    let world = DatWorld::new("dtestcm");
    let mut server_args = vec!["-P", IA_NAME, "-s"];
    server_args.extend_from_slice(opts);
    let mut client_args = vec!["-P", IA_NAME, "-h", "127.0.0.1"];
    client_args.extend_from_slice(opts);
    let server = Running::spawn(world.stock(DTESTCM, &server_args));
    let (server, client) = server_then_client(
        &world,
        server,
        "waiting for client",
        Some(OOB_PORT),
        world.stock(DTESTCM, &client_args),
        Duration::from_secs(300),
    );
    assert_clean_beside(
        "dtestcm server",
        &server,
        &["DAPL Connection Test Complete."],
        Some(&client),
    );
    assert_clean_beside(
        "dtestcm client",
        &client,
        &["ALL 1000 CONNECTED on Client!", "DAPL Connection Test Complete.", "Num=1000"],
        Some(&server),
    );
}

/// dtestsrq: both sides receive from an SRQ.
#[test]
fn dtestsrq_completes() {
    const DTESTSRQ: &str = "/usr/bin/dtestsrq";
    if !installed(DTESTSRQ) {
        return;
    }
    let _ports = port_lock();
    let world = DatWorld::new("dtestsrq");
    let server = Running::spawn(world.stock(DTESTSRQ, &["-P", IA_NAME, "-s"]));
    let (server, client) = server_then_client(
        &world,
        server,
        "server ready on port",
        None,
        world.stock(DTESTSRQ, &["-P", IA_NAME, "-h", "127.0.0.1"]),
        Duration::from_secs(120),
    );
    assert_clean_beside("dtestsrq server", &server, &["DAPL RC SRQ Test Complete."], Some(&client));
    assert_clean_beside("dtestsrq client", &client, &["DAPL RC SRQ Test Complete."], Some(&server));
}

const DAPLTEST: &str = "/usr/bin/dapltest";

/// A dapltest server in `world`, ready for clients.
fn dapltest_server(world: &DatWorld) -> Running {
    let mut server = Running::spawn(world.stock(DAPLTEST, &["-T", "S", "-D", IA_NAME]));
    assert!(
        server.wait_for("Service Point Ready", Duration::from_secs(60)),
        "the dapltest server never got ready"
    );
    server
}

/// `dapltest -T <test> -s 127.0.0.1 -D <ia> args…` (the test type must come first).
fn dapltest_client(world: &DatWorld, test: &str, args: &[&str]) -> Run {
    let mut all = vec!["-T", test, "-s", "127.0.0.1", "-D", IA_NAME];
    all.extend_from_slice(args);
    Running::spawn(world.stock(DAPLTEST, &all)).finish(Duration::from_secs(300))
}

/// dapltest's transaction test with data validation: a send each way and an RDMA write,
/// with one thread of one endpoint waited, one thread of four endpoints polled (-P), and
/// four threads of two endpoints each, waited and polled, all against one server (which
/// resets and reuses its endpoints between runs); then `-T Q` stops the server.
#[test]
fn dapltest_transaction_tests_pass_with_validation_and_quit_stops_the_server() {
    dapltest_transactions(
        "dapltest-t",
        &[("1", "1", false), ("1", "4", true), ("4", "2", false), ("4", "2", true)],
    );
}

/// dapltest's transaction test with data validation for each (threads, endpoints per
/// thread, polled) of `configs` against one server, then `-T Q` stops the server.
fn dapltest_transactions(tag: &str, configs: &[(&str, &str, bool)]) {
    if !installed(DAPLTEST) {
        return;
    }
    let _ports = port_lock();
    let world = DatWorld::new(tag);
    let server = dapltest_server(&world);
    let ops = ["client", "SR", "256", "server", "RW", "4096", "server", "SR", "256"];
    for &(threads, eps, polled) in configs {
        let mut args = vec!["-i", "200", "-t", threads, "-w", eps, "-V"];
        if polled {
            args.push("-P");
        }
        args.extend_from_slice(&ops);
        let run = dapltest_client(&world, "T", &args);
        assert_clean(
            &format!("dapltest {args:?}"),
            &run,
            &[
                &format!("{threads} threads, {eps} EPs"),
                "Total WQE",
                "End of Work -- Client Exiting",
            ],
        );
    }
    let quit = dapltest_client(&world, "Q", &[]);
    assert!(!quit.timed_out, "dapltest -T Q hung:\n{}", quit.tail(10));
    let server = server.finish(Duration::from_secs(30));
    assert!(!server.timed_out, "the server did not stop on -T Q:\n{}", server.tail(10));
    assert_clean("the dapltest server", &server, &["Exiting"]);
    assert_eq!(
        server.output.matches("Transaction Test Finished").count(),
        configs.len(),
        "the server finished each transaction test:\n{}",
        server.tail(20)
    );
}

/// dapltest's performance test for RDMA write and read runs and prints its figures.
#[test]
fn dapltest_performance_tests_print_their_figures() {
    if !installed(DAPLTEST) {
        return;
    }
    let _ports = port_lock();
    let world = DatWorld::new("dapltest-p");
    let server = dapltest_server(&world);
    for op in ["RW", "RR"] {
        let run = dapltest_client(&world, "P", &["-i", "1000", op, "4096", "2"]);
        assert_clean(
            &format!("dapltest -T P {op}"),
            &run,
            &["Bandwidth", &format!("raw: {op}, 1000, 4096, 2")],
        );
        let raw = run.output.lines().find(|l| l.starts_with("raw:")).unwrap();
        // raw: OP, iters, seg, nsegs, pipeline, cpu, ops/s, MB/s, latency, post, reap
        let fields: Vec<f64> =
            raw.split(',').skip(1).filter_map(|f| f.trim().parse().ok()).collect();
        assert!(fields.len() >= 8 && fields[5] > 0.0 && fields[6] > 0.0, "figures: {raw}");
        eprintln!("dapltest -T P {op}: {raw}");
    }
    let _ = dapltest_client(&world, "Q", &[]);
    let _ = server.finish(Duration::from_secs(30));
}

/// dapltest's function feature tests (FFT, client only): each case checks the return codes
/// of good and bad calls (NULL outputs, freed or wrong handles, objects still in use) and
/// prints "failed in file ..." for each check that does not hold, though it always ends
/// the case with "Result: PASS"; so every case must pass with no such line.
///
/// Left out, for reasons outside the provider: `mem` case 2 wants DAT_LENGTH_ERROR for a
/// zero-length `dat_lmr_create`, which its man page does not list (ferrodat answers
/// DAT_INVALID_PARAMETER, naming the region); `queryinfo` cases 13 and 15 pass an IA handle
/// to `dat_cno_query` and `dat_evd_query`, which libdat2 itself dereferences (its IA handles
/// are small integers) and crashes on, whatever the provider; `queryinfo` case 5 does
/// nothing ("use other test tool").
#[test]
fn dapltest_function_feature_tests_pass_every_check() {
    if !installed(DAPLTEST) {
        return;
    }
    // connmgt listens on dapltest's fixed port.
    let _ports = port_lock();
    let world = DatWorld::new("dapltest-f");
    let queryinfo: Vec<String> =
        (0..18).filter(|c| ![5, 13, 15].contains(c)).map(|c| format!("case{c}")).collect();
    let queryinfo: Vec<&str> = queryinfo.iter().map(String::as_str).collect();
    let features: [(&str, &[&str], usize); 6] = [
        ("hwconn", &[], 4),
        ("endpoint", &[], 3),
        ("pz", &[], 3),
        ("mem", &["case0", "case1", "case3", "case4"], 4),
        ("connmgt", &[], 2),
        ("queryinfo", &queryinfo, 15),
    ];
    for (feature, cases, count) in features {
        let mut args = vec!["-T", "F", "-s", "127.0.0.1", "-D", IA_NAME, "-f", feature];
        args.extend_from_slice(cases);
        let run = Running::spawn(world.stock(DAPLTEST, &args)).finish(Duration::from_secs(120));
        assert_clean(&format!("dapltest -T F -f {feature}"), &run, &["Result: PASS"]);
        let checks: Vec<&str> =
            run.output.lines().filter(|l| l.contains("failed in file")).collect();
        assert!(checks.is_empty(), "dapltest -f {feature}: {checks:?}\n{}", run.tail(30));
        assert_eq!(
            run.output.matches("Result: PASS").count(),
            count,
            "dapltest -f {feature}: every case passes\n{}",
            run.tail(30)
        );
    }
}

/// dapltest's limit test (client only) runs through every limit without a crash.
#[test]
fn dapltest_limit_test_completes_without_a_crash() {
    if !installed(DAPLTEST) {
        return;
    }
    // No ports, but a gigabyte LMR and a hundred IAs: not alongside the timed tests.
    let _alone = port_lock();
    let world = DatWorld::new("dapltest-l");
    let run =
        Running::spawn(world.stock(DAPLTEST, &["-T", "L", "-D", IA_NAME, "-w", "1", "-m", "100"]))
            .finish(Duration::from_secs(300));
    assert!(!run.timed_out, "the limit test hung:\n{}", run.tail(20));
    for limit in [
        "limit_ia",
        "limit_pz",
        "limit_cno",
        "limit_evd",
        "limit_ep",
        "limit_lmr",
        "limit_rpost",
        "limit_size_lmr",
    ] {
        assert!(run.output.contains(limit), "{limit} did not run:\n{}", run.tail(20));
    }
    for reached in [
        "IAs opened: 100",
        "PZs created: 100",
        "EVDs created: 100",
        "EPs created: 100",
        "LMRs created: 100",
    ] {
        assert!(run.output.contains(reached), "{reached}:\n{}", run.tail(30));
    }
    assert!(
        run.output.contains("stopping now"),
        "limit_size_lmr did not finish:\n{}",
        run.tail(10)
    );
}
