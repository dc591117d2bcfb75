//! Circuit breaking end to end on a ManualClock: the three breaker kinds with the numbers of Sentinel's
//! own breaker tests, probe reservation (a probe blocked later in the chain is released), duplicate
//! rules (each breaker checked once per request), probes that never exit (timed out), error ratio 1.0,
//! default and regex rules, reloads, observers and validation.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use floodgate_core::slot::{Hooks, Slot, SlotContext};
use floodgate_core::{
    BlockError, BlockKind, BreakerState, BreakerStateChange, DegradeGrade, DegradeRule, Floodgate,
    FlowRule, ManualClock, RuleError, RuleType,
};

use BreakerState::{Closed, HalfOpen, Open};

/// A multiple of 5 s, 20 s and 25 s: every statistics window of the scenarios starts here.
const T0: u64 = 1_700_000_000_000;

#[derive(Debug, thiserror::Error)]
#[error("downstream failed")]
struct Boom;

fn engine() -> (ManualClock, Floodgate) {
    let clock = ManualClock::new(T0);
    (clock.clone(), Floodgate::builder().clock(clock).build())
}

fn load(fg: &Floodgate, json: &str) {
    fg.load_rules_json(RuleType::Degrade, json)
        .expect("valid rules");
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Sentinel's `entryAndSleepFor`: enter, let `took` ms pass, exit. `false` if blocked (time then does
/// not move).
fn call(clock: &ManualClock, fg: &Floodgate, resource: &str, took: u64) -> bool {
    call_err(clock, fg, resource, false, took)
}

/// Sentinel's `entryWithErrorIfPresent`: enter, trace an error if asked, let `took` ms pass, exit.
fn call_err(clock: &ManualClock, fg: &Floodgate, resource: &str, error: bool, took: u64) -> bool {
    match fg.entry(resource).enter() {
        Ok(entry) => {
            if error {
                entry.trace(&Boom);
            }
            clock.advance(ms(took));
            drop(entry);
            true
        }
        Err(block) => {
            assert_eq!(block.kind(), BlockKind::Degrade, "{block:?}");
            false
        }
    }
}

/// Records every state change as `(previous, next, snapshot)`.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<BreakerStateChange>>>);

impl Events {
    fn watch(fg: &Floodgate) -> Self {
        let events = Events::default();
        let sink = events.0.clone();
        fg.add_breaker_observer("test", move |e| sink.lock().unwrap().push(e.clone()));
        events
    }

    fn take_full(&self) -> Vec<BreakerStateChange> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }

    fn take(&self) -> Vec<(BreakerState, BreakerState, Option<f64>)> {
        self.take_full()
            .into_iter()
            .map(|e| (e.previous, e.next, e.snapshot))
            .collect()
    }
}

fn states(fg: &Floodgate, resource: &str) -> Vec<BreakerState> {
    fg.circuit_breakers()
        .into_iter()
        .filter(|b| &*b.resource == resource)
        .map(|b| b.state)
        .collect()
}

/// Sentinel's `ResponseTimeCircuitBreakerTest`, then the probe's success; a second
/// request while the probe is in flight is blocked.
#[test]
fn slow_ratio_breaker_lifecycle() {
    let (clock, fg) = engine();
    let events = Events::watch(&fg);
    load(
        &fg,
        r#"[{"resource":"R","grade":0,"count":10,"minRequestAmount":3,"slowRatioThreshold":1.0,
             "statIntervalMs":5000,"timeWindow":5}]"#,
    );
    assert!(call(&clock, &fg, "R", 20));
    assert!(call(&clock, &fg, "R", 20));
    assert_eq!(
        states(&fg, "R"),
        [Closed],
        "2 calls: below minRequestAmount"
    );
    assert!(call(&clock, &fg, "R", 20));
    assert_eq!(
        states(&fg, "R"),
        [Open],
        "3 of 3 slow: ratio 1.0 = threshold 1.0"
    );
    assert_eq!(events.take(), [(Closed, Open, Some(1.0))]);
    let block = fg.entry("R").enter().unwrap_err();
    assert_eq!(block.kind(), BlockKind::Degrade);
    assert_eq!(block.rule_as::<DegradeRule>().map(|r| r.count), Some(10.0));
    clock.advance(Duration::from_secs(1));
    assert!(!call(&clock, &fg, "R", 20));
    // Opened at T0 + 60: the retry time T0 + 5060 is inclusive.
    clock.set(T0 + 5059);
    assert!(!call(&clock, &fg, "R", 1));
    clock.set(T0 + 5060);
    let probe = fg.entry("R").enter().expect("the probe passes");
    assert_eq!(states(&fg, "R"), [HalfOpen]);
    assert_eq!(events.take(), [(Open, HalfOpen, None)]);
    assert!(
        !call(&clock, &fg, "R", 1),
        "a concurrent request during HALF_OPEN is blocked"
    );
    clock.advance(ms(10));
    drop(probe); // 10 ms is not slow: the breaker closes and forgets the window
    assert_eq!(events.take(), [(HalfOpen, Closed, None)]);
    let status = &fg.circuit_breakers()[0];
    assert_eq!((status.state, status.total, status.bad), (Closed, 0, 0));
    assert!(call(&clock, &fg, "R", 20));
    assert!(call(&clock, &fg, "R", 20));
    assert_eq!(states(&fg, "R"), [Closed]);
}

/// Sentinel's `CircuitBreakingIntegrationTest.testSlowRequestMode` for a rule on the
/// resource, and the same sequence for a default rule (`testSlowRequestModeUseDefaultRule`).
fn slow_ratio_integration(rule_resource: &str) {
    let (clock, fg) = engine();
    let events = Events::watch(&fg);
    let res = "CircuitBreakingIntegrationTest_testSlowRequestMode";
    load(
        &fg,
        &format!(
            r#"[{{"resource":"{rule_resource}","grade":0,"count":50,"slowRatioThreshold":0.8,
                  "minRequestAmount":10,"statIntervalMs":20000,"timeWindow":5}}]"#
        ),
    );
    let (slow, fast) = (60, 35);
    for i in 0..10 {
        assert!(call(&clock, &fg, res, if i < 7 { slow } else { fast }));
    }
    // 7 of 10 slow (70 %), then slow calls: 8/11, 9/12, 10/13, 11/14, 12/15 = 80 % (not above 0.8).
    for _ in 0..5 {
        assert!(call(&clock, &fg, res, slow));
    }
    assert_eq!(states(&fg, res), [Closed], "12/15 = 80 % does not trip");
    assert!(call(&clock, &fg, res, slow));
    assert_eq!(states(&fg, res), [Open], "13/16 = 81.25 % trips");
    assert_eq!(events.take(), [(Closed, Open, Some(13.0 / 16.0))]);
    assert!(!call(&clock, &fg, res, 1));
    clock.advance(Duration::from_secs(1));
    assert!(!call(&clock, &fg, res, 1));
    clock.advance(Duration::from_secs(5));
    // HALF_OPEN → OPEN: a slow probe.
    assert!(call(&clock, &fg, res, slow));
    assert_eq!(
        events.take(),
        [(Open, HalfOpen, None), (HalfOpen, Open, Some(1.0))]
    );
    clock.advance(Duration::from_secs(6));
    assert!(call(&clock, &fg, res, fast));
    assert_eq!(
        events.take(),
        [(Open, HalfOpen, None), (HalfOpen, Closed, None)]
    );
    assert!(call(&clock, &fg, res, slow), "closed now");
    assert_eq!(states(&fg, res), [Closed]);
}

