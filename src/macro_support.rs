//! What `#[floodgate::resource]` expansions call. Not a public API: it changes without notice.
//!
//! The traits here carry the compile errors of misuse (`#[diagnostic::on_unimplemented]`), and the
//! `Trace*` traits pick, by autoref specialization at the expansion site, how a returned `Err` is traced:
//! as a `std::error::Error`, through `AsRef<dyn Error>`, or as an opaque [`UntypedError`].

use std::error::Error;
use std::fmt;
use std::future::Future;

#[cfg(feature = "tokio")]
use floodgate_core::EntryBuilder;
use floodgate_core::{BlockError, Entry, Floodgate};

/// The `engine = ..` expression, checked to be a `&Floodgate`.
#[inline(always)]
pub fn engine(engine: &Floodgate) -> &Floodgate {
    engine
}

/// The `engine = ..` expression, checked to be a `&Floodgate`, as a handle of the call's own: the entry
/// borrows it, not the expression's owner (`&self.floodgate` in a `&mut self` method: the body and the
/// handlers may still borrow `self` mutably). One reference count per call, so only used there.
#[inline(always)]
pub fn engine_handle(engine: &Floodgate) -> Floodgate {
    engine.clone()
}

/// Runs a sync body; naming `R` lets `?` in the body know its target type.
#[inline(always)]
pub fn call<R, F: FnOnce() -> R>(body: F) -> R {
    body()
}

/// Types an async body's output as `R`, for the same reason.
#[inline(always)]
pub fn typed_future<R, F: Future<Output = R>>(body: F) -> F {
    body
}

/// A return type that can carry a block.
#[diagnostic::on_unimplemented(
    message = "`#[floodgate::resource]` cannot return a block as `{Self}`",
    label = "this function returns `{Self}`, not a `Result`",
    note = "give the attribute a `block_handler`, or return a `Result<T, E>` whose `E` implements `From<floodgate::BlockError>`"
)]
pub trait Blockable {
    /// `Err(E::from(block))`.
    fn blocked(block: BlockError) -> Self;
}

impl<T, E: From<BlockError>> Blockable for Result<T, E> {
    #[inline]
    fn blocked(block: BlockError) -> Self {
        Err(E::from(block))
    }
}

/// A blocked call's return value when there is no handler.
#[inline]
pub fn blocked<R: Blockable>(block: BlockError) -> R {
    R::blocked(block)
}

/// A `Result` return type, as `fallback` needs.
#[diagnostic::on_unimplemented(
    message = "`fallback` needs a function returning `Result`, not `{Self}`",
    label = "this function returns `{Self}`",
    note = "a fallback handles the `Err` the body returns; use a `block_handler` to handle blocks alone"
)]
pub trait ResultOutput: Sized {
    /// The error type.
    type Err;
    /// `Err(error)` for an error, else `Ok(self)`.
    fn split_error(self) -> Result<Self, Self::Err>;
    /// The output that is the error `error`.
    fn from_error(error: Self::Err) -> Self;
}

impl<T, E> ResultOutput for Result<T, E> {
    type Err = E;

    #[inline(always)]
    fn split_error(self) -> Result<Self, E> {
        match self {
            Ok(value) => Ok(Ok(value)),
            Err(error) => Err(error),
        }
    }

    #[inline(always)]
    fn from_error(error: E) -> Self {
        Err(error)
    }
}

/// The body's error for the fallback, or the output to return as it is.
#[inline(always)]
pub fn split_error<R: ResultOutput>(output: R) -> Result<R, R::Err> {
    output.split_error()
}

/// The output that is `error` (an error the fallback does not get).
#[inline]
pub fn rejoin_error<R: ResultOutput>(error: R::Err) -> R {
    R::from_error(error)
}

/// A block as the error a fallback receives (no block handler).
#[inline]
pub fn block_error<R: ResultOutput>(block: BlockError) -> R::Err
where
    R::Err: From<BlockError>,
{
    R::Err::from(block)
}

/// Enters from a task: the entry may move between threads, a queueing wait is awaited.
#[diagnostic::on_unimplemented(
    message = "`#[floodgate::resource]` on an `async fn` needs floodgate's `tokio` feature",
    label = "entered from an `async fn` here",
    note = "enable it: `floodgate = {{ version = \"0.1\", features = [\"tokio\"] }}`"
)]
pub trait EnterAsync<'a> {
    /// `EntryBuilder::enter_async`.
    fn enter_in_task(self) -> impl Future<Output = Result<Entry<'a>, BlockError>> + Send + 'a;
}

#[cfg(feature = "tokio")]
impl<'a> EnterAsync<'a> for EntryBuilder<'a> {
    #[inline]
    fn enter_in_task(self) -> impl Future<Output = Result<Entry<'a>, BlockError>> + Send + 'a {
        self.enter_async()
    }
}

/// The admitted entry; for a sync function, traces a panic that unwinds through the body before
/// exiting (an async body's panics are traced where it is polled: [`traced_body`]).
#[derive(Debug)]
pub struct Guard<'a> {
    entry: Entry<'a>,
    /// Trace a drop during unwinding: a sync call that did not begin while the thread was already
    /// unwinding (called from a `Drop` during a panic).
    trace_unwinding: bool,
}

