//! Entry + exit of an inbound entry under system protection (one qps rule that never blocks), beside the
//! same entry without rules and under an authority white list that admits it.
//!
//! Run with `cargo bench -p floodgate-core --bench system`.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use floodgate_core::{AuthorityRule, EntryType, Floodgate, ManualProbe, SystemRule};

fn inbound(c: &mut Criterion) {
    let mut g = c.benchmark_group("inbound_entry_exit");
    let fg = Floodgate::builder()
        .system_probe(ManualProbe::new())
        .build();
    g.bench_function("no_rule", |b| {
        b.iter(|| {
            drop(black_box(
                fg.entry(black_box("GET:/api/orders"))
                    .origin("web")
                    .entry_type(EntryType::In)
                    .enter(),
            ))
        })
    });
    let fg = Floodgate::builder()
        .system_probe(ManualProbe::new())
        .build();
    fg.load_system_rules([SystemRule::new().qps(1e12)]).unwrap();
    g.bench_function("system_qps_rule", |b| {
        b.iter(|| {
            drop(black_box(
                fg.entry(black_box("GET:/api/orders"))
                    .origin("web")
                    .entry_type(EntryType::In)
                    .enter(),
            ))
        })
    });
    let fg = Floodgate::builder()
        .system_probe(ManualProbe::new())
        .build();
    fg.load_system_rules([SystemRule::new()
        .qps(1e12)
        .max_thread(1_000_000)
        .avg_rt(1_000_000)
        .highest_system_load(1e9)
        .highest_cpu_usage(1.0)])
        .unwrap();
    g.bench_function("system_all_dimensions", |b| {
        b.iter(|| {
            drop(black_box(
                fg.entry(black_box("GET:/api/orders"))
                    .origin("web")
                    .entry_type(EntryType::In)
                    .enter(),
            ))
        })
    });
    let fg = Floodgate::builder()
        .system_probe(ManualProbe::new())
        .build();
    fg.load_authority_rules([AuthorityRule::white("GET:/api/orders", "web,mobile")])
        .unwrap();
    g.bench_function("authority_white_list", |b| {
        b.iter(|| {
            drop(black_box(
                fg.entry(black_box("GET:/api/orders"))
                    .origin("web")
                    .entry_type(EntryType::In)
                    .enter(),
            ))
        })
    });
    g.finish();
}

criterion_group!(benches, inbound);
criterion_main!(benches);
