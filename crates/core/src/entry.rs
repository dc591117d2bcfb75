//! Entries: asking to pass a resource, and the RAII guard that records the call when it ends.

use std::error::Error;
use std::fmt;
use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::block::BlockError;
use crate::engine::Inner;
use crate::entry_type::{EntryType, ResourceType};
use crate::frames::{self, EntryFrame, Placement};
use crate::param::ParamValue;
use crate::registry::{ContextData, Parent, Resource};
use crate::slot::{ExitContext, ExitKept, Kept, SlotContext};
use crate::stat::current_stripe;

const NANOS_PER_MILLI: u64 = 1_000_000;

/// What an entry is for: a name to look up, or a resource resolved earlier.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'a> {
    Name(&'a str),
    Resolved(&'a Resource),
}

/// Describes an entry; [`enter`](EntryBuilder::enter) runs the slot chain.
#[must_use = "an entry builder does nothing until `enter` is called"]
pub struct EntryBuilder<'a> {
    engine: &'a Inner,
    target: Target<'a>,
    origin: Option<&'a str>,
    pub(crate) placement: Option<Placement>,
    entry_type: EntryType,
    resource_type: ResourceType,
    count: u32,
    args: Args<'a>,
    prioritized: bool,
}

impl fmt::Debug for EntryBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntryBuilder")
            .field("target", &self.target)
            .field("origin", &self.origin)
            .field("entry_type", &self.entry_type)
            .field("count", &self.count)
            .field("args", &self.args.as_slice())
            .field("prioritized", &self.prioritized)
            .finish_non_exhaustive()
    }
}

impl<'a> EntryBuilder<'a> {
    pub(crate) fn new(engine: &'a Inner, target: Target<'a>) -> Self {
        EntryBuilder {
            engine,
            target,
            origin: None,
            placement: None,
            entry_type: EntryType::Out,
            resource_type: ResourceType::Common,
            count: 1,
            args: Args::EMPTY,
            prioritized: false,
        }
    }

    /// The caller this entry comes from (overrides the context's origin for this entry).
    pub fn origin(mut self, origin: &'a str) -> Self {
        self.origin = Some(origin);
        self
    }

    /// Places the entry at the entrance of the default context, ignoring the entry and the context
    /// current on this thread: where one thread serves many tasks (an async server's inbound request),
    /// its current entry belongs to whichever task ran last (one that holds an [`enter`](Self::enter)
    /// entry across an `.await`, say), and the request must not nest under it.
    pub fn in_default_context(mut self) -> Self {
        self.placement = Some(Placement {
            context: 0,
            origin: None,
            parent: Parent::Entrance,
        });
        self
    }

    /// Inbound or outbound (default outbound, as in Sentinel).
    pub fn entry_type(mut self, entry_type: EntryType) -> Self {
        self.entry_type = entry_type;
        self
    }

    /// The resource's type, reported as the metric classification.
    pub fn resource_type(mut self, resource_type: ResourceType) -> Self {
        self.resource_type = resource_type;
        self
    }

    /// How many permits this entry takes (default 1).
    pub fn count(mut self, count: u32) -> Self {
        self.count = count;
        self
    }

    /// The call's arguments, for hot-parameter rules: `.args(["user-1"])`, `.args([7, 8])`, or mixed
    /// types as [`ParamValue`]s. Up to two arguments are kept inline (no allocation); more are boxed.
    pub fn args<I>(mut self, args: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<ParamValue<'a>>,
    {
        self.set_args(Args::collect(args));
        self
    }

    /// The call's arguments, borrowed (never allocates, however many there are).
    pub fn args_slice(mut self, args: &'a [ParamValue<'a>]) -> Self {
        self.set_args(Args::Borrowed(args));
        self
    }

    /// Replaces the arguments. Borrowed ones (the builder's initial empty slice) own nothing; saying so
    /// here lets the compiler skip the call to `Args`' drop glue, which otherwise pinned the builder in
    /// memory and copied it (144 bytes, through `memcpy`) on every call with arguments: ≈ 8 ns.
    #[inline]
    fn set_args(&mut self, args: Args<'a>) {
        match std::mem::replace(&mut self.args, args) {
            old @ Args::Borrowed(_) => std::mem::forget(old),
            old => drop(old),
        }
    }

