//! One cluster rule's tokens (or one argument value's of a hot-parameter rule) held by this
//! instance: fetched from their source (Redis, a token server) ahead of demand, handed out from
//! memory.
//!
//! A lease holds tokens the source granted and counted in its window. They are handed out until they
//! run out or until one bucket of the rule's window has passed since the grant (so a token is used
//! close to the time the source counted it). When what is left falls below half of the last fetch, the
//! next fetch starts; it asks for the demand of the last fetch period scaled to the fetch-ahead
//! time, at least one token and at most one bucket's share of the threshold. When the source grants
//! fewer tokens than asked, the window is full: the rule blocks until the oldest counted bucket
//! leaves it.
//!
//! What an entry is answered when the lease has no token:
//!
//! - the source has not answered yet for this rule, or not within the window's length, or the last
//!   call failed: the service cannot answer (FAIL), and the rule falls back to its local check;
//! - the window is full: BLOCKED;
//! - otherwise a fetch is on its way, and the entry is BLOCKED (counted as a lease miss): an
//!   entry is never made to wait for the network.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};

use floodgate_core::cluster::{ThresholdType, TokenRequest};

use super::fetcher::{Grant, WindowTerms};
use crate::protocol::Param;

/// What a lease says about one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Taken {
    /// Granted; this many tokens are left in the lease.
    Granted(i64),
    /// The window is full until this time (the service's clock, ms).
    Full(u64),
    /// A fetch is on its way.
    Miss,
    /// The source cannot answer for this rule now.
    Unknown,
}

/// The rule's tokens held by this instance. Times are the service's clock, ms (0 is never).
#[derive(Debug)]
pub(crate) struct Lease {
    pub(crate) flow_id: i64,
    /// For a hot-parameter rule, the argument value whose window the tokens come from.
    pub(crate) value: Option<Param>,
    count_bits: AtomicU64,
    global: AtomicBool,
    sample_count: AtomicU32,
    window_interval_ms: AtomicU32,
    /// Tokens left.
    tokens: AtomicI64,
    /// The tokens may be handed out until then.
    usable_until: AtomicU64,
    /// The window was full when the source last answered; it frees tokens then.
    full_until: AtomicU64,
    /// When the source last answered.
    answered_at: AtomicU64,
    /// When a call last failed (0 after an answer).
    failed_at: AtomicU64,
    /// A fetch is on its way.
    fetching: AtomicBool,
    /// Tokens asked for since the last fetch started.
    demand: AtomicU64,
    /// When the last fetch started.
    fetched_at: AtomicU64,
    /// Tokens the last fetch asked for.
    last_want: AtomicU32,
    /// The rule's members when the source last answered.
    members: AtomicU32,
}

impl Lease {
    /// The lease of `request`'s rule, or with `value` of that value of it.
    pub(crate) fn new(request: &TokenRequest<'_>, value: Option<Param>) -> Self {
        let lease = Lease {
            flow_id: request.flow_id,
            value,
            count_bits: AtomicU64::new(0),
            global: AtomicBool::new(false),
            sample_count: AtomicU32::new(1),
            window_interval_ms: AtomicU32::new(1000),
            tokens: AtomicI64::new(0),
            usable_until: AtomicU64::new(0),
            full_until: AtomicU64::new(0),
            answered_at: AtomicU64::new(0),
            failed_at: AtomicU64::new(0),
            fetching: AtomicBool::new(false),
            demand: AtomicU64::new(0),
            fetched_at: AtomicU64::new(0),
            last_want: AtomicU32::new(1),
            members: AtomicU32::new(1),
        };
        lease.note_terms(request);
        lease
    }

    /// Keeps the rule's terms as the engine last asked with them (a rule can change while it runs).
    pub(crate) fn note_terms(&self, request: &TokenRequest<'_>) {
        let bits = request.count.to_bits();
        if self.count_bits.load(Ordering::Relaxed) != bits {
            self.count_bits.store(bits, Ordering::Relaxed);
        }
        let global = request.threshold_type == ThresholdType::Global;
        if self.global.load(Ordering::Relaxed) != global {
            self.global.store(global, Ordering::Relaxed);
        }
        if self.sample_count.load(Ordering::Relaxed) != request.sample_count {
            self.sample_count
                .store(request.sample_count, Ordering::Relaxed);
        }
        if self.window_interval_ms.load(Ordering::Relaxed) != request.window_interval_ms {
            self.window_interval_ms
                .store(request.window_interval_ms, Ordering::Relaxed);
        }
    }

