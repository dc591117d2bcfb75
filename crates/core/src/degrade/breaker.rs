//! One circuit breaker: Sentinel's CLOSED → OPEN → HALF_OPEN → CLOSED/OPEN machine, with a reserved probe.
//!
//! ```text
//!            window judged bad                      now ≥ retryAt: reserve the probe
//!   CLOSED ─────────────────────▶ OPEN ───────────────────────────────────▶ (RESERVED)
//!     ▲        retryAt = now + timeWindow ▲  ▲                                 │     │
//!     │                                   │  │ a later slot blocked the probe: │     │ the whole chain
//!     │                                   │  └─ release, silently, retryAt ────┘     │ admitted it:
//!     │                                   │     unchanged                            ▼ commit
//!     │        probe succeeded            │  probe failed, or still running      HALF_OPEN
//!     └─────────────────────────────────  │◀─ timeWindow after it started ───────────┤
//!              (window reset)             │   (retryAt = now + timeWindow)           │
//!     ◀───────────────────────────────────┼──────────────────────────────────────────┘
//! ```
//!
//! * **CLOSED**: every call passes. Each completion (at exit) is counted in the breaker's [`Bucket`];
//!   once the window holds `minRequestAmount` calls its grade's test runs, and a window judged bad opens
//!   the breaker with `retryAt = now + timeWindow`.
//! * **OPEN**: calls are blocked while `now < retryAt`. The first call at `now ≥ retryAt` (inclusive)
//!   becomes the probe. Sentinel moves to HALF_OPEN right there and, if a later slot then blocks the
//!   probe, flips back to OPEN, reporting both changes each time (Sentinel #1638). Here the probe is only
//!   *reserved*: the breaker reports OPEN and blocks everyone else, and the reservation is committed
//!   (OPEN → HALF_OPEN is reported) only once the whole slot chain admitted the call. Blocked, it is
//!   released with nothing reported and `retryAt` unchanged, so the next call may probe at once.
//! * **HALF_OPEN**: every other call is blocked. The probe's completion decides: a good call closes the
//!   breaker and forgets the window; a bad one reopens it with a new `retryAt`. A probe that never
//!   completes (its entry leaked) cannot hold the breaker for ever: `timeWindow` after the probe started
//!   (or a slow-ratio rule's maximum RT, if longer), the next call counts it as failed and reopens the
//!   breaker (and an entry that is dropped exits, so a dropped probe completes normally). Should a
//!   probe that timed out complete after all, successfully, it closes the breaker (from OPEN, or from
//!   HALF_OPEN with a newer probe in flight), unless a failure was measured since it was reserved (a
//!   window judged bad, a probe that failed, late or not: the breaker counts them): calls slower than
//!   the timeout would otherwise keep it open for good under steady traffic (each probe's late success
//!   finding a newer probe in flight, with calls slower than twice `timeWindow`; the test
//!   `probes_slower_than_twice_the_window_still_close_the_breaker` holds it).
//!
//! The whole state is one `AtomicU64` (phase, a probe generation, and the time that matters in the
//! phase: `retryAt` when open, the probe's deadline when reserved or half-open), and every transition is
//! one compare-and-swap, so each one happens, and is reported to observers, exactly once. The generation
//! tells one probe from the next: a stale probe's completion or release finds a different word and does
//! only what a late success may do.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::bucket::Bucket;
use super::error_count::ErrorCount;
use super::error_ratio::ErrorRatio;
use super::observer::{BreakerState, BreakerStateChange, BreakerStatus, Observers};
use super::rule::{DegradeGrade, DegradeRule};
use super::slow_ratio::SlowRatio;

const TIME_BITS: u32 = 48;
const TIME_MAX: u64 = (1 << TIME_BITS) - 1;
const GEN_BITS: u32 = 14;
const GEN_MASK: u64 = (1 << GEN_BITS) - 1;
const PHASE_SHIFT: u32 = TIME_BITS + GEN_BITS;

/// Where the machine is (RESERVED is reported as OPEN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Closed = 0,
    Open = 1,
    Reserved = 2,
    HalfOpen = 3,
}

/// The unpacked state word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Word {
    phase: Phase,
    generation: u64,
    /// OPEN: retryAt. RESERVED / HALF_OPEN: the probe's deadline. CLOSED: 0. Epoch ms, saturated at 2⁴⁸.
    time: u64,
}

