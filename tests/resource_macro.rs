//! `#[floodgate::resource]` end to end on one ManualClock engine (`engine = engine()`): each test guards
//! its own resource, so the tests run in parallel; the clock never moves, so every count is exact.

use std::error::Error;
use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use floodgate::{
    BlockError, BlockKind, Floodgate, FlowGrade, FlowRule, ManualClock, ParamFlowRule,
};

const T0: u64 = 1_700_000_000_000;

/// The tests' engine: flow and hot-parameter rules on the resources that need them.
fn engine() -> &'static Floodgate {
    static ENGINE: OnceLock<Floodgate> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let fg = Floodgate::builder().clock(ManualClock::new(T0)).build();
        fg.load_flow_rules([
            FlowRule::new("sync_block", 2.0),
            FlowRule::new("nested_inner", 0.0),
            FlowRule::new("always_blocked", 0.0),
            FlowRule::new("handler_args", 0.0),
            FlowRule::new("fallback_gets_block", 0.0),
            FlowRule::new("handler_over_fallback", 0.0),
            FlowRule::new("method_blocked", 0.0),
            FlowRule::new("async_blocked", 0.0),
            FlowRule::new("async_fallback_block", 0.0),
            FlowRule::new("async_trait_blocked", 0.0),
            FlowRule::new("concurrency_one", 1.0).grade(FlowGrade::Thread),
        ])
        .expect("valid flow rules");
        fg.load_param_flow_rules([ParamFlowRule::new("hot_param", 0, 1.0)])
            .expect("valid hot-parameter rules");
        fg
    })
}

fn in_flight(resource: &str) -> u64 {
    engine()
        .cluster_node(resource)
        .map_or(0, |n| n.cur_thread_num())
}

fn passed(resource: &str) -> u64 {
    engine()
        .cluster_node(resource)
        .map_or(0, |n| n.total_pass())
}

fn exceptions(resource: &str) -> u64 {
    engine()
        .cluster_node(resource)
        .map_or(0, |n| n.total_exception())
}

fn blocks(resource: &str) -> f64 {
    engine()
        .cluster_node(resource)
        .map_or(0.0, |n| n.block_qps())
}

/// A business error that can carry a block.
#[derive(Debug)]
enum AppError {
    Blocked(BlockError),
    NotFound(u64),
    Parse(std::num::ParseIntError),
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::Blocked(b) => write!(f, "blocked: {b}"),
            AppError::NotFound(id) => write!(f, "{id} not found"),
            AppError::Parse(e) => write!(f, "parse: {e}"),
        }
    }
}

impl Error for AppError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            AppError::Blocked(block) => Some(block),
            AppError::NotFound(_) => None,
            AppError::Parse(e) => Some(e),
        }
    }
}

impl From<BlockError> for AppError {
    fn from(block: BlockError) -> Self {
        AppError::Blocked(block)
    }
}

impl From<std::num::ParseIntError> for AppError {
    fn from(e: std::num::ParseIntError) -> Self {
        AppError::Parse(e)
    }
}

// --- sync -----------------------------------------------------------------------------------------

#[floodgate::resource(name = "sync_ok", engine = engine())]
fn add(a: u32, b: u32) -> Result<u32, AppError> {
    assert_eq!(
        in_flight("sync_ok"),
        1,
        "the entry is held while the body runs"
    );
    Ok(a + b)
}

#[test]
fn sync_ok_enters_and_exits() {
    assert_eq!(add(2, 3).unwrap(), 5);
    assert_eq!(add(4, 5).unwrap(), 9);
    assert_eq!(passed("sync_ok"), 2);
    assert_eq!(in_flight("sync_ok"), 0);
    assert_eq!(exceptions("sync_ok"), 0);
}

static SYNC_BLOCK_RUNS: AtomicU32 = AtomicU32::new(0);

