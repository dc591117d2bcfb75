//! `DegradeRule`: Sentinel's circuit-breaking rule, every field, default and JSON name.
//!
//! One `count` field means three things depending on the grade (Sentinel's design, kept for wire
//! compatibility): the longest allowed response time in ms (slow-request ratio), the error ratio in
//! `[0, 1]` (error ratio), or the error count (error count). [`DegradeGrade`] names them, and the loader
//! validates `count` against the grade.

use std::hash::{Hash, Hasher};

use serde_json::{Map, Value, json};

use crate::rules::{
    Coded, Fields, HashRule, RuleError, RuleFields, RuleType, SentinelRule, check_pattern,
    check_rule_head, compared_fields, object, rule_head,
};

/// The resource name of a default rule: it applies to every resource without a degrade rule of its own.
pub const DEFAULT_DEGRADE_RESOURCE: &str = "*";

/// What a circuit breaker watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DegradeGrade {
    /// The share of calls slower than `count` ms (JSON `0`, the default).
    #[default]
    SlowRequestRatio = 0,
    /// The share of calls that traced an error (JSON `1`); `count` is the ratio in `[0, 1]`.
    ErrorRatio = 1,
    /// The number of calls that traced an error (JSON `2`).
    ErrorCount = 2,
}

impl DegradeGrade {
    /// Sentinel's number for the grade.
    pub fn as_i32(self) -> i32 {
        self as i32
    }
}

impl Coded for DegradeGrade {
    const BY_CODE: &'static [Self] = &[
        DegradeGrade::SlowRequestRatio,
        DegradeGrade::ErrorRatio,
        DegradeGrade::ErrorCount,
    ];
}

/// A circuit-breaking rule (Sentinel's `DegradeRule`). Each rule drives its own breaker.
///
/// ```
/// use floodgate_core::{DegradeGrade, DegradeRule};
///
/// // Open for 10 s when at least half of the calls fail (5 calls at least, counted per second).
/// let rule = DegradeRule::new("GET:/inventory", DegradeGrade::ErrorRatio, 0.5).time_window(10);
/// assert_eq!((rule.min_request_amount, rule.stat_interval_ms), (5, 1000));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DegradeRule {
    /// Optional id (reported with blocks).
    pub id: Option<i64>,
    /// The resource: a name, a regular expression when `regex`, or `"*"` for a default rule.
    pub resource: String,
    /// The caller the rule is meant for (`default`); not used in checks, as in Sentinel.
    pub limit_app: String,
    /// What the breaker watches.
    pub grade: DegradeGrade,
    /// Slow-request ratio: the longest allowed response time in ms (a call is slow when its RT is
    /// greater than `round(count)`). Error ratio: the ratio in `[0, 1]`, exceeded strictly, except that
    /// 1.0 opens when every call in the window failed (Sentinel's never opens, #2554). Error count: the
    /// count, exceeded strictly.
    pub count: f64,
    /// How long the breaker stays open before it lets one probe through, in seconds (> 0).
    pub time_window: u32,
    /// Calls a statistics window must hold before the breaker judges it (default 5).
    pub min_request_amount: u32,
    /// Slow-request ratio only: the share of slow calls above which the breaker opens (default 1.0,
    /// which opens when every call is slow).
    pub slow_ratio_threshold: f64,
    /// The statistics window in ms (default 1000): one tumbling window aligned to multiples of it.
    pub stat_interval_ms: u32,
    /// Whether `resource` is a regular expression.
    pub regex: bool,
}

impl DegradeRule {
    /// A rule on `resource` of `grade` with threshold `count` and Sentinel's other defaults. Sentinel's
    /// `timeWindow` defaults to 0, which is invalid; set it with [`time_window`](Self::time_window).
    pub fn new(resource: impl Into<String>, grade: DegradeGrade, count: f64) -> Self {
        DegradeRule {
            id: None,
            resource: resource.into(),
            limit_app: "default".to_owned(),
            grade,
            count,
            time_window: 0,
            min_request_amount: 5,
            slow_ratio_threshold: 1.0,
            stat_interval_ms: 1000,
            regex: false,
        }
    }

    /// A slow-request-ratio rule: calls slower than `max_rt_ms` are slow.
    pub fn slow_ratio(resource: impl Into<String>, max_rt_ms: f64, threshold: f64) -> Self {
        DegradeRule::new(resource, DegradeGrade::SlowRequestRatio, max_rt_ms)
            .slow_ratio_threshold(threshold)
    }

