//! The agents' answers about cluster flow control, read leniently: fields not named here are
//! ignored, an optional field of the wrong type reads as missing, and only an answer that is not a
//! JSON object (or a mode that is not a number) is refused, with what was wrong.
//!
//! - `getClusterMode`: `{"mode": -1|0|1, "lastModified", "clientAvailable", "serverAvailable"}`, and
//!   from Floodgate agents `"backend"` (`none`, `server`, `client` or `redis`) with, for Redis,
//!   `"redis": {"nodes": [..], "cluster": bool, "instance": ".."}`. A Java Sentinel client sends no
//!   backend: it is the mode's (−1 none, 0 client, 1 server).
//! - `cluster/client/fetchConfig`: `{"serverHost", "serverPort", "clientState": 0|1|2, "requestTimeout"}`.
//! - `cluster/server/info`: `{"port", "connection": [{"namespace", "connectionSet": [{"address",
//!   "host"}], "connectedCount"}], "embedded", ..}`.
//! - `cluster/server/metricList`: `[{"flowId", "resourceName", "passQps", "blockQps", ..}]`.

use serde_json::{Map, Value};

/// The most of a list (clients of a namespace, nodes, figures) an answer is read for.
pub const MAX_ITEMS: usize = 1000;

/// Why an answer could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// The answer is not JSON.
    #[error("bad answer: not JSON ({0})")]
    NotJson(String),
    /// The answer is JSON of another shape.
    #[error("bad answer: {0}")]
    Shape(&'static str),
}

/// Where a machine's cluster rules get their tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// Nowhere: the machine is in no cluster (its cluster rules fall back to local checks).
    None,
    /// Its own embedded token server.
    Server,
    /// A token server it is a client of.
    Client,
    /// Counters in Redis.
    Redis(RedisBackend),
    /// A backend this dashboard does not know, as the agent named it.
    Other {
        /// The agent's name for it.
        name: String,
    },
}

impl Backend {
    /// The backend's name, as agents send it.
    pub fn name(&self) -> &str {
        match self {
            Backend::None => "none",
            Backend::Server => "server",
            Backend::Client => "client",
            Backend::Redis(_) => "redis",
            Backend::Other { name } => name,
        }
    }
}

/// The Redis a machine counts in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisBackend {
    /// Its addresses (`redis://host:port`), any password left out.
    pub nodes: Vec<String>,
    /// Whether they are the seed nodes of a Redis Cluster.
    pub cluster: bool,
    /// The machine's name among the instances counting a rule.
    pub instance: Option<String>,
}

/// A machine's answer to `getClusterMode`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterMode {
    /// −1 not started, 0 client, 1 server (or what the machine said).
    pub mode: i64,
    /// When the mode last changed (ms since the epoch), if ever.
    pub last_modified: Option<i64>,
    /// Whether the machine could be a token client.
    pub client_available: Option<bool>,
    /// Whether the machine could be a token server.
    pub server_available: Option<bool>,
    /// Where its tokens come from.
    pub backend: Backend,
    /// Whether the machine named its backend (a Floodgate agent) or it was read from the mode.
    pub backend_reported: bool,
}

/// A token client's settings and state (`cluster/client/fetchConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// The token server's host.
    pub server_host: Option<String>,
    /// The token server's port.
    pub server_port: Option<i64>,
    /// 0 off, 1 pending (connecting), 2 started.
    pub client_state: Option<i64>,
    /// How long a token request may take (ms).
    pub request_timeout: Option<i64>,
}

impl ClientConfig {
    /// The client's state in words.
    pub fn state_name(&self) -> &'static str {
        match self.client_state {
            Some(0) => "off",
            Some(1) => "pending",
            Some(2) => "started",
            Some(_) => "unknown",
            None => "not reported",
        }
    }
}

/// The clients of one namespace of a token server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    /// The namespace (by default, the clients' app name).
    pub name: String,
    /// How many clients are connected.
    pub connected: i64,
    /// Their addresses (at most [`MAX_ITEMS`]).
    pub clients: Vec<String>,
}

/// An embedded token server's state (`cluster/server/info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The port it serves tokens on.
    pub port: Option<i64>,
    /// Whether it runs inside the app (embedded) or alone.
    pub embedded: Option<bool>,
    /// Its namespaces and their clients.
    pub namespaces: Vec<Namespace>,
}

/// A token server's figures of one flow id (`cluster/server/metricList`).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowMetric {
    /// The rule's flow id.
    pub flow_id: i64,
    /// The rule's resource.
    pub resource: String,
    /// Tokens granted per second.
    pub pass_qps: f64,
    /// Tokens refused per second.
    pub block_qps: f64,
}

