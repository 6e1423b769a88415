//! SPSC ring of variable-size records in a shared file (layout in [`layout::ring`]).
//!
//! The producer is the QP's owner (it creates the file at CREATE_QP); the consumer is the
//! owner of the peer QP, in another process, which maps the file and reads.
//!
//! # Positions and epochs
//!
//! `tail` (producer line) and `head` (consumer line) are 64-bit words `epoch << 32 |
//! position`; positions count bytes and wrap at 2^32 (capacity <= 2^30, so
//! `tail - head` in wrapping arithmetic is the amount in use). Records are 8-byte aligned
//! and never straddle the end of the area: a record that does not fit before the end is
//! preceded by a padding record (kind `0xffff`) filling the rest, and both are published
//! by a single Release store of `tail`.
//!
//! [`RingProducer::reset`] (at reconnect) starts a new epoch *at the current tail*: it
//! stores `dest_qpn` and `epoch_start`, then `tail` with the new epoch (Release). A
//! consumer that sees a new epoch in `tail` skips to `epoch_start`, so the new epoch starts
//! empty for it. The producer keeps counting the old epoch's unconsumed bytes as used until
//! the consumer has moved `head`, which is what guarantees that a producer never
//! overwrites bytes a consumer may still be reading, even across a reset. Each record
//! header carries the low 16 bits of its epoch, checked by the consumer (epochs whose low
//! 16 bits are zero are skipped, so no header is all zero).
//!
//! # Headers
//!
//! A record's 8-byte header is written after its payload, with Release, so a record is
//! published twice: by its header, then (with any padding record before it) by `tail`.
//! The consumer zeroes every byte it moves its head past — records it consumed, padding,
//! and old epochs' records it skips at a resync or a discard — before it stores `head`
//! (Release), and the producer only writes where `head` (Acquire) let it. So everything at
//! and after the head that the producer has not published in this lap reads as zero, and
//! the header word at the head is a complete "is there a record?" flag:
//! [`RingConsumer::pop_small`] and [`RingConsumer::may_have_records`] read it (and the
//! epoch-start word, which only changes at resets) instead of `tail`. The consumer then
//! never reads the tail's line while the producer writes it: a small message costs one
//! cache-line transfer, not two. Whatever the header word does not settle (a padding
//! record, another epoch's tag, an impossible length) goes through the tail-checked path.
//! Model: `loom-tests/tests/ring_headers.rs`.
//!
//! # Trust
//!
//! The consumer validates everything it reads: the header at open (magic, version,
//! capacity, file size, source QPN), and for each record: `tail - head` within capacity
//! and aligned, the record's tag, its length against the record-size limit, the space to
//! the end of the area and the bytes published. Violations are [`RingError::Corrupt`]; the
//! consumer's state is unchanged, so the error repeats until [`RingConsumer::discard_all`]
//! or the producer resets. The producer trusts nothing either: a `head` that does not lie
//! within the last `capacity` bytes before `tail` reads as "full".
//!
//! [`RingConsumer::may_have_records`] is a hint read from the header word at the head and
//! the epoch-start word (or the tail, before an epoch is ours), and a producer can make
//! it say "maybe" for ever without publishing anything (a word where the next header
//! goes, an epoch start that never reaches the tail). So a read that finds no record
//! remembers every word it decided on, and the hint is "no" while they all stay as they
//! were: a poller does not spin on such a ring.
//!
//! # Room
//!
//! A push that finds the ring full leaves a request in the consumer's line
//! ([`lay::OFF_ROOM_WANTED`]: the head position it needs, with a marker bit), then looks
//! at the head once more (Relaxed store, SeqCst fence, Acquire load). The consuming QP
//! looks at the word after each record it handles and once more after the last look of
//! its pass (one Relaxed load of a line the head store just wrote; the ring's own calls do
//! not look); once the head has reached the position, it clears the word and wakes the
//! producer's QP ([`RingConsumer::take_room_request`]), so a producer whose owner sleeps
//! is woken when there is room instead of at its next timeout. The consumer's look is not
//! fenced (a fence there would wait for the zeroed record's line on every message), so in
//! a narrow race it can miss a request made while it consumed its last record; the
//! producer then finds the room at its next look, after at most the progress thread's
//! sleep while a QP waits for room (`hca/engine.rs`, `BlockedOnPeers`): a late wake, never
//! a lost record. A request can also outlive the wait it was made for (the second look
//! found room): its grant is then one wake too many.
//!
//! # Polling
//!
//! The consumer may announce that it polls the ring ([`RingConsumer::set_polling`]); the
//! producer then needs no notification ([`RingProducer::consumer_polls`]). The protocol is
//! in `wake.rs`, "Polled rings".
//!
//! # Cost
//!
//! A push: one load of `head` only when the cached free space is too small, the payload
//! copy, one Release store of the header, one Release store of `tail`. A small pop: one
//! load of the epoch-start word (a line that stays shared), one Acquire load of the
//! header, the copy, the zeroing, one Release store of `head`; the consuming QP then
//! loads the room request (see "Room") from the line that store just wrote.

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{Ordering, fence};

use super::FabricError;
use super::layout::ring as lay;
use super::liveness::{ProcessIdentity, wait_while_busy};
use super::registry::{Registry, create_zeroed_file, temp_path};
use super::shm::SharedMapping;

/// Why a push was refused. Nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushError {
    /// Not enough free space now (back-pressure: retry after the consumer caught up).
    Full {
        /// Bytes the record needs, including its header, alignment and any padding.
        needed: usize,
        /// Bytes free.
        free: usize,
    },
    /// The record can never fit: `len` > [`RingProducer::max_record_len`].
    TooLarge {
        /// Header plus payload bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Kind `0xffff` is reserved for padding.
    ReservedKind,
    /// [`RingProducer::try_push_filled`]: the fill callback returned success without
    /// appending the whole payload it announced. Nothing was published.
    Unfilled {
        /// Payload bytes appended.
        filled: usize,
        /// Payload bytes announced.
        len: usize,
    },
}

impl std::fmt::Display for PushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Full { needed, free } => {
                write!(f, "ring full: the record needs {needed} bytes, {free} are free")
            }
            Self::TooLarge { len, max } => {
                write!(f, "record of {len} bytes exceeds the ring's limit of {max} bytes")
            }
            Self::ReservedKind => write!(f, "record kind 0xffff is reserved for padding"),
            Self::Unfilled { filled, len } => write!(
                f,
                "the record's fill appended {filled} of the {len} payload bytes it announced; \
                 nothing was published (a bug in the caller's gather)"
            ),
        }
    }
}

impl std::error::Error for PushError {}

/// What the consumer found wrong in shared memory. The ring is unusable until
/// [`RingConsumer::discard_all`] or a producer reset; treat it as a protocol error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingError {
    /// Shared state violates the ring protocol (garbage, or a hostile/dead producer).
    Corrupt {
        /// The producing QP.
        src_qpn: u32,
        /// The check that failed.
        what: &'static str,
        /// The consumer's position when it failed.
        position: u32,
        /// The offending value.
        value: u64,
    },
    /// [`RecordView::read`] asked for bytes outside the record.
    OutsideRecord {
        /// Requested offset in the record.
        offset: usize,
        /// Requested length.
        len: usize,
        /// The record's length.
        record_len: usize,
    },
}