    /// Lets a QPS-limited entry wait for capacity borrowed from the next window instead of being
    /// blocked (Sentinel's `entryWithPriority`).
    pub fn prioritized(mut self) -> Self {
        self.prioritized = true;
        self
    }

    /// Runs the slot chain. A queueing wait a slot asked for is slept through the engine's clock.
    ///
    /// The entry becomes the thread's current one (entries started on the thread meanwhile nest under
    /// it). Dropped on another thread, it exits, and its thread stops nesting entries under it when it
    /// next starts one. For an entry that moves between threads, `enter_async` (feature `tokio`) or
    /// [`enter_owned`](Self::enter_owned) never become a thread's current entry.
    #[inline]
    pub fn enter(self) -> Result<Entry<'a>, BlockError> {
        self.admit(true, |active| Entry { active })
    }

    /// Runs the slot chain and returns an entry that owns a handle to the engine, for `'static` futures
    /// and tasks. A queueing wait is not taken here: the caller waits out [`OwnedEntry::waited`]
    /// (asynchronously, ideally) before proceeding. Origins and arguments are copied (a string argument
    /// allocates).
    pub fn enter_owned(self) -> Result<OwnedEntry, BlockError> {
        let engine = self.engine;
        self.admit(false, |active| OwnedEntry::detach(engine.arc(), active))
    }

    /// Runs the slot chain; a queueing wait is awaited with a tokio timer (never slept on the worker).
    /// The entry does not become the thread's current entry (it may move between threads); nest entries
    /// under it with [`Entry::child`].
    #[cfg(feature = "tokio")]
    pub async fn enter_async(self) -> Result<Entry<'a>, BlockError> {
        let engine = self.engine;
        let entry = self.admit(false, |active| Entry { active })?;
        let waited = entry.waited();
        if !waited.is_zero() && engine.clock.sleeps() {
            tokio::time::sleep(waited).await;
        }
        Ok(entry)
    }

    /// Runs the chain and hands the admitted state (`None`: not counted) to `finish`, which makes the
    /// entry of the caller's kind. `on_thread` (for [`enter`](Self::enter)): the entry becomes the
    /// thread's current one, and a queueing wait is slept here, before the entry is made, so that the
    /// entry is made once, in the caller's place: inspecting it after making it (and, for an owned
    /// entry, taking it out of a `Result` to detach it) cost a 176-byte move per call, ≈ 10 ns.
    ///
    /// Always inlined: it sits at the edge of LLVM's inlining threshold, and when a small addition
    /// tipped it over, the builder and the result were moved through `memcpy` and the name memo's
    /// compare became a call: ≈ 100 instructions and ≈ 20 ns more per entry (20M entries with an
    /// argument in a plain loop: 1.38 s → 1.78 s).
    #[inline(always)]
    fn admit<T>(
        self,
        on_thread: bool,
        finish: impl FnOnce(Option<Admitted<Borrowed<'a>>>) -> T,
    ) -> Result<T, BlockError> {
        let args = self.args;
        let engine = self.engine;
        if !engine.is_enabled() {
            return Ok(finish(None));
        }
        let resource = match self.target {
            Target::Resolved(r) => r,
            Target::Name(name) => match engine.resource(name) {
                Some(r) => r,
                None => return Ok(finish(None)),
            },
        };
        let stripe = current_stripe();
        let placement = match self.placement {
            Some(p) => p,
            None => frames::current(engine.id, stripe),
        };
        let Some(context) = engine.registry.context(placement.context) else {
            return Ok(finish(None));
        };
        let origin: &'a str = match (self.origin, placement.origin) {
            (Some(o), _) => o,
            (None, Some(id)) => engine.registry.origin_str(id),
            (None, None) => "",
        };
        let now_nanos = engine.now_nanos();
        let mut cx = SlotContext {
            engine,
            resource,
            context,
            parent: placement.parent,
            origin,
            entry_type: self.entry_type,
            resource_type: self.resource_type,
            count: self.count,
            args: args.as_slice(),
            prioritized: self.prioritized,
            now_ms: now_nanos / NANOS_PER_MILLI,
            now_nanos,
            stripe,
            at: resource
                .cluster
                .stats
                .cursor(now_nanos / NANOS_PER_MILLI, stripe),
            node_id: None,
            default_node: None,
            node_counted: false,
            origin_node_id: None,
            wait: Duration::ZERO,
            pass_borrowed: false,
            position: 0,
            kept: Kept::default(),
        };
        engine.chain.entry(&mut cx)?;
        let kept = cx.kept.take_exit();
        let (node_id, node_counted, origin_node_id, waited) =
            (cx.node_id, cx.node_counted, cx.origin_node_id, cx.wait);
        let (frame_id, previous) = if on_thread {
            frames::push(engine.id, context.id, node_id, placement.origin)
        } else {
            (0, EntryFrame::NONE)
        };
        let waited_nanos = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        // The admitted state's literal, written where it is handed over (a macro, not a closure or a
        // local, so that it is built in place).
        macro_rules! active {
            () => {
                Some(Admitted {
                    at: Borrowed {
                        engine,
                        resource,
                        context,
                        origin,
                        args,
                        previous,
                        frame_id,
                        thread: stripe as u32,
                    },
                    kept,
                    created_nanos: now_nanos,
                    waited_nanos,
                    node: node_id.unwrap_or(NONE),
                    origin_node: origin_node_id.unwrap_or(NONE),
                    count: self.count,
                    entry_type: self.entry_type,
                    node_counted,
                    error: AtomicBool::new(false),
                })
            };
        }
        if on_thread && waited_nanos != 0 {
            let slept = panic::catch_unwind(AssertUnwindSafe(|| engine.clock.sleep(waited)));
            if let Err(payload) = slept {
                // A clock whose sleep panicked: the admitted entry still exits, then the panic goes on.
                drop(finish(active!()));
                panic::resume_unwind(payload);
            }
        }
        Ok(finish(active!()))
    }
}

