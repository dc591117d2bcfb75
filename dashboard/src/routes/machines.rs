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

/// How the last push of one rule type to one machine went.
#[derive(Debug, Clone)]
pub(crate) struct PushState {
    /// `ok`, `failed`, `not supported`, `pending` (the type is managed, nothing pushed yet) or
    /// `unmanaged` (the app has never managed the type).
    pub(crate) status: &'static str,
    /// The last push, when there was one.
    pub(crate) record: Option<PushRecord>,
    /// The machine has not taken the newest list (a push pending, failed, or a drift found).
    pub(crate) behind: bool,
}

fn push_state(record: Option<&PushRecord>, version: Option<i64>) -> PushState {
    match record {
        Some(r) => PushState {
            status: if r.message == "not supported" {
                "not supported"
            } else if r.ok {
                "ok"
            } else {
                "failed"
            },
            behind: version.is_some_and(|v| r.version < v || !r.ok),
            record: Some(r.clone()),
        },
        None => PushState {
            status: if version.is_some() {
                "pending"
            } else {
                "unmanaged"
            },
            record: None,
            behind: false,
        },
    }
}

fn push_json(state: &PushState) -> Value {
    match &state.record {
        Some(record) => json!({
            "status": state.status,
            "version": record.version,
            "message": record.message,
            "attempts": record.attempts,
            "at": record.at,
            "nextRetryAt": record.next_retry_at,
            "behind": state.behind,
        }),
        None => json!({"status": state.status}),
    }
}

/// The version of each type's list of app `app_id` (`None`: never managed).
pub(crate) async fn versions(
    state: &AppState,
    app_id: i64,
) -> AppResult<HashMap<RuleType, Option<i64>>> {
    let mut out = HashMap::new();
    for t in RuleType::ALL {
        out.insert(t, state.db.rule_version(app_id, t.as_str()).await?);
    }
    Ok(out)
}

/// The push state of each rule type on machine `m` (in [`RuleType::ALL`]'s order), and whether
/// the machine drifts from the stored rules.
pub(crate) fn machine_pushes(
    m: &Machine,
    pushes: &[PushRecord],
    versions: &HashMap<RuleType, Option<i64>>,
) -> (Vec<(RuleType, PushState)>, bool) {
    let mut out = Vec::with_capacity(RuleType::ALL.len());
    let mut drift = false;
    for t in RuleType::ALL {
        let version = versions.get(&t).copied().flatten();
        let record = pushes
            .iter()
            .find(|p| p.machine_id == m.id && p.rule_type == t.as_str());
        let pushed = push_state(record, version);
        drift |= pushed.behind || (version.is_some() && record.is_none());
        out.push((t, pushed));
    }
    (out, drift)
}

fn machine_json(
    state: &AppState,
    m: &Machine,
    pushes: &[PushRecord],
    versions: &HashMap<RuleType, Option<i64>>,
) -> Value {
    let (by_type, drift) = machine_pushes(m, pushes, versions);
    let by_type: serde_json::Map<String, Value> = by_type
        .iter()
        .map(|(t, p)| (t.as_str().to_owned(), push_json(p)))
        .collect();
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
pub(crate) async fn machine_target(
    state: &AppState,
    app_id: i64,
    id: i64,
) -> AppResult<(Machine, Target)> {
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

/// The live resources of `target`: its call tree (`jsonTree`, each node with `id` and `parentId`)
/// when `view` is `tree`, one node per resource (`clusterNode`) when it is `list`.
pub(crate) async fn live_resources(
    state: &AppState,
    target: &Target,
    view: &str,
) -> AppResult<Vec<Value>> {
    let text = match view {
        "tree" => {
            state
                .agents
                .get(target, "jsonTree", &[("type", "root")])
                .await
        }
        "list" => state.agents.get(target, "clusterNode", &[]).await,
        _ => return Err(AppError::field("view", "must be tree or list")),
    }
    .map_err(agent_failure)?;
    let nodes: Value = serde_json::from_str(&text)
        .map_err(|_| AppError::Upstream("its answer is not JSON".into()))?;
    match nodes {
        Value::Array(nodes) => Ok(nodes),
        _ => Err(AppError::Upstream("its answer is not a list".into())),
    }
}

async fn resources(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path((app, id)): Path<(String, i64)>,
    Query(q): Query<ResourcesQuery>,
) -> AppResult<Json<Value>> {
    let app = find_app(&state, &app).await?;
    let (_, target) = machine_target(&state, app.id, id).await?;
    let nodes = live_resources(&state, &target, q.view.as_deref().unwrap_or("list")).await?;
    Ok(Json(Value::Array(nodes)))
}

/// The circuit breakers of one machine, as it answered `circuitBreakers`.
#[derive(Debug, Clone)]
pub(crate) struct MachineBreakers {
    /// The machine.
    pub(crate) machine: Machine,
    /// `ok`, `not supported` (a Java client), `bad answer`, or why the call failed.
    pub(crate) status: String,
    /// Its breakers (`Null` unless `status` is `ok`).
    pub(crate) breakers: Value,
}

/// The circuit breakers of every healthy machine of app `app_id`, asked concurrently.
pub(crate) async fn breakers_of_app(
    state: &AppState,
    app_id: i64,
) -> AppResult<Vec<MachineBreakers>> {
    let machines = state
        .db
        .healthy_machines(Some(app_id), state.healthy_since())
        .await?;
    let calls = machines.into_iter().map(|m| {
        let state = state.clone();
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
            MachineBreakers {
                machine: m,
                status,
                breakers,
            }
        }
    });
    Ok(join_all(calls).await)
}

async fn circuit_breakers(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path(app): Path<String>,
) -> AppResult<Json<Value>> {
    let app = find_app(&state, &app).await?;
    let results = breakers_of_app(&state, app.id)
        .await?
        .into_iter()
        .map(|b| {
            json!({
                "machine": b.machine.id,
                "address": machine_addr(&b.machine),
                "status": b.status,
                "breakers": b.breakers,
            })
        })
        .collect();
    Ok(Json(Value::Array(results)))
}

/// Awaits every future, concurrently (in order; a task that panicked is left out).
pub(crate) async fn join_all<
    T: Send + 'static,
    F: std::future::Future<Output = T> + Send + 'static,
>(
    futures: impl Iterator<Item = F>,
) -> Vec<T> {
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        if let Ok(v) = h.await {
            out.push(v);
        }
    }
    out
}
