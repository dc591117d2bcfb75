//! Entries end to end: node statistics, tracing errors, the switch, metrics, the default engine.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use floodgate_core::slot::{Hooks, Slot, SlotContext};
use floodgate_core::{
    BlockError, BlockKind, EntryType, Floodgate, ManualClock, TOTAL_INBOUND_TRAFFIC,
};

const T0: u64 = 1_700_000_000_000;

/// Blocks while `remaining_passes` is zero; each admitted entry consumes one.
#[derive(Debug)]
struct Budget(AtomicU32);

impl Slot for Budget {
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        self.0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .map(|_| ())
            .map_err(|_| cx.block(BlockKind::Custom))
    }
    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }
}

fn engine(budget: u32) -> (ManualClock, Floodgate) {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .slot("budget", -2000, Arc::new(Budget(AtomicU32::new(budget))))
        .build();
    (clock, fg)
}

#[derive(Debug, thiserror::Error)]
#[error("downstream failed")]
struct Downstream;

#[derive(Debug, thiserror::Error)]
#[error("not found")]
struct NotFound;

#[test]
fn node_metrics_after_a_mixed_sequence() {
    let (clock, fg) = engine(4);
    let mut open = Vec::new();
    for _ in 0..4 {
        open.push(fg.entry("R").enter().expect("within budget"));
    }
    for _ in 0..3 {
        let block = fg.entry("R").enter().expect_err("budget spent");
        assert_eq!(block.kind(), BlockKind::Custom);
        assert_eq!(block.resource(), "R");
    }
    let node = fg.cluster_node("R").unwrap();
    assert_eq!(node.cur_thread_num(), 4);
    clock.advance(Duration::from_millis(10));
    let first = open.remove(0);
    first.trace(&Downstream);
    drop(first); // 10 ms, errored
    clock.advance(Duration::from_millis(20));
    drop(open.remove(0)); // 30 ms
    let node = fg.cluster_node("R").unwrap();
    assert_eq!(node.pass_qps(), 4.0);
    assert_eq!(node.block_qps(), 3.0);
    assert_eq!(node.total_qps(), 7.0);
    assert_eq!(node.success_qps(), 2.0, "the errored call still succeeded");
    assert_eq!(node.exception_qps(), 1.0);
    assert_eq!(node.avg_rt(), 20.0);
    assert_eq!(node.min_rt(), 10.0);
    assert_eq!(node.cur_thread_num(), 2);
    assert_eq!(node.total_request(), 7);
    drop(open);
    assert_eq!(fg.cluster_node("R").unwrap().cur_thread_num(), 0);
    assert_eq!(
        fg.cluster_node("R").unwrap().exception_qps(),
        1.0,
        "a block never counts as an exception"
    );
}

#[test]
fn inbound_entries_count_into_the_inbound_node() {
    let (_clock, fg) = engine(10);
    drop(fg.entry("in").entry_type(EntryType::In).enter().unwrap());
    drop(fg.entry("out").enter().unwrap());
    assert_eq!(fg.inbound_node().pass_qps(), 1.0);
    assert_eq!(fg.inbound_node().success_qps(), 1.0);
}

/// An error caused by `.0` (a caller's error wrapping a nested call's).
#[derive(Debug, thiserror::Error)]
#[error("wrapped")]
struct Wrapped<E: std::error::Error + 'static>(#[source] E);

#[test]
fn trace_filters_decide_what_counts_as_an_exception() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock)
        .trace_if(|e| e.is::<Downstream>() || e.is::<NotFound>())
        .ignore_if(|e| e.is::<NotFound>())
        .build();
    let e = fg.entry("R").enter().unwrap();
    e.trace(&NotFound);
    assert!(!e.has_error(), "ignore wins");
    e.trace(&std::fmt::Error);
    assert!(!e.has_error(), "not in the trace list");
    let block = BlockError::new(BlockKind::Flow, "R".into());
    e.trace(&block);
    assert!(!e.has_error(), "a block is never traced");
    let fg_plain = Floodgate::builder().clock(ManualClock::new(T0)).build();
    let plain = fg_plain.entry("R").enter().unwrap();
    plain.trace(&Wrapped(Wrapped(block)));
    assert!(!plain.has_error(), "nor an error a block caused");
    plain.trace(&Wrapped(std::fmt::Error));
    assert!(plain.has_error(), "an error with another cause is");
    e.trace(&Downstream);
    assert!(e.has_error());
    drop(e);
    assert_eq!(fg.cluster_node("R").unwrap().exception_qps(), 1.0);
}

#[test]
fn the_switch_turns_everything_off() {
    let (_clock, fg) = engine(0);
    assert!(fg.entry("R").enter().is_err());
    fg.set_enabled(false);
    assert!(!fg.is_enabled());
    for _ in 0..5 {
        assert!(fg.entry("R").enter().is_ok());
    }
    assert_eq!(
        fg.cluster_node("R").unwrap().pass_qps(),
        0.0,
        "not counted while off"
    );
    fg.set_enabled(true);
    assert!(fg.entry("R").enter().is_err());
}

