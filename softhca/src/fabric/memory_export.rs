//! Registered memory that peers may write or read directly: the export files of one-sided
//! placement.
//!
//! softhca carries an RDMA WRITE's data through the ring and the responder copies it into
//! place (a READ's the other way): two copies, one of them on the target's CPU. A real HCA
//! reaches any registered memory by DMA, without the target's CPU. softhca cannot reach
//! another process's private memory, but it can reach memory the application registered
//! from a `MAP_SHARED` file mapping (a memfd, a file in `/dev/shm` or hugetlbfs): REG_MR
//! *exports* such a region when it grants REMOTE_WRITE or REMOTE_READ
//! ([`exported_for`]), and a requester that finds the export copies the data straight
//! into it or out of it (*places* it), then tells the responder so in the request's
//! header (`hca::placement`).
//!
//! An export is a file `<hca>/mr-0x<key index>` (layout in [`layout::export`]): the
//! region's key, PD, rights and range, the exporter's pid, and its own descriptor of the
//! backing file with the file's device, inode and the region's offset in it. A peer of the
//! same user opens the backing file through `/proc/<pid>/fd/<fd>`, checks device, inode
//! and owner (its own user: see [`ImportedMemory::open`]), and maps the region. Export
//! files, exporters and backing files of other users are not used, nor an export of
//! another process than the peer QP's owner: their WRITEs take the ring. Each exporting
//! process keeps one descriptor per backing file, however many regions it registers in it.
//!
//! # Withdrawal (DEREG_MR)
//!
//! Nothing may be written into a region once DEREG_MR has returned. A placer claims a user
//! slot (CAS 0 -> its pid), then reads the live word; [`MemoryExport`]'s drop clears the
//! live word, then waits until no slot holds the pid of a live process. A SeqCst fence
//! stands between each side's store and its load (Dekker's pattern, as
//! `loom-tests/tests/placement.rs` checks), so either the placer sees the region
//! withdrawn, or the exporter sees the placer's slot and waits for it (Acquire: the copy
//! the placer finished before freeing its slot with Release is done) (a copy: microseconds; a placer stopped in the middle of
//! one, by a debugger say, holds DEREG_MR until it resumes or dies).
//!
//! A process that dies leaves its export files behind; the registry sweep withdraws (live
//! word 0) and removes those whose exporter is gone. Requesters also stop placing into a
//! peer whose process they find gone (`hca::placement`).
//!
//! [`layout::export`]: super::layout::export

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering, fence};

use super::FabricError;
use super::layout::export as lay;
use super::liveness::{ProcessIdentity, slot_owner_is_gone, slot_word, wait_while_busy};
use super::registry::{Registry, create_zeroed_file_with_mode, temp_path};
use super::shm::SharedMapping;
use ferrodat_abi::uverbs::access;

/// Whether REG_MR exports a region registered from a shared file mapping with these
/// access flags: peers place WRITEs into it if it grants REMOTE_WRITE, READs out of it if
/// it grants REMOTE_READ (each checked again at every placement).
pub fn exported_for(access_flags: u32) -> bool {
    access_flags & (access::REMOTE_WRITE | access::REMOTE_READ) != 0
}

/// What an export says about its region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportedRegion {
    /// The region's key (`index << 8 | variant`).
    pub key: u32,
    /// Its PD number.
    pub pdn: u32,
    /// Its `uverbs::access` flags.
    pub access: u32,
    /// The first address of the region in the key's address space.
    pub iova: u64,
    /// Its length in bytes (> 0).
    pub length: u64,
    /// Where it starts in the backing file.
    pub file_offset: u64,
}

/// This process's export of one region; dropping it withdraws the export (see the module
/// docs) and removes the file.
pub struct MemoryExport {
    map: SharedMapping,
    path: PathBuf,
    /// The export file's inode (to tell it from a newer one under the same name at
    /// removal).
    inode: u64,
    /// Kept open: peers open the backing file through this descriptor's number (one per
    /// backing file, shared by the regions registered in it).
    backing: Arc<File>,
    /// The backing file's device and inode.
    backing_id: (u64, u64),
}

impl std::fmt::Debug for MemoryExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryExport").field("path", &self.path).finish()
    }
}

