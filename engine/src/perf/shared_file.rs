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

/// Maps `path`, `len` bytes, read-write and shared, as `role` says. A new file reads as
/// zeros.
pub fn map(path: &Path, len: usize, role: Role) -> std::io::Result<SharedMapping> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(role == Role::Create)
        .truncate(false)
        .open(path)?;
    match role {
        Role::Create => file.set_len(len as u64)?,
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
