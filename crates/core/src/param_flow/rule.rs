//! `ParamFlowRule`: Sentinel's hot-parameter rule, every field, default and JSON name.
//!
//! A rule limits each distinct value of one argument (`paramIdx`; negative counts from the end) of a
//! resource: `count` per `durationInSec` for QPS rules, `count` calls in flight for THREAD rules.
//! `paramFlowItemList` gives single values their own threshold. An item's `object` is text parsed by its
//! `classType` (`int`/`java.lang.Integer`, `long`, `short`, `byte`, `double`, `float`, `boolean`, `char`,
//! `java.lang.String` or blank for a string, any other Java class name as a string, like Sentinel), so
//! the integer `42` and the string `"42"` are different items.

use std::hash::{Hash, Hasher};

use serde_json::{Map, Value, json};

use crate::flow::{ControlBehavior, FlowGrade};
use crate::param::{ParamValue, StoredValue};
use crate::rules::{
    ClusterFields, Fields, Firsts, HashRule, RuleError, RuleFields, RuleHasher, RuleType,
    SentinelRule, check_pattern, check_rule_head, cluster_config, cluster_fields_of,
    compared_fields, object, rule_head,
};

/// A value with its own threshold (Sentinel's `ParamFlowItem`).
///
/// ```
/// use floodgate_core::ParamFlowItem;
///
/// let vip = ParamFlowItem::int(42, 100);
/// assert_eq!((vip.object.as_str(), vip.class_type.as_deref()), ("42", Some("int")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamFlowItem {
    /// The value, as text (parsed by `class_type`).
    pub object: String,
    /// The value's threshold (replaces the rule's `count` for it).
    pub count: u32,
    /// The value's Java type (`int`, `long`, `double`, `boolean`, `java.lang.String`, …); none means string.
    pub class_type: Option<String>,
}

impl ParamFlowItem {
    /// A string value with its own threshold.
    pub fn string(value: impl Into<String>, count: u32) -> Self {
        ParamFlowItem {
            object: value.into(),
            count,
            class_type: Some("java.lang.String".to_owned()),
        }
    }

    /// An integer value with its own threshold (`int` when it fits 32 bits, else `long`).
    pub fn int(value: i64, count: u32) -> Self {
        let class = if i32::try_from(value).is_ok() {
            "int"
        } else {
            "long"
        };
        ParamFlowItem {
            object: value.to_string(),
            count,
            class_type: Some(class.to_owned()),
        }
    }

    /// A floating-point value with its own threshold.
    pub fn double(value: f64, count: u32) -> Self {
        ParamFlowItem {
            object: ParamValue::Float(value).to_string(),
            count,
            class_type: Some("double".to_owned()),
        }
    }

    /// A boolean value with its own threshold.
    pub fn boolean(value: bool, count: u32) -> Self {
        ParamFlowItem {
            object: value.to_string(),
            count,
            class_type: Some("boolean".to_owned()),
        }
    }

