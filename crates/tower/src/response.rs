//! What a blocked request gets.

use floodgate_core::{BlockError, BlockKind, DegradeRule, FlowGrade, ParamFlowRule};
use http::{HeaderValue, Response, StatusCode, header};

/// Turns a block into a response.
pub trait BlockResponse<B> {
    /// The response for `block`.
    fn respond(&self, block: &BlockError) -> Response<B>;
}

/// 429 for flow and hot-parameter blocks, 503 for circuit breakers, system protection and user slots,
/// 403 for authority; a short plain-text body naming the kind; and a `Retry-After` header where the
/// rule tells when a retry may pass (see [`retry_after`](Self::retry_after)).
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

    /// The seconds a client should wait before retrying, where the blocking rule tells:
    ///
    /// * flow: 1 (QPS is counted per second, and calls in flight end);
    /// * hot parameters: the rule's `durationInSec` for its token bucket (a value's bucket refills only
    ///   once that window has passed), else 1;
    /// * circuit breakers: the rule's `timeWindow` (the breaker lets a probe through after it at the
    ///   latest);
    /// * authority, system protection and user slots: none (waiting does not help, or nothing says how
    ///   long).
    pub fn retry_after(block: &BlockError) -> Option<u64> {
        match block.kind() {
            BlockKind::Flow => Some(1),
            BlockKind::ParamFlow => Some(match block.rule_as::<ParamFlowRule>() {
                // A token bucket: any QPS behaviour but pacing, since Sentinel's parameter checker
                // treats behaviours 1 and 3 as the default; they too get the rule's window
                // (`retry_after_follows_the_blocking_rule`).
                Some(rule) if rule.grade == FlowGrade::Qps && !rule.paces() => {
                    rule.duration_in_sec.max(1)
                }
                _ => 1,
            }),
            BlockKind::Degrade => block
                .rule_as::<DegradeRule>()
                .map(|rule| u64::from(rule.time_window.max(1))),
            _ => None,
        }
    }
}

impl<B: From<String>> BlockResponse<B> for DefaultBlockResponse {
    fn respond(&self, block: &BlockError) -> Response<B> {
        let status = Self::status(block.kind());
        let mut builder = Response::builder()
            .status(status)
            .header(header::CONTENT_TYPE, "text/plain; charset=utf-8");
        if let Some(seconds) = Self::retry_after(block) {
            builder = builder.header(header::RETRY_AFTER, HeaderValue::from(seconds));
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
