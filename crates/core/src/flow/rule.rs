//! `FlowRule`: Sentinel's flow rule, every field, default and JSON name.

use std::hash::Hash;

use serde_json::{Map, Value, json};

use crate::rules::{
    ClusterFields, Coded, Fields, HashRule, RuleError, RuleFields, RuleType, SentinelRule,
    check_pattern, check_rule_head, cluster_config, cluster_fields_of, compared_fields, object,
    rule_head,
};

/// What a flow rule counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FlowGrade {
    /// Requests in flight (JSON `0`).
    Thread = 0,
    /// Admitted requests per second (JSON `1`, the default).
    #[default]
    Qps = 1,
}

impl FlowGrade {
    /// Sentinel's code: 0 thread, 1 QPS.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// Reads `grade` (default QPS).
    pub(crate) fn read(f: &RuleFields<'_>) -> Result<Self, RuleError> {
        f.code("grade", "0 (thread) or 1 (QPS)")
    }
}

impl Coded for FlowGrade {
    const BY_CODE: &'static [Self] = &[FlowGrade::Thread, FlowGrade::Qps];
}

/// Whose statistics a flow rule reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FlowStrategy {
    /// The resource itself (JSON `0`).
    #[default]
    Direct = 0,
    /// Another resource's cluster node, `refResource` (JSON `1`).
    Relate = 1,
    /// This resource's node in the context named `refResource`, only when entered from it (JSON `2`).
    Chain = 2,
}

impl Coded for FlowStrategy {
    const BY_CODE: &'static [Self] = &[
        FlowStrategy::Direct,
        FlowStrategy::Relate,
        FlowStrategy::Chain,
    ];
}

/// What a QPS rule does with traffic over the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ControlBehavior {
    /// Reject at once (JSON `0`).
    #[default]
    Reject = 0,
    /// Token-bucket warm-up from a third of the threshold (JSON `1`).
    WarmUp = 1,
    /// Uniform pacing, queueing up to `maxQueueingTimeMs` (JSON `2`).
    RateLimiter = 2,
    /// Warm-up pacing (JSON `3`).
    WarmUpRateLimiter = 3,
}

impl ControlBehavior {
    /// Sentinel's code: 0 reject, 1 warm-up, 2 rate limiter, 3 warm-up rate limiter.
    pub fn code(self) -> i32 {
        self as i32
    }
}

impl Coded for ControlBehavior {
    const BY_CODE: &'static [Self] = &[
        ControlBehavior::Reject,
        ControlBehavior::WarmUp,
        ControlBehavior::RateLimiter,
        ControlBehavior::WarmUpRateLimiter,
    ];
}

/// Cluster flow control settings (Sentinel's `ClusterFlowConfig`). A cluster rule asks the engine's
/// token service; when there is none, or it cannot answer, the rule is checked locally when
/// `fallbackToLocalWhenFail` holds and passes otherwise (counted and logged), as Sentinel does when
/// no token service is available.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClusterFlowConfig {
    /// Globally unique flow id (> 0).
    pub flow_id: i64,
    /// 0 average-local (threshold × clients), 1 global.
    pub threshold_type: i32,
    /// Check locally when the token server cannot answer (default true).
    pub fallback_to_local_when_fail: bool,
    /// Only 0 (normal) is valid.
    pub strategy: i32,
    /// Token server window sample count (default 10).
    pub sample_count: i32,
    /// Token server window interval (default 1000 ms; divisible by the sample count).
    pub window_interval_ms: i32,
    /// Concurrency token timeout (default 2000 ms).
    pub resource_timeout: i64,
    /// Concurrency timeout strategy (default 0).
    pub resource_timeout_strategy: i32,
    /// Concurrency refuse strategy (default 0).
    pub acquire_refuse_strategy: i32,
    /// Concurrency client offline time (default 2000 ms).
    pub client_offline_time: i64,
}

impl Default for ClusterFlowConfig {
    fn default() -> Self {
        cluster_config!(ClusterFlowConfig {
            strategy: 0,
            resource_timeout: 2000,
            resource_timeout_strategy: 0,
            acquire_refuse_strategy: 0,
            client_offline_time: 2000,
        } with ClusterFields::default())
    }
}

