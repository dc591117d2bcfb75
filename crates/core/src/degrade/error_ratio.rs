//! The error-ratio test (grade 1).
//!
//! A call is *bad* when it traced an error ([`Entry::trace`](crate::Entry::trace)). Once the window
//! holds at least `minRequestAmount` calls, the breaker opens when
//!
//! ```text
//! errors / total > count      or      errors / total = count = 1.0
//! ```
//!
//! The second clause is Floodgate's: Sentinel only tests `>`, so a threshold of 1.0 never opens even when
//! every call failed (Sentinel #2554). Here 1.0 means "open when every call in the window failed", the
//! same as the slow-request ratio's 1.0.

/// The error-ratio test of one rule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ErrorRatio {
    threshold: f64,
}

impl ErrorRatio {
    pub(crate) fn new(threshold: f64) -> Self {
        ErrorRatio { threshold }
    }

    /// The error ratio if it opens the breaker.
    #[inline]
    pub(crate) fn exceeded(&self, errors: u32, total: u32) -> Option<f64> {
        let ratio = f64::from(errors) / f64::from(total);
        (ratio > self.threshold || (ratio == self.threshold && self.threshold == 1.0))
            .then_some(ratio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_must_exceed_the_threshold() {
        let t = ErrorRatio::new(0.5);
        assert_eq!(t.exceeded(5, 10), None);
        assert_eq!(t.exceeded(7, 10), Some(0.7));
        assert_eq!(ErrorRatio::new(0.0).exceeded(1, 100), Some(0.01));
    }

    #[test]
    fn a_threshold_of_one_opens_when_every_call_failed() {
        let t = ErrorRatio::new(1.0);
        assert_eq!(t.exceeded(19, 20), None);
        assert_eq!(t.exceeded(20, 20), Some(1.0));
    }
}
