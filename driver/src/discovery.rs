//! Finding devices: real mlx5 HCAs through sysfs, software HCAs through softhca's config.
//!
//! Hardware, as libibverbs' sysfs fallback finds it (`$SYSFS_PATH` or `/sys`):
//! `class/infiniband_verbs/abi_version` must be 3..=6 (the kernel says 6); per
//! `class/infiniband_verbs/uverbsN`: `ibdev` names the IB device (`mlx5_0`), `abi_version` is
//! the driver ABI (mlx5 accepts only 1), `dev` is `major:minor`; and
//! `/dev/infiniband/uverbsN` must exist as a char device with that number (`0:0` skips the
//! number check, as in libibverbs).
//!
//! softhca: every device of `ferrodat_softhca::config::devices()` (`FERRODAT_SOFTHCA`,
//! default `softhca0=127.0.0.1`), on the fabric of `FERRODAT_SOFTHCA_SHM_DIR` (default
//! `/dev/shm/ferrodat-softhca`).

use crate::error::{Error, Result};
use ferrodat_abi::mlx5;
use ferrodat_softhca::config::{self, DeviceConfig};
use ferrodat_softhca::fabric::FabricDir;
use std::ffi::CString;
use std::fmt;
use std::path::{Path, PathBuf};

/// The directory of the uverbs char devices (libibverbs hard-codes it too; `SYSFS_PATH`
/// does not move it).
pub const DEV_DIR: &str = "/dev/infiniband";

/// One device that can be opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The name to open it by: the IB device name (`mlx5_0`) or the softhca name
    /// (`softhca0`).
    pub name: String,
    /// What it is.
    pub kind: DeviceKind,
}

/// Hardware or software.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// A uverbs char device of the kernel.
    Hardware(HardwareDevice),
    /// An in-process software HCA.
    Softhca(SofthcaDevice),
}

/// A uverbs device found in sysfs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HardwareDevice {
    /// `uverbsN`.
    pub uverbs: String,
    /// `/dev/infiniband/uverbsN`.
    pub uverbs_path: PathBuf,
    /// The IB device name (`mlx5_0`).
    pub ibdev: String,
    /// The char device number from sysfs (`(0, 0)`: not checked).
    pub dev: (u32, u32),
    /// The driver ABI version (1 for mlx5).
    pub driver_abi: u32,
    /// The global uverbs ABI version (3..=6).
    pub uverbs_abi: u32,
    /// The sysfs root it was found under (for GIDs: `class/infiniband/<ibdev>/ports/..`).
    pub sysfs_root: PathBuf,
}

/// A configured software HCA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SofthcaDevice {
    /// Name and address.
    pub config: DeviceConfig,
    /// The shared-memory fabric it joins.
    pub fabric: FabricDir,
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            DeviceKind::Hardware(h) => {
                write!(f, "{} (hardware, {})", self.name, h.uverbs_path.display())
            }
            DeviceKind::Softhca(s) => write!(f, "{} (softhca, {})", self.name, s.config.addr),
        }
    }
}

/// What a scan found, and what it passed over and why.
#[derive(Clone, Debug, Default)]
pub struct Discovery {
    /// Usable devices, hardware first.
    pub devices: Vec<DeviceInfo>,
    /// One line per device or source that was skipped, with the reason.
    pub skipped: Vec<String>,
}

impl Discovery {
    /// The device called `name`, or an error that lists what was found and how to get a
    /// device.
    pub fn find(&self, name: &str) -> Result<&DeviceInfo> {
        if let Some(d) = self.devices.iter().find(|d| d.name == name) {
            return Ok(d);
        }
        let reason = if self.devices.is_empty() {
            format!("no device named {name:?}: no RDMA device found at all")
        } else {
            format!("no device named {name:?}")
        };
        Err(Error::invalid("open", reason).with_detail(self.summary()).with_hint(HOW_TO_GET_ONE))
    }

    /// "found: …; skipped: …".
    pub fn summary(&self) -> String {
        let found: Vec<String> = self.devices.iter().map(ToString::to_string).collect();
        let mut s = format!(
            "found: {}",
            if found.is_empty() { "none".to_string() } else { found.join(", ") }
        );
        if !self.skipped.is_empty() {
            s.push_str("; skipped: ");
            s.push_str(&self.skipped.join("; "));
        }
        s
    }
}

