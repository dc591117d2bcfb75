//! The LeapArray: a ring of time buckets that slides with the clock (Sentinel's sliding window).
//!
//! The interval (say 1000 ms) is cut into `sample_count` buckets of `window_length = interval /
//! sample_count` ms. Time `t` falls in the bucket of window `w = t / window_length`, stored in slot
//! `w % sample_count`, and that window starts at `t - t % window_length`:
//!
//! ```text
//!   sample_count = 2, window_length = 500 ms, t = 1_700_000_001_730
//!
//!        slot 0              slot 1
//!   ┌──────────────────┬──────────────────┐
//!   │ [1000, 1500) ms  │ [1500, 2000) ms  │  ← window of t: 1730 / 500 = 3 → slot 1, start 1500
//!   └──────────────────┴──────────────────┘
//!   the next window, [2000, 2500), lands in slot 0 again and recycles it
//! ```
//!
//! Semantics, exactly Sentinel's:
//!
//! * a bucket is *deprecated* iff `now − start > interval` (strict: a bucket exactly one interval old still
//!   counts in [`LeapArray::values`]; one millisecond later it does not);
//! * the *previous window* of `t` is the bucket of `t − window_length`, if it exists and is not deprecated;
//! * the *valid head* of `t` is the bucket in the slot of `t + window_length` (the oldest one), if valid;
//! * the sums a node reports ([`LeapArray::sum`]) first roll the current bucket, as Sentinel's
//!   `ArrayMetric` does: they cover the `sample_count` windows ending with the current one.
//!
//! Unlike Sentinel, buckets are not objects reset under a lock. Every counter is a tagged cell (see
//! `cell.rs`) that carries its window index, so a bucket is "reset" counter by counter, by the first
//! writer of the new window, with one CAS; a stale writer can never write into a recycled bucket, and a
//! backwards clock step only drops writes (it never panics, spins or underflows). Each slot is striped
//! per thread (one cache line per stripe) so that two threads counting the same resource do not share a
//! cache line; reads sum the stripes.
//!
//! The *occupiable* variant (Sentinel's `OccupiableBucketLeapArray`) is built in: [`LeapArray::add_borrowed`]
//! records passes borrowed from a future window, they count as passes of that window when it comes, and
//! [`LeapArray::current_waiting`] sums the borrowed passes whose window has not started yet.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use thiserror::Error;

use super::cell::{self, AddOutcome};
use super::fast_div::FastDiv;
use super::stripe::stripe_count;

/// The events a bucket counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub(crate) enum Event {
    Pass = 0,
    Block = 1,
    Success = 2,
    Exception = 3,
    Rt = 4,
    OccupiedPass = 5,
}

impl Event {
    pub(crate) const ALL: [Event; 6] = [
        Event::Pass,
        Event::Block,
        Event::Success,
        Event::Exception,
        Event::Rt,
        Event::OccupiedPass,
    ];
}

const MIN_RT: usize = 6;
const CELLS: usize = 7;

/// Why a window geometry is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WindowError {
    /// The sample count was zero.
    #[error("sample count must be positive")]
    ZeroSampleCount,
    /// The interval was zero.
    #[error("interval must be positive")]
    ZeroInterval,
    /// The interval does not divide into whole-millisecond buckets.
    #[error("interval {interval_ms} ms is not divisible by sample count {sample_count}")]
    Indivisible {
        /// The interval asked for.
        interval_ms: u64,
        /// The sample count asked for.
        sample_count: u32,
    },
}

/// How far ahead passes may be counted in a future window (a queue's wait, a prioritized borrow): a
/// longer wait counts this far ahead.
pub(crate) const FUTURE_HORIZON_MS: u64 = 60_000;

/// The most future windows a node keeps cells for (short windows reach less than the horizon).
const MAX_FUTURE_WINDOWS: u64 = 240;

/// How many future windows of `window_length` ms a node keeps cells for: the horizon, at least one
/// interval's worth of windows is added by the caller (the span).
fn future_windows(window_length: u64) -> usize {
    (FUTURE_HORIZON_MS / window_length.max(1)).clamp(1, MAX_FUTURE_WINDOWS) as usize
}

/// One stripe of one slot: the tagged cells, plus a gauge (used in slot 0 for concurrency).
#[derive(Debug, Default)]
#[repr(align(64))]
struct Stripe {
    cells: [AtomicU64; CELLS],
    gauge: AtomicI64,
}

