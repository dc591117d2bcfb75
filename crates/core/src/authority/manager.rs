//! The authority rules in force: an immutable snapshot behind an atomic pointer, rebuilt on load.
//!
//! A load validates the whole list first (any invalid rule rejects it and changes nothing). The snapshot
//! keeps, per resource name, the **first** rule naming it (Sentinel ignores later ones), and per regular
//! expression the first rule with that expression. An entry must pass the exact rule of its resource and
//! every regex rule whose expression matches the whole resource name; which regex rules match a name is
//! worked out once per name and cached in the snapshot.

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use regex::Regex;
use rustc_hash::FxHashMap;

use super::rule::AuthorityRule;
use crate::rules::{Published, RuleError, whole_name_regex};

/// The rules that apply to one resource, in check order.
pub(crate) type Applicable = Arc<[Arc<AuthorityRule>]>;

/// An immutable set of authority rules.
#[derive(Debug, Default)]
pub(crate) struct AuthoritySnapshot {
    in_order: Vec<Arc<AuthorityRule>>,
    exact: FxHashMap<Box<str>, Arc<AuthorityRule>>,
    regex: Vec<(Regex, Arc<AuthorityRule>)>,
    /// Resource name → the exact rule and the matching regex rules (only when regex rules exist).
    matched: ArcSwap<FxHashMap<Box<str>, Applicable>>,
    matched_lock: Mutex<()>,
}

/// The rules found for a resource.
#[derive(Debug)]
pub(crate) enum Found<'a> {
    One(&'a Arc<AuthorityRule>),
    Matched(Applicable),
}

impl Found<'_> {
    /// The first rule that refuses `origin`.
    #[inline]
    pub(crate) fn refusing(&self, origin: &str) -> Option<&Arc<AuthorityRule>> {
        match self {
            Found::One(rule) => (!rule.admits(origin)).then_some(*rule),
            Found::Matched(rules) => rules.iter().find(|r| !r.admits(origin)),
        }
    }
}

impl AuthoritySnapshot {
    pub(crate) fn is_empty(&self) -> bool {
        self.in_order.is_empty()
    }

    /// The rules that apply to `resource`.
    #[inline]
    pub(crate) fn rules_for(&self, resource: &str) -> Option<Found<'_>> {
        if self.regex.is_empty() {
            return self.exact.get(resource).map(Found::One);
        }
        if let Some(found) = self.matched.load().get(resource) {
            return (!found.is_empty()).then(|| Found::Matched(found.clone()));
        }
        self.match_regex(resource)
    }

    #[cold]
    fn match_regex(&self, resource: &str) -> Option<Found<'_>> {
        let rules: Applicable = self
            .exact
            .get(resource)
            .into_iter()
            .cloned()
            .chain(
                self.regex
                    .iter()
                    .filter(|(re, _)| re.is_match(resource))
                    .map(|(_, rule)| rule.clone()),
            )
            .collect();
        {
            let _guard = self.matched_lock.lock().unwrap_or_else(|e| e.into_inner());
            let mut next = (**self.matched.load()).clone();
            next.insert(Box::from(resource), rules.clone());
            self.matched.store(Arc::new(next));
        }
        (!rules.is_empty()).then_some(Found::Matched(rules))
    }

    /// Whether some rule names `resource` (exactly or by regex).
    pub(crate) fn has_rules(&self, resource: &str) -> bool {
        self.exact.contains_key(resource) || self.regex.iter().any(|(re, _)| re.is_match(resource))
    }

    /// The rules in load order (ignored duplicates included).
    pub(crate) fn rules(&self) -> impl Iterator<Item = &AuthorityRule> {
        self.in_order.iter().map(|r| &**r)
    }
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
        for (index, rule) in rules.iter().enumerate() {
            rule.validate(index)?;
        }
        let mut exact: FxHashMap<Box<str>, Arc<AuthorityRule>> = FxHashMap::default();
        let mut regex: Vec<(Regex, Arc<AuthorityRule>)> = Vec::new();
        let mut in_order = Vec::with_capacity(rules.len());
        for (index, rule) in rules.into_iter().enumerate() {
            let rule = Arc::new(rule);
            in_order.push(rule.clone());
            if rule.regex {
                if !regex.iter().any(|(_, r)| r.resource == rule.resource) {
                    regex.push((whole_name_regex(index, &rule.resource)?, rule));
                }
            } else {
                exact
                    .entry(Box::from(rule.resource.as_str()))
                    .or_insert(rule);
            }
        }
        let _guard = self.load_lock.lock().unwrap_or_else(|e| e.into_inner());
        let in_force = !in_order.is_empty();
        self.snapshot.store(
            Arc::new(AuthoritySnapshot {
                in_order,
                exact,
                regex,
                matched: ArcSwap::default(),
                matched_lock: Mutex::new(()),
            }),
            in_force,
        );
        Ok(())
    }
}
