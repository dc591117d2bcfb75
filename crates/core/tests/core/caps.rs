//! Resource and context caps: past them statistics stop, checks never do.

use std::sync::Arc;

use floodgate_core::slot::{Hooks, Slot, SlotContext};
use floodgate_core::{BlockError, BlockKind, Floodgate, ManualClock};

const T0: u64 = 1_700_000_000_000;

/// Has a "rule" (always blocks) for resources whose name starts with `ruled`.
#[derive(Debug)]
struct Ruled;

impl Slot for Ruled {
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        if cx.resource().starts_with("ruled") {
            return Err(cx.block(BlockKind::Flow));
        }
        Ok(())
    }
    fn has_rules(&self, resource: &str) -> bool {
        resource.starts_with("ruled")
    }
    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }
}

#[test]
fn past_the_resource_cap_rule_less_resources_pass_uncounted_and_ruled_ones_are_checked() {
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_resources(2)
        .slot("ruled", -2000, Arc::new(Ruled))
        .build();
    drop(fg.entry("a").enter().unwrap());
    drop(fg.entry("b").enter().unwrap());
    assert_eq!(fg.stats().resources, 2);
    // Over the cap: passes, no statistics, counted as a cap hit.
    drop(fg.entry("c").enter().unwrap());
    drop(fg.entry("c").enter().unwrap());
    assert!(fg.cluster_node("c").is_none());
    assert_eq!(fg.stats().resource_cap_hits, 2);
    // A resource with a rule is still created and checked: never fail open.
    let block = fg.entry("ruled-1").enter().unwrap_err();
    assert_eq!(block.kind(), BlockKind::Flow);
    assert_eq!(fg.cluster_node("ruled-1").unwrap().block_qps(), 1.0);
    // Existing resources keep counting.
    drop(fg.entry("a").enter().unwrap());
    assert_eq!(fg.cluster_node("a").unwrap().pass_qps(), 2.0);
}

#[test]
fn regex_rules_apply_to_every_name_past_the_cap() {
    use floodgate_core::RuleType;
    // Past the cap, names only regex rules match share a resource per set of matching rules: still
    // checked (a bound that let them pass unchecked was tried and reverted).
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_resources(10)
        .build();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/files/.*","regex":true,"count":0}]"#,
    )
    .unwrap();
    fg.load_rules_json(
        RuleType::Authority,
        r#"[{"resource":"GET:/admin/.*","regex":true,"limitApp":"evil","strategy":1}]"#,
    )
    .unwrap();
    for i in 0..100 {
        assert_eq!(
            fg.entry(&format!("GET:/files/{i}"))
                .enter()
                .map(drop)
                .unwrap_err()
                .kind(),
            BlockKind::Flow,
            "path {i}"
        );
        assert_eq!(
            fg.entry(&format!("GET:/admin/{i}"))
                .origin("evil")
                .enter()
                .map(drop)
                .unwrap_err()
                .kind(),
            BlockKind::Authority,
            "path {i}"
        );
    }
    let capped = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_resources(0)
        .build();
    capped
        .load_rules_json(
            RuleType::Flow,
            r#"[{"resource":"R.*","regex":true,"count":0}]"#,
        )
        .unwrap();
    assert!(capped.entry("R1").enter().is_err(), "a cap of 0 too");
    // 200 distinct paths make only the 10 resources of the cap, then one per regex rule: names built
    // from URLs cannot grow the registry without bound.
    assert_eq!(fg.stats().resources, 12);
    assert_eq!(capped.stats().resources, 1);
}