/// Where a write at one instant lands: the window, its slot and the writer's stripe. Computed once per
/// entry (and once per exit) and shared by every node of the engine, which all have the same geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub(crate) now: u64,
    window: u64,
    slot: usize,
    stripe: usize,
}

/// The values of one bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(dead_code)] // read by the window tests and the LeapArray API above
pub(crate) struct BucketSnapshot {
    pub(crate) start: u64,
    pub(crate) pass: u64,
    pub(crate) block: u64,
    pub(crate) success: u64,
    pub(crate) exception: u64,
    pub(crate) rt: u64,
    pub(crate) occupied_pass: u64,
    pub(crate) min_rt: Option<u32>,
}

/// A sliding window of `sample_count` buckets over `interval` milliseconds.
#[derive(Debug)]
pub(crate) struct LeapArray {
    window_length: u64,
    sample_count: u64,
    length_div: FastDiv,
    count_div: FastDiv,
    interval: u64,
    stripe_mask: usize,
    stripes: usize,
    slots: Box<[Stripe]>,
    /// Passes counted in future windows (prioritized entries' borrowed passes, queued entries' passes),
    /// one cell per window on a ring of [`borrowed_len`](Self::borrowed_len) windows: the span and
    /// [`FUTURE_HORIZON_MS`] ahead of it, so that a future window never shares a cell with one still in
    /// the span. Allocated on the first such pass (most nodes never need it).
    borrowed: OnceLock<Box<[AtomicU64]>>,
    borrowed_len: usize,
}

impl LeapArray {
    /// A window striped for this machine's CPUs.
    pub(crate) fn new(sample_count: u32, interval_ms: u64) -> Result<Self, WindowError> {
        Self::with_stripes(sample_count, interval_ms, stripe_count())
    }

    /// A window with `stripes` stripes (rounded up to a power of two).
    pub(crate) fn with_stripes(
        sample_count: u32,
        interval_ms: u64,
        stripes: usize,
    ) -> Result<Self, WindowError> {
        if sample_count == 0 {
            return Err(WindowError::ZeroSampleCount);
        }
        if interval_ms == 0 {
            return Err(WindowError::ZeroInterval);
        }
        if interval_ms % u64::from(sample_count) != 0 {
            return Err(WindowError::Indivisible {
                interval_ms,
                sample_count,
            });
        }
        let stripes = stripes.max(1).next_power_of_two();
        let n = sample_count as usize;
        Ok(LeapArray {
            window_length: interval_ms / u64::from(sample_count),
            sample_count: u64::from(sample_count),
            length_div: FastDiv::new(interval_ms / u64::from(sample_count)),
            count_div: FastDiv::new(u64::from(sample_count)),
            interval: interval_ms,
            stripe_mask: stripes - 1,
            stripes,
            slots: (0..n * stripes).map(|_| Stripe::default()).collect(),
            borrowed: OnceLock::new(),
            // A prioritized borrow reaches one interval ahead, whatever the horizon.
            borrowed_len: n + future_windows(interval_ms / u64::from(sample_count)).max(n),
        })
    }

    /// Length of one bucket in ms.
    pub(crate) fn window_length(&self) -> u64 {
        self.window_length
    }

    /// Length of the whole window in ms.
    pub(crate) fn interval(&self) -> u64 {
        self.interval
    }

    /// Number of buckets.
    pub(crate) fn sample_count(&self) -> u64 {
        self.sample_count
    }

    #[inline]
    fn slot(&self, window: u64) -> usize {
        self.count_div.rem(window) as usize
    }

    /// The window index of time `t`.
    #[inline]
    pub(crate) fn window_of(&self, t: u64) -> u64 {
        self.length_div.div(t)
    }

    fn stripes_of(&self, window: u64) -> &[Stripe] {
        let base = self.slot(window) * self.stripes;
        &self.slots[base..base + self.stripes]
    }

    /// The full window index that `tag` denotes, seen from window `reference` (nearest on the circle).
    pub(crate) fn full_window(reference: u64, tag: u32) -> Option<u64> {
        // Ahead of `reference` only as far as a newer window can be (see `cell::MAX_LEAD`); anything
        // else is behind it.
        let ahead = tag.wrapping_sub(reference as u32);
        if ahead != 0 && ahead <= super::cell::MAX_LEAD {
            reference.checked_add(u64::from(ahead))
        } else {
            reference.checked_sub(u64::from((reference as u32).wrapping_sub(tag)))
        }
    }

