//! Rules of an app, per type: list, read, create, update, delete, replace the whole list; and the
//! export and import of the whole rule set as one document. Every change is validated as the engine
//! validates, committed with its history, then pushed to every healthy machine of the app.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use floodgate_core::RuleType;
use serde_json::{Value, json};

use super::{find_app, json_body};
use crate::AppState;
use crate::auth::{CurrentUser, Role};
use crate::db::StoredRule;
use crate::error::{AppError, AppResult};
use crate::rules::{Change, ChangeOutcome, RuleDocument, import_document, rule_type};

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/apps/{app}/rules/{type}",
            get(list).post(create).put(replace),
        )
        .route(
            "/api/apps/{app}/rules/{type}/{id}",
            get(read).put(update).delete(remove),
        )
        .route("/api/apps/{app}/export", get(export))
        .route("/api/apps/{app}/import", axum::routing::post(import))
}

/// A stored rule as the API shows it.
pub(super) fn rule_json(rule: &StoredRule) -> Value {
    json!({
        "id": rule.id,
        "rule": serde_json::from_str::<Value>(&rule.body).unwrap_or(Value::Null),
        "createdAt": rule.created_at,
        "updatedAt": rule.updated_at,
    })
}

fn list_json(rule_type: RuleType, version: Option<i64>, rules: &[StoredRule]) -> Value {
    json!({
        "ruleType": rule_type.as_str(),
        "managed": version.is_some(),
        "version": version,
        "rules": rules.iter().map(rule_json).collect::<Vec<_>>(),
    })
}

async fn list(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path((app, t)): Path<(String, String)>,
) -> AppResult<Json<Value>> {
    let rule_type = rule_type(&t)?;
    let app = find_app(&state, &app).await?;
    let version = state.db.rule_version(app.id, rule_type.as_str()).await?;
    let rules = state.db.rules(app.id, rule_type.as_str()).await?;
    Ok(Json(list_json(rule_type, version, &rules)))
}

async fn read(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path((app, t, id)): Path<(String, String, i64)>,
) -> AppResult<Json<Value>> {
    let rule_type = rule_type(&t)?;
    let app = find_app(&state, &app).await?;
    let rules = state.db.rules(app.id, rule_type.as_str()).await?;
    let rule = rules
        .iter()
        .find(|r| r.id == id)
        .ok_or(AppError::NotFound("rule"))?;
    Ok(Json(rule_json(rule)))
}

async fn change(
    state: &AppState,
    user: &CurrentUser,
    app: &str,
    t: &str,
    change: Change,
) -> AppResult<(RuleType, ChangeOutcome)> {
    user.require(Role::Editor)?;
    let rule_type = rule_type(t)?;
    let app = find_app(state, app).await?;
    let outcome = state
        .rules
        .apply(state, app.id, rule_type, change, &user.username)
        .await?
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("a user's change was not applied")))?;
    Ok((rule_type, outcome))
}

fn one_rule(body: &[u8]) -> AppResult<Value> {
    let rule = json_body(body)?;
    if !rule.is_object() {
        return Err(AppError::field("rule", "must be a JSON object"));
    }
    Ok(rule)
}

fn saved(status: StatusCode, outcome: &ChangeOutcome) -> Response {
    let rule = outcome
        .rule_id
        .and_then(|id| outcome.rules.iter().find(|r| r.id == id))
        .map(rule_json);
    (
        status,
        Json(json!({"version": outcome.version, "rule": rule, "warnings": outcome.warnings})),
    )
        .into_response()
}

async fn create(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((app, t)): Path<(String, String)>,
    body: Bytes,
) -> AppResult<Response> {
    let rule = one_rule(&body)?;
    let (_, outcome) = change(&state, &user, &app, &t, Change::Create(rule)).await?;
    Ok(saved(StatusCode::CREATED, &outcome))
}

async fn update(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((app, t, id)): Path<(String, String, i64)>,
    body: Bytes,
) -> AppResult<Response> {
    let rule = one_rule(&body)?;
    let (_, outcome) = change(&state, &user, &app, &t, Change::Update { id, rule }).await?;
    Ok(saved(StatusCode::OK, &outcome))
}

async fn remove(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((app, t, id)): Path<(String, String, i64)>,
) -> AppResult<Response> {
    let (_, outcome) = change(&state, &user, &app, &t, Change::Delete(id)).await?;
    Ok(saved(StatusCode::OK, &outcome))
}

async fn replace(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((app, t)): Path<(String, String)>,
    body: Bytes,
) -> AppResult<Json<Value>> {
    let Value::Array(items) = json_body(&body)? else {
        return Err(AppError::field("rules", "must be a JSON array of rules"));
    };
    let (rule_type, outcome) = change(&state, &user, &app, &t, Change::Replace(items)).await?;
    let mut answer = list_json(rule_type, Some(outcome.version), &outcome.rules);
    answer["warnings"] = json!(outcome.warnings);
    Ok(Json(answer))
}

async fn export(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path(app): Path<String>,
) -> AppResult<Json<Value>> {
    let app = find_app(&state, &app).await?;
    let mut lists = Vec::new();
    for t in RuleType::ALL {
        if state.db.rule_version(app.id, t.as_str()).await?.is_some() {
            lists.push((t, state.db.rules(app.id, t.as_str()).await?));
        }
    }
    let doc = RuleDocument::export(&app.name, state.now_ms(), &lists);
    Ok(Json(Value::Object(doc.0)))
}

async fn import(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(app): Path<String>,
    body: Bytes,
) -> AppResult<Json<Value>> {
    user.require(Role::Editor)?;
    let app = find_app(&state, &app).await?;
    let doc = json_body(&body)?;
    let changed = import_document(&state, app.id, &doc, &user.username).await?;
    Ok(Json(json!({
        "imported": changed.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
    })))
}
