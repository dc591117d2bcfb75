//! (stub) The rule pusher.

use tokio::sync::watch;

use crate::AppState;

/// Queues pushes.
#[derive(Debug, Clone)]
pub struct Pusher {}

/// The push task.
#[derive(Debug)]
pub struct PushWorker {}

/// A connected pair.
pub fn channel() -> (Pusher, PushWorker) {
    (Pusher {}, PushWorker {})
}

impl Pusher {
    /// Compares a machine's rules with the stored ones and pushes or imports as needed.
    pub fn reconcile(&self, _machine_id: i64, _force: bool) {}
}

impl PushWorker {
    /// Runs until `stopped`.
    pub async fn run(self, _state: AppState, mut stopped: watch::Receiver<bool>) {
        let _ = stopped.wait_for(|s| *s).await;
    }
}
