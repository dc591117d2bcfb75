//! Cluster flow control's commands (feature `cluster`): `getClusterMode`, `setClusterMode` and the
//! `cluster/server/*` commands of Sentinel's embedded token server.
//!
//! `setClusterMode?mode=1` makes the application its cluster's token server: it listens with
//! Sentinel's token protocol on the agent's address (loopback unless the agent was bound elsewhere)
//! at the transport port (default 18730), and the engine's own cluster rules ask the same service in
//! process. Mode 0 (a token client) is refused: this build has no client role yet. The server's rules
//! and settings are set per namespace by `cluster/server/modifyFlowRules`, `modifyParamRules`,
//! `modifyFlowConfig`, `modifyNamespaceSet` and `modifyTransportConfig`, each checked whole
//! before anything changes, as `setRules` is. They live in memory: a dashboard pushes them again
//! after a restart.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use floodgate_cluster::server::{
    DEFAULT_PORT, FlowConfigJson, LocalTokenService, ServerFlowConfig, ServerRuleError,
    TokenServer, TransportConfig,
};
use floodgate_core::{FlowRule, ParamFlowRule};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::{CommandError, CommandState, Params};

/// The embedded token server and its settings.
#[derive(Debug)]
pub(crate) struct ClusterControl {
    service: Arc<LocalTokenService>,
    /// The address the token server listens on (the agent's).
    bind: IpAddr,
    /// The application's name: the default namespace.
    app_name: String,
    role: Mutex<Role>,
}

#[derive(Debug)]
struct Role {
    /// The running server (mode 1), or none (mode −1).
    server: Option<TokenServer>,
    transport: TransportConfig,
    port: u16,
    /// When the mode last changed, epoch ms (−1: never).
    last_modified: i64,
}

