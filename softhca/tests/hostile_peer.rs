//! Hostile peers on the shared-memory fabric: deterministic fuzzing of everything softhca
//! reads from files another process writes.
//!
//! A peer process can write anything into its outbound ring (records, the header words,
//! the tail, epoch and head words) and into the HCA's registry file. What these tests
//! guarantee, for a few thousand fixed-seed random and mutated-valid inputs each:
//!
//! - **Ring consumer** ([`RingConsumer`] on a ring file the test scribbles into): every
//!   call returns, quickly, with a record inside the ring's limits, "nothing", or
//!   [`RingError::Corrupt`] naming the producing QP — never a panic; a ring file with a
//!   mangled header is refused at open with a reason; and another ring of the same
//!   process keeps delivering every record, in order.
//! - **HCA** (a real softhca QP connected to a fake peer that pushes crafted packets
//!   through the real fabric): the QP answers, drops, or moves to ERR; it writes only
//!   into memory it registered for that; every completion it reports is well formed;
//!   and a healthy QP pair of the same engine still passes data afterwards.
//! - **Registry** (the `.hca` file scribbled while an engine uses it): lookups, notifies,
//!   sweeps and allocation never panic, and the live QPs of the engine keep working.
//!
//! A hang counts as a failure: each test runs under a watchdog that aborts the process,
//! naming the case, if it does not finish in time. Failures print the seed and case
//! number, so `HOSTILE_SEED=<seed>` reproduces one.

mod support;

use ferrodat_abi::mlx5::{cqe_opcode, opcode};
use ferrodat_abi::uverbs::qp_state;
use ferrodat_softhca::fabric::layout::{registry as reg_layout, ring as ring_layout};
use ferrodat_softhca::fabric::{FabricError, RingConsumer, RingError, SmallRecord};
use ferrodat_softhca::hca::app_memory::AppSpan;
use ferrodat_softhca::hca::engine::Engine;
use ferrodat_softhca::hca::mr::MemoryRegion;
use ferrodat_softhca::hca::wire::{self, COMPACT_RECORD, CompactHeader, PacketHeader, flag, kind};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::fuzz_rng::Rng;
use support::*;
use zerocopy::IntoBytes;

// ============================================================================ helpers

/// Aborts the whole test process, naming the case being run, if the test has not
/// finished within `limit`: a hang is reported as a failure instead of stalling the run.
struct Watchdog {
    done: std::sync::mpsc::Sender<()>,
    case: Arc<AtomicU64>,
}

impl Watchdog {
    fn new(test: &'static str, limit: Duration) -> Watchdog {
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let case = Arc::new(AtomicU64::new(0));
        let seen = case.clone();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(limit) {
                eprintln!(
                    "{test}: no progress within {limit:?}, stuck in case {}: a hang",
                    seen.load(Ordering::Relaxed)
                );
                std::process::abort();
            }
        });
        Watchdog { done, case }
    }

    fn case(&self, n: u64) {
        self.case.store(n, Ordering::Relaxed);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let _ = self.done.send(());
    }
}

fn open_rw(path: &Path) -> File {
    OpenOptions::new().read(true).write(true).open(path).expect("open a shared file to scribble")
}

fn read_u64(file: &File, offset: usize) -> u64 {
    let mut word = [0; 8];
    file.read_exact_at(&mut word, offset as u64).expect("read a shared word");
    u64::from_ne_bytes(word)
}

fn write_at(file: &File, offset: usize, bytes: &[u8]) {
    file.write_all_at(bytes, offset as u64).expect("scribble into a shared file");
}

/// The largest record (header + payload) a ring of `capacity` bytes carries.
fn max_record(capacity: usize) -> usize {
    capacity / 2 - ring_layout::RECORD_HEADER_BYTES
}

/// A [`RingError`] as a hostile producer must cause it: `Corrupt`, naming the producer,
/// with a message that says what to do.
fn assert_clear_corrupt(e: &RingError, src_qpn: u32, case: u64) {
    match e {
        RingError::Corrupt { src_qpn: got, .. } => assert_eq!(*got, src_qpn, "case {case}"),
        other => panic!("case {case}: a ring read failed with {other:?}, not Corrupt"),
    }
    let text = e.to_string();
    assert!(
        text.contains(&format!("{src_qpn:#x}")) && text.contains("protocol error"),
        "case {case}: unclear error: {text}"
    );
}

// ============================================================================ ring

/// Random and plausible-but-wrong values in every word of a ring file the consumer reads
/// (tail, epoch start, head, destination, polling word, record headers and payload), mixed
/// with valid records and producer resets; the consumer is driven through every read
/// call. A second ring of the same process carries a numbered record per case and must
/// deliver all of them in order.
#[test]
fn a_ring_consumer_survives_whatever_its_producer_writes() {
    const CASES: u64 = 6000;
    const CAPACITY: usize = 4096;
    let watchdog = Watchdog::new("ring fuzz", Duration::from_secs(120));
    let mut rng = Rng::seeded(0x5eed_0001);
    let fabric = TestFabric::new("hostile-ring");
    let hca = fabric.dir.open_hca("hca0", LOCALHOST_GID).expect("open the HCA");
    let me = hca.register_instance().expect("join");
    let qpn = || me.alloc_qpn().expect("QPN").qpn;
    let (evil, victim_qpn, good, bystander_qpn) = (qpn(), qpn(), qpn(), qpn());
    let mut producer = me.create_ring(evil, victim_qpn, Some(CAPACITY)).expect("ring");
    let mut victim = hca.open_ring(evil, victim_qpn).expect("consumer");
    let mut honest = me.create_ring(good, bystander_qpn, Some(CAPACITY)).expect("ring");
    let mut bystander = hca.open_ring(good, bystander_qpn).expect("consumer");
    let file = open_rw(producer.path());
    let data = ring_layout::DATA_OFFSET;
    let (mut sent, mut delivered) = (0u64, 0u64);
    let (mut records, mut errors, mut larger) = (0u64, 0u64, 0u64);
    let mut slowest = Duration::ZERO;

    for case in 0..CASES {
        watchdog.case(case);
        // The hostile side: valid pushes, resets, and scribbles.
        for _ in 0..1 + rng.below(3) {
            match rng.below(10) {
                0..=3 => {
                    let len = match rng.below(4) {
                        0 => rng.below(16) as usize,
                        1 => max_record(CAPACITY) - rng.below(16) as usize,
                        _ => rng.below(max_record(CAPACITY) as u64 + 1) as usize,
                    };
                    let record_kind = rng.below(0xffff) as u16;
                    let _ = producer.try_push(record_kind, &rng.bytes(len), &[]);
                }
                4 => {
                    let dest = if rng.chance(80) { victim_qpn } else { rng.next() as u32 };
                    producer.reset(dest);
                }
                _ => {
                    let tail = read_u64(&file, ring_layout::OFF_TAIL);
                    let head = read_u64(&file, ring_layout::OFF_HEAD);
                    let epoch = tail >> 32;
                    let near = |rng: &mut Rng, base: u64| {
                        (epoch << 32) | (base as u32).wrapping_add(8 * rng.below(600) as u32) as u64
                    };
                    let value = match rng.below(5) {
                        0 => rng.next(),
                        1 => rng.below(2 * CAPACITY as u64),
                        2 => near(&mut rng, head),
                        3 => near(&mut rng, tail) ^ rng.below(8),
                        // A record header with this epoch's tag and any length and kind.
                        _ => {
                            (epoch & 0xffff) << 48
                                | (rng.below(0x1_0000)) << 32
                                | rng.below(3 * CAPACITY as u64)
                        }
                    };
                    let header_at = |pos: u64| data + (pos as usize & (CAPACITY - 1)) / 8 * 8;
                    let (offset, width) = match rng.below(9) {
                        8 => (ring_layout::OFF_ROOM_WANTED, 8),
                        0 => (ring_layout::OFF_TAIL, 8),
                        1 => (ring_layout::OFF_EPOCH_START, 8),
                        2 => (ring_layout::OFF_HEAD, 8),
                        3 => (ring_layout::OFF_DEST_QPN, 4),
                        4 => (ring_layout::OFF_POLLED_BY, 4),
                        5 => (header_at(head), 8),
                        6 => (header_at(tail.wrapping_sub(8 * rng.below(8))), 8),
                        _ => (data + rng.below(CAPACITY as u64 / 8) as usize * 8, 8),
                    };
                    write_at(&file, offset, &value.to_ne_bytes()[..width]);
                }
            }
        }
        // The victim: one of its read calls, a few times.
        for _ in 0..1 + rng.below(4) {
            let started = Instant::now();
            let outcome: Result<(), RingError> = match rng.below(9) {
                0 | 1 => {
                    let mut out = vec![0u64; rng.below(300) as usize];
                    let found = victim.pop_small(&mut out);
                    if let Ok(SmallRecord::None) = found {
                        // Nothing was written since a second look found nothing either
                        // (the first may have moved the head): the polling hint must say
                        // so too, or a poller would spin on this ring.
                        let again = victim.pop_small(&mut out);
                        if let Ok(SmallRecord::None) = again {
                            assert!(!victim.may_have_records(), "case {case}: a hint for nothing");
                        }
                    }
                    found.map(|found| match found {
                        SmallRecord::Record { kind, len } => {
                            assert!(len <= 8 * out.len() && len <= max_record(CAPACITY));
                            assert_ne!(kind, ring_layout::KIND_PAD, "case {case}: padding");
                            records += 1;
                        }
                        SmallRecord::Larger => larger += 1,
                        SmallRecord::None => {}
                    })
                }
                2 => victim.pop().map(|found| {
                    if let Some(record) = found {
                        assert!(record.bytes.len() <= max_record(CAPACITY), "case {case}");
                        assert_ne!(record.kind, ring_layout::KIND_PAD, "case {case}: padding");
                        records += 1;
                    }
                }),
                3 | 4 => {
                    let (offset, len) = (rng.below(2100) as usize, rng.below(2100) as usize);
                    let consume = rng.chance(50);
                    let check = |view: &ferrodat_softhca::fabric::RecordView<'_>| {
                        let mut buf = vec![0u8; len];
                        let inside = offset + len <= view.len();
                        assert_eq!(view.read(offset, &mut buf).is_ok(), inside);
                        // SAFETY: `buf` is writable for `len` bytes.
                        let raw = unsafe { view.copy_out_raw(offset, buf.as_mut_ptr(), len) };
                        assert_eq!(raw.is_ok(), inside);
                        assert!(view.len() <= max_record(CAPACITY));
                    };
                    let found = if consume { victim.consume(check) } else { victim.peek(check) };
                    found.map(|f| records += u64::from(f.is_some() && consume))
                }
                5 => victim.skip().map(|_| ()),
                6 => {
                    let _ = victim.may_have_records();
                    let _ = victim.set_polling(rng.chance(50));
                    // A request for room, garbage or not, is at most a wake for the peer.
                    let _ = victim.take_room_request();
                    Ok(())
                }
                _ => victim.discard_all(),
            };
            slowest = slowest.max(started.elapsed());
            if let Err(e) = outcome {
                assert_clear_corrupt(&e, evil, case);
                errors += 1;
                if rng.chance(50) {
                    let _ = victim.discard_all();
                }
            }
        }
        // The bystander ring: one numbered record per case, all delivered in order.
        if honest
            .try_push(
                1,
                &sent.to_ne_bytes(),
                &[&{
                    let n = rng.below(64) as usize;
                    rng.bytes(n)
                }],
            )
            .is_ok()
        {
            sent += 1;
        }
        while let Some(record) = bystander.pop().expect("an honest ring never reads as corrupt") {
            let n = u64::from_ne_bytes(record.bytes[..8].try_into().expect("8 bytes"));
            assert_eq!(n, delivered, "case {case}: the bystander ring lost or reordered");
            delivered += 1;
        }
    }
    assert_eq!((sent, delivered), (CASES, CASES), "every bystander record delivered");
    eprintln!(
        "{CASES} cases: {records} records read, {larger} larger than the buffer, {errors} \
         Corrupt errors, {} resyncs; slowest call {slowest:?}",
        victim.resyncs()
    );
    assert!(records > 100 && errors > 100, "the fuzz reached both valid and corrupt states");
    assert!(slowest < Duration::from_secs(1), "a single call took {slowest:?}");
}