impl std::fmt::Display for RingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Corrupt { src_qpn, what, position, value } => write!(
                f,
                "ring of QP {src_qpn:#x} is corrupt: {what} (value {value:#x}) at position \
                 {position:#x}; the producer wrote garbage or died mid-write: treat as a \
                 protocol error"
            ),
            Self::OutsideRecord { offset, len, record_len } => write!(
                f,
                "read of {len} bytes at offset {offset} is outside a {record_len}-byte record"
            ),
        }
    }
}

impl std::error::Error for RingError {}

/// What [`RingConsumer::pop_small`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmallRecord {
    /// No record.
    None,
    /// A record of `len` bytes, copied out and consumed.
    Record {
        /// The producer's kind.
        kind: u16,
        /// Header plus payload length.
        len: usize,
    },
    /// The next record is larger than the buffer: nothing was consumed.
    Larger,
}

/// A record copied out of the ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The producer's kind.
    pub kind: u16,
    /// Header and payload, as pushed.
    pub bytes: Vec<u8>,
}

/// The longest a QP waits for its peer's placement in progress
/// ([`RingConsumer::wait_while_producer_places`]).
pub const PLACEMENT_WAIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Word indices in the mapping (see [`SharedMapping::words`]) of the fields the fast
/// paths touch.
const EPOCH_START_WORD: usize = lay::OFF_EPOCH_START / 8;
const TAIL_WORD: usize = lay::OFF_TAIL / 8;
const HEAD_WORD: usize = lay::OFF_HEAD / 8;
const AREA_WORD: usize = lay::DATA_OFFSET / 8;
const _: () = assert!(lay::OFF_EPOCH_START.is_multiple_of(8) && lay::OFF_TAIL.is_multiple_of(8));
const _: () = assert!(lay::OFF_HEAD.is_multiple_of(8) && lay::DATA_OFFSET.is_multiple_of(8));

/// Marks a request in [`lay::OFF_ROOM_WANTED`] (whose low 32 bits are the head position
/// the producer waits for, which may be 0).
const ROOM_REQUESTED: u64 = 1 << 32;

fn round_up_8(len: usize) -> usize {
    (len + 7) & !7
}

fn pack(epoch: u32, position: u32) -> u64 {
    (u64::from(epoch) << 32) | u64::from(position)
}

fn record_header(len: u32, kind: u16, epoch: u32) -> u64 {
    u64::from(len) | (u64::from(kind) << 32) | (u64::from(epoch as u16) << 48)
}

/// The largest header + payload a ring of `capacity` bytes accepts: half the capacity
/// minus a record header, so a record always fits once the ring is empty, padding
/// included.
fn max_record_len(capacity: usize) -> usize {
    capacity / 2 - lay::RECORD_HEADER_BYTES
}

/// The producer's identity as written in a ring file header (for the registry sweep).
pub(crate) fn producer_of_file(path: &Path) -> Option<ProcessIdentity> {
    let file = std::fs::File::open(path).ok()?;
    let mut header = [0u8; 64];
    file.read_exact_at(&mut header, 0).ok()?;
    let word = |off: usize| u64::from_ne_bytes(header[off..off + 8].try_into().unwrap_or([0; 8]));
    (word(lay::OFF_MAGIC) == lay::MAGIC).then(|| ProcessIdentity {
        pid: word(lay::OFF_PRODUCER_PID) as u32,
        start_time: word(lay::OFF_PRODUCER_START_TIME),
    })
}

/// Why [`RingProducer::try_push_filled`] published nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilledPushError<E> {
    /// The ring refused the record before the fill ran (full, too large, reserved kind,
    /// or a fill that came up short).
    Ring(PushError),
    /// The fill callback failed; what it had written was wiped.
    Fill(E),
}

/// A payload larger than the room left in the record being filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordOverflow {
    /// Bytes the append wanted to write.
    pub len: usize,
    /// Bytes left in the record.
    pub remaining: usize,
}

impl std::fmt::Display for RecordOverflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "append of {} bytes to a record with {} bytes left", self.len, self.remaining)
    }
}

impl std::error::Error for RecordOverflow {}

/// The payload area of a record reserved by [`RingProducer::try_push_filled`], filled
/// front to back by appends that copy straight into the ring. Nothing is visible to the
/// consumer until the fill returns and the record is published.
pub struct RecordFiller<'a> {
    map: &'a SharedMapping,
    /// Next byte to write, as an offset in the mapping.
    at: usize,
    /// End of the payload, as an offset in the mapping.
    end: usize,
}

impl RecordFiller<'_> {
    /// Payload bytes still to append.
    pub fn remaining(&self) -> usize {
        self.end - self.at
    }

    fn claim(&mut self, len: usize) -> Result<usize, RecordOverflow> {
        if len > self.remaining() {
            return Err(RecordOverflow { len, remaining: self.remaining() });
        }
        let at = self.at;
        self.at += len;
        Ok(at)
    }

    /// Appends `bytes`.
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), RecordOverflow> {
        let at = self.claim(bytes.len())?;
        let copied = self.map.copy_in(at, bytes);
        debug_assert!(copied.is_ok(), "reserved record overran the ring area");
        Ok(())
    }

    /// Appends `len` bytes read from `src`, with one `memmove` (bulk payload).
    ///
    /// # Safety
    /// `src..src+len` must be readable for the duration of the call.
    pub unsafe fn append_raw(&mut self, src: *const u8, len: usize) -> Result<(), RecordOverflow> {
        let at = self.claim(len)?;
        // SAFETY: the caller vouches for the source; the destination was reserved.
        let copied = unsafe { self.map.copy_in_raw(at, src, len) };
        debug_assert!(copied.is_ok(), "reserved record overran the ring area");
        Ok(())
    }

    /// Appends `len` zero bytes.
    pub fn append_zeros(&mut self, len: usize) -> Result<(), RecordOverflow> {
        const ZEROS: [u8; 512] = [0; 512];
        if len > self.remaining() {
            return Err(RecordOverflow { len, remaining: self.remaining() });
        }
        let mut left = len;
        while left > 0 {
            let n = left.min(ZEROS.len());
            self.append(&ZEROS[..n])?;
            left -= n;
        }
        Ok(())
    }
}

// =================================================================================== producer

/// The writing end: owned by the QP's process, which must serialise calls (`&mut self`).
pub struct RingProducer {
    map: SharedMapping,
    path: PathBuf,
    src_qpn: u32,
    capacity: u32,
    epoch: u32,
    tail: u32,
    /// Last `head` position read; free space is computed from it until too small.
    cached_head: u32,
    /// The QP the current epoch is addressed to, as last stored in the file (only the
    /// producer writes it).
    dest_qpn: u32,
}

impl std::fmt::Debug for RingProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingProducer")
            .field("path", &self.path)
            .field("epoch", &self.epoch)
            .field("tail", &self.tail)
            .finish()
    }
}

