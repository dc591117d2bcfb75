//! Entry and exit allocate nothing once a resource exists (a behaviour test with a counting allocator).

use std::alloc::System;

use floodgate_core::{EntryType, Floodgate, ManualClock};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn entry_and_exit_allocate_nothing() {
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
