//! Heartbeats: every interval, a POST form to the dashboard's `/registry/machine` with `app`, `app_type`,
//! `v`, `version` (the time in ms), `hostname`, `ip` and `port` (plus `token` when one is configured).
//!
//! Dashboards are tried in order starting from the last one that answered; the first 200 wins. While every
//! dashboard fails, the delay doubles up to eight intervals, then returns to the interval on success. The
//! app keeps serving and keeps its rules whatever the dashboard does.

use std::net::IpAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::{Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::command::SENTINEL_VERSION;
use crate::host::{HostInfo, ReportedIp};

/// The most of a dashboard's answer read (only its status and a `success` field matter).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// What a heartbeat says.
#[derive(Debug, Clone)]
pub(crate) struct Heartbeat {
    pub(crate) app: String,
    pub(crate) app_type: u8,
    pub(crate) host: HostInfo,
    /// `host`'s IP, shared with the command handlers.
    pub(crate) reported_ip: ReportedIp,
    /// The address the agent listens on (for detecting `host` again while it is provisional).
    pub(crate) bind: IpAddr,
    pub(crate) port: u16,
    pub(crate) path: String,
    pub(crate) token: Option<String>,
    pub(crate) dashboards: Vec<String>,
    pub(crate) interval: Duration,
}

/// How long the first heartbeat waits for the first lookup of the dashboards' names.
const FIRST_LOOKUP_WAIT: Duration = Duration::from_secs(2);

/// `dashboard` without its `http://` (any case), if it has one.
pub(crate) fn without_scheme(dashboard: &str) -> &str {
    match dashboard.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("http://") => &dashboard[7..],
        _ => dashboard,
    }
}

fn url(dashboard: &str, path: &str) -> String {
    format!(
        "http://{}{path}",
        without_scheme(dashboard).trim_end_matches('/')
    )
}

impl Heartbeat {
    /// The form body of one heartbeat sent at `now_ms`.
    pub(crate) fn form(&self, now_ms: u64) -> String {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("app", &self.app)
            .append_pair("app_type", &self.app_type.to_string())
            .append_pair("v", SENTINEL_VERSION)
            .append_pair("version", &now_ms.to_string())
            .append_pair("hostname", &self.host.hostname)
            .append_pair("ip", &self.host.ip)
            .append_pair("port", &self.port.to_string());
        if let Some(token) = &self.token {
            form.append_pair("token", token);
        }
        form.finish()
    }

    /// Takes the outcome of a detection; warns once it is no longer provisional, if a dashboard
    /// elsewhere could not call a loopback agent back.
    fn detected(&mut self, host: HostInfo) {
        if self.host.provisional && !host.provisional {
            host.warn_if_unreachable(self.bind, &self.dashboards);
        }
        self.reported_ip.set(&host.ip);
        self.host = host;
    }

    /// Sends heartbeats until the task is dropped.
    pub(crate) async fn run(mut self, now_ms: impl Fn() -> u64) {
        if self.dashboards.is_empty() {
            return;
        }
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(TokioExecutor::new()).build_http();
        let mut preferred = 0;
        let mut failures = 0u32;
        // A detection in progress: name lookups block, and the agent's runtime has one thread (its
        // API and timers must not wait for a resolver), so they run on the blocking pool, one at a time.
        let mut detecting: Option<tokio::task::JoinHandle<HostInfo>> = None;
        let mut first = true;
        loop {
            if self.host.provisional
                && detecting
                    .as_ref()
                    .is_none_or(tokio::task::JoinHandle::is_finished)
            {
                // No dashboard resolved yet (named ones are resolved here, not in `start`; or DNS was
                // not ready): try again rather than report loopback for good.
                if let Some(done) = detecting.take() {
                    if let Ok(host) = done.await {
                        self.detected(host);
                    }
                }
                if self.host.provisional {
                    let (bind, dashboards) = (self.bind, self.dashboards.clone());
                    detecting = Some(tokio::task::spawn_blocking(move || {
                        HostInfo::detect(None, bind, &dashboards, true)
                    }));
                }
            }
            // The first heartbeat waits a little for the first lookup, so that a dashboard does not
            // register this machine at a provisional loopback address.
            if std::mem::take(&mut first) {
                if let Some(pending) = detecting.as_mut() {
                    if let Ok(done) = tokio::time::timeout(FIRST_LOOKUP_WAIT, pending).await {
                        detecting = None;
                        if let Ok(host) = done {
                            self.detected(host);
                        }
                    }
                }
            }
            let body = self.form(now_ms());
            let mut sent = false;
            let mut last_error = String::new();
            for i in 0..self.dashboards.len() {
                let index = (preferred + i) % self.dashboards.len();
                let dashboard = &self.dashboards[index];
                match self.send(&client, dashboard, body.clone()).await {
                    Ok(()) => {
                        preferred = index;
                        sent = true;
                        break;
                    }
                    Err(e) => {
                        tracing::debug!(dashboard = %dashboard, error = %e, "heartbeat failed");
                        last_error = e;
                    }
                }
            }
            failures = if sent { 0 } else { failures.saturating_add(1) };
            if failures == 1 {
                tracing::warn!(
                    dashboards = ?self.dashboards,
                    error = %last_error,
                    "no dashboard took the heartbeat; backing off"
                );
            }
            let delay = self
                .interval
                .saturating_mul(2u32.saturating_pow(failures.min(3)));
            tokio::time::sleep(delay).await;
        }
    }

