//! Properties of rule JSON, for every rule type, on generated input:
//!
//! * any text and any JSON value: loading never panics; it either loads, or is refused with an error
//!   that says what is wrong, and the rules in force stay;
//! * whatever loads writes back (`rules_json`) as JSON that loads into a fresh engine as the same
//!   rules, which write back the same JSON, with no warning;
//! * valid rules, loaded typed or as JSON objects with their numbers written as integers or doubles
//!   and with fields of no rule kind added: the JSON loads as the same rules, and each added field is
//!   reported as a warning, nothing else;
//! * read with serde through a type's `deserialize_list`: what `rules_json` writes reads as the rules
//!   in force, and a list with rules made invalid is refused with the error a load gives, naming each
//!   rule at fault by its index.

use std::collections::BTreeSet;

use floodgate_core::{
    AuthorityRule, AuthorityStrategy, ClusterFlowConfig, ControlBehavior, DegradeGrade,
    DegradeRule, Floodgate, FlowGrade, FlowRule, FlowStrategy, ParamFlowClusterConfig,
    ParamFlowItem, ParamFlowRule, RuleError, RuleType, RuleWarning, SystemRule,
};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// The rules of one type, typed, so that two engines' rules compare.
#[derive(Debug, Clone, PartialEq)]
enum Rules {
    Flow(Vec<FlowRule>),
    Degrade(Vec<DegradeRule>),
    System(Vec<SystemRule>),
    Authority(Vec<AuthorityRule>),
    ParamFlow(Vec<ParamFlowRule>),
}

impl Rules {
    fn of(fg: &Floodgate, rule_type: RuleType) -> Rules {
        match rule_type {
            RuleType::Flow => Rules::Flow(fg.flow_rules()),
            RuleType::Degrade => Rules::Degrade(fg.degrade_rules()),
            RuleType::System => Rules::System(fg.system_rules()),
            RuleType::Authority => Rules::Authority(fg.authority_rules()),
            RuleType::ParamFlow => Rules::ParamFlow(fg.param_flow_rules()),
        }
    }

    fn rule_type(&self) -> RuleType {
        match self {
            Rules::Flow(_) => RuleType::Flow,
            Rules::Degrade(_) => RuleType::Degrade,
            Rules::System(_) => RuleType::System,
            Rules::Authority(_) => RuleType::Authority,
            Rules::ParamFlow(_) => RuleType::ParamFlow,
        }
    }

    /// The rules of `json`, a list of `rule_type`, read with serde by the type's `deserialize_list`.
    fn deserialize_list(rule_type: RuleType, json: &str) -> Result<Rules, serde_json::Error> {
        let mut json = serde_json::Deserializer::from_str(json);
        Ok(match rule_type {
            RuleType::Flow => Rules::Flow(FlowRule::deserialize_list(&mut json)?),
            RuleType::Degrade => Rules::Degrade(DegradeRule::deserialize_list(&mut json)?),
            RuleType::System => Rules::System(SystemRule::deserialize_list(&mut json)?),
            RuleType::Authority => Rules::Authority(AuthorityRule::deserialize_list(&mut json)?),
            RuleType::ParamFlow => Rules::ParamFlow(ParamFlowRule::deserialize_list(&mut json)?),
        })
    }

    fn load(&self, fg: &Floodgate) -> Result<(), RuleError> {
        match self.clone() {
            Rules::Flow(r) => fg.load_flow_rules(r),
            Rules::Degrade(r) => fg.load_degrade_rules(r),
            Rules::System(r) => fg.load_system_rules(r),
            Rules::Authority(r) => fg.load_authority_rules(r),
            Rules::ParamFlow(r) => fg.load_param_flow_rules(r),
        }
    }
}

