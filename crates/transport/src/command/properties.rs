//! Property tests of the command API through its router (no socket): whatever a client sends, it
//! gets an answer that is the command's or a clear refusal, never a panic nor a 500, and a refused
//! change changes nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::http::{Method, Request, StatusCode};
use floodgate_core::{Floodgate, RuleType};
use proptest::prelude::*;
use tower_service::Service;

use super::{AuthFailures, CommandState, LogThrottle, app};
use crate::host::{HostInfo, ReportedIp};
use crate::metric_store::MetricStore;
use crate::rule_file::RuleFiles;

pub(super) fn state(fg: &Floodgate, token: Option<&str>) -> Arc<CommandState> {
    state_with_files(fg, token, RuleFiles::new(BTreeMap::new()))
}

/// [`state`], with rule files.
pub(super) fn state_with_files(
    fg: &Floodgate,
    token: Option<&str>,
    rule_files: RuleFiles,
) -> Arc<CommandState> {
    let host = HostInfo {
        hostname: "test-host".to_owned(),
        ip: "127.0.0.1".to_owned(),
        provisional: false,
    };
    Arc::new(CommandState {
        fg: fg.clone(),
        reported_ip: ReportedIp::new(&host.ip),
        host,
        port: 8719,
        metrics: Arc::new(MetricStore::new(std::time::Duration::from_secs(300))),
        token: token.map(str::to_owned),
        rule_files: Arc::new(rule_files),
        rule_loads: Arc::default(),
        max_body_bytes: 64 * 1024,
        allowed_hosts: Vec::new(),
        tokenless_from: Vec::new(),
        auth_failures: AuthFailures::default(),
        early_refusals: LogThrottle::new(),
        wrong_tokens: LogThrottle::new(),
        lockouts: LogThrottle::new(),
        #[cfg(feature = "cluster")]
        cluster: cluster_control(fg),
    })
}

/// The cluster role of the properties' agent: no client and no server runs, so its runtime (one
/// for the whole test binary) never has work.
#[cfg(feature = "cluster")]
fn cluster_control(fg: &Floodgate) -> super::ClusterControl {
    static RUNTIME: std::sync::LazyLock<tokio::runtime::Runtime> =
        std::sync::LazyLock::new(runtime);
    super::ClusterControl::new(
        fg,
        std::net::IpAddr::from([127, 0, 0, 1]),
        "app",
        RUNTIME.handle().clone(),
        None,
    )
    .expect("no Redis to check")
}

/// Bytes as they may appear in a query string: the URI's own characters kept, the rest escaped (so
/// `%`, `+`, `&`, `=` and truncated or non-UTF-8 escapes reach the parser as sent).
fn query(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"%+&=-._~!$'()*,;:@/?".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

const COMMANDS: &[&str] = &[
    "setRules",
    "getRules",
    "setParamFlowRules",
    "setSwitch",
    "clusterNodeById",
    "metric",
    "cnode",
    "origin",
    "tree",
    "version",
    "nope",
];

/// Statuses a request may get: the command's answer or a refusal that says why.
const ANSWERS: &[StatusCode] = &[
    StatusCode::OK,
    StatusCode::BAD_REQUEST,
    StatusCode::UNAUTHORIZED,
    StatusCode::FORBIDDEN,
    StatusCode::METHOD_NOT_ALLOWED,
    StatusCode::PAYLOAD_TOO_LARGE,
    StatusCode::UNSUPPORTED_MEDIA_TYPE,
    StatusCode::TOO_MANY_REQUESTS,
];

/// Fragments a command request is made of: keys the commands read, values with every encoding
/// edge, rule-like JSON and plain noise.
fn fragment() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"type=flow".to_vec()),
        Just(b"type=paramFlow".to_vec()),
        Just(b"data=".to_vec()),
        Just(b"data=%5B%5D".to_vec()),
        Just(b"data=%5B%7B%22resource%22%3A%22a%2Bb%22%2C%22count%22%3A1%7D%5D".to_vec()),
        Just(b"data=[{\"resource\":\"r\",\"count\":-1}]".to_vec()),
        Just(b"value=false".to_vec()),
        Just(b"id=%FF".to_vec()),
        Just(b"startTime=1700000000000&endTime=1".to_vec()),
        Just(b"token=x".to_vec()),
        Just(b"%".to_vec()),
        Just(b"%2".to_vec()),
        Just(b"%25".to_vec()),
        Just(b"%2B+".to_vec()),
        Just(b"=".to_vec()),
        Just(b"&&".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..32),
    ]
}