#[test]
fn slow_ratio_integration_with_sentinels_numbers() {
    slow_ratio_integration("CircuitBreakingIntegrationTest_testSlowRequestMode");
}

#[test]
fn slow_ratio_integration_with_a_default_rule() {
    slow_ratio_integration("*");
}

/// Sentinel's `ExceptionCircuitBreakerTest.testRecordErrorOrSuccess`.
#[test]
fn error_ratio_breaker_lifecycle() {
    let (clock, fg) = engine();
    let events = Events::watch(&fg);
    fg.load_degrade_rules([DegradeRule::error_ratio("R", 0.2)
        .stat_interval_ms(20_000)
        .time_window(10)
        .min_request_amount(1)])
        .unwrap();
    assert!(call(&clock, &fg, "R", 10));
    assert!(
        call_err(&clock, &fg, "R", true, 7),
        "the erroring request itself passed"
    );
    assert_eq!(events.take(), [(Closed, Open, Some(0.5))], "1/2 > 0.2");
    assert!(!call_err(&clock, &fg, "R", true, 7));
    assert!(!call(&clock, &fg, "R", 100));
    clock.advance(ms(5000));
    assert!(!call(&clock, &fg, "R", 100));
    clock.advance(ms(5000));
    // Exactly timeWindow after opening: the probe passes, fails, and reopens the breaker.
    assert!(call_err(&clock, &fg, "R", true, 7));
    assert_eq!(
        events.take(),
        [(Open, HalfOpen, None), (HalfOpen, Open, Some(1.0))]
    );
    assert!(!call(&clock, &fg, "R", 100));
    assert!(!call(&clock, &fg, "R", 100));
    clock.advance(ms(10_000));
    let probe = fg.entry("R").enter().expect("a successful probe");
    assert!(
        !call(&clock, &fg, "R", 100),
        "a concurrent request during HALF_OPEN is blocked"
    );
    clock.advance(ms(100));
    drop(probe);
    assert_eq!(
        events.take(),
        [(Open, HalfOpen, None), (HalfOpen, Closed, None)]
    );
    // The window was reset: 6 successes, then 1 error in 7 (14 % ≤ 20 %), then a success.
    for _ in 0..6 {
        assert!(call(&clock, &fg, "R", 100));
    }
    assert!(call_err(&clock, &fg, "R", true, 7));
    assert!(call(&clock, &fg, "R", 100));
    assert_eq!(states(&fg, "R"), [Closed]);
    assert!(events.take().is_empty());
}

/// Sentinel's `CircuitBreakingIntegrationTest.testExceptionRatioMode`.
#[test]
fn error_ratio_integration_with_sentinels_numbers() {
    let (clock, fg) = engine();
    let events = Events::watch(&fg);
    let res = "CircuitBreakingIntegrationTest_testExceptionRatioMode";
    load(
        &fg,
        &format!(
            r#"[{{"resource":"{res}","grade":1,"count":0.5,"minRequestAmount":10,
                  "statIntervalMs":25000,"timeWindow":5}}]"#
        ),
    );
    for i in 0..9 {
        assert!(call_err(&clock, &fg, res, i < 6, 7));
    }
    assert_eq!(
        states(&fg, res),
        [Closed],
        "6 errors in 9 calls: below minRequestAmount"
    );
    assert!(call_err(&clock, &fg, res, true, 7));
    assert_eq!(states(&fg, res), [Open], "7/10 > 0.5");
    assert_eq!(events.take(), [(Closed, Open, Some(0.7))]);
    assert!(!call_err(&clock, &fg, res, false, 7));
    clock.advance(Duration::from_secs(2));
    assert!(!call_err(&clock, &fg, res, false, 7));
    clock.advance(Duration::from_secs(5));
    assert!(call_err(&clock, &fg, res, true, 7));
    assert_eq!(
        events.take(),
        [(Open, HalfOpen, None), (HalfOpen, Open, Some(1.0))]
    );
    clock.advance(Duration::from_secs(6));
    assert!(call_err(&clock, &fg, res, false, 7));
    assert_eq!(
        events.take(),
        [(Open, HalfOpen, None), (HalfOpen, Closed, None)]
    );
    assert!(call_err(&clock, &fg, res, true, 7), "closed now");
}

/// Sentinel's `testMultipleHalfOpenedBreakers`, with Floodgate's probe reservation: while the second
/// breaker is open, the first one's probe is reserved and released without a state change (Sentinel
/// flips it OPEN → HALF_OPEN → OPEN on every attempt and reports each flip).
#[test]
fn multiple_breakers_on_one_resource() {
    let (clock, fg) = engine();
    let events = Events::watch(&fg);
    let rule = |window| {
        DegradeRule::slow_ratio("R", 50.0, 0.8)
            .time_window(window)
            .stat_interval_ms(20_000)
            .min_request_amount(1)
    };
    fg.load_degrade_rules([rule(2), rule(4)]).unwrap();
    assert!(call(&clock, &fg, "R", 100));
    assert_eq!(states(&fg, "R"), [Open, Open]);
    assert_eq!(events.take().len(), 2);
    clock.advance(Duration::from_secs(3));
    for _ in 0..10 {
        let block = fg.entry("R").enter().unwrap_err();
        assert_eq!(
            block.rule_as::<DegradeRule>().map(|r| r.time_window),
            Some(4)
        );
    }
    assert_eq!(states(&fg, "R"), [Open, Open]);
    assert!(events.take().is_empty(), "no flapping, no events");
    let retry: Vec<Option<u64>> = fg
        .circuit_breakers()
        .iter()
        .map(|b| b.retry_at_ms)
        .collect();
    assert_eq!(
        retry,
        [Some(T0 + 2100), Some(T0 + 4100)],
        "retry times unchanged"
    );
    clock.advance(Duration::from_secs(3));
    for _ in 0..10 {
        assert!(call(&clock, &fg, "R", 1));
    }
    assert_eq!(states(&fg, "R"), [Closed, Closed]);
    let changes: Vec<(u32, BreakerState, BreakerState)> = events
        .take_full()
        .iter()
        .map(|e| (e.rule.time_window, e.previous, e.next))
        .collect();
    assert_eq!(
        changes,
        [
            (2, Open, HalfOpen),
            (4, Open, HalfOpen),
            (2, HalfOpen, Closed),
            (4, HalfOpen, Closed)
        ]
    );
}

