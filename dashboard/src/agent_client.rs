//! The client of the agents' command API: Floodgate agents and unmodified Java Sentinel clients alike.
//!
//! One connection per call (Sentinel's clients close after each answer), to the registered IP and port
//! only, under one deadline that covers connecting, sending and reading, with the answer's size capped.
//! Java clients answer `HTTP/1.0` without a `Content-Type`; bodies are read as UTF-8 either way.
//!
//! Rule pushes are `POST` forms (`type`, `data`). Java clients URL-decode `data` a second time after
//! the form decoding, Floodgate agents do not; so every `%` and `+` of the rule JSON is sent as the JSON
//! escape `\u0025` / `\u002b`, which both decodings leave alone and every JSON parser reads back as the
//! character: `a+b %2B c` arrives intact at both.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use floodgate_core::RuleType;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// The largest answer read from an agent (a `jsonTree` of thousands of nodes fits).
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// Where a call goes: a registered machine's address and the token it registered with.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    /// The machine's command API.
    pub addr: SocketAddr,
    /// Sent as `X-Floodgate-Token` when the machine has one.
    pub token: Option<String>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("addr", &self.addr)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Target {
    /// The target at `ip` (an IP literal) and `port`.
    pub fn new(ip: &str, port: i64, token: Option<String>) -> Option<Target> {
        let ip: IpAddr = ip.parse().ok()?;
        let port = u16::try_from(port).ok().filter(|p| *p != 0)?;
        Some(Target {
            addr: SocketAddr::new(ip, port),
            token,
        })
    }
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The machine could not be reached.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The whole call took longer than the deadline.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The connection broke or the answer was not HTTP.
    #[error("bad answer: {0}")]
    Protocol(String),
    /// The answer was larger than [`MAX_ANSWER_BYTES`].
    #[error("answer larger than {MAX_ANSWER_BYTES} bytes")]
    TooLarge,
    /// The agent does not have the command (400 ``Unknown command `x` ``): a Java client without
    /// the module, or an older agent.
    #[error("not supported")]
    NotSupported,
    /// The agent answered with another status than 200.
    #[error("{status}: {body}")]
    Status {
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
}

/// The command-API client.
#[derive(Debug, Clone)]
pub struct AgentClient {
    timeout: Duration,
}

impl AgentClient {
    /// A client whose calls each take at most `timeout`.
    pub fn new(timeout: Duration) -> Self {
        AgentClient { timeout }
    }

    /// `GET /command?params`.
    pub async fn get(
        &self,
        target: &Target,
        command: &str,
        params: &[(&str, &str)],
    ) -> Result<String, CallError> {
        let mut path = format!("/{command}");
        if !params.is_empty() {
            path.push('?');
            path.push_str(&form(params));
        }
        self.call(target, Method::GET, &path, None).await
    }

    /// `POST /command` with `params` as a form body.
    pub async fn post_form(
        &self,
        target: &Target,
        command: &str,
        params: &[(&str, &str)],
    ) -> Result<String, CallError> {
        self.call(
            target,
            Method::POST,
            &format!("/{command}"),
            Some(form(params)),
        )
        .await
    }

    /// The machine's rules of `rule_type`, as the JSON text it answers.
    pub async fn get_rules(
        &self,
        target: &Target,
        rule_type: RuleType,
    ) -> Result<String, CallError> {
        match rule_type {
            RuleType::ParamFlow => self.get(target, "getParamFlowRules", &[]).await,
            other => {
                self.get(target, "getRules", &[("type", other.as_str())])
                    .await
            }
        }
    }

    /// Replaces the machine's rules of `rule_type` with `json` (a JSON array; `[]` clears them).
    /// Succeeds when the machine answers `success` (or Sentinel's `partial success` when only its
    /// data source could not be written), alone or followed by lines of warnings; the answer is
    /// returned whole.
    pub async fn set_rules(
        &self,
        target: &Target,
        rule_type: RuleType,
        json: &str,
    ) -> Result<String, CallError> {
        let data = survive_double_decoding(json);
        let answer = match rule_type {
            RuleType::ParamFlow => {
                self.post_form(target, "setParamFlowRules", &[("data", &data)])
                    .await?
            }
            other => {
                self.post_form(
                    target,
                    "setRules",
                    &[("type", other.as_str()), ("data", &data)],
                )
                .await?
            }
        };
        succeeded(&answer)
    }

    /// `POST /command` with `params` as a form body, for a command that changes the machine's state
    /// and answers `success` (`setClusterMode`, `cluster/client/modifyConfig`, …); any other
    /// answer is an error. A `data` parameter must already survive double decoding
    /// ([`survive_double_decoding`]).
    pub async fn change(
        &self,
        target: &Target,
        command: &str,
        params: &[(&str, &str)],
    ) -> Result<String, CallError> {
        let answer = self.post_form(target, command, params).await?;
        succeeded(&answer)
    }

    /// The metric lines of the seconds in `[start, end]` (ms).
    pub async fn metric(&self, target: &Target, start: i64, end: i64) -> Result<String, CallError> {
        let (start, end) = (start.to_string(), end.to_string());
        self.get(
            target,
            "metric",
            &[
                ("startTime", &start),
                ("endTime", &end),
                ("refetch", "false"),
            ],
        )
        .await
    }

    async fn call(
        &self,
        target: &Target,
        method: Method,
        path: &str,
        form_body: Option<String>,
    ) -> Result<String, CallError> {
        match tokio::time::timeout(self.timeout, exchange(target, method, path, form_body)).await {
            Ok(result) => result,
            Err(_) => Err(CallError::Timeout(self.timeout)),
        }
    }
}

/// `params` as an `application/x-www-form-urlencoded` string.
fn form(params: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        s.append_pair(k, v);
    }
    s.finish()
}

