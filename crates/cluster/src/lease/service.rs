//! The engine's token service over a [`Fetcher`]: answers from leases, fetches in the background.
//!
//! [`LeasedTokenService::request_token`] never waits: it takes tokens from the rule's
//! [lease](super::tokens) (a hot-parameter rule has one lease per argument value, each from its
//! value's window) and, when the lease runs low, starts a fetch on the Tokio runtime the service
//! was started on. A background task refreshes this instance's membership of every rule it asked
//! for, so an average-local rule counts it while it runs, and drops the leases of values not asked
//! for in [`IDLE_VALUE_AFTER`]; [`LeasedTokenService::shutdown`] takes this instance out of the
//! members.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use floodgate_core::cluster::{TokenRequest, TokenResult, TokenService, TokenStatus};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use super::fetcher::{FetchError, Fetcher, Grant};
use super::tokens::{Lease, Taken};
use super::values::ValueLeases;
use crate::protocol::{Param, write_window_key};

/// The most leases one service keeps of each kind: flow rules, and hot-parameter values; a request
/// past them is checked locally.
pub const MAX_LEASES: usize = 10_000;

/// How long a value's lease is kept with nothing asked of it.
pub const IDLE_VALUE_AFTER: Duration = Duration::from_secs(10);

thread_local! {
    /// The window key of the value a request on this thread asks for, written anew per request.
    static WINDOW_KEY: RefCell<String> = const { RefCell::new(String::new()) };
}

/// How a [`LeasedTokenService`] fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseConfig {
    /// How much of its recent demand an instance fetches ahead in one call (default 10 ms worth).
    /// Zero fetches one token at a time: one call per admitted entry.
    pub fetch_ahead: Duration,
    /// After a failed fetch, how long the rule is checked locally before it is fetched again
    /// (default 100 ms).
    pub retry_after: Duration,
    /// How often this instance's memberships are refreshed (default 1 s).
    pub refresh_every: Duration,
}

impl Default for LeaseConfig {
    fn default() -> Self {
        LeaseConfig {
            fetch_ahead: Duration::from_millis(10),
            retry_after: Duration::from_millis(100),
            refresh_every: Duration::from_secs(1),
        }
    }
}

/// What a [`LeasedTokenService`] has done since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseStats {
    /// Entries answered OK from a lease.
    pub granted: u64,
    /// Entries answered BLOCKED because the rule's window was full.
    pub blocked: u64,
    /// Entries answered BLOCKED because the lease was empty while a fetch was on its way.
    pub lease_misses: u64,
    /// Entries answered FAIL (the source had not answered, or failed): checked locally by the
    /// engine.
    pub failed: u64,
    /// Fetches made.
    pub fetches: u64,
    /// Fetches that failed or timed out.
    pub fetch_failures: u64,
    /// Tokens granted by fetches.
    pub tokens_fetched: u64,
    /// Network calls made (fetches, membership refreshes, leaves).
    pub calls: u64,
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
struct Shared<F> {
    fetcher: F,
    config: LeaseConfig,
    /// The flow rules' leases, by flow id.
    leases: ArcSwap<HashMap<i64, Arc<Lease>>>,
    /// The hot-parameter values' leases.
    values: ValueLeases,
    runtime: Handle,
    started: Instant,
    counts: Counts,
}

