//! The files the OS probe reads, each with a pure parser over its contents.
//!
//! Every path is taken under a `root` (`/` in production, a directory of sample files in tests):
//!
//! * load average: the first field of `proc/loadavg`;
//! * CPU time of the process's cgroup, first cgroup v2, then v1:
//!   - v2: `usage_usec` of `sys/fs/cgroup/<own path>/cpu.stat` (the own path from the `0::` line of
//!     `proc/self/cgroup`; the mount root `sys/fs/cgroup` itself when that directory does not exist, as
//!     inside a container with its own cgroup namespace), and the quota `cpu.max` (`max 100000` is
//!     unlimited, `50000 100000` is half a core);
//!   - v1: `sys/fs/cgroup/cpuacct/cpuacct.usage` (ns) and the quota `sys/fs/cgroup/cpu/cpu.cfs_quota_us`
//!     ÷ `cpu.cfs_period_us` (a quota of `-1` is unlimited), under the own path of the `cpu`/`cpuacct`
//!     line when it exists;
//!
//!   the quota in force is the smallest one from the group up to the mount root;
//! * host CPU time: the `cpu` line of `proc/stat` (busy = user + nice + system + irq + softirq + steal,
//!   total = busy + idle + iowait);
//! * online CPUs: `sys/devices/system/cpu/online` (`0-3,6`), else the `cpuN` lines of `proc/stat`.

use std::fs;
use std::path::{Path, PathBuf};

/// The load average: the first field of `/proc/loadavg`.
pub(crate) fn parse_loadavg(text: &str) -> Option<f64> {
    let load: f64 = text.split_whitespace().next()?.parse().ok()?;
    (load.is_finite() && load >= 0.0).then_some(load)
}

/// A cgroup v2 `cpu.max`: `Some(None)` when unlimited (`max …`), `Some(Some(cores))` for a quota.
pub(crate) fn parse_cpu_max(text: &str) -> Option<Option<f64>> {
    let mut fields = text.split_whitespace();
    let quota = fields.next()?;
    let period: f64 = match fields.next() {
        Some(p) => p.parse().ok()?,
        None => 100_000.0,
    };
    if quota == "max" {
        return Some(None);
    }
    let quota: f64 = quota.parse().ok()?;
    (quota > 0.0 && period > 0.0).then_some(Some(quota / period))
}

/// `usage_usec` of a cgroup v2 `cpu.stat`.
pub(crate) fn parse_cpu_stat_usage_usec(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        (fields.next()? == "usage_usec")
            .then(|| fields.next()?.parse().ok())
            .flatten()
    })
}

/// A cgroup v1 CFS quota: `Some(None)` when unlimited (`-1`), `Some(Some(cores))` for a quota.
pub(crate) fn parse_cfs_quota(quota: &str, period: &str) -> Option<Option<f64>> {
    let quota: i64 = quota.trim().parse().ok()?;
    if quota < 0 {
        return Some(None);
    }
    let period: i64 = period.trim().parse().ok()?;
    (quota > 0 && period > 0).then_some(Some(quota as f64 / period as f64))
}

/// A single unsigned number (`cpuacct.usage`).
pub(crate) fn parse_u64(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// Host CPU time from `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostTicks {
    pub(crate) busy: u64,
    pub(crate) total: u64,
}

/// The aggregate `cpu` line of `/proc/stat`.
pub(crate) fn parse_proc_stat(text: &str) -> Option<HostTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    if values.len() < 4 {
        return None;
    }
    // user nice system idle iowait irq softirq steal [guest guest_nice: already in user and nice]
    // Checked: absurd counters (a bogus tree under `with_root`) read as unavailable, never panic the
    // sampler.
    let total = values
        .iter()
        .take(8)
        .try_fold(0u64, |sum, v| sum.checked_add(*v))?;
    let idle = values[3].checked_add(values.get(4).copied().unwrap_or(0))?;
    Some(HostTicks {
        busy: total.checked_sub(idle)?,
        total,
    })
}

/// The number of CPUs in a CPU list such as `0-3,6`.
pub(crate) fn parse_cpu_list(text: &str) -> Option<usize> {
    let mut count: usize = 0;
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let n = match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                b.checked_sub(a)?.checked_add(1)?
            }
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
        count = count.checked_add(n)?;
    }
    (count > 0).then_some(count)
}

