//! Creating and freeing DAT objects over softhca leaves no file descriptor behind: a DTO
//! EVD's completion channel, its CQ and softhca's end of the channel all go with the EVD.
//!
//! Counted with /proc/self/fd, so this is its own test binary and its tests run one at a
//! time (the `SERIAL` lock): nothing else in the process opens or closes fds meanwhile
//! but softhca itself.

mod support;

use ferrodat_abi::dat::{evd_flags, mem_priv};
use ferrodat_engine::ep::Ep;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::lmr::{Lmr, MemPriv};
use ferrodat_engine::pz::Pz;
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

const ROUNDS: usize = 50;
/// A round leaking one fd is far above this.
const SLACK: usize = 2;

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Asserts that `round` repeated `ROUNDS` times leaves at most `SLACK` more fds open.
/// What closes on another thread shortly after a round (softhca's progress thread may
/// hold a closed device's engine through its sleep, up to a second) is waited for.
fn assert_no_fd_growth(what: &str, mut round: impl FnMut()) {
    round(); // first use may open what lives as long as the process
    let before = open_fds();
    for _ in 0..ROUNDS {
        round();
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut after = open_fds();
    while after > before + SLACK && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        after = open_fds();
    }
    assert!(
        after <= before + SLACK,
        "{what}: {ROUNDS} rounds went from {before} to {after} open fds"
    );
}

#[test]
fn dto_evd_create_and_free_leaves_no_fd() {
    let _serial = serial();
    let ia = support::ia();
    assert_no_fd_growth("DTO EVD create + drop", || {
        drop(Evd::create(&ia, 4, evd_flags::DTO).unwrap());
    });
    assert_no_fd_growth("DTO EVD create + free", || {
        Evd::create(&ia, 4, evd_flags::DTO).unwrap().free().map_err(|(_, e)| e).unwrap();
    });
}

#[test]
fn endpoint_with_its_evds_create_and_free_leaves_no_fd() {
    let _serial = serial();
    let ia = support::ia();
    let pz = Pz::create(&ia).unwrap();
    assert_no_fd_growth("EVDs + EP + LMR create and free", || {
        let recv = Evd::create(&ia, 8, evd_flags::DTO).unwrap();
        let req = Evd::create(&ia, 8, evd_flags::DTO | evd_flags::RMR_BIND).unwrap();
        let conn = Evd::create(&ia, 8, evd_flags::CONNECTION).unwrap();
        let ep = Ep::create(&pz, &recv, &req, Some(&conn), None).unwrap();
        let lmr = Lmr::alloc(&pz, 4096, MemPriv(mem_priv::ALL)).unwrap();
        drop(lmr);
        ep.free().unwrap();
        drop((recv, req, conn));
    });
}

#[test]
fn ia_open_and_close_leaves_no_fd() {
    let _serial = serial();
    assert_no_fd_growth("IA open, DTO EVD, close", || {
        let ia = support::ia();
        drop(Evd::create(&ia, 4, evd_flags::DTO).unwrap());
        drop(ia);
    });
}
