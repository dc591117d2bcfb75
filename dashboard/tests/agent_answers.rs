//! What the dashboard makes of a machine's answer to `setRules`, over a real socket: `success`
//! alone (Sentinel's answer), followed by warning lines (Floodgate's agent naming a field it
//! ignored), Sentinel's `partial success`, and anything else, which is a failure.

use std::time::Duration;

use floodgate_core::RuleType;
use floodgate_dashboard::agent_client::{AgentClient, Target};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A machine that answers one request with `body` (HTTP/1.0, as a Java client does), and the
/// target to call it.
async fn machine_answering(body: &'static str) -> Target {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        // The request is small: its head and form arrive before the answer is due.
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            request.extend_from_slice(&buf[..n]);
        }
        let answer = format!(
            "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(answer.as_bytes()).await.unwrap();
        stream.shutdown().await.unwrap();
    });
    Target::new("127.0.0.1", i64::from(port), None).unwrap()
}

async fn push(answer: &'static str) -> Result<String, String> {
    let target = machine_answering(answer).await;
    AgentClient::new(Duration::from_secs(5))
        .set_rules(&target, RuleType::Flow, r#"[{"resource":"a","count":1}]"#)
        .await
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn success_alone_is_success() {
    assert_eq!(push("success").await.unwrap(), "success");
    assert_eq!(push(" SUCCESS\n").await.unwrap(), "SUCCESS");
}

#[tokio::test]
async fn success_with_warnings_is_success_and_keeps_them() {
    let answer = push("success\nwarning: rule 0: unknown field `strategyy` (ignored)\n")
        .await
        .unwrap();
    assert!(answer.starts_with("success\n"), "{answer}");
    assert!(answer.contains("unknown field `strategyy`"), "{answer}");
}

#[tokio::test]
async fn partial_success_is_success() {
    let answer = push("partial success (write data source failed)")
        .await
        .unwrap();
    assert_eq!(answer, "partial success (write data source failed)");
}

#[tokio::test]
async fn anything_else_is_a_failure() {
    for answer in [
        "failed",
        "rule 0: `count` is required",
        "warning: success",
        "successful",
    ] {
        assert!(
            push(answer).await.is_err(),
            "{answer} was taken for success"
        );
    }
}
