//! `tests/c/cno_fd.c`, compiled against the installed DAT 2.0 headers and libdat2, over
//! libferrodat.so: an event loop's use of `dat_cno_fd_create` and `dat_cno_trigger` (called
//! through `udat_redirection.h`'s macros: the stock libdat2 exports neither). The receive
//! EVD of a connected endpoint reports to a CNO with a file descriptor; each message makes
//! the fd readable for poll(2), the trigger names the EVD, and after the dequeue the fd is
//! unreadable again; a software event triggers it too; `dat_cno_query` reports the fd,
//! `dat_cno_free` closes it. The program's lines are checked here, values included.

mod support;

use std::time::Duration;
use support::dapl::{DatWorld, IA_NAME, Running, build_c_consumer};

#[test]
fn an_event_loop_polls_the_cnos_fd_and_triggers_through_libdat2() {
    let world = DatWorld::new("c-cno-fd");
    let Some(exe) = build_c_consumer(&world, "tests/tests/c/cno_fd.c", "cno_fd") else {
        return;
    };
    let run = Running::spawn(world.command(&exe, &["-P", IA_NAME, "-n", "200"]))
        .finish(Duration::from_secs(120));
    let out = &run.output;
    assert!(out.contains("cno_fd: PASSED"), "{out}");
    for line in [
        "cno_fd: dat_cno_fd_create with a NULL fd pointer: DAT_INVALID_PARAMETER \
         DAT_INVALID_ARG2",
        "cno_fd: dat_cno_fd_create with a NULL CNO pointer: DAT_INVALID_PARAMETER \
         DAT_INVALID_ARG3",
        "cno_fd: dat_cno_query: proxy_type 2, the fd: yes",
        "cno_fd: readable before anything happened: no",
        "cno_fd: dat_cno_trigger with a NULL EVD pointer: DAT_INVALID_PARAMETER \
         DAT_INVALID_ARG2",
        "cno_fd: dat_cno_trigger of an EVD handle: DAT_INVALID_HANDLE DAT_INVALID_HANDLE_CNO",
        "cno_fd: trigger before any message: DAT_HANDLE_NULL",
        "cno_fd: readable before any message: no",
        "cno_fd: 200 messages received through poll and dat_cno_trigger, 0 empty triggers",
        "cno_fd: software event: the trigger names its EVD: yes",
        "cno_fd: readable after the software event was taken: no",
        "cno_fd: dat_cno_free with EVDs reporting to it: DAT_INVALID_STATE \
         DAT_INVALID_STATE_CNO_IN_USE",
        "cno_fd: the fd is closed after dat_cno_free: yes",
        "cno_fd: dat_cno_trigger after dat_cno_free: DAT_INVALID_HANDLE DAT_INVALID_HANDLE_CNO",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
}
