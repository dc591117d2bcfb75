//! The authority rules in force: an immutable snapshot behind an atomic pointer, rebuilt on load.
//!
//! A load validates the whole list first (any invalid rule rejects it and changes nothing). A resource
//! (or a regular expression) takes one rule: a list with two rules for it that admit different origins
//! is refused, naming the second, so that a black list pushed after a white one is not silently ignored
//! (Sentinel keeps the first and drops the rest with only a log line: `a_resource_takes_one_rule`,
//! `conflicts_are_named_beside_parse_errors`); rules that admit the same origins (the
//! same rule twice, another `id`, the tokens reordered) are one rule, the first. An entry must pass the
//! exact rule of its resource and
//! every regex rule whose expression matches the whole resource name; which rules apply to a resource is
//! worked out on its first entry and kept in the snapshot by resource id.

use std::sync::Arc;

use regex::Regex;

use super::listing::Listing;
use super::rule::{AuthorityRule, AuthorityStrategy};
use crate::keyed_hash::{KeyedMap, keyed_map};
use crate::registry::Resource;
use crate::rules::{
    Build, CheckedList, CompiledRules, NamedResources, ResourceTable, RuleError, RuleKind,
    SentinelRule, applicable, no_errors, push_matching,
};

/// An immutable set of authority rules.
#[derive(Debug, Default)]
pub(crate) struct AuthoritySnapshot {
    in_order: Vec<Arc<AuthorityRule>>,
    /// Keyed by resource names, which rule lists choose.
    exact: KeyedMap<Box<str>, Arc<Listing>>,
    regex: Vec<(Regex, Arc<Listing>)>,
    /// Resource id → the exact rule and the matching regex rules, in check order.
    by_resource: ResourceTable<Box<[Arc<Listing>]>>,
}

impl AuthoritySnapshot {
    pub(crate) fn is_empty(&self) -> bool {
        self.in_order.is_empty()
    }

    /// The rules that apply to `resource` (resolved on its first entry under this snapshot, then found
    /// by its id).
    #[inline]
    pub(crate) fn rules_of(&self, resource: &Resource) -> &[Arc<Listing>] {
        self.by_resource
            .get_or_init(resource.id, || self.resolve(&resource.name))
            .map_or(&[], |rules| &**rules)
    }

    #[cold]
    fn resolve(&self, resource: &str) -> Box<[Arc<Listing>]> {
        applicable(self.exact.get(resource).cloned(), &self.regex, resource).into_boxed_slice()
    }
}

impl NamedResources for AuthoritySnapshot {
    fn names(&self, resource: &str) -> bool {
        self.exact.contains_key(resource)
    }

    fn push_matching(&self, resource: &str, kind: char, signature: &mut String) {
        push_matching(&self.regex, resource, kind, signature);
    }
}

impl CompiledRules for AuthoritySnapshot {
    type Rule = AuthorityRule;

    fn rules(&self) -> impl Iterator<Item = &AuthorityRule> {
        self.in_order.iter().map(|r| &**r)
    }
}

/// The rules of a list (with their positions) that name a resource an earlier, different rule names: a
/// resource takes one rule (the same rule twice is one rule, and so are two rules that admit the same
/// origins: another `id`, the tokens in another order; the first is kept). The first rule's decision
/// is worked out once, however many rules follow it (each compare sorted its tokens afresh).
pub(crate) fn conflicts<'r>(
    rules: impl IntoIterator<Item = (usize, &'r AuthorityRule)>,
) -> Vec<RuleError> {
    type Decision<'r> = (AuthorityStrategy, Vec<&'r str>);
    let mut first: KeyedMap<(bool, &str), (usize, &AuthorityRule, Option<Decision<'r>>)> =
        keyed_map();
    let mut errors = Vec::new();
    for (index, rule) in rules {
        let (earlier, kept, decision) = first
            .entry((rule.regex, rule.resource.as_str()))
            .or_insert((index, rule, None));
        if *earlier == index {
            continue;
        }
        let kept_decision = decision.get_or_insert_with(|| kept.decision());
        if *kept_decision != rule.decision() {
            errors.push(RuleError::invalid(
                index,
                "resource",
                format!("already has an authority rule (rule {earlier}); a resource takes one"),
            ));
        }
    }
    errors
}