/// A flow rule (Sentinel's `FlowRule`).
///
/// ```
/// use floodgate_core::{ControlBehavior, FlowRule};
///
/// let rule = FlowRule::new("GET:/orders", 20.0).control_behavior(ControlBehavior::WarmUp);
/// assert_eq!(rule.warm_up_period_sec, 10);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FlowRule {
    /// Optional id (reported with blocks).
    pub id: Option<i64>,
    /// The resource (a regular expression when `regex`).
    pub resource: String,
    /// `default` (any caller), `other` (callers no other rule of the resource names), or one origin.
    pub limit_app: String,
    /// QPS or concurrency.
    pub grade: FlowGrade,
    /// The threshold; fractional values are valid (0.2 QPS = one pass per 5 s).
    pub count: f64,
    /// Which node to read.
    pub strategy: FlowStrategy,
    /// The related resource (RELATE) or the entrance context (CHAIN).
    pub ref_resource: Option<String>,
    /// Reject, warm up, or queue (QPS rules: a concurrency rule rejects whatever this says, as in
    /// Sentinel).
    pub control_behavior: ControlBehavior,
    /// Warm-up period in seconds (default 10).
    pub warm_up_period_sec: u32,
    /// Longest queueing wait in ms (default 500; 0 = strict pacing, no queueing: on the default clock,
    /// which moves in 1 ms ticks, the slots that fall within the current tick pass).
    pub max_queueing_time_ms: u32,
    /// Whether the rule is a cluster rule.
    pub cluster_mode: bool,
    /// Cluster settings (required with `cluster_mode`).
    pub cluster_config: Option<ClusterFlowConfig>,
    /// Whether `resource` is a regular expression.
    pub regex: bool,
}

impl FlowRule {
    /// A QPS rule on `resource` with threshold `count` and Sentinel's other defaults.
    pub fn new(resource: impl Into<String>, count: f64) -> Self {
        FlowRule {
            id: None,
            resource: resource.into(),
            limit_app: "default".to_owned(),
            grade: FlowGrade::Qps,
            count,
            strategy: FlowStrategy::Direct,
            ref_resource: None,
            control_behavior: ControlBehavior::Reject,
            warm_up_period_sec: 10,
            max_queueing_time_ms: 500,
            cluster_mode: false,
            cluster_config: None,
            regex: false,
        }
    }

    /// Sets the strategy and its reference resource (or context).
    pub fn strategy(mut self, strategy: FlowStrategy, ref_resource: impl Into<String>) -> Self {
        self.strategy = strategy;
        self.ref_resource = Some(ref_resource.into());
        self
    }
}

crate::rules::rule_setters! {
    FlowRule {
        /// Sets the grade.
        grade(grade: FlowGrade);
        /// Sets the caller the rule limits.
        limit_app(limit_app: impl Into<String>) = limit_app.into();
        /// Sets the control behavior.
        control_behavior(behavior: ControlBehavior);
        /// Sets the warm-up period.
        warm_up_period_sec(seconds: u32);
        /// Sets the longest queueing wait.
        max_queueing_time_ms(ms: u32);
        /// Makes `resource` a regular expression.
        regex() = true;
        /// Sets the id.
        id(id: i64) = Some(id);
    }
}

crate::rules::serde_via_fields!(FlowRule);

impl HashRule for FlowRule {
    fn without_id(&self) -> impl Hash + PartialEq {
        compared_fields!(self => FlowRule {
            resource, limit_app, grade, count: Float, strategy, ref_resource, control_behavior,
            warm_up_period_sec, max_queueing_time_ms, cluster_mode, cluster_config, regex;
            ignoring id
        })
    }
}

impl SentinelRule for FlowRule {
    const TYPE: RuleType = RuleType::Flow;

    fn target(&self) -> Option<(&str, bool)> {
        Some((&self.resource, self.regex))
    }

    /// The JSON fields Sentinel's `FlowRule` adds to every rule's, and its `ClusterFlowConfig`'s.
    const FIELDS: Fields = Fields::new(
        &[
            "grade",
            "count",
            "strategy",
            "refResource",
            "controlBehavior",
            "warmUpPeriodSec",
            "maxQueueingTimeMs",
            "clusterMode",
            "clusterConfig",
        ],
        &[(
            "clusterConfig",
            &Fields::new(
                &[
                    "flowId",
                    "thresholdType",
                    "fallbackToLocalWhenFail",
                    "strategy",
                    "sampleCount",
                    "windowIntervalMs",
                    "resourceTimeout",
                    "resourceTimeoutStrategy",
                    "acquireRefuseStrategy",
                    "clientOfflineTime",
                ],
                &[],
            ),
        )],
    );

    /// Reads a rule from Sentinel JSON.
    fn from_fields(f: RuleFields<'_>) -> Result<Self, RuleError> {
        let mut rule = FlowRule::new(f.string("resource")?.unwrap_or_default(), 0.0);
        rule.id = f.integer("id")?;
        if let Some(app) = f.limit_app()? {
            rule.limit_app = app.to_owned();
        }
        rule.grade = FlowGrade::read(&f)?;
        rule.count = f.required_number("count")?;
        rule.strategy = f.code("strategy", "0 (direct), 1 (relate) or 2 (chain)")?;
        rule.ref_resource = f.string("refResource")?.map(str::to_owned);
        rule.control_behavior = f.code(
            "controlBehavior",
            "0 (reject), 1 (warm-up), 2 (rate limiter) or 3 (warm-up rate limiter)",
        )?;
        rule.warm_up_period_sec = f.non_negative("warmUpPeriodSec")?.unwrap_or(10);
        rule.max_queueing_time_ms = f.non_negative("maxQueueingTimeMs")?.unwrap_or(500);
        rule.cluster_mode = f.boolean("clusterMode")?.unwrap_or(false);
        rule.cluster_config = f.object("clusterConfig", |c| {
            let d = ClusterFlowConfig::default();
            Ok(cluster_config!(ClusterFlowConfig {
                strategy: c.int_in("strategy")?.unwrap_or(d.strategy),
                resource_timeout: c.integer("resourceTimeout")?.unwrap_or(d.resource_timeout),
                resource_timeout_strategy: c
                    .int_in("resourceTimeoutStrategy")?
                    .unwrap_or(d.resource_timeout_strategy),
                acquire_refuse_strategy: c
                    .int_in("acquireRefuseStrategy")?
                    .unwrap_or(d.acquire_refuse_strategy),
                client_offline_time: c
                    .integer("clientOfflineTime")?
                    .unwrap_or(d.client_offline_time),
            } with ClusterFields::read(&c)?))
        })?;
        rule.regex = f.boolean("regex")?.unwrap_or(false);
        Ok(rule)
    }

