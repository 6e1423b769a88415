//! What the engine's integration tests share.
#![allow(dead_code)]

use ferrodat_softhca::fabric::SHM_DIR_ENV;
use std::sync::Once;

/// Every test of this binary shares one private fabric directory, named by the pid and set
/// before any device is opened. softhca sweeps a dead process's entries, so a leftover
/// directory from an earlier run does not disturb the next one.
pub fn private_fabric() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // A child process of a two-process test joins its parent's fabric.
        if std::env::var_os(SHM_DIR_ENV).is_some() {
            return;
        }
        let dir = format!("/dev/shm/ferrodat-engine-ia-{}", std::process::id());
        std::fs::create_dir_all(&dir).unwrap();
        // Removed when the test binary exits (libtest returns from main, so atexit runs).
        extern "C" fn remove_fabric() {
            let _ = std::fs::remove_dir_all(format!(
                "/dev/shm/ferrodat-engine-ia-{}",
                std::process::id()
            ));
        }
        // SAFETY: registers a plain function with no captured state; it runs once at exit.
        unsafe { libc::atexit(remove_fabric) };
        // SAFETY: runs once, before any thread of this test binary reads the environment
        // for the fabric (the first device open comes after it).
        unsafe { std::env::set_var(SHM_DIR_ENV, &dir) };
        // One process plays both sides here, and a side may sleep in dat_evd_wait while
        // the other's QP must answer: softhca's progress thread does that, as silicon would.
        // SAFETY: as above.
        unsafe { std::env::set_var("FERRODAT_SOFTHCA_PROGRESS_THREAD", "1") };
    });
}

/// An IA on softhca0 (127.0.0.1) in the test binary's private fabric.
pub fn ia() -> ferrodat_engine::ia::Ia {
    private_fabric();
    let spec = ferrodat_engine::ia::IaSpec::parse("softhca0 1 127.0.0.1").unwrap();
    ferrodat_engine::ia::Ia::open("ferro0", &spec).unwrap()
}
