//! Uniform pacing (leaky bucket): 10 QPS with a 500 ms queue. A burst of ten requests at one instant is
//! spread 100 ms apart; the 7th would wait 600 ms and is rejected. Simulated clock.
//!
//! Run with `cargo run --example flow_rate_limiter`.

use floodgate::{Floodgate, ManualClock, RuleType};

fn main() -> Result<(), floodgate::RuleError> {
    let clock = ManualClock::new(1_700_000_000_000);
    let fg = Floodgate::builder().clock(clock).build();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"pay","count":10,"controlBehavior":2,"maxQueueingTimeMs":500}]"#,
    )?;
    println!("pay: 10 QPS paced, queue up to 500 ms; ten requests at one instant:");
    for i in 1..=10 {
        match fg.entry("pay").enter() {
            Ok(entry) => println!("request {i:>2}: passes after {:?}", entry.waited()),
            Err(block) => println!("request {i:>2}: {block}"),
        }
    }
    Ok(())
}
