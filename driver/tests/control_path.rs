//! The control path against softhca in-process, each test on a private fabric.

use ferrodat_driver::discovery::DeviceKind;
use ferrodat_driver::{
    Access, CompChannel, Context, Cq, CqOptions, Pd, PortState, Qp, QpAttr, QpCaps, QpInit,
    QpState, RemoteQp, Srq,
};
use ferrodat_softhca::Device;
use ferrodat_softhca::config::DeviceConfig;
use ferrodat_softhca::fabric::FabricDir;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A private fabric directory under /dev/shm, removed on drop.
struct TestFabric {
    path: PathBuf,
}

impl TestFabric {
    fn new() -> TestFabric {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = PathBuf::from(format!("/dev/shm/ferrodat-drv-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        TestFabric { path }
    }

    fn dir(&self) -> FabricDir {
        FabricDir::new(&self.path)
    }
}

impl Drop for TestFabric {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// softhca0 on 127.0.0.1 on a private fabric. The fabric goes after the context.
fn open() -> (Context, TestFabric) {
    let fabric = TestFabric::new();
    let config = DeviceConfig { name: "softhca0".into(), addr: "127.0.0.1".parse().unwrap() };
    let dev = Device::new_in(config, fabric.dir()).expect("join the private fabric");
    (Context::open_softhca(dev).expect("open softhca0"), fabric)
}

fn cq(ctx: &Context, cqe: u32) -> Cq {
    Cq::new(ctx, &CqOptions { cqe, ..Default::default() }).expect("CREATE_CQ")
}

fn qp(pd: &Pd, cq: &Cq) -> Qp<'static> {
    Qp::new(pd, &QpInit::new(cq, cq, QpCaps { max_inline_data: 60, ..Default::default() }))
        .expect("CREATE_QP")
}

#[test]
fn unknown_name_lists_devices_and_both_options() {
    let e = ferrodat_driver::open("no-such-hca9").unwrap_err();
    let s = e.to_string();
    assert_eq!(e.op(), "open");
    for want in
        ["no-such-hca9", "softhca0", "mlx5_ib", "/dev/infiniband/uverbs", "FERRODAT_SOFTHCA"]
    {
        assert!(s.contains(want), "{want:?} missing in: {s}");
    }
    assert!(!s.contains('\n'), "{s}");
}

#[test]
fn open_by_name_through_discovery() {
    let fabric = TestFabric::new();
    let d = ferrodat_driver::discover();
    let mut info = d.find("softhca0").expect("softhca0 is configured by default").clone();
    match &mut info.kind {
        DeviceKind::Softhca(s) => s.fabric = fabric.dir(),
        DeviceKind::Hardware(_) => panic!("softhca0 is not hardware"),
    }
    let ctx = Context::open_device(&info).expect("open softhca0");
    assert_eq!(ctx.name(), "softhca0");
    assert!(ctx.channel().is_softhca());
}

#[test]
fn get_context_values_and_bfregs() {
    let (ctx, _f) = open();
    let a = ctx.attr();
    assert_eq!(a.tot_bfregs, 16);
    assert_eq!(a.bf_reg_size, 512);
    assert_eq!(a.cache_line_size, 64);
    assert_eq!(a.cqe_version, 1);
    assert!(a.num_comp_vectors >= 1);
    assert!(a.max_sq_desc_sz >= 256 && a.max_send_wqebb > 0);
    assert_eq!(ctx.uar_pages(), 8);
    let b0 = ctx.bfreg(0).unwrap();
    assert_eq!((b0.uar_page, b0.offset_in_page, b0.buf_size), (0, 0x800, 0));
    // bfreg 1 is of the medium class, shared by QPs: doorbells only, no BlueFlame copies
    // two threads could interleave. 24, 25, 28, 29 are the four low-latency ones.
    let b1 = ctx.bfreg(1).unwrap();
    assert_eq!((b1.uar_page, b1.offset_in_page, b1.buf_size), (0, 0xa00, 0));
    assert_eq!(ctx.bfreg(21).unwrap().buf_size, 0, "the last medium bfreg");
    for dedicated in [24, 25, 28, 29] {
        assert_eq!(ctx.bfreg(dedicated).unwrap().buf_size, 256, "bfreg {dedicated}");
    }
    let b25 = ctx.bfreg(25).unwrap();
    assert_eq!((b25.uar_page, b25.offset_in_page), (6, 0xa00));
    let (p6, i6) = ctx.uar_page(6).unwrap();
    assert_eq!(i6, 6);
    assert_eq!(b25.reg.as_ptr() as usize - p6.as_ptr() as usize, 0xa00);
    assert!(ctx.bfreg(2).is_err(), "k = 2 is a kernel bfreg");
    assert!(ctx.bfreg(32).is_err(), "past the mapped pages");
    assert!(ctx.read_async_event(Some(Duration::from_millis(1))).unwrap().is_none());
}

#[test]
fn device_and_port_are_sane() {
    let (ctx, _f) = open();
    let d = ctx.query_device().expect("query_device");
    // QUERY_DEVICE reports the IEEE OUI (0x02c9); 0x15b3 is the PCI vendor id.
    assert_eq!(d.vendor_id, 0x02c9);
    assert_eq!(d.vendor_part_id, 4119);
    assert_eq!(d.phys_port_cnt, 1);
    assert!(d.max_qp > 0 && d.max_cqe > 0 && d.max_sge > 0 && d.max_qp_wr > 0);
    let p = ctx.query_port(1).expect("query_port");
    assert_eq!(p.state, PortState::Active);
    assert_eq!(p.link_layer, 2, "Ethernet (RoCE)");
    assert!(p.gid_tbl_len >= 1 && p.active_mtu_bytes() >= 1024);
    let gid = ctx.gid(1, 0).unwrap();
    assert_eq!(gid, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1]);
    assert!(ctx.gid(1, 1).is_err());
}

#[test]
fn pd_and_mr() {
    let (ctx, _f) = open();
    let pd = Pd::new(&ctx).unwrap();
    let mut a = vec![0u8; 4096];
    let mut b = [0u8; 100];
    let ma = pd.reg_mr(&mut a, Access::LOCAL_WRITE).unwrap();
    // unaligned start and length
    let mb = pd.reg_mr(&mut b[3..], Access::ALL).unwrap();
    assert_ne!(ma.lkey(), mb.lkey());
    assert_ne!(ma.rkey(), mb.rkey());
    assert_eq!(mb.len(), 97);
    mb.write(90, b"hello!!").unwrap();
    let mut out = [0u8; 7];
    mb.read(90, &mut out).unwrap();
    assert_eq!(&out, b"hello!!");
    let e = mb.write(91, b"hello!!").unwrap_err();
    assert!(e.to_string().contains("pass the end"), "{e}");
    assert!(mb.read(usize::MAX, &mut out).is_err());
    drop(mb);
    drop(ma);
    assert_eq!(&b[93..100], b"hello!!", "the buffer is the user's again");

    let mut empty: [u8; 0] = [];
    let e = pd.reg_mr(&mut empty, Access::LOCAL_WRITE).unwrap_err();
    assert_eq!(e.errno_name(), Some("EINVAL"));
    let mut c = [0u8; 64];
    let e = pd.reg_mr(&mut c, Access::REMOTE_WRITE).unwrap_err();
    assert_eq!(e.errno_value(), Some(22)); // EINVAL
    assert!(e.to_string().contains("REG_MR") && e.to_string().contains("EINVAL"), "{e}");

    let owned = pd.alloc_mr(10_000, Access::LOCAL_WRITE).unwrap();
    owned.write(9_999, &[5]).unwrap();
    assert!(owned.write(10_000, &[5]).is_err());
    let huge = pd.alloc_mr_huge(4096, Access::LOCAL_WRITE).unwrap();
    assert_eq!(huge.len(), 4096);
    let shared = pd.alloc_mr_shared(10_000, Access::LOCAL_WRITE | Access::REMOTE_WRITE).unwrap();
    assert_eq!(shared.backing(), ferrodat_driver::dma::Backing::SharedFile);
    assert_eq!(shared.len(), 10_000);
    shared.write(9_990, b"0123456789").unwrap();
    let mut back = [0u8; 10];
    shared.read(9_990, &mut back).unwrap();
    assert_eq!(&back, b"0123456789");
    assert!(shared.write(9_991, b"0123456789").is_err(), "past the registered length");
}

#[test]
fn cq_rounding_resize_destroy() {
    let (ctx, _f) = open();
    assert_eq!(cq(&ctx, 10).ncqe(), 16);
    assert_eq!(cq(&ctx, 15).ncqe(), 16);
    assert_eq!(cq(&ctx, 16).ncqe(), 32);
    let mut c = cq(&ctx, 10);
    let g = c.geometry();
    assert_eq!((g.ncqe, g.cqe_size), (16, 64));
    // every op_own starts as 0xF0
    // SAFETY: byte 63 of the first CQE, inside the ring; nothing writes it yet.
    assert_eq!(unsafe { g.buf.as_ptr().add(63).read_volatile() }, 0xf0);
    assert_eq!(c.resize(100).unwrap(), 128);
    assert_eq!(c.geometry().ncqe, 128);
    assert_ne!(c.geometry().buf, g.buf);
    let counts = c.destroy().expect("DESTROY_CQ");
    assert_eq!(counts.comp_events_reported, 0);
    let e =
        Cq::new(&ctx, &CqOptions { cqe: 4, comp_vector: 99, ..Default::default() }).unwrap_err();
    assert_eq!(e.errno_name(), Some("EINVAL"));
}

#[test]
fn a_qp_keeps_its_cq_alive() {
    let (ctx, _f) = open();
    let pd = Pd::new(&ctx).unwrap();
    let c = cq(&ctx, 16);
    let mut q = qp(&pd, &c);
    let (c, e) = *c.destroy().unwrap_err();
    assert!(e.to_string().contains("still used"), "{e}");
    drop(c);
    drop(pd);
    // The CQ and PD handles are gone, the QP still works on them.
    q.modify(&QpAttr::reset_to_init(Access::LOCAL_WRITE)).expect("the QP still lives");
    assert_eq!(q.send_cqn(), q.recv_cqn());
    assert_eq!(q.query().unwrap().state, Some(QpState::Init));
    drop(q); // DESTROY_QP, then DESTROY_CQ and DEALLOC_PD
}

#[test]
fn loopback_pair_reaches_rts() {
    let (ctx, _f) = open();
    let pd = Pd::new(&ctx).unwrap();
    let c = cq(&ctx, 64);
    let (mut a, mut b) = (qp(&pd, &c), qp(&pd, &c));
    let g = a.geometry();
    assert_eq!(g.sq_offset, g.rq_wqe_cnt as usize * (1 << g.rq_wqe_shift));
    assert!(g.sq_wqe_cnt.is_power_of_two() && g.rq_wqe_cnt.is_power_of_two());
    assert_eq!(g.sq_max_inline, 60);
    assert_ne!(a.geometry().bfreg.index, 0, "the first QPs get a BlueFlame bfreg");
    assert_ne!(a.geometry().uidx, b.geometry().uidx);
    let gid = ctx.gid(1, 0).unwrap();
    let remote = |q: &Qp, psn| RemoteQp { qpn: q.qpn(), psn, gid, max_rd_atomic: 4 };
    a.connect(&remote(&b, 0x200), 0x100, 3, Access::ALL).expect("connect a");
    b.connect(&remote(&a, 0x100), 0x200, 3, Access::ALL).expect("connect b");
    let qa = a.query().unwrap();
    assert_eq!(qa.state, Some(QpState::Rts));
    assert_eq!(qa.dest_qpn, b.qpn());
    assert_eq!(qa.dgid, gid);
    assert_eq!((qa.rq_psn, qa.sq_psn), (0x200, 0x100));
    // The kernel reports 0 for a user QP's send side; the query reports what the send
    // queue was built with, as CREATE_QP granted it (rdma-core's mlx5_query_qp does so).
    assert_eq!(qa.raw.max_send_wr, 0, "the kernel's answer");
    assert_eq!(
        (qa.caps.max_send_wr, qa.caps.max_send_sge, qa.caps.max_inline_data),
        (a.caps().max_send_wr, a.caps().max_send_sge, a.caps().max_inline_data)
    );
    assert!(qa.caps.max_send_wr > 0 && qa.caps.max_recv_wr > 0, "{:?}", qa.caps);
    // mlx5 has no firmware command for RTS→SQD: mlx5_ib (and softhca) answer EINVAL.
    assert_eq!(a.to_sqd().unwrap_err().errno_name(), Some("EINVAL"));
    assert_eq!(a.query().unwrap().state, Some(QpState::Rts));
}

/// QUERY_QP reads the PSNs back from the QP context, as mlx5_ib does (`next_send_psn`,
/// `next_rcv_psn`): they count the messages that went each way across the 24-bit wrap, and
/// a reset context reads zero until RTR and RTS set them again.
#[test]
fn query_reports_the_psns_the_context_has_reached() {
    use ferrodat_driver::completion::WorkCompletion;
    use ferrodat_driver::work_request::{Payload, RecvWr, SendFlags, SendOp, SendWr};
    let (ctx, _f) = open();
    let pd = Pd::new(&ctx).unwrap();
    let mut c = cq(&ctx, 64);
    let (mut a, mut b) = (qp(&pd, &c), qp(&pd, &c));
    let gid = ctx.gid(1, 0).unwrap();
    let remote = |q: &Qp, psn| RemoteQp { qpn: q.qpn(), psn, gid, max_rd_atomic: 4 };
    let (a_psn, b_psn) = (0xff_fffe, 0x200);
    a.connect(&remote(&b, b_psn), a_psn, 3, Access::ALL).expect("connect a");
    b.connect(&remote(&a, a_psn), b_psn, 3, Access::ALL).expect("connect b");
    let mr = pd.alloc_mr(64 * 8, Access::ALL).unwrap();
    const SENT: u32 = 5;
    for i in 0..SENT as usize {
        let sge = [mr.sge(i * 64, 64).unwrap()];
        b.post_recv(&[RecvWr { wr_id: i as u64, sges: &sge }]).unwrap();
    }
    for i in 0..SENT {
        let wr = SendWr::new(u64::from(i), SendOp::Send, Payload::Inline(&[7; 8]))
            .flags(SendFlags::SIGNALED);
        a.post_send(&[wr]).unwrap();
    }
    // The sends' and the receives' completions.
    let mut wc = [WorkCompletion::default(); 2 * SENT as usize];
    assert_eq!(c.poll_wait(&mut wc, Duration::from_secs(5)), wc.len());
    assert!(wc.iter().all(|w| w.is_ok()), "{wc:?}");
    let past_the_wrap = (a_psn + SENT) & 0xff_ffff;
    assert_eq!(past_the_wrap, 3);
    let (qa, qb) = (a.query().unwrap(), b.query().unwrap());
    assert_eq!((qa.sq_psn, qa.rq_psn), (past_the_wrap, b_psn), "A sent {SENT}, received none");
    assert_eq!((qb.sq_psn, qb.rq_psn), (b_psn, past_the_wrap), "B received {SENT}, sent none");
    // RESET clears the context; INIT keeps it clear.
    b.reset().unwrap();
    let q = b.query().unwrap();
    assert_eq!((q.state, q.sq_psn, q.rq_psn), (Some(QpState::Reset), 0, 0));
    b.modify(&QpAttr::reset_to_init(Access::ALL)).unwrap();
    b.to_error().unwrap();
    let q = b.query().unwrap();
    assert_eq!((q.state, q.sq_psn, q.rq_psn), (Some(QpState::Err), 0, 0), "ERR from INIT");
}

#[test]
fn bad_transition_and_error_then_reset() {
    let (ctx, _f) = open();
    let pd = Pd::new(&ctx).unwrap();
    let c = cq(&ctx, 8);
    let mut q = qp(&pd, &c);
    let e = q.modify(&QpAttr::rtr_to_rts(1, 1)).unwrap_err();
    assert_eq!(e.errno_name(), Some("EINVAL"));
    let s = e.to_string();
    assert!(s.contains("MODIFY_QP") && s.contains("Rts") && s.contains("hint"), "{s}");
    q.modify(&QpAttr::reset_to_init(Access::LOCAL_WRITE)).unwrap();
    q.to_error().unwrap();
    assert_eq!(q.query().unwrap().state, Some(QpState::Err));
    q.reset().unwrap();
    assert_eq!(q.query().unwrap().state, Some(QpState::Reset));
}

#[test]
fn srq_create_limit_destroy() {
    let (ctx, _f) = open();
    let pd = Pd::new(&ctx).unwrap();
    let srq = Srq::new(&pd, 100, 2).expect("CREATE_SRQ");
    let g = *srq.geometry();
    assert_eq!((g.wqe_cnt, g.wqe_shift), (128, 6));
    assert_eq!(srq.max_wr(), 127);
    srq.set_limit(10).expect("arm the limit");
    let c = cq(&ctx, 8);
    let q = Qp::new(&pd, &QpInit { srq: Some(&srq), ..QpInit::new(&c, &c, QpCaps::default()) })
        .expect("CREATE_QP on an SRQ");
    assert_eq!(q.geometry().rq_wqe_cnt, 0);
    drop(srq);
    assert!(q.srq().is_some());
    drop(q);
    assert!(Srq::new(&pd, 0, 1).is_err());
}

#[test]
fn comp_channel_wait_times_out() {
    let (ctx, _f) = open();
    let ch = CompChannel::new(&ctx).expect("CREATE_COMP_CHANNEL");
    let c = Cq::new(&ctx, &CqOptions { cqe: 8, channel: Some(&ch), ..Default::default() })
        .expect("CREATE_CQ with a channel");
    assert!(std::os::fd::AsRawFd::as_raw_fd(&ch) >= 0);
    assert_eq!(ch.wait(Some(Duration::from_millis(20))).unwrap(), None);
    assert_eq!(c.arm_sn(), 0);

    // Events name their CQ by user handle: a second CQ of the channel may not share one
    // (another channel, or a CQ without one, may).
    let with =
        |h, ch| CqOptions { cqe: 8, channel: ch, user_handle: Some(h), ..Default::default() };
    let first = Cq::new(&ctx, &with(7, Some(&ch))).unwrap();
    let e = Cq::new(&ctx, &with(7, Some(&ch))).unwrap_err().to_string();
    assert!(e.contains("CREATE_CQ") && e.contains("user handle 0x7"), "{e}");
    let other = CompChannel::new(&ctx).unwrap();
    let _elsewhere = Cq::new(&ctx, &with(7, Some(&other))).unwrap();
    let _unwatched = Cq::new(&ctx, &with(7, None)).unwrap();
    drop(first);
    let _again = Cq::new(&ctx, &with(7, Some(&ch))).expect("free once the first CQ is gone");
}

#[test]
fn reg_mr_of_memory_it_cannot_write_says_so_not_memlock() {
    // The kernel's ib_umem_get answers ENOMEM when RLIMIT_MEMLOCK is exceeded and EFAULT
    // when pinning fails (unmapped, or read-only memory pinned for writing): EFAULT is
    // never about the memlock limit, whatever that limit is.
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit on our own rlimit value; lowering a soft limit is allowed.
    unsafe {
        libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r);
        if r.rlim_cur == libc::RLIM_INFINITY {
            r.rlim_cur = 64 << 20;
            libc::setrlimit(libc::RLIMIT_MEMLOCK, &r);
        }
    }
    let (ctx, _f) = open();
    let pd = Pd::new(&ctx).unwrap();
    // SAFETY: a fresh private read-only mapping, unmapped at the end of the test.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    // SAFETY: the page stays mapped until after the (failed) registration; nothing in Rust
    // references it.
    let e = unsafe { pd.reg_mr_raw(page.cast(), 4096, Access::LOCAL_WRITE) }.unwrap_err();
    // SAFETY: our mapping, no longer used.
    unsafe { libc::munmap(page, 4096) };
    assert_eq!(e.errno_name(), Some("EFAULT"), "{e}");
    let hint = e.hint().unwrap_or_default();
    assert!(!hint.contains("MEMLOCK"), "EFAULT is not a memlock problem: {e}");
    assert!(hint.contains("mapped"), "{e}");
}
