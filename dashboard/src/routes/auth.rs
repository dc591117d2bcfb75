//! Routes of the auth area.

use axum::Router;

use crate::AppState;

pub(super) fn open_router() -> Router<AppState> {
    Router::new()
}

pub(super) fn protected_router() -> Router<AppState> {
    Router::new()
}
