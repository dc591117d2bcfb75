//! What every rule kind shares: the [`RuleType`] names, the [`RuleError`] that names the bad rule and
//! field, and the readers that turn Sentinel's JSON into typed rules.
//!
//! Rules are loaded as a whole list. Any invalid rule rejects the list (the error names its index, the
//! field and why) and the rules in force stay in force; Sentinel silently drops invalid rules instead.
//! A list holds at most 100 regex rules, each pattern at most 512 bytes (and 256 KiB compiled): a
//! longer list is refused before any pattern is compiled. A resource (or a pattern) takes at most 100
//! rules of a type: each entry checks them all.
//! The JSON is Sentinel's (fastjson-compatible): camelCase names, `20` and `20.0` both accepted for
//! numbers, nulls omitted on output. A threshold is required (`count` of flow, degrade and
//! hot-parameter rules: read as 0 it blocked everything; at least one dimension of a system rule). A
//! field that rules of the kind do not have (none of the fields of Sentinel's rule class) is ignored
//! and reported as a [`RuleWarning`] of the [`RuleLoad`], naming the rule and the field: a misspelt
//! optional field (`warmUpPeriodSecs`) does not refuse a list a newer Sentinel might send, but is not
//! silent either. The rule types implement `Serialize` and `Deserialize` with the same reader and
//! writer (a rule read alone names the field at fault, and logs its unknown fields at `warn`).

mod checks;
mod cluster;
mod fields;
mod json;
mod kind;
mod pattern;
mod published;
mod reload;
mod resource_table;
mod rule_index;
mod serde_impl;
mod setters;
mod warning;

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

pub use warning::{RuleLoad, RuleWarning};

pub(crate) use checks::{check_origin_len, check_rule_head, check_rules_per_resource};
pub(crate) use cluster::{ClusterFields, cluster_config, cluster_fields_of};
pub(crate) use fields::Fields;
#[cfg(test)]
pub(crate) use json::parse_rule_array;
pub(crate) use json::{
    Coded, RuleFields, RuleItem, object, parse_rule_items, regex_flags, rule_head, rule_items,
    to_json_array,
};
pub(crate) use kind::{
    AnyRuleSet, Build, CheckedList, CompiledRules, NamedResources, Rule, RuleKind, RuleSet,
    SentinelRule, log_warnings, pattern, read_rule, read_rules,
};
#[cfg(test)]
pub(crate) use pattern::whole_name_regex;
pub(crate) use pattern::{check_pattern, check_regex_count, compile_patterns};
pub(crate) use published::Published;
pub(crate) use reload::{
    FieldHasher, Firsts, Float, HashRule, HoldsRule, RuleHasher, Similar, carry_over_rules,
    compared_fields, first_of_each,
};
pub(crate) use resource_table::ResourceTable;
pub(crate) use rule_index::{RuleIndex, applicable, push_matching};
pub(crate) use serde_impl::{
    deserialize_rule, deserialize_rules, serde_via_fields, serialize_rule,
};
pub(crate) use setters::rule_setters;

/// The kinds of rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleType {
    /// Flow rules: QPS and concurrency limits, warm-up, rate limiting.
    Flow,
    /// Degrade rules: circuit breakers.
    Degrade,
    /// System rules: adaptive protection of the whole process.
    System,
    /// Authority rules: white and black lists of callers.
    Authority,
    /// Hot-parameter rules.
    ParamFlow,
}

impl RuleType {
    /// This type's bit in an engine's mask of the rule types in force (see `RuleSet::in_force_in`).
    #[inline]
    pub(crate) const fn bit(self) -> u32 {
        1 << self as u32
    }

    /// Every rule type.
    pub const ALL: [RuleType; 5] = [
        RuleType::Flow,
        RuleType::Degrade,
        RuleType::System,
        RuleType::Authority,
        RuleType::ParamFlow,
    ];

