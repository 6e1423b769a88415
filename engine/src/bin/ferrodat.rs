//! `ferrodat`: the command-line front end.
//!
//! Today it has `softhca env`, which prepares a shell to run unmodified rdma-core programs
//! on softhca: `eval "$(ferrodat softhca env)"`.

use clap::{Parser, Subcommand};
use ferrodat_softhca::{config, sysfs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The preload library's file name, as cargo builds it.
const PRELOAD_LIBRARY: &str = "libsofthca_preload.so";

#[derive(Parser)]
#[command(
    name = "ferrodat",
    version,
    about = "ferrodat: a uDAPL provider with its own kernel-bypass mlx5 engine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// softhca, the software mlx5 HCA.
    Softhca {
        #[command(subcommand)]
        command: SofthcaCommand,
    },
}

#[derive(Subcommand)]
enum SofthcaCommand {
    /// Write the sysfs tree rdma-core reads and print the environment that runs unmodified
    /// verbs programs on softhca: eval "$(ferrodat softhca env)".
    Env {
        /// Where to write the sysfs tree (SYSFS_PATH).
        #[arg(long, value_name = "DIR")]
        sysfs_dir: Option<PathBuf>,
        /// The preload library; by default libsofthca_preload.so next to this executable.
        #[arg(long, value_name = "FILE")]
        preload: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Softhca { command: SofthcaCommand::Env { sysfs_dir, preload } } => {
            softhca_env(sysfs_dir, preload)
        }
    };
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("ferrodat: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Writes the tree and returns the shell lines to evaluate.
fn softhca_env(sysfs_dir: Option<PathBuf>, preload: Option<PathBuf>) -> Result<String, String> {
    let devices = config::devices().map_err(|e| e.to_string())?;
    if devices.is_empty() {
        return Err(format!("{} lists no device; e.g. softhca0=127.0.0.1", config::ENV_DEVICES));
    }
    let preload = match preload {
        Some(p) => p,
        None => default_preload()?,
    };
    let preload = preload.canonicalize().map_err(|e| {
        format!(
            "the preload library {} is not there ({e}); build it with \
             `cargo build --release -p ferrodat-softhca-preload` or name it with --preload",
            preload.display()
        )
    })?;
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let dir = sysfs_dir
        .unwrap_or_else(|| std::env::temp_dir().join(format!("ferrodat-softhca-sysfs-{uid}")));
    sysfs::write_tree(&dir, &devices)
        .map_err(|e| format!("cannot write the sysfs tree in {}: {e}", dir.display()))?;
    let dir = dir.canonicalize().map_err(|e| format!("{}: {e}", dir.display()))?;
    let list: Vec<String> = devices.iter().map(|d| format!("{}={}", d.name, d.addr)).collect();
    let mut out = String::new();
    for (i, d) in devices.iter().enumerate() {
        out.push_str(&format!(
            "# {} is softhca device {} on {}\n",
            sysfs::ibdev_name(i),
            d.name,
            d.addr
        ));
    }
    out.push_str(&format!("export SYSFS_PATH={}\n", shell_quote(&dir)));
    out.push_str(&format!(
        "export LD_PRELOAD={}${{LD_PRELOAD:+:$LD_PRELOAD}}\n",
        shell_quote(&preload)
    ));
    out.push_str(&format!(
        "export {}={}\n",
        config::ENV_DEVICES,
        shell_quote(Path::new(&list.join(",")))
    ));
    Ok(out)
}

/// `libsofthca_preload.so` in the directory of this executable (`target/<profile>`).
fn default_preload() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let dir = exe.parent().ok_or("this executable has no directory")?;
    Ok(dir.join(PRELOAD_LIBRARY))
}

/// Single-quotes a path for a POSIX shell.
fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}
