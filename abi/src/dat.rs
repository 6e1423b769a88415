//! dat
