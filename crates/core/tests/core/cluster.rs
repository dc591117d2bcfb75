//! Flow and hot-parameter rules in cluster mode ask the engine's token service, and fall back
//! visibly when it cannot answer.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use floodgate_core::cluster::{
    ThresholdType, TokenRequest, TokenResult, TokenService, TokenStatus,
};
use floodgate_core::{
    BlockKind, ClusterFlowConfig, Floodgate, FlowGrade, FlowRule, ManualClock,
    ParamFlowClusterConfig, ParamFlowItem, ParamFlowRule, ParamValue,
};

const T0: u64 = 1_700_000_000_000;

/// What a request carried.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    flow_id: i64,
    acquire: u32,
    prioritized: bool,
    resource: String,
    count: f64,
    threshold_type: ThresholdType,
    window: (u32, u32),
    params: Vec<ParamValue<'static>>,
}

#[derive(Debug, Default)]
struct Script {
    answers: Mutex<VecDeque<TokenStatus>>,
    wait_ms: i32,
    seen: Mutex<Vec<Seen>>,
    /// Time the service takes, on the test's clock.
    takes: Option<(ManualClock, Duration)>,
}

/// A token service that answers from a script (FAIL once the script is out).
#[derive(Debug, Clone, Default)]
struct Scripted(Arc<Script>);

impl Scripted {
    fn answering(statuses: &[TokenStatus]) -> Self {
        Scripted(Arc::new(Script {
            answers: Mutex::new(statuses.iter().copied().collect()),
            ..Script::default()
        }))
    }

    fn seen(&self) -> Vec<Seen> {
        self.0.seen.lock().unwrap().clone()
    }
}

impl TokenService for Scripted {
    fn request_token(&self, r: &TokenRequest<'_>) -> TokenResult {
        self.0.seen.lock().unwrap().push(Seen {
            flow_id: r.flow_id,
            acquire: r.acquire,
            prioritized: r.prioritized,
            resource: r.resource.to_owned(),
            count: r.count,
            threshold_type: r.threshold_type,
            window: (r.sample_count, r.window_interval_ms),
            params: r.params.iter().map(|p| p.clone().into_owned()).collect(),
        });
        if let Some((clock, takes)) = &self.0.takes {
            clock.advance(*takes);
        }
        let status = self
            .0
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(TokenStatus::Fail);
        TokenResult {
            status,
            remaining: 0,
            wait_ms: self.0.wait_ms,
        }
    }
}

fn cluster_rule(count: f64, fallback: bool) -> FlowRule {
    let mut rule = FlowRule::new("R", count);
    rule.cluster_mode = true;
    rule.cluster_config = Some(ClusterFlowConfig {
        flow_id: 42,
        threshold_type: 1,
        fallback_to_local_when_fail: fallback,
        ..ClusterFlowConfig::default()
    });
    rule
}

fn engine(service: Option<Scripted>, rule: FlowRule) -> (ManualClock, Floodgate) {
    let clock = ManualClock::new(T0);
    let mut builder = Floodgate::builder().clock(clock.clone());
    if let Some(service) = service {
        builder = builder.token_service(service);
    }
    let fg = builder.build();
    fg.load_flow_rules([rule]).unwrap();
    (clock, fg)
}

#[test]
fn the_token_service_decides_a_cluster_rule() {
    let service = Scripted::answering(&[TokenStatus::Ok, TokenStatus::Ok, TokenStatus::Blocked]);
    // Locally the rule admits nothing: only the service lets entries through.
    let (_clock, fg) = engine(Some(service.clone()), cluster_rule(0.0, true));
    drop(fg.entry("R").enter().expect("OK"));
    drop(fg.entry("R").count(3).prioritized().enter().expect("OK"));
    let block = fg.entry("R").enter().unwrap_err();
    assert_eq!(block.kind(), BlockKind::Flow);
    assert_eq!(
        service.seen()[1],
        Seen {
            flow_id: 42,
            acquire: 3,
            prioritized: true,
            resource: "R".into(),
            count: 0.0,
            threshold_type: ThresholdType::Global,
            window: (10, 1000),
            params: Vec::new(),
        }
    );
    let stats = fg.stats();
    assert_eq!(
        (stats.cluster_token_answers, stats.cluster_fallbacks),
        (3, 0)
    );
}

#[test]
fn should_wait_is_honoured() {
    let service = Scripted(Arc::new(Script {
        answers: Mutex::new([TokenStatus::ShouldWait].into()),
        wait_ms: 40,
        ..Script::default()
    }));
    let (_clock, fg) = engine(Some(service), cluster_rule(0.0, true));
    let entry = fg
        .entry("R")
        .prioritized()
        .enter()
        .expect("admitted after the wait");
    assert_eq!(entry.waited(), Duration::from_millis(40));
}