    /// The typed value this item stands for, or why `object` does not parse as `class_type`.
    pub(crate) fn parse(&self) -> Result<StoredValue, String> {
        let object = self.object.as_str();
        let class = self.class_type.as_deref().map_or("", str::trim);
        let bad = |what: &str| format!("is not a valid {what}: `{object}`");
        let int = |v: Result<i64, _>, what: &str| {
            v.map(StoredValue::Int)
                .map_err(|_: std::num::ParseIntError| bad(what))
        };
        match class {
            "" | "java.lang.String" => Ok(StoredValue::from_str(object)),
            "int" | "java.lang.Integer" => int(object.parse::<i32>().map(i64::from), "int"),
            "long" | "java.lang.Long" => int(object.parse::<i64>(), "long"),
            "short" | "java.lang.Short" => int(object.parse::<i16>().map(i64::from), "short"),
            "byte" | "java.lang.Byte" => int(object.parse::<i8>().map(i64::from), "byte"),
            "double" | "java.lang.Double" => parse_float::<f64>(object)
                .map(float)
                .ok_or_else(|| bad("double")),
            // Rounded to `f32` once, from the text (as Java's `Float.parseFloat`), so that it does not
            // round, through `f64`, to another float than the argument's
            // (`items_take_numbers_for_objects_and_round_floats_once`).
            "float" | "java.lang.Float" => parse_float::<f32>(object)
                .map(|x| float(f64::from(x)))
                .ok_or_else(|| bad("float")),
            "boolean" | "java.lang.Boolean" => {
                if object.eq_ignore_ascii_case("true") {
                    Ok(StoredValue::Bool(true))
                } else if object.eq_ignore_ascii_case("false") {
                    Ok(StoredValue::Bool(false))
                } else {
                    Err(bad("boolean"))
                }
            }
            "char" => object
                .chars()
                .next()
                .map(|c| StoredValue::from_str(c.encode_utf8(&mut [0; 4])))
                .ok_or_else(|| "must not be empty for a char".to_owned()),
            // Sentinel keeps the text of any other class (a user's `ParamFlowArgument` type, say) as a string.
            other if other.contains('.') => Ok(StoredValue::from_str(object)),
            other => Err(format!(
                "has an unknown classType `{other}` (expected int, long, short, byte, double, float, boolean, \
                 char, java.lang.String or a Java class name)"
            )),
        }
    }
}

fn float(x: f64) -> StoredValue {
    StoredValue::from_value(&ParamValue::Float(x)).unwrap_or(StoredValue::Int(0))
}

/// Java's `Double.parseDouble`, near enough: surrounding blanks and a trailing `d`/`f` are allowed.
fn parse_float<F: std::str::FromStr>(text: &str) -> Option<F> {
    let t = text.trim();
    t.parse::<F>().ok().or_else(|| {
        t.strip_suffix(['d', 'D', 'f', 'F'])
            .and_then(|t| t.parse::<F>().ok())
    })
}

/// Cluster settings of a hot-parameter rule (Sentinel's `ParamFlowClusterConfig`). Each value of a
/// cluster QPS rule asks the engine's token service; when the service cannot answer, the value is
/// checked locally when `fallbackToLocalWhenFail` holds (the default, as for flow rules; Sentinel's
/// default for parameter rules is `false`, which passes every call while the token service is away)
/// and passes, counted and logged, only when it is set to `false`
/// (`cluster_rules_are_checked_locally_unless_told_not_to`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamFlowClusterConfig {
    /// Globally unique flow id (> 0).
    pub flow_id: i64,
    /// 0 average-local (threshold × clients), 1 global.
    pub threshold_type: i32,
    /// Check locally when the token server cannot answer (default `true`; Sentinel's is `false`).
    pub fallback_to_local_when_fail: bool,
    /// Token server window sample count (default 10).
    pub sample_count: i32,
    /// Token server window interval (default 1000 ms; divisible by the sample count).
    pub window_interval_ms: i32,
}

impl Default for ParamFlowClusterConfig {
    fn default() -> Self {
        cluster_config!(ParamFlowClusterConfig {} with ClusterFields::default())
    }
}

