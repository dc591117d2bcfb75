//! The hot-parameter rules in force: an immutable snapshot behind an atomic pointer, and each rule's
//! per-value state.
//!
//! A load validates the whole list first (any invalid rule rejects it and changes nothing), drops exact
//! duplicates (Sentinel keeps rules in a set), and keeps the state of every rule equal to one already in
//! force, so its per-value buckets and in-flight counts survive unrelated reloads. A QPS rule equal to
//! one in force but for its `id` (a dashboard numbering its rules afresh) starts with a copy of that
//! rule's values and their buckets or pacing
//! (`a_rule_reloaded_with_only_its_id_changed_keeps_its_values_state`). A THREAD rule that replaces a
//! THREAD rule of the same resource, argument and exception items (renumbered, or with another count)
//! takes over that rule's in-flight counts themselves, and its generation, as Sentinel keeps them per
//! resource, argument and value: the calls in flight count against the new limit and are released to
//! it, so that the new rule does not admit its limit again on top of them
//! (`a_thread_rule_renumbered_or_recounted_keeps_the_calls_in_flight`). Rules never change once loaded:
//! a negative `paramIdx` is resolved per call (Sentinel rewrites the rule on first use:
//! `a_negative_index_is_resolved_per_call`).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::cache::{NewValue, ValueCache};
use super::concurrency;
use super::rate_limiter::RateLimiter;
use super::rule::ParamFlowRule;
use super::token_bucket::TokenBucket;
use crate::cluster::ClusterTerms;
use crate::flow::{ControlBehavior, FlowGrade};
use crate::param::{ParamValue, StoredValue};
use crate::registry::Resource;
use crate::rules::{
    Build, CheckedList, CompiledRules, HashRule, HoldsRule, NamedResources, ResourceTable,
    RuleError, RuleHasher, RuleIndex, RuleKind, Similar, all_or_errors, carry_over_rules,
    cluster_fields_of, first_of_each, pattern,
};

/// Token buckets count in ms (Sentinel's windows); pacing counts in ns, so that rates above a thousand
/// a second are not rounded away (`rate_limiter_paces_above_a_thousand_a_second`).
const NANOS_PER_MS: u64 = 1_000_000;

/// Sentinel's base cache size per second of window (`BASE_PARAM_MAX_CAPACITY`).
const BASE_CAPACITY: u64 = 4000;
/// Sentinel's cap on a rule's cache (`TOTAL_MAX_CAPACITY`).
const MAX_CAPACITY: u64 = 200_000;

/// The default number of values a rule remembers: `min(4000 · durationInSec, 200000)`.
pub(crate) fn default_capacity(duration_in_sec: u64) -> usize {
    BASE_CAPACITY
        .saturating_mul(duration_in_sec)
        .min(MAX_CAPACITY) as usize
}

/// How a rule limits each value.
#[derive(Debug)]
enum Controller {
    Bucket(TokenBucket),
    Pacing(RateLimiter),
    Threads,
}

/// What a rule decided for one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Admitted, after waiting this many ns (0: at once).
    Pass(u64),
    Block,
}

/// A rule in force, with the state of the values it has seen.
#[derive(Debug)]
pub(crate) struct ParamRuleState {
    pub(crate) rule: Arc<ParamFlowRule>,
    controller: Controller,
    /// Exception items: (hash, value, threshold), sorted by hash.
    items: Box<[(u64, StoredValue, i64)]>,
    /// Shared with the THREAD rule this one replaced, if it took over its calls in flight.
    cache: Arc<ValueCache>,
    /// The generation of the rules this state was created in: an entry admitted under rules of an
    /// earlier generation never counted in it.
    pub(crate) born: u64,
    /// A cluster QPS rule's terms: its values ask the engine's token service first (`None`: a local
    /// rule; a THREAD rule is always local, as in Sentinel).
    pub(crate) cluster: Option<ClusterTerms>,
}