/// Every field of each type's JSON (Sentinel's), nested ones included: what a generated unknown field
/// must not be.
const KNOWN: &[&str] = &[
    "id",
    "resource",
    "limitApp",
    "regex",
    "grade",
    "count",
    "strategy",
    "refResource",
    "controlBehavior",
    "warmUpPeriodSec",
    "maxQueueingTimeMs",
    "clusterMode",
    "clusterConfig",
    "timeWindow",
    "minRequestAmount",
    "slowRatioThreshold",
    "statIntervalMs",
    "highestSystemLoad",
    "highestCpuUsage",
    "qps",
    "avgRt",
    "maxThread",
    "paramIdx",
    "burstCount",
    "durationInSec",
    "paramFlowItemList",
];

/// A list of rules of `rule_type` in force before each case, so that a refused load can be seen to
/// change nothing.
fn engine_with_rules(rule_type: RuleType) -> Floodgate {
    let fg = Floodgate::default();
    let json = match rule_type {
        RuleType::Flow => r#"[{"resource":"kept","count":5}]"#,
        RuleType::Degrade => r#"[{"resource":"kept","count":5,"timeWindow":3}]"#,
        RuleType::System => r#"[{"qps":500}]"#,
        RuleType::Authority => r#"[{"resource":"kept","limitApp":"web"}]"#,
        RuleType::ParamFlow => r#"[{"resource":"kept","paramIdx":0,"count":5}]"#,
    };
    fg.load_rules_json(rule_type, json).unwrap();
    fg
}

/// What `rules_json` writes loads into a fresh engine as the same rules, which write the same JSON.
fn assert_round_trip(fg: &Floodgate, rule_type: RuleType) -> Result<(), TestCaseError> {
    let json = fg.rules_json(rule_type);
    let fresh = Floodgate::default();
    let load = fresh
        .load_rules_json(rule_type, &json)
        .map_err(|e| TestCaseError::fail(format!("{rule_type}: own dump refused: {e}\n{json}")))?;
    prop_assert!(load.warnings().is_empty(), "{:?}", load.warnings());
    prop_assert_eq!(fresh.rules_json(rule_type), json);
    prop_assert_eq!(Rules::of(&fresh, rule_type), Rules::of(fg, rule_type));
    Ok(())
}

/// Loads `text`: in force and round-tripping, or refused with an error that says what is wrong and
/// the rules in force kept.
fn check_any_text(rule_type: RuleType, text: &str) -> Result<(), TestCaseError> {
    let fg = engine_with_rules(rule_type);
    let before = fg.rules_json(rule_type);
    match fg.load_rules_json(rule_type, text) {
        Ok(_) => assert_round_trip(&fg, rule_type),
        Err(err) => {
            prop_assert!(!err.to_string().is_empty());
            if let RuleError::Invalid { field, reason, .. } = &err {
                prop_assert!(!field.is_empty() && !reason.is_empty(), "{err:?}");
            }
            prop_assert_eq!(
                fg.rules_json(rule_type),
                before,
                "a refused list changes nothing"
            );
            Ok(())
        }
    }
}

fn rule_types() -> impl Strategy<Value = RuleType> {
    prop::sample::select(RuleType::ALL.to_vec())
}

fn json_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        (-5i64..100).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(Value::from),
        (0.0..2.0f64).prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
    ]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        json_number(),
        "[a-z(.*)\\\\]{0,6}".prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(field_name(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Mostly the fields rules have, sometimes another name.
fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(KNOWN).prop_map(str::to_owned),
        1 => "[a-zA-Z]{1,8}",
    ]
}

/// An array of objects whose fields are mostly rule fields, with any values: deep into the readers.
fn rule_like_list() -> impl Strategy<Value = Value> {
    let object = prop::collection::btree_map(field_name(), json_value(), 0..10)
        .prop_map(|m| Value::Object(m.into_iter().collect()));
    prop::collection::vec(object, 0..5).prop_map(Value::from)
}

fn resource() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9:/_.+%&][a-zA-Z0-9:/_.+%& -]{0,11}"
}

/// A valid regular expression that is also a plausible resource name pattern.
fn pattern() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["GET:/api/.*", "r[0-9]+", "(a|b)c?", ".*", "x\\.y"])
        .prop_map(str::to_owned)
}

fn count() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        (0u32..1000).prop_map(f64::from),
        0.0..1e6f64,
        (0.0..1e300f64),
    ]
}

