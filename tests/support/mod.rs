//! What the end-to-end tests share: a dashboard served on loopback with its own SQLite file, a
//! signed-in HTTP client, and waiting for the dashboard's events instead of sleeping.

#![allow(dead_code, unreachable_pub)]

pub mod java_client;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use floodgate_dashboard::events::Event;
use floodgate_dashboard::{Config, Dashboard};
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinHandle;

/// The first admin's password in these tests.
pub const ADMIN_PASSWORD: &str = "correct horse battery staple";

/// How long a test waits for something the dashboard does within a second or two.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A dashboard serving on a loopback port.
pub struct Running {
    pub dashboard: Dashboard,
    pub addr: SocketAddr,
    stop: oneshot::Sender<()>,
    server: JoinHandle<()>,
}

/// The settings of a test dashboard whose database is `data_dir/floodgate.db`.
pub fn config(data_dir: &Path) -> Config {
    let mut config = Config::for_database(format!(
        "sqlite://{}",
        data_dir.join("floodgate.db").display()
    ));
    config.admin_password = Some(ADMIN_PASSWORD.to_owned());
    config.agent_timeout_ms = 2000;
    config
}

impl Running {
    /// Starts a dashboard with `config` and serves it on `127.0.0.1:0`.
    pub async fn start(config: Config) -> Running {
        let dashboard = Dashboard::start(config).await.expect("dashboard starts");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let router = dashboard.router();
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            axum::serve(
                listener,
                router.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .expect("serve");
        });
        Running {
            dashboard,
            addr,
            stop,
            server,
        }
    }

    /// `http://addr`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Listens to the dashboard's events from now on.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.dashboard.state().events.subscribe()
    }

    /// Stops serving and shuts the dashboard down.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.server.await;
        self.dashboard.shutdown().await;
    }
}

/// Waits for the first event that `pred` accepts.
pub async fn wait_for(
    events: &mut broadcast::Receiver<Event>,
    what: &str,
    mut pred: impl FnMut(&Event) -> bool,
) -> Event {
    let found = tokio::time::timeout(PATIENCE, async {
        loop {
            match events.recv().await {
                Ok(e) if pred(&e) => return e,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => panic!("events closed"),
            }
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// An HTTP answer: status and body (JSON when it parses).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub text: String,
    pub set_cookie: Option<String>,
}

/// A client of the dashboard, signed in or not.
#[derive(Debug, Clone)]
pub struct Client {
    pub base: String,
    pub http: reqwest::Client,
    pub cookie: Option<String>,
    pub csrf: Option<String>,
    pub bearer: Option<String>,
}

impl Client {
    /// A client that has not signed in.
    pub fn anonymous(base: &str) -> Client {
        Client {
            base: base.to_owned(),
            http: reqwest::Client::new(),
            cookie: None,
            csrf: None,
            bearer: None,
        }
    }

    /// Signs in as `user` with `password`; panics when refused.
    pub async fn login(base: &str, user: &str, password: &str) -> Client {
        let mut client = Client::anonymous(base);
        let a = client
            .send(
                reqwest::Method::POST,
                "/auth/login",
                Some(serde_json::json!({"username": user, "password": password})),
            )
            .await;
        assert_eq!(a.status, 200, "sign-in refused: {}", a.text);
        let cookie = a.set_cookie.expect("a session cookie");
        client.cookie = Some(cookie.split(';').next().unwrap_or_default().to_owned());
        client.csrf = a.body["csrfToken"].as_str().map(str::to_owned);
        client
    }

    pub async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Answer {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        if let Some(csrf) = &self.csrf {
            request = request.header("x-csrf-token", csrf);
        }
        if let Some(token) = &self.bearer {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let response = request.send().await.expect("request sent");
        let status = response.status().as_u16();
        let set_cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            body,
            text,
            set_cookie,
        }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.send(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Answer {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn put(&self, path: &str, body: Value) -> Answer {
        self.send(reqwest::Method::PUT, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> Answer {
        self.send(reqwest::Method::DELETE, path, None).await
    }
}

/// A port nothing listens on (bound, then released).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Sends a heartbeat form as Floodgate's agent does (POST, form body) and returns the status.
pub async fn heartbeat(base: &str, form: &[(&str, &str)]) -> u16 {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form {
        s.append_pair(k, v);
    }
    reqwest::Client::new()
        .post(format!("{base}/registry/machine"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(s.finish())
        .send()
        .await
        .expect("heartbeat sent")
        .status()
        .as_u16()
}

/// Waits until `done` holds, checking it again after each event of the dashboard's.
pub async fn wait_until(
    events: &mut broadcast::Receiver<Event>,
    what: &str,
    mut done: impl FnMut() -> bool,
) {
    let found = tokio::time::timeout(PATIENCE, async {
        while !done() {
            match events.recv().await {
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => panic!("events closed"),
            }
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}
