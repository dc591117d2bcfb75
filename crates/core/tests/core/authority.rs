//! Authority rules end to end: white and black lists by origin with Sentinel's scenarios, exact token
//! matching, one rule per resource, regex rules, reloads and every validation error.

use std::time::Duration;

use floodgate_core::{
    AuthorityRule, AuthorityStrategy, BlockKind, EntryType, Floodgate, ManualClock, RuleError,
    RuleType,
};

const T0: u64 = 1_700_000_000_000;

fn engine() -> (ManualClock, Floodgate) {
    let clock = ManualClock::new(T0);
    (clock.clone(), Floodgate::builder().clock(clock).build())
}

fn load(fg: &Floodgate, json: &str) {
    fg.load_rules_json(RuleType::Authority, json)
        .expect("valid rules");
}

fn passes(fg: &Floodgate, resource: &str, origin: &str) -> bool {
    fg.entry(resource).origin(origin).enter().is_ok()
}

#[test]
fn sentinel_scenario_11_origin_app_a() {
    // Sentinel's answers for origin appA against four single-rule configurations.
    let cases = [
        (
            r#"[{"resource":"R","limitApp":"appA,appB","strategy":0}]"#,
            true,
        ),
        (
            r#"[{"resource":"R","limitApp":"appB","strategy":0}]"#,
            false,
        ),
        (
            r#"[{"resource":"R","limitApp":"appA","strategy":1}]"#,
            false,
        ),
        (r#"[{"resource":"R","limitApp":"appC","strategy":1}]"#, true),
    ];
    let (_clock, fg) = engine();
    assert!(fg.slots().contains(&("authority", -6000)));
    for (json, expected) in cases {
        load(&fg, json);
        assert_eq!(passes(&fg, "R", "appA"), expected, "{json}");
    }
}

#[test]
fn a_refusal_is_an_authority_block_carrying_the_rule() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"id":7,"resource":"R","limitApp":"appB, appE","strategy":0}]"#,
    );
    let block = fg.entry("R").origin("appA").enter().unwrap_err();
    assert_eq!(block.kind(), BlockKind::Authority);
    let rule = block.rule_as::<AuthorityRule>().unwrap();
    assert_eq!(
        (rule.id, rule.limit_app.as_str(), rule.strategy),
        (Some(7), "appB, appE", AuthorityStrategy::White)
    );
    assert_eq!(block.rule().and_then(|r| r.id()), Some(7));
    let node = fg.cluster_node("R").unwrap();
    assert_eq!((node.pass_qps(), node.block_qps()), (0.0, 1.0));
}

#[test]
fn an_empty_origin_passes_white_and_black_lists() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"white","limitApp":"appA"},{"resource":"black","limitApp":"appA,","strategy":1}]"#,
    );
    assert!(fg.entry("white").enter().is_ok(), "no origin");
    assert!(passes(&fg, "white", ""));
    assert!(
        passes(&fg, "black", ""),
        "an empty origin passes, even a list with an empty token"
    );
    assert!(!passes(&fg, "white", "appB"));
    assert!(!passes(&fg, "black", "appA"));
    // The origin of a context counts like an explicit one.
    fg.context("entrance")
        .origin("appB")
        .run(|| assert!(fg.entry("white").enter().is_err()));
    fg.context("entrance")
        .origin("appA")
        .run(|| assert!(fg.entry("white").enter().is_ok()));
}

#[test]
fn tokens_are_compared_exactly_spaces_included() {
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":"white","limitApp":"appB, appE"},{"resource":"black","limitApp":"appB, appE","strategy":1}]"#,
    );
    assert!(passes(&fg, "white", "appB"));
    assert!(!passes(&fg, "white", "appE"), "the token is ` appE`");
    assert!(passes(&fg, "white", " appE"));
    assert!(!passes(&fg, "white", "app"), "no substring match");
    assert!(!passes(&fg, "white", "appB, appE"), "not the whole list");
    assert!(!passes(&fg, "black", "appB"));
    assert!(
        passes(&fg, "black", "appE"),
        "` appE` is listed, `appE` is not"
    );
}

