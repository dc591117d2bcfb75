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
    let stop = shutdown_signal()?;
    let listener = tokio::net::TcpListener::bind(bind).await?;
    let addr = listener.local_addr()?;
    if let Some(password) = dashboard.generated_password() {
        println!(
            "First start: sign in as `{admin}` with password {password} (shown only this once)"
        );
    }
    println!("Floodgate dashboard on http://{addr}/");
    let service = dashboard
        .router()
        .into_make_service_with_connect_info::<std::net::SocketAddr>();
    axum::serve(listener, service)
        .with_graceful_shutdown(stop)
        .await?;
    tracing::info!("stopping: finishing pushes and writes in flight");
    dashboard.shutdown().await;
    Ok(())
}

/// Resolves at the first SIGINT or SIGTERM. The handlers are installed when this is called, before
/// the dashboard says it is serving, so that a signal sent as soon as it says so stops it cleanly.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {},
                _ = terminate.recv() => {},
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
