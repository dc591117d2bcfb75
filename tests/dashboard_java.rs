//! End to end with a stand-in for an unmodified Sentinel 1.8.9 Java client (raw sockets, its exact
//! answers and quirks): it registers, its metrics are charted, it takes pushes of every type it has
//! intact (a resource named `a+b %2B c` survives its second URL-decoding), deleting the last rule
//! pushes `[]` with `data` present, its param-flow and circuit-breaker pages say "not supported";
//! a dead machine's push is recorded and retried until it comes back.

mod support;

use floodgate::RuleType;
use floodgate_dashboard::events::Event;
use serde_json::{Value, json};
use support::java_client::JavaClient;
use support::{ADMIN_PASSWORD, Client, Running, config, free_port, wait_for, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_client_registers_is_charted_and_takes_pushes() {
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(config(dir.path())).await;
    let mut events = running.events();
    let admin = Client::login(&running.base(), "admin", ADMIN_PASSWORD).await;

    // A Java app with flow rules of its own, never managed by this dashboard: they are imported.
    let java = JavaClient::start(
        0,
        &[(
            "flow",
            r#"[{"clusterMode":false,"controlBehavior":0,"count":5.0,"grade":1,"limitApp":"default","maxQueueingTimeMs":500,"regex":false,"resource":"GET:/items/{id}","strategy":0,"warmUpPeriodSec":10}]"#,
        )],
    )
    .await;
    assert_eq!(java.heartbeat(running.addr, "sentinel-demo-app").await, 200);
    wait_for(&mut events, "the reconciliation", |e| {
        matches!(e, Event::Reconciled { .. })
    })
    .await;
    let flow = admin.get("/api/apps/sentinel-demo-app/rules/flow").await;
    assert_eq!(flow.body["rules"][0]["rule"]["resource"], "GET:/items/{id}");
    assert!(java.rules("flow").contains("GET:/items/{id}"), "not wiped");

    let machines = admin.get("/api/apps/sentinel-demo-app/machines").await;
    assert_eq!(machines.body[0]["sentinelVersion"], "1.8.9");
    assert_eq!(machines.body[0]["healthy"], true);
    assert_eq!(
        machines.body[0]["pushes"]["paramFlow"]["status"],
        "not supported"
    );

    // A name with `+` and `%2B` arrives intact after the client's second decoding.
    let created = admin
        .post(
            "/api/apps/sentinel-demo-app/rules/flow",
            json!({"resource": "a+b %2B c", "count": 1}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    wait_until(&mut events, "the flow push", || {
        java.rules("flow").contains("a+b %2B c")
    })
    .await;
    let held: Value = serde_json::from_str(&java.rules("flow")).unwrap();
    let names: Vec<&str> = held
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["resource"].as_str())
        .collect();
    assert!(names.contains(&"a+b %2B c"), "{names:?}");
    assert!(names.contains(&"GET:/items/{id}"));

    // Every other type it has is pushed too; param-flow is "not supported", not an error.
    for (t, rule) in [
        (
            "degrade",
            json!({"resource": "POST:/pay", "grade": 2, "count": 3, "timeWindow": 10}),
        ),
        ("system", json!({"qps": 500, "maxThread": 100})),
        (
            "authority",
            json!({"resource": "POST:/pay", "limitApp": "mobile", "strategy": 1}),
        ),
    ] {
        let a = admin
            .post(&format!("/api/apps/sentinel-demo-app/rules/{t}"), rule)
            .await;
        assert_eq!(a.status, 201, "{t}: {}", a.text);
        wait_until(&mut events, "the push", || java.rules(t) != "[]").await;
        assert_ne!(java.rules(t), "[]", "{t} arrived");
    }
    // The client reports its system rule split per dimension: that is how it holds what was pushed,
    // not a drift to push again at every heartbeat.
    let system_pushes = || {
        java.state
            .lock()
            .unwrap()
            .set_rules_bodies
            .iter()
            .filter(|b| b.contains("type=system"))
            .count()
    };
    assert_eq!(system_pushes(), 1);
    for _ in 0..3 {
        assert_eq!(java.heartbeat(running.addr, "sentinel-demo-app").await, 200);
        wait_for(&mut events, "the reconciliation", |e| {
            matches!(e, Event::Reconciled { .. })
        })
        .await;
    }
    assert_eq!(system_pushes(), 1, "not pushed again");

    let param = admin
        .post(
            "/api/apps/sentinel-demo-app/rules/paramFlow",
            json!({"resource": "GET:/items/{id}", "paramIdx": 0, "count": 3}),
        )
        .await;
    assert_eq!(param.status, 201);
    wait_for(&mut events, "the param-flow push", |e| {
        matches!(
            e,
            Event::Pushed {
                rule_type: RuleType::ParamFlow,
                ..
            }
        )
    })
    .await;
    let status = admin.get("/api/apps/sentinel-demo-app/push-status").await;
    assert_eq!(
        status.body["machines"][0]["pushes"]["paramFlow"]["status"],
        "not supported"
    );
    let breakers = admin
        .get("/api/apps/sentinel-demo-app/circuit-breakers")
        .await;
    assert_eq!(breakers.body[0]["status"], "not supported");

    // Deleting the last authority rule pushes `[]`, with `data` present (an absent one would also
    // clear, but is not what a dashboard should rely on).
    let list = admin
        .get("/api/apps/sentinel-demo-app/rules/authority")
        .await;
    let id = list.body["rules"][0]["id"].as_i64().unwrap();
    admin
        .delete(&format!("/api/apps/sentinel-demo-app/rules/authority/{id}"))
        .await;
    wait_until(&mut events, "the empty authority push", || {
        java.rules("authority") == "[]"
    })
    .await;
    assert_eq!(java.rules("authority"), "[]");
    let last_body = java
        .state
        .lock()
        .unwrap()
        .set_rules_bodies
        .last()
        .cloned()
        .unwrap();
    assert!(last_body.contains("type=authority"), "{last_body}");
    assert!(last_body.contains("data=%5B%5D"), "{last_body}");

    // Its metrics are fetched and charted.
    wait_for(&mut events, "metrics written", |e| {
        matches!(e, Event::MetricsWritten { .. })
    })
    .await;
    let metrics = admin
        .get("/api/apps/sentinel-demo-app/metrics?resource=GET%3A%2Forders")
        .await;
    assert_eq!(metrics.status, 200, "{}", metrics.text);
    let points = metrics.body["points"].as_array().unwrap();
    assert!(!points.is_empty(), "{}", metrics.text);
    assert_eq!(points[0]["passQps"], 6.0);
    assert_eq!(points[0]["blockQps"], 2.0);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_to_a_dead_machine_is_recorded_and_retried_until_it_answers() {
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(config(dir.path())).await;
    let mut events = running.events();
    let admin = Client::login(&running.base(), "admin", ADMIN_PASSWORD).await;
    let port = free_port();
    let port_text = port.to_string();
    let status = support::heartbeat(
        &running.base(),
        &[
            ("app", "gone"),
            ("ip", "127.0.0.1"),
            ("port", &port_text),
            ("v", "1.8.9"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    wait_for(&mut events, "the reconciliation", |e| {
        matches!(e, Event::Reconciled { .. })
    })
    .await;

    let created = admin
        .post(
            "/api/apps/gone/rules/flow",
            json!({"resource": "r", "count": 1}),
        )
        .await;
    assert_eq!(created.status, 201);
    wait_for(&mut events, "a failed push", |e| {
        matches!(
            e,
            Event::Pushed {
                rule_type: RuleType::Flow,
                ok: false,
                ..
            }
        )
    })
    .await;
    let machines = admin.get("/api/apps/gone/machines").await;
    let flow = &machines.body[0]["pushes"]["flow"];
    assert_eq!(flow["status"], "failed");
    assert_eq!(flow["attempts"], 1);
    assert!(flow["nextRetryAt"].as_i64().is_some());
    assert_eq!(machines.body[0]["drift"], true);

    wait_for(&mut events, "a retry", |e| {
        matches!(
            e,
            Event::Pushed {
                rule_type: RuleType::Flow,
                ok: false,
                ..
            }
        )
    })
    .await;
    let machines = admin.get("/api/apps/gone/machines").await;
    assert_eq!(machines.body[0]["pushes"]["flow"]["attempts"], 2);
    // A heartbeat while the retry is pending leaves it to its schedule (the backoff keeps growing).
    let status = support::heartbeat(
        &running.base(),
        &[
            ("app", "gone"),
            ("ip", "127.0.0.1"),
            ("port", &port_text),
            ("v", "1.8.9"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    wait_for(&mut events, "the reconciliation", |e| {
        matches!(e, Event::Reconciled { .. })
    })
    .await;
    let machines = admin.get("/api/apps/gone/machines").await;
    assert_eq!(machines.body[0]["pushes"]["flow"]["attempts"], 2);

    // The machine comes back on its port: a retry lands.
    let java = JavaClient::start(port, &[]).await;
    wait_for(&mut events, "the retry that lands", |e| {
        matches!(
            e,
            Event::Pushed {
                rule_type: RuleType::Flow,
                ok: true,
                ..
            }
        )
    })
    .await;
    assert!(java.rules("flow").contains("\"resource\":\"r\""));
    let machines = admin.get("/api/apps/gone/machines").await;
    assert_eq!(machines.body[0]["pushes"]["flow"]["status"], "ok");
    assert_eq!(machines.body[0]["drift"], false);
    running.stop().await;
}

/// A rule change on an app of 100 machines: the time until every machine has it. Run with
/// `cargo test --release --features transport --test dashboard_java -- --ignored --nocapture push_reaches`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load test; figures in BENCHMARKS.md"]
async fn push_reaches_a_hundred_machines() {
    const MACHINES: usize = 100;
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(config(dir.path())).await;
    let mut events = running.events();
    let mut clients = Vec::new();
    for _ in 0..MACHINES {
        let java = JavaClient::start(0, &[]).await;
        assert_eq!(java.heartbeat(running.addr, "big-app").await, 200);
        clients.push(java);
    }
    let mut reconciled = 0;
    while reconciled < MACHINES {
        wait_for(&mut events, "reconciliations", |e| {
            matches!(e, Event::Reconciled { .. })
        })
        .await;
        reconciled += 1;
    }
    let state = running.dashboard.state();
    let app = state.db.app_by_name("big-app").await.unwrap().unwrap();
    let mut samples = Vec::new();
    for round in 0..5 {
        let started = std::time::Instant::now();
        state
            .rules
            .apply(
                state,
                app.id,
                RuleType::Flow,
                floodgate_dashboard::rules::Change::Create(
                    json!({"resource": format!("GET:/r{round}"), "count": 10}),
                ),
                "load-test",
            )
            .await
            .unwrap();
        let mut pushed = 0;
        while pushed < MACHINES {
            wait_for(&mut events, "pushes", |e| {
                matches!(
                    e,
                    Event::Pushed {
                        rule_type: RuleType::Flow,
                        ok: true,
                        ..
                    }
                )
            })
            .await;
            pushed += 1;
        }
        samples.push(started.elapsed());
    }
    for java in &clients {
        assert!(java.rules("flow").contains("GET:/r4"));
    }
    println!("rule change to {MACHINES} machines, every one pushed: {samples:?}");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_that_cannot_be_imported_are_shown_not_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(config(dir.path())).await;
    let mut events = running.events();
    let admin = Client::login(&running.base(), "admin", ADMIN_PASSWORD).await;
    let java = JavaClient::start(0, &[("flow", r#"[{"resource":"x","count":-1.0}]"#)]).await;
    assert_eq!(java.heartbeat(running.addr, "odd-app").await, 200);
    wait_for(&mut events, "the reconciliation", |e| {
        matches!(e, Event::Reconciled { .. })
    })
    .await;
    let flow = admin.get("/api/apps/odd-app/rules/flow").await;
    assert_eq!(flow.body["managed"], false);
    let machines = admin.get("/api/apps/odd-app/machines").await;
    let pushed = &machines.body[0]["pushes"]["flow"];
    assert_eq!(pushed["status"], "failed");
    assert!(
        pushed["message"]
            .as_str()
            .unwrap()
            .contains("could not be imported"),
        "{pushed}"
    );
    assert!(java.rules("flow").contains("\"x\""), "left as it was");
    running.stop().await;
}
