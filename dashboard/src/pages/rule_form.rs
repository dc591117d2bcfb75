//! The fields of each rule type as the rule forms show them (Sentinel's JSON names, in plain
//! words), the conversion of a submitted form into a rule's JSON, and a rule in one line of words.

use floodgate_core::RuleType;
use serde_json::{Map, Value};

use crate::error::FieldError;

/// How a field is entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Free text; an empty optional one is left out.
    Text,
    /// A whole number.
    Int,
    /// A number.
    Float,
    /// One of some numbered choices.
    Select(&'static [(&'static str, &'static str)]),
    /// A yes/no.
    Check,
    /// `paramFlowItemList`: one exception a line, `value,type,count`.
    Items,
}

/// One field of a rule form.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spec {
    /// Sentinel's JSON name (`clusterConfig.flowId` for a field of the nested object).
    pub(super) name: &'static str,
    pub(super) label: &'static str,
    pub(super) hint: &'static str,
    pub(super) kind: Kind,
    /// The value a new rule starts with.
    pub(super) default: &'static str,
    /// Whether an empty value is an error rather than "use the engine's default".
    pub(super) required: bool,
}

const fn spec(
    name: &'static str,
    label: &'static str,
    hint: &'static str,
    kind: Kind,
    default: &'static str,
) -> Spec {
    Spec {
        name,
        label,
        hint,
        kind,
        default,
        required: false,
    }
}

const fn required(mut s: Spec) -> Spec {
    s.required = true;
    s
}

const GRADE_QPS_THREADS: &[(&str, &str)] = &[
    ("1", "QPS (requests per second)"),
    ("0", "Concurrent threads"),
];

const RESOURCE: Spec = required(spec(
    "resource",
    "Resource",
    "The resource name, as the app's code names it (e.g. GET:/orders).",
    Kind::Text,
    "",
));
const LIMIT_APP: Spec = spec(
    "limitApp",
    "Caller (origin)",
    "default = every caller; other = callers not named by another rule of this resource; or one caller's name.",
    Kind::Text,
    "default",
);
const REGEX: Spec = spec(
    "regex",
    "Resource is a regular expression",
    "The rule then applies to every resource whose name matches.",
    Kind::Check,
    "",
);
const CLUSTER_MODE: Spec = spec(
    "clusterMode",
    "Cluster mode",
    "Count against one threshold for all the app's machines, through its token server or Redis.",
    Kind::Check,
    "",
);
const CLUSTER_FLOW_ID: Spec = spec(
    "clusterConfig.flowId",
    "Cluster flow id",
    "A number > 0 that names the rule to the token service, unique among all apps' rules. Leave it empty to have the dashboard assign one (the rule's id when free).",
    Kind::Int,
    "",
);
const CLUSTER_THRESHOLD_TYPE: Spec = spec(
    "clusterConfig.thresholdType",
    "Cluster threshold",
    "Whether the threshold is each machine's (the cluster allows it times the machines connected) or the whole cluster's.",
    Kind::Select(&[
        ("0", "Per machine (average local)"),
        ("1", "Whole cluster (global)"),
    ]),
    "0",
);
const CLUSTER_FALLBACK: Spec = spec(
    "clusterConfig.fallbackToLocalWhenFail",
    "Fall back to the local threshold",
    "When the token service cannot be reached, limit on this machine instead of letting calls pass.",
    Kind::Check,
    "true",
);
const CLUSTER_SAMPLE_COUNT: Spec = spec(
    "clusterConfig.sampleCount",
    "Cluster statistic buckets",
    "How many buckets the token service's window is divided into; more than 0.",
    Kind::Int,
    "10",
);
const CLUSTER_WINDOW: Spec = spec(
    "clusterConfig.windowIntervalMs",
    "Cluster statistic window (ms)",
    "The length of the token service's window; more than 0 and a multiple of the buckets.",
    Kind::Int,
    "1000",
);

