//! The counts in Redis: one call of an atomic script takes a rule's tokens from its sliding window.
//!
//! A rule's keys share the hash tag `{flowId}`, so that in a Redis Cluster its window, its
//! members and its values' windows live in one slot and one script can touch them all:
//!
//! - `<prefix>:{<flowId>}:window`: the rule's buckets (hash of bucket start → tokens);
//! - `<prefix>:{<flowId>}:value:<value>`: a hot-parameter rule's buckets for one argument value;
//! - `<prefix>:{<flowId>}:members`: the instances that ask for the rule (sorted set by last seen).
//!
//! The script reads Redis's own clock, so instances with skewed clocks count in one window. Every
//! call is bounded by the request timeout; a connection that fails is made again by the next call.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use floodgate_core::cluster::ThresholdType;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{RedisError, Script, ScriptInvocation, Value};
use tokio::sync::OnceCell;

use super::config::{RedisConfig, RedisConfigError};
use crate::lease::{FetchError, Fetcher, Grant, WindowTerms};
use crate::protocol::Param;

/// The script that takes tokens (`acquire.lua`).
const ACQUIRE: &str = include_str!("acquire.lua");
/// The script that refreshes a membership (`heartbeat.lua`).
const HEARTBEAT: &str = include_str!("heartbeat.lua");

/// One connection: to a server (it reconnects on its own), or to a cluster (made at first use).
#[derive(Clone)]
enum Connection {
    Server(ConnectionManager),
    Cluster(std::sync::Arc<ClusterLink>),
}

/// A cluster client and the connection it makes at first use (routed per key slot, one per node).
struct ClusterLink {
    client: ClusterClient,
    connection: OnceCell<ClusterConnection>,
}

impl ClusterLink {
    async fn connection(&self) -> Result<ClusterConnection, RedisError> {
        self.connection
            .get_or_try_init(|| self.client.get_async_connection())
            .await
            .cloned()
    }
}

impl Connection {
    async fn invoke(&self, invocation: &ScriptInvocation<'_>) -> Result<Value, RedisError> {
        match self {
            Connection::Server(manager) => invocation.invoke_async(&mut manager.clone()).await,
            Connection::Cluster(link) => {
                invocation.invoke_async(&mut link.connection().await?).await
            }
        }
    }

    async fn remove_member(&self, key: &str, member: &str) -> Result<(), RedisError> {
        let mut command = redis::cmd("ZREM");
        command.arg(key).arg(member);
        match self {
            Connection::Server(manager) => command.exec_async(&mut manager.clone()).await,
            Connection::Cluster(link) => command.exec_async(&mut link.connection().await?).await,
        }
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Connection::Server(_) => "Server",
            Connection::Cluster(..) => "Cluster",
        })
    }
}

/// Counts cluster rules in Redis. Cheap to share: every call picks the next pooled connection.
#[derive(Debug)]
pub struct RedisCounter {
    connections: Vec<Connection>,
    next: AtomicUsize,
    config: RedisConfig,
    acquire: Script,
    heartbeat: Script,
    commands: AtomicU64,
}

