//! The demo: an app guards `GET:/api/orders` with a 20-per-second limit and sends it ~50 requests a
//! second; every second it prints how many passed and how many were blocked.
//!
//! Run with `cargo run --release --example demo` (add `-- 30` to run 30 seconds instead of 10).

use std::sync::Arc;
use std::time::{Duration, Instant};

use floodgate::{BlockError, BlockKind, EntryType, Floodgate, Hooks, Slot, SlotContext};

/// A user slot: at most `limit` passes per second (the flow rules of the engine do this and more; this
/// shows the slot chain at work).
#[derive(Debug)]
struct QpsLimit {
    limit: f64,
}

impl Slot for QpsLimit {
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        let used = cx.cluster_node().pass_qps();
        if used + f64::from(cx.count()) > self.limit {
            return Err(cx.block(BlockKind::Flow));
        }
        Ok(())
    }

    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }
}

fn main() {
    let seconds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let fg = Floodgate::builder()
        .slot(
            "qps_limit",
            floodgate::order::FLOW,
            Arc::new(QpsLimit { limit: 20.0 }),
        )
        .build();
    println!("guarding GET:/api/orders at 20 QPS, sending ~50 QPS for {seconds} s");
    let start = Instant::now();
    let (mut passed, mut blocked, mut second) = (0u32, 0u32, 0u64);
    while start.elapsed() < Duration::from_secs(seconds) {
        match fg
            .entry("GET:/api/orders")
            .entry_type(EntryType::In)
            .enter()
        {
            Ok(entry) => {
                passed += 1;
                drop(entry);
            }
            Err(_) => blocked += 1,
        }
        std::thread::sleep(Duration::from_millis(20));
        let now = start.elapsed().as_secs();
        if now > second {
            println!("second {now:>3}: passed {passed:>3}  blocked {blocked:>3}");
            (passed, blocked, second) = (0, 0, now);
        }
    }
    let node = fg.cluster_node("GET:/api/orders").expect("entered above");
    println!(
        "last minute: {} passed, {} blocked",
        node.total_pass(),
        node.block_request()
    );
}
