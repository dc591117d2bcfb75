//! Flow rules end to end on a ManualClock: controllers with Sentinel's numbers, node selection,
//! strategies, prioritized borrowing, reloads and validation.

use std::time::Duration;

use floodgate_core::{
    BlockKind, ControlBehavior, Entry, EntryType, Floodgate, FlowGrade, FlowRule, FlowStrategy,
    ManualClock, RuleType,
};

use crate::support::TickClock;

const T0: u64 = 1_700_000_000_000;

fn engine() -> (ManualClock, Floodgate) {
    let clock = ManualClock::new(T0);
    (clock.clone(), Floodgate::builder().clock(clock).build())
}

fn load(fg: &Floodgate, json: &str) {
    fg.load_rules_json(RuleType::Flow, json)
        .expect("valid rules");
}

/// Enters `resource` `n` times at the current instant, exiting at once; returns how many passed.
fn burst(fg: &Floodgate, resource: &str, n: usize) -> usize {
    (0..n)
        .filter(|_| fg.entry(resource).enter().is_ok())
        .count()
}

#[test]
fn qps_reject_admits_count_per_window() {
    let (clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","count":5}]"#);
    assert_eq!(burst(&fg, "R", 8), 5);
    let block = fg.entry("R").enter().unwrap_err();
    assert_eq!(block.kind(), BlockKind::Flow);
    assert_eq!(block.rule_as::<FlowRule>().map(|r| r.count), Some(5.0));
    // The passes stay in the 2 × 500 ms window for one second.
    clock.advance(Duration::from_millis(999));
    assert_eq!(burst(&fg, "R", 8), 0);
    clock.advance(Duration::from_millis(1));
    assert_eq!(burst(&fg, "R", 8), 5);
}

/// QPS is measured over the node's second window, `sampleCount` buckets sliding by whole buckets.
/// With Sentinel's default 2 × 500 ms, the passes of a bucket stop counting when it leaves the window:
/// 5 passes at 400 ms and 5 more at 1000 ms (10 within 600 ms) under a count of 5. More buckets narrow
/// that: with 10 × 100 ms the passes at 400 ms count until 1400 ms.
#[test]
fn a_two_bucket_window_admits_twice_the_count_across_a_boundary_and_more_buckets_narrow_it() {
    let (clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","count":5}]"#);
    clock.set(T0 + 400);
    assert_eq!(burst(&fg, "R", 8), 5);
    clock.set(T0 + 1000);
    assert_eq!(
        burst(&fg, "R", 8),
        5,
        "the bucket of 0–500 ms left the window"
    );

    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .second_window(10, 1000)
        .build();
    load(&fg, r#"[{"resource":"R","count":5}]"#);
    clock.set(T0 + 400);
    assert_eq!(burst(&fg, "R", 8), 5);
    clock.set(T0 + 1000);
    assert_eq!(burst(&fg, "R", 8), 0, "the passes at 400 ms still count");
    clock.set(T0 + 1399);
    assert_eq!(burst(&fg, "R", 8), 0);
    clock.set(T0 + 1400);
    assert_eq!(
        burst(&fg, "R", 8),
        5,
        "the bucket of 400–500 ms left the window"
    );
}

#[test]
fn batch_acquire_counts_permits() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","count":10}]"#);
    let passed = (0..5)
        .filter(|_| fg.entry("R").count(4).enter().is_ok())
        .count();
    assert_eq!(passed, 2, "4 + 4 = 8 fits, 12 does not");
    assert!(fg.entry("R").count(2).enter().is_ok());
}

#[test]
fn fractional_and_zero_counts() {
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"half","count":2.5},{"resource":"sparse","count":0.2},{"resource":"zero","count":0}]"#,
    );
    assert_eq!(burst(&fg, "half", 5), 2, "used + 1 ≤ 2.5");
    assert_eq!(burst(&fg, "zero", 5), 0);
    assert!(
        fg.entry("zero").count(0).enter().is_ok(),
        "no permits asked"
    );
    // 0.2 QPS: one pass per 5 s.
    assert_eq!(burst(&fg, "sparse", 3), 1);
    let mut passes = Vec::new();
    for _ in 0..20 {
        clock.advance(Duration::from_secs(1));
        passes.push(burst(&fg, "sparse", 3));
    }
    assert_eq!(passes.iter().sum::<usize>(), 4, "{passes:?}");
    assert_eq!(passes[4], 1, "the next pass comes 5 s after the first");
}

#[test]
fn thread_grade_limits_concurrency() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","grade":0,"count":2}]"#);
    let a = fg.entry("R").enter().unwrap();
    let b = fg.entry("R").enter().unwrap();
    assert!(fg.entry("R").enter().is_err(), "in flight 2 + 1 > 2");
    drop(a);
    let c = fg.entry("R").enter().unwrap();
    drop((b, c));
    assert_eq!(fg.cluster_node("R").unwrap().cur_thread_num(), 0);
}

#[test]
fn relate_reads_the_related_resource() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"write","count":3,"strategy":1,"refResource":"read"}]"#,
    );
    assert_eq!(
        burst(&fg, "write", 5),
        5,
        "read was never entered: the rule passes"
    );
    burst(&fg, "read", 3);
    assert!(fg.entry("write").enter().is_err(), "read is at 3 QPS");
}

