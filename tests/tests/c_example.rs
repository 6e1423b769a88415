//! The C example `capi/examples/c/hello_dat.c`, compiled against the installed DAT 2.0
//! headers and libdat2, runs as a server and a client process over libferrodat.so: a
//! connection with private data both ways, a SEND each way, the error answers a consumer
//! relies on (bare DAT_QUEUE_EMPTY, DAT_INVALID_HANDLE for a freed or wrong-type handle, a
//! NULL IOV refused), a graceful close, and a second open after libdat2 unloaded and
//! reloaded the provider.

mod support;

use std::time::Duration;
use support::dapl::{DatWorld, IA_NAME, Running, build_c_consumer, port_lock, server_then_client};

#[test]
fn the_c_example_connects_exchanges_messages_and_checks_the_error_rules() {
    let _ports = port_lock();
    let world = DatWorld::new("c-example");
    let Some(exe) = build_c_consumer(&world, "capi/examples/c/hello_dat.c", "hello_dat") else {
        return;
    };
    let server = Running::spawn(world.command(&exe, &["-s", "-P", IA_NAME]));
    let (server, client) = server_then_client(
        &world,
        server,
        "hello_dat server: listening",
        None,
        world.command(&exe, &["-c", "127.0.0.1", "-P", IA_NAME]),
        Duration::from_secs(120),
    );
    for (side, run) in [("server", &server), ("client", &client)] {
        assert!(
            run.output.contains(&format!("hello_dat {side}: PASSED")),
            "hello_dat {side} did not pass:\n{}",
            run.tail(20)
        );
        // The deliberate misuses were answered, and the provider said why.
        assert!(run.output.contains("is not a live ferrodat LMR handle"), "{}", run.output);
        assert!(run.output.contains("is of type PZ where one of type EP was expected"));
    }
}

/// A dat.conf entry whose instance data names no usable device is not registered: the
/// open fails as "provider not found", and the provider said on stderr what to fix.
#[test]
fn an_entry_with_bad_instance_data_is_refused_with_the_reason() {
    let world = DatWorld::with_instance_data("c-example-bad-entry", "softhca0 0 127.0.0.1");
    let Some(exe) = build_c_consumer(&world, "capi/examples/c/hello_dat.c", "hello_dat") else {
        return;
    };
    let out = world.command(&exe, &["-s", "-P", IA_NAME]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("FAILED at dat_ia_open"), "{stdout}");
    assert!(stdout.contains("DAT_PROVIDER_NOT_FOUND"), "{stdout}");
    assert!(stderr.contains("port \"0\" is not a number from 1 to 255"), "{stderr}");
    assert!(stderr.contains("ferrodat conf"), "{stderr}");
}