/// A hot-parameter rule (Sentinel's `ParamFlowRule`).
///
/// ```
/// use floodgate_core::{ParamFlowItem, ParamFlowRule};
///
/// // Each user (argument 0) may call 5 times a second; user 42 100 times.
/// let rule = ParamFlowRule::new("GET:/orders", 0, 5.0).item(ParamFlowItem::int(42, 100));
/// assert_eq!((rule.duration_in_sec, rule.burst_count), (1, 0));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ParamFlowRule {
    /// Optional id (reported with blocks).
    pub id: Option<i64>,
    /// The resource (a regular expression when `regex`).
    pub resource: String,
    /// Kept and reported like Sentinel's (`default`); parameter rules apply to every caller.
    pub limit_app: String,
    /// QPS (per `duration_in_sec`) or calls in flight, per value.
    pub grade: FlowGrade,
    /// Which argument: from 0, or negative to count from the end (`-1` is the last), per call.
    pub param_idx: i32,
    /// The threshold per value (truncated to a whole number, as in Sentinel).
    pub count: f64,
    /// QPS rules: `RateLimiter` paces each value uniformly; any other (`Reject`, and `WarmUp` or
    /// `WarmUpRateLimiter`, which Sentinel's parameter checker treats as the default) is a token bucket
    /// per value. THREAD rules ignore it, as Sentinel does (its dashboard keeps a behaviour picked
    /// before the grade was switched).
    pub control_behavior: ControlBehavior,
    /// Rate limiter: the longest queueing wait in ms (default 0: no queueing).
    pub max_queueing_time_ms: u32,
    /// Token bucket: extra tokens a value may burst with (default 0).
    pub burst_count: u32,
    /// The window the threshold counts over, in seconds (default 1).
    pub duration_in_sec: u64,
    /// Values with their own threshold.
    pub param_flow_item_list: Vec<ParamFlowItem>,
    /// Whether the rule is a cluster rule.
    pub cluster_mode: bool,
    /// Cluster settings (required with `cluster_mode`).
    pub cluster_config: Option<ParamFlowClusterConfig>,
    /// Whether `resource` is a regular expression.
    pub regex: bool,
}

impl ParamFlowRule {
    /// A QPS rule on argument `param_idx` of `resource`, `count` per second per value, with Sentinel's
    /// other defaults.
    pub fn new(resource: impl Into<String>, param_idx: i32, count: f64) -> Self {
        ParamFlowRule {
            id: None,
            resource: resource.into(),
            limit_app: "default".to_owned(),
            grade: FlowGrade::Qps,
            param_idx,
            count,
            control_behavior: ControlBehavior::Reject,
            max_queueing_time_ms: 0,
            burst_count: 0,
            duration_in_sec: 1,
            param_flow_item_list: Vec::new(),
            cluster_mode: false,
            cluster_config: None,
            regex: false,
        }
    }

    /// Adds a value with its own threshold.
    pub fn item(mut self, item: ParamFlowItem) -> Self {
        self.param_flow_item_list.push(item);
        self
    }

    /// The threshold of `value`: the count of the first exception item standing for it (by type and
    /// value, as the engine matches them: Java's integer types alike), else the rule's `count`. What a
    /// token server grants each value of a cluster rule.
    ///
    /// ```
    /// use floodgate_core::{ParamFlowItem, ParamFlowRule, ParamValue};
    ///
    /// let rule = ParamFlowRule::new("R", 0, 10.0).item(ParamFlowItem::string("vip", 100));
    /// assert_eq!(rule.threshold_of(&ParamValue::from("vip")), 100.0);
    /// assert_eq!(rule.threshold_of(&ParamValue::from("guest")), 10.0);
    /// ```
    pub fn threshold_of(&self, value: &ParamValue<'_>) -> f64 {
        let Some(value) = StoredValue::from_value(value) else {
            return self.count;
        };
        self.param_flow_item_list
            .iter()
            .find(|item| item.parse().is_ok_and(|v| v == value))
            .map_or(self.count, |item| f64::from(item.count))
    }

    /// Whether the rule paces its values (a QPS rule with `controlBehavior` 2) rather than counting
    /// them (a token bucket per value for other QPS rules, calls in flight for THREAD rules).
    pub fn paces(&self) -> bool {
        self.grade == FlowGrade::Qps && self.control_behavior == ControlBehavior::RateLimiter
    }

    /// Feeds what identifies the values a THREAD rule counts (resource, argument, exception items) to
    /// `h`: a THREAD rule that replaces one alike takes over its calls in flight.
    pub(crate) fn hash_counted_values(&self, h: &mut impl Hasher) {
        self.resource.hash(h);
        self.regex.hash(h);
        self.param_idx.hash(h);
        self.param_flow_item_list.hash(h);
    }

