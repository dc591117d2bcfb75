//! Warm-up: a token bucket whose fill level lowers the admitted QPS while the resource is cold.
//!
//! This is Sentinel's discrete variant of Guava's `SmoothWarmingUp`. Plot the time one permit costs
//! (the *interval*) against the number of tokens stored in the bucket:
//!
//! ```text
//!   interval
//!   coldFactor/count ┤                     ╱│
//!                    │                   ╱  │   slope = (coldFactor − 1) / count
//!                    │                 ╱    │           / (maxToken − warningToken)
//!   1/count          ┤───────────────╱      │
//!                    │               │      │
//!                    └───────────────┴──────┴──▶ stored tokens
//!                    0         warningToken  maxToken
//! ```
//!
//! With `p = warm_up_period_sec` and `c = count`, the line rises from the stable interval `1/c` at
//! `warningToken` to the cold interval `coldFactor/c` at `maxToken`. The trapezoid under the slope has
//! an area of `p` seconds (spending the tokens above the line takes the warm-up period) and the flat
//! part an area of `p / (coldFactor − 1)`. Sentinel truncates exactly as follows (the Java fields are `int`, and so is
//! `coldFactor`, which makes the first division an integer one; a fractional cold factor here divides in
//! floating point and truncates the quotient, which is the same thing for whole factors):
//!
//! ```text
//! warningToken = trunc(trunc(p·c) / (coldFactor − 1))
//! maxToken     = warningToken + trunc(2·p·c / (1 + coldFactor))
//! slope        = (coldFactor − 1) / c / (maxToken − warningToken)
//! ```
//!
//! **Admission.** With `t` stored tokens the allowed QPS is `c` below the warning line, and on the line
//! above it the reciprocal of the interval, nudged up one ulp (Java's `Math.nextUp`) so that an exact
//! integer survives rounding:
//!
//! ```text
//! allowed = nextUp(1 / ((t − warningToken)·slope + 1/c))   if t >= warningToken
//!         = c                                              otherwise
//! ```
//!
//! and a request for `a` permits passes iff `trunc(passQps) + a <= allowed`, or if nothing passed in the
//! current window and `a <= min(⌈allowed⌉, c)` (see below). Sentinel counts permits per second; it does not space them
//! (see the warm-up rate limiter for that).
//!
//! **Token flow.** Once per second of the caller's clock (the first check in a new second), with `q` the
//! previous second's pass count, truncated:
//!
//! 1. refill `trunc(t + elapsed_ms·c/1000)` if `t < warningToken`, or if `t >= warningToken` and
//!    `q < trunc(trunc(c) / coldFactor)` (a quiet second); then cap at `maxToken`;
//! 2. subtract `q`, flooring at zero.
//!
//! So a busy resource drains the bucket towards warm, and a quiet one refills it towards cold. A fresh
//! controller starts full (`maxToken` tokens), i.e. cold, and its first sync only subtracts `q`.
//!
//! **Differences from Sentinel**, each only where Sentinel misbehaves:
//!
//! * Sentinel refills above the line only when `t > warningToken`; a bucket left at exactly
//!   `warningToken` never refills and stays warm forever after the traffic stops. Here `t == warningToken`
//!   refills on a quiet second like any `t` above it.
//! * When `maxToken == warningToken` (e.g. a zero period or a tiny count) Sentinel's slope is infinite and
//!   `0 · ∞ = NaN` blocks every request; here there is no warm-up zone and the allowed QPS is `c`
//!   (one ulp above it, from `nextUp`).
//! * Sentinel refuses a request whose size exceeds the cold rate for as long as the bucket is cold, and
//!   the bucket drains only through passes: a count below the cold factor (2 QPS cold at 0.67, under
//!   one request a second) or a batch above `c / coldFactor` (7 permits under 20 QPS, cold at 6.67)
//!   was refused forever. Here a request of at most the allowed QPS rounded up (one request at 0.67,
//!   7 permits at 6.67) passes when the window holds no pass at all, so such a bucket admits one
//!   request per window and warms with it (2 QPS over 10 s: one a second for 10 s, then 2). Requests
//!   that fit the allowed QPS are unaffected, and a larger batch is refused as in Sentinel (allowing
//!   up to `c` would let a batch of `c` skip the warm-up; the unit test `batch_acquire` holds both).
//! * A cold factor that is not a finite number above 1 is replaced by the default 3 (Sentinel's config
//!   does this for `csp.sentinel.flow.cold.factor`; its constructor throws instead). A negative or NaN
//!   count is treated as 0 (nothing passes). Token counts are saturating `u64`s, not Java's `int`.
//! * Sentinel starts empty with a last-filled time of 0, so that its first sync refills "since 1970" and
//!   caps at `maxToken`. Starting full gives the same first sync without relying on the clock's epoch
//!   (a clock starting near zero is cold too), and a caller racing that first sync reads a cold bucket.
//!
//! **Concurrency.** The second is claimed with a compare-and-swap on the last-filled time, so exactly one
//! caller applies each second's token update (a compare-and-swap loop on the token count); other callers
//! in that instant may still read the previous second's tokens, which is harmless. Sentinel's update
//! could be applied twice in a race.

