//! Every rule the typed API accepts survives its JSON: dumped with `rules_json` and loaded into a fresh
//! engine, it comes back equal (rules are saved as JSON, so anything else is lost on restart). Values
//! JSON cannot hold are refused when loaded, with the field named.

use floodgate_core::{
    DegradeRule, Floodgate, FlowRule, ParamFlowRule, RuleError, RuleType, SystemRule,
};

fn reloaded(fg: &Floodgate, rule_type: RuleType) -> Floodgate {
    let fresh = Floodgate::default();
    fresh
        .load_rules_json(rule_type, &fg.rules_json(rule_type))
        .expect("an engine's own dump loads");
    fresh
}

fn field(err: RuleError) -> String {
    match err {
        RuleError::Invalid { field, .. } => field,
        other => panic!("not a field error: {other}"),
    }
}

#[test]
fn extreme_values_round_trip_or_are_refused() {
    let fg = Floodgate::default();

    let params = [ParamFlowRule::new("P", 0, 5.0)
        .burst_count(u32::MAX)
        .max_queueing_time_ms(u32::MAX)];
    fg.load_param_flow_rules(params.clone()).unwrap();
    assert_eq!(
        reloaded(&fg, RuleType::ParamFlow).param_flow_rules(),
        params
    );

    let flows = [FlowRule::new("F", 5.0)
        .warm_up_period_sec(u32::MAX)
        .max_queueing_time_ms(u32::MAX)];
    fg.load_flow_rules(flows.clone()).unwrap();
    assert_eq!(reloaded(&fg, RuleType::Flow).flow_rules(), flows);

    let largest = u64::try_from(i64::MAX).unwrap();
    let systems = [SystemRule::new().avg_rt(largest).max_thread(largest)];
    fg.load_system_rules(systems.clone()).unwrap();
    assert_eq!(reloaded(&fg, RuleType::System).system_rules(), systems);
    for rule in [
        SystemRule::new().avg_rt(largest + 1),
        SystemRule::new().max_thread(u64::MAX),
    ] {
        let err = fg.load_system_rules([rule]).unwrap_err();
        assert!(
            ["avgRt", "maxThread"].contains(&field(err).as_str()),
            "refused, naming the field"
        );
    }
    assert_eq!(fg.system_rules(), systems, "a refused list changes nothing");

    for threshold in [f64::NAN, f64::INFINITY] {
        let err = fg
            .load_degrade_rules([DegradeRule::error_count("D", 3.0)
                .time_window(1)
                .slow_ratio_threshold(threshold)])
            .unwrap_err();
        assert_eq!(field(err), "slowRatioThreshold", "{threshold}");
    }
    let degrades = [DegradeRule::error_count("D", 3.0)
        .time_window(1)
        .slow_ratio_threshold(7.5)];
    fg.load_degrade_rules(degrades.clone()).unwrap();
    assert_eq!(reloaded(&fg, RuleType::Degrade).degrade_rules(), degrades);
}

#[test]
fn out_of_range_numbers_say_so() {
    let fg = Floodgate::default();
    let err = fg
        .load_rules_json(RuleType::System, r#"[{"avgRt":1e19}]"#)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "rule 0: `avgRt` is out of range (-9223372036854775808 to 9223372036854775807), got 1e+19"
    );
    let err = fg
        .load_rules_json(
            RuleType::ParamFlow,
            r#"[{"resource":"P","paramIdx":0,"count":1,"burstCount":5000000000}]"#,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "rule 0: `burstCount` must be at most 4294967295, got 5000000000"
    );
}