/// Ring files with mangled headers (random bytes over the first line, odd sizes) are
/// either refused at open with a reason naming the file, or open to a consumer that
/// reads nothing from them without panicking.
#[test]
fn ring_files_with_mangled_headers_are_refused_at_open_with_a_reason() {
    const CASES: u64 = 3000;
    let watchdog = Watchdog::new("ring header fuzz", Duration::from_secs(120));
    let mut rng = Rng::seeded(0x5eed_0002);
    let fabric = TestFabric::new("hostile-ring-header");
    let hca = fabric.dir.open_hca("hca0", LOCALHOST_GID).expect("open the HCA");
    let me = hca.register_instance().expect("join");
    let (src, dst) = (me.alloc_qpn().expect("QPN").qpn, me.alloc_qpn().expect("QPN").qpn);
    let template = {
        let mut producer = me.create_ring(src, dst, Some(4096)).expect("ring");
        producer.try_push(7, b"a valid record", &[]).expect("push");
        std::fs::read(producer.path()).expect("read the ring file")
    };
    let path = hca.ring_path(src);
    let (mut refused, mut opened) = (0, 0);
    for case in 0..CASES {
        watchdog.case(case);
        let mut bytes = template.clone();
        match rng.below(4) {
            0 => bytes[..64].copy_from_slice(&rng.bytes(64)),
            1 => {
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(64) as usize;
                    bytes[at] = rng.next() as u8;
                }
            }
            2 => bytes.truncate(rng.below(template.len() as u64 + 1) as usize),
            _ => {
                // A plausible capacity the file is too short for, or a huge one.
                let capacity = rng.pick(&[4096u64, 8192, 1 << 20, 1 << 30, 1 << 31, u64::MAX]);
                bytes[ring_layout::OFF_CAPACITY..][..8].copy_from_slice(&capacity.to_ne_bytes());
            }
        }
        std::fs::write(&path, &bytes).expect("write the mangled ring file");
        match hca.open_ring(src, dst) {
            Ok(mut consumer) => {
                opened += 1;
                for _ in 0..4 {
                    match consumer.pop() {
                        Ok(Some(record)) => assert!(record.bytes.len() <= max_record(4096)),
                        Ok(None) => break,
                        Err(e) => {
                            assert_clear_corrupt(&e, src, case);
                            break;
                        }
                    }
                }
            }
            Err(e) => {
                refused += 1;
                assert!(
                    matches!(e, FabricError::BadFile { .. } | FabricError::Os { .. }),
                    "case {case}: {e:?}"
                );
                let text = e.to_string();
                assert!(text.contains(&path.display().to_string()), "case {case}: {text}");
            }
        }
    }
    eprintln!("{CASES} mangled headers: {refused} refused, {opened} opened");
    assert!(refused > CASES / 2 && opened > 0);
    // The sweep copes with what is left, and with stray files of any content and name.
    for i in 0..64u32 {
        let name = hca.ring_path(0x70_0000 + i);
        std::fs::write(&name, {
            let n = rng.below(200) as usize;
            rng.bytes(n)
        })
        .expect("stray file");
    }
    hca.sweep().expect("sweep over garbage ring files");
}

// ============================================================================ HCA

/// Memory the victim QP registers: the middle third of a buffer whose outer thirds are
/// never registered and must never change.
struct GuardedRegion {
    buf: Buffer,
    key: u32,
}

const THIRD: usize = 16 * 1024;
const GUARD_BYTE: u8 = 0xa5;

impl GuardedRegion {
    fn new(engine: &Engine, pdn: u32) -> GuardedRegion {
        let buf = Buffer::new(3 * THIRD);
        buf.fill(GUARD_BYTE);
        buf.write(THIRD, &[0; THIRD]);
        let key = engine.registry().alloc_mkey();
        engine.add_memory_region(MemoryRegion {
            key,
            pdn,
            iova: buf.addr() + THIRD as u64,
            // SAFETY: the middle third of `buf`, which outlives the engine's use of it
            // (the engine is dropped first at the end of the test).
            memory: unsafe { AppSpan::new(buf.addr() as usize + THIRD, THIRD) },
            access: ALL_ACCESS,
        });
        GuardedRegion { buf, key }
    }

    fn addr(&self) -> u64 {
        self.buf.addr() + THIRD as u64
    }

    fn guards_intact(&self) -> bool {
        let outer = [self.buf.read(0, THIRD), self.buf.read(2 * THIRD, THIRD)];
        outer.iter().all(|third| third.iter().all(|&b| b == GUARD_BYTE))
    }
}

/// The packet headers of the victim's outbound records (its requests and responses).
fn packet_of(kind: u16, bytes: &[u8], src_qpn: u32) -> Option<PacketHeader> {
    use zerocopy::FromBytes;
    if kind & 0xff00 == COMPACT_RECORD {
        let c = CompactHeader::read_from_bytes(bytes.get(..16)?).ok()?;
        return c.expand(kind as u8, src_qpn, bytes.len() - 16);
    }
    PacketHeader::read_from_bytes(bytes.get(..size_of::<PacketHeader>())?).ok()
}