impl ParamRuleState {
    /// The state of `rule`; with `from`, the state of a rule it replaces ([`succeeds`]): a QPS rule
    /// starts with a copy of that state's values, a THREAD rule takes over its cache (the calls in
    /// flight) and its generation (so that they are released here).
    fn new(
        rule: ParamFlowRule,
        items: Vec<(StoredValue, u32)>,
        capacity: Option<usize>,
        tick_ns: u64,
        generation: u64,
        from: Option<&ParamRuleState>,
    ) -> Self {
        let threshold = rule.count as i64;
        let controller = match (rule.grade, rule.control_behavior) {
            (FlowGrade::Thread, _) => Controller::Threads,
            (FlowGrade::Qps, ControlBehavior::RateLimiter) => Controller::Pacing(RateLimiter::new(
                rule.duration_in_sec,
                rule.max_queueing_time_ms,
                rule.burst_count,
                tick_ns,
            )),
            (FlowGrade::Qps, _) => {
                Controller::Bucket(TokenBucket::new(rule.burst_count, rule.duration_in_sec))
            }
        };
        let capacity = capacity.unwrap_or_else(|| default_capacity(rule.duration_in_sec));
        let mut born = generation;
        let cache = match from {
            // Its threshold is set once the load cannot fail any more (see `load`).
            Some(old) if matches!(controller, Controller::Threads) && old.is_thread() => {
                born = old.born;
                Arc::clone(&old.cache)
            }
            Some(old)
                if !matches!(controller, Controller::Threads)
                    && old.cache.capacity() == capacity
                    && old.rule.count as i64 == threshold =>
            {
                Arc::new(old.cache.duplicate())
            }
            _ => Arc::new(ValueCache::new(capacity, threshold)),
        };
        let mut items: Vec<(u64, StoredValue, i64)> = items
            .into_iter()
            .filter_map(|(v, count)| Some((cache.item_hash(&v.view())?, v, i64::from(count))))
            .collect();
        items.sort_by_key(|(h, _, _)| *h);
        let cluster = rule
            .cluster_config
            .as_ref()
            .filter(|_| rule.cluster_mode && rule.grade == FlowGrade::Qps)
            .map(|c| ClusterTerms::of(&cluster_fields_of!(c)));
        ParamRuleState {
            rule: Arc::new(rule),
            controller,
            items: items.into_boxed_slice(),
            cache,
            born,
            cluster,
        }
    }

    /// Whether this is a THREAD rule (its counts are released at exit).
    pub(crate) fn is_thread(&self) -> bool {
        matches!(self.controller, Controller::Threads)
    }

    /// `value`'s threshold: its item's count, or the rule's (truncated to a whole number).
    pub(crate) fn threshold(&self, value: &ParamValue<'_>) -> i64 {
        self.new_value(value).threshold
    }

    /// A new value's threshold: its item's count, or the rule's.
    fn new_value(&self, value: &ParamValue<'_>) -> NewValue {
        let hash = self.cache.item_hash(value).unwrap_or_default();
        let from = self.items.partition_point(|(h, _, _)| *h < hash);
        let item = self.items[from..]
            .iter()
            .take_while(|(h, _, _)| *h == hash)
            .find(|(_, v, _)| v.matches(value));
        match item {
            Some((_, _, count)) => NewValue {
                threshold: *count,
                pinned: true,
            },
            None => NewValue {
                threshold: self.rule.count as i64,
                pinned: false,
            },
        }
    }

    /// Admits `acquire` permits for `value` of resource `scope` at `now` (ns; a single value: not `Null`,
    /// not a list), or not.
    #[inline]
    pub(crate) fn acquire(
        &self,
        scope: u32,
        value: &ParamValue<'_>,
        now: u64,
        acquire: u32,
    ) -> Verdict {
        let Some(hash) = self.cache.hash(scope, value) else {
            return Verdict::Pass(0);
        };
        let a = i64::from(acquire);
        let new = || self.new_value(value);
        match &self.controller {
            Controller::Bucket(b) => self.cache.with_cell(
                hash,
                scope,
                value,
                new,
                |c| b.settled(c, now / NANOS_PER_MS),
                |cell, _| match b.next(cell, now / NANOS_PER_MS, a) {
                    Some(next) => {
                        *cell = next;
                        Verdict::Pass(0)
                    }
                    None => Verdict::Block,
                },
            ),
            Controller::Pacing(r) => self.cache.with_cell(
                hash,
                scope,
                value,
                new,
                |c| r.settled(c, now),
                |cell, _| match r.next(cell, now, a) {
                    Some((next, wait)) => {
                        *cell = next;
                        Verdict::Pass(wait)
                    }
                    None => Verdict::Block,
                },
            ),
            Controller::Threads => self.cache.with_cell(
                hash,
                scope,
                value,
                new,
                concurrency::settled,
                // Values that found no room are refused: a shared in-flight count could not be
                // released exactly.
                |cell, shared| {
                    if !shared && concurrency::try_enter(cell) {
                        Verdict::Pass(0)
                    } else {
                        Verdict::Block
                    }
                },
            ),
        }
    }

