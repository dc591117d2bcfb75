//! The built-in chain, run with static calls.
//!
//! An engine whose slots are exactly the built-in ones (no builder edit, no slot registered by another
//! crate) runs them as straight-line code: each rule slot behind its kind's in-force flag, the
//! statistics inlined into the entry and the exit. It does what the generic loop over `dyn Slot` does
//! with those slots, in the same order (Sentinel's: node selector, cluster builder, log, statistic,
//! authority, system, hot parameters, flow, default circuit breakers, degrade), without an indirect call
//! or a per-slot flag lookup.

use super::chain::SlotChain;
use super::{
    ClusterBuilderSlot, ExitContext, NodeSelectorSlot, Slot, SlotContext, StatisticSlot, order,
};
use crate::authority::AuthoritySlot;
use crate::block::BlockError;
use crate::degrade::{DefaultCircuitBreakerSlot, DegradeSlot};
use crate::flow::FlowSlot;
use crate::param_flow::ParamFlowSlot;
use crate::system::SystemSlot;

/// The built-in slots' names and orders, as registered, in chain order.
const SLOTS: [(&str, i32); 10] = [
    ("node_selector", order::NODE_SELECTOR),
    ("cluster_builder", order::CLUSTER_BUILDER),
    ("log", order::LOG),
    ("statistic", order::STATISTIC),
    ("authority", order::AUTHORITY),
    ("system", order::SYSTEM),
    ("param_flow", order::PARAM_FLOW),
    ("flow", order::FLOW),
    ("default_circuit_breaker", order::DEFAULT_CIRCUIT_BREAKER),
    ("degrade", order::DEGRADE),
];

/// Where each checking slot sits in [`SLOTS`] (and so in a built-in chain), for unwinding a block through
/// the slots before it.
const AUTHORITY: usize = 4;
const SYSTEM: usize = 5;
const PARAM_FLOW: usize = 6;
const FLOW: usize = 7;
const DEFAULT_CIRCUIT_BREAKER: usize = 8;
const DEGRADE: usize = 9;

/// Whether `slots` (names and orders, in chain order) are exactly the built-in ones.
pub(super) fn is_builtin<'a>(mut slots: impl ExactSizeIterator<Item = (&'a str, i32)>) -> bool {
    slots.len() == SLOTS.len() && SLOTS.iter().all(|s| slots.next() == Some(*s))
}

/// The entry hooks of the built-in chain; a block is unwound through the block hooks of the slots before
/// the one that blocked (`chain`'s generic unwinding) and returned as it was made, without wrapping it.
#[inline]
pub(super) fn entry(chain: &SlotChain, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
    macro_rules! check {
        ($slot:expr, $position:expr) => {
            if let Err(block) = $slot.entry(cx) {
                chain.unwind(cx, $position, &block);
                return Err(block);
            }
        };
    }
    // Neither ever blocks.
    let selected = NodeSelectorSlot.entry(cx);
    let built = ClusterBuilderSlot.entry(cx);
    debug_assert!(selected.is_ok() && built.is_ok());
    let engine = cx.engine;
    if engine.rules.authority.in_force() {
        check!(AuthoritySlot, AUTHORITY);
    }
    if engine.rules.system.in_force() {
        check!(SystemSlot, SYSTEM);
    }
    if engine.rules.param_flow.in_force() {
        check!(ParamFlowSlot, PARAM_FLOW);
    }
    if engine.rules.flow.in_force() {
        check!(FlowSlot, FLOW);
    }
    // Read once for the checks and the pass hooks (the generic loop reads it per hook; a load racing
    // between the two then leaves a reserved probe uncommitted there, never here).
    if engine.rules.degrade.in_force() {
        check!(DefaultCircuitBreakerSlot, DEFAULT_CIRCUIT_BREAKER);
        check!(DegradeSlot, DEGRADE);
        // The pass hooks, in reverse order.
        DegradeSlot.on_pass(cx);
        DefaultCircuitBreakerSlot.on_pass(cx);
    }
    StatisticSlot.on_pass(cx);
    Ok(())
}

/// The exit hooks of the built-in chain, in order.
#[inline]
pub(super) fn exit(cx: &mut ExitContext<'_>) {
    StatisticSlot.exit(cx);
    let engine = cx.engine;
    // Not `param_flow.any()`: counts taken under rules removed since are released all the same.
    if cx.param_generation != 0 {
        ParamFlowSlot.exit(cx);
    }
    // A probe admitted before the degrade rules were removed still completes (dropped instead, it
    // would be reported as a failed probe).
    if engine.rules.degrade.in_force() || !cx.attachments.is_empty() {
        DefaultCircuitBreakerSlot.exit(cx);
        DegradeSlot.exit(cx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_positions_name_their_slots() {
        let name = |position: usize| SLOTS[position].0;
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
        assert!(SLOTS.windows(2).all(|w| w[0].1 < w[1].1), "in chain order");
    }
}
