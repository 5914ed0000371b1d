//! Which IP addresses are public: the address half of the network policy.
//!
//! Anything that is not plainly a globally routed unicast address is refused, with the name of
//! the range, so the model learns why. Addresses that embed an IPv4 address (IPv4-mapped,
//! IPv4-compatible, NAT64, 6to4) are judged by the address they embed, and Teredo (whose
//! embedded address is obfuscated) is refused outright.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is not a public address, or `None` when it is one.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

/// IPv4 special-purpose ranges (IANA registry, RFC 6890 and successors).
const V4_RANGES: &[([u8; 4], u32, &str)] = &[
    (
        [0, 0, 0, 0],
        8,
        "the unspecified (\"this network\") range 0.0.0.0/8",
    ),
    ([10, 0, 0, 0], 8, "the private range 10.0.0.0/8"),
    (
        [100, 64, 0, 0],
        10,
        "the carrier-grade NAT range 100.64.0.0/10",
    ),
    ([127, 0, 0, 0], 8, "the loopback range 127.0.0.0/8"),
    (
        [169, 254, 0, 0],
        16,
        "the link-local range 169.254.0.0/16 (cloud metadata lives there)",
    ),
    ([172, 16, 0, 0], 12, "the private range 172.16.0.0/12"),
    ([192, 0, 0, 0], 24, "the IETF protocol range 192.0.0.0/24"),
    ([192, 0, 2, 0], 24, "the documentation range 192.0.2.0/24"),
    ([192, 31, 196, 0], 24, "the AS112 range 192.31.196.0/24"),
    ([192, 52, 193, 0], 24, "the AMT range 192.52.193.0/24"),
    ([192, 88, 99, 0], 24, "the 6to4 relay range 192.88.99.0/24"),
    ([192, 168, 0, 0], 16, "the private range 192.168.0.0/16"),
    ([192, 175, 48, 0], 24, "the AS112 range 192.175.48.0/24"),
    ([198, 18, 0, 0], 15, "the benchmarking range 198.18.0.0/15"),
    (
        [198, 51, 100, 0],
        24,
        "the documentation range 198.51.100.0/24",
    ),
    (
        [203, 0, 113, 0],
        24,
        "the documentation range 203.0.113.0/24",
    ),
    ([224, 0, 0, 0], 4, "the multicast range 224.0.0.0/4"),
    ([255, 255, 255, 255], 32, "the broadcast address"),
    ([240, 0, 0, 0], 4, "the reserved range 240.0.0.0/4"),
];

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    V4_RANGES
        .iter()
        .find(|(net, prefix, _)| in_v4(ip, *net, *prefix))
        .map(|(_, _, why)| *why)
}

fn in_v6(ip: Ipv6Addr, net: [u16; 8], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix)
    };
    u128::from(ip) & mask == u128::from(Ipv6Addr::from(net)) & mask
}

