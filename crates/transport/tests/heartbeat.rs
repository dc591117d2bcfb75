//! Heartbeats received by a real HTTP server, failover, and an app that keeps serving while the dashboard
//! is down.
//!
//! These go through an agent, whose heartbeats run on its own runtime thread on real time: the tests
//! wait for the heartbeats themselves (a channel from the dashboard stand-in), never for a time. The
//! heartbeat loop's timing (interval, back-off, failover order) is tested on paused time next to it,
//! in `src/heartbeat_paused.rs`.

mod support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::any;
use floodgate_core::RuleType;
use support::*;
use tokio::sync::watch;

/// The form and `x-floodgate-token` header of each heartbeat received, in order.
type Heartbeats = Vec<(HashMap<String, String>, Option<String>)>;

/// A dashboard stand-in on an ephemeral port that records `/registry/machine` calls.
async fn dashboard() -> (SocketAddr, watch::Receiver<Heartbeats>) {
    let (received, seen) = watch::channel(Heartbeats::new());
    async fn register(
        State(r): State<Arc<watch::Sender<Heartbeats>>>,
        headers: HeaderMap,
        body: Bytes,
    ) -> &'static str {
        let form: HashMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
        let token = headers
            .get("x-floodgate-token")
            .map(|v| v.to_str().unwrap_or_default().to_owned());
        r.send_modify(|r| r.push((form, token)));
        r#"{"success":true,"code":0,"msg":"success","data":null}"#
    }
    let app = Router::new()
        .route("/registry/machine", any(register))
        .with_state(Arc::new(received));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, seen)
}

/// Waits until at least `n` heartbeats arrived (for at most 10 s: the agent's thread runs on real
/// time) and returns them.
async fn at_least(seen: &mut watch::Receiver<Heartbeats>, n: usize) -> Heartbeats {
    tokio::time::timeout(Duration::from_secs(10), seen.wait_for(|r| r.len() >= n))
        .await
        .expect("heartbeats arrived")
        .expect("the dashboard stand-in runs")
        .clone()
}

/// A port nothing listens on.
fn dead_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A dashboard that accepts connections and hangs up at once, without an answer; sends the number of
/// connections so far.
async fn hanging_up() -> (SocketAddr, watch::Receiver<usize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (accepted, seen) = watch::channel(0);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            drop(stream);
            accepted.send_modify(|n| *n += 1);
        }
    });
    (addr, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_carry_sentinels_parameters() {
    let (dash, mut received) = dashboard().await;
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .dashboard(dash.to_string())
        .heartbeat_interval(Duration::from_millis(100))
        .start()
        .unwrap();
    let port = agent.port();
    let (form, token) = at_least(&mut received, 2).await[0].clone();
    assert_eq!(form["app"], "test-app");
    assert_eq!(form["app_type"], "0");
    assert_eq!(
        form["v"], "1.8.9",
        "≥ 1.7.1: the Java dashboard sends POST forms"
    );
    assert_eq!(
        form["version"],
        T0.to_string(),
        "the time in ms on the engine's clock"
    );
    assert_eq!(
        form["ip"], "127.0.0.1",
        "the address that routes to the dashboard"
    );
    assert_eq!(form["port"], port.to_string());
    assert!(!form["hostname"].is_empty());
    assert!(!form.contains_key("token"));
    assert_eq!(token, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_override_ip_and_token() {
    let (dash, mut received) = dashboard().await;
    let (_clock, fg) = engine();
    let _agent = builder(&fg)
        .dashboard(dead_port().to_string())
        .dashboard(format!("http://{dash}"))
        .heartbeat_ip("10.9.8.7")
        .token("heartbeat-token")
        .heartbeat_interval(Duration::from_millis(100))
        .start()
        .unwrap();
    // The second dashboard got it.
    let (form, token) = at_least(&mut received, 1).await[0].clone();
    assert_eq!(form["ip"], "10.9.8.7");
    assert_eq!(form["token"], "heartbeat-token");
    assert_eq!(token.as_deref(), Some("heartbeat-token"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_dashboard_never_stops_the_app() {
    let (hangs_up, mut tried) = hanging_up().await;
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .dashboard(dead_port().to_string())
        .dashboard(hangs_up.to_string())
        .heartbeat_interval(Duration::from_millis(50))
        .start()
        .unwrap();
    let addr = agent.local_addr();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":1}]"#)
        .unwrap();
    // Two heartbeats failed on both dashboards (the second after a back-off).
    tokio::time::timeout(Duration::from_secs(10), tried.wait_for(|n| *n >= 2))
        .await
        .expect("heartbeats were tried")
        .expect("the stand-in runs");
    let (status, rules) = tokio::task::spawn_blocking(move || get(addr, "getRules?type=flow"))
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert!(rules.contains("\"resource\":\"R\""));
    assert!(fg.entry("R").enter().is_ok());
    assert!(fg.entry("R").enter().is_err(), "rules still enforced");
}

/// An agent bound to 127.0.0.2 reported `ip=127.0.0.1`, where nothing listened: a specific bind
/// address, loopback or not, is the address reported (heartbeats and `basicInfo`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_on_another_loopback_address_reports_that_address() {
    let (dash, mut received) = dashboard().await;
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .bind("127.0.0.2".parse().unwrap())
        .dashboard(dash.to_string())
        .heartbeat_interval(Duration::from_millis(100))
        .start()
        .unwrap();
    assert_eq!(agent.local_addr().ip().to_string(), "127.0.0.2");
    let (form, _) = at_least(&mut received, 1).await[0].clone();
    assert_eq!(form["ip"], "127.0.0.2");
    assert_eq!(form["port"], agent.port().to_string());
    let addr = agent.local_addr();
    let (status, info) = tokio::task::spawn_blocking(move || get(addr, "basicInfo"))
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&info).unwrap()["ip"],
        "127.0.0.2"
    );
}
