//! `#[floodgate::resource]`, the counterpart of Sentinel's `@SentinelResource`: a blocked call returns
//! the block as the function's error, a block handler's value, or a fallback's; business errors are
//! traced; async functions hold their entry across awaits. Runs on a simulated clock (instant and
//! deterministic) installed as the process-wide default engine.
//!
//! Run with `cargo run --example macro_resource --features tokio`.

use std::fmt;

use floodgate::{BlockError, Floodgate, FlowRule, ManualClock};

/// The service's error: a block is one of its cases.
#[derive(Debug)]
enum ApiError {
    Blocked(BlockError),
    UnknownSku(String),
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Blocked(block) => write!(f, "{block}"),
            ApiError::UnknownSku(sku) => write!(f, "unknown sku {sku}"),
        }
    }
}

impl std::error::Error for ApiError {}

impl From<BlockError> for ApiError {
    fn from(block: BlockError) -> Self {
        ApiError::Blocked(block)
    }
}

/// Inbound, 3 QPS: a blocked call returns `Err(ApiError::Blocked(..))` through `From<BlockError>`.
#[floodgate::resource(name = "GET:/orders/{id}", entry_type = In, resource_type = Web)]
fn get_order(id: u64) -> Result<String, ApiError> {
    Ok(format!("order #{id}"))
}

/// What `stock` returns when blocked: gets the call's arguments and the block.
fn stock_blocked(sku: &str, block: BlockError) -> u32 {
    println!(
        "  stock({sku}) blocked by a {} rule: answering from cache",
        block.kind()
    );
    0
}

/// Not a `Result`, so a block handler is required.
#[floodgate::resource(name = "inventory", block_handler = stock_blocked)]
fn stock(sku: &str) -> u32 {
    sku.len() as u32
}

/// Handles the business errors `price` returns (and blocks, since `price` has no block handler).
fn price_fallback(sku: &str, error: ApiError) -> Result<f64, ApiError> {
    println!("  price({sku}) failed ({error}): list price");
    Ok(9.99)
}

#[floodgate::resource(name = "pricing", fallback = price_fallback)]
fn price(sku: &str) -> Result<f64, ApiError> {
    match sku {
        "apple" => Ok(0.5),
        other => Err(ApiError::UnknownSku(other.to_owned())),
    }
}

/// An async resource: the entry is held across the await and exits on every path.
#[floodgate::resource(name = "recommendations")]
async fn recommend(user: u64) -> Result<Vec<u64>, ApiError> {
    tokio::task::yield_now().await;
    let seed: u64 = user
        .to_string()
        .parse()
        .map_err(|_| ApiError::UnknownSku(user.to_string()))?;
    Ok(vec![seed * 10, seed * 10 + 1])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine = Floodgate::builder()
        .clock(ManualClock::new(1_700_000_000_000))
        .build();
    engine.load_flow_rules([
        FlowRule::new("GET:/orders/{id}", 3.0),
        FlowRule::new("inventory", 0.0),
    ])?;
    floodgate::set_global_default(engine)?;

    println!("GET:/orders/{{id}} at 3 QPS, called 5 times in one instant:");
    for id in 1..=5 {
        match get_order(id) {
            Ok(order) => println!("  {order}"),
            Err(error) => println!("  #{id}: {error}"),
        }
    }

    println!("inventory (no traffic allowed):");
    println!("  stock(apple) = {}", stock("apple"));

    println!("pricing:");
    println!("  price(apple) = {}", price("apple")?);
    println!("  price(durian) = {}", price("durian")?);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let picks = runtime.block_on(recommend(7))?;
    println!("recommendations for user 7: {picks:?}");

    let global = floodgate::global();
    for resource in [
        "GET:/orders/{id}",
        "inventory",
        "pricing",
        "recommendations",
    ] {
        if let Some(node) = global.cluster_node(resource) {
            println!(
                "{resource}: passed {}, blocked {}, errors {}, in flight {}",
                node.total_pass(),
                node.block_qps(),
                node.total_exception(),
                node.cur_thread_num()
            );
        }
    }
    Ok(())
}
