//! Page-aligned memory a test lends to the device, like an application's buffers.
#![allow(dead_code)]

/// Page-aligned zeroed memory the "user" lends to the device.
pub struct Mem {
    ptr: *mut u8,
    len: usize,
}

impl Mem {
    pub fn new(len: usize) -> Mem {
        let len = len.max(1).next_multiple_of(page());
        // SAFETY: a fresh private anonymous mapping, owned by this `Mem`.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED, "mmap: {}", std::io::Error::last_os_error());
        Mem { ptr: p.cast(), len }
    }

    /// `len` bytes followed by an inaccessible page.
    pub fn guarded(len: usize) -> Mem {
        let m = Mem::new(len + page());
        // SAFETY: the last page of our own mapping becomes inaccessible.
        let rc =
            unsafe { libc::mprotect(m.ptr.add(m.len - page()).cast(), page(), libc::PROT_NONE) };
        assert_eq!(rc, 0);
        m
    }

    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: our mapping; the device writes it only inside `write()` calls, which have
        // returned when this is called.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn fill(&self, byte: u8) {
        // SAFETY: our mapping, not borrowed elsewhere.
        unsafe { std::ptr::write_bytes(self.ptr, byte, self.len) };
    }

    pub fn protect(&self, prot: i32) {
        // SAFETY: changes the protection of our own mapping.
        assert_eq!(unsafe { libc::mprotect(self.ptr.cast(), self.len, prot) }, 0);
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

pub fn page() -> usize {
    ferrodat_softhca::user_memory::page_size()
}
