//! The layer's cost over a bare axum router, in process (no network): one request through
//! `Router::call` bare, with a do-nothing layer (axum's own cost of any layer), and with
//! `FloodgateLayer`, each applied two ways: to the routes (`Router::route_layer`) and to the handler
//! (`Handler::layer`).
//!
//! Every router gets `with_state(())` first, as `axum::serve` does through `into_make_service`: a
//! router called without it turns each handler into a service, and applies each route layer to it,
//! on every request — a cost no served application pays.
//!
//! Run with `cargo bench -p floodgate-tower --features axum --bench layer`.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::hint::black_box;

use axum::Router;
use axum::body::Body;
use axum::handler::Handler;
use axum::http::Request;
use axum::routing::get;
use criterion::{Criterion, criterion_group, criterion_main};
use floodgate_core::Floodgate;
use floodgate_tower::FloodgateLayer;
use tower::ServiceExt;
use tower::util::MapRequestLayer;

const ROUTE: &str = "/orders/{id}";

async fn order() -> &'static str {
    "an order"
}

/// A layer that does nothing.
fn noop() -> MapRequestLayer<fn(Request<Body>) -> Request<Body>> {
    MapRequestLayer::new(|request| request)
}

fn layer(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let guard = || FloodgateLayer::new(Floodgate::default());
    let apps: [(&str, Router); 5] = [
        ("bare", Router::new().route(ROUTE, get(order))),
        (
            "noop_route_layer",
            Router::new().route(ROUTE, get(order)).route_layer(noop()),
        ),
        (
            "floodgate_route_layer",
            Router::new().route(ROUTE, get(order)).route_layer(guard()),
        ),
        (
            "noop_handler_layer",
            Router::new().route(ROUTE, get(order.layer(noop()))),
        ),
        (
            "floodgate_handler_layer",
            Router::new().route(ROUTE, get(order.layer(guard()))),
        ),
    ];
    let mut g = c.benchmark_group("axum_request");
    for (name, app) in apps {
        let app: Router = app.with_state(());
        g.bench_function(name, |b| {
            b.iter(|| {
                let request = Request::get("/orders/42").body(Body::empty()).unwrap();
                let response = runtime.block_on(app.clone().oneshot(request)).unwrap();
                black_box(response.status())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, layer);
criterion_main!(benches);