#[test]
fn error_count_breaker_lifecycle() {
    let (clock, fg) = engine();
    let events = Events::watch(&fg);
    load(
        &fg,
        r#"[{"resource":"R","grade":2,"count":3,"minRequestAmount":5,"timeWindow":2}]"#,
    );
    for _ in 0..4 {
        assert!(call_err(&clock, &fg, "R", true, 1));
    }
    assert_eq!(states(&fg, "R"), [Closed], "4 errors > 3, but only 4 calls");
    // A successful call completes the fifth request of the window: 4 errors > 3 trips, so a success
    // can open an error-count breaker, as in Sentinel.
    assert!(call_err(&clock, &fg, "R", false, 1));
    assert_eq!(events.take(), [(Closed, Open, Some(4.0))]);
    clock.set(T0 + 5 + 1999);
    assert!(!call(&clock, &fg, "R", 1));
    clock.set(T0 + 5 + 2000);
    let probe = fg.entry("R").enter().expect("the probe");
    assert!(
        !call(&clock, &fg, "R", 0),
        "a concurrent request during HALF_OPEN is blocked"
    );
    probe.trace(&Boom);
    clock.advance(ms(1));
    drop(probe);
    assert_eq!(
        events.take(),
        [(Open, HalfOpen, None), (HalfOpen, Open, Some(1.0))]
    );
    clock.advance(ms(1999));
    assert!(!call(&clock, &fg, "R", 0));
    clock.advance(ms(1));
    assert!(call_err(&clock, &fg, "R", false, 1));
    assert_eq!(
        events.take(),
        [(Open, HalfOpen, None), (HalfOpen, Closed, None)]
    );
}

/// Exactly at the crossing, for each grade: one call below the threshold stays closed, the call that
/// crosses it opens.
#[test]
fn each_grade_trips_exactly_at_the_threshold_crossing() {
    let (clock, fg) = engine();
    fg.load_degrade_rules([
        DegradeRule::error_count("count", 2.0)
            .time_window(1)
            .min_request_amount(1),
        DegradeRule::error_ratio("ratio", 0.5)
            .time_window(1)
            .min_request_amount(4),
        DegradeRule::slow_ratio("slow", 100.0, 0.5)
            .time_window(1)
            .min_request_amount(4),
    ])
    .unwrap();
    assert!(call_err(&clock, &fg, "count", true, 0));
    assert!(call_err(&clock, &fg, "count", true, 0));
    assert_eq!(states(&fg, "count"), [Closed], "2 errors, not above 2");
    assert!(call_err(&clock, &fg, "count", true, 0));
    assert_eq!(states(&fg, "count"), [Open]);

    for error in [true, true, false, false] {
        assert!(call_err(&clock, &fg, "ratio", error, 0));
    }
    assert_eq!(states(&fg, "ratio"), [Closed], "2/4 = 0.5, not above");
    assert!(call_err(&clock, &fg, "ratio", true, 0));
    assert_eq!(states(&fg, "ratio"), [Open], "3/5 > 0.5");

    // Slow means RT > 100 ms: 100 ms is not slow, 101 ms is.
    for took in [101, 101, 100, 100] {
        assert!(call(&clock, &fg, "slow", took));
    }
    assert_eq!(states(&fg, "slow"), [Closed], "2/4 = 0.5, not above");
    assert!(call(&clock, &fg, "slow", 101));
    assert_eq!(states(&fg, "slow"), [Open], "3/5 > 0.5");
}

/// The statistics window is one tumbling bucket aligned to multiples of `statIntervalMs`: errors on
/// either side of a boundary are never judged together.
#[test]
fn statistics_windows_are_aligned_buckets() {
    let (clock, fg) = engine();
    fg.load_degrade_rules([DegradeRule::error_count("R", 2.0)
        .time_window(1)
        .min_request_amount(1)])
        .unwrap();
    clock.set(T0 + 998);
    assert!(call_err(&clock, &fg, "R", true, 1));
    assert!(call_err(&clock, &fg, "R", true, 1)); // completes at T0 + 1000: the next window
    assert_eq!(fg.circuit_breakers()[0].window_start_ms, T0 + 1000);
    assert_eq!(
        (fg.circuit_breakers()[0].total, fg.circuit_breakers()[0].bad),
        (1, 1)
    );
    assert!(call_err(&clock, &fg, "R", true, 1));
    assert_eq!(
        states(&fg, "R"),
        [Closed],
        "3 errors in 3 ms, but split 1 | 2"
    );
    assert!(call_err(&clock, &fg, "R", true, 1));
    assert_eq!(states(&fg, "R"), [Open], "3 errors in [T0+1000, T0+2000)");
}

/// An error-ratio threshold of 1.0 opens when every call in the window failed (Sentinel's strict `>`
/// never opens it).
#[test]
fn error_ratio_one_opens_when_every_call_failed() {
    let (clock, fg) = engine();
    fg.load_degrade_rules([DegradeRule::error_ratio("R", 1.0)
        .time_window(1)
        .min_request_amount(20)])
        .unwrap();
    assert!(call_err(&clock, &fg, "R", false, 0));
    for _ in 0..19 {
        assert!(call_err(&clock, &fg, "R", true, 0));
    }
    assert_eq!(states(&fg, "R"), [Closed], "19 of 20 failed");
    clock.advance(Duration::from_secs(1));
    for _ in 0..20 {
        assert!(call_err(&clock, &fg, "R", true, 0));
    }
    assert_eq!(states(&fg, "R"), [Open], "20 of 20 failed");
}

/// A user slot after the degrade slot that blocks while `closed` is set.
#[derive(Debug)]
struct Gate(Arc<AtomicBool>);

impl Slot for Gate {
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        if self.0.load(Ordering::SeqCst) {
            return Err(cx.block(BlockKind::Custom));
        }
        Ok(())
    }

    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }
}

/// A probe blocked by a later slot is released, so the breaker cannot be stuck HALF_OPEN: it stays
/// OPEN, nothing is reported, the retry time does not move, and the next admitted call probes.
#[test]
fn a_probe_blocked_by_a_later_slot_is_released() {
    let clock = ManualClock::new(T0);
    let closed = Arc::new(AtomicBool::new(false));
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .slot("gate", -500, Arc::new(Gate(closed.clone())))
        .build();
    let events = Events::watch(&fg);
    fg.load_degrade_rules([DegradeRule::error_count("R", 0.0)
        .time_window(1)
        .min_request_amount(1)])
        .unwrap();
    assert!(call_err(&clock, &fg, "R", true, 0));
    assert_eq!(events.take(), [(Closed, Open, Some(1.0))]);
    clock.advance(Duration::from_secs(1));
    closed.store(true, Ordering::SeqCst);
    for _ in 0..5 {
        let block = fg.entry("R").enter().unwrap_err();
        assert_eq!(
            block.kind(),
            BlockKind::Custom,
            "the probe reached the gate"
        );
    }
    assert_eq!(states(&fg, "R"), [Open]);
    assert_eq!(fg.circuit_breakers()[0].retry_at_ms, Some(T0 + 1000));
    assert!(events.take().is_empty());
    closed.store(false, Ordering::SeqCst);
    assert!(call(&clock, &fg, "R", 0));
    assert_eq!(
        events.take(),
        [(Open, HalfOpen, None), (HalfOpen, Closed, None)]
    );
}

