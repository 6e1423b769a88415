//! ferrodat's driver on its hardware code path without hardware: the driver's own tests,
//! told to open `mlx5_0`, run with the preload library, which serves
//! `/dev/infiniband/uverbs0` from softhca. The driver sees a char device: real `open`,
//! `write` and `mmap` calls, no model entry points; softhca's doorbell-watching progress
//! thread does what the silicon would.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::preload::World;

/// The variable the driver tests read to open a named device instead of an in-process
/// softhca (`driver/tests/*.rs`).
const DEVICE_ENV: &str = "FERRODAT_DRIVER_TEST_DEVICE";

/// Builds the driver's integration tests and returns their executables.
fn driver_test_binaries() -> Vec<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["test", "-p", "ferrodat-driver", "--tests", "--no-run", "--message-format=json"])
        .current_dir(&workspace)
        .output()
        .expect("run cargo test --no-run for the driver");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"kind\":[\"test\"]") && l.contains("\"executable\":\""))
        .filter_map(|l| {
            let at = l.find("\"executable\":\"")? + 14;
            Some(PathBuf::from(&l[at..at + l[at..].find('"')?]))
        })
        .collect()
}

#[test]
fn the_driver_tests_pass_on_the_kernel_channel_under_the_preload_library() {
    let binaries = driver_test_binaries();
    let names: Vec<String> =
        binaries.iter().map(|b| b.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for expected in ["loopback_smoke", "hardware_smoke"] {
        assert!(names.iter().any(|n| n.starts_with(expected)), "{expected} in {names:?}");
    }
    let world = World::new("driver");
    let mut ran = 0;
    for bin in &binaries {
        // The compile-fail tests run rustc, not the device.
        if bin.file_name().unwrap().to_string_lossy().starts_with("borrow_rules") {
            continue;
        }
        let out = world
            .command(bin.to_str().unwrap(), &["--test-threads=1", "--nocapture"])
            .env(DEVICE_ENV, "mlx5_0")
            .env("FERRODAT_SOFTHCA_PROGRESS_THREAD", "1")
            .output()
            .expect("run a driver test binary");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{} under the preload library:\n{text}", bin.display());
        if text.contains("(kernel channel)") {
            ran += 1;
        }
        let name = bin.file_name().unwrap().to_string_lossy();
        if name.starts_with("hardware_smoke") {
            assert!(
                text.contains("hardware smoke test on mlx5_0 (kernel channel)"),
                "the hardware smoke test did not find the preloaded mlx5_0:\n{text}"
            );
        }
    }
    assert!(ran > 0, "no driver test opened mlx5_0 through the kernel channel");
}
