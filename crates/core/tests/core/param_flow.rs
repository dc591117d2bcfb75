//! Hot-parameter rules end to end on a ManualClock: per-value token buckets with Sentinel's numbers,
//! bursts, long windows, typed exception items, collections, negative indexes, pacing, THREAD grade,
//! bounded caches under a flood of values, reloads and validation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use floodgate_core::{
    BlockError, BlockKind, ControlBehavior, Floodgate, FlowGrade, ManualClock, ParamFlowItem,
    ParamFlowRule, ParamKey, ParamValue, RuleError, RuleType,
};

use crate::support::TickClock;

const T0: u64 = 1_700_000_000_000;

fn engine() -> (ManualClock, Floodgate) {
    let clock = ManualClock::new(T0);
    (clock.clone(), Floodgate::builder().clock(clock).build())
}

/// An engine whose hot-parameter rules remember at most `capacity` values.
fn capped_engine(capacity: usize) -> (ManualClock, Floodgate) {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .param_cache_capacity(capacity)
        .build();
    (clock, fg)
}

fn load(fg: &Floodgate, json: &str) {
    fg.load_rules_json(RuleType::ParamFlow, json)
        .expect("valid rules");
}

/// Enters `R` `n` times at the current instant with `args`, exiting at once; returns how many passed.
fn burst(fg: &Floodgate, args: &[ParamValue<'_>], n: usize) -> usize {
    (0..n)
        .filter(|_| fg.entry("R").args_slice(args).enter().is_ok())
        .count()
}

fn one(v: impl Into<ParamValue<'static>>) -> [ParamValue<'static>; 1] {
    [v.into()]
}

fn advance(clock: &ManualClock, ms: u64) {
    clock.advance(Duration::from_millis(ms));
}

#[test]
fn sentinel_scenario_10_single_value_qps() {
    let (clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":5}]"#);
    let a = one("valueA");
    assert_eq!(burst(&fg, &a, 5), 5);
    let block = fg.entry("R").args(["valueA"]).enter().unwrap_err();
    assert_eq!(block.kind(), BlockKind::ParamFlow);
    assert_eq!(block.param(), Some(ParamValue::from("valueA")));
    assert_eq!(block.rule_as::<ParamFlowRule>().map(|r| r.count), Some(5.0));
    assert_eq!(
        block.to_string(),
        "blocked by param flow protection on `R` (value `valueA`)"
    );
    advance(&clock, 3000);
    assert_eq!(burst(&fg, &a, 6), 5);
}

#[test]
fn sentinel_scenario_10_burst_sequence() {
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":5,"burstCount":3}]"#,
    );
    let a = one("valueA");
    assert_eq!(burst(&fg, &a, 9), 8, "count + burst, then block");
    for (gap, passed) in [(1002, 5), (1002, 5), (2000, 8), (1002, 5)] {
        advance(&clock, gap);
        assert_eq!(burst(&fg, &a, 10), passed, "after +{gap} ms");
    }
}

#[test]
fn sentinel_scenario_10_high_threshold_long_gaps() {
    let (clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":25000}]"#);
    let a = one("valueA");
    assert_eq!(burst(&fg, &a, 2), 2);
    advance(&clock, 24 * 3600 * 1000);
    assert_eq!(burst(&fg, &a, 2), 2);
    advance(&clock, 48 * 3600 * 1000);
    assert_eq!(burst(&fg, &a, 2), 2);
}

#[test]
fn values_are_limited_independently() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","paramIdx":1,"count":2}]"#);
    let args = |user: i64| [ParamValue::from("GET"), ParamValue::from(user)];
    assert_eq!(burst(&fg, &args(1), 5), 2);
    assert_eq!(
        burst(&fg, &args(2), 5),
        2,
        "another value has its own bucket"
    );
    assert_eq!(burst(&fg, &args(3), 1), 1);
    assert_eq!(
        burst(&fg, &[ParamValue::from("POST"), 1.into()], 1),
        0,
        "only argument 1 counts"
    );
    let node = fg.cluster_node("R").unwrap();
    assert_eq!((node.pass_qps(), node.block_qps()), (5.0, 7.0));
    assert!(
        fg.entry("other").args([1, 1]).enter().is_ok(),
        "another resource"
    );
}

#[test]
fn a_window_refills_only_after_the_whole_duration_plus_one_ms() {
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":5,"durationInSec":60}]"#,
    );
    let v = one("helloWorld");
    assert_eq!(burst(&fg, &v, 6), 5);
    for gap in [1_000, 10_000, 30_000, 18_999] {
        advance(&clock, gap);
        assert_eq!(burst(&fg, &v, 1), 0, "still inside the 60 s window");
    }
    advance(&clock, 1);
    assert_eq!(
        burst(&fg, &v, 1),
        0,
        "exactly 60 000 ms later: not yet (strict)"
    );
    advance(&clock, 1);
    assert_eq!(burst(&fg, &v, 6), 5, "60 001 ms later: refilled");
    // Sentinel's own sequence: +1 s, +10 s, +30 s blocked, +30 s (71 s after the refill) passes 5.
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":5,"durationInSec":60}]"#,
    );
    assert_eq!(burst(&fg, &v, 6), 5);
    for gap in [1, 10, 30] {
        advance(&clock, gap * 1000);
        assert_eq!(burst(&fg, &v, 1), 0);
    }
    advance(&clock, 30_000);
    assert_eq!(burst(&fg, &v, 6), 5);
}

#[test]
fn the_refill_is_proportional_to_the_time_passed() {
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":10,"burstCount":10,"durationInSec":2}]"#,
    );
    let v = one(7);
    assert_eq!(burst(&fg, &v, 30), 20, "count + burst");
    advance(&clock, 3000);
    assert_eq!(burst(&fg, &v, 30), 15, "⌊3000 · 10 / 2000⌋ = 15 tokens");
    advance(&clock, 2000);
    assert_eq!(
        burst(&fg, &v, 30),
        0,
        "2000 ms is still the window of the last refill"
    );
    advance(&clock, 4001);
    assert_eq!(
        burst(&fg, &v, 30),
        20,
        "⌊6001 · 10 / 2000⌋ = 30, capped at 20"
    );
}

