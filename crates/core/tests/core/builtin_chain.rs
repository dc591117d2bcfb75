//! The built-in chain runs as straight-line code when an engine has only the built-in slots; an engine
//! with any slot edit runs the generic loop over `dyn Slot`. Both must behave the same: the same
//! admissions and blocks, the same statistics, call tree and block log. (No slot is registered in this
//! test binary, so its default engines take the built-in path; `slot/chain.rs` tests the detection.)

use std::sync::Arc;
use std::time::Duration;

use floodgate_core::slot::Slot;
use floodgate_core::{EntryType, Floodgate, ManualClock, ParamValue, RuleType};

const T0: u64 = 1_700_000_000_000;

/// A slot that does nothing: adding it takes an engine off the built-in path.
#[derive(Debug)]
struct Nothing;
impl Slot for Nothing {}

#[derive(Debug, thiserror::Error)]
#[error("downstream failed")]
struct Boom;

fn engine(generic: bool) -> (ManualClock, Floodgate) {
    let clock = ManualClock::new(T0);
    let mut builder = Floodgate::builder().clock(clock.clone());
    if generic {
        builder = builder.slot("nothing", 10_000, Arc::new(Nothing));
    }
    let fg = builder.build();
    let rules = [
        // "P" also has a flow rule: a flow block after its THREAD parameter rule admitted a value
        // must hand that value's count back (the parameter slot's block hook).
        (
            RuleType::Flow,
            r#"[{"resource":"F","count":5},{"resource":"P","count":12},
                {"resource":"C","strategy":2,"refResource":"checkout","count":4}]"#,
        ),
        (
            RuleType::ParamFlow,
            r#"[{"resource":"P","grade":0,"paramIdx":0,"count":1},
                {"resource":"Q","paramIdx":-1,"count":2}]"#,
        ),
        (
            RuleType::Authority,
            r#"[{"resource":"A","limitApp":"appA","strategy":0}]"#,
        ),
        (
            RuleType::Degrade,
            r#"[{"resource":"D","grade":2,"count":2,"timeWindow":1,"minRequestAmount":1,"statIntervalMs":1000},
                {"resource":"*","grade":2,"count":3,"timeWindow":1,"minRequestAmount":1,"statIntervalMs":1000}]"#,
        ),
        (RuleType::System, r#"[{"qps":4}]"#),
    ];
    for (kind, json) in rules {
        fg.load_rules_json(kind, json).expect("valid rules");
    }
    (clock, fg)
}

/// Drives one engine through every rule kind for three seconds; returns what happened, call by call.
fn script(generic: bool) -> (Vec<String>, Floodgate) {
    let (clock, fg) = engine(generic);
    let mut log = Vec::new();
    let mut outcome = |what: String, result: Result<(), floodgate_core::BlockError>| {
        log.push(match result {
            Ok(()) => format!("{what}: ok"),
            Err(block) => format!("{what}: {}", block.kind()),
        });
    };
    for step in 0..60u64 {
        let origin = if step % 3 == 0 { "appA" } else { "appB" };
        let user = ParamValue::from(step as i64 % 4);
        outcome(
            format!("F#{step}"),
            fg.entry("F").origin(origin).enter().map(drop),
        );
        outcome(
            format!("A#{step}"),
            fg.entry("A").origin(origin).enter().map(drop),
        );
        outcome(
            format!("S#{step}"),
            fg.entry("S").entry_type(EntryType::In).enter().map(drop),
        );
        // A THREAD parameter rule: a held entry keeps its value's count until it exits.
        let held = fg.entry("P").args([user.clone()]).enter();
        outcome(
            format!("P#{step} again"),
            fg.entry("P").args([user.clone()]).enter().map(drop),
        );
        outcome(format!("P#{step}"), held.map(drop));
        outcome(
            format!("Q#{step}"),
            fg.entry("Q")
                .args([ParamValue::from("x"), user])
                .enter()
                .map(drop),
        );
        // A named context: per-context nodes, a CHAIN rule that reads the context's node, and a child
        // entry nested in the call tree.
        fg.context("checkout").origin(origin).run(|| {
            let parent = fg.entry("C").enter();
            if let Ok(parent) = &parent {
                if let Some(child) = parent.child("C-child") {
                    outcome(format!("C-child#{step}"), child.enter().map(drop));
                }
            }
            outcome(format!("C#{step}"), parent.map(drop));
        });
        outcome(format!("C outside#{step}"), fg.entry("C").enter().map(drop));
        // Breakers: errors open them; a half-open probe is admitted once the window passes.
        for resource in ["D", "E"] {
            let entered = fg.entry(resource).enter().map(|entry| {
                if step % 2 == 0 {
                    entry.trace(&Boom);
                }
            });
            outcome(format!("{resource}#{step}"), entered);
        }
        clock.advance(Duration::from_millis(50));
    }
    (log, fg)
}

#[test]
fn the_built_in_chain_and_the_generic_chain_agree() {
    let (builtin_log, builtin) = script(false);
    let (generic_log, generic) = script(true);
    assert_eq!(builtin_log, generic_log);
    for kind in ["flow", "authority", "system", "param flow", "degrade"] {
        assert!(
            builtin_log.iter().any(|line| line.ends_with(kind)),
            "the script blocks with {kind}: {builtin_log:#?}"
        );
    }
    assert_eq!(
        format!("{:?}", builtin.cluster_nodes()),
        format!("{:?}", generic.cluster_nodes())
    );
    let inbound = |fg: &Floodgate| {
        let node = fg.inbound_node();
        (
            node.total_pass(),
            node.block_request(),
            node.total_success(),
            node.total_exception(),
            node.cur_thread_num(),
        )
    };
    assert_eq!(inbound(&builtin), inbound(&generic));
    assert_eq!(builtin.block_log(), generic.block_log());
    assert_eq!(
        format!("{:?}", builtin.call_tree()),
        format!("{:?}", generic.call_tree())
    );
    let context_node = |fg: &Floodgate, resource: &str| {
        let node = fg
            .context_node(resource, "checkout")
            .expect("entered in the context");
        (
            node.total_pass(),
            node.block_request(),
            node.cur_thread_num(),
        )
    };
    for resource in ["C", "C-child"] {
        assert_eq!(
            context_node(&builtin, resource),
            context_node(&generic, resource),
            "{resource}"
        );
    }
    assert_eq!(
        builtin.slots().len() + 1,
        generic.slots().len(),
        "only the added slot differs"
    );
}
