//! A flow id's sliding window on a token server (Sentinel's `ClusterMetric`): `sample_count` buckets
//! over `interval_ms`, each counting passes, blocks and waits, plus the passes prioritized requests
//! borrowed from the bucket that comes next.
//!
//! A bucket is reused once its time is past the window: reading or adding at `now` first resets every
//! bucket whose start is not `now`'s. Passes borrowed from the next bucket count as passes of that
//! bucket when it comes; until then they count as waiting.

/// What a bucket counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// Tokens granted.
    Pass,
    /// Requests granted.
    PassRequest,
    /// Tokens refused.
    Block,
    /// Requests refused.
    BlockRequest,
    /// Tokens of prioritized requests granted at once.
    OccupiedPass,
    /// Tokens of prioritized requests refused.
    OccupiedBlock,
    /// Tokens borrowed from the next bucket, whose requests wait for it.
    Waiting,
}

const EVENTS: usize = 7;

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    start: u64,
    counts: [u64; EVENTS],
}

/// One flow id's window. Not synchronized: the service keeps it behind a lock.
#[derive(Debug)]
pub(crate) struct ClusterMetric {
    bucket_ms: u64,
    interval_ms: u64,
    buckets: Box<[Bucket]>,
    /// Passes borrowed from the bucket starting at `.0`.
    borrowed: Option<(u64, u64)>,
}

impl ClusterMetric {
    /// `sample_count` buckets over `interval_ms` (checked by the rule's validation: both > 0, the
    /// interval a multiple of the count).
    pub(crate) fn new(sample_count: u32, interval_ms: u64) -> Self {
        let sample_count = sample_count.max(1);
        ClusterMetric {
            bucket_ms: (interval_ms / u64::from(sample_count)).max(1),
            interval_ms: interval_ms.max(1),
            buckets: vec![Bucket::default(); sample_count as usize].into_boxed_slice(),
            borrowed: None,
        }
    }

    /// The bucket starting at `start`, reset if it held an older one.
    fn bucket_at(&mut self, start: u64) -> &mut Bucket {
        let index = ((start / self.bucket_ms) % self.buckets.len() as u64) as usize;
        let bucket = &mut self.buckets[index];
        if bucket.start != start {
            *bucket = Bucket {
                start,
                counts: [0; EVENTS],
            };
        }
        bucket
    }

    /// The bucket of `now`, with the passes borrowed from a bucket that has come moved into it.
    fn current(&mut self, now: u64) -> &mut Bucket {
        let start = now - now % self.bucket_ms;
        if let Some((at, n)) = self.borrowed {
            if at <= start {
                self.borrowed = None;
                if start - at < self.interval_ms {
                    self.bucket_at(at).counts[Event::Pass as usize] += n;
                }
            }
        }
        self.bucket_at(start)
    }

    pub(crate) fn add(&mut self, now: u64, event: Event, n: u64) {
        self.current(now).counts[event as usize] += n;
    }

    /// `event` over the window ending at `now`.
    pub(crate) fn sum(&mut self, now: u64, event: Event) -> u64 {
        self.current(now);
        let window = self.interval_ms;
        self.buckets
            .iter()
            .filter(|b| b.start <= now && now - b.start < window)
            .map(|b| b.counts[event as usize])
            .sum()
    }

    /// `event` per second over the window.
    pub(crate) fn avg(&mut self, now: u64, event: Event) -> f64 {
        self.sum(now, event) as f64 * 1000.0 / self.interval_ms as f64
    }

    /// Borrows `n` passes from the next bucket if the window then holds at most `threshold` per
    /// second: the passes now, less the oldest bucket's (gone by then), plus those borrowed already.
    /// The wait until the next bucket, ms, or `None`.
    pub(crate) fn try_borrow_next(&mut self, now: u64, n: u64, threshold: f64) -> Option<u64> {
        let qps = self.avg(now, Event::Pass);
        let start = now - now % self.bucket_ms;
        let next = start + self.bucket_ms;
        let oldest = next.saturating_sub(self.interval_ms);
        let oldest_pass: u64 = self
            .buckets
            .iter()
            .filter(|b| b.start == oldest && now - b.start < self.interval_ms)
            .map(|b| b.counts[Event::Pass as usize])
            .sum();
        let borrowed = match self.borrowed {
            Some((at, k)) if at == next => k,
            _ => 0,
        };
        if qps + (n + borrowed) as f64 - oldest_pass as f64 > threshold {
            return None;
        }
        self.borrowed = Some((next, borrowed + n));
        self.add(now, Event::Waiting, n);
        Some(next - now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_leave_the_window_bucket_by_bucket() {
        let mut m = ClusterMetric::new(10, 1000);
        m.add(1_000, Event::Pass, 3);
        m.add(1_550, Event::Pass, 2);
        assert_eq!(m.sum(1_999, Event::Pass), 5);
        assert_eq!(m.avg(1_999, Event::Pass), 5.0);
        assert_eq!(m.sum(2_000, Event::Pass), 2, "the 1000 ms bucket left");
        assert_eq!(m.sum(2_600, Event::Pass), 0);
    }

    #[test]
    fn a_window_of_two_seconds_averages_over_two() {
        let mut m = ClusterMetric::new(4, 2000);
        m.add(0, Event::Pass, 10);
        assert_eq!(m.avg(1_999, Event::Pass), 5.0);
    }

    #[test]
    fn borrowed_passes_count_in_their_bucket_when_it_comes() {
        let mut m = ClusterMetric::new(10, 1000);
        m.add(1_000, Event::Pass, 10);
        // Full at 10 per second: nothing to borrow until the 1000 ms bucket is about to leave.
        assert_eq!(m.try_borrow_next(1_050, 1, 10.0), None);
        assert_eq!(m.try_borrow_next(1_950, 1, 10.0), Some(50));
        assert_eq!(m.sum(1_950, Event::Waiting), 1);
        assert_eq!(
            m.sum(2_000, Event::Pass),
            1,
            "the borrowed pass, in [2000, 2100)"
        );
        // A bucket time skips still holds its borrowed passes while it is in the window.
        assert_eq!(m.try_borrow_next(2_950, 1, 10.0), Some(50));
        assert_eq!(m.sum(3_500, Event::Pass), 1);
        assert_eq!(m.sum(5_000, Event::Pass), 0);
    }
}
