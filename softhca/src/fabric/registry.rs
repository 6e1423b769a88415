//! The per-HCA registry file `<dir>/<hca>.hca` (layout in [`layout::registry`]).
//!
//! # Creation and rebuild, race-free
//!
//! The first opener builds the complete file under a temporary name (`.<hca>.hca.tmp-<pid>-
//! <random>`), stores the magic last (Release), then publishes it with `link(2)`, which
//! fails with EEXIST if another process won the race (the loser discards its copy and
//! opens the winner's). A file visible under the real name is therefore always fully
//! initialised; nobody waits for a magic to appear.
//!
//! A file whose magic, version, size or capacities do not match this build (or whose GID
//! differs while no live process uses it) is rebuilt: the rebuilder takes `flock(LOCK_EX)`
//! on the old file, checks that the name still refers to that same inode (else someone
//! already rebuilt it: retry), and `rename(2)`s a fresh file over it. Processes still
//! mapping the old inode keep working on it, alone.
//!
//! A process joins an HCA ([`Registry::register_instance`]) under `flock(LOCK_SH)` on the
//! file it mapped, after checking that the name still refers to it; a rebuild for another
//! GID counts the live instances under its `LOCK_EX`. So a process that opened the registry
//! just before another replaced it for a different GID learns so
//! ([`FabricError::Replaced`]) instead of joining a file nobody else sees, and of two
//! processes naming one HCA with two GIDs, one gets [`FabricError::GidConflict`].
//!
//! # Allocators
//!
//! 64-bit counters, `fetch_add`ed, mapped into 24-bit values `first + c % (2^24 - first)`:
//! QPN from 0x100 (0 and 1 are the IB special QPs), mkey index from 0x100 (key = `index << 8
//! | variant`, variant changing at every wrap and between registry incarnations), CQN from
//! 0x400, PDN from 1, SRQN from 0x80.
//!
//! # QP table
//!
//! Entry `qpn & 0xffff`, 32 bytes: a word `state << 56 | qpn << 32 | pid`, the owner
//! instance's uid, `generation << 32 | instance index << 16 | pending slot`, and a word the
//! owner may publish (QP state). Allocation takes the next QPN from the counter and claims
//! its entry with one CAS FREE -> CLAIMING; an occupied entry means "try the next QPN", so
//! allocation is O(1) unless the table is nearly full. CLAIMING -> LIVE (Release) after the
//! other fields are written; readers ([`Registry::owner_of`]) read the word, the fields,
//! then the word again, and accept only an unchanged LIVE word with the QPN they asked for.
//!
//! # Dead-owner sweep
//!
//! Instances record `pid` and process start time. [`Registry::sweep`] (run on every open,
//! on allocation failure, and on demand):
//! 1. marks instance slots of gone processes RECLAIMING (CAS: one sweeper per slot; a
//!    sweeper that dies mid-way is itself detected by the next sweep);
//! 2. reclaims every QP entry whose instance is not LIVE with the recorded uid, or whose
//!    claimer died: CAS to RECLAIMING, unlink `<hca>/qp-0x<qpn>`, store FREE;
//! 3. frees the instance slots from step 1;
//! 4. removes stray files in `<hca>/`: ring files no LIVE entry claims whose producer is
//!    gone, and temporary files of gone processes.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering, fence};

use super::instance::Instance;
use super::layout::registry as reg;
use super::liveness::{ProcessIdentity, unique_id};
use super::memory_export;
use super::ring::{self, RingConsumer};
use super::shm::SharedMapping;
use super::wake::{InstanceWaker, QpNotifier, WakeArea};
use super::{FabricError, Gid, format_gid};

/// Lowest QPN handed out.
pub(crate) const FIRST_QPN: u32 = 0x100;
const FIRST_MKEY_INDEX: u32 = 0x100;
const FIRST_CQN: u32 = 0x400;
const FIRST_PDN: u32 = 1;
const FIRST_SRQN: u32 = 0x80;
const VALUE_LIMIT_24: u32 = 1 << 24;

/// How often `open_hca` retries when the file changes under it (lost races, rebuilds).
const OPEN_ATTEMPTS: usize = 16;

/// The registry of one HCA: a shared mapping of its `.hca` file. Cheap to clone.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<RegistryInner>,
}

struct RegistryInner {
    map: SharedMapping,
    /// The mapped file, for the flocks that order joining against rebuilding.
    file: File,
    path: PathBuf,
    ring_dir: PathBuf,
    name: String,
    uid: u64,
    gid: Gid,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("path", &self.inner.path)
            .field("gid", &format_gid(&self.inner.gid))
            .field("uid", &format_args!("{:#018x}", self.inner.uid))
            .finish()
    }
}

/// Who owns a live QP, as recorded in the QP table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpOwner {
    /// The QPN asked about.
    pub qpn: u32,
    /// Owner process.
    pub pid: u32,
    /// Owner instance's slot in the registry.
    pub instance_index: u16,
    /// Owner instance's unique id.
    pub instance_uid: u64,
    /// Incremented each time the table entry is allocated.
    pub generation: u32,
    /// The owner instance's pending slot for this QP (see `wake.rs`).
    pub pending_slot: u16,
    /// Whatever the owner last published with [`Instance::publish_qp_state`].
    pub published_state: u32,
}