    /// The cursor for a write at time `t` on `stripe`.
    #[inline]
    pub(crate) fn cursor(&self, t: u64, stripe: usize) -> Cursor {
        let window = self.window_of(t);
        Cursor {
            now: t,
            window,
            slot: self.slot(window) * self.stripes + (stripe & self.stripe_mask),
            stripe,
        }
    }

    /// Counts `n` of `event` at time `t` on `stripe`.
    #[cfg(test)]
    pub(crate) fn add(&self, t: u64, stripe: usize, event: Event, n: u32) -> AddOutcome {
        self.add_at(self.cursor(t, stripe), event, n)
    }

    /// Counts `n` of `event` where `at` points.
    #[inline]
    pub(crate) fn add_at(&self, at: Cursor, event: Event, n: u32) -> AddOutcome {
        cell::add(
            &self.slots[at.slot].cells[event as usize],
            at.window as u32,
            n,
        )
    }

    /// Counts `n` of `event` where `at` points if its cell holds that window; `None`, writing nothing, if
    /// the write would recycle the cell (see [`cell::add_current`]).
    #[inline]
    pub(crate) fn add_at_current(&self, at: Cursor, event: Event, n: u32) -> Option<AddOutcome> {
        cell::add_current(
            &self.slots[at.slot].cells[event as usize],
            at.window as u32,
            n,
        )
    }

    /// Records a response time for the minimum-RT statistic.
    #[cfg(test)]
    pub(crate) fn add_min_rt(&self, t: u64, stripe: usize, rt: u32) {
        self.add_min_rt_at(self.cursor(t, stripe), rt);
    }

    /// Records a response time for the minimum-RT statistic where `at` points.
    #[inline]
    pub(crate) fn add_min_rt_at(&self, at: Cursor, rt: u32) {
        cell::min(&self.slots[at.slot].cells[MIN_RT], at.window as u32, rt);
    }

    /// Borrows `n` passes from the window containing the future time `future_t`.
    pub(crate) fn add_borrowed(&self, future_t: u64, n: u32) -> AddOutcome {
        let cells = self
            .borrowed
            .get_or_init(|| (0..self.borrowed_len).map(|_| AtomicU64::new(0)).collect());
        let window = self.window_of(future_t);
        cell::add(
            &cells[(window % cells.len() as u64) as usize],
            window as u32,
            n,
        )
    }

    /// The borrowed-pass cell of `window` (none before anything was borrowed).
    #[inline]
    fn borrowed_cell(&self, window: u64) -> Option<&AtomicU64> {
        let cells = self.borrowed.get()?;
        Some(&cells[(window % cells.len() as u64) as usize])
    }

    /// Where a pass at `later` counts, seen at `now`: `None` for the window of `now` (or an earlier one),
    /// else a time in the window of `later`, at most [`FUTURE_HORIZON_MS`] (and one interval) ahead, as
    /// far as a borrowed cell reaches.
    pub(crate) fn future_window_time(&self, now: u64, later: u64) -> Option<u64> {
        let current = self.window_of(now);
        let window = self.window_of(later);
        let reach = (self.borrowed_len as u64).saturating_sub(self.sample_count);
        (window > current).then(|| window.min(current + reach) * self.window_length)
    }

    /// Adds `delta` to the gauge (concurrency) on `stripe`.
    #[inline]
    pub(crate) fn gauge_add(&self, stripe: usize, delta: i64) {
        self.slots[stripe & self.stripe_mask]
            .gauge
            .fetch_add(delta, Ordering::Relaxed);
    }

    /// The gauge summed over stripes (never negative).
    pub(crate) fn gauge(&self) -> i64 {
        self.slots[..self.stripes]
            .iter()
            .map(|s| s.gauge.load(Ordering::Relaxed))
            .sum::<i64>()
            .max(0)
    }

    /// Whether any counter of the slot carries window `window`.
    fn exists(&self, window: u64) -> bool {
        let tag = window as u32;
        self.stripes_of(window)
            .iter()
            .any(|s| s.cells.iter().any(|c| cell::read(c, tag).is_some()))
            || self
                .borrowed_cell(window)
                .is_some_and(|c| cell::read(c, tag).is_some())
    }