use std::sync::atomic::{AtomicU64, Ordering};

/// The cold factor used when the configured one is not a finite number above 1.
pub(crate) const DEFAULT_COLD_FACTOR: f64 = 3.0;

/// Value of the last-filled time before the first sync.
const NEVER_FILLED: u64 = u64::MAX;

const MILLIS_PER_SEC: u64 = 1000;

/// `x` truncated toward zero into a `u64`: negative and NaN give 0, large values saturate.
#[inline]
fn trunc_u64(x: f64) -> u64 {
    x as u64
}

/// The least `f64` greater than `x` (Java's `Math.nextUp`; `f64::next_up` needs Rust 1.86).
#[inline]
fn next_up(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        x
    } else if x == 0.0 {
        f64::from_bits(1)
    } else if x > 0.0 {
        f64::from_bits(x.to_bits() + 1)
    } else {
        f64::from_bits(x.to_bits() - 1)
    }
}

/// `x` rounded up to a whole number, where `x` within a few ulps of a whole number is that number: the
/// allowed QPS of a whole cold rate comes out a few ulps above it (`9.000000000000004` for 27 QPS at a
/// cold factor of 3, and `next_up` adds one more), which plain `ceil` would make 10. The tolerance is
/// a few ulps, not a relative 1e-9, which would round genuine fractions of large rates down
/// (99998.00004 to 99998). The unit test `batch_acquire` holds both.
#[inline]
fn whole_ceil(x: f64) -> f64 {
    let nearest = x.round();
    if (x - nearest).abs() <= x.abs() * 16.0 * f64::EPSILON {
        nearest
    } else {
        x.ceil()
    }
}

/// The warm-up controller: Sentinel's token bucket that admits fewer requests per second while cold.
#[derive(Debug)]
pub(crate) struct WarmUpController {
    /// The stable QPS threshold (never negative).
    count: f64,
    /// Stored tokens at and above which the allowed QPS is lowered.
    warning_token: u64,
    /// The bucket's capacity: the coldest state.
    max_token: u64,
    /// Extra interval (seconds per permit) per token above the warning line.
    slope: f64,
    /// A previous-second QPS below which tokens above the warning line are refilled.
    quiet_qps: u64,
    /// Tokens currently stored; `max_token` (cold) initially.
    stored_tokens: AtomicU64,
    /// Start of the second (caller's milliseconds) of the last sync; [`NEVER_FILLED`] before the first.
    last_filled_ms: AtomicU64,
}

