//! The rate-limiter behaviour (`controlBehavior` 2): uniform pacing per value, with a bounded queue.
//!
//! With threshold `count` per `durationInSec`, a request for `acquire` permits costs
//!
//! ```text
//! cost = round(10⁹ · acquire · durationInSec / count)   ns
//! ```
//!
//! Each value remembers `stamp`, when its latest admitted request passes (ns). A request at `now`:
//!
//! * first request of the value: passes at once, `stamp = now`;
//! * `stamp + cost ≤ now`: passes at once, `stamp = now`;
//! * else it waits `stamp + cost − now` if that is *strictly* below `maxQueueingTimeMs` (so with the
//!   default 0 nothing queues), and `stamp = stamp + cost`;
//! * else, if that wait is below the clock's resolution (a millisecond clock reads the same for every
//!   call within its tick, so such a slot cannot be told from one that is due), it passes at once and
//!   `stamp = stamp + cost` (without this, strict pacing on the default clock would admit one call a
//!   millisecond: 1000 a second at most, Sentinel's cap again; the test
//!   `rate_limiter_without_a_queue_paces_above_a_thousand_a_second_on_a_millisecond_clock` holds it);
//! * otherwise it is blocked and nothing changes.
//!
//! (Sentinel's `passThrottleLocalCheck`, which rounds the cost to whole milliseconds: a count of 5000
//! a second cost 0 ms and paced nothing, 1500 cost 1 ms and admitted 1000. Here the cost is exact to
//! the nanosecond.) A threshold of 0 blocks everything, and so does a request for more than
//! `count + burstCount` permits (a stale stamp must not let a huge batch through). The entry
//! waits out the returned delay; nothing sleeps here.
//!
//! A value is *settled* once even the largest admissible request would pass at once: then it behaves
//! exactly like a new value.

use super::cache::{Cell, NEVER};

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// The pacing of one rule (the per-value state lives in [`Cell`]s).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RateLimiter {
    duration_in_sec: u64,
    max_queueing_ns: u64,
    burst: i64,
    /// The clock's resolution in ns.
    tick_ns: u64,
}

impl RateLimiter {
    pub(crate) fn new(
        duration_in_sec: u64,
        max_queueing_ms: u32,
        burst: u32,
        tick_ns: u64,
    ) -> Self {
        RateLimiter {
            duration_in_sec,
            max_queueing_ns: u64::from(max_queueing_ms) * 1_000_000,
            burst: i64::from(burst),
            tick_ns,
        }
    }

    /// The cost in ns of `acquire` permits at the cell's threshold (rounded half up; past `u64`, or at
    /// a threshold of 0, `u64::MAX`: never cheaper than it is).
    fn cost(&self, cell: &Cell, acquire: i64) -> u64 {
        let Ok(threshold) = u128::try_from(cell.threshold) else {
            return u64::MAX;
        };
        if threshold == 0 {
            return u64::MAX;
        }
        let acquire = u128::try_from(acquire).unwrap_or(0);
        let total = NANOS_PER_SEC
            .saturating_mul(acquire)
            .saturating_mul(u128::from(self.duration_in_sec));
        u64::try_from(total.saturating_add(threshold / 2) / threshold).unwrap_or(u64::MAX)
    }

    /// The cell and the wait in ns after admitting `acquire` permits at `now` (ns), or `None` for a
    /// block.
    #[inline]
    pub(crate) fn next(&self, cell: &Cell, now: u64, acquire: i64) -> Option<(Cell, u64)> {
        if cell.threshold <= 0 || acquire > cell.threshold.saturating_add(self.burst) {
            return None;
        }
        if cell.stamp == NEVER {
            return Some((
                Cell {
                    stamp: now,
                    ..*cell
                },
                0,
            ));
        }
        let expected = cell.stamp.saturating_add(self.cost(cell, acquire));
        if expected <= now {
            return Some((
                Cell {
                    stamp: now,
                    ..*cell
                },
                0,
            ));
        }
        let wait = expected - now;
        let next = Cell {
            stamp: expected,
            ..*cell
        };
        if wait < self.max_queueing_ns {
            Some((next, wait))
        } else if wait < self.tick_ns {
            Some((next, 0))
        } else {
            None
        }
    }

    /// Whether `times` requests for `acquire` permits, one after the other at `now`, would all be
    /// admitted. Each after the first waits one cost longer than the one before, so the last decides.
    pub(crate) fn admits(&self, cell: &Cell, now: u64, acquire: i64, times: u32) -> bool {
        let Some((first, _)) = self.next(cell, now, acquire) else {
            return false;
        };
        let later = u64::from(times.saturating_sub(1));
        let last = first
            .stamp
            .saturating_add(self.cost(cell, acquire).saturating_mul(later));
        last <= now || last - now < self.max_queueing_ns.max(self.tick_ns)
    }

    /// Gives back the slot of an admission that was then undone. (When the admission passed at once
    /// after idling, moving the stamp back by its cost is as good as restoring it: every later request
    /// finds the value idle either way.)
    pub(crate) fn refund(&self, cell: &mut Cell, acquire: i64) {
        if cell.stamp != NEVER {
            cell.stamp = cell.stamp.saturating_sub(self.cost(cell, acquire));
        }
    }

