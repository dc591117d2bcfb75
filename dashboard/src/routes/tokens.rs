//! Routes of the tokens area.

use axum::Router;

use crate::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
}
