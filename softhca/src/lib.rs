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
//!
//! # The hardware side
//!
//! Each device owns an [`hca::engine::Engine`]: the CQs, QPs, SRQs and memory regions the
//! commands created, as a ConnectX would hold them. It reads send WQEs from the queue
//! buffers (up to the SQ counter in the doorbell record), checks every local and remote key
//! ([`hca::mr`]), moves the data, and writes CQE64s owner-byte-last into the CQ buffers
//! ([`hca::cqe`]). RC semantics ([`hca::queue_pair`]): in-order completion, unsignalled
//! WQEs completing silently, NAKs mapped to the syndromes hardware reports, RNR NAK and
//! retry, the transport timeout (`4.096 µs × 2^timeout`, `retry_cnt` times), and ERR
//! flushing every WQE.
//!
//! # Driving model
//!
//! softhca works on the threads that call it; nothing runs behind the driver's back unless
//! asked. Two entry points stand in for what the silicon does by itself, and are no-ops on
//! hardware:
//!
//! - [`Uverbs::doorbell_rung`] after the driver stored to a UAR, with the bytes it stored (not
//!   read back: threads share a page's CQ doorbell): a send doorbell executes the
//!   QP's new WQEs right away, on the caller's thread; the CQ doorbell arms the CQ (one
//!   completion event per arm, at once if completions already wait).
//! - [`Uverbs::progress`] when a poll finds the CQ empty: read the peers' packets (answer
//!   their requests, complete ours), run timers, and flush receives posted to a QP in ERR.
//!   An idle call is a few atomic loads.
//!
//! A process that must answer one-sided operations (RDMA READ/WRITE, atomics) or SENDs
//! while it does not poll — a server blocked elsewhere, as hardware would serve it — runs
//! the progress thread: [`hca::engine::Engine::start_progress_thread`], or
//! `FERRODAT_SOFTHCA_PROGRESS_THREAD=1` for every device. It also starts by itself where a
//! consumer may block ([`hca::engine::Engine::serve_in_background`]): at a CQ's first arm
//! through the doorbell (the consumer is about to sleep on its completion channel), and at
//! a DAT IA's open (the engine crate asks); `FERRODAT_SOFTHCA_PROGRESS_THREAD=0` refuses
//! that, for a process that polls everything itself. It spins briefly after work, then
//! sleeps on a futex until a peer sends a packet or a timer falls due: idle, it costs no
//! CPU. All hardware-side work of one device in one process is serialised by one mutex.
//!
//! # Between processes
//!
//! HCAs on one host meet in a directory under `/dev/shm` ([`fabric`]): a registry per HCA
//! name hands out QPNs, CQNs, keys unique across processes and records which process owns
//! each QP; each QP writes its packets ([`hca::wire`]) into a shared-memory ring its peer
//! reads. A process that dies leaves nothing the next one trips over (its entries and
//! files are swept by pid and start time), and its peers' requests time out into
//! `RETRY_EXC_ERR` rather than hanging.
//!
//! # Limits
//!
//! RC only (UC, UD, XRC, raw packet: EOPNOTSUPP); one port; static UARs; 64-byte CQEs;
//! one host (no UDP between hosts yet); registered memory is not pinned or charged to
//! RLIMIT_MEMLOCK, and the application must keep queues and registered buffers mapped while
//! the HCA may use them, as with pinned memory. Messages travel in 64 KiB segments whatever
//! the path MTU.

pub mod config;
pub mod device;
pub mod errno;
pub mod fabric;
pub mod hca;
pub mod kernel;
pub mod objects;
pub mod owning_process;
pub mod shared_backing;
pub mod sysfs;
pub mod user_memory;

pub use device::{Device, DeviceState, OpenError};
pub use errno::Errno;
pub use kernel::Uverbs;
