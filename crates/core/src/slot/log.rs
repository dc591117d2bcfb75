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
//! when one is configured (rolled over to `<file>.1` past 64 MiB). Recording takes a short lock and
//! allocates only the first time a key is seen: a finished second's counts are only moved aside on the
//! blocking path; lines are formatted when the log is read, or by a writer thread that wakes once a second
//! when a file is configured. A block stamped with a second older than its key's (the clock stepped back)
//! counts in the key's second. `|`, `,` and line breaks in names and origins are written as `_`.
//!
//! Keys are bounded, and a resource's counts never mix with another's: past 100 (rule, origin) keys on
//! one `(resource, kind)`, or 4096 keys in all, a new key's blocks count under that `(resource, kind)`'s
//! own `__other__` origin (callers choose origins: one spraying made-up ones must not take the keys of
//! every other resource).
//!
//! Each key also belongs to a group, its `(resource, kind)`, which keeps the lifetime total of its blocks
//! (for exporters such as Prometheus) and a tagged cell holding the last second with blocks, which
//! samples `tracing` events: the first block of a second moves the cell on, and only that block emits an
//! `info` event (target `floodgate::block`) with the count of the group's previous second with blocks
//! (the total then, less the total when that second started). So a flood of blocks logs at most one
//! event per second per resource and kind, and a block costs one relaxed add more, without a lock or an
//! allocation.
//!
//! The per-second counts and the totals are striped per thread (see [`current_stripe`]):
//! threads refused on one resource write their own cache lines (a shared count written on every block
//! made two threads rejecting together slower than one). Lines add a key's stripes up, and a second is
//! written only once it is over, so a key still gets one line per second; the totals are summed when
//! read. Blocks on another thread in the instant a second turns may be counted in the event of the
//! second before.

use std::cell::Cell;
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hash};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use foldhash::fast::SeedableRandomState;
use rustc_hash::FxHashMap;

use super::{Hooks, Slot, SlotContext};
use crate::arena::Arena;
use crate::block::{BlockError, BlockKind};
use crate::clock::Clock;
use crate::keyed_hash::keyed_state;
use crate::stat::{AddOutcome, cell};
use crate::stat::{current_stripe, stripe_count};
use crate::utc::utc_datetime;

const RECENT_LINES: usize = 1000;
/// Keys in all; past them, new keys go to their group's overflow key.
const MAX_KEYS: usize = 4096;
/// Keys per `(resource, kind)` group, its overflow key aside.
const MAX_KEYS_PER_GROUP: u32 = 100;
/// The origin written for a group's overflow key.
const OTHER_ORIGINS: &str = "__other__";
/// The size past which the block log file is rolled over to `<file>.1`.
const MAX_FILE_BYTES: u64 = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    resource: u32,
    kind: BlockKind,
    rule: Option<i64>,
    /// The origin's hash under the log's random keys (origins are chosen by clients).
    origin: u64,
    /// The group's overflow key (rule and origin are then empty).
    overflow: bool,
}

/// One key's description and its count for the second in its tagged cell.
#[derive(Debug)]
struct Tally {
    resource: Arc<str>,
    kind: BlockKind,
    limit_app: String,
    origin: String,
    rule: Option<i64>,
    /// Per stripe: the count of the second the cell is tagged with.
    cells: Box<[Padded]>,
    /// Its `(resource, kind)` group.
    group: Arc<Group>,
}

/// A counter on a cache line of its own.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Padded(AtomicU64);

/// `stripe_count()` counters.
fn striped() -> Box<[Padded]> {
    (0..stripe_count()).map(|_| Padded::default()).collect()
}

/// The counter of this thread's stripe.
#[inline]
fn mine(cells: &[Padded]) -> &AtomicU64 {
    // `stripe_count()` is a power of two, the length of every striped array.
    &cells[current_stripe() & (cells.len() - 1)].0
}

/// One `(resource, kind)`: its blocks since the engine started, and the cell that samples block events.
#[derive(Debug)]
struct Group {
    resource: Arc<str>,
    kind: BlockKind,
    /// Per stripe, blocks since the engine started.
    totals: Box<[Padded]>,
    /// Tagged with the last second with blocks (value 0); the write that moves it on emits the event.
    sample: AtomicU64,
    /// The total when the tagged second started (written by the block that moved the tag on).
    total_at_sample: AtomicU64,
}

