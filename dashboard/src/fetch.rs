//! The metric fetcher: every `fetch_interval_ms` it asks each healthy machine for the seconds it has
//! not yet given, and sends the new lines to the writer.
//!
//! Each machine is fetched by its own task, at most `agent_concurrency` at once (a semaphore); a
//! machine whose previous fetch still runs (slow, or hanging until the call's deadline) is skipped
//! this tick, so no machine delays another or the next tick.
//!
//! The window ends at the last whole second at least [`LAG_MS`] ago, and starts [`OVERLAP_MS`] before
//! the newest second already taken from the machine: agents write a second once it is complete, and
//! can be a second or two late, so the overlap picks up what a late agent adds. The seconds taken are
//! remembered per machine, and a second already taken is never sent again. When the fetcher first
//! sees an app it reads the newest second stored for it, and its machines' windows start after that
//! (a restarted dashboard does not count a second twice), never more than [`MAX_CATCH_UP_MS`] back.
//! A machine's record outlives a spell of ill health by [`FORGET_AFTER_MS`], so a machine that comes
//! back is not asked again for seconds already taken.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, OwnedMutexGuard, Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::MissedTickBehavior;

use crate::AppState;
use crate::agent_client::Target;
use crate::db::Machine;
use crate::events::Event;
use crate::ingest::Batch;
use crate::ingest::line::parse_answer;

/// How far behind now the window ends (at least; it ends on a whole second).
pub const LAG_MS: i64 = 1000;
/// How many seconds before the newest taken are read again.
pub const OVERLAP_MS: i64 = 3000;
/// The oldest second a window reaches back to.
pub const MAX_CATCH_UP_MS: i64 = 60_000;
/// How long the record of a machine no longer healthy is kept.
pub const FORGET_AFTER_MS: i64 = 10 * 60_000;

/// What is known of one machine's seconds.
#[derive(Debug, Default)]
pub struct Cursor {
    /// Seconds at or before this are never taken (set at the first fetch, then moved forward).
    floor: Option<i64>,
    /// The newest second taken.
    newest: Option<i64>,
    /// The seconds taken after `floor`.
    taken: BTreeSet<i64>,
}

/// The seconds `[start, end]` to ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The first second (ms).
    pub start: i64,
    /// The last second (ms).
    pub end: i64,
}

impl Cursor {
    /// A machine's record, taking no second at or before `floor`.
    fn new(floor: Option<i64>) -> Cursor {
        Cursor {
            floor,
            ..Cursor::default()
        }
    }

    /// The window to ask for at `now`.
    fn window(&self, now: i64) -> Window {
        let end = floor_second(now - LAG_MS);
        let mut start = end - MAX_CATCH_UP_MS;
        if let Some(floor) = self.floor {
            start = start.max(floor + 1000);
        }
        if let Some(newest) = self.newest {
            start = start.max(newest + 1000 - OVERLAP_MS);
        }
        Window { start, end }
    }

    /// Whether second `ts` may still be taken.
    fn wants(&self, ts: i64) -> bool {
        self.floor.is_none_or(|floor| ts > floor) && !self.taken.contains(&ts)
    }

    /// Records the seconds just taken and forgets those no later window can hold.
    fn took(&mut self, seconds: impl IntoIterator<Item = i64>) {
        self.taken.extend(seconds);
        if let Some(&last) = self.taken.last() {
            self.newest = Some(self.newest.map_or(last, |n| n.max(last)));
        }
        if let Some(newest) = self.newest {
            // Later windows start after `newest - OVERLAP_MS`.
            let floor = self
                .floor
                .map_or(newest - OVERLAP_MS, |f| f.max(newest - OVERLAP_MS));
            self.floor = Some(floor);
            self.taken = self.taken.split_off(&(floor + 1));
        }
    }
}

/// `ms` truncated to the second.
fn floor_second(ms: i64) -> i64 {
    ms - ms.rem_euclid(1000)
}

