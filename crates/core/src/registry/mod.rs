//! The registry: every resource, context, node and origin an engine knows, created on first sight and
//! kept for the engine's life, within caps.
//!
//! It knows nothing of rules: where a cap depends on what rules say (a name rules name exactly is
//! created past the resource cap, an origin a flow rule names gets its own node, …), the engine answers
//! through a [`CapPolicy`].

mod contexts;
mod nodes;
mod origins;
mod resources;

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};

use arc_swap::ArcSwapOption;
use rustc_hash::FxHashMap;

use crate::arena::Arena;
use crate::entry_type::ResourceType;
use crate::name_index::NameIndex;
use crate::node::{ClusterNode, DefaultNode, EntranceNode, StatisticNode, WindowGeometry};

/// Sentinel's name of the context entries run in when none was entered.
pub const DEFAULT_CONTEXT_NAME: &str = "sentinel_default_context";
/// Sentinel's name of the node that counts all inbound traffic.
pub const TOTAL_INBOUND_TRAFFIC: &str = "__total_inbound_traffic__";
/// Sentinel's name of the call tree's root.
pub const MACHINE_ROOT: &str = "machine-root";
/// The origin that callers past a resource's origin cap share (see
/// [`FloodgateBuilder::max_origins`](crate::FloodgateBuilder::max_origins)), and callers whose origin
/// is longer than [`MAX_ORIGIN_LEN`].
pub const OVER_CAP_ORIGIN: &str = "__over_origin_cap__";
/// The longest origin (in bytes) the engine keeps a node for or interns. A longer one (a header a
/// client filled, say) is an origin no rule names: it shares [`OVER_CAP_ORIGIN`]'s node, and rules may
/// not name one (`limitApp`). Without the bound, distinct origins of hundreds of kilobytes each were
/// kept for good, a few times over, up to the origin caps.
pub const MAX_ORIGIN_LEN: usize = 256;
/// How many origins contexts and owned entries intern (an origin is then kept as an id, not copied per
/// entry), so that origins clients make up cannot grow the engine without bound. Origins that rules name
/// are interned when the rules load, whatever the count. Past the cap, a context's new origin is
/// [`OVER_CAP_ORIGIN`] (named by no rule: a white list refuses it, a black list has its own names
/// interned, `limitApp: "other"` counts it), and an owned entry keeps no origin name for the exit hooks
/// (its origin node is kept all the same).
pub(crate) const MAX_INTERNED_ORIGINS: usize = 10_000;
/// The resource shared by entries on new names past the resource cap while system rules or default
/// (`"*"`) degrade rules are in force (those apply to every entry, and need a resource to count it on,
/// not one per name). Its statistics, and its default breakers, are those of all such entries together.
pub const OVER_CAP_RESOURCE: &str = "__over_resource_cap__";

/// A guarded resource: its cluster node and its node in the default context.
#[derive(Debug)]
pub(crate) struct Resource {
    pub(crate) id: u32,
    pub(crate) name: Arc<str>,
    pub(crate) cluster: ClusterNode,
    pub(crate) default_node: u32,
    context_nodes: ArcSwapOption<FxHashMap<u32, u32>>,
    resource_type: AtomicU8,
}

impl Resource {
    pub(crate) fn resource_type(&self) -> u8 {
        self.resource_type.load(Ordering::Relaxed)
    }

    pub(crate) fn set_resource_type(&self, t: ResourceType) {
        if self.resource_type.load(Ordering::Relaxed) != t as u8 {
            self.resource_type.store(t as u8, Ordering::Relaxed);
        }
    }

    /// The id of this resource's node in context `context`, if it has one (never creates it).
    pub(crate) fn context_node(&self, context: u32) -> Option<u32> {
        if context == 0 {
            return Some(self.default_node);
        }
        self.context_nodes.load().as_ref()?.get(&context).copied()
    }
}

/// A named context and its entrance node.
#[derive(Debug)]
pub(crate) struct ContextData {
    pub(crate) id: u32,
    pub(crate) entrance: EntranceNode,
}

impl ContextData {
    pub(crate) fn name(&self) -> &Arc<str> {
        &self.entrance.name
    }
}

/// Where a new entry hangs in the call tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parent {
    /// Directly under its context's entrance node.
    Entrance,
    /// Under another entry's node.
    Node(u32),
}

/// What a new name past the resource cap gets.
pub(crate) enum PastCap {
    /// Not past it (the cap is not reached, or rules name it exactly): a resource of its own.
    No,
    /// No rule matches it: none, or [`OVER_CAP_RESOURCE`].
    Unruled,
    /// Only regex rules match it, these (a signature): a resource shared with the names they match.
    Regex(String),
}

