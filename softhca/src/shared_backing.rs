//! The file behind a registered range, when the application mapped it shared: what REG_MR
//! exports so that peers place RDMA WRITEs into it and READs out of it directly
//! (`fabric/memory_export.rs`).
//!
//! The range must lie in one `MAP_SHARED`, readable and writable mapping of a file (a
//! memfd, a file in `/dev/shm` or hugetlbfs, a regular file) as `/proc/self/maps` lists
//! it. The descriptor comes from `/proc/self/map_files` (which needs CAP_SYS_ADMIN or
//! CAP_CHECKPOINT_RESTORE), else from an open descriptor of the same file in
//! `/proc/self/fd` (the memfd the application mapped, say); a range with neither is
//! registered all the same, and its WRITEs and READs travel through the ring.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

/// The file behind a range, opened read-write, and where the range starts in it.
#[derive(Debug)]
pub struct SharedBacking {
    /// Our own descriptor of the file.
    pub file: File,
    /// The byte offset in the file of the range's first byte.
    pub file_offset: u64,
}

/// One line of `/proc/self/maps`, the fields that matter here.
#[derive(Debug, PartialEq, Eq)]
struct Mapping {
    start: u64,
    end: u64,
    readable: bool,
    writable: bool,
    shared: bool,
    offset: u64,
    major: u32,
    minor: u32,
    inode: u64,
}

/// The shared file behind `addr..addr+len`, if there is one (see the module docs).
pub fn find(addr: u64, len: u64) -> Option<SharedBacking> {
    find_with(addr, len, true)
}

/// [`find`], trying `/proc/self/map_files` first only if `map_files` (tests take the other
/// way too).
fn find_with(addr: u64, len: u64, map_files: bool) -> Option<SharedBacking> {
    let end = addr.checked_add(len).filter(|_| len > 0)?;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let m = maps.lines().filter_map(parse_line).find(|m| m.start <= addr && addr < m.end)?;
    if end > m.end || !(m.readable && m.writable && m.shared) || m.inode == 0 {
        return None;
    }
    let same_file = |meta: &std::fs::Metadata| {
        meta.ino() == m.inode
            && dev_major(meta.dev()) == m.major
            && dev_minor(meta.dev()) == m.minor
    };
    let open = |path: &str| {
        OpenOptions::new().read(true).write(true).custom_flags(libc::O_CLOEXEC).open(path).ok()
    };
    let file = map_files
        .then(|| open(&format!("/proc/self/map_files/{:x}-{:x}", m.start, m.end)))
        .flatten()
        .filter(|f| f.metadata().is_ok_and(|meta| same_file(&meta)))
        .or_else(|| {
            std::fs::read_dir("/proc/self/fd").ok()?.filter_map(Result::ok).find_map(|entry| {
                let path = entry.path();
                let path = path.to_str()?;
                // stat follows the link: the file the descriptor refers to.
                if !std::fs::metadata(path).is_ok_and(|meta| same_file(&meta)) {
                    return None;
                }
                open(path).filter(|f| f.metadata().is_ok_and(|meta| same_file(&meta)))
            })
        })?;
    let file_offset = m.offset.checked_add(addr - m.start)?;
    // A range past the file's end would fault here too; the peer checks again.
    let size = file.metadata().ok()?.len();
    (file_offset.checked_add(len)? <= size).then_some(SharedBacking { file, file_offset })
}

/// `start-end perms offset major:minor inode [path]`.
fn parse_line(line: &str) -> Option<Mapping> {
    let mut fields = line.split_ascii_whitespace();
    let (start, end) = fields.next()?.split_once('-')?;
    let perms = fields.next()?.as_bytes();
    let offset = fields.next()?;
    let (major, minor) = fields.next()?.split_once(':')?;
    let inode = fields.next()?;
    if perms.len() < 4 {
        return None;
    }
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        readable: perms[0] == b'r',
        writable: perms[1] == b'w',
        shared: perms[3] == b's',
        offset: u64::from_str_radix(offset, 16).ok()?,
        major: u32::from_str_radix(major, 16).ok()?,
        minor: u32::from_str_radix(minor, 16).ok()?,
        inode: inode.parse().ok()?,
    })
}

