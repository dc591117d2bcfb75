//! API tokens of the signed-in user: list them, create one (its secret is shown in that answer
//! only), delete one. A token acts as its user, with the user's current role, and needs no CSRF
//! token.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::auth::json_body;
use crate::AppState;
use crate::auth::{CurrentUser, session};
use crate::db::ApiToken;
use crate::error::{AppError, AppResult};

/// The most characters a token's name may have.
const MAX_NAME_LEN: usize = 100;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/tokens", get(list).post(create))
        .route("/api/tokens/{id}", delete(remove))
}

/// A token as the API lists it (never its secret).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenView {
    id: i64,
    name: String,
    created_at: i64,
    last_used_at: Option<i64>,
}

impl From<ApiToken> for TokenView {
    fn from(t: ApiToken) -> Self {
        TokenView {
            id: t.id,
            name: t.name,
            created_at: t.created_at,
            last_used_at: t.last_used_at,
        }
    }
}

async fn list(State(state): State<AppState>, user: CurrentUser) -> AppResult<Json<Vec<TokenView>>> {
    let tokens = state.db.tokens_of_user(user.id).await?;
    Ok(Json(tokens.into_iter().map(TokenView::from).collect()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewToken {
    name: String,
}

#[derive(Debug, Serialize)]
struct CreatedToken {
    id: i64,
    name: String,
    /// The secret, shown this once.
    token: String,
}

/// Creates an API token named `name` for `user`; returns it and its secret (shown this once).
pub(crate) async fn create_token(
    state: &AppState,
    user: &CurrentUser,
    name: &str,
) -> AppResult<(ApiToken, String)> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_LEN {
        return Err(AppError::field("name", "must have 1 to 100 characters"));
    }
    if name.chars().any(char::is_control) {
        return Err(AppError::field(
            "name",
            "must not contain control characters",
        ));
    }
    let token = session::new_api_token().map_err(|e| AppError::Internal(e.into()))?;
    let stored = state
        .db
        .create_token(user.id, name, &session::digest(&token), state.now_ms())
        .await?;
    tracing::info!(
        target: "floodgate_dashboard::audit",
        user = %user.username,
        token_id = stored.id,
        "api token created"
    );
    Ok((stored, token))
}

async fn create(
    State(state): State<AppState>,
    user: CurrentUser,
    body: Result<Json<NewToken>, JsonRejection>,
) -> AppResult<(StatusCode, Json<CreatedToken>)> {
    let new = json_body(body)?;
    let (stored, token) = create_token(&state, &user, &new.name).await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedToken {
            id: stored.id,
            name: stored.name,
            token,
        }),
    ))
}

/// Deletes token `id` of `user` (404 when the user has no such token).
pub(crate) async fn delete_token(state: &AppState, user: &CurrentUser, id: i64) -> AppResult<()> {
    if state.db.delete_token(user.id, id).await? {
        tracing::info!(
            target: "floodgate_dashboard::audit",
            user = %user.username,
            token_id = id,
            "api token deleted"
        );
        Ok(())
    } else {
        Err(AppError::NotFound("token"))
    }
}

async fn remove(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<i64>,
) -> AppResult<StatusCode> {
    delete_token(&state, &user, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
