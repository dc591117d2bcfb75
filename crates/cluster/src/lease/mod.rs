//! Cluster tokens fetched ahead and handed out from memory: the engine's token service for a
//! source of tokens across the network (Redis, or a token server).
//!
//! The engine asks its token service inside an entry, on the entering thread, and must not wait
//! there. A [`LeasedTokenService`] answers from each rule's lease and, when the lease runs low,
//! fetches more on a Tokio runtime from its [`Fetcher`].

mod fetcher;
mod service;
mod token_client;
mod tokens;
mod values;

pub use fetcher::{FetchError, Fetcher, Grant, WindowTerms};
pub use service::{IDLE_VALUE_AFTER, LeaseConfig, LeaseStats, LeasedTokenService, MAX_LEASES};
pub use token_client::{RemoteTokenService, ServerFetcher};
