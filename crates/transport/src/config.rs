//! The agent's configuration: a builder, plus environment variables (Floodgate's names and Sentinel's).
//!
//! | setting | Floodgate variable | Sentinel name (also read as an environment variable) |
//! |---|---|---|
//! | app name | `FLOODGATE_APP_NAME` | `project.name`, `csp.sentinel.app.name` |
//! | app type | `FLOODGATE_APP_TYPE` | `csp.sentinel.app.type` |
//! | dashboards | `FLOODGATE_DASHBOARD` (`host:port[,host:port…]`) | `csp.sentinel.dashboard.server` |
//! | command address | `FLOODGATE_API_ADDR` (default `127.0.0.1`) | — |
//! | command port | `FLOODGATE_API_PORT` (default 8719) | `csp.sentinel.api.port` |
//! | Prometheus port | `FLOODGATE_PROMETHEUS_PORT` (none by default; `/metrics` is on the command port too) | — |
//! | reported IP | `FLOODGATE_HEARTBEAT_IP` | `csp.sentinel.heartbeat.client.ip` |
//! | heartbeat interval | `FLOODGATE_HEARTBEAT_INTERVAL_MS` (default 10000) | `csp.sentinel.heartbeat.interval.ms` |
//! | heartbeat path | `FLOODGATE_HEARTBEAT_PATH` (default `/registry/machine`) | `csp.sentinel.heartbeat.api.path` |
//! | shared token | `FLOODGATE_TOKEN` | — |
//! | host names the agent may be addressed by, besides IPs and `localhost` | `FLOODGATE_ALLOWED_HOSTS` (`name[,name…]`) | — |
//! | networks whose peers need no token (**a risk**: see [`AgentConfig::tokenless_from`]) | `FLOODGATE_TOKENLESS_CIDRS` (`10.0.0.5/32[,2001:db8::/64…]`; none by default) | — |
//! | metric log directory | `FLOODGATE_METRIC_LOG_DIR` | `csp.sentinel.log.dir` |
//! | rule files | `FLOODGATE_RULES_FLOW`, `_DEGRADE`, `_SYSTEM`, `_AUTHORITY`, `_PARAM_FLOW` | — |
//!
//! Each Sentinel name is looked up as written (`csp.sentinel.api.port`) and in the upper-case underscore
//! form (`CSP_SENTINEL_API_PORT`). A Floodgate variable wins over a Sentinel one. Invalid values are errors,
//! never silently replaced by defaults; so are empty `FLOODGATE_*` tokens, paths and heartbeat addresses
//! (a secret or a path that was not filled in). A blank value of a Sentinel name is unset, as Sentinel
//! reads it.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::Duration;

use floodgate_core::RuleType;
use thiserror::Error;

use crate::cidr::Cidr;

/// Sentinel's default command port.
pub const DEFAULT_PORT: u16 = 8719;

/// A configuration value was invalid.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A variable held a value that does not parse.
    #[error("{name}: invalid value `{value}` ({reason})")]
    Invalid {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
        /// Why it was rejected.
        reason: &'static str,
    },
}

