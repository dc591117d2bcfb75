//! What the dashboard's tasks have just done, broadcast to whoever listens (the live pages, tests that
//! wait for a push instead of sleeping).

use floodgate_core::RuleType;
use tokio::sync::broadcast;

/// One thing that happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A heartbeat was recorded; `first` for a machine never seen before.
    Heartbeat {
        /// The machine.
        machine_id: i64,
        /// Whether it was seen for the first time.
        first: bool,
    },
    /// The rules of `rule_type` were pushed to a machine (or the push failed).
    Pushed {
        /// The machine.
        machine_id: i64,
        /// The rule type.
        rule_type: RuleType,
        /// Whether the machine took them.
        ok: bool,
    },
    /// A machine's rules of `rule_type` were imported as the app's (the app did not manage the type).
    Imported {
        /// The app.
        app_id: i64,
        /// The rule type.
        rule_type: RuleType,
    },
    /// A machine's reconciliation (rules compared, pushed or imported as needed) finished.
    Reconciled {
        /// The machine.
        machine_id: i64,
    },
    /// A machine's metrics were fetched (or the fetch failed).
    Fetched {
        /// The machine.
        machine_id: i64,
        /// Whether the answer was read and parsed.
        ok: bool,
    },
    /// Metric seconds up to `through` (ms) of some app were committed.
    MetricsWritten {
        /// The newest second in the batch.
        through: i64,
    },
}

/// The sender side; cheap to clone.
#[derive(Debug, Clone)]
pub struct Events {
    tx: broadcast::Sender<Event>,
}

impl Default for Events {
    fn default() -> Self {
        Events {
            tx: broadcast::channel(4096).0,
        }
    }
}

impl Events {
    /// Broadcasts `event` (dropped when nobody listens).
    pub fn send(&self, event: Event) {
        let _ = self.tx.send(event);
    }

    /// A new listener, which sees events sent from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }
}
