//! The agent: binds the command API, loads and watches rule files, collects metrics every second and
//! sends heartbeats — on its own small runtime thread, so it works whether or not the app runs tokio.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use floodgate_core::{Floodgate, RuleType};
use thiserror::Error;
use tokio::sync::oneshot;

use crate::admission::Admission;
use crate::cidr::Cidr;
use crate::command::{AuthFailures, CommandState, LogThrottle, app, metrics_app};
use crate::config::{AgentConfig, ConfigError};
use crate::heartbeat::Heartbeat;
use crate::host::{HostInfo, ReportedIp};
use crate::metric_log::MetricLog;
use crate::metric_store::MetricStore;
use crate::rule_file::RuleFiles;
use crate::serve::{BACKLOG, serve};

/// How many ports past the configured one a port search tries.
const PORT_SEARCH_SPAN: u16 = 32;

/// The agent could not start.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AgentError {
    /// Binding a non-loopback address needs a token: the command API changes rules.
    #[error(
        "refusing to expose the command API on {0} without a token (set one, or bind 127.0.0.1)"
    )]
    InsecureBind(IpAddr),
    /// The address could not be bound.
    #[error("cannot bind the command API on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A port search found no port it could bind.
    #[error(
        "cannot bind the command API on {addr}, nor on ports {} to {last_port} (port search): {source}",
        addr.port().saturating_add(1)
    )]
    BindSearch {
        /// The address asked for.
        addr: SocketAddr,
        /// The last port tried.
        last_port: u16,
        /// Why the last port tried could not be bound.
        source: std::io::Error,
    },
    /// The agent's runtime thread could not start.
    #[error("cannot start the agent runtime: {0}")]
    Runtime(std::io::Error),
    /// The rule files could not be watched.
    #[error("cannot watch the rule files: {0}")]
    Watch(#[from] notify::Error),
    /// The metric log directory could not be used.
    #[error("cannot use the metric log directory: {0}")]
    MetricLog(std::io::Error),
    /// The Redis settings for cluster rules cannot work.
    #[cfg(feature = "cluster")]
    #[error("invalid cluster Redis setting: {0}")]
    ClusterRedis(#[from] floodgate_cluster::redis::RedisConfigError),
    /// A setting was out of range.
    #[error("invalid agent setting `{field}`: {reason}")]
    Invalid {
        /// The setting.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// The shortest token accepted (a blank one would let every request in).
const MIN_TOKEN_LEN: usize = 8;
/// The longest heartbeat interval accepted (its back-off multiplies it by up to 8).
const MAX_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// A running agent. Dropping it (or [`Agent::shutdown`]) stops it.
#[derive(Debug)]
pub struct Agent {
    addr: SocketAddr,
    prometheus_addr: Option<SocketAddr>,
    fg: Floodgate,
    metrics: Arc<MetricStore>,
    metric_log: Option<Arc<MetricLog>>,
    rule_files: Arc<RuleFiles>,
    commands: Arc<CommandState>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    _watcher: Option<notify::RecommendedWatcher>,
}

/// Configures an [`Agent`].
#[derive(Debug, Clone)]
pub struct AgentBuilder {
    fg: Floodgate,
    config: AgentConfig,
    /// The Redis the engine's cluster rules count in.
    #[cfg(feature = "cluster")]
    cluster_redis: Option<floodgate_cluster::redis::RedisConfig>,
}

impl Agent {
    /// An agent for `fg` with the default configuration (loopback, port 8719, no dashboard).
    pub fn builder(fg: Floodgate) -> AgentBuilder {
        AgentBuilder {
            fg,
            config: AgentConfig::default(),
            #[cfg(feature = "cluster")]
            cluster_redis: None,
        }
    }

    /// The address the command API listens on (the port actually in use).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address of the Prometheus port, when one was configured
    /// ([`AgentBuilder::prometheus_port`]); `/metrics` on [`local_addr`](Self::local_addr) serves the same.
    pub fn prometheus_addr(&self) -> Option<SocketAddr> {
        self.prometheus_addr
    }

    /// The command API's port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The rule files, for their load status.
    pub fn rule_files(&self) -> &RuleFiles {
        &self.rule_files
    }

    /// The command API as a router over this agent's state: what its port answers, for serving the
    /// commands from the application's own server (under its own authentication and limits) or for
    /// driving them without a socket. Requests it gets carry no client address unless the server
    /// adds an `axum::extract::ConnectInfo<SocketAddr>` extension, and without one an address
    /// allow-list ([`AgentBuilder::tokenless_from`]) lets nobody in; the token, when one is
    /// configured, is required as on the port. Serve it on a tokio runtime with its timer enabled (body
    /// deadlines) and its blocking pool (rule loads).
    pub fn router(&self) -> axum::Router {
        app(self.commands.clone())
    }

    /// Collects the seconds finished since the last collection now, into the `metric` command's store and
    /// the Prometheus totals (the agent also does it every second).
    pub fn collect_metrics(&self) {
        collect(&self.fg, &self.metrics, self.metric_log.as_deref());
    }

    /// Stops the command API and the background tasks, and waits for them: requests in progress get 1 s,
    /// then their connections are closed.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.rule_files.stop();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// A listening socket on `addr` with a backlog of [`BACKLOG`] (std's is 128), reusing the address as
/// std's listeners do; in a runtime's context.
fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// The agent's runtime while `start` may still fail: dropped without waiting for its threads, so
/// that a start that fails in an async context returns its error rather than panicking there
/// (`a_start_that_fails_in_an_async_context_returns_its_error`).
struct StartingRuntime(Option<tokio::runtime::Runtime>);

impl StartingRuntime {
    fn into_inner(mut self) -> tokio::runtime::Runtime {
        self.0.take().expect("the runtime is taken once")
    }
}

impl std::ops::Deref for StartingRuntime {
    type Target = tokio::runtime::Runtime;

    fn deref(&self) -> &Self::Target {
        self.0.as_ref().expect("the runtime is taken once")
    }
}

impl Drop for StartingRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

fn collect(fg: &Floodgate, metrics: &MetricStore, log: Option<&MetricLog>) {
    // Appended under the store's lock: a collection that started later cannot write its (newer) lines
    // first, which made the older ones look out of order and dropped them from the file.
    metrics.collect_then(fg, |lines| {
        if let Some(log) = log {
            if let Err(e) = log.append(lines) {
                tracing::warn!(error = %e, "metric log write failed");
            }
        }
    });
}

impl AgentBuilder {
    /// An agent configured from the environment (see [`AgentConfig`]).
    pub fn from_env(fg: Floodgate) -> Result<Self, ConfigError> {
        Ok(AgentBuilder {
            fg,
            config: AgentConfig::from_env()?,
            #[cfg(feature = "cluster")]
            cluster_redis: None,
        })
    }

    /// Counts the engine's cluster rules in Redis (feature `cluster`): the agent starts a
    /// [`RedisTokenService`](floodgate_cluster::redis::RedisTokenService) on its runtime and the
    /// application starts in cluster mode 0 (a client, of Redis). `setClusterMode?mode=1` can still
    /// make it a token server, and `mode=0` returns to Redis.
    #[cfg(feature = "cluster")]
    pub fn cluster_redis(mut self, redis: floodgate_cluster::redis::RedisConfig) -> Self {
        self.cluster_redis = Some(redis);
        self
    }

    /// Replaces the whole configuration.
    pub fn config(mut self, config: AgentConfig) -> Self {
        self.config = config;
        self
    }

    /// The application name.
    pub fn app_name(mut self, name: impl Into<String>) -> Self {
        self.config.app_name = name.into();
        self
    }

    /// The address to bind (default `127.0.0.1`; any other needs a [`token`](Self::token)).
    pub fn bind(mut self, addr: IpAddr) -> Self {
        self.config.bind_addr = addr;
        self
    }

    /// The command port (default 8719; 0 picks a free port).
    pub fn port(mut self, port: u16) -> Self {
        self.config.port = port;
        self
    }

    /// Tries the following ports when the configured one is busy.
    pub fn port_search(mut self, on: bool) -> Self {
        self.config.port_search = on;
        self
    }

    /// Adds a dashboard (`host:port`, or `http://host:port`) to send heartbeats to. `https://` is refused
    /// by [`start`](Self::start): heartbeats go over plain HTTP.
    pub fn dashboard(mut self, addr: impl Into<String>) -> Self {
        self.config.dashboards.push(addr.into());
        self
    }

    /// Time between heartbeats (default 10 s; more than zero and at most a day, or
    /// [`start`](Self::start) refuses it).
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        self.config.heartbeat_interval = interval;
        self
    }

    /// The dashboard's path heartbeats are posted to (default `/registry/machine`, Sentinel's); a URL
    /// path (a `/` is put in front if it has none), or [`start`](Self::start) refuses it.
    pub fn heartbeat_path(mut self, path: impl Into<String>) -> Self {
        self.config.heartbeat_path = path.into();
        self
    }

    /// The IP to report instead of the detected one (Docker, NAT).
    pub fn heartbeat_ip(mut self, ip: impl Into<String>) -> Self {
        self.config.heartbeat_ip = Some(ip.into());
        self
    }

    /// A shared token that every command must carry (header `X-Floodgate-Token`, `Authorization: Bearer`,
    /// or parameter `token`); also sent with heartbeats. `/metrics` needs it too: configure Prometheus to
    /// send it (`authorization: { credentials: <token> }` in the scrape config). At least 8 characters,
    /// without surrounding spaces, or [`start`](Self::start) refuses it.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.config.token = Some(token.into());
        self
    }

    /// Lets peers in `network` call the command API without the token (call once per network; none
    /// by default). For Sentinel's Java dashboard, which cannot send a token, managing an agent that
    /// is not on its own machine; everyone else still needs the token, which must be set
    /// ([`start`](Self::start) refuses this without one). Requests from these peers are still refused
    /// when they look like a web page's, and must address the agent by IP, `localhost`, the machine's
    /// name or an [allowed host](AgentConfig::allowed_hosts). Their connections have places of their
    /// own among those the agent keeps for connections that have not had a request let in yet:
    /// strangers on other addresses cannot take them.
    ///
    /// **The risk:** anyone who can send from an address in `network` — another process or user on
    /// the dashboard's machine, a container sharing its address, a host that takes over or spoofs
    /// the address on your network — can read and change this application's rules, and turn its
    /// protection off, without the token. List the dashboard's own address (`/32`, `/128`), not its
    /// subnet, and only on a network you trust.
    ///
    /// ```no_run
    /// # use floodgate_transport::Agent;
    /// # let fg = floodgate_core::Floodgate::default();
    /// let agent = Agent::builder(fg)
    ///     .bind("0.0.0.0".parse()?)
    ///     .token("a-long-shared-secret")
    ///     .tokenless_from("10.0.0.5/32".parse()?) // the Java dashboard's host
    ///     .start()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tokenless_from(mut self, network: Cidr) -> Self {
        self.config.tokenless_from.push(network);
        self
    }

    /// A rule file for `rule_type`.
    pub fn rule_file(mut self, rule_type: RuleType, path: impl Into<PathBuf>) -> Self {
        self.config.rule_files.insert(rule_type.into(), path.into());
        self
    }

    /// How long the `metric` command's per-second lines are kept (default 5 minutes).
    pub fn metric_retention(mut self, retention: Duration) -> Self {
        self.config.metric_retention = retention;
        self
    }

    /// Writes Sentinel-format metric log files into `dir`.
    pub fn metric_log_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.metric_log_dir = Some(dir.into());
        self
    }

    /// Also serves the Prometheus exposition (`GET /metrics`) on `port` of the bind address (0 picks a
    /// free one; see [`Agent::prometheus_addr`]). The token applies there too. Without it, `/metrics` is
    /// served on the command port only.
    pub fn prometheus_port(mut self, port: u16) -> Self {
        self.config.prometheus_port = Some(port);
        self
    }

    /// The largest request body accepted (default 1 MiB).
    pub fn max_body_bytes(mut self, max: usize) -> Self {
        self.config.max_body_bytes = max;
        self
    }

    /// Binds the command port (searching the next ones if asked to), with a backlog of
    /// [`BACKLOG`]; in the runtime's context.
    fn bind_listener(&self) -> Result<tokio::net::TcpListener, AgentError> {
        let c = &self.config;
        let asked = SocketAddr::new(c.bind_addr, c.port);
        let span = if c.port_search && c.port != 0 {
            PORT_SEARCH_SPAN
        } else {
            1
        };
        let mut last = None;
        for port in (c.port..=u16::MAX).take(usize::from(span)) {
            match listen(SocketAddr::new(c.bind_addr, port)) {
                Ok(listener) => return Ok(listener),
                Err(source) => last = Some((port, source)),
            }
        }
        Err(match last {
            Some((port, source)) if port != c.port => AgentError::BindSearch {
                addr: asked,
                last_port: port,
                source,
            },
            Some((_, source)) => AgentError::Bind {
                addr: asked,
                source,
            },
            None => AgentError::Bind {
                addr: asked,
                source: std::io::Error::other("no port tried"),
            },
        })
    }

    /// Starts the agent: binds, loads the rule files, and runs the API, metrics and heartbeats. Refuses a
    /// non-loopback address without a token, a token shorter than 8 characters or padded, a heartbeat
    /// interval of zero or over a day, `https://` dashboards and a heartbeat IP that is not an IP.  Also refuses [`tokenless_from`](Self::tokenless_from)
    /// without a token.
    ///
    /// The command API keeps a dashboard's calls getting through while strangers hold connections
    /// open: a connection must have a request let in (its token checked, or without a token, read
    /// whole) within 3 s; until then it has one of 32 places per class of peer (loopback, remote),
    /// where the oldest gives way to a newcomer; after, one of 64 established places strangers cannot
    /// take. A further request's headers must come within 10 s, a body within 10 s, and a connection
    /// whose client reads no answer for 10 s is closed. Rule loads run off the agent's thread, one at
    /// a time.
    pub fn start(self) -> Result<Agent, AgentError> {
        let c = &self.config;
        if c.token
            .as_deref()
            .is_some_and(|t| t.trim().len() < MIN_TOKEN_LEN || t.trim() != t)
        {
            return Err(AgentError::Invalid {
                field: "token",
                reason: "must be at least 8 characters, without surrounding spaces",
            });
        }
        let Some(heartbeat_path) = crate::config::heartbeat_path(&c.heartbeat_path) else {
            return Err(AgentError::Invalid {
                field: "heartbeat_path",
                reason: "must be a URL path",
            });
        };
        if c.heartbeat_interval.is_zero() || c.heartbeat_interval > MAX_HEARTBEAT_INTERVAL {
            return Err(AgentError::Invalid {
                field: "heartbeat_interval",
                reason: "must be more than zero and at most a day",
            });
        }
        if c.dashboards
            .iter()
            .any(|d| d.trim().to_ascii_lowercase().starts_with("https://"))
        {
            // The heartbeat client speaks plain HTTP: every heartbeat would fail, quietly.
            return Err(AgentError::Invalid {
                field: "dashboards",
                reason: "https:// dashboards are not supported (heartbeats are sent over plain HTTP)",
            });
        }
        if c.heartbeat_ip
            .as_deref()
            .is_some_and(|ip| ip.parse::<IpAddr>().is_err())
        {
            // The dashboard calls the agent back there, and refuses a name.
            return Err(AgentError::Invalid {
                field: "heartbeat_ip",
                reason: "must be an IP address",
            });
        }
        if !c.tokenless_from.is_empty() && c.token.is_none() {
            return Err(AgentError::Invalid {
                field: "tokenless_from",
                reason: "needs a token (without one, every client may call without it)",
            });
        }
        if !c.bind_addr.is_loopback() && c.token.is_none() {
            return Err(AgentError::InsecureBind(c.bind_addr));
        }
        // Before the rule files load: a start that fails changes no rule.
        #[cfg(feature = "cluster")]
        if let Some(redis) = &self.cluster_redis {
            redis.check()?;
        }
        let runtime = StartingRuntime(Some(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(AgentError::Runtime)?,
        ));
        // Bound in the runtime's context (tokio's sockets set the backlog), so that a failure is
        // `start`'s error, not a silent exit of the agent thread after "listening" was reported.
        let (listener, prometheus_listener) = {
            let _runtime = runtime.enter();
            let listener = self.bind_listener()?;
            let prometheus = match c.prometheus_port {
                Some(port) => {
                    let addr = SocketAddr::new(c.bind_addr, port);
                    Some(listen(addr).map_err(|source| AgentError::Bind { addr, source })?)
                }
                None => None,
            };
            (listener, prometheus)
        };
        let addr = listener.local_addr().map_err(AgentError::Runtime)?;
        let prometheus_addr = match &prometheus_listener {
            Some(l) => Some(l.local_addr().map_err(AgentError::Runtime)?),
            None => None,
        };
        let metric_log = match &c.metric_log_dir {
            Some(dir) => Some(Arc::new(
                MetricLog::new(dir, &c.app_name).map_err(AgentError::MetricLog)?,
            )),
            None => None,
        };
        #[cfg(feature = "cluster")]
        let cluster = crate::command::ClusterControl::new(
            &self.fg,
            c.bind_addr,
            &c.app_name,
            runtime.handle().clone(),
            self.cluster_redis.clone(),
        )?;
        let rule_files = Arc::new(RuleFiles::new(c.rule_files.clone()));
        // Watched first, then loaded: an edit made between the two is not missed.
        let watcher = if c.rule_files.is_empty() {
            None
        } else {
            Some(rule_files.watch(self.fg.clone())?)
        };
        rule_files.load_all(&self.fg);
        // No name lookup here: the heartbeat task resolves dashboards named by host name.
        let host = HostInfo::detect(c.heartbeat_ip.as_deref(), c.bind_addr, &c.dashboards, false);
        host.warn_if_unreachable(c.bind_addr, &c.dashboards);
        let metrics = Arc::new(MetricStore::new(c.metric_retention));
        let reported_ip = ReportedIp::new(&host.ip);
        let state = Arc::new(CommandState {
            fg: self.fg.clone(),
            host: host.clone(),
            reported_ip: reported_ip.clone(),
            port: addr.port(),
            metrics: metrics.clone(),
            token: c.token.clone(),
            rule_files: rule_files.clone(),
            rule_loads: Arc::default(),
            max_body_bytes: c.max_body_bytes,
            allowed_hosts: c.allowed_hosts.clone(),
            tokenless_from: c.tokenless_from.clone(),
            auth_failures: AuthFailures::default(),
            early_refusals: LogThrottle::new(),
            wrong_tokens: LogThrottle::new(),
            lockouts: LogThrottle::new(),
            #[cfg(feature = "cluster")]
            cluster,
        });
        let heartbeat = Heartbeat {
            app: c.app_name.clone(),
            app_type: c.app_type,
            host,
            reported_ip,
            bind: c.bind_addr,
            port: addr.port(),
            path: heartbeat_path,
            token: c.token.clone(),
            dashboards: c.dashboards.clone(),
            interval: c.heartbeat_interval,
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let fg = self.fg.clone();
        let (collector_metrics, collector_log) = (metrics.clone(), metric_log.clone());
        let collector_state = state.clone();
        let commands = state.clone();
        let runtime = runtime.into_inner();
        let thread = std::thread::Builder::new()
            .name("floodgate-agent".into())
            .spawn(move || {
                runtime.block_on(async move {
                    // One admission for both ports: their connections share the places.
                    let admission = Admission::new(state.tokenless_from.clone());
                    let prometheus = prometheus_listener.map(|l| {
                        let app = metrics_app(state.clone());
                        let admission = admission.clone();
                        tokio::spawn(serve(l, app, admission, std::future::pending()))
                    });
                    let clock_fg = fg.clone();
                    let heartbeats = tokio::spawn(heartbeat.run(move || clock_fg.clock().now_ms()));
                    let collector = tokio::spawn(async move {
                        let mut tick = tokio::time::interval(Duration::from_secs(1));
                        loop {
                            tick.tick().await;
                            collect(&fg, &collector_metrics, collector_log.as_deref());
                            collector_state.flush_audit(std::time::Instant::now());
                        }
                    });
                    serve(listener, app(state), admission, async move {
                        let _ = stopped.await;
                    })
                    .await;
                    heartbeats.abort();
                    collector.abort();
                    if let Some(prometheus) = prometheus {
                        prometheus.abort();
                    }
                });
                // A name lookup still running on the blocking pool is not waited for (dropped, the
                // runtime waits for it: a slow resolver held a shutdown for its whole timeout).
                runtime.shutdown_background();
            })
            .map_err(AgentError::Runtime)?;
        tracing::info!(%addr, prometheus = ?prometheus_addr, "floodgate agent listening");
        Ok(Agent {
            addr,
            prometheus_addr,
            fg: self.fg,
            metrics,
            metric_log,
            rule_files,
            commands,
            stop: Some(stop),
            thread: Some(thread),
            _watcher: watcher,
        })
    }
}
