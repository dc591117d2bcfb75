//! What the dashboard's handler tests share: a dashboard on a real SQLite file with a manual clock,
//! a registered machine, and a signed-in client that sends requests through the router (`oneshot`)
//! as a browser's pages would.

#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use floodgate_core::ManualClock;
use floodgate_dashboard::db::{HeartbeatRecord, Machine, Recorded};
use floodgate_dashboard::{Config, Dashboard};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// The time the tests' clocks start at.
pub const NOW: u64 = 1_800_000_000_000;
/// The first admin's password.
pub const PASSWORD: &str = "correct horse battery staple";

/// A dashboard whose database is in `dir`, its clock at [`NOW`], its admin's password [`PASSWORD`].
pub async fn start(dir: &tempfile::TempDir) -> Dashboard {
    start_with(dir, |_| {}).await
}

/// [`start`], with the settings changed by `tweak` first.
pub async fn start_with(dir: &tempfile::TempDir, tweak: impl FnOnce(&mut Config)) -> Dashboard {
    let mut config = Config::for_database(format!(
        "sqlite://{}",
        dir.path().join("floodgate.db").display()
    ));
    config.admin_password = Some(PASSWORD.into());
    tweak(&mut config);
    Dashboard::start_with_clock(config, Arc::new(ManualClock::new(NOW)))
        .await
        .unwrap()
}

/// Registers a machine of `app` at `ip`, port 1 (where nothing answers).
pub async fn machine(d: &Dashboard, app: &str, ip: &str, hostname: &str) -> Machine {
    machine_at(d, app, ip, 1, hostname).await
}

/// Registers a machine of `app` at `ip`:`port` (a heartbeat now).
pub async fn machine_at(d: &Dashboard, app: &str, ip: &str, port: u16, hostname: &str) -> Machine {
    let recorded = d
        .state()
        .db
        .record_heartbeat(
            &HeartbeatRecord {
                app,
                app_type: 0,
                ip,
                port,
                hostname,
                sentinel_version: "1.8.9",
                agent_token: None,
            },
            NOW as i64,
            d.state().config.registry_limits(),
        )
        .await
        .unwrap();
    match recorded {
        Recorded::Machine { machine, .. } => machine,
        other => panic!("not registered: {other:?}"),
    }
}

/// A signed-in browser.
pub struct Browser {
    pub router: Router,
    pub cookie: String,
    pub csrf: String,
}

/// A response: its status, `Location` and body.
pub struct Answer {
    pub status: StatusCode,
    pub location: Option<String>,
    pub body: String,
}

impl Browser {
    /// Signs in as `user` through the JSON sign-in.
    pub async fn login(router: &Router, user: &str, password: &str) -> Browser {
        let request = Request::post("/auth/login")
            .header("content-type", "application/json")
            .body(Body::from(
                json!({"username": user, "password": password}).to_string(),
            ))
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .map(|c| c.split(';').next().unwrap_or_default().to_owned())
            .unwrap();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        Browser {
            router: router.clone(),
            cookie,
            csrf: body["csrfToken"].as_str().unwrap().to_owned(),
        }
    }

    pub async fn send(&self, request: Request<Body>) -> Answer {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let location = response
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        Answer {
            status,
            location,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    pub async fn get(&self, path: &str) -> Answer {
        let request = Request::get(path)
            .header("cookie", &self.cookie)
            .header("accept", "text/html")
            .body(Body::empty())
            .unwrap();
        self.send(request).await
    }

    /// Posts `fields` as a form, with the session's `_csrf` field when `csrf`.
    pub async fn post_form(&self, path: &str, fields: &[(&str, &str)], csrf: bool) -> Answer {
        let mut form = form_urlencoded::Serializer::new(String::new());
        if csrf {
            form.append_pair("_csrf", &self.csrf);
        }
        for (k, v) in fields {
            form.append_pair(k, v);
        }
        let request = Request::post(path)
            .header("cookie", &self.cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(form.finish()))
            .unwrap();
        self.send(request).await
    }

    /// Posts a form as the page would: its fields and the `_csrf` field.
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Answer {
        self.post_form(path, fields, true).await
    }

    /// Creates the viewer `vera` (this session must be an admin's) and signs her in.
    pub async fn new_viewer(&self) -> Browser {
        let (status, answer) = self
            .api(
                "POST",
                "/api/users",
                Some(
                    json!({"username": "vera", "password": "viewer password 1", "role": "viewer"}),
                ),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        Browser::login(&self.router, "vera", "viewer password 1").await
    }

    /// A JSON API call with the session's CSRF header.
    pub async fn api(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("cookie", &self.cookie)
            .header("x-csrf-token", &self.csrf)
            .header("content-type", "application/json")
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
            .unwrap();
        let answer = self.send(request).await;
        (
            answer.status,
            serde_json::from_str(&answer.body).unwrap_or(Value::Null),
        )
    }
}
