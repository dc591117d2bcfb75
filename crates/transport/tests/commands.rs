//! Every command over a real socket, including requests replayed byte for byte as the Java dashboard
//! sends them.

mod support;

use std::time::Duration;

use floodgate_core::{Clock, EntryType, Floodgate, ManualClock, ManualProbe, RuleType};
use serde_json::Value;
use support::*;

#[test]
fn info_commands() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    assert_eq!(get(addr, "version"), (200, "1.8.9".to_owned()));
    let (status, api) = get(addr, "api");
    assert_eq!(status, 200);
    let api: Value = serde_json::from_str(&api).unwrap();
    assert!(
        api.as_array()
            .unwrap()
            .iter()
            .any(|c| c["url"] == "/setRules")
    );
    let (_, info) = get(addr, "basicInfo");
    let info: Value = serde_json::from_str(&info).unwrap();
    assert!(info["machine"].is_string());
    assert_eq!(info["ip"], "127.0.0.1");
    assert_eq!(
        get(addr, "getSwitch"),
        (200, "Sentinel switch value: true".to_owned())
    );
    let (_, mode) = get(addr, "getClusterMode");
    assert_eq!(serde_json::from_str::<Value>(&mode).unwrap()["mode"], -1);
    assert_eq!(
        get(addr, "nope"),
        (400, "Unknown command `nope`".to_owned())
    );
    assert_eq!(get(addr, ""), (400, "Invalid command".to_owned()));
}

#[test]
fn set_switch_needs_an_explicit_value() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    assert_eq!(get(addr, "setSwitch?value=maybe").0, 400);
    assert_eq!(get(addr, "setSwitch").0, 400);
    assert!(fg.is_enabled(), "a rejected call changes nothing");
    assert_eq!(
        get(addr, "setSwitch?value=false"),
        (200, "Sentinel set switch value: false".to_owned())
    );
    assert!(!fg.is_enabled());
    assert_eq!(get(addr, "setSwitch?value=true").0, 200);
    assert!(fg.is_enabled());
}

#[test]
fn rules_round_trip_as_the_java_dashboard_sends_them() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    // Byte for byte: Apache HttpAsyncClient, POST form, UTF-8, one encoding, 20.0 counts, unknown fields.
    let data = r#"[{"clusterMode":false,"controlBehavior":0,"count":20.0,"grade":1,"limitApp":"default","maxQueueingTimeMs":500,"regex":false,"resource":"GET:/api/hello","strategy":0,"warmUpPeriodSec":10,"gmtCreate":1700000000000}]"#;
    let body = form(&[("type", "flow"), ("data", data)]);
    let request = format!(
        "POST /setRules HTTP/1.1\r\nContent-Length: {}\r\nContent-Type: application/x-www-form-urlencoded; charset=UTF-8\r\nHost: {addr}\r\nConnection: Keep-Alive\r\nUser-Agent: Apache-HttpAsyncClient/4.1.4 (Java/1.8.0_372)\r\n\r\n{body}",
        body.len()
    );
    let (status, answer) = raw(addr, request.as_bytes());
    assert_eq!((status, answer.as_str()), (200, "success"));
    assert_eq!(fg.flow_rules().len(), 1);
    assert_eq!(fg.flow_rules()[0].count, 20.0);
    let (status, rules) = raw(
        addr,
        format!("GET /getRules?type=flow HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nUser-Agent: Apache-HttpAsyncClient/4.1.4 (Java/1.8.0_372)\r\n\r\n").as_bytes(),
    );
    assert_eq!(status, 200);
    let rules: Value = serde_json::from_str(&rules).unwrap();
    assert_eq!(rules[0]["resource"], "GET:/api/hello");
    assert_eq!(rules[0]["count"], 20.0);
    // The same through GET with a query string (old dashboards).
    let query = form(&[("type", "flow"), ("data", "[]")]);
    assert_eq!(
        get(addr, &format!("setRules?{query}")),
        (200, "success".to_owned())
    );
    assert!(fg.flow_rules().is_empty(), "an empty list clears the type");
}

#[test]
fn an_invalid_rule_list_answers_400_and_changes_nothing() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"kept","count":1}]"#)
        .unwrap();
    let (status, message) = post(
        addr,
        "setRules",
        &[
            ("type", "flow"),
            (
                "data",
                r#"[{"resource":"a","count":1},{"resource":"b","count":-3}]"#,
            ),
        ],
    );
    assert_eq!(status, 400);
    assert_eq!(
        message,
        "rule 1: `count` must be a finite number ≥ 0, got -3"
    );
    assert_eq!(fg.flow_rules()[0].resource, "kept");
    assert_eq!(
        post(addr, "setRules", &[("type", "flood"), ("data", "[]")]),
        (400, "invalid type".to_owned())
    );
    assert_eq!(
        get(addr, "getRules?type=nope"),
        (400, "invalid type".to_owned())
    );
    assert_eq!(
        post(addr, "setParamFlowRules", &[("data", "")]),
        (400, "Bad data".to_owned())
    );
}

