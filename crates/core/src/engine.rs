//! The engine: an owned `Floodgate` holding its clock, slot chain, nodes and registries.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use rustc_hash::FxHashMap;

use crate::arena::Arena;
use crate::authority::{AuthorityRule, AuthorityRules};
use crate::block::BlockKind;
use crate::clock::{CachedClock, Clock};
use crate::context::ContextBuilder;
use crate::degrade::{BreakerStateChange, BreakerStatus, DegradeRule, DegradeRules};
use crate::entry::EntryBuilder;
use crate::entry_type::ResourceType;
use crate::error_filter::ErrorFilter;
use crate::flow::{DEFAULT_COLD_FACTOR, FlowRule, FlowRules, FlowStatus};
use crate::keyed_hash::{KeyedMap, keyed_map};
use crate::last_lookup;
use crate::name_index::NameIndex;
use crate::node::{
    CallTree, ClusterNode, DefaultNode, EntranceNode, MetricLine, NodeSnapshot, NodeView,
    StatisticNode, TreeNodeKind, WindowGeometry,
};
use crate::param_flow::{ParamFlowRule, ParamFlowRules, ParamFlowStatus};
use crate::rules::{
    Fields, RuleError, RuleFields, RuleItem, RuleLoad, RuleType, RuleWarning, all_or_errors,
    check_regex_count, no_errors, parse_rule_items, regex_flags, to_json_array,
};
use crate::slot::{BlockLog, ChainEdit, Slot, SlotChain};
use crate::stat::WindowError;
use crate::system::{OsProbe, SystemProbe, SystemRule, SystemRules, SystemStatus};

/// How the rules of one type are read from JSON: their fields, and the reader.
struct Reader<'w, F> {
    fields: &'static Fields,
    parse: F,
    /// Where the fields the reader ignores are noted.
    warnings: &'w mut Vec<RuleWarning>,
}

impl<'w, T, F: Fn(RuleFields<'_>) -> Result<T, RuleError>> Reader<'w, F> {
    fn new(fields: &'static Fields, parse: F, warnings: &'w mut Vec<RuleWarning>) -> Self {
        Reader {
            fields,
            parse,
            warnings,
        }
    }

    /// Rule `index` of a list parsed from `item` (an object, or its error), and a warning for each of
    /// its unknown fields (noted while the object is at hand: a pass of its own cost a fifth of a
    /// load of small rules).
    fn item(&mut self, index: usize, item: &RuleItem) -> Result<T, RuleError> {
        let map = item.as_ref().map_err(Clone::clone)?;
        self.fields.unknown(index, map, self.warnings);
        (self.parse)(RuleFields::new(index, map))
    }

    /// Every rule of a list, or the error of each that fails to parse.
    fn each(&mut self, items: &[RuleItem]) -> Result<Vec<T>, RuleError> {
        all_or_errors(items.iter().enumerate().map(|(i, item)| self.item(i, item)))
    }
}

/// How many warnings of one load are logged one by one; the rest are counted in one event, so that a
/// list of a mebibyte of misspelt fields makes two dozen lines, not a hundred thousand.
const MAX_LOGGED_WARNINGS: usize = 20;

/// Logs the warnings of a load of `rule_type` (see [`Floodgate::load_rules_json`]).
fn log_warnings(rule_type: RuleType, warnings: &[RuleWarning]) {
    for warning in warnings.iter().take(MAX_LOGGED_WARNINGS) {
        tracing::warn!(
            target: "floodgate::rules",
            rule_type = rule_type.as_str(),
            "{warning}"
        );
    }
    let more = warnings.len().saturating_sub(MAX_LOGGED_WARNINGS);
    if more > 0 {
        tracing::warn!(
            target: "floodgate::rules",
            rule_type = rule_type.as_str(),
            more,
            "and {more} more warnings of this load"
        );
    }
}

/// Sentinel's name of the context entries run in when none was entered.
pub const DEFAULT_CONTEXT_NAME: &str = "sentinel_default_context";
/// Sentinel's name of the node that counts all inbound traffic.
pub const TOTAL_INBOUND_TRAFFIC: &str = "__total_inbound_traffic__";
/// Sentinel's name of the call tree's root.
pub const MACHINE_ROOT: &str = "machine-root";
/// Sentinel's default cap on resources (`MAX_SLOT_CHAIN_SIZE`).
pub const DEFAULT_MAX_RESOURCES: usize = 6000;
/// Sentinel's default cap on context names (`MAX_CONTEXT_NAME_SIZE`).
pub const DEFAULT_MAX_CONTEXTS: usize = 2000;
/// The default cap on origins counted apart per resource (Sentinel has none: each caller name, often
/// taken from a request header, made an origin node on every resource it called, for good).
pub const DEFAULT_MAX_ORIGINS: usize = 1000;
/// The origin that callers past a resource's origin cap share (see
/// [`FloodgateBuilder::max_origins`]), and callers whose origin is longer than [`MAX_ORIGIN_LEN`].
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
const MAX_INTERNED_ORIGINS: usize = 10_000;
/// Sentinel's default occupy timeout for prioritized entries.
pub const DEFAULT_OCCUPY_TIMEOUT: Duration = Duration::from_millis(500);

static NEXT_ENGINE_ID: AtomicU64 = AtomicU64::new(1);

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

/// What a new name past the resource cap gets.
enum PastCap {
    /// Not past it (the cap is not reached, or rules name it exactly): a resource of its own.
    No,
    /// No rule matches it: none, or [`OVER_CAP_RESOURCE`].
    Unruled,
    /// Only regex rules match it, these (a signature): a resource shared with the names they match.
    Regex(String),
}

/// Reads `lock`, which holds plain data a panicking writer cannot leave half-made.
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

/// Where a new entry hangs in the call tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parent {
    /// Directly under its context's entrance node.
    Entrance,
    /// Under another entry's node.
    Node(u32),
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    pub(crate) geometry: WindowGeometry,
    pub(crate) cold_factor: f64,
    pub(crate) max_resources: usize,
    pub(crate) max_contexts: usize,
    pub(crate) max_origins: usize,
    pub(crate) occupy_timeout_ms: u64,
    pub(crate) eager_context_stats: bool,
    pub(crate) param_capacity: Option<usize>,
}

/// The resource shared by entries on new names past the resource cap while system rules or default
/// (`"*"`) degrade rules are in force (those apply to every entry, and need a resource to count it on,
/// not one per name). Its statistics, and its default breakers, are those of all such entries together.
pub const OVER_CAP_RESOURCE: &str = "__over_resource_cap__";

/// An engine setting was invalid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The window geometry.
    #[error(transparent)]
    Window(#[from] WindowError),
    /// The cold factor was not a number > 1.
    #[error("cold factor must be a number > 1, got {0}")]
    ColdFactor(f64),
}

/// Counters about the engine itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineStats {
    /// Resources with statistics.
    pub resources: usize,
    /// Named contexts (the default one included).
    pub contexts: usize,
    /// Entries on a new resource past the resource cap that no rule names exactly (passed without
    /// statistics, counted on [`OVER_CAP_RESOURCE`] while system or default `"*"` degrade rules are in
    /// force, or, when only regex rules match them, on the resource shared by the names those rules
    /// match).
    pub resource_cap_hits: u64,
    /// Entries in a new context past the context cap (run in the default context instead).
    pub context_cap_hits: u64,
}

