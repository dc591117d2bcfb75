//! Cluster flow control for Floodgate: one limit across every instance of an application.
//!
//! [`protocol`] is Sentinel's token protocol, byte for byte: what a Java token client sends a token
//! server and what the server answers, so that a Java client can ask a Floodgate server for tokens and
//! a Floodgate application can ask a Java server.

pub mod client;
pub mod protocol;
pub mod server;