impl<'a> Guard<'a> {
    /// Guards `entry` of a sync function.
    #[inline]
    pub fn new(entry: Entry<'a>) -> Self {
        Guard {
            entry,
            trace_unwinding: !std::thread::panicking(),
        }
    }

    /// Guards `entry` of an async function: dropped during unwinding, it was cancelled (its caller
    /// panicked elsewhere), not failed.
    #[inline]
    pub fn new_async(entry: Entry<'a>) -> Self {
        Guard {
            entry,
            trace_unwinding: false,
        }
    }

    /// The entry.
    #[inline]
    pub fn entry(&self) -> &Entry<'a> {
        &self.entry
    }

    /// Whether the body's error goes to the fallback: it was traced, or the engine did not count the
    /// call (switched off, or a new name past the resource cap), so no filter could say to ignore it.
    #[inline]
    pub fn falls_back(&self) -> bool {
        self.entry.has_error() || self.entry.resource().is_empty()
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if self.trace_unwinding && std::thread::panicking() {
            self.entry.trace_dyn(&Panicked);
        }
    }
}

/// Runs an async body, tracing a panic that unwinds out of one of its polls into `entry` before it
/// goes on. Only the body's own: a guarded future dropped while its caller unwinds from another panic
/// was cancelled, and is not traced: it is no failure of the guarded resource
/// (`an_async_panic_is_traced_and_a_cancellation_during_anothers_is_not`).
pub async fn traced_body<R, F: Future<Output = R>>(entry: &Entry<'_>, body: F) -> R {
    let mut body = std::pin::pin!(body);
    std::future::poll_fn(|cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body.as_mut().poll(cx))) {
            Ok(poll) => poll,
            Err(payload) => {
                entry.trace_dyn(&Panicked);
                std::panic::resume_unwind(payload)
            }
        }
    })
    .await
}

/// What is traced when the guarded body panics.
#[derive(Debug, Clone, Copy)]
pub struct Panicked;

impl fmt::Display for Panicked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the guarded function panicked")
    }
}

impl Error for Panicked {}

/// What is traced for an `Err` whose type is not a `std::error::Error`.
#[derive(Debug, Clone, Copy)]
pub struct UntypedError {
    /// The error's type.
    pub type_name: &'static str,
}

impl fmt::Display for UntypedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an error of type `{}`", self.type_name)
    }
}

impl Error for UntypedError {}

/// The body's output, probed by reference; `(&&&&Probe(&out)).__floodgate_trace(&guard)` takes the first
/// of `TraceError`, `TraceAsRef`, `TraceAsRefSend`, `TraceUntyped`, `TraceNothing` that applies.
#[derive(Debug)]
pub struct Probe<'a, T: ?Sized>(pub &'a T);

impl<T: ?Sized> Clone for Probe<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for Probe<'_, T> {}

/// `Err(E)` with `E: Error`: traced as itself.
pub trait TraceError {
    /// Traces the output's error, if any.
    fn __floodgate_trace(self, guard: &Guard<'_>);
}

impl<T, E: Error + 'static> TraceError for &&&&Probe<'_, Result<T, E>> {
    #[inline]
    fn __floodgate_trace(self, guard: &Guard<'_>) {
        if let Err(error) = self.0 {
            guard.entry.trace(error);
        }
    }
}

/// `Err(E)` with `E: AsRef<dyn Error>` (`Box<dyn Error>`, `anyhow::Error`): traced as the error it holds.
pub trait TraceAsRef {
    /// Traces the output's error, if any.
    fn __floodgate_trace(self, guard: &Guard<'_>);
}

impl<T, E: AsRef<dyn Error + 'static>> TraceAsRef for &&&Probe<'_, Result<T, E>> {
    #[inline]
    fn __floodgate_trace(self, guard: &Guard<'_>) {
        if let Err(error) = self.0 {
            guard.entry.trace_dyn(error.as_ref());
        }
    }
}

/// `Err(E)` with `E: AsRef<dyn Error + Send + Sync>` (`Box<dyn Error + Send + Sync>`).
pub trait TraceAsRefSend {
    /// Traces the output's error, if any.
    fn __floodgate_trace(self, guard: &Guard<'_>);
}

impl<T, E: AsRef<dyn Error + Send + Sync + 'static>> TraceAsRefSend for &&Probe<'_, Result<T, E>> {
    #[inline]
    fn __floodgate_trace(self, guard: &Guard<'_>) {
        if let Err(error) = self.0 {
            guard.entry.trace_dyn(error.as_ref());
        }
    }
}

/// `Err(E)` of any other type: traced as an [`UntypedError`].
pub trait TraceUntyped {
    /// Traces the output's error, if any.
    fn __floodgate_trace(self, guard: &Guard<'_>);
}

impl<T, E> TraceUntyped for &Probe<'_, Result<T, E>> {
    #[inline]
    fn __floodgate_trace(self, guard: &Guard<'_>) {
        if self.0.is_err() {
            guard.entry.trace_dyn(&UntypedError {
                type_name: std::any::type_name::<E>(),
            });
        }
    }
}

/// Not a `Result`: nothing to trace.
pub trait TraceNothing {
    /// Does nothing.
    fn __floodgate_trace(self, guard: &Guard<'_>);
}

impl<T: ?Sized> TraceNothing for Probe<'_, T> {
    #[inline(always)]
    fn __floodgate_trace(self, _guard: &Guard<'_>) {}
}
