//! The agent's store of per-second metrics: every second the collector moves each resource's finished
//! seconds out of the engine into a ring of the last few minutes, which the `metric` command serves.
//!
//! The same lines are summed into lifetime totals per resource (pass, block, success, exception, RT sum):
//! the engine keeps only windows, and a monotonic counter for Prometheus is exact when it adds each
//! finished second once. Totals are kept for the engine's first [`Floodgate::max_resources`] resources
//! (in the order the engine made them, the same the Prometheus exporter names) plus the inbound node;
//! the seconds of any further resource (one made past the cap because a rule names it) add up under
//! [`OTHER_RESOURCES`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use floodgate_core::stats::MetricLine;
use floodgate_core::{Floodgate, TOTAL_INBOUND_TRAFFIC};

/// The name under which resources past the cap are summed (in totals and in the Prometheus exposition).
pub const OTHER_RESOURCES: &str = "__other__";

/// One resource's counts since the agent started collecting: the sums of its per-second metric lines
/// (the first collection reaches back at most a minute, the engine's history).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceTotals {
    /// Entries that passed.
    pub pass: u64,
    /// Entries refused by a rule.
    pub block: u64,
    /// Entries that completed (errors included, as Sentinel counts them).
    pub success: u64,
    /// Completed entries that traced an error.
    pub exception: u64,
    /// The sum of the completed entries' response times, in ms.
    pub rt_sum_ms: u64,
}

impl ResourceTotals {
    fn add(&mut self, l: &MetricLine) {
        self.pass += l.pass_qps;
        self.block += l.block_qps;
        self.success += l.success_qps;
        self.exception += l.exception_qps;
        self.rt_sum_ms += l.rt_sum;
    }
}

/// Finished seconds, oldest first.
#[derive(Debug)]
pub struct MetricStore {
    retention_secs: u64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The last second collected.
    collected_through: Option<u64>,
    seconds: VecDeque<(u64, Vec<MetricLine>)>,
    totals: Vec<(Arc<str>, ResourceTotals)>,
    index: HashMap<Arc<str>, usize>,
    other: ResourceTotals,
}

impl State {
    /// Adds `lines` to the totals: resources in `named` (and the inbound node) each their own, the
    /// rest under [`OTHER_RESOURCES`].
    fn add_totals(&mut self, lines: &[MetricLine], named: &HashSet<Arc<str>>) {
        for line in lines {
            let inbound = &*line.resource == TOTAL_INBOUND_TRAFFIC;
            let slot = match self.index.get(&line.resource) {
                Some(&i) => Some(i),
                None if inbound || named.contains(&line.resource) => {
                    self.totals
                        .push((line.resource.clone(), ResourceTotals::default()));
                    self.index
                        .insert(line.resource.clone(), self.totals.len() - 1);
                    Some(self.totals.len() - 1)
                }
                None => None,
            };
            match slot.and_then(|i| self.totals.get_mut(i)) {
                Some((_, totals)) => totals.add(line),
                None => self.other.add(line),
            }
        }
    }
}

/// The resources that get totals and labels of their own: the engine's first
/// [`Floodgate::max_resources`], in the order it made them (the store and the Prometheus exporter
/// name the same ones).
pub(crate) fn named_resources(fg: &Floodgate) -> HashSet<Arc<str>> {
    fg.resource_names()
        .into_iter()
        .take(fg.max_resources())
        .collect()
}

/// A metric line in Sentinel's thin wire format (no date; `|` in a resource name becomes `_`).
pub fn thin_line(l: &MetricLine) -> String {
    format!(
        "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
        l.timestamp,
        l.resource.replace(['|', '\n', '\r'], "_"),
        l.pass_qps,
        l.block_qps,
        l.success_qps,
        l.exception_qps,
        l.rt,
        l.occupied_pass_qps,
        l.concurrency,
        l.classification
    )
}

impl MetricStore {
    /// A store keeping `retention`.
    pub fn new(retention: Duration) -> Self {
        MetricStore {
            retention_secs: retention.as_secs().max(1),
            state: Mutex::new(State::default()),
        }
    }

    /// Moves the seconds finished since the last collection out of `fg` (at most the last minute, the
    /// engine's history). Returns the lines collected, for the metric log.
    pub fn collect(&self, fg: &Floodgate) -> Vec<MetricLine> {
        self.collect_then(fg, |_| ())
    }

