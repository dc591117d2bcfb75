//! A token server: the service that grants a cluster's tokens ([`LocalTokenService`]) and its
//! settings per namespace ([`ServerFlowConfig`]).

mod config;
mod metric;
mod service;

pub use config::{ServerConfigError, ServerFlowConfig};
pub use service::{FlowMetric, LocalTokenService, ServerRuleError};