    /// An error-ratio rule.
    pub fn error_ratio(resource: impl Into<String>, ratio: f64) -> Self {
        DegradeRule::new(resource, DegradeGrade::ErrorRatio, ratio)
    }

    /// An error-count rule.
    pub fn error_count(resource: impl Into<String>, count: f64) -> Self {
        DegradeRule::new(resource, DegradeGrade::ErrorCount, count)
    }

    /// Whether this is a default rule (resource `"*"`), applied to resources without rules of their own.
    pub fn is_default(&self) -> bool {
        !self.regex && self.resource == DEFAULT_DEGRADE_RESOURCE
    }

    /// How long the breaker stays open, in ms.
    pub(crate) fn recovery_ms(&self) -> u64 {
        u64::from(self.time_window) * 1000
    }

    /// Every field a breaker uses (all but `id` and `limitApp`), compared with `==` and hashed alike:
    /// one list of the fields that [`hash_breaker_fields`](Self::hash_breaker_fields) and
    /// [`eq_breaker_fields`](Self::eq_breaker_fields) both read.
    fn breaker_fields(&self) -> impl Hash + PartialEq {
        compared_fields!(self => DegradeRule {
            resource, grade, count: Float, time_window, min_request_amount,
            slow_ratio_threshold: Float, stat_interval_ms, regex;
            ignoring id, limit_app
        })
    }

    /// Whether this rule and `other` are equal in every field a breaker uses (all but `id` and
    /// `limitApp`), without copying either.
    pub(crate) fn eq_breaker_fields(&self, other: &DegradeRule) -> bool {
        self.breaker_fields() == other.breaker_fields()
    }

    /// Feeds every field a breaker uses to `h` (all but `id` and `limitApp`), so that rules that differ
    /// only in those hash alike (a reload pairs rules by it).
    pub(crate) fn hash_breaker_fields(&self, h: &mut impl Hasher) {
        self.breaker_fields().hash(h);
    }
}

crate::rules::rule_setters! {
    DegradeRule {
        /// Sets how long the breaker stays open, in seconds.
        time_window(seconds: u32);
        /// Sets the calls a window must hold before it is judged.
        min_request_amount(amount: u32);
        /// Sets the slow-call share above which a slow-request-ratio breaker opens.
        slow_ratio_threshold(threshold: f64);
        /// Sets the statistics window in ms.
        stat_interval_ms(ms: u32);
        /// Sets the caller the rule is meant for.
        limit_app(limit_app: impl Into<String>) = limit_app.into();
        /// Makes `resource` a regular expression.
        regex() = true;
        /// Sets the id.
        id(id: i64) = Some(id);
    }
}

crate::rules::serde_via_fields!(DegradeRule);

impl HashRule for DegradeRule {
    fn without_id(&self) -> impl Hash + PartialEq {
        (&self.limit_app, self.breaker_fields())
    }
}

impl SentinelRule for DegradeRule {
    const TYPE: RuleType = RuleType::Degrade;

    fn target(&self) -> Option<(&str, bool)> {
        Some((&self.resource, self.regex))
    }

    /// The JSON fields Sentinel's `DegradeRule` adds to every rule's.
    const FIELDS: Fields = Fields::new(
        &[
            "grade",
            "count",
            "timeWindow",
            "minRequestAmount",
            "slowRatioThreshold",
            "statIntervalMs",
        ],
        &[],
    );

    /// Reads a rule from Sentinel JSON.
    fn from_fields(f: RuleFields<'_>) -> Result<Self, RuleError> {
        let grade = f.code(
            "grade",
            "0 (slow request ratio), 1 (error ratio) or 2 (error count)",
        )?;
        let count = f.required_number("count")?;
        let mut rule = DegradeRule::new(f.string("resource")?.unwrap_or_default(), grade, count);
        rule.id = f.integer("id")?;
        if let Some(app) = f.limit_app()? {
            rule.limit_app = app.to_owned();
        }
        let positive = |field: &str, default: u32| match f.integer(field)? {
            None => Ok(default),
            Some(v) if v <= 0 => Err(f.error(field, format!("must be > 0, got {v}"))),
            Some(v) => {
                u32::try_from(v).map_err(|_| f.error(field, format!("is out of range: {v}")))
            }
        };
        rule.time_window = positive("timeWindow", 0)?;
        rule.min_request_amount = positive("minRequestAmount", 5)?;
        rule.stat_interval_ms = positive("statIntervalMs", 1000)?;
        rule.slow_ratio_threshold = f.number("slowRatioThreshold")?.unwrap_or(1.0);
        rule.regex = f.boolean("regex")?.unwrap_or(false);
        Ok(rule)
    }

