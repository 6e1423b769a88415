//! What the preload tests share: the built preload library and a private world (a sysfs
//! tree and a fabric directory) in which programs see `mlx5_0` served by softhca.
#![allow(dead_code)]

use ferrodat_softhca::{config::DeviceConfig, sysfs};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The built preload library.
pub fn preload_lib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace.join("target"));
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "ferrodat-softhca-preload"])
            .current_dir(&workspace)
            .env("CARGO_TARGET_DIR", &target)
            .status()
            .expect("run cargo build -p ferrodat-softhca-preload");
        assert!(status.success(), "cargo build -p ferrodat-softhca-preload failed");
        let lib = target.join("debug").join("libsofthca_preload.so");
        assert!(lib.exists(), "{} missing after the build", lib.display());
        lib
    })
}

/// A private world: a sysfs tree and a fabric directory for one softhca device.
pub struct World {
    pub dir: PathBuf,
}

impl World {
    pub fn new(tag: &str) -> World {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir = std::env::temp_dir()
            .join(format!("ferrodat-preload-{tag}-{}-{nanos}", std::process::id()));
        let devices =
            [DeviceConfig { name: "softhca0".into(), addr: "127.0.0.1".parse().unwrap() }];
        sysfs::write_tree(&dir.join("sys"), &devices).expect("write the sysfs tree");
        std::fs::create_dir_all(dir.join("shm")).unwrap();
        World { dir }
    }

    /// `program args…` with the preload library, the tree and the fabric.
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env("LD_PRELOAD", preload_lib())
            .env("SYSFS_PATH", self.dir.join("sys"))
            .env("FERRODAT_SOFTHCA", "softhca0=127.0.0.1")
            .env("FERRODAT_SOFTHCA_SHM_DIR", self.dir.join("shm"));
        cmd
    }

    pub fn run(&self, program: &str, args: &[&str]) -> Output {
        let out = self
            .command(program, args)
            .output()
            .unwrap_or_else(|e| panic!("run {program} (scripts/install-deps installs it): {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?} failed: {}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
