//! The Prometheus exposition over a real socket: every line checked strictly against the text format
//! 0.0.4, and the numbers against the engine's node statistics.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use floodgate_core::{DegradeRule, EntryType, Floodgate, FlowRule, ManualClock};
use support::*;

/// One sample: metric name and labels (sorted) → value.
type Samples = BTreeMap<(String, Vec<(String, String)>), f64>;

/// `GET /metrics` with extra header lines; returns (status, content type, body).
fn scrape(addr: SocketAddr, headers: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a whole response");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_default();
    assert!(
        !head.to_ascii_lowercase().contains("transfer-encoding"),
        "a plain body"
    );
    (status, content_type, body.to_owned())
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(s: &str) -> bool {
    is_name(s) && !s.contains(':')
}

/// Parses `{a="x",b="y"}` (escapes `\\`, `\"`, `\n`) from the start of `s`; returns the labels and the
/// rest of the line.
fn parse_labels(s: &str) -> (Vec<(String, String)>, &str) {
    let mut labels = Vec::new();
    let mut rest = s.strip_prefix('{').expect("labels open with {");
    loop {
        if let Some(r) = rest.strip_prefix('}') {
            return (labels, r);
        }
        let (name, r) = rest.split_once("=\"").expect("label=\"value\"");
        assert!(is_label_name(name), "label name `{name}`");
        let mut value = String::new();
        let mut chars = r.char_indices();
        let end = loop {
            match chars.next().expect("label value closes") {
                (i, '"') => break i,
                (_, '\\') => match chars.next().expect("escape") {
                    (_, '\\') => value.push('\\'),
                    (_, '"') => value.push('"'),
                    (_, 'n') => value.push('\n'),
                    (_, c) => panic!("invalid escape \\{c}"),
                },
                (_, '\n') => panic!("raw newline in a label value"),
                (_, c) => value.push(c),
            }
        };
        labels.push((name.to_owned(), value));
        rest = &r[end + 1..];
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
            assert!(!rest.starts_with('}'), "no trailing comma");
        }
    }
}

/// Checks every line of the exposition strictly and returns its samples.
fn parse_exposition(text: &str) -> Samples {
    assert!(text.ends_with('\n'), "ends with a newline");
    let mut types: HashMap<String, String> = HashMap::new();
    let mut helps: HashMap<String, String> = HashMap::new();
    let mut samples = Samples::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        assert!(!line.is_empty(), "no blank lines");
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("# HELP name text");
            assert!(is_name(name), "metric name `{name}`");
            assert!(!help.is_empty());
            let mut escaped = help.split('\\').skip(1);
            assert!(
                escaped.all(|s| s.starts_with('\\') || s.starts_with('n') || s.is_empty()),
                "help escapes: {help}"
            );
            assert!(
                helps.insert(name.to_owned(), help.to_owned()).is_none(),
                "one HELP per metric: {name}"
            );
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name type");
            assert!(is_name(name));
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "type `{kind}`"
            );
            assert!(helps.contains_key(name), "HELP before TYPE: {name}");
            assert!(
                types.insert(name.to_owned(), kind.to_owned()).is_none(),
                "one TYPE per metric: {name}"
            );
            current = Some(name.to_owned());
        } else {
            assert!(!line.starts_with('#'), "unexpected comment: {line}");
            let name_end = line.find(['{', ' ']).expect("a sample");
            let name = &line[..name_end];
            assert!(is_name(name), "sample name `{name}`");
            assert_eq!(
                current.as_deref(),
                Some(name),
                "a sample follows its own TYPE"
            );
            let (mut labels, rest) = if line[name_end..].starts_with('{') {
                parse_labels(&line[name_end..])
            } else {
                (Vec::new(), &line[name_end..])
            };
            let value = rest.strip_prefix(' ').expect("one space before the value");
            assert!(!value.contains(' '), "no timestamp: {line}");
            let value: f64 = value.parse().expect("a number");
            if types[name] == "counter" {
                assert!(value >= 0.0, "{line}");
                // Counts are whole; sums of seconds need not be.
                assert!(
                    value.fract() == 0.0 || name.ends_with("_seconds_total"),
                    "{line}"
                );
            }
            labels.sort();
            let names: Vec<&String> = labels.iter().map(|(k, _)| k).collect();
            let mut unique = names.clone();
            unique.dedup();
            assert_eq!(names, unique, "no repeated label: {line}");
            assert!(
                samples.insert((name.to_owned(), labels), value).is_none(),
                "no duplicate series: {line}"
            );
        }
    }
    samples
}

