//! A stand-in for an unmodified Sentinel 1.8.9 Java client, speaking exactly as the captured one:
//! heartbeats as raw `POST /registry/machine` forms with `Host: localhost` (no port); command answers
//! `HTTP/1.0` with only `Content-Length` and `Connection: close` (no `Content-Type`); `setRules`
//! URL-decoding `data` a second time (so `+` becomes a space and `%xx` is decoded again); an empty
//! `setRules` clearing the type; no param-flow module (400 ``Unknown command``); thin metric lines.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What the stand-in holds and saw.
#[derive(Debug, Default)]
pub struct JavaState {
    /// Rules per type, as JSON text after the client's decoding.
    pub rules: HashMap<String, String>,
    /// Every request line received, in order.
    pub requests: Vec<String>,
    /// The raw bodies of `setRules` requests.
    pub set_rules_bodies: Vec<String>,
}

/// A running stand-in.
pub struct JavaClient {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<JavaState>>,
    task: JoinHandle<()>,
}

impl Drop for JavaClient {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `java.net.URLDecoder.decode`: `+` is a space, `%xx` a byte, the rest as is.
pub fn url_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match s
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_params(s: &str, into: &mut Vec<(String, String)>) {
    for pair in s.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        into.push((
            url_decode(k).trim().to_owned(),
            url_decode(v).trim().to_owned(),
        ));
    }
}

fn answer(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.0 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

impl JavaClient {
    /// Starts the stand-in on `127.0.0.1:port` (0: any free port), with `rules` already in force.
    pub async fn start(port: u16, rules: &[(&str, &str)]) -> JavaClient {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(Mutex::new(JavaState {
            rules: rules
                .iter()
                .map(|(t, j)| ((*t).to_owned(), (*j).to_owned()))
                .collect(),
            ..JavaState::default()
        }));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = shared.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, state).await;
                });
            }
        });
        JavaClient { addr, state, task }
    }

    /// Sends one heartbeat to the dashboard at `dashboard`, byte for byte as the Java client does;
    /// returns the answer's status code.
    pub async fn heartbeat(&self, dashboard: SocketAddr, app: &str) -> u16 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        let body = format!(
            "app={}&hostname=vm&app_type=0&port={}&v=1.8.9&ip=127.0.0.1&version={now}",
            form_urlencoded::byte_serialize(app.as_bytes()).collect::<String>(),
            self.addr.port()
        );
        let request = format!(
            "POST /registry/machine HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded; \
             charset=UTF-8\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut stream = TcpStream::connect(dashboard).await.expect("connect");
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut buf = vec![0u8; 512];
        let n = stream.read(&mut buf).await.expect("read");
        let head = String::from_utf8_lossy(&buf[..n]);
        head.split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    /// The rules of `rule_type` the stand-in holds.
    pub fn rules(&self, rule_type: &str) -> String {
        self.state
            .lock()
            .unwrap()
            .rules
            .get(rule_type)
            .cloned()
            .unwrap_or_else(|| "[]".to_owned())
    }
}

/// As Java's `SystemRuleManager` reports what it loaded: one rule per dimension set (the others -1),
/// not the rules as sent.
fn split_system_rules(rules: &serde_json::Value) -> serde_json::Value {
    const DIMENSIONS: [&str; 5] = [
        "highestSystemLoad",
        "highestCpuUsage",
        "qps",
        "avgRt",
        "maxThread",
    ];
    let mut out = Vec::new();
    for rule in rules.as_array().into_iter().flatten() {
        for dim in DIMENSIONS {
            if rule[dim].as_f64().is_some_and(|v| v >= 0.0) {
                let mut one = serde_json::json!({
                    "avgRt": -1, "highestCpuUsage": -1.0, "highestSystemLoad": -1.0,
                    "maxThread": -1, "qps": -1.0, "regex": false,
                });
                one[dim] = rule[dim].clone();
                out.push(one);
            }
        }
    }
    serde_json::Value::Array(out)
}

async fn serve(mut stream: TcpStream, state: Arc<Mutex<JavaState>>) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let content_length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())
                .flatten()
        })
        .unwrap_or(0);
    while buf.len() < head_end + content_length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
    let request_line = head.lines().next().unwrap_or_default().to_owned();
    let target = request_line.split_whitespace().nth(1).unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let command = path.trim_start_matches('/').to_owned();
    let mut params = Vec::new();
    parse_params(query, &mut params);
    parse_params(&body, &mut params);
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let response = {
        let mut s = state.lock().unwrap();
        s.requests.push(request_line.clone());
        match command.as_str() {
            "" => answer("400 Bad Request", "Invalid command"),
            "version" => answer("200 OK", "1.8.9"),
            "getRules" => match param("type").map(|t| t.to_ascii_lowercase()) {
                Some(t) if ["flow", "degrade", "system", "authority"].contains(&t.as_str()) => {
                    let rules = s.rules.get(&t).cloned().unwrap_or_else(|| "[]".into());
                    answer("200 OK", &rules)
                }
                _ => answer("400 Bad Request", "invalid type"),
            },
            "setRules" => match param("type").map(|t| t.to_ascii_lowercase()) {
                Some(t) if ["flow", "degrade", "system", "authority"].contains(&t.as_str()) => {
                    s.set_rules_bodies.push(body.clone());
                    // The handler's own second decoding of `data`; none at all clears the type.
                    let data = param("data")
                        .map(|d| url_decode(&d))
                        .unwrap_or_else(|| "[]".into());
                    match serde_json::from_str::<serde_json::Value>(&data) {
                        Ok(v) if v.is_array() => {
                            let held = if t == "system" {
                                split_system_rules(&v)
                            } else {
                                v
                            };
                            s.rules.insert(t, held.to_string());
                            answer("200 OK", "success")
                        }
                        _ => answer("500 Internal Server Error", "Command server error"),
                    }
                }
                _ => answer("400 Bad Request", "invalid type"),
            },
            "metric" => {
                let start: u64 = param("startTime").and_then(|s| s.parse().ok()).unwrap_or(0);
                let end: u64 = param("endTime").and_then(|s| s.parse().ok()).unwrap_or(0);
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_millis() as u64;
                let mut lines = String::new();
                let mut second = start.div_ceil(1000) * 1000;
                // Only complete seconds, as the client's metric log has them.
                while second <= end && second + 1000 <= now {
                    lines.push_str(&format!("{second}|GET:/orders|6|2|6|1|40|0|0|0\n"));
                    lines.push_str(&format!(
                        "{second}|__total_inbound_traffic__|6|2|6|1|40|0|0|0\n"
                    ));
                    second += 1000;
                }
                answer("200 OK", &lines)
            }
            "clusterNode" => answer("200 OK", "[]"),
            "jsonTree" => answer(
                "200 OK",
                r#"[{"averageRt":0,"blockQps":0,"exceptionQps":0,"id":"47e2b29a","oneMinuteBlock":0,"oneMinuteException":0,"oneMinutePass":0,"oneMinuteTotal":0,"passQps":0,"resource":"machine-root","successQps":0,"threadNum":0,"timestamp":1,"totalQps":0}]"#,
            ),
            other => answer("400 Bad Request", &format!("Unknown command `{other}`")),
        }
    };
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
