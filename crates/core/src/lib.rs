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
//! The crate root holds what an application uses: the engine and its builder, entries, contexts,
//! resource keys, errors, the rule types and clocks. Modules hold the rest: [`slot`], the surface for
//! writing slots of one's own; [`stats`], what the engine reports (node statistics, the call tree,
//! metric lines, the state of each rule kind); [`cluster`], what a token service answers rules in
//! cluster mode.
//!
//! The parts:
//!
//! * [`Clock`]: every reading of time; [`ManualClock`] for tests.
//! * Statistics ([`stats`]): each node keeps a sliding second window (a LeapArray of tagged atomic
//!   cells, 2 × 500 ms) and a minute history; see [`stats::NodeView`] for the figures.
//! * Nodes: a `ClusterNode` per resource, a `DefaultNode` per resource × context (the call tree), an
//!   `EntranceNode` per context, an origin node per resource × caller (at most
//!   [`FloodgateBuilder::max_origins`] callers per resource; later ones share [`OVER_CAP_ORIGIN`]), and
//!   the global inbound node.
//! * Caps on everything a client names (resources, contexts, origins) and on rule lists: see
//!   [Caps](#caps).
//! * Slots ([`slot`]), registered with an order ([`register_slot!`]) and assembled per engine by
//!   [`FloodgateBuilder`]; an engine with only the built-in slots runs them as straight-line code.
//! * Resources by name ([`Floodgate::entry`]), or resolved once into a [`ResourceKey`]
//!   ([`Floodgate::resource_key`], entered with [`Floodgate::entry_for`]) by callers that enter them
//!   often and adapters that cache them.
//! * Contexts ([`ContextBuilder`]): named call trees with an origin, for sync and async code.
//! * Rules: [`FlowRule`]; [`DegradeRule`] (circuit breakers); [`ParamFlowRule`] (hot parameters);
//!   [`AuthorityRule`] (white/black lists of origins); [`SystemRule`] (adaptive protection of inbound
//!   traffic by QPS, concurrency, RT, load and CPU, read from a [`SystemProbe`]).
//! * `tracing` events: blocks (target `floodgate::block`, `info`, at most one per second per resource and
//!   [`BlockKind`]), breaker transitions (`floodgate::breaker`, `warn` on opening, `info` otherwise) and
//!   rule loads (`floodgate::rules`, `info` with the count, `warn` with the error of a rejected list and
//!   with each field a JSON load ignored, see [`RuleWarning`]).
//!
//! # Caps
//!
//! Names a client chooses (a URL path, a caller header) cannot grow the engine without bound:
//!
//! * **Resources**: 6000 ([`FloodgateBuilder::max_resources`], [`DEFAULT_MAX_RESOURCES`]). Past the cap,
//!   a new name that no rule names passes uncounted, or, while system rules or default `"*"` circuit
//!   breakers are in force, is counted on one shared [`OVER_CAP_RESOURCE`]. A new name that only regex
//!   rules match (a raw URL path, say) shares one resource with the other names the same regex rules
//!   match, so those rules still apply, to all of them together. Name resources by route template, not
//!   by raw path.
//! * **Contexts**: 2000 named ones ([`FloodgateBuilder::max_contexts`], [`DEFAULT_MAX_CONTEXTS`]); past
//!   the cap, entries run in the default context.
//! * **Origins** (callers, often a request header): 1000 counted apart per resource
//!   ([`FloodgateBuilder::max_origins`], [`DEFAULT_MAX_ORIGINS`]); later ones share
//!   [`OVER_CAP_ORIGIN`], except origins that a flow rule of the resource names. An origin longer than
//!   [`MAX_ORIGIN_LEN`] (256 bytes) is an origin no rule names, counted with those past the cap. The engine keeps at most 10,000 distinct origin names: past
//!   that, a context's new origin that no rule names is [`OVER_CAP_ORIGIN`]; origins that rules name keep
//!   their names.
//! * **Rule lists**: at most 100 regex rules a list and 100 rules of a type a resource (see
//!   [`Floodgate::load_rules_json`]).
//!
//! # Process-wide pieces
//!
//! Most state belongs to an engine and goes with it. A few pieces are shared by the whole process:
//!
//! * **The 1 ms ticker thread.** [`CachedClock`], every engine's default clock, reads a time that one
//!   thread, `floodgate-clock`, stores every millisecond; all `CachedClock`s of the process share it. It
//!   starts with the first `CachedClock` (building an engine without a clock of its own, or the first
//!   sample of an [`OsProbe`]) and runs for the rest of the process. A reading lags real time by about
//!   a millisecond at most. A forked child has no ticker until its first `CachedClock::new` (building an
//!   engine does it), so build engines after a fork; should the thread fail to start, the clock reads
//!   the system clock on every call instead. An engine built with [`SystemClock`] or [`ManualClock`]
//!   starts no ticker.
//! * **The remote-exit record.** Each thread knows its current entry (entries started there nest under
//!   it, in its context, with its origin). An entry that exits on another thread than the one it was
//!   current on (an [`OwnedEntry`] sent elsewhere, an async entry whose task moved) cannot change that
//!   thread's state, so the exit is recorded in one process-wide table for the thread to apply the next
//!   time it starts an entry. Each thread checks a counter of its own (one relaxed load per entry) and takes the table's lock only
//!   when an exit may be its own. The table holds at most 4096 records; past that the oldest go (those
//!   of threads that ended, which never take theirs).
//! * **The default engine.** [`entry`] and [`global`] use one engine per process, built with
//!   `Floodgate::builder().build()` on first use. [`set_global_default`] replaces it once, and only before
//!   it was first used. Libraries should take a `&Floodgate` instead.
//! * **Per-thread block copies.** A thread that is blocked keeps its own copies of up to 32 resource
//!   names and 32 rules, which its [`BlockError`]s carry, so that threads blocked on one resource do
//!   not all write the engine's shared reference counts. They go with the thread.
//! * **Slot registrations.** [`register_slot!`] adds a slot to every engine built in the process
//!   (collected at link time); [`FloodgateBuilder`] can replace or remove one per engine.
//!
//! Two threads belong to an engine and end with it: the block log's writer (only with
//! [`FloodgateBuilder::block_log_file`]) and the [`OsProbe`]'s sampler (once a load or CPU threshold is in
//! force, or the system status is read).

