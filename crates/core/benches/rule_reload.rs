//! Loading about 1 MiB of Sentinel rule JSON of each type: a first load into a fresh engine, and a
//! reload of a changed list that keeps most rules (every hundredth rule differs; the two lists
//! alternate, so each load changes the rules in force). Lists with every rule on one resource, one
//! authority rule listing 1 MiB of origins, one hot-parameter rule with 1 MiB of exception items, and
//! lists of regex rules at the caps and past them.
//!
//! Run with `cargo bench -p floodgate-core --bench rule_reload`.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use floodgate_core::{Floodgate, RuleType};

#[path = "common/rule_lists.rs"]
mod rule_lists;

use rule_lists::{Variant, list, one_long_authority_rule, one_param_rule_with_items, rule};

/// `(name, type, the list in a variant)`.
type Case = (&'static str, RuleType, Box<dyn Fn(Variant) -> String>);

fn of(kind: &'static str) -> Box<dyn Fn(Variant) -> String> {
    Box::new(move |variant| list(|i| rule(kind, i, variant)))
}

/// `count` regex flow rules, each `pattern(i)`.
fn regex_rules(count: usize, pattern: impl Fn(usize) -> String) -> String {
    let rules: Vec<String> = (0..count)
        .map(|i| {
            let resource = serde_json::Value::from(pattern(i));
            format!(r#"{{"resource":{resource},"regex":true,"count":1}}"#)
        })
        .collect();
    format!("[{}]", rules.join(","))
}

fn cases() -> Vec<Case> {
    vec![
        ("flow", RuleType::Flow, of("flow")),
        ("flow_one_resource", RuleType::Flow, of("flow_one")),
        ("flow_origins", RuleType::Flow, of("flow_origins")),
        ("degrade", RuleType::Degrade, of("degrade")),
        ("degrade_one_resource", RuleType::Degrade, of("degrade_one")),
        ("param_flow", RuleType::ParamFlow, of("param_flow")),
        (
            "param_flow_one_resource",
            RuleType::ParamFlow,
            of("param_flow_one"),
        ),
        (
            "param_flow_items",
            RuleType::ParamFlow,
            Box::new(one_param_rule_with_items),
        ),
        ("authority", RuleType::Authority, of("authority")),
        (
            "authority_one_resource",
            RuleType::Authority,
            of("authority_one"),
        ),
        (
            "authority_origins",
            RuleType::Authority,
            Box::new(one_long_authority_rule),
        ),
        ("system", RuleType::System, of("system")),
    ]
}

fn outcome(fg: &Floodgate, rule_type: RuleType, json: &str) -> String {
    match fg.load_rules_json(rule_type, json) {
        Ok(_) => format!("loaded, {} rules in force", fg.rule_count(rule_type)),
        Err(e) => {
            let text = e.to_string();
            format!("refused: {}", text.chars().take(160).collect::<String>())
        }
    }
}

fn reloads(c: &mut Criterion) {
    let mut g = c.benchmark_group("rule_reload");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (name, rule_type, make) in cases() {
        let (a, b) = (make(Variant::Base), make(Variant::Changed));
        let mut described = false;
        g.bench_function(format!("{name}/first_load"), |bench| {
            if !std::mem::replace(&mut described, true) {
                let probe = Floodgate::default();
                eprintln!(
                    "{name}: {} bytes; first load {}; reload {}",
                    a.len(),
                    outcome(&probe, rule_type, &a),
                    outcome(&probe, rule_type, &b)
                );
            }
            bench.iter_batched(
                Floodgate::default,
                |fg| {
                    black_box(fg.load_rules_json(rule_type, &a).is_ok());
                    fg
                },
                BatchSize::PerIteration,
            )
        });
        // Every rule renumbered: none is equal to one in force, each is similar to one.
        let renumbered = (
            make(Variant::Numbered(1)),
            make(Variant::Numbered(1_000_000)),
        );
        for (reload, (a, b)) in [
            ("reload_changed", (a, b)),
            ("reload_renumbered", renumbered),
        ] {
            let mut fg = None;
            let mut flip = false;
            g.bench_function(format!("{name}/{reload}"), |bench| {
                let fg = fg.get_or_insert_with(|| {
                    let fg = Floodgate::default();
                    let _ = fg.load_rules_json(rule_type, &a);
                    fg
                });
                bench.iter(|| {
                    flip = !flip;
                    let next = if flip { &b } else { &a };
                    black_box(fg.load_rules_json(rule_type, next).is_ok())
                })
            });
        }
    }
    g.finish();
}

fn regexes(c: &mut Criterion) {
    let mut g = c.benchmark_group("regex_rules");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    // The most regex rules a list may hold, each at a limit: near the compiled-size limit (four
    // Unicode word classes in a row compile to about 200 KiB), or as long as a pattern may be with
    // each character costing the most to parse (`[\w\W]{0}` compiles to nothing, but each class is
    // built first).
    let cases = [
        (
            "at_compiled_size_limit",
            regex_rules(100, |i| format!(r"(?:\w){{4}}r{i}")),
        ),
        (
            "at_length_limit",
            regex_rules(100, |i| {
                let mut p = format!("r{i}");
                while p.len() + 9 <= 512 {
                    p.push_str(r"[\w\W]{0}");
                }
                p
            }),
        ),
        (
            "past_the_cap_1_mib",
            list(|i| format!(r#"{{"resource":"(?:\\w){{4}}r{i}","regex":true,"count":1}}"#)),
        ),
    ];
    for (name, json) in cases {
        let mut described = false;
        g.bench_function(name, |bench| {
            if !std::mem::replace(&mut described, true) {
                let outcome = outcome(&Floodgate::default(), RuleType::Flow, &json);
                eprintln!("{name}: {} bytes; {outcome}", json.len());
            }
            bench.iter_batched(
                Floodgate::default,
                |fg| {
                    black_box(fg.load_rules_json(RuleType::Flow, &json).is_ok());
                    fg
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, reloads, regexes);
criterion_main!(benches);
