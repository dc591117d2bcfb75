//! The part of a cluster config that every cluster rule kind has (Sentinel's `ClusterFlowConfig` and
//! `ParamFlowClusterConfig` share it): its fields and defaults, read from JSON, checked and written
//! once for both.

use serde_json::{Map, Value, json};

use super::{RuleError, RuleFields, object};

/// The fields of a cluster config every cluster rule kind has, with Sentinel's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClusterFields {
    pub(crate) flow_id: i64,
    pub(crate) threshold_type: i32,
    pub(crate) fallback_to_local_when_fail: bool,
    pub(crate) sample_count: i32,
    pub(crate) window_interval_ms: i32,
}

impl Default for ClusterFields {
    fn default() -> Self {
        ClusterFields {
            flow_id: 0,
            threshold_type: 0,
            fallback_to_local_when_fail: true,
            sample_count: 10,
            window_interval_ms: 1000,
        }
    }
}

impl ClusterFields {
    /// Reads the fields from the cluster config object `c` (the defaults for those not set).
    pub(crate) fn read(c: &RuleFields<'_>) -> Result<Self, RuleError> {
        let d = ClusterFields::default();
        Ok(ClusterFields {
            flow_id: c.integer("flowId")?.unwrap_or(d.flow_id),
            threshold_type: c.int_in("thresholdType")?.unwrap_or(d.threshold_type),
            fallback_to_local_when_fail: c
                .boolean("fallbackToLocalWhenFail")?
                .unwrap_or(d.fallback_to_local_when_fail),
            sample_count: c.int_in("sampleCount")?.unwrap_or(d.sample_count),
            window_interval_ms: c
                .int_in("windowIntervalMs")?
                .unwrap_or(d.window_interval_ms),
        })
    }

    /// A positive `flowId`, a known `thresholdType` (0 per instance, 1 global) and a statistic window
    /// that divides evenly into its samples; `index` is the rule's position in its list.
    pub(crate) fn check(&self, index: usize) -> Result<(), RuleError> {
        let err = |field: &str, reason: String| Err(RuleError::invalid(index, field, reason));
        if self.flow_id <= 0 {
            return err(
                "clusterConfig.flowId",
                format!("must be > 0, got {}", self.flow_id),
            );
        }
        if !(0..=1).contains(&self.threshold_type) {
            return err(
                "clusterConfig.thresholdType",
                format!("must be 0 or 1, got {}", self.threshold_type),
            );
        }
        if self.sample_count <= 0 {
            return err(
                "clusterConfig.sampleCount",
                format!("must be > 0, got {}", self.sample_count),
            );
        }
        if self.window_interval_ms <= 0 || self.window_interval_ms % self.sample_count != 0 {
            return err(
                "clusterConfig.windowIntervalMs",
                format!(
                    "must be positive and divisible by sampleCount ({} / {})",
                    self.window_interval_ms, self.sample_count
                ),
            );
        }
        Ok(())
    }

    /// The fields as Sentinel JSON, for a cluster config object to add its own to.
    pub(crate) fn to_json(self) -> Map<String, Value> {
        object(json!({
            "flowId": self.flow_id,
            "thresholdType": self.threshold_type,
            "fallbackToLocalWhenFail": self.fallback_to_local_when_fail,
            "sampleCount": self.sample_count,
            "windowIntervalMs": self.window_interval_ms,
        }))
    }
}

/// The [`ClusterFields`] of a cluster config (any type with the fields of the same names).
macro_rules! cluster_fields_of {
    ($config:expr) => {{
        let c = &$config;
        $crate::rules::ClusterFields {
            flow_id: c.flow_id,
            threshold_type: c.threshold_type,
            fallback_to_local_when_fail: c.fallback_to_local_when_fail,
            sample_count: c.sample_count,
            window_interval_ms: c.window_interval_ms,
        }
    }};
}
pub(crate) use cluster_fields_of;

/// A cluster config of type `$config` made of the [`ClusterFields`] `$common` (evaluated first) and
/// the config's own fields.
macro_rules! cluster_config {
    ($config:ident { $($field:ident: $value:expr),* $(,)? } with $common:expr) => {{
        let common: $crate::rules::ClusterFields = $common;
        $config {
            flow_id: common.flow_id,
            threshold_type: common.threshold_type,
            fallback_to_local_when_fail: common.fallback_to_local_when_fail,
            sample_count: common.sample_count,
            window_interval_ms: common.window_interval_ms,
            $($field: $value,)*
        }
    }};
}
pub(crate) use cluster_config;
