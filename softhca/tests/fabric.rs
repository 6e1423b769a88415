//! Tests of the softhca fabric: registry, instances, wake-ups, rings — across processes.
//!
//! Multi-process tests re-execute this test binary (`current_exe() --exact child_role`)
//! with `SOFTHCA_TEST_ROLE` selecting what the child does and `FERRODAT_SOFTHCA_SHM_DIR`
//! pointing at the test's private directory under /dev/shm. Children talk to the parent
//! with `@@ ...` lines on stdout and read commands from stdin. Synchronisation is always
//! on observed state (lines, counters, thread states), never on fixed sleeps.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod support;

use ferrodat_softhca::fabric::layout::{registry as reg_layout, ring as ring_layout};
use ferrodat_softhca::fabric::{
    FabricDir, FabricError, FilledPushError, Gid, Instance, PLACEMENT_WAIT_LIMIT, PushError,
    Record, RecordOverflow, Registry, RingConsumer, RingError, RingProducer, SHM_DIR_ENV,
    SmallRecord, WaitOutcome,
};
use support::child::{ChildProc, ROLE_ENV, read_command};

const ARG_ENV: &str = "FABRIC_TEST_ARG";
const CHILD_DEADLINE: Duration = Duration::from_secs(20);

// ============================================================================ helpers

/// A private fabric directory under /dev/shm, removed on drop.
struct TestDir {
    path: PathBuf,
}

impl TestDir {
    fn new(test: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = PathBuf::from(format!(
            "/dev/shm/ferrodat-fabric-test-{}-{test}-{nanos:08x}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).expect("create test dir under /dev/shm");
        Self { path }
    }

    fn fabric(&self) -> FabricDir {
        FabricDir::new(&self.path)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn gid(n: u8) -> Gid {
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, n]
}

/// A re-executed copy of this test binary playing `role` in the fabric at `dir`.
fn spawn_child(role: &str, dir: &Path, arg: &str) -> ChildProc {
    let dir = dir.to_str().expect("utf-8 test dir");
    ChildProc::spawn("child_role", role, &[(SHM_DIR_ENV, dir), (ARG_ENV, arg)])
}

fn parse_hex_list(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .map(|word| u32::from_str_radix(word.trim_start_matches("0x"), 16).expect("hex"))
        .collect()
}

/// Deterministic record contents: record `i` has `i` bytes (0..=4200).
fn record_byte(i: usize, j: usize) -> u8 {
    (i.wrapping_mul(31) ^ j.wrapping_mul(7) ^ (j >> 8)) as u8
}

const ROUND_TRIP_RECORDS: usize = 4201;
const ROUND_TRIP_CAPACITY: usize = 16 * 1024;

// ============================================================================ child roles

/// Entry point of child processes; a no-op when run as a normal test.
#[test]
fn child_role() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return;
    };
    let arg = std::env::var(ARG_ENV).unwrap_or_default();
    let fabric = FabricDir::from_env();
    match role.as_str() {
        "alloc" => child_alloc(&fabric, arg.parse().expect("count")),
        "hold" => child_hold(&fabric),
        "consume" => child_consume(&fabric),
        "waker" => child_waker(&fabric, &arg),
        "other_user" => child_other_user(&fabric),
        "churn" => child_churn(&fabric),
        "private" => child_private(&arg),
        other => panic!("unknown role {other}"),
    }
}

fn child_alloc(fabric: &FabricDir, count: usize) {
    println!("@@ STARTED");
    assert_eq!(read_command(), "go");
    let hca = fabric.open_hca("hca0", gid(1)).expect("open hca0");
    let me = hca.register_instance().expect("register");
    let qpns: Vec<String> =
        (0..count).map(|_| format!("{:x}", me.alloc_qpn().expect("alloc qpn").qpn)).collect();
    println!("@@ UID {:x}", hca.uid());
    println!("@@ QPNS {}", qpns.join(" "));
    // Keep the QPNs until the parent has both lists.
    assert_eq!(read_command(), "exit");
}

fn child_hold(fabric: &FabricDir) {
    let hca = fabric.open_hca("hca0", gid(1)).expect("open hca0");
    let me = hca.register_instance().expect("register");
    let mut rings = Vec::new();
    let mut qpns = Vec::new();
    for _ in 0..5 {
        let qp = me.alloc_qpn().expect("alloc");
        rings.push(me.create_ring(qp.qpn, 0, Some(4096)).expect("ring"));
        qpns.push(format!("{:x}", qp.qpn));
    }
    println!("@@ HELD {}", qpns.join(" "));
    // Block until killed (or the parent closes stdin).
    let _ = read_command();
}

/// Creates a QP on hca1, then consumes the parent's ring from hca0 and verifies it.
fn child_consume(fabric: &FabricDir) {
    let hca1 = fabric.open_hca("hca1", gid(2)).expect("open hca1");
    let me = hca1.register_instance().expect("register");
    let qp = me.alloc_qpn().expect("alloc");
    println!("@@ QPN {:x}", qp.qpn);
    let producer_qpn = u32::from_str_radix(&read_command(), 16).expect("producer qpn");
    let hca0 = fabric.find_hca_by_gid(gid(1)).expect("scan").expect("hca0 by GID");
    let mut inbound = hca0.open_ring(producer_qpn, qp.qpn).expect("open ring");
    let producer_waker = hca0.waker_for_qp(producer_qpn).expect("producer is live");
    let deadline = Instant::now() + CHILD_DEADLINE;
    let mut next = 0usize;
    let mut bytes = 0usize;
    let mut sleeps = 0u64;
    let mut buffer = vec![0u8; 8192];
    while next < ROUND_TRIP_RECORDS {
        for slot in me.take_pending() {
            assert_eq!(slot, qp.pending_slot, "only our QP's slot is ever flagged");
        }
        loop {
            let checked = inbound
                .consume(|rec| {
                    let len = rec.len();
                    let out = &mut buffer[..len];
                    rec.read(0, out).expect("read record");
                    (
                        rec.kind(),
                        len,
                        out.iter().enumerate().all(|(j, &b)| b == record_byte(next, j)),
                    )
                })
                .unwrap_or_else(|e| panic!("FAIL ring error: {e}"));
            let Some((kind, len, content_ok)) = checked else {
                break;
            };
            assert_eq!(kind, (next % 1000) as u16, "kind of record {next}");
            assert_eq!(len, next, "length of record {next}");
            assert!(content_ok, "content of record {next}");
            bytes += len;
            next += 1;
            producer_waker.wake(); // space was freed: wake the producer if it sleeps
        }
        if next == ROUND_TRIP_RECORDS {
            break;
        }
        assert!(Instant::now() < deadline, "FAIL consumer stalled at record {next}");
        if me.wait_for_work(Some(Duration::from_secs(5)), || false) == WaitOutcome::Woken {
            sleeps += 1;
        }
    }
    println!("@@ DONE {next} {bytes} {sleeps}");
}

/// Waits until the parent's thread (pid, tid given in arg, plus a QPN) is asleep in the
/// futex, then notifies that QP.
fn child_waker(fabric: &FabricDir, arg: &str) {
    let words: Vec<u32> = arg.split_whitespace().map(|w| w.parse().expect("num")).collect();
    let (pid, tid, qpn) = (words[0], words[1], words[2]);
    let hca = fabric.open_existing_hca("hca0").expect("open").expect("hca0 exists");
    let notifier = hca.notifier_for_qp(qpn).expect("parent's QP is live");
    let deadline = Instant::now() + CHILD_DEADLINE;
    // Asleep = announced as sleeper and the thread is in interruptible sleep.
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat"))
            .expect("parent thread stat");
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().chars().next());
        if notifier.instance().sleepers() > 0 && state == Some(Some('S')) {
            break;
        }
        assert!(Instant::now() < deadline, "FAIL parent never slept");
        std::thread::yield_now();
    }
    assert!(notifier.notify(), "owner instance is live");
    println!("@@ NOTIFIED");
}