const FLOW: &[Spec] = &[
    RESOURCE,
    LIMIT_APP,
    spec(
        "grade",
        "Limit on",
        "Count requests per second, or the calls in progress at once.",
        Kind::Select(GRADE_QPS_THREADS),
        "1",
    ),
    required(spec(
        "count",
        "Threshold",
        "The most requests per second (or threads) let through; 0 or more.",
        Kind::Float,
        "10",
    )),
    spec(
        "strategy",
        "Count the traffic of",
        "Direct: this resource. Related: another resource (refResource). Chain: only calls entering through refResource.",
        Kind::Select(&[
            ("0", "This resource (direct)"),
            ("1", "A related resource"),
            ("2", "An entrance (chain)"),
        ]),
        "0",
    ),
    spec(
        "refResource",
        "Related resource or entrance",
        "Required for the related and chain strategies.",
        Kind::Text,
        "",
    ),
    spec(
        "controlBehavior",
        "When over the threshold",
        "Reject at once; warm up slowly from a third of the threshold; or queue requests at a steady rate.",
        Kind::Select(&[
            ("0", "Reject"),
            ("1", "Warm up"),
            ("2", "Queue at a steady rate"),
            ("3", "Warm up, then queue"),
        ]),
        "0",
    ),
    spec(
        "warmUpPeriodSec",
        "Warm-up period (s)",
        "Warm up only: seconds to reach the full threshold; more than 0.",
        Kind::Int,
        "10",
    ),
    spec(
        "maxQueueingTimeMs",
        "Longest wait in the queue (ms)",
        "Queue only: a request that would wait longer is rejected; more than 0.",
        Kind::Int,
        "500",
    ),
    REGEX,
    CLUSTER_MODE,
    CLUSTER_FLOW_ID,
    CLUSTER_THRESHOLD_TYPE,
    CLUSTER_FALLBACK,
    CLUSTER_SAMPLE_COUNT,
    CLUSTER_WINDOW,
];

const DEGRADE: &[Spec] = &[
    RESOURCE,
    spec(
        "grade",
        "Open the breaker on",
        "Too many slow calls, too high a ratio of errors, or too many errors.",
        Kind::Select(&[
            ("0", "Slow-call ratio"),
            ("1", "Error ratio"),
            ("2", "Error count"),
        ]),
        "0",
    ),
    required(spec(
        "count",
        "Threshold",
        "Slow-call ratio: the response time (ms) above which a call is slow. Error ratio: the ratio, 0 to 1. Error count: the number of errors.",
        Kind::Float,
        "500",
    )),
    spec(
        "slowRatioThreshold",
        "Slow-call ratio threshold",
        "Slow-call ratio only: open when this share of calls (0 to 1) is slow.",
        Kind::Float,
        "0.5",
    ),
    required(spec(
        "timeWindow",
        "Open for (s)",
        "Seconds the breaker stays open before it lets a trial call through; more than 0.",
        Kind::Int,
        "10",
    )),
    spec(
        "minRequestAmount",
        "Minimum requests",
        "The breaker judges only a window with at least this many requests; more than 0.",
        Kind::Int,
        "5",
    ),
    spec(
        "statIntervalMs",
        "Statistics window (ms)",
        "The length of the window the ratio or count is measured over; more than 0.",
        Kind::Int,
        "1000",
    ),
    spec(
        "limitApp",
        "Caller (origin)",
        "Kept for Sentinel compatibility; breakers count every caller.",
        Kind::Text,
        "default",
    ),
    REGEX,
];

const SYSTEM: &[Spec] = &[
    spec(
        "highestSystemLoad",
        "Highest system load",
        "The 1-minute load average above which inbound calls are limited (when threads pile up); -1 = off.",
        Kind::Float,
        "-1",
    ),
    spec(
        "highestCpuUsage",
        "Highest CPU usage",
        "A ratio from 0 to 1 (0.8 = 80 %); -1 = off.",
        Kind::Float,
        "-1",
    ),
    spec(
        "qps",
        "Highest inbound QPS",
        "Requests per second entering the app, over all its resources; -1 = off.",
        Kind::Float,
        "1000",
    ),
    spec(
        "avgRt",
        "Highest average response time (ms)",
        "Of inbound calls; -1 = off.",
        Kind::Int,
        "-1",
    ),
    spec(
        "maxThread",
        "Most concurrent inbound calls",
        "Calls in progress at once; -1 = off.",
        Kind::Int,
        "-1",
    ),
];