#[test]
fn past_the_cap_names_matched_by_the_same_regex_rules_share_their_limits() {
    use floodgate_core::RuleType;
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_resources(3)
        .build();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/users/.*","regex":true,"count":5},
            {"resource":"GET:/users/admin-.*","regex":true,"count":1000}]"#,
    )
    .unwrap();
    for name in ["a", "b", "c"] {
        drop(fg.entry(name).enter().unwrap());
    }
    // Past the cap: 100 distinct users, one call each, share the first one's resource and its 5 a
    // second (each had its own 5 before).
    let passed = (0..100)
        .filter(|i| fg.entry(&format!("GET:/users/{i}")).enter().is_ok())
        .count();
    assert_eq!(passed, 5);
    assert_eq!(fg.stats().resources, 4);
    let shared = fg.cluster_node("GET:/users/0").unwrap();
    assert_eq!((shared.pass_qps(), shared.block_qps()), (5.0, 95.0));
    assert!(
        fg.cluster_node("GET:/users/1").is_none(),
        "no resource of its own"
    );
    // Names matched by another set of regex rules share another resource.
    assert!(fg.entry("GET:/users/admin-1").enter().is_ok());
    assert!(fg.entry("GET:/users/admin-2").enter().is_ok());
    assert_eq!(fg.stats().resources, 5);
    assert_eq!(
        fg.cluster_node("GET:/users/admin-1").unwrap().pass_qps(),
        2.0
    );

    // A rule naming the shared resource's name exactly is that name's own: the others move on to a
    // resource of their own signature, which that rule does not apply to.
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/users/.*","regex":true,"count":5},
            {"resource":"GET:/users/0","count":0}]"#,
    )
    .unwrap();
    assert_eq!(
        fg.entry("GET:/users/0").enter().unwrap_err().kind(),
        BlockKind::Flow
    );
    assert!(fg.entry("GET:/users/7").enter().is_ok());
    assert!(
        fg.cluster_node("GET:/users/7").is_some(),
        "the new shared one"
    );
    assert!(fg.entry("GET:/users/8").enter().is_ok());
    assert_eq!(fg.cluster_node("GET:/users/7").unwrap().pass_qps(), 2.0);
    assert_eq!(fg.stats().resources, 6);

    // A regex rule loaded since matches the shared resource's name (7), and not another name of its
    // old signature (9): that one gets a resource of its own, not the rules of 7.
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/users/.*","regex":true,"count":5},
            {"resource":"GET:/users/[7-8]","regex":true,"count":0}]"#,
    )
    .unwrap();
    assert!(
        fg.entry("GET:/users/8").enter().is_err(),
        "matched by [7-8]"
    );
    assert!(
        fg.entry("GET:/users/9").enter().is_ok(),
        "not matched by [7-8]: not on the resource of 7"
    );
}

#[test]
fn past_the_cap_the_same_regex_rules_in_another_order_share_the_same_resource() {
    use floodgate_core::RuleType;
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_resources(0)
        .build();
    let load = |json: &str| fg.load_rules_json(RuleType::Flow, json).unwrap();
    load(
        r#"[{"resource":"x.*","regex":true,"count":100},{"resource":".*y","regex":true,"count":100}]"#,
    );
    drop(fg.entry("x1y").enter().unwrap());
    load(
        r#"[{"resource":".*y","regex":true,"count":100},{"resource":"x.*","regex":true,"count":100}]"#,
    );
    drop(fg.entry("x2y").enter().unwrap());
    assert_eq!(fg.stats().resources, 1, "x2y shares the resource of x1y");
    assert_eq!(fg.cluster_node("x1y").unwrap().pass_qps(), 2.0);
}

#[test]
fn past_the_cap_a_regex_breaker_is_shared_by_the_names_it_matches() {
    use floodgate_core::RuleType;
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_resources(0)
        .build();
    // Error count: more than 2 errors in a 1 s window open the breaker for 10 s.
    fg.load_rules_json(
        RuleType::Degrade,
        r#"[{"resource":"GET:/files/.*","regex":true,"grade":2,"count":2,"timeWindow":10,
             "minRequestAmount":1,"statIntervalMs":1000}]"#,
    )
    .unwrap();
    for i in 0..3 {
        let name = format!("GET:/files/{i}");
        let entry = fg.entry(&name).enter().unwrap();
        entry.trace(&std::io::Error::other("failed"));
    }
    // Three names erred once each: the shared breaker opened for every name it matches.
    let block = fg.entry("GET:/files/99").enter().unwrap_err();
    assert_eq!(block.kind(), BlockKind::Degrade);
    assert_eq!(fg.stats().resources, 1);
}

#[test]
fn past_the_context_cap_entries_run_in_the_default_context_and_are_still_checked() {
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_contexts(1) // one besides the default context
        .slot("ruled", -2000, Arc::new(Ruled))
        .build();
    fg.context("one").run(|| {
        assert_eq!(fg.entry("x").enter().unwrap().context_name(), "one");
    });
    fg.context("two").run(|| {
        let e = fg.entry("x").enter().unwrap();
        assert_eq!(e.context_name(), floodgate_core::DEFAULT_CONTEXT_NAME);
        assert!(fg.entry("ruled-x").enter().is_err(), "checks still run");
    });
    let stats = fg.stats();
    assert_eq!(stats.contexts, 2);
    assert!(stats.context_cap_hits >= 1);
}

#[test]
fn the_default_caps_are_sentinels() {
    assert_eq!(floodgate_core::DEFAULT_MAX_RESOURCES, 6000);
    assert_eq!(floodgate_core::DEFAULT_MAX_CONTEXTS, 2000);
}

/// 2000 named contexts, as in Sentinel: the default context does not count against the cap, so the
/// 2000th named context is still a context of its own, not the default one.
#[test]
fn the_default_context_does_not_count_against_the_context_cap() {
    let fg = Floodgate::builder().clock(ManualClock::new(T0)).build();
    for i in 0..2001 {
        let name = format!("c{i}");
        let got = fg
            .context(&name)
            .run(|| fg.entry("R").enter().unwrap().context_name().to_owned());
        let expected = if i < 2000 {
            name.as_str()
        } else {
            floodgate_core::DEFAULT_CONTEXT_NAME
        };
        assert_eq!(got, expected, "context #{}", i + 1);
    }
}