impl MemoryExport {
    /// Exports `region`, backed by `backing` from `region.file_offset` on (the caller found
    /// the file behind the registered range and checked that the range lies in it).
    pub(crate) fn create(
        registry: &Registry,
        region: ExportedRegion,
        backing: Arc<File>,
    ) -> Result<Self, FabricError> {
        if region.length == 0 {
            return Err(FabricError::InvalidArgument("an empty region is not exported".into()));
        }
        let path = registry.export_path(region.key >> 8);
        let meta = backing.metadata().map_err(|e| {
            FabricError::os("fstat (backing file of a region)", &path, e, "was it closed?")
        })?;
        let temp = temp_path(registry.ring_dir(), &format!("mr-{:#08x}", region.key >> 8));
        // Only our user may change what the export names, from its creation on (the
        // fabric's other files are open to all): another user could otherwise point our
        // peers' copies elsewhere.
        let file = create_zeroed_file_with_mode(&temp, lay::TOTAL_BYTES as u64, 0o600)?;
        let inode = file.metadata().map(|m| m.ino()).unwrap_or(0);
        let mapped = SharedMapping::map(&file, lay::TOTAL_BYTES, &temp);
        let built = mapped.and_then(|map| {
            let me = ProcessIdentity::current();
            map.u32_at(lay::OFF_VERSION).store(lay::VERSION, Ordering::Relaxed);
            map.u32_at(lay::OFF_KEY).store(region.key, Ordering::Relaxed);
            map.u32_at(lay::OFF_PDN).store(region.pdn, Ordering::Relaxed);
            map.u32_at(lay::OFF_ACCESS).store(region.access, Ordering::Relaxed);
            map.u64_at(lay::OFF_IOVA).store(region.iova, Ordering::Relaxed);
            map.u64_at(lay::OFF_LENGTH).store(region.length, Ordering::Relaxed);
            map.u64_at(lay::OFF_EXPORTER_PID).store(u64::from(me.pid), Ordering::Relaxed);
            map.u64_at(lay::OFF_EXPORTER_START_TIME).store(me.start_time, Ordering::Relaxed);
            map.u64_at(lay::OFF_FD).store(backing.as_raw_fd() as u64, Ordering::Relaxed);
            map.u64_at(lay::OFF_FILE_OFFSET).store(region.file_offset, Ordering::Relaxed);
            map.u64_at(lay::OFF_DEV).store(meta.dev(), Ordering::Relaxed);
            map.u64_at(lay::OFF_INO).store(meta.ino(), Ordering::Relaxed);
            map.u64_at(lay::OFF_LIVE).store(u64::from(region.key), Ordering::Relaxed);
            map.u64_at(lay::OFF_MAGIC).store(lay::MAGIC, Ordering::Release);
            // Published complete: openers never see a half-written export.
            std::fs::rename(&temp, &path).map_err(|e| {
                FabricError::os(
                    "rename (publish export)",
                    &path,
                    e,
                    "is the HCA directory writable?",
                )
            })?;
            let backing_id = (meta.dev(), meta.ino());
            Ok(MemoryExport { map, path: path.clone(), inode, backing, backing_id })
        });
        if built.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        built
    }

    /// Our descriptor of the backing file, if it is the file with device and inode `id`
    /// (another region of the same file then shares it).
    pub fn backing_of(&self, id: (u64, u64)) -> Option<&Arc<File>> {
        (self.backing_id == id).then_some(&self.backing)
    }
}

