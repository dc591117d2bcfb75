//! A tower [`Layer`](tower_layer::Layer) that guards any tower HTTP service — axum, tonic, hyper — with
//! Floodgate.
//!
//! Each request is an inbound entry on a resource named after the route, not the raw path: with the
//! `axum` feature, axum's route template (`GET:/orders/{id}`); for gRPC, the method path
//! (`/pkg.Service/Method`, or `grpc:/*` once the layer knows 1024 names: clients choose paths);
//! otherwise `METHOD:/*`, or whatever [`FloodgateLayer::resource_fn`] returns. Methods other than the
//! eight of RFC 9110 and PATCH are named `_OTHER`, and HEAD counts on GET's resource (axum serves it
//! with the GET handler). Route templates need the layer inside the router, where axum has matched the
//! route: `route_layer` (or a handler's layer, below); a layer around the whole router sees every request
//! as `METHOD:/*`. A gRPC service mounted in an axum router (tonic's `/{package.Service}/{*rest}` route)
//! is named by method path all the same; a service without a package shares its route's one name. The caller's origin comes from a header of your
//! choice (the engine counts at most 1000 origins per resource apart; clients choose header values). A blocked request gets a response from the
//! [`BlockResponse`] (by default 429 for flow and hot-parameter blocks, 503 for circuit breakers and
//! system protection, 403 for authority, each with a short body naming the kind, and `Retry-After`
//! where the rule tells when to retry: [`DefaultBlockResponse::retry_after`]). Errors,
//! 5xx responses, gRPC server failures (a `grpc-status` header of UNKNOWN, DEADLINE_EXCEEDED,
//! UNIMPLEMENTED, INTERNAL, UNAVAILABLE or DATA_LOSS) and panics (in the service's `call` or its future)
//! are traced into the entry, so error-ratio breakers see failing requests; a block answered by
//! another Floodgate layer inside this one is not (one route's open breaker must not open the whole
//! service's). The entry exits when the response is ready, when the
//! service fails, when the handler panics (traced, then unwinding drops it) and when the response
//! future is dropped (cancellation). A queueing wait is awaited with a tokio timer
//! before the request reaches the service, never slept on a worker thread: the service, which must be
//! `Clone` (axum's, tonic's and hyper's are), is called only once the wait is over (a request that waits
//! takes the service made ready with it, and a clone stays).
//!
//! ```
//! use axum::{Router, http::HeaderName, routing::get};
//! use floodgate_core::Floodgate;
//! use floodgate_tower::FloodgateLayer;
//!
//! let fg = Floodgate::default();
//! let app: Router = Router::new()
//!     .route("/orders/{id}", get(|| async { "an order" }))
//!     .route_layer(FloodgateLayer::new(fg).origin_header(HeaderName::from_static("x-caller")));
//! ```
//!
//! The layer can also go on one handler, `get(handler.layer(layer))`, with the same resource names
//! (axum has matched the route when the handler runs). It then guards that handler only: the route's
//! other methods, and the 405 answers to methods it does not serve, pass unguarded. It is the cheaper
//! place: axum clones and boxes a route layer's service for every request (BENCHMARKS.md, "Tower
//! layer", has the figures).
//!
//! ```
//! use axum::{Router, handler::Handler, routing::get};
//! use floodgate_core::Floodgate;
//! use floodgate_tower::FloodgateLayer;
//!
//! async fn order() -> &'static str {
//!     "an order"
//! }
//!
//! let fg = Floodgate::default();
//! let app: Router = Router::new().route("/orders/{id}", get(order.layer(FloodgateLayer::new(fg))));
//! ```

mod future;
mod keyed_hash;
mod layer;
mod resource;
mod response;
mod route_names;
mod service;

pub use future::ResponseFuture;
pub use layer::FloodgateLayer;
pub use resource::{RequestHead, resource_name};
pub use response::{BlockResponse, DefaultBlockResponse};
pub use service::Floodgate as FloodgateService;
