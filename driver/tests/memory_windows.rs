//! Type 1 memory windows end to end over softhca in one process: a loopback pair where QP
//! `a` binds a window over part of a region that grants no remote access itself, and QP
//! `b` reads and writes through the window's key; everything outside the window's range
//! or rights, and everything after an unbind, is refused as a remote access error; binds
//! the HCA must refuse complete with MW_BIND_ERR.

#[path = "support/loopback.rs"]
mod loopback;

use ferrodat_driver::completion::{WcOpcode, WcStatus, WorkCompletion};
use ferrodat_driver::work_request::{Payload, Remote, SendFlags, SendOp, SendWr};
use ferrodat_driver::{Access, Context, Cq, CqOptions, Pd};
use ferrodat_softhca::Device;
use ferrodat_softhca::config::DeviceConfig;
use ferrodat_softhca::fabric::FabricDir;
use std::time::Duration;

struct Fixture {
    path: String,
    ctx: Context,
    pd: Pd,
    cq: Cq,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn fixture(tag: &str) -> Fixture {
    let path = format!("/dev/shm/ferrodat-drv-mw-{tag}-{}", std::process::id());
    let config = DeviceConfig { name: "softhca0".into(), addr: "127.0.0.1".parse().unwrap() };
    let dev = Device::new_in(config, FabricDir::new(&path)).unwrap();
    let ctx = Context::open_softhca(dev).unwrap();
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::new(&ctx, &CqOptions { cqe: 64, ..Default::default() }).unwrap();
    Fixture { path, ctx, pd, cq }
}

/// The one completion of the request just posted.
fn one(cq: &mut Cq) -> WorkCompletion {
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(cq.poll_wait(&mut wc[..1], Duration::from_secs(5)), 1, "a completion");
    wc[0]
}

/// Everything left on the CQ (flushes of a pair that went to the error state).
fn drain(cq: &mut Cq) {
    let mut wc = [WorkCompletion::default(); 16];
    while cq.poll_wait(&mut wc, Duration::from_millis(50)) > 0 {}
}

#[test]
fn a_peer_reads_and_writes_through_a_bound_window_and_nowhere_else() {
    let mut f = fixture("rw");
    let mut target = vec![0u8; 4096];
    let mut local = vec![0u8; 64];
    // The region itself grants no remote access: only the window will.
    let target_mr = f.pd.reg_mr(&mut target, Access::LOCAL_WRITE | Access::MW_BIND).unwrap();
    let local_mr = f.pd.reg_mr(&mut local, Access::LOCAL_WRITE).unwrap();
    let mw = f.pd.alloc_mw().unwrap();
    let first_key = mw.rkey();
    let (mut a, mut b) = loopback::connected_pair(&f.ctx, &f.pd, &f.cq, false);

    let rights = Access::REMOTE_READ | Access::REMOTE_WRITE;
    let region = target_mr.sge(256, 512).unwrap();
    let key = a.bind_mw(&mw, 1, Some(region), rights, SendFlags::SIGNALED).unwrap();
    assert_eq!((key >> 8, key & 0xff), (first_key >> 8, (first_key + 1) & 0xff), "new variant");
    assert_eq!(mw.rkey(), key);
    let wc = one(&mut f.cq);
    assert_eq!((wc.wr_id, wc.opcode, wc.status), (1, WcOpcode::BindMw, WcStatus::Success));

    let window = |offset: u64| Remote { addr: target_mr.addr() + 256 + offset, rkey: key };
    let write = SendWr::new(2, SendOp::RdmaWrite(window(500)), Payload::Inline(b"windowed"));
    b.post_send(&[write]).unwrap();
    assert_eq!(one(&mut f.cq).status, WcStatus::Success);
    let mut got = [0u8; 8];
    target_mr.read(756, &mut got).unwrap();
    assert_eq!(&got, b"windowed");

    target_mr.write(256, b"read me through the window").unwrap();
    let into = [local_mr.sge(0, 26).unwrap()];
    b.post_send(&[SendWr::new(3, SendOp::RdmaRead(window(0)), Payload::Sges(&into))]).unwrap();
    let wc = one(&mut f.cq);
    assert_eq!((wc.opcode, wc.status, wc.byte_len), (WcOpcode::RdmaRead, WcStatus::Success, 26));
    let mut got = [0u8; 26];
    local_mr.read(0, &mut got).unwrap();
    assert_eq!(&got, b"read me through the window");

    // The region's own key grants nothing remote; nor does the window's old key, nor any
    // byte outside the window. Each refusal breaks its pair: a fresh one per case.
    let cases = [
        ("the region's key", Remote { addr: target_mr.addr() + 300, rkey: target_mr.rkey() }),
        ("the window's old key", Remote { addr: target_mr.addr() + 300, rkey: first_key }),
        ("one byte past the window", window(512)),
        ("one byte before the window", Remote { addr: target_mr.addr() + 255, rkey: key }),
    ];
    for (what, remote) in cases {
        let (_a, mut b) = loopback::connected_pair(&f.ctx, &f.pd, &f.cq, false);
        b.post_send(&[SendWr::new(9, SendOp::RdmaWrite(remote), Payload::Inline(b"x"))]).unwrap();
        let wc = one(&mut f.cq);
        assert_eq!((wc.wr_id, wc.status), (9, WcStatus::RemoteAccess), "{what}");
        drain(&mut f.cq);
    }
    target_mr.read(255, &mut got[..1]).unwrap();
    assert_eq!(got[0], 0, "the refused write before the window wrote nothing");

    // No atomic right: an atomic through the window is a remote access error.
    let (_a2, mut b2) = loopback::connected_pair(&f.ctx, &f.pd, &f.cq, false);
    let eight = [local_mr.sge(0, 8).unwrap()];
    let fa = SendWr::new(10, SendOp::FetchAdd { remote: window(8), add: 1 }, Payload::Sges(&eight));
    b2.post_send(&[fa]).unwrap();
    assert_eq!(one(&mut f.cq).status, WcStatus::RemoteAccess);
    drain(&mut f.cq);

    // Unbind on a fresh pair (a type 1 window is not tied to a QP): the key is dead.
    let (mut a3, mut b3) = loopback::connected_pair(&f.ctx, &f.pd, &f.cq, false);
    let unbound = a3.bind_mw(&mw, 11, None, Access::default(), SendFlags::SIGNALED).unwrap();
    let wc = one(&mut f.cq);
    assert_eq!((wc.wr_id, wc.opcode, wc.status), (11, WcOpcode::BindMw, WcStatus::Success));
    assert_ne!(unbound, key);
    b3.post_send(&[SendWr::new(12, SendOp::RdmaWrite(window(0)), Payload::Inline(b"late"))])
        .unwrap();
    assert_eq!(one(&mut f.cq).status, WcStatus::RemoteAccess, "unbound");
    drain(&mut f.cq);
    drop((a, b));
}

#[test]
fn binds_the_hca_refuses_complete_with_mw_bind_errors() {
    let mut f = fixture("err");
    let mut plain = vec![0u8; 4096];
    let mut readonly = vec![0u8; 4096];
    let mut bindable = vec![0u8; 4096];
    let plain_mr = f.pd.reg_mr(&mut plain, Access::ALL).unwrap();
    let readonly_mr = f.pd.reg_mr(&mut readonly, Access::MW_BIND | Access::REMOTE_READ).unwrap();
    let bindable_mr = f.pd.reg_mr(&mut bindable, Access::LOCAL_WRITE | Access::MW_BIND).unwrap();
    let other_pd = Pd::new(&f.ctx).unwrap();
    let foreign_mw = other_pd.alloc_mw().unwrap();
    let mw = f.pd.alloc_mw().unwrap();
    let read = Access::REMOTE_READ;
    let cases: [(&str, &ferrodat_driver::Mw, _, Access); 4] = [
        ("a region without MW_BIND", &mw, plain_mr.sge(0, 64).unwrap(), read),
        (
            "remote write over a region without local write",
            &mw,
            readonly_mr.sge(0, 64).unwrap(),
            Access::REMOTE_WRITE,
        ),
        ("a window of another PD", &foreign_mw, bindable_mr.sge(0, 64).unwrap(), read),
        ("the range runs past the region", &mw, unsafe_past_end(&bindable_mr), read),
    ];
    for (what, window, region, rights) in cases {
        let (mut a, _b) = loopback::connected_pair(&f.ctx, &f.pd, &f.cq, false);
        a.bind_mw(window, 1, Some(region), rights, SendFlags::SIGNALED).unwrap();
        let wc = one(&mut f.cq);
        assert_eq!((wc.opcode, wc.status), (WcOpcode::BindMw, WcStatus::MwBind), "{what}");
        assert_eq!(wc.syndrome(), Some((0x06, 0)), "{what}");
        // The bind error put the QP in the error state: what follows is flushed.
        a.post_send(&[SendWr::new(2, SendOp::Nop, Payload::EMPTY)]).unwrap();
        assert_eq!(one(&mut f.cq).status, WcStatus::Flushed, "{what}");
        drain(&mut f.cq);
    }
    // The failed binds left the window free: a good bind still works.
    let (mut a, _b) = loopback::connected_pair(&f.ctx, &f.pd, &f.cq, false);
    let region = bindable_mr.sge(0, 4096).unwrap();
    a.bind_mw(&mw, 3, Some(region), read, SendFlags::SIGNALED).unwrap();
    assert_eq!(one(&mut f.cq).status, WcStatus::Success);
}

/// An entry naming 64 bytes from 32 before the region's end (the driver's bounds check
/// would refuse to make it; the device must refuse to bind it).
fn unsafe_past_end<'a>(mr: &'a ferrodat_driver::Mr<'_>) -> ferrodat_driver::work_request::Sge<'a> {
    // SAFETY: the entry is only used for a bind, which the device refuses without
    // touching memory.
    unsafe {
        ferrodat_driver::work_request::Sge::from_raw(
            mr.addr() + mr.len() as u64 - 32,
            64,
            mr.lkey(),
        )
    }
}