#[test]
fn zero_and_fractional_thresholds() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":0},{"resource":"F","paramIdx":0,"count":2.9}]"#,
    );
    assert_eq!(burst(&fg, &one("x"), 3), 0, "count 0 blocks every value");
    assert!(fg.entry("R").count(0).args(["x"]).enter().is_err());
    let passed = (0..5)
        .filter(|_| fg.entry("F").args(["x"]).enter().is_ok())
        .count();
    assert_eq!(passed, 2, "the threshold is truncated, as in Sentinel");
}

#[test]
fn batch_counts_take_that_many_tokens() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":5,"burstCount":1}]"#,
    );
    assert!(
        fg.entry("R").count(7).args(["v"]).enter().is_err(),
        "7 > count + burst"
    );
    assert!(fg.entry("R").count(4).args(["v"]).enter().is_ok());
    assert!(
        fg.entry("R").count(3).args(["v"]).enter().is_err(),
        "2 left"
    );
    assert!(fg.entry("R").count(2).args(["v"]).enter().is_ok());
}

#[test]
fn items_have_their_own_thresholds_and_are_typed() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":3,"paramFlowItemList":[
            {"object":"42","count":10,"classType":"int"},
            {"object":"42","count":1,"classType":"java.lang.String"},
            {"object":"true","count":0,"classType":"boolean"},
            {"object":"1.5","count":6,"classType":"double"},
            {"object":"vip","count":7}
        ]}]"#,
    );
    assert_eq!(burst(&fg, &one(42), 20), 10, "the int 42");
    assert_eq!(
        burst(&fg, &one(42i64), 1),
        0,
        "long and int are one integer type here"
    );
    assert_eq!(burst(&fg, &one("42"), 20), 1, "the string \"42\"");
    assert_eq!(burst(&fg, &one(42.0), 20), 3, "the double 42.0 is no item");
    assert_eq!(
        burst(&fg, &one(true), 5),
        0,
        "an item with count 0 always blocks"
    );
    assert_eq!(burst(&fg, &one(false), 5), 3);
    assert_eq!(burst(&fg, &one(1.5), 20), 6);
    assert_eq!(
        burst(&fg, &one("vip"), 20),
        7,
        "a blank classType is a string"
    );
}

/// An item's `object` may be a JSON number or boolean (Sentinel's field is a string, which its JSON
/// readers fill from either), and a `float` item is rounded to `f32` once, from its text (rounded
/// through `f64` first, it could miss the argument it names).
#[test]
fn items_take_numbers_for_objects_and_round_floats_once() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":3,"paramFlowItemList":[
            {"object":42,"count":10,"classType":"int"},
            {"object":true,"count":0,"classType":"boolean"},
            {"object":"1.00000017881393432617187499","count":0,"classType":"float"}
        ]}]"#,
    );
    assert_eq!(burst(&fg, &one(42), 20), 10);
    assert_eq!(burst(&fg, &one(true), 5), 0);
    let float: f32 = "1.00000017881393432617187499".parse().unwrap();
    assert_eq!(float.to_bits(), 0x3f80_0001, "rounded once");
    assert_eq!(burst(&fg, &one(float), 5), 0, "the item names this float");
    let rules: serde_json::Value =
        serde_json::from_str(&fg.rules_json(RuleType::ParamFlow)).unwrap();
    assert_eq!(rules[0]["paramFlowItemList"][0]["object"], "42");
    let err = fg
        .load_rules_json(
            RuleType::ParamFlow,
            r#"[{"resource":"R","paramIdx":0,"count":3,"paramFlowItemList":[{"object":[1],"count":1}]}]"#,
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("paramFlowItemList[0].object"),
        "{err}"
    );
}

/// A value judged on the shared overflow cell (the cache full of values in use) that later finds room
/// starts from the overflow cell's state while that is not settled, so that eviction is never a reset:
/// a fresh bucket would let it pass its count twice in one window.
#[test]
fn a_value_that_drew_from_the_overflow_cell_gets_no_fresh_bucket_later() {
    let (clock, fg) = capped_engine(1);
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":5}]"#);
    assert_eq!(burst(&fg, &one("a"), 1), 1, "a takes the only place");
    advance(&clock, 500);
    assert_eq!(
        burst(&fg, &one("x"), 10),
        5,
        "x: no room, the overflow cell"
    );
    advance(&clock, 501);
    assert_eq!(
        burst(&fg, &one("x"), 10),
        0,
        "a settled and x takes its place, but x's window (from +500 ms) is still open"
    );
    advance(&clock, 500);
    assert_eq!(burst(&fg, &one("x"), 10), 5, "a new window");
}

/// A list whose new value has no room (the overflow cell spent) is refused by the check, before
/// anything is charged, so nothing needs a refund: refunding the values before it would move their
/// windows.
#[test]
fn a_list_refused_for_lack_of_room_changes_nothing() {
    let (clock, fg) = capped_engine(1);
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":5}]"#);
    assert_eq!(burst(&fg, &one("a"), 10), 5, "t=0: a spent, the only place");
    advance(&clock, 600);
    assert_eq!(
        burst(&fg, &one("y"), 10),
        5,
        "t=600: the overflow cell spent"
    );
    advance(&clock, 401);
    let both = [ParamValue::list(["a", "x"])];
    assert!(
        fg.entry("R").args_slice(&both).enter().is_err(),
        "x: no room"
    );
    advance(&clock, 999);
    assert_eq!(burst(&fg, &one("a"), 10), 5, "t=2000: a's new window");
    advance(&clock, 2);
    assert_eq!(
        burst(&fg, &one("a"), 10),
        0,
        "a's window opened at t=2000, not at the refused call (t=1001)"
    );
}

/// `controlBehavior` 1 and 3 are the token bucket for QPS rules, and THREAD rules ignore theirs, as in
/// Sentinel's parameter checker: such rules load (refusing them would refuse the whole push). The
/// behaviour is kept as pushed.
#[test]
fn behaviours_sentinel_treats_as_the_default_load_and_count() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":2,"controlBehavior":1},
            {"resource":"R","paramIdx":1,"grade":0,"count":1,"controlBehavior":2}]"#,
    );
    assert_eq!(burst(&fg, &one("a"), 5), 2, "a token bucket of 2");
    let held = fg.entry("R").args(["b", "x"]).enter().unwrap();
    assert!(
        fg.entry("R").args(["c", "x"]).enter().is_err(),
        "x: one in flight"
    );
    drop(held);
    let rules: serde_json::Value =
        serde_json::from_str(&fg.rules_json(RuleType::ParamFlow)).unwrap();
    assert_eq!(
        (&rules[0]["controlBehavior"], &rules[1]["controlBehavior"]),
        (&serde_json::json!(1), &serde_json::json!(2))
    );
}

