//! The agent's store of per-second metrics: every second the collector moves each resource's finished
//! seconds out of the engine into a ring of the last few minutes, which the `metric` command serves.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use floodgate_core::{Floodgate, MetricLine};

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
        lines
    }

    /// The lines with `start ≤ timestamp ≤ end` (ms), in time order.
    pub fn between(&self, start: u64, end: u64) -> Vec<MetricLine> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state
            .seconds
            .iter()
            .filter(|(s, _)| s * 1000 >= start.saturating_sub(999) && s * 1000 <= end)
            .flat_map(|(_, lines)| lines.iter())
            .filter(|l| l.timestamp >= start && l.timestamp <= end)
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use floodgate_core::ManualClock;

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
            occupied_pass_qps: 6,
            concurrency: 7,
            classification: 1,
        };
        assert_eq!(thin_line(&l), "1000|a_b|1|2|3|4|5|6|7|1");
    }
}
