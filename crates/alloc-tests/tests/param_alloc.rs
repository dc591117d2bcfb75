//! Hot-parameter checks allocate nothing for integer and short string keys once the values are known:
//! passes, blocks (the offending value included), THREAD releases, and evictions that replace settled
//! values in place, and values of cluster rules that the token service answers (a behaviour test
//! with a counting allocator). The allocator counts every thread, so the tests of this binary take
//! turns.

use std::time::Duration;

use floodgate_core::{Floodgate, ManualClock, ParamValue, RuleType};

const T0: u64 = 1_700_000_000_000;

fn keys() -> (Vec<i64>, Vec<String>) {
    let ints = (0..1000).collect();
    let strings = (0..1000).map(|i| format!("user-{i:06}")).collect();
    (ints, strings)
}

/// One round of guarded calls over every key: token bucket, pacing and THREAD rules, one and two args.
fn round(fg: &Floodgate, ints: &[i64], strings: &[String]) {
    for (i, s) in ints.iter().zip(strings) {
        drop(fg.entry("R").args([*i]).enter().unwrap());
        drop(fg.entry("R").args([s.as_str()]).enter().unwrap());
        drop(
            fg.entry("R")
                .args([ParamValue::from(s.as_str()), ParamValue::from(*i)])
                .enter()
                .unwrap(),
        );
        drop(fg.entry("P").args([*i]).enter().unwrap());
        let held = fg.entry("T").args([s.as_str()]).enter().unwrap();
        drop(fg.entry("T").args([*i]).enter().unwrap());
        drop(held);
    }
}

fn guarded_calls_with_known_values_allocate_nothing() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder().clock(clock.clone()).build();
    fg.load_rules_json(
        RuleType::ParamFlow,
        r#"[{"resource":"R","paramIdx":0,"count":1e9},
            {"resource":"R","paramIdx":-1,"count":1e9,"burstCount":5},
            {"resource":"P","paramIdx":0,"count":1e9,"controlBehavior":2,"maxQueueingTimeMs":10},
            {"resource":"T","grade":0,"paramIdx":0,"count":1e6}]"#,
    )
    .unwrap();
    let (ints, strings) = keys();
    // Warm up: the values enter the caches, the resources and thread-locals are created, and the
    // statistics have seen a few seconds.
    for step in 0..4 {
        clock.set(T0 + step * 1001);
        round(&fg, &ints, &strings);
    }
    let stats = allocation_counter::measure(|| {
        for step in 0..5 {
            clock.set(T0 + 4004 + step * 250);
            round(&fg, &ints, &strings);
        }
    });
    assert_eq!(
        stats.count_total, 0,
        "allocations during 35,000 guarded calls: {stats:?}"
    );
}

fn blocks_naming_the_value_allocate_nothing() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder().clock(clock.clone()).build();
    fg.load_rules_json(
        RuleType::ParamFlow,
        r#"[{"resource":"B","paramIdx":0,"count":1}]"#,
    )
    .unwrap();
    let (ints, strings) = keys();
    // Warm up: every value spends its token and is blocked once (the block log has seen the key).
    clock.set(T0 + 2000);
    for (i, s) in ints.iter().zip(&strings) {
        for _ in 0..2 {
            drop(fg.entry("B").args([*i]).enter());
            drop(fg.entry("B").args([s.as_str()]).enter());
        }
    }
    let mut named = 0;
    let stats = allocation_counter::measure(|| {
        for _ in 0..5 {
            for (i, s) in ints.iter().zip(&strings) {
                let block = fg.entry("B").args([*i]).enter().unwrap_err();
                named += usize::from(block.param() == Some(ParamValue::Int(*i)));
                let block = fg.entry("B").args([s.as_str()]).enter().unwrap_err();
                named += usize::from(block.param().is_some());
            }
        }
    });
    assert_eq!(named, 10_000);
    assert_eq!(
        stats.count_total, 0,
        "allocations during 10,000 blocks: {stats:?}"
    );
}

fn a_flood_of_new_values_replaces_settled_ones_in_place() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .param_cache_capacity(64)
        .build();
    fg.load_rules_json(
        RuleType::ParamFlow,
        r#"[{"resource":"F","paramIdx":0,"count":1e9}]"#,
    )
    .unwrap();
    let names: Vec<String> = (0..10_000).map(|i| format!("k{i}")).collect();
    let mut next = 0usize;
    let mut flood = |fg: &Floodgate, n: usize| {
        for _ in 0..n {
            let i = next % names.len();
            next += 1;
            drop(fg.entry("F").args([i as i64]).enter().unwrap());
            drop(fg.entry("F").args([names[i].as_str()]).enter().unwrap());
        }
    };
    // Warm up: fill the cache, then let a round of values settle and be replaced.
    for _ in 0..4 {
        flood(&fg, 100);
        clock.advance(Duration::from_millis(1001));
    }
    let before = fg.param_flow_status()[0].clone();
    let stats = allocation_counter::measure(|| {
        for _ in 0..20 {
            flood(&fg, 100);
            clock.advance(Duration::from_millis(1001));
        }
    });
    let after = &fg.param_flow_status()[0];
    assert_eq!(after.values, 64);
    assert_eq!(
        after.evictions - before.evictions,
        20 * 64,
        "each window replaces all 64"
    );
    assert_eq!(after.overflows - before.overflows, 20 * (200 - 64));
    assert_eq!(
        stats.count_total, 0,
        "allocations while 2,560 values were evicted: {stats:?}"
    );
}

