//! The history of an app's rule changes (who, when, the list before and after) and rollback: going
//! back to the list as it was before a change, itself recorded as a change and pushed.

use axum::extract::{Path, Query, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::find_app;
use crate::AppState;
use crate::auth::{CurrentUser, Role};
use crate::db::HistoryEntry;
use crate::error::{AppError, AppResult};
use crate::rules::{roll_back, rule_type};

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/apps/{app}/history", get(list))
        .route("/api/apps/{app}/history/{id}", get(read))
        .route("/api/apps/{app}/history/{id}/rollback", post(rollback))
}

fn entry_json(e: &HistoryEntry) -> Value {
    let parse = |s: &str| serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
    json!({
        "id": e.id,
        "ruleType": e.rule_type,
        "action": e.action,
        "actor": e.actor,
        "at": e.at,
        "before": parse(&e.before),
        "after": parse(&e.after),
    })
}

#[derive(Debug, Deserialize)]
struct HistoryQuery {
    #[serde(rename = "type")]
    rule_type: Option<String>,
    before: Option<i64>,
    limit: Option<i64>,
}

async fn list(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path(app): Path<String>,
    Query(q): Query<HistoryQuery>,
) -> AppResult<Json<Value>> {
    let app = find_app(&state, &app).await?;
    let rule_type = q.rule_type.as_deref().map(rule_type).transpose()?;
    let limit = q.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(AppError::field("limit", "must be between 1 and 500"));
    }
    let entries = state
        .db
        .history(app.id, rule_type.map(|t| t.as_str()), q.before, limit)
        .await?;
    Ok(Json(Value::Array(entries.iter().map(entry_json).collect())))
}

async fn read(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path((app, id)): Path<(String, i64)>,
) -> AppResult<Json<Value>> {
    let app = find_app(&state, &app).await?;
    let entry = state
        .db
        .history_entry(app.id, id)
        .await?
        .ok_or(AppError::NotFound("history entry"))?;
    Ok(Json(entry_json(&entry)))
}

async fn rollback(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((app, id)): Path<(String, i64)>,
) -> AppResult<Json<Value>> {
    user.require(Role::Editor)?;
    let app = find_app(&state, &app).await?;
    let (rule_type, outcome) = roll_back(&state, app.id, id, &user.username).await?;
    Ok(Json(json!({
        "ruleType": rule_type.as_str(),
        "version": outcome.version,
        "rules": outcome.rules.iter().map(super::rules::rule_json).collect::<Vec<_>>(),
    })))
}