#[floodgate::resource(name = "sync_block", engine = engine())]
fn limited() -> Result<(), AppError> {
    SYNC_BLOCK_RUNS.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

#[test]
fn sync_blocked_returns_the_block_as_the_error() {
    assert!(limited().is_ok());
    assert!(limited().is_ok());
    match limited() {
        Err(AppError::Blocked(block)) => {
            assert_eq!(block.kind(), BlockKind::Flow);
            assert_eq!(block.resource(), "sync_block");
        }
        other => panic!("expected a block, got {other:?}"),
    }
    assert_eq!(
        SYNC_BLOCK_RUNS.load(Ordering::Relaxed),
        2,
        "a blocked call does not run the body"
    );
    assert_eq!(passed("sync_block"), 2);
    assert_eq!(blocks("sync_block"), 1.0);
    assert_eq!(
        exceptions("sync_block"),
        0,
        "a block is not a business error"
    );
    assert_eq!(in_flight("sync_block"), 0);
}

#[floodgate::resource(name = "question_mark", engine = engine())]
fn parse_sum(a: &str, b: &str) -> Result<u64, AppError> {
    let a: u64 = a.parse()?;
    let b: u64 = b.parse()?;
    Ok(a + b)
}

#[test]
fn question_mark_exits_and_traces_the_error() {
    assert_eq!(parse_sum("1", "2").unwrap(), 3);
    assert!(matches!(parse_sum("1", "x"), Err(AppError::Parse(_))));
    assert_eq!(
        in_flight("question_mark"),
        0,
        "`?` left through the entry's exit"
    );
    assert_eq!(passed("question_mark"), 2);
    assert_eq!(exceptions("question_mark"), 1);
    let node = engine().cluster_node("question_mark").unwrap();
    assert_eq!(node.exception_qps(), 1.0);
}

#[floodgate::resource(name = "early_return", engine = engine())]
fn find(id: u64) -> Result<&'static str, AppError> {
    if id == 0 {
        return Err(AppError::NotFound(id));
    }
    if id == 1 {
        return Ok("one");
    }
    Ok("many")
}

#[test]
fn early_return_exits() {
    assert_eq!(find(1).unwrap(), "one");
    assert_eq!(find(2).unwrap(), "many");
    assert!(matches!(find(0), Err(AppError::NotFound(0))));
    assert_eq!(in_flight("early_return"), 0);
    assert_eq!(passed("early_return"), 3);
    assert_eq!(exceptions("early_return"), 1);
}

// --- handlers -------------------------------------------------------------------------------------

fn greet_blocked(name: &str, times: u32, block: BlockError) -> String {
    format!("{name} x{times} blocked by {}", block.kind())
}

#[floodgate::resource(name = "handler_args", engine = engine(), block_handler = greet_blocked)]
fn greet(name: &str, times: u32) -> String {
    format!("hello {name} x{times}")
}

#[test]
fn block_handler_gets_the_arguments_and_the_block() {
    assert_eq!(greet("ann", 3), "ann x3 blocked by flow");
    assert_eq!(passed("handler_args"), 0);
    assert_eq!(in_flight("handler_args"), 0);
}

fn lookup_fallback(id: u64, error: AppError) -> Result<String, AppError> {
    match error {
        AppError::NotFound(missing) => Ok(format!("default for {missing} (asked {id})")),
        other => Err(other),
    }
}

#[floodgate::resource(name = "fallback_on_error", engine = engine(), fallback = lookup_fallback)]
fn lookup(id: u64) -> Result<String, AppError> {
    if id > 10 {
        return Err(AppError::NotFound(id));
    }
    Ok(format!("item {id}"))
}

#[test]
fn fallback_handles_the_business_error_and_the_error_is_traced() {
    assert_eq!(lookup(3).unwrap(), "item 3");
    assert_eq!(lookup(42).unwrap(), "default for 42 (asked 42)");
    assert_eq!(
        exceptions("fallback_on_error"),
        1,
        "traced before the fallback"
    );
    assert_eq!(in_flight("fallback_on_error"), 0);
}

fn guarded_fallback(key: String, error: AppError) -> Result<String, AppError> {
    match error {
        AppError::Blocked(block) => Ok(format!("{key}: fallback for {}", block.kind())),
        other => Err(other),
    }
}

#[floodgate::resource(name = "fallback_gets_block", engine = engine(), fallback = guarded_fallback)]
fn guarded(key: String) -> Result<String, AppError> {
    // The fallback gets `key` after the body: the body borrows it, not moves it.
    Ok(key.clone())
}

#[test]
fn without_block_handler_the_fallback_gets_the_block() {
    assert_eq!(guarded("k".to_owned()).unwrap(), "k: fallback for flow");
    assert_eq!(exceptions("fallback_gets_block"), 0);
}

fn both_on_block(block: BlockError) -> Result<&'static str, AppError> {
    assert_eq!(block.resource(), "handler_over_fallback");
    Ok("block handler")
}

