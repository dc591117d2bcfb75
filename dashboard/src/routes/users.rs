//! User management, for admins: list, create, change the role or password of, and delete users.
//! A change of role or password ends the user's sessions; the last admin can be neither demoted
//! nor deleted (409).

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::auth::json_body;
use crate::AppState;
use crate::auth::{self, CurrentUser, Role, password};
use crate::db::{User, UserChange, is_unique_violation};
use crate::error::{AppError, AppResult, FieldError};

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/users", get(list).post(create))
        .route("/api/users/{id}", put(update).delete(delete))
}

/// A user as the API shows it (never the password hash).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct UserView {
    id: i64,
    username: String,
    role: String,
    created_at: i64,
}

impl From<User> for UserView {
    fn from(u: User) -> Self {
        UserView {
            id: u.id,
            username: u.username,
            role: u.role,
            created_at: u.created_at,
        }
    }
}

async fn list(State(state): State<AppState>, user: CurrentUser) -> AppResult<Json<Vec<UserView>>> {
    user.require(Role::Admin)?;
    let users = state.db.users().await?;
    Ok(Json(users.into_iter().map(UserView::from).collect()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewUser {
    username: String,
    password: String,
    role: String,
}

/// The field errors of `result`, added to `errors`.
fn collect(errors: &mut Vec<FieldError>, result: AppResult<()>) -> AppResult<()> {
    match result {
        Ok(()) => Ok(()),
        Err(AppError::Invalid(fields)) => {
            errors.extend(fields);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn parse_role(role: &str) -> AppResult<Role> {
    Role::parse(role).ok_or_else(|| AppError::field("role", "must be viewer, editor or admin"))
}

/// Creates user `username` with `password` and `role`, as `actor` (an admin): the same checks for
/// the JSON API and the page (field errors for every bad field at once; a taken name is a conflict).
pub(crate) async fn create_user(
    state: &AppState,
    actor: &CurrentUser,
    username: &str,
    password: String,
    role: &str,
) -> AppResult<User> {
    actor.require(Role::Admin)?;
    let mut errors = Vec::new();
    collect(&mut errors, password::validate_username(username))?;
    collect(
        &mut errors,
        password::validate_password("password", &password),
    )?;
    let role = match parse_role(role) {
        Ok(role) => Some(role),
        Err(e) => {
            collect(&mut errors, Err(e))?;
            None
        }
    };
    let (Some(role), true) = (role, errors.is_empty()) else {
        return Err(AppError::Invalid(errors));
    };
    let hash = auth::hash_blocking(password).await?;
    let created = state
        .db
        .create_user(username, &hash, role.as_str(), state.now_ms())
        .await
        .map_err(|e| {
            if is_unique_violation(&e) {
                AppError::Conflict(format!("user {username} already exists"))
            } else {
                e.into()
            }
        })?;
    tracing::info!(
        target: "floodgate_dashboard::audit",
        actor = %actor.username,
        user = %created.username,
        role = role.as_str(),
        "user created"
    );
    Ok(created)
}

async fn create(
    State(state): State<AppState>,
    user: CurrentUser,
    body: Result<Json<NewUser>, JsonRejection>,
) -> AppResult<(StatusCode, Json<UserView>)> {
    user.require(Role::Admin)?;
    let new = json_body(body)?;
    let created = create_user(&state, &user, &new.username, new.password, &new.role).await?;
    Ok((StatusCode::CREATED, Json(created.into())))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserUpdate {
    role: Option<String>,
    password: Option<String>,
}

/// Changes the role and/or password of user `id`, as `actor` (an admin); the last admin cannot be
/// demoted (a conflict).
pub(crate) async fn update_user(
    state: &AppState,
    actor: &CurrentUser,
    id: i64,
    role: Option<&str>,
    new_password: Option<String>,
) -> AppResult<User> {
    actor.require(Role::Admin)?;
    let mut errors = Vec::new();
    let role = match role.map(parse_role) {
        Some(Ok(role)) => Some(role),
        Some(Err(e)) => {
            collect(&mut errors, Err(e))?;
            None
        }
        None => None,
    };
    if let Some(p) = &new_password {
        collect(&mut errors, password::validate_password("password", p))?;
    }
    if role.is_none() && new_password.is_none() && errors.is_empty() {
        errors.push(FieldError {
            index: None,
            field: "role".to_owned(),
            message: "give a role, a password, or both".to_owned(),
        });
    }
    if !errors.is_empty() {
        return Err(AppError::Invalid(errors));
    }
    let hash = match new_password {
        Some(p) => Some(auth::hash_blocking(p).await?),
        None => None,
    };
    match state
        .db
        .update_user(id, role.map(Role::as_str), hash.as_deref())
        .await?
    {
        UserChange::Done => {}
        UserChange::NotFound => return Err(AppError::NotFound("user")),
        UserChange::LastAdmin => {
            return Err(AppError::Conflict(
                "the last admin cannot be demoted".to_owned(),
            ));
        }
    }
    let updated = state.db.user(id).await?.ok_or(AppError::NotFound("user"))?;
    tracing::info!(
        target: "floodgate_dashboard::audit",
        actor = %actor.username,
        user = %updated.username,
        role = %updated.role,
        password_changed = hash.is_some(),
        "user changed"
    );
    Ok(updated)
}

async fn update(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<i64>,
    body: Result<Json<UserUpdate>, JsonRejection>,
) -> AppResult<Json<UserView>> {
    user.require(Role::Admin)?;
    let update = json_body(body)?;
    let updated = update_user(&state, &user, id, update.role.as_deref(), update.password).await?;
    Ok(Json(updated.into()))
}

/// Deletes user `id`, as `actor` (an admin), unless it is the last admin (a conflict).
pub(crate) async fn delete_user(state: &AppState, actor: &CurrentUser, id: i64) -> AppResult<()> {
    actor.require(Role::Admin)?;
    match state.db.delete_user(id).await? {
        UserChange::Done => {
            tracing::info!(
                target: "floodgate_dashboard::audit",
                actor = %actor.username,
                user_id = id,
                "user deleted"
            );
            Ok(())
        }
        UserChange::NotFound => Err(AppError::NotFound("user")),
        UserChange::LastAdmin => Err(AppError::Conflict(
            "the last admin cannot be deleted".to_owned(),
        )),
    }
}

async fn delete(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<i64>,
) -> AppResult<StatusCode> {
    delete_user(&state, &user, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
