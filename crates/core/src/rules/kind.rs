//! One shape for every rule kind: a [`RuleKind`] says what is particular to a kind (its rule type, its
//! JSON fields, how a list is checked and compiled, what the compiled form names), and one generic
//! [`RuleSet`] does what every kind does with it: publish the compiled rules for lock-free readers
//! with an in-force flag, load a list (check the whole list → nothing to do if it equals the list in
//! force → compile it, carrying state over from the rules in force → publish), read and write
//! Sentinel's JSON, and report each load to `tracing`. The engine sees every set as an
//! [`AnyRuleSet`], so what it does by rule type (load JSON, count, write JSON, the resource caps'
//! questions) is one call, not one arm per kind.

use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::Guard;
use regex::Regex;
use serde_json::{Map, Value};

use super::{
    Fields, Published, RuleError, RuleFields, RuleItem, RuleLoad, RuleType, RuleWarning,
    all_or_errors, check_regex_count, check_rules_per_resource, compile_patterns, parse_rule_items,
    regex_flags, to_json_array,
};
use crate::registry::Registry;

/// A rule as Sentinel writes it: its type, its JSON fields, how it is read and written, the resource it
/// names and its own check.
pub(crate) trait SentinelRule:
    Clone + PartialEq + fmt::Debug + Send + Sync + 'static
{
    /// The rule type.
    const TYPE: RuleType;
    /// The JSON fields of the rule beside those every rule has (`id`, `resource`, `limitApp`,
    /// `regex`); the others are reported as unknown.
    const FIELDS: Fields;
    /// Whether rules of the type name resources (exactly or by a pattern), so that the caps on regex
    /// rules and on the rules of one resource apply.
    const NAMES_RESOURCES: bool = true;

    /// Reads a rule from Sentinel JSON, unchecked ([`read_rule`] reads and checks it).
    fn from_fields(f: RuleFields<'_>) -> Result<Self, RuleError>;

    /// The rule as Sentinel JSON (nulls omitted).
    fn to_json(&self) -> Map<String, Value>;

    /// The resource the rule names and whether it is a pattern (`None` when
    /// [`NAMES_RESOURCES`](Self::NAMES_RESOURCES) is false).
    fn target(&self) -> Option<(&str, bool)>;

    /// Checks the rule; `index` is its position in the list being loaded.
    fn check(&self, index: usize) -> Result<(), RuleError>;
}

/// A list of rules that passed its checks as a whole, with what checking it worked out.
pub(crate) trait CheckedList<R: 'static>: Sized {
    /// Checks every rule of `rules` (the caps are checked before), naming every rule at fault.
    fn check(rules: Vec<R>) -> Result<Self, RuleError>;

    /// The rules, as they would be in force.
    fn rules(&self) -> impl Iterator<Item = &R>;

    /// The patterns to compile, one for each rule of [`rules`](Self::rules) with the position of the
    /// rule in the list loaded: the resource of a regex rule, `None` for the others.
    fn patterns(&self) -> impl Iterator<Item = (usize, Option<&str>)>;
}

/// Most kinds: every rule passes its own check.
impl<R: SentinelRule> CheckedList<R> for Vec<R> {
    fn check(rules: Vec<R>) -> Result<Self, RuleError> {
        all_or_errors(rules.iter().enumerate().map(|(i, r)| r.check(i)))?;
        Ok(rules)
    }

    fn rules(&self) -> impl Iterator<Item = &R> {
        self.iter()
    }

    fn patterns(&self) -> impl Iterator<Item = (usize, Option<&str>)> {
        self.iter()
            .enumerate()
            .map(|(index, rule)| (index, pattern(rule)))
    }
}

/// The resource of `rule` when it is a pattern.
pub(crate) fn pattern<R: SentinelRule>(rule: &R) -> Option<&str> {
    rule.target()
        .and_then(|(resource, regex)| regex.then_some(resource))
}

/// The compiled form of a kind's rules: what its slot reads.
pub(crate) trait CompiledRules: Default + fmt::Debug + Send + Sync + 'static {
    /// The rule type.
    type Rule: SentinelRule;

    /// The rules in force, in load order.
    fn rules(&self) -> impl Iterator<Item = &Self::Rule>;
}