/// How many arguments an entry keeps inline.
#[derive(Debug, Clone, Copy)]
enum Inline {
    One,
    Two,
}

/// An entry's arguments: up to two inline, a borrowed slice, or boxed.
///
/// The inline values are dropped by hand (see the `Drop` impl): numbers and borrowed strings, the
/// common arguments, own nothing, and checking that is cheaper than the compiler's drop of each value.
#[derive(Debug)]
enum Args<'a> {
    Inline(Inline, ManuallyDrop<[ParamValue<'a>; 2]>),
    Borrowed(&'a [ParamValue<'a>]),
    Heap(Box<[ParamValue<'a>]>),
}

impl Drop for Args<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Args::Inline(_, values) = self {
            if values.iter().any(ParamValue::owns_heap) {
                drop(Args::take_inline(values));
            }
        }
    }
}

impl<'a> Args<'a> {
    const EMPTY: Args<'a> = Args::Borrowed(&[]);

    fn collect<I>(args: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<ParamValue<'a>>,
    {
        let mut it = args.into_iter().map(Into::into);
        let Some(first) = it.next() else {
            return Args::EMPTY;
        };
        let Some(second) = it.next() else {
            return Args::Inline(Inline::One, ManuallyDrop::new([first, ParamValue::Null]));
        };
        let Some(third) = it.next() else {
            return Args::Inline(Inline::Two, ManuallyDrop::new([first, second]));
        };
        let mut all = Vec::with_capacity(3 + it.size_hint().0);
        all.extend([first, second, third]);
        all.extend(it);
        Args::Heap(all.into_boxed_slice())
    }

    /// The same arguments, owning their strings, boxed (no allocation without arguments).
    fn into_owned_boxed(mut self) -> Box<[ParamValue<'static>]> {
        match &mut self {
            // The common case, spelled out: no iterator to build for nothing (an owned entry per request
            // in the tower layer).
            Args::Borrowed([]) => Box::default(),
            Args::Borrowed(values) => values.iter().cloned().map(ParamValue::into_owned).collect(),
            Args::Heap(values) => std::mem::take(values)
                .into_vec()
                .into_iter()
                .map(ParamValue::into_owned)
                .collect(),
            Args::Inline(count, values) => {
                let count = *count;
                let [a, b] = Args::take_inline(values);
                match count {
                    Inline::One => Box::new([a.into_owned()]),
                    Inline::Two => Box::new([a.into_owned(), b.into_owned()]),
                }
            }
        }
    }

    /// Takes the inline values out, leaving nulls (which own nothing) behind.
    fn take_inline(values: &mut ManuallyDrop<[ParamValue<'a>; 2]>) -> [ParamValue<'a>; 2] {
        ManuallyDrop::into_inner(std::mem::replace(
            values,
            ManuallyDrop::new([ParamValue::Null, ParamValue::Null]),
        ))
    }

    #[inline]
    fn as_slice(&self) -> &[ParamValue<'a>] {
        match self {
            Args::Inline(Inline::One, values) => &values[..1],
            Args::Inline(Inline::Two, values) => &values[..],
            Args::Borrowed(values) => values,
            Args::Heap(values) => values,
        }
    }
}

/// "None" for the `u32` ids kept in an entry.
const NONE: u32 = u32::MAX;

/// `id`, unless it is [`NONE`].
fn id(id: u32) -> Option<u32> {
    (id != NONE).then_some(id)
}

/// An admitted call's state, from admission to exit: what the exit hooks read, plus `at`, where the call
/// runs (its engine, resource, context, origin and arguments). An [`Entry`] borrows those
/// ([`Borrowed`]); an [`OwnedEntry`], which cannot borrow from the engine handle it owns, keeps ids
/// ([`Ids`]) and looks them up again at exit. Kept small (ids rather than options and references) so
/// that returning and dropping an entry moves few bytes.
struct Admitted<At> {
    at: At,
    /// What the slots that marked their exit kept for it, and the attachments.
    kept: ExitKept,
    created_nanos: u64,
    waited_nanos: u64,
    node: u32,
    origin_node: u32,
    count: u32,
    entry_type: EntryType,
    node_counted: bool,
    error: AtomicBool,
}

/// Where an [`Entry`]'s call runs, borrowed, and the thread frame the entry pushed.
struct Borrowed<'a> {
    engine: &'a Inner,
    resource: &'a Resource,
    context: &'a ContextData,
    origin: &'a str,
    args: Args<'a>,
    /// The entry this one replaced as the thread's current one (restored at exit).
    previous: EntryFrame,
    /// The thread-local frame id this entry pushed (0: it pushed none).
    frame_id: u32,
    /// The stripe of the thread that admitted it.
    thread: u32,
}

/// Where an [`OwnedEntry`]'s call runs, as ids looked up again at exit.
struct Ids {
    resource: u32,
    context: u32,
    /// Interned origin id (`NONE`: no origin).
    origin: u32,
    /// Owned arguments, out of line (an owned entry is moved around with its future: keep it small).
    args: Box<[ParamValue<'static>]>,
}

impl<At> Admitted<At> {
    /// Whether an error was traced.
    fn has_error(&self) -> bool {
        self.error.load(Ordering::Relaxed)
    }