    /// The type's tag in a signature of the regex rules matching a resource (see `rules::push_matching`).
    pub(crate) const fn tag(self) -> char {
        match self {
            RuleType::Flow => 'f',
            RuleType::Degrade => 'd',
            RuleType::System => 's',
            RuleType::Authority => 'a',
            RuleType::ParamFlow => 'p',
        }
    }

    /// Sentinel's name for the type (the `type` parameter of `getRules`/`setRules`).
    pub fn as_str(self) -> &'static str {
        match self {
            RuleType::Flow => "flow",
            RuleType::Degrade => "degrade",
            RuleType::System => "system",
            RuleType::Authority => "authority",
            RuleType::ParamFlow => "paramFlow",
        }
    }
}

impl fmt::Display for RuleType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name was not a rule type.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown rule type `{0}`")]
pub struct UnknownRuleType(pub String);

impl FromStr for RuleType {
    type Err = UnknownRuleType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "flow" => Ok(RuleType::Flow),
            "degrade" => Ok(RuleType::Degrade),
            "system" => Ok(RuleType::System),
            "authority" => Ok(RuleType::Authority),
            "paramFlow" | "param-flow" | "param_flow" | "paramflow" => Ok(RuleType::ParamFlow),
            other => Err(UnknownRuleType(other.to_owned())),
        }
    }
}

/// A rule list was rejected; the rules in force did not change.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RuleError {
    /// The text was not JSON.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// The JSON was not an array of rules.
    #[error("rules must be a JSON array of objects")]
    NotAnArray,
    /// A rule was invalid.
    #[error("rule {index}: `{field}` {reason}")]
    Invalid {
        /// The rule's position in the list (from 0).
        index: usize,
        /// The field at fault (`clusterConfig.flowId` for a nested one).
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// Several rules were invalid: each one's error, in list order, so that no invalid rule is dropped
    /// silently (Sentinel drops them one by one and answers `success`:
    /// `every_invalid_rule_of_a_list_is_named`).
    #[error("{}", join(.0))]
    Several(Vec<RuleError>),
}

fn join(errors: &[RuleError]) -> String {
    let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    texts.join("; ")
}

/// `errors` as one error, in rule order (one: that error; more: [`RuleError::Several`]), or `Ok` when
/// there is none.
pub(crate) fn no_errors(mut errors: Vec<RuleError>) -> Result<(), RuleError> {
    errors.sort_by_key(|e| match e {
        RuleError::Invalid { index, .. } => *index,
        _ => 0,
    });
    all_or_errors(errors.into_iter().map(Err::<(), _>)).map(drop)
}

/// Every item of `results`, or the error of every failed one (one: that error; more:
/// [`RuleError::Several`]).
pub(crate) fn all_or_errors<T>(
    results: impl IntoIterator<Item = Result<T, RuleError>>,
) -> Result<Vec<T>, RuleError> {
    let mut oks = Vec::new();
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(value) => oks.push(value),
            Err(RuleError::Several(more)) => errors.extend(more),
            Err(error) => errors.push(error),
        }
    }
    match errors.len() {
        0 => Ok(oks),
        1 => Err(errors.remove(0)),
        _ => Err(RuleError::Several(errors)),
    }
}

impl RuleError {
    /// An invalid-rule error.
    pub(crate) fn invalid(index: usize, field: &str, reason: impl Into<String>) -> Self {
        RuleError::Invalid {
            index,
            field: field.to_owned(),
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_types_round_trip_their_names() {
        for t in RuleType::ALL {
            assert_eq!(t.as_str().parse::<RuleType>(), Ok(t));
        }
        assert!("nope".parse::<RuleType>().is_err());
    }

    #[test]
    fn errors_name_the_rule_and_field() {
        let e = RuleError::invalid(2, "count", "must be ≥ 0, got -1");
        assert_eq!(e.to_string(), "rule 2: `count` must be ≥ 0, got -1");
    }
}
