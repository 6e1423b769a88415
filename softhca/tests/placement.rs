//! One-sided placement: RDMA WRITEs into a region registered from a shared file mapping
//! are copied by the requester straight into it, and RDMA READs straight out of it
//! (`hca/placement.rs`, `fabric/memory_export.rs`), with the semantics of a request
//! through the ring: the same completions, the same errors, nothing written or read where
//! the responder would refuse it, and no request placed before an earlier one is done at
//! the responder.

mod support;

use ferrodat_abi::mlx5::{cqe_opcode, cqe_syndrome};
use ferrodat_abi::uverbs::{access, qp_state};
use ferrodat_softhca::fabric::{ImportedMemory, PlaceError};
use ferrodat_softhca::hca::engine::Engine;
use ferrodat_softhca::hca::queue_pair::QpAttributes;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use support::*;

const WAIT: Duration = Duration::from_secs(10);
const REGION: usize = 2 << 20;

fn pattern(seed: u32, len: usize) -> Vec<u8> {
    (0..len as u32).map(|i| (i.wrapping_mul(2654435761).wrapping_add(seed) >> 11) as u8).collect()
}

/// Posts `wr` on A and returns its completion.
fn post_and_wait(p: &mut Pair, wr: &SendWr) -> Wc {
    p.a.post_send(&p.engine, wr);
    let got = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(got.len(), 1, "no completion for {wr:?}");
    got[0]
}

#[test]
fn a_write_into_a_shared_region_is_placed_and_completes() {
    let mut p = pair("place-ok", rc_attrs());
    let source = Mr::new(&p.engine, p.pdn, 1 << 20, ALL_ACCESS);
    let data = pattern(3, 1 << 20);
    source.buf.write(0, &data);
    let target = SharedMr::new(&p.engine, p.pdn, REGION, ALL_ACCESS);
    target.fill(0xee);
    assert!(p.engine.is_exported(target.key >> 8));
    let before = p.engine.placed_writes();

    // Two SGEs, to 4096 bytes into the region.
    let half = 1u32 << 19;
    let wr = write_wr(
        vec![
            (source.addr(), half, source.key),
            (source.addr() + u64::from(half), half, source.key),
        ],
        (target.addr + 4096, target.key),
    );
    let wc = post_and_wait(&mut p, &wr);
    assert_eq!((wc.opcode, wc.syndrome), (cqe_opcode::REQ, None));
    assert_eq!(p.engine.placed_writes(), before + 1, "the WRITE was placed, not sent");
    assert_eq!(target.read(4096, 1 << 20), data);
    assert!(target.read(0, 4096).iter().all(|&b| b == 0xee), "bytes before the range");
    assert!(target.read(4096 + (1 << 20), 4096).iter().all(|&b| b == 0xee), "bytes after it");

    // A small WRITE (here inline) goes through the ring: below PLACE_MIN_BYTES placing
    // costs more than the responder's copy.
    let mut inline = write_wr(vec![], (target.addr, target.key));
    inline.inline = Some(b"inline bytes".to_vec());
    assert_eq!(post_and_wait(&mut p, &inline).syndrome, None);
    assert_eq!(target.read(0, 12), b"inline bytes");
    assert_eq!(p.engine.placed_writes(), before + 1);
    // Many WRITEs in a row, more than the ring holds in payload.
    for i in 0..64u64 {
        let mut wr = write_wr(
            vec![(source.addr(), 64 << 10, source.key)],
            (target.addr + i * 16384, target.key),
        );
        wr.signaled = i == 63;
        p.a.post_send(&p.engine, &wr);
    }
    let got = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].syndrome, None);
    assert_eq!(target.read(63 * 16384, 64 << 10), data[..64 << 10]);
    assert_eq!(p.engine.placed_writes(), before + 1 + 64);
}

/// The ways the responder refuses a request, for the remote right it needs.
#[derive(Clone, Copy)]
enum Refusal {
    PastTheEnd,
    KeyWithoutRight,
    RegionInAnotherPd,
    QpWithoutRight,
    Deregistered,
}

/// A fresh pair (a refused request ends the connection) set up for `case` of a request
/// needing `right`: A's 8 KiB buffer (0x11), B's 64 KiB shared region (0x22, registered
/// but not yet deregistered for [`Refusal::Deregistered`]), and the remote address to use.
fn refused(tag: &str, right: u32, case: Refusal) -> (Pair, Mr, SharedMr, u64) {
    let mut attrs = rc_attrs();
    if matches!(case, Refusal::QpWithoutRight) {
        attrs.access_flags &= !right;
    }
    let p = pair(tag, attrs);
    let local = Mr::new(&p.engine, p.pdn, 8192, ALL_ACCESS);
    local.buf.fill(0x11);
    let (pdn, rights) = match case {
        Refusal::RegionInAnotherPd => (p.engine.registry().alloc_pdn(), ALL_ACCESS),
        Refusal::KeyWithoutRight => (p.pdn, ALL_ACCESS & !right),
        _ => (p.pdn, ALL_ACCESS),
    };
    let region = SharedMr::new(&p.engine, pdn, 64 << 10, rights);
    region.fill(0x22);
    let addr = match case {
        Refusal::PastTheEnd => region.addr + (64 << 10) - 100,
        _ => region.addr,
    };
    (p, local, region, addr)
}

