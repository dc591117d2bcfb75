//! Cluster flow control in the dashboard, through the router (`oneshot`, a real SQLite file per test)
//! and fake agents on real loopback sockets: the cluster page with a machine of every backend (none,
//! an embedded token server, a token client, Redis, a Java client that names no backend, one that
//! does not answer, one that answers garbage), strings from outside escaped; each cluster rule's
//! pass and block QPS summed over two machines' fetched metrics; and the rule forms' cluster fields —
//! stored, pushed in Sentinel's field names, a flow id assigned when left empty, a bad field refused
//! with its name and nothing saved, a stored config kept through an edit.

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use floodgate_core::RuleType;
use floodgate_dashboard::Dashboard;
use floodgate_dashboard::events::Event;
use serde_json::{Value, json};
use support::{Browser, NOW, PASSWORD, machine_at};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::broadcast;
use tower::ServiceExt;

/// A script that would run if a page did not escape what an agent says.
const XSS: &str = "<script>alert(1)</script>";
const XSS_ESCAPED: &str = "&#60;script&#62;alert(1)&#60;/script&#62;";

/// What a fake agent answers: a body per command, the metric lines of the seconds asked for, and
/// every request it was sent (path with query, body).
#[derive(Clone, Default)]
struct FakeAgent {
    answers: HashMap<&'static str, String>,
    lines: Vec<String>,
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

impl FakeAgent {
    fn answering(answers: &[(&'static str, &str)]) -> FakeAgent {
        let mut agent = FakeAgent::default();
        for (command, body) in answers {
            agent.answers.insert(*command, (*body).to_owned());
        }
        // Pushes succeed; read back, the machine has no rules.
        agent.answers.insert("setRules", "success".into());
        agent.answers.insert("setParamFlowRules", "success".into());
        agent.answers.insert("getRules", "[]".into());
        agent.answers.insert("getParamFlowRules", "[]".into());
        agent
    }

    /// The `data` of every request for `command` (`setRules`, …), as JSON.
    fn pushed(&self, command: &str) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(path, _)| path.trim_start_matches('/') == command)
            .filter_map(|(_, body)| {
                form_urlencoded::parse(body.as_bytes())
                    .find(|(k, _)| k == "data")
                    .map(|(_, v)| serde_json::from_str(&v).unwrap())
            })
            .collect()
    }

