//! `floodgate-dashboard`: reads the settings, starts the dashboard, serves until SIGINT or SIGTERM.

use clap::Parser;
use floodgate_dashboard::{Config, Dashboard};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let config = Config::parse();
    let bind = config.bind;
    let admin = config.admin_user.clone();
    let dashboard = Dashboard::start(config).await?;
    let listener = tokio::net::TcpListener::bind(bind).await?;
    let addr = listener.local_addr()?;
    println!("Floodgate dashboard on http://{addr}/");
    if let Some(password) = dashboard.generated_password() {
        println!(
            "First start: sign in as `{admin}` with password {password} (shown only this once)"
        );
    }
    let service = dashboard
        .router()
        .into_make_service_with_connect_info::<std::net::SocketAddr>();
    axum::serve(listener, service)
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    tracing::info!("stopping: finishing pushes and writes in flight");
    dashboard.shutdown().await;
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}
