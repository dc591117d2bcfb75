//! The default QPS behaviour: a token bucket per value that refills only once a whole window has passed.
//!
//! With threshold `count` (the rule's, or a value's item count), `burst` and a window of
//! `W = durationInSec · 1000` ms, a value's bucket holds at most `max = count + burst` tokens:
//!
//! ```text
//! first request of a value         tokens = max − acquire, stamp = now
//! now − stamp ≤ W   (same window)  tokens −= acquire                      (block if that goes below 0)
//! now − stamp > W   (strictly)     tokens = min(max, tokens + ⌊(now − stamp) · count / W⌋) − acquire,
//!                                  stamp = now                            (block if below 0)
//! ```
//!
//! (Sentinel's `passDefaultLocalCheck`, to the millisecond: requests at `+W` are still in the old window,
//! at `+W + 1` they refill: `a_window_refills_only_after_the_whole_duration_plus_one_ms`.) A threshold of 0 blocks every request, and a request for more than
//! `max` tokens is blocked outright. The refill is computed in 128-bit arithmetic, so day-long gaps at
//! high thresholds cannot overflow. A blocked request changes nothing.
//!
//! A bucket is *settled* once a refill would fill it to `max`: from then on it behaves exactly like a
//! brand-new bucket, so the cache may drop it without changing any decision.

use super::cache::{Cell, NEVER};

/// The token bucket of one rule (the per-value state lives in [`Cell`]s).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TokenBucket {
    /// Extra tokens above the threshold.
    burst: i64,
    /// The window in ms.
    window_ms: u64,
}

impl TokenBucket {
    pub(crate) fn new(burst: u32, duration_in_sec: u64) -> Self {
        TokenBucket {
            burst: i64::from(burst),
            window_ms: duration_in_sec.saturating_mul(1000).max(1),
        }
    }

    fn max(&self, cell: &Cell) -> i64 {
        cell.threshold.saturating_add(self.burst)
    }

    /// Tokens a refill after `elapsed` ms adds.
    fn refill(&self, cell: &Cell, elapsed: u64) -> i64 {
        let add = u128::from(elapsed) * cell.threshold.max(0) as u128 / u128::from(self.window_ms);
        i64::try_from(add).unwrap_or(i64::MAX)
    }

    /// The cell after admitting `acquire` tokens at `now`, or `None` for a block.
    #[inline]
    pub(crate) fn next(&self, cell: &Cell, now: u64, acquire: i64) -> Option<Cell> {
        if cell.threshold <= 0 {
            return None;
        }
        let max = self.max(cell);
        if acquire > max {
            return None;
        }
        if cell.stamp == NEVER {
            return Some(Cell {
                stamp: now,
                level: max - acquire,
                ..*cell
            });
        }
        let elapsed = now.saturating_sub(cell.stamp);
        if elapsed > self.window_ms {
            let add = self.refill(cell, elapsed);
            let level = if add.saturating_add(cell.level) > max {
                max - acquire
            } else {
                cell.level + add - acquire
            };
            (level >= 0).then_some(Cell {
                stamp: now,
                level,
                ..*cell
            })
        } else {
            let level = cell.level - acquire;
            (level >= 0).then_some(Cell { level, ..*cell })
        }
    }

    /// Gives back `acquire` tokens taken by an admission that was then undone.
    pub(crate) fn refund(&self, cell: &mut Cell, acquire: i64) {
        if cell.stamp != NEVER {
            cell.level = cell.level.saturating_add(acquire).min(self.max(cell));
        }
    }

