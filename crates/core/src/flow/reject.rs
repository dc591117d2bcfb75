//! Immediate rejection: admit while the measured usage leaves room for the request.
//!
//! With threshold `count`, a request for `acquire` permits passes iff
//!
//! ```text
//! used + acquire <= count
//! ```
//!
//! where `used` is what the caller measured: the pass QPS of the current window truncated to an integer
//! (Sentinel's `(int) passQps`) for a QPS rule, or the number of requests in flight for a concurrency rule.
//! The threshold may be fractional; since `used` and `acquire` are whole numbers, a threshold of `2.5`
//! behaves like `2`, and any threshold below `1` (including `0`) rejects every request that asks for a
//! permit. Nothing is reserved and nothing waits: this is Sentinel's `DefaultController` without the
//! prioritized "occupy a future window" path.
//!
//! The pass QPS is read over the node's second window, which slides by whole buckets: with
//! Sentinel's default of 2 × 500 ms buckets, a bucket's passes stop counting the moment it leaves the
//! window, so up to twice `count` can pass within a little over half a second across a boundary (5
//! passes at 400 ms and 5 more at 1000 ms under a count of 5). That is Sentinel's semantics, kept;
//! more buckets ([`second_window`](crate::FloodgateBuilder::second_window)) stretch the span in which
//! twice `count` can pass towards a whole second (a little over 900 ms with 10 × 100 ms).

/// The reject-when-over-threshold controller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RejectController {
    /// The threshold: QPS or concurrent requests. Negative or NaN thresholds admit nothing.
    count: f64,
}

impl RejectController {
    /// A controller admitting up to `count` (QPS or in-flight requests).
    pub(crate) const fn new(count: f64) -> Self {
        Self { count }
    }

    /// Whether a request for `acquire` permits may pass when `used` permits are already taken.
    #[inline]
    pub(crate) fn can_pass(&self, used: f64, acquire: u32) -> bool {
        used + f64::from(acquire) <= self.count
    }
}

#[cfg(test)]
mod tests {
    use super::RejectController;

    #[test]
    fn qps_threshold_is_inclusive() {
        // Sentinel DefaultControllerTest: QPS 10, passQps 9 passes, passQps 10 is blocked.
        let c = RejectController::new(10.0);
        assert!(c.can_pass(9.0, 1));
        assert!(!c.can_pass(10.0, 1));
    }

    #[test]
    fn thread_threshold() {
        let c = RejectController::new(8.0);
        assert!(c.can_pass(7.0, 1));
        assert!(!c.can_pass(8.0, 1));
    }

    #[test]
    fn batch_acquire_counts_every_permit() {
        let c = RejectController::new(10.0);
        assert!(c.can_pass(5.0, 5));
        assert!(!c.can_pass(5.0, 6));
        assert!(c.can_pass(0.0, 10));
        assert!(!c.can_pass(0.0, 11));
    }

    #[test]
    fn acquire_zero_passes_at_the_threshold() {
        let c = RejectController::new(10.0);
        assert!(c.can_pass(10.0, 0));
        assert!(!c.can_pass(11.0, 0));
    }

    #[test]
    fn fractional_threshold() {
        let c = RejectController::new(2.5);
        assert!(c.can_pass(1.0, 1));
        assert!(!c.can_pass(2.0, 1));

        // Below one permit nothing that asks for a permit can pass.
        let c = RejectController::new(0.2);
        assert!(!c.can_pass(0.0, 1));
        assert!(c.can_pass(0.0, 0));
    }

    #[test]
    fn zero_negative_and_nan_thresholds_admit_no_permit() {
        for count in [0.0, -1.0, f64::NAN] {
            let c = RejectController::new(count);
            assert!(!c.can_pass(0.0, 1), "count {count}");
            assert!(!c.can_pass(0.0, u32::MAX), "count {count}");
        }
        assert!(RejectController::new(0.0).can_pass(0.0, 0));
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let c = RejectController::new(f64::MAX);
        assert!(c.can_pass(0.0, u32::MAX));
        let c = RejectController::new(f64::INFINITY);
        assert!(c.can_pass(f64::MAX, u32::MAX));
    }
}
