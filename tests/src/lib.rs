//! ferrodat-tests: multi-process integration scenarios across the workspace.
//!
//! The scenarios live in `tests/tests/`; this library holds what they share.
