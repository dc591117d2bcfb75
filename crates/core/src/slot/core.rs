//! What every slot reads of the engine it runs in: the registry of resources and nodes, the clock, the
//! block log.

use std::sync::Arc;

use crate::clock::{CachedClock, Clock};
use crate::cluster::TokenServiceCell;
use crate::registry::Registry;

use super::BlockLog;

/// The part of an engine's state that slots see (the rules they enforce, each rule-kind slot holds).
pub(crate) struct EngineCore {
    pub(crate) id: u64,
    pub(crate) clock: Arc<dyn Clock>,
    /// `clock` itself when it is a [`CachedClock`] (the default): read without a dynamic call.
    pub(crate) cached_clock: Option<CachedClock>,
    pub(crate) registry: Registry,
    pub(crate) block_log: BlockLog,
    /// The token service rules in cluster mode ask.
    pub(crate) token_service: TokenServiceCell,
}

impl std::fmt::Debug for EngineCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineCore")
            .field("id", &self.id)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl EngineCore {
    /// The engine's time, epoch ns (the hot path's clock read).
    #[inline]
    pub(crate) fn now_nanos(&self) -> u64 {
        match &self.cached_clock {
            Some(clock) => clock.now_nanos(),
            None => self.clock.now_nanos(),
        }
    }
}
