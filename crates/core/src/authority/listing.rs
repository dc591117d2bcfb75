//! An authority rule in force with the origins it lists kept in a set, so that checking an entry is
//! one lookup however many origins the rule names (splitting `limitApp` per entry made each entry of
//! a resource whose rule listed 100,000 origins read the whole list).

use std::sync::Arc;

use super::rule::{AuthorityRule, AuthorityStrategy};
use crate::keyed_hash::{KeyedMap, keyed_map};

/// A rule and its origins.
#[derive(Debug)]
pub(crate) struct Listing {
    pub(crate) rule: Arc<AuthorityRule>,
    /// The comma-separated tokens of `limitApp`, each as written. Keyed by origins, which clients
    /// choose.
    origins: KeyedMap<Box<str>, ()>,
}

impl Listing {
    pub(crate) fn new(rule: Arc<AuthorityRule>) -> Self {
        let mut origins = keyed_map();
        for origin in rule.limit_app.split(',') {
            origins.insert(Box::from(origin), ());
        }
        Listing { rule, origins }
    }

    /// Whether an entry from `origin` passes the rule: what [`AuthorityRule::admits`] says.
    #[inline]
    pub(crate) fn admits(&self, origin: &str) -> bool {
        if origin.is_empty() {
            return true;
        }
        let listed = self.origins.contains_key(origin);
        match self.rule.strategy {
            AuthorityStrategy::White => listed,
            AuthorityStrategy::Black => !listed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_admits_what_its_rule_admits() {
        let rules = [
            AuthorityRule::white("R", "appA,appB, appE"),
            AuthorityRule::black("R", "appA,,appC"),
            AuthorityRule::white("R", "appAB"),
        ];
        for rule in rules {
            let listing = Listing::new(Arc::new(rule.clone()));
            for origin in ["", "appA", "appB", "appE", " appE", "appC", "app", "appAB"] {
                assert_eq!(
                    listing.admits(origin),
                    rule.admits(origin),
                    "{rule:?} {origin:?}"
                );
            }
        }
    }
}