impl Word {
    const CLOSED: Word = Word {
        phase: Phase::Closed,
        generation: 0,
        time: 0,
    };

    fn pack(self) -> u64 {
        ((self.phase as u64) << PHASE_SHIFT)
            | ((self.generation & GEN_MASK) << TIME_BITS)
            | self.time.min(TIME_MAX)
    }

    fn unpack(word: u64) -> Word {
        let phase = match word >> PHASE_SHIFT {
            0 => Phase::Closed,
            1 => Phase::Open,
            2 => Phase::Reserved,
            _ => Phase::HalfOpen,
        };
        Word {
            phase,
            generation: (word >> TIME_BITS) & GEN_MASK,
            time: word & TIME_MAX,
        }
    }

    /// The same generation in another phase and time.
    fn with(self, phase: Phase, time: u64) -> Word {
        Word {
            phase,
            time,
            ..self
        }
    }

    /// CLOSED, keeping the probe generation (so that a stale token never matches a later probe's word).
    fn closed(self) -> Word {
        self.with(Phase::Closed, 0)
    }

    /// The state as reported (a reserved probe is still OPEN).
    fn reported(self) -> BreakerState {
        match self.phase {
            Phase::Closed => BreakerState::Closed,
            Phase::Open | Phase::Reserved => BreakerState::Open,
            Phase::HalfOpen => BreakerState::HalfOpen,
        }
    }
}

/// A grade's test.
#[derive(Debug, Clone, Copy)]
enum Test {
    SlowRatio(SlowRatio),
    ErrorRatio(ErrorRatio),
    ErrorCount(ErrorCount),
}

/// What a breaker says about a call.
#[derive(Debug)]
pub(crate) enum Admission {
    /// Closed: pass.
    Pass,
    /// The call is the probe (reserved; commit or release it).
    Probe(ProbeToken),
    /// Open, or a probe is in flight.
    Block,
}

/// Reports a transition to `tracing` (target `floodgate::breaker`): `warn` when a breaker opens, `info`
/// for half-open and closed. Transitions are rare (a cycle of open, half-open and closed or open again
/// is at most three per recovery timeout per breaker).
#[cold]
fn report_transition(
    resource: &str,
    rule: &DegradeRule,
    previous: BreakerState,
    next: BreakerState,
    snapshot: Option<f64>,
) {
    let grade = rule.grade.as_i32();
    if next == BreakerState::Open {
        tracing::warn!(
            target: "floodgate::breaker",
            resource,
            grade,
            threshold = rule.count,
            from = previous.as_str(),
            to = next.as_str(),
            snapshot,
            recovery_s = rule.time_window,
            "circuit breaker opened"
        );
    } else {
        tracing::info!(
            target: "floodgate::breaker",
            resource,
            grade,
            from = previous.as_str(),
            to = next.as_str(),
            "circuit breaker changed state"
        );
    }
}

/// One rule's breaker for one resource.
#[derive(Debug)]
pub(crate) struct Breaker {
    word: AtomicU64,
    bucket: Bucket,
    test: Test,
    recovery_ms: u64,
    /// How long a probe may run before the next call counts it as failed: the recovery timeout, or a
    /// slow-ratio rule's maximum RT if that is longer (a probe that is not slow is not failed).
    probe_timeout_ms: u64,
    min_request: u32,
    /// Failures measured (windows judged bad, probes that failed, late or not, or never completed): a
    /// timed-out probe's late success closes the breaker only if none was measured since it was
    /// reserved.
    failures: AtomicU64,
    pub(crate) rule: Arc<DegradeRule>,
    pub(crate) resource: Arc<str>,
    observers: Arc<Observers>,
}

impl Breaker {
    /// Takes over `from`'s state and counts: `self` replaces it for a rule reloaded with only its
    /// presentation changed (an open breaker stays open, so a dashboard that renumbers or re-sends its
    /// rules does not close it: `a_rule_reloaded_with_only_its_presentation_changed_keeps_its_breakers`).
    /// A probe in flight reports to `from`, so here it becomes an open state whose retry is due: the
    /// next call probes again (left half-open, the breaker would block everything until the probe's
    /// deadline, then reopen for a whole window:
    /// `a_breaker_carried_over_with_its_probe_in_flight_probes_again`).
    pub(crate) fn copy_state(&self, from: &Breaker) {
        let word = Word::unpack(from.word.load(Ordering::Acquire));
        let word = match word.phase {
            Phase::Reserved | Phase::HalfOpen => {
                word.with(Phase::Open, word.time.saturating_sub(from.probe_timeout_ms))
            }
            Phase::Closed | Phase::Open => word,
        };
        self.word.store(word.pack(), Ordering::Release);
        self.bucket.copy_state(&from.bucket);
    }

