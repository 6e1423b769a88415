//! The hardware side of softhca: what a ConnectX does with the queues the driver fills.

pub mod app_memory;
pub mod completion_queue;
pub mod cqe;
pub mod engine;
pub mod events;
pub mod fifo;
pub mod id_map;
pub mod mr;
pub mod placement;
pub mod queue_pair;
pub mod recv_wqe;
pub mod send_wqe;
pub mod shared_receive_queue;
pub mod wire;
