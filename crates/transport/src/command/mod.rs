//! The command center: Sentinel's HTTP command API (`GET /getRules?type=flow`, `POST /setRules`, …).
//!
//! A request names its command in the path; parameters come from the query string and, for POST, from an
//! `application/x-www-form-urlencoded` body (merged, body last). Every key and value is URL-decoded exactly
//! once — unlike Sentinel, which decodes rule `data` a second time and turns `a+b` into `a b`
//! (`odd_resource_names_round_trip_decoded_exactly_once`) —
//! and values are kept as sent (a resource may be named `" a "`; keywords and numbers are trimmed).
//! Answers are plain text: 200 with the command's body, 400 with the error message (`Unknown command
//! \`name\`` for unknown ones, or more than 64 parameters), 401 without the configured token, 429 (with
//! `Retry-After`) to a client that sent 10 wrong tokens within a minute, until that minute ends,
//! whatever token it sends (see `auth_failures`; requests without a token are not counted), 405 for a method other than GET and POST, 408
//! for a body slower than 10 s, 413 for a body over the limit (at once, before reading it, when its
//! `Content-Length` says so), 415 for a POST that is not a form (`application/x-www-form-urlencoded`
//! exactly, with parameters; a charset other than UTF-8 is refused), 404 for any path but
//! `/metrics` on the Prometheus port, and 503 (with `Retry-After`) to a request that was let in but
//! whose connection has no place to keep (closed to make room meanwhile; the server's docs give the
//! policy): it does not run. `metrics` answers the Prometheus text format (with its content
//! type). A request with two `Host` headers, or a parameter whose decoded bytes are not UTF-8, is
//! refused with 400.
//!
//! With a token configured, a POST's token is checked before its body is read when it comes in a
//! header; a body that may carry the token itself (no token header) is read only up to 4 KiB, and
//! a larger one is answered 401 at once: a stranger cannot make the agent read a megabyte only to
//! refuse it. Sentinel's Java dashboard, which sends no token, sends no token header either: it is
//! let in without one by an agent without a token, or from an address in
//! [`tokenless_from`](crate::AgentBuilder::tokenless_from).
//!
//! Requests a browser makes for a web page are refused with 403, token or not: binding to loopback does
//! not stop a page the developer opens from calling `127.0.0.1:8719`, nor a page whose name
//! was rebound to this machine's address from reading the answers. So a request is refused when it has
//! an `Origin` header or a `Sec-Fetch-Site` of `cross-site` or `same-site` (in any case), and, when
//! no token is needed (none configured, or a peer in
//! [`tokenless_from`](crate::AgentConfig::tokenless_from)), when
//! its `Host` is not an IP address, `localhost`, this machine's name or one of the configured
//! [`allowed_hosts`](crate::AgentConfig::allowed_hosts) (with a token a page cannot get in anyway, and
//! any name may address the agent). Sentinel's dashboard, `curl` and Prometheus send neither header
//! (`requests_from_web_pages_are_refused`).
//! A browser too old to send `Sec-Fetch-Site` still lets a page trigger a GET without a token: set one.
//!
//! An audit trail, on the `tracing` target `floodgate::audit` (client-made text quoted, so one event is
//! one line), where what anyone can cause is sampled, so that a flood of refused requests cannot flood
//! the log:
//!
//! * every command that changes the agent's state (`setRules`, `setParamFlowRules`, `setSwitch`) and
//!   ran, with the client's address, the rule type or value and the answer (`info`; `warn` when the
//!   command refused the change);
//! * such a command refused before it ran (403 for a web page's request, 400, 405, 408, 413, 415, too
//!   many parameters): `warn` with the status, at most one a second, each with how many were held
//!   back before it (the rest of a burst is counted in a line a second on); a refused client's 429s
//!   are not logged;
//! * wrong tokens: `warn` for a client's first of its minute and for the one that gets it refused, not
//!   those between, each kind at most once a second across all clients (with the count held back); a
//!   request without a token at `debug`.
//!
//! Commands that ran are logged each (a state change is worth its line; with a token, only its holders
//! can cause them).

