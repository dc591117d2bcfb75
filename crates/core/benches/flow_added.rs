//! What one flow rule adds to entry+exit, measured interleaved: on a shared, noisy machine two
//! criterion runs taken a minute apart differ by more than the few nanoseconds a rule costs, so this
//! alternates rounds of the same loop on an engine without rules and on one with a rule of each
//! controller (never blocking), and reports the fastest round of each and their difference; then
//! compares a rejection (count 0) with an admission (the reject rule above) the same way.
//!
//! Run with `cargo bench -p floodgate-core --bench flow_added`.

#![allow(missing_docs)] // a bench binary

use std::hint::black_box;
use std::time::Instant;

use floodgate_core::{Floodgate, RuleType};

#[path = "common/flow_rules.rs"]
mod flow_rules;

const ROUNDS: usize = 30;
const CALLS: u64 = 1_000_000;

fn round(fg: &Floodgate) -> f64 {
    let start = Instant::now();
    for _ in 0..CALLS {
        drop(black_box(fg.entry(black_box("R")).enter()));
    }
    start.elapsed().as_nanos() as f64 / CALLS as f64
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and gets no 300-million-call run.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let cases = flow_rules::ONE_RULE_EACH;
    let bare = Floodgate::default();
    for (name, rules) in cases {
        let ruled = Floodgate::default();
        ruled.load_rules_json(RuleType::Flow, rules).unwrap();
        let (mut without, mut with) = (f64::MAX, f64::MAX);
        for _ in 0..ROUNDS {
            without = without.min(round(&bare));
            with = with.min(round(&ruled));
        }
        println!(
            "{name:>20}: no rule {without:6.1} ns, with the rule {with:6.1} ns, added {:5.1} ns",
            with - without
        );
    }
    let admitting = Floodgate::default();
    admitting
        .load_rules_json(RuleType::Flow, cases[0].1)
        .unwrap();
    let rejecting = Floodgate::default();
    rejecting
        .load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":0}]"#)
        .unwrap();
    let (mut admitted, mut rejected) = (f64::MAX, f64::MAX);
    for _ in 0..ROUNDS {
        admitted = admitted.min(round(&admitting));
        rejected = rejected.min(round(&rejecting));
    }
    println!("            rejected: admitted {admitted:6.1} ns, rejected {rejected:6.1} ns");
}
