//! Cluster flow control's commands (feature `cluster`): `getClusterMode`, `setClusterMode`, the
//! `cluster/client/*` commands of Sentinel's token client and the `cluster/server/*` commands of its
//! embedded token server.
//!
//! - `setClusterMode?mode=1` makes the application its cluster's token server: it listens with
//!   Sentinel's token protocol on the agent's address (loopback unless the agent was bound
//!   elsewhere) at the transport port (default 18730), and the engine's own cluster rules ask the
//!   same service in process. The server's rules and settings are set per namespace by
//!   `cluster/server/modifyFlowRules`, `modifyParamRules`, `modifyFlowConfig`,
//!   `modifyNamespaceSet` and `modifyTransportConfig`, each checked whole before anything changes,
//!   as `setRules` is. They live in memory: a dashboard pushes them again after a restart. The
//!   application's own namespace serves the engine's own cluster rules until set explicitly
//!   ([`super::served_rules`]).
//! - `setClusterMode?mode=0` makes it a client: of the Redis the agent was started with
//!   ([`AgentBuilder::cluster_redis`](crate::AgentBuilder::cluster_redis), which also starts the
//!   agent in this mode), or else of the token server `cluster/client/modifyConfig` named. Either
//!   way the engine takes tokens fetched ahead, never waiting on the network in an entry.
//!
//! `getClusterMode` adds to Sentinel's fields `backend` (`none`, `server`, `client` or `redis`)
//! and, for Redis, `redis` (its nodes and this instance's name), for a dashboard to show where
//! tokens come from.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use floodgate_cluster::client::ClientConfig;
use floodgate_cluster::lease::{LeaseConfig, RemoteTokenService};
use floodgate_cluster::redis::{RedisConfig, RedisConfigError, RedisTokenService};
use floodgate_cluster::server::{
    DEFAULT_PORT, FlowConfigJson, LocalTokenService, ServerFlowConfig, ServerRuleError,
    TokenServer, TransportConfig,
};
use floodgate_core::{Floodgate, FlowRule, ParamFlowRule};
use serde_json::{Value, json};
use tokio::runtime::Handle;
use tokio::sync::Mutex;

use super::served_rules::{self, Following};
use super::{CommandError, CommandState, Params};

/// The embedded token server, the client role, and their settings.
#[derive(Debug)]
pub(crate) struct ClusterControl {
    service: Arc<LocalTokenService>,
    /// The address the token server listens on (the agent's).
    bind: IpAddr,
    /// The application's name: the default namespace.
    app_name: String,
    /// The agent's runtime, where a client's fetches run.
    runtime: Handle,
    /// The Redis the agent was started with, as a client's token source.
    redis: Option<Arc<RedisTokenService>>,
    /// Which of the app namespace's rule types follow the engine's own.
    following: Arc<Following>,
    role: Mutex<Role>,
}

#[derive(Debug)]
struct Role {
    /// The running server (mode 1).
    server: Option<TokenServer>,
    /// The task that keeps the server serving the engine's own cluster rules.
    follow: Option<tokio::task::JoinHandle<()>>,
    /// The running client role (mode 0).
    client: Option<ClientRole>,
    /// The token server a client asks, as `cluster/client/modifyConfig` last set it.
    client_config: Option<ClientSettings>,
    transport: TransportConfig,
    port: u16,
    /// When the mode last changed, epoch ms (−1: never).
    last_modified: i64,
}

/// Where a client's tokens come from.
#[derive(Debug)]
enum ClientRole {
    Redis,
    Server(Arc<RemoteTokenService>),
}

/// A token client's settings (Sentinel's `ClusterClientConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClientSettings {
    server_host: String,
    server_port: u16,
    request_timeout: u64,
    connect_timeout: u64,
}

fn default_request_timeout() -> u64 {
    20
}

fn default_connect_timeout() -> u64 {
    10_000
}

/// The longest request timeout a client may be given, ms (an entry never waits for it, but a
/// rule falls back only after it).
const MAX_REQUEST_TIMEOUT_MS: u64 = 10_000;