#[test]
fn a_service_that_cannot_answer_leaves_the_rule_to_its_local_check() {
    for status in [
        TokenStatus::Fail,
        TokenStatus::NoRuleExists,
        TokenStatus::TooManyRequest,
        TokenStatus::BadRequest,
        TokenStatus::NotAvailable,
    ] {
        let service = Scripted::answering(&[status, status]);
        let (_clock, fg) = engine(Some(service), cluster_rule(1.0, true));
        drop(fg.entry("R").enter().expect("within the local count"));
        assert!(
            fg.entry("R").enter().is_err(),
            "{status:?}: the local count, 1"
        );
        assert_eq!(fg.stats().cluster_fallbacks, 2);
    }
}

#[test]
fn without_a_service_a_cluster_rule_is_checked_locally() {
    let (_clock, fg) = engine(None, cluster_rule(1.0, true));
    assert!(!fg.has_token_service());
    drop(fg.entry("R").enter().unwrap());
    assert!(fg.entry("R").enter().is_err());
    assert_eq!(fg.stats().cluster_fallbacks, 2);
}

#[test]
fn a_cluster_rule_without_local_fallback_passes_visibly() {
    let (_clock, fg) = engine(None, cluster_rule(0.0, false));
    for _ in 0..3 {
        drop(fg.entry("R").enter().expect("passes the rule unchecked"));
    }
    let stats = fg.stats();
    assert_eq!(
        (stats.cluster_fallbacks, stats.cluster_passes_unchecked),
        (3, 3)
    );
}

#[test]
fn the_service_can_be_set_and_removed_while_the_engine_runs() {
    let (_clock, fg) = engine(None, cluster_rule(0.0, true));
    assert!(fg.entry("R").enter().is_err(), "locally: 0");
    fg.set_token_service(Some(Box::new(Scripted::answering(&[TokenStatus::Ok]))));
    assert!(fg.has_token_service());
    drop(fg.entry("R").enter().expect("the service's OK"));
    fg.set_token_service(None);
    assert!(fg.entry("R").enter().is_err());
}

#[test]
fn a_guarded_call_the_token_service_slows_is_visible_in_its_response_time() {
    let clock = ManualClock::new(T0);
    let service = Scripted(Arc::new(Script {
        answers: Mutex::new([TokenStatus::Ok].into()),
        takes: Some((clock.clone(), Duration::from_millis(15))),
        ..Script::default()
    }));
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .token_service(service)
        .build();
    fg.load_flow_rules([cluster_rule(5.0, true)]).unwrap();
    let entry = fg.entry("R").enter().unwrap();
    clock.advance(Duration::from_millis(5)); // the call itself
    drop(entry);
    assert_eq!(
        fg.cluster_node("R").unwrap().avg_rt(),
        20.0,
        "15 ms asking, 5 ms working"
    );
}

#[test]
fn local_rules_never_ask_the_service() {
    let service = Scripted::answering(&[]);
    let (_clock, fg) = engine(Some(service.clone()), FlowRule::new("R", 1.0));
    drop(fg.entry("R").enter().unwrap());
    assert!(fg.entry("R").enter().is_err());
    assert!(service.seen().is_empty());
}

fn cluster_param_rule(count: f64, fallback: bool) -> ParamFlowRule {
    let mut rule = ParamFlowRule::new("P", 0, count).item(ParamFlowItem::string("vip", 100));
    rule.cluster_mode = true;
    rule.cluster_config = Some(ParamFlowClusterConfig {
        flow_id: 7,
        threshold_type: 1,
        fallback_to_local_when_fail: fallback,
        sample_count: 5,
        window_interval_ms: 500,
    });
    rule
}

fn param_engine(service: Option<Scripted>, rules: Vec<ParamFlowRule>) -> Floodgate {
    let mut builder = Floodgate::builder().clock(ManualClock::new(T0));
    if let Some(service) = service {
        builder = builder.token_service(service);
    }
    let fg = builder.build();
    fg.load_param_flow_rules(rules).unwrap();
    fg
}

fn list(values: &[&str]) -> ParamValue<'static> {
    ParamValue::list(values.iter().map(|v| ParamValue::from(v.to_string())))
}

