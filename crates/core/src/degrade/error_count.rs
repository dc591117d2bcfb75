//! The error-count test (grade 2).
//!
//! A call is *bad* when it traced an error. Once the window holds at least `minRequestAmount` calls, the
//! breaker opens when `errors > count` (strictly, as in Sentinel). The test runs on every completion, so a
//! *successful* call can open the breaker: with `count = 3` and `minRequestAmount = 5`, four errors and
//! then one success open it, because the window then holds five calls of which four failed.

/// The error-count test of one rule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ErrorCount {
    threshold: f64,
}

impl ErrorCount {
    pub(crate) fn new(threshold: f64) -> Self {
        ErrorCount { threshold }
    }

    /// The error count if it opens the breaker.
    #[inline]
    pub(crate) fn exceeded(&self, errors: u32) -> Option<f64> {
        let errors = f64::from(errors);
        (errors > self.threshold).then_some(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_must_be_exceeded() {
        let t = ErrorCount::new(3.0);
        assert_eq!(t.exceeded(3), None);
        assert_eq!(t.exceeded(4), Some(4.0));
        assert_eq!(ErrorCount::new(0.0).exceeded(1), Some(1.0));
    }
}
