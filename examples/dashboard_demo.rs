//! The dashboard demo: the Floodgate dashboard on `127.0.0.1:8080` (its SQLite file in
//! `./floodgate-data/`) and an app, `demo-shop`, that embeds the agent, registers with it and sends
//! traffic to a few resources — one under a 20 QPS flow rule, one whose downstream fails often.
//!
//! Run with `cargo run --release --example dashboard_demo --features transport` (add `-- 60` to stop
//! after 60 s). On the first start the admin password is generated and printed once (or set
//! `FLOODGATE_ADMIN_PASSWORD`); the JSON API then shows the app, its machines, per-second metrics and
//! rules, and a rule created there reaches the app within a second or two:
//!
//! ```text
//! curl -c jar -H 'content-type: application/json' -d '{"username":"admin","password":"…"}' http://127.0.0.1:8080/auth/login
//! curl -b jar http://127.0.0.1:8080/api/apps/demo-shop/resources/top
//! ```

use std::time::{Duration, Instant};

use clap::Parser;
use floodgate::transport::Agent;
use floodgate::{EntryType, Floodgate, RuleType};
use floodgate_dashboard::{Config, Dashboard};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: Option<u64> = std::env::args().nth(1).and_then(|s| s.parse().ok());
    let config = Config::parse_from(["floodgate-dashboard"]);
    let bind = config.bind;
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
        None => println!(
            "sign in as `{admin}` (the password printed at the first start, or FLOODGATE_ADMIN_PASSWORD; \
             delete ./floodgate-data to start afresh)"
        ),
    }

    let fg = Floodgate::default();
    fg.load_rules_json(
        RuleType::Flow,
        r#"[{"resource":"GET:/api/orders","count":20}]"#,
    )?;
    let agent = Agent::builder(fg.clone())
        .app_name("demo-shop")
        .port(0)
        .dashboard(bind.to_string())
        .heartbeat_interval(Duration::from_secs(2))
        .start()?;
    println!(
        "app `demo-shop`: agent on {}, sending traffic",
        agent.local_addr()
    );

    let traffic = std::thread::spawn(move || {
        let start = Instant::now();
        let mut n: u64 = 0;
        while seconds.is_none_or(|s| start.elapsed() < Duration::from_secs(s)) {
            n += 1;
            for resource in ["GET:/api/orders", "GET:/api/items", "POST:/api/pay"] {
                if let Ok(entry) = fg.entry(resource).entry_type(EntryType::In).enter() {
                    // The payment downstream fails one call in five.
                    if resource == "POST:/api/pay" && n % 5 == 0 {
                        entry.trace(&std::io::Error::other("downstream failed"));
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    });
    tokio::task::spawn_blocking(move || traffic.join())
        .await?
        .ok();
    agent.shutdown();
    server.abort();
    dashboard.shutdown().await;
    Ok(())
}