    /// Checks the rule; `index` is its position in the list being loaded. Returns the parsed items.
    pub(crate) fn validate(&self, index: usize) -> Result<Vec<(StoredValue, u32)>, RuleError> {
        let err = |field: &str, reason: String| Err(RuleError::invalid(index, field, reason));
        check_rule_head(index, &self.resource, &self.limit_app, self.count)?;
        if self.duration_in_sec == 0 {
            return err("durationInSec", "must be > 0".into());
        }
        if i64::try_from(self.duration_in_sec).is_err() {
            // Rules are saved as JSON and read back: a value JSON rules cannot hold would be lost.
            return err(
                "durationInSec",
                format!("is out of range: {}", self.duration_in_sec),
            );
        }
        let mut items: Vec<(StoredValue, u32)> =
            Vec::with_capacity(self.param_flow_item_list.len());
        // Each value's first item, found by hash: a list of many items is checked in linear time (the
        // regression test `the_first_of_each_kind_is_kept_with_few_comparisons`).
        let hasher = RuleHasher::new();
        let mut firsts = Firsts::default();
        for (i, item) in self.param_flow_item_list.iter().enumerate() {
            let field = |name: &str| format!("paramFlowItemList[{i}].{name}");
            if i32::try_from(item.count).is_err() {
                return err(
                    &field("count"),
                    format!("must be ≤ {}, got {}", i32::MAX, item.count),
                );
            }
            let value = match item.parse() {
                Ok(v) => v,
                Err(reason) => return err(&field("object"), reason),
            };
            let value = (value, item.count);
            let hash = hasher.hash(|h| value.0.hash(h));
            if let Some(first) = firsts.earlier_equal(&items, &value, hash, |a, b| a.0 == b.0) {
                return err(
                    &field("object"),
                    format!("duplicates item {first} ({:?})", value.0.view()),
                );
            }
            items.push(value);
        }
        if self.regex {
            check_pattern(index, &self.resource)?;
            if self.cluster_mode || self.paces() {
                return err("regex", "regex rules must be local default rules".into());
            }
        }
        if self.cluster_mode {
            let Some(c) = &self.cluster_config else {
                return err("clusterConfig", "is required in cluster mode".into());
            };
            cluster_fields_of!(c).check(index)?;
        }
        Ok(items)
    }
}

crate::rules::rule_setters! {
    ParamFlowRule {
        /// Sets the grade.
        grade(grade: FlowGrade);
        /// Sets the control behavior (`Reject` or `RateLimiter`).
        control_behavior(behavior: ControlBehavior);
        /// Sets the longest queueing wait of the rate limiter.
        max_queueing_time_ms(ms: u32);
        /// Sets the burst.
        burst_count(burst: u32);
        /// Sets the window length in seconds.
        duration_in_sec(seconds: u64);
        /// Makes `resource` a regular expression.
        regex() = true;
        /// Sets the id.
        id(id: i64) = Some(id);
    }
}

crate::rules::serde_via_fields!(ParamFlowRule);

impl HashRule for ParamFlowRule {
    fn without_id(&self) -> impl Hash + PartialEq {
        compared_fields!(self => ParamFlowRule {
            resource, limit_app, grade, param_idx, count: Float, control_behavior,
            max_queueing_time_ms, burst_count, duration_in_sec, param_flow_item_list,
            cluster_mode, cluster_config, regex;
            ignoring id
        })
    }
}

impl SentinelRule for ParamFlowRule {
    const TYPE: RuleType = RuleType::ParamFlow;

    fn target(&self) -> Option<(&str, bool)> {
        Some((&self.resource, self.regex))
    }

    fn check(&self, index: usize) -> Result<(), RuleError> {
        self.validate(index).map(drop)
    }

    /// The JSON fields Sentinel's `ParamFlowRule` adds to every rule's, its `ParamFlowItem`s' and its
    /// `ParamFlowClusterConfig`'s.
    const FIELDS: Fields = Fields::new(
        &[
            "grade",
            "paramIdx",
            "count",
            "controlBehavior",
            "maxQueueingTimeMs",
            "burstCount",
            "durationInSec",
            "paramFlowItemList",
            "clusterMode",
            "clusterConfig",
        ],
        &[
            (
                "paramFlowItemList",
                &Fields::new(&["object", "count", "classType"], &[]),
            ),
            (
                "clusterConfig",
                &Fields::new(
                    &[
                        "flowId",
                        "thresholdType",
                        "fallbackToLocalWhenFail",
                        "sampleCount",
                        "windowIntervalMs",
                    ],
                    &[],
                ),
            ),
        ],
    );

