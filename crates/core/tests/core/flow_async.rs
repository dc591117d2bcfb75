//! Queueing waits are awaited with a tokio timer in async code, never slept on the worker.
#![cfg(feature = "tokio")]

use std::time::Duration;

use floodgate_core::{Clock, Floodgate, ManualClock, RuleType};

/// A manual clock whose sleeps are real (so `enter_async` uses a timer), for tokio's paused time.
#[derive(Debug, Clone)]
struct TimerClock(ManualClock);

impl Clock for TimerClock {
    fn now_nanos(&self) -> u64 {
        self.0.now_nanos()
    }
    fn sleep(&self, _duration: Duration) {
        panic!("an async entry must not sleep the thread");
    }
}

#[tokio::test(start_paused = true)]
async fn enter_async_awaits_the_queueing_wait() {
    let fg = Floodgate::builder()
        .clock(TimerClock(ManualClock::new(1_700_000_000_000)))
        .build();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"R","count":10,"controlBehavior":2,"maxQueueingTimeMs":500}]"#,
    )
    .unwrap();
    let start = tokio::time::Instant::now();
    let first = fg.entry("R").enter_async().await.unwrap();
    assert_eq!(first.waited(), Duration::ZERO);
    let second = fg.entry("R").enter_async().await.unwrap();
    assert_eq!(second.waited(), Duration::from_millis(100));
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(100),
        "awaited on tokio's (paused) clock"
    );
    let third = fg.entry("R").enter_async().await.unwrap();
    assert_eq!(third.waited(), Duration::from_millis(200));
    assert_eq!(start.elapsed(), Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn a_manual_clock_never_waits() {
    let fg = Floodgate::builder()
        .clock(ManualClock::new(1_700_000_000_000))
        .build();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"R","count":10,"controlBehavior":2,"maxQueueingTimeMs":500}]"#,
    )
    .unwrap();
    let start = tokio::time::Instant::now();
    let _a = fg.entry("R").enter_async().await.unwrap();
    let b = fg.entry("R").enter_async().await.unwrap();
    assert_eq!(
        b.waited(),
        Duration::from_millis(100),
        "the wait is reported"
    );
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "but not taken: time is the test's"
    );
}
