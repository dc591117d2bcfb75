//! The Floodgate agent: what an application embeds so that a dashboard (Floodgate's or Sentinel's Java
//! one) can see its metrics and change its rules.
//!
//! * A command API wire-compatible with Sentinel's (`getRules`, `setRules`, `metric`, `clusterNode`,
//!   `jsonTree`, …) on `127.0.0.1:8719` by default — loopback unless told otherwise, and refusing to bind
//!   another address without a shared token (Sentinel's Java dashboard, which cannot send one, may be
//!   let in by address: [`AgentBuilder::tokenless_from`]). Strangers holding connections open do not
//!   keep a dashboard out (short of a flood from as many addresses as the agent keeps places for,
//!   renewed faster than every half second), and rule loads do not hold the other commands or the
//!   heartbeats up. At most 256 connections (file descriptors) are open at once.
//! * Heartbeats to the dashboard (`POST /registry/machine`) every 10 s, with failover and back-off.
//! * Per-second metrics kept for 5 minutes (and optionally Sentinel-format metric log files).
//! * A Prometheus exposition at `GET /metrics` (and optionally on a port of its own): see
//!   [`prometheus_text`] for the metrics.
//! * Rule files per rule type, reloaded when they change and written when rules are pushed, so rules
//!   survive restarts.
//!
//! ```no_run
//! use floodgate_core::{Floodgate, RuleType};
//! use floodgate_transport::Agent;
//!
//! let fg = Floodgate::default();
//! let agent = Agent::builder(fg.clone())
//!     .app_name("orders")
//!     .dashboard("127.0.0.1:8080")
//!     .rule_file(RuleType::Flow, "/var/lib/orders/flow-rules.json")
//!     .start()?;
//! println!("command API on {}", agent.local_addr());
//! # Ok::<(), floodgate_transport::AgentError>(())
//! ```

mod admission;
mod agent;
mod cidr;
mod command;
mod config;
mod heartbeat;
mod host;
mod metric_log;
mod metric_store;
mod prometheus;
mod rule_file;
mod serve;
mod write_deadline;

pub use agent::{Agent, AgentBuilder, AgentError};
pub use cidr::{Cidr, CidrError};
pub use command::{CommandState, SENTINEL_VERSION, app};
pub use config::{AgentConfig, ConfigError, DEFAULT_PORT, RuleTypeKey};
pub use metric_log::{MetricLog, fat_line};
pub use metric_store::{MetricStore, OTHER_RESOURCES, ResourceTotals, thin_line};
pub use prometheus::{PROMETHEUS_CONTENT_TYPE, prometheus_text};
pub use rule_file::RuleFiles;