/// The rules of a kind.
pub(crate) type Rule<K> = <<K as RuleKind>::Compiled as CompiledRules>::Rule;

/// What is particular to one kind of rules beside its rule type: how a checked list is compiled and
/// what the compiled form names. The value is the kind's own settings and state beside its published
/// rules (observers, probes, flags); the [`RuleSet`] of the kind derefs to it.
pub(crate) trait RuleKind: fmt::Debug + Send + Sync + Sized + 'static {
    /// The rules in force as the kind's slot reads them.
    type Compiled: CompiledRules;
    /// A list that passed its checks.
    type Checked: CheckedList<Rule<Self>>;

    /// Every rule of a list read from JSON, or the errors of those that failed.
    fn parse_list(
        parsed: Vec<Result<Rule<Self>, RuleError>>,
    ) -> Result<Vec<Rule<Self>>, RuleError> {
        all_or_errors(parsed)
    }

    /// The compiled form of a checked list, taking over the state of the rules in force that the list
    /// keeps.
    fn build(&self, load: Build<'_, Self>) -> Self::Compiled;

    /// Whether the compiled rules give the kind's slot work: whether any rule is in force.
    fn in_force(compiled: &Self::Compiled) -> bool {
        compiled.rules().next().is_some()
    }

    /// Called after each load that succeeded, with the rules then in force (the same as before when
    /// the list did not change).
    fn loaded(&self, compiled: &Self::Compiled) {
        let _ = compiled;
    }

    /// The rules that name resources, exactly or by a pattern, as the resource caps ask about them
    /// (`None`, the default, when rules of the kind name no resource).
    fn named(compiled: &Self::Compiled) -> Option<&dyn NamedResources> {
        let _ = compiled;
        None
    }

    /// Whether a rule names `resource` exactly (so that the resource is created past the cap).
    fn names_exactly(compiled: &Self::Compiled, resource: &str) -> bool {
        Self::named(compiled).is_some_and(|named| named.names(resource))
    }

    /// Appends the regex rules matching `resource` to `signature` (see `rules::push_matching`).
    fn push_matching_regex(compiled: &Self::Compiled, resource: &str, signature: &mut String) {
        if let Some(named) = Self::named(compiled) {
            named.push_matching(resource, <Rule<Self>>::TYPE.tag(), signature);
        }
    }

    /// The origins the rules name, interned whatever the origin cap.
    fn origins(compiled: &Self::Compiled) -> impl Iterator<Item = &str> {
        let _ = compiled;
        std::iter::empty()
    }
}

/// What a load gives [`RuleKind::build`].
pub(crate) struct Build<'a, K: RuleKind> {
    /// The rules in force.
    pub(crate) old: &'a K::Compiled,
    /// The list to put in force, checked.
    pub(crate) checked: K::Checked,
    /// The compiled pattern of each rule of `checked`, in order (`None` for a rule on a name).
    pub(crate) patterns: Vec<Option<Regex>>,
}

/// Rules that name resources, exactly or by a pattern, as the resource caps ask about them.
pub(crate) trait NamedResources {
    /// Whether a rule names `resource` exactly.
    fn names(&self, resource: &str) -> bool;

    /// Appends the expression of every regex rule matching `resource` to `signature`, tagged with
    /// `kind` (see `rules::push_matching`).
    fn push_matching(&self, resource: &str, kind: char, signature: &mut String);
}

/// The rules of one kind in force, and the kind's own state.
#[derive(Debug)]
pub(crate) struct RuleSet<K: RuleKind> {
    published: Published<K::Compiled>,
    /// Loads run one at a time, so that each builds on the rules the one before published.
    load_lock: Mutex<()>,
    /// The engine's mask of the rule types in force, and this set's bit in it: kept equal to
    /// `published`'s flag, so that an entry reads one word for every kind instead of a flag per set.
    in_force_mask: Option<(Arc<AtomicU32>, u32)>,
    kind: K,
}