/// glibc's `major()` of a `dev_t`.
fn dev_major(dev: u64) -> u32 {
    (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff)) as u32
}

/// glibc's `minor()` of a `dev_t`.
fn dev_minor(dev: u64) -> u32 {
    (((dev >> 12) & 0xffff_ff00) | (dev & 0xff)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd};

    /// A memfd of `len` bytes mapped shared (or private), unmapped on drop.
    struct Mapped {
        _fd: File,
        addr: *mut u8,
        len: usize,
    }

    impl Mapped {
        fn new(len: usize, flags: libc::c_int) -> Mapped {
            // SAFETY: a valid NUL-terminated name; the result is checked.
            let fd = unsafe { libc::memfd_create(c"shared-backing-test".as_ptr(), 0) };
            assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
            // SAFETY: a descriptor we just created and own from here on.
            let file = unsafe { File::from_raw_fd(fd) };
            file.set_len(len as u64).expect("ftruncate memfd");
            // SAFETY: a fresh mapping of our own descriptor; the result is checked.
            let addr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    flags,
                    file.as_raw_fd(),
                    0,
                )
            };
            assert_ne!(addr, libc::MAP_FAILED);
            Mapped { _fd: file, addr: addr.cast(), len }
        }
    }

    impl Drop for Mapped {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`, referenced by nothing else.
            unsafe { libc::munmap(self.addr.cast(), self.len) };
        }
    }

    #[test]
    fn a_range_in_a_shared_memfd_mapping_is_found_with_its_file_offset() {
        let m = Mapped::new(4 * 4096, libc::MAP_SHARED);
        let addr = m.addr as u64 + 4096 + 100;
        // Without /proc/self/map_files (no CAP_SYS_ADMIN) the memfd's own descriptor is found.
        let by_fd = find_with(addr, 2 * 4096, false).expect("found through /proc/self/fd");
        assert_eq!(by_fd.file_offset, 4096 + 100);
        let found = find(addr, 2 * 4096).expect("a shared memfd mapping has a backing file");
        assert_eq!(found.file_offset, 4096 + 100);
        assert_eq!(found.file.metadata().unwrap().ino(), by_fd.file.metadata().unwrap().ino());
        // It is the same file: a write through the descriptor shows in the mapping.
        use std::os::unix::fs::FileExt;
        found.file.write_all_at(b"through the fd", found.file_offset).unwrap();
        // SAFETY: inside the live mapping; nobody else writes it.
        let seen = unsafe { std::slice::from_raw_parts(addr as *const u8, 14) };
        assert_eq!(seen, b"through the fd");
    }

    #[test]
    fn private_memory_and_ranges_past_the_mapping_have_no_backing() {
        let private = Mapped::new(2 * 4096, libc::MAP_PRIVATE);
        assert!(find(private.addr as u64, 4096).is_none(), "MAP_PRIVATE is not shared");
        let heap = vec![0u8; 1 << 20];
        assert!(find(heap.as_ptr() as u64, heap.len() as u64).is_none(), "heap memory");
        let shared = Mapped::new(2 * 4096, libc::MAP_SHARED);
        assert!(find(shared.addr as u64, 2 * 4096 + 1).is_none(), "one byte past the mapping");
        assert!(find(shared.addr as u64, 0).is_none(), "an empty range");
        assert!(find(shared.addr as u64, 2 * 4096).is_some());
    }

    #[test]
    fn maps_lines_parse() {
        let line = "7f0000001000-7f0000003000 rw-s 00002000 00:01 12345   /memfd:x (deleted)";
        assert_eq!(
            parse_line(line),
            Some(Mapping {
                start: 0x7f00_0000_1000,
                end: 0x7f00_0000_3000,
                readable: true,
                writable: true,
                shared: true,
                offset: 0x2000,
                major: 0,
                minor: 1,
                inode: 12345,
            })
        );
        assert_eq!(parse_line("garbage"), None);
        assert_eq!(dev_major(libc::makedev(259, 3)), 259);
        assert_eq!(dev_minor(libc::makedev(259, 3)), 3);
    }
}
