//! `ferrodat`: the command-line front end.
//!
//! `ferrodat perf` measures latency and bandwidth over softhca (or hardware) next to the
//! baselines a user compares them with, all in one run (see `perf/mod.rs`).
//! `ferrodat info` lists the devices found (real and softhca), their ports, GIDs and
//! limits, and the IA attributes the provider reports on them; `softhca env` prepares a
//! shell to run unmodified rdma-core programs on softhca: `eval "$(ferrodat softhca env)"`.

mod perf;

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
    /// Latency and bandwidth of ferrodat next to the baselines (shared-memory floor, TCP
    /// ping-pong, memcpy), measured in one run: with no options, a server and a client
    /// process on this host over softhca.
    Perf(perf::PerfArgs),
    /// The devices found (real and softhca), their ports, GIDs and limits, and the IA
    /// attributes the provider reports on them: what ibv_devinfo does for verbs.
    Info {
        /// Only this device (e.g. softhca0, mlx5_0).
        #[arg(long, value_name = "NAME")]
        device: Option<String>,
    },
    /// dat.conf lines for the devices found (port 1, the address of GID 0), naming the
    /// provider library by its absolute path: what libdat2 needs to load ferrodat.
    Conf {
        /// The provider library; by default libferrodat.so next to this executable.
        #[arg(long, value_name = "FILE")]
        library: Option<PathBuf>,
    },
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
        Command::Perf(args) => perf::run(args).map(Report::complete),
        Command::Info { device } => info(device.as_deref()),
        Command::Conf { library } => conf(library),
        Command::Softhca { command: SofthcaCommand::Env { sysfs_dir, preload } } => {
            softhca_env(sysfs_dir, preload).map(Report::complete)
        }
    };
    match result {
        Ok(report) => {
            print!("{}", report.text);
            match report.incomplete {
                None => ExitCode::SUCCESS,
                Some(why) => {
                    eprintln!("ferrodat: {why}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(message) => {
            eprintln!("ferrodat: {message}");
            ExitCode::FAILURE
        }
    }
}

/// What a command prints, and whether it could do all it was asked (`info` and `conf`
/// print what they can and still fail, so that `ferrodat conf > file` is not taken for a
/// success when a device was left out).
struct Report {
    text: String,
    /// Why the command fails although it printed `text`.
    incomplete: Option<String>,
}

impl Report {
    fn complete(text: String) -> Report {
        Report { text, incomplete: None }
    }
}

/// The error when discovery found no device at all: what was skipped and why (a malformed
/// FERRODAT_SOFTHCA, say), and how to get a device.
fn no_device(skipped: &[String]) -> String {
    let mut why = String::from("no RDMA device found");
    if !skipped.is_empty() {
        why.push_str(&format!(" (skipped: {})", skipped.join("; ")));
    }
    why.push_str(
        ": load mlx5_ib for a ConnectX, or configure softhca with FERRODAT_SOFTHCA \
         (default softhca0=127.0.0.1)",
    );
    why
}

/// The error for a device `name` discovery did not find: the devices it found, or, when
/// it found none, why ([`no_device`]).
fn missing_device(found: &ferrodat_driver::discovery::Discovery, name: &str) -> String {
    if found.devices.is_empty() {
        return no_device(&found.skipped);
    }
    let names: Vec<&str> = found.devices.iter().map(|d| d.name.as_str()).collect();
    format!("no device {name:?}; found: {}", names.join(", "))
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

/// The provider library's file name, as cargo builds it.
const PROVIDER_LIBRARY: &str = "libferrodat.so";

/// dat.conf lines, one per device: `ferro-<device> u2.0 nonthreadsafe default <library>
/// ferrodat.2.0 "<device> 1 <address>" ""` (the registry key the stock test programs look
/// up needs u2.0, nonthreadsafe and default).
fn conf(library: Option<PathBuf>) -> Result<Report, String> {
    use ferrodat_driver::discovery::discover;
    use ferrodat_engine::ia::{Ia, IaSpec};
    let library = match library {
        Some(l) => l,
        None => {
            let exe =
                std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
            exe.parent().ok_or("this executable has no directory")?.join(PROVIDER_LIBRARY)
        }
    };
    let library = if library.exists() {
        library.canonicalize().map_err(|e| format!("{}: {e}", library.display()))?
    } else {
        eprintln!(
            "ferrodat: note: {} does not exist (build it with `cargo build --release -p \
             ferrodat-capi`, or name it with --library); the lines below name it there",
            library.display()
        );
        std::path::absolute(&library).map_err(|e| format!("{}: {e}", library.display()))?
    };
    let found = discover();
    if found.devices.is_empty() {
        return Err(no_device(&found.skipped));
    }
    let mut out =
        String::from("# dat.conf lines for ferrodat (give libdat2 the file with DAT_OVERRIDE)\n");
    let mut unusable = Vec::new();
    for d in &found.devices {
        let spec = IaSpec { device: d.name.clone(), port: 1, address: None };
        match Ia::open(&d.name, &spec) {
            Ok(ia) => out.push_str(&format!(
                "ferro-{} u2.0 nonthreadsafe default {} ferrodat.2.0 \"{} 1 {}\" \"\"\n",
                d.name,
                library.display(),
                d.name,
                ia.attr().address
            )),
            Err(e) => {
                out.push_str(&format!("# {}: not usable: {e}\n", d.name));
                unusable.push(d.name.clone());
            }
        }
    }
    let incomplete = (!unusable.is_empty()).then(|| {
        format!("no dat.conf line for {} (not usable: see the comments above)", unusable.join(", "))
    });
    Ok(Report { text: out, incomplete })
}

/// The `info` report: every device discovery finds (or only `only`), then what was skipped.
fn info(only: Option<&str>) -> Result<Report, String> {
    use ferrodat_driver::discovery::{DeviceKind, discover};
    use std::fmt::Write;
    let found = discover();
    let devices: Vec<_> =
        found.devices.iter().filter(|d| only.is_none_or(|n| d.name == n)).collect();
    if devices.is_empty() {
        return Err(match only {
            Some(n) => missing_device(&found, n),
            None => no_device(&found.skipped),
        });
    }
    let mut out = String::new();
    let mut unopened = Vec::new();
    for d in devices {
        let kind = match &d.kind {
            DeviceKind::Hardware(h) => format!("hardware, {}", h.uverbs_path.display()),
            DeviceKind::Softhca(s) => format!("softhca, {}", s.config.addr),
        };
        let _ = writeln!(out, "device {} ({kind})", d.name);
        if let Err(e) = device_report(&d.name, &mut out) {
            let _ = writeln!(out, "  cannot open it: {e}");
            unopened.push(d.name.clone());
        }
    }
    for s in &found.skipped {
        let _ = writeln!(out, "skipped: {s}");
    }
    let incomplete =
        (!unopened.is_empty()).then(|| format!("cannot open {} (see above)", unopened.join(", ")));
    Ok(Report { text: out, incomplete })
}

/// Device, port 1 and IA details of one device.
fn device_report(name: &str, out: &mut String) -> Result<(), String> {
    use ferrodat_engine::ia::{Ia, IaSpec};
    use std::fmt::Write;
    let ctx = ferrodat_driver::open(name).map_err(|e| e.to_string())?;
    let dev = ctx.query_device().map_err(|e| e.to_string())?;
    let _ = writeln!(
        out,
        "  vendor {:#06x} part {} hw {} fw {}.{}.{} node_guid {:016x}",
        dev.vendor_id,
        dev.vendor_part_id,
        dev.hw_ver,
        dev.fw_ver >> 32,
        (dev.fw_ver >> 16) & 0xffff,
        dev.fw_ver & 0xffff,
        dev.node_guid
    );
    let _ = writeln!(
        out,
        "  max: qp {} qp_wr {} sge {} cq {} cqe {} mr {} pd {} srq {} rd_atom {}/{} mr_size {}",
        dev.max_qp,
        dev.max_qp_wr,
        dev.max_sge,
        dev.max_cq,
        dev.max_cqe,
        dev.max_mr,
        dev.max_pd,
        dev.max_srq,
        dev.max_qp_rd_atom,
        dev.max_qp_init_rd_atom,
        dev.max_mr_size
    );
    let port = ctx.query_port(1).map_err(|e| e.to_string())?;
    let (gid_index, gid) = ctx.source_gid(1).map_err(|e| e.to_string())?;
    let _ = writeln!(
        out,
        "  port 1: {:?}, active MTU {} bytes, link layer {}, source GID {} (index {gid_index})",
        port.state,
        128u32 << port.active_mtu.clamp(1, 5),
        if port.link_layer == 2 { "Ethernet (RoCE v2)" } else { "InfiniBand" },
        std::net::Ipv6Addr::from(gid)
    );
    drop(ctx);
    let ia = Ia::open(name, &IaSpec { device: name.to_string(), port: 1, address: None })
        .map_err(|e| e.to_string())?;
    let a = ia.attr();
    let p = ia.provider_attr();
    let _ = writeln!(
        out,
        "  IA: address {}, eps {}, dto/ep {}, rdma read/ep {}/{}, evds {}, evd qlen {}, iov {}, \
         message {} bytes, private data {} bytes, IB extensions {}",
        a.address,
        a.max_eps,
        a.max_dto_per_ep,
        a.max_rdma_read_per_ep_in,
        a.max_rdma_read_per_ep_out,
        a.max_evds,
        a.max_evd_qlen,
        a.max_iov_segments_per_dto,
        a.max_message_size,
        p.max_private_data_size,
        if a.extension_supported != 0 { "yes" } else { "no" }
    );
    let attrs: Vec<String> =
        p.provider_specific_attr.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let _ = writeln!(out, "  provider attributes: {}", attrs.join(" "));
    Ok(())
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
