//! Tokens fetched from a token server (Floodgate's or Sentinel's Java one) over its protocol.
//!
//! A fetch asks for its tokens in one flow request (`acquireCount` = the tokens wanted), or for a
//! hot-parameter rule's value in one param-flow request with that value alone. A server
//! grants all of them or none, so a fetch for several that is BLOCKED asks once more for one: the
//! window may still hold fewer than were asked for. BLOCKED for one token leaves the rule blocked
//! for one bucket of its window. Any other answer (FAIL, which the client also answers when it is
//! not connected or the server is slower than the request timeout; NO_RULE_EXISTS;
//! TOO_MANY_REQUEST) fails the fetch, and the rule is checked locally.

use std::sync::atomic::{AtomicU64, Ordering};

use floodgate_core::cluster::{TokenResult, TokenStatus};
use tokio::runtime::Handle;

use super::fetcher::{FetchError, Fetcher, Grant, WindowTerms};
use super::service::{LeaseConfig, LeasedTokenService};
use crate::client::{ClientConfig, TokenClient};
use crate::protocol::Param;

/// A [`TokenClient`] as a lease's source.
#[derive(Debug)]
pub struct ServerFetcher {
    client: TokenClient,
    calls: AtomicU64,
}

impl ServerFetcher {
    /// The client it asks with.
    pub fn client(&self) -> &TokenClient {
        &self.client
    }

    async fn ask(&self, flow_id: i64, value: Option<&Param>, want: u32) -> TokenResult {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let acquire = i32::try_from(want).unwrap_or(i32::MAX);
        match value {
            None => self.client.request_token(flow_id, acquire, false).await,
            Some(value) => {
                let params = vec![value.clone()];
                self.client
                    .request_param_token(flow_id, acquire, params)
                    .await
            }
        }
    }
}

impl Fetcher for ServerFetcher {
    async fn fetch(
        &self,
        terms: &WindowTerms,
        value: Option<&Param>,
        want: u32,
    ) -> Result<Grant, FetchError> {
        let mut asked = want;
        let mut answer = self.ask(terms.flow_id, value, asked).await;
        if answer.status == TokenStatus::Blocked && asked > 1 {
            asked = 1;
            answer = self.ask(terms.flow_id, value, asked).await;
        }
        let members = self
            .client
            .connected_clients()
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0);
        match answer.status {
            TokenStatus::Ok => Ok(Grant {
                granted: asked,
                remaining: i64::from(answer.remaining),
                free_in_ms: 0,
                members,
            }),
            TokenStatus::Blocked => Ok(Grant {
                granted: 0,
                remaining: 0,
                free_in_ms: terms.bucket_ms(),
                members,
            }),
            other => Err(FetchError::Refused(other)),
        }
    }

    fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

/// Cluster flow control through a token server, as the engine's token service: Sentinel's token
/// client role, with tokens fetched ahead so that no entry waits for the server.
pub type RemoteTokenService = LeasedTokenService<ServerFetcher>;

impl LeasedTokenService<ServerFetcher> {
    /// Starts a token client for `config` on `runtime` and the service over it. It does not wait
    /// for the connection: until the server answers, cluster rules are checked locally.
    pub fn connect(config: ClientConfig, lease: LeaseConfig, runtime: &Handle) -> Self {
        let client = {
            let _entered = runtime.enter();
            TokenClient::start(config)
        };
        let fetcher = ServerFetcher {
            client,
            calls: AtomicU64::new(0),
        };
        Self::start_with(fetcher, lease, runtime)
    }
}
