//! Contexts, origins and the call tree.

use floodgate_core::stats::TreeNodeKind;
use floodgate_core::{DEFAULT_CONTEXT_NAME, Floodgate, ManualClock};

const T0: u64 = 1_700_000_000_000;

fn engine() -> Floodgate {
    Floodgate::builder()
        .clock(ManualClock::new(T0))
        .count_context_nodes(true)
        .build()
}

#[test]
fn nested_entries_form_the_call_tree() {
    let fg = engine();
    fg.context("entranceA").origin("appA").run(|| {
        let a = fg.entry("A").enter().unwrap();
        assert_eq!(a.context_name(), "entranceA");
        {
            let _b = fg.entry("B").enter().unwrap();
            let _c = fg.entry("C").enter().unwrap();
        }
        let _d = fg.entry("D").enter().unwrap();
    });
    drop(fg.entry("A").enter().unwrap());

    let tree = fg.call_tree();
    assert_eq!(tree.kind, TreeNodeKind::Root);
    let names: Vec<&str> = tree.children.iter().map(|c| &*c.stats.name).collect();
    assert_eq!(names, [DEFAULT_CONTEXT_NAME, "entranceA"]);
    let entrance = &tree.children[1];
    assert_eq!(entrance.kind, TreeNodeKind::Entrance);
    assert_eq!(entrance.children.len(), 1);
    let a = &entrance.children[0];
    assert_eq!(&*a.stats.name, "A");
    let under_a: Vec<&str> = a.children.iter().map(|c| &*c.stats.name).collect();
    assert_eq!(under_a, ["B", "D"]);
    assert_eq!(&*a.children[0].children[0].stats.name, "C");
    assert_eq!(a.stats.pass_qps, 1.0);
    assert_eq!(
        entrance.stats.pass_qps, 1.0,
        "an entrance sums its children"
    );
    assert_eq!(
        tree.children[0].children.len(),
        1,
        "A in the default context"
    );
    assert_eq!(tree.stats.pass_qps, 2.0);

    // A's cluster node counts both contexts; its context nodes count each.
    assert_eq!(fg.cluster_node("A").unwrap().pass_qps(), 2.0);
    assert_eq!(fg.context_node("A", "entranceA").unwrap().pass_qps(), 1.0);
    assert_eq!(
        fg.context_node("A", DEFAULT_CONTEXT_NAME)
            .unwrap()
            .pass_qps(),
        1.0
    );
    // Origin nodes: only the entries from appA.
    assert_eq!(fg.origin_node("A", "appA").unwrap().pass_qps(), 1.0);
    assert_eq!(
        fg.origin_node("C", "appA").unwrap().pass_qps(),
        1.0,
        "nested entries inherit the origin"
    );
    assert!(fg.origin_node("A", "appB").is_none());
    assert_eq!(fg.origin_nodes("A").len(), 1);
}

#[test]
fn an_inner_context_keeps_the_outer_one_as_in_sentinel() {
    let fg = engine();
    fg.context("outer").run(|| {
        fg.context("inner").run(|| {
            assert_eq!(fg.entry("R").enter().unwrap().context_name(), "outer");
        });
    });
    assert_eq!(
        fg.entry("R").enter().unwrap().context_name(),
        DEFAULT_CONTEXT_NAME,
        "the context ends with run"
    );
}

#[test]
fn context_nodes_count_from_first_read_by_default() {
    let fg = Floodgate::builder().clock(ManualClock::new(T0)).build();
    drop(fg.entry("R").enter().unwrap());
    assert_eq!(fg.cluster_node("R").unwrap().pass_qps(), 1.0);
    let node = fg.context_node("R", DEFAULT_CONTEXT_NAME).unwrap();
    assert_eq!(node.pass_qps(), 0.0, "was not counting yet");
    drop(fg.entry("R").enter().unwrap());
    assert_eq!(node.pass_qps(), 1.0);
    assert_eq!(node.cur_thread_num(), 0);
}

#[test]
fn explicit_context_handles_and_children_work_off_thread() {
    let fg = engine();
    let ctx = fg.context("async-ctx").origin("caller");
    let parent = ctx.entry("P").enter().unwrap();
    let child = std::thread::scope(|s| {
        s.spawn(|| {
            let child = parent.child("Q").unwrap().enter().unwrap();
            child.context_name().to_owned()
        })
        .join()
        .unwrap()
    });
    assert_eq!(child, "async-ctx");
    drop(parent);
    let tree = fg.call_tree();
    let entrance = tree
        .children
        .iter()
        .find(|c| &*c.stats.name == "async-ctx")
        .unwrap();
    assert_eq!(&*entrance.children[0].stats.name, "P");
    assert_eq!(&*entrance.children[0].children[0].stats.name, "Q");
    assert!(fg.origin_node("Q", "caller").is_some());
}

