//! ferrodat-driver: the user-space mlx5 verbs driver.
//!
//! It opens `/dev/infiniband/uverbsN` (or a softhca device), issues the uverbs write()
//! commands itself, maps the UAR pages, owns its queue buffers and doorbell records, builds
//! mlx5 WQEs and polls CQE64s. It never links libibverbs. All wire layouts come from
//! `ferrodat-abi`.
//!
//! # Opening a device
//!
//! [`open`] (= [`Context::open`]) takes a device name: a real HCA by its IB name (`mlx5_0`,
//! found through sysfs, [`discovery`]) or a software HCA by its softhca name (`softhca0`,
//! configured by `FERRODAT_SOFTHCA`, default `softhca0=127.0.0.1`). An unknown name, or none
//! at all, gives an error listing what was found and both ways to get a device.
//!
//! # Driving model
//!
//! The control path ([`Context`], [`Pd`], [`Mr`], [`CompChannel`], [`Cq`], [`Qp`], [`Srq`])
//! sends uverbs commands through a [`Channel`]: a `write()` on the char device for
//! hardware, or a call into the in-process softhca with the same bytes. The data path is
//! the same for both: it writes WQEs and doorbell records in memory the driver lent to the
//! device ([`dma`]) and stores to the mapped UAR pages. On softhca two model entry points
//! stand in for what the silicon does by itself: [`Channel::doorbell_rung`] after a UAR
//! store and [`Channel::progress`] when a poll finds nothing. On hardware both are no-ops
//! the compiler removes from the match.
//!
//! # Lifetimes: parents are kept alive
//!
//! Every object holds an `Arc` of its parents: a [`Qp`] holds its [`Pd`], both [`Cq`]s and
//! its [`Srq`]; a [`Cq`] holds the [`Context`] and its [`CompChannel`]; an [`Mr`] holds its
//! [`Pd`] (and mutably borrows its buffer), as does an [`Mw`] (its PD). The destroy command runs in `Drop` when the
//! last handle goes, so "destroy a CQ a QP still uses" cannot be expressed; a destroy that
//! fails in `Drop` is reported on stderr, never a panic. The context's channel closes
//! last, after all objects and UAR mappings.
//!
//! # Threads
//!
//! All handle types are `Send + Sync`: the control path's state is immutable after creation
//! or behind a mutex (the doorbell-record pool, a CQ's ring after RESIZE_CQ), and commands
//! are independent `write()`s the kernel (or softhca's per-file mutex) serialises. Types
//! holding addresses of device memory ([`context::BfReg`], [`qp::QpGeometry`],
//! [`cq::CqGeometry`], [`srq::SrqGeometry`], [`dma::DmaBuf`], [`dma::DbRecord`]) are
//! `Send + Sync` by an explicit `unsafe impl`: they never hand out a Rust reference to
//! memory the device writes, only raw addresses, and whoever stores or loads through them
//! (the data path: one poster per queue) provides the ordering.

pub mod channel;
mod command;
pub mod comp_channel;
pub mod completion;
pub mod context;
pub mod cq;
mod cq_ring;
#[cfg(test)]
mod data_path_tests;
pub mod discovery;
pub mod dma;
mod doorbell;
pub mod error;
mod mmio;
pub mod mr;
pub mod mw;
pub mod pd;
pub mod qp;
pub mod raw;
mod recv_queue;
mod send_queue;
pub mod srq;
mod srq_ring;
mod user_index;
pub mod work_request;

pub use channel::Channel;
pub use comp_channel::CompChannel;
pub use context::{AsyncEvent, BfReg, Context, ContextAttr, DeviceAttr, PortAttr, PortState};
pub use cq::{Cq, CqEventCounts, CqOptions};
pub use discovery::{DeviceInfo, DeviceKind, discover};
pub use error::{Error, Result};
pub use mr::{Access, Mr, MrBuf, MrRaw};
pub use mw::{Mw, MwBind};
pub use pd::Pd;
pub use qp::{AddressVector, Qp, QpAttr, QpCaps, QpInfo, QpInit, QpState, RemoteQp};
pub use srq::Srq;

/// Opens the device called `name` (`mlx5_0`, `softhca0`, …); see [`Context::open`].
pub fn open(name: &str) -> Result<Context> {
    Context::open(name)
}