#[test]
fn chain_applies_only_in_its_context() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","count":1,"strategy":2,"refResource":"entranceA"}]"#,
    );
    fg.context("entranceA").run(|| {
        assert!(fg.entry("R").enter().is_ok());
        assert!(fg.entry("R").enter().is_err());
    });
    fg.context("entranceB")
        .run(|| assert_eq!(burst(&fg, "R", 5), 5));
    assert_eq!(burst(&fg, "R", 5), 5, "default context");
}

#[test]
fn limit_app_default_other_and_specific() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","limitApp":"other","count":2},{"resource":"R","limitApp":"appA","count":1}]"#,
    );
    let from = |origin: &'static str, n| {
        (0..n)
            .filter(|_| fg.entry("R").origin(origin).enter().is_ok())
            .count()
    };
    assert_eq!(from("appA", 5), 1, "its own rule");
    assert_eq!(from("appB", 5), 2, "`other`: appB is named by no rule");
    assert_eq!(from("appC", 5), 2, "each other origin has its own node");
    assert_eq!(burst(&fg, "R", 5), 5, "no origin: no rule applies");

    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","limitApp":"default","count":3}]"#);
    assert_eq!(
        (0..5)
            .filter(|i| fg
                .entry("R")
                .origin(if i % 2 == 0 { "a" } else { "b" })
                .enter()
                .is_ok())
            .count(),
        3,
        "default counts every caller together"
    );
}

#[test]
fn limit_app_with_relate_and_chain_strategies() {
    // A specific caller with RELATE reads the related resource's node, for that caller only.
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"write","limitApp":"appA","strategy":1,"refResource":"read","count":2}]"#,
    );
    burst(&fg, "read", 2);
    let write_from = |origin: &'static str| fg.entry("write").origin(origin).enter().is_ok();
    assert!(!write_from("appA"), "read is at 2 QPS");
    assert!(write_from("appB"), "the rule is appA's");
    assert!(fg.entry("write").enter().is_ok(), "no origin");

    // `other` with CHAIN: callers no rule names, in the chain's context only.
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","limitApp":"other","strategy":2,"refResource":"ctxA","count":1},
            {"resource":"R","limitApp":"appA","count":100}]"#,
    );
    fg.context("ctxA").run(|| {
        assert!(fg.entry("R").origin("appB").enter().is_ok());
        assert!(
            fg.entry("R").origin("appB").enter().is_err(),
            "R's node in ctxA: 1"
        );
        assert!(
            fg.entry("R").origin("appA").enter().is_ok(),
            "appA is named"
        );
    });
    assert!(
        fg.entry("R").origin("appB").enter().is_ok(),
        "another context"
    );

    // An origin named by a regex rule of the resource is not `other` either.
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R.*","regex":true,"limitApp":"appA","count":100},
            {"resource":"R","limitApp":"other","count":1}]"#,
    );
    let from = |origin: &'static str| {
        (0..5)
            .filter(|_| fg.entry("R").origin(origin).enter().is_ok())
            .count()
    };
    assert_eq!(from("appA"), 5);
    assert_eq!(from("appB"), 1);
}

#[test]
fn all_rules_must_pass() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","count":5},{"resource":"R","count":3}]"#,
    );
    assert_eq!(burst(&fg, "R", 10), 3);
}

