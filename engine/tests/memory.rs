//! PZs and LMRs over softhca: registration, contexts, bounds, the PZ's users.

mod support;

use ferrodat_abi::dat::{mem_priv, ret, subtype};
use ferrodat_engine::lmr::{Lmr, MemPriv};
use ferrodat_engine::pz::Pz;

#[test]
fn lmrs_register_consumer_and_owned_memory_with_distinct_contexts() {
    let ia = support::ia();
    let pz = Pz::create(&ia).unwrap();
    let mut buf = vec![0u8; 10_000];
    // SAFETY: `buf` outlives the LMR (dropped at the end of the test, after it) and is not
    // touched through Rust while registered.
    let a =
        unsafe { Lmr::create_virtual(&pz, buf.as_mut_ptr().add(3), 9_000, MemPriv(mem_priv::ALL)) }
            .unwrap();
    let b = Lmr::alloc(&pz, 4096, MemPriv(mem_priv::LOCAL_WRITE)).unwrap();
    assert_eq!(a.registered_address(), buf.as_ptr() as u64 + 3, "unaligned start kept");
    assert_eq!(a.registered_size(), 9_000);
    assert_ne!(a.lmr_context(), b.lmr_context());
    assert_ne!(a.rmr_context(), b.rmr_context());
    a.write(8_990, b"0123456789").unwrap();
    let mut back = [0u8; 10];
    a.read(8_990, &mut back).unwrap();
    assert_eq!(&back, b"0123456789");
    assert!(a.write(8_995, b"0123456789").is_err(), "past the end");
    let t = a.triplet(100, 50).unwrap();
    assert_eq!(
        (t.lmr_context, t.virtual_address, t.segment_length),
        (a.lmr_context(), a.registered_address() + 100, 50)
    );
    let e = a.triplet(8_999, 2).unwrap_err();
    assert_eq!(e.code(), ferrodat_engine::error::DatError::invalid_parameter(2).code());
    Lmr::sync_rdma(&[&a, &b], [t, b.triplet(0, 4096).unwrap()]).unwrap();
    let outside = ferrodat_engine::lmr::LmrTriplet { segment_length: 20_000, ..t };
    assert!(Lmr::sync_rdma(&[&a, &b], [outside]).unwrap_err().to_string().contains("not inside"));
    drop((a, b));
    drop(buf);
}

#[test]
fn bad_registrations_are_refused_with_the_argument_named() {
    let ia = support::ia();
    let pz = Pz::create(&ia).unwrap();
    let mut buf = [0u8; 16];
    // SAFETY: refused before anything is registered.
    let zero = unsafe { Lmr::create_virtual(&pz, buf.as_mut_ptr(), 0, MemPriv(mem_priv::ALL)) };
    assert_eq!(
        zero.unwrap_err().code(),
        ferrodat_engine::error::DatError::invalid_parameter(3).code()
    );
    let bad = Lmr::alloc(&pz, 64, MemPriv(0x8000)).unwrap_err();
    assert_eq!(bad.return_type(), ret::INVALID_PARAMETER);
}

#[test]
fn a_pz_in_use_is_not_freed() {
    let ia = support::ia();
    let pz = Pz::create(&ia).unwrap();
    let lmr = Lmr::alloc(&pz, 64, MemPriv(mem_priv::LOCAL_WRITE)).unwrap();
    let (pz, e) = pz.free().unwrap_err();
    assert_eq!(e.return_type(), ret::INVALID_STATE);
    assert_eq!(e.subtype(), subtype::INVALID_STATE_PZ_IN_USE);
    assert!(e.to_string().contains("free them first"), "{e}");
    drop(lmr);
    pz.free().expect("free once nothing uses it");
}

/// `DAT_MEM_TYPE_LMR`: another LMR's memory registered again, with rights of its own: the
/// peer reads through the new context but may not write, and the new registration outlives
/// the original's free (the memory the original owned stays with it). Another IA's LMR is
/// refused.
#[test]
fn a_region_registered_again_has_its_own_rights_and_outlives_the_original() {
    use ferrodat_abi::dat::{dto_status, event};
    use ferrodat_engine::event::Event;
    use ferrodat_engine::lmr::RmrTriplet;
    let (server, client, _psp) = support::connected(31269);
    let original = Lmr::alloc(&server.pz, 4096, MemPriv(mem_priv::ALL)).unwrap();
    original.write(100, b"registered twice").unwrap();
    let read_only = Lmr::create_from(
        &original,
        &server.pz,
        MemPriv(mem_priv::REMOTE_READ | mem_priv::LOCAL_READ),
    )
    .unwrap();
    assert_eq!(
        (read_only.registered_address(), read_only.registered_size()),
        (original.registered_address(), original.registered_size()),
        "the same memory"
    );
    assert_ne!(read_only.lmr_context(), original.lmr_context());
    assert_ne!(read_only.rmr_context(), original.rmr_context());
    original.free().unwrap();

    let status = |client: &support::Side| match client.req_evd.wait(support::WAIT_US, 1).unwrap().0
    {
        Event::Dto { completion, .. } => completion.status,
        other => panic!("expected a DTO completion, got {other:?}"),
    };
    let remote = RmrTriplet {
        rmr_context: read_only.rmr_context(),
        virtual_address: read_only.registered_address() + 100,
        segment_length: 16,
    };
    let into = client.buf.triplet(0, 16).unwrap();
    client.ep.post_rdma_read(&[into], 1, &remote, 0).unwrap();
    assert_eq!(status(&client), dto_status::SUCCESS, "read through the new context");
    let mut got = [0u8; 16];
    client.buf.read(0, &mut got).unwrap();
    assert_eq!(&got, b"registered twice", "after the original's free");
    client.ep.post_rdma_write(&[into], 2, &remote, 0).unwrap();
    assert_eq!(status(&client), dto_status::ERR_REMOTE_ACCESS, "no REMOTE_WRITE right");
    // The connection ends: BROKEN here, or DISCONNECTED if the responder, whose QP the
    // bad access put in ERR too, ended it first (whichever the CM delivers first).
    match client.conn_evd.wait(support::WAIT_US, 1).unwrap().0 {
        Event::Connection {
            number: event::CONNECTION_EVENT_BROKEN | event::CONNECTION_EVENT_DISCONNECTED,
            ..
        } => {}
        other => panic!("a failed RDMA WRITE ends the connection, got {other:?}"),
    }

    let elsewhere = Pz::create(&support::ia()).unwrap();
    let e = Lmr::create_from(&read_only, &elsewhere, MemPriv(mem_priv::ALL)).unwrap_err();
    assert_eq!(e.code(), ferrodat_engine::error::DatError::invalid_parameter(3).code());
    assert!(e.to_string().contains("another IA"), "{e}");
}

/// A registration of a registration of memory an LMR owns keeps that memory, whichever
/// of the three is freed first (found by review: the third one's memory was freed with
/// the first two, and writing through it crashed).
#[test]
fn a_region_registered_again_twice_keeps_the_owned_memory() {
    let ia = support::ia();
    let pz = Pz::create(&ia).unwrap();
    let a = Lmr::alloc(&pz, 1 << 20, MemPriv(mem_priv::ALL)).unwrap();
    let b = Lmr::create_from(&a, &pz, MemPriv(mem_priv::ALL)).unwrap();
    let c = Lmr::create_from(&b, &pz, MemPriv(mem_priv::ALL)).unwrap();
    a.free().unwrap();
    b.free().unwrap();
    c.write(0, b"still here").unwrap();
    let mut got = [0u8; 10];
    c.read(0, &mut got).unwrap();
    assert_eq!(&got, b"still here");
}