/// What the agent needs to run.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// The application's name, as the dashboard groups machines.
    pub app_name: String,
    /// Sentinel's app type: 0 common, 1 API gateway.
    pub app_type: u8,
    /// The address the command API binds (default loopback).
    pub bind_addr: IpAddr,
    /// The command API port (0 picks a free one).
    pub port: u16,
    /// Try the next ports when `port` is busy (Sentinel's behaviour); the port in use is reported.
    pub port_search: bool,
    /// Dashboards to send heartbeats to, `host:port` (with or without `http://`), tried in order.
    pub dashboards: Vec<String>,
    /// Time between heartbeats.
    pub heartbeat_interval: Duration,
    /// The IP reported to the dashboard, where it calls the agent back (default: the address the agent
    /// listens on when that is one specific address, loopback ones such as `127.0.0.2` and `::1`
    /// included; for a wildcard (`0.0.0.0`, `::`), the local address that routes to the first
    /// dashboard that resolves, of the listening address's family, detected again before each
    /// heartbeat while no dashboard resolves).
    pub heartbeat_ip: Option<String>,
    /// The dashboard's registration path.
    pub heartbeat_path: String,
    /// A shared token every command must carry; required to bind a non-loopback address.
    pub token: Option<String>,
    /// How long per-second metrics are kept in memory for the `metric` command.
    pub metric_retention: Duration,
    /// A directory for Sentinel-format metric log files (none by default).
    pub metric_log_dir: Option<PathBuf>,
    /// Rule files per rule type: loaded at start, reloaded on change, written by `setRules`.
    pub rule_files: BTreeMap<RuleTypeKey, PathBuf>,
    /// The largest request body accepted (413 above it).
    pub max_body_bytes: usize,
    /// A port of its own for the Prometheus exposition (`GET /metrics` only, same address and token as
    /// the command API; 0 picks a free one). `/metrics` is also served on the command port.
    pub prometheus_port: Option<u16>,
    /// Host names requests may address the agent by (`Host` header), besides IP addresses, `localhost`
    /// and the machine's name, when no token is set: any other is then refused, against DNS rebinding
    /// (see the command API docs). With a token, any name may.
    pub allowed_hosts: Vec<String>,
    /// Networks whose peers may call the command API without the token (none by default; needs a
    /// token), for Sentinel's Java dashboard, which cannot send one. Their requests are still
    /// refused when they look like a web page's (see the command API docs).
    ///
    /// **The risk:** anyone who can send from an address in these networks — another process or
    /// user on the dashboard's machine, a container sharing its address, a host that takes over or
    /// spoofs the address on your network — can read and change this application's rules, and turn
    /// its protection off, without the token. List the dashboard's own address (`/32`, `/128`), not
    /// its subnet, and only on a network you trust. `/0` is refused.
    pub tokenless_from: Vec<Cidr>,
}

/// A [`RuleType`] usable as a map key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RuleTypeKey(u8);

impl From<RuleType> for RuleTypeKey {
    fn from(t: RuleType) -> Self {
        RuleTypeKey(RuleType::ALL.iter().position(|x| *x == t).unwrap_or(0) as u8)
    }
}

impl RuleTypeKey {
    /// The rule type.
    pub fn rule_type(self) -> RuleType {
        RuleType::ALL[usize::from(self.0).min(RuleType::ALL.len() - 1)]
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            app_name: default_app_name(),
            app_type: 0,
            bind_addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: DEFAULT_PORT,
            port_search: false,
            dashboards: Vec::new(),
            heartbeat_interval: Duration::from_secs(10),
            heartbeat_ip: None,
            heartbeat_path: "/registry/machine".to_owned(),
            token: None,
            metric_retention: Duration::from_secs(300),
            metric_log_dir: None,
            rule_files: BTreeMap::new(),
            max_body_bytes: 1024 * 1024,
            prometheus_port: None,
            allowed_hosts: Vec::new(),
            tokenless_from: Vec::new(),
        }
    }
}

fn default_app_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "floodgate-app".to_owned())
}

/// Reads variable `names` (the first set one wins) through `get`. A blank value of one of Sentinel's
/// names is unset ([`sentinel_blank_is_unset`]): the next name is read, so a blank `project.name` does
/// not hide `csp.sentinel.app.name`, nor does a blank port stop the app (the unit test
/// `floodgate_and_sentinel_names`).
fn lookup(get: &dyn Fn(&str) -> Option<String>, names: &[&str]) -> Option<(String, String)> {
    names.iter().find_map(|name| {
        let direct = get(name)
            .map(|v| ((*name).to_owned(), v))
            .filter(sentinel_blank_is_unset);
        direct.or_else(|| {
            let upper = name.replace('.', "_").to_uppercase();
            get(&upper)
                .map(|v| (upper, v))
                .filter(sentinel_blank_is_unset)
        })
    })
}

/// Whether a variable found is kept: a blank value of one of Sentinel's names is unset, as Sentinel reads
/// it (a template that renders an empty value must not stop the app); Floodgate's own are kept (and a
/// blank one is refused).
fn sentinel_blank_is_unset((name, value): &(String, String)) -> bool {
    name.starts_with("FLOODGATE_") || !value.trim().is_empty()
}