#[test]
fn system_rules_keep_every_resource_checked_past_the_cap() {
    use floodgate_core::{EntryType, RuleType};
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_resources(1)
        .build();
    drop(fg.entry("first").enter().unwrap());
    fg.load_rules_json(RuleType::System, r#"[{"qps":1}]"#)
        .unwrap();
    assert!(fg.entry("late").entry_type(EntryType::In).enter().is_ok());
    assert!(
        fg.entry("later").entry_type(EntryType::In).enter().is_err(),
        "system protection applies past the resource cap"
    );
}

#[test]
fn names_past_the_cap_share_one_resource_under_system_rules() {
    use floodgate_core::{EntryType, OVER_CAP_RESOURCE, RuleType};
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_resources(2)
        .build();
    fg.load_rules_json(RuleType::System, r#"[{"qps":300}]"#)
        .unwrap();
    let mut passed = 0;
    for i in 0..500 {
        // Names a client makes up (a raw path, an extension method): one each.
        if fg
            .entry(&format!("GET:/junk/{i}"))
            .entry_type(EntryType::In)
            .enter()
            .is_ok()
        {
            passed += 1;
        }
    }
    assert_eq!(
        passed, 300,
        "system protection applies to every one of them"
    );
    let stats = fg.stats();
    assert_eq!(stats.resources, 3, "two names and the shared one, not 500");
    assert_eq!(stats.resource_cap_hits, 498);
    let shared = fg.cluster_node(OVER_CAP_RESOURCE).unwrap();
    assert_eq!(
        (shared.pass_qps(), shared.block_qps()),
        (298.0, 200.0),
        "their traffic is counted together"
    );
}

#[test]
fn origins_past_the_cap_share_one_node_and_named_origins_keep_theirs() {
    use floodgate_core::{BlockKind, OVER_CAP_ORIGIN, RuleType};
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_origins(3)
        .build();
    // `vip` is limited on its own; every other caller together, 50 a second ("other" counts per
    // origin, and past the cap the callers share a node).
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"R","limitApp":"vip","count":1},
            {"resource":"R","limitApp":"other","count":50}]"#,
    )
    .unwrap();
    let enter = |origin: &str| fg.entry("R").origin(origin).enter().map(drop);
    let mut passed = 0;
    for i in 0..200 {
        // Callers a client makes up (an origin header).
        if enter(&format!("caller-{i}")).is_ok() {
            passed += 1;
        }
    }
    assert!(
        enter("vip").is_ok(),
        "a named origin has its own node, past the cap too"
    );
    assert_eq!(enter("vip").unwrap_err().kind(), BlockKind::Flow);
    let nodes = fg.origin_nodes("R");
    let names: Vec<&str> = nodes.iter().map(|n| &*n.name).collect();
    assert_eq!(
        nodes.len(),
        5,
        "three callers, the shared node and vip: {names:?}"
    );
    let shared = nodes.iter().find(|n| &*n.name == OVER_CAP_ORIGIN).unwrap();
    assert_eq!(shared.pass_qps, 50.0, "the other callers share one limit");
    assert_eq!(passed, 3 + 50);
}