    /// A closed breaker for `rule` (valid) on `resource`.
    pub(crate) fn new(
        rule: Arc<DegradeRule>,
        resource: Arc<str>,
        observers: Arc<Observers>,
    ) -> Self {
        let test = match rule.grade {
            DegradeGrade::SlowRequestRatio => {
                Test::SlowRatio(SlowRatio::new(rule.count, rule.slow_ratio_threshold))
            }
            DegradeGrade::ErrorRatio => Test::ErrorRatio(ErrorRatio::new(rule.count)),
            DegradeGrade::ErrorCount => Test::ErrorCount(ErrorCount::new(rule.count)),
        };
        let probe_timeout_ms = match rule.grade {
            // `as` saturates: a huge maximum RT means a probe is never timed out early.
            DegradeGrade::SlowRequestRatio => rule.recovery_ms().max(rule.count.ceil() as u64),
            DegradeGrade::ErrorRatio | DegradeGrade::ErrorCount => rule.recovery_ms(),
        };
        Breaker {
            word: AtomicU64::new(Word::CLOSED.pack()),
            bucket: Bucket::new(rule.stat_interval_ms),
            test,
            recovery_ms: rule.recovery_ms(),
            probe_timeout_ms,
            min_request: rule.min_request_amount,
            failures: AtomicU64::new(0),
            rule,
            resource,
            observers,
        }
    }

    fn load(&self) -> (u64, Word) {
        let raw = self.word.load(Ordering::Acquire);
        (raw, Word::unpack(raw))
    }