/// As another user than the parent if run as root (nobody), else as the same user: makes
/// HCA hca2 and looks it up by GID.
fn child_other_user(fabric: &FabricDir) {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // SAFETY: plain credential calls on this single-purpose child; checked.
        let dropped = unsafe {
            libc::setgroups(0, std::ptr::null()) == 0
                && libc::setresgid(65534, 65534, 65534) == 0
                && libc::setresuid(65534, 65534, 65534) == 0
        };
        assert!(dropped, "FAIL drop to nobody: {}", std::io::Error::last_os_error());
    }
    let mine = fabric.open_hca("hca2", gid(2)).expect("open hca2");
    match fabric.find_hca_by_gid(gid(2)) {
        Ok(Some(found)) if found.uid() == mine.uid() => println!("@@ FOUND"),
        other => println!("@@ FAIL lookup of its own HCA by GID: {other:?}"),
    }
}

/// Joins and leaves hca0 in a loop, with QPs and rings, checking after each sweep that its
/// own QPs and rings survived it; until killed.
fn child_churn(fabric: &FabricDir) {
    println!("@@ GO");
    loop {
        let (hca, me) = fabric.join_hca("hca0", gid(1)).expect("join");
        let mut rings = Vec::new();
        for _ in 0..3 {
            let qp = me.alloc_qpn().expect("alloc");
            rings.push((qp.qpn, me.create_ring(qp.qpn, 0, Some(4096)).expect("ring")));
        }
        hca.sweep().expect("sweep");
        for (qpn, _) in &rings {
            assert!(hca.ring_path(*qpn).exists(), "ring of live QP {qpn:#x} removed");
            let owner = hca.owner_of(*qpn).map(|o| o.instance_uid);
            assert_eq!(owner, Some(me.uid()), "live QP {qpn:#x} reclaimed");
        }
    }
}

/// Takes a private fabric with tag `arg` (the parent passed no fabric directory), joins an
/// HCA in it with a ring, reports the directory and waits.
fn child_private(tag: &str) {
    let dir = ferrodat_softhca::fabric::use_private_fabric(tag);
    let (_hca, me) = FabricDir::from_env().join_hca("hca0", gid(1)).expect("join");
    let qp = me.alloc_qpn().expect("alloc");
    let _ring = me.create_ring(qp.qpn, 0, Some(4096)).expect("ring");
    println!("@@ DIR {}", dir.display());
    let _ = read_command();
}

// ============================================================================ registry

#[test]
fn api_types_can_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Registry>();
    send_sync::<ferrodat_softhca::fabric::Instance>();
    send_sync::<ferrodat_softhca::fabric::QpNotifier>();
    send_sync::<ferrodat_softhca::fabric::InstanceWaker>();
    send::<ferrodat_softhca::fabric::RingProducer>();
    send::<ferrodat_softhca::fabric::RingConsumer>();
}

#[test]
fn two_processes_allocate_qpns_concurrently_without_duplicates() {
    let dir = TestDir::new("alloc");
    const PER_CHILD: usize = 3000;
    let mut children: Vec<ChildProc> =
        (0..2).map(|_| spawn_child("alloc", &dir.path, &PER_CHILD.to_string())).collect();
    // Both open the (not yet existing) registry at the same moment: also races creation.
    for child in &mut children {
        child.expect("STARTED");
    }
    for child in &mut children {
        child.send("go");
    }
    let mut uids = Vec::new();
    let mut all = Vec::new();
    for child in &mut children {
        uids.push(child.expect("UID"));
        let qpns = parse_hex_list(&child.expect("QPNS"));
        assert_eq!(qpns.len(), PER_CHILD);
        all.extend(qpns);
    }
    assert_eq!(uids[0], uids[1], "both processes use one registry incarnation");
    for &qpn in &all {
        assert!((0x100..1 << 24).contains(&qpn), "QPN {qpn:#x} out of range");
    }
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), count, "duplicate QPNs handed out");
    for mut child in children {
        child.send("exit");
        child.finish();
    }
    // Both exited cleanly: their instances released everything.
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("reopen");
    assert_eq!(hca.live_instances(), 0);
    assert!(hca.owner_of(all[0]).is_none());
}

#[test]
fn killed_process_is_reclaimed_by_the_next_opener() {
    let dir = TestDir::new("killed");
    let mut child = spawn_child("hold", &dir.path, "");
    let qpns = parse_hex_list(&child.expect("HELD"));
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("open");
    for &qpn in &qpns {
        let owner = hca.owner_of(qpn).expect("held QP is live");
        assert_eq!(owner.pid, child.pid());
        assert!(hca.ring_path(qpn).exists());
    }
    assert_eq!(hca.live_instances(), 1);
    // A consumer attached to the dead process's ring keeps a valid mapping.
    let mut orphaned = hca.open_ring(qpns[0], 0x42).expect("attach to the child's ring");
    assert!(!orphaned.producer_gone());
    let dead_pid = child.pid();
    child.child.kill().expect("kill -9 child");
    child.child.wait().expect("reap child");
    // A temp file the dead process might have left mid-create.
    let stray_temp =
        hca.ring_path(0).with_file_name(format!(".qp-0x000999.tmp-{dead_pid}-0123456789abcdef"));
    std::fs::write(&stray_temp, b"half-built").expect("write stray temp");
    drop(hca);

    let started = Instant::now();
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("next opener");
    let sweep_time = started.elapsed();
    assert_eq!(hca.live_instances(), 0, "dead instance reclaimed");
    for &qpn in &qpns {
        assert!(hca.owner_of(qpn).is_none(), "QP {qpn:#x} reclaimed");
        assert!(!hca.ring_path(qpn).exists(), "ring of {qpn:#x} removed");
    }
    assert!(!stray_temp.exists(), "temp file of the dead process removed");
    assert!(orphaned.producer_gone());
    assert_eq!(orphaned.pop(), Ok(None), "unlinked but still mapped: no crash, no records");
    assert_eq!(hca.sweep().expect("sweep"), Default::default(), "nothing left");
    // And the HCA is fully usable.
    let me = hca.register_instance().expect("register after crash");
    let qp = me.alloc_qpn().expect("alloc after crash");
    me.create_ring(qp.qpn, 0, None).expect("ring after crash");
    eprintln!("sweep on open took {sweep_time:?}");
}

/// The private fabric of a process killed before it could remove it is removed by the
/// next process taking one with the same tag, unless a live process still uses it; they
/// used to pile up in /dev/shm, a few MiB per killed run.
#[test]
fn a_killed_processs_private_fabric_is_removed_by_the_next_unless_in_use() {
    let tag = format!("fabric-stale-{}", std::process::id());
    let private = |tag: &str| {
        let mut child = ChildProc::spawn("child_role", "private", &[(ARG_ENV, tag)]);
        let dir = PathBuf::from(child.expect("DIR"));
        (child, dir)
    };
    let (mut killed_in_use, in_use) = private(&tag);
    let still_used = FabricDir::new(&in_use).join_hca("hca0", gid(1)).expect("join theirs");
    killed_in_use.kill();
    let (mut killed, stale) = private(&tag);
    killed.kill();
    assert!(stale.exists() && in_use.exists());

    let (next, own) = private(&tag);
    assert!(!stale.exists(), "{} left behind", stale.display());
    assert!(in_use.exists(), "{} removed while this process uses it", in_use.display());
    next.finish();
    assert!(!own.exists(), "removed at exit");
    drop(still_used);
    let _ = std::fs::remove_dir_all(&in_use);
}