    /// The hash `value` is kept under for resource `scope` (`None`: no value, always admitted).
    pub(crate) fn value_hash(&self, scope: u32, value: &ParamValue<'_>) -> Option<u64> {
        self.cache.hash(scope, value)
    }

    /// Whether [`acquire`](Self::acquire), called `times` times one after the other, would admit
    /// `value` each time now (changes nothing; a value not cached yet is judged on the cell it would
    /// get: a new one's, or the shared overflow cell's when there is no room, so that a list this
    /// admits is not refused by the charge after all, with a refund of the values before it that would
    /// move their windows: `a_list_refused_for_lack_of_room_changes_nothing`).
    pub(crate) fn would_admit(
        &self,
        scope: u32,
        value: &ParamValue<'_>,
        now: u64,
        acquire: u32,
        times: u32,
    ) -> bool {
        let Some(hash) = self.cache.hash(scope, value) else {
            return true;
        };
        let a = i64::from(acquire);
        let new = || self.new_value(value);
        match &self.controller {
            // Within one instant, k charges of `a` tokens take what one charge of k·a takes.
            Controller::Bucket(b) => self.cache.judge(
                hash,
                scope,
                value,
                new,
                |c| b.settled(c, now / NANOS_PER_MS),
                |cell, _| {
                    b.next(cell, now / NANOS_PER_MS, a.saturating_mul(i64::from(times)))
                        .is_some()
                },
            ),
            Controller::Pacing(r) => self.cache.judge(
                hash,
                scope,
                value,
                new,
                |c| r.settled(c, now),
                |cell, _| r.admits(cell, now, a, times),
            ),
            // A value with no room is refused, as `acquire` refuses it.
            Controller::Threads => self.cache.judge(
                hash,
                scope,
                value,
                new,
                concurrency::settled,
                |cell, shared| !shared && concurrency::can_enter(cell, times),
            ),
        }
    }

    /// Undoes an admission of `acquire` permits for `value`.
    pub(crate) fn refund(&self, scope: u32, value: &ParamValue<'_>, acquire: u32) {
        let Some(hash) = self.cache.hash(scope, value) else {
            return;
        };
        let a = i64::from(acquire);
        match &self.controller {
            Controller::Bucket(b) => self
                .cache
                .cell_or_overflow(hash, scope, value, |cell| b.refund(cell, a)),
            Controller::Pacing(r) => self
                .cache
                .cell_or_overflow(hash, scope, value, |cell| r.refund(cell, a)),
            Controller::Threads => self.release(scope, value),
        }
    }

    /// A call of `value` admitted by this THREAD rule ended.
    pub(crate) fn release(&self, scope: u32, value: &ParamValue<'_>) {
        if let Some(hash) = self.cache.hash(scope, value) {
            self.cache.peek(hash, scope, value, concurrency::exit);
        }
    }

    fn status(&self) -> ParamFlowStatus {
        ParamFlowStatus {
            rule: (*self.rule).clone(),
            capacity: self.cache.capacity(),
            values: self.cache.len(),
            evictions: self.cache.evictions(),
            overflows: self.cache.overflows(),
        }
    }
}

impl HoldsRule for ParamRuleState {
    type Rule = ParamFlowRule;

    fn rule(&self) -> &ParamFlowRule {
        &self.rule
    }
}

/// Whether `new` takes the state of `old` (a rule in force that it replaces, not equal to it): a QPS
/// rule equal but for its `id`, or a THREAD rule of the same resource, argument and exception items
/// (its calls in flight are the same calls, whatever the count).
fn succeeds(new: &ParamFlowRule, old: &ParamFlowRule) -> bool {
    match (new.grade, old.grade) {
        (FlowGrade::Thread, FlowGrade::Thread) => {
            new.resource == old.resource
                && new.regex == old.regex
                && new.param_idx == old.param_idx
                && new.param_flow_item_list == old.param_flow_item_list
        }
        _ => new.id != old.id && old.eq_but_id(new),
    }
}

/// Feeds `rule` to `h` so that rules [`succeeds`] relates hash alike: a THREAD rule by the values it
/// counts, a QPS rule by every field but `id`.
fn hash_successor_fields(rule: &ParamFlowRule, h: &mut impl Hasher) {
    rule.grade.hash(h);
    match rule.grade {
        FlowGrade::Thread => rule.hash_counted_values(h),
        FlowGrade::Qps => rule.hash_without_id(h),
    }
}