fn form() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(fragment(), 0..80).prop_map(|parts| parts.join(&b'&'))
}

/// One request to `app`; its status and body.
async fn send(
    state: &Arc<CommandState>,
    method: Method,
    command: &str,
    query_bytes: &[u8],
    content_type: Option<&str>,
    body: Vec<u8>,
) -> (StatusCode, String) {
    let uri = format!("/{command}?{}", query(query_bytes));
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "127.0.0.1:8719");
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let request = request.body(Body::from(body)).unwrap();
    let response = app(state.clone()).call(request).await.unwrap();
    let status = response.status();
    let text = to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, String::from_utf8_lossy(&text).into_owned())
}

/// An engine on a manual clock (no clock thread per case).
fn engine() -> Floodgate {
    Floodgate::builder()
        .clock(floodgate_core::ManualClock::new(1_700_000_000_000))
        .build()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    /// Any query and form body to any command, with or without a token configured: an answer or a
    /// clear refusal, and rules or the switch changed only by a 200.
    #[test]
    fn any_request_is_answered_or_clearly_refused(
        command in proptest::sample::select(COMMANDS),
        post in any::<bool>(),
        query_bytes in form(),
        body in form(),
        content_type in proptest::option::of(prop_oneof![
            Just("application/x-www-form-urlencoded"),
            Just("application/x-www-form-urlencoded; charset=UTF-8"),
            Just("application/x-www-form-urlencodedXYZ"),
            Just("application/x-www-form-urlencoded; charset=latin1"),
            Just("application/json"),
        ]),
        token in proptest::option::of(Just("s3cret-token")),
    ) {
        let fg = engine();
        fg.load_rules_json(RuleType::Flow, r#"[{"resource":"kept","count":1}]"#).unwrap();
        let state = state(&fg, token);
        let method = if post { Method::POST } else { Method::GET };
        let before = (fg.rules_json(RuleType::Flow), fg.rules_json(RuleType::ParamFlow));
        let (status, text) = runtime().block_on(send(&state, method, command, &query_bytes, content_type, body));
        prop_assert!(ANSWERS.contains(&status), "{status}: {text}");
        if status != StatusCode::OK {
            prop_assert!(!text.trim().is_empty(), "a refusal says why");
            prop_assert_eq!(
                (fg.rules_json(RuleType::Flow), fg.rules_json(RuleType::ParamFlow)),
                before,
                "a refused request changes no rule"
            );
            prop_assert!(fg.is_enabled());
        }
    }

    /// Rule data round-trips through `setRules` decoded exactly once, whatever the resource's name.
    #[test]
    fn rule_resources_round_trip(name in "[ -~\\u{80}-\\u{10ffff}]{1,24}") {
        let fg = engine();
        let state = state(&fg, None);
        let data = serde_json::json!([{"resource": name, "count": 1}]).to_string();
        let mut body = form_urlencoded::Serializer::new(String::new());
        body.append_pair("type", "flow").append_pair("data", &data);
        let body = body.finish().into_bytes();
        let rt = runtime();
        let (status, text) = rt.block_on(send(
            &state,
            Method::POST,
            "setRules",
            b"",
            Some("application/x-www-form-urlencoded; charset=UTF-8"),
            body,
        ));
        if status == StatusCode::OK {
            prop_assert_eq!(text, "success");
            let rules = fg.flow_rules();
            prop_assert_eq!(rules[0].resource.as_str(), name.as_str());
        } else {
            // The engine may refuse a name (a blank one, say): with a reason, and nothing loaded.
            prop_assert_eq!(status, StatusCode::BAD_REQUEST, "{}", text);
            prop_assert!(fg.flow_rules().is_empty());
        }
    }
}
