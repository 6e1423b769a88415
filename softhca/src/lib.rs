//! ferrodat-softhca: a software model of an mlx5 HCA and of the kernel side of uverbs.
//!
//! It answers the same uverbs command bytes the Linux kernel would, consumes the driver's
//! real WQEs and doorbell records and writes real CQE64s, so that the whole stack runs on
//! machines without RDMA hardware. Of the ferrodat crates it depends on `ferrodat-abi` only.

pub mod config;
pub mod errno;
pub mod fabric;
pub mod hca;

pub use errno::Errno;
