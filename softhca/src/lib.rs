//! ferrodat-softhca: a software model of an mlx5 HCA and of the kernel side of uverbs.
//!
//! It answers the same uverbs command bytes the Linux kernel would, consumes the driver's
//! real WQEs and doorbell records and writes real CQE64s, so that the whole stack runs on
//! machines without RDMA hardware. Of the ferrodat crates it depends on `ferrodat-abi` only.
//!
//! # The kernel side
//!
//! [`Device::open`] gives the process's instance of a configured HCA ([`config`]);
//! [`Uverbs::open`] opens it like `/dev/infiniband/uverbsN`. [`Uverbs::write`] takes a
//! command's exact bytes and behaves like `write()` on the char device with Linux's uverbs
//! core and mlx5_ib behind it — same checks, same errno, same response bytes written
//! through the command's response pointer — for a ConnectX-5 with one RoCE v2 port, static
//! UARs and 64-byte CQEs; [`Uverbs::mmap`] maps its UAR pages. The objects the commands
//! create ([`objects`]) sit in the device's tables ([`DeviceState`]), where the hardware
//! side finds them by number.
//!
//! User addresses in commands are checked as the kernel's `copy_to_user` and pinning would
//! check them ([`user_memory`]): a bad one gives EFAULT, never a crash.

pub mod config;
pub mod device;
pub mod errno;
pub mod fabric;
pub mod hca;
pub mod kernel;
pub mod objects;
pub mod user_memory;

pub use device::{Device, DeviceState, OpenError};
pub use errno::Errno;
pub use kernel::Uverbs;
