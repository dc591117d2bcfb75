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
use crate::node::NodeView;
use crate::registry::Resource;

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

    /// Resolves `resource` once, for callers that enter it often (skips the name lookup per entry).
    /// `None` past the resource cap when no rule names it exactly (its entries, by name, may then be
    /// counted on [`OVER_CAP_RESOURCE`](crate::OVER_CAP_RESOURCE), or on the resource of another name the same regex rules
    /// match, which a handle must not stay on once rules name the resource).
    pub fn resource<'a>(&'a self, resource: &str) -> Option<ResourceHandle<'a>> {
        self.inner
            .resource(resource)
            .filter(|r| *r.name == *resource)
            .map(|resource| ResourceHandle {
                engine: &self.inner,
                resource,
            })
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

    /// Whether the engine checks entries.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_enabled()
    }
}

/// A resource resolved once (see [`Floodgate::resource`]).
#[derive(Debug, Clone, Copy)]
pub struct ResourceHandle<'a> {
    engine: &'a Inner,
    resource: &'a Resource,
}

impl<'a> ResourceHandle<'a> {
    /// Starts an entry on this resource.
    #[inline]
    pub fn entry(&self) -> EntryBuilder<'a> {
        EntryBuilder::new(self.engine, crate::entry::Target::Resolved(self.resource))
    }

    /// The resource's name.
    pub fn name(&self) -> &str {
        &self.resource.name
    }

    /// The resource's statistics.
    pub fn cluster_node(&self) -> NodeView<'a> {
        self.engine.view(&self.resource.cluster.stats)
    }
}
