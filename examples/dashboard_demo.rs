//! The dashboard demo: the Floodgate dashboard on `127.0.0.1:8080` (its SQLite file in
//! `./floodgate-data/`) and an app, `demo-shop`, that embeds the agent (a heartbeat every 2 s) and
//! sends varied traffic from a few threads:
//!
//! * `GET:/api/orders` and `GET:/api/items` under QPS limits (20 and 30 a second, offered ~40);
//! * `GET:/api/catalog` warming up (controlBehavior 1: from a third of 50 QPS to all of it in 10 s);
//! * `POST:/api/checkout` queued by a rate limiter (controlBehavior 2: one call every 100 ms, 500 ms
//!   of queue at most);
//! * `POST:/api/pay`, a flaky downstream (40 % of calls fail in bursts) behind an error-ratio breaker;
//! * `GET:/api/recommendations`, a slow downstream (every few seconds 300 ms instead of 20 ms) behind
//!   a slow-call breaker;
//! * `GET:/api/product`, whose first argument (a product id) is a hot parameter: product 1 is asked
//!   for far more than the others, and a param-flow rule allows each product 5 calls a second.
//!
//! The app's rules are loaded locally at its start; the dashboard imports them at its first
//! heartbeat (it manages none yet), then owns them: change one in the pages and it reaches the app.
//!
//! ```text
//! cargo run --release --example dashboard_demo --features transport            # until Ctrl-C
//! cargo run --release --example dashboard_demo --features transport -- 60       # 60 s
//! cargo run --release --example dashboard_demo --features transport -- --second-instance
//! ```
//!
//! On the first start the admin password is generated and printed once (or set
//! `FLOODGATE_ADMIN_PASSWORD`, 12 characters at least). `--second-instance` (or
//! `FLOODGATE_DEMO_SECOND_INSTANCE=1`) starts only another machine of `demo-shop`, with no rule of
//! its own, which joins the dashboard already running: the dashboard pushes it the app's rules.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use floodgate::transport::Agent;
use floodgate::{EntryType, Floodgate, RuleType};
use floodgate_dashboard::{Config, Dashboard};

const APP: &str = "demo-shop";

/// The rules the first instance starts with, as Sentinel's JSON.
const FLOW: &str = r#"[
  {"resource":"GET:/api/orders","count":20},
  {"resource":"GET:/api/items","count":30},
  {"resource":"GET:/api/catalog","count":50,"controlBehavior":1,"warmUpPeriodSec":10},
  {"resource":"POST:/api/checkout","count":10,"controlBehavior":2,"maxQueueingTimeMs":500}
]"#;
const DEGRADE: &str = r#"[
  {"resource":"POST:/api/pay","grade":1,"count":0.3,"timeWindow":5,"minRequestAmount":5,"statIntervalMs":1000},
  {"resource":"GET:/api/recommendations","grade":0,"count":100,"slowRatioThreshold":0.5,"timeWindow":3,"minRequestAmount":5,"statIntervalMs":1000}
]"#;
const PARAM_FLOW: &str =
    r#"[{"resource":"GET:/api/product","paramIdx":0,"grade":1,"count":5,"durationInSec":1}]"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds: Option<u64> = args.iter().find_map(|a| a.parse().ok());
    let second_instance = args.iter().any(|a| a == "--second-instance")
        || std::env::var("FLOODGATE_DEMO_SECOND_INSTANCE").is_ok_and(|v| !v.is_empty() && v != "0");
    if let Some(unknown) = args
        .iter()
        .find(|a| a.parse::<u64>().is_err() && *a != "--second-instance")
    {
        return Err(format!(
            "unknown argument {unknown:?}: give the seconds to run and/or --second-instance"
        )
        .into());
    }
    // The dashboard's settings (also its address for a second instance), from the environment.
    let config = Config::parse_from(["floodgate-dashboard"]);
    let bind = config.bind;

    let dashboard = if second_instance {
        println!("second instance of `{APP}`: joining the dashboard on http://{bind}/");
        None
    } else {
        let admin = config.admin_user.clone();
        let dashboard = Dashboard::start(config).await?;
        let listener = tokio::net::TcpListener::bind(bind).await?;
        let router = dashboard.router();
        let server = tokio::spawn(async move {
            axum::serve(
                listener,
                router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
            )
            .await
        });
        println!("Floodgate dashboard on http://{bind}/");
        match dashboard.generated_password() {
            Some(password) => {
                println!("sign in as `{admin}` with password {password} (shown only this once)")
            }
            None if std::env::var_os("FLOODGATE_ADMIN_PASSWORD").is_some() => println!(
                "sign in as `{admin}` with the password in FLOODGATE_ADMIN_PASSWORD (the one of \
                 the first start, when ./floodgate-data existed before)"
            ),
            None => println!(
                "sign in as `{admin}` with the password printed at the first start (delete \
                 ./floodgate-data to start afresh)"
            ),
        }
        Some((dashboard, server))
    };

    let fg = Floodgate::default();
    if !second_instance {
        fg.load_rules_json(RuleType::Flow, FLOW)?;
        fg.load_rules_json(RuleType::Degrade, DEGRADE)?;
        fg.load_rules_json(RuleType::ParamFlow, PARAM_FLOW)?;
    }
    let agent = Agent::builder(fg.clone())
        .app_name(APP)
        .port(0)
        .dashboard(bind.to_string())
        .heartbeat_interval(Duration::from_secs(2))
        .start()?;
    println!(
        "app `{APP}`: agent on {}, sending traffic{}",
        agent.local_addr(),
        seconds.map_or(" (Ctrl-C to stop)".to_owned(), |s| format!(" for {s} s"))
    );
    println!("open http://{bind}/apps/{APP} to watch it");

    let stop = Arc::new(AtomicBool::new(false));
    let threads = traffic(&fg, &stop);
    match seconds {
        Some(s) => tokio::time::sleep(Duration::from_secs(s)).await,
        None => {
            tokio::signal::ctrl_c().await?;
        }
    }
    stop.store(true, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || {
        for t in threads {
            let _ = t.join();
        }
    })
    .await?;
    agent.shutdown();
    if let Some((dashboard, server)) = dashboard {
        server.abort();
        dashboard.shutdown().await;
    }
    Ok(())
}