#[test]
fn a_resource_takes_one_rule() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","limitApp":"bot","strategy":1}]"#);
    // Sentinel kept the first rule and silently ignored the second, answering `success` while `evil`
    // passed; here a second rule for the same resource refuses the whole list with an error.
    let two = r#"[{"resource":"R","limitApp":"appA"},{"resource":"S","limitApp":"appB","strategy":1},{"resource":"R","limitApp":"evil","strategy":1}]"#;
    let err = fg
        .load_rules_json(RuleType::Authority, two)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "rule 2: `resource` already has an authority rule (rule 0); a resource takes one"
    );
    assert!(!passes(&fg, "R", "bot"), "the rules in force stay");
    assert_eq!(fg.authority_rules().len(), 1);
    // Rules that admit the same origins are one rule (the first kept): another id, the tokens in
    // another order or repeated.
    load(
        &fg,
        r#"[{"id":1,"resource":"R","limitApp":"bot,crawler","strategy":1},{"id":2,"resource":"R","limitApp":"crawler,bot,bot","strategy":1},{"id":3,"resource":"R","limitApp":"bot,,crawler","strategy":1}]"#,
    );
    assert_eq!(fg.authority_rules().len(), 3);
    assert!(!passes(&fg, "R", "crawler") && !passes(&fg, "R", "bot") && passes(&fg, "R", "appA"));
    let block = fg.entry("R").origin("bot").enter().unwrap_err();
    assert_eq!(
        block.rule_as::<AuthorityRule>().and_then(|r| r.id),
        Some(1),
        "the first is the one in force"
    );
    let white =
        r#"[{"resource":"R","limitApp":"bot","strategy":1},{"resource":"R","limitApp":"bot"}]"#;
    assert!(
        fg.load_rules_json(RuleType::Authority, white).is_err(),
        "the same origins, the other strategy: a conflict"
    );
    // The same rule twice is one rule; a regex rule with the same text is another resource.
    load(
        &fg,
        r#"[{"resource":"R","limitApp":"bot","strategy":1},{"resource":"R","limitApp":"bot","strategy":1},{"resource":"R","limitApp":"appA","regex":true}]"#,
    );
    assert!(!passes(&fg, "R", "bot"));
    assert!(
        !passes(&fg, "R", "appB"),
        "the regex white list applies too"
    );
    assert!(passes(&fg, "R", "appA"));
}

#[test]
fn regex_rules_match_whole_names() {
    // Sentinel's AuthorityPartialIntegrationTest.testRegex.
    let (_clock, fg) = engine();
    load(
        &fg,
        r#"[{"resource":".*","limitApp":"appA","strategy":1,"regex":true}]"#,
    );
    for resource in ["testRegex_1", "testRegex_2"] {
        assert!(!passes(&fg, resource, "appA"));
        assert!(passes(&fg, resource, "appB"));
    }
    load(
        &fg,
        r#"[{"resource":"GET:/api/.*","limitApp":"web","regex":true},{"resource":"GET:/api/admin","limitApp":"web,ops","strategy":1}]"#,
    );
    assert!(passes(&fg, "GET:/api/orders", "web"));
    assert!(!passes(&fg, "GET:/api/orders", "batch"));
    assert!(
        passes(&fg, "POST:GET:/api/orders", "batch"),
        "the expression must match the whole name"
    );
    assert!(
        !passes(&fg, "GET:/api/admin", "web"),
        "both the exact and the regex rule apply"
    );
    assert!(!passes(&fg, "GET:/api/admin", "ops"));
}

