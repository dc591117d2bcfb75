//! `StatisticNode`: the counters behind every node.
//!
//! A node keeps a second window (by default 2 × 500 ms, Sentinel's `SAMPLE_COUNT`/`INTERVAL`) of pass,
//! block, success, exception, RT sum, minimum RT and occupied passes, a 60 × 1 s minute history fed from
//! the second window as its buckets finish, and the current concurrency. It answers Sentinel's questions:
//!
//! * `passQps`, `blockQps`, `successQps`, `exceptionQps` = second-window sum ÷ interval in seconds;
//!   `totalQps` = pass + block;
//! * `avgRt` = RT sum ÷ success over the second window (0 without successes); `minRt` = the minimum over the
//!   second window, starting from `statisticMaxRt` = 5000 ms, at least 1;
//! * `maxSuccessQps` = the largest bucket's successes (at least 1) × sample count ÷ interval in seconds;
//! * `previousPassQps`/`previousBlockQps` = the previous whole second;
//! * one-minute totals = the last 60 seconds, the current one included.
//!
//! An errored call still counts as a success (with its RT) and additionally as an exception; a blocked
//! call counts only as a block.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::stat::{
    AddOutcome, Cursor, Event, HistoryGuard, LeapArray, SecondHistory, SecondRecord, WindowError,
};

/// Sentinel's `statisticMaxRt`: the initial minimum RT, and the value reported when none is smaller.
pub(crate) const STATISTIC_MAX_RT: u32 = 5000;

/// The shape of a node's second window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WindowGeometry {
    pub(crate) sample_count: u32,
    pub(crate) interval_ms: u64,
}

impl WindowGeometry {
    /// Sentinel's default: 2 buckets × 500 ms.
    pub(crate) const DEFAULT: WindowGeometry = WindowGeometry {
        sample_count: 2,
        interval_ms: 1000,
    };

    /// Validates a geometry: positive, divisible, and buckets that tile whole seconds.
    pub(crate) fn new(sample_count: u32, interval_ms: u64) -> Result<Self, WindowError> {
        let array = LeapArray::with_stripes(sample_count, interval_ms, 1)?;
        let length = array.window_length();
        if length > 1000 || 1000 % length != 0 {
            return Err(WindowError::Indivisible {
                interval_ms,
                sample_count,
            });
        }
        Ok(WindowGeometry {
            sample_count,
            interval_ms,
        })
    }
}

/// The counters of one node.
#[derive(Debug)]
pub(crate) struct StatisticNode {
    second: LeapArray,
    history: SecondHistory,
    previous_pass: AtomicU64,
    previous_block: AtomicU64,
    /// Whether anything was ever counted (set on the cold path every node's first write takes).
    counted: AtomicBool,
}

fn qps(count: u64, interval_ms: u64) -> f64 {
    count as f64 * 1000.0 / interval_ms as f64
}

impl StatisticNode {
    pub(crate) fn new(geometry: WindowGeometry) -> Self {
        let second = match LeapArray::new(geometry.sample_count, geometry.interval_ms) {
            Ok(array) => array,
            // Geometries are validated when the engine is built; this is unreachable in practice.
            Err(_) => LeapArray::new(2, 1000).unwrap_or_else(|_| unreachable!()),
        };
        StatisticNode {
            second,
            history: SecondHistory::default(),
            previous_pass: AtomicU64::new(u64::MAX),
            previous_block: AtomicU64::new(u64::MAX),
            counted: AtomicBool::new(false),
        }
    }

    /// Where writes at `now` from `stripe` land (the same for every node of an engine).
    #[inline]
    pub(crate) fn cursor(&self, now: u64, stripe: usize) -> Cursor {
        self.second.cursor(now, stripe)
    }

    #[inline]
    fn record(&self, at: Cursor, event: Event, n: u32) {
        if self.second.add_at_current(at, event, n).is_none() {
            self.record_recycling(at, event, n);
        }
    }

    /// A write that may recycle its cell, moving the finished bucket's value to the history: under the
    /// history's lock from before the value leaves the cell until it is folded in, so that readers never
    /// see it in neither place.
    #[cold]
    fn record_recycling(&self, at: Cursor, event: Event, n: u32) {
        self.note_counted();
        let mut history = self.history.lock();
        if let AddOutcome::Recycled { old_tag, old_value } = self.second.add_at(at, event, n) {
            self.fold(&mut history, at.now, old_tag, event, old_value);
        }
    }