#[test]
fn every_element_of_a_list_is_a_value() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":2}]"#);
    let both = [ParamValue::list(["a", "b"])];
    assert_eq!(burst(&fg, &both, 3), 2);
    assert_eq!(burst(&fg, &one("a"), 1), 0);
    assert_eq!(burst(&fg, &one("b"), 1), 0);
    // A borrowed slice works the same, and Null elements are skipped.
    let elements = [
        ParamValue::from("c"),
        ParamValue::Null,
        ParamValue::from("d"),
    ];
    let slice = [ParamValue::from(&elements[..])];
    assert_eq!(burst(&fg, &slice, 3), 2);
    assert_eq!(burst(&fg, &one("d"), 1), 0);
    // An empty list and a list of Nulls pass.
    assert_eq!(burst(&fg, &[ParamValue::list(Vec::<i32>::new())], 3), 3);
    assert_eq!(burst(&fg, &[ParamValue::list([None::<i32>, None])], 3), 3);
    let nested = [ParamValue::list([ParamValue::list(["e"])])];
    assert_eq!(burst(&fg, &nested, 3), 3, "a nested list is no value");
}

#[test]
fn a_blocked_list_consumes_nothing() {
    // Sentinel charged the elements before the failing one; here a blocked list charges nothing.
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":2}]"#);
    assert_eq!(burst(&fg, &one("hot"), 2), 2);
    let list = [ParamValue::list(["fresh", "hot"])];
    let block = fg.entry("R").args_slice(&list).enter().unwrap_err();
    assert_eq!(
        block.param(),
        Some(ParamValue::from("hot")),
        "the offending element"
    );
    assert_eq!(burst(&fg, &list, 5), 0);
    assert_eq!(
        burst(&fg, &one("fresh"), 5),
        2,
        "no token of `fresh` was spent"
    );
    // Duplicates count once each: three times `x` needs three tokens.
    let dup = [ParamValue::list(["x", "x", "x"])];
    assert_eq!(burst(&fg, &dup, 1), 0);
    assert_eq!(
        burst(&fg, &one("x"), 5),
        2,
        "the refused triple consumed nothing"
    );
}

/// A value repeated in a list is checked for all its charges before any is made, so a refused list
/// leaves no trace: no window opened by a charge then refunded, no pacing slot taken.
#[test]
fn a_refused_list_with_a_repeated_value_leaves_no_trace() {
    let (clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":1}]"#);
    let twice = [ParamValue::list(["a", "a"])];
    assert!(fg.entry("R").args_slice(&twice).enter().is_err());
    advance(&clock, 900);
    assert_eq!(burst(&fg, &one("a"), 1), 1);
    advance(&clock, 101);
    assert_eq!(
        burst(&fg, &one("a"), 1),
        0,
        "still the window the admission at +900 opened"
    );

    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":10,"controlBehavior":2,"maxQueueingTimeMs":0}]"#,
    );
    assert!(fg.entry("R").args_slice(&twice).enter().is_err());
    let batch = |value: &'static str| fg.entry("R").args([value]).count(10).enter().is_ok();
    assert_eq!(batch("a"), batch("fresh"), "`a` is as good as new");
}

#[test]
fn all_rules_of_a_resource_admit_together() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":5},{"resource":"R","paramIdx":1,"count":1}]"#,
    );
    let call = |user: &'static str, item: &'static str| [ParamValue::from(user), item.into()];
    assert_eq!(burst(&fg, &call("u", "i"), 1), 1);
    assert_eq!(burst(&fg, &call("u", "i"), 3), 0, "item i is exhausted");
    assert_eq!(
        burst(&fg, &call("u", "j"), 1),
        1,
        "u has 3 tokens left, not fewer"
    );
    assert_eq!(burst(&fg, &call("u", "k"), 1), 1);
    assert_eq!(burst(&fg, &call("u", "l"), 1), 1);
    assert_eq!(burst(&fg, &call("u", "m"), 1), 1);
    assert_eq!(burst(&fg, &call("u", "n"), 1), 0, "u: 5 passes");
}

#[test]
fn a_negative_index_is_resolved_per_call() {
    // Sentinel rewrote `-1` to the index of the first call's last argument, for ever; here it is
    // resolved again against each call's own arguments.
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","paramIdx":-1,"count":1}]"#);
    let pass = |args: &[ParamValue<'_>]| fg.entry("R").args_slice(args).enter().is_ok();
    assert!(pass(&[ParamValue::from("x"), "y".into()]), "checks y");
    assert!(
        !pass(&[ParamValue::from("y")]),
        "one argument: still the last, y"
    );
    assert!(
        !pass(&[ParamValue::from("a"), "b".into(), "y".into()]),
        "three: y again"
    );
    assert!(
        pass(&[ParamValue::from("y"), "z".into()]),
        "the last is z now"
    );
    assert!(pass(&[]), "no arguments: passes");
    assert_eq!(
        fg.param_flow_rules()[0].param_idx,
        -1,
        "the rule is unchanged"
    );
    assert!(
        fg.rules_json(RuleType::ParamFlow)
            .contains(r#""paramIdx":-1"#)
    );
    load(&fg, r#"[{"resource":"R","paramIdx":-3,"count":0}]"#);
    assert!(
        pass(&[ParamValue::from(1), 2.into()]),
        "-3 is out of range for 2 arguments"
    );
    assert!(!pass(&[ParamValue::from(1), 2.into(), 3.into()]));
}

#[test]
fn missing_and_null_arguments_pass() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","paramIdx":2,"count":0}]"#);
    assert!(fg.entry("R").enter().is_ok(), "no arguments");
    assert!(
        fg.entry("R").args([1, 2]).enter().is_ok(),
        "index out of range"
    );
    let with_null = [ParamValue::from(1), 2.into(), ParamValue::Null];
    assert!(fg.entry("R").args_slice(&with_null).enter().is_ok(), "null");
    assert!(fg.entry("R").args([Some(1), Some(2), None]).enter().is_ok());
    assert!(fg.entry("R").args([1, 2, 3]).enter().is_err());
}

#[test]
fn user_types_are_limited_by_their_key() {
    struct Order {
        customer: &'static str,
        #[allow(dead_code)]
        lines: u32,
    }
    impl ParamKey for Order {
        fn param_key(&self) -> ParamValue<'_> {
            ParamValue::from(self.customer)
        }
    }
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":1}]"#);
    let a = Order {
        customer: "acme",
        lines: 1,
    };
    let b = Order {
        customer: "acme",
        lines: 9,
    };
    assert!(fg.entry("R").args([&a]).enter().is_ok());
    let block = fg.entry("R").args([&b]).enter().unwrap_err();
    assert_eq!(block.param(), Some(ParamValue::from("acme")), "same key");
    assert!(
        fg.entry("R").args(["acme"]).enter().is_err(),
        "the key is the value"
    );
}

#[test]
fn rate_limiter_queues_with_sentinels_numbers() {
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":10,"controlBehavior":2,"maxQueueingTimeMs":500}]"#,
    );
    let waits: Vec<Option<u64>> = (0..7)
        .map(|_| {
            fg.entry("R")
                .args(["v"])
                .enter()
                .ok()
                .map(|e| e.waited().as_millis() as u64)
        })
        .collect();
    assert_eq!(
        waits,
        [
            Some(0),
            Some(100),
            Some(200),
            Some(300),
            Some(400),
            None,
            None
        ],
        "cost 100 ms; a wait must be strictly below 500 ms"
    );
    assert_eq!(
        fg.entry("R").args(["w"]).enter().unwrap().waited(),
        Duration::ZERO
    );
    advance(&clock, 400);
    assert_eq!(
        fg.entry("R").args(["v"]).enter().unwrap().waited(),
        Duration::from_millis(100)
    );
}

