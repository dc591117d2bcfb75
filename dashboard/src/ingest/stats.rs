//! The writer's figures: counters since the start, and the commit latencies of the most recent
//! commits (a ring of [`LATENCY_SAMPLES`]) from which the p50 and p99 are read.

use std::sync::Mutex;

/// How many recent commit latencies are kept.
pub(super) const LATENCY_SAMPLES: usize = 1024;

/// What the writer has done since the start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IngestStats {
    /// Machine batches received.
    pub batches: u64,
    /// Lines received (before summing across machines).
    pub lines: u64,
    /// Rows written (one per app × resource × second of a commit).
    pub rows: u64,
    /// Transactions committed.
    pub commits: u64,
    /// Lines dropped: unreadable, or lost with a failed commit.
    pub lines_dropped: u64,
    /// The median latency of the recent commits, in ms.
    pub commit_p50_ms: f64,
    /// The 99th percentile latency of the recent commits, in ms.
    pub commit_p99_ms: f64,
}

#[derive(Debug, Default)]
struct Inner {
    stats: IngestStats,
    latencies: Vec<f64>,
    next: usize,
}

/// The shared figures (the writer and the fetch tasks update them, [`super::Ingest::stats`] reads).
#[derive(Debug, Default)]
pub(crate) struct StatsCell(Mutex<Inner>);

impl StatsCell {
    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        // A panic while holding the lock leaves only counters behind; they are still usable.
        let mut inner = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut inner)
    }

    pub(crate) fn received(&self, lines: usize) {
        self.with(|i| {
            i.stats.batches += 1;
            i.stats.lines += lines as u64;
        });
    }

    pub(crate) fn dropped(&self, lines: usize) {
        self.with(|i| i.stats.lines_dropped += lines as u64);
    }

    pub(crate) fn committed(&self, rows: usize, ms: f64) {
        self.with(|i| {
            i.stats.commits += 1;
            i.stats.rows += rows as u64;
            if i.latencies.len() < LATENCY_SAMPLES {
                i.latencies.push(ms);
            } else {
                let at = i.next;
                i.latencies[at] = ms;
            }
            i.next = (i.next + 1) % LATENCY_SAMPLES;
        });
    }

    pub(crate) fn snapshot(&self) -> IngestStats {
        self.with(|i| {
            let mut sorted = i.latencies.clone();
            sorted.sort_by(f64::total_cmp);
            IngestStats {
                commit_p50_ms: percentile(&sorted, 0.50),
                commit_p99_ms: percentile(&sorted, 0.99),
                ..i.stats.clone()
            }
        })
    }
}

/// The `q` quantile of `sorted` (nearest rank; 0 when empty).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_the_recent_commits() {
        let cell = StatsCell::default();
        for ms in 1..=100 {
            cell.committed(10, f64::from(ms));
        }
        let s = cell.snapshot();
        assert_eq!((s.commits, s.rows), (100, 1000));
        assert_eq!((s.commit_p50_ms, s.commit_p99_ms), (50.0, 99.0));
        // Old samples are replaced once the ring is full.
        for _ in 0..LATENCY_SAMPLES {
            cell.committed(1, 2.0);
        }
        assert_eq!(cell.snapshot().commit_p99_ms, 2.0);
    }
}
