//! At most one log line a second for an event anyone can cause (a web page, a client without a token),
//! so that a flood of them cannot flood the log: the line that goes out says how many were left out
//! before it, and a burst's last ones are flushed a second on.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The seconds of the last line let through, and the events held back since.
#[derive(Debug)]
pub(crate) struct LogThrottle {
    state: Mutex<Option<(Instant, u64)>>,
}

/// The shortest time between two lines.
const EVERY: Duration = Duration::from_secs(1);

impl LogThrottle {
    pub(crate) const fn new() -> Self {
        LogThrottle {
            state: Mutex::new(None),
        }
    }

    /// How many events were held back since the last line, if any and a line may go out at `now`
    /// (called once a second, so that the last of a burst is not lost); counts them as logged.
    pub(crate) fn flush(&self, now: Instant) -> Option<u64> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &mut *state {
            Some((last, held)) if *held > 0 && now.saturating_duration_since(*last) >= EVERY => {
                let flushed = *held;
                *state = Some((now, 0));
                Some(flushed)
            }
            _ => None,
        }
    }

    /// Whether an event at `now` may be logged, with how many were held back before it; `None`:
    /// hold it back (counted).
    pub(crate) fn admit(&self, now: Instant) -> Option<u64> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &mut *state {
            Some((last, held)) if now.saturating_duration_since(*last) < EVERY => {
                *held += 1;
                None
            }
            _ => {
                let held = state.map_or(0, |(_, held)| held);
                *state = Some((now, 0));
                Some(held)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_a_second_and_it_counts_what_was_held_back() {
        let throttle = LogThrottle::new();
        let t0 = Instant::now();
        assert_eq!(throttle.admit(t0), Some(0));
        for i in 1..=50 {
            assert_eq!(throttle.admit(t0 + Duration::from_millis(i * 10)), None);
        }
        assert_eq!(throttle.admit(t0 + EVERY), Some(50));
        assert_eq!(throttle.admit(t0 + EVERY), None);
        assert_eq!(throttle.admit(t0 + 3 * EVERY), Some(1));
    }

    #[test]
    fn the_last_of_a_burst_is_flushed_a_second_on() {
        let throttle = LogThrottle::new();
        let t0 = Instant::now();
        assert_eq!(throttle.flush(t0), None, "nothing yet");
        assert_eq!(throttle.admit(t0), Some(0));
        assert_eq!(throttle.flush(t0 + EVERY), None, "nothing held back");
        assert_eq!(throttle.admit(t0 + EVERY / 2), None);
        assert_eq!(throttle.admit(t0 + EVERY / 2), None);
        assert_eq!(throttle.flush(t0 + EVERY / 2), None, "too soon");
        assert_eq!(throttle.flush(t0 + EVERY), Some(2));
        assert_eq!(throttle.flush(t0 + 2 * EVERY), None, "counted once");
        assert_eq!(
            throttle.admit(t0 + EVERY + EVERY / 2),
            None,
            "a second after the flush"
        );
        assert_eq!(throttle.admit(t0 + 2 * EVERY), Some(1));
    }
}
