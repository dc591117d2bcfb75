//! End to end with a real Floodgate agent on loopback: register → rules of every type created in the
//! dashboard → the agent enforces them → the agent restarts without a rule file and gets them back
//! at its first heartbeat → its rules drift and are pushed again → the dashboard restarts and rules,
//! users, sessions (and their invalidation) and history are as they were.

mod support;

use std::time::Duration;

use floodgate::transport::Agent;
use floodgate::{BlockKind, Floodgate, ManualClock, RuleType};
use floodgate_dashboard::events::Event;
use serde_json::json;
use support::{ADMIN_PASSWORD, Client, Running, config, wait_for};

const START_MS: u64 = 1_800_000_000_000;

fn engine() -> (Floodgate, ManualClock) {
    let clock = ManualClock::new(START_MS);
    (Floodgate::builder().clock(clock.clone()).build(), clock)
}

fn agent(fg: &Floodgate, dashboard: std::net::SocketAddr) -> Agent {
    Agent::builder(fg.clone())
        .app_name("orders")
        .port(0)
        .dashboard(dashboard.to_string())
        .heartbeat_interval(Duration::from_millis(200))
        .start()
        .expect("agent starts")
}

fn stop_agent(agent: Agent) {
    tokio::task::block_in_place(|| agent.shutdown());
}

fn rules_of_every_type() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("flow", json!({"resource": "GET:/orders", "count": 2})),
        ("flow", json!({"resource": "a+b %2B c", "count": 5})),
        (
            "degrade",
            json!({"resource": "GET:/slow", "grade": 0, "count": 50, "timeWindow": 5,
                   "minRequestAmount": 5, "slowRatioThreshold": 0.5, "statIntervalMs": 1000}),
        ),
        ("system", json!({"qps": 10000})),
        (
            "authority",
            json!({"resource": "POST:/pay", "limitApp": "mobile-app", "strategy": 1}),
        ),
        (
            "paramFlow",
            json!({"resource": "GET:/item", "paramIdx": 0, "count": 1, "grade": 1}),
        ),
    ]
}

/// Waits until the machine has taken the stored rules of every type.
async fn wait_all_pushed(events: &mut tokio::sync::broadcast::Receiver<Event>, machine_id: i64) {
    let mut pending: Vec<RuleType> = RuleType::ALL.to_vec();
    while !pending.is_empty() {
        let e = wait_for(
            events,
            "a push of every type",
            |e| matches!(e, Event::Pushed { machine_id: m, ok: true, .. } if *m == machine_id),
        )
        .await;
        if let Event::Pushed { rule_type, .. } = e {
            pending.retain(|t| *t != rule_type);
        }
    }
}

