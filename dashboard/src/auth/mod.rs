//! Users, roles, sessions and API tokens: who a request is, and what they may do.
//!
//! A request signs in with the session cookie (set by `POST /auth/login`) or with
//! `Authorization: Bearer fgt_…` (an API token). [`require_user`] finds the user, refuses a
//! session's state-changing request without its CSRF token, and hands the handlers a
//! [`CurrentUser`]; each handler then asks for the [`Role`] it needs.

pub mod password;
pub mod session;
pub mod throttle;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::config::Config;
use crate::db::Db;
use crate::error::{AppError, AppResult};

pub use throttle::LoginThrottle;

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

/// How the request signed in; [`require_user`] puts it beside the [`CurrentUser`].
#[derive(Clone, PartialEq, Eq)]
pub enum SignedInBy {
    /// A session cookie.
    Session {
        /// The session's id hash.
        id_hash: String,
        /// The session's CSRF token.
        csrf_token: String,
    },
    /// An API token.
    Token {
        /// The token's id.
        id: i64,
    },
}

impl std::fmt::Debug for SignedInBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignedInBy::Session { .. } => f.write_str("Session"),
            SignedInBy::Token { id } => f.debug_struct("Token").field("id", id).finish(),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for SignedInBy {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<SignedInBy>()
            .cloned()
            .ok_or(AppError::Unauthorized)
    }
}

/// In-memory sign-in state (login throttling).
#[derive(Debug, Default)]
pub struct AuthState {
    /// Counts sign-in attempts per username and per client address.
    pub throttle: LoginThrottle,
}

