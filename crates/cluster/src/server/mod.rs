//! A token server: the service that grants a cluster's tokens ([`LocalTokenService`]), its
//! settings per namespace ([`ServerFlowConfig`]), its TCP listener ([`TokenServer`]) and where the
//! listener counts tokens ([`Counting`]: in process, or in a Redis several servers share).

mod config;
mod counting;
mod metric;
mod rule_file;
mod service;
mod tcp;
mod values;

pub use config::{ServerConfigError, ServerFlowConfig};
pub use counting::Counting;
pub use rule_file::{FlowConfigJson, NamespaceRules, RuleFileError, ServerRules};
pub use service::{FlowMetric, LocalTokenService, ServerRuleError};
pub use tcp::{DEFAULT_PORT, TokenServer, TransportConfig};
