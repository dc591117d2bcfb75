//! `OsProbe`: the machine's load average and CPU usage, sampled once a second on a background thread.
//!
//! Each sample reads the load average and a CPU-time counter (see `procfs` for the files) and keeps the
//! counter for the next sample. CPU usage is the busy share of the capacity between two samples:
//!
//! ```text
//! cgroup with a quota:    usage = Δ cgroup CPU time / (Δ wall time × quota cores)
//! no quota anywhere:      usage = Δ busy ticks / Δ total ticks            (/proc/stat, the whole host)
//! no quota, no /proc/stat: usage = Δ cgroup CPU time / (Δ wall time × online CPUs)
//! ```
//!
//! clamped to `0..=1`. A quota is what limits a container, so usage is measured against it (a 1.25-core
//! quota that is fully used reads 1.0, not the 0.62 that "process time ÷ 2 processors" would give).
//! Without a quota the host's CPUs are the limit, and the host's busy share includes this
//! process's (Sentinel takes the larger of process and system usage for the same reason).
//!
//! The first sample has nothing to compare with and gives no CPU reading (Sentinel divides cumulative
//! time since start instead). A reading is "unavailable" (`None`), never `-1`, when its file is
//! missing or unreadable, before the second sample, and when the last sample is more than five seconds
//! old. The sampler starts on the first [`SystemProbe::start`] (the engine calls it when a load or CPU
//! threshold is put in force, or the system status is read) and stops when the probe is dropped with its
//! engine.

// Reading the probe costs two atomic loads.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::probe::{AtomicReading, SystemProbe};
use super::procfs::{self, CgroupCpu, HostTicks};
use crate::clock::{CachedClock, Clock};

const PERIOD: Duration = Duration::from_secs(1);
const STALE_AFTER_MS: u64 = 5_000;

/// The real probe: reads `/proc` and the cgroup file system (see the module docs).
///
/// ```no_run
/// use floodgate_core::{Floodgate, OsProbe};
///
/// // Load average per core, for hosts with many cores.
/// let fg = Floodgate::builder().system_probe(OsProbe::new().load_per_core(true)).build();
/// ```
#[derive(Debug)]
pub struct OsProbe {
    root: PathBuf,
    per_core_load: bool,
    shared: Arc<Shared>,
    sampler: OnceLock<Option<Running>>,
}

#[derive(Debug)]
struct Shared {
    load: AtomicReading,
    cpu: AtomicReading,
    /// When the last sample was taken ([`CachedClock`] ms; 0 = never).
    stamp_ms: AtomicU64,
    stop: AtomicBool,
}

/// Whether readings sampled at `stamp_ms` (0: never) still stand at `now_ms`: a sampler that stopped
/// (stuck on a slow file system, say) leaves its last readings unavailable after [`STALE_AFTER_MS`],
/// rather than deciding on figures of long ago.
fn is_fresh(stamp_ms: u64, now_ms: u64) -> bool {
    stamp_ms != 0 && now_ms.saturating_sub(stamp_ms) <= STALE_AFTER_MS
}

#[derive(Debug)]
struct Running {
    clock: CachedClock,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl OsProbe {
    /// A probe of this machine (files under `/`).
    pub fn new() -> Self {
        OsProbe::with_root("/")
    }

    /// A probe reading `proc/…` and `sys/…` under `root` instead of `/` (a host file system mounted
    /// elsewhere, or sample files).
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        OsProbe {
            root: root.into(),
            per_core_load: false,
            shared: Arc::new(Shared {
                load: AtomicReading::unavailable(),
                cpu: AtomicReading::unavailable(),
                stamp_ms: AtomicU64::new(0),
                stop: AtomicBool::new(false),
            }),
            sampler: OnceLock::new(),
        }
    }

    /// Reports the load average divided by the CPU capacity (the cgroup quota in cores, else the online
    /// CPUs), so that one threshold fits machines of any size (default: the raw load average).
    pub fn load_per_core(mut self, per_core: bool) -> Self {
        self.per_core_load = per_core;
        self
    }

    fn fresh(&self) -> bool {
        let Some(Some(running)) = self.sampler.get() else {
            return false;
        };
        is_fresh(
            self.shared.stamp_ms.load(Ordering::Relaxed),
            running.clock.now_ms(),
        )
    }

