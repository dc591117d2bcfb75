//! Contexts: named call trees with a caller origin, for sync code (a thread-local scope) and async code
//! (an explicit handle whose entries carry the context across `.await`).
//!
//! Every entry belongs to a context. Without one, it runs in the default context
//! (`sentinel_default_context`). [`ContextBuilder::run`] enters a named context for the duration of a
//! closure on this thread; as in Sentinel's `ContextUtil.enter`, entering while a context of the same engine
//! is already active on the thread keeps the outer one. Entries started inside become children of the
//! entry that is current on the thread, forming the call tree.
//!
//! For async code, [`ContextBuilder::entry`] starts entries in the context explicitly, and
//! [`Entry::child`](crate::Entry::child) nests an entry under another one, wherever they run.

use crate::engine::Inner;
use crate::entry::{EntryBuilder, Target};
use crate::frames::{Placement, has_frame, pop_context, push_context};
use crate::registry::Parent;

/// A named context with an origin (Sentinel's `ContextUtil.enter`).
///
/// Every entry belongs to a context; without one it runs in the default context
/// (`sentinel_default_context`). [`run`](Self::run) enters the context for the duration of a closure on this
/// thread (entering while a context of the same engine is active keeps the outer one, as in Sentinel), and
/// entries started inside become children of the thread's current entry, forming the call tree. For async
/// code, [`entry`](Self::entry) starts entries in the context explicitly and
/// [`Entry::child`](crate::Entry::child) nests an entry under another, wherever they run.
#[derive(Debug, Clone)]
pub struct ContextBuilder<'a> {
    engine: &'a Inner,
    name: &'a str,
    origin: Option<&'a str>,
}

impl<'a> ContextBuilder<'a> {
    pub(crate) fn new(engine: &'a Inner, name: &'a str) -> Self {
        ContextBuilder {
            engine,
            name,
            origin: None,
        }
    }

    /// The caller (Sentinel's origin) that entries in this context come from.
    pub fn origin(mut self, origin: &'a str) -> Self {
        self.origin = Some(origin);
        self
    }

    /// Runs `f` with this context entered on the current thread.
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        if has_frame(self.engine.id) {
            return f();
        }
        let context = self.engine.context_id(self.name);
        let origin = self
            .origin
            .filter(|o| !o.is_empty())
            .map(|o| self.engine.registry.context_origin(o));
        struct Exit;
        impl Drop for Exit {
            fn drop(&mut self) {
                pop_context();
            }
        }
        push_context(self.engine.id, context, origin);
        let _exit = Exit;
        f()
    }

    /// Starts an entry in this context, independent of the thread (for async code). Entries nested under
    /// it (on its thread, or with [`Entry::child`](crate::Entry::child)) inherit the context's origin.
    pub fn entry(&self, resource: &'a str) -> EntryBuilder<'a> {
        let context = self.engine.context_id(self.name);
        let mut builder = EntryBuilder::new(self.engine, Target::Name(resource));
        builder.placement = Some(Placement {
            context,
            // Interned as `run` does, so that the entry hands it on to the entries nested under it.
            origin: self
                .origin
                .filter(|o| !o.is_empty())
                .map(|o| self.engine.registry.context_origin(o)),
            parent: Parent::Entrance,
        });
        builder
    }
}
