//! The built-in slots: one table of their names, orders and constructors, which registers them in every
//! engine's chain and orders the straight-line code an engine with exactly these slots runs.
//!
//! An engine whose slots are exactly the built-in ones (no builder edit, no slot registered by another
//! crate) runs them as straight-line code: each rule slot behind its kind's in-force flag, the
//! statistics inlined into the entry and the exit, a block unwound through static calls. It does what
//! the generic loop over `dyn Slot` does with those slots, in the same order (Sentinel's: node
//! selector, cluster builder, log, statistic, authority, system, hot parameters, flow, default circuit
//! breakers, degrade), without an indirect call or a per-slot flag lookup.

use std::sync::Arc;

use super::SlotChain;
use crate::authority::AuthoritySlot;
use crate::block::BlockError;
use crate::degrade::{DefaultCircuitBreakerSlot, DegradeSlot};
use crate::flow::FlowSlot;
use crate::param_flow::ParamFlowSlot;
use crate::rule_sets::RuleSets;
use crate::rules::RuleType;
use crate::slot::{
    ClusterBuilderSlot, ExitContext, LogSlot, NodeSelectorSlot, Slot, SlotContext, StatisticSlot,
    order,
};
use crate::system::SystemSlot;

/// What the built-in slots are made of: the engine's rule sets and settings.
pub(crate) struct Parts<'a> {
    pub(crate) rules: &'a RuleSets,
    pub(crate) occupy_timeout_ms: u64,
}

/// A built-in slot: its name, its order, and how an engine builds it.
pub(super) struct BuiltinSlot {
    pub(super) name: &'static str,
    pub(super) order: i32,
    pub(super) build: fn(&Parts<'_>) -> Arc<dyn Slot>,
}

/// The built-in slots, in chain order.
pub(super) const SLOTS: [BuiltinSlot; 10] = [
    BuiltinSlot {
        name: "node_selector",
        order: order::NODE_SELECTOR,
        build: |_| Arc::new(NodeSelectorSlot),
    },
    BuiltinSlot {
        name: "cluster_builder",
        order: order::CLUSTER_BUILDER,
        build: |_| Arc::new(ClusterBuilderSlot),
    },
    BuiltinSlot {
        name: "log",
        order: order::LOG,
        build: |_| Arc::new(LogSlot),
    },
    BuiltinSlot {
        name: "statistic",
        order: order::STATISTIC,
        build: |_| Arc::new(StatisticSlot),
    },
    BuiltinSlot {
        name: "authority",
        order: order::AUTHORITY,
        build: |p| Arc::new(AuthoritySlot::new(p.rules.authority.clone())),
    },
    BuiltinSlot {
        name: "system",
        order: order::SYSTEM,
        build: |p| Arc::new(SystemSlot::new(p.rules.system.clone())),
    },
    BuiltinSlot {
        name: "param_flow",
        order: order::PARAM_FLOW,
        build: |p| Arc::new(ParamFlowSlot::new(p.rules.param_flow.clone())),
    },
    BuiltinSlot {
        name: "flow",
        order: order::FLOW,
        build: |p| Arc::new(FlowSlot::new(p.rules.flow.clone(), p.occupy_timeout_ms)),
    },
    BuiltinSlot {
        name: "default_circuit_breaker",
        order: order::DEFAULT_CIRCUIT_BREAKER,
        build: |p| Arc::new(DefaultCircuitBreakerSlot::new(p.rules.degrade.clone())),
    },
    BuiltinSlot {
        name: "degrade",
        order: order::DEGRADE,
        build: |p| Arc::new(DegradeSlot::new(p.rules.degrade.clone())),
    },
];

/// Where the slot `name` sits in [`SLOTS`] (and so in a built-in chain).
const fn position(name: &str) -> u32 {
    let mut i = 0;
    while i < SLOTS.len() {
        let (a, b) = (SLOTS[i].name.as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i as u32;
            }
        }
        i += 1;
    }
    panic!("not a built-in slot")
}

/// Where each slot with a hook after the entry's sits, for unwinding a block through the slots before
/// the one that blocked and for filing what each keeps with an entry.
const LOG: u32 = position("log");
const STATISTIC: u32 = position("statistic");
const AUTHORITY: u32 = position("authority");
const SYSTEM: u32 = position("system");
const PARAM_FLOW: u32 = position("param_flow");
const FLOW: u32 = position("flow");
const DEFAULT_CIRCUIT_BREAKER: u32 = position("default_circuit_breaker");
const DEGRADE: u32 = position("degrade");

