//! The flow rules in force: an immutable snapshot behind an atomic pointer, rebuilt on load.
//!
//! Each resource's rules (exact and regex) are resolved on its first entry under a snapshot and kept in
//! the snapshot's table by resource id, so an entry never looks its rules up by name. A load
//! validates the whole list first (any invalid rule rejects it and changes nothing), then builds a new
//! snapshot in which every rule equal to one already in force keeps that rule's controller, so its
//! warm-up tokens and pacing survive the reload, so that pushing an unrelated rule neither makes a
//! warmed-up resource cold again nor grants a paced one an extra pass (Sentinel rebuilds every
//! controller: `an_unchanged_rule_keeps_its_state_across_a_reload`,
//! `rate_limiter_pacing_survives_a_reload`); a rule that differs from one in force only by its `id` (a
//! dashboard numbering its rules afresh) starts from a copy of that controller's state
//! (`a_rule_reloaded_with_only_its_id_changed_keeps_its_warmth`). Loading the list in force is a no-op.

use std::sync::Arc;
use std::time::Duration;

use super::limit_app::LimitApp;
use super::rule::{ControlBehavior, FlowGrade, FlowRule, FlowStrategy};
use super::{
    RejectController, ThrottlingController, WarmUpController, WarmUpRateLimiterController,
};
use crate::cluster::ClusterTerms;
use crate::keyed_hash::KeyedMap;
use crate::registry::Resource;

use crate::rules::{
    Build, CompiledRules, FieldHasher, HashRule, HoldsRule, NamedResources, ResourceTable,
    RuleIndex, RuleKind, Similar, carry_over_rules, cluster_fields_of,
};

/// How a rule shapes traffic, with its state.
#[derive(Debug)]
pub(crate) enum Controller {
    Reject(RejectController),
    /// A reject rule under 1 QPS: one request per `1/count` seconds, no queueing (a one-second window
    /// cannot express it). It paces the rule's own admissions, like the rate limiter: one pacer for all
    /// the resources a regex rule matches, and whatever node a RELATE rule or a `limitApp: "other"`
    /// rule selects (which then only decides whether the rule applies). Exact for a rule on one
    /// resource's own traffic (or one origin's); a known limit otherwise.
    Sparse(ThrottlingController),
    WarmUp(WarmUpController),
    RateLimiter(ThrottlingController),
    WarmUpRateLimiter(WarmUpRateLimiterController),
}

impl Controller {
    /// Takes over `from`'s state when both are the same kind of controller (they are: `from` belongs to
    /// the same rule but for its `id`). Calls admitted meanwhile under the old rule are not carried.
    fn copy_state(&self, from: &Controller) {
        match (self, from) {
            (Controller::Sparse(c), Controller::Sparse(f))
            | (Controller::RateLimiter(c), Controller::RateLimiter(f)) => c.copy_state(f),
            (Controller::WarmUp(c), Controller::WarmUp(f)) => c.copy_state(f),
            (Controller::WarmUpRateLimiter(c), Controller::WarmUpRateLimiter(f)) => c.copy_state(f),
            _ => {}
        }
    }

    /// The controller of `rule` on a clock whose readings move in ticks of `tick_ns`.
    fn new(rule: &FlowRule, cold_factor: f64, tick_ns: u64) -> Self {
        let queue = Duration::from_millis(u64::from(rule.max_queueing_time_ms));
        match (rule.grade, rule.control_behavior) {
            (FlowGrade::Thread, _) | (FlowGrade::Qps, ControlBehavior::Reject) => {
                if rule.grade == FlowGrade::Qps && rule.count > 0.0 && rule.count < 1.0 {
                    Controller::Sparse(
                        ThrottlingController::new(rule.count, Duration::ZERO).with_tick(tick_ns),
                    )
                } else {
                    Controller::Reject(RejectController::new(rule.count))
                }
            }
            // Below one a second there is no rate to warm up to in whole requests: the warm-up
            // controller would never admit one (Sentinel's neither). Paced at the rule's rate.
            (FlowGrade::Qps, ControlBehavior::WarmUp) if rule.count > 0.0 && rule.count < 1.0 => {
                Controller::Sparse(
                    ThrottlingController::new(rule.count, Duration::ZERO).with_tick(tick_ns),
                )
            }
            (FlowGrade::Qps, ControlBehavior::WarmUp) => Controller::WarmUp(WarmUpController::new(
                rule.count,
                rule.warm_up_period_sec,
                cold_factor,
            )),
            (FlowGrade::Qps, ControlBehavior::RateLimiter) => Controller::RateLimiter(
                ThrottlingController::new(rule.count, queue).with_tick(tick_ns),
            ),
            (FlowGrade::Qps, ControlBehavior::WarmUpRateLimiter) => Controller::WarmUpRateLimiter(
                WarmUpRateLimiterController::new(
                    rule.count,
                    rule.warm_up_period_sec,
                    queue,
                    cold_factor,
                )
                .with_tick(tick_ns),
            ),
        }
    }
}

