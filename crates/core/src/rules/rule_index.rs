//! Which rules apply to a resource: the rules naming it, then every regex rule whose expression
//! matches its whole name, in load order. Every rule kind resolves a resource this way, once per
//! resource and snapshot; [`RuleIndex`] is the index the flow, hot-parameter and degrade snapshots
//! build from their rules in load order (authority rules, one per name, index themselves and use
//! [`applicable`]).

use std::sync::Arc;

use regex::Regex;

use super::NamedResources;
use crate::keyed_hash::{KeyedMap, keyed_map, keyed_state};

#[cfg(test)]
use super::whole_name_regex;

/// Rules by resource name, and regex rules, each in load order.
#[derive(Debug)]
pub(crate) struct RuleIndex<S> {
    /// Keyed by resource names, which rule lists choose (and crafted names collide under Fx).
    exact: KeyedMap<Box<str>, Vec<Arc<S>>>,
    regex: Vec<(Regex, Arc<S>)>,
}

impl<S> Default for RuleIndex<S> {
    fn default() -> Self {
        RuleIndex {
            exact: keyed_map(),
            regex: Vec::new(),
        }
    }
}

impl<S> RuleIndex<S> {
    /// Indexes `states`, the rules in load order, each with its compiled pattern when it is a regex
    /// rule; `name` gives the resource of a rule on a name, or `None` to leave it out (degrade's `"*"`
    /// rules).
    pub(crate) fn new<'s>(
        states: impl IntoIterator<Item = (&'s Arc<S>, Option<Regex>)>,
        name: impl Fn(&S) -> Option<&str>,
    ) -> Self
    where
        S: 's,
    {
        let states = states.into_iter();
        let mut index = RuleIndex {
            exact: KeyedMap::with_capacity_and_hasher(states.size_hint().0, keyed_state()),
            regex: Vec::new(),
        };
        for (state, pattern) in states {
            match (pattern, name(state)) {
                (Some(re), _) => index.regex.push((re, state.clone())),
                (None, Some(resource)) => index
                    .exact
                    .entry(Box::from(resource))
                    .or_default()
                    .push(state.clone()),
                (None, None) => {}
            }
        }
        index
    }

    /// The rules of the resource `name`.
    pub(crate) fn applicable(&self, name: &str) -> Vec<Arc<S>> {
        applicable(
            self.exact.get(name).into_iter().flatten().cloned(),
            &self.regex,
            name,
        )
    }

    /// Whether some rule names `name`, exactly or by regex.
    pub(crate) fn has_rules(&self, name: &str) -> bool {
        self.names(name) || self.regex.iter().any(|(re, _)| re.is_match(name))
    }

    /// Whether some rule names `name` exactly.
    pub(crate) fn names(&self, name: &str) -> bool {
        self.exact.contains_key(name)
    }

    /// Whether no rule is indexed.
    pub(crate) fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.regex.is_empty()
    }
}

impl<S> NamedResources for RuleIndex<S> {
    fn names(&self, name: &str) -> bool {
        RuleIndex::names(self, name)
    }

    fn push_matching(&self, name: &str, kind: char, signature: &mut String) {
        push_matching(&self.regex, name, kind, signature);
    }
}

/// The rules of the resource `name`: `exact` (the rules naming it), then the matching regex rules.
pub(crate) fn applicable<S>(
    exact: impl IntoIterator<Item = Arc<S>>,
    regex: &[(Regex, Arc<S>)],
    name: &str,
) -> Vec<Arc<S>> {
    exact
        .into_iter()
        .chain(
            regex
                .iter()
                .filter(|(re, _)| re.is_match(name))
                .map(|(_, s)| s.clone()),
        )
        .collect()
}

/// Appends to `signature` the expression of every rule of `regex` that matches `name`, in load order,
/// each tagged with `kind` (the rule type) and ended with a NUL: two names with equal signatures
/// are matched by the same regex rules.
pub(crate) fn push_matching<S>(
    regex: &[(Regex, Arc<S>)],
    name: &str,
    kind: char,
    signature: &mut String,
) {
    for (re, _) in regex.iter().filter(|(re, _)| re.is_match(name)) {
        signature.push(kind);
        signature.push_str(re.as_str());
        signature.push('\0');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_rules_first_then_whole_name_regex_matches_in_order() {
        // Rules are numbered: 0 names the resource, 1-3 are regex rules.
        let regex = vec![
            (whole_name_regex(0, "GET:/api/.*").unwrap(), Arc::new(1)),
            (whole_name_regex(1, "/api/.*").unwrap(), Arc::new(2)),
            (whole_name_regex(2, ".*").unwrap(), Arc::new(3)),
        ];
        let numbers = |rules: Vec<Arc<i32>>| rules.iter().map(|r| **r).collect::<Vec<_>>();
        assert_eq!(
            numbers(applicable([Arc::new(0)], &regex, "GET:/api/a")),
            [0, 1, 3],
            "exact first; a regex must match the whole name (2 only matches a substring)"
        );
        assert_eq!(numbers(applicable([], &regex, "POST:/x")), [3]);
    }

    #[test]
    fn the_index_keeps_load_order_and_leaves_out_what_it_is_told_to() {
        let rules = [("a", false), ("a", false), ("a.*", true), ("*", false)]
            .map(|(resource, regex)| Arc::new((resource, regex)));
        let patterns = rules
            .iter()
            .enumerate()
            .map(|(i, r)| r.1.then(|| whole_name_regex(i, r.0).unwrap()));
        let index = RuleIndex::new(rules.iter().zip(patterns), |&(resource, _)| {
            (resource != "*").then_some(resource)
        });
        let order = |name| {
            index
                .applicable(name)
                .iter()
                .map(|r| rules.iter().position(|s| Arc::ptr_eq(s, r)).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(order("a"), [0, 1, 2]);
        assert_eq!(order("ab"), [2]);
        assert!(order("*").is_empty() && !index.has_rules("*") && index.has_rules("ab"));
    }
}