impl Drop for MemoryExport {
    fn drop(&mut self) {
        self.map.u64_at(lay::OFF_LIVE).store(0, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        for slot in 0..lay::USER_SLOTS {
            let word = self.map.u64_at(lay::OFF_USER_SLOTS + 8 * slot);
            wait_while_busy(
                || word.load(Ordering::Acquire) != 0,
                // A placer that died in the middle of a copy never frees its slot: free it
                // for it (CAS: unless another placer took the slot meanwhile).
                || {
                    let placer = word.load(Ordering::Acquire);
                    placer == 0
                        || slot_owner_is_gone(placer)
                            && word
                                .compare_exchange(placer, 0, Ordering::AcqRel, Ordering::Relaxed)
                                .is_ok()
                },
                None,
            );
        }
        // Unlink only our own file (a rebuilt directory may hold another by now).
        if std::fs::symlink_metadata(&self.path).is_ok_and(|named| named.ino() == self.inode) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Why a placement did not happen (the requester then sends the data in the ring, and the
/// responder checks it as usual).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceError {
    /// The range is not inside the region.
    OutOfRange,
    /// The region was withdrawn (DEREG_MR) or re-registered under another key.
    Withdrawn,
    /// Every user slot is taken.
    Busy,
    /// The copy failed (a bug in the caller's arithmetic), or the backing file was truncated
    /// under the mapping: what was written may be lost.
    CopyFailed,
    /// A write into a region exported for reading only (mapped read-only here).
    ReadOnly,
}

/// A peer's export, opened and mapped by a requester.
pub struct ImportedMemory {
    header: SharedMapping,
    data: SharedMapping,
    /// Where the region starts in `data` (the mapping starts at a page boundary).
    skew: usize,
    region: ExportedRegion,
    path: PathBuf,
    /// What a user slot holds while we place ([`slot_word`]; worked out once: `getpid` is
    /// a system call).
    slot_word: u64,
}

impl std::fmt::Debug for ImportedMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportedMemory")
            .field("path", &self.path)
            .field("region", &self.region)
            .finish()
    }
}

impl ImportedMemory {
    /// Opens the export of the region with key `key` in `registry`'s HCA. `Ok(None)`: the
    /// region is not exported (private memory, or gone). Errors: the export or its
    /// backing file exists but cannot be used (a hostile or newer peer, an exporter or a
    /// backing file of another user, permissions).
    /// `exporter` is the pid the region must belong to: the owner of the peer QP that
    /// WRITEs to it will land through, or READs from it be taken through (a file naming
    /// another process is refused).
    pub fn open(registry: &Registry, key: u32, exporter: u32) -> Result<Option<Self>, FabricError> {
        let path = registry.export_path(key >> 8);
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(FabricError::os("open (export)", &path, e, "permissions?")),
        };
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        let export_meta =
            file.metadata().map_err(|e| FabricError::os("fstat (export)", &path, e, ""))?;
        if !export_meta.is_file() || export_meta.uid() != me || export_meta.mode() & 0o022 != 0 {
            // Another user could write the directory: trust only files of our own user
            // that only it can write.
            return Err(FabricError::bad_file(
                &path,
                format!(
                    "not a regular file of user {me} that only it can write (owner {}, mode {:o})",
                    export_meta.uid(),
                    export_meta.mode() & 0o7777
                ),
            ));
        }
        let len = export_meta.len();
        if len != lay::TOTAL_BYTES as u64 {
            return Err(FabricError::bad_file(
                &path,
                format!("{len} bytes, not {}", lay::TOTAL_BYTES),
            ));
        }
        let header = SharedMapping::map(&file, lay::TOTAL_BYTES, &path)?;
        let bad = |problem: String| FabricError::bad_file(&path, problem);
        if header.u64_at(lay::OFF_MAGIC).load(Ordering::Acquire) != lay::MAGIC
            || header.u32_at(lay::OFF_VERSION).load(Ordering::Relaxed) != lay::VERSION
        {
            return Err(bad("not an export file of this version".into()));
        }
        let region = ExportedRegion {
            key: header.u32_at(lay::OFF_KEY).load(Ordering::Relaxed),
            pdn: header.u32_at(lay::OFF_PDN).load(Ordering::Relaxed),
            access: header.u32_at(lay::OFF_ACCESS).load(Ordering::Relaxed),
            iova: header.u64_at(lay::OFF_IOVA).load(Ordering::Relaxed),
            length: header.u64_at(lay::OFF_LENGTH).load(Ordering::Relaxed),
            file_offset: header.u64_at(lay::OFF_FILE_OFFSET).load(Ordering::Relaxed),
        };
        if region.key != key {
            // The index was registered again under another variant: not this key's region.
            return Ok(None);
        }
        let word = |off: usize| header.u64_at(off).load(Ordering::Relaxed);
        let (pid, fd, dev, ino) = (
            word(lay::OFF_EXPORTER_PID),
            word(lay::OFF_FD),
            word(lay::OFF_DEV),
            word(lay::OFF_INO),
        );
        if region.length == 0
            || region.iova.checked_add(region.length).is_none()
            || pid == 0
            || pid > i32::MAX as u64
            || fd > i32::MAX as u64
        {
            return Err(bad(format!("malformed export {region:?}, pid {pid}, fd {fd}")));
        }
        if pid != u64::from(exporter) {
            return Err(bad(format!("exported by process {pid}, not by the peer QP's {exporter}")));
        }
        // Only a process of our own user, and only a file of our own user: opening a
        // descriptor through /proc checks the opener's rights on the file, not the
        // exporter's, so a process of another user could otherwise name a file it may
        // only read (or not open at all) and have us write into it.
        let exporter_uid = std::fs::metadata(format!("/proc/{pid}")).map(|m| m.uid());
        if exporter_uid.ok() != Some(me) {
            return Err(FabricError::InvalidArgument(format!(
                "{}: the exporting process {pid} is gone, runs as another user than {me} or \
                 is not dumpable; its region takes WRITEs and READs through the ring",
                path.display()
            )));
        }
        let backing_path = PathBuf::from(format!("/proc/{pid}/fd/{fd}"));
        // A region that grants only REMOTE_READ is opened and mapped read-only (a file
        // sealed against writes can be read from so), and takes no writes from here.
        let writable = takes_writes(&region);
        let backing = OpenOptions::new()
            .read(true)
            .write(writable)
            .custom_flags(libc::O_CLOEXEC)
            .open(&backing_path)
            .map_err(|e| {
                FabricError::os(
                    "open (backing file of a peer's region)",
                    &backing_path,
                    e,
                    "the exporter runs as another user, is not dumpable, or exited",
                )
            })?;
        let meta = backing.metadata().map_err(|e| {
            FabricError::os("fstat (backing file of a peer's region)", &backing_path, e, "")
        })?;
        if meta.dev() != dev || meta.ino() != ino {
            return Err(bad("the exporter's descriptor names another file now".into()));
        }
        if meta.uid() != me {
            return Err(bad(format!("the backing file belongs to user {}, not {me}", meta.uid())));
        }
        // mmap offsets are multiples of the file's page: a huge page on hugetlbfs.
        let page = (crate::user_memory::page_size() as u64).max(meta.blksize());
        if !page.is_power_of_two() {
            return Err(bad(format!("the backing file's block size {page} is not a power of two")));
        }
        let start = region.file_offset & !(page - 1);
        let skew = (region.file_offset - start) as usize;
        let end = region
            .file_offset
            .checked_add(region.length)
            .filter(|&end| end <= meta.len())
            .ok_or_else(|| {
                bad(format!("region {region:?} runs past the backing file's {} bytes", meta.len()))
            })?;
        // Whole pages of the file (munmap of a hugetlbfs mapping wants an aligned length).
        let end = end
            .checked_add(page - 1)
            .map(|e| e & !(page - 1))
            .filter(|&e| e <= meta.len())
            .unwrap_or(end);
        let map_len = usize::try_from(end - start).map_err(|_| bad("region too large".into()))?;
        let data = if writable {
            SharedMapping::map_at(&backing, start, map_len, &backing_path)?
        } else {
            SharedMapping::map_at_read_only(&backing, start, map_len, &backing_path)?
        };
        let slot_word = slot_word(ProcessIdentity::current());
        Ok(Some(ImportedMemory { header, data, skew, region, path, slot_word }))
    }