#[test]
fn rate_limiter_paces_above_a_thousand_a_second() {
    // Sentinel rounded the cost to whole ms: 5000 a second cost 0 ms and paced nothing, 1500 and 2000
    // cost 1 ms and admitted 1000 in a second's queue; here the pacing interval is kept exact.
    for count in [7usize, 1500, 2000, 5000] {
        let (_clock, fg) = engine();
        load(
            &fg,
            &format!(r#"[{{"resource":"R","paramIdx":0,"count":{count},"controlBehavior":2}}]"#),
        );
        assert_eq!(burst(&fg, &one("v"), 10_000), 1, "count {count}, no queue");
        let (_clock, fg) = engine();
        load(
            &fg,
            &format!(
                r#"[{{"resource":"R","paramIdx":0,"count":{count},"controlBehavior":2,"maxQueueingTimeMs":1000}}]"#
            ),
        );
        let waits: Vec<Duration> = (0..3 * count)
            .map_while(|_| fg.entry("R").args(["v"]).enter().ok().map(|e| e.waited()))
            .collect();
        assert_eq!(waits.len(), count, "count {count}, a second's queue");
        let cost = Duration::from_nanos((1_000_000_000 + count as u64 / 2) / count as u64);
        assert_eq!(waits[1], cost, "count {count}");
    }
}

#[test]
fn rate_limiter_without_a_queue_paces_above_a_thousand_a_second_on_a_millisecond_clock() {
    // Every call within a tick reads the same time: strict pacing admitted one a tick (1000 a second).
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder().clock(TickClock(clock.clone())).build();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":5000,"controlBehavior":2}]"#,
    );
    let mut passed = 0;
    for _ in 0..1000 {
        passed += burst(&fg, &one("v"), 10);
        advance(&clock, 1);
    }
    assert_eq!(passed, 5000);
}

#[test]
fn rate_limiter_without_a_queue_paces_strictly() {
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":5,"controlBehavior":2,"durationInSec":2}]"#,
    );
    // 5 per 2 s: one every 400 ms.
    assert_eq!(burst(&fg, &one(1), 3), 1);
    advance(&clock, 399);
    assert_eq!(burst(&fg, &one(1), 1), 0);
    advance(&clock, 1);
    assert_eq!(burst(&fg, &one(1), 3), 1);
    assert!(
        fg.entry("R").count(6).args([2]).enter().is_err(),
        "more than count + burst"
    );
}

#[test]
fn thread_grade_counts_calls_in_flight_per_value() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","grade":0,"paramIdx":0,"count":2}]"#,
    );
    let first = fg.entry("R").args(["v"]).enter().unwrap();
    let second = fg.entry("R").args(["v"]).enter().unwrap();
    let block = fg.entry("R").args(["v"]).enter().unwrap_err();
    assert_eq!(block.kind(), BlockKind::ParamFlow);
    assert!(fg.entry("R").args(["w"]).enter().is_ok(), "another value");
    drop(first);
    let third = fg.entry("R").args(["v"]).enter().expect("released at exit");
    assert!(fg.entry("R").args(["v"]).enter().is_err());
    drop((second, third));
    let held: Vec<_> = (0..2)
        .map(|_| fg.entry("R").args(["v"]).enter().unwrap())
        .collect();
    assert!(fg.entry("R").args(["v"]).enter().is_err());
    drop(held);
    assert_eq!(fg.param_flow_status()[0].values, 2);
}

#[test]
fn thread_grade_releases_when_a_later_slot_blocks() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","grade":0,"paramIdx":0,"count":1}]"#,
    );
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":0}]"#)
        .unwrap();
    for _ in 0..3 {
        let block = fg.entry("R").args(["v"]).enter().unwrap_err();
        assert_eq!(
            block.kind(),
            BlockKind::Flow,
            "the flow rule, not a leaked count"
        );
    }
    fg.load_rules_json(RuleType::Flow, "[]").unwrap();
    let held = fg.entry("R").args(["v"]).enter().unwrap();
    assert_eq!(
        fg.entry("R").args(["v"]).enter().unwrap_err().kind(),
        BlockKind::ParamFlow
    );
    drop(held);
}

