//! A QPS limit that rejects: `GET:/orders` at 20 QPS under ~50 requests a second. Prints passed/blocked
//! per second on a simulated clock (instant and deterministic).
//!
//! Run with `cargo run --example flow_qps`.

use std::time::Duration;

use floodgate::{Floodgate, ManualClock, RuleType};

fn main() -> Result<(), floodgate::RuleError> {
    let clock = ManualClock::new(1_700_000_000_000);
    let fg = Floodgate::builder().clock(clock.clone()).build();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"GET:/orders","count":20}]"#)?;
    println!("GET:/orders limited to 20 QPS, offered 50 QPS");
    for second in 1..=5 {
        let (mut passed, mut blocked) = (0, 0);
        for _ in 0..50 {
            match fg.entry("GET:/orders").enter() {
                Ok(_entry) => passed += 1,
                Err(_) => blocked += 1,
            }
            clock.advance(Duration::from_millis(20));
        }
        println!("second {second}: passed {passed:>2}  blocked {blocked:>2}");
    }
    Ok(())
}
