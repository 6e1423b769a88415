//! softhca's one-sided placement (`softhca/src/hca/placement.rs`): a requester copies an
//! RDMA WRITE into a peer's exported memory itself, guarded by two protocols of the same
//! shape, each a flag the placer raises against a permission the peer takes away, with a
//! SeqCst fence between each side's store and its load (Dekker's pattern):
//!
//! - **withdrawal** (`fabric/memory_export.rs`): the placer claims a user slot (CAS 0 ->
//!   its pid), fence, loads the region's live word and copies only if it is set, then
//!   frees its slot with Release; DEREG_MR stores the live word 0, fence, then waits
//!   (Acquire loads) until every slot is 0;
//! - **the gate** (`fabric/ring.rs`, `set_placing`): the placer stores its gate 1, fence,
//!   loads the peer QP's facts and copies only if they allow it, then stores the gate 0
//!   with Release; a MODIFY_QP or DESTROY_QP that takes placement away stores the new
//!   facts, fence (`wait_while_producer_places`), then waits until the gate is 0.
//!
//! What a user relies on: once DEREG_MR (or the MODIFY_QP) has returned, nothing the
//! placer copies lands in the memory, which the application may be reusing. The models
//! check that over every interleaving: the peer "reuses" the memory (stores 2) after its
//! wait, and the placer's copy (a store of 1) never lands after that. The copy is a
//! Relaxed store, as the real one is a plain memcpy. (Loom does not model SeqCst loads and
//! stores, only SeqCst fences: the shipped code uses fences for that reason too.)
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use loom::sync::atomic::{AtomicU64, fence};
use loom::thread;

/// The words one protocol touches: the placer's flag (a user slot, or the gate), the
/// peer's permission (the live word, or the facts), and the memory.
struct Shared {
    flag: AtomicU64,
    permission: AtomicU64,
    memory: AtomicU64,
}

/// Runs one model: `raise` is how the placer raises its flag (a CAS or a store); then the
/// fence, and it copies only if it still sees the permission.
fn model(raise: fn(&AtomicU64) -> bool) {
    loom::model(move || {
        let s = Arc::new(Shared {
            flag: AtomicU64::new(0),
            permission: AtomicU64::new(1),
            memory: AtomicU64::new(0),
        });
        let placer = {
            let s = s.clone();
            thread::spawn(move || {
                if !raise(&s.flag) {
                    return;
                }
                fence(SeqCst);
                if s.permission.load(Relaxed) == 1 {
                    s.memory.store(1, Relaxed); // the copy
                }
                s.flag.store(0, Release);
            })
        };
        // The peer: take the permission away, fence, wait for the flag to drop, reuse.
        s.permission.store(0, Relaxed);
        fence(SeqCst);
        while s.flag.load(Acquire) != 0 {
            thread::yield_now();
        }
        s.memory.store(2, Relaxed);
        placer.join().unwrap();
        assert_eq!(s.memory.load(Relaxed), 2, "a copy landed after the peer's wait");
    });
}

#[test]
fn withdrawal_lets_no_copy_land_after_dereg_mr() {
    // A user slot: CAS 0 -> pid.
    model(|slot| slot.compare_exchange(0, 42, Relaxed, Relaxed).is_ok());
}

#[test]
fn the_gate_lets_no_copy_land_after_a_facts_change() {
    // The gate: a plain store.
    model(|gate| {
        gate.store(1, Relaxed);
        true
    });
}
