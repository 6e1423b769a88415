//! A receive that completes on the passive side before that side has seen ESTABLISHED.
//!
//! The active side reports ESTABLISHED as soon as it has sent its ready-to-use message,
//! and its consumer may send at once: the passive QP (already ready to receive since the
//! accept) takes the message while the ready-to-use message is still on its way to the
//! passive side's CM. DAT requires that the receive is not lost and that the passive
//! consumer sees ESTABLISHED first: a receive on a connection it does not know yet would
//! make no sense to it.

mod support;

use ferrodat_abi::dat::{dtos, evd_flags, event, mem_priv};
use ferrodat_engine::ep::Ep;
use ferrodat_engine::ep_state::DisconnectMode;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use ferrodat_engine::lmr::{Lmr, MemPriv};
use ferrodat_engine::pz::Pz;
use ferrodat_engine::sp::Psp;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const WAIT_US: u32 = 5_000_000;
const PORT: u16 = 31310;
const PORT_GATED: u16 = 31311;
const ROUNDS: u64 = 30;

#[test]
fn a_receive_before_established_comes_after_it_on_a_shared_evd_and_is_not_lost() {
    let server_ia = support::ia();
    let client_ia = support::ia();
    let server_pz = Pz::create(&server_ia).unwrap();
    let client_pz = Pz::create(&client_ia).unwrap();
    // The passive side takes everything on one EVD, as dapltest's server does.
    let shared = Evd::create(&server_ia, 64, evd_flags::DTO | evd_flags::CONNECTION).unwrap();
    let cr_evd = Evd::create(&server_ia, 8, evd_flags::CR).unwrap();
    let client_conn = Evd::create(&client_ia, 8, evd_flags::CONNECTION).unwrap();
    let client_dto = Evd::create(&client_ia, 64, evd_flags::DTO).unwrap();
    let server_buf = Lmr::alloc(&server_pz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    let client_buf = Lmr::alloc(&client_pz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    let _psp = Psp::create(&server_ia, PORT, &cr_evd).unwrap();
    let address = server_ia.attr().address;

    for round in 0..ROUNDS {
        let server_ep = Ep::create(&server_pz, &shared, &shared, Some(&shared), None).unwrap();
        let client_ep =
            Ep::create(&client_pz, &client_dto, &client_dto, Some(&client_conn), None).unwrap();
        server_ep.post_recv(&[server_buf.triplet(0, 64).unwrap()], 1000 + round, 0).unwrap();
        client_ep.connect(address, PORT, None, &[]).unwrap();
        let (request, _) = cr_evd.wait(WAIT_US, 1).unwrap();
        let Event::ConnectionRequest { cr, .. } = request else {
            panic!("round {round}: expected a connection request, got {request:?}")
        };

        // The client sends the moment it sees ESTABLISHED.
        let message = round.to_le_bytes();
        client_buf.write(2048, &message).unwrap();
        let client = std::thread::spawn({
            let (client_ep, client_conn, client_buf) =
                (client_ep.clone(), client_conn.clone(), client_buf.clone());
            move || {
                let (ev, _) = client_conn.wait(WAIT_US, 1).unwrap();
                assert!(
                    matches!(
                        ev,
                        Event::Connection { number: event::CONNECTION_EVENT_ESTABLISHED, .. }
                    ),
                    "round {round}: the client expected ESTABLISHED, got {ev:?}"
                );
                client_ep.post_send(&[client_buf.triplet(2048, 8).unwrap()], round, 0).unwrap();
            }
        });
        cr.accept(Some(&server_ep), &[]).unwrap();
        // The server waits on its shared EVD at once: the receive's completion is in the
        // CQ when the first harvest runs, often before the ready-to-use message arrived.
        let (first, _) = shared.wait(WAIT_US, 1).unwrap();
        assert!(
            matches!(first, Event::Connection { number: event::CONNECTION_EVENT_ESTABLISHED, .. }),
            "round {round}: the passive side must see ESTABLISHED before the receive, got {first:?}"
        );
        let (second, _) = shared.wait(WAIT_US, 1).unwrap();
        let Event::Dto { completion, .. } = second else {
            panic!("round {round}: expected the receive, got {second:?}")
        };
        assert_eq!(
            (completion.user_cookie, completion.status, completion.transfered_length),
            (1000 + round, 0, 8),
            "round {round}"
        );
        assert_eq!(completion.operation, dtos::RECEIVE);
        let mut got = [0u8; 8];
        server_buf.read(0, &mut got).unwrap();
        assert_eq!(u64::from_le_bytes(got), round, "round {round}: the received bytes");
        client.join().unwrap();
        let (sent, _) = client_dto.wait(WAIT_US, 1).unwrap();
        assert!(matches!(sent, Event::Dto { .. }), "round {round}: {sent:?}");

        client_ep.disconnect(DisconnectMode::Abrupt).unwrap();
        let (ev, _) = shared.wait(WAIT_US, 1).unwrap();
        assert!(
            matches!(ev, Event::Connection { number: event::CONNECTION_EVENT_DISCONNECTED, .. }),
            "round {round}: expected DISCONNECTED, got {ev:?}"
        );
        let (ev, _) = client_conn.wait(WAIT_US, 1).unwrap();
        assert!(matches!(ev, Event::Connection { .. }), "round {round}: {ev:?}");
        drop(server_ep);
        drop(client_ep);
    }
}

/// The race made certain: the active side is a bare CM connection and QP whose
/// ESTABLISHED handler sends, waits until the message has been received (its send
/// completion comes after the passive side's acknowledgement) and only then lets the RTU
/// go. Meanwhile the passive consumer waits on its EVD: the receive's completion is in the
/// CQ, yet nothing may come out before ESTABLISHED.
#[test]
fn a_receive_completed_before_the_rtu_is_held_until_established() {
    use ferrodat_driver::completion::{WcOpcode, WcStatus, WorkCompletion};
    use ferrodat_driver::work_request::{Payload, SendOp, SendWr};
    use ferrodat_driver::{Access, Cq, CqOptions, Pd, Qp, QpAttr, QpCaps, QpInit};
    use ferrodat_engine::cm::{self, Cm, CmEvent, Sink};

    let server_ia = support::ia();
    let server_pz = Pz::create(&server_ia).unwrap();
    let shared = Evd::create(&server_ia, 16, evd_flags::DTO | evd_flags::CONNECTION).unwrap();
    let cr_evd = Evd::create(&server_ia, 4, evd_flags::CR).unwrap();
    let server_buf = Lmr::alloc(&server_pz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    let _psp = Psp::create(&server_ia, PORT_GATED, &cr_evd).unwrap();
    let server_ep = Ep::create(&server_pz, &shared, &shared, Some(&shared), None).unwrap();
    server_ep.post_recv(&[server_buf.triplet(0, 64).unwrap()], 77, 0).unwrap();

    // The active side, below the DAT layer.
    let client_ia = support::ia();
    let ctx = client_ia.context();
    let pd = Pd::new(ctx).unwrap();
    let cq =
        Arc::new(Mutex::new(Cq::new(ctx, &CqOptions { cqe: 16, ..Default::default() }).unwrap()));
    let qp: Qp<'static> = {
        let cq = cq.lock().unwrap();
        Qp::new(&pd, &QpInit::new(&cq, &cq, QpCaps { max_inline_data: 64, ..Default::default() }))
            .unwrap()
    };
    let info = cm::local_conn_info(ctx, &qp, 4, 4).unwrap();
    let qp = Arc::new(Mutex::new(qp));
    qp.lock().unwrap().modify(&QpAttr::reset_to_init(Access::ALL)).unwrap();

    let (sent_tx, sent_rx) = channel::<WorkCompletion>();
    let (go_tx, go_rx) = channel::<()>();
    let go_rx = Mutex::new(go_rx);
    let sink: Sink = Arc::new({
        let (qp, cq) = (qp.clone(), cq.clone());
        move |ev: CmEvent| {
            let CmEvent::Established { peer, .. } = ev else { return };
            let mut qp = qp.lock().unwrap();
            cm::connect_qp(&mut qp, &info, &peer, Access::ALL).unwrap();
            let msg = 0x5eed_u64.to_le_bytes();
            qp.post_send(&[SendWr::new(1, SendOp::Send, Payload::Inline(&msg))]).unwrap();
            let mut wc = [WorkCompletion::default()];
            assert_eq!(cq.lock().unwrap().poll_wait(&mut wc, Duration::from_secs(5)), 1);
            sent_tx.send(wc[0]).unwrap();
            // The RTU leaves when this returns.
            let _ = go_rx.lock().unwrap().recv_timeout(Duration::from_secs(30));
        }
    });
    let client_cm = Cm::new(IpAddr::V4(Ipv4Addr::LOCALHOST)).unwrap();
    let _conn = client_cm
        .connect(IpAddr::V4(Ipv4Addr::LOCALHOST), PORT_GATED, &info, &[], None, sink)
        .unwrap();

    let (request, _) = cr_evd.wait(WAIT_US, 1).unwrap();
    let Event::ConnectionRequest { cr, .. } = request else { panic!("{request:?}") };
    cr.accept(Some(&server_ep), &[]).unwrap();
    let sent = sent_rx.recv_timeout(Duration::from_secs(10)).expect("the active side sent");
    assert_eq!((sent.opcode, sent.status), (WcOpcode::Send, WcStatus::Success));

    // The message is in the passive QP's buffer and its completion in the CQ, but the
    // consumer has not been told of the connection: nothing comes out yet.
    let early = shared.wait(200_000, 1);
    assert!(
        early.as_ref().is_err_and(|e| e.return_type() == ferrodat_abi::dat::ret::TIMEOUT_EXPIRED),
        "before ESTABLISHED the passive EVD must give nothing, got {early:?}"
    );
    go_tx.send(()).unwrap();
    let (first, _) = shared.wait(WAIT_US, 1).unwrap();
    assert!(
        matches!(first, Event::Connection { number: event::CONNECTION_EVENT_ESTABLISHED, .. }),
        "expected ESTABLISHED first, got {first:?}"
    );
    let (second, _) = shared.wait(WAIT_US, 1).unwrap();
    let Event::Dto { completion, .. } = second else {
        panic!("expected the receive, got {second:?}")
    };
    assert_eq!(
        (
            completion.user_cookie,
            completion.status,
            completion.transfered_length,
            completion.operation
        ),
        (77, 0, 8, dtos::RECEIVE)
    );
    let mut got = [0u8; 8];
    server_buf.read(0, &mut got).unwrap();
    assert_eq!(u64::from_le_bytes(got), 0x5eed);
    server_ep.disconnect(DisconnectMode::Abrupt).unwrap();
}
