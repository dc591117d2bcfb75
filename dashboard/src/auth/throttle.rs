//! Login throttling, in memory: each sign-in attempt counts against its username and its client
//! address, and once a key has had too many attempts in a window, further attempts are refused
//! until the window ends — before the password is checked, so a refused attempt changes nothing.
//!
//! An attempt is counted when it starts (so parallel attempts cannot all slip past the check); a
//! successful one takes its count back and clears its username's. A key's window starts at its
//! first counted attempt and lasts [`WINDOW_MS`]. At most [`MAX_KEYS`] keys are kept: when full,
//! the expired ones go, then the tenth whose windows started first.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

/// How long a key's failures are remembered: 15 minutes.
pub const WINDOW_MS: i64 = 15 * 60 * 1000;

/// The most failed attempts per username in a window.
pub const USERNAME_LIMIT: u32 = 5;

/// The most failed attempts per client address in a window.
pub const ADDRESS_LIMIT: u32 = 20;

/// The most keys kept.
pub const MAX_KEYS: usize = 10_000;

/// What an attempt counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ThrottleKey {
    /// A username (lowercased, at most 64 characters).
    Username(String),
    /// A client address, or `None` when the connection's address is unknown (all such attempts
    /// share one key).
    Address(Option<IpAddr>),
}

impl ThrottleKey {
    /// The key of `username`.
    pub fn username(username: &str) -> ThrottleKey {
        ThrottleKey::Username(username.chars().take(64).collect::<String>().to_lowercase())
    }

    fn limit(&self) -> u32 {
        match self {
            ThrottleKey::Username(_) => USERNAME_LIMIT,
            ThrottleKey::Address(_) => ADDRESS_LIMIT,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    started_at: i64,
    attempts: u32,
}

impl Window {
    fn expired(&self, now: i64) -> bool {
        now.saturating_sub(self.started_at) >= WINDOW_MS
    }
}

/// The attempts of every key.
#[derive(Debug, Default)]
pub struct LoginThrottle {
    windows: Mutex<HashMap<ThrottleKey, Window>>,
}

/// An attempt the throttle let through; give it back with [`LoginThrottle::succeeded`].
#[derive(Debug)]
#[must_use]
pub struct Attempt {
    keys: [ThrottleKey; 2],
}

impl LoginThrottle {
    /// Counts an attempt against `username` and `address` at `now`, or refuses it with the seconds
    /// until it may be tried again (counting nothing).
    pub fn begin(&self, username: &str, address: Option<IpAddr>, now: i64) -> Result<Attempt, u64> {
        let keys = [
            ThrottleKey::username(username),
            ThrottleKey::Address(address),
        ];
        let mut windows = self.lock();
        let mut retry_after_ms = 0i64;
        for key in &keys {
            if let Some(w) = windows.get(key)
                && !w.expired(now)
                && w.attempts >= key.limit()
            {
                retry_after_ms = retry_after_ms.max(w.started_at + WINDOW_MS - now);
            }
        }
        if retry_after_ms > 0 {
            // Whole seconds, rounded up, at least one.
            return Err(u64::try_from((retry_after_ms + 999) / 1000)
                .unwrap_or(1)
                .max(1));
        }
        for key in &keys {
            match windows.get_mut(key) {
                Some(w) if !w.expired(now) => w.attempts += 1,
                Some(w) => {
                    *w = Window {
                        started_at: now,
                        attempts: 1,
                    };
                }
                None => {
                    make_room(&mut windows, now);
                    windows.insert(
                        key.clone(),
                        Window {
                            started_at: now,
                            attempts: 1,
                        },
                    );
                }
            }
        }
        Ok(Attempt { keys })
    }

    /// The attempt succeeded: its username's count is cleared and its address's taken back.
    pub fn succeeded(&self, attempt: Attempt) {
        let mut windows = self.lock();
        let [username, address] = attempt.keys;
        windows.remove(&username);
        if let Some(w) = windows.get_mut(&address) {
            w.attempts = w.attempts.saturating_sub(1);
        }
    }

    /// The number of keys kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no key is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ThrottleKey, Window>> {
        // The map stays consistent even if a holder panicked: every change is a single step.
        self.windows.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Makes room for one more key: drops the expired ones and, while still full, the tenth of the keys
/// whose windows started first (so that a flood of new keys costs one sort per thousand).
fn make_room(windows: &mut HashMap<ThrottleKey, Window>, now: i64) {
    if windows.len() < MAX_KEYS {
        return;
    }
    windows.retain(|_, w| !w.expired(now));
    if windows.len() < MAX_KEYS {
        return;
    }
    let mut by_age: Vec<(i64, ThrottleKey)> = windows
        .iter()
        .map(|(k, w)| (w.started_at, k.clone()))
        .collect();
    by_age.sort_unstable_by_key(|(started_at, _)| *started_at);
    for (_, key) in by_age.into_iter().take(MAX_KEYS / 10) {
        windows.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_700_000_000_000;

    fn ip(s: &str) -> Option<IpAddr> {
        s.parse().ok()
    }

    #[test]
    fn five_failures_per_username_then_refused_until_the_window_ends() {
        let t = LoginThrottle::default();
        for i in 0..5 {
            assert!(t.begin("alice", ip("10.0.0.1"), T0 + i).is_ok());
        }
        let retry = t.begin("Alice", ip("10.0.0.2"), T0 + 10).unwrap_err();
        assert_eq!(retry, 900);
        // A refused attempt is not counted: the window still ends at T0 + 15 min.
        assert!(
            t.begin("alice", ip("10.0.0.2"), T0 + WINDOW_MS - 1)
                .is_err()
        );
        assert!(t.begin("alice", ip("10.0.0.2"), T0 + WINDOW_MS).is_ok());
        // Other usernames were never affected.
        assert!(t.begin("bob", ip("10.0.0.1"), T0 + 20).is_ok());
    }

    #[test]
    fn twenty_failures_per_address() {
        let t = LoginThrottle::default();
        for i in 0..20 {
            assert!(t.begin(&format!("user{i}"), ip("10.0.0.1"), T0).is_ok());
        }
        assert!(t.begin("fresh", ip("10.0.0.1"), T0).is_err());
        assert!(t.begin("fresh", ip("10.0.0.9"), T0).is_ok());
        // Unknown addresses share one key.
        for i in 0..20 {
            assert!(t.begin(&format!("u{i}"), None, T0).is_ok());
        }
        assert!(t.begin("other", None, T0).is_err());
    }

    #[test]
    fn success_clears_the_username_and_gives_back_the_address_attempt() {
        let t = LoginThrottle::default();
        for _ in 0..4 {
            let _ = t.begin("alice", ip("10.0.0.1"), T0).unwrap();
        }
        let ok = t.begin("alice", ip("10.0.0.1"), T0).unwrap();
        t.succeeded(ok);
        for _ in 0..5 {
            let _ = t.begin("alice", ip("10.0.0.1"), T0).unwrap();
        }
        assert!(t.begin("alice", ip("10.0.0.1"), T0).is_err());
    }

    #[test]
    fn the_map_is_bounded() {
        let t = LoginThrottle::default();
        for i in 0..(MAX_KEYS + 100) {
            let address = IpAddr::from([10, 0, (i >> 8) as u8, i as u8]);
            let _ = t.begin(&format!("u{i}"), Some(address), T0 + i as i64);
        }
        assert!(t.len() <= MAX_KEYS);
        // The newest keys are kept.
        assert!(
            t.lock()
                .contains_key(&ThrottleKey::username(&format!("u{}", MAX_KEYS + 99)))
        );
    }
}
