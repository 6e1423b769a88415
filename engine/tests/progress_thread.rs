//! Who starts softhca's progress thread (`FERRODAT_SOFTHCA_PROGRESS_THREAD`, see
//! `ferrodat_softhca::device::ENV_PROGRESS_THREAD`): a DAT IA does at its open, since a DAT
//! consumer may block in any wait while its peers need the device to answer; the driver
//! alone does not (a verbs consumer that only polls pays nothing); `0` refuses it even to an
//! IA, `1` starts it at every device open.
//!
//! Each case runs in a child process of this test binary with its own environment (the
//! variable is read when a device opens, once per process); the child reports the threads
//! it sees named after the device.

use ferrodat_engine::ia::{Ia, IaSpec};
use std::process::Command;

const CASE_ENV: &str = "FERRODAT_TEST_PROGRESS_THREAD_CASE";
const POLICY_ENV: &str = "FERRODAT_SOFTHCA_PROGRESS_THREAD";

/// The threads of this process named after softhca0 (`softhca-softhca0`, which the
/// kernel's 15-byte thread names cut to `softhca-softhca`).
fn progress_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("list /proc/self/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| "softhca-softhca0".starts_with(name.trim_end()) && name.len() > 8)
        .count()
}

/// [`progress_threads`] once a thread spawned by the open had time to name itself (a new
/// thread takes its name from inside, after it starts): the first count above zero, or
/// zero after half a second.
fn progress_threads_settled() -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(500);
    loop {
        let n = progress_threads();
        if n > 0 || std::time::Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// In the child: opens what the case says and prints the thread count.
fn child(case: &str) {
    let before = progress_threads();
    match case {
        "ia" => {
            let ia = Ia::open("ferro0", &IaSpec::parse("softhca0 1 127.0.0.1").unwrap())
                .expect("dat_ia_open");
            println!("THREADS {before} {}", progress_threads_settled());
            drop(ia);
        }
        "driver" => {
            let ctx = ferrodat_driver::open("softhca0").expect("open softhca0");
            println!("THREADS {before} {}", progress_threads_settled());
            drop(ctx);
        }
        other => panic!("unknown case {other}"),
    }
}

/// Runs `case` in a child with the policy variable `policy` (None: unset); (threads
/// before the open, after it).
fn run(case: &str, policy: Option<&str>) -> (usize, usize) {
    let shm = format!("/dev/shm/ferrodat-progress-thread-{}-{case}", std::process::id());
    std::fs::create_dir_all(&shm).unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env(CASE_ENV, case)
        .env("FERRODAT_SOFTHCA_SHM_DIR", &shm)
        .env("FERRODAT_SOFTHCA", "softhca0=127.0.0.1");
    match policy {
        Some(v) => cmd.env(POLICY_ENV, v),
        None => cmd.env_remove(POLICY_ENV),
    };
    let out = cmd.output().expect("run the child");
    let _ = std::fs::remove_dir_all(&shm);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{case}: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    let line =
        text.lines().find_map(|l| Some(&l[l.find("THREADS ")? + 8..])).expect("THREADS line");
    let mut n = line.split(' ').map(|v| v.parse::<usize>().unwrap());
    (n.next().unwrap(), n.next().unwrap())
}

/// The child's entry: does nothing unless this process is a child.
#[test]
fn child_entry() {
    if let Ok(case) = std::env::var(CASE_ENV) {
        child(&case);
    }
}

#[test]
fn a_dat_ia_starts_the_progress_thread_unless_refused() {
    assert_eq!(run("ia", None), (0, 1), "an IA serves its device while the consumer waits");
    assert_eq!(run("ia", Some("0")), (0, 0), "=0: the consumer polls everything itself");
    assert_eq!(run("ia", Some("1")), (0, 1));
}

#[test]
fn the_driver_alone_starts_none_unless_told() {
    assert_eq!(run("driver", None), (0, 0), "a verbs consumer that only polls pays nothing");
    assert_eq!(run("driver", Some("1")), (0, 1));
}