/// The `cpuN` lines of `/proc/stat`.
pub(crate) fn count_proc_stat_cpus(text: &str) -> Option<usize> {
    let count = text
        .lines()
        .filter(|l| {
            l.strip_prefix("cpu")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    (count > 0).then_some(count)
}

/// The process's cgroup v2 path (the `0::` line of `/proc/self/cgroup`).
pub(crate) fn parse_cgroup_v2_path(text: &str) -> Option<&str> {
    text.lines().find_map(|l| l.strip_prefix("0::"))
}

/// The process's cgroup v1 path for `controller` (a line `N:a,b:/path` whose list names it).
pub(crate) fn parse_cgroup_v1_path<'a>(text: &'a str, controller: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then_some(path)
    })
}

/// CPU time used by the process's cgroup.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CgroupCpu {
    /// 1 or 2.
    pub(crate) version: u8,
    /// Cumulative CPU time, ns.
    pub(crate) used_nanos: u64,
    /// The quota in cores, if any group up to the root has one.
    pub(crate) quota_cores: Option<f64>,
}

fn read(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok()
}

/// `mount/<own>` when that directory exists, then `mount`.
fn candidates(mount: &Path, own: Option<&str>) -> Vec<PathBuf> {
    let mut dirs = Vec::with_capacity(2);
    if let Some(own) = own.map(|p| p.trim().trim_start_matches('/')) {
        if !own.is_empty() && !own.split('/').any(|c| c == "..") {
            let dir = mount.join(own);
            if dir.is_dir() {
                dirs.push(dir);
            }
        }
    }
    dirs.push(mount.to_path_buf());
    dirs
}

/// The smallest quota from `dir` up to `mount`, each level read by `quota_at`.
fn smallest_quota(
    mount: &Path,
    dir: &Path,
    quota_at: impl Fn(&Path) -> Option<Option<f64>>,
) -> Option<f64> {
    let mut smallest: Option<f64> = None;
    let mut dir = dir.to_path_buf();
    loop {
        if let Some(Some(cores)) = quota_at(&dir) {
            smallest = Some(smallest.map_or(cores, |s| s.min(cores)));
        }
        if dir == mount || !dir.starts_with(mount) || !dir.pop() {
            return smallest;
        }
    }
}

/// The process's cgroup CPU time: v2, then v1.
pub(crate) fn read_cgroup_cpu(root: &Path) -> Option<CgroupCpu> {
    let self_cgroup = read(&root.join("proc/self/cgroup")).unwrap_or_default();
    read_cgroup_v2(root, &self_cgroup).or_else(|| read_cgroup_v1(root, &self_cgroup))
}

fn read_cgroup_v2(root: &Path, self_cgroup: &str) -> Option<CgroupCpu> {
    let mount = root.join("sys/fs/cgroup");
    candidates(&mount, parse_cgroup_v2_path(self_cgroup))
        .into_iter()
        .find_map(|dir| {
            let usec = parse_cpu_stat_usage_usec(&read(&dir.join("cpu.stat"))?)?;
            Some(CgroupCpu {
                version: 2,
                used_nanos: usec.saturating_mul(1000),
                quota_cores: smallest_quota(&mount, &dir, |d| {
                    parse_cpu_max(&read(&d.join("cpu.max"))?)
                }),
            })
        })
}

fn read_cgroup_v1(root: &Path, self_cgroup: &str) -> Option<CgroupCpu> {
    let base = root.join("sys/fs/cgroup");
    let used_nanos = ["cpuacct", "cpu,cpuacct", "cpuacct,cpu"]
        .iter()
        .find_map(|name| {
            let mount = base.join(name);
            candidates(&mount, parse_cgroup_v1_path(self_cgroup, "cpuacct"))
                .into_iter()
                .find_map(|dir| parse_u64(&read(&dir.join("cpuacct.usage"))?))
        })?;
    let quota_cores = ["cpu", "cpu,cpuacct", "cpuacct,cpu"]
        .iter()
        .map(|name| base.join(name))
        .find(|mount| mount.is_dir())
        .and_then(|mount| {
            let dir = candidates(&mount, parse_cgroup_v1_path(self_cgroup, "cpu"))
                .into_iter()
                .next()?;
            smallest_quota(&mount, &dir, |d| {
                parse_cfs_quota(
                    &read(&d.join("cpu.cfs_quota_us"))?,
                    &read(&d.join("cpu.cfs_period_us"))?,
                )
            })
        });
    Some(CgroupCpu {
        version: 1,
        used_nanos,
        quota_cores,
    })
}

