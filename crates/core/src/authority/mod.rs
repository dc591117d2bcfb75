//! Authority: white and black lists of callers (origins) per resource, and the slot that checks them.

mod listing;
mod manager;
mod rule;
mod slot;

pub(crate) use manager::AuthorityKind;
pub use rule::{AuthorityRule, AuthorityStrategy};
pub(crate) use slot::AuthoritySlot;
