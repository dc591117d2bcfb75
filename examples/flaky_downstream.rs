//! A flaky downstream guarded by an error-ratio circuit breaker, on a simulated timeline.
//!
//! `GET:/inventory` calls a downstream service 20 times a second. The service is healthy for 4 s, then
//! fails 4 calls in 5 for 8 s, then recovers. The breaker opens when more than half of at least 5 calls
//! in a second failed, stays open 2 s, then lets one probe through: a failed probe reopens it, a good one
//! closes it. The program prints every state change as it happens and a line per second.
//!
//! Time is a `ManualClock`, so the 16 simulated seconds run instantly and print the same every time.
//! Run with `cargo run --example flaky_downstream`.

use floodgate::{BreakerState, DegradeRule, Entry, Floodgate, ManualClock};

const T0: u64 = 1_700_000_000_000;
const RESOURCE: &str = "GET:/inventory";
const SECONDS: u64 = 16;
/// One call every 50 ms.
const SPACING_MS: u64 = 50;
/// Each call takes 20 ms.
const LATENCY_MS: u64 = 20;

#[derive(Debug)]
struct DownstreamError;

impl std::fmt::Display for DownstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("inventory service failed")
    }
}

impl std::error::Error for DownstreamError {}

/// Whether call number `n`, made `at_ms` after the start, fails.
fn downstream_fails(at_ms: u64, n: u64) -> bool {
    (4_000..12_000).contains(&at_ms) && n % 5 != 0
}

fn seconds(at_ms: u64) -> f64 {
    at_ms.saturating_sub(T0) as f64 / 1000.0
}

fn main() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder().clock(clock.clone()).build();
    fg.add_breaker_observer("print", |e| {
        let why = match (e.previous, e.next) {
            (BreakerState::Closed, BreakerState::Open) => {
                format!("error ratio {:.2} > 0.5", e.snapshot.unwrap_or(0.0))
            }
            (_, BreakerState::HalfOpen) => "retry time reached: one probe let through".to_owned(),
            (BreakerState::HalfOpen, BreakerState::Open) => "the probe failed".to_owned(),
            (_, BreakerState::Closed) => "the probe succeeded".to_owned(),
            _ => String::new(),
        };
        println!(
            "    ↳ {:6.3} s  {:>9} → {:<9}  {why}",
            seconds(e.at_ms),
            e.previous.to_string(),
            e.next.to_string()
        );
    });
    fg.load_degrade_rules([DegradeRule::error_ratio(RESOURCE, 0.5)
        .min_request_amount(5)
        .time_window(2)])
        .expect("a valid rule");

    println!("{RESOURCE}: error-ratio breaker (> 50 % of ≥ 5 calls in 1 s fail → open for 2 s)");
    println!("downstream: healthy, failing 4 calls in 5 from 4 s to 12 s, healthy again\n");
    println!("  second   passed  blocked  failed  breaker");

    let mut in_flight: Vec<(u64, Entry<'_>)> = Vec::new();
    let (mut passed, mut blocked, mut failed) = (0, 0, 0);
    for n in 0..SECONDS * 1000 / SPACING_MS {
        let now = T0 + n * SPACING_MS;
        if n > 0 && (now - T0) % 1000 == 0 {
            finish_until(&clock, &mut in_flight, now);
            report(&fg, now, passed, blocked, failed);
            (passed, blocked, failed) = (0, 0, 0);
        }
        finish_until(&clock, &mut in_flight, now);
        clock.set(now);
        match fg.entry(RESOURCE).enter() {
            Ok(entry) => {
                passed += 1;
                if downstream_fails(now - T0, n) {
                    entry.trace(&DownstreamError);
                    failed += 1;
                }
                in_flight.push((now + LATENCY_MS, entry));
            }
            Err(_) => blocked += 1,
        }
    }
    let end = T0 + SECONDS * 1000;
    finish_until(&clock, &mut in_flight, end);
    report(&fg, end, passed, blocked, failed);
}

/// Completes, in time order, every call due by `until` (dropping an entry records its completion).
fn finish_until(clock: &ManualClock, in_flight: &mut Vec<(u64, Entry<'_>)>, until: u64) {
    in_flight.sort_by_key(|(done, _)| *done);
    while in_flight.first().is_some_and(|(done, _)| *done <= until) {
        let (done, entry) = in_flight.remove(0);
        clock.set(done);
        drop(entry);
    }
    clock.set(until);
}

fn report(fg: &Floodgate, now: u64, passed: u32, blocked: u32, failed: u32) {
    let state = fg
        .circuit_breakers()
        .first()
        .map_or(BreakerState::Closed, |b| b.state);
    let second = (now - T0) / 1000;
    println!(
        "  {:>2}–{:<2} s  {passed:>6}  {blocked:>7}  {failed:>6}  {state}",
        second - 1,
        second
    );
}