pub(crate) struct Inner {
    pub(crate) id: u64,
    /// The engine's own handle, for entries that must own one.
    me: std::sync::Weak<Inner>,
    pub(crate) clock: Arc<dyn Clock>,
    /// `clock` itself when it is a [`CachedClock`] (the default): read without a dynamic call.
    cached_clock: Option<CachedClock>,
    pub(crate) chain: SlotChain,
    pub(crate) config: Config,
    pub(crate) errors: ErrorFilter,
    pub(crate) block_log: BlockLog,
    pub(crate) inbound: ClusterNode,
    pub(crate) flow: FlowRules,
    pub(crate) degrade: DegradeRules,
    pub(crate) authority: AuthorityRules,
    pub(crate) system: SystemRules,
    pub(crate) param_flow: ParamFlowRules,
    inbound_name: Arc<str>,
    resources: Arena<Resource>,
    resource_index: NameIndex,
    contexts: Arena<ContextData>,
    context_index: NameIndex,
    default_nodes: Arena<DefaultNode>,
    origin_nodes: Arena<StatisticNode>,
    origins: Arena<Box<str>>,
    origin_index: NameIndex,
    create_lock: Mutex<()>,
    /// The resources names past the cap share when only regex rules match them, by the regex rules
    /// that match (see `regex_shared_resource`).
    regex_shared: RwLock<FxHashMap<Box<str>, u32>>,
    enabled: AtomicBool,
    resource_cap_hits: AtomicU64,
    context_cap_hits: AtomicU64,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Floodgate")
            .field("clock", &self.clock)
            .field("chain", &self.chain)
            .field("resources", &self.resources.len())
            .field("enabled", &self.enabled.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, ()> {
        self.create_lock.lock().unwrap_or_else(|e| e.into_inner())
    }

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

    /// The resource named `name`, created on first sight. Past the resource cap, a name no rule names
    /// gets [`OVER_CAP_RESOURCE`] while system or default degrade rules are in force, else `None`: the
    /// entry then passes without statistics; a name rules name exactly gets its own resource, and one
    /// only regex rules match shares a resource with the names the same regex rules match (so the cap
    /// never turns into fail-open, and regex rules cannot grow the engine without bound).
    #[inline]
    pub(crate) fn resource(&self, name: &str) -> Option<&Resource> {
        if let Some(id) = last_lookup::recall(self.id, name) {
            if let Some(resource) = self.resources.get(id) {
                if *resource.name == *name {
                    return Some(resource);
                }
            }
        }
        let resource = match self.resource_index.get(name) {
            Some(id) => self.resources.get(id),
            None => self.create_resource(name),
        }?;
        last_lookup::remember(self.id, name, resource.id);
        Some(resource)
    }

    #[cold]
    fn create_resource(&self, name: &str) -> Option<&Resource> {
        // Past the cap every name of a flood is new: decided before the engine's lock, so that such
        // entries do not all queue on it (the resources only grow, so the cap stays reached).
        match self.past_cap(name) {
            PastCap::No => {}
            PastCap::Unruled => return self.over_cap_resource(),
            PastCap::Regex(signature) => return self.regex_shared_resource(name, signature),
        }
        let guard = self.lock();
        if let Some(id) = self.resource_index.get(name) {
            return self.resources.get(id);
        }
        match self.past_cap(name) {
            PastCap::No => self.push_resource_locked(name),
            PastCap::Unruled => {
                drop(guard);
                self.over_cap_resource()
            }
            PastCap::Regex(signature) => {
                drop(guard);
                self.regex_shared_resource(name, signature)
            }
        }
    }

    /// What `name`, new, gets with respect to the resource cap.
    fn past_cap(&self, name: &str) -> PastCap {
        if self.resources.len() < self.config.max_resources || self.names_exactly(name) {
            return PastCap::No;
        }
        let signature = self.regex_signature(name);
        if signature.is_empty() {
            PastCap::Unruled
        } else {
            PastCap::Regex(signature)
        }
    }

    /// The resource of a new name past the cap that only regex rules match (MEM-03: one resource per
    /// raw path would grow the engine without bound): the resource of the first such name matched by
    /// exactly the same regex rules (their `signature`), created for `name` if there is none. The
    /// names sharing it share its statistics, and so its limits and breakers: stricter, never open.
    /// A shared resource is shared only while the rules in force treat its name as they treat `name`:
    /// not once rules name it exactly, nor once regex rules loaded since match it and not `name`.
    fn regex_shared_resource(&self, name: &str, signature: String) -> Option<&Resource> {
        self.resource_cap_hits.fetch_add(1, Ordering::Relaxed);
        let shared = |by: &FxHashMap<Box<str>, u32>| {
            let resource = self.resources.get(*by.get(signature.as_str())?)?;
            (!self.names_exactly(&resource.name)
                && self.regex_signature(&resource.name) == signature)
                .then_some(resource)
        };
        if let Some(resource) = shared(&read(&self.regex_shared)) {
            return Some(resource);
        }
        let _guard = self.lock();
        if let Some(resource) = shared(&read(&self.regex_shared)) {
            return Some(resource);
        }
        if let Some(id) = self.resource_index.get(name) {
            return self.resources.get(id);
        }
        let resource = self.push_resource_locked(name)?;
        self.regex_shared
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(signature.into_boxed_str(), resource.id);
        Some(resource)
    }

    /// The resource of an entry on a new name past the cap: none, or [`OVER_CAP_RESOURCE`] while rules
    /// that apply to every entry are in force.
    fn over_cap_resource(&self) -> Option<&Resource> {
        self.resource_cap_hits.fetch_add(1, Ordering::Relaxed);
        if !self.system.in_force() && !self.degrade.in_force_for(true) {
            return None;
        }
        // System rules apply to every inbound entry, and default (`"*"`) breakers to every resource:
        // past the cap they still do, through one shared resource, so that names a client makes up
        // cannot grow the engine without bound.
        if let Some(id) = self.resource_index.get(OVER_CAP_RESOURCE) {
            return self.resources.get(id);
        }
        let _guard = self.lock();
        if let Some(id) = self.resource_index.get(OVER_CAP_RESOURCE) {
            return self.resources.get(id);
        }
        self.push_resource_locked(OVER_CAP_RESOURCE)
    }

    /// Creates the resource `name` (the caller holds the engine lock and checked the cap).
    fn push_resource_locked(&self, name: &str) -> Option<&Resource> {
        let count = self.resources.len();
        let name: Arc<str> = Arc::from(name);
        let id = u32::try_from(count).ok()?;
        let default_node = self
            .default_nodes
            .push(DefaultNode::new(
                id,
                self.config.geometry,
                self.config.eager_context_stats,
            ))
            .ok()?;
        let resource = Resource {
            id,
            name: name.clone(),
            cluster: ClusterNode::new(self.config.geometry),
            default_node,
            context_nodes: ArcSwapOption::empty(),
            resource_type: AtomicU8::new(ResourceType::Common as u8),
        };
        let id = self.resources.push(resource).ok()?;
        self.resource_index.insert_locked(name, id);
        self.resources.get(id)
    }

    /// Whether a rule names `resource` exactly, or a RELATE rule reads it, or a custom slot has rules
    /// for it (such a resource is created even past the resource cap: a RELATE rule needs its
    /// reference counted).
    fn names_exactly(&self, resource: &str) -> bool {
        let flow = self.flow.snapshot();
        flow.names(resource)
            || flow.references(resource, crate::flow::FlowStrategy::Relate)
            || self.degrade.snapshot().names(resource)
            || self.authority.snapshot().names(resource)
            || self.param_flow.snapshot().names(resource)
            || self.chain.has_rules(resource)
    }

    /// The regex rules of every type that match `resource`, as one string (empty: none match), in a
    /// canonical order: the same set of rules loaded in another order is the same signature.
    fn regex_signature(&self, resource: &str) -> String {
        let mut signature = String::new();
        self.flow
            .snapshot()
            .push_matching_regex(resource, &mut signature);
        self.degrade
            .snapshot()
            .push_matching_regex(resource, &mut signature);
        self.authority
            .snapshot()
            .push_matching_regex(resource, &mut signature);
        self.param_flow
            .snapshot()
            .push_matching_regex(resource, &mut signature);
        // Each rule's part ends with a NUL (see `rules::push_matching`).
        let mut parts: Vec<&str> = signature.split_terminator('\0').collect();
        if parts.windows(2).all(|w| w[0] <= w[1]) {
            return signature;
        }
        parts.sort_unstable();
        let mut sorted = String::with_capacity(signature.len());
        for part in parts {
            sorted.push_str(part);
            sorted.push('\0');
        }
        sorted
    }

    /// Whether any rule of `rule_type` is in force.
    #[inline]
    pub(crate) fn rules_in_force(&self, rule_type: RuleType) -> bool {
        match rule_type {
            RuleType::Flow => self.flow.in_force(),
            RuleType::Degrade => self.degrade.in_force(),
            RuleType::Authority => self.authority.in_force(),
            RuleType::System => self.system.in_force(),
            RuleType::ParamFlow => self.param_flow.any(),
        }
    }

    /// The cluster statistics of `resource` if it exists (never creates it).
    pub(crate) fn existing_cluster_stats(&self, resource: &str) -> Option<&StatisticNode> {
        let id = self.resource_index.get(resource)?;
        Some(&self.resources.get(id)?.cluster.stats)
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

    pub(crate) fn resource_by_id(&self, id: u32) -> Option<&Resource> {
        self.resources.get(id)
    }

    pub(crate) fn context(&self, id: u32) -> Option<&ContextData> {
        self.contexts.get(id)
    }

    /// The context named `name`, created on first sight; the default context past the context cap.
    pub(crate) fn context_id(&self, name: &str) -> u32 {
        if name == DEFAULT_CONTEXT_NAME {
            return 0;
        }
        if let Some(id) = self.context_index.get(name) {
            return id;
        }
        // A context a CHAIN rule names is created even past the cap: in the default context, the
        // rule would never apply. Checked before the lock too, so that a flood of new names past
        // the cap does not queue on it.
        let over_cap = || {
            // The default context (always there) does not count, as in Sentinel.
            self.contexts.len() > self.config.max_contexts
                && !self
                    .flow
                    .snapshot()
                    .references(name, crate::flow::FlowStrategy::Chain)
        };
        if !over_cap() {
            let _guard = self.lock();
            if let Some(id) = self.context_index.get(name) {
                return id;
            }
            if !over_cap() {
                return self.create_context_locked(name).unwrap_or(0);
            }
        }
        self.context_cap_hits.fetch_add(1, Ordering::Relaxed);
        0
    }

    fn create_context_locked(&self, name: &str) -> Option<u32> {
        let name: Arc<str> = Arc::from(name);
        let id = u32::try_from(self.contexts.len()).ok()?;
        let id = self
            .contexts
            .push(ContextData {
                id,
                entrance: EntranceNode::new(name.clone()),
            })
            .ok()?;
        self.context_index.insert_locked(name, id);
        Some(id)
    }

    pub(crate) fn default_node(&self, id: u32) -> Option<&DefaultNode> {
        self.default_nodes.get(id)
    }

    /// The node of `resource` in context `context`, created on first sight.
    #[inline]
    pub(crate) fn node_in_context(&self, resource: &Resource, context: u32) -> Option<u32> {
        if context == 0 {
            return Some(resource.default_node);
        }
        if let Some(id) = resource
            .context_nodes
            .load()
            .as_ref()
            .and_then(|m| m.get(&context).copied())
        {
            return Some(id);
        }
        let _guard = self.lock();
        let current = resource.context_nodes.load_full();
        if let Some(id) = current.as_ref().and_then(|m| m.get(&context).copied()) {
            return Some(id);
        }
        let id = self
            .default_nodes
            .push(DefaultNode::new(
                resource.id,
                self.config.geometry,
                self.config.eager_context_stats,
            ))
            .ok()?;
        let mut next = current.map_or_else(FxHashMap::default, |m| (*m).clone());
        next.insert(context, id);
        resource.context_nodes.store(Some(Arc::new(next)));
        Some(id)
    }

    /// Makes `node` a child of `parent` in `context` (once).
    #[inline]
    pub(crate) fn attach(
        &self,
        context: &ContextData,
        parent: Parent,
        node_id: u32,
        node: &DefaultNode,
    ) {
        match parent {
            Parent::Entrance => {
                if !node.is_attached_to_entrance() {
                    let _guard = self.lock();
                    context.entrance.children.add_locked(node_id);
                    node.attached_to_entrance.store(true, Ordering::Relaxed);
                }
            }
            Parent::Node(p) => {
                if p == node_id {
                    return;
                }
                if let Some(parent) = self.default_nodes.get(p) {
                    if !parent.children.contains(node_id) {
                        let _guard = self.lock();
                        parent.children.add_locked(node_id);
                    }
                }
            }
        }
    }

    /// The origin node id of `origin` on `resource`, created on first sight (past the resource's origin
    /// cap: the shared [`OVER_CAP_ORIGIN`] node); `None` for no origin.
    #[inline]
    pub(crate) fn origin_node_id(&self, resource: &Resource, origin: &str) -> Option<u32> {
        if origin.is_empty() {
            return None;
        }
        if let Some(id) = resource.cluster.origin(origin) {
            return Some(id);
        }
        self.add_origin_node(resource, origin)
    }

    #[cold]
    fn add_origin_node(&self, resource: &Resource, origin: &str) -> Option<u32> {
        let named = || {
            self.flow
                .snapshot()
                .rules_of(resource)
                .is_some_and(|rules| rules.names(origin))
        };
        let over_cap = || {
            origin.len() > MAX_ORIGIN_LEN
                || (resource.cluster.origin_count() >= self.config.max_origins && !named())
        };
        // The usual case past the cap, without the lock: the shared node exists.
        if over_cap() {
            if let Some(id) = resource.cluster.origin(OVER_CAP_ORIGIN) {
                return Some(id);
            }
        }
        let _guard = self.lock();
        if let Some(id) = resource.cluster.origin(origin) {
            return Some(id);
        }
        let key = if over_cap() { OVER_CAP_ORIGIN } else { origin };
        if let Some(id) = resource.cluster.origin(key) {
            return Some(id);
        }
        let id = self
            .origin_nodes
            .push(StatisticNode::new(self.config.geometry))
            .ok()?;
        resource.cluster.add_origin_locked(Arc::from(key), id);
        Some(id)
    }

    /// `origin` interned: an id whose string lives as long as the engine (contexts carry the id, entries
    /// borrow the string, nothing is reference-counted per entry). `bounded`: past
    /// [`MAX_INTERNED_ORIGINS`] a new origin, and always one longer than [`MAX_ORIGIN_LEN`], is not
    /// interned, and `u32::MAX` (no origin) comes back, without taking the engine's lock.
    pub(crate) fn intern_origin(&self, origin: &str, bounded: bool) -> u32 {
        if bounded && origin.len() > MAX_ORIGIN_LEN {
            return u32::MAX;
        }
        if let Some(id) = self.origin_index.get(origin) {
            return id;
        }
        if bounded && self.origins.len() >= MAX_INTERNED_ORIGINS {
            return u32::MAX;
        }
        let _guard = self.lock();
        if let Some(id) = self.origin_index.get(origin) {
            return id;
        }
        if bounded && self.origins.len() >= MAX_INTERNED_ORIGINS {
            return u32::MAX;
        }
        match self.origins.push(Box::from(origin)) {
            Ok(id) => {
                self.origin_index.insert_locked(Arc::from(origin), id);
                id
            }
            Err(_) => u32::MAX,
        }
    }

    /// A context's origin interned (see [`MAX_INTERNED_ORIGINS`]): past the cap, a new one is
    /// [`OVER_CAP_ORIGIN`].
    pub(crate) fn context_origin(&self, origin: &str) -> u32 {
        match self.intern_origin(origin, true) {
            u32::MAX => self.intern_origin(OVER_CAP_ORIGIN, false),
            id => id,
        }
    }

    /// Interns the origins `rules` name, whatever the cap (see [`MAX_INTERNED_ORIGINS`]).
    fn intern_rule_origins(&self, rule_type: RuleType) {
        match rule_type {
            RuleType::Authority => {
                let rules = self.authority.snapshot();
                self.intern_all(rules.rules().flat_map(|r| r.limit_app.split(',')));
            }
            RuleType::Flow => {
                let rules = self.flow.snapshot();
                self.intern_all(
                    rules
                        .rules()
                        .map(|r| r.limit_app.as_str())
                        .filter(|app| *app != "default" && *app != "other"),
                );
            }
            _ => {}
        }
    }

    /// Interns every non-empty origin of `origins` that is not interned yet, whatever the cap, in one
    /// batch: the index copies each of its shards once (an origin at a time, the copies grew with the
    /// square of the origins: the regression test `origins_a_rule_list_names_are_interned_in_one_batch`).
    fn intern_all<'a>(&self, origins: impl IntoIterator<Item = &'a str>) {
        let missing: Vec<&str> = origins
            .into_iter()
            .filter(|o| !o.is_empty() && self.origin_index.get(o).is_none())
            .collect();
        if missing.is_empty() {
            return;
        }
        let _guard = self.lock();
        let mut batch: KeyedMap<&str, ()> = keyed_map();
        let mut entries = Vec::new();
        for origin in missing {
            if self.origin_index.get(origin).is_some() || batch.insert(origin, ()).is_some() {
                continue;
            }
            match self.origins.push(Box::from(origin)) {
                Ok(id) => entries.push((Arc::from(origin), id)),
                Err(_) => break,
            }
        }
        self.origin_index.insert_many_locked(entries);
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

    fn view<'a>(&'a self, node: &'a StatisticNode) -> NodeView<'a> {
        NodeView {
            node,
            clock: &*self.clock,
        }
    }
}

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
    /// counted on [`OVER_CAP_RESOURCE`], or on the resource of another name the same regex rules
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

    /// Loads a whole rule list of type `rule_type` from Sentinel JSON. Any invalid rule rejects the list
    /// (the error names the rule's index, the field and why) and the rules in force stay in force.
    /// Thresholds are required (`count`; a system rule sets at least one); a field that rules of the
    /// type do not have (none of Sentinel's) is ignored and reported in the [`RuleLoad`]'s warnings,
    /// each also logged at `warn` on `floodgate::rules` (the first 20 of a load one by one, then their
    /// number; a refused list's too).
    ///
    /// Limits, the same for the typed loaders, each refusing the list with an error naming the first
    /// rule over it:
    ///
    /// * at most 100 regex rules a list, counted before any pattern is compiled (a pattern is compiled
    ///   on each load and matched against every new resource), each pattern at most 512 bytes and
    ///   256 KiB compiled: the worst list compiles in about 0.1 s;
    /// * at most 100 rules of the type on one resource (or one pattern): each entry checks every rule
    ///   of its resource, each with its own state, so the check cannot be made sublinear, and 24,000
    ///   rules on one resource halved a guarded endpoint's throughput.
    ///
    /// A list of a mebibyte loads in a few tens of milliseconds (a reload keeps the state of each rule
    /// that did not change: warm-up, pacing, breakers, value caches).
    ///
    /// ```
    /// use floodgate_core::{Floodgate, RuleType};
    ///
    /// let fg = Floodgate::default();
    /// let load = fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":20,"controlBehavior":1}]"#)?;
    /// assert!(load.warnings().is_empty());
    /// let err = fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":-1}]"#).unwrap_err();
    /// assert_eq!(err.to_string(), "rule 0: `count` must be a finite number ≥ 0, got -1");
    /// let err = fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","Count":5}]"#).unwrap_err();
    /// assert_eq!(err.to_string(), "rule 0: `count` is required");
    /// assert_eq!(fg.flow_rules().len(), 1);
    /// let load = fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":5,"maxQps":9}]"#)?;
    /// assert_eq!(load.warnings()[0].to_string(), "rule 0: unknown field `maxQps` (ignored)");
    /// # Ok::<(), floodgate_core::RuleError>(())
    /// ```
    pub fn load_rules_json(&self, rule_type: RuleType, json: &str) -> Result<RuleLoad, RuleError> {
        let mut warnings = Vec::new();
        let result = self.load_json(rule_type, json, &mut warnings);
        log_warnings(rule_type, &warnings);
        self.report_load(rule_type, result)?;
        Ok(RuleLoad::new(warnings))
    }

    fn load_json(
        &self,
        rule_type: RuleType,
        json: &str,
        warnings: &mut Vec<RuleWarning>,
    ) -> Result<(), RuleError> {
        let items = parse_rule_items(json)?;
        if rule_type != RuleType::System {
            // Before any rule is read: a list of too many patterns is refused without compiling one.
            check_regex_count(regex_flags(&items))?;
        }
        match rule_type {
            RuleType::Flow => self.inner.flow.load(
                Reader::new(&FlowRule::FIELDS, FlowRule::from_fields, warnings).each(&items)?,
            ),
            RuleType::Degrade => self.inner.degrade.load(
                Reader::new(&DegradeRule::FIELDS, DegradeRule::from_fields, warnings)
                    .each(&items)?,
            ),
            RuleType::Authority => {
                let mut read =
                    Reader::new(&AuthorityRule::FIELDS, AuthorityRule::from_fields, warnings);
                let parsed: Vec<Result<AuthorityRule, RuleError>> = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| read.item(i, item))
                    .collect();
                if parsed.iter().any(Result::is_err) {
                    // The conflicts among the rules that did parse are named too.
                    let ok = parsed
                        .iter()
                        .enumerate()
                        .filter_map(|(i, r)| Some((i, r.as_ref().ok()?)));
                    let mut errors = crate::authority::conflicts(ok);
                    errors.extend(parsed.into_iter().filter_map(Result::err));
                    return no_errors(errors);
                }
                self.inner
                    .authority
                    .load(parsed.into_iter().filter_map(Result::ok).collect())
            }
            RuleType::System => self.inner.system.load(
                Reader::new(&SystemRule::FIELDS, SystemRule::from_fields, warnings).each(&items)?,
            ),
            RuleType::ParamFlow => self.inner.param_flow.load(
                Reader::new(&ParamFlowRule::FIELDS, ParamFlowRule::from_fields, warnings)
                    .each(&items)?,
            ),
        }
    }

