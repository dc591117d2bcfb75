//! What a JSON load reports besides its error: the parts of the list it ignored.

use std::fmt;

/// Something a rule list held that the load ignored. Warnings accompany a load that succeeded (see
/// [`RuleLoad`]); a refused list's warnings are only logged.
///
/// ```
/// use floodgate_core::{Floodgate, RuleType, RuleWarning};
///
/// let fg = Floodgate::default();
/// let load = fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":5,"burst":9}]"#)?;
/// assert_eq!(load.warnings()[0].to_string(), "rule 0: unknown field `burst` (ignored)");
/// assert!(matches!(&load.warnings()[0], RuleWarning::UnknownField { index: 0, field, .. } if field == "burst"));
/// # Ok::<(), floodgate_core::RuleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuleWarning {
    /// A field that rules of the kind do not have (none of Sentinel's fields for it), ignored: most
    /// likely a misspelt one.
    #[non_exhaustive]
    UnknownField {
        /// The rule's position in the list (from 0).
        index: usize,
        /// The field's path: `clusterConfig.flowID` for a nested one, `paramFlowItemList[2].value`
        /// for one in a list.
        field: String,
    },
}

impl RuleWarning {
    /// A warning about the unknown field `field` of rule `index`.
    pub(crate) fn unknown_field(index: usize, field: String) -> Self {
        RuleWarning::UnknownField { index, field }
    }
}

impl fmt::Display for RuleWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleWarning::UnknownField { index, field } => {
                write!(f, "rule {index}: unknown field `{field}` (ignored)")
            }
        }
    }
}

/// The outcome of a rule list loaded from JSON: the list is in force, and these are what it held that
/// the load ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuleLoad {
    warnings: Vec<RuleWarning>,
}

impl RuleLoad {
    pub(crate) fn new(warnings: Vec<RuleWarning>) -> Self {
        RuleLoad { warnings }
    }

    /// What the list held that was ignored, in list order (empty for a list every field of which was
    /// read).
    pub fn warnings(&self) -> &[RuleWarning] {
        &self.warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_name_the_rule_and_field() {
        let w = RuleWarning::unknown_field(3, "clusterConfig.flowID".to_owned());
        assert_eq!(
            w.to_string(),
            "rule 3: unknown field `clusterConfig.flowID` (ignored)"
        );
        assert!(RuleLoad::default().warnings().is_empty());
    }
}
