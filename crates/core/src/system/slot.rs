//! SystemSlot (−5000): adaptive protection of the whole process, for inbound entries only.
//!
//! Outbound entries ([`EntryType::Out`], the default) are never checked, as in Sentinel: mark the
//! requests your service receives with `.entry_type(EntryType::In)`. An engine whose system rules met
//! 1000 outbound entries and that never saw an inbound one says so, once per rule load (a `warn` event
//! on target `floodgate::system`:
//! `system_rules_that_only_ever_meet_outbound_entries_are_warned_about_once_per_load`): its system
//! rules protect nothing. An inbound entry asking for `count` permits is checked against the global
//! inbound node (`__total_inbound_traffic__`, figures from before this entry) and the merged
//! thresholds, in Sentinel's order; the first dimension that refuses blocks it:
//!
//! 1. **qps**: `passQps + count > qps`;
//! 2. **thread**: `inFlight + count > maxThread` (the flow THREAD grade's meaning: `maxThread = 2`
//!    admits two concurrent inbound calls; Sentinel's `inFlight > maxThread` admits three:
//!    `max_thread_has_the_flow_thread_grade_meaning`);
//! 3. **rt**: `avgRt > avgRt threshold`;
//! 4. **load**: the load average is above `highestSystemLoad` **and** the BBR condition says the
//!    process holds more requests than it can complete:
//!    `inFlight > 1 && inFlight > maxSuccessQps × minRt / 1000`;
//! 5. **cpu**: the CPU usage is strictly above `highestCpuUsage`.
//!
//! An unavailable load or CPU reading does not block (fail-open, like Sentinel with a `-1` reading); the
//! system status reports it as unavailable. A block is a [`BlockKind::System`] block carrying a
//! [`SystemLimit`](super::SystemLimit) that names the dimension.

use std::fmt;
use std::sync::Arc;

use super::limit::SystemLimitType;
use super::manager::{SystemRules, SystemSnapshot};
use crate::block::{BlockError, BlockKind};
use crate::entry_type::EntryType;
use crate::rules::RuleType;
use crate::slot::{Hooks, Slot, SlotContext};

/// Sentinel's `SystemSlot`.
pub(crate) struct SystemSlot {
    rules: Arc<SystemRules>,
}

impl fmt::Debug for SystemSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SystemSlot").finish_non_exhaustive()
    }
}

impl SystemSlot {
    /// The slot enforcing `rules` (an engine's own).
    pub(crate) fn new(rules: Arc<SystemRules>) -> Self {
        SystemSlot { rules }
    }
}

impl Slot for SystemSlot {
    #[inline]
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        // The chain calls it only while system rules are in force (the built-in path and the generic
        // loop both check the engine's in-force mask first): outbound entries are noted only then.
        let system = &*self.rules;
        if cx.entry_type != EntryType::In {
            system.note_outbound(&cx.engine.registry.inbound.stats);
            return Ok(());
        }
        let snapshot = system.snapshot();
        if !snapshot.is_active() {
            return Ok(());
        }
        match check(cx, system, &snapshot) {
            Ok(()) => Ok(()),
            Err(limit_type) => Err(cx
                .block(BlockKind::System)
                .with_rule(crate::thread_copies::rule(snapshot.limit(limit_type)))),
        }
    }

    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }

    fn rule_type(&self) -> Option<RuleType> {
        Some(RuleType::System)
    }
}

/// Whether the BBR condition admits: with `threads` in flight, at most what the best bucket's completion
/// rate times the minimum RT says the process can hold (or a single request).
#[inline]
pub(crate) fn bbr_admits(threads: u64, max_success_qps: f64, min_rt: f64) -> bool {
    !(threads > 1 && threads as f64 > max_success_qps * min_rt / 1000.0)
}

#[inline]
fn check(
    cx: &SlotContext<'_>,
    system: &SystemRules,
    snapshot: &SystemSnapshot,
) -> Result<(), SystemLimitType> {
    let t = &snapshot.thresholds;
    let node = &cx.engine.registry.inbound.stats;
    let now = cx.now_ms;
    if let Some(qps) = t.qps {
        if node.pass_qps(now) + f64::from(cx.count) > qps {
            return Err(SystemLimitType::Qps);
        }
    }
    let threads = node.cur_thread_num();
    if let Some(max) = t.max_thread {
        if threads.saturating_add(u64::from(cx.count)) > max {
            return Err(SystemLimitType::Thread);
        }
    }
    if let Some(rt) = t.avg_rt {
        if node.avg_rt(now) > rt as f64 {
            return Err(SystemLimitType::Rt);
        }
    }
    if let Some(highest) = t.highest_system_load {
        let probe = &system.probe;
        if probe.load_average().is_some_and(|load| load > highest)
            && !bbr_admits(threads, node.max_success_qps(now), node.min_rt(now))
        {
            return Err(SystemLimitType::Load);
        }
    }
    if let Some(highest) = t.highest_cpu_usage {
        if system.probe.cpu_usage().is_some_and(|cpu| cpu > highest) {
            return Err(SystemLimitType::Cpu);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::bbr_admits;

    #[test]
    fn bbr_condition() {
        // One request in flight is always admitted.
        assert!(bbr_admits(1, 0.0, 5000.0));
        assert!(bbr_admits(0, 0.0, 5000.0));
        // 10 completions/s at 100 ms minimum RT: the process holds 1 request; 2 in flight is too many.
        assert!(!bbr_admits(2, 10.0, 100.0));
        // 40/s at 100 ms: 4 fit, 5 do not.
        assert!(bbr_admits(4, 40.0, 100.0));
        assert!(!bbr_admits(5, 40.0, 100.0));
    }
}
