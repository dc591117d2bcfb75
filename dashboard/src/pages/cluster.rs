//! An app's cluster flow control page: its cluster rules with the pass and block QPS of each one's
//! resource summed over the app's machines (and what token servers report for the rule), and every
//! live machine's mode and where its tokens come from — its embedded token server (port, clients per
//! namespace, figures), the token server it is a client of (address, state), or Redis (nodes,
//! instance). The logic is [`crate::cluster`]'s.

use askama::Template;
use axum::Form;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use floodgate_core::RuleType;
use serde::Deserialize;

use super::error::{OrPage, PageError, ago, utc};
use super::machines::find_app;
use super::rule_form::threshold_type_name;
use super::{Chrome, Page};
use crate::AppState;
use crate::auth::{CurrentUser, Role, SignedInBy};
use crate::cluster::{
    Assignment, Backend, BackendDetail, ClusterMode, FlowMetric, MachineCluster, Traffic, assign,
    cluster_of_app, cluster_rules, server_port,
};
use crate::error::AppError;

/// One cluster rule as the page shows it.
#[derive(Debug)]
struct RuleRow {
    /// `flow` or `paramFlow`.
    type_name: &'static str,
    kind: &'static str,
    id: i64,
    edit_url: String,
    flow_id: String,
    resource: String,
    threshold_type: &'static str,
    count: String,
    fallback: &'static str,
    pass: String,
    block: String,
    machines: String,
    /// What each token server of the app reports for the rule's flow id.
    servers: Vec<String>,
}

#[derive(Debug)]
struct RedisView {
    nodes: Vec<String>,
    deployment: &'static str,
    instance: String,
}

#[derive(Debug)]
struct ClientView {
    /// Why `cluster/client/fetchConfig` could not be read.
    error: Option<String>,
    server: String,
    state: &'static str,
    timeout: String,
}

#[derive(Debug)]
struct NamespaceRow {
    name: String,
    connected: i64,
    clients: Vec<String>,
}

#[derive(Debug)]
struct MetricRow {
    flow_id: i64,
    resource: String,
    pass: String,
    block: String,
}

#[derive(Debug)]
struct ServerView {
    /// Why `cluster/server/info` could not be read.
    info_error: Option<String>,
    port: String,
    embedded: &'static str,
    namespaces: Vec<NamespaceRow>,
    /// Why `cluster/server/metricList` could not be read.
    metrics_error: Option<String>,
    metrics: Vec<MetricRow>,
}

#[derive(Debug)]
struct MachineView {
    id: i64,
    address: String,
    hostname: String,
    /// Why the machine's cluster state could not be had.
    error: Option<String>,
    mode: String,
    backend: String,
    /// `none`, `server`, `client`, `redis` or `other`.
    backend_class: &'static str,
    backend_note: &'static str,
    last_modified: String,
    roles: String,
    redis: Option<RedisView>,
    client: Option<ClientView>,
    server: Option<ServerView>,
    /// Whether it serves tokens (mode 1).
    serving: bool,
    /// The app's other machines that serve tokens: the servers it can be made a client of.
    servers: Vec<ServerChoice>,
}

/// A machine that serves tokens, as a choice of server.
#[derive(Debug, Clone)]
struct ServerChoice {
    id: i64,
    address: String,
}

#[derive(Template)]
#[template(path = "cluster/index.html")]
struct ClusterPage {
    chrome: Chrome,
    app: String,
    /// The app's name as a path segment.
    app_segment: String,
    traffic_note: String,
    rules: Vec<RuleRow>,
    machines: Vec<MachineView>,
}

/// A QPS figure: whole numbers without decimals, others with one.
fn qps(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn yes_no(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "not reported",
    }
}

fn mode_words(mode: i64) -> String {
    match mode {
        -1 => "-1 (not started)".to_owned(),
        0 => "0 (client)".to_owned(),
        1 => "1 (server)".to_owned(),
        other => format!("{other} (unknown)"),
    }
}

fn backend_words(backend: &Backend) -> (String, &'static str) {
    match backend {
        Backend::None => ("none: not in a cluster".to_owned(), "none"),
        Backend::Server => ("its embedded token server".to_owned(), "server"),
        Backend::Client => ("a token server it is a client of".to_owned(), "client"),
        Backend::Redis(_) => ("Redis".to_owned(), "redis"),
        Backend::Other { name } => (name.clone(), "other"),
    }
}

fn optional<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "not reported".to_owned(), |v| v.to_string())
}

