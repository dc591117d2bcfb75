//! A [`reqwest_middleware`] middleware that guards outgoing HTTP calls with Floodgate.
//!
//! Each request is an outbound entry (`EntryType::Out`) on a resource named after the call —
//! `METHOD:host[:port]/path` with path segments that look like ids replaced by `{id}` (see
//! [`resource_name`]; hosts stay as they are, so per-tenant hosts need a
//! [`FloodgateMiddleware::resource_fn`]) — or whatever [`FloodgateMiddleware::resource_fn`] returns. A blocked call
//! fails with the [`BlockError`](floodgate_core::BlockError) inside
//! `reqwest_middleware::Error::Middleware` (downcast it to tell a block from a network error) and never
//! reaches the network. Transport errors and 5xx responses are traced into the entry, so a circuit
//! breaker on a downstream opens when it fails. A queueing wait is awaited on a tokio timer.
//!
//! ```no_run
//! use floodgate_core::Floodgate;
//! use floodgate_reqwest::FloodgateMiddleware;
//!
//! let fg = Floodgate::default();
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(FloodgateMiddleware::new(fg))
//!     .build();
//! ```

mod middleware;
mod resource;

pub use middleware::FloodgateMiddleware;
pub use resource::resource_name;
