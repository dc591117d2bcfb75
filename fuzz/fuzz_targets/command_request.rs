//! A command request, as the agent's command API reads it: the first line is the method and the
//! target, the lines up to a blank one are headers, the rest is the body. It goes through the agent's
//! own router (`Agent::router`), query and form decoding, the browser and token checks and the
//! commands themselves. Never a panic; every answer is one of the statuses the API documents.

#![no_main]

use std::sync::OnceLock;

use axum::body::{Body, to_bytes};
use axum::http::Request;
use floodgate_core::Floodgate;
use floodgate_transport::Agent;
use libfuzzer_sys::fuzz_target;
use tower_service::Service;

/// One agent (on an ephemeral loopback port) and a runtime to drive its router, for the whole run.
fn agent() -> &'static (Agent, tokio::runtime::Runtime) {
    static AGENT: OnceLock<(Agent, tokio::runtime::Runtime)> = OnceLock::new();
    AGENT.get_or_init(|| {
        let agent = Agent::builder(Floodgate::default())
            .port(0)
            .app_name("fuzz")
            .start()
            .expect("an agent on loopback");
        // The commands time bodies out: the runtime needs its timer.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime");
        (agent, runtime)
    })
}

/// The request `data` spells, if it spells one.
fn request(data: &[u8]) -> Option<Request<Body>> {
    let text_end = data
        .windows(2)
        .position(|w| w == b"\n\n")
        .unwrap_or(data.len());
    let (head, body) = data.split_at(text_end);
    let body = body.get(2..).unwrap_or_default();
    let head = std::str::from_utf8(head).ok()?;
    let mut lines = head.split('\n');
    let (method, target) = lines.next()?.split_once(' ')?;
    let mut builder = Request::builder().method(method).uri(target);
    for line in lines {
        let (name, value) = line.split_once(':')?;
        builder = builder.header(name.trim(), value.trim());
    }
    builder.body(Body::from(body.to_vec())).ok()
}

/// The statuses the command API answers with.
const DOCUMENTED: [u16; 10] = [200, 400, 401, 403, 404, 405, 408, 413, 415, 429];

fuzz_target!(|data: &[u8]| {
    let Some(request) = request(data) else {
        return;
    };
    let (agent, runtime) = agent();
    let mut router = agent.router();
    let (status, body) = runtime.block_on(async move {
        let response = router.call(request).await.expect("the router is infallible");
        let status = response.status().as_u16();
        let body = to_bytes(response.into_body(), 64 << 20)
            .await
            .expect("an answer's body");
        (status, body)
    });
    assert!(
        DOCUMENTED.contains(&status),
        "status {status}: {}",
        String::from_utf8_lossy(&body)
    );
});
