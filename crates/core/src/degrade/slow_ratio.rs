//! The slow-request-ratio test (grade 0).
//!
//! A call is *slow* when its response time is greater than `max_rt = round(count)` ms. Once the window
//! holds at least `minRequestAmount` calls, the breaker opens when
//!
//! ```text
//! slow / total > slowRatioThreshold      or      slow / total = slowRatioThreshold = 1.0
//! ```
//!
//! (a threshold of 1.0 opens when every call was slow: the strict `>` alone could never fire).

/// The slow-request-ratio test of one rule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlowRatio {
    max_rt_ms: u64,
    threshold: f64,
}

impl SlowRatio {
    pub(crate) fn new(count: f64, threshold: f64) -> Self {
        // `count` is finite and ≥ 0 (validated); `as` saturates an enormous one.
        SlowRatio {
            max_rt_ms: count.round() as u64,
            threshold,
        }
    }

    /// Whether a call that took `rt_ms` counts against the breaker.
    #[inline]
    pub(crate) fn is_bad(&self, rt_ms: u32) -> bool {
        u64::from(rt_ms) > self.max_rt_ms
    }

    /// The slow ratio if it opens the breaker.
    #[inline]
    pub(crate) fn exceeded(&self, slow: u32, total: u32) -> Option<f64> {
        let ratio = f64::from(slow) / f64::from(total);
        (ratio > self.threshold || (ratio == self.threshold && self.threshold == 1.0))
            .then_some(ratio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_means_strictly_above_the_rounded_count() {
        let t = SlowRatio::new(49.6, 0.5);
        assert!(!t.is_bad(50));
        assert!(t.is_bad(51));
    }

    #[test]
    fn ratio_must_exceed_the_threshold_except_at_one() {
        let t = SlowRatio::new(50.0, 0.8);
        assert_eq!(t.exceeded(12, 15), None, "12/15 = 0.8 is not above 0.8");
        assert_eq!(t.exceeded(13, 16), Some(13.0 / 16.0));
        let all = SlowRatio::new(50.0, 1.0);
        assert_eq!(all.exceeded(4, 5), None);
        assert_eq!(all.exceeded(5, 5), Some(1.0));
        let any = SlowRatio::new(50.0, 0.0);
        assert_eq!(any.exceeded(0, 5), None);
        assert_eq!(any.exceeded(1, 5), Some(0.2));
    }
}