    /// Runs the chain's exit hooks on the exiting thread's `stripe`, for the call that runs at
    /// `resource`, `context`, `origin` with `args` (as `at` holds them, resolved).
    #[inline]
    fn record(
        &self,
        engine: &Inner,
        resource: &Resource,
        context: &ContextData,
        origin: &str,
        args: &[ParamValue<'_>],
        stripe: usize,
    ) {
        let now_nanos = engine.now_nanos();
        let rt = now_nanos.saturating_sub(self.created_nanos) / NANOS_PER_MILLI;
        let now_ms = now_nanos / NANOS_PER_MILLI;
        let mut cx = ExitContext {
            engine,
            resource,
            context,
            node_id: id(self.node),
            node_counted: self.node_counted,
            origin_node_id: id(self.origin_node),
            origin,
            entry_type: self.entry_type,
            count: self.count,
            args,
            rt_ms: u32::try_from(rt).unwrap_or(u32::MAX),
            error: self.has_error(),
            now_ms,
            stripe,
            at: resource.cluster.stats.cursor(now_ms, stripe),
            position: 0,
            kept: &self.kept,
        };
        engine.chain.exit(&mut cx);
    }
}

impl Admitted<Borrowed<'_>> {
    /// Records the end of the call: restores the thread's frame, then runs the chain's exit hooks (in
    /// that order, so that a hook that panics cannot leave the exited entry current on the thread).
    fn exit(&self) {
        let at = &self.at;
        let stripe = current_stripe();
        if at.frame_id != 0 {
            if at.thread == stripe as u32 {
                frames::pop(at.frame_id, at.previous);
            } else {
                frames::pop_remote(at.thread, at.frame_id, at.previous);
            }
        }
        self.record(
            at.engine,
            at.resource,
            at.context,
            at.origin,
            at.args.as_slice(),
            stripe,
        );
    }

