//! Warm-up pacing: the warm-up token bucket sets the rate, and the leaky bucket spaces requests at it.
//!
//! Every request first brings the warm-up bucket up to date with the previous second's passes and reads
//! the QPS it allows now, `allowed` (between `count / coldFactor` when cold and `count` when warm; see
//! the warm-up controller for the token arithmetic). That rate prices the request,
//!
//! ```text
//! cost = round(acquire · 10⁹ / allowed)   nanoseconds
//! ```
//!
//! and the request is reserved exactly like a throttled one: `latest` moves to `max(latest + cost, now)`
//! and the request is admitted iff its wait `latest + cost − now` is at most `max_queueing`. So a cold
//! resource is paced at `coldFactor / count` seconds per permit (300 ms for 10 QPS with factor 3), and the
//! spacing shrinks to `1 / count` as sustained traffic drains the tokens below the warning line.
//!
//! Sentinel rounds the cost to whole milliseconds; here it is kept in nanoseconds. Sentinel's version
//! has no guard for a count of 0 (an infinite cost that can overflow, as in #462); here a rate that
//! admits no permit blocks every request for one, and a request for zero permits passes and reserves
//! nothing.

use std::time::Duration;

use super::decision::Decision;
use super::throttling::{Pacer, cost_ns};
use super::warm_up::WarmUpController;

const NANOS_PER_MILLI: u64 = 1_000_000;

/// The warm-up rate limiter: uniform pacing at the rate a warm-up token bucket allows.
#[derive(Debug)]
pub(crate) struct WarmUpRateLimiterController {
    /// The token state that decides the current rate.
    warm_up: WarmUpController,
    /// The reservation state.
    pacer: Pacer,
}

impl WarmUpRateLimiterController {
    /// A cold limiter for `count` QPS reached after about `warm_up_period_sec`, starting at
    /// `count / cold_factor`, that queues requests for at most `max_queueing`.
    pub(crate) fn new(
        count: f64,
        warm_up_period_sec: u32,
        max_queueing: Duration,
        cold_factor: f64,
    ) -> Self {
        Self {
            warm_up: WarmUpController::new(count, warm_up_period_sec, cold_factor),
            pacer: Pacer::new(max_queueing),
        }
    }

    /// Takes over `from`'s tokens and reservations.
    pub(crate) fn copy_state(&self, from: &WarmUpRateLimiterController) {
        self.warm_up.copy_state(&from.warm_up);
        self.pacer.copy_state(&from.pacer);
    }

    /// The same controller on a clock whose readings move in ticks of `tick_ns`.
    pub(crate) fn with_tick(mut self, tick_ns: u64) -> Self {
        self.pacer = self.pacer.with_tick(tick_ns);
        self
    }

    /// Decides a request for `acquire` permits arriving at `now_ns` (nanoseconds on the caller's clock,
    /// whose whole seconds also drive the token updates), given the pass count of the previous second.
    pub(crate) fn try_acquire(
        &self,
        now_ns: u64,
        previous_pass_qps: f64,
        acquire: u32,
    ) -> Decision {
        let allowed = self
            .warm_up
            .current_allowed_qps(now_ns / NANOS_PER_MILLI, previous_pass_qps);
        if acquire == 0 {
            return Decision::PASS_NOW;
        }
        match cost_ns(acquire, allowed) {
            Some(cost) => self.pacer.reserve(now_ns, cost),
            None => Decision::Block,
        }
    }

