//! How long the server takes to render an app's monitoring page with 50 busy resources and five
//! minutes of seconds each (ignored by default; figures in BENCHMARKS.md). Run with
//! `cargo test -p floodgate-dashboard --release --test pages_load -- --ignored --nocapture`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use floodgate_core::ManualClock;
use floodgate_dashboard::db::{HeartbeatRecord, Recorded};
use floodgate_dashboard::ingest::{Batch, MetricLine};
use floodgate_dashboard::{Config, Dashboard};
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

const NOW: i64 = 1_800_000_000_000;
const RESOURCES: usize = 50;
const SECONDS: i64 = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load test; figures in BENCHMARKS.md"]
async fn monitoring_page_of_fifty_resources() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::for_database(format!(
        "sqlite://{}",
        dir.path().join("floodgate.db").display()
    ));
    config.admin_password = Some("correct horse battery staple".into());
    let clock = ManualClock::new(NOW as u64);
    let d = Dashboard::start_with_clock(config, Arc::new(clock.clone()))
        .await
        .unwrap();
    let state = d.state();
    let Recorded::Machine { machine, .. } = state
        .db
        .record_heartbeat(
            &HeartbeatRecord {
                app: "big",
                app_type: 0,
                ip: "127.0.0.1",
                port: 1,
                hostname: "h",
                sentinel_version: "1.8.9",
                agent_token: None,
            },
            NOW,
            state.config.registry_limits(),
        )
        .await
        .unwrap()
    else {
        panic!("not recorded")
    };
    let mut lines = Vec::new();
    for s in 0..SECONDS {
        for r in 0..RESOURCES {
            lines.push(MetricLine {
                ts: NOW - 2000 - (SECONDS - s) * 1000,
                resource: format!("GET:/api/resource-{r}"),
                pass: 10 + (r as i64 + s) % 40,
                block: (r as i64 % 5) * (s % 3),
                success: 10 + (r as i64 + s) % 40,
                exception: s % 2,
                rt: 5 + r as i64,
            });
        }
    }
    state
        .ingest
        .send(Batch {
            machine_id: machine.id,
            app_id: machine.app_id,
            lines,
        })
        .await
        .unwrap();
    state.ingest.flush().await.unwrap();

    let router = d.router();
    let login = Request::post("/auth/login")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"username": "admin", "password": "correct horse battery staple"}).to_string(),
        ))
        .unwrap();
    let response = router.clone().oneshot(login).await.unwrap();
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..20 {
        let request = Request::get("/apps/big")
            .header("cookie", &cookie)
            .body(Body::empty())
            .unwrap();
        let started = Instant::now();
        let response = router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        times.push(started.elapsed());
        bytes = body.len();
        assert_eq!(
            String::from_utf8_lossy(&body)
                .matches("<section class=\"resource\"")
                .count(),
            RESOURCES
        );
    }
    times.sort();
    let median = times[times.len() / 2];
    let max = times.last().copied().unwrap_or(Duration::ZERO);
    println!(
        "monitoring page, {RESOURCES} resources x {SECONDS} s: median {median:?}, max {max:?}, {} KiB",
        bytes / 1024
    );
    d.shutdown().await;
}
