//! ferrodat-engine: the DAT API over the ferrodat driver.
//!
//! DAT objects and their semantics (IA, PZ, LMR, RMR, EVD, CNO, EP, PSP, RSP, CR, SRQ), the
//! lock-free EVD engine that turns completions into DAT events, the connection manager and
//! the Rust API. The `ferrodat-capi` crate exports it to `libdat2` as the DAT 2.0 provider
//! ABI (`libferrodat.so`).
//!
//! The `ferrodat` command (`src/bin/ferrodat/`) is the command-line front end: `perf`
//! (latency and bandwidth next to their baselines), `info`, `conf` and `softhca env`. The
//! measurement helpers it shares with the `benches` crate are in [`perf`].
//!
//! # Architecture
//!
//! One concept per module; the Rust API maps one to one onto the DAT 2.0 provider table,
//! so `ferrodat-capi` is a thin translation of handles, structs and return codes.
//!
//! - `error`: [`DatError`](error) — a DAT_RETURN type and subtype (2.0 numbering, from
//!   `ferrodat_abi::dat::status`), with a message saying what failed and what to do.
//! - `ep_state`: the endpoint state machine as one pure transition function, used by the
//!   API calls and by connection-manager events alike; the legal-calls table of the man
//!   pages, with `DAT_INVALID_STATE` carrying the current state as subtype.
//! - `evd`: the event queue of an EVD (a bounded lock-free queue that CM, async and
//!   software producers push into and the waiter or dequeuer pops), the wait machinery
//!   (spin, arm the CQ, sleep on the completion channel and an eventfd together; exact
//!   thresholds; unwaitable wakes a sleeper), and the EVD object.
//! - `cm`: the connection manager — QP number, PSN, GID, RDMA-read limits and private data
//!   exchanged over TCP on the IA's address (conn_qual = TCP port), then MODIFY_QP through
//!   RESET→INIT→RTR→RTS; requests, accepts, rejects, disconnects, dead peers.
//! - the objects: `ia`, `pz`, `lmr`, `rmr`, `cno`, `ep` (with per-EP cookie rings: a work
//!   request's wr_id is its cookie slot), `srq`, `sp` (PSP, RSP), `cr`.
//!
//! DTO completions are harvested from the CQs by whoever waits or dequeues — no library
//! thread on the data path.
//!
//! # Example: the active side of dtest, from Rust
//!
//! ```no_run
//! use ferrodat_abi::dat::{event, evd_flags, mem_priv};
//! use ferrodat_engine::{ep::Ep, event::Event, evd::Evd, ia::{Ia, IaSpec}};
//! use ferrodat_engine::{lmr::{Lmr, MemPriv}, pz::Pz};
//!
//! # fn main() -> Result<(), ferrodat_engine::error::DatError> {
//! let ia = Ia::open("ferro0", &IaSpec::parse("softhca0 1 127.0.0.1")?)?;
//! let pz = Pz::create(&ia)?;
//! let conn_evd = Evd::create(&ia, 8, evd_flags::CONNECTION)?;
//! let dto_evd = Evd::create(&ia, 64, evd_flags::DTO)?;
//! let ep = Ep::create(&pz, &dto_evd, &dto_evd, Some(&conn_evd), None)?;
//! let buf = Lmr::alloc(&pz, 4096, MemPriv(mem_priv::ALL))?;
//! ep.connect("127.0.0.1".parse().unwrap(), 45248, None, &[1; 48])?;
//! let (ev, _) = conn_evd.wait(u32::MAX, 1)?;
//! assert!(matches!(ev, Event::Connection { number: event::CONNECTION_EVENT_ESTABLISHED, .. }));
//! buf.write(0, b"hello")?;
//! ep.post_send(&[buf.triplet(0, 5)?], 7, 0)?;
//! let (done, _) = dto_evd.wait(u32::MAX, 1)?; // the send's DTO completion, cookie 7
//! # let _ = done;
//! # Ok(())
//! # }
//! ```

pub mod cm;
pub mod cno;
pub mod dto;
pub mod ep;
pub mod ep_state;
mod epoll;
pub mod error;
pub mod evd;
pub mod event;
mod event_fd;
pub mod ia;
pub mod lmr;
mod owned_thread;
pub mod perf;
mod plain_mutex;
pub mod pz;
pub mod rmr;
pub mod sp;
pub mod srq;
mod sync;
pub mod transient_hold;
