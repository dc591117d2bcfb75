//! A namespace's flow settings on a token server (Sentinel's `ServerFlowConfig`).

/// How a token server counts a namespace's rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerFlowConfig {
    /// The share of each rule's threshold granted (default 1: exactly the threshold).
    pub exceed_count: f64,
    /// How much of the threshold prioritized requests may borrow from the next bucket (default 1).
    pub max_occupy_ratio: f64,
    /// The window of the namespace's request limiter, ms (default 1000).
    pub interval_ms: u32,
    /// The buckets of that window (default 10).
    pub sample_count: u32,
    /// Requests per second the namespace may send, all its rules together; past it, requests are
    /// answered [`TooManyRequest`](floodgate_core::cluster::TokenStatus::TooManyRequest) (default 30,000).
    pub max_allowed_qps: f64,
}

impl Default for ServerFlowConfig {
    fn default() -> Self {
        ServerFlowConfig {
            exceed_count: 1.0,
            max_occupy_ratio: 1.0,
            interval_ms: 1000,
            sample_count: 10,
            max_allowed_qps: 30_000.0,
        }
    }
}

/// A setting of a [`ServerFlowConfig`] out of range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerConfigError {
    /// `exceedCount` was not a number > 0.
    #[error("exceedCount must be a number > 0, got {0}")]
    ExceedCount(f64),
    /// `maxOccupyRatio` was not a number in [0, 1].
    #[error("maxOccupyRatio must be a number from 0 to 1, got {0}")]
    MaxOccupyRatio(f64),
    /// The window was empty or not divisible into its buckets.
    #[error(
        "intervalMs ({interval_ms}) must be a positive multiple of sampleCount ({sample_count})"
    )]
    Window {
        /// The interval given.
        interval_ms: u32,
        /// The bucket count given.
        sample_count: u32,
    },
    /// `maxAllowedQps` was not a number ≥ 0.
    #[error("maxAllowedQps must be a number >= 0, got {0}")]
    MaxAllowedQps(f64),
}

impl ServerFlowConfig {
    /// The config, or its first setting out of range.
    pub fn check(self) -> Result<Self, ServerConfigError> {
        if !(self.exceed_count.is_finite() && self.exceed_count > 0.0) {
            return Err(ServerConfigError::ExceedCount(self.exceed_count));
        }
        if !(0.0..=1.0).contains(&self.max_occupy_ratio) {
            return Err(ServerConfigError::MaxOccupyRatio(self.max_occupy_ratio));
        }
        if self.sample_count == 0
            || self.interval_ms == 0
            || self.interval_ms % self.sample_count != 0
        {
            return Err(ServerConfigError::Window {
                interval_ms: self.interval_ms,
                sample_count: self.sample_count,
            });
        }
        if !(self.max_allowed_qps.is_finite() && self.max_allowed_qps >= 0.0) {
            return Err(ServerConfigError::MaxAllowedQps(self.max_allowed_qps));
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinels_defaults_are_valid_and_each_bad_setting_is_named() {
        assert!(ServerFlowConfig::default().check().is_ok());
        let bad = |f: fn(&mut ServerFlowConfig)| {
            let mut c = ServerFlowConfig::default();
            f(&mut c);
            c.check().unwrap_err()
        };
        assert_eq!(
            bad(|c| c.exceed_count = 0.0),
            ServerConfigError::ExceedCount(0.0)
        );
        assert_eq!(
            bad(|c| c.max_occupy_ratio = 1.5),
            ServerConfigError::MaxOccupyRatio(1.5)
        );
        assert!(matches!(
            bad(|c| c.interval_ms = 999),
            ServerConfigError::Window { .. }
        ));
        assert!(matches!(
            bad(|c| c.sample_count = 0),
            ServerConfigError::Window { .. }
        ));
        assert!(matches!(
            bad(|c| c.max_allowed_qps = f64::NAN),
            ServerConfigError::MaxAllowedQps(_)
        ));
    }
}
