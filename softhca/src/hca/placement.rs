//! One-sided placement: an RDMA WRITE copied by the requester straight into the target's
//! registered memory, or an RDMA READ copied straight out of it, when the target exported
//! it (`fabric/memory_export.rs`), instead of through the ring and the responder's copy.
//!
//! The requester places a WRITE or READ when all of these hold, and otherwise sends it
//! through the ring as before (the responder then checks it and answers as usual, errors
//! included):
//! - it is a plain RDMA WRITE, or an RDMA READ, of at least [`PLACE_MIN_BYTES`] (a WRITE
//!   with immediate data would consume a receive, and the responder may have to refuse it
//!   with RNR before any data lands);
//! - every earlier request of the QP is acknowledged or was placed itself: what the
//!   responder does for an earlier request (a receive's CQE, a WRITE's data) happens
//!   before the WRITE's data appears or the READ's is taken, as on hardware, where
//!   requests are executed in order;
//! - the peer QP, by the facts its ring publishes ([`QpFacts`]), is in RTR, RTS or SQD and
//!   grants REMOTE_WRITE (a WRITE) or REMOTE_READ (a READ), in the PD of the region
//!   (checked at the request's start, as the responder checks a message at its first
//!   packet; later chunks need only a QP that still takes requests);
//! - the key names an exported region that grants the same right, and the request's
//!   whole range lies in it.
//!
//! The requester copies the data while it holds the region's user slot (DEREG_MR waits for
//! it) and its placement gate is open (the peer QP's MODIFY_QP or DESTROY_QP that takes
//! placement away waits for it: the facts are read after the gate opened), at most
//! [`PLACE_CHUNK_BYTES`] per pass, and pushes the request's header with [`flag::PLACED`]
//! (no payload) together with the last chunk. The responder answers the header as it
//! would the whole request, without its data: an ACK for a WRITE, an empty last READ
//! response for a READ; the requester's completion waits for that answer, as for any
//! request, so it comes in order and after the responder took the request in sequence. A
//! requester checks every [`PEER_CHECK_INTERVAL`] that the peer's process still exists.
//! Should the region or the peer QP go away between two chunks, the request fails with a
//! remote access error, part of its data copied, as one whose target vanishes in flight
//! does on hardware.
//!
//! [`flag::PLACED`]: super::wire::flag::PLACED

use std::collections::HashMap;

use crate::fabric::{ImportedMemory, Registry};
use ferrodat_abi::uverbs::{access, qp_state};
use std::time::Duration;

/// The smallest WRITE or READ placed (measured for WRITEs). A smaller one travels with its header in a ring record or
/// two and the responder's copy of it is cheap, while placing it adds a cache line that
/// crosses to the peer, a lookup and a slot claim, and leaves the header for the responder
/// to handle all the same: the 8-byte WRITE ping-pong of `ferrodat perf` took 305-409 ns
/// placed against 283-343 ns through the ring (driver level, alternated runs, vCPUs
/// sharing caches). From a page up the saved copy wins: 1 MiB WRITE streams ran at
/// 43-45 GB/s placed against 19-21 GB/s.
pub const PLACE_MIN_BYTES: u64 = 4096;

/// The most a requester places in one go: a larger request is placed a chunk per pass, its
/// header pushed with the last one, so that no copy holds the engine's lock (and the
/// peer's DEREG_MR or MODIFY_QP, which wait for a placement in progress) for long: 1 MiB
/// takes some 25 us here.
pub const PLACE_CHUNK_BYTES: u64 = 1 << 20;

/// How often a placing requester checks that its peer's process still exists (a dead
/// peer's memory, a file others may map, takes placements for at most this long), and
/// unmaps regions withdrawn meanwhile.
pub const PEER_CHECK_INTERVAL: Duration = Duration::from_millis(10);

/// What one call of the requester's placement came to.
pub(crate) enum Placing {
    /// The last chunk placed and the header sent.
    Done,
    /// A chunk placed; more at the next pass.
    More,
    /// Nothing placed now, try again at the next pass: the ring has no room for the
    /// header, or (part-way through a request) every user slot of the region is taken.
    Retry,
    /// The conditions do not hold (no export, the peer QP's facts, the range, or at the
    /// start every user slot taken): nothing placed.
    Refused,
    /// The region was withdrawn: nothing placed.
    Withdrawn,
    /// The copy failed (the backing file was truncated under it): data may be lost.
    Failed,
}

/// What a QP publishes about itself in its ring's header for its peer's requester: its
/// state, the remote rights it grants and its PD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpFacts {
    /// `qp_state::*`.
    pub state: u8,
    /// `access::REMOTE_*` flags the QP grants.
    pub remote_access: u32,
    /// The low 16 bits of the QP's ring epoch, which every RTR (a new connection) changes:
    /// a requester places only into the connection it started placing into.
    pub epoch: u16,
    /// The QP's PD number (24 bits).
    pub pdn: u32,
}

impl QpFacts {
    /// The word stored in the ring header.
    pub fn encode(&self) -> u64 {
        let rights = self.remote_access
            & (access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC);
        u64::from(self.state)
            | u64::from(rights) << 8
            | u64::from(self.epoch) << 16
            | u64::from(self.pdn) << 32
    }