/// Owned arguments (strings, lists), inline or boxed, borrowed or owned entries, are freed when the
/// entry ends: the entry drops its inline arguments by hand, and must not leak the ones that own memory.
fn owned_arguments_are_freed() {
    let fg = Floodgate::builder().clock(ManualClock::new(T0)).build();
    fg.load_rules_json(
        RuleType::ParamFlow,
        r#"[{"resource":"R","paramIdx":0,"count":1e9},{"resource":"R","paramIdx":1,"grade":0,"count":1e9}]"#,
    )
    .unwrap();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"B","count":0}]"#)
        .unwrap();
    let off = Floodgate::builder().clock(ManualClock::new(T0)).build();
    off.set_enabled(false);
    let owned = || String::from("an owned argument, longer than inline");
    let list = || ParamValue::List(vec![ParamValue::from(owned()), ParamValue::from(7)]);
    let calls = || {
        drop(fg.entry("R").args([owned()]).enter().unwrap());
        drop(
            fg.entry("R")
                .args([ParamValue::from(1), list()])
                .enter()
                .unwrap(),
        );
        drop(
            fg.entry("R")
                .args([list(), list(), list()])
                .enter()
                .unwrap(),
        );
        drop(fg.entry("R").args([owned()]).enter_owned().unwrap());
        drop(
            fg.entry("R")
                .args([ParamValue::from(1), list()])
                .enter_owned()
                .unwrap(),
        );
        // Entries that never get a guard drop their arguments with the builder: blocked, switched off.
        drop(fg.entry("B").args([owned()]).enter().unwrap_err());
        drop(
            fg.entry("B")
                .args([ParamValue::from(1), list()])
                .enter_owned()
                .unwrap_err(),
        );
        drop(off.entry("R").args([owned()]).enter().unwrap());
        // Arguments replaced on the builder are dropped when replaced (inline, boxed or borrowed).
        let borrowed = [ParamValue::from(owned())];
        drop(
            fg.entry("R")
                .args([owned()])
                .args([list(), list(), list()])
                .args_slice(&borrowed)
                .args([owned()])
                .enter()
                .unwrap(),
        );
    };
    // The rules' caches keep the values they have seen: let them fill first.
    calls();
    let stats = allocation_counter::measure(|| {
        for _ in 0..100 {
            calls();
        }
    });
    assert!(stats.count_total > 0, "the arguments were allocated");
    assert_eq!(stats.count_current, 0, "every argument freed: {stats:?}");
}

/// A token service that grants everything, allocating nothing.
#[derive(Debug)]
struct Granting;

impl floodgate_core::cluster::TokenService for Granting {
    fn request_token(
        &self,
        _request: &floodgate_core::cluster::TokenRequest<'_>,
    ) -> floodgate_core::cluster::TokenResult {
        floodgate_core::cluster::TokenResult::of(floodgate_core::cluster::TokenStatus::Ok)
    }
}

fn cluster_values_the_service_answers_allocate_nothing() {
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .token_service(Granting)
        .build();
    // Locally the rule admits nothing: every value is the service's to pass.
    fg.load_rules_json(
        RuleType::ParamFlow,
        r#"[{"resource":"C","paramIdx":0,"count":0,"clusterMode":true,
             "clusterConfig":{"flowId":5,"thresholdType":1}}]"#,
    )
    .unwrap();
    let (ints, strings) = keys();
    let calls = || {
        for (i, s) in ints.iter().zip(&strings) {
            drop(fg.entry("C").args([*i]).enter().unwrap());
            drop(fg.entry("C").args([s.as_str()]).enter().unwrap());
        }
    };
    calls();
    let stats = allocation_counter::measure(calls);
    assert_eq!(
        stats.count_total, 0,
        "asking the token service per value allocates nothing: {stats:?}"
    );
    assert_eq!(fg.stats().cluster_token_answers, 4000);
}

/// One test measuring one case after the other (allocations are counted on the measuring thread).
#[test]
fn allocations() {
    guarded_calls_with_known_values_allocate_nothing();
    blocks_naming_the_value_allocate_nothing();
    a_flood_of_new_values_replaces_settled_ones_in_place();
    owned_arguments_are_freed();
    cluster_values_the_service_answers_allocate_nothing();
}