    /// Reads a rule from Sentinel JSON.
    fn from_fields(f: RuleFields<'_>) -> Result<Self, RuleError> {
        let Some(param_idx) = f.int_in::<i32>("paramIdx")? else {
            return Err(f.error("paramIdx", "is required"));
        };
        let mut rule = ParamFlowRule::new(
            f.string("resource")?.unwrap_or_default(),
            param_idx,
            f.required_number("count")?,
        );
        rule.id = f.integer("id")?;
        if let Some(app) = f.limit_app()? {
            rule.limit_app = app.to_owned();
        }
        rule.grade = FlowGrade::read(&f)?;
        rule.control_behavior = f.code(
            "controlBehavior",
            "0 (default), 2 (rate limiter), or 1 or 3 (the default for parameter rules)",
        )?;
        rule.max_queueing_time_ms = f.non_negative("maxQueueingTimeMs")?.unwrap_or(0);
        rule.burst_count = f.non_negative("burstCount")?.unwrap_or(0);
        if let Some(d) = f.integer("durationInSec")? {
            rule.duration_in_sec = u64::try_from(d)
                .map_err(|_| f.error("durationInSec", format!("must be > 0, got {d}")))?;
        }
        rule.param_flow_item_list = f
            .array("paramFlowItemList", |item| {
                // A string in Sentinel (`ParamFlowItem.object`); its JSON readers take a number or a
                // boolean for it as its text.
                let Some(object) = item.scalar_text("object")? else {
                    return Err(item.error("object", "is required"));
                };
                let Some(count) = item.integer("count")? else {
                    return Err(item.error("count", "is required"));
                };
                let count = i32::try_from(count)
                    .ok()
                    .and_then(|c| u32::try_from(c).ok())
                    .ok_or_else(|| item.error("count", format!("must be ≥ 0, got {count}")))?;
                Ok(ParamFlowItem {
                    object,
                    count,
                    class_type: item.string("classType")?.map(str::to_owned),
                })
            })?
            .unwrap_or_default();
        rule.cluster_mode = f.boolean("clusterMode")?.unwrap_or(false);
        rule.cluster_config = f.object("clusterConfig", |c| {
            Ok(cluster_config!(ParamFlowClusterConfig {} with ClusterFields::read(&c)?))
        })?;
        rule.regex = f.boolean("regex")?.unwrap_or(false);
        Ok(rule)
    }

    /// The rule as Sentinel JSON (nulls omitted).
    fn to_json(&self) -> Map<String, Value> {
        let mut m = rule_head(self.id, &self.resource, &self.limit_app, self.regex);
        let items: Vec<Value> = self
            .param_flow_item_list
            .iter()
            .map(|item| {
                let mut i = object(json!({"object": item.object, "count": item.count}));
                if let Some(c) = &item.class_type {
                    i.insert("classType".into(), json!(c));
                }
                Value::Object(i)
            })
            .collect();
        m.extend(object(json!({
            "grade": self.grade.code(),
            "paramIdx": self.param_idx,
            "count": self.count,
            "controlBehavior": self.control_behavior.code(),
            "maxQueueingTimeMs": self.max_queueing_time_ms,
            "burstCount": self.burst_count,
            "durationInSec": self.duration_in_sec,
            "paramFlowItemList": items,
            "clusterMode": self.cluster_mode,
        })));
        if let Some(c) = &self.cluster_config {
            m.insert(
                "clusterConfig".into(),
                Value::Object(cluster_fields_of!(c).to_json()),
            );
        }
        m
    }
}

crate::block::rule_with_id_and_limit_app!(ParamFlowRule);