    /// Reports a rule load to `tracing` (target `floodgate::rules`): `info` with the count in force, or
    /// `warn` with the error of a rejected list.
    fn report_load(
        &self,
        rule_type: RuleType,
        result: Result<(), RuleError>,
    ) -> Result<(), RuleError> {
        if result.is_ok() {
            self.inner.intern_rule_origins(rule_type);
        }
        match &result {
            Ok(()) => tracing::info!(
                target: "floodgate::rules",
                rule_type = rule_type.as_str(),
                count = self.rule_count(rule_type),
                "rules loaded"
            ),
            Err(error) => tracing::warn!(
                target: "floodgate::rules",
                rule_type = rule_type.as_str(),
                // Quoted: one event, one line (a regex error spans several, and echoes the rule).
                error = ?error.to_string(),
                "rule list rejected; the rules in force stay"
            ),
        }
        result
    }

    /// How many rules of `rule_type` are loaded (without copying them): the length of
    /// [`rules_json`](Self::rules_json)'s list (an authority rule loaded twice counts twice).
    pub fn rule_count(&self, rule_type: RuleType) -> usize {
        match rule_type {
            RuleType::Flow => self.inner.flow.snapshot().rules().count(),
            RuleType::Degrade => self.inner.degrade.snapshot().rules().count(),
            RuleType::Authority => self.inner.authority.snapshot().rules().count(),
            RuleType::System => self.inner.system.snapshot().rules().len(),
            RuleType::ParamFlow => self.inner.param_flow.snapshot().rules().count(),
        }
    }

