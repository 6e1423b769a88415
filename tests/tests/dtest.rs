//! The stock `dtest` (Debian's dapl2-utils, unmodified) over libferrodat.so on softhca: a
//! server and a client process on 127.0.0.1, each loading the provider through libdat2 and
//! dat.conf. dtest exits 0 whatever happens, so the verdict is its output: both sides must
//! print `DAPL Test Complete. PASSED`, and neither may report a failed call.

mod support;

use std::time::Duration;
use support::dapl::{DatWorld, IA_NAME, OOB_PORT, oob_pair, port_lock};
use support::private_net::PrivateNet;

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

/// Each world's programs run in a network namespace of their own: dtest passes while
/// sockets on the host hold its fixed ports (its address exchange's 15828 and connection
/// qualifier 45248, which lies in the ephemeral range, so any concurrent outgoing
/// connection can hold it; that made the stock-program tests fail at random).
#[test]
fn dtest_passes_while_the_host_holds_its_ports() {
    if !have_dtest() {
        return;
    }
    if let Err(why) = PrivateNet::create() {
        eprintln!("skipped: no private network namespace here ({why})");
        return;
    }
    // Whoever holds them (these listeners, or another process if the bind fails), the
    // ports are taken on the host while dtest runs.
    let _held: Vec<_> = [OOB_PORT, 45248]
        .iter()
        .filter_map(|&port| std::net::TcpListener::bind(("0.0.0.0", port)).ok())
        .collect();
    dtest("host-ports-taken", &["-B", "10"]);
}

/// dtest's own bug, outside the provider: it sends a partly uninitialised stack struct
/// over its address-exchange socket (memcheck: "created by a stack allocation" in dtest).
/// Matched by a direct `write` from dtest's own code only.
const DTEST_OWN_ERRORS: &str = "{
   dtest_writes_a_partly_uninitialised_stack_struct_to_its_address_socket
   Memcheck:Param
   write(buf)
   fun:__libc_write
   fun:write
   obj:/usr/bin/dtest
}
";

/// The provider's unsafe boundary (the C entry points, the driver's device memory,
/// softhca) under valgrind's memcheck: dtest's whole sequence on both sides (`-B 10`: ten
/// writes per burst, else as the defaults), and memcheck must find no invalid access, no
/// use of an uninitialised value and no bad free in either process.
#[test]
fn dtest_under_memcheck_finds_no_memory_error() {
    if !have_dtest() {
        return;
    }
    if !std::path::Path::new("/usr/bin/valgrind").exists() {
        eprintln!("valgrind is not installed (apt-get install valgrind); nothing to run");
        return;
    }
    let _ports = port_lock();
    let world = DatWorld::new("memcheck");
    let suppressions = world.dir.join("dtest.supp");
    std::fs::write(&suppressions, DTEST_OWN_ERRORS).unwrap();
    let log = |side: &str| world.dir.join(format!("{side}.memcheck"));
    let memcheck = |side: &str, dtest_args: &[&str]| -> Vec<String> {
        let mut args = vec![
            "--quiet".to_string(),
            format!("--log-file={}", log(side).display()),
            format!("--suppressions={}", suppressions.display()),
            "--num-callers=40".to_string(),
            DTEST.to_string(),
            "-P".to_string(),
            IA_NAME.to_string(),
        ];
        args.extend(dtest_args.iter().map(|a| a.to_string()));
        args
    };
    let server_args = memcheck("server", &["-s", "-B", "10"]);
    let client_args = memcheck("client", &["-h", "127.0.0.1", "-B", "10"]);
    let (server, client) = oob_pair(
        &world,
        "valgrind",
        &server_args.iter().map(String::as_str).collect::<Vec<_>>(),
        "Server is waiting for client connection",
        &client_args.iter().map(String::as_str).collect::<Vec<_>>(),
        Duration::from_secs(600),
    );
    for (side, run) in [("server", &server), ("client", &client)] {
        assert!(
            run.output.contains("DAPL Test Complete. PASSED") && !run.timed_out,
            "dtest under memcheck, {side}: no PASSED:\n{}",
            run.tail(30)
        );
        // --quiet: the log holds the errors and nothing else.
        let report = std::fs::read_to_string(log(side)).unwrap();
        assert!(
            !report.lines().any(|l| l.starts_with("==")),
            "memcheck found errors in the dtest {side}:\n{report}"
        );
    }
}