impl RingProducer {
    pub(crate) fn create(
        registry: &Registry,
        src_qpn: u32,
        dest_qpn: u32,
        capacity: Option<usize>,
    ) -> Result<Self, FabricError> {
        let path = registry.ring_path(src_qpn);
        let capacity = capacity.unwrap_or(lay::DEFAULT_CAPACITY);
        if !capacity.is_power_of_two()
            || !(lay::MIN_CAPACITY..=lay::MAX_CAPACITY).contains(&capacity)
        {
            return Err(FabricError::InvalidArgument(format!(
                "ring capacity {capacity} must be a power of two in {}..={}",
                lay::MIN_CAPACITY,
                lay::MAX_CAPACITY
            )));
        }
        let temp = temp_path(registry.ring_dir(), &format!("qp-{src_qpn:#08x}"));
        let file = create_zeroed_file(&temp, (lay::DATA_OFFSET + capacity) as u64)?;
        let built = SharedMapping::map(&file, lay::DATA_OFFSET + capacity, &temp).and_then(|map| {
            let me = ProcessIdentity::current();
            let epoch = 1; // head starts as 0 = epoch 0: never mistaken for ours
            map.u32_at(lay::OFF_VERSION).store(lay::VERSION, Ordering::Relaxed);
            map.u32_at(lay::OFF_DATA_OFFSET).store(lay::DATA_OFFSET as u32, Ordering::Relaxed);
            map.u64_at(lay::OFF_CAPACITY).store(capacity as u64, Ordering::Relaxed);
            map.u32_at(lay::OFF_SRC_QPN).store(src_qpn, Ordering::Relaxed);
            map.u32_at(lay::OFF_DEST_QPN).store(dest_qpn, Ordering::Relaxed);
            map.u64_at(lay::OFF_EPOCH_START).store(pack(epoch, 0), Ordering::Relaxed);
            map.u64_at(lay::OFF_PRODUCER_PID).store(u64::from(me.pid), Ordering::Relaxed);
            map.u64_at(lay::OFF_PRODUCER_START_TIME).store(me.start_time, Ordering::Relaxed);
            map.u64_at(lay::OFF_REGISTRY_UID).store(registry.uid(), Ordering::Relaxed);
            map.u64_at(lay::OFF_TAIL).store(pack(epoch, 0), Ordering::Relaxed);
            map.u64_at(lay::OFF_MAGIC).store(lay::MAGIC, Ordering::Release);
            // Publish complete: consumers never see a half-initialised ring file.
            std::fs::rename(&temp, &path).map_err(|e| {
                FabricError::os("rename (publish ring)", &path, e, "is the HCA directory writable?")
            })?;
            Ok(Self {
                map,
                path: path.clone(),
                src_qpn,
                capacity: capacity as u32,
                epoch,
                tail: 0,
                cached_head: 0,
                dest_qpn,
            })
        });
        if built.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        built
    }

    /// The ring file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The producing QP.
    pub fn src_qpn(&self) -> u32 {
        self.src_qpn
    }

    /// Bytes of record space.
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// Largest header + payload one record may carry (capacity / 2 - 8).
    pub fn max_record_len(&self) -> usize {
        max_record_len(self.capacity as usize)
    }

    /// The current epoch (1 after create, +1 per reset).
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The QP the current epoch is addressed to.
    pub fn dest_qpn(&self) -> u32 {
        self.map.u32_at(lay::OFF_DEST_QPN).load(Ordering::Relaxed)
    }

    /// Free bytes now (reads the consumer's head).
    pub fn free_bytes(&mut self) -> usize {
        self.refresh_head();
        self.free_from_cache()
    }

    /// The facts word last published (0 before any: a QP in RESET granting nothing).
    pub fn qp_facts(&self) -> u64 {
        self.map.u64_at(lay::OFF_QP_FACTS).load(Ordering::Relaxed)
    }

    /// Stores what the owning QP tells its peer about itself (see [`lay::OFF_QP_FACTS`]).
    /// A change that takes placement away is followed by
    /// [`RingConsumer::wait_while_producer_places`], whose SeqCst fence orders this store
    /// before its look at the peer's gate.
    pub fn publish_qp_facts(&self, facts: u64) {
        self.map.u64_at(lay::OFF_QP_FACTS).store(facts, Ordering::Release);
    }

    /// Opens (`true`) or closes the placement gate ([`lay::OFF_PLACING`]). Opening is
    /// followed by a SeqCst fence, before the caller's look at the peer's facts, so a peer
    /// that changes them either is seen to have, or sees the gate open and waits until it
    /// closes (Dekker's pattern, as `loom-tests/tests/placement.rs` checks); closing is a
    /// Release after the copy.
    pub fn set_placing(&self, placing: bool) {
        let word = self.map.u64_at(lay::OFF_PLACING);
        if placing {
            word.store(1, Ordering::Relaxed);
            fence(Ordering::SeqCst);
        } else {
            word.store(0, Ordering::Release);
        }
    }

    /// The consumer's head word as it is now (it moves when the consumer reads).
    pub fn consumer_head(&self) -> u64 {
        self.map.u64_at(lay::OFF_HEAD).load(Ordering::Acquire)
    }

    /// True when the consumer has consumed everything.
    pub fn is_drained(&mut self) -> bool {
        self.free_bytes() == self.capacity as usize
    }

    fn refresh_head(&mut self) {
        let head = self.map.u64_at(lay::OFF_HEAD).load(Ordering::Acquire) as u32;
        // Positions continue across epochs, so any epoch's head counts; a misaligned head
        // or one outside [tail - capacity, tail] is garbage and reads as "full".
        self.cached_head =
            if self.tail.wrapping_sub(head) <= self.capacity && head.is_multiple_of(8) {
                head
            } else {
                self.tail.wrapping_sub(self.capacity)
            };
    }

    fn free_from_cache(&self) -> usize {
        (self.capacity - self.tail.wrapping_sub(self.cached_head)) as usize
    }

    /// The ring lacks `needed` bytes: asks the consumer to wake this QP once its head has
    /// reached the position that frees them, or half the ring if that is more (a wake per
    /// record would cost each a sleep and a wake-up on both sides), then reads the head
    /// again (see "Room").
    #[cold]
    fn ask_for_room(&mut self, needed: usize) {
        let room = (needed as u32).max(self.capacity / 2);
        let wanted = self.tail.wrapping_add(room).wrapping_sub(self.capacity);
        let request = ROOM_REQUESTED | u64::from(wanted);
        let word = self.map.u64_at(lay::OFF_ROOM_WANTED);
        if word.load(Ordering::Relaxed) != request {
            word.store(request, Ordering::Relaxed);
            // Orders the request before the head's second reading: a consumer that moved
            // the head too late for that reading sees the request.
            fence(Ordering::SeqCst);
        }
        self.refresh_head();
    }

    /// Appends one record: `header` then each of `payload`, copied straight into the ring
    /// (no intermediate buffer). Publishes it with a Release store of the tail; call the
    /// consumer's [`QpNotifier::notify`](super::QpNotifier::notify) afterwards.
    pub fn try_push(
        &mut self,
        kind: u16,
        header: &[u8],
        payload: &[&[u8]],
    ) -> Result<(), PushError> {
        let payload_len = payload.iter().fold(0usize, |sum, part| sum.saturating_add(part.len()));
        self.try_push_filled(kind, header, payload_len, |record| {
            payload.iter().try_for_each(|part| record.append(part))
        })
        .map_err(|e| match e {
            FilledPushError::Ring(e) => e,
            // The parts are exactly the announced length: an append cannot overflow.
            FilledPushError::Fill(overflow) => {
                PushError::Unfilled { filled: payload_len - overflow.remaining, len: payload_len }
            }
        })
    }

