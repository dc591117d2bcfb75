//! StatisticSlot (−7000): counts what happened, after the rest of the chain decided.
//!
//! On pass: concurrency +1 and `count` passes on the context node (if it counts), the cluster node, the
//! origin node and, for inbound entries, the global inbound node. A prioritized entry that borrowed future
//! capacity counts as a pass of that window (the flow slot counts it there, on the node it borrowed
//! from), and a queued entry (a rate limiter's wait) as a pass of the window it runs in, as Sentinel
//! counts it after the controller's sleep (at most a minute ahead). On block: `count` blocks on the
//! same nodes. On exit: RT and `count` successes, `count` exceptions if an error was traced, and
//! concurrency −1.

use super::{EngineCore, ExitContext, Hooks, Slot, SlotContext};
use crate::block::BlockError;
use crate::entry_type::EntryType;
use crate::node::StatisticNode;

/// Sentinel's `StatisticSlot`.
#[derive(Debug, Default)]
pub struct StatisticSlot;

#[inline]
fn nodes<'a>(
    engine: &'a EngineCore,
    cluster: &'a StatisticNode,
    node: Option<&'a StatisticNode>,
    origin: Option<u32>,
    entry_type: EntryType,
) -> [Option<&'a StatisticNode>; 4] {
    [
        Some(cluster),
        node,
        origin.and_then(|id| engine.registry.origin_node(id)),
        (entry_type == EntryType::In).then_some(&engine.registry.inbound.stats),
    ]
}

/// The nodes an entry counts on (see [`nodes`]).
#[inline]
fn entry_nodes<'a>(
    cx: &SlotContext<'a>,
    node: Option<&'a StatisticNode>,
) -> impl Iterator<Item = &'a StatisticNode> {
    nodes(
        cx.engine,
        &cx.resource.cluster.stats,
        node,
        cx.origin_node_id,
        cx.entry_type,
    )
    .into_iter()
    .flatten()
}

/// The pass of an entry that waits: a queued one counts in the window it runs in (Sentinel counts it
/// after the controller's sleep); a prioritized one that borrowed its pass from a future window (it
/// waits for that window) was counted there by the flow slot, and counts only its concurrency here.
/// Out of line: the usual pass (no wait) stays small enough to inline (with this inline, every entry
/// was ≈ 20 ns slower).
#[cold]
#[inline(never)]
fn waited_pass<'a>(cx: &SlotContext<'a>, node: Option<&'a StatisticNode>) {
    let (at, count) = (cx.at, cx.count);
    let runs_at = at
        .now
        .saturating_add(u64::try_from(cx.wait.as_millis()).unwrap_or(u64::MAX));
    for n in entry_nodes(cx, node) {
        n.increase_thread(cx.stripe);
        if !cx.pass_borrowed {
            n.add_queued_pass(at, runs_at, count);
        }
    }
}

impl Slot for StatisticSlot {
    #[inline]
    fn on_pass(&self, cx: &mut SlotContext<'_>) {
        let node = cx.default_node.and_then(|n| n.counting());
        cx.node_counted = node.is_some();
        // A borrowed pass always waits (at least until its window starts).
        if !cx.wait.is_zero() {
            return waited_pass(cx, node);
        }
        let (at, count) = (cx.at, cx.count);
        for n in entry_nodes(cx, node) {
            n.increase_thread(cx.stripe);
            n.add_pass(at, count);
        }
    }

    fn on_block(&self, cx: &mut SlotContext<'_>, _block: &BlockError) {
        let node = cx.default_node.and_then(|n| n.counting());
        let (at, count) = (cx.at, cx.count);
        for n in entry_nodes(cx, node) {
            n.add_block(at, count);
        }
    }

    #[inline]
    fn exit(&self, cx: &mut ExitContext<'_>) {
        let node = if cx.node_counted {
            cx.node_id
                .and_then(|id| cx.engine.registry.default_node(id))
                .and_then(|n| n.counting())
        } else {
            None
        };
        let (at, count, rt) = (cx.at, cx.count, cx.rt_ms);
        for n in nodes(
            cx.engine,
            &cx.resource.cluster.stats,
            node,
            cx.origin_node_id,
            cx.entry_type,
        )
        .into_iter()
        .flatten()
        {
            n.add_rt_and_success(at, rt, count);
            if cx.error {
                n.add_exception(at, count);
            }
            n.decrease_thread(cx.stripe);
        }
    }

    fn hooks(&self) -> Hooks {
        Hooks {
            entry: false,
            pass: true,
            block: true,
            exit: true,
        }
    }
}
