//! The engine's settings, their defaults, and the error of an invalid one.

use std::time::Duration;

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
}