#[test]
fn metrics_report_finished_seconds() {
    let (clock, fg) = engine(100);
    for ms in [100, 600, 1100] {
        clock.set(T0 + ms);
        let e = fg.entry("R").entry_type(EntryType::In).enter().unwrap();
        clock.advance(Duration::from_millis(4));
        drop(e);
    }
    clock.set(T0 + 2500);
    let lines = fg.metrics(T0, T0 + 10_000);
    let r: Vec<_> = lines.iter().filter(|l| &*l.resource == "R").collect();
    assert_eq!(
        r.len(),
        2,
        "seconds T0 and T0+1s; the current second is not finished"
    );
    assert_eq!(
        (r[0].timestamp, r[0].pass_qps, r[0].success_qps, r[0].rt),
        (T0, 2, 2, 4)
    );
    assert_eq!((r[1].timestamp, r[1].pass_qps), (T0 + 1000, 1));
    assert!(lines.iter().any(|l| &*l.resource == TOTAL_INBOUND_TRAFFIC));
    assert!(
        fg.metrics(T0 + 1001, T0 + 10_000)
            .iter()
            .all(|l| l.timestamp == T0 + 2000 || l.timestamp > T0 + 1000)
    );
    assert!(fg.metrics(T0 + 2000, T0 + 10_000).is_empty());
}

#[test]
fn a_resource_key_skips_the_lookup_and_counts_the_same() {
    let (_clock, fg) = engine(10);
    let key = fg.resource_key("R");
    assert!(key.is_resolved());
    drop(fg.entry_for(&key).count(3).enter().unwrap());
    drop(fg.entry("R").enter().unwrap());
    assert_eq!(fg.cluster_node(key.name()).unwrap().pass_qps(), 4.0);
    assert_eq!(key.name(), "R");
}

#[test]
fn a_backwards_clock_step_never_panics() {
    let (clock, fg) = engine(1000);
    let e = fg.entry("R").enter().unwrap();
    clock.set(T0 - 5_000);
    drop(e); // negative RT clamps to 0
    drop(fg.entry("R").enter().unwrap());
    clock.set(T0 + 400);
    let node = fg.cluster_node("R").unwrap();
    assert_eq!(node.cur_thread_num(), 0);
    assert_eq!(
        node.pass_qps(),
        1.0,
        "the window written before the step is kept"
    );
    drop(fg.entry("R").enter().unwrap());
    assert_eq!(node.pass_qps(), 2.0, "counting resumes");
}

#[test]
fn the_default_engine_backs_the_free_function() {
    let entry = floodgate_core::entry("free-function").enter();
    assert!(entry.is_ok());
    drop(entry);
    assert!(
        floodgate_core::global()
            .cluster_node("free-function")
            .is_some()
    );
    assert!(floodgate_core::set_global_default(Floodgate::default()).is_err());
}

#[test]
fn entries_are_send() {
    fn is_send<T: Send>() {}
    is_send::<floodgate_core::Entry<'static>>();
    is_send::<BlockError>();
    is_send::<Floodgate>();
}

#[test]
fn an_entry_may_exit_on_another_thread() {
    let (_clock, fg) = engine(10);
    let e = fg.entry("R").enter().unwrap();
    std::thread::scope(|s| {
        s.spawn(move || drop(e));
    });
    assert_eq!(fg.cluster_node("R").unwrap().cur_thread_num(), 0);
    assert_eq!(fg.cluster_node("R").unwrap().success_qps(), 1.0);
}

/// An entry dropped on another thread stops being its own thread's current entry, so later entries
/// there do not nest under it, in its context and with its origin (an authority black list on that
/// origin would then refuse unrelated calls). Also when entries were started over it meanwhile.
#[test]
fn an_entry_that_exits_on_another_thread_is_no_longer_current_on_its_own() {
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .count_context_nodes(true)
        .build();
    fg.load_authority_rules([floodgate_core::AuthorityRule::black("Other", "evil")])
        .unwrap();
    let e = fg.context("ctx").origin("evil").entry("R").enter().unwrap();
    std::thread::scope(|s| {
        s.spawn(move || drop(e));
    });
    let other = fg.entry("Other").enter().expect("no inherited origin");
    assert_eq!(other.context_name(), floodgate_core::DEFAULT_CONTEXT_NAME);
    drop(other);

    // A exits elsewhere while B (started under it) is current: B's exit makes A's parent current.
    let a = fg.entry("A").enter().unwrap();
    let b = fg.entry("B").enter().unwrap();
    std::thread::scope(|s| {
        s.spawn(move || drop(a));
    });
    drop(b);
    drop(fg.entry("C").enter().unwrap());
    let tree = fg.call_tree();
    let default = tree
        .children
        .iter()
        .find(|c| &*c.stats.name == floodgate_core::DEFAULT_CONTEXT_NAME)
        .unwrap();
    let roots: Vec<&str> = default.children.iter().map(|c| &*c.stats.name).collect();
    assert_eq!(roots, ["Other", "A", "C"]);
    let under_a: Vec<&str> = default.children[1]
        .children
        .iter()
        .map(|c| &*c.stats.name)
        .collect();
    assert_eq!(under_a, ["B"]);
}

#[test]
fn entries_read_the_clock_the_builder_was_given_last() {
    // A cached clock is read without a dynamic call; a clock set after it must replace it.
    let manual = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(floodgate_core::CachedClock::new())
        .shared_clock(Arc::new(manual.clone()))
        .build();
    drop(fg.entry("R").enter().unwrap());
    assert_eq!(
        fg.cluster_node("R").unwrap().pass_qps(),
        1.0,
        "recorded at the manual clock's time"
    );
    manual.advance(Duration::from_secs(3));
    assert_eq!(fg.cluster_node("R").unwrap().pass_qps(), 0.0);
}