/// Runs until `stopped`; fetches in flight are then abandoned (their seconds are fetched again by
/// the next start, which begins after what was stored).
pub async fn run(state: AppState, mut stopped: watch::Receiver<bool>) {
    let permits = Arc::new(Semaphore::new(
        usize::try_from(state.config.agent_concurrency).unwrap_or(64),
    ));
    // Per machine: its record and when it was last healthy.
    let mut cursors: HashMap<i64, (Arc<Mutex<Cursor>>, i64)> = HashMap::new();
    // Per app: the newest second stored when the fetcher first saw it.
    let mut app_floors: HashMap<i64, Option<i64>> = HashMap::new();
    let mut tasks = JoinSet::new();
    let mut tick = tokio::time::interval(Duration::from_millis(state.config.fetch_interval_ms));
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            biased;
            () = crate::ingest::stopping(&mut stopped) => break,
            _ = tick.tick() => {}
        }
        while tasks.try_join_next().is_some() {}
        let now = state.now_ms();
        let machines = match state.db.healthy_machines(None, state.healthy_since()).await {
            Ok(machines) => machines,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the machines to fetch");
                continue;
            }
        };
        cursors.retain(|_, (_, seen)| *seen >= now - FORGET_AFTER_MS);
        for machine in machines {
            let floor = match app_floors.get(&machine.app_id) {
                Some(floor) => *floor,
                None => {
                    let oldest = floor_second(now - LAG_MS) - MAX_CATCH_UP_MS;
                    match state.db.last_metric_second(machine.app_id, oldest).await {
                        Ok(floor) => *app_floors.entry(machine.app_id).or_insert(floor),
                        Err(e) => {
                            tracing::warn!(error = %e, "cannot read the newest stored second");
                            continue;
                        }
                    }
                }
            };
            let (cursor, seen) = cursors
                .entry(machine.id)
                .or_insert_with(|| (Arc::new(Mutex::new(Cursor::new(floor))), now));
            *seen = now;
            // Held by the fetch task: a machine whose last fetch still runs is left for a later tick.
            let Ok(cursor) = cursor.clone().try_lock_owned() else {
                continue;
            };
            tasks.spawn(fetch_machine(
                state.clone(),
                permits.clone(),
                machine,
                cursor,
            ));
        }
    }
    tasks.abort_all();
}

async fn fetch_machine(
    state: AppState,
    permits: Arc<Semaphore>,
    machine: Machine,
    mut cursor: OwnedMutexGuard<Cursor>,
) {
    let ok = match fetch(&state, &permits, &machine, &mut cursor).await {
        Ok(()) => true,
        Err(why) => {
            tracing::debug!(machine_id = machine.id, ip = %machine.ip, port = machine.port, %why, "metric fetch failed");
            false
        }
    };
    state.events.send(Event::Fetched {
        machine_id: machine.id,
        ok,
    });
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("the machine's address is not callable")]
    Address,
    #[error("the fetcher is stopping")]
    Stopping,
    #[error("call: {0}")]
    Call(#[from] crate::agent_client::CallError),
    #[error("answer: {0}")]
    Answer(#[from] crate::ingest::line::AnswerError),
}

async fn fetch(
    state: &AppState,
    permits: &Semaphore,
    machine: &Machine,
    cursor: &mut Cursor,
) -> Result<(), FetchError> {
    let target = Target::new(&machine.ip, machine.port, machine.agent_token.clone())
        .ok_or(FetchError::Address)?;
    if !state.gate.may_call(target.addr.ip()) {
        return Err(FetchError::Address);
    }
    let _permit = permits.acquire().await.map_err(|_| FetchError::Stopping)?;
    let window = cursor.window(state.now_ms());
    if window.start > window.end {
        return Ok(());
    }
    let body = state
        .agents
        .metric(&target, window.start, window.end)
        .await?;
    let parsed = match parse_answer(&body, window.start, window.end) {
        Ok(parsed) => parsed,
        Err(e) => {
            if let crate::ingest::line::AnswerError::Garbage { garbage, .. } = e {
                state.ingest.count_dropped(garbage);
            }
            return Err(e.into());
        }
    };
    if parsed.garbage > 0 {
        state.ingest.count_dropped(parsed.garbage);
    }
    let lines: Vec<_> = parsed
        .lines
        .into_iter()
        .filter(|line| cursor.wants(line.ts))
        .collect();
    let seconds: BTreeSet<i64> = lines.iter().map(|line| line.ts).collect();
    if !lines.is_empty() {
        state
            .ingest
            .send(Batch {
                machine_id: machine.id,
                app_id: machine.app_id,
                lines,
            })
            .await
            .map_err(|_| FetchError::Stopping)?;
    }
    cursor.took(seconds);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_overlap_and_seconds_are_taken_once() {
        let mut cursor = Cursor::new(Some(99_000));
        // First window: from after the floor to the last second at least 1 s ago.
        assert_eq!(
            cursor.window(110_500),
            Window {
                start: 100_000,
                end: 109_000
            }
        );
        cursor.took([100_000, 105_000, 107_000]);
        assert!(!cursor.wants(107_000) && !cursor.wants(104_000));
        assert!(cursor.wants(106_000) && cursor.wants(108_000));
        // The next window re-reads the seconds just before the newest taken.
        assert_eq!(cursor.window(111_200).start, 105_000);
        cursor.took([108_000]);
        assert_eq!(cursor.floor, Some(105_000));
        assert_eq!(
            cursor.taken.iter().copied().collect::<Vec<_>>(),
            [107_000, 108_000]
        );
        // Far behind: at most a minute back; without a floor, a minute back.
        assert_eq!(
            Cursor::new(None).window(110_500).start,
            109_000 - MAX_CATCH_UP_MS
        );
        assert_eq!(cursor.window(1_000_000).start, 999_000 - MAX_CATCH_UP_MS);
    }
}
