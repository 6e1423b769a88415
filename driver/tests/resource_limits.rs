//! Many objects over a process's life, as a long-running MPI job or storage target makes
//! them: device numbers stay unique among the live objects when the HCA's counters wrap,
//! the per-process QP limit fails CREATE_QP with the kernel's errno and a message that
//! says what to do (and destroying QPs makes room again), and creating and destroying
//! connected QPs leaves no file descriptor or mapping behind.
//!
//! The counters are 24 bits wide; rather than make 16 million objects, the tests move the
//! HCA registry's counter (a word of a shared file in the test's private fabric) to just
//! before the wrap, as if that many had been made since.

#[path = "support/loopback.rs"]
mod loopback;
mod support;

use ferrodat_driver::completion::{WcOpcode, WcStatus, WorkCompletion};
use ferrodat_driver::work_request::{Payload, Remote, SendOp, SendWr};
use ferrodat_driver::{Access, Context, Cq, CqOptions, Pd, Qp, QpCaps, QpInit, Srq};
use ferrodat_softhca::Device;
use ferrodat_softhca::fabric::layout::registry as reg;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use support::{TestFabric, device};

/// The fd and mapping counts of this process are compared: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The registry's allocation counter at `offset`, moved on so that the next number it
/// hands out is the one it handed out last (a whole lap of `range` numbers later).
fn rewind_one_lap(dev: &Device, offset: usize, range: u64) {
    let file = File::options().read(true).write(true).open(dev.engine().registry().path()).unwrap();
    let mut word = [0u8; 8];
    file.read_exact_at(&mut word, offset as u64).unwrap();
    let count = u64::from_ne_bytes(word);
    file.write_all_at(&(count - 1 + range).to_ne_bytes(), offset as u64).unwrap();
}

/// The range of a 24-bit number space starting at `first`.
fn range_from(first: u32) -> u64 {
    u64::from((1u32 << 24) - first)
}

fn setup(tag: &str) -> (TestFabric, Arc<Device>, Context) {
    let fabric = TestFabric::new(tag);
    let dev = device(fabric.dir(), false);
    let ctx = Context::open_softhca(dev.clone()).unwrap();
    (fabric, dev, ctx)
}

/// Two QPs connected to each other, in `pd_a` and `pd_b`.
fn pair<'m>(ctx: &Context, pd_a: &Pd, pd_b: &Pd, cq: &Cq) -> (Qp<'m>, Qp<'m>) {
    let caps = QpCaps { max_inline_data: 64, ..Default::default() };
    loopback::connected_pair_of(ctx, [pd_a, pd_b], &QpInit::new(cq, cq, caps))
}

fn one(cq: &mut Cq) -> WorkCompletion {
    let mut wc = [WorkCompletion::default(); 1];
    assert_eq!(cq.poll_wait(&mut wc, Duration::from_secs(5)), 1, "no completion");
    wc[0]
}

#[test]
fn a_cq_number_is_not_handed_out_again_while_its_cq_lives() {
    let _g = serial();
    let (_fabric, dev, ctx) = setup("cqn-wrap");
    let pd = Pd::new(&ctx).unwrap();
    let mut old = Cq::new(&ctx, &CqOptions { cqe: 16, ..Default::default() }).unwrap();
    rewind_one_lap(&dev, reg::OFF_NEXT_CQN, range_from(0x400));
    let new = Cq::new(&ctx, &CqOptions { cqe: 16, ..Default::default() }).unwrap();
    assert_ne!(new.cqn(), old.cqn(), "two live CQs with one number");
    // The old CQ still gets its QPs' completions.
    let (mut a, _b) = pair(&ctx, &pd, &pd, &old);
    a.post_send(&[SendWr::new(5, SendOp::Nop, Payload::EMPTY)]).unwrap();
    let w = one(&mut old);
    assert_eq!((w.wr_id, w.status), (5, WcStatus::Success));
    drop(new);
}

#[test]
fn a_memory_key_index_is_not_handed_out_again_while_its_region_lives() {
    let _g = serial();
    let (_fabric, dev, ctx) = setup("mkey-wrap");
    let pd = Pd::new(&ctx).unwrap();
    let target = pd.alloc_mr(4096, Access::ALL).unwrap();
    rewind_one_lap(&dev, reg::OFF_NEXT_MKEY, range_from(0x100));
    let other = pd.alloc_mr(4096, Access::ALL).unwrap();
    assert_ne!(other.rkey() >> 8, target.rkey() >> 8, "two live regions with one key index");
    // An RDMA WRITE through the long-lived region's key still lands in it.
    let mut cq = Cq::new(&ctx, &CqOptions { cqe: 16, ..Default::default() }).unwrap();
    let (mut a, _b) = pair(&ctx, &pd, &pd, &cq);
    let remote = Remote { addr: target.addr() + 8, rkey: target.rkey() };
    a.post_send(&[SendWr::new(1, SendOp::RdmaWrite(remote), Payload::Inline(b"still mine"))])
        .unwrap();
    let w = one(&mut cq);
    assert_eq!((w.opcode, w.status), (WcOpcode::RdmaWrite, WcStatus::Success), "{w:?}");
    let mut got = [0u8; 10];
    target.read(8, &mut got).unwrap();
    assert_eq!(&got, b"still mine");
    drop(other);
}

