//! The agent's HTTP server: hyper's HTTP/1 connections, under limits a client cannot get around.
//!
//! `axum::serve` runs hyper without a timer, so a client that sends half a request keeps its connection
//! (a file descriptor of the application the agent lives in) for as long as it likes, and a graceful
//! shutdown waits for it. Here each request's headers must arrive within [`HEADER_TIMEOUT`] (between
//! keep-alive requests too), a write of an answer blocked for [`WRITE_TIMEOUT`] (a client that does not
//! read) closes its connection, at most [`MAX_CONNECTIONS`] connections are open at once (more are
//! closed as they arrive), and a stop waits at most [`SHUTDOWN_GRACE`] for requests in progress before
//! it closes the rest. Bodies have their own deadline where they are read (the command handler).
//! Requests carry their client's address as an `axum::extract::ConnectInfo<SocketAddr>`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::{Extension, Router};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tower_layer::Layer;

use crate::write_deadline::WriteDeadline;

/// How long a client may take to send a request's headers.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an answer's write may stay blocked on a client that does not read.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How many connections the agent keeps open at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;
/// How long a stop waits for requests in progress.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Serves `app` on `listener` until `stop` completes.
pub(crate) async fn serve(listener: TcpListener, app: Router, stop: impl Future<Output = ()>) {
    let limit = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = JoinSet::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    let mut stop = std::pin::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut stop => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, say: let others close theirs, then try again.
                    tracing::debug!(%error, "the agent could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = limit.clone().try_acquire_owned() else {
            tracing::debug!("the agent has {MAX_CONNECTIONS} connections open; closing a new one");
            continue;
        };
        let connection = builder.serve_connection(
            TokioIo::new(WriteDeadline::new(stream, WRITE_TIMEOUT)),
            // The client's address, for the handlers (`ConnectInfo`, as `axum::serve` gives it), added
            // around the router: `Router::layer` would rebuild every route per connection (≈ 1 µs).
            TowerToHyperService::new(Extension(ConnectInfo(peer)).layer(app.clone())),
        );
        connections.spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "an agent connection ended with an error");
            }
            drop(permit);
        });
    }
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drained).await.is_err() {
        connections.abort_all();
    }
}
