//! Every command through `Agent::router()` with `tower::ServiceExt::oneshot`, without a socket: a good
//! and a bad request each, their status and body. (`commands.rs` drives the same commands over the
//! port, with the Java dashboard's exact bytes.)

mod support;

use std::time::Duration;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Method, Request, StatusCode, header};
use floodgate_core::{EntryType, RuleType};
use serde_json::Value;
use support::*;
use tower::ServiceExt;

/// Sends one request to a clone of `router` and returns its status, content type and body.
async fn send(router: &Router, request: Request<Body>) -> (StatusCode, String, String) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (
        status,
        content_type,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

/// `GET /{path_and_query}`: (status, body).
async fn get(router: &Router, path_and_query: &str) -> (StatusCode, String) {
    let request = Request::get(format!("/{path_and_query}"))
        .header(header::HOST, "127.0.0.1")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = send(router, request).await;
    (status, body)
}

/// `POST /{command}` with `pairs` as a form: (status, body).
async fn post(router: &Router, command: &str, pairs: &[(&str, &str)]) -> (StatusCode, String) {
    let request = Request::post(format!("/{command}"))
        .header(header::HOST, "127.0.0.1")
        .header(
            header::CONTENT_TYPE,
            "application/x-www-form-urlencoded; charset=UTF-8",
        )
        .body(Body::from(form(pairs)))
        .unwrap();
    let (status, _, body) = send(router, request).await;
    (status, body)
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

const OK: StatusCode = StatusCode::OK;
const BAD: StatusCode = StatusCode::BAD_REQUEST;

#[tokio::test]
async fn version_api_and_basic_info() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let router = agent.router();

    assert_eq!(get(&router, "version").await, (OK, "1.8.9".to_owned()));
    let put = Request::builder()
        .method(Method::PUT)
        .uri("/version")
        .header(header::HOST, "127.0.0.1")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = send(&router, put).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, "use GET or POST")
    );

    let (status, api) = get(&router, "api").await;
    assert_eq!(status, OK);
    let api = json(&api);
    let urls: Vec<&str> = api
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["url"].as_str().unwrap())
        .collect();
    assert!(
        urls.contains(&"/setRules") && urls.contains(&"/metric"),
        "{urls:?}"
    );
    let not_a_form = Request::post("/api")
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from("x"))
        .unwrap();
    let (status, _, body) = send(&router, not_a_form).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "only application/x-www-form-urlencoded bodies are accepted"
        )
    );

    let (status, info) = get(&router, "basicInfo").await;
    assert_eq!(status, OK);
    let info = json(&info);
    assert_eq!(info["ip"], "127.0.0.1");
    assert!(info["machine"].is_string(), "{info}");
    let from_a_page = Request::get("/basicInfo")
        .header(header::HOST, "127.0.0.1")
        .header(header::ORIGIN, "http://evil.example")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = send(&router, from_a_page).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::FORBIDDEN,
            "requests from web pages (with an Origin header) are refused"
        )
    );
}

/// A good and a bad `setRules` for each rule type, each read back with `getRules`.
#[tokio::test]
async fn get_and_set_rules_for_each_type() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let router = agent.router();
    let cases = [
        (
            "flow",
            r#"[{"resource":"F","count":20.0,"grade":1}]"#,
            r#"[{"resource":"F","count":-3}]"#,
            "rule 0: `count` must be a finite number ≥ 0, got -3",
        ),
        (
            "degrade",
            r#"[{"resource":"D","grade":0,"count":200.0,"timeWindow":10,"minRequestAmount":5}]"#,
            r#"[{"resource":"D","grade":7,"count":1,"timeWindow":10}]"#,
            "rule 0: `grade` must be 0 (slow request ratio), 1 (error ratio) or 2 (error count), got 7",
        ),
        (
            "system",
            r#"[{"qps":500.0}]"#,
            r#"[{"qps":-2}]"#,
            "rule 0: `qps` must be a finite number ≥ 0, or -1 for unset, got -2",
        ),
        (
            "authority",
            r#"[{"resource":"A","limitApp":"appA,appB","strategy":1}]"#,
            r#"[{"resource":"A","limitApp":"appA","strategy":5}]"#,
            "rule 0: `strategy` must be 0 (white list) or 1 (black list), got 5",
        ),
        (
            "paramFlow",
            r#"[{"resource":"P","paramIdx":0,"count":5.0}]"#,
            r#"[{"resource":"P","count":5.0}]"#,
            "rule 0: `paramIdx` is required",
        ),
    ];
    for (t, good, bad, refusal) in cases {
        assert_eq!(
            post(&router, "setRules", &[("type", t), ("data", good)]).await,
            (OK, "success".to_owned()),
            "{t}"
        );
        let (status, back) = get(&router, &format!("getRules?type={t}")).await;
        assert_eq!(status, OK, "{t}");
        let back = json(&back);
        assert_eq!(back.as_array().unwrap().len(), 1, "{t}: {back}");
        let (status, message) = post(&router, "setRules", &[("type", t), ("data", bad)]).await;
        assert_eq!((status, message.as_str()), (BAD, refusal), "{t}");
        assert_eq!(
            get(&router, &format!("getRules?type={t}")).await,
            (OK, back.to_string()),
            "{t}: a refused list changes nothing"
        );
    }
    assert_eq!(fg.flow_rules()[0].count, 20.0);
    assert!(
        fg.entry("A").origin("appA").enter().is_err(),
        "the authority rule applies"
    );
    assert_eq!(
        get(&router, "getRules?type=nope").await,
        (BAD, "invalid type".to_owned())
    );
    assert_eq!(
        post(&router, "setRules", &[("type", "flood"), ("data", "[]")]).await,
        (BAD, "invalid type".to_owned())
    );
}

