//! The middleware.

use std::fmt;
use std::sync::Arc;

use floodgate_core::{BlockError, EntryType, Floodgate};
use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next, Result};

use crate::resource::resource_name;

type ResourceFn = Arc<dyn Fn(&Request) -> String + Send + Sync>;

/// Guards outgoing calls (see the [crate docs](crate)).
#[derive(Clone)]
pub struct FloodgateMiddleware {
    fg: Floodgate,
    resource: ResourceFn,
}

impl fmt::Debug for FloodgateMiddleware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FloodgateMiddleware")
            .finish_non_exhaustive()
    }
}

/// The downstream answered with a server error (what is traced into the entry).
#[derive(Debug, thiserror::Error)]
#[error("server error response")]
struct ServerError;

impl FloodgateMiddleware {
    /// A middleware on `fg` with the default resource names.
    pub fn new(fg: Floodgate) -> Self {
        FloodgateMiddleware {
            fg,
            resource: Arc::new(resource_name),
        }
    }

    /// Names resources with `f` instead.
    pub fn resource_fn(mut self, f: impl Fn(&Request) -> String + Send + Sync + 'static) -> Self {
        self.resource = Arc::new(f);
        self
    }
}

#[async_trait::async_trait]
impl Middleware for FloodgateMiddleware {
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> Result<Response> {
        let resource = (self.resource)(&request);
        let entry = self
            .fg
            .entry(&resource)
            .entry_type(EntryType::Out)
            .enter_owned()
            .map_err(reqwest_middleware::Error::middleware)?;
        let wait = entry.waited();
        if !wait.is_zero() && self.fg.clock().sleeps() {
            tokio::time::sleep(wait).await;
        }
        let result = next.run(request, extensions).await;
        match &result {
            Ok(response) if response.status().is_server_error() => entry.trace(&ServerError),
            Ok(_) => {}
            // The error itself, not the wrapper, so that the engine's error filters see its type.
            Err(reqwest_middleware::Error::Reqwest(e)) => entry.trace(e),
            Err(reqwest_middleware::Error::Middleware(e)) => {
                // An inner middleware's block (a nested guard) is not this call failing.
                if e.downcast_ref::<BlockError>().is_none() {
                    let error: &(dyn std::error::Error + Send + Sync + 'static) = e.as_ref();
                    entry.trace_dyn(error);
                }
            }
        }
        drop(entry);
        result
    }
}
