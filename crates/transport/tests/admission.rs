//! Which connections the agent serves while strangers hold connections open, over real sockets: a
//! dashboard's calls get their answers while 64 or 300 strangers hold half-sent requests and renew
//! each one as soon as the agent closes it.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use floodgate_core::RuleType;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Strangers holding half-sent requests, each renewed as soon as the agent closes it.
struct Strangers {
    /// How many strangers have sent their half request at least once.
    ready: Arc<AtomicUsize>,
    /// How many of their connections the agent has closed.
    closed: Arc<AtomicUsize>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Strangers {
    async fn start(addr: SocketAddr, count: usize) -> Strangers {
        let ready = Arc::new(AtomicUsize::new(0));
        let closed = Arc::new(AtomicUsize::new(0));
        let tasks = (0..count)
            .map(|_| {
                let (ready, closed) = (ready.clone(), closed.clone());
                tokio::spawn(async move {
                    let mut first = true;
                    loop {
                        let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else {
                            tokio::task::yield_now().await;
                            continue;
                        };
                        // Half a request line, never finished.
                        if stream.write_all(b"GET /getRules?ty").await.is_ok() && first {
                            first = false;
                            ready.fetch_add(1, Ordering::SeqCst);
                        }
                        let mut buf = [0u8; 256];
                        while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
                        closed.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        let strangers = Strangers {
            ready,
            closed,
            tasks,
        };
        while strangers.ready.load(Ordering::SeqCst) < count {
            tokio::task::yield_now().await;
        }
        strangers
    }
}

impl Strangers {
    /// Waits until the agent has closed at least `n` of the strangers' connections (30 s at most).
    async fn closed_at_least(&self, n: usize) -> bool {
        let wait = async {
            while self.closed.load(Ordering::SeqCst) < n {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), wait)
            .await
            .is_ok()
    }
}

impl Drop for Strangers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Sends `request` on a blocking socket (10 s read timeout) off the runtime.
async fn call(addr: SocketAddr, request: String) -> (u16, String) {
    tokio::task::spawn_blocking(move || raw(addr, request.as_bytes()))
        .await
        .unwrap()
}

/// `getRules` as Sentinel's Java dashboard sends it.
fn get_rules(addr: SocketAddr, token: &str) -> String {
    format!(
        "GET /getRules?type=flow HTTP/1.1\r\nHost: {addr}\r\n{token}Connection: Keep-Alive\r\n\
         User-Agent: Apache-HttpAsyncClient/4.1.4 (Java/1.8.0_372)\r\n\r\n"
    )
}

/// `setRules` as Sentinel's Java dashboard sends it.
fn set_rules(addr: SocketAddr, token: &str) -> String {
    let body = form(&[
        ("type", "flow"),
        (
            "data",
            r#"[{"resource":"GET:/api/hello","count":20.0,"grade":1}]"#,
        ),
    ]);
    format!(
        "POST /setRules HTTP/1.1\r\nContent-Length: {}\r\n\
         Content-Type: application/x-www-form-urlencoded; charset=UTF-8\r\nHost: {addr}\r\n{token}\
         Connection: Keep-Alive\r\nUser-Agent: Apache-HttpAsyncClient/4.1.4 (Java/1.8.0_372)\r\n\r\n{body}",
        body.len()
    )
}

/// How the dashboard is let in.
#[derive(Clone, Copy)]
enum Dashboard {
    /// The agent has no token.
    NoToken,
    /// It sends the agent's token in a header (Floodgate's dashboard).
    Token,
    /// The agent has a token; the dashboard sends none, from an address in `tokenless_from`
    /// (Sentinel's Java dashboard).
    ByAddress,
}

async fn dashboard_is_answered_while_strangers_hold_connections(
    count: usize,
    dashboard: Dashboard,
) {
    let (_clock, fg) = engine();
    let mut agent = builder(&fg);
    let mut header = String::new();
    match dashboard {
        Dashboard::NoToken => {}
        Dashboard::Token => {
            agent = agent.token("s3cret-token");
            header = "X-Floodgate-Token: s3cret-token\r\n".to_owned();
        }
        Dashboard::ByAddress => {
            agent = agent
                .token("s3cret-token")
                .tokenless_from("127.0.0.1/32".parse().unwrap());
        }
    }
    let agent = agent.start().unwrap();
    let addr = agent.local_addr();
    let strangers = Strangers::start(addr, count).await;
    assert_eq!(
        call(addr, set_rules(addr, &header)).await,
        (200, "success".to_owned())
    );
    let (status, rules) = call(addr, get_rules(addr, &header)).await;
    assert_eq!(status, 200, "{rules}");
    assert!(rules.contains("GET:/api/hello"), "{rules}");
    assert_eq!(fg.rules_json(RuleType::Flow), rules);
    assert!(
        strangers.closed_at_least(count.saturating_sub(32)).await,
        "strangers past the 32 unproven places were closed to make room"
    );
}

/// 64 strangers took every place (new connections were closed) and renewed them: the command API
/// was shut out for as long as they liked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dashboard_is_answered_while_64_strangers_hold_half_sent_requests() {
    dashboard_is_answered_while_strangers_hold_connections(64, Dashboard::NoToken).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dashboard_is_answered_while_300_strangers_hold_half_sent_requests() {
    dashboard_is_answered_while_strangers_hold_connections(300, Dashboard::NoToken).await;
}

/// With a token the strangers cannot prove anything: their connections stay unproven.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dashboard_with_the_token_is_answered_while_300_strangers_hold_half_sent_requests() {
    dashboard_is_answered_while_strangers_hold_connections(300, Dashboard::Token).await;
}

/// Sentinel's Java dashboard, let in by its address, sends no token: the strangers on the same
/// address still prove nothing, as they never finish a request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_dashboard_let_in_by_address_is_answered_while_300_strangers_hold_half_sent_requests()
 {
    dashboard_is_answered_while_strangers_hold_connections(300, Dashboard::ByAddress).await;
}

/// Established connections are not displaced by strangers: a keep-alive connection whose first
/// request was let in answers a second request after 300 strangers came and went.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_established_connection_outlasts_strangers() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).token("s3cret-token").start().unwrap();
    let addr = agent.local_addr();
    let mut kept = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request =
        format!("GET /version HTTP/1.1\r\nHost: {addr}\r\nX-Floodgate-Token: s3cret-token\r\n\r\n");
    kept.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    while !answer.ends_with(b"1.8.9") {
        let mut buf = [0u8; 512];
        let n = kept.read(&mut buf).await.unwrap();
        assert_ne!(n, 0, "closed");
        answer.extend_from_slice(&buf[..n]);
    }
    let strangers = Strangers::start(addr, 300).await;
    assert!(strangers.closed_at_least(300 - 32).await);
    kept.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    while !answer.ends_with(b"1.8.9") {
        let mut buf = [0u8; 512];
        let n = kept.read(&mut buf).await.unwrap();
        assert_ne!(n, 0, "the established connection was closed");
        answer.extend_from_slice(&buf[..n]);
    }
    drop(strangers);
}
