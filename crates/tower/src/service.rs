//! The service: enters the resource, waits out a queueing wait, calls the inner service.

use std::fmt;
use std::task::{Context, Poll};

use floodgate_core::{EntryBuilder, EntryType};
use http::{Request, Response};
use tower_service::Service;

use crate::future::{ResponseFuture, call_traced};
use crate::layer::{FloodgateLayer, Naming};
use crate::resource::{NameParts, RequestHead};
use crate::response::BlockResponse;

/// A service guarded by Floodgate (made by [`FloodgateLayer`]).
#[derive(Clone)]
pub struct Floodgate<S, R> {
    pub(crate) inner: S,
    pub(crate) layer: FloodgateLayer<R>,
}

impl<S: fmt::Debug, R> fmt::Debug for Floodgate<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FloodgateService")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<S, R> Floodgate<S, R> {
    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The wrapped service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, R, ReqB, ResB> Service<Request<ReqB>> for Floodgate<S, R>
where
    S: Service<Request<ReqB>, Response = Response<ResB>> + Clone,
    R: BlockResponse<ResB>,
{
    type Response = Response<ResB>;
    type Error = S::Error;
    type Future = ResponseFuture<S, Request<ReqB>, ResB>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqB>) -> Self::Future {
        let head = RequestHead {
            method: request.method(),
            uri: request.uri(),
            headers: request.headers(),
            extensions: request.extensions(),
        };
        let origin = self
            .layer
            .shared
            .origin_header
            .as_ref()
            .and_then(|h| request.headers().get(h))
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let fg = &self.layer.shared.fg;
        // A request is a root: the worker thread's current entry belongs to another task.
        let enter = |entry: EntryBuilder<'_>| {
            entry
                .in_default_context()
                .origin(origin)
                .entry_type(EntryType::In)
                .enter_owned()
        };
        let admitted = match &self.layer.shared.naming {
            Naming::Route(routes) => {
                routes.with(fg, NameParts::of(&head), |key| enter(fg.entry_for(key)))
            }
            Naming::Custom(name) => enter(fg.entry(&name(&head))),
        };
        match admitted {
            Ok(entry) => {
                let wait = entry.waited();
                if wait.is_zero() || !self.layer.shared.fg.clock().sleeps() {
                    let entry = Some(entry);
                    let future = call_traced(&mut self.inner, request, &entry);
                    return ResponseFuture::admitted(entry, future);
                }
                // The request reaches the service only once the wait is over: a service may act when
                // called, before its future is polled. The service made ready goes with the request,
                // and a clone stays for the next call (tower's clone-and-swap).
                let clone = self.inner.clone();
                let ready = std::mem::replace(&mut self.inner, clone);
                ResponseFuture::waiting(entry, ready, request, wait)
            }
            Err(block) => ResponseFuture::blocked(self.layer.on_block.respond(&block)),
        }
    }
}
