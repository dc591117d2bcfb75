//! The metrics pipeline end to end: fake agents answering like a Java Sentinel client, the fetcher,
//! the writer, retention and the query functions, on a real SQLite file per test.
//!
//! Nothing sleeps: tests wait for the fetcher's events, then call `Ingest::flush`, which returns once
//! everything queued before it is committed. The clock is a `ManualClock`, so windows are exact.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use floodgate_core::ManualClock;
use floodgate_dashboard::db::{HeartbeatRecord, MetricPoint, Recorded};
use floodgate_dashboard::events::Event;
use floodgate_dashboard::ingest::{Batch, MetricLine};
use floodgate_dashboard::{AppState, Config, Dashboard};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::broadcast;

/// 1_800_000_010_500: the fetch window then ends at the second 1_800_000_009_000.
const NOW: u64 = 1_800_000_010_500;
const S: i64 = 1_800_000_000_000;

async fn start(
    dir: &tempfile::TempDir,
    clock: &Arc<ManualClock>,
    tweak: impl FnOnce(&mut Config),
) -> Dashboard {
    let url = format!("sqlite://{}", dir.path().join("floodgate.db").display());
    let mut config = Config::for_database(url);
    config.admin_password = Some("correct horse battery".into());
    config.fetch_interval_ms = 100;
    config.agent_timeout_ms = 2000;
    tweak(&mut config);
    Dashboard::start_with_clock(config, clock.clone())
        .await
        .expect("dashboard starts")
}

/// What a fake agent answers.
#[derive(Clone)]
enum Answer {
    /// The lines (without newline) of the seconds asked for, from this list.
    Lines(Arc<Mutex<Vec<String>>>),
    /// Accepts, reads the request, and never answers.
    Hang,
    /// A fixed body.
    Body(&'static str),
}

/// A fake agent on loopback answering as a Java client does (HTTP/1.0, no Content-Type).
async fn agent(answer: Answer) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let request = String::from_utf8_lossy(&request).into_owned();
                let body = match answer {
                    Answer::Hang => {
                        std::future::pending::<()>().await;
                        return;
                    }
                    Answer::Body(body) => body.to_owned(),
                    Answer::Lines(lines) => {
                        let (start, end) = window(&request);
                        let lines = lines.lock().unwrap().clone();
                        lines
                            .iter()
                            .filter(|l| {
                                let ts: i64 = l.split('|').next().unwrap().parse().unwrap();
                                ts >= start && ts <= end
                            })
                            .map(|l| format!("{l}\n"))
                            .collect()
                    }
                };
                let response = format!(
                    "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    port
}

/// `startTime` and `endTime` of a `GET /metric?..` request.
fn window(request: &str) -> (i64, i64) {
    let path = request.split_whitespace().nth(1).unwrap();
    let query = path.split_once('?').unwrap().1;
    let mut start = 0;
    let mut end = 0;
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "startTime" => start = v.parse().unwrap(),
            "endTime" => end = v.parse().unwrap(),
            _ => {}
        }
    }
    (start, end)
}

fn lines(lines: &[String]) -> Arc<Mutex<Vec<String>>> {
    Arc::new(Mutex::new(lines.to_vec()))
}

/// A thin line: second `sec` after `S`, `resource`, pass = success = `n`, `rt`.
fn line(sec: i64, resource: &str, n: i64, block: i64, rt: i64) -> String {
    format!("{}|{resource}|{n}|{block}|{n}|0|{rt}|0|0|0", S + sec * 1000)
}

/// Registers a machine of `app` at 127.0.0.1:`port` (a heartbeat now).
async fn register(state: &AppState, app: &str, port: u16) -> (i64, i64) {
    let Recorded::Machine { machine, .. } = state
        .db
        .record_heartbeat(
            &HeartbeatRecord {
                app,
                app_type: 0,
                ip: "127.0.0.1",
                port,
                hostname: "test",
                sentinel_version: "1.8.9",
                agent_token: None,
            },
            state.now_ms(),
            state.config.registry_limits(),
        )
        .await
        .unwrap()
    else {
        panic!("not recorded")
    };
    (machine.id, machine.app_id)
}