    fn fold(&self, history: &mut HistoryGuard<'_>, now: u64, tag: u32, event: Event, value: u32) {
        let length = self.second.window_length();
        if let Some(window) = LeapArray::full_window(now / length, tag) {
            history.fold(window * length / 1000, event, value);
        }
    }

    /// Counts `n` admitted requests.
    #[inline]
    pub(crate) fn add_pass(&self, at: Cursor, n: u32) {
        self.record(at, Event::Pass, n);
    }

    /// Counts `n` blocked requests.
    #[inline]
    pub(crate) fn add_block(&self, at: Cursor, n: u32) {
        self.record(at, Event::Block, n);
    }

    /// Counts `n` errored requests.
    #[inline]
    pub(crate) fn add_exception(&self, at: Cursor, n: u32) {
        self.record(at, Event::Exception, n);
    }

    /// Counts `n` completed requests that took `rt` ms.
    #[inline]
    pub(crate) fn add_rt_and_success(&self, at: Cursor, rt: u32, n: u32) {
        self.record(at, Event::Success, n);
        self.record(at, Event::Rt, rt);
        self.second.add_min_rt_at(at, rt);
    }

    /// Records `n` passes borrowed from the window of `future` (a prioritized entry's occupied pass): they
    /// count as passes of that window when it comes, and as occupied passes now.
    pub(crate) fn add_waiting(&self, at: Cursor, future: u64, n: u32) {
        self.add_borrowed(future, n);
        self.record(at, Event::OccupiedPass, n);
    }

    /// Counts `n` admitted requests that run after a queueing wait, at `runs_at`: in the window they run
    /// in, as Sentinel's statistic slot counts them after the controller's sleep (so a paced burst
    /// shows as paced). A wait of more than a minute counts a minute ahead, the farthest a future
    /// window is held (for short windows, at most 240 windows ahead).
    pub(crate) fn add_queued_pass(&self, at: Cursor, runs_at: u64, n: u32) {
        match self.second.future_window_time(at.now, runs_at) {
            None => self.record(at, Event::Pass, n),
            Some(future) => self.add_borrowed(future, n),
        }
    }

    /// Passes of the future window of time `future`, counted when it comes.
    fn add_borrowed(&self, future: u64, n: u32) {
        self.note_counted();
        let mut history = self.history.lock();
        if let AddOutcome::Recycled { old_tag, old_value } = self.second.add_borrowed(future, n) {
            self.fold(&mut history, future, old_tag, Event::Pass, old_value);
        }
    }

    /// Sets [`has_counted`](Self::has_counted) (the first write to a cell takes the recycling path, so
    /// this is off the hot path). The concurrency gauge is not an event: it does not set it.
    fn note_counted(&self) {
        if !self.counted.load(Ordering::Relaxed) {
            self.counted.store(true, Ordering::Relaxed);
        }
    }

