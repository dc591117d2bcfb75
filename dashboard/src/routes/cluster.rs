//! Assigning an app's machines their cluster roles over the JSON API (editors): `POST
//! /api/apps/{app}/cluster/machines/{id}/server` makes the machine a token server for the app,
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
) -> AppResult<Json<Value>> {
    user.require(Role::Editor)?;
    let app = find_app(&state, &app).await?;
    assign(&state, &app, id, Assignment::Server, &user.username).await?;
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