/// A flow rule in force and what its controller is doing now.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowStatus {
    /// The rule.
    pub rule: FlowRule,
    /// The controller: `reject`, `pacing`, `warm_up` or `warm_up_pacing`.
    pub controller: &'static str,
    /// Warm-up: tokens above which the rate is below `count` (Sentinel's `warningToken`).
    pub warning_token: Option<u64>,
    /// Warm-up: the bucket's capacity (`maxToken`).
    pub max_token: Option<u64>,
    /// Warm-up: how fast the allowed rate falls per token above the warning line (`slope`).
    pub slope: Option<f64>,
    /// Pacing: the current interval between two admissions.
    pub interval: Option<Duration>,
}

impl FlowRuleState {
    pub(crate) fn status(&self) -> FlowStatus {
        let mut status = FlowStatus {
            rule: (*self.rule).clone(),
            controller: "reject",
            warning_token: None,
            max_token: None,
            slope: None,
            interval: None,
        };
        match &self.controller {
            Controller::Reject(_) => {}
            Controller::Sparse(c) | Controller::RateLimiter(c) => {
                status.controller = "pacing";
                status.interval = Some(c.interval());
            }
            Controller::WarmUp(c) => {
                status.controller = "warm_up";
                status.warning_token = Some(c.warning_token());
                status.max_token = Some(c.max_token());
                status.slope = Some(c.slope());
            }
            Controller::WarmUpRateLimiter(c) => {
                status.controller = "warm_up_pacing";
                status.interval = Some(c.interval());
            }
        }
        status
    }
}

/// A rule in force and its controller.
#[derive(Debug)]
pub(crate) struct FlowRuleState {
    pub(crate) rule: Arc<FlowRule>,
    pub(crate) limit_app: LimitApp,
    /// A cluster rule's terms (`None`: a local rule).
    pub(crate) cluster: Option<ClusterTerms>,
    /// Whether the rule reads the resource's cluster node whoever calls (`limitApp` `default`, strategy
    /// DIRECT: the common rule, which needs no node selection).
    pub(crate) reads_cluster_node: bool,
    pub(crate) controller: Controller,
}

impl HoldsRule for FlowRuleState {
    type Rule = FlowRule;

    fn rule(&self) -> &FlowRule {
        &self.rule
    }
}

/// The rules of one resource, in check order, and the origins they name.
#[derive(Debug, Default)]
pub(crate) struct ResourceRules {
    pub(crate) rules: Box<[Arc<FlowRuleState>]>,
    /// Origins named by a specific `limitApp` (what `other` excludes).
    pub(crate) named_origins: Box<[Box<str>]>,
}

impl ResourceRules {
    fn new(mut rules: Vec<Arc<FlowRuleState>>) -> Self {
        // Sentinel's order: local before cluster, specific callers before `default`/`other`.
        rules.sort_by_key(|s| (s.rule.cluster_mode, s.limit_app != LimitApp::Specific));
        let mut named: Vec<Box<str>> = rules
            .iter()
            .filter(|s| s.limit_app == LimitApp::Specific)
            .map(|s| Box::from(s.rule.limit_app.as_str()))
            .collect();
        named.sort();
        named.dedup();
        ResourceRules {
            rules: rules.into_boxed_slice(),
            named_origins: named.into_boxed_slice(),
        }
    }

    /// Whether some rule of this resource names `origin` as its `limitApp`.
    pub(crate) fn names(&self, origin: &str) -> bool {
        self.named_origins.iter().any(|o| &**o == origin)
    }
}

/// An immutable set of flow rules.
#[derive(Debug, Default)]
pub(crate) struct FlowSnapshot {
    in_order: Vec<Arc<FlowRuleState>>,
    index: RuleIndex<FlowRuleState>,
    /// The `refResource` of each RELATE rule, then of each CHAIN rule.
    references: [KeyedMap<Box<str>, ()>; 2],
    by_resource: ResourceTable<Option<ResourceRules>>,
}

impl FlowSnapshot {
    /// The rules that apply to `resource` (exact and regex), resolved on its first entry under this
    /// snapshot and then found by its id: an entry never looks its rules up by name.
    #[inline]
    pub(crate) fn rules_of(&self, resource: &Resource) -> Option<&ResourceRules> {
        self.by_resource
            .get_or_init(resource.id, || self.resolve(&resource.name))?
            .as_ref()
    }

