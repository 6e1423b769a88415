//! Loom models of the EVD wake-up protocol (`engine/src/evd/notify.rs` and the wait loop
//! of `engine/src/evd/waiter.rs`): a post racing with a waiter on its way to sleep is never
//! lost, and neither is `set_unwaitable` or `abort`. The eventfd is modelled by a mutex
//! and a condvar, so a lost wake-up leaves the waiter blocked forever, which loom reports
//! as a deadlock.
#![cfg(loom)]

use ferrodat_engine::evd::{
    DAT_TIMEOUT_INFINITE, EvdCore, EventQueue, NoSource, Notifier, WaitError, WakeReason, Woken,
};
use loom::sync::Arc;
use loom::thread;
use std::num::NonZeroUsize;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

fn one() -> NonZeroUsize {
    NonZeroUsize::new(1).unwrap()
}

/// The bare protocol: a producer pushes then notifies; the waiter checks, announces,
/// re-checks, sleeps. The waiter always gets the event.
#[test]
fn notifier_loses_no_wakeup() {
    model(|| {
        let q = Arc::new(EventQueue::<u32>::new(one()));
        let n = Arc::new(Notifier::new().unwrap());
        let producer = {
            let (q, n) = (q.clone(), n.clone());
            thread::spawn(move || {
                q.push(7).unwrap();
                n.notify();
            })
        };
        let got = loop {
            if let Some(v) = q.pop() {
                break v;
            }
            let ticket = n.announce();
            if let Some(v) = q.pop() {
                break v;
            }
            match ticket.sleep(&[], None).unwrap() {
                Woken::Ready(_) => {}
                w => panic!("unexpected {w:?}"),
            }
        };
        assert_eq!(got, 7);
        producer.join().unwrap();
    });
}

/// wake_all racing with a waiter going to sleep: the waiter either sees the flag the
/// kicker set before wake_all, or is kicked out of its sleep.
#[test]
fn notifier_loses_no_wake_all() {
    model(|| {
        let flag = Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let n = Arc::new(Notifier::new().unwrap());
        let kicker = {
            let (flag, n) = (flag.clone(), n.clone());
            thread::spawn(move || {
                flag.store(true, loom::sync::atomic::Ordering::Relaxed);
                n.wake_all(WakeReason::Abort);
            })
        };
        loop {
            let ticket = n.announce();
            if flag.load(loom::sync::atomic::Ordering::Relaxed) {
                break;
            }
            match ticket.sleep(&[], None).unwrap() {
                Woken::Kicked(WakeReason::Abort) => break,
                Woken::Ready(_) => {}
                w => panic!("unexpected {w:?}"),
            }
        }
        kicker.join().unwrap();
    });
}

/// The real wait loop (no spinning) against two concurrent posts with threshold 2: it
/// returns the first of them with nmore 1, and never sleeps through the second.
#[test]
fn evd_wait_meets_its_threshold_with_racing_posts() {
    model(|| {
        let evd =
            Arc::new(EvdCore::<u32>::new(NonZeroUsize::new(2).unwrap()).unwrap().with_spin(0));
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let evd = evd.clone();
                thread::spawn(move || evd.post(p).unwrap())
            })
            .collect();
        let (ev, nmore) = evd.wait(&mut NoSource, 2, DAT_TIMEOUT_INFINITE).unwrap();
        assert!(ev < 2);
        assert_eq!(nmore, 1);
        for p in producers {
            p.join().unwrap();
        }
        assert_eq!(evd.dequeue(&mut NoSource).unwrap(), 1 - ev);
    });
}

/// set_unwaitable racing with the whole wait (entry, re-check, sleep): the wait ends with
/// INVALID_STATE, never hangs.
#[test]
fn evd_set_unwaitable_ends_the_wait() {
    model(|| {
        let evd = Arc::new(EvdCore::<u32>::new(one()).unwrap().with_spin(0));
        let kicker = {
            let evd = evd.clone();
            thread::spawn(move || evd.set_unwaitable())
        };
        match evd.wait(&mut NoSource, 1, DAT_TIMEOUT_INFINITE) {
            Err(WaitError::Unwaitable) => {}
            r => panic!("unexpected {r:?}"),
        }
        kicker.join().unwrap();
    });
}
