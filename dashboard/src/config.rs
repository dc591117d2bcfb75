//! The dashboard's settings, from flags or environment variables (`--help` lists every one).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use ipnet::IpNet;

/// The Floodgate dashboard: apps register with it, it charts their metrics and keeps their rules.
#[derive(Debug, Clone, Parser)]
#[command(name = "floodgate-dashboard", version, about)]
pub struct Config {
    /// The address to serve on.
    #[arg(long, env = "FLOODGATE_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,

    /// The folder of the SQLite database (`floodgate.db`), created when missing.
    #[arg(long, env = "FLOODGATE_DATA_DIR", default_value = "./floodgate-data")]
    pub data_dir: PathBuf,

    /// A database URL (`sqlite:///path/to/file.db`) instead of the file in `--data-dir`.
    #[arg(long, env = "FLOODGATE_DATABASE_URL")]
    pub database_url: Option<String>,

    /// The name of the first admin, created when the database has no user.
    #[arg(long, env = "FLOODGATE_ADMIN_USER", default_value = "admin")]
    pub admin_user: String,

    /// The first admin's password (at least 12 characters). Without it a random one is generated and
    /// printed once, on the first start only.
    #[arg(long, env = "FLOODGATE_ADMIN_PASSWORD", hide_env_values = true)]
    pub admin_password: Option<String>,

    /// A token heartbeats must carry (form field `token`); without it any heartbeat that passes the
    /// other checks registers.
    #[arg(long, env = "FLOODGATE_REGISTRATION_TOKEN", hide_env_values = true)]
    pub registration_token: Option<String>,

    /// Networks machines may register from (comma-separated CIDRs, e.g. `10.0.0.0/8,127.0.0.1/32`).
    /// The dashboard only ever calls the IPs of registered machines, so this bounds what it can be
    /// made to connect to. Empty: any IP.
    #[arg(long, env = "FLOODGATE_ALLOW_CIDRS", value_delimiter = ',')]
    pub allow_cidrs: Vec<IpNet>,

    /// The most apps heartbeats may create.
    #[arg(long, env = "FLOODGATE_MAX_APPS", default_value_t = 1000, value_parser = clap::value_parser!(i64).range(1..))]
    pub max_apps: i64,

    /// The most machines one app may have.
    #[arg(long, env = "FLOODGATE_MAX_MACHINES_PER_APP", default_value_t = 1000, value_parser = clap::value_parser!(i64).range(1..))]
    pub max_machines_per_app: i64,

    /// A machine is healthy (fetched from, pushed to) while its last heartbeat is younger than this
    /// many seconds.
    #[arg(long, env = "FLOODGATE_UNHEALTHY_AFTER_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub unhealthy_after_secs: u64,

    /// How often every healthy machine's metrics are fetched, in milliseconds.
    #[arg(long, env = "FLOODGATE_FETCH_INTERVAL_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(100..=60_000))]
    pub fetch_interval_ms: u64,

    /// The most machines fetched from (or pushed to) at once.
    #[arg(long, env = "FLOODGATE_AGENT_CONCURRENCY", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub agent_concurrency: u64,

    /// The longest a call to an agent may take, connecting included, in milliseconds.
    #[arg(long, env = "FLOODGATE_AGENT_TIMEOUT_MS", default_value_t = 3000, value_parser = clap::value_parser!(u64).range(100..=60_000))]
    pub agent_timeout_ms: u64,

    /// How long per-second metrics are kept, in seconds (default 6 hours).
    #[arg(long, env = "FLOODGATE_SECOND_RETENTION_SECS", default_value_t = 6 * 3600, value_parser = clap::value_parser!(u64).range(60..))]
    pub second_retention_secs: u64,

    /// How long per-minute metrics are kept, in seconds (default 7 days).
    #[arg(long, env = "FLOODGATE_MINUTE_RETENTION_SECS", default_value_t = 7 * 86_400, value_parser = clap::value_parser!(u64).range(3600..))]
    pub minute_retention_secs: u64,

    /// How long a session lasts after sign-in, in seconds (default 8 hours).
    #[arg(long, env = "FLOODGATE_SESSION_TTL_SECS", default_value_t = 8 * 3600, value_parser = clap::value_parser!(u64).range(60..))]
    pub session_ttl_secs: u64,

    /// Marks the session cookie `Secure` (set it when the dashboard is served over HTTPS).
    #[arg(long, env = "FLOODGATE_SECURE_COOKIES")]
    pub secure_cookies: bool,

    /// The largest request body accepted, in bytes (rule imports included).
    #[arg(long, env = "FLOODGATE_MAX_BODY_BYTES", default_value_t = 2 * 1024 * 1024)]
    pub max_body_bytes: usize,

    /// The longest a request may take, in seconds.
    #[arg(long, env = "FLOODGATE_REQUEST_TIMEOUT_SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub request_timeout_secs: u64,

    /// The folder served under `/static`.
    #[arg(long, env = "FLOODGATE_STATIC_DIR", default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/static"))]
    pub static_dir: PathBuf,
}

impl Config {
    /// The settings of a dashboard whose database is `database_url`, all else at its default
    /// (for tests and embedding).
    pub fn for_database(database_url: impl Into<String>) -> Self {
        let mut config = Config::parse_from(["floodgate-dashboard"]);
        config.database_url = Some(database_url.into());
        config
    }

    /// The database URL in force: `--database-url`, else the file in `--data-dir`.
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite://{}", self.data_dir.join("floodgate.db").display()),
        }
    }

    /// [`unhealthy_after_secs`](Self::unhealthy_after_secs) in milliseconds.
    pub fn unhealthy_after_ms(&self) -> i64 {
        (self.unhealthy_after_secs * 1000) as i64
    }

    /// The registry's limits.
    pub fn registry_limits(&self) -> crate::db::RegistryLimits {
        crate::db::RegistryLimits {
            max_apps: self.max_apps,
            max_machines_per_app: self.max_machines_per_app,
        }
    }

    /// [`agent_timeout_ms`](Self::agent_timeout_ms) as a duration.
    pub fn agent_timeout(&self) -> Duration {
        Duration::from_millis(self.agent_timeout_ms)
    }
}
