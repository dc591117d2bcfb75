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
//! is `refResource`. Then the rule's controller decides. A cluster rule asks the engine's token service
//! first, and is checked locally only when the service cannot answer and the rule falls back to local
//! (`crate::cluster::ClusterVerdict`).
//!
//! A prioritized entry that a QPS rule would reject may borrow its pass from a future window (Sentinel's
//! occupied pass) and wait for it. The borrow is counted on that window only once the whole chain
//! admitted the entry, in this slot's pass hook (until then the slot keeps it as its word of the entry),
//! so that an entry a later slot blocks borrows nothing
//! (`a_prioritized_entry_blocked_after_borrowing_leaves_the_next_window_alone`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::FlowRules;
use super::decision::Decision;
use super::limit_app::LimitApp;
use super::manager::{Controller, FlowRuleState, ResourceRules};
use super::rule::{FlowGrade, FlowStrategy};
use crate::block::{BlockError, BlockKind};
use crate::cluster::ClusterVerdict;
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

    /// Counts the pass the entry borrowed from a future window, if it did, on that window.
    #[inline]
    fn on_pass(&self, cx: &mut SlotContext<'_>) {
        // A borrowed pass always waits (at least until its window starts): an entry that does not wait
        // borrowed nothing.
        if cx.wait.is_zero() {
            return;
        }
        if let Some(word) = cx.forget() {
            Borrow::decode(word).commit(cx);
            cx.pass_borrowed = true;
        }
    }

    fn hooks(&self) -> Hooks {
        Hooks {
            entry: true,
            pass: true,
            block: false,
            exit: false,
        }
    }

    fn rule_type(&self) -> Option<RuleType> {
        Some(RuleType::Flow)
    }
}

/// The node a prioritized entry borrowed its pass from, as the slot keeps it in its word of the entry
/// (a node of the entry's own, or a resource's id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lender {
    /// The resource's cluster node.
    Cluster,
    /// The resource's node for the caller's origin.
    Origin,
    /// The resource's node in the current context (a CHAIN rule's).
    Context,
    /// The cluster node of the resource of this id (a RELATE rule's).
    Resource(u32),
}

impl Lender {
    /// Which of the entry's nodes `node` is, as `state` selected it.
    fn of(cx: &SlotContext<'_>, state: &FlowRuleState, node: &StatisticNode) -> Option<Lender> {
        let lender = match state.rule.strategy {
            FlowStrategy::Direct if std::ptr::eq(node, &cx.resource.cluster.stats) => {
                Lender::Cluster
            }
            FlowStrategy::Direct => Lender::Origin,
            FlowStrategy::Chain => Lender::Context,
            FlowStrategy::Relate => Lender::Resource(
                cx.engine
                    .registry
                    .resource_index
                    .get(state.rule.ref_resource.as_deref()?)?,
            ),
        };
        // The same node again, found from the entry alone.
        lender
            .node(cx)
            .is_some_and(|n| std::ptr::eq(n, node))
            .then_some(lender)
    }

    fn node<'a>(self, cx: &SlotContext<'a>) -> Option<&'a StatisticNode> {
        match self {
            Lender::Cluster => Some(&cx.resource.cluster.stats),
            Lender::Origin => origin_node(cx),
            Lender::Context => Some(cx.default_node?.stats()),
            Lender::Resource(id) => Some(&cx.engine.registry.resource_by_id(id)?.cluster.stats),
        }
    }
}

/// A pass borrowed from the window that starts `wait` ms after the entry's time, on `lender`'s node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Borrow {
    lender: Lender,
    wait: u64,
}

impl Borrow {
    /// Bits of the word that hold the wait (the lender's tag and resource id take the rest).
    const WAIT_BITS: u32 = 30;

    /// The slot's word for the borrow; `None` for a wait of 2^30 ms (12 days) or more.
    fn encode(self) -> Option<u64> {
        if self.wait >> Self::WAIT_BITS != 0 {
            return None;
        }
        let (tag, id) = match self.lender {
            Lender::Cluster => (0, 0),
            Lender::Origin => (1, 0),
            Lender::Context => (2, 0),
            Lender::Resource(id) => (3, id),
        };
        Some(tag << 62 | u64::from(id) << Self::WAIT_BITS | self.wait)
    }

    fn decode(word: u64) -> Borrow {
        let wait = word & ((1 << Self::WAIT_BITS) - 1);
        let lender = match word >> 62 {
            0 => Lender::Cluster,
            1 => Lender::Origin,
            2 => Lender::Context,
            // The id's 32 bits, below the tag.
            _ => Lender::Resource((word >> Self::WAIT_BITS) as u32),
        };
        Borrow { lender, wait }
    }

    /// Counts the borrowed pass on its window.
    fn commit(self, cx: &SlotContext<'_>) {
        if let Some(node) = self.lender.node(cx) {
            node.add_waiting(cx.at, cx.now_ms + self.wait, cx.count);
        }
    }
}

