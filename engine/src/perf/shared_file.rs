//! A file two processes of a measurement map to talk through shared memory (the floor's
//! cache line, the least software HCA's rings, the copy pipeline's ring).

use ferrodat_softhca::fabric::SharedMapping;
use std::path::Path;

/// Who brings the file into being: the side that sets up a measurement creates it, the
/// side that joins opens it, so a joiner that comes late (its parent already gone and the
/// file removed) fails instead of making a file nobody removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Creates the file if needed and sizes it.
    Create,
    /// Opens the file the other side created; it must have the size both expect.
    Join,
}

/// Maps `path`, `len` bytes, read-write and shared, as `role` says. A created file reads
/// as zeros (whatever an old file of that name held is dropped).
pub fn map(path: &Path, len: usize, role: Role) -> std::io::Result<SharedMapping> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(role == Role::Create)
        .truncate(role == Role::Create)
        .open(path)?;
    match role {
        Role::Create => {
            // Fresh zeros, with their space reserved: on a full /dev/shm the first touch
            // of a page would fault instead of failing here.
            file.set_len(len as u64)?;
            use std::os::fd::AsRawFd;
            // SAFETY: posix_fallocate on a descriptor we own, over the length just set.
            let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
            if rc != 0 {
                return Err(std::io::Error::from_raw_os_error(rc));
            }
        }
        Role::Join => {
            // Mapping past the end of a shorter file would fault (SIGBUS) on first touch.
            let size = file.metadata()?.len();
            if size != len as u64 {
                return Err(std::io::Error::other(format!(
                    "{} holds {size} bytes, not the {len} its creator makes",
                    path.display()
                )));
            }
        }
    }
    SharedMapping::map(&file, len, path).map_err(|e| std::io::Error::other(e.to_string()))
}

/// A scratch file for a test of `module`, named `name`, not there yet; the test removes
/// it (a leftover of an earlier run is removed here).
#[cfg(test)]
pub(crate) fn test_path(module: &str, name: &str) -> std::path::PathBuf {
    let path =
        std::env::temp_dir().join(format!("ferrodat-{module}-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}
