//! Users, roles, sessions and API tokens. (Interface stub: the implementation lands with the auth work.)

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::config::Config;
use crate::db::Db;
use crate::error::{AppError, AppResult};

/// What a user may do; each role may do everything the ones before it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Sees everything, changes nothing.
    Viewer,
    /// Also changes rules.
    Editor,
    /// Also manages users.
    Admin,
}

impl Role {
    /// The role's name (`viewer`, `editor`, `admin`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Editor => "editor",
            Role::Admin => "admin",
        }
    }

    /// The role named `s`.
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "viewer" => Some(Role::Viewer),
            "editor" => Some(Role::Editor),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }
}

/// The signed-in user of a request (by session cookie or API token).
#[derive(Debug, Clone)]
pub struct CurrentUser {
    /// The user's id.
    pub id: i64,
    /// The user's name (recorded as the actor of changes).
    pub username: String,
    /// The user's role.
    pub role: Role,
}

impl CurrentUser {
    /// Refuses with 403 unless the user has at least `role`.
    pub fn require(&self, role: Role) -> AppResult<()> {
        if self.role >= role {
            Ok(())
        } else {
            Err(AppError::Forbidden("your role does not allow this"))
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for CurrentUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<CurrentUser>()
            .cloned()
            .ok_or(AppError::Unauthorized)
    }
}

/// In-memory sign-in state (login throttling).
#[derive(Debug, Default)]
pub struct AuthState {}

/// Middleware: finds the user of a session cookie or API token, refuses without one (401), checks
/// the CSRF token of a session's state-changing request (403), and passes the user on.
pub async fn require_user(
    State(_state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if request.extensions().get::<CurrentUser>().is_none() {
        return AppError::Unauthorized.into_response();
    }
    next.run(request).await
}

/// Creates the first admin when there is no user: with `--admin-password` / `FLOODGATE_ADMIN_PASSWORD`,
/// or a generated password, returned so that it is printed once.
pub async fn ensure_first_admin(
    _db: &Db,
    _config: &Config,
    _now: i64,
) -> anyhow::Result<Option<String>> {
    Ok(None)
}