/// Each case on a fresh pair (a failed WRITE ends the connection): the WRITE fails with the
/// syndrome the responder gives it through the ring, and the region keeps its bytes.
#[test]
fn writes_the_responder_would_refuse_are_not_placed_and_touch_nothing() {
    for case in [
        Refusal::PastTheEnd,
        Refusal::KeyWithoutRight,
        Refusal::RegionInAnotherPd,
        Refusal::QpWithoutRight,
    ] {
        let (mut p, source, target, addr) = refused("place-refused", access::REMOTE_WRITE, case);
        let before = p.engine.placed_writes();
        let wc = post_and_wait(
            &mut p,
            &write_wr(vec![(source.addr(), 8192, source.key)], (addr, target.key)),
        );
        assert_eq!(wc.syndrome, Some(cqe_syndrome::REMOTE_ACCESS_ERR));
        assert_eq!(p.engine.placed_writes(), before);
        assert!(target.read(0, 64 << 10).iter().all(|&b| b == 0x22), "the region was written");
    }
}

/// A pair whose A has placed one WRITE of `len` bytes of `byte` into a 64 KiB shared
/// region of B's: the pair, A's source, the region and the WRITE.
fn placed_once(tag: &str, len: usize, byte: u8) -> (Pair, Mr, SharedMr, SendWr) {
    placed_once_with(tag, rc_attrs(), len, byte)
}

/// [`placed_once`] with QP attributes `attrs`.
fn placed_once_with(
    tag: &str,
    attrs: QpAttributes,
    len: usize,
    byte: u8,
) -> (Pair, Mr, SharedMr, SendWr) {
    let mut p = pair(tag, attrs);
    let source = Mr::new(&p.engine, p.pdn, len, ALL_ACCESS);
    source.buf.fill(byte);
    let target = SharedMr::new(&p.engine, p.pdn, 64 << 10, ALL_ACCESS);
    let wr = write_wr(vec![(source.addr(), len as u32, source.key)], (target.addr, target.key));
    assert_eq!(post_and_wait(&mut p, &wr).syndrome, None);
    assert_eq!(p.engine.placed_writes(), 1);
    (p, source, target, wr)
}

#[test]
fn a_deregistered_region_takes_no_more_writes() {
    let (mut p, _source, target, wr) = placed_once("place-dereg", 4096, 0x33);

    // DEREG_MR: the export goes (file included); the mapping stays, to look at.
    p.engine.remove_memory_region(target.key >> 8);
    assert!(!p.engine.is_exported(target.key >> 8));
    assert!(!p.engine.registry().export_path(target.key >> 8).exists());
    target.fill(0x44);
    let wc = post_and_wait(&mut p, &wr);
    assert_eq!(wc.syndrome, Some(cqe_syndrome::REMOTE_ACCESS_ERR));
    assert_eq!(p.engine.placed_writes(), 1);
    assert!(target.read(0, 64 << 10).iter().all(|&b| b == 0x44), "written after DEREG_MR");
}

/// A connected pair whose requesters retry RNR NAKs for ever, at the shortest timer: a
/// SEND waits for its receive as long as a test takes to post it.
fn patient_pair(tag: &str) -> Pair {
    let mut attrs = rc_attrs();
    attrs.rnr_retry = 7;
    attrs.min_rnr_timer = 1;
    pair(tag, attrs)
}

/// Posts the receive `b` waits for, then waits for its completion and for `a`'s two: the
/// SEND's and the request behind it, both successful.
fn receive_the_waiting_send(p: &mut Pair, recv_buf: &Mr) {
    p.b.post_recv(&[(recv_buf.addr(), 4096, recv_buf.key)]);
    let got = p.cq_b.wait(&p.engine, 1, WAIT);
    assert_eq!(got[0].opcode, cqe_opcode::RESP_SEND);
    let got = p.cq_a.wait(&p.engine, 2, WAIT);
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|w| w.syndrome.is_none()));
}

#[test]
fn a_write_behind_an_unfinished_send_lands_after_it() {
    let mut p = patient_pair("place-order");
    let source = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    source.buf.fill(0x55);
    let recv_buf = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let target = SharedMr::new(&p.engine, p.pdn, 64 << 10, ALL_ACCESS);

    // B has no receive: the SEND is RNR-NAKed and retried; the WRITE behind it must wait.
    let mut sendwr = send(vec![(source.addr(), 64, source.key)]);
    sendwr.signaled = true;
    p.a.post_send(&p.engine, &sendwr);
    p.a.post_send(
        &p.engine,
        &write_wr(vec![(source.addr(), 4096, source.key)], (target.addr, target.key)),
    );
    let deadline = std::time::Instant::now() + Duration::from_millis(50);
    while std::time::Instant::now() < deadline {
        p.engine.progress();
        assert!(p.cq_a.poll_one().is_none(), "nothing completes while the SEND waits");
        assert!(target.read(0, 4096).iter().all(|&b| b == 0), "the WRITE landed before the SEND");
    }
    receive_the_waiting_send(&mut p, &recv_buf);
    assert_eq!(target.read(0, 4096), vec![0x55; 4096]);
}

#[test]
fn withdrawal_waits_for_a_placement_in_progress() {
    let p = pair("place-withdraw", rc_attrs());
    let target = SharedMr::new(&p.engine, p.pdn, 8192, ALL_ACCESS);
    let me = std::process::id();
    let import = ImportedMemory::open(p.engine.registry(), target.key, me)
        .unwrap()
        .expect("the region is exported");
    assert_eq!(import.region().length, 8192);
    assert_eq!(import.claim(target.addr + 8000, 193).err(), Some(PlaceError::OutOfRange));
    assert_eq!(import.claim(target.addr - 1, 1).err(), Some(PlaceError::OutOfRange));
    assert!(
        ImportedMemory::open(p.engine.registry(), target.key ^ 1, me).unwrap().is_none(),
        "another variant"
    );

    let placement = import.claim(target.addr + 100, 5).expect("live region");
    let withdrawn = Arc::new(AtomicBool::new(false));
    let engine = p.engine.clone();
    let (done, index) = (withdrawn.clone(), target.key >> 8);
    let dereg = std::thread::spawn(move || {
        engine.remove_memory_region(index);
        done.store(true, Ordering::SeqCst);
    });
    std::thread::sleep(Duration::from_millis(100));
    assert!(!withdrawn.load(Ordering::SeqCst), "DEREG_MR returned during a placement");
    placement.write(|map, at| map.copy_in(at, b"hello").ok()).unwrap();
    dereg.join().unwrap();
    assert!(withdrawn.load(Ordering::SeqCst));
    assert_eq!(target.read(100, 5), b"hello");
    assert_eq!(import.claim(target.addr, 1).err(), Some(PlaceError::Withdrawn));
    assert!(ImportedMemory::open(p.engine.registry(), target.key, me).unwrap().is_none());
}