#[test]
fn prioritized_entries_borrow_the_next_window() {
    let (clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","count":10}]"#);
    clock.set(T0 + 100);
    assert_eq!(burst(&fg, "R", 4), 4);
    clock.set(T0 + 600);
    assert_eq!(burst(&fg, "R", 6), 6);
    clock.set(T0 + 700);
    assert!(fg.entry("R").enter().is_err(), "full");
    let e = fg
        .entry("R")
        .prioritized()
        .enter()
        .expect("borrows from [1000, 1500)");
    assert_eq!(
        e.waited(),
        Duration::from_millis(300),
        "until the bucket of 4 slides out"
    );
    drop(e);
    let node = fg.cluster_node("R").unwrap();
    assert_eq!(node.waiting(), 1);
    assert_eq!(node.occupied_pass_qps(), 1.0);
    // The borrowed pass counts in its window when it comes.
    clock.set(T0 + 1000);
    assert_eq!(node.pass_qps(), 7.0, "6 from [500, 1000) + 1 borrowed");
    assert_eq!(burst(&fg, "R", 10), 3);
}

/// A prioritized entry that borrowed from the next window and was then blocked by a later slot (here an
/// open breaker) borrows nothing: its pass would have taken a place of the next window for a request
/// that never ran.
#[test]
fn a_prioritized_entry_blocked_after_borrowing_leaves_the_next_window_alone() {
    let (clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","count":10}]"#);
    clock.set(T0 + 100);
    assert_eq!(burst(&fg, "R", 4), 4);
    clock.set(T0 + 600);
    assert_eq!(burst(&fg, "R", 6), 6);
    clock.set(T0 + 700);
    fg.load_degrade_rules([floodgate_core::DegradeRule::error_count("R", 1.0)
        .min_request_amount(1)
        .time_window(1)])
        .unwrap();
    for _ in 0..2 {
        let e = fg.entry("R").prioritized().enter();
        // The flow slot would borrow (see above); the breaker, closed, lets it through to fail.
        let e = e.expect("borrowed");
        e.trace(&std::io::Error::other("boom"));
    }
    let node = fg.cluster_node("R").unwrap();
    assert_eq!(node.waiting(), 2, "two admitted borrows");
    let block = fg.entry("R").prioritized().enter().unwrap_err();
    assert_eq!(block.kind(), floodgate_core::BlockKind::Degrade);
    assert_eq!(node.waiting(), 2, "the blocked entry borrowed nothing");
    assert_eq!(node.occupied_pass_qps(), 2.0);
    clock.set(T0 + 1000);
    assert_eq!(node.pass_qps(), 8.0, "6 from [500, 1000) + 2 borrowed");
}

/// With the occupy timeout at the whole interval, a borrow reaches a window whose slot is the current
/// window's: it must not recycle the current window's borrowed passes.
#[test]
fn a_borrow_one_interval_ahead_keeps_the_current_windows_borrows() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .occupy_timeout(Duration::from_millis(1000))
        .build();
    load(&fg, r#"[{"resource":"R","count":4}]"#);
    clock.set(T0 + 400);
    assert_eq!(burst(&fg, "R", 4), 4);
    // [0, 500) holds 4: frees at 1000.
    let e = fg
        .entry("R")
        .prioritized()
        .enter()
        .expect("borrows [1000, 1500)");
    assert_eq!(e.waited(), Duration::from_millis(600));
    drop(e);
    clock.set(T0 + 1100);
    let node = fg.cluster_node("R").unwrap();
    assert_eq!(node.pass_qps(), 1.0, "the borrowed pass, in [1000, 1500)");
    assert_eq!(burst(&fg, "R", 2), 2);
    assert_eq!(node.pass_qps(), 3.0);
    // Full until [1000, 1500) slides out at 2000, 900 ms away: borrows [2000, 2500), whose borrowed
    // cell was [1000, 1500)'s with one cell per slot.
    assert!(fg.entry("R").enter().is_ok(), "4th place");
    let e = fg
        .entry("R")
        .prioritized()
        .enter()
        .expect("borrows [2000, 2500)");
    assert_eq!(e.waited(), Duration::from_millis(900));
    drop(e);
    assert_eq!(
        node.pass_qps(),
        4.0,
        "the borrow into [1000, 1500) still counts"
    );
    assert!(fg.entry("R").enter().is_err(), "still full");
}

#[test]
fn prioritized_gives_up_past_the_occupy_timeout() {
    let (clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","count":10}]"#);
    clock.set(T0 + 100);
    burst(&fg, "R", 10);
    clock.set(T0 + 200);
    // The full bucket [0, 500) frees at 1000: 800 ms away, past the 500 ms occupy timeout.
    assert!(fg.entry("R").prioritized().enter().is_err());
}

#[test]
fn rate_limiter_queues_with_sentinels_numbers() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","count":10,"controlBehavior":2,"maxQueueingTimeMs":500}]"#,
    );
    let mut waits = Vec::new();
    let mut entries: Vec<Entry<'_>> = Vec::new();
    for _ in 0..10 {
        match fg.entry("R").enter() {
            Ok(e) => {
                waits.push(e.waited().as_millis());
                entries.push(e);
            }
            Err(_) => waits.push(u128::MAX),
        }
    }
    assert_eq!(
        &waits[..6],
        &[0, 100, 200, 300, 400, 500],
        "a wait equal to the limit is admitted"
    );
    assert!(
        waits[6..].iter().all(|w| *w == u128::MAX),
        "the 7th is the first rejected"
    );
}

/// A paced burst shows as paced: a queued call counts as a pass of the window it runs in (Sentinel's
/// statistic slot counts it after the controller's sleep), not of the window it was admitted in, for
/// queues longer than the statistics' interval too.
#[test]
fn queued_calls_count_in_the_second_they_run() {
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","count":10,"controlBehavior":2,"maxQueueingTimeMs":2000}]"#,
    );
    let waits: Vec<u128> = (0..20)
        .map(|_| fg.entry("R").enter().unwrap().waited().as_millis())
        .collect();
    assert_eq!(waits, (0..20).map(|i| i * 100).collect::<Vec<u128>>());
    let node = fg.cluster_node("R").unwrap();
    assert_eq!(node.pass_qps(), 5.0, "waits 0–400 ms run in [0, 500)");
    assert_eq!(node.waiting(), 15, "the rest run in later windows");
    clock.set(T0 + 2500);
    let passes: Vec<u64> = fg
        .metrics(T0, T0 + 1999)
        .iter()
        .filter(|l| &*l.resource == "R")
        .map(|l| l.pass_qps)
        .collect();
    assert_eq!(passes, [10, 10], "10 a second, as paced");
    assert_eq!(node.total_pass(), 20, "every one counted once");

    // A queue of five seconds: the calls run over five seconds, and count there.
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","count":10,"controlBehavior":2,"maxQueueingTimeMs":5000}]"#,
    );
    for _ in 0..50 {
        drop(fg.entry("R").enter().unwrap());
    }
    let node = fg.cluster_node("R").unwrap();
    clock.set(T0 + 1200);
    assert_eq!(node.pass_qps(), 10.0, "no spike a second in");
    clock.set(T0 + 5500);
    let passes: Vec<u64> = fg
        .metrics(T0, T0 + 4999)
        .iter()
        .filter(|l| &*l.resource == "R")
        .map(|l| l.pass_qps)
        .collect();
    assert_eq!(passes, [10, 10, 10, 10, 10]);
}

