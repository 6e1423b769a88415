//! The fabric: cross-process plumbing between softhca HCAs on one host, in shared memory.
//!
//! ```text
//! /dev/shm/ferrodat-softhca/            FabricDir (env FERRODAT_SOFTHCA_SHM_DIR overrides)
//! ├── softhca0.hca                      Registry: GID, allocators, instance table, QP table
//! └── softhca0/
//!     ├── qp-0x000100                   outbound ring of QP 0x100 (written by its owner)
//!     ├── qp-0x000101
//!     └── mr-0x000123                   export of a region peers may write directly
//! ```
//!
//! - [`Registry`] (`registry.rs`): one file per HCA name holding the HCA's GID, atomic
//!   allocators (QPN, mkey, CQN, PDN, SRQN), a table of *instances* (processes using the
//!   HCA) and a QP table `qpn -> {owner pid, owner instance, generation, state}`. Created
//!   race-free by the first opener; rebuilt when its layout version or size does not match;
//!   swept of dead owners on every open and on demand ([`Registry::sweep`]).
//! - [`Instance`] (`instance.rs`): this process's membership in one HCA. It owns QPNs and
//!   their rings, and has a futex wake word plus a pending bitmap in the registry so
//!   producers in other processes can tell it *which* of its QPs have inbound records and
//!   wake it only when it sleeps (`wake.rs` documents the protocol).
//! - [`RingProducer`] / [`RingConsumer`] (`ring.rs`): a single-producer single-consumer
//!   ring of variable-size records per QP. The QP's owner writes; the peer QP's owner
//!   reads, validating every byte it reads.
//!
//! # Typical use (what the HCA model does)
//!
//! ```no_run
//! use ferrodat_softhca::fabric::{FabricDir, RingProducer};
//! # fn main() -> Result<(), ferrodat_softhca::fabric::FabricError> {
//! let gid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1];
//! let hca = FabricDir::from_env().open_hca("softhca0", gid)?;
//! let me = hca.register_instance()?;
//! let qp = me.alloc_qpn()?;                              // CREATE_QP
//! let mut outbound: RingProducer = me.create_ring(qp.qpn, 0, None)?;
//! // RTR to a remote QP given as (GID, QPN):
//! let (remote_gid, remote_qpn) = (gid, 0x101);
//! let peer_hca = FabricDir::from_env().find_hca_by_gid(remote_gid)?.expect("peer HCA");
//! outbound.reset(remote_qpn);
//! let mut inbound = peer_hca.open_ring(remote_qpn, qp.qpn)?;
//! let wake_peer = peer_hca.notifier_for_qp(remote_qpn).expect("peer QP is live");
//! // Post: push, then notify (a syscall only if the peer sleeps).
//! outbound.try_push(1, b"header", &[b"payload"]).expect("room");
//! wake_peer.notify();
//! // Poll / progress thread: which QPs have records, else sleep.
//! for slot in me.take_pending() {
//!     // slot == qp.pending_slot: drain `inbound`
//!     while let Some(rec) = inbound.pop().expect("well-formed") { let _ = rec; }
//! }
//! me.wait_for_work(Some(std::time::Duration::from_millis(10)), || false);
//! me.free_qpn(qp.qpn)?;                                  // DESTROY_QP (unlinks the ring)
//! # Ok(()) }
//! ```
//!
//! # Invariants
//!
//! - Shared memory is touched only through atomics and volatile copies (`shm.rs`); no Rust
//!   reference to plain data another process may write ever exists.
//! - Everything read from a file another process writes is validated: a dead or hostile
//!   peer yields an error (`RingError`, `None` from a lookup), never a panic or an
//!   out-of-bounds access; a file truncated under its mapping reads as zeros instead of
//!   raising SIGBUS (`sigbus.rs`), and a ring whose file was truncated is corrupt.
//!   `tests/hostile_peer.rs` fuzzes this with fixed seeds: ring files and the registry
//!   scribbled over, and crafted packets through a real QP.
//! - A process that dies leaves nothing that breaks the next run: its instance slot, QP
//!   entries and ring files are reclaimed by the next opener's sweep (the process is
//!   identified by pid *and* start time, so pid reuse does not fool the sweep).
//! - Fast path (push / pop / notify without sleeper): no syscall, no lock.
//!
//! # Limits
//!
//! 1024 instances per HCA, 65536 QP table entries per HCA, 4096 QPs per instance; QPNs,
//! mkey indices, CQNs, PDNs and SRQNs are 24-bit counters that wrap (QPNs are unique among
//! live QPs; the others are unique until the counter wraps). Processes running an
//! incompatible layout version of the same HCA name force rebuilds of each other's
//! registry; do not mix versions on one host. All processes using one fabric directory
//! must share a PID namespace and `/proc` (liveness is judged by pid and start time).

