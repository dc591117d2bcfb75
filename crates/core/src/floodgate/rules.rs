//! The rule API of [`Floodgate`]: loading rules (typed or from Sentinel JSON), reading them back, their
//! status, and the breaker observers.

use std::sync::Arc;

use super::Floodgate;
use crate::authority::AuthorityRule;
use crate::degrade::{BreakerStateChange, BreakerStatus, DegradeRule};
use crate::flow::{FlowRule, FlowStatus};
use crate::param_flow::{ParamFlowRule, ParamFlowStatus};
use crate::rules::{RuleError, RuleLoad, RuleType};
use crate::system::{SystemRule, SystemStatus};

impl Floodgate {
    /// Loads a whole rule list of type `rule_type` from Sentinel JSON. Any invalid rule rejects the list
    /// (the error names the rule's index, the field and why) and the rules in force stay in force.
    /// Thresholds are required (`count`; a system rule sets at least one); a field that rules of the
    /// type do not have (none of Sentinel's) is ignored and reported in the [`RuleLoad`]'s warnings,
    /// each also logged at `warn` on `floodgate::rules` (the first 20 of a load one by one, then their
    /// number; a refused list's too).
    ///
    /// Limits, the same for the typed loaders, each refusing the list with an error naming the first
    /// rule over it:
    ///
    /// * at most 100 regex rules a list, counted before any pattern is compiled (a pattern is compiled
    ///   on each load and matched against every new resource), each pattern at most 512 bytes and
    ///   256 KiB compiled: the worst list compiles in about 0.1 s;
    /// * at most 100 rules of the type on one resource (or one pattern): each entry checks every rule
    ///   of its resource, each with its own state, so the check cannot be made sublinear, and 24,000
    ///   rules on one resource halved a guarded endpoint's throughput.
    ///
    /// A list of a mebibyte loads in a few tens of milliseconds (a reload keeps the state of each rule
    /// that did not change: warm-up, pacing, breakers, value caches).
    ///
    /// ```
    /// use floodgate_core::{Floodgate, RuleType};
    ///
    /// let fg = Floodgate::default();
    /// let load = fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":20,"controlBehavior":1}]"#)?;
    /// assert!(load.warnings().is_empty());
    /// let err = fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":-1}]"#).unwrap_err();
    /// assert_eq!(err.to_string(), "rule 0: `count` must be a finite number ≥ 0, got -1");
    /// let err = fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","Count":5}]"#).unwrap_err();
    /// assert_eq!(err.to_string(), "rule 0: `count` is required");
    /// assert_eq!(fg.flow_rules().len(), 1);
    /// let load = fg.load_rules_json(RuleType::Flow, r#"[{"resource":"R","count":5,"maxQps":9}]"#)?;
    /// assert_eq!(load.warnings()[0].to_string(), "rule 0: unknown field `maxQps` (ignored)");
    /// # Ok::<(), floodgate_core::RuleError>(())
    /// ```
    pub fn load_rules_json(&self, rule_type: RuleType, json: &str) -> Result<RuleLoad, RuleError> {
        self.inner
            .rules
            .get(rule_type)
            .load_json(json, &self.inner.registry)
    }

    /// How many rules of `rule_type` are loaded (without copying them): the length of
    /// [`rules_json`](Self::rules_json)'s list (an authority rule loaded twice counts twice).
    pub fn rule_count(&self, rule_type: RuleType) -> usize {
        self.inner.rules.get(rule_type).rule_count()
    }

    /// The rules in force of type `rule_type`, as Sentinel JSON. Authority and system rules are returned
    /// as loaded: repeated authority rules included, and the system rules as a list rather than
    /// Sentinel's one synthesized rule per dimension (the merged thresholds are in
    /// [`system_status`](Self::system_status)).
    pub fn rules_json(&self, rule_type: RuleType) -> String {
        self.inner.rules.get(rule_type).rules_json()
    }

    /// Loads a whole list of flow rules (validated as [`load_rules_json`](Self::load_rules_json) does).
    pub fn load_flow_rules(
        &self,
        rules: impl IntoIterator<Item = FlowRule>,
    ) -> Result<(), RuleError> {
        self.inner
            .rules
            .flow
            .load_reported(rules.into_iter().collect(), &self.inner.registry)
    }

    /// The flow rules in force, in load order.
    pub fn flow_rules(&self) -> Vec<FlowRule> {
        self.inner.rules.flow.rules()
    }

    /// What each flow rule's controller is doing (warm-up tokens, pacing interval), in load order.
    pub fn flow_status(&self) -> Vec<FlowStatus> {
        self.inner.rules.flow.snapshot().statuses()
    }

    /// Loads a whole list of degrade rules (validated as [`load_rules_json`](Self::load_rules_json)
    /// does). A rule equal in every field to one in force keeps its breakers' state; a changed rule
    /// starts closed. A rule on resource `"*"` is a default rule: it applies, with a breaker per
    /// resource, to every resource that has no degrade rule of its own.
    pub fn load_degrade_rules(
        &self,
        rules: impl IntoIterator<Item = DegradeRule>,
    ) -> Result<(), RuleError> {
        self.inner
            .rules
            .degrade
            .load_reported(rules.into_iter().collect(), &self.inner.registry)
    }