#[test]
fn each_value_of_a_cluster_param_rule_asks_with_its_own_threshold() {
    let service = Scripted::answering(&[TokenStatus::Ok, TokenStatus::Ok]);
    // Locally the rule admits nothing: only the service lets the values through.
    let fg = param_engine(Some(service.clone()), vec![cluster_param_rule(0.0, true)]);
    drop(
        fg.entry("P")
            .count(2)
            .args([list(&["guest", "vip"])])
            .enter()
            .expect("both values OK"),
    );
    let seen = service.seen();
    let asked: Vec<_> = seen.iter().map(|s| (s.count, s.params.clone())).collect();
    assert_eq!(
        asked,
        [
            (0.0, vec![ParamValue::from("guest")]),
            (100.0, vec![ParamValue::from("vip")]),
        ],
        "one request per value, with the value's threshold"
    );
    assert_eq!(
        (seen[0].flow_id, seen[0].acquire, seen[0].resource.as_str()),
        (7, 2, "P")
    );
    assert_eq!(
        (seen[0].threshold_type, seen[0].window),
        (ThresholdType::Global, (5, 500))
    );
    assert_eq!(fg.stats().cluster_token_answers, 2);
}

#[test]
fn a_value_the_service_blocks_blocks_the_call_with_that_value() {
    let service = Scripted::answering(&[TokenStatus::Ok, TokenStatus::Blocked]);
    // Locally every value would pass: the block is the service's.
    let fg = param_engine(Some(service.clone()), vec![cluster_param_rule(100.0, true)]);
    let block = fg
        .entry("P")
        .args([list(&["a", "b", "c"])])
        .enter()
        .unwrap_err();
    assert_eq!(block.kind(), BlockKind::ParamFlow);
    assert_eq!(block.param(), Some(ParamValue::from("b")));
    assert_eq!(
        service.seen().len(),
        2,
        "values after the blocked one are not asked"
    );
}

#[test]
fn only_the_values_the_service_cannot_answer_are_checked_locally() {
    use TokenStatus::{Fail, Ok};
    let service = Scripted::answering(&[Ok, Fail, Ok, Fail, Ok, Fail, Fail]);
    let fg = param_engine(Some(service), vec![cluster_param_rule(1.0, true)]);
    let call = |values: &[&str]| fg.entry("P").args([list(values)]).enter().map(drop);
    // `a` is answered by the service, `b` falls back to its local count of 1.
    assert!(call(&["a", "b"]).is_ok());
    assert!(call(&["a", "b"]).is_err(), "b's local count is spent");
    // `a` was never charged locally: its first local check passes, its second does not.
    assert!(call(&["a"]).is_ok(), "the service's OK");
    assert!(call(&["a"]).is_ok(), "a's first local check");
    assert!(call(&["a"]).is_err(), "a's second local check");
    let stats = fg.stats();
    assert_eq!(
        (stats.cluster_token_answers, stats.cluster_fallbacks),
        (3, 4)
    );
}

#[test]
fn a_param_rule_that_cannot_ask_and_does_not_fall_back_passes_visibly() {
    let fg = param_engine(None, vec![cluster_param_rule(0.0, false)]);
    for _ in 0..2 {
        drop(fg.entry("P").args(["v"]).enter().expect("passes unchecked"));
    }
    let stats = fg.stats();
    assert_eq!(
        (stats.cluster_fallbacks, stats.cluster_passes_unchecked),
        (2, 2)
    );
}

#[test]
fn a_param_value_told_to_wait_waits() {
    let service = Scripted(Arc::new(Script {
        answers: Mutex::new([TokenStatus::ShouldWait, TokenStatus::Ok].into()),
        wait_ms: 30,
        ..Script::default()
    }));
    let fg = param_engine(Some(service), vec![cluster_param_rule(0.0, true)]);
    let entry = fg
        .entry("P")
        .prioritized()
        .args([list(&["a", "b"])])
        .enter()
        .expect("admitted after the wait");
    assert_eq!(entry.waited(), Duration::from_millis(30));
}

#[test]
fn local_param_rules_and_thread_rules_beside_a_cluster_rule_are_checked_here() {
    let service = Scripted::answering(&[TokenStatus::Ok, TokenStatus::Ok, TokenStatus::Ok]);
    let local = ParamFlowRule::new("P", 0, 1.0);
    let mut threads = cluster_param_rule(1.0, true);
    threads.grade = FlowGrade::Thread;
    threads.cluster_config.as_mut().unwrap().flow_id = 8;
    let fg = param_engine(
        Some(service.clone()),
        vec![cluster_param_rule(0.0, true), local, threads],
    );
    let held = fg.entry("P").args(["v"]).enter().expect("all three admit");
    let block = fg.entry("P").args(["v"]).enter().unwrap_err();
    assert_eq!(block.kind(), BlockKind::ParamFlow);
    drop(held);
    let flow_ids: Vec<i64> = service.seen().iter().map(|s| s.flow_id).collect();
    assert_eq!(
        flow_ids,
        [7, 7],
        "only the QPS cluster rule asks; a THREAD rule is counted here"
    );
}