mod instance;
pub mod layout;
mod liveness;
mod memory_export;
mod registry;
mod ring;
mod shm;
mod sigbus;
mod wake;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

pub use instance::{Instance, QpAllocation};
pub use memory_export::{
    ExportedRegion, ImportedMemory, MappingReader, MemoryExport, PlaceError, Placement,
    exported_for,
};
pub use registry::{QpOwner, Registry, SweepReport};
pub use ring::{
    FilledPushError, PLACEMENT_WAIT_LIMIT, PushError, Record, RecordFiller, RecordOverflow,
    RecordView, RingConsumer, RingError, RingProducer, SmallRecord,
};
pub use shm::{OutOfBounds, SharedMapping};
pub(crate) use sigbus::losses as mapping_losses;
pub use wake::{InstanceWaker, PendingSlots, QpNotifier, WaitOutcome};

/// A 16-byte RoCE GID.
pub type Gid = [u8; 16];

/// Environment variable naming the fabric directory.
pub const SHM_DIR_ENV: &str = "FERRODAT_SOFTHCA_SHM_DIR";
/// The fabric directory used when [`SHM_DIR_ENV`] is not set.
pub const DEFAULT_SHM_DIR: &str = "/dev/shm/ferrodat-softhca";

/// Gives this process a fabric directory of its own, `/dev/shm/ferrodat-<tag>-<pid>`,
/// removed when the process exits normally, and turns on the progress thread (one process
/// playing both sides of a connection needs a QP to answer while the other side sleeps in a
/// wait, as silicon would). For test binaries, benchmarks and single-process programs: call
/// it before any device is opened and before the process reads the environment from other
/// threads. A second call does nothing; if [`SHM_DIR_ENV`] is already set (a child process
/// joining its parent's fabric), only the progress thread is turned on. Returns the
/// directory in use.
///
/// A process killed before it exits leaves its directory behind (a few MiB of registry and
/// rings): before making its own, this removes those of earlier processes with the same
/// tag that are gone and that no live process uses (children may join a parent's fabric).
pub fn use_private_fabric(tag: &str) -> PathBuf {
    use std::sync::OnceLock;
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os(SHM_DIR_ENV).filter(|d| !d.is_empty()) {
            // SAFETY: see the function's contract: no other thread reads the environment yet.
            unsafe { std::env::set_var("FERRODAT_SOFTHCA_PROGRESS_THREAD", "1") };
            return PathBuf::from(dir);
        }
        remove_stale_private_fabrics(Path::new("/dev/shm"), tag);
        let dir = PathBuf::from(format!("/dev/shm/ferrodat-{tag}-{}", std::process::id()));
        if let Err(e) = std::fs::create_dir_all(&dir) {
            panic!(
                "create the private softhca fabric {}: {e} (is /dev/shm mounted?)",
                dir.display()
            );
        }
        extern "C" fn remove_private_fabric() {
            if let Some(dir) = DIR.get() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        // SAFETY: registers a plain function without state; it runs once, at exit.
        unsafe { libc::atexit(remove_private_fabric) };
        // SAFETY: see the function's contract.
        unsafe {
            std::env::set_var(SHM_DIR_ENV, &dir);
            std::env::set_var("FERRODAT_SOFTHCA_PROGRESS_THREAD", "1");
        }
        dir
    })
    .clone()
}

