//! `#[floodgate::resource]`: guards a function as a Floodgate resource, the counterpart of Sentinel's
//! `@SentinelResource`. Use it through the `floodgate` crate, which re-exports it; the expansion names
//! `::floodgate` paths.

use proc_macro::TokenStream;

mod args;
mod expand;

/// Guards a function as a Floodgate resource, like Sentinel's `@SentinelResource`.
///
/// Every call enters the resource before the body runs and exits it when the body ends, on every path
/// (`return`, `?`, the end of the block, a panic), so concurrency and response time are always counted.
///
/// ```
/// use floodgate::{BlockError, FlowRule, Floodgate, ManualClock};
/// use std::sync::OnceLock;
///
/// #[derive(Debug)]
/// enum OrderError {
///     Blocked(BlockError),
///     NotFound(u64),
/// }
///
/// impl From<BlockError> for OrderError {
///     fn from(block: BlockError) -> Self {
///         OrderError::Blocked(block)
///     }
/// }
///
/// fn engine() -> &'static Floodgate {
///     static ENGINE: OnceLock<Floodgate> = OnceLock::new();
///     ENGINE.get_or_init(|| {
///         let fg = Floodgate::builder().clock(ManualClock::new(0)).build();
///         fg.load_flow_rules([FlowRule::new("order", 1.0)]).unwrap();
///         fg
///     })
/// }
///
/// #[floodgate::resource(name = "order", engine = engine())]
/// fn order(id: u64) -> Result<String, OrderError> {
///     if id == 0 {
///         return Err(OrderError::NotFound(id));
///     }
///     Ok(format!("order {id}"))
/// }
///
/// assert_eq!(order(7).unwrap(), "order 7");
/// assert!(matches!(order(8), Err(OrderError::Blocked(_))), "one call per second");
/// ```
///
/// # Arguments
///
/// | argument | value | default |
/// |---|---|---|
/// | `name` | the resource name, a `&'static str` (usually a literal) | required |
/// | `entry_type` | `In`, `Out`, or an `EntryType` expression | `Out`, as in Sentinel |
/// | `resource_type` | `Common`, `Web`, `Rpc`, `ApiGateway`, `DbSql`, or a `ResourceType` expression | `Common` |
/// | `args` | `[a, b, ..]`: values for hot-parameter rules, each converted with `ParamValue::from` | none |
/// | `block_handler` | the path of a function to call when the entry is blocked | see below |
/// | `fallback` | the path of a function to call when the body returns `Err` | none |
/// | `engine` | an expression of type `&Floodgate` (a static, `engine()`, `&self.floodgate`; the call takes a handle of its own, so a `&mut self` method's body and handlers may still borrow `self`) | `floodgate::global()` |
///
/// `args` values are borrowed for the whole call (the entry keeps them until it exits): pass `id`,
/// `name.as_str()`, not a value the body moves.
///
/// # Blocked calls
///
/// - With `block_handler = f`, a blocked call returns `f(args.., block)`: `f` takes the function's own
///   arguments (the receiver first, as `Self::f(self, ..)` would), then the `BlockError`, and returns
///   the function's return type.
/// - Else, with `fallback = g` (Sentinel hands a block to the fallback when there is no block handler),
///   it returns `g(args.., E::from(block))`.
/// - Else the function must return `Result<T, E>` with `E: From<BlockError>`, and a blocked call
///   returns `Err(E::from(block))`. Any `Result` works, type aliases and `anyhow::Result` included.
///   A function returning anything else needs a `block_handler`; the compiler says so.
///
/// # Business errors
///
/// When the body returns `Err(e)`, `e` is traced into the entry (an exception for statistics and
/// error-based circuit breakers, subject to the engine's `trace_if`/`ignore_if` filters):
/// `E: std::error::Error + 'static` is traced as itself (in a generic function, only if its bounds say
/// so: `E: From<BlockError> + std::error::Error + 'static`); an `E` that is `AsRef<dyn Error>` (a
/// `Box<dyn Error>`, `anyhow::Error`) as the error it holds; any other `E` (a `String`, say) as an
/// opaque error naming its type. A `BlockError` is never traced. A panic that unwinds through the body
/// is traced too.
///
/// With `fallback = g`, the call then returns `g(args.., e)`: `g` takes the function's arguments and the
/// owned error, and returns the function's return type. An error the engine's filters ignore
/// (`ignore_if`, or not `trace_if`) is returned as it is instead (Sentinel rethrows its
/// `exceptionsToIgnore`), and so is an error whose type is `BlockError` itself (never traced). A call
/// the engine did not count (switched off, or a new name past the resource cap) hands every error to
/// the fallback, as Sentinel does. The arguments are passed after the body ran, so
/// the body may borrow or copy them but not move them. The fallback runs before the entry exits, as in
/// Sentinel. `fallback` needs a function returning `Result`.
///
/// # Async functions
///
/// On an `async fn` the entry is taken with `EntryBuilder::enter_async` (a queueing wait is awaited, not
/// slept, and the entry is not tied to the worker thread) and held across the body's awaits; the
/// handlers are `async fn`s too and are awaited. This needs the `tokio` feature of `floodgate`. Dropping
/// the future before it finishes (a timeout, a cancelled task) exits the entry too. A `fn` returning
/// `Pin<Box<dyn Future<Output = T> ..>>` whose body is `Box::pin(async move { .. })`, which is what
/// `#[async_trait]` (tonic's service traits) makes of an `async fn`, is guarded the same way, inside the
/// future; the body moves the arguments first, so `fallback` is refused there (`block_handler` works, and
/// `args` where what they borrow is not moved): guard an inherent `async fn` the method calls instead. Another function
/// returning `impl Future` without being `async fn` guards only the creation of the future.
///
/// # Restrictions
///
/// - Not on a `const fn`, and only on functions with a body (not on trait method declarations).
/// - With a handler, every argument must be bound to a plain name (not a pattern), since it is passed
///   on.
/// - The expansion names `::floodgate`: depend on the facade under that name.
/// - An error type that borrows (`Result<T, ParseError<'a>>`) cannot be traced as itself (tracing needs
///   `'static`, for the filters to see its type), and does not compile: return an owned error.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut args = args::Args::default();
    let parser = syn::meta::parser(|meta| args.parse(meta));
    let parsed = syn::parse::Parser::parse(parser, attr);
    let item = proc_macro2::TokenStream::from(item);
    match parsed.and_then(|()| expand::expand(args, item.clone())) {
        Ok(expanded) => expanded.into(),
        Err(error) => {
            // The item as written stays, so a misuse reports one error rather than a cascade.
            let mut out = error.to_compile_error();
            out.extend(item);
            out.into()
        }
    }
}
