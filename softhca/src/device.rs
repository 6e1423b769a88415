//! One software HCA as a process sees it: its identity (name, GID, GUIDs), the tables of
//! every object any open file created, and the allocators of device numbers.
//!
//! A process holds at most one [`Device`] per HCA name ([`Device::open`]); every
//! [`Uverbs`](crate::kernel::Uverbs) opened on it shares its number spaces, while handles
//! stay per file. The hardware side looks objects up by number in [`DeviceState`].
//!
//! The number allocators are process-local for now (`alloc_qpn` & co. below); the fabric
//! registry will replace them so that numbers are unique among all processes using the HCA.

use crate::config::{self, ConfigError, DeviceConfig};
use crate::errno::Errno;
use crate::objects::{Cq, Mr, Pd, Qp, QpAttrs, QpState, Srq};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// Why [`Device::open`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
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
        }
    }
}

impl std::error::Error for OpenError {}

/// The objects of all files open on a device, by device number. Lock it with
/// [`Device::state`]; every change to an object happens under that lock.
#[derive(Debug, Default)]
pub struct DeviceState {
    /// Protection domains by pdn.
    pub pds: HashMap<u32, Pd>,
    /// Memory regions by mkey index (`key >> 8`).
    pub mrs: HashMap<u32, Mr>,
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
    qpns: IdPool,
    cqns: IdPool,
    pdns: IdPool,
    srqns: IdPool,
    mkey_indices: IdPool,
    mkey_variant: AtomicU8,
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
    /// open in this process while one is alive.
    pub fn open(name: &str) -> Result<Arc<Device>, OpenError> {
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dev) = reg.get(name).and_then(Weak::upgrade) {
            return Ok(dev);
        }
        let devices = config::devices().map_err(OpenError::Config)?;
        let Some(cfg) = devices.iter().find(|d| d.name == name).cloned() else {
            return Err(OpenError::NoSuchDevice {
                name: name.to_string(),
                configured: devices.into_iter().map(|d| d.name).collect(),
            });
        };
        let dev = Device::new(cfg);
        reg.retain(|_, w| w.strong_count() > 0);
        reg.insert(name.to_string(), Arc::downgrade(&dev));
        Ok(dev)
    }

    /// A device for `config`, outside the registry (tests, embedding).
    pub fn new(config: DeviceConfig) -> Arc<Device> {
        let node_guid = node_guid_of(&config.gid());
        Arc::new(Device {
            config,
            node_guid,
            state: Mutex::new(DeviceState::default()),
            qpns: IdPool::new(0x100, MAX_24BIT),
            cqns: IdPool::new(0x40, MAX_24BIT),
            pdns: IdPool::new(0x10, MAX_24BIT),
            srqns: IdPool::new(0x40, MAX_24BIT),
            // Index 1 with variant 0 would be key 0x100, MLX5_INVALID_LKEY.
            mkey_indices: IdPool::new(0x10, MAX_24BIT),
            mkey_variant: AtomicU8::new(0),
        })
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

    /// A free QP number (24 bits). Process-local for now.
    pub fn alloc_qpn(&self) -> Result<u32, Errno> {
        self.qpns.alloc()
    }
    /// Returns a QP number.
    pub fn free_qpn(&self, qpn: u32) {
        self.qpns.free(qpn)
    }
    /// A free CQ number (24 bits). Process-local for now.
    pub fn alloc_cqn(&self) -> Result<u32, Errno> {
        self.cqns.alloc()
    }
    /// Returns a CQ number.
    pub fn free_cqn(&self, cqn: u32) {
        self.cqns.free(cqn)
    }
    /// A free PD number (24 bits). Process-local for now.
    pub fn alloc_pdn(&self) -> Result<u32, Errno> {
        self.pdns.alloc()
    }
    /// Returns a PD number.
    pub fn free_pdn(&self, pdn: u32) {
        self.pdns.free(pdn)
    }
    /// A free SRQ number (24 bits). Process-local for now.
    pub fn alloc_srqn(&self) -> Result<u32, Errno> {
        self.srqns.alloc()
    }
    /// Returns an SRQ number.
    pub fn free_srqn(&self, srqn: u32) {
        self.srqns.free(srqn)
    }
    /// A free mkey index (24 bits) and the variant byte for its key. Process-local for now.
    pub fn alloc_mkey_index(&self) -> Result<(u32, u8), Errno> {
        let index = self.mkey_indices.alloc()?;
        // Like mlx5's per-device key counter: a re-used index gets a new key.
        Ok((index, self.mkey_variant.fetch_add(1, Ordering::Relaxed)))
    }
    /// Returns an mkey index.
    pub fn free_mkey_index(&self, index: u32) {
        self.mkey_indices.free(index)
    }
}

const MAX_24BIT: u32 = 0xff_ffff;

/// The node GUID: EUI-64 of a MAC made of Mellanox-style bytes and the GID's low 32 bits
/// (the IPv4 address for a v4-mapped GID), as mlx5 derives GUIDs from the port MAC.
fn node_guid_of(gid: &[u8; 16]) -> u64 {
    let mac = [0x02, 0xc9, gid[12], gid[13], gid[14], gid[15]];
    u64::from_be_bytes([mac[0] ^ 0x02, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]])
}

/// Numbers `first..=last`, handed out round-robin so a freed number is not reused at once
/// (a late packet for a destroyed QP should not hit its successor).
#[derive(Debug)]
struct IdPool {
    first: u32,
    last: u32,
    next: AtomicU32,
    live: Mutex<HashSet<u32>>,
}

impl IdPool {
    fn new(first: u32, last: u32) -> IdPool {
        IdPool { first, last, next: AtomicU32::new(first), live: Mutex::new(HashSet::new()) }
    }

    fn alloc(&self) -> Result<u32, Errno> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let span = self.last - self.first + 1;
        if live.len() as u64 >= u64::from(span) {
            return Err(Errno::ENOMEM);
        }
        loop {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            let id = self.first + (n.wrapping_sub(self.first)) % span;
            if live.insert(id) {
                return Ok(id);
            }
        }
    }

    fn free(&self, id: u32) {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_skip_live_numbers_and_wrap() {
        let pool = IdPool::new(5, 7);
        assert_eq!((pool.alloc(), pool.alloc(), pool.alloc()), (Ok(5), Ok(6), Ok(7)));
        assert_eq!(pool.alloc(), Err(Errno::ENOMEM));
        pool.free(6);
        assert_eq!(pool.alloc(), Ok(6));
    }

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
