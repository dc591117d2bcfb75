//! An engine's cluster rules through a token server: tokens fetched ahead over Sentinel's
//! protocol, one limit for every engine asking the server, and local checks while it is gone.

mod admit;

use std::sync::Arc;
use std::time::Duration;

use admit::admit_all_with;
use floodgate_cluster::client::ClientConfig;
use floodgate_cluster::lease::{FetchError, Fetcher, LeaseConfig, RemoteTokenService, WindowTerms};
use floodgate_cluster::server::{LocalTokenService, TokenServer, TransportConfig};
use floodgate_core::cluster::{ThresholdType, TokenRequest, TokenStatus};
use floodgate_core::{
    ClusterFlowConfig, Floodgate, FlowRule, ManualClock, ParamFlowClusterConfig, ParamFlowItem,
    ParamFlowRule, ParamValue,
};

const T0: u64 = 1_700_000_000_000;

fn cluster_rule(count: f64) -> FlowRule {
    let mut rule = FlowRule::new("GET:/orders", count);
    rule.cluster_mode = true;
    rule.cluster_config = Some(ClusterFlowConfig {
        flow_id: 31,
        threshold_type: 1,
        ..ClusterFlowConfig::default()
    });
    rule
}

fn request(count: f64) -> TokenRequest<'static> {
    let mut request = TokenRequest::new(31, 1, "GET:/orders", count);
    request.threshold_type = ThresholdType::Global;
    request
}

/// A GLOBAL hot-parameter rule (flow id 41) on argument 0: 2 per value, `vip` 4.
fn cluster_param_rule() -> ParamFlowRule {
    let mut rule = ParamFlowRule::new("GET:/orders", 0, 2.0).item(ParamFlowItem::string("vip", 4));
    rule.cluster_mode = true;
    rule.cluster_config = Some(ParamFlowClusterConfig {
        flow_id: 41,
        threshold_type: 1,
        ..ParamFlowClusterConfig::default()
    });
    rule
}

/// A server on a frozen clock serving the flow rule with `count` and [`cluster_param_rule`] to
/// namespace `app`.
async fn server(count: f64) -> TokenServer {
    let service = Arc::new(LocalTokenService::new(Arc::new(ManualClock::new(T0))));
    service
        .load_flow_rules("app", vec![cluster_rule(count)])
        .unwrap();
    service
        .load_param_rules("app", vec![cluster_param_rule()])
        .unwrap();
    TokenServer::bind(
        "127.0.0.1:0".parse().unwrap(),
        service,
        TransportConfig::default(),
    )
    .await
    .unwrap()
}

async fn remote(server: &TokenServer) -> Arc<RemoteTokenService> {
    let config = ClientConfig {
        request_timeout: Duration::from_secs(5),
        ..ClientConfig::new(server.local_addr(), "app")
    };
    let service = RemoteTokenService::connect(
        config,
        LeaseConfig::default(),
        &tokio::runtime::Handle::current(),
    );
    service.fetcher().client().started().await;
    Arc::new(service)
}

fn engine(service: &Arc<RemoteTokenService>, count: f64) -> Floodgate {
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .token_service(service.clone())
        .build();
    fg.load_flow_rules([cluster_rule(count)]).unwrap();
    fg
}

/// Enters until the server grants no more, fetching first and whenever the lease is empty.
async fn admit_all(fg: &Floodgate, service: &RemoteTokenService) -> u32 {
    admit_all_with(service, &request(5.0), || {
        fg.entry("GET:/orders").enter().is_ok()
    })
    .await
}

#[tokio::test(flavor = "current_thread")]
async fn two_engines_asking_one_token_server_admit_its_limit_in_total() {
    let server = server(5.0).await;
    let (a, b) = (remote(&server).await, remote(&server).await);
    let (fg_a, fg_b) = (engine(&a, 5.0), engine(&b, 5.0));
    let total = admit_all(&fg_a, &a).await + admit_all(&fg_b, &b).await;
    assert_eq!(total, 5);
    assert_eq!(
        fg_a.stats().cluster_fallbacks + fg_b.stats().cluster_fallbacks,
        0
    );
    assert!(fg_a.entry("GET:/orders").enter().is_err());
}