impl ClientSettings {
    /// Reads `{"serverHost", "serverPort", "requestTimeout"?, "connectTimeout"?}` (other fields
    /// are Sentinel's dashboard's own and ignored), and checks it.
    fn from_json(data: &str) -> Result<Self, CommandError> {
        let bad =
            |reason: String| CommandError::bad_request(format!("invalid client config: {reason}"));
        let value: Value = serde_json::from_str(data).map_err(|e| bad(e.to_string()))?;
        let Value::Object(fields) = value else {
            return Err(bad("must be a JSON object".to_owned()));
        };
        let number = |key: &str, default: u64| -> Result<u64, CommandError> {
            match fields.get(key) {
                None | Some(Value::Null) => Ok(default),
                Some(v) => v
                    .as_u64()
                    .ok_or_else(|| bad(format!("`{key}` must be a whole number"))),
            }
        };
        let settings = ClientSettings {
            server_host: fields
                .get("serverHost")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("`serverHost` must be a string".to_owned()))?
                .to_owned(),
            server_port: u16::try_from(number("serverPort", 0)?)
                .map_err(|_| bad("`serverPort` must be 1 to 65535".to_owned()))?,
            request_timeout: number("requestTimeout", default_request_timeout())?,
            connect_timeout: number("connectTimeout", default_connect_timeout())?,
        };
        settings.check()?;
        Ok(settings)
    }

    fn check(&self) -> Result<(), CommandError> {
        let host = self.server_host.trim();
        if host.is_empty() || host.len() > 255 || host != self.server_host {
            return Err(CommandError::bad_request(
                "`serverHost` must be a host name or address",
            ));
        }
        if self.server_port == 0 {
            return Err(CommandError::bad_request("`serverPort` must be 1 to 65535"));
        }
        if self.request_timeout == 0 || self.request_timeout > MAX_REQUEST_TIMEOUT_MS {
            return Err(CommandError::bad_request(format!(
                "`requestTimeout` must be 1 to {MAX_REQUEST_TIMEOUT_MS} ms"
            )));
        }
        if self.connect_timeout == 0 || self.connect_timeout > 60_000 {
            return Err(CommandError::bad_request(
                "`connectTimeout` must be 1 to 60000 ms",
            ));
        }
        Ok(())
    }
}

impl ClusterControl {
    /// The cluster role of an agent on `runtime`. With `redis`, the engine takes its cluster
    /// tokens from that Redis from the start (mode 0).
    pub(crate) fn new(
        fg: &Floodgate,
        bind: IpAddr,
        app_name: &str,
        runtime: Handle,
        redis: Option<RedisConfig>,
    ) -> Result<Self, RedisConfigError> {
        let redis = match redis {
            Some(config) => Some(Arc::new(RedisTokenService::start(config, &runtime)?)),
            None => None,
        };
        let client = redis.as_ref().map(|service| {
            fg.set_token_service(Some(Box::new(service.clone())));
            ClientRole::Redis
        });
        Ok(ClusterControl {
            service: Arc::new(LocalTokenService::default()),
            bind,
            app_name: app_name.to_owned(),
            runtime,
            redis,
            following: Arc::default(),
            role: Mutex::new(Role {
                server: None,
                follow: None,
                client,
                client_config: None,
                transport: TransportConfig::default(),
                port: DEFAULT_PORT,
                last_modified: -1,
            }),
        })
    }

    /// Starts a client of the token server `settings` name, on the agent's runtime.
    async fn start_client(
        &self,
        settings: &ClientSettings,
    ) -> Result<Arc<RemoteTokenService>, CommandError> {
        let target = format!("{}:{}", settings.server_host, settings.server_port);
        let addr = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::net::lookup_host(target.clone()),
        )
        .await
        .map_err(|_| CommandError::bad_request(format!("{target}: the name lookup timed out")))?
        .map_err(|e| CommandError::bad_request(format!("{target}: {e}")))?
        .next()
        .ok_or_else(|| CommandError::bad_request(format!("{target}: no address")))?;
        let config = ClientConfig {
            request_timeout: Duration::from_millis(settings.request_timeout),
            connect_timeout: Duration::from_millis(settings.connect_timeout),
            ..ClientConfig::new(addr, self.app_name.clone())
        };
        Ok(Arc::new(RemoteTokenService::connect(
            config,
            LeaseConfig::default(),
            &self.runtime,
        )))
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

pub(crate) async fn get_cluster_mode(state: &CommandState) -> String {
    let cluster = &state.cluster;
    let role = cluster.role.lock().await;
    let (mode, backend) = match (&role.server, &role.client) {
        (Some(_), _) => (1, "server"),
        (None, Some(ClientRole::Redis)) => (0, "redis"),
        (None, Some(ClientRole::Server(_))) => (0, "client"),
        (None, None) => (-1, "none"),
    };
    let mut answer = json!({
        "mode": mode,
        "lastModified": role.last_modified,
        "clientAvailable": true,
        "serverAvailable": true,
        "backend": backend,
    });
    if let Some(redis) = &cluster.redis {
        let config = redis.config();
        answer["redis"] = json!({
            "nodes": config.nodes,
            "cluster": config.cluster,
            "instance": config.instance,
        });
    }
    answer.to_string()
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
                role.client = None;
                role.last_modified = now_ms();
                served_rules::sync(
                    &state.fg,
                    &cluster.service,
                    &cluster.app_name,
                    &cluster.following,
                    &mut None,
                );
                role.follow = Some(cluster.runtime.spawn(served_rules::follow(
                    state.fg.clone(),
                    Arc::clone(&cluster.service),
                    cluster.app_name.clone(),
                    Arc::clone(&cluster.following),
                )));
                state
                    .fg
                    .set_token_service(Some(Box::new(cluster.service.clone())));
            }
            Ok("success".to_owned())
        }
        Some("0") => {
            let mut role = cluster.role.lock().await;
            if role.client.is_none() {
                // Ready before anything stops: a client that cannot start leaves the mode as it is.
                let client = match (&cluster.redis, &role.client_config) {
                    (Some(redis), _) => {
                        state.fg.set_token_service(Some(Box::new(redis.clone())));
                        ClientRole::Redis
                    }
                    (None, Some(settings)) => {
                        let remote = cluster.start_client(settings).await?;
                        state.fg.set_token_service(Some(Box::new(remote.clone())));
                        ClientRole::Server(remote)
                    }
                    (None, None) => {
                        return Err(CommandError::bad_request(
                            "no token server to be a client of: set one with cluster/client/modifyConfig",
                        ));
                    }
                };
                role.client = Some(client);
                role.last_modified = now_ms();
                if let Some(follow) = role.follow.take() {
                    follow.abort();
                }
                if let Some(server) = role.server.take() {
                    server.shutdown().await;
                }
            }
            Ok("success".to_owned())
        }
        _ => Err(CommandError::bad_request("mode must be 0 or 1")),
    }
}

