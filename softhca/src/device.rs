//! One software HCA as a process sees it: its identity (name, GID, GUIDs), the tables of
//! every object any open file created, and the allocators of device numbers.
//!
//! A process holds at most one [`Device`] per HCA name ([`Device::open`]); every
//! [`Uverbs`](crate::kernel::Uverbs) opened on it shares its number spaces, while handles
//! stay per file. The hardware side looks objects up by number in [`DeviceState`].
//!
//! Numbers come from the HCA's registry in the fabric, so they are unique among all the
//! processes using the HCA, and every object a command creates is also handed to the
//! device's [`Engine`], the hardware side.

use crate::config::{self, ConfigError, DeviceConfig};
use crate::errno::Errno;
use crate::fabric::{FabricDir, FabricError, QpAllocation};
use crate::hca::engine::Engine;
use crate::objects::{Cq, Mr, Mw, Pd, Qp, QpAttrs, QpState, Srq};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// Why [`Device::open`] failed.
#[derive(Debug)]
pub enum OpenError {
    /// No HCA of that name is configured.
    NoSuchDevice {
        /// The name asked for.
        name: String,
        /// The names that are configured.
        configured: Vec<String>,
    },
    /// The device list (`FERRODAT_SOFTHCA`) does not parse.
    Config(ConfigError),
    /// The shared-memory fabric could not be joined.
    Fabric(FabricError),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::NoSuchDevice { name, configured } => write!(
                f,
                "no software HCA named {name:?} (configured: {}); add it to {}, e.g. {}=127.0.0.1",
                configured.join(", "),
                config::ENV_DEVICES,
                name
            ),
            OpenError::Config(e) => e.fmt(f),
            OpenError::Fabric(e) => write!(f, "cannot join the softhca fabric: {e}"),
        }
    }
}

impl std::error::Error for OpenError {}

/// The progress thread of each device opened in this process (see the crate docs,
/// "Driving model"): `1` starts it at the open, so that one-sided operations and SENDs
/// aimed at this process complete even while it never polls or waits (as on hardware);
/// `0` refuses it, for a process that polls everything itself (a busy-polling benchmark):
/// neither an armed CQ nor a DAT IA starts it then ([`Engine::serve_in_background`]).
/// Unset (or anything else): started when a consumer may block — at a CQ's first arm, or
/// a DAT IA's open.
///
/// [`Engine::serve_in_background`]: crate::hca::engine::Engine::serve_in_background
pub const ENV_PROGRESS_THREAD: &str = "FERRODAT_SOFTHCA_PROGRESS_THREAD";

/// The objects of all files open on a device, by device number. Lock it with
/// [`Device::state`]; every change to an object happens under that lock.
#[derive(Debug, Default)]
pub struct DeviceState {
    /// Protection domains by pdn.
    pub pds: HashMap<u32, Pd>,
    /// Memory regions by mkey index (`key >> 8`).
    pub mrs: HashMap<u32, Mr>,
    /// Memory windows by mkey index.
    pub mws: HashMap<u32, Mw>,
    /// Completion queues by cqn.
    pub cqs: HashMap<u32, Cq>,
    /// Queue pairs by qpn.
    pub qps: HashMap<u32, Qp>,
    /// Shared receive queues by srqn.
    pub srqs: HashMap<u32, Srq>,
}

impl DeviceState {
    /// The MR whose lkey/rkey is `key` (index and variant byte must both match).
    pub fn mr_by_key(&self, key: u32) -> Option<&Mr> {
        self.mrs.get(&(key >> 8)).filter(|mr| mr.lkey == key)
    }

    /// The one place a QP changes state — MODIFY_QP uses it, and so must the hardware side
    /// when an error moves a QP to ERR. Entering RESET returns the QP context to its
    /// initial values (`2RST_QP`). Returns the previous state, or `None` if no such QP.
    ///
    /// Hook for the hardware side: on entering ERR, flush every outstanding WQE; on entering
    /// RESET, forget the queues' progress (the user rewinds its doorbell records).
    pub fn set_qp_state(&mut self, qpn: u32, new: QpState) -> Option<QpState> {
        let qp = self.qps.get_mut(&qpn)?;
        let old = qp.state;
        qp.state = new;
        if new == QpState::Reset {
            qp.attrs = QpAttrs::default();
        }
        Some(old)
    }
}