    /// Appends one record: `header`, then `payload_len` bytes that `fill` appends straight
    /// into the ring (a gather from application memory, say: no intermediate buffer).
    /// Published with a Release store of the tail once `fill` returned success having
    /// appended exactly `payload_len` bytes ([`Self::try_push`] is this with slices). If it fails (or comes up short) nothing is
    /// published and every byte written is zeroed again, so the space reads as unused
    /// (see "Headers"); the next push reuses it.
    pub fn try_push_filled<E>(
        &mut self,
        kind: u16,
        header: &[u8],
        payload_len: usize,
        fill: impl FnOnce(&mut RecordFiller<'_>) -> Result<(), E>,
    ) -> Result<(), FilledPushError<E>> {
        if kind == lay::KIND_PAD {
            return Err(FilledPushError::Ring(PushError::ReservedKind));
        }
        let max = self.max_record_len();
        let len = header.len().saturating_add(payload_len);
        if len > max {
            return Err(FilledPushError::Ring(PushError::TooLarge { len, max }));
        }
        let record_bytes = lay::RECORD_HEADER_BYTES + round_up_8(len);
        let (base, needed) = self.reserve(record_bytes).map_err(FilledPushError::Ring)?;
        let start = base + lay::RECORD_HEADER_BYTES;
        // In bounds by construction: the record fits before the end of the area.
        let written = self.map.write_bytes(start, header);
        debug_assert!(written.is_ok(), "record overran the ring area");
        let mut filler =
            RecordFiller { map: &self.map, at: start + header.len(), end: start + len };
        let outcome = fill(&mut filler);
        let (filled_to, unfilled) = (filler.at, filler.remaining());
        let error = match outcome {
            Ok(()) if unfilled == 0 => {
                self.publish(base, needed, len, kind);
                return Ok(());
            }
            Ok(()) => FilledPushError::Ring(PushError::Unfilled {
                filled: payload_len - unfilled,
                len: payload_len,
            }),
            Err(e) => FilledPushError::Fill(e),
        };
        // Back to zeros: the header word of any later record may land on these bytes,
        // and a padding record `reserve` wrote before the area's end goes too.
        self.zero_unpublished(start, round_up_8(filled_to));
        if needed != record_bytes {
            let pad_at = lay::DATA_OFFSET + (self.tail & (self.capacity - 1)) as usize;
            self.map.u64_at(pad_at).store(0, Ordering::Relaxed);
        }
        Err(error)
    }

    /// Zeroes mapping offsets `from..to` (8-aligned, inside the area): bytes written for a
    /// record that was not published.
    fn zero_unpublished(&self, from: usize, to: usize) {
        let zeroed = self.map.zero_bytes(from, to.saturating_sub(from));
        debug_assert!(zeroed.is_ok(), "record overran the ring area");
    }

    /// Room for a record of `record_bytes` at the tail, after a padding record where the
    /// area's end is too close: the record's offset in the mapping and the bytes the tail
    /// will move by. Full: the consumer has not freed enough yet.
    #[inline(always)]
    fn reserve(&mut self, record_bytes: usize) -> Result<(usize, usize), PushError> {
        let offset = (self.tail & (self.capacity - 1)) as usize;
        // The common case, decided from the cached head: room before the area's end.
        if record_bytes <= self.capacity as usize - offset && record_bytes <= self.free_from_cache()
        {
            return Ok((lay::DATA_OFFSET + offset, record_bytes));
        }
        self.reserve_slow(record_bytes)
    }

    #[cold]
    fn reserve_slow(&mut self, record_bytes: usize) -> Result<(usize, usize), PushError> {
        let offset = (self.tail & (self.capacity - 1)) as usize;
        let to_end = self.capacity as usize - offset;
        let padding = if record_bytes > to_end { to_end } else { 0 };
        let needed = padding + record_bytes;
        if self.free_from_cache() < needed {
            self.refresh_head();
            if self.free_from_cache() < needed {
                self.ask_for_room(needed);
            }
            let free = self.free_from_cache();
            if free < needed {
                return Err(PushError::Full { needed, free });
            }
        }
        let mut offset = offset;
        if padding != 0 {
            let pad_len = (padding - lay::RECORD_HEADER_BYTES) as u32;
            self.map
                .u64_at(lay::DATA_OFFSET + offset)
                .store(record_header(pad_len, lay::KIND_PAD, self.epoch), Ordering::Relaxed);
            offset = 0;
        }
        Ok((lay::DATA_OFFSET + offset, needed))
    }

    /// The record at `base` is written: its header last, with Release, publishes it (see
    /// "Headers"); then the tail moves by `needed`.
    fn publish(&mut self, base: usize, needed: usize, len: usize, kind: u16) {
        self.map.u64_at(base).store(record_header(len as u32, kind, self.epoch), Ordering::Release);
        self.tail = self.tail.wrapping_add(needed as u32);
        self.map.u64_at(lay::OFF_TAIL).store(pack(self.epoch, self.tail), Ordering::Release);
    }

    /// Appends one record of `len` bytes (header and payload as the consumer will read
    /// them) held in `words` (`len <= 8 * words.len()`; bytes past `len` are not part of
    /// the record). The same record as [`Self::try_push`] would write, for small records:
    /// whole-word stores and one bounds check instead of byte copies.
    #[inline(always)]
    pub fn try_push_words(
        &mut self,
        kind: u16,
        words: &[u64],
        len: usize,
    ) -> Result<(), PushError> {
        if kind == lay::KIND_PAD {
            return Err(PushError::ReservedKind);
        }
        let max = self.max_record_len();
        if len > max {
            return Err(PushError::TooLarge { len, max });
        }
        let body = round_up_8(len) / 8;
        let Some(body_words) = words.get(..body) else {
            panic!("record of {len} bytes in {} words", words.len());
        };
        let (base, needed) = self.reserve(lay::RECORD_HEADER_BYTES + 8 * body)?;
        // In bounds by construction (the record fits before the end of the area); one
        // slice of the mapping for the record, its header and the tail.
        let shared = self.map.words();
        let record = &shared[base / 8..base / 8 + 1 + body];
        // A plain index loop: a small record is a few words, not worth unrolled copies.
        let mut i = 0;
        while i < body {
            record[i + 1].store(body_words[i], Ordering::Relaxed);
            i += 1;
        }
        // As `publish`: the header last, with Release, then the tail.
        record[0].store(record_header(len as u32, kind, self.epoch), Ordering::Release);
        self.tail = self.tail.wrapping_add(needed as u32);
        shared[TAIL_WORD].store(pack(self.epoch, self.tail), Ordering::Release);
        Ok(())
    }

    /// After a push: true if the consumer of the current epoch polls this ring, so it needs
    /// no notification (see `wake.rs`, "Polled rings": the SeqCst fence orders the tail
    /// store before this load, against the consumer's flag store and tail re-check).
    pub fn consumer_polls(&self) -> bool {
        fence(Ordering::SeqCst);
        let polled_by = self.map.u32_at(lay::OFF_POLLED_BY).load(Ordering::Relaxed);
        polled_by != 0 && polled_by == self.dest_qpn
    }

    /// Starts a new epoch addressed to `dest_qpn` (at RTR / reconnect): the consumer skips
    /// every record pushed before. Unconsumed old bytes stay accounted as used until the
    /// consumer notices the new epoch, so no byte it may be reading is overwritten.
    pub fn reset(&mut self, dest_qpn: u32) {
        // Epochs whose low 16 bits are 0 are skipped: a record header is never all zero.
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch as u16 == 0 {
            self.epoch = self.epoch.wrapping_add(1);
        }
        // A new consumer starts out notified, whatever an earlier one left here, and owes
        // no wake for the old epoch.
        self.map.u32_at(lay::OFF_POLLED_BY).store(0, Ordering::Relaxed);
        self.map.u64_at(lay::OFF_ROOM_WANTED).store(0, Ordering::Relaxed);
        self.map.u32_at(lay::OFF_DEST_QPN).store(dest_qpn, Ordering::Relaxed);
        self.dest_qpn = dest_qpn;
        // Release: a consumer that sees the new epoch here (its per-record check) or in
        // tail sees dest too.
        self.map.u64_at(lay::OFF_EPOCH_START).store(pack(self.epoch, self.tail), Ordering::Release);
        // Release: a consumer that sees the new epoch in tail sees dest and start too.
        self.map.u64_at(lay::OFF_TAIL).store(pack(self.epoch, self.tail), Ordering::Release);
    }
}

// =================================================================================== consumer

/// The reading end, in the peer's process (`&mut self`: one reader).
pub struct RingConsumer {
    map: SharedMapping,
    path: PathBuf,
    src_qpn: u32,
    my_qpn: u32,
    capacity: u32,
    /// The epoch we are reading, `None` before the first epoch addressed to us.
    epoch: Option<u32>,
    head: u32,
    attached: bool,
    resyncs: u64,
    /// We announced in the ring that we poll it (producers skip notifications).
    polling: bool,
    /// The shared words a read decides on ([`SharedWords`]), as they were when the last
    /// read found no record (see "Trust").
    no_record_at: Option<SharedWords>,
}

impl std::fmt::Debug for RingConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingConsumer")
            .field("path", &self.path)
            .field("epoch", &self.epoch)
            .field("head", &self.head)
            .finish()
    }
}