#[cfg(test)]
mod tests {
    use super::*;

    fn item(object: &str, class: Option<&str>) -> Result<StoredValue, String> {
        ParamFlowItem {
            object: object.to_owned(),
            count: 1,
            class_type: class.map(str::to_owned),
        }
        .parse()
    }

    #[test]
    fn rules_equal_but_for_their_id_compare_and_hash_alike() {
        let hasher = crate::rules::RuleHasher::new();
        let hash = |r: &ParamFlowRule| hasher.hash(|h| r.hash_without_id(h));
        let a = ParamFlowRule::new("R", 0, 5.0)
            .item(ParamFlowItem::int(1, 9))
            .id(1);
        let b = a.clone().id(2);
        assert!(a.eq_but_id(&b) && hash(&a) == hash(&b));
        assert!(!a.eq_but_id(&a.clone().item(ParamFlowItem::int(2, 9))));
        assert!(!a.eq_but_id(&a.clone().burst_count(1)));
    }

    #[test]
    fn items_parse_by_class_type() {
        let int = |i| Ok(StoredValue::Int(i));
        assert_eq!(item("42", Some("int")), int(42));
        assert_eq!(item("42", Some("java.lang.Integer")), int(42));
        assert_eq!(item("-7", Some("long")), int(-7));
        assert_eq!(
            item("9000000000", Some("java.lang.Long")),
            int(9_000_000_000)
        );
        assert_eq!(item("12", Some("short")), int(12));
        assert_eq!(item("-128", Some("byte")), int(-128));
        assert_eq!(item("TRUE", Some("boolean")), Ok(StoredValue::Bool(true)));
        assert_eq!(
            item("false", Some("java.lang.Boolean")),
            Ok(StoredValue::Bool(false))
        );
        assert_eq!(item("1.5", Some("double")), Ok(float(1.5)));
        assert_eq!(item(" 2.5d ", Some("java.lang.Double")), Ok(float(2.5)));
        assert_eq!(item("0.1", Some("float")), Ok(float(f64::from(0.1f32))));
        assert_eq!(item("42", None), Ok(StoredValue::from_str("42")));
        assert_eq!(item("42", Some(" ")), Ok(StoredValue::from_str("42")));
        assert_eq!(
            item("42", Some("java.lang.String")),
            Ok(StoredValue::from_str("42"))
        );
        assert_eq!(
            item("k", Some("com.example.Key")),
            Ok(StoredValue::from_str("k"))
        );
        assert_eq!(item("xyz", Some("char")), Ok(StoredValue::from_str("x")));
        assert_ne!(
            item("42", Some("int")),
            item("42", None),
            "typed: 42 ≠ \"42\""
        );
    }

    #[test]
    fn bad_items_say_why() {
        assert_eq!(
            item("4x", Some("int")).unwrap_err(),
            "is not a valid int: `4x`"
        );
        assert!(item("3000000000", Some("int")).is_err(), "int is 32 bits");
        assert!(item("200", Some("byte")).is_err());
        assert!(item("yes", Some("boolean")).is_err());
        assert!(item("", Some("char")).is_err());
        assert!(item("nope", Some("double")).is_err());
        assert!(
            item("1", Some("i64"))
                .unwrap_err()
                .starts_with("has an unknown classType `i64`")
        );
    }

    #[test]
    fn typed_items_print_as_sentinel_writes_them() {
        assert_eq!(
            ParamFlowItem::int(5_000_000_000, 1).class_type.as_deref(),
            Some("long")
        );
        assert_eq!(ParamFlowItem::double(2.0, 1).object, "2.0");
        assert_eq!(ParamFlowItem::double(2.0, 1).parse(), Ok(float(2.0)));
        assert_eq!(
            ParamFlowItem::boolean(true, 1).parse(),
            Ok(StoredValue::Bool(true))
        );
        assert_eq!(
            ParamFlowItem::string("a", 1).parse(),
            Ok(StoredValue::from_str("a"))
        );
    }
}