/// Counts `Fetched` events per (machine, ok) until `done` holds (10 s at most).
async fn wait_fetches(
    events: &mut broadcast::Receiver<Event>,
    done: impl Fn(&HashMap<(i64, bool), usize>) -> bool,
) -> HashMap<(i64, bool), usize> {
    let mut counts = HashMap::new();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !done(&counts) {
            match events.recv().await {
                Ok(Event::Fetched { machine_id, ok }) => {
                    *counts.entry((machine_id, ok)).or_default() += 1
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => panic!("events closed"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("fetches not seen in time: {counts:?}"));
    counts
}

fn ok_at_least(counts: &HashMap<(i64, bool), usize>, machine: i64, n: usize) -> bool {
    counts.get(&(machine, true)).copied().unwrap_or(0) >= n
}

async fn seconds(state: &AppState, app_id: i64, resource: &str) -> Vec<MetricPoint> {
    let Some(id) = state.db.resource_id(app_id, resource).await.unwrap() else {
        return Vec::new();
    };
    state.db.metric_seconds(id, 0, i64::MAX).await.unwrap()
}

fn point(sec: i64, pass: i64, block: i64, rt_sum: i64) -> MetricPoint {
    MetricPoint {
        ts: S + sec * 1000,
        pass,
        block,
        success: pass,
        exception: 0,
        rt_sum,
    }
}

#[tokio::test]
async fn two_machines_of_an_app_sum_into_one_row_per_second() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let dashboard = start(&dir, &clock, |_| {}).await;
    let state = dashboard.state().clone();
    let mut events = state.events.subscribe();
    let a = agent(Answer::Lines(lines(&[
        line(5, "GET:/orders", 10, 1, 100),
        line(6, "GET:/orders", 10, 0, 100),
        line(6, "POST:/pay", 4, 0, 300),
    ])))
    .await;
    let b = agent(Answer::Lines(lines(&[
        line(5, "GET:/orders", 30, 2, 20),
        line(5, "__total_inbound_traffic__", 30, 2, 20),
        line(6, "GET:/orders", 30, 0, 20),
    ])))
    .await;
    let (ma, app_id) = register(&state, "shop", a).await;
    let (mb, _) = register(&state, "shop", b).await;
    wait_fetches(&mut events, |c| {
        ok_at_least(c, ma, 1) && ok_at_least(c, mb, 1)
    })
    .await;
    state.ingest.flush().await.unwrap();

    // Summed counts; RT weighted by completions: 10 × 100 + 30 × 20 = 1600 over 40 calls = 40 ms.
    let orders = seconds(&state, app_id, "GET:/orders").await;
    assert_eq!(orders, [point(5, 40, 3, 1600), point(6, 40, 0, 1600)]);
    assert_eq!(
        seconds(&state, app_id, "POST:/pay").await,
        [point(6, 4, 0, 1200)]
    );
    let mut names = state.db.resource_names(app_id).await.unwrap();
    names.sort();
    assert_eq!(
        names,
        ["GET:/orders", "POST:/pay"],
        "pseudo-resources are left out"
    );

    // The ranking and the app's summary read the same rows.
    let top = state
        .db
        .active_resources(app_id, S, S + 60_000, "", 20)
        .await
        .unwrap();
    assert_eq!(top[0].resource, "GET:/orders");
    assert_eq!(
        (top[0].ts, top[0].pass, top[0].total_block),
        (S + 6000, 40, 3)
    );
    let only_pay = state
        .db
        .active_resources(app_id, S, S + 60_000, "pay", 20)
        .await
        .unwrap();
    assert_eq!(only_pay.len(), 1);
    let app_seconds = state.db.app_seconds(app_id, S, S + 60_000).await.unwrap();
    assert_eq!(
        app_seconds.iter().map(|s| s.pass).collect::<Vec<_>>(),
        [40, 44]
    );
    dashboard.shutdown().await;
}

#[tokio::test]
async fn overlapping_windows_never_count_a_second_twice_and_late_lines_add() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let dashboard = start(&dir, &clock, |_| {}).await;
    let state = dashboard.state().clone();
    let mut events = state.events.subscribe();
    let a_lines = lines(&[line(8, "r", 5, 0, 10)]);
    let b_lines = lines(&[line(8, "r", 7, 0, 10)]);
    let a = agent(Answer::Lines(a_lines.clone())).await;
    let b = agent(Answer::Lines(b_lines.clone())).await;
    let (ma, app_id) = register(&state, "shop", a).await;
    let (mb, _) = register(&state, "shop", b).await;
    wait_fetches(&mut events, |c| {
        ok_at_least(c, ma, 1) && ok_at_least(c, mb, 1)
    })
    .await;
    state.ingest.flush().await.unwrap();
    assert_eq!(seconds(&state, app_id, "r").await, [point(8, 12, 0, 120)]);

    // Machine b is late with second 9: it appears a second later, inside the overlap, while both
    // machines keep answering second 8 again.
    a_lines.lock().unwrap().push(line(9, "r", 1, 0, 10));
    clock.advance(Duration::from_secs(1));
    wait_fetches(&mut events, |c| {
        ok_at_least(c, ma, 3) && ok_at_least(c, mb, 3)
    })
    .await;
    b_lines.lock().unwrap().push(line(9, "r", 2, 0, 10));
    clock.advance(Duration::from_secs(1));
    wait_fetches(&mut events, |c| {
        ok_at_least(c, ma, 3) && ok_at_least(c, mb, 3)
    })
    .await;
    state.ingest.flush().await.unwrap();
    assert_eq!(
        seconds(&state, app_id, "r").await,
        [point(8, 12, 0, 120), point(9, 3, 0, 30)]
    );
    dashboard.shutdown().await;
}

#[tokio::test]
async fn a_restarted_dashboard_does_not_count_stored_seconds_again() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let port = agent(Answer::Lines(lines(&[
        line(7, "r", 5, 0, 10),
        line(8, "r", 5, 0, 10),
    ])))
    .await;
    let app_id = {
        let dashboard = start(&dir, &clock, |_| {}).await;
        let state = dashboard.state().clone();
        let mut events = state.events.subscribe();
        let (m, app_id) = register(&state, "shop", port).await;
        wait_fetches(&mut events, |c| ok_at_least(c, m, 1)).await;
        dashboard.shutdown().await;
        app_id
    };
    let dashboard = start(&dir, &clock, |_| {}).await;
    let state = dashboard.state().clone();
    let mut events = state.events.subscribe();
    let (m, _) = register(&state, "shop", port).await;
    wait_fetches(&mut events, |c| ok_at_least(c, m, 3)).await;
    state.ingest.flush().await.unwrap();
    assert_eq!(
        seconds(&state, app_id, "r").await,
        [point(7, 5, 0, 50), point(8, 5, 0, 50)]
    );
    dashboard.shutdown().await;
}