#[test]
fn thread_grade_with_lists_and_reloads() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","grade":0,"paramIdx":0,"count":1}]"#,
    );
    let ab = [ParamValue::list(["a", "b"])];
    let held = fg.entry("R").args_slice(&ab).enter().unwrap();
    assert!(fg.entry("R").args(["a"]).enter().is_err());
    assert!(fg.entry("R").args(["b"]).enter().is_err());
    // An unrelated reload keeps the rule's counts.
    fg.load_param_flow_rules([
        ParamFlowRule::new("R", 0, 1.0).grade(FlowGrade::Thread),
        ParamFlowRule::new("S", 0, 1.0),
    ])
    .unwrap();
    assert!(fg.entry("R").args(["a"]).enter().is_err());
    drop(held);
    assert!(fg.entry("R").args(["a"]).enter().is_ok());
    assert!(fg.entry("R").args(["b"]).enter().is_ok());
}

/// Hot parameters keep their state over a reload too: a QPS rule reloaded with only its `id` changed
/// (a dashboard numbering its rules afresh) keeps its values' buckets and pacing; any other change
/// starts afresh.
#[test]
fn a_rule_reloaded_with_only_its_id_changed_keeps_its_values_state() {
    let (clock, fg) = engine();
    let rule = ParamFlowRule::new("R", 0, 2.0).id(1);
    fg.load_param_flow_rules([rule.clone()]).unwrap();
    assert_eq!(burst(&fg, &one("u"), 5), 2);
    assert_eq!(burst(&fg, &one("v"), 1), 1);
    fg.load_param_flow_rules([rule.clone().id(2)]).unwrap();
    assert_eq!(burst(&fg, &one("u"), 5), 0, "u's bucket is still empty");
    assert_eq!(burst(&fg, &one("v"), 5), 1, "v has one token left");
    assert_eq!(fg.param_flow_status()[0].values, 2);
    // A changed count is another rule: its values start afresh.
    fg.load_param_flow_rules([ParamFlowRule::new("R", 0, 3.0).id(2)])
        .unwrap();
    assert_eq!(burst(&fg, &one("u"), 5), 3);
    // Pacing state too: 1 a second, no queue.
    let pacing = ParamFlowRule::new("R", 0, 1.0)
        .control_behavior(ControlBehavior::RateLimiter)
        .max_queueing_time_ms(0);
    fg.load_param_flow_rules([pacing.clone().id(1)]).unwrap();
    assert_eq!(burst(&fg, &one("u"), 3), 1);
    fg.load_param_flow_rules([pacing.clone().id(2)]).unwrap();
    assert_eq!(
        burst(&fg, &one("u"), 3),
        0,
        "the next slot is still a second away"
    );
    advance(&clock, 1000);
    assert_eq!(burst(&fg, &one("u"), 3), 1);
}

#[test]
fn entries_admitted_before_a_thread_rule_do_not_release_its_counts() {
    let (clock, fg) = engine();
    let old = fg.entry("R").args(["v"]).enter().unwrap();
    advance(&clock, 5);
    load(
        &fg,
        r#"[{"resource":"R","grade":0,"paramIdx":0,"count":1}]"#,
    );
    let new = fg.entry("R").args(["v"]).enter().unwrap();
    drop(old);
    assert!(
        fg.entry("R").args(["v"]).enter().is_err(),
        "`new` is still in flight"
    );
    drop(new);
    assert!(fg.entry("R").args(["v"]).enter().is_ok());
}

/// A reload in the same millisecond as an admission: the earlier entry's exit must not release a count
/// it never took in the new rule's state (it did, when exits were matched to rules by time). A rule
/// with other exception items is another rule: its counts are its own.
#[test]
fn a_reload_in_the_same_millisecond_releases_only_what_was_counted() {
    let (_clock, fg) = engine();
    let rule = ParamFlowRule::new("R", 0, 1.0).grade(FlowGrade::Thread);
    fg.load_param_flow_rules([rule.clone()]).unwrap();
    let a = fg.entry("R").args(["v"]).enter().unwrap();
    fg.load_param_flow_rules([rule.item(ParamFlowItem::string("w", 5))])
        .unwrap();
    let b = fg.entry("R").args(["v"]).enter().unwrap();
    drop(a);
    assert_eq!(
        fg.entry("R").args(["v"]).enter().unwrap_err().kind(),
        BlockKind::ParamFlow,
        "`b` is still in flight"
    );
    drop(b);
    assert!(fg.entry("R").args(["v"]).enter().is_ok());
}

/// A THREAD rule renumbered (a dashboard's push) or given another count takes over the calls in flight:
/// they count against it, and are released to it. A new state starting empty would admit the limit
/// again on top of them; Sentinel keeps the counts per resource, argument and value.
#[test]
fn a_thread_rule_renumbered_or_recounted_keeps_the_calls_in_flight() {
    let (_clock, fg) = engine();
    let rule = ParamFlowRule::new("R", 0, 2.0).grade(FlowGrade::Thread);
    fg.load_param_flow_rules([rule.clone().id(1)]).unwrap();
    let held: Vec<_> = (0..2)
        .map(|_| fg.entry("R").args(["v"]).enter().unwrap())
        .collect();
    fg.load_param_flow_rules([rule.clone().id(2)]).unwrap();
    assert!(
        fg.entry("R").args(["v"]).enter().is_err(),
        "2 in flight, limit 2"
    );
    let mut raised = ParamFlowRule::new("R", 0, 3.0).grade(FlowGrade::Thread);
    raised.id = Some(3);
    fg.load_param_flow_rules([raised]).unwrap();
    let third = fg
        .entry("R")
        .args(["v"])
        .enter()
        .expect("2 in flight, limit 3");
    assert!(fg.entry("R").args(["v"]).enter().is_err(), "3 in flight");
    // Released to the rule in force: the count goes back to 0, not below, not stuck.
    drop(held);
    drop(third);
    let again: Vec<_> = (0..3).map(|_| fg.entry("R").args(["v"]).enter()).collect();
    assert!(again.iter().all(Result::is_ok));
    assert!(fg.entry("R").args(["v"]).enter().is_err());
    drop(again);
    // One rule split in two: only one of them takes the counts over.
    let held = fg.entry("R").args(["v"]).enter().unwrap();
    fg.load_param_flow_rules([rule.clone().id(4), rule.id(5)])
        .unwrap();
    let next = fg
        .entry("R")
        .args(["v"])
        .enter()
        .expect("1 in flight under each");
    assert!(fg.entry("R").args(["v"]).enter().is_err());
    drop((held, next));
    assert!(fg.entry("R").args(["v"]).enter().is_ok());
}

