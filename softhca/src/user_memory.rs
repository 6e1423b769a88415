//! Access to "user" memory, as the kernel's `copy_to_user`/`copy_from_user` and the pinning
//! checks of `ib_umem_get` see it.
//!
//! softhca runs inside the process that issues the commands, so a user address is an address
//! in our own address space — but one we must not trust: a command may carry NULL, an unmapped
//! page or a read-only mapping. Every access therefore goes through `process_vm_readv` /
//! `process_vm_writev` on our own pid: the kernel walks the page tables and answers EFAULT
//! where a real `copy_to_user` would, and nothing here can fault.

use crate::errno::Errno;
use std::sync::OnceLock;

/// The end of the user address range (`TASK_SIZE_MAX`): `access_ok()` refuses anything
/// beyond it with EFAULT before any page is touched.
#[cfg(target_arch = "x86_64")]
pub const USER_ADDR_END: u64 = (1 << 47) - 4096;
/// The end of the user address range (`TASK_SIZE_MAX`, 48-bit VA).
#[cfg(not(target_arch = "x86_64"))]
pub const USER_ADDR_END: u64 = 1 << 48;

/// `process_vm_readv` takes at most this many iovecs per call (`UIO_MAXIOV`).
const MAX_IOV: usize = 1024;

/// The kind of access a range must allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The pages must be readable (what `ib_umem_get` without a write flag pins).
    Read,
    /// The pages must be writable too (`FOLL_WRITE`, e.g. an MR with LOCAL_WRITE, a CQ).
    Write,
}

/// The system page size.
pub fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no memory-safety preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if v > 0 { v as usize } else { 4096 }
    })
}

/// `access_ok()`: `[addr, addr + len)` lies in the user half of the address space.
pub fn access_ok(addr: u64, len: u64) -> bool {
    len <= USER_ADDR_END && addr <= USER_ADDR_END - len
}

/// Reads `buf.len()` bytes at user address `addr` (`copy_from_user`): EFAULT if any byte is
/// unreadable; `buf` is then unspecified.
pub fn copy_from_user(addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
    if buf.is_empty() {
        return Ok(());
    }
    if !access_ok(addr, buf.len() as u64) {
        return Err(Errno::EFAULT);
    }
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: `local` describes `buf`, which we own exclusively for the call; the remote
    // range is only read, by the kernel, which validates it and reports EFAULT.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n == buf.len() as isize { Ok(()) } else { Err(Errno::EFAULT) }
}

/// Reads one plain-data value at user address `addr` (`get_user` / `copy_from_user`).
pub fn read_user<T: zerocopy::FromBytes + zerocopy::IntoBytes>(addr: u64) -> Result<T, Errno> {
    let mut value = T::new_zeroed();
    copy_from_user(addr, value.as_mut_bytes())?;
    Ok(value)
}

/// Writes `bytes` to user address `addr` (`copy_to_user`): EFAULT if any byte is not
/// writable, in which case a prefix may have been written (as with the kernel).
///
/// # Safety
///
/// Like a DMA target, `[addr, addr + bytes.len())` must not be memory that Rust code holds a
/// reference to (the write happens behind the compiler's back). Bad addresses are fine: they
/// give EFAULT, never a fault.
pub unsafe fn copy_to_user(addr: u64, bytes: &[u8]) -> Result<(), Errno> {
    if bytes.is_empty() {
        return Ok(());
    }
    if !access_ok(addr, bytes.len() as u64) {
        return Err(Errno::EFAULT);
    }
    let local = libc::iovec { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() };
    let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: bytes.len() };
    // SAFETY: `local` describes `bytes`, which the kernel only reads; the remote range is
    // validated by the kernel (EFAULT) and the caller vouches that no Rust reference covers it.
    let n = unsafe { libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n == bytes.len() as isize { Ok(()) } else { Err(Errno::EFAULT) }
}

/// Checks that `[addr, addr + len)` is mapped with `access`, as pinning it with
/// `ib_umem_get` would: EFAULT if not. `len` 0 checks nothing. Every page is touched with a
/// one-byte read (like pinning, this faults pages in); write permission is checked against
/// `/proc/self/maps`, so no byte of the range is ever modified.
pub fn check_mapped(addr: u64, len: u64, access: Access) -> Result<(), Errno> {
    if len == 0 {
        return Ok(());
    }
    if !access_ok(addr, len) {
        return Err(Errno::EFAULT);
    }
    probe_readable(addr, len)?;
    if access == Access::Write && !maps_allow_write(addr, addr + len) {
        return Err(Errno::EFAULT);
    }
    Ok(())
}

