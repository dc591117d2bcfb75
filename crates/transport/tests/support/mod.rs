//! Shared helpers: an agent on an ephemeral port, and a raw HTTP client that sends exact bytes.

#![allow(dead_code, unreachable_pub)] // each test binary uses a different part

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use floodgate_core::{Floodgate, ManualClock, ManualProbe};
use floodgate_transport::{Agent, AgentBuilder};

/// The tests' start time.
pub const T0: u64 = 1_700_000_000_000;

/// An engine on a manual clock, with a system probe that reads load 1.5 and CPU 25 %.
pub fn engine() -> (ManualClock, Floodgate) {
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .system_probe(ManualProbe::with(Some(1.5), Some(0.25)))
        .build();
    (clock, fg)
}

/// An agent builder on an ephemeral loopback port.
pub fn builder(fg: &Floodgate) -> AgentBuilder {
    Agent::builder(fg.clone()).port(0).app_name("test-app")
}

/// Sends `request` as is and returns (status, body).
pub fn raw(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let (status, _, body) = exchange(addr, request);
    (status, body)
}

/// Sends `request` as is and returns (status, head, body).
pub fn exchange(addr: SocketAddr, request: &[u8]) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request).unwrap();
    // Read until the connection closes or, with a Content-Length, until the whole body arrived.
    let mut response = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&buf[..n]),
        }
        let text = String::from_utf8_lossy(&response);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())?
            });
            if length.is_some_and(|n| body.len() >= n) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        status,
        head.to_owned(),
        decode_chunked(head, body.to_owned()),
    )
}

fn decode_chunked(head: &str, body: String) -> String {
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return body;
    }
    let mut out = String::new();
    let mut rest = body.as_str();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 {
            break;
        }
        out.push_str(&tail[..n]);
        rest = &tail[n + 2..];
    }
    out
}

/// `GET /path` with Connection: close.
pub fn get(addr: SocketAddr, path_and_query: &str) -> (u16, String) {
    raw(
        addr,
        format!("GET /{path_and_query} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
}

/// `POST /command` with a form body built from `pairs` (encoded once, as the Java dashboard does).
pub fn post(addr: SocketAddr, command: &str, pairs: &[(&str, &str)]) -> (u16, String) {
    let body = form(pairs);
    raw(
        addr,
        format!(
            "POST /{command} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded; charset=UTF-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
}

/// A form body, each pair encoded once.
pub fn form(pairs: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

/// Polls `f` for up to 10 s (for real file-system events and real sockets).
pub fn eventually(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}
