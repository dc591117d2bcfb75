//! Hot-parameter limits: each user of `GET:/orders` may make 5 calls a second, user 42 (an exception
//! item) 20, and a batch call counts against every user it names. Prints per-user passes and blocks per
//! second on a simulated clock (instant and deterministic), then the rule's cache status.
//!
//! Run with `cargo run --example param_flow`.

use std::time::Duration;

use floodgate::{Floodgate, ManualClock, ParamFlowItem, ParamFlowRule, ParamValue};

const USERS: [i64; 3] = [7, 42, 99];

fn main() -> Result<(), floodgate::RuleError> {
    let clock = ManualClock::new(1_700_000_000_000);
    let fg = Floodgate::builder().clock(clock.clone()).build();
    // The first argument (`paramIdx` 0) is the user id: 5 calls a second each, user 42 has 20.
    fg.load_param_flow_rules([
        ParamFlowRule::new("GET:/orders", 0, 5.0).item(ParamFlowItem::int(42, 20))
    ])?;
    println!("GET:/orders: 5 calls a second per user, user 42: 20; each user offers 25 a second");
    for second in 1..=3 {
        let mut line = format!("second {second}:");
        for user in USERS {
            let (mut passed, mut blocked) = (0, 0);
            for _ in 0..25 {
                match fg.entry("GET:/orders").args([user]).enter() {
                    Ok(_entry) => passed += 1,
                    Err(block) => {
                        // The block names the value it was refused for.
                        assert_eq!(block.param(), Some(ParamValue::Int(user)));
                        blocked += 1;
                    }
                }
            }
            line += &format!("  user {user}: {passed:>2} passed {blocked:>2} blocked");
        }
        println!("{line}");
        clock.advance(Duration::from_millis(1001));
    }
    // A list argument checks every element first and charges only if all pass: user 99 has no room
    // left this second, so the batch is refused and user 7 keeps the token it would have spent.
    for _ in 0..5 {
        drop(fg.entry("GET:/orders").args([99]).enter());
    }
    let batch = ParamValue::list([7, 99]);
    let refused = fg.entry("GET:/orders").args([batch]).enter().is_err();
    let user_7_alone = (0..5)
        .filter(|_| fg.entry("GET:/orders").args([7]).enter().is_ok())
        .count();
    println!(
        "batch [7, 99] refused: {refused}; user 7 alone afterwards: {user_7_alone} of 5 passed"
    );
    for status in fg.param_flow_status() {
        println!(
            "cache: {} values of {} remembered, {} evicted, {} overflowed",
            status.values, status.capacity, status.evictions, status.overflows
        );
    }
    Ok(())
}