    /// Checks the rule; `index` is its position in the list being loaded.
    fn check(&self, index: usize) -> Result<(), RuleError> {
        let err = |field: &str, reason: String| Err(RuleError::invalid(index, field, reason));
        check_rule_head(index, &self.resource, &self.limit_app, self.count)?;
        if self.grade == DegradeGrade::ErrorRatio && self.count > 1.0 {
            return err(
                "count",
                format!("must be an error ratio in [0, 1], got {}", self.count),
            );
        }
        if self.time_window == 0 {
            return err(
                "timeWindow",
                "must be > 0 (seconds the breaker stays open)".into(),
            );
        }
        if self.min_request_amount == 0 {
            return err("minRequestAmount", "must be > 0".into());
        }
        if self.stat_interval_ms == 0 {
            return err("statIntervalMs", "must be > 0".into());
        }
        // Checked for every grade: a NaN would make the rule unequal to itself, so that reloading the
        // same list replaced its breaker, and an infinity would not survive JSON.
        if (self.grade == DegradeGrade::SlowRequestRatio || !self.slow_ratio_threshold.is_finite())
            && !(0.0..=1.0).contains(&self.slow_ratio_threshold)
        {
            return err(
                "slowRatioThreshold",
                format!("must be in [0, 1], got {}", self.slow_ratio_threshold),
            );
        }
        if self.regex {
            check_pattern(index, &self.resource)?;
        }
        Ok(())
    }

    /// The rule as Sentinel JSON (nulls omitted).
    fn to_json(&self) -> Map<String, Value> {
        let mut m = rule_head(self.id, &self.resource, &self.limit_app, self.regex);
        m.extend(object(json!({
            "grade": self.grade.as_i32(),
            "count": self.count,
            "timeWindow": self.time_window,
            "minRequestAmount": self.min_request_amount,
            "slowRatioThreshold": self.slow_ratio_threshold,
            "statIntervalMs": self.stat_interval_ms,
        })));
        m
    }
}

crate::block::rule_with_id_and_limit_app!(DegradeRule);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{RuleHasher, parse_rule_array};

    #[test]
    fn rules_that_differ_in_presentation_only_compare_and_hash_alike() {
        let hasher = RuleHasher::new();
        let hash = |r: &DegradeRule| hasher.hash(|h| r.hash_breaker_fields(h));
        let a = DegradeRule::error_count("R", 5.0).time_window(10);
        let b = DegradeRule {
            id: Some(3),
            limit_app: "app".to_owned(),
            ..a.clone()
        };
        assert!(a.eq_breaker_fields(&b) && hash(&a) == hash(&b));
        assert!(!a.eq_breaker_fields(&a.clone().time_window(11)));
        assert!(!a.eq_breaker_fields(&a.clone().slow_ratio_threshold(0.5)));
    }

    fn read(json: &str) -> Result<DegradeRule, RuleError> {
        let items = parse_rule_array(json)?;
        DegradeRule::from_fields(RuleFields::new(0, &items[0]))
    }

    #[test]
    fn json_defaults_are_sentinels() {
        let rule = read(r#"[{"resource":"R","count":50,"timeWindow":10}]"#).unwrap();
        assert_eq!(rule.grade, DegradeGrade::SlowRequestRatio);
        assert_eq!(rule.min_request_amount, 5);
        assert_eq!(rule.slow_ratio_threshold, 1.0);
        assert_eq!(rule.stat_interval_ms, 1000);
        assert_eq!(rule.limit_app, "default");
        assert!(!rule.regex && !rule.is_default());
        assert_eq!(rule.recovery_ms(), 10_000);
    }

    #[test]
    fn json_round_trips() {
        let rule = DegradeRule::error_count("*", 3.0)
            .time_window(5)
            .min_request_amount(2)
            .stat_interval_ms(2000)
            .id(9);
        assert!(rule.is_default());
        let json = Value::Object(rule.to_json()).to_string();
        assert_eq!(read(&format!("[{json}]")).unwrap(), rule);
    }
}