    fn spawn(&self) -> Option<Running> {
        let clock = CachedClock::new();
        let shared = self.shared.clone();
        let mut sampler = Sampler::new(self.root.clone(), self.per_core_load);
        let handle = thread::Builder::new()
            .name("floodgate-system-probe".into())
            .spawn(move || {
                let start = Instant::now();
                loop {
                    let elapsed = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    let (load, cpu) = sampler.sample(elapsed);
                    shared.load.set(load);
                    shared.cpu.set(cpu);
                    shared
                        .stamp_ms
                        .store(clock.now_ms().max(1), Ordering::Relaxed);
                    let next = Instant::now() + PERIOD;
                    loop {
                        if shared.stop.load(Ordering::Acquire) {
                            return;
                        }
                        let now = Instant::now();
                        if now >= next {
                            break;
                        }
                        thread::park_timeout(next - now);
                    }
                }
            });
        let handle = match handle {
            Ok(handle) => handle,
            Err(error) => {
                // Load and CPU then stay unavailable, and the system rules on them never block: say so.
                tracing::error!(
                    target: "floodgate::system",
                    %error,
                    "cannot start the system probe thread; load and CPU rules will not apply"
                );
                return None;
            }
        };
        Some(Running {
            clock,
            handle: Mutex::new(Some(handle)),
        })
    }
}

impl Default for OsProbe {
    fn default() -> Self {
        Self::new()
    }
}

impl SystemProbe for OsProbe {
    fn load_average(&self) -> Option<f64> {
        if !self.fresh() {
            return None;
        }
        self.shared.load.get()
    }

    fn cpu_usage(&self) -> Option<f64> {
        if !self.fresh() {
            return None;
        }
        self.shared.cpu.get()
    }

    fn start(&self) {
        self.sampler.get_or_init(|| self.spawn());
    }
}

impl Drop for OsProbe {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(Some(running)) = self.sampler.get() {
            let handle = running
                .handle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(handle) = handle {
                handle.thread().unpark();
                let _ = handle.join();
            }
        }
    }
}

/// A CPU-time counter read at one sample.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Counter {
    /// A cgroup with a quota: its CPU time against the quota.
    Quota {
        version: u8,
        used_nanos: u64,
        cores: f64,
    },
    /// No quota: the host's ticks.
    Host(HostTicks),
    /// No quota and no host ticks: the cgroup's CPU time against the online CPUs.
    Online {
        version: u8,
        used_nanos: u64,
        cores: f64,
    },
}

/// Turns successive readings of the files under `root` into load and CPU usage.
#[derive(Debug)]
pub(crate) struct Sampler {
    root: PathBuf,
    per_core_load: bool,
    previous: Option<(Counter, u64)>,
}

impl Sampler {
    pub(crate) fn new(root: PathBuf, per_core_load: bool) -> Self {
        Sampler {
            root,
            per_core_load,
            previous: None,
        }
    }

    fn counter(root: &Path) -> (Option<Counter>, Option<f64>) {
        let cgroup = procfs::read_cgroup_cpu(root);
        let online = procfs::read_online_cpus(root).map(|n| n as f64);
        if let Some(CgroupCpu {
            version,
            used_nanos,
            quota_cores: Some(cores),
        }) = cgroup
        {
            return (
                Some(Counter::Quota {
                    version,
                    used_nanos,
                    cores,
                }),
                Some(cores),
            );
        }
        if let Some(ticks) = procfs::read_host_ticks(root) {
            return (Some(Counter::Host(ticks)), online);
        }
        let counter = match (cgroup, online) {
            (Some(c), Some(cores)) => Some(Counter::Online {
                version: c.version,
                used_nanos: c.used_nanos,
                cores,
            }),
            _ => None,
        };
        (counter, online)
    }

    /// Takes a sample at `wall_nanos` (a monotonic reading): the load average and the CPU usage since the
    /// previous sample (`None` for the first one).
    pub(crate) fn sample(&mut self, wall_nanos: u64) -> (Option<f64>, Option<f64>) {
        let (counter, capacity) = Self::counter(&self.root);
        let mut load = procfs::read_load_average(&self.root);
        if self.per_core_load {
            load = match (load, capacity) {
                (Some(l), Some(c)) if c > 0.0 => Some(l / c),
                _ => None,
            };
        }
        let cpu = match (self.previous, counter) {
            (Some((before, then)), Some(now)) => {
                usage(before, now, wall_nanos.saturating_sub(then))
            }
            _ => None,
        };
        self.previous = counter.map(|c| (c, wall_nanos));
        (load, cpu)
    }
}

