//! What a run measures: the rows, in order, and how long each runs.

use ferrodat_engine::perf::stats::{Summary, summarize};
use std::time::{Duration, Instant};

/// How big each row is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sizing {
    /// Each row runs for this long (after a warm-up of a tenth of it).
    Duration(Duration),
    /// Each row runs this many round trips or messages (after a warm-up of a tenth).
    Iters(u64),
}

impl Sizing {
    /// The warm-up before a row: a tenth of the row.
    pub fn warmup(self) -> Sizing {
        match self {
            Sizing::Duration(d) => Sizing::Duration(d / 10),
            Sizing::Iters(n) => Sizing::Iters(n / 10),
        }
    }

    /// Round trips timed together as one latency sample: enough to make the two clock
    /// reads negligible (100), fewer for a short `--iters` run so it still has samples.
    pub fn group(self) -> u32 {
        match self {
            Sizing::Duration(_) => 100,
            Sizing::Iters(n) => (n / 100).clamp(1, 100) as u32,
        }
    }

    /// One of `n` slices of a row (see [`SLICES`]): its time or round trips split `n` ways
    /// (at least one round trip each).
    pub fn slice(self, n: u32) -> Sizing {
        match self {
            Sizing::Duration(d) => Sizing::Duration(d / n),
            Sizing::Iters(i) => Sizing::Iters((i / u64::from(n)).max(1)),
        }
    }

    /// A meter for one run of this size.
    pub fn meter(self) -> Meter {
        Meter { sizing: self, start: Instant::now(), done: 0 }
    }
}

/// Says whether a row (or warm-up) should go on, given the operations done so far.
pub struct Meter {
    sizing: Sizing,
    start: Instant,
    done: u64,
}

impl Meter {
    /// Counts `n` more operations done.
    pub fn add(&mut self, n: u64) {
        self.done += n;
    }

    /// True while the row has more to do. A row sized by time always does something (its
    /// first check says yes), so that it has a sample to report however short the time
    /// and however late this process got the CPU.
    pub fn more(&self) -> bool {
        match self.sizing {
            Sizing::Duration(d) => self.done == 0 || self.start.elapsed() < d,
            Sizing::Iters(n) => self.done < n,
        }
    }
}

/// The slices a latency test runs in at each level, the levels taking turns: driver,
/// DAT, driver, DAT, … The hypervisor moves this machine's vCPUs now and then, which
/// moves latency by a factor of two or more; in turns, both rows of a test see each
/// placement for about as long, so their ratio means something. The floor takes turns
/// with the 8-byte SEND/RECV rows the same way, and memcpy with the 1 MiB bandwidth rows
/// (see [`turns`]). Sixteen rather than four: with four, one change of placement within a
/// test could still leave one row mostly before it and the other mostly after (DAT /
/// driver read 2.18x in such a run).
pub const SLICES: u32 = 16;

/// The rows measured in turns when `test`'s row comes up, `test` first: the floor with
/// the least software HCA and the 8-byte SEND/RECV rows at both levels, memcpy with the
/// two-copy pipeline and the 1 MiB RDMA WRITE streams (their ratios are targets, or say
/// what a target leaves to software: the host runs cross-core copies at half speed for
/// seconds at a time, so rows one after the other can see different machines), a
/// driver-level latency test with its DAT twin, anything else alone.
pub fn turns(test: Test) -> Vec<Test> {
    match test {
        Test::Floor => vec![
            Test::Floor,
            Test::LeastHca,
            Test::SendRecv(Level::Driver, 8),
            Test::SendRecv(Level::Dat, 8),
        ],
        Test::Memcpy(n) => vec![
            Test::Memcpy(n),
            Test::Pipeline(n),
            Test::WriteBw(Level::Driver, n),
            Test::WriteBw(Level::Dat, n),
        ],
        t if t.is_latency() => std::iter::once(t).chain(t.at_dat_level()).collect(),
        t => vec![t],
    }
}

/// What a row's slices measured so far, until the row is reported.
#[derive(Clone, Debug)]
pub enum Measured {
    /// A latency row's samples.
    Latency(Timed),
    /// A bandwidth row's totals ([`Outcome::Bandwidth`]).
    Bandwidth(Outcome),
}