/// The two ways to get a device.
pub const HOW_TO_GET_ONE: &str = "use a ConnectX (mlx5) NIC with the mlx5_ib kernel module \
    loaded (it appears as /dev/infiniband/uverbsN), or softhca, the built-in software HCA, \
    configured by FERRODAT_SOFTHCA (default softhca0=127.0.0.1)";

/// The sysfs root: `$SYSFS_PATH` or `/sys`.
pub fn sysfs_root() -> PathBuf {
    match std::env::var_os("SYSFS_PATH") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from("/sys"),
    }
}

/// Every usable device: hardware from [`sysfs_root`] and [`DEV_DIR`], then softhca's.
pub fn discover() -> Discovery {
    let mut d = Discovery::default();
    let (hw, skipped) = scan_sysfs(&sysfs_root(), Path::new(DEV_DIR));
    d.skipped = skipped;
    for h in hw {
        match check_char_device(&h.uverbs_path, h.dev) {
            Ok(()) => {
                d.devices.push(DeviceInfo { name: h.ibdev.clone(), kind: DeviceKind::Hardware(h) })
            }
            Err(why) => d.skipped.push(format!("{} ({}): {why}", h.ibdev, h.uverbs)),
        }
    }
    match config::devices() {
        Ok(list) => {
            let fabric = FabricDir::from_env();
            for c in list {
                if d.devices.iter().any(|x| x.name == c.name) {
                    d.skipped.push(format!("softhca {}: name taken by a hardware device", c.name));
                    continue;
                }
                d.devices.push(DeviceInfo {
                    name: c.name.clone(),
                    kind: DeviceKind::Softhca(SofthcaDevice { config: c, fabric: fabric.clone() }),
                });
            }
        }
        Err(e) => d.skipped.push(format!("softhca: {e}")),
    }
    d
}

fn read_trimmed(p: &Path) -> std::result::Result<String, String> {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("cannot read {}: {e}", p.display()))
}

fn parse_u32(p: &Path) -> std::result::Result<u32, String> {
    let s = read_trimmed(p)?;
    s.parse().map_err(|_| format!("{} holds {s:?}, not a number", p.display()))
}

/// Parses `major:minor`.
pub fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Reads the uverbs devices under `root` (a sysfs root) without touching `/dev`: each
/// becomes a [`HardwareDevice`] whose `uverbs_path` is under `dev_dir`; the ones that do not
/// qualify are listed with the reason instead. Sorted by uverbs number.
pub fn scan_sysfs(root: &Path, dev_dir: &Path) -> (Vec<HardwareDevice>, Vec<String>) {
    let class = root.join("class/infiniband_verbs");
    let mut skipped = Vec::new();
    let Ok(entries) = std::fs::read_dir(&class) else {
        return (Vec::new(), Vec::new()); // no uverbs at all: not an error, just no hardware
    };
    let mut names: Vec<(u32, String)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter_map(|n| n.strip_prefix("uverbs").and_then(|x| x.parse().ok()).map(|i| (i, n)))
        .collect();
    names.sort();
    if names.is_empty() {
        return (Vec::new(), skipped);
    }
    let uverbs_abi = match parse_u32(&class.join("abi_version")) {
        Ok(v) if (3..=6).contains(&v) => v,
        Ok(v) => {
            skipped.push(format!(
                "all uverbs devices: the kernel's uverbs ABI is {v}, this driver speaks 3..=6"
            ));
            return (Vec::new(), skipped);
        }
        Err(e) => {
            skipped.push(format!("all uverbs devices: {e}"));
            return (Vec::new(), skipped);
        }
    };
    let mut out = Vec::new();
    for (_, uverbs) in names {
        let dir = class.join(&uverbs);
        let one = || -> std::result::Result<HardwareDevice, String> {
            let ibdev = read_trimmed(&dir.join("ibdev"))?;
            if ibdev.is_empty() {
                return Err("empty ibdev".into());
            }
            let driver_abi = parse_u32(&dir.join("abi_version"))
                .map_err(|e| format!("{e} (not an mlx5 device?)"))?;
            if driver_abi != mlx5::ABI_VERSION {
                return Err(format!(
                    "driver ABI {driver_abi}, but mlx5 speaks {} (not an mlx5 device?)",
                    mlx5::ABI_VERSION
                ));
            }
            let dev_s = read_trimmed(&dir.join("dev"))?;
            let dev = parse_dev(&dev_s)
                .ok_or_else(|| format!("{}/dev holds {dev_s:?}, not major:minor", dir.display()))?;
            Ok(HardwareDevice {
                uverbs_path: dev_dir.join(&uverbs),
                uverbs: uverbs.clone(),
                ibdev,
                dev,
                driver_abi,
                uverbs_abi,
                sysfs_root: root.to_path_buf(),
            })
        };
        match one() {
            Ok(h) => out.push(h),
            Err(why) => skipped.push(format!("{uverbs}: {why}")),
        }
    }
    (out, skipped)
}

