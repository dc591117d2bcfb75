//! The middleware against a real local server: outbound entries, blocks that never reach the network,
//! 5xx and transport errors traced.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use floodgate_core::{BlockError, BlockKind, Floodgate, ManualClock, RuleType};
use floodgate_reqwest::FloodgateMiddleware;
use reqwest_middleware::ClientWithMiddleware;

async fn server(hits: Arc<AtomicU32>) -> SocketAddr {
    let ok_hits = hits.clone();
    let app = Router::new()
        .route(
            "/users/{id}",
            get(move || {
                ok_hits.fetch_add(1, Ordering::SeqCst);
                async { "a user" }
            }),
        )
        .route(
            "/broken",
            get(move || {
                hits.fetch_add(1, Ordering::SeqCst);
                async { (StatusCode::BAD_GATEWAY, "down") }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

fn client(fg: &Floodgate) -> ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(FloodgateMiddleware::new(fg.clone()))
        .build()
}

fn engine() -> Floodgate {
    Floodgate::builder()
        .clock(ManualClock::new(1_700_000_000_000))
        .build()
}

#[tokio::test]
async fn calls_are_outbound_entries_named_by_template() {
    let hits = Arc::new(AtomicU32::new(0));
    let addr = server(hits.clone()).await;
    let fg = engine();
    let client = client(&fg);
    for id in 1..=3 {
        let response = client
            .get(format!("http://{addr}/users/{id}?verbose=1"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let name = format!("GET:127.0.0.1:{}/users/{{id}}", addr.port());
    assert_eq!(fg.resource_names(), [Arc::from(name.as_str())]);
    let node = fg.cluster_node(&name).unwrap();
    assert_eq!(
        (node.pass_qps(), node.success_qps(), node.cur_thread_num()),
        (3.0, 3.0, 0)
    );
    assert_eq!(fg.inbound_node().pass_qps(), 0.0, "outbound, not inbound");
}

#[tokio::test]
async fn a_blocked_call_never_reaches_the_network() {
    let hits = Arc::new(AtomicU32::new(0));
    let addr = server(hits.clone()).await;
    let fg = engine();
    let name = format!("GET:127.0.0.1:{}/users/{{id}}", addr.port());
    fg.load_rules_json(
        RuleType::Flow,
        &format!(r#"[{{"resource":"{name}","count":1}}]"#),
    )
    .unwrap();
    let client = client(&fg);
    assert!(
        client
            .get(format!("http://{addr}/users/1"))
            .send()
            .await
            .is_ok()
    );
    let err = client
        .get(format!("http://{addr}/users/2"))
        .send()
        .await
        .unwrap_err();
    let reqwest_middleware::Error::Middleware(err) = err else {
        panic!("expected a middleware error, got {err}");
    };
    let block = err.downcast_ref::<BlockError>().expect("a BlockError");
    assert_eq!(block.kind(), BlockKind::Flow);
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "the blocked call was not sent"
    );
}

#[tokio::test]
async fn server_and_transport_errors_are_traced() {
    let hits = Arc::new(AtomicU32::new(0));
    let addr = server(hits).await;
    let fg = engine();
    let client = client(&fg);
    let response = client
        .get(format!("http://{addr}/broken"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 502);
    let broken = format!("GET:127.0.0.1:{}/broken", addr.port());
    assert_eq!(fg.cluster_node(&broken).unwrap().exception_qps(), 1.0);

    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    assert!(
        client
            .get(format!("http://{dead}/users/1"))
            .send()
            .await
            .is_err()
    );
    let name = format!("GET:127.0.0.1:{}/users/{{id}}", dead.port());
    let node = fg.cluster_node(&name).unwrap();
    assert_eq!((node.exception_qps(), node.cur_thread_num()), (1.0, 0));
}

#[tokio::test]
async fn errors_are_traced_by_their_own_type_and_inner_blocks_are_not_failures() {
    let hits = Arc::new(AtomicU32::new(0));
    let addr = server(hits.clone()).await;
    // Transport errors are ignored by type: the filter must see the `reqwest::Error`, not the
    // middleware's wrapper.
    let fg = Floodgate::builder()
        .clock(ManualClock::new(1_700_000_000_000))
        .ignore_if(|e| e.is::<reqwest::Error>())
        .build();
    fg.load_rules_json(RuleType::Flow, r#"[{"resource":"inner","count":0}]"#)
        .unwrap();
    let nested = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(FloodgateMiddleware::new(fg.clone()).resource_fn(|_| "outer".into()))
        .with(FloodgateMiddleware::new(fg.clone()).resource_fn(|_| "inner".into()))
        .build();
    let err = nested
        .get(format!("http://{addr}/users/1"))
        .send()
        .await
        .unwrap_err();
    assert!(matches!(err, reqwest_middleware::Error::Middleware(_)));
    assert_eq!(hits.load(Ordering::SeqCst), 0, "blocked by the inner guard");
    let outer = fg.cluster_node("outer").unwrap();
    assert_eq!(
        (
            outer.pass_qps(),
            outer.exception_qps(),
            outer.cur_thread_num()
        ),
        (1.0, 0.0, 0),
        "a block further in is not the outer call failing"
    );

    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    assert!(
        client(&fg)
            .get(format!("http://{dead}/"))
            .send()
            .await
            .is_err()
    );
    let name = format!("GET:127.0.0.1:{}/", dead.port());
    assert_eq!(fg.cluster_node(&name).unwrap().exception_qps(), 0.0);
}
