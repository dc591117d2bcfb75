//! Hot-parameter rules in cluster mode: each value asks the engine's token service first.
//!
//! Before any local check, every (cluster rule, value) pair of the call asks the service for the
//! entry's count of tokens, with the value's own threshold (its exception item's count, or the
//! rule's) and the value as the request's only parameter, so that each value counts in its own
//! cluster-wide window. OK and SHOULD_WAIT decide the pair (the call waits for the longest wait),
//! BLOCKED blocks the call at once, and any other answer leaves the pair to the local check when the
//! rule falls back to local, or passes it visibly otherwise ([`crate::cluster::ClusterVerdict`]).
//! Tokens a token service granted earlier values of a call it then blocks stay spent: a service
//! does not take tokens back.

use std::time::Duration;

use super::manager::{ParamRuleState, Rules};
use super::units::Units;
use crate::cluster::ClusterVerdict;
use crate::param::ParamValue;
use crate::slot::SlotContext;

/// What the token service decided for a call's cluster pairs.
pub(super) struct Asked {
    /// Per cluster pair, in walk order: whether it is checked locally (pairs past its end are not:
    /// it stays empty, unallocated, while the service answers every pair).
    pub(super) fell_back: Vec<bool>,
    /// The longest wait the service asked for.
    pub(super) wait: Duration,
}

/// Asks the token service about every cluster pair of the call; `Err` names the pair it blocked.
#[cold]
#[inline(never)]
pub(super) fn ask<'r, 's, 'a>(
    cx: &SlotContext<'_>,
    rules: &'r Rules,
    args: &'s [ParamValue<'a>],
) -> Result<Asked, (&'r ParamRuleState, &'s ParamValue<'a>)> {
    let mut asked = Asked {
        fell_back: Vec::new(),
        wait: Duration::ZERO,
    };
    let cluster_pairs = Units::new(rules, args).filter(|(state, _)| state.cluster.is_some());
    for (pair, (state, value)) in cluster_pairs.enumerate() {
        let Some(terms) = &state.cluster else {
            continue;
        };
        let count = state.threshold(value) as f64;
        let request = terms.request(
            cx.count,
            cx.prioritized,
            &cx.resource.name,
            count,
            std::slice::from_ref(value),
        );
        match crate::cluster::ask(&cx.engine.token_service, &request, terms, cx.now_ms) {
            ClusterVerdict::Pass(wait) => asked.wait = asked.wait.max(wait),
            ClusterVerdict::Local => {
                asked.fell_back.resize(pair, false);
                asked.fell_back.push(true);
            }
            ClusterVerdict::Block => return Err((state, value)),
        }
    }
    Ok(asked)
}
