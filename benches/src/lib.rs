//! ferrodat-benches: iai-callgrind instruction counts of the fast path, and latency and
//! bandwidth runs with baselines measured in the same run. The benchmarks live in
//! `benches/`; the floor, the least software HCA and the sample summaries are the engine's
//! [`ferrodat_engine::perf`] helpers, which `ferrodat perf` uses too.

pub use ferrodat_engine::perf::{floor, least_hca, stats};

pub mod two_process;
