//! The heartbeat loop on paused tokio time: its interval, its back-off while every dashboard fails and
//! its failover order, to the second and without waiting for real.
//!
//! The dashboards are stand-ins on loopback sockets served by the test's own current-thread runtime.
//! Paused time moves on only when that runtime has nothing left to do, and a loopback write is readable
//! at the other end at once, so time jumps only to the heartbeat's next sleep, never past an exchange
//! in flight (its 3 s deadline).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Heartbeat;
use crate::host::{HostInfo, ReportedIp};

const INTERVAL: Duration = Duration::from_secs(10);

/// Which stand-in got a heartbeat, and when (virtual time since the test started).
type Seen = mpsc::UnboundedSender<(&'static str, Duration)>;

/// A dashboard stand-in named `name`: reports each heartbeat to `seen`; answers 200 while `up` is set,
/// 503 otherwise.
async fn dashboard(
    name: &'static str,
    up: bool,
    start: Instant,
    seen: Seen,
) -> (SocketAddr, Arc<AtomicBool>) {
    let up = Arc::new(AtomicBool::new(up));
    let flag = up.clone();
    let app = Router::new().route(
        "/registry/machine",
        post(move || {
            let (flag, seen) = (flag.clone(), seen.clone());
            async move {
                let _ = seen.send((name, start.elapsed()));
                if flag.load(Ordering::SeqCst) {
                    (StatusCode::OK, r#"{"success":true,"code":0}"#)
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "down")
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, up)
}

/// A heartbeat to `dashboards` every [`INTERVAL`], from a host already detected (no name lookup).
fn heartbeat(dashboards: &[SocketAddr]) -> Heartbeat {
    Heartbeat {
        app: "paused-app".into(),
        app_type: 0,
        host: HostInfo {
            hostname: "h1".into(),
            ip: "127.0.0.1".into(),
            provisional: false,
        },
        reported_ip: ReportedIp::new("127.0.0.1"),
        bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
        port: 8719,
        path: "/registry/machine".into(),
        token: None,
        dashboards: dashboards.iter().map(ToString::to_string).collect(),
        interval: INTERVAL,
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[tokio::test(start_paused = true)]
async fn heartbeats_go_every_interval_from_the_start() {
    let start = Instant::now();
    let (tx, mut seen) = mpsc::unbounded_channel();
    let (a, _) = dashboard("a", true, start, tx).await;
    let task = tokio::spawn(heartbeat(&[a]).run(|| 0));
    let mut times = Vec::new();
    for _ in 0..4 {
        times.push(seen.recv().await.unwrap().1);
    }
    assert_eq!(times, [secs(0), secs(10), secs(20), secs(30)]);
    task.abort();
}

/// While every dashboard fails, the delay doubles up to eight intervals; the first heartbeat taken
/// brings it back to the interval.
#[tokio::test(start_paused = true)]
async fn failures_back_off_up_to_eight_intervals_and_a_success_resets() {
    let start = Instant::now();
    let (tx, mut seen) = mpsc::unbounded_channel();
    let (a, up) = dashboard("a", false, start, tx).await;
    let task = tokio::spawn(heartbeat(&[a]).run(|| 0));
    let mut times = Vec::new();
    for _ in 0..5 {
        times.push(seen.recv().await.unwrap().1);
    }
    assert_eq!(
        times,
        [secs(0), secs(20), secs(60), secs(140), secs(220)],
        "2, 4, 8, then 8 intervals again"
    );
    up.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        times.push(seen.recv().await.unwrap().1);
    }
    assert_eq!(&times[5..], [secs(300), secs(310), secs(320)]);
    task.abort();
}

/// Dashboards are tried in order from the last one that answered; a heartbeat some dashboard took is
/// no failure (no back-off).
#[tokio::test(start_paused = true)]
async fn failover_starts_from_the_dashboard_that_last_answered() {
    let start = Instant::now();
    let (tx, mut seen) = mpsc::unbounded_channel();
    let (a, a_up) = dashboard("a", false, start, tx.clone()).await;
    let (b, b_up) = dashboard("b", true, start, tx).await;
    let task = tokio::spawn(heartbeat(&[a, b]).run(|| 0));
    let mut calls = Vec::new();
    for _ in 0..3 {
        calls.push(seen.recv().await.unwrap());
    }
    assert_eq!(calls, [("a", secs(0)), ("b", secs(0)), ("b", secs(10))]);
    b_up.store(false, Ordering::SeqCst);
    a_up.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        calls.push(seen.recv().await.unwrap());
    }
    assert_eq!(
        &calls[3..],
        [("b", secs(20)), ("a", secs(20)), ("a", secs(30))]
    );
    task.abort();
}
