//! The event queue of an EVD: a bounded, lock-free, multi-producer multi-consumer FIFO.
//!
//! Producers are the connection manager, the async-event path and `dat_evd_post_se`, from
//! any thread; consumers are the waiter and the dequeuers (DAT lets several threads
//! dequeue at once; each event goes to exactly one of them).
//!
//! # Algorithm
//!
//! Dmitry Vyukov's bounded MPMC array queue, in the form crossbeam's `ArrayQueue` uses:
//! every slot carries a *stamp* that says whose turn it is. A position (`head`, `tail`,
//! stamps) is `lap | index`, with `index < capacity` in the low bits and the lap counter
//! above them (`one_lap` is the power of two above `capacity`), so the capacity is the
//! exact qlen, not a rounded-up power of two.
//!
//! - slot `i` starts with stamp `i` (lap 0: free for the producer of position `i`);
//! - a producer that finds `stamp == tail` claims the position by CAS on `tail`, writes the
//!   value, then publishes it with `stamp = tail + 1` (Release);
//! - a consumer that finds `stamp == head + 1` claims it by CAS on `head`, reads the value,
//!   then frees the slot for the next lap with `stamp = head + one_lap` (Release).
//!
//! The stamp is the only hand-over of a slot's contents, so each value is written once,
//! read once, and never read while being written. A producer sees the queue full when the
//! slot at `tail` still holds last lap's value and `head` is one lap behind `tail`.
//!
//! Order: one producer's events come out in the order it pushed them (its positions are
//! increasing). Progress: `push` and `pop` never wait for a lock; a consumer whose slot was
//! claimed but not yet published by a producer waits for that producer's few instructions
//! (the known property of this design; `len` counts such an event already).
//!
//! Resizing is not done in place: the EVD builds a new queue and moves the events across
//! while it excludes every user (see [`super::EvdCore::resize`]).

use crate::sync::{AtomicUsize, Backoff, Ordering, UnsafeCell, fence};
use crossbeam_utils::CachePadded;
use std::fmt;
use std::mem::MaybeUninit;
use std::num::NonZeroUsize;

struct Slot<T> {
    /// Whose turn: `pos` (free for the producer of `pos`) or `pos + 1` (holds its value).
    stamp: AtomicUsize,
    value: UnsafeCell<MaybeUninit<T>>,
}

/// A bounded lock-free MPMC FIFO of exactly `capacity` events.
pub struct EventQueue<T> {
    head: CachePadded<AtomicUsize>,
    tail: CachePadded<AtomicUsize>,
    slots: Box<[Slot<T>]>,
    cap: usize,
    one_lap: usize,
}

// SAFETY: the queue moves `T`s between threads (hence `T: Send`) and hands each value to
// exactly one thread through the stamp protocol; no `&T` is ever shared, so `T: Sync` is
// not needed.
unsafe impl<T: Send> Send for EventQueue<T> {}
// SAFETY: as above; all shared state is atomics plus cells accessed under the protocol.
unsafe impl<T: Send> Sync for EventQueue<T> {}

impl<T> EventQueue<T> {
    /// A queue holding at most `capacity` events (the EVD's qlen; the EVD layer bounds it
    /// by the IA's max_evd_qlen before asking).
    pub fn new(capacity: NonZeroUsize) -> EventQueue<T> {
        let cap = capacity.get();
        let one_lap = (cap + 1).next_power_of_two();
        let slots = (0..cap)
            .map(|i| Slot {
                stamp: AtomicUsize::new(i),
                value: UnsafeCell::new(MaybeUninit::uninit()),
            })
            .collect();
        EventQueue {
            head: CachePadded::new(AtomicUsize::new(0)),
            tail: CachePadded::new(AtomicUsize::new(0)),
            slots,
            cap,
            one_lap,
        }
    }

    /// The most events the queue holds (the qlen it was made with).
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// The position after `pos`.
    #[inline]
    fn next(&self, pos: usize) -> usize {
        let index = pos & (self.one_lap - 1);
        if index + 1 < self.cap {
            pos + 1
        } else {
            (pos & !(self.one_lap - 1)).wrapping_add(self.one_lap)
        }
    }

