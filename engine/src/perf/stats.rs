//! Summaries of latency samples.

use std::time::Duration;

/// Median, 99th percentile and minimum of per-operation times in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Median.
    pub median_ns: f64,
    /// 99th percentile.
    pub p99_ns: f64,
    /// Minimum.
    pub min_ns: f64,
}

impl Summary {
    /// Each figure halved: a round trip's summary as a one-way (half round trip) one,
    /// as perftest reports latency.
    pub fn halved(self) -> Summary {
        Summary {
            median_ns: self.median_ns / 2.0,
            p99_ns: self.p99_ns / 2.0,
            min_ns: self.min_ns / 2.0,
        }
    }
}

/// Summarises samples, each the time of `ops_per_sample` operations, as time per operation.
///
/// # Panics
///
/// If `samples` is empty: a caller times at least one sample (`ferrodat perf`'s timed
/// loops always take one, however short the run).
pub fn summarize(samples: &[Duration], ops_per_sample: u32) -> Summary {
    assert!(!samples.is_empty(), "no samples to summarise");
    let mut per_op: Vec<f64> =
        samples.iter().map(|d| d.as_nanos() as f64 / f64::from(ops_per_sample)).collect();
    per_op.sort_by(f64::total_cmp);
    let at = |q: f64| per_op[((per_op.len() - 1) as f64 * q).round() as usize];
    Summary { median_ns: at(0.5), p99_ns: at(0.99), min_ns: per_op[0] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_operation_quantiles() {
        let samples: Vec<Duration> = (1..=100).map(|i| Duration::from_nanos(i * 10)).collect();
        let s = summarize(&samples, 10);
        assert_eq!(s.min_ns, 1.0);
        assert_eq!(s.median_ns, 51.0);
        assert_eq!(s.p99_ns, 99.0);
    }
}
