//! Byte layouts of the shared files. Public so tests and debugging tools can inspect them;
//! bump the version constant whenever anything here changes.
//!
//! All multi-byte fields are native-endian (the files never leave the host). Fields other
//! processes write live on their own 128-byte lines (two 64-byte lines: the adjacent-line
//! prefetcher pairs them, as `crossbeam_utils::CachePadded` assumes on x86-64).

/// Size of one false-sharing domain.
pub const LINE: usize = 128;

/// The per-HCA registry file `<dir>/<hca>.hca`.
pub mod registry {
    use super::LINE;

    /// `"FDSHCA\0R"`: written last, with Release, when the file is initialised.
    pub const MAGIC: u64 = u64::from_le_bytes(*b"FDSHCA\0R");
    /// Layout version; a file with another version is rebuilt.
    pub const VERSION: u32 = 1;

    // ---- header (immutable after initialisation) ----
    /// `u64`: [`MAGIC`].
    pub const OFF_MAGIC: usize = 0;
    /// `u32`: [`VERSION`].
    pub const OFF_VERSION: usize = 8;
    /// `u64`: total file size, must equal [`TOTAL_BYTES`].
    pub const OFF_TOTAL_BYTES: usize = 16;
    /// `u64`: random id of this incarnation of the file (changes at every rebuild).
    pub const OFF_REGISTRY_UID: usize = 24;
    /// 16 bytes: the HCA's GID.
    pub const OFF_GID: usize = 32;
    /// `u32`: [`QP_CAPACITY`].
    pub const OFF_QP_CAPACITY: usize = 48;
    /// `u32`: [`INSTANCE_CAPACITY`].
    pub const OFF_INSTANCE_CAPACITY: usize = 52;
    /// `u32`: [`PENDING_SLOTS`].
    pub const OFF_PENDING_SLOTS: usize = 56;
    /// `u32`: length of the HCA name.
    pub const OFF_NAME_LEN: usize = 60;
    /// The HCA name, up to [`MAX_NAME_BYTES`] bytes.
    pub const OFF_NAME: usize = 64;
    /// Longest HCA name.
    pub const MAX_NAME_BYTES: usize = 64;

    // ---- allocator line: u64 counters, fetch_add'ed ----
    /// `u64`: QPN allocation counter.
    pub const OFF_NEXT_QPN: usize = LINE;
    /// `u64`: mkey allocation counter.
    pub const OFF_NEXT_MKEY: usize = LINE + 8;
    /// `u64`: CQN allocation counter.
    pub const OFF_NEXT_CQN: usize = LINE + 16;
    /// `u64`: PDN allocation counter.
    pub const OFF_NEXT_PDN: usize = LINE + 24;
    /// `u64`: SRQN allocation counter.
    pub const OFF_NEXT_SRQN: usize = LINE + 32;

    // ---- instance table ----
    /// Start of the instance table.
    pub const INSTANCES_OFFSET: usize = 4096;
    /// Processes (instances) that can use one HCA at the same time.
    pub const INSTANCE_CAPACITY: usize = 1024;
    /// Bytes per instance slot.
    pub const INSTANCE_STRIDE: usize = 6 * LINE;
    /// `u64`: `state << 56 | pid` (state: [`STATE_FREE`], ...).
    pub const INST_OFF_STATE: usize = 0;
    /// `u64`: the instance's random id.
    pub const INST_OFF_UID: usize = 8;
    /// `u64`: the owner's start time (`/proc/<pid>/stat` field 22), 0 if unknown.
    pub const INST_OFF_START_TIME: usize = 16;
    /// `u32`: futex word, incremented by every wake.
    pub const INST_OFF_WAKE_SEQ: usize = LINE;
    /// `u32`: number of threads inside (or about to enter) a futex wait.
    pub const INST_OFF_SLEEPERS: usize = LINE + 4;
    /// `u64`: bit `w` set = pending bitmap word `w` may be non-zero.
    pub const INST_OFF_PENDING_SUMMARY: usize = LINE + 8;
    /// `u64`: statistics: FUTEX_WAKE syscalls issued to this instance.
    pub const INST_OFF_WAKE_SYSCALLS: usize = LINE + 16;
    /// `[u64; PENDING_SLOTS / 64]`: bit `s` set = the inbound ring of pending slot `s` may
    /// have records.
    pub const INST_OFF_PENDING_BITMAP: usize = 2 * LINE;
    /// Pending slots per instance, i.e. QPs one instance can own at the same time.
    pub const PENDING_SLOTS: usize = 4096;

