//! ferrodat-benches: iai-callgrind instruction counts of the fast path, and latency and
//! bandwidth runs with baselines measured in the same run. The benchmarks live in
//! `benches/`; this library holds what they share.

pub mod floor;
pub mod stats;
