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

pub use floodgate_core::{
    Attachment, AuthorityRule, AuthoritySlot, AuthorityStrategy, BlockError, BlockKind, BlockRule,
    BreakerState, BreakerStateChange, BreakerStatus, CachedClock, CallTree, Clock,
    ClusterBuilderSlot, ClusterFlowConfig, ConfigError, ContextBuilder, ControlBehavior,
    DEFAULT_CONTEXT_NAME, DEFAULT_DEGRADE_RESOURCE, DEFAULT_MAX_CONTEXTS, DEFAULT_MAX_ORIGINS,
    DEFAULT_MAX_RESOURCES, DEFAULT_OCCUPY_TIMEOUT, DefaultCircuitBreakerSlot, DegradeGrade,
    DegradeRule, DegradeSlot, EngineStats, Entry, EntryBuilder, EntryType, ExitContext, Floodgate,
    FloodgateBuilder, FlowGrade, FlowRule, FlowSlot, FlowStatus, FlowStrategy, Hooks, LogSlot,
    MACHINE_ROOT, MAX_ORIGIN_LEN, ManualClock, ManualProbe, MetricLine, NodeSelectorSlot,
    NodeSnapshot, NodeView, OVER_CAP_ORIGIN, OVER_CAP_RESOURCE, OsProbe, OwnedEntry,
    ParamFlowClusterConfig, ParamFlowItem, ParamFlowRule, ParamFlowSlot, ParamFlowStatus, ParamKey,
    ParamValue, ResourceHandle, ResourceKey, ResourceType, RuleError, RuleLoad, RuleType,
    RuleWarning, SetGlobalDefaultError, Slot, SlotContext, SlotRegistration, StatisticSlot,
    SystemClock, SystemLimit, SystemLimitType, SystemProbe, SystemRule, SystemSlot, SystemStatus,
    SystemThresholds, TOTAL_INBOUND_TRAFFIC, TreeNodeKind, UnknownRuleType, WindowError, entry,
    global, order, register_slot, set_global_default, utc_datetime,
};

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