#[test]
fn typed_rules_reloads_and_json_round_trip() {
    let (clock, fg) = engine();
    fg.load_authority_rules([
        AuthorityRule::white("R", "appA,appB").id(3),
        AuthorityRule::black("S", "appC"),
    ])
    .unwrap();
    assert!(passes(&fg, "R", "appB"));
    assert!(!passes(&fg, "S", "appC"));
    let json = fg.rules_json(RuleType::Authority);
    assert_eq!(
        json,
        r#"[{"id":3,"limitApp":"appA,appB","regex":false,"resource":"R","strategy":0},{"limitApp":"appC","regex":false,"resource":"S","strategy":1}]"#
    );
    let fg2 = Floodgate::builder().clock(clock.clone()).build();
    fg2.load_rules_json(RuleType::Authority, &json).unwrap();
    assert_eq!(fg2.authority_rules(), fg.authority_rules());
    // An empty list lifts every restriction.
    fg.load_rules_json(RuleType::Authority, "[]").unwrap();
    assert!(passes(&fg, "S", "appC"));
    clock.advance(Duration::from_secs(1));
    assert!(fg.authority_rules().is_empty());
}

#[test]
fn inbound_and_outbound_entries_are_both_checked() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"R","limitApp":"appA"}]"#);
    for entry_type in [EntryType::In, EntryType::Out] {
        assert!(
            fg.entry("R")
                .origin("appB")
                .entry_type(entry_type)
                .enter()
                .is_err()
        );
    }
}

#[test]
fn a_ruled_resource_past_the_cap_is_still_checked() {
    let fg = Floodgate::builder()
        .clock(ManualClock::new(T0))
        .max_resources(1)
        .build();
    assert!(fg.entry("first").enter().is_ok());
    fg.load_authority_rules([AuthorityRule::white("ruled", "appA")])
        .unwrap();
    assert!(fg.entry("ruled").origin("appB").enter().is_err());
    assert!(fg.entry("unruled").origin("appB").enter().is_ok());
}

#[test]
fn the_block_log_names_the_refused_origin() {
    let (clock, fg) = engine();
    load(&fg, r#"[{"id":4,"resource":"R","limitApp":"appA,appB"}]"#);
    for _ in 0..2 {
        let _ = fg.entry("R").origin("appC").enter();
    }
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        fg.block_log(),
        ["2023-11-14 22:13:20|1|R,AuthorityException,appC,appC,4|2,0"]
    );
}

