//! The token server's service on a manual clock: thresholds GLOBAL and AVG_LOCAL, the request limiter,
//! borrowing for prioritized requests, and rule loads that change nothing when they fail.

use std::sync::Arc;
use std::time::Duration;

use floodgate_cluster::server::{LocalTokenService, ServerFlowConfig, ServerRuleError};
use floodgate_core::cluster::{TokenResult, TokenStatus};
use floodgate_core::{ClusterFlowConfig, FlowRule, ManualClock, RuleError};

const T0: u64 = 1_700_000_000_000;

fn rule(resource: &str, flow_id: i64, count: f64, global: bool) -> FlowRule {
    let mut rule = FlowRule::new(resource, count);
    rule.cluster_mode = true;
    rule.cluster_config = Some(ClusterFlowConfig {
        flow_id,
        threshold_type: i32::from(global),
        ..ClusterFlowConfig::default()
    });
    rule
}

fn service() -> (ManualClock, LocalTokenService) {
    let clock = ManualClock::new(T0);
    (clock.clone(), LocalTokenService::new(Arc::new(clock)))
}

fn statuses(s: &LocalTokenService, flow_id: i64, n: usize) -> Vec<TokenStatus> {
    (0..n)
        .map(|_| s.request_token(flow_id, 1, false).status)
        .collect()
}

fn count(statuses: &[TokenStatus], status: TokenStatus) -> usize {
    statuses.iter().filter(|s| **s == status).count()
}

#[test]
fn a_global_threshold_is_the_clusters_total_per_window() {
    let (clock, s) = service();
    s.load_flow_rules("app", vec![rule("GET:/orders", 1, 10.0, true)])
        .unwrap();
    assert_eq!(
        s.request_token(1, 1, false),
        TokenResult {
            status: TokenStatus::Ok,
            remaining: 9,
            wait_ms: 0
        }
    );
    let rest = statuses(&s, 1, 12);
    assert_eq!(count(&rest, TokenStatus::Ok), 9);
    assert_eq!(count(&rest, TokenStatus::Blocked), 3);
    clock.advance(Duration::from_millis(999));
    assert_eq!(
        s.request_token(1, 1, false).status,
        TokenStatus::Blocked,
        "same window"
    );
    clock.advance(Duration::from_millis(1));
    assert_eq!(
        count(&statuses(&s, 1, 12), TokenStatus::Ok),
        10,
        "a new window"
    );
    assert_eq!(
        s.request_token(1, 11, false).status,
        TokenStatus::Blocked,
        "more than the threshold at once"
    );
}

#[test]
fn an_average_local_threshold_scales_with_the_clients_connected() {
    let (clock, s) = service();
    s.load_flow_rules("app", vec![rule("R", 7, 5.0, false)])
        .unwrap();
    assert_eq!(
        s.request_token(7, 1, false).status,
        TokenStatus::Blocked,
        "no client: 0"
    );
    assert_eq!(s.connect("app", "10.0.0.1:5000"), 1);
    assert_eq!(s.connect("app", "10.0.0.2:5000"), 2);
    assert_eq!(s.connect("app", "10.0.0.3:5000"), 3);
    assert_eq!(
        s.connect("app", "10.0.0.3:5000"),
        3,
        "a ping again counts once"
    );
    assert_eq!(count(&statuses(&s, 7, 20), TokenStatus::Ok), 15);
    s.disconnect("10.0.0.3:5000");
    clock.advance(Duration::from_secs(1));
    assert_eq!(count(&statuses(&s, 7, 20), TokenStatus::Ok), 10);
    assert_eq!(s.clients("app"), ["10.0.0.1:5000", "10.0.0.2:5000"]);
    // A client that pings with another namespace leaves the first.
    s.connect("other", "10.0.0.2:5000");
    assert_eq!(s.clients("app"), ["10.0.0.1:5000"]);
}

#[test]
fn bad_requests_and_unknown_flow_ids_are_answered_so() {
    let (_clock, s) = service();
    s.load_flow_rules("app", vec![rule("R", 1, 10.0, true)])
        .unwrap();
    assert_eq!(s.request_token(1, 0, false).status, TokenStatus::BadRequest);
    assert_eq!(s.request_token(0, 1, false).status, TokenStatus::BadRequest);
    assert_eq!(
        s.request_token(-5, 1, false).status,
        TokenStatus::BadRequest
    );
    assert_eq!(
        s.request_token(2, 1, false).status,
        TokenStatus::NoRuleExists
    );
}

