//! The router: a few open routes (heartbeats, sign-in, static files) and everything else behind a
//! session or an API token — denied by default, unknown paths included.

mod apps;
mod auth;
mod cluster;
mod history;
pub(crate) mod machines;
mod metrics;
mod registry;
mod rules;
pub(crate) mod tokens;
pub(crate) mod users;

use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware;
use tower::ServiceBuilder;
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::error::AppError;
use crate::{AppState, auth as session};

/// The dashboard's router over `state`.
pub fn app(state: AppState) -> Router {
    let protected = Router::new()
        .merge(apps::router())
        .merge(machines::router())
        .merge(cluster::router())
        .merge(metrics::router())
        .merge(rules::router())
        .merge(history::router())
        .merge(users::router())
        .merge(tokens::router())
        .merge(auth::protected_router())
        .merge(crate::pages::router())
        .fallback(|| async { AppError::NotFound("page") })
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            session::require_user,
        ));
    let open = Router::new()
        .merge(registry::router())
        .merge(auth::open_router())
        .nest_service("/static", ServeDir::new(&state.config.static_dir));
    let timeout = Duration::from_secs(state.config.request_timeout_secs);
    let body_limit = state.config.max_body_bytes;
    let middleware = ServiceBuilder::new()
        .layer(TraceLayer::new_for_http())
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        ))
        .layer(RequestBodyLimitLayer::new(body_limit))
        .layer(CompressionLayer::new())
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ));
    open.merge(protected).with_state(state).layer(middleware)
}

/// No inline script or style, nothing from elsewhere, no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; \
     form-action 'self'";

/// The app named `name`, or 404.
async fn find_app(state: &AppState, name: &str) -> Result<crate::db::App, AppError> {
    state
        .db
        .app_by_name(name)
        .await?
        .ok_or(AppError::NotFound("app"))
}

/// A request body read as JSON, with the parser's complaint as a field error.
fn json_body(body: &[u8]) -> Result<serde_json::Value, AppError> {
    serde_json::from_slice(body)
        .map_err(|e| AppError::field("body", format!("is not valid JSON: {e}")))
}
