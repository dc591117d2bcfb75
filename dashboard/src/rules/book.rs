//! [`RuleBook`]: the validator and the lock that puts an app's rule changes one after another.

use tokio::sync::Mutex;

use super::RuleValidator;

/// Validates rule changes and applies them one at a time (see [`Change`](super::Change)).
#[derive(Debug, Default)]
pub struct RuleBook {
    /// Validates as the engine does.
    pub validator: RuleValidator,
    /// Held while a change reads the current list, validates the new one and commits it, so that two
    /// edits at once cannot lose one another.
    pub(super) changes: Mutex<()>,
}

impl RuleBook {
    /// A rule book with its own validator.
    pub fn new() -> Self {
        RuleBook::default()
    }
}
