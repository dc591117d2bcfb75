//! Entry + exit with one flow rule of each controller (none of them blocking), and a rejection, on one
//! thread and (aggregate time per call) on 2 threads rejecting on one resource.
//!
//! Run with `cargo bench -p floodgate-core --bench flow`.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use floodgate_core::{Floodgate, RuleType};

#[path = "common/flow_rules.rs"]
mod flow_rules;

fn flow(c: &mut Criterion) {
    let mut g = c.benchmark_group("flow_entry_exit");
    let cases = std::iter::once(("no_rule", "[]")).chain(flow_rules::ONE_RULE_EACH);
    for (name, rules) in cases {
        let fg = Floodgate::default();
        fg.load_rules_json(RuleType::Flow, rules).unwrap();
        g.bench_function(name, |b| {
            b.iter(|| drop(black_box(fg.entry(black_box("R")).enter())))
        });
    }
    let fg = Floodgate::default();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":0}]"#)
        .unwrap();
    // The same loop body as the admitted cases (the result dropped), so the two compare.
    g.bench_function("rejected", |b| {
        b.iter(|| drop(black_box(fg.entry(black_box("R")).enter())))
    });
    g.finish();
}

/// Aggregate time per rejected entry when `threads` threads are refused on one resource.
fn run_threads(fg: &Floodgate, threads: usize, iters: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..iters {
                    drop(black_box(fg.entry(black_box("R")).enter()));
                }
            });
        }
    });
    // Total elapsed divided by all calls of all threads.
    start.elapsed() / threads as u32
}

fn rejected_contended(c: &mut Criterion) {
    let mut g = c.benchmark_group("rejected_aggregate");
    let fg = Floodgate::default();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":0}]"#)
        .unwrap();
    for threads in [1, 2] {
        g.bench_function(format!("{threads}_threads"), |b| {
            b.iter_custom(|iters| run_threads(&fg, threads, iters))
        });
    }
    g.finish();
}

criterion_group!(benches, flow, rejected_contended);
criterion_main!(benches);