    /// Checks the rule; `index` is its position in the list being loaded.
    fn check(&self, index: usize) -> Result<(), RuleError> {
        let err = |field: &str, reason: String| Err(RuleError::invalid(index, field, reason));
        check_rule_head(index, &self.resource, &self.limit_app, self.count)?;
        if self.strategy != FlowStrategy::Direct
            && self
                .ref_resource
                .as_deref()
                .is_none_or(|r| r.trim().is_empty())
        {
            return err(
                "refResource",
                "is required for the relate and chain strategies".into(),
            );
        }
        // A concurrency rule rejects whatever its `controlBehavior` says, as in Sentinel, which checks
        // the behaviour's fields of QPS rules only (its dashboard keeps a behaviour picked before the
        // grade was switched: refusing the rule refused the whole push).
        let behavior = match self.grade {
            FlowGrade::Qps => self.control_behavior,
            FlowGrade::Thread => ControlBehavior::Reject,
        };
        if matches!(
            behavior,
            ControlBehavior::WarmUp | ControlBehavior::WarmUpRateLimiter
        ) && self.warm_up_period_sec == 0
        {
            return err("warmUpPeriodSec", "must be > 0 for warm-up".into());
        }
        if self.regex {
            check_pattern(index, &self.resource)?;
            if self.cluster_mode || behavior != ControlBehavior::Reject {
                return err("regex", "regex rules must be local reject rules".into());
            }
        }
        if self.cluster_mode {
            let Some(c) = &self.cluster_config else {
                return err("clusterConfig", "is required in cluster mode".into());
            };
            cluster_fields_of!(c).check(index)?;
            if c.strategy != 0 {
                return err(
                    "clusterConfig.strategy",
                    format!("must be 0, got {}", c.strategy),
                );
            }
        }
        Ok(())
    }

    /// The rule as Sentinel JSON (nulls omitted).
    fn to_json(&self) -> Map<String, Value> {
        let mut m = rule_head(self.id, &self.resource, &self.limit_app, self.regex);
        m.extend(object(json!({
            "grade": self.grade.code(),
            "count": self.count,
            "strategy": self.strategy as i32,
            "controlBehavior": self.control_behavior.code(),
            "warmUpPeriodSec": self.warm_up_period_sec,
            "maxQueueingTimeMs": self.max_queueing_time_ms,
            "clusterMode": self.cluster_mode,
        })));
        if let Some(r) = &self.ref_resource {
            m.insert("refResource".into(), json!(r));
        }
        if let Some(c) = &self.cluster_config {
            let mut config = cluster_fields_of!(c).to_json();
            config.extend(object(json!({
                "strategy": c.strategy,
                "resourceTimeout": c.resource_timeout,
                "resourceTimeoutStrategy": c.resource_timeout_strategy,
                "acquireRefuseStrategy": c.acquire_refuse_strategy,
                "clientOfflineTime": c.client_offline_time,
            })));
            m.insert("clusterConfig".into(), Value::Object(config));
        }
        m
    }
}

crate::block::rule_with_id_and_limit_app!(FlowRule);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::RuleHasher;

    #[test]
    fn rules_equal_but_for_their_id_compare_and_hash_alike() {
        let hasher = RuleHasher::new();
        let hash = |r: &FlowRule| hasher.hash(|h| r.hash_without_id(h));
        let a = FlowRule::new("R", 5.0)
            .id(1)
            .control_behavior(ControlBehavior::WarmUp);
        let b = a.clone().id(2);
        assert!(a.eq_but_id(&b) && hash(&a) == hash(&b));
        for other in [
            a.clone().warm_up_period_sec(3),
            a.clone().limit_app("app"),
            FlowRule {
                count: 6.0,
                ..a.clone()
            },
        ] {
            assert!(!a.eq_but_id(&other), "{other:?}");
        }
        // Floats hash as `==` compares them.
        let (zero, minus_zero) = (FlowRule::new("R", 0.0), FlowRule::new("R", -0.0));
        assert!(zero == minus_zero && hash(&zero) == hash(&minus_zero));
    }
}
