//! ferrodat-loom-tests: loom models of the lock-free structures of the fast path.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p ferrodat-loom-tests --release`; the models
//! live in `tests/` and are compiled only under `cfg(loom)`.