/// A real softhca QP (the victim) connected to a fake peer QP of another fabric instance
/// that pushes crafted packets into its ring: requests of every kind with right, nearly
/// right and random PSNs, keys, addresses, lengths, offsets and flags; responses to the
/// victim's own requests; compact records; records of unknown kinds; now and then
/// scribbles over the ring's words; and packets addressed to a healthy QP of the same
/// engine (which must never see them). After each case the victim has run its progress: it
/// is in RTS or ERR, it wrote nothing outside its registered memory, its completions are
/// well formed, and (every so often) a healthy pair on the same engine passes a SEND and
/// an RDMA WRITE, checked byte for byte.
#[test]
fn an_hca_qp_survives_crafted_packets_and_its_neighbours_keep_working() {
    const CASES: u64 = 3000;
    let watchdog = Watchdog::new("HCA fuzz", Duration::from_secs(300));
    let mut rng = Rng::seeded(0x5eed_0003);
    let fabric = TestFabric::new("hostile-hca");
    let engine = Engine::open_in(fabric.dir.clone(), "softhca0", LOCALHOST_GID).expect("engine");
    let pdn = engine.registry().alloc_pdn();
    let region = GuardedRegion::new(&engine, pdn);
    let mut cq = Cq::new(&engine, 4096);
    let spec = |cq: &Cq| QpSpec {
        pdn,
        send_cqn: cq.cqn,
        recv_cqn: cq.cqn,
        srqn: None,
        sq_wqebbs: 256,
        rq_wqe_count: 64,
        max_recv_sge: 2,
        sq_sig_all: true,
    };
    let mut victim = Qp::new(&engine, spec(&cq));

    // The fake peer: its own instance on the same HCA, like another process.
    let peer_hca = fabric.dir.open_hca("softhca0", LOCALHOST_GID).expect("peer's registry");
    let peer = peer_hca.register_instance().expect("peer instance");
    let evil = peer.alloc_qpn().expect("peer QPN").qpn;
    let mut out = peer.create_ring(evil, victim.qpn, None).expect("peer ring");
    let ring_file = open_rw(out.path());
    let attrs = rc_attrs();
    victim.connect(&engine, LOCALHOST_GID, evil, attrs);
    let notifier = peer_hca.notifier_for_qp(victim.qpn).expect("victim is live");
    let mut back: RingConsumer = peer_hca.open_ring(victim.qpn, evil).expect("victim's ring");
    let victim_ring = open_rw(back.path());

    let mut healthy = HealthyPair::new(&engine);

    let recv_len = 2048u32;
    let mut posted = 0usize; // receives of the victim not yet completed
    let mut expected_psn = attrs.rq_psn; // the victim's next expected request PSN, as we track it
    let mut request_psns: Vec<u32> = Vec::new(); // PSNs of the victim's requests seen
    let mut stats = [0u64; 8]; // resets, cqes ok, cqes err, records pushed, scribbles, responses seen, healthy checks, remote writes
    let valid_kinds = [kind::SEND, kind::WRITE, kind::READ, kind::ATOMIC_CS, kind::ATOMIC_FA];
    let response_kinds =
        [kind::ACK, kind::NAK, kind::READ_RESPONSE, kind::ATOMIC_RESPONSE, kind::RNR_NAK];

    for case in 0..CASES {
        watchdog.case(case);
        // Back to a fresh connection when the victim is in ERR, and now and then anyway.
        let state = engine.qp_state(victim.qpn).expect("victim exists");
        if state == qp_state::ERR || rng.chance(3) {
            engine.modify_qp(victim.qpn, qp_state::RESET, attrs);
            while cq.poll_one().is_some() {}
            victim.sq_pi = 0;
            victim.rq_pi = 0;
            victim.dbrec.write(0, &[0; 8]);
            posted = 0;
            out.reset(victim.qpn);
            // An honest producer's head again, in case a scribble broke it.
            let tail = read_u64(&ring_file, ring_layout::OFF_TAIL);
            write_at(&ring_file, ring_layout::OFF_HEAD, &tail.to_ne_bytes());
            victim.connect(&engine, LOCALHOST_GID, evil, attrs);
            expected_psn = attrs.rq_psn;
            request_psns.clear();
            stats[0] += 1;
        }
        while posted < 8 {
            let at = region.addr() + rng.below((THIRD as u32 - recv_len) as u64 / 8) * 8;
            let sges = if rng.chance(80) {
                vec![(at, recv_len, region.key)]
            } else {
                vec![(at, 16, region.key), (at + 1024, 1024, region.key)]
            };
            victim.post_recv(&sges);
            posted += 1;
        }
        // Sometimes the victim has requests of its own in flight, so responses matter.
        if rng.chance(30) {
            let local = region.addr() + rng.below(THIRD as u64 / 2 / 8) * 8;
            let remote = Some((rng.next(), rng.next() as u32));
            let wr = match rng.below(4) {
                0 => send(vec![(local, rng.below(300) as u32, region.key)]),
                1 => SendWr {
                    opcode: opcode::RDMA_READ,
                    sges: vec![(local, 1 + rng.below(4000) as u32, region.key)],
                    remote,
                    signaled: true,
                    ..Default::default()
                },
                2 => SendWr {
                    opcode: opcode::ATOMIC_FA,
                    sges: vec![(local, 8, region.key)],
                    remote,
                    atomic: Some((rng.next(), rng.next())),
                    signaled: true,
                    ..Default::default()
                },
                _ => SendWr {
                    opcode: opcode::RDMA_WRITE,
                    sges: vec![(local, rng.below(300) as u32, region.key)],
                    remote,
                    signaled: true,
                    ..Default::default()
                },
            };
            victim.post_send(&engine, &wr);
        }

        // The hostile packets.
        for _ in 0..1 + rng.below(4) {
            let payload_len = match rng.below(10) {
                0 => rng.below(70_000) as usize,
                1..=3 => 0,
                _ => rng.below(600) as usize,
            };
            let payload = rng.bytes(payload_len);
            let plen = payload.len() as u64;
            let is_response = rng.chance(25);
            let mut h = PacketHeader {
                kind: if is_response {
                    rng.pick(&response_kinds)
                } else if rng.chance(90) {
                    rng.pick(&valid_kinds)
                } else {
                    rng.next() as u8
                },
                flags: if rng.chance(80) {
                    flag::FIRST | flag::LAST | (rng.next() as u8 & !(flag::FIRST | flag::LAST))
                } else {
                    rng.next() as u8
                },
                syndrome: rng.below(8) as u8,
                rnr_retry: rng.below(8) as u8,
                imm: (rng.next() as u32).to_be_bytes(),
                src_qpn: if rng.chance(95) { evil } else { rng.next() as u32 },
                psn: match rng.below(6) {
                    0 => rng.next() as u32 & wire::PSN_MASK,
                    1 => expected_psn.wrapping_sub(1) & wire::PSN_MASK,
                    _ if is_response && !request_psns.is_empty() => rng.pick(&request_psns),
                    _ => expected_psn,
                },
                rkey: if rng.chance(85) { region.key } else { rng.next() as u32 },
                payload_len: if rng.chance(95) { plen as u32 } else { rng.next() as u32 },
                remote_addr: match rng.below(6) {
                    0 => rng.next(),
                    1 => region.addr() + THIRD as u64 - rng.below(64),
                    2 => region.addr().wrapping_sub(rng.below(64)),
                    _ => region.addr() + rng.below(THIRD as u64),
                },
                length: match rng.below(6) {
                    0 => rng.next(),
                    1 => rng.below(THIRD as u64 * 2),
                    2 => plen + rng.below(100),
                    3 => plen.saturating_sub(rng.below(100)),
                    _ => plen,
                },
                offset: if rng.chance(85) {
                    0
                } else {
                    {
                        let any = [rng.next(), rng.below(5000)];
                        rng.pick(&any)
                    }
                },
                operand: rng.next(),
                compare: rng.next(),
                ack_psn: rng.next() as u32 & wire::PSN_MASK,
                reserved: if rng.chance(95) { 0 } else { rng.next() as u32 },
            };
            if matches!(h.kind, kind::ATOMIC_CS | kind::ATOMIC_FA) && rng.chance(70) {
                h.remote_addr &= !7;
            }
            let pushed = match rng.below(10) {
                // A compact record: a one-segment SEND or an ACK, or anything with the bit.
                0 | 1 => {
                    let c = CompactHeader {
                        flags: h.flags,
                        rnr_retry: h.rnr_retry,
                        reserved: if rng.chance(95) { 0 } else { rng.next() as u16 },
                        imm: h.imm,
                        psn: h.psn,
                        ack_psn: h.ack_psn,
                    };
                    let kinds = [kind::SEND, kind::SEND, kind::ACK, rng.next() as u8];
                    let record_kind = COMPACT_RECORD | u16::from(rng.pick(&kinds));
                    let body = if record_kind as u8 == kind::ACK { &[][..] } else { &payload[..] };
                    out.try_push(record_kind, c.as_bytes(), &[body])
                }
                // Not a packet at all.
                2 => {
                    let record_kind = rng.below(0xffff) as u16;
                    out.try_push(
                        record_kind,
                        &{
                            let n = rng.below(200) as usize;
                            rng.bytes(n)
                        },
                        &[],
                    )
                }
                // A header cut short.
                3 => out.try_push(u16::from(h.kind), &h.as_bytes()[..rng.below(72) as usize], &[]),
                _ => out.try_push(u16::from(h.kind), h.as_bytes(), &[&payload]),
            };
            if pushed.is_ok() {
                stats[3] += 1;
                if !is_response
                    && h.kind != kind::READ
                    && h.psn == expected_psn
                    && h.flags & flag::LAST != 0
                {
                    expected_psn = wire::next_psn(expected_psn);
                }
            }
        }
        if rng.chance(3) {
            // Packets addressed to the healthy pair's receiver instead, claiming to come
            // from its peer: it reads only its peer's ring, so they never reach it.
            out.reset(healthy.b.qpn);
            let mut h = PacketHeader {
                kind: kind::SEND,
                flags: flag::FIRST | flag::LAST,
                src_qpn: healthy.a.qpn,
                psn: rc_attrs().rq_psn,
                payload_len: 8,
                length: 8,
                ..Default::default()
            };
            for _ in 0..4 {
                let _ = out.try_push(u16::from(kind::SEND), h.as_bytes(), &[&[0xee; 8]]);
                h.psn = wire::next_psn(h.psn);
            }
            peer_hca.notifier_for_qp(healthy.b.qpn).expect("live").notify();
            out.reset(victim.qpn);
        }
        if rng.chance(4) {
            // Scribble over the ring: its words or a record near the tail.
            let tail = read_u64(&ring_file, ring_layout::OFF_TAIL);
            let offset = match rng.below(4) {
                0 => ring_layout::OFF_TAIL,
                1 => ring_layout::OFF_EPOCH_START,
                _ => {
                    let back_by = 8 * rng.below(64) as u32;
                    ring_layout::DATA_OFFSET
                        + ((tail as u32).wrapping_sub(back_by) as usize & (out.capacity() - 1))
                }
            };
            let value = if rng.chance(50) { rng.next() } else { tail ^ (1 << rng.below(64)) };
            write_at(&ring_file, offset, &value.to_ne_bytes());
            stats[4] += 1;
        }
        // As the consumer of the victim's ring, the peer writes its head and polling
        // words: garbage there must read as "full" or cost a notification, nothing worse.
        // (Mended after this case's passes, as an honest consumer's next read would.)
        let mended_head = rng.chance(3).then(|| {
            let honest = read_u64(&victim_ring, ring_layout::OFF_HEAD);
            let garbage = if rng.chance(50) { rng.next() } else { honest + 8 * rng.below(64) };
            write_at(&victim_ring, ring_layout::OFF_HEAD, &garbage.to_ne_bytes());
            write_at(&victim_ring, ring_layout::OFF_POLLED_BY, &(rng.next() as u32).to_ne_bytes());
            honest
        });
        notifier.notify();
        let started = Instant::now();
        for _ in 0..6 {
            engine.progress();
        }
        assert!(started.elapsed() < Duration::from_secs(5), "case {case}: progress took long");
        if let Some(honest) = mended_head {
            write_at(&victim_ring, ring_layout::OFF_HEAD, &honest.to_ne_bytes());
            write_at(&victim_ring, ring_layout::OFF_POLLED_BY, &0u32.to_ne_bytes());
        }
        // With nothing more pushed, the engine goes idle (a progress thread would sleep).
        let busy = (0..50).filter(|_| engine.progress()).count();
        assert!(busy < 50, "case {case}: progress keeps finding work with nothing sent");

        // What the victim did about it.
        assert!(healthy.cq.poll_one().is_none(), "case {case}: the healthy pair got a CQE");
        let state = engine.qp_state(victim.qpn).expect("victim exists");
        assert!(state == qp_state::RTS || state == qp_state::ERR, "case {case}: state {state}");
        assert!(region.guards_intact(), "case {case}: memory outside the region changed");
        while let Some(wc) = cq.poll_one() {
            let responder = matches!(
                wc.opcode,
                cqe_opcode::RESP_SEND | cqe_opcode::RESP_SEND_IMM | cqe_opcode::RESP_WR_IMM
            );
            match wc.opcode {
                cqe_opcode::REQ => stats[1] += 1,
                _ if responder => {
                    posted -= 1;
                    stats[1] += 1;
                    if wc.opcode != cqe_opcode::RESP_WR_IMM {
                        assert!(wc.byte_cnt <= recv_len, "case {case}: {wc:?}");
                    }
                    assert_eq!(wc.qpn, victim.qpn, "case {case}");
                }
                cqe_opcode::REQ_ERR | cqe_opcode::RESP_ERR => {
                    stats[2] += 1;
                    if wc.opcode == cqe_opcode::RESP_ERR {
                        posted = posted.saturating_sub(1);
                    }
                    assert!(wc.syndrome.is_some(), "case {case}: an error CQE without syndrome");
                }
                other => panic!("case {case}: unexpected CQE opcode {other:#x}: {wc:?}"),
            }
        }
        // What the victim sent: its requests (PSNs for responses) and its answers.
        loop {
            match back.pop() {
                Ok(Some(record)) => {
                    let h =
                        packet_of(record.kind, &record.bytes, victim.qpn).unwrap_or_else(|| {
                            panic!("case {case}: the victim sent a malformed record")
                        });
                    if h.kind < kind::ACK && h.flags & flag::FIRST != 0 {
                        request_psns.push(h.psn);
                        if request_psns.len() > 16 {
                            request_psns.remove(0);
                        }
                    } else {
                        stats[5] += 1;
                    }
                }
                Ok(None) => break,
                Err(e) => panic!("case {case}: the victim's own ring is corrupt: {e}"),
            }
        }

        if case % 300 == 299 {
            healthy.passes_data(&engine, case);
            stats[6] += 1;
        }
    }
    healthy.passes_data(&engine, CASES);
    eprintln!(
        "{CASES} cases: {} victim resets, {} good and {} error completions, {} records \
         pushed, {} ring scribbles, {} responses from the victim, {} healthy checks",
        stats[0], stats[1], stats[2], stats[3], stats[4], stats[5], stats[6]
    );
    assert!(stats[1] > 50 && stats[2] > 50, "the fuzz reached both success and errors");
    drop(watchdog);
}