mod auth_failures;
#[cfg(feature = "cluster")]
mod cluster;
mod info;
mod log_throttle;
mod metric;
mod nodes;
mod params;
#[cfg(test)]
mod properties;
mod rules;
#[cfg(feature = "cluster")]
mod served_rules;

#[cfg(feature = "cluster")]
pub(crate) use cluster::ClusterControl;
pub use info::SENTINEL_VERSION;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, to_bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use floodgate_core::Floodgate;

pub(crate) use auth_failures::AuthFailures;
use auth_failures::{Failure, MAX_FAILURES, WINDOW};
pub(crate) use log_throttle::LogThrottle;
use params::ParamError;
pub(crate) use params::Params;

use crate::admission::{Refused, Ticket};
use crate::cidr::Cidr;
use crate::host::{HostInfo, ReportedIp};
use crate::metric_store::MetricStore;
use crate::prometheus::{PROMETHEUS_CONTENT_TYPE, prometheus_text};
use crate::rule_file::RuleFiles;

/// What the command handlers share.
#[derive(Debug)]
pub struct CommandState {
    pub(crate) fg: Floodgate,
    pub(crate) host: HostInfo,
    /// The IP `basicInfo` reports (`host`'s, as the heartbeat task last detected it).
    pub(crate) reported_ip: ReportedIp,
    pub(crate) port: u16,
    pub(crate) metrics: Arc<MetricStore>,
    pub(crate) token: Option<String>,
    pub(crate) rule_files: Arc<RuleFiles>,
    /// Taken by each rule load for its turn (loads run one at a time, in arrival order).
    pub(crate) rule_loads: Arc<tokio::sync::Mutex<()>>,
    pub(crate) max_body_bytes: usize,
    /// Host names requests may address the agent by, besides IPs, `localhost` and the machine's name.
    pub(crate) allowed_hosts: Vec<String>,
    /// Networks whose peers need no token (when one is configured).
    pub(crate) tokenless_from: Vec<Cidr>,
    /// Failed token checks per client.
    pub(crate) auth_failures: AuthFailures,
    /// The audit lines for state changes refused before they ran (at most one a second).
    pub(crate) early_refusals: LogThrottle,
    /// The audit lines for clients' first wrong tokens (at most one a second).
    pub(crate) wrong_tokens: LogThrottle,
    /// The audit lines for clients refused after too many wrong tokens (at most one a second).
    pub(crate) lockouts: LogThrottle,
    /// The embedded token server.
    #[cfg(feature = "cluster")]
    pub(crate) cluster: cluster::ClusterControl,
}

impl CommandState {
    /// Logs the refused state changes held back by the once-a-second audit line, if a second passed
    /// since (the agent calls it every second).
    pub(crate) fn flush_audit(&self, now: Instant) {
        let held = [
            (
                &self.early_refusals,
                "more commands refused before they ran",
            ),
            (&self.wrong_tokens, "more clients sent wrong tokens"),
            (
                &self.lockouts,
                "more clients refused after too many wrong tokens",
            ),
        ];
        for (throttle, what) in held {
            if let Some(held_back) = throttle.flush(now) {
                tracing::warn!(
                    target: "floodgate::audit",
                    held_back,
                    "{what} (not logged one by one)"
                );
            }
        }
    }
}

/// A command's failure: the status and the plain-text message.
#[derive(Debug)]
pub(crate) struct CommandError {
    status: StatusCode,
    message: String,
}

impl CommandError {
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        CommandError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        CommandError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
        }
    }
}

impl IntoResponse for CommandError {
    fn into_response(self) -> Response {
        text(self.status, self.message)
    }
}

const TEXT: &str = "text/plain; charset=UTF-8";

fn text(status: StatusCode, body: String) -> Response {
    typed(status, TEXT, body)
}

