//! Which connections the agent serves while strangers hold connections open, over real sockets: a
//! dashboard's calls get their answers while 64 or 300 strangers hold half-sent requests and renew
//! each one as soon as the agent closes it, or hold half-sent bodies on connections they proved.
//! Strangers on other addresses bind loopback addresses of their own (`127.0.0.2`, …).

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use floodgate_core::RuleType;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinSet;

const TOKEN: &str = "s3cret-token";

/// How many established connections one address may hold: half of the agent's 64.
const ESTABLISHED_PER_PEER: usize = 32;

/// A connection to `addr` from the loopback address `from`.
async fn connect_from(from: [u8; 4], addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((from, 0))).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Reads one answer's head from `stream`: its status (0 if the connection closed first) and head.
async fn read_head(stream: &mut TcpStream) -> (u16, String) {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return (0, String::from_utf8_lossy(&head).into_owned()),
        }
    }
    let head = String::from_utf8(head).unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head)
}

/// Whether the agent closes `stream` (after what it has still to send), within 30 s.
async fn closed(stream: &mut TcpStream) -> bool {
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut rest));
    matches!(read.await, Ok(Ok(_)))
}

/// `GET /version`, with `headers`.
fn version(headers: &str) -> String {
    format!("GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n")
}

/// A `setRules` whose body is announced (100 bytes) but never finished; the client waits for the
/// agent's `100 Continue` (sent when the handler starts reading the body) before the first bytes.
const HALF_A_BODY: &str = "POST /setRules HTTP/1.1\r\nHost: 127.0.0.1\r\n\
     Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\
     Expect: 100-continue\r\n\r\n";

/// A connection from `from` whose `GET /version` was answered 200: it is established, and idle
/// (kept alive between requests).
async fn idle_established(from: [u8; 4], addr: SocketAddr) -> TcpStream {
    let mut stream = connect_from(from, addr).await;
    stream.write_all(version("").as_bytes()).await.unwrap();
    let (status, head) = read_head(&mut stream).await;
    assert_eq!(status, 200, "{head}");
    let mut body = [0u8; 5];
    stream.read_exact(&mut body).await.unwrap();
    assert_eq!(&body, b"1.8.9");
    stream
}

/// An established connection from `from` holding half a `setRules` body: its place is busy, not
/// idle, for the body's 10 s deadline (the agent is reading the body when this returns).
async fn busy_established(from: [u8; 4], addr: SocketAddr) -> TcpStream {
    let mut stream = idle_established(from, addr).await;
    stream.write_all(HALF_A_BODY.as_bytes()).await.unwrap();
    let (status, head) = read_head(&mut stream).await;
    assert_eq!(status, 100, "{head}");
    stream.write_all(b"type=").await.unwrap();
    stream
}

