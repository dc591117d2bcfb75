//! `metric`: per-second lines of every resource, in Sentinel's thin wire format,
//!
//! ```text
//! timestamp|resource|passQps|blockQps|successQps|exceptionQps|rt|occupiedPassQps|concurrency|classification
//! ```
//!
//! served from the agent's in-memory store (the last 5 minutes by default). `startTime` is required (an
//! empty answer without it, as in Sentinel); with `endTime` the lines of `[startTime, endTime]` are returned,
//! optionally only those of `identity`; without it, lines from `startTime` on up to `maxLines` (default
//! 6000, at most 12000), finishing the last second.

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
    out
}