/// Removes `<parent>/ferrodat-<tag>-<pid>` directories ([`use_private_fabric`]'s) whose
/// process is gone and whose registries have no live instance once swept. Best effort.
fn remove_stale_private_fabrics(parent: &Path, tag: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    let prefix = format!("ferrodat-{tag}-");
    for entry in entries.filter_map(Result::ok) {
        let Some(pid) = entry.file_name().to_str().and_then(|name| {
            let digits = name.strip_prefix(&prefix)?;
            digits.bytes().all(|b| b.is_ascii_digit()).then(|| digits.parse::<u32>().ok())?
        }) else {
            continue;
        };
        if pid == std::process::id() || !liveness::ProcessIdentity::pid_only(pid).is_gone() {
            continue;
        }
        let fabric = FabricDir::new(entry.path());
        let in_use = match fabric.hca_names() {
            Ok(names) => names.iter().any(|name| {
                // Opening sweeps the dead; an HCA that cannot be opened is left alone.
                fabric
                    .open_existing_hca(name)
                    .map_or(true, |r| r.is_some_and(|r| r.live_instances() > 0))
            }),
            Err(_) => true,
        };
        if !in_use {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The directory holding the registries and rings of all HCAs of this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FabricDir {
    root: PathBuf,
}

impl FabricDir {
    /// `$FERRODAT_SOFTHCA_SHM_DIR`, or `/dev/shm/ferrodat-softhca`.
    pub fn from_env() -> Self {
        match std::env::var_os(SHM_DIR_ENV) {
            Some(dir) if !dir.is_empty() => Self::new(dir),
            _ => Self::new(DEFAULT_SHM_DIR),
        }
    }

    /// An explicit directory (tests use a private one under /dev/shm). It should be on a
    /// tmpfs: the files are mapped and written at memory speed.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Opens the registry of HCA `name`, creating it with `gid` if it does not exist, and
    /// sweeps dead owners. A file with another layout version is rebuilt; one with another
    /// GID is rebuilt when no live process uses it, else this fails with `GidConflict`.
    pub fn open_hca(&self, name: &str, gid: Gid) -> Result<Registry, FabricError> {
        Registry::open_or_create(&self.root, name, gid)
    }

    /// Opens the registry of HCA `name` (as [`Self::open_hca`]) and joins it as a new
    /// instance, opening it again if another process replaced the file in between (a
    /// rebuild for another GID or layout). What a process using the HCA calls.
    pub fn join_hca(&self, name: &str, gid: Gid) -> Result<(Registry, Instance), FabricError> {
        let mut attempts = 0;
        loop {
            let registry = self.open_hca(name, gid)?;
            match registry.register_instance() {
                Err(FabricError::Replaced { .. }) if attempts < 8 => attempts += 1,
                joined => return joined.map(|instance| (registry, instance)),
            }
        }
    }

    /// Opens the registry of HCA `name` if it exists with a usable layout (and sweeps it).
    pub fn open_existing_hca(&self, name: &str) -> Result<Option<Registry>, FabricError> {
        Registry::open_existing(&self.root, name)
    }

    /// The HCA whose GID is `gid`, among the registries in the directory (to reach a remote
    /// QP given as GID + QPN). Files with an unusable layout are skipped.
    /// A registry this user may not open (another user's, in a directory they share) is
    /// skipped; its error is returned only if no registry has the GID.
    pub fn find_hca_by_gid(&self, gid: Gid) -> Result<Option<Registry>, FabricError> {
        let mut denied = None;
        for name in self.hca_names()? {
            match self.open_existing_hca(&name) {
                Ok(Some(registry)) if registry.gid() == gid => return Ok(Some(registry)),
                Ok(_) => {}
                Err(e @ FabricError::Os { .. })
                    if e.errno() == libc::EACCES || e.errno() == libc::EPERM =>
                {
                    denied.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        denied.map_or(Ok(None), Err)
    }

    /// Names of the HCAs that have a registry file in the directory (sorted).
    pub fn hca_names(&self) -> Result<Vec<String>, FabricError> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(FabricError::os(
                    "read_dir",
                    &self.root,
                    e,
                    "is the fabric directory readable by this user?",
                ));
            }
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let file_name = entry.file_name().into_string().ok()?;
                let name = file_name.strip_suffix(".hca")?;
                registry::validate_hca_name(name).ok()?;
                Some(name.to_string())
            })
            .collect();
        names.sort();
        Ok(names)
    }
}

/// Everything that can go wrong in the fabric, with the path involved and a hint.
#[derive(Debug)]
pub enum FabricError {
    /// An OS call failed.
    Os {
        /// The call, e.g. `"open"`, `"mmap (MAP_SHARED)"`.
        op: &'static str,
        /// The file or directory it was about.
        path: PathBuf,
        /// The OS error (errno).
        source: io::Error,
        /// What to check.
        hint: &'static str,
    },
    /// A shared file exists but cannot be used as it is.
    BadFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A fixed-size table is full.
    Exhausted {
        /// What ran out, e.g. `"QP table entries"`.
        what: &'static str,
        /// Its capacity.
        capacity: usize,
        /// The registry file.
        path: PathBuf,
        /// What to do.
        hint: &'static str,
    },
    /// The caller passed something unusable (bad name, a QPN it does not own, ...).
    InvalidArgument(String),
    /// The registry file was replaced (rebuilt by a process with another GID or layout)
    /// after this process opened it: open it again.
    Replaced {
        /// The registry file.
        path: PathBuf,
    },
    /// The HCA exists with another GID and is in use by live processes.
    GidConflict {
        /// The registry file.
        path: PathBuf,
        /// The GID in the file.
        existing: Gid,
        /// The GID asked for.
        requested: Gid,
        /// Live processes using the HCA.
        live_instances: usize,
    },
}

impl FabricError {
    pub(crate) fn os(op: &'static str, path: &Path, source: io::Error, hint: &'static str) -> Self {
        Self::Os { op, path: path.to_path_buf(), source, hint }
    }

    pub(crate) fn bad_file(path: &Path, problem: String) -> Self {
        Self::BadFile { path: path.to_path_buf(), problem }
    }

    /// The errno the kernel model should report for this error: the OS errno for `Os`,
    /// `ENOMEM` for `Exhausted`, `EINVAL` for `InvalidArgument`, `EEXIST` for
    /// `GidConflict`, `EAGAIN` for `Replaced`, `EIO` for `BadFile`.
    pub fn errno(&self) -> i32 {
        match self {
            Self::Os { source, .. } => source.raw_os_error().unwrap_or(libc::EIO),
            Self::BadFile { .. } => libc::EIO,
            Self::Exhausted { .. } => libc::ENOMEM,
            Self::InvalidArgument(_) => libc::EINVAL,
            Self::GidConflict { .. } => libc::EEXIST,
            Self::Replaced { .. } => libc::EAGAIN,
        }
    }
}

/// For a permission error on `path`: whose it (or the directory it was to be made in) is,
/// if not this process's user, and what to do. A fabric is one user's unless its
/// directory and files are writable by others (made under a umask that lets them be).
fn another_users(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let (what, meta) = match std::fs::metadata(path) {
        Ok(meta) => ("it", meta),
        Err(_) => match path.parent().and_then(|dir| std::fs::metadata(dir).ok()) {
            Some(meta) => ("its directory", meta),
            None => return String::new(),
        },
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() == me {
        return String::new();
    }
    format!(
        " ({what} belongs to uid {} with mode {:o}, and this process runs as uid {me}: processes \
         of different users share a softhca fabric only if its directory and files are writable \
         by all of them, e.g. made under umask 000 in a directory with mode 1777; otherwise give \
         each user a fabric of its own with {SHM_DIR_ENV}=<directory>)",
        meta.uid(),
        meta.mode() & 0o7777
    )
}

impl fmt::Display for FabricError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Os { op, path, source, hint } => {
                write!(
                    f,
                    "softhca fabric: {op} {} failed: {source}; hint: {hint}",
                    path.display()
                )?;
                if source.kind() == io::ErrorKind::PermissionDenied {
                    f.write_str(&another_users(path))?;
                }
                Ok(())
            }
            Self::BadFile { path, problem } => {
                write!(f, "softhca fabric: {}: {problem}", path.display())
            }
            Self::Exhausted { what, capacity, path, hint } => write!(
                f,
                "softhca fabric: all {capacity} {what} of {} are in use; hint: {hint}",
                path.display()
            ),
            Self::InvalidArgument(what) => write!(f, "softhca fabric: {what}"),
            Self::Replaced { path } => write!(
                f,
                "softhca fabric: {} was replaced by another process (another GID or layout \
                 version for this HCA name) after this one opened it; hint: open the HCA again",
                path.display()
            ),
            Self::GidConflict { path, existing, requested, live_instances } => write!(
                f,
                "softhca fabric: {} has GID {} but {} was requested, and {live_instances} live \
                 process(es) use it; hint: stop them or give this HCA another name \
                 (FERRODAT_SOFTHCA)",
                path.display(),
                format_gid(existing),
                format_gid(requested)
            ),
        }
    }
}

impl std::error::Error for FabricError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Os { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A GID as an IPv6 address, e.g. `::ffff:127.0.0.1`.
pub fn format_gid(gid: &Gid) -> String {
    std::net::Ipv6Addr::from(*gid).to_string()
}
