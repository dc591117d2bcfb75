//! LogSlot (−8000) and the block log: blocks aggregated per second, as Sentinel's `sentinel-block.log`.
//!
//! Each block is counted under `(resource, exception, limitApp, origin, ruleId)` for its second. When a
//! later second starts, the finished second becomes one line per key,
//!
//! ```text
//! 2026-11-29 15:35:51|1|GET:/orders,FlowException,default,appA,7|42,0
//! ```
//!
//! (UTC time, then the key, then the count), kept in memory (the last 1000 lines) and appended to a file
//! when one is configured. Recording takes a short lock and allocates only the first time a key is seen:
//! a finished second's counts are only moved aside on the blocking path; lines are formatted when the log
//! is read, or by a writer thread that wakes once a second when a file is configured.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hash};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustc_hash::{FxBuildHasher, FxHashMap};

use super::{Hooks, Slot, SlotContext, order};
use crate::block::{BlockError, BlockKind};

const RECENT_LINES: usize = 1000;
const MAX_KEYS: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    resource: u32,
    kind: BlockKind,
    rule: Option<i64>,
    origin: u64,
}

#[derive(Debug)]
struct Tally {
    resource: Arc<str>,
    kind: BlockKind,
    limit_app: String,
    origin: String,
    rule: Option<i64>,
    count: u64,
}

#[derive(Debug, Default)]
struct State {
    second: u64,
    tallies: FxHashMap<Key, Tally>,
    /// Finished seconds not formatted yet: `(key, second, count)`.
    pending: Vec<(Key, u64, u64)>,
    recent: VecDeque<String>,
    file: Option<BufWriter<File>>,
    path: Option<PathBuf>,
}

/// The engine's block log.
#[derive(Debug, Default)]
pub(crate) struct BlockLog {
    state: Arc<Mutex<State>>,
}

impl BlockLog {
    pub(crate) fn new(path: Option<PathBuf>) -> Self {
        let has_file = path.is_some();
        let log = BlockLog {
            state: Arc::new(Mutex::new(State {
                path,
                ..State::default()
            })),
        };
        if has_file {
            // The writer holds only a weak reference: it ends when the engine (and its log) is dropped.
            let state = Arc::downgrade(&log.state);
            let _ = std::thread::Builder::new()
                .name("floodgate-block-log".into())
                .spawn(move || {
                    while let Some(state) = state.upgrade() {
                        state
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .format_pending();
                        drop(state);
                        std::thread::sleep(std::time::Duration::from_secs(1));
                    }
                });
        }
        log
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts `count` blocks of `block` on resource `resource_id` from `origin` at `now` (ms).
    pub(crate) fn record(
        &self,
        now: u64,
        resource_id: u32,
        block: &BlockError,
        origin: &str,
        count: u32,
    ) {
        let second = now / 1000;
        let rule = block.rule().and_then(|r| r.id());
        let mut key = Key {
            resource: resource_id,
            kind: block.kind(),
            rule,
            origin: FxBuildHasher.hash_one(origin),
        };
        let mut state = self.lock();
        if second > state.second {
            state.finish_second();
            state.second = second;
        }
        if state.tallies.len() >= MAX_KEYS && !state.tallies.contains_key(&key) {
            key = Key {
                resource: u32::MAX,
                kind: block.kind(),
                rule: None,
                origin: 0,
            };
        }
        let tally = state.tallies.entry(key).or_insert_with(|| Tally {
            resource: if key.resource == u32::MAX {
                Arc::from("__other__")
            } else {
                Arc::from(block.resource())
            },
            kind: block.kind(),
            limit_app: block
                .rule()
                .map_or_else(|| "default".to_owned(), |r| r.limit_app().to_owned()),
            origin: if key.resource == u32::MAX {
                String::new()
            } else {
                origin.to_owned()
            },
            rule: key.rule,
            count: 0,
        });
        tally.count += u64::from(count);
    }

    /// The lines of finished seconds, oldest first.
    pub(crate) fn lines(&self, now: u64) -> Vec<String> {
        let mut state = self.lock();
        if now / 1000 > state.second {
            state.finish_second();
            state.second = now / 1000;
        }
        state.format_pending();
        state.recent.iter().cloned().collect()
    }
}

impl State {
    /// Moves the finished second's counts aside (no allocation once `pending` has grown).
    fn finish_second(&mut self) {
        let second = self.second;
        for (key, tally) in self.tallies.iter_mut().filter(|(_, t)| t.count > 0) {
            self.pending.push((*key, second, tally.count));
            tally.count = 0;
        }
    }

    /// Formats pending counts into lines: kept in memory and appended to the file.
    fn format_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut lines: Vec<String> = self
            .pending
            .drain(..)
            .filter_map(|(key, second, count)| {
                let tally = self.tallies.get(&key)?;
                Some(format!(
                    "{}|1|{},{},{},{},{}|{count},0",
                    format_utc(second),
                    tally.resource,
                    tally.kind.exception_name(),
                    tally.limit_app,
                    tally.origin,
                    tally.rule.map_or_else(String::new, |id| id.to_string()),
                ))
            })
            .collect();
        lines.sort();
        if self.file.is_none() {
            if let Some(path) = &self.path {
                self.file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .ok()
                    .map(BufWriter::new);
            }
        }
        if let Some(file) = &mut self.file {
            for line in &lines {
                let _ = writeln!(file, "{line}");
            }
            let _ = file.flush();
        }
        for line in lines {
            if self.recent.len() == RECENT_LINES {
                self.recent.pop_front();
            }
            self.recent.push_back(line);
        }
    }
}

/// `yyyy-MM-dd HH:mm:ss` in UTC for an epoch second (the civil-from-days algorithm).
pub(crate) fn format_utc(second: u64) -> String {
    let days = (second / 86_400) as i64;
    let rem = second % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Sentinel's `LogSlot`: records every block in the engine's block log.
#[derive(Debug, Default)]
pub struct LogSlot;

impl Slot for LogSlot {
    fn on_block(&self, cx: &mut SlotContext<'_>, block: &BlockError) {
        cx.engine
            .block_log
            .record(cx.now_ms, cx.resource.id, block, cx.origin, cx.count);
    }

    fn hooks(&self) -> Hooks {
        Hooks {
            entry: false,
            pass: false,
            block: true,
            exit: false,
        }
    }
}

crate::register_slot!("log", order::LOG, || Arc::new(LogSlot));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00");
        assert_eq!(format_utc(1_700_000_000), "2023-11-14 22:13:20");
        assert_eq!(format_utc(951_782_400), "2000-02-29 00:00:00");
    }
}