impl<F: Fetcher> Shared<F> {
    /// The service's clock, ms since it started (from 1: 0 is "never").
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX) + 1
    }

    /// The lease of `request`'s rule or value, made at its first request.
    fn lease(&self, request: &TokenRequest<'_>) -> Result<Arc<Lease>, FetchError> {
        match request.params {
            [] => self.flow_lease(request),
            [value] => WINDOW_KEY.with_borrow_mut(|key| {
                if !write_window_key(value, key) {
                    return Err(FetchError::NotOneValue);
                }
                let lease = self
                    .values
                    .get_or_make(request.flow_id, key, || {
                        Lease::new(request, Param::of(value))
                    })
                    .ok_or(FetchError::TooManyLeases)?;
                lease.note_terms(request);
                Ok(lease)
            }),
            _ => Err(FetchError::NotOneValue),
        }
    }

    /// The lease of `request`'s flow rule, made at its first request.
    fn flow_lease(&self, request: &TokenRequest<'_>) -> Result<Arc<Lease>, FetchError> {
        let flow_id = request.flow_id;
        if let Some(lease) = self.leases.load().get(&flow_id) {
            lease.note_terms(request);
            return Ok(Arc::clone(lease));
        }
        self.leases.rcu(|leases| {
            if leases.contains_key(&flow_id) || leases.len() >= MAX_LEASES {
                return Arc::clone(leases);
            }
            let mut leases = HashMap::clone(leases);
            leases.insert(flow_id, Arc::new(Lease::new(request, None)));
            Arc::new(leases)
        });
        self.leases
            .load()
            .get(&flow_id)
            .cloned()
            .ok_or(FetchError::TooManyLeases)
    }

    /// Drops the leases of values nothing was asked of in the [`IDLE_VALUE_AFTER`] before `now`.
    fn drop_idle_values(&self, now: u64) {
        let idle = u64::try_from(IDLE_VALUE_AFTER.as_millis()).unwrap_or(u64::MAX);
        self.values.retain(|lease| !lease.idle(now, idle));
    }

    /// The distinct flow ids of the rules and values with a lease, in order.
    fn flow_ids(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self.leases.load().keys().copied().collect();
        ids.extend(self.values.flow_ids());
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Answers `request` from `lease`, and starts a fetch when the lease runs low.
    fn answer(self: &Arc<Self>, lease: &Arc<Lease>, request: &TokenRequest<'_>) -> TokenResult {
        let now = self.now_ms();
        let taken = lease.take(request.acquire, now);
        let left = match taken {
            Taken::Granted(left) => Some(left),
            _ => None,
        };
        let retry_after = u64::try_from(self.config.retry_after.as_millis()).unwrap_or(u64::MAX);
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
        let ahead = u64::try_from(self.config.fetch_ahead.as_millis()).unwrap_or(0);
        let started = self.now_ms();
        let want = lease.want(started, ahead, acquire);
        let terms = lease.terms();
        add(&self.counts.fetches, 1);
        let result = self.fetcher.fetch(&terms, lease.value.as_ref(), want).await;
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
                    "a token fetch failed: the rule is checked locally"
                );
            }
        }
        result
    }
}

/// Cluster flow control over the network, as the engine's [`TokenService`]: tokens come from `F`
/// (Redis: [`RedisTokenService`](crate::redis::RedisTokenService); a token server:
/// [`RemoteTokenService`](super::RemoteTokenService)), fetched ahead of demand, and no
/// entry waits for them. Prioritized entries are not lent tokens of the next window; they are
/// counted as others.
#[derive(Debug)]
pub struct LeasedTokenService<F> {
    shared: Arc<Shared<F>>,
    refresh: JoinHandle<()>,
}

impl<F: Fetcher> LeasedTokenService<F> {
    /// Starts the service over `fetcher`, with its fetches and membership refreshes on `runtime`.
    /// It does not wait for the source: until it answers, cluster rules are checked locally.
    pub fn start_with(fetcher: F, config: LeaseConfig, runtime: &Handle) -> Self {
        let shared = Arc::new(Shared {
            fetcher,
            config,
            leases: ArcSwap::default(),
            values: ValueLeases::default(),
            runtime: runtime.clone(),
            started: Instant::now(),
            counts: Counts::default(),
        });
        let refresh = runtime.spawn(refresh_memberships(Arc::downgrade(&shared)));
        LeasedTokenService { shared, refresh }
    }

    /// What tokens are fetched from.
    pub fn fetcher(&self) -> &F {
        &self.shared.fetcher
    }

    /// Fetches tokens for `request`'s rule now and waits for the answer (at most the source's
    /// request timeout): for a warm start, so that the first entries are answered from the source
    /// rather than checked locally.
    pub async fn prefetch(&self, request: &TokenRequest<'_>) -> Result<Grant, FetchError> {
        let lease = self.shared.lease(request)?;
        while !lease.start_fetch() {
            tokio::task::yield_now().await;
        }
        self.shared.clone().fetch(lease, request.acquire).await
    }

    /// The members the source last reported for the rule `flow_id` (this instance included), if it
    /// was asked for.
    pub fn members(&self, flow_id: i64) -> Option<u32> {
        match self.shared.leases.load().get(&flow_id) {
            Some(lease) => Some(lease.members()),
            None => self.shared.values.members(flow_id),
        }
    }

    /// The flow ids of the cluster rules asked for so far (hot-parameter rules while a value of
    /// theirs has a lease), in order.
    pub fn flow_ids(&self) -> Vec<i64> {
        self.shared.flow_ids()
    }

    /// The leases kept now: one per cluster flow rule asked for, one per value of a hot-parameter
    /// rule asked for within [`IDLE_VALUE_AFTER`].
    pub fn leases(&self) -> usize {
        self.shared.leases.load().len() + self.shared.values.len()
    }

    /// What the service has done since it started.
    pub fn stats(&self) -> LeaseStats {
        let counts = &self.shared.counts;
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LeaseStats {
            granted: read(&counts.granted),
            blocked: read(&counts.blocked),
            lease_misses: read(&counts.lease_misses),
            failed: read(&counts.failed),
            fetches: read(&counts.fetches),
            fetch_failures: read(&counts.fetch_failures),
            tokens_fetched: read(&counts.tokens_fetched),
            calls: self.shared.fetcher.calls(),
        }
    }