fn enforces_everything(fg: &Floodgate) {
    let a = fg.entry("GET:/orders").enter();
    let b = fg.entry("GET:/orders").enter();
    let blocked = fg
        .entry("GET:/orders")
        .enter()
        .expect_err("third call blocked");
    assert!(a.is_ok() && b.is_ok());
    assert_eq!(blocked.kind(), BlockKind::Flow);
    drop((a, b));
    let pay = fg.entry("POST:/pay").origin("mobile-app").enter();
    assert_eq!(pay.expect_err("black-listed").kind(), BlockKind::Authority);
    assert!(fg.entry("POST:/pay").origin("web").enter().is_ok());
    let first = fg.entry("GET:/item").args(["42"]).enter();
    assert!(first.is_ok());
    let hot = fg.entry("GET:/item").args(["42"]).enter();
    assert_eq!(
        hot.expect_err("hot value limited").kind(),
        BlockKind::ParamFlow
    );
    drop(first);
    assert_eq!(fg.degrade_rules().len(), 1);
    assert_eq!(fg.system_rules().len(), 1);
    // A name with `+` and `%2B` arrives intact (no second URL-decoding on the way).
    assert!(fg.flow_rules().iter().any(|r| r.resource == "a+b %2B c"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_reach_the_agent_survive_its_restart_and_the_dashboards() {
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(config(dir.path())).await;
    let mut events = running.events();
    let admin = Client::login(&running.base(), "admin", ADMIN_PASSWORD).await;

    let (fg, _clock) = engine();
    let first_agent = agent(&fg, running.addr);
    let Event::Heartbeat { machine_id, .. } = wait_for(&mut events, "registration", |e| {
        matches!(e, Event::Heartbeat { first: true, .. })
    })
    .await
    else {
        unreachable!()
    };
    let apps = admin.get("/api/apps").await;
    assert_eq!(apps.body[0]["name"], "orders");
    assert_eq!(apps.body[0]["machines"]["healthy"], 1);

    for (t, rule) in rules_of_every_type() {
        let a = admin
            .post(&format!("/api/apps/orders/rules/{t}"), rule)
            .await;
        assert_eq!(a.status, 201, "{t}: {}", a.text);
    }
    wait_all_pushed(&mut events, machine_id).await;
    enforces_everything(&fg);

    // A bad rule names its field, and the stored rules and the machine's stay as they were.
    let bad = admin
        .post(
            "/api/apps/orders/rules/flow",
            json!({"resource": "x", "count": -1}),
        )
        .await;
    assert_eq!(bad.status, 422, "{}", bad.text);
    assert_eq!(bad.body["field"], "count");
    let flow = admin.get("/api/apps/orders/rules/flow").await;
    assert_eq!(flow.body["rules"].as_array().unwrap().len(), 2);
    assert_eq!(fg.flow_rules().len(), 2);

    // The agent restarts without a rule file: at its first heartbeat the stored rules come back.
    stop_agent(first_agent);
    let (fg2, _clock2) = engine();
    assert!(fg2.flow_rules().is_empty());
    let second_agent = agent(&fg2, running.addr);
    let Event::Heartbeat {
        machine_id: second, ..
    } = wait_for(&mut events, "the restarted agent", |e| {
        matches!(e, Event::Heartbeat { first: true, .. })
    })
    .await
    else {
        unreachable!()
    };
    wait_all_pushed(&mut events, second).await;
    enforces_everything(&fg2);

    // Rules changed behind the dashboard's back are put right at the next heartbeat.
    fg2.load_rules_json(RuleType::Flow, "[]").unwrap();
    wait_for(&mut events, "the drift repaired", |e| {
        matches!(e, Event::Pushed { machine_id: m, rule_type: RuleType::Flow, ok: true } if *m == second)
    })
    .await;
    assert_eq!(fg2.flow_rules().len(), 2);

    // Deleting the last rule of a type pushes an empty list (the machine's rules go too).
    let system = admin.get("/api/apps/orders/rules/system").await;
    let id = system.body["rules"][0]["id"].as_i64().unwrap();
    let deleted = admin
        .delete(&format!("/api/apps/orders/rules/system/{id}"))
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    wait_for(&mut events, "the empty system list pushed", |e| {
        matches!(e, Event::Pushed { machine_id: m, rule_type: RuleType::System, ok: true } if *m == second)
    })
    .await;
    assert!(fg2.system_rules().is_empty());
    let system = admin.get("/api/apps/orders/rules/system").await;
    assert_eq!(system.body["managed"], true);
    assert_eq!(system.body["rules"].as_array().unwrap().len(), 0);

    let history = admin.get("/api/apps/orders/history").await;
    let history_len = history.body.as_array().unwrap().len();
    assert_eq!(
        history_len, 7,
        "six creations and a deletion: {}",
        history.text
    );

    // Two sessions; one signs out. Then the dashboard restarts on the same file.
    let other = Client::login(&running.base(), "admin", ADMIN_PASSWORD).await;
    assert_eq!(other.post("/auth/logout", json!({})).await.status / 100, 2);
    assert_eq!(other.get("/api/me").await.status, 401);
    let rules_before: Vec<serde_json::Value> = {
        let mut all = Vec::new();
        for t in ["flow", "degrade", "system", "authority", "paramFlow"] {
            all.push(admin.get(&format!("/api/apps/orders/rules/{t}")).await.body);
        }
        all
    };
    stop_agent(second_agent);
    running.stop().await;

    let running = Running::start(config(dir.path())).await;
    let admin = Client {
        base: running.base(),
        ..admin
    };
    let other = Client {
        base: running.base(),
        ..other
    };
    assert_eq!(
        admin.get("/api/me").await.status,
        200,
        "the session survives"
    );
    assert_eq!(
        other.get("/api/me").await.status,
        401,
        "the signed-out session stays out"
    );
    for (i, t) in ["flow", "degrade", "system", "authority", "paramFlow"]
        .iter()
        .enumerate()
    {
        let now = admin.get(&format!("/api/apps/orders/rules/{t}")).await.body;
        assert_eq!(now, rules_before[i], "{t} rules kept");
    }
    let history = admin.get("/api/apps/orders/history").await;
    assert_eq!(history.body.as_array().unwrap().len(), history_len);
    assert_eq!(
        Client::login(&running.base(), "admin", ADMIN_PASSWORD)
            .await
            .get("/api/me")
            .await
            .body["role"],
        "admin"
    );

    // New rule ids never reuse a deleted one.
    let created = admin
        .post("/api/apps/orders/rules/system", json!({"qps": 500}))
        .await;
    assert!(created.body["rule"]["id"].as_i64().unwrap() > id);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machines_existing_rules_are_imported_not_wiped_and_reach_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(config(dir.path())).await;
    let mut events = running.events();
    let admin = Client::login(&running.base(), "admin", ADMIN_PASSWORD).await;

    let (fg1, _c1) = engine();
    fg1.load_rules_json(RuleType::Flow, r#"[{"resource":"GET:/legacy","count":7}]"#)
        .unwrap();
    let a1 = agent(&fg1, running.addr);
    wait_for(&mut events, "the import", |e| {
        matches!(
            e,
            Event::Imported {
                rule_type: RuleType::Flow,
                ..
            }
        )
    })
    .await;
    assert_eq!(fg1.flow_rules().len(), 1, "existing rules are not wiped");
    let flow = admin.get("/api/apps/orders/rules/flow").await;
    assert_eq!(flow.body["rules"][0]["rule"]["resource"], "GET:/legacy");
    let history = admin.get("/api/apps/orders/history?type=flow").await;
    assert_eq!(history.body[0]["action"], "import");

    // A second machine of the app with no rules gets the app's.
    let (fg2, _c2) = engine();
    let mut events = running.events();
    let a2 = agent(&fg2, running.addr);
    let Event::Heartbeat {
        machine_id: second, ..
    } = wait_for(&mut events, "the second machine", |e| {
        matches!(e, Event::Heartbeat { first: true, .. })
    })
    .await
    else {
        unreachable!()
    };
    wait_for(&mut events, "the second machine's push", |e| {
        matches!(e, Event::Pushed { machine_id, rule_type: RuleType::Flow, ok: true } if *machine_id == second)
    })
    .await;
    assert_eq!(fg2.flow_rules().len(), 1);
    assert_eq!(fg2.flow_rules()[0].resource, "GET:/legacy");
    let status = admin.get("/api/apps/orders/push-status").await;
    assert_eq!(status.body["machines"].as_array().unwrap().len(), 2);
    stop_agent(a1);
    stop_agent(a2);
    running.stop().await;
}

/// Two real machines of an app: the dashboard makes one the app's token server and the other its
/// client; a cluster rule the dashboard pushes to both is then granted by the server, and the
/// cluster page's API shows who serves whom.
#[cfg(feature = "cluster")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_assigns_a_token_server_and_its_client_among_real_machines() {
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(config(dir.path())).await;
    let mut events = running.events();
    let admin = Client::login(&running.base(), "admin", ADMIN_PASSWORD).await;
    let mut machines = Vec::new();
    let mut engines = Vec::new();
    for _ in 0..2 {
        let (fg, _clock) = engine();
        let agent = agent(&fg, running.addr);
        let Event::Heartbeat { machine_id, .. } = wait_for(&mut events, "registration", |e| {
            matches!(e, Event::Heartbeat { first: true, .. })
        })
        .await
        else {
            unreachable!()
        };
        machines.push(machine_id);
        engines.push((fg, agent));
    }
    let (server, client) = (machines[0], machines[1]);

    let port = support::free_port();
    let made = admin
        .post(
            &format!("/api/apps/orders/cluster/machines/{server}/server"),
            json!({"port": port}),
        )
        .await;
    assert_eq!(made.status, 200, "{}", made.text);
    let made = admin
        .post(
            &format!("/api/apps/orders/cluster/machines/{client}/client"),
            json!({"server": server}),
        )
        .await;
    assert_eq!(made.status, 200, "{}", made.text);

    let rule = json!({"resource": "GET:/orders", "count": 3, "clusterMode": true,
        "clusterConfig": {"flowId": 71, "thresholdType": 1}});
    let saved = admin.post("/api/apps/orders/rules/flow", rule).await;
    assert_eq!(saved.status, 201, "{}", saved.text);
    // The client's entries are answered by the server once it serves the pushed rule (until
    // then the client checks the rule locally).
    let (client_fg, _) = &engines[1];
    tokio::time::timeout(Duration::from_secs(20), async {
        while client_fg.stats().cluster_token_answers == 0 {
            drop(client_fg.entry("GET:/orders").enter());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the token server answers the client");
    let page = admin.get("/apps/orders/cluster").await;
    assert_eq!(page.status, 200);
    let server_addr = format!("127.0.0.1:{port}");
    assert!(
        page.text.contains(&server_addr),
        "the client's server is shown: {}",
        page.text
    );
    for (_, agent) in engines {
        stop_agent(agent);
    }
    running.stop().await;
}