const AUTHORITY: &[Spec] = &[
    RESOURCE,
    required(spec(
        "limitApp",
        "Callers (origins)",
        "Comma-separated caller names, e.g. app-a,app-b.",
        Kind::Text,
        "",
    )),
    spec(
        "strategy",
        "List type",
        "White list: only these callers pass. Black list: these callers are refused.",
        Kind::Select(&[
            ("0", "White list (allow only these)"),
            ("1", "Black list (refuse these)"),
        ]),
        "0",
    ),
    REGEX,
];

const PARAM_FLOW: &[Spec] = &[
    RESOURCE,
    required(spec(
        "paramIdx",
        "Parameter index",
        "Which argument of the call is limited: 0 = the first; -1 = the last.",
        Kind::Int,
        "0",
    )),
    spec(
        "grade",
        "Limit on",
        "Requests per second for each value, or calls in progress at once for each value.",
        Kind::Select(GRADE_QPS_THREADS),
        "1",
    ),
    required(spec(
        "count",
        "Threshold per value",
        "The most requests (or threads) for any one value of the parameter; 0 or more.",
        Kind::Float,
        "10",
    )),
    spec(
        "durationInSec",
        "Per (s)",
        "The window the threshold counts over, in seconds; more than 0.",
        Kind::Int,
        "1",
    ),
    spec(
        "controlBehavior",
        "When over the threshold",
        "Reject at once, or queue requests at a steady rate.",
        Kind::Select(&[("0", "Reject"), ("2", "Queue at a steady rate")]),
        "0",
    ),
    spec(
        "maxQueueingTimeMs",
        "Longest wait in the queue (ms)",
        "Queue only: a request that would wait longer is rejected.",
        Kind::Int,
        "0",
    ),
    spec(
        "burstCount",
        "Burst",
        "Extra requests allowed in a burst above the threshold.",
        Kind::Int,
        "0",
    ),
    spec(
        "paramFlowItemList",
        "Exceptions",
        "One value a line with its own threshold: value,type,count — type is int, long, double, boolean or String — e.g. 42,int,100 or vip,String,500.",
        Kind::Items,
        "",
    ),
    spec(
        "limitApp",
        "Caller (origin)",
        "default = every caller, or one caller's name.",
        Kind::Text,
        "default",
    ),
    REGEX,
    CLUSTER_MODE,
    CLUSTER_FLOW_ID,
    CLUSTER_THRESHOLD_TYPE,
    CLUSTER_FALLBACK,
    CLUSTER_SAMPLE_COUNT,
    CLUSTER_WINDOW,
];

/// The fields of `rule_type`'s form.
pub(super) fn specs(rule_type: RuleType) -> &'static [Spec] {
    match rule_type {
        RuleType::Flow => FLOW,
        RuleType::Degrade => DEGRADE,
        RuleType::System => SYSTEM,
        RuleType::Authority => AUTHORITY,
        RuleType::ParamFlow => PARAM_FLOW,
    }
}

/// The type's name in words.
pub(super) fn title(rule_type: RuleType) -> &'static str {
    match rule_type {
        RuleType::Flow => "Flow",
        RuleType::Degrade => "Circuit breaking",
        RuleType::System => "System",
        RuleType::Authority => "Authority",
        RuleType::ParamFlow => "Hot parameters",
    }
}

/// A form's submitted values, by field name (the last of a repeated name wins).
#[derive(Debug, Clone, Default)]
pub(super) struct Values(Vec<(String, String)>);

