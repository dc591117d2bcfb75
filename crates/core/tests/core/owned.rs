//! Owned entries: `'static` guards for futures and tasks that exit on every path, cancellation included.

use std::time::Duration;

use floodgate_core::{Floodgate, ManualClock, OwnedEntry, RuleType};

const T0: u64 = 1_700_000_000_000;

fn engine() -> (ManualClock, Floodgate) {
    let clock = ManualClock::new(T0);
    (clock.clone(), Floodgate::builder().clock(clock).build())
}

fn owned(fg: &Floodgate, resource: &str) -> OwnedEntry {
    fg.entry(resource).origin("web").enter_owned().unwrap()
}

#[test]
fn an_owned_entry_outlives_the_borrow_and_exits_on_drop() {
    let (clock, fg) = engine();
    let entry = owned(&fg, "R");
    assert_eq!(entry.resource(), "R");
    let handle = std::thread::spawn(move || {
        let entry = entry; // 'static: moved into another thread
        entry.trace(&std::fmt::Error);
        drop(entry);
    });
    clock.advance(Duration::from_millis(5));
    handle.join().unwrap();
    let node = fg.cluster_node("R").unwrap();
    assert_eq!(node.cur_thread_num(), 0);
    assert_eq!(node.success_qps(), 1.0);
    assert_eq!(node.exception_qps(), 1.0);
    assert_eq!(
        fg.origin_node("R", "web").unwrap().pass_qps(),
        1.0,
        "the origin is kept"
    );
}

#[test]
fn an_owned_entry_reports_the_queueing_wait_without_taking_it() {
    let (_clock, fg) = engine();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"R","count":10,"controlBehavior":2,"maxQueueingTimeMs":500}]"#,
    )
    .unwrap();
    let first = owned(&fg, "R");
    let second = owned(&fg, "R");
    assert_eq!(first.waited(), Duration::ZERO);
    assert_eq!(second.waited(), Duration::from_millis(100));
}

#[test]
fn blocked_owned_entries_are_errors() {
    let (_clock, fg) = engine();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":1}]"#)
        .unwrap();
    let _held = owned(&fg, "R");
    assert!(fg.entry("R").enter_owned().is_err());
}

#[test]
fn thread_grade_parameter_counts_are_released_by_an_owned_entry() {
    let (_clock, fg) = engine();
    fg.load_rules_json(
        RuleType::ParamFlow,
        r#"[{"resource":"R","grade":0,"paramIdx":0,"count":1}]"#,
    )
    .unwrap();
    let user = String::from("alice");
    let first = fg.entry("R").args([user.as_str()]).enter_owned().unwrap();
    drop(user); // the owned entry copied its argument
    assert!(fg.entry("R").args(["alice"]).enter_owned().is_err());
    drop(first);
    assert!(fg.entry("R").args(["alice"]).enter_owned().is_ok());
}

#[cfg(feature = "tokio")]
#[tokio::test]
async fn a_cancelled_future_still_exits_its_entry() {
    let (_clock, fg) = engine();
    let entry = owned(&fg, "R");
    let task = tokio::spawn(async move {
        let _entry = entry;
        std::future::pending::<()>().await;
    });
    tokio::task::yield_now().await;
    assert_eq!(fg.cluster_node("R").unwrap().cur_thread_num(), 1);
    task.abort();
    let _ = task.await;
    assert_eq!(
        fg.cluster_node("R").unwrap().cur_thread_num(),
        0,
        "dropped with the task"
    );
}
