//! A Floodgate token client and server on loopback sockets: pings count clients, tokens are granted
//! over the wire, and a server that never answers or is not there costs a caller at most the request
//! timeout and answers FAIL.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use floodgate_cluster::client::{ClientConfig, ClientState, TokenClient};
use floodgate_cluster::protocol::Param;
use floodgate_cluster::server::{LocalTokenService, TokenServer, TransportConfig};
use floodgate_core::cluster::TokenStatus;
use floodgate_core::{
    ClusterFlowConfig, FlowRule, ManualClock, ParamFlowClusterConfig, ParamFlowRule,
};

const T0: u64 = 1_700_000_000_000;

fn cluster_rule(flow_id: i64, count: f64, global: bool) -> FlowRule {
    let mut rule = FlowRule::new("GET:/orders", count);
    rule.cluster_mode = true;
    rule.cluster_config = Some(ClusterFlowConfig {
        flow_id,
        threshold_type: i32::from(global),
        ..ClusterFlowConfig::default()
    });
    rule
}

async fn server() -> (Arc<LocalTokenService>, TokenServer) {
    let service = Arc::new(LocalTokenService::new(Arc::new(ManualClock::new(T0))));
    let server = TokenServer::bind(
        "127.0.0.1:0".parse().unwrap(),
        service.clone(),
        TransportConfig::default(),
    )
    .await
    .unwrap();
    (service, server)
}

/// A client with a request timeout generous enough for a loaded test machine.
fn client(addr: SocketAddr, namespace: &str) -> TokenClient {
    TokenClient::start(ClientConfig {
        request_timeout: Duration::from_secs(5),
        ..ClientConfig::new(addr, namespace)
    })
}

/// Waits (yielding, without a timer) until `done` holds.
async fn until(mut done: impl FnMut() -> bool) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while !done() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the condition holds in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_ping_their_namespace_and_get_tokens_over_the_wire() {
    let (service, server) = server().await;
    service
        .load_flow_rules(
            "app",
            vec![cluster_rule(1, 3.0, true), cluster_rule(2, 2.0, false)],
        )
        .unwrap();
    let a = client(server.local_addr(), "app");
    a.started().await;
    assert_eq!(a.state(), ClientState::Started);
    let mut granted = Vec::new();
    for _ in 0..4 {
        granted.push(a.request_token(1, 1, false).await.status);
    }
    assert_eq!(
        granted,
        [
            TokenStatus::Ok,
            TokenStatus::Ok,
            TokenStatus::Ok,
            TokenStatus::Blocked
        ]
    );
    assert_eq!(a.request_token(1, 1, false).await.remaining, 0);
    assert_eq!(
        a.request_token(99, 1, false).await.status,
        TokenStatus::NoRuleExists
    );
    assert_eq!(
        a.request_token(1, 0, false).await.status,
        TokenStatus::BadRequest
    );

    // AVG_LOCAL: 2 per client; a second client doubles it.
    let b = client(server.local_addr(), "app");
    b.started().await;
    until(|| service.clients("app").len() == 2).await;
    let mut ok = 0;
    for _ in 0..6 {
        if b.request_token(2, 1, false).await.status == TokenStatus::Ok {
            ok += 1;
        }
    }
    assert_eq!(ok, 4);
    assert_eq!(b.connected_clients(), Some(2));

    // A client that goes leaves its namespace.
    drop(b);
    until(|| service.clients("app").len() == 1).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_parameter_tokens_go_over_the_wire() {
    let (service, server) = server().await;
    let mut rule = ParamFlowRule::new("R", 0, 1.0);
    rule.cluster_mode = true;
    rule.cluster_config = Some(ParamFlowClusterConfig {
        flow_id: 5,
        threshold_type: 1,
        ..Default::default()
    });
    service.load_param_rules("app", vec![rule]).unwrap();
    let c = client(server.local_addr(), "app");
    c.started().await;
    let ask = |v: i64| c.request_param_token(5, 1, vec![Param::Long(v)]);
    assert_eq!(ask(1).await.status, TokenStatus::Ok);
    assert_eq!(ask(1).await.status, TokenStatus::Blocked);
    assert_eq!(ask(2).await.status, TokenStatus::Ok);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_accepts_and_never_answers_costs_the_request_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        // Holds the connection open, reading nothing and answering nothing.
        std::future::pending::<()>().await;
        drop(stream);
    });
    let c = TokenClient::start(ClientConfig::new(addr, "app"));
    c.started().await;
    // The server would make the caller wait for ever: only the client's 20 ms timeout ends it.
    let result = tokio::time::timeout(Duration::from_secs(10), c.request_token(1, 1, false))
        .await
        .expect("answered by the timeout");
    assert_eq!(result.status, TokenStatus::Fail);
    held.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_server_means_fail_at_once_and_the_client_keeps_trying() {
    // A port nothing listens on: bind, then close.
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let c = TokenClient::start(ClientConfig {
        reconnect_delay: Duration::from_millis(10),
        ..ClientConfig::new(addr, "app")
    });
    assert_eq!(c.request_token(1, 1, false).await.status, TokenStatus::Fail);
    assert_ne!(c.state(), ClientState::Started);
    // A server on that port later: the client's next attempt connects.
    let service = Arc::new(LocalTokenService::new(Arc::new(ManualClock::new(T0))));
    service
        .load_flow_rules("app", vec![cluster_rule(1, 1.0, true)])
        .unwrap();
    let server = TokenServer::bind(addr, service, TransportConfig::default())
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), c.started())
        .await
        .expect("reconnected");
    assert_eq!(c.request_token(1, 1, false).await.status, TokenStatus::Ok);
    server.shutdown().await;
}
