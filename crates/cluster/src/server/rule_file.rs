//! A token server's rules and settings in one JSON document, per namespace:
//!
//! ```json
//! { "namespaces": { "orders-app": {
//!     "flowRules": [ { "resource": "GET:/orders", "count": 1000, "clusterMode": true,
//!                      "clusterConfig": { "flowId": 1, "thresholdType": 1 } } ],
//!     "paramRules": [],
//!     "flowConfig": { "exceedCount": 1, "maxOccupyRatio": 1, "intervalMs": 1000,
//!                     "sampleCount": 10, "maxAllowedQps": 30000 } } } }
//! ```
//!
//! Rules use Sentinel's JSON fields, read as the engine reads them. A document is applied whole or
//! not at all: every namespace's rules and settings are checked before any is replaced, and a
//! namespace the document no longer names keeps nothing.

use std::collections::{BTreeMap, HashSet};

use floodgate_core::{FlowRule, ParamFlowRule};
use serde::Deserialize;

use super::config::{ServerConfigError, ServerFlowConfig};
use super::service::{LocalTokenService, ServerRuleError};

/// The document.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerRules {
    /// Each namespace's part, by name.
    #[serde(default)]
    pub namespaces: BTreeMap<String, NamespaceRules>,
}

/// One namespace's rules and settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NamespaceRules {
    /// Cluster flow rules.
    #[serde(default, deserialize_with = "FlowRule::deserialize_list")]
    pub flow_rules: Vec<FlowRule>,
    /// Cluster hot-parameter rules.
    #[serde(default, deserialize_with = "ParamFlowRule::deserialize_list")]
    pub param_rules: Vec<ParamFlowRule>,
    /// The namespace's settings (Sentinel's defaults when absent).
    #[serde(default)]
    pub flow_config: FlowConfigJson,
}

/// [`ServerFlowConfig`] in Sentinel's JSON names, every field optional.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FlowConfigJson {
    /// `exceedCount`.
    pub exceed_count: Option<f64>,
    /// `maxOccupyRatio`.
    pub max_occupy_ratio: Option<f64>,
    /// `intervalMs`.
    pub interval_ms: Option<u32>,
    /// `sampleCount`.
    pub sample_count: Option<u32>,
    /// `maxAllowedQps`.
    pub max_allowed_qps: Option<f64>,
}

impl NamespaceRules {
    /// Loads this part's rules into `service` as `namespace`'s.
    fn load(&self, service: &LocalTokenService, namespace: &str) -> Result<(), RuleFileError> {
        let rules = |kind, error| RuleFileError::Rules {
            namespace: namespace.to_owned(),
            kind,
            error,
        };
        service
            .load_flow_rules(namespace, self.flow_rules.clone())
            .map_err(|e| rules("flowRules", e))?;
        service
            .load_param_rules(namespace, self.param_rules.clone())
            .map_err(|e| rules("paramRules", e))?;
        Ok(())
    }

    /// The flow ids of its flow rules and of its hot-parameter rules.
    fn flow_ids(&self) -> (HashSet<i64>, HashSet<i64>) {
        (
            self.flow_rules
                .iter()
                .filter_map(|r| r.cluster_config.as_ref().map(|c| c.flow_id))
                .collect(),
            self.param_rules
                .iter()
                .filter_map(|r| r.cluster_config.as_ref().map(|c| c.flow_id))
                .collect(),
        )
    }
}

impl FlowConfigJson {
    /// The settings, defaults filled in and checked.
    pub fn to_config(self) -> Result<ServerFlowConfig, ServerConfigError> {
        let d = ServerFlowConfig::default();
        ServerFlowConfig {
            exceed_count: self.exceed_count.unwrap_or(d.exceed_count),
            max_occupy_ratio: self.max_occupy_ratio.unwrap_or(d.max_occupy_ratio),
            interval_ms: self.interval_ms.unwrap_or(d.interval_ms),
            sample_count: self.sample_count.unwrap_or(d.sample_count),
            max_allowed_qps: self.max_allowed_qps.unwrap_or(d.max_allowed_qps),
        }
        .check()
    }
}

/// Why a document was not applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuleFileError {
    /// Not JSON of the document's shape (a rule's fields included).
    #[error("invalid rule document: {0}")]
    Json(#[from] serde_json::Error),
    /// A namespace's rules.
    #[error("namespace {namespace:?}, {kind}: {error}")]
    Rules {
        /// The namespace.
        namespace: String,
        /// `flowRules` or `paramRules`.
        kind: &'static str,
        /// What is wrong.
        error: ServerRuleError,
    },
    /// A namespace's settings.
    #[error("namespace {namespace:?}, flowConfig: {error}")]
    Config {
        /// The namespace.
        namespace: String,
        /// What is wrong.
        error: ServerConfigError,
    },
}

impl ServerRules {
    /// Reads a document.
    pub fn from_json(json: &str) -> Result<Self, RuleFileError> {
        Ok(serde_json::from_str(json)?)
    }

    /// Applies the document to `service`, or changes nothing and names what is wrong.
    pub fn apply(&self, service: &LocalTokenService) -> Result<(), RuleFileError> {
        // Every check first, on a service of its own: flow ids unique across namespaces included.
        let trial = LocalTokenService::default();
        let mut configs = Vec::new();
        for (namespace, part) in &self.namespaces {
            let config = part
                .flow_config
                .to_config()
                .map_err(|error| RuleFileError::Config {
                    namespace: namespace.clone(),
                    error,
                })?;
            configs.push(config);
            part.load(&trial, namespace)?;
        }
        // First each namespace keeps only the flow ids it keeps in the document (with their counts),
        // so that ids moving to another namespace are free when it loads them.
        for namespace in service.namespaces() {
            let (flow_ids, param_ids) = self
                .namespaces
                .get(&namespace)
                .map(NamespaceRules::flow_ids)
                .unwrap_or_default();
            let flows: Vec<FlowRule> = service
                .flow_rules(&namespace)
                .into_iter()
                .filter(|r| {
                    r.cluster_config
                        .as_ref()
                        .is_some_and(|c| flow_ids.contains(&c.flow_id))
                })
                .collect();
            let params: Vec<ParamFlowRule> = service
                .param_rules(&namespace)
                .into_iter()
                .filter(|r| {
                    r.cluster_config
                        .as_ref()
                        .is_some_and(|c| param_ids.contains(&c.flow_id))
                })
                .collect();
            // A subset of the rules in force: it loads.
            let _ = service.load_flow_rules(&namespace, flows);
            let _ = service.load_param_rules(&namespace, params);
        }
        for ((namespace, part), config) in self.namespaces.iter().zip(configs) {
            // Checked above: these cannot fail.
            service
                .set_flow_config(namespace, config)
                .map_err(|error| RuleFileError::Config {
                    namespace: namespace.clone(),
                    error,
                })?;
            part.load(service, namespace)?;
        }
        Ok(())
    }
}