fn value(samples: &Samples, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut labels: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    labels.sort();
    samples.get(&(name.to_owned(), labels)).copied()
}

fn resources(samples: &Samples, name: &str) -> Vec<String> {
    let mut names: Vec<String> = samples
        .keys()
        .filter(|(n, _)| n == name)
        .filter_map(|(_, labels)| {
            labels
                .iter()
                .find(|(k, _)| k == "resource")
                .map(|(_, v)| v.clone())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

const WEIRD: &str = "we\"ird\\name\nline two";

/// Known traffic in the second T0: passes, flow blocks, a traced error that opens a breaker, a degrade
/// block and a resource name that needs escaping.
fn traffic(clock: &ManualClock, fg: &Floodgate) {
    fg.load_flow_rules([FlowRule::new("GET:/orders", 5.0)])
        .unwrap();
    fg.load_degrade_rules([DegradeRule::error_count("pay", 0.0)
        .time_window(10)
        .min_request_amount(1)])
        .unwrap();
    clock.set(T0 + 100);
    let held: Vec<_> = (0..5)
        .map(|_| {
            fg.entry("GET:/orders")
                .entry_type(EntryType::In)
                .enter()
                .unwrap()
        })
        .collect();
    clock.advance(Duration::from_millis(12));
    drop(held);
    for _ in 0..3 {
        assert!(
            fg.entry("GET:/orders")
                .entry_type(EntryType::In)
                .enter()
                .is_err()
        );
    }
    let paid = fg.entry("pay").enter().unwrap();
    clock.advance(Duration::from_millis(30));
    paid.trace(&std::fmt::Error);
    drop(paid);
    assert!(fg.entry("pay").enter().is_err(), "the breaker opened");
    drop(fg.entry(WEIRD).enter().unwrap());
}

#[test]
fn the_exposition_parses_and_matches_the_node_statistics() {
    let (clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    traffic(&clock, &fg);
    let in_flight = fg.entry("slow").enter().unwrap(); // a call in flight
    // The node figures of the second, read before it ends.
    clock.set(T0 + 900);
    let orders = fg.cluster_node("GET:/orders").unwrap();
    let orders_rt_sum = orders.avg_rt() * orders.success_qps();
    assert_eq!(orders_rt_sum, 60.0, "5 completions of 12 ms");
    let pay_rt_sum = fg.cluster_node("pay").unwrap().avg_rt();
    clock.set(T0 + 1500);
    agent.collect_metrics();

    let (status, content_type, body) = scrape(agent.local_addr(), "");
    assert_eq!(status, 200);
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    let samples = parse_exposition(&body);

    let requests = "floodgate_requests_total";
    for name in [
        "GET:/orders",
        "pay",
        WEIRD,
        "slow",
        "__total_inbound_traffic__",
    ] {
        let node = if name == "__total_inbound_traffic__" {
            fg.inbound_node()
        } else {
            fg.cluster_node(name).unwrap()
        };
        for (outcome, expected) in [
            ("pass", node.total_pass()),
            ("block", node.block_request()),
            ("success", node.total_success()),
            ("exception", node.total_exception()),
        ] {
            assert_eq!(
                value(
                    &samples,
                    requests,
                    &[("resource", name), ("outcome", outcome)]
                ),
                Some(expected as f64),
                "{name} {outcome}\n{body}"
            );
        }
    }
    // The numbers themselves (the node statistics above are these).
    let orders = |outcome| {
        value(
            &samples,
            requests,
            &[("resource", "GET:/orders"), ("outcome", outcome)],
        )
    };
    assert_eq!(
        [
            orders("pass"),
            orders("block"),
            orders("success"),
            orders("exception")
        ],
        [Some(5.0), Some(3.0), Some(5.0), Some(0.0)]
    );
    let rt = "floodgate_response_time_seconds_total";
    assert_eq!(
        value(&samples, rt, &[("resource", "GET:/orders")]),
        Some(orders_rt_sum / 1000.0)
    );
    assert_eq!(
        value(&samples, rt, &[("resource", "pay")]),
        Some(pay_rt_sum / 1000.0)
    );
    assert_eq!(pay_rt_sum, 30.0);
    let blocks = "floodgate_blocks_total";
    assert_eq!(
        value(
            &samples,
            blocks,
            &[("resource", "GET:/orders"), ("kind", "flow")]
        ),
        Some(3.0)
    );
    assert_eq!(
        value(
            &samples,
            blocks,
            &[("resource", "pay"), ("kind", "degrade")]
        ),
        Some(1.0)
    );
    assert_eq!(
        samples.keys().filter(|(n, _)| n == blocks).count(),
        2,
        "blocks only where they happened"
    );
    assert_eq!(
        value(&samples, "floodgate_concurrency", &[("resource", "slow")]),
        Some(1.0)
    );
    assert_eq!(
        value(&samples, "floodgate_concurrency", &[("resource", "pay")]),
        Some(0.0)
    );
    assert_eq!(
        value(
            &samples,
            "floodgate_circuit_breaker_state",
            &[("resource", "pay"), ("grade", "error_count")]
        ),
        Some(1.0),
        "open"
    );
    for (rule_type, count) in [
        ("flow", 1.0),
        ("degrade", 1.0),
        ("system", 0.0),
        ("authority", 0.0),
        ("paramFlow", 0.0),
    ] {
        assert_eq!(
            value(&samples, "floodgate_rules", &[("type", rule_type)]),
            Some(count)
        );
    }
    assert_eq!(value(&samples, "floodgate_resources", &[]), Some(4.0));
    assert_eq!(
        value(&samples, "floodgate_resource_cap_hits_total", &[]),
        Some(0.0)
    );
    assert!(
        body.contains(r#"resource="we\"ird\\name\nline two""#),
        "escaped label value"
    );

    // Counters only grow: the next second adds to them, and a second scrape without new seconds is
    // the same.
    clock.set(T0 + 1600);
    drop(fg.entry("GET:/orders").enter().unwrap());
    clock.set(T0 + 2100);
    agent.collect_metrics();
    let later = parse_exposition(&scrape(agent.local_addr(), "").2);
    assert_eq!(
        value(
            &later,
            requests,
            &[("resource", "GET:/orders"), ("outcome", "pass")]
        ),
        Some(6.0)
    );
    agent.collect_metrics();
    assert_eq!(later, parse_exposition(&scrape(agent.local_addr(), "").2));
    drop(in_flight);
}

#[test]
fn labels_stay_within_the_resource_cap() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .max_resources(2)
        .build();
    // "c" has a rule, so it gets statistics past the cap; "d" has none and passes uncounted.
    fg.load_flow_rules([FlowRule::new("c", 100.0)]).unwrap();
    let agent = builder(&fg).start().unwrap();
    clock.set(T0 + 100);
    for name in ["a", "b", "c", "c", "d"] {
        drop(fg.entry(name).enter().unwrap());
    }
    clock.set(T0 + 1100);
    agent.collect_metrics();
    let (status, _, body) = scrape(agent.local_addr(), "");
    assert_eq!(status, 200);
    let samples = parse_exposition(&body);
    assert_eq!(
        resources(&samples, "floodgate_requests_total"),
        ["__other__", "a", "b"]
    );
    assert_eq!(
        value(
            &samples,
            "floodgate_requests_total",
            &[("resource", "__other__"), ("outcome", "pass")]
        ),
        Some(2.0),
        "c's passes, summed under __other__"
    );
    assert_eq!(
        resources(&samples, "floodgate_concurrency"),
        ["__other__", "a", "b"]
    );
    assert_eq!(value(&samples, "floodgate_resources", &[]), Some(3.0));
    assert_eq!(
        value(&samples, "floodgate_resource_cap_hits_total", &[]),
        Some(1.0)
    );
}

/// A resource made past the cap because a rule names it, seen with traffic before resources within the
/// cap, does not take their place: every metric names the same resources.
#[test]
fn a_resource_past_the_cap_seen_first_does_not_push_one_within_it_out() {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .max_resources(2)
        .build();
    let agent = builder(&fg).start().unwrap();
    clock.set(T0 + 100);
    // "a" and "b" are made (within the cap), then "c" past it for its rule.
    for name in ["a", "b"] {
        drop(fg.entry(name).enter().unwrap());
    }
    fg.load_flow_rules([FlowRule::new("c", 100.0)]).unwrap();
    // Before any collection, the seconds of "a" and "b" go out of the engine's minute: the store
    // sees "c" and "a" first, then "b".
    clock.set(T0 + 200_000);
    for name in ["c", "a"] {
        drop(fg.entry(name).enter().unwrap());
    }
    clock.set(T0 + 201_100);
    agent.collect_metrics();
    drop(fg.entry("b").enter().unwrap());
    clock.set(T0 + 202_100);
    agent.collect_metrics();
    let samples = parse_exposition(&scrape(agent.local_addr(), "").2);
    assert_eq!(
        resources(&samples, "floodgate_requests_total"),
        ["__other__", "a", "b"]
    );
    for (resource, passes) in [("a", 1.0), ("b", 1.0), ("__other__", 1.0)] {
        assert_eq!(
            value(
                &samples,
                "floodgate_requests_total",
                &[("resource", resource), ("outcome", "pass")]
            ),
            Some(passes),
            "{resource}"
        );
    }
}

#[test]
fn the_token_applies_and_a_port_of_its_own_serves_only_metrics() {
    let (clock, fg) = engine();
    let agent = builder(&fg)
        .token("s3cret-token")
        .prometheus_port(0)
        .start()
        .unwrap();
    clock.set(T0 + 100);
    drop(fg.entry("R").enter().unwrap());
    clock.set(T0 + 1100);
    agent.collect_metrics();
    let prometheus = agent.prometheus_addr().expect("a Prometheus port");
    assert_ne!(prometheus, agent.local_addr());
    for addr in [agent.local_addr(), prometheus] {
        assert_eq!(scrape(addr, "").0, 401, "the token is required");
        let (status, content_type, body) = scrape(addr, "Authorization: Bearer s3cret-token\r\n");
        assert_eq!(status, 200);
        assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
        let samples = parse_exposition(&body);
        assert_eq!(
            value(
                &samples,
                "floodgate_requests_total",
                &[("resource", "R"), ("outcome", "pass")]
            ),
            Some(1.0)
        );
    }
    let (status, _) = get(prometheus, "version?token=s3cret-token");
    assert_eq!(status, 404, "only /metrics on the Prometheus port");
    let (status, _) = get(agent.local_addr(), "version?token=s3cret-token");
    assert_eq!(status, 200);
}

#[test]
fn the_api_command_lists_metrics() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let (_, api) = get(agent.local_addr(), "api");
    assert!(api.contains("\"/metrics\""), "{api}");
    // An engine without traffic still answers a valid exposition (rule counts, resources).
    let (status, _, body) = scrape(agent.local_addr(), "");
    assert_eq!(status, 200);
    let samples = parse_exposition(&body);
    assert_eq!(value(&samples, "floodgate_resources", &[]), Some(0.0));
    assert_eq!(
        value(&samples, "floodgate_rules", &[("type", "flow")]),
        Some(0.0)
    );
}

/// promtool (Debian's `prometheus` package), or a failure that says what to install.
fn promtool() -> PathBuf {
    if let Some(path) = std::env::var_os("FLOODGATE_PROMTOOL") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "FLOODGATE_PROMTOOL is {}, which is not a file",
            path.display()
        );
        return path;
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("promtool"))
            .find(|p| p.is_file())
    });
    Some(PathBuf::from("/usr/bin/promtool"))
        .filter(|p| p.is_file())
        .or(on_path)
        .unwrap_or_else(|| {
            panic!(
                "this test needs promtool, which was not found: install Debian's package \
                 `prometheus` (`apt-get install -y prometheus`), or point FLOODGATE_PROMTOOL at it"
            )
        })
}

