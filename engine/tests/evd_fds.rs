//! Creating and freeing DAT objects over softhca leaves no file descriptor behind: a DTO
//! EVD's completion channel, its CQ and softhca's end of the channel all go with the EVD.
//!
//! Counted with /proc/self/fd, so this is its own test binary and its tests run one at a
//! time (`fd_growth::serial`): nothing else in the process opens or closes fds meanwhile
//! but softhca itself.

#[path = "../../softhca/tests/support/fd_growth.rs"]
mod fd_growth;
mod support;

use ferrodat_abi::dat::{evd_flags, mem_priv};
use ferrodat_engine::ep::Ep;
use ferrodat_engine::evd::Evd;
use ferrodat_engine::lmr::{Lmr, MemPriv};
use ferrodat_engine::pz::Pz;

const ROUNDS: usize = 50;
/// A round leaking one fd is far above this.
const SLACK: usize = 2;

use fd_growth::serial;

/// [`fd_growth::assert_no_fd_growth`] with this binary's rounds and slack.
fn assert_no_fd_growth_of(what: &str, round: impl FnMut()) {
    fd_growth::assert_no_fd_growth(what, ROUNDS, SLACK, round);
}

#[test]
fn dto_evd_create_and_free_leaves_no_fd() {
    let _serial = serial();
    let ia = support::ia();
    assert_no_fd_growth_of("DTO EVD create + drop", || {
        drop(Evd::create(&ia, 4, evd_flags::DTO).unwrap());
    });
    assert_no_fd_growth_of("DTO EVD create + free", || {
        Evd::create(&ia, 4, evd_flags::DTO).unwrap().free().map_err(|(_, e)| e).unwrap();
    });
}

#[test]
fn endpoint_with_its_evds_create_and_free_leaves_no_fd() {
    let _serial = serial();
    let ia = support::ia();
    let pz = Pz::create(&ia).unwrap();
    assert_no_fd_growth_of("EVDs + EP + LMR create and free", || {
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
    assert_no_fd_growth_of("IA open, DTO EVD, close", || {
        let ia = support::ia();
        drop(Evd::create(&ia, 4, evd_flags::DTO).unwrap());
        drop(ia);
    });
}
