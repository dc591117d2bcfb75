//! `Serialize` and `Deserialize` for the rule types, on top of the same field reader and writer as
//! the JSON loads: Sentinel's field names, `20` and `20.0` both read as a number, errors that name the
//! field (`clusterConfig.flowId`), and unknown fields logged at `warn` on `floodgate::rules` rather
//! than refused. A rule read alone has no index in a list, so its errors name the field only.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{RuleError, RuleWarning, SentinelRule, read_rule};

/// Writes `rule` as its Sentinel JSON object.
pub(crate) fn serialize_rule<R: SentinelRule, S: Serializer>(
    rule: &R,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    rule.to_json().serialize(serializer)
}

/// Reads a rule from its Sentinel JSON object.
pub(crate) fn deserialize_rule<'de, R: SentinelRule, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<R, D::Error> {
    let map = Map::<String, Value>::deserialize(deserializer)?;
    let mut warnings = Vec::new();
    let rule = read_rule::<R>(0, &map, &mut warnings);
    for RuleWarning::UnknownField { field, .. } in &warnings {
        tracing::warn!(
            target: "floodgate::rules",
            rule_type = R::TYPE.as_str(),
            "unknown field `{field}` (ignored)"
        );
    }
    rule.map_err(|error| match error {
        RuleError::Invalid { field, reason, .. } => D::Error::custom(format!("`{field}` {reason}")),
        other => D::Error::custom(other),
    })
}

/// Implements `Serialize` and `Deserialize` for a rule type with [`serialize_rule`] and
/// [`deserialize_rule`].
macro_rules! serde_via_fields {
    ($rule:ty) => {
        impl serde::Serialize for $rule {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                $crate::rules::serialize_rule(self, serializer)
            }
        }

        impl<'de> serde::Deserialize<'de> for $rule {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $crate::rules::deserialize_rule(deserializer)
            }
        }
    };
}
pub(crate) use serde_via_fields;

#[cfg(test)]
mod tests {
    use crate::{AuthorityRule, DegradeRule, FlowRule, ParamFlowRule, SystemRule};

    #[test]
    fn rules_round_trip_as_sentinel_json() {
        let flow = FlowRule::new("R", 20.0).id(7);
        let text = serde_json::to_string(&flow).unwrap();
        assert!(text.contains(r#""resource":"R""#) && text.contains(r#""count":20.0"#));
        assert_eq!(serde_json::from_str::<FlowRule>(&text).unwrap(), flow);
        let degrade = DegradeRule::error_count("R", 3.0).time_window(10);
        let text = serde_json::to_string(&degrade).unwrap();
        assert_eq!(serde_json::from_str::<DegradeRule>(&text).unwrap(), degrade);
        let authority = AuthorityRule::white("R", "a,b");
        let text = serde_json::to_string(&authority).unwrap();
        assert_eq!(
            serde_json::from_str::<AuthorityRule>(&text).unwrap(),
            authority
        );
        let system = SystemRule::new().qps(5.0);
        let text = serde_json::to_string(&system).unwrap();
        assert_eq!(serde_json::from_str::<SystemRule>(&text).unwrap(), system);
        let param = ParamFlowRule::new("R", 0, 5.0);
        let text = serde_json::to_string(&param).unwrap();
        assert_eq!(serde_json::from_str::<ParamFlowRule>(&text).unwrap(), param);
    }

    #[test]
    fn reading_is_as_lenient_and_as_precise_as_a_load() {
        let rules: Vec<FlowRule> =
            serde_json::from_str(r#"[{"resource":"R","count":20,"maxQps":1}]"#).unwrap();
        assert_eq!(
            rules,
            [FlowRule::new("R", 20.0)],
            "an int for a double; unknown ignored"
        );
        let err = serde_json::from_str::<FlowRule>(r#"{"resource":"R","count":-1}"#).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("`count` must be a finite number ≥ 0, got -1"),
            "{err}"
        );
        let err = serde_json::from_str::<FlowRule>(
            r#"{"resource":"R","count":1,"clusterMode":true,"clusterConfig":{"flowId":"x"}}"#,
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with("`clusterConfig.flowId`"),
            "{err}"
        );
    }
}