#[test]
fn rate_limiter_idle_time_earns_no_burst() {
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","count":10,"controlBehavior":2,"maxQueueingTimeMs":0}]"#,
    );
    assert!(fg.entry("R").enter().is_ok());
    assert!(
        fg.entry("R").enter().is_err(),
        "strict pacing: 0 means no queue, not no limit"
    );
    clock.advance(Duration::from_secs(60));
    assert!(fg.entry("R").enter().is_ok());
    assert!(
        fg.entry("R").enter().is_err(),
        "a minute idle still admits one at once"
    );
    clock.advance(Duration::from_millis(100));
    assert!(fg.entry("R").enter().is_ok());
}

/// Saturating load (10 requests every 10 ms) for `seconds`; passes per second.
fn saturate(clock: &ManualClock, fg: &Floodgate, resource: &str, seconds: u64) -> Vec<usize> {
    let mut out = Vec::new();
    for _ in 0..seconds {
        let mut passed = 0;
        for _ in 0..100 {
            passed += burst(fg, resource, 10);
            clock.advance(Duration::from_millis(10));
        }
        out.push(passed);
    }
    out
}

#[test]
fn warm_up_ramps_with_sentinels_sequence() {
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","count":20,"controlBehavior":1,"warmUpPeriodSec":10}]"#,
    );
    let status = &fg.flow_status()[0];
    assert_eq!(
        (status.warning_token, status.max_token, status.slope),
        (Some(100), Some(200), Some(0.001))
    );
    let passes = saturate(&clock, &fg, "R", 16);
    assert_eq!(
        passes,
        [6, 6, 7, 7, 8, 8, 9, 10, 11, 12, 15, 19, 20, 20, 20, 20],
        "6 in the first second, 20 from the 13th"
    );
    // Idle a minute: cold again.
    clock.advance(Duration::from_secs(60));
    assert_eq!(saturate(&clock, &fg, "R", 1), [6]);
}

#[test]
fn an_unchanged_rule_keeps_its_state_across_a_reload() {
    let (clock, fg) = engine();
    let warm = r#"{"resource":"R","count":20,"controlBehavior":1,"warmUpPeriodSec":10}"#;
    load(&fg, &format!("[{warm}]"));
    saturate(&clock, &fg, "R", 14);
    load(
        &fg,
        &format!(r#"[{warm},{{"resource":"other","count":1}}]"#),
    );
    assert_eq!(
        saturate(&clock, &fg, "R", 2),
        [20, 20],
        "still warm after an unrelated push"
    );
    // Loading the identical list is a no-op.
    load(
        &fg,
        &format!(r#"[{warm},{{"resource":"other","count":1}}]"#),
    );
    assert_eq!(saturate(&clock, &fg, "R", 1), [20]);
    // A changed rule starts cold.
    load(
        &fg,
        r#"[{"resource":"R","count":20,"controlBehavior":1,"warmUpPeriodSec":11}]"#,
    );
    assert!(saturate(&clock, &fg, "R", 1)[0] < 10);
}

#[test]
fn rate_limiter_pacing_survives_a_reload() {
    let (_clock, fg) = engine();
    let rule = r#"{"resource":"R","count":1,"controlBehavior":2,"maxQueueingTimeMs":0}"#;
    load(&fg, &format!("[{rule}]"));
    assert!(fg.entry("R").enter().is_ok());
    load(&fg, &format!(r#"[{rule},{{"resource":"x","count":1}}]"#));
    assert!(
        fg.entry("R").enter().is_err(),
        "no extra pass after a reload"
    );
}

#[test]
fn regex_rules_match_resource_names() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"GET:/api/.*","count":1,"regex":true}]"#,
    );
    assert_eq!(burst(&fg, "GET:/api/a", 3), 1);
    assert_eq!(
        burst(&fg, "GET:/api/b", 3),
        1,
        "each resource is limited on its own node"
    );
    assert_eq!(burst(&fg, "POST:/other", 3), 3);
    assert_eq!(
        burst(&fg, "x-GET:/api/c", 3),
        3,
        "the whole name must match, as Java's matches()"
    );
}