// The straight-line code below runs the checks in this order: the table must agree.
const _: () = assert!(
    position("node_selector") < position("cluster_builder")
        && position("cluster_builder") < LOG
        && LOG < STATISTIC
        && STATISTIC < AUTHORITY
        && AUTHORITY < SYSTEM
        && SYSTEM < PARAM_FLOW
        && PARAM_FLOW < FLOW
        && FLOW < DEFAULT_CIRCUIT_BREAKER
        && DEFAULT_CIRCUIT_BREAKER < DEGRADE
);

/// Whether `slots` (names and orders, in chain order) are exactly the built-in ones.
pub(super) fn is_builtin<'a>(mut slots: impl ExactSizeIterator<Item = (&'a str, i32)>) -> bool {
    slots.len() == SLOTS.len()
        && SLOTS
            .iter()
            .all(|s| slots.next() == Some((s.name, s.order)))
}

/// The built-in rule slots of one engine, called statically.
#[derive(Debug)]
pub(super) struct Builtin {
    authority: AuthoritySlot,
    system: SystemSlot,
    param_flow: ParamFlowSlot,
    flow: FlowSlot,
    default_circuit_breaker: DefaultCircuitBreakerSlot,
    degrade: DegradeSlot,
}

impl Builtin {
    pub(super) fn new(parts: &Parts<'_>) -> Self {
        let rules = parts.rules;
        Builtin {
            authority: AuthoritySlot::new(rules.authority.clone()),
            system: SystemSlot::new(rules.system.clone()),
            param_flow: ParamFlowSlot::new(rules.param_flow.clone()),
            flow: FlowSlot::new(rules.flow.clone(), parts.occupy_timeout_ms),
            default_circuit_breaker: DefaultCircuitBreakerSlot::new(rules.degrade.clone()),
            degrade: DegradeSlot::new(rules.degrade.clone()),
        }
    }

    /// The entry hooks of the built-in chain; a block is unwound through the block hooks of the slots
    /// before the one that blocked ([`unwind`](Self::unwind)) and returned as it was made, without
    /// wrapping it.
    #[inline]
    pub(super) fn entry(
        &self,
        chain: &SlotChain,
        cx: &mut SlotContext<'_>,
    ) -> Result<(), BlockError> {
        // Neither ever blocks.
        let selected = NodeSelectorSlot.entry(cx);
        let built = ClusterBuilderSlot.entry(cx);
        debug_assert!(selected.is_ok() && built.is_ok());
        // The rule types in force, read once for every check and for the degrade pass hooks (the
        // generic loop reads them per hook; a load racing between the two then leaves a reserved probe
        // uncommitted there, never here).
        let in_force = chain.rules.in_force_mask();
        let on = |rule_type: RuleType| in_force & rule_type.bit() != 0;
        macro_rules! check {
            ($slot:expr, $position:expr) => {
                cx.position = $position;
                if let Err(block) = $slot.entry(cx) {
                    self.unwind(in_force, cx, $position, &block);
                    return Err(block);
                }
            };
        }
        if on(RuleType::Authority) {
            check!(self.authority, AUTHORITY);
        }
        if on(RuleType::System) {
            check!(self.system, SYSTEM);
        }
        if on(RuleType::ParamFlow) {
            check!(self.param_flow, PARAM_FLOW);
        }
        if on(RuleType::Flow) {
            check!(self.flow, FLOW);
        }
        if on(RuleType::Degrade) {
            check!(self.default_circuit_breaker, DEFAULT_CIRCUIT_BREAKER);
            check!(self.degrade, DEGRADE);
            // The pass hooks, in reverse order.
            self.degrade.on_pass(cx);
            cx.position = DEFAULT_CIRCUIT_BREAKER;
            self.default_circuit_breaker.on_pass(cx);
        }
        if on(RuleType::Flow) {
            cx.position = FLOW;
            self.flow.on_pass(cx);
        }
        StatisticSlot.on_pass(cx);
        Ok(())
    }