    /// The same call, with ids in place of references and owned arguments.
    fn detach(self, engine: &Inner) -> Admitted<Ids> {
        let Admitted {
            at,
            kept,
            created_nanos,
            waited_nanos,
            node,
            origin_node,
            count,
            entry_type,
            node_counted,
            error,
        } = self;
        Admitted {
            at: Ids {
                resource: at.resource.id,
                context: at.context.id,
                origin: if at.origin.is_empty() {
                    NONE
                } else {
                    engine.registry.intern_origin(at.origin, true)
                },
                args: at.args.into_owned_boxed(),
            },
            kept,
            created_nanos,
            waited_nanos,
            node,
            origin_node,
            count,
            entry_type,
            node_counted,
            error,
        }
    }
}

/// An admitted call. Dropping it records the completion: response time, success, the traced error and
/// concurrency. It exits exactly once, on every path (return, `?`, panic unwinding).
#[must_use = "dropping an entry immediately records a zero-length call"]
pub struct Entry<'a> {
    active: Option<Admitted<Borrowed<'a>>>,
}

impl fmt::Debug for Entry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Entry");
        if let Some(a) = &self.active {
            d.field("resource", &a.at.resource.name)
                .field("context", &a.at.context.name())
                .field("origin", &a.at.origin)
                .field("entry_type", &a.entry_type)
                .field("count", &a.count)
                .field("error", &a.has_error());
        }
        d.field("waited", &self.waited()).finish()
    }
}