/// The machines among `machines` that serve tokens (mode 1).
fn serving_machines(machines: &[MachineCluster]) -> Vec<ServerChoice> {
    machines
        .iter()
        .filter(|m| m.state.as_ref().is_ok_and(|s| s.mode.mode == 1))
        .map(|m| ServerChoice {
            id: m.machine_id,
            address: m.address.clone(),
        })
        .collect()
}

fn machine_view(m: MachineCluster, now: i64, serving: &[ServerChoice]) -> MachineView {
    let servers = serving
        .iter()
        .filter(|s| s.id != m.machine_id)
        .cloned()
        .collect();
    let mut view = MachineView {
        serving: false,
        servers,
        id: m.machine_id,
        address: m.address,
        hostname: m.hostname,
        error: None,
        mode: String::new(),
        backend: String::new(),
        backend_class: "other",
        backend_note: "",
        last_modified: String::new(),
        roles: String::new(),
        redis: None,
        client: None,
        server: None,
    };
    let state = match m.state {
        Ok(state) => state,
        Err(e) => {
            view.error = Some(e);
            return view;
        }
    };
    let ClusterMode {
        mode,
        last_modified,
        client_available,
        server_available,
        backend,
        backend_reported,
    } = state.mode;
    (view.backend, view.backend_class) = backend_words(&backend);
    view.mode = mode_words(mode);
    view.serving = mode == 1;
    view.backend_note = if backend_reported {
        ""
    } else {
        "(read from the mode: the agent names no backend, as a Java Sentinel client does)"
    };
    view.last_modified = match last_modified {
        Some(ms) => format!("{} ({})", utc(ms), ago(now, ms)),
        None => "never".to_owned(),
    };
    view.roles = format!(
        "token client: {} · token server: {}",
        yes_no(client_available),
        yes_no(server_available)
    );
    if let Backend::Redis(redis) = backend {
        view.redis = Some(RedisView {
            nodes: redis.nodes,
            deployment: if redis.cluster {
                "a Redis Cluster (these are its seed nodes)"
            } else {
                "one Redis server"
            },
            instance: optional(redis.instance),
        });
    }
    match state.detail {
        BackendDetail::Nothing => {}
        BackendDetail::Client { config } => {
            view.client = Some(match config {
                Ok(c) => ClientView {
                    error: None,
                    server: match (&c.server_host, c.server_port) {
                        (Some(host), Some(port)) => format!("{host}:{port}"),
                        (Some(host), None) => host.clone(),
                        (None, _) => "none set".to_owned(),
                    },
                    state: c.state_name(),
                    timeout: c
                        .request_timeout
                        .map_or_else(|| "not reported".to_owned(), |ms| format!("{ms} ms")),
                },
                Err(e) => ClientView {
                    error: Some(e),
                    server: String::new(),
                    state: "",
                    timeout: String::new(),
                },
            });
        }
        BackendDetail::Server { info, metrics } => {
            let mut server = ServerView {
                info_error: None,
                port: String::new(),
                embedded: "",
                namespaces: Vec::new(),
                metrics_error: None,
                metrics: Vec::new(),
            };
            match info {
                Ok(info) => {
                    server.port = optional(info.port);
                    server.embedded = match info.embedded {
                        Some(true) => "embedded in the app",
                        Some(false) => "standalone",
                        None => "not reported",
                    };
                    server.namespaces = info
                        .namespaces
                        .into_iter()
                        .map(|n| NamespaceRow {
                            name: n.name,
                            connected: n.connected,
                            clients: n.clients,
                        })
                        .collect();
                }
                Err(e) => server.info_error = Some(e),
            }
            match metrics {
                Ok(list) => server.metrics = list.iter().map(metric_row).collect(),
                Err(e) => server.metrics_error = Some(e),
            }
            view.server = Some(server);
        }
    }
    view
}

fn metric_row(m: &FlowMetric) -> MetricRow {
    MetricRow {
        flow_id: m.flow_id,
        resource: m.resource.clone(),
        pass: qps(m.pass_qps),
        block: qps(m.block_qps),
    }
}

/// What every token server among `machines` reports for `flow_id`.
fn server_figures(machines: &[MachineCluster], flow_id: Option<i64>) -> Vec<String> {
    let Some(flow_id) = flow_id else {
        return Vec::new();
    };
    machines
        .iter()
        .filter_map(|m| match &m.state {
            Ok(state) => match &state.detail {
                BackendDetail::Server {
                    metrics: Ok(list), ..
                } => list.iter().find(|f| f.flow_id == flow_id).map(|f| {
                    format!(
                        "{}: pass {} · block {}",
                        m.address,
                        qps(f.pass_qps),
                        qps(f.block_qps)
                    )
                }),
                _ => None,
            },
            Err(_) => None,
        })
        .collect()
}

