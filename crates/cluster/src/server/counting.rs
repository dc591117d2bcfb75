//! Where a token server counts its rules' tokens: in this process, or in a Redis that several
//! token servers share.
//!
//! Counted in Redis, a request first passes the same checks as in process (a bad request, a flow id
//! with no rule, the namespace's `max_allowed_qps`), then takes its tokens from the rule's window
//! in Redis, all or none: several servers on one Redis grant one limit, so a client that loses
//! its server reconnects to another and the limit holds (the failover a single Sentinel token
//! server lacks). An average-local rule counts the clients that asked within the member
//! time-to-live, across every server. Redis failing or slower than its request timeout is answered
//! FAIL, for the client to fall back on. Prioritized requests do not borrow from the next window.

#[cfg(feature = "redis")]
use std::sync::Arc;

use floodgate_core::cluster::TokenResult;
#[cfg(feature = "redis")]
use floodgate_core::cluster::TokenStatus;

use super::service::LocalTokenService;
use crate::protocol::Param;

/// Where a [`TokenServer`](super::TokenServer) counts tokens.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Counting {
    /// In this process, by its [`LocalTokenService`] (the default).
    #[default]
    Local,
    /// In Redis, shared with every server on the same Redis and key prefix.
    #[cfg(feature = "redis")]
    Redis(Arc<crate::redis::RedisCounter>),
}

impl Counting {
    /// The answer to a flow request of the client at `client`.
    #[cfg_attr(not(feature = "redis"), allow(unused_variables))]
    pub(crate) async fn request_token(
        &self,
        service: &LocalTokenService,
        client: &str,
        flow_id: i64,
        acquire: i32,
        prioritized: bool,
    ) -> TokenResult {
        match self {
            Counting::Local => service.request_token(flow_id, acquire, prioritized),
            #[cfg(feature = "redis")]
            Counting::Redis(counter) => {
                let terms = match service.flow_window(flow_id, acquire) {
                    Ok(terms) => terms,
                    Err(answer) => return answer,
                };
                let want = acquire.unsigned_abs();
                let answer = granted(counter.acquire_all(&terms, client, want).await, want);
                if matches!(answer.status, TokenStatus::Ok | TokenStatus::Blocked) {
                    service.record_flow(flow_id, acquire, answer.status == TokenStatus::Ok);
                }
                answer
            }
        }
    }

    /// The answer to a hot-parameter request of the client at `client`.
    #[cfg_attr(not(feature = "redis"), allow(unused_variables))]
    pub(crate) async fn request_param_token(
        &self,
        service: &LocalTokenService,
        client: &str,
        flow_id: i64,
        acquire: i32,
        params: &[Param],
    ) -> TokenResult {
        match self {
            Counting::Local => service.request_param_token(flow_id, acquire, params),
            #[cfg(feature = "redis")]
            Counting::Redis(counter) => {
                let (terms, values) = match service.param_windows(flow_id, acquire, params) {
                    Ok(windows) => windows,
                    Err(answer) => return answer,
                };
                let want = acquire.unsigned_abs();
                let mut answer = granted(
                    counter.acquire_values(&terms, client, &values, want).await,
                    want,
                );
                if values.len() > 1 && answer.status == TokenStatus::Ok {
                    answer.remaining = -1;
                }
                answer
            }
        }
    }
}

/// Redis's grant as a token answer: OK with what is left, BLOCKED, or FAIL when Redis failed.
#[cfg(feature = "redis")]
fn granted(grant: Result<crate::lease::Grant, crate::lease::FetchError>, want: u32) -> TokenResult {
    match grant {
        Ok(grant) if grant.granted >= want => TokenResult {
            status: TokenStatus::Ok,
            remaining: i32::try_from(grant.remaining).unwrap_or(i32::MAX),
            wait_ms: 0,
        },
        Ok(_) => TokenResult::of(TokenStatus::Blocked),
        Err(error) => {
            tracing::debug!(target: "floodgate::cluster", %error, "counting tokens in Redis failed");
            TokenResult::of(TokenStatus::Fail)
        }
    }
}