#[test]
fn a_namespace_past_its_max_allowed_qps_is_told_too_many_requests() {
    let (clock, s) = service();
    s.load_flow_rules("app", vec![rule("R", 1, 1000.0, true)])
        .unwrap();
    s.set_flow_config(
        "app",
        ServerFlowConfig {
            max_allowed_qps: 5.0,
            ..ServerFlowConfig::default()
        },
    )
    .unwrap();
    let answers = statuses(&s, 1, 8);
    assert_eq!(count(&answers, TokenStatus::Ok), 5);
    assert_eq!(count(&answers, TokenStatus::TooManyRequest), 3);
    clock.advance(Duration::from_secs(1));
    assert_eq!(s.request_token(1, 1, false).status, TokenStatus::Ok);
}

#[test]
fn exceed_count_scales_every_threshold() {
    let (_clock, s) = service();
    s.load_flow_rules("app", vec![rule("R", 1, 10.0, true)])
        .unwrap();
    s.set_flow_config(
        "app",
        ServerFlowConfig {
            exceed_count: 1.5,
            ..ServerFlowConfig::default()
        },
    )
    .unwrap();
    assert_eq!(count(&statuses(&s, 1, 20), TokenStatus::Ok), 15);
    assert_eq!(s.flow_metrics("app")[0].threshold, 15.0);
}

#[test]
fn a_prioritized_request_borrows_from_the_next_bucket_and_waits_for_it() {
    let (clock, s) = service();
    s.load_flow_rules("app", vec![rule("R", 1, 10.0, true)])
        .unwrap();
    assert_eq!(count(&statuses(&s, 1, 10), TokenStatus::Ok), 10);
    // In the window's first bucket nothing leaves with the next: no room to borrow.
    assert_eq!(s.request_token(1, 1, true).status, TokenStatus::Blocked);
    // In its last bucket, the first bucket's 10 passes leave with the next one.
    clock.advance(Duration::from_millis(930));
    assert_eq!(
        s.request_token(1, 1, true),
        TokenResult {
            status: TokenStatus::ShouldWait,
            remaining: 0,
            wait_ms: 70
        }
    );
    assert_eq!(
        s.request_token(1, 1, false).status,
        TokenStatus::Blocked,
        "not prioritized"
    );
    clock.advance(Duration::from_millis(70));
    let metric = &s.flow_metrics("app")[0];
    assert_eq!(
        metric.pass_qps, 1.0,
        "the borrowed pass counts in its bucket"
    );
    assert_eq!(count(&statuses(&s, 1, 12), TokenStatus::Ok), 9);
}

#[test]
fn the_figures_of_a_flow_id_are_its_windows() {
    let (_clock, s) = service();
    s.load_flow_rules("app", vec![rule("GET:/orders", 3, 4.0, true)])
        .unwrap();
    statuses(&s, 3, 6);
    let m = &s.flow_metrics("app")[0];
    assert_eq!(
        (m.flow_id, m.resource.as_str(), m.pass_qps, m.block_qps),
        (3, "GET:/orders", 4.0, 2.0)
    );
    assert_eq!((m.pass_request_qps, m.block_request_qps), (4.0, 2.0));
    assert!(s.flow_metrics("nobody").is_empty());
}

#[test]
fn a_bad_rule_list_names_its_rule_and_changes_nothing() {
    let (_clock, s) = service();
    s.load_flow_rules("app", vec![rule("R", 1, 2.0, true)])
        .unwrap();
    s.load_flow_rules("other", vec![rule("S", 9, 2.0, true)])
        .unwrap();
    let local = FlowRule::new("L", 1.0);
    let mut bad_window = rule("W", 4, 1.0, true);
    bad_window
        .cluster_config
        .as_mut()
        .unwrap()
        .window_interval_ms = 999;
    let mut thread = rule("T", 5, 1.0, true);
    thread.grade = floodgate_core::FlowGrade::Thread;
    let cases: Vec<(Vec<FlowRule>, &str)> = vec![
        (
            vec![rule("R", 1, 5.0, true), local],
            "rule 1: `clusterMode`",
        ),
        (
            vec![rule("A", 2, 1.0, true), rule("B", 2, 1.0, true)],
            "rule 1: `clusterConfig.flowId` is used by another rule",
        ),
        (
            vec![rule("A", 9, 1.0, true)],
            "rule 0: `clusterConfig.flowId` is used by a rule of namespace \"other\"",
        ),
        (vec![thread], "rule 0: `grade`"),
    ];
    for (rules, message) in cases {
        let error = s.load_flow_rules("app", rules).unwrap_err();
        assert!(error.to_string().starts_with(message), "{error}");
    }
    let error = s.load_flow_rules("app", vec![bad_window]).unwrap_err();
    assert!(
        matches!(&error, ServerRuleError::Invalid(RuleError::Invalid { index: 0, field, .. }) if field == "clusterConfig.windowIntervalMs"),
        "{error:?}"
    );
    // The rule in force is the first one: count 2.
    assert_eq!(s.flow_rules("app"), [rule("R", 1, 2.0, true)]);
    assert_eq!(count(&statuses(&s, 1, 5), TokenStatus::Ok), 2);
}