mod arena;
mod authority;
mod block;
mod chain;
mod clock;
pub mod cluster;
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
pub mod slot;
mod stat;
pub mod stats;
mod system;
mod thread_copies;
mod utc;

pub use authority::{AuthorityRule, AuthorityStrategy};
pub use block::{BlockError, BlockKind, BlockRule};
pub use clock::{CachedClock, Clock, ManualClock, SystemClock};
pub use context::ContextBuilder;
pub use degrade::{
    BreakerState, BreakerStateChange, DEFAULT_DEGRADE_RESOURCE, DegradeGrade, DegradeRule,
};
pub use engine::{
    ConfigError, DEFAULT_MAX_CONTEXTS, DEFAULT_MAX_ORIGINS, DEFAULT_MAX_RESOURCES,
    DEFAULT_OCCUPY_TIMEOUT,
};
pub use entry::{Entry, EntryBuilder, OwnedEntry};
pub use entry_type::{EntryType, ResourceType};
pub use floodgate::{Floodgate, FloodgateBuilder};
pub use flow::{ClusterFlowConfig, ControlBehavior, FlowGrade, FlowRule, FlowStrategy};
pub use global::{SetGlobalDefaultError, entry, global, set_global_default};
pub use param::{ParamKey, ParamValue};
pub use param_flow::{ParamFlowClusterConfig, ParamFlowItem, ParamFlowRule};
pub use registry::{
    DEFAULT_CONTEXT_NAME, MACHINE_ROOT, MAX_ORIGIN_LEN, OVER_CAP_ORIGIN, OVER_CAP_RESOURCE,
    TOTAL_INBOUND_TRAFFIC,
};
pub use resource_key::ResourceKey;
pub use rules::{RuleError, RuleLoad, RuleType, RuleWarning, UnknownRuleType};
pub use stat::WindowError;
pub use system::{ManualProbe, OsProbe, SystemLimit, SystemLimitType, SystemProbe, SystemRule};