fn flow_rule() -> impl Strategy<Value = FlowRule> {
    let cluster = (
        1i64..=i64::MAX,
        0i32..=1,
        any::<bool>(),
        1i32..20,
        1i32..100,
        any::<i64>(),
        any::<i32>(),
        any::<i32>(),
        any::<i64>(),
    )
        .prop_map(
            |(flow_id, threshold_type, fallback, samples, k, rt, rts, ars, off)| {
                ClusterFlowConfig {
                    flow_id,
                    threshold_type,
                    fallback_to_local_when_fail: fallback,
                    strategy: 0,
                    sample_count: samples,
                    window_interval_ms: samples * k,
                    resource_timeout: rt,
                    resource_timeout_strategy: rts,
                    acquire_refuse_strategy: ars,
                    client_offline_time: off,
                }
            },
        );
    (
        (
            prop::option::of(any::<i64>()),
            resource(),
            prop::sample::select(vec!["default", "other", "appA", "app B"]),
            prop::sample::select(vec![FlowGrade::Qps, FlowGrade::Thread]),
            count(),
            prop::sample::select(vec![
                FlowStrategy::Direct,
                FlowStrategy::Relate,
                FlowStrategy::Chain,
            ]),
            prop::option::of(resource()),
        ),
        (
            prop::sample::select(vec![
                ControlBehavior::Reject,
                ControlBehavior::WarmUp,
                ControlBehavior::RateLimiter,
                ControlBehavior::WarmUpRateLimiter,
            ]),
            1u32..=u32::MAX,
            any::<u32>(),
            prop::option::of(cluster),
            any::<bool>(),
            pattern(),
        ),
    )
        .prop_map(
            |(
                (id, resource, limit_app, grade, count, strategy, ref_resource),
                (behavior, warm_up, queue, cluster, regex, pattern),
            )| {
                let mut rule = FlowRule::new(resource, count)
                    .grade(grade)
                    .limit_app(limit_app)
                    .control_behavior(behavior)
                    .warm_up_period_sec(warm_up)
                    .max_queueing_time_ms(queue);
                rule.id = id;
                rule.strategy = strategy;
                rule.ref_resource = ref_resource;
                if strategy != FlowStrategy::Direct && rule.ref_resource.is_none() {
                    rule.ref_resource = Some("ref".to_owned());
                }
                if regex {
                    // Regex rules are local reject rules.
                    rule.resource = pattern;
                    rule.regex = true;
                    rule.control_behavior = ControlBehavior::Reject;
                } else if let Some(config) = cluster {
                    rule.cluster_mode = true;
                    rule.cluster_config = Some(config);
                }
                rule
            },
        )
}

fn degrade_rule() -> impl Strategy<Value = DegradeRule> {
    (
        prop::option::of(any::<i64>()),
        prop_oneof![resource(), Just("*".to_owned())],
        prop::sample::select(vec![
            DegradeGrade::SlowRequestRatio,
            DegradeGrade::ErrorRatio,
            DegradeGrade::ErrorCount,
        ]),
        count(),
        (1u32..=u32::MAX, 1u32..=u32::MAX, 1u32..=u32::MAX),
        0.0..=1.0f64,
        prop::option::of(pattern()),
        prop::sample::select(vec!["default", "appA"]),
    )
        .prop_map(
            |(id, resource, grade, count, (window, min, interval), ratio, pattern, app)| {
                let count = if grade == DegradeGrade::ErrorRatio {
                    count.fract()
                } else {
                    count
                };
                let mut rule = DegradeRule::new(resource, grade, count)
                    .time_window(window)
                    .min_request_amount(min)
                    .stat_interval_ms(interval)
                    .slow_ratio_threshold(ratio);
                rule.id = id;
                rule.limit_app = app.to_owned();
                if let Some(p) = pattern {
                    rule.resource = p;
                    rule.regex = true;
                }
                rule
            },
        )
}

