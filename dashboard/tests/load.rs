//! Load test of the metrics pipeline (ignored by default; run in release):
//!
//! ```text
//! LOAD_SECS=300 cargo test -p floodgate-dashboard --release --test load -- --ignored --nocapture
//! ```
//!
//! Starts the release binary on a free port with a temporary data folder, and 100 simulated agents
//! on loopback in this process: each heartbeats `/registry/machine` (a form POST) every 10 s and
//! answers `metric` with 100 resources' lines for every complete second asked for. It runs each
//! shape (`LOAD_SHAPE`: `1x100` = 1 app × 100 machines, `100x1` = 100 apps × 1 machine, or `both`,
//! the default) for `LOAD_SECS` seconds and reports the dashboard's CPU share (utime + stime over wall
//! time), its peak RSS (VmHWM), the writer's commit latencies (its summary log line) and the database's
//! growth extrapolated to a day.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const AGENTS: usize = 100;
const RESOURCES: usize = 100;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A simulated agent: answers `metric?startTime&endTime` with lines of the complete seconds, and
/// `getRules` / `getParamFlowRules` with no rules.
async fn agent(seed: usize) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 2048];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let request = String::from_utf8_lossy(&request).into_owned();
                if request.starts_with("GET /getRules")
                    || request.starts_with("GET /getParamFlowRules")
                {
                    // What an agent without rules answers the reconciliation at each heartbeat.
                    let _ = socket
                        .write_all(
                            b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n[]",
                        )
                        .await;
                    let _ = socket.shutdown().await;
                    return;
                }
                let (start, end) = window(&request);
                // Only complete seconds are written, as a Java client's metric log does.
                let newest = (now_ms() / 1000 - 1) * 1000;
                let mut body = String::new();
                let mut ts = start.div_euclid(1000) * 1000;
                if ts < start {
                    ts += 1000;
                }
                while ts <= end.min(newest) {
                    for r in 0..RESOURCES {
                        let pass = (seed + r + (ts / 1000) as usize) % 50 + 1;
                        let block = (r % 7 == 0) as usize * (pass / 3);
                        body.push_str(&format!(
                            "{ts}|GET:/api/resource-{r}|{pass}|{block}|{pass}|0|{}|0|0|0\n",
                            (r % 20) + 1
                        ));
                    }
                    ts += 1000;
                }
                let response = format!(
                    "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    port
}

fn window(request: &str) -> (i64, i64) {
    let mut start = 0;
    let mut end = -1;
    if let Some(query) = request
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.split_once('?'))
        .map(|(_, q)| q)
    {
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "startTime" => start = v.parse().unwrap_or(0),
                "endTime" => end = v.parse().unwrap_or(-1),
                _ => {}
            }
        }
    }
    (start, end)
}

/// One heartbeat, a form POST as the Java client sends it.
async fn heartbeat(dashboard: u16, app: &str, port: u16) {
    let body = format!(
        "app={app}&app_type=0&hostname=load-{port}&ip=127.0.0.1&port={port}&v=1.8.9&version={}",
        now_ms()
    );
    let request = format!(
        "POST /registry/machine HTTP/1.1\r\nHost: 127.0.0.1:{dashboard}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    if let Ok(mut s) = TcpStream::connect(("127.0.0.1", dashboard)).await {
        let _ = s.write_all(request.as_bytes()).await;
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer).await;
        assert!(
            answer.starts_with(b"HTTP/1.1 200"),
            "heartbeat refused: {}",
            String::from_utf8_lossy(&answer)
        );
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// utime + stime of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    field(11) + field(12)
}

fn clock_ticks_per_sec() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

