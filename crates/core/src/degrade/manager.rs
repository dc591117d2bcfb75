//! The degrade rules in force: an immutable snapshot behind an atomic pointer, and the breakers it drives.
//!
//! Each rule drives its own breakers: one for a rule on a resource name; one per matching resource,
//! made on that resource's first entry, for a regex rule and for a default rule (resource `"*"`, applied
//! to every resource that has no degrade rule of its own, Sentinel's `DefaultCircuitBreakerSlot`). Two
//! identical rules never share a breaker (sharing one pinned it open in Sentinel: #2136, #3502).
//!
//! A load validates the whole list first (any invalid rule rejects it and changes nothing). Then every
//! rule equal, in every field, to one in force keeps that rule's breakers, state and statistics included
//! (each old rule is reused at most once, so duplicates stay distinct); a rule that differs from one in
//! force only in its presentation (`id`, or `limitApp`, which breakers ignore) gets new breakers that
//! take over the old ones' states and counts, so that a dashboard numbering its rules afresh does not
//! close an open breaker (`a_rule_reloaded_with_only_its_presentation_changed_keeps_its_breakers`); a
//! rule that changed in any other field starts with closed breakers. Loading the list in force is a
//! no-op.
//!
//! Readers (every entry) load the snapshot without a lock and find a resource's breakers by its id in a
//! table the snapshot fills on the resource's first entry.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::breaker::Breaker;
use super::observer::{BreakerStatus, Observers};
use super::rule::DegradeRule;
use crate::keyed_hash::{KeyedMap, keyed_map};
use crate::registry::Resource;
use crate::rules::{
    Build, CompiledRules, FieldHasher, HoldsRule, NamedResources, ResourceTable, RuleIndex,
    RuleKind, Similar, carry_over_rules,
};

/// The breakers of one rule.
#[derive(Debug)]
enum Binding {
    /// A rule on one resource name.
    Fixed(Arc<Breaker>),
    /// A regex or default rule: a breaker per matching resource, by name.
    /// Keyed by resource names, which may come from requests.
    PerResource(Mutex<KeyedMap<Arc<str>, Arc<Breaker>>>),
}

/// A rule in force and its breakers.
#[derive(Debug)]
pub(crate) struct RuleState {
    rule: Arc<DegradeRule>,
    binding: Binding,
}

impl RuleState {
    fn new(rule: DegradeRule, observers: &Arc<Observers>) -> Self {
        let rule = Arc::new(rule);
        let binding = if rule.regex || rule.is_default() {
            Binding::PerResource(Mutex::new(keyed_map()))
        } else {
            Binding::Fixed(Arc::new(Breaker::new(
                rule.clone(),
                Arc::from(rule.resource.as_str()),
                observers.clone(),
            )))
        };
        RuleState { rule, binding }
    }

    /// The state of `rule`, taking over `from`'s breakers' states (`from` is the same rule but for its
    /// presentation: `id`, `limitApp`).
    fn carried(rule: DegradeRule, observers: &Arc<Observers>, from: &RuleState) -> Self {
        let state = RuleState::new(rule, observers);
        match (&state.binding, &from.binding) {
            (Binding::Fixed(new), Binding::Fixed(old)) => new.copy_state(old),
            (Binding::PerResource(new), Binding::PerResource(_)) => {
                let mut new = new.lock().unwrap_or_else(|e| e.into_inner());
                for old in from.breakers() {
                    let breaker =
                        Breaker::new(state.rule.clone(), old.resource.clone(), observers.clone());
                    breaker.copy_state(&old);
                    new.insert(old.resource.clone(), Arc::new(breaker));
                }
            }
            _ => {}
        }
        state
    }

    /// The breaker of this rule for `resource` (made on first sight for a per-resource rule).
    fn breaker_for(&self, resource: &Arc<str>, observers: &Arc<Observers>) -> Arc<Breaker> {
        match &self.binding {
            Binding::Fixed(b) => b.clone(),
            Binding::PerResource(map) => {
                let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
                map.entry(resource.clone())
                    .or_insert_with(|| {
                        Arc::new(Breaker::new(
                            self.rule.clone(),
                            resource.clone(),
                            observers.clone(),
                        ))
                    })
                    .clone()
            }
        }
    }

    /// Every breaker of this rule, by resource name.
    fn breakers(&self) -> Vec<Arc<Breaker>> {
        match &self.binding {
            Binding::Fixed(b) => vec![b.clone()],
            Binding::PerResource(map) => {
                let map = map.lock().unwrap_or_else(|e| e.into_inner());
                let mut all: Vec<Arc<Breaker>> = map.values().cloned().collect();
                all.sort_by(|a, b| a.resource.cmp(&b.resource));
                all
            }
        }
    }
}

impl HoldsRule for RuleState {
    type Rule = DegradeRule;

    fn rule(&self) -> &DegradeRule {
        &self.rule
    }
}

/// The breakers that apply to one resource.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    /// From the resource's own rules (by name and by regex): the degrade slot checks them.
    pub(crate) explicit: Box<[Arc<Breaker>]>,
    /// From the default rules, when the resource has no rule of its own: the default slot checks them.
    pub(crate) defaults: Box<[Arc<Breaker>]>,
}

/// An immutable set of degrade rules.
#[derive(Debug, Default)]
pub(crate) struct DegradeSnapshot {
    in_order: Vec<Arc<RuleState>>,
    /// The rules naming resources, exactly or by regex (the default rules are kept apart).
    index: RuleIndex<RuleState>,
    defaults: Vec<Arc<RuleState>>,
    observers: Arc<Observers>,
    by_resource: ResourceTable<Resolved>,
}

