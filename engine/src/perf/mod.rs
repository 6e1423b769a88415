//! Measurement helpers shared by `ferrodat perf` and the `benches` crate: the
//! shared-memory floor (two processes bouncing one cache line) and the summaries of
//! latency samples. One copy, so the command and the benchmarks measure the floor the
//! same way.

pub mod floor;
pub mod least_hca;
pub mod pipeline;
mod shared_file;
pub mod stats;
