//! The hardware side of softhca: what a ConnectX does with the queues the driver fills.

pub mod app_memory;
pub mod cqe;
pub mod recv_wqe;
pub mod send_wqe;
pub mod wire;