/// Twenty processes joining and leaving one HCA, killed at random moments (mid-claim,
/// mid-sweep, mid-create): none loses a live QP to another's sweep, and what they leave
/// is reclaimed by the next opener.
#[test]
fn processes_killed_while_joining_and_leaving_leave_a_clean_hca() {
    let dir = TestDir::new("churn");
    let mut rng = 0x1234_5678_u64;
    let mut kids: Vec<ChildProc> = (0..20).map(|_| spawn_child("churn", &dir.path, "")).collect();
    for kid in &mut kids {
        kid.expect("GO");
    }
    for kid in &mut kids {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_micros(rng % 20_000));
        let exited = kid.child.try_wait().expect("try_wait");
        assert!(exited.is_none(), "a churning child failed: {exited:?}");
        kid.kill();
    }
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("next opener");
    assert_eq!(hca.live_instances(), 0);
    assert_eq!(hca.sweep().expect("sweep"), Default::default(), "the opener's sweep left work");
    let left: Vec<_> = std::fs::read_dir(dir.path.join("hca0")).expect("ring dir").collect();
    assert!(left.is_empty(), "files left: {left:?}");
    let me = hca.register_instance().expect("register");
    let qp = me.alloc_qpn().expect("alloc");
    me.create_ring(qp.qpn, 0, Some(4096)).expect("ring");
}

#[test]
fn sweep_removes_ring_files_nobody_owns_but_keeps_live_ones() {
    let dir = TestDir::new("stray");
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("open");
    let me = hca.register_instance().expect("register");
    let qp = me.alloc_qpn().expect("alloc");
    let _ring = me.create_ring(qp.qpn, 0, None).expect("ring");
    // A ring file with garbage contents for a QPN nobody owns.
    let stray = hca.ring_path(0x77_7777);
    std::fs::write(&stray, vec![0xa5; 4096]).expect("write stray");
    let report = hca.sweep().expect("sweep");
    assert_eq!(report.removed_files, 1);
    assert!(!stray.exists());
    assert!(hca.ring_path(qp.qpn).exists(), "live ring kept");
    assert!(hca.owner_of(qp.qpn).is_some());
}

#[test]
fn qp_table_lookup_free_publish_and_allocators() {
    let dir = TestDir::new("table");
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("open");
    let a = hca.register_instance().expect("register a");
    let b = hca.register_instance().expect("register b");
    let qa: Vec<_> = (0..100).map(|_| a.alloc_qpn().expect("alloc")).collect();
    let qb = b.alloc_qpn().expect("alloc b");
    let mut slots: Vec<u16> = qa.iter().map(|q| q.pending_slot).collect();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), qa.len(), "pending slots unique within an instance");

    let owner = hca.owner_of(qa[0].qpn).expect("live");
    assert_eq!(owner.pid, std::process::id());
    assert_eq!(owner.instance_uid, a.uid());
    assert_eq!(owner.instance_index, a.index());
    assert_eq!(owner.pending_slot, qa[0].pending_slot);
    assert_eq!(owner.generation, qa[0].generation);
    assert_eq!(hca.owner_of(qb.qpn).expect("live").instance_uid, b.uid());

    a.publish_qp_state(qa[0].qpn, 3).expect("publish");
    assert_eq!(hca.owner_of(qa[0].qpn).expect("live").published_state, 3);
    assert!(b.publish_qp_state(qa[0].qpn, 4).is_err(), "not b's QP");

    for bad in [0, 1, 0xff, 1 << 24, u32::MAX] {
        assert!(hca.owner_of(bad).is_none(), "QPN {bad:#x}");
    }
    let err = b.free_qpn(qa[1].qpn).expect_err("foreign QPN");
    assert_eq!(err.errno(), libc::EINVAL);
    a.free_qpn(qa[1].qpn).expect("free");
    assert!(hca.owner_of(qa[1].qpn).is_none());
    assert!(a.free_qpn(qa[1].qpn).is_err(), "double free");

    let mkeys: Vec<u32> = (0..1000).map(|_| hca.alloc_mkey()).collect();
    let mut unique = mkeys.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), mkeys.len());
    assert!(mkeys.iter().all(|&k| k >> 8 >= 0x100));
    let allocators: [fn(&Registry) -> u32; 3] =
        [Registry::alloc_cqn, Registry::alloc_pdn, Registry::alloc_srqn];
    for alloc in allocators {
        let values: Vec<u32> = (0..100).map(|_| alloc(&hca)).collect();
        assert!(values.iter().all(|&v| v != 0 && v < 1 << 24));
        assert!(values.windows(2).all(|w| w[0] != w[1]));
    }

    drop(a);
    assert!(hca.owner_of(qa[0].qpn).is_none(), "instance drop frees its QPs");
    assert_eq!(hca.live_instances(), 1);
}

#[test]
fn find_hca_by_gid_among_registries() {
    let dir = TestDir::new("gid");
    let fabric = dir.fabric();
    assert!(fabric.find_hca_by_gid(gid(1)).expect("scan empty").is_none());
    let h0 = fabric.open_hca("hca0", gid(1)).expect("hca0");
    let h1 = fabric.open_hca("hca1", gid(2)).expect("hca1");
    assert_eq!(fabric.hca_names().expect("names"), ["hca0", "hca1"]);
    assert_eq!(fabric.find_hca_by_gid(gid(2)).expect("scan").expect("found").uid(), h1.uid());
    assert_eq!(fabric.find_hca_by_gid(gid(1)).expect("scan").expect("found").uid(), h0.uid());
    assert!(fabric.find_hca_by_gid(gid(9)).expect("scan").is_none());
    assert!(matches!(fabric.open_hca("../evil", gid(3)), Err(FabricError::InvalidArgument(_))));
}

/// Users sharing a fabric directory, each with HCAs of their own: another user's registry
/// that this one may not open used to fail every lookup by GID that came to it first.
#[test]
fn a_registry_this_user_may_not_open_does_not_hide_the_others() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TestDir::new("other-user");
    let set_mode = |path: &Path, mode| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    set_mode(&dir.path, 0o1777); // for the child, when it runs as nobody
    let theirs = dir.fabric().open_hca("hca1", gid(1)).expect("hca1");
    // Not writable by the child: as root, the child runs as nobody; else mode 0 suffices.
    set_mode(theirs.path(), 0);
    let mut child = spawn_child("other_user", &dir.path, "");
    assert_eq!(child.line(), "FOUND");
    child.finish();
    // The error still comes when no registry has the GID.
    let err = dir.fabric().find_hca_by_gid(gid(9));
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert!(matches!(err, Err(FabricError::Os { .. })), "{err:?}");
    }
}

#[test]
fn concurrent_first_open_and_rebuild_agree_on_one_file() {
    let dir = TestDir::new("race");
    let open_all = |dir: &TestDir| {
        let uids: Vec<u64> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| dir.fabric().open_hca("hca0", gid(1)).expect("open").uid()))
                .collect();
            handles.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        assert!(uids.windows(2).all(|w| w[0] == w[1]), "uids {uids:x?}");
        uids[0]
    };
    let first = open_all(&dir);
    let path = dir.path.join("hca0.hca");
    let file = std::fs::OpenOptions::new().write(true).open(&path).expect("open file");
    file.write_at(&(reg_layout::VERSION + 1).to_ne_bytes(), reg_layout::OFF_VERSION as u64)
        .expect("corrupt version");
    let rebuilt = open_all(&dir);
    assert_ne!(first, rebuilt, "a version mismatch was rebuilt exactly once");
}

