//! Entry + exit guarded by one hot-parameter rule, with 10,000 distinct values cycling.
//!
//! Run with `cargo bench -p floodgate-core --bench param_flow -- --warm-up-time 1 --measurement-time 3`.
//!
//! * `no_rule/*`: the same calls with no parameter rule (the slot's early return);
//! * `qps/*`: a token-bucket rule whose cache holds every value (the steady state: lookup + update);
//! * `qps_default_capacity/ints`: Sentinel's default capacity (4000) for 10,000 hot values, so most
//!   calls find the cache full of values still in use and are judged against the shared overflow cell;
//! * `thread/ints`: a THREAD rule (counted at entry, released at exit).

#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use floodgate_core::{Floodgate, FlowGrade, ParamFlowRule};

const VALUES: usize = 10_000;

fn engine(rule: Option<ParamFlowRule>, capacity: Option<usize>) -> Floodgate {
    let mut builder = Floodgate::builder();
    if let Some(c) = capacity {
        builder = builder.param_cache_capacity(c);
    }
    let fg = builder.build();
    if let Some(rule) = rule {
        fg.load_param_flow_rules([rule]).unwrap();
    }
    fg
}

fn qps() -> ParamFlowRule {
    ParamFlowRule::new("GET:/api/orders", 0, 1e12)
}

fn param_flow(c: &mut Criterion) {
    let ints: Vec<i64> = (0..VALUES as i64).map(|i| i * 7919).collect();
    let strings: Vec<String> = (0..VALUES).map(|i| format!("user-{i:08}")).collect();
    let mut g = c.benchmark_group("param_flow");
    let cases = [
        ("no_rule", None, None),
        ("qps", Some(qps()), Some(16_384)),
        ("qps_default_capacity", Some(qps()), None),
        ("thread", Some(qps().grade(FlowGrade::Thread)), Some(16_384)),
    ];
    for (name, rule, capacity) in cases {
        let fg = engine(rule, capacity);
        let mut i = 0;
        g.bench_function(format!("{name}/ints"), |b| {
            b.iter(|| {
                i = (i + 1) % VALUES;
                drop(black_box(
                    fg.entry("GET:/api/orders").args([ints[i]]).enter(),
                ))
            })
        });
        if name == "qps" || name == "no_rule" {
            g.bench_function(format!("{name}/short_strings"), |b| {
                b.iter(|| {
                    i = (i + 1) % VALUES;
                    drop(black_box(
                        fg.entry("GET:/api/orders")
                            .args([strings[i].as_str()])
                            .enter(),
                    ))
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, param_flow);
criterion_main!(benches);
