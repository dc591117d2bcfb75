//! Assigning an app's machines their cluster roles over the JSON API (editors): `POST
//! /api/apps/{app}/cluster/machines/{id}/server` (optionally `{"port": 18730}`) makes the machine a
//! token server for the app,
//! `POST /api/apps/{app}/cluster/machines/{id}/client` with `{"server": <machine id>}` a client of
//! the token server that machine runs. The steps are [`crate::cluster::assign`]'s.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::{find_app, json_body};
use crate::AppState;
use crate::auth::{CurrentUser, Role};
use crate::cluster::{Assignment, assign};
use crate::error::{AppError, AppResult};

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/apps/{app}/cluster/machines/{id}/server",
            post(make_server),
        )
        .route(
            "/api/apps/{app}/cluster/machines/{id}/client",
            post(make_client),
        )
}

async fn make_server(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((app, id)): Path<(String, i64)>,
    body: Bytes,
) -> AppResult<Json<Value>> {
    user.require(Role::Editor)?;
    let app = find_app(&state, &app).await?;
    let port = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        match json_body(&body)?.get("port") {
            None | Some(Value::Null) => None,
            Some(port) => Some(
                port.as_u64()
                    .and_then(|p| u16::try_from(p).ok())
                    .filter(|p| *p > 0)
                    .ok_or_else(|| AppError::field("port", "must be 1 to 65535"))?,
            ),
        }
    };
    assign(&state, &app, id, Assignment::Server(port), &user.username).await?;
    Ok(Json(json!({"machine": id, "mode": 1})))
}

async fn make_client(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((app, id)): Path<(String, i64)>,
    body: Bytes,
) -> AppResult<Json<Value>> {
    user.require(Role::Editor)?;
    let app = find_app(&state, &app).await?;
    let server = json_body(&body)?
        .get("server")
        .and_then(Value::as_i64)
        .ok_or_else(|| AppError::field("server", "must be the id of the token server's machine"))?;
    assign(
        &state,
        &app,
        id,
        Assignment::ClientOf(server),
        &user.username,
    )
    .await?;
    Ok(Json(json!({"machine": id, "mode": 0, "server": server})))
}
