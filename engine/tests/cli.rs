//! The `ferrodat` command line: what a user types and what they get back.

use std::path::PathBuf;
use std::process::{Command, Output};

fn ferrodat(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrodat"));
    cmd.args(args).env_remove("FERRODAT_SOFTHCA");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("run ferrodat")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrodat-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn softhca_env_writes_the_tree_and_prints_exports() {
    let dir = scratch("env");
    let lib = dir.join("libsofthca_preload.so");
    std::fs::write(&lib, b"stand-in: the command only checks that the file exists").unwrap();
    let sysfs = dir.join("sys");
    let out = ferrodat(
        &[
            "softhca",
            "env",
            "--sysfs-dir",
            sysfs.to_str().unwrap(),
            "--preload",
            lib.to_str().unwrap(),
        ],
        &[("FERRODAT_SOFTHCA", "softhca0=127.0.0.1,softhca1=10.9.8.7")],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let sysfs = sysfs.canonicalize().unwrap();
    assert!(text.contains(&format!("export SYSFS_PATH='{}'\n", sysfs.display())), "{text}");
    assert!(
        text.contains(&format!("export LD_PRELOAD='{}'", lib.canonicalize().unwrap().display())),
        "{text}"
    );
    assert!(
        text.contains("export FERRODAT_SOFTHCA='softhca0=127.0.0.1,softhca1=10.9.8.7'\n"),
        "{text}"
    );
    assert!(text.contains("# mlx5_1 is softhca device softhca1 on 10.9.8.7"), "{text}");
    let read = |p: &str| std::fs::read_to_string(sysfs.join(p)).unwrap();
    assert_eq!(read("class/infiniband_verbs/abi_version"), "6\n");
    assert_eq!(read("class/infiniband_verbs/uverbs1/ibdev"), "mlx5_1\n");
    assert!(read("class/infiniband/mlx5_1/ports/1/gids/0").contains("0a09:0807"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_preload_library_says_how_to_build_it() {
    let dir = scratch("missing");
    let out = ferrodat(
        &[
            "softhca",
            "env",
            "--sysfs-dir",
            dir.to_str().unwrap(),
            "--preload",
            "/nonexistent/lib.so",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("/nonexistent/lib.so"), "{err}");
    assert!(err.contains("cargo build --release -p ferrodat-softhca-preload"), "{err}");
    assert!(out.stdout.is_empty(), "nothing to eval on failure");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_device_list_names_the_variable() {
    let out = ferrodat(&["softhca", "env"], &[("FERRODAT_SOFTHCA", "softhca0=not-an-address")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("FERRODAT_SOFTHCA") && err.contains("not-an-address"), "{err}");
}

#[test]
fn argument_errors_and_help() {
    let out = ferrodat(&["softhca", "envv"], &[]);
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("envv"));
    let out = ferrodat(&["softhca", "env", "--help"], &[]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--sysfs-dir"));
}

#[test]
fn info_lists_the_device_its_port_and_the_ia_it_would_be() {
    let dir = scratch("info");
    let shm = dir.join("shm");
    std::fs::create_dir_all(&shm).unwrap();
    let out = ferrodat(
        &["info"],
        &[
            ("FERRODAT_SOFTHCA", "softhca0=127.0.0.1"),
            ("FERRODAT_SOFTHCA_SHM_DIR", shm.to_str().unwrap()),
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    for expected in [
        "device softhca0 (softhca, 127.0.0.1)",
        "part 4119",
        "port 1: Active",
        "source GID ::ffff:127.0.0.1 (index 0)",
        "IA: address 127.0.0.1",
        "DAT_IB_RDMA_READ=TRUE",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    let out = ferrodat(
        &["info", "--device", "nosuch"],
        &[
            ("FERRODAT_SOFTHCA", "softhca0=127.0.0.1"),
            ("FERRODAT_SOFTHCA_SHM_DIR", shm.to_str().unwrap()),
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no device \"nosuch\"") && err.contains("softhca0"), "{err}");
    // A malformed device list is named, not hidden behind "no device found".
    let out = ferrodat(&["info"], &[("FERRODAT_SOFTHCA", "softhca0")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no RDMA device found") && err.contains("missing '='"), "{err}");
    // A device that cannot be opened is reported, and the command fails.
    let not_a_dir = dir.join("not-a-directory");
    std::fs::write(&not_a_dir, b"").unwrap();
    let unusable = [
        ("FERRODAT_SOFTHCA", "softhca0=127.0.0.1"),
        ("FERRODAT_SOFTHCA_SHM_DIR", not_a_dir.to_str().unwrap()),
    ];
    let out = ferrodat(&["info"], &unusable);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("cannot open it"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open softhca0"));
    let out = ferrodat(&["conf"], &unusable);
    assert_eq!(out.status.code(), Some(1), "a dat.conf without the device is no success");
    assert!(String::from_utf8_lossy(&out.stdout).contains("# softhca0: not usable"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no dat.conf line for softhca0"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fabric directory of another user is refused with who owns it and what to do (root
/// runs the test, as CI does, and runs ferrodat as nobody against a directory of its own).
#[test]
fn a_fabric_of_another_user_says_whose_it_is() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run ferrodat as another user");
        return;
    }
    // In /tmp, not $TMPDIR (which may be private to root), with a copy of the program:
    // nobody may enter and run it wherever the build lives, but not write the fabric
    // directory, whatever the umask.
    struct Scratch(PathBuf);
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let dir =
        Scratch(PathBuf::from(format!("/tmp/ferrodat-cli-other-user-{}", std::process::id())));
    let shm = dir.0.join("shm");
    std::fs::create_dir_all(&shm).unwrap();
    let exe = dir.0.join("ferrodat");
    std::fs::copy(env!("CARGO_BIN_EXE_ferrodat"), &exe).unwrap();
    for (path, mode) in [(&dir.0, 0o755), (&shm, 0o755), (&exe, 0o755)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let out = Command::new(&exe)
        .arg("info")
        .env("FERRODAT_SOFTHCA", "softhca0=127.0.0.1")
        .env("FERRODAT_SOFTHCA_SHM_DIR", &shm)
        .uid(65534)
        .gid(65534)
        .output();
    let out = match out {
        Ok(out) => out,
        // Root without the right to become nobody (a user namespace that maps only root).
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EPERM)) => {
            eprintln!("skipped: cannot run ferrodat as uid 65534 here: {e}");
            return;
        }
        Err(e) => panic!("run ferrodat as nobody: {e}"),
    };
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Permission denied"), "{text}");
    assert!(text.contains("its directory belongs to uid 0 with mode 755"), "{text}");
    assert!(text.contains("runs as uid 65534"), "{text}");
    assert!(text.contains("FERRODAT_SOFTHCA_SHM_DIR=<directory>"), "{text}");
}

#[test]
fn conf_prints_a_dat_conf_line_libdat2_accepts_for_each_device() {
    let dir = scratch("conf");
    let shm = dir.join("shm");
    std::fs::create_dir_all(&shm).unwrap();
    let lib = dir.join("libferrodat.so");
    std::fs::write(&lib, b"stand-in: the command only names the file").unwrap();
    let envs = [
        ("FERRODAT_SOFTHCA", "softhca0=127.0.0.1"),
        ("FERRODAT_SOFTHCA_SHM_DIR", shm.to_str().unwrap()),
    ];
    let out = ferrodat(&["conf", "--library", lib.to_str().unwrap()], &envs);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = text.lines().find(|l| !l.starts_with('#')).expect("a dat.conf line");
    // The eight dat.conf fields, with the registry key the stock test programs need.
    let expected = format!(
        "ferro-softhca0 u2.0 nonthreadsafe default {} ferrodat.2.0 \"softhca0 1 127.0.0.1\" \"\"",
        lib.canonicalize().unwrap().display()
    );
    assert_eq!(line, expected);
    // A library that does not exist yet is named where it will be, with a note.
    let missing = dir.join("later/libferrodat.so");
    let out = ferrodat(&["conf", "--library", missing.to_str().unwrap()], &envs);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    assert!(String::from_utf8_lossy(&out.stdout).contains(missing.to_str().unwrap()));
    let _ = std::fs::remove_dir_all(&dir);
}
