//! The agent's per-second collection over 5,000 resources, and a `metric` answer for one minute of
//! 1,000 resources.
//!
//! Run with `cargo bench -p floodgate-transport --bench agent`.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use floodgate_core::{Floodgate, ManualClock};
use floodgate_transport::{MetricStore, thin_line};

fn engine(resources: usize) -> (ManualClock, Floodgate, Vec<String>) {
    let clock = ManualClock::new(1_700_000_000_000);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .max_resources(resources)
        .build();
    let names = (0..resources)
        .map(|i| format!("GET:/api/resource/{i}"))
        .collect();
    (clock, fg, names)
}

fn collection(c: &mut Criterion) {
    let (clock, fg, names) = engine(5000);
    let store = MetricStore::new(Duration::from_secs(300));
    c.bench_function("collect_one_second_5000_resources", |b| {
        b.iter_batched(
            || {
                for name in &names {
                    drop(fg.entry(name).enter());
                }
                clock.advance(Duration::from_secs(1));
            },
            |()| black_box(store.collect(&fg)),
            BatchSize::PerIteration,
        )
    });
}

fn metric_answer(c: &mut Criterion) {
    let (clock, fg, names) = engine(1000);
    let store = MetricStore::new(Duration::from_secs(300));
    let start = clock.now_ms();
    for _ in 0..60 {
        for name in &names {
            drop(fg.entry(name).enter());
        }
        clock.advance(Duration::from_secs(1));
        store.collect(&fg);
    }
    c.bench_function("metric_answer_60s_x_1000_resources", |b| {
        b.iter(|| {
            let mut out = String::new();
            for line in store.between(start, start + 60_000) {
                out.push_str(&thin_line(&line));
                out.push('\n');
            }
            black_box(out.len())
        })
    });
}

use floodgate_core::Clock as _;

criterion_group!(benches, collection, metric_answer);
criterion_main!(benches);
