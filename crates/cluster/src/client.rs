//! A token client: asks a token server (Floodgate's or Sentinel's Java one) for tokens over
//! Sentinel's protocol.
//!
//! One background task keeps one connection: it connects (at most `connect_timeout`), pings with the
//! client's namespace, then writes requests and routes each answer to its caller by `xid`. A request
//! not answered within `request_timeout` (default 20 ms, Sentinel's) is answered
//! [`TokenStatus::Fail`] for the caller to fall back on, and so is every request while the client is
//! not connected: a caller never waits longer than the timeout. After a failed connection the task
//! waits 2 s × the failures in a row before the next attempt (Sentinel's back-off); after a
//! connection that worked and closed, it reconnects at once.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use floodgate_core::cluster::{TokenResult, TokenStatus};
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::codec::Framed;

use crate::protocol::{
    ClientCodec, Param, Request, RequestBody, Response, ResponseBody, TokenAnswer,
};

/// Where and how a client asks for tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// The token server.
    pub server: SocketAddr,
    /// The namespace the client's rules belong to (by default its application's name).
    pub namespace: String,
    /// How long a request may wait for its answer (default 20 ms).
    pub request_timeout: Duration,
    /// How long a connection attempt may take (default 10 s).
    pub connect_timeout: Duration,
    /// The back-off after a failed attempt, times the failures in a row (default 2 s).
    pub reconnect_delay: Duration,
}

impl ClientConfig {
    /// Sentinel's defaults for `server` and `namespace`.
    pub fn new(server: SocketAddr, namespace: impl Into<String>) -> Self {
        ClientConfig {
            server,
            namespace: namespace.into(),
            request_timeout: Duration::from_millis(20),
            connect_timeout: Duration::from_secs(10),
            reconnect_delay: Duration::from_secs(2),
        }
    }
}

/// A client's connection state (Sentinel's `clientState` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientState {
    /// No client running (0): what a process without one reports; a running client is never in it.
    Off,
    /// Connecting (1).
    Pending,
    /// Connected and pinged (2).
    Started,
}

impl ClientState {
    /// Sentinel's code.
    pub const fn code(self) -> u8 {
        match self {
            ClientState::Off => 0,
            ClientState::Pending => 1,
            ClientState::Started => 2,
        }
    }
}

/// Requests queued for the connection past this are answered FAIL at once.
const QUEUE: usize = 4096;

#[derive(Debug)]
struct Shared {
    state: watch::Sender<ClientState>,
    next_xid: AtomicI32,
    /// The clients of the namespace the server last reported (`-1`: not yet).
    connected: AtomicI32,
    waiting: Mutex<HashMap<i32, oneshot::Sender<Response>>>,
}

impl Shared {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<i32, oneshot::Sender<Response>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_state(&self, state: ClientState) {
        self.state.send_replace(state);
    }
}

/// A running token client. Dropping it closes its connection.
#[derive(Debug)]
pub struct TokenClient {
    config: ClientConfig,
    shared: Arc<Shared>,
    outgoing: mpsc::Sender<Request>,
    task: JoinHandle<()>,
}

impl Drop for TokenClient {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TokenClient {
    /// Starts the client on the current tokio runtime; it connects in the background.
    pub fn start(config: ClientConfig) -> TokenClient {
        let shared = Arc::new(Shared {
            state: watch::Sender::new(ClientState::Pending),
            next_xid: AtomicI32::new(1),
            connected: AtomicI32::new(-1),
            waiting: Mutex::new(HashMap::new()),
        });
        let (outgoing, queue) = mpsc::channel(QUEUE);
        let task = tokio::spawn(run(config.clone(), shared.clone(), queue));
        TokenClient {
            config,
            shared,
            outgoing,
            task,
        }
    }

    /// The client's settings.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Whether it is connected.
    pub fn state(&self) -> ClientState {
        *self.shared.state.borrow()
    }

    /// Waits until the client is connected and has pinged.
    pub async fn started(&self) {
        let mut state = self.shared.state.subscribe();
        let _ = state.wait_for(|s| *s == ClientState::Started).await;
    }

    /// The clients of its namespace the server reported at the last ping, if it answered one.
    pub fn connected_clients(&self) -> Option<i32> {
        Some(self.shared.connected.load(Ordering::Relaxed)).filter(|n| *n >= 0)
    }

    /// Asks for `acquire` tokens of the flow rule `flow_id`.
    pub async fn request_token(
        &self,
        flow_id: i64,
        acquire: i32,
        prioritized: bool,
    ) -> TokenResult {
        self.ask(RequestBody::Flow {
            flow_id,
            count: acquire,
            prioritized,
        })
        .await
    }

