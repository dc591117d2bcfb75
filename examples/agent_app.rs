//! An axum service whose routes are guarded by Floodgate's tower layer, with the agent started so that a dashboard can
//! watch it and change its rules. A small traffic generator calls the service so there is something to see.
//!
//! Run with `cargo run --example agent_app --features transport,tower` (add `-- 30` to stop after 30 s).
//! Then, from another shell:
//!
//! ```text
//! curl 'http://127.0.0.1:8719/getRules?type=flow'
//! curl 'http://127.0.0.1:8719/metric?startTime=0&maxLines=20'
//! curl -d 'type=flow' --data-urlencode 'data=[{"resource":"GET:/orders/{id}","count":2}]' http://127.0.0.1:8719/setRules
//! ```
//!
//! The agent reads `FLOODGATE_DASHBOARD`, `FLOODGATE_RULES_FLOW`, … from the environment (see
//! `floodgate::transport::AgentConfig`); this example names the app `agent-app` and lets the agent
//! search upwards from port 8719 if it is taken (the `curl` lines above assume it was free: the port in
//! use is printed at start).

use std::time::Duration;

use axum::Router;
use axum::http::HeaderName;
use axum::routing::get;
use floodgate::tower::FloodgateLayer;
use floodgate::transport::Agent;
use floodgate::{Floodgate, RuleType};

async fn order() -> &'static str {
    "an order"
}

async fn health() -> &'static str {
    "ok"
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: Option<u64> = std::env::args().nth(1).and_then(|s| s.parse().ok());
    let fg = Floodgate::default();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/orders/{id}","count":10}]"#,
    )?;
    let agent = Agent::builder(fg.clone())
        .config(floodgate::transport::AgentConfig {
            app_name: "agent-app".into(),
            port_search: true,
            ..floodgate::transport::AgentConfig::from_env()?
        })
        .start()?;
    println!("agent command API on http://{}", agent.local_addr());

    let app = Router::new()
        .route("/orders/{id}", get(order))
        .route("/health", get(health))
        .route_layer(
            FloodgateLayer::new(fg.clone()).origin_header(HeaderName::from_static("x-caller")),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    println!("service on http://{addr}");
    tokio::spawn(async move { axum::serve(listener, app).await });

    // Traffic: ~25 requests a second to the guarded route, over raw HTTP/1.1.
    let traffic = tokio::spawn(async move {
        let mut n = 0u64;
        loop {
            n += 1;
            if let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let request = format!(
                    "GET /orders/{n} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
                );
                let _ = stream.write_all(request.as_bytes()).await;
                let mut sink = Vec::new();
                let _ = stream.read_to_end(&mut sink).await;
            }
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
    });

    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut elapsed = 0;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = tick.tick() => {
                if let Some(node) = fg.cluster_node("GET:/orders/{id}") {
                    println!("GET:/orders/{{id}}: {} passed/s, {} blocked/s", node.previous_pass_qps(), node.previous_block_qps());
                }
                elapsed += 1;
                if seconds.is_some_and(|s| elapsed > s) {
                    break;
                }
            }
        }
    }
    traffic.abort();
    agent.shutdown();
    Ok(())
}
