//! `tests/c/close_while_waiting.c`, compiled against the installed DAT 2.0 headers and
//! libdat2, over libferrodat.so: `dat_evd_free` of an EVD no endpoint uses wakes a thread
//! waiting in `dat_evd_wait` (INFINITE) with DAT_ABORT and succeeds, of an endpoint's EVD
//! is refused and leaves the waiter waiting; an abrupt `dat_ia_close` wakes a thread
//! waiting in `dat_evd_wait` with DAT_ABORT, and the closed IA's handles are then refused
//! with DAT_INVALID_HANDLE — after libdat2 has dlclosed the provider, which must stay
//! mapped for that.

mod support;

use std::time::Duration;
use support::dapl::{DatWorld, IA_NAME, Running, build_c_consumer};

#[test]
fn freeing_an_evd_or_closing_its_ia_aborts_its_waiter_and_stale_handles_are_refused() {
    let world = DatWorld::new("c-close-wait");
    let Some(exe) =
        build_c_consumer(&world, "tests/tests/c/close_while_waiting.c", "close_while_waiting")
    else {
        return;
    };
    // Without softhca's progress thread (refused; an IA starts one by default): a thread of
    // the provider's with thread-local destructors would keep glibc from unmapping it
    // anyway, and the check of the mapping would prove nothing.
    let mut command = world.command(&exe, &["-P", IA_NAME]);
    command.env("FERRODAT_SOFTHCA_PROGRESS_THREAD", "0");
    let run = Running::spawn(command).finish(Duration::from_secs(60));
    let out = &run.output;
    assert!(out.contains("close_while_waiting: PASSED"), "{out}");
    for line in [
        "close_while_waiting: provider mapped after the last IA close: yes",
        "close_while_waiting: dat_evd_free under a waiter: DAT_SUCCESS",
        "close_while_waiting: the waiter on the freed EVD returned: DAT_ABORT",
        "close_while_waiting: dat_evd_dequeue of the freed EVD: DAT_INVALID_HANDLE",
        "close_while_waiting: dat_evd_free of an endpoint's EVD under a waiter: \
         DAT_INVALID_STATE DAT_INVALID_STATE_EVD_IN_USE",
        "close_while_waiting: the waiter still waits after the refused free: yes",
        "close_while_waiting: the waiter returned: DAT_ABORT",
        "close_while_waiting: dat_ep_free of the closed IA's endpoint: DAT_INVALID_HANDLE \
         DAT_INVALID_HANDLE_EP",
        "close_while_waiting: dat_evd_free of the closed IA's EVD: DAT_INVALID_HANDLE",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
}
