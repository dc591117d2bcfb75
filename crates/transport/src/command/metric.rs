//! `metric`: per-second lines of every resource, in Sentinel's thin wire format,
//!
//! ```text
//! timestamp|resource|passQps|blockQps|successQps|exceptionQps|rt|occupiedPassQps|concurrency|classification
//! ```
//!
//! served from the agent's in-memory store (the last 5 minutes by default). `startTime` is required (an
//! empty answer without it, as in Sentinel); with `endTime` the lines of `[startTime, endTime]` are returned,
//! optionally only those of `identity`; without it, lines from `startTime` on up to `maxLines` (default
//! 6000, at most 12000), finishing the last second. Without `identity`, two lines for the current second
//! follow as in Sentinel: `__system_load__` and `__cpu_usage__` with the reading × 10000 as pass QPS
//! (omitted while the probe's reading is unavailable).

use floodgate_core::MetricLine;

use super::{CommandState, Params};
use crate::metric_store::thin_line;

const DEFAULT_MAX_LINES: usize = 6000;
const MAX_LINES: usize = 12000;

pub(crate) fn metric(state: &CommandState, params: &Params) -> String {
    let Some(start) = params.get("startTime").and_then(|s| s.parse::<u64>().ok()) else {
        return String::new();
    };
    let end = params.get("endTime").and_then(|s| s.parse::<u64>().ok());
    let mut out = String::new();
    match end {
        Some(end) => {
            let identity = params.non_blank("identity");
            for line in state.metrics.between(start, end) {
                if identity.is_none_or(|id| *line.resource == *id) {
                    out.push_str(&thin_line(&line));
                    out.push('\n');
                }
            }
        }
        None => {
            let max = params
                .get("maxLines")
                .and_then(|s| s.parse::<usize>().ok())
                .unwrap_or(DEFAULT_MAX_LINES)
                .min(MAX_LINES);
            let (mut count, mut last_second) = (0, None);
            for line in state.metrics.between(start, u64::MAX) {
                if count >= max && last_second != Some(line.timestamp) {
                    break;
                }
                last_second = Some(line.timestamp);
                count += 1;
                out.push_str(&thin_line(&line));
                out.push('\n');
            }
        }
    }
    if params.non_blank("identity").is_none() {
        let now = state.fg.clock().now_ms();
        let system = state.fg.system_status();
        for (name, value) in [
            ("__system_load__", system.load_average),
            ("__cpu_usage__", system.cpu_usage),
        ] {
            if let Some(value) = value {
                let line = MetricLine {
                    timestamp: now - now % 1000,
                    resource: name.into(),
                    pass_qps: (value * 10_000.0).round().max(0.0) as u64,
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