fn both_fallback(_error: AppError) -> Result<&'static str, AppError> {
    Ok("fallback")
}

#[floodgate::resource(
    name = "handler_over_fallback",
    engine = engine(),
    block_handler = both_on_block,
    fallback = both_fallback,
)]
fn both() -> Result<&'static str, AppError> {
    Ok("body")
}

#[test]
fn the_block_handler_wins_over_the_fallback() {
    assert_eq!(both().unwrap(), "block handler");
}

// --- methods, generics, borrows -------------------------------------------------------------------

struct Repo {
    items: Vec<String>,
    reads: u32,
}

impl Repo {
    #[floodgate::resource(name = "method", engine = engine())]
    fn get(&self, index: usize) -> Result<&str, AppError> {
        self.items
            .get(index)
            .map(String::as_str)
            .ok_or(AppError::NotFound(index as u64))
    }

    #[floodgate::resource(name = "method_mut", engine = engine())]
    fn read(&mut self) -> Result<u32, AppError> {
        self.reads += 1;
        Ok(self.reads)
    }

    fn on_block(&self, index: usize, block: BlockError) -> Option<usize> {
        assert_eq!(block.resource(), "method_blocked");
        Some(self.items.len() + index)
    }

    #[floodgate::resource(name = "method_blocked", engine = engine(), block_handler = Self::on_block)]
    fn position(&self, index: usize) -> Option<usize> {
        Some(index)
    }
}

#[test]
fn methods_pass_the_receiver_to_the_handler() {
    let mut repo = Repo {
        items: vec!["a".to_owned(), "b".to_owned()],
        reads: 0,
    };
    assert_eq!(repo.get(1).unwrap(), "b");
    assert!(matches!(repo.get(5), Err(AppError::NotFound(5))));
    assert_eq!(repo.read().unwrap(), 1);
    assert_eq!(repo.read().unwrap(), 2);
    assert_eq!(repo.position(3), Some(5));
    assert_eq!(passed("method"), 2);
    assert_eq!(exceptions("method"), 1);
    assert_eq!(in_flight("method_mut"), 0);
}

#[floodgate::resource(name = "generic", engine = engine())]
fn parse_as<T: std::str::FromStr>(text: &str) -> Result<T, AppError>
where
    AppError: From<T::Err>,
{
    Ok(text.trim().parse()?)
}

#[floodgate::resource(name = "impl_trait", engine = engine())]
fn evens(limit: u32) -> Result<impl Iterator<Item = u32>, AppError> {
    Ok((0..limit).filter(|n| n % 2 == 0))
}

#[test]
fn generic_and_impl_trait_functions() {
    assert_eq!(parse_as::<u64>(" 12 ").unwrap(), 12);
    assert!(parse_as::<u64>("x").is_err());
    assert_eq!(evens(5).unwrap().collect::<Vec<_>>(), [0, 2, 4]);
    assert_eq!(passed("generic"), 2);
    assert_eq!(exceptions("generic"), 1);
}

// --- error tracing --------------------------------------------------------------------------------

#[floodgate::resource(name = "boxed_error", engine = engine())]
fn boxed(fail: bool) -> Result<(), Box<dyn Error + Send + Sync>> {
    if fail {
        Err("boxed failure")?;
    }
    Ok(())
}

fn string_blocked(_fail: bool, block: BlockError) -> Result<(), String> {
    Err(block.to_string())
}

#[floodgate::resource(name = "string_error", engine = engine(), block_handler = string_blocked)]
fn stringly(fail: bool) -> Result<(), String> {
    if fail {
        return Err("plain string".to_owned());
    }
    Ok(())
}

fn io_blocked(_fail: bool, block: BlockError) -> std::io::Result<()> {
    Err(std::io::Error::other(block))
}

#[floodgate::resource(name = "io_error", engine = engine(), block_handler = io_blocked)]
fn io(fail: bool) -> std::io::Result<()> {
    if fail {
        return Err(std::io::Error::other("disk"));
    }
    Ok(())
}

#[test]
fn every_kind_of_error_is_traced() {
    assert!(boxed(false).is_ok());
    assert!(boxed(true).is_err());
    assert!(stringly(false).is_ok());
    assert!(stringly(true).is_err());
    assert!(io(false).is_ok());
    assert!(io(true).is_err());
    for resource in ["boxed_error", "string_error", "io_error"] {
        assert_eq!(passed(resource), 2, "{resource}");
        assert_eq!(exceptions(resource), 1, "{resource}");
    }
}

