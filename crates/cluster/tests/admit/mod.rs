//! Entering until a cluster rule's window is full, for tests of leased token services.

use floodgate_cluster::lease::{Fetcher, LeasedTokenService};
use floodgate_core::cluster::TokenRequest;

/// Makes the entries `enter` makes (true: admitted) until the source grants no more, fetching
/// first (a service that has not heard from its source leaves the rule to its local check) and
/// whenever the lease runs dry; returns the entries admitted.
pub(crate) async fn admit_all_with<F: Fetcher>(
    service: &LeasedTokenService<F>,
    request: &TokenRequest<'_>,
    enter: impl Fn() -> bool,
) -> u32 {
    service.prefetch(request).await.unwrap();
    let mut admitted = 0;
    let mut window_full = false;
    loop {
        if enter() {
            admitted += 1;
        } else if window_full {
            // The lease is empty and the source granted nothing at the last fetch.
            return admitted;
        } else {
            // A fetch the refused entry started may have come back with tokens before this one.
            window_full = service.prefetch(request).await.unwrap().granted == 0;
        }
    }
}
