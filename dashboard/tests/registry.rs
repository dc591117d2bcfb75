//! `/registry/machine` through the router (`oneshot`, a real SQLite file per test): a Java client's
//! heartbeat registers and is answered with Sentinel's JSON; an invalid field, a missing or wrong
//! registration token, or an address outside the allow-list is refused and changes nothing.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use floodgate_core::ManualClock;
use floodgate_dashboard::{Config, Dashboard};
use http_body_util::BodyExt;
use tower::ServiceExt;

const NOW: u64 = 1_800_000_000_000;

async fn start(dir: &tempfile::TempDir, tweak: impl FnOnce(&mut Config)) -> Dashboard {
    let mut config = Config::for_database(format!(
        "sqlite://{}",
        dir.path().join("floodgate.db").display()
    ));
    config.admin_password = Some("correct horse battery staple".into());
    tweak(&mut config);
    Dashboard::start_with_clock(config, Arc::new(ManualClock::new(NOW)))
        .await
        .expect("starts")
}

const JAVA_BODY: &str = "app=sentinel-demo-app&hostname=vm&app_type=0&port=28719&v=1.8.9&ip=127.0.0.1&version=1796150308164";

async fn post(d: &Dashboard, body: &str) -> (StatusCode, serde_json::Value) {
    let request = Request::post("/registry/machine")
        .header(
            "content-type",
            "application/x-www-form-urlencoded; charset=UTF-8",
        )
        .header("host", "localhost")
        .body(Body::from(body.to_owned()))
        .unwrap();
    let response = d.router().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn a_java_heartbeat_registers_the_app_and_machine() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir, |_| {}).await;
    let (status, body) = post(&d, JAVA_BODY).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        serde_json::json!({"success": true, "code": 0, "msg": "success", "data": null})
    );
    let db = &d.state().db;
    let app = db.app_by_name("sentinel-demo-app").await.unwrap().unwrap();
    let machines = db.machines_of_app(app.id).await.unwrap();
    assert_eq!(machines.len(), 1);
    assert_eq!(
        (machines[0].ip.as_str(), machines[0].port),
        ("127.0.0.1", 28719)
    );
    assert_eq!(machines[0].sentinel_version, "1.8.9");
    assert_eq!(machines[0].last_heartbeat, NOW as i64);

    // A GET with a query string is a heartbeat too (netty-http's way).
    let request = Request::get(format!("/registry/machine?{JAVA_BODY}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(
        d.router().oneshot(request).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(db.machines_of_app(app.id).await.unwrap().len(), 1);
    d.shutdown().await;
}

#[tokio::test]
async fn an_invalid_heartbeat_names_its_field_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir, |_| {}).await;
    for (body, field) in [
        ("app=a&ip=host%3A8080%23&port=1", "ip"),
        ("app=a&ip=127.0.0.1&port=-1", "port"),
        ("app=a&ip=127.0.0.1&port=99999", "port"),
        ("app=&ip=127.0.0.1&port=80", "app"),
        ("app=a%0Ab&ip=127.0.0.1&port=80", "app"),
    ] {
        let (status, answer) = post(&d, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(answer["success"], false);
        assert!(
            answer["msg"].as_str().unwrap().starts_with(field),
            "{answer}"
        );
    }
    assert!(d.state().db.apps().await.unwrap().is_empty());
    d.shutdown().await;
}

#[tokio::test]
async fn the_token_and_the_allow_list_keep_strangers_out() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir, |c| {
        c.registration_token = Some("registration-s3cret".into());
        c.allow_cidrs = vec!["10.0.0.0/8".parse().unwrap()];
    })
    .await;
    // No token, a wrong one, and the right one from outside the allowed network: all refused.
    for body in [
        "app=a&ip=10.1.2.3&port=8719".to_owned(),
        "app=a&ip=10.1.2.3&port=8719&token=guess".to_owned(),
        "app=a&ip=127.0.0.1&port=8719&token=registration-s3cret".to_owned(),
        "app=a&ip=192.168.1.10&port=8719&token=registration-s3cret".to_owned(),
    ] {
        let (status, answer) = post(&d, &body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(answer["success"], false);
    }
    assert!(
        d.state().db.apps().await.unwrap().is_empty(),
        "nothing registered"
    );
    let (status, _) = post(&d, "app=a&ip=10.1.2.3&port=8719&token=registration-s3cret").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(d.state().db.apps().await.unwrap().len(), 1);

    // A Java client cannot add a form field, but its heartbeat path may carry the token
    // (`-Dcsp.sentinel.heartbeat.api.path=/registry/machine?token=…`).
    let request = Request::post("/registry/machine?token=registration-s3cret")
        .header(
            "content-type",
            "application/x-www-form-urlencoded; charset=UTF-8",
        )
        .header("host", "localhost")
        .body(Body::from(
            "app=java-app&hostname=vm&app_type=0&port=28719&v=1.8.9&ip=10.0.0.9&version=1",
        ))
        .unwrap();
    assert_eq!(
        d.router().oneshot(request).await.unwrap().status(),
        StatusCode::OK
    );
    assert!(
        d.state()
            .db
            .app_by_name("java-app")
            .await
            .unwrap()
            .is_some()
    );
    d.shutdown().await;
}

#[tokio::test]
async fn heartbeats_are_forms() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir, |_| {}).await;
    let request = Request::post("/registry/machine")
        .header("content-type", "application/json")
        .body(Body::from(r#"{"app":"a","ip":"127.0.0.1","port":1}"#))
        .unwrap();
    let response = d.router().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(d.state().db.apps().await.unwrap().is_empty());
    d.shutdown().await;
}

#[tokio::test]
async fn heartbeats_cannot_grow_the_registry_past_its_limits() {
    let dir = tempfile::tempdir().unwrap();
    let d = start(&dir, |c| {
        c.max_apps = 1;
        c.max_machines_per_app = 2;
    })
    .await;
    assert_eq!(
        post(&d, "app=a&ip=127.0.0.1&port=1").await.0,
        StatusCode::OK
    );
    assert_eq!(
        post(&d, "app=a&ip=127.0.0.1&port=2").await.0,
        StatusCode::OK
    );
    let (status, answer) = post(&d, "app=a&ip=127.0.0.1&port=3").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(answer["msg"], "too many machines for this app");
    assert_eq!(
        post(&d, "app=b&ip=127.0.0.1&port=1").await.0,
        StatusCode::FORBIDDEN
    );
    // Known machines keep heartbeating.
    assert_eq!(
        post(&d, "app=a&ip=127.0.0.1&port=2").await.0,
        StatusCode::OK
    );
    let db = &d.state().db;
    let apps = db.apps().await.unwrap();
    assert_eq!(apps.len(), 1);
    assert_eq!(db.machines_of_app(apps[0].id).await.unwrap().len(), 2);
    d.shutdown().await;
}