/// Two connected QPs of the engine under attack, sharing one CQ, that must keep working.
struct HealthyPair {
    a: Qp,
    b: Qp,
    cq: Cq,
    src: Mr,
    dst: Mr,
}

impl HealthyPair {
    fn new(engine: &Engine) -> HealthyPair {
        let pdn = engine.registry().alloc_pdn();
        let cq = Cq::new(engine, 256);
        let spec = || QpSpec {
            pdn,
            send_cqn: cq.cqn,
            recv_cqn: cq.cqn,
            srqn: None,
            sq_wqebbs: 64,
            rq_wqe_count: 16,
            max_recv_sge: 1,
            sq_sig_all: true,
        };
        let (a, b) = (Qp::new(engine, spec()), Qp::new(engine, spec()));
        a.connect(engine, LOCALHOST_GID, b.qpn, rc_attrs());
        b.connect(engine, LOCALHOST_GID, a.qpn, rc_attrs());
        let (src, dst) =
            (Mr::new(engine, pdn, 4096, ALL_ACCESS), Mr::new(engine, pdn, 4096, ALL_ACCESS));
        HealthyPair { a, b, cq, src, dst }
    }

    /// A SEND and an RDMA WRITE from A to B, each checked byte for byte.
    fn passes_data(&mut self, engine: &Engine, case: u64) {
        let message: Vec<u8> = (0..1000).map(|i| (i as u64 * 7 + case) as u8).collect();
        self.src.buf.write(0, &message);
        self.b.post_recv(&[(self.dst.addr(), 4096, self.dst.key)]);
        self.a.post_send(engine, &send(vec![(self.src.addr(), 1000, self.src.key)]));
        let wcs = self.cq.wait(engine, 2, Duration::from_secs(10));
        assert_eq!(wcs.len(), 2, "case {case}: the healthy pair's SEND did not complete: {wcs:?}");
        assert!(wcs.iter().all(|wc| wc.syndrome.is_none()), "case {case}: {wcs:?}");
        assert_eq!(self.dst.buf.read(0, 1000), message, "case {case}: SEND data");
        let reversed: Vec<u8> = message.iter().rev().copied().collect();
        self.src.buf.write(0, &reversed);
        let write = SendWr {
            opcode: opcode::RDMA_WRITE,
            sges: vec![(self.src.addr(), 1000, self.src.key)],
            remote: Some((self.dst.addr() + 2048, self.dst.key)),
            signaled: true,
            ..Default::default()
        };
        self.a.post_send(engine, &write);
        let wcs = self.cq.wait(engine, 1, Duration::from_secs(10));
        assert_eq!(wcs.len(), 1, "case {case}: the healthy pair's WRITE did not complete");
        assert!(wcs[0].syndrome.is_none(), "case {case}: {wcs:?}");
        assert_eq!(self.dst.buf.read(2048, 1000), reversed, "case {case}: WRITE data");
    }
}

