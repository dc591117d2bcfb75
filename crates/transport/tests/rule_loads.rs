//! A rule load in progress does not hold the agent up: while one is held inside the engine, other
//! commands are answered and heartbeats sent. One test: the hook is the process's global `tracing`
//! subscriber, which holds the thread that reports a load of system rules until the test lets it go.

mod support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::any;
use support::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Whether a load is held, and whether it may go on.
#[derive(Default)]
struct Gate {
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

static GATE: Gate = Gate {
    state: Mutex::new((false, false)),
    changed: Condvar::new(),
};

impl Gate {
    fn wait_until(&self, test: impl Fn(&(bool, bool)) -> bool) -> bool {
        let state = self.state.lock().unwrap();
        let (_state, timeout) = self
            .changed
            .wait_timeout_while(state, Duration::from_secs(30), |s| !test(s))
            .unwrap();
        !timeout.timed_out()
    }

    fn set(&self, f: impl FnOnce(&mut (bool, bool))) {
        f(&mut self.state.lock().unwrap());
        self.changed.notify_all();
    }
}

/// Lets the held load go on when dropped (also when the test fails, so that the agent stops).
struct Release;

impl Drop for Release {
    fn drop(&mut self) {
        GATE.set(|s| s.1 = true);
    }
}

/// Holds the thread that reports `rules loaded` for system rules (the engine's own event, after
/// the load, before the agent answers) until the gate opens.
struct Hook;

#[derive(Default)]
struct Fields(HashMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Subscriber for Hook {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "floodgate::rules"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        if fields.0.get("rule_type").map(String::as_str) == Some("system")
            && fields.0.get("message").map(String::as_str) == Some("rules loaded")
        {
            GATE.set(|s| s.0 = true);
            GATE.wait_until(|s| s.1);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// A dashboard stand-in that counts heartbeats.
async fn dashboard() -> (SocketAddr, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    let app = Router::new().route(
        "/registry/machine",
        any(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async { r#"{"success":true,"code":0,"msg":"success","data":null}"# }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, count)
}

/// The load ran on the agent's one runtime thread: while a big list was parsed, validated and
/// compiled, no other command was answered and no heartbeat sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_and_heartbeats_go_on_while_a_rule_load_is_in_progress() {
    tracing::subscriber::set_global_default(Hook).unwrap();
    let release = Release;
    let (dash, heartbeats) = dashboard().await;
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .dashboard(dash.to_string())
        .heartbeat_interval(Duration::from_millis(50))
        .start()
        .unwrap();
    let addr = agent.local_addr();
    let pushed = tokio::task::spawn_blocking(move || {
        post(
            addr,
            "setRules",
            &[("type", "system"), ("data", r#"[{"qps":5}]"#)],
        )
    });
    assert!(GATE.wait_until(|s| s.0), "the load reached the hook");
    // The load is held in the engine: setRules cannot have answered.
    let version = tokio::task::spawn_blocking(move || get(addr, "version"))
        .await
        .unwrap();
    assert_eq!(
        version,
        (200, "1.8.9".to_owned()),
        "answered during the load"
    );
    let (status, rules) = tokio::task::spawn_blocking(move || get(addr, "getRules?type=flow"))
        .await
        .unwrap();
    assert_eq!((status, rules.as_str()), (200, "[]"));
    let before = heartbeats.load(Ordering::SeqCst);
    let counted = heartbeats.clone();
    let more = tokio::task::spawn_blocking(move || {
        eventually(|| counted.load(Ordering::SeqCst) > before + 1)
    });
    assert!(more.await.unwrap(), "heartbeats went on during the load");
    assert!(!pushed.is_finished(), "the load was still held");
    drop(release);
    assert_eq!(pushed.await.unwrap(), (200, "success".to_owned()));
    assert_eq!(fg.system_rules().len(), 1);
}