#[cfg(feature = "tokio")]
#[tokio::test]
async fn async_entries_cross_await_points() {
    let fg = engine();
    let ctx = fg.context("tokio-ctx").origin("web");
    let entry = ctx.entry("handler").enter_async().await.unwrap();
    tokio::task::yield_now().await;
    let inner = entry.child("db").unwrap().enter_async().await.unwrap();
    tokio::task::yield_now().await;
    drop(inner);
    drop(entry);
    assert_eq!(fg.cluster_node("db").unwrap().success_qps(), 1.0);
    assert_eq!(fg.origin_node("handler", "web").unwrap().pass_qps(), 1.0);
}

/// Resources that call each other make the node links a graph: the tree lists each node's children
/// once per context, so it stays small (walking every path grew exponentially with the depth).
#[test]
fn resources_calling_each_other_keep_the_call_tree_small() {
    let fg = engine();
    let names = ["R0", "R1", "R2"];
    fg.context("ctx").run(|| {
        for outer in names {
            let _outer = fg.entry(outer).enter().unwrap();
            for inner in names.iter().filter(|n| **n != outer) {
                drop(fg.entry(inner).enter().unwrap());
            }
        }
        // And nested the other way round, under each inner one.
        for outer in names {
            let _outer = fg.entry(outer).enter().unwrap();
            for inner in names {
                let _inner = fg.entry(inner).enter().unwrap();
                for innermost in names {
                    drop(fg.entry(innermost).enter().unwrap());
                }
            }
        }
    });
    fn count(tree: &floodgate_core::stats::CallTree) -> usize {
        1 + tree.children.iter().map(count).sum::<usize>()
    }
    let tree = fg.call_tree();
    assert!(count(&tree) < 100, "{} nodes", count(&tree));
}

/// Entries exited out of order (A, then B nested under it) leave no exited entry current: later entries
/// on the thread are not placed under A, in A's context, nor under A's CHAIN rules.
#[test]
fn an_entry_exited_out_of_order_never_becomes_current_again() {
    use floodgate_core::{FlowRule, FlowStrategy};
    let fg = engine();
    fg.load_flow_rules([FlowRule::new("R", 0.0).strategy(FlowStrategy::Chain, "c2")])
        .unwrap();
    let a = fg.context("c2").entry("A").enter().unwrap();
    let b = fg.entry("B").enter().unwrap();
    assert_eq!(b.context_name(), "c2", "B nests under A");
    drop(a);
    drop(b);
    let r = fg
        .entry("R")
        .enter()
        .expect("not in c2: the CHAIN rule does not apply");
    assert_eq!(r.context_name(), DEFAULT_CONTEXT_NAME);
    drop(r);
    // Nested the right way round, and three deep with the middle one out of order.
    let outer = fg.entry("X").enter().unwrap();
    let middle = fg.context("c2").entry("Y").enter().unwrap();
    let inner = fg.entry("Z").enter().unwrap();
    drop(middle);
    drop(inner);
    let next = fg.entry("W").enter().unwrap();
    assert_eq!(next.context_name(), DEFAULT_CONTEXT_NAME, "under X, not Y");
    drop(next);
    drop(outer);
}

