//! The limits on a rule list: at most 100 regex rules a list, counted before any pattern is compiled;
//! patterns of at most 512 bytes; at most 100 rules of a type on one resource. A list past a limit is
//! refused whole, naming the first rule over it, and the rules in force stay.

use floodgate_core::{Floodgate, FlowRule, RuleError, RuleType};

/// The resource rule types, and rule `i` of each as JSON, a regex rule when `regex`.
const TYPES: [(RuleType, &str); 4] = [
    (RuleType::Flow, r#""count":1"#),
    (RuleType::Degrade, r#""grade":2,"count":1,"timeWindow":1"#),
    (RuleType::ParamFlow, r#""paramIdx":0,"count":1"#),
    (RuleType::Authority, r#""limitApp":"web""#),
];

fn rule(fields: &str, resource: &str, regex: bool) -> String {
    let resource = serde_json::Value::from(resource);
    format!(r#"{{"resource":{resource},"regex":{regex},{fields}}}"#)
}

fn regex_list(fields: &str, count: usize) -> String {
    let rules: Vec<String> = (0..count)
        .map(|i| rule(fields, &format!("GET:/r{i}/.*"), true))
        .collect();
    format!("[{}]", rules.join(","))
}

fn invalid(err: &RuleError) -> (usize, &str) {
    match err {
        RuleError::Invalid { index, field, .. } => (*index, field),
        other => panic!("one invalid rule, got: {other}"),
    }
}

#[test]
fn a_list_of_more_regex_rules_than_the_cap_is_refused_naming_the_first_over_it() {
    for (rule_type, fields) in TYPES {
        let fg = Floodgate::default();
        let kept = format!("[{}]", rule(fields, "kept", false));
        fg.load_rules_json(rule_type, &kept).unwrap();
        fg.load_rules_json(rule_type, &regex_list(fields, 100))
            .unwrap_or_else(|e| panic!("{rule_type}: 100 regex rules load: {e}"));
        fg.load_rules_json(rule_type, &kept).unwrap();
        // Rules on names do not count: the 101st regex rule is rule 102.
        let mut rules = vec![rule(fields, "a", false), rule(fields, "b", false)];
        rules.extend((0..120).map(|i| rule(fields, &format!("x{i}.*"), true)));
        let err = fg
            .load_rules_json(rule_type, &format!("[{}]", rules.join(",")))
            .unwrap_err();
        assert_eq!(invalid(&err), (102, "regex"), "{rule_type}: {err}");
        assert!(
            err.to_string()
                .contains("a list takes at most 100 (each is compiled"),
            "{err}"
        );
        assert_eq!(
            fg.rule_count(rule_type),
            1,
            "{rule_type}: the rules in force stay"
        );
    }
}

/// The first rule's pattern does not compile, and a mebibyte of regex rules follows: refused for the
/// cap alone, so no pattern was compiled (nor even read: the pattern's error would be named too).
#[test]
fn the_regex_cap_is_checked_before_any_pattern_is_compiled() {
    for (rule_type, fields) in TYPES {
        let mut json = format!("[{}", rule(fields, "(", true));
        let mut i = 0;
        while json.len() < 1 << 20 {
            json.push(',');
            json.push_str(&rule(fields, &format!(r"(?:\w){{4}}r{i}"), true));
            i += 1;
        }
        json.push(']');
        let err = Floodgate::default()
            .load_rules_json(rule_type, &json)
            .unwrap_err();
        assert_eq!(invalid(&err), (100, "regex"), "{rule_type}: {err}");
    }
}

#[test]
fn typed_lists_have_the_same_regex_cap() {
    let fg = Floodgate::default();
    let rules = (0..101).map(|i| FlowRule::new(format!("r{i}.*"), 1.0).regex());
    let err = fg.load_flow_rules(rules).unwrap_err();
    assert_eq!(invalid(&err), (100, "regex"));
    assert!(fg.flow_rules().is_empty());
}

#[test]
fn a_pattern_longer_than_512_bytes_is_refused() {
    for (rule_type, fields) in TYPES {
        let fg = Floodgate::default();
        let longest = format!("[{}]", rule(fields, &"a".repeat(512), true));
        fg.load_rules_json(rule_type, &longest).unwrap();
        let longer = format!("[{}]", rule(fields, &"a".repeat(513), true));
        let err = fg.load_rules_json(rule_type, &longer).unwrap_err();
        assert_eq!(
            err.to_string(),
            "rule 0: `resource` is a regular expression of 513 bytes; patterns are at most 512",
            "{rule_type}"
        );
        // A name of any length is not a pattern.
        let name = format!("[{}]", rule(fields, &"a".repeat(100_000), false));
        fg.load_rules_json(rule_type, &name).unwrap();
    }
}

#[test]
fn every_pattern_that_does_not_compile_is_named() {
    let fg = Floodgate::default();
    let rules = [
        rule(r#""count":1"#, r"\w{200}", true),
        rule(r#""count":1"#, "fine.*", true),
        rule(r#""count":1"#, r"\w{300}", true),
    ];
    let err = fg
        .load_rules_json(RuleType::Flow, &format!("[{}]", rules.join(",")))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "rule 0: `resource` is a regular expression too large to compile (over 256 KiB); \
         rule 2: `resource` is a regular expression too large to compile (over 256 KiB)"
    );
}

/// Each entry checks every rule of its resource: a resource takes at most 100 rules of a type (a
/// pattern's rules are counted apart from the name's).
#[test]
fn a_resource_takes_at_most_100_rules_of_a_type() {
    for (rule_type, fields) in TYPES {
        let fg = Floodgate::default();
        let mut rules: Vec<String> = (0..100).map(|_| rule(fields, "R", false)).collect();
        rules.extend((0..100).map(|_| rule(fields, "R", true)));
        rules.push(rule(fields, "S", false));
        fg.load_rules_json(rule_type, &format!("[{}]", rules.join(",")))
            .unwrap_or_else(|e| panic!("{rule_type}: {e}"));
        let in_force = fg.rules_json(rule_type);
        rules.insert(50, rule(fields, "R", false));
        let err = fg
            .load_rules_json(rule_type, &format!("[{}]", rules.join(",")))
            .unwrap_err();
        assert_eq!(invalid(&err), (100, "resource"), "{rule_type}: {err}");
        assert!(
            err.to_string()
                .contains("a resource takes at most 100 rules of a type"),
            "{err}"
        );
        assert_eq!(fg.rules_json(rule_type), in_force, "{rule_type}: kept");
    }
    let too_many = (0..101).map(|i| FlowRule::new("R", f64::from(i)));
    let err = Floodgate::default().load_flow_rules(too_many).unwrap_err();
    assert_eq!(invalid(&err), (100, "resource"));
}

/// A mebibyte of rules on one resource is refused, naming the 101st.
#[test]
fn a_mebibyte_of_rules_on_one_resource_is_refused() {
    for (rule_type, fields) in TYPES {
        let one = rule(fields, "R", false);
        let json = format!("[{}]", vec![one.as_str(); (1 << 20) / one.len()].join(","));
        let err = Floodgate::default()
            .load_rules_json(rule_type, &json)
            .unwrap_err();
        assert_eq!(invalid(&err), (100, "resource"), "{rule_type}: {err}");
    }
}
