//! The slot chain of an engine: the built-in slots (`builtin.rs`), the slots other crates registered
//! and the builder's edits, sorted by order; run as straight-line code when the slots are exactly the
//! built-in ones, else through the slot list.

mod builtin;

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

pub(crate) use builtin::Parts;

use crate::block::BlockError;
use crate::rule_sets::RuleSets;
use crate::rules::RuleType;
use crate::slot::{ExitContext, Hooks, Slot, SlotContext, SlotRegistration};
use builtin::Builtin;

/// A change a builder makes to the registered slots.
#[derive(Debug)]
pub(crate) enum ChainEdit {
    Add {
        name: &'static str,
        order: i32,
        slot: Arc<dyn Slot>,
    },
    Replace {
        name: &'static str,
        slot: Arc<dyn Slot>,
    },
    Remove {
        name: &'static str,
    },
}

#[derive(Debug, Clone)]
struct ChainSlot {
    name: &'static str,
    order: i32,
    /// The slot's position in the whole chain (what it keeps with an entry is filed under it).
    position: u32,
    slot: Arc<dyn Slot>,
    hooks: Hooks,
    rule_type: Option<RuleType>,
}

impl ChainSlot {
    /// Whether the slot has work: it enforces no engine rule kind, or one of that kind is in force.
    #[inline]
    fn active(&self, rules: &RuleSets) -> bool {
        self.rule_type.is_none_or(|t| rules.in_force(t))
    }

    /// Whether the slot's pass or block hook runs for the entry `cx`: it is active, or it kept a word
    /// with the entry (it took something the hook settles, under rules since removed).
    #[inline]
    fn sees(&self, rules: &RuleSets, cx: &SlotContext<'_>) -> bool {
        self.active(rules) || cx.kept.holds(self.position)
    }
}

/// The slots of an engine, sorted by order. Built once per engine; every resource runs it. Each hook
/// has its own list of the slots that implement it, so a call never visits a slot with nothing to do.
pub(crate) struct SlotChain {
    slots: Box<[ChainSlot]>,
    entries: Box<[ChainSlot]>,
    /// In reverse chain order.
    passes: Box<[ChainSlot]>,
    blocks: Box<[ChainSlot]>,
    exits: Box<[ChainSlot]>,
    /// The slots are exactly the built-in ones: they run as static calls.
    builtin: Option<Builtin>,
    /// The engine's rules, for the in-force flags of the slots that enforce a rule kind.
    rules: RuleSets,
}

impl std::fmt::Debug for SlotChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotChain")
            .field("slots", &self.slots)
            .field("builtin", &self.builtin.is_some())
            .finish_non_exhaustive()
    }
}

