//! What every page shares: [`Chrome`] (who is signed in, their role, the CSRF token forms carry)
//! and [`Page`], which renders an askama template into a response (a render error is a 500).

use askama::Template;
use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

use crate::auth::{CurrentUser, Role, SignedInBy};
use crate::error::AppError;

/// The signed-in user as the page header shows them, and the token every form posts back.
#[derive(Debug, Clone)]
pub struct Chrome {
    /// The user's name.
    pub username: String,
    /// `viewer`, `editor` or `admin`.
    pub role: &'static str,
    /// Whether the user may change rules.
    pub can_edit: bool,
    /// Whether the user manages users.
    pub is_admin: bool,
    /// The session's CSRF token (empty for API-token requests, which need none).
    pub csrf: String,
}

impl Chrome {
    /// The chrome of a request by `user`, signed in by `by`.
    pub fn new(user: &CurrentUser, by: &SignedInBy) -> Chrome {
        Chrome {
            username: user.username.clone(),
            role: user.role.as_str(),
            can_edit: user.role >= Role::Editor,
            is_admin: user.role >= Role::Admin,
            csrf: match by {
                SignedInBy::Session { csrf_token, .. } => csrf_token.clone(),
                SignedInBy::Token { .. } => String::new(),
            },
        }
    }
}

/// A rendered page (never cached: it shows live state and carries the CSRF token).
#[derive(Debug)]
pub struct Page<T>(pub T);

impl<T: Template> IntoResponse for Page<T> {
    fn into_response(self) -> Response {
        match self.0.render() {
            Ok(html) => (
                [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
                Html(html),
            )
                .into_response(),
            Err(e) => {
                AppError::Internal(anyhow::anyhow!("a page did not render: {e}")).into_response()
            }
        }
    }
}
