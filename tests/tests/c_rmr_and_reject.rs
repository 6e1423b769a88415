//! `tests/c/rmr_and_reject.c`, compiled against the installed DAT 2.0 headers and libdat2,
//! runs as a server and a client process over libferrodat.so: `dat_ep_modify` of the
//! queue sizes (and a read-only field refused), `dat_ep_recv_query`, `dat_psp_create_any`
//! (the client is told the conn_qual the server printed), `dat_cr_reject` with private
//! data that the client sees with PEER_REJECTED, and an RMR (`dat_rmr_create`,
//! `dat_rmr_bind` on the connected endpoint, its completion event, `dat_rmr_query`) that
//! the client RDMA-writes through before the server frees it (`dat_rmr_free`). The
//! program's lines are checked here, values included; its exit code alone says little.

mod support;

use std::time::Duration;
use support::dapl::{DatWorld, IA_NAME, Running, build_c_consumer};

/// The rest of the line of `output` after `prefix`; panics (showing the output) if no line
/// has it.
fn after<'a>(output: &'a str, prefix: &str) -> &'a str {
    output
        .lines()
        .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no line with {prefix:?} in:\n{output}"))
}

fn hex(s: &str) -> u32 {
    u32::from_str_radix(s.trim_start_matches("0x"), 16)
        .unwrap_or_else(|e| panic!("{s:?} is not a hex number: {e}"))
}

#[test]
fn rmr_bind_reject_with_private_data_psp_create_any_modify_and_recv_query_through_libdat2() {
    let world = DatWorld::new("c-rmr-reject");
    let Some(exe) = build_c_consumer(&world, "tests/tests/c/rmr_and_reject.c", "rmr_and_reject")
    else {
        return;
    };
    let mut server = Running::spawn(world.command(&exe, &["-s", "-P", IA_NAME]));
    let listening = "rmr_and_reject server: listening on conn_qual ";
    if !server.wait_for(listening, Duration::from_secs(60)) {
        let run = server.finish(Duration::from_secs(1));
        panic!("the server never listened:\n{}", run.tail(30));
    }
    let q: u16 = after(server.seen(), listening).trim().parse().expect("a conn_qual");
    assert!((20000..=29999).contains(&q), "dat_psp_create_any picked {q}, outside 20000-29999");

    let q_arg = q.to_string();
    let client =
        Running::spawn(world.command(&exe, &["-c", "127.0.0.1", "-q", &q_arg, "-P", IA_NAME]))
            .finish(Duration::from_secs(120));
    let server = server.finish(Duration::from_secs(30));
    let (s, c) = (&server.output, &client.output);
    assert!(
        s.contains("rmr_and_reject server: PASSED"),
        "server:\n{s}\nclient:\n{}",
        client.tail(20)
    );
    assert!(
        c.contains("rmr_and_reject client: PASSED"),
        "client:\n{c}\nserver:\n{}",
        server.tail(20)
    );

    // dat_ep_modify changed the queue sizes (from the provider's defaults) and refused a
    // read-only field with the argument it names.
    assert_eq!(after(s, "server: ep_modify: "), "max_request_dtos 16 -> 8, max_recv_dtos 16 -> 8");
    assert_eq!(
        after(s, "server: ep_modify of the IA handle refused: "),
        "DAT_INVALID_PARAMETER DAT_INVALID_ARG2"
    );
    // dat_ep_recv_query: the two receives posted, then none once both messages arrived.
    assert_eq!(after(s, "server: ep_recv_query: "), "2 buffers, span 2");
    assert_eq!(after(s, "server: ep_recv_query after both messages: "), "0 buffers, span 0");

    // dat_cr_reject's private data reached the client with PEER_REJECTED.
    assert_eq!(after(s, "server: rejected the first request with "), "12 bytes of private data");
    assert_eq!(after(c, "client: PEER_REJECTED with "), "12 bytes of private data: not now, sir");

    // The RMR: a context of its own (the LMR grants no remote access), the one the client
    // wrote through; the LMR could not be freed while it was bound; gone after the free.
    let bound = after(s, "server: rmr bound: rmr_context ");
    let (ctx, own) = bound.split_once(" (the LMR's own: ").expect("both contexts");
    let (ctx, own) = (hex(ctx), hex(own.trim_end_matches(')')));
    assert_ne!(ctx, own, "the RMR's context is not the LMR's");
    let written = after(c, "client: wrote 64 bytes through rmr_context ");
    assert_eq!(hex(written), ctx, "the client wrote through the RMR's context");
    assert!(s.contains("the client's RDMA write of 64 bytes landed through the RMR"), "{s}");
    assert_eq!(
        after(s, "server: lmr_free while an RMR is bound in it refused: "),
        "DAT_INVALID_STATE DAT_INVALID_STATE_LMR_IN_USE"
    );
    assert!(s.contains("RMR(s) are bound in this LMR; unbind them"), "the provider said why:\n{s}");
    assert_eq!(
        after(s, "server: rmr_query after rmr_free refused: "),
        "DAT_INVALID_HANDLE DAT_INVALID_HANDLE_RMR"
    );
}
