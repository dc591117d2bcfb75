//! The agent's HTTP server: hyper's HTTP/1 connections, under limits a client cannot get around, and
//! an admission policy that keeps a dashboard's calls getting through while strangers hold
//! connections open.
//!
//! `axum::serve` runs hyper without a timer, so a client that sends half a request keeps its
//! connection (a file descriptor of the application the agent lives in) for as long as it likes. A
//! plain cap on connections is no better: whoever holds the places (64 connections sending half a
//! request line, renewed every few seconds) shuts everyone else out, token or not, since the token
//! comes with the request. So connections are told apart by what they have shown:
//!
//! * **Unproven**: a connection none of whose requests has been let in yet, the state every
//!   connection starts in. Its first request must have been let in within [`FIRST_REQUEST_TIMEOUT`]
//!   (3 s, Sentinel's own socket timeout; the dashboards send a request whole at once), or it is
//!   closed. Loopback peers and the others each have [`MAX_UNPROVEN`] (32) places, so that remote
//!   strangers never displace a local dashboard's connections nor local ones a remote dashboard's.
//!   When a newcomer finds its class full, the **oldest** unproven connection of the peer holding
//!   the most of them (an IPv4 address, an IPv6 /64) is closed to make room, rather than the
//!   newcomer refused: a stranger who holds places holds each for a moment only, and a dashboard
//!   whose request comes whole is served as soon as it is read (each connection accepted gets its
//!   turn to read before the next is accepted).
//! * **Established**: a connection whose request was let in: its token checked in a header (at
//!   once, before its body is read), or the request read whole and let in — its token in a body of
//!   at most 4 KiB, its peer one that needs none
//!   ([`tokenless_from`](crate::AgentBuilder::tokenless_from)), or no token configured. Headers
//!   alone prove nothing: anyone can send them. There are [`MAX_ESTABLISHED`] (64) places, which
//!   strangers cannot take, and one peer holds at most [`MAX_ESTABLISHED_PER_PEER`] (32) of them. A
//!   promotion that finds no place for it waits, in arrival order, in its connection's own task (the
//!   accept loop goes on accepting), for at most [`PROMOTION_TIMEOUT`] (2 s); an idle keep-alive
//!   connection is told to close for it (one for each waiting promotion). If none frees in time
//!   its request is refused, not run: 503 with `Retry-After: 1`, and its connection closed. An
//!   established connection may keep its connection alive for further requests, each of whose
//!   headers must arrive within [`HEADER_TIMEOUT`] (10 s).
//! * A request that is not let in (a wrong or missing token, a web page's request, a malformed
//!   one, …) is answered and its connection closed (`Connection: close`).
//! * A newcomer that finds every place of its class promoting is closed at once. The listening
//!   socket's backlog is [`BACKLOG`] (1024) connections, which wait there for their turn to be
//!   accepted.
//!
//! Without a token, anyone who can send a whole request is let in: strangers on two addresses can
//! hold every established place (busy with half-sent bodies, renewed every 10 s), and a dashboard's
//! promotion is then refused until they stop. With a token only its holders, and the peers let in
//! by address, get established places.
//!
//! So at most 32 + 32 unproven and 64 established connections are open at once. A write of an
//! answer blocked for [`WRITE_TIMEOUT`] (a client that does not read) closes its connection, and a
//! stop waits at most [`SHUTDOWN_GRACE`] for requests in progress before it closes the rest. Bodies
//! have their own deadline where they are read (the command handler). Requests carry their client's
//! address as an `axum::extract::ConnectInfo<SocketAddr>`, and their connection's
//! `Ticket`, which the handler proves when it lets a request in.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, header};
use hyper::body::{Bytes, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tower_service::Service;

use crate::admission::{Admission, InFlight, Ticket};
#[cfg(doc)]
use crate::admission::{
    MAX_ESTABLISHED, MAX_ESTABLISHED_PER_PEER, MAX_UNPROVEN, PROMOTION_TIMEOUT,
};
use crate::write_deadline::WriteDeadline;

/// How long a connection may take until one of its requests is let in.
pub(crate) const FIRST_REQUEST_TIMEOUT: Duration = Duration::from_secs(3);
/// How long an established connection may take to send a further request's headers.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an answer's write may stay blocked on a client that does not read.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a stop waits for requests in progress.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);
/// The listening socket's backlog: connections the kernel keeps until the agent accepts them.
pub(crate) const BACKLOG: u32 = 1024;

/// Serves `app` on `listener` until `stop` completes.
pub(crate) async fn serve(listener: TcpListener, app: Router, stop: impl Future<Output = ()>) {
    let admission = Admission::new();
    let mut connections = JoinSet::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    let mut stop = pin!(stop);
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
        let Some(ticket) = admission.admit(peer.ip()) else {
            // Its class's places are all promoting: closed at once, and the next one accepted.
            tracing::debug!(%peer, "no place for a connection; closing it");
            drop(stream);
            continue;
        };
        connections.spawn(connection(
            stream,
            peer,
            app.clone(),
            ticket,
            builder.clone(),
        ));
        // The new connection reads what it was sent before the next one is accepted: a burst of
        // newcomers cannot displace it before it had the chance to show its request.
        tokio::task::yield_now().await;
    }
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drained).await.is_err() {
        connections.abort_all();
    }
}