#[test]
fn rules_reach_resources_entered_before_and_after_a_load() {
    // A resource's rules are resolved per snapshot: a load must reach the ones already entered.
    let (_clock, fg) = engine();
    assert_eq!(burst(&fg, "old", 3), 3, "no rule yet");
    assert_eq!(burst(&fg, "GET:/api/old", 3), 3);
    load(
        &fg,
        r#"[{"resource":"old","count":1},{"resource":"new","count":2},{"resource":"GET:/api/.*","count":1,"regex":true}]"#,
    );
    assert_eq!(burst(&fg, "old", 3), 0, "3 passes already in the window");
    assert_eq!(burst(&fg, "new", 3), 2, "created after the load");
    assert_eq!(burst(&fg, "GET:/api/old", 3), 0, "regex, entered before");
    assert_eq!(burst(&fg, "GET:/api/new", 3), 1, "regex, entered after");

    // A load that drops a resource's rules frees it; one that changes them applies at once.
    load(&fg, r#"[{"resource":"new","count":100}]"#);
    assert_eq!(burst(&fg, "old", 3), 3);
    assert_eq!(burst(&fg, "GET:/api/old", 3), 3);
    assert_eq!(burst(&fg, "new", 3), 3);
    load(&fg, "[]");
    assert_eq!(fg.rule_count(RuleType::Flow), 0);
    assert_eq!(burst(&fg, "new", 200), 200);
}

#[test]
fn a_load_racing_resource_creation_reaches_every_resource() {
    // Resources created (and their rules resolved) on other threads while rules are loaded must all end
    // up limited: none may keep the empty rules it resolved under the snapshot before the load.
    for _round in 0..20 {
        let (_clock, fg) = engine();
        std::thread::scope(|s| {
            for t in 0..2 {
                let fg = &fg;
                s.spawn(move || {
                    for i in 0..200 {
                        drop(fg.entry(&format!("r-{t}-{i}")).count(0).enter());
                    }
                });
            }
            s.spawn(|| load(&fg, r#"[{"resource":"r-.*","count":0,"regex":true}]"#));
        });
        for t in 0..2 {
            for i in 0..200 {
                let name = format!("r-{t}-{i}");
                assert!(fg.entry(&name).enter().is_err(), "{name} escaped the load");
            }
        }
    }
}

#[test]
fn a_ruled_resource_past_the_cap_is_still_checked() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder().clock(clock).max_resources(1).build();
    load(&fg, r#"[{"resource":"ruled","count":1}]"#);
    burst(&fg, "first", 1);
    assert_eq!(burst(&fg, "free", 3), 3);
    assert_eq!(burst(&fg, "ruled", 3), 1, "never fail open");
}

#[test]
fn json_round_trips_sentinel_names() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","count":20.0,"grade":1,"controlBehavior":1,"unknownField":true,"id":7,"refResource":null}]"#,
    );
    let json: serde_json::Value = serde_json::from_str(&fg.rules_json(RuleType::Flow)).unwrap();
    let rule = &json[0];
    assert_eq!(rule["resource"], "R");
    assert_eq!(rule["count"], 20.0);
    assert_eq!(rule["limitApp"], "default");
    assert_eq!(rule["warmUpPeriodSec"], 10);
    assert_eq!(rule["maxQueueingTimeMs"], 500);
    assert_eq!(rule["id"], 7);
    assert!(rule.get("refResource").is_none(), "nulls are omitted");
    assert!(rule.get("unknownField").is_none());
    // Loading the output again is the same rule list.
    let before = fg.flow_rules();
    load(&fg, &fg.rules_json(RuleType::Flow));
    assert_eq!(fg.flow_rules(), before);
}

#[test]
fn typed_rules_load_like_json() {
    let (_clock, fg) = engine();
    fg.load_flow_rules([
        FlowRule::new("R", 2.0),
        FlowRule::new("T", 1.0).grade(FlowGrade::Thread),
        FlowRule::new("W", 5.0).strategy(FlowStrategy::Relate, "R"),
        FlowRule::new("P", 10.0).control_behavior(ControlBehavior::RateLimiter),
    ])
    .unwrap();
    assert_eq!(fg.flow_rules().len(), 4);
    assert_eq!(burst(&fg, "R", 5), 2);
    let err = fg.load_flow_rules([FlowRule::new("", 1.0)]).unwrap_err();
    assert_eq!(err.to_string(), "rule 0: `resource` must not be blank");
    assert_eq!(fg.flow_rules().len(), 4, "kept");
}

#[test]
fn every_validation_error_names_the_rule_and_field_and_changes_nothing() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"kept","count":1}]"#);
    let cases: &[(&str, &str)] = &[
        (
            r#"[{"resource":" ","count":1}]"#,
            "rule 0: `resource` must not be blank",
        ),
        (r#"[{"count":1}]"#, "rule 0: `resource` must not be blank"),
        (
            r#"[{"resource":"a","count":1},{"resource":"b","count":-1}]"#,
            "rule 1: `count` must be a finite number ≥ 0, got -1",
        ),
        (
            r#"[{"resource":"a","count":"x"}]"#,
            "rule 0: `count` must be a number, got a string",
        ),
        (
            r#"[{"resource":"a","count":1,"grade":5}]"#,
            "rule 0: `grade` must be 0 (thread) or 1 (QPS), got 5",
        ),
        (
            r#"[{"resource":"a","count":1,"strategy":3}]"#,
            "rule 0: `strategy` must be 0 (direct), 1 (relate) or 2 (chain), got 3",
        ),
        (
            r#"[{"resource":"a","count":1,"strategy":1}]"#,
            "rule 0: `refResource` is required for the relate and chain strategies",
        ),
        (
            r#"[{"resource":"a","count":1,"controlBehavior":9}]"#,
            "rule 0: `controlBehavior` must be 0 (reject), 1 (warm-up), 2 (rate limiter) or 3 (warm-up rate limiter), got 9",
        ),
        (
            r#"[{"resource":"a","count":1,"controlBehavior":1,"warmUpPeriodSec":0}]"#,
            "rule 0: `warmUpPeriodSec` must be > 0 for warm-up",
        ),
        (
            r#"[{"resource":"a","count":1,"maxQueueingTimeMs":-5}]"#,
            "rule 0: `maxQueueingTimeMs` must be ≥ 0, got -5",
        ),
        (
            r#"[{"resource":"a","count":1,"warmUpPeriodSec":2.5}]"#,
            "rule 0: `warmUpPeriodSec` must be a whole number, got 2.5",
        ),
        (
            r#"[{"resource":"a","count":1,"clusterMode":true}]"#,
            "rule 0: `clusterConfig` is required in cluster mode",
        ),
        (
            r#"[{"resource":"a","count":1,"clusterMode":true,"clusterConfig":{"flowId":0}}]"#,
            "rule 0: `clusterConfig.flowId` must be > 0, got 0",
        ),
        (
            r#"[{"resource":"a","count":1,"clusterMode":true,"clusterConfig":{"flowId":1,"sampleCount":0}}]"#,
            "rule 0: `clusterConfig.sampleCount` must be > 0, got 0",
        ),
        (
            r#"[{"resource":"a","count":1,"clusterMode":true,"clusterConfig":{"flowId":1,"sampleCount":3}}]"#,
            "rule 0: `clusterConfig.windowIntervalMs` must be positive and divisible by sampleCount (1000 / 3)",
        ),
        (
            r#"[{"resource":"(","count":1,"regex":true}]"#,
            "rule 0: `resource` is not a valid regular expression",
        ),
        (
            r#"[{"resource":"a.*","count":1,"regex":true,"controlBehavior":1}]"#,
            "rule 0: `regex` regex rules must be local reject rules",
        ),
        (
            r#"[{"resource":"a","count":1,"clusterMode":"yes"}]"#,
            "rule 0: `clusterMode` must be true or false, got a string",
        ),
        (r#"[5]"#, "rule 0: `(rule)` must be a JSON object"),
        (
            r#"{"resource":"a"}"#,
            "rules must be a JSON array of objects",
        ),
        (r#"[{"resource":"a""#, "invalid JSON"),
    ];
    for (json, expected) in cases {
        let err = fg.load_rules_json(RuleType::Flow, json).unwrap_err();
        assert!(
            err.to_string().starts_with(expected),
            "{json}: got `{err}`, expected `{expected}`"
        );
        assert_eq!(
            fg.flow_rules(),
            [FlowRule::new("kept", 1.0)],
            "{json}: the rules in force stay"
        );
    }
}

#[test]
fn the_cold_factor_is_configurable_and_validated() {
    assert!(Floodgate::builder().cold_factor(1.0).try_build().is_err());
    assert!(
        Floodgate::builder()
            .cold_factor(f64::NAN)
            .try_build()
            .is_err()
    );
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .cold_factor(4.0)
        .build();
    load(
        &fg,
        r#"[{"resource":"R","count":20,"controlBehavior":1,"warmUpPeriodSec":10}]"#,
    );
    let status = &fg.flow_status()[0];
    assert_eq!(
        (status.warning_token, status.max_token),
        (Some(66), Some(146))
    );
}

#[test]
fn inbound_and_origin_rules_combine() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","limitApp":"web","count":2}]"#);
    let passed = (0..5)
        .filter(|_| {
            fg.entry("R")
                .origin("web")
                .entry_type(EntryType::In)
                .enter()
                .is_ok()
        })
        .count();
    assert_eq!(passed, 2);
    assert_eq!(fg.origin_node("R", "web").unwrap().block_qps(), 3.0);
    assert_eq!(fg.inbound_node().block_qps(), 3.0);
}

/// A manual clock whose `sleep` panics (a user clock may).
#[derive(Debug, Clone)]
struct PanickingSleep(ManualClock);

impl floodgate_core::Clock for PanickingSleep {
    fn now_nanos(&self) -> u64 {
        self.0.now_nanos()
    }
    fn sleep(&self, _: Duration) {
        panic!("this clock cannot sleep");
    }
}

#[test]
fn an_entry_whose_queueing_sleep_panics_still_exits() {
    // `enter()` sleeps a rate limiter's wait before it hands the entry out; if the clock's sleep
    // panics, the admitted call must still be counted as finished (concurrency back to 0).
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder().clock(PanickingSleep(clock)).build();
    load(
        &fg,
        r#"[{"resource":"R","count":10,"controlBehavior":2,"maxQueueingTimeMs":500}]"#,
    );
    drop(fg.entry("R").enter().expect("the first call does not wait"));
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(fg.entry("R").enter());
    }));
    assert!(
        waited.is_err(),
        "the second call waits 100 ms: the clock panics"
    );
    let node = fg.cluster_node("R").unwrap();
    assert_eq!(node.cur_thread_num(), 0, "the panicked entry exited");
    assert_eq!(node.total_success(), 2);
}

