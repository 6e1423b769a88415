//! Opening an IA over softhca and what `dat_ia_query` reports.

mod support;

use ferrodat_abi::dat::{extension, ret};
use ferrodat_engine::ia::{Ia, IaSpec};
use support::private_fabric;

#[test]
fn an_ia_on_softhca_reports_its_address_limits_and_ib_extensions() {
    private_fabric();
    let ia = Ia::open("ferro0", &IaSpec::parse("softhca0 1 127.0.0.1").unwrap()).unwrap();
    let a = ia.attr();
    assert_eq!(ia.name(), "ferro0");
    assert_eq!(a.adapter_name, "softhca0");
    assert_eq!(a.address, "127.0.0.1".parse::<std::net::IpAddr>().unwrap());
    assert!(a.max_eps >= 1024 && a.max_dto_per_ep >= 1024 && a.max_evd_qlen >= 1024, "{a:?}");
    // Not the HCA's 65536 QPs: one process holds 4096 of them on softhca.
    assert_eq!((a.max_eps, a.max_ep_per_srq), (4096, 4096), "what a process can have");
    assert!(a.max_iov_segments_per_dto >= 1 && a.max_rdma_read_per_ep_in >= 1, "{a:?}");
    assert!(a.max_message_size >= 1 << 20 && a.max_lmr_block_size >= 1 << 30, "{a:?}");
    assert_eq!(a.extension_supported, extension::IB);
    let p = ia.provider_attr();
    assert_eq!(p.dapl_version, (2, 0), "libdat2's registry key needs 2.0");
    assert!(!p.is_thread_safe, "libdat2's registry key for the test programs needs FALSE");
    assert!(p.max_private_data_size >= 64);
    let attr = |name: &str| {
        p.provider_specific_attr.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    };
    assert_eq!(attr("DAT_IB_RDMA_READ"), Some("TRUE"));
    assert_eq!(attr("DAT_IB_CMP_AND_SWAP"), Some("TRUE"));
    assert_eq!(attr("DAT_IB_FETCH_AND_ADD"), Some("TRUE"));
    let mtu: u32 = attr("DAT_IB_TRANSPORT_MTU").unwrap().parse().unwrap();
    assert!([256, 512, 1024, 2048, 4096].contains(&mtu), "{mtu}");
}

#[test]
fn without_an_address_the_ia_takes_the_one_its_gid_is_made_from() {
    private_fabric();
    let ia = Ia::open("ferro0", &IaSpec::parse("softhca0").unwrap()).unwrap();
    assert_eq!(ia.attr().address, "127.0.0.1".parse::<std::net::IpAddr>().unwrap());
}

#[test]
fn an_unknown_device_is_provider_not_found_naming_what_exists() {
    private_fabric();
    let e = Ia::open("ferro9", &IaSpec::parse("nosuchdev 1").unwrap()).unwrap_err();
    assert_eq!(e.return_type(), ret::PROVIDER_NOT_FOUND);
    let text = e.to_string();
    assert!(text.contains("nosuchdev") && text.contains("softhca0"), "{text}");
}

/// Each IA has a thread reading the device's async events; it goes with the IA's last
/// handle, so opening and closing IAs leaves no threads behind.
#[test]
fn the_device_event_thread_ends_with_its_ia() {
    private_fabric();
    let named = |name: &str| -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.trim_end() == name)
            .count()
    };
    // A thread names itself as it starts, and the kernel may list an ended one a moment
    // longer: wait (boundedly) for the count expected.
    let settles_at = |want: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while named("async watched") != want && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        named("async watched")
    };
    let ia = Ia::open("watched", &IaSpec::parse("softhca0 1 127.0.0.1").unwrap()).unwrap();
    assert_eq!(settles_at(1), 1, "the IA's device-event thread");
    drop(ia);
    assert_eq!(settles_at(0), 0, "the thread ended with the IA");
}

/// A child forked while an IA is open can open an IA of its own on the same device name
/// (not the parent's device, which the inherited IA still holds) and close the inherited
/// one: the IA's threads (device events, and the CM once it ran) do not exist in the child,
/// so its close must not wait for them.
#[test]
fn a_forked_child_opens_its_own_ia_and_closes_an_inherited_one() {
    private_fabric();
    let spec = IaSpec::parse("softhca0 1 127.0.0.1").unwrap();
    let ia = Ia::open("ferro0", &spec).unwrap();
    let pz = ferrodat_engine::pz::Pz::create(&ia).unwrap();
    // SAFETY: the child opens and drops IAs, then leaves with _exit (no test harness code
    // runs).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let closed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let own = Ia::open("ferro0", &spec).expect("the child's own IA");
            let own_pz = ferrodat_engine::pz::Pz::create(&own).expect("a PZ in it");
            own_pz.free().map_err(|(_, e)| e).unwrap();
            own.close(ferrodat_engine::ia::CloseMode::Graceful).map_err(|(_, e)| e).unwrap();
            drop(pz);
            drop(ia);
        }));
        // SAFETY: ends the child at once.
        unsafe { libc::_exit(if closed.is_ok() { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is a live int.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status), "the child died: status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "the child's IAs: it panicked");
    drop(pz);
    drop(ia);
}

/// An open IA costs no CPU while nothing happens: its device-event thread sleeps.
#[test]
fn an_idle_ia_uses_no_cpu() {
    private_fabric();
    let ia = Ia::open("idle", &IaSpec::parse("softhca0 1 127.0.0.1").unwrap()).unwrap();
    let before = support::cpu_time();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let spent = support::cpu_time() - before;
    drop(ia);
    assert!(
        spent < std::time::Duration::from_millis(100),
        "an idle IA used {spent:?} of CPU in 500 ms"
    );
}