/// Text that would clear a type by accident is refused, and changes nothing: blank text, `null`, or a
/// system list of rules that set no threshold (misspelled fields are not thresholds, so
/// `[{"maxQps":10}]` protected nothing). `[]` clears.
#[test]
fn lists_that_would_clear_by_accident_are_refused() {
    let fg = Floodgate::default();
    fg.load_flow_rules([FlowRule::new("F", 5.0)]).unwrap();
    for text in ["", "  \n", "null"] {
        assert!(
            fg.load_rules_json(RuleType::Flow, text).is_err(),
            "{text:?}"
        );
        assert_eq!(fg.flow_rules().len(), 1, "{text:?}: kept");
    }
    fg.load_system_rules([SystemRule::new().qps(10.0)]).unwrap();
    let err = fg
        .load_rules_json(RuleType::System, r#"[{"maxQps":10}]"#)
        .unwrap_err();
    assert!(err.to_string().contains("sets no threshold"), "{err}");
    assert_eq!(fg.system_rules(), [SystemRule::new().qps(10.0)], "kept");
    fg.load_rules_json(RuleType::Flow, "[]").unwrap();
    assert!(fg.flow_rules().is_empty(), "[] clears");
}

/// A threshold that is absent, null or misspelt is refused, naming it: read as 0 it blocked every
/// call (flow, hot-parameter) or opened the breaker on the first slow call (degrade), and a system
/// rule without one protected nothing beside the others. The rules in force stay.
#[test]
fn a_missing_or_misspelt_threshold_is_refused() {
    let fg = Floodgate::default();
    let cases = [
        (RuleType::Flow, r#""resource":"R""#),
        (
            RuleType::Degrade,
            r#""resource":"R","grade":2,"timeWindow":1"#,
        ),
        (RuleType::ParamFlow, r#""resource":"R","paramIdx":0"#),
    ];
    for (rule_type, head) in cases {
        let kept = format!("[{{{head},\"count\":3}}]");
        fg.load_rules_json(rule_type, &kept).unwrap();
        for count in ["", r#","count":null"#, r#","Count":20"#, r#","cnt":20"#] {
            let json = format!("[{{{head},\"count\":1}},{{{head}{count}}}]");
            let err = fg.load_rules_json(rule_type, &json).unwrap_err();
            assert_eq!(
                err.to_string(),
                "rule 1: `count` is required",
                "{rule_type}: {json}"
            );
            assert_eq!(fg.rule_count(rule_type), 1, "{rule_type}: kept");
        }
    }
    fg.load_rules_json(RuleType::System, r#"[{"qps":5}]"#)
        .unwrap();
    for rules in [
        r#"[{"qps":5},{"maxQps":10}]"#,
        r#"[{"qps":5},{}]"#,
        r#"[{"qps":5},{"highestSystemLoad":-1,"highestCpuUsage":-1,"qps":-1,"avgRt":-1,"maxThread":-1}]"#,
    ] {
        let err = fg.load_rules_json(RuleType::System, rules).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("rule 1: `(rule)` sets no threshold"),
            "{rules}: {err}"
        );
    }
    let err = fg.load_system_rules([SystemRule::new()]).unwrap_err();
    assert!(err.to_string().contains("sets no threshold"), "{err}");
    assert_eq!(fg.system_rules(), [SystemRule::new().qps(5.0)], "kept");
    // An authority rule without its list of origins admits nobody or refuses nobody: refused too.
    let err = fg
        .load_rules_json(RuleType::Authority, r#"[{"resource":"R","strategy":1}]"#)
        .unwrap_err();
    assert!(
        matches!(&err, RuleError::Invalid { index: 0, field, .. } if field == "limitApp"),
        "{err}"
    );
}

/// A whole number written with an exponent past ±9e15 is not exact as read: refused, saying how to
/// write it.
#[test]
fn big_whole_numbers_must_be_written_in_digits() {
    let fg = Floodgate::default();
    let err = fg
        .load_rules_json(RuleType::System, r#"[{"avgRt":1e16}]"#)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "rule 0: `avgRt` must be written in digits past ±9e15, got 1e+16"
    );
    fg.load_rules_json(RuleType::System, r#"[{"avgRt":10000000000000000}]"#)
        .unwrap();
}
