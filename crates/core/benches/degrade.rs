//! Entry + exit with circuit breakers: no rule (baseline), one closed breaker on the resource, one
//! default (`"*"`) breaker, and three closed breakers (one per grade).
//!
//! Run with `cargo bench -p floodgate-core --bench degrade`.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use floodgate_core::{DegradeRule, Floodgate};

const RESOURCE: &str = "GET:/api/orders";

fn engine(rules: Vec<DegradeRule>) -> Floodgate {
    let fg = Floodgate::default(); // the cached clock, as in production
    fg.load_degrade_rules(rules).expect("valid rules");
    fg
}

fn closed_breakers(c: &mut Criterion) {
    let mut g = c.benchmark_group("degrade_entry_exit");
    let cases = [
        ("no_rule", vec![]),
        (
            "one_closed_breaker",
            vec![DegradeRule::error_ratio(RESOURCE, 0.5).time_window(10)],
        ),
        (
            "one_default_breaker",
            vec![DegradeRule::error_ratio("*", 0.5).time_window(10)],
        ),
        (
            "three_closed_breakers",
            vec![
                DegradeRule::error_ratio(RESOURCE, 0.5).time_window(10),
                DegradeRule::error_count(RESOURCE, 1000.0).time_window(10),
                DegradeRule::slow_ratio(RESOURCE, 1000.0, 1.0).time_window(10),
            ],
        ),
    ];
    for (name, rules) in cases {
        let fg = engine(rules);
        g.bench_function(format!("by_name/{name}"), |b| {
            b.iter(|| drop(black_box(fg.entry(black_box(RESOURCE)).enter())))
        });
        let key = fg.resource_key(RESOURCE);
        g.bench_function(format!("by_key/{name}"), |b| {
            b.iter(|| drop(black_box(fg.entry_for(&key).enter())))
        });
    }
    g.finish();
}

criterion_group!(benches, closed_breakers);
criterion_main!(benches);
