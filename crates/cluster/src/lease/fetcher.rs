//! What a lease fetches from: a source of a cluster rule's tokens that answers over the network.

use std::time::Duration;

use floodgate_core::cluster::{ThresholdType, TokenStatus};
use thiserror::Error;

use crate::protocol::Param;

/// The window a cluster rule counts in, and its threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowTerms {
    /// The rule's cluster-wide id.
    pub flow_id: i64,
    /// The rule's count.
    pub count: f64,
    /// Whether `count` is the total or each instance's share.
    pub threshold_type: ThresholdType,
    /// The window's buckets.
    pub sample_count: u32,
    /// The window's length, ms.
    pub window_interval_ms: u32,
}

impl WindowTerms {
    /// The length of one bucket, ms (at least 1).
    pub fn bucket_ms(&self) -> u64 {
        (u64::from(self.window_interval_ms) / u64::from(self.sample_count.max(1))).max(1)
    }
}

/// What one fetch took from a rule's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// Tokens granted (at most those asked for).
    pub granted: u32,
    /// Tokens left in the window after the grant (negative when the window is over its threshold,
    /// as after the count was lowered).
    pub remaining: i64,
    /// How long until the window frees tokens again, ms, when it granted fewer than asked; 0 when
    /// it did not say.
    pub free_in_ms: u64,
    /// The instances that share the rule, this one included (0 when the source does not say).
    pub members: u32,
}

/// Why tokens could not be fetched.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The source did not answer within the request timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// Redis, or the connection to it, failed.
    #[cfg(feature = "redis")]
    #[error("Redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// Redis answered something the script does not return.
    #[cfg(feature = "redis")]
    #[error("unexpected answer from Redis: {0:?}")]
    Reply(redis::Value),
    /// A token server answered neither OK nor BLOCKED (it failed, has no such rule, or the
    /// namespace is over its `maxAllowedQps`).
    #[error("the token server answered {0:?}")]
    Refused(TokenStatus),
    /// The service already keeps its most leases.
    #[error(
        "leases are kept for at most {} cluster rules and hot-parameter values",
        super::service::MAX_LEASES
    )]
    TooManyLeases,
    /// The request names no window a lease can take from: a hot-parameter request with other than
    /// one countable value.
    #[error("a lease is for one rule, or one value of a hot-parameter rule")]
    NotOneValue,
}

/// A source of cluster rules' tokens for a [`LeasedTokenService`](super::LeasedTokenService).
pub trait Fetcher: Send + Sync + std::fmt::Debug + 'static {
    /// Takes up to `want` tokens of the rule's window; with `value`, of that argument value's
    /// window of a hot-parameter rule (`terms.count` is then the value's threshold).
    fn fetch(
        &self,
        terms: &WindowTerms,
        value: Option<&Param>,
        want: u32,
    ) -> impl Future<Output = Result<Grant, FetchError>> + Send;

    /// Marks this instance a member of the rule `flow_id` again, where members are counted by
    /// the source's users themselves (a token server counts its connections instead).
    fn refresh(&self, flow_id: i64) -> impl Future<Output = Result<(), FetchError>> + Send {
        let _ = flow_id;
        async { Ok(()) }
    }

    /// Takes this instance out of the rule `flow_id`'s members.
    fn leave(&self, flow_id: i64) -> impl Future<Output = Result<(), FetchError>> + Send {
        let _ = flow_id;
        async { Ok(()) }
    }

    /// Network calls made so far.
    fn calls(&self) -> u64;
}
