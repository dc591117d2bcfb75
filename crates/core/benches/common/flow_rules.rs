//! One never-blocking flow rule on resource `R` per controller, shared by the flow benches.

/// `(name, rules JSON)`, reject first.
pub(crate) const ONE_RULE_EACH: [(&str, &str); 5] = [
    ("reject", r#"[{"resource":"R","count":1e12}]"#),
    (
        "warm_up",
        r#"[{"resource":"R","count":1e12,"controlBehavior":1}]"#,
    ),
    (
        "rate_limiter",
        r#"[{"resource":"R","count":1e12,"controlBehavior":2}]"#,
    ),
    (
        "warm_up_rate_limiter",
        r#"[{"resource":"R","count":1e12,"controlBehavior":3}]"#,
    ),
    ("thread", r#"[{"resource":"R","count":1e12,"grade":0}]"#),
];
