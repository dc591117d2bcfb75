//! The engine's token service on Redis: answers from leases, fetches in the background.
//!
//! [`RedisTokenService::request_token`] never waits: it takes tokens from the rule's
//! [lease](super::lease) and, when the lease runs low, starts a fetch on the Tokio runtime the
//! service was started on. A background task refreshes this instance's membership of every rule it
//! asked for, so an average-local rule counts it while it runs, and [`RedisTokenService::shutdown`]
//! takes it out.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use floodgate_core::cluster::{TokenRequest, TokenResult, TokenService, TokenStatus};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use super::config::{RedisConfig, RedisConfigError};
use super::counter::{FetchError, Grant, RedisCounter};
use super::lease::{Lease, Taken};

/// The most cluster rules one service keeps leases for; a rule past them is checked locally.
pub const MAX_RULES: usize = 10_000;

/// What a [`RedisTokenService`] has done since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisStats {
    /// Entries answered OK from a lease.
    pub granted: u64,
    /// Entries answered BLOCKED because the rule's window was full.
    pub blocked: u64,
    /// Entries answered BLOCKED because the lease was empty while a fetch was on its way.
    pub lease_misses: u64,
    /// Entries answered FAIL (Redis had not answered, or failed): checked locally by the engine.
    pub failed: u64,
    /// Fetches made.
    pub fetches: u64,
    /// Fetches that failed or timed out.
    pub fetch_failures: u64,
    /// Tokens Redis granted.
    pub tokens_fetched: u64,
    /// Redis calls made (fetches, membership refreshes, leaves).
    pub commands: u64,
}

#[derive(Debug, Default)]
struct Counts {
    granted: AtomicU64,
    blocked: AtomicU64,
    lease_misses: AtomicU64,
    failed: AtomicU64,
    fetches: AtomicU64,
    fetch_failures: AtomicU64,
    tokens_fetched: AtomicU64,
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

#[derive(Debug)]
struct Shared {
    counter: RedisCounter,
    leases: ArcSwap<HashMap<i64, Arc<Lease>>>,
    runtime: Handle,
    started: Instant,
    counts: Counts,
}

impl Shared {
    /// The service's clock, ms since it started (from 1: 0 is "never").
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX) + 1
    }

    /// The lease of `request`'s rule, made at its first request; `None` past [`MAX_RULES`].
    fn lease(&self, request: &TokenRequest<'_>) -> Option<Arc<Lease>> {
        if let Some(lease) = self.leases.load().get(&request.flow_id) {
            lease.note_terms(request);
            return Some(Arc::clone(lease));
        }
        self.leases.rcu(|leases| {
            if leases.contains_key(&request.flow_id) || leases.len() >= MAX_RULES {
                return Arc::clone(leases);
            }
            let mut leases = HashMap::clone(leases);
            leases.insert(request.flow_id, Arc::new(Lease::new(request)));
            Arc::new(leases)
        });
        self.leases.load().get(&request.flow_id).cloned()
    }

    /// Answers `request` from `lease`, and starts a fetch when the lease runs low.
    fn answer(self: &Arc<Self>, lease: &Arc<Lease>, request: &TokenRequest<'_>) -> TokenResult {
        let now = self.now_ms();
        let taken = lease.take(request.acquire, now);
        let left = match taken {
            Taken::Granted(left) => Some(left),
            _ => None,
        };
        let retry_after =
            u64::try_from(self.counter.config().retry_after.as_millis()).unwrap_or(u64::MAX);
        if lease.wants_fetch(left, now, retry_after) && lease.start_fetch() {
            let (fetcher, lease, acquire) = (Arc::clone(self), Arc::clone(lease), request.acquire);
            self.runtime.spawn(async move {
                // A failure is recorded in the lease (the rule is checked locally until a retry).
                let _ = fetcher.fetch(lease, acquire).await;
            });
        }
        let counts = &self.counts;
        match taken {
            Taken::Granted(left) => {
                add(&counts.granted, 1);
                TokenResult {
                    status: TokenStatus::Ok,
                    remaining: i32::try_from(left).unwrap_or(i32::MAX),
                    wait_ms: 0,
                }
            }
            Taken::Full(until) => {
                add(&counts.blocked, 1);
                TokenResult {
                    status: TokenStatus::Blocked,
                    remaining: 0,
                    wait_ms: i32::try_from(until - now).unwrap_or(i32::MAX),
                }
            }
            Taken::Miss => {
                add(&counts.lease_misses, 1);
                TokenResult::of(TokenStatus::Blocked)
            }
            Taken::Unknown => {
                add(&counts.failed, 1);
                TokenResult::of(TokenStatus::Fail)
            }
        }
    }

    /// Fetches tokens for `lease` and adds them to it.
    async fn fetch(self: Arc<Self>, lease: Arc<Lease>, acquire: u32) -> Result<Grant, FetchError> {
        let ahead = u64::try_from(self.counter.config().fetch_ahead.as_millis()).unwrap_or(0);
        let started = self.now_ms();
        let want = lease.want(started, ahead, acquire);
        let terms = lease.terms();
        add(&self.counts.fetches, 1);
        let result = self.counter.acquire(&terms, want).await;
        let now = self.now_ms();
        match &result {
            Ok(grant) => {
                add(&self.counts.tokens_fetched, u64::from(grant.granted));
                lease.granted(grant, want, now, terms.bucket_ms());
            }
            Err(error) => {
                add(&self.counts.fetch_failures, 1);
                lease.failed(now);
                tracing::debug!(
                    target: "floodgate::cluster",
                    flow_id = lease.flow_id,
                    %error,
                    "a token fetch from Redis failed: the rule is checked locally"
                );
            }
        }
        result
    }
}