/// A hot-parameter rule in force and what its value cache holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamFlowStatus {
    /// The rule.
    pub rule: ParamFlowRule,
    /// The most values the rule remembers (exception items come on top).
    pub capacity: usize,
    /// Values remembered now.
    pub values: usize,
    /// Values dropped to make room. Only values whose state a new value would start from are dropped,
    /// so an evicted value that comes back is judged exactly as if it had been kept.
    pub evictions: u64,
    /// Checks of new values that found the cache full of values still in use, and were judged against
    /// a shared overflow state instead (a sign the capacity is too small for the traffic).
    pub overflows: u64,
}

/// The rules of one resource.
pub(crate) type Rules = [Arc<ParamRuleState>];

/// The rules of one resource, as a snapshot keeps them.
type ResourceParamRules = Vec<Arc<ParamRuleState>>;

/// An immutable set of hot-parameter rules.
#[derive(Debug, Default)]
pub(crate) struct ParamSnapshot {
    in_order: Vec<Arc<ParamRuleState>>,
    index: RuleIndex<ParamRuleState>,
    /// Counts the loads that changed the rules (0: none yet). A rule state lives through a run of
    /// generations: carried over while its rule stays, never brought back once dropped.
    pub(crate) generation: u64,
    by_resource: ResourceTable<Option<ResourceParamRules>>,
}

impl ParamSnapshot {
    /// The rules that apply to `resource` (exact, then regex), resolved on its first entry under this
    /// snapshot and then found by its id: an entry never looks its rules up by name.
    #[inline]
    pub(crate) fn rules_of(&self, resource: &Resource) -> Option<&Rules> {
        self.by_resource
            .get_or_init(resource.id, || self.resolve(&resource.name))?
            .as_deref()
    }

    #[cold]
    fn resolve(&self, resource: &str) -> Option<ResourceParamRules> {
        let rules = self.index.applicable(resource);
        (!rules.is_empty()).then_some(rules)
    }

    /// The status of every rule, in load order.
    pub(crate) fn statuses(&self) -> Vec<ParamFlowStatus> {
        self.in_order.iter().map(|s| s.status()).collect()
    }
}

impl CompiledRules for ParamSnapshot {
    type Rule = ParamFlowRule;

    fn rules(&self) -> impl Iterator<Item = &ParamFlowRule> {
        self.in_order.iter().map(|s| &*s.rule)
    }
}

/// A rule with the exception items its check worked out.
type Parsed = (ParamFlowRule, Vec<(StoredValue, u32)>);

/// A checked list of hot-parameter rules: each rule kept (the first of its equals) with its items, and
/// its position in the list.
#[derive(Debug)]
pub(crate) struct CheckedRules {
    rules: Vec<Parsed>,
    positions: Vec<usize>,
}

/// The hot-parameter rules: an engine's [`RuleSet`](crate::rules::RuleSet) of them holds a [`ParamSnapshot`].
#[derive(Debug)]
pub(crate) struct ParamFlowKind {
    /// Values each rule remembers; `None`: Sentinel's `min(4000 · durationInSec, 200000)`.
    capacity: Option<usize>,
    /// The engine clock's resolution in ns (see [`Clock::resolution`](crate::Clock::resolution)).
    tick_ns: u64,
}

impl ParamFlowKind {
    pub(crate) fn new(capacity: Option<usize>, tick_ns: u64) -> Self {
        ParamFlowKind { capacity, tick_ns }
    }
}

impl CheckedList<ParamFlowRule> for CheckedRules {
    /// Every rule is valid; exact duplicates are dropped (Sentinel keeps rules in a set).
    fn check(rules: Vec<ParamFlowRule>) -> Result<Self, RuleError> {
        let validated = all_or_errors(
            rules
                .into_iter()
                .enumerate()
                .map(|(index, rule)| Ok((rule.validate(index)?, rule))),
        )?;
        let hasher = RuleHasher::new();
        let firsts = first_of_each(
            &validated,
            |(_, r)| hasher.hash_rule(r),
            |(_, a), (_, b)| a == b,
        );
        let mut checked = CheckedRules {
            rules: Vec::new(),
            positions: Vec::new(),
        };
        for (position, ((items, rule), first)) in validated.into_iter().zip(firsts).enumerate() {
            if first {
                checked.rules.push((rule, items));
                checked.positions.push(position);
            }
        }
        Ok(checked)
    }

