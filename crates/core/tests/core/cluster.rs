//! Flow rules in cluster mode ask the engine's token service, and fall back visibly when it cannot
//! answer.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use floodgate_core::cluster::{
    ThresholdType, TokenRequest, TokenResult, TokenService, TokenStatus,
};
use floodgate_core::{BlockKind, ClusterFlowConfig, Floodgate, FlowRule, ManualClock};

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
