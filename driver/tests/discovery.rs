//! The sysfs parser against fake trees, independent of /dev.

use ferrodat_driver::discovery::{check_char_device, parse_dev, parse_gid, scan_sysfs, sysfs_gid};
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