/// Calls `resource` every `period` until `stop`, each call doing `work(n)` (an `Err` is traced as
/// the call's error), on its own thread.
fn load(
    fg: &Floodgate,
    stop: &Arc<AtomicBool>,
    resource: &'static str,
    period: Duration,
    work: impl Fn(u64) -> Result<(), std::io::Error> + Send + 'static,
) -> std::thread::JoinHandle<()> {
    let fg = fg.clone();
    let stop = stop.clone();
    std::thread::spawn(move || {
        let mut n = 0u64;
        let mut next = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            if let Ok(entry) = fg.entry(resource).entry_type(EntryType::In).enter()
                && let Err(e) = work(n)
            {
                entry.trace(&e);
            }
            next += period;
            if let Some(wait) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            } else {
                next = Instant::now();
            }
        }
    })
}

fn traffic(fg: &Floodgate, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    let ms = Duration::from_millis;
    let mut threads = vec![
        // ~40 a second each, limited to 20 and 30.
        load(fg, stop, "GET:/api/orders", ms(25), |_| Ok(())),
        load(fg, stop, "GET:/api/items", ms(25), |_| Ok(())),
        // ~70 a second offered to a resource warming up to 50.
        load(fg, stop, "GET:/api/catalog", ms(14), |_| Ok(())),
        // Calls queued by the rate limiter: each waits its turn inside `enter`.
        load(fg, stop, "POST:/api/checkout", ms(50), |_| Ok(())),
        // A downstream that fails 40 % of the time, in bursts of seconds.
        load(fg, stop, "POST:/api/pay", ms(40), |n| {
            let bad_spell = (n / 100) % 3 == 1;
            if bad_spell && n % 5 < 2 || n % 17 == 0 {
                Err(std::io::Error::other("payment provider failed"))
            } else {
                Ok(())
            }
        }),
        // A downstream usually answering in 20 ms, 300 ms for a few seconds every so often.
        load(fg, stop, "GET:/api/recommendations", ms(30), |n| {
            let slow = (n / 150) % 3 == 2;
            std::thread::sleep(Duration::from_millis(if slow { 300 } else { 20 }));
            Ok(())
        }),
    ];
    // The hot parameter: product 1 asked for at ~30 a second, a few others now and then.
    let fg = fg.clone();
    let stop = stop.clone();
    threads.push(std::thread::spawn(move || {
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let product: i64 = if n % 3 == 0 { (n % 7) as i64 + 2 } else { 1 };
            drop(
                fg.entry("GET:/api/product")
                    .entry_type(EntryType::In)
                    .args([product])
                    .enter(),
            );
            std::thread::sleep(Duration::from_millis(22));
        }
    }));
    threads
}