    // ---- QP table, indexed by `qpn & (QP_CAPACITY - 1)` ----
    /// Start of the QP table.
    pub const QP_TABLE_OFFSET: usize = INSTANCES_OFFSET + INSTANCE_CAPACITY * INSTANCE_STRIDE;
    /// Entries in the QP table (QPs per HCA).
    pub const QP_CAPACITY: usize = 1 << 16;
    /// Bytes per QP entry.
    pub const QP_ENTRY_BYTES: usize = 32;
    /// `u64`: `state << 56 | qpn << 32 | pid`.
    pub const QP_OFF_WORD: usize = 0;
    /// `u64`: owner instance's random id.
    pub const QP_OFF_OWNER_UID: usize = 8;
    /// `u64`: `generation << 32 | instance index << 16 | pending slot`.
    pub const QP_OFF_META: usize = 16;
    /// `u64`: low 32 bits: QP state published by the owner (free for the HCA model's use).
    pub const QP_OFF_PUBLISHED: usize = 24;

    /// Total size of the file.
    pub const TOTAL_BYTES: usize = QP_TABLE_OFFSET + QP_CAPACITY * QP_ENTRY_BYTES;

    /// Slot/entry state: unused.
    pub const STATE_FREE: u8 = 0;
    /// Being initialised by the pid in the word.
    pub const STATE_CLAIMING: u8 = 1;
    /// In use.
    pub const STATE_LIVE: u8 = 2;
    /// Being reclaimed by the (sweeping) pid in the word.
    pub const STATE_RECLAIMING: u8 = 3;

    const _: () = assert!(PENDING_SLOTS / 64 <= 64, "one summary word covers the bitmap");
    const _: () = assert!(INST_OFF_PENDING_BITMAP + PENDING_SLOTS / 8 <= INSTANCE_STRIDE);
    const _: () = assert!(OFF_NAME + MAX_NAME_BYTES <= LINE);
    const _: () = assert!(QP_TABLE_OFFSET.is_multiple_of(LINE));
    const _: () = assert!(INSTANCE_CAPACITY <= 1 << 16 && PENDING_SLOTS <= 1 << 16);
}

/// A QP's outbound ring file `<dir>/<hca>/qp-0x<qpn>`.
pub mod ring {
    use super::LINE;

    /// `"FDRING\0\x01"`.
    pub const MAGIC: u64 = u64::from_le_bytes(*b"FDRING\0\x01");
    /// Layout version (3: packets may use the compact header of `hca::wire`; 4: record
    /// headers are written last and consumed records are zeroed, see `ring.rs`; 5: packets
    /// carry up to 64 KiB of payload, `hca::wire::SEGMENT_BYTES`; 6: the owning QP's facts
    /// at [`OFF_QP_FACTS`] and its placement gate at [`OFF_PLACING`]; 7: the producer's
    /// request for room at [`OFF_ROOM_WANTED`]).
    pub const VERSION: u32 = 7;

    // ---- line 0: written by the producer at create (and dest/epoch at reset) ----
    /// `u64`: [`MAGIC`].
    pub const OFF_MAGIC: usize = 0;
    /// `u32`: [`VERSION`].
    pub const OFF_VERSION: usize = 8;
    /// `u32`: offset of the data area, [`DATA_OFFSET`].
    pub const OFF_DATA_OFFSET: usize = 12;
    /// `u64`: data area size in bytes (power of two).
    pub const OFF_CAPACITY: usize = 16;
    /// `u32`: the producing (owning) QP.
    pub const OFF_SRC_QPN: usize = 24;
    /// `u32`: the QP the current epoch's records are for (set by `reset`).
    pub const OFF_DEST_QPN: usize = 28;
    /// `u64`: `epoch << 32 | position` where the current epoch starts.
    pub const OFF_EPOCH_START: usize = 32;
    /// `u64`: producer pid.
    pub const OFF_PRODUCER_PID: usize = 40;
    /// `u64`: producer start time (see the registry's instance slot).
    pub const OFF_PRODUCER_START_TIME: usize = 48;
    /// `u64`: uid of the registry incarnation the QPN was allocated in.
    pub const OFF_REGISTRY_UID: usize = 56;
    /// `u64`: what the owning QP tells its peer's requester about itself, for one-sided
    /// placement (`hca::placement`): `state | remote access flags << 8 | pdn << 32`, stored
    /// at every state change; 0 until the first. Read-mostly, like the rest of this line.
    pub const OFF_QP_FACTS: usize = 64;