#[test]
fn odd_resource_names_round_trip_decoded_exactly_once() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let long = "r".repeat(256);
    let names = [
        "a+b",
        "a%41",
        "x&y=z",
        "ü",
        "with space",
        "#hash",
        " padded ",
        long.as_str(),
    ];
    let rules: Vec<Value> = names
        .iter()
        .map(|n| serde_json::json!({"resource": n, "count": 0}))
        .collect();
    let data = Value::Array(rules).to_string();
    assert_eq!(
        post(addr, "setRules", &[("type", "flow"), ("data", &data)]).0,
        200
    );
    let (_, back) = get(addr, "getRules?type=flow");
    let back: Value = serde_json::from_str(&back).unwrap();
    let back: Vec<&str> = back
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["resource"].as_str().unwrap())
        .collect();
    assert_eq!(back, names);
    for n in names {
        assert!(
            fg.entry(n).enter().is_err(),
            "the rule on `{n}` applies to `{n}`"
        );
    }
    // Node lookups by odd ids too.
    let (_, node) = get(addr, &format!("clusterNodeById?{}", form(&[("id", "a+b")])));
    assert_eq!(
        serde_json::from_str::<Value>(&node).unwrap()["resource"],
        "a+b"
    );
    // Values are not trimmed: " padded " is not "padded".
    let (_, node) = get(
        addr,
        &format!("clusterNodeById?{}", form(&[("id", " padded ")])),
    );
    assert_eq!(
        serde_json::from_str::<Value>(&node).unwrap()["resource"],
        " padded "
    );
    // A name of spaces only too.
    drop(fg.entry("  ").enter().unwrap());
    let (_, node) = get(addr, "clusterNodeById?id=%20%20");
    assert_eq!(
        serde_json::from_str::<Value>(&node).unwrap()["resource"],
        "  "
    );
    assert_eq!(get(addr, "clusterNodeById?id=").0, 400);
    // Keywords and numbers still may be.
    assert_eq!(get(addr, "getRules?type=%20flow%20").0, 200);
}

#[test]
fn bodies_are_limited_and_must_be_forms() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).max_body_bytes(1024).start().unwrap();
    let addr = agent.local_addr();
    let big = "x".repeat(4096);
    assert_eq!(
        post(addr, "setRules", &[("type", "flow"), ("data", &big)]).0,
        413
    );
    let json = r#"{"type":"flow"}"#;
    let request = format!(
        "POST /setRules HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
        json.len()
    );
    assert_eq!(raw(addr, request.as_bytes()).0, 415);
    // Malformed requests never take the agent down.
    assert_eq!(raw(addr, b"GARBAGE\r\n\r\n").0, 400);
    assert_eq!(get(addr, "version").0, 200);
}

#[test]
fn node_commands() {
    let (clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    fg.context("web").origin("appA").run(|| {
        let outer = fg
            .entry("GET:/orders")
            .entry_type(EntryType::In)
            .enter()
            .unwrap();
        drop(fg.entry("db:select").enter().unwrap());
        clock.advance(Duration::from_millis(10));
        drop(outer);
    });
    let (_, nodes) = get(addr, "clusterNode");
    let nodes: Value = serde_json::from_str(&nodes).unwrap();
    let orders = nodes
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["resource"] == "GET:/orders")
        .unwrap();
    assert_eq!(orders["passQps"], 1);
    assert_eq!(orders["averageRt"], 10);
    assert_eq!(orders["oneMinuteTotal"], 1);
    let (_, not_zero) = get(addr, "clusterNode?type=notZero");
    assert_eq!(
        serde_json::from_str::<Value>(&not_zero)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        get(addr, "clusterNodeById?id=missing"),
        (200, "{}".to_owned())
    );
    assert_eq!(get(addr, "clusterNodeById").0, 400);
    let (_, cnode) = get(addr, "cnode?id=orders");
    assert!(
        cnode.contains("GET:/orders") && !cnode.contains("db:select"),
        "{cnode}"
    );
    let (_, origin) = get(addr, "origin?id=GET:/orders");
    assert!(
        origin.starts_with("id: GET:/orders") && origin.contains("appA"),
        "{origin}"
    );
    assert!(get(addr, "origin?id=zzz").1.starts_with("Not find cNode"));
    let (_, tree) = get(addr, "jsonTree?type=root");
    let tree: Value = serde_json::from_str(&tree).unwrap();
    let tree = tree.as_array().unwrap();
    assert_eq!(tree[0]["resource"], "machine-root");
    let db = tree.iter().find(|n| n["resource"] == "db:select").unwrap();
    let parent = tree.iter().find(|n| n["id"] == db["parentId"]).unwrap();
    assert_eq!(parent["resource"], "GET:/orders", "nesting kept");
    let (_, text) = get(addr, "tree?id=web");
    assert!(text.starts_with("EntranceNode: web("), "{text}");
    assert!(
        text.contains("\n-GET:/orders(") && text.contains("\n--db:select("),
        "{text}"
    );
    let (_, status) = get(addr, "systemStatus");
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["qps"], 1.0);
    assert_eq!(status["t"], 0);
    assert_eq!(status["load"], 1.5);
    assert_eq!(status["cpu"], 0.25);
}

#[test]
fn system_metric_lines_are_sentinels_truncated_and_only_above_zero() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock)
        .system_probe(ManualProbe::with(Some(0.0), Some(0.123_456_78)))
        .build();
    let agent = builder(&fg).start().unwrap();
    let (status, body) = get(agent.local_addr(), &format!("metric?startTime={T0}"));
    assert_eq!(status, 200);
    assert!(!body.contains("__system_load__"), "a 0 reading: {body}");
    assert!(body.contains("|__cpu_usage__|1234|"), "truncated: {body}");
}

