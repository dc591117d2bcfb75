//! The layer: configuration shared by the services it wraps.

use std::fmt;
use std::sync::Arc;

use floodgate_core::Floodgate;
use http::HeaderName;
use tower_layer::Layer;

use crate::resource::RequestHead;
use crate::response::DefaultBlockResponse;
use crate::route_names::RouteNames;
use crate::service;

/// How a layer names a request's resource.
#[derive(Clone)]
pub(crate) enum Naming {
    /// The default name, kept per route.
    Route(Arc<RouteNames>),
    /// The user's function, called per request.
    Custom(Arc<dyn Fn(&RequestHead<'_>) -> String + Send + Sync>),
}

/// Guards the services it wraps (see the [crate docs](crate)).
#[derive(Clone)]
pub struct FloodgateLayer<R = DefaultBlockResponse> {
    pub(crate) fg: Floodgate,
    pub(crate) naming: Naming,
    pub(crate) origin_header: Option<HeaderName>,
    pub(crate) on_block: R,
}

impl fmt::Debug for FloodgateLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FloodgateLayer")
            .field("origin_header", &self.origin_header)
            .finish_non_exhaustive()
    }
}

impl FloodgateLayer {
    /// A layer on `fg` with the default resource names and block responses.
    pub fn new(fg: Floodgate) -> Self {
        FloodgateLayer {
            fg,
            naming: Naming::Route(Arc::default()),
            origin_header: None,
            on_block: DefaultBlockResponse,
        }
    }
}

impl<R> FloodgateLayer<R> {
    /// Names resources with `f` instead of the route template.
    pub fn resource_fn(
        mut self,
        f: impl Fn(&RequestHead<'_>) -> String + Send + Sync + 'static,
    ) -> Self {
        self.naming = Naming::Custom(Arc::new(f));
        self
    }

    /// Takes the caller's origin from header `name` (absent or invalid: no origin).
    pub fn origin_header(mut self, name: &'static str) -> Self {
        self.origin_header = Some(HeaderName::from_static(name));
        self
    }

    /// Answers blocked requests with `on_block` (a [`BlockResponse`](crate::BlockResponse), e.g. a
    /// closure `|block: &BlockError| -> Response<B>`).
    pub fn on_block<R2>(self, on_block: R2) -> FloodgateLayer<R2> {
        FloodgateLayer {
            fg: self.fg,
            naming: self.naming,
            origin_header: self.origin_header,
            on_block,
        }
    }
}

impl<S, R: Clone> Layer<S> for FloodgateLayer<R> {
    type Service = service::Floodgate<S, R>;

    fn layer(&self, inner: S) -> Self::Service {
        service::Floodgate {
            inner,
            layer: self.clone(),
        }
    }
}
