//! `SystemProbe`: where system protection reads the machine's load average and CPU usage.
//!
//! A probe answers two questions, each `None` when the reading is unavailable (no such file, an
//! unsupported platform, no sample yet). System protection reads the probe on the entry path, only for
//! inbound entries and only when a load or CPU threshold is set, so a probe must answer from memory: the
//! engine's default [`OsProbe`](super::OsProbe) samples the OS once a second on a background thread and
//! answers from atomics. [`ManualProbe`] is set by hand, for tests.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A source of the machine's load average and CPU usage. Inject one with
/// [`FloodgateBuilder::system_probe`](crate::FloodgateBuilder::system_probe).
pub trait SystemProbe: Send + Sync + fmt::Debug + 'static {
    /// The load average (1 minute), or `None` when unavailable.
    fn load_average(&self) -> Option<f64>;

    /// The CPU usage as a ratio in `0..=1`, or `None` when unavailable.
    fn cpu_usage(&self) -> Option<f64>;

    /// Called when readings are wanted: when system rules that read load or CPU are put in force, and
    /// when the system status is read. A sampling probe starts its sampler here; the default does nothing.
    /// Called more than once.
    fn start(&self) {}
}

/// An `Option<f64>` in an atomic (`None` as a NaN bit pattern).
#[derive(Debug)]
pub(crate) struct AtomicReading(AtomicU64);

const UNAVAILABLE: u64 = u64::MAX;

impl AtomicReading {
    pub(crate) const fn unavailable() -> Self {
        AtomicReading(AtomicU64::new(UNAVAILABLE))
    }

    #[inline]
    pub(crate) fn get(&self) -> Option<f64> {
        let bits = self.0.load(Ordering::Relaxed);
        let value = f64::from_bits(bits);
        (!value.is_nan()).then_some(value)
    }

    pub(crate) fn set(&self, value: Option<f64>) {
        let bits = value
            .filter(|v| !v.is_nan())
            .map_or(UNAVAILABLE, f64::to_bits);
        self.0.store(bits, Ordering::Relaxed);
    }
}

#[derive(Debug)]
struct Readings {
    load: AtomicReading,
    cpu: AtomicReading,
}

/// A probe whose readings are set by hand. Clones share the readings, so a test keeps one clone and gives
/// the other to the engine.
///
/// ```
/// use floodgate_core::{ManualProbe, SystemProbe};
///
/// let probe = ManualProbe::new();
/// assert_eq!(probe.cpu_usage(), None); // unavailable until set
/// probe.set_cpu_usage(Some(0.85));
/// probe.set_load_average(Some(3.5));
/// assert_eq!((probe.load_average(), probe.cpu_usage()), (Some(3.5), Some(0.85)));
/// ```
#[derive(Debug, Clone)]
pub struct ManualProbe {
    readings: Arc<Readings>,
}

impl ManualProbe {
    /// A probe with both readings unavailable.
    pub fn new() -> Self {
        ManualProbe {
            readings: Arc::new(Readings {
                load: AtomicReading::unavailable(),
                cpu: AtomicReading::unavailable(),
            }),
        }
    }

    /// A probe reading `load` and `cpu`.
    pub fn with(load: Option<f64>, cpu: Option<f64>) -> Self {
        let probe = ManualProbe::new();
        probe.set_load_average(load);
        probe.set_cpu_usage(cpu);
        probe
    }

    /// Sets the load average (`None`: unavailable).
    pub fn set_load_average(&self, load: Option<f64>) {
        self.readings.load.set(load);
    }

    /// Sets the CPU usage ratio (`None`: unavailable).
    pub fn set_cpu_usage(&self, cpu: Option<f64>) {
        self.readings.cpu.set(cpu);
    }
}

impl Default for ManualProbe {
    fn default() -> Self {
        Self::new()
    }
}

impl SystemProbe for ManualProbe {
    fn load_average(&self) -> Option<f64> {
        self.readings.load.get()
    }

    fn cpu_usage(&self) -> Option<f64> {
        self.readings.cpu.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_reading_round_trips() {
        let r = AtomicReading::unavailable();
        assert_eq!(r.get(), None);
        r.set(Some(0.0));
        assert_eq!(r.get(), Some(0.0));
        r.set(Some(-1.0));
        assert_eq!(r.get(), Some(-1.0));
        r.set(Some(f64::NAN));
        assert_eq!(r.get(), None);
    }
}