impl DegradeSnapshot {
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.in_order.is_empty()
    }

    /// The breakers of `resource` (found on its first entry, then by its id).
    #[inline]
    pub(crate) fn breakers(&self, resource: &Resource) -> Option<&Resolved> {
        self.by_resource
            .get_or_init(resource.id, || self.resolve(&resource.name))
    }

    #[cold]
    fn resolve(&self, name: &Arc<str>) -> Resolved {
        let explicit: Vec<Arc<Breaker>> = self
            .index
            .applicable(name)
            .iter()
            .map(|s| s.breaker_for(name, &self.observers))
            .collect();
        let defaults = if explicit.is_empty() {
            self.defaults
                .iter()
                .map(|s| s.breaker_for(name, &self.observers))
                .collect()
        } else {
            Vec::new()
        };
        Resolved {
            explicit: explicit.into_boxed_slice(),
            defaults: defaults.into_boxed_slice(),
        }
    }

    /// Whether a rule of its own (by name or regex, not a default rule) names `resource`.
    pub(crate) fn has_rules(&self, resource: &str) -> bool {
        self.index.has_rules(resource)
    }

    /// Every breaker in use, in rule order (a per-resource rule's breakers by resource name); a default
    /// rule's breaker for a resource that now has rules of its own is left out.
    pub(crate) fn statuses(&self, now: u64) -> Vec<BreakerStatus> {
        self.in_order
            .iter()
            .flat_map(|s| s.breakers())
            .filter(|b| !b.rule.is_default() || !self.has_rules(&b.resource))
            .map(|b| b.status(now))
            .collect()
    }
}

impl CompiledRules for DegradeSnapshot {
    type Rule = DegradeRule;

    fn rules(&self) -> impl Iterator<Item = &DegradeRule> {
        self.in_order.iter().map(|s| &*s.rule)
    }
}

/// The degrade rules, with the breaker observers and the flags of the two degrade slots: an engine's
/// [`RuleSet`](crate::rules::RuleSet) of them holds a [`DegradeSnapshot`].
#[derive(Debug, Default)]
pub(crate) struct DegradeKind {
    /// Whether any rule names resources (exactly or by regex): the degrade slot's work.
    own_in_force: AtomicBool,
    /// Whether any default (`"*"`) rule is in force: the default circuit-breaker slot's work.
    defaults_in_force: AtomicBool,
    pub(crate) observers: Arc<Observers>,
}

impl DegradeKind {
    /// Whether any default (`"*"`) rule is in force, or any rule of a resource's own when `defaults` is
    /// false (one relaxed load each, so the slot without rules of its kind skips the snapshot).
    #[inline]
    pub(crate) fn in_force_for(&self, defaults: bool) -> bool {
        let flag = if defaults {
            &self.defaults_in_force
        } else {
            &self.own_in_force
        };
        flag.load(Ordering::Relaxed)
    }
}

impl RuleKind for DegradeKind {
    type Checked = Vec<DegradeRule>;
    type Compiled = DegradeSnapshot;

    fn build(&self, load: Build<'_, Self>) -> DegradeSnapshot {
        let in_order = carry_over_rules(
            &load.old.in_order,
            load.checked,
            |r| r,
            // Only the presentation differs (`id`; `limitApp`, which breakers ignore): an open
            // breaker must not close because a dashboard renumbered its rules.
            Similar {
                fields: |r: &DegradeRule, h: &mut FieldHasher| r.hash_breaker_fields(h),
                holds: DegradeRule::eq_breaker_fields,
            },
            |rule, similar| match similar {
                Some(old) => RuleState::carried(rule, &self.observers, old),
                None => RuleState::new(rule, &self.observers),
            },
        );
        DegradeSnapshot {
            index: RuleIndex::new(in_order.iter().zip(load.patterns), |s| {
                (!s.rule.is_default()).then_some(s.rule.resource.as_str())
            }),
            defaults: in_order
                .iter()
                .filter(|s| !s.rule.regex && s.rule.is_default())
                .cloned()
                .collect(),
            in_order,
            observers: self.observers.clone(),
            by_resource: ResourceTable::default(),
        }
    }

    /// Sets the flags of the two degrade slots.
    fn loaded(&self, compiled: &DegradeSnapshot) {
        self.own_in_force
            .store(!compiled.index.is_empty(), Ordering::Release);
        self.defaults_in_force
            .store(!compiled.defaults.is_empty(), Ordering::Release);
    }

    fn named(compiled: &DegradeSnapshot) -> Option<&dyn NamedResources> {
        Some(&compiled.index)
    }
}

/// The degrade rules in force, as the engine and the degrade slot share them.
pub(crate) type DegradeRules = crate::rules::RuleSet<DegradeKind>;

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn resource_names_made_to_collide_under_fx_hash_apart() {
        let observers = Arc::new(Observers::default());
        let state = RuleState::new(DegradeRule::error_count("*", 5.0), &observers);
        let [a, b] = crate::keyed_hash::FX_COLLISION;
        for name in [a, b] {
            state.breaker_for(&Arc::from(name), &observers);
        }
        let Binding::PerResource(map) = &state.binding else {
            panic!("a default rule keeps a breaker per resource");
        };
        let map = map.lock().unwrap();
        assert_eq!(map.len(), 2);
        assert_ne!(map.hasher().hash_one(a), map.hasher().hash_one(b));
    }
}