/// The busy share of capacity between two readings `wall_nanos` apart; `None` when they are not
/// comparable (another source, a counter that went backwards, no time elapsed).
fn usage(before: Counter, now: Counter, wall_nanos: u64) -> Option<f64> {
    let ratio = match (before, now) {
        (
            Counter::Quota {
                version: v0,
                used_nanos: u0,
                ..
            },
            Counter::Quota {
                version: v1,
                used_nanos: u1,
                cores,
            },
        )
        | (
            Counter::Online {
                version: v0,
                used_nanos: u0,
                ..
            },
            Counter::Online {
                version: v1,
                used_nanos: u1,
                cores,
            },
        ) => {
            if v0 != v1 || u1 < u0 || wall_nanos == 0 || cores <= 0.0 {
                return None;
            }
            (u1 - u0) as f64 / (wall_nanos as f64 * cores)
        }
        (Counter::Host(a), Counter::Host(b)) => {
            if b.total <= a.total || b.busy < a.busy {
                return None;
            }
            (b.busy - a.busy) as f64 / (b.total - a.total) as f64
        }
        _ => return None,
    };
    Some(ratio.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    const SECOND: u64 = 1_000_000_000;

    /// A fresh directory of sample files, removed on drop.
    struct Root(PathBuf);

    impl Root {
        fn new(name: &str) -> Self {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "floodgate-probe-{}-{}-{name}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Root(dir)
        }

        fn write(&self, path: &str, text: &str) -> &Self {
            let file = self.0.join(path);
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(file, text).unwrap();
            self
        }

        fn sampler(&self) -> Sampler {
            Sampler::new(self.0.clone(), false)
        }
    }

    impl Drop for Root {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn approx(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn cgroup_v2_with_a_half_core_quota() {
        let root = Root::new("v2-quota");
        root.write("proc/self/cgroup", "0::/\n")
            .write("proc/loadavg", "2.50 1.00 0.50 3/200 999\n")
            .write("proc/stat", "cpu  1 0 0 1000 0 0 0 0 0 0\n")
            .write("sys/fs/cgroup/cpu.max", "50000 100000\n")
            .write(
                "sys/fs/cgroup/cpu.stat",
                "usage_usec 1000000\nuser_usec 1\n",
            );
        let mut s = root.sampler();
        let (load, cpu) = s.sample(10 * SECOND);
        assert_eq!(
            (load, cpu),
            (Some(2.5), None),
            "the first CPU sample is discarded"
        );
        // 0.25 s of CPU in 1 s against half a core.
        root.write("sys/fs/cgroup/cpu.stat", "usage_usec 1250000\n");
        assert!(approx(s.sample(11 * SECOND).1, 0.5));
        // 0.75 s of CPU in 1 s: more than the quota allows on average, clamped.
        root.write("sys/fs/cgroup/cpu.stat", "usage_usec 2000000\n");
        assert_eq!(s.sample(12 * SECOND).1, Some(1.0));
    }

    #[test]
    fn cgroup_v2_without_a_quota_reads_the_host() {
        let root = Root::new("v2-max");
        root.write("proc/self/cgroup", "0::/\n")
            .write(
                "proc/stat",
                "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1\ncpu1 1\n",
            )
            .write("sys/fs/cgroup/cpu.max", "max 100000\n")
            .write("sys/fs/cgroup/cpu.stat", "usage_usec 1000000\n");
        let mut s = root.sampler();
        assert_eq!(s.sample(SECOND).1, None);
        // The host: 150 busy of 200 ticks.
        root.write("proc/stat", "cpu  250 0 100 850 0 0 0 0 0 0\n");
        assert!(approx(s.sample(2 * SECOND).1, 0.75));
        // Without /proc/stat: the cgroup's 1.5 s in 1 s against the 2 online CPUs.
        let root = Root::new("v2-max-online");
        root.write("proc/self/cgroup", "0::/\n")
            .write("sys/devices/system/cpu/online", "0-1\n")
            .write("sys/fs/cgroup/cpu.max", "max 100000\n")
            .write("sys/fs/cgroup/cpu.stat", "usage_usec 1000000\n");
        let mut s = root.sampler();
        assert_eq!(s.sample(SECOND).1, None);
        root.write("sys/fs/cgroup/cpu.stat", "usage_usec 2500000\n");
        assert!(approx(s.sample(2 * SECOND).1, 0.75));
    }

    #[test]
    fn cgroup_v2_own_path_and_the_smallest_quota_up_the_tree() {
        let root = Root::new("v2-nested");
        root.write("proc/self/cgroup", "0::/kubepods/pod1/app\n")
            .write("sys/fs/cgroup/cpu.stat", "usage_usec 999999999\n")
            .write("sys/fs/cgroup/kubepods/pod1/cpu.max", "125000 100000\n")
            .write("sys/fs/cgroup/kubepods/pod1/app/cpu.max", "max 100000\n")
            .write("sys/fs/cgroup/kubepods/pod1/app/cpu.stat", "usage_usec 0\n");
        let cg = procfs::read_cgroup_cpu(&root.0).unwrap();
        assert_eq!(
            (cg.version, cg.used_nanos, cg.quota_cores),
            (2, 0, Some(1.25))
        );
        let mut s = root.sampler();
        s.sample(0);
        // 1.25 s of CPU in 1 s against a 1.25-core quota: fully used.
        root.write(
            "sys/fs/cgroup/kubepods/pod1/app/cpu.stat",
            "usage_usec 1250000\n",
        );
        assert!(approx(s.sample(SECOND).1, 1.0));
    }

    #[test]
    fn cgroup_v1_quota_set_and_unlimited() {
        let root = Root::new("v1-quota");
        root.write("proc/self/cgroup", "3:cpu,cpuacct:/\n")
            .write("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "200000\n")
            .write("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n")
            .write("sys/fs/cgroup/cpuacct/cpuacct.usage", "5000000000\n")
            .write("proc/stat", "cpu  1 0 0 1 0 0 0 0 0 0\n");
        let cg = procfs::read_cgroup_cpu(&root.0).unwrap();
        assert_eq!((cg.version, cg.quota_cores), (1, Some(2.0)));
        let mut s = root.sampler();
        assert_eq!(s.sample(0).1, None);
        // 0.5 s of CPU in 0.5 s against 2 cores.
        root.write("sys/fs/cgroup/cpuacct/cpuacct.usage", "5500000000\n");
        assert!(approx(s.sample(SECOND / 2).1, 0.5));

        let root = Root::new("v1-unlimited");
        root.write("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n")
            .write("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n")
            .write("sys/fs/cgroup/cpuacct/cpuacct.usage", "0\n")
            .write("sys/devices/system/cpu/online", "0-3\n");
        let cg = procfs::read_cgroup_cpu(&root.0).unwrap();
        assert_eq!((cg.version, cg.quota_cores), (1, None));
        let mut s = root.sampler();
        s.sample(0);
        // No quota, no /proc/stat: 1 s of CPU in 1 s against 4 online CPUs.
        root.write("sys/fs/cgroup/cpuacct/cpuacct.usage", "1000000000\n");
        assert!(approx(s.sample(SECOND).1, 0.25));
    }

    #[test]
    fn proc_stat_fallback_and_nothing_at_all() {
        let root = Root::new("proc-only");
        root.write("proc/stat", "cpu  10 0 10 80 0 0 0 0 0 0\n");
        let mut s = root.sampler();
        assert_eq!(s.sample(0), (None, None), "no loadavg, first sample");
        root.write("proc/stat", "cpu  20 0 20 140 20 0 0 0 0 0\n");
        // 20 busy of 100 ticks (iowait counts as idle).
        assert!(approx(s.sample(SECOND).1, 0.2));
        // A counter that went backwards gives no reading, then sampling resumes.
        root.write("proc/stat", "cpu  1 0 1 1 0 0 0 0 0 0\n");
        assert_eq!(s.sample(2 * SECOND).1, None);
        root.write("proc/stat", "cpu  2 0 1 2 0 0 0 0 0 0\n");
        assert!(approx(s.sample(3 * SECOND).1, 0.5));

        let empty = Root::new("empty");
        let mut s = empty.sampler();
        assert_eq!(s.sample(0), (None, None));
        assert_eq!(s.sample(SECOND), (None, None));
    }

    #[test]
    fn load_per_core_divides_by_the_capacity() {
        let root = Root::new("per-core");
        root.write("proc/loadavg", "3.00 1 1 1/1 1\n")
            .write("sys/devices/system/cpu/online", "0-5\n")
            .write("proc/stat", "cpu  1 0 0 1 0 0 0 0 0 0\n");
        let mut s = Sampler::new(root.0.clone(), true);
        assert!(approx(s.sample(0).0, 0.5), "3 over 6 CPUs");
        root.write("proc/self/cgroup", "0::/\n")
            .write("sys/fs/cgroup/cpu.max", "150000 100000\n")
            .write("sys/fs/cgroup/cpu.stat", "usage_usec 1\n");
        assert!(approx(s.sample(SECOND).0, 2.0), "3 over a 1.5-core quota");
    }

    #[test]
    fn readings_go_stale_five_seconds_after_the_last_sample() {
        let t = 1_700_000_000_000;
        assert!(!is_fresh(0, t), "never sampled");
        assert!(is_fresh(t, t));
        assert!(is_fresh(t, t + STALE_AFTER_MS));
        assert!(!is_fresh(t, t + STALE_AFTER_MS + 1), "the sampler stopped");
        assert!(
            is_fresh(t, t - 1),
            "a stamp read after the clock (two unordered atomic reads) is fresh"
        );
    }

    #[test]
    fn the_sampler_starts_on_demand_and_stops_when_dropped() {
        let root = Root::new("thread");
        root.write("proc/loadavg", "0.75 0 0 1/1 1\n");
        let probe = OsProbe::with_root(root.0.clone());
        assert_eq!(probe.load_average(), None, "not started");
        let shared = Arc::downgrade(&probe.shared);
        probe.start();
        probe.start();
        assert!(matches!(probe.sampler.get(), Some(Some(_))));
        drop(probe);
        assert!(
            shared.upgrade().is_none(),
            "the sampler thread exited and released its state"
        );
    }
}