/// Cluster flow control on Redis, as the engine's [`TokenService`].
///
/// Every instance of an application that shares the Redis (and the key prefix) shares each cluster
/// rule's window, keyed by the rule's `flowId`: a GLOBAL rule admits its count across them all, an
/// AVG_LOCAL rule its count times the instances that ask for it. Prioritized entries are not lent
/// tokens of the next window (a Redis window has no future buckets); they are counted as others.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use floodgate_cluster::redis::{RedisConfig, RedisTokenService};
/// use floodgate_core::Floodgate;
///
/// let service = RedisTokenService::start(
///     RedisConfig::new("redis://127.0.0.1:6379").instance("orders-1"),
///     &tokio::runtime::Handle::current(),
/// )?;
/// let floodgate = Floodgate::builder().token_service(service).build();
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct RedisTokenService {
    shared: Arc<Shared>,
    heartbeat: JoinHandle<()>,
}

impl RedisTokenService {
    /// Starts the service for `config`, with its fetches and membership refreshes on `runtime`.
    /// It does not wait for Redis: until Redis answers, cluster rules are checked locally.
    pub fn start(config: RedisConfig, runtime: &Handle) -> Result<Self, RedisConfigError> {
        let counter = {
            let _entered = runtime.enter();
            RedisCounter::new(config)?
        };
        let shared = Arc::new(Shared {
            counter,
            leases: ArcSwap::default(),
            runtime: runtime.clone(),
            started: Instant::now(),
            counts: Counts::default(),
        });
        let heartbeat = runtime.spawn(refresh_memberships(Arc::downgrade(&shared)));
        Ok(RedisTokenService { shared, heartbeat })
    }

    /// The configuration.
    pub fn config(&self) -> &RedisConfig {
        self.shared.counter.config()
    }

    /// Fetches tokens for `request`'s rule now and waits for Redis's answer (at most the request
    /// timeout): for a warm start, so that the first entries are answered from Redis rather than
    /// checked locally.
    pub async fn prefetch(&self, request: &TokenRequest<'_>) -> Result<Grant, FetchError> {
        let Some(lease) = self.shared.lease(request) else {
            return Err(FetchError::TooManyRules);
        };
        while !lease.start_fetch() {
            tokio::task::yield_now().await;
        }
        self.shared.clone().fetch(lease, request.acquire).await
    }

    /// The members Redis last reported for the rule `flow_id` (this instance included), if it was
    /// asked for.
    pub fn members(&self, flow_id: i64) -> Option<u32> {
        self.shared.leases.load().get(&flow_id).map(|l| l.members())
    }

    /// What the service has done since it started.
    pub fn stats(&self) -> RedisStats {
        let counts = &self.shared.counts;
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        RedisStats {
            granted: read(&counts.granted),
            blocked: read(&counts.blocked),
            lease_misses: read(&counts.lease_misses),
            failed: read(&counts.failed),
            fetches: read(&counts.fetches),
            fetch_failures: read(&counts.fetch_failures),
            tokens_fetched: read(&counts.tokens_fetched),
            commands: self.shared.counter.commands(),
        }
    }

    /// Stops refreshing memberships and takes this instance out of every rule's members, so that
    /// average-local totals shrink at once rather than after the member time-to-live.
    pub async fn shutdown(self) {
        self.heartbeat.abort();
        let leases = self.shared.leases.load_full();
        for flow_id in leases.keys() {
            if let Err(error) = self.shared.counter.leave(*flow_id).await {
                tracing::warn!(target: "floodgate::cluster", flow_id, %error, "leaving a rule's members failed");
            }
        }
    }
}

impl Drop for RedisTokenService {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

impl TokenService for RedisTokenService {
    fn request_token(&self, request: &TokenRequest<'_>) -> TokenResult {
        let shared = &self.shared;
        // The lease is borrowed from the map, not cloned: no shared count is written per entry.
        let leases = shared.leases.load();
        if let Some(lease) = leases.get(&request.flow_id) {
            lease.note_terms(request);
            return shared.answer(lease, request);
        }
        drop(leases);
        match shared.lease(request) {
            Some(lease) => shared.answer(&lease, request),
            None => {
                add(&shared.counts.failed, 1);
                TokenResult::of(TokenStatus::Fail)
            }
        }
    }
}

/// Refreshes this instance's membership of every rule it asked for, every third of the member
/// time-to-live, until the service is dropped.
async fn refresh_memberships(shared: std::sync::Weak<Shared>) {
    let every = match shared.upgrade() {
        Some(shared) => shared.counter.config().member_ttl / 3,
        None => return,
    };
    let mut ticks = tokio::time::interval(every.max(Duration::from_millis(1)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let leases = shared.leases.load_full();
        for flow_id in leases.keys() {
            if let Err(error) = shared.counter.heartbeat(*flow_id).await {
                tracing::debug!(target: "floodgate::cluster", flow_id, %error, "refreshing a membership failed");
            }
        }
    }
}
