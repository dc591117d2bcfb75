//! The engine's token service on Redis: a [`LeasedTokenService`] fetching from a [`RedisCounter`].

use tokio::runtime::Handle;

use super::config::{RedisConfig, RedisConfigError};
use super::counter::RedisCounter;
use crate::lease::{LeaseConfig, LeasedTokenService};

/// Cluster flow control on Redis, as the engine's token service.
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
pub type RedisTokenService = LeasedTokenService<RedisCounter>;

impl LeasedTokenService<RedisCounter> {
    /// Starts the service for `config`, with its fetches and membership refreshes on `runtime`.
    /// It does not wait for Redis: until Redis answers, cluster rules are checked locally.
    pub fn start(config: RedisConfig, runtime: &Handle) -> Result<Self, RedisConfigError> {
        let lease = LeaseConfig {
            fetch_ahead: config.fetch_ahead,
            retry_after: config.retry_after,
            refresh_every: config.member_ttl / 3,
        };
        let counter = {
            let _entered = runtime.enter();
            RedisCounter::new(config)?
        };
        Ok(Self::start_with(counter, lease, runtime))
    }

    /// The configuration.
    pub fn config(&self) -> &RedisConfig {
        self.fetcher().config()
    }
}