    /// Whether a QP with these facts takes requests (a placed request's later chunks need
    /// no more: rights count at a message's start).
    pub fn takes_requests(&self) -> bool {
        matches!(self.state, qp_state::RTR | qp_state::RTS | qp_state::SQD)
    }

    /// Whether a peer may start placing a request that needs `right` (REMOTE_WRITE for a
    /// WRITE, REMOTE_READ for a READ) through a QP with these facts.
    pub fn grants(&self, right: u32) -> bool {
        self.takes_requests() && self.remote_access & right != 0
    }

    /// Whether a peer placement these facts allowed could be one that `after` forbids, so
    /// that changing to `after` must wait for a placement in progress. A placement starts
    /// only on a right these facts grant (REMOTE_WRITE or REMOTE_READ), but its later
    /// chunks need no more than a QP that takes requests: so the change waits if it takes
    /// a right away, or if these facts take requests and `after` does not, or names
    /// another connection or PD. A change that takes nothing away (connecting, RTR to RTS,
    /// the same rights again) waits for nothing; leaving RTR, RTS or SQD always waits, with
    /// rights or without (they may have been dropped while a request was part-way placed).
    pub fn takes_placement_away(&self, after: &QpFacts) -> bool {
        let lost = |right| self.grants(right) && !after.grants(right);
        lost(access::REMOTE_WRITE)
            || lost(access::REMOTE_READ)
            || (self.takes_requests()
                && (!after.takes_requests() || self.epoch != after.epoch || self.pdn != after.pdn))
    }

    /// The facts in a word read from a peer's ring header.
    pub fn decode(word: u64) -> QpFacts {
        QpFacts {
            state: word as u8,
            remote_access: (word >> 8) as u8 as u32,
            epoch: (word >> 16) as u16,
            pdn: (word >> 32) as u32,
        }
    }
}

/// At most this many peer regions stay opened; past it the cache starts over.
const MAX_IMPORTS: usize = 256;

/// The peer regions a process's requesters opened, by (peer registry, key), with the
/// process they were opened for; `None` remembers a key that is not exported or could not
/// be opened (keys are exported before REG_MR returns them, so a key found unexported
/// never becomes exported).
#[derive(Default)]
pub struct Imports {
    regions: HashMap<(u64, u32), (u32, Option<ImportedMemory>)>,
    /// WRITEs placed so far (for tests and benchmarks).
    pub placed_writes: u64,
    /// READs placed so far.
    pub placed_reads: u64,
}

impl std::fmt::Debug for Imports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Imports")
            .field("regions", &self.regions.len())
            .field("placed_writes", &self.placed_writes)
            .field("placed_reads", &self.placed_reads)
            .finish()
    }
}

impl Imports {
    /// The region with key `key` exported in `registry`'s HCA by process `exporter` (the
    /// owner of the peer QP), opened on first use.
    pub fn get(&mut self, registry: &Registry, key: u32, exporter: u32) -> Option<&ImportedMemory> {
        let id = (registry.uid(), key);
        let stale = self.regions.get(&id).is_some_and(|(pid, _)| *pid != exporter);
        if stale || !self.regions.contains_key(&id) {
            self.prune();
            if self.regions.len() >= MAX_IMPORTS {
                // Regions in use are open again at their next placement.
                self.regions.clear();
            }
            // An export that cannot be opened (absent: private memory; or another user's,
            // malformed, a descriptor limit reached) is remembered as such for this
            // exporter: its WRITEs and READs take the ring, without a file system look
            // each time.
            let opened = ImportedMemory::open(registry, key, exporter).ok().flatten();
            self.regions.insert(id, (exporter, opened));
        }
        self.regions.get(&id).and_then(|(_, r)| r.as_ref())
    }

    /// Unmaps the regions withdrawn since they were opened (their memory would otherwise
    /// stay alive here), and, with the cache full, forgets the keys found unexported.
    pub fn prune(&mut self) {
        self.regions.retain(|_, (_, r)| r.as_ref().is_none_or(ImportedMemory::is_live));
        if self.regions.len() >= MAX_IMPORTS {
            self.regions.retain(|_, (_, r)| r.is_some());
        }
    }

    /// Forgets the region with key `key` in the HCA whose registry has uid `registry_uid`
    /// (it was withdrawn).
    pub fn forget(&mut self, registry_uid: u64, key: u32) {
        self.regions.remove(&(registry_uid, key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qp_facts_round_trip_and_keep_only_remote_rights() {
        let facts = QpFacts {
            state: 3,
            remote_access: access::REMOTE_WRITE | access::REMOTE_ATOMIC,
            epoch: 0xfeed,
            pdn: 0xab_cdef,
        };
        assert_eq!(QpFacts::decode(facts.encode()), facts);
        let with_local =
            QpFacts { remote_access: facts.remote_access | access::LOCAL_WRITE, ..facts };
        assert_eq!(QpFacts::decode(with_local.encode()), facts);
        assert_eq!(QpFacts::decode(0), QpFacts { state: 0, remote_access: 0, epoch: 0, pdn: 0 });
    }
}
