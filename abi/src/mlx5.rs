//! The mlx5 provider ABI and the mlx5 queue formats.
//!
//! Sources of truth: `rdma/mlx5-abi.h` (what the kernel's mlx5_ib driver appends to uverbs
//! commands and responses) and `infiniband/mlx5dv.h` (the work and completion queue entries
//! the HCA reads and writes). Everything is re-exported here, so `mlx5::CreateQp`,
//! `mlx5::WqeCtrlSeg`, `mlx5::opcode::SEND` and `mlx5::cqe_opcode::REQ` are the paths to use.
//!
//! - Provider command data ("UHW", host-endian): [`AllocUcontextReqV2`] /
//!   [`AllocUcontextResp`] (GET_CONTEXT), [`AllocPdResp`], [`CreateCq`] / [`CreateCqResp`],
//!   [`ResizeCq`], [`AllocMw`], [`CreateQp`] / [`CreateQpResp`], [`CreateSrq`] / [`CreateSrqResp`],
//!   [`QueryDeviceResp`] (appended to QUERY_DEVICE_EX when `cmds_supp_uhw` says so), and
//!   the flag words that go with them.
//! - UAR mapping: [`mmap_offset`] / [`mmap_cmd`], the UAR page offsets [`CQ_DOORBELL`] and
//!   [`BF_OFFSET`], the doorbell-record indices and the CQ arm word ([`cq_arm_word`]).
//! - Queue formats (device-visible, so **big-endian**: every multi-byte field is a zerocopy
//!   `big_endian::U16/U32/U64`): [`WqeCtrlSeg`], [`WqeRaddrSeg`], [`WqeAtomicSeg`],
//!   [`WqeDataSeg`], [`WqeInlDataSeg`], [`WqeSrqNextSeg`], [`Cqe64`], [`ErrCqe`]; for
//!   binding a memory window (opcode UMR) [`WqeUmrCtrlSeg`], [`WqeMkeyContextSeg`] and
//!   [`WqeUmrKlmSeg`].
//!
//! # Send queue
//!
//! A send WQE is a run of 16-byte units ("ds", [`SEND_WQE_DS`]) in 64-byte basic blocks
//! (WQEBBs, [`SEND_WQE_BB`]): a [`WqeCtrlSeg`], then for RDMA a [`WqeRaddrSeg`], for atomics
//! also a [`WqeAtomicSeg`], then [`WqeDataSeg`]s or one inline block ([`WqeInlDataSeg`]
//! header `len | INLINE_SEG`, then the bytes, padded to 16). `ctrl.qpn_ds` low 6 bits = the
//! number of ds units of the whole WQE, ctrl included; the WQE occupies
//! `ceil(ds * 16 / 64)` WQEBBs and the producer counter advances by that many. The WQE index
//! in `ctrl.opmod_idx_opcode` is that counter (mod 2^16) at the WQE's first WQEBB. Segments
//! that would pass the end of the ring continue at its start.
//!
//! # Receive queue
//!
//! A receive WQE is an array of [`WqeDataSeg`] (stride `1 << rq_wqe_shift`); when fewer than
//! the stride's worth are used, a terminator `{byte_count 0, lkey INVALID_LKEY, addr 0}`
//! follows. An SRQ WQE is a [`WqeSrqNextSeg`] (link to the next free WQE) followed by the
//! data segments. The receive side has no UAR doorbell: the device learns of new WQEs only
//! from the doorbell record.
//!
//! # Doorbell records
//!
//! Two big-endian u32 in host memory, the address passed as `db_addr`:
//! - QP: `[RCV_DBR]` = RQ producer counter (WQEs, mod 2^16), `[SND_DBR]` = SQ producer
//!   counter in WQEBBs (mod 2^16), written before the UAR doorbell.
//! - CQ: `[CQ_SET_CI]` = consumer index (24 bits), `[CQ_ARM_DB]` = the last arm word
//!   ([`cq_arm_word`]).
//!
//! # Ringing the send queue (BlueFlame)
//!
//! After the WQE and `dbrec[SND_DBR]` are written, one write to the QP's bfreg in its UAR
//! page (`BF_OFFSET + k * bf_reg_size`, halves of `bf_reg_size / 2` used alternately) tells
//! the device: either the first 8 bytes of the last WQE's ctrl segment as one 64-bit store
//! (a plain doorbell), or — BlueFlame, for a single WQE of at most `bf_reg_size / 2` bytes on
//! a bfreg other than 0 — the whole WQE copied in 64-byte chunks, which saves the device a
//! DMA read. bfreg 0 is doorbell-only.
//!
//! # Completion queue ownership
//!
//! The CQ is a ring of `ncqe` (a power of two) 64-byte entries (with 128-byte CQEs, the
//! [`Cqe64`] is the second half). Software initialises every `op_own` to `0xf0`
//! ([`cqe_opcode::INVALID`], owner 0). With `n` the free-running consumer index, entry
//! `n & (ncqe - 1)` is software-owned iff its opcode (`op_own >> 4`) is not `INVALID` and its
//! owner bit (`op_own & CQE_OWNER_MASK`) equals `(n / ncqe) & 1`: the device writes producer
//! index `p` with owner `(p / ncqe) & 1`, `op_own` last. Software reads the rest of the CQE
//! only after that check (acquire barrier), then publishes `n` in `dbrec[CQ_SET_CI]`.

mod cqe;
mod uar;
mod uhw;
mod wqe;

pub use self::cqe::*;
pub use self::uar::*;
pub use self::uhw::*;
pub use self::wqe::*;
