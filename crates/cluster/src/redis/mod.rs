//! Cluster flow control on Redis, the production backend: every instance of an application counts
//! its cluster rules in one Redis (or Redis Cluster), so a rule's limit holds across all of them
//! and no token server is a single point of failure.
//!
//! - [`RedisCounter`] takes a rule's tokens from its sliding window in one atomic script call.
//! - [`RedisTokenService`] is the engine's token service: it answers each entry from tokens it
//!   fetched ahead, and checks the rule locally while Redis does not answer.

mod config;
mod counter;
mod service;

pub use config::{RedisConfig, RedisConfigError};
pub use counter::RedisCounter;
pub use service::RedisTokenService;