/// A slot ahead of the parameter slot that moves the clock on and reloads the rules, as a concurrent
/// reload would between the entry's clock read and the parameter slot.
#[derive(Debug)]
struct ReloadFirst {
    clock: ManualClock,
    engine: std::sync::OnceLock<Floodgate>,
    reloads: AtomicUsize,
}

impl floodgate_core::slot::Slot for ReloadFirst {
    fn entry(&self, _cx: &mut floodgate_core::slot::SlotContext<'_>) -> Result<(), BlockError> {
        // Once: the first entry is counted by a rule state created after its clock read.
        if self.reloads.fetch_add(1, Ordering::Relaxed) == 0 {
            advance(&self.clock, 1);
            let rule = ParamFlowRule::new("R", 0, 1.0)
                .grade(FlowGrade::Thread)
                .id(2);
            if let Some(fg) = self.engine.get() {
                fg.load_param_flow_rules([rule]).unwrap();
            }
        }
        Ok(())
    }
}

#[test]
fn a_reload_between_the_clock_read_and_the_check_leaks_no_count() {
    let clock = ManualClock::new(T0);
    let reload = std::sync::Arc::new(ReloadFirst {
        clock: clock.clone(),
        engine: std::sync::OnceLock::new(),
        reloads: AtomicUsize::new(0),
    });
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .slot("reload_first", -3500, reload.clone())
        .build();
    reload.engine.set(fg.clone()).unwrap();
    fg.load_param_flow_rules([ParamFlowRule::new("R", 0, 1.0).grade(FlowGrade::Thread)])
        .unwrap();
    for round in 0..3 {
        let entry = fg.entry("R").args(["v"]).enter();
        assert!(entry.is_ok(), "round {round}: no count left behind");
        drop(entry);
    }
    let held = fg.entry("R").args(["v"]).enter().unwrap();
    assert!(fg.entry("R").args(["v"]).enter().is_err(), "one in flight");
    drop(held);
    assert!(fg.entry("R").args(["v"]).enter().is_ok());
}

#[test]
fn a_flood_of_distinct_values_cannot_reset_a_hot_value() {
    // Sentinel's LRU evicted the hot value's bucket, which came back full; here a flood of other
    // values cannot give a hot value its tokens back.
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .param_cache_capacity(8)
        .build();
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":5}]"#);
    assert_eq!(burst(&fg, &one("hot"), 6), 5);
    // 7 more values fill the cache; the next ones find no room and share one overflow bucket of 5.
    let flood: usize = (0..100).map(|i| burst(&fg, &one(i), 1)).sum();
    assert_eq!(flood, 7 + 5);
    assert_eq!(
        burst(&fg, &one("hot"), 1),
        0,
        "the hot value kept its empty bucket"
    );
    let status = &fg.param_flow_status()[0];
    assert_eq!((status.capacity, status.values), (8, 8));
    assert_eq!((status.evictions, status.overflows), (0, 93));
    // Mid-window the flood goes on; the hot value is never dropped while its bucket is not full again.
    advance(&clock, 500);
    let flood: usize = (100..200).map(|i| burst(&fg, &one(i), 1)).sum();
    assert_eq!(
        flood, 0,
        "the overflow bucket is spent until its window ends"
    );
    assert_eq!(burst(&fg, &one("hot"), 1), 0);
    // Once a window has passed every value is settled: newcomers replace them (lossless evictions).
    advance(&clock, 501);
    let flood: usize = (200..300).map(|i| burst(&fg, &one(i), 1)).sum();
    assert_eq!(
        flood,
        8 + 5,
        "8 replace settled values, 5 share the refilled overflow"
    );
    let status = &fg.param_flow_status()[0];
    assert_eq!(status.evictions, 8);
    assert_eq!(status.overflows, 93 + 100 + 92);
    // The hot value was evicted only once settled, so it comes back exactly as if it had been kept:
    // a window later there is room again, and it has its full bucket, as a kept bucket would.
    advance(&clock, 1001);
    assert_eq!(burst(&fg, &one("hot"), 6), 5);
}

#[test]
fn items_survive_a_flood() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .param_cache_capacity(4)
        .build();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":1,"paramFlowItemList":[{"object":"vip","count":3}]}]"#,
    );
    assert_eq!(burst(&fg, &one("vip"), 2), 2);
    for round in 0..3 {
        advance(&clock, 10_000);
        let _ = (0..50)
            .map(|i| burst(&fg, &one(round * 100 + i), 1))
            .sum::<usize>();
    }
    assert_eq!(
        burst(&fg, &one("vip"), 5),
        3,
        "refilled, with its own threshold"
    );
    assert_eq!(
        fg.param_flow_status()[0].values,
        5,
        "4 values plus the pinned item"
    );
}

#[test]
fn an_unchanged_rule_keeps_its_buckets_across_a_reload() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":2}]"#);
    assert_eq!(burst(&fg, &one("v"), 2), 2);
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":2},{"resource":"S","paramIdx":0,"count":1}]"#,
    );
    assert_eq!(burst(&fg, &one("v"), 1), 0, "state kept");
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":3}]"#);
    assert_eq!(burst(&fg, &one("v"), 5), 3, "a changed rule starts afresh");
    // Duplicates are one rule, as in Sentinel's rule set.
    load(
        &fg,
        r#"[{"resource":"D","paramIdx":0,"count":1},{"resource":"D","paramIdx":0,"count":1}]"#,
    );
    assert_eq!(fg.param_flow_rules().len(), 1);
    assert!(fg.entry("D").args(["v"]).enter().is_ok());
    assert!(fg.entry("D").args(["v"]).enter().is_err());
}

#[test]
fn cluster_rules_are_checked_locally_unless_told_not_to() {
    // No token server: Sentinel's default (`false`) passed every call of a cluster parameter rule
    // (fail-open); here the default is the local check, and only an explicit `false` passes.
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":0,"clusterMode":true,"clusterConfig":{"flowId":1}},
            {"resource":"L","paramIdx":0,"count":0,"clusterMode":true,
             "clusterConfig":{"flowId":2,"fallbackToLocalWhenFail":false}}]"#,
    );
    assert!(
        fg.entry("R").args(["v"]).enter().is_err(),
        "the default falls back to the local check"
    );
    assert!(
        fg.entry("L").args(["v"]).enter().is_ok(),
        "told not to fall back: passes"
    );
    let rules = fg.param_flow_rules();
    let config = rules[0].cluster_config.as_ref().unwrap();
    assert!(config.fallback_to_local_when_fail);
}

