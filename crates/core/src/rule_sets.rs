//! The rule kinds an engine enforces, registered in one place: each a typed [`RuleSet`] shared (an
//! `Arc`) with the kind's slot, which reads it on the hot path, and the same set as an [`AnyRuleSet`]
//! for what the engine does by rule type (load JSON, count, write JSON, the resource caps' questions).
//! The sets keep one word up to date, a bit per rule type in force, which an entry reads once to know
//! which slots have work.
//!
//! A kind is one folder (its rule type, its [`RuleKind`](crate::rules::RuleKind), its slot) and one
//! line below: its [`RuleType`], its field here and how its set is made from the engine's settings.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::authority::AuthorityKind;
use crate::degrade::DegradeKind;
use crate::flow::FlowKind;
use crate::param_flow::ParamFlowKind;
use crate::rules::{AnyRuleSet, RuleSet, RuleType};
use crate::system::{SystemKind, SystemProbe};

/// What the engine's settings give the rule kinds when their sets are made.
pub(crate) struct KindSettings {
    /// Warm-up flow rules' cold factor.
    pub(crate) cold_factor: f64,
    /// Hot-parameter rules' value cache capacity (`None`: the default).
    pub(crate) param_capacity: Option<usize>,
    /// The engine clock's resolution in ns (see [`Clock::resolution`](crate::Clock::resolution)).
    pub(crate) tick_ns: u64,
    /// What system rules read the machine's load and CPU usage from.
    pub(crate) system_probe: Arc<dyn SystemProbe>,
}

macro_rules! rule_sets {
    ($($variant:ident => $field:ident: $kind:ty = $make:expr),* $(,)?) => {
        /// The rules of every kind an engine enforces.
        #[derive(Debug, Clone)]
        pub(crate) struct RuleSets {
            $(pub(crate) $field: Arc<RuleSet<$kind>>,)*
            /// A bit per rule type ([`RuleType::bit`]), set while rules of the type are in force.
            in_force: Arc<AtomicU32>,
        }

        // Each set is registered under its kind's own rule type.
        $(const _: () = assert!(matches!(
            <crate::rules::Rule<$kind> as crate::rules::SentinelRule>::TYPE,
            RuleType::$variant
        ));)*

        impl RuleSets {
            /// Every set, with no rule in force yet.
            pub(crate) fn new(settings: &KindSettings) -> Self {
                let in_force = Arc::new(AtomicU32::new(0));
                RuleSets {
                    $($field: Arc::new(
                        RuleSet::new(($make)(settings)).in_force_in(&in_force, RuleType::$variant.bit()),
                    ),)*
                    in_force,
                }
            }

            /// The set of `rule_type`.
            pub(crate) fn get(&self, rule_type: RuleType) -> &dyn AnyRuleSet {
                match rule_type {
                    $(RuleType::$variant => &*self.$field,)*
                }
            }

            /// Every set, in registration order.
            pub(crate) fn all(&self) -> impl Iterator<Item = &dyn AnyRuleSet> {
                [$(&*self.$field as &dyn AnyRuleSet),*].into_iter()
            }

            /// Whether any rule of `rule_type` is in force (a static call: custom chains ask it for
            /// each slot of an entry).
            #[inline]
            pub(crate) fn in_force(&self, rule_type: RuleType) -> bool {
                self.in_force_mask() & rule_type.bit() != 0
            }

            /// The rule types in force, a [`RuleType::bit`] each (one relaxed load for every kind).
            #[inline]
            pub(crate) fn in_force_mask(&self) -> u32 {
                self.in_force.load(Ordering::Relaxed)
            }
        }
    };
}

rule_sets! {
    Flow => flow: FlowKind = |s: &KindSettings| FlowKind::new(s.cold_factor, s.tick_ns),
    Degrade => degrade: DegradeKind = |_: &KindSettings| DegradeKind::default(),
    Authority => authority: AuthorityKind = |_: &KindSettings| AuthorityKind,
    System => system: SystemKind = |s: &KindSettings| SystemKind::new(s.system_probe.clone()),
    ParamFlow => param_flow: ParamFlowKind =
        |s: &KindSettings| ParamFlowKind::new(s.param_capacity, s.tick_ns),
}

#[cfg(test)]
mod tests {
    use crate::{Floodgate, RuleType};

    /// The one-word mask an entry reads follows every set's own flag through loads and removals.
    #[test]
    fn the_in_force_mask_follows_each_rule_set() {
        let fg = Floodgate::default();
        let rules = &fg.inner.rules;
        let agree = || {
            for set in RuleType::ALL {
                let flag = match set {
                    RuleType::Flow => rules.flow.in_force(),
                    RuleType::Degrade => rules.degrade.in_force(),
                    RuleType::System => rules.system.in_force(),
                    RuleType::Authority => rules.authority.in_force(),
                    RuleType::ParamFlow => rules.param_flow.in_force(),
                };
                assert_eq!(rules.in_force(set), flag, "{set:?}");
            }
        };
        assert_eq!(rules.in_force_mask(), 0);
        let lists = [
            (RuleType::Flow, r#"[{"resource":"R","count":1}]"#),
            (
                RuleType::Degrade,
                r#"[{"resource":"R","count":1,"grade":2,"timeWindow":1}]"#,
            ),
            (RuleType::System, r#"[{"qps":10}]"#),
            (
                RuleType::Authority,
                r#"[{"resource":"R","limitApp":"a","strategy":1}]"#,
            ),
            (
                RuleType::ParamFlow,
                r#"[{"resource":"R","paramIdx":0,"count":1}]"#,
            ),
        ];
        for (rule_type, json) in lists {
            fg.load_rules_json(rule_type, json).unwrap();
            assert!(rules.in_force(rule_type), "{rule_type:?}");
            agree();
        }
        assert_eq!(rules.in_force_mask().count_ones(), 5);
        for (rule_type, _) in lists {
            fg.load_rules_json(rule_type, "[]").unwrap();
            assert!(!rules.in_force(rule_type), "{rule_type:?}");
            agree();
        }
        assert_eq!(rules.in_force_mask(), 0);
    }
}
