//! Strategies: RELATE limits `write` by the traffic of `read`; CHAIN limits `db` only when it is entered
//! from the context `checkout`. Simulated clock.
//!
//! Run with `cargo run --example flow_relate_chain`.

use floodgate::{Floodgate, ManualClock, RuleType};

fn main() -> Result<(), floodgate::RuleError> {
    let fg = Floodgate::builder()
        .clock(ManualClock::new(1_700_000_000_000))
        .build();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[
            {"resource":"write","count":5,"strategy":1,"refResource":"read"},
            {"resource":"db","count":2,"strategy":2,"refResource":"checkout"}
        ]"#,
    )?;

    let writes = |fg: &Floodgate| {
        (0..10)
            .filter(|_| fg.entry("write").enter().is_ok())
            .count()
    };
    println!("read idle:       write passed {}/10", writes(&fg));
    for _ in 0..5 {
        drop(fg.entry("read").enter());
    }
    println!(
        "read at 5 QPS:   write passed {}/10 (relate: read's QPS counts)",
        writes(&fg)
    );

    let db = |fg: &Floodgate| (0..5).filter(|_| fg.entry("db").enter().is_ok()).count();
    let in_checkout = fg.context("checkout").run(|| db(&fg));
    let in_search = fg.context("search").run(|| db(&fg));
    println!("db from checkout passed {in_checkout}/5 (chain applies)");
    println!("db from search   passed {in_search}/5 (another context: no limit)");
    Ok(())
}
