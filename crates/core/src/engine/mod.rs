//! The engine's shared state: its registry, its rule sets, its slot chain and its settings, behind the
//! `Arc` every [`Floodgate`](crate::Floodgate) handle and owned entry holds.

mod caps;
mod config;
mod rule_sets;

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::sync::Arc;

pub(crate) use config::Config;
pub use config::{
    ConfigError, DEFAULT_MAX_CONTEXTS, DEFAULT_MAX_ORIGINS, DEFAULT_MAX_RESOURCES,
    DEFAULT_OCCUPY_TIMEOUT,
};
pub(crate) use rule_sets::{KindSettings, RuleSets};

use crate::clock::{CachedClock, Clock};
use crate::error_filter::ErrorFilter;
use crate::floodgate::Floodgate;
use crate::node::{NodeView, StatisticNode};
use crate::registry::{Registry, Resource};
use crate::slot::{BlockLog, SlotChain};

pub(crate) static NEXT_ENGINE_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) struct Inner {
    pub(crate) id: u64,
    /// The engine's own handle, for entries that must own one.
    pub(crate) me: std::sync::Weak<Inner>,
    pub(crate) clock: Arc<dyn Clock>,
    /// `clock` itself when it is a [`CachedClock`] (the default): read without a dynamic call.
    pub(crate) cached_clock: Option<CachedClock>,
    pub(crate) registry: Registry,
    pub(crate) rules: RuleSets,
    pub(crate) chain: SlotChain,
    pub(crate) config: Config,
    pub(crate) errors: ErrorFilter,
    pub(crate) block_log: BlockLog,
    pub(crate) enabled: AtomicBool,
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
    /// The engine's time, epoch ns (the hot path's clock read).
    #[inline]
    pub(crate) fn now_nanos(&self) -> u64 {
        match &self.cached_clock {
            Some(clock) => clock.now_nanos(),
            None => self.clock.now_nanos(),
        }
    }

    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// The resource named `name`, created on first sight (see [`Registry::resource`]).
    #[inline]
    pub(crate) fn resource(&self, name: &str) -> Option<&Resource> {
        self.registry.resource(name, self)
    }

    /// The context named `name`, created on first sight; the default context past the context cap.
    pub(crate) fn context_id(&self, name: &str) -> u32 {
        self.registry.context_id(name, self)
    }

    /// The origin node id of `origin` on `resource`, created on first sight (see
    /// [`Registry::origin_node_id`]).
    #[inline]
    pub(crate) fn origin_node_id(&self, resource: &Resource, origin: &str) -> Option<u32> {
        self.registry.origin_node_id(resource, origin, self)
    }

    /// A handle to this engine (it is alive while `self` is borrowed).
    pub(crate) fn handle(&self) -> Floodgate {
        Floodgate {
            inner: self
                .me
                .upgrade()
                .unwrap_or_else(|| unreachable!("an engine borrowed is alive")),
        }
    }

    pub(crate) fn view<'a>(&'a self, node: &'a StatisticNode) -> NodeView<'a> {
        NodeView {
            node,
            clock: &*self.clock,
        }
    }
}
