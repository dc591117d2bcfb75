//! The metric writer: the one task that writes metric rows.
//!
//! Fetch tasks send each machine's parsed lines as a [`Batch`] over a bounded channel ([`Ingest`] is
//! the sending side). The writer sums them per app × resource × second ([`aggregate`]) and commits
//! what is pending every [`FLUSH_INTERVAL`] or once [`FLUSH_ROWS`] rows are pending, in one
//! transaction whose upserts add to rows already stored (a late machine's lines add to a second
//! already written). After each commit it sends [`Event::MetricsWritten`]. Every
//! [`RETENTION_INTERVAL`] it rolls up minutes and deletes old rows ([`retention`]), and every
//! [`SUMMARY_INTERVAL`] it logs its figures ([`IngestStats`]). When stopped it reads what is still
//! queued, commits it, and returns.
//!
//! Tests drive it deterministically through [`Ingest::flush`] (everything sent before is committed
//! when it returns) and [`Ingest::prune`] (retention as of a given time, run by the writer).

pub mod aggregate;
pub mod line;
pub mod retention;
mod stats;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::MissedTickBehavior;

use crate::AppState;
use crate::db::{ResourceIds, SecondRow};
use crate::events::Event;

pub use aggregate::Aggregator;
pub use line::MetricLine;
pub use retention::PruneReport;
pub use stats::IngestStats;

use stats::StatsCell;

/// How many batches may wait for the writer before senders wait.
pub const CHANNEL_CAPACITY: usize = 1024;
/// How often pending rows are committed.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(250);
/// Pending rows that trigger a commit before the interval ends.
pub const FLUSH_ROWS: usize = 20_000;
/// How often retention runs.
pub const RETENTION_INTERVAL: Duration = Duration::from_secs(60);
/// How often the writer logs its figures.
pub const SUMMARY_INTERVAL: Duration = Duration::from_secs(60);

/// One machine's new lines.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The machine.
    pub machine_id: i64,
    /// Its app.
    pub app_id: i64,
    /// Lines of seconds not sent before.
    pub lines: Vec<MetricLine>,
}

/// Why the writer could not be reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IngestError {
    /// The writer has stopped.
    #[error("the metric writer has stopped")]
    Stopped,
    /// The database refused a retention run.
    #[error("retention failed: {0}")]
    Retention(String),
}

enum Message {
    Batch(Batch),
    Flush(oneshot::Sender<()>),
    Prune(i64, oneshot::Sender<Result<PruneReport, String>>),
}

/// The sending side of the writer; cheap to clone.
#[derive(Debug, Clone)]
pub struct Ingest {
    tx: mpsc::Sender<Message>,
    stats: Arc<StatsCell>,
}

/// The writer task, started with [`Writer::run`].
#[derive(Debug)]
pub struct Writer {
    rx: mpsc::Receiver<Message>,
    stats: Arc<StatsCell>,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Batch(b) => f.debug_tuple("Batch").field(&b.machine_id).finish(),
            Message::Flush(_) => f.write_str("Flush"),
            Message::Prune(now, _) => f.debug_tuple("Prune").field(now).finish(),
        }
    }
}

/// A connected pair.
pub fn channel() -> (Ingest, Writer) {
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let stats = Arc::new(StatsCell::default());
    (
        Ingest {
            tx,
            stats: stats.clone(),
        },
        Writer { rx, stats },
    )
}

impl Ingest {
    /// Queues `batch` for the writer (waits while the queue is full).
    pub async fn send(&self, batch: Batch) -> Result<(), IngestError> {
        self.tx
            .send(Message::Batch(batch))
            .await
            .map_err(|_| IngestError::Stopped)
    }

    /// Returns once everything sent before is committed.
    pub async fn flush(&self) -> Result<(), IngestError> {
        let (ack, done) = oneshot::channel();
        self.tx
            .send(Message::Flush(ack))
            .await
            .map_err(|_| IngestError::Stopped)?;
        done.await.map_err(|_| IngestError::Stopped)
    }

    /// Has the writer commit what is pending, then run retention as of `now` (ms).
    pub async fn prune(&self, now: i64) -> Result<PruneReport, IngestError> {
        let (ack, done) = oneshot::channel();
        self.tx
            .send(Message::Prune(now, ack))
            .await
            .map_err(|_| IngestError::Stopped)?;
        done.await
            .map_err(|_| IngestError::Stopped)?
            .map_err(IngestError::Retention)
    }

    /// The writer's figures so far.
    pub fn stats(&self) -> IngestStats {
        self.stats.snapshot()
    }

    /// Counts `lines` that were read but not kept (unreadable).
    pub fn count_dropped(&self, lines: usize) {
        self.stats.dropped(lines);
    }
}

