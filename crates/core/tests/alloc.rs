//! Entry and exit allocate nothing once a resource exists (a behaviour test with a counting allocator).

use std::alloc::System;

use floodgate_core::{EntryType, Floodgate, ManualClock};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The counting allocator sees every thread: the tests of this binary measure one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn entry_and_exit_allocate_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let clock = ManualClock::new(1_700_000_000_000);
    let fg = Floodgate::builder().clock(clock.clone()).build();
    // Warm up: creates the resource, its nodes, the origin node, the context, thread-locals, and the
    // minute history once a bucket finishes.
    for i in 0..3000u64 {
        clock.set(1_700_000_000_000 + i);
        let ctx = fg.context("ctx").origin("appA");
        ctx.run(|| drop(fg.entry("R").entry_type(EntryType::In).enter().unwrap()));
        drop(fg.entry("R").origin("appB").enter().unwrap());
    }
    let handle = fg.resource("R").unwrap();
    let region = Region::new(GLOBAL);
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
        drop(handle.entry().count(2).enter().unwrap());
        let outer = fg.entry("R").enter().unwrap();
        drop(fg.entry("R").enter().unwrap());
        drop(outer);
    }
    let stats = region.change();
    assert_eq!(
        stats.allocations, 0,
        "allocations during 50,000 entries: {stats:?}"
    );
    assert_eq!(stats.reallocations, 0);
}

#[test]
fn closed_circuit_breakers_allocate_nothing() {
    use floodgate_core::DegradeRule;

    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
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
    let region = Region::new(GLOBAL);
    for i in 0..10_000u64 {
        clock.set(1_700_000_003_000 + i / 10);
        drop(fg.entry("R").enter().unwrap());
        drop(fg.entry("S").enter().unwrap());
    }
    let stats = region.change();
    assert_eq!(
        stats.allocations, 0,
        "allocations during 20,000 entries: {stats:?}"
    );
}
