//! Counting a process's open file descriptors, for tests that check a create/free cycle
//! leaves none behind. The test binary must count alone: its tests take [`serial`], and
//! nothing else in the process opens or closes fds meanwhile but the code under test.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

/// Held by each test of the binary while it counts.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The number of fds open in this process.
pub fn open_fds() -> usize {
    // read_dir's own fd is counted every time, so it cancels out.
    std::fs::read_dir("/proc/self/fd").expect("read /proc/self/fd").count()
}

/// Asserts that `round` repeated `rounds` times leaves at most `slack` more fds open.
/// What closes on another thread shortly after a round (softhca's progress thread may
/// hold a closed device's engine through its sleep, up to a second) is waited for.
pub fn assert_no_fd_growth(what: &str, rounds: usize, slack: usize, mut round: impl FnMut()) {
    round(); // first use may open what lives as long as the process
    let before = open_fds();
    for _ in 0..rounds {
        round();
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut after = open_fds();
    while after > before + slack && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        after = open_fds();
    }
    assert!(
        after <= before + slack,
        "{what}: {rounds} rounds went from {before} to {after} open fds"
    );
}
