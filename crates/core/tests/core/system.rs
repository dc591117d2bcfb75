//! System rules end to end with an injected probe: each dimension with Sentinel's comparisons, inbound
//! only, merging by minimum, the enabled flag (set by any rule, not by the last one), status, JSON and
//! every validation error.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use floodgate_core::stats::SystemThresholds;
use floodgate_core::{
    BlockError, BlockKind, Entry, EntryType, Floodgate, ManualClock, ManualProbe, RuleError,
    RuleType, SystemLimit, SystemLimitType, SystemProbe, SystemRule,
};

const T0: u64 = 1_700_000_000_000;

fn engine() -> (ManualClock, ManualProbe, Floodgate) {
    let clock = ManualClock::new(T0);
    let probe = ManualProbe::new();
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .system_probe(probe.clone())
        .build();
    (clock, probe, fg)
}

fn load(fg: &Floodgate, json: &str) {
    fg.load_rules_json(RuleType::System, json)
        .expect("valid rules");
}

fn inbound(fg: &Floodgate) -> Result<Entry<'_>, BlockError> {
    fg.entry("R").entry_type(EntryType::In).enter()
}

fn limit_type(block: &BlockError) -> SystemLimitType {
    assert_eq!(block.kind(), BlockKind::System);
    block
        .rule_as::<SystemLimit>()
        .expect("a system limit")
        .limit_type
}

/// Enters inbound `n` times at the current instant, exiting at once; returns how many passed.
fn burst(fg: &Floodgate, n: usize) -> usize {
    (0..n).filter(|_| inbound(fg).is_ok()).count()
}

