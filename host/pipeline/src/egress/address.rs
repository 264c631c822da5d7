//! What kind of address a name resolved to, and which kinds a request may
//! connect to. Checked on the address the host itself resolved and then
//! connects to, so a name that resolves to an internal address cannot
//! carry a request inside.

use crate::capability::Reach;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Where an address points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Public,
    Loopback,
    /// RFC 1918, shared address space (100.64/10).
    Private,
    LinkLocal,
    /// fc00::/7.
    UniqueLocal,
    /// An address cloud providers answer instance metadata (and credentials) on.
    Metadata,
    /// Unspecified, broadcast, multicast, documentation, reserved: never a
    /// place a request should go.
    Unusable,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Public => "public",
            Kind::Loopback => "loopback",
            Kind::Private => "private",
            Kind::LinkLocal => "link-local",
            Kind::UniqueLocal => "unique-local",
            Kind::Metadata => "cloud metadata",
            Kind::Unusable => "not routable",
        }
    }
}

/// Instance metadata endpoints: AWS, GCP, Azure, OpenStack and others use
/// 169.254.169.254 (and AWS fd00:ec2::254); Alibaba 100.100.100.200.
const METADATA: [IpAddr; 3] = [
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)),
];

pub fn kind(ip: IpAddr) -> Kind {
    if METADATA.contains(&ip) {
        return Kind::Metadata;
    }
    match ip {
        IpAddr::V4(v4) => kind_v4(v4),
        IpAddr::V6(v6) => kind_v6(v6),
    }
}

fn kind_v4(ip: Ipv4Addr) -> Kind {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Kind::Loopback
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Kind::Private
    } else if ip.is_link_local() {
        Kind::LinkLocal
    } else if ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || a >= 240
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b & 0xfe) == 18)
    {
        Kind::Unusable
    } else {
        Kind::Public
    }
}

fn kind_v6(ip: Ipv6Addr) -> Kind {
    // An IPv4 address written as IPv6 (mapped, or the NAT64 prefix) goes
    // where the IPv4 address goes.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return kind(IpAddr::V4(v4));
    }
    let s = ip.segments();
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        return kind(IpAddr::V4(Ipv4Addr::new(a, b, c, d)));
    }
    if ip.is_loopback() {
        Kind::Loopback
    } else if (s[0] & 0xffc0) == 0xfe80 {
        Kind::LinkLocal
    } else if (s[0] & 0xfe00) == 0xfc00 {
        Kind::UniqueLocal
    } else if ip.is_unspecified()
        || ip.is_multicast()
        || (s[0] == 0x2001 && s[1] == 0x0db8)
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])
        || s[0] == 0
    {
        Kind::Unusable
    } else {
        Kind::Public
    }
}

/// Whether an entry allowing `reach` lets a request connect to `ip`;
/// `named` says whether the entry names this very address.
pub fn reachable(ip: IpAddr, reach: Reach, named: bool) -> Result<(), Kind> {
    match (kind(ip), reach) {
        (Kind::Public, _) => Ok(()),
        (Kind::Metadata, _) if named => Ok(()),
        (
            Kind::Loopback | Kind::Private | Kind::LinkLocal | Kind::UniqueLocal,
            Reach::AlsoPrivate,
        ) => Ok(()),
        (
            refused @ (Kind::Loopback
            | Kind::Private
            | Kind::LinkLocal
            | Kind::UniqueLocal
            | Kind::Metadata
            | Kind::Unusable),
            _,
        ) => Err(refused),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(text: &str) -> Kind {
        kind(text.parse().unwrap())
    }

    #[test]
    fn internal_addresses_are_recognized_in_every_spelling() {
        for (ip, want) in [
            ("127.0.0.1", Kind::Loopback),
            ("127.8.9.1", Kind::Loopback),
            ("::1", Kind::Loopback),
            ("::ffff:127.0.0.1", Kind::Loopback),
            ("64:ff9b::7f00:1", Kind::Loopback),
            ("10.1.2.3", Kind::Private),
            ("172.16.0.1", Kind::Private),
            ("192.168.1.1", Kind::Private),
            ("100.64.0.1", Kind::Private),
            ("::ffff:10.0.0.1", Kind::Private),
            ("169.254.1.1", Kind::LinkLocal),
            ("fe80::1", Kind::LinkLocal),
            ("fd12:3456::1", Kind::UniqueLocal),
            ("fc00::1", Kind::UniqueLocal),
            ("169.254.169.254", Kind::Metadata),
            ("::ffff:169.254.169.254", Kind::Metadata),
            ("fd00:ec2::254", Kind::Metadata),
            ("100.100.100.200", Kind::Metadata),
            ("0.0.0.0", Kind::Unusable),
            ("::", Kind::Unusable),
            ("255.255.255.255", Kind::Unusable),
            ("224.0.0.1", Kind::Unusable),
            ("ff02::1", Kind::Unusable),
            ("0.1.2.3", Kind::Unusable),
            ("8.8.8.8", Kind::Public),
            ("2606:4700::1111", Kind::Public),
            ("172.32.0.1", Kind::Public),
        ] {
            assert_eq!(of(ip), want, "{ip}");
        }
    }

    #[test]
    fn private_addresses_need_the_entry_to_say_so_and_metadata_its_address() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let meta: IpAddr = "169.254.169.254".parse().unwrap();
        assert_eq!(reachable(lo, Reach::Public, false), Err(Kind::Loopback));
        assert_eq!(reachable(lo, Reach::AlsoPrivate, false), Ok(()));
        assert_eq!(
            reachable(meta, Reach::AlsoPrivate, false),
            Err(Kind::Metadata)
        );
        assert_eq!(reachable(meta, Reach::AlsoPrivate, true), Ok(()));
        assert_eq!(
            reachable("0.0.0.0".parse().unwrap(), Reach::AlsoPrivate, true),
            Err(Kind::Unusable)
        );
        assert_eq!(
            reachable("1.1.1.1".parse().unwrap(), Reach::Public, false),
            Ok(())
        );
    }
}
