//! What a rule in cluster mode asks its token service with, read once when the rule is loaded.

use super::service::{ThresholdType, TokenRequest};
use crate::param::ParamValue;
use crate::rules::ClusterFields;

/// A cluster rule's id, window and fallback.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ClusterTerms {
    pub(crate) flow_id: i64,
    pub(crate) threshold_type: ThresholdType,
    pub(crate) sample_count: u32,
    pub(crate) window_interval_ms: u32,
    /// Check the rule here when the service cannot answer.
    pub(crate) fallback_to_local: bool,
}

impl ClusterTerms {
    /// The terms of a rule's cluster config (checked when the rule was loaded: the window's
    /// numbers are positive).
    pub(crate) fn of(fields: &ClusterFields) -> Self {
        ClusterTerms {
            flow_id: fields.flow_id,
            threshold_type: ThresholdType::of(fields.threshold_type),
            sample_count: u32::try_from(fields.sample_count).unwrap_or(1).max(1),
            window_interval_ms: u32::try_from(fields.window_interval_ms)
                .unwrap_or(1000)
                .max(1),
            fallback_to_local: fields.fallback_to_local_when_fail,
        }
    }

    /// The request for `acquire` tokens of threshold `count` on `resource`; `params` holds the
    /// values of a hot-parameter rule (empty for a flow rule).
    pub(crate) fn request<'a>(
        &self,
        acquire: u32,
        prioritized: bool,
        resource: &'a str,
        count: f64,
        params: &'a [ParamValue<'a>],
    ) -> TokenRequest<'a> {
        TokenRequest {
            flow_id: self.flow_id,
            acquire,
            prioritized,
            resource,
            count,
            threshold_type: self.threshold_type,
            sample_count: self.sample_count,
            window_interval_ms: self.window_interval_ms,
            params,
        }
    }
}