/// Strangers holding half-sent requests, each renewed as soon as the agent closes it to make
/// room (or refuses it). One the agent kept for 2 s or more was closed by its first-request
/// deadline (3 s), and is not renewed: the strangers all came at once, and would all come back at
/// once, a wave that the tests here are not about.
struct Strangers {
    /// How many strangers have sent their half request at least once.
    ready: Arc<AtomicUsize>,
    /// How many of their connections the agent has closed.
    closed: Arc<AtomicUsize>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Strangers {
    /// `count` strangers on the dashboard's address, 127.0.0.1.
    async fn start(addr: SocketAddr, count: usize) -> Strangers {
        Strangers::start_from(addr, count, |_| [127, 0, 0, 1]).await
    }

    /// `count` strangers, the `i`th on the loopback address `from(i)`.
    async fn start_from(
        addr: SocketAddr,
        count: usize,
        from: impl Fn(usize) -> [u8; 4],
    ) -> Strangers {
        let ready = Arc::new(AtomicUsize::new(0));
        let closed = Arc::new(AtomicUsize::new(0));
        let tasks = (0..count)
            .map(|i| {
                let (ready, closed) = (ready.clone(), closed.clone());
                let from = SocketAddr::from((from(i), 0));
                tokio::spawn(async move {
                    let mut first = true;
                    loop {
                        let socket = TcpSocket::new_v4().unwrap();
                        socket.bind(from).unwrap();
                        let Ok(mut stream) = socket.connect(addr).await else {
                            tokio::task::yield_now().await;
                            continue;
                        };
                        let kept = std::time::Instant::now();
                        // Half a request line, never finished.
                        if stream.write_all(b"GET /getRules?ty").await.is_ok() && first {
                            first = false;
                            ready.fetch_add(1, Ordering::SeqCst);
                        }
                        let mut buf = [0u8; 256];
                        while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
                        closed.fetch_add(1, Ordering::SeqCst);
                        if kept.elapsed() >= Duration::from_secs(2) {
                            break;
                        }
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
        strangers.closed_at_least(count.saturating_sub(64)).await,
        "strangers past the 64 unproven places were closed to make room"
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
    assert!(strangers.closed_at_least(300 - 64).await);
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

/// A POST's headers alone, from an address that needs no token, proved its connection: 64 + 32 of
/// them, then silence, held every established place for a body's 10 s deadline (renewably), and
/// the accept loop waited for a place with them, accepting no one else, token or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_alone_from_an_address_needing_no_token_prove_nothing() {
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .token(TOKEN)
        .tokenless_from("127.0.0.1/32".parse().unwrap())
        .start()
        .unwrap();
    let addr = agent.local_addr();
    let mut strangers = JoinSet::new();
    // More than every place, unproven and established.
    for _ in 0..256 {
        let mut stream = connect_from([127, 0, 0, 1], addr).await;
        let headers = "POST /setRules HTTP/1.1\r\nHost: 127.0.0.1\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n";
        stream.write_all(headers.as_bytes()).await.unwrap();
        strangers.spawn(async move {
            let mut answer = Vec::new();
            let _ = stream.read_to_end(&mut answer).await;
            answer
        });
    }
    let mut client = connect_from([127, 0, 0, 2], addr).await;
    let token = format!("X-Floodgate-Token: {TOKEN}\r\nConnection: close\r\n");
    client.write_all(version(&token).as_bytes()).await.unwrap();
    assert_eq!(read_head(&mut client).await.0, 200);
    // Each closed unanswered (never let in), none answered 408 after holding a place.
    while let Some(answer) = strangers.join_next().await {
        let answer = answer.unwrap();
        assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    }
}

/// Strangers on an address that needs no token could take every established place: one address
/// holds at most half of them (its further promotions are refused), and a client with the token,
/// on another address, is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_holds_at_most_half_the_established_places() {
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .token(TOKEN)
        .tokenless_from("127.0.0.1/32".parse().unwrap())
        .start()
        .unwrap();
    let addr = agent.local_addr();
    let mut held = Vec::new();
    for _ in 0..ESTABLISHED_PER_PEER {
        held.push(busy_established([127, 0, 0, 1], addr).await);
    }
    let mut more = JoinSet::new();
    for _ in 0..8 {
        let mut stream = connect_from([127, 0, 0, 1], addr).await;
        stream.write_all(version("").as_bytes()).await.unwrap();
        more.spawn(async move {
            let (status, head) = read_head(&mut stream).await;
            (status, head, closed(&mut stream).await)
        });
    }
    while let Some(answer) = more.join_next().await {
        let (status, head, closed) = answer.unwrap();
        assert_eq!(status, 503, "{head}");
        assert!(head.contains("retry-after: 1\r\n"), "{head}");
        assert!(head.contains("connection: close\r\n"), "{head}");
        assert!(closed);
    }
    let mut client = connect_from([127, 0, 0, 2], addr).await;
    let token = format!("X-Floodgate-Token: {TOKEN}\r\nConnection: close\r\n");
    client.write_all(version(&token).as_bytes()).await.unwrap();
    assert_eq!(read_head(&mut client).await.0, 200);
    drop(held);
}

/// Established connections busy with half-sent bodies (without a token, anyone's first whole
/// request establishes its connection) held a dashboard's promotion for as long as they renewed
/// them: it waits a short while, then is refused 503 with `Retry-After`, and its connection closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promotion_that_finds_every_place_busy_is_refused() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let mut held = Vec::new();
    for from in [[127, 0, 0, 2], [127, 0, 0, 3]] {
        for _ in 0..ESTABLISHED_PER_PEER {
            held.push(busy_established(from, addr).await);
        }
    }
    let mut dashboard = connect_from([127, 0, 0, 1], addr).await;
    dashboard.write_all(version("").as_bytes()).await.unwrap();
    let (status, head) = read_head(&mut dashboard).await;
    assert_eq!(status, 503, "{head}");
    assert!(head.contains("retry-after: 1\r\n"), "{head}");
    assert!(closed(&mut dashboard).await);
    drop(held);
}

/// An established connection whose large answer was still being written counted as idle (its
/// request ended when hyper took the answer's body) and was closed for a waiting promotion, cutting
/// the answer off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_being_written_is_not_cut_off_for_a_waiting_promotion() {
    let (_clock, fg) = engine();
    let name = "r".repeat(1000);
    let rules: Vec<String> = (0..10_000)
        .map(|i| format!(r#"{{"resource":"{name}{i}","count":1}}"#))
        .collect();
    fg.load_rules_json(RuleType::Flow, &format!("[{}]", rules.join(",")))
        .unwrap();
    let expected = fg.rules_json(RuleType::Flow);
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    // The oldest established connection asks for the rules, and reads the answer's head only: the
    // rest waits in the agent, being written as the client reads.
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let mut slow = socket.connect(addr).await.unwrap();
    let request = "GET /getRules?type=flow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    slow.write_all(request.as_bytes()).await.unwrap();
    let (status, head) = read_head(&mut slow).await;
    assert_eq!(status, 200, "{head}");
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(length, expected.len());
    // Every other established place taken by an idle connection, one per address.
    let mut idle = Vec::new();
    for i in 1..64 {
        idle.push(idle_established([127, 0, 2, i], addr).await);
    }
    // A 65th: an idle connection gives its place up for its promotion.
    let newcomer = idle_established([127, 0, 3, 1], addr).await;
    let mut body = vec![0u8; length];
    slow.read_exact(&mut body).await.unwrap();
    assert!(
        body == expected.as_bytes(),
        "the answer was cut off or garbled"
    );
    drop((idle, newcomer));
}

/// `GET /version` from `from`, sent `delay` after connecting (a dashboard that is late with its
/// request); the answer's status, 0 if the connection was closed first.
async fn late_call(from: [u8; 4], addr: SocketAddr, delay: Duration, request: String) -> u16 {
    let mut stream = connect_from(from, addr).await;
    tokio::time::sleep(delay).await;
    if stream.write_all(request.as_bytes()).await.is_err() {
        return 0;
    }
    read_head(&mut stream).await.0
}

const DELAYS_MS: [u64; 7] = [0, 0, 0, 5, 20, 20, 100];

/// Strangers on 64 addresses, each renewing its connection at once when closed: each renewal
/// closed the next oldest connection, a loop in which a dashboard's fresh connection lasted a few
/// dozen accepts (milliseconds): requests sent 20 ms after connecting found it closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_request_is_answered_while_strangers_on_many_addresses_renew_their_connections() {
    let (_clock, fg) = engine();
    let agent = builder(&fg).start().unwrap();
    let addr = agent.local_addr();
    let strangers = Strangers::start_from(addr, 64, |i| [127, 0, 1, 2 + i as u8]).await;
    // A newcomer displaces only a connection older than the minimum age (0.5 s): the strangers'
    // are, once this has passed (the longer the better; one closed at its first-request deadline
    // is not renewed, which only leaves room).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let request = "GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    for delay in DELAYS_MS {
        let status = late_call(
            [127, 0, 0, 1],
            addr,
            Duration::from_millis(delay),
            request.into(),
        );
        assert_eq!(status.await, 200, "sent {delay} ms after connecting");
    }
    drop(strangers);
}

/// Sentinel's dashboard, let in by its address, competed for places with strangers on every other
/// loopback address, and its connection was closed before its late request came: its address now
/// has places of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_on_other_addresses_never_take_the_places_of_a_dashboard_let_in_by_address() {
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .token(TOKEN)
        .tokenless_from("127.0.0.1/32".parse().unwrap())
        .start()
        .unwrap();
    let addr = agent.local_addr();
    let strangers = Strangers::start_from(addr, 128, |i| {
        [127, 0, 1 + (i / 200) as u8, 2 + (i % 200) as u8]
    })
    .await;
    for delay in DELAYS_MS {
        let status = late_call(
            [127, 0, 0, 1],
            addr,
            Duration::from_millis(delay),
            set_rules(addr, ""),
        );
        assert_eq!(status.await, 200, "sent {delay} ms after connecting");
    }
    let (status, rules) = call(addr, get_rules(addr, "")).await;
    assert_eq!(status, 200, "{rules}");
    assert!(rules.contains("GET:/api/hello"), "{rules}");
    drop(strangers);
}