fn system_rule() -> impl Strategy<Value = SystemRule> {
    let max = u64::try_from(i64::MAX).unwrap();
    (
        prop::option::of(any::<i64>()),
        prop::option::of(0.0..1e6f64),
        prop::option::of(0.0..=1.0f64),
        prop::option::of(count()),
        prop::option::of(0..=max),
        prop::option::of(0..=max),
    )
        .prop_map(|(id, load, cpu, qps, rt, threads)| SystemRule {
            id,
            highest_system_load: load,
            highest_cpu_usage: cpu,
            // A rule sets at least one threshold.
            qps: match (load, cpu, rt, threads) {
                (None, None, None, None) => Some(qps.unwrap_or(10.0)),
                _ => qps,
            },
            avg_rt: rt,
            max_thread: threads,
        })
}

fn authority_rule(i: usize) -> impl Strategy<Value = AuthorityRule> {
    (
        prop::option::of(any::<i64>()),
        "[a-zA-Z0-9 ]{1,6}(,[a-zA-Z0-9 ]{0,6}){0,4}",
        any::<bool>(),
        prop::option::of(pattern()),
    )
        .prop_map(move |(id, limit_app, black, pattern)| {
            let strategy = if black {
                AuthorityStrategy::Black
            } else {
                AuthorityStrategy::White
            };
            let limit_app = if limit_app.trim().is_empty() {
                "app".to_owned()
            } else {
                limit_app
            };
            let mut rule = AuthorityRule::new(format!("res-{i}"), limit_app, strategy);
            rule.id = id;
            if let Some(p) = pattern {
                // One rule per pattern: the pattern made the rule's own.
                rule.resource = format!("{p}|res-{i}");
                rule.regex = true;
            }
            rule
        })
}

fn param_item() -> impl Strategy<Value = ParamFlowItem> {
    prop_oneof![
        (any::<i64>(), 0u32..=i32::MAX as u32).prop_map(|(v, c)| ParamFlowItem::int(v, c)),
        ("[a-z0-9]{0,10}", 0u32..100).prop_map(|(v, c)| ParamFlowItem::string(v, c)),
        (
            any::<f64>().prop_filter("finite", |x| x.is_finite()),
            0u32..100
        )
            .prop_map(|(v, c)| ParamFlowItem::double(v, c)),
        (any::<bool>(), 0u32..100).prop_map(|(v, c)| ParamFlowItem::boolean(v, c)),
        ("[a-z]{1,5}", 0u32..100).prop_map(|(v, c)| ParamFlowItem {
            object: v,
            count: c,
            class_type: None,
        }),
    ]
}

fn param_flow_rule() -> impl Strategy<Value = ParamFlowRule> {
    let cluster = (
        1i64..=i64::MAX,
        0i32..=1,
        any::<bool>(),
        1i32..20,
        1i32..100,
    )
        .prop_map(
            |(flow_id, threshold_type, fallback, samples, k)| ParamFlowClusterConfig {
                flow_id,
                threshold_type,
                fallback_to_local_when_fail: fallback,
                sample_count: samples,
                window_interval_ms: samples * k,
            },
        );
    (
        (
            prop::option::of(any::<i64>()),
            resource(),
            any::<i32>(),
            count(),
            prop::sample::select(vec![FlowGrade::Qps, FlowGrade::Thread]),
            prop::sample::select(vec![
                ControlBehavior::Reject,
                ControlBehavior::WarmUp,
                ControlBehavior::RateLimiter,
                ControlBehavior::WarmUpRateLimiter,
            ]),
        ),
        (
            any::<u32>(),
            any::<u32>(),
            1u64..=u64::try_from(i64::MAX).unwrap(),
            prop::collection::vec(param_item(), 0..5),
            prop::option::of(cluster),
            prop::option::of(pattern()),
        ),
    )
        .prop_map(
            |(
                (id, resource, idx, count, grade, behavior),
                (queue, burst, duration, items, cluster, pattern),
            )| {
                let mut rule = ParamFlowRule::new(resource, idx, count)
                    .grade(grade)
                    .control_behavior(behavior)
                    .max_queueing_time_ms(queue)
                    .burst_count(burst)
                    .duration_in_sec(duration);
                rule.id = id;
                // Exception items are one a value.
                let mut seen = Vec::new();
                for item in items {
                    let key = (
                        item.object.clone(),
                        item.class_type.clone().unwrap_or_default(),
                    );
                    let key = match key.1.as_str() {
                        "java.lang.String" => (key.0, String::new()),
                        _ => key,
                    };
                    if !seen.contains(&key) {
                        seen.push(key);
                        rule = rule.item(item);
                    }
                }
                if let Some(p) = pattern {
                    rule.resource = p;
                    rule.regex = true;
                    if rule.paces() {
                        rule.control_behavior = ControlBehavior::Reject;
                    }
                } else if let Some(config) = cluster {
                    rule.cluster_mode = true;
                    rule.cluster_config = Some(config);
                }
                rule
            },
        )
}

