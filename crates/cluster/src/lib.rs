//! Cluster flow control for Floodgate: one limit across every instance of an application.
//!
//! [`protocol`] is Sentinel's token protocol, byte for byte: what a Java token client sends a token
//! server and what the server answers, so that a Java client can ask a Floodgate server for tokens and
//! a Floodgate application can ask a Java server.
//!
//! [`redis`] (feature `redis`, on by default) counts cluster rules in Redis instead: every instance
//! shares each rule's window there, with no token server to fail.

pub mod client;
pub mod lease;
pub mod protocol;
#[cfg(feature = "redis")]
pub mod redis;
pub mod server;