impl<K: RuleKind> Deref for RuleSet<K> {
    type Target = K;

    fn deref(&self) -> &K {
        &self.kind
    }
}

/// How many warnings of one load are logged one by one; the rest are counted in one event, so that a
/// list of a mebibyte of misspelt fields makes two dozen lines, not a hundred thousand.
const MAX_LOGGED_WARNINGS: usize = 20;

impl<K: RuleKind> RuleSet<K> {
    /// The set of `kind`, no rule in force yet.
    pub(crate) fn new(kind: K) -> Self {
        RuleSet {
            published: Published::default(),
            load_lock: Mutex::new(()),
            in_force_mask: None,
            kind,
        }
    }

    /// The set, keeping `bit` of `mask` set while any of its rules is in force.
    pub(crate) fn in_force_in(mut self, mask: &Arc<AtomicU32>, bit: u32) -> Self {
        self.in_force_mask = Some((mask.clone(), bit));
        self
    }

    /// Whether any rule of the kind is in force (one relaxed load).
    #[inline]
    pub(crate) fn in_force(&self) -> bool {
        self.published.in_force()
    }

    /// The rules in force.
    #[inline]
    pub(crate) fn snapshot(&self) -> Guard<Arc<K::Compiled>> {
        self.published.load()
    }

    /// A copy of the rules in force, in load order.
    pub(crate) fn rules(&self) -> Vec<Rule<K>> {
        self.snapshot().rules().cloned().collect()
    }

    /// Checks `rules` as a whole and puts them in force; on error nothing changes. A list equal to the
    /// one in force changes nothing either.
    pub(crate) fn load(&self, rules: Vec<Rule<K>>) -> Result<(), RuleError> {
        let targets = || rules.iter().filter_map(SentinelRule::target);
        check_regex_count(targets().map(|(_, regex)| regex))?;
        check_rules_per_resource(targets())?;
        let checked = K::Checked::check(rules)?;
        let _guard = self.load_lock.lock().unwrap_or_else(|e| e.into_inner());
        let old = self.published.load_full();
        if old.rules().eq(checked.rules()) {
            self.kind.loaded(&old);
            return Ok(());
        }
        let patterns = compile_patterns(checked.patterns())?;
        let new = Arc::new(self.kind.build(Build {
            old: &old,
            checked,
            patterns,
        }));
        let in_force = K::in_force(&new);
        // The mask's bit is set after the rules are published and cleared before they are withdrawn,
        // as `Published` orders its own flag.
        if let (false, Some((mask, bit))) = (in_force, &self.in_force_mask) {
            mask.fetch_and(!bit, Ordering::Release);
        }
        self.published.store(new.clone(), in_force);
        if let (true, Some((mask, bit))) = (in_force, &self.in_force_mask) {
            mask.fetch_or(*bit, Ordering::Release);
        }
        self.kind.loaded(&new);
        Ok(())
    }

    /// [`load`](Self::load)s `rules` and reports the load (see [`report`](Self::report)).
    pub(crate) fn load_reported(
        &self,
        rules: Vec<Rule<K>>,
        registry: &Registry,
    ) -> Result<(), RuleError> {
        let result = self.load(rules);
        self.report(result, registry)
    }

    /// After a load: interns the origins the rules in force name, and reports the load to `tracing`
    /// (target `floodgate::rules`): `info` with the count in force, or `warn` with the error of a
    /// rejected list.
    fn report(&self, result: Result<(), RuleError>, registry: &Registry) -> Result<(), RuleError> {
        match &result {
            Ok(()) => {
                let compiled = self.snapshot();
                registry.intern_all(K::origins(&compiled));
                tracing::info!(
                    target: "floodgate::rules",
                    rule_type = <Rule<K>>::TYPE.as_str(),
                    count = compiled.rules().count(),
                    "rules loaded"
                );
            }
            Err(error) => tracing::warn!(
                target: "floodgate::rules",
                rule_type = <Rule<K>>::TYPE.as_str(),
                // Quoted: one event, one line (a regex error spans several, and echoes the rule).
                error = ?error.to_string(),
                "rule list rejected; the rules in force stay"
            ),
        }
        result
    }

