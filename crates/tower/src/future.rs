//! The response future: owns the entry until the response is ready (or the future is dropped).

use std::fmt;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use floodgate_core::OwnedEntry;
use http::Response;
use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tower_service::Service;

/// The inner service failed (what is traced into the entry; the service's own error is returned).
#[derive(Debug, thiserror::Error)]
#[error("service error")]
struct ServiceFailed;

/// The inner service panicked while producing the response (traced, then the panic goes on).
#[derive(Debug, thiserror::Error)]
#[error("service panicked")]
pub(crate) struct Panicked;

/// `service.call(request)`; a panic in the call itself (not only in its future) is the request failing
/// too: traced into `entry` as the panic unwinds (the entry then exits where it is dropped). A drop
/// guard rather than `catch_unwind`.
// `catch_unwind` moves the request and the future through its closure: ≈ 50 ns per request in
// `benches/layer.rs`.
#[inline]
pub(crate) fn call_traced<S: Service<Req>, Req>(
    service: &mut S,
    request: Req,
    entry: &Option<OwnedEntry>,
) -> S::Future {
    struct TraceUnwind<'a>(&'a Option<OwnedEntry>);
    impl Drop for TraceUnwind<'_> {
        fn drop(&mut self) {
            if let Some(entry) = self.0 {
                entry.trace(&Panicked);
            }
        }
    }
    let unwinding = TraceUnwind(entry);
    let future = service.call(request);
    std::mem::forget(unwinding);
    future
}

/// Whether a gRPC response carries, in its headers, a status that is the server's failure: UNKNOWN,
/// DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE or DATA_LOSS (the codes gRPC maps from and to
/// HTTP 5xx; a client's mistake, such as INVALID_ARGUMENT or NOT_FOUND, is not). gRPC answers an error
/// with HTTP 200 and the status in a trailers-only response, whose headers hold it; a status sent in
/// trailers after a streamed body is past the point where the entry exits, and is not seen.
fn grpc_server_error(headers: &http::HeaderMap) -> bool {
    headers
        .get("grpc-status")
        .is_some_and(|code| matches!(code.as_bytes(), b"2" | b"4" | b"12" | b"13" | b"14" | b"15"))
}

/// Marks a response a Floodgate layer made for a block: a layer outside it does not count the 503 as
/// its service's failure (a route's open breaker must not open the whole service's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockedResponse;

/// The response was a server error (5xx).
#[derive(Debug, thiserror::Error)]
#[error("server error response")]
struct ServerError;

pin_project! {
    /// The future of a guarded service's response.
    pub struct ResponseFuture<S, Req, B>
    where
        S: Service<Req>,
    {
        #[pin]
        state: State<S, Req, B>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<S, Req, B>
    where
        S: Service<Req>,
    {
        /// Admitted after a queueing wait: the request reaches the service once the wait is over.
        Waiting {
            entry: Option<OwnedEntry>,
            // Boxed: waits are rare, and a timer, a service and a request inline would make every
            // response future larger.
            sleep: Pin<Box<Sleep>>,
            call: Option<Box<(S, Req)>>,
        },
        Admitted {
            entry: Option<OwnedEntry>,
            #[pin]
            inner: S::Future,
        },
        Blocked {
            response: Option<Response<B>>,
        },
    }
}

impl<S: Service<Req>, Req, B> fmt::Debug for ResponseFuture<S, Req, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl<S: Service<Req>, Req, B> ResponseFuture<S, Req, B> {
    pub(crate) fn admitted(entry: Option<OwnedEntry>, inner: S::Future) -> Self {
        ResponseFuture {
            state: State::Admitted { entry, inner },
        }
    }

    /// Calls `service` (made ready) with `request` once `wait` is over.
    pub(crate) fn waiting(entry: OwnedEntry, service: S, request: Req, wait: Duration) -> Self {
        ResponseFuture {
            state: State::Waiting {
                entry: Some(entry),
                sleep: Box::pin(tokio::time::sleep(wait)),
                call: Some(Box::new((service, request))),
            },
        }
    }

    pub(crate) fn blocked(mut response: Response<B>) -> Self {
        response.extensions_mut().insert(BlockedResponse);
        ResponseFuture {
            state: State::Blocked {
                response: Some(response),
            },
        }
    }
}

impl<S, Req, B, E> Future for ResponseFuture<S, Req, B>
where
    S: Service<Req, Response = Response<B>, Error = E>,
{
    type Output = Result<Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        if let StateProj::Waiting { entry, sleep, call } = state.as_mut().project() {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if let Some(call) = call.take() {
                let (mut service, request) = *call;
                let inner = call_traced(&mut service, request, entry);
                let entry = entry.take();
                state.set(State::Admitted { entry, inner });
            }
        }
        match state.project() {
            StateProj::Blocked { response } => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                None => Poll::Pending,
            },
            StateProj::Waiting { .. } => Poll::Pending,
            StateProj::Admitted { entry, inner } => {
                // A panic is the request failing: traced (a 500 to the client, if a layer outside
                // catches it), then it goes on, and unwinding drops the entry.
                let polled = panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx)));
                let output = match polled {
                    Ok(Poll::Ready(output)) => output,
                    Ok(Poll::Pending) => return Poll::Pending,
                    Err(payload) => {
                        if let Some(entry) = entry.take() {
                            entry.trace(&Panicked);
                        }
                        panic::resume_unwind(payload);
                    }
                };
                if let Some(entry) = entry.take() {
                    match &output {
                        Ok(response)
                            if (response.status().is_server_error()
                                || grpc_server_error(response.headers()))
                                && response.extensions().get::<BlockedResponse>().is_none() =>
                        {
                            entry.trace(&ServerError)
                        }
                        Ok(_) => {}
                        Err(_) => entry.trace(&ServiceFailed),
                    }
                    drop(entry);
                }
                Poll::Ready(output)
            }
        }
    }
}