impl Group {
    fn total(&self) -> u64 {
        self.totals
            .iter()
            .map(|t| t.0.load(Ordering::Relaxed))
            .sum()
    }
}

/// The tallies and groups by key; each group with the number of its keys.
#[derive(Debug, Default)]
struct Index {
    keys: FxHashMap<Key, u32>,
    groups: FxHashMap<(u32, BlockKind), (Arc<Group>, u32)>,
}

/// Where finished seconds go: counts waiting to be formatted, the formatted lines, the file.
#[derive(Debug, Default)]
struct Output {
    pending: Vec<(u32, u64, u64)>,
    recent: VecDeque<String>,
    file: Option<BufWriter<File>>,
    /// Bytes in the file (its length when opened, plus what was written since).
    written: u64,
    /// Whether the last attempt to open the file failed (warned once until it opens).
    open_failed: bool,
    /// The size past which the file is rolled over ([`MAX_FILE_BYTES`]; smaller in tests).
    roll_at: u64,
    path: Option<PathBuf>,
}

impl Output {
    /// Queues a finished second's count for formatting. Without a file, nothing formats the queue until
    /// the log is read, and only the newest `RECENT_LINES` lines are ever shown: past twice that, the
    /// oldest half is dropped, so an unread log stays bounded (and the queue stops growing).
    fn queue(&mut self, count: (u32, u64, u64)) {
        if self.path.is_none() && self.pending.len() >= 2 * RECENT_LINES {
            self.pending.drain(..RECENT_LINES);
        }
        self.pending.push(count);
    }

    /// Appends `lines` to the file, if one is configured: opened on first use, rolled over to
    /// `<file>.1` (replacing it) once it holds [`MAX_FILE_BYTES`]. Failures are warned of, once until
    /// the file opens again; the lines stay in memory all the same.
    fn write_file(&mut self, lines: &[String]) {
        let Some(path) = self.path.clone() else {
            return;
        };
        if self.file.is_some() && self.written >= self.roll_at {
            self.file = None;
            let mut rolled = path.clone().into_os_string();
            rolled.push(".1");
            if let Err(error) = std::fs::rename(&path, &rolled) {
                tracing::warn!(target: "floodgate::block", %error, ?path, "the block log could not be rolled over");
            }
        }
        if self.file.is_none() {
            match OpenOptions::new().create(true).append(true).open(&path) {
                Ok(file) => {
                    self.written = file.metadata().map_or(0, |m| m.len());
                    self.file = Some(BufWriter::new(file));
                    self.open_failed = false;
                }
                Err(error) => {
                    if !self.open_failed {
                        tracing::warn!(target: "floodgate::block", %error, ?path, "the block log file could not be opened");
                    }
                    self.open_failed = true;
                    return;
                }
            }
        }
        let Some(file) = &mut self.file else {
            return;
        };
        let mut result = Ok(());
        for line in lines {
            result = result.and_then(|()| writeln!(file, "{line}"));
            self.written += line.len() as u64 + 1;
        }
        if let Err(error) = result.and_then(|()| file.flush()) {
            tracing::warn!(target: "floodgate::block", %error, ?path, "the block log file could not be written");
            // Reopened next time.
            self.file = None;
        }
    }
}

/// `text` fit for a field of a log line: `|` and `,` separate fields, a line break ends the line.
fn log_field(text: &str) -> String {
    text.replace(['|', ',', '\n', '\r'], "_")
}

#[derive(Debug, Default)]
struct Shared {
    /// Never reused in the process (an address is: a log dropped and a new one made may get it).
    id: u64,
    tallies: Arena<Tally>,
    groups: Arena<Arc<Group>>,
    /// Hashes origins into keys.
    origins: SeedableRandomState,
    index: Mutex<Index>,
    output: Mutex<Output>,
}

/// The next [`Shared::id`] (0 is the per-thread cache's "none").
static NEXT_LOG_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The last key this thread recorded, per log: blocks of one kind on one resource from one caller
    /// skip the index lock.
    static LAST: Cell<(u64, Key, u32)> = const {
        Cell::new((0, Key { resource: 0, kind: BlockKind::Custom, rule: None, origin: 0, overflow: false }, 0))
    };
}

