//! Time, injected.
//!
//! Every piece of the engine reads time through a [`Clock`]: sliding windows and metric timestamps use
//! [`Clock::now_ms`] (milliseconds since the Unix epoch), response times and pacing use [`Clock::now_nanos`]
//! (nanoseconds on the same epoch-anchored scale), and queueing waits go through [`Clock::sleep`].
//!
//! Three clocks ship:
//!
//! * [`SystemClock`] reads the OS clock on every call. It is anchored to the wall clock once, when it is
//!   created, and then advances with the monotonic clock (`Instant`), so an NTP step never moves it backwards.
//! * [`CachedClock`] returns a reading that a background thread refreshes every millisecond (what Sentinel's
//!   `TimeUtil` does). Reading it costs one atomic load instead of a system call; the price is millisecond
//!   resolution, which is what Sentinel's statistics use anyway. It is the default clock of an engine.
//! * [`ManualClock`] never moves by itself: tests and benchmarks [`set`](ManualClock::set) and
//!   [`advance`](ManualClock::advance) it, and its sleep returns at once without moving time.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const NANOS_PER_MILLI: u64 = 1_000_000;

/// A source of time for the engine.
///
/// Implementations must be cheap to call: the engine reads the clock once when an entry is admitted and
/// once when it exits.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Nanoseconds since the Unix epoch, never decreasing for real clocks.
    fn now_nanos(&self) -> u64;

    /// Milliseconds since the Unix epoch: the scale of sliding windows and metric timestamps.
    fn now_ms(&self) -> u64 {
        self.now_nanos() / NANOS_PER_MILLI
    }

    /// Blocks the calling thread for `duration` (a queueing wait). [`ManualClock`] returns at once.
    fn sleep(&self, duration: Duration);

    /// Whether [`Clock::sleep`] really waits. Async entries use it to decide between a timer and nothing.
    fn sleeps(&self) -> bool {
        true
    }

    /// How far a reading may lag the real time: a clock that moves in ticks reads the same for every
    /// call within a tick (default zero: precise). Pacing with no queue admits the calls whose slots
    /// fall within one tick of the reading, which it cannot tell apart from calls that are due.
    fn resolution(&self) -> Duration {
        Duration::ZERO
    }
}

/// How often the [`CachedClock`]'s ticker reads the time.
const TICK: Duration = Duration::from_millis(1);

/// The epoch-anchored monotonic origin shared by the real clocks.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    instant: Instant,
    epoch_nanos: u64,
}

impl Anchor {
    fn now() -> Self {
        let epoch_nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        Anchor {
            instant: Instant::now(),
            epoch_nanos,
        }
    }

    fn read(&self) -> u64 {
        let elapsed = u64::try_from(self.instant.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.epoch_nanos.saturating_add(elapsed)
    }
}

/// The real clock, read precisely on every call (one `Instant::now()`).
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    anchor: Anchor,
}

impl SystemClock {
    /// A clock anchored to the wall clock now.
    pub fn new() -> Self {
        SystemClock {
            anchor: Anchor::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now_nanos(&self) -> u64 {
        self.anchor.read()
    }

    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// The real clock, read from a value a background thread refreshes every millisecond.
///
/// All `CachedClock`s of a process share one ticker thread, started on first use. A reading lags real time
/// by at most about one millisecond. A process forked from one that used it has no ticker thread (a
/// fork copies only the forking thread): its first `CachedClock::new` (building an engine does it)
/// starts one, and until then the clocks it inherited stand still, so build engines after a fork, or
/// at least one.
#[derive(Debug, Clone, Copy)]
pub struct CachedClock {
    ticker: &'static Ticker,
}

#[derive(Debug)]
struct Ticker {
    nanos: AtomicU64,
    /// The process whose ticker thread refreshes `nanos` (0: none yet).
    process: AtomicU32,
    anchor: Anchor,
}

impl Ticker {
    /// Starts the ticker thread unless process `pid` has one (a forked child does not).
    fn run_in(&'static self, pid: u32) {
        let previous = self.process.swap(pid, Ordering::AcqRel);
        if previous == pid {
            return;
        }
        let anchor = self.anchor;
        let spawned = std::thread::Builder::new()
            .name("floodgate-clock".into())
            .spawn(move || {
                // Ends if a later process (a fork's child that started its own) took over.
                while self.process.load(Ordering::Acquire) == pid {
                    std::thread::sleep(TICK);
                    self.nanos.store(anchor.read(), Ordering::Relaxed);
                }
            });
        let fallback = if spawned.is_err() {
            // Without a ticker the reading would freeze; fall back to precise reads.
            u64::MAX
        } else {
            anchor.read()
        };
        self.nanos.store(fallback, Ordering::Relaxed);
    }
}

impl CachedClock {
    /// The process-wide cached clock; starts the ticker thread on first use (and in a forked child).
    pub fn new() -> Self {
        static TICKER: OnceLock<&'static Ticker> = OnceLock::new();
        let ticker = *TICKER.get_or_init(|| {
            let anchor = Anchor::now();
            Box::leak(Box::new(Ticker {
                nanos: AtomicU64::new(anchor.read()),
                process: AtomicU32::new(0),
                anchor,
            }))
        });
        ticker.run_in(std::process::id());
        CachedClock { ticker }
    }
}

impl Default for CachedClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for CachedClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        let nanos = self.ticker.nanos.load(Ordering::Relaxed);
        if nanos == u64::MAX {
            return SystemClock::new().now_nanos();
        }
        nanos
    }

    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }

    fn resolution(&self) -> Duration {
        TICK
    }
}

/// A clock that moves only when told to. Clones share one time.
///
/// ```
/// use floodgate_core::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new(1_700_000_000_000);
/// clock.advance(Duration::from_millis(10));
/// assert_eq!(clock.now_ms(), 1_700_000_000_010);
/// clock.sleep(Duration::from_secs(5)); // returns at once, time does not move
/// assert_eq!(clock.now_ms(), 1_700_000_000_010);
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading `epoch_ms` milliseconds since the Unix epoch.
    pub fn new(epoch_ms: u64) -> Self {
        ManualClock {
            nanos: Arc::new(AtomicU64::new(epoch_ms.saturating_mul(NANOS_PER_MILLI))),
        }
    }

    /// Sets the time to `epoch_ms`; may move backwards (the engine tolerates it).
    pub fn set(&self, epoch_ms: u64) {
        self.nanos
            .store(epoch_ms.saturating_mul(NANOS_PER_MILLI), Ordering::SeqCst);
    }

    /// Sets the time with nanosecond precision.
    pub fn set_nanos(&self, epoch_nanos: u64) {
        self.nanos.store(epoch_nanos, Ordering::SeqCst);
    }

    /// Moves the time forward by `by`.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .nanos
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_add(by))
            });
    }
}

impl Clock for ManualClock {
    fn now_nanos(&self) -> u64 {
        self.nanos.load(Ordering::SeqCst)
    }

    fn sleep(&self, _duration: Duration) {}

    fn sleeps(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1_000);
        assert_eq!(clock.now_ms(), 1_000);
        clock.advance(Duration::from_micros(1_500));
        assert_eq!(clock.now_nanos(), 1_001_500_000);
        assert_eq!(clock.now_ms(), 1_001);
        let shared = clock.clone();
        shared.set(500);
        assert_eq!(
            clock.now_ms(),
            500,
            "clones share one time; set may go back"
        );
        clock.sleep(Duration::from_secs(100));
        assert_eq!(clock.now_ms(), 500);
        assert!(!clock.sleeps());
    }

    #[test]
    fn manual_clock_saturates() {
        let clock = ManualClock::new(u64::MAX);
        clock.advance(Duration::from_secs(u64::MAX));
        assert_eq!(clock.now_nanos(), u64::MAX);
    }

    /// A process whose recorded ticker is another process's (a forked child: the fork copied no ticker
    /// thread) starts its own, and the clock moves. (Here the replaced thread, this process's own,
    /// sees the process taken back and goes on too; in a child it does not exist.)
    #[test]
    fn a_process_without_its_ticker_starts_one() {
        let clock = CachedClock::new();
        let pid = std::process::id();
        let ticker = clock.ticker;
        // As if this were the child of process `pid`: the recorded process is not this one.
        ticker.process.store(pid ^ 1, Ordering::Release);
        CachedClock::new();
        assert_eq!(ticker.process.load(Ordering::Acquire), pid, "taken over");
        let start = clock.now_nanos();
        // The new ticker moves the clock (polled: this is the real clock's own thread at work).
        let moved = (0..5_000).any(|_| {
            std::thread::yield_now();
            clock.now_nanos() > start
        }) || {
            std::thread::sleep(Duration::from_millis(20));
            clock.now_nanos() > start
        };
        assert!(moved, "the clock moves");
    }

    #[test]
    fn real_clocks_are_epoch_anchored_and_monotonic() {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let precise = SystemClock::new();
        let cached = CachedClock::new();
        for clock in [&precise as &dyn Clock, &cached] {
            let a = clock.now_ms();
            assert!(a.abs_diff(wall) < 5_000, "{a} vs wall {wall}");
            let b = clock.now_nanos();
            let c = clock.now_nanos();
            assert!(c >= b);
        }
    }
}
