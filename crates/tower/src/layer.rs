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

/// What a layer and the services it makes share, behind one `Arc`: axum applies a route layer and
/// clones the service for every request, and each of those then costs one reference count for all of
/// it. (The block response stays inline, so a layer is `Send` whenever its block response is.)
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) fg: Floodgate,
    pub(crate) naming: Naming,
    pub(crate) origin_header: Option<HeaderName>,
}

/// Guards the services it wraps (see the [crate docs](crate)).
#[derive(Clone)]
pub struct FloodgateLayer<R = DefaultBlockResponse> {
    pub(crate) shared: Arc<Shared>,
    pub(crate) on_block: R,
}

impl<R> fmt::Debug for FloodgateLayer<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FloodgateLayer")
            .field("origin_header", &self.shared.origin_header)
            .finish_non_exhaustive()
    }
}

impl FloodgateLayer {
    /// A layer on `fg` with the default resource names and block responses.
    pub fn new(fg: Floodgate) -> Self {
        FloodgateLayer {
            shared: Arc::new(Shared {
                fg,
                naming: Naming::Route(Arc::default()),
                origin_header: None,
            }),
            on_block: DefaultBlockResponse,
        }
    }
}

impl<R> FloodgateLayer<R> {
    /// Changes the shared configuration while building (a layer cloned meanwhile keeps its own).
    fn edit(mut self, change: impl FnOnce(&mut Shared)) -> Self {
        change(Arc::make_mut(&mut self.shared));
        self
    }

    /// Names resources with `f` instead of the route template.
    pub fn resource_fn(
        self,
        f: impl Fn(&RequestHead<'_>) -> String + Send + Sync + 'static,
    ) -> Self {
        self.edit(|s| s.naming = Naming::Custom(Arc::new(f)))
    }

    /// Takes the caller's origin from header `name` (absent or invalid: no origin; longer than
    /// [`MAX_ORIGIN_LEN`](floodgate_core::MAX_ORIGIN_LEN): an origin no rule names, counted with the
    /// origins past the engine's cap). The client writes it: authority white lists and per-origin rules
    /// on it trust the client, or a proxy that sets it. A `HeaderName`, so that a name cannot be invalid
    /// here: `HeaderName::from_static("x-caller")` (lowercase), or
    /// `HeaderName::from_bytes(b"X-Caller")?` for a name from configuration.
    pub fn origin_header(self, name: HeaderName) -> Self {
        self.edit(|s| s.origin_header = Some(name))
    }

    /// Answers blocked requests with `on_block` (a [`BlockResponse`](crate::BlockResponse), e.g. a
    /// closure `|block: &BlockError| -> Response<B>`).
    pub fn on_block<R2>(self, on_block: R2) -> FloodgateLayer<R2> {
        FloodgateLayer {
            shared: self.shared,
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
