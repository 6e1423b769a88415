//! Loom models of the EVD event queue (`engine/src/evd/queue.rs`): every event comes out
//! exactly once, in each producer's order, and no slot is read while it is written (loom's
//! `UnsafeCell` tracking turns any such access into a failure), including across laps and
//! when the queue is full.
#![cfg(loom)]

use ferrodat_engine::evd::EventQueue;
use loom::sync::Arc;
use loom::thread;
use std::num::NonZeroUsize;

/// An event whose halves must match: a torn read would show up as a mismatch even if the
/// cell tracking missed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ev(u64, u64);

fn ev(producer: u64, n: u64) -> Ev {
    let v = producer << 32 | n;
    Ev(v, !v)
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

fn queue(cap: usize) -> Arc<EventQueue<Ev>> {
    Arc::new(EventQueue::new(NonZeroUsize::new(cap).unwrap()))
}

/// Pushes, yielding while the queue is full.
fn push_all(q: &EventQueue<Ev>, producer: u64, n: u64) {
    for i in 0..n {
        let mut e = ev(producer, i);
        while let Err(back) = q.push(e) {
            e = back;
            thread::yield_now();
        }
    }
}

/// Pushes until the queue is full; returns the events that did not fit (the overflow a
/// DAT producer reports instead of retrying).
fn push_until_full(q: &EventQueue<Ev>, producer: u64, n: u64) -> Vec<Ev> {
    for i in 0..n {
        if let Err(e) = q.push(ev(producer, i)) {
            let mut back = vec![e];
            back.extend((i + 1..n).map(|j| ev(producer, j)));
            return back;
        }
    }
    Vec::new()
}

/// Checks a consumer's events: intact, and each producer's in order.
fn check_order(seen: &[Ev]) {
    let mut last = [None::<u64>; 4];
    for e in seen {
        assert_eq!(e.0, !e.1, "torn event {e:?}");
        let (p, n) = ((e.0 >> 32) as usize, e.0 & 0xffff_ffff);
        assert!(last[p].is_none_or(|l| l < n), "producer {p}: {n} after {:?}", last[p]);
        last[p] = Some(n);
    }
}

fn check_all(mut all: Vec<Ev>, expected: &[(u64, u64)]) {
    let mut want: Vec<Ev> =
        expected.iter().flat_map(|&(p, n)| (0..n).map(move |i| ev(p, i))).collect();
    all.sort_by_key(|e| e.0);
    want.sort_by_key(|e| e.0);
    assert_eq!(all, want, "every event exactly once");
}

/// Two producers (two events and one) into a queue of 2 — so one of them may meet a full
/// queue, and the third event wraps to the next lap — with a consumer popping twice as
/// they come. Every event is popped, left queued, or handed back full, exactly once; the
/// consumer sees each producer's events in order.
#[test]
fn two_producers_one_consumer_through_a_full_queue() {
    model(|| {
        let q = queue(2);
        let p0 = {
            let q = q.clone();
            thread::spawn(move || push_until_full(&q, 0, 2))
        };
        let p1 = {
            let q = q.clone();
            thread::spawn(move || push_until_full(&q, 1, 1))
        };
        let mut seen: Vec<Ev> = (0..2).filter_map(|_| q.pop()).collect();
        let mut back = p0.join().unwrap();
        back.extend(p1.join().unwrap());
        while let Some(e) = q.pop() {
            seen.push(e);
        }
        check_order(&seen);
        if !back.is_empty() {
            // handed back only when the queue really was full at that moment
            assert_eq!(back.len(), 1, "{back:?}");
        }
        seen.extend(back);
        check_all(seen, &[(0, 2), (1, 1)]);
        assert_eq!(q.len(), 0);
    });
}

/// Two producers and two consumers racing for the same slots of a queue of 3 (one of
/// them not a power of two's worth): each event goes to exactly one consumer.
#[test]
fn two_producers_two_consumers_each_event_once() {
    model(|| {
        let q = queue(3);
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let q = q.clone();
                thread::spawn(move || push_all(&q, p, 1))
            })
            .collect();
        let consumer = {
            let q = q.clone();
            thread::spawn(move || q.pop().into_iter().collect::<Vec<_>>())
        };
        let mut mine: Vec<Ev> = q.pop().into_iter().collect();
        for p in producers {
            p.join().unwrap();
        }
        let theirs = consumer.join().unwrap();
        check_order(&mine);
        check_order(&theirs);
        mine.extend(theirs);
        // what the racing consumers did not get is still queued
        while let Some(e) = q.pop() {
            mine.push(e);
        }
        check_all(mine, &[(0, 1), (1, 1)]);
    });
}

/// A queue of 1 and two producers with no consumer: exactly one push succeeds, the other
/// gets its event back, and the queued one is intact.
#[test]
fn full_queue_hands_the_event_back() {
    model(|| {
        let q = queue(1);
        let racers: Vec<_> = (0..2)
            .map(|p| {
                let q = q.clone();
                thread::spawn(move || q.push(ev(p, 0)).is_ok())
            })
            .collect();
        let ok: Vec<bool> = racers.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(ok.iter().filter(|&&b| b).count(), 1, "exactly one push fits: {ok:?}");
        let winner = ok.iter().position(|&b| b).unwrap() as u64;
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop(), Some(ev(winner, 0)));
        assert_eq!(q.pop(), None);
    });
}

/// A producer and a consumer chasing each other around a queue of 1 for three laps.
#[test]
fn one_slot_across_laps() {
    model(|| {
        let q = queue(1);
        let p = {
            let q = q.clone();
            thread::spawn(move || push_all(&q, 0, 3))
        };
        let mut seen = Vec::new();
        while seen.len() < 3 {
            match q.pop() {
                Some(e) => seen.push(e),
                None => thread::yield_now(),
            }
        }
        p.join().unwrap();
        check_order(&seen);
        check_all(seen, &[(0, 3)]);
    });
}

/// The widest model: two producers of two events each and two consumers popping twice
/// each, racing on a queue of 3 (so positions wrap into the next lap, and one producer
/// may find it full). Popped, left queued or handed back: each event exactly once; each
/// consumer sees each producer's events in order.
#[test]
fn two_producers_two_consumers_across_a_lap() {
    model(|| {
        let q = queue(3);
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let q = q.clone();
                thread::spawn(move || push_until_full(&q, p, 2))
            })
            .collect();
        let consumer = {
            let q = q.clone();
            thread::spawn(move || (0..2).filter_map(|_| q.pop()).collect::<Vec<_>>())
        };
        let mut all: Vec<Ev> = (0..2).filter_map(|_| q.pop()).collect();
        check_order(&all);
        let theirs = consumer.join().unwrap();
        check_order(&theirs);
        all.extend(theirs);
        for p in producers {
            all.extend(p.join().unwrap());
        }
        while let Some(e) = q.pop() {
            all.push(e);
        }
        check_all(all, &[(0, 2), (1, 2)]);
    });
}