/// What a sweep reclaimed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Instance slots of gone processes freed.
    pub dead_instances: usize,
    /// QP entries freed (their ring files unlinked).
    pub reclaimed_qps: usize,
    /// Stray ring and temporary files removed.
    pub removed_files: usize,
}

fn pack_word(state: u8, qpn: u32, pid: u32) -> u64 {
    (u64::from(state) << 56) | (u64::from(qpn & 0xff_ffff) << 32) | u64::from(pid)
}
fn word_state(word: u64) -> u8 {
    (word >> 56) as u8
}
fn word_qpn(word: u64) -> u32 {
    ((word >> 32) & 0xff_ffff) as u32
}
fn word_pid(word: u64) -> u32 {
    word as u32
}

pub(crate) fn validate_hca_name(name: &str) -> Result<(), FabricError> {
    let ok = !name.is_empty()
        && name.len() <= reg::MAX_NAME_BYTES
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(FabricError::InvalidArgument(format!(
            "HCA name {name:?} is not usable as a file name: use 1..={} of [A-Za-z0-9_.-], \
             not starting with '.'",
            reg::MAX_NAME_BYTES
        )))
    }
}

fn create_dir(dir: &Path) -> Result<(), FabricError> {
    std::fs::create_dir_all(dir).map_err(|e| {
        FabricError::os(
            "mkdir -p",
            dir,
            e,
            "is /dev/shm mounted and writable? (or set FERRODAT_SOFTHCA_SHM_DIR)",
        )
    })
}

/// `.<stem>.tmp-<pid>-<random>` in `dir`, for build-then-publish.
pub(crate) fn temp_path(dir: &Path, stem: &str) -> PathBuf {
    dir.join(format!(".{stem}.tmp-{}-{:016x}", std::process::id(), unique_id()))
}

/// The pid in a temporary file name made by [`temp_path`]; `None` for any other name
/// (strict, so a fabric directory pointed at a shared place never loses foreign files).
fn temp_file_pid(file_name: &str) -> Option<u32> {
    if !file_name.starts_with('.') {
        return None;
    }
    let (_, rest) = file_name.rsplit_once(".tmp-")?;
    let (pid, random) = rest.split_once('-')?;
    let is_ours = random.len() == 16 && random.bytes().all(|b| b.is_ascii_hexdigit());
    if is_ours { pid.parse().ok() } else { None }
}

/// Creates a new zero-filled file of `len` bytes at `path` (must not exist), with mode
/// 0666 less the umask, as the fabric's files are: other users can join the fabric only
/// if the umask lets them (see `FabricError`'s permission hint).
pub(crate) fn create_zeroed_file(path: &Path, len: u64) -> Result<File, FabricError> {
    create_zeroed_file_with_mode(path, len, 0o666)
}

/// [`create_zeroed_file`] with permissions `mode` (less the umask) from the start.
pub(crate) fn create_zeroed_file_with_mode(
    path: &Path,
    len: u64,
    mode: u32,
) -> Result<File, FabricError> {
    let file =
        OpenOptions::new().read(true).write(true).create_new(true).mode(mode).open(path).map_err(
            |e| {
                FabricError::os("create", path, e, "is the fabric directory writable by this user?")
            },
        )?;
    if let Err(e) = file.set_len(len) {
        let _ = std::fs::remove_file(path);
        return Err(FabricError::os("ftruncate", path, e, "is /dev/shm full? (df -h /dev/shm)"));
    }
    // The space reserved now: on a full /dev/shm a sparse file's first touch of a page
    // would fault (SIGBUS) later instead of failing here with a reason.
    // SAFETY: posix_fallocate on a descriptor we own, over the length just set.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
    if rc != 0 {
        let _ = std::fs::remove_file(path);
        let e = io::Error::from_raw_os_error(rc);
        return Err(FabricError::os(
            "posix_fallocate",
            path,
            e,
            "is /dev/shm full? (df -h /dev/shm)",
        ));
    }
    Ok(file)
}

fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).open(path)
}

/// True if `path` still names the inode `file` was opened from (false if it vanished).
fn same_inode(path: &Path, file: &File) -> bool {
    match (std::fs::metadata(path), file.metadata()) {
        (Ok(now), Ok(old)) => now.ino() == old.ino() && now.dev() == old.dev(),
        _ => false,
    }
}

/// An advisory `flock` on a registry file, released when dropped.
struct FileLock<'a>(&'a File);

impl<'a> FileLock<'a> {
    /// `operation`: `LOCK_SH` or `LOCK_EX` (blocking).
    fn take(file: &'a File, path: &Path, operation: i32) -> Result<Self, FabricError> {
        // SAFETY: flock on a descriptor `file` keeps open; it only takes an advisory lock.
        if unsafe { libc::flock(file.as_raw_fd(), operation) } != 0 {
            return Err(FabricError::os(
                "flock",
                path,
                io::Error::last_os_error(),
                "does the file system support flock? (/dev/shm does)",
            ));
        }
        Ok(FileLock(file))
    }
}

