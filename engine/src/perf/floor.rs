//! The shared-memory floor: two processes bouncing one cache line. Whatever a software
//! HCA does on one host, a message and its answer each cross between cores at least once,
//! so this round trip is the least any two-process ping-pong can cost on this machine.

use super::shared_file::{self, Role};
use ferrodat_softhca::fabric::SharedMapping;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the pinging side waits for one answer by default before it gives up: the
/// answering side died or stopped. A live answer takes well under a microsecond; seconds
/// cover an answering process the scheduler or the hypervisor set aside for a while.
pub const STALL: Duration = Duration::from_secs(5);

/// Spins between looks at the clock while waiting for an answer: a few hundred
/// microseconds of spinning, and the hot loop of a live ping-pong never reads the clock.
pub(crate) const SPINS_PER_CLOCK_READ: u32 = 1 << 12;

/// The answering side did not answer within the stall timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stalled {
    /// How long the pinging side waited for the answer it did not get.
    pub waited: Duration,
    /// Round trips completed before it.
    pub round_trips: u64,
}

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no answer on the shared line for {:.1} s (after {} round trips): the answering \
             process died or stopped",
            self.waited.as_secs_f64(),
            self.round_trips
        )
    }
}

impl std::error::Error for Stalled {}

/// One shared cache line in a file both processes map.
pub struct SharedLine {
    map: SharedMapping,
}

impl SharedLine {
    /// Maps (creating if needed) `path`, 4 KiB, shared: the pinging side.
    pub fn map(path: &std::path::Path) -> std::io::Result<SharedLine> {
        Ok(SharedLine { map: shared_file::map(path, 4096, Role::Create)? })
    }

    /// Maps the line the pinging side created: the answering side.
    pub fn open(path: &std::path::Path) -> std::io::Result<SharedLine> {
        Ok(SharedLine { map: shared_file::map(path, 4096, Role::Join)? })
    }

    fn word(&self) -> &AtomicU64 {
        self.map.u64_at(0)
    }

    /// The pinging side: `rounds` round trips per sample, `samples` samples; then tells
    /// the answering side to stop (also when it gave up waiting, after [`STALL`]).
    pub fn ping(&self, samples: usize, rounds: u32) -> Result<Vec<Duration>, Stalled> {
        let out = self.ping_while(rounds, STALL, |taken| taken < samples);
        self.stop();
        out
    }

    /// The pinging side, for as long as `more(samples taken so far)` says: samples of
    /// `rounds` round trips each. The answering side keeps waiting; [`SharedLine::stop`]
    /// ends it. Gives up when an answer takes longer than `stall` (the answering process
    /// died or stopped); the line is then out of step, so the caller stops using it.
    pub fn ping_while(
        &self,
        rounds: u32,
        stall: Duration,
        mut more: impl FnMut(usize) -> bool,
    ) -> Result<Vec<Duration>, Stalled> {
        let w = self.word();
        let first = w.load(Ordering::Acquire);
        let mut value = first;
        assert!(value.is_multiple_of(2), "the ponging side must be waiting on an even value");
        let mut out = Vec::new();
        while more(out.len()) {
            let start = Instant::now();
            for _ in 0..rounds {
                w.store(value + 1, Ordering::Release);
                value += 2;
                let mut spins = 0u32;
                let mut since = None;
                while w.load(Ordering::Acquire) != value {
                    spins = spins.wrapping_add(1);
                    if spins.is_multiple_of(SPINS_PER_CLOCK_READ) {
                        stalled(&mut since, stall, (value - first) / 2 - 1)?;
                    }
                    std::hint::spin_loop();
                }
            }
            out.push(start.elapsed());
        }
        Ok(out)
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

/// The slow path of a wait for an answer, every [`SPINS_PER_CLOCK_READ`] spins: starts
/// the clock on its first call, says [`Stalled`] once `stall` has passed.
#[cold]
#[inline(never)]
pub(crate) fn stalled(
    since: &mut Option<Instant>,
    stall: Duration,
    round_trips: u64,
) -> Result<(), Stalled> {
    let waited = since.get_or_insert_with(Instant::now).elapsed();
    if waited >= stall {
        return Err(Stalled { waited, round_trips });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str) -> (SharedLine, std::path::PathBuf) {
        let path = shared_file::test_path("floor", name);
        let line = SharedLine::map(&path).unwrap();
        (line, path)
    }

    #[test]
    fn with_no_answering_side_the_ping_gives_up_after_the_stall_timeout() {
        let (line, path) = line("none");
        let stall = Duration::from_millis(50);
        let started = Instant::now();
        let err = line.ping_while(10, stall, |taken| taken < 100).unwrap_err();
        assert!(err.waited >= stall && started.elapsed() >= stall, "{err:?}");
        assert_eq!(err.round_trips, 0);
        assert!(err.to_string().contains("answering process died or stopped"), "{err}");
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn an_answering_side_that_stops_halfway_ends_the_ping_with_its_count() {
        let (line, path) = line("quits");
        let answerer = SharedLine::open(&path).unwrap();
        // Answers 25 pings, then stops answering without being told to (as if killed).
        let quitter = std::thread::spawn(move || {
            let w = answerer.word();
            let mut answered = 0;
            while answered < 25 {
                let v = w.load(Ordering::Acquire);
                if v % 2 == 1 {
                    w.store(v + 1, Ordering::Release);
                    answered += 1;
                }
                std::hint::spin_loop();
            }
        });
        let err = line.ping_while(10, Duration::from_secs(1), |taken| taken < 100).unwrap_err();
        quitter.join().unwrap();
        assert_eq!(err.round_trips, 25, "{err}");
        assert!(err.to_string().contains("after 25 round trips"), "{err}");
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_live_answering_side_is_pinged_to_the_end() {
        let (line, path) = line("live");
        let answerer = SharedLine::open(&path).unwrap();
        let ponger = std::thread::spawn(move || answerer.pong());
        let samples = line.ping(20, 10).unwrap();
        ponger.join().unwrap();
        assert_eq!(samples.len(), 20);
        let _ = std::fs::remove_file(path);
    }
}
