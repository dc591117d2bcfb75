//! The token service a rule in cluster mode asks, and how its answers are counted.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwapOption;

use super::token::TokenResult;
use crate::param::ParamValue;

/// How a cluster rule's `count` reads across the cluster (`clusterConfig.thresholdType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThresholdType {
    /// `count` per connected instance: the total is `count` × the instances (0, the default).
    AvgLocal,
    /// `count` is the cluster's total (1).
    Global,
}

impl ThresholdType {
    /// The type of Sentinel's code (anything but 1 reads as average-local, as in Sentinel).
    pub const fn of(code: i32) -> Self {
        if code == 1 {
            ThresholdType::Global
        } else {
            ThresholdType::AvgLocal
        }
    }
}

/// What an entry asks a token service for: `acquire` tokens of the cluster rule `flow_id`, with the
/// rule's own terms, so that a service that counts by itself (over Redis, say) needs nothing else.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TokenRequest<'a> {
    /// The rule's cluster-wide id.
    pub flow_id: i64,
    /// Tokens asked for (the entry's count).
    pub acquire: u32,
    /// Whether the entry may wait for tokens of the next window.
    pub prioritized: bool,
    /// The guarded resource.
    pub resource: &'a str,
    /// The rule's threshold.
    pub count: f64,
    /// How the threshold reads across the cluster.
    pub threshold_type: ThresholdType,
    /// The buckets of the rule's cluster window.
    pub sample_count: u32,
    /// The length of the rule's cluster window, ms.
    pub window_interval_ms: u32,
    /// For a hot-parameter rule, the argument values it limits (each counted apart); empty for a
    /// flow rule.
    pub params: &'a [ParamValue<'a>],
}

impl<'a> TokenRequest<'a> {
    /// A request for `acquire` tokens of the flow rule `flow_id` on `resource` with threshold
    /// `count`, in the terms of Sentinel's default cluster config (average-local, 10 buckets of a
    /// 1 s window), not prioritized.
    pub fn new(flow_id: i64, acquire: u32, resource: &'a str, count: f64) -> Self {
        TokenRequest {
            flow_id,
            acquire,
            prioritized: false,
            resource,
            count,
            threshold_type: ThresholdType::AvgLocal,
            sample_count: 10,
            window_interval_ms: 1000,
            params: &[],
        }
    }
}

/// Grants the tokens of rules in cluster mode (Sentinel's `TokenService`).
///
/// The engine calls it on the thread that enters, inside the entry: an implementation must answer
/// from memory, without waiting on the network there (one that talks to a server keeps tokens it
/// fetched ahead, or answers [`TokenStatus::Fail`](super::TokenStatus::Fail) at once). Every status
/// but `Ok`, `Blocked` and `ShouldWait` makes the rule fall back: to its local check when its
/// `fallbackToLocalWhenFail` is true (the default), else the entry passes the rule, counted in
/// [`EngineStats::cluster_passes_unchecked`](crate::stats::EngineStats::cluster_passes_unchecked)
/// and logged, never silently.
pub trait TokenService: Send + Sync + fmt::Debug + 'static {
    /// Answers `request`.
    fn request_token(&self, request: &TokenRequest<'_>) -> TokenResult;
}

/// A shared service: an application that also serves the service elsewhere (its own token server,
/// say) hands the engine a clone of its `Arc`.
impl<T: TokenService + ?Sized> TokenService for std::sync::Arc<T> {
    fn request_token(&self, request: &TokenRequest<'_>) -> TokenResult {
        (**self).request_token(request)
    }
}

/// The engine's token service, replaceable while it runs, and the counts of what it answered.
#[derive(Debug, Default)]
pub(crate) struct TokenServiceCell {
    service: ArcSwapOption<Box<dyn TokenService>>,
    /// Requests answered Ok, Blocked or ShouldWait.
    pub(crate) answered: AtomicU64,
    /// Requests answered otherwise, or asked with no service: checked locally instead.
    pub(crate) fell_back: AtomicU64,
    /// Of those, entries that passed the rule unchecked (its `fallbackToLocalWhenFail` is false).
    pub(crate) passed_unchecked: AtomicU64,
}

impl TokenServiceCell {
    pub(crate) fn set(&self, service: Option<Box<dyn TokenService>>) {
        self.service.store(service.map(std::sync::Arc::new));
    }

    /// The service's answer to `request`, or `None` without a service.
    pub(crate) fn request(&self, request: &TokenRequest<'_>) -> Option<TokenResult> {
        let guard = self.service.load();
        let service = guard.as_ref()?;
        Some(service.request_token(request))
    }

    pub(crate) fn is_set(&self) -> bool {
        self.service.load().is_some()
    }

    pub(crate) fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