    /// The rules in force of type `rule_type`, as Sentinel JSON. Authority and system rules are returned
    /// as loaded: repeated authority rules included, and the system rules as a list rather than
    /// Sentinel's one synthesized rule per dimension (the merged thresholds are in
    /// [`system_status`](Self::system_status)).
    pub fn rules_json(&self, rule_type: RuleType) -> String {
        match rule_type {
            RuleType::Flow => {
                to_json_array(self.inner.flow.snapshot().rules().map(FlowRule::to_json))
            }
            RuleType::Degrade => to_json_array(
                self.inner
                    .degrade
                    .snapshot()
                    .rules()
                    .map(DegradeRule::to_json),
            ),
            RuleType::Authority => to_json_array(
                self.inner
                    .authority
                    .snapshot()
                    .rules()
                    .map(AuthorityRule::to_json),
            ),
            RuleType::System => to_json_array(
                self.inner
                    .system
                    .snapshot()
                    .rules()
                    .iter()
                    .map(SystemRule::to_json),
            ),
            RuleType::ParamFlow => to_json_array(
                self.inner
                    .param_flow
                    .snapshot()
                    .rules()
                    .map(ParamFlowRule::to_json),
            ),
        }
    }

    /// Loads a whole list of flow rules (validated as [`load_rules_json`](Self::load_rules_json) does).
    pub fn load_flow_rules(
        &self,
        rules: impl IntoIterator<Item = FlowRule>,
    ) -> Result<(), RuleError> {
        let result = self.inner.flow.load(rules.into_iter().collect());
        self.report_load(RuleType::Flow, result)
    }