    /// The pacing interval of a single permit as of the last token update; [`Duration::MAX`] when no
    /// permit can pass.
    pub(crate) fn interval(&self) -> Duration {
        cost_ns(1, self.warm_up.last_allowed_qps()).map_or(Duration::MAX, Duration::from_nanos)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::warm_up::tests::{StatModel, T0};
    use super::{Decision, WarmUpRateLimiterController};

    const MS: u64 = 1_000_000;
    const T0_NS: u64 = T0 * MS;

    fn pass(wait_ns: u64) -> Decision {
        Decision::pass_after_nanos(wait_ns)
    }

    #[test]
    fn warmed_up_paces_at_count() {
        // Sentinel WarmUpRateLimiterControllerTest: 10 QPS, 10 s, 1 s timeout, factor 3; a previous QPS
        // of 100 drains the fresh bucket (100 tokens) at once.
        let c = WarmUpRateLimiterController::new(10.0, 10, Duration::from_secs(1), 3.0);
        for k in 0..=10 {
            assert_eq!(
                c.try_acquire(T0_NS, 100.0, 1),
                pass(k * 100 * MS),
                "request {k}"
            );
        }
        assert_eq!(c.try_acquire(T0_NS, 100.0, 1), Decision::Block);
        assert_eq!(c.interval(), Duration::from_millis(100));
    }

    #[test]
    fn warmed_up_with_a_short_timeout() {
        let c = WarmUpRateLimiterController::new(10.0, 10, Duration::from_millis(10), 3.0);
        assert_eq!(c.try_acquire(T0_NS, 100.0, 1), pass(0));
        assert_eq!(c.try_acquire(T0_NS, 100.0, 1), Decision::Block);
        assert_eq!(c.try_acquire(T0_NS + 90 * MS, 100.0, 1), pass(10 * MS));
    }

    #[test]
    fn cold_spacing_is_three_times_the_stable_one() {
        // As in Sentinel: 300 ms apart when cold; 4 of 6 simultaneous requests fit in a 1 s queue.
        let c = WarmUpRateLimiterController::new(10.0, 10, Duration::from_secs(1), 3.0);
        assert_eq!(c.interval(), Duration::from_millis(300));
        let got: Vec<Decision> = (0..6).map(|_| c.try_acquire(T0_NS, 0.0, 1)).collect();
        assert_eq!(
            got,
            [
                pass(0),
                pass(300 * MS),
                pass(600 * MS),
                pass(900 * MS),
                Decision::Block,
                Decision::Block
            ]
        );
        assert_eq!(c.interval(), Duration::from_millis(300));
    }

    #[test]
    fn sustained_load_shrinks_the_spacing() {
        // One caller that always has a request waiting: it waits out each admission, and retries 1 ms
        // later after a block. Passes are counted when the wait ends, as Sentinel's statistic slot does
        // after the controller's sleep.
        let c = WarmUpRateLimiterController::new(10.0, 10, Duration::from_secs(1), 3.0);
        let mut stats = StatModel::default();
        let mut now = T0;
        // The pacing interval right after each second's token update, in ms.
        let mut interval_ms = Vec::new();
        while now < T0 + 20_000 {
            let decision = c.try_acquire(now * MS, stats.previous_pass_qps(now), 1);
            let second = usize::try_from((now - T0) / 1000).unwrap_or(usize::MAX);
            if interval_ms.len() == second {
                interval_ms.push(c.interval().as_millis());
            }
            match decision {
                Decision::Pass { wait } => {
                    now += u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                    stats.record(now);
                }
                Decision::Block => now += 1,
            }
        }
        // As in Sentinel: the spacing reaches 100 ms at 11 s (tokens 100, 96, 93, 89, ... 54, then 45 < 50).
        assert_eq!(
            interval_ms,
            [
                300, 284, 272, 256, 240, 224, 208, 188, 168, 144, 116, 100, 100, 100, 100, 100,
                100, 100, 100, 100
            ]
        );
        let per_second: Vec<u64> = (0..20).map(|s| stats.second(s)).collect();
        assert_eq!(
            per_second,
            [
                4, 3, 4, 4, 4, 4, 5, 5, 6, 7, 9, 10, 10, 10, 10, 10, 10, 10, 10, 10
            ]
        );
    }

    #[test]
    fn batch_acquire_costs_every_permit() {
        let c = WarmUpRateLimiterController::new(10.0, 10, Duration::from_secs(1), 3.0);
        assert_eq!(c.try_acquire(T0_NS, 100.0, 5), pass(0));
        assert_eq!(c.try_acquire(T0_NS, 100.0, 5), pass(500 * MS));
        assert_eq!(c.try_acquire(T0_NS, 100.0, 5), pass(1000 * MS));
        assert_eq!(c.try_acquire(T0_NS, 100.0, 1), Decision::Block);
        assert_eq!(c.try_acquire(T0_NS, 100.0, 0), pass(0));
    }

    #[test]
    fn count_zero_blocks_and_never_overflows() {
        let c = WarmUpRateLimiterController::new(0.0, 10, Duration::from_secs(1), 3.0);
        assert_eq!(c.interval(), Duration::MAX);
        for s in 0..1000u64 {
            let now = T0_NS + s * 3_600_000 * MS;
            assert_eq!(c.try_acquire(now, 0.0, 1), Decision::Block);
            assert_eq!(c.try_acquire(now, 1e9, u32::MAX), Decision::Block);
            assert_eq!(c.try_acquire(now, 0.0, 0), pass(0));
        }
    }

    #[test]
    fn fractional_count() {
        // 0.2 QPS, 10 s: warningToken 1, maxToken 2; cold 1 / (1 · 10 + 5) s⁻¹ → 15 s apart.
        let c = WarmUpRateLimiterController::new(0.2, 10, Duration::ZERO, 3.0);
        assert_eq!(c.try_acquire(T0_NS, 0.0, 1), pass(0));
        assert_eq!(c.interval(), Duration::from_secs(15));
        // Two passes in the previous second drain it: 5 s apart.
        let now = T0_NS + 15_000 * MS;
        assert_eq!(c.try_acquire(now, 2.0, 1), pass(0));
        assert_eq!(c.interval(), Duration::from_secs(5));
        assert_eq!(c.try_acquire(now + 4_999 * MS, 0.0, 1), Decision::Block);
        assert_eq!(c.try_acquire(now + 5_000 * MS, 0.0, 1), pass(0));
    }
}
