//! A token server: the service that grants a cluster's tokens ([`LocalTokenService`]), its
//! settings per namespace ([`ServerFlowConfig`]) and its TCP listener ([`TokenServer`]).

mod config;
mod metric;
mod rule_file;
mod service;
mod tcp;
mod values;

pub use config::{ServerConfigError, ServerFlowConfig};
pub use rule_file::{FlowConfigJson, NamespaceRules, RuleFileError, ServerRules};
pub use service::{FlowMetric, LocalTokenService, ServerRuleError};
pub use tcp::{DEFAULT_PORT, TokenServer, TransportConfig};