#[test]
fn the_sweep_removes_exports_of_gone_processes_only() {
    let p = pair("place-sweep", rc_attrs());
    let live = SharedMr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    // An export file left by a process that exited.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone_pid = child.id();
    child.wait().unwrap();
    let stale = p.engine.registry().export_path(0x00ab_cdef);
    let mut bytes = vec![0u8; ferrodat_softhca::fabric::layout::export::TOTAL_BYTES];
    use ferrodat_softhca::fabric::layout::export as lay;
    bytes[lay::OFF_MAGIC..lay::OFF_MAGIC + 8].copy_from_slice(&lay::MAGIC.to_ne_bytes());
    bytes[lay::OFF_EXPORTER_PID..lay::OFF_EXPORTER_PID + 8]
        .copy_from_slice(&u64::from(gone_pid).to_ne_bytes());
    std::fs::write(&stale, &bytes).unwrap();
    p.engine.registry().sweep().unwrap();
    assert!(!stale.exists(), "a gone exporter's file stays");
    assert!(p.engine.registry().export_path(live.key >> 8).exists(), "a live export was swept");
}

/// Writes an export file for key `key` naming `pid`'s descriptor `fd` (of the file with
/// `meta`), a region of `len` bytes at iova 0x10000: what a peer could write.
fn craft_export(engine: &Engine, key: u32, pid: u32, fd: i32, meta: &std::fs::Metadata, len: u64) {
    use ferrodat_softhca::fabric::layout::export as lay;
    use std::os::unix::fs::MetadataExt;
    let mut bytes = vec![0u8; lay::TOTAL_BYTES];
    let mut put = |off: usize, v: &[u8]| bytes[off..off + v.len()].copy_from_slice(v);
    put(lay::OFF_MAGIC, &lay::MAGIC.to_ne_bytes());
    put(lay::OFF_VERSION, &lay::VERSION.to_ne_bytes());
    put(lay::OFF_KEY, &key.to_ne_bytes());
    put(lay::OFF_PDN, &1u32.to_ne_bytes());
    put(lay::OFF_ACCESS, &ALL_ACCESS.to_ne_bytes());
    put(lay::OFF_IOVA, &0x10000u64.to_ne_bytes());
    put(lay::OFF_LENGTH, &len.to_ne_bytes());
    put(lay::OFF_EXPORTER_PID, &u64::from(pid).to_ne_bytes());
    put(lay::OFF_FD, &(fd as u64).to_ne_bytes());
    put(lay::OFF_DEV, &meta.dev().to_ne_bytes());
    put(lay::OFF_INO, &meta.ino().to_ne_bytes());
    put(lay::OFF_LIVE, &u64::from(key).to_ne_bytes());
    let path = engine.registry().export_path(key >> 8);
    std::fs::write(&path, &bytes).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Root: acting as another user (user nobody) needs it; CI runs as root.
fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: acting as another user needs root (CI runs as root)");
    }
    root
}

/// A process of another user could name, through its descriptor, a file it may only read,
/// and /proc would let a requester running as root open it read-write: exports of other
/// users' processes, export files and backing files of other users, and exports naming
/// another process than the peer QP's are refused.
#[test]
fn exports_of_other_users_and_processes_are_refused() {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    if !root() {
        return;
    }
    let p = pair("place-users", rc_attrs());
    let victim = std::env::temp_dir().join(format!("ferrodat-place-users-{}", std::process::id()));
    std::fs::write(&victim, vec![0u8; 8192]).unwrap();
    let me = std::process::id();

    // An exporter of another user (nobody), naming its stdin, the victim file.
    let mut other = std::process::Command::new("sleep")
        .arg("10")
        .stdin(std::fs::File::open(&victim).unwrap())
        .uid(65534)
        .spawn()
        .unwrap();
    let meta = std::fs::metadata(&victim).unwrap();
    let key = 0x0012_3401;
    craft_export(&p.engine, key, other.id(), 0, &meta, 8192);
    let e = ImportedMemory::open(p.engine.registry(), key, other.id()).unwrap_err();
    assert!(e.to_string().contains("another user"), "{e}");
    other.kill().unwrap();
    other.wait().unwrap();

    // Our own process, but a backing file owned by nobody.
    std::os::unix::fs::chown(&victim, Some(65534), Some(65534)).unwrap();
    let file = std::fs::OpenOptions::new().read(true).write(true).open(&victim).unwrap();
    let key = 0x0012_3501;
    let meta = file.metadata().unwrap();
    craft_export(&p.engine, key, me, file.as_raw_fd(), &meta, 8192);
    let e = ImportedMemory::open(p.engine.registry(), key, me).unwrap_err();
    assert!(e.to_string().contains("belongs to user 65534"), "{e}");
    // SAFETY: geteuid has no preconditions.
    std::os::unix::fs::chown(&victim, Some(unsafe { libc::geteuid() }), None).unwrap();
    assert!(ImportedMemory::open(p.engine.registry(), key, me).unwrap().is_some(), "our own file");

    // An export that names another process than the peer QP's owner.
    let e = ImportedMemory::open(p.engine.registry(), key, me + 1).unwrap_err();
    assert!(e.to_string().contains("not by the peer QP's"), "{e}");

    // An export file others may write.
    let path = p.engine.registry().export_path(key >> 8);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o622)).unwrap();
    let e = ImportedMemory::open(p.engine.registry(), key, me).unwrap_err();
    assert!(e.to_string().contains("only it can write"), "{e}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();

    // An export file another user wrote (the directory may be writable by others).
    std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
    let e = ImportedMemory::open(p.engine.registry(), key, me).unwrap_err();
    assert!(e.to_string().contains("not a regular file of user"), "{e}");
    // ... or a link to an export file elsewhere (valid in itself).
    std::os::unix::fs::chown(&path, Some(unsafe { libc::geteuid() }), None).unwrap();
    assert!(ImportedMemory::open(p.engine.registry(), key, me).unwrap().is_some());
    let elsewhere = std::env::temp_dir().join(format!("ferrodat-place-link-{me}"));
    std::fs::copy(&path, &elsewhere).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    let e = ImportedMemory::open(p.engine.registry(), key, me).unwrap_err();
    assert!(e.to_string().contains("open (export)"), "followed a symlink: {e}");
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(&elsewhere).unwrap();
    std::fs::remove_file(&victim).unwrap();
}