/// A record in the ring, valid during a [`RingConsumer::peek`] / [`RingConsumer::consume`]
/// callback. Bytes are copied out with [`RecordView::read`] (headers, volatile loads) or
/// [`RecordView::copy_out_raw`] (bulk payload, one `memmove` to its destination); no
/// reference into shared memory is handed out.
pub struct RecordView<'a> {
    map: &'a SharedMapping,
    data_offset: usize,
    len: usize,
    kind: u16,
}

impl RecordView<'_> {
    /// The producer's kind.
    pub fn kind(&self) -> u16 {
        self.kind
    }

    /// Header plus payload length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a record with no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `dst.len()` bytes from `offset` in the record.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), RingError> {
        let outside = RingError::OutsideRecord { offset, len: dst.len(), record_len: self.len };
        match offset.checked_add(dst.len()) {
            Some(end) if end <= self.len => {
                self.map.read_bytes(self.data_offset + offset, dst).map_err(|_| outside)
            }
            _ => Err(outside),
        }
    }

    /// Copies `len` bytes from `offset` in the record to `dst` with one `memmove` (bulk
    /// payload: see `shm.rs`).
    ///
    /// # Safety
    /// `dst..dst+len` must be writable for the duration of the call.
    pub unsafe fn copy_out_raw(
        &self,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), RingError> {
        let outside = RingError::OutsideRecord { offset, len, record_len: self.len };
        match offset.checked_add(len) {
            Some(end) if end <= self.len => {
                // SAFETY: the caller vouches for the destination; the source range lies in
                // the record, which `locate` validated to lie inside the mapping.
                unsafe { self.map.copy_out_raw(self.data_offset + offset, dst, len) }
                    .map_err(|_| outside)
            }
            _ => Err(outside),
        }
    }

    /// The whole record, copied.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut bytes = vec![0; self.len];
        // Validated at construction: the record lies inside the mapping.
        let _ = self.read(0, &mut bytes);
        bytes
    }
}

/// Everything the producer writes that decides whether the consumer finds a record: its
/// head position (ours), the header word at the head, the epoch-start word and the tail.
#[derive(Clone, Copy, PartialEq, Eq)]
struct SharedWords {
    head: u32,
    header: u64,
    epoch_start: u64,
    tail: u64,
}

/// A validated record position.
struct Located {
    data_offset: usize,
    len: usize,
    kind: u16,
    end: u32,
}

impl RingConsumer {
    pub(crate) fn open(path: &Path, src_qpn: u32, my_qpn: u32) -> Result<Self, FabricError> {
        let file = OpenOptions::new().read(true).write(true).open(path).map_err(|e| {
            let hint = if e.kind() == io::ErrorKind::NotFound {
                "the peer QP has no ring: not created yet, destroyed, or its process died"
            } else {
                "is the HCA directory readable and writable by this user?"
            };
            FabricError::os("open ring", path, e, hint)
        })?;
        let size = file
            .metadata()
            .map_err(|e| FabricError::os("fstat", path, e, "is the file readable?"))?
            .len();
        let mut header = [0u8; 64];
        if size < lay::DATA_OFFSET as u64 {
            return Err(FabricError::bad_file(
                path,
                format!("ring file of {size} bytes is shorter than its header"),
            ));
        }
        file.read_exact_at(&mut header, 0)
            .map_err(|e| FabricError::os("read header of", path, e, "is the file readable?"))?;
        let u64_at =
            |off: usize| u64::from_ne_bytes(header[off..off + 8].try_into().unwrap_or([0; 8]));
        let u32_at =
            |off: usize| u32::from_ne_bytes(header[off..off + 4].try_into().unwrap_or([0; 4]));
        let capacity = u64_at(lay::OFF_CAPACITY);
        let problem = if u64_at(lay::OFF_MAGIC) != lay::MAGIC {
            Some(format!("bad ring magic {:#018x}", u64_at(lay::OFF_MAGIC)))
        } else if u32_at(lay::OFF_VERSION) != lay::VERSION {
            Some(format!("ring layout version {} != {}", u32_at(lay::OFF_VERSION), lay::VERSION))
        } else if u32_at(lay::OFF_DATA_OFFSET) as usize != lay::DATA_OFFSET {
            Some(format!("data offset {} != {}", u32_at(lay::OFF_DATA_OFFSET), lay::DATA_OFFSET))
        } else if !capacity.is_power_of_two()
            || !(lay::MIN_CAPACITY as u64..=lay::MAX_CAPACITY as u64).contains(&capacity)
        {
            Some(format!("capacity {capacity} is not a power of two in the allowed range"))
        } else if size < lay::DATA_OFFSET as u64 + capacity {
            Some(format!("file of {size} bytes is shorter than its capacity {capacity}"))
        } else if u32_at(lay::OFF_SRC_QPN) != src_qpn {
            Some(format!("ring belongs to QP {:#x}, not {src_qpn:#x}", u32_at(lay::OFF_SRC_QPN)))
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(FabricError::bad_file(path, problem));
        }
        let map = SharedMapping::map(&file, lay::DATA_OFFSET + capacity as usize, path)?;
        Ok(Self {
            map,
            path: path.to_path_buf(),
            src_qpn,
            my_qpn,
            capacity: capacity as u32,
            epoch: None,
            head: 0,
            attached: false,
            resyncs: 0,
            polling: false,
            no_record_at: None,
        })
    }

    /// The ring file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The producing QP.
    pub fn src_qpn(&self) -> u32 {
        self.src_qpn
    }

    /// Bytes of record space.
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// What the producing QP last told about itself ([`lay::OFF_QP_FACTS`]), if its ring
    /// is addressed to our QP now (a producer that reconnected to another QP tells that
    /// one, not us).
    pub fn producer_qp_facts(&self) -> Option<u64> {
        // After the fence of the caller's open placement gate (`RingProducer::set_placing`).
        let facts = self.map.u64_at(lay::OFF_QP_FACTS).load(Ordering::Acquire);
        let dest = self.map.u32_at(lay::OFF_DEST_QPN).load(Ordering::Relaxed);
        (dest == self.my_qpn).then_some(facts)
    }

