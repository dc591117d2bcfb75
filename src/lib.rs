//! Floodgate: flow control, circuit breaking and adaptive protection for Rust services, in the style of
//! Alibaba Sentinel.
//!
//! This facade re-exports the guard engine ([`floodgate_core`]); the agent, adapters and dashboard live in
//! their own crates.
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
    Attachment, BlockError, BlockKind, BlockRule, CachedClock, CallTree, Clock, ClusterBuilderSlot,
    ClusterFlowConfig, ConfigError, ContextBuilder, ControlBehavior, DEFAULT_CONTEXT_NAME,
    DEFAULT_MAX_CONTEXTS, DEFAULT_MAX_RESOURCES, DEFAULT_OCCUPY_TIMEOUT, EngineStats, Entry,
    EntryBuilder, EntryType, ExitContext, Floodgate, FloodgateBuilder, FlowGrade, FlowRule,
    FlowSlot, FlowStatus, FlowStrategy, Hooks, LogSlot, MACHINE_ROOT, ManualClock, MetricLine,
    NodeSelectorSlot, NodeSnapshot, NodeView, ParamValue, ResourceHandle, ResourceType, RuleError,
    RuleType, SetGlobalDefaultError, Slot, SlotContext, SlotRegistration, StatisticSlot,
    SystemClock, TOTAL_INBOUND_TRAFFIC, TreeNodeKind, UnknownRuleType, WindowError, entry, global,
    order, register_slot, set_global_default,
};
pub use floodgate_core::{
    AuthorityRule, AuthoritySlot, AuthorityStrategy, ManualProbe, OsProbe, SystemLimit,
    SystemLimitType, SystemProbe, SystemRule, SystemSlot, SystemStatus, SystemThresholds,
};
pub use floodgate_core::{
    BreakerState, BreakerStateChange, BreakerStatus, DEFAULT_DEGRADE_RESOURCE,
    DefaultCircuitBreakerSlot, DegradeGrade, DegradeRule, DegradeSlot,
};

/// The agent (`floodgate-transport`): command API, heartbeats, metrics, rule files.
#[cfg(feature = "transport")]
pub use floodgate_transport as transport;

/// README's code blocks, compiled and run as doctests so the quick start stays true.
#[doc = include_str!("../README.md")]
#[cfg(all(doctest, feature = "transport"))]
pub struct ReadmeDoctests;