#[test]
fn every_validation_error_names_the_rule_and_field_and_changes_nothing() {
    let (_clock, fg) = engine();
    load(&fg, r#"[{"resource":"kept","limitApp":"appA"}]"#);
    let cases: &[(&str, &str)] = &[
        (
            r#"[{"resource":" ","limitApp":"appA"}]"#,
            "rule 0: `resource` must not be blank",
        ),
        (
            r#"[{"limitApp":"appA"}]"#,
            "rule 0: `resource` must not be blank",
        ),
        (
            r#"[{"resource":"a","limitApp":"appA"},{"resource":"b"}]"#,
            "rule 1: `limitApp` must list the origins (comma-separated), got a blank value",
        ),
        (
            r#"[{"resource":"a","limitApp":"  "}]"#,
            "rule 0: `limitApp` must list the origins (comma-separated), got a blank value",
        ),
        (
            r#"[{"resource":"a","limitApp":"appA","strategy":2}]"#,
            "rule 0: `strategy` must be 0 (white list) or 1 (black list), got 2",
        ),
        (
            r#"[{"resource":"a","limitApp":"appA","strategy":-1}]"#,
            "rule 0: `strategy` must be 0 (white list) or 1 (black list), got -1",
        ),
        (
            r#"[{"resource":"a","limitApp":"appA","strategy":"1"}]"#,
            "rule 0: `strategy` must be a whole number, got a string",
        ),
        (
            r#"[{"resource":"a","limitApp":["appA"]}]"#,
            "rule 0: `limitApp` must be a string, got an array",
        ),
        (
            r#"[{"resource":"(","limitApp":"appA","regex":true}]"#,
            "rule 0: `resource` is not a valid regular expression",
        ),
        (
            r#"[{"resource":"a","limitApp":"appA","regex":"yes"}]"#,
            "rule 0: `regex` must be true or false, got a string",
        ),
        (
            r#"[{"resource":"a","limitApp":"appA","id":"x"}]"#,
            "rule 0: `id` must be a whole number, got a string",
        ),
        (r#"[5]"#, "rule 0: `(rule)` must be a JSON object"),
        (
            r#"{"resource":"a"}"#,
            "rules must be a JSON array of objects",
        ),
        (r#"[{"resource":"a""#, "invalid JSON"),
    ];
    for (json, expected) in cases {
        let err = fg.load_rules_json(RuleType::Authority, json).unwrap_err();
        assert!(
            err.to_string().starts_with(expected),
            "{json}: got `{err}`, expected `{expected}`"
        );
        assert_eq!(
            fg.authority_rules(),
            [AuthorityRule::white("kept", "appA")],
            "{json}: the rules in force stay"
        );
        assert!(!passes(&fg, "kept", "appB"), "{json}: still enforced");
    }
    let err = fg
        .load_authority_rules([AuthorityRule::black("a", "")])
        .unwrap_err();
    assert!(matches!(err, RuleError::Invalid { index: 0, ref field, .. } if field == "limitApp"));
}

/// An entry started in a context with an origin (`ContextBuilder::entry`) hands the origin on to the
/// entries nested under it on its thread: a black-listed caller cannot pass by nesting.
#[test]
fn nested_entries_inherit_the_origin_of_their_context() {
    let fg = Floodgate::builder()
        .clock(ManualClock::new(1_700_000_000_000))
        .build();
    fg.load_authority_rules([AuthorityRule::black("B", "evil")])
        .unwrap();
    let outer = fg.context("c1").origin("evil").entry("A").enter().unwrap();
    assert_eq!(
        fg.entry("B").enter().unwrap_err().kind(),
        floodgate_core::BlockKind::Authority
    );
    assert!(outer.child("B").unwrap().enter().is_err());
    drop(outer);
    assert!(fg.entry("B").enter().is_ok(), "no origin outside");
}

/// A child entry (`Entry::child`) hands its origin on to the entries nested under it on its thread, as
/// a context's entry does: a black-listed caller cannot pass through a child either.
#[test]
fn entries_nested_under_a_child_inherit_its_origin() {
    let fg = Floodgate::builder()
        .clock(ManualClock::new(1_700_000_000_000))
        .build();
    fg.load_authority_rules([AuthorityRule::black("C", "evil")])
        .unwrap();
    let outer = fg.context("c1").origin("evil").entry("A").enter().unwrap();
    let child = outer.child("B").unwrap().enter().unwrap();
    assert_eq!(
        fg.entry("C").enter().unwrap_err().kind(),
        floodgate_core::BlockKind::Authority
    );
    drop(child);
    drop(outer);
    assert!(fg.entry("C").enter().is_ok(), "no origin outside");
}

#[test]
fn conflicts_are_named_beside_parse_errors() {
    let (_clock, fg) = engine();
    let err = fg
        .load_rules_json(
            RuleType::Authority,
            r#"[{"resource":"","limitApp":"a"},
                {"resource":"R","limitApp":"a","strategy":0},
                {"resource":"R","limitApp":"b","strategy":1}]"#,
        )
        .unwrap_err();
    let RuleError::Several(errors) = &err else {
        panic!("{err:?}");
    };
    let indexes: Vec<usize> = errors
        .iter()
        .map(|e| match e {
            RuleError::Invalid { index, .. } => *index,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(indexes, [0, 2], "{err}");
}

#[test]
fn an_invalid_rule_is_not_also_a_conflict_and_both_paths_agree() {
    let (_clock, fg) = engine();
    let json = fg
        .load_rules_json(
            RuleType::Authority,
            r#"[{"resource":"R","limitApp":" "},{"resource":"R","limitApp":"a"}]"#,
        )
        .unwrap_err();
    let api = fg
        .load_authority_rules([
            AuthorityRule::white("R", " "),
            AuthorityRule::white("R", "a"),
        ])
        .unwrap_err();
    assert_eq!(api.to_string(), json.to_string());
    assert!(matches!(api, RuleError::Invalid { index: 0, .. }), "{api}");
}