/// Two pacing rules on one resource: each reserves a slot measured from the same instant, so an entry
/// waits for the later of the two, as with one rule (the sum overshot both, and the queue bound).
#[test]
fn waits_from_several_rules_are_not_added() {
    let pacing = r#"{"resource":"r","count":10,"controlBehavior":2,"maxQueueingTimeMs":500}"#;
    let waits = |rules: &str| {
        let (_clock, fg) = engine();
        load(&fg, rules);
        (0..8)
            .map(|_| {
                fg.entry("r")
                    .enter_owned()
                    .map(|e| e.waited().as_millis())
                    .ok()
            })
            .collect::<Vec<_>>()
    };
    let one = waits(&format!("[{pacing}]"));
    assert_eq!(one[..3], [Some(0), Some(100), Some(200)]);
    assert_eq!(waits(&format!("[{pacing},{pacing}]")), one);
}

#[test]
fn an_unbalanced_regex_cannot_escape_the_whole_name_anchoring() {
    let (_clock, fg) = engine();
    let err = fg
        .load_rules_json(
            RuleType::Flow,
            r#"[{"resource":"a)|(?:b","count":0,"regex":true}]"#,
        )
        .unwrap_err();
    assert!(err.to_string().contains("`resource`"), "{err}");
    assert!(fg.entry("a-anything").enter().is_ok());
}

