//! Cluster flow control: the token service a rule in cluster mode asks ([`TokenService`], set with
//! [`FloodgateBuilder::token_service`](crate::FloodgateBuilder::token_service) or
//! [`Floodgate::set_token_service`](crate::Floodgate::set_token_service)), what it is asked
//! ([`TokenRequest`]) and what it answers ([`TokenResult`], [`TokenStatus`]). The token servers, clients and backends live in the
//! `floodgate-cluster` crate.

mod service;
mod terms;
mod token;
mod verdict;

pub(crate) use service::TokenServiceCell;
pub use service::{ThresholdType, TokenRequest, TokenService};
pub(crate) use terms::ClusterTerms;
pub use token::{TokenResult, TokenStatus};
pub(crate) use verdict::{ClusterVerdict, ask};
