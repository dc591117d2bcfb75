//! The HTML pages: askama templates under `dashboard/templates/` (mirroring these modules), plain
//! HTML and CSS, charts as server-rendered SVG, and one script (`/static/live.js`, no inline
//! script) that refreshes the charts in place. Every page needs a session (see [`crate::auth`]).

mod apps;
pub mod chart;
mod cluster;
mod error;
mod history;
mod layout;
mod machines;
mod resource;
mod rule_form;
mod rules;
mod tokens;
mod users;

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
        .route("/apps/{app}/machines", get(machines::machines))
        .route("/apps/{app}/machines/push", post(machines::push_all))
        .route(
            "/apps/{app}/machines/{id}/resources",
            get(machines::resources),
        )
        .route("/apps/{app}/breakers", get(machines::breakers))
        .route("/apps/{app}/cluster", get(cluster::index))
        .route(
            "/apps/{app}/cluster/machines/{id}/server",
            post(cluster::make_server),
        )
        .route(
            "/apps/{app}/cluster/machines/{id}/client",
            post(cluster::make_client),
        )
        .route("/apps/{app}/resources/{resource}", get(resource::show))
        .route("/users", get(users::index).post(users::create))
        .route("/users/{id}/role", post(users::set_role))
        .route("/users/{id}/password", post(users::set_password))
        .route("/users/{id}/delete", post(users::delete))
        .route("/tokens", get(tokens::index).post(tokens::create))
        .route("/tokens/{id}/delete", post(tokens::delete))
}

/// `s` as one segment of a URL path (everything but unreserved characters percent-encoded).
pub(crate) fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