#[test]
fn reloading_a_rule_keeps_its_counts_unless_its_window_changes() {
    let (_clock, s) = service();
    s.load_flow_rules("app", vec![rule("R", 1, 3.0, true)])
        .unwrap();
    assert_eq!(count(&statuses(&s, 1, 3), TokenStatus::Ok), 3);
    s.load_flow_rules("app", vec![rule("R", 1, 4.0, true)])
        .unwrap();
    assert_eq!(
        count(&statuses(&s, 1, 3), TokenStatus::Ok),
        1,
        "3 passes carried over"
    );
    let mut new_window = rule("R", 1, 4.0, true);
    new_window.cluster_config.as_mut().unwrap().sample_count = 5;
    s.load_flow_rules("app", vec![new_window]).unwrap();
    assert_eq!(
        count(&statuses(&s, 1, 5), TokenStatus::Ok),
        4,
        "a new window starts empty"
    );
    // Rules removed from the namespace are gone.
    s.load_flow_rules("app", vec![]).unwrap();
    assert_eq!(
        s.request_token(1, 1, false).status,
        TokenStatus::NoRuleExists
    );
    assert_eq!(s.namespaces(), ["app"]);
}

fn param_rule(flow_id: i64, count: f64, global: bool) -> floodgate_core::ParamFlowRule {
    let mut rule = floodgate_core::ParamFlowRule::new("R", 0, count)
        .item(floodgate_core::ParamFlowItem::string("vip", 5));
    rule.param_flow_item_list
        .push(floodgate_core::ParamFlowItem {
            object: "7".into(),
            count: 1,
            class_type: Some("int".into()),
        });
    rule.cluster_mode = true;
    rule.cluster_config = Some(floodgate_core::ParamFlowClusterConfig {
        flow_id,
        threshold_type: i32::from(global),
        ..Default::default()
    });
    rule
}