#[test]
fn version_size_garbage_and_gid_mismatches_rebuild_safely() {
    let dir = TestDir::new("rebuild");
    let fabric = dir.fabric();
    let path = dir.path.join("hca0.hca");
    let uid0 = fabric.open_hca("hca0", gid(1)).expect("create").uid();

    // Version mismatch.
    let file = std::fs::OpenOptions::new().write(true).open(&path).expect("open file");
    file.write_at(&99u32.to_ne_bytes(), reg_layout::OFF_VERSION as u64).expect("write version");
    assert!(fabric.open_existing_hca("hca0").expect("open").is_none(), "unusable, not rebuilt");
    let hca = fabric.open_hca("hca0", gid(1)).expect("rebuild");
    let uid1 = hca.uid();
    assert_ne!(uid0, uid1);
    let me = hca.register_instance().expect("works after rebuild");
    me.alloc_qpn().expect("alloc after rebuild");
    drop(me);
    drop(hca);

    // Wrong size (truncated), and garbage of the right size. (Reopen: the rebuild
    // replaced the inode behind the name.)
    let file = std::fs::OpenOptions::new().write(true).open(&path).expect("open file");
    file.set_len(100).expect("truncate");
    let uid2 = fabric.open_hca("hca0", gid(1)).expect("rebuild truncated").uid();
    assert_ne!(uid1, uid2);
    let file = std::fs::OpenOptions::new().write(true).open(&path).expect("open file");
    file.write_at(&vec![0x5a; reg_layout::TOTAL_BYTES], 0).expect("garbage");
    let uid3 = fabric.open_hca("hca0", gid(1)).expect("rebuild garbage").uid();
    assert_ne!(uid2, uid3);

    // Another GID: rebuilt while unused, refused while a live instance uses it.
    let hca = fabric.open_hca("hca0", gid(7)).expect("rebuild for a new GID");
    assert_eq!(hca.gid(), gid(7));
    let _live = hca.register_instance().expect("register");
    let err = fabric.open_hca("hca0", gid(8)).expect_err("GID conflict");
    assert!(matches!(err, FabricError::GidConflict { live_instances: 1, .. }), "{err}");
    assert_eq!(err.errno(), libc::EEXIST);
    assert!(err.to_string().contains("::ffff:127.0.0.7"), "{err}");
}

#[test]
fn a_registry_replaced_for_another_gid_between_open_and_join_is_not_joined() {
    let dir = TestDir::new("replaced");
    let fabric = dir.fabric();
    // A opens HCA "hca0" with one GID; before A joins, B opens it with another. Nobody
    // has joined yet, so B replaces the file.
    let a = fabric.open_hca("hca0", gid(1)).expect("open A");
    let b = fabric.open_hca("hca0", gid(2)).expect("open B, replacing A's file");
    assert_eq!(b.gid(), gid(2));
    // A must not join the file nobody else sees any more.
    let err = a.register_instance().expect_err("joining a replaced registry");
    assert!(matches!(err, FabricError::Replaced { .. }), "{err}");
    assert_eq!(err.errno(), libc::EAGAIN);
    assert!(err.to_string().contains("open the HCA again"), "{err}");
    let _b_live = b.register_instance().expect("B joins its own file");
    // Opening again, as join_hca does, A sees B's GID in use.
    let err = fabric.join_hca("hca0", gid(1)).expect_err("GID conflict");
    assert!(matches!(err, FabricError::GidConflict { live_instances: 1, .. }), "{err}");
    // The same GID joins the same registry.
    let (again, _instance) = fabric.join_hca("hca0", gid(2)).expect("join B's HCA");
    assert_eq!(again.uid(), b.uid());
}

#[test]
fn of_two_threads_joining_one_hca_name_with_two_gids_exactly_one_succeeds() {
    let dir = TestDir::new("join-race");
    let fabric = dir.fabric();
    for round in 0..30 {
        let name = format!("race{round}");
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<_> = std::thread::scope(|s| {
            let joins: Vec<_> = [gid(1), gid(2)]
                .into_iter()
                .map(|g| {
                    let (fabric, name, barrier) = (&fabric, &name, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        fabric.join_hca(name, g)
                    })
                })
                .collect();
            joins.into_iter().map(|j| j.join().expect("no panic")).collect()
        });
        let joined = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(joined, 1, "round {round}: {results:?}");
        let refused = results.iter().find_map(|r| r.as_ref().err()).expect("one refused");
        assert!(matches!(refused, FabricError::GidConflict { .. }), "round {round}: {refused}");
    }
}

// ============================================================================ wake

#[test]
fn futex_sleep_is_woken_by_another_process() {
    let dir = TestDir::new("wake");
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("open");
    let me = hca.register_instance().expect("register");
    let qp = me.alloc_qpn().expect("alloc");
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    let arg = format!("{} {tid} {}", std::process::id(), qp.qpn);
    let mut child = spawn_child("waker", &dir.path, &arg);
    let started = Instant::now();
    let outcome = me.wait_for_work(Some(CHILD_DEADLINE), || false);
    let slept = started.elapsed();
    child.expect("NOTIFIED");
    child.finish();
    assert_eq!(outcome, WaitOutcome::Woken);
    assert!(slept < CHILD_DEADLINE, "woken, not timed out ({slept:?})");
    assert_eq!(me.take_pending().collect::<Vec<_>>(), [qp.pending_slot]);
    assert!(me.waker().wake_syscalls() >= 1);
    assert!(!me.has_pending());
}

