//! The two-copy pipeline: the least work a software HCA that moves bulk data through
//! shared memory does, as a bandwidth baseline measured in the same run as softhca's RDMA
//! WRITE stream (`ferrodat perf`).
//!
//! One process copies a message, segment by segment, from its own buffer into a ring in a
//! shared file; the other copies each segment out into its own buffer and zeroes the ring
//! bytes behind it; the positions are two words on lines of their own. The ring and the
//! segments have softhca's sizes (a QP's ring, a packet's payload), and the consumer
//! zeroes what it consumed as softhca's ring does (measured faster here than leaving the
//! bytes: the producer then takes each line from the consumer's cache). No headers, keys,
//! packets or completions: softhca's RDMA WRITE row over this one is what its semantics
//! cost, and this one over single-core memcpy is what two copies across two cores cost on
//! this machine. A single copy between two processes' private memory needs the kernel
//! (`process_vm_writev`), which the README measures slower here still.

use super::floor::{SPINS_PER_CLOCK_READ, stalled};
use super::shared_file::{self, Role};
use ferrodat_softhca::fabric::SharedMapping;
use ferrodat_softhca::hca::engine::RING_BYTES;
use ferrodat_softhca::hca::wire::SEGMENT_BYTES;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bytes published by the producer, on its own line.
const TAIL_WORD: usize = 0;
/// Bytes consumed, on its own line.
const HEAD_WORD: usize = 16;
/// The producer's "no more" and the message size, on a line the consumer only reads.
const STOP_WORD: usize = 32;
const MESSAGE_WORD: usize = 33;
/// Where the ring's bytes start.
const DATA_OFFSET: usize = 48 * 8;
/// The size of the shared file.
const FILE_BYTES: usize = DATA_OFFSET + RING_BYTES;
/// The largest message (each side holds one buffer of this size).
pub const MAX_MESSAGE: usize = 16 << 20;
const _: () = assert!(RING_BYTES.is_multiple_of(SEGMENT_BYTES) && RING_BYTES >= 2 * SEGMENT_BYTES);

/// One end of the pipeline.
pub struct Pipeline {
    map: SharedMapping,
}

impl Pipeline {
    /// The producer's end: maps (creating) `path` for messages of `message` bytes, which
    /// the consumer then reads from the file.
    pub fn create(path: &Path, message: usize) -> Result<Pipeline, String> {
        if message == 0 || message > MAX_MESSAGE {
            return Err(format!(
                "pipeline: a message of {message} bytes; give 1 to {MAX_MESSAGE} bytes"
            ));
        }
        let pipeline = Pipeline::map(path, Role::Create)?;
        pipeline.words()[MESSAGE_WORD].store(message as u64, Ordering::Release);
        Ok(pipeline)
    }

    /// The consumer's end: maps the producer's file.
    pub fn open(path: &Path) -> Result<Pipeline, String> {
        Pipeline::map(path, Role::Join)
    }

    fn map(path: &Path, role: Role) -> Result<Pipeline, String> {
        let map = shared_file::map(path, FILE_BYTES, role)
            .map_err(|e| format!("cannot map the pipeline's ring {}: {e}", path.display()))?;
        Ok(Pipeline { map })
    }

    fn words(&self) -> &[AtomicU64] {
        self.map.words()
    }

    /// The size of the messages, as the producer set it.
    pub fn message_bytes(&self) -> Result<usize, String> {
        let message = self.words()[MESSAGE_WORD].load(Ordering::Acquire) as usize;
        if message == 0 || message > MAX_MESSAGE {
            return Err(format!("pipeline: the producer set a message size of {message} bytes"));
        }
        Ok(message)
    }

