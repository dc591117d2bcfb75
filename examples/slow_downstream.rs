//! A slow downstream guarded by a slow-request-ratio circuit breaker, on a simulated timeline.
//!
//! `GET:/recommendations` calls a downstream service 20 times a second. Calls take 40 ms, except from
//! 4 s to 10 s when the service slows to 600 ms. A call slower than 200 ms is *slow*; the breaker opens
//! when more than half of at least 5 calls completing in a second were slow, stays open 2 s, then lets
//! one probe through: a slow probe reopens it, a fast one closes it. While the probe is in flight every
//! other call is refused at once, instead of piling up behind the slow service.
//!
//! Time is a `ManualClock`: calls start and complete at their simulated instants (several are in flight
//! at once), so the 14 simulated seconds run instantly and print the same every time.
//! Run with `cargo run --example slow_downstream`.

use floodgate::{BreakerState, DegradeRule, Entry, Floodgate, ManualClock};

const T0: u64 = 1_700_000_000_000;
const RESOURCE: &str = "GET:/recommendations";
const SECONDS: u64 = 14;
/// One call every 50 ms.
const SPACING_MS: u64 = 50;

/// How long a call made `at_ms` after the start takes.
fn latency_ms(at_ms: u64) -> u64 {
    if (4_000..10_000).contains(&at_ms) {
        600
    } else {
        40
    }
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
                format!("slow ratio {:.2} > 0.5", e.snapshot.unwrap_or(0.0))
            }
            (_, BreakerState::HalfOpen) => "retry time reached: one probe let through".to_owned(),
            (BreakerState::HalfOpen, BreakerState::Open) => "the probe was slow".to_owned(),
            (_, BreakerState::Closed) => "the probe was fast".to_owned(),
            _ => String::new(),
        };
        println!(
            "    ↳ {:6.3} s  {:>9} → {:<9}  {why}",
            seconds(e.at_ms),
            e.previous.to_string(),
            e.next.to_string()
        );
    });
    fg.load_degrade_rules([DegradeRule::slow_ratio(RESOURCE, 200.0, 0.5)
        .min_request_amount(5)
        .time_window(2)])
        .expect("a valid rule");

    println!(
        "{RESOURCE}: slow-ratio breaker (> 50 % of ≥ 5 calls in 1 s slower than 200 ms → open for 2 s)"
    );
    println!("downstream: 40 ms, 600 ms from 4 s to 10 s, 40 ms again\n");
    println!("  second   passed  blocked  completed  avg RT  breaker");

    let mut sim = Simulation::default();
    for n in 0..SECONDS * 1000 / SPACING_MS {
        let now = T0 + n * SPACING_MS;
        sim.finish_until(&clock, now);
        if n > 0 && (now - T0) % 1000 == 0 {
            sim.report(&fg, now);
        }
        match fg.entry(RESOURCE).enter() {
            Ok(entry) => {
                sim.passed += 1;
                let took = latency_ms(now - T0);
                sim.in_flight.push((now + took, took, entry));
            }
            Err(_) => sim.blocked += 1,
        }
    }
    let end = T0 + SECONDS * 1000;
    sim.finish_until(&clock, end);
    sim.report(&fg, end);
}

/// Calls in flight, and the figures of the current second.
#[derive(Default)]
struct Simulation<'a> {
    /// `(completes at, latency, entry)`.
    in_flight: Vec<(u64, u64, Entry<'a>)>,
    passed: u32,
    blocked: u32,
    completed: u32,
    rt_sum: u64,
}

impl Simulation<'_> {
    /// Completes, in time order, every call due by `until` (dropping an entry records its completion
    /// and response time), then moves the clock to `until`.
    fn finish_until(&mut self, clock: &ManualClock, until: u64) {
        self.in_flight.sort_by_key(|(done, _, _)| *done);
        while self
            .in_flight
            .first()
            .is_some_and(|(done, _, _)| *done <= until)
        {
            let (done, took, entry) = self.in_flight.remove(0);
            clock.set(done);
            drop(entry);
            self.completed += 1;
            self.rt_sum += took;
        }
        clock.set(until);
    }

    fn report(&mut self, fg: &Floodgate, now: u64) {
        let state = fg
            .circuit_breakers()
            .first()
            .map_or(BreakerState::Closed, |b| b.state);
        let avg_rt = self
            .rt_sum
            .checked_div(u64::from(self.completed))
            .unwrap_or(0);
        let second = (now - T0) / 1000;
        println!(
            "  {:>2}–{:<2} s  {:>6}  {:>7}  {:>9}  {avg_rt:>3} ms  {state}",
            second - 1,
            second,
            self.passed,
            self.blocked,
            self.completed
        );
        (self.passed, self.blocked, self.completed, self.rt_sum) = (0, 0, 0, 0);
    }
}