/// Passes per second of `n`-permit requests, 5 of them every 100 ms, for `seconds`.
fn per_second(clock: &ManualClock, fg: &Floodgate, permits: u32, seconds: u64) -> Vec<usize> {
    (0..seconds)
        .map(|_| {
            (0..10)
                .map(|_| {
                    let passed = (0..5)
                        .filter(|_| fg.entry("R").count(permits).enter().is_ok())
                        .count();
                    clock.advance(Duration::from_millis(100));
                    passed
                })
                .sum()
        })
        .collect()
}

/// A warm-up rule whose cold rate is under the size of a request (a count below the cold factor, a
/// batch above `count / coldFactor`) refused every request for good: its bucket drains only through
/// passes (Sentinel's does the same). It now admits a request in a window with no pass, and warms.
#[test]
fn a_warm_up_rule_colder_than_one_request_still_warms_up() {
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","count":2,"controlBehavior":1,"warmUpPeriodSec":10}]"#,
    );
    let passes = per_second(&clock, &fg, 1, 16);
    assert_eq!(
        passes,
        [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2],
        "one a second while cold, then two"
    );

    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","count":20,"controlBehavior":1,"warmUpPeriodSec":10}]"#,
    );
    let passes = per_second(&clock, &fg, 7, 20);
    assert_eq!(
        passes,
        [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2],
        "7-permit requests, cold at 6.67 QPS: one a second, two (14 of 20 permits) once warm"
    );
    // A request larger than the rule's count is never admitted.
    assert_eq!(per_second(&clock, &fg, 21, 3), [0, 0, 0]);

    // A batch of the count does not skip the warm-up: cold, it is larger than the allowed QPS.
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","count":20,"controlBehavior":1,"warmUpPeriodSec":10}]"#,
    );
    assert_eq!(per_second(&clock, &fg, 20, 3), [0, 0, 0]);
}

/// A concurrency rule with a pacing or warm-up `controlBehavior` (Sentinel's dashboard keeps one picked
/// before the grade was switched) loads and rejects, as in Sentinel, rather than refusing the whole
/// list. Its behaviour's own fields are not checked.
#[test]
fn a_concurrency_rule_ignores_its_control_behavior() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"R","grade":0,"count":1,"controlBehavior":1,"warmUpPeriodSec":0},
            {"resource":"S","count":1}]"#,
    );
    let first = fg.entry("R").enter().unwrap();
    assert_eq!(fg.entry("R").enter().unwrap_err().kind(), BlockKind::Flow);
    drop(first);
    assert!(fg.entry("R").enter().is_ok());
    let rules: serde_json::Value = serde_json::from_str(&fg.rules_json(RuleType::Flow)).unwrap();
    assert_eq!(rules[0]["controlBehavior"], 1, "kept as pushed");
}

/// A warm-up rule under one request a second admits at its rate (it admitted nothing, ever).
#[test]
fn a_fractional_warm_up_rule_paces_at_its_rate() {
    let (clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"r","count":0.5,"controlBehavior":1,"warmUpPeriodSec":10}]"#,
    );
    let mut passed = 0;
    for _ in 0..600 {
        passed += burst(&fg, "r", 1);
        clock.advance(Duration::from_millis(100));
    }
    assert_eq!(passed, 30, "one every 2 s over 60 s");
}