#[test]
fn a_protection_domain_number_is_not_handed_out_again_while_its_pd_lives() {
    let _g = serial();
    let (_fabric, dev, ctx) = setup("pdn-wrap");
    let pd = Pd::new(&ctx).unwrap();
    rewind_one_lap(&dev, reg::OFF_NEXT_PDN, range_from(1));
    let stranger = Pd::new(&ctx).unwrap();
    assert_ne!(stranger.pdn(), pd.pdn(), "two live PDs with one number");
    // A QP of the other PD must not reach the first PD's memory.
    let mine = pd.alloc_mr(4096, Access::ALL).unwrap();
    let mut cq = Cq::new(&ctx, &CqOptions { cqe: 16, ..Default::default() }).unwrap();
    let (mut a, _b) = pair(&ctx, &pd, &stranger, &cq);
    let remote = Remote { addr: mine.addr(), rkey: mine.rkey() };
    a.post_send(&[SendWr::new(1, SendOp::RdmaWrite(remote), Payload::Inline(b"intruder"))])
        .unwrap();
    let w = one(&mut cq);
    assert_eq!(w.status, WcStatus::RemoteAccess, "{w:?}");
}

#[test]
fn an_srq_number_is_not_handed_out_again_while_its_srq_lives() {
    let _g = serial();
    let (_fabric, dev, ctx) = setup("srqn-wrap");
    let pd = Pd::new(&ctx).unwrap();
    let old = Srq::new(&pd, 16, 1).unwrap();
    rewind_one_lap(&dev, reg::OFF_NEXT_SRQN, range_from(0x80));
    let new = Srq::new(&pd, 16, 1).unwrap();
    assert_ne!(new.srqn(), old.srqn(), "two live SRQs with one number");
}

#[test]
fn create_qp_past_the_process_limit_fails_with_enomem_naming_it_and_destroying_makes_room() {
    let _g = serial();
    let (_fabric, _dev, ctx) = setup("qp-limit");
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::new(&ctx, &CqOptions { cqe: 16, ..Default::default() }).unwrap();
    let caps = QpCaps { max_send_wr: 1, max_recv_wr: 1, ..Default::default() };
    let init = QpInit::new(&cq, &cq, caps);
    let mut qps: Vec<Qp<'_>> = Vec::new();
    let start = std::time::Instant::now();
    let err = loop {
        match Qp::new(&pd, &init) {
            Ok(q) => qps.push(q),
            Err(e) => break e,
        }
        assert!(qps.len() <= 1 << 18, "no limit");
    };
    eprintln!("{} QPs in {:?}; then: {err}", qps.len(), start.elapsed());
    assert_eq!(err.errno_value(), Some(libc::ENOMEM), "{err}");
    // The hint names the limit that was met, not RLIMIT_MEMLOCK (softhca pins nothing).
    let hint = err.hint().unwrap_or_default();
    assert!(hint.contains("4096 QPs per process") && !hint.contains("ulimit -l"), "{err}");
    qps.truncate(qps.len() - 10);
    for _ in 0..10 {
        qps.push(Qp::new(&pd, &init).expect("CREATE_QP after DESTROY_QP made room"));
    }
    assert!(Qp::new(&pd, &init).is_err());
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps").unwrap().lines().count()
}

#[test]
fn connected_qp_pairs_created_and_destroyed_leave_no_fd_or_mapping() {
    const PAIRS: usize = 2000;
    let _g = serial();
    let (_fabric, _dev, ctx) = setup("qp-churn");
    let pd = Pd::new(&ctx).unwrap();
    let mut cq = Cq::new(&ctx, &CqOptions { cqe: 16, ..Default::default() }).unwrap();
    let mut round = |k: u64| {
        let (mut a, b) = pair(&ctx, &pd, &pd, &cq);
        // Traffic, so that each QP has mapped its peer's ring too.
        a.post_send(&[SendWr::new(k, SendOp::Nop, Payload::EMPTY)]).unwrap();
        assert_eq!(one(&mut cq).wr_id, k);
        drop((a, b));
    };
    round(0); // what lives as long as the process
    let (fds, maps) = (open_fds(), mappings());
    let start = std::time::Instant::now();
    for k in 1..=PAIRS as u64 {
        round(k);
    }
    eprintln!("{PAIRS} pairs in {:?}", start.elapsed());
    let (fds_after, maps_after) = (open_fds(), mappings());
    assert!(fds_after <= fds + 2, "{PAIRS} pairs: {fds} → {fds_after} open fds");
    assert!(maps_after <= maps + 8, "{PAIRS} pairs: {maps} → {maps_after} mappings");
}