/// An engine whose filter ignores errors whose message starts with "ignore": shows which error a
/// `Result`'s `Err` is traced as.
fn filtered_engine() -> &'static Floodgate {
    static ENGINE: OnceLock<Floodgate> = OnceLock::new();
    ENGINE.get_or_init(|| {
        Floodgate::builder()
            .clock(ManualClock::new(T0))
            .ignore_if(|e| e.to_string().starts_with("ignore"))
            .build()
    })
}

#[floodgate::resource(name = "filtered_boxed", engine = filtered_engine())]
fn filtered_boxed(message: &'static str) -> Result<(), Box<dyn Error + Send + Sync>> {
    Err(message)?
}

#[floodgate::resource(name = "filtered_typed", engine = filtered_engine())]
fn filtered_typed(id: u64) -> Result<(), AppError> {
    Err(AppError::NotFound(id))
}

#[test]
fn the_engine_filters_see_the_error_itself() {
    assert!(filtered_boxed("ignore me").is_err());
    assert!(filtered_boxed("count me").is_err());
    assert!(filtered_typed(1).is_err());
    let count = |resource| {
        filtered_engine()
            .cluster_node(resource)
            .map_or(0, |n| n.total_exception())
    };
    assert_eq!(
        count("filtered_boxed"),
        1,
        "the boxed error, not a wrapper, was filtered"
    );
    assert_eq!(count("filtered_typed"), 1);
}

#[floodgate::resource(name = "panics", engine = engine())]
fn panics() -> Result<(), AppError> {
    panic!("boom");
}

#[test]
fn a_panic_exits_and_is_traced() {
    assert!(std::panic::catch_unwind(panics).is_err());
    assert_eq!(in_flight("panics"), 0);
    assert_eq!(exceptions("panics"), 1);
}

// --- entry options --------------------------------------------------------------------------------

#[floodgate::resource(name = "hot_param", engine = engine(), args = [user])]
fn per_user(user: &str) -> Result<(), AppError> {
    Ok(())
}

#[test]
fn args_feed_hot_parameter_rules() {
    assert!(per_user("alice").is_ok());
    assert!(
        matches!(per_user("alice"), Err(AppError::Blocked(b)) if b.kind() == BlockKind::ParamFlow)
    );
    assert!(per_user("bob").is_ok());
}

#[floodgate::resource(name = "inbound", engine = engine(), entry_type = In, resource_type = Web)]
fn inbound() -> Result<(), AppError> {
    Ok(())
}

#[floodgate::resource(
    name = "outbound",
    engine = engine(),
    entry_type = floodgate::EntryType::Out,
    resource_type = floodgate::ResourceType::Rpc
)]
fn outbound() -> Result<(), AppError> {
    Ok(())
}

#[test]
fn entry_type_in_counts_as_inbound_traffic() {
    let before = engine().inbound_node().total_pass();
    inbound().unwrap();
    outbound().unwrap();
    assert_eq!(engine().inbound_node().total_pass(), before + 1);
}

#[floodgate::resource(name = "global_default")]
fn on_global() -> Result<u8, AppError> {
    Ok(1)
}

#[test]
fn without_engine_the_global_default_is_used() {
    assert_eq!(on_global().unwrap(), 1);
    let node = floodgate::global().cluster_node("global_default").unwrap();
    assert_eq!(node.total_pass(), 1);
}

#[floodgate::resource(name = "concurrency_one", engine = engine())]
fn reentrant(depth: u32) -> Result<u32, AppError> {
    if depth == 0 {
        return Ok(0);
    }
    // The outer call still holds the only permit.
    match reentrant(depth - 1) {
        Err(AppError::Blocked(_)) => Ok(depth),
        other => other,
    }
}

#[test]
fn the_entry_is_held_for_the_whole_body() {
    assert_eq!(reentrant(1).unwrap(), 1, "the nested call was blocked");
    assert_eq!(in_flight("concurrency_one"), 0);
    assert_eq!(reentrant(0).unwrap(), 0);
}

#[floodgate::resource(name = "nested_inner", engine = engine())]
fn nested_inner() -> Result<u32, AppError> {
    Ok(1)
}

#[floodgate::resource(name = "nested_outer", engine = engine())]
fn nested_outer() -> Result<u32, AppError> {
    Ok(nested_inner()? + 1)
}