    /// [`collect`](Self::collect), handing the lines to `then` before another collection can start:
    /// two collections (the agent's timer and [`Agent::collect_metrics`](crate::Agent::collect_metrics))
    /// then write their lines to the metric log in time order.
    pub fn collect_then(
        &self,
        fg: &Floodgate,
        then: impl FnOnce(&[MetricLine]),
    ) -> Vec<MetricLine> {
        let now = fg.clock().now_ms();
        let current = now / 1000;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let from = state
            .collected_through
            .map_or(current.saturating_sub(60), |s| s + 1)
            .max(current.saturating_sub(60));
        let Some(to) = current.checked_sub(1) else {
            return Vec::new();
        };
        if from > to {
            return Vec::new();
        }
        let lines = fg.metrics(from * 1000, to * 1000 + 999);
        state.collected_through = Some(to);
        state.add_totals(&lines, &named_resources(fg));
        let mut i = 0;
        while i < lines.len() {
            let second = lines[i].timestamp;
            let end = lines[i..]
                .iter()
                .position(|l| l.timestamp != second)
                .map_or(lines.len(), |p| i + p);
            state
                .seconds
                .push_back((second / 1000, lines[i..end].to_vec()));
            i = end;
        }
        let oldest = current.saturating_sub(self.retention_secs);
        while state.seconds.front().is_some_and(|(s, _)| *s < oldest) {
            state.seconds.pop_front();
        }
        then(&lines);
        lines
    }

    /// Every resource's totals, in the order first seen (the inbound node included), then
    /// [`OTHER_RESOURCES`] if resources past the cap had traffic.
    pub fn totals(&self) -> Vec<(Arc<str>, ResourceTotals)> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut totals = state.totals.clone();
        if state.other != ResourceTotals::default() {
            totals.push((Arc::from(OTHER_RESOURCES), state.other));
        }
        totals
    }

    /// The lines with `start ≤ timestamp ≤ end` (ms), in time order.
    pub fn between(&self, start: u64, end: u64) -> Vec<MetricLine> {
        let mut lines = Vec::new();
        self.for_each_between(start, end, |line| {
            lines.push(line.clone());
            true
        });
        lines
    }

    /// Calls `f` on the lines with `start ≤ timestamp ≤ end` (ms), in time order, until it returns
    /// `false`. Nothing is copied; the store is locked meanwhile, and the seconds before `start` are
    /// skipped by a binary search, so a query costs what it returns, not what is kept.
    pub fn for_each_between(&self, start: u64, end: u64, mut f: impl FnMut(&MetricLine) -> bool) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let first = state
            .seconds
            .partition_point(|(s, _)| s.saturating_mul(1000).saturating_add(999) < start);
        for (second, lines) in state.seconds.range(first..) {
            if second.saturating_mul(1000) > end {
                return;
            }
            for line in lines {
                if line.timestamp >= start && line.timestamp <= end && !f(line) {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use floodgate_core::ManualClock;

    /// A collection hands its lines on (to the metric log) before another collection can start, so the
    /// older lines are written first (else the log took them for out of order and dropped them).
    #[test]
    fn lines_are_handed_on_before_another_collection_can_start() {
        let clock = ManualClock::new(1_700_000_000_000);
        let fg = Floodgate::builder().clock(clock.clone()).build();
        let store = MetricStore::new(Duration::from_secs(60));
        clock.set(1_700_000_000_100);
        drop(fg.entry("R").enter());
        clock.set(1_700_000_002_100);
        let mut handed = 0;
        store.collect_then(&fg, |lines| {
            handed = lines.len();
            assert!(
                store.state.try_lock().is_err(),
                "a collection cannot start meanwhile"
            );
        });
        assert!(handed > 0);
    }

    #[test]
    fn collects_each_finished_second_once_and_expires_old_ones() {
        let clock = ManualClock::new(1_700_000_000_000);
        let fg = Floodgate::builder().clock(clock.clone()).build();
        let store = MetricStore::new(Duration::from_secs(5));
        for s in 0..10u64 {
            clock.set(1_700_000_000_000 + s * 1000 + 100);
            drop(fg.entry("R").enter());
            store.collect(&fg);
        }
        clock.set(1_700_000_010_100);
        store.collect(&fg);
        let lines = store.between(0, u64::MAX);
        let seconds: Vec<u64> = lines
            .iter()
            .filter(|l| &*l.resource == "R")
            .map(|l| l.timestamp)
            .collect();
        assert_eq!(seconds.len(), 5, "5 s retention: {seconds:?}");
        assert!(lines.iter().all(|l| l.pass_qps == 1));
        assert_eq!(
            store.between(1_700_000_009_000, 1_700_000_009_000).len(),
            1,
            "exactly one second"
        );
        // A visit stops when asked, and starts at its first second.
        let mut seen = Vec::new();
        store.for_each_between(1_700_000_007_500, u64::MAX, |line| {
            seen.push(line.timestamp);
            seen.len() < 2
        });
        assert_eq!(seen, [1_700_000_008_000, 1_700_000_009_000]);
    }

    #[test]
    fn thin_lines_have_ten_fields() {
        let l = MetricLine {
            timestamp: 1000,
            resource: "a|b".into(),
            pass_qps: 1,
            block_qps: 2,
            success_qps: 3,
            exception_qps: 4,
            rt: 5,
            rt_sum: 15,
            occupied_pass_qps: 6,
            concurrency: 7,
            classification: 1,
        };
        assert_eq!(thin_line(&l), "1000|a_b|1|2|3|4|5|6|7|1");
    }
}
