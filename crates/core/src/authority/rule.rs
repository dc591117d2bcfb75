//! `AuthorityRule`: a white or black list of callers for one resource (Sentinel's `AuthorityRule`).
//!
//! `limitApp` is a comma-separated list of origins. The list is split on `,` and each token is compared
//! with the caller's origin **exactly**: `"appA, appB"` holds the tokens `appA` and ` appB` (with the
//! space), so the origin `appB` is not in it. A white list (`strategy` 0, the default) admits only the
//! origins it names; a black list (`strategy` 1) refuses the origins it names. An entry without an origin
//! always passes.

use serde_json::{Map, Value, json};

use crate::rules::{
    Coded, Fields, RuleError, RuleFields, RuleType, SentinelRule, check_origin_len, check_pattern,
    rule_head,
};

/// Whether an authority rule's list admits or refuses the origins it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AuthorityStrategy {
    /// Only the listed origins pass (JSON `0`, the default).
    #[default]
    White = 0,
    /// The listed origins are blocked (JSON `1`).
    Black = 1,
}

impl Coded for AuthorityStrategy {
    const BY_CODE: &'static [Self] = &[AuthorityStrategy::White, AuthorityStrategy::Black];
}

/// An authority rule (Sentinel's `AuthorityRule`). A resource takes one: a list with two rules for one
/// resource that admit different origins is refused.
///
/// ```
/// use floodgate_core::{AuthorityRule, AuthorityStrategy};
///
/// let rule = AuthorityRule::white("GET:/orders", "web,mobile");
/// assert_eq!(rule.strategy, AuthorityStrategy::White);
/// assert!(rule.lists("web"));
/// assert!(!rule.lists("batch"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorityRule {
    /// Optional id (reported with blocks).
    pub id: Option<i64>,
    /// The resource (a regular expression that must match the whole name when `regex`).
    pub resource: String,
    /// The comma-separated origins (required, not blank).
    pub limit_app: String,
    /// White or black list.
    pub strategy: AuthorityStrategy,
    /// Whether `resource` is a regular expression.
    pub regex: bool,
}

impl AuthorityRule {
    /// A rule on `resource` listing the origins in `limit_app` (comma-separated), with `strategy`.
    pub fn new(
        resource: impl Into<String>,
        limit_app: impl Into<String>,
        strategy: AuthorityStrategy,
    ) -> Self {
        AuthorityRule {
            id: None,
            resource: resource.into(),
            limit_app: limit_app.into(),
            strategy,
            regex: false,
        }
    }

    /// A white list: only the origins in `limit_app` pass.
    pub fn white(resource: impl Into<String>, limit_app: impl Into<String>) -> Self {
        Self::new(resource, limit_app, AuthorityStrategy::White)
    }

    /// A black list: the origins in `limit_app` are blocked.
    pub fn black(resource: impl Into<String>, limit_app: impl Into<String>) -> Self {
        Self::new(resource, limit_app, AuthorityStrategy::Black)
    }

    /// Whether `origin` is one of the comma-separated tokens of `limit_app` (exact comparison).
    pub fn lists(&self, origin: &str) -> bool {
        self.limit_app.split(',').any(|app| app == origin)
    }

    /// What decides which origins this rule admits: its strategy and its set of non-empty tokens
    /// (sorted, each once; `id` aside). Two rules with equal decisions admit exactly the same origins.
    pub(crate) fn decision(&self) -> (AuthorityStrategy, Vec<&str>) {
        // Empty tokens list nobody (an entry without an origin always passes).
        let mut tokens: Vec<&str> = self
            .limit_app
            .split(',')
            .filter(|t| !t.is_empty())
            .collect();
        tokens.sort_unstable();
        tokens.dedup();
        (self.strategy, tokens)
    }

    /// Whether an entry from `origin` passes this rule. An empty origin always passes.
    pub fn admits(&self, origin: &str) -> bool {
        if origin.is_empty() {
            return true;
        }
        match self.strategy {
            AuthorityStrategy::White => self.lists(origin),
            AuthorityStrategy::Black => !self.lists(origin),
        }
    }
}

crate::rules::rule_setters! {
    AuthorityRule {
        /// Makes `resource` a regular expression (matched against the whole resource name).
        regex() = true;
        /// Sets the id.
        id(id: i64) = Some(id);
    }
}

crate::rules::serde_via_fields!(AuthorityRule);

impl SentinelRule for AuthorityRule {
    const TYPE: RuleType = RuleType::Authority;

    fn target(&self) -> Option<(&str, bool)> {
        Some((&self.resource, self.regex))
    }

    /// The JSON field Sentinel's `AuthorityRule` adds to every rule's.
    const FIELDS: Fields = Fields::new(&["strategy"], &[]);

    /// Reads a rule from Sentinel JSON.
    fn from_fields(f: RuleFields<'_>) -> Result<Self, RuleError> {
        let strategy = f.code("strategy", "0 (white list) or 1 (black list)")?;
        Ok(AuthorityRule {
            id: f.integer("id")?,
            resource: f.string("resource")?.unwrap_or_default().to_owned(),
            limit_app: f.string("limitApp")?.unwrap_or_default().to_owned(),
            strategy,
            regex: f.boolean("regex")?.unwrap_or(false),
        })
    }

    /// Checks the rule; `index` is its position in the list being loaded.
    fn check(&self, index: usize) -> Result<(), RuleError> {
        let err = |field: &str, reason: String| Err(RuleError::invalid(index, field, reason));
        if self.resource.trim().is_empty() {
            return err("resource", "must not be blank".into());
        }
        if self.limit_app.trim().is_empty() {
            return err(
                "limitApp",
                "must list the origins (comma-separated), got a blank value".into(),
            );
        }
        for origin in self.limit_app.split(',') {
            check_origin_len(index, origin)?;
        }
        if self.regex {
            check_pattern(index, &self.resource)?;
        }
        Ok(())
    }

    /// The rule as Sentinel JSON (nulls omitted).
    fn to_json(&self) -> Map<String, Value> {
        let mut m = rule_head(self.id, &self.resource, &self.limit_app, self.regex);
        m.insert("strategy".into(), json!(self.strategy as i32));
        m
    }
}

crate::block::rule_with_id_and_limit_app!(AuthorityRule);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_checker_table() {
        // AuthorityRuleCheckerTest: origin appA.
        let origin = "appA";
        assert!(AuthorityRule::white("R", "appA,appB").admits(origin));
        assert!(!AuthorityRule::white("R", "appB").admits(origin));
        assert!(!AuthorityRule::black("R", "appA").admits(origin));
        assert!(AuthorityRule::black("R", "appC").admits(origin));
    }

    #[test]
    fn tokens_are_compared_exactly() {
        let rule = AuthorityRule::white("R", "appB, appE");
        assert!(rule.lists("appB"));
        assert!(!rule.lists("appE"), "the token is ` appE`");
        assert!(rule.lists(" appE"));
        assert!(!rule.lists("app"), "no substring match");
        assert!(!AuthorityRule::white("R", "appAB").lists("appA"));
    }

    #[test]
    fn an_empty_origin_passes_both_lists() {
        assert!(AuthorityRule::white("R", "appA").admits(""));
        assert!(AuthorityRule::black("R", "appA").admits(""));
        assert!(AuthorityRule::black("R", "appA,").admits(""));
    }
}
