//! Floodgate: flow control, circuit breaking and adaptive protection for Rust services, in the style of
//! Alibaba Sentinel.
//!
//! This facade re-exports the guard engine ([`floodgate_core`]) and the [`resource`] attribute; the agent
//! and the adapters live in their own crates, re-exported here as `floodgate::transport`,
//! `floodgate::tower` and `floodgate::reqwest` behind the features of those names.
//!
//! ```
//! use floodgate::{EntryType, Floodgate, ManualClock};
//!
//! let clock = ManualClock::new(1_700_000_000_000);
//! let fg = Floodgate::builder().clock(clock.clone()).build();
//! let entry = fg.entry("GET:/orders").entry_type(EntryType::In).enter();
//! assert!(entry.is_ok());
//! ```

// The whole of the core, as it is: its root items and its `slot` and `stats` modules. A facade that
// re-exports a crate one-to-one cannot fall behind it as a list would.
pub use floodgate_core::*;

pub use floodgate_macros::resource;

#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __private;

/// The agent (`floodgate-transport`): command API, heartbeats, metrics, rule files.
#[cfg(feature = "transport")]
pub use floodgate_transport as transport;

/// The tower layer (`floodgate-tower`): guards axum, tonic and hyper services.
#[cfg(feature = "tower")]
pub use floodgate_tower as tower;

/// The outbound HTTP middleware (`floodgate-reqwest`): guards reqwest calls.
#[cfg(feature = "reqwest")]
pub use floodgate_reqwest as reqwest;

/// README's code blocks, compiled and run as doctests so the quick start stays true.
#[doc = include_str!("../README.md")]
#[cfg(all(doctest, feature = "transport"))]
pub struct ReadmeDoctests;