    /// Asks for `acquire` tokens of the hot-parameter rule `flow_id` for each of `params` (as many as
    /// fit in one frame: Java's client drops the rest too).
    pub async fn request_param_token(
        &self,
        flow_id: i64,
        acquire: i32,
        params: Vec<Param>,
    ) -> TokenResult {
        let (body, dropped) = RequestBody::param_flow(flow_id, acquire, params);
        if dropped > 0 {
            tracing::warn!(target: "floodgate::cluster", flow_id, dropped, "parameters past one frame not sent");
        }
        self.ask(body).await
    }

    async fn ask(&self, body: RequestBody) -> TokenResult {
        if self.state() != ClientState::Started {
            return TokenResult::of(TokenStatus::Fail);
        }
        let xid = next_xid(&self.shared.next_xid);
        let (answer, answered) = oneshot::channel();
        self.shared.waiting().insert(xid, answer);
        if self.outgoing.try_send(Request { xid, body }).is_err() {
            self.shared.waiting().remove(&xid);
            return TokenResult::of(TokenStatus::Fail);
        }
        match tokio::time::timeout(self.config.request_timeout, answered).await {
            Ok(Ok(response)) => result_of(response),
            // The connection closed before the answer came.
            Ok(Err(_)) => TokenResult::of(TokenStatus::Fail),
            Err(_) => {
                self.shared.waiting().remove(&xid);
                TokenResult::of(TokenStatus::Fail)
            }
        }
    }
}

/// The next request id: positive, never 0 (the ping's).
fn next_xid(counter: &AtomicI32) -> i32 {
    loop {
        let xid = counter.fetch_add(1, Ordering::Relaxed) & i32::MAX;
        if xid != 0 {
            return xid;
        }
    }
}

fn result_of(response: Response) -> TokenResult {
    let answer = match response.body {
        ResponseBody::Flow(answer) | ResponseBody::ParamFlow(answer) => answer,
        ResponseBody::Ping { .. } | ResponseBody::Unsupported { .. } => TokenAnswer::NONE,
    };
    TokenResult {
        status: response.status,
        remaining: answer.remaining,
        wait_ms: answer.wait_ms,
    }
}

async fn run(config: ClientConfig, shared: Arc<Shared>, mut queue: mpsc::Receiver<Request>) {
    let mut failures: u32 = 0;
    loop {
        shared.set_state(ClientState::Pending);
        match connect(&config).await {
            Ok(framed) => {
                failures = 0;
                if let Err(error) = serve(framed, &shared, &mut queue).await {
                    tracing::info!(target: "floodgate::cluster", server = %config.server, %error, "token connection closed");
                }
                // Callers still waiting learn at once that no answer will come.
                shared.waiting().clear();
            }
            Err(error) => {
                failures = failures.saturating_add(1);
                tracing::warn!(target: "floodgate::cluster", server = %config.server, %error, failures, "token server unreachable");
                drain(&mut queue);
                tokio::time::sleep(config.reconnect_delay * failures).await;
            }
        }
    }
}

/// Connects and pings with the namespace.
async fn connect(config: &ClientConfig) -> io::Result<Framed<TcpStream, ClientCodec>> {
    let stream = tokio::time::timeout(config.connect_timeout, TcpStream::connect(config.server))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
    stream.set_nodelay(true)?;
    let mut framed = Framed::new(stream, ClientCodec);
    framed
        .send(Request {
            xid: 0,
            body: RequestBody::Ping {
                namespace: config.namespace.clone(),
            },
        })
        .await
        .map_err(io::Error::other)?;
    Ok(framed)
}

/// Requests queued while there was no connection were answered FAIL by their timeout: drop them.
fn drain(queue: &mut mpsc::Receiver<Request>) {
    while queue.try_recv().is_ok() {}
}

/// Writes requests and routes answers until the connection fails.
async fn serve(
    mut framed: Framed<TcpStream, ClientCodec>,
    shared: &Shared,
    queue: &mut mpsc::Receiver<Request>,
) -> Result<(), crate::protocol::ProtocolError> {
    drain(queue);
    shared.set_state(ClientState::Started);
    loop {
        tokio::select! {
            request = queue.recv() => {
                let Some(request) = request else { return Ok(()) };
                framed.send(request).await?;
            }
            response = framed.next() => {
                let Some(response) = response else { return Ok(()) };
                let response = response?;
                if response.xid == 0 {
                    if let ResponseBody::Ping { connected: Some(n) } = response.body {
                        shared.connected.store(n, Ordering::Relaxed);
                    }
                    continue;
                }
                if let Some(waiter) = shared.waiting().remove(&response.xid) {
                    let _ = waiter.send(response);
                }
            }
        }
    }
}
