//! An app's rules: validated as the engine validates them, changed as a whole list per type (commit,
//! then push), with a history that can be rolled back.

mod book;
mod change;
mod document;
mod flow_ids;
mod rollback;
mod validate;

pub use book::RuleBook;
pub use change::{Change, ChangeOutcome};
pub use document::{RuleDocument, import_document};
pub use rollback::roll_back;
pub use validate::{RuleValidator, canonical_rule, field_errors};

use std::str::FromStr;

use floodgate_core::RuleType;

use crate::error::AppError;

/// The rule type named by a URL segment (`flow`, `degrade`, `system`, `authority`, `paramFlow` or
/// `param-flow`).
pub fn rule_type(segment: &str) -> Result<RuleType, AppError> {
    RuleType::from_str(segment).map_err(|_| {
        AppError::field(
            "type",
            "must be flow, degrade, system, authority or paramFlow",
        )
    })
}