impl ClusterControl {
    pub(crate) fn new(bind: IpAddr, app_name: &str) -> Self {
        ClusterControl {
            service: Arc::new(LocalTokenService::default()),
            bind,
            app_name: app_name.to_owned(),
            role: Mutex::new(Role {
                server: None,
                transport: TransportConfig::default(),
                port: DEFAULT_PORT,
                last_modified: -1,
            }),
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

pub(crate) async fn get_cluster_mode(state: &CommandState) -> String {
    let role = state.cluster.role.lock().await;
    json!({
        "mode": if role.server.is_some() { 1 } else { -1 },
        "lastModified": role.last_modified,
        "clientAvailable": false,
        "serverAvailable": true,
    })
    .to_string()
}

pub(crate) async fn set_cluster_mode(
    state: &CommandState,
    params: &Params,
) -> Result<String, CommandError> {
    let cluster = &state.cluster;
    match params.word("mode") {
        Some("1") => {
            let mut role = cluster.role.lock().await;
            if role.server.is_none() {
                let addr = SocketAddr::new(cluster.bind, role.port);
                let server = TokenServer::bind(addr, cluster.service.clone(), role.transport)
                    .await
                    .map_err(|e| {
                        CommandError::bad_request(format!("token server on {addr}: {e}"))
                    })?;
                role.server = Some(server);
                role.last_modified = now_ms();
                state
                    .fg
                    .set_token_service(Some(Box::new(cluster.service.clone())));
            }
            Ok("success".to_owned())
        }
        Some("0") => Err(CommandError::bad_request(
            "client mode is not available: this agent has no token client",
        )),
        _ => Err(CommandError::bad_request("mode must be 0 or 1")),
    }
}

/// The `data` parameter, which a change needs.
fn data(params: &Params) -> Result<&str, CommandError> {
    params
        .non_blank("data")
        .ok_or_else(|| CommandError::bad_request("Bad data"))
}

/// The namespace a command names, or the application's.
fn namespace<'a>(state: &'a CommandState, params: &'a Params) -> &'a str {
    params
        .non_blank("namespace")
        .unwrap_or(&state.cluster.app_name)
}

fn flow_config_json(c: &ServerFlowConfig) -> Value {
    json!({
        "exceedCount": c.exceed_count,
        "maxOccupyRatio": c.max_occupy_ratio,
        "intervalMs": c.interval_ms,
        "sampleCount": c.sample_count,
        "maxAllowedQps": c.max_allowed_qps,
    })
}

fn namespaces(state: &CommandState) -> Vec<String> {
    let mut names = state.cluster.service.namespaces();
    if !names.contains(&state.cluster.app_name) {
        names.push(state.cluster.app_name.clone());
        names.sort();
    }
    names
}

pub(crate) async fn server_info(state: &CommandState) -> String {
    let service = &state.cluster.service;
    let role = state.cluster.role.lock().await;
    let names = namespaces(state);
    let connections: Vec<Value> = names
        .iter()
        .map(|ns| {
            let clients = service.clients(ns);
            let set: Vec<Value> = clients
                .iter()
                .map(|address| {
                    let host = address
                        .rsplit_once(':')
                        .map_or(address.as_str(), |(h, _)| h);
                    json!({"address": address, "host": host})
                })
                .collect();
            json!({"namespace": ns, "connectionSet": set, "connectedCount": clients.len()})
        })
        .collect();
    let limits: Vec<Value> = names
        .iter()
        .map(|ns| {
            json!({
                "namespace": ns,
                "currentQps": service.request_qps(ns),
                "maxAllowedQps": service.flow_config(ns).max_allowed_qps,
            })
        })
        .collect();
    json!({
        "port": role.server.as_ref().map_or(i64::from(role.port), |s| i64::from(s.local_addr().port())),
        "connection": connections,
        "requestLimitData": limits,
        "transport": {"port": role.port, "idleSeconds": role.transport.idle.as_secs()},
        "flow": flow_config_json(&service.flow_config(&state.cluster.app_name)),
        "namespaceSet": names,
        "embedded": true,
        "appName": state.cluster.app_name,
    })
    .to_string()
}

pub(crate) async fn fetch_config(state: &CommandState, params: &Params) -> String {
    let role = state.cluster.role.lock().await;
    let ns = namespace(state, params);
    json!({
        "transport": {"port": role.port, "idleSeconds": role.transport.idle.as_secs()},
        "flow": flow_config_json(&state.cluster.service.flow_config(ns)),
        "namespaceSet": namespaces(state),
    })
    .to_string()
}

pub(crate) async fn modify_transport_config(
    state: &CommandState,
    params: &Params,
) -> Result<String, CommandError> {
    let port =
        match params.word("port") {
            Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                CommandError::bad_request("port must be a number from 1 to 65535")
            })?),
            None => None,
        };
    let idle =
        match params.word("idleSeconds") {
            Some(s) => Some(s.parse::<u64>().ok().filter(|s| *s > 0).ok_or_else(|| {
                CommandError::bad_request("idleSeconds must be a positive number")
            })?),
            None => None,
        };
    let cluster = &state.cluster;
    let mut role = cluster.role.lock().await;
    let (new_port, new_idle) = (port.unwrap_or(role.port), idle.map(Duration::from_secs));
    let transport = TransportConfig {
        idle: new_idle.unwrap_or(role.transport.idle),
        ..role.transport
    };
    if role.server.is_some() && (new_port != role.port || transport != role.transport) {
        // Bound first: a port that cannot be had leaves the running server as it is.
        let addr = SocketAddr::new(cluster.bind, new_port);
        let server = TokenServer::bind(addr, cluster.service.clone(), transport)
            .await
            .map_err(|e| CommandError::bad_request(format!("token server on {addr}: {e}")))?;
        if let Some(old) = role.server.replace(server) {
            old.shutdown().await;
        }
    }
    role.port = new_port;
    role.transport = transport;
    Ok("success".to_owned())
}