    /// Serves on a loopback port, answering as a Java client does (HTTP/1.0, no Content-Type).
    async fn serve(self) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let agent = self.clone();
                tokio::spawn(async move {
                    let Some((path, body)) = read_request(&mut socket).await else {
                        return;
                    };
                    agent.seen.lock().unwrap().push((path.clone(), body));
                    let (command, query) = path.split_once('?').unwrap_or((&path, ""));
                    let command = command.trim_start_matches('/');
                    let (status, answer) = match agent.answers.get(command) {
                        Some(answer) => ("200 OK", answer.clone()),
                        None if command == "metric" => ("200 OK", agent.metric_lines(query)),
                        None => ("400 Bad Request", format!("Unknown command `{command}`")),
                    };
                    let response = format!(
                        "HTTP/1.0 {status}\r\nContent-Length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                    let _ = socket.write_all(response.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        port
    }

    /// The lines of the seconds in the query's `[startTime, endTime]`.
    fn metric_lines(&self, query: &str) -> String {
        let mut start = i64::MIN;
        let mut end = i64::MAX;
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "startTime" => start = v.parse().unwrap(),
                "endTime" => end = v.parse().unwrap(),
                _ => {}
            }
        }
        self.lines
            .iter()
            .filter(|l| {
                let ts: i64 = l.split('|').next().unwrap().parse().unwrap();
                ts >= start && ts <= end
            })
            .map(|l| format!("{l}\n"))
            .collect()
    }
}

/// A request's path and body (read up to its `Content-Length`).
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<(String, String)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())
                .flatten()
        })
        .unwrap_or(0);
    while data.len() < head_end + length {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    }
    let path = head.split_whitespace().nth(1)?.to_owned();
    let body = String::from_utf8_lossy(&data[head_end..head_end + length]).into_owned();
    Some((path, body))
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The part of `page` that shows machine `id`.
fn machine_section(page: &str, id: i64) -> &str {
    page.split(&format!(r#"id="cluster-machine-{id}""#))
        .nth(1)
        .unwrap_or_else(|| panic!("no section of machine {id}: {page}"))
        .split("</section>")
        .next()
        .unwrap()
}

/// The row of the cluster rule `rule` (`flow-3`) on the cluster page.
fn rule_row<'a>(page: &'a str, rule: &str) -> &'a str {
    page.split(&format!(r#"data-rule="{rule}""#))
        .nth(1)
        .unwrap_or_else(|| panic!("no row of rule {rule}: {page}"))
        .split("</tr>")
        .next()
        .unwrap()
}

fn mode(mode: i64, backend: Option<&str>, extra: &str) -> String {
    let backend = backend.map_or(String::new(), |b| format!(r#","backend":"{b}""#));
    format!(
        r#"{{"mode":{mode},"lastModified":{},"clientAvailable":true,"serverAvailable":true{backend}{extra}}}"#,
        NOW as i64 - 5000
    )
}

#[tokio::test]
async fn the_cluster_page_shows_each_machines_backend() {
    let dir = tempfile::tempdir().unwrap();
    let d = support::start(&dir).await;
    let router = d.router();

    let none = FakeAgent::answering(&[("getClusterMode", &mode(-1, Some("none"), ""))]);
    let server_info = json!({
        "port": 18730,
        "connection": [{"namespace": XSS, "connectionSet": [
            {"address": "10.0.0.2:50123", "host": "10.0.0.2"},
            {"address": "10.0.0.3:50124", "host": "10.0.0.3"}], "connectedCount": 2}],
        "requestLimitData": [{"namespace": XSS, "currentQps": 0.0, "maxAllowedQps": 30000.0}],
        "transport": {"port": 18730, "idleSeconds": 600},
        "flow": {"exceedCount": 1.0, "maxOccupyRatio": 1.0, "intervalMs": 1000, "sampleCount": 10,
                 "maxAllowedQps": 30000.0},
        "namespaceSet": [XSS], "embedded": true, "appName": "orders",
    })
    .to_string();
    let server_metrics = json!([{"flowId": 7, "resourceName": "GET:/orders", "passQps": 12.0,
        "blockQps": 3.0, "passRequestQps": 12.0, "blockRequestQps": 3.0, "occupiedPassQps": 0.0,
        "topParams": {}, "timestamp": NOW}])
    .to_string();
    let server = FakeAgent::answering(&[
        ("getClusterMode", &mode(1, Some("server"), "")),
        ("cluster/server/info", &server_info),
        ("cluster/server/metricList", &server_metrics),
    ]);
    let client = FakeAgent::answering(&[
        ("getClusterMode", &mode(0, Some("client"), "")),
        (
            "cluster/client/fetchConfig",
            r#"{"serverHost":"10.0.0.9","serverPort":18730,"clientState":2,"requestTimeout":20}"#,
        ),
    ]);
    let redis_extra = format!(
        r#","redis":{{"nodes":["redis://10.0.0.5:6379","redis://:hunter2@10.0.0.6:6379"],"cluster":true,"instance":{}}},"shards":3"#,
        json!(XSS)
    );
    let redis = FakeAgent::answering(&[("getClusterMode", &mode(0, Some("redis"), &redis_extra))]);
    // Java Sentinel 1.8: no backend, and a client module whose client is still connecting.
    let java = FakeAgent::answering(&[
        ("getClusterMode", &mode(0, None, "")),
        (
            "cluster/client/fetchConfig",
            r#"{"serverHost":"10.0.0.9","serverPort":18730,"clientState":1,"requestTimeout":20,"connectTimeout":10}"#,
        ),
    ]);
    let garbage = FakeAgent::answering(&[("getClusterMode", "<html>oops</html>")]);

    let mut ids = HashMap::new();
    for (name, agent) in [
        ("none", none),
        ("server", server.clone()),
        ("client", client),
        ("redis", redis),
        ("java", java),
        ("garbage", garbage),
    ] {
        let port = agent.serve().await;
        let m = machine_at(&d, "orders", "127.0.0.1", port, name).await;
        ids.insert(name, m.id);
    }
    let gone = machine_at(&d, "orders", "127.0.0.1", closed_port(), "gone").await;

    // Without a session, a browser is sent to sign in.
    let anonymous = router
        .clone()
        .oneshot(
            Request::get("/apps/orders/cluster")
                .header(header::ACCEPT, "text/html")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::SEE_OTHER);
    assert_eq!(anonymous.headers()[header::LOCATION], "/login");

    let admin = Browser::login(&router, "admin", PASSWORD).await;
    let page = admin.get("/apps/orders/cluster").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let body = &page.body;
    assert!(
        body.contains(r#"href="/apps/orders/cluster""#),
        "linked from the app's tabs"
    );
    assert!(body.contains("No rule of this app is in cluster mode"));

    let none = machine_section(body, ids["none"]);
    assert!(none.contains("-1 (not started)"), "{none}");
    assert!(none.contains("backend-none"), "{none}");
    assert!(none.contains("2027-01-15 07:59:55 UTC (5 s ago)"), "{none}");

    let server_part = machine_section(body, ids["server"]);
    assert!(server_part.contains("1 (server)"), "{server_part}");
    assert!(
        server_part.contains("its embedded token server"),
        "{server_part}"
    );
    assert!(
        server_part.contains(r#"<dd class="port">18730</dd>"#),
        "{server_part}"
    );
    assert!(server_part.contains("embedded in the app"), "{server_part}");
    assert!(server_part.contains("<code>10.0.0.2:50123</code>, <code>10.0.0.3:50124</code>"));
    assert!(
        server_part.contains(&format!(
            r#"<td class="namespace">{XSS_ESCAPED}</td><td class="num">2</td>"#
        )),
        "{server_part}"
    );
    assert!(
        server_part.contains(
            r#"<tr data-flow-id="7"><td class="num">7</td><td class="resource">GET:/orders</td><td class="num pass">12</td><td class="num block">3</td>"#
        ),
        "{server_part}"
    );
    // The figures were asked for the app's namespace.
    let asked: Vec<String> = server
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|(p, _)| p.clone())
        .collect();
    assert!(
        asked
            .iter()
            .any(|p| p == "/cluster/server/metricList?namespace=orders"),
        "{asked:?}"
    );

    let client = machine_section(body, ids["client"]);
    assert!(client.contains("0 (client)"), "{client}");
    assert!(
        client.contains("a token server it is a client of"),
        "{client}"
    );
    assert!(
        client.contains(r#"<dd class="server">10.0.0.9:18730</dd>"#),
        "{client}"
    );
    assert!(client.contains(r#"<span class="status client-started">started</span>"#));
    assert!(client.contains("20 ms"), "{client}");

    let redis = machine_section(body, ids["redis"]);
    assert!(redis.contains("backend-redis"), "{redis}");
    assert!(
        redis.contains("<code>redis://10.0.0.5:6379</code>"),
        "{redis}"
    );
    assert!(
        redis.contains("<code>redis://…@10.0.0.6:6379</code>") && !body.contains("hunter2"),
        "a password in a node's address is not shown: {redis}"
    );
    assert!(redis.contains("a Redis Cluster"), "{redis}");
    assert!(
        redis.contains(&format!(r#"<dd class="instance">{XSS_ESCAPED}</dd>"#)),
        "{redis}"
    );

    let java = machine_section(body, ids["java"]);
    assert!(java.contains("0 (client)"), "{java}");
    assert!(java.contains("read from the mode"), "{java}");
    assert!(java.contains(r#"<span class="status client-pending">pending</span>"#));

    let garbage = machine_section(body, ids["garbage"]);
    assert!(
        garbage.contains(r#"<p class="error unreachable">Unreachable: bad answer: not JSON"#),
        "{garbage}"
    );
    let gone = machine_section(body, gone.id);
    assert!(
        gone.contains(r#"<p class="error unreachable">Unreachable: cannot connect"#),
        "{gone}"
    );

    // What agents said is text, never markup.
    assert!(!body.contains(XSS), "an agent's string is escaped");
    assert!(!body.contains("<html>oops"));

    // Other tabs link to the page too, and an unknown app is a 404 page.
    assert!(
        admin
            .get("/apps/orders/machines")
            .await
            .body
            .contains(r#"href="/apps/orders/cluster">Cluster</a>"#)
    );
    assert_eq!(
        admin.get("/apps/nosuch/cluster").await.status,
        StatusCode::NOT_FOUND
    );
    d.shutdown().await;
}

/// A thin metric line of second `ts` for `resource`: `pass` passed (and completed), `block` blocked.
fn line(ts: i64, resource: &str, pass: i64, block: i64) -> String {
    format!("{ts}|{resource}|{pass}|{block}|{pass}|0|5|0|0|0")
}

/// Counts successful `Fetched` events per machine until each of `machines` has one.
async fn wait_fetched(events: &mut broadcast::Receiver<Event>, machines: &[i64]) {
    let mut pending: Vec<i64> = machines.to_vec();
    tokio::time::timeout(Duration::from_secs(20), async {
        while !pending.is_empty() {
            match events.recv().await {
                Ok(Event::Fetched {
                    machine_id,
                    ok: true,
                }) => pending.retain(|m| *m != machine_id),
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => panic!("events closed"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("machines {pending:?} not fetched in time"));
}

/// Waits until machine `machine_id` took a push of `rule_type`.
async fn wait_pushed(
    events: &mut broadcast::Receiver<Event>,
    machine_id: i64,
    rule_type: RuleType,
) {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match events.recv().await {
                Ok(Event::Pushed {
                    machine_id: m,
                    rule_type: t,
                    ok: true,
                }) if m == machine_id && t == rule_type => return,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => panic!("events closed"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no push of {rule_type} to machine {machine_id}"));
}

/// A flow rule's form in cluster mode as a browser submits it.
fn cluster_flow_form<'a>(
    resource: &'a str,
    flow_id: &'a str,
    threshold_type: &'a str,
) -> Vec<(&'a str, &'a str)> {
    vec![
        ("resource", resource),
        ("limitApp", "default"),
        ("grade", "1"),
        ("count", "20"),
        ("strategy", "0"),
        ("refResource", ""),
        ("controlBehavior", "0"),
        ("warmUpPeriodSec", "10"),
        ("maxQueueingTimeMs", "500"),
        ("clusterMode", "true"),
        ("clusterConfig.flowId", flow_id),
        ("clusterConfig.thresholdType", threshold_type),
        ("clusterConfig.fallbackToLocalWhenFail", "true"),
        ("clusterConfig.sampleCount", "10"),
        ("clusterConfig.windowIntervalMs", "1000"),
    ]
}

/// A hot-parameter rule's form in cluster mode.
fn cluster_param_form<'a>(resource: &'a str, flow_id: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("resource", resource),
        ("paramIdx", "0"),
        ("grade", "1"),
        ("count", "5"),
        ("durationInSec", "1"),
        ("controlBehavior", "0"),
        ("maxQueueingTimeMs", "0"),
        ("burstCount", "0"),
        ("paramFlowItemList", ""),
        ("limitApp", "default"),
        ("clusterMode", "true"),
        ("clusterConfig.flowId", flow_id),
        ("clusterConfig.thresholdType", "0"),
        ("clusterConfig.sampleCount", "5"),
        ("clusterConfig.windowIntervalMs", "500"),
    ]
}

#[tokio::test]
async fn each_cluster_rule_shows_its_traffic_summed_over_the_machines() {
    let dir = tempfile::tempdir().unwrap();
    let d = support::start_with(&dir, |c| c.fetch_interval_ms = 100).await;
    let mut events = d.state().events.subscribe();
    let admin = Browser::login(&d.router(), "admin", PASSWORD).await;
    // The last complete second at NOW, and one before it.
    let last = NOW as i64 - 1000;
    let before = last - 1000;
    let mut a = FakeAgent::answering(&[("getClusterMode", &mode(-1, Some("none"), ""))]);
    a.lines = vec![
        line(before, "GET:/orders", 100, 100),
        line(last, "GET:/orders", 10, 2),
        line(last, "GET:/items", 4, 1),
    ];
    let metrics = r#"[{"flowId":1,"resourceName":"GET:/orders","passQps":40.0,"blockQps":7.5}]"#;
    let mut b = FakeAgent::answering(&[
        ("getClusterMode", &mode(1, Some("server"), "")),
        ("cluster/server/info", r#"{"port":18730,"connection":[]}"#),
        ("cluster/server/metricList", metrics),
    ]);
    b.lines = vec![line(last, "GET:/orders", 30, 5)];
    let ma = machine_at(&d, "orders", "127.0.0.1", a.serve().await, "a").await;
    let mb = machine_at(&d, "orders", "127.0.0.1", b.serve().await, "b").await;

    // Two cluster rules on GET:/orders (one flow, one hot-parameter), one local rule, and a cluster
    // rule of a resource without traffic.
    let saved = admin
        .post(
            "/apps/orders/rules/flow",
            &cluster_flow_form("GET:/orders", "", "1"),
        )
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let saved = admin
        .post(
            "/apps/orders/rules/paramFlow",
            &cluster_param_form("GET:/orders", "1001"),
        )
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let saved = admin
        .post(
            "/apps/orders/rules/flow",
            &[("resource", "GET:/items"), ("count", "3")],
        )
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let saved = admin
        .post(
            "/apps/orders/rules/flow",
            &cluster_flow_form("GET:/quiet", "", "0"),
        )
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);

    wait_fetched(&mut events, &[ma.id, mb.id]).await;
    d.state().ingest.flush().await.unwrap();

    let page = admin.get("/apps/orders/cluster").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body
            .contains("in the second from 2027-01-15 07:59:59 UTC"),
        "{}",
        page.body
    );
    let orders = rule_row(&page.body, "flow-1");
    assert!(
        orders.contains(r#"<td class="num flow-id">1</td>"#),
        "{orders}"
    );
    assert!(
        orders.contains(r#"<td class="resource">GET:/orders</td>"#),
        "{orders}"
    );
    assert!(
        orders.contains(r#"<td class="threshold-type">GLOBAL</td>"#),
        "{orders}"
    );
    assert!(orders.contains(r#"<td class="num">20</td>"#), "{orders}");
    // 10 + 30 passed and 2 + 5 blocked in the last second, on both machines.
    assert!(
        orders.contains(r#"<td class="num pass">40</td>"#),
        "{orders}"
    );
    assert!(
        orders.contains(r#"<td class="num block">7</td>"#),
        "{orders}"
    );
    assert!(orders.contains(r#"<td class="num">2</td>"#), "{orders}");
    // And what the token server among them counted for flow id 1.
    assert!(
        orders.contains(&format!("127.0.0.1:{}: pass 40 · block 7.5", mb.port)),
        "{orders}"
    );
    let param = rule_row(&page.body, "paramFlow-2");
    assert!(
        param.contains(r#"<td class="num flow-id">1001</td>"#),
        "{param}"
    );
    assert!(
        param.contains(r#"<td class="threshold-type">AVG_LOCAL</td>"#),
        "{param}"
    );
    assert!(param.contains(r#"<td class="num pass">40</td>"#), "{param}");
    assert!(
        !page.body.contains(r#"data-rule="flow-3""#),
        "the local rule is not listed"
    );
    let quiet = rule_row(&page.body, "flow-4");
    assert!(
        quiet.contains(r#"<td class="num flow-id">4</td>"#),
        "{quiet}"
    );
    assert!(quiet.contains(r#"<td class="num pass">0</td>"#), "{quiet}");
    d.shutdown().await;
}

/// The stored rules of `rule_type` of app `orders`, read from SQLite: (id, body).
async fn stored(d: &Dashboard, rule_type: &str) -> Vec<(i64, Value)> {
    let app = d.state().db.app_by_name("orders").await.unwrap().unwrap();
    d.state()
        .db
        .rules(app.id, rule_type)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.id, serde_json::from_str(&r.body).unwrap()))
        .collect()
}

#[tokio::test]
async fn cluster_rules_are_saved_pushed_and_refused_through_the_forms() {
    let dir = tempfile::tempdir().unwrap();
    let d = support::start(&dir).await;
    let mut events = d.state().events.subscribe();
    let agent = FakeAgent::answering(&[]);
    let m = machine_at(&d, "orders", "127.0.0.1", agent.clone().serve().await, "h").await;
    let admin = Browser::login(&d.router(), "admin", PASSWORD).await;

    // The new forms offer the cluster fields with their defaults, hidden until the box is ticked.
    for t in ["flow", "paramFlow"] {
        let form = admin.get(&format!("/apps/orders/rules/{t}/new")).await;
        assert!(
            form.body
                .contains(r#"id="field-clusterMode" name="clusterMode" value="true" aria"#)
        );
        for (name, value) in [
            ("clusterConfig.flowId", ""),
            ("clusterConfig.sampleCount", "10"),
            ("clusterConfig.windowIntervalMs", "1000"),
        ] {
            assert!(
                form.body.contains(&format!(
                    r#"id="field-{name}" name="{name}" value="{value}""#
                )),
                "{t} {name}"
            );
        }
        assert!(form.body.contains(r#"<div class="field cluster-field">"#));
        assert!(
            form.body
                .contains(r#"name="clusterConfig.fallbackToLocalWhenFail" value="true" checked"#)
        );
    }

    // A flow rule in cluster mode, its flow id left empty: it gets its own rule id.
    let saved = admin
        .post(
            "/apps/orders/rules/flow",
            &cluster_flow_form("GET:/orders", "", "1"),
        )
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let rules = stored(&d, "flow").await;
    let (id, rule) = &rules[0];
    assert_eq!(rule["clusterMode"], true);
    assert_eq!(
        rule["clusterConfig"],
        json!({"flowId": id, "thresholdType": 1, "fallbackToLocalWhenFail": true, "strategy": 0,
               "sampleCount": 10, "windowIntervalMs": 1000, "resourceTimeout": 2000,
               "resourceTimeoutStrategy": 0, "acquireRefuseStrategy": 0, "clientOfflineTime": 2000})
    );
    wait_pushed(&mut events, m.id, RuleType::Flow).await;
    let pushed = agent.pushed("setRules");
    let last = pushed.last().unwrap();
    assert_eq!(last[0]["clusterMode"], true);
    assert_eq!(
        last[0]["clusterConfig"], rule["clusterConfig"],
        "pushed in Sentinel's names"
    );
    let list = admin.get("/apps/orders/rules/flow").await;
    assert!(
        list.body
            .contains(&format!("cluster · GLOBAL · flowId {id}")),
        "{}",
        list.body
    );

    // A hot-parameter rule with a flow id of its own.
    let saved = admin
        .post(
            "/apps/orders/rules/paramFlow",
            &cluster_param_form("GET:/item", "1001"),
        )
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let params = stored(&d, "paramFlow").await;
    assert_eq!(
        params[0].1["clusterConfig"],
        json!({"flowId": 1001, "thresholdType": 0, "fallbackToLocalWhenFail": false,
               "sampleCount": 5, "windowIntervalMs": 500}),
        "an unticked fallback box is false"
    );
    wait_pushed(&mut events, m.id, RuleType::ParamFlow).await;
    let pushed = agent.pushed("setParamFlowRules");
    assert_eq!(pushed.last().unwrap()[0]["clusterMode"], true);
    assert_eq!(pushed.last().unwrap()[0]["clusterConfig"]["flowId"], 1001);
    assert!(
        admin
            .get("/apps/orders/rules/paramFlow")
            .await
            .body
            .contains("cluster · AVG_LOCAL · flowId 1001")
    );

    // Another flow rule without a flow id gets one no other rule has (its own id).
    let saved = admin
        .post(
            "/apps/orders/rules/flow",
            &cluster_flow_form("GET:/items", "", "0"),
        )
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let rules = stored(&d, "flow").await;
    let flow_ids: Vec<i64> = rules
        .iter()
        .map(|(_, r)| r["clusterConfig"]["flowId"].as_i64().unwrap())
        .collect();
    assert_eq!(flow_ids, [rules[0].0, rules[1].0]);
    assert!(!flow_ids.contains(&1001));

    // Bad cluster fields: refused, the error next to the field it names, nothing saved.
    let before = (stored(&d, "flow").await, stored(&d, "paramFlow").await);
    let history = admin.api("GET", "/api/apps/orders/history", None).await.1;
    for (field, value, named, says) in [
        (
            "clusterConfig.flowId",
            "0",
            "clusterConfig.flowId",
            "must be &#62; 0",
        ),
        (
            "clusterConfig.flowId",
            "1001",
            "clusterConfig.flowId",
            "already the flow id of hot-parameter rule",
        ),
        (
            "clusterConfig.flowId",
            "x",
            "clusterConfig.flowId",
            "must be a whole number",
        ),
        (
            "clusterConfig.thresholdType",
            "5",
            "clusterConfig.thresholdType",
            "must be 0 or 1, got 5",
        ),
        (
            "clusterConfig.sampleCount",
            "0",
            "clusterConfig.sampleCount",
            "must be &#62; 0, got 0",
        ),
        (
            "clusterConfig.windowIntervalMs",
            "999",
            "clusterConfig.windowIntervalMs",
            "divisible by sampleCount (999 / 10)",
        ),
    ] {
        let mut form = cluster_flow_form("GET:/bad", "", "0");
        form.retain(|(k, _)| *k != field);
        form.push((field, value));
        let refused = admin.post("/apps/orders/rules/flow", &form).await;
        assert_eq!(
            refused.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{field}={value}"
        );
        let error = refused
            .body
            .split(&format!(r#"<p class="error" id="error-{named}">"#))
            .nth(1)
            .unwrap_or_else(|| panic!("{field}={value}: no error on {named}: {}", refused.body));
        assert!(
            error.split("</p>").next().unwrap().contains(says),
            "{field}={value}: {error}"
        );
        assert!(
            refused.body.contains(r#"value="GET:/bad""#),
            "what was typed is kept"
        );
    }
    let refused = admin
        .post(
            "/apps/orders/rules/paramFlow",
            &cluster_param_form("GET:/bad", "0"),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.body.contains(r#"id="error-clusterConfig.flowId""#));
    assert_eq!(
        (stored(&d, "flow").await, stored(&d, "paramFlow").await),
        before
    );
    assert_eq!(
        admin.api("GET", "/api/apps/orders/history", None).await.1,
        history
    );

    // An edit that changes the count keeps the cluster config, fields the form does not show included.
    let (id, rule) = stored(&d, "flow").await[0].clone();
    let edit = admin
        .get(&format!("/apps/orders/rules/flow/{id}/edit"))
        .await;
    assert!(edit.body.contains(&format!(
        r#"id="field-clusterConfig.flowId" name="clusterConfig.flowId" value="{id}""#
    )));
    let id_text = id.to_string();
    let mut form = cluster_flow_form("GET:/orders", &id_text, "1");
    form.retain(|(k, _)| *k != "count");
    form.push(("count", "25"));
    let updated = admin
        .post(&format!("/apps/orders/rules/flow/{id}"), &form)
        .await;
    assert_eq!(updated.status, StatusCode::SEE_OTHER, "{}", updated.body);
    let after = &stored(&d, "flow").await[0].1;
    assert_eq!(after["count"], 25.0);
    assert_eq!(after["clusterConfig"], rule["clusterConfig"]);

    // Out of cluster mode the cluster fields are not read, and the stored config is kept for later.
    let mut form = cluster_flow_form("GET:/orders", "nonsense", "9");
    form.retain(|(k, _)| *k != "clusterMode");
    let updated = admin
        .post(&format!("/apps/orders/rules/flow/{id}"), &form)
        .await;
    assert_eq!(updated.status, StatusCode::SEE_OTHER, "{}", updated.body);
    let after = &stored(&d, "flow").await[0].1;
    assert_eq!(after["clusterMode"], false);
    assert_eq!(after["clusterConfig"], rule["clusterConfig"]);
    assert!(
        !admin
            .get("/apps/orders/rules/flow")
            .await
            .body
            .contains(&format!("flowId {id}<")),
        "no marker out of cluster mode"
    );

    // The JSON API assigns a flow id too, and refuses one that is taken.
    let (status, answer) = admin
        .api(
            "POST",
            "/api/apps/orders/rules/flow",
            Some(json!({"resource": "GET:/api", "count": 5, "clusterMode": true})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let new_id = answer["rule"]["id"].as_i64().unwrap();
    assert_eq!(answer["rule"]["rule"]["clusterConfig"]["flowId"], new_id);
    assert_eq!(answer["rule"]["rule"]["clusterConfig"]["thresholdType"], 0);
    let (status, answer) = admin
        .api(
            "POST",
            "/api/apps/orders/rules/flow",
            Some(
                json!({"resource": "GET:/api2", "count": 5, "clusterMode": true,
                        "clusterConfig": {"flowId": 1001}}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["field"], "clusterConfig.flowId", "{answer}");
    d.shutdown().await;
}

/// The commands `agent` was sent, each with its form fields, in order.
fn commands(agent: &FakeAgent) -> Vec<(String, Vec<(String, String)>)> {
    agent
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|(path, body)| {
            let fields = form_urlencoded::parse(body.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            (path.trim_start_matches('/').to_owned(), fields)
        })
        .collect()
}

fn field(fields: &[(String, String)], name: &str) -> String {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no field {name} in {fields:?}"))
}

#[tokio::test]
async fn an_editor_assigns_a_token_server_and_a_client_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = support::start(&dir).await;
    let router = d.router();
    let server_info = json!({"port": 18731, "connection": [], "embedded": true}).to_string();
    let server = FakeAgent::answering(&[
        ("getClusterMode", &mode(1, Some("server"), "")),
        ("setClusterMode", "success"),
        ("cluster/server/modifyNamespaceSet", "success"),
        ("cluster/server/modifyTransportConfig", "success"),
        ("cluster/server/info", &server_info),
        ("cluster/server/metricList", "[]"),
    ]);
    let client = FakeAgent::answering(&[
        ("getClusterMode", &mode(-1, Some("none"), "")),
        ("setClusterMode", "success"),
        ("cluster/client/modifyConfig", "success"),
    ]);
    // A Java client without the cluster modules: every step is an unknown command.
    let bare = FakeAgent::answering(&[("getClusterMode", &mode(-1, None, ""))]);
    let server_id = machine_at(&d, "orders", "127.0.0.1", server.clone().serve().await, "s")
        .await
        .id;
    let client_id = machine_at(&d, "orders", "127.0.0.1", client.clone().serve().await, "c")
        .await
        .id;
    let bare_id = machine_at(&d, "orders", "127.0.0.1", bare.clone().serve().await, "b")
        .await
        .id;
    let admin = Browser::login(&router, "admin", PASSWORD).await;

    // The page offers the serving machine as the server of the others, not of itself.
    let page = admin.get("/apps/orders/cluster").await.body;
    let own = machine_section(&page, server_id);
    assert!(!own.contains("make-server"), "already a server: {own}");
    assert!(
        own.contains("make another machine the token server first"),
        "{own}"
    );
    let other = machine_section(&page, client_id);
    assert!(other.contains(&format!(
        r#"action="/apps/orders/cluster/machines/{client_id}/server""#
    )));
    assert!(
        other.contains(&format!(r#"<option value="{server_id}">"#)),
        "{other}"
    );
    assert!(other.contains(r#"name="_csrf""#));

    // A form without the CSRF token changes nothing.
    let forged = admin
        .post_form(
            &format!("/apps/orders/cluster/machines/{client_id}/server"),
            &[],
            false,
        )
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    assert!(commands(&client).iter().all(|(c, _)| c == "getClusterMode"));

    let bad_port = admin
        .post(
            &format!("/apps/orders/cluster/machines/{server_id}/server"),
            &[("port", "70000")],
        )
        .await;
    assert_eq!(bad_port.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        bad_port.body.contains("must be 1 to 65535"),
        "{}",
        bad_port.body
    );
    let made = admin
        .post(
            &format!("/apps/orders/cluster/machines/{server_id}/server"),
            &[("port", "18731")],
        )
        .await;
    assert_eq!(made.status, StatusCode::SEE_OTHER, "{}", made.body);
    assert_eq!(
        made.location.as_deref(),
        Some(&*format!(
            "/apps/orders/cluster#cluster-machine-{server_id}"
        ))
    );
    let sent: Vec<_> = commands(&server)
        .into_iter()
        .filter(|(c, _)| c.starts_with("set") || c.contains("modify"))
        .collect();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(
        (sent[0].0.as_str(), field(&sent[0].1, "port")),
        ("cluster/server/modifyTransportConfig", "18731".to_owned())
    );
    assert_eq!(
        (sent[1].0.as_str(), field(&sent[1].1, "mode")),
        ("setClusterMode", "1".to_owned())
    );
    assert_eq!(sent[2].0, "cluster/server/modifyNamespaceSet");
    let namespaces: Value = serde_json::from_str(&field(&sent[2].1, "data")).unwrap();
    assert_eq!(namespaces, json!(["orders"]));

    let made = admin
        .post(
            &format!("/apps/orders/cluster/machines/{client_id}/client"),
            &[("server", &server_id.to_string())],
        )
        .await;
    assert_eq!(made.status, StatusCode::SEE_OTHER, "{}", made.body);
    let sent: Vec<_> = commands(&client)
        .into_iter()
        .filter(|(c, _)| c != "getClusterMode")
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0].0, "cluster/client/modifyConfig");
    let config: Value = serde_json::from_str(&field(&sent[0].1, "data")).unwrap();
    assert_eq!(
        config,
        json!({"serverHost": "127.0.0.1", "serverPort": 18731, "requestTimeout": 20})
    );
    assert_eq!(
        (sent[1].0.as_str(), field(&sent[1].1, "mode")),
        ("setClusterMode", "0".to_owned())
    );

    // Over the API: a server that is not one, a machine as its own server, and no server at all
    // are refused, naming the field; nothing is sent.
    let steps = |agent: &FakeAgent| {
        commands(agent)
            .iter()
            .filter(|(c, _)| c != "getClusterMode")
            .count()
    };
    let before = steps(&client);
    let path = format!("/api/apps/orders/cluster/machines/{client_id}/client");
    for (body, says) in [
        (json!({"server": bare_id}), "does not serve tokens"),
        (json!({"server": client_id}), "its own token server"),
        (json!({}), "the id of the token server"),
        (json!({"server": 999_999}), "no machine 999999"),
    ] {
        let (status, answer) = admin.api("POST", &path, Some(body.clone())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert_eq!(answer["field"], "server", "{answer}");
        assert!(answer.to_string().contains(says), "{body}: {answer}");
    }
    assert_eq!(steps(&client), before, "no step was sent");
    let (status, answer) = admin
        .api(
            "POST",
            &format!("/api/apps/orders/cluster/machines/{client_id}/client"),
            Some(json!({"server": server_id})),
        )
        .await;
    assert_eq!((status, answer["mode"].clone()), (StatusCode::OK, json!(0)));

    // A machine that cannot take the role says which step failed.
    let (status, answer) = admin
        .api(
            "POST",
            &format!("/api/apps/orders/cluster/machines/{bare_id}/server"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{answer}");
    assert!(
        answer.to_string().contains("setClusterMode on 127.0.0.1:"),
        "{answer}"
    );

    // A viewer sees no form and may not assign.
    let viewer = admin.new_viewer().await;
    assert!(
        !viewer
            .get("/apps/orders/cluster")
            .await
            .body
            .contains("make-client")
    );
    let refused = viewer
        .post(
            &format!("/apps/orders/cluster/machines/{server_id}/server"),
            &[],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
}
