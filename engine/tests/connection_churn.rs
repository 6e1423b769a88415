//! Connection churn as dtestcm makes it, alone in its test binary: a thousand connections
//! one after another must leave neither open files nor a grown heap behind, which only a
//! process running nothing else can tell.

mod support;

use ferrodat_abi::dat::event;
use ferrodat_engine::ep_state::DisconnectMode;
use ferrodat_engine::event::Event;
use ferrodat_engine::sp::Psp;
use support::{WAIT_US, connection, dto, side};

/// dtestcm's shape: a thousand connections, one after another, through one PSP, each
/// with fresh endpoints on both sides, established, checked with a message, torn down
/// and freed. Nothing may leak: the process's open files are the same at the end, and its
/// heap does not grow with the connections (each one's QPs used to stay attached to the
/// CQs that never saw an entry of theirs, 3 KiB a connection: 2.7 MiB over the last 900).
#[test]
fn a_thousand_connections_through_one_psp() {
    const CONNECTIONS: u64 = 1000;
    let server = side();
    let client = side();
    let psp = Psp::create(&server.ia, 31173, &server.cr_evd).unwrap();
    let open_fds = || std::fs::read_dir("/proc/self/fd").unwrap().count();
    let mut fds_after_first = 0;
    let mut heap_at_100 = 0;
    for i in 0..CONNECTIONS {
        let server_ep = server.another_ep();
        let client_ep = client.another_ep();
        server_ep.post_recv(&[server.buf.triplet(0, 64).unwrap()], i, 0).unwrap();
        client_ep.connect(server.ia.attr().address, 31173, None, &i.to_le_bytes()).unwrap();
        let Event::ConnectionRequest { cr, sp, .. } = server.cr_evd.wait(WAIT_US, 1).unwrap().0
        else {
            panic!("connection {i}: expected a request")
        };
        assert_eq!(sp, psp.id());
        assert_eq!(
            cr.query().unwrap().private_data,
            i.to_le_bytes(),
            "connection {i}: private data"
        );
        cr.accept(Some(&server_ep), b"").unwrap();
        for (who, evd) in [("client", &client.conn_evd), ("server", &server.conn_evd)] {
            let (number, _) = connection(evd.wait(WAIT_US, 1).unwrap().0);
            assert_eq!(number, event::CONNECTION_EVENT_ESTABLISHED, "connection {i}, {who}");
        }
        client.buf.write(4096, &i.to_le_bytes()).unwrap();
        client_ep.post_send(&[client.buf.triplet(4096, 8).unwrap()], i, 0).unwrap();
        let r = dto(server.recv_evd.wait(WAIT_US, 1).unwrap().0);
        assert_eq!((r.user_cookie, r.status, r.transfered_length), (i, 0, 8), "connection {i}");
        assert_eq!(dto(client.req_evd.wait(WAIT_US, 1).unwrap().0).user_cookie, i);

        client_ep.disconnect(DisconnectMode::Abrupt).unwrap();
        for (who, evd) in [("client", &client.conn_evd), ("server", &server.conn_evd)] {
            let (number, _) = connection(evd.wait(WAIT_US, 1).unwrap().0);
            assert_eq!(number, event::CONNECTION_EVENT_DISCONNECTED, "connection {i}, {who}");
        }
        client_ep.free().unwrap();
        server_ep.free().unwrap();
        if i == 0 {
            fds_after_first = open_fds();
        }
        if i == 100 {
            heap_at_100 = anonymous_memory_kib();
        }
    }
    let growth = anonymous_memory_kib().saturating_sub(heap_at_100);
    assert!(growth < 1024, "anonymous memory grew {growth} KiB over the last 900 connections");
    // The CM may still be closing the last sockets: give it a moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while open_fds() > fds_after_first && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        open_fds() <= fds_after_first,
        "{} fds open after {CONNECTIONS} connections, {fds_after_first} after the first",
        open_fds()
    );
}

/// The process's anonymous resident memory (its heap, mostly), from /proc.
fn anonymous_memory_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("RssAnon:")).expect("RssAnon in status");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("a number of kB")
}