    /// The epoch being read; `None` until the producer addresses an epoch to our QP.
    pub fn epoch(&self) -> Option<u32> {
        self.epoch
    }

    /// How many times the consumer switched to a new epoch.
    pub fn resyncs(&self) -> u64 {
        self.resyncs
    }

    /// Waits while the producing QP is placing data into our memory (its placement gate is
    /// open), after we changed our facts: then no placement that saw our old facts is
    /// still writing. A placement of one chunk takes microseconds, or a CPU quota period
    /// or a page read from disk when the placer is throttled or faults; this gives up after
    /// [`PLACEMENT_WAIT_LIMIT`] (a placer stopped in a debugger, or one that leaves its gate
    /// open: it runs as our user and can write our shared memory directly anyway, while
    /// waiting holds the caller's locks) or when the producer's process is gone.
    pub fn wait_while_producer_places(&self) {
        let gate = self.map.u64_at(lay::OFF_PLACING);
        // The caller's facts store, then the gate, with a SeqCst fence between.
        fence(Ordering::SeqCst);
        wait_while_busy(
            || gate.load(Ordering::Acquire) != 0,
            || self.producer_gone(),
            Some(PLACEMENT_WAIT_LIMIT),
        );
    }

    /// The pid of the process that created the ring (the producing QP's owner), as its
    /// header says.
    pub fn producer_pid(&self) -> u32 {
        self.map.u64_at(lay::OFF_PRODUCER_PID).load(Ordering::Relaxed) as u32
    }

    /// True when the process that created the ring is gone (a few syscalls: slow path).
    pub fn producer_gone(&self) -> bool {
        ProcessIdentity {
            pid: self.map.u64_at(lay::OFF_PRODUCER_PID).load(Ordering::Relaxed) as u32,
            start_time: self.map.u64_at(lay::OFF_PRODUCER_START_TIME).load(Ordering::Relaxed),
        }
        .is_gone()
    }

    fn corrupt(&self, what: &'static str, value: u64) -> RingError {
        RingError::Corrupt { src_qpn: self.src_qpn, what, position: self.head, value }
    }