/// Once the peer destroyed its QP, WRITEs through it land nowhere, as through the ring
/// (the peer's memory may already serve someone else).
#[test]
fn a_destroyed_peer_qp_takes_no_placements() {
    let (mut p, _source, target, wr) = placed_once("place-destroyed", 8192, 0x66);
    target.fill(0);
    p.engine.remove_qp(p.b.qpn);
    p.a.post_send(&p.engine, &wr);
    for _ in 0..1000 {
        p.engine.progress();
    }
    assert_eq!(p.engine.placed_writes(), 1, "placed through a destroyed QP");
    assert!(
        target.read(0, 64 << 10).iter().all(|&b| b == 0),
        "the destroyed QP's memory was written"
    );
}

/// A region withdrawn while a requester still has it open is unmapped there when the
/// requester opens another: its memory is not kept alive by the cache.
#[test]
fn withdrawn_regions_do_not_stay_mapped() {
    // Mappings of one memfd, by device and inode (other tests run in this process
    // meanwhile).
    let mappings_of = |(major, minor, inode): (u64, u64, u64)| {
        let want = (format!("{major:02x}:{minor:02x}"), inode.to_string());
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter(|l| {
                let f: Vec<&str> = l.split_ascii_whitespace().collect();
                f.len() > 4 && f[3] == want.0 && f[4] == want.1
            })
            .count()
    };
    let mut p = pair("place-unmap", rc_attrs());
    let source = Mr::new(&p.engine, p.pdn, 8192, ALL_ACCESS);
    let first = SharedMr::new(&p.engine, p.pdn, 64 << 10, ALL_ACCESS);
    let inode = first.file_id();
    let wr = write_wr(vec![(source.addr(), 8192, source.key)], (first.addr, first.key));
    assert_eq!(post_and_wait(&mut p, &wr).syndrome, None);
    assert_eq!(mappings_of(inode), 2, "ours and the requester's");
    drop(first); // DEREG_MR, munmap, close
    assert_eq!(mappings_of(inode), 1, "the requester's");
    let second = SharedMr::new(&p.engine, p.pdn, 64 << 10, ALL_ACCESS);
    let wr = write_wr(vec![(source.addr(), 8192, source.key)], (second.addr, second.key));
    assert_eq!(post_and_wait(&mut p, &wr).syndrome, None);
    assert_eq!(p.engine.placed_writes(), 2);
    assert_eq!(mappings_of(inode), 0, "the withdrawn region is still mapped");
}

/// A WRITE larger than a placement chunk is placed over several passes, its header with
/// the last: the data arrives whole and the completion comes after it.
#[test]
fn a_write_larger_than_a_chunk_is_placed_in_pieces() {
    let mut p = pair("place-chunks", rc_attrs());
    let len = 3 * (1 << 20) + 12_345;
    let source = Mr::new(&p.engine, p.pdn, len, ALL_ACCESS);
    let data = pattern(5, len);
    source.buf.write(0, &data);
    let target = SharedMr::new(&p.engine, p.pdn, 4 << 20, ALL_ACCESS);
    let wr = write_wr(vec![(source.addr(), len as u32, source.key)], (target.addr + 7, target.key));
    assert_eq!(post_and_wait(&mut p, &wr).syndrome, None);
    assert_eq!(p.engine.placed_writes(), 1);
    assert_eq!(target.read(7, len), data);
}

/// Posts a WRITE of three chunks and a page from A into B's region; the doorbell places
/// the first chunks (one per transmit: two), the progress passes of the wait the rest.
/// Returns its completion, after `between` ran with the doorbell's chunks placed.
fn chunked_write(
    p: &mut Pair,
    remote_offset: u64,
    region: usize,
    between: impl FnOnce(&Pair, &SharedMr),
) -> (Wc, SharedMr) {
    let len = 3 * (1 << 20) + 4096;
    let source = Mr::new(&p.engine, p.pdn, len, ALL_ACCESS);
    source.buf.fill(0x77);
    let target = SharedMr::new(&p.engine, p.pdn, region, ALL_ACCESS);
    let wr = write_wr(
        vec![(source.addr(), len as u32, source.key)],
        (target.addr + remote_offset, target.key),
    );
    p.a.post_send(&p.engine, &wr);
    between(p, &target);
    let got = p.cq_a.wait(&p.engine, 1, WAIT);
    assert_eq!(got.len(), 1, "the chunked WRITE never completed");
    (got[0], target)
}