    /// Whether the bucket now behaves exactly like a new one.
    pub(crate) fn settled(&self, cell: &Cell, now: u64) -> bool {
        if cell.stamp == NEVER {
            return true;
        }
        let elapsed = now.saturating_sub(cell.stamp);
        elapsed > self.window_ms
            && self.refill(cell, elapsed).saturating_add(cell.level) >= self.max(cell)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Admits `n` requests of one token at `now`, returning how many passed.
    fn run(b: &TokenBucket, cell: &mut Cell, now: u64, n: usize) -> usize {
        let mut passed = 0;
        for _ in 0..n {
            if let Some(next) = b.next(cell, now, 1) {
                *cell = next;
                passed += 1;
            }
        }
        passed
    }

    #[test]
    fn sentinel_single_value_qps() {
        let b = TokenBucket::new(0, 1);
        let mut cell = Cell::new(5);
        assert_eq!(run(&b, &mut cell, 1000, 6), 5);
        assert_eq!(run(&b, &mut cell, 4000, 6), 5);
    }

    #[test]
    fn sentinel_burst_sequence() {
        let b = TokenBucket::new(3, 1);
        let mut cell = Cell::new(5);
        let mut t = 1_000_000;
        assert_eq!(run(&b, &mut cell, t, 9), 8);
        for (gap, expected) in [(1002, 5), (1002, 5), (2000, 8), (1002, 5)] {
            t += gap;
            assert_eq!(run(&b, &mut cell, t, 10), expected, "after +{gap} ms");
        }
    }

    #[test]
    fn refill_needs_strictly_more_than_the_window() {
        let b = TokenBucket::new(0, 1);
        let mut cell = Cell::new(2);
        assert_eq!(run(&b, &mut cell, 0, 3), 2);
        assert_eq!(run(&b, &mut cell, 1000, 1), 0, "+W is the same window");
        assert_eq!(run(&b, &mut cell, 1001, 3), 2, "+W+1 refills");
    }

    #[test]
    fn zero_threshold_and_oversized_requests_block() {
        let b = TokenBucket::new(2, 1);
        assert_eq!(b.next(&Cell::new(0), 0, 1), None);
        assert_eq!(b.next(&Cell::new(0), 0, 0), None);
        assert_eq!(b.next(&Cell::new(5), 0, 8), None, "more than count + burst");
        assert!(b.next(&Cell::new(5), 0, 7).is_some());
    }

    #[test]
    fn long_gaps_at_high_thresholds_do_not_overflow() {
        let b = TokenBucket::new(0, 1);
        let mut cell = Cell::new(25_000);
        let mut t = 1_700_000_000_000;
        assert_eq!(run(&b, &mut cell, t, 2), 2);
        t += 24 * 3600 * 1000;
        assert_eq!(run(&b, &mut cell, t, 2), 2);
        t += 48 * 3600 * 1000;
        assert_eq!(run(&b, &mut cell, t, 2), 2);
        let huge = TokenBucket::new(u32::MAX, u64::MAX);
        let mut cell = Cell::new(i64::MAX);
        assert_eq!(run(&huge, &mut cell, 0, 1), 1);
        assert_eq!(run(&huge, &mut cell, u64::MAX - 1, 1), 1);
    }

    #[test]
    fn settled_means_indistinguishable_from_new() {
        let b = TokenBucket::new(0, 1);
        let mut cell = Cell::new(5);
        assert!(b.settled(&cell, 0));
        run(&b, &mut cell, 0, 1);
        assert!(!b.settled(&cell, 1000));
        assert!(b.settled(&cell, 1001), "4 left + 5 refilled ≥ 5");
        run(&b, &mut cell, 0, 4);
        assert!(b.settled(&cell, 1001));
        let slow = TokenBucket::new(10, 1);
        let mut cell = Cell::new(5);
        run(&slow, &mut cell, 0, 15);
        assert!(!slow.settled(&cell, 2999), "0 + 14 < 15");
        assert!(slow.settled(&cell, 3000));
        for now in [1001, 2999, 3000, 5000] {
            let kept = slow.next(&cell, now, 1);
            let fresh = slow.next(&Cell::new(5), now, 1);
            if slow.settled(&cell, now) {
                assert_eq!(kept, fresh, "at {now}");
            }
        }
    }

    #[test]
    fn refunds_are_capped() {
        let b = TokenBucket::new(0, 1);
        let mut cell = Cell::new(3);
        run(&b, &mut cell, 0, 1);
        b.refund(&mut cell, 1);
        assert_eq!(cell.level, 3);
        b.refund(&mut cell, 5);
        assert_eq!(cell.level, 3);
    }
}