/// Host CPU ticks from `proc/stat`.
pub(crate) fn read_host_ticks(root: &Path) -> Option<HostTicks> {
    parse_proc_stat(&read(&root.join("proc/stat"))?)
}

/// The load average from `proc/loadavg`.
pub(crate) fn read_load_average(root: &Path) -> Option<f64> {
    parse_loadavg(&read(&root.join("proc/loadavg"))?)
}

/// The number of online CPUs.
pub(crate) fn read_online_cpus(root: &Path) -> Option<usize> {
    read(&root.join("sys/devices/system/cpu/online"))
        .and_then(|t| parse_cpu_list(&t))
        .or_else(|| count_proc_stat_cpus(&read(&root.join("proc/stat"))?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loadavg() {
        assert_eq!(parse_loadavg("1.04 0.61 0.40 5/111 32681\n"), Some(1.04));
        assert_eq!(parse_loadavg(""), None);
        assert_eq!(parse_loadavg("x 1 2"), None);
    }

    #[test]
    fn cpu_max() {
        assert_eq!(parse_cpu_max("max 100000\n"), Some(None));
        assert_eq!(parse_cpu_max("50000 100000\n"), Some(Some(0.5)));
        assert_eq!(parse_cpu_max("125000 100000"), Some(Some(1.25)));
        assert_eq!(parse_cpu_max("max"), Some(None));
        assert_eq!(parse_cpu_max("0 100000"), None);
        assert_eq!(parse_cpu_max("abc 100000"), None);
        assert_eq!(parse_cpu_max(""), None);
    }

    #[test]
    fn cpu_stat() {
        let text = "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\nnr_periods 0\n";
        assert_eq!(parse_cpu_stat_usage_usec(text), Some(1_234_567));
        assert_eq!(parse_cpu_stat_usage_usec("user_usec 5\n"), None);
    }

    #[test]
    fn cfs_quota() {
        assert_eq!(parse_cfs_quota("-1\n", "100000\n"), Some(None));
        assert_eq!(parse_cfs_quota("150000\n", "100000\n"), Some(Some(1.5)));
        assert_eq!(parse_cfs_quota("150000", "0"), None);
        assert_eq!(parse_cfs_quota("", "100000"), None);
    }

    #[test]
    fn proc_stat() {
        let text = "cpu  100 20 30 800 50 0 0 0 0 0\ncpu0 50 10 15 400 25 0 0 0 0 0\ncpu1 50 10 15 400 25 0 0 0 0 0\nintr 1\n";
        assert_eq!(
            parse_proc_stat(text),
            Some(HostTicks {
                busy: 150,
                total: 1000
            })
        );
        assert_eq!(count_proc_stat_cpus(text), Some(2));
        assert_eq!(parse_proc_stat("cpu  1 2\n"), None);
        assert_eq!(parse_proc_stat("intr 1\n"), None);
        let max = u64::MAX;
        assert_eq!(
            parse_proc_stat(&format!("cpu  {max} 1 0 0\n")),
            None,
            "overflowing counters read as unavailable, without a panic"
        );
        assert_eq!(parse_proc_stat(&format!("cpu  0 0 0 {max} 1\n")), None);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(2));
        assert_eq!(parse_cpu_list("0-3,6,8-9"), Some(7));
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        let max = usize::MAX;
        assert_eq!(
            parse_cpu_list(&format!("0-{max}")),
            None,
            "no overflow panic"
        );
        assert_eq!(parse_cpu_list(&format!("0-{},5", max - 1)), None);
    }

    #[test]
    fn self_cgroup_paths() {
        let v2 = "0::/system.slice/app.service\n";
        assert_eq!(parse_cgroup_v2_path(v2), Some("/system.slice/app.service"));
        let v1 = "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n0::/\n";
        assert_eq!(parse_cgroup_v1_path(v1, "cpu"), Some("/docker/abc"));
        assert_eq!(parse_cgroup_v1_path(v1, "cpuacct"), Some("/docker/abc"));
        assert_eq!(parse_cgroup_v1_path(v1, "pids"), None);
        assert_eq!(parse_cgroup_v2_path(v1), Some("/"));
    }
}
