//! Resource patterns: the `resource` of a regex rule, matched against whole resource names the way
//! Sentinel matches them (Java's `Matcher.matches()`), and the limits that keep compiling them cheap.
//!
//! A load compiles each pattern once, after every rule of the list has been checked. What a pattern
//! costs to compile grows with its compiled size and with its length (each character class is built
//! before it is compiled, so `[\w\W]{0}`, which compiles to nothing, costs the most per byte), and a
//! list could hold any number of them. So a pattern is at most [`MAX_PATTERN_LEN`] bytes and
//! [`MAX_PATTERN_COMPILED_BYTES`] compiled, and a list holds at most [`MAX_REGEX_RULES`] regex rules,
//! counted before any rule is read further: the worst list, 100 patterns at either limit, compiles in
//! about 0.1 s here (0.08–0.13 s at the compiled-size limit, 0.1–0.16 s at the length limit, over runs
//! on a shared machine; BENCHMARKS.md, "Rule reloads"), and a mebibyte of regex rules is refused in the
//! time it takes to parse the JSON.
//! Each new resource is also matched against every regex rule of each type on its first entry, which
//! the cap bounds too.

use regex::{Regex, RegexBuilder};

use super::RuleError;

/// The largest compiled size of a resource pattern (the regex crate's default is 10 MiB). A few
/// characters such as `\w{200}` compile to megabytes of Unicode classes; a list of them would take
/// the process's memory and the loading thread's time. Names of resources need far less than this.
pub(crate) const MAX_PATTERN_COMPILED_BYTES: usize = 256 * 1024;

/// The longest resource pattern, in bytes: patterns of resource names are a few dozen.
pub(crate) const MAX_PATTERN_LEN: usize = 512;

/// The most regex rules one list of a type may hold (Sentinel users have a handful).
pub(crate) const MAX_REGEX_RULES: usize = 100;

/// Refuses a list in which more than [`MAX_REGEX_RULES`] rules are regex rules (`regex` holds each
/// rule's flag, in list order), naming the first rule over the cap.
pub(crate) fn check_regex_count(regex: impl IntoIterator<Item = bool>) -> Result<(), RuleError> {
    let over = regex
        .into_iter()
        .enumerate()
        .filter(|(_, regex)| *regex)
        .nth(MAX_REGEX_RULES);
    match over {
        None => Ok(()),
        Some((index, _)) => Err(RuleError::invalid(
            index,
            "regex",
            format!(
                "makes more than {MAX_REGEX_RULES} regex rules in the list; a list takes at most \
                 {MAX_REGEX_RULES} (each is compiled, and matched against every new resource)"
            ),
        )),
    }
}

/// Checks the pattern of regex rule `index` without compiling it: its length, and its syntax (so
/// that an unbalanced pattern such as `a)|(?:b`, which the anchoring group would close, is refused).
pub(crate) fn check_pattern(index: usize, pattern: &str) -> Result<(), RuleError> {
    if pattern.len() > MAX_PATTERN_LEN {
        return Err(RuleError::invalid(
            index,
            "resource",
            format!(
                "is a regular expression of {} bytes; patterns are at most {MAX_PATTERN_LEN}",
                pattern.len()
            ),
        ));
    }
    regex_syntax::ast::parse::Parser::new()
        .parse(pattern)
        .map(drop)
        .map_err(|e| {
            RuleError::invalid(
                index,
                "resource",
                format!("is not a valid regular expression: {e}"),
            )
        })
}

/// Rule `index`'s pattern, checked and compiled to match whole resource names only.
pub(crate) fn whole_name_regex(index: usize, pattern: &str) -> Result<Regex, RuleError> {
    check_pattern(index, pattern)?;
    RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(MAX_PATTERN_COMPILED_BYTES)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => RuleError::invalid(
                index,
                "resource",
                format!(
                    "is a regular expression too large to compile (over {} KiB)",
                    MAX_PATTERN_COMPILED_BYTES / 1024
                ),
            ),
            e => RuleError::invalid(
                index,
                "resource",
                format!("is not a valid regular expression: {e}"),
            ),
        })
}

/// The compiled pattern of each rule of `rules` (its index in the list, and its pattern or `None` for
/// a rule on a name), in that order; or the error of every pattern that does not compile.
pub(crate) fn compile_patterns<'a>(
    rules: impl IntoIterator<Item = (usize, Option<&'a str>)>,
) -> Result<Vec<Option<Regex>>, RuleError> {
    super::all_or_errors(
        rules
            .into_iter()
            .map(|(index, pattern)| pattern.map(|p| whole_name_regex(index, p)).transpose()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regexes_match_whole_names() {
        let re = whole_name_regex(0, "GET:/api/.*").unwrap();
        assert!(re.is_match("GET:/api/a"));
        assert!(!re.is_match("x-GET:/api/a"));
        assert!(
            whole_name_regex(3, "(")
                .unwrap_err()
                .to_string()
                .starts_with("rule 3: `resource` is not a valid regular expression")
        );
    }

    #[test]
    fn a_pattern_that_would_close_the_anchoring_group_is_refused() {
        for pattern in ["a)|(?:b", "a)(", ")"] {
            assert!(check_pattern(0, pattern).is_err(), "{pattern}");
            assert!(whole_name_regex(0, pattern).is_err(), "{pattern}");
        }
    }

    #[test]
    fn a_pattern_longer_than_the_limit_is_refused_unparsed() {
        let longest = "a".repeat(MAX_PATTERN_LEN);
        assert!(whole_name_regex(0, &longest).is_ok());
        // Unbalanced too: refused for its length, which is checked first.
        let err = check_pattern(4, &format!("({longest}")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "rule 4: `resource` is a regular expression of {} bytes; patterns are at most \
                 {MAX_PATTERN_LEN}",
                MAX_PATTERN_LEN + 1
            )
        );
    }

    #[test]
    fn the_regex_cap_names_the_first_rule_over_it() {
        let flags = |regex_rules: usize| {
            (0..regex_rules * 2).map(|i| i % 2 == 1) // every other rule is a regex rule
        };
        assert!(check_regex_count(flags(MAX_REGEX_RULES)).is_ok());
        let err = check_regex_count(flags(MAX_REGEX_RULES + 5)).unwrap_err();
        assert!(
            matches!(&err, RuleError::Invalid { index, field, .. }
                if *index == MAX_REGEX_RULES * 2 + 1 && field == "regex"),
            "{err}"
        );
    }

    #[test]
    fn every_pattern_that_does_not_compile_is_named() {
        let rules = [Some("a"), None, Some(r"\w{200}"), Some("b"), Some("(")];
        let err = compile_patterns(rules.into_iter().enumerate()).unwrap_err();
        let RuleError::Several(errors) = err else {
            panic!("two errors: {err}");
        };
        let indices: Vec<usize> = errors
            .iter()
            .map(|e| match e {
                RuleError::Invalid { index, .. } => *index,
                other => panic!("{other}"),
            })
            .collect();
        assert_eq!(indices, [2, 4]);
        let compiled = compile_patterns([(0, Some("a")), (1, None)]).unwrap();
        assert!(compiled[0].as_ref().is_some_and(|re| re.is_match("a")));
        assert!(compiled[1].is_none());
    }
}