/// Two identical rules drive two breakers (also after reloads), each checked once per request, and
/// they still recover (one breaker checked twice would block its own probe and stay open for good).
#[test]
fn duplicate_rules_still_recover() {
    let (clock, fg) = engine();
    let events = Events::watch(&fg);
    let json = r#"[{"resource":"R","grade":2,"count":0,"minRequestAmount":1,"timeWindow":1},
                   {"resource":"R","grade":2,"count":0,"minRequestAmount":1,"timeWindow":1}]"#;
    load(&fg, json);
    assert!(call_err(&clock, &fg, "R", true, 0));
    assert_eq!(states(&fg, "R"), [Open, Open]);
    events.take();
    // Reloads that keep both rules keep both breakers, distinct.
    load(&fg, json);
    load(
        &fg,
        r#"[{"resource":"R","grade":2,"count":0,"minRequestAmount":1,"timeWindow":1},
            {"resource":"R","grade":2,"count":0,"minRequestAmount":1,"timeWindow":1},
            {"resource":"other","grade":2,"count":0,"timeWindow":1}]"#,
    );
    assert_eq!(states(&fg, "R"), [Open, Open]);
    clock.advance(Duration::from_secs(1));
    assert!(
        call(&clock, &fg, "R", 0),
        "both breakers let the probe through"
    );
    assert_eq!(states(&fg, "R"), [Closed, Closed]);
    assert_eq!(
        events.take(),
        [
            (Open, HalfOpen, None),
            (Open, HalfOpen, None),
            (HalfOpen, Closed, None),
            (HalfOpen, Closed, None)
        ]
    );
    assert!(call(&clock, &fg, "R", 0));
}

/// A probe whose entry never exits does not hold the breaker HALF_OPEN: `timeWindow` after it
/// started, the next call counts it as failed. Its late exit, successful, closes the breaker (no newer
/// probe has started).
#[test]
fn a_probe_that_never_exits_times_out() {
    let (clock, fg) = engine();
    let events = Events::watch(&fg);
    fg.load_degrade_rules([DegradeRule::error_count("R", 0.0)
        .time_window(10)
        .min_request_amount(1)])
        .unwrap();
    assert!(call_err(&clock, &fg, "R", true, 0));
    clock.advance(Duration::from_secs(10));
    let stuck = fg.entry("R").enter().expect("the probe");
    assert_eq!(
        events.take(),
        [(Closed, Open, Some(1.0)), (Open, HalfOpen, None)]
    );
    clock.advance(ms(9_999));
    assert!(!call(&clock, &fg, "R", 0));
    assert_eq!(states(&fg, "R"), [HalfOpen]);
    assert_eq!(fg.circuit_breakers()[0].retry_at_ms, Some(T0 + 20_000));
    clock.advance(ms(1));
    assert!(
        !call(&clock, &fg, "R", 0),
        "this call finds the probe expired"
    );
    assert_eq!(states(&fg, "R"), [Open]);
    assert_eq!(events.take(), [(HalfOpen, Open, Some(1.0))]);
    assert_eq!(fg.circuit_breakers()[0].retry_at_ms, Some(T0 + 30_000));
    // The stuck probe finally exits, successfully: the resource answered after all.
    drop(stuck);
    assert_eq!(states(&fg, "R"), [Closed]);
    assert_eq!(events.take(), [(Open, Closed, None)]);
    assert!(call(&clock, &fg, "R", 0));
}

/// Calls that take longer than twice `timeWindow`, none failing: each probe times out, and the next
/// one is reserved before it succeeds. A timed-out probe's late success closed the breaker only if no
/// newer probe had been reserved, so the breaker cycled OPEN → HALF_OPEN → OPEN for good.
#[test]
fn probes_slower_than_twice_the_window_still_close_the_breaker() {
    let (clock, fg) = engine();
    fg.load_degrade_rules([DegradeRule::error_count("R", 0.0)
        .time_window(1)
        .min_request_amount(1)])
        .unwrap();
    assert!(call_err(&clock, &fg, "R", true, 0), "trips the breaker");
    let mut in_flight = Vec::new();
    let mut passed = Vec::new();
    // A call every 100 ms for 60 s, each taking 2.5 s.
    for step in 1..=600u64 {
        clock.advance(ms(100));
        let now = T0 + step * 100;
        in_flight.retain(|(end, _)| *end > now);
        if let Ok(entry) = fg.entry("R").enter() {
            passed.push(step);
            in_flight.push((now + 2_500, entry));
        }
    }
    drop(in_flight);
    assert_eq!(states(&fg, "R"), [Closed]);
    // Probes at 1 s and (the first timed out at 2 s) 3 s; the first one's late success at 3.5 s
    // closes the breaker, and every call passes from then on.
    assert_eq!(passed[..3], [10, 30, 35]);
    assert_eq!(passed.len(), 2 + (600 - 34));
}

/// A timed-out probe's late success does not close a breaker that a newer probe reopened by failing:
/// that failure is newer evidence.
#[test]
fn a_late_success_does_not_undo_a_newer_probes_failure() {
    let (clock, fg) = engine();
    let events = Events::watch(&fg);
    fg.load_degrade_rules([DegradeRule::error_count("R", 0.0)
        .time_window(10)
        .min_request_amount(1)])
        .unwrap();
    assert!(call_err(&clock, &fg, "R", true, 0));
    clock.advance(Duration::from_secs(10));
    let slow = fg.entry("R").enter().expect("the first probe");
    clock.advance(Duration::from_secs(10));
    assert!(!call(&clock, &fg, "R", 0), "the first probe timed out");
    clock.advance(Duration::from_secs(10));
    assert!(
        call_err(&clock, &fg, "R", true, 0),
        "a second probe, which fails"
    );
    events.take();
    drop(slow);
    assert_eq!(states(&fg, "R"), [Open]);
    assert_eq!(events.take(), []);
    // With only a timeout since the last failure, a late success closes it.
    clock.advance(Duration::from_secs(10));
    let slow = fg.entry("R").enter().expect("a third probe");
    clock.advance(Duration::from_secs(10));
    assert!(!call(&clock, &fg, "R", 0), "the third probe timed out");
    clock.advance(Duration::from_secs(10));
    let newer = fg.entry("R").enter().expect("a fourth probe");
    events.take();
    drop(slow);
    assert_eq!(states(&fg, "R"), [Closed]);
    assert_eq!(events.take(), [(HalfOpen, Closed, None)]);
    drop(newer);
    assert_eq!(states(&fg, "R"), [Closed]);
    assert_eq!(events.take(), []);
}

