//! The token server's listener: Sentinel's token protocol over TCP, answered by a
//! [`LocalTokenService`], with tokens counted as its [`Counting`] says.
//!
//! Each connection is read frame by frame. A ping counts the client (its address) in the namespace it
//! names and is answered with the namespace's client count; a token request is answered by the
//! service; a malformed request gets the answer a Java server gives (see
//! [`MalformedRequest::answer`](crate::protocol::MalformedRequest::answer)) and the connection goes
//! on. A frame too long, a read error or `idle` without a frame closes the connection, and the client
//! leaves its namespace. Past `max_connections` open connections, new ones are closed at once.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::codec::Framed;

use super::counting::Counting;
use super::service::LocalTokenService;
use crate::protocol::{Request, RequestBody, Response, ResponseBody, ServerCodec, TokenAnswer};
use floodgate_core::cluster::{TokenResult, TokenStatus};

/// Sentinel's default token server port.
pub const DEFAULT_PORT: u16 = 18730;

/// How the listener treats connections (Sentinel's `ServerTransportConfig`, plus a cap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportConfig {
    /// How long a connection may stay silent before it is closed (default 600 s).
    pub idle: Duration,
    /// How many connections may be open at once (default 1024).
    pub max_connections: usize,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            idle: Duration::from_secs(600),
            max_connections: 1024,
        }
    }
}

/// A running token server. Dropping it stops accepting and closes its connections.
#[derive(Debug)]
pub struct TokenServer {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    accept: Option<JoinHandle<()>>,
    connections: Arc<AtomicUsize>,
}

impl TokenServer {
    /// Listens on `addr` and serves `service` on the current tokio runtime, counting in process.
    pub async fn bind(
        addr: SocketAddr,
        service: Arc<LocalTokenService>,
        config: TransportConfig,
    ) -> io::Result<TokenServer> {
        Self::bind_counting(addr, service, config, Counting::Local).await
    }

    /// Listens on `addr` and serves `service` on the current tokio runtime, counting as `counting`
    /// says.
    pub async fn bind_counting(
        addr: SocketAddr,
        service: Arc<LocalTokenService>,
        config: TransportConfig,
        counting: Counting,
    ) -> io::Result<TokenServer> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let (stop, stopped) = watch::channel(false);
        let connections = Arc::new(AtomicUsize::new(0));
        let accept = tokio::spawn(accept_loop(
            listener,
            (service, Arc::new(counting)),
            config,
            stopped,
            connections.clone(),
        ));
        Ok(TokenServer {
            local_addr,
            stop,
            accept: Some(accept),
            connections,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// How many connections are open.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// Stops accepting, closes every connection, and waits for the listener to end.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(accept) = self.accept.take() {
            let _ = accept.await;
        }
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(accept) = &self.accept {
            accept.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    (service, counting): (Arc<LocalTokenService>, Arc<Counting>),
    config: TransportConfig,
    mut stopped: watch::Receiver<bool>,
    connections: Arc<AtomicUsize>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.wait_for(|stop| *stop) => return,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors, say: wait a little rather than spin.
                tracing::warn!(target: "floodgate::cluster", %error, "token server accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if connections.fetch_add(1, Ordering::AcqRel) >= config.max_connections {
            connections.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!(target: "floodgate::cluster", %peer, max = config.max_connections, "token server full: connection closed");
            continue;
        }
        let (service, counting, stopped, connections) = (
            service.clone(),
            counting.clone(),
            stopped.clone(),
            connections.clone(),
        );
        tokio::spawn(async move {
            serve_connection(stream, peer, (&service, &counting), config.idle, stopped).await;
            service.disconnect(&peer.to_string());
            connections.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    (service, counting): (&LocalTokenService, &Counting),
    idle: Duration,
    mut stopped: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let address = peer.to_string();
    let mut framed = Framed::new(stream, ServerCodec);
    loop {
        let next = tokio::select! {
            next = tokio::time::timeout(idle, framed.next()) => next,
            _ = stopped.wait_for(|stop| *stop) => return,
        };
        let item = match next {
            Err(_) => {
                tracing::debug!(target: "floodgate::cluster", %peer, "idle token client closed");
                return;
            }
            Ok(None) => return,
            Ok(Some(Err(error))) => {
                tracing::info!(target: "floodgate::cluster", %peer, %error, "token connection closed");
                return;
            }
            Ok(Some(Ok(item))) => item,
        };
        let answer = match item {
            Ok(request) => Some(answer(service, counting, &address, request).await),
            Err(malformed) => {
                tracing::debug!(target: "floodgate::cluster", %peer, error = %malformed.error, "malformed token request");
                malformed.answer()
            }
        };
        if let Some(answer) = answer {
            if framed.send(answer).await.is_err() {
                return;
            }
        }
    }
}

/// The service's answer to `request` from the client at `address`.
async fn answer(
    service: &LocalTokenService,
    counting: &Counting,
    address: &str,
    request: Request,
) -> Response {
    let xid = request.xid;
    let token = |result: TokenResult| {
        (
            result.status,
            TokenAnswer {
                remaining: result.remaining,
                wait_ms: result.wait_ms,
            },
        )
    };
    let (status, body) = match request.body {
        RequestBody::Ping { namespace } => {
            let connected = service.connect(&namespace, address);
            (
                TokenStatus::Ok,
                ResponseBody::Ping {
                    connected: Some(i32::try_from(connected).unwrap_or(i32::MAX)),
                },
            )
        }
        RequestBody::Flow {
            flow_id,
            count,
            prioritized,
        } => {
            let result = counting
                .request_token(service, address, flow_id, count, prioritized)
                .await;
            let (status, answer) = token(result);
            (status, ResponseBody::Flow(answer))
        }
        RequestBody::ParamFlow {
            flow_id,
            count,
            params,
        } => {
            let result = counting
                .request_param_token(service, address, flow_id, count, &params)
                .await;
            let (status, answer) = token(result);
            (status, ResponseBody::ParamFlow(answer))
        }
    };
    Response { xid, status, body }
}