impl WarmUpController {
    /// A cold controller for `count` QPS reached after about `warm_up_period_sec`, starting at
    /// `count / cold_factor` QPS.
    pub(crate) fn new(count: f64, warm_up_period_sec: u32, cold_factor: f64) -> Self {
        let count = if count > 0.0 { count } else { 0.0 };
        let cold_factor = if cold_factor.is_finite() && cold_factor > 1.0 {
            cold_factor
        } else {
            DEFAULT_COLD_FACTOR
        };
        let period = f64::from(warm_up_period_sec);
        let warning_token = trunc_u64(trunc_u64(period * count) as f64 / (cold_factor - 1.0));
        let max_token =
            warning_token.saturating_add(trunc_u64(2.0 * period * count / (1.0 + cold_factor)));
        let slope = (cold_factor - 1.0) / count / (max_token - warning_token) as f64;
        let quiet_qps = trunc_u64(trunc_u64(count) as f64 / cold_factor);
        Self {
            count,
            warning_token,
            max_token,
            slope,
            quiet_qps,
            stored_tokens: AtomicU64::new(max_token),
            last_filled_ms: AtomicU64::new(NEVER_FILLED),
        }
    }

    /// Takes over `from`'s stored tokens and last refill (a rule reloaded with only its presentation
    /// changed keeps its warmth: `a_rule_reloaded_with_only_its_id_changed_keeps_its_warmth`).
    pub(crate) fn copy_state(&self, from: &WarmUpController) {
        self.stored_tokens.store(
            from.stored_tokens.load(Ordering::Acquire),
            Ordering::Release,
        );
        self.last_filled_ms.store(
            from.last_filled_ms.load(Ordering::Acquire),
            Ordering::Release,
        );
    }

    /// Stored tokens at and above which the allowed QPS is lowered.
    pub(crate) fn warning_token(&self) -> u64 {
        self.warning_token
    }

    /// The bucket's capacity (the coldest state).
    pub(crate) fn max_token(&self) -> u64 {
        self.max_token
    }

    /// Extra seconds per permit for each token above the warning line (infinite when
    /// `max_token == warning_token`, in which case it is never used).
    pub(crate) fn slope(&self) -> f64 {
        self.slope
    }

    /// Whether a request for `acquire` permits may pass at `now_ms`, given the pass QPS of the current
    /// window and the pass count of the previous whole second (both truncated to integers here).
    pub(crate) fn can_pass(
        &self,
        now_ms: u64,
        pass_qps: f64,
        previous_pass_qps: f64,
        acquire: u32,
    ) -> bool {
        let allowed = self.current_allowed_qps(now_ms, previous_pass_qps);
        trunc_u64(pass_qps).saturating_add(u64::from(acquire)) as f64 <= allowed
            || (pass_qps <= 0.0 && f64::from(acquire) <= whole_ceil(allowed).min(self.count))
    }

    /// Brings the bucket up to `now_ms` (at most once per second) and returns the QPS it allows now.
    pub(crate) fn current_allowed_qps(&self, now_ms: u64, previous_pass_qps: f64) -> f64 {
        self.sync(now_ms, trunc_u64(previous_pass_qps));
        self.last_allowed_qps()
    }

    /// The QPS allowed by the bucket as of its last sync (for observability; does not sync).
    pub(crate) fn last_allowed_qps(&self) -> f64 {
        self.allowed_qps(self.stored_tokens.load(Ordering::Acquire))
    }

    /// The allowed QPS with `tokens` stored.
    fn allowed_qps(&self, tokens: u64) -> f64 {
        if tokens < self.warning_token {
            return self.count;
        }
        let above = tokens - self.warning_token;
        let extra = if above == 0 {
            0.0
        } else {
            above as f64 * self.slope
        };
        next_up(1.0 / (extra + 1.0 / self.count))
    }

