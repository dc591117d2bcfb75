//! Cluster flow control for Floodgate: one limit across every instance of an application.
//!
//! [`protocol`] is Sentinel's token protocol, byte for byte: what a Java token client sends a token
//! server and what the server answers, so that a Java client can ask a Floodgate server for tokens and
//! a Floodgate application can ask a Java server.
//!
//! [`redis`] (feature `redis`, on by default) counts cluster rules in Redis instead: every instance
//! shares each rule's window there (and each value's, for hot-parameter rules), with no token
//! server to fail.
//!
//! [`lease`] makes either source the engine's token service: an entry takes tokens fetched ahead
//! and never waits on the network. [`server`] is the token server (embedded in an application or
//! standalone, counting in process or in Redis) and [`client`] Sentinel's token client.

pub mod client;
pub mod lease;
pub mod protocol;
#[cfg(feature = "redis")]
pub mod redis;
pub mod server;
