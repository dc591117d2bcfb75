//! Cluster flow control's vocabulary: what a token service answers a rule in cluster mode
//! ([`TokenResult`], [`TokenStatus`]). The token servers, clients and backends live in the
//! `floodgate-cluster` crate.

mod token;

pub use token::{TokenResult, TokenStatus};
