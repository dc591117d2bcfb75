//! The engine's settings as the builder takes them ([`Settings`]), checked into what the engine runs
//! with ([`Config`]) when it is built, their defaults, and the error of an invalid one.

use std::time::Duration;

use crate::flow::DEFAULT_COLD_FACTOR;
use crate::node::WindowGeometry;
use crate::registry::Limits;
use crate::stat::WindowError;

/// Sentinel's default cap on resources (`MAX_SLOT_CHAIN_SIZE`).
pub const DEFAULT_MAX_RESOURCES: usize = 6000;
/// Sentinel's default cap on context names (`MAX_CONTEXT_NAME_SIZE`).
pub const DEFAULT_MAX_CONTEXTS: usize = 2000;
/// The default cap on origins counted apart per resource (Sentinel has none: each caller name, often
/// taken from a request header, made an origin node on every resource it called, for good).
pub const DEFAULT_MAX_ORIGINS: usize = 1000;
/// Sentinel's default occupy timeout for prioritized entries.
pub const DEFAULT_OCCUPY_TIMEOUT: Duration = Duration::from_millis(500);

/// The settings as given to the builder, unchecked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// `(sample_count, interval_ms)` of the second window.
    pub(crate) window: (u32, u64),
    pub(crate) cold_factor: f64,
    pub(crate) max_resources: usize,
    pub(crate) max_contexts: usize,
    pub(crate) max_origins: usize,
    /// `None`: the default, [`DEFAULT_OCCUPY_TIMEOUT`] or the window interval if that is shorter.
    pub(crate) occupy_timeout: Option<Duration>,
    pub(crate) eager_context_stats: bool,
    pub(crate) param_capacity: Option<usize>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            window: (
                WindowGeometry::DEFAULT.sample_count,
                WindowGeometry::DEFAULT.interval_ms,
            ),
            cold_factor: DEFAULT_COLD_FACTOR,
            max_resources: DEFAULT_MAX_RESOURCES,
            max_contexts: DEFAULT_MAX_CONTEXTS,
            max_origins: DEFAULT_MAX_ORIGINS,
            occupy_timeout: None,
            eager_context_stats: false,
            param_capacity: None,
        }
    }
}

impl Settings {
    /// The engine's configuration, or the first invalid setting. Nothing is adjusted to fit: a value
    /// out of range is an error.
    pub(crate) fn check(&self) -> Result<Config, ConfigError> {
        let geometry = WindowGeometry::new(self.window.0, self.window.1)?;
        if !self.cold_factor.is_finite() || self.cold_factor <= 1.0 {
            return Err(ConfigError::ColdFactor(self.cold_factor));
        }
        let occupy_timeout_ms = match self.occupy_timeout {
            None => (DEFAULT_OCCUPY_TIMEOUT.as_millis() as u64).min(geometry.interval_ms),
            Some(timeout) => {
                let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
                if ms > geometry.interval_ms {
                    return Err(ConfigError::OccupyTimeout {
                        timeout,
                        interval_ms: geometry.interval_ms,
                    });
                }
                ms
            }
        };
        if self.param_capacity == Some(0) {
            return Err(ConfigError::ParamCacheCapacity);
        }
        Ok(Config {
            geometry,
            cold_factor: self.cold_factor,
            max_resources: self.max_resources,
            max_contexts: self.max_contexts,
            max_origins: self.max_origins,
            occupy_timeout_ms,
            eager_context_stats: self.eager_context_stats,
            param_capacity: self.param_capacity,
        })
    }
}

/// The checked settings an engine runs with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    pub(crate) geometry: WindowGeometry,
    pub(crate) cold_factor: f64,
    pub(crate) max_resources: usize,
    pub(crate) max_contexts: usize,
    pub(crate) max_origins: usize,
    pub(crate) occupy_timeout_ms: u64,
    pub(crate) eager_context_stats: bool,
    pub(crate) param_capacity: Option<usize>,
}

impl Config {
    /// What the registry creates its nodes with.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            geometry: self.geometry,
            max_resources: self.max_resources,
            max_contexts: self.max_contexts,
            max_origins: self.max_origins,
            eager_context_stats: self.eager_context_stats,
        }
    }
}

/// An engine setting was invalid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The window geometry.
    #[error(transparent)]
    Window(#[from] WindowError),
    /// The cold factor was not a number > 1.
    #[error("cold factor must be a number > 1, got {0}")]
    ColdFactor(f64),
    /// The occupy timeout was longer than the second window's interval (a prioritized entry can borrow
    /// from the next window only).
    #[error(
        "occupy timeout must be at most the window interval ({interval_ms} ms), got {timeout:?}"
    )]
    OccupyTimeout {
        /// The timeout asked for.
        timeout: Duration,
        /// The second window's interval.
        interval_ms: u64,
    },
    /// The hot-parameter cache capacity was 0.
    #[error("hot-parameter cache capacity must be at least 1, got 0")]
    ParamCacheCapacity,
}