#[tokio::test(flavor = "current_thread")]
async fn a_fetch_the_server_refuses_whole_asks_again_for_one() {
    let server = server(2.0).await;
    let service = remote(&server).await;
    let terms = WindowTerms {
        flow_id: 31,
        count: 2.0,
        threshold_type: ThresholdType::Global,
        sample_count: 10,
        window_interval_ms: 1000,
    };
    let fetcher = service.fetcher();
    assert_eq!(fetcher.fetch(&terms, None, 1).await.unwrap().granted, 1);
    // One token is left: three are refused, one is granted.
    let grant = fetcher.fetch(&terms, None, 3).await.unwrap();
    assert_eq!((grant.granted, fetcher.calls()), (1, 3));
    let none = fetcher.fetch(&terms, None, 1).await.unwrap();
    assert_eq!(
        (none.granted, none.free_in_ms),
        (0, 100),
        "blocked for one bucket"
    );
    let unknown = WindowTerms {
        flow_id: 77,
        ..terms
    };
    assert!(matches!(
        fetcher.fetch(&unknown, None, 1).await,
        Err(FetchError::Refused(TokenStatus::NoRuleExists))
    ));
}

#[tokio::test(flavor = "current_thread")]
async fn without_its_server_the_rule_is_checked_locally() {
    let server = server(100.0).await;
    let service = remote(&server).await;
    let fg = engine(&service, 2.0);
    service.prefetch(&request(2.0)).await.unwrap();
    server.shutdown().await;
    // The lease's token is used; then the fetch has failed and the local count (2, the entry the
    // lease admitted included) decides.
    let failed = service.prefetch(&request(2.0)).await.unwrap_err();
    assert!(
        matches!(failed, FetchError::Refused(TokenStatus::Fail)),
        "{failed:?}"
    );
    let passed: Vec<bool> = (0..4)
        .map(|_| fg.entry("GET:/orders").enter().is_ok())
        .collect();
    assert_eq!(passed, [true, true, false, false]);
    assert_eq!(fg.stats().cluster_fallbacks, 3);
}

#[tokio::test(flavor = "current_thread")]
async fn two_engines_asking_one_token_server_admit_each_values_limit_in_total() {
    let server = server(5.0).await;
    let (a, b) = (remote(&server).await, remote(&server).await);
    let engine = |service: &Arc<RemoteTokenService>| {
        let fg = Floodgate::builder()
            .clock(ManualClock::new(T0))
            .token_service(service.clone())
            .build();
        fg.load_param_flow_rules([cluster_param_rule()]).unwrap();
        fg
    };
    let (fg_a, fg_b) = (engine(&a), engine(&b));
    for (value, limit) in [("alice", 2), ("vip", 4)] {
        let values = [ParamValue::from(value)];
        let mut request = TokenRequest::new(41, 1, "GET:/orders", f64::from(limit));
        request.threshold_type = ThresholdType::Global;
        request.params = &values;
        let mut admitted = 0;
        for (fg, service) in [(&fg_a, &a), (&fg_b, &b)] {
            admitted += admit_all_with(service, &request, || {
                fg.entry("GET:/orders").args([value]).enter().is_ok()
            })
            .await;
        }
        assert_eq!(admitted, limit, "{value}");
    }
    assert_eq!(
        fg_a.stats().cluster_fallbacks + fg_b.stats().cluster_fallbacks,
        0
    );
}

#[test]
fn an_embedded_token_service_counts_each_value_of_a_hot_parameter_rule() {
    let service = Arc::new(LocalTokenService::new(Arc::new(ManualClock::new(T0))));
    service
        .load_param_rules("app", vec![cluster_param_rule()])
        .unwrap();
    service.set_namespaces(&["app".to_owned()]);
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .token_service(Arc::clone(&service))
        .build();
    fg.load_param_flow_rules([cluster_param_rule()]).unwrap();
    let admitted = |value: &str| {
        (0..10)
            .filter(|_| fg.entry("GET:/orders").args([value]).enter().is_ok())
            .count()
    };
    assert_eq!(
        (admitted("alice"), admitted("vip"), admitted("bob")),
        (2, 4, 2)
    );
    assert_eq!(
        fg.stats().cluster_fallbacks,
        0,
        "the service decided every value"
    );
}