    /// What the export says about its region.
    pub fn region(&self) -> &ExportedRegion {
        &self.region
    }

    /// Whether `len` bytes at `addr` (in the key's address space) lie in the region.
    pub fn covers(&self, addr: u64, len: u64) -> bool {
        addr.checked_sub(self.region.iova)
            .and_then(|offset| offset.checked_add(len))
            .is_some_and(|end| end <= self.region.length)
    }

    /// Whether the export still takes placements (not withdrawn, not re-registered).
    pub fn is_live(&self) -> bool {
        self.header.u64_at(lay::OFF_LIVE).load(Ordering::Relaxed) == u64::from(self.region.key)
    }

    /// Takes a user slot for writing `len` bytes at `addr` (in the key's address space):
    /// while the returned [`Placement`] lives, the region is not withdrawn. Fails, having
    /// written nothing, if the range is not inside the region or the export is no longer
    /// live.
    pub fn claim(&self, addr: u64, len: u64) -> Result<Placement<'_>, PlaceError> {
        if !self.covers(addr, len) {
            return Err(PlaceError::OutOfRange);
        }
        let offset = addr - self.region.iova;
        let slot = self.claim_slot().ok_or(PlaceError::Busy)?;
        let placement = Placement { import: self, slot, offset: self.skew + offset as usize };
        // The slot's claim, then the live word, with a SeqCst fence between (module docs).
        fence(Ordering::SeqCst);
        if self.header.u64_at(lay::OFF_LIVE).load(Ordering::Relaxed) != u64::from(self.region.key) {
            return Err(PlaceError::Withdrawn); // (dropping the placement frees the slot)
        }
        Ok(placement)
    }

    fn claim_slot(&self) -> Option<&AtomicU64> {
        let pid = self.slot_word;
        let first = (pid as u32) as usize % lay::USER_SLOTS;
        (0..lay::USER_SLOTS).map(|i| (first + i) % lay::USER_SLOTS).find_map(|i| {
            let word = self.header.u64_at(lay::OFF_USER_SLOTS + 8 * i);
            word.compare_exchange(0, pid, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
                .then_some(word)
        })
    }
}