/// Valid lists of each type.
fn valid_rules() -> impl Strategy<Value = Rules> {
    prop_oneof![
        prop::collection::vec(flow_rule(), 0..6).prop_map(Rules::Flow),
        prop::collection::vec(degrade_rule(), 0..6).prop_map(Rules::Degrade),
        prop::collection::vec(system_rule(), 0..6).prop_map(Rules::System),
        (0usize..6)
            .prop_flat_map(|n| (0..n).map(authority_rule).collect::<Vec<_>>())
            .prop_map(Rules::Authority),
        prop::collection::vec(param_flow_rule(), 0..6).prop_map(Rules::ParamFlow),
    ]
}

/// `value` with each number written as the other kind where that is exact: an integer as a double
/// (`10` → `10.0`) or an integral double as an integer, as `flip` says number by number.
fn flip_numbers(value: &mut Value, flip: &mut impl Iterator<Item = bool>) {
    const EXACT: f64 = 9.0e15;
    match value {
        Value::Number(n) => {
            if !flip.next().unwrap_or(false) {
                return;
            }
            if let Some(i) = n.as_i64().filter(|i| (*i as f64).abs() < EXACT) {
                *value = Value::from(i as f64);
            } else if let Some(x) = n.as_f64().filter(|x| x.fract() == 0.0 && x.abs() < EXACT) {
                *value = Value::from(x as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| flip_numbers(v, flip)),
        Value::Object(map) => map.values_mut().for_each(|v| flip_numbers(v, flip)),
        _ => {}
    }
}

/// Fields of no rule kind, with any values.
fn unknown_fields() -> impl Strategy<Value = Vec<(String, Value)>> {
    prop::collection::vec(
        (
            "[a-zA-Z_]{1,10}".prop_filter("not a rule field", |n| !KNOWN.contains(&n.as_str())),
            json_value(),
        ),
        0..4,
    )
}

/// `cases` cases, nothing written to disk (a failure prints its smallest input).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn any_text_loads_or_is_refused_cleanly(rule_type in rule_types(), text in any::<String>()) {
        check_any_text(rule_type, &text)?;
    }

    #[test]
    fn json_like_text_loads_or_is_refused_cleanly(
        rule_type in rule_types(),
        text in "[\\[\\]{}\",:0-9a-zA-Z .eE+-]{0,48}",
    ) {
        check_any_text(rule_type, &text)?;
    }

    #[test]
    fn any_json_value_loads_or_is_refused_cleanly(
        rule_type in rule_types(),
        value in prop_oneof![json_value(), rule_like_list()],
    ) {
        check_any_text(rule_type, &value.to_string())?;
    }
}

