//! `/registry/machine`: heartbeats, GET with a query string or POST with a form (the Java client's
//! way), answered with Sentinel's `Result` JSON. Open without sign-in, so it trusts nothing: see
//! [`crate::registry`].

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::AppState;
use crate::db::{HeartbeatRecord, Recorded};
use crate::events::Event;
use crate::registry::parse_heartbeat;

/// A heartbeat is a few hundred bytes.
const MAX_HEARTBEAT_BYTES: usize = 16 * 1024;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/registry/machine", get(heartbeat).post(heartbeat))
        .layer(DefaultBodyLimit::max(MAX_HEARTBEAT_BYTES))
}

fn answer(status: StatusCode, msg: &str) -> Response {
    let ok = status == StatusCode::OK;
    (
        status,
        Json(json!({
            "success": ok,
            "code": if ok { 0 } else { -1 },
            "msg": msg,
            "data": null,
        })),
    )
        .into_response()
}

async fn heartbeat(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut params: Vec<(String, String)> = query
        .as_deref()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    if !body.is_empty() {
        if !crate::auth::is_form_body(&headers) {
            return answer(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "heartbeats are forms (application/x-www-form-urlencoded)",
            );
        }
        params.extend(form_urlencoded::parse(&body).into_owned());
    }
    let registration = match parse_heartbeat(&params) {
        Ok(r) => r,
        Err(e) => {
            return answer(
                StatusCode::BAD_REQUEST,
                &format!("{}: {}", e.field, e.message),
            );
        }
    };
    if let Err(refusal) = state.gate.admit(&registration) {
        tracing::warn!(
            target: "floodgate_dashboard::audit",
            app = %registration.app,
            ip = %registration.ip,
            port = registration.port,
            %refusal,
            "heartbeat refused"
        );
        return answer(StatusCode::FORBIDDEN, &refusal.to_string());
    }
    let ip = registration.ip.to_string();
    let record = HeartbeatRecord {
        app: &registration.app,
        app_type: registration.app_type,
        ip: &ip,
        port: registration.port,
        hostname: &registration.hostname,
        sentinel_version: &registration.sentinel_version,
        agent_token: registration.token.as_deref(),
    };
    let limits = state.config.registry_limits();
    match state
        .db
        .record_heartbeat(&record, state.now_ms(), limits)
        .await
    {
        Ok(Recorded::Machine { machine, previous }) => {
            let first = previous.is_none();
            let was_unhealthy = previous.is_some_and(|p| p < state.healthy_since());
            if first || was_unhealthy {
                tracing::info!(app = %machine.app, ip = %machine.ip, port = machine.port, first, "machine registered");
            }
            state.events.send(Event::Heartbeat {
                machine_id: machine.id,
                first,
            });
            state.pusher.reconcile(machine.id);
            answer(StatusCode::OK, "success")
        }
        Ok(Recorded::TooManyApps) => {
            tracing::warn!(target: "floodgate_dashboard::audit", app = %registration.app, "heartbeat refused: too many apps");
            answer(StatusCode::FORBIDDEN, "too many apps")
        }
        Ok(Recorded::TooManyMachines) => {
            tracing::warn!(target: "floodgate_dashboard::audit", app = %registration.app, "heartbeat refused: too many machines");
            answer(StatusCode::FORBIDDEN, "too many machines for this app")
        }
        Err(e) => {
            tracing::error!(error = %e, "heartbeat not recorded");
            answer(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
        }
    }
}
