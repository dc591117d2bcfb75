//! Guarding outgoing calls: a reqwest client with Floodgate's middleware calls a flaky downstream (a
//! local axum server that fails every other request). An error-ratio breaker opens, and the calls it
//! blocks never reach the network.
//!
//! Run with `cargo run --example reqwest_client --features reqwest`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use floodgate::reqwest::FloodgateMiddleware;
use floodgate::{BlockError, DegradeRule, Floodgate};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The downstream: every other call fails with a 500.
    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    let downstream = Router::new().route(
        "/inventory/{item}",
        get(move || {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                if n % 2 == 1 {
                    (StatusCode::INTERNAL_SERVER_ERROR, "flaky")
                } else {
                    (StatusCode::OK, "in stock")
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, downstream).await });

    let fg = Floodgate::default();
    let resource = format!("GET:127.0.0.1:{}/inventory/{{id}}", addr.port());
    fg.load_degrade_rules([DegradeRule::error_ratio(&resource, 0.4)
        .min_request_amount(4)
        .time_window(30)])?;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(FloodgateMiddleware::new(fg.clone()))
        .build();

    for i in 1..=8 {
        let url = format!("http://{addr}/inventory/{i}");
        match client.get(&url).send().await {
            Ok(response) => println!("call {i}: {}", response.status()),
            Err(reqwest_middleware::Error::Middleware(e))
                if e.downcast_ref::<BlockError>().is_some() =>
            {
                println!("call {i}: blocked by the circuit breaker (not sent)")
            }
            Err(e) => println!("call {i}: failed: {e}"),
        }
    }
    println!(
        "the downstream saw {} calls; breakers: {:?}",
        calls.load(Ordering::SeqCst),
        fg.circuit_breakers()
            .iter()
            .map(|b| b.state)
            .collect::<Vec<_>>()
    );
    Ok(())
}