/// A software HCA, shared by every file open on it in this process.
pub struct Device {
    config: DeviceConfig,
    node_guid: u64,
    state: Mutex<DeviceState>,
    engine: Arc<Engine>,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.config.name)
            .field("addr", &self.config.addr)
            .finish()
    }
}

/// Devices opened by name in this process (weak: a device lives while a file uses it).
fn registry() -> &'static Mutex<HashMap<String, Weak<Device>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<String, Weak<Device>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

impl Device {
    /// The configured HCA called `name` ([`config::devices`]); the same `Arc` for every
    /// open in this process while one is alive (not one a forked child inherited: that
    /// is its parent's, and the child gets a device of its own).
    pub fn open(name: &str) -> Result<Arc<Device>, OpenError> {
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        let ours = |dev: &Arc<Device>| dev.engine.owner().is_current();
        if let Some(dev) = reg.get(name).and_then(Weak::upgrade).filter(ours) {
            return Ok(dev);
        }
        let devices = config::devices().map_err(OpenError::Config)?;
        let Some(cfg) = devices.iter().find(|d| d.name == name).cloned() else {
            return Err(OpenError::NoSuchDevice {
                name: name.to_string(),
                configured: devices.into_iter().map(|d| d.name).collect(),
            });
        };
        let dev = Device::new(cfg)?;
        reg.retain(|_, w| w.strong_count() > 0);
        reg.insert(name.to_string(), Arc::downgrade(&dev));
        Ok(dev)
    }

    /// A device for `config`, outside the registry (tests, embedding), on the fabric of
    /// `$FERRODAT_SOFTHCA_SHM_DIR` or `/dev/shm/ferrodat-softhca`.
    pub fn new(config: DeviceConfig) -> Result<Arc<Device>, OpenError> {
        Self::new_in(config, FabricDir::from_env())
    }

    /// A device for `config` on the fabric in `fabric`.
    pub fn new_in(config: DeviceConfig, fabric: FabricDir) -> Result<Arc<Device>, OpenError> {
        let node_guid = node_guid_of(&config.gid());
        let engine =
            Engine::open_in(fabric, &config.name, config.gid()).map_err(OpenError::Fabric)?;
        let policy = std::env::var(ENV_PROGRESS_THREAD).unwrap_or_default();
        if policy == "0" {
            engine.refuse_background();
        }
        if policy == "1" {
            engine.start_progress_thread().map_err(|e| {
                OpenError::Fabric(FabricError::Os {
                    op: "spawn the progress thread",
                    path: Default::default(),
                    source: e,
                    hint: "the process may have hit its thread limit",
                })
            })?;
        }
        Ok(Arc::new(Device {
            config,
            node_guid,
            state: Mutex::new(DeviceState::default()),
            engine,
        }))
    }

