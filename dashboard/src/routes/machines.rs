//! An app's machines: health, versions, the last push of each rule type, drift; a machine's live
//! resources (`jsonTree` / `clusterNode`); and the circuit breakers of every healthy machine.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use floodgate_core::RuleType;
use serde::Deserialize;
use serde_json::{Value, json};

use super::find_app;
use crate::AppState;
use crate::agent_client::{CallError, Target};
use crate::auth::{CurrentUser, Role};
use crate::db::{Machine, PushRecord};
use crate::error::{AppError, AppResult};
use crate::push::machine_addr;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/apps/{app}/machines", get(list))
        .route("/api/apps/{app}/machines/{id}/resources", get(resources))
        .route("/api/apps/{app}/push-status", get(push_status))
        .route("/api/apps/{app}/push", post(push_now))
        .route("/api/apps/{app}/circuit-breakers", get(circuit_breakers))
}

fn push_json(record: &PushRecord, version: Option<i64>) -> Value {
    let status = if record.message == "not supported" {
        "not supported"
    } else if record.ok {
        "ok"
    } else {
        "failed"
    };
    json!({
        "status": status,
        "version": record.version,
        "message": record.message,
        "attempts": record.attempts,
        "at": record.at,
        "nextRetryAt": record.next_retry_at,
        // The machine has not taken the newest list (a push pending, failed, or a drift found).
        "behind": version.is_some_and(|v| record.version < v || !record.ok),
    })
}

async fn versions(state: &AppState, app_id: i64) -> AppResult<HashMap<RuleType, Option<i64>>> {
    let mut out = HashMap::new();
    for t in RuleType::ALL {
        out.insert(t, state.db.rule_version(app_id, t.as_str()).await?);
    }
    Ok(out)
}

fn machine_json(
    state: &AppState,
    m: &Machine,
    pushes: &[PushRecord],
    versions: &HashMap<RuleType, Option<i64>>,
) -> Value {
    let mut by_type = serde_json::Map::new();
    let mut drift = false;
    for t in RuleType::ALL {
        let version = versions.get(&t).copied().flatten();
        let record = pushes
            .iter()
            .find(|p| p.machine_id == m.id && p.rule_type == t.as_str());
        let value = match record {
            Some(r) => push_json(r, version),
            None => json!({"status": if version.is_some() { "pending" } else { "unmanaged" }}),
        };
        drift |=
            value["behind"].as_bool().unwrap_or(false) || (version.is_some() && record.is_none());
        by_type.insert(t.as_str().to_owned(), value);
    }
    json!({
        "id": m.id,
        "address": machine_addr(m),
        "ip": m.ip,
        "port": m.port,
        "hostname": m.hostname,
        "sentinelVersion": m.sentinel_version,
        "firstSeen": m.first_seen,
        "lastHeartbeat": m.last_heartbeat,
        "healthy": m.last_heartbeat >= state.healthy_since(),
        "pushes": by_type,
        "drift": drift,
    })
}

async fn list(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path(app): Path<String>,
) -> AppResult<Json<Value>> {
    let app = find_app(&state, &app).await?;
    let machines = state.db.machines_of_app(app.id).await?;
    let pushes = state.db.pushes_of_app(app.id).await?;
    let versions = versions(&state, app.id).await?;
    Ok(Json(Value::Array(
        machines
            .iter()
            .map(|m| machine_json(&state, m, &pushes, &versions))
            .collect(),
    )))
}

async fn push_status(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path(app): Path<String>,
) -> AppResult<Json<Value>> {
    let app = find_app(&state, &app).await?;
    let machines = state.db.machines_of_app(app.id).await?;
    let pushes = state.db.pushes_of_app(app.id).await?;
    let versions = versions(&state, app.id).await?;
    let versions_json: serde_json::Map<String, Value> = versions
        .iter()
        .map(|(t, v)| (t.as_str().to_owned(), json!(v)))
        .collect();
    let machines: Vec<Value> = machines
        .iter()
        .filter(|m| m.last_heartbeat >= state.healthy_since())
        .map(|m| machine_json(&state, m, &pushes, &versions))
        .collect();
    let in_sync = machines.iter().all(|m| m["drift"] == false);
    Ok(Json(json!({
        "versions": versions_json,
        "machines": machines,
        "inSync": in_sync,
    })))
}