// ============================================================================ registry

/// Random words written all over the registry file (QP table entries, instance slots,
/// pending bitmaps, wake words, allocators) while an engine uses it, except the entries
/// of the engine's own QPs and instance, interleaved with every reader of that file:
/// lookups, notifiers, sweeps, allocation, joining, opening by GID; plus junk `.hca`
/// files beside it, one with a valid header over garbage tables. Nothing panics, the
/// search by GID still finds the real registry, and the engine's connected pair still
/// passes data.
#[test]
fn registry_garbage_never_panics_and_spares_the_live_qps() {
    const CASES: u64 = 3000;
    let watchdog = Watchdog::new("registry fuzz", Duration::from_secs(300));
    let mut rng = Rng::seeded(0x5eed_0004);
    let fabric = TestFabric::new("hostile-registry");
    let engine = Engine::open_in(fabric.dir.clone(), "softhca0", LOCALHOST_GID).expect("engine");
    let mut healthy = HealthyPair::new(&engine);
    let registry = engine.registry().clone();
    let file = open_rw(registry.path());
    let ours = registry.owner_of(healthy.a.qpn).expect("live QP").instance_index;
    let table_index = |qpn: u32| qpn as usize & (reg_layout::QP_CAPACITY - 1);
    let spared = [table_index(healthy.a.qpn), table_index(healthy.b.qpn)];
    let fabric_dir =
        ferrodat_softhca::fabric::FabricDir::new(registry.path().parent().expect("dir"));
    // Other "registries" in the directory: random bytes of random sizes, and one with a
    // valid header (its own name and GID) over tables of garbage.
    for i in 0..8 {
        let len = rng.pick(&[0, 100, 4096, reg_layout::TOTAL_BYTES as u64]) as usize;
        let path = fabric_dir.root().join(format!("junk{i}.hca"));
        std::fs::write(&path, rng.bytes(len)).expect("a junk registry");
    }
    let mut plausible = std::fs::read(registry.path()).expect("read the registry");
    let name = b"evil";
    plausible[reg_layout::OFF_NAME_LEN..][..4].copy_from_slice(&(name.len() as u32).to_ne_bytes());
    plausible[reg_layout::OFF_NAME..][..name.len()].copy_from_slice(name);
    plausible[reg_layout::OFF_GID..][..16].copy_from_slice(&[0xee; 16]);
    for word in plausible[reg_layout::INSTANCES_OFFSET..].chunks_mut(8) {
        word.copy_from_slice(&rng.next().to_ne_bytes()[..word.len()]);
    }
    std::fs::write(fabric_dir.root().join("evil.hca"), &plausible).expect("a plausible registry");
    let names = fabric_dir.hca_names().expect("list the HCAs");
    assert!(names.contains(&"softhca0".to_string()) && names.contains(&"evil".to_string()));
    let evil = fabric_dir.find_hca_by_gid([0xee; 16]).expect("search").expect("found by GID");
    evil.sweep().expect("a sweep of a registry full of garbage");
    for case in 0..CASES {
        watchdog.case(case);
        for _ in 0..1 + rng.below(8) {
            let value = match rng.below(4) {
                0 => rng.next(),
                1 => rng.below(8) << 56 | (rng.below(0x100_0000) << 32) | rng.below(1 << 22),
                2 => rng.below(1 << 16) << 16 | rng.below(1 << 13),
                _ => 0,
            };
            let offset = match rng.below(3) {
                0 => {
                    let mut index = rng.below(reg_layout::QP_CAPACITY as u64) as usize;
                    if rng.chance(50) {
                        index = spared[0] ^ (1 + rng.below(8) as usize);
                    }
                    if spared.contains(&index) {
                        continue;
                    }
                    reg_layout::QP_TABLE_OFFSET
                        + index * reg_layout::QP_ENTRY_BYTES
                        + 8 * rng.below(4) as usize
                }
                1 => {
                    let index = rng.below(reg_layout::INSTANCE_CAPACITY as u64) as u16;
                    let field = rng.below(reg_layout::INSTANCE_STRIDE as u64 / 8) as usize * 8;
                    let ours_but_harmless = field >= reg_layout::INST_OFF_WAKE_SEQ;
                    if index == ours && !ours_but_harmless {
                        continue;
                    }
                    reg_layout::INSTANCES_OFFSET
                        + usize::from(index) * reg_layout::INSTANCE_STRIDE
                        + field
                }
                _ => reg_layout::OFF_NEXT_QPN + 8 * rng.below(5) as usize,
            };
            write_at(&file, offset, &value.to_ne_bytes());
        }
        let qpn = match rng.below(3) {
            0 => rng.next() as u32,
            1 => rng.below(0x100_0000) as u32,
            _ => healthy.a.qpn ^ (1 + rng.below(16) as u32),
        };
        match rng.below(8) {
            0 | 1 => {
                if let Some(owner) = registry.owner_of(qpn) {
                    assert_eq!(owner.qpn, qpn);
                    assert!(usize::from(owner.instance_index) < reg_layout::INSTANCE_CAPACITY);
                }
            }
            2 => {
                if let Some(n) = registry.notifier_for_qp(qpn) {
                    n.notify();
                    n.instance().wake();
                }
            }
            3 => {
                registry.sweep().expect("a sweep over garbage succeeds");
            }
            4 => {
                if let Ok(allocation) = engine.alloc_qpn() {
                    engine.free_qpn(allocation.qpn);
                }
            }
            5 => {
                // (Each search opens, so sweeps, every registry: a slow call, made rarely.)
                if rng.chance(20) {
                    let found = fabric_dir.find_hca_by_gid(LOCALHOST_GID).expect("search");
                    assert_eq!(found.map(|r| r.uid()), Some(registry.uid()), "case {case}");
                }
                let _ = evil.owner_of(qpn).map(|_| evil.notifier_for_qp(qpn).map(|n| n.notify()));
            }
            6 => {
                if let Ok(instance) = registry.register_instance() {
                    let _ = instance.alloc_qpn();
                }
            }
            _ => {
                let _ = registry.open_ring(qpn, healthy.a.qpn);
            }
        }
        engine.progress();
        assert!(registry.owner_of(healthy.a.qpn).is_some(), "case {case}: our QP was swept");
        if case % 500 == 499 {
            healthy.passes_data(&engine, case);
        }
    }
    drop(watchdog);
}

// ============================================================================ found bugs

/// A real QP (the victim) connected to a fake peer QP whose packets the test writes by
/// hand, as [`an_hca_qp_survives_crafted_packets_and_its_neighbours_keep_working`] does.
struct Victim {
    engine: Arc<Engine>,
    qp: Qp,
    cq: Cq,
    region: GuardedRegion,
    /// The fake peer's ring, read by the victim.
    out: ferrodat_softhca::fabric::RingProducer,
    /// The victim's ring, read by the fake peer.
    back: RingConsumer,
    notifier: ferrodat_softhca::fabric::QpNotifier,
    evil: u32,
    _peer: ferrodat_softhca::fabric::Instance,
    _fabric: TestFabric,
}

impl Victim {
    fn new(tag: &str) -> Victim {
        let fabric = TestFabric::new(tag);
        let engine =
            Engine::open_in(fabric.dir.clone(), "softhca0", LOCALHOST_GID).expect("engine");
        let pdn = engine.registry().alloc_pdn();
        let region = GuardedRegion::new(&engine, pdn);
        let cq = Cq::new(&engine, 256);
        let qp = Qp::new(&engine, QpSpec { sq_sig_all: true, ..QpSpec::on_cq(pdn, &cq, 64, 16) });
        let peer_hca = fabric.dir.open_hca("softhca0", LOCALHOST_GID).expect("peer registry");
        let peer = peer_hca.register_instance().expect("peer instance");
        let evil = peer.alloc_qpn().expect("peer QPN").qpn;
        let out = peer.create_ring(evil, qp.qpn, None).expect("peer ring");
        qp.connect(&engine, LOCALHOST_GID, evil, rc_attrs());
        let notifier = peer_hca.notifier_for_qp(qp.qpn).expect("victim is live");
        let back = peer_hca.open_ring(qp.qpn, evil).expect("victim's ring");
        Victim { engine, qp, cq, region, out, back, notifier, evil, _peer: peer, _fabric: fabric }
    }

