//! Authority rules by caller: `GET:/api/orders` admits only the web and mobile front ends (a white
//! list), `POST:/api/refunds` refuses the batch jobs (a black list). Every caller tries both; the program
//! prints who passes.
//!
//! Run with `cargo run --example authority`.

use floodgate::{AuthorityRule, BlockKind, EntryType, Floodgate, RuleType};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fg = Floodgate::default();
    // The same rules as Sentinel JSON (what a dashboard pushes)…
    fg.load_rules_json(
        RuleType::Authority,
        r#"[{"resource":"GET:/api/orders","limitApp":"web,mobile","strategy":0},
            {"resource":"POST:/api/refunds","limitApp":"batch-nightly,batch-hourly","strategy":1}]"#,
    )?;
    // …or typed.
    fg.load_authority_rules([
        AuthorityRule::white("GET:/api/orders", "web,mobile"),
        AuthorityRule::black("POST:/api/refunds", "batch-nightly,batch-hourly"),
    ])?;

    let callers = ["web", "mobile", "batch-nightly", "partner", ""];
    for resource in ["GET:/api/orders", "POST:/api/refunds"] {
        println!("{resource}");
        for caller in callers {
            let entry = fg
                .entry(resource)
                .origin(caller)
                .entry_type(EntryType::In)
                .enter();
            let shown = if caller.is_empty() {
                "(no origin)"
            } else {
                caller
            };
            match entry {
                Ok(_entry) => println!("  {shown:<14} passes"),
                Err(block) if block.kind() == BlockKind::Authority => {
                    let list = block
                        .rule_as::<AuthorityRule>()
                        .map_or("", |r| r.limit_app.as_str());
                    println!("  {shown:<14} blocked (list: {list})");
                }
                Err(block) => println!("  {shown:<14} blocked: {block}"),
            }
        }
    }
    Ok(())
}