    /// The rules of a JSON list, each unknown field noted in `warnings`.
    fn parse_json(json: &str, warnings: &mut Vec<RuleWarning>) -> Result<Vec<Rule<K>>, RuleError> {
        let items = parse_rule_items(json)?;
        if <Rule<K>>::NAMES_RESOURCES {
            // Before any rule is read: a list of too many patterns is refused without compiling one.
            check_regex_count(regex_flags(&items))?;
        }
        K::parse_list(read_rules(&items, warnings))
    }
}

/// Each rule of a list read from its item (an object, or the error saying it is not one) and checked,
/// or its error, and a warning for each unknown field.
pub(crate) fn read_rules<R: SentinelRule>(
    items: &[RuleItem],
    warnings: &mut Vec<RuleWarning>,
) -> Vec<Result<R, RuleError>> {
    items
        .iter()
        .enumerate()
        .map(|(index, item)| read_rule(index, item.as_ref().map_err(Clone::clone)?, warnings))
        .collect()
}

/// Rule `index` of a list read from its JSON object `map` and checked, so that the error names the
/// field, and a warning for each of its unknown fields (noted while the object is at hand: a pass of
/// its own cost a fifth of a load of small rules).
pub(crate) fn read_rule<R: SentinelRule>(
    index: usize,
    map: &Map<String, Value>,
    warnings: &mut Vec<RuleWarning>,
) -> Result<R, RuleError> {
    R::FIELDS.unknown(index, map, warnings);
    let rule = R::from_fields(RuleFields::new(index, map))?;
    rule.check(index)?;
    Ok(rule)
}

/// Logs the warnings of a load of `rule_type` (see `Floodgate::load_rules_json`).
pub(crate) fn log_warnings(rule_type: RuleType, warnings: &[RuleWarning]) {
    for warning in warnings.iter().take(MAX_LOGGED_WARNINGS) {
        tracing::warn!(
            target: "floodgate::rules",
            rule_type = rule_type.as_str(),
            "{warning}"
        );
    }
    let more = warnings.len().saturating_sub(MAX_LOGGED_WARNINGS);
    if more > 0 {
        tracing::warn!(
            target: "floodgate::rules",
            rule_type = rule_type.as_str(),
            more,
            "and {more} more warnings of this load"
        );
    }
}

/// A rule set of any kind, for what the engine does by rule type.
pub(crate) trait AnyRuleSet: Send + Sync {
    /// Loads a list from Sentinel JSON (see `Floodgate::load_rules_json`).
    fn load_json(&self, json: &str, registry: &Registry) -> Result<RuleLoad, RuleError>;
    /// How many rules are in force.
    fn rule_count(&self) -> usize;
    /// The rules in force as a Sentinel JSON array.
    fn rules_json(&self) -> String;
    /// Whether a rule names `resource` exactly.
    fn names_exactly(&self, resource: &str) -> bool;
    /// Appends the regex rules matching `resource` to `signature`.
    fn push_matching_regex(&self, resource: &str, signature: &mut String);
}

impl<K: RuleKind> AnyRuleSet for RuleSet<K> {
    fn load_json(&self, json: &str, registry: &Registry) -> Result<RuleLoad, RuleError> {
        let mut warnings = Vec::new();
        let result = Self::parse_json(json, &mut warnings).and_then(|rules| self.load(rules));
        log_warnings(<Rule<K>>::TYPE, &warnings);
        self.report(result, registry)?;
        Ok(RuleLoad::new(warnings))
    }

    fn rule_count(&self) -> usize {
        self.snapshot().rules().count()
    }

    fn rules_json(&self) -> String {
        to_json_array(self.snapshot().rules().map(SentinelRule::to_json))
    }

    fn names_exactly(&self, resource: &str) -> bool {
        K::names_exactly(&self.snapshot(), resource)
    }

    fn push_matching_regex(&self, resource: &str, signature: &mut String) {
        K::push_matching_regex(&self.snapshot(), resource, signature);
    }
}