    /// The block hooks of the built-in slots before `position` (the slot that blocked), in reverse
    /// order, as the generic loop runs them: each while its rules are in force (`in_force`, the mask the
    /// entry read), or if it kept a word with the entry. The slots with a block hook are the log and
    /// statistic slots, the hot-parameter slot and the two breaker slots
    /// (`the_block_hooks_are_the_ones_unwind_runs`); the degrade slot, the last, never sees a later
    /// block.
    #[cold]
    #[inline(never)]
    fn unwind(&self, in_force: u32, cx: &mut SlotContext<'_>, position: u32, block: &BlockError) {
        let sees = |cx: &SlotContext<'_>, rule_type: RuleType, at: u32| {
            position > at && (in_force & rule_type.bit() != 0 || cx.kept.holds(at))
        };
        if sees(cx, RuleType::Degrade, DEFAULT_CIRCUIT_BREAKER) {
            cx.position = DEFAULT_CIRCUIT_BREAKER;
            self.default_circuit_breaker.on_block(cx, block);
        }
        if sees(cx, RuleType::ParamFlow, PARAM_FLOW) {
            cx.position = PARAM_FLOW;
            self.param_flow.on_block(cx, block);
        }
        cx.position = STATISTIC;
        StatisticSlot.on_block(cx, block);
        cx.position = LOG;
        LogSlot.on_block(cx, block);
    }

    /// The exit hooks of the built-in chain, in order: each slot's while its rules are in force, or
    /// if it marked its exit (as the generic loop runs them), so that what it took under rules removed
    /// since is given back: hot-parameter counts are released, and a probe admitted before the degrade
    /// rules were removed completes (dropped instead, it would be reported as a failed probe).
    #[inline]
    pub(super) fn exit(&self, rules: &RuleSets, cx: &mut ExitContext<'_>) {
        StatisticSlot.exit(cx);
        let in_force = rules.in_force_mask();
        let on = |rule_type: RuleType| in_force & rule_type.bit() != 0;
        if cx.kept.is_empty() {
            // The common case: no slot marked its exit.
            if on(RuleType::ParamFlow) {
                cx.position = PARAM_FLOW;
                self.param_flow.exit(cx);
            }
            if on(RuleType::Degrade) {
                cx.position = DEFAULT_CIRCUIT_BREAKER;
                self.default_circuit_breaker.exit(cx);
                cx.position = DEGRADE;
                self.degrade.exit(cx);
            }
            return;
        }
        self.marked_exit(on, cx);
    }

    /// [`exit`](Self::exit) for an entry that kept something for its exit.
    #[cold]
    #[inline(never)]
    fn marked_exit(&self, on: impl Fn(RuleType) -> bool, cx: &mut ExitContext<'_>) {
        // Which run is decided before any does: none changes what the entry kept.
        let runs = |rule_type: RuleType, position: u32| on(rule_type) || cx.kept.marked(position);
        let (param_flow, default_circuit_breaker, degrade) = (
            runs(RuleType::ParamFlow, PARAM_FLOW),
            runs(RuleType::Degrade, DEFAULT_CIRCUIT_BREAKER),
            runs(RuleType::Degrade, DEGRADE),
        );
        if param_flow {
            cx.position = PARAM_FLOW;
            self.param_flow.exit(cx);
        }
        if default_circuit_breaker {
            cx.position = DEFAULT_CIRCUIT_BREAKER;
            self.default_circuit_breaker.exit(cx);
        }
        if degrade {
            cx.position = DEGRADE;
            self.degrade.exit(cx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_positions_name_their_slots() {
        let name = |position: u32| SLOTS[position as usize].name;
        assert_eq!(
            [
                name(AUTHORITY),
                name(SYSTEM),
                name(PARAM_FLOW),
                name(FLOW),
                name(DEFAULT_CIRCUIT_BREAKER),
                name(DEGRADE),
            ],
            [
                "authority",
                "system",
                "param_flow",
                "flow",
                "default_circuit_breaker",
                "degrade"
            ]
        );
        assert!(
            SLOTS.windows(2).all(|w| w[0].order < w[1].order),
            "in chain order"
        );
        assert_eq!((name(LOG), name(STATISTIC)), ("log", "statistic"));
    }

    /// `Builtin::unwind` runs the block hooks of these slots, and only these have one.
    #[test]
    fn the_block_hooks_are_the_ones_unwind_runs() {
        let fg = crate::Floodgate::default();
        let parts = Parts {
            rules: &fg.inner.rules,
            occupy_timeout_ms: 500,
        };
        let with_block_hooks: Vec<&str> = SLOTS
            .iter()
            .filter(|s| (s.build)(&parts).hooks().block)
            .map(|s| s.name)
            .collect();
        assert_eq!(
            with_block_hooks,
            [
                "log",
                "statistic",
                "param_flow",
                "default_circuit_breaker",
                "degrade"
            ]
        );
        assert_eq!(position("degrade") as usize, SLOTS.len() - 1, "the last");
    }
}