/// The engine's block log.
#[derive(Debug, Default)]
pub(crate) struct BlockLog {
    shared: Arc<Shared>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl BlockLog {
    pub(crate) fn new(path: Option<PathBuf>, clock: Arc<dyn Clock>) -> Self {
        let has_file = path.is_some();
        let log = BlockLog {
            shared: Arc::new(Shared {
                id: NEXT_LOG_ID.fetch_add(1, Ordering::Relaxed),
                origins: keyed_state(),
                output: Mutex::new(Output {
                    path,
                    roll_at: MAX_FILE_BYTES,
                    ..Output::default()
                }),
                ..Shared::default()
            }),
        };
        if has_file {
            // The writer holds only a weak reference: it ends when the engine (and its log) is dropped.
            let shared: Weak<Shared> = Arc::downgrade(&log.shared);
            let spawned = std::thread::Builder::new()
                .name("floodgate-block-log".into())
                .spawn(move || {
                    while let Some(shared) = shared.upgrade() {
                        shared.collect(clock.now_ms() / 1000);
                        drop(shared);
                        std::thread::sleep(std::time::Duration::from_secs(1));
                    }
                });
            if let Err(error) = spawned {
                // Without the writer nothing would drain the queue: keep the log in memory (bounded).
                let path = lock(&log.shared.output).path.take();
                tracing::error!(
                    target: "floodgate::block",
                    %error,
                    path = ?path,
                    "the block log's writer thread did not start; blocks are logged in memory only"
                );
            }
        }
        log
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
        let shared = &*self.shared;
        let second = now / 1000;
        let key = Key {
            resource: resource_id,
            kind: block.kind(),
            rule: block.rule().and_then(|r| r.id()),
            origin: shared.origins.hash_one(origin),
            overflow: false,
        };
        let id = shared.id;
        let index = match LAST.with(Cell::get) {
            (log, last, index) if log == id && last == key => index,
            _ => {
                let Some(index) = shared.index_of(key, block, origin, second) else {
                    return;
                };
                LAST.with(|l| l.set((id, key, index)));
                index
            }
        };
        let Some(tally) = shared.tallies.get(index) else {
            return;
        };
        let group = &tally.group;
        mine(&group.totals).fetch_add(u64::from(count), Ordering::Relaxed);
        let sampled = group.sample.load(Ordering::Relaxed);
        if cell::unpack(sampled).is_none_or(|(tag, _)| tag != second as u32) {
            group.sample_second(sampled, second as u32, count, block, origin);
        }
        let cell = mine(&tally.cells);
        match cell::add(cell, second as u32, count) {
            AddOutcome::Added => {}
            AddOutcome::Recycled { old_tag, old_value } => {
                if old_value > 0 {
                    lock(&shared.output).queue((index, u64::from(old_tag), u64::from(old_value)));
                }
            }
            AddOutcome::Stale => {
                // Stamped before the key's second (the clock stepped back, or a contended write gave
                // up): counted in the key's second, not queued as a line of its own per block.
                if let Some((tag, _)) = cell::unpack(cell.load(Ordering::Relaxed)) {
                    if cell::add(cell, tag, count) == AddOutcome::Added {
                        return;
                    }
                }
                lock(&shared.output).queue((index, second, u64::from(count)));
            }
        }
    }

    /// The lines of finished seconds, oldest first.
    pub(crate) fn lines(&self, now: u64) -> Vec<String> {
        self.shared.collect(now / 1000);
        lock(&self.shared.output).recent.iter().cloned().collect()
    }

    /// Blocks since the log was created, per `(resource, kind)`, in the order first seen.
    pub(crate) fn totals(&self) -> Vec<(Arc<str>, BlockKind, u64)> {
        self.shared
            .groups
            .iter()
            .map(|g| (g.resource.clone(), g.kind, g.total()))
            .collect()
    }
}

impl Group {
    /// The first block of `second` seen on the group (its sample cell held `sampled`): moves the cell
    /// on and, if this block did, emits the event with the blocks of the previous tagged second.
    #[cold]
    #[inline(never)]
    fn sample_second(
        &self,
        sampled: u64,
        second: u32,
        count: u32,
        block: &BlockError,
        origin: &str,
    ) {
        let Some((old_tag, _)) = cell::unpack(sampled) else {
            return;
        };
        if cell::is_newer(old_tag, second) {
            // A stale write (the clock stepped back, or another thread moved on first).
            return;
        }
        let next = cell::pack(second, 0);
        if self
            .sample
            .compare_exchange(sampled, next, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        // Every block of the group until now, this one aside, is of the previous tagged second or before.
        let before = self.total().saturating_sub(u64::from(count));
        let previous = before.saturating_sub(self.total_at_sample.swap(before, Ordering::Relaxed));
        report_block(
            block,
            origin,
            old_tag,
            u32::try_from(previous).unwrap_or(u32::MAX),
        );
    }
}

/// The sampled block event: the first block of a second on a `(resource, kind)`, with the count of that
/// group's previous second with blocks (`previous_second`, epoch seconds; 0 blocks on the first one).
#[cold]
fn report_block(block: &BlockError, origin: &str, previous_second: u32, previous_blocks: u32) {
    tracing::info!(
        target: "floodgate::block",
        resource = block.resource(),
        kind = %block.kind(),
        rule = block.rule().and_then(|r| r.id()),
        origin,
        previous_second,
        previous_blocks,
        "requests blocked"
    );
}

impl Shared {
    /// The tally index of `key`, created on first sight (allocates once per key); past
    /// [`MAX_KEYS_PER_GROUP`] keys of its `(resource, kind)`, or [`MAX_KEYS`] in all, blocks count under
    /// the group's overflow key.
    #[cold]
    fn index_of(&self, key: Key, block: &BlockError, origin: &str, second: u64) -> Option<u32> {
        let mut index = lock(&self.index);
        let index = &mut *index;
        if let Some(i) = index.keys.get(&key) {
            return Some(*i);
        }
        let (group, keys) = match index.groups.get_mut(&(key.resource, key.kind)) {
            Some((g, keys)) => (g.clone(), keys),
            None => {
                let g = Arc::new(Group {
                    resource: block.resource().into(),
                    kind: key.kind,
                    totals: striped(),
                    // The second before: the first block moves the cell on and reports.
                    sample: AtomicU64::new(cell::pack((second as u32).wrapping_sub(1), 0)),
                    total_at_sample: AtomicU64::new(0),
                });
                self.groups.push(g.clone()).ok()?;
                let (g, keys) = index
                    .groups
                    .entry((key.resource, key.kind))
                    .or_insert((g, 0));
                (g.clone(), keys)
            }
        };
        let overflow = *keys >= MAX_KEYS_PER_GROUP || index.keys.len() >= MAX_KEYS;
        let key = if overflow {
            let key = Key {
                rule: None,
                origin: 0,
                overflow: true,
                ..key
            };
            if let Some(i) = index.keys.get(&key) {
                return Some(*i);
            }
            key
        } else {
            *keys += 1;
            key
        };
        let tally = Tally {
            resource: if group.resource.contains(['|', ',', '\n', '\r']) {
                log_field(&group.resource).into()
            } else {
                group.resource.clone()
            },
            kind: block.kind(),
            // Sentinel's AuthorityException reports the refused origin as its limitApp (the rule's
            // comma-separated list would break the line's fields).
            limit_app: if overflow {
                "default".to_owned()
            } else if block.kind() == BlockKind::Authority {
                log_field(origin)
            } else {
                block
                    .rule()
                    .map_or_else(|| "default".to_owned(), |r| log_field(r.limit_app()))
            },
            origin: if overflow {
                OTHER_ORIGINS.to_owned()
            } else {
                log_field(origin)
            },
            rule: key.rule,
            cells: striped(),
            group,
        };
        let i = self.tallies.push(tally).ok()?;
        index.keys.insert(key, i);
        Some(i)
    }