impl Measured {
    /// Adds a later slice of the same row.
    pub fn absorb(&mut self, later: Measured) {
        match (self, later) {
            (Measured::Latency(so_far), Measured::Latency(slice)) => so_far.absorb(slice),
            (
                Measured::Bandwidth(Outcome::Bandwidth { bytes, messages, seconds }),
                Measured::Bandwidth(Outcome::Bandwidth { bytes: b, messages: m, seconds: s }),
            ) => {
                *bytes += b;
                *messages += m;
                *seconds += s;
            }
            (so_far, slice) => debug_assert!(false, "slices differ: {so_far:?}, {slice:?}"),
        }
    }

    /// The row's result.
    pub fn outcome(&self) -> Outcome {
        match self {
            Measured::Latency(timed) => timed.outcome(),
            Measured::Bandwidth(outcome) => *outcome,
        }
    }
}

/// A latency row's samples, from one or more slices, until they are summarised.
#[derive(Clone, Debug)]
pub struct Timed {
    /// Each the time of `group` operations.
    pub samples: Vec<Duration>,
    /// Operations per sample.
    pub group: u32,
    /// Whether an operation is a round trip reported as half of it (ping-pongs, as
    /// perftest does), or whole (a READ).
    pub halved: bool,
}

impl Timed {
    /// The samples of `timed_groups`.
    pub fn new((samples, group): (Vec<Duration>, u32), halved: bool) -> Timed {
        Timed { samples, group, halved }
    }

    /// Adds a later slice's samples (of the same test, so the same group and halving).
    pub fn absorb(&mut self, slice: Timed) {
        debug_assert_eq!((self.group, self.halved), (slice.group, slice.halved));
        self.samples.extend(slice.samples);
    }

    /// The row's result: median, p99 and minimum over all samples.
    pub fn outcome(&self) -> Outcome {
        let summary = summarize(&self.samples, self.group);
        Outcome::Latency {
            summary: if self.halved { summary.halved() } else { summary },
            samples: self.samples.len(),
            group: self.group,
        }
    }
}

/// Runs `op` (one round trip) through a warm-up, then in timed groups of
/// [`Sizing::group`] for as long as `sizing` says; returns the groups' times.
pub fn timed_groups(
    sizing: Sizing,
    mut op: impl FnMut() -> Result<(), String>,
) -> Result<(Vec<Duration>, u32), String> {
    let group = sizing.group();
    let mut warm = sizing.warmup().meter();
    while warm.more() {
        op()?;
        warm.add(1);
    }
    let mut meter = sizing.meter();
    let mut out = Vec::new();
    while meter.more() {
        let start = Instant::now();
        for _ in 0..group {
            op()?;
        }
        out.push(start.elapsed());
        meter.add(u64::from(group));
    }
    Ok((out, group))
}

/// Which layer a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// What a user compares with, measured in the same run.
    Baseline,
    /// The ferrodat driver (mlx5 verbs) directly: post, poll.
    Driver,
    /// The DAT API through the engine's EP and EVD (`dat_ep_post_*`, `dat_evd_dequeue`):
    /// the same [`Test`]s as the driver level, so each layer's cost shows as the
    /// difference of two rows.
    Dat,
}

impl Level {
    /// The name in the table and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Level::Baseline => "baseline",
            Level::Driver => "driver",
            Level::Dat => "dat",
        }
    }
}

