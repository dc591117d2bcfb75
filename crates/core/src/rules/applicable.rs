//! Which rules apply to a resource: the rules naming it, then every regex rule whose expression
//! matches its whole name, in load order. Every rule kind resolves a resource this way, once per
//! resource and snapshot.

use std::sync::Arc;

use regex::Regex;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::whole_name_regex;

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
}
