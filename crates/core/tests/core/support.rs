//! Shared by the integration tests.

use std::time::Duration;

use floodgate_core::{Clock, ManualClock};

/// A [`ManualClock`] that says it moves in 1 ms ticks, like the default `CachedClock`.
#[derive(Debug, Clone)]
pub(crate) struct TickClock(pub(crate) ManualClock);

impl Clock for TickClock {
    fn now_nanos(&self) -> u64 {
        self.0.now_nanos()
    }

    fn sleep(&self, duration: Duration) {
        self.0.sleep(duration);
    }

    fn sleeps(&self) -> bool {
        false
    }

    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }
}
