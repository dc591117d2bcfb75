//! The resource-cap policy: what the rules in force say where the registry reaches a cap (a name rules
//! name exactly is created past the resource cap, names only regex rules match share a resource, …).

use std::sync::Arc;

use crate::registry::{CapPolicy, Resource};
use crate::rule_sets::RuleSets;
use crate::slot::Slot;

/// The engine's answer to the registry's cap questions: its rule sets, and the slots of its chain
/// (a custom slot may have rules for a resource).
pub(crate) struct Caps {
    pub(crate) rules: RuleSets,
    pub(crate) slots: Box<[Arc<dyn Slot>]>,
}

impl CapPolicy for Caps {
    /// Whether a rule names `resource` exactly, or a RELATE rule reads it, or a custom slot has rules
    /// for it (such a resource is created even past the resource cap: a RELATE rule needs its
    /// reference counted).
    fn names_exactly(&self, resource: &str) -> bool {
        self.rules.all().any(|set| set.names_exactly(resource))
            || self.slots.iter().any(|s| s.has_rules(resource))
    }

    /// The regex rules of every type that match `resource`, as one string (empty: none match), in a
    /// canonical order: the same set of rules loaded in another order is the same signature.
    fn regex_signature(&self, resource: &str) -> String {
        let mut signature = String::new();
        for set in self.rules.all() {
            set.push_matching_regex(resource, &mut signature);
        }
        // Each rule's part ends with a NUL (see `rules::push_matching`).
        let mut parts: Vec<&str> = signature.split_terminator('\0').collect();
        if parts.windows(2).all(|w| w[0] <= w[1]) {
            return signature;
        }
        parts.sort_unstable();
        let mut sorted = String::with_capacity(signature.len());
        for part in parts {
            sorted.push_str(part);
            sorted.push('\0');
        }
        sorted
    }

    fn counts_past_cap(&self) -> bool {
        self.rules.system.in_force() || self.rules.degrade.in_force_for(true)
    }

    fn names_origin(&self, resource: &Resource, origin: &str) -> bool {
        self.rules
            .flow
            .snapshot()
            .rules_of(resource)
            .is_some_and(|rules| rules.names(origin))
    }

    fn names_context(&self, context: &str) -> bool {
        self.rules
            .flow
            .snapshot()
            .references(context, crate::flow::FlowStrategy::Chain)
    }
}