/// The client role's settings: the token server it asks (for Redis, its first node) and its state
/// (Sentinel's `clientState`: 0 off, 1 connecting, 2 started).
pub(crate) async fn client_fetch_config(state: &CommandState) -> String {
    let cluster = &state.cluster;
    let role = cluster.role.lock().await;
    if let Some(redis) = &cluster.redis {
        let config = redis.config();
        let (host, port) = config
            .nodes
            .first()
            .and_then(|node| redis_host_port(node))
            .unwrap_or_default();
        let started = matches!(role.client, Some(ClientRole::Redis));
        return json!({
            "serverHost": host,
            "serverPort": port,
            "clientState": if started { 2 } else { 0 },
            "requestTimeout": config.request_timeout.as_millis() as u64,
            "backend": "redis",
        })
        .to_string();
    }
    let client_state = match &role.client {
        Some(ClientRole::Server(remote)) => remote.fetcher().client().state().code(),
        _ => 0,
    };
    let settings = role.client_config.as_ref();
    json!({
        "serverHost": settings.map_or("", |s| s.server_host.as_str()),
        "serverPort": settings.map_or(0, |s| s.server_port),
        "clientState": client_state,
        "requestTimeout": settings.map_or(default_request_timeout(), |s| s.request_timeout),
        "backend": "client",
    })
    .to_string()
}

/// `redis://[user:pass@]host:port/db`'s host and port.
fn redis_host_port(node: &str) -> Option<(String, u16)> {
    let rest = node.split_once("://").map_or(node, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    match authority.rsplit_once(':') {
        Some((host, port)) => Some((host.to_owned(), port.parse().ok()?)),
        None => Some((authority.to_owned(), 6379)),
    }
}

/// Sets the token server a client asks; a running client moves to it.
pub(crate) async fn client_modify_config(
    state: &CommandState,
    params: &Params,
) -> Result<String, CommandError> {
    let data = data(params)?;
    let settings = ClientSettings::from_json(data)?;
    let cluster = &state.cluster;
    let mut role = cluster.role.lock().await;
    if matches!(role.client, Some(ClientRole::Server(_)))
        && role.client_config.as_ref() != Some(&settings)
    {
        let remote = cluster.start_client(&settings).await?;
        state.fg.set_token_service(Some(Box::new(remote.clone())));
        role.client = Some(ClientRole::Server(remote));
    }
    role.client_config = Some(settings);
    Ok("success".to_owned())
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
    let cluster = &state.cluster;
    let ns = namespace(state, params);
    let mut following = cluster.following.lock();
    loaded(cluster.service.load_flow_rules(ns, rules))?;
    if ns == cluster.app_name {
        following.flow = false;
    }
    Ok("success".to_owned())
}

pub(crate) fn modify_param_rules(
    state: &CommandState,
    params: &Params,
) -> Result<String, CommandError> {
    let rules = rules_in(params, |d| ParamFlowRule::deserialize_list(d))?;
    let cluster = &state.cluster;
    let ns = namespace(state, params);
    let mut following = cluster.following.lock();
    loaded(cluster.service.load_param_rules(ns, rules))?;
    if ns == cluster.app_name {
        following.param = false;
    }
    Ok("success".to_owned())
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