/// A nested guarded call's block, passed up with `?` in the caller's error type, is not the outer
/// call's failure: it must not feed the outer resource's breakers.
#[test]
fn a_nested_block_passed_up_is_not_traced() {
    assert!(matches!(nested_outer(), Err(AppError::Blocked(_))));
    assert_eq!(passed("nested_outer"), 1);
    assert_eq!(exceptions("nested_outer"), 0);
    assert_eq!(in_flight("nested_outer"), 0);
}

// --- async ----------------------------------------------------------------------------------------

#[cfg(feature = "tokio")]
mod async_fns {
    use super::*;

    #[floodgate::resource(name = "async_ok", engine = engine())]
    async fn fetch(id: u64) -> Result<String, AppError> {
        tokio::task::yield_now().await;
        assert_eq!(in_flight("async_ok"), 1, "held across the await");
        let parsed: u64 = id.to_string().parse()?;
        if parsed == 0 {
            return Err(AppError::NotFound(0));
        }
        Ok(format!("item {parsed}"))
    }

    /// The body's value is coerced to the declared output, as without the attribute: a boxed value
    /// becomes a trait object, in the tail and in a `return` (this compiling is the test).
    #[floodgate::resource(name = "async_dyn", engine = engine())]
    async fn shown(id: u64) -> Result<Box<dyn fmt::Display + Send>, AppError> {
        tokio::task::yield_now().await;
        if id == 0 {
            return Ok(Box::new("none"));
        }
        Ok(Box::new(id))
    }

    #[tokio::test]
    async fn async_fn_output_coerces_to_a_trait_object() {
        assert_eq!(shown(7).await.unwrap().to_string(), "7");
        assert_eq!(shown(0).await.unwrap().to_string(), "none");
        assert_eq!(passed("async_dyn"), 2);
        assert_eq!(in_flight("async_dyn"), 0);
    }

    #[floodgate::resource(name = "async_panics", engine = engine())]
    async fn panics_after_a_yield() -> Result<(), AppError> {
        tokio::task::yield_now().await;
        panic!("boom");
    }

    #[floodgate::resource(name = "async_pending", engine = engine())]
    async fn never_ready() -> Result<(), AppError> {
        std::future::pending::<()>().await;
        Ok(())
    }

    /// An async body's panic is traced; a guarded call cancelled while its caller unwinds from a panic
    /// of its own is not (it is no failure of the guarded resource).
    #[tokio::test]
    async fn an_async_panic_is_traced_and_a_cancellation_during_anothers_is_not() {
        assert!(tokio::spawn(panics_after_a_yield()).await.is_err());
        assert_eq!(
            (in_flight("async_panics"), exceptions("async_panics")),
            (0, 1)
        );
        let caller = tokio::spawn(async {
            let call = never_ready();
            tokio::pin!(call);
            // Polled once (admitted, pending), then left.
            std::future::poll_fn(|cx| {
                assert!(call.as_mut().poll(cx).is_pending());
                std::task::Poll::Ready(())
            })
            .await;
            assert_eq!(in_flight("async_pending"), 1);
            panic!("the caller fails for reasons of its own");
        });
        assert!(caller.await.is_err());
        assert_eq!(
            (in_flight("async_pending"), exceptions("async_pending")),
            (0, 0)
        );
    }

    #[tokio::test]
    async fn async_fn_holds_the_entry_across_awaits() {
        assert_eq!(fetch(7).await.unwrap(), "item 7");
        assert!(matches!(fetch(0).await, Err(AppError::NotFound(0))));
        assert_eq!(in_flight("async_ok"), 0);
        assert_eq!(passed("async_ok"), 2);
        assert_eq!(exceptions("async_ok"), 1);
    }

    /// A trait as tonic's generated service traits are: `#[async_trait]` expands first, so the attribute
    /// sees a method returning a boxed future. The entry is held across the body all the same, its
    /// error traced, and a block answered by the handler.
    #[async_trait::async_trait]
    trait Greeter {
        async fn greet(&self, id: u64) -> Result<u64, AppError>;
        async fn blocked(&self, id: u64) -> Result<u64, AppError>;
        async fn with_args(&self, id: i64) -> Result<i64, AppError>;
    }

    struct Service;

    impl Service {
        async fn refuse(&self, _id: u64, _block: BlockError) -> Result<u64, AppError> {
            Ok(u64::MAX)
        }
    }