    /// The rule's window as last asked with.
    pub(crate) fn terms(&self) -> WindowTerms {
        WindowTerms {
            flow_id: self.flow_id,
            count: f64::from_bits(self.count_bits.load(Ordering::Relaxed)),
            threshold_type: if self.global.load(Ordering::Relaxed) {
                ThresholdType::Global
            } else {
                ThresholdType::AvgLocal
            },
            sample_count: self.sample_count.load(Ordering::Relaxed).max(1),
            window_interval_ms: self.window_interval_ms.load(Ordering::Relaxed).max(1),
        }
    }

    /// Takes `acquire` tokens at `now`, or says why not.
    pub(crate) fn take(&self, acquire: u32, now: u64) -> Taken {
        let acquire = i64::from(acquire);
        self.demand.fetch_add(acquire as u64, Ordering::Relaxed);
        if now < self.usable_until.load(Ordering::Acquire) {
            let mut tokens = self.tokens.load(Ordering::Relaxed);
            while tokens >= acquire {
                match self.tokens.compare_exchange_weak(
                    tokens,
                    tokens - acquire,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Taken::Granted(tokens - acquire),
                    Err(now_held) => tokens = now_held,
                }
            }
        }
        let answered = self.answered_at.load(Ordering::Relaxed);
        let stale_after = u64::from(self.window_interval_ms.load(Ordering::Relaxed)).max(1000);
        if answered == 0
            || self.failed_at.load(Ordering::Relaxed) != 0
            || now.saturating_sub(answered) > stale_after
        {
            return Taken::Unknown;
        }
        let full_until = self.full_until.load(Ordering::Relaxed);
        if now < full_until {
            return Taken::Full(full_until);
        }
        Taken::Miss
    }

    /// Whether a fetch should start at `now`, given what a take left (`None`: it got nothing).
    pub(crate) fn wants_fetch(&self, left: Option<i64>, now: u64, retry_after_ms: u64) -> bool {
        if self.fetching.load(Ordering::Relaxed) {
            return false;
        }
        let failed = self.failed_at.load(Ordering::Relaxed);
        if failed != 0 && now.saturating_sub(failed) < retry_after_ms {
            return false;
        }
        match left {
            Some(left) => left < i64::from(self.last_want.load(Ordering::Relaxed).div_ceil(2)),
            None => now >= self.full_until.load(Ordering::Relaxed),
        }
    }

    /// Marks a fetch started; false when one already is.
    pub(crate) fn start_fetch(&self) -> bool {
        !self.fetching.swap(true, Ordering::Acquire)
    }

    /// How many tokens a fetch starting at `now` asks for: the demand since the last fetch, scaled
    /// from its period to `ahead_ms`, within one token and one bucket's share of the threshold.
    pub(crate) fn want(&self, now: u64, ahead_ms: u64, acquire: u32) -> u32 {
        let demand = self.demand.swap(0, Ordering::Relaxed);
        let since = now
            .saturating_sub(self.fetched_at.swap(now, Ordering::Relaxed))
            .max(1);
        let terms = self.terms();
        let threshold = match terms.threshold_type {
            ThresholdType::Global => terms.count,
            ThresholdType::AvgLocal => {
                terms.count * f64::from(self.members.load(Ordering::Relaxed).max(1))
            }
        };
        let bucket_share = (threshold / f64::from(terms.sample_count)).floor().max(1.0);
        let ahead = (demand as f64 * ahead_ms as f64 / since as f64).ceil();
        let want = ahead.clamp(1.0, bucket_share.max(1.0)) as u32;
        let want = want.max(acquire);
        self.last_want.store(want, Ordering::Relaxed);
        want
    }

    /// Adds what the source granted at `now` for a fetch that asked for `want`.
    pub(crate) fn granted(&self, grant: &Grant, want: u32, now: u64, bucket_ms: u64) {
        let granted = i64::from(grant.granted);
        if now >= self.usable_until.load(Ordering::Relaxed) {
            self.tokens.store(granted, Ordering::Relaxed);
        } else {
            self.tokens.fetch_add(granted, Ordering::Relaxed);
        }
        if grant.granted > 0 {
            self.usable_until.store(now + bucket_ms, Ordering::Release);
        }
        let full_until = if grant.granted < want {
            now + grant.free_in_ms.max(1)
        } else {
            0
        };
        self.full_until.store(full_until, Ordering::Relaxed);
        self.members.store(grant.members, Ordering::Relaxed);
        self.answered_at.store(now, Ordering::Relaxed);
        self.failed_at.store(0, Ordering::Relaxed);
        self.fetching.store(false, Ordering::Release);
    }

    /// Records a failed fetch at `now`.
    pub(crate) fn failed(&self, now: u64) {
        self.failed_at.store(now.max(1), Ordering::Relaxed);
        self.fetching.store(false, Ordering::Release);
    }

