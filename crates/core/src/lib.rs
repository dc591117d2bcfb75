//! The guard engine of Floodgate: flow control and circuit breaking in the style of Alibaba Sentinel.
//!
//! An application asks to pass a *resource* (a name such as `GET:/orders`); the engine runs the entry
//! through a chain of slots that count it and check it against rules, and answers with an [`Entry`] guard
//! or a [`BlockError`]. Dropping the guard records the call's completion.
//!
//! ```
//! use floodgate_core::{EntryType, Floodgate, ManualClock};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new(1_700_000_000_000);
//! let fg = Floodgate::builder().clock(clock.clone()).build();
//!
//! match fg.entry("GET:/orders").origin("web").entry_type(EntryType::In).enter() {
//!     Ok(entry) => {
//!         clock.advance(Duration::from_millis(12)); // the call takes 12 ms
//!         drop(entry);                              // exit: RT, success, concurrency
//!     }
//!     Err(block) => eprintln!("blocked: {block}"),
//! }
//!
//! let node = fg.cluster_node("GET:/orders").unwrap();
//! assert_eq!((node.pass_qps(), node.avg_rt(), node.cur_thread_num()), (1.0, 12.0, 0));
//! ```
//!
//! The parts:
//!
//! * [`Clock`]: every reading of time; [`ManualClock`] for tests.
//! * Statistics: each node keeps a sliding second window (a LeapArray of tagged atomic cells, 2 × 500 ms)
//!   and a minute history; see [`NodeView`] for the figures.
//! * Nodes: a `ClusterNode` per resource, a `DefaultNode` per resource × context (the call tree), an
//!   `EntranceNode` per context, an origin node per resource × caller (at most
//!   [`FloodgateBuilder::max_origins`] callers per resource; later ones share [`OVER_CAP_ORIGIN`]), and
//!   the global inbound node.
//! * Caps, so that names a client chooses cannot grow the engine without bound: 6000 resources
//!   ([`FloodgateBuilder::max_resources`]; past it a name no rule names passes uncounted, or shares
//!   [`OVER_CAP_RESOURCE`] while system or default `"*"` degrade rules are in force, and names only
//!   regex rules match share one resource per set of matching rules), 2000 contexts, 1000
//!   origins per resource, and 10,000 distinct origin names in the engine (past it, a context's new
//!   origin that no rule names is [`OVER_CAP_ORIGIN`]; origins rules name keep their names).
//!   Rule lists have caps too: 100 regex rules a list and 100 rules of a type a resource (see
//!   [`Floodgate::load_rules_json`]).
//! * [`Slot`]s, registered with an order ([`register_slot!`]) and assembled per engine by
//!   [`FloodgateBuilder`]; an engine with only the built-in slots runs them as straight-line code.
//! * Resources by name ([`Floodgate::entry`]), resolved once ([`Floodgate::resource`], borrowing the
//!   engine), or kept as a [`ResourceKey`] ([`Floodgate::entry_for`]) by adapters that cache them.
//! * Contexts ([`ContextBuilder`]): named call trees with an origin, for sync and async code.
//! * Rules: [`FlowRule`]; [`DegradeRule`] (circuit breakers); [`ParamFlowRule`] (hot parameters);
//!   [`AuthorityRule`] (white/black lists of origins); [`SystemRule`] (adaptive protection of inbound
//!   traffic by QPS, concurrency, RT, load and CPU, read from a [`SystemProbe`]).
//! * `tracing` events: blocks (target `floodgate::block`, `info`, at most one per second per resource and
//!   [`BlockKind`]), breaker transitions (`floodgate::breaker`, `warn` on opening, `info` otherwise) and
//!   rule loads (`floodgate::rules`, `info` with the count, `warn` with the error of a rejected list and
//!   with each field a JSON load ignored, see [`RuleWarning`]).

mod arena;
mod authority;
mod block;
mod chain;
mod clock;
mod context;
mod degrade;
mod engine;
mod entry;
mod entry_type;
mod error_filter;
mod floodgate;
mod flow;
mod frames;
mod global;
mod keyed_hash;
mod last_lookup;
mod name_index;
mod node;
mod param;
mod param_flow;
mod registry;
mod resource_key;
mod rule_sets;
mod rules;
mod slot;
mod stat;
mod system;

pub use authority::{AuthorityRule, AuthoritySlot, AuthorityStrategy};
pub use block::{BlockError, BlockKind, BlockRule};
pub use clock::{CachedClock, Clock, ManualClock, SystemClock};
pub use context::ContextBuilder;
pub use degrade::{
    BreakerState, BreakerStateChange, BreakerStatus, DEFAULT_DEGRADE_RESOURCE,
    DefaultCircuitBreakerSlot, DegradeGrade, DegradeRule, DegradeSlot,
};
pub use engine::{
    ConfigError, DEFAULT_MAX_CONTEXTS, DEFAULT_MAX_ORIGINS, DEFAULT_MAX_RESOURCES,
    DEFAULT_OCCUPY_TIMEOUT,
};
pub use entry::{Entry, EntryBuilder, OwnedEntry};
pub use entry_type::{EntryType, ResourceType};
pub use floodgate::{EngineStats, Floodgate, FloodgateBuilder, ResourceHandle};
pub use flow::{
    ClusterFlowConfig, ControlBehavior, FlowGrade, FlowRule, FlowSlot, FlowStatus, FlowStrategy,
};
pub use global::{SetGlobalDefaultError, entry, global, set_global_default};
pub use node::{CallTree, MetricLine, NodeSnapshot, NodeView, TreeNodeKind};
pub use param::{ParamKey, ParamValue};
pub use param_flow::{
    ParamFlowClusterConfig, ParamFlowItem, ParamFlowRule, ParamFlowSlot, ParamFlowStatus,
};
pub use registry::{
    DEFAULT_CONTEXT_NAME, MACHINE_ROOT, MAX_ORIGIN_LEN, OVER_CAP_ORIGIN, OVER_CAP_RESOURCE,
    TOTAL_INBOUND_TRAFFIC,
};
pub use resource_key::ResourceKey;
pub use rules::{RuleError, RuleLoad, RuleType, RuleWarning, UnknownRuleType};
pub use slot::{
    Attachment, ClusterBuilderSlot, ExitContext, Hooks, LogSlot, NodeSelectorSlot, Slot,
    SlotContext, SlotRegistration, StatisticSlot, order, utc_datetime,
};
pub use stat::WindowError;
pub use system::{
    ManualProbe, OsProbe, SystemLimit, SystemLimitType, SystemProbe, SystemRule, SystemSlot,
    SystemStatus, SystemThresholds,
};

#[doc(hidden)]
pub use inventory;
/// For the adapter crates' maps keyed by what clients send (see `keyed_hash.rs`).
#[doc(hidden)]
pub use keyed_hash::{KeyedMap, keyed_map};