    /// The value of `event` in window `window` (borrowed passes included in `Pass`); 0 if absent.
    pub(crate) fn window_value(&self, window: u64, event: Event) -> u64 {
        let tag = window as u32;
        let mut sum: u64 = self
            .stripes_of(window)
            .iter()
            .filter_map(|s| cell::read(&s.cells[event as usize], tag))
            .map(u64::from)
            .sum();
        if event == Event::Pass {
            sum += self
                .borrowed_cell(window)
                .and_then(|c| cell::read(c, tag))
                .map_or(0, u64::from);
        }
        sum
    }

    fn window_min_rt(&self, window: u64) -> Option<u32> {
        let tag = window as u32;
        self.stripes_of(window)
            .iter()
            .filter_map(|s| cell::read(&s.cells[MIN_RT], tag))
            .min()
    }

    fn snapshot(&self, window: u64) -> BucketSnapshot {
        BucketSnapshot {
            start: window * self.window_length,
            pass: self.window_value(window, Event::Pass),
            block: self.window_value(window, Event::Block),
            success: self.window_value(window, Event::Success),
            exception: self.window_value(window, Event::Exception),
            rt: self.window_value(window, Event::Rt),
            occupied_pass: self.window_value(window, Event::OccupiedPass),
            min_rt: self.window_min_rt(window),
        }
    }

    fn is_deprecated(&self, now: u64, start: u64) -> bool {
        start > now || now - start > self.interval
    }