/// A claimed placement into a live region (see [`ImportedMemory::claim`]); dropping it
/// releases the user slot.
pub struct Placement<'a> {
    import: &'a ImportedMemory,
    slot: &'a AtomicU64,
    offset: usize,
}

impl Placement<'_> {
    /// Writes the data (a placed WRITE): `copy` gets the mapping and the offset to write
    /// at, and answers `None` if it failed. `CopyFailed` also when the backing file was
    /// truncated under the mapping (what was written is lost); `ReadOnly`, with nothing
    /// done, for a region exported for reading only.
    pub fn write(
        self,
        copy: impl FnOnce(&SharedMapping, usize) -> Option<()>,
    ) -> Result<(), PlaceError> {
        if !takes_writes(&self.import.region) {
            return Err(PlaceError::ReadOnly);
        }
        self.copy(copy)
    }

    /// Reads the data (a placed READ): as [`Self::write`], `copy` reading through a view
    /// that can only read (the import may be mapped read-only; a truncated backing file
    /// reads as zeros: `CopyFailed`).
    pub fn read(
        self,
        copy: impl FnOnce(MappingReader<'_>, usize) -> Option<()>,
    ) -> Result<(), PlaceError> {
        self.copy(|map, at| copy(MappingReader(map), at))
    }

    fn copy(
        self,
        copy: impl FnOnce(&SharedMapping, usize) -> Option<()>,
    ) -> Result<(), PlaceError> {
        let data = &self.import.data;
        if copy(data, self.offset).is_none() || data.lost() || self.import.header.lost() {
            return Err(PlaceError::CopyFailed);
        }
        Ok(())
    }
}

impl Drop for Placement<'_> {
    fn drop(&mut self) {
        // Release: the exporter that sees the slot free sees the copy done.
        self.slot.store(0, Ordering::Release);
    }
}

/// Whether peers write into `region` (it grants REMOTE_WRITE): its import is then mapped
/// read-write, else read-only.
fn takes_writes(region: &ExportedRegion) -> bool {
    region.access & access::REMOTE_WRITE != 0
}

/// Read access to an imported region's mapping, all a placed READ gets: the mapping may be
/// read-only, and a store through it would fault.
#[derive(Clone, Copy)]
pub struct MappingReader<'a>(&'a SharedMapping);

impl MappingReader<'_> {
    /// Copies `len` bytes at `offset` to `dst` (see [`SharedMapping::copy_out_raw`]).
    ///
    /// # Safety
    /// `dst..dst+len` must be writable for the duration of the call.
    pub unsafe fn copy_out_raw(
        &self,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), super::shm::OutOfBounds> {
        // SAFETY: the caller vouches for the destination, as `copy_out_raw` requires.
        unsafe { self.0.copy_out_raw(offset, dst, len) }
    }

    /// Fills `dst` from `offset`.
    pub fn copy_out(&self, offset: usize, dst: &mut [u8]) -> Result<(), super::shm::OutOfBounds> {
        self.0.copy_out(offset, dst)
    }
}

/// Withdraws the export in `path` of a process that is gone (the registry sweep, before
/// it removes the file): a peer that still maps the region stops placing into it.
pub(crate) fn withdraw_file(path: &Path) {
    use std::os::unix::fs::FileExt;
    if let Ok(file) = OpenOptions::new().write(true).custom_flags(libc::O_NOFOLLOW).open(path) {
        let _ = file.write_all_at(&0u64.to_ne_bytes(), lay::OFF_LIVE as u64);
    }
}

/// The exporter recorded in an export file (for the registry sweep); `None`: not an
/// export file.
pub(crate) fn exporter_of_file(path: &Path) -> Option<ProcessIdentity> {
    use std::os::unix::fs::FileExt;
    let file = File::open(path).ok()?;
    let mut header = [0u8; 64];
    file.read_exact_at(&mut header, 0).ok()?;
    let word = |off: usize| u64::from_ne_bytes(header[off..off + 8].try_into().unwrap_or([0; 8]));
    (word(lay::OFF_MAGIC) == lay::MAGIC).then(|| ProcessIdentity {
        pid: word(lay::OFF_EXPORTER_PID) as u32,
        start_time: word(lay::OFF_EXPORTER_START_TIME),
    })
}
