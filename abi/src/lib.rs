//! ferrodat-abi: plain data, no logic.
//!
//! Every byte layout the rest of ferrodat exchanges with something it does not control:
//!
//! - [`uverbs`]: the Linux uverbs `write()` command protocol (`rdma/ib_user_verbs.h`);
//! - [`mlx5`]: the mlx5 provider data appended to those commands (`rdma/mlx5-abi.h`), the
//!   UAR mmap encoding and the queue formats the HCA reads and writes (`infiniband/mlx5dv.h`);
//! - [`dat`]: the DAT 2.0 C types a provider hands to `libdat2` and its consumers
//!   (`dat2/*.h`).
//!
//! Each struct carries `const` size and offset assertions, and `tests/c_layout.rs` compares
//! every struct, field and constant with the system's own C headers.
#![deny(missing_docs)]

mod layout;

pub mod dat;
pub mod mlx5;
pub mod uverbs;
