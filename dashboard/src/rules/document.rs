//! An app's whole rule set as one JSON document, for export and import (rules kept in git):
//!
//! ```json
//! {"app": "orders", "exportedAt": 1764600000000,
//!  "flow": [{"id": 1, "resource": "GET:/a", "count": 20.0, ..}], "degrade": [], ..}
//! ```
//!
//! An import validates every type present before it changes any; a type left out is left alone.
//! Rules carrying the id of one of the app's current rules keep it (once: a repeated id is a new
//! rule), so that once the document is valid, applying it cannot fail on its content.

use floodgate_core::RuleType;
use serde_json::{Map, Value};

use super::Change;
use crate::AppState;
use crate::db::StoredRule;
use crate::error::{AppError, AppResult, FieldError};

/// The export of an app's rules.
#[derive(Debug, Clone)]
pub struct RuleDocument(pub Map<String, Value>);

impl RuleDocument {
    /// The document of `app` at `now` with its rules per type.
    pub fn export(app: &str, now: i64, rules: &[(RuleType, Vec<StoredRule>)]) -> Self {
        let mut doc = Map::new();
        doc.insert("app".into(), Value::from(app));
        doc.insert("exportedAt".into(), Value::from(now));
        for (rule_type, list) in rules {
            let items: Vec<Value> = list
                .iter()
                .map(|r| {
                    let mut rule: Value =
                        serde_json::from_str(&r.body).unwrap_or(Value::Object(Map::new()));
                    if let Some(m) = rule.as_object_mut() {
                        m.insert("id".into(), Value::from(r.id));
                    }
                    rule
                })
                .collect();
            doc.insert(rule_type.as_str().into(), Value::Array(items));
        }
        RuleDocument(doc)
    }
}

/// Imports `doc` into app `app_id` on behalf of `actor`: each type present replaces the app's list of
/// that type. Returns the types changed.
pub async fn import_document(
    state: &AppState,
    app_id: i64,
    doc: &Value,
    actor: &str,
) -> AppResult<Vec<RuleType>> {
    let Some(doc) = doc.as_object() else {
        return Err(AppError::field("document", "must be a JSON object"));
    };
    let mut lists = Vec::new();
    for (key, value) in doc {
        if key == "app" || key == "exportedAt" {
            continue;
        }
        let Ok(rule_type) = key.parse::<RuleType>() else {
            return Err(AppError::field(
                key.clone(),
                "is not a rule type (flow, degrade, system, authority, paramFlow)",
            ));
        };
        let Some(items) = value.as_array() else {
            return Err(AppError::field(key.clone(), "must be an array of rules"));
        };
        lists.push((rule_type, items.clone()));
    }
    // Everything is checked before anything changes.
    let mut errors = Vec::new();
    for (rule_type, items) in &lists {
        let stripped: Vec<Value> = items
            .iter()
            .map(|r| {
                let mut r = r.clone();
                if let Some(m) = r.as_object_mut() {
                    m.remove("id");
                }
                r
            })
            .collect();
        if let Err(errs) = state.rules.validator.normalize(*rule_type, &stripped) {
            errors.extend(errs.into_iter().map(|e| FieldError {
                field: format!("{}.{}", rule_type.as_str(), e.field),
                ..e
            }));
        }
    }
    if !errors.is_empty() {
        return Err(AppError::Invalid(errors));
    }
    let mut changed = Vec::new();
    for (rule_type, items) in lists {
        state
            .rules
            .apply(state, app_id, rule_type, Change::Replace(items), actor)
            .await?;
        changed.push(rule_type);
    }
    Ok(changed)
}
