//! The synchronisation primitives of the lock-free parts of the engine, switched by
//! `cfg(loom)`: std's normally, loom's when the loom models in `loom-tests/` are built
//! (`RUSTFLAGS="--cfg loom"`), so the models check the very source that ships.
//!
//! Code that takes part in a modelled protocol uses these names, never `std::sync`
//! directly, and waits for another thread only through [`spin_wait`] (loom must be told
//! when a thread spins, or it explores the spin forever).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard};

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `std::cell::UnsafeCell` with loom's closure API (`with`, `with_mut`), so the same code
/// compiles against both and loom can track every access to the cell's contents.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` on a shared pointer to the contents.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` on a unique pointer to the contents.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Spin-then-yield backoff for a thread that waits for another one to finish a step
/// (a producer between claiming a slot and publishing it). Under loom every round is a
/// `yield_now`, which is how loom learns that the thread cannot progress alone.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    step: u32,
}

impl Backoff {
    #[cfg_attr(loom, allow(dead_code))]
    const SPIN_LIMIT: u32 = 6;

    pub(crate) fn new() -> Backoff {
        Backoff { step: 0 }
    }

    /// After a lost race (another thread made progress): a short pause.
    #[inline]
    pub(crate) fn spin(&mut self) {
        #[cfg(loom)]
        loom::thread::yield_now();
        #[cfg(not(loom))]
        for _ in 0..1u32 << self.step.min(Self::SPIN_LIMIT) {
            std::hint::spin_loop();
        }
        self.step = self.step.saturating_add(1);
    }

    /// Waiting for another thread: spin a little, then give the CPU away.
    #[inline]
    pub(crate) fn snooze(&mut self) {
        spin_wait(self.step);
        self.step = self.step.saturating_add(1);
    }
}

/// One round of waiting for another thread, `round` counting from 0: busy for the first
/// rounds, then `yield_now`. Under loom always a `yield_now`.
#[inline]
pub(crate) fn spin_wait(round: u32) {
    #[cfg(loom)]
    {
        let _ = round;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    if round < Backoff::SPIN_LIMIT {
        for _ in 0..1u32 << round {
            std::hint::spin_loop();
        }
    } else {
        std::thread::yield_now();
    }
}