#[test]
fn metric_lines_parse_back_to_the_stored_values() {
    let (clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":2}]"#)
        .unwrap();
    for second in 0..3u64 {
        clock.set(T0 + second * 1000 + 100);
        for _ in 0..5 {
            if let Ok(e) = fg.entry("R").enter() {
                clock.advance(Duration::from_millis(7));
                drop(e);
            }
        }
    }
    clock.set(T0 + 3500);
    agent.collect_metrics();
    let (status, body) = get(
        addr,
        &format!("metric?startTime={T0}&endTime={}&refetch=false", T0 + 2999),
    );
    assert_eq!(status, 200);
    let lines: Vec<Vec<&str>> = body
        .lines()
        .map(|l| l.split('|').collect())
        .filter(|f: &Vec<&str>| f[1] == "R")
        .collect();
    assert_eq!(lines.len(), 3);
    for (i, f) in lines.iter().enumerate() {
        assert_eq!(f.len(), 10, "thin line: {f:?}");
        assert_eq!(f[0].parse::<u64>().unwrap(), T0 + i as u64 * 1000);
        let numbers: Vec<u64> = f[2..].iter().map(|x| x.parse().unwrap()).collect();
        assert_eq!(
            &numbers[..5],
            &[2, 3, 2, 0, 7],
            "pass, block, success, exception, rt"
        );
    }
    let (_, one) = get(
        addr,
        &format!("metric?startTime={T0}&endTime={}&identity=R", T0 + 999),
    );
    assert_eq!(one.lines().count(), 1);
    let (_, capped) = get(addr, &format!("metric?startTime={T0}&maxLines=1"));
    let capped: Vec<&str> = capped.lines().collect();
    assert_eq!(
        capped.len(),
        3,
        "one line, then the system lines: {capped:?}"
    );
    assert!(
        capped[1].contains("|__system_load__|15000|"),
        "{}",
        capped[1]
    );
    assert!(capped[2].contains("|__cpu_usage__|2500|"), "{}", capped[2]);
    assert_eq!(
        get(addr, "metric"),
        (200, String::new()),
        "startTime is required"
    );
}

#[test]
fn a_token_guards_every_command() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).token("s3cret-token").start().unwrap();
    let addr = agent.local_addr();
    assert_eq!(get(addr, "version").0, 401);
    let (status, _) = post(
        addr,
        "setRules",
        &[
            ("type", "flow"),
            ("data", r#"[{"resource":"R","count":1}]"#),
        ],
    );
    assert_eq!(status, 401);
    assert!(
        fg.flow_rules().is_empty(),
        "a rejected call changes nothing"
    );
    assert_eq!(get(addr, "setSwitch?value=false").0, 401);
    assert!(fg.is_enabled());
    assert_eq!(get(addr, "version?token=wrong").0, 401);
    assert_eq!(get(addr, "version?token=s3cret-token").0, 200);
    let request = format!(
        "GET /version HTTP/1.1\r\nHost: {addr}\r\nX-Floodgate-Token: s3cret-token\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(raw(addr, request.as_bytes()).0, 200);
    let request = format!(
        "GET /version HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer s3cret-token\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(raw(addr, request.as_bytes()).0, 200);
}

#[test]
fn a_client_that_keeps_failing_the_token_is_refused_for_a_while() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).token("s3cret-token").start().unwrap();
    let addr = agent.local_addr();
    // Requests without a token are refused but guess nothing: not counted.
    for _ in 0..20 {
        assert_eq!(get(addr, "setSwitch?value=false").0, 401);
    }
    // Ten wrong tokens are answered 401 (in the query, in a header before a body is read, in a body).
    for i in 0..10 {
        let status = match i % 3 {
            0 => get(addr, "version?token=guess").0,
            1 => {
                let request = format!(
                    "POST /setSwitch HTTP/1.1\r\nHost: {addr}\r\nX-Floodgate-Token: guess\r\nContent-Length: 11\r\nConnection: close\r\n\r\nvalue=false"
                );
                raw(addr, request.as_bytes()).0
            }
            _ => post(addr, "setSwitch", &[("value", "false"), ("token", "guess")]).0,
        };
        assert_eq!(status, 401, "failure {}", i + 1);
    }
    // Then the client is refused, the right token too, and told for how long.
    let request = format!(
        "GET /version HTTP/1.1\r\nHost: {addr}\r\nX-Floodgate-Token: s3cret-token\r\nConnection: close\r\n\r\n"
    );
    let (status, head, body) = exchange(addr, request.as_bytes());
    assert_eq!(status, 429, "{body}");
    let retry_after: u64 = head
        .lines()
        .find_map(|l| l.strip_prefix("retry-after: "))
        .expect("a Retry-After header")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    assert!(body.contains("wrong tokens"), "{body}");
    // From a web page too: refused as a client first.
    let page = format!(
        "GET /version HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(raw(addr, page.as_bytes()).0, 429);
    // From another loopback address too: a local process may send from any of 127.0.0.0/8.
    let from_other_loopback = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
            let mut stream = socket.connect(addr).await.unwrap();
            let request = format!(
                "GET /version?token=s3cret-token HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.unwrap();
            answer
        });
    assert!(
        from_other_loopback.starts_with("HTTP/1.1 429"),
        "{from_other_loopback}"
    );
    assert!(fg.is_enabled(), "no failed request changed anything");
}

