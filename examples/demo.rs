//! The demo: an app guards `GET:/api/orders` with a 20 QPS flow rule and sends it ~50 requests a second
//! for real; every second it prints how many passed and how many were blocked.
//!
//! Run with `cargo run --release --example demo` (add `-- 30` to run 30 seconds instead of 10).

use std::time::{Duration, Instant};

use floodgate::{EntryType, Floodgate, RuleType};

fn main() -> Result<(), floodgate::RuleError> {
    let seconds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let fg = Floodgate::builder().build();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/api/orders","count":20}]"#,
    )?;
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
    Ok(())
}
