//! Writes the sysfs tree for the configured software HCAs (`FERRODAT_SOFTHCA`) into the
//! directory given as the argument, for `SYSFS_PATH`:
//! `cargo run -p ferrodat-softhca --example sysfs_tree -- /tmp/softhca-sysfs`.

use ferrodat_softhca::{config, sysfs};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: sysfs_tree DIR");
        return ExitCode::from(2);
    };
    let devices = match config::devices() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = sysfs::write_tree(&dir, &devices) {
        eprintln!("cannot write {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    println!("SYSFS_PATH={}", dir.display());
    ExitCode::SUCCESS
}
