//! Rollback: the list of a history entry's `before`, restored as a change of its own.

use floodgate_core::RuleType;
use serde_json::Value;

use super::{Change, ChangeOutcome, rule_type};
use crate::AppState;
use crate::error::{AppError, AppResult};

/// Restores the rules of app `app_id` as they were before history entry `entry_id`, on behalf of
/// `username` (recorded as `"<username> (rollback of change <id>)"`), then pushes them.
pub async fn roll_back(
    state: &AppState,
    app_id: i64,
    entry_id: i64,
    username: &str,
) -> AppResult<(RuleType, ChangeOutcome)> {
    let entry = state
        .db
        .history_entry(app_id, entry_id)
        .await?
        .ok_or(AppError::NotFound("history entry"))?;
    let rule_type = rule_type(&entry.rule_type)?;
    let before: Vec<Value> = serde_json::from_str(&entry.before).map_err(|e| {
        AppError::Internal(anyhow::anyhow!("history entry {entry_id} unreadable: {e}"))
    })?;
    let mut items = Vec::with_capacity(before.len());
    for item in before {
        let rule_id = item["id"].as_i64().ok_or_else(|| {
            AppError::Internal(anyhow::anyhow!(
                "history entry {entry_id} has a rule without id"
            ))
        })?;
        items.push((rule_id, item["rule"].clone()));
    }
    let actor = format!("{username} (rollback of change {entry_id})");
    let outcome = state
        .rules
        .apply(state, app_id, rule_type, Change::Restore(items), &actor)
        .await?
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("a rollback was not applied")))?;
    Ok((rule_type, outcome))
}
