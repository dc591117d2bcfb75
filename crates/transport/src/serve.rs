//! The agent's HTTP server: hyper's HTTP/1 connections, under limits a client cannot get around, and
//! an admission policy that keeps a dashboard's calls getting through while strangers hold
//! connections open.
//!
//! `axum::serve` runs hyper without a timer, so a client that sends half a request keeps its
//! connection (a file descriptor of the application the agent lives in) for as long as it likes. A
//! plain cap on connections is no better: whoever holds the places (64 connections sending half a
//! request line, renewed every few seconds) shuts everyone else out, token or not, since the token
//! comes with the request. So connections are told apart by what they have shown, and peers by
//! address: a peer is an IPv4 address or an IPv6 /56 (what one site is commonly given, so that one
//! holder of a /56 cannot pass for 256 peers; two hosts of one /56 count as one).
//!
//! * **Unproven**: a connection none of whose requests has been let in yet, the state every
//!   connection starts in. Its first request must have been let in within [`FIRST_REQUEST_TIMEOUT`]
//!   (3 s, Sentinel's own socket timeout; the dashboards send a request whole at once), or it is
//!   closed. Three classes of peer each have [`MAX_UNPROVEN`] (64) places, and never take one
//!   another's: the peers let in by address
//!   ([`tokenless_from`](crate::AgentBuilder::tokenless_from)), the other loopback peers, and the
//!   rest. A newcomer that finds its class full makes room rather than being refused: the **oldest**
//!   unproven connection of the peer holding the most of them (ties: the peer whose oldest is older)
//!   is closed — a stranger holds each place for a moment only, and a dashboard whose request comes
//!   whole is served as soon as it is read (each connection accepted gets its turn to read before
//!   the next is accepted). When the peer holding the most is the newcomer's own, its oldest goes
//!   whatever its age. Another peer's connection is spared if, after the exchange, that peer would
//!   hold fewer than the newcomer's (a peer hogging the class gives way at once) and either it is
//!   younger than [`MIN_AGE`] (500 ms: time to read a request sent at once) or the newcomer's peer
//!   itself lost a connection to another peer's newcomer within the last [`MIN_AGE`]; the
//!   newcomer's peer then gives way from its own, or, holding none, the newcomer is closed at once.
//!   Without this, strangers on many addresses renewing at once each connection closed to make
//!   room would close one another's in a loop, one each accept, and a dashboard's fresh connection
//!   with them, within milliseconds.
//! * **Established**: a connection whose request was let in: its token checked in a header (at
//!   once, before its body is read), or the request read whole and let in — its token in a body of
//!   at most 4 KiB, its peer one let in by address, or no token configured. Headers alone prove
//!   nothing: anyone can send them. There are [`MAX_ESTABLISHED`] (64) places, which strangers
//!   cannot take, and one peer holds at most [`MAX_ESTABLISHED_PER_PEER`] (32) of them. A promotion
//!   that finds no place for it waits, in arrival order, in its connection's own task (the accept
//!   loop goes on accepting), for at most [`PROMOTION_TIMEOUT`] (2 s); an idle keep-alive
//!   connection (no request in progress, its answers written out) is told to close for it, one for
//!   each waiting promotion, and closes gracefully (an answer it started meanwhile is finished
//!   first). If none frees in time its request is refused, not run: 503 with `Retry-After: 1`, and
//!   its connection closed. An established connection is never closed to make room for unproven
//!   ones, and may keep its connection alive for further requests, each of whose headers must
//!   arrive within [`HEADER_TIMEOUT`] (10 s).
//! * A request that is not let in (a wrong or missing token, a web page's request, a malformed
//!   one, …) is answered and its connection closed (`Connection: close`).
//! * A newcomer that finds no place to make (every unproven place of its class promoting, or spared)
//!   is closed at once. The listening socket's backlog is [`BACKLOG`] (1024) connections, which
//!   wait there for their turn to be accepted.
//!
//! So at most 3 × 64 unproven and 64 established connections, 256 file descriptors, are open at
//! once, on the command port and the Prometheus port together (they share the places).
//!
//! What the policy cannot do: strangers on at least as many addresses as a class has places, each
//! renewing its connection within [`MIN_AGE`], keep every place of that class young, and newcomers
//! from other addresses are closed at once for as long as they keep it up (closing them is what
//! spares the connections already placed). That delays any dashboard of the class, token or not:
//! the token proves a connection at its headers, so that it cannot be displaced once they are
//! read, but it needs a place first. A dashboard let in by address has a class of its own, which
//! only strangers on its own addresses can fill. And without a token, anyone who can send a whole
//! request is let in: strangers on two addresses can hold every established place (busy with
//! half-sent bodies, renewed every 10 s), and a dashboard's promotion is refused until they stop.
//! An established keep-alive connection a dashboard already holds is affected by neither.
//!
//! A write of an answer blocked for [`WRITE_TIMEOUT`] (a client that does not read) closes its
//! connection, and a stop waits at most [`SHUTDOWN_GRACE`] for requests in progress before it
//! closes the rest. Bodies have their own deadline where they are read (the command handler).
//! Requests carry their client's address as an `axum::extract::ConnectInfo<SocketAddr>`, and their
//! connection's `Ticket`, which the handler proves when it lets a request in.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, header};
use hyper::body::{Bytes, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tower_service::Service;

use crate::admission::{Admission, InFlight, Ticket};
#[cfg(doc)]
use crate::admission::{
    MAX_ESTABLISHED, MAX_ESTABLISHED_PER_PEER, MAX_UNPROVEN, MIN_AGE, PROMOTION_TIMEOUT,
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

/// Serves `app` on `listener`, its connections admitted by `admission`, until `stop` completes.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    admission: Arc<Admission>,
    stop: impl Future<Output = ()>,
) {
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
        let Some(ticket) = admission.admit(peer.ip(), Instant::now()) else {
            // No place to make for it: closed at once, and the next one accepted.
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
/// [`FIRST_REQUEST_TIMEOUT`]. An unproven connection closed to make room is dropped at once; an
/// established one told to give its place up is shut down gracefully: the answer in progress, if
/// one started meanwhile, is written out first.
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
    let io = Flushes {
        io: WriteDeadline::new(io, WRITE_TIMEOUT),
        ticket: ticket.clone(),
    };
    let served = builder.serve_connection(TokioIo::new(io), service);
    let mut served = pin!(served);
    let mut deadline = pin!(tokio::time::sleep(FIRST_REQUEST_TIMEOUT));
    let mut deadline_armed = true;
    let mut closed = pin!(close.notified());
    let mut closing = false;
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
            () = closed.as_mut(), if !closing => {
                if !ticket.is_established() {
                    break;
                }
                served.as_mut().graceful_shutdown();
                closing = true;
            }
        }
    }
}