    /// A request or response header from the fake peer, with the usual fields filled.
    fn header(&self, kind: u8, flags: u8, psn: u32, payload_len: usize) -> PacketHeader {
        PacketHeader {
            kind,
            flags,
            src_qpn: self.evil,
            psn,
            payload_len: payload_len as u32,
            length: payload_len as u64,
            rkey: self.region.key,
            remote_addr: self.region.addr(),
            ..Default::default()
        }
    }

    /// Pushes one packet with a full header and lets the victim run.
    fn push(&mut self, h: &PacketHeader, payload: &[u8]) {
        self.out.try_push(u16::from(h.kind), h.as_bytes(), &[payload]).expect("room in the ring");
        self.run();
    }

    fn run(&mut self) {
        self.notifier.notify();
        for _ in 0..4 {
            self.engine.progress();
        }
    }

    /// The packets the victim sent since the last call.
    fn sent(&mut self) -> Vec<PacketHeader> {
        let mut packets = Vec::new();
        while let Some(record) = self.back.pop().expect("the victim's ring is well formed") {
            packets.push(packet_of(record.kind, &record.bytes, self.qp.qpn).expect("a packet"));
        }
        packets
    }

    /// One completion comes, an error with `opcode` and `syndrome` (`what`: which one, for
    /// the message), and the QP is in ERR.
    fn fails_with(&mut self, opcode: u8, syndrome: u8, case: usize, what: &str) {
        let wcs = self.cq.wait(&self.engine, 1, Duration::from_secs(5));
        assert_eq!(wcs.len(), 1, "case {case}: {what}");
        assert_eq!(
            (wcs[0].opcode, wcs[0].syndrome),
            (opcode, Some(syndrome)),
            "case {case}: {wcs:?}"
        );
        assert_eq!(self.state(), qp_state::ERR, "case {case}");
    }

    fn state(&self) -> u8 {
        self.engine.qp_state(self.qp.qpn).expect("the victim exists")
    }

    /// The victim gave up on a broken inbound ring: in ERR, its one posted receive flushed,
    /// the peer told with a NAK (`case` names the case in the messages).
    fn gave_up_on_its_ring(&mut self, case: &str) {
        assert_eq!(self.state(), qp_state::ERR, "{case}");
        let wcs = self.cq.wait(&self.engine, 1, Duration::from_secs(5));
        assert_eq!(wcs.len(), 1, "{case}: the receive is flushed");
        assert_eq!(wcs[0].syndrome, Some(ferrodat_abi::mlx5::cqe_syndrome::WR_FLUSH_ERR));
        assert!(self.sent().iter().any(|p| p.kind == kind::NAK), "{case}: the peer is told");
    }
}

/// A request message whose segments carry more or fewer bytes than the length its first
/// segment announced used to complete: a SEND with `length` 100 and 10 bytes of payload
/// reported 100 bytes received (90 of them whatever the buffer held), one with `length`
/// 10 and 100 bytes wrote all 100 into the receive buffer and reported 10, and a WRITE
/// with immediate data likewise. The responder now answers NAK (invalid request), fails
/// the receive with a length error and moves to ERR, writing nothing past the length.
#[test]
fn a_request_whose_payload_disagrees_with_its_length_is_an_invalid_request() {
    let whole = flag::FIRST | flag::LAST | flag::ACK_REQUEST;
    // (kind, segments as (flags, offset, payload bytes), announced length)
    type Segment = (u8, u64, usize);
    let cases: [(u8, &[Segment], u64); 6] = [
        (kind::SEND, &[(whole, 0, 10)], 100),
        (kind::SEND, &[(whole, 0, 100)], 10),
        (kind::SEND, &[(whole, 0, 5)], 0),
        (kind::SEND, &[(flag::FIRST, 0, 60), (flag::LAST, 60, 20)], 100),
        (kind::SEND, &[(flag::FIRST, 0, 60), (flag::LAST, 60, 60)], 100),
        (kind::WRITE, &[(whole | flag::IMMEDIATE, 0, 10)], 100),
    ];
    for (i, (packet_kind, segments, length)) in cases.into_iter().enumerate() {
        let mut v = Victim::new("length-mismatch");
        v.qp.post_recv(&[(v.region.addr() + 4096, 2048, v.region.key)]);
        let psn = rc_attrs().rq_psn;
        for &(flags, offset, len) in segments {
            let mut h = v.header(packet_kind, flags, psn, len);
            h.length = length;
            h.offset = offset;
            h.remote_addr = v.region.addr() + offset;
            v.push(&h, &vec![0x77; len]);
        }
        v.fails_with(
            cqe_opcode::RESP_ERR,
            ferrodat_abi::mlx5::cqe_syndrome::LOCAL_LENGTH_ERR,
            i,
            "one receive completion",
        );
        let naks: Vec<_> = v.sent().into_iter().filter(|p| p.kind == kind::NAK).collect();
        assert_eq!(naks.len(), 1, "case {i}: one NAK");
        assert_eq!((naks[0].psn, naks[0].syndrome), (psn, wire::nak::INVALID_REQUEST));
        // Nothing beyond the announced length was written.
        let landed = if packet_kind == kind::SEND { 4096 } else { 0 };
        let beyond = v.region.buf.read(THIRD + landed + length as usize, 200);
        assert!(beyond.iter().all(|&b| b == 0), "case {i}: bytes past the length written");
    }
}

/// READ responses that do not add up to the READ (short, too long, out of order, a
/// segment repeated) used to complete the READ successfully with stale bytes in its
/// buffer (or, too long, as a local length error blaming the requester). The requester
/// now fails the READ with BAD_RESP_ERR, as hardware reports a bad response, and the QP
/// moves to ERR.
#[test]
fn read_responses_that_do_not_add_up_to_the_read_are_a_bad_response() {
    let (first, last) = (flag::FIRST, flag::LAST);
    // Response segments as (flags, offset, payload bytes) for a 100-byte READ.
    type Segment = (u8, u64, usize);
    let cases: [&[Segment]; 5] = [
        &[(first | last, 0, 10)],
        &[(first | last, 0, 200)],
        &[(first | last, 50, 50)],
        &[(first, 0, 60), (last, 0, 40)],
        &[(first, 0, 60), (last, 60, 20)],
    ];
    for (i, segments) in cases.into_iter().enumerate() {
        let mut v = Victim::new("read-response");
        let target = v.region.addr() + 8192;
        let read = SendWr {
            opcode: opcode::RDMA_READ,
            sges: vec![(target, 100, v.region.key)],
            remote: Some((0x1000, 0x1234)),
            signaled: true,
            ..Default::default()
        };
        v.qp.post_send(&v.engine, &read);
        let requests = v.sent();
        assert_eq!(requests.len(), 1, "case {i}: the READ request");
        for &(flags, offset, len) in segments {
            let mut h = v.header(kind::READ_RESPONSE, flags, requests[0].psn, len);
            h.offset = offset;
            v.push(&h, &vec![0x77; len]);
        }
        v.fails_with(
            cqe_opcode::REQ_ERR,
            ferrodat_abi::mlx5::cqe_syndrome::BAD_RESP_ERR,
            i,
            "the READ completes",
        );
        let beyond = v.region.buf.read(THIRD + 8192 + 100, 200);
        assert!(beyond.iter().all(|&b| b == 0), "case {i}: bytes past the READ written");
    }
}

/// A peer whose ring turns corrupt (here: its tail word beyond the capacity, a record
/// header with an impossible length) used to be ignored: the QP discarded what it could
/// and stayed in RTS, silently deaf to that peer for good, and re-read the broken ring on
/// every progress pass. Now the QP moves to ERR (its receives are flushed, the peer gets
/// a NAK) and stops reading the ring, so progress finds no more work.
#[test]
fn a_corrupt_inbound_ring_moves_the_qp_to_err_and_is_read_no_more() {
    for (i, corruption) in ["tail", "record"].into_iter().enumerate() {
        let mut v = Victim::new("corrupt-ring");
        v.qp.post_recv(&[(v.region.addr(), 2048, v.region.key)]);
        let file = open_rw(v.out.path());
        match corruption {
            "tail" => {
                let tail = read_u64(&file, ring_layout::OFF_TAIL);
                write_at(&file, ring_layout::OFF_TAIL, &(tail + (1 << 20)).to_ne_bytes());
            }
            _ => {
                let h = v.header(kind::SEND, flag::FIRST | flag::LAST, rc_attrs().rq_psn, 8);
                v.out.try_push(u16::from(h.kind), h.as_bytes(), &[&[1; 8]]).expect("push");
                let header = read_u64(&file, ring_layout::DATA_OFFSET);
                write_at(&file, ring_layout::DATA_OFFSET, &(header | 0xff_ffff).to_ne_bytes());
            }
        }
        v.run();
        v.gave_up_on_its_ring(&format!("case {i} ({corruption})"));
        v.notifier.notify();
        v.engine.progress();
        assert!(!v.engine.progress(), "case {i}: the corrupt ring is still being read");
    }
}

