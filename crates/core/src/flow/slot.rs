//! FlowSlot (−2000): every flow rule of the resource must pass.
//!
//! The rules come resolved per resource (exact and regex, in check order, found by the resource's id,
//! never by name), and a `limitApp` is classified when its rule is loaded.
//!
//! For each rule the slot picks the node whose statistics the rule reads (Sentinel's
//! `selectNodeByRequesterAndStrategy`), with the caller's origin:
//!
//! 1. `limitApp` equals the origin (a specific caller): DIRECT reads the origin node;
//! 2. `limitApp` is `default`: DIRECT reads the resource's cluster node;
//! 3. `limitApp` is `other` and no rule of the resource names the origin: DIRECT reads the origin node;
//! 4. otherwise the rule does not apply (passes).
//!
//! A RELATE rule reads the cluster node of `refResource` instead (passes if it was never entered); a
//! CHAIN rule reads the resource's node in the current context, and applies only when the context's name
//! is `refResource`. Then the rule's controller decides. A cluster rule is checked locally when it falls
//! back to local on failure, and passes otherwise (no token server is configured).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::FlowRules;
use super::cluster::{self, Cluster};
use super::decision::Decision;
use super::limit_app::LimitApp;
use super::manager::{Controller, FlowRuleState, ResourceRules};
use super::rule::{FlowGrade, FlowStrategy};
use crate::block::{BlockError, BlockKind, BlockRule};
use crate::node::StatisticNode;
use crate::rules::RuleType;
use crate::slot::{Hooks, Slot, SlotContext};

/// Sentinel's `FlowSlot`.
pub(crate) struct FlowSlot {
    rules: Arc<FlowRules>,
    /// How long a prioritized entry may wait for capacity borrowed from the next window, ms.
    occupy_timeout_ms: u64,
}

impl fmt::Debug for FlowSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlowSlot").finish_non_exhaustive()
    }
}

impl FlowSlot {
    /// The slot enforcing `rules` (an engine's own).
    pub(crate) fn new(rules: Arc<FlowRules>, occupy_timeout_ms: u64) -> Self {
        FlowSlot {
            rules,
            occupy_timeout_ms,
        }
    }
}

impl Slot for FlowSlot {
    #[inline]
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        // The chain calls it only while flow rules are in force (the built-in path and the generic
        // loop both check the engine's in-force mask first).
        let snapshot = self.rules.snapshot();
        let Some(rules) = snapshot.rules_of(cx.resource) else {
            return Ok(());
        };
        for state in rules.rules.iter() {
            check(cx, state, rules, self.occupy_timeout_ms)?;
        }
        Ok(())
    }

    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }

    fn rule_type(&self) -> Option<RuleType> {
        Some(RuleType::Flow)
    }
}

#[cold]
#[inline(never)]
fn block(cx: &SlotContext<'_>, state: &FlowRuleState) -> BlockError {
    cx.block(BlockKind::Flow)
        .with_rule(state.rule.clone() as Arc<dyn BlockRule>)
}

#[inline]
fn check(
    cx: &mut SlotContext<'_>,
    state: &FlowRuleState,
    all: &ResourceRules,
    occupy_timeout_ms: u64,
) -> Result<(), BlockError> {
    if let Some(terms) = &state.cluster {
        if let Cluster::Decided(verdict) = cluster::check(cx, state, terms, |cx| block(cx, state)) {
            return verdict;
        }
    }
    // The reject controller's pass, the common case, is checked inline; everything else out of line.
    let Controller::Reject(c) = &state.controller else {
        return shape(cx, state, all, occupy_timeout_ms);
    };
    let node = if state.reads_cluster_node {
        &cx.resource.cluster.stats
    } else {
        match select_node(cx, state, all) {
            Some(node) => node,
            None => return Ok(()),
        }
    };
    let used = match state.rule.grade {
        FlowGrade::Thread => node.cur_thread_num() as f64,
        FlowGrade::Qps => node.pass_qps_floor(cx.at) as f64,
    };
    if c.can_pass(used, cx.count) {
        return Ok(());
    }
    shape(cx, state, all, occupy_timeout_ms)
}

/// Every decision but an immediate reject-controller pass: a rejection (or a prioritized borrow), and
/// the pacing and warm-up controllers.
#[inline(never)]
fn shape(
    cx: &mut SlotContext<'_>,
    state: &FlowRuleState,
    all: &ResourceRules,
    occupy_timeout_ms: u64,
) -> Result<(), BlockError> {
    let Some(node) = select_node(cx, state, all) else {
        return Ok(());
    };
    let (now, acquire) = (cx.now_ms, cx.count);
    let rule = &*state.rule;
    let decision = match &state.controller {
        Controller::Reject(_) => {
            if cx.prioritized && rule.grade == FlowGrade::Qps {
                let timeout = occupy_timeout_ms;
                let wait = node.try_occupy_next(now, acquire, rule.count, timeout);
                if wait < timeout {
                    // Committed when the whole chain admits the entry (the statistic slot); a second
                    // rule borrowing in the same entry (rare) commits the first borrow at once.
                    if let Some((earlier, future)) = cx.occupied.replace((node, now + wait)) {
                        earlier.add_waiting(cx.at, future, acquire);
                    }
                    Decision::Pass {
                        wait: Duration::from_millis(wait),
                    }
                } else {
                    Decision::Block
                }
            } else {
                Decision::Block
            }
        }
        Controller::Sparse(c) | Controller::RateLimiter(c) => c.try_acquire(cx.now_nanos, acquire),
        Controller::WarmUp(c) => {
            if c.can_pass(
                now,
                node.pass_qps(now),
                node.previous_pass_qps(now),
                acquire,
            ) {
                Decision::PASS_NOW
            } else {
                Decision::Block
            }
        }
        Controller::WarmUpRateLimiter(c) => {
            c.try_acquire(cx.now_nanos, node.previous_pass_qps(now), acquire)
        }
    };
    match decision {
        Decision::Pass { wait } => {
            if !wait.is_zero() {
                cx.add_wait(wait);
            }
            Ok(())
        }
        Decision::Block => Err(block(cx, state)),
    }
}

/// The node a rule reads for this entry, or `None` when the rule does not apply.
#[inline(always)]
fn select_node<'a>(
    cx: &SlotContext<'a>,
    state: &FlowRuleState,
    all: &ResourceRules,
) -> Option<&'a StatisticNode> {
    let direct = state.rule.strategy == FlowStrategy::Direct;
    let origin = cx.origin;
    let applies = match state.limit_app {
        LimitApp::Default => {
            if direct {
                return Some(&cx.resource.cluster.stats);
            }
            true
        }
        LimitApp::Specific => !origin.is_empty() && state.rule.limit_app == origin,
        LimitApp::Other => !origin.is_empty() && !all.names(origin),
    };
    match (applies, direct) {
        (false, _) => None,
        (true, true) => origin_node(cx),
        (true, false) => reference_node(cx, state),
    }
}

fn origin_node<'a>(cx: &SlotContext<'a>) -> Option<&'a StatisticNode> {
    cx.engine.registry.origin_node(cx.origin_node_id?)
}

fn reference_node<'a>(cx: &SlotContext<'a>, state: &FlowRuleState) -> Option<&'a StatisticNode> {
    let reference = state.rule.ref_resource.as_deref()?;
    match state.rule.strategy {
        FlowStrategy::Relate => cx.engine.registry.existing_cluster_stats(reference),
        FlowStrategy::Chain => {
            if cx.context_name() != reference {
                return None;
            }
            Some(cx.default_node?.stats())
        }
        FlowStrategy::Direct => None,
    }
}