impl<'a> Entry<'a> {
    /// Marks the call as failed with `error` (counted as an exception at exit, for error-ratio and
    /// error-count breakers), unless the engine's filters ignore it. A [`BlockError`] is never traced,
    /// nor an error whose `source()` chain holds one.
    pub fn trace<E: Error + 'static>(&self, error: &E) {
        self.trace_dyn(error);
    }

    /// [`trace`](Self::trace) for a `dyn Error`.
    pub fn trace_dyn(&self, error: &(dyn Error + 'static)) {
        if let Some(a) = &self.active {
            if a.at.engine.errors.should_trace(error) {
                a.error.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Whether an error was traced.
    pub fn has_error(&self) -> bool {
        self.active.as_ref().is_some_and(Admitted::has_error)
    }

    /// How long admission waited in a queue (rate limiter, prioritized borrowing); zero when it did not.
    pub fn waited(&self) -> Duration {
        Duration::from_nanos(self.active.as_ref().map_or(0, |a| a.waited_nanos))
    }

    /// The resource's name (empty for an entry that was not counted: engine off, or past the cap).
    pub fn resource(&self) -> &str {
        self.active.as_ref().map_or("", |a| &a.at.resource.name)
    }

    /// The name of the context the entry runs in.
    pub fn context_name(&self) -> &str {
        self.active.as_ref().map_or("", |a| a.at.context.name())
    }

    /// Starts an entry nested under this one, in the same context, on any thread.
    pub fn child(&self, resource: &'a str) -> Option<EntryBuilder<'a>> {
        let a = self.active.as_ref()?;
        let at = &a.at;
        let mut builder = EntryBuilder::new(at.engine, Target::Name(resource));
        builder.placement = Some(Placement {
            context: at.context.id,
            // Handed on to the entries nested under the child on its thread, as a context's origin is.
            origin: (!at.origin.is_empty()).then(|| at.engine.registry.context_origin(at.origin)),
            parent: id(a.node).map_or(Parent::Entrance, Parent::Node),
        });
        if !at.origin.is_empty() {
            builder = builder.origin(at.origin);
        }
        Some(builder)
    }

    /// Exits now (the same as dropping the entry).
    pub fn exit(self) {}
}

impl Drop for Entry<'_> {
    fn drop(&mut self) {
        if let Some(a) = &self.active {
            a.exit();
        }
    }
}

/// An admitted call that owns what it needs (a clone of the engine handle) instead of borrowing it, so it
/// can live in a `'static` future — a tower response future, a spawned task. Like [`Entry`], dropping it
/// records the completion, on every path (cancellation included). It never becomes a thread's current
/// entry. Created by [`EntryBuilder::enter_owned`].
pub struct OwnedEntry {
    // Dropped before the engine handle it may hold the last of.
    detached: Option<Admitted<Ids>>,
    engine: Arc<Inner>,
}

impl fmt::Debug for OwnedEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedEntry")
            .field("resource", &self.resource())
            .field("waited", &self.waited())
            .finish_non_exhaustive()
    }
}

impl OwnedEntry {
    fn detach(engine: Arc<Inner>, active: Option<Admitted<Borrowed<'_>>>) -> Self {
        let detached = active.map(|a| a.detach(&engine));
        OwnedEntry { engine, detached }
    }

    /// Marks the call as failed (see [`Entry::trace`]).
    pub fn trace<E: Error + 'static>(&self, error: &E) {
        self.trace_dyn(error);
    }

    /// [`trace`](Self::trace) for a `dyn Error`.
    pub fn trace_dyn(&self, error: &(dyn Error + 'static)) {
        if let Some(d) = &self.detached {
            if self.engine.errors.should_trace(error) {
                d.error.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Whether an error was traced.
    pub fn has_error(&self) -> bool {
        self.detached.as_ref().is_some_and(Admitted::has_error)
    }

    /// How long admission asked to wait (see [`Entry::waited`]).
    pub fn waited(&self) -> Duration {
        Duration::from_nanos(self.detached.as_ref().map_or(0, |d| d.waited_nanos))
    }

    /// The resource's name (empty for an entry that was not counted).
    pub fn resource(&self) -> &str {
        self.detached
            .as_ref()
            .and_then(|d| self.engine.registry.resource_by_id(d.at.resource))
            .map_or("", |r| &r.name)
    }
}

impl Drop for OwnedEntry {
    fn drop(&mut self) {
        let Some(d) = &self.detached else {
            return;
        };
        let engine = &*self.engine;
        let (Some(resource), Some(context)) = (
            engine.registry.resource_by_id(d.at.resource),
            engine.registry.context(d.at.context),
        ) else {
            return;
        };
        let origin = if d.at.origin == NONE {
            ""
        } else {
            engine.registry.origin_str(d.at.origin)
        };
        d.record(
            engine,
            resource,
            context,
            origin,
            &d.at.args,
            current_stripe(),
        );
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    use super::*;

    /// Entries are returned and dropped by value on every call: what slots keep with one (the words
    /// of the slots that marked their exit, the attachments) fits in the place of an optional box and
    /// a word, and the entry types do not grow.
    #[test]
    fn the_entry_types_keep_their_sizes() {
        use std::mem::size_of;
        assert_eq!(size_of::<Entry<'_>>(), 192);
        assert_eq!(size_of::<OwnedEntry>(), 88);
        assert_eq!(size_of::<Admitted<Borrowed<'_>>>(), 192);
        assert_eq!(size_of::<Admitted<Ids>>(), 80);
    }
}
