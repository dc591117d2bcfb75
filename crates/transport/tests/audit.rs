//! Commands that change the agent's state, and failed token checks, are logged with the client's address
//! (target `floodgate::audit`), over a real socket. One test: the recorder is the process's global
//! subscriber (the agent logs from its own threads).

mod support;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Mutex, Once};

use support::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One audit event: its level and fields as text.
#[derive(Debug, Clone)]
struct Seen {
    level: Level,
    fields: BTreeMap<String, String>,
}

impl Seen {
    fn field(&self, name: &str) -> &str {
        self.fields.get(name).map_or("", String::as_str)
    }
}

/// The audit events logged and not yet [`taken`].
static EVENTS: Mutex<Vec<Seen>> = Mutex::new(Vec::new());

/// The process's subscriber: records audit events in [`EVENTS`].
struct Recorder;

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "floodgate::audit"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        EVENTS.lock().unwrap().push(Seen {
            level: *event.metadata().level(),
            fields,
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn record_audit_events() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| tracing::subscriber::set_global_default(Recorder).unwrap());
}

/// The audit events logged since the last call.
fn taken() -> Vec<Seen> {
    std::mem::take(&mut *EVENTS.lock().unwrap())
}

#[test]
fn changes_and_failed_token_checks_are_logged_with_the_client() {
    record_audit_events();
    let (_clock, fg) = engine();
    let agent = builder(&fg).token("s3cret-token").start().unwrap();
    let addr = agent.local_addr();
    let token = ("token", "s3cret-token");
    taken();

    // Reads are not logged.
    assert_eq!(get(addr, "getRules?type=flow&token=s3cret-token").0, 200);
    assert!(taken().is_empty());

    // An accepted rule list, with its client and the answer.
    let data = r#"[{"resource":"R","count":1}]"#;
    let pairs = [("type", "flow"), ("data", data), token];
    assert_eq!(post(addr, "setRules", &pairs).0, 200);
    let events = taken();
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e.level, Level::INFO);
    assert_eq!(e.field("message"), "command applied");
    assert_eq!(e.field("command"), "setRules");
    assert_eq!(e.field("rule_type"), "flow");
    assert_eq!(
        e.field("answer"),
        r#""success""#,
        "quoted: one line whatever it holds"
    );
    assert!(e.field("peer").starts_with("127.0.0.1:"), "{e:?}");

    // A refused one, with the error, at warn.
    let pairs = [("type", "flow"), ("data", r#"[{"count":1}]"#), token];
    assert_eq!(post(addr, "setRules", &pairs).0, 400);
    let events = taken();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].level, Level::WARN);
    assert_eq!(events[0].field("message"), "command refused");
    assert!(events[0].field("error").contains("resource"), "{events:?}");
    assert_eq!(fg.flow_rules().len(), 1, "the refused list changed nothing");

    // The switch.
    assert_eq!(post(addr, "setSwitch", &[("value", "false"), token]).0, 200);
    let events = taken();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].field("command"), "setSwitch");
    assert_eq!(events[0].field("value"), "false");
    assert!(!fg.is_enabled());

    // A refused error quoted: one line, whatever the rule text held.
    let pairs = [
        ("type", "flow"),
        (
            "data",
            "[{\"resource\":\"a\\nb(\",\"regex\":true,\"count\":1}]",
        ),
        token,
    ];
    assert_eq!(post(addr, "setRules", &pairs).0, 400);
    let events = taken();
    let error = events[0].field("error");
    // The regex error itself (it spans several lines), not another rule error.
    assert!(error.contains("regular expression"), "{events:?}");
    assert!(!error.contains('\n'), "{events:?}");

    // A request without a token: logged at debug, not counted.
    assert_eq!(get(addr, "setSwitch?value=true").0, 401);
    let events = taken();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].field("token"), "missing");
    assert_eq!(
        events[0].level,
        Level::DEBUG,
        "not a guess: a flood of them stays out of warn"
    );
    // Wrong tokens: the first of a client's window, and the one that gets it refused, not the ones
    // between (a flood of them does not flood the log).
    for _ in 0..10 {
        assert_eq!(get(addr, "setSwitch?value=true&token=guess").0, 401);
    }
    let events = taken();
    let messages: Vec<&str> = events.iter().map(|e| e.field("message")).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0], "refused a request without a valid token");
    assert_eq!(events[0].field("token"), "wrong");
    assert!(
        messages[1].starts_with("refusing a client for ")
            && messages[1].ends_with(" s after 10 wrong tokens within 60 s"),
        "{messages:?}"
    );
    assert!(events.iter().all(|e| e.level == Level::WARN
        && e.field("command") == "setSwitch"
        && e.field("peer").starts_with("127.0.0.1:")));
    assert!(!fg.is_enabled(), "no refused request changed anything");

    // State changes refused before they ran: a web page's, a body that is not a form. Logged with the
    // status, at most one a second (anyone can cause them); reads refused so are not.
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    taken();
    let started = std::time::Instant::now();
    let page = format!(
        "GET /setSwitch?value=true HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(raw(addr, page.as_bytes()).0, 403);
    let json = format!(
        "POST /setRules HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n[]"
    );
    assert_eq!(raw(addr, json.as_bytes()).0, 415);
    let read = format!(
        "GET /getRules?type=flow HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(raw(addr, read.as_bytes()).0, 403);
    for _ in 0..50 {
        assert_eq!(raw(addr, json.as_bytes()).0, 415);
    }
    let elapsed = started.elapsed();
    let events = taken();
    let seen: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|e| (e.field("message"), e.field("command"), e.field("status")))
        .collect();
    assert_eq!(
        seen[0],
        ("command refused before it ran", "setSwitch", "403")
    );
    assert!(
        seen.len() as u64 <= elapsed.as_secs() + 1,
        "one line a second, the rest held back: {seen:?} in {elapsed:?}"
    );
    assert!(events.iter().all(|e| e.level == Level::WARN));
    // The burst's last ones are not lost: the count goes out within a second or two.
    let mut flushed = Vec::new();
    assert!(eventually(|| {
        flushed.extend(taken());
        flushed
            .iter()
            .any(|e| e.field("message").starts_with("more commands refused"))
    }));
    let held: u64 = flushed
        .iter()
        .chain(&events[1..])
        .map(|e| e.field("held_back").parse::<u64>().unwrap_or(0))
        .sum();
    assert_eq!(held, 51, "every 415 counted once: {flushed:?}");
    assert!(!fg.is_enabled());
}
