//! A token server's rule document: applied whole or not at all.

use std::sync::Arc;

use floodgate_cluster::server::{LocalTokenService, RuleFileError, ServerRules};
use floodgate_core::ManualClock;
use floodgate_core::cluster::TokenStatus;

const T0: u64 = 1_700_000_000_000;

fn doc(namespaces: &str) -> ServerRules {
    ServerRules::from_json(&format!(r#"{{"namespaces":{{{namespaces}}}}}"#)).unwrap()
}

fn flow(flow_id: i64, count: u32) -> String {
    format!(
        r#"{{"resource":"R{flow_id}","count":{count},"clusterMode":true,"clusterConfig":{{"flowId":{flow_id},"thresholdType":1}}}}"#
    )
}

fn service() -> LocalTokenService {
    LocalTokenService::new(Arc::new(ManualClock::new(T0)))
}

fn granted(s: &LocalTokenService, flow_id: i64, n: usize) -> usize {
    (0..n)
        .filter(|_| s.request_token(flow_id, 1, false).status == TokenStatus::Ok)
        .count()
}

#[test]
fn a_document_sets_each_namespaces_rules_and_settings() {
    let s = service();
    doc(&format!(
        r#""a":{{"flowRules":[{}],"flowConfig":{{"maxAllowedQps":2}}}},"b":{{"flowRules":[{}],"paramRules":[{{"resource":"P","paramIdx":0,"count":1,"clusterMode":true,"clusterConfig":{{"flowId":9,"thresholdType":1}}}}]}}"#,
        flow(1, 5),
        flow(2, 3)
    ))
    .apply(&s)
    .unwrap();
    assert_eq!(s.namespaces(), ["a", "b"]);
    assert_eq!(s.flow_config("a").max_allowed_qps, 2.0);
    assert_eq!(granted(&s, 1, 5), 2, "a's request limiter");
    assert_eq!(granted(&s, 2, 5), 3);
    assert_eq!(s.param_rules("b").len(), 1);
}

#[test]
fn a_bad_part_anywhere_changes_nothing_and_is_named() {
    let s = service();
    doc(&format!(r#""a":{{"flowRules":[{}]}}"#, flow(1, 2)))
        .apply(&s)
        .unwrap();
    let bad_rule = doc(&format!(
        r#""a":{{"flowRules":[{}]}},"b":{{"flowRules":[{},{}]}}"#,
        flow(1, 9),
        flow(2, 1),
        flow(2, 1)
    ));
    let error = bad_rule.apply(&s).unwrap_err();
    assert!(
        matches!(&error, RuleFileError::Rules { namespace, kind: "flowRules", .. } if namespace == "b"),
        "{error}"
    );
    assert!(
        error.to_string().contains("rule 1: `clusterConfig.flowId`"),
        "{error}"
    );
    let bad_config = doc(&format!(
        r#""a":{{"flowRules":[{}],"flowConfig":{{"sampleCount":3}}}}"#,
        flow(1, 9)
    ));
    assert!(matches!(
        bad_config.apply(&s),
        Err(RuleFileError::Config { .. })
    ));
    assert_eq!(s.namespaces(), ["a"]);
    assert_eq!(granted(&s, 1, 5), 2, "the first document's rule");
}

#[test]
fn malformed_documents_say_where() {
    let unknown = ServerRules::from_json(r#"{"namespaces":{"a":{"flowRulez":[]}}}"#).unwrap_err();
    assert!(unknown.to_string().contains("flowRulez"), "{unknown}");
    let bad_rule = ServerRules::from_json(
        r#"{"namespaces":{"a":{"flowRules":[{"resource":"R","count":1},{"resource":"R","count":-1}]}}}"#,
    )
    .unwrap_err();
    assert!(
        bad_rule.to_string().contains("rule 1: `count`"),
        "{bad_rule}"
    );
}

#[test]
fn flow_ids_may_move_between_namespaces_and_kept_ones_keep_their_counts() {
    let s = service();
    doc(&format!(
        r#""a":{{"flowRules":[{},{}]}}"#,
        flow(1, 3),
        flow(2, 3)
    ))
    .apply(&s)
    .unwrap();
    assert_eq!(granted(&s, 1, 2), 2);
    // Flow id 2 moves to b; 1 stays in a.
    doc(&format!(
        r#""a":{{"flowRules":[{}]}},"b":{{"flowRules":[{}]}}"#,
        flow(1, 3),
        flow(2, 3)
    ))
    .apply(&s)
    .unwrap();
    assert_eq!(granted(&s, 1, 5), 1, "two of its three passes carried over");
    assert_eq!(s.flow_rules("b").len(), 1);
    // Moving back the other way, b first in the service's order.
    doc(&format!(
        r#""a":{{"flowRules":[{},{}]}}"#,
        flow(1, 3),
        flow(2, 3)
    ))
    .apply(&s)
    .unwrap();
    assert!(s.flow_rules("b").is_empty(), "b is no longer named");
    assert_eq!(s.flow_rules("a").len(), 2);
}