    async fn send(
        &self,
        client: &Client<HttpConnector, Full<Bytes>>,
        dashboard: &str,
        body: String,
    ) -> Result<(), String> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(url(dashboard, &self.path))
            .header(
                "content-type",
                "application/x-www-form-urlencoded; charset=UTF-8",
            );
        if let Some(token) = &self.token {
            request = request.header("x-floodgate-token", token);
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        // One deadline for the answer and its body, and a bounded body: a dashboard that stalls or
        // streams must not stop the heartbeats (nor grow the app's memory).
        let exchange = async {
            let response = client.request(request).await.map_err(|e| e.to_string())?;
            let status = response.status();
            let answer = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map(|body| body.to_bytes())
                .unwrap_or_default();
            Ok::<_, String>((status, answer))
        };
        let (status, answer) = tokio::time::timeout(Duration::from_secs(3), exchange)
            .await
            .map_err(|_| "timed out".to_owned())??;
        if !status.is_success() {
            return Err(format!("status {status}"));
        }
        refusal(&answer).map_or(Ok(()), Err)
    }
}

/// Why the dashboard refused a heartbeat it answered with 200: Sentinel's dashboard answers
/// `{"success":false,"msg":…}` for an invalid address or an app name over 256 characters, and the
/// machine is then never registered.
fn refusal(answer: &[u8]) -> Option<String> {
    let answer: serde_json::Value = serde_json::from_slice(answer).ok()?;
    (answer.get("success") == Some(&serde_json::Value::Bool(false))).then(|| {
        format!(
            "refused: {}",
            answer
                .get("msg")
                .and_then(|m| m.as_str())
                .unwrap_or("no reason given")
        )
    })
}

#[cfg(test)]
#[path = "heartbeat_paused.rs"]
mod paused;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_in_a_200_answer() {
        assert_eq!(
            refusal(br#"{"success":false,"code":-1,"msg":"invalid ip"}"#).as_deref(),
            Some("refused: invalid ip")
        );
        assert_eq!(refusal(br#"{"success":true,"code":0}"#), None);
        assert_eq!(
            refusal(b"ok"),
            None,
            "not Sentinel's answer: the status decides"
        );
    }

    #[test]
    fn urls_and_forms() {
        assert_eq!(
            url("dash:8080", "/registry/machine"),
            "http://dash:8080/registry/machine"
        );
        assert_eq!(
            url("http://dash:8080/", "/registry/machine"),
            "http://dash:8080/registry/machine"
        );
        // The scheme in any case: `HTTP://` is a dashboard too, not one every heartbeat quietly fails.
        assert_eq!(
            url("HTTP://dash:8080", "/registry/machine"),
            "http://dash:8080/registry/machine"
        );
        let hb = Heartbeat {
            app: "orders app".into(),
            app_type: 0,
            host: HostInfo {
                hostname: "h1".into(),
                ip: "10.0.0.1".into(),
                provisional: false,
            },
            reported_ip: ReportedIp::new("10.0.0.1"),
            bind: IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            port: 8719,
            path: "/registry/machine".into(),
            token: None,
            dashboards: vec![],
            interval: Duration::from_secs(10),
        };
        assert_eq!(
            hb.form(1_700_000_000_000),
            "app=orders+app&app_type=0&v=1.8.9&version=1700000000000&hostname=h1&ip=10.0.0.1&port=8719"
        );
    }

    /// An address detected after `start` (a dashboard named by host name) is what `basicInfo` reports
    /// too, not the provisional loopback address.
    #[test]
    fn a_detected_address_is_shared_with_the_commands() {
        let shared = ReportedIp::new("127.0.0.1");
        let mut hb = Heartbeat {
            app: "a".into(),
            app_type: 0,
            host: HostInfo {
                hostname: "h1".into(),
                ip: "127.0.0.1".into(),
                provisional: true,
            },
            reported_ip: shared.clone(),
            bind: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            port: 8719,
            path: "/registry/machine".into(),
            token: None,
            dashboards: vec!["dashboard:8080".into()],
            interval: Duration::from_secs(10),
        };
        hb.detected(HostInfo {
            hostname: "h1".into(),
            ip: "10.0.0.9".into(),
            provisional: false,
        });
        assert_eq!(shared.get(), "10.0.0.9");
        assert!(hb.form(0).contains("ip=10.0.0.9"));
    }
}