#[test]
fn regex_rules_match_resource_names() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"GET:/users/.*","regex":true,"paramIdx":0,"count":1}]"#,
    );
    assert!(fg.entry("GET:/users/1").args(["k"]).enter().is_ok());
    assert!(fg.entry("GET:/users/1").args(["k"]).enter().is_err());
    assert!(
        fg.entry("GET:/users/2").args(["k"]).enter().is_ok(),
        "per resource"
    );
    assert!(fg.entry("GET:/orders").args(["k"]).enter().is_ok());
}

#[test]
fn rules_reach_resources_entered_before_and_after_a_load() {
    // A resource's rules are resolved per snapshot: a load must reach the ones already entered.
    let (_clock, fg) = engine();
    let passes = |name: &str| {
        (0..3)
            .filter(|_| fg.entry(name).args(["k"]).enter().is_ok())
            .count()
    };
    assert_eq!(passes("old"), 3, "no rule yet");
    assert_eq!(passes("GET:/users/old"), 3);
    load(
        &fg,
        r#"[{"resource":"old","paramIdx":0,"count":1},{"resource":"GET:/users/.*","regex":true,"paramIdx":0,"count":2}]"#,
    );
    assert_eq!(passes("old"), 1, "entered before the load");
    assert_eq!(passes("GET:/users/old"), 2, "regex, entered before");
    assert_eq!(passes("GET:/users/new"), 2, "regex, entered after");
    load(&fg, "[]");
    assert_eq!(passes("old"), 3, "a load without its rule frees it");
    assert_eq!(passes("GET:/users/old"), 3);
}

#[test]
fn a_ruled_resource_past_the_cap_is_still_checked() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder().clock(clock).max_resources(1).build();
    drop(fg.entry("first").enter());
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":0}]"#);
    assert!(fg.entry("R").args(["v"]).enter().is_err());
    assert!(fg.entry("unruled").args(["v"]).enter().is_ok());
}

#[test]
fn json_round_trips_sentinel_names_and_defaults() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":0}]"#);
    let json: serde_json::Value =
        serde_json::from_str(&fg.rules_json(RuleType::ParamFlow)).unwrap();
    assert_eq!(
        json,
        serde_json::json!([{
            "resource": "R", "limitApp": "default", "grade": 1, "paramIdx": 0, "count": 0.0,
            "controlBehavior": 0, "maxQueueingTimeMs": 0, "burstCount": 0, "durationInSec": 1,
            "paramFlowItemList": [], "clusterMode": false, "regex": false
        }])
    );
    let full = r#"[{"id":9,"resource":"R","limitApp":"appA","grade":1,"paramIdx":-2,"count":5.5,
        "controlBehavior":2,"maxQueueingTimeMs":200,"burstCount":2,"durationInSec":3,
        "paramFlowItemList":[{"object":"42","count":10,"classType":"int"},{"object":"x","count":1}],
        "clusterMode":true,"clusterConfig":{"flowId":7,"thresholdType":1,"fallbackToLocalWhenFail":true,
        "sampleCount":5,"windowIntervalMs":500},"regex":false,"unknownField":1}]"#;
    load(&fg, full);
    let out = fg.rules_json(RuleType::ParamFlow);
    let rules = fg.param_flow_rules();
    load(&fg, &out);
    assert_eq!(
        fg.param_flow_rules(),
        rules,
        "what it writes, it reads back"
    );
    let r = &rules[0];
    assert_eq!(
        (r.id, r.limit_app.as_str(), r.param_idx, r.count),
        (Some(9), "appA", -2, 5.5)
    );
    assert_eq!(r.control_behavior, ControlBehavior::RateLimiter);
    assert_eq!(
        (r.max_queueing_time_ms, r.burst_count, r.duration_in_sec),
        (200, 2, 3)
    );
    assert_eq!(r.param_flow_item_list[0], ParamFlowItem::int(42, 10));
    assert_eq!(r.param_flow_item_list[1].class_type, None);
    let c = r.cluster_config.as_ref().unwrap();
    assert_eq!(
        (
            c.flow_id,
            c.threshold_type,
            c.sample_count,
            c.window_interval_ms
        ),
        (7, 1, 5, 500)
    );
    assert!(c.fallback_to_local_when_fail);
    assert!(!out.contains("classType\":null"), "nulls are omitted");
}

#[test]
fn typed_rules_load_like_json() {
    let (_clock, fg) = engine();
    fg.load_param_flow_rules([ParamFlowRule::new("R", 0, 5.0)
        .burst_count(3)
        .item(ParamFlowItem::string("vip", 9))])
        .unwrap();
    let typed = fg.rules_json(RuleType::ParamFlow);
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":5,"burstCount":3,
            "paramFlowItemList":[{"object":"vip","count":9,"classType":"java.lang.String"}]}]"#,
    );
    assert_eq!(fg.rules_json(RuleType::ParamFlow), typed);
    assert_eq!(burst(&fg, &one("vip"), 20), 12);
    let err = fg
        .load_param_flow_rules([ParamFlowRule::new("R", 0, 1.0).duration_in_sec(0)])
        .unwrap_err();
    assert_eq!(err.to_string(), "rule 0: `durationInSec` must be > 0");
    // What loads must save and load again (rule files, the agent): no duration JSON cannot hold.
    let err = fg
        .load_param_flow_rules([ParamFlowRule::new("R", 0, 1.0).duration_in_sec(u64::MAX)])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("rule 0: `durationInSec` is out of range: {}", u64::MAX)
    );
    let longest = ParamFlowRule::new("R", 0, 1.0).duration_in_sec(i64::MAX as u64);
    fg.load_param_flow_rules([longest]).unwrap();
    let saved = fg.rules_json(RuleType::ParamFlow);
    load(&fg, &saved);
    assert_eq!(fg.rules_json(RuleType::ParamFlow), saved);
}

fn rejected(fg: &Floodgate, json: &str) -> RuleError {
    fg.load_rules_json(RuleType::ParamFlow, json).unwrap_err()
}

