//! `Serialize` and `Deserialize` for the rule types, on top of the same field reader and writer as
//! the JSON loads: Sentinel's field names, `20` and `20.0` both read as a number, errors that name the
//! field (`clusterConfig.flowId`), and unknown fields logged at `warn` on `floodgate::rules` rather
//! than refused. A rule read alone has no index in a list, so its errors name the field only.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{
    RuleError, RuleWarning, SentinelRule, all_or_errors, log_warnings, read_rule, read_rules,
    rule_items,
};

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

/// Reads a list of rules from its Sentinel JSON array as a load reads it: every rule at fault named by
/// its index and field (``rule 3: `count` must be …``, the errors of all of them in list order), and
/// each unknown field logged at `warn` with the rule's index. A list read as `Vec<R>` reads each rule
/// alone, which cannot know its place.
pub(crate) fn deserialize_rules<'de, R: SentinelRule, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<R>, D::Error> {
    let items = rule_items(Vec::<Value>::deserialize(deserializer)?);
    let mut warnings = Vec::new();
    let rules = all_or_errors(read_rules(&items, &mut warnings));
    log_warnings(R::TYPE, &warnings);
    rules.map_err(D::Error::custom)
}

/// Implements `Serialize` and `Deserialize` for a rule type with [`serialize_rule`] and
/// [`deserialize_rule`], and its `deserialize_list` with [`deserialize_rules`].
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

        impl $rule {
            /// Reads a list of these rules (Sentinel's JSON array) with serde, with the errors of
            /// [`Floodgate::load_rules_json`](crate::Floodgate::load_rules_json): each rule at fault
            /// named by its index and field (``rule 3: `count` must be …``), every one of them; unknown
            /// fields are logged at `warn` on `floodgate::rules`, with the rule's index. (`Vec<Self>`
            /// reads each rule alone, so its errors cannot say which rule.) For
            /// `#[serde(deserialize_with = "…::deserialize_list")]` on a `Vec` field, or with a
            /// deserializer: `deserialize_list(&mut serde_json::Deserializer::from_str(json))`.
            pub fn deserialize_list<'de, D: serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Vec<Self>, D::Error> {
                $crate::rules::deserialize_rules(deserializer)
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

    /// Regression test for serde naming the field of a rule in a list but not the rule: a list read
    /// with `deserialize_list` names each rule at fault by its index, as a load does.
    #[test]
    fn a_list_names_each_rule_at_fault_by_its_index() {
        let json = r#"[{"resource":"a","count":1},{"resource":"b","count":-1},{"resource":"c"},7]"#;
        let err = FlowRule::deserialize_list(&mut serde_json::Deserializer::from_str(json))
            .unwrap_err()
            .to_string();
        let load = crate::Floodgate::default()
            .load_rules_json(crate::RuleType::Flow, json)
            .unwrap_err()
            .to_string();
        assert_eq!(
            load,
            "rule 1: `count` must be a finite number ≥ 0, got -1; rule 2: `count` is required; \
             rule 3: `(rule)` must be a JSON object"
        );
        assert!(err.starts_with(&load), "{err}");

        #[derive(serde::Deserialize)]
        struct Config {
            #[serde(deserialize_with = "DegradeRule::deserialize_list")]
            degrade: Vec<DegradeRule>,
        }
        let config = r#"{"degrade":[{"resource":"a","count":1,"timeWindow":5},
            {"resource":"b","count":1,"grade":1,"timeWindow":0}]}"#;
        let err = serde_json::from_str::<Config>(config).err().unwrap();
        assert!(
            err.to_string()
                .starts_with("rule 1: `timeWindow` must be > 0, got 0 at line 2"),
            "{err}"
        );
        let config = r#"{"degrade":[{"resource":"a","count":1,"timeWindow":5,"grade":2}]}"#;
        let rules = serde_json::from_str::<Config>(config).unwrap().degrade;
        assert_eq!(rules, [DegradeRule::error_count("a", 1.0).time_window(5)]);
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
