//! Loom model of the early-receive gate (`engine/src/evd/early_completions.rs`): the CM
//! thread reports ESTABLISHED and releases the gate while the harvester admits receives
//! that completed before it. Every receive comes out exactly once, in order, and none
//! before ESTABLISHED was reported — whichever way the two threads interleave, including
//! a harvest that runs out of room.
#![cfg(loom)]

use ferrodat_engine::evd::early_completions::{Admitted, EarlyCompletions};
use ferrodat_engine::event::Event;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;

fn receive(n: u64) -> Event {
    Event::Software { pointer: n }
}

fn model(room: usize) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(move || {
        let gate = Arc::new(EarlyCompletions::default());
        gate.close(); // the accept
        let established = Arc::new(AtomicBool::new(false));
        // Set by the CM thread when release() says parked receives wait (the endpoint
        // goes on its EVD's released list, which the next harvest reads).
        let listed = Arc::new(AtomicBool::new(false));
        let cm = {
            let (gate, established, listed) = (gate.clone(), established.clone(), listed.clone());
            thread::spawn(move || {
                established.store(true, Ordering::SeqCst); // ESTABLISHED reported
                if gate.release() {
                    listed.store(true, Ordering::SeqCst);
                }
            })
        };
        let mut out = Vec::new();
        let mut sink = |ev: Event| {
            assert!(established.load(Ordering::SeqCst), "{ev:?} came out before ESTABLISHED");
            out.push(ev);
        };
        // The harvester finds two receives in the CQ, one poll each.
        for n in 0..2 {
            if !gate.is_open() {
                if let Admitted::Delivered(_) = gate.admit(receive(n), false, room, &mut sink) {
                    if !gate.is_open() {
                        listed.store(true, Ordering::SeqCst); // the harvest lists it itself
                    }
                }
            } else {
                sink(receive(n));
            }
        }
        cm.join().unwrap();
        // Later harvests deliver what is still parked.
        while listed.load(Ordering::SeqCst) {
            let (_, more) = gate.deliver_released(room.max(1), &mut sink);
            listed.store(more, Ordering::SeqCst);
        }
        assert_eq!(out, [receive(0), receive(1)]);
        assert!(gate.is_open(), "the gate ends open");
    });
}

#[test]
fn receives_parked_before_established_come_out_once_in_order_after_it() {
    model(4);
}

#[test]
fn a_harvest_without_room_leaves_the_rest_parked_in_order() {
    model(1);
}
