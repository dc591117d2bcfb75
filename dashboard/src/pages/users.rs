//! User management, for admins: the users with their roles, and forms to create a user, change a
//! role, reset a password and delete a user — the JSON API's rules (`routes::users`): field errors
//! next to their field, and the last admin can be neither demoted nor deleted.

use askama::Template;
use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::error::{OrPage, PageError, utc};
use super::{Chrome, Page};
use crate::AppState;
use crate::auth::{CurrentUser, Role, SignedInBy};
use crate::error::{AppError, FieldError};
use crate::routes::users::{create_user, delete_user, update_user};

#[derive(Debug)]
struct UserRow {
    id: i64,
    username: String,
    role: String,
    created: String,
    is_me: bool,
}

/// The form that was sent, and what was wrong with it.
#[derive(Debug, Default)]
struct Problem {
    /// `create`, or the id of the user whose form it was.
    form: Option<i64>,
    create: bool,
    errors: Vec<FieldError>,
    /// A refusal that is not one field's (the last admin).
    message: String,
}

impl Problem {
    fn error(&self, field: &str) -> Option<&str> {
        self.errors
            .iter()
            .find(|e| e.field == field)
            .map(|e| e.message.as_str())
    }

    /// The error of `field` in the create form.
    fn create_error(&self, field: &str) -> Option<&str> {
        if self.create { self.error(field) } else { None }
    }

    /// The error of `field` in the forms of user `id`.
    fn user_error(&self, id: &i64, field: &str) -> Option<&str> {
        if self.form == Some(*id) {
            self.error(field)
        } else {
            None
        }
    }
}

#[derive(Template)]
#[template(path = "users/index.html")]
struct UsersPage {
    chrome: Chrome,
    users: Vec<UserRow>,
    roles: [&'static str; 3],
    problem: Problem,
    /// What the create form keeps after an error (never the password).
    new_username: String,
    new_role: String,
    notice: String,
}

async fn render(
    state: &AppState,
    user: &CurrentUser,
    chrome: Chrome,
    status: StatusCode,
    problem: Problem,
    new_username: String,
    new_role: String,
) -> Result<Response, PageError> {
    let users = state
        .db
        .users()
        .await
        .map_err(AppError::from)
        .or_page(&chrome)?;
    let page = UsersPage {
        users: users
            .into_iter()
            .map(|u| UserRow {
                is_me: u.id == user.id,
                id: u.id,
                username: u.username,
                role: u.role,
                created: utc(u.created_at),
            })
            .collect(),
        roles: [
            Role::Viewer.as_str(),
            Role::Editor.as_str(),
            Role::Admin.as_str(),
        ],
        notice: problem.message.clone(),
        problem,
        new_username,
        new_role,
        chrome,
    };
    Ok((status, Page(page)).into_response())
}

pub(super) async fn index(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    user.require(Role::Admin).or_page(&chrome)?;
    render(
        &state,
        &user,
        chrome,
        StatusCode::OK,
        Problem::default(),
        String::new(),
        Role::Viewer.as_str().to_owned(),
    )
    .await
}

/// After a change, back to the list.
fn done() -> Response {
    Redirect::to("/users").into_response()
}

/// The page again with `error` shown at the form it belongs to (a field error next to its field),
/// or the error page for anything else.
async fn refused(
    state: &AppState,
    user: &CurrentUser,
    chrome: Chrome,
    form: Option<i64>,
    error: AppError,
    new_username: String,
    new_role: String,
) -> Result<Response, PageError> {
    let status = error.status();
    let problem = match error {
        AppError::Invalid(errors) => Problem {
            form,
            create: form.is_none(),
            errors,
            message: String::new(),
        },
        AppError::Conflict(message) if form.is_none() => Problem {
            form,
            create: true,
            errors: vec![FieldError {
                index: None,
                field: "username".to_owned(),
                message,
            }],
            message: String::new(),
        },
        AppError::Conflict(message) => Problem {
            form,
            create: false,
            errors: Vec::new(),
            message,
        },
        other => return Err(other).or_page(&chrome),
    };
    render(state, user, chrome, status, problem, new_username, new_role).await
}

#[derive(Debug, Deserialize)]
pub(super) struct NewUserForm {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    role: String,
}

pub(super) async fn create(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Form(form): Form<NewUserForm>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    user.require(Role::Admin).or_page(&chrome)?;
    match create_user(&state, &user, &form.username, form.password, &form.role).await {
        Ok(_) => Ok(done()),
        Err(e) => refused(&state, &user, chrome, None, e, form.username, form.role).await,
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct RoleForm {
    #[serde(default)]
    role: String,
}

pub(super) async fn set_role(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path(id): Path<i64>,
    Form(form): Form<RoleForm>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    user.require(Role::Admin).or_page(&chrome)?;
    match update_user(&state, &user, id, Some(&form.role), None).await {
        Ok(_) => Ok(done()),
        Err(e) => {
            refused(
                &state,
                &user,
                chrome,
                Some(id),
                e,
                String::new(),
                "viewer".into(),
            )
            .await
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct PasswordForm {
    #[serde(default)]
    password: String,
}

pub(super) async fn set_password(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path(id): Path<i64>,
    Form(form): Form<PasswordForm>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    user.require(Role::Admin).or_page(&chrome)?;
    match update_user(&state, &user, id, None, Some(form.password)).await {
        Ok(_) => Ok(done()),
        Err(e) => {
            refused(
                &state,
                &user,
                chrome,
                Some(id),
                e,
                String::new(),
                "viewer".into(),
            )
            .await
        }
    }
}

pub(super) async fn delete(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path(id): Path<i64>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    user.require(Role::Admin).or_page(&chrome)?;
    match delete_user(&state, &user, id).await {
        Ok(()) => Ok(done()),
        Err(e) => {
            refused(
                &state,
                &user,
                chrome,
                Some(id),
                e,
                String::new(),
                "viewer".into(),
            )
            .await
        }
    }
}