#[test]
fn a_body_cut_short_is_a_bad_request_not_a_body_too_large() {
    use std::io::{Read, Write};
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /setSwitch HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 100\r\nConnection: close\r\n\r\nvalue=false"
    )
    .unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    assert!(fg.is_enabled());
}

#[test]
fn a_client_refused_while_its_body_was_on_the_way_is_refused_after_it() {
    use std::io::{Read, Write};
    let (_clock, fg) = engine();
    let agent = builder(&fg).token("s3cret-token").start().unwrap();
    let addr = agent.local_addr();
    // A request's head, its body (with the right token) held back.
    let body = "value=false&token=s3cret-token";
    let mut held = std::net::TcpStream::connect(addr).unwrap();
    write!(
        held,
        "POST /setSwitch HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    // Ten wrong tokens meanwhile (the held request's handler has most likely checked its client
    // already and waits for the body; if not, it is refused at once: 429 either way).
    for _ in 0..10 {
        assert_eq!(get(addr, "version?token=guess").0, 401);
    }
    assert_eq!(get(addr, "version?token=s3cret-token").0, 429);
    held.write_all(body.as_bytes()).unwrap();
    let mut answer = String::new();
    held.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(fg.is_enabled(), "the held request changed nothing");
}

#[test]
fn without_a_token_failures_cannot_happen_and_nobody_is_refused() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    for _ in 0..20 {
        assert_eq!(get(addr, "version?token=anything").0, 200);
    }
}

#[test]
fn exposing_the_api_needs_a_token() {
    let (_clock, fg) = engine();
    let err = builder(&fg)
        .bind("0.0.0.0".parse().unwrap())
        .start()
        .unwrap_err();
    assert!(
        matches!(err, floodgate_transport::AgentError::InsecureBind(_)),
        "{err}"
    );
    assert!(err.to_string().contains("without a token"));
    let agent = builder(&fg)
        .bind("0.0.0.0".parse().unwrap())
        .token("long-enough-token")
        .start()
        .unwrap();
    assert_ne!(agent.port(), 0);
}

#[test]
fn port_search_reports_the_port_in_use() {
    let (_clock, fg) = engine();
    let first = builder(&fg).start().unwrap();
    let taken = first.port();
    assert!(
        builder(&fg).port(taken).start().is_err(),
        "busy without a search"
    );
    let second = builder(&fg).port(taken).port_search(true).start().unwrap();
    assert!(second.port() > taken);
    assert_eq!(get(second.local_addr(), "version").0, 200);
}

#[test]
fn circuit_breaker_states_are_visible() {
    let (clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let data = r#"[{"resource":"R","grade":2,"count":0,"timeWindow":10,"minRequestAmount":1}]"#;
    assert_eq!(
        post(addr, "setRules", &[("type", "degrade"), ("data", data)]).0,
        200
    );
    let (_, states) = get(addr, "circuitBreakers");
    let states: Value = serde_json::from_str(&states).unwrap();
    assert_eq!(states[0]["resource"], "R");
    assert_eq!(states[0]["state"], "CLOSED");
    let e = fg.entry("R").enter().unwrap();
    e.trace(&std::fmt::Error);
    drop(e);
    let (_, states) = get(addr, "circuitBreakers");
    let states: Value = serde_json::from_str(&states).unwrap();
    assert_eq!(states[0]["state"], "OPEN");
    assert_eq!(states[0]["retryAt"], clock.now_ms() + 10_000);
    assert_eq!(states[0]["rule"]["grade"], 2);
}

#[test]
fn every_rule_type_round_trips_through_the_api() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let payloads = [
        (
            "degrade",
            r#"[{"count":200.0,"grade":0,"limitApp":"default","minRequestAmount":5,"regex":false,"resource":"GET:/api/hello","slowRatioThreshold":0.5,"statIntervalMs":1000,"timeWindow":10}]"#,
        ),
        (
            "system",
            r#"[{"avgRt":-1,"highestCpuUsage":-1.0,"highestSystemLoad":-1.0,"maxThread":-1,"qps":500.0,"regex":false}]"#,
        ),
        (
            "authority",
            r#"[{"limitApp":"appA,appB","regex":false,"resource":"res","strategy":1}]"#,
        ),
    ];
    for (t, data) in payloads {
        assert_eq!(
            post(addr, "setRules", &[("type", t), ("data", data)]),
            (200, "success".to_owned()),
            "{t}"
        );
        let (status, back) = get(addr, &format!("getRules?type={t}"));
        assert_eq!(status, 200);
        let back: Value = serde_json::from_str(&back).unwrap();
        assert_eq!(back.as_array().unwrap().len(), 1, "{t}: {back}");
    }
    assert!(
        fg.entry("res").origin("appA").enter().is_err(),
        "the authority rule applies"
    );
}

