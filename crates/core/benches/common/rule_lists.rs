//! Rule lists of about 1 MiB of Sentinel JSON for each rule type, for the reload benches.

/// The most bytes a list may take.
pub(crate) const LIST_BYTES: usize = 1 << 20;

/// A JSON array of `rule(0)`, `rule(1)`, … with as many rules as fit in [`LIST_BYTES`].
pub(crate) fn list(rule: impl Fn(usize) -> String) -> String {
    let mut json = String::from("[");
    for i in 0.. {
        let next = rule(i);
        if json.len() + next.len() + 2 > LIST_BYTES {
            break;
        }
        if i > 0 {
            json.push(',');
        }
        json.push_str(&next);
    }
    json.push(']');
    json
}

/// How a list differs from the base list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    /// The base list.
    Base,
    /// Every hundredth rule changed (a reload that keeps most rules).
    Changed,
    /// Every rule given an id, from `n` on (a dashboard that numbers its rules afresh).
    Numbered(usize),
}

/// Rule `i` of a list of `kind`, in `variant`. Each rule has its own resource, but in the `_one`
/// kinds, where all are on `R`.
pub(crate) fn rule(kind: &str, i: usize, variant: Variant) -> String {
    let json = rule_fields(kind, i, variant == Variant::Changed);
    match variant {
        Variant::Numbered(from) => format!(r#"{{"id":{},{}"#, from + i, &json[1..]),
        _ => json,
    }
}

fn rule_fields(kind: &str, i: usize, changed: bool) -> String {
    let resource = format!("res-{i}");
    let count = 10 + i % 7 + usize::from(changed && i % 100 == 0) * 1000;
    match kind {
        "flow" => format!(r#"{{"resource":"{resource}","count":{count}}}"#),
        // Distinct rules on one resource differ in their threshold.
        "flow_one" => format!(r#"{{"resource":"R","count":{}}}"#, count + i * 10),
        "degrade" => {
            format!(r#"{{"resource":"{resource}","grade":2,"count":{count},"timeWindow":10}}"#)
        }
        "degrade_one" => format!(
            r#"{{"resource":"R","grade":2,"count":{},"timeWindow":10}}"#,
            count + i * 10
        ),
        "param_flow" => format!(r#"{{"resource":"{resource}","paramIdx":0,"count":{count}}}"#),
        "param_flow_one" => format!(
            r#"{{"resource":"R","paramIdx":0,"count":{}}}"#,
            count + i * 10
        ),
        "authority" => format!(
            r#"{{"resource":"{resource}","limitApp":"app-{},web","strategy":{}}}"#,
            i % 50,
            usize::from(changed && i % 100 == 0)
        ),
        // The same rule again and again: one rule in force, as far as checks go.
        "authority_one" => r#"{"resource":"R","limitApp":"web"}"#.to_owned(),
        "system" => format!(r#"{{"qps":{count}}}"#),
        "flow_origins" => {
            format!(r#"{{"resource":"res-{i}","limitApp":"app-{i}","count":{count}}}"#)
        }
        other => panic!("no rule kind {other}"),
    }
}

/// `"id":n,` for a numbered variant.
fn id_field(variant: Variant) -> String {
    match variant {
        Variant::Numbered(n) => format!(r#""id":{n},"#),
        _ => String::new(),
    }
}

/// One authority rule listing as many origins as fit in [`LIST_BYTES`].
pub(crate) fn one_long_authority_rule(variant: Variant) -> String {
    let mut origins = String::new();
    for i in usize::from(variant == Variant::Changed).. {
        let next = format!("app-{i},");
        if origins.len() + next.len() + 64 > LIST_BYTES {
            break;
        }
        origins.push_str(&next);
    }
    origins.pop();
    format!(
        r#"[{{{}"resource":"R","limitApp":"{origins}"}}]"#,
        id_field(variant)
    )
}

/// One hot-parameter rule with as many exception items as fit in [`LIST_BYTES`].
pub(crate) fn one_param_rule_with_items(variant: Variant) -> String {
    let mut json = format!(
        r#"[{{{}"resource":"R","paramIdx":0,"count":5,"paramFlowItemList":["#,
        id_field(variant)
    );
    for i in usize::from(variant == Variant::Changed).. {
        let next = format!(r#"{{"object":"{i}","count":9,"classType":"int"}},"#);
        if json.len() + next.len() + 8 > LIST_BYTES {
            break;
        }
        json.push_str(&next);
    }
    json.pop();
    json.push_str("]}]");
    json
}
