//! The shared-memory floor: two processes bouncing one cache line. Whatever a software
//! HCA does on one host, a message and its answer each cross between cores at least once,
//! so this round trip is the least any two-process ping-pong can cost on this machine.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One shared cache line in a file both processes map.
pub struct SharedLine {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is shared memory accessed only through the atomic below.
unsafe impl Send for SharedLine {}

impl SharedLine {
    /// Maps (creating if needed) `path`, 4 KiB, shared.
    pub fn map(path: &std::path::Path) -> std::io::Result<SharedLine> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        file.set_len(4096)?;
        use std::os::fd::AsRawFd;
        // SAFETY: a fresh shared mapping of a 4 KiB file we just sized; checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(SharedLine { ptr: ptr.cast(), len: 4096 })
    }

    fn word(&self) -> &AtomicU64 {
        // SAFETY: page-aligned, mapped for our lifetime; only atomics touch it.
        unsafe { &*(self.ptr as *const AtomicU64) }
    }

    /// The pinging side: `rounds` round trips per sample, `samples` samples; then tells
    /// the answering side to stop.
    pub fn ping(&self, samples: usize, rounds: u32) -> Vec<Duration> {
        let out = self.ping_while(rounds, |taken| taken < samples);
        self.stop();
        out
    }

    /// The pinging side, for as long as `more(samples taken so far)` says: samples of
    /// `rounds` round trips each. The answering side keeps waiting; [`SharedLine::stop`]
    /// ends it.
    pub fn ping_while(&self, rounds: u32, mut more: impl FnMut(usize) -> bool) -> Vec<Duration> {
        let w = self.word();
        let mut value = w.load(Ordering::Acquire);
        assert!(value % 2 == 0, "the ponging side must be waiting on an even value");
        let mut out = Vec::new();
        while more(out.len()) {
            let start = Instant::now();
            for _ in 0..rounds {
                w.store(value + 1, Ordering::Release);
                value += 2;
                while w.load(Ordering::Acquire) != value {
                    std::hint::spin_loop();
                }
            }
            out.push(start.elapsed());
        }
        out
    }

    /// Tells the answering side to return.
    pub fn stop(&self) {
        self.word().store(u64::MAX, Ordering::Release);
    }

    /// The answering side: until the pinger stores `u64::MAX`, answer each odd value.
    pub fn pong(&self) {
        let w = self.word();
        loop {
            let v = w.load(Ordering::Acquire);
            if v == u64::MAX {
                return;
            }
            if v % 2 == 1 {
                w.store(v + 1, Ordering::Release);
            }
            std::hint::spin_loop();
        }
    }
}

impl Drop for SharedLine {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}