    /// The windows a node's sums cover at `now`: the current one and the `sample_count − 1` before it
    /// (Sentinel rolls the current bucket before summing, which drops the bucket exactly one interval old).
    fn rolled_windows(&self, now: u64) -> impl Iterator<Item = u64> + '_ {
        let current = self.window_of(now);
        (0..self.sample_count).filter_map(move |k| current.checked_sub(k))
    }

    /// Sum of `event` over the window at `now` (rolled, as a node reports it).
    #[inline]
    pub(crate) fn sum(&self, now: u64, event: Event) -> u64 {
        self.sum_to(self.window_of(now), event)
    }

    /// [`sum`](Self::sum) at the instant of `at`, a cursor of this geometry (no division at all).
    #[inline]
    pub(crate) fn sum_at(&self, at: Cursor, event: Event) -> u64 {
        self.sum_to(at.window, event)
    }

    /// Sum of `event` over the `sample_count` windows ending with `window`. On the hot path of every QPS
    /// check, so it reads every cell of the event once, in memory order, with no slot arithmetic: the
    /// windows summed are exactly the tags `t` with `window − t < sample_count` (on the tag circle), and
    /// each of them can only live in its own slot — modulo 32-bit tag aliasing, which needs a cell left
    /// untouched for 2³² windows (68 years of 500 ms windows).
    #[inline]
    fn sum_to(&self, window: u64, event: Event) -> u64 {
        let current = window as u32;
        let span = self.sample_count as u32;
        let in_span = |cell: &AtomicU64| match cell::unpack(cell.load(Ordering::Relaxed)) {
            Some((tag, value)) if current.wrapping_sub(tag) < span => u64::from(value),
            _ => 0,
        };
        let mut total: u64 = self
            .slots
            .iter()
            .map(|s| in_span(&s.cells[event as usize]))
            .sum();
        if event == Event::Pass {
            if let Some(cells) = self.borrowed.get() {
                // The span's own cells, by index: the ring reaches far ahead.
                let len = cells.len() as u64;
                total += (0..self.sample_count)
                    .filter_map(|back| window.checked_sub(back))
                    .map(|w| in_span(&cells[(w % len) as usize]))
                    .sum::<u64>();
            }
        }
        total
    }

    /// Minimum RT over the window at `now` (rolled); `None` if no RT was recorded.
    pub(crate) fn min_rt(&self, now: u64) -> Option<u32> {
        self.rolled_windows(now)
            .filter_map(|w| self.window_min_rt(w))
            .min()
    }

    /// Largest per-bucket value of `event` over the window at `now` (rolled).
    pub(crate) fn max_bucket(&self, now: u64, event: Event) -> u64 {
        self.rolled_windows(now)
            .map(|w| self.window_value(w, event))
            .max()
            .unwrap_or(0)
    }

    /// The valid buckets at `now`, oldest first (Sentinel's `values()`: not rolled, so a bucket exactly one
    /// interval old is still listed when the current window has not been written yet).
    #[allow(dead_code)] // Sentinel's LeapArray API, pinned by the window tests below
    pub(crate) fn values(&self, now: u64) -> Vec<BucketSnapshot> {
        let current = self.window_of(now);
        let mut out = Vec::with_capacity(self.sample_count as usize);
        for k in (0..=self.sample_count).rev() {
            let Some(w) = current.checked_sub(k) else {
                continue;
            };
            if k == self.sample_count && self.exists(current) {
                continue; // the slot already holds the current window
            }
            if self.exists(w) && !self.is_deprecated(now, w * self.window_length) {
                out.push(self.snapshot(w));
            }
        }
        out
    }

    /// The bucket before the one `t` falls in, if it exists and is not deprecated.
    #[allow(dead_code)] // Sentinel's LeapArray API, pinned by the window tests below
    pub(crate) fn previous_window(&self, t: u64) -> Option<BucketSnapshot> {
        let w = self.window_of(t).checked_sub(1)?;
        (self.exists(w) && !self.is_deprecated(t, w * self.window_length)).then(|| self.snapshot(w))
    }

    /// The oldest bucket still valid at `t` (the one in the slot of `t + window_length`).
    #[allow(dead_code)] // Sentinel's LeapArray API, pinned by the window tests below
    pub(crate) fn valid_head(&self, t: u64) -> Option<BucketSnapshot> {
        let w = (self.window_of(t) + 1).checked_sub(self.sample_count)?;
        (self.exists(w) && !self.is_deprecated(t, w * self.window_length)).then(|| self.snapshot(w))
    }

    /// The pass count of the bucket containing `t` (0 if that bucket is absent or deprecated at `now`).
    pub(crate) fn window_pass(&self, now: u64, t: u64) -> u64 {
        let w = self.window_of(t);
        if self.is_deprecated(now, w * self.window_length) {
            return 0;
        }
        self.window_value(w, Event::Pass)
    }

    /// Borrowed passes whose window starts after `now` (Sentinel's `currentWaiting()`).
    pub(crate) fn current_waiting(&self, now: u64) -> u64 {
        let current = self.window_of(now);
        let Some(cells) = self.borrowed.get() else {
            return 0;
        };
        cells
            .iter()
            .filter_map(|c| {
                let (tag, value) = cell::unpack(c.load(Ordering::Relaxed))?;
                let w = Self::full_window(current, tag)?;
                (w * self.window_length > now).then_some(u64::from(value))
            })
            .sum()
    }

    /// Calls `f(window_start, event, value)` for every non-zero value still held in a cell (borrowed passes
    /// as `Pass`), windows resolved relative to `now`. Values already recycled out of the cells are not
    /// visited (the node's history holds them).
    pub(crate) fn for_each_pending(&self, now: u64, mut f: impl FnMut(u64, Event, u64)) {
        let current = self.window_of(now);
        let mut visit = |packed: u64, event: Event| {
            let Some((tag, value)) = cell::unpack(packed) else {
                return;
            };
            if value != 0 {
                if let Some(w) = Self::full_window(current, tag) {
                    f(w * self.window_length, event, u64::from(value));
                }
            }
        };
        for stripe in self.slots.iter() {
            for event in Event::ALL {
                visit(stripe.cells[event as usize].load(Ordering::Relaxed), event);
            }
        }
        for c in self.borrowed.get().into_iter().flatten() {
            visit(c.load(Ordering::Relaxed), Event::Pass);
        }
    }

    /// Sums per event of the values still held in cells whose window starts in `[from, to)`.
    #[cfg(test)]
    pub(crate) fn pending(&self, now: u64, from: u64, to: u64) -> [u64; 6] {
        let mut out = [0u64; 6];
        self.for_each_pending(now, |start, event, value| {
            if start >= from && start < to {
                out[event as usize] += value;
            }
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000; // a multiple of 1000

    /// The rolled sum by its definition: the value of each of the `sample_count` windows ending with the
    /// current one (borrowed passes included for `Pass`), window by window.
    fn reference_sum(a: &LeapArray, now: u64, event: Event) -> u64 {
        a.rolled_windows(now)
            .map(|w| a.window_value(w, event))
            .sum()
    }

    #[test]
    fn the_flat_sum_equals_the_window_by_window_definition() {
        // Windows of 7 ms; clocks that start at 0 and just before the 32-bit tag wraps (once and five
        // times); writes spread over the past, present and future (stale and borrowed cells included).
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        for sample_count in [1u32, 2, 3, 10, 60] {
            let length = 7;
            for first_window in [0u64, 1, 2, (1 << 32) - 70, (1 << 32) - 1, 5 * (1 << 32) - 3] {
                let a = LeapArray::with_stripes(sample_count, length * u64::from(sample_count), 2)
                    .unwrap();
                let start = first_window * length;
                let span = 3 * length * u64::from(sample_count);
                for step in 0..400 {
                    let t = start + next(span);
                    let event = Event::ALL[(step % 3) as usize];
                    a.add(t, step as usize, event, 1 + next(5) as u32);
                    if step % 7 == 0 {
                        a.add_borrowed(t + next(2 * length), 1);
                    }
                    let now = start + next(span + 2 * length);
                    for event in [Event::Pass, Event::Block, Event::Success] {
                        assert_eq!(
                            a.sum(now, event),
                            reference_sum(&a, now, event),
                            "sample_count {sample_count}, first window {first_window}, now {now}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn geometry_is_validated() {
        assert_eq!(
            LeapArray::new(0, 1000).unwrap_err(),
            WindowError::ZeroSampleCount
        );
        assert_eq!(LeapArray::new(2, 0).unwrap_err(), WindowError::ZeroInterval);
        assert!(matches!(
            LeapArray::new(3, 1000),
            Err(WindowError::Indivisible { .. })
        ));
        let a = LeapArray::new(2, 1000).unwrap();
        assert_eq!(a.window_length(), 500);
    }

    #[test]
    fn a_bucket_exactly_one_interval_old_still_counts_one_ms_later_it_does_not() {
        let a = LeapArray::new(2, 1000).unwrap();
        a.add(T0 + 100, 0, Event::Pass, 3); // bucket [T0, T0+500)
        let at_edge = a.values(T0 + 1000);
        assert_eq!(at_edge.len(), 1);
        assert_eq!(at_edge[0].start, T0);
        assert_eq!(
            at_edge[0].pass, 3,
            "now − start == interval: not deprecated"
        );
        assert!(a.values(T0 + 1001).is_empty(), "one ms later it is");
        // A node's sum rolls the current bucket first: at T0+1000 the current window recycles slot 0.
        assert_eq!(a.sum(T0 + 999, Event::Pass), 3);
        assert_eq!(a.sum(T0 + 1000, Event::Pass), 0);
    }

    #[test]
    fn sums_cover_both_buckets_and_recycle_the_old_one() {
        let a = LeapArray::new(2, 1000).unwrap();
        a.add(T0 + 10, 0, Event::Pass, 1);
        a.add(T0 + 600, 0, Event::Pass, 2);
        assert_eq!(a.sum(T0 + 600, Event::Pass), 3);
        assert_eq!(
            a.add(T0 + 1100, 0, Event::Pass, 5),
            AddOutcome::Recycled {
                old_tag: ((T0 + 10) / 500) as u32,
                old_value: 1
            }
        );
        assert_eq!(a.sum(T0 + 1100, Event::Pass), 7);
        assert_eq!(a.sum(T0 + 1600, Event::Pass), 5);
        assert_eq!(a.sum(T0 + 3000, Event::Pass), 0);
    }

    #[test]
    fn previous_window_and_valid_head() {
        // Sentinel's BucketLeapArray(2 × 1000 ms) case.
        let a = LeapArray::new(2, 2000).unwrap();
        a.add(T0, 0, Event::Pass, 1);
        assert_eq!(a.previous_window(T0), None);
        assert_eq!(a.previous_window(T0 + 1000).map(|b| b.start), Some(T0));
        assert_eq!(a.previous_window(T0 + 11_000), None);

        // 10 × 100 ms: after filling all ten, the head is the first; 100 ms later the second.
        let a = LeapArray::new(10, 1000).unwrap();
        for i in 0..10 {
            a.add(T0 + i * 100, 0, Event::Pass, 1);
        }
        assert_eq!(a.valid_head(T0 + 900).map(|b| b.start), Some(T0));
        assert_eq!(a.valid_head(T0 + 1000).map(|b| b.start), Some(T0 + 100));
        assert_eq!(a.values(T0 + 900).len(), 10);
    }

    #[test]
    fn idle_for_an_interval_and_a_bucket_leaves_one_bucket() {
        let a = LeapArray::new(2, 2000).unwrap();
        a.add(T0, 0, Event::Pass, 1);
        a.add(T0 + 1000, 0, Event::Pass, 1);
        assert_eq!(a.values(T0 + 1000).len(), 2);
        assert_eq!(a.values(T0 + 3000).len(), 1);
    }

    #[test]
    fn stripes_are_summed() {
        let a = LeapArray::with_stripes(2, 1000, 4).unwrap();
        for stripe in 0..8 {
            a.add(T0, stripe, Event::Success, 1);
            a.add(T0, stripe, Event::Rt, 10 + stripe as u32);
            a.add_min_rt(T0, stripe, 10 + stripe as u32);
            a.gauge_add(stripe, 1);
        }
        assert_eq!(a.sum(T0, Event::Success), 8);
        assert_eq!(a.sum(T0, Event::Rt), (10..18).sum::<u64>());
        assert_eq!(a.min_rt(T0), Some(10));
        assert_eq!(a.gauge(), 8);
        a.gauge_add(3, -8);
        assert_eq!(a.gauge(), 0);
    }

    #[test]
    fn a_backwards_step_drops_writes_and_never_panics() {
        let a = LeapArray::new(2, 1000).unwrap();
        a.add(T0 + 5000, 0, Event::Pass, 4);
        // Back 3 s: the slot holds a newer window; the stale write is dropped, reads ignore the future.
        assert_eq!(a.add(T0 + 2000, 0, Event::Pass, 1), AddOutcome::Stale);
        assert_eq!(a.sum(T0 + 2000, Event::Pass), 0);
        assert!(a.values(T0 + 2000).is_empty());
        assert_eq!(a.previous_window(T0 + 2000), None);
        // Forward again: the newer window was kept.
        assert_eq!(a.sum(T0 + 5000, Event::Pass), 4);
        a.add(T0 + 5100, 0, Event::Pass, 1);
        assert_eq!(a.sum(T0 + 5100, Event::Pass), 5);
        // All the way back to time zero: no underflow, no panic (a jump of decades wraps the 32-bit tags,
        // so the reading there is unspecified, but bounded).
        a.add(0, 0, Event::Pass, 1);
        assert!(a.sum(0, Event::Pass) <= 6);
        assert_eq!(a.previous_window(0), None);
        assert_eq!(a.valid_head(0).map(|b| b.start), None);
    }

    #[test]
    fn borrowed_passes_count_in_their_window() {
        // Sentinel's OccupiableBucketLeapArray case (10 × 200 ms).
        let a = LeapArray::new(10, 2000).unwrap();
        a.add(T0, 0, Event::Pass, 1);
        a.add_borrowed(T0 + 200, 2);
        assert_eq!(a.current_waiting(T0), 2);
        assert_eq!(a.sum(T0 + 200, Event::Pass), 3);
        assert_eq!(a.current_waiting(T0 + 200), 0);

        let a = LeapArray::new(10, 2000).unwrap();
        for i in 0..10 {
            let t = T0 + i * 200;
            a.add(t, 0, Event::Pass, 1);
            a.add_borrowed(t + 200, 1);
        }
        let now = T0 + 9 * 200;
        assert_eq!(a.sum(now, Event::Pass), 19);
        assert_eq!(a.current_waiting(now), 1);
        assert_eq!(a.window_pass(now, T0 + 200), 2);
    }

    #[test]
    fn pending_sums_cells_by_window_start() {
        let a = LeapArray::new(2, 1000).unwrap();
        a.add(T0 + 100, 0, Event::Pass, 2);
        a.add(T0 + 700, 1, Event::Pass, 3);
        a.add(T0 + 700, 1, Event::Block, 1);
        let p = a.pending(T0 + 900, T0, T0 + 1000);
        assert_eq!(p[Event::Pass as usize], 5);
        assert_eq!(p[Event::Block as usize], 1);
        assert_eq!(a.pending(T0 + 900, T0 + 500, T0 + 1000)[0], 3);
    }

    #[test]
    fn full_window_reconstruction() {
        assert_eq!(LeapArray::full_window(10, 8), Some(8));
        assert_eq!(LeapArray::full_window(10, 12), Some(12));
        let big = (1u64 << 33) + 5;
        assert_eq!(LeapArray::full_window(big, 3), Some(big - 2));
        assert_eq!(LeapArray::full_window(1, 5), Some(5));
    }
}
