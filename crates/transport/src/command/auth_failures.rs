//! Wrong tokens, counted per client: a client that sends [`MAX_FAILURES`] wrong tokens within
//! [`WINDOW`] is refused (429) until that window ends, whatever token it sends meanwhile, so that one
//! client cannot guess a token at the speed of the wire (a client with many addresses gets ten
//! guesses a minute from each; `a_client_that_keeps_failing_the_token_is_refused_for_a_while`). Requests without a token are not counted (they guess nothing, and a
//! health check on the dashboard's address must not get the dashboard refused).
//!
//! A client is its IPv4 address, or the /56 network of its IPv6 address (what an ISP hands one
//! customer), and all loopback addresses are one client (a local process may send from any of
//! 127.0.0.0/8). A window starts at a client's first failure. At most [`MAX_CLIENTS`] clients are
//! tracked; when the table is full, finished windows are dropped first, then the client whose window
//! started earliest among those not refused (a flood of new addresses does not free the refused
//! ones), and only when every client is refused, the earliest of them.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures a client may have within one window.
pub(crate) const MAX_FAILURES: u32 = 10;
/// How long a client's failures count.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);
/// How many clients are tracked at once.
const MAX_CLIENTS: usize = 4096;

/// What recording a failure did, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The client's first failure of its window.
    First,
    /// A later failure, still allowed.
    Again,
    /// This failure used up the client's allowance: it is refused from now until its window ends.
    LockedOut,
}

#[derive(Debug, Clone, Copy)]
struct Tally {
    since: Instant,
    failures: u32,
}

/// Failed token checks per client (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct AuthFailures {
    clients: Mutex<HashMap<u128, Tally>>,
}

/// The key of every loopback address.
const LOOPBACK: u128 = 0x7f00_0000;

/// The client `ip` counts as: loopback, an IPv4 address (IPv4-mapped IPv6 ones too), or an IPv6 /56.
fn client(ip: IpAddr) -> u128 {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    if ip.is_loopback() {
        return LOOPBACK;
    }
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        // Above every IPv4 address: the /56's bits, with the low bits set.
        IpAddr::V6(v6) => (u128::from(v6) >> 72 << 72) | ((1u128 << 72) - 1),
    }
}

impl AuthFailures {
    /// How long `ip` is still refused at `now`, if it is.
    pub(crate) fn refused_for(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let clients = self.lock();
        let tally = clients.get(&client(ip))?;
        let left = (tally.since + WINDOW).checked_duration_since(now)?;
        (tally.failures >= MAX_FAILURES && !left.is_zero()).then_some(left)
    }

    /// Counts a failed token check by `ip` at `now`.
    pub(crate) fn record(&self, ip: IpAddr, now: Instant) -> Failure {
        let mut clients = self.lock();
        let key = client(ip);
        if !clients.contains_key(&key) && clients.len() >= MAX_CLIENTS {
            clients.retain(|_, t| now.saturating_duration_since(t.since) < WINDOW);
            if clients.len() >= MAX_CLIENTS {
                // Not refused first, then the earliest window.
                let earliest = clients
                    .iter()
                    .min_by_key(|(_, t)| (t.failures >= MAX_FAILURES, t.since))
                    .map(|(k, _)| *k);
                if let Some(earliest) = earliest {
                    clients.remove(&earliest);
                }
            }
        }
        let tally = clients.entry(key).or_insert(Tally {
            since: now,
            failures: 0,
        });
        if now.saturating_duration_since(tally.since) >= WINDOW {
            *tally = Tally {
                since: now,
                failures: 0,
            };
        }
        tally.failures = tally.failures.saturating_add(1);
        match tally.failures {
            1 => Failure::First,
            n if n == MAX_FAILURES => Failure::LockedOut,
            _ => Failure::Again,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u128, Tally>> {
        // The table holds plain counts: one a panicking thread left half-updated is still usable.
        self.clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn a_client_is_refused_after_its_allowance_until_its_window_ends() {
        let failures = AuthFailures::default();
        let t0 = Instant::now();
        assert_eq!(failures.record(A, t0), Failure::First);
        for i in 2..MAX_FAILURES {
            assert_eq!(
                failures.record(A, t0 + Duration::from_secs(1)),
                Failure::Again
            );
            assert_eq!(failures.refused_for(A, t0), None, "after {i} failures");
        }
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(failures.record(A, t1), Failure::LockedOut);
        assert_eq!(failures.refused_for(A, t1), Some(Duration::from_secs(50)));
        // Another client is not refused.
        assert_eq!(failures.refused_for(B, t1), None);
        // The window ends 60 s after the first failure, and a new one starts afresh.
        assert_eq!(failures.refused_for(A, t0 + WINDOW), None);
        assert_eq!(failures.record(A, t0 + WINDOW), Failure::First);
        assert_eq!(failures.refused_for(A, t0 + WINDOW), None);
    }

    #[test]
    fn an_ipv6_client_is_its_56_network_loopback_is_one_and_a_mapped_ipv4_is_the_ipv4() {
        let one: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let other_host: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other_64: IpAddr = "2001:db8:1:ff::1".parse().unwrap();
        let other_56: IpAddr = "2001:db8:1:100::1".parse().unwrap();
        assert_eq!(client(one), client(other_host));
        assert_eq!(client(one), client(other_64), "the same /56");
        assert_ne!(client(one), client(other_56));
        let loopbacks = [
            "127.0.0.1",
            "127.0.0.2",
            "127.255.0.9",
            "::1",
            "::ffff:127.0.0.3",
        ];
        for ip in loopbacks {
            assert_eq!(client(ip.parse().unwrap()), LOOPBACK, "{ip}");
        }
        assert_ne!(client("10.0.0.1".parse().unwrap()), LOOPBACK);
        let mapped = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped());
        assert_eq!(client(mapped), client(A));
        // No IPv6 network collides with an IPv4 address.
        assert_ne!(client(IpAddr::V6(Ipv6Addr::UNSPECIFIED)), client(A));
        assert!(client(IpAddr::V6(Ipv6Addr::UNSPECIFIED)) > u128::from(u32::MAX));
    }

    #[test]
    fn a_full_table_drops_finished_windows_then_the_earliest() {
        let failures = AuthFailures::default();
        let t0 = Instant::now();
        let ip = |i: usize| IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i as u32));
        for _ in 0..MAX_FAILURES {
            failures.record(ip(0), t0);
        }
        for i in 1..MAX_CLIENTS {
            failures.record(ip(i), t0 + Duration::from_secs(1));
        }
        assert_eq!(failures.lock().len(), MAX_CLIENTS);
        // Full, nothing finished: a client not refused makes room, though client 0's window is the
        // earliest; 0 stays refused.
        let t2 = t0 + Duration::from_secs(2);
        failures.record(ip(MAX_CLIENTS), t2);
        assert_eq!(failures.lock().len(), MAX_CLIENTS);
        assert!(failures.refused_for(ip(0), t2).is_some());
        // A minute after the last of them, every window has finished: they all go.
        failures.record(ip(MAX_CLIENTS + 1), t0 + Duration::from_secs(62));
        assert_eq!(failures.lock().len(), 1);
    }
}