impl Values {
    pub(super) fn parse(body: &[u8]) -> Values {
        Values(
            form_urlencoded::parse(body)
                .filter(|(k, _)| k != "_csrf")
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The values of a new rule: every default, and `prefill`'s over them.
    pub(super) fn defaults(rule_type: RuleType, prefill: &[(&str, &str)]) -> Values {
        let mut values: Vec<(String, String)> = specs(rule_type)
            .iter()
            .map(|s| (s.name.to_owned(), s.default.to_owned()))
            .collect();
        for (k, v) in prefill {
            values.push(((*k).to_owned(), (*v).to_owned()));
        }
        Values(values)
    }

    /// The values showing a stored rule.
    pub(super) fn of_rule(rule_type: RuleType, rule: &Value) -> Values {
        let mut values = Vec::new();
        let has_cluster_config = rule.get("clusterConfig").is_some_and(Value::is_object);
        for s in specs(rule_type) {
            let v = lookup(rule, s.name);
            // A rule without a cluster config shows the defaults a switch to cluster mode starts from.
            if is_cluster_field(s.name) && !has_cluster_config {
                values.push((s.name.to_owned(), s.default.to_owned()));
                continue;
            }
            let text = match (s.kind, v) {
                (_, None | Some(Value::Null)) => String::new(),
                (Kind::Check, Some(v)) => {
                    if v.as_bool() == Some(true) {
                        "true".to_owned()
                    } else {
                        String::new()
                    }
                }
                (Kind::Items, Some(Value::Array(items))) => items
                    .iter()
                    .map(|i| {
                        format!(
                            "{},{},{}",
                            text_of(&i["object"]),
                            text_of(&i["classType"]),
                            text_of(&i["count"])
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
                (_, Some(v)) => text_of(v),
            };
            values.push((s.name.to_owned(), text));
        }
        Values(values)
    }
}

/// Whether the field `name` is one of the cluster config's (shown and read in cluster mode only).
pub(super) fn is_cluster_field(name: &str) -> bool {
    name.starts_with("clusterConfig.")
}

fn lookup<'a>(rule: &'a Value, name: &str) -> Option<&'a Value> {
    name.split('.').try_fold(rule, |v, key| v.get(key))
}

/// A JSON scalar as a form shows it (`10.0` as `10`).
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => format!("{f:.0}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn error(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        index: None,
        field: field.to_owned(),
        message: message.into(),
    }
}

fn number(s: &Spec, text: &str, int: bool) -> Result<Value, FieldError> {
    if int {
        text.parse::<i64>()
            .map(Value::from)
            .map_err(|_| error(s.name, format!("must be a whole number, got “{text}”")))
    } else {
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Value::from(f)),
            _ => Err(error(s.name, format!("must be a number, got “{text}”"))),
        }
    }
}

fn items(s: &Spec, text: &str) -> Result<Value, FieldError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let parts: Vec<&str> = line.rsplitn(3, ',').collect();
        let [count, class_type, object] = parts[..] else {
            return Err(error(
                s.name,
                format!("line {}: must be value,type,count", n + 1),
            ));
        };
        let count: i64 = count.trim().parse().map_err(|_| {
            error(
                s.name,
                format!("line {}: the count must be a whole number", n + 1),
            )
        })?;
        let mut item = Map::new();
        item.insert("object".into(), Value::from(object.trim()));
        // "String" (the short name users write) is Java's java.lang.String; blank is a string too.
        match class_type.trim() {
            "" => {}
            "String" | "string" => {
                item.insert("classType".into(), Value::from("java.lang.String"));
            }
            other => {
                item.insert("classType".into(), Value::from(other));
            }
        }
        item.insert("count".into(), Value::from(count));
        out.push(Value::Object(item));
    }
    Ok(Value::Array(out))
}

