//! A flow rule in cluster mode: its tokens come from the engine's token service.
//!
//! The service's answer decides: OK passes the rule, BLOCKED blocks the entry, SHOULD_WAIT makes it
//! wait the time given. Any other answer (the service failed, timed out, has no such rule, is over
//! its namespace's limit), and asking with no service, falls back: the rule is checked here as a local
//! rule when its `fallbackToLocalWhenFail` is true (the default); when it is false the entry passes
//! the rule, counted in `EngineStats::cluster_passes_unchecked` and logged at most once a second, so
//! that a rule is never unlimited silently (`a_cluster_rule_without_local_fallback_passes_visibly`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::manager::FlowRuleState;
use crate::block::BlockError;
use crate::cluster::{ThresholdType, TokenRequest, TokenServiceCell, TokenStatus};
use crate::slot::SlotContext;

/// What a cluster rule asks with, read once when the rule is loaded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ClusterTerms {
    pub(crate) flow_id: i64,
    pub(crate) threshold_type: ThresholdType,
    pub(crate) sample_count: u32,
    pub(crate) window_interval_ms: u32,
    /// Check the rule here when the service cannot answer.
    pub(crate) fallback_to_local: bool,
}

/// What the cluster decided for one rule.
pub(crate) enum Cluster {
    /// The service answered: this is the rule's verdict.
    Decided(Result<(), BlockError>),
    /// Check the rule locally.
    Local,
}

/// The second of the last unchecked pass logged (one line a second at most, process-wide).
static LOGGED_SECOND: AtomicU64 = AtomicU64::new(0);

/// Asks the engine's token service about `state`'s rule for this entry.
#[cold]
#[inline(never)]
pub(crate) fn check(
    cx: &mut SlotContext<'_>,
    state: &FlowRuleState,
    terms: &ClusterTerms,
    block: impl FnOnce(&SlotContext<'_>) -> BlockError,
) -> Cluster {
    let cell: &TokenServiceCell = &cx.engine.token_service;
    let request = TokenRequest {
        flow_id: terms.flow_id,
        acquire: cx.count,
        prioritized: cx.prioritized,
        resource: &cx.resource.name,
        count: state.rule.count,
        threshold_type: terms.threshold_type,
        sample_count: terms.sample_count,
        window_interval_ms: terms.window_interval_ms,
        params: &[],
    };
    if let Some(result) = cell.request(&request) {
        match result.status {
            TokenStatus::Ok => {
                TokenServiceCell::count(&cell.answered);
                return Cluster::Decided(Ok(()));
            }
            TokenStatus::Blocked => {
                TokenServiceCell::count(&cell.answered);
                return Cluster::Decided(Err(block(cx)));
            }
            TokenStatus::ShouldWait => {
                TokenServiceCell::count(&cell.answered);
                let wait = u64::try_from(result.wait_ms).unwrap_or(0);
                cx.add_wait(Duration::from_millis(wait));
                return Cluster::Decided(Ok(()));
            }
            _ => {}
        }
    }
    TokenServiceCell::count(&cell.fell_back);
    if terms.fallback_to_local {
        return Cluster::Local;
    }
    TokenServiceCell::count(&cell.passed_unchecked);
    let second = cx.now_ms / 1000;
    if LOGGED_SECOND.swap(second, Ordering::Relaxed) != second {
        tracing::warn!(
            target: "floodgate::cluster",
            resource = &*cx.resource.name,
            flow_id = terms.flow_id,
            "no token for a cluster rule that does not fall back to local: the entry passes it unchecked"
        );
    }
    Cluster::Decided(Ok(()))
}