    /// The device name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &DeviceConfig {
        &self.config
    }

    /// GID table entry 0 of port 1 (RoCE v2, from the port's IP address).
    pub fn gid(&self) -> [u8; 16] {
        self.config.gid()
    }

    /// Node GUID (also the system image GUID), derived from the GID.
    pub fn node_guid(&self) -> u64 {
        self.node_guid
    }

    /// Locks the object tables. A panic elsewhere never poisons them for good: the tables
    /// stay consistent because every command validates before it mutates.
    pub fn state(&self) -> MutexGuard<'_, DeviceState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The HCA engine (the hardware side) of this device in this process.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// A QP number unique among all processes using the HCA, with the fabric slot that
    /// announces its inbound packets.
    pub fn alloc_qpn(&self) -> Result<QpAllocation, Errno> {
        self.engine.alloc_qpn().map_err(|e| Errno(e.errno()))
    }

    /// The QP is gone (or was never created): the hardware forgets it, the number is free.
    /// Returns the asynchronous events the hardware reported for it.
    pub fn free_qpn(&self, qpn: u32) -> u32 {
        self.engine.remove_qp(qpn)
    }

    /// A CQ number from the HCA's shared counter, used by no live CQ of this process.
    pub fn alloc_cqn(&self) -> Result<u32, Errno> {
        self.alloc_unused(|| self.engine.registry().alloc_cqn(), |s, n| s.cqs.contains_key(&n))
    }

    /// The CQ is gone: the hardware forgets it. Returns the completion and asynchronous
    /// events the hardware reported for it.
    pub fn free_cqn(&self, cqn: u32) -> (u32, u32) {
        self.engine.remove_cq(cqn)
    }

    /// A PD number from the HCA's shared counter, used by no live PD of this process (PDs
    /// need nothing freed: the hardware keeps no state for them besides the number stamped
    /// on MRs, QPs and SRQs).
    pub fn alloc_pdn(&self) -> Result<u32, Errno> {
        self.alloc_unused(|| self.engine.registry().alloc_pdn(), |s, n| s.pds.contains_key(&n))
    }

    /// An SRQ number from the HCA's shared counter, used by no live SRQ of this process.
    pub fn alloc_srqn(&self) -> Result<u32, Errno> {
        self.alloc_unused(|| self.engine.registry().alloc_srqn(), |s, n| s.srqs.contains_key(&n))
    }

    /// The SRQ is gone: the hardware forgets it. Returns the asynchronous events it reported.
    pub fn free_srqn(&self, srqn: u32) -> u32 {
        self.engine.remove_srq(srqn)
    }

    /// A memory key index and variant byte (`key = index << 8 | variant`) from the HCA's
    /// shared counter, the index used by no live MR or MW of this process.
    pub fn alloc_mkey_index(&self) -> Result<(u32, u8), Errno> {
        // MRs and MWs share the index space.
        let key = self.alloc_unused(
            || self.engine.registry().alloc_mkey(),
            |s, key| s.mrs.contains_key(&(key >> 8)) || s.mws.contains_key(&(key >> 8)),
        )?;
        Ok((key >> 8, key as u8))
    }

    /// The next number of a 24-bit counter of the HCA (`next`) that no live object of this
    /// process has (`live`), as the hardware hands out only free numbers. The counters
    /// wrap after 2^24 objects made on the HCA, and then met the numbers of objects that
    /// had lived since the last lap: the new object replaced the old one in every table
    /// (its CQ's completions went to the new CQ, its region's key stopped working, two PDs
    /// shared a number and so each other's memory). Checking this process's objects is
    /// enough: peers never name our CQs, PDs or SRQs, and find our memory keys in our
    /// tables. (A region's export file is named by its key index on the whole HCA, so after
    /// a lap two processes' exports may want one name; a peer opening it checks the full
    /// key and the exporter's pid, so the clash only sends placement back to the ring.)
    /// ENOMEM (as a full firmware table gives) if a whole lap is in use.
    fn alloc_unused(
        &self,
        next: impl Fn() -> u32,
        live: impl Fn(&DeviceState, u32) -> bool,
    ) -> Result<u32, Errno> {
        for _ in 0..1u32 << 24 {
            let n = next();
            if !live(&self.state(), n) {
                return Ok(n);
            }
        }
        Err(Errno::ENOMEM)
    }

    /// The MR or MW is gone: the hardware no longer translates its key.
    pub fn free_mkey_index(&self, index: u32) {
        self.engine.remove_memory_region(index)
    }
}

/// The node GUID: EUI-64 of a MAC made of Mellanox-style bytes and the GID's low 32 bits
/// (the IPv4 address for a v4-mapped GID), as mlx5 derives GUIDs from the port MAC.
pub(crate) fn node_guid_of(gid: &[u8; 16]) -> u64 {
    let mac = [0x02, 0xc9, gid[12], gid[13], gid[14], gid[15]];
    u64::from_be_bytes([mac[0] ^ 0x02, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_say_what_is_configured() {
        let e = Device::open("no-such-hca-xyz").unwrap_err();
        assert!(e.to_string().contains("no-such-hca-xyz"), "{e}");
    }

    #[test]
    fn guid_comes_from_the_address() {
        let g = node_guid_of(&crate::config::gid_of("10.1.2.3".parse().unwrap()));
        assert_eq!(g, 0x00c9_0aff_fe01_0203);
    }
}