    /// Moves every count of a second before `current` out of its cells, then formats what is pending.
    fn collect(&self, current: u64) {
        let mut taken = Vec::new();
        for (i, tally) in self.tallies.iter().enumerate() {
            for cell in tally.cells.iter() {
                if let Some((tag, value)) = cell::take_older(&cell.0, current as u32) {
                    if value > 0 {
                        taken.push((i as u32, u64::from(tag), u64::from(value)));
                    }
                }
            }
        }
        let mut output = lock(&self.output);
        output.pending.extend(taken);
        self.format(&mut output, current);
    }

    /// Formats the pending counts of seconds before `current` into lines, one per key and second (its
    /// stripes added up): kept in memory and appended to the file. A count of `current` or later (a
    /// stripe that moved on before this collection read the clock) waits: that second's other stripes
    /// are still counting.
    fn format(&self, output: &mut Output, current: u64) {
        if output.pending.is_empty() {
            return;
        }
        let mut ready: Vec<(u32, u64, u64)> = Vec::with_capacity(output.pending.len());
        output.pending.retain(|&(index, second, count)| {
            let over = second < current;
            if over {
                ready.push((index, second, count));
            }
            !over
        });
        ready.sort_unstable_by_key(|&(index, second, _)| (index, second));
        ready.dedup_by(|later, kept| {
            let same = (later.0, later.1) == (kept.0, kept.1);
            if same {
                kept.2 += later.2;
            }
            same
        });
        let mut lines: Vec<String> = ready
            .into_iter()
            .filter_map(|(index, second, count)| {
                let tally = self.tallies.get(index)?;
                Some(format!(
                    "{}|1|{},{},{},{},{}|{count},0",
                    utc_datetime(second),
                    tally.resource,
                    tally.kind.exception_name(),
                    tally.limit_app,
                    tally.origin,
                    tally.rule.map_or_else(String::new, |id| id.to_string()),
                ))
            })
            .collect();
        lines.sort();
        output.write_file(&lines);
        for line in lines {
            if output.recent.len() == RECENT_LINES {
                output.recent.pop_front();
            }
            output.recent.push_back(line);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unread_log_stays_bounded_and_keeps_the_newest_seconds() {
        let log = BlockLog::new(None, Arc::new(crate::ManualClock::new(0)));
        let block = BlockError::new(BlockKind::Flow, Arc::from("R"));
        let t0 = 1_700_000_000_000u64;
        for s in 0..5000u64 {
            log.record(t0 + s * 1000, 0, &block, "", 2);
        }
        let pending = lock(&log.shared.output).pending.len();
        assert!(pending <= 2 * RECENT_LINES, "{pending} queued");
        let lines = log.lines(t0 + 5000 * 1000);
        assert_eq!(lines.len(), RECENT_LINES);
        assert!(lines[RECENT_LINES - 1].starts_with(&utc_datetime(t0 / 1000 + 4999)));
        assert!(lines[0].starts_with(&utc_datetime(t0 / 1000 + 4000)));
        assert_eq!(log.totals(), [(Arc::from("R"), BlockKind::Flow, 10_000)]);
    }

    #[test]
    fn an_origin_flood_on_one_resource_leaves_the_others_their_own_counts() {
        let log = BlockLog::new(None, Arc::new(crate::ManualClock::new(0)));
        let t0 = 1_700_000_000_000u64;
        let a = BlockError::new(BlockKind::Flow, Arc::from("A"));
        let b = BlockError::new(BlockKind::Flow, Arc::from("B"));
        for i in 0..5000 {
            log.record(t0, 0, &a, &format!("caller-{i}"), 1);
        }
        for _ in 0..10 {
            log.record(t0, 1, &b, "partner", 1);
        }
        assert_eq!(
            log.totals(),
            [
                (Arc::from("A"), BlockKind::Flow, 5000),
                (Arc::from("B"), BlockKind::Flow, 10)
            ]
        );
        let keys = lock(&log.shared.index).keys.len();
        assert_eq!(
            keys,
            MAX_KEYS_PER_GROUP as usize + 2,
            "A's keys, its overflow, B's"
        );
        let lines = log.lines(t0 + 1000);
        let second = utc_datetime(t0 / 1000);
        assert!(lines.contains(&format!(
            "{second}|1|A,FlowException,default,__other__,|4900,0"
        )));
        assert!(lines.contains(&format!("{second}|1|B,FlowException,default,partner,|10,0")));
        assert!(lines.contains(&format!("{second}|1|A,FlowException,default,caller-0,|1,0")));
    }

    #[test]
    fn blocks_stamped_before_their_keys_second_count_in_it() {
        let log = BlockLog::new(None, Arc::new(crate::ManualClock::new(0)));
        let block = BlockError::new(BlockKind::Flow, Arc::from("R"));
        let t0 = 1_700_000_010_000u64;
        log.record(t0, 0, &block, "", 1);
        // The clock stepped back a second.
        for _ in 0..5 {
            log.record(t0 - 1000, 0, &block, "", 1);
        }
        assert_eq!(
            log.lines(t0 + 1000),
            [format!(
                "{}|1|R,FlowException,default,,|6,0",
                utc_datetime(t0 / 1000)
            )],
            "one line, not one per late block"
        );
    }

    #[test]
    fn threads_blocked_on_one_key_get_one_line_per_second() {
        let log = BlockLog::new(None, Arc::new(crate::ManualClock::new(0)));
        let block = BlockError::new(BlockKind::Flow, Arc::from("R"));
        let t0 = 1_700_000_000_000u64;
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for i in 0..100 {
                        log.record(t0 + i, 0, &block, "", 1);
                    }
                });
            }
        });
        assert_eq!(log.totals(), [(Arc::from("R"), BlockKind::Flow, 400)]);
        assert_eq!(
            log.lines(t0 + 1000),
            [format!(
                "{}|1|R,FlowException,default,,|400,0",
                utc_datetime(t0 / 1000)
            )]
        );
    }

    /// One stripe moved on to the next second (its count queued) while another still counts the
    /// second: the line waits for the second to be over and adds both up.
    #[test]
    fn a_second_is_written_once_over_with_its_stripes_added_up() {
        let log = BlockLog::new(None, Arc::new(crate::ManualClock::new(0)));
        let block = BlockError::new(BlockKind::Flow, Arc::from("R"));
        let t0 = 1_700_000_000_000u64;
        log.record(t0, 0, &block, "", 1);
        // What another stripe's move to the next second queues.
        lock(&log.shared.output).queue((0, t0 / 1000, 2));
        assert_eq!(
            log.lines(t0 + 500),
            Vec::<String>::new(),
            "the second is not over"
        );
        assert_eq!(
            log.lines(t0 + 1000),
            [format!(
                "{}|1|R,FlowException,default,,|3,0",
                utc_datetime(t0 / 1000)
            )]
        );
    }

    #[test]
    fn origins_that_collide_under_fx_keep_their_own_lines() {
        let log = BlockLog::new(None, Arc::new(crate::ManualClock::new(0)));
        let block = BlockError::new(BlockKind::Flow, Arc::from("R"));
        let t0 = 1_700_000_000_000u64;
        let [a, b] = crate::keyed_hash::FX_COLLISION;
        log.record(t0, 0, &block, a, 1);
        log.record(t0, 0, &block, b, 2);
        let lines = log.lines(t0 + 1000);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines.iter().any(|l| l.contains(a) && l.ends_with("|1,0")));
        assert!(lines.iter().any(|l| l.contains(b) && l.ends_with("|2,0")));
    }

    #[test]
    fn separators_in_names_and_origins_are_escaped() {
        let log = BlockLog::new(None, Arc::new(crate::ManualClock::new(0)));
        let block = BlockError::new(BlockKind::Authority, Arc::from("GET:/a,b|c"));
        let t0 = 1_700_000_000_000u64;
        log.record(t0, 0, &block, "evil|1,2\nX", 1);
        assert_eq!(
            log.lines(t0 + 1000),
            [format!(
                "{}|1|GET:/a_b_c,AuthorityException,evil_1_2_X,evil_1_2_X,|1,0",
                utc_datetime(t0 / 1000)
            )]
        );
        assert_eq!(
            log.totals(),
            [(Arc::from("GET:/a,b|c"), BlockKind::Authority, 1)],
            "the counters keep the real name"
        );
    }

    #[test]
    fn the_file_rolls_over_past_its_size() {
        let dir = std::env::temp_dir().join(format!(
            "floodgate-block-log-{}-{}",
            std::process::id(),
            NEXT_LOG_ID.load(Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sentinel-block.log");
        let log = BlockLog::new(Some(path.clone()), Arc::new(crate::ManualClock::new(0)));
        lock(&log.shared.output).roll_at = 200;
        let block = BlockError::new(BlockKind::Flow, Arc::from("R"));
        let t0 = 1_700_000_000_000u64;
        for s in 0..10u64 {
            log.record(t0 + s * 1000, 0, &block, "", 1);
            log.lines(t0 + (s + 1) * 1000);
        }
        let current = std::fs::read_to_string(&path).unwrap();
        let rolled = std::fs::read_to_string(dir.join("sentinel-block.log.1")).unwrap();
        assert!(current.len() <= 200 + 60, "{} bytes", current.len());
        assert!(rolled.len() >= 200, "{} bytes", rolled.len());
        assert!(
            current.ends_with(&format!(
                "{}|1|R,FlowException,default,,|1,0\n",
                utc_datetime(t0 / 1000 + 9)
            )),
            "{current}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