/// `promtool check metrics` on `exposition`: its exit status and everything it printed.
fn promtool_check(promtool: &Path, exposition: &str) -> (bool, String) {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} does not run: {e}", promtool.display()));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), printed)
}

/// `promtool check metrics` found `floodgate_response_time_milliseconds_total` (a base unit must
/// be seconds): the whole exposition, with traffic of every kind, passes it with nothing to say.
#[test]
fn promtool_finds_nothing_to_report_in_the_exposition() {
    let promtool = promtool();
    let (clock, fg) = engine();
    let agent = builder(&fg)
        .token("s3cret-token")
        .prometheus_port(0)
        .start()
        .unwrap();
    traffic(&clock, &fg);
    let in_flight = fg.entry("slow").enter().unwrap();
    clock.set(T0 + 1500);
    agent.collect_metrics();
    for addr in [agent.local_addr(), agent.prometheus_addr().unwrap()] {
        let (status, _, body) = scrape(addr, "Authorization: Bearer s3cret-token\r\n");
        assert_eq!(status, 200);
        assert!(body.contains("floodgate_circuit_breaker_state"), "{body}");
        let (passed, printed) = promtool_check(&promtool, &body);
        assert!(passed && printed.is_empty(), "promtool: {printed}\n{body}");
    }
    // An engine without traffic too.
    let (_clock, idle) = engine();
    let agent = builder(&idle).start().unwrap();
    let (_, _, body) = scrape(agent.local_addr(), "");
    let (passed, printed) = promtool_check(&promtool, &body);
    assert!(passed && printed.is_empty(), "promtool: {printed}\n{body}");
    drop(in_flight);
}
