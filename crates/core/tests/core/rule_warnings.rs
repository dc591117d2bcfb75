//! Fields a rule kind does not have are ignored and reported: each a warning naming the rule and the
//! field (nested ones by their path), returned with the load that put the list in force. Every field
//! of Sentinel's rule classes is known, so what Sentinel writes loads without a warning.

use floodgate_core::{Floodgate, RuleType, RuleWarning};

fn warnings(rule_type: RuleType, json: &str) -> Vec<String> {
    Floodgate::default()
        .load_rules_json(rule_type, json)
        .unwrap_or_else(|e| panic!("{rule_type}: {e}"))
        .warnings()
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Every field of each of Sentinel's rule classes (as Sentinel 1.8's `getRules` writes them, the
/// nested configs and items included).
#[test]
fn what_sentinel_writes_loads_without_a_warning() {
    let lists = [
        (
            RuleType::Flow,
            r#"[{"id":1,"resource":"R","limitApp":"default","regex":false,"grade":1,"count":5.0,
              "strategy":0,"refResource":"X","controlBehavior":0,"warmUpPeriodSec":10,
              "maxQueueingTimeMs":500,"clusterMode":true,"clusterConfig":{"flowId":7,
              "thresholdType":0,"fallbackToLocalWhenFail":true,"strategy":0,"sampleCount":10,
              "windowIntervalMs":1000,"resourceTimeout":2000,"resourceTimeoutStrategy":0,
              "acquireRefuseStrategy":0,"clientOfflineTime":2000}}]"#,
        ),
        (
            RuleType::Degrade,
            r#"[{"id":1,"resource":"R","limitApp":"default","regex":false,"grade":0,"count":300.0,
              "timeWindow":5,"minRequestAmount":5,"slowRatioThreshold":0.8,"statIntervalMs":10000}]"#,
        ),
        (
            RuleType::System,
            r#"[{"id":1,"resource":"R","limitApp":"default","regex":false,"highestSystemLoad":-1.0,
              "highestCpuUsage":-1.0,"qps":1000.0,"avgRt":-1,"maxThread":-1}]"#,
        ),
        (
            RuleType::Authority,
            r#"[{"id":1,"resource":"R","limitApp":"mobile-app","regex":false,"strategy":1}]"#,
        ),
        (
            RuleType::ParamFlow,
            r#"[{"id":1,"resource":"R","limitApp":"default","regex":false,"grade":1,"paramIdx":0,
              "count":5.0,"controlBehavior":0,"maxQueueingTimeMs":0,"burstCount":0,"durationInSec":1,
              "paramFlowItemList":[{"object":"42","count":10,"classType":"int"}],"clusterMode":true,
              "clusterConfig":{"flowId":8,"thresholdType":0,"fallbackToLocalWhenFail":true,
              "sampleCount":10,"windowIntervalMs":1000}}]"#,
        ),
    ];
    for (rule_type, json) in lists {
        assert_eq!(
            warnings(rule_type, json),
            Vec::<String>::new(),
            "{rule_type}"
        );
        // What Floodgate writes back loads without a warning too.
        let fg = Floodgate::default();
        fg.load_rules_json(rule_type, json).unwrap();
        assert_eq!(
            warnings(rule_type, &fg.rules_json(rule_type)),
            Vec::<String>::new(),
            "{rule_type}"
        );
    }
}

#[test]
fn unknown_fields_are_named_by_rule_and_path_and_the_list_loads() {
    let fg = Floodgate::default();
    let load = fg
        .load_rules_json(
            RuleType::ParamFlow,
            r#"[{"resource":"A","paramIdx":0,"count":5},
                {"resource":"B","paramIdx":0,"count":5,"app":"shop","gmtCreate":null,"burst":3,"Count":1,
                 "paramFlowItemList":[{"object":"1","count":2},{"object":"2","count":3,"kind":"x"}],
                 "clusterMode":false,"clusterConfig":{"flowId":1,"flowID":2}}]"#,
        )
        .unwrap();
    let texts: Vec<String> = load.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(
        texts,
        [
            "rule 1: unknown field `Count` (ignored)",
            "rule 1: unknown field `burst` (ignored)",
            "rule 1: unknown field `clusterConfig.flowID` (ignored)",
            "rule 1: unknown field `paramFlowItemList[1].kind` (ignored)",
        ]
    );
    assert!(
        matches!(&load.warnings()[2], RuleWarning::UnknownField { index: 1, field, .. }
            if field == "clusterConfig.flowID"),
        "{:?}",
        load.warnings()
    );
    assert_eq!(fg.param_flow_rules().len(), 2, "the list is in force");
}

/// A field of another rule kind is not one of this kind's.
#[test]
fn fields_of_other_kinds_are_unknown() {
    assert_eq!(
        warnings(
            RuleType::Degrade,
            r#"[{"resource":"R","count":1,"timeWindow":1,"strategy":0,"paramIdx":1}]"#
        ),
        [
            "rule 0: unknown field `paramIdx` (ignored)",
            "rule 0: unknown field `strategy` (ignored)",
        ]
    );
    assert_eq!(
        warnings(RuleType::System, r#"[{"qps":5,"count":3}]"#),
        ["rule 0: unknown field `count` (ignored)"]
    );
}

#[test]
fn clean_lists_have_no_warnings() {
    let fg = Floodgate::default();
    let load = fg
        .load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":5}]"#)
        .unwrap();
    assert!(load.warnings().is_empty());
    assert!(
        fg.load_rules_json(RuleType::Flow, "[]")
            .unwrap()
            .warnings()
            .is_empty()
    );
}