/// A connection's IO that tells its ticket when hyper flushed it: hyper flushes the IO only once
/// its own write buffer is empty, so what it was handed so far has been written.
struct Flushes<I> {
    io: I,
    ticket: Arc<Ticket>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Flushes<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Flushes<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.io).poll_flush(cx);
        if let Poll::Ready(Ok(())) = poll {
            self.ticket.flushed();
        }
        poll
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
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

/// An answer's body; the request counts as in flight until hyper has taken all of it.
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

    /// The size of `/big`'s answer: many times the pipe's buffer.
    const BIG: usize = 1 << 20;

    /// A router that lets in requests to `/in` and `/big` (a large answer) and no others.
    fn app() -> Router {
        Router::new().fallback(
            |Extension(ticket): Extension<Arc<Ticket>>, uri: axum::http::Uri| async move {
                if uri.path() == "/in" || uri.path() == "/big" {
                    ticket.prove().await.unwrap();
                }
                if uri.path() == "/big" {
                    return "b".repeat(BIG - "answer".len()) + "answer";
                }
                "answer".to_owned()
            },
        )
    }

    /// A connection served on one end of a pipe; the other end, and the task serving it.
    fn connect() -> (DuplexStream, tokio::task::JoinHandle<()>) {
        let (client, task, _ticket) = connect_with_ticket();
        (client, task)
    }

    /// [`connect`], and the connection's ticket.
    fn connect_with_ticket() -> (DuplexStream, tokio::task::JoinHandle<()>, Arc<Ticket>) {
        let (client, server) = tokio::io::duplex(4096);
        let admission = Admission::new(Vec::new());
        let ticket = admission
            .admit("127.0.0.1".parse().unwrap(), Instant::now())
            .unwrap();
        let peer = SocketAddr::from(([127, 0, 0, 1], 40000));
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT);
        let task = tokio::spawn(connection(server, peer, app(), ticket.clone(), builder));
        (client, task, ticket)
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

    /// An established connection told to give its place up while it wrote an answer was dropped,
    /// cutting the answer off: it finishes the answer, then closes.
    #[tokio::test(start_paused = true)]
    async fn an_established_connection_told_to_close_finishes_its_answer() {
        let (mut client, task, ticket) = connect_with_ticket();
        client
            .write_all(b"GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
            .await
            .unwrap();
        // The answer is being written (it is far larger than the pipe's buffer).
        let mut started = [0; 64];
        client.read_exact(&mut started).await.unwrap();
        assert!(started.starts_with(b"HTTP/1.1 200"));
        assert!(ticket.is_established());
        ticket.close_signal().notify_one();
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).await.unwrap();
        let answer = [&started[..], &rest].concat();
        assert!(answer.ends_with(b"answer"), "cut off");
        let body = answer.split(|&b| b == b'\n').next_back().unwrap();
        assert_eq!(body.len(), BIG);
        task.await.unwrap();
    }

    /// An unproven connection closed to make room is dropped at once.
    #[tokio::test(start_paused = true)]
    async fn an_unproven_connection_told_to_close_is_dropped() {
        let (mut client, task, ticket) = connect_with_ticket();
        client.write_all(b"GET /in HTTP/1.1\r\nHo").await.unwrap();
        ticket.close_signal().notify_one();
        task.await.unwrap();
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
    }
}