    #[async_trait::async_trait]
    impl Greeter for Service {
        #[floodgate::resource(name = "async_trait_method", engine = engine(), block_handler = Self::refuse)]
        async fn greet(&self, id: u64) -> Result<u64, AppError> {
            tokio::task::yield_now().await;
            assert_eq!(in_flight("async_trait_method"), 1, "held across the await");
            if id == 0 {
                return Err(AppError::NotFound(0));
            }
            Ok(id)
        }

        #[floodgate::resource(name = "async_trait_blocked", engine = engine(), block_handler = Self::refuse)]
        async fn blocked(&self, id: u64) -> Result<u64, AppError> {
            Ok(id)
        }

        #[floodgate::resource(name = "async_trait_args", engine = engine(), args = [id])]
        async fn with_args(&self, id: i64) -> Result<i64, AppError> {
            Ok(id)
        }
    }

    #[tokio::test]
    async fn async_trait_methods_are_guarded_like_async_fns() {
        assert_eq!(
            Service.blocked(5).await.unwrap(),
            u64::MAX,
            "the handler's answer"
        );
        assert_eq!(Service.with_args(4).await.unwrap(), 4, "hot-parameter args");
        assert_eq!(Service.greet(3).await.unwrap(), 3);
        assert!(Service.greet(0).await.is_err());
        assert_eq!(in_flight("async_trait_method"), 0);
        assert_eq!(passed("async_trait_method"), 2);
        assert_eq!(exceptions("async_trait_method"), 1, "the error traced");
    }

    #[floodgate::resource(name = "async_spawned", engine = engine())]
    async fn spawned(id: u64) -> Result<u64, AppError> {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert_eq!(in_flight("async_spawned"), 1);
        Ok(id)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn async_fn_is_send_and_may_exit_on_another_thread() {
        let handle = tokio::spawn(spawned(9));
        assert_eq!(handle.await.unwrap().unwrap(), 9);
        assert_eq!(in_flight("async_spawned"), 0);
        assert_eq!(passed("async_spawned"), 1);
    }

    async fn on_block(id: u64, block: BlockError) -> Result<String, AppError> {
        tokio::task::yield_now().await;
        Ok(format!("{id} blocked by {}", block.kind()))
    }

    #[floodgate::resource(name = "async_blocked", engine = engine(), block_handler = on_block)]
    async fn fetch_blocked(id: u64) -> Result<String, AppError> {
        Ok(id.to_string())
    }

    #[tokio::test]
    async fn async_block_handler_is_awaited() {
        assert_eq!(fetch_blocked(4).await.unwrap(), "4 blocked by flow");
    }

    #[floodgate::resource(name = "async_fallback_block", engine = engine())]
    async fn fetch_limited() -> Result<(), AppError> {
        Ok(())
    }

    #[tokio::test]
    async fn async_blocked_without_handler_returns_the_error() {
        assert!(matches!(fetch_limited().await, Err(AppError::Blocked(_))));
    }

    async fn recover(id: u64, error: AppError) -> Result<u64, AppError> {
        match error {
            AppError::NotFound(_) => Ok(id * 10),
            other => Err(other),
        }
    }

    #[floodgate::resource(name = "async_fallback", engine = engine(), fallback = recover)]
    async fn fetch_or_recover(id: u64) -> Result<u64, AppError> {
        tokio::task::yield_now().await;
        Err(AppError::NotFound(id))
    }

    #[tokio::test]
    async fn async_fallback_is_awaited() {
        assert_eq!(fetch_or_recover(3).await.unwrap(), 30);
        assert_eq!(exceptions("async_fallback"), 1);
        assert_eq!(in_flight("async_fallback"), 0);
    }
}

// --- fallback and the engine's filters -------------------------------------------------------------

/// An engine that ignores `NotFound` (Sentinel's `exceptionsToIgnore`).
fn filtering_engine() -> &'static Floodgate {
    static ENGINE: OnceLock<Floodgate> = OnceLock::new();
    ENGINE.get_or_init(|| {
        Floodgate::builder()
            .clock(ManualClock::new(T0))
            .ignore_if(|e| {
                e.downcast_ref::<AppError>()
                    .is_some_and(|e| matches!(e, AppError::NotFound(_)))
            })
            .build()
    })
}

static FALLBACKS: AtomicU32 = AtomicU32::new(0);