fn typed(status: StatusCode, content_type: &'static str, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// How long a client may take to send a request body.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest body read from a client that has not shown the token yet (it may be in the body):
/// a larger one needs the token in a header.
pub(crate) const MAX_BODY_BEFORE_TOKEN: usize = 4096;

/// The commands this agent answers, with Sentinel's descriptions (the `api` command lists them).
pub(crate) const COMMANDS: &[(&str, &str)] = &[
    ("version", "sentinel version"),
    ("api", "get all available command handlers"),
    ("basicInfo", "get sentinel config info"),
    (
        "getRules",
        "get all active rules by type, request param: type={ruleType}",
    ),
    (
        "setRules",
        "modify the rules, accept param: type={ruleType}&data={ruleJson}",
    ),
    ("getParamFlowRules", "get all active parameter flow rules"),
    (
        "setParamFlowRules",
        "set parameter flow rules, while previous rules will be replaced",
    ),
    (
        "clusterNode",
        "get all clusterNode VO, use type=notZero to ignore those nodes with totalRequest <=0",
    ),
    (
        "clusterNodeById",
        "get clusterNode VO by id, request param: id={resourceName}",
    ),
    (
        "cnode",
        "get clusterNode metrics by id, request param: id={resourceName}",
    ),
    (
        "origin",
        "get origin clusterNode by id, request param: id={resourceName}",
    ),
    ("jsonTree", "get tree node VO start from root node"),
    (
        "tree",
        "get metrics in tree mode, use id to specify detailed tree root",
    ),
    (
        "metric",
        "get and aggregate metrics, accept param: startTime={startTime}&endTime={endTime}&maxLines={maxLines}&identity={resourceName}",
    ),
    ("systemStatus", "get system status"),
    ("getSwitch", "get sentinel switch status"),
    (
        "setSwitch",
        "set sentinel switch, accept param: value={true|false}",
    ),
    ("getClusterMode", "get cluster mode status"),
    (
        "circuitBreakers",
        "get the state of every circuit breaker (Floodgate)",
    ),
    (
        "metrics",
        "metrics in the Prometheus text format (Floodgate)",
    ),
];

/// The command router: every path is a command name.
pub fn app(state: Arc<CommandState>) -> Router {
    Router::new().fallback(handle).with_state(state)
}

/// The Prometheus port's router: `/metrics` only (token rules as on the command port), 404 elsewhere.
pub(crate) fn metrics_app(state: Arc<CommandState>) -> Router {
    Router::new().fallback(metrics_only).with_state(state)
}

async fn metrics_only(
    state: State<Arc<CommandState>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    ticket: Option<Extension<Arc<Ticket>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if uri.path() != "/metrics" {
        return text(
            StatusCode::NOT_FOUND,
            "only /metrics is served here".to_owned(),
        );
    }
    handle(state, peer, ticket, method, uri, headers, body).await
}

fn token_matches(expected: &str, given: &str) -> bool {
    // Constant time in the length of the expected token.
    let (a, b) = (expected.as_bytes(), given.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// The token a request carries in a header, if any.
fn header_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("x-floodgate-token")
        .and_then(|v| v.to_str().ok())
        .or_else(|| {
            headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
        })
}

/// Why a request made by a browser for a web page is refused, if it is one (see the module docs).
fn browser_refusal(state: &CommandState, headers: &HeaderMap, tokenless: bool) -> Option<String> {
    if headers.contains_key(header::ORIGIN) {
        return Some("requests from web pages (with an Origin header) are refused".to_owned());
    }
    if headers.get("sec-fetch-site").is_some_and(|site| {
        let site = site.as_bytes().trim_ascii();
        site.eq_ignore_ascii_case(b"cross-site") || site.eq_ignore_ascii_case(b"same-site")
    }) {
        return Some("requests from other sites' pages are refused".to_owned());
    }
    // A page cannot know the token: with one required, names are as good as addresses (Prometheus
    // targets and compose services are often names).
    if state.token.is_some() && !tokenless {
        return None;
    }
    let host = headers.get(header::HOST)?;
    let host = host.to_str().unwrap_or("");
    // `name`, `name:port`, `[v6]` or `[v6]:port`.
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    let allowed = name.parse::<std::net::IpAddr>().is_ok()
        || name.eq_ignore_ascii_case("localhost")
        || name.eq_ignore_ascii_case(&state.host.hostname)
        || state
            .allowed_hosts
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h));
    (!allowed).then(|| {
        format!(
            "Host `{host}` is not an IP address, localhost, this machine's name or an allowed host \
             (FLOODGATE_ALLOWED_HOSTS): refused, as a name rebound to this machine could be a web page's"
        )
    })
}