#[tokio::test]
async fn a_machine_that_never_answers_does_not_stall_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let dashboard = start(&dir, &clock, |c| c.agent_timeout_ms = 30_000).await;
    let state = dashboard.state().clone();
    let mut events = state.events.subscribe();
    let hang = agent(Answer::Hang).await;
    let good_lines = lines(&[line(8, "r", 5, 0, 10)]);
    let good = agent(Answer::Lines(good_lines.clone())).await;
    let (mh, _) = register(&state, "shop", hang).await;
    let (mg, app_id) = register(&state, "shop", good).await;
    // The good machine is fetched tick after tick while the other's first call is still open.
    let counts = wait_fetches(&mut events, |c| ok_at_least(c, mg, 5)).await;
    assert!(!counts.contains_key(&(mh, true)) && !counts.contains_key(&(mh, false)));
    state.ingest.flush().await.unwrap();
    assert_eq!(seconds(&state, app_id, "r").await, [point(8, 5, 0, 50)]);
    dashboard.shutdown().await;
}

#[tokio::test]
async fn a_machine_answering_garbage_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let dashboard = start(&dir, &clock, |_| {}).await;
    let state = dashboard.state().clone();
    let mut events = state.events.subscribe();
    let bad = agent(Answer::Body(
        "<html>\n<body>\n1800000008000|r|999|0|999|0|1\n502 Bad Gateway\n</body>\n</html>\n",
    ))
    .await;
    let good = agent(Answer::Lines(lines(&[line(8, "r", 5, 0, 10)]))).await;
    let (mb, _) = register(&state, "shop", bad).await;
    let (mg, app_id) = register(&state, "shop", good).await;
    let counts = wait_fetches(&mut events, |c| {
        ok_at_least(c, mg, 2) && c.get(&(mb, false)).copied().unwrap_or(0) >= 2
    })
    .await;
    assert!(!counts.contains_key(&(mb, true)));
    state.ingest.flush().await.unwrap();
    assert_eq!(seconds(&state, app_id, "r").await, [point(8, 5, 0, 50)]);
    assert!(state.ingest.stats().lines_dropped >= 5);
    dashboard.shutdown().await;
}

