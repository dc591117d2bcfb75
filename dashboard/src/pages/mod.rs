//! The HTML pages: askama templates under `dashboard/templates/` (mirroring these modules), plain
//! HTML and CSS, charts as server-rendered SVG, and one script (`/static/live.js`, no inline
//! script) that refreshes the charts in place. Every page needs a session (see [`crate::auth`]).

mod apps;
pub mod chart;
mod layout;

use axum::Router;
use axum::response::Redirect;
use axum::routing::get;

pub use layout::{Chrome, Page};

use crate::AppState;

/// The pages' routes.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/apps") }))
        .route("/apps", get(apps::overview))
        .route("/apps/{app}", get(apps::monitor))
        .route("/apps/{app}/charts", get(apps::charts))
}