impl Drop for FileLock<'_> {
    fn drop(&mut self) {
        // SAFETY: as in `take`; closing the file would release the lock too.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

enum Inspection {
    Usable,
    Unusable(String),
}

/// Checks the header of an existing registry file with `pread` (nothing mapped yet).
fn inspect(file: &File, name: &str) -> Result<Inspection, io::Error> {
    let size = file.metadata()?.len();
    if size != reg::TOTAL_BYTES as u64 {
        return Ok(Inspection::Unusable(format!(
            "file size {size} != {} expected by layout version {}",
            reg::TOTAL_BYTES,
            reg::VERSION
        )));
    }
    let mut header = [0u8; reg::OFF_NAME + reg::MAX_NAME_BYTES];
    file.read_exact_at(&mut header, 0)?;
    let u64_at = |off: usize| u64::from_ne_bytes(header[off..off + 8].try_into().unwrap_or([0; 8]));
    let u32_at = |off: usize| u32::from_ne_bytes(header[off..off + 4].try_into().unwrap_or([0; 4]));
    let problem = if u64_at(reg::OFF_MAGIC) != reg::MAGIC {
        Some(format!("bad magic {:#018x}", u64_at(reg::OFF_MAGIC)))
    } else if u32_at(reg::OFF_VERSION) != reg::VERSION {
        Some(format!("layout version {} != {}", u32_at(reg::OFF_VERSION), reg::VERSION))
    } else if u64_at(reg::OFF_TOTAL_BYTES) != reg::TOTAL_BYTES as u64
        || u32_at(reg::OFF_QP_CAPACITY) as usize != reg::QP_CAPACITY
        || u32_at(reg::OFF_INSTANCE_CAPACITY) as usize != reg::INSTANCE_CAPACITY
        || u32_at(reg::OFF_PENDING_SLOTS) as usize != reg::PENDING_SLOTS
    {
        Some("table sizes differ from this build's".to_string())
    } else {
        let len = (u32_at(reg::OFF_NAME_LEN) as usize).min(reg::MAX_NAME_BYTES);
        let stored = &header[reg::OFF_NAME..reg::OFF_NAME + len];
        (stored != name.as_bytes())
            .then(|| format!("it names HCA {:?}, not {name:?}", String::from_utf8_lossy(stored)))
    };
    Ok(problem.map_or(Inspection::Usable, Inspection::Unusable))
}

impl Registry {
    pub(crate) fn open_or_create(dir: &Path, name: &str, gid: Gid) -> Result<Self, FabricError> {
        validate_hca_name(name)?;
        create_dir(dir)?;
        let path = dir.join(format!("{name}.hca"));
        for _ in 0..OPEN_ATTEMPTS {
            let file = match open_rw(&path) {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    match Self::build(dir, &path, name, gid, Publish::IfAbsent)? {
                        Some(registry) => return registry.finish_open(),
                        None => continue, // another process published first: open theirs
                    }
                }
                Err(e) => {
                    return Err(FabricError::os(
                        "open",
                        &path,
                        e,
                        "is the fabric directory readable and writable by this user?",
                    ));
                }
            };
            match inspect(&file, name)
                .map_err(|e| FabricError::os("read header of", &path, e, "is the file readable?"))?
            {
                Inspection::Unusable(_why) => {
                    Self::rebuild_if_unchanged(dir, &path, &file, name, gid)?;
                }
                Inspection::Usable => {
                    let registry = Self::map_existing(&path, file, name)?.finish_open()?;
                    if registry.gid() == gid {
                        return Ok(registry);
                    }
                    // Left over from a run with another address: replace it if nobody uses
                    // it, counted under the lock that joining takes shared.
                    let _lock = FileLock::take(&registry.inner.file, &path, libc::LOCK_EX)?;
                    let live_instances = registry.live_instances();
                    if live_instances != 0 {
                        return Err(FabricError::GidConflict {
                            path,
                            existing: registry.gid(),
                            requested: gid,
                            live_instances,
                        });
                    }
                    if same_inode(&path, &registry.inner.file) {
                        Self::build(dir, &path, name, gid, Publish::Replace)?;
                    }
                }
            }
        }
        Err(FabricError::bad_file(
            &path,
            format!(
                "gave up after {OPEN_ATTEMPTS} attempts: the file keeps being replaced; is a \
                 process with another ferrodat layout version or another GID for this HCA \
                 running?"
            ),
        ))
    }

    pub(crate) fn open_existing(dir: &Path, name: &str) -> Result<Option<Self>, FabricError> {
        validate_hca_name(name)?;
        let path = dir.join(format!("{name}.hca"));
        let file = match open_rw(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(FabricError::os(
                    "open",
                    &path,
                    e,
                    "is the fabric directory readable and writable by this user?",
                ));
            }
        };
        match inspect(&file, name)
            .map_err(|e| FabricError::os("read header of", &path, e, "is the file readable?"))?
        {
            Inspection::Unusable(_) => Ok(None),
            Inspection::Usable => Ok(Some(Self::map_existing(&path, file, name)?.finish_open()?)),
        }
    }

    fn map_existing(path: &Path, file: File, name: &str) -> Result<Self, FabricError> {
        let map = SharedMapping::map(&file, reg::TOTAL_BYTES, path)?;
        if map.u64_at(reg::OFF_MAGIC).load(Ordering::Acquire) != reg::MAGIC {
            return Err(FabricError::bad_file(
                path,
                "the magic vanished between check and map (rebuilt concurrently?)".to_string(),
            ));
        }
        let mut gid = [0u8; 16];
        let _ = map.read_bytes(reg::OFF_GID, &mut gid);
        let uid = map.u64_at(reg::OFF_REGISTRY_UID).load(Ordering::Relaxed);
        Ok(Self::from_parts(map, file, path, name, uid, gid))
    }

    fn from_parts(
        map: SharedMapping,
        file: File,
        path: &Path,
        name: &str,
        uid: u64,
        gid: Gid,
    ) -> Self {
        let ring_dir = path.with_file_name(name);
        Self {
            inner: Arc::new(RegistryInner {
                map,
                file,
                path: path.to_path_buf(),
                ring_dir,
                name: name.to_string(),
                uid,
                gid,
            }),
        }
    }

    /// Builds a complete registry under a temporary name and publishes it. `None`: with
    /// `Publish::IfAbsent`, another process published first.
    fn build(
        dir: &Path,
        path: &Path,
        name: &str,
        gid: Gid,
        publish: Publish,
    ) -> Result<Option<Self>, FabricError> {
        let temp = temp_path(dir, &format!("{name}.hca"));
        let file = create_zeroed_file(&temp, reg::TOTAL_BYTES as u64)?;
        let result = Self::init_and_publish(file, &temp, path, name, gid, publish);
        // After link() both names refer to the file; after rename() the temp name is gone.
        let _ = std::fs::remove_file(&temp);
        result
    }

    fn init_and_publish(
        file: File,
        temp: &Path,
        path: &Path,
        name: &str,
        gid: Gid,
        publish: Publish,
    ) -> Result<Option<Self>, FabricError> {
        let map = SharedMapping::map(&file, reg::TOTAL_BYTES, temp)?;
        let uid = unique_id();
        map.u32_at(reg::OFF_VERSION).store(reg::VERSION, Ordering::Relaxed);
        map.u64_at(reg::OFF_TOTAL_BYTES).store(reg::TOTAL_BYTES as u64, Ordering::Relaxed);
        map.u64_at(reg::OFF_REGISTRY_UID).store(uid, Ordering::Relaxed);
        map.u32_at(reg::OFF_QP_CAPACITY).store(reg::QP_CAPACITY as u32, Ordering::Relaxed);
        map.u32_at(reg::OFF_INSTANCE_CAPACITY)
            .store(reg::INSTANCE_CAPACITY as u32, Ordering::Relaxed);
        map.u32_at(reg::OFF_PENDING_SLOTS).store(reg::PENDING_SLOTS as u32, Ordering::Relaxed);
        map.u32_at(reg::OFF_NAME_LEN).store(name.len() as u32, Ordering::Relaxed);
        let header_fits = map.write_bytes(reg::OFF_GID, &gid).is_ok()
            && map.write_bytes(reg::OFF_NAME, name.as_bytes()).is_ok();
        debug_assert!(header_fits, "layout constants keep the header in the file");
        // Everything else is zero from ftruncate (FREE slots, counters at 0).
        map.u64_at(reg::OFF_MAGIC).store(reg::MAGIC, Ordering::Release);

        match publish {
            Publish::IfAbsent => match std::fs::hard_link(temp, path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(None),
                Err(e) => {
                    return Err(FabricError::os(
                        "link (publish)",
                        path,
                        e,
                        "does the file system support hard links? (/dev/shm does)",
                    ));
                }
            },
            Publish::Replace => std::fs::rename(temp, path).map_err(|e| {
                FabricError::os("rename (rebuild)", path, e, "is the directory writable?")
            })?,
        }
        Ok(Some(Self::from_parts(map, file, path, name, uid, gid)))
    }

    /// Replaces `path` with a fresh registry if it still is the inode `stale` was opened
    /// from (serialised by flock on that inode).
    fn rebuild_if_unchanged(
        dir: &Path,
        path: &Path,
        stale: &File,
        name: &str,
        gid: Gid,
    ) -> Result<(), FabricError> {
        let _lock = FileLock::take(stale, path, libc::LOCK_EX)?;
        if same_inode(path, stale) {
            Self::build(dir, path, name, gid, Publish::Replace)?;
        }
        Ok(())
    }

    fn finish_open(self) -> Result<Self, FabricError> {
        create_dir(&self.inner.ring_dir)?;
        self.sweep()?;
        Ok(self)
    }

    // ---------------------------------------------------------------- accessors

    /// The HCA name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The HCA's GID.
    pub fn gid(&self) -> Gid {
        self.inner.gid
    }

    /// The registry file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Random id of this incarnation of the registry file.
    pub fn uid(&self) -> u64 {
        self.inner.uid
    }

    /// The file of the outbound ring of `qpn` (`<dir>/<hca>/qp-0x<qpn>`).
    pub fn ring_path(&self, qpn: u32) -> PathBuf {
        self.inner.ring_dir.join(format!("qp-{qpn:#08x}"))
    }

    /// The export file of the memory region with key index `index`
    /// (`<dir>/<hca>/mr-0x<index>`, see `memory_export.rs`).
    pub fn export_path(&self, index: u32) -> PathBuf {
        self.inner.ring_dir.join(format!("mr-{index:#08x}"))
    }

    pub(crate) fn ring_dir(&self) -> &Path {
        &self.inner.ring_dir
    }

    // ---------------------------------------------------------------- allocators

    fn next_value(&self, counter_offset: usize, first: u32) -> (u32, u64) {
        let count = self.inner.map.u64_at(counter_offset).fetch_add(1, Ordering::Relaxed);
        let range = u64::from(VALUE_LIMIT_24 - first);
        (first + (count % range) as u32, count / range)
    }

    /// A new memory key: `index << 8 | variant` (index 24-bit from 0x100; the variant byte
    /// changes at each wrap of the index and between registry incarnations). Never 0.
    pub fn alloc_mkey(&self) -> u32 {
        let (index, lap) = self.next_value(reg::OFF_NEXT_MKEY, FIRST_MKEY_INDEX);
        let variant = (lap.wrapping_add(self.inner.uid) & 0xff) as u32;
        (index << 8) | variant
    }

    /// A new CQN (24-bit, from 0x400).
    pub fn alloc_cqn(&self) -> u32 {
        self.next_value(reg::OFF_NEXT_CQN, FIRST_CQN).0
    }

    /// A new PDN (24-bit, from 1).
    pub fn alloc_pdn(&self) -> u32 {
        self.next_value(reg::OFF_NEXT_PDN, FIRST_PDN).0
    }

    /// A new SRQN (24-bit, from 0x80).
    pub fn alloc_srqn(&self) -> u32 {
        self.next_value(reg::OFF_NEXT_SRQN, FIRST_SRQN).0
    }

    // ---------------------------------------------------------------- instances

    pub(crate) fn instance_base(index: u16) -> usize {
        reg::INSTANCES_OFFSET + usize::from(index) % reg::INSTANCE_CAPACITY * reg::INSTANCE_STRIDE
    }

    fn instance_word(&self, index: u16, field: usize) -> &AtomicU64 {
        self.inner.map.u64_at(Self::instance_base(index) + field)
    }

    pub(crate) fn wake_area(&self, index: u16) -> WakeArea<'_> {
        WakeArea::new(&self.inner.map, Self::instance_base(index))
    }

    /// True when slot `index` is LIVE and belongs to the instance `uid`.
    pub(crate) fn instance_is_current(&self, index: u16, uid: u64) -> bool {
        if usize::from(index) >= reg::INSTANCE_CAPACITY {
            return false;
        }
        let state = self.instance_word(index, reg::INST_OFF_STATE).load(Ordering::Acquire);
        word_state(state) == reg::STATE_LIVE
            && self.instance_word(index, reg::INST_OFF_UID).load(Ordering::Relaxed) == uid
    }

    /// Joins the HCA as a new instance (normally one per process). Sweeps and retries once
    /// if the instance table is full. Fails with [`FabricError::Replaced`] if another
    /// process replaced the registry file since this one opened it (open it again:
    /// [`super::FabricDir::join_hca`] does).
    pub fn register_instance(&self) -> Result<Instance, FabricError> {
        let path = &self.inner.path;
        let _lock = FileLock::take(&self.inner.file, path, libc::LOCK_SH)?;
        if !same_inode(path, &self.inner.file) {
            return Err(FabricError::Replaced { path: path.clone() });
        }
        self.check_not_lost()?;
        let me = ProcessIdentity::current();
        for attempt in 0..2 {
            let start = me.pid as usize % reg::INSTANCE_CAPACITY;
            for step in 0..reg::INSTANCE_CAPACITY {
                let index = ((start + step) % reg::INSTANCE_CAPACITY) as u16;
                let state = self.instance_word(index, reg::INST_OFF_STATE);
                let observed = state.load(Ordering::Acquire);
                if word_state(observed) != reg::STATE_FREE {
                    continue;
                }
                let claiming = pack_word(reg::STATE_CLAIMING, 0, me.pid);
                if state
                    .compare_exchange(observed, claiming, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    continue;
                }
                let uid = unique_id();
                self.instance_word(index, reg::INST_OFF_UID).store(uid, Ordering::Relaxed);
                self.instance_word(index, reg::INST_OFF_START_TIME)
                    .store(me.start_time, Ordering::Relaxed);
                self.wake_area(index).clear();
                state.store(pack_word(reg::STATE_LIVE, 0, me.pid), Ordering::Release);
                // The claim itself may have touched a lost page: then nobody else sees it.
                self.check_not_lost()?;
                return Ok(Instance::new(self.clone(), index, uid));
            }
            if attempt == 0 {
                self.sweep()?;
            }
        }
        Err(FabricError::Exhausted {
            what: "instance slots",
            capacity: reg::INSTANCE_CAPACITY,
            path: self.inner.path.clone(),
            hint: "too many processes use this HCA at once",
        })
    }

    pub(crate) fn release_instance(&self, index: u16, uid: u64) {
        if self.instance_is_current(index, uid) {
            self.instance_word(index, reg::INST_OFF_STATE).store(0, Ordering::Release);
        }
    }

    /// Processes currently registered (LIVE instance slots).
    pub fn live_instances(&self) -> usize {
        (0..reg::INSTANCE_CAPACITY as u16)
            .filter(|&index| {
                word_state(self.instance_word(index, reg::INST_OFF_STATE).load(Ordering::Acquire))
                    == reg::STATE_LIVE
            })
            .count()
    }

    /// A waker for the instance that owns `qpn`, if the QP is live.
    pub fn waker_for_qp(&self, qpn: u32) -> Option<InstanceWaker> {
        self.notifier_for_qp(qpn).map(|n| n.waker)
    }

    /// A notifier for the owner of `qpn` (to call after pushing records into the ring that
    /// QP consumes), if the QP is live.
    pub fn notifier_for_qp(&self, qpn: u32) -> Option<QpNotifier> {
        let owner = self.owner_of(qpn)?;
        Some(QpNotifier {
            waker: InstanceWaker {
                registry: self.clone(),
                index: owner.instance_index,
                uid: owner.instance_uid,
            },
            pending_slot: owner.pending_slot,
        })
    }

    // ---------------------------------------------------------------- QP table

    fn qp_word(&self, qpn: u32, field: usize) -> &AtomicU64 {
        let index = qpn as usize & (reg::QP_CAPACITY - 1);
        self.inner.map.u64_at(reg::QP_TABLE_OFFSET + index * reg::QP_ENTRY_BYTES + field)
    }

    /// Whether the file was truncated under this process's mapping, or its backing store
    /// failed: what this process sees of it is then zero-filled private memory, not the
    /// registry the other processes share.
    pub fn lost(&self) -> bool {
        self.inner.map.lost()
    }

    /// Whether this mapping still is the registry others open: not [`Self::lost`], and the
    /// file's name still refers to it (not replaced by a rebuild, nor removed). A `stat`.
    pub fn is_current(&self) -> bool {
        !self.lost() && same_inode(&self.inner.path, &self.inner.file)
    }

    /// [`Self::lost`] as the error of an operation that must not go on alone.
    fn check_not_lost(&self) -> Result<(), FabricError> {
        if self.lost() {
            return Err(FabricError::bad_file(
                &self.inner.path,
                "it was truncated under this process's mapping (or its backing store failed), \
                 so this process no longer sees the registry the others share: close the \
                 device and open it again"
                    .to_string(),
            ));
        }
        Ok(())
    }

    /// Claims the next free QPN for instance (`index`, `uid`) with `pending_slot`.
    /// Returns (qpn, generation).
    pub(crate) fn claim_qpn(
        &self,
        instance_index: u16,
        instance_uid: u64,
        pending_slot: u16,
    ) -> Result<(u32, u32), FabricError> {
        self.check_not_lost()?;
        let pid = std::process::id();
        for attempt in 0..2 {
            for _ in 0..reg::QP_CAPACITY {
                let (qpn, _) = self.next_value(reg::OFF_NEXT_QPN, FIRST_QPN);
                let word = self.qp_word(qpn, reg::QP_OFF_WORD);
                let observed = word.load(Ordering::Acquire);
                if word_state(observed) != reg::STATE_FREE {
                    continue; // occupied: this QPN is skipped, try the next one
                }
                let claiming = pack_word(reg::STATE_CLAIMING, qpn, pid);
                if word
                    .compare_exchange(observed, claiming, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    continue;
                }
                let meta = self.qp_word(qpn, reg::QP_OFF_META);
                let generation = ((meta.load(Ordering::Relaxed) >> 32) as u32).wrapping_add(1);
                meta.store(
                    (u64::from(generation) << 32)
                        | (u64::from(instance_index) << 16)
                        | u64::from(pending_slot),
                    Ordering::Relaxed,
                );
                self.qp_word(qpn, reg::QP_OFF_OWNER_UID).store(instance_uid, Ordering::Relaxed);
                self.qp_word(qpn, reg::QP_OFF_PUBLISHED).store(0, Ordering::Relaxed);
                word.store(pack_word(reg::STATE_LIVE, qpn, pid), Ordering::Release);
                // The claim itself may have touched a lost page: then nobody else sees it.
                self.check_not_lost()?;
                return Ok((qpn, generation));
            }
            if attempt == 0 {
                self.sweep()?;
            }
        }
        Err(FabricError::Exhausted {
            what: "QP table entries",
            capacity: reg::QP_CAPACITY,
            path: self.inner.path.clone(),
            hint: "destroy unused QPs",
        })
    }

    /// Frees `qpn` if it is LIVE and owned by instance `uid`; unlinks its ring file first.
    pub(crate) fn release_qpn(&self, qpn: u32, instance_uid: u64) -> Result<(), FabricError> {
        let word = self.qp_word(qpn, reg::QP_OFF_WORD);
        let observed = word.load(Ordering::Acquire);
        let owner_uid = self.qp_word(qpn, reg::QP_OFF_OWNER_UID).load(Ordering::Relaxed);
        if word_state(observed) != reg::STATE_LIVE
            || word_qpn(observed) != qpn
            || owner_uid != instance_uid
        {
            return Err(FabricError::InvalidArgument(format!(
                "QPN {qpn:#x} is not a live QP of this instance in {}",
                self.inner.path.display()
            )));
        }
        // Unlink before freeing: a file never outlives its entry by our hand.
        let unlinked = remove_if_exists(&self.ring_path(qpn));
        // Only we write a LIVE entry we own, so this cannot fail; CAS anyway for safety.
        let _ = word.compare_exchange(observed, 0, Ordering::Release, Ordering::Relaxed);
        unlinked.map_err(|e| {
            FabricError::os(
                "unlink ring of freed QP",
                &self.ring_path(qpn),
                e,
                "the QPN was freed; the file will be swept later",
            )
        })
    }

    pub(crate) fn publish_qp_state(&self, qpn: u32, instance_uid: u64, state: u32) -> bool {
        let observed = self.qp_word(qpn, reg::QP_OFF_WORD).load(Ordering::Acquire);
        let owned = word_state(observed) == reg::STATE_LIVE
            && word_qpn(observed) == qpn
            && self.qp_word(qpn, reg::QP_OFF_OWNER_UID).load(Ordering::Relaxed) == instance_uid;
        if owned {
            self.qp_word(qpn, reg::QP_OFF_PUBLISHED).store(u64::from(state), Ordering::Release);
        }
        owned
    }

    /// The owner of `qpn` if it is a live QP of this HCA (`None` for free, stale or
    /// malformed entries).
    pub fn owner_of(&self, qpn: u32) -> Option<QpOwner> {
        if !(FIRST_QPN..VALUE_LIMIT_24).contains(&qpn) {
            return None;
        }
        let word = self.qp_word(qpn, reg::QP_OFF_WORD);
        for _ in 0..4 {
            let before = word.load(Ordering::Acquire);
            if word_state(before) != reg::STATE_LIVE || word_qpn(before) != qpn {
                return None;
            }
            let instance_uid = self.qp_word(qpn, reg::QP_OFF_OWNER_UID).load(Ordering::Relaxed);
            let meta = self.qp_word(qpn, reg::QP_OFF_META).load(Ordering::Relaxed);
            let published = self.qp_word(qpn, reg::QP_OFF_PUBLISHED).load(Ordering::Relaxed);
            // Seqlock-style: the fields belong to `before` only if the word did not change.
            fence(Ordering::Acquire);
            if word.load(Ordering::Relaxed) != before {
                continue;
            }
            let instance_index = (meta >> 16) as u16;
            let pending_slot = meta as u16;
            if usize::from(instance_index) >= reg::INSTANCE_CAPACITY
                || usize::from(pending_slot) >= reg::PENDING_SLOTS
            {
                return None; // malformed
            }
            return Some(QpOwner {
                qpn,
                pid: word_pid(before),
                instance_index,
                instance_uid,
                generation: (meta >> 32) as u32,
                pending_slot,
                published_state: published as u32,
            });
        }
        None
    }

    /// Opens the outbound ring of `src_qpn` (a QP of this HCA) as its consumer, `my_qpn`
    /// being the consuming QP (records of an epoch addressed to another QP are not read).
    /// The consumer stays on the file it opened: if the producer re-creates its ring
    /// (`Instance::create_ring` again), open it again.
    pub fn open_ring(&self, src_qpn: u32, my_qpn: u32) -> Result<RingConsumer, FabricError> {
        RingConsumer::open(&self.ring_path(src_qpn), src_qpn, my_qpn)
    }

    // ---------------------------------------------------------------- sweep

    /// Reclaims the instance slots, QP entries and files of processes that are gone (see
    /// the module docs). Safe to run concurrently with other sweepers and live users.
    pub fn sweep(&self) -> Result<SweepReport, FabricError> {
        self.check_not_lost()?;
        let me = std::process::id();
        let mut report = SweepReport::default();
        let mut gone_cache: HashMap<(u32, u64), bool> = HashMap::new();
        let mut is_gone = |pid: u32, start_time: u64| {
            *gone_cache
                .entry((pid, start_time))
                .or_insert_with(|| ProcessIdentity { pid, start_time }.is_gone())
        };

        // 1. Instance slots of gone processes -> RECLAIMING (ours now).
        let mut dead_slots = Vec::new();
        for index in 0..reg::INSTANCE_CAPACITY as u16 {
            let state = self.instance_word(index, reg::INST_OFF_STATE);
            let observed = state.load(Ordering::Acquire);
            let start_time = match word_state(observed) {
                reg::STATE_FREE => continue,
                reg::STATE_LIVE => {
                    self.instance_word(index, reg::INST_OFF_START_TIME).load(Ordering::Relaxed)
                }
                _ => 0, // CLAIMING / RECLAIMING: the pid is the claimer's / sweeper's
            };
            let known_state = word_state(observed) <= reg::STATE_RECLAIMING;
            if known_state && !is_gone(word_pid(observed), start_time) {
                continue;
            }
            let reclaiming = pack_word(reg::STATE_RECLAIMING, 0, me);
            if state
                .compare_exchange(observed, reclaiming, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                dead_slots.push(index);
            }
        }

        // 2. QP entries of instances that are not LIVE, or of claimers/sweepers gone.
        for index in 0..reg::QP_CAPACITY as u32 {
            let word = self.qp_word(index, reg::QP_OFF_WORD);
            let observed = word.load(Ordering::Acquire);
            let dead = match word_state(observed) {
                reg::STATE_FREE => continue,
                reg::STATE_LIVE => {
                    let meta = self.qp_word(index, reg::QP_OFF_META).load(Ordering::Relaxed);
                    let uid = self.qp_word(index, reg::QP_OFF_OWNER_UID).load(Ordering::Relaxed);
                    !self.instance_is_current((meta >> 16) as u16, uid)
                }
                reg::STATE_CLAIMING | reg::STATE_RECLAIMING => is_gone(word_pid(observed), 0),
                _ => true, // garbage
            };
            if !dead {
                continue;
            }
            let qpn = word_qpn(observed);
            let reclaiming = pack_word(reg::STATE_RECLAIMING, qpn, me);
            if word
                .compare_exchange(observed, reclaiming, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            if qpn as usize & (reg::QP_CAPACITY - 1) == index as usize {
                // A failure leaves a stray file for step 4 of a later sweep.
                let _ = remove_if_exists(&self.ring_path(qpn));
            }
            word.store(0, Ordering::Release);
            report.reclaimed_qps += 1;
        }

        // 3. Free the dead instance slots.
        for index in dead_slots {
            self.instance_word(index, reg::INST_OFF_STATE).store(0, Ordering::Release);
            report.dead_instances += 1;
        }

        // 4. Stray files.
        report.removed_files += self.sweep_directory(self.ring_dir(), true, &mut is_gone);
        if let Some(dir) = self.inner.path.parent() {
            report.removed_files += self.sweep_directory(dir, false, &mut is_gone);
        }
        Ok(report)
    }

    /// Removes temp files of gone pids, and (if `rings`) ring files nobody owns and export
    /// files of gone exporters.
    fn sweep_directory(
        &self,
        dir: &Path,
        rings: bool,
        is_gone: &mut impl FnMut(u32, u64) -> bool,
    ) -> usize {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        let mut removed = 0;
        for entry in entries.filter_map(Result::ok) {
            let Ok(file_name) = entry.file_name().into_string() else {
                continue;
            };
            let path = entry.path();
            let stray = if let Some(pid) = temp_file_pid(&file_name) {
                is_gone(pid, 0)
            } else if let Some(qpn) = rings.then(|| parse_ring_name(&file_name)).flatten() {
                self.owner_of(qpn).is_none()
                    && ring::producer_of_file(&path).is_none_or(|p| is_gone(p.pid, p.start_time))
            } else if rings && file_name.starts_with("mr-0x") {
                let gone = memory_export::exporter_of_file(&path)
                    .is_none_or(|p| is_gone(p.pid, p.start_time));
                if gone {
                    // Peers that still map the region stop placing into it.
                    memory_export::withdraw_file(&path);
                }
                gone
            } else {
                false
            };
            if stray && remove_if_still(&path, &entry) {
                removed += 1;
            }
        }
        removed
    }
}

#[derive(Clone, Copy)]
enum Publish {
    /// `link()`: fails if the name exists.
    IfAbsent,
    /// `rename()`: replaces.
    Replace,
}

fn parse_ring_name(file_name: &str) -> Option<u32> {
    u32::from_str_radix(file_name.strip_prefix("qp-0x")?, 16).ok()
}

fn remove_if_exists(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Unlinks `path` if it still is the inode `entry` listed (narrows the race with a
/// producer renaming a fresh file over the same name).
fn remove_if_still(path: &Path, entry: &std::fs::DirEntry) -> bool {
    match (std::fs::symlink_metadata(path), entry.metadata()) {
        (Ok(now), Ok(listed)) if now.ino() == listed.ino() => std::fs::remove_file(path).is_ok(),
        _ => false,
    }
}
