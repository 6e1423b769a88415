#![allow(unused_unsafe)]
//! Every layout and constant of `ferrodat-abi`, compared with the system's C headers.
//!
//! One list per area (`c_layout/{uverbs,mlx5,dat}.rs`) names each C struct with its Rust
//! counterpart and fields, and each C constant with its Rust value. From that list the test
//! writes a C program that prints `sizeof`, every `offsetof`, every field's `sizeof` and every
//! constant, compiles it with `cc` against the installed headers (libibverbs-dev,
//! libdapl-dev), runs it and compares each line with the value Rust computed. Any difference
//! fails the test with the full list of mismatches.

#[macro_use]
mod probe;

#[path = "c_layout/dat.rs"]
mod dat;
#[path = "c_layout/mlx5.rs"]
mod mlx5;
#[path = "c_layout/uverbs.rs"]
mod uverbs;

#[test]
fn every_layout_and_constant_matches_the_system_headers() {
    let mut probe = probe::Probe::new(&[
        "netinet/in.h",
        "rdma/ib_user_verbs.h",
        "rdma/ib_user_ioctl_verbs.h",
        "infiniband/verbs.h",
        "rdma/mlx5-abi.h",
        "infiniband/mlx5dv.h",
        "dat2/udat.h",
        "dat2/dat_registry.h",
        "dat2/dat_ib_extensions.h",
    ]);
    uverbs::register(&mut probe);
    mlx5::register(&mut probe);
    dat::register(&mut probe);
    probe.run_and_compare();
}