    /// Whether the value now behaves exactly like a new one.
    pub(crate) fn settled(&self, cell: &Cell, now: u64) -> bool {
        cell.stamp == NEVER
            || (cell.stamp <= now
                && now - cell.stamp >= self.cost(cell, cell.threshold.saturating_add(self.burst)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn admit(r: &RateLimiter, cell: &mut Cell, now: u64) -> Option<u64> {
        let (next, wait) = r.next(cell, now, 1)?;
        *cell = next;
        Some(wait)
    }

    #[test]
    fn admitting_several_at_once_is_admitting_them_in_turn() {
        for (queue, tick, threshold, stamp) in [
            (0, 0, 10, NEVER),
            (500, 0, 10, NEVER),
            (500, 0, 10, 900 * MS),
            (250, 0, 3, 990 * MS),
            (0, MS, 5000, NEVER),
            (0, MS, 5000, 1000 * MS - 1),
        ] {
            let r = RateLimiter::new(1, queue, 0, tick);
            let start = Cell {
                stamp,
                ..Cell::new(threshold)
            };
            for times in 1..8 {
                let mut cell = start;
                let in_turn = (0..times).all(|_| admit(&r, &mut cell, 1000 * MS).is_some());
                assert_eq!(
                    r.admits(&start, 1000 * MS, 1, times),
                    in_turn,
                    "queue {queue}, tick {tick}, threshold {threshold}, stamp {stamp}, {times} times"
                );
            }
        }
    }

    #[test]
    fn strict_pacing_without_a_queue() {
        let r = RateLimiter::new(1, 0, 0, 0);
        let mut cell = Cell::new(5);
        assert_eq!(admit(&r, &mut cell, 1000 * MS), Some(0));
        assert_eq!(admit(&r, &mut cell, 1000 * MS), None);
        assert_eq!(admit(&r, &mut cell, 1200 * MS - 1), None);
        assert_eq!(admit(&r, &mut cell, 1200 * MS), Some(0));
    }

    #[test]
    fn queueing_waits_strictly_below_the_limit() {
        let r = RateLimiter::new(1, 500, 0, 0);
        let mut cell = Cell::new(10);
        let waits: Vec<Option<u64>> = (0..7).map(|_| admit(&r, &mut cell, 0)).collect();
        assert_eq!(
            waits,
            [
                Some(0),
                Some(100 * MS),
                Some(200 * MS),
                Some(300 * MS),
                Some(400 * MS),
                None,
                None
            ],
            "a wait of exactly 500 ms is not below the 500 ms limit"
        );
    }

    #[test]
    fn the_cost_scales_with_duration_and_acquire() {
        let r = RateLimiter::new(2, 10_000, 10, 0);
        let cell = Cell {
            stamp: 0,
            ..Cell::new(4)
        };
        assert_eq!(r.cost(&cell, 1), 500 * MS);
        assert_eq!(r.cost(&cell, 3), 1500 * MS);
        assert_eq!(r.next(&cell, 0, 3).map(|(_, w)| w), Some(1500 * MS));
        assert_eq!(r.next(&cell, 0, 15), None, "more than count + burst");
        assert_eq!(r.next(&Cell::new(0), 0, 1), None);
    }

    #[test]
    fn refunds_return_the_slot() {
        let r = RateLimiter::new(1, 1000, 0, 0);
        let mut cell = Cell::new(10);
        admit(&r, &mut cell, 0);
        assert_eq!(admit(&r, &mut cell, 0), Some(100 * MS));
        r.refund(&mut cell, 1);
        assert_eq!(admit(&r, &mut cell, 0), Some(100 * MS));
    }

    #[test]
    fn settled_means_indistinguishable_from_new() {
        let r = RateLimiter::new(1, 0, 0, 0);
        let mut cell = Cell::new(5);
        admit(&r, &mut cell, 0);
        assert!(r.settled(&Cell::new(5), 0));
        assert!(
            !r.settled(&cell, 1000 * MS - 1),
            "a request for 5 permits would still wait"
        );
        assert!(r.settled(&cell, 1000 * MS));
        for acquire in 1..=5 {
            assert_eq!(
                r.next(&cell, 1000 * MS, acquire),
                r.next(&Cell::new(5), 1000 * MS, acquire)
            );
        }
    }

    #[test]
    fn the_cost_is_exact_above_a_thousand_a_second() {
        // Sentinel's whole milliseconds made 5000 a second cost 0 (no pacing) and 1500 cost 1 ms.
        let cell = |count| Cell {
            stamp: 0,
            ..Cell::new(count)
        };
        let r = RateLimiter::new(1, 0, 0, 0);
        assert_eq!(r.cost(&cell(5000), 1), 200_000);
        assert_eq!(r.cost(&cell(1500), 1), 666_667);
        assert_eq!(r.cost(&cell(7), 1), 142_857_143);
        assert_eq!(r.cost(&cell(3), 2), 666_666_667);
        let huge = RateLimiter::new(u64::MAX, 0, 0, 0);
        assert_eq!(huge.cost(&cell(1), 1), u64::MAX, "saturates, never 0");
        assert_eq!(r.cost(&Cell::new(0), 1), u64::MAX);
    }

    #[test]
    fn slots_within_the_clocks_tick_pass_without_a_queue() {
        // 5000 a second on a millisecond clock: the calls of one tick read the same time.
        let r = RateLimiter::new(1, 0, 0, MS);
        let mut cell = Cell::new(5000);
        let waits: Vec<Option<u64>> = (0..7).map(|_| admit(&r, &mut cell, 0)).collect();
        assert_eq!(
            waits,
            [Some(0), Some(0), Some(0), Some(0), Some(0), None, None],
            "slots at 0, 200, 400, 600 and 800 us; 1 ms is the next tick's"
        );
        assert_eq!(admit(&r, &mut cell, MS), Some(0));
        // A precise clock keeps strict pacing.
        let strict = RateLimiter::new(1, 0, 0, 0);
        let mut cell = Cell::new(5000);
        assert_eq!(admit(&strict, &mut cell, 0), Some(0));
        assert_eq!(admit(&strict, &mut cell, 0), None);
    }
}