/// The rule a form describes, laid over `base` (the stored rule when editing, so that fields the
/// form does not show are kept). A field left empty goes back to the engine's default; a
/// non-number in a number field is an error named after the field. The cluster config's fields are
/// read in cluster mode only; out of it, the stored rule's cluster config (if any) is kept as it
/// was, and in it the fields the form does not show (`strategy`, `resourceTimeout`, …) are.
pub(super) fn to_rule(
    rule_type: RuleType,
    values: &Values,
    base: Option<&Value>,
) -> Result<Value, Vec<FieldError>> {
    let cluster_mode = values
        .get("clusterMode")
        .is_some_and(|v| !v.trim().is_empty());
    let mut rule = base.and_then(Value::as_object).cloned().unwrap_or_default();
    rule.remove("id");
    let mut cluster = rule
        .remove("clusterConfig")
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    let mut errors = Vec::new();
    for s in specs(rule_type) {
        if is_cluster_field(s.name) && !cluster_mode {
            continue;
        }
        let (target, key) = match s.name.strip_prefix("clusterConfig.") {
            Some(key) => (&mut cluster, key),
            None => (&mut rule, s.name),
        };
        target.remove(key);
        // Names are kept as written (an agent's resource may have spaces at its ends); other
        // fields are read without surrounding spaces.
        let raw = values.get(s.name).unwrap_or("");
        let text = if matches!(s.name, "resource" | "refResource" | "limitApp") {
            raw
        } else {
            raw.trim()
        };
        let value = match s.kind {
            Kind::Check => Ok(Some(Value::Bool(!text.is_empty()))),
            _ if text.is_empty() => {
                if s.required {
                    Err(error(s.name, "is required"))
                } else {
                    Ok(None)
                }
            }
            Kind::Text => Ok(Some(Value::from(text))),
            Kind::Int | Kind::Select(_) => number(s, text, true).map(Some),
            Kind::Float => number(s, text, false).map(Some),
            Kind::Items => items(s, text).map(Some),
        };
        match value {
            Ok(Some(v)) => {
                target.insert(key.to_owned(), v);
            }
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if cluster_mode || !cluster.is_empty() {
        rule.insert("clusterConfig".into(), Value::Object(cluster));
    }
    Ok(Value::Object(rule))
}

fn num(rule: &Value, key: &str) -> f64 {
    rule[key].as_f64().unwrap_or(-1.0)
}

fn n(v: f64) -> String {
    text_of(&Value::from(v))
}

/// A rule in plain words: "QPS ≤ 20, warm up 10 s".
pub(super) fn summary(rule_type: RuleType, rule: &Value) -> String {
    let int = |key: &str| rule[key].as_i64().unwrap_or(0);
    match rule_type {
        RuleType::Flow => {
            let unit = if int("grade") == 0 { "threads" } else { "QPS" };
            let mut s = format!("{unit} ≤ {}", n(num(rule, "count")));
            let warm = format!("warm up {} s", int("warmUpPeriodSec"));
            let queue = format!("queue ≤ {} ms", int("maxQueueingTimeMs"));
            s.push_str(", ");
            s.push_str(&match int("controlBehavior") {
                1 => warm,
                2 => queue,
                3 => format!("{warm}, {queue}"),
                _ => "reject".to_owned(),
            });
            let reference = rule["refResource"].as_str().unwrap_or("");
            match int("strategy") {
                1 => s.push_str(&format!(", counting {reference}")),
                2 => s.push_str(&format!(", entered through {reference}")),
                _ => {}
            }
            s
        }
        RuleType::Degrade => {
            let trip = match int("grade") {
                0 => format!(
                    "open when ≥ {} % of calls take > {} ms",
                    n(num(rule, "slowRatioThreshold") * 100.0),
                    n(num(rule, "count"))
                ),
                1 => format!(
                    "open when ≥ {} % of calls fail",
                    n(num(rule, "count") * 100.0)
                ),
                _ => format!("open when ≥ {} calls fail", n(num(rule, "count"))),
            };
            format!(
                "{trip} (per {} ms, at least {} requests), for {} s",
                int("statIntervalMs"),
                int("minRequestAmount"),
                int("timeWindow")
            )
        }
        RuleType::System => {
            let mut parts = Vec::new();
            for (key, words, scale, unit) in [
                ("highestSystemLoad", "load", 1.0, ""),
                ("highestCpuUsage", "CPU", 100.0, " %"),
                ("qps", "QPS", 1.0, ""),
                ("avgRt", "average RT", 1.0, " ms"),
                ("maxThread", "threads", 1.0, ""),
            ] {
                let v = num(rule, key);
                if v >= 0.0 {
                    parts.push(format!("{words} ≤ {}{unit}", n(v * scale)));
                }
            }
            if parts.is_empty() {
                "no limit (every field off)".to_owned()
            } else {
                format!("inbound {}", parts.join(", "))
            }
        }
        RuleType::Authority => {
            let callers = rule["limitApp"].as_str().unwrap_or("").replace(',', ", ");
            if int("strategy") == 1 {
                format!("refuse callers {callers}")
            } else {
                format!("allow only callers {callers}")
            }
        }
        RuleType::ParamFlow => {
            let unit = if int("grade") == 0 {
                "threads"
            } else {
                "requests"
            };
            let mut s = format!(
                "argument {}: ≤ {} {unit} per value per {} s",
                int("paramIdx"),
                n(num(rule, "count")),
                int("durationInSec")
            );
            if int("burstCount") > 0 {
                s.push_str(&format!(", burst {}", int("burstCount")));
            }
            if int("controlBehavior") == 2 {
                s.push_str(&format!(", queue ≤ {} ms", int("maxQueueingTimeMs")));
            }
            let exceptions = rule["paramFlowItemList"].as_array().map_or(0, Vec::len);
            match exceptions {
                0 => {}
                1 => s.push_str(", 1 exception"),
                k => s.push_str(&format!(", {k} exceptions")),
            }
            s
        }
    }
}

/// A cluster rule's marker in the lists: "cluster · GLOBAL · flowId 7" (`None` out of cluster mode).
pub(super) fn cluster_marker(rule: &Value) -> Option<String> {
    if rule["clusterMode"].as_bool() != Some(true) {
        return None;
    }
    let config = &rule["clusterConfig"];
    let threshold = threshold_type_name(config["thresholdType"].as_i64().unwrap_or(0));
    Some(match config["flowId"].as_i64() {
        Some(id) => format!("cluster · {threshold} · flowId {id}"),
        None => format!("cluster · {threshold}"),
    })
}

/// Sentinel's name of a cluster threshold type.
pub(super) fn threshold_type_name(threshold_type: i64) -> &'static str {
    match threshold_type {
        1 => "GLOBAL",
        0 => "AVG_LOCAL",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_form_becomes_a_rule() {
        let values = Values::parse(
            b"_csrf=x&resource=GET%3A%2Fa&limitApp=default&grade=1&count=20&strategy=0&refResource=\
              &controlBehavior=1&warmUpPeriodSec=10&maxQueueingTimeMs=500&clusterConfig.thresholdType=0",
        );
        let rule = to_rule(RuleType::Flow, &values, None).unwrap();
        assert_eq!(rule["resource"], "GET:/a");
        assert_eq!(rule["count"], 20.0);
        assert_eq!(rule["controlBehavior"], 1);
        assert_eq!(rule["regex"], false);
        assert!(rule.get("refResource").is_none());
        assert!(rule.get("clusterConfig").is_none());
        assert_eq!(summary(RuleType::Flow, &rule), "QPS ≤ 20, warm up 10 s");
    }

    #[test]
    fn cluster_fields_are_read_in_cluster_mode_only() {
        // Out of cluster mode the (hidden) cluster fields are not read, even when nonsense.
        let off =
            Values::parse(b"resource=a&count=5&clusterConfig.flowId=x&clusterConfig.sampleCount=");
        let rule = to_rule(RuleType::Flow, &off, None).unwrap();
        assert_eq!(rule["clusterMode"], false);
        assert!(rule.get("clusterConfig").is_none());
        assert_eq!(cluster_marker(&rule), None);

        let on = Values::parse(
            b"resource=a&count=5&clusterMode=true&clusterConfig.flowId=&clusterConfig.thresholdType=1\
              &clusterConfig.fallbackToLocalWhenFail=true&clusterConfig.sampleCount=5\
              &clusterConfig.windowIntervalMs=500",
        );
        let rule = to_rule(RuleType::Flow, &on, None).unwrap();
        assert_eq!(
            rule["clusterConfig"],
            json!({"thresholdType": 1, "fallbackToLocalWhenFail": true, "sampleCount": 5,
                   "windowIntervalMs": 500}),
            "an empty flow id is left for the dashboard to assign"
        );
        let bad =
            Values::parse(b"resource=a&count=5&clusterMode=true&clusterConfig.sampleCount=ten");
        let errors = to_rule(RuleType::ParamFlow, &bad, None).unwrap_err();
        assert!(
            errors
                .iter()
                .any(|e| e.field == "clusterConfig.sampleCount")
        );
    }

    #[test]
    fn a_stored_cluster_config_round_trips_through_the_form() {
        let stored = json!({"resource": "a", "count": 5.0, "clusterMode": true,
            "clusterConfig": {"flowId": 7, "thresholdType": 1, "fallbackToLocalWhenFail": false,
                "sampleCount": 10, "windowIntervalMs": 1000, "strategy": 0, "resourceTimeout": 3000,
                "resourceTimeoutStrategy": 0, "acquireRefuseStrategy": 0, "clientOfflineTime": 2000}});
        let shown = Values::of_rule(RuleType::Flow, &stored);
        assert_eq!(shown.get("clusterConfig.flowId"), Some("7"));
        assert_eq!(shown.get("clusterConfig.fallbackToLocalWhenFail"), Some(""));
        let back = to_rule(RuleType::Flow, &shown, Some(&stored)).unwrap();
        assert_eq!(back["clusterConfig"], stored["clusterConfig"]);
        assert_eq!(
            cluster_marker(&back).as_deref(),
            Some("cluster · GLOBAL · flowId 7")
        );

        // Switched off, the config stays as it was (and is used again when switched back on).
        let mut off = shown.clone();
        off.0.retain(|(k, _)| k != "clusterMode");
        let back = to_rule(RuleType::Flow, &off, Some(&stored)).unwrap();
        assert_eq!(back["clusterMode"], false);
        assert_eq!(back["clusterConfig"], stored["clusterConfig"]);

        // A rule without a cluster config offers the defaults.
        let local = json!({"resource": "a", "count": 5.0, "paramIdx": 0});
        let shown = Values::of_rule(RuleType::ParamFlow, &local);
        assert_eq!(
            shown.get("clusterConfig.fallbackToLocalWhenFail"),
            Some("true")
        );
        assert_eq!(shown.get("clusterConfig.sampleCount"), Some("10"));
        assert_eq!(shown.get("clusterConfig.windowIntervalMs"), Some("1000"));
    }

    #[test]
    fn names_keep_their_spaces() {
        // An agent's resource may have spaces at its ends; a rule for it must name it as it is.
        let values = Values::parse(b"resource=+spaced+&count=+5+");
        let rule = to_rule(RuleType::Flow, &values, None).unwrap();
        assert_eq!(rule["resource"], " spaced ");
        assert_eq!(rule["count"], 5.0);
    }

    #[test]
    fn a_non_number_is_an_error_of_its_field() {
        let values = Values::parse(b"resource=a&count=abc&warmUpPeriodSec=1.5");
        let errors = to_rule(RuleType::Flow, &values, None).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["count", "warmUpPeriodSec"]);
    }

    #[test]
    fn exceptions_are_lines_and_a_stored_rule_shows_again() {
        let values = Values::parse(
            b"resource=a&paramIdx=0&count=10&paramFlowItemList=42%2Cint%2C100%0Avip%2CString%2C5",
        );
        let rule = to_rule(RuleType::ParamFlow, &values, None).unwrap();
        assert_eq!(
            rule["paramFlowItemList"],
            json!([{"object": "42", "classType": "int", "count": 100},
                   {"object": "vip", "classType": "java.lang.String", "count": 5}])
        );
        let shown = Values::of_rule(RuleType::ParamFlow, &rule);
        assert_eq!(
            shown.get("paramFlowItemList"),
            Some("42,int,100\nvip,java.lang.String,5")
        );
        assert_eq!(shown.get("count"), Some("10"));
    }
}
