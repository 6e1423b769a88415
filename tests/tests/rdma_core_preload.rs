//! Unmodified rdma-core programs (Debian's ibverbs-utils, libibverbs 44 with its mlx5
//! provider) on softhca through `libsofthca_preload.so` and a generated sysfs tree.
//!
//! The preload library is a cdylib nothing links against, so the first test to need it
//! builds it with the cargo that runs the tests (`$CARGO`), into the workspace's target
//! directory (`$CARGO_TARGET_DIR` or `<workspace>/target`).

mod support;

use std::process::Output;
use support::preload::World;

#[test]
fn ibv_devices_lists_the_device() {
    let world = World::new("devices");
    let out = world.run("ibv_devices", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find(|l| l.contains("mlx5_0"));
    assert!(line.is_some(), "mlx5_0 not listed:\n{stdout}");
    // The node GUID of 127.0.0.1's device, as sysfs and QUERY_DEVICE give it.
    assert!(line.unwrap().contains("00c97ffffe000001"), "{stdout}");
}

#[test]
fn ibv_devinfo_shows_an_active_roce_port() {
    let world = World::new("devinfo");
    let out = world.run("ibv_devinfo", &["-v"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for want in [
        "hca_id:\tmlx5_0",
        "vendor_part_id:\t\t\t4119",
        "phys_port_cnt:\t\t\t1",
        "state:\t\t\tPORT_ACTIVE (4)",
        "link_layer:\t\tEthernet",
        "phys_state:\t\tLINK_UP (5)",
        "GID[  0]:\t\t::ffff:127.0.0.1, RoCE v2",
    ] {
        assert!(stdout.contains(want), "{want:?} missing from ibv_devinfo -v:\n{stdout}");
    }
}

/// A malformed device list is said once on stderr, instead of reading as "No IB devices
/// found" (the sysfs tree still names the device; the preload library then serves none).
#[test]
fn a_malformed_device_list_is_named_by_the_preload_library() {
    let world = World::new("malformed");
    world.run("ibv_devices", &[]); // writes the sysfs tree for softhca0
    let out = world.command("ibv_devinfo", &[]).env("FERRODAT_SOFTHCA", "softhca0").output();
    let out = out.expect("run ibv_devinfo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("softhca-preload:").count(), 1, "{stderr}");
    assert!(stderr.contains("missing '='") && stderr.contains("no softhca device"), "{stderr}");
}

/// `tests/c/<name>.c` compiled against rdma-core's libibverbs, in `world`'s directory.
fn verbs_program(world: &World, name: &str) -> std::path::PathBuf {
    let exe = world.dir.join(name);
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let cc = std::process::Command::new("cc")
        .args(["-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-libverbs")
        .output()
        .expect("run cc (scripts/install-deps installs build-essential and libibverbs-dev)");
    assert!(cc.status.success(), "cc {name}.c:\n{}", String::from_utf8_lossy(&cc.stderr));
    exe
}

/// A C program on rdma-core's own verbs (tests/c/mw_bind.c): ibv_alloc_mw, ibv_bind_mw
/// (rdma-core's UMR WQE, executed by softhca), RDMA through the window's rkey, refusals
/// outside its range, with the region's own rkey and after an unbind.
#[test]
fn a_memory_window_bound_by_rdma_core_grants_its_range_only() {
    let world = World::new("mw");
    let exe = verbs_program(&world, "mw_bind");
    let out = world.run(exe.to_str().unwrap(), &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("mw ok"), "{out:?}");
}

/// A C program on rdma-core (tests/c/wc_flags.c): rdma-core's mlx5 provider, decoding
/// softhca's CQEs itself, sets IBV_WC_WITH_IMM on the requester completions of a SEND and an
/// RDMA WRITE with immediate and not on plain ones (the driver's own completions do the
/// same: `carries_imm`, driver/tests/loopback_smoke.rs).
#[test]
fn rdma_core_flags_requester_completions_of_requests_with_immediate() {
    let world = World::new("wcflags");
    let exe = verbs_program(&world, "wc_flags");
    let out = world.run(exe.to_str().unwrap(), &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("wc_flags ok"), "{out:?}");
}

/// A C program on rdma-core (tests/c/fork_and_signals.c): a forked child that closes
/// every inherited descriptor, the device file included, leaves the parent's QPs alone
/// (they connect and carry an RDMA WRITE after it), and write(2) from a signal handler
/// during the main loop's writes never waits on the preload library's bookkeeping.
#[test]
fn a_forked_child_closing_the_device_and_writes_in_signal_handlers_leave_verbs_working() {
    let world = World::new("fork");
    let exe = verbs_program(&world, "fork_and_signals");
    // A deadlock would hang the program: bounded, killed, reported.
    let mut child = world
        .command(exe.to_str().unwrap(), &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run fork_and_signals");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("fork_and_signals still runs after 60 s: a write(2) in its signal handler hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("its output");
    assert!(String::from_utf8_lossy(&out.stdout).contains("fork and signals ok"), "{out:?}");
}

/// A C program on rdma-core (tests/c/two_cqs_armed.c): two CQs on one completion channel,
/// armed one right after the other before any completion, each report their next
/// completion. Both first arms write the doorbell record's initial zero, and the second's
/// UAR store overwrites the first's: the doorbell watcher lost the first arm, and
/// `ib_send_bw -e` waited forever for its send CQ's event.
#[test]
fn two_cqs_armed_back_to_back_each_report_their_next_completion() {
    let world = World::new("twocqs");
    let exe = verbs_program(&world, "two_cqs_armed");
    let out = world.run(exe.to_str().unwrap(), &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("two cqs armed ok"), "{out:?}");
}

/// A C program (tests/c/dup_and_close_range.c) on the device file itself: dup, dup2 and
/// close_range keep the preload library's fd table true (a dup is the device; a file at a
/// freed or overwritten device fd number is a file).
#[test]
fn dup_dup2_and_close_range_of_the_device_fd_behave_as_on_a_kernel_file() {
    let world = World::new("dup");
    let exe = verbs_program(&world, "dup_and_close_range");
    let out = world.run(exe.to_str().unwrap(), &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("dup and close_range ok"), "{out:?}");
}

/// Runs `ibv_rc_pingpong` server and client on one host with `extra` arguments and checks
/// both report their "bytes in … seconds" lines.
fn rc_pingpong(tag: &str, port: u16, extra: &[&str]) {
    let port = port.to_string();
    let mut args = vec!["-g", "0", "-p", port.as_str()];
    args.extend_from_slice(extra);
    let outs = server_and_client(tag, "ibv_rc_pingpong", &args);
    for (side, out) in [("server", &outs[0]), ("client", &outs[1])] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(" bytes in ") && stdout.contains(" iters in "),
            "{side} of ibv_rc_pingpong {extra:?}: {}\nstdout:\n{stdout}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Runs `program args` as a server, then `program args 127.0.0.1` as its client (retried
/// while the server is not listening yet), in a fresh world; returns both outputs.
fn server_and_client(tag: &str, program: &str, args: &[&str]) -> [Output; 2] {
    let world = World::new(tag);
    let server = world
        .command(program, args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {program} (scripts/install-deps installs it): {e}"));
    let mut client_args = args.to_vec();
    client_args.push("127.0.0.1");
    let mut client = None;
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let out = world.command(program, &client_args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        if !out.status.success() && text.contains("onnect") && !text.contains("QP") {
            continue; // "Couldn't connect to 127.0.0.1:…": the server is not up yet
        }
        client = Some(out);
        break;
    }
    let client = client.unwrap_or_else(|| panic!("the {program} client never reached its server"));
    let server = wait_with_timeout(server, std::time::Duration::from_secs(60));
    [server, client]
}

/// The child's output, killing it if it has not finished within `limit`.
fn wait_with_timeout(mut child: std::process::Child, limit: std::time::Duration) -> Output {
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn ibv_rc_pingpong_polling_sizes_1_4096_65536() {
    // Both sides busy-poll their CQs; softhca's doorbell-watching thread does the HCA's work.
    for (port, size) in [(18715, "1"), (18727, "4096"), (18728, "65536")] {
        rc_pingpong(&format!("pingpong-{size}"), port, &["-s", size, "-n", "100"]);
    }
}

#[test]
fn ibv_rc_pingpong_events_sizes_1_4096_65536() {
    // -e: both sides sleep on the completion channel (arming through the UAR and doorbell
    // record), and the final destroy waits for exactly the events they read.
    for (port, size) in [(18716, "1"), (18717, "4096"), (18718, "65536")] {
        rc_pingpong(&format!("pingpong-e-{size}"), port, &["-e", "-s", size, "-n", "200"]);
    }
}

/// perftest: two-sided and one-sided latency and bandwidth tests, server and client.
#[test]
fn perftest_lat_and_bw() {
    for (port, program) in [
        (18720, "ib_send_lat"),
        (18721, "ib_write_lat"),
        (18722, "ib_read_lat"),
        (18723, "ib_atomic_lat"),
        (18724, "ib_send_bw"),
        (18725, "ib_write_bw"),
        (18726, "ib_read_bw"),
    ] {
        let port = port.to_string();
        let args = ["-d", "mlx5_0", "-x", "0", "-n", "100", "-p", port.as_str()];
        let outs = server_and_client(program, program, &args);
        // The passive side of a one-sided latency test prints no results.
        let server_reports = !matches!(program, "ib_read_lat" | "ib_atomic_lat");
        for (side, out) in [("server", &outs[0]), ("client", &outs[1])] {
            let stdout = String::from_utf8_lossy(&out.stdout);
            if side == "server" && !server_reports {
                assert!(out.status.success(), "server of {program}: {}\n{stdout}", out.status);
                continue;
            }
            // The result table: a header with #bytes and a row starting with the size.
            let row = stdout.lines().skip_while(|l| !l.contains("#bytes")).nth(1);
            assert!(
                out.status.success()
                    && row
                        .is_some_and(|r| r.trim_start().starts_with(|c: char| c.is_ascii_digit())),
                "{side} of {program}: {}\nstdout:\n{stdout}\nstderr:\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// perftest with `-e`: both sides sleep on one completion channel for their send and
/// receive CQs, armed back to back (see `two_cqs_armed_back_to_back_…`). Under `timeout`:
/// the lost arm hung both sides.
#[test]
fn perftest_send_bw_with_events() {
    let args = ["30", "ib_send_bw", "-d", "mlx5_0", "-x", "0", "-e", "-n", "200", "-p", "18729"];
    let outs = server_and_client("send-bw-e", "timeout", &args);
    for (side, out) in [("server", &outs[0]), ("client", &outs[1])] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let row = stdout.lines().skip_while(|l| !l.contains("#bytes")).nth(1);
        assert!(
            out.status.success()
                && row.is_some_and(|r| r.trim_start().starts_with(|c: char| c.is_ascii_digit())),
            "{side} of ib_send_bw -e: {}\nstdout:\n{stdout}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `ibv_rc_pingpong -t`: the mlx5 provider reads each receive completion's timestamp,
/// which mlx5 silicon writes into every CQE (rdma-core sends no TIMESTAMP_COMPLETION flag
/// by write()); the device advertises a core clock, so the gaps between receives are
/// clock ticks, never all zero.
#[test]
fn ibv_rc_pingpong_timestamps_count_core_clock_ticks() {
    let args = ["-g", "0", "-p", "18730", "-t", "-n", "100"];
    let outs = server_and_client("pingpong-t", "ibv_rc_pingpong", &args);
    for (side, out) in [("server", &outs[0]), ("client", &outs[1])] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let ticks = |what: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(what))
                .and_then(|v| v.trim().parse::<f64>().ok())
        };
        let max = ticks("Max receive completion clock cycles = ");
        let avg = ticks("Average receive completion clock cycles = ");
        assert!(
            out.status.success() && max.is_some_and(|m| m > 0.0) && avg.is_some_and(|a| a > 0.0),
            "{side} of ibv_rc_pingpong -t: {}\nstdout:\n{stdout}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// What softhca does not model fails at the verb that needs it, at once, and the preload
/// library says what (the programs print only "Couldn't create QP" or an errno number).
#[test]
fn qp_types_softhca_does_not_model_fail_at_once_and_are_named() {
    let world = World::new("unmodelled");
    for (program, said) in [
        ("ibv_ud_pingpong", "CREATE_QP of a UD QP refused (EOPNOTSUPP)"),
        ("ibv_uc_pingpong", "CREATE_QP of a UC QP refused (EOPNOTSUPP)"),
        ("ibv_xsrq_pingpong", "OPEN_XRCD refused (EOPNOTSUPP)"),
    ] {
        // Each creates what softhca refuses before it connects: no server needed.
        let out = world.command("timeout", &["10", program, "-g", "0"]).output().expect("timeout");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code() == Some(1) && stderr.contains(said) && stderr.contains("README"),
            "{program}: {}\nstderr:\n{stderr}",
            out.status
        );
    }
}

/// librdmacm's programs (perftest's -R here; rping, ucmatose) find no
/// /dev/infiniband/rdma_cm: the preload library says that softhca has no connection
/// manager, instead of leaving "No such file or directory" or nothing.
#[test]
fn rdma_cm_programs_are_told_softhca_has_no_connection_manager() {
    let world = World::new("rdmacm");
    let args = ["10", "ib_send_bw", "-d", "mlx5_0", "-x", "0", "-R", "127.0.0.1"];
    let out = world.command("timeout", &args).output().expect("run timeout");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(1)
            && stderr.matches("/dev/infiniband/rdma_cm is not served").count() == 1,
        "ib_send_bw -R: {}\nstderr:\n{stderr}",
        out.status
    );
}
