//! (stub) The metric fetcher.

use tokio::sync::watch;

use crate::AppState;

/// Runs until `stopped`.
pub async fn run(_state: AppState, mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}
