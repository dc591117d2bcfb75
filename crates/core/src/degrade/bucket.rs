//! The statistics of one breaker: a single tumbling window of `statIntervalMs`.
//!
//! As in Sentinel (a `LeapArray` with one bucket), the window is aligned to multiples of the interval
//! since the epoch: a call completing at `t` counts in the window `[t − t mod interval, … + interval)`.
//! Calls just before and just after a boundary are never judged together, and the default interval
//! is 1 s (not `timeWindow`, which is how long the breaker stays open).
//!
//! ```text
//!   interval = 1000 ms
//!   ──┬──────────────────────┬──────────────────────┬──▶ t
//!     k·1000                 (k+1)·1000             (k+2)·1000
//!     │ total 7, bad 2       │ total 3, bad 3       │
//!     └ judged on its own ───┘ (the 2 earlier bad calls are forgotten)
//! ```
//!
//! Two tagged cells hold `total` and `bad` (slow calls or errors), each tagged with the window's index:
//! a write for a newer window replaces the old value in the same compare-and-swap, so a stale writer can
//! never add to a recycled window and nothing is reset in a separate step.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::stat::cell;

/// `(total, bad)` calls of the current window.
#[derive(Debug)]
pub(crate) struct Bucket {
    interval_ms: u64,
    total: AtomicU64,
    bad: AtomicU64,
}

impl Bucket {
    pub(crate) fn new(interval_ms: u32) -> Self {
        Bucket {
            interval_ms: u64::from(interval_ms.max(1)),
            total: AtomicU64::new(0),
            bad: AtomicU64::new(0),
        }
    }

    /// Takes over `from`'s counts (a breaker that replaces `from` for the same rule and resource).
    pub(crate) fn copy_state(&self, from: &Bucket) {
        self.total
            .store(from.total.load(Ordering::Acquire), Ordering::Release);
        self.bad
            .store(from.bad.load(Ordering::Acquire), Ordering::Release);
    }

    #[inline]
    fn tag(&self, now_ms: u64) -> u32 {
        (now_ms / self.interval_ms) as u32
    }

    /// The start of the window `now_ms` falls in.
    pub(crate) fn window_start(&self, now_ms: u64) -> u64 {
        now_ms - now_ms % self.interval_ms
    }

    /// Counts one call completing at `now_ms`.
    #[inline]
    pub(crate) fn add(&self, now_ms: u64, bad: bool) {
        let tag = self.tag(now_ms);
        cell::add(&self.total, tag, 1);
        if bad {
            cell::add(&self.bad, tag, 1);
        }
    }

    /// `(total, bad)` in the window of `now_ms`.
    #[inline]
    pub(crate) fn read(&self, now_ms: u64) -> (u32, u32) {
        let tag = self.tag(now_ms);
        let bad = cell::read(&self.bad, tag).unwrap_or(0);
        let total = cell::read(&self.total, tag).unwrap_or(0);
        (total, bad.min(total))
    }

    /// Forgets the current window (after a successful probe).
    pub(crate) fn reset(&self) {
        self.total.store(0, Ordering::Release);
        self.bad.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_aligned_to_the_interval() {
        let b = Bucket::new(1000);
        b.add(10_999, true);
        b.add(10_000, false);
        assert_eq!(b.read(10_500), (2, 1));
        assert_eq!(b.window_start(10_999), 10_000);
        // One millisecond later is a new window, whatever was counted just before.
        assert_eq!(b.read(11_000), (0, 0));
        b.add(11_000, false);
        assert_eq!(b.read(11_000), (1, 0));
        assert_eq!(b.read(10_999), (0, 0), "the old window was replaced");
    }

    #[test]
    fn reset_forgets_the_window() {
        let b = Bucket::new(5000);
        b.add(1, true);
        b.reset();
        assert_eq!(b.read(1), (0, 0));
        b.add(2, false);
        assert_eq!(b.read(2), (1, 0));
    }
}
