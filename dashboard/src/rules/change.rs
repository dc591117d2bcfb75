//! One change of an app's rules of one type: the new whole list is validated, committed with its
//! history entry, and then pushed to every healthy machine of the app. Cluster rules without a flow
//! id get one first (see `flow_ids`).

use floodgate_core::RuleType;
use serde_json::{Map, Value};

use super::RuleBook;
use super::flow_ids::{Subject, flow_id, settle_flow_ids};
use crate::AppState;
use crate::db::{HistoryRecord, NewRule, StoredRule};
use crate::error::{AppError, AppResult, FieldError};

/// What to change.
#[derive(Debug, Clone)]
pub enum Change {
    /// Add a rule.
    Create(Value),
    /// Replace rule `id`.
    Update {
        /// The rule's id.
        id: i64,
        /// Its new content.
        rule: Value,
    },
    /// Remove rule `id`.
    Delete(i64),
    /// Replace the whole list; items carrying the `id` of a current rule keep it.
    Replace(Vec<Value>),
    /// Go back to a list of the history (each rule with its own id).
    Restore(Vec<(i64, Value)>),
    /// Take a machine's rules as the app's, if the app does not manage the type yet.
    Import(Vec<Value>),
}

impl Change {
    fn action(&self) -> &'static str {
        match self {
            Change::Create(_) => "create",
            Change::Update { .. } => "update",
            Change::Delete(_) => "delete",
            Change::Replace(_) => "replace",
            Change::Restore(_) => "rollback",
            Change::Import(_) => "import",
        }
    }
}

/// A committed change.
#[derive(Debug, Clone)]
pub struct ChangeOutcome {
    /// The list's new version.
    pub version: i64,
    /// The new list.
    pub rules: Vec<StoredRule>,
    /// The id of the rule created or updated, if one was.
    pub rule_id: Option<i64>,
    /// Fields of the change that rules of the type do not have: left out of what was saved (the
    /// index is `None` for the rule created or updated).
    pub warnings: Vec<FieldError>,
}

fn current_value(rule: &StoredRule) -> AppResult<Value> {
    serde_json::from_str(&rule.body)
        .map_err(|e| AppError::Internal(anyhow::anyhow!("stored rule {} unreadable: {e}", rule.id)))
}

fn without_id(mut rule: Value) -> (Option<i64>, Value) {
    let id = rule
        .as_object_mut()
        .and_then(|m| m.remove("id"))
        .and_then(|v| v.as_i64());
    (id, rule)
}

impl RuleBook {
    /// Applies `change` to the rules of `rule_type` of app `app_id` on behalf of `actor`, then queues
    /// the push. Nothing changes when the new list is invalid (the error names each bad rule's index
    /// and field) or when a rule named by id does not exist. An [`Import`](Change::Import) of a type
    /// the app already manages changes nothing and answers `None`.
    pub async fn apply(
        &self,
        state: &AppState,
        app_id: i64,
        rule_type: RuleType,
        change: Change,
        actor: &str,
    ) -> AppResult<Option<ChangeOutcome>> {
        let _one_at_a_time = self.changes.lock().await;
        let type_name = rule_type.as_str();
        let current = state.db.rules(app_id, type_name).await?;
        if matches!(change, Change::Import(_))
            && state.db.rule_version(app_id, type_name).await?.is_some()
        {
            return Ok(None);
        }
        let action = change.action();
        // The new list, each rule with the id it keeps, and the position of the rule the change is
        // about (its errors name no index: the request carried one rule).
        let mut list: Vec<(Option<i64>, Value)> = Vec::new();
        let mut subject: Option<usize> = None;
        let mut subject_id = None;
        match change {
            Change::Create(rule) => {
                for r in &current {
                    list.push((Some(r.id), current_value(r)?));
                }
                subject = Some(list.len());
                list.push((None, without_id(rule).1));
            }
            Change::Update { id, rule } => {
                if !current.iter().any(|r| r.id == id) {
                    return Err(AppError::NotFound("rule"));
                }
                for r in &current {
                    if r.id == id {
                        subject = Some(list.len());
                        list.push((Some(id), without_id(rule.clone()).1));
                    } else {
                        list.push((Some(r.id), current_value(r)?));
                    }
                }
                subject_id = Some(id);
            }
            Change::Delete(id) => {
                if !current.iter().any(|r| r.id == id) {
                    return Err(AppError::NotFound("rule"));
                }
                for r in current.iter().filter(|r| r.id != id) {
                    list.push((Some(r.id), current_value(r)?));
                }
            }
            Change::Replace(items) => {
                for item in items {
                    let (id, rule) = without_id(item);
                    // An id keeps its rule when it is one of the current rules' and not taken by an
                    // earlier item; otherwise the item is a new rule.
                    let id = id.filter(|id| {
                        current.iter().any(|r| r.id == *id)
                            && !list.iter().any(|(other, _)| *other == Some(*id))
                    });
                    list.push((id, rule));
                }
            }
            Change::Restore(items) => {
                for (id, rule) in items {
                    list.push((Some(id), without_id(rule).1));
                }
            }
            Change::Import(items) => {
                for item in items {
                    list.push((None, without_id(item).1));
                }
            }
        }
        let stored_flow_id = subject_id
            .and_then(|id| current.iter().find(|r| r.id == id))
            .and_then(|r| current_value(r).ok())
            .and_then(|v| flow_id(&v));
        let about = subject.map(|index| Subject {
            index,
            stored_flow_id,
        });
        settle_flow_ids(state, app_id, rule_type, &mut list, about).await?;
        let values: Vec<Value> = list.iter().map(|(_, v)| v.clone()).collect();
        let about_the_subject = |errors: &mut Vec<FieldError>| {
            if let Some(subject) = subject {
                for e in errors {
                    if e.index == Some(subject) {
                        e.index = None;
                    }
                }
            }
        };
        let (normalized, mut warnings) = state
            .rules
            .validator
            .normalize_reporting(rule_type, &values)
            .map_err(|mut errors| {
                about_the_subject(&mut errors);
                AppError::Invalid(errors)
            })?;
        about_the_subject(&mut warnings);
        let new_rules: Vec<NewRule> = list
            .iter()
            .zip(normalized)
            .map(|((id, _), map)| new_rule(*id, map))
            .collect();
        let (version, rules) = state
            .db
            .replace_rules(
                app_id,
                type_name,
                &new_rules,
                HistoryRecord { action, actor },
                state.now_ms(),
            )
            .await?;
        let rule_id = match (subject_id, subject) {
            (Some(id), _) => Some(id),
            // A created rule has the largest id of the list (ids only grow).
            (None, Some(_)) => rules.iter().map(|r| r.id).max(),
            (None, None) => None,
        };
        tracing::info!(
            target: "floodgate_dashboard::audit",
            app_id,
            rule_type = type_name,
            action,
            actor,
            version,
            rules = rules.len(),
            "rules changed"
        );
        state.pusher.push_app(app_id, rule_type);
        Ok(Some(ChangeOutcome {
            version,
            rules,
            rule_id,
            warnings,
        }))
    }
}

fn new_rule(id: Option<i64>, map: Map<String, Value>) -> NewRule {
    let resource = map
        .get("resource")
        .and_then(Value::as_str)
        .map(str::to_owned);
    NewRule {
        id,
        resource,
        body: Value::Object(map).to_string(),
    }
}
