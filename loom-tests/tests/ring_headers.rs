//! The softhca ring's record publication (`softhca/src/fabric/ring.rs`, "Headers"): the
//! producer writes a record's body, then its header with Release, then the tail; the
//! consumer polls the header at its head with Acquire (not the tail), reads the body,
//! zeroes the record and stores its head with Release; the producer reuses space only
//! after loading that head with Acquire.
//!
//! The model checks, over every interleaving, that the consumer sees each record exactly
//! once, in order, with the body the producer wrote — in particular that a zeroed slot
//! reused in the next lap is never mistaken for, or mixed with, an older record. The
//! ring holds two 2-word records (header, body); three records make the producer reuse
//! the first slot. Volatile word copies of the real code are Relaxed atomics here.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::AtomicU64;
use loom::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use loom::thread;

const AREA_WORDS: u64 = 4;
const RECORD_WORDS: u64 = 2;
const RECORDS: u64 = 3;

struct Ring {
    area: [AtomicU64; AREA_WORDS as usize],
    head: AtomicU64,
    tail: AtomicU64,
}

/// A record header: never zero (the real one carries a non-zero epoch tag).
fn header(i: u64) -> u64 {
    0x1_0000 | i
}

fn body(i: u64) -> u64 {
    0xb0d7_0000 + i
}

#[test]
fn header_published_records_with_consumer_zeroing() {
    loom::model(|| {
        let ring = Arc::new(Ring {
            area: std::array::from_fn(|_| AtomicU64::new(0)),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
        });

        let producer = {
            let ring = ring.clone();
            thread::spawn(move || {
                let mut tail = 0u64;
                for i in 0..RECORDS {
                    // Free space from the consumer's head (Acquire: its zeroing is done).
                    while tail + RECORD_WORDS - ring.head.load(Acquire) > AREA_WORDS {
                        thread::yield_now();
                    }
                    let at = (tail % AREA_WORDS) as usize;
                    ring.area[at + 1].store(body(i), Relaxed);
                    ring.area[at].store(header(i), Release);
                    tail += RECORD_WORDS;
                    ring.tail.store(tail, Release);
                }
            })
        };

        let mut head = 0u64;
        for i in 0..RECORDS {
            let at = (head % AREA_WORDS) as usize;
            let seen = loop {
                let h = ring.area[at].load(Acquire);
                if h != 0 {
                    break h;
                }
                thread::yield_now();
            };
            assert_eq!(seen, header(i), "record {i}: a stale or foreign header");
            assert_eq!(ring.area[at + 1].load(Relaxed), body(i), "record {i}: body");
            ring.area[at + 1].store(0, Relaxed);
            ring.area[at].store(0, Relaxed);
            head += RECORD_WORDS;
            ring.head.store(head, Release);
        }
        producer.join().unwrap();
        assert_eq!(ring.tail.load(Acquire), RECORDS * RECORD_WORDS);
    });
}