    #[cold]
    fn resolve(&self, resource: &str) -> Option<ResourceRules> {
        let rules = self.index.applicable(resource);
        (!rules.is_empty()).then(|| ResourceRules::new(rules))
    }

    /// Whether some rule names `resource` exactly.
    pub(crate) fn names(&self, resource: &str) -> bool {
        self.index.names(resource)
    }

    /// Whether some rule of `strategy` names `name` as its `refResource` (a RELATE rule's resource, a
    /// CHAIN rule's context). The engine asks for each new name past its caps, which requests may
    /// choose: one lookup (a scan of the rules made each such request cost the length of the list).
    pub(crate) fn references(&self, name: &str, strategy: FlowStrategy) -> bool {
        let [relate, chain] = &self.references;
        match strategy {
            FlowStrategy::Relate => relate.contains_key(name),
            FlowStrategy::Chain => chain.contains_key(name),
            FlowStrategy::Direct => false,
        }
    }

    /// The status of every rule, in load order.
    pub(crate) fn statuses(&self) -> Vec<FlowStatus> {
        self.in_order.iter().map(|s| s.status()).collect()
    }
}

impl CompiledRules for FlowSnapshot {
    type Rule = FlowRule;

    fn rules(&self) -> impl Iterator<Item = &FlowRule> {
        self.in_order.iter().map(|s| &*s.rule)
    }
}

/// The flow rules: an engine's [`RuleSet`](crate::rules::RuleSet) of them holds a [`FlowSnapshot`].
#[derive(Debug)]
pub(crate) struct FlowKind {
    cold_factor: f64,
    /// The engine clock's resolution in ns (see [`Clock::resolution`](crate::Clock::resolution)).
    tick_ns: u64,
}

impl FlowKind {
    pub(crate) fn new(cold_factor: f64, tick_ns: u64) -> Self {
        FlowKind {
            cold_factor,
            tick_ns,
        }
    }

    /// The state of a new rule, copying `similar`'s controller state when there is one.
    fn state(&self, rule: FlowRule, similar: Option<&FlowRuleState>) -> FlowRuleState {
        let controller = Controller::new(&rule, self.cold_factor, self.tick_ns);
        if let Some(old) = similar {
            controller.copy_state(&old.controller);
        }
        FlowRuleState {
            controller,
            limit_app: LimitApp::of(&rule.limit_app),
            reads_cluster_node: LimitApp::of(&rule.limit_app) == LimitApp::Default
                && rule.strategy == FlowStrategy::Direct,
            cluster: rule
                .cluster_config
                .as_ref()
                .filter(|_| rule.cluster_mode)
                .map(|c| ClusterTerms::of(&cluster_fields_of!(c))),
            rule: Arc::new(rule),
        }
    }
}

impl RuleKind for FlowKind {
    type Checked = Vec<FlowRule>;
    type Compiled = FlowSnapshot;

    fn build(&self, load: Build<'_, Self>) -> FlowSnapshot {
        let in_order = carry_over_rules(
            &load.old.in_order,
            load.checked,
            |r| r,
            // Only the id differs: a dashboard that numbers its rules afresh (after a restart) must
            // not send warm-up back to cold or drop pacing reservations.
            Similar {
                fields: |r: &FlowRule, h: &mut FieldHasher| r.hash_without_id(h),
                holds: |old: &FlowRule, new: &FlowRule| old.id != new.id && old.eq_but_id(new),
            },
            |rule, similar| self.state(rule, similar),
        );
        FlowSnapshot {
            references: [FlowStrategy::Relate, FlowStrategy::Chain].map(|strategy| {
                in_order
                    .iter()
                    .filter(|s| s.rule.strategy == strategy)
                    .filter_map(|s| Some((Box::from(s.rule.ref_resource.as_deref()?), ())))
                    .collect()
            }),
            index: RuleIndex::new(in_order.iter().zip(load.patterns), |s| {
                Some(s.rule.resource.as_str())
            }),
            in_order,
            by_resource: ResourceTable::default(),
        }
    }

    fn named(compiled: &FlowSnapshot) -> Option<&dyn NamedResources> {
        Some(&compiled.index)
    }

    /// A rule names a resource exactly, or a RELATE rule reads it (its reference must be counted).
    fn names_exactly(compiled: &FlowSnapshot, resource: &str) -> bool {
        compiled.names(resource) || compiled.references(resource, FlowStrategy::Relate)
    }

    /// The origins named by a specific `limitApp`.
    fn origins(compiled: &FlowSnapshot) -> impl Iterator<Item = &str> {
        compiled
            .rules()
            .map(|r| r.limit_app.as_str())
            .filter(|app| *app != "default" && *app != "other")
    }
}

/// The flow rules in force, as the engine and the flow slot share them.
pub(crate) type FlowRules = crate::rules::RuleSet<FlowKind>;