proptest! {
    #![proptest_config(config(128))]

    /// Valid typed rules load, and round-trip through their JSON.
    #[test]
    fn valid_typed_rules_round_trip(rules in valid_rules()) {
        let rule_type = rules.rule_type();
        let fg = Floodgate::default();
        rules.load(&fg).map_err(|e| TestCaseError::fail(format!("{rules:?}: {e}")))?;
        prop_assert_eq!(Rules::of(&fg, rule_type), rules);
        assert_round_trip(&fg, rule_type)?;
    }

    /// The JSON of valid rules, with its numbers written either way and fields of no rule kind added,
    /// loads as the same rules; each added field is a warning, and nothing else is.
    #[test]
    fn valid_json_with_other_fields_loads_as_the_same_rules(
        rules in valid_rules(),
        flips in prop::collection::vec(any::<bool>(), 64),
        extra in prop::collection::vec(unknown_fields(), 6),
    ) {
        let rule_type = rules.rule_type();
        let typed = Floodgate::default();
        rules.load(&typed).map_err(|e| TestCaseError::fail(format!("{rules:?}: {e}")))?;
        let mut json: Value = serde_json::from_str(&typed.rules_json(rule_type)).unwrap();
        flip_numbers(&mut json, &mut flips.iter().copied().cycle());
        let mut expected = BTreeSet::new();
        if let Value::Array(items) = &mut json {
            for (index, (item, fields)) in items.iter_mut().zip(&extra).enumerate() {
                let map: &mut Map<String, Value> = item.as_object_mut().unwrap();
                for (name, value) in fields {
                    map.insert(name.clone(), value.clone());
                    expected.insert((index, name.clone()));
                }
            }
        }
        let fg = Floodgate::default();
        let load = fg
            .load_rules_json(rule_type, &json.to_string())
            .map_err(|e| TestCaseError::fail(format!("{json}: {e}")))?;
        let warned: BTreeSet<(usize, String)> = load
            .warnings()
            .iter()
            .map(|w| match w {
                RuleWarning::UnknownField { index, field, .. } => (*index, field.clone()),
                other => panic!("{other}"),
            })
            .collect();
        prop_assert_eq!(warned, expected);
        prop_assert_eq!(Rules::of(&fg, rule_type), rules);
        assert_round_trip(&fg, rule_type)?;
    }
}

proptest! {
    #![proptest_config(config(128))]

    /// What `rules_json` writes reads back with serde, through `deserialize_list`, as the rules in
    /// force.
    #[test]
    fn rules_json_reads_back_with_serde(rules in valid_rules()) {
        let rule_type = rules.rule_type();
        let fg = Floodgate::default();
        rules.load(&fg).map_err(|e| TestCaseError::fail(format!("{rules:?}: {e}")))?;
        let json = fg.rules_json(rule_type);
        let read = Rules::deserialize_list(rule_type, &json)
            .map_err(|e| TestCaseError::fail(format!("{json}: {e}")))?;
        prop_assert_eq!(read, Rules::of(&fg, rule_type));
    }

    /// A list with rules made invalid (a wrongly typed `id`, a JSON value that is not an object)
    /// is refused by serde's `deserialize_list` with the error a load gives: every rule at fault
    /// named by its index, in list order (serde adds where in the text it stopped).
    #[test]
    fn serde_names_the_rules_at_fault_as_a_load_does(
        rules in valid_rules(),
        breaks in prop::collection::vec(0u8..3, 6),
    ) {
        let rule_type = rules.rule_type();
        let typed = Floodgate::default();
        rules.load(&typed).map_err(|e| TestCaseError::fail(format!("{rules:?}: {e}")))?;
        let mut json: Value = serde_json::from_str(&typed.rules_json(rule_type)).unwrap();
        let Value::Array(items) = &mut json else { unreachable!() };
        for (item, how) in items.iter_mut().zip(&breaks) {
            match how {
                1 => {
                    item.as_object_mut().unwrap().insert("id".into(), Value::from("x"));
                }
                2 => *item = Value::from(7),
                _ => {}
            }
        }
        let json = json.to_string();
        let load = Floodgate::default().load_rules_json(rule_type, &json);
        match Rules::deserialize_list(rule_type, &json) {
            Ok(read) => {
                prop_assert!(load.is_ok(), "{json}: {load:?}");
                prop_assert_eq!(read, Rules::of(&typed, rule_type));
            }
            Err(err) => {
                let load = load.err().map(|e| e.to_string()).unwrap_or_default();
                prop_assert!(load.starts_with("rule "), "{json}: {load}");
                prop_assert!(err.to_string().starts_with(&load), "{err} / {load}");
            }
        }
    }
}
