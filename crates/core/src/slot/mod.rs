//! The slot plug-in surface: the ordered steps every entry runs through, what they see of an entry
//! ([`SlotContext`], [`ExitContext`]), and how other crates register theirs; with the built-in slots
//! that enforce no rule (node selector, cluster builder, log, statistic). The chain that runs them is
//! `chain/`; the rule-kind slots live with their rules (`flow/slot.rs`, …).
//!
//! A [`Slot`] has up to four hooks. On entry, the chain calls every slot's [`Slot::entry`] in order
//! (lowest order first) until one blocks. If one blocks, the slots before it get [`Slot::on_block`] (in
//! reverse order, as the block unwinds through them); if none blocks, every slot gets [`Slot::on_pass`]
//! (in reverse order). When the entry exits, every slot gets [`Slot::exit`] in order. This is Sentinel's
//! nested `fireEntry`/`fireExit`, flattened: the statistic slot counts a pass only once every check after it
//! admitted the entry, and a slot that reserved something (a circuit breaker's half-open probe) learns
//! whether a later slot refused the entry.
//!
//! The built-in slots are listed, with their orders, in one table (`chain/builtin.rs`); other crates
//! register theirs with an order through [`inventory`] ([`register_slot!`](crate::register_slot)). An
//! engine collects both when it is built, then applies its builder's edits (add, replace, remove). An
//! engine whose slots are exactly the built-in ones runs them as straight-line code, in the table's
//! order and with the same hooks as the generic loop. Sentinel's orders: NodeSelector
//! −10000, ClusterBuilder −9000, Log −8000, Statistic −7000, Authority −6000, System −5000, ParamFlow
//! −3000, Flow −2000, DefaultCircuitBreaker −1500, Degrade −1000.

mod cluster_builder;
mod core;
mod kept;
mod log;
mod node_selector;
mod statistic;

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use cluster_builder::ClusterBuilderSlot;
pub(crate) use core::EngineCore;
pub(crate) use kept::{ExitKept, Kept};
pub(crate) use log::BlockLog;
pub use log::LogSlot;
pub use node_selector::NodeSelectorSlot;
pub use statistic::StatisticSlot;

use crate::block::{BlockError, BlockKind};
use crate::entry_type::{EntryType, ResourceType};
use crate::node::{DefaultNode, NodeView};
use crate::param::ParamValue;
use crate::registry::{ContextData, Parent, Resource};
use crate::rules::RuleType;
use crate::stat::Cursor;

/// Sentinel's slot orders (lower runs first).
pub mod order {
    /// Picks the resource's node in the current context and links the call tree.
    pub const NODE_SELECTOR: i32 = -10000;
    /// Attaches the cluster node and the caller's origin node.
    pub const CLUSTER_BUILDER: i32 = -9000;
    /// Writes the block log.
    pub const LOG: i32 = -8000;
    /// Counts passes, blocks, completions, errors, RT and concurrency.
    pub const STATISTIC: i32 = -7000;
    /// White/black lists by origin.
    pub const AUTHORITY: i32 = -6000;
    /// System adaptive protection.
    pub const SYSTEM: i32 = -5000;
    /// Hot-parameter flow control.
    pub const PARAM_FLOW: i32 = -3000;
    /// Flow control.
    pub const FLOW: i32 = -2000;
    /// Default (`"*"`) circuit breakers.
    pub const DEFAULT_CIRCUIT_BREAKER: i32 = -1500;
    /// Circuit breakers.
    pub const DEGRADE: i32 = -1000;
}

/// Which hooks a slot implements, so the chain skips the others without a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hooks {
    /// [`Slot::entry`].
    pub entry: bool,
    /// [`Slot::on_pass`].
    pub pass: bool,
    /// [`Slot::on_block`].
    pub block: bool,
    /// [`Slot::exit`].
    pub exit: bool,
}

impl Hooks {
    /// Every hook.
    pub const ALL: Hooks = Hooks {
        entry: true,
        pass: true,
        block: true,
        exit: true,
    };
    /// Only [`Slot::entry`] (a pure check).
    pub const ENTRY: Hooks = Hooks {
        entry: true,
        pass: false,
        block: false,
        exit: false,
    };
}