    /// The flow rules in force, in load order.
    pub fn flow_rules(&self) -> Vec<FlowRule> {
        self.inner.flow.snapshot().rules().cloned().collect()
    }

    /// What each flow rule's controller is doing (warm-up tokens, pacing interval), in load order.
    pub fn flow_status(&self) -> Vec<FlowStatus> {
        self.inner.flow.snapshot().statuses()
    }

    /// Loads a whole list of degrade rules (validated as [`load_rules_json`](Self::load_rules_json)
    /// does). A rule equal in every field to one in force keeps its breakers' state; a changed rule
    /// starts closed. A rule on resource `"*"` is a default rule: it applies, with a breaker per
    /// resource, to every resource that has no degrade rule of its own.
    pub fn load_degrade_rules(
        &self,
        rules: impl IntoIterator<Item = DegradeRule>,
    ) -> Result<(), RuleError> {
        let result = self.inner.degrade.load(rules.into_iter().collect());
        self.report_load(RuleType::Degrade, result)
    }

    /// The degrade rules in force, in load order.
    pub fn degrade_rules(&self) -> Vec<DegradeRule> {
        self.inner.degrade.snapshot().rules().cloned().collect()
    }

    /// Every circuit breaker and its state: one per rule on a resource name, one per matched resource
    /// for regex and default rules (those appear once a resource was entered).
    pub fn circuit_breakers(&self) -> Vec<BreakerStatus> {
        let now = self.inner.clock.now_ms();
        self.inner.degrade.snapshot().statuses(now)
    }

    /// Calls `observer` on every breaker state change (replacing an observer of the same `name`).
    /// Observers run on the thread that made the change, while it serves a request: keep them quick.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use floodgate_core::{BreakerState, DegradeRule, Floodgate, ManualClock};
    ///
    /// let fg = Floodgate::builder().clock(ManualClock::new(1_700_000_000_000)).build();
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = seen.clone();
    /// fg.add_breaker_observer("log", move |e| log.lock().unwrap().push((e.previous, e.next, e.snapshot)));
    /// fg.load_degrade_rules([DegradeRule::error_count("R", 0.0).time_window(10).min_request_amount(1)])?;
    /// let entry = fg.entry("R").enter().unwrap();
    /// entry.trace(&std::fmt::Error);
    /// drop(entry);
    /// assert_eq!(*seen.lock().unwrap(), [(BreakerState::Closed, BreakerState::Open, Some(1.0))]);
    /// # Ok::<(), floodgate_core::RuleError>(())
    /// ```
    pub fn add_breaker_observer(
        &self,
        name: &str,
        observer: impl Fn(&BreakerStateChange) + Send + Sync + 'static,
    ) {
        self.inner.degrade.observers.add(name, Arc::new(observer));
    }

    /// Removes the breaker observer called `name`; whether there was one.
    pub fn remove_breaker_observer(&self, name: &str) -> bool {
        self.inner.degrade.observers.remove(name)
    }

    /// Loads a whole list of authority rules (validated as [`load_rules_json`](Self::load_rules_json)
    /// does). A resource takes one rule: a list with two rules for one resource that admit different
    /// origins is refused (Sentinel applied the first and ignored the others); rules that admit the
    /// same origins (the same rule twice, another `id`, the tokens reordered) are one rule, the first,
    /// which blocks report.
    pub fn load_authority_rules(
        &self,
        rules: impl IntoIterator<Item = AuthorityRule>,
    ) -> Result<(), RuleError> {
        let result = self.inner.authority.load(rules.into_iter().collect());
        self.report_load(RuleType::Authority, result)
    }

    /// The authority rules in force, in load order (repeated rules included).
    pub fn authority_rules(&self) -> Vec<AuthorityRule> {
        self.inner.authority.snapshot().rules().cloned().collect()
    }

