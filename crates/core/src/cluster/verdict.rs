//! How a rule in cluster mode reads its token service's answer.
//!
//! OK passes the rule, BLOCKED blocks the entry, SHOULD_WAIT passes it after the wait given. Any
//! other answer (the service failed, timed out, has no such rule, is over its namespace's limit),
//! and asking with no service, falls back: the rule is checked here as a local rule when its
//! `fallbackToLocalWhenFail` is true (the default); when it is false the entry passes the rule,
//! counted in `EngineStats::cluster_passes_unchecked` and logged at most once a second, so that a
//! rule is never unlimited silently (`a_cluster_rule_without_local_fallback_passes_visibly`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::service::{TokenRequest, TokenServiceCell};
use super::terms::ClusterTerms;
use super::token::TokenStatus;

/// What a rule in cluster mode does with one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClusterVerdict {
    /// The rule passes the entry, after this wait.
    Pass(Duration),
    /// The rule blocks the entry.
    Block,
    /// The rule is checked locally.
    Local,
}

/// The second of the last unchecked pass logged (one line a second at most, process-wide).
static LOGGED_SECOND: AtomicU64 = AtomicU64::new(0);

/// Asks `cell`'s service `request`, for a rule with `terms`, at `now_ms`.
#[cold]
#[inline(never)]
pub(crate) fn ask(
    cell: &TokenServiceCell,
    request: &TokenRequest<'_>,
    terms: &ClusterTerms,
    now_ms: u64,
) -> ClusterVerdict {
    if let Some(result) = cell.request(request) {
        let verdict = match result.status {
            TokenStatus::Ok => Some(ClusterVerdict::Pass(Duration::ZERO)),
            TokenStatus::Blocked => Some(ClusterVerdict::Block),
            TokenStatus::ShouldWait => {
                let wait = u64::try_from(result.wait_ms).unwrap_or(0);
                Some(ClusterVerdict::Pass(Duration::from_millis(wait)))
            }
            _ => None,
        };
        if let Some(verdict) = verdict {
            TokenServiceCell::count(&cell.answered);
            return verdict;
        }
    }
    TokenServiceCell::count(&cell.fell_back);
    if terms.fallback_to_local {
        return ClusterVerdict::Local;
    }
    TokenServiceCell::count(&cell.passed_unchecked);
    let second = now_ms / 1000;
    if LOGGED_SECOND.swap(second, Ordering::Relaxed) != second {
        tracing::warn!(
            target: "floodgate::cluster",
            resource = request.resource,
            flow_id = terms.flow_id,
            "no token for a cluster rule that does not fall back to local: the entry passes it unchecked"
        );
    }
    ClusterVerdict::Pass(Duration::ZERO)
}