/// One step of the chain. Implementations must not block or allocate on the hot path.
pub trait Slot: Send + Sync + fmt::Debug + 'static {
    /// Checks (or prepares) the entry; an `Err` blocks it.
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        let _ = cx;
        Ok(())
    }

    /// The whole chain admitted the entry.
    fn on_pass(&self, cx: &mut SlotContext<'_>) {
        let _ = cx;
    }

    /// A later slot blocked the entry with `block`.
    fn on_block(&self, cx: &mut SlotContext<'_>, block: &BlockError) {
        let _ = (cx, block);
    }

    /// The admitted entry ended.
    fn exit(&self, cx: &mut ExitContext<'_>) {
        let _ = cx;
    }

    /// A later slot's entry hook panicked: the entry is abandoned (it is neither admitted nor blocked,
    /// and never exits). Called, before the panic goes on, on every slot whose entry hook ran (the one
    /// that panicked included), to release what [`entry`](Self::entry) took.
    fn on_abandon(&self, cx: &mut SlotContext<'_>) {
        let _ = cx;
    }

    /// Whether this slot has a rule for `resource`: such a resource is always checked, even past the
    /// resource cap.
    fn has_rules(&self, resource: &str) -> bool {
        let _ = resource;
        false
    }

    /// Which hooks to call (default: all).
    fn hooks(&self) -> Hooks {
        Hooks::ALL
    }

    /// The engine rule kind this slot enforces, if any: the chain skips the slot entirely while no rule
    /// of that kind is in force (a relaxed load instead of a call). A slot that took something for an
    /// entry keeps a word for it ([`SlotContext::keep`], [`SlotContext::keep_until_exit`]) and then
    /// sees that entry's later hooks (its exit with `keep_until_exit`) even once no rule of its kind is
    /// in force any more: a breaker's probe admitted before the degrade rules were removed completes.
    fn rule_type(&self) -> Option<RuleType> {
        None
    }
}

/// A slot registered for every engine of the process (collected with [`inventory`]).
#[derive(Debug)]
pub struct SlotRegistration {
    /// The slot's name (the key for replacing or removing it).
    pub name: &'static str,
    /// Its position: lower runs first.
    pub order: i32,
    /// Builds the slot; called once per engine.
    pub build: fn() -> Arc<dyn Slot>,
}

inventory::collect!(SlotRegistration);

/// Registers a slot for every engine: `register_slot!("name", order, || Arc::new(MySlot))`.
#[macro_export]
macro_rules! register_slot {
    ($name:expr, $order:expr, $build:expr) => {
        $crate::slot::__private::inventory::submit! {
            $crate::slot::SlotRegistration { name: $name, order: $order, build: $build }
        }
    };
}

pub use crate::register_slot;

/// What [`register_slot!`] expands to, so that a crate registering a slot need not depend on
/// `inventory` itself. Not an API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use inventory;
}

/// What a slot sees of an entry being admitted.
#[derive(Debug)]
pub struct SlotContext<'a> {
    pub(crate) engine: &'a EngineCore,
    pub(crate) resource: &'a Resource,
    pub(crate) context: &'a ContextData,
    pub(crate) parent: Parent,
    pub(crate) origin: &'a str,
    pub(crate) entry_type: EntryType,
    pub(crate) resource_type: ResourceType,
    pub(crate) count: u32,
    pub(crate) args: &'a [ParamValue<'a>],
    pub(crate) prioritized: bool,
    pub(crate) now_ms: u64,
    pub(crate) now_nanos: u64,
    pub(crate) stripe: usize,
    pub(crate) at: Cursor,
    pub(crate) node_id: Option<u32>,
    /// The node of `node_id` (looked up once, by the node selector).
    pub(crate) default_node: Option<&'a DefaultNode>,
    pub(crate) node_counted: bool,
    pub(crate) origin_node_id: Option<u32>,
    pub(crate) wait: Duration,
    /// A slot counted the entry's pass ahead, in the future window it borrowed it from (a prioritized
    /// entry's borrowed pass, committed by the flow slot's pass hook once the whole chain admitted the
    /// entry): the statistic slot then counts only the entry's concurrency.
    pub(crate) pass_borrowed: bool,
    /// The position in the chain of the slot whose hook runs, set by the chain before each call: what
    /// the slot keeps is filed under it.
    pub(crate) position: u32,
    /// The words the slots keep with the entry, and the attachments.
    pub(crate) kept: Kept,
}

/// State a slot keeps with an admitted entry until it exits (for example the circuit breaker whose
/// half-open probe the entry is). Attaching allocates; entries without attachments allocate nothing.
pub type Attachment = Arc<dyn Any + Send + Sync>;

