//! Sign-in routes: the sign-in page, `POST /auth/login` (a form or JSON), `POST /auth/logout`,
//! `GET /api/me` and `PUT /api/me/password`.
//!
//! A sign-in is counted by the login throttle before its password is checked; a successful one
//! deletes the session the client presented, if any, and starts a new one (a new cookie secret and
//! CSRF token), so a session id planted before sign-in is worth nothing after it.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

use axum::body::Bytes;
use axum::extract::rejection::JsonRejection;
use axum::extract::{ConnectInfo, FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::AppState;
use crate::auth::{self, CurrentUser, Role, SignedInBy, password, session};
use crate::error::{AppError, AppResult};

pub(super) fn open_router() -> Router<AppState> {
    Router::new()
        .route("/login", get(login_page))
        .route("/auth/login", post(login))
}

pub(super) fn protected_router() -> Router<AppState> {
    Router::new()
        .route("/auth/logout", post(logout))
        .route("/api/me", get(me))
        .route("/api/me/password", put(change_own_password))
        // Every other path is matched here, so that it too needs a session (or a token) before it
        // is found missing.
        .route("/{*path}", axum::routing::any(not_found))
}

async fn not_found() -> AppError {
    AppError::NotFound("page")
}

/// The body of a JSON request, or a 422 naming what is wrong with it.
pub(super) fn json_body<T>(body: Result<Json<T>, JsonRejection>) -> AppResult<T> {
    match body {
        Ok(Json(value)) => Ok(value),
        Err(rejection) => Err(AppError::field("body", rejection.body_text())),
    }
}

/// The client's IP address, when the server was started with connection info.
#[derive(Debug, Clone, Copy)]
struct ClientIp(Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientIp(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(addr)| addr.ip()),
        ))
    }
}

const LOGIN_PAGE: &str = r#"<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Sign in · Floodgate</title></head>
<body>
<main>
<h1>Floodgate</h1>
<!--error-->
<form method="post" action="/auth/login">
<p><label>Username <input name="username" autocomplete="username" required maxlength="64"></label></p>
<p><label>Password <input name="password" type="password" autocomplete="current-password" required></label></p>
<p><button type="submit">Sign in</button></p>
</form>
</main>
</body>
</html>
"#;

#[derive(Debug, Deserialize)]
struct LoginPageQuery {
    error: Option<String>,
}

async fn login_page(Query(query): Query<LoginPageQuery>) -> Response {
    let page = if query.error.is_some() {
        LOGIN_PAGE.replace(
            "<!--error-->",
            "<p role=\"alert\">Wrong username or password.</p>",
        )
    } else {
        LOGIN_PAGE.to_owned()
    };
    (
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        Html(page),
    )
        .into_response()
}

/// The answer to every failed sign-in, whether the user exists or not.
const WRONG_CREDENTIALS: &str = "wrong username or password";

#[derive(Deserialize)]
struct Credentials {
    username: String,
    password: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SignedIn {
    username: String,
    role: &'static str,
    csrf_token: String,
}

/// How the sign-in came: a browser's form or a JSON call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoginKind {
    Form,
    Json,
}

fn login_kind(headers: &HeaderMap) -> Option<LoginKind> {
    let content_type = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let mime = content_type.split(';').next()?.trim();
    if mime.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
        Some(LoginKind::Form)
    } else if mime.eq_ignore_ascii_case("application/json") {
        Some(LoginKind::Json)
    } else {
        None
    }
}

fn parse_credentials(kind: LoginKind, body: &[u8]) -> AppResult<Credentials> {
    match kind {
        LoginKind::Json => serde_json::from_slice(body).map_err(|e| {
            AppError::field(
                "body",
                format!("expected {{\"username\", \"password\"}}: {e}"),
            )
        }),
        LoginKind::Form => {
            let mut username = None;
            let mut password = None;
            for (k, v) in form_urlencoded::parse(body) {
                match &*k {
                    "username" => username = Some(v.into_owned()),
                    "password" => password = Some(v.into_owned()),
                    _ => {}
                }
            }
            match (username, password) {
                (Some(username), Some(password)) => Ok(Credentials { username, password }),
                (None, _) => Err(AppError::field("username", "missing")),
                (_, None) => Err(AppError::field("password", "missing")),
            }
        }
    }
}