/// Whether the request may run: no token configured, the right token (in a header, else the
/// `token` parameter), or none from a peer that needs none. A wrong token is refused from any peer.
fn authorized(state: &CommandState, headers: &HeaderMap, params: &Params, tokenless: bool) -> bool {
    let Some(expected) = &state.token else {
        return true;
    };
    match header_token(headers).or_else(|| params.word("token").filter(|t| !t.is_empty())) {
        Some(given) => token_matches(expected, given),
        None => tokenless,
    }
}

/// Whether `peer` needs no token: one is configured and the peer is in
/// [`tokenless_from`](crate::AgentConfig::tokenless_from).
fn tokenless_peer(state: &CommandState, peer: Option<SocketAddr>) -> bool {
    state.token.is_some()
        && peer.is_some_and(|p| state.tokenless_from.iter().any(|n| n.contains(p.ip())))
}

/// Whether the request carries a token at all (in a header, or a non-blank `token` parameter).
fn sent_token(headers: &HeaderMap, params: &Params) -> bool {
    header_token(headers).is_some() || params.word("token").is_some_and(|t| !t.is_empty())
}

/// How long more `peer` is refused for failed token checks, if it is (never without a token).
fn refused_for(state: &CommandState, peer: Option<SocketAddr>) -> Option<Duration> {
    state.token.as_ref()?;
    state.auth_failures.refused_for(peer?.ip(), Instant::now())
}

/// The answer to a failed token check by `peer`. A wrong token (`guessed`) is counted against the
/// client; a request without one is not (a health check or a scraper left unconfigured must not get
/// the dashboard on the same address refused). Logged on target `floodgate::audit`: at `warn`, a
/// client's first wrong token of its window and the one that gets it refused, not those between; at
/// `debug`, each request without a token.
fn unauthorized(
    state: &CommandState,
    peer: Option<SocketAddr>,
    command: &str,
    guessed: bool,
) -> Response {
    let who = peer_text(peer);
    let now = Instant::now();
    let failure = match peer {
        Some(p) if guessed => Some(state.auth_failures.record(p.ip(), now)),
        _ => None,
    };
    match failure {
        // Without a token (a misconfigured scraper, say), at `debug`: each one would flood the log.
        None if !guessed => tracing::debug!(
            target: "floodgate::audit",
            peer = %who,
            command,
            token = "missing",
            "refused a request without a valid token"
        ),
        // A client's first wrong token, and a lockout: at most one line a second each, however many
        // clients (addresses are cheap to come by).
        Some(Failure::First) | None => {
            if let Some(held_back) = state.wrong_tokens.admit(now) {
                tracing::warn!(
                    target: "floodgate::audit",
                    peer = %who,
                    command,
                    token = "wrong",
                    held_back,
                    "refused a request without a valid token"
                );
            }
        }
        Some(Failure::LockedOut) => {
            if let Some(held_back) = state.lockouts.admit(now) {
                let left = peer
                    .and_then(|p| state.auth_failures.refused_for(p.ip(), now))
                    .unwrap_or_default();
                tracing::warn!(
                    target: "floodgate::audit",
                    peer = %who,
                    command,
                    held_back,
                    "refusing a client for {} s after {MAX_FAILURES} wrong tokens within {} s",
                    seconds(left),
                    WINDOW.as_secs()
                );
            }
        }
        Some(Failure::Again) => {}
    }
    text(
        StatusCode::UNAUTHORIZED,
        "a valid token is required".to_owned(),
    )
}