/// Origins longer than `MAX_ORIGIN_LEN` (a header a client filled) share the over-cap node instead of
/// each being kept for good (a client could otherwise pin 100 KB per origin, up to the origin caps), in
/// contexts and owned entries too; rules may not name one.
#[test]
fn origins_longer_than_the_limit_share_one_node_and_rules_cannot_name_them() {
    use floodgate_core::{MAX_ORIGIN_LEN, OVER_CAP_ORIGIN, RuleError, RuleType};
    let fg = Floodgate::builder().clock(ManualClock::new(T0)).build();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"R","limitApp":"other","count":1000}]"#,
    )
    .unwrap();
    let longest = "a".repeat(MAX_ORIGIN_LEN);
    for i in 0..20 {
        let long = format!("{i:03}{}", "b".repeat(100_000));
        drop(fg.entry("R").origin(&long).enter().unwrap());
        drop(fg.entry("R").origin(&long).enter_owned().unwrap());
        fg.context("ctx")
            .origin(&long)
            .run(|| drop(fg.entry("R").enter().unwrap()));
    }
    drop(fg.entry("R").origin(&longest).enter().unwrap());
    let nodes = fg.origin_nodes("R");
    let mut names: Vec<&str> = nodes.iter().map(|n| &*n.name).collect();
    names.sort_unstable();
    assert_eq!(names, [OVER_CAP_ORIGIN, &*longest], "one shared node");
    let shared = nodes.iter().find(|n| &*n.name == OVER_CAP_ORIGIN).unwrap();
    assert_eq!(shared.pass_qps, 60.0);

    let too_long = "c".repeat(MAX_ORIGIN_LEN + 1);
    for (rule_type, json) in [
        (
            RuleType::Flow,
            format!(
                r#"[{{"resource":"R","count":1}},{{"resource":"R","limitApp":"{too_long}","count":1}}]"#
            ),
        ),
        (
            RuleType::Authority,
            format!(r#"[{{"resource":"R","limitApp":"a,{too_long}","strategy":0}}]"#),
        ),
    ] {
        let index = usize::from(rule_type == RuleType::Flow);
        match fg.load_rules_json(rule_type, &json) {
            Err(RuleError::Invalid {
                index: i, field, ..
            }) => assert_eq!((i, field.as_str()), (index, "limitApp"), "{rule_type:?}"),
            other => panic!("{rule_type:?}: {other:?}"),
        }
    }
    assert_eq!(fg.flow_rules().len(), 1, "the rules in force are kept");
    fg.load_rules_json(
        RuleType::Flow,
        &format!(r#"[{{"resource":"R","limitApp":"{longest}","count":1}}]"#),
    )
    .expect("an origin of the greatest length may be named");
}

#[test]
fn default_breakers_apply_past_the_cap_on_the_shared_resource() {
    use floodgate_core::{BreakerState, DegradeRule, OVER_CAP_RESOURCE};
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_resources(1)
        .build();
    drop(fg.entry("first").enter().unwrap());
    fg.load_degrade_rules([DegradeRule::error_count(
        floodgate_core::DEFAULT_DEGRADE_RESOURCE,
        0.0,
    )
    .time_window(10)
    .min_request_amount(1)])
        .unwrap();
    #[derive(Debug)]
    struct Boom;
    impl std::fmt::Display for Boom {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("boom")
        }
    }
    impl std::error::Error for Boom {}
    let failing = fg.entry("late-1").enter().unwrap();
    failing.trace(&Boom);
    drop(failing);
    assert!(
        fg.entry("late-2").enter().is_err(),
        "the shared default breaker opened"
    );
    assert_eq!(fg.stats().resources, 2, "one name and the shared one");
    let shared: Vec<_> = fg
        .circuit_breakers()
        .into_iter()
        .filter(|b| &*b.resource == OVER_CAP_RESOURCE)
        .map(|b| b.state)
        .collect();
    assert_eq!(shared, [BreakerState::Open]);
}

/// A key made past the cap while names share the over-cap resource keeps its own name, so
/// rules loaded later for that name apply to it.
#[test]
fn keys_made_past_the_cap_follow_rules_loaded_later() {
    use floodgate_core::{FlowRule, RuleType};
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_resources(1)
        .build();
    fg.load_rules_json(RuleType::System, r#"[{"qps":1000}]"#)
        .unwrap();
    drop(fg.entry("a").enter().unwrap());
    let key = fg.resource_key("b");
    assert_eq!(key.name(), "b");
    assert!(!key.is_resolved(), "no key resolved to the shared resource");
    fg.load_flow_rules([FlowRule::new("b", 0.0)]).unwrap();
    assert!(fg.entry_for(&key).enter().is_err(), "the rule on b applies");
    assert!(fg.entry("b").enter().is_err());
}

/// Past the caps, a RELATE rule's reference is still counted, and a context a CHAIN rule names is
/// still created: otherwise those rules never apply.
#[test]
fn references_of_relate_and_chain_rules_exist_past_the_caps() {
    use floodgate_core::{BlockKind, FlowRule, FlowStrategy};
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_resources(1)
        .max_contexts(1)
        .build();
    drop(fg.entry("first").enter().unwrap());
    fg.load_flow_rules([
        FlowRule::new("write", 2.0).strategy(FlowStrategy::Relate, "read"),
        FlowRule::new("R", 0.0).strategy(FlowStrategy::Chain, "c2"),
    ])
    .unwrap();
    for _ in 0..10 {
        drop(fg.entry("read").enter().unwrap());
    }
    assert_eq!(
        fg.entry("write").enter().unwrap_err().kind(),
        BlockKind::Flow,
        "read's traffic is counted past the cap"
    );
    fg.context("c1").run(|| drop(fg.entry("other").enter()));
    let in_c2 = fg.context("c2").run(|| fg.entry("R").enter().map(drop));
    assert_eq!(
        in_c2.unwrap_err().kind(),
        BlockKind::Flow,
        "c2 exists past the cap"
    );
    assert!(
        fg.entry("R").enter().is_ok(),
        "outside c2, the CHAIN rule does not apply"
    );
}
