//! Entry + exit on the hot path: no rule, by name and by handle, per clock, two threads, 10,000 resources.
//!
//! Run with `cargo bench -p floodgate-core --bench entry`.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use floodgate_core::{CachedClock, Clock, Floodgate, ManualClock, SystemClock};

fn clocks(c: &mut Criterion) {
    let mut g = c.benchmark_group("clock_read");
    let precise = SystemClock::new();
    let cached = CachedClock::new();
    g.bench_function("instant_now", |b| b.iter(|| black_box(Instant::now())));
    g.bench_function("system_clock", |b| {
        b.iter(|| black_box(precise.now_nanos()))
    });
    g.bench_function("cached_clock", |b| b.iter(|| black_box(cached.now_nanos())));
    g.finish();
}

fn single_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("entry_exit");
    let engines: [(&str, Arc<dyn Clock>); 3] = [
        ("cached_clock", Arc::new(CachedClock::new())),
        ("system_clock", Arc::new(SystemClock::new())),
        (
            "manual_clock",
            Arc::new(ManualClock::new(1_700_000_000_000)),
        ),
    ];
    for (name, clock) in engines {
        let fg = Floodgate::builder().shared_clock(clock).build();
        g.bench_function(format!("by_name/{name}"), |b| {
            b.iter(|| drop(black_box(fg.entry(black_box("GET:/api/orders")).enter())))
        });
        let key = fg.resource_key("GET:/api/orders");
        g.bench_function(format!("by_key/{name}"), |b| {
            b.iter(|| drop(black_box(fg.entry_for(&key).enter())))
        });
    }
    let fg = Floodgate::default();
    // An entry that owns its engine handle (what the tower layer uses per request).
    g.bench_function("owned_by_name/cached_clock", |b| {
        b.iter(|| {
            drop(black_box(
                fg.entry(black_box("GET:/api/orders")).enter_owned(),
            ))
        })
    });
    g.bench_function("by_name_with_origin/cached_clock", |b| {
        b.iter(|| {
            drop(black_box(
                fg.entry("GET:/api/orders").origin("appA").enter(),
            ))
        })
    });
    let names: Vec<String> = (0..10_000)
        .map(|i| format!("GET:/api/resource/{i}"))
        .collect();
    let fg = Floodgate::builder().max_resources(20_000).build();
    let mut i = 0;
    g.bench_function("cycling_10k_resources/cached_clock", |b| {
        b.iter(|| {
            i = (i + 1) % names.len();
            drop(black_box(fg.entry(&names[i]).enter()))
        })
    });
    g.finish();
}

/// Aggregate time per entry+exit when `threads` threads hammer one resource.
fn run_threads(fg: &Floodgate, threads: usize, iters: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..iters {
                    drop(black_box(fg.entry("GET:/api/orders").enter()));
                }
            });
        }
    });
    // Per operation in aggregate: total elapsed divided by all operations of all threads.
    start.elapsed() / threads as u32
}

fn contended(c: &mut Criterion) {
    let mut g = c.benchmark_group("one_resource_aggregate");
    let fg = Floodgate::default();
    for threads in [1, 2] {
        g.bench_function(format!("{threads}_threads"), |b| {
            b.iter_custom(|iters| run_threads(&fg, threads, iters))
        });
    }
    g.finish();
}

criterion_group!(benches, clocks, single_thread, contended);
criterion_main!(benches);