/// The authority rules: an engine's [`RuleSet`](crate::rules::RuleSet) of them holds an [`AuthoritySnapshot`].
#[derive(Debug, Default)]
pub(crate) struct AuthorityKind;

/// A checked list of authority rules: every rule is valid, and no two rules of one resource admit
/// different origins.
#[derive(Debug)]
pub(crate) struct OneRuleEach(Vec<AuthorityRule>);

impl CheckedList<AuthorityRule> for OneRuleEach {
    fn check(rules: Vec<AuthorityRule>) -> Result<Self, RuleError> {
        let checked: Vec<Result<(), RuleError>> = rules
            .iter()
            .enumerate()
            .map(|(index, rule)| rule.check(index))
            .collect();
        // Conflicts among the valid rules only, as the JSON path (which validates while parsing) does.
        let valid = rules
            .iter()
            .enumerate()
            .filter(|(index, _)| checked[*index].is_ok());
        let mut errors = conflicts(valid);
        errors.extend(checked.into_iter().filter_map(Result::err));
        no_errors(errors)?;
        Ok(OneRuleEach(rules))
    }

    fn rules(&self) -> impl Iterator<Item = &AuthorityRule> {
        self.0.iter()
    }

    /// The first rule of each pattern is the one in force (the others decide alike).
    fn patterns(&self) -> impl Iterator<Item = (usize, Option<&str>)> {
        let mut seen: KeyedMap<&str, ()> = keyed_map();
        self.0.iter().enumerate().map(move |(index, rule)| {
            let first = rule.regex && seen.insert(&rule.resource, ()).is_none();
            (index, first.then_some(rule.resource.as_str()))
        })
    }
}

impl RuleKind for AuthorityKind {
    type Checked = OneRuleEach;
    type Compiled = AuthoritySnapshot;

    /// Unlike the other kinds, the conflicts among the rules that did parse are named too when some
    /// did not: a resource takes one authority rule, and the list is refused for both reasons at once.
    fn parse_list(
        parsed: Vec<Result<AuthorityRule, RuleError>>,
    ) -> Result<Vec<AuthorityRule>, RuleError> {
        if parsed.iter().all(Result::is_ok) {
            return Ok(parsed.into_iter().filter_map(Result::ok).collect());
        }
        let ok = parsed
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((i, r.as_ref().ok()?)));
        let mut errors = conflicts(ok);
        errors.extend(parsed.into_iter().filter_map(Result::err));
        // Not empty (a rule failed), so this is the error.
        no_errors(errors).map(|()| Vec::new())
    }

    fn build(&self, load: Build<'_, Self>) -> AuthoritySnapshot {
        let OneRuleEach(rules) = load.checked;
        let mut exact: KeyedMap<Box<str>, Arc<Listing>> = keyed_map();
        let mut regex: Vec<(Regex, Arc<Listing>)> = Vec::new();
        let mut in_order = Vec::with_capacity(rules.len());
        for (rule, pattern) in rules.into_iter().zip(load.patterns) {
            let rule = Arc::new(rule);
            in_order.push(rule.clone());
            match pattern {
                Some(re) => regex.push((re, Arc::new(Listing::new(rule)))),
                None if !rule.regex => {
                    exact
                        .entry(Box::from(rule.resource.as_str()))
                        .or_insert_with(|| Arc::new(Listing::new(rule)));
                }
                None => {}
            }
        }
        AuthoritySnapshot {
            in_order,
            exact,
            regex,
            by_resource: ResourceTable::default(),
        }
    }

    fn named(compiled: &AuthoritySnapshot) -> Option<&dyn NamedResources> {
        Some(compiled)
    }

    /// Every origin a white or black list names.
    fn origins(compiled: &AuthoritySnapshot) -> impl Iterator<Item = &str> {
        compiled.rules().flat_map(|r| r.limit_app.split(','))
    }
}

/// The authority rules in force, as the engine and the authority slot share them.
pub(crate) type AuthorityRules = crate::rules::RuleSet<AuthorityKind>;