/// One row's test. Sizes are in bytes; the RDMA tests name the level they run at
/// ([`Level::Driver`] or [`Level::Dat`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    /// Two processes on this host bouncing one cache line: the least any two-process
    /// ping-pong costs here.
    Floor,
    /// An 8-byte SEND/RECV ping-pong between two processes through the least work any
    /// software HCA does: WQE, one shared slot per direction, CQE (`perf::least_hca`).
    LeastHca,
    /// Two processes copying messages of this size through a shared ring: the least
    /// work of a software HCA moving bulk data (`perf::pipeline`).
    Pipeline(usize),
    /// TCP ping-pong over the control connection (the loopback in a local run).
    Tcp(usize),
    /// One core copying a buffer of this size over and over.
    Memcpy(usize),
    /// SEND/RECV ping-pong.
    SendRecv(Level, usize),
    /// RDMA WRITE ping-pong: each side writes the other's buffer, the peer polls its last
    /// bytes (perftest's `ib_write_lat`).
    WriteLat(Level, usize),
    /// One RDMA READ at a time (perftest's `ib_read_lat`): a whole round trip.
    ReadLat(Level, usize),
    /// RDMA WRITE streaming with a window of outstanding requests.
    WriteBw(Level, usize),
}

impl Test {
    /// The layer it measures.
    pub fn level(self) -> Level {
        match self {
            Test::Floor | Test::LeastHca | Test::Tcp(_) | Test::Memcpy(_) | Test::Pipeline(_) => {
                Level::Baseline
            }
            Test::SendRecv(level, _)
            | Test::WriteLat(level, _)
            | Test::ReadLat(level, _)
            | Test::WriteBw(level, _) => level,
        }
    }

    /// The same test at the DAT level, for a driver-level RDMA test.
    pub fn at_dat_level(self) -> Option<Test> {
        match self {
            Test::SendRecv(Level::Driver, n) => Some(Test::SendRecv(Level::Dat, n)),
            Test::WriteLat(Level::Driver, n) => Some(Test::WriteLat(Level::Dat, n)),
            Test::ReadLat(Level::Driver, n) => Some(Test::ReadLat(Level::Dat, n)),
            Test::WriteBw(Level::Driver, n) => Some(Test::WriteBw(Level::Dat, n)),
            _ => None,
        }
    }

    /// Whether it measures latency (a ping-pong or one READ at a time).
    pub fn is_latency(self) -> bool {
        matches!(self, Test::LeastHca | Test::SendRecv(..) | Test::WriteLat(..) | Test::ReadLat(..))
    }

    /// Its message size in bytes.
    pub fn bytes(self) -> usize {
        match self {
            Test::Floor | Test::LeastHca => 8,
            Test::Tcp(n)
            | Test::Memcpy(n)
            | Test::Pipeline(n)
            | Test::SendRecv(_, n)
            | Test::WriteLat(_, n)
            | Test::ReadLat(_, n)
            | Test::WriteBw(_, n) => n,
        }
    }

    /// A stable name for machines: `<level>.<test>.<bytes>`.
    pub fn id(self) -> String {
        let name = match self {
            Test::Floor => "shm_floor",
            Test::LeastHca => "least_hca_pingpong",
            Test::Pipeline(_) => "shm_pipeline",
            Test::Tcp(_) => "tcp_pingpong",
            Test::Memcpy(_) => "memcpy",
            Test::SendRecv(..) => "send_recv_lat",
            Test::WriteLat(..) => "rdma_write_lat",
            Test::ReadLat(..) => "rdma_read_lat",
            Test::WriteBw(..) => "rdma_write_bw",
        };
        format!("{}.{name}.{}", self.level().name(), self.bytes())
    }

    /// What the table calls it.
    pub fn title(self, local: bool) -> String {
        let size = size_name(self.bytes());
        match self {
            Test::Floor => "shared-memory floor: two processes, one cache line".into(),
            Test::LeastHca => "least software HCA: WQE, shared slot, CQE, 8 B".into(),
            Test::Pipeline(_) => format!("two-copy pipeline: two processes, shm ring, {size}"),
            Test::Tcp(_) if local => format!("TCP loopback ping-pong, {size}"),
            Test::Tcp(_) => format!("TCP ping-pong to the server, {size}"),
            Test::Memcpy(_) => format!("memcpy, one core, {size}"),
            Test::SendRecv(..) => format!("SEND/RECV ping-pong, {size}"),
            Test::WriteLat(..) => format!("RDMA WRITE ping-pong, {size}"),
            Test::ReadLat(..) => format!("RDMA READ (whole round trip), {size}"),
            Test::WriteBw(..) => format!("RDMA WRITE stream, {size}"),
        }
    }
}