fn vm_hwm_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The sizes of the database file and of its write-ahead log.
fn db_bytes(dir: &Path) -> (u64, u64) {
    let size = |f: &str| std::fs::metadata(dir.join(f)).map_or(0, |m| m.len());
    (size("floodgate.db"), size("floodgate.db-wal"))
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn field_of(line: &str, name: &str) -> Option<f64> {
    let at = line.find(&format!("{name}="))? + name.len() + 1;
    line[at..].split_whitespace().next()?.parse().ok()
}

async fn run_shape(apps: usize, per_app: usize, secs: u64) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_floodgate-dashboard"))
        .args(["--data-dir"])
        .arg(dir.path())
        .args(["--admin-password", "correct horse battery", "--bind"])
        .arg(format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "info,tower_http=warn")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the dashboard binary starts");
    let pid = child.id();
    let summaries = Arc::new(Mutex::new(Vec::<String>::new()));
    for out in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let summaries = summaries.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let line = strip_ansi(&line);
                if line.contains("metrics writer summary") {
                    println!("  dashboard: {line}");
                    summaries.lock().unwrap().push(line);
                } else if line.contains("ERROR") || line.contains("WARN") {
                    println!("  dashboard: {line}");
                }
            }
        });
    }
    // Wait for the dashboard to listen.
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(Instant::now() < deadline, "the dashboard did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut agents = Vec::new();
    for i in 0..AGENTS {
        let app = format!("load-app-{}", i % apps);
        agents.push((app, agent(i).await));
    }
    assert_eq!(agents.len(), apps * per_app);
    for (app, agent_port) in agents.clone() {
        tokio::spawn(async move {
            loop {
                heartbeat(port, &app, agent_port).await;
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
        });
    }
    // Let the first fetches (a minute of catch-up each) pass before measuring.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let ticks = clock_ticks_per_sec();
    let (cpu0, wall0, db0) = (cpu_ticks(pid), Instant::now(), db_bytes(dir.path()));
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let (cpu1, wall, db1) = (cpu_ticks(pid), wall0.elapsed(), db_bytes(dir.path()));
    let hwm = vm_hwm_kib(pid);
    // Stop it as an operator would, so the writer commits what is queued.
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = child.wait();

    let cpu_share = (cpu1 - cpu0) as f64 / ticks / wall.as_secs_f64() * 100.0;
    // The log is checkpointed into the file and reused, so the file's growth is what lasts.
    let per_day =
        (db1.0 + db1.1).saturating_sub(db0.0 + db0.1) as f64 / wall.as_secs_f64() * 86_400.0;
    let file_per_day = db1.0.saturating_sub(db0.0) as f64 / wall.as_secs_f64() * 86_400.0;
    let summaries = summaries.lock().unwrap().clone();
    let p99 = summaries
        .iter()
        .filter_map(|l| field_of(l, "commit_p99_ms"))
        .fold(0.0f64, f64::max);
    let p50 = summaries
        .iter()
        .filter_map(|l| field_of(l, "commit_p50_ms"))
        .fold(0.0f64, f64::max);
    println!(
        "shape {apps} app(s) x {per_app} machine(s), {RESOURCES} resources each, {:.0} s measured:\n  \
         CPU {cpu_share:.1} % of one core | peak RSS {:.1} MiB | commit p50 {p50:.2} ms, p99 {p99:.2} ms \
         (worst summary) | database {:.1} MiB + WAL {:.1} MiB at the end; growth (file + WAL) {:.0} MiB/day, \
         file alone {:.0} MiB/day (until the per-second retention caps it)",
        wall.as_secs_f64(),
        hwm as f64 / 1024.0,
        db1.0 as f64 / 1_048_576.0,
        db1.1 as f64 / 1_048_576.0,
        per_day / 1_048_576.0,
        file_per_day / 1_048_576.0,
    );
    assert!(
        !summaries.is_empty() || secs < 60,
        "no writer summary was logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a load test: run it in release, see the module docs"]
async fn metrics_pipeline_under_load() {
    let secs: u64 = std::env::var("LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let shape = std::env::var("LOAD_SHAPE").unwrap_or_else(|_| "both".into());
    if shape == "1x100" || shape == "both" {
        run_shape(1, AGENTS, secs).await;
    }
    if shape == "100x1" || shape == "both" {
        run_shape(AGENTS, 1, secs).await;
    }
}
