//! Many threads on one resource: totals stay exact.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use floodgate_core::slot::{Hooks, Slot, SlotContext};
use floodgate_core::{BlockError, BlockKind, EntryType, Floodgate, ManualClock};

const T0: u64 = 1_700_000_000_000;
const THREADS: u64 = 4;
const PER_THREAD: u64 = 20_000;

/// Blocks every third entry, deterministically in total.
#[derive(Debug, Default)]
struct EveryThird(AtomicU64);

impl Slot for EveryThird {
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        if self.0.fetch_add(1, Ordering::Relaxed) % 3 == 2 {
            return Err(cx.block(BlockKind::Custom));
        }
        Ok(())
    }
    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }
}

#[test]
fn pass_block_success_totals_are_exact_under_contention() {
    let clock = ManualClock::new(T0 + 100);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .slot("every_third", -2000, Arc::new(EveryThird::default()))
        .build();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let fg = &fg;
            s.spawn(move || {
                let origin = if t % 2 == 0 { "even" } else { "odd" };
                for _ in 0..PER_THREAD {
                    if let Ok(e) = fg
                        .entry("hot")
                        .origin(origin)
                        .entry_type(EntryType::In)
                        .enter()
                    {
                        drop(e);
                    }
                }
            });
        }
    });
    let total = THREADS * PER_THREAD;
    let blocked = total / 3;
    let node = fg.cluster_node("hot").unwrap();
    assert_eq!(node.pass_qps() as u64, total - blocked);
    assert_eq!(node.block_qps() as u64, blocked);
    assert_eq!(node.success_qps() as u64, total - blocked);
    assert_eq!(node.cur_thread_num(), 0);
    assert_eq!(node.total_request(), total);
    let inbound = fg.inbound_node();
    assert_eq!(
        inbound.pass_qps() as u64 + inbound.block_qps() as u64,
        total
    );
    let even = fg.origin_node("hot", "even").unwrap();
    let odd = fg.origin_node("hot", "odd").unwrap();
    assert_eq!(
        even.pass_qps() as u64 + odd.pass_qps() as u64,
        total - blocked
    );
    // The seconds fold exactly into the minute history once the window moves on.
    clock.advance(std::time::Duration::from_secs(2));
    assert_eq!(node.total_pass(), total - blocked);
    assert_eq!(node.total_success(), total - blocked);
    assert_eq!(node.block_request(), blocked);
}

#[test]
fn totals_stay_exact_while_the_clock_moves_between_rounds() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder().clock(clock.clone()).build();
    let mut expected = 0;
    for round in 0..20u64 {
        clock.set(T0 + round * 250);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..1000 {
                        drop(fg.entry("moving").enter().unwrap());
                    }
                });
            }
        });
        expected += THREADS * 1000;
    }
    clock.set(T0 + 20 * 250 + 1000);
    let node = fg.cluster_node("moving").unwrap();
    assert_eq!(node.total_pass(), expected);
    assert_eq!(node.total_success(), expected);
    let lines = fg.metrics(T0, T0 + 10_000);
    let sum: u64 = lines
        .iter()
        .filter(|l| &*l.resource == "moving")
        .map(|l| l.pass_qps)
        .sum();
    assert_eq!(sum, expected);
    assert!(
        lines
            .iter()
            .filter(|l| &*l.resource == "moving")
            .all(|l| l.pass_qps == 4 * THREADS * 1000)
    );
}