    /// Appends `value`, or hands it back if the queue is full (the caller reports the
    /// overflow: `DAT_QUEUE_FULL` for `post_se`, an `ASYNC_ERROR_EVD_OVERFLOW` otherwise).
    pub fn push(&self, value: T) -> Result<(), T> {
        let mut backoff = Backoff::new();
        let mut tail = self.tail.load(Ordering::Relaxed);
        loop {
            let slot = &self.slots[tail & (self.one_lap - 1)];
            let stamp = slot.stamp.load(Ordering::Acquire);
            if stamp == tail {
                let next = self.next(tail);
                match self.tail.compare_exchange(tail, next, Ordering::SeqCst, Ordering::Relaxed) {
                    Ok(_) => {
                        slot.value.with_mut(|p| {
                            // SAFETY: the stamp said the slot is free for position `tail`
                            // (its previous value, if any, was moved out before the consumer
                            // stored this stamp with Release, read by our Acquire), and
                            // winning the CAS made this thread the only producer of `tail`;
                            // no consumer reads the slot before the stamp below.
                            unsafe { p.write(MaybeUninit::new(value)) }
                        });
                        slot.stamp.store(tail + 1, Ordering::Release);
                        return Ok(());
                    }
                    Err(t) => {
                        tail = t;
                        backoff.spin();
                    }
                }
            } else if stamp.wrapping_add(self.one_lap) == tail + 1 {
                // The slot still holds last lap's value: full, unless `head` moved on.
                fence(Ordering::SeqCst);
                let head = self.head.load(Ordering::Relaxed);
                if head.wrapping_add(self.one_lap) == tail {
                    return Err(value);
                }
                backoff.spin();
                tail = self.tail.load(Ordering::Relaxed);
            } else {
                // Another producer claimed `tail` and moved it; catch up.
                backoff.snooze();
                tail = self.tail.load(Ordering::Relaxed);
            }
        }
    }

    /// A cheap look, for skipping a [`pop`](Self::pop) on the fast path: true when no
    /// event was claimed since the last one taken. It may miss a push happening right now
    /// (as a pop racing with that push may), never an event published before the call.
    #[inline]
    pub fn looks_empty(&self) -> bool {
        self.head.load(Ordering::Acquire) == self.tail.load(Ordering::Acquire)
    }

    /// Takes the oldest event, `None` if the queue is empty.
    pub fn pop(&self) -> Option<T> {
        let mut backoff = Backoff::new();
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            let slot = &self.slots[head & (self.one_lap - 1)];
            let stamp = slot.stamp.load(Ordering::Acquire);
            if stamp == head + 1 {
                let next = self.next(head);
                match self.head.compare_exchange(head, next, Ordering::SeqCst, Ordering::Relaxed) {
                    Ok(_) => {
                        let value = slot.value.with(|p| {
                            // SAFETY: stamp `head + 1` (read with Acquire, stored with
                            // Release after the write) says the producer of `head` wrote
                            // the value; winning the CAS made this thread its only reader,
                            // and no producer touches the slot before the stamp below.
                            unsafe { p.read().assume_init() }
                        });
                        slot.stamp.store(head.wrapping_add(self.one_lap), Ordering::Release);
                        return Some(value);
                    }
                    Err(h) => {
                        head = h;
                        backoff.spin();
                    }
                }
            } else if stamp == head {
                // Nothing published here: empty, unless a producer claimed it and is writing.
                fence(Ordering::SeqCst);
                let tail = self.tail.load(Ordering::Relaxed);
                if tail == head {
                    return None;
                }
                backoff.snooze();
                head = self.head.load(Ordering::Relaxed);
            } else {
                // Another consumer took `head`; catch up.
                backoff.spin();
                head = self.head.load(Ordering::Relaxed);
            }
        }
    }

    /// Events in the queue (claimed positions included: a push that has won its slot
    /// counts). A snapshot: producers and consumers may change it at once.
    pub fn len(&self) -> usize {
        loop {
            let tail = self.tail.load(Ordering::SeqCst);
            let head = self.head.load(Ordering::SeqCst);
            if self.tail.load(Ordering::SeqCst) == tail {
                let hix = head & (self.one_lap - 1);
                let tix = tail & (self.one_lap - 1);
                return if hix < tix {
                    tix - hix
                } else if hix > tix {
                    self.cap - hix + tix
                } else if tail == head {
                    0
                } else {
                    self.cap
                };
            }
        }
    }

    /// True if no event is queued (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Drop for EventQueue<T> {
    fn drop(&mut self) {
        while self.pop().is_some() {}
    }
}