/// `d` in whole seconds, rounded up.
fn seconds(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// The answer to a client refused for sending too many wrong tokens, for `left` more.
fn locked_out(left: Duration) -> Response {
    let secs = seconds(left);
    (
        StatusCode::TOO_MANY_REQUESTS,
        [
            (header::CONTENT_TYPE, TEXT.to_owned()),
            (header::RETRY_AFTER, secs.to_string()),
        ],
        format!("too many wrong tokens: refused for {secs} s more, whatever the token"),
    )
        .into_response()
}

/// The commands of the embedded token server, listed by `api` with the others.
#[cfg(feature = "cluster")]
const CLUSTER_COMMANDS: &[(&str, &str)] = &[
    (
        "setClusterMode",
        "set cluster mode, accept param: mode={0|1} 0:client mode 1:server mode",
    ),
    ("cluster/client/fetchConfig", "get cluster client config"),
    (
        "cluster/client/modifyConfig",
        "modify cluster client config",
    ),
    ("cluster/server/info", "get cluster server info"),
    ("cluster/server/fetchConfig", "get cluster server config"),
    (
        "cluster/server/modifyTransportConfig",
        "modify cluster server transport config",
    ),
    (
        "cluster/server/modifyFlowConfig",
        "modify cluster server flow config",
    ),
    (
        "cluster/server/modifyNamespaceSet",
        "modify server namespace set",
    ),
    ("cluster/server/flowRules", "get cluster server flow rules"),
    (
        "cluster/server/paramRules",
        "get cluster server param flow rules",
    ),
    (
        "cluster/server/modifyFlowRules",
        "modify cluster server flow rules",
    ),
    (
        "cluster/server/modifyParamRules",
        "modify cluster server param flow rules",
    ),
    ("cluster/server/metricList", "get cluster server metrics"),
];

/// The commands that change the agent's state: each is logged with its client and outcome.
fn changes_state(command: &str) -> bool {
    matches!(
        command,
        "setRules"
            | "setParamFlowRules"
            | "setSwitch"
            | "setClusterMode"
            | "cluster/client/modifyConfig"
            | "cluster/server/modifyTransportConfig"
            | "cluster/server/modifyFlowConfig"
            | "cluster/server/modifyNamespaceSet"
            | "cluster/server/modifyFlowRules"
            | "cluster/server/modifyParamRules"
    )
}

fn bad_params(error: ParamError) -> Response {
    text(StatusCode::BAD_REQUEST, error.to_string())
}

async fn handle(
    State(state): State<Arc<CommandState>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    ticket: Option<Extension<Arc<Ticket>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let peer = peer.map(|Extension(ConnectInfo(addr))| addr);
    let ticket = ticket.map(|Extension(ticket)| ticket);
    let command = uri.path().trim_start_matches('/').to_owned();
    let request = Request {
        peer,
        ticket: ticket.as_deref(),
        command: &command,
        uri: &uri,
        headers: &headers,
    };
    let (response, logged) = respond(&state, &request, method, body).await;
    // A state change refused before its command ran (a web page's request, a body too large or too
    // slow, …) is audited too, at most once a second (anyone can cause it); a refused client's 429s
    // are not.
    if !logged && changes_state(&command) && response.status() != StatusCode::TOO_MANY_REQUESTS {
        if let Some(held_back) = state.early_refusals.admit(Instant::now()) {
            tracing::warn!(
                target: "floodgate::audit",
                peer = %peer_text(peer),
                command = %command,
                status = response.status().as_u16(),
                held_back,
                "command refused before it ran"
            );
        }
    }
    response
}

/// `peer` for the log.
fn peer_text(peer: Option<SocketAddr>) -> String {
    peer.map_or_else(|| "unknown".to_owned(), |p| p.to_string())
}

/// What a handler knows of a request besides its method and body.
struct Request<'a> {
    peer: Option<SocketAddr>,
    /// The connection's place (absent when the router is called without the agent's server).
    ticket: Option<&'a Ticket>,
    command: &'a str,
    uri: &'a Uri,
    headers: &'a HeaderMap,
}

impl Request<'_> {
    /// Tells the server the request was let in (its connection is proven); else the answer to give
    /// instead of running it.
    async fn prove(&self) -> Result<(), Response> {
        match self.ticket {
            Some(ticket) => ticket.prove().await.map_err(unavailable),
            None => Ok(()),
        }
    }
}

/// The answer to a request let in that may not run (see [`Refused`]): 503, try again in a second.
fn unavailable(refused: Refused) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [
            (header::CONTENT_TYPE, TEXT.to_owned()),
            (header::RETRY_AFTER, "1".to_owned()),
        ],
        refused.to_string(),
    )
        .into_response()
}

