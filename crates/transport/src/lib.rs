//! The Floodgate agent: what an application embeds so that a dashboard (Floodgate's or Sentinel's Java
//! one) can see its metrics and change its rules.
//!
//! * A command API wire-compatible with Sentinel's (`getRules`, `setRules`, `metric`, `clusterNode`,
//!   `jsonTree`, …) on `127.0.0.1:8719` by default — loopback unless told otherwise, and refusing to bind
//!   another address without a shared token (Sentinel's Java dashboard, which cannot send one, may be
//!   let in by address: [`AgentBuilder::tokenless_from`]). Strangers holding connections open do not
//!   keep a dashboard out (short of a flood from as many addresses as the agent keeps places for,
//!   renewed faster than every half second), and rule loads do not hold the other commands or the
//!   heartbeats up. At most 256 connections (file descriptors) are open at once.
//! * Heartbeats to the dashboard (`POST /registry/machine`) every 10 s, with failover and back-off.
//! * Per-second metrics kept for 5 minutes (and optionally Sentinel-format metric log files).
//! * A Prometheus exposition at `GET /metrics` (and optionally on a port of its own): see
//!   [`prometheus_text`] for the metrics.
//! * Rule files per rule type, reloaded when they change and written when rules are pushed, so rules
//!   survive restarts.
//!
//! ```no_run
//! use floodgate_core::{Floodgate, RuleType};
//! use floodgate_transport::Agent;
//!
//! let fg = Floodgate::default();
//! let agent = Agent::builder(fg.clone())
//!     .app_name("orders")
//!     .dashboard("127.0.0.1:8080")
//!     .rule_file(RuleType::Flow, "/var/lib/orders/flow-rules.json")
//!     .start()?;
//! println!("command API on {}", agent.local_addr());
//! # Ok::<(), floodgate_transport::AgentError>(())
//! ```
//!
//! [`AgentBuilder::from_env`] starts from the `FLOODGATE_*` and Sentinel's `csp.sentinel.*` settings in
//! the environment ([`Agent::builder`] reads none); [`AgentConfig`] lists them.
//!
//! # Security
//!
//! The agent changes an application's rules on request, so it is built to be safe to expose:
//!
//! * **Binding.** It listens on `127.0.0.1:8719` by default; binding another address needs a
//!   [`token`](AgentBuilder::token) of 8 characters or more.
//! * **Connections.** A connection must get its first request in within 3 s; until then it holds one of
//!   64 places of its class (dashboards let in by address, other loopback clients, everyone else), and
//!   a full class makes room by closing the oldest connection of the client holding the most, so
//!   strangers holding half-sent requests cannot shut a dashboard out. A request let in moves its
//!   connection to one of 64 established places (at most half for one client), where keep-alive
//!   requests get 10 s for their headers and bodies. A body announced over the limit (1 MiB,
//!   [`max_body_bytes`](AgentBuilder::max_body_bytes)) is refused (413) before it is read, and, with a
//!   token, one over 4 KiB without the token in a header (401). The agent closes a connection whose
//!   client reads no answer for 10 s, and a stop waits 1 s for requests in progress. `serve.rs`
//!   documents the policy and its limits.
//! * **Web pages.** It refuses requests a browser makes for a web page (an `Origin` header, another
//!   site's `Sec-Fetch-Site`, and, without a token, a `Host` that is not an IP, `localhost`, the
//!   machine's name or one of [`allowed_hosts`](AgentConfig::allowed_hosts), also
//!   `FLOODGATE_ALLOWED_HOSTS`), so a page cannot drive a loopback agent.
//! * **Sentinel's Java dashboard** cannot send a token, so a token-protected agent would refuse it: list
//!   its address in `FLOODGATE_TOKENLESS_CIDRS` (or
//!   [`.tokenless_from("10.0.0.5/32".parse()?)`](AgentBuilder::tokenless_from)) to let it call without
//!   one. Off by default, and a risk: anyone who can send from (or spoof) an address in those networks
//!   can change the rules.
//! * **Wrong tokens.** With a token, a client (an IPv4 address, an IPv6 /56, or any loopback address)
//!   that sends 10 wrong tokens within a minute is refused (429) until the minute ends, on the command
//!   and Prometheus ports alike: a scraper left with an old token on the dashboard's address gets the
//!   dashboard refused too.
//! * **Rule pushes.** Rule lists are refused whole with the rule and field named; a flow, degrade or
//!   hot-parameter rule needs its `count` (a missing or misspelt one is an error, not a limit of 0), and
//!   fields a rule does not have are named on lines after `success`
//!   (`warning: rule 0: unknown field ...`). A list holds at most 100 regex rules and a resource at most
//!   100 rules of a type; loads run off the thread that serves commands and heartbeats, in the order
//!   they arrived.
//! * **Audit.** Rule pushes and switch changes are logged with the client's address and the answer, on
//!   the `tracing` target `floodgate::audit`, and so are refused ones and wrong tokens (those sampled,
//!   so that a flood of refused requests cannot flood the log).

mod admission;
mod agent;
mod cidr;
mod command;
mod config;
mod heartbeat;
mod host;
mod metric_log;
mod metric_store;
mod prometheus;
mod rule_file;
mod serve;
mod write_deadline;

pub use agent::{Agent, AgentBuilder, AgentError};
pub use cidr::{Cidr, CidrError};
pub use command::{CommandState, SENTINEL_VERSION, app};
pub use config::{AgentConfig, ConfigError, DEFAULT_PORT, RuleTypeKey};
pub use metric_log::{MetricLog, fat_line};
pub use metric_store::{MetricStore, OTHER_RESOURCES, ResourceTotals, thin_line};
pub use prometheus::{PROMETHEUS_CONTENT_TYPE, prometheus_text};
pub use rule_file::RuleFiles;
