//! The cluster commands (feature `cluster`), through `Agent::router()`: the mode, the embedded
//! server's rules and settings per namespace, tokens granted to a client over the token protocol,
//! the client role of a token server `cluster/client/modifyConfig` names, and of a Redis.

#[path = "../../cluster/tests/redis_server/mod.rs"]
mod redis_server;
mod support;

use std::time::Duration;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode, header};
use floodgate_cluster::client::{ClientConfig, TokenClient};
use floodgate_core::cluster::TokenStatus;
use serde_json::Value;
use support::*;
use tower::ServiceExt;

async fn call(router: &Router, command: &str, pairs: &[(&str, &str)]) -> (StatusCode, String) {
    let request = Request::post(format!("/{command}"))
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(form(pairs)))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// A started token client of the namespace `test-app` at the server on `port`, after checking
/// that the server grants flow 7 (a rule of count 2) two tokens of three.
async fn client_granting_two_of_three(port: &str) -> TokenClient {
    let client = TokenClient::start(ClientConfig {
        request_timeout: Duration::from_secs(5),
        ..ClientConfig::new(format!("127.0.0.1:{port}").parse().unwrap(), "test-app")
    });
    client.started().await;
    let mut answers = Vec::new();
    for _ in 0..3 {
        answers.push(client.request_token(7, 1, false).await.status);
    }
    assert_eq!(
        answers,
        [TokenStatus::Ok, TokenStatus::Ok, TokenStatus::Blocked]
    );
    client
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

const RULES: &str = r#"[{"resource":"GET:/orders","count":2,"clusterMode":true,"clusterConfig":{"flowId":7,"thresholdType":1}}]"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_serves_its_clusters_tokens_once_in_server_mode() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let router = agent.router();
    const OK: StatusCode = StatusCode::OK;
    const BAD: StatusCode = StatusCode::BAD_REQUEST;

    let mode = json(&call(&router, "getClusterMode", &[]).await.1);
    assert_eq!(
        (mode["mode"].as_i64(), mode["serverAvailable"].as_bool()),
        (Some(-1), Some(true))
    );
    assert_eq!(mode["clientAvailable"].as_bool(), Some(true));
    assert_eq!(mode["backend"].as_str(), Some("none"));
    let (status, body) = call(&router, "setClusterMode", &[("mode", "0")]).await;
    assert_eq!(status, BAD, "no token server is named yet: {body}");
    assert_eq!(
        call(&router, "setClusterMode", &[("mode", "2")]).await.0,
        BAD
    );

    let port = free_port().to_string();
    let (status, body) = call(
        &router,
        "cluster/server/modifyTransportConfig",
        &[("port", &port), ("idleSeconds", "60")],
    )
    .await;
    assert_eq!((status, body.as_str()), (OK, "success"));
    assert_eq!(
        call(
            &router,
            "cluster/server/modifyTransportConfig",
            &[("port", "0")]
        )
        .await
        .0,
        BAD
    );
    assert_eq!(
        call(&router, "setClusterMode", &[("mode", "1")]).await,
        (OK, "success".to_owned())
    );
    assert_eq!(
        json(&call(&router, "getClusterMode", &[]).await.1)["mode"].as_i64(),
        Some(1)
    );

    // Rules for the application's own namespace (its name, by default).
    assert_eq!(
        call(
            &router,
            "cluster/server/modifyFlowRules",
            &[("data", RULES)]
        )
        .await,
        (OK, "success".to_owned())
    );
    let rules = json(&call(&router, "cluster/server/flowRules", &[]).await.1);
    assert_eq!(rules[0]["clusterConfig"]["flowId"].as_i64(), Some(7));
    // A bad list changes nothing and says which rule.
    let bad = r#"[{"resource":"R","count":1}]"#;
    let (status, body) = call(&router, "cluster/server/modifyFlowRules", &[("data", bad)]).await;
    assert_eq!(status, BAD);
    assert!(body.contains("rule 0: `clusterMode`"), "{body}");
    assert_eq!(
        json(
            &call(
                &router,
                "cluster/server/flowRules",
                &[("namespace", "test-app")]
            )
            .await
            .1
        )
        .as_array()
        .unwrap()
        .len(),
        1
    );

    // A client of the namespace gets the server's tokens over the wire.
    let _client = client_granting_two_of_three(&port).await;

    let info = json(&call(&router, "cluster/server/info", &[]).await.1);
    assert_eq!(info["embedded"].as_bool(), Some(true));
    assert_eq!(info["appName"].as_str(), Some("test-app"));
    assert_eq!(info["transport"]["idleSeconds"].as_u64(), Some(60));
    let connection = info["connection"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["namespace"] == "test-app")
        .unwrap();
    assert_eq!(connection["connectedCount"].as_u64(), Some(1));
    let metrics = json(
        &call(
            &router,
            "cluster/server/metricList",
            &[("namespace", "test-app")],
        )
        .await
        .1,
    );
    assert_eq!(
        (
            metrics[0]["flowId"].as_i64(),
            metrics[0]["passQps"].as_f64(),
            metrics[0]["blockQps"].as_f64()
        ),
        (Some(7), Some(2.0), Some(1.0))
    );
    assert_eq!(
        call(&router, "cluster/server/metricList", &[]).await.0,
        BAD,
        "namespace is required"
    );

    // The application's own cluster rule asks the same service: its tokens are spent.
    fg.load_rules_json(floodgate_core::RuleType::Flow, RULES)
        .unwrap();
    assert!(fg.entry("GET:/orders").enter().is_err());
    assert_eq!(fg.stats().cluster_token_answers, 1);

    // Settings per namespace, checked whole.
    let (status, body) = call(
        &router,
        "cluster/server/modifyFlowConfig",
        &[("data", r#"{"maxAllowedQps":100,"exceedCount":1.5}"#)],
    )
    .await;
    assert_eq!((status, body.as_str()), (OK, "success"));
    let config = json(&call(&router, "cluster/server/fetchConfig", &[]).await.1);
    assert_eq!(
        (
            config["flow"]["maxAllowedQps"].as_f64(),
            config["flow"]["exceedCount"].as_f64()
        ),
        (Some(100.0), Some(1.5))
    );
    assert_eq!(
        call(
            &router,
            "cluster/server/modifyFlowConfig",
            &[("data", r#"{"sampleCount":3}"#)]
        )
        .await
        .0,
        BAD
    );
    assert_eq!(
        json(&call(&router, "cluster/server/fetchConfig", &[]).await.1)["flow"]["maxAllowedQps"]
            .as_f64(),
        Some(100.0)
    );

    // A namespace set that leaves the application's namespace out drops its rules.
    assert_eq!(
        call(
            &router,
            "cluster/server/modifyNamespaceSet",
            &[("data", r#"["other"]"#)]
        )
        .await
        .0,
        OK
    );
    assert!(
        json(&call(&router, "cluster/server/flowRules", &[]).await.1)
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        call(
            &router,
            "cluster/server/modifyNamespaceSet",
            &[("data", r#"["", "x"]"#)]
        )
        .await
        .0,
        BAD
    );
    let api = call(&router, "api", &[]).await.1;
    assert!(api.contains("/cluster/server/modifyFlowRules"), "{api}");
}

/// Waits (yielding) until `done` holds: for what the agent's own thread does.
async fn until(mut done: impl FnMut() -> bool) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while !done() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the condition holds in time");
}

/// Enters until the engine's token service has answered an entry (its first entries fall back
/// while the first fetch is on its way, on the agent's thread).
async fn until_answered(fg: &floodgate_core::Floodgate) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while fg.stats().cluster_token_answers == 0 {
            drop(fg.entry("GET:/orders").enter());
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the token service answered in time");
}

const CLIENT_RULES: &str = r#"[{"resource":"GET:/orders","count":1000,"clusterMode":true,"clusterConfig":{"flowId":7,"thresholdType":1}}]"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_is_a_client_of_the_token_server_it_is_given() {
    use floodgate_cluster::server::{LocalTokenService, TokenServer, TransportConfig};
    let service = std::sync::Arc::new(LocalTokenService::default());
    service
        .load_flow_rules(
            "test-app",
            floodgate_core::FlowRule::deserialize_list(&mut serde_json::Deserializer::from_str(
                CLIENT_RULES,
            ))
            .unwrap(),
        )
        .unwrap();
    let server = TokenServer::bind(
        "127.0.0.1:0".parse().unwrap(),
        service.clone(),
        TransportConfig::default(),
    )
    .await
    .unwrap();
    let (_clock, fg) = engine();
    fg.load_rules_json(floodgate_core::RuleType::Flow, CLIENT_RULES)
        .unwrap();
    let agent = builder(&fg).start().unwrap();
    let router = agent.router();
    const OK: StatusCode = StatusCode::OK;
    const BAD: StatusCode = StatusCode::BAD_REQUEST;

    for (data, field) in [
        (r#"{"serverHost":"","serverPort":1}"#, "serverHost"),
        (r#"{"serverHost":"127.0.0.1","serverPort":0}"#, "serverPort"),
        (
            r#"{"serverHost":"127.0.0.1","serverPort":70000}"#,
            "serverPort",
        ),
        (
            r#"{"serverHost":"127.0.0.1","serverPort":1,"requestTimeout":0}"#,
            "requestTimeout",
        ),
        (r#"{"serverHost":7,"serverPort":1}"#, "serverHost"),
        ("[1]", "object"),
    ] {
        let (status, body) = call(&router, "cluster/client/modifyConfig", &[("data", data)]).await;
        assert_eq!(status, BAD, "{data}");
        assert!(body.contains(field), "{data}: {body}");
    }
    assert_eq!(
        call(&router, "cluster/client/modifyConfig", &[]).await.0,
        BAD
    );
    let unchanged = json(&call(&router, "cluster/client/fetchConfig", &[]).await.1);
    assert_eq!(unchanged["serverPort"].as_u64(), Some(0), "nothing was set");

    let data = format!(
        r#"{{"serverHost":"127.0.0.1","serverPort":{},"requestTimeout":5000}}"#,
        server.local_addr().port()
    );
    let (status, body) = call(&router, "cluster/client/modifyConfig", &[("data", &data)]).await;
    assert_eq!((status, body.as_str()), (OK, "success"));
    assert_eq!(
        call(&router, "setClusterMode", &[("mode", "0")]).await.0,
        OK
    );
    let mode = json(&call(&router, "getClusterMode", &[]).await.1);
    assert_eq!(
        (mode["mode"].as_i64(), mode["backend"].as_str()),
        (Some(0), Some("client"))
    );
    until(|| service.clients("test-app").len() == 1).await;
    let config = json(&call(&router, "cluster/client/fetchConfig", &[]).await.1);
    assert_eq!(config["serverHost"].as_str(), Some("127.0.0.1"));
    assert_eq!(
        config["serverPort"].as_u64(),
        Some(u64::from(server.local_addr().port()))
    );
    assert_eq!(config["requestTimeout"].as_u64(), Some(5000));
    assert_eq!(config["clientState"].as_u64(), Some(2), "started");

    // The engine's cluster rule takes its tokens from the server.
    until_answered(&fg).await;
    assert!(service.flow_metrics("test-app")[0].pass_qps > 0.0);

    // Server mode drops the client; client mode comes back to the server.
    assert_eq!(
        call(&router, "setClusterMode", &[("mode", "1")]).await.0,
        OK
    );
    until(|| service.clients("test-app").is_empty()).await;
    let mode = json(&call(&router, "getClusterMode", &[]).await.1);
    assert_eq!(
        (mode["mode"].as_i64(), mode["backend"].as_str()),
        (Some(1), Some("server"))
    );
    assert_eq!(
        call(&router, "setClusterMode", &[("mode", "0")]).await.0,
        OK
    );
    until(|| service.clients("test-app").len() == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_started_with_redis_counts_its_cluster_rules_there() {
    use floodgate_cluster::redis::RedisConfig;
    let redis = redis_server::RedisServer::start();
    let (_clock, fg) = engine();
    fg.load_rules_json(floodgate_core::RuleType::Flow, CLIENT_RULES)
        .unwrap();
    let bad = builder(&fg)
        .cluster_redis(RedisConfig::new("http://nope"))
        .start();
    assert!(
        matches!(bad, Err(floodgate_transport::AgentError::ClusterRedis(_))),
        "{bad:?}"
    );

    let config = RedisConfig::new(redis.url()).instance("orders-<1>");
    let agent = builder(&fg).cluster_redis(config).start().unwrap();
    let router = agent.router();
    let mode = json(&call(&router, "getClusterMode", &[]).await.1);
    assert_eq!(
        (mode["mode"].as_i64(), mode["backend"].as_str()),
        (Some(0), Some("redis"))
    );
    assert_eq!(
        mode["redis"]["nodes"][0].as_str(),
        Some(redis.url().as_str())
    );
    assert_eq!(mode["redis"]["instance"].as_str(), Some("orders-<1>"));
    let config = json(&call(&router, "cluster/client/fetchConfig", &[]).await.1);
    assert_eq!(config["serverHost"].as_str(), Some("127.0.0.1"));
    assert_eq!(
        (config["clientState"].as_u64(), config["backend"].as_str()),
        (Some(2), Some("redis"))
    );

    until_answered(&fg).await;
    let members: Vec<String> = redis::cmd("ZRANGE")
        .arg("floodgate:{7}:members")
        .arg(0)
        .arg(-1)
        .query(&mut redis.connection())
        .unwrap();
    assert_eq!(members, ["orders-<1>"]);

    assert_eq!(
        call(&router, "setClusterMode", &[("mode", "1")]).await.0,
        StatusCode::OK
    );
    assert_eq!(
        call(&router, "setClusterMode", &[("mode", "0")]).await.0,
        StatusCode::OK
    );
    let mode = json(&call(&router, "getClusterMode", &[]).await.1);
    assert_eq!(mode["backend"].as_str(), Some("redis"), "back to Redis");
}

/// The server's rules of the app's namespace, as `cluster/server/flowRules` lists them.
async fn served_counts(router: &Router) -> Vec<f64> {
    json(&call(router, "cluster/server/flowRules", &[]).await.1)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["count"].as_f64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_server_grants_the_apps_own_cluster_rules_as_they_change() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let router = agent.router();
    let ok = (StatusCode::OK, "success".to_owned());
    // The rules reach the app as a dashboard pushes them, before it is made the server.
    let with_local = r#"[{"resource":"GET:/orders","count":2,"clusterMode":true,"clusterConfig":{"flowId":7,"thresholdType":1}},{"resource":"GET:/local","count":1}]"#;
    assert_eq!(
        call(
            &router,
            "setRules",
            &[("type", "flow"), ("data", with_local)]
        )
        .await,
        ok
    );
    let port = free_port().to_string();
    assert_eq!(
        call(
            &router,
            "cluster/server/modifyTransportConfig",
            &[("port", &port)]
        )
        .await,
        ok
    );
    assert_eq!(call(&router, "setClusterMode", &[("mode", "1")]).await, ok);
    assert_eq!(
        served_counts(&router).await,
        [2.0],
        "its cluster rule, not the local one"
    );

    let client = client_granting_two_of_three(&port).await;

    // A change of the app's rules reaches its server within a second or so.
    let raised = r#"[{"resource":"GET:/orders","count":50,"clusterMode":true,"clusterConfig":{"flowId":7,"thresholdType":1}}]"#;
    assert_eq!(
        call(&router, "setRules", &[("type", "flow"), ("data", raised)]).await,
        ok
    );
    tokio::time::timeout(Duration::from_secs(10), async {
        while served_counts(&router).await != [50.0] {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the server follows the app's rules");
    assert_eq!(
        client.request_token(7, 1, false).await.status,
        TokenStatus::Ok
    );
    drop(client);
    agent.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_an_ipv6_server_address_starts() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let router = agent.router();
    let ok = (StatusCode::OK, "success".to_owned());
    // As a dashboard names a machine by its heartbeat's IP: an IPv6 one comes without brackets.
    let config = r#"{"serverHost":"::1","serverPort":18730,"requestTimeout":20}"#;
    assert_eq!(
        call(&router, "cluster/client/modifyConfig", &[("data", config)]).await,
        ok
    );
    assert_eq!(call(&router, "setClusterMode", &[("mode", "0")]).await, ok);
    let fetched = json(&call(&router, "cluster/client/fetchConfig", &[]).await.1);
    assert_eq!(fetched["serverHost"], "::1");
    agent.shutdown();
}