/// The answer to a request, and whether the audit trail has dealt with it already: a token failure
/// (logged or counted as its policy says) or a command run (logged if it changes state).
async fn respond(
    state: &CommandState,
    request: &Request<'_>,
    method: Method,
    body: Body,
) -> (Response, bool) {
    let Request {
        peer,
        command,
        uri,
        headers,
        ..
    } = *request;
    // A refused client first: whatever else it sends (an `Origin`, say), it gets its 429.
    if let Some(left) = refused_for(state, peer) {
        return (locked_out(left), false);
    }
    if headers.get_all(header::HOST).iter().nth(1).is_some() {
        // Which one names the agent? A proxy and the agent could each read another.
        let answer = text(
            StatusCode::BAD_REQUEST,
            "more than one Host header".to_owned(),
        );
        return (answer, false);
    }
    let tokenless = tokenless_peer(state, peer);
    if let Some(reason) = browser_refusal(state, headers, tokenless) {
        return (text(StatusCode::FORBIDDEN, reason), false);
    }
    let mut params = Params::default();
    if let Some(query) = uri.query() {
        if let Err(e) = params.extend_from_form(query.as_bytes()) {
            return (bad_params(e), false);
        }
    }
    if method == Method::POST {
        if let Some(content_type) = headers.get(header::CONTENT_TYPE) {
            if let Err(reason) = form_content_type(content_type) {
                return (text(StatusCode::UNSUPPORTED_MEDIA_TYPE, reason), false);
            }
        }
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        // Refused before a byte of it is read (it waited for the body, then answered 408).
        if declared.is_some_and(|n| n > state.max_body_bytes as u64) {
            return (too_large_body(state.max_body_bytes), false);
        }
        // A token in a header is checked before the body is read: without the right one, a client
        // cannot make the agent read and parse a body.
        if header_token(headers).is_some() && !authorized(state, headers, &Params::default(), false)
        {
            return (unauthorized(state, peer, command, true), true);
        }
        // The right token in a header proves the request before its body is read (a slow body
        // keeps its connection past the first-request deadline); from a peer that needs none, the
        // request must come whole first: headers alone are anyone's.
        let token_shown = state.token.is_some() && header_token(headers).is_some();
        if token_shown {
            if let Err(answer) = request.prove().await {
                return (answer, false);
            }
        }
        // Without a token yet, only a small body is read for one: a stranger cannot make the agent
        // read a large body only to refuse it.
        let limit = if state.token.is_some() && !token_shown && !tokenless {
            if declared.is_some_and(|n| n > MAX_BODY_BEFORE_TOKEN as u64) {
                return (token_in_a_header(), false);
            }
            state.max_body_bytes.min(MAX_BODY_BEFORE_TOKEN)
        } else {
            state.max_body_bytes
        };
        match tokio::time::timeout(BODY_TIMEOUT, to_bytes(body, limit)).await {
            Ok(Ok(bytes)) => {
                if let Err(e) = params.extend_from_form(&bytes) {
                    return (bad_params(e), false);
                }
            }
            Ok(Err(error)) => {
                let too_large = is_too_large(&*error.into_inner());
                let answer = if too_large && limit < state.max_body_bytes {
                    token_in_a_header()
                } else if too_large {
                    too_large_body(state.max_body_bytes)
                } else {
                    // The client hung up, or sent a malformed body: it is gone or not listening.
                    text(
                        StatusCode::BAD_REQUEST,
                        "the request body could not be read".to_owned(),
                    )
                };
                return (answer, false);
            }
            Err(_) => {
                let answer = text(
                    StatusCode::REQUEST_TIMEOUT,
                    format!("the request body took over {} s", BODY_TIMEOUT.as_secs()),
                );
                return (answer, false);
            }
        }
    } else if method != Method::GET {
        let answer = text(StatusCode::METHOD_NOT_ALLOWED, "use GET or POST".to_owned());
        return (answer, false);
    }
    // Again: a client may have been refused while its body was on the way.
    if let Some(left) = refused_for(state, peer) {
        return (locked_out(left), false);
    }
    if !authorized(state, headers, &params, tokenless) {
        let guessed = sent_token(headers, &params);
        return (unauthorized(state, peer, command, guessed), true);
    }
    if let Err(answer) = request.prove().await {
        return (answer, false);
    }
    let result = run(state, command, &params).await;
    if changes_state(command) {
        let peer = peer_text(peer);
        let rule_type = params.word("type").unwrap_or_default();
        match &result {
            Ok(answer) => tracing::info!(
                target: "floodgate::audit",
                peer = %peer,
                command = %command,
                rule_type,
                value = params.word("value").unwrap_or_default(),
                answer = ?answer,
                "command applied"
            ),
            Err(e) => tracing::warn!(
                target: "floodgate::audit",
                peer = %peer,
                command = %command,
                rule_type,
                error = ?e.message,
                "command refused"
            ),
        }
    }
    let answer = match result {
        Ok(body) => typed(StatusCode::OK, content_type(command), body),
        Err(e) => e.into_response(),
    };
    (answer, true)
}