/// A timed-out probe that fails late, while a newer probe is in flight, leaves that probe's word alone:
/// the newer probe's success closes the breaker instead of being lost, which would leave the breaker
/// HALF_OPEN until that probe's deadline.
#[test]
fn a_late_failure_does_not_hide_a_newer_probes_success() {
    let (clock, fg) = engine();
    fg.load_degrade_rules([DegradeRule::error_count("R", 0.0)
        .time_window(10)
        .min_request_amount(1)])
        .unwrap();
    assert!(call_err(&clock, &fg, "R", true, 0));
    clock.advance(Duration::from_secs(10));
    let a = fg.entry("R").enter().expect("probe A");
    clock.advance(Duration::from_secs(10));
    assert!(!call(&clock, &fg, "R", 0), "A timed out");
    clock.advance(Duration::from_secs(10));
    let b = fg.entry("R").enter().expect("probe B");
    a.trace(&Boom);
    drop(a);
    assert_eq!(states(&fg, "R"), [HalfOpen], "B decides");
    clock.advance(ms(5));
    drop(b);
    assert_eq!(states(&fg, "R"), [Closed]);
}

/// A failure measured late, while a newer probe is in flight, still keeps an older probe's late success
/// from closing the breaker: only the newest probe's outcome decides.
#[test]
fn a_late_failure_keeps_an_older_late_success_from_closing() {
    let (clock, fg) = engine();
    fg.load_degrade_rules([DegradeRule::error_count("R", 0.0)
        .time_window(10)
        .min_request_amount(1)])
        .unwrap();
    assert!(call_err(&clock, &fg, "R", true, 0));
    clock.advance(Duration::from_secs(10));
    let a = fg.entry("R").enter().expect("probe A");
    clock.advance(Duration::from_secs(10));
    assert!(!call(&clock, &fg, "R", 0), "A timed out");
    clock.advance(Duration::from_secs(10));
    let b = fg.entry("R").enter().expect("probe B");
    clock.advance(Duration::from_secs(10));
    assert!(!call(&clock, &fg, "R", 0), "B timed out");
    clock.advance(Duration::from_secs(10));
    let c = fg.entry("R").enter().expect("probe C");
    b.trace(&Boom);
    drop(b);
    drop(a);
    assert_eq!(states(&fg, "R"), [HalfOpen], "C decides");
    drop(c);
    assert_eq!(states(&fg, "R"), [Closed], "C succeeded");
}

/// Degrade rules removed while a probe is in flight: its exit skipped the degrade slots, and the
/// dropped probe was reported as a failed one (HALF_OPEN → OPEN, "circuit breaker opened"). In the
/// built-in chain and in a chain with a custom slot alike.
#[test]
fn a_probe_in_flight_when_the_rules_go_completes_quietly() {
    for custom in [false, true] {
        let clock = ManualClock::new(T0);
        let mut builder = Floodgate::builder().clock(clock.clone());
        if custom {
            builder = builder.slot("noop", -500, Arc::new(Noop));
        }
        let fg = builder.build();
        let events = Events::watch(&fg);
        fg.load_degrade_rules([DegradeRule::error_count("R", 0.0)
            .time_window(10)
            .min_request_amount(1)])
            .unwrap();
        assert!(call_err(&clock, &fg, "R", true, 0));
        clock.advance(Duration::from_secs(10));
        let probe = fg.entry("R").enter().expect("the probe");
        events.take();
        fg.load_degrade_rules(Vec::<DegradeRule>::new()).unwrap();
        clock.advance(ms(5));
        drop(probe);
        let reported = events.take();
        assert!(
            !reported.iter().any(|(_, next, _)| *next == Open),
            "custom chain {custom}: {reported:?}"
        );
    }
}

/// A slot that does nothing (its presence makes the chain the generic one).
#[derive(Debug)]
struct Noop;

impl Slot for Noop {
    fn entry(&self, _cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        Ok(())
    }
}

/// Only one of many threads racing at the retry time becomes the probe.
#[test]
fn exactly_one_probe_among_racing_threads() {
    let (clock, fg) = engine();
    fg.load_degrade_rules([DegradeRule::error_count("R", 0.0)
        .time_window(1)
        .min_request_amount(1)])
        .unwrap();
    assert!(call_err(&clock, &fg, "R", true, 0));
    clock.advance(Duration::from_secs(1));
    let passed = AtomicUsize::new(0);
    let barrier = Barrier::new(8);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                barrier.wait();
                for _ in 0..100 {
                    if let Ok(entry) = fg.entry("R").enter() {
                        passed.fetch_add(1, Ordering::SeqCst);
                        std::mem::forget(entry); // the probe stays in flight
                    }
                }
            });
        }
    });
    assert_eq!(passed.load(Ordering::SeqCst), 1);
    assert_eq!(states(&fg, "R"), [HalfOpen]);
}

#[test]
fn an_unchanged_rule_keeps_its_state_across_reloads_a_changed_one_starts_closed() {
    let (clock, fg) = engine();
    let a = DegradeRule::error_count("A", 0.0)
        .time_window(10)
        .min_request_amount(1);
    let b = DegradeRule::error_count("B", 0.0)
        .time_window(10)
        .min_request_amount(1);
    fg.load_degrade_rules([a.clone(), b.clone()]).unwrap();
    assert!(call_err(&clock, &fg, "A", true, 0));
    assert!(call_err(&clock, &fg, "B", true, 0));
    assert!(call_err(&clock, &fg, "C", true, 0));
    // Unchanged (reordered, with an unrelated rule added): still open.
    let c = DegradeRule::error_count("C", 5.0).time_window(1);
    fg.load_degrade_rules([b.clone(), c, a.clone()]).unwrap();
    assert_eq!(states(&fg, "A"), [Open]);
    assert_eq!(states(&fg, "B"), [Open]);
    // Any changed field (here timeWindow) makes a fresh, closed breaker.
    fg.load_degrade_rules([a.clone(), b.clone().time_window(11)])
        .unwrap();
    assert_eq!(states(&fg, "A"), [Open]);
    assert_eq!(states(&fg, "B"), [Closed]);
    assert!(call(&clock, &fg, "B", 0));
    // Removing a rule and adding it back starts it closed too.
    fg.load_degrade_rules([b.clone()]).unwrap();
    assert!(call(&clock, &fg, "A", 0), "no rule on A");
    fg.load_degrade_rules([a, b]).unwrap();
    assert_eq!(states(&fg, "A"), [Closed]);
}

#[test]
fn default_rules_apply_per_resource_without_rules_of_their_own() {
    let (clock, fg) = engine();
    let events = Events::watch(&fg);
    load(
        &fg,
        r#"[{"resource":"*","grade":2,"count":0,"minRequestAmount":1,"timeWindow":5},
            {"resource":"own","grade":2,"count":5,"minRequestAmount":1,"timeWindow":5}]"#,
    );
    assert!(call_err(&clock, &fg, "a", true, 0));
    assert!(!call(&clock, &fg, "a", 0), "a's default breaker is open");
    assert!(
        call(&clock, &fg, "b", 0),
        "b has a default breaker of its own"
    );
    assert!(call_err(&clock, &fg, "own", true, 0));
    assert!(
        call_err(&clock, &fg, "own", true, 0),
        "own has its own rule: the default one does not apply"
    );
    let change = &events.take_full()[0];
    assert_eq!((&*change.resource, &*change.rule.resource), ("a", "*"));
    let listed: Vec<(String, String, BreakerState)> = fg
        .circuit_breakers()
        .into_iter()
        .map(|b| (b.resource.to_string(), b.rule.resource.clone(), b.state))
        .collect();
    assert_eq!(
        listed,
        [
            ("a".to_owned(), "*".to_owned(), Open),
            ("b".to_owned(), "*".to_owned(), Closed),
            ("own".to_owned(), "own".to_owned(), Closed)
        ]
    );
    // Reloading the default rule unchanged keeps a's breaker open; a block names the `*` rule.
    load(
        &fg,
        r#"[{"resource":"*","grade":2,"count":0,"minRequestAmount":1,"timeWindow":5}]"#,
    );
    let block = fg.entry("a").enter().unwrap_err();
    assert_eq!(
        block.rule_as::<DegradeRule>().map(|r| r.resource.as_str()),
        Some("*")
    );
    assert!(
        call_err(&clock, &fg, "own", true, 0),
        "own now falls under the default rule"
    );
    assert!(!call(&clock, &fg, "own", 0));
}

