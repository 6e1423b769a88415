//! The EVD engine's building blocks.
//!
//! - [`queue`]: [`EventQueue`], the bounded lock-free MPMC FIFO an EVD's events wait in
//!   (exact qlen capacity, FIFO per producer, each event to exactly one consumer).

pub mod queue;

pub use queue::EventQueue;
