//! Socket addresses at the C boundary: `DAT_IA_ADDRESS_PTR` is a `struct sockaddr *` whose
//! family says whether it is a `sockaddr_in` or a `sockaddr_in6`.

use ferrodat_abi::dat::{self as abi, AF_INET, AF_INET6};
use ferrodat_engine::error::{DatError, DatResult};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use zerocopy::IntoBytes;

/// Room for either address kind, aligned for both; pointers handed to consumers point to it.
#[repr(C, align(8))]
#[derive(Clone, Copy, Default)]
pub(crate) struct SockStorage([u8; 32]);

impl SockStorage {
    /// `addr` in C layout (port in network order).
    pub fn new(addr: SocketAddr) -> SockStorage {
        let mut s = SockStorage::default();
        match addr {
            SocketAddr::V4(a) => {
                let c = abi::SockAddrIn {
                    sin_family: AF_INET,
                    sin_port: a.port().into(),
                    sin_addr: u32::from(*a.ip()).into(),
                    sin_zero: [0; 8],
                };
                s.0[..16].copy_from_slice(c.as_bytes());
            }
            SocketAddr::V6(a) => {
                let c = abi::SockAddrIn6 {
                    sin6_family: AF_INET6,
                    sin6_port: a.port().into(),
                    sin6_flowinfo: a.flowinfo().into(),
                    sin6_addr: a.ip().octets(),
                    sin6_scope_id: a.scope_id(),
                };
                s.0[..28].copy_from_slice(c.as_bytes());
            }
        }
        s
    }

    /// As `DAT_IA_ADDRESS_PTR`.
    pub fn as_ptr(&self) -> abi::IaAddressPtr {
        self.0.as_ptr().cast_mut().cast()
    }
}

/// The IP address of a consumer's `DAT_IA_ADDRESS_PTR` (its port is not used: DAT passes
/// the connection qualifier separately). `arg` is the argument's position, for the error.
///
/// # Safety
/// `addr` must be NULL or point to a readable `sockaddr` of the size its family implies.
pub(crate) unsafe fn ip_of(addr: abi::IaAddressPtr, arg: u32) -> DatResult<IpAddr> {
    if addr.is_null() {
        return Err(DatError::new(abi::ret::INVALID_ADDRESS, abi::subtype::NO_SUBTYPE)
            .with_detail("a NULL remote address; pass the peer's sockaddr_in or sockaddr_in6"));
    }
    // SAFETY: non-null, and the caller promises a readable sockaddr; the family is in its
    // first two bytes whatever the kind.
    let family = unsafe { addr.cast::<u16>().read_unaligned() };
    match family {
        AF_INET => {
            // SAFETY: the family says it is a sockaddr_in (16 bytes).
            let a = unsafe { addr.cast::<abi::SockAddrIn>().read_unaligned() };
            Ok(IpAddr::V4(Ipv4Addr::from(a.sin_addr.get())))
        }
        AF_INET6 => {
            // SAFETY: the family says it is a sockaddr_in6 (28 bytes).
            let a = unsafe { addr.cast::<abi::SockAddrIn6>().read_unaligned() };
            let ip = Ipv6Addr::from(a.sin6_addr);
            Ok(ip.to_ipv4_mapped().map_or(IpAddr::V6(ip), IpAddr::V4))
        }
        other => Err(DatError::invalid_parameter(arg).with_detail(format!(
            "remote address family {other} is neither AF_INET ({AF_INET}) nor AF_INET6 \
             ({AF_INET6})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip_through_c_layout() {
        for text in ["127.0.0.1:45248", "[fe80::1]:7", "[::ffff:10.0.0.2]:1"] {
            let addr: SocketAddr = text.parse().unwrap();
            let s = SockStorage::new(addr);
            // SAFETY: the storage holds a sockaddr of the family it names.
            let ip = unsafe { ip_of(s.as_ptr(), 2) }.unwrap();
            let expected = match addr.ip() {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr.ip(), IpAddr::V4),
                v4 => v4,
            };
            assert_eq!(ip, expected, "{text}");
        }
        let s = SockStorage::new("10.1.2.3:258".parse().unwrap());
        assert_eq!(&s.0[..8], &[2, 0, 1, 2, 10, 1, 2, 3], "family, port and address bytes");
    }

    #[test]
    fn a_null_or_unknown_address_is_refused() {
        // SAFETY: NULL is allowed.
        let e = unsafe { ip_of(std::ptr::null_mut(), 2) }.unwrap_err();
        assert_eq!(e.return_type(), abi::ret::INVALID_ADDRESS);
        let mut s = SockStorage::default();
        s.0[0] = 1; // AF_UNIX
        // SAFETY: the storage is 32 readable bytes.
        let e = unsafe { ip_of(s.as_ptr(), 2) }.unwrap_err();
        assert_eq!(e.code(), DatError::invalid_parameter(2).code());
    }
}
