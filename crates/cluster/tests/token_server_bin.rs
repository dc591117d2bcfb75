//! The standalone token server as a process: it serves the rule document it was given, reloads it when
//! the file changes, and keeps its rules when a new document is refused; with `--redis`, two of them
//! grant one limit.

mod redis_server;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use floodgate_cluster::client::{ClientConfig, TokenClient};
use floodgate_core::cluster::TokenStatus;

struct Server {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// The next output line that contains `text` (the lines before it are skipped).
    fn wait_for(&self, text: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no line with {text:?}"));
            if line.contains(text) {
                return line;
            }
        }
    }
}

fn start(rules: &std::path::Path) -> (Server, SocketAddr) {
    start_with(rules, &[])
}

fn start_with(rules: &std::path::Path, args: &[&str]) -> (Server, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_floodgate-token-server"))
        .args(["--bind", "127.0.0.1:0", "--rules"])
        .arg(rules)
        .args(args)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    let server = Server { child, lines };
    let line = server.wait_for("token server listening");
    let addr = line
        .split("addr=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("an address in {line:?}"));
    (server, addr)
}

fn document(count: u32) -> String {
    format!(
        r#"{{"namespaces":{{"app":{{"flowRules":[{{"resource":"R","count":{count},"clusterMode":true,"clusterConfig":{{"flowId":1,"thresholdType":1}}}}]}}}}}}"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_serves_reloads_and_keeps_its_rules_on_a_bad_document() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rules.json");
    std::fs::write(&path, document(2)).unwrap();
    let (server, addr) = start(&path);
    let client = TokenClient::start(ClientConfig {
        request_timeout: Duration::from_secs(5),
        ..ClientConfig::new(addr, "app")
    });
    client.started().await;
    let mut answers = Vec::new();
    for _ in 0..3 {
        answers.push(client.request_token(1, 1, false).await.status);
    }
    assert_eq!(
        answers,
        [TokenStatus::Ok, TokenStatus::Ok, TokenStatus::Blocked]
    );

    std::fs::write(&path, "{ not json").unwrap();
    server.wait_for("rule document refused");
    assert_eq!(
        client.request_token(1, 1, false).await.status,
        TokenStatus::Blocked,
        "still count 2"
    );

    std::fs::write(&path, document(100)).unwrap();
    server.wait_for("rules reloaded");
    assert_eq!(
        client.request_token(1, 1, false).await.status,
        TokenStatus::Ok
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_counting_in_one_redis_grant_one_limit() {
    let redis = redis_server::RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rules.json");
    std::fs::write(&path, document(3)).unwrap();
    let url = redis.url();
    let (_one, one) = start_with(&path, &["--redis", &url]);
    let (_two, two) = start_with(&path, &["--redis", &url]);
    let mut answers = Vec::new();
    for addr in [one, two, one, two] {
        let client = TokenClient::start(ClientConfig {
            request_timeout: Duration::from_secs(5),
            ..ClientConfig::new(addr, "app")
        });
        client.started().await;
        answers.push(client.request_token(1, 1, false).await.status);
    }
    assert_eq!(
        answers,
        [
            TokenStatus::Ok,
            TokenStatus::Ok,
            TokenStatus::Ok,
            TokenStatus::Blocked
        ],
        "3 in all, not 3 each"
    );
}
