//! The HTML pages: askama templates under `dashboard/templates/` (mirroring these modules), plain
//! HTML and CSS, charts as server-rendered SVG, and one script (`/static/live.js`, no inline
//! script) that refreshes the charts in place. Every page needs a session (see [`crate::auth`]).

mod apps;
pub mod chart;
mod history;
mod layout;
mod rule_form;
mod rules;

use axum::Router;
use axum::response::Redirect;
use axum::routing::{get, post};

pub use layout::{Chrome, Page};

use crate::AppState;

/// The pages' routes.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/apps") }))
        .route("/apps", get(apps::overview))
        .route("/apps/{app}", get(apps::monitor))
        .route("/apps/{app}/charts", get(apps::charts))
        .route(
            "/apps/{app}/rules/{type}",
            get(rules::list).post(rules::create),
        )
        .route("/apps/{app}/rules/{type}/new", get(rules::new_form))
        .route("/apps/{app}/rules/{type}/{id}", post(rules::update))
        .route("/apps/{app}/rules/{type}/{id}/edit", get(rules::edit_form))
        .route("/apps/{app}/rules/{type}/{id}/delete", post(rules::delete))
        .route("/apps/{app}/history", get(history::list))
        .route("/apps/{app}/history/{id}/rollback", post(history::rollback))
}
