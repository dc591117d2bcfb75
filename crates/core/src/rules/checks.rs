//! Checks several rule kinds share: the head every resource rule has (resource, limitApp, count), and
//! the cap on the rules of one resource.

use super::RuleError;
use crate::keyed_hash::{KeyedMap, keyed_map};
use crate::registry::MAX_ORIGIN_LEN;

/// The most rules of one type a list may give one resource (or one pattern). An entry checks every
/// rule of its resource, each with its own state, so the check cannot be made sublinear cheaply, and
/// 24,000 rules on one resource halved a guarded endpoint's throughput; Sentinel users give a resource
/// a handful (one per caller and behaviour).
pub(crate) const MAX_RULES_PER_RESOURCE: usize = 100;

/// Refuses a list in which more than [`MAX_RULES_PER_RESOURCE`] rules name one resource (`rules`
/// holds each rule's resource and whether it is a pattern, in list order), naming the first rule over
/// the cap.
pub(crate) fn check_rules_per_resource<'a>(
    rules: impl IntoIterator<Item = (&'a str, bool)>,
) -> Result<(), RuleError> {
    let mut counts: KeyedMap<(&str, bool), usize> = keyed_map();
    for (index, key) in rules.into_iter().enumerate() {
        let count = counts.entry(key).or_insert(0);
        *count += 1;
        if *count > MAX_RULES_PER_RESOURCE {
            return Err(RuleError::invalid(
                index,
                "resource",
                format!(
                    "has more than {MAX_RULES_PER_RESOURCE} rules in the list; a resource takes at \
                     most {MAX_RULES_PER_RESOURCE} rules of a type (each entry checks every one)"
                ),
            ));
        }
    }
    Ok(())
}

/// An origin a rule names (`limitApp`, or one origin of an authority list) is no longer than
/// [`MAX_ORIGIN_LEN`]: a longer one is never an entry's origin.
pub(crate) fn check_origin_len(index: usize, origin: &str) -> Result<(), RuleError> {
    if origin.len() > MAX_ORIGIN_LEN {
        return Err(RuleError::invalid(
            index,
            "limitApp",
            format!(
                "names an origin of {} bytes; origins are at most {MAX_ORIGIN_LEN}",
                origin.len()
            ),
        ));
    }
    Ok(())
}

/// `resource` and `limitApp` are not blank, `limitApp` is no longer than an origin may be; `count` is
/// a finite number ≥ 0.
pub(crate) fn check_rule_head(
    index: usize,
    resource: &str,
    limit_app: &str,
    count: f64,
) -> Result<(), RuleError> {
    if resource.trim().is_empty() {
        return Err(RuleError::invalid(index, "resource", "must not be blank"));
    }
    if limit_app.trim().is_empty() {
        return Err(RuleError::invalid(index, "limitApp", "must not be blank"));
    }
    check_origin_len(index, limit_app)?;
    if !count.is_finite() || count < 0.0 {
        return Err(RuleError::invalid(
            index,
            "count",
            format!("must be a finite number ≥ 0, got {count}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_over_the_cap_of_its_resource_is_named() {
        let mut rules: Vec<(&str, bool)> = vec![("a", false); MAX_RULES_PER_RESOURCE];
        rules.extend([("a", true), ("b", false)]);
        assert!(
            check_rules_per_resource(rules.clone()).is_ok(),
            "a pattern counts apart"
        );
        rules.push(("a", false));
        let err = check_rules_per_resource(rules).unwrap_err();
        assert!(
            matches!(&err, RuleError::Invalid { index, field, .. }
                if *index == MAX_RULES_PER_RESOURCE + 2 && field == "resource"),
            "{err}"
        );
    }
}
