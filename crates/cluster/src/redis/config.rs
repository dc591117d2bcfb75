//! Where the Redis is and how an instance talks to it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use thiserror::Error;

/// How an instance counts its cluster rules in Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisConfig {
    /// `redis://` (or `rediss://`) addresses: one server, or the seed nodes of a Redis Cluster.
    pub nodes: Vec<String>,
    /// Whether `nodes` are a Redis Cluster's (commands are routed by key slot).
    pub cluster: bool,
    /// The start of every key Floodgate writes (default `floodgate`).
    pub key_prefix: String,
    /// This instance's name among a rule's members (an average-local rule's total is its count times
    /// the members). By default the process id and the start time.
    pub instance: String,
    /// Connections to a single server, used in turn (default 2). A cluster connection keeps one per
    /// node.
    pub pool_size: usize,
    /// How long one Redis call may take before it counts as failed (default 20 ms, Sentinel's
    /// request timeout).
    pub request_timeout: Duration,
    /// How long connecting may take (default 1 s).
    pub connect_timeout: Duration,
    /// How long a member counts after it was last seen (default 3 s); members are refreshed every
    /// third of it.
    pub member_ttl: Duration,
    /// How much of its recent demand an instance fetches ahead in one call (default 10 ms worth).
    /// Zero fetches one token at a time: one Redis call per admitted entry.
    pub fetch_ahead: Duration,
    /// After a failed call, how long the rule is checked locally before Redis is asked again
    /// (default 100 ms).
    pub retry_after: Duration,
}

impl RedisConfig {
    /// One Redis server at `url` (`redis://host:port/db`), with the defaults.
    pub fn new(url: impl Into<String>) -> Self {
        Self::with_nodes(vec![url.into()], false)
    }

    /// A Redis Cluster reached through `nodes`, with the defaults.
    pub fn cluster(nodes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self::with_nodes(nodes.into_iter().map(Into::into).collect(), true)
    }

    fn with_nodes(nodes: Vec<String>, cluster: bool) -> Self {
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros());
        RedisConfig {
            nodes,
            cluster,
            key_prefix: "floodgate".to_owned(),
            instance: format!("{}-{started:x}", std::process::id()),
            pool_size: 2,
            request_timeout: Duration::from_millis(20),
            connect_timeout: Duration::from_secs(1),
            member_ttl: Duration::from_secs(3),
            fetch_ahead: Duration::from_millis(10),
            retry_after: Duration::from_millis(100),
        }
    }

    /// Sets [`instance`](Self::instance).
    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = instance.into();
        self
    }

    /// Sets [`key_prefix`](Self::key_prefix).
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// Sets [`request_timeout`](Self::request_timeout).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`fetch_ahead`](Self::fetch_ahead).
    pub fn fetch_ahead(mut self, ahead: Duration) -> Self {
        self.fetch_ahead = ahead;
        self
    }

    /// Sets [`member_ttl`](Self::member_ttl).
    pub fn member_ttl(mut self, ttl: Duration) -> Self {
        self.member_ttl = ttl;
        self
    }

    /// Sets [`pool_size`](Self::pool_size).
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// Checks every field; the first wrong one is named.
    pub fn check(&self) -> Result<(), RedisConfigError> {
        if self.nodes.is_empty() {
            return Err(RedisConfigError::NoNodes);
        }
        for (index, node) in self.nodes.iter().enumerate() {
            if let Err(error) = redis::Client::open(node.as_str()) {
                return Err(RedisConfigError::Node {
                    index,
                    reason: error.to_string(),
                });
            }
        }
        if self.key_prefix.is_empty() || self.key_prefix.contains(['{', '}']) {
            return Err(RedisConfigError::KeyPrefix);
        }
        if self.instance.is_empty() || self.instance.len() > MAX_INSTANCE_LEN {
            return Err(RedisConfigError::Instance);
        }
        if self.pool_size == 0 || self.pool_size > MAX_POOL_SIZE {
            return Err(RedisConfigError::PoolSize(self.pool_size));
        }
        for (field, value) in [
            ("request_timeout", self.request_timeout),
            ("connect_timeout", self.connect_timeout),
            ("retry_after", self.retry_after),
        ] {
            if value.is_zero() {
                return Err(RedisConfigError::ZeroDuration(field));
            }
        }
        if self.member_ttl < Duration::from_millis(MIN_MEMBER_TTL_MS) {
            return Err(RedisConfigError::MemberTtl);
        }
        Ok(())
    }
}

/// The longest instance name.
const MAX_INSTANCE_LEN: usize = 256;
/// The most connections to one server.
const MAX_POOL_SIZE: usize = 64;
/// The shortest member time-to-live: members are refreshed every third of it.
const MIN_MEMBER_TTL_MS: u64 = 300;

/// A [`RedisConfig`] field that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RedisConfigError {
    /// No address was given.
    #[error("no Redis address is given")]
    NoNodes,
    /// An address does not parse.
    #[error("Redis address {index}: {reason}")]
    Node {
        /// Its index in `nodes`.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The key prefix is empty or holds a brace (braces mark a key's hash tag).
    #[error("`key_prefix` must be non-empty and without braces")]
    KeyPrefix,
    /// The instance name is empty or too long.
    #[error("`instance` must be 1 to {MAX_INSTANCE_LEN} bytes")]
    Instance,
    /// The pool is empty or too large.
    #[error("`pool_size` must be 1 to {MAX_POOL_SIZE}, not {0}")]
    PoolSize(usize),
    /// A duration that must be positive is zero.
    #[error("`{0}` must be positive")]
    ZeroDuration(&'static str),
    /// Members would be refreshed too often.
    #[error("`member_ttl` must be at least {MIN_MEMBER_TTL_MS} ms")]
    MemberTtl,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_pass_and_each_bad_field_is_named() {
        let good = RedisConfig::new("redis://127.0.0.1:6379");
        assert_eq!(good.check(), Ok(()));
        assert_eq!(good.request_timeout, Duration::from_millis(20));

        let mut no_nodes = good.clone();
        no_nodes.nodes.clear();
        assert_eq!(no_nodes.check(), Err(RedisConfigError::NoNodes));

        let bad_url = RedisConfig::cluster(["redis://127.0.0.1:7000", "http://nope"]);
        assert!(matches!(
            bad_url.check(),
            Err(RedisConfigError::Node { index: 1, .. })
        ));
        assert_eq!(
            good.clone().key_prefix("a{b}").check(),
            Err(RedisConfigError::KeyPrefix)
        );
        assert_eq!(
            good.clone().instance("").check(),
            Err(RedisConfigError::Instance)
        );
        assert_eq!(
            good.clone().pool_size(0).check(),
            Err(RedisConfigError::PoolSize(0))
        );
        assert_eq!(
            good.clone().request_timeout(Duration::ZERO).check(),
            Err(RedisConfigError::ZeroDuration("request_timeout"))
        );
        assert_eq!(
            good.clone().member_ttl(Duration::from_millis(10)).check(),
            Err(RedisConfigError::MemberTtl)
        );
    }
}
