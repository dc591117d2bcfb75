//! The `Floodgate` handle: entries and contexts here, the rule API in `rules.rs`, statistics and views
//! in `views.rs`, the builder in `builder.rs`.

mod builder;
mod rules;
mod views;

#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

pub use builder::FloodgateBuilder;
pub use views::EngineStats;

use crate::clock::Clock;
use crate::context::ContextBuilder;
use crate::engine::Inner;
use crate::entry::EntryBuilder;

/// The guard engine. Cheap to clone (one `Arc`); clones share everything.
///
/// ```
/// use floodgate_core::{Floodgate, ManualClock};
///
/// let clock = ManualClock::new(1_700_000_000_000);
/// let fg = Floodgate::builder().clock(clock.clone()).build();
/// {
///     let _entry = fg.entry("GET:/orders").enter().expect("no rule blocks");
/// } // dropping the entry records completion
/// let node = fg.cluster_node("GET:/orders").unwrap();
/// assert_eq!(node.pass_qps(), 1.0);
/// assert_eq!(node.success_qps(), 1.0);
/// ```
#[derive(Clone)]
pub struct Floodgate {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Floodgate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl Default for Floodgate {
    fn default() -> Self {
        Floodgate::builder().build()
    }
}

impl Floodgate {
    /// A builder with Sentinel's defaults.
    pub fn builder() -> FloodgateBuilder {
        FloodgateBuilder::default()
    }

    /// Starts an entry on `resource`.
    #[inline]
    pub fn entry<'a>(&'a self, resource: &'a str) -> EntryBuilder<'a> {
        EntryBuilder::new(&self.inner, crate::entry::Target::Name(resource))
    }

    /// A named context (Sentinel's `ContextUtil.enter`): run code in it, or start entries in it explicitly.
    pub fn context<'a>(&'a self, name: &'a str) -> ContextBuilder<'a> {
        ContextBuilder::new(&self.inner, name)
    }

    /// The engine's clock.
    pub fn clock(&self) -> &dyn Clock {
        &*self.inner.clock
    }

    /// Turns all checking and counting on or off (Sentinel's global switch). Off, every entry passes.
    pub fn set_enabled(&self, enabled: bool) {
        self.inner.enabled.store(enabled, Ordering::SeqCst);
    }

    /// Replaces the token service that rules in cluster mode ask (`None`: none; they fall back as
    /// their `fallbackToLocalWhenFail` says).
    pub fn set_token_service(&self, service: Option<Box<dyn crate::cluster::TokenService>>) {
        self.inner.token_service.set(service);
    }

    /// Whether a token service is set.
    pub fn has_token_service(&self) -> bool {
        self.inner.token_service.is_set()
    }

    /// Whether the engine checks entries.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_enabled()
    }
}