    /// Loads a whole list of system rules (validated as [`load_rules_json`](Self::load_rules_json)
    /// does). They merge by the minimum per dimension; an empty list turns system protection off.
    pub fn load_system_rules(
        &self,
        rules: impl IntoIterator<Item = SystemRule>,
    ) -> Result<(), RuleError> {
        let result = self.inner.system.load(rules.into_iter().collect());
        self.report_load(RuleType::System, result)
    }

    /// The system rules in force, as loaded. (Sentinel's `getRules` answers one synthesized rule per
    /// dimension instead; the merged thresholds are in [`system_status`](Self::system_status).)
    pub fn system_rules(&self) -> Vec<SystemRule> {
        self.inner.system.snapshot().rules().to_vec()
    }

    /// The system probe's load average and CPU usage (`None` when unavailable) and the merged
    /// thresholds in force. Reading it starts the probe's sampler, so the first readings of the real
    /// probe may be unavailable; the inbound traffic figures are in [`inbound_node`](Self::inbound_node).
    pub fn system_status(&self) -> SystemStatus {
        self.inner.system.status()
    }

    /// Loads a whole list of hot-parameter rules (validated as
    /// [`load_rules_json`](Self::load_rules_json) does).
    pub fn load_param_flow_rules(
        &self,
        rules: impl IntoIterator<Item = ParamFlowRule>,
    ) -> Result<(), RuleError> {
        let result = self.inner.param_flow.load(rules.into_iter().collect());
        self.report_load(RuleType::ParamFlow, result)
    }

    /// The hot-parameter rules in force, in load order.
    pub fn param_flow_rules(&self) -> Vec<ParamFlowRule> {
        self.inner.param_flow.snapshot().rules().cloned().collect()
    }

    /// What each hot-parameter rule remembers: values cached, evictions, overflows, in load order.
    pub fn param_flow_status(&self) -> Vec<ParamFlowStatus> {
        self.inner.param_flow.snapshot().statuses()
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

    /// The statistics of `resource` across all contexts.
    pub fn cluster_node(&self, resource: &str) -> Option<NodeView<'_>> {
        let id = self.inner.resource_index.get(resource)?;
        let resource = self.inner.resources.get(id)?;
        Some(self.inner.view(&resource.cluster.stats))
    }

    /// The statistics of calls to `resource` from `origin`.
    pub fn origin_node(&self, resource: &str, origin: &str) -> Option<NodeView<'_>> {
        let id = self.inner.resource_index.get(resource)?;
        let resource = self.inner.resources.get(id)?;
        let origin = self
            .inner
            .origin_nodes
            .get(resource.cluster.origin(origin)?)?;
        Some(self.inner.view(origin))
    }

    /// The per-origin statistics of `resource`.
    pub fn origin_nodes(&self, resource: &str) -> Vec<NodeSnapshot> {
        let now = self.inner.clock.now_ms();
        let Some(resource) = self
            .inner
            .resource_index
            .get(resource)
            .and_then(|id| self.inner.resources.get(id))
        else {
            return Vec::new();
        };
        resource
            .cluster
            .origins()
            .into_iter()
            .filter_map(|(origin, id)| {
                let node = self.inner.origin_nodes.get(id)?;
                Some(NodeSnapshot::read(origin, node, now))
            })
            .collect()
    }

    /// The statistics of `resource` within the context `context` (starts that node's counting if it
    /// was not counting yet: see [`FloodgateBuilder::count_context_nodes`]).
    pub fn context_node(&self, resource: &str, context: &str) -> Option<NodeView<'_>> {
        let resource = self
            .inner
            .resources
            .get(self.inner.resource_index.get(resource)?)?;
        let context = if context == DEFAULT_CONTEXT_NAME {
            0
        } else {
            self.inner.context_index.get(context)?
        };
        let id = if context == 0 {
            resource.default_node
        } else {
            *resource.context_nodes.load().as_ref()?.get(&context)?
        };
        Some(self.inner.view(self.inner.default_nodes.get(id)?.stats()))
    }

    /// All inbound traffic (`__total_inbound_traffic__`), what system rules look at.
    pub fn inbound_node(&self) -> NodeView<'_> {
        self.inner.view(&self.inner.inbound.stats)
    }

    /// A snapshot of every resource's cluster node, in creation order.
    pub fn cluster_nodes(&self) -> Vec<NodeSnapshot> {
        let now = self.inner.clock.now_ms();
        self.inner
            .resources
            .iter()
            .map(|r| NodeSnapshot::read(r.name.clone(), &r.cluster.stats, now))
            .collect()
    }

    /// The names of every resource with statistics.
    pub fn resource_names(&self) -> Vec<Arc<str>> {
        self.inner
            .resources
            .iter()
            .map(|r| r.name.clone())
            .collect()
    }

    /// The call tree: `machine-root`, one entrance per context, resources nested as they were called.
    /// Reading it starts the counting of context nodes that were not counting yet.
    pub fn call_tree(&self) -> CallTree {
        let now = self.inner.clock.now_ms();
        let entrances: Vec<CallTree> = self
            .inner
            .contexts
            .iter()
            .map(|context| {
                let mut expanded = rustc_hash::FxHashSet::default();
                let children: Vec<CallTree> = context
                    .entrance
                    .children
                    .to_vec()
                    .into_iter()
                    .filter_map(|id| self.subtree(id, now, 0, &mut expanded))
                    .collect();
                let parts: Vec<NodeSnapshot> = children.iter().map(|c| c.stats.clone()).collect();
                CallTree {
                    kind: TreeNodeKind::Entrance,
                    stats: NodeSnapshot::sum(context.name().clone(), &parts),
                    children,
                }
            })
            .collect();
        let parts: Vec<NodeSnapshot> = entrances.iter().map(|c| c.stats.clone()).collect();
        CallTree {
            kind: TreeNodeKind::Root,
            stats: NodeSnapshot::sum(Arc::from(MACHINE_ROOT), &parts),
            children: entrances,
        }
    }

    /// The tree under node `id`. Resources that call each other make the links a graph, not a tree:
    /// each node's children are listed once per context (`expanded`), where the walk first meets it,
    /// and it appears elsewhere without them. (Walking every path took time exponential in the depth.)
    fn subtree(
        &self,
        id: u32,
        now: u64,
        depth: usize,
        expanded: &mut rustc_hash::FxHashSet<u32>,
    ) -> Option<CallTree> {
        let node = self.inner.default_nodes.get(id)?;
        let resource = self.inner.resources.get(node.resource)?;
        let children = if depth < 64 && expanded.insert(id) {
            node.children
                .to_vec()
                .into_iter()
                .filter_map(|c| self.subtree(c, now, depth + 1, expanded))
                .collect()
        } else {
            Vec::new()
        };
        Some(CallTree {
            kind: TreeNodeKind::Resource,
            stats: NodeSnapshot::read(resource.name.clone(), node.stats(), now),
            children,
        })
    }

    /// Every resource's figures for each finished second in `[start_ms, end_ms]` (at most the last 60
    /// seconds), the inbound node included, non-empty seconds only, ordered by time then resource.
    pub fn metrics(&self, start_ms: u64, end_ms: u64) -> Vec<MetricLine> {
        let now = self.inner.clock.now_ms();
        let current = now / 1000;
        let Some(last) = (end_ms / 1000)
            .min(current)
            .checked_sub(u64::from(end_ms / 1000 >= current))
        else {
            return Vec::new();
        };
        let first = start_ms.div_ceil(1000);
        if first > last {
            return Vec::new();
        }
        let mut lines = Vec::new();
        let inbound = std::iter::once((
            &self.inner.inbound_name,
            &self.inner.inbound.stats,
            ResourceType::Common as u8,
        ));
        let resources = self
            .inner
            .resources
            .iter()
            .map(|r| (&r.name, &r.cluster.stats, r.resource_type()));
        for (name, node, classification) in resources.chain(inbound) {
            for record in node.seconds(now, first, last) {
                if record.is_empty() {
                    continue;
                }
                lines.push(MetricLine {
                    timestamp: record.second * 1000,
                    resource: name.clone(),
                    pass_qps: record.pass,
                    block_qps: record.block,
                    success_qps: record.success,
                    exception_qps: record.exception,
                    rt: record.rt.checked_div(record.success).unwrap_or(0),
                    rt_sum: record.rt,
                    occupied_pass_qps: record.occupied_pass,
                    concurrency: node.cur_thread_num(),
                    classification,
                });
            }
        }
        lines.sort_by_key(|l| l.timestamp);
        lines
    }

    /// Counters about the engine: resources, contexts, and how often the caps were hit.
    pub fn stats(&self) -> EngineStats {
        EngineStats {
            resources: self.inner.resources.iter().count(),
            contexts: self.inner.contexts.iter().count(),
            resource_cap_hits: self.inner.resource_cap_hits.load(Ordering::Relaxed),
            context_cap_hits: self.inner.context_cap_hits.load(Ordering::Relaxed),
        }
    }

    /// How many resources get statistics (the builder's [`max_resources`](FloodgateBuilder::max_resources));
    /// resources with rules are created past it.
    pub fn max_resources(&self) -> usize {
        self.inner.config.max_resources
    }

    /// Blocks since the engine started, per resource and [`BlockKind`], in the order first seen: exact
    /// lifetime counters (kept by the block log, so a chain without the `log` slot counts none). Every
    /// resource keeps its own counts however many callers it has (the block log's lines gather the callers
    /// past 100 per resource and kind under origin `__other__`).
    pub fn block_counts(&self) -> Vec<(Arc<str>, BlockKind, u64)> {
        self.inner.block_log.totals()
    }

    /// The block log lines of finished seconds still held in memory (the last 1000), oldest first.
    pub fn block_log(&self) -> Vec<String> {
        self.inner.block_log.lines(self.inner.clock.now_ms())
    }

    /// The slots of this engine's chain, as `(name, order)`, in the order they run.
    pub fn slots(&self) -> Vec<(&'static str, i32)> {
        self.inner.chain.describe()
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

/// Configures a [`Floodgate`].
pub struct FloodgateBuilder {
    clock: Option<Arc<dyn Clock>>,
    /// `clock` when it is a [`CachedClock`] (or none was set: the default).
    cached_clock: Option<CachedClock>,
    config: Config,
    edits: Vec<ChainEdit>,
    errors: ErrorFilter,
    block_log_file: Option<std::path::PathBuf>,
    system_probe: Option<Arc<dyn SystemProbe>>,
}

impl fmt::Debug for FloodgateBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FloodgateBuilder")
            .field("clock", &self.clock)
            .field("edits", &self.edits)
            .field("system_probe", &self.system_probe)
            .finish_non_exhaustive()
    }
}