/// What the writer keeps between commits.
struct Core {
    state: AppState,
    stats: Arc<StatsCell>,
    pending: Aggregator,
    ids: ResourceIds,
}

impl Core {
    async fn handle(&mut self, message: Message) {
        match message {
            Message::Batch(batch) => {
                self.stats.received(batch.lines.len());
                self.pending.add(batch.app_id, batch.lines);
                if self.pending.len() >= FLUSH_ROWS {
                    self.commit().await;
                }
            }
            Message::Flush(ack) => {
                self.commit().await;
                let _ = ack.send(());
            }
            Message::Prune(now, ack) => {
                self.commit().await;
                let _ = ack.send(self.prune(now).await.map_err(|e| e.to_string()));
            }
        }
    }

    /// Commits the pending rows; on failure they are dropped (and counted), as a second is never
    /// fetched twice.
    async fn commit(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let (rows, newest) = self.pending.take();
        let mut rows: Vec<SecondRow<'_>> = rows
            .iter()
            .map(|(key, sums)| SecondRow {
                app_id: key.app_id,
                resource: &key.resource,
                ts: key.ts,
                sums: *sums,
            })
            .collect();
        // In key order, the upserts walk the primary key's B-tree forward.
        rows.sort_unstable_by(|a, b| {
            (a.app_id, a.resource, a.ts).cmp(&(b.app_id, b.resource, b.ts))
        });
        let started = Instant::now();
        match self.state.db.add_metric_seconds(&rows, &mut self.ids).await {
            Ok(outcome) => {
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                self.stats.committed(outcome.rows, ms);
                if outcome.skipped > 0 {
                    self.stats.dropped(outcome.skipped);
                }
                if let Some(through) = newest {
                    self.state.events.send(Event::MetricsWritten { through });
                }
            }
            Err(e) => {
                let lines: i64 = rows.iter().map(|r| r.sums.machines).sum();
                self.stats
                    .dropped(usize::try_from(lines).unwrap_or(usize::MAX));
                tracing::error!(error = %e, rows = rows.len(), "metric rows not committed");
            }
        }
    }

    async fn prune(&self, now: i64) -> Result<PruneReport, sqlx::Error> {
        let report = retention::prune(&self.state.db, &self.state.config, now).await?;
        tracing::debug!(?report, "metric retention");
        Ok(report)
    }
}

impl Writer {
    /// Runs until `stopped`, then commits what is queued and returns.
    pub async fn run(mut self, state: AppState, mut stopped: watch::Receiver<bool>) {
        let mut core = Core {
            state,
            stats: self.stats.clone(),
            pending: Aggregator::default(),
            ids: ResourceIds::new(),
        };
        let mut flush = tokio::time::interval(FLUSH_INTERVAL);
        flush.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let start = tokio::time::Instant::now();
        let mut retention =
            tokio::time::interval_at(start + RETENTION_INTERVAL, RETENTION_INTERVAL);
        retention.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut summary = tokio::time::interval_at(start + SUMMARY_INTERVAL, SUMMARY_INTERVAL);
        let mut last = core.stats.snapshot();
        loop {
            tokio::select! {
                biased;
                () = stopping(&mut stopped) => break,
                _ = flush.tick() => core.commit().await,
                _ = retention.tick() => {
                    core.commit().await;
                    let now = core.state.now_ms();
                    if let Err(e) = core.prune(now).await {
                        tracing::error!(error = %e, "metric retention failed");
                    }
                }
                _ = summary.tick() => {
                    let now = core.stats.snapshot();
                    log_summary(&last, &now);
                    last = now;
                }
                // Last: the timers above are rarely ready, so a steady stream of batches cannot
                // hold back a commit.
                message = self.rx.recv() => match message {
                    Some(message) => core.handle(message).await,
                    None => break,
                },
            }
        }
        // Stopping: what the fetch tasks queued is still written.
        while let Ok(message) = self.rx.try_recv() {
            core.handle(message).await;
        }
        core.commit().await;
    }
}

/// Resolves once `stopped` turns true (or its sender is gone).
pub(crate) async fn stopping(stopped: &mut watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}

/// Logs the figures of the last interval (`before` → `now`).
fn log_summary(before: &IngestStats, now: &IngestStats) {
    tracing::info!(
        batches = now.batches - before.batches,
        lines = now.lines - before.lines,
        rows = now.rows - before.rows,
        commits = now.commits - before.commits,
        commit_p50_ms = format_args!("{:.2}", now.commit_p50_ms),
        commit_p99_ms = format_args!("{:.2}", now.commit_p99_ms),
        lines_dropped = now.lines_dropped - before.lines_dropped,
        "metrics writer summary"
    );
}