    /// `u64`: `epoch << 32 | tail position` (bytes ever written, wrapping), producer line.
    pub const OFF_TAIL: usize = LINE;
    /// `u64`: `epoch << 32 | head position` (bytes consumed, wrapping), consumer line.
    pub const OFF_HEAD: usize = 2 * LINE;
    /// `u64`: set by a push that found the ring full (the head position it waits for, with
    /// a marker bit): the consumer whose head reaches the position clears it and wakes the
    /// producer's QP (`ring.rs`, "Room"). In the consumer's line: the consumer reads it
    /// after every record, the producer writes it only when the ring is full.
    pub const OFF_ROOM_WANTED: usize = 2 * LINE + 8;
    /// `u32`: the consuming QP's number while it polls this ring (producers then skip the
    /// pending-slot notification), else 0. Written by the consumer only when it starts or
    /// stops polling, read by the producer after every push: a read-mostly line. See
    /// `wake.rs`, "Polled rings".
    pub const OFF_POLLED_BY: usize = 3 * LINE;
    /// `u64`: non-zero while the producing QP places an RDMA WRITE into its peer's memory
    /// (`hca::placement`); the peer QP waits for 0 after it changed its facts. Written by
    /// the producer at every placement, read by the consumer only then: its own line.
    pub const OFF_PLACING: usize = 4 * LINE;
    /// Start of the record area.
    pub const DATA_OFFSET: usize = 5 * LINE;

    /// Every record starts with an 8-byte header: `len: u32` (bytes after the header),
    /// `kind: u16`, `tag: u16` (low 16 bits of the epoch), then `len` bytes, padded to 8.
    pub const RECORD_HEADER_BYTES: usize = 8;
    /// Record alignment.
    pub const RECORD_ALIGN: usize = 8;
    /// The kind of the padding record that fills the end of the area before a wrap.
    pub const KIND_PAD: u16 = 0xffff;

    /// Smallest allowed capacity.
    pub const MIN_CAPACITY: usize = 4096;
    /// Largest allowed capacity (positions are 32-bit and wrap).
    pub const MAX_CAPACITY: usize = 1 << 30;
    /// Default capacity.
    pub const DEFAULT_CAPACITY: usize = 256 * 1024;
}

/// An export file `<dir>/<hca>/mr-0x<key index>`: a registered memory region its owner
/// lets peers write directly (`fabric/memory_export.rs`).
pub mod export {
    use super::LINE;

    /// `"FDMREXP\x01"`.
    pub const MAGIC: u64 = u64::from_le_bytes(*b"FDMREXP\x01");
    /// Layout version.
    pub const VERSION: u32 = 1;

    // ---- line 0: written once, before the file is published ----
    /// `u64`: [`MAGIC`], stored last.
    pub const OFF_MAGIC: usize = 0;
    /// `u32`: [`VERSION`].
    pub const OFF_VERSION: usize = 8;
    /// `u32`: the region's key (`index << 8 | variant`).
    pub const OFF_KEY: usize = 12;
    /// `u32`: the region's PD number.
    pub const OFF_PDN: usize = 16;
    /// `u32`: the region's `uverbs::access` flags.
    pub const OFF_ACCESS: usize = 20;
    /// `u64`: the first address of the region in the key's address space (iova).
    pub const OFF_IOVA: usize = 24;
    /// `u64`: the region's length in bytes.
    pub const OFF_LENGTH: usize = 32;
    /// `u64`: the exporting process's pid.
    pub const OFF_EXPORTER_PID: usize = 40;
    /// `u64`: the exporting process's start time (as in the registry's instance slots).
    pub const OFF_EXPORTER_START_TIME: usize = 48;
    /// `u64`: the exporter's descriptor of the backing file (peers open
    /// `/proc/<pid>/fd/<fd>`).
    pub const OFF_FD: usize = 56;
    /// `u64`: the byte offset in the backing file where the region starts.
    pub const OFF_FILE_OFFSET: usize = 64;
    /// `u64`: the backing file's device number (`st_dev`), checked by the opener.
    pub const OFF_DEV: usize = 72;
    /// `u64`: the backing file's inode number (`st_ino`), checked by the opener.
    pub const OFF_INO: usize = 80;

    /// `u64`: the key while the region takes placements, 0 once it is withdrawn.
    pub const OFF_LIVE: usize = LINE;
    /// `u64` each: the pid of a process placing data into the region right now, or 0.
    pub const OFF_USER_SLOTS: usize = 2 * LINE;
    /// Number of user slots (processes placing into one region at the same moment).
    pub const USER_SLOTS: usize = 64;
    /// File size.
    pub const TOTAL_BYTES: usize = 4096;

    const _: () = assert!(OFF_USER_SLOTS + USER_SLOTS * 8 <= TOTAL_BYTES);
}
