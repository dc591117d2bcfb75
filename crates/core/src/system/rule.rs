//! `SystemRule`: thresholds for the whole process's inbound traffic (Sentinel's `SystemRule`).
//!
//! A rule sets at least one of five dimensions; an unset dimension is `None` here and `-1` (or absent)
//! in JSON:
//!
//! | JSON | field | meaning |
//! |---|---|---|
//! | `highestSystemLoad` | [`highest_system_load`](SystemRule::highest_system_load) | load average above which BBR decides |
//! | `highestCpuUsage` | [`highest_cpu_usage`](SystemRule::highest_cpu_usage) | CPU usage ratio in `0..=1` |
//! | `qps` | [`qps`](SystemRule::qps) | inbound passes per second |
//! | `avgRt` | [`avg_rt`](SystemRule::avg_rt) | average inbound response time, ms |
//! | `maxThread` | [`max_thread`](SystemRule::max_thread) | inbound requests in flight |
//!
//! Several rules merge by the minimum per dimension (see [`SystemThresholds`](super::SystemThresholds)).
//! Where Sentinel ignores a CPU threshold above 1 and lets the last rule of a list decide whether system
//! protection is on at all (a trailing rule that sets nothing turned it off), Floodgate rejects an
//! invalid rule with an error naming it, and a dimension is on whenever any rule sets it. A rule that
//! sets no dimension is refused: it protects nothing, and in JSON it is most likely a misspelt
//! threshold (`maxQps`, which is not a field).

use serde_json::{Map, Value, json};

use crate::rules::{Fields, RuleError, RuleFields, RuleType, SentinelRule, object};

/// A system rule. Build one with the setters:
///
/// ```
/// use floodgate_core::SystemRule;
///
/// let rule = SystemRule::new().qps(1500.0).max_thread(40);
/// assert_eq!((rule.qps, rule.max_thread, rule.avg_rt), (Some(1500.0), Some(40), None));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SystemRule {
    /// Optional id.
    pub id: Option<i64>,
    /// Load average threshold (≥ 0).
    pub highest_system_load: Option<f64>,
    /// CPU usage threshold, a ratio in `0..=1`.
    pub highest_cpu_usage: Option<f64>,
    /// Inbound pass QPS threshold (≥ 0; 0 blocks every inbound entry).
    pub qps: Option<f64>,
    /// Average inbound response time threshold, ms.
    pub avg_rt: Option<u64>,
    /// Inbound requests in flight, at most.
    pub max_thread: Option<u64>,
}

impl SystemRule {
    /// A rule that sets nothing yet (a rule must set at least one threshold to load).
    pub fn new() -> Self {
        SystemRule::default()
    }
}

crate::rules::rule_setters! {
    SystemRule {
        /// Sets the load average threshold.
        highest_system_load(load: f64) = Some(load);
        /// Sets the CPU usage threshold (a ratio in `0..=1`).
        highest_cpu_usage(usage: f64) = Some(usage);
        /// Sets the inbound QPS threshold.
        qps(qps: f64) = Some(qps);
        /// Sets the average response time threshold in ms.
        avg_rt(ms: u64) = Some(ms);
        /// Sets the in-flight threshold.
        max_thread(threads: u64) = Some(threads);
        /// Sets the id.
        id(id: i64) = Some(id);
    }
}

crate::rules::serde_via_fields!(SystemRule);

impl SentinelRule for SystemRule {
    const TYPE: RuleType = RuleType::System;

    /// System rules protect the whole process: they name no resource.
    const NAMES_RESOURCES: bool = false;

    fn target(&self) -> Option<(&str, bool)> {
        None
    }

    /// The JSON fields Sentinel's `SystemRule` adds to every rule's (it has a rule's `resource`,
    /// `limitApp` and `regex` too, and ignores them).
    const FIELDS: Fields = Fields::new(
        &[
            "highestSystemLoad",
            "highestCpuUsage",
            "qps",
            "avgRt",
            "maxThread",
        ],
        &[],
    );

    /// Reads a rule from Sentinel JSON: `-1` or an absent field is unset; another negative value is an
    /// error.
    fn from_fields(f: RuleFields<'_>) -> Result<Self, RuleError> {
        let number = |field: &str| -> Result<Option<f64>, RuleError> {
            match f.number(field)? {
                Some(-1.0) => Ok(None),
                v => Ok(v),
            }
        };
        let whole = |field: &str| -> Result<Option<u64>, RuleError> {
            match f.integer(field)? {
                None | Some(-1) => Ok(None),
                Some(v) => u64::try_from(v)
                    .map(Some)
                    .map_err(|_| f.error(field, format!("must be ≥ 0, or -1 for unset, got {v}"))),
            }
        };
        Ok(SystemRule {
            id: f.integer("id")?,
            highest_system_load: number("highestSystemLoad")?,
            highest_cpu_usage: number("highestCpuUsage")?,
            qps: number("qps")?,
            avg_rt: whole("avgRt")?,
            max_thread: whole("maxThread")?,
        })
    }

    /// Checks the rule; `index` is its position in the list being loaded.
    fn check(&self, index: usize) -> Result<(), RuleError> {
        let fields = [
            ("highestSystemLoad", self.highest_system_load),
            ("highestCpuUsage", self.highest_cpu_usage),
            ("qps", self.qps),
        ];
        for (field, value) in fields {
            if let Some(v) = value {
                if !v.is_finite() || v < 0.0 {
                    return Err(RuleError::invalid(
                        index,
                        field,
                        format!("must be a finite number ≥ 0, or -1 for unset, got {v}"),
                    ));
                }
            }
        }
        for (field, value) in [("avgRt", self.avg_rt), ("maxThread", self.max_thread)] {
            // Rules are saved as JSON and read back: a value JSON rules cannot hold would be lost.
            if value.is_some_and(|v| i64::try_from(v).is_err()) {
                return Err(RuleError::invalid(
                    index,
                    field,
                    format!("must be at most {}, got {}", i64::MAX, value.unwrap_or(0)),
                ));
            }
        }
        if let Some(cpu) = self.highest_cpu_usage {
            if cpu > 1.0 {
                return Err(RuleError::invalid(
                    index,
                    "highestCpuUsage",
                    format!("must be a ratio between 0 and 1, got {cpu}"),
                ));
            }
        }
        let SystemRule {
            id: _,
            highest_system_load,
            highest_cpu_usage,
            qps,
            avg_rt,
            max_thread,
        } = self;
        if highest_system_load.is_none()
            && highest_cpu_usage.is_none()
            && qps.is_none()
            && avg_rt.is_none()
            && max_thread.is_none()
        {
            return Err(RuleError::invalid(
                index,
                "(rule)",
                "sets no threshold: set highestSystemLoad, highestCpuUsage, qps, avgRt or maxThread \
                 (-1 is unset)",
            ));
        }
        Ok(())
    }

    /// The rule as Sentinel JSON: every dimension, `-1` when unset.
    fn to_json(&self) -> Map<String, Value> {
        let real = |v: Option<f64>| v.map_or(json!(-1.0), |v| json!(v));
        let whole = |v: Option<u64>| v.map_or(json!(-1), |v| json!(v));
        let mut m = object(json!({
            "highestSystemLoad": real(self.highest_system_load),
            "highestCpuUsage": real(self.highest_cpu_usage),
            "qps": real(self.qps),
            "avgRt": whole(self.avg_rt),
            "maxThread": whole(self.max_thread),
        }));
        if let Some(id) = self.id {
            m.insert("id".into(), json!(id));
        }
        m
    }
}