thread_local! {
    static HELD: std::cell::RefCell<Vec<floodgate_core::Entry<'static>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Entries a thread-local holds are dropped while the thread's own thread-locals are torn down, perhaps
/// after the engine's frame bookkeeping: an exit then skips that bookkeeping instead of aborting the
/// process ("thread local panicked on drop").
#[test]
fn entries_dropped_during_thread_local_teardown_exit_cleanly() {
    let fg: &'static Floodgate = Box::leak(Box::new(Floodgate::default()));
    let worker = std::thread::spawn(move || {
        // `HELD` is registered first, so it is torn down after the bookkeeping of any later exit.
        HELD.with(|held| held.borrow_mut().clear());
        let x = fg.entry("X").enter().unwrap();
        let y = fg.entry("Y").enter().unwrap();
        drop(x); // out of order: the engine remembers it
        drop(y);
        let a = fg.entry("A").enter().unwrap();
        let b = fg.entry("B").enter().unwrap();
        // Dropped in order of the vector at teardown: `a` first, out of order again.
        HELD.with(|held| held.borrow_mut().extend([a, b]));
    });
    assert!(worker.join().is_ok());
    for resource in ["A", "B", "X", "Y"] {
        assert_eq!(
            fg.cluster_node(resource).unwrap().cur_thread_num(),
            0,
            "{resource} exited"
        );
    }
}

/// An entry of a second engine started inside one of the first does not hide the first engine's
/// current entry: the first engine's next entry still nests under its own (same context), and once
/// that entry exits, even out of order, nothing nests under it any more.
#[test]
fn a_second_engines_entry_does_not_hide_the_first_engines() {
    let a = engine();
    let b = engine();
    let a1 = a.context("ca").entry("A1").enter().unwrap();
    let b1 = b.entry("B1").enter().unwrap();
    let a2 = a.entry("A2").enter().unwrap();
    assert_eq!(a2.context_name(), "ca", "nested under A1, not hidden by B1");
    assert_eq!(
        b.entry("B2").enter().unwrap().context_name(),
        DEFAULT_CONTEXT_NAME
    );
    drop(a2);
    drop(b1);
    assert_eq!(a.entry("A3").enter().unwrap().context_name(), "ca");
    drop(a1);
    assert_eq!(
        a.entry("A4").enter().unwrap().context_name(),
        DEFAULT_CONTEXT_NAME
    );

    // A1 exits out of order, while B1 is current: A's next entries do not nest under it.
    let a1 = a.context("ca").entry("A1").enter().unwrap();
    let b1 = b.entry("B1").enter().unwrap();
    drop(a1);
    assert_eq!(
        a.entry("A5").enter().unwrap().context_name(),
        DEFAULT_CONTEXT_NAME
    );
    drop(b1);
    assert_eq!(
        a.entry("A6").enter().unwrap().context_name(),
        DEFAULT_CONTEXT_NAME
    );
    assert_eq!(
        b.entry("B3").enter().unwrap().context_name(),
        DEFAULT_CONTEXT_NAME
    );
}

/// Two entries of the first engine exit out of order while a second engine's entry is current (the
/// inner one hidden): once the second engine's entry exits, neither exited entry is current again, so
/// a later entry of the first engine starts in the default context, without their origin.
#[test]
fn exits_out_of_order_under_a_second_engines_entry_leave_nothing_current() {
    use floodgate_core::{AuthorityRule, BlockKind};
    let a = engine();
    let b = engine();
    a.load_authority_rules([AuthorityRule::black("Z", "evil")])
        .unwrap();
    let a0 = a.context("ca").origin("evil").entry("A0").enter().unwrap();
    let a1 = a.entry("A1").enter().unwrap();
    let b1 = b.entry("B1").enter().unwrap();
    drop(a0);
    drop(a1);
    drop(b1);
    let z = a.entry("Z").enter();
    assert!(
        z.as_ref()
            .is_ok_and(|e| e.context_name() == DEFAULT_CONTEXT_NAME),
        "{:?}",
        z.map(|e| e.context_name().to_owned())
            .map_err(|b| b.kind() == BlockKind::Authority)
    );
}

/// `in_default_context` places an entry at the default context's entrance, whatever entry and context
/// are current on the thread.
#[test]
fn in_default_context_ignores_the_threads_current_entry_and_context() {
    let fg = engine();
    fg.context("ctx").origin("caller").run(|| {
        let _outer = fg.entry("outer").enter().unwrap();
        let root = fg.entry("root").in_default_context().enter().unwrap();
        assert_eq!(root.context_name(), DEFAULT_CONTEXT_NAME);
        let nested = fg.entry("nested").enter().unwrap();
        assert_eq!(nested.context_name(), DEFAULT_CONTEXT_NAME, "under root");
    });
    assert!(
        fg.origin_node("root", "caller").is_none(),
        "no inherited origin"
    );
    let tree = fg.call_tree();
    let default = tree
        .children
        .iter()
        .find(|c| &*c.stats.name == DEFAULT_CONTEXT_NAME)
        .unwrap();
    let roots: Vec<&str> = default.children.iter().map(|c| &*c.stats.name).collect();
    assert_eq!(roots, ["root"]);
    assert_eq!(&*default.children[0].children[0].stats.name, "nested");
}

/// A thread's entry that exited elsewhere stays recorded for it while many threads that ended come and
/// go with remote exits of their own: the records of ended threads make room, never those of a live
/// thread, even when the live thread's are the oldest.
#[test]
fn a_live_threads_remote_exit_outlives_those_of_threads_that_ended() {
    let fg: &'static Floodgate = Box::leak(Box::new(engine()));
    let e = fg.context("c").entry("W").enter().unwrap();
    std::thread::spawn(move || drop(e)).join().unwrap();
    for _ in 0..1100 {
        let e = std::thread::spawn(move || fg.entry("S").enter().unwrap())
            .join()
            .unwrap();
        drop(e);
    }
    assert_eq!(
        fg.entry("N").enter().unwrap().context_name(),
        DEFAULT_CONTEXT_NAME
    );
}