#[test]
fn qps_admits_while_pass_qps_plus_count_fits() {
    let (clock, _probe, fg) = engine();
    assert!(fg.slots().contains(&("system", -5000)));
    load(&fg, r#"[{"qps":3}]"#);
    assert_eq!(burst(&fg, 5), 3);
    let block = inbound(&fg).unwrap_err();
    assert_eq!(limit_type(&block), SystemLimitType::Qps);
    let limit = block.rule_as::<SystemLimit>().unwrap();
    assert_eq!(limit.threshold, 3.0);
    assert_eq!(block.rule().map(|r| r.limit_app()), Some("qps"));
    assert_eq!(fg.inbound_node().block_qps(), 3.0);
    // Outbound entries are never checked, and do not count.
    assert!((0..5).all(|_| fg.entry("R").enter().is_ok()));
    clock.advance(Duration::from_secs(1));
    assert!(
        fg.entry("R")
            .entry_type(EntryType::In)
            .count(2)
            .enter()
            .is_ok()
    );
    assert!(
        fg.entry("R")
            .entry_type(EntryType::In)
            .count(2)
            .enter()
            .is_err(),
        "2 + 2 > 3"
    );
    assert!(inbound(&fg).is_ok(), "2 + 1 ≤ 3");
}

#[test]
fn a_zero_qps_rule_blocks_every_inbound_entry_that_asks_for_a_permit() {
    let (_clock, _probe, fg) = engine();
    load(&fg, r#"[{"qps":0}]"#);
    assert!(inbound(&fg).is_err());
    assert!(
        fg.entry("R")
            .entry_type(EntryType::In)
            .count(0)
            .enter()
            .is_ok()
    );
}

#[test]
fn max_thread_has_the_flow_thread_grade_meaning() {
    // Sentinel's `inFlight > maxThread` admits maxThread + 1 calls; here maxThread = 2 admits 2, as the
    // flow THREAD grade does.
    let (_clock, _probe, fg) = engine();
    load(&fg, r#"[{"maxThread":2}]"#);
    let a = inbound(&fg).unwrap();
    let b = inbound(&fg).unwrap();
    assert_eq!(
        limit_type(&inbound(&fg).unwrap_err()),
        SystemLimitType::Thread
    );
    drop(a);
    assert!(
        fg.entry("R")
            .entry_type(EntryType::In)
            .count(2)
            .enter()
            .is_err(),
        "1 in flight + 2 > 2"
    );
    let c = inbound(&fg).unwrap();
    // Outbound calls in flight do not count.
    let outbound: Vec<_> = (0..5).map(|_| fg.entry("R").enter().unwrap()).collect();
    drop((b, c, outbound));
    assert_eq!(fg.inbound_node().cur_thread_num(), 0);
    assert_eq!(burst(&fg, 3), 3);
}

#[test]
fn avg_rt_blocks_while_the_average_is_above_the_threshold() {
    let (clock, _probe, fg) = engine();
    load(&fg, r#"[{"avgRt":10}]"#);
    let slow = inbound(&fg).unwrap();
    clock.advance(Duration::from_millis(10));
    drop(slow);
    assert!(inbound(&fg).is_ok(), "10 ms is not above 10");
    let slow = inbound(&fg).unwrap();
    clock.advance(Duration::from_millis(30));
    drop(slow);
    // (10 + 0 + 30) / 3 ≈ 13.3 ms
    assert_eq!(limit_type(&inbound(&fg).unwrap_err()), SystemLimitType::Rt);
    clock.advance(Duration::from_secs(1));
    assert!(inbound(&fg).is_ok(), "the window slid past the slow calls");
}

#[test]
fn load_blocks_only_when_bbr_says_the_process_is_full() {
    let (clock, probe, fg) = engine();
    load(&fg, r#"[{"highestSystemLoad":2.0}]"#);
    probe.set_load_average(Some(5.0));
    // No completions yet: Sentinel floors the largest bucket's successes and the minimum RT at 1, so
    // maxSuccessQps 2 × minRt 5000 (the statistics' maximum) / 1000 = room for 10.
    let node = fg.inbound_node();
    assert_eq!((node.max_success_qps(), node.min_rt()), (2.0, 5000.0));
    let held: Vec<_> = (0..11).map(|_| inbound(&fg).unwrap()).collect();
    assert_eq!(held.len(), 11, "10 in flight is not above 10");
    assert_eq!(
        limit_type(&inbound(&fg).unwrap_err()),
        SystemLimitType::Load
    );
    probe.set_load_average(Some(2.0));
    let c = inbound(&fg).expect("2.0 is not above 2.0");
    probe.set_load_average(None);
    let d = inbound(&fg).expect("an unavailable load does not block");
    drop((held, c, d));

    // 5000 calls of under 1 ms in one bucket: minRt is floored at 1 ms, not 0 (which left room for
    // nothing): 10,000 × 1 / 1000 = room for 10.
    clock.advance(Duration::from_secs(2));
    probe.set_load_average(Some(0.5));
    for _ in 0..5000 {
        drop(inbound(&fg).unwrap());
    }
    assert_eq!((node.max_success_qps(), node.min_rt()), (10_000.0, 1.0));
    probe.set_load_average(Some(5.0));
    let held: Vec<_> = (0..11).map(|_| inbound(&fg).unwrap()).collect();
    assert_eq!(
        limit_type(&inbound(&fg).unwrap_err()),
        SystemLimitType::Load
    );
    drop(held);
    probe.set_load_average(Some(0.5));

    // 10 completions of 100 ms in one 500 ms bucket: maxSuccessQps 20, minRt 100 → room for 2.
    clock.advance(Duration::from_secs(2));
    probe.set_load_average(Some(0.5));
    let batch: Vec<_> = (0..10).map(|_| inbound(&fg).unwrap()).collect();
    clock.advance(Duration::from_millis(100));
    drop(batch);
    let node = fg.inbound_node();
    assert_eq!((node.max_success_qps(), node.min_rt()), (20.0, 100.0));
    probe.set_load_average(Some(5.0));
    let held: Vec<_> = (0..3).map(|_| inbound(&fg).unwrap()).collect();
    assert_eq!(held.len(), 3, "2 in flight is not above 20 × 100 / 1000");
    assert_eq!(
        limit_type(&inbound(&fg).unwrap_err()),
        SystemLimitType::Load
    );
}

#[test]
fn cpu_blocks_strictly_above_the_threshold() {
    let (_clock, probe, fg) = engine();
    load(&fg, r#"[{"highestCpuUsage":0.8}]"#);
    assert!(inbound(&fg).is_ok(), "unavailable: no block");
    probe.set_cpu_usage(Some(0.8));
    assert!(inbound(&fg).is_ok(), "0.8 is not above 0.8");
    probe.set_cpu_usage(Some(0.81));
    let block = inbound(&fg).unwrap_err();
    assert_eq!(limit_type(&block), SystemLimitType::Cpu);
    assert_eq!(block.rule_as::<SystemLimit>().unwrap().threshold, 0.8);
    assert!(fg.entry("R").enter().is_ok(), "outbound");
    probe.set_cpu_usage(None);
    assert!(inbound(&fg).is_ok());
}

#[test]
fn dimensions_are_checked_in_sentinels_order() {
    let (_clock, probe, fg) = engine();
    probe.set_cpu_usage(Some(1.0));
    probe.set_load_average(Some(100.0));
    // Past BBR's room without completions (2 × 5000 / 1000 = 10 in flight).
    let held: Vec<_> = (0..11).map(|_| inbound(&fg).unwrap()).collect();
    let cases = [
        (
            r#"[{"qps":0,"maxThread":0,"highestCpuUsage":0}]"#,
            SystemLimitType::Qps,
        ),
        (
            r#"[{"maxThread":0,"highestSystemLoad":1,"highestCpuUsage":0}]"#,
            SystemLimitType::Thread,
        ),
        (
            r#"[{"highestSystemLoad":1,"highestCpuUsage":0}]"#,
            SystemLimitType::Load,
        ),
        (r#"[{"highestCpuUsage":0.5}]"#, SystemLimitType::Cpu),
    ];
    for (json, expected) in cases {
        load(&fg, json);
        assert_eq!(limit_type(&inbound(&fg).unwrap_err()), expected, "{json}");
    }
    drop(held);
}

#[test]
fn rules_merge_by_minimum_and_no_rule_turns_protection_off() {
    let (_clock, probe, fg) = engine();
    load(
        &fg,
        r#"[{"qps":100,"maxThread":8},{"qps":50,"highestCpuUsage":0.9,"avgRt":-1}]"#,
    );
    let status = fg.system_status();
    assert_eq!(
        status.thresholds,
        SystemThresholds {
            highest_system_load: None,
            highest_cpu_usage: Some(0.9),
            qps: Some(50.0),
            avg_rt: None,
            max_thread: Some(8),
        }
    );
    assert_eq!((status.load_average, status.cpu_usage), (None, None));
    probe.set_load_average(Some(0.3));
    probe.set_cpu_usage(Some(0.2));
    let status = fg.system_status();
    assert_eq!(
        (status.load_average, status.cpu_usage),
        (Some(0.3), Some(0.2))
    );

    // Sentinel lets a trailing rule that sets nothing switch protection off. Such a rule is
    // refused here, and the rules in force stay.
    load(&fg, r#"[{"qps":0}]"#);
    for rules in [
        r#"[{"qps":0},{}]"#,
        r#"[{"qps":0},{"highestSystemLoad":-1,"highestCpuUsage":-1,"qps":-1,"avgRt":-1,"maxThread":-1}]"#,
    ] {
        assert!(fg.load_rules_json(RuleType::System, rules).is_err());
        assert_eq!(limit_type(&inbound(&fg).unwrap_err()), SystemLimitType::Qps);
    }
    // An empty list turns it off.
    load(&fg, "[]");
    assert!(inbound(&fg).is_ok());
    assert!(fg.system_status().thresholds.is_empty());
}

#[test]
fn an_invalid_rule_rejects_the_list_instead_of_disabling_the_valid_ones() {
    // Sentinel drops the CPU rule above 1, and the last rule's enabled flag then turns the valid load
    // rule off; here the invalid rule refuses the list and the load rule stays in force.
    let (_clock, probe, fg) = engine();
    load(&fg, r#"[{"highestSystemLoad":1.2}]"#);
    let err = fg
        .load_rules_json(
            RuleType::System,
            r#"[{"highestSystemLoad":1.2},{"highestCpuUsage":2.7}]"#,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "rule 1: `highestCpuUsage` must be a ratio between 0 and 1, got 2.7"
    );
    probe.set_load_average(Some(3.0));
    let held: Vec<_> = (0..11).map(|_| inbound(&fg).unwrap()).collect();
    assert_eq!(
        limit_type(&inbound(&fg).unwrap_err()),
        SystemLimitType::Load,
        "the load rule stays in force"
    );
    drop(held);
}

#[test]
fn json_round_trips_the_rules_as_loaded() {
    let (clock, probe, fg) = engine();
    load(
        &fg,
        r#"[{"id":1,"qps":20.5},{"highestSystemLoad":4,"avgRt":200,"maxThread":-1,"resource":"ignored"}]"#,
    );
    let json = fg.rules_json(RuleType::System);
    assert_eq!(
        json,
        r#"[{"avgRt":-1,"highestCpuUsage":-1.0,"highestSystemLoad":-1.0,"id":1,"maxThread":-1,"qps":20.5},{"avgRt":200,"highestCpuUsage":-1.0,"highestSystemLoad":4.0,"maxThread":-1,"qps":-1.0}]"#
    );
    let other = Floodgate::builder()
        .clock(clock)
        .system_probe(probe)
        .build();
    other.load_rules_json(RuleType::System, &json).unwrap();
    assert_eq!(other.system_rules(), fg.system_rules());
    assert_eq!(
        fg.system_rules(),
        [
            SystemRule::new().id(1).qps(20.5),
            SystemRule::new().highest_system_load(4.0).avg_rt(200),
        ]
    );
}

#[test]
fn typed_rules_load_like_json() {
    let (_clock, _probe, fg) = engine();
    fg.load_system_rules([SystemRule::new().max_thread(1)])
        .unwrap();
    let held = inbound(&fg).unwrap();
    assert_eq!(
        limit_type(&inbound(&fg).unwrap_err()),
        SystemLimitType::Thread
    );
    drop(held);
    let err = fg
        .load_system_rules([SystemRule::new().qps(f64::NAN)])
        .unwrap_err();
    assert!(matches!(err, RuleError::Invalid { index: 0, ref field, .. } if field == "qps"));
    assert_eq!(fg.system_rules(), [SystemRule::new().max_thread(1)]);
}

#[test]
fn the_block_log_names_the_dimension() {
    let (clock, _probe, fg) = engine();
    load(&fg, r#"[{"qps":1}]"#);
    burst(&fg, 3);
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        fg.block_log(),
        ["2023-11-14 22:13:20|1|R,SystemBlockException,qps,,|2,0"]
    );
}

/// A probe that counts how often the engine asks it to start.
#[derive(Debug, Default)]
struct CountingProbe {
    starts: Arc<AtomicUsize>,
}

impl SystemProbe for CountingProbe {
    fn load_average(&self) -> Option<f64> {
        Some(1.0)
    }

    fn cpu_usage(&self) -> Option<f64> {
        Some(0.5)
    }

    fn start(&self) {
        self.starts.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn the_probe_starts_when_a_load_or_cpu_threshold_comes_into_force() {
    let starts = Arc::new(AtomicUsize::new(0));
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .system_probe(CountingProbe {
            starts: starts.clone(),
        })
        .build();
    load(&fg, r#"[{"qps":10,"avgRt":5,"maxThread":3}]"#);
    assert_eq!(
        starts.load(Ordering::Relaxed),
        0,
        "no dimension reads the probe"
    );
    load(&fg, r#"[{"highestCpuUsage":0.9}]"#);
    assert_eq!(starts.load(Ordering::Relaxed), 1);
    load(&fg, r#"[{"highestSystemLoad":3}]"#);
    assert_eq!(starts.load(Ordering::Relaxed), 2);
    let status = fg.system_status();
    assert_eq!(
        starts.load(Ordering::Relaxed),
        3,
        "reading the status starts it too"
    );
    assert_eq!(
        (status.load_average, status.cpu_usage),
        (Some(1.0), Some(0.5))
    );
}

#[test]
fn every_validation_error_names_the_rule_and_field_and_changes_nothing() {
    let (_clock, _probe, fg) = engine();
    load(&fg, r#"[{"qps":5}]"#);
    let cases: &[(&str, &str)] = &[
        (
            r#"[{"qps":-2}]"#,
            "rule 0: `qps` must be a finite number ≥ 0, or -1 for unset, got -2",
        ),
        (
            r#"[{"qps":5},{"highestSystemLoad":-0.9}]"#,
            "rule 1: `highestSystemLoad` must be a finite number ≥ 0, or -1 for unset, got -0.9",
        ),
        (
            r#"[{"highestCpuUsage":-0.5}]"#,
            "rule 0: `highestCpuUsage` must be a finite number ≥ 0, or -1 for unset, got -0.5",
        ),
        (
            r#"[{"highestCpuUsage":1.5}]"#,
            "rule 0: `highestCpuUsage` must be a ratio between 0 and 1, got 1.5",
        ),
        (
            r#"[{"avgRt":-5}]"#,
            "rule 0: `avgRt` must be ≥ 0, or -1 for unset, got -5",
        ),
        (
            r#"[{"maxThread":-2}]"#,
            "rule 0: `maxThread` must be ≥ 0, or -1 for unset, got -2",
        ),
        (
            r#"[{"avgRt":2.5}]"#,
            "rule 0: `avgRt` must be a whole number, got 2.5",
        ),
        (
            r#"[{"maxThread":"10"}]"#,
            "rule 0: `maxThread` must be a whole number, got a string",
        ),
        (
            r#"[{"qps":"10"}]"#,
            "rule 0: `qps` must be a number, got a string",
        ),
        (
            r#"[{"highestSystemLoad":true}]"#,
            "rule 0: `highestSystemLoad` must be a number, got a boolean",
        ),
        (r#"[5]"#, "rule 0: `(rule)` must be a JSON object"),
        (r#"{"qps":1}"#, "rules must be a JSON array of objects"),
        (r#"[{"qps":1"#, "invalid JSON"),
    ];
    for (json, expected) in cases {
        let err = fg.load_rules_json(RuleType::System, json).unwrap_err();
        assert!(
            err.to_string().starts_with(expected),
            "{json}: got `{err}`, expected `{expected}`"
        );
        assert_eq!(
            fg.system_rules(),
            [SystemRule::new().qps(5.0)],
            "{json}: the rules in force stay"
        );
    }
    for (rule, field) in [
        (
            SystemRule::new().highest_system_load(f64::INFINITY),
            "highestSystemLoad",
        ),
        (
            SystemRule::new().highest_cpu_usage(f64::NAN),
            "highestCpuUsage",
        ),
        (SystemRule::new().qps(-1.0), "qps"),
    ] {
        let err = fg.load_system_rules([rule]).unwrap_err();
        assert!(
            matches!(err, RuleError::Invalid { index: 0, field: ref f, .. } if f == field),
            "{err}"
        );
    }
    assert_eq!(burst(&fg, 7), 5, "the rule in force still limits");
}