/// `json` with every `%` and `+` written as a JSON escape, so that a second URL-decoding (Java
/// Sentinel's `setRules`) changes nothing. serde_json writes `%` and `+` only inside strings (its
/// numbers have no `+` in the exponent), where an escape means the same character.
pub fn survive_double_decoding(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '%' => out.push_str("\\u0025"),
            '+' => out.push_str("\\u002b"),
            c => out.push(c),
        }
    }
    out
}

/// `answer` when it says `success` (or Sentinel's `partial success`, when only a data source could
/// not be written), alone or followed by lines of warnings (a Floodgate agent adds one `warning: …`
/// line per field it ignored); else an error with its excerpt.
fn succeeded(answer: &str) -> Result<String, CallError> {
    let trimmed = answer.trim();
    let first_line = trimmed.lines().next().unwrap_or("").trim();
    if first_line.eq_ignore_ascii_case("success") || first_line.starts_with("partial success") {
        Ok(trimmed.to_owned())
    } else {
        Err(CallError::Status {
            status: 200,
            body: excerpt(trimmed),
        })
    }
}

fn excerpt(s: &str) -> String {
    const MAX: usize = 300;
    if s.len() <= MAX {
        return s.to_owned();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

async fn exchange(
    target: &Target,
    method: Method,
    path: &str,
    form_body: Option<String>,
) -> Result<String, CallError> {
    let stream = TcpStream::connect(target.addr)
        .await
        .map_err(|e| CallError::Connect(e.to_string()))?;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| CallError::Protocol(e.to_string()))?;
    // The connection is driven beside the request and ends with it (the agents close after one answer).
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, target.addr.to_string())
        .header(hyper::header::CONNECTION, "close");
    if let Some(token) = &target.token {
        request = request.header("x-floodgate-token", token);
    }
    let body = match form_body {
        Some(body) => {
            request = request.header(
                hyper::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded; charset=UTF-8",
            );
            Full::new(Bytes::from(body))
        }
        None => Full::new(Bytes::new()),
    };
    let request = request
        .body(body)
        .map_err(|e| CallError::Protocol(e.to_string()))?;
    let result = async {
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| CallError::Protocol(e.to_string()))?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| {
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    CallError::TooLarge
                } else {
                    CallError::Protocol(e.to_string())
                }
            })?
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if status == StatusCode::OK {
            Ok(text)
        } else if status == StatusCode::BAD_REQUEST && text.contains("Unknown command") {
            Err(CallError::NotSupported)
        } else {
            Err(CallError::Status {
                status: status.as_u16(),
                body: excerpt(text.trim()),
            })
        }
    }
    .await;
    driver.abort();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_survive_a_second_url_decoding() {
        let json = r#"[{"resource":"a+b %2B c"}]"#;
        let sent = survive_double_decoding(json);
        assert_eq!(sent, r#"[{"resource":"a\u002bb \u00252B c"}]"#);
        // What Java's second URLDecoder.decode sees has neither `%` nor `+`, so it is unchanged, and
        // the JSON reads back as the original string.
        assert!(!sent.contains('%') && !sent.contains('+'));
        let back: serde_json::Value = serde_json::from_str(&sent).unwrap();
        assert_eq!(back[0]["resource"], "a+b %2B c");
    }

    #[test]
    fn targets_are_ip_literals_with_a_port() {
        assert!(Target::new("127.0.0.1", 8719, None).is_some());
        assert_eq!(
            Target::new("::1", 8719, None).unwrap().addr.to_string(),
            "[::1]:8719"
        );
        assert!(Target::new("example.com", 8719, None).is_none());
        assert!(Target::new("127.0.0.1", 0, None).is_none());
        assert!(Target::new("127.0.0.1", 70_000, None).is_none());
    }
}
