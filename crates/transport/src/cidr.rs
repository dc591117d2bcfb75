//! Networks in CIDR notation — `10.0.0.0/8`, `2001:db8::/64`, or a bare address for one host — for
//! the peers allowed to call the command API without the token
//! ([`tokenless_from`](crate::AgentBuilder::tokenless_from)).
//!
//! A network is an address and a prefix length; a peer is inside when its first `prefix` bits are the
//! network's. An IPv4 peer reaching a dual-stack listener as `::ffff:a.b.c.d` is the IPv4 address
//! `a.b.c.d`, and a network written in that form (`::ffff:10.0.0.0/104`) is the IPv4 one. Refused: a
//! prefix length over the family's (32, 128), host bits set (`10.1.2.3/8` is a typo for `10.0.0.0/8`
//! or `10.1.2.3/32`, and which one matters), `/0`, which would let every address in without the
//! token, and an IPv6 network shorter than /96 that covers the IPv4-mapped addresses `::ffff:0:0/96`
//! (`::/64`, `::fffe:0:0/95`, …): IPv4 peers are matched as IPv4, so it would let none of those in.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;

use thiserror::Error;

use crate::admission::canonical;

/// A network: an address and a prefix length (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

/// `::ffff:0:0`, the first of the IPv4-mapped addresses (`::ffff:0:0/96`).
const IPV4_MAPPED: u128 = 0xffff << 32;

const COVERS_IPV4_MAPPED: &str = "an IPv6 network shorter than /96 that covers the IPv4-mapped \
     addresses (::ffff:0:0/96) lets none of them in, as IPv4 peers are matched as IPv4: write the \
     IPv4 network (e.g. 10.0.0.0/8, or ::ffff:10.0.0.0/104)";

/// A network that does not parse, or is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid network `{entry}`: {reason}")]
pub struct CidrError {
    entry: String,
    reason: &'static str,
}

impl CidrError {
    /// The text refused.
    pub fn entry(&self) -> &str {
        &self.entry
    }

    /// Why.
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

impl Cidr {
    /// Whether `ip` is inside the network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(ip) & mask == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(ip) & mask == u128::from(net)
            }
            _ => false,
        }
    }

    /// The network's address.
    pub fn network(&self) -> IpAddr {
        self.network
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }
}

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(text: &str) -> Result<Self, CidrError> {
        let refuse = |reason| CidrError {
            entry: text.to_owned(),
            reason,
        };
        let trimmed = text.trim();
        let (address, prefix) = match trimmed.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (trimmed, None),
        };
        let address: IpAddr = address.parse().map_err(|_| {
            refuse("not an IP address (expected e.g. 10.0.0.5/32 or 2001:db8::/64)")
        })?;
        let bits: u8 = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => bits,
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse::<u8>().ok().filter(|&p| p <= bits).ok_or_else(|| {
                    refuse(if bits == 32 {
                        "the prefix length is over 32"
                    } else {
                        "the prefix length is over 128"
                    })
                })?
            }
            Some(_) => return Err(refuse("the prefix length is not a number")),
        };
        // `::ffff:a.b.c.d/n` (n ≥ 96) is the IPv4 network, as its peers are seen.
        let (address, prefix) = match address {
            IpAddr::V6(v6) if prefix >= 96 => match v6.to_ipv4_mapped() {
                Some(v4) => (IpAddr::V4(v4), prefix - 96),
                None => (address, prefix),
            },
            _ => (address, prefix),
        };
        if prefix == 0 {
            return Err(refuse(
                "a /0 lets every address in without the token (list the dashboards' addresses)",
            ));
        }
        if let IpAddr::V6(v6) = address {
            // Shorter than /96 (a longer one in the mapped range was made IPv4 above).
            let mask = u128::MAX << (128 - u32::from(prefix));
            if u128::from(v6) & mask == IPV4_MAPPED & mask {
                return Err(refuse(COVERS_IPV4_MAPPED));
            }
        }
        let cidr = Cidr {
            network: address,
            prefix,
        };
        if !cidr.contains(address) || cidr.masked() != address {
            return Err(refuse(
                "host bits are set (write the network's address, e.g. 10.0.0.0/8, or a host's, e.g. 10.1.2.3/32)",
            ));
        }
        Ok(cidr)
    }
}