fn parse(text: &str) -> Result<Value, AnswerError> {
    serde_json::from_str(text.trim()).map_err(|e| AnswerError::NotJson(e.to_string()))
}

fn object(v: &Value) -> Result<&Map<String, Value>, AnswerError> {
    v.as_object().ok_or(AnswerError::Shape("not a JSON object"))
}

fn int(m: &Map<String, Value>, key: &str) -> Option<i64> {
    let v = m.get(key)?;
    v.as_i64()
        .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
        // fastjson writes some longs as strings.
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

fn float(m: &Map<String, Value>, key: &str) -> Option<f64> {
    let v = m.get(key)?;
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .filter(|f: &f64| f.is_finite())
}

fn string(m: &Map<String, Value>, key: &str) -> Option<String> {
    match m.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn boolean(m: &Map<String, Value>, key: &str) -> Option<bool> {
    m.get(key)?.as_bool()
}

/// `url` with any user and password left out: `redis://:secret@h:6379` → `redis://…@h:6379`.
fn without_credentials(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let rest = match rest[..authority_end].rfind('@') {
        Some(at) => format!("…{}", &rest[at..]),
        None => rest.to_owned(),
    };
    match scheme {
        Some(scheme) => format!("{scheme}://{rest}"),
        None => rest,
    }
}

fn redis_backend(v: Option<&Value>) -> RedisBackend {
    let Some(m) = v.and_then(Value::as_object) else {
        return RedisBackend::default();
    };
    RedisBackend {
        nodes: m
            .get("nodes")
            .and_then(Value::as_array)
            .map(|nodes| {
                nodes
                    .iter()
                    .filter_map(Value::as_str)
                    .take(MAX_ITEMS)
                    .map(without_credentials)
                    .collect()
            })
            .unwrap_or_default(),
        cluster: boolean(m, "cluster").unwrap_or(false),
        instance: string(m, "instance"),
    }
}

/// Reads an answer to `getClusterMode`.
pub fn read_cluster_mode(text: &str) -> Result<ClusterMode, AnswerError> {
    let v = parse(text)?;
    let m = object(&v)?;
    let mode = int(m, "mode").ok_or(AnswerError::Shape("`mode` is missing or not a number"))?;
    let reported = m.get("backend").and_then(Value::as_str);
    let backend = match reported {
        Some("none") => Backend::None,
        Some("server") => Backend::Server,
        Some("client") => Backend::Client,
        Some("redis") => Backend::Redis(redis_backend(m.get("redis"))),
        Some(other) => Backend::Other {
            name: other.to_owned(),
        },
        None => match mode {
            0 => Backend::Client,
            1 => Backend::Server,
            -1 => Backend::None,
            other => Backend::Other {
                name: format!("mode {other}"),
            },
        },
    };
    Ok(ClusterMode {
        mode,
        last_modified: int(m, "lastModified").filter(|ms| *ms > 0),
        client_available: boolean(m, "clientAvailable"),
        server_available: boolean(m, "serverAvailable"),
        backend,
        backend_reported: reported.is_some(),
    })
}

/// Reads an answer to `cluster/client/fetchConfig`.
pub fn read_client_config(text: &str) -> Result<ClientConfig, AnswerError> {
    let v = parse(text)?;
    let m = object(&v)?;
    Ok(ClientConfig {
        server_host: string(m, "serverHost").filter(|h| !h.is_empty()),
        server_port: int(m, "serverPort"),
        client_state: int(m, "clientState"),
        request_timeout: int(m, "requestTimeout"),
    })
}

/// Reads an answer to `cluster/server/info`.
pub fn read_server_info(text: &str) -> Result<ServerInfo, AnswerError> {
    let v = parse(text)?;
    let m = object(&v)?;
    let namespaces = m
        .get("connection")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_object)
                .take(MAX_ITEMS)
                .map(|c| {
                    let clients: Vec<String> = c
                        .get("connectionSet")
                        .and_then(Value::as_array)
                        .map(|set| {
                            set.iter()
                                .filter_map(|client| match client {
                                    Value::Object(o) => {
                                        string(o, "address").or_else(|| string(o, "host"))
                                    }
                                    Value::String(s) => Some(s.clone()),
                                    _ => None,
                                })
                                .take(MAX_ITEMS)
                                .collect()
                        })
                        .unwrap_or_default();
                    Namespace {
                        name: string(c, "namespace").unwrap_or_default(),
                        connected: int(c, "connectedCount")
                            .unwrap_or(i64::try_from(clients.len()).unwrap_or(i64::MAX)),
                        clients,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(ServerInfo {
        port: int(m, "port"),
        embedded: boolean(m, "embedded"),
        namespaces,
    })
}

/// Reads an answer to `cluster/server/metricList` (figures without a flow id are left out).
pub fn read_metric_list(text: &str) -> Result<Vec<FlowMetric>, AnswerError> {
    let v = parse(text)?;
    let list = v.as_array().ok_or(AnswerError::Shape("not a JSON array"))?;
    Ok(list
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|m| {
            Some(FlowMetric {
                flow_id: int(m, "flowId")?,
                resource: string(m, "resourceName").unwrap_or_default(),
                pass_qps: float(m, "passQps").unwrap_or(0.0),
                block_qps: float(m, "blockQps").unwrap_or(0.0),
            })
        })
        .take(MAX_ITEMS)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_java_client_names_no_backend_and_its_mode_says_it() {
        for (mode, backend) in [
            (-1, Backend::None),
            (0, Backend::Client),
            (1, Backend::Server),
        ] {
            let text = format!(
                r#"{{"mode":{mode},"lastModified":1700000000000,"clientAvailable":true,"serverAvailable":true}}"#
            );
            let read = read_cluster_mode(&text).unwrap();
            assert_eq!(read.backend, backend);
            assert!(!read.backend_reported);
            assert_eq!(read.last_modified, Some(1_700_000_000_000));
        }
    }

    #[test]
    fn a_floodgate_agent_names_its_backend_and_unknown_fields_are_ignored() {
        let read = read_cluster_mode(
            r#"{"mode":0,"lastModified":-1,"clientAvailable":true,"serverAvailable":true,
                "backend":"redis","future":{"x":1},
                "redis":{"nodes":["redis://10.0.0.1:6379","redis://:pw@10.0.0.2:6379/0",7],
                         "cluster":true,"instance":"orders-1","more":[]}}"#,
        )
        .unwrap();
        assert_eq!(read.last_modified, None, "−1: never changed");
        assert_eq!(
            read.backend,
            Backend::Redis(RedisBackend {
                nodes: vec![
                    "redis://10.0.0.1:6379".into(),
                    "redis://…@10.0.0.2:6379/0".into()
                ],
                cluster: true,
                instance: Some("orders-1".into()),
            })
        );
        let other = read_cluster_mode(r#"{"mode":1,"backend":"etcd"}"#).unwrap();
        assert_eq!(other.backend.name(), "etcd");
    }

    #[test]
    fn garbage_is_refused_with_what_was_wrong() {
        assert!(matches!(
            read_cluster_mode("<html>"),
            Err(AnswerError::NotJson(_))
        ));
        assert_eq!(
            read_cluster_mode("[1]"),
            Err(AnswerError::Shape("not a JSON object"))
        );
        assert_eq!(
            read_cluster_mode(r#"{"mode":"server"}"#),
            Err(AnswerError::Shape("`mode` is missing or not a number"))
        );
        assert!(read_metric_list("{}").is_err());
    }

    #[test]
    fn client_config_server_info_and_metrics() {
        let c = read_client_config(
            r#"{"serverHost":"10.0.0.9","serverPort":18730,"clientState":2,"requestTimeout":20}"#,
        )
        .unwrap();
        assert_eq!(
            (c.server_host.as_deref(), c.server_port, c.state_name()),
            (Some("10.0.0.9"), Some(18730), "started")
        );
        // The transport's own shape (crates/transport/src/command/cluster.rs).
        let info = read_server_info(
            r#"{"port":18730,"connection":[{"namespace":"orders","connectionSet":
                [{"address":"10.0.0.2:50123","host":"10.0.0.2"}],"connectedCount":1}],
                "requestLimitData":[],"transport":{"port":18730,"idleSeconds":600},
                "namespaceSet":["orders"],"embedded":true,"appName":"orders"}"#,
        )
        .unwrap();
        assert_eq!(info.port, Some(18730));
        assert_eq!(
            info.namespaces,
            [Namespace {
                name: "orders".into(),
                connected: 1,
                clients: vec!["10.0.0.2:50123".into()],
            }]
        );
        let metrics = read_metric_list(
            r#"[{"flowId":7,"resourceName":"GET:/a","passQps":2.0,"blockQps":1,"topParams":{}},
                {"resourceName":"no id"}]"#,
        )
        .unwrap();
        assert_eq!(metrics.len(), 1);
        assert_eq!((metrics[0].flow_id, metrics[0].pass_qps), (7, 2.0));
    }
}
