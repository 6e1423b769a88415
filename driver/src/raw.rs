//! The queues without the verbs objects around them: for callers that lend the device
//! memory themselves (an engine with its own allocator, a researcher's experiment, the
//! instruction-count benchmarks, which run them over plain memory with the [`Hardware`]
//! model so the figures are the driver's own cost).
//!
//! Every constructor is unsafe: the caller promises the memory stays mapped and lent to
//! the device for the queue's life. [`crate::Qp`], [`crate::Cq`] and [`crate::Srq`] are
//! these queues wired to real CREATE_QP/CQ/SRQ results.

pub use crate::cq_ring::{CqAttachments, CqGeometry, CqRing, QpCompletions, RecvSource};
pub use crate::doorbell::{BlueFlame, CqDoorbell, Hardware, Model};
pub use crate::mmio::DevPtr;
pub use crate::recv_queue::{RecvGeometry, RecvQueue, RecvTracker};
pub use crate::send_queue::{SendGeometry, SendQueue, SendTracker};
pub use crate::srq_ring::{SrqGeometry, SrqRing};