/// `8 B`, `4 KiB`, `1 MiB`.
pub fn size_name(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

/// The rows of a run, in the order they are reported: the cheap local baselines first,
/// then the TCP baseline, then each RDMA test at the driver level and at the DAT level
/// (both sides' QP and EP are already connected). The rows of [`turns`] run in turns
/// ([`SLICES`]), those of a bandwidth test one after the other, so that rows compared with
/// each other see the same conditions.
pub fn rows() -> Vec<Test> {
    let mut rows = vec![
        Test::Floor,
        Test::LeastHca,
        Test::Memcpy(1 << 20),
        Test::Pipeline(1 << 20),
        Test::Tcp(8),
        Test::Tcp(4096),
    ];
    let rdma: [fn(Level) -> Test; 7] = [
        |l| Test::SendRecv(l, 8),
        |l| Test::SendRecv(l, 4096),
        |l| Test::WriteLat(l, 8),
        |l| Test::ReadLat(l, 8),
        |l| Test::WriteBw(l, 4096),
        |l| Test::WriteBw(l, 64 << 10),
        |l| Test::WriteBw(l, 1 << 20),
    ];
    for test in rdma {
        rows.push(test(Level::Driver));
        rows.push(test(Level::Dat));
    }
    rows
}

/// What one row measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    /// Latency per operation (half a round trip, except where the test says otherwise).
    Latency {
        /// Median, p99 and minimum over the samples.
        summary: Summary,
        /// Samples taken.
        samples: usize,
        /// Operations timed together in each sample.
        group: u32,
    },
    /// Throughput.
    Bandwidth {
        /// Bytes moved.
        bytes: u64,
        /// Messages (operations) completed.
        messages: u64,
        /// Seconds from the first post to the last completion.
        seconds: f64,
    },
}

impl Outcome {
    /// MB/s (10^6 bytes per second) of a bandwidth row.
    pub fn mb_per_s(&self) -> Option<f64> {
        match *self {
            Outcome::Bandwidth { bytes, seconds, .. } => Some(bytes as f64 / seconds / 1e6),
            Outcome::Latency { .. } => None,
        }
    }

    /// Millions of messages per second of a bandwidth row.
    pub fn mmsg_per_s(&self) -> Option<f64> {
        match *self {
            Outcome::Bandwidth { messages, seconds, .. } => Some(messages as f64 / seconds / 1e6),
            Outcome::Latency { .. } => None,
        }
    }

    /// The median latency in ns of a latency row.
    pub fn median_ns(&self) -> Option<f64> {
        match self {
            Outcome::Latency { summary, .. } => Some(summary.median_ns),
            Outcome::Bandwidth { .. } => None,
        }
    }
}

/// A measured row.
#[derive(Clone, Debug)]
pub struct Row {
    /// What ran.
    pub test: Test,
    /// Its title.
    pub title: String,
    /// What it measured.
    pub result: Outcome,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_in_slices_splits_its_size_and_keeps_at_least_one_round_trip() {
        let d = Sizing::Duration(Duration::from_millis(400)).slice(4);
        assert_eq!(d, Sizing::Duration(Duration::from_millis(100)));
        let whole = Duration::from_secs(2);
        assert_eq!(Sizing::Duration(whole).slice(SLICES), Sizing::Duration(whole / SLICES));
        assert_eq!(Sizing::Iters(1000).slice(4), Sizing::Iters(250));
        assert_eq!(Sizing::Iters(2).slice(4), Sizing::Iters(1));
    }