/// Serves one connection until it ends, is closed to make room, or lets no request in within
/// [`FIRST_REQUEST_TIMEOUT`].
pub(crate) async fn connection<I>(
    io: I,
    peer: SocketAddr,
    app: Router,
    ticket: Arc<Ticket>,
    builder: http1::Builder,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let close = ticket.close_signal();
    let service = {
        let ticket = ticket.clone();
        hyper::service::service_fn(move |request| answer(request, peer, app.clone(), &ticket))
    };
    let served =
        builder.serve_connection(TokioIo::new(WriteDeadline::new(io, WRITE_TIMEOUT)), service);
    let mut served = pin!(served);
    let mut deadline = pin!(tokio::time::sleep(FIRST_REQUEST_TIMEOUT));
    let mut deadline_armed = true;
    let mut closed = pin!(close.notified());
    loop {
        tokio::select! {
            result = served.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, "an agent connection ended with an error");
                }
                break;
            }
            () = deadline.as_mut(), if deadline_armed => {
                deadline_armed = false;
                if ticket.is_unproven() {
                    tracing::debug!(%peer, "closing a connection that sent no request in time");
                    break;
                }
            }
            () = closed.as_mut() => break,
        }
    }
}

/// Answers one request through `app`: with its client's address and its connection's ticket, and
/// `Connection: close` unless the handler let it in.
fn answer(
    mut request: Request<Incoming>,
    peer: SocketAddr,
    mut app: Router,
    ticket: &Arc<Ticket>,
) -> impl Future<Output = Result<Response<Answered>, Infallible>> + use<> {
    let in_flight = ticket.begin_request();
    request.extensions_mut().insert(ConnectInfo(peer));
    request.extensions_mut().insert(ticket.clone());
    let ticket = ticket.clone();
    async move {
        let mut response = match app.call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        if !ticket.granted() {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        Ok(response.map(|body| Answered {
            body,
            _in_flight: in_flight,
        }))
    }
}

/// An answer's body; the request counts as in flight until hyper is done with it.
#[derive(Debug)]
pub(crate) struct Answered {
    body: Body,
    _in_flight: InFlight,
}

impl hyper::body::Body for Answered {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Extension;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    /// A router that lets in requests to `/in` and no others.
    fn app() -> Router {
        Router::new().fallback(
            |Extension(ticket): Extension<Arc<Ticket>>, uri: axum::http::Uri| async move {
                if uri.path() == "/in" {
                    ticket.prove().await.unwrap();
                }
                "answer"
            },
        )
    }

    /// A connection served on one end of a pipe; the other end, and the task serving it.
    fn connect() -> (DuplexStream, tokio::task::JoinHandle<()>) {
        let (client, server) = tokio::io::duplex(4096);
        let admission = Admission::new();
        let ticket = admission.admit("127.0.0.1".parse().unwrap()).unwrap();
        let peer = SocketAddr::from(([127, 0, 0, 1], 40000));
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT);
        let task = tokio::spawn(connection(server, peer, app(), ticket, builder));
        (client, task)
    }

    /// Reads one whole answer (headers and the 6-byte body).
    async fn read_answer(client: &mut DuplexStream) -> String {
        let mut answer = Vec::new();
        while !answer.ends_with(b"answer") {
            let mut buf = [0; 1024];
            let n = client.read(&mut buf).await.unwrap();
            assert_ne!(
                n,
                0,
                "closed before the answer: {:?}",
                String::from_utf8_lossy(&answer)
            );
            answer.extend_from_slice(&buf[..n]);
        }
        String::from_utf8(answer).unwrap()
    }

    /// A connection that sends half a request is closed at the first-request deadline (paused
    /// time), not at the 10 s header deadline.
    #[tokio::test(start_paused = true)]
    async fn a_half_sent_first_request_is_closed_after_3_s() {
        let (mut client, task) = connect();
        client.write_all(b"GET /in HTTP/1.1\r\nHo").await.unwrap();
        let started = tokio::time::Instant::now();
        task.await.unwrap();
        assert_eq!(started.elapsed(), FIRST_REQUEST_TIMEOUT);
    }

    /// A connection whose request was let in is kept alive past the first-request deadline, until
    /// the header deadline of its next request.
    #[tokio::test(start_paused = true)]
    async fn a_proven_connection_is_kept_alive() {
        let (mut client, task) = connect();
        let started = tokio::time::Instant::now();
        client
            .write_all(b"GET /in HTTP/1.1\r\nHost: a\r\n\r\n")
            .await
            .unwrap();
        let answer = read_answer(&mut client).await;
        assert!(
            !answer.to_ascii_lowercase().contains("connection: close"),
            "{answer}"
        );
        client
            .write_all(b"GET /in HTTP/1.1\r\nHost: a\r\n\r\n")
            .await
            .unwrap();
        read_answer(&mut client).await;
        task.await.unwrap();
        assert!(
            started.elapsed() >= HEADER_TIMEOUT,
            "{:?}",
            started.elapsed()
        );
    }

    /// A request that was not let in is answered, and its connection closed.
    #[tokio::test(start_paused = true)]
    async fn a_request_not_let_in_closes_its_connection() {
        let (mut client, task) = connect();
        let started = tokio::time::Instant::now();
        client
            .write_all(b"GET /out HTTP/1.1\r\nHost: a\r\n\r\n")
            .await
            .unwrap();
        let answer = read_answer(&mut client).await;
        assert!(
            answer.to_ascii_lowercase().contains("connection: close"),
            "{answer}"
        );
        task.await.unwrap();
        assert_eq!(started.elapsed(), Duration::ZERO, "at once");
    }
}
