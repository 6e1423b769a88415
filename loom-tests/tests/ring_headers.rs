//! The softhca ring's record publication (`softhca/src/fabric/ring.rs`, "Headers"): the
//! producer writes a record's body, zeroes the word just past it (where the next header
//! goes) unless the ring is then full by the head it last loaded, then stores the header
//! with Release, then the tail; the consumer polls the header at its head with Acquire
//! (not the tail), reads the body, zeroes only the header and stores its head with
//! Release; the producer reuses space only after loading that head with Acquire.
//!
//! The model checks, over every interleaving, that the consumer sees each record exactly
//! once, in order, with the body the producer wrote — in particular that a body word of
//! one lap, which is never wiped, is never taken for a header when the next lap puts a
//! header position on it. The ring holds four words; records of 3, 1, 2 and 2 words
//! (header included) make the second lap's last header land on the first record's body,
//! and the second record fills the ring when the consumer has not moved yet. Volatile
//! word copies and `memmove`s of the real code are Relaxed atomics here.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::AtomicU64;
use loom::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use loom::thread;

const AREA_WORDS: u64 = 4;
/// Words of each record, header included.
const RECORD_WORDS: [u64; 4] = [3, 1, 2, 2];

struct Ring {
    area: [AtomicU64; AREA_WORDS as usize],
    head: AtomicU64,
    tail: AtomicU64,
}

/// A record header: never zero (the real one carries a non-zero epoch tag).
fn header(i: usize) -> u64 {
    0x1_0000 | i as u64
}

/// Body word `k` of record `i`: never zero, never a header.
fn body(i: usize, k: u64) -> u64 {
    0xb0d7_0000 + 16 * i as u64 + k
}

#[test]
fn header_published_records_with_header_position_zeroing() {
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
                for (i, &words) in RECORD_WORDS.iter().enumerate() {
                    // Free space from the consumer's head (Acquire: its zeroing is done).
                    let head = loop {
                        let head = ring.head.load(Acquire);
                        if tail + words - head <= AREA_WORDS {
                            break head;
                        }
                        thread::yield_now();
                    };
                    let at = tail % AREA_WORDS;
                    for k in 1..words {
                        ring.area[((at + k) % AREA_WORDS) as usize].store(body(i, k), Relaxed);
                    }
                    let end = tail + words;
                    if end - head < AREA_WORDS {
                        ring.area[(end % AREA_WORDS) as usize].store(0, Relaxed);
                    }
                    ring.area[at as usize].store(header(i), Release);
                    tail = end;
                    ring.tail.store(tail, Release);
                }
            })
        };

        let mut head = 0u64;
        for (i, &words) in RECORD_WORDS.iter().enumerate() {
            let at = head % AREA_WORDS;
            let seen = loop {
                let h = ring.area[at as usize].load(Acquire);
                if h != 0 {
                    break h;
                }
                thread::yield_now();
            };
            assert_eq!(seen, header(i), "record {i}: a stale or foreign header");
            for k in 1..words {
                let word = ring.area[((at + k) % AREA_WORDS) as usize].load(Relaxed);
                assert_eq!(word, body(i, k), "record {i}: body word {k}");
            }
            ring.area[at as usize].store(0, Relaxed);
            head += words;
            ring.head.store(head, Release);
        }
        producer.join().unwrap();
        assert_eq!(ring.tail.load(Acquire), RECORD_WORDS.iter().sum::<u64>());
    });
}