pub(super) async fn index(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path(app): Path<String>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    let found = find_app(&state, &app).await.or_page(&chrome)?;
    let rules = cluster_rules(&state, found.id).await.or_page(&chrome)?;
    let machines = cluster_of_app(&state, found.id, &found.name)
        .await
        .or_page(&chrome)?;
    let traffic_note = match rules.second {
        Some(ts) => format!(
            "Pass and block QPS of each rule's resource in the second from {} (the last complete one \
             with metrics), summed over the app's machines.",
            utc(ts)
        ),
        None => "No metrics of this app in the last minute.".to_owned(),
    };
    let base = format!("/apps/{}/rules", super::segment(&app));
    let rows = rules
        .rules
        .iter()
        .map(|r| {
            let (type_name, kind) = match r.rule_type {
                RuleType::ParamFlow => ("paramFlow", "hot-parameter rule"),
                _ => ("flow", "flow rule"),
            };
            let traffic = |v: fn(&Traffic) -> i64| {
                r.traffic
                    .as_ref()
                    .map_or_else(|| "–".to_owned(), |t| v(t).to_string())
            };
            RuleRow {
                type_name,
                kind,
                id: r.id,
                edit_url: format!("{base}/{type_name}/{}/edit", r.id),
                flow_id: r
                    .flow_id
                    .map_or_else(|| "–".to_owned(), |id| id.to_string()),
                resource: r.resource.clone(),
                threshold_type: threshold_type_name(r.threshold_type),
                count: qps(r.count),
                fallback: if r.fallback_to_local {
                    "local check"
                } else {
                    "pass"
                },
                pass: traffic(|t| t.pass),
                block: traffic(|t| t.block),
                machines: traffic(|t| t.machines),
                servers: server_figures(&machines, r.flow_id),
            }
        })
        .collect();
    let now = state.now_ms();
    let serving = serving_machines(&machines);
    Ok(Page(ClusterPage {
        chrome,
        app_segment: super::segment(&app),
        app,
        traffic_note,
        rules: rows,
        machines: machines
            .into_iter()
            .map(|m| machine_view(m, now, &serving))
            .collect(),
    })
    .into_response())
}

/// The server form: the port to serve on (blank: the machine's own).
#[derive(Debug, Deserialize)]
pub(super) struct ServerForm {
    #[serde(default)]
    port: String,
}

/// Makes a machine a token server for the app, and goes back to the page.
pub(super) async fn make_server(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path((app, id)): Path<(String, i64)>,
    Form(form): Form<ServerForm>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    user.require(Role::Editor).or_page(&chrome)?;
    let found = find_app(&state, &app).await.or_page(&chrome)?;
    let port = server_port(&form.port).or_page(&chrome)?;
    assign(&state, &found, id, Assignment::Server(port), &user.username)
        .await
        .or_page(&chrome)?;
    Ok(Redirect::to(&back_to(&app, id)).into_response())
}

/// The client form: the machine whose token server to ask.
#[derive(Debug, Deserialize)]
pub(super) struct ClientForm {
    server: String,
}

/// Makes a machine a client of another machine's token server, and goes back to the page.
pub(super) async fn make_client(
    State(state): State<AppState>,
    user: CurrentUser,
    by: SignedInBy,
    Path((app, id)): Path<(String, i64)>,
    Form(form): Form<ClientForm>,
) -> Result<Response, PageError> {
    let chrome = Chrome::new(&user, &by);
    user.require(Role::Editor).or_page(&chrome)?;
    let found = find_app(&state, &app).await.or_page(&chrome)?;
    let server = form
        .server
        .trim()
        .parse::<i64>()
        .map_err(|_| AppError::field("server", "pick the machine whose token server to ask"))
        .or_page(&chrome)?;
    assign(
        &state,
        &found,
        id,
        Assignment::ClientOf(server),
        &user.username,
    )
    .await
    .or_page(&chrome)?;
    Ok(Redirect::to(&back_to(&app, id)).into_response())
}

/// The page, at the machine's section.
fn back_to(app: &str, machine_id: i64) -> String {
    format!(
        "/apps/{}/cluster#cluster-machine-{machine_id}",
        super::segment(app)
    )
}
