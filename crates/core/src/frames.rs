//! The thread's place in the call tree: the entry current on this thread (entries started on it nest
//! under it), the contexts entered with [`ContextBuilder::run`](crate::ContextBuilder::run), and the
//! exits of entries that ended on another thread than theirs. Thread-local, per engine; the hot path
//! copies a frame and touches no `RefCell`.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::registry::Parent;

/// The entry that is current on this thread (copied, so the hot path touches no `RefCell`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryFrame {
    /// 0 for "no entry" (engine ids start at 1).
    engine: u32,
    id: u32,
    context: u32,
    /// `u32::MAX` for none.
    node: u32,
    /// The interned origin the entry's context gave it (`u32::MAX` for none): entries nested under it
    /// inherit it, as they inherit the context.
    origin: u32,
}

impl EntryFrame {
    pub(crate) const NONE: EntryFrame = EntryFrame {
        engine: 0,
        id: 0,
        context: 0,
        node: u32::MAX,
        origin: u32::MAX,
    };
}

/// A context entered with [`ContextBuilder::run`].
#[derive(Debug)]
struct ContextFrame {
    engine: u64,
    context: u32,
    origin: Option<u32>,
}

/// Per-thread state: the current entry, the next entry id, how many contexts are entered.
#[derive(Debug)]
struct ThreadState {
    current: Cell<EntryFrame>,
    next_id: Cell<u32>,
    contexts: Cell<u32>,
    /// How many entries [`EXITED`] holds (so that an exit in order never touches it).
    exited: Cell<u32>,
    /// The current entry of another engine, hidden under `current` (an entry of a second engine started
    /// inside one of the first): entries of that engine still nest under it. Set when an entry of the
    /// second engine is placed, cleared when the hidden entry exits or is current again.
    hidden: Cell<EntryFrame>,
    /// This thread's [`REMOTE_EXIT_COUNTS`] counter when it last took its remote exits.
    remote_seen: Cell<u32>,
}

/// Entries that exited on another thread than the one they were current on, for that thread to take
/// the next time it places an entry, so that such an entry does not stay current on its thread for good,
/// with later entries there nesting under it, in its context, with its origin
/// (`an_entry_that_exits_on_another_thread_is_no_longer_current_on_its_own`). Sentinel's entry exits
/// through the context object its thread holds.
#[derive(Debug)]
struct RemoteExits {
    /// By thread (its stripe number, unique per thread): (sequence number, id, the entry it had
    /// replaced), oldest first.
    by_thread: BTreeMap<u32, VecDeque<(u64, u32, EntryFrame)>>,
    /// The thread of each record, by sequence number: the oldest record goes first when there are too
    /// many (those of threads that ended, which never take theirs), so that a live thread's records
    /// are never the ones dropped, even when they are the oldest
    /// (`a_live_threads_remote_exit_outlives_those_of_threads_that_ended`).
    by_age: BTreeMap<u64, u32>,
    next: u64,
}

static REMOTE_EXITS: Mutex<RemoteExits> = Mutex::new(RemoteExits {
    by_thread: BTreeMap::new(),
    by_age: BTreeMap::new(),
    next: 0,
});
/// Bumped for each remote exit, in the counter of its thread's stripe modulo [`REMOTE_SLOTS`]: a
/// thread compares its own with what it last saw (one relaxed load per placed entry), so it takes the
/// lock only when an exit may be its own.
static REMOTE_EXIT_COUNTS: [AtomicU32; REMOTE_SLOTS] = [const { AtomicU32::new(0) }; REMOTE_SLOTS];
const REMOTE_SLOTS: usize = 64;
/// The most remote exits kept (past it, the oldest are dropped).
const MAX_REMOTE_EXITS: usize = 4096;

/// The counter of remote exits for the thread of stripe `stripe`.
fn remote_exit_count(stripe: usize) -> &'static AtomicU32 {
    &REMOTE_EXIT_COUNTS[stripe % REMOTE_SLOTS]
}

thread_local! {
    static STATE: ThreadState = const {
        ThreadState {
            current: Cell::new(EntryFrame::NONE),
            next_id: Cell::new(1),
            contexts: Cell::new(0),
            exited: Cell::new(0),
            hidden: Cell::new(EntryFrame::NONE),
            remote_seen: Cell::new(0),
        }
    };
    static CONTEXTS: RefCell<Vec<ContextFrame>> = const { RefCell::new(Vec::new()) };
    /// Entries that exited out of order (while an entry nested under them was current), with the entry
    /// each had replaced: when the entry above one exits and would make it current again, the one it
    /// had replaced becomes current instead.
    static EXITED: RefCell<Vec<(u32, EntryFrame)>> = const { RefCell::new(Vec::new()) };
}