    /// Waits until `done(head)` on the consumer's position; an error after `stall`
    /// without it moving there.
    fn wait_for_head(&self, stall: Duration, done: impl Fn(u64) -> bool) -> Result<u64, String> {
        let mut spins = 0u32;
        let mut since = None;
        loop {
            let head = self.words()[HEAD_WORD].load(Ordering::Acquire);
            if done(head) {
                return Ok(head);
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(SPINS_PER_CLOCK_READ) {
                stalled(&mut since, stall, head).map_err(|e| {
                    format!(
                        "pipeline: the consumer took nothing for {:.1} s (after {} bytes): it \
                         died or stopped",
                        e.waited.as_secs_f64(),
                        e.round_trips
                    )
                })?;
            }
            std::hint::spin_loop();
        }
    }

    /// The producer: copies `source` (one message) into the ring segment by segment, over
    /// and over, while `more(messages so far)`; then waits until the consumer has taken
    /// everything. Returns the messages sent and the time from the first copy to the last
    /// byte consumed.
    pub fn stream_while(
        &self,
        source: &[u8],
        stall: Duration,
        mut more: impl FnMut(u64) -> bool,
    ) -> Result<(u64, Duration), String> {
        let message = self.message_bytes()?;
        if source.len() != message {
            return Err(format!(
                "pipeline: a source of {} bytes for messages of {message}",
                source.len()
            ));
        }
        let w = self.words();
        let mut tail = w[TAIL_WORD].load(Ordering::Relaxed);
        let mut head = w[HEAD_WORD].load(Ordering::Acquire);
        let mut messages = 0u64;
        let start = Instant::now();
        while more(messages) {
            for chunk in source.chunks(SEGMENT_BYTES) {
                if tail - head + chunk.len() as u64 > RING_BYTES as u64 {
                    let room = RING_BYTES as u64 - chunk.len() as u64;
                    head = self.wait_for_head(stall, |h| tail - h <= room)?;
                }
                // A segment that reaches the ring's end goes on at its start.
                let ring_at = (tail % RING_BYTES as u64) as usize;
                let (first, rest) = chunk.split_at(chunk.len().min(RING_BYTES - ring_at));
                let copied = self.map.copy_in(DATA_OFFSET + ring_at, first);
                copied
                    .and_then(|()| self.map.copy_in(DATA_OFFSET, rest))
                    .map_err(|e| format!("pipeline: {e}"))?;
                tail += chunk.len() as u64;
                w[TAIL_WORD].store(tail, Ordering::Release);
            }
            messages += 1;
        }
        self.wait_for_head(stall, |h| h == tail)?;
        Ok((messages, start.elapsed()))
    }

    /// The producer tells the consumer to return once it has taken everything.
    pub fn stop(&self) {
        self.words()[STOP_WORD].store(1, Ordering::Release);
    }

    /// The consumer: copies every segment into `dest` (one message's buffer, filled front
    /// to back and over again) and zeroes it in the ring, until the producer stops.
    /// Returns the bytes taken.
    pub fn drain(&self, dest: &mut [u8]) -> Result<u64, String> {
        let w = self.words();
        let mut head = w[HEAD_WORD].load(Ordering::Relaxed);
        let mut at_dest = 0usize;
        loop {
            let tail = w[TAIL_WORD].load(Ordering::Acquire);
            if tail == head {
                if w[STOP_WORD].load(Ordering::Acquire) != 0
                    && w[TAIL_WORD].load(Ordering::Acquire) == head
                {
                    return Ok(head);
                }
                std::hint::spin_loop();
                continue;
            }
            if tail < head || tail - head > RING_BYTES as u64 {
                return Err(format!(
                    "pipeline: the producer published position {tail} with {head} consumed \
                     (the ring holds {RING_BYTES} bytes)"
                ));
            }
            while head < tail {
                let ring_at = (head % RING_BYTES as u64) as usize;
                let n = ((tail - head) as usize)
                    .min(RING_BYTES - ring_at)
                    .min(SEGMENT_BYTES)
                    .min(dest.len() - at_dest);
                let out = &mut dest[at_dest..at_dest + n];
                self.map
                    .copy_out(DATA_OFFSET + ring_at, out)
                    .map_err(|e| format!("pipeline: {e}"))?;
                self.map
                    .zero_bytes(DATA_OFFSET + ring_at, n)
                    .map_err(|e| format!("pipeline: {e}"))?;
                at_dest = (at_dest + n) % dest.len();
                head += n as u64;
                w[HEAD_WORD].store(head, Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(name: &str) -> std::path::PathBuf {
        shared_file::test_path("pipeline", name)
    }

    #[test]
    fn every_byte_arrives_in_order_across_ring_wraps() {
        // A message that is not a whole number of segments, so segments straddle the
        // ring's end; its bytes all differ from their neighbours'.
        let path = path("bytes");
        let message = 3 * SEGMENT_BYTES + 4096 + 8;
        let source: Vec<u8> = (0..message).map(|i| (i * 7 + i / 251) as u8).collect();
        let producer = Pipeline::create(&path, message).unwrap();
        let consumer = Pipeline::open(&path).unwrap();
        assert_eq!(consumer.message_bytes().unwrap(), message);
        let taker = std::thread::spawn(move || {
            let mut dest = vec![0u8; consumer.message_bytes().unwrap()];
            let taken = consumer.drain(&mut dest).unwrap();
            (taken, dest)
        });
        let (messages, _) =
            producer.stream_while(&source, Duration::from_secs(30), |n| n < 5).unwrap();
        producer.stop();
        let (taken, dest) = taker.join().unwrap();
        assert_eq!(messages, 5);
        assert_eq!(taken, 5 * message as u64);
        assert!(dest == source, "the last message's bytes differ from the source");
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn with_no_consumer_the_producer_gives_up_after_the_stall_timeout() {
        let path = path("alone");
        let producer = Pipeline::create(&path, 1 << 20).unwrap();
        let err = producer
            .stream_while(&vec![1u8; 1 << 20], Duration::from_millis(50), |n| n < 3)
            .unwrap_err();
        assert!(err.contains("died or stopped"), "{err}");
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_producer_position_past_the_ring_is_an_error() {
        let path = path("corrupt");
        let producer = Pipeline::create(&path, 1 << 20).unwrap();
        let consumer = Pipeline::open(&path).unwrap();
        producer.words()[TAIL_WORD].store(RING_BYTES as u64 + 8, Ordering::Release);
        let err = consumer.drain(&mut [0u8; 64]).unwrap_err();
        assert!(err.contains("published position"), "{err}");
        for bad in [0, MAX_MESSAGE + 1] {
            let err = Pipeline::create(&path, bad).err().unwrap();
            assert!(err.contains(&bad.to_string()), "{err}");
        }
        let _ = std::fs::remove_file(path);
    }
}
