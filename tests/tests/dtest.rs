//! The stock `dtest` (Debian's dapl2-utils, unmodified) over libferrodat.so on softhca: a
//! server and a client process on 127.0.0.1, each loading the provider through libdat2 and
//! dat.conf. dtest exits 0 whatever happens, so the verdict is its output: both sides must
//! print `DAPL Test Complete. PASSED`, and neither may report a failed call.

mod support;

use std::time::Duration;
use support::dapl::{DatWorld, IA_NAME, oob_pair, port_lock};

const DTEST: &str = "/usr/bin/dtest";

fn have_dtest() -> bool {
    let here = std::path::Path::new(DTEST).exists();
    if !here {
        eprintln!("{DTEST} is not installed (apt-get install dapl2-utils); nothing to run");
    }
    here
}

/// Runs `dtest -s opts` and `dtest -h 127.0.0.1 opts` and checks both passed.
fn dtest(tag: &str, opts: &[&str]) {
    if !have_dtest() {
        return;
    }
    let _ports = port_lock();
    let world = DatWorld::new(tag);
    let mut server_args = vec!["-P", IA_NAME, "-s"];
    server_args.extend_from_slice(opts);
    let mut client_args = vec!["-P", IA_NAME, "-h", "127.0.0.1"];
    client_args.extend_from_slice(opts);
    let (server, client) = oob_pair(
        &world,
        DTEST,
        &server_args,
        "Server is waiting for client connection",
        &client_args,
        Duration::from_secs(600),
    );
    let both = format!(
        "--- server's last output:\n{}\n--- client's last output:\n{}",
        server.tail(15),
        client.tail(15)
    );
    for (side, run) in [("server", &server), ("client", &client)] {
        let passed = run.output.contains("DAPL Test Complete. PASSED");
        // Where it stopped: dtest prints "Error ..." or "ERROR ..." for the failing step,
        // and the provider (FERRODAT_TRACE) says what failed in it.
        let errors: Vec<&str> = run
            .output
            .lines()
            .filter(|l| l.contains("Error") || l.contains("ERROR") || l.contains("ferrodat:"))
            .collect();
        assert!(
            passed && errors.is_empty() && !run.timed_out,
            "dtest {opts:?} {side}: {}; failing steps:\n{}\n{both}",
            if run.timed_out { "killed after the time limit" } else { "no PASSED" },
            errors.join("\n"),
        );
    }
    // The exchange really happened: both sides saw the other's RDMA write data.
    assert!(server.output.contains("RDMA write buffer contains: client RDMA write data"));
    assert!(client.output.contains("RDMA write buffer contains: server RDMA write data"));
}

/// dtest's defaults: 4 MiB buffers (two 412 MiB registrations per side), 1000 RDMA writes
/// each way, four 4 MiB RDMA READs, 100 4 MiB SEND ping-pongs, all completions by
/// dat_evd_wait.
#[test]
fn dtest_passes_with_its_defaults() {
    dtest("defaults", &[]);
}

// The modes below keep the default 4 MiB buffers but a burst of 100 writes (-B) instead of
// 1000: the burst repeats the same writes, and in a debug build each 1000 costs a minute.

/// `-p`: every completion by polling dat_evd_dequeue (which must return a bare
/// DAT_QUEUE_EMPTY).
#[test]
fn dtest_passes_polling() {
    dtest("polling", &["-p", "-B", "100"]);
}

/// `-c`: the DTO EVDs report to a CNO; completions by dat_cno_wait, then dequeue.
#[test]
fn dtest_passes_with_a_cno() {
    dtest("cno", &["-c", "-B", "100"]);
}

/// `-w`: RDMA writes only, the last one with immediate data through the IB extension
/// (dat_ib_post_rdma_write_immed, its arguments read from a va_list), which the peer sees
/// as a DAT_IB_DTO_EVENT carrying 0x7777.
#[test]
fn dtest_passes_writing_with_immediate_data() {
    dtest("write-immed", &["-w", "-B", "100"]);
}
