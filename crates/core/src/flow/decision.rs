//! The verdict of a pacing controller: pass now or after a wait, or block.
//!
//! Pacing controllers never sleep. They reserve a slot and tell the caller how long to wait before the
//! request may proceed; the caller sleeps (asynchronously, ideally) or gives up.

use std::time::Duration;

/// What a pacing controller decided for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Admitted. A slot was reserved; the request may proceed once `wait` has elapsed (zero: at once).
    Pass {
        /// How long the caller must wait before proceeding, measured from the time it passed in.
        wait: Duration,
    },
    /// Rejected. Nothing was reserved.
    Block,
}

impl Decision {
    /// An immediate pass.
    pub(crate) const PASS_NOW: Self = Self::Pass {
        wait: Duration::ZERO,
    };

    /// A pass after `wait_ns` nanoseconds.
    #[inline]
    pub(crate) const fn pass_after_nanos(wait_ns: u64) -> Self {
        Self::Pass {
            wait: Duration::from_nanos(wait_ns),
        }
    }

    /// Whether the request was admitted (with or without a wait).
    #[cfg(test)]
    #[inline]
    pub(crate) const fn is_pass(self) -> bool {
        matches!(self, Self::Pass { .. })
    }
}