impl RedisCounter {
    /// A counter for `config`. It connects at its first call, so an instance starts while Redis is
    /// down (its rules are checked locally until Redis answers). Needs a Tokio runtime.
    pub fn new(config: RedisConfig) -> Result<Self, RedisConfigError> {
        config.check()?;
        let node_error = |index, error: RedisError| RedisConfigError::Node {
            index,
            reason: error.to_string(),
        };
        let connections = if config.cluster {
            let client = ClusterClient::builder(config.nodes.iter().map(String::as_str))
                .connection_timeout(config.connect_timeout)
                .response_timeout(config.request_timeout)
                .build()
                .map_err(|e| node_error(0, e))?;
            vec![Connection::Cluster(std::sync::Arc::new(ClusterLink {
                client,
                connection: OnceCell::new(),
            }))]
        } else {
            let client =
                redis::Client::open(config.nodes[0].as_str()).map_err(|e| node_error(0, e))?;
            let manager = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(config.connect_timeout))
                .set_response_timeout(Some(config.request_timeout));
            (0..config.pool_size)
                .map(|_| {
                    ConnectionManager::new_lazy_with_config(client.clone(), manager.clone())
                        .map(Connection::Server)
                        .map_err(|e| node_error(0, e))
                })
                .collect::<Result<_, _>>()?
        };
        Ok(RedisCounter {
            connections,
            next: AtomicUsize::new(0),
            config,
            acquire: Script::new(ACQUIRE),
            heartbeat: Script::new(HEARTBEAT),
            commands: AtomicU64::new(0),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RedisConfig {
        &self.config
    }

    /// Redis calls made so far (a script that Redis had not cached costs one more).
    pub fn commands(&self) -> u64 {
        self.commands.load(Ordering::Relaxed)
    }

    /// Takes up to `want` tokens of the rule's window (what is free, when less is), and marks this
    /// instance a member of the rule.
    pub async fn acquire(&self, terms: &WindowTerms, want: u32) -> Result<Grant, FetchError> {
        let window = [(self.key(terms.flow_id, "window"), terms.count)];
        let instance = &self.config.instance;
        self.take(terms, instance, &window, want, true).await
    }

    /// Takes up to `want` tokens of one argument value's window of a hot-parameter rule (what is
    /// free, when less is), and marks this instance a member of the rule.
    pub async fn acquire_value(
        &self,
        terms: &WindowTerms,
        value: &Param,
        want: u32,
    ) -> Result<Grant, FetchError> {
        let window = [(
            self.value_key(terms.flow_id, &value.window_key()),
            terms.count,
        )];
        let instance = &self.config.instance;
        self.take(terms, instance, &window, want, true).await
    }

    /// Takes `want` tokens of the rule's window for `member`, or none when fewer are free (a
    /// token server asking for one of its clients: the client counts as the member).
    pub async fn acquire_all(
        &self,
        terms: &WindowTerms,
        member: &str,
        want: u32,
    ) -> Result<Grant, FetchError> {
        let window = [(self.key(terms.flow_id, "window"), terms.count)];
        self.take(terms, member, &window, want, false).await
    }

    /// Takes `want` tokens of each argument value's window of a hot-parameter rule for `member`, or
    /// none when one of them has fewer free. Each value is `(its window key, its count)`
    /// ([`Param::window_key`]): values of one rule with the same key share a window.
    pub async fn acquire_values(
        &self,
        terms: &WindowTerms,
        member: &str,
        values: &[(String, f64)],
        want: u32,
    ) -> Result<Grant, FetchError> {
        let windows: Vec<(String, f64)> = values
            .iter()
            .map(|(value, count)| (self.value_key(terms.flow_id, value), *count))
            .collect();
        self.take(terms, member, &windows, want, false).await
    }

    async fn take(
        &self,
        terms: &WindowTerms,
        member: &str,
        windows: &[(String, f64)],
        want: u32,
        partial: bool,
    ) -> Result<Grant, FetchError> {
        let mut invocation = self.acquire.prepare_invoke();
        invocation
            .key(self.key(terms.flow_id, "members"))
            .arg(terms.bucket_ms())
            .arg(terms.sample_count.max(1))
            .arg(u8::from(terms.threshold_type == ThresholdType::Global))
            .arg(want)
            .arg(member)
            .arg(self.member_ttl_ms())
            .arg(u8::from(partial));
        for (key, count) in windows {
            invocation.key(key).arg(*count);
        }
        let reply = self.call(self.connection().invoke(&invocation)).await?;
        read_grant(reply)
    }

    /// Marks this instance a member of the rule `flow_id`, seen now; returns the rule's members.
    pub async fn heartbeat(&self, flow_id: i64) -> Result<u32, FetchError> {
        let mut invocation = self.heartbeat.prepare_invoke();
        invocation
            .key(self.key(flow_id, "members"))
            .arg(&self.config.instance)
            .arg(self.member_ttl_ms());
        match self.call(self.connection().invoke(&invocation)).await? {
            Value::Int(members) => Ok(u32::try_from(members).unwrap_or(0)),
            other => Err(FetchError::Reply(other)),
        }
    }

    /// Takes this instance out of the rule `flow_id`'s members.
    pub async fn leave(&self, flow_id: i64) -> Result<(), FetchError> {
        let key = self.key(flow_id, "members");
        self.call(self.connection().remove_member(&key, &self.config.instance))
            .await
    }

    /// The key `part` of the rule `flow_id`, under the rule's hash tag.
    fn key(&self, flow_id: i64, part: &str) -> String {
        format!("{}:{{{flow_id}}}:{part}", self.config.key_prefix)
    }

    /// The key of the window of the value with window key `value` of the rule `flow_id`.
    fn value_key(&self, flow_id: i64, value: &str) -> String {
        self.key(flow_id, &format!("value:{value}"))
    }

    fn member_ttl_ms(&self) -> u64 {
        u64::try_from(self.config.member_ttl.as_millis()).unwrap_or(u64::MAX)
    }

    fn connection(&self) -> &Connection {
        let at = self.next.fetch_add(1, Ordering::Relaxed) % self.connections.len();
        &self.connections[at]
    }

    /// Runs one Redis call within the request timeout.
    async fn call<T>(
        &self,
        call: impl Future<Output = Result<T, RedisError>>,
    ) -> Result<T, FetchError> {
        self.commands.fetch_add(1, Ordering::Relaxed);
        let timeout = self.config.request_timeout;
        match tokio::time::timeout(timeout, call).await {
            Ok(result) => Ok(result?),
            Err(_) => Err(FetchError::Timeout(timeout)),
        }
    }
}

/// Reads the script's `{granted, left, free in ms, members}`.
fn read_grant(reply: Value) -> Result<Grant, FetchError> {
    let Value::Array(items) = &reply else {
        return Err(FetchError::Reply(reply));
    };
    let numbers: Vec<i64> = items
        .iter()
        .filter_map(|item| match item {
            Value::Int(n) => Some(*n),
            _ => None,
        })
        .collect();
    let [granted, remaining, free_in_ms, members] = numbers[..] else {
        return Err(FetchError::Reply(reply));
    };
    Ok(Grant {
        granted: u32::try_from(granted).unwrap_or(0),
        remaining,
        free_in_ms: u64::try_from(free_in_ms).unwrap_or(0),
        members: u32::try_from(members).unwrap_or(0),
    })
}

/// A lease's fetches take what is free, up to what they ask for, from the rule's window or its
/// value's; this instance is a member of every rule it asks for, refreshed in the background.
impl Fetcher for RedisCounter {
    async fn fetch(
        &self,
        terms: &WindowTerms,
        value: Option<&Param>,
        want: u32,
    ) -> Result<Grant, FetchError> {
        match value {
            None => self.acquire(terms, want).await,
            Some(value) => self.acquire_value(terms, value, want).await,
        }
    }

    async fn refresh(&self, flow_id: i64) -> Result<(), FetchError> {
        self.heartbeat(flow_id).await.map(drop)
    }

    async fn leave(&self, flow_id: i64) -> Result<(), FetchError> {
        RedisCounter::leave(self, flow_id).await
    }

    fn calls(&self) -> u64 {
        self.commands()
    }
}
