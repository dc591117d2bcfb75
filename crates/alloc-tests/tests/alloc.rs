//! Entry and exit allocate nothing once a resource exists (a behaviour test with a counting allocator).

use floodgate_core::{EntryType, Floodgate, ManualClock};

fn entry_and_exit_allocate_nothing() {
    let clock = ManualClock::new(1_700_000_000_000);
    let fg = Floodgate::builder().clock(clock.clone()).build();
    // Warm up: creates the resource, its nodes, the origin node, the context, thread-locals (the
    // stack of nested entries among them), and the minute history once a bucket finishes.
    for i in 0..3000u64 {
        clock.set(1_700_000_000_000 + i);
        let ctx = fg.context("ctx").origin("appA");
        ctx.run(|| drop(fg.entry("R").entry_type(EntryType::In).enter().unwrap()));
        drop(fg.entry("R").origin("appB").enter().unwrap());
        let outer = fg.entry("R").enter().unwrap();
        drop(fg.entry("R").enter().unwrap());
        drop(outer);
    }
    let key = fg.resource_key("R");
    let stats = allocation_counter::measure(|| {
        for i in 0..10_000u64 {
            clock.set(1_700_000_003_000 + i / 10);
            drop(fg.entry("R").enter().unwrap());
            drop(
                fg.entry("R")
                    .origin("appB")
                    .entry_type(EntryType::In)
                    .enter()
                    .unwrap(),
            );
            drop(fg.entry_for(&key).count(2).enter().unwrap());
            let outer = fg.entry("R").enter().unwrap();
            drop(fg.entry("R").enter().unwrap());
            drop(outer);
        }
    });
    assert_eq!(
        stats.count_total, 0,
        "allocations during 50,000 entries: {stats:?}"
    );
}

fn flow_checks_and_rejections_allocate_nothing() {
    use floodgate_core::RuleType;
    let clock = ManualClock::new(1_700_000_000_000);
    let fg = Floodgate::builder().clock(clock.clone()).build();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[
            {"resource":"reject","count":1e9},
            {"resource":"warm","count":1e9,"controlBehavior":1},
            {"resource":"pace","count":1e9,"controlBehavior":2},
            {"resource":"warm-pace","count":1e9,"controlBehavior":3},
            {"resource":"blocked","count":0}
        ]"#,
    )
    .unwrap();
    let names = ["reject", "warm", "pace", "warm-pace"];
    // Warm up: resources, nodes, the block log's key, the minute history.
    for i in 0..3000u64 {
        clock.set(1_700_000_000_000 + i);
        for name in names {
            drop(fg.entry(name).enter().unwrap());
        }
        assert!(fg.entry("blocked").enter().is_err());
    }
    let stats = allocation_counter::measure(|| {
        for i in 0..5_000u64 {
            clock.set(1_700_000_003_000 + i / 10);
            for name in names {
                drop(fg.entry(name).enter().unwrap());
            }
            let block = fg.entry("blocked").enter().unwrap_err();
            drop(block);
        }
    });
    assert_eq!(stats.count_total, 0, "{stats:?}");
}

fn closed_circuit_breakers_allocate_nothing() {
    use floodgate_core::DegradeRule;

    let clock = ManualClock::new(1_700_000_000_000);
    let fg = Floodgate::builder().clock(clock.clone()).build();
    fg.load_degrade_rules([
        DegradeRule::error_ratio("R", 0.5).time_window(10),
        DegradeRule::slow_ratio("*", 1000.0, 1.0).time_window(10),
    ])
    .unwrap();
    // Warm up: the resources' breakers are found on their first entries.
    for i in 0..3000u64 {
        clock.set(1_700_000_000_000 + i);
        drop(fg.entry("R").enter().unwrap());
        drop(fg.entry("S").enter().unwrap());
    }
    let stats = allocation_counter::measure(|| {
        for i in 0..10_000u64 {
            clock.set(1_700_000_003_000 + i / 10);
            drop(fg.entry("R").enter().unwrap());
            drop(fg.entry("S").enter().unwrap());
        }
    });
    assert_eq!(
        stats.count_total, 0,
        "allocations during 20,000 entries: {stats:?}"
    );
}

/// Counts events without allocating, so the measurement sees only the engine's own allocations.
#[derive(Debug, Default)]
struct CountingSubscriber {
    events: std::sync::atomic::AtomicUsize,
}

impl tracing::Subscriber for CountingSubscriber {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {
        self.events
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn sampled_block_events_allocate_nothing() {
    use floodgate_core::{FlowRule, RuleType};
    use std::sync::Arc;

    let clock = ManualClock::new(1_700_000_000_000);
    let fg = Floodgate::builder().clock(clock.clone()).build();
    fg.load_flow_rules([FlowRule::new("blocked", 0.0)]).unwrap();
    let subscriber = Arc::new(CountingSubscriber::default());
    let dispatch = tracing::Dispatch::new(subscriber.clone());
    tracing::dispatcher::with_default(&dispatch, || {
        // Warm up: the resource, the block log's key and group, the event's call site, and the block
        // log's queue of unread seconds at its bound (3000 seconds).
        for i in 0..3000u64 {
            clock.set(1_700_000_000_000 + i * 1000);
            assert!(fg.entry("blocked").origin("appA").enter().is_err());
        }
        let before = subscriber.events.load(std::sync::atomic::Ordering::Relaxed);
        let stats = allocation_counter::measure(|| {
            // 10,000 blocks over 1,000 seconds: one event per second.
            for i in 0..10_000u64 {
                clock.set(1_700_003_000_000 + i * 100);
                drop(fg.entry("blocked").origin("appA").enter().unwrap_err());
            }
        });
        assert_eq!(stats.count_total, 0, "{stats:?}");
        let events = subscriber.events.load(std::sync::atomic::Ordering::Relaxed) - before;
        assert_eq!(events, 1000, "one block event per second");
    });
    assert_eq!(fg.rule_count(RuleType::Flow), 1);
}

/// One test measuring one case after the other (allocations are counted on the measuring thread).
#[test]
fn allocations() {
    // The counter sees this thread's allocations (so a zero below means something).
    let seen = allocation_counter::measure(|| {
        std::hint::black_box(vec![1u8; 64]);
    });
    assert!(seen.count_total >= 1);
    entry_and_exit_allocate_nothing();
    flow_checks_and_rejections_allocate_nothing();
    closed_circuit_breakers_allocate_nothing();
    sampled_block_events_allocate_nothing();
}
