//! (stub) Rules.

/// Validates rules.
#[derive(Debug, Default)]
pub struct RuleValidator {}

impl RuleValidator {
    /// A validator.
    pub fn new() -> Self {
        RuleValidator {}
    }
}