/// A peer that shrinks its ring file under the reader's mapping used to kill the reading
/// process: touching a page past the new end of a shared file raises SIGBUS. The pages now
/// read as zeros, the ring is reported corrupt and the QP moves to ERR as for any corrupt
/// ring; the fake peer's own mapping of the file (in this process too) survives as well.
#[test]
fn a_ring_file_truncated_under_its_reader_is_a_corrupt_ring_not_a_sigbus() {
    // A guard that failed to replace the mapping would fault for ever.
    let watchdog = Watchdog::new("truncated ring", Duration::from_secs(60));
    truncated_ring_cases(&watchdog);
}

/// The truncated-ring cases (also run by a child whose own SIGBUS handler came first).
fn truncated_ring_cases(watchdog: &Watchdog) {
    let whole = flag::FIRST | flag::LAST | flag::ACK_REQUEST;
    // All of it, or all but the first page (the header and the ring's first bytes stay:
    // the reader's next look is past them).
    for (i, size) in [0, 4096].into_iter().enumerate() {
        watchdog.case(i as u64);
        let mut v = Victim::new("truncated-ring");
        // Messages first, until the reader's head is past the first page.
        let mut psn = rc_attrs().rq_psn;
        for _ in 0..64 {
            v.qp.post_recv(&[(v.region.addr(), 2048, v.region.key)]);
            v.push(&v.header(kind::SEND, whole, psn, 8), &[7; 8]);
            let wcs = v.cq.wait(&v.engine, 1, Duration::from_secs(5));
            assert_eq!((wcs.len(), wcs[0].syndrome), (1, None), "case {i}: {wcs:?}");
            psn = wire::next_psn(psn);
        }
        let _ = v.sent();
        v.qp.post_recv(&[(v.region.addr(), 2048, v.region.key)]);
        open_rw(v.out.path()).set_len(size).expect("truncate the ring file");
        v.run();
        v.run();
        v.gave_up_on_its_ring(&format!("case {i} (truncated to {size})"));
        // The peer's producer writes into its lost mapping without a fault, too.
        let h = v.header(kind::SEND, whole, psn, 8);
        v.out.try_push(u16::from(h.kind), h.as_bytes(), &[&[1; 8]]).expect("room");
        v.notifier.notify();
        v.engine.progress();
        assert!(!v.engine.progress(), "case {i}: the truncated ring is still being read");
    }
}

/// A SIGBUS that is not about a softhca mapping still ends the process, as without
/// softhca: the guard passes it on rather than swallow a fault that is not its own. Three
/// ways: a fault (Rust's stack-overflow handler before softhca's); a fault with a handler
/// installed before softhca's that resets itself (SA_RESETHAND, as crash reporters do: it
/// must run once, and the retried fault then ends the process, not loop back into it);
/// and a SIGBUS sent with kill to a process with the default disposition before softhca's.
/// And an application handler before softhca's that recovers from its own fault is
/// called and leaves softhca's guard in place.
#[test]
fn a_sigbus_elsewhere_still_ends_the_process() {
    use std::os::unix::process::ExitStatusExt;
    use support::child::{ChildProc, ROLE_ENV};
    const ENTRY: &str = "a_sigbus_elsewhere_still_ends_the_process";
    match std::env::var(ROLE_ENV).as_deref() {
        Ok("fault") => stray_fault(false),
        Ok("recovering-handler") => {
            install_sigbus_handler(recover as *const () as usize, libc::SA_SIGINFO);
            let v = Victim::new("recovering-handler");
            let byte = fault_on_a_file_of_our_own();
            support::child::say(&format!("RECOVERED {byte}"));
            drop(v);
            // softhca's guard is still there: a ring truncated now is a corrupt ring.
            truncated_ring_cases(&Watchdog::new("truncated ring after", Duration::from_secs(60)));
            support::child::say("GUARDED");
        }
        Ok("fault-after-reporter") => stray_fault(true),
        Ok("sent") => {
            // As in a C program: no handler before softhca's. (Rust's own, for stack
            // overflows, ignores a SIGBUS that is sent rather than raised by a fault.)
            // SAFETY: restores the default disposition before any handler is installed.
            unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
            let _v = Victim::new("sent-sigbus");
            support::child::say("GUARDED");
            std::thread::sleep(Duration::from_secs(30));
            support::child::say("SURVIVED");
        }
        _ => {
            let ends_by_sigbus = |mut child: ChildProc, what: &str| {
                let deadline = Instant::now() + Duration::from_secs(30);
                let status = loop {
                    if let Some(status) = child.child.try_wait().expect("wait") {
                        break status;
                    }
                    assert!(Instant::now() < deadline, "{what}: still running (looping?)");
                    std::thread::sleep(Duration::from_millis(10));
                };
                // Killed, it left its fabric directory in /dev/shm.
                support::remove_test_fabrics_of(child.pid());
                assert_eq!(status.signal(), Some(libc::SIGBUS), "{what}: {status:?}");
            };
            let mut child = ChildProc::spawn(ENTRY, "fault", &[]);
            child.expect("FAULTING");
            ends_by_sigbus(child, "a plain fault");
            let mut child = ChildProc::spawn(ENTRY, "fault-after-reporter", &[]);
            child.expect("FAULTING");
            child.expect("REPORTED");
            ends_by_sigbus(child, "a fault with a resetting handler before softhca's");
            let mut child = ChildProc::spawn(ENTRY, "recovering-handler", &[]);
            assert_eq!(child.expect("RECOVERED"), "0", "the application's handler mapped zeros");
            child.expect("GUARDED");
            child.finish();
            let mut child = ChildProc::spawn(ENTRY, "sent", &[]);
            child.expect("GUARDED");
            // SAFETY: kill(2) on our own child, alive (it just answered).
            assert_eq!(unsafe { libc::kill(child.pid() as i32, libc::SIGBUS) }, 0);
            ends_by_sigbus(child, "a SIGBUS sent with kill");
        }
    }
}

/// In a child: guards a mapping (the handler is installed), then faults on a file of its
/// own; with `reporter`, after installing a one-shot SIGBUS handler first.
fn stray_fault(reporter: bool) {
    extern "C" fn report(_: libc::c_int) {
        let line = b"@@ REPORTED\n";
        // SAFETY: write(2) is async-signal-safe; the buffer is a static string.
        unsafe { libc::write(1, line.as_ptr().cast(), line.len()) };
    }
    if reporter {
        install_sigbus_handler(report as *const () as usize, libc::SA_RESETHAND);
    }
    let _v = Victim::new("stray-sigbus");
    support::child::say("FAULTING");
    let byte = fault_on_a_file_of_our_own();
    support::child::say(&format!("SURVIVED {byte}"));
}

/// Installs `handler` (an `extern "C"` function of the form `flags` say) for SIGBUS, as an
/// application would before softhca's.
fn install_sigbus_handler(handler: usize, flags: libc::c_int) {
    // SAFETY: a sigaction of plain data naming a live function of the right form.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler;
        action.sa_flags = flags;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()), 0);
    }
}

/// Reads a page of a shared mapping of a file of our own past the file's end: SIGBUS.
fn fault_on_a_file_of_our_own() -> u8 {
    let path = std::env::temp_dir().join(format!("ferrodat-sigbus-{}", std::process::id()));
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path);
    let file = file.expect("a file of our own");
    file.set_len(8192).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: a fresh shared mapping of our own 8 KiB file.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            8192,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    file.set_len(0).unwrap();
    let _ = std::fs::remove_file(&path);
    // SAFETY: deliberately touches a page past the end of the file: SIGBUS.
    unsafe { std::ptr::read_volatile(p.cast::<u8>().add(4096)) }
}