/// What the rules in force say about the caps: the registry asks when a cap is reached (cold paths
/// only). Implemented by the engine, which holds the rules.
pub(crate) trait CapPolicy: Send + Sync {
    /// Whether a rule names `resource` exactly, or a RELATE rule reads it, or a custom slot has rules
    /// for it: such a resource is created even past the resource cap.
    fn names_exactly(&self, resource: &str) -> bool;
    /// The regex rules of every type that match `resource`, as one string (empty: none match), the
    /// same for the same set of rules whatever their order.
    fn regex_signature(&self, resource: &str) -> String;
    /// Whether rules that apply to every entry (system rules, default `"*"` degrade rules) are in
    /// force: entries on new names past the cap then share [`OVER_CAP_RESOURCE`].
    fn counts_past_cap(&self) -> bool;
    /// Whether a rule of `resource` names `origin` (it then gets its own node past the origin cap).
    fn names_origin(&self, resource: &Resource, origin: &str) -> bool;
    /// Whether a rule names the context `context` (it is then created past the context cap).
    fn names_context(&self, context: &str) -> bool;
}

/// The caps and window the registry creates its nodes with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) geometry: WindowGeometry,
    pub(crate) max_resources: usize,
    pub(crate) max_contexts: usize,
    pub(crate) max_origins: usize,
    pub(crate) eager_context_stats: bool,
}

/// Reads `lock`, which holds plain data a panicking writer cannot leave half-made.
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

/// Every resource, context, node and origin of an engine.
pub(crate) struct Registry {
    /// The engine's id (the key of the per-thread name memo).
    pub(crate) id: u64,
    pub(crate) limits: Limits,
    /// All inbound traffic (what system rules read).
    pub(crate) inbound: ClusterNode,
    pub(crate) inbound_name: Arc<str>,
    pub(crate) resources: Arena<Resource>,
    pub(crate) resource_index: NameIndex,
    pub(crate) contexts: Arena<ContextData>,
    pub(crate) context_index: NameIndex,
    pub(crate) default_nodes: Arena<DefaultNode>,
    pub(crate) origin_nodes: Arena<StatisticNode>,
    pub(crate) origins: Arena<Box<str>>,
    pub(crate) origin_index: NameIndex,
    create_lock: Mutex<()>,
    /// The resources names past the cap share when only regex rules match them, by the regex rules
    /// that match (see `regex_shared_resource`).
    regex_shared: RwLock<FxHashMap<Box<str>, u32>>,
    pub(crate) resource_cap_hits: AtomicU64,
    pub(crate) context_cap_hits: AtomicU64,
    /// What the rules say where a cap is reached.
    caps: Box<dyn CapPolicy>,
}

impl Registry {
    /// A registry holding the default context only.
    pub(crate) fn new(id: u64, limits: Limits, caps: Box<dyn CapPolicy>) -> Self {
        let registry = Registry {
            id,
            limits,
            inbound: ClusterNode::new(limits.geometry),
            inbound_name: Arc::from(TOTAL_INBOUND_TRAFFIC),
            resources: Arena::default(),
            resource_index: NameIndex::default(),
            contexts: Arena::default(),
            context_index: NameIndex::default(),
            default_nodes: Arena::default(),
            origin_nodes: Arena::default(),
            origins: Arena::default(),
            origin_index: NameIndex::default(),
            create_lock: Mutex::new(()),
            regex_shared: RwLock::default(),
            resource_cap_hits: AtomicU64::new(0),
            context_cap_hits: AtomicU64::new(0),
            caps,
        };
        {
            let _guard = registry.lock();
            registry.create_context_locked(DEFAULT_CONTEXT_NAME);
        }
        registry
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        self.create_lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cluster statistics of `resource` if it exists (never creates it).
    pub(crate) fn existing_cluster_stats(&self, resource: &str) -> Option<&StatisticNode> {
        let id = self.resource_index.get(resource)?;
        Some(&self.resources.get(id)?.cluster.stats)
    }

    pub(crate) fn resource_by_id(&self, id: u32) -> Option<&Resource> {
        self.resources.get(id)
    }

    pub(crate) fn context(&self, id: u32) -> Option<&ContextData> {
        self.contexts.get(id)
    }

    pub(crate) fn default_node(&self, id: u32) -> Option<&DefaultNode> {
        self.default_nodes.get(id)
    }

    /// The interned origin `id` (empty if unknown).
    #[inline]
    pub(crate) fn origin_str(&self, id: u32) -> &str {
        self.origins.get(id).map_or("", |s| s)
    }

    #[inline]
    pub(crate) fn origin_node(&self, id: u32) -> Option<&StatisticNode> {
        self.origin_nodes.get(id)
    }
}
