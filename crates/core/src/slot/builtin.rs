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
pub(super) const SLOTS: [(&str, i32); 10] = [
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

/// Where each checking slot sits in the chain, for unwinding a block through the slots before it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Positions {
    pub(super) authority: usize,
    pub(super) system: usize,
    pub(super) param_flow: usize,
    pub(super) flow: usize,
    pub(super) default_circuit_breaker: usize,
    pub(super) degrade: usize,
}

/// The entry hooks of the built-in chain; a block is unwound through the block hooks of the slots before
/// the one that blocked (`chain`'s generic unwinding) and returned as it was made, without wrapping it.
#[inline]
pub(super) fn entry(
    chain: &SlotChain,
    at: &Positions,
    cx: &mut SlotContext<'_>,
) -> Result<(), BlockError> {
    macro_rules! check {
        ($slot:expr, $position:expr) => {
            if let Err(block) = $slot.entry(cx) {
                chain.unwind(cx, $position, &block);
                return Err(block);
            }
        };
    }
    // Neither can fail.
    let _ = NodeSelectorSlot.entry(cx);
    let _ = ClusterBuilderSlot.entry(cx);
    let engine = cx.engine;
    if engine.authority.in_force() {
        check!(AuthoritySlot, at.authority);
    }
    if engine.system.in_force() {
        check!(SystemSlot, at.system);
    }
    if engine.param_flow.any() {
        check!(ParamFlowSlot, at.param_flow);
    }
    if engine.flow.in_force() {
        check!(FlowSlot, at.flow);
    }
    if engine.degrade.in_force() {
        check!(DefaultCircuitBreakerSlot, at.default_circuit_breaker);
        check!(DegradeSlot, at.degrade);
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
    if engine.param_flow.any() {
        ParamFlowSlot.exit(cx);
    }
    if engine.degrade.in_force() {
        DefaultCircuitBreakerSlot.exit(cx);
        DegradeSlot.exit(cx);
    }
}