#[test]
fn each_breaker_slot_follows_its_own_kind_of_rules_across_reloads() {
    // The own-rules slot and the default-rules slot skip their work while no rule of their kind is in
    // force: switching between a default-only and an own-only list must switch which breakers apply.
    let (clock, fg) = engine();
    let trips_on_one_error = |resource: &str| {
        format!(
            r#"[{{"resource":"{resource}","grade":2,"count":0,"minRequestAmount":1,"timeWindow":5}}]"#
        )
    };
    load(&fg, &trips_on_one_error("*"));
    assert!(call_err(&clock, &fg, "a", true, 0));
    assert!(!call(&clock, &fg, "a", 0), "default breaker open");

    load(&fg, &trips_on_one_error("own"));
    assert!(
        call_err(&clock, &fg, "a", true, 0),
        "no default rule any more"
    );
    assert!(call_err(&clock, &fg, "a", true, 0));
    assert!(call_err(&clock, &fg, "own", true, 0));
    assert!(!call(&clock, &fg, "own", 0), "own breaker open");

    load(&fg, &trips_on_one_error("*"));
    assert!(
        call(&clock, &fg, "own", 0),
        "own rule gone: a fresh default breaker"
    );
    assert!(call_err(&clock, &fg, "own", true, 0));
    assert!(
        !call(&clock, &fg, "own", 0),
        "the default breaker applies to it now"
    );

    load(&fg, "[]");
    assert!(call_err(&clock, &fg, "own", true, 0));
    assert!(call(&clock, &fg, "own", 0), "no breaker at all");
}

#[test]
fn regex_rules_drive_a_breaker_per_matching_resource() {
    let (clock, fg) = engine();
    fg.load_degrade_rules([DegradeRule::error_count("^GET:/api/.*", 0.0)
        .regex()
        .time_window(5)
        .min_request_amount(1)])
        .unwrap();
    assert!(call_err(&clock, &fg, "GET:/api/a", true, 0));
    assert!(!call(&clock, &fg, "GET:/api/a", 0));
    assert!(call(&clock, &fg, "GET:/api/b", 0), "its own breaker");
    assert!(call_err(&clock, &fg, "POST:/api/a", true, 0));
    assert!(call(&clock, &fg, "POST:/api/a", 0), "no match");
    assert_eq!(states(&fg, "GET:/api/a"), [Open]);
    assert_eq!(states(&fg, "GET:/api/b"), [Closed]);
    assert_eq!(fg.circuit_breakers().len(), 2);
}

#[test]
fn breaker_status_reports_state_retry_time_and_window() {
    let (clock, fg) = engine();
    fg.load_degrade_rules([DegradeRule::slow_ratio("R", 10.0, 0.5)
        .time_window(3)
        .min_request_amount(4)
        .stat_interval_ms(10_000)])
        .unwrap();
    assert!(
        fg.circuit_breakers()[0].retry_at_ms.is_none(),
        "closed: no retry time"
    );
    assert!(call(&clock, &fg, "R", 20));
    assert!(call(&clock, &fg, "R", 5));
    let s = &fg.circuit_breakers()[0];
    assert_eq!(&*s.resource, "R");
    assert_eq!(s.rule.grade, DegradeGrade::SlowRequestRatio);
    assert_eq!(
        (s.state, s.window_start_ms, s.total, s.bad),
        (Closed, T0, 2, 1)
    );
    assert!(call(&clock, &fg, "R", 20));
    assert!(call(&clock, &fg, "R", 20));
    let s = &fg.circuit_breakers()[0];
    assert_eq!((s.state, s.retry_at_ms), (Open, Some(T0 + 65 + 3000)));
    assert_eq!((s.total, s.bad), (4, 3));
    assert_eq!(s.state.to_string(), "OPEN");
}

#[test]
fn observers_are_named_replaceable_and_removable() {
    let (clock, fg) = engine();
    let first = Arc::new(AtomicUsize::new(0));
    let second = Arc::new(AtomicUsize::new(0));
    let f = first.clone();
    fg.add_breaker_observer("o", move |_| {
        f.fetch_add(1, Ordering::SeqCst);
    });
    let s = second.clone();
    fg.add_breaker_observer("o", move |_| {
        s.fetch_add(1, Ordering::SeqCst);
    });
    fg.load_degrade_rules([DegradeRule::error_count("R", 0.0)
        .time_window(1)
        .min_request_amount(1)])
        .unwrap();
    assert!(call_err(&clock, &fg, "R", true, 0));
    assert_eq!(
        (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
        (0, 1)
    );
    assert!(fg.remove_breaker_observer("o"));
    assert!(!fg.remove_breaker_observer("o"));
    clock.advance(Duration::from_secs(1));
    assert!(call(&clock, &fg, "R", 0));
    assert_eq!(second.load(Ordering::SeqCst), 1);
    // A panicking observer neither fails the request nor silences the observers after it.
    fg.add_breaker_observer("panics", |_| panic!("observer bug"));
    let s = second.clone();
    fg.add_breaker_observer("counts", move |_| {
        s.fetch_add(1, Ordering::SeqCst);
    });
    assert!(call_err(&clock, &fg, "R", true, 0));
    assert_eq!(states(&fg, "R"), [Open]);
    assert_eq!(second.load(Ordering::SeqCst), 2);
}

#[test]
fn blocked_entries_are_not_counted_and_flow_blocks_come_first() {
    let (clock, fg) = engine();
    fg.load_flow_rules([FlowRule::new("R", 2.0)]).unwrap();
    fg.load_degrade_rules([DegradeRule::error_count("R", 5.0)
        .time_window(1)
        .min_request_amount(1)])
        .unwrap();
    for _ in 0..5 {
        call_err_any(&clock, &fg, "R", true);
    }
    let s = &fg.circuit_breakers()[0];
    assert_eq!((s.total, s.bad), (2, 2), "3 entries were blocked by flow");
    let slots = fg.slots();
    let at = |name: &str| slots.iter().position(|(n, _)| *n == name).unwrap();
    assert!(at("flow") < at("default_circuit_breaker"));
    assert!(at("default_circuit_breaker") < at("degrade"));
    assert!(slots.contains(&("degrade", -1000)));
    assert!(slots.contains(&("default_circuit_breaker", -1500)));
}

fn call_err_any(clock: &ManualClock, fg: &Floodgate, resource: &str, error: bool) {
    if let Ok(entry) = fg.entry(resource).enter() {
        if error {
            entry.trace(&Boom);
        }
        clock.advance(ms(1));
    }
}

#[test]
fn a_ruled_resource_past_the_cap_is_still_checked() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .max_resources(1)
        .build();
    fg.load_degrade_rules([
        DegradeRule::error_count("ruled", 0.0)
            .time_window(1)
            .min_request_amount(1),
        DegradeRule::error_count("*", 0.0)
            .time_window(1)
            .min_request_amount(1),
    ])
    .unwrap();
    assert!(call(&clock, &fg, "first", 0));
    assert!(call_err(&clock, &fg, "ruled", true, 0));
    assert!(!call(&clock, &fg, "ruled", 0), "checked past the cap");
    // A default rule does not lift the cap: names past it share one resource, and its breaker.
    assert!(call_err(&clock, &fg, "unruled", true, 0));
    assert!(
        !call(&clock, &fg, "unruled", 0),
        "the shared resource's default breaker opened"
    );
    assert!(
        !call(&clock, &fg, "another", 0),
        "shared by every name past the cap"
    );
    assert_eq!(fg.stats().resources, 3, "first, ruled and the shared one");
}

