//! What the agent reports about its machine: host name and IP.

use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs, UdpSocket};
use std::sync::{Arc, Mutex};

/// The machine as reported to the dashboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostInfo {
    pub(crate) hostname: String,
    pub(crate) ip: String,
    /// Whether `ip` is only a fallback (no route to a dashboard was found yet: its name did not resolve,
    /// at start, say): detection is then tried again before each heartbeat.
    pub(crate) provisional: bool,
}

/// The IP reported to dashboards, as last detected: the heartbeat task resolves dashboards named by
/// host name after `start`, and `basicInfo` must answer what the heartbeats say, not the provisional
/// loopback address (`a_detected_address_is_shared_with_the_commands`).
#[derive(Debug, Clone)]
pub(crate) struct ReportedIp(Arc<Mutex<String>>);

impl ReportedIp {
    pub(crate) fn new(ip: &str) -> Self {
        ReportedIp(Arc::new(Mutex::new(ip.to_owned())))
    }

    pub(crate) fn get(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set(&self, ip: &str) {
        let mut reported = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if *reported != ip {
            *reported = ip.to_owned();
        }
    }
}

impl HostInfo {
    /// The host name and the IP a dashboard can call the agent back at:
    ///
    /// * `ip` if given (behind NAT or in Docker, set it);
    /// * else `bind`, when the agent listens on one specific address, loopback ones included (an
    ///   agent on `127.0.0.2` or `::1` is reached there, and `127.0.0.1` is where it listens: a
    ///   dashboard on another machine cannot reach it whatever is reported, and is warned about);
    /// * else the local address that routes towards the first dashboard that resolves, of `bind`'s
    ///   family when `bind` is a wildcard (`0.0.0.0` listens on IPv4 only);
    /// * else loopback, provisionally.
    ///
    /// `lookup`: dashboards named by host name are resolved (a name lookup blocks, for as long as the
    /// resolver takes); without it only those given by IP address count, and a named one leaves the
    /// address provisional (`start` does not wait for a resolver: the heartbeat task resolves).
    pub(crate) fn detect(
        ip: Option<&str>,
        bind: IpAddr,
        dashboards: &[String],
        lookup: bool,
    ) -> Self {
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "localhost".to_owned());
        let (ip, provisional) = match ip {
            Some(ip) => (ip.to_owned(), false),
            None if !bind.is_unspecified() => (bind.to_string(), false),
            None => match dashboards.iter().find_map(|d| route_to(d, bind, lookup)) {
                Some(ip) => (ip.to_string(), false),
                None => (
                    IpAddr::V4(Ipv4Addr::LOCALHOST).to_string(),
                    !dashboards.is_empty(),
                ),
            },
        };
        HostInfo {
            hostname,
            ip,
            provisional,
        }
    }

    /// Warns when the agent listens on loopback only while a dashboard cannot be on this machine: the
    /// address reported is not loopback (set by hand), or a dashboard is given by an address that is
    /// not.
    pub(crate) fn warn_if_unreachable(&self, bind: IpAddr, dashboards: &[String]) {
        if !bind.is_loopback() || self.provisional {
            return;
        }
        let reported_elsewhere = !self.ip.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
        let remote_dashboard = dashboards
            .iter()
            .filter_map(|d| dashboard_addr(d)?.parse::<std::net::SocketAddr>().ok())
            .any(|d| !d.ip().is_loopback());
        if reported_elsewhere || remote_dashboard {
            tracing::warn!(
                ?dashboards,
                reported = %self.ip,
                "the agent listens on loopback only: a dashboard on another machine cannot reach it \
                 (bind another address, with a token, for that)"
            );
        }
    }
}

/// `dashboard` as `host:port` (HTTP's 80 when it names none), without its scheme and path.
fn dashboard_addr(dashboard: &str) -> Option<String> {
    let authority = crate::heartbeat::without_scheme(dashboard)
        .split('/')
        .next()?;
    // `host:port` or `[v6]:port`; a bare `[v6]` or name gets `:80`.
    let has_port = authority.rsplit_once(':').is_some_and(|(host, port)| {
        !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && !host.ends_with(':')
    });
    Some(if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    })
}