/// Whether a body read failed for being over its limit.
fn is_too_large(error: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
    error
        .downcast_ref::<http_body_util::LengthLimitError>()
        .is_some()
}

/// The answer to a body over [`MAX_BODY_BEFORE_TOKEN`] from a client that sent no token in a header.
fn token_in_a_header() -> Response {
    text(
        StatusCode::UNAUTHORIZED,
        format!(
            "a valid token is required, in a header (X-Floodgate-Token, or Authorization: Bearer) \
             for a body over {MAX_BODY_BEFORE_TOKEN} bytes"
        ),
    )
}

fn too_large_body(max: usize) -> Response {
    text(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("request body over {max} bytes"),
    )
}

/// Whether a POST's `Content-Type` is a form: the media type `application/x-www-form-urlencoded`
/// exactly (any case), with parameters, of which a `charset` must be UTF-8; else why not.
fn form_content_type(value: &axum::http::HeaderValue) -> Result<(), String> {
    const FORM: &str = "application/x-www-form-urlencoded";
    let refused = || format!("only {FORM} bodies are accepted");
    let value = value.to_str().map_err(|_| refused())?;
    let mut parts = value.split(';');
    let media_type = parts.next().unwrap_or_default().trim();
    if !media_type.eq_ignore_ascii_case(FORM) {
        return Err(refused());
    }
    for parameter in parts {
        let (name, charset) = parameter.split_once('=').unwrap_or((parameter, ""));
        if !name.trim().eq_ignore_ascii_case("charset") {
            continue;
        }
        let charset = charset.trim();
        let charset = charset
            .strip_prefix('"')
            .and_then(|c| c.strip_suffix('"'))
            .unwrap_or(charset);
        if !charset.eq_ignore_ascii_case("utf-8") && !charset.eq_ignore_ascii_case("utf8") {
            return Err(format!(
                "charset `{charset}` is not supported: send the form in UTF-8"
            ));
        }
    }
    Ok(())
}

/// The content type of a command's answer.
fn content_type(command: &str) -> &'static str {
    match command {
        "metrics" => PROMETHEUS_CONTENT_TYPE,
        _ => TEXT,
    }
}