impl SlotChain {
    pub(crate) fn build(edits: Vec<ChainEdit>, parts: &Parts<'_>) -> Self {
        let edited = !edits.is_empty();
        let mut slots: Vec<(&'static str, i32, Arc<dyn Slot>)> = builtin::SLOTS
            .iter()
            .map(|s| (s.name, s.order, (s.build)(parts)))
            .chain(
                inventory::iter::<SlotRegistration>
                    .into_iter()
                    .map(|r| (r.name, r.order, (r.build)())),
            )
            .collect();
        for edit in edits {
            match edit {
                ChainEdit::Add { name, order, slot } => {
                    slots.retain(|(n, _, _)| *n != name);
                    slots.push((name, order, slot));
                }
                ChainEdit::Replace { name, slot } => {
                    if let Some(entry) = slots.iter_mut().find(|(n, _, _)| *n == name) {
                        entry.2 = slot;
                    }
                }
                ChainEdit::Remove { name } => slots.retain(|(n, _, _)| *n != name),
            }
        }
        slots.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(b.0)));
        let slots: Box<[ChainSlot]> = slots
            .into_iter()
            .enumerate()
            .map(|(position, (name, order, slot))| ChainSlot {
                name,
                order,
                // A chain holds far fewer than 2^31 slots.
                position: position as u32,
                hooks: slot.hooks(),
                rule_type: slot.rule_type(),
                slot,
            })
            .collect();
        let with = |hook: fn(&Hooks) -> bool| -> Box<[ChainSlot]> {
            slots.iter().filter(|s| hook(&s.hooks)).cloned().collect()
        };
        let entries = with(|h| h.entry);
        let mut passes = with(|h| h.pass);
        passes.reverse();
        let blocks = with(|h| h.block);
        let exits = with(|h| h.exit);
        let builtin = (!edited && builtin::is_builtin(slots.iter().map(|s| (s.name, s.order))))
            .then(|| Builtin::new(parts));
        SlotChain {
            slots,
            entries,
            passes,
            blocks,
            exits,
            builtin,
            rules: parts.rules.clone(),
        }
    }

    /// Runs the entry hooks, then the pass or block hooks.
    #[inline]
    pub(crate) fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        if let Some(builtin) = &self.builtin {
            return builtin.entry(self, cx);
        }
        self.entry_dynamic(cx)
    }

    /// [`entry`](Self::entry) through the slot list (a chain with custom slots). Out of line: the
    /// built-in chain's path stays small.
    #[inline(never)]
    fn entry_dynamic(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        let rules = &self.rules;
        // A custom entry hook may panic after an earlier slot took something for the entry (the
        // hot-parameter slot's values counted in flight): the slots whose entry hooks ran are told the
        // entry is abandoned before the panic goes on. A breaker's probe reservation, attached, is
        // released when the context drops.
        // Only the entry hooks: the block hooks run outside (the parameter slot's releases what it
        // counted; released again here after a block hook that panicked, another call's count went).
        let mut ran = 0;
        let checked = panic::catch_unwind(AssertUnwindSafe(|| {
            for (i, s) in self.entries.iter().enumerate() {
                if s.active(rules) {
                    ran = i + 1;
                    cx.position = s.position;
                    s.slot.entry(cx).map_err(|block| (s.position, block))?;
                }
            }
            Ok(())
        }));
        match checked {
            Ok(Err((position, block))) => {
                self.unwind(cx, position, &block);
                return Err(block);
            }
            Ok(Ok(())) => {}
            Err(payload) => {
                for s in &self.entries[..ran] {
                    cx.position = s.position;
                    s.slot.on_abandon(cx);
                }
                panic::resume_unwind(payload);
            }
        }
        // Custom pass hooks may panic after the statistic slot counted the call in flight: the exit
        // hooks of the slots that passed it then run before the panic goes on, so that the call is not
        // left counted in flight (`a_panicking_pass_hook_leaves_nothing_in_flight`).
        let mut reached = 0;
        let passed = panic::catch_unwind(AssertUnwindSafe(|| {
            for (i, s) in self.passes.iter().enumerate() {
                if s.sees(rules, cx) {
                    reached = i;
                    cx.position = s.position;
                    s.slot.on_pass(cx);
                }
            }
        }));
        if let Err(payload) = passed {
            let not_passed: Vec<u32> = self.passes[reached..].iter().map(|s| s.position).collect();
            self.exit_now(cx, &not_passed);
            panic::resume_unwind(payload);
        }
        Ok(())
    }

    /// Exits an entry whose pass hook panicked, at once and as failed, through the exit hooks of the
    /// slots that are not in `not_passed` (whose pass hooks did not run).
    #[cold]
    fn exit_now(&self, cx: &mut SlotContext<'_>, not_passed: &[u32]) {
        let kept = cx.kept.take_exit();
        let mut exit = ExitContext {
            engine: cx.engine,
            resource: cx.resource,
            context: cx.context,
            node_id: cx.node_id,
            node_counted: cx.node_counted,
            origin_node_id: cx.origin_node_id,
            origin: cx.origin,
            entry_type: cx.entry_type,
            count: cx.count,
            args: cx.args,
            rt_ms: 0,
            error: true,
            now_ms: cx.now_ms,
            stripe: cx.stripe,
            at: cx.at,
            position: 0,
            kept: &kept,
        };
        self.run_exits(&mut exit, |s| !not_passed.contains(&s.position));
    }

    /// Runs the block hooks of the slots before `position` (the slot that blocked), in reverse order.
    #[cold]
    fn unwind(&self, cx: &mut SlotContext<'_>, position: u32, block: &BlockError) {
        let rules = &self.rules;
        for before in self.blocks.iter().rev() {
            if before.position < position && before.sees(rules, cx) {
                cx.position = before.position;
                before.slot.on_block(cx, block);
            }
        }
    }

    /// Runs the exit hooks in order.
    #[inline]
    pub(crate) fn exit(&self, cx: &mut ExitContext<'_>) {
        if let Some(builtin) = &self.builtin {
            builtin.exit(&self.rules, cx);
            return;
        }
        self.run_exits(cx, |_| true);
    }

    /// Runs the exit hooks of the slots `runs` picks, every one even if one panics, so that the
    /// statistic slot's still runs after a custom slot's that panicked and the call does not stay in
    /// flight for good (`a_panicking_exit_hook_leaves_the_thread_clean`); the first panic then goes
    /// on. Out of line, as [`entry_dynamic`](Self::entry_dynamic).
    #[inline(never)]
    fn run_exits(&self, cx: &mut ExitContext<'_>, runs: impl Fn(&ChainSlot) -> bool) {
        let rules = &self.rules;
        // A slot that marked its exit (`SlotContext::keep_until_exit`: it took something to give back,
        // a breaker's probe, hot-parameter counts) exits even once it is no longer active, so that
        // what it took under rules removed since is given back
        // (`a_marked_exit_runs_after_the_rules_are_removed`). Only those: another slot inactive at
        // exit is skipped, and one skipped at entry marked nothing, so that a slot counting at entry
        // and giving back at exit never gives back what it did not take and goes below zero
        // (`a_slot_skipped_at_entry_is_skipped_at_exit_whatever_the_entry_carries`).
        let mut first_panic = None;
        for s in self.exits.iter() {
            if (s.active(rules) || cx.kept.marked(s.position)) && runs(s) {
                cx.position = s.position;
                if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| s.slot.exit(cx))) {
                    first_panic.get_or_insert(payload);
                }
            }
        }
        if let Some(payload) = first_panic {
            panic::resume_unwind(payload);
        }
    }

    /// The slots, in chain order.
    pub(crate) fn slot_list(&self) -> Box<[Arc<dyn Slot>]> {
        self.slots.iter().map(|s| s.slot.clone()).collect()
    }

    pub(crate) fn describe(&self) -> Vec<(&'static str, i32)> {
        self.slots.iter().map(|s| (s.name, s.order)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Floodgate;
    use crate::slot::NodeSelectorSlot;

    #[test]
    fn only_the_unedited_built_in_slots_run_as_straight_line_code() {
        let fg = Floodgate::default();
        let parts = Parts {
            rules: &fg.inner.rules,
            occupy_timeout_ms: 500,
        };
        assert!(
            SlotChain::build(Vec::new(), &parts).builtin.is_some(),
            "the core's own slots are the built-in ones"
        );
        let edits = [
            ChainEdit::Add {
                name: "extra",
                order: 0,
                slot: Arc::new(NodeSelectorSlot),
            },
            ChainEdit::Replace {
                name: "flow",
                slot: Arc::new(NodeSelectorSlot),
            },
            ChainEdit::Remove { name: "log" },
        ];
        for edit in edits {
            assert!(SlotChain::build(vec![edit], &parts).builtin.is_none());
        }
    }
}
