//! The engine's shared state: its registry, its rule sets, its slot chain and its settings, behind the
//! `Arc` every [`Floodgate`](crate::Floodgate) handle and owned entry holds.

mod caps;
mod config;

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::sync::Arc;

pub(crate) use config::{Config, Settings};
pub use config::{
    ConfigError, DEFAULT_MAX_CONTEXTS, DEFAULT_MAX_ORIGINS, DEFAULT_MAX_RESOURCES,
    DEFAULT_OCCUPY_TIMEOUT,
};

pub(crate) use caps::Caps;

use crate::chain::SlotChain;
use crate::error_filter::ErrorFilter;
use crate::node::{NodeView, StatisticNode};
use crate::registry::Resource;
pub(crate) use crate::rule_sets::{KindSettings, RuleSets};
use crate::slot::EngineCore;

pub(crate) static NEXT_ENGINE_ID: AtomicU64 = AtomicU64::new(1);

/// An engine's state: what its slots see (the registry, the clock, the block log: [`EngineCore`], which
/// it derefs to), its rule sets, its slot chain, its settings, its error filter and its on/off switch.
pub(crate) struct Inner {
    /// The engine's own handle, for entries that must own one.
    pub(crate) me: std::sync::Weak<Inner>,
    pub(crate) core: EngineCore,
    pub(crate) rules: RuleSets,
    pub(crate) chain: SlotChain,
    pub(crate) config: Config,
    pub(crate) errors: ErrorFilter,
    pub(crate) enabled: AtomicBool,
}

impl std::ops::Deref for Inner {
    type Target = EngineCore;

    #[inline]
    fn deref(&self) -> &EngineCore {
        &self.core
    }
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Floodgate")
            .field("clock", &self.clock)
            .field("chain", &self.chain)
            .field("resources", &self.registry.resources.len())
            .field("enabled", &self.enabled.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Inner {
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// The resource named `name`, created on first sight (see `Registry::resource`).
    #[inline]
    pub(crate) fn resource(&self, name: &str) -> Option<&Resource> {
        self.registry.resource(name)
    }

    /// The context named `name`, created on first sight; the default context past the context cap.
    pub(crate) fn context_id(&self, name: &str) -> u32 {
        self.registry.context_id(name)
    }

    /// This engine, shared (it is alive while `self` is borrowed).
    pub(crate) fn arc(&self) -> Arc<Inner> {
        self.me
            .upgrade()
            .unwrap_or_else(|| unreachable!("an engine borrowed is alive"))
    }

    pub(crate) fn view<'a>(&'a self, node: &'a StatisticNode) -> NodeView<'a> {
        NodeView {
            node,
            clock: &*self.clock,
        }
    }
}