impl<T> fmt::Debug for EventQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventQueue").field("capacity", &self.cap).field("len", &self.len()).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    fn q<T>(n: usize) -> EventQueue<T> {
        EventQueue::new(NonZeroUsize::new(n).unwrap())
    }

    #[test]
    fn exact_capacity_for_any_qlen() {
        for cap in [1, 2, 3, 5, 7, 8, 9, 100] {
            let q = q::<usize>(cap);
            assert_eq!(q.capacity(), cap);
            // several laps, so wrap-around is exercised at every fill level
            for round in 0..3 {
                for i in 0..cap {
                    assert_eq!(q.push(i), Ok(()), "cap {cap} round {round} push {i}");
                    assert_eq!(q.len(), i + 1);
                }
                assert_eq!(q.push(usize::MAX), Err(usize::MAX), "cap {cap}: one past qlen");
                assert_eq!(q.len(), cap);
                for i in 0..cap {
                    assert_eq!(q.pop(), Some(i));
                }
                assert_eq!(q.pop(), None);
                assert!(q.is_empty());
            }
        }
    }

    #[test]
    fn interleaved_push_pop_keeps_fifo_across_laps() {
        let q = q::<u32>(3);
        let mut next_in = 0;
        let mut next_out = 0;
        for step in 0..1000u32 {
            let pushes = step % 3 + 1;
            for _ in 0..pushes {
                if q.push(next_in).is_ok() {
                    next_in += 1;
                }
            }
            for _ in 0..(step % 2 + 1) {
                if let Some(v) = q.pop() {
                    assert_eq!(v, next_out);
                    next_out += 1;
                }
            }
            assert_eq!(q.len() as u32, next_in - next_out);
        }
    }

    #[test]
    fn drop_releases_queued_events() {
        let token = Arc::new(());
        {
            let q = q::<Arc<()>>(4);
            for _ in 0..3 {
                q.push(token.clone()).unwrap();
            }
            q.pop();
            assert_eq!(Arc::strong_count(&token), 3);
        }
        assert_eq!(Arc::strong_count(&token), 1);
    }

    /// Several producers and several consumers through a small queue: every event is seen
    /// exactly once, and each producer's events come out in its order (per consumer, since
    /// one consumer sees a subsequence of each producer's sequence).
    #[test]
    fn mpmc_every_event_once_fifo_per_producer() {
        const PRODUCERS: u64 = 3;
        const CONSUMERS: usize = 3;
        const PER: u64 = 20_000;
        let q = Arc::new(q::<u64>(7));
        let done = Arc::new(AtomicBool::new(false));
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let (q, done) = (q.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut seen = Vec::new();
                    let mut last = [None::<u64>; PRODUCERS as usize];
                    loop {
                        match q.pop() {
                            Some(v) => {
                                let (p, n) = ((v >> 32) as usize, v & 0xffff_ffff);
                                assert!(
                                    last[p].is_none_or(|l| l < n),
                                    "producer {p}: {n} after {last:?}"
                                );
                                last[p] = Some(n);
                                seen.push(v);
                            }
                            None if done.load(std::sync::atomic::Ordering::Acquire) => {
                                // producers finished before `done`; drain what is left
                                while let Some(v) = q.pop() {
                                    seen.push(v);
                                }
                                return seen;
                            }
                            None => std::thread::yield_now(),
                        }
                    }
                })
            })
            .collect();
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let q = q.clone();
                std::thread::spawn(move || {
                    for n in 0..PER {
                        let mut v = (p << 32) | n;
                        while let Err(back) = q.push(v) {
                            v = back;
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Release);
        let mut all = HashSet::new();
        let mut count = 0;
        for c in consumers {
            for v in c.join().unwrap() {
                assert!(all.insert(v), "event {v:#x} seen twice");
                count += 1;
            }
        }
        assert_eq!(count, PRODUCERS * PER);
        assert!(q.is_empty());
    }
}