async fn run(state: &CommandState, command: &str, params: &Params) -> Result<String, CommandError> {
    match command {
        "" => Err(CommandError::bad_request("Invalid command")),
        "version" => Ok(info::version()),
        "api" => Ok(info::api()),
        "basicInfo" => Ok(info::basic_info(state)),
        "getRules" => rules::get_rules(state, params),
        "setRules" => rules::set_rules(state, params).await,
        "getParamFlowRules" => Ok(rules::get_param_flow_rules(state)),
        "setParamFlowRules" => rules::set_param_flow_rules(state, params).await,
        "clusterNode" => Ok(nodes::cluster_node(state, params)),
        "clusterNodeById" => nodes::cluster_node_by_id(state, params),
        "cnode" => Ok(nodes::cnode(state, params)),
        "origin" => Ok(nodes::origin(state, params)),
        "jsonTree" => Ok(nodes::json_tree(state)),
        "tree" => Ok(nodes::tree(state, params)),
        "metric" => Ok(metric::metric(state, params)),
        "systemStatus" => Ok(info::system_status(state)),
        "getSwitch" => Ok(info::get_switch(state)),
        "setSwitch" => info::set_switch(state, params),
        #[cfg(not(feature = "cluster"))]
        "getClusterMode" => Ok(info::get_cluster_mode()),
        #[cfg(feature = "cluster")]
        "getClusterMode" => Ok(cluster::get_cluster_mode(state).await),
        #[cfg(feature = "cluster")]
        "setClusterMode" => cluster::set_cluster_mode(state, params).await,
        #[cfg(feature = "cluster")]
        "cluster/client/fetchConfig" => Ok(cluster::client_fetch_config(state).await),
        #[cfg(feature = "cluster")]
        "cluster/client/modifyConfig" => cluster::client_modify_config(state, params).await,
        #[cfg(feature = "cluster")]
        "cluster/server/info" => Ok(cluster::server_info(state).await),
        #[cfg(feature = "cluster")]
        "cluster/server/fetchConfig" => Ok(cluster::fetch_config(state, params).await),
        #[cfg(feature = "cluster")]
        "cluster/server/modifyTransportConfig" => {
            cluster::modify_transport_config(state, params).await
        }
        #[cfg(feature = "cluster")]
        "cluster/server/modifyFlowConfig" => cluster::modify_flow_config(state, params),
        #[cfg(feature = "cluster")]
        "cluster/server/modifyNamespaceSet" => cluster::modify_namespace_set(state, params),
        #[cfg(feature = "cluster")]
        "cluster/server/flowRules" => Ok(cluster::flow_rules(state, params)),
        #[cfg(feature = "cluster")]
        "cluster/server/paramRules" => Ok(cluster::param_rules(state, params)),
        #[cfg(feature = "cluster")]
        "cluster/server/modifyFlowRules" => cluster::modify_flow_rules(state, params),
        #[cfg(feature = "cluster")]
        "cluster/server/modifyParamRules" => cluster::modify_param_rules(state, params),
        #[cfg(feature = "cluster")]
        "cluster/server/metricList" => cluster::metric_list(state, params),
        "circuitBreakers" => Ok(rules::circuit_breakers(state)),
        "metrics" => Ok(prometheus_text(&state.fg, &state.metrics)),
        other => Err(CommandError::bad_request(format!(
            "Unknown command `{other}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{Admission, MAX_UNPROVEN};

    #[test]
    fn tokens_compare_whole() {
        assert!(token_matches("secret", "secret"));
        assert!(!token_matches("secret", "secre"));
        assert!(!token_matches("secret", "secrets"));
        assert!(!token_matches("secret", ""));
    }

    /// A `setRules` whose connection was closed to make room while it was read is refused, not
    /// applied with no one to tell.
    #[tokio::test]
    async fn a_request_on_a_connection_closed_to_make_room_does_not_run() {
        let fg = Floodgate::default();
        let admission = Admission::new(Vec::new());
        let peer = SocketAddr::from(([127, 0, 0, 1], 40000));
        let now = Instant::now();
        let ticket = admission.admit(peer.ip(), now).unwrap();
        // Its peer's newer connections fill its class: it makes room for them.
        let _newer: Vec<_> = (0..MAX_UNPROVEN)
            .map(|_| admission.admit(peer.ip(), now).unwrap())
            .collect();
        let request = axum::http::Request::post("/setRules")
            .header(header::HOST, "127.0.0.1")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .extension(ConnectInfo(peer))
            .extension(ticket.clone())
            .body(Body::from(
                "type=flow&data=%5B%7B%22resource%22%3A%22r%22%2C%22count%22%3A3%7D%5D",
            ))
            .unwrap();
        let response =
            tower_service::Service::call(&mut app(properties::state(&fg, None)), request)
                .await
                .unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        assert!(fg.flow_rules().is_empty(), "not applied");
        assert!(!ticket.granted(), "its connection closes");
    }
}
