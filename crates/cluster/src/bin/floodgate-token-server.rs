//! A standalone token server: Sentinel's token protocol for every instance of the applications whose
//! cluster rules it holds, Java and Floodgate clients alike.
//!
//! Rules and settings come from a JSON document (see `floodgate_cluster::server::ServerRules`), read
//! at start and again whenever the file changes; a document that does not check out is logged and
//! the rules in force stay. The server listens on loopback unless `--bind` says otherwise.
//!
//! With `--redis`, tokens are counted in that Redis rather than in process: several servers given
//! the same Redis and rules grant one limit, and a client whose server stops can use another.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use floodgate_cluster::redis::{RedisConfig, RedisCounter};
use floodgate_cluster::server::{
    Counting, DEFAULT_PORT, LocalTokenService, ServerRules, TokenServer, TransportConfig,
};
use notify::{RecursiveMode, Watcher};

/// Grants cluster flow-control tokens over Sentinel's token protocol.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Where to listen.
    #[arg(long, default_value_t = SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)))]
    bind: SocketAddr,
    /// The rule document (JSON); without it the server holds no rule until one is given.
    #[arg(long)]
    rules: Option<PathBuf>,
    /// Seconds a connection may stay silent before it is closed.
    #[arg(long, default_value_t = 600)]
    idle_seconds: u64,
    /// Connections open at once, at most.
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// Count tokens in this Redis (`redis://host:port`); given more than once, the seed nodes of a
    /// Redis Cluster.
    #[arg(long)]
    redis: Vec<String>,
    /// `--redis` names a Redis Cluster (implied by more than one `--redis`).
    #[arg(long)]
    redis_cluster: bool,
    /// The start of every Redis key (servers that share a limit share the prefix).
    #[arg(long, default_value = "floodgate")]
    redis_key_prefix: String,
}

/// Where tokens are counted, as the arguments say.
fn counting(args: &Args) -> Result<Counting, Box<dyn std::error::Error>> {
    if args.redis.is_empty() {
        return Ok(Counting::Local);
    }
    let config = if args.redis_cluster || args.redis.len() > 1 {
        RedisConfig::cluster(args.redis.iter().cloned())
    } else {
        RedisConfig::new(args.redis[0].clone())
    };
    let config = config.key_prefix(args.redis_key_prefix.clone());
    Ok(Counting::Redis(Arc::new(RedisCounter::new(config)?)))
}

fn load(path: &Path, service: &LocalTokenService) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let rules = ServerRules::from_json(&text).map_err(|e| e.to_string())?;
    rules.apply(service).map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let service = Arc::new(LocalTokenService::default());
    let mut _watcher = None;
    if let Some(path) = &args.rules {
        // At start a bad document is fatal: there is nothing in force to keep.
        load(path, &service)?;
        tracing::info!(path = %path.display(), namespaces = ?service.namespaces(), "rules loaded");
        let (changed, mut changes) = tokio::sync::mpsc::channel::<()>(1);
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if event.is_ok_and(|e| e.kind.is_modify() || e.kind.is_create()) {
                    let _ = changed.try_send(());
                }
            })?;
        // The directory: editors replace files rather than write them in place.
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
        _watcher = Some(watcher);
        let (path, service) = (path.clone(), service.clone());
        tokio::spawn(async move {
            while changes.recv().await.is_some() {
                match load(&path, &service) {
                    Ok(()) => tracing::info!(path = %path.display(), "rules reloaded"),
                    Err(error) => {
                        tracing::warn!(%error, "rule document refused; the rules in force stay")
                    }
                }
            }
        });
    }
    let counting = counting(&args)?;
    let server = TokenServer::bind_counting(
        args.bind,
        service,
        TransportConfig {
            idle: Duration::from_secs(args.idle_seconds),
            max_connections: args.max_connections,
        },
        counting,
    )
    .await?;
    tracing::info!(addr = %server.local_addr(), redis = ?args.redis, "token server listening");
    tokio::signal::ctrl_c().await?;
    server.shutdown().await;
    Ok(())
}