#[test]
fn json_round_trips_sentinel_names() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"id":7,"resource":"R","limitApp":"appA","grade":1,"count":0.5,"timeWindow":10,
             "minRequestAmount":20,"slowRatioThreshold":0.3,"statIntervalMs":2000,"regex":false,
             "app":"ignored","gmtCreate":1}]"#,
    );
    let rules = fg.degrade_rules();
    assert_eq!(rules[0].grade, DegradeGrade::ErrorRatio);
    assert_eq!(rules[0].id, Some(7));
    assert_eq!(rules[0].limit_app, "appA");
    let json = fg.rules_json(RuleType::Degrade);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        value,
        serde_json::json!([{"id":7,"resource":"R","limitApp":"appA","grade":1,"count":0.5,
            "timeWindow":10,"minRequestAmount":20,"slowRatioThreshold":0.3,"statIntervalMs":2000,
            "regex":false}])
    );
    let (_clock, other) = engine();
    load(&other, &json);
    assert_eq!(other.degrade_rules(), rules);
    // Defaults: grade 0, minRequestAmount 5, slowRatioThreshold 1.0, statIntervalMs 1000.
    load(
        &fg,
        r#"[{"resource":"R","count":100,"timeWindow":1,"limitApp":""}]"#,
    );
    let rule = &fg.degrade_rules()[0];
    assert_eq!(
        (
            rule.grade,
            rule.min_request_amount,
            rule.slow_ratio_threshold,
            rule.stat_interval_ms
        ),
        (DegradeGrade::SlowRequestRatio, 5, 1.0, 1000)
    );
    assert_eq!(rule.limit_app, "default", "blank limitApp reads as default");
    load(&fg, "[]");
    assert!(fg.degrade_rules().is_empty());
    assert_eq!(fg.rules_json(RuleType::Degrade), "[]");
}

#[test]
fn every_validation_error_names_the_rule_and_field_and_changes_nothing() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"kept","count":1,"timeWindow":1}]"#);
    let cases: &[(&str, &str)] = &[
        (
            r#"[{"count":1,"timeWindow":1}]"#,
            "rule 0: `resource` must not be blank",
        ),
        (
            r#"[{"resource":"  ","count":1,"timeWindow":1}]"#,
            "rule 0: `resource` must not be blank",
        ),
        (
            r#"[{"resource":"R","grade":3,"count":1,"timeWindow":1}]"#,
            "rule 0: `grade` must be 0 (slow request ratio), 1 (error ratio) or 2 (error count), got 3",
        ),
        (
            r#"[{"resource":"R","count":-1,"timeWindow":1}]"#,
            "rule 0: `count` must be a finite number ≥ 0, got -1",
        ),
        (
            r#"[{"resource":"R","grade":1,"count":1.5,"timeWindow":1}]"#,
            "rule 0: `count` must be an error ratio in [0, 1], got 1.5",
        ),
        (
            r#"[{"resource":"R","count":1}]"#,
            "rule 0: `timeWindow` must be > 0 (seconds the breaker stays open)",
        ),
        (
            r#"[{"resource":"R","count":1,"timeWindow":-1}]"#,
            "rule 0: `timeWindow` must be > 0, got -1",
        ),
        (
            r#"[{"resource":"R","count":1,"timeWindow":4294967296}]"#,
            "rule 0: `timeWindow` is out of range: 4294967296",
        ),
        (
            r#"[{"resource":"R","count":1,"timeWindow":1.5}]"#,
            "rule 0: `timeWindow` must be a whole number, got 1.5",
        ),
        (
            r#"[{"resource":"R","count":1,"timeWindow":1,"minRequestAmount":0}]"#,
            "rule 0: `minRequestAmount` must be > 0, got 0",
        ),
        (
            r#"[{"resource":"R","count":1,"timeWindow":1,"statIntervalMs":0}]"#,
            "rule 0: `statIntervalMs` must be > 0, got 0",
        ),
        (
            r#"[{"resource":"R","count":1,"timeWindow":1,"slowRatioThreshold":1.5}]"#,
            "rule 0: `slowRatioThreshold` must be in [0, 1], got 1.5",
        ),
        (
            r#"[{"resource":"R","count":1,"timeWindow":1,"slowRatioThreshold":-0.1}]"#,
            "rule 0: `slowRatioThreshold` must be in [0, 1], got -0.1",
        ),
        (
            r#"[{"resource":"R","count":"1","timeWindow":1}]"#,
            "rule 0: `count` must be a number, got a string",
        ),
        (
            r#"[{"resource":5,"count":1,"timeWindow":1}]"#,
            "rule 0: `resource` must be a string, got a number",
        ),
        (
            r#"[{"resource":"R","count":1,"timeWindow":1,"regex":"yes"}]"#,
            "rule 0: `regex` must be true or false, got a string",
        ),
        (
            r#"[{"resource":"R","count":1,"timeWindow":1},{"resource":"S","grade":2,"count":1,"timeWindow":0}]"#,
            "rule 1: `timeWindow` must be > 0, got 0",
        ),
        (r#"[1]"#, "rule 0: `(rule)` must be a JSON object"),
        (
            r#"{"resource":"R"}"#,
            "rules must be a JSON array of objects",
        ),
    ];
    for (json, message) in cases {
        let err = fg.load_rules_json(RuleType::Degrade, json).unwrap_err();
        assert_eq!(err.to_string(), *message, "{json}");
    }
    let err = fg
        .load_rules_json(
            RuleType::Degrade,
            r#"[{"resource":"(","regex":true,"count":1,"timeWindow":1}]"#,
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("rule 0: `resource` is not a valid regular expression"),
        "{err}"
    );
    assert!(matches!(
        fg.load_rules_json(RuleType::Degrade, "[").unwrap_err(),
        RuleError::Json(_)
    ));
    // Typed rules are validated the same way.
    let typed: &[(DegradeRule, &str)] = &[
        (
            DegradeRule::error_ratio("R", f64::NAN).time_window(1),
            "rule 0: `count` must be a finite number ≥ 0, got NaN",
        ),
        (
            DegradeRule::error_ratio("R", 0.5)
                .time_window(1)
                .limit_app(""),
            "rule 0: `limitApp` must not be blank",
        ),
        (
            DegradeRule::slow_ratio("R", 10.0, f64::NAN).time_window(1),
            "rule 0: `slowRatioThreshold` must be in [0, 1], got NaN",
        ),
        (
            DegradeRule::error_count("R", 1.0),
            "rule 0: `timeWindow` must be > 0 (seconds the breaker stays open)",
        ),
        (
            DegradeRule::error_count("R", 1.0)
                .time_window(1)
                .min_request_amount(0),
            "rule 0: `minRequestAmount` must be > 0",
        ),
        (
            DegradeRule::error_count("R", 1.0)
                .time_window(1)
                .stat_interval_ms(0),
            "rule 0: `statIntervalMs` must be > 0",
        ),
    ];
    for (rule, message) in typed {
        let err = fg.load_degrade_rules([rule.clone()]).unwrap_err();
        assert_eq!(err.to_string(), *message);
    }
    // A slow-ratio threshold outside [0, 1] only matters for grade 0 (as in Sentinel).
    fg.load_degrade_rules([DegradeRule::error_count("kept", 1.0)
        .time_window(1)
        .slow_ratio_threshold(7.0)])
        .unwrap();
    let kept: Vec<String> = fg.degrade_rules().into_iter().map(|r| r.resource).collect();
    assert_eq!(
        kept,
        ["kept"],
        "every rejected list left the rules in force"
    );
}