#[test]
fn param_flow_rules_round_trip_as_the_java_dashboard_sends_them() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let data = r#"[{"burstCount":0,"clusterMode":false,"controlBehavior":0,"count":5.0,"durationInSec":1,"grade":1,"limitApp":"default","maxQueueingTimeMs":0,"paramFlowItemList":[{"classType":"int","count":50,"object":"42"}],"paramIdx":0,"resource":"res"}]"#;
    assert_eq!(
        post(addr, "setParamFlowRules", &[("data", data)]),
        (200, "success".to_owned())
    );
    let (status, back) = get(addr, "getParamFlowRules");
    assert_eq!(status, 200);
    let back: Value = serde_json::from_str(&back).unwrap();
    assert_eq!(back[0]["resource"], "res");
    assert_eq!(back[0]["paramFlowItemList"][0]["object"], "42");
    let passed = (0..10)
        .filter(|_| fg.entry("res").args(["k"]).enter().is_ok())
        .count();
    assert_eq!(passed, 5, "5 per value");
    let bad = r#"[{"resource":"res","count":1}]"#;
    let (status, message) = post(addr, "setParamFlowRules", &[("data", bad)]);
    assert_eq!(status, 400);
    assert!(message.contains("paramIdx"), "{message}");
    assert_eq!(fg.param_flow_rules().len(), 1, "kept");
}

#[test]
fn blank_short_or_padded_tokens_and_a_zero_heartbeat_interval_are_refused() {
    let (_clock, fg) = engine();
    for token in ["", "        ", "short", " padded-token "] {
        let err = builder(&fg)
            .bind("0.0.0.0".parse().unwrap())
            .token(token)
            .start()
            .unwrap_err();
        assert!(
            matches!(
                err,
                floodgate_transport::AgentError::Invalid { field: "token", .. }
            ),
            "{token:?}: {err}"
        );
    }
    let err = builder(&fg)
        .heartbeat_interval(Duration::ZERO)
        .start()
        .unwrap_err();
    assert!(err.to_string().contains("heartbeat_interval"), "{err}");
    let err = builder(&fg)
        .heartbeat_ip("my-host.example")
        .start()
        .unwrap_err();
    assert!(err.to_string().contains("heartbeat_ip"), "{err}");
}

#[test]
fn too_many_parameters_are_refused() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let many = vec!["a=1"; 65].join("&");
    assert_eq!(get(agent.local_addr(), &format!("version?{many}")).0, 400);
    let (status, _) = post(agent.local_addr(), "setRules", &[("x", "1"); 65]);
    assert_eq!(status, 400);
    assert_eq!(get(agent.local_addr(), "version?a=1").0, 200);
}

/// A wrong token in a header is refused before the body is read.
#[test]
fn a_wrong_header_token_is_refused_before_the_body() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).token("s3cret-token").start().unwrap();
    let addr = agent.local_addr();
    // Announces a body it never sends: the answer comes all the same.
    let request = format!(
        "POST /setRules HTTP/1.1\r\nHost: {addr}\r\nX-Floodgate-Token: wrong-token\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\ntype=flow"
    );
    assert_eq!(raw(addr, request.as_bytes()).0, 401);
}

/// Half-sent requests and idle connections neither hold a stop (each connection is closed after a
/// short grace) nor keep a request that comes whole from being answered.
#[test]
fn half_sent_requests_do_not_hold_the_agent() {
    use std::io::Write;
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let mut held = Vec::new();
    for _ in 0..70 {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n")
            .unwrap();
        held.push(stream);
    }
    // Past the places for connections that sent no whole request, the oldest gives way.
    let (status, body) = raw(
        addr,
        b"GET /version HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((status, body.as_str()), (200, "1.8.9"));
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        agent.shutdown();
        let _ = done.send(());
    });
    assert!(
        finished.recv_timeout(Duration::from_secs(60)).is_ok(),
        "the stop did not wait for the half-sent requests"
    );
    drop(held);
}

#[test]
fn https_dashboards_are_refused() {
    let (_clock, fg) = engine();
    let err = builder(&fg)
        .dashboard("https://dash.example:8080")
        .start()
        .unwrap_err();
    assert!(err.to_string().contains("https://"), "{err}");
}