/// The local address the OS would use to reach `dashboard` (a UDP `connect` sends nothing), of the
/// family of `bind` when it is a wildcard. A dashboard without a port is on HTTP's 80. `lookup`: a
/// host name is resolved (else only an IP address is used).
fn route_to(dashboard: &str, bind: IpAddr, lookup: bool) -> Option<IpAddr> {
    let with_port = dashboard_addr(dashboard)?;
    let family_ok = |target: &std::net::SocketAddr| match bind {
        IpAddr::V4(b) if b.is_unspecified() => target.is_ipv4(),
        IpAddr::V6(b) if b.is_unspecified() => true,
        _ => true,
    };
    let target = if lookup {
        with_port.to_socket_addrs().ok()?.find(family_ok)?
    } else {
        Some(with_port.parse::<std::net::SocketAddr>().ok()?).filter(family_ok)?
    };
    let local = if target.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let socket = UdpSocket::bind(local).ok()?;
    socket.connect(target).ok()?;
    Some(socket.local_addr().ok()?.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    #[test]
    fn an_explicit_ip_wins_and_loopback_routes_to_loopback() {
        let h = HostInfo::detect(Some("10.1.2.3"), LOOPBACK, &[], true);
        assert_eq!(h.ip, "10.1.2.3");
        assert!(!h.hostname.is_empty());
        let h = HostInfo::detect(None, LOOPBACK, &["127.0.0.1:8080".to_owned()], true);
        assert_eq!((h.ip.as_str(), h.provisional), ("127.0.0.1", false));
        let h = HostInfo::detect(None, LOOPBACK, &[], true);
        assert_eq!((h.ip.as_str(), h.provisional), ("127.0.0.1", false));
    }

    #[test]
    fn a_specific_bind_address_is_reported() {
        let bind: IpAddr = "10.1.2.3".parse().unwrap();
        let h = HostInfo::detect(None, bind, &["127.0.0.1:8080".to_owned()], true);
        assert_eq!(h.ip, "10.1.2.3", "the address the agent listens on");
    }

    /// An agent bound to 127.0.0.2 reported 127.0.0.1 (loopback fell through to the fallback):
    /// the dashboard called back an address nothing listened on.
    #[test]
    fn a_loopback_bind_address_is_reported_as_it_is() {
        let dashboards = [
            "127.0.0.1:8080".to_owned(),
            "no-such-host.invalid:8080".to_owned(),
        ];
        for bind in ["127.0.0.2", "127.0.0.1", "::1"] {
            let h = HostInfo::detect(None, bind.parse().unwrap(), &dashboards, false);
            assert_eq!((h.ip.as_str(), h.provisional), (bind, false));
        }
    }

    #[test]
    fn a_dashboard_without_a_port_is_on_port_80() {
        // A documentation address: routable in form, never answered (UDP connect sends nothing).
        let ip = route_to("192.0.2.1", IpAddr::V4(Ipv4Addr::UNSPECIFIED), true);
        let with_port = route_to("192.0.2.1:80", IpAddr::V4(Ipv4Addr::UNSPECIFIED), true);
        assert_eq!(ip, with_port, "the same route as with :80");
        assert_eq!(
            route_to("http://127.0.0.1", LOOPBACK, true),
            Some(LOOPBACK),
            "a URL without a port"
        );
    }

    #[test]
    fn an_unresolved_dashboard_leaves_the_address_provisional() {
        let h = HostInfo::detect(
            None,
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            &["no-such-host.invalid:8080".to_owned()],
            true,
        );
        assert_eq!((h.ip.as_str(), h.provisional), ("127.0.0.1", true));
    }

    /// Without lookups (at `start`), a dashboard given by address is routed to at once and one given by
    /// name leaves the address provisional, so that a slow resolver cannot hold `start` for its whole
    /// timeout.
    #[test]
    fn without_lookups_only_dashboard_addresses_count() {
        let dashboards = ["localhost:8080".to_owned(), "127.0.0.1:8080".to_owned()];
        let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        let h = HostInfo::detect(None, any, &dashboards[..1], false);
        assert_eq!((h.ip.as_str(), h.provisional), ("127.0.0.1", true));
        let h = HostInfo::detect(None, any, &dashboards, false);
        assert!(!h.provisional, "the address given");
        assert_eq!(
            route_to("http://127.0.0.1", LOOPBACK, false),
            Some(LOOPBACK)
        );
    }
}
