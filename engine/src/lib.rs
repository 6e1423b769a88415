//! ferrodat-engine: the DAT API over the ferrodat driver.
//!
//! DAT objects and their semantics (IA, PZ, LMR, RMR, EVD, CNO, EP, PSP, RSP, CR, SRQ), the
//! lock-free EVD engine that turns completions into DAT events, the connection manager, the
//! Rust API and the `capi` module that exports the DAT 2.0 provider ABI to `libdat2`.
//!
//! The `ferrodat` command (`src/bin/ferrodat.rs`) is the command-line front end; today it
//! has `softhca env`, which prepares a shell to run unmodified verbs programs on softhca.