#[test]
fn every_validation_error_names_the_rule_and_field_and_changes_nothing() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"KEEP","paramIdx":0,"count":1}]"#);
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"paramIdx":0,"count":1}"#,
            "resource",
            "must not be blank",
        ),
        (
            r#"{"resource":" ","paramIdx":0,"count":1}"#,
            "resource",
            "must not be blank",
        ),
        (r#"{"resource":"R","count":1}"#, "paramIdx", "is required"),
        (
            r#"{"resource":"R","paramIdx":"0","count":1}"#,
            "paramIdx",
            "must be a whole number, got a string",
        ),
        (
            r#"{"resource":"R","paramIdx":3000000000,"count":1}"#,
            "paramIdx",
            "is out of range: 3000000000",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":-1}"#,
            "count",
            "must be a finite number ≥ 0, got -1",
        ),
        (r#"{"resource":"R","paramIdx":0}"#, "count", "is required"),
        (
            r#"{"resource":"R","paramIdx":0,"count":null}"#,
            "count",
            "is required",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"grade":2}"#,
            "grade",
            "must be 0 (thread) or 1 (QPS), got 2",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"controlBehavior":7}"#,
            "controlBehavior",
            "must be 0 (default), 2 (rate limiter), or 1 or 3 (the default for parameter rules), got 7",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"durationInSec":0}"#,
            "durationInSec",
            "must be > 0",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"durationInSec":-5}"#,
            "durationInSec",
            "must be > 0, got -5",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"burstCount":-1}"#,
            "burstCount",
            "must be ≥ 0, got -1",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"maxQueueingTimeMs":-1}"#,
            "maxQueueingTimeMs",
            "must be ≥ 0, got -1",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"paramFlowItemList":{}}"#,
            "paramFlowItemList",
            "must be an array, got an object",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"paramFlowItemList":[{"count":1}]}"#,
            "paramFlowItemList[0].object",
            "is required",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"paramFlowItemList":[{"object":"a"}]}"#,
            "paramFlowItemList[0].count",
            "is required",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"paramFlowItemList":[{"object":"a","count":1},{"object":"b","count":-2}]}"#,
            "paramFlowItemList[1].count",
            "must be ≥ 0, got -2",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"paramFlowItemList":[{"object":"4x","count":1,"classType":"int"}]}"#,
            "paramFlowItemList[0].object",
            "is not a valid int: `4x`",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"paramFlowItemList":[{"object":"1","count":1,"classType":"i64"}]}"#,
            "paramFlowItemList[0].object",
            "has an unknown classType `i64` (expected int, long, short, byte, double, float, boolean, char, java.lang.String or a Java class name)",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"paramFlowItemList":[{"object":"7","count":1,"classType":"int"},{"object":"7","count":2,"classType":"long"}]}"#,
            "paramFlowItemList[1].object",
            "duplicates item 0 (Int(7))",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"clusterMode":true}"#,
            "clusterConfig",
            "is required in cluster mode",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"clusterMode":true,"clusterConfig":{}}"#,
            "clusterConfig.flowId",
            "must be > 0, got 0",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"clusterMode":true,"clusterConfig":{"flowId":1,"thresholdType":2}}"#,
            "clusterConfig.thresholdType",
            "must be 0 or 1, got 2",
        ),
        (
            r#"{"resource":"R","paramIdx":0,"count":1,"clusterMode":true,"clusterConfig":{"flowId":1,"sampleCount":3}}"#,
            "clusterConfig.windowIntervalMs",
            "must be positive and divisible by sampleCount (1000 / 3)",
        ),
        (
            r#"{"resource":"(","regex":true,"paramIdx":0,"count":1}"#,
            "resource",
            "is not a valid regular expression",
        ),
        (
            r#"{"resource":"R.*","regex":true,"paramIdx":0,"count":1,"controlBehavior":2}"#,
            "regex",
            "regex rules must be local default rules",
        ),
    ];
    for (rule, field, reason) in cases {
        let json = format!(r#"[{{"resource":"OK","paramIdx":0,"count":1}},{rule}]"#);
        match rejected(&fg, &json) {
            RuleError::Invalid {
                index,
                field: f,
                reason: r,
            } => {
                assert_eq!((index, f.as_str()), (1, *field), "{rule}");
                assert!(r.starts_with(reason), "{rule}: {r}");
            }
            other => panic!("{rule}: {other:?}"),
        }
        assert_eq!(fg.param_flow_rules()[0].resource, "KEEP", "{rule}");
    }
    assert!(matches!(rejected(&fg, "{"), RuleError::Json(_)));
    assert_eq!(rejected(&fg, "{}"), RuleError::NotAnArray);
    assert_eq!(fg.param_flow_rules().len(), 1);
}

#[test]
fn blocks_are_counted_and_logged_like_any_block() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","paramIdx":0,"count":1,"id":3}]"#);
    assert!(fg.entry("R").args([5]).enter().is_ok());
    let block: BlockError = fg.entry("R").args([5]).enter().unwrap_err();
    assert_eq!(block.rule().and_then(|r| r.id()), Some(3));
    assert_eq!(block.param(), Some(ParamValue::Int(5)));
    let node = fg.cluster_node("R").unwrap();
    assert_eq!(
        (node.pass_qps(), node.block_qps(), node.cur_thread_num()),
        (1.0, 1.0, 0)
    );
}

#[test]
fn concurrent_callers_share_a_value_exactly() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","paramIdx":0,"count":1000},{"resource":"T","grade":0,"paramIdx":0,"count":3}]"#,
    );
    let passed = AtomicUsize::new(0);
    let in_flight = AtomicUsize::new(0);
    let most = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..500 {
                    if fg.entry("R").args(["v"]).enter().is_ok() {
                        passed.fetch_add(1, Ordering::Relaxed);
                    }
                    if let Ok(e) = fg.entry("T").args(["v"]).enter() {
                        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        in_flight.fetch_sub(1, Ordering::SeqCst);
                        drop(e);
                    }
                }
            });
        }
    });
    assert_eq!(
        passed.into_inner(),
        1000,
        "exactly the bucket, no more, no less"
    );
    assert!(most.into_inner() <= 3);
    let held: Vec<_> = (0..3)
        .map(|_| {
            fg.entry("T")
                .args(["v"])
                .enter()
                .expect("every count was released")
        })
        .collect();
    assert!(fg.entry("T").args(["v"]).enter().is_err());
    drop(held);
}

#[test]
fn the_slot_runs_at_sentinels_order() {
    let fg = Floodgate::default();
    assert!(fg.slots().contains(&("param_flow", -3000)));
}