pub(crate) fn modify_flow_config(
    state: &CommandState,
    params: &Params,
) -> Result<String, CommandError> {
    let data = data(params)?;
    let json: FlowConfigJson = serde_json::from_str(data)
        .map_err(|e| CommandError::bad_request(format!("invalid flow config: {e}")))?;
    let config = json
        .to_config()
        .map_err(|e| CommandError::bad_request(e.to_string()))?;
    state
        .cluster
        .service
        .set_flow_config(namespace(state, params), config)
        .map_err(|e| CommandError::bad_request(e.to_string()))?;
    Ok("success".to_owned())
}

pub(crate) fn modify_namespace_set(
    state: &CommandState,
    params: &Params,
) -> Result<String, CommandError> {
    let data = data(params)?;
    let names: Vec<String> = serde_json::from_str(data).map_err(|e| {
        CommandError::bad_request(format!("namespaces must be a JSON array of strings: {e}"))
    })?;
    if let Some(i) = names.iter().position(|n| n.trim().is_empty()) {
        return Err(CommandError::bad_request(format!("namespace {i} is blank")));
    }
    state.cluster.service.set_namespaces(&names);
    Ok("success".to_owned())
}

pub(crate) fn flow_rules(state: &CommandState, params: &Params) -> String {
    let rules = state.cluster.service.flow_rules(namespace(state, params));
    serde_json::to_string(&rules).unwrap_or_else(|_| "[]".to_owned())
}

pub(crate) fn param_rules(state: &CommandState, params: &Params) -> String {
    let rules = state.cluster.service.param_rules(namespace(state, params));
    serde_json::to_string(&rules).unwrap_or_else(|_| "[]".to_owned())
}

pub(crate) fn modify_flow_rules(
    state: &CommandState,
    params: &Params,
) -> Result<String, CommandError> {
    let rules = rules_in(params, |d| FlowRule::deserialize_list(d))?;
    let service = &state.cluster.service;
    loaded(service.load_flow_rules(namespace(state, params), rules))
}

pub(crate) fn modify_param_rules(
    state: &CommandState,
    params: &Params,
) -> Result<String, CommandError> {
    let rules = rules_in(params, |d| ParamFlowRule::deserialize_list(d))?;
    let service = &state.cluster.service;
    loaded(service.load_param_rules(namespace(state, params), rules))
}

/// The rule list in `data`, read by `read` (a rule type's `deserialize_list`).
fn rules_in<R>(
    params: &Params,
    read: fn(
        &mut serde_json::Deserializer<serde_json::de::StrRead<'_>>,
    ) -> serde_json::Result<Vec<R>>,
) -> Result<Vec<R>, CommandError> {
    let data = data(params)?;
    read(&mut serde_json::Deserializer::from_str(data))
        .map_err(|e| CommandError::bad_request(e.to_string()))
}

fn loaded(load: Result<usize, ServerRuleError>) -> Result<String, CommandError> {
    load.map(|_| "success".to_owned())
        .map_err(|e| CommandError::bad_request(e.to_string()))
}

/// Each flow id's figures (Sentinel's `ClusterMetricNodeGenerator` fields).
pub(crate) fn metric_list(state: &CommandState, params: &Params) -> Result<String, CommandError> {
    let ns = params
        .non_blank("namespace")
        .ok_or_else(|| CommandError::bad_request("namespace is required"))?;
    let list: Vec<Value> = state
        .cluster
        .service
        .flow_metrics(ns)
        .iter()
        .map(|m| {
            json!({
                "flowId": m.flow_id,
                "resourceName": m.resource,
                "passQps": m.pass_qps,
                "blockQps": m.block_qps,
                "passRequestQps": m.pass_request_qps,
                "blockRequestQps": m.block_request_qps,
                "occupiedPassQps": m.waiting_qps,
                "topParams": {},
                "timestamp": now_ms(),
            })
        })
        .collect();
    Ok(Value::Array(list).to_string())
}
