//! Validation by floodgate-core's own rule parser, so that the dashboard, the agents and the engine
//! agree on what a valid rule is and on the field an error names.
//!
//! A list is loaded into a private engine that never serves traffic: an error names the rule's index
//! and field; an accepted rule is written back as the engine writes it (Sentinel's JSON with every
//! default filled in, keys sorted), which is the form the dashboard stores and compares.

use std::sync::Mutex;

use floodgate_core::{Floodgate, RuleError, RuleType, RuleWarning};
use serde_json::{Map, Value};

use crate::error::FieldError;

/// Checks and normalises rules.
#[derive(Debug)]
pub struct RuleValidator {
    engine: Mutex<Floodgate>,
}

impl Default for RuleValidator {
    fn default() -> Self {
        RuleValidator::new()
    }
}

/// The errors of a refused list, each naming the rule's index and the field.
pub fn field_errors(error: &RuleError) -> Vec<FieldError> {
    match error {
        RuleError::Invalid {
            index,
            field,
            reason,
        } => vec![FieldError {
            index: Some(*index),
            field: field.clone(),
            message: reason.clone(),
        }],
        RuleError::Several(errors) => errors.iter().flat_map(field_errors).collect(),
        other => vec![FieldError {
            index: None,
            field: "rules".to_owned(),
            message: other.to_string(),
        }],
    }
}

/// One rule as the engine writes it back.
type Rule = Map<String, Value>;

/// The fields a load ignored, as field errors that are only warnings: the list was valid and is
/// kept without them.
pub(crate) fn field_warnings(warnings: &[RuleWarning]) -> Vec<FieldError> {
    warnings
        .iter()
        .map(|warning| match warning {
            RuleWarning::UnknownField { index, field, .. } => FieldError {
                index: Some(*index),
                field: field.clone(),
                message: "is not a field of these rules, and was left out".to_owned(),
            },
            other => FieldError {
                index: None,
                field: "rules".to_owned(),
                message: other.to_string(),
            },
        })
        .collect()
}

/// `rule` as text with its keys sorted and without `id`: the form compared for drift.
pub fn canonical_rule(rule: &Map<String, Value>) -> String {
    let mut rule = rule.clone();
    rule.remove("id");
    Value::Object(rule).to_string()
}

impl RuleValidator {
    /// A validator with its own engine.
    pub fn new() -> Self {
        RuleValidator {
            engine: Mutex::new(Floodgate::builder().build()),
        }
    }

    /// Validates the whole `rules` list of `rule_type` and returns each rule as the engine writes it
    /// back (without `id`), in the list's order.
    pub fn normalize(
        &self,
        rule_type: RuleType,
        rules: &[Value],
    ) -> Result<Vec<Map<String, Value>>, Vec<FieldError>> {
        self.normalize_reporting(rule_type, rules)
            .map(|(rules, _)| rules)
    }

    /// [`normalize`](Self::normalize), and the fields of `rules` that are not fields of rules of
    /// `rule_type`, as field errors that are warnings (left out of what it returns).
    pub fn normalize_reporting(
        &self,
        rule_type: RuleType,
        rules: &[Value],
    ) -> Result<(Vec<Rule>, Vec<FieldError>), Vec<FieldError>> {
        for (index, rule) in rules.iter().enumerate() {
            if !rule.is_object() {
                return Err(vec![FieldError {
                    index: Some(index),
                    field: "rule".to_owned(),
                    message: "must be a JSON object".to_owned(),
                }]);
            }
        }
        let engine = self.engine.lock().unwrap_or_else(|p| p.into_inner());
        let list = Value::Array(rules.to_vec()).to_string();
        let warnings = engine
            .load_rules_json(rule_type, &list)
            .map_err(|e| field_errors(&e))?;
        let warnings = field_warnings(warnings.warnings());
        // Each rule alone, so that its written-back form is known to be its own whatever order the
        // engine keeps a list in.
        let mut out = Vec::with_capacity(rules.len());
        for (index, rule) in rules.iter().enumerate() {
            let one = Value::Array(vec![rule.clone()]).to_string();
            engine.load_rules_json(rule_type, &one).map_err(|e| {
                field_errors(&e)
                    .into_iter()
                    .map(|mut f| {
                        f.index = Some(index);
                        f
                    })
                    .collect::<Vec<_>>()
            })?;
            let written: Value =
                serde_json::from_str(&engine.rules_json(rule_type)).map_err(|e| {
                    vec![FieldError {
                        index: Some(index),
                        field: "rule".to_owned(),
                        message: format!("could not be written back: {e}"),
                    }]
                })?;
            match written {
                Value::Array(mut items) if items.len() == 1 => match items.pop() {
                    Some(Value::Object(mut map)) => {
                        map.remove("id");
                        out.push(map);
                    }
                    _ => return Err(unexpected(index)),
                },
                _ => return Err(unexpected(index)),
            }
        }
        let _ = engine.load_rules_json(rule_type, "[]");
        Ok((out, warnings))
    }

    /// The canonical forms of a rule list as a machine reports it (JSON text), sorted: two lists with
    /// the same rules in any order compare equal. `None` when the text is not a valid list.
    pub fn canonical_list(&self, rule_type: RuleType, json: &str) -> Option<Vec<String>> {
        let rules: Vec<Value> = serde_json::from_str(json).ok()?;
        let normalized = self.normalize(rule_type, &rules).ok()?;
        let mut out: Vec<String> = normalized.iter().map(canonical_rule).collect();
        out.sort();
        Some(out)
    }
}

fn unexpected(index: usize) -> Vec<FieldError> {
    vec![FieldError {
        index: Some(index),
        field: "rule".to_owned(),
        message: "was not written back as one rule".to_owned(),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_rule_is_written_back_with_its_defaults() {
        let v = RuleValidator::new();
        let out = v
            .normalize(
                RuleType::Flow,
                &[json!({"resource": "GET:/a", "count": 20})],
            )
            .unwrap();
        assert_eq!(out[0]["resource"], "GET:/a");
        assert_eq!(out[0]["count"], 20.0);
        assert_eq!(out[0]["grade"], 1);
        assert_eq!(out[0]["limitApp"], "default");
        assert!(!out[0].contains_key("id"));
    }

    #[test]
    fn a_bad_rule_names_its_index_and_field() {
        let v = RuleValidator::new();
        let errors = v
            .normalize(
                RuleType::Flow,
                &[
                    json!({"resource": "a", "count": 1}),
                    json!({"resource": "b", "count": -1}),
                ],
            )
            .unwrap_err();
        assert_eq!(errors[0].index, Some(1));
        assert_eq!(errors[0].field, "count");
    }

    #[test]
    fn lists_compare_in_any_order_and_ignore_ids() {
        let v = RuleValidator::new();
        let a = v.canonical_list(
            RuleType::Flow,
            r#"[{"resource":"a","count":1},{"resource":"b","count":2.0,"id":7}]"#,
        );
        let b = v.canonical_list(
            RuleType::Flow,
            r#"[{"resource":"b","count":2,"grade":1},{"resource":"a","count":1.0}]"#,
        );
        assert!(a.is_some());
        assert_eq!(a, b);
        assert_eq!(v.canonical_list(RuleType::Flow, "not json"), None);
    }
}
