//! What the agent reports about its machine: host name and IP.

use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs, UdpSocket};

/// The machine as reported to the dashboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostInfo {
    pub(crate) hostname: String,
    pub(crate) ip: String,
}

impl HostInfo {
    /// The host name, and `ip` if given, else the local address that routes towards the first dashboard
    /// (the address a dashboard can reach; behind NAT or in Docker, set it explicitly), else loopback.
    pub(crate) fn detect(ip: Option<&str>, dashboards: &[String]) -> Self {
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "localhost".to_owned());
        let ip = ip.map(str::to_owned).unwrap_or_else(|| {
            dashboards
                .first()
                .and_then(|d| route_to(d))
                .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
                .to_string()
        });
        HostInfo { hostname, ip }
    }
}

/// The local address the OS would use to reach `dashboard` (a UDP `connect` sends nothing).
fn route_to(dashboard: &str) -> Option<IpAddr> {
    let authority = dashboard
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .split('/')
        .next()?;
    let target = authority.to_socket_addrs().ok()?.next()?;
    let bind = if target.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let socket = UdpSocket::bind(bind).ok()?;
    socket.connect(target).ok()?;
    Some(socket.local_addr().ok()?.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_ip_wins_and_loopback_routes_to_loopback() {
        let h = HostInfo::detect(Some("10.1.2.3"), &[]);
        assert_eq!(h.ip, "10.1.2.3");
        assert!(!h.hostname.is_empty());
        let h = HostInfo::detect(None, &["127.0.0.1:8080".to_owned()]);
        assert_eq!(h.ip, "127.0.0.1");
        let h = HostInfo::detect(None, &[]);
        assert_eq!(h.ip, "127.0.0.1");
    }
}