fn embedded_v4(bits: u128) -> Ipv4Addr {
    Ipv4Addr::from((bits & 0xffff_ffff) as u32)
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    if ip.is_unspecified() {
        return Some("the unspecified address ::");
    }
    if ip.is_loopback() {
        return Some("the loopback address ::1");
    }
    // ::ffff:a.b.c.d reaches a.b.c.d.
    if in_v6(ip, [0, 0, 0, 0, 0, 0xffff, 0, 0], 96) {
        return non_public_v4(embedded_v4(bits))
            .map(|_| "an IPv4-mapped address whose IPv4 part is not public");
    }
    // ::a.b.c.d (deprecated IPv4-compatible) and ::ffff:0:a.b.c.d (SIIT).
    if in_v6(ip, [0; 8], 96) || in_v6(ip, [0, 0, 0, 0, 0xffff, 0, 0, 0], 96) {
        return Some("an IPv4-compatible or translated address (deprecated forms)");
    }
    // 64:ff9b::a.b.c.d, the well-known NAT64 prefix, reaches a.b.c.d.
    if in_v6(ip, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96) {
        return non_public_v4(embedded_v4(bits))
            .map(|_| "a NAT64 address whose IPv4 part is not public");
    }
    if in_v6(ip, [0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48) {
        return Some("the local-use NAT64 range 64:ff9b:1::/48");
    }
    // 2002:a.b.c.d::/48 is 6to4 for a.b.c.d.
    if in_v6(ip, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        let v4 = Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32);
        return non_public_v4(v4).map(|_| "a 6to4 address whose IPv4 part is not public");
    }
    if in_v6(ip, [0x2001, 0, 0, 0, 0, 0, 0, 0], 32) {
        return Some("the Teredo range 2001::/32");
    }
    if in_v6(ip, [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32) {
        return Some("the documentation range 2001:db8::/32");
    }
    if in_v6(ip, [0x3fff, 0, 0, 0, 0, 0, 0, 0], 20) {
        return Some("the documentation range 3fff::/20");
    }
    if in_v6(ip, [0x2001, 0, 0, 0, 0, 0, 0, 0], 23) {
        return Some("the IETF protocol range 2001::/23 (benchmarking, ORCHID and others)");
    }
    if in_v6(ip, [0x100, 0, 0, 0, 0, 0, 0, 0], 64) {
        return Some("the discard range 100::/64");
    }
    if in_v6(ip, [0xfc00, 0, 0, 0, 0, 0, 0, 0], 7) {
        return Some("the unique-local range fc00::/7");
    }
    if in_v6(ip, [0xfe80, 0, 0, 0, 0, 0, 0, 0], 10) {
        return Some("the link-local range fe80::/10");
    }
    if in_v6(ip, [0xfec0, 0, 0, 0, 0, 0, 0, 0], 10) {
        return Some("the site-local range fec0::/10");
    }
    if in_v6(ip, [0xff00, 0, 0, 0, 0, 0, 0, 0], 8) {
        return Some("the multicast range ff00::/8");
    }
    // Global unicast is 2000::/3; everything else is reserved.
    if !in_v6(ip, [0x2000, 0, 0, 0, 0, 0, 0, 0], 3) {
        return Some("a reserved IPv6 range (only 2000::/3 is global unicast)");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        // (address, public?)
        let rows: &[(&str, bool)] = &[
            ("93.184.215.14", true),
            ("1.1.1.1", true),
            ("8.8.8.8", true),
            ("0.0.0.0", false),
            ("0.1.2.3", false),
            ("10.1.2.3", false),
            ("100.64.0.1", false),
            ("100.128.0.1", true),
            ("127.0.0.1", false),
            ("127.255.255.254", false),
            ("169.254.169.254", false),
            ("172.16.0.1", false),
            ("172.31.255.255", false),
            ("172.32.0.1", true),
            ("192.0.0.8", false),
            ("192.0.2.1", false),
            ("192.88.99.1", false),
            ("192.168.1.1", false),
            ("198.18.0.1", false),
            ("198.19.255.255", false),
            ("198.20.0.1", true),
            ("198.51.100.7", false),
            ("203.0.113.9", false),
            ("224.0.0.1", false),
            ("239.255.255.250", false),
            ("240.0.0.1", false),
            ("255.255.255.255", false),
            ("2606:4700:4700::1111", true),
            ("2a00:1450:4001:80b::200e", true),
            ("::", false),
            ("::1", false),
            ("::ffff:127.0.0.1", false),
            ("::ffff:169.254.169.254", false),
            ("::ffff:8.8.8.8", true),
            ("::127.0.0.1", false),
            ("::8.8.8.8", false),
            ("64:ff9b::a9fe:a9fe", false),
            ("64:ff9b::808:808", true),
            ("64:ff9b:1::1", false),
            ("2002:7f00:1::1", false),
            ("2002:a9fe:a9fe::1", false),
            ("2002:808:808::1", true),
            ("2001::1", false),
            ("2001:db8::1", false),
            ("2001:2::1", false),
            ("3fff::1", false),
            ("100::1", false),
            ("fc00::1", false),
            ("fd12:3456::1", false),
            ("fe80::1", false),
            ("fec0::1", false),
            ("ff02::1", false),
            ("4000::1", false),
            ("fd00:ec2::254", false),
        ];
        for (text, public) in rows {
            let ip: IpAddr = text.parse().unwrap();
            assert_eq!(
                non_public(ip).is_none(),
                *public,
                "{text}: {:?}",
                non_public(ip)
            );
        }
    }
}
