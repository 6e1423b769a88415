//! `abi::dat` against the C headers.

use crate::probe::Probe;

pub fn register(_p: &mut Probe) {}
