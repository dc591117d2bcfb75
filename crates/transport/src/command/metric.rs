//! `metric`: per-second lines of every resource, in Sentinel's thin wire format,
//!
//! ```text
//! timestamp|resource|passQps|blockQps|successQps|exceptionQps|rt|occupiedPassQps|concurrency|classification
//! ```
//!
//! served from the agent's in-memory store (the last 5 minutes by default). `startTime` is required (an
//! empty answer without it, as in Sentinel); with `endTime` the lines of `[startTime, endTime]` are returned,
//! optionally only those of `identity`, at most 100,000 (Sentinel's cap on a range query); without it,
//! lines from `startTime` on up to `maxLines` (default 6000, at most 12000), finishing the last second. Without `identity`, two lines for the current second
//! follow as in Sentinel: `__system_load__` and `__cpu_usage__` with the reading × 10000 as pass QPS
//! (omitted while the probe's reading is unavailable).

use floodgate_core::stats::MetricLine;

use super::{CommandState, Params};
use crate::metric_store::thin_line;

const DEFAULT_MAX_LINES: usize = 6000;
const MAX_LINES: usize = 12000;
/// The most lines a range query (`endTime`) returns.
const MAX_RANGE_LINES: usize = 100_000;

pub(crate) fn metric(state: &CommandState, params: &Params) -> String {
    let Some(start) = params.word("startTime").and_then(|s| s.parse::<u64>().ok()) else {
        return String::new();
    };
    let end = params.word("endTime").and_then(|s| s.parse::<u64>().ok());
    let mut out = String::new();
    match end {
        Some(end) => {
            let identity = params.non_blank("identity");
            let mut count = 0;
            state.metrics.for_each_between(start, end, |line| {
                if identity.is_none_or(|id| *line.resource == *id) {
                    out.push_str(&thin_line(line));
                    out.push('\n');
                    count += 1;
                }
                count < MAX_RANGE_LINES
            });
        }
        None => {
            let max = params
                .word("maxLines")
                .and_then(|s| s.parse::<usize>().ok())
                .unwrap_or(DEFAULT_MAX_LINES)
                .min(MAX_LINES);
            let (mut count, mut last_second) = (0, None);
            state.metrics.for_each_between(start, u64::MAX, |line| {
                if count >= max && last_second != Some(line.timestamp) {
                    return false;
                }
                last_second = Some(line.timestamp);
                count += 1;
                out.push_str(&thin_line(line));
                out.push('\n');
                true
            });
        }
    }
    if params.non_blank("identity").is_none() {
        let now = state.fg.clock().now_ms();
        let system = state.fg.system_status();
        for (name, value) in [
            ("__system_load__", system.load_average),
            ("__cpu_usage__", system.cpu_usage),
        ] {
            // As Sentinel's `SendMetricCommandHandler`: only readings above 0, scaled by 10,000 and
            // truncated.
            if let Some(value) = value.filter(|v| *v > 0.0) {
                let line = MetricLine {
                    timestamp: now - now % 1000,
                    resource: name.into(),
                    pass_qps: (value * 10_000.0).trunc() as u64,
                    block_qps: 0,
                    success_qps: 0,
                    exception_qps: 0,
                    rt: 0,
                    rt_sum: 0,
                    occupied_pass_qps: 0,
                    concurrency: 0,
                    classification: 0,
                };
                out.push_str(&thin_line(&line));
                out.push('\n');
            }
        }
    }
    out
}