#[test]
fn strict_pacing_above_a_thousand_a_second_on_a_millisecond_clock() {
    // Every request within a tick reads the same time: without a queue, only one a tick would pass
    // (a cap of 1000 a second on the default millisecond clock).
    for behavior in [2, 3] {
        let clock = ManualClock::new(T0);
        let fg = Floodgate::builder().clock(TickClock(clock.clone())).build();
        load(
            &fg,
            &format!(
                r#"[{{"resource":"R","count":5000,"controlBehavior":{behavior},"maxQueueingTimeMs":0,"warmUpPeriodSec":1}}]"#
            ),
        );
        // Warm-up pacing starts cold (a third of the rate); give it time to warm.
        for _ in 0..3000 {
            burst(&fg, "R", 10);
            clock.advance(Duration::from_millis(1));
        }
        let passed: usize = (0..1000)
            .map(|_| {
                let n = burst(&fg, "R", 10);
                clock.advance(Duration::from_millis(1));
                n
            })
            .sum();
        assert_eq!(passed, 5000, "controlBehavior {behavior}");
    }
}

#[test]
fn every_invalid_rule_of_a_list_is_named() {
    // Sentinel dropped invalid rules one by one and answered success; a list is refused whole
    // here, and its error names each invalid rule, not only the first.
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"kept","count":1}]"#);
    let err = fg
        .load_rules_json(
            RuleType::Flow,
            r#"[{"resource":"ok","count":1},{"resource":"a","count":-1},{"resource":"b","count":"x"},{"resource":"","count":2}]"#,
        )
        .unwrap_err();
    let floodgate_core::RuleError::Several(errors) = &err else {
        panic!("{err:?}");
    };
    let indexes: Vec<usize> = errors
        .iter()
        .map(|e| match e {
            floodgate_core::RuleError::Invalid { index, .. } => *index,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(indexes, [1, 2, 3]);
    let text = err.to_string();
    assert!(
        text.starts_with("rule 1: `count` must be a finite number ≥ 0, got -1; rule 2: `count`"),
        "{text}"
    );
    assert_eq!(fg.flow_rules().len(), 1, "the rules in force stay");
    assert_eq!(fg.flow_rules()[0].resource, "kept");
    // Typed rules too.
    let err = fg
        .load_flow_rules([FlowRule::new("a", -1.0), FlowRule::new("b", f64::NAN)])
        .unwrap_err();
    assert!(
        matches!(err, floodgate_core::RuleError::Several(ref e) if e.len() == 2),
        "{err}"
    );
}

fn indexes(e: &floodgate_core::RuleError) -> Vec<usize> {
    match e {
        floodgate_core::RuleError::Invalid { index, .. } => vec![*index],
        floodgate_core::RuleError::Several(errors) => errors.iter().flat_map(indexes).collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_item_that_is_not_an_object_is_named_too() {
    let err = Floodgate::default()
        .load_rules_json(RuleType::Flow, r#"[1,{"resource":"","count":1},"x"]"#)
        .unwrap_err();
    assert_eq!(indexes(&err), [0, 1, 2], "{err}");
}

#[test]
fn a_rule_reloaded_with_only_its_id_changed_keeps_its_warmth() {
    // Sentinel's warm-up numbers: 20 QPS, 10 s, cold factor 3. A dashboard that numbers its rules
    // afresh after a restart pushes the same rules with other ids: that must not send warm-up back to
    // cold.
    let (clock, fg) = engine();
    let rule = FlowRule::new("W", 20.0)
        .control_behavior(ControlBehavior::WarmUp)
        .id(1);
    fg.load_flow_rules([rule.clone()]).unwrap();
    for _ in 0..20 {
        burst(&fg, "W", 40);
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(burst(&fg, "W", 40), 20, "warm");
    clock.advance(Duration::from_secs(1));
    fg.load_flow_rules([rule.clone().id(42)]).unwrap();
    assert_eq!(burst(&fg, "W", 40), 20, "still warm under id 42");
    assert_eq!(fg.flow_rules()[0].id, Some(42), "the new id is in force");
    // Any other change starts cold, as before.
    clock.advance(Duration::from_secs(1));
    fg.load_flow_rules([rule.id(42).warm_up_period_sec(20)])
        .unwrap();
    assert!(burst(&fg, "W", 40) < 20, "a changed rule starts cold");
}

/// A few characters of pattern that compile to megabytes (`\w{200}` expands to Unicode classes) are
/// refused, naming the rule and field, and the rules in force stay; ten of them took 150 MB and
/// seconds of the loading thread before.
#[test]
fn a_pattern_too_large_to_compile_is_refused() {
    let fg = floodgate_core::Floodgate::builder().build();
    fg.load_rules_json(
        floodgate_core::RuleType::Flow,
        r#"[{"resource":"GET:/a.*","regex":true,"count":1}]"#,
    )
    .unwrap();
    let err = fg
        .load_rules_json(
            floodgate_core::RuleType::Flow,
            r#"[{"resource":"ok","count":1},{"resource":"\\w{200}|x0","regex":true,"count":1}]"#,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "rule 1: `resource` is a regular expression too large to compile (over 256 KiB)"
    );
    assert_eq!(fg.flow_rules().len(), 1);
    assert_eq!(fg.flow_rules()[0].resource, "GET:/a.*");
}
