//! `Agent::router`: the command API without a socket answers as the port does, token and all, and an
//! address allow-list lets in nobody whose address it does not know.

mod support;

use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode};
use floodgate_transport::Cidr;
use support::*;
use tower_service::Service;

const TOKEN: &str = "router-test-token";

async fn call(router: &mut axum::Router, request: Request<Body>) -> (StatusCode, String) {
    let response = router.call(request).await.unwrap();
    let status = response.status();
    let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

fn get(uri: &str, token: Option<&str>) -> Request<Body> {
    let mut request = Request::get(uri).header("host", "127.0.0.1");
    if let Some(token) = token {
        request = request.header("x-floodgate-token", token);
    }
    request.body(Body::empty()).unwrap()
}

#[tokio::test]
async fn the_router_answers_as_the_port_does_and_wants_the_token() {
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .token(TOKEN)
        .tokenless_from("127.0.0.0/8".parse::<Cidr>().unwrap())
        .start()
        .unwrap();
    let mut router = agent.router();
    // No client address: the allow-list cannot let the request in, so the token is needed.
    let (status, _) = call(&mut router, get("/version", None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = call(&mut router, get("/version", Some(TOKEN))).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "1.8.9"));

    let set = Request::post("/setRules")
        .header("host", "127.0.0.1")
        .header("x-floodgate-token", TOKEN)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(
            "type=flow&data=%5B%7B%22resource%22%3A%22r%22%2C%22count%22%3A3%7D%5D",
        ))
        .unwrap();
    let (status, body) = call(&mut router, set).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "success"));
    assert_eq!(
        fg.flow_rules().len(),
        1,
        "the router changed the agent's engine"
    );
    // What the router loaded, the port reports.
    let over_port = raw(
        agent.local_addr(),
        format!("GET /getRules?type=flow HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Floodgate-Token: {TOKEN}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    let (status, via_router) = call(&mut router, get("/getRules?type=flow", Some(TOKEN))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(over_port, (200, via_router));
}