/// The most out-of-order exits remembered per thread (past it the oldest are forgotten: only entries
/// leaked above them would ever need them).
const MAX_EXITED: usize = 256;

/// Where an entry started on this thread belongs: context, inherited origin, parent.
#[derive(Debug)]
pub(crate) struct Placement {
    pub(crate) context: u32,
    /// An interned origin id.
    pub(crate) origin: Option<u32>,
    pub(crate) parent: Parent,
}

/// The innermost context entered with `run` for `engine` on this thread.
fn context_frame(engine: u64) -> Option<(u32, Option<u32>)> {
    // `try_with`: the thread-locals with destructors (`CONTEXTS`, `EXITED`) may already be gone when an
    // entry is dropped by another thread-local's destructor; the frame bookkeeping is then skipped.
    CONTEXTS
        .try_with(|frames| {
            frames
                .borrow()
                .iter()
                .rev()
                .find(|f| f.engine == engine)
                .map(|f| (f.context, f.origin))
        })
        .ok()
        .flatten()
}

/// Where a new entry of `engine` on this thread belongs: under the current entry if it is the engine's,
/// else at the entrance of the context entered with `run`, else in the default context.
#[inline]
pub(crate) fn current(engine: u64, stripe: usize) -> Placement {
    let (mut entry, contexts, seen) =
        STATE.with(|s| (s.current.get(), s.contexts.get(), s.remote_seen.get()));
    if seen != remote_exit_count(stripe).load(Ordering::Relaxed) {
        entry = take_remote_exits(stripe);
    }
    if entry.engine != engine as u32 && entry.engine != 0 {
        entry = hidden_or(entry, engine);
    }
    let context = if contexts > 0 {
        context_frame(engine)
    } else {
        None
    };
    match (entry, context) {
        (e, context) if e.engine == engine as u32 => Placement {
            context: e.context,
            origin: (e.origin != u32::MAX).then_some(e.origin).or_else(|| {
                context.and_then(|(c, origin)| (c == e.context).then_some(origin).flatten())
            }),
            parent: if e.node == u32::MAX {
                Parent::Entrance
            } else {
                Parent::Node(e.node)
            },
        },
        (_, Some((context, origin))) => Placement {
            context,
            origin,
            parent: Parent::Entrance,
        },
        _ => Placement {
            context: 0,
            origin: None,
            parent: Parent::Entrance,
        },
    }
}

/// Makes an entry current on this thread; returns its id and the entry it replaced. `origin`: the
/// interned origin its context gave it.
#[inline]
pub(crate) fn push(
    engine: u64,
    context: u32,
    node: Option<u32>,
    origin: Option<u32>,
) -> (u32, EntryFrame) {
    STATE.with(|s| {
        let id = s.next_id.get();
        s.next_id.set(id.checked_add(1).unwrap_or(1));
        let previous = s.current.replace(EntryFrame {
            engine: engine as u32,
            id,
            context,
            node: node.unwrap_or(u32::MAX),
            origin: origin.unwrap_or(u32::MAX),
        });
        (id, previous)
    })
}

/// The entry `id` of this thread exited; `previous` is the entry it had replaced. The current one:
/// `previous` becomes current again, unless it exited meanwhile (out of order), in which case the entry
/// *it* had replaced does, and so on. One under the current one (an exit out of order): it is
/// remembered, so that it never becomes current again. (Sentinel throws there and exits every entry
/// above it; here they go on.) An exit on another thread cannot reach this thread's state.
#[inline]
pub(crate) fn pop(id: u32, previous: EntryFrame) {
    // The usual exit, in order with nothing hidden or exited out of order, touches three cells; the
    // rest is out of line (inline, the thread-local access was not: ≈ 30 instructions per exit).
    let done = STATE.with(|s| {
        let usual = s.current.get().id == id && s.exited.get() == 0 && s.hidden.get().id == 0;
        if usual {
            s.current.set(previous);
        }
        usual
    });
    if !done {
        pop_unusual(id, previous);
    }
}

#[cold]
#[inline(never)]
fn pop_unusual(id: u32, previous: EntryFrame) {
    STATE.with(|s| pop_on(s, id, previous));
}