impl Cidr {
    /// The address with the host bits cleared.
    fn masked(&self) -> IpAddr {
        match self.network {
            IpAddr::V4(v4) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
            }
            IpAddr::V6(v6) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V6((u128::from(v6) & mask).into())
            }
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn networks_contain_their_addresses() {
        let net = cidr("10.0.0.0/8");
        assert!(net.contains(ip("10.255.1.2")));
        assert!(!net.contains(ip("11.0.0.1")));
        assert!(
            net.contains(ip("::ffff:10.1.2.3")),
            "an IPv4 peer of a dual-stack listener"
        );
        assert!(!net.contains(ip("::a00:1")), "IPv6 is not IPv4");
        let host = cidr("127.0.0.1");
        assert_eq!(host.to_string(), "127.0.0.1/32");
        assert!(host.contains(ip("127.0.0.1")) && !host.contains(ip("127.0.0.2")));
        let v6 = cidr(" 2001:db8::/32 ");
        assert!(v6.contains(ip("2001:db8:ffff::1")));
        assert!(!v6.contains(ip("2001:db9::1")));
        assert!(cidr("::1").contains(ip("::1")));
        assert_eq!(cidr("::ffff:10.0.0.0/104"), cidr("10.0.0.0/8"));
        assert!(cidr("::ffff:10.0.0.0/104").contains(ip("::ffff:10.1.2.3")));
        // Beside the mapped range, not over it.
        assert!(cidr("::/81").contains(ip("::1")));
        assert!(cidr("64:ff9b::/96").contains(ip("64:ff9b::a01:203")));
        assert!(cidr("0.0.0.0/1").contains(ip("127.0.0.1")));
        assert!(cidr("255.255.255.255/32").contains(ip("255.255.255.255")));
    }

    #[test]
    fn bad_networks_are_refused_by_name() {
        for (text, reason) in [
            ("10.0.0.0/33", "the prefix length is over 32"),
            ("::/129", "the prefix length is over 128"),
            ("10.0.0.0/", "the prefix length is not a number"),
            ("10.0.0.0/+8", "the prefix length is not a number"),
            ("10.0.0.0/8/8", "the prefix length is not a number"),
            (
                "0.0.0.0/0",
                "a /0 lets every address in without the token (list the dashboards' addresses)",
            ),
            (
                "::/0",
                "a /0 lets every address in without the token (list the dashboards' addresses)",
            ),
            // Peers in the mapped range are matched as IPv4: these would let none of them in.
            ("::ffff:10.0.0.0/95", COVERS_IPV4_MAPPED),
            ("::ffff:0:0/80", COVERS_IPV4_MAPPED),
            ("::fffe:0:0/95", COVERS_IPV4_MAPPED),
            ("::/64", COVERS_IPV4_MAPPED),
            (
                "dashboard.local",
                "not an IP address (expected e.g. 10.0.0.5/32 or 2001:db8::/64)",
            ),
            (
                "",
                "not an IP address (expected e.g. 10.0.0.5/32 or 2001:db8::/64)",
            ),
        ] {
            let err = text.parse::<Cidr>().unwrap_err();
            assert_eq!((err.entry(), err.reason()), (text, reason));
        }
        assert_eq!(
            "10.1.2.3/8".parse::<Cidr>().unwrap_err().to_string(),
            "invalid network `10.1.2.3/8`: host bits are set (write the network's address, e.g. \
             10.0.0.0/8, or a host's, e.g. 10.1.2.3/32)"
        );
    }
}
