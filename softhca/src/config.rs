//! Which software HCAs exist on this host, and their addresses.
//!
//! A softhca device is named like a real one (`softhca0`, `softhca1`, …) and has one RoCE v2
//! port whose IP address gives its GID, as a real RoCE port's GID table derives from the
//! netdev's addresses. By default there is one device, `softhca0` on 127.0.0.1. The
//! environment variable `FERRODAT_SOFTHCA` replaces that list:
//! `FERRODAT_SOFTHCA="softhca0=127.0.0.1,softhca1=10.0.0.2"` (IPv6 addresses work too).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

/// The environment variable that lists the software HCAs.
pub const ENV_DEVICES: &str = "FERRODAT_SOFTHCA";

/// One configured software HCA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceConfig {
    /// Device name, e.g. `softhca0`.
    pub name: String,
    /// The port's IP address.
    pub addr: IpAddr,
}

impl DeviceConfig {
    /// The port's GID: the IPv4-mapped IPv6 address for IPv4 (`::ffff:a.b.c.d`), the address
    /// itself for IPv6 — what a RoCE v2 GID table holds.
    pub fn gid(&self) -> [u8; 16] {
        gid_of(self.addr)
    }
}

/// The RoCE v2 GID of an IP address.
pub fn gid_of(addr: IpAddr) -> [u8; 16] {
    match addr {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// Why the device list could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The offending entry.
    pub entry: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{ENV_DEVICES} entry {:?}: {}; expected NAME=IP[,NAME=IP…], e.g. softhca0=127.0.0.1",
            self.entry, self.reason
        )
    }
}

impl std::error::Error for ConfigError {}

/// The configured devices: from `FERRODAT_SOFTHCA` if set, else `softhca0` on 127.0.0.1.
pub fn devices() -> Result<Vec<DeviceConfig>, ConfigError> {
    match std::env::var(ENV_DEVICES) {
        Ok(list) => parse_devices(&list),
        Err(_) => Ok(vec![DeviceConfig {
            name: "softhca0".into(),
            addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
        }]),
    }
}

/// The configured device called `name`.
pub fn device(name: &str) -> Result<Option<DeviceConfig>, ConfigError> {
    Ok(devices()?.into_iter().find(|d| d.name == name))
}

/// Parses `NAME=IP[,NAME=IP…]`.
pub fn parse_devices(list: &str) -> Result<Vec<DeviceConfig>, ConfigError> {
    let mut out: Vec<DeviceConfig> = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let err = |reason| ConfigError { entry: entry.to_string(), reason };
        let (name, addr) = entry.split_once('=').ok_or_else(|| err("missing '='"))?;
        let name = name.trim();
        let valid_name = !name.is_empty()
            && name.len() < 64
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid_name {
            return Err(err("the name must be 1-63 characters of [A-Za-z0-9_-]"));
        }
        let addr: IpAddr = addr.trim().parse().map_err(|_| err("not an IP address"))?;
        if addr.is_unspecified() {
            return Err(err("the address must not be unspecified (0.0.0.0 or ::)"));
        }
        if out.iter().any(|d| d.name == name) {
            return Err(err("the name appears twice"));
        }
        out.push(DeviceConfig { name: name.to_string(), addr });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_gid_is_the_v4_mapped_address() {
        let gid = gid_of("127.0.0.1".parse().unwrap());
        assert_eq!(gid, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1]);
    }

    #[test]
    fn parses_a_list() {
        let d = parse_devices("softhca0=127.0.0.1, softhca1=fe80::1").unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[1].name, "softhca1");
        assert_eq!(d[1].gid()[0], 0xfe);
    }

    #[test]
    fn rejects_bad_entries_with_the_entry_named() {
        for (bad, why) in [
            ("softhca0", "missing '='"),
            ("softhca0=nope", "not an IP address"),
            ("=1.2.3.4", "the name must be"),
            ("a/b=1.2.3.4", "the name must be"),
            ("x=0.0.0.0", "unspecified"),
            ("x=1.1.1.1,x=1.1.1.2", "twice"),
        ] {
            let e = parse_devices(bad).unwrap_err();
            assert!(e.to_string().contains(why), "{bad}: {e}");
            assert!(e.to_string().contains("FERRODAT_SOFTHCA"), "{e}");
        }
    }
}
