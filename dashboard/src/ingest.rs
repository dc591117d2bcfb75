//! (stub) The metric writer.

use tokio::sync::watch;

use crate::AppState;

/// Sends fetched lines to the writer.
#[derive(Debug, Clone)]
pub struct Ingest {}

/// The writer task.
#[derive(Debug)]
pub struct Writer {}

/// A connected pair.
pub fn channel() -> (Ingest, Writer) {
    (Ingest {}, Writer {})
}

impl Writer {
    /// Runs until `stopped`.
    pub async fn run(self, _state: AppState, mut stopped: watch::Receiver<bool>) {
        let _ = stopped.wait_for(|s| *s).await;
    }
}