    fn rules(&self) -> impl Iterator<Item = &ParamFlowRule> {
        self.rules.iter().map(|(r, _)| r)
    }

    fn patterns(&self) -> impl Iterator<Item = (usize, Option<&str>)> {
        self.positions
            .iter()
            .zip(&self.rules)
            .map(|(&index, (rule, _))| (index, pattern(rule)))
    }
}

impl RuleKind for ParamFlowKind {
    type Checked = CheckedRules;
    type Compiled = ParamSnapshot;

    fn build(&self, load: Build<'_, Self>) -> ParamSnapshot {
        let Build {
            old,
            checked,
            patterns,
        } = load;
        let generation = old.generation + 1;
        let in_order = carry_over_rules(
            &old.in_order,
            checked.rules,
            |(r, _): &Parsed| r,
            Similar {
                fields: hash_successor_fields,
                holds: |old: &ParamFlowRule, new: &ParamFlowRule| succeeds(new, old),
            },
            |(rule, items), similar| {
                ParamRuleState::new(
                    rule,
                    items,
                    self.capacity,
                    self.tick_ns,
                    generation,
                    similar,
                )
            },
        );
        let index = RuleIndex::new(in_order.iter().zip(patterns), |s| {
            Some(s.rule.resource.as_str())
        });
        // A THREAD cache taken over from another rule counts against this rule's count from now.
        for state in in_order.iter().filter(|s| s.is_thread()) {
            state.cache.set_threshold(state.rule.count as i64);
        }
        ParamSnapshot {
            in_order,
            index,
            generation,
            by_resource: ResourceTable::default(),
        }
    }

    fn named(compiled: &ParamSnapshot) -> Option<&dyn NamedResources> {
        Some(&compiled.index)
    }
}

/// The hot-parameter rules in force, as the engine and the hot-parameter slot share them.
pub(crate) type ParamFlowRules = crate::rules::RuleSet<ParamFlowKind>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A call that read the rules just before a THREAD rule with another count took its cache over
    /// adds a value under the old rule: the value follows the cache's threshold, not the old count
    /// (so that the value does not keep the old count for good).
    #[test]
    fn a_value_added_under_the_replaced_rule_follows_the_new_count() {
        let fg = crate::Floodgate::builder().build();
        let rule = |count: f64| ParamFlowRule::new("R", 0, count).grade(FlowGrade::Thread);
        fg.load_param_flow_rules([rule(2.0)]).unwrap();
        drop(fg.entry("R").enter());
        let resource = fg.inner.resource("R").unwrap();
        let old = fg.inner.rules.param_flow.snapshot();
        let old_state = Arc::clone(&old.rules_of(resource).unwrap()[0]);
        fg.load_param_flow_rules([rule(5.0)]).unwrap();
        let v = ParamValue::from("v");
        assert_eq!(old_state.acquire(resource.id, &v, 0, 1), Verdict::Pass(0));
        old_state.release(resource.id, &v);
        drop(old);
        let held: Vec<_> = (0..6).map(|_| fg.entry("R").args(["v"]).enter()).collect();
        assert_eq!(held.iter().filter(|r| r.is_ok()).count(), 5);
    }

    #[test]
    fn default_capacity_follows_sentinel() {
        assert_eq!(default_capacity(1), 4000);
        assert_eq!(default_capacity(10), 40_000);
        assert_eq!(default_capacity(50), 200_000);
        assert_eq!(default_capacity(u64::MAX), 200_000);
    }

    #[test]
    fn items_are_found_by_type_and_value() {
        let rule = ParamFlowRule::new("R", 0, 5.0)
            .item(super::super::ParamFlowItem::int(42, 100))
            .item(super::super::ParamFlowItem::string("42", 7));
        let items = rule.validate(0).unwrap();
        let state = ParamRuleState::new(rule, items, None, 0, 0, None);
        let threshold = |v: ParamValue<'_>| {
            let n = state.new_value(&v);
            (n.threshold, n.pinned)
        };
        assert_eq!(threshold(ParamValue::Int(42)), (100, true));
        assert_eq!(threshold(ParamValue::from("42")), (7, true));
        assert_eq!(threshold(ParamValue::Float(42.0)), (5, false));
        assert_eq!(threshold(ParamValue::Int(43)), (5, false));
    }
}