#[test]
fn a_peer_qp_in_error_between_chunks_fails_the_write_without_hanging() {
    let mut p = pair("place-chunk-err", rc_attrs());
    let attrs = QpAttributes { dest_qpn: p.a.qpn, dgid: LOCALHOST_GID, ..rc_attrs() };
    let mut placed_before = 0;
    let (wc, target) = chunked_write(&mut p, 0, 4 << 20, |p, target| {
        placed_before = target.read(0, 4 << 20).iter().take_while(|&&b| b == 0x77).count();
        p.engine.modify_qp(p.b.qpn, qp_state::ERR, attrs);
    });
    assert!(placed_before > 0 && placed_before < 3 * (1 << 20) + 4096, "not between chunks");
    assert_eq!(wc.syndrome, Some(cqe_syndrome::REMOTE_ACCESS_ERR));
    assert_eq!(p.engine.placed_writes(), 0);
    assert!(
        target.read(placed_before, 4096).iter().all(|&b| b == 0),
        "placed after the peer's ERR"
    );
}

#[test]
fn a_peer_qp_draining_between_chunks_still_takes_the_write() {
    let mut p = pair("place-chunk-sqd", rc_attrs());
    let attrs = QpAttributes { dest_qpn: p.a.qpn, dgid: LOCALHOST_GID, ..rc_attrs() };
    let (wc, target) = chunked_write(&mut p, 0, 4 << 20, |p, _| {
        p.engine.modify_qp(p.b.qpn, qp_state::SQD, attrs);
    });
    assert_eq!(wc.syndrome, None, "SQD takes requests, on the ring path too");
    assert_eq!(p.engine.placed_writes(), 1);
    assert!(target.read(0, 3 * (1 << 20) + 4096).iter().all(|&b| b == 0x77));
}

#[test]
fn a_chunked_write_past_the_region_writes_nothing() {
    let mut p = pair("place-chunk-end", rc_attrs());
    let (wc, target) = chunked_write(&mut p, 4096, 3 << 20, |_, _| {});
    assert_eq!(wc.syndrome, Some(cqe_syndrome::REMOTE_ACCESS_ERR));
    assert_eq!(p.engine.placed_writes(), 0);
    assert!(target.read(0, 3 << 20).iter().all(|&b| b == 0), "wrote the part that fits");
}

/// A peer QP that reconnected (RESET to RTS again, a new ring epoch) is another
/// connection: WRITEs of the old one land nowhere, as through the ring (whose responder
/// drops them as out of sequence), whether the reconnect came before a WRITE or between
/// two of its chunks.
#[test]
fn a_reconnected_peer_qp_takes_no_placements_of_the_old_connection() {
    let mut attrs = rc_attrs();
    attrs.timeout = 10; // ~4 ms
    attrs.retry_cnt = 1;
    let reconnect = |p: &Pair| {
        let b_attrs =
            QpAttributes { dest_qpn: p.a.qpn, dgid: LOCALHOST_GID, rq_psn: 0x1234, ..attrs };
        p.engine.modify_qp(p.b.qpn, qp_state::ERR, b_attrs);
        p.engine.modify_qp(p.b.qpn, qp_state::RESET, b_attrs);
        p.b.connect(&p.engine, LOCALHOST_GID, p.a.qpn, QpAttributes { rq_psn: 0x1234, ..attrs });
    };

    // Before a WRITE.
    let (mut p, _source, target, wr) = placed_once_with("place-reconnect", attrs, 8192, 0x99);
    target.fill(0);
    reconnect(&p);
    let wc = post_and_wait(&mut p, &wr);
    assert!(wc.syndrome.is_some(), "the old connection's WRITE completed");
    assert_eq!(p.engine.placed_writes(), 1, "placed into the new connection");
    assert!(
        target.read(0, 64 << 10).iter().all(|&b| b == 0),
        "the reconnected QP's memory was written"
    );

    // Between two chunks (after one WRITE placed into this connection).
    let mut p = pair("place-reconnect-chunks", attrs);
    let first = SharedMr::new(&p.engine, p.pdn, 64 << 10, ALL_ACCESS);
    let small = Mr::new(&p.engine, p.pdn, 8192, ALL_ACCESS);
    let wr = write_wr(vec![(small.addr(), 8192, small.key)], (first.addr, first.key));
    assert_eq!(post_and_wait(&mut p, &wr).syndrome, None);
    let mut placed_before = 0;
    let (wc, target) = chunked_write(&mut p, 0, 4 << 20, |p, target| {
        placed_before = target.read(0, 4 << 20).iter().take_while(|&&b| b == 0x77).count();
        reconnect(p);
    });
    assert!(placed_before > 0 && placed_before < 3 * (1 << 20) + 4096, "not between chunks");
    assert!(wc.syndrome.is_some(), "completed across a reconnect");
    assert!(target.read(placed_before, 4096).iter().all(|&b| b == 0), "placed after the reconnect");
}

