//! ferrodat-driver: the user-space mlx5 verbs driver.
//!
//! It opens `/dev/infiniband/uverbsN` (or a softhca device), issues the uverbs write()
//! commands itself, maps the UAR pages, owns its queue buffers and doorbell records, builds
//! mlx5 WQEs and polls CQE64s. It never links libibverbs. All wire layouts come from
//! `ferrodat-abi`.
//!
//! This commit holds the foundation: errors, device discovery, the uverbs channel, command
//! buffers and lent memory.

pub mod channel;
#[allow(dead_code)] // used by the objects that follow
mod command;
pub mod discovery;
pub mod dma;
pub mod error;

pub use channel::Channel;
pub use discovery::{DeviceInfo, DeviceKind, discover};
pub use error::{Error, Result};