#[test]
fn wait_times_out_and_wakes_cost_no_syscall_without_sleepers() {
    let dir = TestDir::new("timeout");
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("open");
    let me = hca.register_instance().expect("register");
    let qp = me.alloc_qpn().expect("alloc");

    let timeout = Duration::from_millis(50);
    let started = Instant::now();
    assert_eq!(me.wait_for_work(Some(timeout), || false), WaitOutcome::TimedOut);
    let elapsed = started.elapsed();
    assert!(elapsed >= timeout, "returned early after {elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "overslept: {elapsed:?}");

    // Nobody sleeps: notify and wake publish but make no syscall.
    let notifier = hca.notifier_for_qp(qp.qpn).expect("live");
    assert!(notifier.notify());
    assert!(me.waker().wake());
    assert_eq!(me.waker().wake_syscalls(), 0);
    // Work flagged before the wait: it returns without blocking.
    assert_eq!(me.wait_for_work(None, || false), WaitOutcome::WorkPending);
    assert_eq!(me.take_pending().collect::<Vec<_>>(), [qp.pending_slot]);
    // The caller's own work check counts as well.
    assert_eq!(me.wait_for_work(None, || true), WaitOutcome::WorkPending);

    // A dropped owner: notifying it is refused.
    drop(me);
    assert!(!notifier.notify());
}

#[test]
fn pending_slots_not_visited_are_handed_back() {
    let dir = TestDir::new("pending");
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("open");
    let me = hca.register_instance().expect("register");
    let qps: Vec<_> = (0..200).map(|_| me.alloc_qpn().expect("alloc")).collect();
    for qp in qps.iter().step_by(3) {
        hca.notifier_for_qp(qp.qpn).expect("live").notify();
    }
    let expected: Vec<u16> = qps.iter().step_by(3).map(|q| q.pending_slot).collect();
    let mut seen: Vec<u16> = me.take_pending().take(10).collect();
    assert!(me.has_pending(), "the rest was handed back");
    seen.extend(me.take_pending());
    seen.sort_unstable();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort_unstable();
    assert_eq!(seen, expected_sorted);
    assert_eq!(me.take_pending().count(), 0);
}

// ============================================================================ ring

/// QPs `a` and `b` of one process on one HCA, with a 4096-byte ring from `a` to `b`.
struct SmallRing {
    producer: RingProducer,
    consumer: RingConsumer,
    me: Instance,
    a: u32,
    b: u32,
    _hca: Registry,
    _dir: TestDir,
}

impl SmallRing {
    fn new(test: &str) -> Self {
        let dir = TestDir::new(test);
        let hca = dir.fabric().open_hca("hca0", gid(1)).expect("open");
        let me = hca.register_instance().expect("register");
        let (a, b) = (me.alloc_qpn().expect("a").qpn, me.alloc_qpn().expect("b").qpn);
        let producer = me.create_ring(a, b, Some(4096)).expect("ring");
        let consumer = hca.open_ring(a, b).expect("consumer");
        SmallRing { producer, consumer, me, a, b, _hca: hca, _dir: dir }
    }
}

#[test]
fn ring_round_trips_records_across_processes_and_wraps() {
    let dir = TestDir::new("ring");
    let fabric = dir.fabric();
    let hca0 = fabric.open_hca("hca0", gid(1)).expect("open hca0");
    let me = hca0.register_instance().expect("register");
    let qp = me.alloc_qpn().expect("alloc");
    let mut child = spawn_child("consume", &dir.path, "");
    let peer_qpn = u32::from_str_radix(&child.expect("QPN"), 16).expect("peer qpn");
    let hca1 = fabric.find_hca_by_gid(gid(2)).expect("scan").expect("hca1 by GID");
    let notifier = hca1.notifier_for_qp(peer_qpn).expect("peer QP live");
    let mut ring =
        me.create_ring(qp.qpn, peer_qpn, Some(ROUND_TRIP_CAPACITY)).expect("create ring");
    child.send(&format!("{:x}", qp.qpn));

    let started = Instant::now();
    let mut total = 0usize;
    let mut full_waits = 0usize;
    let mut record = vec![0u8; ROUND_TRIP_RECORDS];
    for i in 0..ROUND_TRIP_RECORDS {
        for (j, byte) in record[..i].iter_mut().enumerate() {
            *byte = record_byte(i, j);
        }
        // Gather from a header and three uneven payload slices.
        let bytes = &record[..i];
        let (header, rest) = bytes.split_at(i.min(13));
        let (p1, rest) = rest.split_at(rest.len() / 3);
        let (p2, p3) = rest.split_at(rest.len() / 2);
        loop {
            match ring.try_push((i % 1000) as u16, header, &[p1, p2, p3]) {
                Ok(()) => break,
                Err(PushError::Full { needed, .. }) => {
                    full_waits += 1;
                    let outcome = me.wait_for_work(Some(Duration::from_secs(5)), || {
                        ring.free_bytes() >= needed
                    });
                    assert_ne!(outcome, WaitOutcome::TimedOut, "consumer stopped consuming");
                }
                Err(other) => panic!("push {i}: {other}"),
            }
        }
        notifier.notify();
        total += i;
    }
    let done = child.expect("DONE");
    let elapsed = started.elapsed();
    child.finish();
    let words: Vec<usize> = done.split_whitespace().map(|w| w.parse().expect("num")).collect();
    assert_eq!(words[0], ROUND_TRIP_RECORDS);
    assert_eq!(words[1], total);
    let wraps = total / ROUND_TRIP_CAPACITY;
    assert!(wraps >= 3, "only {wraps} wraps");
    assert!(full_waits > 0, "back-pressure was exercised");
    eprintln!(
        "{ROUND_TRIP_RECORDS} records, {total} bytes, {wraps} wraps, {full_waits} full waits, \
         consumer woken {} times, {elapsed:?}",
        words[2]
    );
}

#[test]
fn full_ring_applies_back_pressure_and_never_overwrites() {
    let SmallRing { mut producer, mut consumer, me, a, b, .. } = SmallRing::new("full");
    assert!(matches!(me.create_ring(a, b, Some(5000)), Err(FabricError::InvalidArgument(_))));

    assert_eq!(producer.max_record_len(), 2040);
    assert_eq!(
        producer.try_push(1, &[0; 2041], &[]),
        Err(PushError::TooLarge { len: 2041, max: 2040 })
    );
    assert_eq!(producer.try_push(0xffff, &[], &[]), Err(PushError::ReservedKind));

    let mut pushed = 0u32;
    let full = loop {
        let body = [pushed as u8; 100];
        match producer.try_push(7, &pushed.to_ne_bytes(), &[&body]) {
            Ok(()) => pushed += 1,
            Err(e) => break e,
        }
    };
    // 104 bytes + 8 header = 112 per record: 36 fit in 4096 (4032), 64 left, and the
    // next record needs a 64-byte padding record before it wraps: 176 bytes.
    assert_eq!(pushed, 36);
    assert_eq!(full, PushError::Full { needed: 176, free: 64 });
    assert_eq!(producer.free_bytes(), 64);

    let check = |record: &Record, n: u32| {
        assert_eq!(record.kind, 7);
        assert_eq!(record.bytes[..4], n.to_ne_bytes());
        assert!(record.bytes[4..].iter().all(|&b| b == n as u8), "record {n} intact");
    };
    check(&consumer.pop().expect("ok").expect("record"), 0);
    // Exactly enough room now: padding to the end plus the record at the start.
    producer
        .try_push(7, &pushed.to_ne_bytes(), &[&[pushed as u8; 100]])
        .expect("room after one pop");
    pushed += 1;
    assert_eq!(producer.free_bytes(), 0);
    let full = producer.try_push(7, &[], &[]);
    assert_eq!(full, Err(PushError::Full { needed: 8, free: 0 }));
    check(&consumer.pop().expect("ok").expect("record"), 1);
    for n in 2..pushed {
        check(&consumer.pop().expect("ok").expect("record"), n);
    }
    assert_eq!(consumer.pop().expect("ok"), None);
    assert!(producer.is_drained());

    // peek does not consume; skip does; reads outside a record are refused.
    producer.try_push(9, b"abc", &[]).expect("push");
    let peeked = consumer.peek(|rec| {
        let mut two = [0; 2];
        rec.read(1, &mut two).expect("inside");
        assert!(matches!(rec.read(2, &mut two), Err(RingError::OutsideRecord { .. })));
        two
    });
    assert_eq!(peeked, Ok(Some(*b"bc")));
    assert!(consumer.skip().expect("skip"));
    assert!(!consumer.skip().expect("nothing left"));
}

#[test]
fn word_records_and_small_pops_match_byte_records_across_wraps() {
    // Kept whole (not destructured from a temporary), so that its instance keeps the ring
    // file, which the loop reads back.
    let ring = SmallRing::new("words");
    let SmallRing { mut producer, mut consumer, .. } = ring;
    assert_eq!(producer.try_push_words(0xffff, &[0], 8), Err(PushError::ReservedKind));
    // Records of 1..=40 bytes, alternately pushed as words and as bytes, popped alternately
    // whole and piecewise, many times round the ring (padding records included).
    for n in 0..2000usize {
        let len = 1 + n % 40;
        let bytes: Vec<u8> = (0..len).map(|i| (n + i) as u8).collect();
        let kind = 1 + (n % 5) as u16;
        if n % 2 == 0 {
            let mut padded = [0u8; 40];
            padded[..len].copy_from_slice(&bytes);
            let words: Vec<u64> = padded
                .chunks(8)
                .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
                .collect();
            producer.try_push_words(kind, &words, len).expect("room");
        } else {
            producer.try_push(kind, &bytes, &[]).expect("room");
        }
        if n % 3 == 0 {
            let record = consumer.pop().expect("ok").expect("record");
            assert_eq!((record.kind, &record.bytes[..]), (kind, &bytes[..]), "record {n}");
        } else {
            let mut short = [0u64; 2];
            if len > 16 {
                assert_eq!(consumer.pop_small(&mut short), Ok(SmallRecord::Larger));
            }
            let mut out = [0u64; 5];
            assert_eq!(consumer.pop_small(&mut out), Ok(SmallRecord::Record { kind, len }));
            let got: Vec<u8> = out.iter().flat_map(|w| w.to_ne_bytes()).collect();
            assert_eq!(got[..len], bytes[..], "record {n}");
        }
        assert_eq!(consumer.pop_small(&mut [0u64; 5]), Ok(SmallRecord::None));
        // Everything consumed reads as zero again (header and payload words, padding): the
        // header word at the head is what says whether a record is there.
        let area = std::fs::read(producer.path()).expect("ring file");
        let data = &area[ring_layout::DATA_OFFSET..];
        assert!(data.iter().all(|&b| b == 0), "consumed bytes left non-zero after record {n}");
    }
    assert!(producer.is_drained());
}

#[test]
fn records_filled_in_place_are_seen_whole_and_failed_fills_publish_nothing() {
    let SmallRing { mut producer, mut consumer, .. } = SmallRing::new("filled");
    let source: Vec<u8> = (0..2000u32).map(|i| (i * 13 + 5) as u8).collect();
    // Records of 1..=1500 bytes (header 5 bytes, payload from three appends: a raw copy, a
    // slice, zeros), some fills failing or coming up short at the worst moment: when the
    // record needs a padding record before the area's end. Many laps.
    let mut expected = Vec::new();
    let (mut failures, mut failures_after_padding) = (0, 0);
    // The producer's position, to know which records needed a padding record.
    let mut tail = 0usize;
    for n in 0..600usize {
        let payload = 1 + (n * 389) % 1500;
        let header = [n as u8, 1, 2, 3, 4];
        let record_bytes = 8 + (header.len() + payload).div_ceil(8) * 8;
        let to_end = 4096 - tail % 4096;
        let padded = record_bytes > to_end;
        let (raw, zeros) = (payload / 2, payload / 5);
        let slice = payload - raw - zeros;
        let fail = n % 7 == 3;
        let short = n % 11 == 5 && zeros > 0;
        let outcome = producer.try_push_filled(3, &header, payload, |record| {
            assert_eq!(record.remaining(), payload);
            // SAFETY: `source` is a live Vec, readable for `raw` bytes.
            unsafe { record.append_raw(source.as_ptr(), raw) }?;
            if fail {
                return Err(RecordOverflow { len: 0, remaining: record.remaining() });
            }
            record.append(&source[raw..raw + slice])?;
            if short {
                return Ok(());
            }
            assert_eq!(
                record.append_zeros(zeros + 1),
                Err(RecordOverflow { len: zeros + 1, remaining: zeros })
            );
            record.append_zeros(zeros)
        });
        match outcome {
            Ok(()) => {
                assert!(!fail && !short);
                let mut bytes = header.to_vec();
                bytes.extend_from_slice(&source[..raw + slice]);
                bytes.resize(header.len() + payload, 0);
                expected.push(bytes);
                tail += record_bytes + if padded { to_end } else { 0 };
            }
            Err(FilledPushError::Fill(_)) => {
                assert!(fail);
                failures += 1;
                failures_after_padding += usize::from(padded);
            }
            Err(FilledPushError::Ring(PushError::Unfilled { filled, len })) => {
                assert!(short && !fail);
                assert_eq!((filled, len), (raw + slice, payload));
                failures += 1;
                failures_after_padding += usize::from(padded);
            }
            Err(other) => panic!("record {n}: {other:?}"),
        }
        // Nothing of a failed record is visible: the consumer finds exactly the records
        // published, then nothing, also through the header-only poll. Every other record
        // stays in the ring while there is room for the largest one and its padding.
        if n % 2 == 0 || producer.free_bytes() < 2 * 1520 {
            for bytes in expected.drain(..) {
                let record = consumer.pop().expect("ok").expect("a published record");
                assert_eq!((record.kind, record.bytes.len()), (3, bytes.len()), "record {n}");
                assert!(record.bytes == bytes, "record {n} intact");
            }
            assert!(!consumer.may_have_records(), "record {n}: a failed fill is invisible");
            assert_eq!(consumer.pop(), Ok(None));
            assert!(producer.is_drained());
        }
    }
    assert!(failures > 50 && failures_after_padding > 3, "{failures} {failures_after_padding}");
    assert_eq!(
        producer.try_push_filled(3, &[0; 10], 2031, |_| Ok::<(), ()>(())),
        Err(FilledPushError::Ring(PushError::TooLarge { len: 2041, max: 2040 }))
    );
    assert_eq!(
        producer.try_push_filled(0xffff, &[], 0, |_| Ok::<(), ()>(())),
        Err(FilledPushError::Ring(PushError::ReservedKind))
    );
    // Copies out of a record stay inside it.
    producer.try_push(4, b"0123456789", &[]).expect("room");
    let copied = consumer.peek(|record| {
        let mut out = [0u8; 4];
        // SAFETY: `out` is writable for 4 bytes.
        unsafe { record.copy_out_raw(6, out.as_mut_ptr(), 4) }.expect("inside");
        // SAFETY: as above (the copy is refused before it writes).
        let outside = unsafe { record.copy_out_raw(7, out.as_mut_ptr(), 4) };
        assert!(matches!(outside, Err(RingError::OutsideRecord { .. })));
        out
    });
    assert_eq!(copied, Ok(Some(*b"6789")));
}

#[test]
fn epoch_reset_resyncs_the_consumer() {
    let dir = TestDir::new("epoch");
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("open");
    let me = hca.register_instance().expect("register");
    let (a, b, c) = (
        me.alloc_qpn().expect("a").qpn,
        me.alloc_qpn().expect("b").qpn,
        me.alloc_qpn().expect("c").qpn,
    );
    let mut producer = me.create_ring(a, 0, Some(4096)).expect("ring");
    let mut consumer = hca.open_ring(a, b).expect("consumer");
    producer.try_push(1, b"before-rtr", &[]).expect("push");
    assert_eq!(consumer.pop(), Ok(None), "epoch 1 is not addressed to b");
    assert_eq!(consumer.epoch(), None);

    producer.reset(b);
    assert_eq!(producer.epoch(), 2);
    producer.try_push(2, b"one", &[]).expect("push");
    producer.try_push(2, b"two", &[]).expect("push");
    assert_eq!(consumer.pop().expect("ok").expect("rec").bytes, b"one");
    assert_eq!(consumer.epoch(), Some(2));

    producer.reset(c); // reconnect elsewhere: b must not read c's records
    producer.try_push(3, b"for-c", &[]).expect("push");
    assert_eq!(consumer.pop(), Ok(None));
    let mut for_c = hca.open_ring(a, c).expect("consumer c");
    assert_eq!(for_c.pop().expect("ok").expect("rec").bytes, b"for-c");
    drop(for_c);

    producer.reset(b); // back to b: "two" of epoch 2 is skipped
    producer.try_push(4, b"three", &[]).expect("push");
    let record = consumer.pop().expect("ok").expect("rec");
    assert_eq!((record.kind, record.bytes.as_slice()), (4, &b"three"[..]));
    assert_eq!(consumer.epoch(), Some(4));
    assert_eq!(consumer.resyncs(), 2);
    assert!(producer.is_drained(), "skipped bytes were released");

    // Resets do not free unconsumed bytes: the producer fills up instead of overwriting
    // what a consumer may still be reading, until the consumer follows the new epoch.
    let mut rounds = 0;
    while producer.try_push(5, &[0; 500], &[]).is_ok() {
        producer.reset(b);
        rounds += 1;
        assert!(rounds < 100, "never filled up");
    }
    assert!(!producer.is_drained());
    assert_eq!(consumer.pop(), Ok(None), "nothing pushed in the newest epoch");
    assert_eq!(consumer.epoch(), Some(producer.epoch()));
    assert!(producer.is_drained(), "following the epoch released the old bytes");
    producer.try_push(6, b"last", &[]).expect("room again");
    assert_eq!(consumer.pop().expect("ok").expect("rec").bytes, b"last");
}

#[test]
fn header_polling_never_sees_skipped_or_consumed_records_again() {
    let dir = TestDir::new("headers");
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("open");
    let me = hca.register_instance().expect("register");
    let (a, b, c) = (
        me.alloc_qpn().expect("a").qpn,
        me.alloc_qpn().expect("b").qpn,
        me.alloc_qpn().expect("c").qpn,
    );
    let mut producer = me.create_ring(a, b, Some(4096)).expect("ring");
    let mut consumer = hca.open_ring(a, b).expect("consumer");
    let mut out = [0u64; 8];
    let mut n = 0usize;
    for round in 0..40 {
        // Some records, some of them left unread when the producer resets; every other
        // round the epoch in between goes to c, whose consumer reads part of it.
        let pushed = 3 + round % 5;
        for _ in 0..pushed {
            n += 1;
            let len = 8 + (n * 7) % 50;
            producer.try_push(1 + (n % 3) as u16, &vec![n as u8; len], &[]).expect("room");
        }
        let mut consumed = 0;
        for _ in 0..round % 3 {
            match consumer.pop_small(&mut out).expect("ok") {
                SmallRecord::Record { .. } => consumed += 1,
                other => panic!("round {round}: {other:?}"),
            }
        }
        assert!(consumed < pushed);
        if round % 2 == 1 {
            producer.reset(c);
            producer.try_push(9, b"for-c", &[]).expect("room");
            producer.try_push(9, b"for-c-unread", &[]).expect("room");
            let mut for_c = hca.open_ring(a, c).expect("consumer c");
            assert_eq!(for_c.pop().expect("ok").expect("rec").bytes, b"for-c");
        }
        producer.reset(b);
        // Only records of the new epoch come out, and nothing after them.
        for _ in 0..3 {
            n += 1;
            let bytes = vec![n as u8; 8 + n % 40];
            producer.try_push(7, &bytes, &[]).expect("room");
            match consumer.pop_small(&mut out).expect("ok") {
                SmallRecord::Record { kind: 7, len } => {
                    let got: Vec<u8> = out.iter().flat_map(|w| w.to_ne_bytes()).collect();
                    assert_eq!(&got[..len], &bytes[..], "round {round}");
                }
                other => panic!("round {round}: {other:?}"),
            }
        }
        assert!(!consumer.may_have_records(), "round {round}");
        assert_eq!(consumer.pop_small(&mut out), Ok(SmallRecord::None), "round {round}");
        assert!(producer.is_drained(), "round {round}");
    }
}

#[test]
fn stale_payload_at_a_new_header_position_is_never_taken_for_a_record() {
    let SmallRing { mut producer, mut consumer, .. } = SmallRing::new("stale");
    // Payload made of words that are valid headers of the ring's epoch (an 8-byte record
    // of kind 5): a later lap's header positions land on them, and only the protocol
    // (see "Headers" in ring.rs) keeps them from being read as records.
    let fake = 8 | (5u64 << 32) | (u64::from(producer.epoch() as u16) << 48);
    let payload: Vec<u8> = std::iter::repeat_n(fake.to_ne_bytes(), 63).flatten().collect();
    let mut out = [0u64; 8];
    for lap in 0..6 {
        // Big records fill a lap with fake headers; small ones then put their header
        // positions inside the big ones' payload. Popped one at a time with the header
        // poll, then through `consume`, records of either size and in either order.
        for (round, &(size, count)) in [(504usize, 8usize), (16, 40), (104, 30)].iter().enumerate()
        {
            for n in 0..count {
                let bytes = &payload[..size];
                let kind = 1 + n as u16 % 3;
                producer.try_push(kind, bytes, &[]).expect("room");
                if size <= 64 && (lap + n) % 2 == 0 {
                    let got = consumer.pop_small(&mut out).expect("ok");
                    assert_eq!(got, SmallRecord::Record { kind, len: size }, "lap {lap} {round}");
                } else {
                    let record = consumer.pop().expect("ok").expect("the record pushed");
                    assert_eq!((record.kind, record.bytes.len()), (kind, size), "lap {lap}");
                }
                assert!(!consumer.may_have_records(), "lap {lap} round {round} record {n}");
                assert_eq!(consumer.pop_small(&mut out), Ok(SmallRecord::None));
            }
        }
    }
}

/// Writes `bytes` at `offset` of the file behind `path` (through the page cache, which
/// the consumer's mapping shares).
fn poke(path: &Path, offset: usize, bytes: &[u8]) {
    let file = std::fs::OpenOptions::new().write(true).open(path).expect("open for poke");
    file.write_at(bytes, offset as u64).expect("poke");
}

fn peek_u64(path: &Path, offset: usize) -> u64 {
    let file = std::fs::File::open(path).expect("open for peek");
    let mut word = [0; 8];
    file.read_exact_at(&mut word, offset as u64).expect("peek");
    u64::from_ne_bytes(word)
}

#[test]
fn garbage_in_ring_header_or_records_is_an_error_not_a_panic() {
    let dir = TestDir::new("garbage");
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("open");
    let me = hca.register_instance().expect("register");
    let (a, b) = (me.alloc_qpn().expect("a").qpn, me.alloc_qpn().expect("b").qpn);
    let mut producer = me.create_ring(a, b, Some(4096)).expect("ring");
    let path = producer.path().to_path_buf();
    let data = ring_layout::DATA_OFFSET;
    let corrupt = |result: Result<Option<Record>, RingError>| {
        assert!(matches!(result, Err(RingError::Corrupt { .. })), "{result:?}");
    };

    // Record length beyond the limit.
    producer.try_push(1, b"hello", &[]).expect("push");
    let mut consumer = hca.open_ring(a, b).expect("consumer");
    let header = peek_u64(&path, data);
    poke(&path, data, &(header | 0xffff_ff00).to_ne_bytes()[..4]);
    let err = consumer.pop().expect_err("huge length");
    assert!(err.to_string().contains("length"), "{err}");
    corrupt(consumer.pop()); // stays failed, no progress on garbage
    poke(&path, data, &header.to_ne_bytes());
    assert_eq!(consumer.pop().expect("repaired").expect("rec").bytes, b"hello");

    // Tail beyond capacity, and misaligned.
    let tail = peek_u64(&path, ring_layout::OFF_TAIL);
    poke(&path, ring_layout::OFF_TAIL, &(tail + 8192).to_ne_bytes());
    corrupt(consumer.pop());
    assert!(consumer.discard_all().is_err(), "tail itself is garbage");
    poke(&path, ring_layout::OFF_TAIL, &(tail + 3).to_ne_bytes());
    corrupt(consumer.pop());
    poke(&path, ring_layout::OFF_TAIL, &tail.to_ne_bytes());
    assert_eq!(consumer.pop(), Ok(None));

    // Wrong epoch tag, and a padding record that does not reach the end.
    producer.try_push(1, b"x", &[]).expect("push");
    let at = data + 16;
    let header = peek_u64(&path, at);
    poke(&path, at, &(header ^ (1 << 48)).to_ne_bytes());
    let err = consumer.pop().expect_err("bad tag");
    assert!(err.to_string().contains("tag"), "{err}");
    poke(&path, at, &((header & !(0xffff_u64 << 32)) | (0xffff << 32)).to_ne_bytes());
    corrupt(consumer.pop());
    consumer.discard_all().expect("recover by discarding");
    assert_eq!(consumer.pop(), Ok(None));
    producer.try_push(1, b"after", &[]).expect("push");
    assert_eq!(consumer.pop().expect("ok").expect("rec").bytes, b"after");

    // A garbage head makes the producer see a full ring, not overwrite. (It re-reads the
    // head only when its cached free space is too small; free_bytes() forces a read.)
    let tail = peek_u64(&path, ring_layout::OFF_TAIL);
    for garbage_head in [tail + 64, tail - 3, u64::MAX] {
        poke(&path, ring_layout::OFF_HEAD, &garbage_head.to_ne_bytes());
        assert_eq!(producer.free_bytes(), 0, "head {garbage_head:#x}");
    }
    assert!(matches!(producer.try_push(1, b"y", &[]), Err(PushError::Full { .. })));

    // Random garbage everywhere the consumer reads: never a panic.
    let mut rng = 0x1234_5678_9abc_def0_u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut errors = 0;
    for _ in 0..3000 {
        let offset = match next() % 4 {
            0 => ring_layout::OFF_TAIL,
            1 => ring_layout::OFF_EPOCH_START,
            _ => data + (next() as usize % 4096) / 8 * 8,
        };
        let value = if next() % 2 == 0 { next() } else { next() % 8192 };
        poke(&path, offset, &value.to_ne_bytes());
        for _ in 0..4 {
            match consumer.pop() {
                Ok(Some(record)) => assert!(record.bytes.len() <= 2040),
                Ok(None) => break,
                Err(_) => {
                    errors += 1;
                    let _ = consumer.discard_all();
                    break;
                }
            }
        }
    }
    assert!(errors > 0);

    // Header validation at open.
    let cases: [(usize, &[u8], &str); 4] = [
        (ring_layout::OFF_MAGIC, b"NOTARING", "magic"),
        (ring_layout::OFF_VERSION, &77u32.to_ne_bytes(), "version"),
        (ring_layout::OFF_CAPACITY, &5000u64.to_ne_bytes(), "capacity"),
        (ring_layout::OFF_CAPACITY, &(1u64 << 20).to_ne_bytes(), "shorter"),
    ];
    for (offset, bytes, expect) in cases {
        let qp = me.alloc_qpn().expect("qp").qpn;
        let ring = me.create_ring(qp, b, Some(4096)).expect("ring");
        poke(ring.path(), offset, bytes);
        let err = hca.open_ring(qp, b).expect_err(expect);
        assert!(err.to_string().contains(expect), "{err}");
    }
    assert!(hca.open_ring(b, a).is_err(), "no ring file: error, with a hint");
    let qp = me.alloc_qpn().expect("qp").qpn;
    let ring = me.create_ring(qp, b, Some(4096)).expect("ring");
    std::fs::OpenOptions::new()
        .write(true)
        .open(ring.path())
        .and_then(|f| f.set_len(100))
        .expect("truncate");
    assert!(hca.open_ring(qp, b).expect_err("truncated").to_string().contains("shorter"));
    let err = hca.open_ring(a + 0x10_0000, b).expect_err("missing");
    assert!(err.to_string().contains("hint"), "{err}");
}

/// The placement gate: a QP that changed its facts (`publish_qp_facts`) waits, through its
/// inbound ring, until its peer's placement in progress (gate open) is over.
#[test]
fn a_facts_change_waits_for_the_peers_open_placement_gate() {
    let dir = TestDir::new("gate");
    let hca = dir.fabric().open_hca("hca0", gid(1)).expect("open");
    let me = hca.register_instance().expect("register");
    let (placer, target) = (me.alloc_qpn().expect("alloc"), me.alloc_qpn().expect("alloc"));
    let mut outbound = me.create_ring(placer.qpn, 0, None).expect("ring");
    outbound.reset(target.qpn);
    let inbound = hca.open_ring(placer.qpn, target.qpn).expect("open ring");
    assert_eq!(inbound.producer_pid(), std::process::id());
    outbound.publish_qp_facts(0x1234_0000_0203);
    assert_eq!(inbound.producer_qp_facts(), Some(0x1234_0000_0203));
    let other = hca.open_ring(placer.qpn, 0x99).expect("open ring");
    assert_eq!(other.producer_qp_facts(), None, "facts are for the QP the ring addresses");

    inbound.wait_while_producer_places(); // gate closed: returns at once
    outbound.set_placing(true);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waiter = {
        let done = done.clone();
        std::thread::spawn(move || {
            inbound.wait_while_producer_places();
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            inbound
        })
    };
    // Well inside the wait's limit (the waiter's clock starts after ours).
    std::thread::sleep(PLACEMENT_WAIT_LIMIT / 4);
    assert!(!done.load(std::sync::atomic::Ordering::SeqCst), "returned while the gate was open");
    outbound.set_placing(false);
    let inbound = waiter.join().unwrap();
    assert!(done.load(std::sync::atomic::Ordering::SeqCst));

    // A gate left open (a placer stopped in a debugger) holds a facts change no longer
    // than the limit.
    outbound.set_placing(true);
    let start = Instant::now();
    inbound.wait_while_producer_places();
    assert!(start.elapsed() >= PLACEMENT_WAIT_LIMIT);
}

/// A push that finds the ring full asks for room (`ring.rs`, "Room"): the consumer is told
/// to wake the producer once, when its reading has freed the room asked for (half the
/// ring, or the record if larger), not before and not again; a reset withdraws the request.
#[test]
fn a_full_ring_asks_for_room_and_the_consumer_grants_it_once() {
    // Kept whole (not destructured from a temporary): its directory holds the ring file.
    let mut ring = SmallRing::new("room");
    let SmallRing { producer, consumer, b, .. } = &mut ring;
    let path = producer.path().to_path_buf();
    let request_word = || peek_u64(&path, ring_layout::OFF_ROOM_WANTED);
    let record = |n: u32| (n.to_ne_bytes(), [n as u8; 100]);
    let mut pushed = 0u32;
    assert!(!consumer.take_room_request(), "no request in a fresh ring");
    let full = loop {
        let (header, body) = record(pushed);
        match producer.try_push(7, &header, &[&body]) {
            Ok(()) => pushed += 1,
            Err(e) => break e,
        }
    };
    // 36 records of 112 bytes (4032 of 4096): the next needs 176 with its padding.
    assert_eq!((pushed, full), (36, PushError::Full { needed: 176, free: 64 }));
    assert_ne!(request_word(), 0, "the full push left a request");
    // Half the ring (2048 bytes) is more than the record needs: the request names the
    // head position 4032 + 2048 - 4096 = 1984, reached after 18 records (2016 bytes).
    for n in 0..17 {
        assert!(consumer.pop().expect("ok").is_some(), "record {n}");
        assert!(!consumer.take_room_request(), "woken after only {} records", n + 1);
    }
    assert!(consumer.pop().expect("ok").is_some());
    assert!(consumer.take_room_request(), "the 18th record freed the room asked for");
    assert!(!consumer.take_room_request(), "one wake per request");
    assert_eq!(request_word(), 0, "the consumer cleared the request it granted");
    let (header, body) = record(pushed);
    producer.try_push(7, &header, &[&body]).expect("room after the wake");

    // Full again (records as large as the ring allows, 2040 bytes: the last one more than
    // the free space), then reset: the new epoch's consumer owes the old request nothing.
    while producer.try_push(7, &[0; 2040], &[]).is_ok() {}
    assert_ne!(request_word(), 0);
    producer.reset(*b);
    assert_eq!(request_word(), 0, "a reset withdraws the request");
}