/// Checks that `path` is a char device numbered `dev` (`(0, 0)`: any number). Uses
/// `stat(2)` through libc, so an LD_PRELOAD library can answer for it.
pub fn check_char_device(path: &Path, dev: (u32, u32)) -> std::result::Result<(), String> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| "path contains a NUL byte".to_string())?;
    // SAFETY: an all-zero stat is a valid value for stat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated; `st` is ours to write.
    if unsafe { libc::stat(c.as_ptr(), &mut st) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!("{}: {e} (is mlx5_ib loaded?)", path.display()));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFCHR {
        return Err(format!("{} is not a character device", path.display()));
    }
    let rdev = (libc::major(st.st_rdev), libc::minor(st.st_rdev));
    if dev != (0, 0) && rdev != dev {
        return Err(format!(
            "{} is {}:{}, sysfs says {}:{}",
            path.display(),
            rdev.0,
            rdev.1,
            dev.0,
            dev.1
        ));
    }
    Ok(())
}

/// Reads GID `index` of port `port` of a hardware device from sysfs
/// (`class/infiniband/<ibdev>/ports/<port>/gids/<index>`, 8 groups of 4 hex digits).
pub fn sysfs_gid(h: &HardwareDevice, port: u8, index: u32) -> Result<[u8; 16]> {
    let p = h.sysfs_root.join(format!("class/infiniband/{}/ports/{port}/gids/{index}", h.ibdev));
    let s = read_trimmed(&p).map_err(|e| Error::invalid("query GID", e))?;
    parse_gid(&s).ok_or_else(|| {
        Error::invalid("query GID", format!("{} holds {s:?}, not a GID", p.display()))
    })
}

/// The type of GID `index` of `port` (`ports/<port>/gid_attrs/types/<index>`: `IB/RoCE v1`
/// or `RoCE v2`); None where sysfs gives none (an unused entry, a kernel without
/// `gid_attrs`).
pub fn sysfs_gid_type(h: &HardwareDevice, port: u8, index: u32) -> Option<String> {
    let p = h
        .sysfs_root
        .join(format!("class/infiniband/{}/ports/{port}/gid_attrs/types/{index}", h.ibdev));
    read_trimmed(&p).ok()
}

/// Of the GID table entries given (index, GID, type as sysfs names it), the one a RoCE
/// connection uses as its source: the first RoCE v2 entry holding an IPv4-mapped address
/// (IP-routable: what rdma_cm picks for an IPv4 address), else the first RoCE v2 entry
/// with any GID, else index 0 (a device with RoCE v1 only). mlx5 lists each address twice,
/// RoCE v1 first, so index 0 is a RoCE v1 link-local GID wherever v1 is supported.
pub fn choose_roce_gid(entries: &[(u32, [u8; 16], Option<String>)]) -> u32 {
    let v2 = |t: &Option<String>| t.as_deref() == Some("RoCE v2");
    let ipv4_mapped = |g: &[u8; 16]| g[..10] == [0; 10] && g[10..12] == [0xff, 0xff];
    let in_use = |g: &[u8; 16]| *g != [0; 16];
    entries
        .iter()
        .find(|(_, g, t)| v2(t) && ipv4_mapped(g))
        .or_else(|| entries.iter().find(|(_, g, t)| v2(t) && in_use(g)))
        .map_or(0, |&(i, _, _)| i)
}

/// Parses `xxxx:xxxx:xxxx:xxxx:xxxx:xxxx:xxxx:xxxx`.
pub fn parse_gid(s: &str) -> Option<[u8; 16]> {
    let groups: Vec<&str> = s.trim().split(':').collect();
    if groups.len() != 8 {
        return None;
    }
    let mut gid = [0u8; 16];
    for (i, g) in groups.iter().enumerate() {
        if g.len() != 4 {
            return None;
        }
        let v = u16::from_str_radix(g, 16).ok()?;
        gid[2 * i..2 * i + 2].copy_from_slice(&v.to_be_bytes());
    }
    Some(gid)
}