#[tokio::test]
async fn get_and_set_param_flow_rules() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let router = agent.router();
    let data = r#"[{"resource":"res","grade":1,"paramIdx":0,"count":5.0,"durationInSec":1,"paramFlowItemList":[{"classType":"int","count":50,"object":"42"}]}]"#;
    assert_eq!(
        post(&router, "setParamFlowRules", &[("data", data)]).await,
        (OK, "success".to_owned())
    );
    let (status, back) = get(&router, "getParamFlowRules").await;
    assert_eq!(status, OK);
    let back = json(&back);
    assert_eq!(back[0]["resource"], "res");
    assert_eq!(back[0]["paramFlowItemList"][0]["object"], "42");
    assert_eq!(
        post(&router, "setParamFlowRules", &[("data", "")]).await,
        (BAD, "Bad data".to_owned())
    );
    let (status, message) = post(
        &router,
        "setParamFlowRules",
        &[("data", r#"[{"resource":"res","count":1}]"#)],
    )
    .await;
    assert_eq!(status, BAD);
    assert!(message.contains("paramIdx"), "{message}");
    assert_eq!(fg.param_flow_rules().len(), 1, "kept");
    let many = vec!["a=1"; 65].join("&");
    let (status, message) = get(&router, &format!("getParamFlowRules?{many}")).await;
    assert_eq!(
        (status, message.as_str()),
        (BAD, "at most 64 parameters are accepted")
    );
}

/// The node commands on one call tree: `web` → `GET:/orders` (origin `appA`) → `db:select`.
#[tokio::test]
async fn node_commands() {
    let (clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let router = agent.router();
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

    let (status, nodes) = get(&router, "clusterNode").await;
    assert_eq!(status, OK);
    let nodes = json(&nodes);
    let orders = nodes
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["resource"] == "GET:/orders")
        .unwrap();
    assert_eq!(orders["passQps"], 1);
    assert_eq!(orders["averageRt"], 10);
    assert_eq!(
        get(&router, "clusterNode?type=%FF").await,
        (
            BAD,
            "parameter `type` is not UTF-8 text once percent-decoded".to_owned()
        )
    );

    let (status, node) = get(&router, "clusterNodeById?id=GET:/orders").await;
    assert_eq!(status, OK);
    assert_eq!(json(&node)["resource"], "GET:/orders");
    assert_eq!(
        get(&router, "clusterNodeById").await,
        (BAD, "Invalid parameter: empty clusterNode name".to_owned())
    );
    assert_eq!(
        get(&router, "clusterNodeById?id=missing").await,
        (OK, "{}".to_owned())
    );

    let (status, cnode) = get(&router, "cnode?id=orders").await;
    assert_eq!(status, OK);
    assert!(
        cnode.contains("GET:/orders") && !cnode.contains("db:select"),
        "{cnode}"
    );
    let (status, none) = get(&router, "cnode?id=missing").await;
    assert_eq!(status, OK);
    assert_eq!(none.lines().count(), 1, "the header only: {none}");

    let (status, origin) = get(&router, "origin?id=GET:/orders").await;
    assert_eq!(status, OK);
    assert!(
        origin.starts_with("id: GET:/orders") && origin.contains("appA"),
        "{origin}"
    );
    let (status, missing) = get(&router, "origin?id=zzz").await;
    assert_eq!(status, OK);
    assert!(missing.starts_with("Not find cNode"), "{missing}");

    let (status, tree) = get(&router, "jsonTree").await;
    assert_eq!(status, OK);
    let tree = json(&tree);
    let tree = tree.as_array().unwrap();
    assert_eq!(tree[0]["resource"], "machine-root");
    let db = tree.iter().find(|n| n["resource"] == "db:select").unwrap();
    let parent = tree.iter().find(|n| n["id"] == db["parentId"]).unwrap();
    assert_eq!(parent["resource"], "GET:/orders", "nesting kept");
    let delete = Request::delete("/jsonTree")
        .header(header::HOST, "127.0.0.1")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = send(&router, delete).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, "use GET or POST")
    );

    let (status, text) = get(&router, "tree?id=web").await;
    assert_eq!(status, OK);
    assert!(text.starts_with("EntranceNode: web("), "{text}");
    assert!(
        text.contains("\n-GET:/orders(") && text.contains("\n--db:select("),
        "{text}"
    );
    // No entrance of that name: the legend alone.
    assert_eq!(
        get(&router, "tree?id=nowhere").await,
        (
            OK,
            "\nt:threadNum  pq:passQps  bq:blockQps  tq:totalQps  rt:averageRt  prq: passRequestQps \
             1mp:1m-pass 1mb:1m-block 1mt:1m-total\n"
                .to_owned()
        )
    );
}