fn metric_line(ts: i64, resource: &str, pass: i64) -> MetricLine {
    MetricLine {
        ts,
        resource: resource.into(),
        pass,
        block: 0,
        success: pass,
        exception: 0,
        rt: 2,
    }
}

#[tokio::test]
async fn retention_rolls_minutes_up_and_prunes() {
    let dir = tempfile::tempdir().unwrap();
    let hour = 3_600_000;
    // On a minute boundary, to read the minutes plainly.
    let now: i64 = 1_800_000_040_000 - 1_800_000_040_000 % 60_000;
    let clock = Arc::new(ManualClock::new(now as u64));
    let dashboard = start(&dir, &clock, |c| {
        c.second_retention_secs = 3600;
        c.minute_retention_secs = 4 * 3600;
    })
    .await;
    let state = dashboard.state().clone();
    let (machine_id, app_id) = register(&state, "shop", 9).await;
    let old_minute = now - 3 * hour;
    let send = |lines: Vec<MetricLine>| {
        state.ingest.send(Batch {
            machine_id,
            app_id,
            lines,
        })
    };
    send(vec![
        metric_line(now - 5 * hour, "r", 100),
        metric_line(old_minute + 1000, "r", 6),
        metric_line(old_minute + 2000, "r", 6),
        metric_line(now - 30 * 60_000, "r", 1),
        metric_line(now - 30_000, "r", 3),
    ])
    .await
    .unwrap();
    // A second machine's line for a second already written adds to it.
    send(vec![metric_line(now - 30_000, "r", 4)]).await.unwrap();
    let report = state.ingest.prune(now).await.unwrap();
    assert!(report.minutes_rolled >= 3, "{report:?}");
    assert_eq!(report.seconds_deleted, 3, "{report:?}");
    assert_eq!(report.minutes_deleted, 1, "{report:?}");

    let id = state.db.resource_id(app_id, "r").await.unwrap().unwrap();
    // Per second: only what the per-second retention keeps.
    let secs = state.db.metric_seconds(id, 0, i64::MAX).await.unwrap();
    assert_eq!(
        secs.iter().map(|p| (p.ts, p.pass)).collect::<Vec<_>>(),
        [(now - 30 * 60_000, 1), (now - 30_000, 7)]
    );
    // Per minute: the rolled-up minutes, then the minute not rolled yet summed from its seconds.
    let minutes = state
        .db
        .metric_minutes(id, now - 6 * hour, now)
        .await
        .unwrap();
    assert_eq!(
        minutes
            .iter()
            .map(|p| (p.ts, p.pass, p.rt_sum))
            .collect::<Vec<_>>(),
        [
            (old_minute, 12, 24),
            (now - 30 * 60_000, 1, 2),
            (now - 60_000, 7, 14)
        ]
    );
    // Running it again changes nothing.
    let again = state.ingest.prune(now).await.unwrap();
    assert_eq!((again.seconds_deleted, again.minutes_deleted), (0, 0));
    assert_eq!(
        state
            .db
            .metric_minutes(id, now - 6 * hour, now)
            .await
            .unwrap(),
        minutes
    );
    dashboard.shutdown().await;
}
