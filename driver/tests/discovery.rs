//! The sysfs parser against fake trees, independent of /dev.

use ferrodat_driver::discovery::{
    check_char_device, choose_roce_gid, parse_dev, parse_gid, scan_sysfs, sysfs_gid, sysfs_gid_type,
};
use std::path::{Path, PathBuf};

struct Tree(PathBuf);

impl Tree {
    fn new(tag: &str) -> Tree {
        let p =
            std::env::temp_dir().join(format!("ferrodat-drv-sysfs-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Tree(p)
    }

    fn file(&self, rel: &str, content: &str) -> &Tree {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
        self
    }

    fn uverbs(&self, n: u32, ibdev: &str, abi: Option<&str>, dev: &str) -> &Tree {
        let d = format!("class/infiniband_verbs/uverbs{n}");
        self.file(&format!("{d}/ibdev"), &format!("{ibdev}\n"));
        if let Some(a) = abi {
            self.file(&format!("{d}/abi_version"), a);
        }
        self.file(&format!("{d}/dev"), dev)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const NODEV: &str = "/nonexistent-dev-dir";

#[test]
fn good_tree_gives_devices_in_order() {
    let t = Tree::new("good");
    t.file("class/infiniband_verbs/abi_version", "6\n")
        .uverbs(1, "mlx5_1", Some("1\n"), "231:193\n")
        .uverbs(0, "mlx5_0", Some("1\n"), "231:192\n")
        .file("class/infiniband_verbs/not-a-device", "x");
    let (devs, skipped) = scan_sysfs(&t.0, Path::new(NODEV));
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(devs.len(), 2);
    assert_eq!(devs[0].ibdev, "mlx5_0");
    assert_eq!(devs[0].dev, (231, 192));
    assert_eq!(devs[0].uverbs_path, Path::new(NODEV).join("uverbs0"));
    assert_eq!((devs[0].driver_abi, devs[0].uverbs_abi), (1, 6));
    t.file("class/infiniband/mlx5_0/ports/1/gids/0", "fe80:0000:0000:0000:0202:c9ff:fe00:0001\n");
    let gid = sysfs_gid(&devs[0], 1, 0).unwrap();
    assert_eq!(gid[0..2], [0xfe, 0x80]);
    assert_eq!(gid[15], 1);
    assert!(sysfs_gid(&devs[0], 1, 5).is_err());
}

#[test]
fn global_abi_out_of_range_or_missing_rejects_all() {
    for (tag, abi) in [("abi7", Some("7\n")), ("abi2", Some("2")), ("noabi", None)] {
        let t = Tree::new(tag);
        if let Some(a) = abi {
            t.file("class/infiniband_verbs/abi_version", a);
        }
        t.uverbs(0, "mlx5_0", Some("1"), "231:192");
        let (devs, skipped) = scan_sysfs(&t.0, Path::new(NODEV));
        assert!(devs.is_empty(), "{tag}");
        assert_eq!(skipped.len(), 1, "{tag}: {skipped:?}");
        assert!(skipped[0].contains("all uverbs devices"), "{skipped:?}");
    }
}

#[test]
fn bad_devices_are_skipped_with_a_reason() {
    let t = Tree::new("bad");
    t.file("class/infiniband_verbs/abi_version", "6")
        .uverbs(0, "mlx4_0", Some("2"), "231:192") // not mlx5
        .uverbs(1, "mlx5_1", None, "231:193") // no driver ABI
        .uverbs(2, "mlx5_2", Some("1"), "garbage") // bad dev
        .uverbs(3, "mlx5_3", Some("1"), "0:0"); // fine, unchecked dev_t
    let (devs, skipped) = scan_sysfs(&t.0, Path::new(NODEV));
    assert_eq!(devs.len(), 1);
    assert_eq!(devs[0].ibdev, "mlx5_3");
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(skipped[0].starts_with("uverbs0") && skipped[0].contains("driver ABI 2"));
    assert!(skipped[1].starts_with("uverbs1") && skipped[1].contains("abi_version"));
    assert!(skipped[2].starts_with("uverbs2") && skipped[2].contains("major:minor"));
}

#[test]
fn no_class_dir_means_no_hardware() {
    let t = Tree::new("empty");
    let (devs, skipped) = scan_sysfs(&t.0, Path::new(NODEV));
    assert!(devs.is_empty() && skipped.is_empty());
}

#[test]
fn char_device_check() {
    assert!(check_char_device(Path::new("/dev/null"), (1, 3)).is_ok());
    assert!(check_char_device(Path::new("/dev/null"), (0, 0)).is_ok());
    assert!(check_char_device(Path::new("/dev/null"), (1, 5)).unwrap_err().contains("1:3"));
    let t = Tree::new("chr");
    t.file("plain", "x");
    assert!(check_char_device(&t.0.join("plain"), (0, 0)).unwrap_err().contains("not a character"));
    assert!(check_char_device(&t.0.join("missing"), (0, 0)).is_err());
}

#[test]
fn parsers() {
    assert_eq!(parse_dev("231:192\n"), Some((231, 192)));
    assert_eq!(parse_dev("231"), None);
    assert!(parse_gid("0000:0000:0000:0000:0000:ffff:7f00:0001").is_some());
    assert!(parse_gid("0000:0000").is_none());
    assert!(parse_gid("zzzz:0000:0000:0000:0000:ffff:7f00:0001").is_none());
}

/// A ConnectX-5's RoCE GID table as mlx5 fills it: each address twice, RoCE v1 first.
const CX5_TABLE: [(&str, &str); 4] = [
    ("fe80:0000:0000:0000:0ac0:ebff:fe11:2233", "IB/RoCE v1"),
    ("fe80:0000:0000:0000:0ac0:ebff:fe11:2233", "RoCE v2"),
    ("0000:0000:0000:0000:0000:ffff:0a00:0001", "IB/RoCE v1"),
    ("0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2"),
];

#[test]
fn a_roce_connection_takes_the_ip_routable_roce_v2_gid_not_entry_0() {
    let t = Tree::new("gidtypes");
    t.file("class/infiniband_verbs/abi_version", "6\n").uverbs(
        0,
        "mlx5_0",
        Some("1\n"),
        "231:192\n",
    );
    let (devs, _) = scan_sysfs(&t.0, Path::new(NODEV));
    let port = "class/infiniband/mlx5_0/ports/1";
    for (i, (gid, kind)) in CX5_TABLE.iter().enumerate() {
        t.file(&format!("{port}/gids/{i}"), &format!("{gid}\n"));
        t.file(&format!("{port}/gid_attrs/types/{i}"), &format!("{kind}\n"));
    }
    // An unused entry: a zero GID, and no type (the kernel answers EINVAL).
    t.file(&format!("{port}/gids/4"), "0000:0000:0000:0000:0000:0000:0000:0000\n");
    let entries: Vec<_> = (0..5)
        .map(|i| (i, sysfs_gid(&devs[0], 1, i).unwrap(), sysfs_gid_type(&devs[0], 1, i)))
        .collect();
    assert_eq!(entries[0].2.as_deref(), Some("IB/RoCE v1"));
    assert_eq!(entries[3].2.as_deref(), Some("RoCE v2"));
    assert_eq!(entries[4].2, None);
    assert_eq!(choose_roce_gid(&entries), 3, "IPv4-mapped RoCE v2");
    // Without an IP address on the interface: the link-local RoCE v2 entry.
    assert_eq!(choose_roce_gid(&entries[..2]), 1);
    // RoCE v1 only, or no types at all (an old kernel): entry 0.
    assert_eq!(choose_roce_gid(&entries[..1]), 0);
    let untyped: Vec<_> = entries.iter().map(|(i, g, _)| (*i, *g, None)).collect();
    assert_eq!(choose_roce_gid(&untyped), 0);
    // A RoCE v2 entry with a zero GID is not a source.
    let empty_v2 = [entries[0].clone(), (1, [0u8; 16], Some("RoCE v2".to_string()))];
    assert_eq!(choose_roce_gid(&empty_v2), 0);
    assert_eq!(choose_roce_gid(&[]), 0);
}
