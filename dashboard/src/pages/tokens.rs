//! The signed-in user's API tokens: the list, a form to create one (its secret shown once, on the
//! page that answers the form) and a delete button each — the JSON API's rules (`routes::tokens`).

use askama::Template;
use axum::extract::{Form, Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::error::{OrPage, PageError, utc};
use super::{Chrome, Page};
use crate::AppState;
use crate::auth::{CurrentUser, SignedInBy};
use crate::error::{AppError, FieldError};
use crate::routes::tokens::{create_token, delete_token};

#[derive(Debug)]
struct TokenRow {
    id: i64,
    name: String,
    created: String,
    last_used: String,
}

/// A token just created: shown once.
#[derive(Debug)]
struct Created {
    name: String,
    secret: String,
}

#[derive(Template)]
#[template(path = "tokens/index.html")]
struct TokensPage {
    chrome: Chrome,
    tokens: Vec<TokenRow>,
    created: Option<Created>,
    name: String,
    name_error: Option<String>,
}

async fn render(
    state: &AppState,
    user: &CurrentUser,
    chrome: Chrome,
    created: Option<Created>,
    name: String,
    errors: Vec<FieldError>,
) -> Result<Response, PageError> {
    let tokens = state
        .db
        .tokens_of_user(user.id)
        .await
        .map_err(AppError::from)
        .or_page(&chrome)?;
    let status = if errors.is_empty() {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::UNPROCESSABLE_ENTITY
    };
    let page = TokensPage {
        tokens: tokens
            .into_iter()
            .map(|t| TokenRow {
                id: t.id,
                name: t.name,
                created: utc(t.created_at),
                last_used: t.last_used_at.map_or("never".to_owned(), utc),
            })
            .collect(),
        created,
        name,
        name_error: errors
            .into_iter()
            .find(|e| e.field == "name")
            .map(|e| e.message),
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
    render(&state, &user, chrome, None, String::new(), Vec::new()).await
}

#[derive(Debug, Deserialize)]
pub(super) struct NewTokenForm {
    #[serde(default)]
    name: String,
}

pub(super) async fn create(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Form(form): Form<NewTokenForm>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    match create_token(&state, &user, &form.name).await {
        Ok((stored, secret)) => {
            let created = Created {
                name: stored.name,
                secret,
            };
            render(
                &state,
                &user,
                chrome,
                Some(created),
                String::new(),
                Vec::new(),
            )
            .await
        }
        Err(AppError::Invalid(errors)) => {
            render(&state, &user, chrome, None, form.name, errors).await
        }
        Err(e) => Err(e).or_page(&chrome),
    }
}

pub(super) async fn delete(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path(id): Path<i64>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    delete_token(&state, &user, id).await.or_page(&chrome)?;
    Ok(Redirect::to("/tokens").into_response())
}
