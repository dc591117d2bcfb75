//! AuthoritySlot (−6000): the caller's origin must pass the resource's white or black list.
//!
//! An entry without an origin passes at once. Otherwise the first authority rule of the resource (and
//! every regex rule matching its name) must admit the origin: a white list admits only the origins it
//! lists, a black list refuses them. A refusal is a [`BlockKind::Authority`] block carrying the
//! [`AuthorityRule`](super::AuthorityRule).

use std::fmt;
use std::sync::Arc;

use super::manager::AuthorityRules;
use crate::block::{BlockError, BlockKind};
use crate::rules::RuleType;
use crate::slot::{Hooks, Slot, SlotContext};

/// Sentinel's `AuthoritySlot`.
pub(crate) struct AuthoritySlot {
    rules: Arc<AuthorityRules>,
}

impl fmt::Debug for AuthoritySlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthoritySlot").finish_non_exhaustive()
    }
}

impl AuthoritySlot {
    /// The slot enforcing `rules` (an engine's own).
    pub(crate) fn new(rules: Arc<AuthorityRules>) -> Self {
        AuthoritySlot { rules }
    }
}

impl Slot for AuthoritySlot {
    #[inline]
    fn entry(&self, cx: &mut SlotContext<'_>) -> Result<(), BlockError> {
        // The chain calls it only while authority rules are in force (the built-in path and the
        // generic loop both check the engine's in-force mask first).
        if cx.origin.is_empty() {
            return Ok(());
        }
        let snapshot = self.rules.snapshot();
        if snapshot.is_empty() {
            return Ok(());
        }
        let refusing = snapshot
            .rules_of(cx.resource)
            .iter()
            .find(|listing| !listing.admits(cx.origin));
        match refusing {
            None => Ok(()),
            Some(listing) => Err(cx
                .block(BlockKind::Authority)
                .with_rule(crate::thread_copies::rule(&listing.rule))),
        }
    }

    fn hooks(&self) -> Hooks {
        Hooks::ENTRY
    }

    fn rule_type(&self) -> Option<RuleType> {
        Some(RuleType::Authority)
    }
}