/// Keeps the pass `state`'s rule let the entry borrow from `node`, `wait` ms ahead, until the whole
/// chain admitted the entry. A second rule borrowing in the same entry (rare) commits the first borrow
/// at once; so does a borrow the slot's word cannot hold (a wait of 12 days or more, or a node it
/// cannot find from the entry again).
#[cold]
fn hold(cx: &mut SlotContext<'_>, state: &FlowRuleState, node: &StatisticNode, wait: u64) {
    if let Some(earlier) = cx.forget() {
        Borrow::decode(earlier).commit(cx);
    }
    let word = Lender::of(cx, state, node).and_then(|lender| Borrow { lender, wait }.encode());
    match word {
        Some(word) => cx.keep(word),
        None => {
            node.add_waiting(cx.at, cx.now_ms + wait, cx.count);
            cx.pass_borrowed = true;
        }
    }
}

#[cold]
#[inline(never)]
fn block(cx: &SlotContext<'_>, state: &FlowRuleState) -> BlockError {
    cx.block(BlockKind::Flow)
        .with_rule(crate::thread_copies::rule(&state.rule))
}

#[inline]
fn check(
    cx: &mut SlotContext<'_>,
    state: &FlowRuleState,
    all: &ResourceRules,
    occupy_timeout_ms: u64,
) -> Result<(), BlockError> {
    if let Some(terms) = &state.cluster {
        let request = terms.request(
            cx.count,
            cx.prioritized,
            &cx.resource.name,
            state.rule.count,
            &[],
        );
        match crate::cluster::ask(&cx.engine.token_service, &request, terms, cx.now_ms) {
            ClusterVerdict::Pass(wait) => {
                if !wait.is_zero() {
                    cx.add_wait(wait);
                }
                return Ok(());
            }
            ClusterVerdict::Block => return Err(block(cx, state)),
            ClusterVerdict::Local => {}
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
                    // Counted when the whole chain admits the entry (the pass hook).
                    hold(cx, state, node, wait);
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Borrow, Lender};
    use crate::{Floodgate, ManualClock, RuleType};

    const T0: u64 = 1_700_000_000_000;

    #[test]
    fn a_borrow_round_trips_through_the_slots_word() {
        let lenders = [
            Lender::Cluster,
            Lender::Origin,
            Lender::Context,
            Lender::Resource(0),
            Lender::Resource(7),
            Lender::Resource(u32::MAX),
        ];
        for lender in lenders {
            for wait in [0, 1, 300, (1 << Borrow::WAIT_BITS) - 1] {
                let borrow = Borrow { lender, wait };
                assert_eq!(Borrow::decode(borrow.encode().unwrap()), borrow);
            }
        }
        let far = Borrow {
            lender: Lender::Cluster,
            wait: 1 << Borrow::WAIT_BITS,
        };
        assert_eq!(far.encode(), None, "committed at once instead");
    }

    /// A prioritized entry borrows from the node its rule reads (the origin's, a related resource's,
    /// the context's), and the pass hook counts the borrow on that node, found again from the entry.
    #[test]
    fn a_borrow_is_counted_on_the_node_it_was_borrowed_from() {
        let cases = [
            (
                r#"[{"resource":"R","limitApp":"appA","count":10}]"#,
                "origin",
            ),
            (
                r#"[{"resource":"R","strategy":1,"refResource":"REF","count":10}]"#,
                "related",
            ),
            (
                r#"[{"resource":"R","strategy":2,"refResource":"ctx","count":10}]"#,
                "context",
            ),
        ];
        for (rules, case) in cases {
            let clock = ManualClock::new(T0);
            let fg = Floodgate::builder().clock(clock.clone()).build();
            fg.load_rules_json(RuleType::Flow, rules).unwrap();
            // The entries the rule reads: REF's for the related case, R's otherwise.
            let read = if case == "related" { "REF" } else { "R" };
            let enter = |resource: &str, prioritized: bool| {
                fg.context("ctx").origin("appA").run(|| {
                    let entry = fg.entry(resource);
                    let entry = if prioritized {
                        entry.prioritized()
                    } else {
                        entry
                    };
                    entry.enter().map(|e| e.waited())
                })
            };
            for (at, n) in [(100, 4), (600, 6)] {
                clock.set(T0 + at);
                for _ in 0..n {
                    assert!(enter(read, false).is_ok(), "{case}");
                }
            }
            clock.set(T0 + 700);
            assert!(enter("R", false).is_err(), "{case}: full");
            assert_eq!(
                enter("R", true).ok(),
                Some(Duration::from_millis(300)),
                "{case}"
            );
            let lender = match case {
                "origin" => fg.origin_node("R", "appA"),
                "related" => fg.cluster_node("REF"),
                _ => fg.context_node("R", "ctx"),
            };
            assert_eq!(lender.unwrap().waiting(), 1, "{case}");
            if case != "related" {
                assert_eq!(fg.cluster_node("R").unwrap().waiting(), 0, "{case}");
            }
        }
    }
}
