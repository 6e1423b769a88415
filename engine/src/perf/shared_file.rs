//! A file two processes of a measurement map to talk through shared memory (the floor's
//! cache line, the least software HCA's rings, the copy pipeline's ring).

use ferrodat_softhca::fabric::SharedMapping;
use std::path::Path;

/// Maps `path`, created if needed and sized to `len` bytes, read-write and shared. Both
/// processes call it with the same `len`; a new file reads as zeros.
pub fn map(path: &Path, len: usize) -> std::io::Result<SharedMapping> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    file.set_len(len as u64)?;
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
