//! The merged thresholds of the system rules in force, and what a system block carries.
//!
//! Rules merge by the minimum per dimension: `[{qps: 100}, {qps: 50, maxThread: 8}]` is in force as
//! `qps 50, maxThread 8`. A dimension no rule sets is off. A system block names the dimension that
//! refused the entry (Sentinel's `limitType`: `qps`, `thread`, `rt`, `load`, `cpu`) with its threshold.

use std::any::Any;
use std::fmt;

use super::rule::SystemRule;
use crate::block::BlockRule;

/// The thresholds system protection checks, merged from every system rule in force (`None` = off).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SystemThresholds {
    /// Load average threshold.
    pub highest_system_load: Option<f64>,
    /// CPU usage threshold (ratio).
    pub highest_cpu_usage: Option<f64>,
    /// Inbound pass QPS threshold.
    pub qps: Option<f64>,
    /// Average inbound response time threshold, ms.
    pub avg_rt: Option<u64>,
    /// Inbound requests in flight, at most.
    pub max_thread: Option<u64>,
}

fn min_f(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn min_u(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl SystemThresholds {
    /// The minimum per dimension over `rules`.
    pub fn merge<'a>(rules: impl IntoIterator<Item = &'a SystemRule>) -> Self {
        rules
            .into_iter()
            .fold(SystemThresholds::default(), |t, r| SystemThresholds {
                highest_system_load: min_f(t.highest_system_load, r.highest_system_load),
                highest_cpu_usage: min_f(t.highest_cpu_usage, r.highest_cpu_usage),
                qps: min_f(t.qps, r.qps),
                avg_rt: min_u(t.avg_rt, r.avg_rt),
                max_thread: min_u(t.max_thread, r.max_thread),
            })
    }

    /// Whether no dimension is on (system protection is off).
    pub fn is_empty(&self) -> bool {
        *self == SystemThresholds::default()
    }

    /// Whether a dimension reads the system probe (load or CPU).
    pub fn reads_probe(&self) -> bool {
        self.highest_system_load.is_some() || self.highest_cpu_usage.is_some()
    }
}

/// The dimension of system protection that blocked (Sentinel's `SystemBlockException.limitType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SystemLimitType {
    /// Inbound pass QPS.
    Qps,
    /// Inbound requests in flight.
    Thread,
    /// Average inbound response time.
    Rt,
    /// Load average (with the BBR condition).
    Load,
    /// CPU usage.
    Cpu,
}

impl SystemLimitType {
    /// Every dimension, in check order.
    pub const ALL: [SystemLimitType; 5] = [
        SystemLimitType::Qps,
        SystemLimitType::Thread,
        SystemLimitType::Rt,
        SystemLimitType::Load,
        SystemLimitType::Cpu,
    ];

    /// Sentinel's name: `qps`, `thread`, `rt`, `load` or `cpu`.
    pub fn as_str(self) -> &'static str {
        match self {
            SystemLimitType::Qps => "qps",
            SystemLimitType::Thread => "thread",
            SystemLimitType::Rt => "rt",
            SystemLimitType::Load => "load",
            SystemLimitType::Cpu => "cpu",
        }
    }
}

impl fmt::Display for SystemLimitType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The rule a system block carries: which dimension refused the entry and its merged threshold.
///
/// ```
/// use floodgate_core::{EntryType, Floodgate, RuleType, SystemLimit, SystemLimitType};
///
/// let fg = Floodgate::default();
/// fg.load_rules_json(RuleType::System, r#"[{"qps":0}]"#)?;
/// let block = fg.entry("GET:/").entry_type(EntryType::In).enter().unwrap_err();
/// let limit = block.rule_as::<SystemLimit>().unwrap();
/// assert_eq!((limit.limit_type, limit.threshold), (SystemLimitType::Qps, 0.0));
/// # Ok::<(), floodgate_core::RuleError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SystemLimit {
    /// The dimension.
    pub limit_type: SystemLimitType,
    /// Its threshold in force.
    pub threshold: f64,
}

impl BlockRule for SystemLimit {
    /// The dimension's name, as Sentinel reports it in the block log's `limitApp` column.
    fn limit_app(&self) -> &str {
        self.limit_type.as_str()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_by_minimum_and_keeps_every_set_dimension() {
        // Sentinel's SystemRuleManagerTest.testLoadAndGetRules and testLoadDuplicateTypeOfRules.
        let rules = [
            SystemRule::new().highest_system_load(1.2),
            SystemRule::new().max_thread(17),
            SystemRule::new().highest_cpu_usage(0.7),
            SystemRule::new().qps(1500.0),
            SystemRule::new().avg_rt(50),
            SystemRule::new().highest_system_load(2.3),
            SystemRule::new(),
        ];
        let t = SystemThresholds::merge(&rules);
        assert_eq!(
            t,
            SystemThresholds {
                highest_system_load: Some(1.2),
                highest_cpu_usage: Some(0.7),
                qps: Some(1500.0),
                avg_rt: Some(50),
                max_thread: Some(17),
            }
        );
        assert!(t.reads_probe());
        assert!(SystemThresholds::merge(&[SystemRule::new()]).is_empty());
    }
}