/// A web page cannot drive the agent through the developer's browser: requests with an `Origin`, from
/// another site (`Sec-Fetch-Site`), or addressed by a name that could have been rebound to this machine
/// are refused, and change nothing (binding to loopback alone does not stop a browser on the same
/// machine).
#[test]
fn requests_from_web_pages_are_refused() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let port = addr.port();
    for headers in [
        format!("Host: {addr}\r\nOrigin: https://evil.example\r\n"),
        format!("Host: {addr}\r\nSec-Fetch-Site: cross-site\r\n"),
        format!("Host: {addr}\r\nSec-Fetch-Site: same-site\r\n"),
        format!("Host: evil.example:{port}\r\n"),
        format!("Host: localhost.evil.example:{port}\r\n"),
    ] {
        let (status, body) = raw(
            addr,
            format!("GET /setSwitch?value=false HTTP/1.1\r\n{headers}Connection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(status, 403, "{headers}: {body}");
        assert!(fg.is_enabled(), "{headers}: nothing changed");
    }
    for host in [
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "127.0.0.1".to_owned(),
    ] {
        let (status, _) = raw(
            addr,
            format!("GET /version HTTP/1.1\r\nHost: {host}\r\nSec-Fetch-Site: none\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(status, 200, "{host}");
    }
    drop(agent);
    let agent = builder(&fg)
        .config(floodgate_transport::AgentConfig {
            allowed_hosts: vec!["orders.internal".to_owned()],
            port: 0,
            ..Default::default()
        })
        .start()
        .unwrap();
    let (status, _) = raw(
        agent.local_addr(),
        b"GET /version HTTP/1.1\r\nHost: ORDERS.internal:8719\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200, "a configured name");
    let agent = builder(&fg).token("s3cret-token").start().unwrap();
    let (status, _) = raw(
        agent.local_addr(),
        b"GET /version HTTP/1.1\r\nHost: app.internal:8719\r\nX-Floodgate-Token: s3cret-token\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200, "with a token, any name");
    let (status, _) = raw(
        agent.local_addr(),
        b"GET /version HTTP/1.1\r\nHost: app.internal:8719\r\nOrigin: https://evil.example\r\nX-Floodgate-Token: s3cret-token\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 403, "a web page's request, token or not");
}

/// `setRules` with an empty `data` is refused (blank text would clear the type by accident) and changes
/// nothing; without `data` it clears, as Sentinel's does.
#[test]
fn set_rules_with_empty_data_is_refused() {
    let (_clock, fg) = engine();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":2}]"#)
        .unwrap();
    let agent = builder(&fg).start().unwrap();
    let (status, body) = post(
        agent.local_addr(),
        "setRules",
        &[("type", "flow"), ("data", "")],
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(fg.flow_rules().len(), 1, "kept");
    let (status, _) = post(agent.local_addr(), "setRules", &[("type", "flow")]);
    assert_eq!(status, 200);
    assert!(fg.flow_rules().is_empty(), "no data: cleared");
}

/// form_urlencoded's parse turned percent-decoded bytes that are not UTF-8 into U+FFFD: a rule's
/// resource silently became another name. Refused, naming the parameter, and nothing changes.
#[test]
fn rule_data_that_is_not_utf8_is_refused_by_name() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let body = "type=flow&data=%5B%7B%22resource%22%3A%22a%FFb%22%2C%22count%22%3A1%7D%5D";
    let request = format!(
        "POST /setRules HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(
        raw(addr, request.as_bytes()),
        (
            400,
            "parameter `data` is not UTF-8 text once percent-decoded".to_owned()
        )
    );
    assert_eq!(
        get(addr, "clusterNodeById?id=%C3%28"),
        (
            400,
            "parameter `id` is not UTF-8 text once percent-decoded".to_owned()
        )
    );
    assert!(fg.flow_rules().is_empty());
}

/// The form content type was a prefix match (`…urlencodedXYZ` was a form) and any charset passed.
#[test]
fn the_form_media_type_is_matched_exactly_and_its_charset_must_be_utf8() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let body = "value=false";
    let post = |content_type: &str| {
        raw(
            addr,
            format!(
                "POST /setSwitch HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
    };
    for refused in [
        "application/x-www-form-urlencodedXYZ",
        "application/x-www-form-urlencoded-evil; charset=UTF-8",
        "application/x-www-form-urlencoded; charset=ISO-8859-1",
        "application/x-www-form-urlencoded; charset=\"utf-16\"",
        "text/plain",
    ] {
        let (status, message) = post(refused);
        assert_eq!(status, 415, "{refused}: {message}");
        assert!(fg.is_enabled(), "{refused}: nothing changed");
    }
    assert!(
        post("application/x-www-form-urlencoded; charset=ISO-8859-1")
            .1
            .contains("ISO-8859-1")
    );
    for accepted in [
        "application/x-www-form-urlencoded",
        "APPLICATION/X-WWW-FORM-URLENCODED;charset=utf-8",
        "application/x-www-form-urlencoded; charset=\"UTF-8\"",
        " application/x-www-form-urlencoded ; foo=bar",
    ] {
        assert_eq!(post(accepted).0, 200, "{accepted}");
        fg.set_enabled(true);
    }
}

/// Two `Host` headers were accepted (which one names the agent depends on who reads them).
#[test]
fn two_host_headers_are_refused() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let (status, body) = raw(
        addr,
        format!("GET /setSwitch?value=false HTTP/1.1\r\nHost: {addr}\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!((status, body.as_str()), (400, "more than one Host header"));
    assert!(fg.is_enabled());
}

/// `Sec-Fetch-Site` was compared case-sensitively: `Cross-Site` got through.
#[test]
fn sec_fetch_site_is_compared_in_any_case() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    for site in ["Cross-Site", "SAME-SITE", " cross-site "] {
        let (status, _) = raw(
            addr,
            format!("GET /setSwitch?value=false HTTP/1.1\r\nHost: {addr}\r\nSec-Fetch-Site: {site}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(status, 403, "{site}");
    }
    assert!(fg.is_enabled());
}

/// The bind error named the last port a search tried, not the one asked for.
#[test]
fn a_bind_error_names_the_port_asked_for_and_the_ports_searched() {
    let (_clock, fg) = engine();
    let err = {
        let first = builder(&fg).start().unwrap();
        let err = builder(&fg).port(first.port()).start().unwrap_err();
        assert!(
            err.to_string().starts_with(&format!(
                "cannot bind the command API on {}: ",
                first.local_addr()
            )),
            "{err}"
        );
        err
    };
    assert!(matches!(err, floodgate_transport::AgentError::Bind { .. }));
    // 32 consecutive ports taken (found by trying bases until all 32 bind).
    let (base, _held) = (0..100)
        .find_map(|_| {
            let first = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
            let base = first.local_addr().ok()?.port();
            let mut held = vec![first];
            for port in base.checked_add(1)?..=base.checked_add(31)? {
                held.push(std::net::TcpListener::bind(("127.0.0.1", port)).ok()?);
            }
            Some((base, held))
        })
        .expect("32 consecutive free ports");
    let err = builder(&fg)
        .port(base)
        .port_search(true)
        .start()
        .unwrap_err();
    assert_eq!(
        err.to_string().split(" (port search)").next().unwrap(),
        format!(
            "cannot bind the command API on 127.0.0.1:{base}, nor on ports {} to {}",
            base + 1,
            base + 31
        )
    );
}

/// A body whose Content-Length is over the limit is refused before it is read (it was waited for,
/// 10 s, then answered 408).
#[test]
fn a_body_announced_over_the_limit_is_refused_at_once() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    // Nothing of the body is sent: the answer cannot wait for it.
    let request = format!(
        "POST /setRules HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 999999999999\r\n\r\n"
    );
    let (status, body) = raw(addr, request.as_bytes());
    assert_eq!(
        (status, body.as_str()),
        (413, "request body over 1048576 bytes")
    );
}

/// With a token configured, a body without a token header could only carry the token itself: a
/// stranger made the agent read up to 1 MiB before answering 401. Over 4 KiB it is refused at once;
/// up to 4 KiB it is read for the token.
#[test]
fn a_large_body_needs_the_token_in_a_header() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).token("s3cret-token").start().unwrap();
    let addr = agent.local_addr();
    let announce = |length: usize, token_header: &str| {
        format!(
            "POST /setSwitch HTTP/1.1\r\nHost: {addr}\r\n{token_header}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {length}\r\n\r\n"
        )
    };
    // Announced, never sent: answered all the same.
    let (status, body) = raw(addr, announce(4097, "").as_bytes());
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("in a header"), "{body}");
    // A chunked body without a length is read up to 4 KiB only.
    let chunk = "a".repeat(5000);
    let request = format!(
        "POST /setSwitch HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
        chunk.len()
    );
    assert_eq!(raw(addr, request.as_bytes()).0, 401);
    // Up to 4 KiB, the token may be in the body.
    let small = format!("value=false&token=s3cret-token&pad={}", "x".repeat(3000));
    let request = format!("{}{small}", announce(small.len(), ""));
    assert_eq!(raw(addr, request.as_bytes()).0, 200);
    assert!(!fg.is_enabled());
    // With the token in a header, up to the limit.
    let big = format!("value=true&pad={}", "x".repeat(100_000));
    let request = format!(
        "{}{big}",
        announce(big.len(), "X-Floodgate-Token: s3cret-token\r\n")
    );
    assert_eq!(raw(addr, request.as_bytes()).0, 200);
    assert!(fg.is_enabled());
}

/// Sentinel's Java dashboard cannot send a token: peers in `tokenless_from` call without one,
/// everyone else still needs it.
#[test]
fn peers_in_tokenless_from_call_without_the_token() {
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .token("s3cret-token")
        .tokenless_from("127.0.0.1/32".parse().unwrap())
        .start()
        .unwrap();
    let addr = agent.local_addr();
    // As the Java dashboard sends them, without a token.
    let data = r#"[{"resource":"GET:/api/hello","count":20.0,"grade":1}]"#;
    let body = form(&[("type", "flow"), ("data", data)]);
    let request = format!(
        "POST /setRules HTTP/1.1\r\nContent-Length: {}\r\nContent-Type: application/x-www-form-urlencoded; charset=UTF-8\r\nHost: {addr}\r\nConnection: Keep-Alive\r\nUser-Agent: Apache-HttpAsyncClient/4.1.4 (Java/1.8.0_372)\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(raw(addr, request.as_bytes()), (200, "success".to_owned()));
    assert_eq!(get(addr, "getRules?type=flow").0, 200);
    // A large body too: the peer needs no token, so none has to come first.
    let big = format!("value=false&pad={}", "x".repeat(10_000));
    assert_eq!(
        post(addr, "setSwitch", &[("value", "true"), ("pad", &big)]).0,
        200
    );
    // A wrong token is still a wrong token.
    assert_eq!(get(addr, "version?token=wrong").0, 401);
    // Still not from a web page, nor under a name that could have been rebound to this machine.
    for headers in [
        format!("Host: {addr}\r\nOrigin: https://evil.example\r\n"),
        format!("Host: evil.example:{}\r\n", addr.port()),
    ] {
        let (status, _) = raw(
            addr,
            format!("GET /setSwitch?value=false HTTP/1.1\r\n{headers}Connection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(status, 403, "{headers}");
    }
    assert!(fg.is_enabled());

    // Outside the list, the token is needed.
    let agent = builder(&fg)
        .token("s3cret-token")
        .tokenless_from("10.0.0.0/8".parse().unwrap())
        .tokenless_from("::1".parse().unwrap())
        .start()
        .unwrap();
    let addr = agent.local_addr();
    assert_eq!(get(addr, "getRules?type=flow").0, 401);
    assert_eq!(post(addr, "setSwitch", &[("value", "false")]).0, 401);
    assert!(fg.is_enabled());
    assert_eq!(get(addr, "version?token=s3cret-token").0, 200);
}

#[test]
fn tokenless_from_needs_a_token() {
    let (_clock, fg) = engine();
    let err = builder(&fg)
        .tokenless_from("127.0.0.1".parse().unwrap())
        .start()
        .unwrap_err();
    assert!(
        matches!(
            err,
            floodgate_transport::AgentError::Invalid {
                field: "tokenless_from",
                ..
            }
        ),
        "{err}"
    );
}

/// Fields a rule kind does not have are ignored and named after `success`, at most 20 of them; a
/// list as Sentinel's dashboard builds it answers the exact `success` that dashboard requires; a rule
/// whose threshold is missing or misspelt is refused, not loaded as a limit of 0.
#[test]
fn set_rules_names_the_fields_it_ignored_and_refuses_a_missing_count() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let (status, answer) = post(
        addr,
        "setRules",
        &[
            ("type", "flow"),
            ("data", r#"[{"resource":"a","count":5,"strategyy":1}]"#),
        ],
    );
    assert_eq!(
        (status, answer.as_str()),
        (
            200,
            "success\nwarning: rule 0: unknown field `strategyy` (ignored)"
        )
    );
    assert_eq!(fg.flow_rules()[0].count, 5.0);

    let java = r#"[{"clusterMode":false,"controlBehavior":0,"count":20.0,"grade":1,"limitApp":"default","maxQueueingTimeMs":500,"regex":false,"resource":"GET:/api/hello","strategy":0,"warmUpPeriodSec":10}]"#;
    assert_eq!(
        post(addr, "setRules", &[("type", "flow"), ("data", java)]),
        (200, "success".to_owned())
    );

    let many: Vec<String> = (0..25)
        .map(|i| format!(r#"{{"resource":"r{i}","count":1,"extra{i}":true}}"#))
        .collect();
    let (status, answer) = post(
        addr,
        "setRules",
        &[("type", "flow"), ("data", &format!("[{}]", many.join(",")))],
    );
    assert_eq!(status, 200);
    let lines: Vec<&str> = answer.lines().collect();
    assert_eq!(lines.len(), 22, "{answer}");
    assert_eq!(lines[0], "success");
    assert_eq!(
        lines[20],
        "warning: rule 19: unknown field `extra19` (ignored)"
    );
    assert_eq!(lines[21], "warning: and 5 more");

    for data in [
        r#"[{"resource":"x","Count":20}]"#,
        r#"[{"resource":"x","count":null}]"#,
    ] {
        let (status, answer) = post(addr, "setRules", &[("type", "flow"), ("data", data)]);
        assert_eq!(status, 400, "{data}: {answer}");
        assert!(answer.starts_with("rule 0: `count`"), "{data}: {answer}");
    }
    let (status, answer) = post(
        addr,
        "setRules",
        &[
            ("type", "degrade"),
            ("data", r#"[{"resource":"x","grade":2}]"#),
        ],
    );
    assert_eq!(status, 400, "{answer}");
    assert!(answer.starts_with("rule 0: `count`"), "{answer}");
    assert_eq!(
        fg.flow_rules().len(),
        25,
        "the refused lists changed nothing"
    );
}

/// A mebibyte of the patterns that once took the agent's memory and thread (`\w{200}|x…` compiles
/// to megabytes) is refused as a whole, for holding more regex rules than a list may, without
/// compiling one; the rules in force stay and the agent answers the next call.
#[test]
fn a_mebibyte_of_hostile_regex_rules_is_refused_and_the_agent_answers_on() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).max_body_bytes(8 << 20).start().unwrap();
    let addr = agent.local_addr();
    let kept = r#"[{"resource":"kept","count":5}]"#;
    assert_eq!(
        post(addr, "setRules", &[("type", "flow"), ("data", kept)]),
        (200, "success".to_owned())
    );
    let mut rules = Vec::new();
    let mut len = 0;
    while len < 1 << 20 {
        let rule = format!(
            r#"{{"resource":"\\w{{200}}|x{}","regex":true,"count":1}}"#,
            rules.len()
        );
        len += rule.len() + 1;
        rules.push(rule);
    }
    let list = format!("[{}]", rules.join(","));
    let (status, answer) = post(addr, "setRules", &[("type", "flow"), ("data", &list)]);
    assert_eq!(status, 400, "{answer}");
    assert!(answer.starts_with("rule 100: `regex`"), "{answer}");
    let (status, in_force) = get(addr, "getRules?type=flow");
    assert_eq!(status, 200);
    let in_force: Value = serde_json::from_str(&in_force).unwrap();
    assert_eq!(in_force.as_array().unwrap().len(), 1);
    assert_eq!(in_force[0]["resource"], "kept");
}

#[tokio::test(flavor = "current_thread")]
async fn a_start_that_fails_in_an_async_context_returns_its_error() {
    let (_clock, fg) = engine();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    // The agent's runtime exists when the bind fails; it goes without waiting (and so without
    // panicking in this async context).
    let err = builder(&fg).port(port).start().unwrap_err();
    assert!(
        matches!(err, floodgate_transport::AgentError::Bind { .. }),
        "{err}"
    );
}
