//! Which resolved addresses a sandbox may never reach, whatever the rules
//! say: the machine itself and its neighbours' special addresses. Private
//! ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) stay
//! reachable, since a project's own servers live there.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is never dialled, or `None` when it may be.
pub fn refused(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(addr: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = addr.octets();
    if addr == Ipv4Addr::new(100, 100, 100, 200) || addr == Ipv4Addr::new(169, 254, 169, 254) {
        return Some("a cloud metadata address");
    }
    if a == 127 {
        return Some("loopback (this machine)");
    }
    if a == 169 && b == 254 {
        return Some("link-local");
    }
    if a == 0 {
        return Some("unspecified (this network)");
    }
    if a >= 224 {
        return Some("multicast, reserved or broadcast");
    }
    None
}

fn refused_v6(addr: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = addr.to_ipv4_mapped() {
        return refused_v4(v4);
    }
    let seg = addr.segments();
    // NAT64 (64:ff9b::/96) carries an IPv4 address in its last 32 bits.
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., hi, lo] = seg;
        let v4 = Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
        return refused_v4(v4).map(|_| "a NAT64 wrapping of an address never reached");
    }
    if addr == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return Some("a cloud metadata address");
    }
    if addr.is_loopback() {
        return Some("loopback (this machine)");
    }
    if addr.is_unspecified() {
        return Some("unspecified");
    }
    if addr.is_multicast() {
        return Some("multicast");
    }
    if seg[0] & 0xffc0 == 0xfe80 {
        return Some("link-local");
    }
    // 100::/64 is discard-only; the namespace uses it as its own source.
    if seg[..4] == [0x100, 0, 0, 0] {
        return Some("discard-only");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_addresses_are_refused_and_private_ones_kept() {
        for bad in [
            "127.0.0.1",
            "127.8.9.10",
            "169.254.169.254",
            "169.254.1.1",
            "100.100.100.200",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "ff02::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::6464:64c8",
        ] {
            let addr: IpAddr = bad.parse().unwrap();
            assert!(refused(addr).is_some(), "{bad} must be refused");
        }
        for good in [
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "100.64.0.1",
            "93.184.216.34",
            "fd12::1",
            "2001:db8::1",
            "64:ff9b::5db8:d822",
        ] {
            let addr: IpAddr = good.parse().unwrap();
            assert_eq!(refused(addr), None, "{good} must be reachable");
        }
    }
}