#[tokio::test]
async fn metric_system_status_and_prometheus() {
    let (clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let router = agent.router();
    drop(fg.entry("R").enter().unwrap());
    clock.advance(Duration::from_secs(2));
    agent.collect_metrics();

    let (status, lines) = get(&router, &format!("metric?startTime={T0}&identity=R")).await;
    assert_eq!(status, OK);
    assert_eq!(lines.lines().count(), 1, "{lines}");
    assert!(lines.starts_with(&format!("{T0}|R|1|0|")), "{lines}");
    assert_eq!(
        get(&router, "metric?startTime=yesterday").await,
        (OK, String::new()),
        "no start: no lines, as Sentinel"
    );

    let (status, system) = get(&router, "systemStatus").await;
    assert_eq!(status, OK);
    let system = json(&system);
    assert_eq!(system["load"], 1.5);
    assert_eq!(system["cpu"], 0.25);
    let (status, body) = get(&router, "systemStatus?x=%FF").await;
    assert_eq!(
        (status, body.as_str()),
        (BAD, "parameter `x` is not UTF-8 text once percent-decoded")
    );

    let request = Request::get("/metrics")
        .header(header::HOST, "127.0.0.1")
        .body(Body::empty())
        .unwrap();
    let (status, content_type, text) = send(&router, request).await;
    assert_eq!(status, OK);
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    assert!(text.contains("resource=\"R\""), "{text}");
    let from_another_site = Request::get("/metrics")
        .header(header::HOST, "127.0.0.1")
        .header("sec-fetch-site", "cross-site")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = send(&router, from_another_site).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::FORBIDDEN,
            "requests from other sites' pages are refused"
        )
    );
}

#[tokio::test]
async fn switch_cluster_mode_and_circuit_breakers() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let router = agent.router();

    assert_eq!(
        get(&router, "getSwitch").await,
        (OK, "Sentinel switch value: true".to_owned())
    );
    assert_eq!(
        get(&router, "setSwitch?value=maybe").await,
        (BAD, "value must be `true` or `false`".to_owned())
    );
    assert_eq!(
        get(&router, "setSwitch").await,
        (BAD, "value must be `true` or `false`".to_owned())
    );
    assert!(fg.is_enabled(), "a refused call changes nothing");
    assert_eq!(
        post(&router, "setSwitch", &[("value", "false")]).await,
        (OK, "Sentinel set switch value: false".to_owned())
    );
    assert!(!fg.is_enabled());
    assert_eq!(
        get(&router, "getSwitch").await,
        (OK, "Sentinel switch value: false".to_owned())
    );
    assert_eq!(get(&router, "setSwitch?value=true").await.0, OK);
    assert!(fg.is_enabled());

    let (status, mode) = get(&router, "getClusterMode").await;
    assert_eq!(status, OK);
    assert_eq!(json(&mode)["mode"], -1);
    let (status, body) = get(&router, "getClusterMode?mode=%FF").await;
    assert_eq!(
        (status, body.as_str()),
        (
            BAD,
            "parameter `mode` is not UTF-8 text once percent-decoded"
        )
    );

    fg.load_rules_json(
        RuleType::Degrade,
        r#"[{"resource":"R","grade":2,"count":0,"timeWindow":10,"minRequestAmount":1}]"#,
    )
    .unwrap();
    let (status, states) = get(&router, "circuitBreakers").await;
    assert_eq!(status, OK);
    let states = json(&states);
    assert_eq!(states[0]["resource"], "R");
    assert_eq!(states[0]["state"], "CLOSED");
    let with_a_body = Request::post("/circuitBreakers")
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{}"))
        .unwrap();
    let (status, _, body) = send(&router, with_a_body).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "only application/x-www-form-urlencoded bodies are accepted"
        )
    );
}

#[tokio::test]
async fn unknown_and_empty_commands_and_the_token() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let router = agent.router();
    assert_eq!(
        get(&router, "nope").await,
        (BAD, "Unknown command `nope`".to_owned())
    );
    assert_eq!(get(&router, "").await, (BAD, "Invalid command".to_owned()));

    let guarded = builder(&fg).token("router-token-1").start().unwrap();
    let router = guarded.router();
    let (status, _) = get(&router, "version").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        get(&router, "version?token=router-token-1").await,
        (OK, "1.8.9".to_owned())
    );
}