impl SlotContext<'_> {
    /// The resource's name.
    pub fn resource(&self) -> &str {
        &self.resource.name
    }

    /// The context's name.
    pub fn context_name(&self) -> &str {
        self.context.name()
    }

    /// The caller's origin (empty when unknown).
    pub fn origin(&self) -> &str {
        self.origin
    }

    /// Inbound or outbound.
    pub fn entry_type(&self) -> EntryType {
        self.entry_type
    }

    /// Permits asked for.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The call's arguments.
    pub fn args(&self) -> &[ParamValue<'_>] {
        self.args
    }

    /// Whether the entry may wait for borrowed capacity.
    pub fn is_prioritized(&self) -> bool {
        self.prioritized
    }

    /// The engine's time at admission, epoch ms.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// The engine's time at admission, epoch ns.
    pub fn now_nanos(&self) -> u64 {
        self.now_nanos
    }

    /// The resource's statistics across contexts.
    pub fn cluster_node(&self) -> NodeView<'_> {
        NodeView {
            node: &self.resource.cluster.stats,
            clock: &*self.engine.clock,
        }
    }

    /// The resource's statistics in this context (starts them if they were not counting).
    pub fn context_node(&self) -> Option<NodeView<'_>> {
        let node = self.default_node?;
        Some(NodeView {
            node: node.stats(),
            clock: &*self.engine.clock,
        })
    }

    /// The statistics of this resource's calls from this origin.
    pub fn origin_node(&self) -> Option<NodeView<'_>> {
        Some(NodeView {
            node: self.engine.registry.origin_node(self.origin_node_id?)?,
            clock: &*self.engine.clock,
        })
    }

    /// Asks the entry to wait `wait` before proceeding (queueing). Every slot measures its wait from the
    /// same instant (the entry's), so the entry waits for the longest one asked: each reserved its slot
    /// at that distance from now, and waiting their sum would overshoot every reservation (and the
    /// queueing bounds the slots checked).
    pub fn add_wait(&mut self, wait: Duration) {
        self.wait = self.wait.max(wait);
    }

    /// Keeps `attachment` with the entry; [`ExitContext::attachments`] returns it at exit. Attach only in
    /// [`Slot::on_pass`] (an entry that is blocked never exits).
    pub fn attach(&mut self, attachment: Attachment) {
        self.kept.attach(attachment);
    }

    /// Keeps `word` with the entry for this slot's later hooks ([`on_pass`](Slot::on_pass),
    /// [`on_block`](Slot::on_block), [`on_abandon`](Slot::on_abandon) read it with
    /// [`kept`](Self::kept)), in place of the word it kept before. The slot then sees those hooks even
    /// if it is no longer active by then (see [`Slot::rule_type`]). Kept inline, with no allocation, for
    /// one slot of the entry that keeps its word until the exit (a word below 2^56) and one that does
    /// not; more words take the heap.
    pub fn keep(&mut self, word: u64) {
        self.kept.put(self.position, word, false);
    }

    /// [`keep`](Self::keep)s `word`, and marks this slot's exit: its [`exit`](Slot::exit) hook runs
    /// when the entry exits even if the slot is no longer active then (see [`Slot::rule_type`]), and
    /// reads `word` with [`ExitContext::kept`]. For a slot that takes something at entry and gives it
    /// back at exit: without the mark, a slot inactive at entry or at exit sees no exit, so it never
    /// gives back what it did not take, but what it took under rules removed since would stay taken.
    pub fn keep_until_exit(&mut self, word: u64) {
        self.kept.put(self.position, word, true);
    }

    /// The word this slot keeps with the entry, if any.
    pub fn kept(&self) -> Option<u64> {
        self.kept.get(self.position)
    }

    /// Takes this slot's word back (and the mark on its exit): the slot has nothing left to give back.
    pub fn forget(&mut self) -> Option<u64> {
        self.kept.take(self.position)
    }

    /// A block of `kind` on this resource. It carries this thread's copy of the resource's name
    /// (made on the thread's first block of it), so that threads blocked on one resource do not all
    /// write the shared name's reference count.
    pub fn block(&self, kind: BlockKind) -> BlockError {
        BlockError::new(kind, crate::thread_copies::name(&self.resource.name))
    }
}

/// What a slot sees of an admitted entry that ends.
#[derive(Debug)]
pub struct ExitContext<'a> {
    pub(crate) engine: &'a EngineCore,
    pub(crate) resource: &'a Resource,
    pub(crate) context: &'a ContextData,
    pub(crate) node_id: Option<u32>,
    pub(crate) node_counted: bool,
    pub(crate) origin_node_id: Option<u32>,
    pub(crate) origin: &'a str,
    pub(crate) entry_type: EntryType,
    pub(crate) count: u32,
    pub(crate) args: &'a [ParamValue<'a>],
    pub(crate) rt_ms: u32,
    pub(crate) error: bool,
    pub(crate) now_ms: u64,
    pub(crate) stripe: usize,
    pub(crate) at: Cursor,
    /// The position in the chain of the slot whose exit hook runs (see [`SlotContext`]'s).
    pub(crate) position: u32,
    /// What the slots that marked their exit kept, and the attachments.
    pub(crate) kept: &'a ExitKept,
}

impl ExitContext<'_> {
    /// The resource's name.
    pub fn resource(&self) -> &str {
        &self.resource.name
    }

    /// The context's name.
    pub fn context_name(&self) -> &str {
        self.context.name()
    }

    /// The caller's origin.
    pub fn origin(&self) -> &str {
        self.origin
    }

    /// Inbound or outbound.
    pub fn entry_type(&self) -> EntryType {
        self.entry_type
    }

    /// Permits the entry took.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The call's arguments.
    pub fn args(&self) -> &[ParamValue<'_>] {
        self.args
    }

    /// The call's response time in ms.
    pub fn rt_ms(&self) -> u32 {
        self.rt_ms
    }

    /// Whether an error was traced.
    pub fn has_error(&self) -> bool {
        self.error
    }

    /// The engine's time at exit, epoch ms.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// What slots attached to the entry when it was admitted.
    pub fn attachments(&self) -> &[Attachment] {
        self.kept.attachments()
    }

    /// The word this slot kept with [`SlotContext::keep_until_exit`], if it did.
    pub fn kept(&self) -> Option<u64> {
        self.kept.get(self.position)
    }
}