    #[test]
    fn a_row_sized_by_time_takes_at_least_one_group_however_short() {
        // A zero time is over before the first check: the row still has one sample (its
        // summary would panic on none), and the warm-up one round trip.
        let mut meter = Sizing::Duration(Duration::ZERO).meter();
        assert!(meter.more());
        meter.add(1);
        assert!(!meter.more());
        let mut ops = 0u32;
        let (samples, group) = timed_groups(Sizing::Duration(Duration::ZERO), || {
            ops += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((samples.len(), group), (1, 100));
        assert_eq!(ops, 1 + 100);
        let timed = Timed::new((samples, group), true);
        assert!(matches!(timed.outcome(), Outcome::Latency { samples: 1, .. }));
        // Sized by count, a warm-up of none stays none.
        assert!(!Sizing::Iters(0).meter().more());
    }

    #[test]
    fn slices_summarise_as_one_row_of_all_their_samples() {
        let ns = |v: &[u64]| v.iter().map(|&n| Duration::from_nanos(n)).collect::<Vec<_>>();
        let mut row = Timed::new((ns(&[400, 100]), 2), true);
        row.absorb(Timed::new((ns(&[300]), 2), true));
        let Outcome::Latency { summary, samples, group } = row.outcome() else {
            panic!("a latency row")
        };
        assert_eq!((samples, group), (3, 2));
        // Per operation 200, 50, 150; halved: 100, 25, 75.
        assert_eq!((summary.median_ns, summary.min_ns, summary.p99_ns), (75.0, 25.0, 100.0));
        let whole = Timed::new((ns(&[300]), 1), false).outcome();
        assert_eq!(whole.median_ns(), Some(300.0));
    }

    #[test]
    fn the_floor_takes_turns_with_the_least_hca_and_the_8_byte_send_recv_rows() {
        let rows = rows();
        let turns = turns(Test::Floor);
        assert_eq!(turns[..2], [Test::Floor, Test::LeastHca]);
        let at = |t: &Test| rows.iter().position(|r| r == t).expect("a planned row");
        for t in &turns[1..] {
            assert!(t.is_latency() && t.bytes() == 8, "{t:?}");
            // Measured with the floor, reported at its own place in the table.
            assert!(at(t) > at(&Test::Floor), "{t:?}");
        }
        assert_eq!(
            super::turns(Test::WriteLat(Level::Driver, 8)),
            [Test::WriteLat(Level::Driver, 8), Test::WriteLat(Level::Dat, 8)]
        );
        assert_eq!(super::turns(Test::WriteBw(Level::Driver, 4096)).len(), 1);
    }

    #[test]
    fn memcpy_takes_turns_with_the_pipeline_and_the_1_mib_streams_which_come_later() {
        let rows = rows();
        let turns = turns(Test::Memcpy(1 << 20));
        let at = |t: &Test| rows.iter().position(|r| r == t).expect("a planned row");
        assert_eq!(turns[..2], [Test::Memcpy(1 << 20), Test::Pipeline(1 << 20)]);
        for t in &turns[1..] {
            assert!(!t.is_latency() && t.bytes() == 1 << 20, "{t:?}");
            assert!(at(t) > at(&Test::Memcpy(1 << 20)), "{t:?}");
        }
        assert!(turns.contains(&Test::WriteBw(Level::Driver, 1 << 20)));
        assert!(turns.contains(&Test::WriteBw(Level::Dat, 1 << 20)));
    }

    #[test]
    fn bandwidth_slices_add_up_to_one_row() {
        let slice = |bytes, seconds| {
            Measured::Bandwidth(Outcome::Bandwidth { bytes, messages: bytes / 4, seconds })
        };
        let mut row = slice(4000, 1.0);
        row.absorb(slice(2000, 0.5));
        assert_eq!(row.outcome(), Outcome::Bandwidth { bytes: 6000, messages: 1500, seconds: 1.5 });
        assert_eq!(row.outcome().mb_per_s(), Some(6000.0 / 1.5 / 1e6));
    }

    #[test]
    fn each_driver_latency_test_has_its_dat_row_and_bandwidth_runs_whole() {
        let rows = rows();
        for t in rows.iter().filter(|t| t.level() == Level::Driver) {
            let dat = t.at_dat_level().expect("a DAT twin");
            assert!(rows.contains(&dat), "{t:?}");
        }
        assert!(!Test::WriteBw(Level::Driver, 4096).is_latency());
        assert!(Test::ReadLat(Level::Dat, 8).is_latency());
        assert_eq!(Test::SendRecv(Level::Dat, 8).at_dat_level(), None);
    }
}