impl Default for FloodgateBuilder {
    fn default() -> Self {
        FloodgateBuilder {
            clock: None,
            cached_clock: None,
            config: Config {
                geometry: WindowGeometry::DEFAULT,
                cold_factor: DEFAULT_COLD_FACTOR,
                max_resources: DEFAULT_MAX_RESOURCES,
                max_contexts: DEFAULT_MAX_CONTEXTS,
                max_origins: DEFAULT_MAX_ORIGINS,
                occupy_timeout_ms: DEFAULT_OCCUPY_TIMEOUT.as_millis() as u64,
                eager_context_stats: false,
                param_capacity: None,
            },
            edits: Vec::new(),
            errors: ErrorFilter::default(),
            block_log_file: None,
            system_probe: None,
        }
    }
}

impl FloodgateBuilder {
    /// The clock (default: [`CachedClock`], the real clock refreshed every millisecond).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.cached_clock = (&clock as &dyn std::any::Any)
            .downcast_ref::<CachedClock>()
            .copied();
        self.clock = Some(Arc::new(clock));
        self
    }

    /// The clock, shared.
    pub fn shared_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.cached_clock = None;
        self.clock = Some(clock);
        self
    }

    /// How many resources get statistics (default 6000). Past it, entries on new resources without rules
    /// pass uncounted, unless system or default (`"*"`) degrade rules are in force: then they share
    /// [`OVER_CAP_RESOURCE`]. Resources that rules name exactly are always created and checked. New names
    /// that only regex rules match (one per raw URL path, say) share one resource per set of matching
    /// regex rules, the first such name's: checked by those rules, with the statistics, limits and
    /// breakers of all of them together (stricter, never open), and reported under that name (entries,
    /// blocks, metrics). Each entry on such a name matches the regex rules again (microseconds, not
    /// nanoseconds): keep resource names templates.
    pub fn max_resources(mut self, max: usize) -> Self {
        self.config.max_resources = max;
        self
    }

    /// How many named contexts exist besides the default one (default 2000, as in Sentinel). Past it,
    /// entries run in the default context.
    pub fn max_contexts(mut self, max: usize) -> Self {
        self.config.max_contexts = max;
        self
    }

    /// How many origins (callers) each resource counts apart (default 1000). Past it, a new origin's
    /// calls are counted on the resource's [`OVER_CAP_ORIGIN`] node, shared by all such callers, so an
    /// origin header a client fills in cannot grow the engine without bound. An origin a flow rule of
    /// the resource names (`limitApp`) always gets its own node. Rules read the shared node for callers
    /// past the cap (`limitApp: "other"` then limits them together: stricter, never open), and
    /// authority rules, which compare names, are unaffected.
    pub fn max_origins(mut self, max: usize) -> Self {
        self.config.max_origins = max;
        self
    }

    /// The second window of every node: `sample_count` buckets over `interval_ms` (default 2 × 500 ms).
    /// Buckets must tile whole seconds (500, 250, 200, 100 ms, …).
    pub fn second_window(
        mut self,
        sample_count: u32,
        interval_ms: u64,
    ) -> Result<Self, ConfigError> {
        self.config.geometry = WindowGeometry::new(sample_count, interval_ms)?;
        Ok(self)
    }

    /// The warm-up cold factor (default 3, Sentinel's `csp.sentinel.flow.cold.factor`): a cold resource
    /// starts at `count / cold_factor`. Must be a number > 1.
    pub fn cold_factor(mut self, cold_factor: f64) -> Result<Self, ConfigError> {
        if !cold_factor.is_finite() || cold_factor <= 1.0 {
            return Err(ConfigError::ColdFactor(cold_factor));
        }
        self.config.cold_factor = cold_factor;
        Ok(self)
    }

    /// How long a prioritized entry may wait for capacity borrowed from the next window (default 500 ms,
    /// at most the window interval).
    pub fn occupy_timeout(mut self, timeout: Duration) -> Self {
        self.config.occupy_timeout_ms = timeout.as_millis() as u64;
        self
    }

    /// Whether per-context nodes count from the start (default: they start on first read, which keeps
    /// the hot path to one set of counters per resource).
    pub fn count_context_nodes(mut self, eager: bool) -> Self {
        self.config.eager_context_stats = eager;
        self
    }

    /// Where system rules read the load average and CPU usage (default: [`OsProbe`], which samples
    /// `/proc` and the cgroup file system once a second). Tests inject a
    /// [`ManualProbe`](crate::ManualProbe).
    pub fn system_probe(mut self, probe: impl SystemProbe) -> Self {
        self.system_probe = Some(Arc::new(probe));
        self
    }

    /// How many distinct values each hot-parameter rule remembers (default: Sentinel's
    /// `min(4000 · durationInSec, 200000)` per rule). Exception items come on top.
    pub fn param_cache_capacity(mut self, capacity: usize) -> Self {
        self.config.param_capacity = Some(capacity.max(1));
        self
    }

    /// Appends the aggregated block log (Sentinel's `sentinel-block.log` lines) to `path`, rolled over to
    /// `<path>.1` (replacing it) once the file holds 64 MiB.
    pub fn block_log_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.block_log_file = Some(path.into());
        self
    }

    /// Only errors for which `predicate` holds are traced (Sentinel's `exceptionsToTrace`).
    pub fn trace_if(
        mut self,
        predicate: impl Fn(&(dyn std::error::Error + 'static)) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.errors.trace_if = Some(Arc::new(predicate));
        self
    }

    /// Errors for which `predicate` holds are never traced (Sentinel's `exceptionsToIgnore`; wins over
    /// [`trace_if`](Self::trace_if)).
    pub fn ignore_if(
        mut self,
        predicate: impl Fn(&(dyn std::error::Error + 'static)) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.errors.ignore_if = Some(Arc::new(predicate));
        self
    }

    /// Adds `slot` as `name` at `order` (lower runs first), replacing a slot of the same name.
    pub fn slot(mut self, name: &'static str, order: i32, slot: Arc<dyn Slot>) -> Self {
        self.edits.push(ChainEdit::Add { name, order, slot });
        self
    }

    /// Replaces the slot called `name`, keeping its order.
    pub fn replace_slot(mut self, name: &'static str, slot: Arc<dyn Slot>) -> Self {
        self.edits.push(ChainEdit::Replace { name, slot });
        self
    }

    /// Removes the slot called `name`.
    pub fn remove_slot(mut self, name: &'static str) -> Self {
        self.edits.push(ChainEdit::Remove { name });
        self
    }

    /// Builds the engine: collects the registered slots, applies the edits, sorts the chain.
    pub fn build(self) -> Floodgate {
        let (clock, cached_clock) = match self.clock {
            Some(clock) => (clock, self.cached_clock),
            None => {
                let cached = CachedClock::new();
                (Arc::new(cached) as Arc<dyn Clock>, Some(cached))
            }
        };
        let tick_ns = u64::try_from(clock.resolution().as_nanos()).unwrap_or(u64::MAX);
        let mut config = self.config;
        config.occupy_timeout_ms = config.occupy_timeout_ms.min(config.geometry.interval_ms);
        let system_probe = self
            .system_probe
            .unwrap_or_else(|| Arc::new(OsProbe::new()) as Arc<dyn SystemProbe>);
        let chain = SlotChain::build(self.edits);
        let inner = Arc::new_cyclic(|me| Inner {
            id: NEXT_ENGINE_ID.fetch_add(1, Ordering::Relaxed),
            me: me.clone(),
            block_log: BlockLog::new(self.block_log_file, clock.clone()),
            cached_clock,
            clock,
            chain,
            config,
            errors: self.errors,
            inbound: ClusterNode::new(config.geometry),
            flow: FlowRules::new(config.cold_factor, tick_ns),
            degrade: DegradeRules::default(),
            authority: AuthorityRules::default(),
            system: SystemRules::new(system_probe),
            param_flow: ParamFlowRules::new(config.param_capacity, tick_ns),
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
            enabled: AtomicBool::new(true),
            resource_cap_hits: AtomicU64::new(0),
            context_cap_hits: AtomicU64::new(0),
        });
        {
            let _guard = inner.lock();
            inner.create_context_locked(DEFAULT_CONTEXT_NAME);
        }
        Floodgate { inner }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 20,000 origins named by one authority rule: interned in one batch, so the origin index copies
    /// each entry it already held once per load, not once per origin (12 million copies).
    #[test]
    fn origins_a_rule_list_names_are_interned_in_one_batch() {
        let fg = Floodgate::default();
        let origins: Vec<String> = (0..20_000).map(|i| format!("app-{i}")).collect();
        let rule = AuthorityRule::white("R", origins.join(","));
        fg.load_authority_rules([rule]).unwrap();
        let inner = &fg.inner;
        assert!(
            inner.origin_index.copied() <= 20_000,
            "{}",
            inner.origin_index.copied()
        );
        assert!(origins.iter().all(|o| inner.origin_index.get(o).is_some()));
        let id = inner.origin_index.get("app-7").unwrap();
        assert_eq!(inner.origin_str(id), "app-7");
        // A reload naming them again interns nothing.
        let before = inner.origins.len();
        fg.load_authority_rules([AuthorityRule::black("R", origins.join(","))])
            .unwrap();
        assert_eq!(inner.origins.len(), before);
    }

    #[test]
    fn owned_entries_intern_a_bounded_number_of_origins() {
        let fg = Floodgate::default();
        let inner = &fg.inner;
        for i in 0..MAX_INTERNED_ORIGINS {
            assert_ne!(inner.intern_origin(&format!("o{i}"), true), u32::MAX);
        }
        assert_eq!(
            inner.intern_origin("one-more", true),
            u32::MAX,
            "past the cap"
        );
        assert_eq!(
            inner.origin_str(inner.intern_origin("o7", true)),
            "o7",
            "known ones still are"
        );
        let id = inner.intern_origin("a-context-origin", false);
        assert_eq!(
            inner.origin_str(id),
            "a-context-origin",
            "rules' origins are never lost"
        );
    }

    /// Origins a client makes up (a header) do not grow the engine without bound through contexts
    /// either; origins rules name keep their names, so authority rules still apply past the cap.
    #[test]
    fn context_origins_are_bounded_and_rules_still_see_their_origins() {
        use crate::{AuthorityRule, BlockKind};
        let fg = Floodgate::default();
        for i in 0..MAX_INTERNED_ORIGINS + 500 {
            fg.context("web")
                .origin(&format!("caller-{i}"))
                .run(|| drop(fg.entry("R").enter()));
        }
        assert!(fg.inner.origins.len() <= MAX_INTERNED_ORIGINS + 1);
        fg.load_authority_rules([AuthorityRule::black("R", "evil")])
            .unwrap();
        let blocked = fg
            .context("web")
            .origin("evil")
            .run(|| fg.entry("R").enter().map(drop));
        assert_eq!(
            blocked.unwrap_err().kind(),
            BlockKind::Authority,
            "a black-listed origin is named by its rule, so it is interned past the cap"
        );
        fg.load_authority_rules([AuthorityRule::white("R", "partner")])
            .unwrap();
        let refused = fg
            .context("web")
            .origin("made-up-after-the-cap")
            .run(|| fg.entry("R").enter().map(drop));
        assert_eq!(
            refused.unwrap_err().kind(),
            BlockKind::Authority,
            "an origin past the cap is no white-listed name"
        );
        assert!(
            fg.context("web")
                .origin("partner")
                .run(|| fg.entry("R").enter().is_ok())
        );
    }
}