    /// Whether any event was ever counted on this node.
    pub(crate) fn has_counted(&self) -> bool {
        self.counted.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn increase_thread(&self, stripe: usize) {
        self.second.gauge_add(stripe, 1);
    }

    #[inline]
    pub(crate) fn decrease_thread(&self, stripe: usize) {
        self.second.gauge_add(stripe, -1);
    }

    /// Requests in flight.
    pub(crate) fn cur_thread_num(&self) -> u64 {
        self.second.gauge() as u64
    }

    fn second_qps(&self, now: u64, event: Event) -> f64 {
        qps(self.second.sum(now, event), self.second.interval())
    }

    pub(crate) fn pass_qps(&self, now: u64) -> f64 {
        self.second_qps(now, Event::Pass)
    }

    pub(crate) fn block_qps(&self, now: u64) -> f64 {
        self.second_qps(now, Event::Block)
    }

    pub(crate) fn success_qps(&self, now: u64) -> f64 {
        self.second_qps(now, Event::Success)
    }

    pub(crate) fn exception_qps(&self, now: u64) -> f64 {
        self.second_qps(now, Event::Exception)
    }

    pub(crate) fn occupied_pass_qps(&self, now: u64) -> f64 {
        self.second_qps(now, Event::OccupiedPass)
    }

    pub(crate) fn total_qps(&self, now: u64) -> f64 {
        self.pass_qps(now) + self.block_qps(now)
    }

    /// Pass QPS truncated to an integer (Sentinel's `(int) node.passQps()`), in integer arithmetic, at
    /// the instant of `at` (a cursor of the engine's geometry, which every node of an engine shares).
    #[inline]
    pub(crate) fn pass_qps_floor(&self, at: Cursor) -> u64 {
        let count = self.second.sum_at(at, Event::Pass);
        match self.second.interval() {
            1000 => count,
            interval => count.saturating_mul(1000) / interval,
        }
    }

    /// Passes in the current window (not divided by the interval).
    pub(crate) fn pass_count(&self, now: u64) -> u64 {
        self.second.sum(now, Event::Pass)
    }

    pub(crate) fn avg_rt(&self, now: u64) -> f64 {
        let success = self.second.sum(now, Event::Success);
        if success == 0 {
            return 0.0;
        }
        self.second.sum(now, Event::Rt) as f64 / success as f64
    }

    /// The smallest RT of the window, at least 1 ms (Sentinel's floor: calls of under a millisecond
    /// must not make the system rule's BBR capacity 0), [`STATISTIC_MAX_RT`] without completions.
    pub(crate) fn min_rt(&self, now: u64) -> f64 {
        f64::from(
            self.second
                .min_rt(now)
                .unwrap_or(STATISTIC_MAX_RT)
                .clamp(1, STATISTIC_MAX_RT),
        )
    }

    /// The largest bucket's successes as a rate, the bucket's count floored at 1 (Sentinel's).
    pub(crate) fn max_success_qps(&self, now: u64) -> f64 {
        let max = self.second.max_bucket(now, Event::Success).max(1);
        max as f64 * self.second.sample_count() as f64 * 1000.0 / self.second.interval() as f64
    }

    /// The values of the whole seconds `from..=to` (at most the last 60 before `now`), oldest first.
    pub(crate) fn seconds(&self, now: u64, from: u64, to: u64) -> Vec<SecondRecord> {
        // Held while the cells are read too (see `record_recycling`).
        let history = self.history.lock();
        let mut records = history.range(from, to);
        let Some(first) = records.first().map(|r| r.second) else {
            return records;
        };
        self.second.for_each_pending(now, |start, event, value| {
            let second = start / 1000;
            if second >= first && second <= to {
                records[(second - first) as usize].add(event, value);
            }
        });
        records
    }

    /// The values of one whole second, without allocating.
    pub(crate) fn second_record(&self, now: u64, second: u64) -> SecondRecord {
        let history = self.history.lock();
        let mut record = history.get(second);
        self.second.for_each_pending(now, |start, event, value| {
            if start / 1000 == second {
                record.add(event, value);
            }
        });
        record
    }

    fn previous(&self, now: u64, cache: &AtomicU64, pick: fn(&SecondRecord) -> u64) -> f64 {
        let Some(second) = (now / 1000).checked_sub(1) else {
            return 0.0;
        };
        let cached = cache.load(Ordering::Relaxed);
        if cached >> 32 == second & 0xFFFF_FFFF && cached != u64::MAX {
            return (cached & 0xFFFF_FFFF) as f64;
        }
        let value = pick(&self.second_record(now, second)).min(u64::from(u32::MAX));
        cache.store(((second & 0xFFFF_FFFF) << 32) | value, Ordering::Relaxed);
        value as f64
    }

    /// Passes in the previous whole second (Sentinel's `previousPassQps`).
    pub(crate) fn previous_pass_qps(&self, now: u64) -> f64 {
        self.previous(now, &self.previous_pass, |r| r.pass)
    }

    /// Blocks in the previous whole second.
    pub(crate) fn previous_block_qps(&self, now: u64) -> f64 {
        self.previous(now, &self.previous_block, |r| r.block)
    }

    /// Totals over the last 60 seconds, the current one included.
    pub(crate) fn minute_totals(&self, now: u64) -> SecondRecord {
        let second = now / 1000;
        let mut total = SecondRecord::default();
        for record in self.seconds(now, second.saturating_sub(59), second) {
            total.merge(&record);
        }
        total
    }

    /// Borrowed passes still waiting for their window.
    pub(crate) fn waiting(&self, now: u64) -> u64 {
        self.second.current_waiting(now)
    }

    /// How long a prioritized request of `acquire` must wait for enough passes to slide out of the window
    /// so that it fits under `threshold` QPS; `occupy_timeout` when it cannot within that time
    /// (Sentinel's `tryOccupyNext`).
    pub(crate) fn try_occupy_next(
        &self,
        now: u64,
        acquire: u32,
        threshold: f64,
        occupy_timeout: u64,
    ) -> u64 {
        let interval = self.second.interval();
        let max_count = threshold * interval as f64 / 1000.0;
        let borrowed = self.waiting(now) as f64;
        if borrowed >= max_count {
            return occupy_timeout;
        }
        let length = self.second.window_length();
        let Some(mut earliest) = (now - now % length + length).checked_sub(interval) else {
            return occupy_timeout;
        };
        let mut current_pass = self.pass_count(now) as f64;
        let mut idx = 0;
        while earliest < now {
            let wait = idx * length + length - now % length;
            if wait >= occupy_timeout {
                break;
            }
            let window_pass = self.second.window_pass(now, earliest) as f64;
            if current_pass + borrowed + f64::from(acquire) - window_pass <= max_count {
                return wait;
            }
            earliest += length;
            current_pass -= window_pass;
            idx += 1;
        }
        occupy_timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000;

    fn node() -> StatisticNode {
        StatisticNode::new(WindowGeometry::DEFAULT)
    }

    #[test]
    fn geometry_must_tile_seconds() {
        assert!(WindowGeometry::new(2, 1000).is_ok());
        assert!(WindowGeometry::new(4, 1000).is_ok());
        assert!(WindowGeometry::new(1, 2000).is_err());
        assert!(WindowGeometry::new(3, 900).is_err());
    }

    #[test]
    fn mixed_sequence_metrics() {
        let n = node();
        let t = T0 + 100;
        for _ in 0..5 {
            n.add_pass(n.cursor(t, 0), 1);
            n.increase_thread(0);
        }
        n.add_block(n.cursor(t, 0), 2);
        // Three complete: RTs 10, 20, 30; one of them errored.
        for rt in [10, 20, 30] {
            n.add_rt_and_success(n.cursor(t + 50, 0), rt, 1);
            n.decrease_thread(0);
        }
        n.add_exception(n.cursor(t + 50, 0), 1);
        let now = t + 60;
        assert_eq!(n.pass_qps(now), 5.0);
        assert_eq!(n.block_qps(now), 2.0);
        assert_eq!(n.total_qps(now), 7.0);
        assert_eq!(
            n.success_qps(now),
            3.0,
            "an errored call is still a success"
        );
        assert_eq!(n.exception_qps(now), 1.0);
        assert_eq!(n.avg_rt(now), 20.0);
        assert_eq!(n.min_rt(now), 10.0);
        assert_eq!(n.cur_thread_num(), 2);
        assert_eq!(n.max_success_qps(now), 6.0, "3 in one bucket × 2 buckets");
    }

    /// A reader of a whole second while a writer moves that second's buckets from the cells to the
    /// history (the first write of each later bucket) never finds a value in neither place.
    #[test]
    fn a_second_read_while_its_buckets_move_is_never_short() {
        const SECONDS: u64 = 200_000;
        let n = std::sync::Arc::new(node());
        let written = std::sync::Arc::new(AtomicU64::new(0));
        let writer = std::thread::spawn({
            let (n, written) = (n.clone(), written.clone());
            move || {
                for s in 0..SECONDS {
                    for half in 0..2 {
                        n.add_pass(n.cursor(T0 + s * 1000 + half * 500, 0), 1);
                    }
                    written.store(s + 1, Ordering::Release);
                }
            }
        });
        let (mut reads, mut short) = (0u64, 0u64);
        loop {
            let d = written.load(Ordering::Acquire);
            if d == SECONDS {
                break;
            }
            if let Some(s) = d.checked_sub(1) {
                // Second s is whole; the writer is moving it to the history now.
                let second = T0 / 1000 + s;
                let record = n.seconds(T0 + (d + 1) * 1000, second, second)[0];
                // Counted only if the writer did not run ahead meanwhile (past a minute, the history
                // would have dropped second s).
                if written.load(Ordering::Acquire) <= d + 1 {
                    reads += 1;
                    short += u64::from(record.pass < 2);
                }
            }
        }
        writer.join().unwrap();
        assert!(reads > 0);
        assert_eq!(short, 0, "{short} of {reads} reads lost a moving value");
    }

    #[test]
    fn min_rt_defaults_to_statistic_max_rt() {
        let n = node();
        assert_eq!(n.min_rt(T0), 5000.0);
        n.add_rt_and_success(n.cursor(T0, 0), 9000, 1);
        assert_eq!(n.min_rt(T0), 5000.0);
        assert_eq!(n.avg_rt(T0), 9000.0);
    }

    #[test]
    fn min_rt_and_max_success_are_floored_at_one_as_sentinels() {
        let n = node();
        assert_eq!(n.max_success_qps(T0), 2.0, "no completions: 1 per bucket");
        n.add_rt_and_success(n.cursor(T0, 0), 0, 1);
        assert_eq!(n.min_rt(T0), 1.0, "a call of under 1 ms");
    }

    #[test]
    fn previous_second_and_minute_totals() {
        let n = node();
        n.add_pass(n.cursor(T0 + 100, 0), 3);
        n.add_pass(n.cursor(T0 + 700, 0), 4);
        n.add_block(n.cursor(T0 + 800, 0), 2);
        assert_eq!(n.previous_pass_qps(T0 + 900), 0.0);
        // Next second: first half recycles slot 0 (folds 3 passes into the history).
        n.add_pass(n.cursor(T0 + 1100, 0), 1);
        assert_eq!(n.previous_pass_qps(T0 + 1100), 7.0);
        assert_eq!(n.previous_block_qps(T0 + 1100), 2.0);
        assert_eq!(
            n.pass_qps(T0 + 1100),
            5.0,
            "4 from [500,1000) + 1 from [1000,1500)"
        );
        let totals = n.minute_totals(T0 + 1100);
        assert_eq!(totals.pass, 8);
        assert_eq!(totals.block, 2);
        // Idle for 30 s: still in the minute, gone from the second window.
        let later = T0 + 31_000;
        assert_eq!(n.pass_qps(later), 0.0);
        assert_eq!(n.minute_totals(later).pass, 8);
        assert_eq!(n.previous_pass_qps(later), 0.0);
        // The second [1000, 2000) leaves the minute when its start is more than 60 s old.
        assert_eq!(n.minute_totals(T0 + 60_999).pass, 1);
        assert_eq!(n.minute_totals(T0 + 61_000).pass, 0);
    }

    #[test]
    fn seconds_are_exact_across_folds() {
        let n = node();
        for ms in (0..10_000).step_by(10) {
            n.add_pass(n.cursor(T0 + ms, 0), 1);
            n.add_rt_and_success(n.cursor(T0 + ms, 0), 5, 1);
        }
        let seconds = n.seconds(T0 + 10_000, T0 / 1000, T0 / 1000 + 9);
        assert_eq!(seconds.len(), 10);
        for r in seconds {
            assert_eq!(
                (r.pass, r.success, r.rt),
                (100, 100, 500),
                "second {}",
                r.second
            );
        }
    }

    #[test]
    fn try_occupy_next_waits_for_a_bucket_to_slide_out() {
        // threshold 10 QPS, 2 × 500 ms: 4 passes in the old bucket, 6 in the current one.
        let n = node();
        n.add_pass(n.cursor(T0 + 100, 0), 4);
        n.add_pass(n.cursor(T0 + 600, 0), 6);
        let now = T0 + 700;
        // The old bucket [0,500) slides out at 1000: wait 300 ms frees 4.
        assert_eq!(n.try_occupy_next(now, 1, 10.0, 500), 300);
        // Needing 5 more than fits: nothing frees enough within 500 ms.
        assert_eq!(n.try_occupy_next(now, 5, 10.0, 500), 500);
        // Borrow it and see the waiting count.
        n.add_waiting(n.cursor(now, 0), now + 300, 1);
        assert_eq!(n.waiting(now), 1);
        assert_eq!(n.occupied_pass_qps(now), 1.0);
        assert_eq!(
            n.pass_count(T0 + 1000),
            6 + 1,
            "the borrowed pass counts in its window"
        );
        // Borrowing is capped at count × interval.
        n.add_waiting(n.cursor(now, 0), now + 300, 9);
        assert_eq!(n.try_occupy_next(now, 1, 10.0, 500), 500);
    }
}
