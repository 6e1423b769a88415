//! ferrodat-engine: the DAT API over the ferrodat driver.
//!
//! DAT objects and their semantics (IA, PZ, LMR, RMR, EVD, CNO, EP, PSP, RSP, CR, SRQ), the
//! lock-free EVD engine that turns completions into DAT events, the connection manager, the
//! Rust API and the `capi` module that exports the DAT 2.0 provider ABI to `libdat2`.