fn counted_fallback(_id: u64, error: AppError) -> Result<u64, AppError> {
    FALLBACKS.fetch_add(1, Ordering::SeqCst);
    Err(error)
}

#[floodgate::resource(name = "ignored_errors", engine = filtering_engine(), fallback = counted_fallback)]
fn fetch(id: u64) -> Result<u64, AppError> {
    match id {
        0 => Err(AppError::NotFound(id)),
        1 => Err("x".parse::<u64>().map_err(AppError::Parse).unwrap_err()),
        _ => Ok(id),
    }
}

#[test]
fn the_fallback_gets_traced_errors_only() {
    assert!(matches!(fetch(0), Err(AppError::NotFound(0))));
    assert_eq!(
        FALLBACKS.load(Ordering::SeqCst),
        0,
        "an ignored error is returned as it is"
    );
    assert!(matches!(fetch(1), Err(AppError::Parse(_))));
    assert_eq!(
        FALLBACKS.load(Ordering::SeqCst),
        1,
        "a traced one goes to the fallback"
    );
    assert_eq!(fetch(2).unwrap(), 2);
    let node = filtering_engine().cluster_node("ignored_errors").unwrap();
    assert_eq!((node.total_exception(), node.cur_thread_num()), (1, 0));
}

/// In a generic function the error is traced as itself when its bounds say it is an `Error`, so the
/// engine's filters see its type.
#[floodgate::resource(name = "generic_errors", engine = filtering_engine())]
fn generic<E: From<BlockError> + From<AppError> + Error + 'static>(id: u64) -> Result<u64, E> {
    Err(E::from(AppError::NotFound(id)))
}

#[test]
fn generic_error_types_are_traced_as_themselves() {
    assert!(generic::<AppError>(3).is_err());
    let node = filtering_engine().cluster_node("generic_errors").unwrap();
    assert_eq!(node.total_exception(), 0, "seen as a NotFound, and ignored");
}

/// A switched-off engine counts nothing, so no filter decides: every error goes to the fallback, as in
/// Sentinel.
fn switched_off_engine() -> &'static Floodgate {
    static ENGINE: OnceLock<Floodgate> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let fg = Floodgate::builder()
            .clock(ManualClock::new(T0))
            .ignore_if(|e| e.is::<AppError>())
            .build();
        fg.set_enabled(false);
        fg
    })
}

static OFF_FALLBACKS: AtomicU32 = AtomicU32::new(0);

fn off_fallback(_id: u64, _error: AppError) -> Result<u64, AppError> {
    OFF_FALLBACKS.fetch_add(1, Ordering::SeqCst);
    Ok(0)
}

#[floodgate::resource(name = "switched_off", engine = switched_off_engine(), fallback = off_fallback)]
fn fetch_off(id: u64) -> Result<u64, AppError> {
    Err(AppError::NotFound(id))
}

#[test]
fn with_the_engine_switched_off_every_error_goes_to_the_fallback() {
    assert_eq!(fetch_off(1).unwrap(), 0);
    assert_eq!(OFF_FALLBACKS.load(Ordering::SeqCst), 1);
}

/// A service that keeps its engine in a field and guards `&mut self` methods with
/// `engine = &self.fg`: the body and the block handler may borrow `self` mutably (the entry borrows a
/// handle of the call's own, not the field).
struct Counter {
    fg: Floodgate,
    count: u32,
    refused: u32,
}

impl Counter {
    fn bump(&mut self) {
        self.count += 1;
    }

    #[floodgate::resource(name = "mut_self", engine = &self.fg, block_handler = Self::refuse)]
    fn add(&mut self) -> u32 {
        self.bump();
        self.count
    }

    fn refuse(&mut self, _block: BlockError) -> u32 {
        self.refused += 1;
        0
    }
}

#[test]
fn mut_self_methods_with_an_engine_field() {
    let fg = Floodgate::builder().clock(ManualClock::new(T0)).build();
    fg.load_flow_rules([FlowRule::new("mut_self", 2.0)])
        .unwrap();
    let mut counter = Counter {
        fg: fg.clone(),
        count: 0,
        refused: 0,
    };
    let results: Vec<u32> = (0..3).map(|_| counter.add()).collect();
    assert_eq!(results, [1, 2, 0]);
    assert_eq!((counter.count, counter.refused), (2, 1));
    assert_eq!(fg.cluster_node("mut_self").unwrap().cur_thread_num(), 0);
}
