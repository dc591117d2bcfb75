//! Watching breakers: state-change observers and a read-out of every breaker's state.
//!
//! Observers are called synchronously by the thread that made the transition, once per transition (the
//! transition is a compare-and-swap, and only its winner reports it). They should be quick: the thread
//! is serving a request. The event carries what Sentinel's `onStateChange(prev, next, rule, snapshot)`
//! does, plus the resource (a default or regex rule drives one breaker per resource) and the time. An
//! observer that panics is ignored (the transition has already happened).

use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use super::rule::DegradeRule;

/// The state of a circuit breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Calls pass and are counted.
    Closed,
    /// Calls are blocked until the retry time.
    Open,
    /// One probe call is in flight; every other call is blocked. Its outcome closes or reopens the breaker.
    HalfOpen,
}

impl BreakerState {
    /// Sentinel's name: `CLOSED`, `OPEN` or `HALF_OPEN`.
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "CLOSED",
            BreakerState::Open => "OPEN",
            BreakerState::HalfOpen => "HALF_OPEN",
        }
    }
}

impl fmt::Display for BreakerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A breaker changed state.
#[derive(Debug, Clone)]
pub struct BreakerStateChange {
    /// The resource whose breaker changed (for a default or regex rule: the resource it matched).
    pub resource: Arc<str>,
    /// The rule that drives the breaker.
    pub rule: Arc<DegradeRule>,
    /// The state before.
    pub previous: BreakerState,
    /// The state after.
    pub next: BreakerState,
    /// Closed → open: the value that tripped it (the slow or error ratio, or the error count); a failed
    /// probe: 1.0; → half-open and → closed: `None`.
    pub snapshot: Option<f64>,
    /// When, epoch ms.
    pub at_ms: u64,
}

/// One breaker as it is now.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerStatus {
    /// The resource the breaker guards.
    pub resource: Arc<str>,
    /// The rule that drives it.
    pub rule: Arc<DegradeRule>,
    /// Its state.
    pub state: BreakerState,
    /// Open: when the next probe may pass (epoch ms); half-open: when the probe in flight counts as
    /// failed if it has not completed; closed: `None`.
    pub retry_at_ms: Option<u64>,
    /// The start of the current statistics window (epoch ms).
    pub window_start_ms: u64,
    /// Calls completed in the current window.
    pub total: u32,
    /// Of those, the slow ones (slow-request ratio) or the failed ones (error ratio and count).
    pub bad: u32,
}

/// A state-change observer.
pub(crate) type Observer = Arc<dyn Fn(&BreakerStateChange) + Send + Sync>;

/// The observers of an engine's breakers, by name.
#[derive(Default)]
pub(crate) struct Observers {
    list: ArcSwap<Vec<(String, Observer)>>,
    write: Mutex<()>,
}

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.list.load().iter().map(|(n, _)| n.clone()).collect();
        f.debug_struct("Observers").field("names", &names).finish()
    }
}

impl Observers {
    /// Adds (or replaces) the observer called `name`.
    pub(crate) fn add(&self, name: &str, observer: Observer) {
        let _guard = self.write.lock().unwrap_or_else(|e| e.into_inner());
        let mut next: Vec<(String, Observer)> = (**self.list.load()).clone();
        match next.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = observer,
            None => next.push((name.to_owned(), observer)),
        }
        self.list.store(Arc::new(next));
    }

    /// Removes the observer called `name`; whether there was one.
    pub(crate) fn remove(&self, name: &str) -> bool {
        let _guard = self.write.lock().unwrap_or_else(|e| e.into_inner());
        let mut next: Vec<(String, Observer)> = (**self.list.load()).clone();
        let before = next.len();
        next.retain(|(n, _)| n != name);
        let removed = next.len() != before;
        if removed {
            self.list.store(Arc::new(next));
        }
        removed
    }

    /// Tells every observer; builds the event only when someone listens. An observer that panics does
    /// not stop the others, nor the request whose completion or admission made the change; it is logged
    /// (`warn`, target `floodgate::breaker`), not swallowed (`observers_are_named_replaceable_and_removable`).
    pub(crate) fn notify(&self, event: impl FnOnce() -> BreakerStateChange) {
        let list = self.list.load();
        if list.is_empty() {
            return;
        }
        let event = event();
        for (name, observer) in list.iter() {
            if panic::catch_unwind(AssertUnwindSafe(|| observer(&event))).is_err() {
                tracing::warn!(
                    target: "floodgate::breaker",
                    observer = name.as_str(),
                    resource = &*event.resource,
                    "a circuit-breaker observer panicked (the other observers were told)"
                );
            }
        }
    }
}
