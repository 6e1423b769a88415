//! A device that fails for good, seen through the DAT API: softhca fails when this process
//! loses its registry (the file truncated under its mapping), and reports DEVICE_FATAL,
//! which the IA reports as `DAT_ASYNC_ERROR_IA_CATASTROPHIC`; the endpoints' outstanding
//! receives complete as flushed. Its own test binary: it breaks the device every other test
//! of a binary would share.

mod support;

use ferrodat_abi::dat::{dto_status, evd_flags, event};
use ferrodat_engine::evd::Evd;
use ferrodat_engine::event::Event;
use support::{WAIT_US, connected};

#[test]
fn a_failed_device_is_catastrophic_for_the_ia_and_flushes_its_receives() {
    let (server, client, _psp) = connected(31470);
    let async_evd = Evd::create(&client.ia, 8, evd_flags::ASYNC).unwrap();
    client.ia.set_async_evd(&async_evd);
    client.ep.post_recv(&[client.buf.triplet(0, 64).unwrap()], 7, 0).unwrap();
    assert!(client.recv_evd.dequeue().is_err(), "nothing completes while the device works");

    let device = ferrodat_softhca::device::Device::open("softhca0").expect("the IA's device");
    let registry = device.engine().registry().path().to_owned();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&registry)
        .and_then(|f| f.set_len(0))
        .expect("truncate the registry");

    // Waiting for the receive drives progress, which loses the registry and fails the
    // device: the receive is flushed rather than waited for until the timeout.
    let Event::Dto { completion, .. } = client.recv_evd.wait(WAIT_US, 1).unwrap().0 else {
        panic!("expected the receive's completion")
    };
    assert_eq!((completion.user_cookie, completion.status), (7, dto_status::ERR_FLUSHED));
    assert_eq!(
        async_evd.wait(WAIT_US, 1).unwrap().0,
        Event::Async { number: event::ASYNC_ERROR_IA_CATASTROPHIC, object: 0 }
    );
    drop(server);
}
