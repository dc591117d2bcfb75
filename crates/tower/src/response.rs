//! What a blocked request gets.

use floodgate_core::{BlockError, BlockKind};
use http::{Response, StatusCode, header};

/// Turns a block into a response.
pub trait BlockResponse<B> {
    /// The response for `block`.
    fn respond(&self, block: &BlockError) -> Response<B>;
}

/// 429 with `Retry-After: 1` for flow and hot-parameter blocks, 503 for circuit breakers, system
/// protection and user slots, 403 for authority; a short plain-text body naming the kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultBlockResponse;

impl DefaultBlockResponse {
    /// The status for a kind of block.
    pub fn status(kind: BlockKind) -> StatusCode {
        match kind {
            BlockKind::Flow | BlockKind::ParamFlow => StatusCode::TOO_MANY_REQUESTS,
            BlockKind::Authority => StatusCode::FORBIDDEN,
            _ => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl<B: From<String>> BlockResponse<B> for DefaultBlockResponse {
    fn respond(&self, block: &BlockError) -> Response<B> {
        let status = Self::status(block.kind());
        let mut builder = Response::builder()
            .status(status)
            .header(header::CONTENT_TYPE, "text/plain; charset=utf-8");
        if status == StatusCode::TOO_MANY_REQUESTS {
            builder = builder.header(header::RETRY_AFTER, "1");
        }
        let body = format!("{}\n", block);
        builder
            .body(B::from(body.clone()))
            .unwrap_or_else(|_| Response::new(B::from(body)))
    }
}

impl<B, F> BlockResponse<B> for F
where
    F: Fn(&BlockError) -> Response<B>,
{
    fn respond(&self, block: &BlockError) -> Response<B> {
        self(block)
    }
}