/// [`pop`] on this thread's state (also for remote exits).
fn pop_on(s: &ThreadState, id: u32, previous: EntryFrame) {
    if s.current.get().id == id {
        let next = if s.exited.get() == 0 {
            previous
        } else {
            skip_exited(s, previous)
        };
        s.current.set(next);
        let hidden = s.hidden.get().id;
        if hidden != 0 && (hidden == next.id || hidden == id) {
            unhide(s);
        }
    } else {
        if s.hidden.get().id == id {
            // The hidden entry exited (out of order): nothing is hidden any more. (Not the entry
            // it had replaced: finding it would consume the out-of-order records the next
            // in-order exit needs.)
            unhide(s);
        }
        let _ = EXITED.try_with(|exited| {
            let mut exited = exited.borrow_mut();
            if exited.len() == MAX_EXITED {
                exited.remove(0);
            }
            exited.push((id, previous));
            s.exited.set(exited.len() as u32);
        });
    }
}

/// An entry current on the thread of stripe `thread` (another one) exited: recorded for that thread
/// to take.
#[cold]
pub(crate) fn pop_remote(thread: u32, id: u32, previous: EntryFrame) {
    let mut remote = REMOTE_EXITS.lock().unwrap_or_else(|e| e.into_inner());
    let RemoteExits {
        by_thread,
        by_age,
        next,
    } = &mut *remote;
    let seq = *next;
    *next += 1;
    by_thread
        .entry(thread)
        .or_default()
        .push_back((seq, id, previous));
    by_age.insert(seq, thread);
    if by_age.len() > MAX_REMOTE_EXITS {
        if let Some((_, oldest)) = by_age.pop_first() {
            if let Some(exits) = by_thread.get_mut(&oldest) {
                exits.pop_front();
                if exits.is_empty() {
                    by_thread.remove(&oldest);
                }
            }
        }
    }
    remote_exit_count(thread as usize).fetch_add(1, Ordering::Release);
}

/// Applies this thread's remote exits, in the order they happened, as if they had exited here; the
/// current entry then. Out of line, and checked for outside the thread-local access (inside, the
/// access was no longer inlined).
#[cold]
#[inline(never)]
fn take_remote_exits(stripe: usize) -> EntryFrame {
    STATE.with(|s| {
        s.remote_seen
            .set(remote_exit_count(stripe).load(Ordering::Acquire));
    });
    let mine = {
        let mut remote = REMOTE_EXITS.lock().unwrap_or_else(|e| e.into_inner());
        let mine = remote
            .by_thread
            .remove(&(stripe as u32))
            .unwrap_or_default();
        for (seq, _, _) in &mine {
            remote.by_age.remove(seq);
        }
        mine
    };
    STATE.with(|s| {
        for (_, id, previous) in mine {
            pop_on(s, id, previous);
        }
        s.current.get()
    })
}

/// Where an entry of `engine` goes when the thread's current entry, `top`, is another engine's: under
/// the hidden entry if it is `engine`'s. Else `top` is about to be hidden under the new entry (if it is
/// admitted), and becomes the hidden one. (One hidden entry: with three engines interleaved, or two
/// alternating twice, an entry may start at its context's entrance instead of under its engine's
/// current entry, as before there was any.)
#[cold]
fn hidden_or(top: EntryFrame, engine: u64) -> EntryFrame {
    STATE.with(|s| {
        let hidden = s.hidden.get();
        if hidden.engine == engine as u32 {
            hidden
        } else {
            s.hidden.set(top);
            top
        }
    })
}

/// The hidden frame is current again, or exited.
#[cold]
fn unhide(s: &ThreadState) {
    s.hidden.set(EntryFrame::NONE);
}

/// `frame`, or, if it exited out of order, the first entry under it that did not.
#[cold]
fn skip_exited(s: &ThreadState, mut frame: EntryFrame) -> EntryFrame {
    let _ = EXITED.try_with(|exited| {
        let mut exited = exited.borrow_mut();
        while let Some(at) = exited.iter().rposition(|(id, _)| *id == frame.id) {
            frame = exited.remove(at).1;
        }
        s.exited.set(exited.len() as u32);
    });
    frame
}

pub(crate) fn push_context(engine: u64, context: u32, origin: Option<u32>) {
    let pushed = CONTEXTS.try_with(|frames| {
        frames.borrow_mut().push(ContextFrame {
            engine,
            context,
            origin,
        });
    });
    if pushed.is_ok() {
        STATE.with(|s| s.contexts.set(s.contexts.get() + 1));
    }
}

pub(crate) fn pop_context() {
    if CONTEXTS
        .try_with(|frames| frames.borrow_mut().pop())
        .is_ok()
    {
        STATE.with(|s| s.contexts.set(s.contexts.get().saturating_sub(1)));
    }
}

pub(crate) fn has_frame(engine: u64) -> bool {
    STATE.with(|s| s.contexts.get()) > 0 && context_frame(engine).is_some()
}