    /// True, once, when the producer asked for room (see "Room") and the head has
    /// reached the position it waits for: the caller wakes the producer's QP. One Relaxed
    /// load when there is no request; call it after consuming records.
    #[inline]
    pub fn take_room_request(&self) -> bool {
        let word = self.map.u64_at(lay::OFF_ROOM_WANTED);
        let request = word.load(Ordering::Relaxed);
        // Positions are within the capacity (at most 2^30) of each other, so the wrapping
        // difference read as signed says which is ahead; a garbage request only costs the
        // producer that wrote it its wake.
        request & ROOM_REQUESTED != 0
            && self.head.wrapping_sub(request as u32) as i32 >= 0
            && word.compare_exchange(request, 0, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    fn store_head(&self) {
        if let Some(epoch) = self.epoch {
            self.map.u64_at(lay::OFF_HEAD).store(pack(epoch, self.head), Ordering::Release);
        }
    }

    /// Reads `tail`, following a new epoch if the producer reset. Returns the tail
    /// position of our epoch, or `None` when no epoch is addressed to us (yet).
    fn sync(&mut self) -> Result<Option<u32>, RingError> {
        if self.map.lost() {
            // The producer (or anyone) shrank the file: what it held is gone.
            return Err(self.corrupt("the ring file was truncated under its mapping", 0));
        }
        let tail = self.map.u64_at(lay::OFF_TAIL).load(Ordering::Acquire);
        let (tail_epoch, tail_position) = ((tail >> 32) as u32, tail as u32);
        if self.epoch == Some(tail_epoch) {
            return Ok(Some(tail_position));
        }
        let start = self.map.u64_at(lay::OFF_EPOCH_START).load(Ordering::Acquire);
        if (start >> 32) as u32 != tail_epoch {
            return Ok(None); // a reset is being published: look again later
        }
        let dest = self.map.u32_at(lay::OFF_DEST_QPN).load(Ordering::Relaxed);
        if dest != self.my_qpn {
            self.epoch = None; // this epoch is for another QP
            return Ok(None);
        }
        let start_position = start as u32;
        if tail_position.wrapping_sub(start_position) > self.capacity
            || !start_position.is_multiple_of(8)
        {
            return Err(self.corrupt("epoch start not within capacity before tail", start));
        }
        let mut head = start_position;
        // Where the bytes nobody consumed begin: the head the last consumer stored.
        let old = self.map.u64_at(lay::OFF_HEAD).load(Ordering::Acquire);
        let (old_epoch, old_position) = ((old >> 32) as u32, old as u32);
        let consumed_to = old_position;
        if !self.attached {
            // A consumer re-attaching to the same epoch resumes where the last one stopped.
            if old_epoch == tail_epoch
                && old_position % 8 == 0
                && old_position.wrapping_sub(start_position)
                    <= tail_position.wrapping_sub(start_position)
            {
                head = old_position;
            }
        }
        // Records of earlier epochs skipped unread are zeroed like consumed ones (see
        // "Headers"); the producer does not reuse their space before we move the head.
        if consumed_to % 8 == 0 && head.wrapping_sub(consumed_to) <= self.capacity {
            self.zero(consumed_to, head);
        }
        self.attached = true;
        self.epoch = Some(tail_epoch);
        self.head = head;
        self.resyncs += 1;
        self.store_head();
        Ok(Some(tail_position))
    }

    /// The shared words as they are now (loads of three lines).
    #[cold]
    fn shared_words(&self) -> SharedWords {
        let words = self.map.words();
        let at = AREA_WORD + (self.head & (self.capacity - 1)) as usize / 8;
        SharedWords {
            head: self.head,
            header: words[at].load(Ordering::Acquire),
            epoch_start: words[EPOCH_START_WORD].load(Ordering::Acquire),
            tail: words[TAIL_WORD].load(Ordering::Acquire),
        }
    }

    /// Finds and validates the next record (skipping a padding record). Finding none, it
    /// remembers the shared words as they were before it looked (a record published while
    /// it looked changes them, so [`Self::may_have_records`] still reports it).
    fn locate(&mut self) -> Result<Option<Located>, RingError> {
        let before = self.shared_words();
        let found = self.locate_after_sync();
        if let Ok(None) = found {
            self.no_record_at = Some(before);
        }
        found
    }

    fn locate_after_sync(&mut self) -> Result<Option<Located>, RingError> {
        let Some(tail) = self.sync()? else {
            return Ok(None);
        };
        let Some(epoch) = self.epoch else {
            return Ok(None);
        };
        for _ in 0..2 {
            let available = tail.wrapping_sub(self.head);
            if available == 0 {
                return Ok(None);
            }
            if available > self.capacity || available % 8 != 0 {
                return Err(self.corrupt("tail not within capacity after head", u64::from(tail)));
            }
            let offset = (self.head & (self.capacity - 1)) as usize;
            let header = self.map.u64_at(lay::DATA_OFFSET + offset).load(Ordering::Relaxed);
            let (len, kind, tag) =
                (header as u32 as usize, (header >> 32) as u16, (header >> 48) as u16);
            if tag != epoch as u16 {
                return Err(self.corrupt("record tag is not the epoch's", header));
            }
            let to_end = self.capacity as usize - offset;
            if kind == lay::KIND_PAD {
                if len + lay::RECORD_HEADER_BYTES != to_end || to_end > available as usize {
                    return Err(self.corrupt("padding record does not end at the wrap", header));
                }
                let end = self.head.wrapping_add(to_end as u32);
                self.zero(self.head, end);
                self.head = end;
                self.store_head();
                continue;
            }
            let record_bytes = lay::RECORD_HEADER_BYTES + round_up_8(len);
            if len > max_record_len(self.capacity as usize)
                || record_bytes > to_end
                || record_bytes > available as usize
            {
                return Err(self.corrupt("record length out of bounds", header));
            }
            return Ok(Some(Located {
                data_offset: lay::DATA_OFFSET + offset + lay::RECORD_HEADER_BYTES,
                len,
                kind,
                end: self.head.wrapping_add(record_bytes as u32),
            }));
        }
        Err(self.corrupt("two padding records in a row", u64::from(tail)))
    }

    /// Calls `f` with the next record without consuming it. `Ok(None)`: no record.
    pub fn peek<R>(
        &mut self,
        f: impl FnOnce(&RecordView<'_>) -> R,
    ) -> Result<Option<R>, RingError> {
        let Some(at) = self.locate()? else {
            return Ok(None);
        };
        Ok(Some(f(&RecordView {
            map: &self.map,
            data_offset: at.data_offset,
            len: at.len,
            kind: at.kind,
        })))
    }

    /// Calls `f` with the next record, then consumes it (frees its space for the producer).
    pub fn consume<R>(
        &mut self,
        f: impl FnOnce(&RecordView<'_>) -> R,
    ) -> Result<Option<R>, RingError> {
        let Some(at) = self.locate()? else {
            return Ok(None);
        };
        let result = f(&RecordView {
            map: &self.map,
            data_offset: at.data_offset,
            len: at.len,
            kind: at.kind,
        });
        self.zero(self.head, at.end);
        self.head = at.end;
        self.store_head();
        Ok(Some(result))
    }

    /// Consumes the next record if it fits in `out` (its bytes from the start of `out`,
    /// in whole words), else leaves it for [`Self::consume`]. The checks are those of
    /// [`Self::consume`]; the common case (same epoch, no padding) reads the tail, the
    /// record header and the record's words, and stores the head.
    #[inline]
    pub fn pop_small(&mut self, out: &mut [u64]) -> Result<SmallRecord, RingError> {
        // The record's own header tells whether it is there (see "Headers"): the tail's
        // line is not read. Anything unusual goes through `locate`, which checks against
        // the tail. Straight-line: every word is reached through one slice of the mapping.
        let words = self.map.words();
        let start_epoch = (words[EPOCH_START_WORD].load(Ordering::Acquire) >> 32) as u32;
        let Some(epoch) = self.epoch.filter(|&e| e == start_epoch) else {
            return self.pop_small_slow(out);
        };
        let at = AREA_WORD + (self.head & (self.capacity - 1)) as usize / 8;
        let header = words[at].load(Ordering::Acquire);
        if header == 0 {
            return Ok(SmallRecord::None);
        }
        let (len, kind, tag) =
            (header as u32 as usize, (header >> 32) as u16, (header >> 48) as u16);
        let n = round_up_8(len) / 8;
        let area_end = AREA_WORD + self.capacity as usize / 8;
        if tag != epoch as u16
            || kind == lay::KIND_PAD
            || len > max_record_len(self.capacity as usize)
            || at + 1 + n > area_end
        {
            return self.pop_small_slow(out);
        }
        let Some(dst) = out.get_mut(..n) else {
            return Ok(SmallRecord::Larger);
        };
        // One pass that copies each word out and zeroes it behind (the producer writes none
        // of them before it sees the head stored below): a small record is a few words,
        // not worth two loops or unrolled copies.
        let (header_word, body) = words[at..at + 1 + n].split_at(1);
        let mut i = 0;
        while i < n {
            dst[i] = body[i].load(Ordering::Relaxed);
            body[i].store(0, Ordering::Relaxed);
            i += 1;
        }
        header_word[0].store(0, Ordering::Relaxed);
        let record_words = 1 + n;
        self.head = self.head.wrapping_add(8 * record_words as u32);
        words[HEAD_WORD].store(pack(epoch, self.head), Ordering::Release);
        Ok(SmallRecord::Record { kind, len })
    }

    /// Zeroes the area from position `from` to `to` (8-aligned, at most the capacity
    /// apart), wrapping at the end: consumed bytes read as "nothing published".
    fn zero(&self, from: u32, to: u32) {
        let mut at = from;
        while at != to {
            let offset = (at & (self.capacity - 1)) as usize;
            let len = (to.wrapping_sub(at) as usize).min(self.capacity as usize - offset);
            // In bounds: offset + len <= capacity.
            let zeroed = self.map.zero_bytes(lay::DATA_OFFSET + offset, len);
            debug_assert!(zeroed.is_ok(), "zeroing past the ring area");
            at = at.wrapping_add(len as u32);
        }
    }

    /// [`Self::pop_small`] across a new epoch or a padding record.
    #[cold]
    fn pop_small_slow(&mut self, out: &mut [u64]) -> Result<SmallRecord, RingError> {
        let Some(at) = self.locate()? else {
            return Ok(SmallRecord::None);
        };
        let Some(dst) = out.get_mut(..round_up_8(at.len) / 8) else {
            return Ok(SmallRecord::Larger);
        };
        // Validated by `locate`: the record lies inside the mapping.
        let _ = self.map.load_words(at.data_offset, dst);
        self.zero(self.head, at.end);
        self.head = at.end;
        self.store_head();
        Ok(SmallRecord::Record { kind: at.kind, len: at.len })
    }

    /// Consumes the next record, copied out.
    pub fn pop(&mut self) -> Result<Option<Record>, RingError> {
        self.consume(|view| Record { kind: view.kind(), bytes: view.to_vec() })
    }

    /// Consumes the next record without reading it. Returns false when there was none.
    pub fn skip(&mut self) -> Result<bool, RingError> {
        Ok(self.consume(|_| ())?.is_some())
    }

    /// True if the producer may have published something not consumed yet (records or a
    /// new epoch), for polling: a hint from the header at the head and the epoch-start
    /// word (the tail before an epoch is ours), never "no" while something waits, and
    /// "no" after a read found nothing while nothing changed since (see "Trust").
    #[inline(always)]
    pub fn may_have_records(&self) -> bool {
        let maybe = match self.epoch {
            // The header at the head, as `pop_small` reads it: not the tail's line.
            Some(epoch) => {
                let words = self.map.words();
                let at = AREA_WORD + (self.head & (self.capacity - 1)) as usize / 8;
                (words[EPOCH_START_WORD].load(Ordering::Acquire) >> 32) as u32 != epoch
                    || words[at].load(Ordering::Acquire) != 0
            }
            None => self.unread_behind_tail(),
        };
        // A read found no record at this head: unless a word it decided on changed
        // since, it would find none again (see "Trust").
        maybe
            && !matches!(self.no_record_at,
                Some(seen) if seen.head == self.head && seen == self.shared_words())
    }

    /// True if the tail shows something not consumed yet (records or a new epoch).
    fn unread_behind_tail(&self) -> bool {
        let tail = self.map.u64_at(lay::OFF_TAIL).load(Ordering::Acquire);
        match self.epoch {
            Some(epoch) => tail != pack(epoch, self.head),
            None => {
                (tail >> 32) as u32 != 0
                    && self.map.u32_at(lay::OFF_DEST_QPN).load(Ordering::Relaxed) == self.my_qpn
            }
        }
    }

    /// Whether we announced that we poll this ring.
    pub fn is_polling(&self) -> bool {
        self.polling
    }

    /// Announces that we poll this ring (`true`: the producer stops notifying) or no
    /// longer do. After `set_polling(false)`, returns [`Self::may_have_records`] checked
    /// behind a SeqCst fence: true means records may have been pushed without a
    /// notification, so the caller must read the ring (see `wake.rs`, "Polled rings").
    pub fn set_polling(&mut self, polling: bool) -> bool {
        if polling == self.polling {
            return false;
        }
        self.polling = polling;
        let word = if polling { self.my_qpn } else { 0 };
        self.map.u32_at(lay::OFF_POLLED_BY).store(word, Ordering::Relaxed);
        if polling {
            return false;
        }
        fence(Ordering::SeqCst);
        self.unread_behind_tail()
    }

    /// Drops everything published so far (recovery after `Corrupt`). Fails only if the
    /// tail itself is garbage.
    pub fn discard_all(&mut self) -> Result<(), RingError> {
        let Some(tail) = self.sync()? else {
            return Ok(());
        };
        let available = tail.wrapping_sub(self.head);
        if available > self.capacity || available % 8 != 0 {
            return Err(self.corrupt("tail not within capacity after head", u64::from(tail)));
        }
        self.zero(self.head, tail);
        self.head = tail;
        self.store_head();
        Ok(())
    }
}

impl Drop for RingConsumer {
    fn drop(&mut self) {
        // The producer must notify whoever reads the ring next.
        if self.polling {
            let _ = self.map.u32_at(lay::OFF_POLLED_BY).compare_exchange(
                self.my_qpn,
                0,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
    }
}

#[cfg(test)]
impl RingProducer {
    /// Moves a drained ring to `position`, as if 4 GiB of records had gone through, and
    /// starts the epoch after `epoch` there (as [`Self::reset`] to `dest_qpn`, which skips
    /// an epoch whose low 16 bits are zero). Stands in for the consumer's head too, which
    /// had consumed everything up to `position`. The consumer must follow the new epoch
    /// (read the ring) before it is asked for room: its own head is still in the old
    /// positions, which a real producer never leaves behind (a new epoch starts at the
    /// tail).
    fn restart_at(&mut self, epoch: u32, position: u32, dest_qpn: u32) {
        assert!(self.is_drained() && position.is_multiple_of(8), "a drained ring, aligned");
        self.epoch = epoch;
        self.tail = position;
        self.cached_head = position;
        self.map.u64_at(lay::OFF_HEAD).store(pack(epoch, position), Ordering::Release);
        self.reset(dest_qpn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::FabricDir;
    use zerocopy::IntoBytes;

    /// A private fabric directory under /dev/shm, removed on drop.
    struct TestDir(PathBuf);

    impl Drop for TestDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Positions are byte counts that wrap at 2^32 and epochs are 32-bit counters whose
    /// low 16 bits tag each record (never zero): a ring whose positions cross 2^32 — with
    /// padding records at the area's end, a full ring, a room request and its grant
    /// across the wrap — delivers every record once, in order, and a reset to an epoch
    /// whose low 16 bits would be zero (at 0x10000 and at the 32-bit wrap) goes to the next
    /// one, which the consumer follows, skipping the records it had not read.
    #[test]
    fn positions_cross_2_to_the_32_and_epochs_never_tag_records_zero() {
        let dir = TestDir(PathBuf::from(format!(
            "/dev/shm/ferrodat-ring-unit-{}-wrap",
            std::process::id()
        )));
        let gid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1];
        let hca = FabricDir::new(&dir.0).open_hca("hca0", gid).expect("open");
        let me = hca.register_instance().expect("register");
        let (a, b) = (me.alloc_qpn().expect("a").qpn, me.alloc_qpn().expect("b").qpn);
        let mut producer = me.create_ring(a, b, Some(4096)).expect("ring");
        let mut consumer = hca.open_ring(a, b).expect("consumer");
        producer.reset(b);
        assert_eq!(consumer.pop(), Ok(None));
        // Starting 1000 to 3000 bytes short of 2^32 (not a multiple of the capacity:
        // padding on the way; and one of the starts has the ring fill up just before 2^32,
        // to be granted room just after it), in epochs just before 0x10000 and 2^32.
        let runs = (0..32u32).flat_map(|j| {
            let position = u32::MAX - 999 - 64 * j;
            [(0xfffe, 0xffff, 0x1_0001, position), (u32::MAX - 1, u32::MAX, 1, position)]
        });
        for (epoch, first_epoch, next_epoch, position) in runs {
            producer.restart_at(epoch, position, b);
            assert_eq!(producer.epoch(), first_epoch);
            // The consumer follows to the new epoch's start (the helper's jump in positions
            // is not a real producer's: its head would be left in the old positions).
            assert_eq!(consumer.pop(), Ok(None));
            assert_eq!((consumer.epoch(), consumer.head), (Some(first_epoch), position));
            // Records of 1..=300 bytes, several laps of the 4096-byte area, across 2^32.
            let mut pushed = std::collections::VecDeque::new();
            let mut n = 0usize;
            let mut passed_wrap = false;
            while n < 200 {
                let len = 1 + (n * 37) % 300;
                let bytes: Vec<u8> = (0..len).map(|i| (n + i) as u8).collect();
                match producer.try_push(1 + (n % 7) as u16, &bytes, &[]) {
                    Ok(()) => {
                        pushed.push_back((1 + (n % 7) as u16, bytes));
                        n += 1;
                    }
                    Err(PushError::Full { .. }) => {
                        // The producer asked for room: not granted before the consumer
                        // read anything, granted once it read everything (the head then
                        // is past the position asked for, wrapped or not).
                        assert!(!consumer.take_room_request(), "{n}: granted with no room");
                        // By turns through the header-only path and the general one.
                        while let Some((kind, bytes)) = pushed.pop_front() {
                            if pushed.len() % 2 == 0 {
                                let mut words = [0u64; 40];
                                let len = bytes.len();
                                let small = consumer.pop_small(&mut words);
                                assert_eq!(small, Ok(SmallRecord::Record { kind, len }), "{n}");
                                assert_eq!(words.as_bytes()[..len], bytes[..], "record {n}");
                            } else {
                                let record = consumer.pop().expect("ok").expect("a record");
                                assert_eq!((record.kind, record.bytes), (kind, bytes), "{n}");
                            }
                        }
                        let granted = consumer.take_room_request();
                        assert!(granted, "epoch {first_epoch:#x}, record {n}: room granted");
                        assert!(producer.is_drained());
                    }
                    Err(e) => panic!("record {n}: {e}"),
                }
                passed_wrap |= producer.tail < position;
            }
            assert!(passed_wrap, "the positions crossed 2^32");
            assert_eq!(consumer.epoch(), Some(first_epoch));
            // Two records left unread, then a reset: the next epoch skips the one whose low
            // 16 bits are zero, and the consumer follows it, skipping the unread records.
            assert!(!pushed.is_empty(), "records left unread");
            producer.reset(b);
            assert_eq!(producer.epoch(), next_epoch);
            assert_ne!(producer.epoch() as u16, 0);
            producer.try_push(9, b"in the next epoch", &[]).expect("room");
            let record = consumer.pop().expect("ok").expect("the new epoch's record");
            assert_eq!((record.kind, &record.bytes[..]), (9, &b"in the next epoch"[..]));
            assert_eq!(consumer.epoch(), Some(next_epoch));
            assert_eq!(consumer.pop(), Ok(None));
            assert!(producer.is_drained(), "the skipped records' bytes are free again");
        }
    }
}