    /// Stops refreshing memberships and takes this instance out of every rule's members, so that
    /// average-local totals shrink at once rather than after the member time-to-live.
    pub async fn shutdown(self) {
        self.refresh.abort();
        for flow_id in self.shared.flow_ids() {
            if let Err(error) = self.shared.fetcher.leave(flow_id).await {
                tracing::warn!(target: "floodgate::cluster", flow_id, %error, "leaving a rule's members failed");
            }
        }
    }
}

impl<F> Drop for LeasedTokenService<F> {
    fn drop(&mut self) {
        self.refresh.abort();
    }
}

/// A hot-parameter request must name one value (the engine asks for each value apart); one that
/// names several, or none the engine counts, is answered FAIL and checked locally.
impl<F: Fetcher> TokenService for LeasedTokenService<F> {
    fn request_token(&self, request: &TokenRequest<'_>) -> TokenResult {
        let shared = &self.shared;
        if request.params.is_empty() {
            // The lease is borrowed from the map, not cloned: no shared count is written per entry.
            let leases = shared.leases.load();
            if let Some(lease) = leases.get(&request.flow_id) {
                lease.note_terms(request);
                return shared.answer(lease, request);
            }
        }
        match shared.lease(request) {
            Ok(lease) => shared.answer(&lease, request),
            Err(_) => {
                add(&shared.counts.failed, 1);
                TokenResult::of(TokenStatus::Fail)
            }
        }
    }
}

/// Refreshes this instance's membership of every rule it asked for, and drops idle values' leases,
/// as often as the config says, until the service is dropped.
async fn refresh_memberships<F: Fetcher>(shared: std::sync::Weak<Shared<F>>) {
    let every = match shared.upgrade() {
        Some(shared) => shared.config.refresh_every,
        None => return,
    };
    let mut ticks = tokio::time::interval(every.max(Duration::from_millis(1)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        shared.drop_idle_values(shared.now_ms());
        for flow_id in shared.flow_ids() {
            if let Err(error) = shared.fetcher.refresh(flow_id).await {
                tracing::debug!(target: "floodgate::cluster", flow_id, %error, "refreshing a membership failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use floodgate_core::ParamValue;

    use super::*;
    use crate::lease::WindowTerms;

    /// Grants every fetch whole.
    #[derive(Debug)]
    struct Granting;

    impl Fetcher for Granting {
        async fn fetch(
            &self,
            _terms: &WindowTerms,
            _value: Option<&Param>,
            want: u32,
        ) -> Result<Grant, FetchError> {
            Ok(Grant {
                granted: want,
                remaining: 0,
                free_in_ms: 0,
                members: 1,
            })
        }

        fn calls(&self) -> u64 {
            0
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_leases_of_idle_values_are_dropped_and_the_rest_kept() {
        let service =
            LeasedTokenService::start_with(Granting, LeaseConfig::default(), &Handle::current());
        let (alice, bob) = ([ParamValue::from("alice")], [ParamValue::from("bob")]);
        let flow = TokenRequest::new(7, 1, "r", 100.0);
        let mut asks_alice = TokenRequest::new(8, 1, "r", 100.0);
        asks_alice.params = &alice;
        let mut asks_bob = asks_alice.clone();
        asks_bob.params = &bob;
        for request in [&flow, &asks_alice, &asks_bob] {
            service.prefetch(request).await.unwrap();
        }
        assert_eq!(service.leases(), 3);
        assert_eq!(
            service.request_token(&asks_alice).status,
            TokenStatus::Ok,
            "alice is asked for again"
        );
        let idle = u64::try_from(IDLE_VALUE_AFTER.as_millis()).unwrap();
        service
            .shared
            .drop_idle_values(service.shared.now_ms() + idle);
        assert_eq!(service.leases(), 2, "bob's lease is dropped");
        assert_eq!(service.flow_ids(), [7, 8]);
        // A value asked for again gets a lease again (checked locally until it is fetched).
        assert_eq!(service.request_token(&asks_bob).status, TokenStatus::Fail);
        assert_eq!(service.leases(), 3);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_request_with_several_values_is_checked_locally() {
        let service =
            LeasedTokenService::start_with(Granting, LeaseConfig::default(), &Handle::current());
        let values = [ParamValue::from("a"), ParamValue::from("b")];
        let mut request = TokenRequest::new(8, 1, "r", 100.0);
        request.params = &values;
        assert_eq!(service.request_token(&request).status, TokenStatus::Fail);
        assert!(matches!(
            service.prefetch(&request).await,
            Err(FetchError::NotOneValue)
        ));
        assert_eq!((service.leases(), service.stats().failed), (0, 1));
    }
}
