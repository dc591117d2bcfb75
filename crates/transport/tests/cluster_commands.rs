//! The embedded token server's commands (feature `cluster`), through `Agent::router()`: the mode, the
//! server's rules and settings per namespace, and tokens granted to a client over the token protocol.

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
    assert_eq!(mode["clientAvailable"].as_bool(), Some(false));
    let (status, body) = call(&router, "setClusterMode", &[("mode", "0")]).await;
    assert_eq!(status, BAD, "{body}");
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
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let client = TokenClient::start(ClientConfig {
        request_timeout: Duration::from_secs(5),
        ..ClientConfig::new(addr, "test-app")
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