/// An application's SIGBUS handler that recovers: maps a zero page over the faulting one.
extern "C" fn recover(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel's siginfo; mmap over the faulting page of our own file's mapping.
    unsafe {
        let page = ((*info).si_addr() as usize) & !4095;
        libc::mmap(
            page as *mut libc::c_void,
            4096,
            libc::PROT_READ,
            libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
    }
}

/// A registry truncated under this process's mapping reads as zeros (no SIGBUS) and
/// refuses to hand out instances and QPNs that the other processes would never see.
#[test]
fn a_registry_truncated_under_its_mapping_refuses_to_go_on_alone() {
    let _watchdog = Watchdog::new("truncated registry", Duration::from_secs(60));
    let fabric = TestFabric::new("truncated-registry");
    let registry = fabric.dir.open_hca("softhca0", LOCALHOST_GID).expect("registry");
    let instance = registry.register_instance().expect("an instance");
    let qpn = instance.alloc_qpn().expect("a QPN").qpn;
    assert!(!registry.lost());
    open_rw(registry.path()).set_len(4096).expect("truncate the registry");
    // A look past the first page (the QP table) finds zeros, not a SIGBUS.
    assert!(registry.owner_of(qpn).is_none());
    assert!(registry.lost());
    for err in [registry.register_instance().err(), instance.alloc_qpn().err()] {
        let err = err.expect("refused").to_string();
        assert!(err.contains("truncated under this process's mapping"), "{err}");
    }
    assert!(registry.sweep().is_err());
}

/// A request of a kind softhca does not know (6..=15: neither SEND, WRITE, READ nor an
/// atomic) used to be dropped without a word: the responder kept waiting for that PSN, so
/// every later request was dropped as out of sequence and the connection wedged until the
/// requester's timer gave up. As an IB responder must for an unsupported opcode, it now
/// answers NAK invalid request and moves to ERR.
#[test]
fn a_request_of_an_unknown_kind_is_an_invalid_request() {
    for unknown in [6u8, 9, 15] {
        let mut v = Victim::new("unknown-kind");
        v.qp.post_recv(&[(v.region.addr(), 2048, v.region.key)]);
        let psn = rc_attrs().rq_psn;
        v.push(&v.header(unknown, flag::FIRST | flag::LAST | flag::ACK_REQUEST, psn, 0), &[]);
        assert_eq!(v.state(), qp_state::ERR, "kind {unknown}");
        let naks: Vec<_> = v.sent().into_iter().filter(|p| p.kind == kind::NAK).collect();
        assert_eq!(naks.len(), 1, "kind {unknown}: one NAK");
        assert_eq!((naks[0].psn, naks[0].syndrome), (psn, wire::nak::INVALID_REQUEST));
        let wcs = v.cq.wait(&v.engine, 1, Duration::from_secs(5));
        assert_eq!(wcs.len(), 1, "kind {unknown}: the receive is flushed");
        assert_eq!(wcs[0].syndrome, Some(ferrodat_abi::mlx5::cqe_syndrome::WR_FLUSH_ERR));
    }
}

/// A peer that leaves the ring's hint words saying "maybe" without publishing a record —
/// a word where the next record header goes (its tail stays put, the word's epoch tag is
/// not the ring's), an epoch-start word of an epoch its tail never reaches, or a reset
/// that never completes (tail and epoch start in two other epochs) — used to
/// make every progress call find work (10000 of 10000): the ring stayed polled and a
/// progress thread would spin on it for good. Now the consumer checks the tail once a
/// pop found nothing there, so progress goes idle; the QP stays usable.
#[test]
fn hint_words_that_promise_records_never_published_are_not_work_forever() {
    for (i, word) in ["header", "epoch start", "tail and epoch start"].into_iter().enumerate() {
        let mut v = Victim::new("unpublished-word");
        v.qp.post_recv(&[(v.region.addr(), 2048, v.region.key)]);
        v.qp.post_recv(&[(v.region.addr() + 2048, 2048, v.region.key)]);
        let psn = rc_attrs().rq_psn;
        v.push(&v.header(kind::SEND, flag::FIRST | flag::LAST, psn, 8), &[3; 8]);
        assert_eq!(v.cq.wait(&v.engine, 1, Duration::from_secs(5)).len(), 1, "case {i}");
        let file = open_rw(v.out.path());
        let tail = read_u64(&file, ring_layout::OFF_TAIL);
        let position = tail & 0xffff_ffff;
        let mut scribbles = match word {
            "header" => {
                let at = ring_layout::DATA_OFFSET + (position as usize & (v.out.capacity() - 1));
                vec![(at, 0x0bad_0000_0000_0040_u64)]
            }
            "epoch start" => vec![(ring_layout::OFF_EPOCH_START, position | 0x77 << 32)],
            // A reset that never completes: the tail in one new epoch, its start in another.
            _ => vec![
                (ring_layout::OFF_EPOCH_START, position | 0x77 << 32),
                (ring_layout::OFF_TAIL, position | 0x76 << 32),
            ],
        };
        for (at, value) in &mut scribbles {
            let honest = read_u64(&file, *at);
            write_at(&file, *at, &value.to_ne_bytes());
            *value = honest;
        }
        let busy = (0..10_000).filter(|_| v.engine.progress()).count();
        assert!(busy < 100, "case {i} ({word}): progress found work in {busy} of 10000 calls");
        assert_eq!(v.state(), qp_state::RTS, "case {i}");
        // The producer mends its words and goes on: the next SEND arrives.
        for (at, honest) in scribbles {
            write_at(&file, at, &honest.to_ne_bytes());
        }
        v.push(&v.header(kind::SEND, flag::FIRST | flag::LAST, wire::next_psn(psn), 8), &[4; 8]);
        let wcs = v.cq.wait(&v.engine, 1, Duration::from_secs(5));
        assert_eq!(wcs.len(), 1, "case {i}: the next SEND");
        assert_eq!((wcs[0].opcode, wcs[0].byte_cnt), (cqe_opcode::RESP_SEND, 8), "case {i}");
    }
}

/// CPU time (user + system) of this process's thread named `name` so far, at the
/// kernel's clock-tick resolution.
fn thread_cpu_time(name: &str) -> Duration {
    let ticks = (|| {
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            // The kernel keeps the first 15 bytes of a thread's name.
            if comm.trim() != &name[..name.len().min(15)] {
                continue;
            }
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            // After the parenthesised command: utime is field 14, stime 15.
            let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
            return Some(fields[11].parse::<u64>().ok()? + fields[12].parse::<u64>().ok()?);
        }
        None
    })()
    .unwrap_or_else(|| panic!("no thread named {name} in this process"));
    // SAFETY: sysconf only reads a configuration value.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

/// A peer that sends RDMA READ requests and then stops reading its inbound ring (stuck,
/// stopped in a debugger, or hostile) leaves the responder's READ data waiting for ring
/// space. The progress thread used to look every millisecond and spin 2000 passes in
/// between, for as long as the peer did not read: 63% of a core, for good. After 200 ms
/// without a read it now backs off to sleeps of up to 16 ms (under 10 ms of CPU a second),
/// and once the peer reads again every READ is answered in full, byte for byte.
#[test]
fn a_peer_that_stops_reading_costs_no_spinning_cpu_and_is_served_when_it_reads_again() {
    const READS: usize = 40;
    let mut v = Victim::new("stops-reading");
    let pattern: Vec<u8> = (0..THIRD).map(|i| (i * 13 + 5) as u8).collect();
    v.region.buf.write(THIRD, &pattern);
    v.engine.start_progress_thread().expect("progress thread");
    let mut psn = rc_attrs().rq_psn;
    for _ in 0..READS {
        let mut h = v.header(kind::READ, flag::FIRST | flag::LAST, psn, 0);
        h.length = THIRD as u64;
        v.out.try_push(u16::from(h.kind), h.as_bytes(), &[]).expect("room for the request");
        psn = wire::next_psn(psn);
    }
    v.notifier.notify();
    // Well past the back-off's start (200 ms without a read by the peer), measure.
    std::thread::sleep(Duration::from_millis(1500));
    // (The progress thread's own CPU time: the tests beside this one run in parallel.)
    let thread = "softhca-softhca0";
    let (before, started) = (thread_cpu_time(thread), Instant::now());
    std::thread::sleep(Duration::from_millis(500));
    let (spent, took) = (thread_cpu_time(thread) - before, started.elapsed());
    eprintln!("waiting on a peer that does not read: {spent:?} of CPU in {took:?}");
    assert!(spent < Duration::from_millis(50), "{spent:?} of CPU in {took:?}: spinning");
    assert_eq!(v.state(), qp_state::RTS);
    // The peer reads again: every READ is answered, in order, with the right bytes.
    let until = Instant::now() + Duration::from_secs(10);
    let (mut answered, mut next_offset) = (0usize, 0u64);
    while answered < READS {
        assert!(Instant::now() < until, "only {answered} of {READS} READs answered");
        let Some(record) = v.back.pop().expect("the victim's ring is well formed") else {
            std::thread::yield_now();
            continue;
        };
        let h = packet_of(record.kind, &record.bytes, v.qp.qpn).expect("a packet");
        assert_eq!(h.kind, kind::READ_RESPONSE, "{h:?}");
        assert_eq!(h.offset, next_offset, "READ {answered}: segments in order");
        let payload = &record.bytes[size_of::<PacketHeader>()..];
        let at = h.offset as usize;
        assert_eq!(payload, &pattern[at..at + payload.len()], "READ {answered}: its bytes");
        next_offset += payload.len() as u64;
        if h.flags & flag::LAST != 0 {
            assert_eq!(next_offset, THIRD as u64, "READ {answered}: its whole length");
            answered += 1;
            next_offset = 0;
        }
    }
    v.engine.stop_progress_thread();
}
