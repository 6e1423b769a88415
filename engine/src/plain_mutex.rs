//! A mutex without poisoning, for the locks of the data path: a DTO EVD's CQ source, which
//! every `dat_evd_dequeue` takes, and an endpoint's QP, which every post takes.
//! Uncontended, taking and releasing it is one atomic instruction each, where
//! `std::sync::Mutex` adds its poison bookkeeping (a look at the global panic count when
//! the guard is made and another when it goes). The engine ignores poisoning anyway — it
//! took the data back with `into_inner` — since a harvest or post that panicked halfway
//! leaves nothing the next one cannot cope with.
//!
//! The protocol is std's futex mutex on Linux: the state is 0 (free), 1 (held) or 2 (held,
//! and a thread may be asleep on it). A locker that finds it held spins briefly, then marks
//! it 2 and sleeps in `FUTEX_WAIT` until an unlock that finds 2 wakes one sleeper. Holders
//! keep it for one harvest, arm or attach (a waiter never sleeps holding it), but a locker
//! preempted meanwhile may keep it longer, so lockers sleep rather than spin for long.

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, Ordering};

const FREE: u32 = 0;
const HELD: u32 = 1;
/// Held, and a locker may be asleep on the state word.
const CONTENDED: u32 = 2;

/// A mutual-exclusion lock around `T`, without poisoning.
pub(crate) struct PlainMutex<T> {
    state: AtomicU32,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands `&mut T` to one thread at a time (the state word's protocol), so
// sharing the mutex between threads only ever moves access to `T` between them: `T: Send`
// is what that needs, as for `std::sync::Mutex`.
unsafe impl<T: Send> Sync for PlainMutex<T> {}

/// Access to the data while the lock is held; released when dropped.
pub(crate) struct PlainGuard<'a, T> {
    mutex: &'a PlainMutex<T>,
    /// The guard hands out `&mut T`: shared between threads only if `T` may be, sent only
    /// if `T` may be.
    _data: PhantomData<&'a mut T>,
}

impl<T> PlainMutex<T> {
    pub(crate) const fn new(data: T) -> PlainMutex<T> {
        PlainMutex { state: AtomicU32::new(FREE), data: UnsafeCell::new(data) }
    }

    /// The lock if it is free now; None if another thread holds it.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<PlainGuard<'_, T>> {
        self.state
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| PlainGuard { mutex: self, _data: PhantomData })
    }

    /// The lock, waiting (asleep, after a short spin) for the thread that holds it.
    #[inline]
    pub(crate) fn lock(&self) -> PlainGuard<'_, T> {
        if self.state.compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.lock_contended();
        }
        PlainGuard { mutex: self, _data: PhantomData }
    }

    #[cold]
    fn lock_contended(&self) {
        let mut state = self.spin();
        if state == FREE {
            match self.state.compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => state = now,
            }
        }
        loop {
            // Taken with CONTENDED: we cannot know whether others sleep, so the unlock
            // wakes one (at worst for nothing).
            if state != CONTENDED && self.state.swap(CONTENDED, Ordering::Acquire) == FREE {
                return;
            }
            futex_wait(&self.state, CONTENDED);
            state = self.spin();
        }
    }

    /// Spins while the holder is likely to let go soon; the state last seen.
    fn spin(&self) -> u32 {
        let mut rounds = 100;
        loop {
            let state = self.state.load(Ordering::Relaxed);
            if state != HELD || rounds == 0 {
                return state;
            }
            std::hint::spin_loop();
            rounds -= 1;
        }
    }

    #[inline]
    fn unlock(&self) {
        if self.state.swap(FREE, Ordering::Release) == CONTENDED {
            futex_wake_one(&self.state);
        }
    }
}

impl<T> Deref for PlainGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard exists only while its thread holds the lock (it set the state
        // from FREE), so no other reference to the data is alive.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T> DerefMut for PlainGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only access through the guard.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T> Drop for PlainGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.mutex.unlock();
    }
}

impl<T> fmt::Debug for PlainMutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the data: looking would mean taking the lock.
        let held = self.state.load(Ordering::Relaxed) != FREE;
        f.debug_struct("PlainMutex").field("held", &held).finish_non_exhaustive()
    }
}

/// Sleeps while `word` holds `expected` (or until a wake; spurious returns are fine: the
/// caller looks again).
#[cold]
fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: FUTEX_WAIT on a live, aligned u32 of this process, no timeout; the kernel
    // only reads the word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes one thread asleep on `word`.
#[cold]
fn futex_wake_one(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a live, aligned u32 of this process; the kernel does not
    // touch the word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after() {
        let m = PlainMutex::new(5);
        let g = m.try_lock().expect("free");
        assert!(m.try_lock().is_none(), "held");
        drop(g);
        *m.try_lock().expect("free again") += 1;
        assert_eq!(*m.lock(), 6);
    }

    #[test]
    fn lockers_sleep_until_the_holder_lets_go_and_every_increment_counts() {
        let m = Arc::new(PlainMutex::new(0u64));
        // A holder that keeps the lock long enough for the others to go to sleep on it.
        let held = m.lock();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        *m.lock() += 1;
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*m.lock(), 40_000);
    }
}
