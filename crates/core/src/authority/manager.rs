//! The authority rules in force: an immutable snapshot behind an atomic pointer, rebuilt on load.
//!
//! A load validates the whole list first (any invalid rule rejects it and changes nothing). A resource
//! (or a regular expression) takes one rule: a list with two rules for it that admit different origins
//! is refused, naming the second (Sentinel kept the first and ignored the rest with only a log line, so
//! a black list pushed after a white one did nothing: RM-01); rules that admit the same origins (the
//! same rule twice, another `id`, the tokens reordered) are one rule, the first. An entry must pass the
//! exact rule of its resource and
//! every regex rule whose expression matches the whole resource name; which rules apply to a resource is
//! worked out on its first entry and kept in the snapshot by resource id.

use std::sync::{Arc, Mutex};

use regex::Regex;

use super::listing::Listing;
use super::rule::{AuthorityRule, AuthorityStrategy};
use crate::keyed_hash::{KeyedMap, keyed_map};
use crate::registry::Resource;
use crate::rules::{
    Published, ResourceTable, RuleError, applicable, check_regex_count, check_rules_per_resource,
    compile_patterns, no_errors, push_matching,
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

    /// Whether some rule names `resource` exactly.
    pub(crate) fn names(&self, resource: &str) -> bool {
        self.exact.contains_key(resource)
    }

    /// Appends the regex rules matching `resource` to `signature` (see `rules::push_matching`).
    pub(crate) fn push_matching_regex(&self, resource: &str, signature: &mut String) {
        push_matching(&self.regex, resource, 'a', signature);
    }

    /// The rules in load order (repeated rules included).
    pub(crate) fn rules(&self) -> impl Iterator<Item = &AuthorityRule> {
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

/// The engine's authority rules.
#[derive(Debug, Default)]
pub(crate) struct AuthorityRules {
    snapshot: Published<AuthoritySnapshot>,
    load_lock: Mutex<()>,
}

impl AuthorityRules {
    /// Whether any authority rule is in force.
    #[inline]
    pub(crate) fn in_force(&self) -> bool {
        self.snapshot.in_force()
    }

    /// The rules in force.
    #[inline]
    pub(crate) fn snapshot(&self) -> arc_swap::Guard<Arc<AuthoritySnapshot>> {
        self.snapshot.load()
    }

    /// Validates `rules` and puts them in force; on error nothing changes.
    pub(crate) fn load(&self, rules: Vec<AuthorityRule>) -> Result<(), RuleError> {
        check_regex_count(rules.iter().map(|r| r.regex))?;
        check_rules_per_resource(rules.iter().map(|r| (r.resource.as_str(), r.regex)))?;
        let checked: Vec<Result<(), RuleError>> = rules
            .iter()
            .enumerate()
            .map(|(index, rule)| rule.validate(index))
            .collect();
        // Conflicts among the valid rules only, as the JSON path (which validates while parsing) does.
        let valid = rules
            .iter()
            .enumerate()
            .filter(|(index, _)| checked[*index].is_ok());
        let mut errors = conflicts(valid);
        errors.extend(checked.into_iter().filter_map(Result::err));
        no_errors(errors)?;
        // The first rule of each pattern is the one in force (the others decide alike).
        let mut patterns_seen: KeyedMap<&str, ()> = keyed_map();
        let patterns = compile_patterns(rules.iter().enumerate().map(|(index, rule)| {
            let first = rule.regex && patterns_seen.insert(&rule.resource, ()).is_none();
            (index, first.then_some(rule.resource.as_str()))
        }))?;
        let mut exact: KeyedMap<Box<str>, Arc<Listing>> = keyed_map();
        let mut regex: Vec<(Regex, Arc<Listing>)> = Vec::new();
        let mut in_order = Vec::with_capacity(rules.len());
        for (rule, pattern) in rules.into_iter().zip(patterns) {
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
        let _guard = self.load_lock.lock().unwrap_or_else(|e| e.into_inner());
        let in_force = !in_order.is_empty();
        self.snapshot.store(
            Arc::new(AuthoritySnapshot {
                in_order,
                exact,
                regex,
                by_resource: ResourceTable::default(),
            }),
            in_force,
        );
        Ok(())
    }
}