#[test]
fn each_parameter_value_has_its_own_threshold_and_window() {
    use floodgate_cluster::protocol::Param;
    let (clock, s) = service();
    s.load_param_rules("app", vec![param_rule(1, 2.0, true)])
        .unwrap();
    let ask = |p: Param| s.request_param_token(1, 1, &[p]).status;
    let guests: Vec<_> = (0..3).map(|_| ask(Param::Str("guest".into()))).collect();
    assert_eq!(
        guests,
        [TokenStatus::Ok, TokenStatus::Ok, TokenStatus::Blocked]
    );
    assert_eq!(
        count(
            &(0..7)
                .map(|_| ask(Param::Str("vip".into())))
                .collect::<Vec<_>>(),
            TokenStatus::Ok
        ),
        5,
        "its item: 5"
    );
    // The int item 7 stands for 7 of any integer type.
    assert_eq!(ask(Param::Long(7)), TokenStatus::Ok);
    assert_eq!(ask(Param::Int(7)), TokenStatus::Blocked);
    assert_eq!(
        ask(Param::Str("7".into())),
        TokenStatus::Ok,
        "a string is another value"
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(ask(Param::Str("guest".into())), TokenStatus::Ok);
    assert_eq!(
        s.request_param_token(1, 1, &[Param::Str("a".into())]),
        TokenResult {
            status: TokenStatus::Ok,
            remaining: 1,
            wait_ms: 0
        }
    );
}

#[test]
fn a_request_with_several_values_passes_only_if_each_does_and_then_counts_each() {
    use floodgate_cluster::protocol::Param;
    let (_clock, s) = service();
    s.load_param_rules("app", vec![param_rule(2, 2.0, true)])
        .unwrap();
    let (a, b) = (Param::Str("a".into()), Param::Str("b".into()));
    assert_eq!(
        s.request_param_token(2, 2, std::slice::from_ref(&a)).status,
        TokenStatus::Ok
    );
    let both = s.request_param_token(2, 1, &[b.clone(), a.clone()]);
    assert_eq!(both.status, TokenStatus::Blocked, "a is full");
    assert_eq!(
        s.request_param_token(2, 2, std::slice::from_ref(&b)).status,
        TokenStatus::Ok,
        "the blocked request counted nothing for b"
    );
    let c = Param::Str("c".into());
    let d = Param::Str("d".into());
    assert_eq!(
        s.request_param_token(2, 1, &[c, d]),
        TokenResult {
            status: TokenStatus::Ok,
            remaining: -1,
            wait_ms: 0
        },
        "no remaining reported for several values"
    );
    assert_eq!(
        s.request_param_token(2, 1, &[]).status,
        TokenStatus::BadRequest
    );
    assert_eq!(
        s.request_param_token(3, 1, &[b]).status,
        TokenStatus::NoRuleExists
    );
}

#[test]
fn an_average_local_param_threshold_scales_with_the_clients() {
    use floodgate_cluster::protocol::Param;
    let (_clock, s) = service();
    s.load_param_rules("app", vec![param_rule(1, 2.0, false)])
        .unwrap();
    s.connect("app", "a:1");
    s.connect("app", "b:1");
    let answers: Vec<_> = (0..6)
        .map(|_| {
            s.request_param_token(1, 1, &[Param::Str("x".into())])
                .status
        })
        .collect();
    assert_eq!(count(&answers, TokenStatus::Ok), 4);
}

#[test]
fn hot_parameter_rules_are_checked_as_flow_rules_are() {
    let (_clock, s) = service();
    let mut local = param_rule(1, 1.0, true);
    local.cluster_mode = false;
    let error = s.load_param_rules("app", vec![local]).unwrap_err();
    assert!(
        error.to_string().starts_with("rule 0: `clusterMode`"),
        "{error}"
    );
    let mut bad = param_rule(1, 1.0, true);
    bad.cluster_config.as_mut().unwrap().flow_id = 0;
    assert!(matches!(
        s.load_param_rules("app", vec![bad]),
        Err(ServerRuleError::Invalid(_))
    ));
    // Flow ids of flow rules and of hot-parameter rules are apart, as in Sentinel.
    s.load_flow_rules("app", vec![rule("F", 1, 1.0, true)])
        .unwrap();
    s.load_param_rules("app", vec![param_rule(1, 1.0, true)])
        .unwrap();
    assert_eq!(s.param_rules("app").len(), 1);
    assert_eq!(s.flow_rules("app").len(), 1);
}

#[test]
fn an_engine_asks_an_embedded_service_in_process() {
    let (_clock, s) = service();
    let s = Arc::new(s);
    s.load_flow_rules("app", vec![rule("R", 42, 2.0, true)])
        .unwrap();
    let fg = floodgate_core::Floodgate::builder()
        .clock(ManualClock::new(T0))
        .token_service(Arc::clone(&s))
        .build();
    // The engine's own copy of the rule, in cluster mode: its local count would admit 100.
    fg.load_flow_rules([rule("R", 42, 100.0, true)]).unwrap();
    let admitted = (0..5).filter(|_| fg.entry("R").enter().is_ok()).count();
    assert_eq!(admitted, 2, "the server's count");
    assert_eq!(fg.stats().cluster_token_answers, 5);
}

#[test]
fn a_namespace_only_pings_made_goes_with_its_last_client() {
    let (_clock, s) = service();
    s.load_flow_rules("app", vec![rule("R", 1, 1.0, true)])
        .unwrap();
    for i in 0..100 {
        s.connect(&format!("made-up-{i}"), "10.0.0.9:1");
    }
    assert_eq!(
        s.namespaces(),
        ["app", "made-up-99"],
        "each ping moved the client on"
    );
    s.disconnect("10.0.0.9:1");
    assert_eq!(s.namespaces(), ["app"]);
    // A namespace with rules stays without clients.
    s.connect("app", "10.0.0.1:1");
    s.disconnect("10.0.0.1:1");
    assert_eq!(s.namespaces(), ["app"]);
}