    /// The degrade rules in force, in load order.
    pub fn degrade_rules(&self) -> Vec<DegradeRule> {
        self.inner.rules.degrade.rules()
    }

    /// Every circuit breaker and its state: one per rule on a resource name, one per matched resource
    /// for regex and default rules (those appear once a resource was entered).
    pub fn circuit_breakers(&self) -> Vec<BreakerStatus> {
        let now = self.inner.clock.now_ms();
        self.inner.rules.degrade.snapshot().statuses(now)
    }

    /// Calls `observer` on every breaker state change (replacing an observer of the same `name`).
    /// Observers run on the thread that made the change, while it serves a request: keep them quick.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use floodgate_core::{BreakerState, DegradeRule, Floodgate, ManualClock};
    ///
    /// let fg = Floodgate::builder().clock(ManualClock::new(1_700_000_000_000)).build();
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = seen.clone();
    /// fg.add_breaker_observer("log", move |e| log.lock().unwrap().push((e.previous, e.next, e.snapshot)));
    /// fg.load_degrade_rules([DegradeRule::error_count("R", 0.0).time_window(10).min_request_amount(1)])?;
    /// let entry = fg.entry("R").enter().unwrap();
    /// entry.trace(&std::fmt::Error);
    /// drop(entry);
    /// assert_eq!(*seen.lock().unwrap(), [(BreakerState::Closed, BreakerState::Open, Some(1.0))]);
    /// # Ok::<(), floodgate_core::RuleError>(())
    /// ```
    pub fn add_breaker_observer(
        &self,
        name: &str,
        observer: impl Fn(&BreakerStateChange) + Send + Sync + 'static,
    ) {
        self.inner
            .rules
            .degrade
            .observers
            .add(name, Arc::new(observer));
    }

    /// Removes the breaker observer called `name`; whether there was one.
    pub fn remove_breaker_observer(&self, name: &str) -> bool {
        self.inner.rules.degrade.observers.remove(name)
    }

    /// Loads a whole list of authority rules (validated as [`load_rules_json`](Self::load_rules_json)
    /// does). A resource takes one rule: a list with two rules for one resource that admit different
    /// origins is refused (Sentinel applied the first and ignored the others); rules that admit the
    /// same origins (the same rule twice, another `id`, the tokens reordered) are one rule, the first,
    /// which blocks report.
    pub fn load_authority_rules(
        &self,
        rules: impl IntoIterator<Item = AuthorityRule>,
    ) -> Result<(), RuleError> {
        self.inner
            .rules
            .authority
            .load_reported(rules.into_iter().collect(), &self.inner.registry)
    }

    /// The authority rules in force, in load order (repeated rules included).
    pub fn authority_rules(&self) -> Vec<AuthorityRule> {
        self.inner.rules.authority.rules()
    }

    /// Loads a whole list of system rules (validated as [`load_rules_json`](Self::load_rules_json)
    /// does). They merge by the minimum per dimension; an empty list turns system protection off.
    pub fn load_system_rules(
        &self,
        rules: impl IntoIterator<Item = SystemRule>,
    ) -> Result<(), RuleError> {
        self.inner
            .rules
            .system
            .load_reported(rules.into_iter().collect(), &self.inner.registry)
    }

    /// The system rules in force, as loaded. (Sentinel's `getRules` answers one synthesized rule per
    /// dimension instead; the merged thresholds are in [`system_status`](Self::system_status).)
    pub fn system_rules(&self) -> Vec<SystemRule> {
        self.inner.rules.system.rules()
    }

    /// The system probe's load average and CPU usage (`None` when unavailable) and the merged
    /// thresholds in force. Reading it starts the probe's sampler, so the first readings of the real
    /// probe may be unavailable; the inbound traffic figures are in [`inbound_node`](Self::inbound_node).
    pub fn system_status(&self) -> SystemStatus {
        self.inner.rules.system.status()
    }

    /// Loads a whole list of hot-parameter rules (validated as
    /// [`load_rules_json`](Self::load_rules_json) does).
    pub fn load_param_flow_rules(
        &self,
        rules: impl IntoIterator<Item = ParamFlowRule>,
    ) -> Result<(), RuleError> {
        self.inner
            .rules
            .param_flow
            .load_reported(rules.into_iter().collect(), &self.inner.registry)
    }

    /// The hot-parameter rules in force, in load order.
    pub fn param_flow_rules(&self) -> Vec<ParamFlowRule> {
        self.inner.rules.param_flow.rules()
    }

    /// What each hot-parameter rule remembers: values cached, evictions, overflows, in load order.
    pub fn param_flow_status(&self) -> Vec<ParamFlowStatus> {
        self.inner.rules.param_flow.snapshot().statuses()
    }
}