    fn cas(&self, current: u64, next: Word) -> bool {
        self.word
            .compare_exchange(current, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    fn notify(
        &self,
        previous: BreakerState,
        next: BreakerState,
        snapshot: Option<f64>,
        at_ms: u64,
    ) {
        report_transition(&self.resource, &self.rule, previous, next, snapshot);
        self.observers.notify(|| BreakerStateChange {
            resource: self.resource.clone(),
            rule: self.rule.clone(),
            previous,
            next,
            snapshot,
            at_ms,
        });
    }

    /// The state as reported (a reserved probe is still OPEN).
    #[cfg(test)]
    pub(crate) fn state(&self) -> BreakerState {
        self.load().1.reported()
    }

    /// Whether a call may pass at `now` (the slot's `entry`).
    #[inline]
    pub(crate) fn try_pass(self: &Arc<Self>, now: u64) -> Admission {
        // Each round either decides or follows a transition another thread made; a few rounds suffice.
        for _ in 0..4 {
            let (raw, w) = self.load();
            match w.phase {
                Phase::Closed => return Admission::Pass,
                Phase::Open => {
                    if now < w.time {
                        return Admission::Block;
                    }
                    let reserved = Word {
                        phase: Phase::Reserved,
                        generation: w.generation.wrapping_add(1),
                        time: now.saturating_add(self.probe_timeout_ms),
                    };
                    if self.cas(raw, reserved) {
                        return Admission::Probe(ProbeToken {
                            breaker: self.clone(),
                            reserved: reserved.pack(),
                            retry_before: w.time,
                            failures: self.failures.load(Ordering::Acquire),
                        });
                    }
                }
                Phase::Reserved | Phase::HalfOpen => {
                    if now < w.time {
                        return Admission::Block;
                    }
                    // The probe outlived its deadline without completing.
                    if w.phase == Phase::HalfOpen {
                        let open = w.with(Phase::Open, now.saturating_add(self.recovery_ms));
                        if self.cas(raw, open) {
                            self.notify(BreakerState::HalfOpen, BreakerState::Open, Some(1.0), now);
                            return Admission::Block;
                        }
                    } else {
                        // A reservation that was never committed nor released: drop it silently and
                        // let this call probe instead.
                        self.cas(raw, w.with(Phase::Open, now));
                    }
                }
            }
        }
        Admission::Block
    }

    fn is_bad(&self, rt_ms: u32, error: bool) -> bool {
        match self.test {
            Test::SlowRatio(t) => t.is_bad(rt_ms),
            Test::ErrorRatio(_) | Test::ErrorCount(_) => error,
        }
    }

    /// A call that was not this breaker's probe completed (the slot's `exit`): count it and, if the
    /// breaker is closed, judge the window.
    #[inline]
    pub(crate) fn on_complete(&self, rt_ms: u32, error: bool, now: u64) {
        let bad = self.is_bad(rt_ms, error);
        self.bucket.add(now, bad);
        let (raw, w) = self.load();
        if w.phase != Phase::Closed {
            return;
        }
        let (total, bad) = self.bucket.read(now);
        if total < self.min_request {
            return;
        }
        let tripped = match self.test {
            Test::SlowRatio(t) => t.exceeded(bad, total),
            Test::ErrorRatio(t) => t.exceeded(bad, total),
            Test::ErrorCount(t) => t.exceeded(bad),
        };
        if let Some(value) = tripped {
            // Counted before the breaker opens, so that a late success that sees it open also sees
            // the count changed, and leaves it open
            // (`a_late_success_racing_a_bad_window_leaves_the_breaker_open`).
            self.failures.fetch_add(1, Ordering::AcqRel);
            let open = w.with(Phase::Open, now.saturating_add(self.recovery_ms));
            if self.cas(raw, open) {
                self.notify(BreakerState::Closed, BreakerState::Open, Some(value), now);
            }
        }
    }

    /// The breaker as it is at `now`.
    pub(crate) fn status(&self, now: u64) -> BreakerStatus {
        let w = self.load().1;
        let (state, retry_at_ms) = match w.phase {
            Phase::Closed => (BreakerState::Closed, None),
            Phase::Open => (BreakerState::Open, Some(w.time)),
            // Reserved: the probe is being admitted; its retry time had come when it was reserved.
            Phase::Reserved => (
                BreakerState::Open,
                Some(w.time.saturating_sub(self.probe_timeout_ms)),
            ),
            Phase::HalfOpen => (BreakerState::HalfOpen, Some(w.time)),
        };
        let (total, bad) = self.bucket.read(now);
        BreakerStatus {
            resource: self.resource.clone(),
            rule: self.rule.clone(),
            state,
            retry_at_ms,
            window_start_ms: self.bucket.window_start(now),
            total,
            bad,
        }
    }
}

/// A reserved probe. The slot attaches it to the entry: committed when the chain admits the entry,
/// completed when the entry exits; dropped while still reserved (the entry was blocked), it releases the
/// reservation.
#[derive(Debug)]
pub(crate) struct ProbeToken {
    breaker: Arc<Breaker>,
    /// The word that holds the reservation.
    reserved: u64,
    /// retryAt before the reservation (restored on release).
    retry_before: u64,
    /// The breaker's failures measured when the probe was reserved.
    failures: u64,
}

impl ProbeToken {
    pub(crate) fn breaker(&self) -> &Arc<Breaker> {
        &self.breaker
    }

    fn half_open(&self) -> Word {
        Word::unpack(self.reserved).with(Phase::HalfOpen, Word::unpack(self.reserved).time)
    }

    /// The whole chain admitted the probe: OPEN → HALF_OPEN.
    pub(crate) fn commit(&self, now: u64) {
        if self.breaker.cas(self.reserved, self.half_open()) {
            self.breaker
                .notify(BreakerState::Open, BreakerState::HalfOpen, None, now);
        }
    }

    /// The probe completed: count it, then close (a good call) or reopen (a bad one).
    pub(crate) fn complete(&self, rt_ms: u32, error: bool, now: u64) {
        let b = &*self.breaker;
        let bad = b.is_bad(rt_ms, error);
        b.bucket.add(now, bad);
        let half = self.half_open();
        if bad {
            // A failure measured, even late (a timed-out probe's): no older probe's late success may
            // close the breaker now. Counted apart from the word, which a newer probe's token must
            // find as it left it: a late failure that changed the word would make that probe's
            // success find a stale word and be lost
            // (`a_late_failure_does_not_hide_a_newer_probes_success`).
            b.failures.fetch_add(1, Ordering::AcqRel);
            let open = half.with(Phase::Open, now.saturating_add(b.recovery_ms));
            if b.cas(half.pack(), open) {
                b.notify(BreakerState::HalfOpen, BreakerState::Open, Some(1.0), now);
            }
        } else if b.cas(half.pack(), half.closed()) {
            b.bucket.reset();
            b.notify(BreakerState::HalfOpen, BreakerState::Closed, None, now);
        } else {
            // The probe outlived its timeout (a later call reopened the breaker) but succeeded. Unless
            // a failure was measured since, it shows the resource healthy, even with a newer probe in
            // flight (that probe's completion then finds the breaker closed): calls slower than the
            // timeout would otherwise reopen the breaker probe after probe, for good.
            let (raw, w) = b.load();
            if w.phase != Phase::Closed
                && b.failures.load(Ordering::Acquire) == self.failures
                && b.cas(raw, w.closed())
            {
                b.bucket.reset();
                b.notify(w.reported(), BreakerState::Closed, None, now);
            }
        }
    }
}

impl Drop for ProbeToken {
    fn drop(&mut self) {
        let b = &*self.breaker;
        let current = b.word.load(Ordering::Acquire);
        let reserved = Word::unpack(self.reserved);
        if current == self.reserved {
            // Never admitted: release silently, retryAt unchanged.
            b.cas(current, reserved.with(Phase::Open, self.retry_before));
        } else if current == self.half_open().pack() {
            // Admitted but never completed (no exit reached the breaker): a failed probe.
            let started = reserved.time.saturating_sub(b.probe_timeout_ms);
            b.failures.fetch_add(1, Ordering::AcqRel);
            if b.cas(current, reserved.with(Phase::Open, reserved.time)) {
                b.notify(
                    BreakerState::HalfOpen,
                    BreakerState::Open,
                    Some(1.0),
                    started,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(rule: DegradeRule) -> Arc<Breaker> {
        let resource: Arc<str> = Arc::from(rule.resource.as_str());
        Arc::new(Breaker::new(
            Arc::new(rule),
            resource,
            Arc::new(Observers::default()),
        ))
    }

    fn errors(min: u32) -> Arc<Breaker> {
        breaker(
            DegradeRule::error_count("R", 0.0)
                .time_window(10)
                .min_request_amount(min),
        )
    }

    #[test]
    fn the_word_round_trips() {
        for w in [
            Word::CLOSED,
            Word {
                phase: Phase::HalfOpen,
                generation: GEN_MASK,
                time: TIME_MAX,
            },
            Word {
                phase: Phase::Reserved,
                generation: 5,
                time: 1_700_000_000_000,
            },
        ] {
            assert_eq!(Word::unpack(w.pack()), w);
        }
        let huge = Word {
            phase: Phase::Open,
            generation: 1,
            time: u64::MAX,
        };
        assert_eq!(Word::unpack(huge.pack()).time, TIME_MAX, "saturates");
    }

    #[test]
    fn opens_then_probes_inclusively_then_closes() {
        let b = errors(1);
        assert!(matches!(b.try_pass(1000), Admission::Pass));
        b.on_complete(1, true, 1000);
        assert_eq!(b.state(), BreakerState::Open);
        assert!(matches!(b.try_pass(10_999), Admission::Block));
        let Admission::Probe(probe) = b.try_pass(11_000) else {
            panic!("retry is inclusive");
        };
        assert_eq!(b.state(), BreakerState::Open, "reserved is still open");
        assert!(matches!(b.try_pass(11_000), Admission::Block));
        probe.commit(11_000);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(matches!(b.try_pass(11_001), Admission::Block));
        probe.complete(1, false, 11_002);
        assert_eq!(b.state(), BreakerState::Closed);
        drop(probe);
        assert_eq!(
            b.state(),
            BreakerState::Closed,
            "a completed probe's drop does nothing"
        );
        assert_eq!(b.status(11_002).total, 0, "the window was reset");
    }

    #[test]
    fn a_released_reservation_keeps_the_retry_time() {
        let b = errors(1);
        b.on_complete(1, true, 1000);
        let Admission::Probe(probe) = b.try_pass(12_000) else {
            panic!("probe");
        };
        drop(probe);
        assert_eq!(b.status(12_000).retry_at_ms, Some(11_000));
        assert!(
            matches!(b.try_pass(12_000), Admission::Probe(_)),
            "the next call may probe at once"
        );
    }

    /// A window judged bad that opens the breaker while a timed-out probe's late success completes:
    /// the success must not close it again, which needs the failure counted before the breaker
    /// opens. The window between the two is narrow (a few hundred runs in 100,000 hit it), hence the
    /// many rounds.
    #[test]
    fn a_late_success_racing_a_bad_window_leaves_the_breaker_open() {
        use std::sync::atomic::AtomicBool;
        let mut closed = 0;
        for _ in 0..2_000 {
            let b = errors(1);
            b.on_complete(1, true, 1000);
            let Admission::Probe(a) = b.try_pass(11_000) else {
                panic!("probe A")
            };
            a.commit(11_000);
            assert!(
                matches!(b.try_pass(21_000), Admission::Block),
                "A timed out"
            );
            let Admission::Probe(next) = b.try_pass(31_000) else {
                panic!("probe B")
            };
            next.commit(31_000);
            next.complete(1, false, 31_001);
            assert_eq!(b.state(), BreakerState::Closed);
            let (done, started) = (AtomicBool::new(false), AtomicBool::new(false));
            std::thread::scope(|s| {
                s.spawn(|| {
                    started.store(true, Ordering::Release);
                    while !done.load(Ordering::Acquire) {
                        a.complete(1, false, 31_002);
                    }
                });
                while !started.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
                b.on_complete(1, true, 31_002);
                done.store(true, Ordering::Release);
            });
            if b.state() == BreakerState::Closed {
                closed += 1;
            }
        }
        assert_eq!(closed, 0);
    }

    #[test]
    fn a_probe_past_its_deadline_counts_as_failed() {
        let b = errors(1);
        b.on_complete(1, true, 1000);
        let Admission::Probe(probe) = b.try_pass(11_000) else {
            panic!("probe");
        };
        probe.commit(11_000);
        assert!(matches!(b.try_pass(20_999), Admission::Block));
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(matches!(b.try_pass(21_000), Admission::Block));
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(b.status(21_000).retry_at_ms, Some(31_000));
        // The late probe's failure changes nothing; a newer probe makes its success change nothing.
        probe.complete(1, true, 25_000);
        assert_eq!(b.state(), BreakerState::Open);
        let Admission::Probe(newer) = b.try_pass(31_000) else {
            panic!("a newer probe");
        };
        probe.complete(1, false, 31_500);
        drop(probe);
        assert_eq!(b.state(), BreakerState::Open, "the newer probe decides");
        newer.commit(31_000);
        newer.complete(1, false, 32_000);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    /// Calls slower than the recovery timeout, under steady traffic: each probe times out, yet its late
    /// success closes the breaker (before the next probe starts).
    #[test]
    fn a_slow_but_healthy_probe_closes_the_breaker() {
        let b = errors(1);
        b.on_complete(1, true, 1000);
        let Admission::Probe(probe) = b.try_pass(11_000) else {
            panic!("probe");
        };
        probe.commit(11_000);
        assert!(matches!(b.try_pass(21_000), Admission::Block), "timed out");
        assert_eq!(b.state(), BreakerState::Open);
        probe.complete(15_000, false, 26_000);
        assert_eq!(b.state(), BreakerState::Closed);
        assert!(matches!(b.try_pass(26_100), Admission::Pass));
    }

    /// A slow-ratio probe may run up to the rule's maximum RT before it is counted as failed.
    #[test]
    fn a_slow_ratio_probe_has_at_least_the_maximum_rt() {
        let rule = DegradeRule::slow_ratio("R", 30_000.0, 0.5)
            .time_window(10)
            .min_request_amount(1);
        let b = breaker(rule);
        b.on_complete(40_000, false, 1000);
        assert_eq!(b.state(), BreakerState::Open);
        let Admission::Probe(probe) = b.try_pass(11_000) else {
            panic!("probe");
        };
        probe.commit(11_000);
        assert!(matches!(b.try_pass(40_999), Admission::Block));
        assert_eq!(b.state(), BreakerState::HalfOpen, "30 s of maximum RT");
        probe.complete(29_000, false, 40_000);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn a_dropped_uncompleted_probe_reopens() {
        let b = errors(1);
        b.on_complete(1, true, 1000);
        let Admission::Probe(probe) = b.try_pass(11_000) else {
            panic!("probe");
        };
        probe.commit(11_000);
        drop(probe);
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(b.status(11_000).retry_at_ms, Some(21_000));
    }

    #[test]
    fn completions_of_other_calls_do_not_decide_the_probe() {
        let b = errors(1);
        b.on_complete(1, true, 1000);
        let Admission::Probe(probe) = b.try_pass(11_000) else {
            panic!("probe");
        };
        probe.commit(11_000);
        b.on_complete(1, false, 11_001);
        b.on_complete(1, true, 11_001);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        probe.complete(1, true, 11_002);
        assert_eq!(b.state(), BreakerState::Open);
    }
}