    /// Applies the token update for the second containing `now_ms`, if no caller has yet.
    fn sync(&self, now_ms: u64, previous_pass_qps: u64) {
        let second = now_ms - now_ms % MILLIS_PER_SEC;
        let mut last = self.last_filled_ms.load(Ordering::Acquire);
        loop {
            if last != NEVER_FILLED && second <= last {
                return;
            }
            match self.last_filled_ms.compare_exchange_weak(
                last,
                second,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(actual) => last = actual,
            }
        }
        // The bucket starts full, so the first sync has nothing to refill.
        let elapsed_ms = if last == NEVER_FILLED {
            0
        } else {
            second - last
        };
        // The closure always returns `Some`, so the update cannot fail.
        let _ = self
            .stored_tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |tokens| {
                Some(
                    self.refilled(tokens, elapsed_ms, previous_pass_qps)
                        .saturating_sub(previous_pass_qps),
                )
            });
    }

    /// Tokens after the refill for `elapsed_ms`, capped at `max_token`.
    fn refilled(&self, tokens: u64, elapsed_ms: u64, previous_pass_qps: u64) -> u64 {
        let refill = tokens < self.warning_token || previous_pass_qps < self.quiet_qps;
        if !refill || elapsed_ms == 0 {
            return tokens.min(self.max_token);
        }
        let filled = tokens as f64 + elapsed_ms as f64 * self.count / MILLIS_PER_SEC as f64;
        trunc_u64(filled).min(self.max_token)
    }

    /// Tokens currently stored (as of the last sync).
    #[cfg(test)]
    fn stored_tokens(&self) -> u64 {
        self.stored_tokens.load(Ordering::Acquire)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{WarmUpController, next_up, whole_ceil};

    /// An epoch-like start instant in milliseconds, on a whole second.
    pub(crate) const T0: u64 = 1_700_000_000_000;

    /// A test model of Sentinel's `StatisticNode` as seen by a flow controller: `pass_qps` sums the
    /// current and the previous 500 ms bucket, `previous_pass_qps` is the previous whole second's passes.
    #[derive(Debug, Default)]
    pub(crate) struct StatModel {
        /// Passes per 500 ms bucket since `T0`.
        half_seconds: Vec<u64>,
    }

    impl StatModel {
        fn bucket(&self, index: u64) -> u64 {
            usize::try_from(index)
                .ok()
                .and_then(|i| self.half_seconds.get(i))
                .copied()
                .unwrap_or(0)
        }

        /// Passes in the rolling one-second window (two 500 ms buckets) at `now_ms`.
        pub(crate) fn pass_qps(&self, now_ms: u64) -> f64 {
            let b = (now_ms - T0) / 500;
            let previous = if b == 0 { 0 } else { self.bucket(b - 1) };
            (self.bucket(b) + previous) as f64
        }

        /// Passes in the whole second before the one containing `now_ms`.
        pub(crate) fn previous_pass_qps(&self, now_ms: u64) -> f64 {
            let s = (now_ms - T0) / 1000;
            if s == 0 {
                return 0.0;
            }
            (self.bucket(2 * s - 2) + self.bucket(2 * s - 1)) as f64
        }

        /// Records one pass at `now_ms`.
        pub(crate) fn record(&mut self, now_ms: u64) {
            let b = usize::try_from((now_ms - T0) / 500).unwrap_or(usize::MAX);
            if self.half_seconds.len() <= b {
                self.half_seconds.resize(b + 1, 0);
            }
            self.half_seconds[b] += 1;
        }

        /// Passes in second `s` after `T0`.
        pub(crate) fn second(&self, s: u64) -> u64 {
            self.bucket(2 * s) + self.bucket(2 * s + 1)
        }
    }

    /// Offers `per_step` requests every 10 ms for `seconds` seconds from `from_ms`, recording passes.
    fn saturate(
        c: &WarmUpController,
        stats: &mut StatModel,
        from_ms: u64,
        seconds: u64,
        per_step: u32,
    ) {
        for step in 0..seconds * 100 {
            let now = from_ms + step * 10;
            for _ in 0..per_step {
                if c.can_pass(now, stats.pass_qps(now), stats.previous_pass_qps(now), 1) {
                    stats.record(now);
                }
            }
        }
    }

    #[test]
    fn sentinel_parameters() {
        let c = WarmUpController::new(20.0, 10, 3.0);
        assert_eq!((c.warning_token(), c.max_token()), (100, 200));
        assert!((c.slope() - 0.001).abs() < 1e-15);

        let c = WarmUpController::new(10.0, 10, 3.0);
        assert_eq!((c.warning_token(), c.max_token()), (50, 100));
        assert!((c.slope() - 0.004).abs() < 1e-15);
    }

    #[test]
    fn warning_token_truncates_before_dividing_by_an_integer_factor() {
        // (int)(1 · 5) / (3 − 1) = 5 / 2 = 2 in Java's integer division, not 2.5.
        let c = WarmUpController::new(5.0, 1, 3.0);
        assert_eq!((c.warning_token(), c.max_token()), (2, 4));
        assert!((c.slope() - 0.2).abs() < 1e-15);

        // Cold factor 4: 100 / 3 = 33; 33 + (int)(200 / 5) = 73.
        let c = WarmUpController::new(10.0, 10, 4.0);
        assert_eq!((c.warning_token(), c.max_token()), (33, 73));

        // (int)(10 · 2.5) = 25 → 12; 12 + (int)(50 / 4 = 12.5) = 24.
        let c = WarmUpController::new(2.5, 10, 3.0);
        assert_eq!((c.warning_token(), c.max_token()), (12, 24));

        // Fractional count: (int)2.0 / 2 = 1; 1 + (int)(4.0 / 4) = 2.
        let c = WarmUpController::new(0.2, 10, 3.0);
        assert_eq!((c.warning_token(), c.max_token()), (1, 2));
    }

    #[test]
    fn fresh_controller_starts_cold() {
        // Sentinel WarmUpControllerTest: count 10, 10 s; the cold limit is about 3.38 QPS.
        let c = WarmUpController::new(10.0, 10, 3.0);
        assert!(!c.can_pass(T0, 8.0, 1.0, 1));
        assert!(c.can_pass(T0, 1.0, 1.0, 1));
        // 100 tokens filled, 1 consumed by the previous second: 1 / (49 · 0.004 + 0.1).
        assert_eq!(c.stored_tokens(), 99);

        // Then ten seconds of checks 100 ms apart with previous QPS 10: warm again.
        for k in 0..100 {
            let _ = c.can_pass(T0 + k * 100, 0.0, 10.0, 1);
        }
        assert!(c.can_pass(T0 + 10_000, 8.0, 10.0, 1));
        assert!(!c.can_pass(T0 + 10_000, 10.0, 10.0, 1));
    }

    #[test]
    fn a_clock_starting_at_zero_is_cold_too() {
        let c = WarmUpController::new(20.0, 10, 3.0);
        assert!(c.can_pass(0, 5.0, 0.0, 1));
        assert!(!c.can_pass(0, 6.0, 0.0, 1));
        assert_eq!(c.stored_tokens(), 200);
    }

    #[test]
    fn saturating_load_warms_up_like_sentinel() {
        // Count 20, 10 s, cold factor 3, saturating load from cold: Sentinel's own sequence.
        let c = WarmUpController::new(20.0, 10, 3.0);
        let mut stats = StatModel::default();
        saturate(&c, &mut stats, T0, 16, 10);
        let per_second: Vec<u64> = (0..16).map(|s| stats.second(s)).collect();
        assert_eq!(
            per_second,
            [6, 6, 7, 7, 8, 8, 9, 10, 11, 12, 15, 19, 20, 20, 20, 20]
        );
    }

    #[test]
    fn idle_cools_back_down() {
        let c = WarmUpController::new(20.0, 10, 3.0);
        let mut stats = StatModel::default();
        saturate(&c, &mut stats, T0, 16, 10);
        assert_eq!(
            c.current_allowed_qps(T0 + 16_000, stats.previous_pass_qps(T0 + 16_000)),
            20.0
        );

        // Ten idle seconds: a single check then refills the bucket to the top.
        let later = T0 + 26_000;
        assert_eq!(stats.previous_pass_qps(later), 0.0);
        assert!((c.current_allowed_qps(later, 0.0) - 20.0 / 3.0).abs() < 1e-9);
        assert_eq!(c.stored_tokens(), 200);

        // And a saturating second admits the cold 6 again.
        saturate(&c, &mut stats, later, 1, 10);
        assert_eq!(stats.second(26), 6);
    }

    #[test]
    fn idle_refills_second_by_second() {
        // Warm (82 tokens: below the line), then quiet seconds checked once each: +20 per second.
        let c = WarmUpController::new(20.0, 10, 3.0);
        let mut stats = StatModel::default();
        saturate(&c, &mut stats, T0, 14, 10);
        assert_eq!(c.stored_tokens(), 82);
        let mut tokens = Vec::new();
        for s in 15..22 {
            let _ = c.current_allowed_qps(T0 + s * 1000, 0.0);
            tokens.push(c.stored_tokens());
        }
        // The first quiet second also spans the idle second 14 (2 s elapsed).
        assert_eq!(tokens, [122, 142, 162, 182, 200, 200, 200]);
    }

    #[test]
    fn busy_seconds_above_the_line_do_not_refill() {
        // Above the warning line, a previous QPS of at least (int)20 / 3 = 6 blocks the refill.
        let c = WarmUpController::new(20.0, 10, 3.0);
        let _ = c.current_allowed_qps(T0, 0.0);
        assert_eq!(c.stored_tokens(), 200);
        let _ = c.current_allowed_qps(T0 + 1000, 6.0);
        assert_eq!(c.stored_tokens(), 194);
        let _ = c.current_allowed_qps(T0 + 2000, 5.0);
        assert_eq!(c.stored_tokens(), 195);
    }

    #[test]
    fn cools_down_from_exactly_the_warning_line() {
        // Deviation from Sentinel: 100 tokens − 50 passed = exactly warningToken (50). Sentinel would
        // refill neither branch and stay warm forever once idle; here a quiet second refills.
        let c = WarmUpController::new(10.0, 10, 3.0);
        let _ = c.current_allowed_qps(T0, 50.0);
        assert_eq!(c.stored_tokens(), 50);
        assert_eq!(c.last_allowed_qps(), next_up(10.0));
        let _ = c.current_allowed_qps(T0 + 1000, 0.0);
        assert_eq!(c.stored_tokens(), 60);
        let _ = c.current_allowed_qps(T0 + 10_000, 0.0);
        assert_eq!(c.stored_tokens(), 100);
        assert!((c.last_allowed_qps() - 10.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn syncs_once_per_second() {
        let c = WarmUpController::new(20.0, 10, 3.0);
        let _ = c.current_allowed_qps(T0 + 999, 0.0);
        for now in [T0, T0 + 500, T0 + 999] {
            let _ = c.current_allowed_qps(now, 50.0);
        }
        assert_eq!(c.stored_tokens(), 200);
        let _ = c.current_allowed_qps(T0 + 1000, 50.0);
        assert_eq!(c.stored_tokens(), 150);
        // A clock stepping back never re-syncs.
        let _ = c.current_allowed_qps(T0, 50.0);
        assert_eq!(c.stored_tokens(), 150);
    }

    #[test]
    fn batch_acquire() {
        let c = WarmUpController::new(20.0, 10, 3.0);
        // Cold: allowed ≈ 6.67.
        assert!(c.can_pass(T0, 0.0, 0.0, 6));
        assert!(c.can_pass(T0, 1.0, 0.0, 5));
        assert!(!c.can_pass(T0, 1.0, 0.0, 6));
        // A window with no pass admits a batch of the cold rate rounded up: a cold bucket drains only
        // through passes, so refusing it would refuse it for good. Not more: a batch of the count
        // would skip the warm-up.
        assert!(c.can_pass(T0, 0.0, 0.0, 7));
        assert!(!c.can_pass(T0, 0.0, 0.0, 8));
        assert!(!c.can_pass(T0, 0.0, 0.0, 20));
        // A whole cold rate (30 / 3 = 10, one ulp above it after `next_up`) stays 10, not 11.
        let whole = WarmUpController::new(30.0, 10, 3.0);
        assert!(whole.can_pass(T0, 0.0, 0.0, 10));
        assert!(!whole.can_pass(T0, 0.0, 0.0, 11));
        // Several ulps above (9.000000000000004 for 27 QPS): still 9.
        let whole = WarmUpController::new(27.0, 10, 3.0);
        assert!(whole.can_pass(T0, 0.0, 0.0, 9));
        assert!(!whole.can_pass(T0, 0.0, 0.0, 10));
        // A genuine fraction of a large rate is not rounded down (99998.00004 admits 99999 permits,
        // which a relative tolerance of 1e-9 would refuse).
        assert_eq!(whole_ceil(99_998.000_04), 99_999.0);
        assert_eq!(whole_ceil(next_up(9.000_000_000_000_004)), 9.0);
        // Every whole cold rate of counts up to 600, periods 1 to 20 s, cold factors 2 to 5.
        for count in 1..=600u32 {
            for period in [1, 5, 10, 20] {
                for factor in [2u32, 3, 4, 5] {
                    if count % factor != 0 || count < factor {
                        continue;
                    }
                    let c = WarmUpController::new(f64::from(count), period, f64::from(factor));
                    let cold = count / factor;
                    if c.last_allowed_qps() < f64::from(cold) {
                        continue; // no warm-up zone, or the rate lies below it
                    }
                    assert!(
                        !c.can_pass(T0, 0.0, 0.0, cold + 1),
                        "count {count}, period {period}, factor {factor}: {}",
                        c.last_allowed_qps()
                    );
                }
            }
        }
        assert!(c.can_pass(T0, 6.9, 0.0, 0));
        assert!(!c.can_pass(T0, 7.0, 0.0, 0));
    }

    #[test]
    fn degenerate_parameters_do_not_block_everything() {
        // No warm-up zone (maxToken == warningToken): Sentinel's 0 · ∞ = NaN blocks all; here it is
        // the plain threshold.
        for (count, period) in [(10.0, 0), (0.1, 10)] {
            let c = WarmUpController::new(count, period, 3.0);
            assert_eq!(c.max_token(), c.warning_token());
            assert_eq!(
                c.current_allowed_qps(T0, 0.0),
                next_up(count),
                "count {count}"
            );
        }
        assert!(WarmUpController::new(10.0, 0, 3.0).can_pass(T0, 9.0, 0.0, 1));

        // Count 0 (or negative, or NaN): nothing that asks for a permit passes.
        for count in [0.0, -5.0, f64::NAN] {
            let c = WarmUpController::new(count, 10, 3.0);
            for s in 0..5 {
                assert!(!c.can_pass(T0 + s * 1000, 0.0, 0.0, 1), "count {count}");
                assert!(c.can_pass(T0 + s * 1000, 0.0, 0.0, 0), "count {count}");
            }
        }

        // Invalid cold factors fall back to 3.
        for factor in [1.0, 0.5, -3.0, f64::NAN, f64::INFINITY] {
            let c = WarmUpController::new(20.0, 10, factor);
            assert_eq!(
                (c.warning_token(), c.max_token()),
                (100, 200),
                "factor {factor}"
            );
        }

        // Extreme values neither panic nor wrap.
        let c = WarmUpController::new(f64::MAX, u32::MAX, 1.0 + f64::EPSILON);
        let _ = c.can_pass(u64::MAX, f64::MAX, f64::MAX, u32::MAX);
        let _ = c.can_pass(0, f64::NAN, f64::INFINITY, u32::MAX);
        let c = WarmUpController::new(f64::INFINITY, 10, 3.0);
        assert!(c.can_pass(T0, 1e12, 0.0, u32::MAX));
    }

    #[test]
    fn next_up_matches_java() {
        assert_eq!(next_up(1.0), 1.0 + f64::EPSILON);
        assert_eq!(next_up(0.0), f64::from_bits(1));
        assert_eq!(next_up(-0.0), f64::from_bits(1));
        assert_eq!(next_up(-f64::from_bits(1)), -0.0);
        assert_eq!(next_up(f64::MAX), f64::INFINITY);
        assert_eq!(next_up(f64::NEG_INFINITY), f64::MIN);
        assert_eq!(next_up(f64::INFINITY), f64::INFINITY);
        assert!(next_up(f64::NAN).is_nan());
    }
}