/// `path` as a heartbeat's URL path: trimmed, with a `/` put in front if it has none (as Sentinel's
/// `TransportConfig` does, so that a Sentinel setup that wrote `registry/machine` starts); `None` if it
/// is blank or not what a URI's path (and query) may hold.
pub(crate) fn heartbeat_path(path: &str) -> Option<String> {
    let path = path.trim();
    if path.is_empty() {
        return None;
    }
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    path.parse::<hyper::http::uri::PathAndQuery>()
        .is_ok()
        .then_some(path)
}

fn non_empty(name: String, value: String) -> Result<String, ConfigError> {
    if value.trim().is_empty() {
        return Err(ConfigError::Invalid {
            name,
            value,
            reason: "empty (unset the variable instead)",
        });
    }
    Ok(value)
}

fn parse<T: std::str::FromStr>(
    name: String,
    value: String,
    reason: &'static str,
) -> Result<T, ConfigError> {
    value.trim().parse().map_err(|_| ConfigError::Invalid {
        name,
        value,
        reason,
    })
}

impl AgentConfig {
    /// Defaults overridden by the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// Defaults overridden by variables read through `get` (for tests and other sources).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get: &dyn Fn(&str) -> Option<String> = &get;
        let mut c = AgentConfig::default();
        if let Some((_, v)) = lookup(
            get,
            &[
                "FLOODGATE_APP_NAME",
                "project.name",
                "csp.sentinel.app.name",
            ],
        ) {
            if !v.trim().is_empty() {
                c.app_name = v.trim().to_owned();
            }
        }
        if let Some((n, v)) = lookup(get, &["FLOODGATE_APP_TYPE", "csp.sentinel.app.type"]) {
            c.app_type = parse(
                n,
                v,
                "expected a number from 0 to 255 (0: common, 1: gateway)",
            )?;
        }
        if let Some((_, v)) = lookup(
            get,
            &["FLOODGATE_DASHBOARD", "csp.sentinel.dashboard.server"],
        ) {
            c.dashboards = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
        }
        if let Some((n, v)) = lookup(get, &["FLOODGATE_API_ADDR"]) {
            c.bind_addr = parse(n, v, "expected an IP address")?;
        }
        if let Some((n, v)) = lookup(get, &["FLOODGATE_API_PORT", "csp.sentinel.api.port"]) {
            c.port = parse(n, v, "expected a port number")?;
        }
        if let Some((n, v)) = lookup(
            get,
            &["FLOODGATE_HEARTBEAT_IP", "csp.sentinel.heartbeat.client.ip"],
        ) {
            // The dashboard calls the agent back at this address (and refuses a name).
            let ip: IpAddr = parse(n, v, "expected an IP address")?;
            c.heartbeat_ip = Some(ip.to_string());
        }
        if let Some((n, v)) = lookup(
            get,
            &[
                "FLOODGATE_HEARTBEAT_INTERVAL_MS",
                "csp.sentinel.heartbeat.interval.ms",
            ],
        ) {
            let ms: u64 = parse(n.clone(), v.clone(), "expected milliseconds > 0")?;
            if ms == 0 {
                return Err(ConfigError::Invalid {
                    name: n,
                    value: v,
                    reason: "expected milliseconds > 0",
                });
            }
            c.heartbeat_interval = Duration::from_millis(ms);
        }
        if let Some((n, v)) = lookup(
            get,
            &[
                "FLOODGATE_HEARTBEAT_PATH",
                "csp.sentinel.heartbeat.api.path",
            ],
        ) {
            let Some(path) = heartbeat_path(&v) else {
                return Err(ConfigError::Invalid {
                    name: n,
                    value: v,
                    reason: "expected a URL path",
                });
            };
            c.heartbeat_path = path;
        }
        if let Some((n, v)) = lookup(get, &["FLOODGATE_PROMETHEUS_PORT"]) {
            c.prometheus_port = Some(parse(n, v, "expected a port number")?);
        }
        if let Some((_, v)) = lookup(get, &["FLOODGATE_ALLOWED_HOSTS"]) {
            c.allowed_hosts = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
        }
        if let Some((n, v)) = lookup(get, &["FLOODGATE_TOKENLESS_CIDRS"]) {
            c.tokenless_from = v
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|entry| {
                    entry.parse::<Cidr>().map_err(|e| ConfigError::Invalid {
                        name: n.clone(),
                        value: entry.trim().to_owned(),
                        reason: e.reason(),
                    })
                })
                .collect::<Result<_, _>>()?;
        }
        // An empty value is an error, not "unset": it is more likely a secret or a path that did not
        // get filled in (an agent without its token, rules that never load) than a wish.
        if let Some((n, v)) = lookup(get, &["FLOODGATE_TOKEN"]) {
            c.token = Some(non_empty(n, v)?);
        }
        if let Some((n, v)) = lookup(get, &["FLOODGATE_METRIC_LOG_DIR", "csp.sentinel.log.dir"]) {
            c.metric_log_dir = Some(PathBuf::from(non_empty(n, v)?));
        }
        for (name, t) in [
            ("FLOODGATE_RULES_FLOW", RuleType::Flow),
            ("FLOODGATE_RULES_DEGRADE", RuleType::Degrade),
            ("FLOODGATE_RULES_SYSTEM", RuleType::System),
            ("FLOODGATE_RULES_AUTHORITY", RuleType::Authority),
            ("FLOODGATE_RULES_PARAM_FLOW", RuleType::ParamFlow),
        ] {
            if let Some((n, v)) = lookup(get, &[name]) {
                c.rule_files
                    .insert(t.into(), PathBuf::from(non_empty(n, v)?));
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn defaults_are_safe() {
        let c = AgentConfig::from_vars(|_| None).unwrap();
        assert_eq!(c.bind_addr, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(c.port, 8719);
        assert!(c.token.is_none());
        assert_eq!(c.heartbeat_interval, Duration::from_secs(10));
    }

    #[test]
    fn floodgate_and_sentinel_names() {
        let c = AgentConfig::from_vars(vars(&[
            ("project.name", "orders"),
            (
                "CSP_SENTINEL_DASHBOARD_SERVER",
                "dash1:8080, http://dash2:8080",
            ),
            ("csp.sentinel.api.port", "8720"),
            ("FLOODGATE_API_PORT", "9000"),
            ("csp.sentinel.heartbeat.client.ip", "10.0.0.7"),
            ("FLOODGATE_RULES_FLOW", "/etc/fg/flow.json"),
            ("FLOODGATE_PROMETHEUS_PORT", "9464"),
        ]))
        .unwrap();
        assert_eq!(c.prometheus_port, Some(9464));
        assert_eq!(c.app_name, "orders");
        assert_eq!(c.dashboards, ["dash1:8080", "http://dash2:8080"]);
        assert_eq!(c.port, 9000, "Floodgate's variable wins");
        assert_eq!(c.heartbeat_ip.as_deref(), Some("10.0.0.7"));
        assert_eq!(
            c.rule_files.get(&RuleType::Flow.into()),
            Some(&PathBuf::from("/etc/fg/flow.json"))
        );
    }

    #[test]
    fn bad_values_are_errors() {
        let err = AgentConfig::from_vars(vars(&[("FLOODGATE_API_PORT", "eighty")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "FLOODGATE_API_PORT: invalid value `eighty` (expected a port number)"
        );
        assert!(AgentConfig::from_vars(vars(&[("FLOODGATE_API_ADDR", "nowhere")])).is_err());
        assert!(AgentConfig::from_vars(vars(&[("FLOODGATE_HEARTBEAT_INTERVAL_MS", "0")])).is_err());
        for name in [
            "FLOODGATE_TOKEN",
            "FLOODGATE_METRIC_LOG_DIR",
            "FLOODGATE_RULES_FLOW",
            "FLOODGATE_HEARTBEAT_IP",
        ] {
            let err = AgentConfig::from_vars(vars(&[(name, " ")])).unwrap_err();
            assert!(err.to_string().starts_with(name), "{err}");
        }
        assert_eq!(
            AgentConfig::from_vars(vars(&[(
                "FLOODGATE_ALLOWED_HOSTS",
                " orders.internal , ,app "
            )]))
            .unwrap()
            .allowed_hosts,
            ["orders.internal", "app"]
        );
        let sentinel_blanks = AgentConfig::from_vars(vars(&[
            ("CSP_SENTINEL_HEARTBEAT_CLIENT_IP", ""),
            ("csp.sentinel.log.dir", " "),
            ("CSP_SENTINEL_API_PORT", ""),
            ("csp.sentinel.app.type", " "),
            ("csp.sentinel.heartbeat.interval.ms", ""),
            ("project.name", " "),
            ("csp.sentinel.app.name", "orders"),
            ("csp.sentinel.dashboard.server", " "),
            ("CSP_SENTINEL_DASHBOARD_SERVER", "dash:8080"),
        ]))
        .expect("Sentinel's names: blank is unset, as Sentinel reads them");
        let defaults = AgentConfig::default();
        assert_eq!(
            (sentinel_blanks.heartbeat_ip, sentinel_blanks.metric_log_dir),
            (None, None)
        );
        assert_eq!(
            (
                sentinel_blanks.port,
                sentinel_blanks.app_type,
                sentinel_blanks.heartbeat_interval
            ),
            (
                defaults.port,
                defaults.app_type,
                defaults.heartbeat_interval
            )
        );
        assert_eq!(sentinel_blanks.app_name, "orders", "the next name is read");
        assert_eq!(sentinel_blanks.dashboards, ["dash:8080"]);
        // Sentinel's heartbeat path setting is read, and checked.
        let c = AgentConfig::from_vars(vars(&[(
            "csp.sentinel.heartbeat.api.path",
            " /api/registry ",
        )]))
        .unwrap();
        assert_eq!(c.heartbeat_path, "/api/registry");
        let c = AgentConfig::from_vars(vars(&[(
            "csp.sentinel.heartbeat.api.path",
            "registry/machine",
        )]))
        .unwrap();
        assert_eq!(c.heartbeat_path, "/registry/machine", "a `/` in front");
        assert_eq!(
            AgentConfig::default().heartbeat_path,
            "/registry/machine",
            "Sentinel's default"
        );
        for bad in [" ", "/a b", "/\u{7f}"] {
            let err =
                AgentConfig::from_vars(vars(&[("FLOODGATE_HEARTBEAT_PATH", bad)])).unwrap_err();
            assert!(
                err.to_string().starts_with("FLOODGATE_HEARTBEAT_PATH"),
                "{err}"
            );
        }
        let c = AgentConfig::from_vars(vars(&[(
            "FLOODGATE_TOKENLESS_CIDRS",
            " 10.0.0.5/32, ,2001:db8::/64 ",
        )]))
        .unwrap();
        assert_eq!(
            c.tokenless_from,
            [
                "10.0.0.5/32".parse().unwrap(),
                "2001:db8::/64".parse::<Cidr>().unwrap()
            ]
        );
        assert_eq!(
            AgentConfig::from_vars(vars(&[(
                "FLOODGATE_TOKENLESS_CIDRS",
                "10.0.0.5/32,0.0.0.0/0"
            )]))
            .unwrap_err()
            .to_string(),
            "FLOODGATE_TOKENLESS_CIDRS: invalid value `0.0.0.0/0` (a /0 lets every address in \
             without the token (list the dashboards' addresses))"
        );
        assert_eq!(
            AgentConfig::from_vars(vars(&[("FLOODGATE_HEARTBEAT_IP", "my-host")]))
                .unwrap_err()
                .to_string(),
            "FLOODGATE_HEARTBEAT_IP: invalid value `my-host` (expected an IP address)"
        );
        assert_eq!(
            AgentConfig::from_vars(vars(&[("FLOODGATE_HEARTBEAT_IP", " 10.0.0.7 ")]))
                .unwrap()
                .heartbeat_ip
                .as_deref(),
            Some("10.0.0.7")
        );
    }
}
