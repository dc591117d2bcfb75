//! Warm-up: a cold resource starts at a third of its limit and reaches it over the warm-up period
//! (Sentinel's token bucket: count 20, 10 s, cold factor 3 → warningToken 100, maxToken 200, slope 0.001).
//! Prints passes per second under saturating load on a simulated clock.
//!
//! Run with `cargo run --example flow_warm_up`.

use std::time::Duration;

use floodgate::{Floodgate, ManualClock, RuleType};

fn main() -> Result<(), floodgate::RuleError> {
    let clock = ManualClock::new(1_700_000_000_000);
    let fg = Floodgate::builder().clock(clock.clone()).build();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"cold-start","count":20,"controlBehavior":1,"warmUpPeriodSec":10}]"#,
    )?;
    let status = &fg.flow_status()[0];
    println!(
        "warningToken {:?}, maxToken {:?}, slope {:?}",
        status.warning_token, status.max_token, status.slope
    );
    for second in 1..=15 {
        let mut passed = 0;
        for _ in 0..100 {
            for _ in 0..10 {
                if fg.entry("cold-start").enter().is_ok() {
                    passed += 1;
                }
            }
            clock.advance(Duration::from_millis(10));
        }
        println!(
            "second {second:>2}: {passed:>2} passed {}",
            "#".repeat(passed)
        );
    }
    Ok(())
}