async fn push_now(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(app): Path<String>,
) -> AppResult<Json<Value>> {
    user.require(Role::Editor)?;
    let app = find_app(&state, &app).await?;
    state.pusher.push_all(app.id);
    Ok(Json(json!({"queued": true})))
}

/// The machine `id` of `app`, and where to call it.
async fn machine_target(state: &AppState, app_id: i64, id: i64) -> AppResult<(Machine, Target)> {
    let machine = state
        .db
        .machine(id)
        .await?
        .filter(|m| m.app_id == app_id)
        .ok_or(AppError::NotFound("machine"))?;
    let target = Target::new(&machine.ip, machine.port, machine.agent_token.clone())
        .filter(|t| state.gate.may_call(t.addr.ip()))
        .ok_or(AppError::Forbidden("the machine's address is not allowed"))?;
    Ok((machine, target))
}

#[derive(Debug, Deserialize)]
struct ResourcesQuery {
    /// `tree` (the call tree, `jsonTree`) or `list` (one node per resource, `clusterNode`).
    view: Option<String>,
}

fn agent_failure(e: CallError) -> AppError {
    AppError::Upstream(e.to_string())
}

async fn resources(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path((app, id)): Path<(String, i64)>,
    Query(q): Query<ResourcesQuery>,
) -> AppResult<Json<Value>> {
    let app = find_app(&state, &app).await?;
    let (_, target) = machine_target(&state, app.id, id).await?;
    let text = match q.view.as_deref().unwrap_or("list") {
        "tree" => {
            state
                .agents
                .get(&target, "jsonTree", &[("type", "root")])
                .await
        }
        "list" => state.agents.get(&target, "clusterNode", &[]).await,
        _ => return Err(AppError::field("view", "must be tree or list")),
    }
    .map_err(agent_failure)?;
    let nodes: Value = serde_json::from_str(&text)
        .map_err(|_| AppError::Upstream("its answer is not JSON".into()))?;
    if !nodes.is_array() {
        return Err(AppError::Upstream("its answer is not a list".into()));
    }
    Ok(Json(nodes))
}

async fn circuit_breakers(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path(app): Path<String>,
) -> AppResult<Json<Value>> {
    let app = find_app(&state, &app).await?;
    let machines = state
        .db
        .healthy_machines(Some(app.id), state.healthy_since())
        .await?;
    let calls = machines.iter().map(|m| {
        let state = state.clone();
        let m = m.clone();
        async move {
            let target = Target::new(&m.ip, m.port, m.agent_token.clone())
                .filter(|t| state.gate.may_call(t.addr.ip()));
            let answer = match target {
                None => Err(CallError::Connect("address not allowed".into())),
                Some(t) => state.agents.get(&t, "circuitBreakers", &[]).await,
            };
            let (status, breakers) = match answer {
                Ok(text) => match serde_json::from_str::<Value>(&text) {
                    Ok(v @ Value::Array(_)) => ("ok".to_owned(), v),
                    _ => ("bad answer".to_owned(), Value::Null),
                },
                Err(CallError::NotSupported) => ("not supported".to_owned(), Value::Null),
                Err(e) => (e.to_string(), Value::Null),
            };
            json!({
                "machine": m.id,
                "address": machine_addr(&m),
                "status": status,
                "breakers": breakers,
            })
        }
    });
    let results = join_all(calls).await;
    Ok(Json(Value::Array(results)))
}

/// Awaits every future, concurrently.
async fn join_all<F: std::future::Future<Output = Value> + Send + 'static>(
    futures: impl Iterator<Item = F>,
) -> Vec<Value> {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.unwrap_or(Value::Null));
    }
    out
}
