//! `GET /api/apps`: every app with its machines' health.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::AppState;
use crate::auth::CurrentUser;
use crate::error::AppResult;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/api/apps", get(list))
}

async fn list(State(state): State<AppState>, _user: CurrentUser) -> AppResult<Json<Value>> {
    let since = state.healthy_since();
    let mut out = Vec::new();
    for app in state.db.apps().await? {
        let machines = state.db.machines_of_app(app.id).await?;
        let healthy = machines
            .iter()
            .filter(|m| m.last_heartbeat >= since)
            .count();
        out.push(json!({
            "name": app.name,
            "appType": app.app_type,
            "machines": {"healthy": healthy, "total": machines.len()},
            "lastHeartbeat": machines.iter().map(|m| m.last_heartbeat).max(),
        }));
    }
    Ok(Json(Value::Array(out)))
}