/// Reads one byte of every page of the range, up to [`MAX_IOV`] pages per syscall.
fn probe_readable(addr: u64, len: u64) -> Result<(), Errno> {
    let page = page_size() as u64;
    let end = addr + len;
    let mut scratch = [0u8; MAX_IOV];
    let mut remote: Vec<libc::iovec> = Vec::with_capacity(MAX_IOV);
    let mut at = addr;
    while at < end {
        remote.clear();
        while at < end && remote.len() < MAX_IOV {
            remote.push(libc::iovec { iov_base: at as usize as *mut libc::c_void, iov_len: 1 });
            at = (at & !(page - 1)) + page;
        }
        let local = libc::iovec { iov_base: scratch.as_mut_ptr().cast(), iov_len: remote.len() };
        // SAFETY: `local` covers `remote.len()` bytes of `scratch`, which we own; the remote
        // bytes are only read, and validated by the kernel.
        let n = unsafe {
            libc::process_vm_readv(libc::getpid(), &local, 1, remote.as_ptr(), remote.len() as _, 0)
        };
        if n != remote.len() as isize {
            return Err(Errno::EFAULT);
        }
    }
    Ok(())
}

/// Whether every byte of `[start, end)` lies in mappings with write permission.
fn maps_allow_write(start: u64, end: u64) -> bool {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return false;
    };
    let mut cursor = start;
    for line in maps.lines() {
        let Some((lo, hi, perms)) = parse_maps_line(line) else {
            continue;
        };
        if hi <= cursor {
            continue;
        }
        if lo > cursor || perms.as_bytes().get(1).is_none_or(|&p| p != b'w') {
            return false; // a hole, or a mapping without write permission
        }
        cursor = hi;
        if cursor >= end {
            return true;
        }
    }
    false
}

/// `"lo-hi perms ..."` → `(lo, hi, perms)`.
fn parse_maps_line(line: &str) -> Option<(u64, u64, &str)> {
    let mut fields = line.split_ascii_whitespace();
    let (lo, hi) = fields.next()?.split_once('-')?;
    let perms = fields.next()?;
    Some((u64::from_str_radix(lo, 16).ok()?, u64::from_str_radix(hi, 16).ok()?, perms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_both_ways_and_refuses_bad_addresses() {
        let src = [1u8, 2, 3, 4];
        let mut dst = [0u8; 4];
        copy_from_user(src.as_ptr() as u64, &mut dst).unwrap();
        assert_eq!(dst, src);
        assert_eq!(copy_from_user(8, &mut dst), Err(Errno::EFAULT));
        assert_eq!(copy_from_user(u64::MAX - 1, &mut dst), Err(Errno::EFAULT));
        let mut target = vec![0u8; 4];
        // SAFETY: `target` is not borrowed while the kernel writes it.
        unsafe { copy_to_user(target.as_mut_ptr() as u64, &src).unwrap() };
        assert_eq!(target, src);
        // SAFETY: address 16 is never mapped; the call must fail without writing.
        assert_eq!(unsafe { copy_to_user(16, &src) }, Err(Errno::EFAULT));
    }

    #[test]
    fn check_mapped_sees_permissions() {
        let page = page_size();
        // SAFETY: a fresh anonymous mapping, unmapped at the end of the test.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                3 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let base = p as u64;
        let page = page as u64;
        // SAFETY: the last page of our own mapping becomes read-only, the middle one inaccessible.
        unsafe {
            libc::mprotect((base + 2 * page) as *mut _, page as usize, libc::PROT_READ);
            libc::mprotect((base + page) as *mut _, page as usize, libc::PROT_NONE);
        }
        assert_eq!(check_mapped(base, page, Access::Write), Ok(()));
        assert_eq!(check_mapped(base + 2 * page, page, Access::Read), Ok(()));
        assert_eq!(check_mapped(base + 2 * page, page, Access::Write), Err(Errno::EFAULT));
        assert_eq!(check_mapped(base, 3 * page, Access::Read), Err(Errno::EFAULT));
        assert_eq!(check_mapped(0, 1, Access::Read), Err(Errno::EFAULT));
        // SAFETY: unmapping the mapping created above.
        unsafe { libc::munmap(p, 3 * page as usize) };
    }
}
