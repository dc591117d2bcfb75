//! The layer's cost over a bare axum router, in process (no network): one request through
//! `Router::call` bare, with a do-nothing route layer (axum's own cost of any layer), and with
//! `FloodgateLayer`.
//!
//! Run with `cargo bench -p floodgate-tower --features axum --bench layer`.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::hint::black_box;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use axum::routing::get;
use criterion::{Criterion, criterion_group, criterion_main};
use floodgate_core::Floodgate;
use floodgate_tower::FloodgateLayer;
use tower::ServiceExt;

fn router() -> Router {
    Router::new().route("/orders/{id}", get(|| async { "an order" }))
}

fn layer(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let bare = router();
    let guarded = router().route_layer(FloodgateLayer::new(Floodgate::default()));
    // The same plumbing with a layer that does nothing: what any route layer costs in axum.
    let noop = router().route_layer(tower::util::MapRequestLayer::new(
        |request: Request<Body>| request,
    ));
    let mut g = c.benchmark_group("axum_request");
    for (name, app) in [
        ("bare", bare),
        ("noop_layer", noop),
        ("floodgate_layer", guarded),
    ] {
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
