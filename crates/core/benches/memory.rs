//! Heap bytes per resource: 10,000 resources entered once, then each kept busy for a minute.
//!
//! Run with `cargo bench -p floodgate-core --bench memory`. Prints figures; times nothing.

use std::alloc::System;
use std::time::Duration;

use floodgate_core::{Floodgate, ManualClock};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const RESOURCES: u64 = 10_000;

fn main() {
    let clock = ManualClock::new(1_700_000_000_000);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .max_resources(RESOURCES as usize)
        .build();
    let names: Vec<String> = (0..RESOURCES)
        .map(|i| format!("GET:/api/resource/{i}"))
        .collect();
    let region = Region::new(GLOBAL);
    for name in &names {
        drop(fg.entry(name).enter());
    }
    let once = region.change();
    let bytes_once = once.bytes_allocated as i64 - once.bytes_deallocated as i64;
    println!(
        "entered once:  {:>8.0} bytes/resource ({} allocations/resource)",
        bytes_once as f64 / RESOURCES as f64,
        once.allocations as f64 / RESOURCES as f64
    );
    // Keep every resource busy for 61 seconds: every bucket recycles and the minute history fills.
    for _ in 0..(61 * 2) {
        clock.advance(Duration::from_millis(500));
        for name in &names {
            drop(fg.entry(name).enter());
        }
    }
    let busy = region.change();
    let bytes_busy = busy.bytes_allocated as i64 - busy.bytes_deallocated as i64;
    println!(
        "busy a minute: {:>8.0} bytes/resource (second window, minute history, nodes, index)",
        bytes_busy as f64 / RESOURCES as f64
    );
}
