//! ferrodat-driver: the user-space mlx5 verbs driver.
//!
//! It opens `/dev/infiniband/uverbsN` (or a softhca device), issues the uverbs write()
//! commands itself, maps the UAR pages, owns its queue buffers and doorbell records, builds
//! mlx5 WQEs and polls CQE64s. It never links libibverbs. All wire layouts come from
//! `ferrodat-abi`.

pub mod completion;
mod cq_ring;
#[cfg(test)]
mod data_path_tests;
mod doorbell;
mod mmio;
pub mod raw;
mod recv_queue;
mod send_queue;
mod srq_ring;
pub mod work_request;