/// A progress thread asleep when a WRITE starts being placed is woken for its later
/// chunks: the application, polling its CQ without driving progress itself, gets the
/// completion without waiting out the thread's idle sleep (up to a second).
#[test]
fn a_sleeping_progress_thread_is_woken_for_the_rest_of_a_placed_write() {
    let mut p = pair("place-sleepy", rc_attrs());
    p.engine.start_progress_thread().unwrap();
    let len = 3 * (1 << 20) + 4096;
    let source = Mr::new(&p.engine, p.pdn, len, ALL_ACCESS);
    let target = SharedMr::new(&p.engine, p.pdn, 4 << 20, ALL_ACCESS);
    std::thread::sleep(Duration::from_millis(300)); // the thread goes to sleep
    let wr = write_wr(vec![(source.addr(), len as u32, source.key)], (target.addr, target.key));
    let start = std::time::Instant::now();
    p.a.post_send(&p.engine, &wr);
    let wc = loop {
        if let Some(wc) = p.cq_a.poll_one() {
            break wc;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no completion");
        std::thread::yield_now();
    };
    let took = start.elapsed();
    p.engine.stop_progress_thread();
    assert_eq!(wc.syndrome, None);
    assert_eq!(p.engine.placed_writes(), 1);
    assert!(took < Duration::from_millis(400), "took {took:?}: the progress thread slept on");
}

#[test]
fn a_read_from_a_shared_region_is_placed_and_completes() {
    let mut p = pair("place-read", rc_attrs());
    // 1.5 MiB: two chunks (PLACE_CHUNK_BYTES is 1 MiB).
    const LEN: usize = 3 << 19;
    let source = SharedMr::new(&p.engine, p.pdn, REGION, ALL_ACCESS);
    let data = pattern(7, REGION);
    source.write(0, &data);
    let sink = Mr::new(&p.engine, p.pdn, LEN + 8192, ALL_ACCESS);
    sink.buf.fill(0xee);
    let before = p.engine.placed_reads();

    // Two SGEs, 4096 bytes into the sink, from 4096 bytes into the region.
    let first = 1u32 << 20;
    let wr = read_wr(
        vec![
            (sink.addr() + 4096, first, sink.key),
            (sink.addr() + 4096 + u64::from(first), LEN as u32 - first, sink.key),
        ],
        (source.addr + 4096, source.key),
    );
    let wc = post_and_wait(&mut p, &wr);
    assert_eq!((wc.opcode, wc.syndrome, wc.byte_cnt), (cqe_opcode::REQ, None, LEN as u32));
    assert_eq!(p.engine.placed_reads(), before + 1, "the READ was placed, not sent");
    assert!(sink.buf.read(4096, LEN) == data[4096..4096 + LEN], "the READ's bytes");
    assert!(sink.buf.read(0, 4096).iter().all(|&b| b == 0xee), "bytes before the range");
    assert!(sink.buf.read(4096 + LEN, 4096).iter().all(|&b| b == 0xee), "bytes after it");

    // A small READ goes through the ring (below PLACE_MIN_BYTES), with the same result.
    let small = read_wr(vec![(sink.addr(), 512, sink.key)], (source.addr + 100, source.key));
    assert_eq!(post_and_wait(&mut p, &small).syndrome, None);
    assert_eq!(sink.buf.read(0, 512), data[100..612]);
    assert_eq!(p.engine.placed_reads(), before + 1);
    // WRITEs and READs of what they wrote, in a row, all placed, completing in order: each
    // READ follows a placed WRITE, so it is placed too, and sees its bytes.
    let staging = Mr::new(&p.engine, p.pdn, 8 << 16, ALL_ACCESS);
    let written = pattern(8, 8 << 16);
    staging.buf.write(0, &written);
    let writes_before = p.engine.placed_writes();
    for k in 0..8u64 {
        let at = (1 << 20) + k * 65536;
        let mut write = write_wr(
            vec![(staging.addr() + k * 65536, 64 << 10, staging.key)],
            (source.addr + at, source.key),
        );
        let mut read = read_wr(
            vec![(sink.addr() + k * 65536, 64 << 10, sink.key)],
            (source.addr + at, source.key),
        );
        (write.signaled, read.signaled) = (true, true);
        p.a.post_send(&p.engine, &write);
        p.a.post_send(&p.engine, &read);
    }
    let got = p.cq_a.wait(&p.engine, 16, WAIT);
    assert_eq!(got.len(), 16);
    assert!(got.iter().all(|w| w.syndrome.is_none()), "{got:?}");
    let counters: Vec<u16> = got.iter().map(|w| w.wqe_counter).collect();
    assert!(counters.windows(2).all(|w| w[0] < w[1]), "completions in order: {counters:?}");
    assert!(sink.buf.read(0, 8 << 16) == written, "each READ saw the WRITE before it");
    assert_eq!(p.engine.placed_writes(), writes_before + 8);
    assert_eq!(p.engine.placed_reads(), before + 1 + 8);

    // A region that grants REMOTE_READ only is exported too, for READs.
    let read_only = SharedMr::new(&p.engine, p.pdn, 64 << 10, access::REMOTE_READ);
    read_only.fill(0x3c);
    assert!(p.engine.is_exported(read_only.key >> 8));
    let wr = read_wr(vec![(sink.addr(), 64 << 10, sink.key)], (read_only.addr, read_only.key));
    assert_eq!(post_and_wait(&mut p, &wr).syndrome, None);
    assert!(sink.buf.read(0, 64 << 10).iter().all(|&b| b == 0x3c));
    assert_eq!(p.engine.placed_reads(), before + 1 + 8 + 1);
}

/// Each case on a fresh pair (a failed READ ends the connection): the READ fails with the
/// syndrome the responder gives it through the ring, and the local buffer keeps its bytes.
#[test]
fn reads_the_responder_would_refuse_are_not_placed_and_read_nothing() {
    for case in [
        Refusal::PastTheEnd,
        // Still exported: it grants REMOTE_WRITE.
        Refusal::KeyWithoutRight,
        Refusal::RegionInAnotherPd,
        Refusal::QpWithoutRight,
        Refusal::Deregistered,
    ] {
        let (mut p, sink, source, addr) = refused("place-read-refused", access::REMOTE_READ, case);
        assert!(p.engine.is_exported(source.key >> 8));
        if matches!(case, Refusal::Deregistered) {
            p.engine.remove_memory_region(source.key >> 8);
        }
        let wc = post_and_wait(
            &mut p,
            &read_wr(vec![(sink.addr(), 8192, sink.key)], (addr, source.key)),
        );
        assert_eq!(wc.syndrome, Some(cqe_syndrome::REMOTE_ACCESS_ERR));
        assert_eq!(p.engine.placed_reads(), 0);
        assert!(sink.buf.read(0, 8192).iter().all(|&b| b == 0x11), "bytes were read");
    }
}

/// A READ behind a SEND still waiting for its receive is not placed: the responder takes
/// requests in order, so the READ sees the region as it is when the SEND has arrived, not
/// as it was when the READ was posted.
#[test]
fn a_read_behind_an_unfinished_send_reads_after_it() {
    let mut p = patient_pair("place-read-order");
    let message = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let recv_buf = Mr::new(&p.engine, p.pdn, 4096, ALL_ACCESS);
    let sink = Mr::new(&p.engine, p.pdn, 8192, ALL_ACCESS);
    let source = SharedMr::new(&p.engine, p.pdn, 64 << 10, ALL_ACCESS);
    source.fill(0x66);

    // B has no receive: the SEND is RNR-NAKed and retried; the READ behind it waits.
    let mut sendwr = send(vec![(message.addr(), 64, message.key)]);
    sendwr.signaled = true;
    p.a.post_send(&p.engine, &sendwr);
    let read = read_wr(vec![(sink.addr(), 8192, sink.key)], (source.addr, source.key));
    p.a.post_send(&p.engine, &read);
    let deadline = std::time::Instant::now() + Duration::from_millis(50);
    while std::time::Instant::now() < deadline {
        p.engine.progress();
        assert!(p.cq_a.poll_one().is_none(), "nothing completes while the SEND waits");
    }
    // The region changes before the SEND is taken: the READ, executed after it, sees it.
    source.fill(0x77);
    receive_the_waiting_send(&mut p, &recv_buf);
    assert!(sink.buf.read(0, 8192).iter().all(|&b| b == 0x77), "read ahead of the SEND");
    assert_eq!(p.engine.placed_reads(), 0, "placed ahead of the SEND");
    // With the SEND done, the same READ is placed.
    source.fill(0x88);
    assert_eq!(post_and_wait(&mut p, &read).syndrome, None);
    assert!(sink.buf.read(0, 8192).iter().all(|&b| b == 0x88));
    assert_eq!(p.engine.placed_reads(), 1);
}

/// A READ whose local buffer is deregistered while the READ is in flight fails with a
/// local protection error, as the HCA checks the key at each write into the buffer, and
/// nothing more lands in it: placed (deregistered between two chunks) or through the ring
/// (deregistered before the first response).
#[test]
fn a_read_into_a_buffer_deregistered_in_flight_fails_without_landing() {
    const LEN: usize = (2 << 20) + 4096; // three chunks when placed
    for placed in [true, false] {
        let mut p = pair("place-read-dereg", rc_attrs());
        let data = pattern(9, LEN);
        let (shared, private);
        let (source_addr, source_key) = if placed {
            shared = SharedMr::new(&p.engine, p.pdn, LEN, ALL_ACCESS);
            shared.write(0, &data);
            (shared.addr, shared.key)
        } else {
            private = Mr::new(&p.engine, p.pdn, LEN, ALL_ACCESS);
            private.buf.write(0, &data);
            (private.addr(), private.key)
        };
        let sink = Mr::new(&p.engine, p.pdn, LEN, ALL_ACCESS);
        sink.buf.fill(0xee);
        // Posting places the first chunk (placed) or sends the request (ring) at once.
        p.a.post_send(
            &p.engine,
            &read_wr(vec![(sink.addr(), LEN as u32, sink.key)], (source_addr, source_key)),
        );
        p.engine.remove_memory_region(sink.key >> 8);
        let got = p.cq_a.wait(&p.engine, 1, WAIT);
        assert_eq!(got.len(), 1, "placed {placed}: no completion");
        assert_eq!(got[0].syndrome, Some(cqe_syndrome::LOCAL_PROT_ERR), "placed {placed}");
        let landed = if placed { 1 << 20 } else { 0 };
        assert!(sink.buf.read(0, landed) == data[..landed], "placed {placed}: the first chunk");
        assert!(
            sink.buf.read(landed, LEN - landed).iter().all(|&b| b == 0xee),
            "placed {placed}: data landed after DEREG_MR"
        );
    }
}

/// A region that grants REMOTE_READ only is opened and mapped read-only by its peers: a
/// file sealed against writable mappings is read from all the same, and a placement that
/// would write into it is refused before it touches it.
#[test]
fn a_region_exported_for_reading_only_is_mapped_read_only() {
    let mut p = pair("place-read-only", rc_attrs());
    let region = SharedMr::new(&p.engine, p.pdn, 64 << 10, access::REMOTE_READ);
    region.fill(0x4d);
    region.seal_future_writes();
    let sink = Mr::new(&p.engine, p.pdn, 64 << 10, ALL_ACCESS);
    let wr = read_wr(vec![(sink.addr(), 64 << 10, sink.key)], (region.addr, region.key));
    assert_eq!(post_and_wait(&mut p, &wr).syndrome, None);
    assert_eq!(p.engine.placed_reads(), 1, "a writable mapping of a sealed file fails");
    assert!(sink.buf.read(0, 64 << 10).iter().all(|&b| b == 0x4d));

    let import = ImportedMemory::open(p.engine.registry(), region.key, std::process::id())
        .expect("a well-formed export")
        .expect("exported");
    let claim = || import.claim(region.addr, 5).expect("live region");
    assert_eq!(
        claim().write(|map, at| map.copy_in(at, b"hello").ok()).err(),
        Some(PlaceError::ReadOnly)
    );
    let mut five = [0u8; 5];
    claim().read(|map, at| map.copy_out(at, &mut five).ok()).expect("read");
    assert_eq!(five, [0x4d; 5]);
    assert!(region.read(0, 5).iter().all(|&b| b == 0x4d), "written through a read-only import");
}

/// The placement gate of QP `a`'s ring (what its peer `b` waits on), opened and closed by
/// hand as a placement in progress would.
struct Gate(std::fs::File);

impl Gate {
    fn of(p: &Pair) -> Gate {
        let path = p.engine.registry().ring_path(p.a.qpn);
        Gate(std::fs::OpenOptions::new().read(true).write(true).open(path).expect("a's ring"))
    }

    fn set(&self, open: bool) {
        use ferrodat_softhca::fabric::layout::ring::OFF_PLACING;
        use std::os::unix::fs::FileExt;
        self.0.write_at(&u64::from(open).to_ne_bytes(), OFF_PLACING as u64).unwrap();
    }

    /// With the gate open, a MODIFY_QP of `b` to `state` waits (checked after a quarter of
    /// the wait's limit) until the gate closes; or, if `waits` is false, returns at once.
    fn check_modify(&self, p: &Pair, state: u8, attrs: QpAttributes, waits: bool, what: &str) {
        use ferrodat_softhca::fabric::PLACEMENT_WAIT_LIMIT;
        self.set(true);
        let done = Arc::new(AtomicBool::new(false));
        let modify = {
            let (engine, done, qpn) = (p.engine.clone(), done.clone(), p.b.qpn);
            std::thread::spawn(move || {
                engine.modify_qp(qpn, state, attrs);
                done.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(PLACEMENT_WAIT_LIMIT / 4);
        assert_eq!(done.load(Ordering::SeqCst), !waits, "{what}");
        self.set(false);
        modify.join().unwrap();
        assert_eq!(p.engine.qp_state(p.b.qpn), Some(state), "{what}");
    }
}

/// A MODIFY_QP that takes REMOTE_READ away from a QP waits while its peer places (the
/// peer's placement gate open: a placed READ may be copying out of our memory under the
/// old rights), as one taking REMOTE_WRITE away does; one that keeps both rights, which no
/// placement in progress can have relied on losing, does not wait, nor does one that takes
/// nothing away from a QP granting one right (it used to). A QP that dropped its rights
/// while a request was part-way placed (later chunks need no right) still waits at ERR.
#[test]
fn taking_remote_read_away_waits_for_the_peers_placement_in_progress() {
    let p = pair("revoke-read", rc_attrs());
    let gate = Gate::of(&p);
    let attrs = |access_flags| QpAttributes {
        dest_qpn: p.a.qpn,
        dgid: LOCALHOST_GID,
        access_flags,
        ..rc_attrs()
    };
    let (w, r) = (access::REMOTE_WRITE, access::REMOTE_READ);
    let both = w | r | access::REMOTE_ATOMIC;
    gate.check_modify(&p, qp_state::RTS, attrs(both), false, "keeping both rights");
    gate.check_modify(&p, qp_state::RTS, attrs(w), true, "taking REMOTE_READ away");
    gate.check_modify(&p, qp_state::RTS, attrs(w), false, "WRITE only again");
    gate.check_modify(&p, qp_state::RTS, attrs(w | r), false, "gaining REMOTE_READ");
    p.engine.modify_qp(p.b.qpn, qp_state::RTS, attrs(0)); // nothing placed meanwhile
    gate.check_modify(&p, qp_state::ERR, attrs(0), true, "ERR after the rights went");
}

/// A QP moved straight from RTS to RESET (raw verbs allow it; DAT goes through ERR) waits
/// for its peer's placement in progress: forgetting its connection used to drop the ring
/// the wait looks at first, so it did not wait at all.
#[test]
fn a_qp_reset_from_rts_waits_for_the_peers_placement_in_progress() {
    let p = pair("reset-waits", rc_attrs());
    Gate::of(&p).check_modify(&p, qp_state::RESET, rc_attrs(), true, "RTS to RESET");
}

/// Which changes of a QP's published facts must wait for a peer's placement in progress.
#[test]
fn only_a_change_that_takes_a_right_away_waits_for_placements() {
    use ferrodat_softhca::hca::placement::QpFacts;
    let (w, r) = (access::REMOTE_WRITE, access::REMOTE_READ);
    let facts = |state, remote_access| QpFacts { state, remote_access, epoch: 1, pdn: 7 };
    let waits = |before: QpFacts, after: QpFacts| before.takes_placement_away(&after);
    // Connecting takes nothing away.
    assert!(!waits(facts(qp_state::RESET, 0), facts(qp_state::INIT, w | r)));
    assert!(!waits(facts(qp_state::INIT, w | r), facts(qp_state::RTR, w | r)));
    assert!(!waits(facts(qp_state::RTR, w), facts(qp_state::RTS, w)));
    // Leaving the states that take requests waits even without rights: they may have been
    // dropped while a request was part-way placed, whose later chunks need no right.
    assert!(waits(facts(qp_state::RTS, 0), facts(qp_state::ERR, 0)));
    assert!(waits(facts(qp_state::RTR, 0), facts(qp_state::RESET, 0)));
    assert!(!waits(facts(qp_state::RTS, 0), facts(qp_state::RTS, 0)));
    // Losing a right, or every right by leaving the states that take requests, waits.
    assert!(waits(facts(qp_state::RTS, w | r), facts(qp_state::RTS, w)));
    assert!(waits(facts(qp_state::RTS, w | r), facts(qp_state::RTS, r)));
    assert!(waits(facts(qp_state::RTS, w), facts(qp_state::ERR, w)));
    assert!(waits(facts(qp_state::SQD, r), facts(qp_state::RESET, r)));
    // Another connection (epoch) or PD under the same rights waits too.
    assert!(waits(facts(qp_state::RTS, w), QpFacts { epoch: 2, ..facts(qp_state::RTS, w) }));
    assert!(waits(facts(qp_state::RTS, r), QpFacts { pdn: 8, ..facts(qp_state::RTS, r) }));
    assert!(waits(facts(qp_state::RTS, 0), QpFacts { epoch: 2, ..facts(qp_state::RTS, 0) }));
    // Gaining a right takes nothing away.
    assert!(!waits(facts(qp_state::RTS, w), facts(qp_state::RTS, w | r)));
}