async fn login(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    body: Bytes,
) -> AppResult<Response> {
    let Some(kind) = login_kind(&headers) else {
        return Ok((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Json(json!({"error": "sign in with a form or JSON"})),
        )
            .into_response());
    };
    let credentials = parse_credentials(kind, &body)?;
    let now = state.now_ms();
    let attempt = state
        .auth
        .throttle
        .begin(&credentials.username, ip, now)
        .map_err(|retry_after_secs| {
            tracing::warn!(
                target: "floodgate_dashboard::audit",
                user = ?credentials.username,
                ip = ?ip,
                "sign-in throttled"
            );
            AppError::TooManyRequests { retry_after_secs }
        })?;
    let user = if credentials.username.len() <= password::MAX_USERNAME_LEN
        && credentials.password.len() <= password::MAX_PASSWORD_BYTES
    {
        state.db.user_by_name(&credentials.username).await?
    } else {
        None
    };
    let ok = auth::verify_blocking(
        credentials
            .password
            .chars()
            .take(password::MAX_PASSWORD_BYTES)
            .collect(),
        user.as_ref().map(|u| u.password_hash.clone()),
    )
    .await?;
    let user = match (ok, user) {
        (true, Some(user)) => user,
        _ => {
            tracing::warn!(
                target: "floodgate_dashboard::audit",
                user = ?credentials.username,
                ip = ?ip,
                "sign-in failed"
            );
            return Ok(match kind {
                LoginKind::Form => (
                    StatusCode::SEE_OTHER,
                    [(header::LOCATION, "/login?error=1")],
                )
                    .into_response(),
                LoginKind::Json => (
                    StatusCode::UNAUTHORIZED,
                    Json(json!({"error": WRONG_CREDENTIALS})),
                )
                    .into_response(),
            });
        }
    };
    state.auth.throttle.succeeded(attempt);
    let role = Role::parse(&user.role).ok_or_else(|| {
        AppError::Internal(anyhow::anyhow!("user {} has role {:?}", user.id, user.role))
    })?;

    // Rotation: whatever session the client came with ends here.
    if let Some(old) = session::session_secret(&headers) {
        state.db.delete_session(&session::digest(old)).await?;
    }
    state.db.delete_expired_sessions(now).await?;
    let secret = session::new_secret().map_err(|e| AppError::Internal(e.into()))?;
    let csrf_token = session::new_secret().map_err(|e| AppError::Internal(e.into()))?;
    let ttl_secs = state.config.session_ttl_secs;
    let expires_at =
        now.saturating_add(i64::try_from(ttl_secs.saturating_mul(1000)).unwrap_or(i64::MAX));
    state
        .db
        .create_session(
            &session::digest(&secret),
            user.id,
            &csrf_token,
            now,
            expires_at,
        )
        .await?;
    tracing::info!(
        target: "floodgate_dashboard::audit",
        user = %user.username,
        ip = ?ip,
        "signed in"
    );
    let cookie = session::session_cookie(&secret, ttl_secs, state.config.secure_cookies);
    let cookie = HeaderValue::from_str(&cookie).map_err(|e| AppError::Internal(e.into()))?;
    let mut response = match kind {
        LoginKind::Form => (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response(),
        LoginKind::Json => Json(SignedIn {
            username: user.username,
            role: role.as_str(),
            csrf_token,
        })
        .into_response(),
    };
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

async fn logout(
    State(state): State<AppState>,
    by: SignedInBy,
    user: CurrentUser,
    headers: axum::http::HeaderMap,
) -> AppResult<Response> {
    if let SignedInBy::Session { id_hash, .. } = &by {
        state.db.delete_session(id_hash).await?;
        tracing::info!(target: "floodgate_dashboard::audit", user = %user.username, "signed out");
    }
    let cookie = HeaderValue::from_str(&session::clear_session_cookie(state.config.secure_cookies))
        .map_err(|e| AppError::Internal(e.into()))?;
    // A page's sign-out form goes back to the sign-in page; a script gets 204.
    if crate::auth::is_form_body(&headers) {
        return Ok((
            StatusCode::SEE_OTHER,
            [
                (header::SET_COOKIE, cookie),
                (header::LOCATION, HeaderValue::from_static("/login")),
            ],
        )
            .into_response());
    }
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, cookie)]).into_response())
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Me {
    id: i64,
    username: String,
    role: &'static str,
    /// The session's CSRF token; `null` for a request signed in by API token.
    csrf_token: Option<String>,
}

async fn me(user: CurrentUser, by: SignedInBy) -> Json<Me> {
    Json(Me {
        id: user.id,
        username: user.username,
        role: user.role.as_str(),
        csrf_token: match by {
            SignedInBy::Session { csrf_token, .. } => Some(csrf_token),
            SignedInBy::Token { .. } => None,
        },
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PasswordChange {
    current: String,
    new: String,
}

/// Changes the signed-in user's own password, given the current one (counted by the login
/// throttle like a sign-in); every other session of the user ends.
async fn change_own_password(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    user: CurrentUser,
    by: SignedInBy,
    body: Result<Json<PasswordChange>, JsonRejection>,
) -> AppResult<StatusCode> {
    let change = json_body(body)?;
    password::validate_password("new", &change.new)?;
    let now = state.now_ms();
    let attempt = state
        .auth
        .throttle
        .begin(&user.username, ip, now)
        .map_err(|retry_after_secs| AppError::TooManyRequests { retry_after_secs })?;
    let stored = state
        .db
        .user(user.id)
        .await?
        .ok_or(AppError::Unauthorized)?;
    let current_ok = change.current.len() <= password::MAX_PASSWORD_BYTES
        && auth::verify_blocking(change.current, Some(stored.password_hash)).await?;
    if !current_ok {
        return Err(AppError::field("current", "is not your password"));
    }
    state.auth.throttle.succeeded(attempt);
    let hash = auth::hash_blocking(change.new).await?;
    let keep = match &by {
        SignedInBy::Session { id_hash, .. } => Some(id_hash.as_str()),
        SignedInBy::Token { .. } => None,
    };
    if !state.db.set_own_password(user.id, &hash, keep).await? {
        return Err(AppError::Unauthorized);
    }
    tracing::info!(target: "floodgate_dashboard::audit", user = %user.username, "password changed");
    Ok(StatusCode::NO_CONTENT)
}