/// Middleware: finds the user of a session cookie or API token, refuses without one (401), checks
/// the CSRF token of a session's state-changing request (403), and passes the user on.
///
/// A `GET` of a page (not under `/api/`) asking for HTML is sent to `/login` instead of a 401.
pub async fn require_user(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    // A page's form carries its CSRF token as the field `_csrf` (a form cannot set a header): the
    // body is read first, up to the request limit, so that the check sees it.
    let (body, form_csrf) = if !is_safe(&parts.method) && is_form(&parts) {
        match axum::body::to_bytes(body, state.config.max_body_bytes).await {
            Ok(bytes) => {
                let csrf = form_urlencoded::parse(&bytes)
                    .find(|(k, _)| k == "_csrf")
                    .map(|(_, v)| v.into_owned());
                (axum::body::Body::from(bytes), csrf)
            }
            Err(_) => {
                return AppError::field("body", "is too large or could not be read")
                    .into_response();
            }
        }
    } else {
        (body, None)
    };
    match authenticate(&state, &parts, form_csrf.as_deref()).await {
        Ok((user, by)) => {
            parts.extensions.insert(user);
            parts.extensions.insert(by);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(AppError::Unauthorized) if wants_login_page(&parts) => {
            (StatusCode::SEE_OTHER, [(header::LOCATION, "/login")]).into_response()
        }
        Err(e) => e.into_response(),
    }
}

fn is_form(request: &Parts) -> bool {
    is_form_body(&request.headers)
}

/// Whether `headers` announce an `application/x-www-form-urlencoded` body (parameters such as
/// `; charset=UTF-8` allowed).
pub(crate) fn is_form_body(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| {
            v.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
}

/// The user and credential of `request`.
async fn authenticate(
    state: &AppState,
    request: &Parts,
    form_csrf: Option<&str>,
) -> AppResult<(CurrentUser, SignedInBy)> {
    let headers = &request.headers;
    let now = state.now_ms();
    match session::bearer(headers) {
        session::Bearer::Token(token) => {
            let found = state.db.use_token(&session::digest(token), now).await?;
            let found = found.ok_or(AppError::Unauthorized)?;
            let role = Role::parse(&found.role).ok_or(AppError::Unauthorized)?;
            let user = CurrentUser {
                id: found.user_id,
                username: found.username,
                role,
            };
            return Ok((user, SignedInBy::Token { id: found.token_id }));
        }
        session::Bearer::Malformed => return Err(AppError::Unauthorized),
        session::Bearer::Absent => {}
    }
    let secret = session::session_secret(headers).ok_or(AppError::Unauthorized)?;
    let id_hash = session::digest(secret);
    let Some(found) = state.db.session_user(&id_hash, now).await? else {
        // Expired (or unknown): nothing to keep.
        state.db.delete_session(&id_hash).await?;
        return Err(AppError::Unauthorized);
    };
    if !is_safe(&request.method) {
        let presented = headers
            .get(session::CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .or(form_csrf)
            .unwrap_or("");
        if !session::constant_time_eq(presented, &found.csrf_token) {
            return Err(AppError::Forbidden("missing or wrong CSRF token"));
        }
    }
    let role = Role::parse(&found.role).ok_or(AppError::Unauthorized)?;
    let user = CurrentUser {
        id: found.user_id,
        username: found.username,
        role,
    };
    Ok((
        user,
        SignedInBy::Session {
            id_hash: found.id_hash,
            csrf_token: found.csrf_token,
        },
    ))
}

/// `GET`, `HEAD` and `OPTIONS` change nothing, so they need no CSRF token.
fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// A browser's `GET` of a page, which is better answered with the sign-in page than with a 401.
fn wants_login_page(request: &Parts) -> bool {
    request.method == Method::GET
        && !request.uri.path().starts_with("/api/")
        && request
            .headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/html"))
}

/// Creates the first admin when there is no user: with `--admin-password` / `FLOODGATE_ADMIN_PASSWORD`,
/// or a generated password, returned so that it is printed once.
///
/// Fails when the given password is shorter than 12 characters or the admin name is not a valid
/// username. Once a user exists it does nothing, whatever the settings say.
pub async fn ensure_first_admin(
    db: &Db,
    config: &Config,
    now: i64,
) -> anyhow::Result<Option<String>> {
    if db.user_count().await? > 0 {
        return Ok(None);
    }
    if password::validate_username(&config.admin_user).is_err() {
        anyhow::bail!(
            "the admin user name {:?} must have 1 to 64 characters of A-Z a-z 0-9 . _ -",
            config.admin_user
        );
    }
    let (password, generated) = match &config.admin_password {
        Some(given) => {
            if password::validate_password("admin password", given).is_err() {
                anyhow::bail!(
                    "the admin password (--admin-password / FLOODGATE_ADMIN_PASSWORD) must have \
                     12 to 1024 characters"
                );
            }
            (given.clone(), false)
        }
        None => (password::generate_password()?, true),
    };
    let hash = hash_blocking(password.clone()).await?;
    let created = db
        .create_first_user(&config.admin_user, &hash, Role::Admin.as_str(), now)
        .await?;
    if created {
        tracing::info!(
            target: "floodgate_dashboard::audit",
            user = %config.admin_user,
            "first admin created"
        );
    }
    Ok(if created && generated {
        Some(password)
    } else {
        None
    })
}

/// [`password::hash_password`] on a blocking thread (it takes tens of milliseconds of CPU).
pub async fn hash_blocking(password: String) -> AppResult<String> {
    tokio::task::spawn_blocking(move || password::hash_password(&password))
        .await
        .map_err(|e| AppError::Internal(e.into()))?
        .map_err(|e| AppError::Internal(e.into()))
}

/// Checks `password` against `phc` (or, without a user, against the dummy hash, returning false) on
/// a blocking thread.
pub async fn verify_blocking(password: String, phc: Option<String>) -> AppResult<bool> {
    tokio::task::spawn_blocking(move || match phc {
        Some(phc) => password::verify_password(&password, &phc),
        None => {
            password::verify_dummy(&password);
            false
        }
    })
    .await
    .map_err(|e| AppError::Internal(e.into()))
}
