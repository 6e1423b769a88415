//! A sysfs tree for unmodified rdma-core (libibverbs + its mlx5 provider) to find software
//! HCAs through `SYSFS_PATH`, as `reference/mlx5-uverbs.md` §1 and §6 list it.
//!
//! Configured device number N (in [`config::devices`] order) appears as the uverbs device
//! `uverbsN` with the IB device name `mlx5_N`, as a ConnectX-5 would: the process sees an
//! mlx5 device, not a softhca one. `dev` is `0:0`, which turns off libibverbs' dev_t check
//! of the opened char device.
//!
//! [`config::devices`]: crate::config::devices

use crate::config::DeviceConfig;
use crate::device::node_guid_of;
use crate::kernel::caps::{FW_VER, GID_TABLE_LEN};
use std::fs;
use std::io;
use std::path::Path;

/// The uverbs device name of configured device `index`.
pub fn uverbs_name(index: usize) -> String {
    format!("uverbs{index}")
}

/// The IB device name rdma-core shows for configured device `index`.
pub fn ibdev_name(index: usize) -> String {
    format!("mlx5_{index}")
}

/// The files of the tree for `devices`, as (path relative to the sysfs root, contents).
pub fn files(devices: &[DeviceConfig]) -> Vec<(String, String)> {
    let mut out = vec![("class/infiniband_verbs/abi_version".to_string(), "6\n".to_string())];
    for (i, dev) in devices.iter().enumerate() {
        let uverbs = format!("class/infiniband_verbs/{}", uverbs_name(i));
        let ibdev = ibdev_name(i);
        out.push((format!("{uverbs}/ibdev"), format!("{ibdev}\n")));
        out.push((format!("{uverbs}/abi_version"), "1\n".to_string()));
        out.push((format!("{uverbs}/dev"), "0:0\n".to_string()));
        let d = format!("class/infiniband/{ibdev}");
        out.push((format!("{d}/node_type"), "1: CA\n".to_string()));
        let guid = node_guid_of(&dev.gid()).to_be_bytes();
        out.push((format!("{d}/node_guid"), format!("{}\n", colon_hex(&guid))));
        out.push((format!("{d}/sys_image_guid"), format!("{}\n", colon_hex(&guid))));
        let fw = FW_VER;
        let fw = format!("{}.{}.{:04}\n", fw >> 32, (fw >> 16) & 0xffff, fw & 0xffff);
        out.push((format!("{d}/fw_ver"), fw));
        out.push((format!("{d}/hca_type"), "MT4119\n".to_string()));
        out.push((format!("{d}/hw_rev"), "0x0\n".to_string()));
        out.push((format!("{d}/node_desc"), format!("softhca {} {}\n", dev.name, dev.addr)));
        out.push((
            format!("{d}/device/modalias"),
            "pci:v000015B3d00001017sv000015B3sd00000007bc02sc00i00\n".to_string(),
        ));
        out.push((format!("{d}/device/vendor"), "0x15b3\n".to_string()));
        out.push((format!("{d}/device/device"), "0x1017\n".to_string()));
        let p = format!("{d}/ports/1");
        out.push((format!("{p}/state"), "4: ACTIVE\n".to_string()));
        out.push((format!("{p}/phys_state"), "5: LinkUp\n".to_string()));
        out.push((format!("{p}/link_layer"), "Ethernet\n".to_string()));
        out.push((format!("{p}/lid"), "0x0\n".to_string()));
        out.push((format!("{p}/sm_lid"), "0x0\n".to_string()));
        out.push((format!("{p}/lid_mask_count"), "0\n".to_string()));
        // As rate_show computes it from QUERY_PORT: 4X EDR, 4 lanes of 25 Gb/s.
        out.push((format!("{p}/rate"), "100 Gb/sec (4X EDR)\n".to_string()));
        out.push((format!("{p}/pkeys/0"), "0xffff\n".to_string()));
        for g in 0..GID_TABLE_LEN {
            let gid = if g == 0 { dev.gid() } else { [0; 16] };
            out.push((format!("{p}/gids/{g}"), format!("{}\n", colon_hex(&gid))));
        }
        out.push((format!("{p}/gid_attrs/types/0"), "RoCE v2\n".to_string()));
    }
    out
}

/// Writes the tree for `devices` under `root` (created if missing), replacing files of an
/// earlier tree.
pub fn write_tree(root: &Path, devices: &[DeviceConfig]) -> io::Result<()> {
    for (rel, contents) in files(devices) {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(path, contents)?;
    }
    Ok(())
}

/// Bytes as sysfs prints GUIDs and GIDs: groups of 4 hex digits separated by colons.
fn colon_hex(bytes: &[u8]) -> String {
    let groups: Vec<String> =
        bytes.chunks(2).map(|c| format!("{:02x}{:02x}", c[0], c.get(1).unwrap_or(&0))).collect();
    groups.join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_has_what_libibverbs_reads() {
        let dev = DeviceConfig { name: "softhca0".into(), addr: "127.0.0.1".parse().unwrap() };
        let files = files(&[dev]);
        let get = |p: &str| files.iter().find(|(k, _)| k == p).map(|(_, v)| v.as_str());
        assert_eq!(get("class/infiniband_verbs/abi_version"), Some("6\n"));
        assert_eq!(get("class/infiniband_verbs/uverbs0/ibdev"), Some("mlx5_0\n"));
        assert_eq!(get("class/infiniband_verbs/uverbs0/abi_version"), Some("1\n"));
        assert_eq!(get("class/infiniband_verbs/uverbs0/dev"), Some("0:0\n"));
        assert_eq!(get("class/infiniband/mlx5_0/node_type"), Some("1: CA\n"));
        assert_eq!(
            get("class/infiniband/mlx5_0/ports/1/gids/0"),
            Some("0000:0000:0000:0000:0000:ffff:7f00:0001\n")
        );
        assert_eq!(get("class/infiniband/mlx5_0/ports/1/gid_attrs/types/0"), Some("RoCE v2\n"));
        assert!(
            get("class/infiniband/mlx5_0/device/modalias")
                .unwrap()
                .starts_with("pci:v000015B3d00001017")
        );
    }
}
