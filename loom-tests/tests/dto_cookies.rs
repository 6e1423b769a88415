//! Loom model of the DTO cookie ring (`engine/src/dto.rs`): a poster fills slots while a
//! harvester turns completions into events on another thread. The harvester always reads
//! the cookie that was posted in the slot, and a slot is never overwritten before its
//! completion was harvested, even when the poster runs into a full ring and retries.
#![cfg(loom)]

use ferrodat_abi::dat::dtos;
use ferrodat_engine::dto::{Cookie, CookieRing};
use loom::sync::Arc;
use loom::thread;

fn cookie(n: u64) -> Cookie {
    Cookie { user_cookie: 1000 + n, length: n, operation: dtos::SEND, suppress: false }
}

#[test]
fn the_harvester_reads_each_posted_cookie_and_slots_are_reused_only_after_it() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound.get_or_insert(3);
    b.check(|| {
        let ring = Arc::new(CookieRing::new(2));
        const N: u64 = 3; // one more than the ring holds: the third post waits for a harvest
        let poster = {
            let ring = ring.clone();
            thread::spawn(move || {
                for n in 0..N {
                    loop {
                        match ring.reserve(cookie(n)) {
                            Ok(wr_id) => {
                                assert_eq!(wr_id, n);
                                ring.commit();
                                break;
                            }
                            Err(_) => thread::yield_now(), // full: wait for the harvester
                        }
                    }
                }
            })
        };
        // The harvester: the device would report slot n's completion only after it was
        // posted; here it waits until the slot is committed.
        for n in 0..N {
            while ring.committed() <= n as u32 {
                thread::yield_now();
            }
            assert_eq!(ring.complete(n), cookie(n), "slot {n}");
        }
        poster.join().unwrap();
        assert_eq!(ring.outstanding(), 0);
    });
}