/// A breaker window of 1 ms idle for 2³¹ windows (≈ 24.9 days): its cells' tags wrap around the 32-bit
/// circle. The errors after the pause still count (they were dropped as stale, for as long again).
#[test]
fn a_breaker_still_counts_after_its_window_tags_wrap() {
    let (clock, fg) = engine();
    fg.load_degrade_rules([DegradeRule::error_count("R", 2.0)
        .time_window(10)
        .min_request_amount(1)
        .stat_interval_ms(1)])
        .unwrap();
    assert!(call(&clock, &fg, "R", 0));
    clock.advance(ms((1u64 << 31) + 5));
    for _ in 0..3 {
        let entry = fg.entry("R").enter().unwrap();
        entry.trace(&Boom);
    }
    assert_eq!(states(&fg, "R"), [BreakerState::Open]);
}

/// Rules pushed back as the engine dumped them are the same rules: floats survive the JSON round trip
/// exactly (serde_json's `float_roundtrip`; without it, about one fraction in ten came back a bit
/// off, so reloading an engine's own dump replaced an open breaker by a closed one).
#[test]
fn reloading_the_engines_own_dump_keeps_an_open_breaker_open() {
    let (clock, fg) = engine();
    fg.load_degrade_rules([DegradeRule::error_ratio("R", 1.0 / 11.0)
        .time_window(10)
        .min_request_amount(1)])
        .unwrap();
    assert!(call_err(&clock, &fg, "R", true, 1));
    assert_eq!(states(&fg, "R"), [Open]);
    let dumped = fg.rules_json(RuleType::Degrade);
    load(&fg, &dumped);
    assert_eq!(
        states(&fg, "R"),
        [Open],
        "the same rule: state carried over"
    );
    assert!(!call(&clock, &fg, "R", 1));
    assert_eq!(fg.rules_json(RuleType::Degrade), dumped);
    for a in 1..200u32 {
        for b in [3u32, 7, 11, 53, 97, 199] {
            let count = f64::from(a) / f64::from(b);
            let rule = DegradeRule::error_count("R", count).time_window(1);
            fg.load_degrade_rules([rule.clone()]).unwrap();
            let json = fg.rules_json(RuleType::Degrade);
            fg.load_rules_json(RuleType::Degrade, &json).unwrap();
            assert_eq!(fg.degrade_rules(), [rule], "{a}/{b}");
        }
    }
}

#[test]
fn a_rule_reloaded_with_only_its_presentation_changed_keeps_its_breakers() {
    // An open breaker must not close because a dashboard renumbered its rules, or changed `limitApp`,
    // which breakers ignore; a real change starts closed.
    for renamed in [
        DegradeRule::error_count("A", 0.0)
            .time_window(60)
            .min_request_amount(1)
            .id(7),
        DegradeRule::error_count("A", 0.0)
            .time_window(60)
            .min_request_amount(1)
            .limit_app("appB"),
        DegradeRule::error_count("A.*", 0.0)
            .time_window(60)
            .min_request_amount(1)
            .regex()
            .id(7),
    ] {
        let (clock, fg) = engine();
        let rule = DegradeRule {
            id: None,
            limit_app: "default".to_owned(),
            ..renamed.clone()
        };
        fg.load_degrade_rules([rule.clone()]).unwrap();
        let e = fg.entry("A").enter().unwrap();
        e.trace(&Boom);
        clock.advance(Duration::from_millis(1));
        drop(e);
        assert!(fg.entry("A").enter().is_err(), "tripped: {renamed:?}");
        fg.load_degrade_rules([renamed.clone()]).unwrap();
        assert!(fg.entry("A").enter().is_err(), "still open: {renamed:?}");
        assert_eq!(fg.degrade_rules(), std::slice::from_ref(&renamed));
        fg.load_degrade_rules([renamed.clone().time_window(61)])
            .unwrap();
        assert!(
            fg.entry("A").enter().is_ok(),
            "a changed rule starts closed"
        );
    }
}

#[test]
fn a_breaker_carried_over_with_its_probe_in_flight_probes_again() {
    // The probe reports to the old breaker: the new one must not stay half-open until the probe's
    // deadline and then reopen for a whole window.
    let rule = DegradeRule::error_count("A", 0.0)
        .time_window(10)
        .min_request_amount(1);
    let (clock, fg) = engine();
    fg.load_degrade_rules([rule.clone()]).unwrap();
    let e = fg.entry("A").enter().unwrap();
    e.trace(&Boom);
    clock.advance(Duration::from_millis(1));
    drop(e);
    assert!(fg.entry("A").enter().is_err(), "open");
    clock.advance(Duration::from_secs(10));
    let probe = fg.entry("A").enter().expect("the probe");
    fg.load_degrade_rules([rule.clone().id(7)]).unwrap();
    clock.advance(Duration::from_millis(5));
    drop(probe); // a good call, reported to the old breaker
    let again = fg
        .entry("A")
        .enter()
        .expect("the new breaker probes at once");
    drop(again);
    assert!(fg.entry("A").enter().is_ok(), "and closes on a good probe");
}