    /// The rule's members when the source last answered.
    pub(crate) fn members(&self) -> u32 {
        self.members.load(Ordering::Relaxed)
    }

    /// Whether nothing was asked of the lease since its last fetch started, and that was
    /// `idle_ms` or more before `now`.
    pub(crate) fn idle(&self, now: u64, idle_ms: u64) -> bool {
        !self.fetching.load(Ordering::Relaxed)
            && self.demand.load(Ordering::Relaxed) == 0
            && now.saturating_sub(self.fetched_at.load(Ordering::Relaxed)) >= idle_ms
    }
}

#[cfg(test)]
mod tests {
    use floodgate_core::cluster::ThresholdType;

    use super::*;

    fn request(count: f64) -> TokenRequest<'static> {
        let mut request = TokenRequest::new(7, 1, "r", count);
        request.threshold_type = ThresholdType::Global;
        request.sample_count = 10;
        request.window_interval_ms = 1000;
        request
    }

    fn grant(granted: u32, free_in_ms: u64) -> Grant {
        Grant {
            granted,
            remaining: 0,
            free_in_ms,
            members: 1,
        }
    }

    #[test]
    fn a_lease_that_never_heard_from_redis_cannot_answer() {
        let lease = Lease::new(&request(100.0), None);
        assert_eq!(lease.take(1, 10), Taken::Unknown);
        assert!(lease.wants_fetch(None, 10, 100));
    }

    #[test]
    fn granted_tokens_are_handed_out_within_one_bucket_then_a_fetch_is_a_miss() {
        let lease = Lease::new(&request(100.0), None);
        assert!(lease.start_fetch());
        assert!(!lease.start_fetch(), "one fetch at a time");
        lease.granted(&grant(3, 0), 3, 10, 100);
        assert_eq!(lease.take(1, 20), Taken::Granted(2));
        assert_eq!(lease.take(2, 20), Taken::Granted(0));
        assert_eq!(lease.take(1, 20), Taken::Miss);
        lease.granted(&grant(5, 0), 5, 30, 100);
        // One bucket (100 ms) after the grant the tokens are no longer handed out.
        assert_eq!(lease.take(1, 129), Taken::Granted(4));
        assert_eq!(lease.take(1, 130), Taken::Miss);
    }

    #[test]
    fn a_full_window_blocks_until_its_oldest_bucket_leaves() {
        let lease = Lease::new(&request(100.0), None);
        lease.granted(&grant(0, 400), 10, 100, 100);
        assert_eq!(lease.take(1, 200), Taken::Full(500));
        assert!(!lease.wants_fetch(None, 200, 100));
        assert_eq!(lease.take(1, 500), Taken::Miss);
        assert!(lease.wants_fetch(None, 500, 100));
    }

    #[test]
    fn a_failed_fetch_falls_back_and_is_retried_after_the_retry_time() {
        let lease = Lease::new(&request(100.0), None);
        lease.granted(&grant(1, 0), 1, 10, 100);
        lease.failed(20);
        assert_eq!(
            lease.take(1, 21),
            Taken::Granted(0),
            "granted tokens stay usable"
        );
        assert_eq!(lease.take(1, 22), Taken::Unknown);
        assert!(!lease.wants_fetch(None, 50, 100));
        assert!(lease.wants_fetch(None, 120, 100));
    }

    #[test]
    fn a_fetch_asks_for_the_recent_demand_within_a_bucket_share() {
        let lease = Lease::new(&request(1000.0), None);
        lease.want(0, 10, 1);
        for _ in 0..50 {
            lease.take(1, 5);
        }
        // 50 tokens in 10 ms → 50 for the next 10 ms.
        assert_eq!(lease.want(10, 10, 1), 50);
        for _ in 0..5000 {
            lease.take(1, 15);
        }
        // At most one bucket's share: 1000 / 10.
        assert_eq!(lease.want(20, 10, 1), 100);
        // Nothing asked: one token.
        assert_eq!(lease.want(40, 10, 1), 1);
        // Fetching nothing ahead asks for what the entry needs.
        assert_eq!(lease.want(50, 0, 3), 3);
    }

    #[test]
    fn a_lease_is_idle_once_nothing_was_asked_since_a_fetch_long_enough_ago() {
        let lease = Lease::new(&TokenRequest::new(7, 1, "r", 10.0), None);
        lease.take(1, 5);
        lease.want(10, 10, 1);
        assert!(!lease.idle(500, 1000), "fetched 490 ms ago");
        assert!(lease.idle(1010, 1000));
        lease.take(1, 1010);
        assert!(!lease.idle(5000, 1000), "asked since the fetch");
    }
}
