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
    Lmr::sync_rdma(&[&a, &b], &[t, b.triplet(0, 4096).unwrap()]).unwrap();
    let outside = ferrodat_engine::lmr::LmrTriplet { segment_length: 20_000, ..t };
    assert!(Lmr::sync_rdma(&[&a, &b], &[outside]).unwrap_err().to_string().contains("not inside"));
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
